/* main.c - patchgate's command table and global options.
 *
 *   patchgate [--state DIR] [--config FILE] COMMAND [ARGS]
 *
 * main() opens any of the standard descriptors that is closed on
 * /dev/null, installs the log writer (what the libraries log becomes
 * "patchgate: ..." lines, secrets redacted), parses the global options,
 * loads the configuration, arms the fatal signal guard, opens the store
 * the way the command's flags ask, runs the command, and turns an error
 * into one line "patchgate: COMMAND: message" and a sysexits code.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

G_DEFINE_QUARK(pgate-cli-error-quark, pgate_cli_error)

/* Commands that only patchgate-full has: the lean patchgate execs it. */
#ifdef PGATE_FULL
#define FULL(fn) fn
#else
#define FULL(fn) NULL
#endif

static const struct {
	const char *name;
	PgateCmdFunc fn;
	CmdFlags flags;
	const char *summary;
} commands[] = {
	{ "ingest", cmd_ingest, CMD_STORE_RW, "import mbox files and maildirs" },
	/* (deliver opens the store itself, once it has a message) */
	{ "deliver", cmd_deliver, CMD_TEMPFAIL,
	  "store one message from stdin (procmail/maildrop hook)" },
	{ "replay", FULL(cmd_replay), CMD_STORE_RW,
	  "import public-inbox archives (v1, v2), resumably" },
	{ "msg", FULL(cmd_msg), CMD_STORE_RDONLY,
	  "list stored messages or show one" },
	{ "store", cmd_store, CMD_NO_STORE,
	  "show, verify or upgrade the store" },
	{ "series", cmd_series, CMD_STORE_RDONLY,
	  "list patch series or show one" },
	{ "rethread", cmd_rethread, CMD_STORE_RW,
	  "recompute threads, series and versions from scratch" },
	{ "apply", FULL(cmd_apply), CMD_STORE_RW,
	  "apply a series with libgit2 and publish it" },
	{ "test", FULL(cmd_test), CMD_STORE_RW,
	  "run the CI job on a series now and wait for it" },
	{ "daemon", FULL(cmd_daemon), CMD_STORE_RW,
	  "watch maildirs and inboxes; run the pipeline continuously" },
	{ "run", FULL(cmd_run), CMD_STORE_RW,
	  "one pass of the pipeline: apply, test, report" },
	{ "approve", FULL(cmd_approve), CMD_STORE_RW,
	  "let a series from an untrusted sender be tested" },
	{ "reject", FULL(cmd_reject), CMD_STORE_RW,
	  "refuse to test a series from an untrusted sender" },
	{ "recheck", FULL(cmd_recheck), CMD_STORE_RW,
	  "test a series again (optionally rebased on a branch)" },
	{ "upstream", FULL(cmd_upstream), CMD_STORE_RW,
	  "read the upstream branches: which series were merged" },
	{ "status", FULL(cmd_status), CMD_STORE_RDONLY,
	  "counts by pipeline state, queue, outbox, last errors" },
	{ "outbox", FULL(cmd_outbox), CMD_STORE_RW,
	  "list or send the reports not yet accepted by their server" },
	{ "report", FULL(cmd_report), CMD_STORE_RDONLY,
	  "write a static HTML page of series and results" },
	{ "config", FULL(cmd_config), CMD_OWN_CONFIG,
	  "check a configuration file; list every key" },
	{ "route", FULL(cmd_route), CMD_STORE_RDONLY,
	  "which projects and branches a message would go to, and why" },
	{ "check", FULL(cmd_check), CMD_NO_STORE,
	  "b4's review check: what patchgate knows of a mailed patch" },
};

#ifndef PGATE_FULL
/* Runs the same command line in patchgate-full: beside this binary (in a
 * build tree), else in the configured libexec directory. */
static int
exec_full(char **argv)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	g_autofree char *beside = dir ? g_build_filename(dir, "patchgate-full",
							 NULL) : NULL;
	g_autofree char *installed = g_build_filename(PGATE_LIBEXECDIR,
						      "patchgate-full", NULL);
	const char *path = beside && access(beside, X_OK) == 0 ? beside
							       : installed;

	execv(path, argv);
	fprintf(stderr, "patchgate: cannot run %s: %s\n", path,
		g_strerror(errno));
	return EX_UNAVAILABLE;
}
#endif

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: patchgate [--state DIR] [--config FILE] COMMAND [ARGS]\n"
		"\n"
		"A CI gateway for patches sent to mailing lists.\n"
		"\n"
		"Global options:\n"
		"  --state DIR     state directory (default: $PATCHGATE_STATE, "
		"else ./patchgate-state)\n"
		"  --config FILE   configuration file (default: "
		"$PATCHGATE_CONFIG, else none)\n"
		"  --version       print the version\n"
		"  -h, --help      this help\n"
		"\n"
		"Commands:\n");
	for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\n'patchgate COMMAND --help' describes a command.\n"
		     "Exit codes follow sysexits.h: 75 (EX_TEMPFAIL) means "
		     "try again later.\n");
}

