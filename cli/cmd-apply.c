/* cmd-apply.c - patchgate apply SERIES [--branch B] [--json] */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

static void
print_doc(const char *target, json_t *doc)
{
	const char *status = json_string_value(json_object_get(doc, "status"));
	json_t *f = json_object_get(doc, "failure");
	json_t *commits = json_object_get(doc, "commits");
	const char *ref = json_string_value(json_object_get(doc, "ref"));

	printf("%s: %s", target, status ? status : "?");
	if (json_array_size(commits) > 0)
		printf(", %zu commit%s, head %.12s", json_array_size(commits),
		       json_array_size(commits) == 1 ? "" : "s",
		       json_string_value(json_object_get(doc, "head")));
	if (ref != NULL)
		printf(", %s", ref);
	printf("\n");
	if (f != NULL) {
		const char *file = json_string_value(json_object_get(f, "file"));
		int hunk = (int)json_integer_value(json_object_get(f, "hunk"));

		printf("  patch %d", (int)json_integer_value(json_object_get(f, "patch")));
		if (file != NULL)
			printf(", %s", file);
		if (hunk > 0)
			printf(", hunk %d", hunk);
		printf(": %s\n", json_string_value(json_object_get(f, "reason")));
	}
	if (json_object_get(doc, "publish_error"))
		printf("  not published: %s\n",
		       json_string_value(json_object_get(doc, "publish_error")));
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
	json_t *docs;
	const char *target;
	json_t *doc;
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
	if (json_object_size(docs) == 0) {
		json_decref(docs);
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no such target%s%s", branch ? ": " : "",
			    branch ? branch : "");
		return 0;
	}
	/* exit 0 when some target applied; 1 when none did */
	rc = 1;
	json_object_foreach(docs, target, doc) {
		const char *st = json_string_value(json_object_get(doc, "status"));

		if (st && (strcmp(st, "ok") == 0 ||
			   strcmp(st, "already-applied") == 0))
			rc = EX_OK;
	}
	if (json) {
		pgate_cli_json_print(json_pack("{s:i,s:s,s:o}", "format_version", 1,
					       "series", argv[1], "apply", docs));
		return rc;
	}
	json_object_foreach(docs, target, doc)
		print_doc(target, doc);
	json_decref(docs);
	return rc;
}
