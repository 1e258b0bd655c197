/* match.c - which stored patch a commit is (upstream.h, docs/pipeline.md
 * "Merged upstream").
 *
 * The candidates come from the store's indexes: the patches the
 * commit's trailers name (msgid_index), those with its patch-id
 * (patchid_index), and its author's patches of the last possible_days
 * with its subject or the same subject but for a prefix (author_index;
 * their subjects read once a transaction).  Each is rated (rate()) and
 * placed in its chain of versions (the series' supersedes links, to the
 * first version).  Then, per project:
 *
 *   1. a patch the commit's Link:/Message-Id: names wins outright;
 *   2. else each chain offers one patch: the newest version not newer
 *      than the commit's author date (ties: the identical one, then the
 *      latest sent); with none as old, the latest identical one, else
 *      the earliest;
 *   3. and the strongest of the chains' offers wins (rank, then the
 *      commit's author, then not newer than it, then the latest sent,
 *      then the Message-ID), unless its rank is "possibly merged".
 *
 * Every other candidate is told why it lost: the winner's chain's other
 * versions (FATE_CHAIN) are named with the match; the other chains'
 * offers become "possibly merged" hints (FATE_HINT).  The decision reads
 * only the store, never the order things came in.
 */
#include "upstream/upstream-private.h"

#include <string.h>

enum {
	EV_LINK = 1 << 0,        /* a trailer names it */
	EV_EXACT = 1 << 1,       /* the same patch-id */
	EV_SUBJECT = 1 << 2,     /* the same normalised subject */
	EV_CORE = 1 << 3,        /* the same but for prefix, case, punctuation */
	EV_AUTHOR = 1 << 4,      /* the commit's author sent it */
	EV_WINDOW = 1 << 5,      /* dated within subject_days of the commit */
	EV_OTHER_LINK = 1 << 6,  /* the commit's trailers name other mail */
	EV_SKETCH = 1 << 7,      /* both diffs' sketches are known */
	EV_SIMILAR = 1 << 8,     /* most changed lines the same */
	EV_NOT_NEWER = 1 << 9,   /* dated no later than the commit */
};

#define SIMILAR_MIN 0.5

/* A message's subject as matching compares it, read once a transaction */
typedef struct {
	PgateMsgKind kind;
	char *norm, *core;
} Name;

static void
name_free(Name *n)
{
	g_free(n->norm);
	g_free(n->core);
	g_free(n);
}

/* An author's patches of a transaction's window, by core subject. */
typedef struct {
	gint64 from, to;
	GHashTable *by_core;   /* core subject -> GArray of u64 numbers */
} Author;

static void
author_free(Author *a)
{
	g_hash_table_unref(a->by_core);
	g_free(a);
}

/* Where a series is in its chain of versions. */
typedef struct {
	char *first;   /* the first version's id */
	guint pos;     /* versions before it */
} Chain;

static void
chain_free(Chain *c)
{
	g_free(c->first);
	g_free(c);
}

static void
cand_free(UCand *k)
{
	pgate_message_rec_free(k->msg);
	g_free(k->evidence);
	g_free(k->weak);
	g_free(k->why);
	g_free(k);
}

static const Name *
name_of(UCtx *x, guint64 num, GError **error)
{
	Name *n;
	g_autofree char *msgid = NULL, *name = NULL;

	if (x->names == NULL)
		x->names = g_hash_table_new_full(g_int64_hash, g_int64_equal,
						 g_free, (GDestroyNotify)name_free);
	n = g_hash_table_lookup(x->names, &num);
	if (n != NULL)
		return n;
	n = g_new0(Name, 1);
	if (!pgate_store_message_peek_name(x->txn, num, &n->kind, &msgid,
					   &name, error)) {
		g_free(n);
		return NULL;
	}
	n->norm = pgate_upstream_subject_normalize(name);
	n->core = pgate_upstream_subject_core(name);
	g_hash_table_insert(x->names, g_memdup2(&num, sizeof num), n);
	return n;
}

void
pgate_upstream__ctx_span(UCtx *x, const char *email, gint64 when)
{
	gint64 *span;

	if (x->spans == NULL)
		x->spans = g_hash_table_new_full(g_str_hash, g_str_equal,
						 g_free, g_free);
	span = g_hash_table_lookup(x->spans, email);
	if (span == NULL) {
		span = g_new(gint64, 2);
		span[0] = span[1] = when;
		g_hash_table_insert(x->spans, g_strdup(email), span);
	}
	span[0] = MIN(span[0], when);
	span[1] = MAX(span[1], when);
}

