/* cmd-run.c - patchgate run [--series ID] [--json]: one pass of the
 * pipeline, then the outbox; patchgate outbox [--json]. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sysexits.h>
#include <unistd.h>

static void
log_line(gpointer data, const char *series_id, const char *what,
	 const char *detail)
{
	gboolean quiet = GPOINTER_TO_INT(data);

	if (quiet)
		return;
	/* one line per event, journald-friendly */
	fprintf(stderr, "patchgate: series=%s %s%s%s\n", series_id, what,
		detail ? ": " : "", detail ? detail : "");
}

static void
outbox_log(gpointer data, const char *key, const char *what,
	   const char *detail)
{
	gboolean quiet = GPOINTER_TO_INT(data);

	if (quiet)
		return;
	fprintf(stderr, "patchgate: outbox=%s %s%s%s\n", key, what,
		detail ? ": " : "", detail ? detail : "");
}

/* One pass at a time: two overlapping passes (cron) would both send what
 * the outbox holds.  Returns the locked descriptor, or -1 with BUSY. */
static int
run_lock(PgateCli *cli, GError **error)
{
	g_autofree char *path = g_build_filename(cli->state_dir, PGATE_STATE_RUN_LOCK, NULL);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		int e = errno;

		g_set_error(error, PGATE_CLI_ERROR, pgate_error_errno_code(e),
			    "%s: %s", path, g_strerror(e));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		close(fd);
		g_set_error(error, PGATE_CLI_ERROR,
			    e == EWOULDBLOCK ? PGATE_ERROR_BUSY
					     : pgate_error_errno_code(e),
			    "another 'patchgate run' or 'outbox send' is at work "
			    "(%s)", path);
		return -1;
	}
	return fd;
}

PgatePipeline *
pgate_cli_pipeline_new(PgateCli *cli, gboolean quiet, gint64 upstream_every,
		       GError **error)
{
	PgatePipelineOptions o = { log_line, GINT_TO_POINTER(quiet),
				   upstream_every };

	return pgate_pipeline_new(cli->store, cli->config, cli->state_dir, &o,
				  error);
}

/* The Patchwork client of [patchwork], or %NULL without the group: one
 * per command, so that its setup is checked once (pgate_outbox_flush()). */
static gboolean
outbox_patchwork(PgateCli *cli, PgatePatchwork **out, GError **error)
{
	g_auto(GStrv) projects = pgate_config_projects(cli->config);

	*out = NULL;
	/* (with projects, each has its own: pgate_pipeline_outbox_flush()) */
	if (!g_key_file_has_group(cli->config, "patchwork") ||
	    projects[0] != NULL)
		return TRUE;
	*out = pgate_patchwork_new(cli->config, "patchwork", error);
	return *out != NULL;
}

static gboolean
flush_outbox(PgateCli *cli, PgatePipeline *p, PgatePatchwork *pw,
	     gboolean quiet, gboolean all, PgateOutboxStats *st, GError **error)
{
	PgateOutbox ob = { cli->store, pw,
			   (PgateEmailConfig *)pgate_pipeline_email(p),
			   outbox_log, GINT_TO_POINTER(quiet), all, NULL };

	return pgate_pipeline_outbox_flush(p, &ob, st, error);
}

/*
 * The exit code the reports call for (docs/pipeline.md): 78 (EX_CONFIG)
 * when one was refused for the configuration (401, 403, the start-up
 * check of [patchwork]); else 75 (EX_TEMPFAIL) while one waits on
 * something that passes (a server down, Patchwork that has not parsed
 * the mail yet), or when a series had an error; else 65 (EX_DATAERR)
 * when one failed for good.  Reports failed in an earlier run (held)
 * change nothing: `status` shows them.
 */
static int
reports_exit_code(const PgateOutboxStats *st, guint series_errors)
{
	if (st->refused > 0)
		return EX_CONFIG;
	if (st->retrying + st->waiting > 0 || series_errors > 0)
		return EX_TEMPFAIL;
	if (st->failed > 0)
		return EX_DATAERR;
	return EX_OK;
}

