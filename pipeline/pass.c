/* pass.c - one pass over the series that may need work (the active set,
 * store/active.c), for every project: the selection, the loop, what is
 * settled after it, and the state of series that are gone. */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

typedef struct {
	const char *prefix;    /* "SID/" */
	GPtrArray *keys;       /* its stage keys */
} DropOrphan;

static gboolean
drop_keys(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DropOrphan *d = payload;

	for (guint i = 0; i < d->keys->len; i++)
		if (!pgate_store_table_delete(txn, PGATE_STORE_TABLE_STAGE,
					      d->keys->pdata[i], error))
			return FALSE;
	return TRUE;
}

/* The pipeline of the project whose documents @state_id names: one of
 * @p's projects' (SID@NAME), else @p. */
static PgatePipeline *
pipeline_of(PgatePipeline *p, const char *state_id)
{
	const char *project = pgate_project_of_state_id(state_id);

	for (guint i = 0; project != NULL && p->subs != NULL &&
	     i < p->subs->len; i++) {
		PgatePipeline *sub = p->subs->pdata[i];

		if (g_strcmp0(sub->project->name, project) == 0)
			return sub;
	}
	return p;
}

/*
 * The stage documents of series that threading no longer has: a
 * rethread, or a late patch, can merge two series or give one another
 * ID, and the documents of the ID that is gone would be counted by
 * status for ever.  Their jobs still in flight are cancelled, then every
 * document of theirs is removed; the series that took their patches is
 * judged afresh under its own ID.  Reports already queued in the outbox
 * are left to go: they were true when made.  @live: the IDs that exist.
 */
static gboolean
drop_gone(PgatePipeline *p, GHashTable *gone, GError **error)
{
	GHashTableIter it;
	gpointer sid, keys;

	g_hash_table_iter_init(&it, gone);
	while (g_hash_table_iter_next(&it, &sid, &keys)) {
		g_autofree char *prefix = g_strdup_printf("%s/", (char *)sid);
		g_autoptr(PgateSeriesDocs) all = pgate_pipeline__series_state(
			p->store, sid, error);
		DropOrphan d = { prefix, keys };
		PgatePipeline *owner = pipeline_of(p, sid);

		if (all == NULL)
			return FALSE;
		if (owner->ci_cfg.enabled &&
		    !pgate_pipeline__cancel_jobs(owner, sid, all, "cancelled: the series is "
				 "gone (rethreaded into another)", error))
			return FALSE;
		if (!pgate_store_write(p->store, drop_keys, &d, error))
			return FALSE;
		if (p->log)
			p->log(p->log_data, sid, "dropped",
			       "no such series any more: its state is removed");
	}
	return TRUE;
}

/* Adds stage key @key (of state ID @id: SID or SID@NAME) to @gone. */
static void
gone_add(GHashTable *gone, const char *key, gsize idlen)
{
	g_autofree char *id = g_strndup(key, idlen);
	GPtrArray *k = g_hash_table_lookup(gone, id);

	if (k == NULL) {
		k = g_ptr_array_new_with_free_func(g_free);
		g_hash_table_insert(gone, g_steal_pointer(&id), k);
	}
	g_ptr_array_add(k, g_strdup(key));
}

static GHashTable *
gone_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
				     (GDestroyNotify)g_ptr_array_unref);
}

static gboolean
drop_orphans(PgatePipeline *p, GHashTable *live, GError **error)
{
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GHashTable) gone = gone_new();

	entries = pgate_state_entries(p->store, error);
	if (entries == NULL)
		return FALSE;
	for (guint i = 0; i < entries->len; i++) {
		const PgateStoreEntry *e = entries->pdata[i];
		const char *slash = strchr(e->key, '/');
		g_autofree char *id = NULL;

		if (slash == NULL)
			continue;
		id = g_strndup(e->key, (gsize)(slash - e->key));
		{
			/* a project's documents (SID@NAME/...) live as long
			 * as SID does */
			const char *project = NULL;
			g_autofree char *own = pgate_project_split_state_id(
				id, &project);

			if (g_hash_table_contains(live, own))
				continue;
		}
		gone_add(gone, e->key, (gsize)(slash - e->key));
	}
	return drop_gone(p, gone, error);
}

