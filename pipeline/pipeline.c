/* pipeline.c - one pass of the pipeline over every series (patchgate run).
 *
 * Each series has a document SERIES/pipeline (PgateSeriesDoc, state.c)
 * whose state (PgateSeriesState) is one of (docs/pipeline.md):
 *
 *   waiting            not complete yet, within [pipeline] wait_complete
 *   incomplete         still not complete after it: reported, not tested
 *   awaiting-approval  from a sender the trust policy does not trust
 *   rejected           a maintainer said no (patchgate reject)
 *   skipped            nothing to test (a pull request)
 *   apply-failed       applied nowhere: reported
 *   testing            CI jobs submitted, polled each pass
 *   done               results reported
 *   superseded         a newer version exists; its jobs were cancelled
 *
 * A pass moves every series as far as it can go now, and queues the
 * reports its moves call for in the same transaction as the move (the
 * outbox), then sends what is due.  Nothing here waits: a job still
 * running is polled again by the next pass.
 */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

/* [trust] KEY as a list of address globs, stripped and lowercased. */
static char **
address_globs(GKeyFile *kf, const char *key)
{
	char **globs = g_key_file_get_string_list(kf, "trust", key, NULL, NULL);

	for (guint i = 0; globs && globs[i]; i++) {
		char *l = g_ascii_strdown(g_strstrip(globs[i]), -1);

		g_free(globs[i]);
		globs[i] = l;
	}
	return globs;
}

gboolean
pgate_pipeline_config_load(GKeyFile *kf, PgatePipelineConfig *c,
			   GError **error)
{
	gint64 v;

	memset(c, 0, sizeof *c);
	if (!pgate_config_int(kf, "pipeline", "wait_complete", 3600, 0,
			      G_MAXINT64, FALSE, &v, PGATE_PIPELINE_ERROR,
			      error) ||
	    !pgate_config_bool(kf, "trust", "everyone", FALSE,
			       &c->trust_everyone, PGATE_PIPELINE_ERROR,
			       error) ||
	    !pgate_config_bool(kf, "trust", "committers", FALSE,
			       &c->trust_committers, PGATE_PIPELINE_ERROR,
			       error))
		return FALSE;
	c->wait_complete = v;
	if (!pgate_config_int(kf, "pipeline", "recheck_limit", 3, 0, 1000,
			      FALSE, &v, PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->recheck_limit = (guint)v;
	/* at most the local runner's bound on a job's commits (ci/local) */
	if (!pgate_config_int(kf, "pipeline", "max_patches", 500, 0, 1000,
			      FALSE, &v, PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->max_patches = (guint)v;
	c->trusted = address_globs(kf, "trusted");
	c->approvers = address_globs(kf, "approvers");
	c->approve_keyword = g_key_file_get_string(kf, "trust", "approve_keyword",
						   NULL);
	if (c->approve_keyword == NULL)
		c->approve_keyword = g_strdup("patchgate: approve");
	c->reject_keyword = g_key_file_get_string(kf, "trust", "reject_keyword",
						  NULL);
	if (c->reject_keyword == NULL)
		c->reject_keyword = g_strdup("patchgate: reject");
	g_strstrip(c->approve_keyword);
	g_strstrip(c->reject_keyword);
	/* the checks' contexts: "apply", "build" unless a prefix is asked
	 * for (Patchwork shows USER/CONTEXT: the account is the brand) */
	if (!pgate_config_string(kf, "patchwork", "context_prefix",
				 &c->context_prefix, PGATE_PIPELINE_ERROR,
				 error)) {
		pgate_pipeline_config_clear(c);
		return FALSE;
	}
	if (c->context_prefix != NULL &&
	    (!pgate_patchwork_context_is_valid(c->context_prefix) ||
	     strlen(c->context_prefix) > 64)) {
		pgate_config_error(error, PGATE_PIPELINE_ERROR, "patchwork",
				   "context_prefix",
				   "not a slug of at most 64 letters, digits, "
				   "'_' and '-'");
		pgate_pipeline_config_clear(c);
		return FALSE;
	}
	c->require_authentication = g_key_file_get_string(
		kf, "trust", "require_authentication", NULL);
	if (c->require_authentication != NULL) {
		const char *id = g_strstrip(c->require_authentication);

		if (*id == '\0') {
			g_clear_pointer(&c->require_authentication, g_free);
		} else if (strpbrk(id, " \t;()\"\\=/@") != NULL ||
			   strlen(id) > 255) {
			pgate_config_error(error, PGATE_PIPELINE_ERROR, "trust",
					   "require_authentication",
					   "not an authserv-id (a host name "
					   "such as mx.example.org)");
			pgate_pipeline_config_clear(c);
			return FALSE;
		}
	}
	return TRUE;
}

void
pgate_pipeline_config_clear(PgatePipelineConfig *c)
{
	g_clear_pointer(&c->trusted, g_strfreev);
	g_clear_pointer(&c->approvers, g_strfreev);
	g_clear_pointer(&c->approve_keyword, g_free);
	g_clear_pointer(&c->reject_keyword, g_free);
	g_clear_pointer(&c->require_authentication, g_free);
	g_clear_pointer(&c->context_prefix, g_free);
}

/* ---- one series ---- */

typedef struct {
	PgatePipeline *p;
	PgateSeriesRec *rec;
	PgateSeriesDoc *doc;  /* SERIES/pipeline */
	/* checks to queue with the move: [context, state, url, description] */
	GPtrArray *checks;
	GPtrArray *per_patch;   /* json_t* or NULL, one per check: per-patch
				 * {msgid: {state, description}} */
	gboolean mail;          /* queue the email report */
	char *extra_key;        /* (nullable): a stage document to store */
	json_t *extra;          /* with the move (SERIES/recheck) */
	GPtrArray *reset;       /* (nullable): stage keys to delete */
	PgatePipelinePlan *plan; /* (nullable) (owned): what an apply
				 * applies, as the trust gate judged it */
} Move;

static void
move_to(Move *m, PgateSeriesState state, const char *reason)
{
	PgateSeriesDoc *d = m->doc;

	if (d->state != state) {
		d->since = now_s();
		d->has |= PGATE_SERIES_DOC_SINCE;
	}
	d->state = state;
	g_free(d->reason);
	d->reason = g_strdup(reason);
	d->has |= PGATE_SERIES_DOC_REASON;
	if (d->events == NULL)
		d->events = g_ptr_array_new_with_free_func(
			(GDestroyNotify)pgate_series_event_free);
	g_ptr_array_add(d->events, pgate_series_event_new(now_s(), state,
							     reason));
	if (d->events->len > PGATE_SERIES_EVENTS_MAX)
		g_ptr_array_remove_range(d->events, 0, d->events->len -
					 PGATE_SERIES_EVENTS_MAX);
	if (m->p->log)
		m->p->log(m->p->log_data, m->rec->id,
			  pgate_series_state_name(state), reason);
}

static void
want_check(Move *m, const char *context, const char *state, const char *url,
	   const char *description)
{
	g_ptr_array_add(m->checks, g_strdup(context));
	g_ptr_array_add(m->checks, g_strdup(state));
	g_ptr_array_add(m->checks, g_strdup(url));
	g_ptr_array_add(m->checks, g_strdup(description));
	g_ptr_array_add(m->per_patch, NULL);
}

/* The context of a check about @what ("apply", a job's name), on
 * @target when there are several: [patchwork] context_prefix, WHAT,
 * TARGET, joined by '-' and made a slug. */
static char *
context_for(Move *m, const char *what, const char *target, guint ntargets)
{
	g_autofree char *name = ntargets > 1
		? g_strdup_printf("%s-%s", what, target) : g_strdup(what);

	return pgate_patchwork_context_from_name(m->p->cfg.context_prefix, name);
}

/* want_check() of the "apply" context. */
static void
want_apply_check(Move *m, const char *state, const char *description)
{
	g_autofree char *ctx = context_for(m, "apply", NULL, 1);

	want_check(m, ctx, state, NULL, description);
}

static void
move_clear(Move *m)
{
	g_clear_pointer(&m->plan, pgate_pipeline_plan_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Move, move_clear)

/*
 * The trust gate (trust.c) for @m's series: 1 when it may be applied,
 * m->plan then being what is applied; 0 when it may not, *@out_why
 * saying why; -1 on an error.  Whatever else applies a series asks it
 * first: a first apply, a recheck's, a rebase's.
 */
static int
gate(Move *m, char **out_why, GError **error)
{
	g_clear_pointer(&m->plan, pgate_pipeline_plan_free);
	return pgate_pipeline__trust_gate(m->p, m->rec, m->doc, &m->plan,
					  out_why, error);
}

/* The move to awaiting-approval for @why, with its pending check; no new
 * event when only the reason is the same. */
static gboolean
await_approval(Move *m, PgateSeriesState state, const char *why)
{
	if (state == PGATE_SERIES_AWAITING_APPROVAL &&
	    g_strcmp0(m->doc->reason, why) == 0)
		return FALSE;
	move_to(m, PGATE_SERIES_AWAITING_APPROVAL, why);
	if (state != PGATE_SERIES_AWAITING_APPROVAL)
		want_apply_check(m, "pending", "waiting for a maintainer's "
				 "approval before testing");
	return TRUE;
}

static gboolean
commit_move(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Move *m = payload;

	/* before the put: it compares with the document saved last */
	if (!pgate_pw_state_on_move(txn, m->p, m->rec, m->doc, error))
		return FALSE;
	if (!pgate_series_doc_put(txn, m->rec->id, m->doc, error))
		return FALSE;
	if (m->extra_key != NULL &&
	    !pgate_state_put(txn, m->extra_key, m->extra, error))
		return FALSE;
	for (guint i = 0; m->reset != NULL && i < m->reset->len; i++)
		if (!pgate_store_table_delete(txn, PGATE_STORE_TABLE_STAGE,
					      m->reset->pdata[i], error))
			return FALSE;
	for (guint i = 0; m->p->queue_checks && i + 3 < m->checks->len; i += 4) {
		const char *const *c = (const char *const *)m->checks->pdata + i;
		json_t *per = m->per_patch->pdata[i / 4];

		if (m->p->queue_check != NULL
		    ? !m->p->queue_check(txn, m->p, m->rec, c[0], c[1], c[2],
					 c[3], per, error)
		    : !pgate_outbox_queue_check(txn, m->rec, c[0], c[1], c[2],
						c[3], per, error))
			return FALSE;
	}
	if (m->mail && m->p->queue_mail != NULL &&
	    !m->p->queue_mail(txn, m->p, m->rec, m->doc, error))
		return FALSE;
	return TRUE;
}

static gboolean
save_move(Move *m, GError **error)
{
	return pgate_store_write(m->p->store, commit_move, m, error);
}

static PgateSeriesDocs *
series_state(PgateStore *store, const char *sid, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	return txn ? pgate_series_docs_read(txn, sid, error) : NULL;
}

/* Cancels the jobs of series @sid (@s: its documents) that are not done,
 * saying @why. */
static gboolean
cancel_jobs(PgatePipeline *p, const char *sid, PgateSeriesDocs *s,
	    const char *why, GError **error)
{
	for (guint i = 0; i < s->ci->len; i++) {
		PgateCiDoc *doc = s->ci->pdata[i];
		g_autoptr(GError) local = NULL;

		if (doc->state == PGATE_JOB_DONE)
			continue;
		if (!p->ci && !pgate_pipeline_ci_backend(p, error))
			return FALSE;
		if (!pgate_pipeline_ci_cancel(p->store, p->ci, doc, why,
					      &local)) {
			/* the job may run on; the series goes on all the
			 * same */
			if (p->log)
				p->log(p->log_data, sid, "cancel-failed",
				       local->message);
		}
	}
	return TRUE;
}

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
		g_autoptr(PgateSeriesDocs) all = series_state(
			p->store, sid, error);
		DropOrphan d = { prefix, keys };
		PgatePipeline *owner = pipeline_of(p, sid);

		if (all == NULL)
			return FALSE;
		if (owner->ci_cfg.enabled &&
		    !cancel_jobs(owner, sid, all, "cancelled: the series is "
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

static const char *
check_state_of(const char *verdict)
{
	if (g_strcmp0(verdict, "success") == 0)
		return "success";
	if (g_strcmp0(verdict, "fail") == 0)
		return "fail";
	/* warning, and error (the job could not run: not the series'
	 * fault, but nobody should think it passed) */
	return "warning";
}

static char *
first_line(const char *s, gsize max)
{
	const char *nl = s ? strchr(s, '\n') : NULL;
	gsize n = s ? (nl ? (gsize)(nl - s) : strlen(s)) : 0;

	return g_strndup(s ? s : "", MIN(n, max));
}

/* The routing keys of @p's [apply] (once), and its MAINTAINERS file
 * when one is named (once: a pipeline lives one command, or the
 * daemon until a reload). */
static gboolean
route_config(PgatePipeline *p, GError **error)
{
	if (p->kf == NULL)
		return TRUE;	/* (a pipeline made by hand: no routing) */
	if (!p->route_loaded) {
		if (!pgate_route_config_load(p->kf, &p->route, error))
			return FALSE;
		p->route_loaded = TRUE;
	}
	if (!p->maint_read && p->route.maintainers != NULL) {
		p->maint = pgate_pipeline_maintainers_read(&p->apply, &p->route,
							   error);
		if (p->maint == NULL)
			return FALSE;
		p->maint_read = TRUE;
	}
	return TRUE;
}

/* Where @rec goes in @p: %NULL (without error) when no routing key is
 * set, the configured branches as always. */
static PgateRoute *
route_of(PgatePipeline *p, const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(GPtrArray) prefixes = NULL, files = NULL;

	if (!route_config(p, error))
		return NULL;
	/* the implicit project without routing keys: as before routing
	 * (a named project's documents always name the rule) */
	if (!pgate_route_config_routes(&p->route) && p->project == NULL)
		return NULL;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL ||
		    !pgate_route_series_input(txn, rec, &prefixes, &files,
					      error))
			return NULL;
	}
	return pgate_route_decide(&p->route, p->apply.branches,
				  rec->base_commit, prefixes, files, p->maint);
}

PgateRoute *
pgate_pipeline_route(PgateStore *store, const PgateProject *pr,
		     const char *sid, GError **error)
{
	PgatePipeline p;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(GError) local = NULL;
	PgateRoute *r = NULL;

	memset(&p, 0, sizeof p);
	p.store = store;
	p.kf = pr->kf;
	p.project = pr->name != NULL ? pr : NULL;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);

		if (txn == NULL)
			return NULL;
		rec = pgate_store_series_get(txn, sid, error);
		if (rec == NULL)
			return NULL;
	}
	if (!pgate_pipeline_apply_config_load(pr->kf, &p.apply, error))
		return NULL;
	if (p.apply.enabled) {
		r = route_of(&p, rec, &local);
		if (r == NULL && local == NULL) {
			/* no routing key: the branches, as ever */
			PgateRouteConfig none = { 0 };

			r = pgate_route_decide(&none, p.apply.branches,
					       rec->base_commit, NULL, NULL,
					       NULL);
		}
	}
	pgate_pipeline_apply_config_clear(&p.apply);
	pgate_route_config_clear(&p.route);
	g_strfreev(p.maint);
	if (local != NULL)
		g_propagate_error(error, g_steal_pointer(&local));
	return r;
}

/* %FALSE (with why) when an attempt of @docs went wrong for reasons of
 * ours: a target that could not be tried (status error: a branch the
 * repository lacks) while none applied, or a good result that could not
 * be published (its ref, or the push CI fetches from). */
static gboolean
infrastructure_ok(GPtrArray *docs, GError **error)
{
	const PgateApplyDoc *err = NULL;
	gboolean any_ok = FALSE;

	for (guint i = 0; i < docs->len; i++) {
		const PgateApplyDoc *d = docs->pdata[i];

		if (pgate_apply_doc_testable(d) &&
		    d->publish_error != NULL) {
			g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_IO,
				    "%s: applied, but not published: %s "
				    "(retried by the next pass)", d->target,
				    d->publish_error);
			return FALSE;
		}
		any_ok |= pgate_apply_doc_testable(d);
		if ((d->has & PGATE_APPLY_DOC_STATUS) &&
		    d->status == PGATE_APPLY_ERROR && err == NULL)
			err = d;
	}
	if (err != NULL && !any_ok) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] %s: %s", err->target,
			    err->failure && err->failure->reason
			    ? err->failure->reason : "could not be tried");
		return FALSE;
	}
	return TRUE;
}