gboolean
pgate_cli_parse(const char *params, const char *summary,
		const GOptionEntry *entries, int *argc, char ***argv,
		GError **error)
{
	g_autoptr(GOptionContext) ctx = g_option_context_new(params);

	g_option_context_set_summary(ctx, summary);
	if (entries != NULL)
		g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, argc, argv, error)) {
		g_autoptr(GError) e = *error;

		*error = NULL;
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE, "%s",
			    e->message);
		return FALSE;
	}
	return TRUE;
}

static gboolean
take_value(int *i, int argc, char **argv, const char *opt, char **out,
	   GError **error)
{
	size_t n = strlen(opt);

	if (strncmp(argv[*i], opt, n) == 0 && argv[*i][n] == '=') {
		g_free(*out);
		*out = g_strdup(argv[*i] + n + 1);
		return TRUE;
	}
	if (*i + 1 >= argc) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "%s needs a value", opt);
		return FALSE;
	}
	g_free(*out);
	*out = g_strdup(argv[++*i]);
	return TRUE;
}

static gboolean
is_opt(const char *arg, const char *opt)
{
	size_t n = strlen(opt);

	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* What the libraries log (g_message and g_warning; g_info and g_debug
 * when G_MESSAGES_DEBUG names their domain or "all", as GLib's own
 * writer decides) is one line on stderr, "patchgate: TEXT", with a level
 * word for the serious ones, in place of GLib's "pgate-ci-Message: TIME:
 * TEXT".  Every registered secret in it is "[redacted]" first.  When
 * stderr is the journal, the journal gets the fields, the message
 * redacted the same way.  Fatal levels abort after it, as ever. */
static GLogWriterOutput
log_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
	   gpointer data)
{
	const char *domain = NULL, *message = NULL, *word = "";
	g_autofree char *clean = NULL;
	g_autofree char *line = NULL;

	for (gsize i = 0; i < n_fields; i++) {
		if (fields[i].length != -1)
			continue;   /* binary: not ours */
		if (g_str_equal(fields[i].key, "MESSAGE"))
			message = fields[i].value;
		else if (g_str_equal(fields[i].key, "GLIB_DOMAIN"))
			domain = fields[i].value;
	}
	if (g_log_writer_default_would_drop(level, domain))
		return G_LOG_WRITER_HANDLED;
	clean = pgate_secret_redact(message ? message : "");
	if (g_log_writer_is_journald(fileno(stderr))) {
		g_autofree GLogField *copy = g_memdup2(fields,
						       n_fields * sizeof *fields);

		for (gsize i = 0; i < n_fields; i++)
			if (g_str_equal(copy[i].key, "MESSAGE")) {
				copy[i].value = clean;
				copy[i].length = -1;
			}
		if (g_log_writer_journald(level, copy, n_fields, data) ==
		    G_LOG_WRITER_HANDLED)
			return G_LOG_WRITER_HANDLED;
	}
	if (level & G_LOG_LEVEL_ERROR)
		word = "error: ";
	else if (level & G_LOG_LEVEL_CRITICAL)
		word = "critical: ";
	else if (level & G_LOG_LEVEL_WARNING)
		word = "warning: ";
	else if (level & G_LOG_LEVEL_DEBUG)
		word = "debug: ";
	/* one write per line: worker threads log too */
	line = g_strdup_printf("patchgate: %s%s\n", word, clean);
	fputs(line, stderr);
	fflush(stderr);
	return G_LOG_WRITER_HANDLED;
}

static int
fail(const char *command, CmdFlags flags, GError *error)
{
	int rc = pgate_cli_exit_code(error);

	fprintf(stderr, "patchgate: %s: %s\n", command, error->message);
	if (g_error_matches(error, PGATE_CLI_ERROR, PGATE_CLI_NO_INPUT))
		return EX_NOINPUT;
	if ((flags & CMD_TEMPFAIL) && rc != EX_USAGE)
		return EX_TEMPFAIL;
	if (g_error_matches(error, PGATE_CLI_ERROR, PGATE_CLI_NO_PERM))
		return EX_NOPERM;
	return rc;
}

static void
cli_clear(PgateCli *cli)
{
	g_free(cli->state_dir);
	g_free(cli->config_path);
	if (cli->config)
		g_key_file_unref(cli->config);
	pgate_store_free(cli->store);
}