/* @c's author's patches of the transaction's window (the window of every
 * commit of theirs it decides), read once: the window of one commit is
 * the same patches, read again for each. */
static const Author *
author_of(UCtx *x, const UCommit *c, GError **error)
{
	gint64 w = x->cfg->possible_days * DAY;
	const gint64 *span = x->spans ? g_hash_table_lookup(x->spans, c->email)
				      : NULL;
	Author *a = x->authors ? g_hash_table_lookup(x->authors, c->email)
			       : NULL;
	g_autoptr(GArray) nums = NULL;

	if (a != NULL && a->from <= c->when - w && a->to >= c->when + DAY)
		return a;
	if (x->authors == NULL)
		x->authors = g_hash_table_new_full(g_str_hash, g_str_equal,
						   g_free,
						   (GDestroyNotify)author_free);
	a = g_new0(Author, 1);
	a->from = MIN(span ? span[0] : c->when, c->when) - w;
	a->to = MAX(span ? span[1] : c->when, c->when) + DAY;
	a->by_core = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					   (GDestroyNotify)g_array_unref);
	g_hash_table_insert(x->authors, g_strdup(c->email), a);
	nums = pgate_store_author_range(x->txn, c->email, a->from, a->to,
					error);
	if (nums == NULL)
		return NULL;
	for (guint i = 0; i < nums->len; i++) {
		guint64 num = g_array_index(nums, guint64, i);
		g_autofree char *msgid = NULL, *name = NULL, *core = NULL;
		PgateMsgKind kind;
		GArray *v;

		if (!pgate_store_message_peek_name(x->txn, num, &kind, &msgid,
						   &name, error))
			return NULL;
		if (kind != PGATE_MSG_KIND_PATCH)
			continue;
		core = pgate_upstream_subject_core(name);
		v = g_hash_table_lookup(a->by_core, core);
		if (v == NULL) {
			v = g_array_new(FALSE, FALSE, sizeof(guint64));
			g_hash_table_insert(a->by_core, g_steal_pointer(&core), v);
		}
		g_array_append_val(v, num);
	}
	return a;
}

/* @s's chain: its supersedes links followed to the first version. */
static const Chain *
chain_of(UCtx *x, const PgateSeriesRec *s)
{
	Chain *c;
	g_autofree char *at = NULL;

	if (x->chains == NULL)
		x->chains = g_hash_table_new_full(g_str_hash, g_str_equal,
						  g_free,
						  (GDestroyNotify)chain_free);
	c = g_hash_table_lookup(x->chains, s->id);
	if (c != NULL)
		return c;
	c = g_new0(Chain, 1);
	at = g_strdup(s->id);
	for (const PgateSeriesRec *r = s; r != NULL && r->supersedes != NULL &&
	     c->pos < CHAIN_MAX; c->pos++) {
		const Chain *known = g_hash_table_lookup(x->chains,
							 r->supersedes);

		g_free(at);
		at = g_strdup(r->supersedes);
		if (known != NULL) {
			/* the rest of the way is known */
			c->pos += known->pos + 1;
			g_free(at);
			at = g_strdup(known->first);
			break;
		}
		r = pgate_upstream__series(x, r->supersedes, NULL);
	}
	c->first = g_steal_pointer(&at);
	g_hash_table_insert(x->chains, g_strdup(s->id), c);
	return c;
}