static json_t *
stats_json(const PgateOutboxStats *st)
{
	return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "sent", (int)st->sent,
			 "skipped", (int)st->skipped, "retrying",
			 (int)st->retrying, "failed", (int)st->failed,
			 "refused", (int)st->refused, "waiting",
			 (int)st->waiting, "held", (int)st->held);
}

/* Whether @kf configures a report: a [patchwork] or [email] group, or a
 * project's patchwork.KEY or email.KEY. */
static gboolean
reports_configured(GKeyFile *kf)
{
	g_auto(GStrv) groups = NULL;

	if (kf == NULL)
		return FALSE;
	if (g_key_file_has_group(kf, "patchwork") ||
	    g_key_file_has_group(kf, "email"))
		return TRUE;
	groups = g_key_file_get_groups(kf, NULL);
	for (guint i = 0; groups[i]; i++) {
		g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[i], NULL,
							 NULL);

		for (guint k = 0; keys && keys[k]; k++)
			if (g_str_has_prefix(keys[k], "patchwork.") ||
			    g_str_has_prefix(keys[k], "email."))
				return TRUE;
	}
	return FALSE;
}

/* "N sent, N already there, ..." (transfer full); @why: with the
 * refusal's reason (when no log line said it).  When nothing was due:
 * "none", and why when neither [patchwork] nor [email] is configured. */
static char *
stats_text(const PgateOutboxStats *st, gboolean why, GKeyFile *kf)
{
	GString *s = g_string_new(NULL);

	if (st->sent + st->skipped + st->retrying + st->failed + st->refused +
	    st->waiting + st->held == 0) {
		g_string_append(s, "none");
		if (!reports_configured(kf))
			g_string_append(s, " (no [patchwork] or [email] is "
					"configured)");
		return g_string_free(s, FALSE);
	}
	g_string_append_printf(s, "%u sent, %u already there, %u to retry, "
			       "%u failed, %u refused, %u waiting", st->sent,
			       st->skipped, st->retrying, st->failed,
			       st->refused, st->waiting);
	if (st->held > 0)
		g_string_append_printf(s, ", %u failed before (only 'patchgate "
				       "outbox send --all' retries them)",
				       st->held);
	if (why && st->refusal != NULL)
		g_string_append_printf(s, "; refused: %s", st->refusal->message);
	return g_string_free(s, FALSE);
}

int
cmd_run(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, quiet = FALSE;
	g_autofree char *only = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print a summary as JSON",
		  NULL },
		{ "series", 0, 0, G_OPTION_ARG_STRING, &only,
		  "only this series", "ID" },
		{ "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
		  "no event lines on standard error", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgatePipeline) p = NULL;
	PgatePipelineStats st = { 0, 0, 0 };
	g_auto(PgateOutboxStats) ost = { 0 };
	g_autoptr(PgatePatchwork) pw = NULL;
	g_autofree char *text = NULL;
	gboolean ok;
	int lock;

	if (!pgate_cli_parse("", "Move every series one or more steps through "
			     "the pipeline (wait for completion, trust, apply, "
			     "test, report), send the reports that are due, and "
			     "exit.", entries, &argc, &argv, error))
		return 0;
	if (argc != 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "unexpected argument '%s'", argv[1]);
		return 0;
	}
	lock = run_lock(cli, error);
	if (lock < 0)
		return 0;
	p = pgate_cli_pipeline_new(cli, quiet || json, G_MAXINT64, error);
	if (p == NULL || !outbox_patchwork(cli, &pw, error)) {
		close(lock);
		return 0;
	}
	ok = pgate_pipeline_run(p, only, &st, error);
	/* what the pass queued (pending checks above all: everyone sees at
	 * once that a series will be tested) goes out before any wait */
	ok = ok && flush_outbox(cli, p, pw, quiet || json, FALSE, &ost, error);
	/* the local runner's jobs live in this process: a pass that
	 * started some waits for them (Jenkins' jobs are polled by the
	 * next pass instead) */
	while (ok && st.testing > 0 && pgate_pipeline_runs_local_jobs(p)) {
		PgatePipelineStats again = { 0, 0, 0 };

		g_usleep(200 * 1000);
		ok = pgate_pipeline_run(p, only, &again, error);
		st.errors += again.errors;
		st.testing = again.testing;
	}
	ok = ok && flush_outbox(cli, p, pw, quiet || json, FALSE, &ost, error);
	if (ok && only == NULL) {
		g_autoptr(GError) local = NULL;
		guint pruned = 0, days = 0;

		/* old refs: not worth failing the pass for */
		if (!pgate_pipeline_prune(p, &pruned, &days, &local))
			log_line(GINT_TO_POINTER(quiet || json), "-",
				 "prune-failed", local->message);
		else if (pruned > 0 && !(quiet || json))
			fprintf(stderr, "patchgate: pruned %u refs older than %u "
				"days\n", pruned, days);
	}
	g_clear_pointer(&p, pgate_pipeline_free);
	close(lock);
	if (!ok)
		return 0;
	text = stats_text(&ost, quiet || json, cli->config);
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:i,s:i,s:o}", "format_version", 1,
			"series", (int)st.series, "errors", (int)st.errors,
			"outbox", stats_json(&ost)));
	else if (!quiet)
		fprintf(stderr, "patchgate: run: %u series looked at, %u with "
			"errors; reports: %s\n", st.series, st.errors, text);
	else if (ost.refused > 0)
		/* what cron mails: the one thing a person must fix */
		fprintf(stderr, "patchgate: run: reports: %s\n", text);
	return reports_exit_code(&ost, st.errors);
}

