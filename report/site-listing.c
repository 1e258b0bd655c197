/* site-listing.c - the pages that list series (site.c decides which
 * and writes them): a listing's page (all/N.html, state/S/N.html, ...),
 * index.html with its chart of series per day, and filters.html.
 *
 * Change RENDER_VERSION in site.c with the way a listing page is drawn,
 * so that a new build rewrites them all.
 */
#include "report/site-private.h"

#include <string.h>

#define esc pgate_report_site__esc
#define hex_name pgate_report_site__hex_name
#define CHART_DAYS 30

/* A check's label in a row: [a-zA-Z0-9._@/+-] kept, the rest '_'. */
static void
label_append(GString *out, const char *s)
{
	for (; s && *s; s++)
		g_string_append_c(out, g_ascii_isalnum(*s) || strchr("._@/+-", *s)
				       ? *s : '_');
}

/* Row.checks of @s: "apply=pass build=fail ...", one per apply target
 * and CI job, as Patchwork has one check context each; a target is named
 * ("apply@net-next", "build@net-next") when there are several. */
char *
pgate_report_site__row_checks(const PgateReportSiteSeries *s)
{
	GString *out = g_string_new(NULL);
	g_autoptr(GHashTable) targets = g_hash_table_new(g_str_hash,
							 g_str_equal);

	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];

		g_hash_table_add(targets, (gpointer)(j->target ? j->target : ""));
	}
	for (guint i = 0; i < s->apply->len; i++) {
		const PgateReportSiteApply *a = s->apply->pdata[i];

		if (out->len)
			g_string_append_c(out, ' ');
		g_string_append(out, "apply");
		if (s->apply->len > 1) {
			g_string_append_c(out, '@');
			label_append(out, a->target ? a->target : "?");
		}
		g_string_append_printf(out, "=%s", pgate_report_outcome_to_string(
			pgate_report_site__apply_outcome(a->status)));
	}
	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];

		if (out->len)
			g_string_append_c(out, ' ');
		label_append(out, j->job ? j->job : "ci");
		if (g_hash_table_size(targets) > 1) {
			g_string_append_c(out, '@');
			label_append(out, j->target ? j->target : "?");
		}
		g_string_append_printf(out, "=%s",
				       pgate_report_outcome_to_string(j->outcome));
	}
	return g_string_free(out, FALSE);
}

/* Whether a row's series is done with: a newer version replaced it, or
 * it was merged (hidden in a table until asked for). */
static gboolean
row_old(const Row *r)
{
	return r->state && (g_str_has_prefix(r->state, "superseded") ||
			    strcmp(r->state, "merged") == 0);
}

/* A row's checks: a badge each (LABEL and a symbol, its outcome's
 * colour), then Patchwork's S/W/F counts. */
static void
row_checks_html(GString *out, const Row *r)
{
	g_auto(GStrv) v = g_strsplit(r->checks ? r->checks : "", " ", 0);
	guint n[PGATE_REPORT_OUTCOME_LAST + 1] = { 0 };
	static const char *const sym[] = {
		"\xe2\x80\x93", "\xe2\x80\xa6", "\xe2\x9c\x93", "!",
		"\xe2\x9c\x97",
	};

	for (guint i = 0; v[i]; i++) {
		char *eq = strrchr(v[i], '=');
		PgateReportOutcome o;

		if (eq == NULL || !pgate_report_outcome_from_string(eq + 1, &o))
			continue;
		*eq = '\0';
		n[o]++;
		g_string_append_printf(out, "<span class=\"b chk o-%s\" title=\"",
				       pgate_report_outcome_to_string(o));
		esc(out, v[i]);
		g_string_append_printf(out, ": %s\">",
				       pgate_report_outcome_to_string(o));
		esc(out, v[i]);
		g_string_append_printf(out, " %s</span> ", sym[o]);
	}
	if (v[0] == NULL) {
		g_string_append(out, "\xe2\x80\x93");
		return;
	}
	g_string_append_printf(out, "<small class=\"swf\" title=\"checks: "
			       "%u success, %u warning, %u fail\">S%u W%u "
			       "F%u</small>", n[PGATE_REPORT_OUTCOME_PASS],
			       n[PGATE_REPORT_OUTCOME_WARN],
			       n[PGATE_REPORT_OUTCOME_FAIL],
			       n[PGATE_REPORT_OUTCOME_PASS],
			       n[PGATE_REPORT_OUTCOME_WARN],
			       n[PGATE_REPORT_OUTCOME_FAIL]);
}

