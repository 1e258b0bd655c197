/* cmd-upstream.c - patchgate upstream [--json]: read the [upstream]
 * branches now and match their new commits (docs/pipeline.md, "Merged
 * upstream"); `run` does the same before its pass.  `upstream --patch-ids
 * REPO [REV]` prints the patch-id merge detection computes for each
 * commit, as `git log -p REV | git patch-id --stable` does. */
#include "cli/cli.h"
#include "upstream/upstream.h"

#include <string.h>
#include <sysexits.h>

static void
log_line(gpointer data, const char *branch, const char *what,
	 const char *detail)
{
	if (GPOINTER_TO_INT(data))
		return;
	fprintf(stderr, "patchgate: upstream=%s %s%s%s\n", branch, what,
		detail ? ": " : "", detail ? detail : "");
}

static void
print_patch_id(gpointer data, const char *commit, const char *patch_id)
{
	printf("%s %s\n", patch_id, commit);
}

/* patchgate upstream --patch-ids REPO [REV] */
static int
patch_ids(int argc, char **argv, GError **error)
{
	if (argc < 2 || argc > 3) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--patch-ids takes a repository and a revision");
		return 0;
	}
	return pgate_upstream_patch_ids(argv[1], argc == 3 ? argv[2] : "HEAD",
					0, print_patch_id, NULL, error)
		? EX_OK : 0;
}

int
cmd_upstream(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, quiet = FALSE, ids = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "print what was read as JSON", NULL },
		{ "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
		  "no line a branch on standard error", NULL },
		{ "patch-ids", 0, 0, G_OPTION_ARG_NONE, &ids,
		  "REPO [REV]: print each commit's patch-id as merge detection "
		  "computes it (as git log -p REV | git patch-id --stable)",
		  NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgateUpstreamConfig c;
	g_auto(PgateUpstreamStats) st = { 0 };
	gint64 t0;
	gboolean ok;

	if (!pgate_cli_parse("", "Fetch and read the [upstream] branches: "
			     "their new commits are matched against the "
			     "stored patches (merged, partially merged), as "
			     "'run' does before its pass.", entries, &argc,
			     &argv, error))
		return 0;
	if (ids)
		return patch_ids(argc, argv, error);
	if (argc != 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "unexpected argument '%s'", argv[1]);
		return 0;
	}
	if (!pgate_upstream_config_load(cli->config, &c, error))
		return 0;
	if (!c.enabled) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
			    "no [upstream] group in the configuration");
		return 0;
	}
	t0 = g_get_monotonic_time();
	ok = pgate_upstream_scan(cli->store, &c, g_get_real_time() / G_USEC_PER_SEC,
				 log_line, GINT_TO_POINTER(quiet || json), &st,
				 error);
	pgate_upstream_config_clear(&c);
	if (!ok)
		return 0;
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f}", "format_version", 1,
			"branches", (int)st.branches, "commits", (int)st.commits,
			"matched", (int)st.matched, "rewritten",
			(int)st.rewritten, "dropped", (int)st.dropped, "series",
			st.series ? (int)g_hash_table_size(st.series) : 0,
			"seconds",
			(double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC));
	else if (!quiet)
		printf("%u branches, %u new commits, %u patches matched in %u "
		       "series, %u rewritten (%u matches lost)\n", st.branches,
		       st.commits, st.matched,
		       st.series ? g_hash_table_size(st.series) : 0,
		       st.rewritten, st.dropped);
	return EX_OK;
}