/* drop_orphans() for the series @ids alone, known to be deleted: their
 * documents (SID/... and SID@NAME/...) found by prefix. */
static gboolean
drop_deleted(PgatePipeline *p, GPtrArray *ids, GError **error)
{
	g_autoptr(GHashTable) gone = gone_new();

	if (ids->len == 0)
		return TRUE;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return FALSE;
		for (guint i = 0; i < ids->len; i++) {
			const char *sid = ids->pdata[i];
			g_autofree char *own = g_strdup_printf("%s/", sid);
			g_autofree char *proj = g_strdup_printf("%s@", sid);
			const char *prefixes[] = { own, proj };

			for (guint j = 0; j < G_N_ELEMENTS(prefixes); j++) {
				g_autoptr(GPtrArray) e = pgate_store_table_scan(
					txn, PGATE_STORE_TABLE_STAGE,
					prefixes[j], error);

				if (e == NULL)
					return FALSE;
				for (guint n = 0; n < e->len; n++) {
					const char *key = ((PgateStoreEntry *)
							   e->pdata[n])->key;
					const char *slash = strchr(key, '/');

					if (slash != NULL)
						gone_add(gone, key,
							 (gsize)(slash - key));
				}
			}
		}
	}
	return drop_gone(p, gone, error);
}

/* ---- the series a pass visits: the active set (store/active.c) ----
 *
 * A pass visits the series that may need work: those the set holds
 * (series put or deleted since they were last settled, those whose
 * upstream matches or recheck requests changed, and those a pass left in
 * a state that is not final), not every series of the store.  After the
 * visits, a series left final is settled out of the set (unless it was
 * marked again meanwhile), one that is not is kept.  The set is trusted
 * only while it carries the token of this configuration: a store made
 * before the set, a rethread (which forgets the token) or another
 * configuration (another project, Patchwork states turned on) makes the
 * pass visit every series, as passes did before, and build the set
 * anew. */

typedef struct {
	GPtrArray *ids;        /* (element-type utf8): to visit, in order */
	GPtrArray *listed;     /* (element-type PgateStoreActive): as read */
	GHashTable *marks;     /* sid -> its PgateStoreActive (in listed) */
	GHashTable *failed;    /* sids whose visit failed: kept */
	GPtrArray *deleted;    /* (element-type utf8): listed, not there */
	GBytes *token;         /* this configuration's */
	gboolean full;         /* every series visited: the set built anew */
	gboolean settle;       /* a whole pass (not --series) */
} Selection;

