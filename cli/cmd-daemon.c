/* cmd-daemon.c - patchgate daemon: the pipeline, continuously.
 *
 *   [daemon]
 *   maildirs = /srv/mail/lists/linux-i3c;...   watched with inotify
 *   inboxes = /srv/lore/linux-i3c;...          fetched and replayed
 *   interval = 60                              seconds between polls
 *   fetch = true                               git fetch inboxes first
 *   rethread = true                            repair failed threading
 *
 * One GLib main loop.  New maildir files (inotify, through GFileMonitor;
 * a rescan every interval covers a monitor that missed something) are
 * stored one by one as `deliver` would; every interval the inboxes are
 * fetched (libgit2, the remote "origin" of each epoch) and replayed.  A
 * pass of the pipeline runs after new mail (debounced) and every
 * interval (to poll CI).  The local runner's jobs run inside the daemon;
 * Jenkins' are polled.  SIGTERM/SIGINT: the pass at work finishes, the
 * local jobs still running are waited for (at most their timeout), the
 * outbox is flushed, and the daemon exits 0.  SIGHUP reloads the
 * configuration (local jobs still running are then submitted again).
 * One line per event on stderr (journald): "series=ID state: reason",
 * "msgid=ID stored".
 *
 * When threading failed for good and mail was stored without it (meta
 * "threading_failed", from any process: deliver, ingest or this one),
 * nothing is threaded until a rethread; the pipeline would stop seeing
 * new series.  With rethread = true (the default) the pass rethreads
 * first, in one write transaction (deliveries meanwhile wait, or exit 75
 * past the lock timeout, and the MTA retries them); after a failure it
 * tries again an hour later (a transient one: the next interval).  A
 * rethread that was asked for (ingest --no-thread, store upgrade) is
 * left to whoever asked: a bulk import would be rethreaded again and
 * again.
 */
#include "cli/daemon.h"
#include "threading/threading.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <glib-unix.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>


void
pgate_cli_daemon_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("patchgate: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(ap);
}

gboolean
pgate_cli_daemon_config_load(GKeyFile *kf, PgateCliDaemonConfig *cfg,
			     GError **error)
{
	gint64 iv;

	memset(cfg, 0, sizeof *cfg);
	if (!pgate_config_bool(kf, "daemon", "fetch", FALSE, &cfg->fetch,
			       PGATE_CLI_ERROR, error) ||
	    !pgate_config_bool(kf, "daemon", "rethread", TRUE, &cfg->rethread,
			       PGATE_CLI_ERROR, error) ||
	    !pgate_config_int(kf, "daemon", "interval", 60, 1, 86400, FALSE,
			      &iv, PGATE_CLI_ERROR, error))
		return FALSE;
	cfg->interval = (guint)iv;
	/* items stripped, as every list (docs/config.md): "a; b" is "b",
	 * not " b", which names no directory */
	if (!pgate_config_list(kf, "daemon", "maildirs", &cfg->maildirs,
			       PGATE_CLI_ERROR, error) ||
	    !pgate_config_list(kf, "daemon", "inboxes", &cfg->inboxes,
			       PGATE_CLI_ERROR, error)) {
		pgate_cli_daemon_config_clear(cfg);
		return FALSE;
	}
	return TRUE;
}

void
pgate_cli_daemon_config_clear(PgateCliDaemonConfig *cfg)
{
	g_clear_pointer(&cfg->maildirs, g_strfreev);
	g_clear_pointer(&cfg->inboxes, g_strfreev);
}

static gboolean
load_config(Daemon *d, GError **error)
{
	PgateCliDaemonConfig cfg;

	if (!pgate_cli_daemon_config_load(d->cli->config, &cfg, error))
		return FALSE;
	g_strfreev(d->maildirs);
	g_strfreev(d->inboxes);
	d->maildirs = g_steal_pointer(&cfg.maildirs);
	d->inboxes = g_steal_pointer(&cfg.inboxes);
	d->fetch = cfg.fetch;
	d->rethread = cfg.rethread;
	d->interval = cfg.interval;
	g_clear_pointer(&d->p, pgate_pipeline_free);
	/* [upstream]: each interval */
	d->p = pgate_cli_pipeline_new(d->cli, FALSE, d->interval, error);
	return d->p != NULL;
}