/* The rows of a table of series, newest first; @root leads to the
 * site's top.  Superseded and merged series are hidden until the switch
 * above the table (a checkbox, no script) shows them. */
static void
rows_html(GString *out, const char *root, GPtrArray *rows, guint from,
	  guint to, const char *caption)
{
	guint old = 0;

	for (guint i = from; i < to; i++)
		old += row_old(rows->pdata[i]);
	if (old > 0)
		g_string_append_printf(out, "<input type=\"checkbox\" "
				       "id=\"show-old\" class=\"show-old\"><label "
				       "for=\"show-old\">show the %u superseded "
				       "and merged series</label>\n", old);
	g_string_append(out, "<div class=\"scroll\"><table class=\"series\">"
			"<caption>");
	esc(out, caption);
	g_string_append(out, "</caption>\n<thead><tr><th scope=\"col\">series</th>"
			"<th scope=\"col\">state</th>"
			"<th scope=\"col\">result</th><th scope=\"col\">checks</th>"
			"<th scope=\"col\"><abbr title=\"Acked-by, Reviewed-by, "
			"Tested-by\">A/R/T</abbr></th>"
			"<th scope=\"col\">submitter"
			"</th><th scope=\"col\" class=\"hide-narrow\">project</th>"
			"<th scope=\"col\">date</th></tr></thead>\n<tbody>\n");
	for (guint i = to; i-- > from;) {
		const Row *r = rows->pdata[i];
		g_autofree char *date = pgate_report_site__date(r->date);
		g_autofree char *sh = hex_name(r->email && *r->email ? r->email
							     : r->submitter);
		g_autofree char *ph = hex_name(r->project);
		const char *o = pgate_report_outcome_to_string(r->outcome);

		g_string_append_printf(out, "<tr class=\"r-%s%s\" data-outcome=\"%s\">"
				       "<td><a href=\"%sseries/", o,
				       row_old(r) ? " old" : "", o, root);
		esc(out, r->id);
		g_string_append(out, ".html\">");
		esc(out, r->name && *r->name ? r->name : r->id);
		g_string_append_printf(out, "</a><br><small>v%u, %u/%u</small></td>"
				       "<td>", r->version, r->received, r->total);
		esc(out, r->state);
		g_string_append(out, "</td><td>");
		pgate_report_site__badge(out, r->outcome, r->outcome_text);
		g_string_append(out, "</td><td class=\"checks\">");
		row_checks_html(out, r);
		g_string_append_printf(out, "</td><td class=\"art\">%u/%u/%u</td>"
				       "<td><a href=\"%ssubmitter/%s/1.html\">",
				       r->acked, r->reviewed, r->tested, root, sh);
		esc(out, r->submitter && *r->submitter ? r->submitter : r->email);
		g_string_append_printf(out, "</a></td><td class=\"hide-narrow\">"
				       "<a href=\"%sproject/%s/1.html\">", root, ph);
		esc(out, r->project && *r->project ? r->project : "(none)");
		g_string_append_printf(out, "</a></td><td>%s</td></tr>\n", date);
	}
	g_string_append(out, "</tbody></table></div>\n");
}