static void
selection_clear(Selection *sel)
{
	g_clear_pointer(&sel->ids, g_ptr_array_unref);
	g_clear_pointer(&sel->marks, g_hash_table_unref);
	g_clear_pointer(&sel->listed, g_ptr_array_unref);
	g_clear_pointer(&sel->failed, g_hash_table_unref);
	g_clear_pointer(&sel->deleted, g_ptr_array_unref);
	g_clear_pointer(&sel->token, g_bytes_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Selection, selection_clear)

/* A pass over every series commits once a series: one sync each instead
 * of two (pgate_store_defer_sync), all made durable before the pass
 * returns, so before anything of the outbox is sent. */
typedef struct {
	PgateStore *store;
} DeferSync;

static void
defer_sync_begin(DeferSync *d, PgateStore *store, const Selection *sel)
{
	if (!sel->full)
		return;
	d->store = store;
	pgate_store_defer_sync(store, TRUE);
}

static gboolean
defer_sync_end(DeferSync *d, GError **error)
{
	PgateStore *store = d->store;

	if (store == NULL)
		return TRUE;
	d->store = NULL;
	pgate_store_defer_sync(store, FALSE);
	return pgate_store_sync(store, error);
}

static void
defer_sync_clear(DeferSync *d)
{
	(void)defer_sync_end(d, NULL);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(DeferSync, defer_sync_clear)

/* The active set's token for @p's configuration: a hash of it. */
static GBytes *
active_token(PgatePipeline *p)
{
	g_autoptr(GChecksum) c = g_checksum_new(G_CHECKSUM_SHA256);
	const char *hex;

	g_checksum_update(c, (const guchar *)"pipeline active set 1\n", -1);
	if (p->kf != NULL) {
		gsize n = 0;
		g_autofree char *data = g_key_file_to_data(p->kf, &n, NULL);

		if (data != NULL)
			g_checksum_update(c, (const guchar *)data, (gssize)n);
	}
	hex = g_checksum_get_string(c);
	return g_bytes_new(hex, strlen(hex));
}

/* The IDs of every series, in store order, into @ids. */
static gboolean
all_series_ids(PgateStoreTxn *txn, GPtrArray *ids, GError **error)
{
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GError) local = NULL;

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &local)) {
		g_ptr_array_add(ids, g_strdup(s->id));
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

/* The series a pass visits (@only alone, when given) into @sel. */
static gboolean
series_select(PgatePipeline *p, const char *only, Selection *sel,
	      GError **error)
{
	g_autoptr(GBytes) stored = NULL;

	memset(sel, 0, sizeof *sel);
	sel->ids = g_ptr_array_new_with_free_func(g_free);
	sel->failed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					    NULL);
	sel->deleted = g_ptr_array_new_with_free_func(g_free);
	sel->marks = g_hash_table_new(g_str_hash, g_str_equal);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return FALSE;
		if (only != NULL) {
			g_autoptr(PgateSeriesRec) rec = NULL;
			g_autoptr(GError) local = NULL;

			rec = pgate_store_series_get(txn, only, &local);
			if (rec == NULL) {
				if (local != NULL &&
				    local->code != PGATE_ERROR_NOT_FOUND) {
					g_propagate_error(
						error, g_steal_pointer(&local));
					return FALSE;
				}
				g_set_error(error, PGATE_PIPELINE_ERROR,
					    PGATE_ERROR_NOT_FOUND,
					    "no series %s", only);
				return FALSE;
			}
			g_ptr_array_add(sel->ids, g_strdup(rec->id));
			return TRUE;
		}
		sel->settle = TRUE;
		sel->token = active_token(p);
		sel->listed = pgate_store_active_list(txn, &stored, error);
		if (sel->listed == NULL)
			return FALSE;
		for (guint i = 0; i < sel->listed->len; i++) {
			PgateStoreActive *a = sel->listed->pdata[i];

			g_hash_table_insert(sel->marks, a->id, a);
		}
		sel->full = stored == NULL ||
			    !g_bytes_equal(stored, sel->token);
		if (!sel->full) {
			for (guint i = 0; i < sel->listed->len; i++)
				g_ptr_array_add(sel->ids, g_strdup(
					((PgateStoreActive *)
					 sel->listed->pdata[i])->id));
			return TRUE;
		}
		if (!all_series_ids(txn, sel->ids, error))
			return FALSE;
	}
	{
		g_autoptr(GHashTable) live = g_hash_table_new(g_str_hash,
							      g_str_equal);

		for (guint i = 0; i < sel->ids->len; i++)
			g_hash_table_add(live, sel->ids->pdata[i]);
		if (!drop_orphans(p, live, error))
			return FALSE;
	}
	return TRUE;
}

/* Whether a series awaiting approval under @p needs every pass: only
 * when its sender may become trusted without any change to the store (a
 * new commit of theirs, with trust_committers).  Otherwise what ends the
 * wait changes the store and marks it: a reply that approves or rejects
 * (a series put), `patchgate approve` or `reject`, another configuration
 * (another token). */
static gboolean
awaits_anything(const PgatePipeline *p)
{
	return p->cfg.trust_committers;
}

/* Whether series @sid needs another pass: a state of it (the project's,
 * with projects) that is not final, but for one awaiting an approval
 * that only a change of the store can bring. */
