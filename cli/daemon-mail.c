/* daemon-mail.c - patchgate daemon: new mail in the maildirs, watched
 * with inotify (GFileMonitor) and rescanned every interval, stored one
 * file at a time as deliver would (cmd-daemon.c has the whole story). */
#include "cli/daemon.h"
#include "threading/threading.h"

#include <gio/gio.h>
#include <string.h>
#include <sys/stat.h>


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
	pgate_cli_daemon_say("maildir: skipped: %s", shown);
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
			pgate_cli_daemon_say("msgid=%s stored (%s)", rec->msgid,
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
	pgate_cli_daemon_say("maildir: %s: %s%s", name, shown,
	    pgate_error_is_transient(error) ? " (will retry)" : "");
	if (pgate_error_is_transient(error))
		g_hash_table_add(d->pending, g_strdup(path));
}

gboolean
pgate_cli_daemon_drain_pending(gpointer data)
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
		pgate_cli_daemon_pass(d);
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
		d->debounce = g_timeout_add(300, pgate_cli_daemon_drain_pending, d);
}

void
pgate_cli_daemon_watch_maildirs(Daemon *d)
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
				pgate_cli_daemon_say("maildir: cannot watch %s (%s): polled every "
				    "%u s instead", dir, error->message, d->interval);
				continue;
			}
			g_signal_connect(m, "changed", G_CALLBACK(on_change), d);
			g_ptr_array_add(d->monitors, m);
		}
	}
}

/* Every message of every maildir (the store drops what it holds). */
void
pgate_cli_daemon_scan_maildirs(Daemon *d)
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
			pgate_cli_daemon_say("maildir: %s: not a directory", dir);
			continue;
		}
		pgate_cli_thread_hooks(thr, &hooks);
		opts.hooks = &hooks;
		opts.skipped_entry = say_skipped;
		opts.skipped_entry_payload = d;
		if (!pgate_ingest_path(d->cli->store, d->cli->state_dir, dir,
				       PGATE_MBOX_MBOXRD, &opts, &st, NULL, NULL,
				       &error))
			pgate_cli_daemon_say("maildir: %s: %s", d->maildirs[i], error->message);
		else if (st.stored > 0) {
			pgate_cli_daemon_say("maildir: %s: %" G_GUINT64_FORMAT " new messages",
			    d->maildirs[i], st.stored);
			pgate_cli_thread_warn(thr, d->maildirs[i], TRUE);
			d->want_pass = TRUE;
		}
	}
	/* what is gone is forgotten: said again should it come back */
	g_hash_table_unref(d->skipped);
	d->skipped = g_steal_pointer(&d->scan_skipped);
}

