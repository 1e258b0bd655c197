/* move.c - one series' move: the state it goes to, the checks and the
 * mail the move calls for, stored with it in one transaction (commit_move),
 * and what the steps of steps.c, recheck.c and merged.c share to make one. */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

void
pgate_pipeline__move_to(Move *m, PgateSeriesState state, const char *reason)
{
	PgateSeriesDoc *d = m->doc;

	if (d->state != state) {
		d->since = pgate_pipeline__now_s();
		d->has |= PGATE_SERIES_DOC_SINCE;
	}
	d->state = state;
	g_free(d->reason);
	d->reason = g_strdup(reason);
	d->has |= PGATE_SERIES_DOC_REASON;
	if (d->events == NULL)
		d->events = g_ptr_array_new_with_free_func(
			(GDestroyNotify)pgate_series_event_free);
	g_ptr_array_add(d->events, pgate_series_event_new(pgate_pipeline__now_s(), state,
							     reason));
	if (d->events->len > PGATE_SERIES_EVENTS_MAX)
		g_ptr_array_remove_range(d->events, 0, d->events->len -
					 PGATE_SERIES_EVENTS_MAX);
	if (m->p->log)
		m->p->log(m->p->log_data, m->rec->id,
			  pgate_series_state_name(state), reason);
}

void
pgate_pipeline__want_check(Move *m, const char *context, const char *state, const char *url,
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
char *
pgate_pipeline__context_for(Move *m, const char *what, const char *target, guint ntargets)
{
	g_autofree char *name = ntargets > 1
		? g_strdup_printf("%s-%s", what, target) : g_strdup(what);

	return pgate_patchwork_context_from_name(m->p->cfg.context_prefix, name);
}

/* pgate_pipeline__want_check() of the "apply" context. */
void
pgate_pipeline__want_apply_check(Move *m, const char *state, const char *description)
{
	g_autofree char *ctx = pgate_pipeline__context_for(m, "apply", NULL, 1);

	pgate_pipeline__want_check(m, ctx, state, NULL, description);
}

void
pgate_pipeline__move_clear(Move *m)
{
	g_clear_pointer(&m->plan, pgate_pipeline_plan_free);
	g_clear_pointer(&m->extra_key, g_free);
	g_clear_pointer(&m->extra, json_decref);
	g_clear_pointer(&m->reset, g_ptr_array_unref);
}

/*
 * The trust gate (trust.c) for @m's series: 1 when it may be applied,
 * m->plan then being what is applied; 0 when it may not, *@out_why
 * saying why; -1 on an error.  Whatever else applies a series asks it
 * first: a first apply, a recheck's, a rebase's.
 */
int
pgate_pipeline__gate(Move *m, char **out_why, GError **error)
{
	g_clear_pointer(&m->plan, pgate_pipeline_plan_free);
	return pgate_pipeline__trust_gate(m->p, m->rec, m->doc, &m->plan,
					  out_why, error);
}

/* The move to awaiting-approval for @why, with its pending check; no new
 * event when only the reason is the same. */
gboolean
pgate_pipeline__await_approval(Move *m, PgateSeriesState state, const char *why)
{
	if (state == PGATE_SERIES_AWAITING_APPROVAL &&
	    g_strcmp0(m->doc->reason, why) == 0)
		return FALSE;
	pgate_pipeline__move_to(m, PGATE_SERIES_AWAITING_APPROVAL, why);
	if (state != PGATE_SERIES_AWAITING_APPROVAL)
		pgate_pipeline__want_apply_check(m, "pending", "waiting for a maintainer's "
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

gboolean
pgate_pipeline__save_move(Move *m, GError **error)
{
	return pgate_store_write(m->p->store, commit_move, m, error);
}

PgateSeriesDocs *
pgate_pipeline__series_state(PgateStore *store, const char *sid, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	return txn ? pgate_series_docs_read(txn, sid, error) : NULL;
}

/* Cancels the jobs of series @sid (@s: its documents) that are not done,
 * saying @why. */
gboolean
pgate_pipeline__cancel_jobs(PgatePipeline *p, const char *sid, PgateSeriesDocs *s,
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

const char *
pgate_pipeline__check_state_of(const char *verdict)
{
	if (g_strcmp0(verdict, "success") == 0)
		return "success";
	if (g_strcmp0(verdict, "fail") == 0)
		return "fail";
	/* warning, and error (the job could not run: not the series'
	 * fault, but nobody should think it passed) */
	return "warning";
}

char *
pgate_pipeline__first_line(const char *s, gsize max)
{
	const char *nl = s ? strchr(s, '\n') : NULL;
	gsize n = s ? (nl ? (gsize)(nl - s) : strlen(s)) : 0;

	return g_strndup(s ? s : "", MIN(n, max));
}

/* ---- merged upstream (docs/pipeline.md, "Merged upstream") ---- */

/* The number of patches @rec has when complete. */
guint
pgate_pipeline__series_size(const PgateSeriesRec *rec)
{
	return MAX(rec->total, rec->patches->len);
}
