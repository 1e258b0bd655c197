/* cmd-test.c - patchgate test SERIES [--backend B] [--branch B] [--json]
 * [--no-wait]: run the CI job on demand on every applied target of a
 * series (applying it first when it never was), and wait for the verdict.
 * The results are the same SERIES/ci/TARGET/JOB documents the pipeline
 * writes; the series' pipeline state is left alone. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

static json_t *
read_prefix(PgateStore *store, const char *prefix, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	return txn ? pgate_state_scan(txn, prefix, error) : NULL;
}

static gboolean
good_apply(json_t *doc)
{
	const char *st = pgate_state_str(doc, "status");

	return (g_strcmp0(st, "ok") == 0 || g_strcmp0(st, "already-applied") == 0) &&
	       json_array_size(json_object_get(doc, "commits")) > 0;
}

int
cmd_test(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, no_wait = FALSE;
	g_autofree char *backend = NULL, *branch = NULL;
	GOptionEntry entries[] = {
		{ "backend", 0, 0, G_OPTION_ARG_STRING, &backend,
		  "local or jenkins (default: [ci] backend)", "B" },
		{ "branch", 0, 0, G_OPTION_ARG_STRING, &branch,
		  "only this applied target", "B" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "no-wait", 0, 0, G_OPTION_ARG_NONE, &no_wait,
		  "submit and return (Jenkins; local jobs always wait)", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgatePipeline p;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autofree char *aprefix = NULL, *cprefix = NULL;
	g_autoptr(json_t) applied = NULL, out = NULL;
	const char *target;
	json_t *doc;
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
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store,
								      error);

		if (txn == NULL)
			goto fail;
		rec = pgate_store_series_get(txn, argv[1], error);
		if (rec == NULL)
			goto fail;
	}
	aprefix = g_strdup_printf("%s/apply/", rec->id);
	applied = read_prefix(cli->store, aprefix, error);
	if (applied == NULL)
		goto fail;
	{
		gboolean any = FALSE;

		json_object_foreach(applied, target, doc)
			any |= good_apply(doc);
		if (!any) {
			json_decref(applied);
			applied = pgate_pipeline_apply(cli->store, &p.apply, rec->id,
						       branch, error);
			if (applied == NULL)
				goto fail;
		}
	}
	if (!pgate_pipeline_ci_backend(&p, error))
		goto fail;
	json_object_foreach(applied, target, doc) {
		json_t *cdoc;

		if (!good_apply(doc) || (branch && strcmp(branch, target) != 0))
			continue;
		cdoc = pgate_pipeline_ci_submit(cli->store, &p.apply, &p.ci_cfg,
						p.ci, rec, target, doc, error);
		if (cdoc == NULL)
			goto fail;
		json_decref(cdoc);
	}
	cprefix = g_strdup_printf("%s/ci/", rec->id);
	for (;;) {
		guint pending = 0;

		json_decref(out);
		out = read_prefix(cli->store, cprefix, error);
		if (out == NULL)
			goto fail;
		json_object_foreach(out, target, doc) {
			g_autofree char *key = g_strdup_printf("%s%s", cprefix, target);

			if (g_strcmp0(pgate_state_str(doc, "state"), "done") == 0)
				continue;
			if (!pgate_pipeline_ci_poll(cli->store, p.ci, key, doc, error))
				goto fail;
			pending += g_strcmp0(pgate_state_str(doc, "state"), "done") != 0;
		}
		if (pending == 0 ||
		    (no_wait && strcmp(p.ci_cfg.backend, "local") != 0))
			break;
		g_usleep(500 * 1000);
	}
	json_object_foreach(out, target, doc) {
		const char *v = pgate_state_str(doc, "verdict");

		if (v && strcmp(v, "success") != 0 && strcmp(v, "warning") != 0)
			rc = 1;
	}
	if (json) {
		pgate_cli_json_print(json_pack("{s:i,s:s,s:O}", "format_version", 1,
					       "series", rec->id, "ci", out));
	} else {
		json_object_foreach(out, target, doc) {
			const char *v = pgate_state_str(doc, "verdict");
			const char *why = pgate_state_str(doc, "reason");

			printf("%s: %s%s%s\n", target, v ? v : pgate_state_str(doc, "state"),
			       why ? " - " : "", why ? why : "");
			if (pgate_state_str(doc, "summary") && v && strcmp(v, "success") != 0)
				printf("%s\n", pgate_state_str(doc, "summary"));
		}
	}
	pgate_cli_pipeline_clear(&p);
	return rc;
fail:
	pgate_cli_pipeline_clear(&p);
	return 0;
}
