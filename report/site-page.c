/* site-page.c - the pages of one series: series/ID.html (everything
 * known about it) and log/ID-HASH.html (a job's full log, line by line),
 * and the sentence that compares a version's results with the one
 * before.
 *
 * Every text here comes from mail or from a build's output: escaped by
 * pgate_report_site__esc(), and a URL is a link only when it is http(s).
 */
#include "report/site-private.h"

#include <string.h>

#define esc pgate_report_site__esc
#define badge pgate_report_site__badge

/* One "== step NAME: STATUS ... in X s" line of a local job's log, with
 * the line where the step began ("== step NAME: COMMAND"). */
typedef struct {
	char *name, *status, *seconds;
	guint start, end;         /* 1-based line numbers; start 0: unknown */
} Step;

static void
step_free(gpointer p)
{
	Step *s = p;

	g_free(s->name);
	g_free(s->status);
	g_free(s->seconds);
	g_free(s);
}

static const char *const step_words[] = {
	"passed", "failed", "timeout", "cancelled", "error", "not-run", NULL,
};

/* The steps a log tells of (at most 64), in order. */
static GPtrArray *
log_steps(const char *log)
{
	GPtrArray *steps = g_ptr_array_new_with_free_func(step_free);
	g_autoptr(GHashTable) started = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, NULL);
	guint line = 0;

	for (const char *p = log; p && *p && steps->len < 64;) {
		const char *nl = strchr(p, '\n');
		gsize len = nl ? (gsize)(nl - p) : strlen(p);
		const char *colon;

		line++;
		if (len > 8 && len < 4096 && strncmp(p, "== step ", 8) == 0 &&
		    (colon = memchr(p + 8, ':', len - 8)) != NULL &&
		    colon + 2 <= p + len) {
			g_autofree char *name = g_strndup(p + 8, (gsize)(colon - p - 8));
			g_autofree char *rest = g_strndup(colon + 2,
				len - (gsize)(colon + 2 - p));
			const char *word = NULL;

			for (guint i = 0; step_words[i]; i++) {
				gsize wl = strlen(step_words[i]);

				if (strncmp(rest, step_words[i], wl) == 0 &&
				    (rest[wl] == ' ' || rest[wl] == ':' ||
				     rest[wl] == '\0') && strstr(rest, " in ")) {
					word = step_words[i];
					break;
				}
			}
			if (word == NULL) {
				g_hash_table_replace(started, g_strdup(name),
						     GUINT_TO_POINTER(line));
			} else {
				Step *s = g_new0(Step, 1);
				const char *in = g_strrstr(rest, " in ");
				const char *sp = in ? strchr(in + 4, ' ') : NULL;

				s->status = g_strdup(word);
				s->seconds = in && sp ? g_strndup(in + 4, (gsize)(sp - in - 4))
					: NULL;
				s->start = GPOINTER_TO_UINT(g_hash_table_lookup(started,
										name));
				s->end = line;
				s->name = g_steal_pointer(&name);
				g_ptr_array_add(steps, s);
			}
		}
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	return steps;
}

static PgateReportOutcome
step_outcome(const char *status)
{
	if (strcmp(status, "passed") == 0)
		return PGATE_REPORT_OUTCOME_PASS;
	if (strcmp(status, "not-run") == 0 || strcmp(status, "cancelled") == 0)
		return PGATE_REPORT_OUTCOME_NONE;
	return PGATE_REPORT_OUTCOME_FAIL;
}

/* An archive link for @msgid of series @s: [report] archive_url with
 * {msgid} percent-encoded, else the known archive of its list.  Without
 * an archive: @text as it is when @text_alone, else the Message-ID. */
static void
archive_link(GString *out, const PgateReportSiteOptions *o,
	     const PgateReportSiteSeries *s, const char *msgid,
	     const char *text, gboolean text_alone)
{
	g_autofree char *url = pgate_report_archive_url(o->archive_url,
							s->project, msgid);

	if (url == NULL) {
		if (text_alone) {
			esc(out, text);
		} else if (msgid != NULL) {
			g_string_append(out, "<code class=\"msgid\">");
			esc(out, msgid);
			g_string_append(out, "</code>");
		}
		return;
	}
	g_string_append(out, "<a href=\"");
	pgate_report_site__url(out, url);
	g_string_append(out, "\">");
	esc(out, text);
	g_string_append(out, "</a>");
}

