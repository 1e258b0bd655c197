/* name-keys.c - the name keys of the link pass: the keys under which a
 * series is indexed so that every series similar() to it by name shares
 * one (see "name keys" below), kept hashed in name_keys by owner (an
 * address or a person), date and id; written for the series formed and
 * dropped before each pass, read for a series's name candidates.  The
 * rest of the link pass is in versions.c.
 */
#include "threading/threading-private.h"

#include <string.h>

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
 * on average), and a batch reads each sender's window once
 * (pgate_threading__name_pass()): docs/threading.md, "Cost". */

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
name_hashes(PgateThrSer *s)
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
may_link(const PgateThrSer *S, guint32 version, guint64 norm_h)
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
name_put(PgateStoreTxn *txn, const char *owner, const PgateThrSer *s,
	 GError **error)
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

/* ---- the name keys in a pass ----
 *
 * A series has a name_keys entry under its address and, with a display
 * name, one under its person (person_key()): a v2 sent from another
 * address of the same person is then a name candidate of v3, which the
 * address alone never found (issue #49, E).  Each owner's entries are
 * read and written as one group. */

static const char *
sender_of(const PgateThrSer *s)
{
	const char *e = s->rec->submitter_email;

	return e != NULL ? e : "";
}

typedef struct {
	const char *owner;       /* an address, or a person_key() */
	PgateThrSer *s;
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
owned_add(GArray *to, PgateThrSer *S)
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
kh_shared(const PgateThrSer *a, const PgateThrSer *b)
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
	PgateThrSer *ser;                /* NULL: empty */
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
			PgateThrSer *S = r->slots[x].ser;

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
			PgateThrSer *S = add[i].s;

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
			PgateThrSer *A = add[i].s, *B = add[j].s;

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
gboolean
pgate_threading__name_pass(PgateStoreTxn *txn, GPtrArray *formed,
			   GPtrArray *dropped, GError **error)
{
	g_autoptr(GArray) add = g_array_new(FALSE, FALSE, sizeof(Owned));
	g_autoptr(GArray) drop = g_array_new(FALSE, FALSE, sizeof(Owned));
	const Owned *A, *D;
	guint a = 0, d = 0;

	for (guint i = 0; i < formed->len; i++) {
		PgateThrSer *S = formed->pdata[i];

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
	const PgateThrSer *S;
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

/* The name candidates of S that are stored: the entries of its owners
 * within the window that share a key hash with it (name_scan_entry()). */
gboolean
pgate_threading__name_scan(PgateStoreTxn *txn, PgateThrSer *S, GPtrArray *ids,
			   GError **error)
{
	const char *sender = sender_of(S);
	gint64 d = S->rec->date;
	NameScan sc = { S, ids };

	name_hashes(S);
	if (S->nkh == 0)
		return TRUE;
	for (guint k = 0; k < 2; k++) {
		const char *owner = k == 0 ? sender : S->person;

		if (owner == NULL || owner[0] == '\0')
			continue;
		if (!pgate_store_name_range(txn, owner,
					    d - PGATE_THREADING_LINK_WINDOW,
					    d + PGATE_THREADING_LINK_WINDOW,
					    name_scan_entry, &sc, error))
			return FALSE;
	}
	return TRUE;
}
