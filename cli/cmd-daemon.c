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
#include "cli/cli.h"
#include "pipeline/pipeline.h"
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

typedef struct {
	PgateCli *cli;
	GMainLoop *loop;
	PgatePipeline p;
	gboolean have_pipeline;
	char **maildirs;
	char **inboxes;
	gboolean fetch;
	gboolean rethread;       /* repair failed threading */
	gint64 rethread_after;   /* monotonic µs: not before, after a failure */
	guint interval;
	GPtrArray *monitors;     /* GFileMonitor* */
	GHashTable *pending;     /* paths of new maildir files */
	GHashTable *skipped;     /* maildir entries said to be skipped */
	GHashTable *scan_skipped; /* (nullable): those a rescan met */
	guint debounce;          /* source id, 0: none */
	gboolean want_pass;
	gboolean stopping;
	int exit_code;
} Daemon;

static void
say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("patchgate: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(ap);
}

static gboolean
load_config(Daemon *d, GError **error)
{
	GKeyFile *kf = d->cli->config;
	gint64 iv;
	gboolean fetch, rethread;

	if (!pgate_config_bool(kf, "daemon", "fetch", FALSE, &fetch,
			       PGATE_CLI_ERROR, error) ||
	    !pgate_config_bool(kf, "daemon", "rethread", TRUE, &rethread,
			       PGATE_CLI_ERROR, error) ||
	    !pgate_config_int(kf, "daemon", "interval", 60, 1, 86400, FALSE,
			      &iv, PGATE_CLI_ERROR, error))
		return FALSE;
	g_strfreev(d->maildirs);
	g_strfreev(d->inboxes);
	d->maildirs = g_key_file_get_string_list(d->cli->config, "daemon",
						 "maildirs", NULL, NULL);
	d->inboxes = g_key_file_get_string_list(d->cli->config, "daemon",
						"inboxes", NULL, NULL);
	d->fetch = fetch;
	d->rethread = rethread;
	d->interval = (guint)iv;
	if (d->have_pipeline)
		pgate_cli_pipeline_clear(&d->p);
	d->have_pipeline = pgate_cli_pipeline_init(d->cli, &d->p, FALSE, error);
	return d->have_pipeline;
}

static guint pass(Daemon *d);

/* ---- mail ---- */

/* A maildir entry that is no message (a FIFO, a directory, a symlink):
 * said when first met, not again at every rescan while it stays, so that
 * a maildir full of them does not fill the journal. */
static void
say_skipped(const char *path, const GError *why, gpointer data)
{
	Daemon *d = data;
	g_autofree char *shown = NULL;

	if (d->scan_skipped != NULL)
		g_hash_table_add(d->scan_skipped, g_strdup(path));
	if (!g_hash_table_add(d->skipped, g_strdup(path)))
		return;
	/* the name is the deliverer's: no control characters in the log */
	shown = g_strescape(why->message, NULL);
	say("maildir: skipped: %s", shown);
}

/* One new maildir file, as `deliver` would store it.  Whoever delivers
 * into the maildir names what is in it: the file is opened without
 * following a symlink or waiting on a FIFO, and only a regular file is
 * read (pgate_ingest_maildir_file()). */
static void
store_file(Daemon *d, const char *path)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateThreading) thr = pgate_threading_new();
	g_autoptr(PgateMessageRec) rec = NULL;
	g_autofree char *shown = NULL, *name = NULL;
	PgateIngestOptions opts = d->cli->ingest_opts;
	PgateIngestHooks hooks;
	PgateStoreAddResult res;

	pgate_cli_thread_hooks(thr, &hooks);
	opts.hooks = &hooks;
	if (pgate_ingest_maildir_file(d->cli->store, d->cli->state_dir, path,
				      &opts, &res, &rec, &error)) {
		if (res != PGATE_STORE_DUPLICATE) {
			say("msgid=%s stored (%s)", rec->msgid,
			    pgate_msg_kind_to_string(rec->kind));
			pgate_cli_thread_warn(thr, path, TRUE);
			d->want_pass = TRUE;
		}
		return;
	}
	/* moved from new/ to cur/ meanwhile: the cur/ event has it */
	if (g_error_matches(error, PGATE_INGEST_ERROR, PGATE_ERROR_NOT_FOUND))
		return;
	if (g_error_matches(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID)) {
		say_skipped(path, error, d);
		return;
	}
	/* the name is the deliverer's: no control characters in the log */
	name = g_strescape(path, NULL);
	shown = g_strescape(error->message, NULL);
	say("maildir: %s: %s%s", name, shown,
	    pgate_error_is_transient(error) ? " (will retry)" : "");
	if (pgate_error_is_transient(error))
		g_hash_table_add(d->pending, g_strdup(path));
}