static gint64
job_seconds(const PgateReportSiteJob *j)
{
	return j->submitted > 0 && j->finished >= j->submitted
		? j->finished - j->submitted : -1;
}

static void
section_versions(GString *out, const PgateReportSiteSeries *s)
{
	if (s->versions == NULL || s->versions->len == 0)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-versions\"><h2 "
			"id=\"h-versions\">Versions</h2>\n<ol class=\"timeline\">\n");
	for (guint i = 0; i < s->versions->len; i++) {
		const PgateReportSiteVersion *v = s->versions->pdata[i];
		g_autofree char *date = pgate_report_site__date(v->date);
		gboolean self = g_strcmp0(v->id, s->id) == 0;

		g_string_append(out, "<li>");
		if (self)
			g_string_append_printf(out, "<strong aria-current=\"page\">"
					       "v%u</strong>", v->version);
		else {
			g_string_append(out, "<a href=\"");
			esc(out, v->id);
			g_string_append_printf(out, ".html\">v%u</a>", v->version);
		}
		g_string_append(out, " ");
		badge(out, v->outcome, v->state);
		g_string_append_printf(out, " <small>%s · ", date);
		esc(out, v->id);
		g_string_append(out, "</small>");
		if (i > 0) {
			g_string_append(out, "<br><small class=\"rule\">linked to "
					"the version before by: ");
			esc(out, v->rule ? v->rule : "(the store does not say)");
			g_string_append(out, "</small>");
		}
		g_string_append(out, "</li>\n");
	}
	g_string_append(out, "</ol></section>\n");
}

static void
section_patches(GString *out, const PgateReportSiteSeries *s,
		const PgateReportSiteOptions *o)
{
	g_string_append(out, "<section aria-labelledby=\"h-patches\"><h2 "
			"id=\"h-patches\">Patches</h2>\n<div class=\"scroll\">"
			"<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">"
			"subject</th><th scope=\"col\">author</th><th scope=\"col\">"
			"trailers</th><th scope=\"col\">links</th></tr></thead><tbody>\n");
	if (s->cover_msgid) {
		g_string_append(out, "<tr><td>0</td><td>(cover letter)</td><td>"
				"</td><td></td><td class=\"links\">");
		archive_link(out, o, s, s->cover_msgid, "archive", FALSE);
		g_string_append(out, "</td></tr>\n");
	}
	for (guint i = 0; i < s->patches->len; i++) {
		const PgateReportSitePatch *p = s->patches->pdata[i];

		g_string_append_printf(out, "<tr id=\"patch-%u\"><td>%u</td><td>",
				       p->number, p->number);
		esc(out, p->subject ? p->subject : p->msgid);
		g_string_append(out, "</td><td>");
		esc(out, p->author);
		g_string_append(out, "</td><td>");
		if (p->trailers && p->trailers->len) {
			g_string_append(out, "<ul class=\"tr\">");
			for (guint k = 0; k < p->trailers->len; k++) {
				const PgateTrailer *t = p->trailers->pdata[k];

				g_string_append(out, "<li>");
				esc(out, t->name);
				g_string_append(out, ": ");
				esc(out, t->value);
				g_string_append(out, "</li>");
			}
			g_string_append(out, "</ul>");
		}
		g_string_append(out, "</td><td class=\"links\">");
		archive_link(out, o, s, p->msgid, "archive", FALSE);
		if (p->patchwork_url) {
			g_string_append(out, " <a href=\"");
			pgate_report_site__url(out, p->patchwork_url);
			g_string_append(out, "\">Patchwork</a>");
		}
		g_string_append(out, "</td></tr>\n");
	}
	g_string_append(out, "</tbody></table></div>\n");
	/* each patch's diff, folded */
	for (guint i = 0; i < s->patches->len; i++) {
		const PgateReportSitePatch *p = s->patches->pdata[i];

		if (p->diff == NULL)
			continue;
		g_string_append_printf(out, "<details class=\"diff\" id=\"diff-%u\">"
				       "<summary>diff of patch %u: ", p->number,
				       p->number);
		esc(out, p->subject ? p->subject : p->msgid);
		g_string_append(out, "</summary><pre class=\"diff\">");
		esc(out, p->diff);
		g_string_append_printf(out, "%s</pre></details>\n",
				       p->diff_truncated
				       ? "\n[... cut: larger than the page shows]"
				       : "");
	}
	g_string_append(out, "</section>\n");
}

