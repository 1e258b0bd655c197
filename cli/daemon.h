/* daemon.h - what the daemon's files (cmd-daemon.c, daemon-mail.c)
 * share; nothing else includes it. */
#pragma once

#include <gio/gio.h>

#include "cli/cli.h"
#include "pipeline/pipeline.h"

typedef struct DaemonSite DaemonSite;

typedef struct {
	PgateCli *cli;
	GMainLoop *loop;
	PgatePipeline *p;        /* (nullable): made anew at each reload */
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
	DaemonSite *site;        /* (nullable): daemon-site.c */
} Daemon;

/* One line on stderr (journald): "patchgate: " and the text. */
void pgate_cli_daemon_say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* One pass of the pipeline and the outbox; returns the next interval. */
guint pgate_cli_daemon_pass(Daemon *d);
/* daemon-mail.c: a monitor on new/ and cur/ of every maildir (those that
 * cannot be watched are polled), and the rescan of every maildir. */
void pgate_cli_daemon_watch_maildirs(Daemon *d);
void pgate_cli_daemon_scan_maildirs(Daemon *d);
/* Stores the new files noted since the last call, then runs a pass if
 * mail came (a GSourceFunc: @data is the Daemon). */
gboolean pgate_cli_daemon_drain_pending(gpointer data);
/* daemon-site.c: [report] html_dir kept up to date; _begin before a
 * pass (notes the series it logs), _end after it (renders them). */
void pgate_cli_daemon_site_begin(Daemon *d);
void pgate_cli_daemon_site_end(Daemon *d);
void pgate_cli_daemon_site_free(Daemon *d);
