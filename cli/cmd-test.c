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
#define TEST_POLL_US (500 * 1000)

static PgateSeriesDocs *
read_state(PgateStore *store, const char *sid, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	return txn ? pgate_series_docs_read(txn, sid, error) : NULL;
}

/* The CI documents of a series (@cprefix: "SERIES/ci/"), each with the
 * JSON it was read as: --json prints a document polled since as that
 * JSON updated, the stored fields first (as ever). */
typedef struct {
	GPtrArray *docs;     /* PgateCiDoc */
	GPtrArray *raw;      /* json_t, the same order */
} CiDocs;

static void
ci_docs_clear(CiDocs *c)
{
	g_clear_pointer(&c->docs, g_ptr_array_unref);
	g_clear_pointer(&c->raw, g_ptr_array_unref);
}

static gboolean
ci_docs_read(PgateStore *store, const char *cprefix, CiDocs *out,
	     GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GPtrArray) v = NULL;

	ci_docs_clear(out);
	if (txn == NULL)
		return FALSE;
	v = pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, cprefix, error);
	if (v == NULL)
		return FALSE;
	out->docs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_doc_free);
	out->raw = g_ptr_array_new_with_free_func((GDestroyNotify)json_decref);
	for (guint i = 0; i < v->len; i++) {
		const PgateStoreEntry *e = v->pdata[i];
		PgateCiDoc *doc = pgate_ci_doc_decode(
			e->val, e->key, NULL);

		if (doc == NULL)
			continue;
		g_ptr_array_add(out->docs, doc);
		g_ptr_array_add(out->raw, pgate_state_decode(e->val, NULL));
	}
	return TRUE;
}