/* The cover letter's text: the "Changes in vN" notes. */
/* The replies to the series' mails, each linked to its archive copy. */
static void
section_replies(GString *out, const PgateReportSiteSeries *s,
		const PgateReportSiteOptions *o)
{
	if (s->replies_total == 0)
		return;
	g_string_append_printf(out, "<section aria-labelledby=\"h-replies\"><h2 "
			       "id=\"h-replies\">Replies (%u)</h2>\n<ul "
			       "class=\"replies\">\n", s->replies_total);
	for (guint i = 0; i < s->replies->len; i++) {
		const PgateReportSiteReply *r = s->replies->pdata[i];
		g_autofree char *date = pgate_report_site__date(r->date);

		g_string_append_printf(out, "<li>%s ", date);
		esc(out, r->author ? r->author : "?");
		g_string_append(out, ": ");
		archive_link(out, o, s, r->msgid, r->subject && *r->subject
			     ? r->subject : r->msgid, TRUE);
		g_string_append(out, "</li>\n");
	}
	if (s->replies_total > s->replies->len)
		g_string_append_printf(out, "<li>and %u more</li>\n",
				       s->replies_total - s->replies->len);
	g_string_append(out, "</ul></section>\n");
}

static void
section_cover(GString *out, const PgateReportSiteSeries *s)
{
	if (s->cover_text == NULL || *s->cover_text == '\0')
		return;
	g_string_append(out, "<section aria-labelledby=\"h-cover\"><h2 "
			"id=\"h-cover\">Cover letter</h2>\n<pre class=\"cover\">");
	esc(out, s->cover_text);
	g_string_append(out, "</pre></section>\n");
}

static void
section_deps(GString *out, const PgateReportSiteSeries *s)
{
	if ((s->deps == NULL || s->deps->len == 0) && s->merged_as == NULL &&
	    s->upstream == NULL)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-deps\"><h2 "
			"id=\"h-deps\">Dependencies and merge</h2>\n<ul>\n");
	for (guint i = 0; s->deps && i < s->deps->len; i++) {
		const PgateSeriesDep *d = s->deps->pdata[i];

		g_string_append(out, "<li>");
		esc(out, d->kind);
		g_string_append(out, ": <code>");
		esc(out, d->value);
		g_string_append(out, "</code></li>\n");
	}
	if (s->merged_as) {
		g_string_append(out, "<li>merged as <code>");
		esc(out, s->merged_as);
		g_string_append(out, "</code></li>\n");
	}
	if (s->upstream) {
		/* why: each match's evidence, what it beat, the hints */
		g_string_append(out, "<li>upstream:\n<ul class=\"upstream\">\n");
		for (guint i = 0; i < s->upstream->len; i++) {
			g_string_append(out, "<li><code>");
			esc(out, s->upstream->pdata[i]);
			g_string_append(out, "</code></li>\n");
		}
		g_string_append(out, "</ul></li>\n");
	}
	g_string_append(out, "</ul></section>\n");
}

/* [project NAME]: what each project made of the series */
static void
section_projects(GString *out, const PgateReportSiteSeries *s)
{
	if (s->projects == NULL || s->projects->len == 0)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-projects\"><h2 "
			"id=\"h-projects\">Projects</h2>\n<ul>\n");
	for (guint i = 0; i < s->projects->len; i++) {
		g_string_append(out, "<li>");
		esc(out, s->projects->pdata[i]);
		g_string_append(out, "</li>\n");
	}
	g_string_append(out, "</ul></section>\n");
}

PgateReportOutcome
pgate_report_site__apply_outcome(const char *status)
{
	if (status == NULL)
		return PGATE_REPORT_OUTCOME_PENDING;
	if (strcmp(status, "ok") == 0 || strcmp(status, "already-applied") == 0)
		return PGATE_REPORT_OUTCOME_PASS;
	return PGATE_REPORT_OUTCOME_FAIL;
}

/* The meta table's rows that get the series: its mbox (as git am takes
 * it, with the review trailers) and the git fetch line of each published
 * result. */
static void
section_get(GString *out, const PgateReportSiteSeries *s)
{
	if (s->mbox != NULL) {
		g_string_append(out, "<tr><th scope=\"row\">mbox</th><td><a "
				"href=\"");
		esc(out, s->id);
		g_string_append(out, ".mbox\" download>");
		esc(out, s->id);
		g_string_append(out, ".mbox</a> (the patches with their review "
				"trailers, for <code>git am</code>)</td></tr>\n");
	}
	for (guint i = 0; s->fetch != NULL && i < s->fetch->len; i++) {
		g_string_append(out, "<tr><th scope=\"row\">fetch</th><td><code>"
				"git fetch ");
		esc(out, s->fetch->pdata[i]);
		g_string_append(out, "</code></td></tr>\n");
	}
}