/* Opens the store the way command number @c (its arguments @cargv) asks,
 * and runs it; returns its exit code. */
static int
run_command(PgateCli *cli, gsize c, int cargc, char **cargv)
{
	g_autoptr(GError) error = NULL;
	int wants_help = 0;
	gboolean store = TRUE;
	int rc;

	/* --help needs no store, nor a group's usage */
	for (int a = 1; a < cargc; a++)
		if (strcmp(cargv[a], "--help") == 0 ||
		    strcmp(cargv[a], "-h") == 0)
			wants_help = 1;
	if (!wants_help &&
	    !pgate_cli_sub_needs_store(cli->command, cargc, cargv,
				       &store, &error))
		return fail(cli->command, commands[c].flags, error);
	if (!wants_help && store && (commands[c].flags &
				     (CMD_STORE_RW | CMD_STORE_RDONLY))) {
		PgateStoreFlags f = (commands[c].flags & CMD_STORE_RW)
			? PGATE_STORE_RW | PGATE_STORE_CREATE
			: PGATE_STORE_RDONLY;

		cli->store = pgate_cli_store_open(cli, f, &error);
		if (cli->store == NULL)
			return fail(cli->command, commands[c].flags, error);
	}
	rc = commands[c].fn(cli, cargc, cargv, &error);
	if (error != NULL)
		rc = fail(cli->command, commands[c].flags, error);
	return rc;
}

int
main(int argc, char **argv)
{
	PgateCli cli = { 0 };
	g_autoptr(GError) error = NULL;
	int i, rc = EX_USAGE;
	gsize c;

	/* before anything opens a file; with no /dev/null nothing can be
	 * said, and 75 keeps a delivery's mail */
	if (!pgate_cli_std_fds_open())
		return EX_TEMPFAIL;
	/*
	 * The character set only: the output is ISO dates and JSON, and
	 * loading every category costs a delivery about 30 file lookups.
	 */
	setlocale(LC_CTYPE, "");
	g_log_set_writer_func(log_writer, NULL, NULL);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (is_opt(argv[i], "--state")) {
			if (!take_value(&i, argc, argv, "--state",
					&cli.state_dir, &error))
				goto out_usage;
		} else if (is_opt(argv[i], "--config")) {
			if (!take_value(&i, argc, argv, "--config",
					&cli.config_path, &error))
				goto out_usage;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			rc = EX_OK;
			goto out;
		} else if (strcmp(argv[i], "--version") == 0) {
			pgate_cli_version_print(stdout);
			rc = EX_OK;
			goto out;
		} else {
			g_set_error(&error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
				    "unknown option %s", argv[i]);
			goto out_usage;
		}
	}
	if (i >= argc) {
		usage(stderr);
		goto out;
	}
	if (strcmp(argv[i], "help") == 0) {
		usage(stdout);
		rc = EX_OK;
		goto out;
	}
	for (c = 0; c < G_N_ELEMENTS(commands); c++)
		if (strcmp(argv[i], commands[c].name) == 0)
			break;
	if (c == G_N_ELEMENTS(commands)) {
		fprintf(stderr, "patchgate: unknown command '%s'; see "
			"'patchgate --help'\n", argv[i]);
		goto out;
	}
	cli.command = commands[c].name;
#ifndef PGATE_FULL
	/* series mbox needs apply/ (cmd-series-mbox.c): patchgate-full */
	if (commands[c].fn == NULL ||
	    (strcmp(cli.command, "series") == 0 && i + 1 < argc &&
	     strcmp(argv[i + 1], "mbox") == 0)) {
		rc = exec_full(argv);
		goto out;
	}
#endif

	if (cli.state_dir == NULL)
		cli.state_dir = g_strdup(g_getenv("PATCHGATE_STATE"));
	if (cli.state_dir == NULL || cli.state_dir[0] == '\0') {
		g_free(cli.state_dir);
		cli.state_dir = g_strdup("patchgate-state");
	}
	if (cli.config_path == NULL && g_getenv("PATCHGATE_CONFIG"))
		cli.config_path = g_strdup(g_getenv("PATCHGATE_CONFIG"));
	if (!(commands[c].flags & CMD_OWN_CONFIG) &&
	    !pgate_cli_config_load(&cli, &error)) {
		rc = fail(cli.command, commands[c].flags, error);
		goto out;
	}
	pgate_cli_guard_command(cli.command, commands[c].flags, cli.state_dir);

	rc = run_command(&cli, c, argc - i, argv + i);
	goto out;

out_usage:
	fprintf(stderr, "patchgate: %s\n", error->message);
	rc = EX_USAGE;
out:
	cli_clear(&cli);	/* (closing a damaged store may fault too) */
	pgate_cli_guard_disarm();
	return rc;
}