int
cmd_test(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, no_wait = FALSE;
	gint retry_for = TEST_RETRY_FOR;
	g_autofree char *backend = NULL, *branch = NULL;
	GOptionEntry entries[] = {
		{ "backend", 0, 0, G_OPTION_ARG_STRING, &backend,
		  "local or jenkins (default: [ci] backend)", "B" },
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
	PgatePipeline p;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(PgatePipelinePlan) plan = NULL;
	g_autofree char *cprefix = NULL;
	g_autoptr(GPtrArray) applied = NULL;
	g_autoptr(PgateSeriesDocs) st = NULL;
	CiDocs ci = { NULL, NULL };
	gint64 failing_since = 0;   /* monotonic µs; 0: the last round passed */
	guint lost = 0;
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
	if (!pgate_cli_pipeline_init(cli, &p, json, error))
		goto fail;
	if (backend != NULL) {
		g_free(p.ci_cfg.backend);
		g_free(p.ci_cfg.group);
		p.ci_cfg.backend = g_strdup(backend);
		p.ci_cfg.group = g_strdup_printf("ci.%s", backend);
	}
	if (!p.apply.enabled) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
			    "no [apply] group in the configuration");
		goto fail;
	}
	/* untrusted code never runs unapproved, asked for by hand or not
	 * (exit 77; patchgate approve first) */
	plan = pgate_pipeline_may_run(&p, rec->id, error);
	if (plan == NULL)
		goto fail;
	st = read_state(cli->store, rec->id, error);
	if (st == NULL)
		goto fail;
	applied = g_ptr_array_ref(st->apply);
	g_clear_pointer(&st, pgate_series_docs_free);
	{
		gboolean any = FALSE;

		for (guint i = 0; i < applied->len; i++)
			any |= pgate_apply_doc_testable(applied->pdata[i]);
		if (!any) {
			g_ptr_array_unref(applied);
			applied = pgate_pipeline_apply_routed(
				cli->store, &p.apply, rec->id, branch, NULL, plan,
				error);
			if (applied == NULL)
				goto fail;
		}
	}
	if (!pgate_pipeline_ci_backend(&p, error))
		goto fail;
	for (guint i = 0; i < applied->len; i++) {
		const PgateApplyDoc *doc = applied->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = NULL;

		if (!pgate_apply_doc_testable(doc) ||
		    (branch && g_strcmp0(branch, doc->target) != 0))
			continue;
		cdoc = pgate_pipeline_ci_submit(cli->store, &p.apply, &p.ci_cfg,
						p.ci, rec, doc->target, doc,
						error);
		if (cdoc == NULL)
			goto fail;
	}
	cprefix = g_strdup_printf("%s/ci/", rec->id);
	for (;;) {
		guint pending = 0;
		gboolean failing = FALSE;

		if (!ci_docs_read(cli->store, cprefix, &ci, error))
			goto fail;
		lost = 0;
		for (guint i = 0; i < ci.docs->len; i++) {
			PgateCiDoc *doc = ci.docs->pdata[i];
			g_autoptr(GError) local = NULL;

			/* done; lost (submit again); never submitted (a
			 * stale document of a target not tested now): none
			 * of them changes by waiting */
			if (doc->state == PGATE_JOB_DONE ||
			    doc->state == PGATE_JOB_LOST ||
			    doc->handle == NULL) {
				lost += doc->state == PGATE_JOB_LOST;
				continue;
			}
			if (!pgate_pipeline_ci_poll(cli->store, p.ci, doc,
						    &local)) {
				gint64 now = g_get_monotonic_time();

				if (!pgate_error_is_transient(local)) {
					g_propagate_error(error,
							  g_steal_pointer(&local));
					goto fail;
				}
				if (failing_since == 0) {
					g_autofree char *m = pgate_secret_redact(
						local->message);

					failing_since = now;
					fprintf(stderr, "patchgate: test: %s: %s; "
						"waiting up to %d s for it to "
						"pass\n", doc->key + strlen(cprefix),
						m, retry_for);
				} else if (now - failing_since >
					   (gint64)retry_for * G_USEC_PER_SEC) {
					g_propagate_prefixed_error(
						error, g_steal_pointer(&local),
						"%s: still failing after %d s: ",
						doc->key + strlen(cprefix),
						retry_for);
					goto fail;
				}
				failing = TRUE;
				pending++;
				continue;
			}
			lost += doc->state == PGATE_JOB_LOST;
			pending += doc->state != PGATE_JOB_DONE &&
				   doc->state != PGATE_JOB_LOST;
		}
		if (!failing)
			failing_since = 0;
		if (pending == 0 ||
		    (no_wait && strcmp(p.ci_cfg.backend, "local") != 0))
			break;
		g_usleep(TEST_POLL_US);
	}
	for (guint i = 0; i < ci.docs->len; i++) {
		const PgateCiDoc *doc = ci.docs->pdata[i];

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
	if (lost > 0 && rc == EX_OK)
		rc = EX_TEMPFAIL;
	if (json) {
		json_t *out = json_object();

		for (guint i = 0; i < ci.docs->len; i++) {
			const PgateCiDoc *doc = ci.docs->pdata[i];
			json_t *raw = ci.raw->pdata[i];

			json_object_update_new(raw, pgate_ci_doc_to_json(doc));
			json_object_set(out, doc->key + strlen(cprefix), raw);
		}
		pgate_cli_json_print(json_pack("{s:i,s:s,s:o}", "format_version", 1,
					       "series", rec->id, "ci", out));
	} else {
		for (guint i = 0; i < ci.docs->len; i++) {
			const PgateCiDoc *doc = ci.docs->pdata[i];
			const char *v = (doc->has & PGATE_CI_DOC_VERDICT)
				? pgate_verdict_name(doc->verdict)
				: NULL;

			printf("%s: %s%s%s\n", doc->key + strlen(cprefix),
			       v ? v : pgate_job_state_name(doc->state),
			       doc->reason ? " - " : "",
			       doc->reason ? doc->reason : "");
			if (doc->summary && v && doc->verdict != PGATE_VERDICT_SUCCESS)
				printf("%s\n", doc->summary);
		}
	}
	for (guint i = 0; i < ci.docs->len; i++) {
		const PgateCiDoc *doc = ci.docs->pdata[i];

		if (doc->state == PGATE_JOB_LOST)
			fprintf(stderr, "patchgate: test: %s: the CI backend "
				"lost the job (%s); run patchgate test again\n",
				doc->key + strlen(cprefix),
				doc->reason ? doc->reason : "no reason given");
	}
	ci_docs_clear(&ci);
	pgate_cli_pipeline_clear(&p);
	return rc;
fail:
	ci_docs_clear(&ci);
	pgate_cli_pipeline_clear(&p);
	return 0;
}