static gboolean
step_apply_on(Move *m, const char *only_branch, GError **error)
{
	PgatePipeline *p = m->p;
	g_autoptr(GPtrArray) docs = NULL;
	g_autoptr(GPtrArray) ok = g_ptr_array_new();
	g_autoptr(GString) failures = g_string_new(NULL);
	g_autoptr(PgateRoute) route = NULL;

	g_return_val_if_fail(m->plan != NULL, FALSE);	/* gate() said yes */
	if (!p->apply.enabled) {
		move_to(m, PGATE_SERIES_SKIPPED,
			"no [apply] repository configured");
		return TRUE;
	}
	if (p->cfg.max_patches > 0 &&
	    m->plan->items->len > p->cfg.max_patches) {
		g_autofree char *why = g_strdup_printf(
			"%u patches with its prerequisites: over [pipeline] "
			"max_patches (%u)", m->plan->items->len,
			p->cfg.max_patches);

		move_to(m, PGATE_SERIES_SKIPPED, why);
		want_apply_check(m, "warning", why);
		return TRUE;
	}
	/* routing (docs/pipeline.md): which branches; a rebase asked for
	 * names its own */
	if (only_branch == NULL) {
		g_autoptr(GError) local = NULL;

		route = route_of(p, m->rec, &local);
		if (route == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (route != NULL && route->skip != NULL) {
			/* not the series' failure: a tree or paths this
			 * project does not have */
			move_to(m, PGATE_SERIES_SKIPPED, route->skip);
			return TRUE;
		}
	}
	docs = pgate_pipeline_apply_routed(p->store, &p->apply, m->rec->id,
					   only_branch, route, m->plan, error);
	if (docs == NULL)
		return FALSE;
	/* ours, not the patch's (issue #41): a target that could not be
	 * tried, or a result that could not be published where CI fetches
	 * it, is retried by the next pass and never reported as the
	 * series' failure */
	if (!infrastructure_ok(docs, error))
		return FALSE;
	for (guint i = 0; i < docs->len; i++) {
		PgateApplyDoc *doc = docs->pdata[i];
		const PgateApplyFailure *f = doc->failure;

		if (pgate_apply_doc_testable(doc)) {
			g_ptr_array_add(ok, doc);
			continue;
		}
		if (failures->len)
			g_string_append(failures, "; ");
		g_string_append_printf(failures, "%s: %s", doc->target,
				       (doc->has & PGATE_APPLY_DOC_STATUS)
				       ? pgate_apply_status_name(doc->status)
				       : "?");
		if (f != NULL) {
			g_string_append_printf(failures, " at patch %d",
					       (int)f->patch);
			if (f->file)
				g_string_append_printf(failures, " (%s)", f->file);
			if (f->reason)
				g_string_append_printf(failures, ": %s", f->reason);
		}
	}
	g_clear_pointer(&m->doc->apply, g_ptr_array_unref);
	m->doc->apply = g_ptr_array_ref(docs);
	if (ok->len == 0) {
		move_to(m, PGATE_SERIES_APPLY_FAILED, failures->str);
		want_apply_check(m, "fail", failures->str);
		m->mail = TRUE;
		return TRUE;
	}
	{
		g_autofree char *d = g_strdup_printf("applied to %s%s",
			((PgateApplyDoc *)ok->pdata[0])->target,
			ok->len > 1 ? " and others" : "");

		want_apply_check(m, "success", d);
	}
	if (!p->ci_cfg.enabled) {
		move_to(m, PGATE_SERIES_DONE, "applied; no CI configured");
		return TRUE;
	}
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return FALSE;
	for (guint i = 0; i < ok->len; i++) {
		const PgateApplyDoc *adoc = ok->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = pgate_pipeline_ci_submit(
			p->store, &p->apply, &p->ci_cfg, p->ci, m->rec,
			adoc->target, adoc, error);
		g_autofree char *ctx = NULL, *d = NULL;

		if (cdoc == NULL)
			return FALSE;
		ctx = context_for(m, p->ci_cfg.job, adoc->target, ok->len);
		d = g_strdup_printf("%s queued on %s", p->ci_cfg.job,
				    adoc->target);
		want_check(m, ctx, "pending", NULL, d);
	}
	move_to(m, PGATE_SERIES_TESTING, NULL);
	return TRUE;
}

static gboolean
step_apply(Move *m, GError **error)
{
	return step_apply_on(m, NULL, error);
}

/* A job run per patch: each patch gets its own commit's verdict (the
 * apply document maps commits to patches).  Returns: (transfer full):
 * {MSGID: {state, description}}. */
static json_t *
per_patch_checks(const PgateCiDoc *doc, const PgateApplyDoc *ad)
{
	json_t *per = json_object();

	for (guint ci = 0; ci < doc->commits->len; ci++) {
		const PgateCiDocCommit *c = doc->commits->pdata[ci];
		const char *v = pgate_verdict_name(c->verdict);
		g_autofree char *w = first_line(c->reason, 150);

		for (guint pi = 0; ad && ad->patches && pi < ad->patches->len; pi++) {
			const PgateApplyDocPatch *pp = ad->patches->pdata[pi];
			g_autofree char *pd = NULL;

			if (g_strcmp0(pp->commit, c->commit) != 0)
				continue;
			pd = g_strdup_printf("%s on %s, patch %u: %s%s%s",
					     doc->job, doc->target, pi + 1, v,
					     *w ? " - " : "", w);
			json_object_set_new(per, pp->msgid, json_pack(
				"{s:s,s:s}", "state", check_state_of(v),
				"description", pd));
		}
	}
	return per;
}

/* ---- infrastructure errors (docs/pipeline.md, "Test") ----
 *
 * A job whose verdict is error failed for a reason of its own (the
 * sandbox, the runner's timeout, Jenkins lost, a full disk), not the
 * patch's: it is submitted again, [ci] retries times at most.  The tries
 * made are kept in SERIES/retry/TARGET/JOB ({"tries": N}). */

/* "SERIES/retry/TARGET/JOB" of "SERIES/ci/TARGET/JOB" (transfer full) */
static char *
retry_key(const char *ci_key)
{
	const char *ci = ci_key ? strstr(ci_key, "/ci/") : NULL;

	if (ci == NULL)
		return NULL;
	return g_strdup_printf("%.*s/retry/%s", (int)(ci - ci_key), ci_key,
			       ci + 4);
}

/* How many times job @ci_key was tried (1 before any retry). */
static guint
job_tries(PgateStore *store, const char *ci_key)
{
	g_autofree char *key = retry_key(ci_key);
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(json_t) doc = NULL;
	json_int_t n;

	if (key == NULL || (txn = pgate_store_begin_read(store, NULL)) == NULL)
		return 1;
	doc = pgate_state_get(txn, key, NULL);
	n = json_integer_value(json_object_get(doc, "tries"));
	return n > 1 ? (guint)n : 1;
}

typedef struct {
	const char *key;
	guint tries;
} SetTries;

static gboolean
set_tries(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const SetTries *s = payload;
	g_autoptr(json_t) doc = json_pack("{s:i}", "tries", (int)s->tries);

	return pgate_state_put(txn, s->key, doc, error);
}

static gboolean
job_is_error(const PgateCiDoc *doc)
{
	return doc->state == PGATE_JOB_DONE && !doc->cancelled &&
	       (doc->has & PGATE_CI_DOC_VERDICT) &&
	       doc->verdict == PGATE_VERDICT_ERROR;
}

/* Submits again the jobs of @all whose verdict is error and that have
 * tries left, each with a check "infrastructure error, retrying".
 * *@out_retried: how many. */
static gboolean
retry_errors(Move *m, const PgateSeriesDocs *all, guint *out_retried,
	     GError **error)
{
	PgatePipeline *p = m->p;

	*out_retried = 0;
	for (guint i = 0; i < all->ci->len; i++) {
		const PgateCiDoc *doc = all->ci->pdata[i];
		const PgateApplyDoc *adoc;
		g_autoptr(PgateCiDoc) again = NULL;
		g_autofree char *rkey = NULL, *ctx = NULL, *d = NULL;
		g_autofree char *why = NULL;
		guint tries;
		SetTries st;

		if (!job_is_error(doc))
			continue;
		tries = job_tries(p->store, doc->key);
		adoc = pgate_series_docs_apply(all, doc->target);
		rkey = retry_key(doc->key);
		if (tries > p->ci_cfg.retries || adoc == NULL || rkey == NULL)
			continue;
		why = first_line(doc->reason, 120);
		st.key = rkey;
		st.tries = tries + 1;
		/* the count first: a crash after the submission retries
		 * once less, never once more */
		if (!pgate_store_write(p->store, set_tries, &st, error))
			return FALSE;
		again = pgate_pipeline_ci_submit(p->store, &p->apply, &p->ci_cfg,
						 p->ci, m->rec, doc->target,
						 adoc, error);
		if (again == NULL)
			return FALSE;
		ctx = context_for(m, doc->job, doc->target, all->ci->len);
		d = g_strdup_printf("%s on %s: infrastructure error, retrying "
				    "(try %u of %u)%s%s", doc->job, doc->target,
				    tries + 1, p->ci_cfg.retries + 1,
				    *why ? " - " : "", why);
		want_check(m, ctx, "warning", doc->url, d);
		if (p->log)
			p->log(p->log_data, m->rec->id, "retry", d);
		(*out_retried)++;
	}
	return TRUE;
}

/* Queues the final check of job @doc, one of @ntargets (@all: the
 * series' documents).  Returns: (transfer full): its description. */
static char *
want_job_check(Move *m, const PgateCiDoc *doc, guint ntargets,
	       const PgateSeriesDocs *all)
{
	const char *verdict = (doc->has & PGATE_CI_DOC_VERDICT)
		? pgate_verdict_name(doc->verdict) : NULL;
	g_autofree char *ctx = NULL, *why = NULL;
	char *d;

	ctx = context_for(m, doc->job, doc->target, ntargets);
	why = first_line(doc->reason, 150);
	if (job_is_error(doc))
		/* never the patch's fault: said so, posted as warning */
		d = g_strdup_printf("%s on %s: infrastructure error, gave up "
				    "after %u %s%s%s", doc->job, doc->target,
				    job_tries(m->p->store, doc->key),
				    job_tries(m->p->store, doc->key) == 1
				    ? "try" : "tries", *why ? " - " : "", why);
	else
		d = g_strdup_printf("%s on %s: %s%s%s", doc->job, doc->target,
				    verdict ? verdict : "?", *why ? " - " : "",
				    why);
	{
		/* a backend without a page of its own (local): the job's log
		 * page on the site, [report] public_url */
		g_autofree char *site_url = doc->url ? NULL
			: pgate_pipeline_site_job_url_kf(m->p->kf, doc->key);

		/* the results against the version before, when it had
		 * some (docs/report-site.md) */
		g_autoptr(PgateStoreTxn) txn = m->rec->supersedes
			? pgate_store_begin_read(m->p->store, NULL) : NULL;
		g_autofree char *cmp = txn ? pgate_pipeline_site_compare_text(
			txn, m->p->state_dir, m->rec) : NULL;

		g_autofree char *desc = cmp ? g_strdup_printf("%s; %s", d, cmp)
					    : NULL;

		want_check(m, ctx, check_state_of(verdict),
			   doc->url ? doc->url : site_url, desc ? desc : d);
	}
	if (doc->commits != NULL && doc->commits->len > 0) {
		json_t **last = (json_t **)&g_ptr_array_index(
			m->per_patch, m->per_patch->len - 1);

		json_decref(*last);
		*last = per_patch_checks(doc, pgate_series_docs_apply(
						      all, doc->target));
	}
	return d;
}

/*
 * A series superseded while its checks are pending: their last word.
 * Patchwork keeps the newest check of a context, and a pending one left
 * there says "being tested" for ever.  So every job of a series in
 * testing gets a final check, and so does the apply check of a series
 * awaiting approval: `warning` (not `success`: nothing was shown to
 * work; not `fail`: nothing was shown broken), "superseded by v3 before
 * the build finished".  A job that did finish (one target of several)
 * reports its verdict.  @all: the documents after the cancellation.
 */
static void
want_superseded_checks(Move *m, PgateStoreTxn *txn, PgateSeriesState state,
		       const PgateSeriesDocs *all)
{
	g_autoptr(PgateSeriesRec) newer = pgate_store_series_get(
		txn, m->rec->superseded_by, NULL);
	g_autofree char *by = newer != NULL
		? g_strdup_printf("superseded by v%u", newer->version)
		: g_strdup("superseded by a newer version");

	if (state == PGATE_SERIES_AWAITING_APPROVAL) {
		g_autofree char *d = g_strdup_printf(
			"%s before a maintainer approved it", by);

		want_apply_check(m, "warning", d);
		return;
	}
	if (state != PGATE_SERIES_TESTING)
		return;
	for (guint i = 0; i < all->ci->len; i++) {
		const PgateCiDoc *doc = all->ci->pdata[i];
		g_autofree char *ctx = NULL, *d = NULL;

		if (doc->state == PGATE_JOB_DONE && !doc->cancelled) {
			g_free(want_job_check(m, doc, all->ci->len, all));
			continue;
		}
		ctx = context_for(m, doc->job, doc->target, all->ci->len);
		d = all->ci->len > 1
			? g_strdup_printf("%s before the %s on %s finished", by,
					  doc->job, doc->target)
			: g_strdup_printf("%s before the %s finished", by, doc->job);
		want_check(m, ctx, "warning", NULL, d);
	}
}

static gboolean
step_testing(Move *m, GError **error)
{
	PgatePipeline *p = m->p;
	g_autoptr(PgateSeriesDocs) all = series_state(p->store,
							       m->rec->id,
							       error);
	guint pending = 0, ntargets;
	gboolean no_mail = FALSE;
	g_autoptr(GString) summary = g_string_new(NULL);

	if (all == NULL)
		return FALSE;
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return FALSE;
	ntargets = all->ci->len;
	for (guint i = 0; i < all->ci->len; i++) {
		PgateCiDoc *doc = all->ci->pdata[i];
		g_autoptr(GError) local = NULL;

		if (doc->state == PGATE_JOB_DONE)
			continue;
		if (doc->state == PGATE_JOB_SUBMITTING ||
		    doc->state == PGATE_JOB_LOST) {
			/* crashed before the handle was stored, or the
			 * backend forgot the job: submit again */
			const PgateApplyDoc *adoc =
				pgate_series_docs_apply(all, doc->target);
			g_autoptr(PgateCiDoc) cdoc = adoc
				? pgate_pipeline_ci_submit(p->store, &p->apply,
							   &p->ci_cfg, p->ci,
							   m->rec, doc->target,
							   adoc, &local)
				: NULL;

			if (cdoc == NULL && local != NULL) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			pending++;
			continue;
		}
		if (p->polled != NULL && g_hash_table_contains(p->polled,
							       doc->key)) {
			/* polled with all the others at the start of the pass */
		} else if (!pgate_pipeline_ci_poll(p->store, p->ci, doc, &local)) {
			if (!pgate_error_is_transient(local)) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			if (p->log)
				p->log(p->log_data, m->rec->id, "poll-retry",
				       local->message);
		}
		if (doc->state != PGATE_JOB_DONE)
			pending++;
	}
	if (pending > 0)
		return TRUE;
	{
		guint retried = 0, errors = 0;

		if (!retry_errors(m, all, &retried, error))
			return FALSE;
		if (retried > 0)
			return TRUE;	/* still testing */
		for (guint i = 0; i < all->ci->len; i++)
			errors += job_is_error(all->ci->pdata[i]);
		/* no mail when nothing is known of the patch: every job
		 * failed for the infrastructure's reasons */
		no_mail = errors > 0 && errors == all->ci->len;
	}
	for (guint i = 0; i < all->ci->len; i++) {
		g_autofree char *d = want_job_check(m, all->ci->pdata[i],
						    ntargets, all);

		if (summary->len)
			g_string_append(summary, "; ");
		g_string_append(summary, d);
	}
	move_to(m, PGATE_SERIES_DONE, summary->str);
	m->mail = !no_mail;
	return TRUE;
}


/* ---- recheck requests (docs/pipeline.md, "Recheck") ----
 *
 * SERIES/recheck: {"pending": {"by", "jobs": [...], "rebase", "at",
 * "source"}, "rounds": N, "accepted": [at, ...], "seen": [num, ...],
 * "history": [...]}: a request waits in "pending" until the series is
 * done (or failed to apply), then runs. */

#define RECHECK_KEEP 32

static char *
recheck_key(const char *sid)
{
	return g_strdup_printf("%s/recheck", sid);
}

/* Appends @v to the array @field of @doc, keeping the newest @keep. */
static void
doc_append(json_t *doc, const char *field, json_t *v, gsize keep)
{
	json_t *a = json_object_get(doc, field);

	if (!json_is_array(a)) {
		a = json_array();
		json_object_set_new(doc, field, a);
	}
	json_array_append_new(a, v);
	while (json_array_size(a) > keep)
		json_array_remove(a, 0);
}

/* The requests accepted in the last day. */
static guint
recheck_recent(json_t *doc, gint64 now)
{
	json_t *v;
	gsize i;
	guint n = 0;

	json_array_foreach(json_object_get(doc, "accepted"), i, v)
		n += now - json_integer_value(v) < 24 * 3600;
	return n;
}

typedef struct {
	const char *sid;
	json_t *request;        /* {"by", "jobs", "rebase", "source"} */
	guint limit;            /* 0: none (the command line) */
	guint64 seen;           /* the reply's number; 0: none */
	guint64 scanned;        /* replies up to this number were read */
	gboolean accepted;      /* out */
} RecheckAdd;

static gboolean
recheck_add(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	RecheckAdd *r = payload;
	g_autofree char *key = recheck_key(r->sid);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, error);
	gint64 now = now_s();

	if (doc == NULL && error != NULL && *error != NULL)
		return FALSE;
	if (doc == NULL)
		doc = json_object();
	r->accepted = r->request != NULL &&
		      (r->limit == 0 || recheck_recent(doc, now) < r->limit);
	if (r->seen != 0)
		doc_append(doc, "seen", json_integer((json_int_t)r->seen),
			   RECHECK_KEEP * 4);
	if ((json_int_t)r->scanned >
	    json_integer_value(json_object_get(doc, "scanned")))
		json_object_set_new(doc, "scanned",
				    json_integer((json_int_t)r->scanned));
	if (r->accepted) {
		json_object_set_new(r->request, "at", json_integer(now));
		json_object_set(doc, "pending", r->request);
		doc_append(doc, "accepted", json_integer(now), RECHECK_KEEP);
		/* a finished series is visited again for it (the series,
		 * not a project's state ID: SID@NAME) */
		const char *project = NULL;
		g_autofree char *own = pgate_project_split_state_id(r->sid,
								    &project);

		if (!pgate_store_active_mark(txn, own, error))
			return FALSE;
	}
	return pgate_state_put(txn, key, doc, error);
}