static gboolean
needs_pass(PgatePipeline *p, PgateStoreTxn *txn, const char *sid,
	   gboolean *out, GError **error)
{
	guint n = p->subs != NULL ? p->subs->len : 1;

	*out = FALSE;
	for (guint i = 0; i < n && !*out; i++) {
		g_autofree char *state_id = p->subs == NULL ? g_strdup(sid)
			: pgate_project_state_id(
				((PgatePipeline *)p->subs->pdata[i])->project,
				sid);
		g_autoptr(GError) local = NULL;
		g_autoptr(PgateSeriesDoc) doc = pgate_series_doc_get(
			txn, state_id, &local);

		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (doc != NULL && !pgate_series_state_is_final(doc->state))
			*out = doc->state != PGATE_SERIES_AWAITING_APPROVAL ||
			       awaits_anything(p->subs == NULL ? p
					       : p->subs->pdata[i]);
	}
	return TRUE;
}

typedef struct {
	PgatePipeline *p;
	Selection *sel;
	GPtrArray *todo;       /* sids whose entry may change */
	GHashTable *visited;
} Settle;

static gboolean
settle_txn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Settle *st = payload;

	for (guint i = 0; i < st->todo->len; i++) {
		const char *sid = st->todo->pdata[i];
		const PgateStoreActive *a = g_hash_table_lookup(st->sel->marks,
								sid);
		gboolean keep = g_hash_table_contains(st->sel->failed, sid);

		if (!keep && g_hash_table_contains(st->visited, sid) &&
		    !needs_pass(st->p, txn, sid, &keep, error))
			return FALSE;
		if (!pgate_store_active_settle(txn, sid, a ? a->mark : 0, keep,
					       error))
			return FALSE;
	}
	return !st->sel->full ||
	       pgate_store_active_complete(txn, st->sel->token, error);
}

/* After the visits: the set keeps the series that need more passes and
 * loses the others.  One transaction, and none when nothing changes. */
static gboolean
selection_settle(PgatePipeline *p, Selection *sel, GError **error)
{
	g_autoptr(GPtrArray) todo = g_ptr_array_new();
	g_autoptr(GHashTable) visited = g_hash_table_new(g_str_hash,
							 g_str_equal);
	g_autoptr(GHashTable) gone = g_hash_table_new(g_str_hash, g_str_equal);
	Settle st = { p, sel, todo, visited };

	if (!sel->settle)
		return TRUE;
	if (!drop_deleted(p, sel->deleted, error))
		return FALSE;
	for (guint i = 0; i < sel->deleted->len; i++)
		g_hash_table_add(gone, sel->deleted->pdata[i]);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return FALSE;
		for (guint i = 0; i < sel->ids->len; i++) {
			const char *sid = sel->ids->pdata[i];
			gboolean keep = g_hash_table_contains(sel->failed, sid);
			gboolean listed = g_hash_table_contains(sel->marks,
								sid);

			if (g_hash_table_contains(gone, sid)) {
				g_ptr_array_add(todo, (gpointer)sid);
				continue;
			}
			g_hash_table_add(visited, (gpointer)sid);
			if (!keep && !needs_pass(p, txn, sid, &keep, error))
				return FALSE;
			if (keep != listed)
				g_ptr_array_add(todo, (gpointer)sid);
		}
		/* a full pass: the entries of series it did not see */
		for (guint i = 0; sel->full && i < sel->listed->len; i++) {
			const char *sid = ((PgateStoreActive *)
					   sel->listed->pdata[i])->id;

			if (!g_hash_table_contains(visited, sid) &&
			    !g_hash_table_contains(gone, sid))
				g_ptr_array_add(todo, (gpointer)sid);
		}
	}
	if (todo->len == 0 && !sel->full)
		return TRUE;
	return pgate_store_write(p->store, settle_txn, &st, error);
}

/* The visit of @sid found no series: deleted (its entry said so) or
 * dropped by a concurrent ingest. */