static gboolean
has_str(GPtrArray *a, const char *s)
{
	for (guint i = 0; s != NULL && i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return TRUE;
	return FALSE;
}

/* "3 days before the commit", "the commit's day", "2 days after it" */
static char *
when_text(gint64 date, gint64 when)
{
	gint64 d = (when - date) / DAY;

	if (d == 0)
		return g_strdup("within a day of the commit");
	if (d > 0)
		return g_strdup_printf("%" G_GINT64_FORMAT " day%s before the "
				       "commit", d, d == 1 ? "" : "s");
	return g_strdup_printf("%" G_GINT64_FORMAT " day%s after the commit",
			       -d, d == -1 ? "" : "s");
}

/* The evidence bits of @k for @c. */
static void
evaluate(UCtx *x, const UCommit *c, UCand *k, const Name *n)
{
	const PgateMessageRec *m = k->msg;
	g_autofree char *email = g_ascii_strdown(m->from_email, -1);
	gint64 sd = x->cfg->subject_days * DAY;

	k->ev = 0;
	k->similar = -1;
	if (has_str(c->links, m->msgid))
		k->ev |= EV_LINK;
	else if (c->links->len > 0 && !has_str(c->links, k->series->cover))
		k->ev |= EV_OTHER_LINK;
	if (c->patch_id != NULL && g_strcmp0(m->patch_id, c->patch_id) == 0)
		k->ev |= EV_EXACT;
	if (*c->subject != '\0' && strcmp(n->norm, c->subject) == 0)
		k->ev |= EV_SUBJECT;
	else if (*c->core != '\0' && strcmp(n->core, c->core) == 0)
		k->ev |= EV_CORE;
	if (*c->email != '\0' && strcmp(email, c->email) == 0)
		k->ev |= EV_AUTHOR;
	if (m->date >= c->when - sd && m->date <= c->when + DAY)
		k->ev |= EV_WINDOW;
	if (m->date <= c->when)
		k->ev |= EV_NOT_NEWER;
	if (m->diff_sketch_len > 0 && c->sketch_len > 0) {
		k->ev |= EV_SKETCH;
		k->similar = pgate_diff_sketch_similarity(
			m->diff_sketch, m->diff_sketch_len, c->sketch,
			c->sketch_len);
		if (k->similar >= SIMILAR_MIN)
			k->ev |= EV_SIMILAR;
	}
}

/* Why a subject candidate is no more than "possibly merged", or %NULL
 * when it is applied with changes. */
static char *
weakness(UCtx *x, const UCommit *c, const UCand *k)
{
	if (!(k->ev & EV_AUTHOR))
		return g_strdup("another author than the commit's");
	if (!(k->ev & EV_WINDOW)) {
		g_autofree char *w = when_text(k->msg->date, c->when);

		return g_strdup_printf("dated %s: outside subject_days (%"
				       G_GINT64_FORMAT ")", w,
				       x->cfg->subject_days);
	}
	if (k->ev & EV_OTHER_LINK)
		return g_strdup_printf("the commit's trailer names another "
				       "message, <%s>",
				       (char *)c->links->pdata[0]);
	if ((k->ev & EV_CORE) && !(k->ev & EV_SKETCH))
		return g_strdup("the subject was edited and its diff cannot be "
				"compared (mail stored before sketches)");
	if ((k->ev & EV_CORE) && !(k->ev & EV_SIMILAR))
		return g_strdup_printf("the subject was edited and only %.0f%% "
				       "of the changed lines are alike",
				       100 * k->similar);
	return NULL;
}

/* Rule, rank, evidence and weakness of @k. */
static void
rate(UCtx *x, const UCommit *c, UCand *k)
{
	g_autofree char *w = when_text(k->msg->date, c->when);
	g_autofree char *alike = k->similar >= 0 ? g_strdup_printf(
		", changed lines %.0f%% alike", 100 * k->similar) : NULL;

	if (k->ev & EV_LINK) {
		k->rule = PGATE_UPSTREAM_RULE_LINK;
		k->rank = PGATE_UPSTREAM_RANK_MERGED;
		k->evidence = g_strdup_printf(
			"the commit's Link:/Message-Id: names it%s",
			(k->ev & EV_EXACT) ? ", the same patch-id" :
			c->patch_id && k->msg->patch_id ?
			" (edited: another patch-id)" : "");
		return;
	}
	if (k->ev & EV_EXACT) {
		k->rule = PGATE_UPSTREAM_RULE_PATCH_ID;
		k->rank = PGATE_UPSTREAM_RANK_MERGED;
		k->evidence = g_strdup_printf(
			"the same patch-id %.12s (git patch-id --stable), %s%s",
			c->patch_id, (k->ev & EV_AUTHOR) ? "the commit's author, "
			: "another author, ", w);
		return;
	}
	k->rule = (k->ev & EV_SUBJECT) ? PGATE_UPSTREAM_RULE_SUBJECT
				       : PGATE_UPSTREAM_RULE_EDITED_SUBJECT;
	k->evidence = g_strdup_printf(
		"the same author and %s, dated %s%s",
		(k->ev & EV_SUBJECT) ? "subject"
		: "subject but for prefix, case or punctuation",
		w, alike ? alike : "");
	k->weak = weakness(x, c, k);
	k->rank = k->weak != NULL ? PGATE_UPSTREAM_RANK_POSSIBLE
				  : PGATE_UPSTREAM_RANK_APPLIED;
}

/* Adds message @num as a candidate of @c (once; a patch of a series;
 * with @window, only when dated in @c's author window). */
static gboolean
add_cand(UCtx *x, const UCommit *c, GPtrArray *cands, guint64 num,
	 gboolean window, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(PgateMessageRec) m = NULL;
	g_autofree char *sid = NULL;
	const PgateSeriesRec *s;
	const Name *n;
	UCand *k;

	for (guint i = 0; i < cands->len; i++)
		if (((UCand *)cands->pdata[i])->msg->num == num)
			return TRUE;
	if (cands->len >= CANDS_MAX)
		return TRUE;
	if ((n = name_of(x, num, error)) == NULL)
		return FALSE;
	if (n->kind != PGATE_MSG_KIND_PATCH)
		return TRUE;
	if (!pgate_store_msg_series_get(x->txn, num, &sid, error))
		return FALSE;
	if (sid == NULL)
		return TRUE;
	if ((s = pgate_upstream__series(x, sid, &local)) == NULL ||
	    (m = pgate_store_message_get(x->txn, num, &local)) == NULL) {
		if (local == NULL || g_error_matches(local, PGATE_STORE_ERROR,
						     PGATE_ERROR_NOT_FOUND))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (window && (m->date < c->when - x->cfg->possible_days * DAY ||
		       m->date > c->when + DAY))
		return TRUE;
	k = g_new0(UCand, 1);
	k->msg = g_steal_pointer(&m);
	k->series = s;
	k->chain = chain_of(x, s)->first;
	k->pos = chain_of(x, s)->pos;
	for (guint i = 0; i < s->patches->len; i++) {
		const PgateSeriesPatch *p = s->patches->pdata[i];

		if (p->num == num)
			k->number = p->number;
	}
	evaluate(x, c, k, n);
	/* another prefix and other lines: another patch, not even a
	 * look-alike ("net: add part 1" and "usb: add part 1"); kept, so
	 * that the commit's record says it was looked at */
	k->ignored = (k->ev & (EV_LINK | EV_EXACT | EV_SUBJECT)) == 0 &&
		     (k->ev & EV_SKETCH) && !(k->ev & EV_SIMILAR);
	rate(x, c, k);
	g_ptr_array_add(cands, k);
	return TRUE;
}

/* The stored patches the commit's trailers name, those with its
 * patch-id, and its author's with its subject. */
static gboolean
collect(UCtx *x, const UCommit *c, GPtrArray *cands, GError **error)
{
	const Author *a;
	GArray *nums;

	for (guint i = 0; i < c->links->len; i++) {
		g_autoptr(GArray) ln = pgate_store_message_lookup(
			x->txn, c->links->pdata[i], error);

		if (ln == NULL)
			return FALSE;
		for (guint j = 0; j < ln->len; j++)
			if (!add_cand(x, c, cands, g_array_index(ln, guint64, j),
				      FALSE, error))
				return FALSE;
	}
	if (c->patch_id != NULL) {
		g_autoptr(GPtrArray) sids = pgate_store_index_lookup(
			x->txn, PGATE_STORE_INDEX_PATCHID, c->patch_id, error);

		if (sids == NULL)
			return FALSE;
		for (guint i = 0; i < sids->len && i < CANDS_MAX; i++) {
			gsize len;
			const char *d = g_bytes_get_data(sids->pdata[i], &len);
			g_autofree char *sid = g_strndup(d, len);
			const PgateSeriesRec *s = pgate_upstream__series(
				x, sid, NULL);

			for (guint j = 0; s != NULL && j < s->patches->len; j++) {
				const PgateSeriesPatch *p = s->patches->pdata[j];

				if (g_strcmp0(p->patch_id, c->patch_id) == 0 &&
				    !add_cand(x, c, cands, p->num, FALSE,
					      error))
					return FALSE;
			}
		}
	}
	if (*c->email == '\0' || *c->core == '\0')
		return TRUE;
	if ((a = author_of(x, c, error)) == NULL)
		return FALSE;
	nums = g_hash_table_lookup(a->by_core, c->core);
	for (guint i = 0; nums != NULL && i < nums->len; i++)
		if (!add_cand(x, c, cands, g_array_index(nums, guint64, i),
			      TRUE, error))
			return FALSE;
	return TRUE;
}

/* <0 when @a is the better choice of a chain (see the top). */
static int
chain_cmp(const UCand *a, const UCand *b, gboolean eligible)
{
	gboolean ea = (a->ev & EV_EXACT) != 0, eb = (b->ev & EV_EXACT) != 0;

	if (eligible && a->pos != b->pos)
		return a->pos > b->pos ? -1 : 1;
	if (ea != eb)
		return ea ? -1 : 1;
	if (a->msg->date != b->msg->date) {
		/* with none as old as the commit: the earliest, unless
		 * identical (then the latest sent) */
		gboolean latest = eligible || ea;

		return (a->msg->date > b->msg->date) == latest ? -1 : 1;
	}
	return strcmp(a->msg->msgid, b->msg->msgid);
}

/* <0 when @a is the better offer across chains. */
static int
cross_cmp(const UCand *a, const UCand *b)
{
	guint fa = a->ev & (EV_AUTHOR | EV_NOT_NEWER);
	guint fb = b->ev & (EV_AUTHOR | EV_NOT_NEWER);

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if ((fa & EV_AUTHOR) != (fb & EV_AUTHOR))
		return (fa & EV_AUTHOR) ? -1 : 1;
	if ((fa & EV_NOT_NEWER) != (fb & EV_NOT_NEWER))
		return (fa & EV_NOT_NEWER) ? -1 : 1;
	if (a->msg->date != b->msg->date)
		return a->msg->date > b->msg->date ? -1 : 1;
	return strcmp(a->msg->msgid, b->msg->msgid);
}

/* <0 when @a is the better of two patches the trailers name. */
static int
link_cmp(const UCand *a, const UCand *b)
{
	if ((a->ev & EV_EXACT) != (b->ev & EV_EXACT))
		return (a->ev & EV_EXACT) ? -1 : 1;
	if ((a->ev & EV_NOT_NEWER) != (b->ev & EV_NOT_NEWER))
		return (a->ev & EV_NOT_NEWER) ? -1 : 1;
	if (a->msg->date != b->msg->date)
		return a->msg->date > b->msg->date ? -1 : 1;
	return strcmp(a->msg->msgid, b->msg->msgid);
}

/* Marks the choice of each chain among @pc (one project's candidates). */
static void
choose_in_chains(GPtrArray *pc, gint64 when)
{
	g_autoptr(GHashTable) done = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < pc->len; i++) {
		const UCand *k = pc->pdata[i];
		UCand *best = NULL;
		gboolean eligible = FALSE;

		if (!g_hash_table_add(done, (gpointer)k->chain))
			continue;
		for (guint j = 0; j < pc->len; j++) {
			const UCand *o = pc->pdata[j];

			eligible |= strcmp(o->chain, k->chain) == 0 &&
				    o->msg->date <= when;
		}
		for (guint j = 0; j < pc->len; j++) {
			UCand *o = pc->pdata[j];

			if (strcmp(o->chain, k->chain) != 0 ||
			    (eligible && o->msg->date > when))
				continue;
			if (best == NULL || chain_cmp(o, best, eligible) < 0)
				best = o;
		}
		best->chosen = TRUE;
	}
}

/* Why @k, of the winner @w's chain, is not the one merged. */
static char *
chain_why(const UCand *k, const UCand *w, const UCommit *c)
{
	if (w->ev & EV_LINK)
		return g_strdup_printf("the commit's trailer names <%s> of its "
				       "chain (v%u)", w->msg->msgid,
				       w->series->version);
	if (k->pos < w->pos)
		return g_strdup_printf("an older version in the chain of the "
				       "one merged (v%u)", w->series->version);
	if (k->msg->date > c->when)
		return g_strdup_printf("a newer version, sent after the "
				       "commit's author date: v%u was merged",
				       w->series->version);
	if (k->pos > w->pos)
		return g_strdup_printf("a newer version: v%u was merged",
				       w->series->version);
	if ((w->ev & EV_EXACT) && !(k->ev & EV_EXACT))
		return g_strdup("the same version; the other patch is the "
				"identical one");
	return g_strdup("the same version; the other patch was sent later");
}

/* Why @k, another chain's offer, lost to the winner @w. */
static char *
lost_why(const UCand *k, const UCand *w, const UCommit *c)
{
	if (w->ev & EV_LINK)
		return g_strdup_printf("the commit's trailer names <%s>",
				       w->msg->msgid);
	if (k->rank != w->rank)
		return g_strdup_printf("weaker evidence (%s%s%s) than %s's (%s)",
				       pgate_upstream_rule_to_string(k->rule),
				       k->weak ? ": " : "",
				       k->weak ? k->weak : "",
				       w->series->id,
				       pgate_upstream_rule_to_string(w->rule));
	if ((k->ev & EV_AUTHOR) != (w->ev & EV_AUTHOR))
		return g_strdup_printf("sent by %s, not by the commit's "
				       "author %s", k->msg->from_email,
				       c->email);
	if ((k->ev & EV_NOT_NEWER) != (w->ev & EV_NOT_NEWER))
		return g_strdup("sent after the commit's author date");
	if (k->msg->date != w->msg->date)
		return g_strdup_printf("sent before %s's <%s>", w->series->id,
				       w->msg->msgid);
	return g_strdup("a tie with the one merged, broken by Message-ID");
}

/* The fates of one project's candidates @pc. */
static void
decide_project(GPtrArray *pc, const UCommit *c)
{
	UCand *win = NULL;

	choose_in_chains(pc, c->when);
	for (guint i = 0; i < pc->len; i++) {
		UCand *k = pc->pdata[i];

		if ((k->ev & EV_LINK) && (win == NULL || link_cmp(k, win) < 0))
			win = k;
	}
	for (guint i = 0; win == NULL && i < pc->len; i++) {
		UCand *k = pc->pdata[i];

		if (!k->chosen)
			continue;
		for (guint j = 0; j < pc->len; j++) {
			UCand *o = pc->pdata[j];

			if (o->chosen && cross_cmp(o, k) < 0)
				k = o;
		}
		win = k;
	}
	if (win != NULL && win->rank == PGATE_UPSTREAM_RANK_POSSIBLE)
		win = NULL;
	for (guint i = 0; i < pc->len; i++) {
		UCand *k = pc->pdata[i];

		k->by = k == win ? NULL : win;
		if (k == win) {
			k->fate = FATE_WIN;
		} else if (win != NULL && strcmp(k->chain, win->chain) == 0) {
			k->fate = FATE_CHAIN;
			k->why = chain_why(k, win, c);
		} else if (k->chosen) {
			k->fate = FATE_HINT;
			k->why = win != NULL ? lost_why(k, win, c)
				 : g_strdup(k->weak ? k->weak :
					    "its chain's newer version was "
					    "chosen");
		} else {
			k->fate = FATE_NONE;
		}
	}
}

static const char *
project_of(const UCand *k)
{
	return k->series->project != NULL ? k->series->project : "";
}

static gint
cand_cmp(gconstpointer a, gconstpointer b)
{
	const UCand *x = *(UCand *const *)a, *y = *(UCand *const *)b;
	int d = strcmp(x->msg->msgid, y->msg->msgid);

	return d != 0 ? d : (x->msg->num > y->msg->num) - (x->msg->num < y->msg->num);
}

GPtrArray *
pgate_upstream__decide(UCtx *x, const UCommit *c, GError **error)
{
	g_autoptr(GPtrArray) cands = g_ptr_array_new_with_free_func(
		(GDestroyNotify)cand_free);
	g_autoptr(GHashTable) projects = g_hash_table_new(g_str_hash,
							  g_str_equal);

	if (!collect(x, c, cands, error))
		return NULL;
	g_ptr_array_sort(cands, cand_cmp);
	for (guint i = 0; i < cands->len; i++) {
		const UCand *k = cands->pdata[i];
		g_autoptr(GPtrArray) pc = NULL;

		if (k->ignored || !g_hash_table_add(projects,
						    (gpointer)project_of(k)))
			continue;
		pc = g_ptr_array_new();
		for (guint j = i; j < cands->len; j++) {
			UCand *o = cands->pdata[j];

			if (!o->ignored &&
			    strcmp(project_of(o), project_of(k)) == 0)
				g_ptr_array_add(pc, o);
		}
		decide_project(pc, c);
	}
	return g_steal_pointer(&cands);
}