gboolean
pgate_pipeline_recheck_request(PgatePipeline *p, const char *sid,
			       const char *job, const char *rebase,
			       const char *by, GError **error)
{
	g_autoptr(json_t) req = json_pack("{s:s,s:[],s:o,s:s}", "by", by,
					  "jobs", "rebase",
					  pgate_json_str_or_null(rebase),
					  "source", "command line");
	RecheckAdd r = { sid, req, 0, 0, 0, FALSE };

	if (job != NULL)
		json_array_append_new(json_object_get(req, "jobs"),
				      json_string(job));
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(PgateSeriesRec) rec = NULL;

		if (txn == NULL)
			return FALSE;
		rec = pgate_store_series_get(txn, sid, error);
		if (rec == NULL)
			return FALSE;
	}
	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	if (p->subs != NULL) {
		/* with projects: asked of every project that judged it */
		guint n = 0;

		for (guint i = 0; i < p->subs->len; i++) {
			PgatePipeline *sub = p->subs->pdata[i];
			g_autofree char *state_id = pgate_project_state_id(
				sub->project, sid);
			g_autoptr(PgateSeriesDoc) doc = NULL;
			RecheckAdd rs = { state_id, req, 0, 0, 0, FALSE };

			{
				g_autoptr(PgateStoreTxn) txn =
					pgate_store_begin_read(p->store, error);
				g_autoptr(GError) local = NULL;

				if (txn == NULL)
					return FALSE;
				doc = pgate_series_doc_get(txn, state_id,
							     &local);
				if (local != NULL) {
					g_propagate_error(error,
						g_steal_pointer(&local));
					return FALSE;
				}
			}
			if (doc == NULL)
				continue;
			if (!pgate_store_write(p->store, recheck_add, &rs,
					       error))
				return FALSE;
			n++;
		}
		if (n == 0) {
			g_set_error(error, PGATE_PIPELINE_ERROR,
				    PGATE_ERROR_NOT_FOUND,
				    "no project has judged series %s yet", sid);
			return FALSE;
		}
		return TRUE;
	}
	return pgate_store_write(p->store, recheck_add, &r, error);
}