static void
section_apply(GString *out, const PgateReportSiteSeries *s)
{
	if (s->apply->len == 0)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-apply\"><h2 "
			"id=\"h-apply\">Apply</h2>\n<div class=\"scroll\"><table>"
			"<thead><tr><th scope=\"col\">target</th><th scope=\"col\">"
			"result</th><th scope=\"col\">base</th><th scope=\"col\">"
			"head</th><th scope=\"col\">why</th></tr></thead><tbody>\n");
	for (guint i = 0; i < s->apply->len; i++) {
		const PgateReportSiteApply *a = s->apply->pdata[i];

		g_string_append(out, "<tr><td>");
		esc(out, a->target);
		g_string_append(out, "</td><td>");
		badge(out, pgate_report_site__apply_outcome(a->status), a->status ? a->status : "?");
		g_string_append(out, "</td><td><code>");
		esc(out, a->base);
		g_string_append(out, "</code></td><td><code>");
		esc(out, a->head);
		g_string_append(out, "</code></td><td>");
		if (a->fail_patch > 0)
			g_string_append_printf(out, "<a href=\"#patch-%" G_GINT64_FORMAT
					       "\">patch %" G_GINT64_FORMAT "</a>",
					       a->fail_patch, a->fail_patch);
		if (a->fail_file) {
			g_string_append(out, ", <code>");
			esc(out, a->fail_file);
			g_string_append(out, "</code>");
		}
		if (a->fail_hunk > 0)
			g_string_append_printf(out, ", hunk %" G_GINT64_FORMAT,
					       a->fail_hunk);
		if (a->fail_reason) {
			g_string_append(out, ": ");
			esc(out, a->fail_reason);
		}
		if (a->fail_hunk_text) {
			g_string_append(out, "<pre class=\"hunk\">");
			esc(out, a->fail_hunk_text);
			g_string_append(out, "</pre>");
		}
		g_string_append(out, "</td></tr>\n");
	}
	g_string_append(out, "</tbody></table></div></section>\n");
}

static void
section_jobs(GString *out, const PgateReportSiteSeries *s)
{
	if (s->jobs->len == 0)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-jobs\"><h2 "
			"id=\"h-jobs\">Tests</h2>\n<div class=\"scroll\"><table>"
			"<thead><tr><th scope=\"col\">job</th><th scope=\"col\">"
			"verdict</th><th scope=\"col\">steps</th><th scope=\"col\">"
			"duration</th><th scope=\"col\">log</th></tr></thead><tbody>\n");
	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];
		g_autoptr(GPtrArray) steps = log_steps(j->log);
		g_autofree char *log = pgate_report_site_log_path(j->key);
		gint64 secs = job_seconds(j);

		g_string_append(out, "<tr class=\"job\"><td>");
		esc(out, j->job);
		if (j->target) {
			g_string_append(out, " <small>on ");
			esc(out, j->target);
			g_string_append(out, "</small>");
		}
		g_string_append(out, "</td><td>");
		badge(out, j->outcome, j->result);
		if (j->reason) {
			g_string_append(out, "<br><small>");
			esc(out, j->reason);
			g_string_append(out, "</small>");
		}
		if (j->has_tests)
			g_string_append_printf(out, "<br><small>tests: %" G_GINT64_FORMAT
					       " run, %" G_GINT64_FORMAT " failed, %"
					       G_GINT64_FORMAT " skipped</small>",
					       j->tests_total, j->tests_failed,
					       j->tests_skipped);
		if (j->warnings_added > 0)
			g_string_append_printf(out, "<br><small>%" G_GINT64_FORMAT
					       " new warning(s)</small>",
					       j->warnings_added);
		g_string_append(out, "</td><td>");
		if (steps->len) {
			g_string_append(out, "<ul class=\"steps\">");
			for (guint k = 0; k < steps->len; k++) {
				const Step *st = steps->pdata[k];

				g_string_append(out, "<li>");
				badge(out, step_outcome(st->status), st->status);
				g_string_append(out, " ");
				if (j->log) {
					g_string_append(out, "<a href=\"../");
					esc(out, log);
					g_string_append_printf(out, "#L%u\">",
							       st->start ? st->start
									 : st->end);
				}
				esc(out, st->name);
				if (j->log)
					g_string_append(out, "</a>");
				if (st->seconds) {
					g_string_append(out, " <small>");
					esc(out, st->seconds);
					g_string_append(out, " s</small>");
				}
				g_string_append(out, "</li>");
			}
			g_string_append(out, "</ul>");
		}
		g_string_append(out, "</td><td>");
		if (secs >= 0)
			g_string_append_printf(out, "%" G_GINT64_FORMAT " s", secs);
		g_string_append(out, "</td><td>");
		if (j->log) {
			g_string_append(out, "<a class=\"loglink\" href=\"../");
			esc(out, log);
			g_string_append(out, "\">full log</a>");
		}
		if (j->url) {
			g_string_append(out, " <a href=\"");
			pgate_report_site__url(out, j->url);
			g_string_append(out, "\">build page</a>");
		}
		g_string_append(out, "</td></tr>\n");
		if (j->summary) {
			g_string_append(out, "<tr><td colspan=\"5\"><details><summary>"
					"summary</summary><pre>");
			esc(out, j->summary);
			g_string_append(out, "</pre></details></td></tr>\n");
		}
	}
	g_string_append(out, "</tbody></table></div></section>\n");
}

