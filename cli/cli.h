/* cli.h - shared by the patchgate command implementations (not a module
 * header: nothing outside cli/ includes it). */
#pragma once

#include <glib.h>
#include <jansson.h>
#include <stdio.h>

#include "common/json.h"
#include "ingest/ingest.h"
#include "store/store.h"


typedef enum {
	CMD_NO_STORE = 0,
	CMD_STORE_RDONLY = 1 << 0,   /* open the store read-only before */
	CMD_STORE_RW = 1 << 1,       /* open (and create) it read-write */
	CMD_STORE_NO_UPGRADE_CHECK = 1 << 2,
	CMD_TEMPFAIL = 1 << 3,       /* every non-usage error exits 75 */
	CMD_OWN_CONFIG = 1 << 4,     /* the command loads the configuration */
} CmdFlags;

typedef struct {
	char *state_dir;
	char *config_path;            /* nullable */
	GKeyFile *config;             /* always set (maybe empty); by the
				       * command itself with CMD_OWN_CONFIG */
	PgateStoreOptions store_opts;
	PgateIngestOptions ingest_opts;
	PgateStore *store;            /* opened per CmdFlags */
	const char *command;          /* for error messages */
} PgateCli;

/* config.c: loads cli->config_path into cli->config, refuses a group or
 * key that is not in common/config-keys.c's table, reads [store] and
 * [ingest]. */
gboolean pgate_cli_config_load(PgateCli *cli, GError **error);
/* The same, but each wrong name or value is appended to @problems
 * (element-type GError) and the reading goes on; %FALSE only when the
 * file cannot be read or parsed. */
gboolean pgate_cli_config_read(PgateCli *cli, GPtrArray *problems,
			       GError **error);
/* version.c: `patchgate --version` */
const char *pgate_cli_version(void);     /* git describe, or the project's */
void pgate_cli_version_print(FILE *out); /* it, and the libraries' */
/* output.c */
void pgate_cli_json_print(json_t *j);    /* steals j; one line on stdout */
json_t *pgate_cli_json_strv(const GPtrArray *a);
json_t *pgate_cli_json_rec(const PgateMessageRec *rec);
int pgate_cli_exit_code(const GError *error);
/* series list: --since's DATE; a page of series, read and printed one at
 * a time (JSON: {"format_version":1,"series":[...],"next":CURSOR|null}) */
gboolean pgate_cli_parse_date(const char *s, gint64 *out);
gboolean pgate_cli_series_page_print(PgateStoreTxn *txn, const GPtrArray *ids,
				     const char *next, gboolean json,
				     GError **error);

/* commands: return a sysexits code; on failure set error and return 0,
 * and main prints "patchgate: COMMAND: message" and maps it */
typedef int (*PgateCmdFunc)(PgateCli *cli, int argc, char **argv,
			    GError **error);