static gboolean
drain_pending(gpointer data)
{
	Daemon *d = data;
	g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer k;

	d->debounce = 0;
	g_hash_table_iter_init(&it, d->pending);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		g_ptr_array_add(paths, k);
		g_hash_table_iter_steal(&it);
	}
	for (guint i = 0; i < paths->len; i++)
		store_file(d, paths->pdata[i]);
	if (d->want_pass && !d->stopping) {
		d->want_pass = FALSE;
		pass(d);
	}
	return G_SOURCE_REMOVE;
}

static void
on_change(GFileMonitor *m, GFile *file, GFile *other, GFileMonitorEvent ev,
	  gpointer data)
{
	Daemon *d = data;
	GFile *f = ev == G_FILE_MONITOR_EVENT_MOVED_IN ? file :
		   ev == G_FILE_MONITOR_EVENT_RENAMED ? other : file;
	g_autofree char *path = NULL;
	g_autofree char *base = NULL;

	/* maildir delivery is a rename into new/ (MOVED_IN); a file
	 * written in place is complete at CHANGES_DONE */
	if (ev != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT &&
	    ev != G_FILE_MONITOR_EVENT_MOVED_IN &&
	    ev != G_FILE_MONITOR_EVENT_RENAMED)
		return;
	if (f == NULL)
		return;
	path = g_file_get_path(f);
	base = g_file_get_basename(f);
	if (path == NULL || base == NULL || base[0] == '.')
		return;
	g_hash_table_add(d->pending, g_steal_pointer(&path));
	/* a burst of deliveries becomes one batch and one pass */
	if (d->debounce == 0)
		d->debounce = g_timeout_add(300, drain_pending, d);
}

static void
watch_maildirs(Daemon *d)
{
	g_ptr_array_set_size(d->monitors, 0);
	for (guint i = 0; d->maildirs && d->maildirs[i]; i++) {
		static const char *const subs[] = { "new", "cur" };

		for (gsize s = 0; s < G_N_ELEMENTS(subs); s++) {
			g_autofree char *dir = g_build_filename(
				g_strstrip(d->maildirs[i]), subs[s], NULL);
			g_autoptr(GFile) f = g_file_new_for_path(dir);
			g_autoptr(GError) error = NULL;
			GFileMonitor *m = g_file_monitor_directory(
				f, G_FILE_MONITOR_WATCH_MOVES, NULL, &error);

			if (m == NULL) {
				say("maildir: cannot watch %s (%s): polled every "
				    "%u s instead", dir, error->message, d->interval);
				continue;
			}
			g_signal_connect(m, "changed", G_CALLBACK(on_change), d);
			g_ptr_array_add(d->monitors, m);
		}
	}
}