/* The class of a line of a diff, coloured as git colours it (of a
 * range-diff with @range: its pair lines by their marker, and the diff
 * of diffs, indented 4, by its outer marker), or %NULL. */
static const char *
diff_class(const char *l, gsize n, gboolean range)
{
	if (range) {
		const char *sp = memchr(l, ' ', n);

		if (n >= 4 && memcmp(l, "    ", 4) == 0) {
			l += 4;
			n -= 4;
		} else if (sp != NULL && sp + 10 < l + n) {
			/* "N: ABBREV M N: ..." */
			const char *m = memchr(sp + 1, ' ', (gsize)(l + n - sp - 1));

			if (m == NULL || m + 1 >= l + n)
				return NULL;
			switch (m[1]) {
			case '=': return "dS";
			case '!': return "dC";
			case '<': return "dD";
			case '>': return "dA";
			default: return NULL;
			}
		} else {
			return NULL;
		}
	}
	if (n >= 3 && (memcmp(l, "+++", 3) == 0 || memcmp(l, "---", 3) == 0))
		return "dM";
	if (n >= 10 && memcmp(l, "diff --git", 10) == 0)
		return "dM";
	if (n >= 2 && memcmp(l, "@@", 2) == 0)
		return "dH";
	if (n >= 1 && l[0] == '+')
		return "dA";
	if (n >= 1 && l[0] == '-')
		return "dD";
	return NULL;
}

/* @text escaped, each line in a span of its diff_class(). */
static void
diff_lines(GString *out, const char *text, gboolean range)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		gsize n = nl ? (gsize)(nl - p) : strlen(p);
		const char *c = diff_class(p, n, range);

		if (c != NULL)
			g_string_append_printf(out, "<span class=\"%s\">", c);
		pgate_report_site__esc_len(out, p, n);
		if (c != NULL)
			g_string_append(out, "</span>");
		if (nl == NULL)
			break;
		g_string_append_c(out, '\n');
		p = nl + 1;
	}
}

static void
section_between(GString *out, const PgateReportSiteSeries *s)
{
	if (s->range_diff == NULL && s->interdiff == NULL)
		return;
	g_string_append(out, "<section aria-labelledby=\"h-between\"><h2 "
			"id=\"h-between\">Since the version before</h2>\n");
	if (s->range_diff) {
		g_string_append(out, "<h3>Patches paired (range-diff)</h3>"
				"<pre class=\"diff\">");
		diff_lines(out, s->range_diff, TRUE);
		g_string_append(out, "</pre>\n");
	}
	if (s->interdiff) {
		g_string_append(out, "<details open><summary>Interdiff of the applied "
				"trees</summary><pre class=\"diff\">");
		diff_lines(out, s->interdiff, FALSE);
		g_string_append(out, "</pre></details>\n");
	}
	g_string_append(out, "</section>\n");
}

