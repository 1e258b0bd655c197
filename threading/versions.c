/* versions.c - version links: which series supersedes which.
 *
 * supersedes(S) is the best of S's candidates, a pure function of the
 * series that exist.  Each candidate P must be older than S in the order
 * (version, date, id), which makes cycles impossible, and is scored by
 * (rule, version distance, later date, id).  superseded_by(P) is the best
 * of the series whose supersedes is P.
 *
 * Candidates come from indexes, never from reading a sender's series: a
 * rule can only hold between S and P when they share a change-id
 * (change_index), a reply edge (replies_into/replied_by), S's smallest
 * patch-id (patchid_index: "resend"), or, for the same-sender rules, a
 * name key within PGATE_THREADING_LINK_WINDOW (name_keys, see "name keys"
 * below for why a shared key is necessary).  Every one of these relations
 * is symmetric, so the same lookups also find the series for which a
 * changed series is (or was) a candidate: after a unit changes, only
 * those, and the changed series, are recomputed, and the result is what
 * a rethread gives.  The cost is proportional to the series near the
 * changed ones in name, thread and patch content, plus a read of the key
 * hashes of the sender's series within the window, not to the archive.
 */
#include "threading/threading-private.h"

#include <string.h>

enum {
	RULE_CHANGE_ID = 0,
	RULE_IN_REPLY_TO,
	RULE_LINK,
	RULE_LATE,
	RULE_RESEND,
	RULE_SUBJECT,
	RULE_UNLABELED,
	RULE_CHAIN,
	RULE_NONE,
};

static const char *const rule_names[] = {
	[RULE_CHANGE_ID] = "change-id",
	[RULE_IN_REPLY_TO] = "in-reply-to",
	[RULE_LINK] = "link",
	[RULE_LATE] = "late",
	[RULE_RESEND] = "resend",
	[RULE_SUBJECT] = "subject",
	[RULE_UNLABELED] = "unlabeled",
	[RULE_CHAIN] = "chain",
};

static int
rule_of(const char *name)
{
	for (int i = 0; i < RULE_NONE; i++)
		if (name != NULL && strcmp(rule_names[i], name) == 0)
			return i;
	return RULE_NONE;
}

/* ---- names ---- */

/* Writes the normalised @name at @out (room for strlen(@name) bytes):
 * lower case, whitespace runs as one space, none at the start, no
 * trailing punctuation, and without the asterisks of git's cover
 * template around it ("*** spi cs_timing restructure ***" is the
 * "spi cs_timing restructure" of the next version).  Returns the end (not
 * terminated). */
static char *
name_norm_to(char *out, const char *name)
{
	char *start = out;
	gboolean space = FALSE;
	const char *p = name ? name : "";

	while (*p == '*' || g_ascii_isspace(*p))
		p++;
	for (; *p; p++) {
		if (g_ascii_isspace(*p)) {
			space = out > start;
			continue;
		}
		if (space)
			*out++ = ' ';
		space = FALSE;
		*out++ = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
	}
	while (out > start && out[-1] != '\0' &&
	       strchr(".,;:!?* ", out[-1]) != NULL)
		out--;
	return out;
}

char *
pgate_threading__name_norm(const char *name)
{
	char *out = g_malloc(strlen(name ? name : "") + 1);

	*name_norm_to(out, name) = '\0';
	return out;
}

/* Subject without Re: and leading [...] groups: where it starts. */
static const char *
strip_subject(const char *subject)
{
	const char *p = subject ? subject : "";

	for (;;) {
		while (g_ascii_isspace(*p))
			p++;
		if (*p == '[') {
			const char *e = strchr(p, ']');

			if (e == NULL)
				break;
			p = e + 1;
			continue;
		}
		break;
	}
	return p;
}

/* ---- a series as the rules see it ---- */

typedef struct {
	PgateSeriesRec *rec;
	gboolean own_rec;
	char *norm;              /* normalised name */
	char *strings;           /* what tokens and pnames point into */
	GPtrArray *tokens;       /* words of the name: sorted, distinct */
	GPtrArray *pnames;       /* normalised patch names: sorted, distinct */
	char *pids;              /* sorted patch-ids joined, or NULL */
	const char *min_pid;     /* the smallest of them, into rec */
	GPtrArray *pidset;       /* the patch-ids it has (borrowed from rec):
				  * sorted, distinct */
	char *person;            /* (nullable): its name_keys owner as a
				  * person ("\x02" and person_name()) */
	char *tree;              /* (nullable): the stable tree its subject
				  * names ("AUTOSEL 5.10", "6.1.y") */
	guint64 *kh;             /* (nullable): the hashes of its name keys,
				  * sorted, distinct (name_hashes()) */
	guint nkh;
	guint64 norm_h;          /* name_hashes(): of norm (0: none) */
	GPtrArray *ncand;        /* (nullable): for a series formed in this
				  * pass, the ids that share a name key
				  * with it (name_pass()) */
	GPtrArray *nb;           /* (nullable): neighbours(), when asked in
				  * this pass (Ser*, borrowed from the
				  * pass's cache) */
	guint pass;              /* the last pass that used it */
	guint64 nb_mark;         /* the neighbours() call that last found it */
	gboolean dirty;
} Ser;

static void
ser_free(Ser *s)
{
	if (s == NULL)
		return;
	if (s->own_rec)
		pgate_series_rec_free(s->rec);
	g_free(s->norm);
	g_free(s->strings);
	g_ptr_array_unref(s->tokens);
	g_ptr_array_unref(s->pnames);
	g_free(s->pids);
	g_ptr_array_unref(s->pidset);
	g_free(s->person);
	g_free(s->tree);
	g_free(s->kh);
	if (s->ncand != NULL)
		g_ptr_array_unref(s->ncand);
	if (s->nb != NULL)
		g_ptr_array_unref(s->nb);
	g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Ser, ser_free)

