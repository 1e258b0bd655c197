/* versions.c - version links: which series supersedes which.
 *
 * supersedes(S) is the best of S's candidates, a pure function of the
 * series that exist.  Each candidate P must be older than S in the order
 * (version, date, id), which makes cycles impossible, and is scored by
 * (rule, version distance, later date, id).  superseded_by(P) is the best
 * of the series whose supersedes is P.
 *
 * Candidates come from indexes, never from scanning a sender's series:
 * a rule can only hold between S and P when they share a change-id
 * (change_index), a reply edge (replies_into/replied_by), S's smallest
 * patch-id (patchid_index: "resend"), or, for the same-sender rules, a
 * name key within PGATE_THREADING_LINK_WINDOW (name_index, see
 * name_keys() for why a shared key is necessary).  Every one of these
 * relations is symmetric, so the same lookups also find the series for
 * which a changed series is (or was) a candidate: after a unit changes,
 * only those, and the changed series, are recomputed, and the result is
 * what a rethread gives.  The cost is proportional to the series near the
 * changed ones in name, thread and patch content, not to the sender's
 * archive.
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
	GPtrArray *keys;         /* (nullable): name_keys(), when asked
				  * (pointers into keybuf) */
	char *keybuf;
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
	if (s->keys != NULL)
		g_ptr_array_unref(s->keys);
	g_free(s->keybuf);
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
 * verbs) go last, then longer words first.  The key holds the sender, and
 * the value the date, so that the window is a range lookup. */

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

/* Appends a key "SENDER\n<kind><w1>[ <w2>]" at *@at (or only counts its
 * size when *@at is NULL). */
static void
key_put(Ser *s, char **at, gsize *size, const char *sender, gsize slen,
	char kind, const Word *w1, const Word *w2)
{
	gsize len = slen + 2 + w1->len + (w2 ? 1 + w2->len : 0) + 1;
	char *p = *at;

	*size += len;
	if (p == NULL)
		return;
	g_ptr_array_add(s->keys, p);
	memcpy(p, sender, slen);
	p += slen;
	*p++ = '\n';
	*p++ = kind;
	memcpy(p, w1->w, w1->len);
	p += w1->len;
	if (w2 != NULL) {
		*p++ = ' ';
		memcpy(p, w2->w, w2->len);
		p += w2->len;
	}
	*p++ = '\0';
	*at = p;
}

/* The name_index keys of @s (none without a sender): "SENDER\ntW1 W2",
 * "SENDER\ntW" (one-word names), "SENDER\npNAME"; into s->keys, pointers
 * into s->keybuf.  Two rounds: the size, then the keys. */
static void
name_keys(Ser *s)
{
	const char *sender = s->rec->submitter_email;
	g_autofree Word *tw = NULL, *pw = NULL;
	guint tn, ta, pn, pa;
	gsize slen, size = 0;

	s->keys = g_ptr_array_new();
	if (sender == NULL || sender[0] == '\0')
		return;
	slen = strlen(sender);
	/* TOKEN_JACCARD = 4/5, PNAME_JACCARD = 3/5 */
	tn = s->tokens->len;
	tw = g_new(Word, tn + 1);
	ta = ordered_words(s->tokens, 4, 5, tw);
	pn = s->pnames->len;
	pw = g_new(Word, pn + 1);
	pa = pn > 1 ? ordered_words(s->pnames, 3, 5, pw) : 0;
	for (int round = 0; round < 2; round++) {
		char *at = round == 0 ? NULL : (s->keybuf = g_malloc(size));

		if (tn == 1)
			key_put(s, &at, &size, sender, slen, 't', &tw[0], NULL);
		for (guint i = 0; tn > 1 && i < tn - ta + 2; i++)
			for (guint j = i + 1; j < tn - ta + 2; j++)
				key_put(s, &at, &size, sender, slen, 't', &tw[i],
					&tw[j]);
		for (guint i = 0; pn > 1 && i < pn - pa + 1; i++)
			key_put(s, &at, &size, sender, slen, 'p', &pw[i], NULL);
	}
}

static gboolean
name_index(PgateStoreTxn *txn, Ser *s, gboolean add, GError **error)
{
	if (s->keys == NULL)
		name_keys(s);
	for (guint i = 0; i < s->keys->len; i++) {
		const char *k = s->keys->pdata[i];
		gboolean ok = add
			? pgate_store_name_add(txn, k, s->rec->date, s->rec->id,
					       error)
			: pgate_store_name_remove(txn, k, s->rec->date,
						  s->rec->id, error);
		if (!ok)
			return FALSE;
	}
	return TRUE;
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

	/* not in the store yet: the link pass puts it */
	s->dirty = TRUE;
	g_hash_table_replace(l->formed, g_strdup(rec->id), s);
	return name_index(txn, s, TRUE, error);
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
	Ser *s = ser_new(rec, TRUE);

	g_hash_table_remove(l->formed, rec->id);
	g_hash_table_remove(l->cache, rec->id);
	g_ptr_array_add(l->dropped, s);
	return name_index(txn, s, FALSE, error);
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

static int
rule(const Ser *S, const Ser *P)
{
	const PgateSeriesRec *s = S->rec, *p = P->rec;
	gboolean same = strcmp(s->submitter_email, p->submitter_email) == 0 &&
			s->submitter_email[0] != '\0';

	if (s == p || !is_older(p, s))
		return RULE_NONE;
	if (s->change_id && p->change_id && strcmp(s->change_id, p->change_id) == 0)
		return RULE_CHANGE_ID;
	/* replying into an older series: a new version when the version is
	 * higher, or (same sender) when it is the same work again */
	if (contains(s->replies_into, p->id) &&
	    (p->version < s->version ||
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
	if (S->keys == NULL)
		name_keys(S);
	for (guint i = 0; ok && i < S->keys->len; i++)
		ok = pgate_store_name_foreach(
			p->txn, S->keys->pdata[i],
			s->date - PGATE_THREADING_LINK_WINDOW,
			s->date + PGATE_THREADING_LINK_WINDOW, nb_add_val, &f,
			error);
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

		if (old ? g_strcmp0(S->rec->supersedes, X->rec->id) == 0
			: rule(S, X) != RULE_NONE)
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