/* On an old version's page: which version replaced it, and the newest. */
static void
superseded_notice(GString *out, const PgateReportSiteSeries *s)
{
	const PgateReportSiteVersion *next = NULL, *last = NULL;

	for (guint i = 0; s->versions != NULL && i < s->versions->len; i++) {
		const PgateReportSiteVersion *v = s->versions->pdata[i];

		if (g_strcmp0(v->id, s->id) == 0 && i + 1 < s->versions->len)
			next = s->versions->pdata[i + 1];
		last = v;
	}
	if (next == NULL)
		return;
	g_string_append(out, "<p class=\"superseded\">Superseded by <a href=\"");
	esc(out, next->id);
	g_string_append_printf(out, ".html\">v%u</a>", next->version);
	if (last != next) {
		g_string_append(out, "; the newest is <a href=\"");
		esc(out, last->id);
		g_string_append_printf(out, ".html\">v%u</a>", last->version);
	}
	g_string_append(out, ".</p>\n");
}

GString *
pgate_report_site__series_page(const PgateReportSiteSeries *s,
			       const PgateReportSiteOptions *o)
{
	GString *out = g_string_sized_new(8192);
	g_autofree char *title = g_strdup_printf("v%u %s", s->version,
						 s->name ? s->name : "");
	g_autofree char *date = pgate_report_site__date(s->date);

	pgate_report_site__head(out, "../", title);
	g_string_append(out, "<nav><a href=\"../index.html\">all series</a> · "
			"<a href=\"../find.html\">find by Message-ID</a></nav>\n<h1>");
	esc(out, s->name);
	g_string_append_printf(out, " <small>v%u</small></h1>\n<p>", s->version);
	badge(out, s->outcome, s->outcome_text);
	g_string_append(out, "</p>\n");
	superseded_notice(out, s);
	if (s->compare) {
		g_string_append(out, "<p class=\"compare\">");
		esc(out, s->compare);
		g_string_append(out, "</p>\n");
	}
	g_string_append(out, "<table class=\"meta\"><tbody>\n<tr><th scope=\"row\">"
			"series</th><td><code>");
	esc(out, s->id);
	g_string_append(out, "</code> (<a href=\"");
	esc(out, s->id);
	g_string_append(out, ".json\">JSON</a>)</td></tr>\n");
	section_get(out, s);
	g_string_append(out, "<tr><th scope=\"row\">submitter</th><td>");
	esc(out, s->submitter);
	if (s->submitter_email && *s->submitter_email) {
		g_string_append(out, " &lt;");
		esc(out, s->submitter_email);
		g_string_append(out, "&gt;");
	}
	g_string_append(out, "</td></tr>\n<tr><th scope=\"row\">project</th><td>");
	esc(out, s->project);
	g_string_append_printf(out, "</td></tr>\n<tr><th scope=\"row\">date</th>"
			       "<td>%s</td></tr>\n<tr><th scope=\"row\">patches"
			       "</th><td>%u of %u</td></tr>\n<tr><th scope=\"row\">"
			       "state</th><td>", date, s->received, s->total);
	esc(out, s->state);
	if (s->state_reason) {
		g_string_append(out, ": ");
		esc(out, s->state_reason);
	}
	g_string_append(out, "</td></tr>\n</tbody></table>\n");
	section_versions(out, s);
	section_cover(out, s);
	section_patches(out, s, o);
	section_replies(out, s, o);
	section_deps(out, s);
	section_projects(out, s);
	section_apply(out, s);
	section_jobs(out, s);
	section_between(out, s);
	pgate_report_site__foot(out);
	return out;
}

/* The most failing lines listed above a log. */
#define BAD_LINKS_MAX 20

/* Whether a line of a failed step says what failed, as compilers, make,
 * test harnesses and interpreters write it. */
static gboolean
bad_line(const char *p, gsize len)
{
	static const char *const marks[] = {
		"error:", "Error:", "ERROR", "FAIL", "fatal:", "Fatal error",
		"*** [", "undefined reference", "Traceback (most recent",
		"Segmentation fault", "Assertion", "not ok ", "panic:",
	};
	for (guint i = 0; i < G_N_ELEMENTS(marks); i++)
		if (g_strstr_len(p, (gssize)MIN(len, 4096), marks[i]) != NULL)
			return TRUE;
	return FALSE;
}