static void
selection_missing(Selection *sel, const char *sid, const GError *why)
{
	/* a record that does not decode is not a deleted series */
	if (why == NULL || why->code != PGATE_ERROR_NOT_FOUND)
		g_hash_table_add(sel->failed, g_strdup(sid));
	else if (sel->settle && !sel->full)
		g_ptr_array_add(sel->deleted, g_strdup(sid));
}

static void
selection_failed(Selection *sel, const char *sid)
{
	g_hash_table_add(sel->failed, g_strdup(sid));
}

/* A series' trouble: counted and logged, unless it is everybody's
 * (store full, lock held, the configuration): then %FALSE, in @error. */
static gboolean
series_failed(PgatePipeline *p, const char *sid, GError **local,
	      PgatePipelineStats *stats, GError **error)
{
	if (g_error_matches(*local, PGATE_STORE_ERROR, PGATE_ERROR_FULL) ||
	    g_error_matches(*local, PGATE_STORE_ERROR, PGATE_ERROR_BUSY) ||
	    (*local)->code == PGATE_ERROR_CONFIG) {
		g_propagate_error(error, g_steal_pointer(local));
		return FALSE;
	}
	stats->errors++;
	if (p->log)
		p->log(p->log_data, sid, "error", (*local)->message);
	g_clear_error(local);
	return TRUE;
}

static void
sub_free(PgatePipeline *sub)
{
	pgate_pipeline_config_clear(&sub->cfg);
	pgate_pipeline_apply_config_clear(&sub->apply);
	pgate_pipeline_ci_config_clear(&sub->ci_cfg);
	pgate_route_config_clear(&sub->route);
	g_clear_pointer(&sub->maint, g_strfreev);
	g_clear_pointer(&sub->ci, pgate_ci_backend_free);
	g_clear_pointer(&sub->polled, g_hash_table_unref);
	g_clear_pointer(&sub->committers, g_hash_table_unref);
	g_clear_pointer(&sub->email, pgate_email_config_free);
	pgate_reply_config_clear(&sub->reply);
	g_clear_pointer(&sub->pw, pgate_patchwork_free);
	g_free(sub);
}

void
pgate_pipeline_projects_clear(PgatePipeline *p)
{
	g_clear_pointer(&p->subs, g_ptr_array_unref);
	g_clear_pointer(&p->projects, g_ptr_array_unref);
	g_clear_pointer(&p->pw, pgate_patchwork_free);
	pgate_route_config_clear(&p->route);
	g_clear_pointer(&p->maint, g_strfreev);
	p->route_loaded = p->maint_read = FALSE;
}

gboolean
pgate_pipeline_projects_init(PgatePipeline *p, GError **error)
{
	g_autoptr(GPtrArray) projects = NULL, subs = NULL;

	if (p->project != NULL || p->subs != NULL || p->kf == NULL)
		return TRUE;
	{
		g_auto(GStrv) names = pgate_config_projects(p->kf);

		if (names[0] == NULL)
			return TRUE;	/* the implicit project: @p itself */
	}
	projects = pgate_projects_load(p->kf, error);
	if (projects == NULL)
		return FALSE;
	subs = g_ptr_array_new_with_free_func((GDestroyNotify)sub_free);
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		PgatePipeline *sub = g_new0(PgatePipeline, 1);

		g_ptr_array_add(subs, sub);
		sub->store = p->store;
		sub->kf = pr->kf;
		sub->state_dir = p->state_dir;
		sub->project = pr;
		sub->log = p->log;
		sub->log_data = p->log_data;
		sub->queue_check = p->queue_check;
		sub->upstream_every = G_MAXINT64;
		if (!pgate_pipeline_config_load(pr->kf, &sub->cfg, error) ||
		    !pgate_pipeline_apply_config_load(pr->kf, &sub->apply,
						      error) ||
		    !pgate_pipeline_ci_config_load(pr->kf, &sub->ci_cfg, error))
			return FALSE;
		sub->queue_checks = g_key_file_has_group(pr->kf, "patchwork");
		if (g_key_file_has_group(pr->kf, "email")) {
			sub->email = pgate_email_config_new(pr->kf, "email",
							    error);
			if (sub->email == NULL)
				return FALSE;
			sub->queue_mail = p->queue_mail ? p->queue_mail
							: pgate_pipeline__queue_mail;
		}
		if (!pgate_pipeline__reply_config_load(sub, error))
			return FALSE;
	}
	p->projects = g_steal_pointer(&projects);
	p->subs = g_steal_pointer(&subs);
	return TRUE;
}


