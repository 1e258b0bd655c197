/* cmd-recheck.c - patchgate recheck SERIES [--job J] [--rebase BRANCH]:
 * test a series again (docs/pipeline.md, "Recheck"), as a
 * Recheck-request: reply does; the next 'patchgate run' does it. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <sysexits.h>

int
cmd_recheck(PgateCli *cli, int argc, char **argv, GError **error)
{
	g_autofree char *job = NULL, *rebase = NULL, *who = NULL;
	GOptionEntry entries[] = {
		{ "job", 0, 0, G_OPTION_ARG_STRING, &job,
		  "the job (or Patchwork context) to run again; default: the "
		  "configured job", "J" },
		{ "rebase", 0, 0, G_OPTION_ARG_STRING, &rebase,
		  "apply the series again on this branch first", "BRANCH" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgatePipeline) p = NULL;
	gboolean ok;

	if (!pgate_cli_parse("SERIES", "Test a series again: its jobs are "
			     "submitted again (after applying it again on "
			     "BRANCH with --rebase) by the next 'patchgate "
			     "run', once it is done; the new results replace "
			     "the old.", entries, &argc, &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "give one series id");
		return 0;
	}
	p = pgate_cli_pipeline_new(cli, TRUE, G_MAXINT64, error);
	if (p == NULL)
		return 0;
	who = g_strdup_printf("%s (command line)", g_get_user_name());
	ok = pgate_pipeline_recheck_request(p, argv[1], job, rebase, who,
					    error);
	if (!ok)
		return 0;
	printf("%s: recheck of %s%s%s asked by %s; the next 'patchgate run' "
	       "runs it\n", argv[1], job ? job : "its jobs",
	       rebase ? " rebased on " : "", rebase ? rebase : "", who);
	return EX_OK;
}