GString *
pgate_report_site__log_page(const PgateReportSiteSeries *s,
			    const PgateReportSiteJob *j)
{
	GString *out = g_string_sized_new(strlen(j->log) * 2 + 4096);
	g_autoptr(GPtrArray) steps = log_steps(j->log);
	g_autofree char *title = g_strdup_printf("log of %s, v%u %s",
						 j->job ? j->job : "job",
						 s->version, s->name ? s->name : "");
	guint failed_start = 0, failed_end = 0, line = 0, nbad = 0;
	g_autoptr(GArray) bad = g_array_new(FALSE, FALSE, sizeof(guint));

	pgate_report_site__head(out, "../", title);
	g_string_append(out, "<nav><a href=\"../index.html\">all series</a> · "
			"<a href=\"../series/");
	esc(out, s->id);
	g_string_append(out, ".html\">the series</a></nav>\n<h1>Log of ");
	esc(out, j->job);
	g_string_append(out, "</h1>\n<p>");
	esc(out, s->name);
	g_string_append_printf(out, " v%u", s->version);
	if (j->target) {
		g_string_append(out, ", on ");
		esc(out, j->target);
	}
	g_string_append(out, ": ");
	badge(out, j->outcome, j->result);
	g_string_append(out, "</p>\n");
	if (steps->len) {
		g_string_append(out, "<table><thead><tr><th scope=\"col\">step</th>"
				"<th scope=\"col\">result</th><th scope=\"col\">"
				"seconds</th></tr></thead><tbody>\n");
		for (guint k = 0; k < steps->len; k++) {
			const Step *st = steps->pdata[k];
			guint at = st->start ? st->start : st->end;

			if (failed_start == 0 &&
			    step_outcome(st->status) == PGATE_REPORT_OUTCOME_FAIL) {
				failed_start = at;
				failed_end = st->end;
			}
			g_string_append_printf(out, "<tr><td><a href=\"#L%u\">", at);
			esc(out, st->name);
			g_string_append(out, "</a></td><td>");
			badge(out, step_outcome(st->status), st->status);
			g_string_append(out, "</td><td>");
			esc(out, st->seconds);
			g_string_append(out, "</td></tr>\n");
		}
		g_string_append(out, "</tbody></table>\n");
		if (failed_start)
			g_string_append_printf(out, "<p><a href=\"#failed\">to the "
					       "failing step</a></p>\n");
	}
	/* the lines of the failing step that say what failed */
	if (failed_start) {
		guint n = 0;

		for (const char *p = j->log; *p && n <= failed_end;) {
			const char *nl = strchr(p, '\n');
			gsize len = nl ? (gsize)(nl - p) : strlen(p);

			n++;
			if (n > failed_start && n < failed_end &&
			    bad_line(p, len))
				g_array_append_val(bad, n);
			if (nl == NULL)
				break;
			p = nl + 1;
		}
	}
	if (bad->len > 0) {
		g_string_append(out, "<p>Failing lines:");
		for (guint k = 0; k < bad->len && k < BAD_LINKS_MAX; k++) {
			guint l = g_array_index(bad, guint, k);

			g_string_append_printf(out, " <a href=\"#L%u\">%u</a>", l, l);
		}
		if (bad->len > BAD_LINKS_MAX)
			g_string_append_printf(out, " and %u more",
					       bad->len - BAD_LINKS_MAX);
		g_string_append(out, "</p>\n");
	}
	if (j->log_truncated)
		g_string_append(out, "<p>The log is longer than the site shows: "
				"its end is cut.</p>\n");
	g_string_append(out, "<pre class=\"log\">");
	for (const char *p = j->log; *p;) {
		const char *nl = strchr(p, '\n');
		gsize len = nl ? (gsize)(nl - p) : strlen(p);

		line++;
		if (line == failed_start)
			g_string_append(out, "<span id=\"failed\"></span>");
		g_string_append_printf(out, "<a class=\"n\" id=\"L%u\" href=\"#L%u\">"
				       "%u</a>", line, line, line);
		if (nbad < bad->len && g_array_index(bad, guint, nbad) == line) {
			nbad++;
			g_string_append(out, "<mark class=\"bad\">");
			pgate_report_site__esc_len(out, p, len);
			g_string_append(out, "</mark>");
		} else {
			pgate_report_site__esc_len(out, p, len);
		}
		g_string_append_c(out, '\n');
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	g_string_append(out, "</pre>\n");
	pgate_report_site__foot(out);
	return out;
}

/* ---- the sentence across versions ---- */

static const PgateReportSiteJob *
find_job(const PgateReportSiteSeries *s, const PgateReportSiteJob *like)
{
	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];

		if (g_strcmp0(j->job, like->job) == 0 &&
		    g_strcmp0(j->target, like->target) == 0)
			return j;
	}
	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];

		if (g_strcmp0(j->job, like->job) == 0)
			return j;
	}
	return NULL;
}