/* A "Recheck-request: [rebase=BRANCH,] CONTEXT[, CONTEXT...]" line of
 * @own (DPDK's syntax): the request, or %NULL. */
static json_t *
recheck_line(const char *own)
{
	g_auto(GStrv) lines = g_strsplit(own, "\n", -1);

	for (guint k = 0; lines[k]; k++) {
		const char *l = lines[k];
		g_auto(GStrv) items = NULL;
		json_t *req;

		while (*l == ' ' || *l == '\t')
			l++;
		if (g_ascii_strncasecmp(l, "Recheck-request:", 16) != 0)
			continue;
		items = g_strsplit(l + 16, ",", 64);
		req = json_pack("{s:[],s:n}", "jobs", "rebase");
		for (guint i = 0; items[i]; i++) {
			char *it = g_strstrip(items[i]);

			if (*it == '\0')
				continue;
			for (const char *c = it; *c; c++)
				if (!g_ascii_isalnum(*c) && !strchr("._-/=", *c))
					goto bad;
			if (i == 0 && g_str_has_prefix(it, "rebase="))
				json_object_set_new(req, "rebase",
						    json_string(it + 7));
			else if (strchr(it, '=') == NULL)
				json_array_append_new(json_object_get(req, "jobs"),
						      json_string(it));
			else
				goto bad;
		}
		if (json_array_size(json_object_get(req, "jobs")) > 0)
			return req;
bad:
		json_decref(req);
	}
	return NULL;
}

