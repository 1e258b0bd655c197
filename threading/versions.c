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
	RULE_RESEND,
	RULE_SUBJECT,
	RULE_UNLABELED,
	RULE_NONE,
};

static const char *const rule_names[] = {
	[RULE_CHANGE_ID] = "change-id",
	[RULE_IN_REPLY_TO] = "in-reply-to",
	[RULE_LINK] = "link",
	[RULE_RESEND] = "resend",
	[RULE_SUBJECT] = "subject",
	[RULE_UNLABELED] = "unlabeled",
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
 * trailing punctuation.  Returns the end (not terminated). */
static char *
name_norm_to(char *out, const char *name)
{
	char *start = out;
	gboolean space = FALSE;

	for (const char *p = name ? name : ""; *p; p++) {
		if (g_ascii_isspace(*p)) {
			space = out > start;
			continue;
		}
		if (space)
			*out++ = ' ';
		space = FALSE;
		*out++ = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
	}
	while (out > start && strchr(".,;:!?", out[-1]) != NULL && out[-1])
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

/* s->kh: the hashes of @s's name keys (none without a sender), sorted,
 * distinct.  A key is "SENDER\ntW1 W2" (a pair of name words), "SENDER\ntW"
 * (a one-word name) or "SENDER\npNAME" (a patch name); only its hash is
 * kept. */
static void
name_hashes(Ser *s)
{
	const char *sender = s->rec->submitter_email;
	g_autofree Word *tw = NULL, *pw = NULL;
	guint tn, ta, pn, pa, n = 0, k = 0;
	guint64 h0;

	if (s->kh != NULL)
		return;
	s->norm_h = s->norm[0] != '\0' ? str_hash64(s->norm) : 0;
	if (sender == NULL || sender[0] == '\0') {
		s->kh = g_new(guint64, 1);
		s->nkh = 0;
		return;
	}
	h0 = fnv(G_GUINT64_CONSTANT(0xcbf29ce484222325), sender,
		 strlen(sender));
	h0 = fnv(h0, "\n", 1);
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

static gboolean
name_put(PgateStoreTxn *txn, const Ser *s, GError **error)
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
	return pgate_store_name_put(txn, s->rec->submitter_email, s->rec->date,
				    s->rec->id, val, len, error);
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

	if (s == p || !is_older(p, s))
		return RULE_NONE;
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

/* ---- the name keys in a pass ---- */

static const char *
sender_of(const Ser *s)
{
	const char *e = s->rec->submitter_email;

	return e != NULL ? e : "";
}

/* (sender, date, id) */
static gint
ser_sender_order(gconstpointer pa, gconstpointer pb)
{
	const Ser *a = *(Ser *const *)pa, *b = *(Ser *const *)pb;
	int c = strcmp(sender_of(a), sender_of(b));

	if (c != 0)
		return c;
	if (a->rec->date != b->rec->date)
		return a->rec->date < b->rec->date ? -1 : 1;
	return strcmp(a->rec->id, b->rec->id);
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

/* One sender's series formed (@add[@a0..@a1], by date and id) and
 * dropped (@drop[@d0..@d1]) in this pass: each formed one's name
 * candidates into its ncand (the stored entries but those of the dropped
 * and re-formed series, and each other), then the entries replaced. */
static gboolean
name_sender(PgateStoreTxn *txn, const char *sender, GPtrArray *add,
	    guint a0, guint a1, GPtrArray *drop, guint d0, guint d1,
	    GError **error)
{
	g_autoptr(GHashTable) gone = g_hash_table_new(g_str_hash, g_str_equal);
	g_autofree KSlot *slots = NULL;
	g_autofree guint64 *marks = NULL;
	gsize nslots = 16;
	NameRead r;

	for (guint i = d0; i < d1; i++)
		g_hash_table_add(gone, ((Ser *)drop->pdata[i])->rec->id);
	for (guint i = a0; i < a1; i++) {
		Ser *S = add->pdata[i];

		g_hash_table_add(gone, S->rec->id);
		name_hashes(S);
		S->ncand = g_ptr_array_new_with_free_func(g_free);
		nslots += 2 * (gsize)S->nkh;
	}
	if (a1 > a0) {
		/* the formed series by key hash: open addressing, a power
		 * of two at least twice the keys */
		while (nslots & (nslots - 1))
			nslots &= nslots - 1;
		nslots <<= 1;
		slots = g_new0(KSlot, nslots);
		marks = g_new0(guint64, a1 - a0);
		for (guint i = a0; i < a1; i++) {
			Ser *S = add->pdata[i];

			for (guint j = 0; j < S->nkh; j++) {
				gsize x = S->kh[j] & (nslots - 1);

				while (slots[x].ser != NULL)
					x = (x + 1) & (nslots - 1);
				slots[x] = (KSlot){ S->kh[j], S, i - a0 };
			}
		}
		r = (NameRead){ gone, slots, nslots - 1, marks, 0 };
		/* the group is by date: one read covers every window */
		if (!pgate_store_name_range(
			    txn, sender,
			    ((Ser *)add->pdata[a0])->rec->date -
				    PGATE_THREADING_LINK_WINDOW,
			    ((Ser *)add->pdata[a1 - 1])->rec->date +
				    PGATE_THREADING_LINK_WINDOW,
			    name_read_entry, &r, error))
			return FALSE;
	}
	/* each other (by date: the window ends the inner loop) */
	for (guint i = a0; i < a1; i++)
		for (guint j = i + 1; j < a1; j++) {
			Ser *A = add->pdata[i], *B = add->pdata[j];

			if (!in_window(A->rec->date, B->rec->date))
				break;
			if (kh_shared(A, B) &&
			    may_link(A, B->rec->version, B->norm_h)) {
				g_ptr_array_add(A->ncand, g_strdup(B->rec->id));
				g_ptr_array_add(B->ncand, g_strdup(A->rec->id));
			}
		}

	for (guint i = d0; i < d1; i++) {
		Ser *X = drop->pdata[i];

		if (!pgate_store_name_delete(txn, sender, X->rec->date,
					     X->rec->id, error))
			return FALSE;
	}
	for (guint i = a0; i < a1; i++)
		if (!name_put(txn, add->pdata[i], error))
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
	g_autoptr(GPtrArray) add = g_ptr_array_new();
	g_autoptr(GPtrArray) drop = g_ptr_array_new();
	guint a = 0, d = 0;

	for (guint i = 0; i < formed->len; i++)
		if (sender_of(formed->pdata[i])[0] != '\0')
			g_ptr_array_add(add, formed->pdata[i]);
	for (guint i = 0; i < dropped->len; i++)
		if (sender_of(dropped->pdata[i])[0] != '\0')
			g_ptr_array_add(drop, dropped->pdata[i]);
	g_ptr_array_sort(add, ser_sender_order);
	g_ptr_array_sort(drop, ser_sender_order);
	/* merge by sender */
	while (a < add->len || d < drop->len) {
		const char *sender;
		guint a1 = a, d1 = d;

		if (d == drop->len ||
		    (a < add->len && strcmp(sender_of(add->pdata[a]),
					    sender_of(drop->pdata[d])) <= 0))
			sender = sender_of(add->pdata[a]);
		else
			sender = sender_of(drop->pdata[d]);
		while (a1 < add->len &&
		       strcmp(sender_of(add->pdata[a1]), sender) == 0)
			a1++;
		while (d1 < drop->len &&
		       strcmp(sender_of(drop->pdata[d1]), sender) == 0)
			d1++;
		if (!name_sender(txn, sender, add, a, a1, drop, d, d1, error))
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
 * this pass, else the entries of its sender within the window that share
 * a key hash with it. */
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
	if (sender[0] == '\0')
		return TRUE;
	name_hashes(S);
	if (S->nkh == 0)
		return TRUE;
	ids = g_ptr_array_new_with_free_func(g_free);
	sc = (NameScan){ S, ids };
	/* (collected first: nb_add() reads the store) */
	if (!pgate_store_name_range(f->p->txn, sender,
				    d - PGATE_THREADING_LINK_WINDOW,
				    d + PGATE_THREADING_LINK_WINDOW,
				    name_scan_entry, &sc, error))
		return FALSE;
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
		    (r == best_rule &&
		     (S->rec->version - P->rec->version <
		      S->rec->version - best->rec->version ||
		      (P->rec->version == best->rec->version &&
		       (P->rec->date > best->rec->date ||
			(P->rec->date == best->rec->date &&
			 strcmp(P->rec->id, best->rec->id) > 0)))))) {
			best = P;
			best_rule = r;
		}
	}
	/* a chain is a line: S supersedes the latest earlier version in
	 * best's chain, a Q that S may supersede and that is itself a
	 * version of best (v3 replying to v1 when v2 exists supersedes v2);
	 * the highest version below S's, then the latest date (is_older());
	 * the same version only when S resends it */
	if (best != NULL) {
		Ser *last = best;

		for (guint i = 0; i < nb->len; i++) {
			Ser *Q2 = nb->pdata[i];
			int r;

			if (Q2 == best || !is_older(last->rec, Q2->rec) ||
			    rule(Q2, best) == RULE_NONE)
				continue;
			r = rule(S, Q2);
			if (r == RULE_NONE ||
			    (Q2->rec->version == S->rec->version &&
			     r != RULE_RESEND))
				continue;
			last = Q2;
		}
		if (last != best) {
			best = last;
			best_rule = rule(S, last);
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
 * a candidate of.  Both are among X's neighbours. */
static gboolean
affected(Pass *p, Ser *X, gboolean old, GHashTable *L, GError **error)
{
	GPtrArray *nb = neighbours(p, X, error);

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