/* Every message of every maildir (the store drops what it holds). */
static void
scan_maildirs(Daemon *d)
{
	d->scan_skipped = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						NULL);
	for (guint i = 0; d->maildirs && d->maildirs[i]; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateThreading) thr = pgate_threading_new();
		PgateIngestOptions opts = d->cli->ingest_opts;
		PgateIngestHooks hooks;
		PgateIngestStats st = { 0 };
		const char *dir = g_strstrip(d->maildirs[i]);
		struct stat sb;

		/* a path that is no directory would be read as an mbox,
		 * and a FIFO would block the daemon */
		if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
			say("maildir: %s: not a directory", dir);
			continue;
		}
		pgate_cli_thread_hooks(thr, &hooks);
		opts.hooks = &hooks;
		opts.skipped_entry = say_skipped;
		opts.skipped_entry_payload = d;
		if (!pgate_ingest_path(d->cli->store, d->cli->state_dir, dir,
				       PGATE_MBOX_MBOXRD, &opts, &st, NULL, NULL,
				       &error))
			say("maildir: %s: %s", d->maildirs[i], error->message);
		else if (st.stored > 0) {
			say("maildir: %s: %" G_GUINT64_FORMAT " new messages",
			    d->maildirs[i], st.stored);
			pgate_cli_thread_warn(thr, d->maildirs[i], TRUE);
			d->want_pass = TRUE;
		}
	}
	/* what is gone is forgotten: said again should it come back */
	g_hash_table_unref(d->skipped);
	d->skipped = g_steal_pointer(&d->scan_skipped);
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
			say("inbox: fetch %s", error->message);
			g_clear_error(&error);
		}
		pgate_cli_thread_hooks(thr, &hooks);
		opts.hooks = &hooks;
		if (!pgate_ingest_replay(d->cli->store, dir, &opts, &ro, &st, &rs,
					 NULL, NULL, &error))
			say("inbox: %s: %s", dir, error->message);
		else if (st.stored > 0) {
			say("inbox: %s: %" G_GUINT64_FORMAT " new messages", dir,
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
	say("outbox=%s %s%s%s", key, what, detail ? ": " : "",
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
		say("rethread: %s", error->message);
		return;
	}
	why = pgate_store_threading_failed(txn);
	g_clear_pointer(&txn, pgate_store_txn_free);
	if (why == NULL)
		return;
	say("rethread: threading failed (%s); rethreading", why);
	if (!pgate_threading_rethread(d->cli->store, &st, &error)) {
		gboolean again = pgate_error_is_transient(error);

		say("rethread: %s (trying again %s)", error->message,
		    again ? "at the next pass" : "in an hour");
		d->rethread_after = now + (again ? 0 : G_TIME_SPAN_HOUR);
		return;
	}
	say("rethread: %" G_GUINT64_FORMAT " messages, %" G_GUINT64_FORMAT
	    " series", st.messages, st.series);
	pgate_cli_rethread_warn(st.unreadable, st.first_unreadable);
}

static guint
pass(Daemon *d)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgatePatchwork) pw = NULL;
	PgatePipelineStats st = { 0, 0, 0 };
	PgateOutboxStats ost = { 0, 0, 0, 0 };
	PgateOutbox ob = { d->cli->store, NULL, d->p.email, outbox_log, NULL,
			   FALSE };

	repair_threading(d);
	if (!d->have_pipeline)
		return 0;
	if (!pgate_pipeline_run(&d->p, NULL, &st, &error)) {
		say("run: %s", error->message);
		g_clear_error(&error);
	}
	if (g_key_file_has_group(d->cli->config, "patchwork")) {
		pw = pgate_patchwork_new(d->cli->config, "patchwork", &error);
		if (pw == NULL) {
			say("patchwork: %s", error->message);
			g_clear_error(&error);
		}
		ob.pw = pw;
	}
	if (!pgate_outbox_flush(&ob, &ost, &error))
		say("outbox: %s", error->message);
	return st.testing;
}

static gboolean
tick(gpointer data)
{
	Daemon *d = data;

	scan_maildirs(d);
	replay_inboxes(d);
	pass(d);
	return G_SOURCE_CONTINUE;
}

static gboolean
on_term(gpointer data)
{
	Daemon *d = data;

	say("daemon: stopping (signal)");
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
		say("daemon: reload failed, keeping the old configuration: %s",
		    error->message);
		if (d->cli->config)
			g_key_file_unref(d->cli->config);
		d->cli->config = g_steal_pointer(&old);
		g_clear_error(&error);
		if (!load_config(d, &error))
			say("daemon: %s", error->message);
		return G_SOURCE_CONTINUE;
	}
	watch_maildirs(d);
	say("daemon: configuration reloaded");
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
	watch_maildirs(&d);
	say("daemon: started (%u maildirs, %u inboxes, every %u s)",
	    d.maildirs ? g_strv_length(d.maildirs) : 0,
	    d.inboxes ? g_strv_length(d.inboxes) : 0, d.interval);
	tick(&d);
	g_timeout_add_seconds(d.interval, tick, &d);
	g_main_loop_run(d.loop);

	/* stopping: what came in, the local jobs at work, the reports */
	drain_pending(&d);
	for (guint n = 0; pass(&d) > 0 && d.p.ci != NULL &&
	     strcmp(d.p.ci_cfg.backend, "local") == 0 && n < 36000; n++)
		g_usleep(200 * 1000);
	say("daemon: stopped");
	d.exit_code = EX_OK;
out:
	if (d.have_pipeline)
		pgate_cli_pipeline_clear(&d.p);
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
