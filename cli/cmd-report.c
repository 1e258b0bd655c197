/* cmd-report.c - patchgate report html [DIR] [--series ID]...: the
 * static site of every series (docs/report-site.md), written by
 * pipeline/site-data.c and report/site.c; only the pages that changed are
 * rewritten. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"
#include "report/report.h"

#include <string.h>
#include <sysexits.h>

int
cmd_report(PgateCli *cli, int argc, char **argv, GError **error)
{
	g_auto(GStrv) ids = NULL;
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "series", 0, 0, G_OPTION_ARG_STRING_ARRAY, &ids,
		  "only this series (and its other versions) changed; "
		  "may be repeated", "ID" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateSiteConfig) c = NULL;
	PgateReportSiteStats st = { 0 };
	g_autofree char *index = NULL;
	const char *dir;

	if (!pgate_cli_parse("html [DIR]", "Write the static site of every "
			     "series in DIR (default: [report] html_dir): "
			     "index, filters, a page per series and per log, "
			     "JSON beside them.", entries, &argc, &argv, error))
		return 0;
	if (argc < 2 || argc > 3 || strcmp(argv[1], "html") != 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "usage: patchgate report html [DIR] [--series ID]");
		return 0;
	}
	c = pgate_pipeline_site_config_new(cli->config, error);
	if (c == NULL)
		return 0;
	dir = argc == 3 ? argv[2] : pgate_pipeline_site_config_html_dir(c);
	if (dir == NULL) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no DIR, and no [report] html_dir");
		return 0;
	}
	if (!pgate_pipeline_site_build(cli->store, c, cli->state_dir, dir,
				       (const char *const *)ids, &st, error))
		return 0;
	index = g_build_filename(dir, "index.html", NULL);
	if (json) {
		pgate_cli_json_print(json_pack("{s:i,s:s,s:i,s:i,s:i,s:i,s:i,s:f}",
			"format_version", 1, "index", index,
			"series", (json_int_t)st.series, "put", (json_int_t)st.put,
			"written", (json_int_t)st.written,
			"unchanged", (json_int_t)st.unchanged,
			"removed", (json_int_t)st.removed,
			"ms", st.usec / 1000.0));
		return EX_OK;
	}
	printf("%s\n", index);
	return EX_OK;
}