/* Whether a request names this pipeline's job (its name, its context
 * with or without the prefix and target) or the apply step. */
static gboolean
recheck_names_job(Move *m, json_t *req)
{
	json_t *v;
	gsize i;

	json_array_foreach(json_object_get(req, "jobs"), i, v) {
		const char *j = json_string_value(v);
		g_autofree char *ctx = context_for(m, m->p->ci_cfg.job, NULL, 1);
		g_autofree char *actx = context_for(m, "apply", NULL, 1);

		if (j != NULL && (strcmp(j, m->p->ci_cfg.job) == 0 ||
				  strcmp(j, ctx) == 0 || strcmp(j, "apply") == 0 ||
				  strcmp(j, actx) == 0 ||
				  g_str_has_prefix(j, ctx)))
			return TRUE;
	}
	return FALSE;
}

/*
 * Recheck requests by mail: a reply to the cover or a patch whose own
 * text (as for approvals: no quoted text) has a Recheck-request: line,
 * from the submitter or an approver by the strict reading of From.  Each
 * reply is read once (its number kept in "seen"); one over the rate
 * limit is logged and dropped.
 */
static gboolean
recheck_from_mail(PgatePipeline *p, const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store, error);
	g_autoptr(GPtrArray) ids = NULL;
	g_autofree char *submitter = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(
		g_int64_hash, g_int64_equal, g_free, NULL);
	g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	g_autoptr(GArray) nums_found = g_array_new(FALSE, FALSE,
						   sizeof(guint64));
	/* every reply is read once: those up to "scanned" were, and each
	 * pass reads only the newer ones (a done series' review thread is
	 * not parsed again at every pass) */
	guint64 scanned = 0, newest = 0;

	if (txn == NULL)
		return FALSE;
	if (p->cfg.recheck_limit == 0)
		return TRUE;	/* none by mail */
	{
		g_autofree char *key = recheck_key(rec->id);
		g_autoptr(json_t) doc = pgate_state_get(txn, key, NULL);
		json_t *v;
		gsize i;

		json_array_foreach(json_object_get(doc, "seen"), i, v) {
			gint64 *n = g_new(gint64, 1);

			*n = json_integer_value(v);
			g_hash_table_add(seen, n);
		}
		scanned = (guint64)json_integer_value(json_object_get(
			doc, "scanned"));
	}
	ids = pgate_pipeline__reply_parents(p, txn, rec, error);
	if (ids == NULL)
		return FALSE;
	/* the submitter as trust reads the first message (a relay's user:
	 * their replies come from their own address) */
	submitter = pgate_pipeline__submitter(p, txn, rec);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(GArray) nums = pgate_store_refs_lookup(txn, ids->pdata[i],
								 NULL);

		for (guint j = 0; nums && j < nums->len; j++) {
			gint64 num = (gint64)g_array_index(nums, guint64, j);
			g_autoptr(PgateMessageRec) m = NULL;
			g_autoptr(GBytes) raw = NULL;
			g_autoptr(GError) local = NULL;
			g_autofree char *own = NULL, *addr = NULL;
			json_t *req;

			if ((guint64)num <= scanned ||
			    g_hash_table_contains(seen, &num))
				continue;
			newest = MAX(newest, (guint64)num);
			own = pgate_pipeline__reply_own_text(
				p, txn, (guint64)num, ids->pdata[i], NULL, &m,
				&raw);
			if (own == NULL)
				continue;
			req = recheck_line(own);
			if (req == NULL)
				continue;
			addr = pgate_pipeline__sender(p, raw, &local);
			if (addr == NULL ||
			    (g_ascii_strcasecmp(addr, submitter) != 0 &&
			     !pgate_pipeline__glob_match(p->cfg.approvers,
							 addr))) {
				if (p->log) {
					g_autofree char *why = g_strdup_printf(
						"reply %s: %s", m->msgid, addr == NULL
						? local->message
						: "its From is neither the submitter "
						  "nor an approver");

					p->log(p->log_data, rec->id,
					       "recheck-ignored", why);
				}
				json_decref(req);
				{
					guint64 u = (guint64)num;

					/* read once */
					g_array_append_val(nums_found, u);
					g_ptr_array_add(found, NULL);
				}
				continue;
			}
			json_object_set_new(req, "by", json_string(addr));
			json_object_set_new(req, "source", json_sprintf(
				"reply %s", m->msgid));
			{
				guint64 u = (guint64)num;

				g_array_append_val(nums_found, u);
				g_ptr_array_add(found, req);
			}
		}
	}
	g_clear_pointer(&txn, pgate_store_txn_free);
	if (found->len == 0 && newest > scanned) {
		RecheckAdd r = { rec->id, NULL, 0, 0, newest, FALSE };

		return pgate_store_write(p->store, recheck_add, &r, error);
	}
	for (guint i = 0; i < found->len; i++) {
		json_t *req = found->pdata[i];
		RecheckAdd r = { rec->id, req, p->cfg.recheck_limit,
				 g_array_index(nums_found, guint64, i), newest,
				 FALSE };

		/* req NULL: only marked seen (a request nobody may make) */
		if (!pgate_store_write(p->store, recheck_add, &r, error))
			return FALSE;
		if (req == NULL)
			continue;
		if (p->log)
			p->log(p->log_data, rec->id, r.accepted
			       ? "recheck-requested" : "recheck-refused",
			       r.accepted ? json_string_value(json_object_get(
					req, "source"))
			       : "rate limit: too many rechecks in a day");
	}
	return TRUE;
}

/* A recheck that applies the series again (on @rebase): what it applies
 * is judged again (issue #41), so a patch that joined the series after
 * its approval, or a prerequisite that changed, waits for a new one. */
static int
recheck_apply(Move *m, PgateSeriesState state, const char *rebase,
	      GError **error)
{
	g_autofree char *why = NULL;
	int g = gate(m, &why, error);

	if (g < 0)
		return -1;
	if (g == 0) {
		await_approval(m, state, why);
		return 1;
	}
	return step_apply_on(m, rebase, error) ? 1 : -1;
}

/*
 * A recheck request of a series that is done (or failed to apply) runs
 * now: with rebase=BRANCH (or after a failed apply) the series is
 * applied again (on BRANCH only), else the jobs are submitted again on
 * the targets it was applied to.  The new results replace the old: new
 * checks in the same contexts, a new reply.  Returns 1 when @m moved,
 * 0 when not, -1 on error.
 */
