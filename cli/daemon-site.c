/* daemon-site.c - the daemon keeps [report] html_dir up to date
 * (docs/report-site.md): after every pass, the series the pass logged
 * an event of (and the other versions of their chains) are rendered
 * again, and the listings where they changed; every hour, and at the
 * first pass, every series is (threading alone changes a series too: a
 * reply's trailers), and the series the store no longer has are dropped.
 * Only pages whose bytes changed are written, each to a temporary file,
 * fsync'd, renamed.
 */
#include "cli/daemon.h"

#include <string.h>

#define FULL_EVERY_US ((gint64)G_USEC_PER_SEC * 3600)

struct DaemonSite {
	PgatePipelineLog log;        /* the pipeline's own, called after */
	gpointer log_data;
	GHashTable *touched;         /* series ids this pass logged */
	gint64 last_full;            /* monotonic µs; 0: never */
	PgateReportSite *site;       /* (nullable): open from pass to pass,
				      * so that its cache is read once */
	char *dir;                   /* where it is */
};

static void
site_log(gpointer data, const char *series_id, const char *what,
	 const char *detail)
{
	Daemon *d = data;
	DaemonSite *s = d->site;

	/* a series id: "s" and 12 hex digits */
	if (series_id && series_id[0] == 's' && strlen(series_id) == 13)
		g_hash_table_add(s->touched, g_strdup(series_id));
	if (s->log)
		s->log(s->log_data, series_id, what, detail);
}

void
pgate_cli_daemon_site_begin(Daemon *d)
{
	if (d->site == NULL) {
		d->site = g_new0(DaemonSite, 1);
		d->site->touched = g_hash_table_new_full(g_str_hash, g_str_equal,
							 g_free, NULL);
	}
	/* (again after a reload: the pipeline was made anew) */
	{
		PgatePipelineLog log;
		gpointer data;

		pgate_pipeline_get_log(d->p, &log, &data);
		if (log != site_log) {
			d->site->log = log;
			d->site->log_data = data;
			pgate_pipeline_set_log(d->p, site_log, d);
		}
	}
}

void
pgate_cli_daemon_site_end(Daemon *d)
{
	g_autoptr(PgateSiteConfig) c = NULL;
	const char *html_dir;
	g_autoptr(GError) error = NULL;
	g_autofree gpointer *ids = NULL;
	PgateReportSiteStats st = { 0 };
	DaemonSite *s = d->site;
	gint64 now = g_get_monotonic_time();
	gboolean full;
	gint64 t0 = now;

	if (s == NULL)
		return;
	c = pgate_pipeline_site_config_new(d->cli->config, &error);
	if (c == NULL) {
		pgate_cli_daemon_say("site: %s", error->message);
		return;
	}
	html_dir = pgate_pipeline_site_config_html_dir(c);
	if (html_dir == NULL)
		return;
	full = s->last_full == 0 || now - s->last_full >= FULL_EVERY_US;
	if (!full && g_hash_table_size(s->touched) == 0)
		return;
	ids = g_hash_table_get_keys_as_array(s->touched, NULL);
	if (s->site && g_strcmp0(s->dir, html_dir) != 0)
		g_clear_pointer(&s->site, pgate_report_site_free);
	if (s->site == NULL) {
		s->site = pgate_pipeline_site_open(c, html_dir, &error);
		g_free(s->dir);
		s->dir = g_strdup(html_dir);
	}
	if (s->site == NULL ||
	    !pgate_pipeline_site_update(d->cli->store, c, d->cli->state_dir,
					s->site,
					full ? NULL : (const char *const *)ids,
					&st, &error)) {
		pgate_cli_daemon_say("site: %s: %s", html_dir, error->message);
		/* opened afresh next time, from what is on disk */
		g_clear_pointer(&s->site, pgate_report_site_free);
		return;
	}
	if (full)
		s->last_full = now;
	g_hash_table_remove_all(s->touched);
	pgate_cli_daemon_say("site: %s: %u series rendered, %u files written, "
			     "%u removed, in %" G_GINT64_FORMAT " ms", html_dir,
			     st.put, st.written, st.removed,
			     (g_get_monotonic_time() - t0) / 1000);
}

void
pgate_cli_daemon_site_free(Daemon *d)
{
	if (d->site == NULL)
		return;
	g_hash_table_unref(d->site->touched);
	g_clear_pointer(&d->site->site, pgate_report_site_free);
	g_free(d->site->dir);
	g_clear_pointer(&d->site, g_free);
}
