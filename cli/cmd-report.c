/* cmd-report.c - patchgate report html DIR: one static page that shows
 * every series with its version chain, where it is in the pipeline, what
 * applied where and what the tests said, and a timeline of results per
 * day (inline SVG: no scripts, no external files).  Written atomically
 * (DIR/index.html). */
#include "cli/cli.h"
#include "pipeline/pipeline.h"
#include "threading/threading.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sysexits.h>

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

typedef struct {
	gint64 day;
	guint ok, bad, warn, other;
} Day;

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

int
cmd_report(PgateCli *cli, int argc, char **argv, GError **error)
{
	GOptionEntry entries[] = {
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GString) rows = g_string_new(NULL);
	g_autoptr(GHashTable) days = g_hash_table_new_full(g_int64_hash,
							    g_int64_equal,
							    NULL, g_free);
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_rec_free);
	g_autoptr(GHashTable) counts = g_hash_table_new_full(g_str_hash,
							      g_str_equal,
							      g_free, NULL);
	g_autofree char *path = NULL;
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GError) local = NULL;
	GHashTableIter hi;
	gpointer k, v;
	gboolean fresh;

	if (!pgate_cli_parse("html DIR", "Write DIR/index.html: every series "
			     "with its versions, apply and test results, and a "
			     "timeline.", entries, &argc, &argv, error))
		return 0;
	if (argc != 3 || strcmp(argv[1], "html") != 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "usage: patchgate report html DIR");
		return 0;
	}
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &local))
		g_ptr_array_add(list, s);
	pgate_store_series_iter_clear(&it);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return 0;
	}
	/* newest first; superseded versions under their newest */
	for (guint i = list->len; i-- > 0;) {
		PgateSeriesRec *r = list->pdata[i];
		g_autofree char *prefix = g_strdup_printf("%s/", r->id);
		g_autoptr(json_t) st = NULL;
		json_t *pipe;
		const char *state, *key;
		json_t *doc;
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(r->date);
		g_autofree char *date = dt ? g_date_time_format(dt, "%F %R") : g_strdup("");

		if (r->superseded_by != NULL)
			continue;
		st = pgate_state_scan(txn, prefix, error);
		if (st == NULL)
			return 0;
		pipe = json_object_get(st, "pipeline");
		state = pipe ? pgate_state_str(pipe, "state") : "new";
		g_hash_table_replace(counts, g_strdup(state),
				     GUINT_TO_POINTER(GPOINTER_TO_UINT(
					     g_hash_table_lookup(counts, state)) + 1));
		add_day(days, r->date, css_class(state));
		g_string_append(rows, "<tr><td class=\"name\"><b>");
		esc(rows, r->name);
		g_string_append_printf(rows, "</b><br><small>%s v%u, %u/%u patches, ",
				       r->id, r->version, r->patches->len, r->total);
		esc(rows, r->submitter_name ? r->submitter_name : r->submitter_email);
		g_string_append_printf(rows, ", %s</small>", date);
		/* the version chain */
		{
			g_autofree char *prev = g_strdup(r->supersedes);
			/* the reason of the link to prev: owned, since the
			 * series it comes from is freed before it is shown */
			g_autofree char *why = g_strdup(r->link_reason);

			for (int n = 0; prev && n < 10; n++) {
				g_autoptr(PgateSeriesRec) pr = pgate_store_series_get(
					txn, prev, NULL);

				if (pr == NULL)
					break;
				g_string_append_printf(rows, "<br><small class=\"chain\">"
						       "supersedes v%u %s (%s)</small>",
						       pr->version, pr->id, why ? why : "?");
				g_free(why);
				why = g_steal_pointer(&pr->link_reason);
				g_free(prev);
				prev = g_strdup(pr->supersedes);
			}
		}
		g_string_append_printf(rows, "</td><td class=\"%s\">", css_class(state));
		esc(rows, state);
		if (pipe && pgate_state_str(pipe, "reason")) {
			g_string_append(rows, "<br><small>");
			esc(rows, pgate_state_str(pipe, "reason"));
			g_string_append(rows, "</small>");
		}
		g_string_append(rows, "</td><td>");
		json_object_foreach(st, key, doc) {
			const char *what;
			const char *url = pgate_state_str(doc, "url");
			const char *reason = pgate_state_str(doc, "reason");
			json_t *f = json_object_get(doc, "failure");

			if (g_str_has_prefix(key, "apply/"))
				what = pgate_state_str(doc, "status");
			else if (g_str_has_prefix(key, "ci/"))
				what = pgate_state_str(doc, "verdict")
					? pgate_state_str(doc, "verdict")
					: pgate_state_str(doc, "state");
			else
				continue;
			if (f && !reason)
				reason = pgate_state_str(f, "reason");
			g_string_append_printf(rows, "<div class=\"%s\">", css_class(what));
			esc(rows, key);
			g_string_append(rows, ": ");
			if (safe_url(url)) {
				g_string_append(rows, "<a href=\"");
				esc(rows, url);
				g_string_append(rows, "\">");
				esc(rows, what);
				g_string_append(rows, "</a>");
			} else {
				esc(rows, what);
			}
			if (reason) {
				g_string_append(rows, " <small>");
				esc(rows, reason);
				g_string_append(rows, "</small>");
			}
			g_string_append(rows, "</div>");
		}
		g_string_append(rows, "</td></tr>\n");
	}

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
	g_hash_table_iter_init(&hi, counts);
	while (g_hash_table_iter_next(&hi, &k, &v))
		g_string_append_printf(out, "<span class=\"%s\">%s: %u</span> &nbsp; ",
				       css_class(k), (const char *)k,
				       GPOINTER_TO_UINT(v));
	g_string_append(out, "</p>\n<h2>Series per day, by result</h2>\n");
	timeline(out, days);
	g_string_append(out, "<h2>Series (newest versions)</h2>\n<table><tr><th>"
			"series</th><th>state</th><th>apply and tests</th></tr>\n");
	g_string_append_len(out, rows->str, (gssize)rows->len);
	g_string_append(out, "</table></body></html>\n");

	fresh = !g_file_test(argv[2], G_FILE_TEST_IS_DIR);
	if (!pgate_mkdir_p(argv[2], PGATE_CLI_ERROR, error))
		return 0;
	/* a page to be served: readable by the web server */
	if (fresh)
		g_chmod(argv[2], 0755);
	path = g_build_filename(argv[2], "index.html", NULL);
	if (!pgate_file_write_atomic(path, out->str, out->len, PGATE_CLI_ERROR,
				     error))
		return 0;
	g_chmod(path, 0644);
	printf("%s\n", path);
	return EX_OK;
}