/* ---- public-inbox ---- */

static void
replay_inboxes(Daemon *d)
{
	for (guint i = 0; d->inboxes && d->inboxes[i]; i++) {
		const char *dir = g_strstrip(d->inboxes[i]);
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateThreading) thr = pgate_threading_new();
		PgateIngestOptions opts = d->cli->ingest_opts;
		PgateReplayOptions ro = PGATE_REPLAY_OPTIONS_INIT;
		PgateIngestHooks hooks;
		PgateIngestStats st = { 0 };
		PgateReplayStats rs = { 0 };

		if (d->fetch && !pgate_ingest_fetch(dir, &error)) {
			pgate_cli_daemon_say("inbox: fetch %s", error->message);
			g_clear_error(&error);
		}
		pgate_cli_thread_hooks(thr, &hooks);
		opts.hooks = &hooks;
		if (!pgate_ingest_replay(d->cli->store, dir, &opts, &ro, &st, &rs,
					 NULL, NULL, &error))
			pgate_cli_daemon_say("inbox: %s: %s", dir, error->message);
		else if (st.stored > 0) {
			pgate_cli_daemon_say("inbox: %s: %" G_GUINT64_FORMAT " new messages", dir,
			    st.stored);
			pgate_cli_thread_warn(thr, dir, TRUE);
			d->want_pass = TRUE;
		}
	}
}

/* ---- the pipeline ---- */

static void
outbox_log(gpointer data, const char *key, const char *what,
	   const char *detail)
{
	pgate_cli_daemon_say("outbox=%s %s%s%s", key, what, detail ? ": " : "",
	    detail ? detail : "");
}

/* Rethreads when threading failed for good (see the top). */
static void
repair_threading(Daemon *d)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autofree char *why = NULL;
	PgateThreadingStats st = { 0 };
	gint64 now = g_get_monotonic_time();

	if (!d->rethread || now < d->rethread_after)
		return;
	txn = pgate_store_begin_read(d->cli->store, &error);
	if (txn == NULL) {
		pgate_cli_daemon_say("rethread: %s", error->message);
		return;
	}
	why = pgate_store_threading_failed(txn);
	g_clear_pointer(&txn, pgate_store_txn_free);
	if (why == NULL)
		return;
	pgate_cli_daemon_say("rethread: threading failed (%s); rethreading", why);
	if (!pgate_threading_rethread(d->cli->store, &st, &error)) {
		gboolean again = pgate_error_is_transient(error);

		pgate_cli_daemon_say("rethread: %s (trying again %s)", error->message,
		    again ? "at the next pass" : "in an hour");
		d->rethread_after = now + (again ? 0 : G_TIME_SPAN_HOUR);
		return;
	}
	pgate_cli_daemon_say("rethread: %" G_GUINT64_FORMAT " messages, %" G_GUINT64_FORMAT
	    " series", st.messages, st.series);
	pgate_cli_rethread_warn(st.unreadable, st.first_unreadable);
}

guint
pgate_cli_daemon_pass(Daemon *d)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgatePatchwork) pw = NULL;
	PgatePipelineStats st = { 0, 0, 0 };
	g_auto(PgateOutboxStats) ost = { 0 };
	PgateOutbox ob = { d->cli->store, NULL, NULL, outbox_log, NULL,
			   FALSE, NULL };

	repair_threading(d);
	if (d->p == NULL)
		return 0;
	ob.email = (PgateEmailConfig *)pgate_pipeline_email(d->p);
	pgate_cli_daemon_site_begin(d);
	if (!pgate_pipeline_run(d->p, NULL, &st, &error)) {
		pgate_cli_daemon_say("run: %s", error->message);
		g_clear_error(&error);
	}
	pgate_cli_daemon_site_end(d);
	if (g_key_file_has_group(d->cli->config, "patchwork") &&
	    !pgate_pipeline_has_projects(d->p)) { /* they have their own */
		pw = pgate_patchwork_new(d->cli->config, "patchwork", &error);
		if (pw == NULL) {
			pgate_cli_daemon_say("patchwork: %s", error->message);
			g_clear_error(&error);
		}
		ob.pw = pw;
	}
	if (!pgate_pipeline_outbox_flush(d->p, &ob, &ost, &error))
		pgate_cli_daemon_say("outbox: %s", error->message);
	return st.testing;
}