/* The [upstream] branches, when they are due: first, so that a series
 * merged since the last pass is not applied nor tested again. */
static gboolean
upstream_read(PgatePipeline *p, PgatePipelineStats *stats, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!p->upstream.enabled ||
	    (p->upstream_at != 0 &&
	     pgate_pipeline__now_s() - p->upstream_at < p->upstream_every))
		return TRUE;
	pgate_upstream_stats_clear(&p->upstream_stats);
	memset(&p->upstream_stats, 0, sizeof p->upstream_stats);
	p->upstream_at = pgate_pipeline__now_s();
	if (pgate_upstream_scan(p->store, &p->upstream, p->upstream_at,
				pgate_pipeline__upstream_log, p,
				&p->upstream_stats, &local))
		return TRUE;
	if (g_error_matches(local, PGATE_STORE_ERROR, PGATE_ERROR_FULL) ||
	    g_error_matches(local, PGATE_STORE_ERROR, PGATE_ERROR_BUSY)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	stats->errors++;
	if (p->log)
		p->log(p->log_data, "-", "upstream-error", local->message);
	return TRUE;
}

/* Every job in flight polled at once, before the series walk (one
 * backend: without projects; with them, each series polls its own: the
 * backends differ). */
static gboolean
poll_jobs(PgatePipeline *p, gboolean all, GError **error)
{
	g_autoptr(GError) local = NULL;

	g_clear_pointer(&p->polled, g_hash_table_unref);
	p->polled = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!all || !p->ci_cfg.enabled)
		return TRUE;
	if ((p->ci != NULL || pgate_pipeline_ci_backend(p, &local)) &&
	    !pgate_pipeline_ci_poll_all(p->store, p->ci, p->polled, &local))
		g_clear_error(&local);	/* each series polls its own */
	if (local != NULL && local->code == PGATE_ERROR_CONFIG) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

/* The older versions of what was merged in this pass, visited before it
 * was: superseded-by-merge now, not a pass later. */
static gboolean
follow_merged(PgatePipeline *p, PgatePipelineStats *stats, GError **error)
{
	for (guint i = 0; p->upstream_merged != NULL &&
	     i < p->upstream_merged->len; i++) {
		g_autofree char *older = NULL;

		{
			g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(
				p->store, error);
			g_autoptr(PgateSeriesRec) rec = NULL;

			if (txn == NULL)
				return FALSE;
			rec = pgate_store_series_get(txn,
						     p->upstream_merged->pdata[i],
						     NULL);
			older = rec ? g_strdup(rec->supersedes) : NULL;
		}
		for (guint hops = 0; older != NULL && hops < 64; hops++) {
			g_autoptr(PgateSeriesRec) rec = NULL;
			g_autoptr(GError) local = NULL;
			guint ignored = 0;

			{
				g_autoptr(PgateStoreTxn) txn =
					pgate_store_begin_read(p->store, error);

				if (txn == NULL)
					return FALSE;
				rec = pgate_store_series_get(txn, older, NULL);
			}
			g_clear_pointer(&older, g_free);
			if (rec == NULL)
				break;
			if (!pgate_pipeline__run_series(p, rec, &ignored,
							&local)) {
				stats->errors++;
				if (p->log)
					p->log(p->log_data, rec->id, "error",
					       local->message);
			}
			older = g_strdup(rec->supersedes);
		}
	}
	return TRUE;
}

