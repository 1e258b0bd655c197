/* cmd-check.c - patchgate check [--series] [--run]: b4's external check
 * command (b4.review-perpatch-check-cmd, b4.review-series-check-cmd):
 * one message on stdin, a JSON array on stdout (pipeline/b4-check.c,
 * docs/ecosystem.md). */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <errno.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

/* At most PGATE_CHECK_MAX_BYTES + 1 bytes of stdin (one more tells a
 * message over the limit); NULL with @error on a read error. */
static GBytes *
read_stdin(GError **error)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	guint8 chunk[65536];

	for (;;) {
		ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			g_set_error(error, PGATE_CLI_ERROR,
				    pgate_error_errno_code(e), "stdin: %s",
				    g_strerror(e));
			return NULL;
		}
		if (n == 0)
			break;
		g_byte_array_append(buf, chunk, (guint)n);
		if (buf->len > PGATE_CHECK_MAX_BYTES)
			break;
	}
	return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

int
cmd_check(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean series = FALSE, run = FALSE;
	GOptionEntry entries[] = {
		{ "series", 0, 0, G_OPTION_ARG_NONE, &series,
		  "the message is a cover letter or first patch: answer for "
		  "the whole series (b4.review-series-check-cmd)", NULL },
		{ "run", 0, 0, G_OPTION_ARG_NONE, &run,
		  "apply the series and run its CI job first (the local "
		  "backend is waited for)", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateSiteConfig) site = NULL;
	g_autoptr(GBytes) mail = NULL;
	PgateCheckTarget t = { 0 };
	json_t *out = NULL;

	if (!pgate_cli_parse("", "Read one message (a patch, or with --series "
			     "a cover letter) on stdin and print what "
			     "patchgate knows of its series as the JSON array "
			     "b4's review checks read: [{\"tool\", \"status\", "
			     "\"summary\", \"url\", \"details\"}].", entries,
			     &argc, &argv, error))
		return 0;
	if (argc != 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "check takes no arguments: the message is read "
			    "from stdin");
		return 0;
	}
	site = pgate_pipeline_site_config_new(cli->config, error);
	if (site == NULL)
		return 0;
	mail = read_stdin(error);
	if (mail == NULL)
		return 0;
	/* opened here: never created (b4 runs this in a source tree, where
	 * a default ./patchgate-state would be made), read-write only for
	 * --run; no store is an answer */
	{
		g_autofree char *dir = g_build_filename(cli->state_dir,
							PGATE_STATE_STORE, NULL);
		g_autoptr(GError) local = NULL;

		cli->store = pgate_store_open(dir, run ? PGATE_STORE_RW
						       : PGATE_STORE_RDONLY,
					      &cli->store_opts, &local);
		/* a store this user may not read is not "no store" */
		if (cli->store == NULL)
			pgate_cli_store_denied(cli->state_dir, run, &local);
		if (cli->store == NULL &&
		    g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND)) {
			g_autofree char *why = g_strdup_printf(
				"no patchgate store in %s", cli->state_dir);

			out = pgate_pipeline_check_unknown(why);
			goto print;
		}
		if (cli->store == NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return 0;
		}
	}
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store,
								      error);

		if (txn == NULL || !pgate_pipeline_check_find(txn, mail, &t, error))
			goto fail;
	}
	if (run && t.series != NULL) {
		g_autoptr(PgatePipeline) p = pgate_cli_pipeline_new(
			cli, TRUE, G_MAXINT64, error);

		if (p == NULL || !pgate_pipeline_check_run(p, t.series, error))
			goto fail;
	}
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(cli->store,
								      error);

		if (txn == NULL)
			goto fail;
		out = pgate_pipeline_check_results(txn, site, &t, series, error);
		if (out == NULL)
			goto fail;
	}
print:
	{
		g_autofree char *s = json_dumps(out, JSON_INDENT(2) |
						JSON_PRESERVE_ORDER);

		json_decref(out);
		printf("%s\n", s);
	}
	pgate_pipeline_check_target_clear(&t);
	return EX_OK;
fail:
	pgate_pipeline_check_target_clear(&t);
	return 0;
}