static gboolean
tick(gpointer data)
{
	Daemon *d = data;

	pgate_cli_daemon_scan_maildirs(d);
	replay_inboxes(d);
	pgate_cli_daemon_pass(d);
	return G_SOURCE_CONTINUE;
}

static gboolean
on_term(gpointer data)
{
	Daemon *d = data;

	pgate_cli_daemon_say("daemon: stopping (signal)");
	d->stopping = TRUE;
	g_main_loop_quit(d->loop);
	return G_SOURCE_CONTINUE;
}

static gboolean
on_hup(gpointer data)
{
	Daemon *d = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GKeyFile) old = d->cli->config;

	d->cli->config = NULL;
	if (!pgate_cli_config_load(d->cli, &error) ||
	    !load_config(d, &error)) {
		pgate_cli_daemon_say("daemon: reload failed, keeping the old configuration: %s",
		    error->message);
		if (d->cli->config)
			g_key_file_unref(d->cli->config);
		d->cli->config = g_steal_pointer(&old);
		g_clear_error(&error);
		if (!load_config(d, &error))
			pgate_cli_daemon_say("daemon: %s", error->message);
		return G_SOURCE_CONTINUE;
	}
	pgate_cli_daemon_watch_maildirs(d);
	pgate_cli_daemon_say("daemon: configuration reloaded");
	return G_SOURCE_CONTINUE;
}

int
cmd_daemon(PgateCli *cli, int argc, char **argv, GError **error)
{
	GOptionEntry entries[] = {
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autofree char *lockpath = NULL;
	Daemon d = { 0 };
	int lock;

	if (!pgate_cli_parse("", "Run continuously: watch the [daemon] maildirs, "
			     "fetch and replay the [daemon] inboxes, and move "
			     "every series through apply, test and report.  "
			     "SIGTERM stops cleanly, SIGHUP reloads the "
			     "configuration.", entries, &argc, &argv, error))
		return 0;
	lockpath = g_build_filename(cli->state_dir, PGATE_STATE_RUN_LOCK, NULL);
	lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_BUSY,
			    "another daemon or 'patchgate run' holds %s",
			    lockpath);
		if (lock >= 0)
			close(lock);
		return 0;
	}
	git_libgit2_init();
	d.cli = cli;
	d.monitors = g_ptr_array_new_with_free_func(g_object_unref);
	d.pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d.skipped = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d.loop = g_main_loop_new(NULL, FALSE);
	g_unix_signal_add(SIGTERM, on_term, &d);
	g_unix_signal_add(SIGINT, on_term, &d);
	g_unix_signal_add(SIGHUP, on_hup, &d);
	if (!load_config(&d, error))
		goto out;
	pgate_cli_daemon_watch_maildirs(&d);
	pgate_cli_daemon_say("daemon: started (%u maildirs, %u inboxes, every %u s)",
	    d.maildirs ? g_strv_length(d.maildirs) : 0,
	    d.inboxes ? g_strv_length(d.inboxes) : 0, d.interval);
	tick(&d);
	g_timeout_add_seconds(d.interval, tick, &d);
	g_main_loop_run(d.loop);

	/* stopping: what came in, the local jobs at work, the reports */
	pgate_cli_daemon_drain_pending(&d);
	for (guint n = 0; pgate_cli_daemon_pass(&d) > 0 && d.p != NULL &&
	     pgate_pipeline_runs_local_jobs(d.p) && n < 36000; n++)
		g_usleep(200 * 1000);
	pgate_cli_daemon_say("daemon: stopped");
	d.exit_code = EX_OK;
out:
	g_clear_pointer(&d.p, pgate_pipeline_free);
	pgate_cli_daemon_site_free(&d);
	if (d.loop)
		g_main_loop_unref(d.loop);
	g_ptr_array_unref(d.monitors);
	g_hash_table_unref(d.pending);
	g_hash_table_unref(d.skipped);
	g_strfreev(d.maildirs);
	g_strfreev(d.inboxes);
	git_libgit2_shutdown();
	close(lock);
	return d.exit_code;
}
