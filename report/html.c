/* html.c - the static HTML page of `patchgate report html DIR`: every
 * series with its version chain, where it is in the pipeline, what applied
 * where and what the tests said, and a timeline of results per day (inline
 * SVG: no scripts, no external files).
 *
 * The page is built a series at a time by the caller, which reads the
 * store (this module does not: it only renders), and written atomically
 * as DIR/index.html.  Every text from mail (names, reasons) is escaped;
 * only http(s) links are made clickable.
 */
#include "report/report.h"

#include <glib/gstdio.h>
#include <string.h>

struct PgateReportHtml {
	GString *rows;            /* the table's rows */
	GHashTable *counts;       /* state -> series, in the summary line */
	GHashTable *days;         /* day -> Day */
	gint64 date;              /* of the series being written */
};

typedef struct {
	gint64 day;
	guint ok, bad, warn, other;
} Day;

static void
esc(GString *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': g_string_append(out, "&lt;"); break;
		case '>': g_string_append(out, "&gt;"); break;
		case '&': g_string_append(out, "&amp;"); break;
		case '"': g_string_append(out, "&quot;"); break;
		case '\'': g_string_append(out, "&#39;"); break;
		default: g_string_append_c(out, *s);
		}
	}
}

/* Only http(s) links are made clickable: anything else is shown as text. */
static gboolean
safe_url(const char *u)
{
	return u && (g_str_has_prefix(u, "https://") ||
		     g_str_has_prefix(u, "http://"));
}

static const char *
css_class(const char *v)
{
	if (v == NULL)
		return "none";
	if (strcmp(v, "success") == 0 || strcmp(v, "ok") == 0 ||
	    strcmp(v, "done") == 0)
		return "ok";
	if (strcmp(v, "fail") == 0 || strcmp(v, "failed") == 0 ||
	    strcmp(v, "apply-failed") == 0 || strcmp(v, "rejected") == 0)
		return "bad";
	if (strcmp(v, "warning") == 0 || strcmp(v, "error") == 0 ||
	    strcmp(v, "incomplete") == 0)
		return "warn";
	return "none";
}

static void
add_day(GHashTable *days, gint64 t, const char *cls)
{
	gint64 d = t / 86400;
	Day *e = g_hash_table_lookup(days, &d);

	if (e == NULL) {
		e = g_new0(Day, 1);
		e->day = d;
		g_hash_table_insert(days, &e->day, e);
	}
	if (strcmp(cls, "ok") == 0)
		e->ok++;
	else if (strcmp(cls, "bad") == 0)
		e->bad++;
	else if (strcmp(cls, "warn") == 0)
		e->warn++;
	else
		e->other++;
}

static gint
day_cmp(gconstpointer a, gconstpointer b)
{
	const Day *x = *(Day *const *)a, *y = *(Day *const *)b;

	return x->day < y->day ? -1 : x->day > y->day;
}

/* A stacked bar per day (at most the last 60 with activity). */
static void
timeline(GString *out, GHashTable *days)
{
	g_autoptr(GPtrArray) list = g_ptr_array_new();
	guint max = 1, n, first;
	const int W = 12, H = 120;
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, days);
	while (g_hash_table_iter_next(&it, NULL, &v))
		g_ptr_array_add(list, v);

	g_ptr_array_sort(list, day_cmp);
	n = MIN(list->len, 60);
	first = list->len - n;
	for (guint i = first; i < list->len; i++) {
		Day *d = list->pdata[i];

		max = MAX(max, d->ok + d->bad + d->warn + d->other);
	}
	g_string_append_printf(out, "<svg class=\"tl\" width=\"%d\" height=\"%d\" "
			       "role=\"img\" aria-label=\"series per day by "
			       "result\">", n * W + 2, H + 20);
	for (guint i = first; i < list->len; i++) {
		Day *d = list->pdata[i];
		guint vals[] = { d->ok, d->warn, d->bad, d->other };
		const char *cls[] = { "ok", "warn", "bad", "none" };
		int x = (int)(i - first) * W + 1, y = H;
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(d->day * 86400);
		g_autofree char *label = dt ? g_date_time_format(dt, "%F") : g_strdup("");

		for (guint k = 0; k < G_N_ELEMENTS(vals); k++) {
			int h = (int)(vals[k] * H / max);

			if (vals[k] == 0)
				continue;
			y -= h;
			g_string_append_printf(out, "<rect class=\"%s\" x=\"%d\" y=\"%d\" "
					       "width=\"%d\" height=\"%d\"><title>%s: %u "
					       "%s</title></rect>", cls[k], x, y, W - 2,
					       MAX(h, 1), label, vals[k], cls[k]);
		}
	}
	g_string_append(out, "</svg>\n");
}

PgateReportHtml *
pgate_report_html_new(void)
{
	PgateReportHtml *h = g_new0(PgateReportHtml, 1);

	h->rows = g_string_new(NULL);
	h->counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					  NULL);
	h->days = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL,
					g_free);
	return h;
}