static int
outbox_send(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, all = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print a summary as JSON",
		  NULL },
		{ "all", 0, 0, G_OPTION_ARG_NONE, &all,
		  "also what waits for its retry time, and what failed", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgatePipeline) p = NULL;
	g_auto(PgateOutboxStats) ost = { 0 };
	g_autoptr(PgatePatchwork) pw = NULL;
	gboolean ok;
	int lock;

	if (!pgate_cli_parse("", "Send the reports that are due now.  Reports "
			     "that failed for good (a 403, a 400) are kept and "
			     "not tried again: --all tries them too, and what "
			     "waits for its retry time.", entries, &argc, &argv,
			     error))
		return 0;
	lock = run_lock(cli, error);
	if (lock < 0)
		return 0;
	p = pgate_cli_pipeline_new(cli, json, G_MAXINT64, error);
	if (p == NULL || !outbox_patchwork(cli, &pw, error)) {
		close(lock);
		return 0;
	}
	ok = flush_outbox(cli, p, pw, json, all, &ost, error);
	g_clear_pointer(&p, pgate_pipeline_free);
	close(lock);
	if (!ok)
		return 0;
	if (json) {
		json_t *j = stats_json(&ost);

		json_object_set_new(j, "format_version", json_integer(1));
		pgate_cli_json_print(j);
	} else {
		g_autofree char *text = stats_text(&ost, json, cli->config);

		printf("%s\n", text);
	}
	return reports_exit_code(&ost, 0);
}

int
cmd_outbox(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	json_t *list;
	gsize i;
	json_t *e;
	guint failed = 0;

	if (argc >= 2 && strcmp(argv[1], "send") == 0)
		return outbox_send(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "list") == 0)
		argc--, argv++;
	if (!pgate_cli_parse("[list|send]", "Show the reports not yet accepted "
			     "by their server, and why ('send' sends what is "
			     "due).", entries, &argc, &argv, error))
		return 0;
	list = pgate_outbox_list(cli->store, error);
	if (list == NULL)
		return 0;
	if (json) {
		pgate_cli_json_print(json_pack("{s:i,s:o}", "format_version", 1,
					       "outbox", list));
		return EX_OK;
	}
	json_array_foreach(list, i, e) {
		const char *err = pgate_state_str(e, "last_error");

		failed += json_is_true(json_object_get(e, "failed"));
		printf("%s  %s  attempts %d%s%s%s\n", pgate_state_str(e, "key"),
		       json_is_true(json_object_get(e, "failed")) ? "FAILED"
								  : "pending",
		       (int)json_integer_value(json_object_get(e, "attempts")),
		       err ? "  (" : "", err ? err : "", err ? ")" : "");
	}
	if (json_array_size(list) == 0)
		printf("the outbox is empty\n");
	else if (failed > 0)
		printf("FAILED reports are not tried again by 'run' or 'outbox "
		       "send': 'patchgate outbox send --all' does\n");
	json_decref(list);
	return EX_OK;
}
