/* cmd-report.c - patchgate report html DIR: the page of every series
 * (report/html.c renders it), newest version first, from the store and
 * the pipeline's documents. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"
#include "report/report.h"

#include <string.h>
#include <sysexits.h>

/* The older versions @r supersedes, newest first (at most 10). */
static void
chain(PgateReportHtml *h, PgateStoreTxn *txn, const PgateSeriesRec *r)
{
	g_autofree char *prev = g_strdup(r->supersedes);
	/* the reason of the link to prev: owned, since the series it comes
	 * from is freed before it is shown */
	g_autofree char *why = g_strdup(r->link_reason);

	for (int n = 0; prev && n < 10; n++) {
		g_autoptr(PgateSeriesRec) pr = pgate_store_series_get(txn, prev,
								      NULL);

		if (pr == NULL)
			break;
		pgate_report_html_supersedes(h, pr->version, pr->id, why);
		g_free(why);
		why = g_steal_pointer(&pr->link_reason);
		g_free(prev);
		prev = g_strdup(pr->supersedes);
	}
}

/* Each apply attempt, then each CI job, in key order. */
static void
results(PgateReportHtml *h, const PgatePipelineSeriesState *st)
{
	for (guint i = 0; i < st->apply->len; i++) {
		const PgatePipelineApplyDoc *a = st->apply->pdata[i];
		g_autofree char *key = g_strconcat("apply/", a->target, NULL);
		const char *what = (a->has & PGATE_PIPELINE_APPLY_DOC_STATUS)
			? pgate_pipeline_apply_status_to_string(a->status)
			: NULL;

		pgate_report_html_result(h, key, what, NULL,
					 a->failure ? a->failure->reason : NULL);
	}
	for (guint i = 0; i < st->ci->len; i++) {
		const PgatePipelineCiDoc *c = st->ci->pdata[i];
		const char *key = strchr(c->key, '/') + 1;
		const char *what = (c->has & PGATE_PIPELINE_CI_DOC_VERDICT)
			? pgate_pipeline_verdict_to_string(c->verdict)
			: pgate_pipeline_job_state_to_string(c->state);

		pgate_report_html_result(h, key, what, c->url, c->reason);
	}
}

int
cmd_report(PgateCli *cli, int argc, char **argv, GError **error)
{
	GOptionEntry entries[] = {
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(PgateReportHtml) h = pgate_report_html_new();
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_rec_free);
	g_autofree char *path = NULL;
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GError) local = NULL;

	if (!pgate_cli_parse("html DIR", "Write DIR/index.html: every series "
			     "with its versions, apply and test results, and a "
			     "timeline.", entries, &argc, &argv, error))
		return 0;
	if (argc != 3 || strcmp(argv[1], "html") != 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "usage: patchgate report html DIR");
		return 0;
	}
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &local))
		g_ptr_array_add(list, s);
	pgate_store_series_iter_clear(&it);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return 0;
	}
	/* newest first; superseded versions under their newest */
	for (guint i = list->len; i-- > 0;) {
		PgateSeriesRec *r = list->pdata[i];
		PgateReportHtmlSeries hs = {
			.id = r->id, .name = r->name,
			.submitter = r->submitter_name ? r->submitter_name
						       : r->submitter_email,
			.version = r->version, .received = r->patches->len,
			.total = r->total, .date = r->date,
		};
		g_autoptr(PgatePipelineSeriesState) st = NULL;
		const PgatePipelineDoc *doc;

		if (r->superseded_by != NULL)
			continue;
		st = pgate_pipeline_series_state_read(txn, r->id, error);
		if (st == NULL)
			return 0;
		doc = st->pipeline;
		pgate_report_html_series_begin(h, &hs);
		chain(h, txn, r);
		pgate_report_html_state(h, pgate_pipeline_state_to_string(
			doc ? doc->state : PGATE_PIPELINE_STATE_NEW),
			doc ? doc->reason : NULL);
		results(h, st);
		pgate_report_html_series_end(h);
	}
	path = pgate_report_html_write(h, argv[2], error);
	if (path == NULL)
		return 0;
	printf("%s\n", path);
	return EX_OK;
}