static int
step_recheck(Move *m, PgateSeriesState state, GError **error)
{
	PgatePipeline *p = m->p;
	g_autofree char *key = recheck_key(m->rec->id);
	g_autoptr(json_t) doc = NULL;
	g_autoptr(PgateSeriesDocs) all = NULL;
	json_t *req;
	const char *rebase, *by;
	g_autofree char *why = NULL;
	guint submitted = 0;

	if (state != PGATE_SERIES_DONE &&
	    state != PGATE_SERIES_APPLY_FAILED)
		return 0;
	if (!recheck_from_mail(p, m->rec, error))
		return -1;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return -1;
		doc = pgate_state_get(txn, key, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return -1;
		}
	}
	req = json_object_get(doc, "pending");
	if (!json_is_object(req))
		return 0;
	json_incref(req);
	json_object_del(doc, "pending");
	doc_append(doc, "history", req, RECHECK_KEEP);
	m->extra_key = g_strdup(key);
	m->extra = json_incref(doc);
	rebase = json_string_value(json_object_get(req, "rebase"));
	by = json_string_value(json_object_get(req, "by"));
	if (!recheck_names_job(m, req)) {
		if (p->log)
			p->log(p->log_data, m->rec->id, "recheck-ignored",
			       "it names no job of this series");
		return 1;	/* the document is stored, nothing moves */
	}
	json_object_set_new(doc, "rounds", json_integer(
		json_integer_value(json_object_get(doc, "rounds")) + 1));
	why = g_strdup_printf("recheck requested by %s%s%s", by ? by : "?",
			      rebase ? ", rebased on " : "",
			      rebase ? rebase : "");
	all = series_state(p->store, m->rec->id, error);
	if (all == NULL)
		return -1;
	m->reset = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < all->ci->len; i++) {
		g_autofree char *rk = retry_key(
			((PgateCiDoc *)all->ci->pdata[i])->key);

		if (rk != NULL)
			g_ptr_array_add(m->reset, g_steal_pointer(&rk));
	}
	if (p->log)
		p->log(p->log_data, m->rec->id, "recheck", why);
	if (rebase != NULL || state == PGATE_SERIES_APPLY_FAILED ||
	    !p->ci_cfg.enabled)
		return recheck_apply(m, state, rebase, error);
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return -1;
	for (guint i = 0; i < all->apply->len; i++) {
		const PgateApplyDoc *adoc = all->apply->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = NULL;
		g_autofree char *ctx = NULL, *d = NULL;

		if (!pgate_apply_doc_testable(adoc))
			continue;
		cdoc = pgate_pipeline_ci_submit(p->store, &p->apply, &p->ci_cfg,
						p->ci, m->rec, adoc->target,
						adoc, error);
		if (cdoc == NULL)
			return -1;
		ctx = context_for(m, p->ci_cfg.job, adoc->target,
				  all->ci->len > 0 ? all->ci->len : 1);
		d = g_strdup_printf("%s queued again on %s (%s)", p->ci_cfg.job,
				    adoc->target, why);
		want_check(m, ctx, "pending", NULL, d);
		submitted++;
	}
	if (submitted == 0)
		return recheck_apply(m, state, NULL, error);
	move_to(m, PGATE_SERIES_TESTING, why);
	return 1;
}

/* ---- merged upstream (docs/pipeline.md, "Merged upstream") ---- */

/* The number of patches @rec has when complete. */
static guint
series_size(const PgateSeriesRec *rec)
{
	return MAX(rec->total, rec->patches->len);
}

/* "master 1a2b3c4d5e6f, next 9f8e7d6c5b4a" for @matches (at most 3
 * commits named) (transfer full) */
static char *
matches_text(GPtrArray *matches)
{
	GString *s = g_string_new(NULL);
	guint changes = 0;

	for (guint i = 0; i < matches->len; i++) {
		const PgateUpstreamMatch *um = matches->pdata[i];

		changes += um->changes;
		if (i == 3) {
			g_string_append(s, ", ...");
			continue;
		}
		if (i > 3)
			continue;
		g_string_append_printf(s, "%s%s %.12s (%s)", i ? ", " : "",
				       um->branch, um->commit,
				       pgate_upstream_rule_to_string(um->rule));
	}
	if (changes > 0)
		g_string_append_printf(s, "; %u applied with changes", changes);
	return g_string_free(s, FALSE);
}

/* The final checks of jobs a merge stops: `warning`, "merged upstream
 * before the build finished" (a job that did finish: its verdict). */
static void
want_merged_checks(Move *m, const PgateSeriesDocs *all,
		   const char *what)
{
	for (guint i = 0; i < all->ci->len; i++) {
		const PgateCiDoc *doc = all->ci->pdata[i];
		g_autofree char *ctx = NULL, *d = NULL;

		if (doc->state == PGATE_JOB_DONE && !doc->cancelled) {
			g_free(want_job_check(m, doc, all->ci->len, all));
			continue;
		}
		ctx = context_for(m, doc->job, doc->target, all->ci->len);
		d = g_strdup_printf("%s before the %s finished", what, doc->job);
		want_check(m, ctx, "warning", NULL, d);
	}
}

/* Stops what a series in @state has running (its jobs cancelled, their
 * pending checks made final), for a move to @to. */
static gboolean
stop_for_merge(Move *m, PgateSeriesState state, const char *what,
	       GError **error)
{
	g_autoptr(PgateSeriesDocs) all = NULL;

	if (state != PGATE_SERIES_TESTING)
		return TRUE;
	all = series_state(m->p->store, m->rec->id, error);
	if (all == NULL ||
	    !cancel_jobs(m->p, m->rec->id, all, "cancelled: merged upstream",
			 error))
		return FALSE;
	g_clear_pointer(&all, pgate_series_docs_free);
	all = series_state(m->p->store, m->rec->id, error);
	if (all == NULL)
		return FALSE;
	want_merged_checks(m, all, what);
	return TRUE;
}

/* The newest version after @rec that was merged, or %NULL. */
static PgateSeriesRec *
merged_successor(PgatePipeline *p, const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store, error);
	g_autofree char *next = NULL;
	PgateSeriesRec *found = NULL;

	if (txn == NULL)
		return NULL;
	next = g_strdup(rec->superseded_by);
	for (guint hops = 0; next != NULL && hops < 64; hops++) {
		g_autoptr(PgateSeriesRec) s = pgate_store_series_get(txn, next,
								     NULL);
		g_autoptr(PgateSeriesDoc) d = NULL;

		if (s == NULL)
			break;
		d = pgate_series_doc_get(txn, s->id, NULL);
		if (d != NULL && d->state == PGATE_SERIES_MERGED) {
			if (found != NULL)
				pgate_series_rec_free(found);
			found = g_steal_pointer(&s);
			g_free(next);
			next = g_strdup(found->superseded_by);
			continue;
		}
		g_free(next);
		next = g_strdup(s->superseded_by);
	}
	return found;
}

/*
 * Merge detection's part of a pass: a series whose newer version was
 * merged becomes superseded-by-merge; one whose every patch is matched
 * upstream becomes merged.  Either stops its jobs.  Returns 1 when
 * @m moved, 0 when not, -1 on error.
 */
static int
step_upstream(Move *m, PgateSeriesState state, GError **error)
{
	PgatePipeline *p = m->p;
	const PgateSeriesRec *rec = m->rec;
	g_autoptr(PgateSeriesRec) newer = NULL;
	g_autoptr(GPtrArray) matches = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *why = NULL, *text = NULL;
	guint k = 0, n = series_size(rec);

	if (state == PGATE_SERIES_MERGED && rec->superseded_by == NULL)
		return 0;
	if (rec->superseded_by != NULL &&
	    state != PGATE_SERIES_SUPERSEDED_BY_MERGE) {
		newer = merged_successor(p, rec, &local);
		if (newer == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return -1;
		}
	}
	if (newer != NULL) {
		why = g_strdup_printf("v%u (%s) was merged upstream",
				      newer->version, newer->id);
		if (!stop_for_merge(m, state, why, error))
			return -1;
		move_to(m, PGATE_SERIES_SUPERSEDED_BY_MERGE, why);
		return 1;
	}
	if (state == PGATE_SERIES_MERGED ||
	    state == PGATE_SERIES_SUPERSEDED_BY_MERGE)
		return 0;
	if (!pgate_series_state_is_final(state) ||
	    state == PGATE_SERIES_INCOMPLETE) {
		/* what came after its commits were read */
		if (!pgate_upstream_series_check(p->store, &p->upstream, rec,
						 &k, error))
			return -1;
	}
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return -1;
		matches = pgate_upstream_series_read(txn, rec, error);
		if (matches == NULL)
			return -1;
	}
	k = matches->len;
	if (n == 0 || k < n)
		return 0;
	text = matches_text(matches);
	why = g_strdup_printf("%u of %u patches merged: %s", k, n, text);
	if (!stop_for_merge(m, state, "merged upstream", error))
		return -1;
	move_to(m, PGATE_SERIES_MERGED, why);
	if (p->upstream_merged != NULL)
		g_ptr_array_add(p->upstream_merged, g_strdup(rec->id));
	return 1;
}

static void
upstream_log(gpointer data, const char *branch, const char *what,
	     const char *detail)
{
	PgatePipeline *p = data;
	g_autofree char *w = g_strdup_printf("upstream-%s", what);
	g_autofree char *d = g_strdup_printf("%s: %s", branch, detail);

	if (p->log)
		p->log(p->log_data, "-", w, d);
}