static gint
str_cmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts @a and drops repeats (few: names are short). */
static void
sort_distinct(GPtrArray *a)
{
	char **v = (char **)a->pdata;
	guint n = 0;

	if (a->len > 32) {
		g_ptr_array_sort(a, str_cmp_p);
	} else {
		/* insertion sort: a name's words, a series's patches */
		for (guint i = 1; i < a->len; i++) {
			char *x = v[i];
			guint j = i;

			for (; j > 0 && strcmp(v[j - 1], x) > 0; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
	}
	for (guint i = 0; i < a->len; i++)
		if (n == 0 || strcmp(v[n - 1], v[i]) != 0)
			v[n++] = v[i];
	g_ptr_array_set_size(a, n);
}

static char *person_name(const char *name);

/* The owner of a series's second name_keys entry: the person, by display
 * name, so that a v2 sent from another address of the same person (a new
 * employer, b4's relay) is a name candidate of v3 (issue #49, E).  "\x02"
 * first: no address starts so. */
static char *
person_key(const char *name)
{
	g_autofree char *n = person_name(name);

	return n != NULL ? g_strconcat("\x02", n, NULL) : NULL;
}

/* Whether a subject's prefix token names a stable tree, not a version:
 * "AUTOSEL", "stable...", "5.10", "6.1.y", "4.19.123", "5.y". */
static gboolean
tree_token(const char *t, gsize n)
{
	gsize i = 0, dots = 0;

	if ((n == 7 && g_ascii_strncasecmp(t, "autosel", 7) == 0) ||
	    (n >= 6 && g_ascii_strncasecmp(t, "stable", 6) == 0))
		return TRUE;
	if (n >= 2 && t[n - 2] == '.' && (t[n - 1] == 'y' || t[n - 1] == 'Y'))
		n -= 2, dots++;
	while (i < n && g_ascii_isdigit(t[i])) {
		while (i < n && g_ascii_isdigit(t[i]))
			i++;
		if (i < n && t[i] == '.' && i + 1 < n &&
		    g_ascii_isdigit(t[i + 1])) {
			i++;
			dots++;
		}
	}
	return i == n && n > 0 && dots > 0;
}

/* (nullable): the stable-tree tokens of @subject's leading [...] groups,
 * joined: backports ("[PATCH AUTOSEL 4.19 12/80]", Greg's "[PATCH 5.10
 * 12/80]" review mails) are the same patch for another tree, and two
 * series are versions of each other only for the same tree (a tree tag
 * is not a version). */
static char *
tree_of(const char *subject)
{
	GString *tree = NULL;
	const char *p = subject ? subject : "";

	for (guint groups = 0; groups < 8; groups++) {
		const char *end;

		while (g_ascii_isspace(*p))
			p++;
		if (*p != '[' || (end = strchr(p, ']')) == NULL)
			break;
		for (p++; p < end;) {
			const char *t = p;

			while (t < end && !strchr(" ,\t", *t))
				t++;
			if (tree_token(p, (gsize)(t - p))) {
				if (tree == NULL)
					tree = g_string_new(NULL);
				else
					g_string_append_c(tree, ' ');
				g_string_append_len(tree, p, t - p);
			}
			p = t < end ? t + 1 : t;
		}
		p = end + 1;
	}
	if (tree == NULL)
		return NULL;
	for (gsize i = 0; i < tree->len; i++)
		tree->str[i] = g_ascii_tolower(tree->str[i]);
	return g_string_free(tree, FALSE);
}

/* (transfer full) of @rec when @own. */
static Ser *
ser_new(PgateSeriesRec *rec, gboolean own)
{
	Ser *s = g_new0(Ser, 1);
	g_autoptr(GPtrArray) pids = g_ptr_array_new();
	guint np = rec->patches->len, nwords = 0;
	gsize size, nlen;
	char *p;

	s->rec = rec;
	s->own_rec = own;
	s->norm = pgate_threading__name_norm(rec->name);
	/* the words, then the patch names, each NUL-terminated, in one
	 * buffer (a normalised name is no longer than the name) */
	nlen = strlen(s->norm);
	size = nlen + 1;
	for (guint i = 0; i < np; i++) {
		PgateSeriesPatch *pp = rec->patches->pdata[i];

		size += strlen(strip_subject(pp->subject)) + 1;
	}
	s->strings = g_malloc(size);
	/* norm has single spaces between words, none at the ends */
	memcpy(s->strings, s->norm, nlen + 1);
	for (gsize i = 0; i < nlen; i++)
		nwords += i == 0 || s->strings[i - 1] == ' ';
	s->tokens = g_ptr_array_sized_new(nwords);
	for (gsize i = 0; i < nlen; i++) {
		if (i == 0 || s->strings[i - 1] == '\0')
			g_ptr_array_add(s->tokens, s->strings + i);
		if (s->strings[i] == ' ')
			s->strings[i] = '\0';
	}
	p = s->strings + nlen + 1;
	s->pnames = g_ptr_array_sized_new(np);
	for (guint i = 0; i < np; i++) {
		PgateSeriesPatch *pp = rec->patches->pdata[i];

		g_ptr_array_add(s->pnames, p);
		p = name_norm_to(p, strip_subject(pp->subject));
		*p++ = '\0';
		/* every patch name counts, even after a patch without a
		 * patch-id (the first version stopped there) */
		if (pp->patch_id == NULL)
			g_ptr_array_set_size(pids, 0);
		else if (pids->len == i)
			g_ptr_array_add(pids, pp->patch_id);
	}
	sort_distinct(s->tokens);
	sort_distinct(s->pnames);
	if (pids->len > 0 && pids->len == np) {
		g_ptr_array_sort(pids, str_cmp_p);
		s->min_pid = pids->pdata[0];
		g_ptr_array_add(pids, NULL);
		s->pids = g_strjoinv(",", (char **)pids->pdata);
	}
	s->pidset = g_ptr_array_sized_new(np);
	for (guint i = 0; i < np; i++) {
		PgateSeriesPatch *pp = rec->patches->pdata[i];

		if (pp->patch_id != NULL)
			g_ptr_array_add(s->pidset, pp->patch_id);
	}
	sort_distinct(s->pidset);
	s->person = person_key(rec->submitter_name);
	s->tree = np > 0 ? tree_of(((PgateSeriesPatch *)
				    rec->patches->pdata[0])->subject) : NULL;
	return s;
}

/* Jaccard index of two sorted, distinct sets. */
static double
jaccard(const GPtrArray *a, const GPtrArray *b)
{
	guint i = 0, j = 0, inter = 0;

	if (a->len == 0 || b->len == 0)
		return 0;
	while (i < a->len && j < b->len) {
		int c = strcmp(a->pdata[i], b->pdata[j]);

		inter += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	return (double)inter / (a->len + b->len - inter);
}

#define TOKEN_JACCARD 0.8
#define PNAME_JACCARD 0.6

static gboolean
similar(const Ser *a, const Ser *b)
{
	if (a->norm[0] != '\0' && strcmp(a->norm, b->norm) == 0)
		return TRUE;
	if (jaccard(a->tokens, b->tokens) >= TOKEN_JACCARD)
		return TRUE;
	return a->pnames->len > 1 && jaccard(a->pnames, b->pnames) >= PNAME_JACCARD;
}

/* How many elements two sorted, distinct sets share. */
static guint
common(const GPtrArray *a, const GPtrArray *b)
{
	guint i = 0, j = 0, n = 0;

	while (i < a->len && j < b->len) {
		int c = strcmp(a->pdata[i], b->pdata[j]);

		n += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	return n;
}

/* Whether @a and @b share enough to be the same work when a line of
 * versions joins them, where similar() asks for more because nothing
 * else does: a patch-id; half the patch names of the smaller ("v18 is 4
 * patches of v19's 18", a new first patch); four fifths of the words of
 * the shorter name, three at least ("Support configurable fan PWM at
 * shutdown" after "hwmon: emc2305: Support configurable fan PWM at
 * shutdown"). */
static gboolean
overlaps(const Ser *a, const Ser *b)
{
	guint np = MIN(a->pnames->len, b->pnames->len);
	guint nt = MIN(a->tokens->len, b->tokens->len);

	if (common(a->pidset, b->pidset) > 0)
		return TRUE;
	if (np > 0 && 2 * common(a->pnames, b->pnames) >= np)
		return TRUE;
	return nt >= 3 && 5 * common(a->tokens, b->tokens) >= 4 * nt;
}

/* ---- name keys ----
 *
 * The same-sender rules (resend aside) need similar(S, P): equal names
 * (so equal word sets), word Jaccard >= 4/5, or patch-name Jaccard >= 3/5
 * with at least two patch names each (one name against two or more is at
 * most 1/2).  Prefix filtering turns these into lookups.  If J(A, B) >= t
 * then |A n B| >= t max(|A|, |B|), so |A n B| >= a(X) = ceil(t |X|) for
 * X = A and X = B.  Fix any total order of the words; let w1 < w2 be the
 * first two elements of A n B.  At least |A n B| - 1 elements of A come
 * at or after w1, so w1 is among the first |A| - a(A) + 1 of A; likewise
 * w2 among the first |A| - a(A) + 2, and the same for B.  So:
 *  - name words: a series is indexed under each pair of its first
 *    n - a + 2 words (a single word when n = 1: a one-word name can only
 *    be similar to the same one word, since J({x}, B) = 1/|B|);
 *  - patch names (two or more): under each of its first n - a + 1.
 * S shares such a key with every P that can be similar to it, and the
 * relation is symmetric.  The order only decides how selective keys are:
 * words likely in many names of one sender (subsystem prefixes, common
 * verbs) go last, then longer words first.  Keys are kept as hashes, by
 * sender and date (see "name key hashes"). */

static int
str_cmp_bsearch(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static gboolean
weak_word(const char *w, gsize len)
{
	/* sorted: bsearch; none is longer than seven letters */
	static const char *const common[] = {
		"a", "add", "an", "and", "as", "at", "be", "by", "do", "drop",
		"fix", "for", "from", "if", "in", "into", "is", "it", "make",
		"new", "not", "of", "on", "only", "or", "remove", "support",
		"the", "to", "update", "use", "when", "with",
	};

	if (strpbrk(w, ":/") != NULL)
		return TRUE;
	return len <= 7 &&
	       bsearch(w, common, G_N_ELEMENTS(common), sizeof common[0],
		       str_cmp_bsearch) != NULL;
}

typedef struct {
	const char *w;
	gsize len;
	gboolean weak;
} Word;

static gint
word_order(gconstpointer pa, gconstpointer pb)
{
	const Word *a = pa, *b = pb;

	if (a->weak != b->weak)
		return a->weak ? 1 : -1;
	if (a->len != b->len)
		return a->len > b->len ? -1 : 1;
	return strcmp(a->w, b->w);
}

/* The words of @set in key order, into @words (room for set->len);
 * returns ceil(@tn/@td * n). */
static guint
ordered_words(const GPtrArray *set, guint tn, guint td, Word *words)
{
	guint n = set->len;

	for (guint i = 0; i < n; i++) {
		const char *k = set->pdata[i];
		gsize len = strlen(k);
		Word w = { k, len, weak_word(k, len) };
		guint j = i;

		/* insertion sort: a handful of words */
		for (; j > 0 && word_order(&words[j - 1], &w) > 0; j--)
			words[j] = words[j - 1];
		words[j] = w;
	}
	return (tn * n + td - 1) / td;
}

/* ---- name key hashes ----
 *
 * The keys are stored hashed (64 bits), one name_keys entry a series: by
 * sender, date and id, its key hashes.  Finding the series that share a
 * key with S within the window is a range read of the sender's entries
 * and a comparison of hashes; a hash shared by chance only adds a
 * candidate that rule() turns down, so the links are those of the keys
 * themselves.  One entry a series replaced one index entry a key (four
 * on average), and a batch reads each sender's window once (name_pass()):
 * docs/threading.md, "Cost". */

static void
put_be64(guint8 out[8], guint64 v)
{
	v = GUINT64_TO_BE(v);
	memcpy(out, &v, 8);
}

static guint64
get_be64(const guint8 *p)
{
	guint64 v;

	memcpy(&v, p, 8);
	return GUINT64_FROM_BE(v);
}

/* FNV-1a over @len bytes at @p, from @h. */
static guint64
fnv(guint64 h, const char *p, gsize len)
{
	for (gsize i = 0; i < len; i++)
		h = (h ^ (guint8)p[i]) * G_GUINT64_CONSTANT(0x100000001b3);
	return h;
}

static guint64
mix64(guint64 h)
{
	/* (FNV's low bits are weak: mixed, for the tables they index) */
	h ^= h >> 32;
	h *= G_GUINT64_CONSTANT(0xd6e8feb86659fd93);
	return h ^ (h >> 32);
}

static guint64
key_hash(guint64 h, char kind, const Word *w1, const Word *w2)
{
	h = fnv(h, &kind, 1);
	h = fnv(h, w1->w, w1->len);
	if (w2 != NULL) {
		h = fnv(h, " ", 1);
		h = fnv(h, w2->w, w2->len);
	}
	return mix64(h);
}

static gint
u64_cmp(gconstpointer a, gconstpointer b)
{
	guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;

	return x < y ? -1 : x > y;
}

/* Of a whole string; never 0. */
static guint64
str_hash64(const char *str)
{
	guint64 h = mix64(fnv(G_GUINT64_CONSTANT(0xcbf29ce484222325), str,
			      strlen(str)));

	return h != 0 ? h : 1;
}

/* s->kh: the hashes of @s's name keys, sorted, distinct.  A key is
 * "\ntW1 W2" (a pair of name words), "\ntW" (a one-word name) or "\npNAME"
 * (a patch name); only its hash is kept.  (The entries are partitioned
 * by their owner, an address or a person, in name_keys' key: the hash
 * need not name it, and one set of hashes serves both entries.) */
static void
name_hashes(Ser *s)
{
	g_autofree Word *tw = NULL, *pw = NULL;
	guint tn, ta, pn, pa, n = 0, k = 0;
	guint64 h0;

	if (s->kh != NULL)
		return;
	s->norm_h = s->norm[0] != '\0' ? str_hash64(s->norm) : 0;
	h0 = fnv(G_GUINT64_CONSTANT(0xcbf29ce484222325), "\n", 1);
	/* TOKEN_JACCARD = 4/5, PNAME_JACCARD = 3/5 */
	tn = s->tokens->len;
	tw = g_new(Word, tn + 1);
	ta = ordered_words(s->tokens, 4, 5, tw);
	pn = s->pnames->len;
	pw = g_new(Word, pn + 1);
	pa = pn > 1 ? ordered_words(s->pnames, 3, 5, pw) : 0;
	if (tn == 1)
		n = 1;
	else if (tn > 1)
		n = (tn - ta + 2) * (tn - ta + 1) / 2;
	if (pn > 1)
		n += pn - pa + 1;
	s->kh = g_new(guint64, n + 1);
	if (tn == 1)
		s->kh[k++] = key_hash(h0, 't', &tw[0], NULL);
	for (guint i = 0; tn > 1 && i < tn - ta + 2; i++)
		for (guint j = i + 1; j < tn - ta + 2; j++)
			s->kh[k++] = key_hash(h0, 't', &tw[i], &tw[j]);
	for (guint i = 0; pn > 1 && i < pn - pa + 1; i++)
		s->kh[k++] = key_hash(h0, 'p', &pw[i], NULL);
	g_assert(k == n);
	qsort(s->kh, k, sizeof *s->kh, u64_cmp);
	n = 0;
	for (guint i = 0; i < k; i++)
		if (n == 0 || s->kh[n - 1] != s->kh[i])
			s->kh[n++] = s->kh[i];
	s->nkh = n;
}

/* A name_keys value: version (u32), norm hash (u64), then the key hashes
 * (u64, sorted); big-endian. */
typedef struct {
	guint32 version;
	guint64 norm_h;
	const guint8 *keys;
	guint nkeys;
} NameVal;

#define NAME_VAL_HEAD 12

/* @idlen: the entry's id's (threading's ids are 13 bytes; over 255 the
 * entry is not one of ours). */
static gboolean
name_val_parse(gsize idlen, const guint8 *val, gsize len, NameVal *v,
	       GError **error)
{
	if (idlen > 255 || len < NAME_VAL_HEAD ||
	    (len - NAME_VAL_HEAD) % 8 != 0) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "name keys entry is corrupt");
		return FALSE;
	}
	v->version = (guint32)val[0] << 24 | (guint32)val[1] << 16 |
		     (guint32)val[2] << 8 | val[3];
	v->norm_h = get_be64(val + 4);
	v->keys = val + NAME_VAL_HEAD;
	v->nkeys = (guint)((len - NAME_VAL_HEAD) / 8);
	return TRUE;
}

/* Whether one of the @n hashes at @val (u64 BE, sorted) is in @h
 * (sorted). */
static gboolean
shares(const guint8 *val, guint n, const guint64 *h, guint nh)
{
	guint i = 0, j = 0;

	while (i < n && j < nh) {
		guint64 k = get_be64(val + 8 * (gsize)i);

		if (k == h[j])
			return TRUE;
		i += k < h[j];
		j += k > h[j];
	}
	return FALSE;
}

/* Whether S and the series of @v may be linked by a rule that name keys
 * find the candidates of: "subject" needs another version, "unlabeled"
 * the same version and the same name (its hash: exact unless two names
 * hash alike).  A candidate that fails it can only be linked by a rule
 * with its own index (change-id, reply, link, patch-id). */
static gboolean
may_link(const Ser *S, guint32 version, guint64 norm_h)
{
	return S->rec->version != version ||
	       (S->norm_h != 0 && S->norm_h == norm_h);
}

static gboolean
in_window(gint64 a, gint64 b)
{
	return (a > b ? (guint64)a - (guint64)b : (guint64)b - (guint64)a) <=
	       PGATE_THREADING_LINK_WINDOW;
}

/* The series' entry under @owner (an address, or a person_key()). */
static gboolean
name_put(PgateStoreTxn *txn, const char *owner, const Ser *s, GError **error)
{
	gsize len = NAME_VAL_HEAD + 8 * (gsize)s->nkh;
	g_autofree guint8 *val = g_new(guint8, len);
	guint32 ver = s->rec->version;

	val[0] = (guint8)(ver >> 24);
	val[1] = (guint8)(ver >> 16);
	val[2] = (guint8)(ver >> 8);
	val[3] = (guint8)ver;
	put_be64(val + 4, s->norm_h);
	for (guint i = 0; i < s->nkh; i++)
		put_be64(val + NAME_VAL_HEAD + 8 * (gsize)i, s->kh[i]);
	return pgate_store_name_put(txn, owner, s->rec->date, s->rec->id, val,
				    len, error);
}

/* ---- noting changed series ---- */

/* The series the link passes read and wrote are kept from one
 * transaction to the next (a new series's neighbours are mostly older
 * series of the same sender, read again by every batch of an import),
 * while they are what the store holds: as long as every write
 * transaction since the cache's last is the next one (nobody else wrote:
 * pgate_store_txn_id) and no pass failed.  At most SER_CACHE_MAX. */
#define SER_CACHE_MAX 4096

struct PgateThrLinks {
	GPtrArray *dropped;   /* Ser* as they were stored (owned) */
	GHashTable *formed;   /* id -> Ser* as written and still there */
	GHashTable *cache;    /* id -> Ser* (owned), as stored */
	guint64 cache_txn;    /* the transaction the cache is as of, or 0 */
	guint pass;           /* counts the link passes: Ser.pass */
	guint64 nb_mark;      /* counts neighbours() calls: Ser.nb_mark */
};

PgateThrLinks *
pgate_threading__links_new(void)
{
	PgateThrLinks *l = g_new0(PgateThrLinks, 1);

	l->dropped = g_ptr_array_new_with_free_func((GDestroyNotify)ser_free);
	l->formed = g_hash_table_new_full(pgate_threading__str_hash,
					  g_str_equal, g_free,
					  (GDestroyNotify)ser_free);
	l->cache = g_hash_table_new_full(pgate_threading__str_hash,
					 g_str_equal, g_free,
					 (GDestroyNotify)ser_free);
	return l;
}

void
pgate_threading__links_free(PgateThrLinks *l)
{
	if (l == NULL)
		return;
	g_ptr_array_unref(l->dropped);
	g_hash_table_unref(l->formed);
	g_hash_table_unref(l->cache);
	g_free(l);
}

void
pgate_threading__links_clear(PgateThrLinks *l)
{
	g_ptr_array_set_size(l->dropped, 0);
	g_hash_table_remove_all(l->formed);
}

/* Before a pass in @txn: keeps the cache only if it is as of the
 * transaction before. */
static void
cache_check(PgateThrLinks *l, PgateStoreTxn *txn)
{
	guint64 id = pgate_store_txn_id(txn);

	if (l->cache_txn == 0 || id != l->cache_txn + 1)
		g_hash_table_remove_all(l->cache);
	/* (a transaction that aborts after this one's pass has the same id
	 * as its retry: the retry then drops the cache) */
	l->cache_txn = id;
}

gboolean
pgate_threading__links_formed(PgateStoreTxn *txn, PgateThrLinks *l,
			      PgateSeriesRec *rec, GError **error)
{
	Ser *s = ser_new(rec, TRUE);

	/* not in the store yet: the link pass puts it, and its name keys
	 * (name_pass()) */
	s->dirty = TRUE;
	g_hash_table_replace(l->formed, g_strdup(rec->id), s);
	return TRUE;
}

PgateSeriesRec *
pgate_threading__links_take_formed(PgateThrLinks *l, const char *id)
{
	Ser *s = g_hash_table_lookup(l->formed, id);
	PgateSeriesRec *rec;

	if (s == NULL)
		return NULL;
	rec = g_steal_pointer(&s->rec);
	s->own_rec = FALSE;
	g_hash_table_remove(l->formed, id);
	return rec;
}

gboolean
pgate_threading__links_dropped(PgateStoreTxn *txn, PgateThrLinks *l,
			       PgateSeriesRec *rec, GError **error)
{
	/* its name_keys entry goes with the next pass (name_pass()) */
	g_hash_table_remove(l->formed, rec->id);
	g_hash_table_remove(l->cache, rec->id);
	g_ptr_array_add(l->dropped, ser_new(rec, TRUE));
	return TRUE;
}

/* ---- the link pass ---- */

typedef struct {
	PgateStoreTxn *txn;
	PgateThrLinks *l;        /* its cache, its pass and neighbours()
				  * counters */
	GHashTable *missing;     /* ids of series not in the store */
	GPtrArray *touched;      /* Ser*: those this pass used */
} Pass;

static void
touch(Pass *p, Ser *s)
{
	if (s->pass != p->l->pass) {
		s->pass = p->l->pass;
		g_ptr_array_add(p->touched, s);
	}
}

/* (transfer none) (nullable): series @id; NULL with *error unset when
 * there is no such series. */
static Ser *
get_ser(Pass *p, const char *id, GError **error)
{
	g_autoptr(GError) local = NULL;
	PgateSeriesRec *rec;
	Ser *s = g_hash_table_lookup(p->l->cache, id);

	if (s == NULL) {
		if (g_hash_table_contains(p->missing, id))
			return NULL;
		rec = pgate_store_series_get(p->txn, id, &local);
		if (rec == NULL) {
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_NOT_FOUND))
				g_hash_table_add(p->missing, g_strdup(id));
			else
				g_propagate_error(error,
						  g_steal_pointer(&local));
			return NULL;
		}
		s = ser_new(rec, TRUE);
		g_hash_table_insert(p->l->cache, g_strdup(id), s);
	}
	touch(p, s);
	return s;
}

static gboolean
is_older(const PgateSeriesRec *p, const PgateSeriesRec *s)
{
	if (p->version != s->version)
		return p->version < s->version;
	if (p->date != s->date)
		return p->date < s->date;
	return strcmp(p->id, s->id) < 0;
}

static gboolean
contains(GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return TRUE;
	return FALSE;
}

/* The rule by which S supersedes P, or RULE_NONE.  neighbours() must find
 * every P for which this is not RULE_NONE. */
/* Whether S names one of P's messages (cover or member) by URL. */
static gboolean
links_into(const Ser *S, const Ser *P)
{
	GPtrArray *l = S->rec->linked_msgids;

	if (l->len == 0)
		return FALSE;
	if (P->rec->cover && contains(l, P->rec->cover))
		return TRUE;
	for (guint i = 0; i < P->rec->patches->len; i++) {
		PgateSeriesPatch *pp = P->rec->patches->pdata[i];

		if (contains(l, pp->msgid))
			return TRUE;
	}
	return FALSE;
}

/* A display name as a person: case-folded, without b4's relay suffix
 * ("Alice via B4 Relay <devnull+...>"); NULL for none. */
static char *
person_name(const char *name)
{
	static const char relay[] = " via b4 relay";
	char *f;
	gsize n;

	if (name == NULL)
		return NULL;
	f = g_utf8_casefold(name, -1);
	g_strstrip(f);
	n = strlen(f);
	if (n >= sizeof(relay) - 1 &&
	    strcmp(f + n - (sizeof(relay) - 1), relay) == 0) {
		f[n - (sizeof(relay) - 1)] = '\0';
		g_strstrip(f);
	}
	if (f[0] == '\0')
		g_clear_pointer(&f, g_free);
	return f;
}

/* Same address, or the same display name: one person (b4's relay sends
 * as devnull+...@kernel.org under the author's name; a missing name
 * matches only by address). */
static gboolean
same_person(const PgateSeriesRec *s, const PgateSeriesRec *p)
{
	g_autofree char *a = NULL, *b = NULL;

	if (s->submitter_email[0] != '\0' &&
	    g_ascii_strcasecmp(s->submitter_email, p->submitter_email) == 0)
		return TRUE;
	a = person_name(s->submitter_name);
	b = person_name(p->submitter_name);
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

gboolean
pgate_threading__same_person(const PgateSeriesRec *s, const PgateSeriesRec *p)
{
	return same_person(s, p);
}

/* Whether a patch of @s re-rolls one of @p's ("[PATCH v2 2/3]" in reply
 * to v1's 2/3: series.c's replaces), however soon it was sent. */
static gboolean
rerolls(const PgateSeriesRec *s, const PgateSeriesRec *p)
{
	for (guint i = 0; i < s->patches->len; i++) {
		const char *r = ((PgateSeriesPatch *)s->patches->pdata[i])->replaces;

		for (guint j = 0; r != NULL && j < p->patches->len; j++)
			if (strcmp(r, ((PgateSeriesPatch *)
				       p->patches->pdata[j])->msgid) == 0)
				return TRUE;
	}
	return FALSE;
}

/* Whether two series are parts of one mailing: the same sender, sent
 * within PGATE_THREADING_MAILING_GAP, one replying into the other, and
 * neither re-rolling a patch of the other (a "[PATCH v2 2/3]" sent in
 * reply to 2/3 a minute later is its next version, however soon).  What
 * formation leaves apart in a mailing (two series sent together, a stale
 * patch sent along whose slot was taken) is never a version of the rest:
 * "[PATCH v4 0/3] Add initialization of clock" threaded under "[PATCH v1
 * 0/2] Add SPI module" of the same send (linux-spi) is other work. */
static gboolean
one_mailing(const PgateSeriesRec *s, const PgateSeriesRec *p)
{
	return s->submitter_email[0] != '\0' && !rerolls(s, p) &&
	       !rerolls(p, s) &&
	       g_ascii_strcasecmp(s->submitter_email, p->submitter_email) == 0 &&
	       (s->date > p->date ? s->date - p->date : p->date - s->date) <=
		       PGATE_THREADING_MAILING_GAP &&
	       (contains(s->replies_into, p->id) ||
		contains(p->replies_into, s->id));
}

/* What every rule needs of P to precede S: not sent after it (a "v1"
 * sent a year after a v13 is not its predecessor: linux-hwmon, "Support
 * pwm/tach driver for aspeed ast26xx"; a bad Date is 0 and precedes all),
 * for the same stable tree, and not a part of the same mailing. */
static gboolean
may_precede(const Ser *S, const Ser *P)
{
	const PgateSeriesRec *s = S->rec, *p = P->rec;

	return (s->date <= 0 || p->date <= s->date) &&
	       g_strcmp0(S->tree, P->tree) == 0 && !one_mailing(s, p);
}

/* Whether S is P's work again by more than similar()'s name words: the
 * same name, the same patches, or most of the same patch names (one
 * person's per-driver patches "rtc: cpcap: ..." and "rtc: as3722: ..."
 * differ in one name word only). */
static gboolean
same_again(const Ser *S, const Ser *P)
{
	if (S->norm[0] != '\0' && strcmp(S->norm, P->norm) == 0)
		return TRUE;
	if (S->pids && P->pids && strcmp(S->pids, P->pids) == 0)
		return TRUE;
	return S->pnames->len > 1 && jaccard(S->pnames, P->pnames) >= PNAME_JACCARD;
}

/* Whether S is the same person's work sent again after P, a higher
 * version, under a lower label ("[PATCH] x" resubmitted a month after
 * "[PATCH v2] x"; a v4 sent again after v5): each send follows the
 * closest one, so S follows P, though its label is lower (issue #49).
 * Only sends dated after P: with may_precede(), every link goes back in
 * time, or to an is_older() one of the same date, so no cycle forms. */
static gboolean
late_send(const Ser *S, const Ser *P)
{
	const PgateSeriesRec *s = S->rec, *p = P->rec;

	return p->version > s->version && s->date > 0 && p->date < s->date &&
	       s->date - p->date <= PGATE_THREADING_LINK_WINDOW &&
	       same_person(s, p) && same_again(S, P);
}

/* The order of sends: by date, and by is_older() for the same date (or
 * when a date is bad). */
static gboolean
earlier(const PgateSeriesRec *a, const PgateSeriesRec *b)
{
	if (a->date > 0 && b->date > 0 && a->date != b->date)
		return a->date < b->date;
	return is_older(a, b);
}

static int
rule(const Ser *S, const Ser *P)
{
	const PgateSeriesRec *s = S->rec, *p = P->rec;
	/* one person: the same address or the same name (b4's relay, an
	 * address change).  The name index is keyed by address, so a pair
	 * under two addresses meets only through the other indexes (a
	 * reply, a link, a shared patch-id): a resend through b4's relay
	 * is found by its patch-ids */
	gboolean same = same_person(s, p);

	if (s == p || !may_precede(S, P))
		return RULE_NONE;
	if (!is_older(p, s))
		return late_send(S, P) ? RULE_LATE : RULE_NONE;
	if (s->change_id && p->change_id && strcmp(s->change_id, p->change_id) == 0)
		return RULE_CHANGE_ID;
	/* replying into an older series: a new version when the version is
	 * higher (another person's only under the same series name: a
	 * reply alone never joins two people), or (same sender) when it is
	 * the same work again */
	if (contains(s->replies_into, p->id) &&
	    ((p->version < s->version &&
	      ((S->norm[0] != '\0' && strcmp(S->norm, P->norm) == 0) ||
	       same_person(s, p))) ||
	     (same && p->version == s->version &&
	      (similar(S, P) || (S->pids && P->pids &&
				 strcmp(S->pids, P->pids) == 0)))))
		return RULE_IN_REPLY_TO;
	/* "v1: https://lore.kernel.org/r/ID": an explicit pointer to an
	 * older version, whoever sent it (a Link: in a patch's commit
	 * message is not read: see pgate_ingest__body_links) */
	if (p->version < s->version && links_into(S, P))
		return RULE_LINK;
	if (!same || ABS(s->date - p->date) > PGATE_THREADING_LINK_WINDOW)
		return RULE_NONE;
	if (p->version == s->version && S->pids && P->pids &&
	    strcmp(S->pids, P->pids) == 0)
		return RULE_RESEND;
	if (p->version < s->version && similar(S, P))
		return RULE_SUBJECT;
	if (p->version == s->version && S->norm[0] != '\0' &&
	    strcmp(S->norm, P->norm) == 0)
		return RULE_UNLABELED;
	return RULE_NONE;
}

/* neighbours() of one series: found series are added to S->nb once. */
typedef struct {
	Pass *p;
	Ser *S;
	guint64 mark;
} NbFind;

/* ---- the name keys in a pass ----
 *
 * A series has a name_keys entry under its address and, with a display
 * name, one under its person (person_key()): a v2 sent from another
 * address of the same person is then a name candidate of v3, which the
 * address alone never found (issue #49, E).  Each owner's entries are
 * read and written as one group. */

static const char *
sender_of(const Ser *s)
{
	const char *e = s->rec->submitter_email;

	return e != NULL ? e : "";
}

typedef struct {
	const char *owner;       /* an address, or a person_key() */
	Ser *s;
} Owned;

/* (owner, date, id) */
static gint
owned_order(gconstpointer pa, gconstpointer pb)
{
	const Owned *a = pa, *b = pb;
	int c = strcmp(a->owner, b->owner);

	if (c != 0)
		return c;
	if (a->s->rec->date != b->s->rec->date)
		return a->s->rec->date < b->s->rec->date ? -1 : 1;
	return strcmp(a->s->rec->id, b->s->rec->id);
}

/* Appends @S's owners to @to: its address, its person. */
static void
owned_add(GArray *to, Ser *S)
{
	if (sender_of(S)[0] != '\0') {
		Owned o = { sender_of(S), S };

		g_array_append_val(to, o);
	}
	if (S->person != NULL) {
		Owned o = { S->person, S };

		g_array_append_val(to, o);
	}
}

static gboolean
kh_shared(const Ser *a, const Ser *b)
{
	guint i = 0, j = 0;

	while (i < a->nkh && j < b->nkh) {
		if (a->kh[i] == b->kh[j])
			return TRUE;
		if (a->kh[i] < b->kh[j])
			i++;
		else
			j++;
	}
	return FALSE;
}

typedef struct {
	guint64 hash;
	Ser *ser;                /* NULL: empty */
	guint i;                 /* its index in the sender's group */
} KSlot;

/* What name_sender() reads the sender's entries with. */
typedef struct {
	GHashTable *gone;        /* ids whose entries are replaced */
	KSlot *slots;            /* the group's key hashes */
	gsize mask;
	guint64 *marks;          /* by index in the group: the last entry
				  * that made it a candidate */
	guint64 mark;
} NameRead;

/* A PgateStoreNameFunc: adds the entry's series to the ncand of each
 * series of the group within the window that shares a hash with it. */
static gboolean
name_read_entry(gint64 date, const char *id, gsize idlen, const guint8 *val,
		gsize len, gpointer data, GError **error)
{
	NameRead *r = data;
	int skip = -1;           /* not known yet whether the entry goes */
	NameVal v;

	if (!name_val_parse(idlen, val, len, &v, error))
		return FALSE;
	r->mark++;
	for (guint j = 0; j < v.nkeys && skip != 1; j++) {
		guint64 h = get_be64(v.keys + 8 * (gsize)j);

		for (gsize x = h & r->mask; r->slots[x].ser != NULL;
		     x = (x + 1) & r->mask) {
			Ser *S = r->slots[x].ser;

			if (r->slots[x].hash != h ||
			    r->marks[r->slots[x].i] == r->mark ||
			    !in_window(date, S->rec->date))
				continue;
			/* (each formed series once an entry) */
			r->marks[r->slots[x].i] = r->mark;
			if (!may_link(S, v.version, v.norm_h))
				continue;
			if (skip < 0) {
				char buf[256];

				memcpy(buf, id, idlen);
				buf[idlen] = '\0';
				skip = g_hash_table_contains(r->gone, buf);
			}
			if (skip)
				break;
			g_ptr_array_add(S->ncand, g_strndup(id, idlen));
		}
	}
	return TRUE;
}

/* One owner's series formed (@add, @na of them, by date and id) and
 * dropped (@drop, @nd) in this pass: each formed one's name candidates
 * into its ncand (the stored entries but those of the dropped and
 * re-formed series, and each other), then the entries replaced. */
static gboolean
name_owner(PgateStoreTxn *txn, const char *owner, const Owned *add, guint na,
	   const Owned *drop, guint nd, GError **error)
{
	g_autoptr(GHashTable) gone = g_hash_table_new(g_str_hash, g_str_equal);
	g_autofree KSlot *slots = NULL;
	g_autofree guint64 *marks = NULL;
	gsize nslots = 16;
	NameRead r;

	for (guint i = 0; i < nd; i++)
		g_hash_table_add(gone, drop[i].s->rec->id);
	for (guint i = 0; i < na; i++) {
		g_hash_table_add(gone, add[i].s->rec->id);
		nslots += 2 * (gsize)add[i].s->nkh;
	}
	if (na > 0) {
		/* the formed series by key hash: open addressing, a power
		 * of two at least twice the keys */
		while (nslots & (nslots - 1))
			nslots &= nslots - 1;
		nslots <<= 1;
		slots = g_new0(KSlot, nslots);
		marks = g_new0(guint64, na);
		for (guint i = 0; i < na; i++) {
			Ser *S = add[i].s;

			for (guint j = 0; j < S->nkh; j++) {
				gsize x = S->kh[j] & (nslots - 1);

				while (slots[x].ser != NULL)
					x = (x + 1) & (nslots - 1);
				slots[x] = (KSlot){ S->kh[j], S, i };
			}
		}
		r = (NameRead){ gone, slots, nslots - 1, marks, 0 };
		/* the group is by date: one read covers every window */
		if (!pgate_store_name_range(
			    txn, owner,
			    add[0].s->rec->date - PGATE_THREADING_LINK_WINDOW,
			    add[na - 1].s->rec->date + PGATE_THREADING_LINK_WINDOW,
			    name_read_entry, &r, error))
			return FALSE;
	}
	/* each other (by date: the window ends the inner loop) */
	for (guint i = 0; i < na; i++)
		for (guint j = i + 1; j < na; j++) {
			Ser *A = add[i].s, *B = add[j].s;

			if (!in_window(A->rec->date, B->rec->date))
				break;
			if (kh_shared(A, B) &&
			    may_link(A, B->rec->version, B->norm_h)) {
				g_ptr_array_add(A->ncand, g_strdup(B->rec->id));
				g_ptr_array_add(B->ncand, g_strdup(A->rec->id));
			}
		}

	for (guint i = 0; i < nd; i++)
		if (!pgate_store_name_delete(txn, owner, drop[i].s->rec->date,
					     drop[i].s->rec->id, error))
			return FALSE;
	for (guint i = 0; i < na; i++)
		if (!name_put(txn, owner, add[i].s, error))
			return FALSE;
	return TRUE;
}

/* Before the pass: the name candidates of the series formed, and the
 * name_keys entries of those formed and dropped.  name_keys then holds
 * what a rethread would have written. */
static gboolean
name_pass(PgateStoreTxn *txn, GPtrArray *formed, GPtrArray *dropped,
	  GError **error)
{
	g_autoptr(GArray) add = g_array_new(FALSE, FALSE, sizeof(Owned));
	g_autoptr(GArray) drop = g_array_new(FALSE, FALSE, sizeof(Owned));
	const Owned *A, *D;
	guint a = 0, d = 0;

	for (guint i = 0; i < formed->len; i++) {
		Ser *S = formed->pdata[i];

		name_hashes(S);
		S->ncand = g_ptr_array_new_with_free_func(g_free);
		owned_add(add, S);
	}
	for (guint i = 0; i < dropped->len; i++)
		owned_add(drop, dropped->pdata[i]);
	g_array_sort(add, owned_order);
	g_array_sort(drop, owned_order);
	A = (const Owned *)(gpointer)add->data;
	D = (const Owned *)(gpointer)drop->data;
	/* merge by owner */
	while (a < add->len || d < drop->len) {
		const char *owner;
		guint a1 = a, d1 = d;

		if (d == drop->len ||
		    (a < add->len && strcmp(A[a].owner, D[d].owner) <= 0))
			owner = A[a].owner;
		else
			owner = D[d].owner;
		while (a1 < add->len && strcmp(A[a1].owner, owner) == 0)
			a1++;
		while (d1 < drop->len && strcmp(D[d1].owner, owner) == 0)
			d1++;
		if (!name_owner(txn, owner, A + a, a1 - a, D + d, d1 - d,
				error))
			return FALSE;
		a = a1;
		d = d1;
	}
	return TRUE;
}

/* A PgateStoreNameFunc: collects the ids of the entries within the
 * window that share a hash with the series. */
typedef struct {
	const Ser *S;
	GPtrArray *ids;
} NameScan;

static gboolean
name_scan_entry(gint64 date, const char *id, gsize idlen, const guint8 *val,
		gsize len, gpointer data, GError **error)
{
	NameScan *sc = data;
	NameVal v;

	if (!name_val_parse(idlen, val, len, &v, error))
		return FALSE;
	if (in_window(date, sc->S->rec->date) &&
	    shares(v.keys, v.nkeys, sc->S->kh, sc->S->nkh) &&
	    may_link(sc->S, v.version, v.norm_h))
		g_ptr_array_add(sc->ids, g_strndup(id, idlen));
	return TRUE;
}

static gboolean nb_add(NbFind *f, const char *id, GError **error);

/* The name candidates of S: found by name_pass() when S was formed in
 * this pass, else the entries of its owners (its address, its person)
 * within the window that share a key hash with it. */
static gboolean
name_neighbours(NbFind *f, GError **error)
{
	Ser *S = f->S;
	const char *sender = sender_of(S);
	gint64 d = S->rec->date;
	g_autoptr(GPtrArray) ids = NULL;
	NameScan sc;

	if (S->ncand != NULL) {
		for (guint i = 0; i < S->ncand->len; i++)
			if (!nb_add(f, S->ncand->pdata[i], error))
				return FALSE;
		return TRUE;
	}
	name_hashes(S);
	if (S->nkh == 0)
		return TRUE;
	ids = g_ptr_array_new_with_free_func(g_free);
	sc = (NameScan){ S, ids };
	/* (collected first: nb_add() reads the store; a series found under
	 * both owners is added once) */
	for (guint k = 0; k < 2; k++) {
		const char *owner = k == 0 ? sender : S->person;

		if (owner == NULL || owner[0] == '\0')
			continue;
		if (!pgate_store_name_range(f->p->txn, owner,
					    d - PGATE_THREADING_LINK_WINDOW,
					    d + PGATE_THREADING_LINK_WINDOW,
					    name_scan_entry, &sc, error))
			return FALSE;
	}
	for (guint i = 0; i < ids->len; i++)
		if (!nb_add(f, ids->pdata[i], error))
			return FALSE;
	return TRUE;
}

static gboolean
nb_add(NbFind *f, const char *id, GError **error)
{
	g_autoptr(GError) local = NULL;
	Ser *n;

	if (strcmp(id, f->S->rec->id) == 0)
		return TRUE;
	n = get_ser(f->p, id, &local);
	if (n == NULL) {
		if (local == NULL)
			return TRUE;    /* not in the store */
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (n->nb_mark != f->mark) {
		n->nb_mark = f->mark;
		g_ptr_array_add(f->S->nb, n);
	}
	return TRUE;
}

/* A PgateStoreValueFunc: @val is a series id. */
static gboolean
nb_add_val(const void *val, gsize len, gpointer data, GError **error)
{
	char buf[64];
	g_autofree char *big = NULL;

	if (len < sizeof buf) {
		memcpy(buf, val, len);
		buf[len] = '\0';
		return nb_add(data, buf, error);
	}
	big = g_strndup(val, len);
	return nb_add(data, big, error);
}

/* The series of message @msgid (any copy). */
static gboolean
nb_add_series_of(NbFind *f, const char *msgid, GError **error)
{
	g_autoptr(GArray) nums = pgate_store_message_lookup(f->p->txn, msgid,
							     error);

	if (nums == NULL)
		return FALSE;
	for (guint i = 0; i < nums->len; i++) {
		g_autofree char *id = NULL;

		if (!pgate_store_msg_series_get(f->p->txn,
						g_array_index(nums, guint64, i),
						&id, error))
			return FALSE;
		if (id != NULL && !nb_add(f, id, error))
			return FALSE;
	}
	return TRUE;
}

/* The "link" rule's candidates, both ways: the series of the messages S
 * names, and (link_index) the series that name one of S's messages. */
static gboolean
link_neighbours(NbFind *f, GError **error)
{
	const PgateSeriesRec *s = f->S->rec;

	for (guint i = 0; i < s->linked_msgids->len; i++)
		if (!nb_add_series_of(f, s->linked_msgids->pdata[i], error))
			return FALSE;
	for (guint i = 0; i <= s->patches->len; i++) {
		const char *mid = i < s->patches->len
			? ((PgateSeriesPatch *)s->patches->pdata[i])->msgid
			: s->cover;

		if (mid != NULL &&
		    !pgate_store_index_foreach(f->p->txn,
					       PGATE_STORE_INDEX_LINK, mid,
					       nb_add_val, f, error))
			return FALSE;
	}
	return TRUE;
}

/* (transfer none): every series that S can supersede or be superseded
 * by: those sharing a change-id, a reply edge, S's smallest patch-id, or
 * a name key within the window (and some more; rule() decides).  Kept in
 * S until the pass ends: the indexes do not change during it. */
static GPtrArray *
neighbours(Pass *p, Ser *S, GError **error)
{
	const PgateSeriesRec *s = S->rec;
	NbFind f = { p, S, ++p->l->nb_mark };
	gboolean ok = TRUE;

	if (S->nb != NULL)
		return S->nb;
	S->nb = g_ptr_array_new();
	ok = name_neighbours(&f, error);
	if (ok && s->change_id != NULL)
		ok = pgate_store_index_foreach(p->txn, PGATE_STORE_INDEX_CHANGE,
					       s->change_id, nb_add_val, &f,
					       error);
	if (ok && S->min_pid != NULL)
		ok = pgate_store_index_foreach(p->txn,
					       PGATE_STORE_INDEX_PATCHID,
					       S->min_pid, nb_add_val, &f,
					       error);
	ok = ok && link_neighbours(&f, error);
	for (guint i = 0; ok && i < s->replies_into->len; i++)
		ok = nb_add(&f, s->replies_into->pdata[i], error);
	for (guint i = 0; ok && i < s->replied_by->len; i++)
		ok = nb_add(&f, s->replied_by->pdata[i], error);
	if (!ok)
		g_clear_pointer(&S->nb, g_ptr_array_unref);
	return S->nb;
}

/* The ids of @set, sorted (borrowed from the set). */
static GPtrArray *
sorted_keys(GHashTable *set)
{
	GPtrArray *out = g_ptr_array_new();
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, set);
	while (g_hash_table_iter_next(&it, &k, NULL))
		g_ptr_array_add(out, k);
	g_ptr_array_sort(out, str_cmp_p);
	return out;
}

static GHashTable *
str_set_new(void)
{
	return g_hash_table_new_full(pgate_threading__str_hash, g_str_equal,
				     g_free, NULL);
}

static gboolean
set_str(char **field, const char *v)
{
	if (g_strcmp0(*field, v) == 0)
		return FALSE;
	g_free(*field);
	*field = g_strdup(v);
	return TRUE;
}

/* ---- the line of versions ----
 *
 * The rules propose a predecessor, by the strongest evidence: a reply, a
 * link, a name.  But evidence names an ancestor, not always the parent:
 * v3 replies to v1's thread although v2 exists; a changelog inherited
 * from the previous submitter links "v2 ... v9" when v10 is the last; a
 * renamed v5 is not similar() to v6, which then finds v4.  So S
 * supersedes the closest earlier version of the same work in the line of
 * the proposed one (chain_pick()): the series that follow it, transitively
 * (follows(): a rule holds, or the same person replied into it), older
 * than S.  Everything read is the series' contents, never their links,
 * so the result does not depend on the order they came in. */
#define CHAIN_DEPTH 32      /* versions walked from the proposed one */
#define CHAIN_NODES 256     /* series of a line read, at most */

/* Whether X is later work in N's line: a rule holds from X to N, or X is
 * the same person's and replies into N (a patch sent on its own in reply
 * to the cover of the series it belongs with). */
static gboolean
follows(const Ser *X, const Ser *N)
{
	if (rule(X, N) != RULE_NONE)
		return TRUE;
	return is_older(N->rec, X->rec) && may_precede(X, N) &&
	       earlier(N->rec, X->rec) &&
	       contains(X->rec->replies_into, N->rec->id) &&
	       same_person(X->rec, N->rec);
}

static gint
ser_older_cmp(gconstpointer pa, gconstpointer pb)
{
	const Ser *a = *(Ser *const *)pa, *b = *(Ser *const *)pb;

	if (a == b)
		return 0;
	return earlier(a->rec, b->rec) ? -1 : 1;
}

/* A walk over follows(), breadth first from @from (forward: the series
 * that follow it; else backward: those it follows), at most CHAIN_DEPTH
 * steps and @max series, into @out (not @from).  @before (nullable): only
 * series that may precede it.  Each step's series are sorted before the
 * cap cuts them, so that what is read does not depend on the order in
 * which the indexes listed them. */
static gboolean
walk(Pass *p, Ser *from, gboolean forward, const Ser *before, guint max,
     GPtrArray *out, GError **error)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
	g_autoptr(GPtrArray) level = g_ptr_array_new();
	g_autoptr(GPtrArray) next = g_ptr_array_new();

	g_hash_table_add(seen, from);
	if (before != NULL)
		g_hash_table_add(seen, (gpointer)before);
	g_ptr_array_add(level, from);
	for (guint d = 0; d < CHAIN_DEPTH && level->len > 0 && out->len < max;
	     d++) {
		g_ptr_array_set_size(next, 0);
		for (guint i = 0; i < level->len; i++) {
			Ser *N = level->pdata[i];
			GPtrArray *nb = neighbours(p, N, error);

			if (nb == NULL)
				return FALSE;
			for (guint j = 0; j < nb->len; j++) {
				Ser *X = nb->pdata[j];

				if (g_hash_table_contains(seen, X) ||
				    (before != NULL &&
				     (!earlier(X->rec, before->rec) ||
				      !may_precede(before, X))) ||
				    !(forward ? follows(X, N) : follows(N, X)))
					continue;
				g_hash_table_add(seen, X);
				g_ptr_array_add(next, X);
			}
		}
		g_ptr_array_sort(next, ser_older_cmp);
		if (out->len + next->len > max)
			g_ptr_array_set_size(next, max - out->len);
		for (guint i = 0; i < next->len; i++)
			g_ptr_array_add(out, next->pdata[i]);
		g_ptr_array_set_size(level, 0);
		for (guint i = 0; i < next->len; i++)
			g_ptr_array_add(level, next->pdata[i]);
	}
	return TRUE;
}

/* Whether S may supersede X of its line by its version: a lower one,
 * its own when S sends the same patches again; when S is a late send
 * (@late: its proposed predecessor is a higher version), also a higher
 * one sent before S by the same person: the line's last version, though
 * renamed (being the same work is asked apart). */
static gboolean
version_fits(const Ser *S, const Ser *X, gboolean late)
{
	const PgateSeriesRec *s = S->rec, *x = X->rec;

	if (x->version == s->version)
		return rule(S, X) == RULE_RESEND;
	if (x->version < s->version)
		return TRUE;
	return late && s->date > 0 && x->date < s->date && same_person(s, x);
}

/* The series S supersedes, given the one the rules proposed (@best, by
 * @best_rule): the last sent (earlier()) of best's line that is the same
 * work as S (a rule holds from S, or the same person's and overlaps()),
 * that S's version fits; with a link, also any of S's own candidates
 * by the same person above the linked version (a changelog names an
 * ancestor: one inherited from the previous submitter stops at v9 when
 * v10 exists); failing those, the last sent of the line if no other
 * series of the line has its version (v3 replying to v1 after a renamed
 * v2: a line without branches).  A change-id names the work exactly: it
 * is kept. */
static gboolean
chain_pick(Pass *p, Ser *S, Ser *best, int best_rule, Ser **out,
	   GError **error)
{
	g_autoptr(GPtrArray) line = g_ptr_array_new();
	Ser *last = best, *tip = NULL;
	guint tips = 0;

	*out = best;
	if (best_rule == RULE_CHANGE_ID)
		return TRUE;
	if (!walk(p, best, TRUE, S, CHAIN_NODES, line, error))
		return FALSE;
	if (best_rule == RULE_LINK) {
		GPtrArray *nb = neighbours(p, S, error);

		if (nb == NULL)
			return FALSE;
		for (guint i = 0; i < nb->len; i++) {
			Ser *X = nb->pdata[i];

			if (X->rec->version > best->rec->version &&
			    earlier(last->rec, X->rec) &&
			    version_fits(S, X, FALSE) &&
			    same_person(S->rec, X->rec) &&
			    rule(S, X) != RULE_NONE)
				last = X;
		}
	}
	for (guint i = 0; i < line->len; i++) {
		Ser *X = line->pdata[i];

		if (!version_fits(S, X, best_rule == RULE_LATE))
			continue;
		/* (what only overlaps is a later version than best's, not a
		 * sibling in its thread: a patch of v1 sent again on its own
		 * is no predecessor of the whole v2) */
		if (earlier(last->rec, X->rec) &&
		    (rule(S, X) != RULE_NONE ||
		     (X->rec->version > best->rec->version &&
		      same_person(S->rec, X->rec) && overlaps(S, X))))
			last = X;
		if (tip == NULL || earlier(tip->rec, X->rec))
			tip = X;
	}
	/* (a line without branches: no other series of the tip's version,
	 * which is a later version than best's, not a sibling in its
	 * thread) */
	for (guint i = 0; tip != NULL && i < line->len; i++) {
		Ser *X = line->pdata[i];

		/* (a resend of the tip is no branch) */
		tips += X == tip || (X->rec->version == tip->rec->version &&
				     rule(X, tip) == RULE_NONE &&
				     rule(tip, X) == RULE_NONE);
	}
	if (last == best && tip != NULL && tips == 1 &&
	    tip->rec->version > best->rec->version &&
	    earlier(best->rec, tip->rec) && same_person(S->rec, tip->rec))
		last = tip;
	*out = last;
	return TRUE;
}

/* Whether P is a better candidate of S than Q under the same rule @r:
 * the closer version, then the later date, then the id; for "late" sends
 * (higher versions) the last sent. */
static gboolean
closer(const Ser *S, const Ser *P, const Ser *Q, int r)
{
	const PgateSeriesRec *s = S->rec, *p = P->rec, *q = Q->rec;

	if (r == RULE_LATE)
		return earlier(q, p);
	/* links to one's own work first: a changelog also links the other
	 * person's series it took a patch from (linux-rtc, "rtc: rtc-pm8xxx:
	 * clear the interrupt in probe" v3 names its own v1 and patch 4 of
	 * Johan Hovold's v2) */
	if (r == RULE_LINK && same_person(s, p) != same_person(s, q))
		return same_person(s, p);
	if (p->version != q->version)
		return s->version - p->version < s->version - q->version;
	if (p->date != q->date)
		return p->date > q->date;
	return strcmp(p->id, q->id) > 0;
}

/* Recomputes supersedes of S; adds to @Q the series whose superseded_by
 * this may change. */
static gboolean
update_supersedes(Pass *p, Ser *S, GHashTable *Q, GError **error)
{
	GPtrArray *nb = neighbours(p, S, error);
	Ser *best = NULL;
	int best_rule = RULE_NONE;
	const char *resend = NULL;

	if (nb == NULL)
		return FALSE;
	/* the best is a maximum under a total order: any order of visit */
	for (guint i = 0; i < nb->len; i++) {
		Ser *P = nb->pdata[i];
		int r = rule(S, P);

		if (r == RULE_NONE)
			continue;
		if (best == NULL || r < best_rule ||
		    (r == best_rule && closer(S, P, best, r))) {
			best = P;
			best_rule = r;
		}
	}
	/* a chain is a line: the closest earlier version of the same work
	 * in best's line (chain_pick()) */
	if (best != NULL) {
		Ser *last;

		if (!chain_pick(p, S, best, best_rule, &last, error))
			return FALSE;
		if (last != best) {
			best = last;
			best_rule = rule(S, last);
			if (best_rule == RULE_NONE)
				best_rule = RULE_CHAIN;
		}
	}
	if (S->rec->supersedes)
		g_hash_table_add(Q, g_strdup(S->rec->supersedes));
	g_hash_table_add(Q, g_strdup(S->rec->id));
	if (best != NULL) {
		g_hash_table_add(Q, g_strdup(best->rec->id));
		if (best->rec->version == S->rec->version && S->pids &&
		    best->pids && strcmp(S->pids, best->pids) == 0)
			resend = best->rec->id;
	}
	S->dirty |= set_str(&S->rec->supersedes, best ? best->rec->id : NULL);
	S->dirty |= set_str(&S->rec->link_reason,
			    best ? rule_names[best_rule] : NULL);
	S->dirty |= set_str(&S->rec->resend_of, resend);
	return TRUE;
}

/* Recomputes superseded_by of P from the series whose supersedes is P
 * (all among P's neighbours: every relation a rule needs is symmetric). */
static gboolean
update_superseded_by(Pass *p, Ser *P, GError **error)
{
	GPtrArray *nb = neighbours(p, P, error);
	Ser *best = NULL;
	int best_rule = RULE_NONE;

	if (nb == NULL)
		return FALSE;
	for (guint i = 0; i < nb->len; i++) {
		Ser *S = nb->pdata[i];
		int r;

		if (g_strcmp0(S->rec->supersedes, P->rec->id) != 0)
			continue;
		r = rule_of(S->rec->link_reason);
		if (best == NULL || r < best_rule ||
		    (r == best_rule &&
		     (S->rec->version < best->rec->version ||
		      (S->rec->version == best->rec->version &&
		       (S->rec->date < best->rec->date ||
			(S->rec->date == best->rec->date &&
			 strcmp(S->rec->id, best->rec->id) < 0)))))) {
			best = S;
			best_rule = r;
		}
	}
	P->dirty |= set_str(&P->rec->superseded_by, best ? best->rec->id : NULL);
	return TRUE;
}

/* Adds to @L the series whose supersedes a dropped series @X (@old) or a
 * formed one may change: for a dropped one, those whose supersedes it
 * was (it was not the best of the others); for a formed one, those it is
 * a candidate of (both among X's neighbours); and, since a series reads
 * the line of its proposed predecessor (chain_pick()), the newer series
 * that may propose one of the series X follows, transitively. */
static gboolean
affected(Pass *p, Ser *X, gboolean old, GHashTable *L, GError **error)
{
	GPtrArray *nb = neighbours(p, X, error);
	g_autoptr(GPtrArray) anc = g_ptr_array_new();

	if (nb == NULL)
		return FALSE;
	for (guint i = 0; i < nb->len; i++) {
		Ser *S = nb->pdata[i];

		/* a dropped X may also have led S along its chain to
		 * another series (update_supersedes()) */
		if ((old && g_strcmp0(S->rec->supersedes, X->rec->id) == 0) ||
		    rule(S, X) != RULE_NONE)
			g_hash_table_add(L, g_strdup(S->rec->id));
	}
	/* (the walk backward reads more than a line forward can: a line
	 * forward from any of these reaches X within its bounds) */
	if (!walk(p, X, FALSE, NULL, 4 * CHAIN_NODES, anc, error))
		return FALSE;
	for (guint i = 0; i < anc->len; i++) {
		Ser *A = anc->pdata[i];

		if ((nb = neighbours(p, A, error)) == NULL)
			return FALSE;
		for (guint j = 0; j < nb->len; j++) {
			Ser *S = nb->pdata[j];

			if (S != X && earlier(X->rec, S->rec) &&
			    rule(S, A) != RULE_NONE)
				g_hash_table_add(L, g_strdup(S->rec->id));
		}
	}
	return TRUE;
}

gboolean
pgate_threading__links_update(PgateStoreTxn *txn, PgateThrLinks *l,
			      GError **error)
{
	Pass p = { txn, l, NULL, NULL };
	g_autoptr(GHashTable) L = str_set_new();
	g_autoptr(GHashTable) Q = str_set_new();
	g_autoptr(GPtrArray) lids = NULL, qids = NULL;
	g_autoptr(GPtrArray) formed = g_ptr_array_new();
	GHashTableIter it;
	gpointer k, v;
	gboolean ok = FALSE;

	cache_check(l, txn);
	if (l->dropped->len == 0 && g_hash_table_size(l->formed) == 0)
		return TRUE;
	p.missing = str_set_new();
	p.touched = g_ptr_array_new();
	l->pass++;
	/* the series formed are in the store as they will be here (the pass
	 * puts them): it takes them over */
	g_hash_table_iter_init(&it, l->formed);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		g_hash_table_replace(l->cache, k, v);
		g_ptr_array_add(formed, v);
		touch(&p, v);
		g_hash_table_iter_steal(&it);
	}

	if (!name_pass(txn, formed, l->dropped, error))
		goto out;

	/* L: the series whose supersedes may change */
	for (guint i = 0; i < l->dropped->len; i++) {
		Ser *X = l->dropped->pdata[i];

		if (X->rec->supersedes)
			g_hash_table_add(Q, g_strdup(X->rec->supersedes));
		if (!affected(&p, X, TRUE, L, error))
			goto out;
	}
	for (guint i = 0; i < formed->len; i++) {
		Ser *X = formed->pdata[i];

		g_hash_table_add(L, g_strdup(X->rec->id));
		if (!affected(&p, X, FALSE, L, error))
			goto out;
	}

	/* (any order gives the same result: a series's supersedes depends on
	 * its candidates' contents, not on their links) */
	lids = sorted_keys(L);
	for (guint i = 0; i < lids->len; i++) {
		Ser *S = get_ser(&p, lids->pdata[i], error);

		if (S == NULL) {
			if (error && *error)
				goto out;
			continue;
		}
		if (!update_supersedes(&p, S, Q, error))
			goto out;
	}

	/* Q: the series whose superseded_by may change */
	qids = sorted_keys(Q);
	for (guint i = 0; i < qids->len; i++) {
		Ser *P = get_ser(&p, qids->pdata[i], error);

		if (P == NULL) {
			if (error && *error)
				goto out;
			continue;
		}
		if (!update_superseded_by(&p, P, error))
			goto out;
	}

	for (guint i = 0; i < p.touched->len; i++) {
		Ser *s = p.touched->pdata[i];

		if (s->dirty && !pgate_store_series_put(txn, s->rec, error))
			goto out;
		s->dirty = FALSE;
		/* the indexes change with the next transaction */
		g_clear_pointer(&s->nb, g_ptr_array_unref);
		g_clear_pointer(&s->ncand, g_ptr_array_unref);
	}
	ok = TRUE;
out:
	/* a failed pass leaves what the store will not hold */
	if (!ok || g_hash_table_size(l->cache) > SER_CACHE_MAX)
		g_hash_table_remove_all(l->cache);
	g_hash_table_unref(p.missing);
	g_ptr_array_unref(p.touched);
	return ok;
}