void
pgate_report_html_free(PgateReportHtml *h)
{
	if (h == NULL)
		return;
	g_string_free(h->rows, TRUE);
	g_hash_table_unref(h->counts);
	g_hash_table_unref(h->days);
	g_free(h);
}

void
pgate_report_html_series_begin(PgateReportHtml *h,
			       const PgateReportHtmlSeries *s)
{
	g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(s->date);
	g_autofree char *date = dt ? g_date_time_format(dt, "%F %R")
				   : g_strdup("");

	h->date = s->date;
	g_string_append(h->rows, "<tr><td class=\"name\"><b>");
	esc(h->rows, s->name);
	g_string_append_printf(h->rows, "</b><br><small>%s v%u, %u/%u "
			       "patches, ", s->id, s->version, s->received,
			       s->total);
	esc(h->rows, s->submitter);
	g_string_append_printf(h->rows, ", %s</small>", date);
}

void
pgate_report_html_supersedes(PgateReportHtml *h, guint version,
			     const char *id, const char *why)
{
	g_string_append_printf(h->rows, "<br><small class=\"chain\">"
			       "supersedes v%u %s (%s)</small>", version, id,
			       why ? why : "?");
}

void
pgate_report_html_state(PgateReportHtml *h, const char *state,
			const char *reason)
{
	gpointer n = g_hash_table_lookup(h->counts, state);

	g_hash_table_replace(h->counts, g_strdup(state),
			     GUINT_TO_POINTER(GPOINTER_TO_UINT(n) + 1));
	add_day(h->days, h->date, css_class(state));
	g_string_append_printf(h->rows, "</td><td class=\"%s\">",
			       css_class(state));
	esc(h->rows, state);
	if (reason) {
		g_string_append(h->rows, "<br><small>");
		esc(h->rows, reason);
		g_string_append(h->rows, "</small>");
	}
	g_string_append(h->rows, "</td><td>");
}

void
pgate_report_html_result(PgateReportHtml *h, const char *key,
			 const char *result, const char *url,
			 const char *reason)
{
	GString *rows = h->rows;

	g_string_append_printf(rows, "<div class=\"%s\">", css_class(result));
	esc(rows, key);
	g_string_append(rows, ": ");
	if (safe_url(url)) {
		g_string_append(rows, "<a href=\"");
		esc(rows, url);
		g_string_append(rows, "\">");
		esc(rows, result);
		g_string_append(rows, "</a>");
	} else {
		esc(rows, result);
	}
	if (reason) {
		g_string_append(rows, " <small>");
		esc(rows, reason);
		g_string_append(rows, "</small>");
	}
	g_string_append(rows, "</div>");
}

void
pgate_report_html_series_end(PgateReportHtml *h)
{
	g_string_append(h->rows, "</td></tr>\n");
}

/* The whole page. */
static GString *
page(PgateReportHtml *h)
{
	GString *out = g_string_new(NULL);
	GHashTableIter hi;
	gpointer k, v;

	g_string_append(out, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
			"<meta charset=\"utf-8\"><title>patchgate</title><style>"
			"body{font:14px/1.4 sans-serif;margin:1em 2em;color:#222}"
			"table{border-collapse:collapse;width:100%}"
			"td,th{border-bottom:1px solid #ddd;padding:4px 8px;"
			"vertical-align:top;text-align:left}"
			".ok{color:#1a7f37}.bad{color:#cf222e}.warn{color:#9a6700}"
			".none{color:#57606a}.chain{color:#57606a}"
			"svg .ok{fill:#2da44e}svg .bad{fill:#cf222e}"
			"svg .warn{fill:#d4a72c}svg .none{fill:#8c959f}"
			"</style></head><body>\n<h1>patchgate</h1>\n<p>");
	g_hash_table_iter_init(&hi, h->counts);
	while (g_hash_table_iter_next(&hi, &k, &v))
		g_string_append_printf(out, "<span class=\"%s\">%s: %u</span> &nbsp; ",
				       css_class(k), (const char *)k,
				       GPOINTER_TO_UINT(v));
	g_string_append(out, "</p>\n<h2>Series per day, by result</h2>\n");
	timeline(out, h->days);
	g_string_append(out, "<h2>Series (newest versions)</h2>\n<table><tr><th>"
			"series</th><th>state</th><th>apply and tests</th></tr>\n");
	g_string_append_len(out, h->rows->str, (gssize)h->rows->len);
	g_string_append(out, "</table></body></html>\n");
	return out;
}

char *
pgate_report_html_write(PgateReportHtml *h, const char *dir, GError **error)
{
	g_autoptr(GString) out = page(h);
	g_autofree char *path = g_build_filename(dir, "index.html", NULL);
	gboolean fresh = !g_file_test(dir, G_FILE_TEST_IS_DIR);

	if (!pgate_mkdir_p(dir, PGATE_REPORT_ERROR, error))
		return NULL;
	/* a page to be served: readable by the web server */
	if (fresh)
		g_chmod(dir, 0755);
	if (!pgate_file_write_atomic(path, out->str, out->len,
				     PGATE_REPORT_ERROR, error))
		return NULL;
	g_chmod(path, 0644);
	return g_steal_pointer(&path);
}
