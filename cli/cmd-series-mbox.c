/* cmd-series-mbox.c - patchgate series mbox ID [--trailers] [--version N]
 * [--cover] [-o FILE]: a series as the mbox b4 am writes
 * (pipeline/series-mbox.c, docs/ecosystem.md). */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

int
cmd_series_mbox(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean trailers = FALSE, cover = FALSE, no_cover = FALSE;
	gint version = 0;
	g_autofree char *output = NULL;
	GOptionEntry entries[] = {
		{ "trailers", 0, 0, G_OPTION_ARG_NONE, &trailers,
		  "add the review trailers of replies, and [apply] "
		  "link_pattern's Link: and signoff, as b4 am does", NULL },
		{ "version", 0, 0, G_OPTION_ARG_INT, &version,
		  "that version of the series' chain", "N" },
		{ "cover", 0, 0, G_OPTION_ARG_NONE, &cover,
		  "begin with the cover letter (git am stops on it: "
		  "\"Patch is empty\")", NULL },
		{ "no-cover", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE,
		  &no_cover, "leave the cover letter out (the default)", NULL },
		{ "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
		  "write to FILE (default: stdout)", "FILE" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateApplyConfig) ac = NULL;
	PgateSeriesMboxOptions o = { 0 };
	g_autoptr(GBytes) mbox = NULL;
	g_autofree char *sid = NULL;
	gsize len;
	const char *data;

	if (!pgate_cli_parse("ID", "Write a series as an mbox (mboxrd), its "
			     "patches in order (with --cover, its cover letter "
			     "first), as b4 am writes it; git am "
			     "--patch-format=mboxrd applies it.", entries,
			     &argc, &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "series mbox takes one series ID");
		return 0;
	}
	if (version < 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--version takes a version number");
		return 0;
	}
	o.trailers = trailers;
	if (cover && no_cover) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--cover and --no-cover exclude each other");
		return 0;
	}
	/* no cover by default, as b4 am: git am stops on one */
	o.cover = cover;
	o.version = (guint)version;
	ac = pgate_pipeline_apply_config_new(cli->config, error);
	if (ac == NULL)
		return 0;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store,
								      error);

		if (txn != NULL)
			mbox = pgate_pipeline_series_mbox(txn, cli->state_dir, ac,
							  argv[1], &o, &sid,
							  error);
	}
	if (mbox == NULL)
		return 0;
	data = g_bytes_get_data(mbox, &len);
	if (output != NULL && strcmp(output, "-") != 0)
		return pgate_file_write_atomic(output, data, len,
					       PGATE_CLI_ERROR, error)
			? EX_OK : 0;
	if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_IO,
			    "stdout: write failed");
		return 0;
	}
	return EX_OK;
}