static gboolean
run_series(PgatePipeline *p, PgateSeriesRec *rec, guint *testing,
	   GError **error)
{
	g_autoptr(GPtrArray) checks = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) per_patch = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	g_autoptr(PgateSeriesDoc) doc = NULL;
	g_auto(Move) m = { p, rec, NULL, checks, per_patch, FALSE, NULL, NULL,
			   NULL, NULL };
	g_autofree char *extra_key = NULL;
	g_autoptr(json_t) extra = NULL;
	g_autoptr(GPtrArray) reset = NULL;
	g_autofree char *untrusted = NULL;  /* why, when not trusted */
	PgateSeriesState state;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return FALSE;
		doc = pgate_series_doc_get(txn, rec->id, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	if (doc == NULL) {
		doc = pgate_series_doc_new(PGATE_SERIES_NEW);
		doc->since = now_s();
		doc->has |= PGATE_SERIES_DOC_SINCE;
	}
	m.doc = doc;
	state = doc->state;

	if (p->upstream.enabled && rec->kind == PGATE_SERIES_KIND_PATCHES) {
		int moved = step_upstream(&m, state, error);

		if (moved < 0)
			return FALSE;
		if (moved > 0)
			goto save;
		if (state == PGATE_SERIES_MERGED ||
		    state == PGATE_SERIES_SUPERSEDED_BY_MERGE)
			goto out;
	}

	if (rec->superseded_by != NULL &&
	    state != PGATE_SERIES_SUPERSEDED &&
	    !pgate_series_state_is_final(state)) {
		g_autoptr(PgateSeriesDocs) all = series_state(
			p->store, rec->id, error);
		g_autofree char *why = g_strdup_printf("superseded by %s",
						       rec->superseded_by);

		if (all == NULL ||
		    !cancel_jobs(p, rec->id, all, "cancelled: superseded by a "
				 "newer version", error))
			return FALSE;
		{
			g_autoptr(PgateStoreTxn) txn =
				pgate_store_begin_read(p->store, error);

			if (txn == NULL)
				return FALSE;
			want_superseded_checks(&m, txn, state, all);
		}
		move_to(&m, PGATE_SERIES_SUPERSEDED, why);
		goto save;
	}
	{
		int moved = step_recheck(&m, state, error);

		extra_key = m.extra_key;
		extra = m.extra;
		reset = m.reset;
		if (moved < 0)
			return FALSE;
		if (moved > 0)
			goto save;
	}
	/* the missing patches came after all, or what looked incomplete is
	 * a partial re-roll whose link to the version before it was made
	 * after it was judged: test it now */
	if (state == PGATE_SERIES_INCOMPLETE &&
	    (rec->flags & (PGATE_SERIES_FLAG_COMPLETE |
			   PGATE_SERIES_FLAG_PARTIAL_REROLL)))
		state = PGATE_SERIES_NEW;
	else if (pgate_series_state_is_final(state)) {
		if (!pgate_pw_state_on_final(p, rec, state, error))
			return FALSE;
		goto out;
	}
	if (rec->kind == PGATE_SERIES_KIND_PULL) {
		move_to(&m, PGATE_SERIES_SKIPPED,
			"pull requests are not applied");
		goto save;
	}
	if (state == PGATE_SERIES_TESTING) {
		if (!step_testing(&m, error))
			return FALSE;
		goto save;
	}
	/* bounded work (issue #41): a series too large to apply and test
	 * is told so once, before anything reads its patches */
	if (p->cfg.max_patches > 0 && series_size(rec) > p->cfg.max_patches) {
		g_autofree char *why = g_strdup_printf(
			"%u patches: over [pipeline] max_patches (%u)",
			series_size(rec), p->cfg.max_patches);

		move_to(&m, PGATE_SERIES_SKIPPED, why);
		want_apply_check(&m, "warning", why);
		goto save;
	}
	if (!(rec->flags & PGATE_SERIES_FLAG_COMPLETE) &&
	    !(rec->flags & PGATE_SERIES_FLAG_PARTIAL_REROLL)) {
		g_autofree char *why = g_strdup_printf(
			"%u of %u patches", rec->patches->len, rec->total);

		if (now_s() - rec->date >= p->cfg.wait_complete) {
			move_to(&m, PGATE_SERIES_INCOMPLETE, why);
			want_apply_check(&m, "warning",
					 "not tested: the series is incomplete");
			goto save;
		}
		if (state == PGATE_SERIES_WAITING)
			goto out;
		move_to(&m, PGATE_SERIES_WAITING, why);
		goto save;
	}
	if (doc->rejected) {
		move_to(&m, PGATE_SERIES_REJECTED, doc->rejected_by);
		goto save;
	}
	{
		gboolean fixed = doc->approved && doc->approved_msgs == NULL;
		int g = gate(&m, &untrusted, error);
		g_autofree char *who = NULL;
		g_autoptr(GError) local = NULL;
		guint64 num = 0;
		int said;

		if (g < 0)
			return FALSE;
		if (g > 0)
			goto apply;
		/* a maintainer's answer by mail, when it is newer than the
		 * approval the series has (a reply older than it, or the
		 * reply that gave it, decides nothing new) */
		said = pgate_pipeline__reply_decision(p, rec, &who, &num,
						      &local);
		if (said != 0 && doc->approved &&
		    (doc->has & PGATE_SERIES_DOC_APPROVED_UPTO) &&
		    num <= (guint64)doc->approved_upto)
			said = 0;
		if (said > 0) {
			/* it saw what had arrived before it */
			pgate_series_doc_approve(doc, who, (gint64)num);
			g_clear_pointer(&untrusted, g_free);
			g = gate(&m, &untrusted, error);
			if (g < 0)
				return FALSE;
			if (g > 0)
				goto apply;
		} else if (said < 0) {
			doc->rejected = TRUE;
			g_free(doc->rejected_by);
			doc->rejected_by = g_strdup(who);
			doc->has |= PGATE_SERIES_DOC_REJECTED_BY;
			move_to(&m, PGATE_SERIES_REJECTED, who);
			goto save;
		}
		fixed &= doc->approved_msgs != NULL;
		if (!await_approval(&m, state, untrusted) && !fixed)
			goto out;
		goto save;
	}
apply:
	if (!step_apply(&m, error))
		return FALSE;
save:
	if (!save_move(&m, error))
		return FALSE;
out:
	if (doc->state == PGATE_SERIES_TESTING)
		(*testing)++;
	return TRUE;
}

PgatePipelinePlan *
pgate_pipeline_may_run(PgatePipeline *p, const char *sid, GError **error)
{
	g_autoptr(PgateSeriesDoc) doc = NULL;
	g_autoptr(PgatePipelinePlan) plan = NULL;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autofree char *why = NULL;
	int g;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return NULL;
		rec = pgate_store_series_get(txn, sid, &local);
		if (rec == NULL) {
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_NOT_FOUND))
				g_set_error(error, PGATE_PIPELINE_ERROR,
					    PGATE_ERROR_NOT_FOUND,
					    "no series %s", sid);
			else
				g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		doc = pgate_series_doc_get(txn, sid, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
	}
	if (doc == NULL)
		doc = pgate_series_doc_new(PGATE_SERIES_NEW);
	g = pgate_pipeline__trust_gate(p, rec, doc, &plan, &why, error);
	if (g < 0)
		return NULL;
	if (g == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_NOT_ALLOWED,
			    "series %s may not run before a maintainer approves "
			    "it ('patchgate approve %s'): %s", sid, sid, why);
		return NULL;
	}
	return g_steal_pointer(&plan);
}

gboolean
pgate_pipeline_ci_backend(PgatePipeline *p, GError **error)
{
	if (p->ci != NULL)
		return TRUE;
	p->ci = pgate_ci_backend_new(p->ci_cfg.backend, p->kf, p->ci_cfg.group,
				     p->state_dir, error);
	return p->ci != NULL;
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
							: pgate_pipeline_queue_mail;
		}
	}
	p->projects = g_steal_pointer(&projects);
	p->subs = g_steal_pointer(&subs);
	return TRUE;
}

/* A pass with projects: each project's pipeline over the series that
 * are its own, each seen under its state ID (SID@NAME) so that every
 * document, check and mail of it is the project's. */
static gboolean
run_projects(PgatePipeline *p, const char *only, PgatePipelineStats *stats,
	     GError **error)
{
	g_auto(Selection) sel = { 0 };
	g_auto(DeferSync) sync = { NULL };
	GPtrArray *ids;

	if (!series_select(p, only, &sel, error))
		return FALSE;
	ids = sel.ids;
	defer_sync_begin(&sync, p->store, &sel);
	for (guint k = 0; k < p->subs->len; k++) {
		PgatePipeline *sub = p->subs->pdata[k];

		/* each series polls its own jobs (the backends differ) */
		g_clear_pointer(&sub->polled, g_hash_table_unref);
		sub->polled = g_hash_table_new_full(g_str_hash, g_str_equal,
						    g_free, NULL);
		for (guint i = 0; i < ids->len; i++) {
			g_autoptr(PgateSeriesRec) rec = NULL;
			g_autoptr(GError) local = NULL;
			g_autofree char *why = NULL, *state_id = NULL;
			PgateSeriesRec view;

			{
				g_autoptr(PgateStoreTxn) txn =
					pgate_store_begin_read(p->store, error);

				if (txn == NULL)
					return FALSE;
				rec = pgate_store_series_get(txn, ids->pdata[i],
							     &local);
				if (rec == NULL && k == 0)
					selection_missing(&sel, ids->pdata[i],
							  local);
				if (rec != NULL &&
				    !pgate_project_match_series(
					    txn, sub->project, rec, &why,
					    &local)) {
					selection_failed(&sel, rec->id);
					if (!series_failed(sub, rec->id, &local,
							   stats, error))
						return FALSE;
				}
			}
			if (rec == NULL || why == NULL)
				continue;
			state_id = pgate_project_state_id(sub->project,
							  rec->id);
			/* the series as the project sees it: its own ID is
			 * the state ID (the record's fields are borrowed) */
			view = *rec;
			view.id = state_id;
			stats->series++;
			if (!run_series(sub, &view, &stats->testing, &local)) {
				selection_failed(&sel, rec->id);
				if (!series_failed(sub, state_id, &local, stats,
						   error))
					return FALSE;
			}
		}
	}
	return defer_sync_end(&sync, error) &&
	       selection_settle(p, &sel, error);
}

