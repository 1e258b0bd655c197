/* cmd-test.c - patchgate test SERIES [--backend B] [--branch B] [--json]
 * [--no-wait] [--retry-for S]: run the CI job on demand on every applied
 * target of a series (applying it first when it never was), and wait for
 * the verdict.  The results are the same SERIES/ci/TARGET/JOB documents
 * the pipeline writes; the series' pipeline state is left alone.
 *
 * The wait ends when every job is done or lost (the backend forgot it:
 * exit 75, run the command again).  A transient error while polling (the
 * CI server restarting, a proxy's 503) is waited through for up to
 * --retry-for seconds (TEST_RETRY_FOR by default) before it ends the
 * command with 75. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

/* Seconds of transient errors in a row the wait goes on through. */
#define TEST_RETRY_FOR 300

static void
waiting(gpointer data, const char *job, const char *message)
{
	g_autofree char *m = pgate_secret_redact(message);

	fprintf(stderr, "patchgate: test: %s: %s; waiting up to %d s for it "
		"to pass\n", job, m, GPOINTER_TO_INT(data));
}

int
cmd_test(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, no_wait = FALSE;
	gint retry_for = TEST_RETRY_FOR;
	g_autofree char *backend = NULL, *branch = NULL;
	GOptionEntry entries[] = {
		{ "backend", 0, 0, G_OPTION_ARG_STRING, &backend,
		  "local, jenkins or buildbot (default: [ci] backend)", "B" },
		{ "branch", 0, 0, G_OPTION_ARG_STRING, &branch,
		  "only this applied target", "B" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "no-wait", 0, 0, G_OPTION_ARG_NONE, &no_wait,
		  "submit and return (Jenkins; local jobs always wait)", NULL },
		{ "retry-for", 0, 0, G_OPTION_ARG_INT, &retry_for,
		  "wait through transient CI errors for up to S seconds "
		  "(default 300), then exit 75", "S" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgatePipeline) p = NULL;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(PgatePipelineTestResult) r = NULL;
	PgatePipelineTestOptions o = { NULL, NULL, FALSE, 0, 0, FALSE, waiting,
				       NULL };
	gsize plen;
	int rc = EX_OK;

	if (!pgate_cli_parse("SERIES", "Run the CI job on a series now, on every "
			     "target it applied to (applying it first if need "
			     "be), and wait for the verdict.", entries, &argc,
			     &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "give one series id");
		return 0;
	}
	if (retry_for < 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--retry-for takes a number of seconds, 0 or more");
		return 0;
	}
	/* an unknown series is said first, whatever the configuration */
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store,
								      error);

		if (txn == NULL)
			return 0;
		rec = pgate_store_series_get(txn, argv[1], error);
		if (rec == NULL)
			return 0;
	}
	p = pgate_cli_pipeline_new(cli, json, G_MAXINT64, error);
	if (p == NULL)
		return 0;
	o.backend = backend;
	o.branch = branch;
	o.no_wait = no_wait;
	o.retry_for = retry_for;
	o.data = GINT_TO_POINTER(retry_for);
	r = pgate_pipeline_test(p, rec->id, &o, error);
	if (r == NULL)
		return 0;
	plen = strlen(r->prefix);
	for (guint i = 0; i < r->docs->len; i++) {
		const PgateCiDoc *doc = r->docs->pdata[i];

		/* the series failed: 65 (EX_DATAERR); our error (the sandbox,
		 * Jenkins, a limit of ours): 75, as for anything transient */
		if (!(doc->has & PGATE_CI_DOC_VERDICT))
			continue;
		if (doc->verdict == PGATE_VERDICT_FAIL)
			rc = EX_DATAERR;
		else if (doc->verdict == PGATE_VERDICT_ERROR && rc == EX_OK)
			rc = EX_TEMPFAIL;
	}
	/* a verdict that failed says enough; else, without one, again */
	if (r->lost > 0 && rc == EX_OK)
		rc = EX_TEMPFAIL;
	if (json) {
		json_t *out = json_object();

		for (guint i = 0; i < r->docs->len; i++) {
			const PgateCiDoc *doc = r->docs->pdata[i];
			json_t *raw = r->raw->pdata[i];

			json_object_update_new(raw, pgate_ci_doc_to_json(doc));
			json_object_set(out, doc->key + plen, raw);
		}
		pgate_cli_json_print(json_pack("{s:i,s:s,s:o}", "format_version", 1,
					       "series", rec->id, "ci", out));
	} else {
		for (guint i = 0; i < r->docs->len; i++) {
			const PgateCiDoc *doc = r->docs->pdata[i];
			const char *v = (doc->has & PGATE_CI_DOC_VERDICT)
				? pgate_verdict_name(doc->verdict)
				: NULL;

			printf("%s: %s%s%s\n", doc->key + plen,
			       v ? v : pgate_job_state_name(doc->state),
			       doc->reason ? " - " : "",
			       doc->reason ? doc->reason : "");
			if (doc->summary && v && doc->verdict != PGATE_VERDICT_SUCCESS)
				printf("%s\n", doc->summary);
		}
	}
	for (guint i = 0; i < r->docs->len; i++) {
		const PgateCiDoc *doc = r->docs->pdata[i];

		if (doc->state == PGATE_JOB_LOST)
			fprintf(stderr, "patchgate: test: %s: the CI backend "
				"lost the job (%s); run patchgate test again\n",
				doc->key + plen,
				doc->reason ? doc->reason : "no reason given");
	}
	return rc;
}
