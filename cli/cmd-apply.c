/* cmd-apply.c - patchgate apply SERIES [--branch B] [--json] */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

static void
print_doc(const PgatePipelineApplyDoc *doc)
{
	const PgatePipelineApplyFailure *f = doc->failure;
	guint ncommits = doc->commits ? doc->commits->len : 0;

	printf("%s: %s", doc->target,
	       (doc->has & PGATE_PIPELINE_APPLY_DOC_STATUS)
	       ? pgate_pipeline_apply_status_to_string(doc->status) : "?");
	if (ncommits > 0)
		printf(", %u commit%s, head %.12s", ncommits,
		       ncommits == 1 ? "" : "s", doc->head);
	if (doc->ref != NULL)
		printf(", %s", doc->ref);
	printf("\n");
	if (f != NULL) {
		printf("  patch %d", (int)f->patch);
		if (f->file != NULL)
			printf(", %s", f->file);
		if (f->hunk > 0)
			printf(", hunk %d", (int)f->hunk);
		printf(": %s\n", f->reason);
	}
	if (doc->publish_error != NULL)
		printf("  not published: %s\n", doc->publish_error);
}

int
cmd_apply(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	g_autofree char *branch = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "branch", 0, 0, G_OPTION_ARG_STRING, &branch,
		  "apply onto this configured branch only (or base-commit)", "B" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgateApplyConfig cfg;
	g_autoptr(GPtrArray) docs = NULL;
	int rc = EX_OK;

	if (!pgate_cli_parse("SERIES", "Apply a series with libgit2 onto its "
			     "base-commit or the configured branches, as git am "
			     "would, and publish the result ([apply] in the "
			     "configuration).", entries, &argc, &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "give one series id (see 'patchgate series list')");
		return 0;
	}
	if (!pgate_pipeline_apply_config_load(cli->config, &cfg, error))
		return 0;
	if (!cfg.enabled) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
			    "no [apply] group in the configuration: nothing "
			    "says which repository to apply to");
		pgate_pipeline_apply_config_clear(&cfg);
		return 0;
	}
	docs = pgate_pipeline_apply(cli->store, &cfg, argv[1], branch, error);
	pgate_pipeline_apply_config_clear(&cfg);
	if (docs == NULL)
		return 0;
	if (docs->len == 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no such target%s%s", branch ? ": " : "",
			    branch ? branch : "");
		return 0;
	}
	/* exit 0 when some target applied; 1 when none did */
	rc = 1;
	for (guint i = 0; i < docs->len; i++)
		if (pgate_pipeline_apply_doc_applied(docs->pdata[i]))
			rc = EX_OK;
	if (json) {
		json_t *out = json_object();

		for (guint i = 0; i < docs->len; i++) {
			const PgatePipelineApplyDoc *doc = docs->pdata[i];

			json_object_set_new(out, doc->target,
					    pgate_pipeline_apply_doc_to_json(doc));
		}
		pgate_cli_json_print(json_pack("{s:i,s:s,s:o}", "format_version", 1,
					       "series", argv[1], "apply", out));
		return rc;
	}
	for (guint i = 0; i < docs->len; i++)
		print_doc(docs->pdata[i]);
	return rc;
}