GString *
pgate_report_site__listing_page(const Listing *l, guint k)
{
	GString *out = g_string_sized_new(32768);
	const Page *pg = &g_array_index(l->pages, Page, k);
	g_autofree char *title = g_strdup_printf("%s, page %u", l->title,
						 pg->num);
	g_autofree char *caption = g_strdup_printf("%s: %u series, newest first",
						   l->title, pg->to - pg->from);
	const char *root = strchr(l->dir, '/') ? "../../" : "../";

	pgate_report_site__head(out, root, title);
	g_string_append_printf(out, "<nav><a href=\"%sindex.html\">all series</a>"
			       " \xc2\xb7 <a href=\"%sfilters.html\">filters</a>"
			       " \xc2\xb7 <a href=\"%ssearch.html\">search</a>"
			       "</nav>\n<h1>", root, root, root);
	esc(out, title);
	g_string_append(out, "</h1>\n<nav aria-label=\"pages\">");
	if (k + 1 < l->pages->len)
		g_string_append_printf(out, "<a rel=\"prev\" href=\"%u.html\">newer"
				       "</a> ", g_array_index(l->pages, Page, k + 1).num);
	if (k > 0)
		g_string_append_printf(out, "<a rel=\"next\" href=\"%u.html\">older"
				       "</a>", g_array_index(l->pages, Page, k - 1).num);
	g_string_append(out, "</nav>\n");
	rows_html(out, root, l->rows, pg->from, pg->to, caption);
	pgate_report_site__foot(out);
	return out;
}

/* ---- the chart: series per day by outcome, the last CHART_DAYS days
 * that end with the newest series ---- */