static gboolean run_pass(PgatePipeline *p, const char *only,
			 PgatePipelineStats *stats, GError **error);

gboolean
pgate_pipeline_run(PgatePipeline *p, const char *only, PgatePipelineStats *stats,
		   GError **error)
{
	gboolean ok;

	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	if (p->subs != NULL)
		return run_projects(p, only, stats, error);
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

static gboolean
run_pass(PgatePipeline *p, const char *only, PgatePipelineStats *stats,
	 GError **error)
{
	g_auto(Selection) sel = { 0 };
	g_auto(DeferSync) sync = { NULL };
	GPtrArray *ids;

	if (only != NULL && !series_select(p, only, &sel, error))
		return FALSE;
	if (p->upstream.enabled && only == NULL &&
	    (p->upstream_at == 0 ||
	     now_s() - p->upstream_at >= p->upstream_every)) {
		g_autoptr(GError) local = NULL;

		/* the upstream branches first: a series merged since the
		 * last pass is not applied nor tested again */
		pgate_upstream_stats_clear(&p->upstream_stats);
		memset(&p->upstream_stats, 0, sizeof p->upstream_stats);
		p->upstream_at = now_s();
		if (!pgate_upstream_scan(p->store, &p->upstream, p->upstream_at,
					 upstream_log, p, &p->upstream_stats,
					 &local)) {
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_FULL) ||
			    g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_BUSY)) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			stats->errors++;
			if (p->log)
				p->log(p->log_data, "-", "upstream-error",
				       local->message);
		}
	}
	if (p->upstream.enabled && p->upstream_merged == NULL)
		p->upstream_merged = g_ptr_array_new_with_free_func(g_free);
	if (p->upstream_merged != NULL)
		g_ptr_array_set_size(p->upstream_merged, 0);
	/* after the upstream scan: the series it matched are in the set */
	if (only == NULL && !series_select(p, only, &sel, error))
		return FALSE;
	ids = sel.ids;
	defer_sync_begin(&sync, p->store, &sel);
	/* every job in flight polled at once, before the series walk */
	g_clear_pointer(&p->polled, g_hash_table_unref);
	p->polled = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (p->ci_cfg.enabled && only == NULL) {
		g_autoptr(GError) local = NULL;

		if ((p->ci != NULL || pgate_pipeline_ci_backend(p, &local)) &&
		    !pgate_pipeline_ci_poll_all(p->store, p->ci, p->polled, &local))
			g_clear_error(&local);	/* each series polls its own */
		if (local != NULL && local->code == PGATE_ERROR_CONFIG) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(PgateSeriesRec) rec = NULL;
		g_autoptr(GError) local = NULL;

		{
			g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(
				p->store, error);

			if (txn == NULL)
				return FALSE;
			rec = pgate_store_series_get(txn, ids->pdata[i], &local);
		}
		if (rec == NULL) {
			/* deleted, or dropped by a concurrent ingest */
			selection_missing(&sel, ids->pdata[i], local);
			continue;
		}
		stats->series++;
		if (!run_series(p, rec, &stats->testing, &local)) {
			selection_failed(&sel, rec->id);
			/* one series' trouble does not stop the others,
			 * unless the trouble is everybody's (store full,
			 * lock held) */
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_FULL) ||
			    g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_BUSY) ||
			    local->code == PGATE_ERROR_CONFIG) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			stats->errors++;
			if (p->log)
				p->log(p->log_data, rec->id, "error",
				       local->message);
		}
	}
	/* the older versions of what was merged in this pass, visited
	 * before it was: superseded-by-merge now, not a pass later */
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
			if (!run_series(p, rec, &ignored, &local)) {
				stats->errors++;
				if (p->log)
					p->log(p->log_data, rec->id, "error",
					       local->message);
			}
			older = g_strdup(rec->supersedes);
		}
	}
	return defer_sync_end(&sync, error) &&
	       selection_settle(p, &sel, error);
}

gboolean
pgate_pipeline_outbox_flush(PgatePipeline *p, PgateOutbox *ob,
			    PgateOutboxStats *stats, GError **error)
{
	g_autofree char *archive = NULL;
	gboolean ok;

	if (ob->archive_url == NULL && p->kf != NULL) {
		/* the instance's ([report] is no project's) */
		if (!pgate_config_string(p->kf, "report", "archive_url",
					 &archive, PGATE_PIPELINE_ERROR, error))
			return FALSE;
		ob->archive_url = archive ? archive : PGATE_REPORT_ARCHIVE_URL;
		ok = pgate_pipeline_outbox_flush(p, ob, stats, error);
		ob->archive_url = NULL;
		return ok;
	}
	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	if (p->subs == NULL)
		return pgate_pipeline_mail_digest(p, error) &&
		       pgate_outbox_flush(ob, stats, error);
	/* each project's reports with its own Patchwork and mail */
	for (guint i = 0; i < p->subs->len; i++) {
		PgatePipeline *sub = p->subs->pdata[i];
		PgateOutbox o = *ob;

		if (!pgate_pipeline_mail_digest(sub, error))
			return FALSE;

		/* one client a flush, as the command line makes: its setup
		 * is checked once a flush */
		g_clear_pointer(&sub->pw, pgate_patchwork_free);
		if (g_key_file_has_group(sub->kf, "patchwork")) {
			sub->pw = pgate_patchwork_new(sub->kf, "patchwork",
						      error);
			if (sub->pw == NULL)
				return FALSE;
		}
		o.pw = sub->pw;
		o.email = sub->email;
		if (!pgate_outbox_flush_project(&o, sub->project->name, stats,
						error))
			return FALSE;
	}
	return TRUE;
}

/* The route of one message alone (route --file): its own tag, files and
 * base-commit. */
static PgateRoute *
route_message(const PgateProject *pr, const PgateMessageRec *m,
	      GError **error)
{
	PgatePipeline p;
	PgateRoute *r = NULL;
	g_autoptr(GError) local = NULL;

	memset(&p, 0, sizeof p);
	p.kf = pr->kf;
	if (!pgate_pipeline_apply_config_load(pr->kf, &p.apply, error))
		return NULL;
	if (p.apply.enabled && route_config(&p, &local)) {
		PgateRouteConfig none = { 0 };

		r = pgate_route_decide(pgate_route_config_routes(&p.route)
				       ? &p.route : &none, p.apply.branches,
				       m->base_commit, m->prefixes,
				       m->diff_files, p.maint);
	}
	pgate_pipeline_apply_config_clear(&p.apply);
	pgate_route_config_clear(&p.route);
	g_strfreev(p.maint);
	if (local != NULL)
		g_propagate_error(error, g_steal_pointer(&local));
	return r;
}

static json_t *
route_json(const PgateRoute *r)
{
	json_t *o = json_object(), *a = json_array();

	for (guint i = 0; r != NULL && i < r->targets->len; i++) {
		const PgateRouteTarget *t = r->targets->pdata[i];

		json_array_append_new(a, json_pack(
			"{s:s,s:s,s:s}", "target", t->branch, "rule",
			pgate_route_rule_to_string(t->rule), "why", t->why));
	}
	json_object_set_new(o, "targets", r && r->skip == NULL ? a
							       : json_array());
	if (r == NULL || r->skip != NULL)
		json_decref(a);
	json_object_set_new(o, "skip", r ? pgate_json_str_or_null(r->skip)
					 : json_string("no [apply] repository "
						       "configured"));
	return o;
}

json_t *
pgate_pipeline_route_explain(PgateStore *store, GKeyFile *kf,
			     const PgateMessageRec *m, const char *sid,
			     GError **error)
{
	g_autoptr(GPtrArray) projects = pgate_projects_load(kf, error);
	json_t *out, *in, *not;

	if (projects == NULL)
		return NULL;
	in = json_array();
	not = json_array();
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		g_autofree char *why = pgate_project_match_message(pr, m);
		g_autoptr(PgateRoute) r = NULL;
		g_autoptr(GError) local = NULL;
		json_t *o;

		if (why == NULL) {
			json_array_append_new(not, json_string(pr->name));
			continue;
		}
		r = sid != NULL && store != NULL
			? pgate_pipeline_route(store, pr, sid, &local)
			: route_message(pr, m, &local);
		if (r == NULL && local != NULL) {
			json_decref(in);
			json_decref(not);
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		o = route_json(r);
		json_object_set_new(o, "project", pgate_json_str_or_null(pr->name));
		json_object_set_new(o, "why", json_string(why));
		if (r != NULL && r->skip == NULL && r->targets->len == 0)
			json_object_set_new(o, "skip", json_string(
				"no branch to apply to"));
		json_array_append_new(in, o);
	}
	out = json_pack("{s:o,s:o,s:o,s:o}", "msgid",
			json_string(m->msgid), "series",
			pgate_json_str_or_null(sid), "projects", in,
			"not_projects", not);
	return out;
}

gboolean
pgate_pipeline_runs_local_jobs(const PgatePipeline *p)
{
	if (p->ci != NULL && g_strcmp0(p->ci_cfg.backend, "local") == 0)
		return TRUE;
	for (guint i = 0; p->subs != NULL && i < p->subs->len; i++)
		if (pgate_pipeline_runs_local_jobs(p->subs->pdata[i]))
			return TRUE;
	return FALSE;
}
