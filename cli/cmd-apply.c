/* cmd-apply.c - patchgate apply SERIES|MSGID [--branch B] [--json] */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

/* The failure's "patch N[, FILE[, hunk H]]: REASON", the file and hunk
 * left out when the reason names the file already ("x.c: already
 * exists in the tree", "hunk #2 of x.c does not match") */
static void
print_failure(const PgateApplyFailure *f)
{
	const char *reason = f->reason ? f->reason : "?";

	if (f->patch <= 0) {
		printf("  %s\n", reason);
		return;
	}
	printf("  patch %d", (int)f->patch);
	if (f->file != NULL && strstr(reason, f->file) == NULL) {
		printf(", %s", f->file);
		if (f->hunk > 0)
			printf(", hunk %d", (int)f->hunk);
	}
	printf(": %s\n", reason);
}

static void
print_doc(const PgateApplyDoc *doc)
{
	const PgateApplyFailure *f = doc->failure;
	guint ncommits = doc->commits ? doc->commits->len : 0;
	guint npatches = doc->patches ? doc->patches->len : 0;
	gboolean applied = pgate_apply_doc_applied(doc);

	printf("%s: %s", doc->target,
	       (doc->has & PGATE_APPLY_DOC_STATUS)
	       ? pgate_apply_status_name(doc->status) : "?");
	if (!applied && f != NULL && f->patch > 0) {
		/* the commits made before the failure are no result */
		printf(" at patch %d of %u", (int)f->patch, npatches);
		if (ncommits > 0)
			printf(" (%u commit%s made before it, not published)",
			       ncommits, ncommits == 1 ? "" : "s");
	} else if (ncommits > 0)
		printf(", %u commit%s, head %.12s", ncommits,
		       ncommits == 1 ? "" : "s", doc->head);
	if (doc->ref != NULL)
		printf(", %s", doc->ref);
	printf("\n");
	if (f != NULL)
		print_failure(f);
	if (doc->publish_error != NULL)
		printf("  not published: %s\n", doc->publish_error);
}

/* The series @arg names: a series ID, or the Message-ID (angle brackets
 * optional) of any of its messages. */
static char *
series_of(PgateCli *cli, const char *arg, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store, error);
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(GArray) nums = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *id = NULL;
	gsize n = strlen(arg);

	if (txn == NULL)
		return NULL;
	rec = pgate_store_series_get(txn, arg, &local);
	if (rec != NULL)
		return g_strdup(rec->id);
	if (!g_error_matches(local, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	id = n >= 2 && arg[0] == '<' && arg[n - 1] == '>'
	     ? g_strndup(arg + 1, n - 2) : g_strdup(arg);
	nums = pgate_store_message_lookup(txn, id, error);
	if (nums == NULL)
		return NULL;
	for (guint i = 0; i < nums->len; i++) {
		char *sid = NULL;

		if (!pgate_store_msg_series_get(txn, g_array_index(nums, guint64, i),
						&sid, error))
			return NULL;
		if (sid != NULL)
			return sid;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_NOT_FOUND,
		    nums->len ? "message <%s> is in no series" : "no series %s",
		    nums->len ? id : arg);
	return NULL;
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
	g_autoptr(PgateApplyConfig) cfg = NULL;
	g_autoptr(GPtrArray) docs = NULL;
	g_autofree char *sid = NULL;
	int rc = EX_OK;

	if (!pgate_cli_parse("SERIES|MSGID", "Apply a series (named by its id "
			     "or the Message-ID of one of its mails) with "
			     "libgit2 onto its base-commit or the configured "
			     "branches, as git am would, and publish the result "
			     "([apply] in the configuration).", entries, &argc,
			     &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "give one series id or Message-ID (see 'patchgate "
			    "series list')");
		return 0;
	}
	sid = series_of(cli, argv[1], error);
	if (sid == NULL)
		return 0;
	cfg = pgate_pipeline_apply_config_new(cli->config, error);
	if (cfg == NULL)
		return 0;
	if (!pgate_pipeline_apply_config_enabled(cfg)) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
			    "no [apply] group in the configuration: nothing "
			    "says which repository to apply to");
		return 0;
	}
	docs = pgate_pipeline_apply(cli->store, cfg, sid, branch, error);
	if (docs == NULL)
		return 0;
	if (docs->len == 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no such target%s%s", branch ? ": " : "",
			    branch ? branch : "");
		return 0;
	}
	/* exit 0 when some target applied; 65 (EX_DATAERR) when none did:
	 * the series' own fault (ours are errors, above: 78 or 75) */
	rc = EX_DATAERR;
	for (guint i = 0; i < docs->len; i++)
		if (pgate_apply_doc_applied(docs->pdata[i]))
			rc = EX_OK;
	if (json) {
		json_t *out = json_object();

		for (guint i = 0; i < docs->len; i++) {
			const PgateApplyDoc *doc = docs->pdata[i];

			json_object_set_new(out, doc->target,
					    pgate_apply_doc_to_json(doc));
		}
		pgate_cli_json_print(json_pack("{s:i,s:s,s:o}", "format_version", 1,
					       "series", sid, "apply", out));
		return rc;
	}
	for (guint i = 0; i < docs->len; i++)
		print_doc(docs->pdata[i]);
	return rc;
}