static void
chart(GString *out, GPtrArray *sorted)
{
	guint counts[CHART_DAYS][PGATE_REPORT_OUTCOME_LAST + 1];
	static const PgateReportOutcome order[] = {
		PGATE_REPORT_OUTCOME_FAIL, PGATE_REPORT_OUTCOME_WARN,
		PGATE_REPORT_OUTCOME_PASS, PGATE_REPORT_OUTCOME_PENDING,
		PGATE_REPORT_OUTCOME_NONE,
	};
	static const char *const words[] = {
		"no result", "pending", "passed", "warnings", "failed",
	};
	gint64 last_day, first_day;
	guint max = 0, ymax;
	const int L = 40, T = 10, W = 600, H = 160, B = 40;
	const double bw = (double)W / CHART_DAYS;

	memset(counts, 0, sizeof counts);
	if (sorted->len == 0) {
		g_string_append(out, "<p>No series yet.</p>\n");
		return;
	}
	last_day = ((const Row *)sorted->pdata[sorted->len - 1])->date / 86400;
	first_day = last_day - CHART_DAYS + 1;
	for (guint i = sorted->len; i-- > 0;) {
		const Row *r = sorted->pdata[i];
		gint64 d = r->date / 86400;

		if (d < first_day)
			break;
		counts[d - first_day][r->outcome]++;
	}
	for (guint d = 0; d < CHART_DAYS; d++) {
		guint sum = 0;

		for (guint k = 0; k <= PGATE_REPORT_OUTCOME_LAST; k++)
			sum += counts[d][k];
		max = MAX(max, sum);
	}
	ymax = max < 4 ? 4 : (max + 3) / 4 * 4;
	g_string_append_printf(out, "<figure><svg role=\"img\" aria-labelledby="
			       "\"chart-t\" viewBox=\"0 0 %d %d\" width=\"%d\" "
			       "height=\"%d\"><title id=\"chart-t\">Series per day "
			       "by result, the last %d days</title>\n",
			       L + W + 10, T + H + B + 24, L + W + 10,
			       T + H + B + 24, CHART_DAYS);
	/* y axis, ticks and grid */
	for (guint k = 0; k <= 4; k++) {
		int y = T + H - (int)(H * k / 4);

		g_string_append_printf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
				       "y2=\"%d\" stroke=\"#d0d7de\"/><text x=\"%d\" "
				       "y=\"%d\" text-anchor=\"end\">%u</text>\n",
				       L, y, L + W, y, L - 4, y + 4, ymax * k / 4);
	}
	g_string_append_printf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			       "stroke=\"#1f2328\"/><line x1=\"%d\" y1=\"%d\" "
			       "x2=\"%d\" y2=\"%d\" stroke=\"#1f2328\"/>\n",
			       L, T, L, T + H, L, T + H, L + W, T + H);
	for (guint d = 0; d < CHART_DAYS; d++) {
		double x = L + d * bw + 1;
		double y = T + H;
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(
			(first_day + d) * 86400);
		g_autofree char *label = g_date_time_format(dt, "%m-%d");

		for (guint k = 0; k < G_N_ELEMENTS(order); k++) {
			guint n = counts[d][order[k]];
			double h = (double)H * n / ymax;

			if (n == 0)
				continue;
			y -= h;
			g_string_append_printf(out, "<rect class=\"f-%s\" x=\"%.1f\" "
					       "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
					       "<title>%s: %u %s</title></rect>\n",
					       pgate_report_outcome_to_string(order[k]),
					       x, y, bw - 2, h, label, n, words[order[k]]);
		}
		if (d % 5 == 0 || d == CHART_DAYS - 1)
			g_string_append_printf(out, "<text x=\"%.1f\" y=\"%d\" "
					       "text-anchor=\"middle\">%s</text>\n",
					       x + bw / 2, T + H + 14, label);
	}
	g_string_append_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
			       "day (UTC)</text>\n", L + W / 2, T + H + 30);
	for (guint k = 0; k < G_N_ELEMENTS(order); k++) {
		int x = L + (int)k * 110;

		g_string_append_printf(out, "<rect class=\"f-%s\" x=\"%d\" y=\"%d\" "
				       "width=\"10\" height=\"10\"/><text x=\"%d\" "
				       "y=\"%d\">%s</text>\n",
				       pgate_report_outcome_to_string(order[k]), x,
				       T + H + B + 4, x + 14, T + H + B + 13,
				       words[order[k]]);
	}
	g_string_append(out, "</svg><figcaption>Series per day, by result "
			"(the table below has the numbers)</figcaption></figure>\n"
			"<details><summary>The chart as a table</summary><table>"
			"<thead><tr><th scope=\"col\">day</th>");
	for (guint k = 0; k < G_N_ELEMENTS(order); k++)
		g_string_append_printf(out, "<th scope=\"col\">%s</th>",
				       words[order[k]]);
	g_string_append(out, "</tr></thead><tbody>\n");
	for (guint d = 0; d < CHART_DAYS; d++) {
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(
			(first_day + d) * 86400);
		g_autofree char *label = g_date_time_format(dt, "%Y-%m-%d");

		g_string_append_printf(out, "<tr><th scope=\"row\">%s</th>", label);
		for (guint k = 0; k < G_N_ELEMENTS(order); k++)
			g_string_append_printf(out, "<td>%u</td>", counts[d][order[k]]);
		g_string_append(out, "</tr>\n");
	}
	g_string_append(out, "</tbody></table></details>\n");
}

/* The links to the listings under @prefix ("state/"), with counts. */
static void
filter_links(GString *out, const char *root, GPtrArray *ls, const char *prefix,
	     const char *heading)
{
	gboolean any = FALSE;

	for (guint i = 0; i < ls->len; i++) {
		const Listing *l = ls->pdata[i];
		const char *label = strchr(l->title, ' ');

		if (!g_str_has_prefix(l->dir, prefix))
			continue;
		if (!any)
			g_string_append_printf(out, "<h2>%s</h2>\n<ul class=\"filters\">\n",
					       heading);
		any = TRUE;
		g_string_append_printf(out, "<li><a href=\"%s%s/%u.html\">", root,
				       l->dir, g_array_index(l->pages, Page,
							     l->pages->len - 1).num);
		esc(out, label ? label + 1 : l->title);
		g_string_append_printf(out, "</a> (%u)</li>\n", l->rows->len);
	}
	if (any)
		g_string_append(out, "</ul>\n");
}

