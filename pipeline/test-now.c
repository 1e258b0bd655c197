/* test-now.c - `patchgate test SERIES`: this series' CI job now, and its
 * verdicts waited for, as a call of the pipeline (not a second pipeline
 * of the command's own).
 *
 * The trust gate first (trust.c: untrusted code never runs unapproved),
 * then the apply when no attempt of the series applied yet, the job
 * submitted on every applied target (or @o->branch), and the jobs polled
 * until each is done or lost.  The results are the SERIES/ci/TARGET/JOB
 * documents a pass writes; the series' pipeline state is left alone.  A
 * transient error while polling (the CI server restarting, a proxy's
 * 503) is waited through for up to @o->retry_for seconds.
 */
#include "pipeline/pipeline-private.h"

#include <string.h>

#define TEST_POLL_US (500 * 1000)

void
pgate_pipeline_test_result_free(PgatePipelineTestResult *r)
{
	if (r == NULL)
		return;
	g_clear_pointer(&r->docs, g_ptr_array_unref);
	g_clear_pointer(&r->raw, g_ptr_array_unref);
	g_free(r->series);
	g_free(r->prefix);
	g_free(r);
}

/* The CI documents of the series under @r->prefix, each with the JSON
 * it was read as (--json prints a document polled since as that JSON
 * updated, the stored fields first, as ever). */
static gboolean
read_jobs(PgateStore *store, PgatePipelineTestResult *r, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GPtrArray) v = NULL;

	g_clear_pointer(&r->docs, g_ptr_array_unref);
	g_clear_pointer(&r->raw, g_ptr_array_unref);
	if (txn == NULL)
		return FALSE;
	v = pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, r->prefix,
				   error);
	if (v == NULL)
		return FALSE;
	r->docs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_doc_free);
	r->raw = g_ptr_array_new_with_free_func((GDestroyNotify)json_decref);
	for (guint i = 0; i < v->len; i++) {
		const PgateStoreEntry *e = v->pdata[i];
		PgateCiDoc *doc = pgate_ci_doc_decode(e->val, e->key, NULL);

		if (doc == NULL)
			continue;
		g_ptr_array_add(r->docs, doc);
		g_ptr_array_add(r->raw, pgate_state_decode(e->val, NULL));
	}
	return TRUE;
}

/* Applies @rec (what the gate judged, @plan) when none of its attempts
 * applied, and submits its job on each applied target (or o->branch). */
static gboolean
submit(PgatePipeline *p, const PgateSeriesRec *rec,
       const PgatePipelinePlan *plan, const PgatePipelineTestOptions *o,
       GError **error)
{
	g_autoptr(GPtrArray) applied = NULL;
	gboolean any = FALSE;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(PgateSeriesDocs) st = NULL;

		if (txn == NULL)
			return FALSE;
		st = pgate_series_docs_read(txn, rec->id, error);
		if (st == NULL)
			return FALSE;
		applied = g_ptr_array_ref(st->apply);
	}
	for (guint i = 0; i < applied->len; i++)
		any |= pgate_apply_doc_testable(applied->pdata[i]);
	if (!any) {
		g_ptr_array_unref(applied);
		applied = pgate_pipeline_apply_routed(p->store, &p->apply,
						      rec->id, o->branch, NULL,
						      plan, error);
		if (applied == NULL)
			return FALSE;
	}
	if (!p->ci_cfg.enabled && o->ci_optional)
		return TRUE;	/* nothing to run: the apply is the result */
	if (!pgate_pipeline_ci_backend(p, error))
		return FALSE;
	for (guint i = 0; i < applied->len; i++) {
		const PgateApplyDoc *doc = applied->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = NULL;

		if (!pgate_apply_doc_testable(doc) ||
		    (o->branch && g_strcmp0(o->branch, doc->target) != 0))
			continue;
		cdoc = pgate_pipeline_ci_submit(p->store, &p->apply, &p->ci_cfg,
						p->ci, rec, doc->target, doc,
						error);
		if (cdoc == NULL)
			return FALSE;
	}
	return TRUE;
}

