/* merged.c - merged upstream: what a pass does with upstream/'s matches
 * (docs/pipeline.md, "Merged upstream"). */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

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
			g_free(pgate_pipeline__want_job_check(m, doc, all->ci->len, all));
			continue;
		}
		ctx = pgate_pipeline__context_for(m, doc->job, doc->target, all->ci->len);
		d = g_strdup_printf("%s before the %s finished", what, doc->job);
		pgate_pipeline__want_check(m, ctx, "warning", NULL, d);
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
	all = pgate_pipeline__series_state(m->p->store, m->rec->id, error);
	if (all == NULL ||
	    !pgate_pipeline__cancel_jobs(m->p, m->rec->id, all, "cancelled: merged upstream",
			 error))
		return FALSE;
	g_clear_pointer(&all, pgate_series_docs_free);
	all = pgate_pipeline__series_state(m->p->store, m->rec->id, error);
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
int
pgate_pipeline__step_upstream(Move *m, PgateSeriesState state, GError **error)
{
	PgatePipeline *p = m->p;
	const PgateSeriesRec *rec = m->rec;
	g_autoptr(PgateSeriesRec) newer = NULL;
	g_autoptr(GPtrArray) matches = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *why = NULL, *text = NULL;
	guint k = 0, n = pgate_pipeline__series_size(rec);

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
		pgate_pipeline__move_to(m, PGATE_SERIES_SUPERSEDED_BY_MERGE, why);
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
	pgate_pipeline__move_to(m, PGATE_SERIES_MERGED, why);
	if (p->upstream_merged != NULL)
		g_ptr_array_add(p->upstream_merged, g_strdup(rec->id));
	return 1;
}

void
pgate_pipeline__upstream_log(gpointer data, const char *branch, const char *what,
	     const char *detail)
{
	PgatePipeline *p = data;
	g_autofree char *w = g_strdup_printf("upstream-%s", what);
	g_autofree char *d = g_strdup_printf("%s: %s", branch, detail);

	if (p->log)
		p->log(p->log_data, "-", w, d);
}