static gboolean
applied(const PgateReportSiteSeries *s, gboolean *out)
{
	gboolean any = FALSE, ok = FALSE;

	for (guint i = 0; i < s->apply->len; i++) {
		const PgateReportSiteApply *a = s->apply->pdata[i];

		any = TRUE;
		ok = ok || pgate_report_site__apply_outcome(a->status) == PGATE_REPORT_OUTCOME_PASS;
	}
	*out = ok;
	return any;
}

/* "NAME fixed since vN" and the like, for one thing judged in both;
 * what passed in both goes to @same. */
static void
compare_one(GPtrArray *parts, GPtrArray *same, const char *name,
	    PgateReportOutcome was, PgateReportOutcome now, guint prev_version)
{
	gboolean bad_was = was == PGATE_REPORT_OUTCOME_FAIL;
	gboolean bad_now = now == PGATE_REPORT_OUTCOME_FAIL;

	if (was == PGATE_REPORT_OUTCOME_PENDING || now == PGATE_REPORT_OUTCOME_PENDING ||
	    was == PGATE_REPORT_OUTCOME_NONE || now == PGATE_REPORT_OUTCOME_NONE)
		return;
	if (was == PGATE_REPORT_OUTCOME_PASS && now == PGATE_REPORT_OUTCOME_PASS)
		g_ptr_array_add(same, g_strdup(name));
	if (bad_was && !bad_now)
		g_ptr_array_add(parts, g_strdup_printf("%s fixed since v%u", name,
						       prev_version));
	else if (bad_was && bad_now)
		g_ptr_array_add(parts, g_strdup_printf("%s still fails", name));
	else if (!bad_was && bad_now)
		g_ptr_array_add(parts, g_strdup_printf("%s fails, it passed in v%u",
						       name, prev_version));
}

char *
pgate_report_site_compare(const PgateReportSiteSeries *prev,
			  const PgateReportSiteSeries *cur)
{
	g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) same = g_ptr_array_new_with_free_func(g_free);
	gboolean was_ok, now_ok;
	gint64 warnings = 0;

	g_return_val_if_fail(prev != NULL && cur != NULL, NULL);
	if (applied(prev, &was_ok) && applied(cur, &now_ok)) {
		if (!was_ok && now_ok)
			g_ptr_array_add(parts, g_strdup_printf(
				"applies, unlike v%u", prev->version));
		else if (was_ok && !now_ok)
			g_ptr_array_add(parts, g_strdup_printf(
				"no longer applies (v%u did)", prev->version));
		else if (!was_ok && !now_ok)
			g_ptr_array_add(parts, g_strdup("still does not apply"));
	}
	for (guint i = 0; i < cur->jobs->len; i++) {
		const PgateReportSiteJob *j = cur->jobs->pdata[i];
		const PgateReportSiteJob *pj = find_job(prev, j);
		g_autoptr(GPtrArray) steps = NULL, psteps = NULL;
		gboolean by_step = FALSE;

		if (j->warnings_added > 0)
			warnings += j->warnings_added;
		if (pj == NULL)
			continue;
		steps = log_steps(j->log);
		psteps = log_steps(pj->log);
		for (guint k = 0; k < steps->len; k++) {
			const Step *st = steps->pdata[k];

			for (guint m = 0; m < psteps->len; m++) {
				const Step *ps = psteps->pdata[m];

				if (strcmp(ps->name, st->name) != 0)
					continue;
				by_step = TRUE;
				compare_one(parts, same, st->name,
					    step_outcome(ps->status),
					    step_outcome(st->status), prev->version);
				break;
			}
		}
		if (!by_step)
			compare_one(parts, same, j->job ? j->job : "the job",
				    pj->outcome,
				    j->outcome, prev->version);
	}
	if (warnings > 0)
		g_ptr_array_add(parts, g_strdup_printf("%" G_GINT64_FORMAT
				" new warning%s", warnings, warnings == 1 ? "" : "s"));
	if (parts->len == 0 && same->len > 0) {
		g_autofree char *names = NULL;

		g_ptr_array_add(same, NULL);
		names = g_strjoinv(", ", (char **)same->pdata);
		return g_strdup_printf("v%u: %s pass%s, as in v%u", cur->version,
				       names, same->len > 2 ? "" : "es",
				       prev->version);
	}
	if (parts->len == 0)
		return NULL;
	g_ptr_array_add(parts, NULL);
	{
		g_autofree char *body = g_strjoinv("; ", (char **)parts->pdata);

		return g_strdup_printf("v%u: %s", cur->version, body);
	}
}
