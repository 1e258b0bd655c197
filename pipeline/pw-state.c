/* pw-state.c - Patchwork patch states from what became of a series
 * ([patchwork] set_state, issue 28; docs/pipeline.md "Patchwork states").
 *
 * When a move saves a series into merged, its patches are to become
 * "accepted" in Patchwork, each with commit_ref = the upstream commit
 * that matched it; into superseded or superseded-by-merge, "superseded".
 * Nothing else changes a state: a series is merged only when each of its
 * patches is matched upstream with the rank "merged" (a trailer names
 * it, or its exact patch-id in its chain) or "applied with changes"
 * (author and subject within subject_days, no trailer naming other
 * mail); "possibly merged" never is a match (upstream/upstream.h,
 * pgate_upstream_series_read()), so it never makes a patch accepted.
 * The change is queued in the outbox, in the transaction that saves the
 * move, as one entry per series:
 *
 *   pwstate/SERIES  {"dest": "patchwork-state", "series": SERIES,
 *                    "state": "accepted", "msgids": [...],
 *                    "commit_refs": {MSGID: SHA}, "done": [...], ...}
 *
 * and sent by the outbox (outbox.c, send_state()), which reads each
 * patch's state and state-change events before changing anything and
 * never moves a patch a human touched (report/patchwork/state.c).
 *
 * A series that was finished (done, apply-failed, skipped...) when a
 * newer version came keeps its state in the pipeline, but its patches
 * become "superseded" all the same, once: SERIES/pwstate remembers what
 * was queued (pgate_pw_state_on_final()).
 *
 * A partially merged series changes nothing: Patchwork's states are per
 * patch, but a maintainer reads a series; "accepted" on 3 patches of 5
 * reads as "the series was taken", which it was not.  Its patches become
 * accepted when the last one is merged and the series moves to merged.
 */
#include "pipeline/pipeline-private.h"
#include "common/json.h"

#include <string.h>

gboolean
pgate_pw_state_enabled(GKeyFile *kf, gboolean *out, GError **error)
{
	*out = FALSE;
	if (kf == NULL || !g_key_file_has_group(kf, "patchwork"))
		return TRUE;
	return pgate_config_bool(kf, "patchwork", "set_state", FALSE, out,
				 PGATE_PIPELINE_ERROR, error);
}

/* The target state of a move into @state, or %NULL. */
static const char *
target_of(PgateSeriesState state)
{
	switch (state) {
	case PGATE_SERIES_MERGED:
		return "accepted";
	case PGATE_SERIES_SUPERSEDED:
	case PGATE_SERIES_SUPERSEDED_BY_MERGE:
		return "superseded";
	default:
		return NULL;
	}
}

/* SERIES/pwstate: the Patchwork state last queued for the series'
 * patches, so that a series finished before it was superseded queues
 * "superseded" once (pgate_pw_state_on_final()). */
static gboolean
marker_put(PgateStoreTxn *txn, const PgateSeriesRec *rec, const char *state,
	   GError **error)
{
	g_autofree char *key = g_strdup_printf("%s/pwstate", rec->id);
	g_autofree char *text = g_strdup_printf("{\"state\":\"%s\"}", state);

	return pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE, key, text,
				     strlen(text), error);
}

static gboolean
marker_has(PgateStoreTxn *txn, const PgateSeriesRec *rec, gboolean *out,
	   GError **error)
{
	g_autofree char *key = g_strdup_printf("%s/pwstate", rec->id);
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);

	*out = b != NULL;
	if (b == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
					  PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

gboolean
pgate_pw_state_on_move(PgateStoreTxn *txn, PgatePipeline *p,
		       const PgateSeriesRec *rec, const PgateSeriesDoc *doc,
		       GError **error)
{
	g_autoptr(PgateSeriesDoc) old = NULL;
	g_autoptr(json_t) refs = NULL;
	const char *target = target_of(doc->state);
	gboolean on = FALSE;

	if (target == NULL || !p->queue_checks ||
	    rec->kind != PGATE_SERIES_KIND_PATCHES)
		return TRUE;
	if (!pgate_pw_state_enabled(p->kf, &on, error))
		return FALSE;
	if (!on)
		return TRUE;
	/* only the move into the state: the document saved before it */
	old = pgate_series_doc_get(txn, rec->id, NULL);
	if (old != NULL && old->state == doc->state)
		return TRUE;
	if (doc->state == PGATE_SERIES_MERGED) {
		g_autoptr(GPtrArray) matches = pgate_upstream_series_read(
			txn, rec, error);

		if (matches == NULL)
			return FALSE;
		refs = json_object();
		for (guint i = 0; i < matches->len; i++) {
			const PgateUpstreamMatch *um = matches->pdata[i];

			if (um->msgid && um->commit)
				json_object_set_new(refs, um->msgid,
						    json_string(um->commit));
		}
	}
	if (p->log)
		p->log(p->log_data, rec->id, "patchwork-state", target);
	return pgate_outbox_queue_state(txn, rec, target, refs, error) &&
	       marker_put(txn, rec, target, error);
}

typedef struct {
	PgatePipeline *p;
	const PgateSeriesRec *rec;
} Final;

static gboolean
commit_final(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Final *f = payload;
	gboolean has = FALSE;

	if (!marker_has(txn, f->rec, &has, error))
		return FALSE;
	if (has)
		return TRUE;
	if (f->p->log)
		f->p->log(f->p->log_data, f->rec->id, "patchwork-state",
			  "superseded");
	return pgate_outbox_queue_state(txn, f->rec, "superseded", NULL,
					error) &&
	       marker_put(txn, f->rec, "superseded", error);
}

gboolean
pgate_pw_state_on_final(PgatePipeline *p, const PgateSeriesRec *rec,
			PgateSeriesState state, GError **error)
{
	Final f = { p, rec };
	gboolean on = FALSE, has = FALSE;

	if (rec->superseded_by == NULL || !p->queue_checks ||
	    rec->kind != PGATE_SERIES_KIND_PATCHES || target_of(state) != NULL)
		return TRUE;
	if (!pgate_pw_state_enabled(p->kf, &on, error))
		return FALSE;
	if (!on)
		return TRUE;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL || !marker_has(txn, rec, &has, error))
			return FALSE;
	}
	if (has)
		return TRUE;
	return pgate_store_write(p->store, commit_final, &f, error);
}
