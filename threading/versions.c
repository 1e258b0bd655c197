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
 * in name-keys.c for why a shared key is necessary).  Every one of these relations
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

static void
ser_free(PgateThrSer *s)
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
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateThrSer, ser_free)

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
static PgateThrSer *
ser_new(PgateSeriesRec *rec, gboolean own)
{
	PgateThrSer *s = g_new0(PgateThrSer, 1);
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
similar(const PgateThrSer *a, const PgateThrSer *b)
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
overlaps(const PgateThrSer *a, const PgateThrSer *b)
{
	guint np = MIN(a->pnames->len, b->pnames->len);
	guint nt = MIN(a->tokens->len, b->tokens->len);

	if (common(a->pidset, b->pidset) > 0)
		return TRUE;
	if (np > 0 && 2 * common(a->pnames, b->pnames) >= np)
		return TRUE;
	return nt >= 3 && 5 * common(a->tokens, b->tokens) >= 4 * nt;
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
	GPtrArray *dropped;   /* PgateThrSer* as they were stored (owned) */
	GHashTable *formed;   /* id -> PgateThrSer* as written and still
			       * there */
	GHashTable *cache;    /* id -> PgateThrSer* (owned), as stored */
	guint64 cache_txn;    /* the transaction the cache is as of, or 0 */
	guint pass;           /* counts the link passes: PgateThrSer.pass */
	guint64 nb_mark;      /* counts neighbours() calls:
			       * PgateThrSer.nb_mark */
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
	PgateThrSer *s = ser_new(rec, TRUE);

	/* not in the store yet: the link pass puts it, and its name keys
	 * (pgate_threading__name_pass()) */
	s->dirty = TRUE;
	g_hash_table_replace(l->formed, g_strdup(rec->id), s);
	return TRUE;
}

PgateSeriesRec *
pgate_threading__links_take_formed(PgateThrLinks *l, const char *id)
{
	PgateThrSer *s = g_hash_table_lookup(l->formed, id);
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
	/* its name_keys entry goes with the next pass
	 * (pgate_threading__name_pass()) */
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
	GPtrArray *touched;      /* PgateThrSer*: those this pass used */
} Pass;

static void
touch(Pass *p, PgateThrSer *s)
{
	if (s->pass != p->l->pass) {
		s->pass = p->l->pass;
		g_ptr_array_add(p->touched, s);
	}
}

/* (transfer none) (nullable): series @id; NULL with *error unset when
 * there is no such series. */
static PgateThrSer *
get_ser(Pass *p, const char *id, GError **error)
{
	g_autoptr(GError) local = NULL;
	PgateSeriesRec *rec;
	PgateThrSer *s = g_hash_table_lookup(p->l->cache, id);

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
links_into(const PgateThrSer *S, const PgateThrSer *P)
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
may_precede(const PgateThrSer *S, const PgateThrSer *P)
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
same_again(const PgateThrSer *S, const PgateThrSer *P)
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
late_send(const PgateThrSer *S, const PgateThrSer *P)
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
rule(const PgateThrSer *S, const PgateThrSer *P)
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
	PgateThrSer *S;
	guint64 mark;
} NbFind;


static gboolean nb_add(NbFind *f, const char *id, GError **error);

/* The name candidates of S: found by pgate_threading__name_pass() when S
 * was formed in this pass, else the entries of its owners (its address,
 * its person) within the window that share a key hash with it. */
static gboolean
name_neighbours(NbFind *f, GError **error)
{
	PgateThrSer *S = f->S;
	g_autoptr(GPtrArray) ids = NULL;

	if (S->ncand != NULL) {
		for (guint i = 0; i < S->ncand->len; i++)
			if (!nb_add(f, S->ncand->pdata[i], error))
				return FALSE;
		return TRUE;
	}
	ids = g_ptr_array_new_with_free_func(g_free);
	/* (collected first: nb_add() reads the store; a series found under
	 * both owners is added once) */
	if (!pgate_threading__name_scan(f->p->txn, S, ids, error))
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
	PgateThrSer *n;

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
neighbours(Pass *p, PgateThrSer *S, GError **error)
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
follows(const PgateThrSer *X, const PgateThrSer *N)
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
	const PgateThrSer *a = *(PgateThrSer *const *)pa;
	const PgateThrSer *b = *(PgateThrSer *const *)pb;

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
walk(Pass *p, PgateThrSer *from, gboolean forward, const PgateThrSer *before,
     guint max, GPtrArray *out, GError **error)
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
			PgateThrSer *N = level->pdata[i];
			GPtrArray *nb = neighbours(p, N, error);

			if (nb == NULL)
				return FALSE;
			for (guint j = 0; j < nb->len; j++) {
				PgateThrSer *X = nb->pdata[j];

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
version_fits(const PgateThrSer *S, const PgateThrSer *X, gboolean late)
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
chain_pick(Pass *p, PgateThrSer *S, PgateThrSer *best, int best_rule,
	   PgateThrSer **out, GError **error)
{
	g_autoptr(GPtrArray) line = g_ptr_array_new();
	PgateThrSer *last = best, *tip = NULL;
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
			PgateThrSer *X = nb->pdata[i];

			if (X->rec->version > best->rec->version &&
			    earlier(last->rec, X->rec) &&
			    version_fits(S, X, FALSE) &&
			    same_person(S->rec, X->rec) &&
			    rule(S, X) != RULE_NONE)
				last = X;
		}
	}
	for (guint i = 0; i < line->len; i++) {
		PgateThrSer *X = line->pdata[i];

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
		PgateThrSer *X = line->pdata[i];

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
closer(const PgateThrSer *S, const PgateThrSer *P, const PgateThrSer *Q, int r)
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
update_supersedes(Pass *p, PgateThrSer *S, GHashTable *Q, GError **error)
{
	GPtrArray *nb = neighbours(p, S, error);
	PgateThrSer *best = NULL;
	int best_rule = RULE_NONE;
	const char *resend = NULL;

	if (nb == NULL)
		return FALSE;
	/* the best is a maximum under a total order: any order of visit */
	for (guint i = 0; i < nb->len; i++) {
		PgateThrSer *P = nb->pdata[i];
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
		PgateThrSer *last;

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
update_superseded_by(Pass *p, PgateThrSer *P, GError **error)
{
	GPtrArray *nb = neighbours(p, P, error);
	PgateThrSer *best = NULL;
	int best_rule = RULE_NONE;

	if (nb == NULL)
		return FALSE;
	for (guint i = 0; i < nb->len; i++) {
		PgateThrSer *S = nb->pdata[i];
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
affected(Pass *p, PgateThrSer *X, gboolean old, GHashTable *L, GError **error)
{
	GPtrArray *nb = neighbours(p, X, error);
	g_autoptr(GPtrArray) anc = g_ptr_array_new();

	if (nb == NULL)
		return FALSE;
	for (guint i = 0; i < nb->len; i++) {
		PgateThrSer *S = nb->pdata[i];

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
		PgateThrSer *A = anc->pdata[i];

		if ((nb = neighbours(p, A, error)) == NULL)
			return FALSE;
		for (guint j = 0; j < nb->len; j++) {
			PgateThrSer *S = nb->pdata[j];

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

	if (!pgate_threading__name_pass(txn, formed, l->dropped, error))
		goto out;

	/* L: the series whose supersedes may change */
	for (guint i = 0; i < l->dropped->len; i++) {
		PgateThrSer *X = l->dropped->pdata[i];

		if (X->rec->supersedes)
			g_hash_table_add(Q, g_strdup(X->rec->supersedes));
		if (!affected(&p, X, TRUE, L, error))
			goto out;
	}
	for (guint i = 0; i < formed->len; i++) {
		PgateThrSer *X = formed->pdata[i];

		g_hash_table_add(L, g_strdup(X->rec->id));
		if (!affected(&p, X, FALSE, L, error))
			goto out;
	}

	/* (any order gives the same result: a series's supersedes depends on
	 * its candidates' contents, not on their links) */
	lids = sorted_keys(L);
	for (guint i = 0; i < lids->len; i++) {
		PgateThrSer *S = get_ser(&p, lids->pdata[i], error);

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
		PgateThrSer *P = get_ser(&p, qids->pdata[i], error);

		if (P == NULL) {
			if (error && *error)
				goto out;
			continue;
		}
		if (!update_superseded_by(&p, P, error))
			goto out;
	}

	for (guint i = 0; i < p.touched->len; i++) {
		PgateThrSer *s = p.touched->pdata[i];

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