/* One project's walk (@pp: the pipeline of the project; @p itself
 * without projects) over the selected series that are its own, each seen
 * under its state ID (SID@NAME: every document, check and mail of it is
 * the project's; the series' own ID for the implicit project).  @first:
 * the first project's walk says which series are gone. */
static gboolean
walk(PgatePipeline *pp, Selection *sel, gboolean first,
     PgatePipelineStats *stats, GError **error)
{
	GPtrArray *ids = sel->ids;

	if (pp->upstream.enabled && pp->upstream_merged == NULL)
		pp->upstream_merged = g_ptr_array_new_with_free_func(g_free);
	if (pp->upstream_merged != NULL)
		g_ptr_array_set_size(pp->upstream_merged, 0);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(PgateSeriesRec) rec = NULL;
		g_autoptr(GError) local = NULL;
		g_autofree char *why = NULL, *state_id = NULL;
		PgateSeriesRec view;

		{
			g_autoptr(PgateStoreTxn) txn =
				pgate_store_begin_read(pp->store, error);

			if (txn == NULL)
				return FALSE;
			rec = pgate_store_series_get(txn, ids->pdata[i],
						     &local);
			/* deleted, or dropped by a concurrent ingest */
			if (rec == NULL && first)
				selection_missing(sel, ids->pdata[i], local);
			if (rec != NULL && pp->project != NULL &&
			    !pgate_project_match_series(txn, pp->project, rec,
							&why, &local)) {
				selection_failed(sel, rec->id);
				if (!series_failed(pp, rec->id, &local, stats,
						   error))
					return FALSE;
			}
		}
		if (rec == NULL || (pp->project != NULL && why == NULL))
			continue;
		view = *rec;	/* the record's fields are borrowed */
		if (pp->project != NULL) {
			state_id = pgate_project_state_id(pp->project, rec->id);
			view.id = state_id;
		}
		stats->series++;
		/* one series' trouble does not stop the others, unless the
		 * trouble is everybody's (store full, lock held, the
		 * configuration) */
		if (!pgate_pipeline__run_series(pp, &view, &stats->testing,
						&local)) {
			selection_failed(sel, rec->id);
			if (!series_failed(pp, view.id, &local, stats, error))
				return FALSE;
		}
	}
	return follow_merged(pp, stats, error);
}

/* One pass: the upstream branches, the selection, and each project's
 * walk over it (the implicit project's: @p's own), then what settles. */
static gboolean
run_pass(PgatePipeline *p, const char *only, PgatePipelineStats *stats,
	 GError **error)
{
	g_auto(Selection) sel = { 0 };
	g_auto(DeferSync) sync = { NULL };
	guint n = p->subs != NULL ? p->subs->len : 1;

	if (only != NULL && !series_select(p, only, &sel, error))
		return FALSE;
	if (only == NULL && p->subs == NULL && !upstream_read(p, stats, error))
		return FALSE;
	/* after the upstream scan: the series it matched are in the set */
	if (only == NULL && !series_select(p, only, &sel, error))
		return FALSE;
	defer_sync_begin(&sync, p->store, &sel);
	for (guint k = 0; k < n; k++) {
		PgatePipeline *pp = p->subs != NULL ? p->subs->pdata[k] : p;

		if (!poll_jobs(pp, only == NULL && p->subs == NULL, error) ||
		    !walk(pp, &sel, k == 0, stats, error))
			return FALSE;
	}
	return defer_sync_end(&sync, error) &&
	       selection_settle(p, &sel, error);
}

gboolean
pgate_pipeline_run(PgatePipeline *p, const char *only, PgatePipelineStats *stats,
		   GError **error)
{
	gboolean ok;

	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	ok = run_pass(p, only, stats, error);
	/* the routing keys are read again by the next pass (the pipeline
	 * of the implicit project is cleared by its maker, who does not
	 * know of them) */
	if (p->project == NULL) {
		pgate_route_config_clear(&p->route);
		g_clear_pointer(&p->maint, g_strfreev);
		p->route_loaded = p->maint_read = FALSE;
	}
	return ok;
}