int cmd_ingest(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_deliver(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_replay(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_msg(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_route(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_store(PgateCli *cli, int argc, char **argv, GError **error);
/* store-verify.c: patchgate store verify (argv after "store") */
int pgate_cli_store_verify(PgateCli *cli, int argc, char **argv,
			   GError **error);
int cmd_series(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_rethread(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_apply(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_run(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_upstream(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_recheck(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_outbox(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_approve(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_reject(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_status(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_report(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_test(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_daemon(PgateCli *cli, int argc, char **argv, GError **error);
int cmd_config(PgateCli *cli, int argc, char **argv, GError **error);
/* cmd-check.c: b4's review check command */
int cmd_check(PgateCli *cli, int argc, char **argv, GError **error);
/* cmd-series-mbox.c: patchgate series mbox (argv after "series"; full
 * binary only: the lean one execs patchgate-full for it) */
int cmd_series_mbox(PgateCli *cli, int argc, char **argv, GError **error);

/* cmd-daemon.c: the [daemon] group (docs/config.md); `config check`
 * reads it with the daemon's own reader */
typedef struct {
	char **maildirs;   /* (nullable) */
	char **inboxes;    /* (nullable) */
	gboolean fetch;
	gboolean rethread;
	guint interval;    /* seconds */
} PgateCliDaemonConfig;
gboolean pgate_cli_daemon_config_load(GKeyFile *kf, PgateCliDaemonConfig *cfg,
				      GError **error);
void pgate_cli_daemon_config_clear(PgateCliDaemonConfig *cfg);

/* cmd-run.c: a pipeline (pipeline/pipeline.h) from the configuration
 * (@quiet: no event lines), reading [upstream] every @upstream_every
 * seconds (G_MAXINT64: once, as a command does) */
typedef struct PgatePipeline PgatePipeline;
PgatePipeline *pgate_cli_pipeline_new(PgateCli *cli, gboolean quiet,
				      gint64 upstream_every, GError **error);

/* cmd-series.c: fills @h with threading's ingest hooks (payload @thr) */
struct PgateThreading;
void pgate_cli_thread_hooks(struct PgateThreading *thr, PgateIngestHooks *h);
/* Takes @thr (transfer full) and leaves it to the process's exit. */
void pgate_cli_thread_keep(struct PgateThreading *thr);
/* What threading did in a run with @thr's hooks, for --json: "done",
 * "skipped" (a hook failed for good; the messages are stored), "stale"
 * (the store waits for a rethread) or "deferred" (--no-thread). */
const char *pgate_cli_thread_state(const struct PgateThreading *thr,
				   gboolean deferred);
/* Says on stderr ("patchgate: CMD: ...") when threading was skipped, or
 * when something was @stored while the series are stale: run 'patchgate
 * rethread'. */
void pgate_cli_thread_warn(const struct PgateThreading *thr, const char *cmd,
			   gboolean stored);
/* Says on stderr ("patchgate: rethread: ...") how many message records a
 * rethread left out (its PgateThreadingStats), when it left some. */
void pgate_cli_rethread_warn(guint64 unreadable, guint64 first_unreadable);

#define PGATE_CLI_ERROR (pgate_cli_error_quark())
GQuark pgate_cli_error_quark(void);

/* A usage error: exit 64. */
#define PGATE_CLI_USAGE 1000
/* Nothing to read (deliver's empty stdin): exit 66 (EX_NOINPUT), for
 * deliver too. */
#define PGATE_CLI_NO_INPUT 1001
/* This user may not use the store (its directory, its files): exit 77
 * (EX_NOPERM); deliver's 75 all the same. */
#define PGATE_CLI_NO_PERM 1002

/* store-open.c: whether the command line of @command (argv from the
 * command's name on) needs the store opened first.  A command group
 * (series, msg, report, outbox) without a subcommand it knows does not
 * (*@out_store FALSE): the command says its usage, with no store opened.
 * outbox alone is outbox list: an unknown word after it is a usage error
 * here.  Returns: %FALSE with that usage error. */
gboolean pgate_cli_sub_needs_store(const char *command, int argc, char **argv,
				   gboolean *out_store, GError **error);
/* After the store of @state_dir failed to open: when this user lacks a
 * permission it needs (to enter the state directory, to read data.mdb,
 * ...), replaces *@error with PGATE_CLI_NO_PERM saying which.  Returns:
 * whether it did. */
gboolean pgate_cli_store_denied(const char *state_dir, gboolean writable,
				GError **error);
/* pgate_store_open() of the state directory's store, a permission
 * failure said as such (pgate_cli_store_denied()). */
PgateStore *pgate_cli_store_open(PgateCli *cli, PgateStoreFlags flags,
				 GError **error);

/* main.c: the fatal signal guard.  A damaged store can make LMDB read
 * outside its map or abort, which no error return reports.  Once armed,
 * SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL do not kill patchgate: the
 * handler writes @head, the signal's name and @tail to @fd (with
 * write(2) only) and _exit()s with @code.  main() arms it around every
 * command (65, or 75 for deliver), store verify's reader for itself; a
 * second arming replaces the first.  Any other bug that faults or aborts
 * meanwhile ends the same way: the line says "probably". */
void pgate_cli_guard_arm(int fd, const char *head, const char *tail,
			 int code);
/* The signals' default actions again. */
void pgate_cli_guard_disarm(void);
/* Arms the guard for @command, which uses the store in @state_dir: 65,
 * or 75 for a CMD_TEMPFAIL command (deliver). */
void pgate_cli_guard_command(const char *command, CmdFlags flags,
			     const char *state_dir);
/* Opens each of descriptors 0, 1 and 2 that is closed on /dev/null: a
 * closed one would be taken by the next file opened (write.lock read as
 * the message to deliver, an error line written into lock.mdb).
 * Returns: %FALSE when that failed. */
gboolean pgate_cli_std_fds_open(void);

/* Parses argv with entries; --help prints and exits 0.  Returns FALSE
 * with a usage error. */
gboolean pgate_cli_parse(const char *usage, const char *summary,
			 const GOptionEntry *entries, int *argc, char ***argv,
			 GError **error);