/* One round of polls.  *@out_pending: jobs still at work (or failing
 * for now); %FALSE when a poll failed for good, or for longer than
 * @o->retry_for (@failing_since: monotonic µs of the first failure in a
 * row, 0 when the last round passed). */
static gboolean
poll_round(PgatePipeline *p, PgatePipelineTestResult *r,
	   const PgatePipelineTestOptions *o, gint64 *failing_since,
	   guint *out_pending, GError **error)
{
	gboolean failing = FALSE;

	*out_pending = 0;
	r->lost = 0;
	for (guint i = 0; i < r->docs->len; i++) {
		PgateCiDoc *doc = r->docs->pdata[i];
		const char *name = doc->key + strlen(r->prefix);
		g_autoptr(GError) local = NULL;
		gint64 now;

		/* done; lost (submit again); never submitted (a stale
		 * document of a target not tested now): none of them
		 * changes by waiting */
		if (doc->state == PGATE_JOB_DONE ||
		    doc->state == PGATE_JOB_LOST || doc->handle == NULL) {
			r->lost += doc->state == PGATE_JOB_LOST;
			continue;
		}
		if (pgate_pipeline_ci_poll(p->store, p->ci, doc, &local)) {
			r->lost += doc->state == PGATE_JOB_LOST;
			*out_pending += doc->state != PGATE_JOB_DONE &&
					doc->state != PGATE_JOB_LOST;
			continue;
		}
		if (!pgate_error_is_transient(local)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		now = g_get_monotonic_time();
		if (*failing_since == 0) {
			*failing_since = now;
			if (o->waiting != NULL)
				o->waiting(o->data, name, local->message);
		} else if (now - *failing_since >
			   (gint64)o->retry_for * G_USEC_PER_SEC) {
			g_propagate_prefixed_error(
				error, g_steal_pointer(&local),
				"%s: still failing after %d s: ", name,
				o->retry_for);
			return FALSE;
		}
		failing = TRUE;
		(*out_pending)++;
	}
	if (!failing)
		*failing_since = 0;
	return TRUE;
}

PgatePipelineTestResult *
pgate_pipeline_test(PgatePipeline *p, const char *sid,
		    const PgatePipelineTestOptions *o, GError **error)
{
	g_autoptr(PgatePipelineTestResult) r = g_new0(PgatePipelineTestResult, 1);
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(PgatePipelinePlan) plan = NULL;
	gint64 failing_since = 0;
	gint64 until = g_get_monotonic_time() +
		       (gint64)o->max_wait * G_USEC_PER_SEC;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return NULL;
		rec = pgate_store_series_get(txn, sid, error);
		if (rec == NULL)
			return NULL;
	}
	if (o->backend != NULL) {
		g_clear_pointer(&p->ci, pgate_ci_backend_free);
		g_free(p->ci_cfg.backend);
		g_free(p->ci_cfg.group);
		p->ci_cfg.backend = g_strdup(o->backend);
		p->ci_cfg.group = g_strdup_printf("ci.%s", o->backend);
	}
	if (!p->apply.enabled) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "no [apply] group in the configuration");
		return NULL;
	}
	/* untrusted code never runs unapproved, asked for by hand or not
	 * (exit 77; patchgate approve first) */
	plan = pgate_pipeline_may_run(p, rec->id, error);
	if (plan == NULL || !submit(p, rec, plan, o, error))
		return NULL;
	r->series = g_strdup(rec->id);
	r->prefix = g_strdup_printf("%s/ci/", rec->id);
	for (;;) {
		guint pending;

		if (!read_jobs(p->store, r, error) ||
		    (p->ci != NULL &&
		     !poll_round(p, r, o, &failing_since, &pending, error)))
			return NULL;
		if (p->ci == NULL || pending == 0 ||
		    (o->no_wait && strcmp(p->ci_cfg.backend, "local") != 0))
			break;
		if (o->max_wait > 0 && g_get_monotonic_time() > until) {
			g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_IO,
				    "the jobs of %s did not end within %d s",
				    rec->id, o->max_wait);
			return NULL;
		}
		g_usleep(TEST_POLL_US);
	}
	return g_steal_pointer(&r);
}