GString *
pgate_report_site__index_page(const PgateReportSiteOptions *o,
			      GPtrArray *sorted, GPtrArray *ls,
			      GHashTable *lmap)
{
	GString *out = g_string_sized_new(65536);
	guint P = o->page_size;
	guint n = sorted->len, from = n > P ? n - P : 0;
	guint by_outcome[PGATE_REPORT_OUTCOME_LAST + 1] = { 0 };
	static const char *const words[] = {
		"no result", "pending", "passed", "warnings", "failed",
	};
	g_autofree char *caption = g_strdup_printf("The newest %u of %u series",
						   n - from, n);

	for (guint i = 0; i < n; i++)
		by_outcome[((const Row *)sorted->pdata[i])->outcome]++;
	pgate_report_site__head(out, "", "every series");
	g_string_append(out, "<nav><a href=\"filters.html\">filters</a> \xc2\xb7 "
			"<a href=\"search.html\">search</a> \xc2\xb7 "
			"<a href=\"find.html\">find by Message-ID</a> \xc2\xb7 "
			"<a href=\"index.json\">index.json</a></nav>\n"
			"<h1>patchgate: every series</h1>\n<p class=\"counts\">");
	g_string_append_printf(out, "<span>%u series:</span>", n);
	for (guint k = PGATE_REPORT_OUTCOME_LAST + 1; k-- > 0;) {
		g_autofree char *label = g_strdup_printf("%u %s", by_outcome[k],
							 words[k]);

		if (by_outcome[k] == 0) {
			pgate_report_site__badge(out, (PgateReportOutcome)k, label);
			g_string_append(out, " ");
			continue;
		}
		{
			const char *word = pgate_report_outcome_to_string(
				(PgateReportOutcome)k);
			g_autofree char *dir = g_strconcat("outcome/", word, NULL);
			const Listing *l = g_hash_table_lookup(lmap, dir);

			g_string_append_printf(out, "<a href=\"%s/%u.html\">", dir,
					       l ? g_array_index(l->pages, Page,
								 l->pages->len - 1).num
						 : 1);
		}
		pgate_report_site__badge(out, (PgateReportOutcome)k, label);
		g_string_append(out, "</a> ");
	}
	/* the table first: the chart is below it, never pushing it off the
	 * first screen */
	g_string_append(out, "</p>\n<h2>Newest series</h2>\n");
	rows_html(out, "", sorted, from, n, caption);
	if (from > 0)
		g_string_append_printf(out, "<nav aria-label=\"pages\"><a rel=\"next\" "
				       "href=\"all/%u.html\">older series</a> "
				       "<a href=\"all/1.html\">oldest</a></nav>\n",
				       (from - 1) / P + 1);
	g_string_append(out, "<h2>Series per day</h2>\n");
	chart(out, sorted);
	filter_links(out, "", ls, "state/", "By state");
	pgate_report_site__foot(out);
	return out;
}

GString *
pgate_report_site__filters_page(GPtrArray *ls)
{
	GString *out = g_string_sized_new(65536);

	pgate_report_site__head(out, "", "filters");
	g_string_append(out, "<nav><a href=\"index.html\">all series</a></nav>\n"
			"<h1>Filters</h1>\n<p>To combine them (a project, a state "
			"and a submitter, say) or to search the subjects: "
			"<a href=\"search.html\">search</a>.</p>\n");
	filter_links(out, "", ls, "state/", "By state");
	filter_links(out, "", ls, "outcome/", "By result");
	filter_links(out, "", ls, "project/", "By project");
	filter_links(out, "", ls, "month/", "By month");
	filter_links(out, "", ls, "submitter/", "By submitter");
	pgate_report_site__foot(out);
	return out;
}
