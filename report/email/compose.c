/* compose.c - the reply itself: headers with GMime, a plain-text body.
 *
 * Everything in a PgateEmailReport may be hostile: subjects and names come
 * from mail, job names, reasons and logs from the series' own code.  The
 * body is therefore built from lines of three kinds only:
 *
 *   - prose written here, word-wrapped at 72 columns, holding nothing
 *     from the report but numbers;
 *   - data lines, each starting with a fixed word or mark of ours ("  FAIL",
 *     "  series", "  - ", "  [1]"), one line per value, values cleaned to
 *     one line and cut to a bound;
 *   - log lines, quoted as "    | ...", like the kernel test robot quotes
 *     the tags it suggests.
 *
 * So no line can start like a trailer ("Signed-off-by: ..."), which b4
 * and Patchwork would credit to the series, or like a diff ("---",
 * "diff --git", "+++ ", "@@") or a diffstat, which b4 would take as a
 * patch or a cover letter, or like the "-- " signature separator.  A last
 * pass checks every line for those shapes anyway and quotes any that has
 * one (defang()), so a later edit to the layout cannot reopen the hole.
 */
#include "report/email/email-private.h"

#include <string.h>

#define WRAP 72
#define MAX_SUBJECT_CHARS 300
#define MAX_NAME_CHARS 100
#define MAX_FIELD_CHARS 200
#define MAX_LOG_LINE_CHARS 200
#define MAX_MSGID 250
#define MAX_URL 400
#define MAX_JOBS 50
#define MAX_EXCERPTS 5
#define MAX_APPLY 20
#define MAX_LINKS 20
#define MAX_PREVIOUS 5
#define REFS_HEAD 1      /* References kept: the thread root... */
#define REFS_TAIL 10     /* ...and the newest ones */

void
pgate_email__init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		g_mime_init();
		g_once_init_leave(&once, 1);
	}
}

/* ---- the report's lifecycle ------------------------------------------- */

PgateEmailJob *
pgate_email_job_new(const char *name, PgateEmailVerdict v)
{
	PgateEmailJob *job = g_new0(PgateEmailJob, 1);

	job->name = g_strdup(name);
	job->verdict = v;
	return job;
}

void
pgate_email_job_free(PgateEmailJob *job)
{
	if (job == NULL)
		return;
	g_free(job->name);
	g_free(job->reason);
	g_free(job->failed_step);
	g_free(job->log_excerpt);
	g_free(job->url);
	g_free(job);
}

PgateEmailApplyFailure *
pgate_email_apply_failure_new(guint patch, const char *file,
			      const char *reason)
{
	PgateEmailApplyFailure *f = g_new0(PgateEmailApplyFailure, 1);

	f->patch = patch;
	f->file = g_strdup(file);
	f->reason = g_strdup(reason);
	return f;
}

void
pgate_email_apply_failure_free(PgateEmailApplyFailure *f)
{
	if (f == NULL)
		return;
	g_free(f->file);
	g_free(f->reason);
	g_free(f);
}

PgateEmailLink *
pgate_email_link_new(const char *label, const char *url)
{
	PgateEmailLink *l = g_new0(PgateEmailLink, 1);

	l->label = g_strdup(label);
	l->url = g_strdup(url);
	return l;
}

void
pgate_email_link_free(PgateEmailLink *l)
{
	if (l == NULL)
		return;
	g_free(l->label);
	g_free(l->url);
	g_free(l);
}

PgateEmailPrevious *
pgate_email_previous_new(guint32 version, const char *series_id)
{
	PgateEmailPrevious *p = g_new0(PgateEmailPrevious, 1);

	p->version = version;
	p->series_id = g_strdup(series_id);
	return p;
}

void
pgate_email_previous_free(PgateEmailPrevious *p)
{
	if (p == NULL)
		return;
	g_free(p->series_id);
	g_free(p);
}

PgateEmailReport *
pgate_email_report_new(void)
{
	PgateEmailReport *r = g_new0(PgateEmailReport, 1);

	r->references = g_ptr_array_new_with_free_func(g_free);
	r->previous = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_email_previous_free);
	r->jobs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_email_job_free);
	r->apply_failures = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_email_apply_failure_free);
	r->links = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_email_link_free);
	return r;
}

void
pgate_email_report_free(PgateEmailReport *r)
{
	if (r == NULL)
		return;
	g_free(r->idempotency_key);
	g_free(r->subject);
	g_free(r->msgid);
	g_ptr_array_unref(r->references);
	g_free(r->submitter_name);
	g_free(r->submitter_email);
	g_free(r->list_address);
	g_free(r->list_id);
	g_free(r->series_name);
	g_free(r->series_id);
	g_ptr_array_unref(r->previous);
	g_free(r->compared);
	g_free(r->patch_url);
	g_free(r->tree);
	g_free(r->base_branch);
	g_free(r->base_commit);
	g_free(r->head_commit);
	g_ptr_array_unref(r->jobs);
	g_ptr_array_unref(r->apply_failures);
	g_ptr_array_unref(r->links);
	g_free(r);
}

const char *
pgate_email_verdict_to_string(PgateEmailVerdict v)
{
	switch (v) {
	case PGATE_EMAIL_VERDICT_PASS: return "PASS";
	case PGATE_EMAIL_VERDICT_WARNING: return "WARNING";
	case PGATE_EMAIL_VERDICT_FAIL: return "FAIL";
	case PGATE_EMAIL_VERDICT_ERROR: return "ERROR";
	case PGATE_EMAIL_VERDICT_SKIPPED: return "SKIPPED";
	}
	return "UNKNOWN";
}

gboolean
pgate_email_report_failed(const PgateEmailReport *r)
{
	if (r->apply_failures->len > 0)
		return TRUE;
	for (guint i = 0; i < r->jobs->len; i++) {
		const PgateEmailJob *job = r->jobs->pdata[i];

		if (job->verdict == PGATE_EMAIL_VERDICT_FAIL)
			return TRUE;
	}
	return FALSE;
}

/* ---- cleaning hostile text -------------------------------------------- */

/* Characters that move text around or split lines without being ASCII
 * control characters: NEL, LS, PS, and the bidirectional overrides and
 * isolates ("trojan source"). */
static gboolean
is_invisible_control(gunichar c)
{
	return c == 0x85 || c == 0x2028 || c == 0x2029 ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||
	       c == 0xfeff;
}

/* Skips an ANSI escape sequence at @p (ESC already seen); returns the
 * first byte after it. */
static const char *
skip_escape(const char *p)
{
	if (*p == '[') {            /* CSI: parameters, then a final byte */
		p++;
		while (*p && (guchar)*p >= 0x20 && (guchar)*p <= 0x3f)
			p++;
		while (*p && (guchar)*p >= 0x20 && (guchar)*p <= 0x2f)
			p++;
		if (*p && (guchar)*p >= 0x40 && (guchar)*p <= 0x7e)
			p++;
	} else if (*p == ']') {     /* OSC: up to BEL or ESC \ */
		p++;
		while (*p && *p != '\a' && *p != '\033')
			p++;
		if (*p == '\a')
			p++;
		else if (*p == '\033' && p[1] == '\\')
			p += 2;
	} else if (*p) {
		p++;
	}
	return p;
}

/* Cuts @s to at most @max characters, marking the cut with "...". */
static void
truncate_chars(GString *s, gsize max)
{
	if (g_utf8_strlen(s->str, -1) <= (glong)max)
		return;
	const char *end = g_utf8_offset_to_pointer(s->str, (glong)max - 3);
	g_string_truncate(s, (gsize)(end - s->str));
	g_string_append(s, "...");
}

/* One line of text from @s: valid UTF-8, escapes removed, every control
 * and line-breaking character a space, spaces collapsed, at most @max
 * characters.  Returns "" for NULL. */
static char *
clean_line(const char *s, gsize max)
{
	g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
	GString *out = g_string_new(NULL);
	gboolean space = TRUE;   /* drops leading spaces */

	for (const char *p = valid; *p;) {
		gunichar c;

		if (*p == '\033') {
			p = skip_escape(p + 1);
			continue;
		}
		c = g_utf8_get_char(p);
		p = g_utf8_next_char(p);
		if (c < 0x20 || c == 0x7f || is_invisible_control(c) ||
		    g_unichar_isspace(c)) {
			if (!space)
				g_string_append_c(out, ' ');
			space = TRUE;
			continue;
		}
		g_string_append_unichar(out, c);
		space = FALSE;
	}
	while (out->len > 0 && out->str[out->len - 1] == ' ')
		g_string_truncate(out, out->len - 1);
	truncate_chars(out, max);
	return g_string_free(out, FALSE);
}

/* One log line: like clean_line() but tabs expanded and leading spaces
 * kept (indentation matters in compiler output); a carriage return
 * (progress meters) keeps only what was written after it. */
static char *
clean_log_line(const char *s, gsize len)
{
	g_autofree char *valid = NULL;
	GString *out = g_string_new(NULL);
	glong col = 0;
	const char *cr;

	/* a CRLF line end is a line end; a CR inside the line (progress
	 * meters) overwrote it: a terminal shows the text after the last */
	while (len > 0 && s[len - 1] == '\r')
		len--;
	for (cr = s + len; cr > s && cr[-1] != '\r'; cr--)
		;
	valid = g_utf8_make_valid(cr, (gssize)(len - (gsize)(cr - s)));
	for (const char *p = valid; *p;) {
		gunichar c;

		if (*p == '\033') {
			p = skip_escape(p + 1);
			continue;
		}
		c = g_utf8_get_char(p);
		p = g_utf8_next_char(p);
		if (c == '\t') {
			do {
				g_string_append_c(out, ' ');
			} while (++col % 8 != 0);
			continue;
		}
		if (c < 0x20 || c == 0x7f || is_invisible_control(c))
			c = '?';
		g_string_append_unichar(out, c);
		col++;
	}
	while (out->len > 0 && out->str[out->len - 1] == ' ')
		g_string_truncate(out, out->len - 1);
	truncate_chars(out, MAX_LOG_LINE_CHARS);
	return g_string_free(out, FALSE);
}

/* The end of @log: at most @max_lines lines and @max_bytes bytes (of the
 * cleaned lines), trailing blank lines dropped.  *@out_omitted: how many
 * lines before them were left out. */
static GPtrArray *
log_excerpt(const char *log, guint max_lines, guint max_bytes,
	    guint *out_omitted)
{
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *keep = g_ptr_array_new_with_free_func(g_free);
	gsize bytes = 0;
	guint i;

	for (const char *p = log; *p;) {
		const char *nl = strchr(p, '\n');
		gsize len = nl ? (gsize)(nl - p) : strlen(p);

		g_ptr_array_add(all, clean_log_line(p, len));
		p += len + (nl ? 1 : 0);
	}
	while (all->len > 0 &&
	       *(const char *)all->pdata[all->len - 1] == '\0')
		g_ptr_array_remove_index(all, all->len - 1);

	for (i = all->len; i > 0 && keep->len < max_lines; i--) {
		gsize l = strlen(all->pdata[i - 1]) + 1;

		if (bytes + l > max_bytes)
			break;
		bytes += l;
		g_ptr_array_add(keep, g_strdup(all->pdata[i - 1]));
	}
	/* collected newest first */
	for (guint a = 0, b = keep->len; b > 1 && a < b - 1; a++, b--) {
		gpointer t = keep->pdata[a];

		keep->pdata[a] = keep->pdata[b - 1];
		keep->pdata[b - 1] = t;
	}
	*out_omitted = i;
	return keep;
}

/* A Message-ID without its angle brackets, or NULL when it is not one
 * that can be written into a header unchanged. */
static char *
clean_msgid(const char *id)
{
	g_autofree char *s = g_strdup(id ? id : "");
	char *p = g_strstrip(s);
	gsize len;

	if (*p == '<')
		p++;
	len = strlen(p);
	if (len > 0 && p[len - 1] == '>')
		p[--len] = '\0';
	if (len == 0 || len > MAX_MSGID)
		return NULL;
	for (const char *q = p; *q; q++)
		if ((guchar)*q <= 0x20 || (guchar)*q >= 0x7f || *q == '<' ||
		    *q == '>' || *q == '"' || *q == '\\')
			return NULL;
	return g_strdup(p);
}

/* An http(s) URL that can be shown as it is, or NULL. */
static char *
clean_url(const char *url)
{
	gsize len;

	if (url == NULL)
		return NULL;
	len = strlen(url);
	if (len > MAX_URL || (!g_str_has_prefix(url, "https://") &&
			      !g_str_has_prefix(url, "http://")))
		return NULL;
	for (const char *q = url; *q; q++)
		if ((guchar)*q <= 0x20 || (guchar)*q >= 0x7f || *q == '<' ||
		    *q == '>' || *q == '"')
			return NULL;
	return g_strdup(url);
}

/* "Re: " + the subject without its own reply prefixes ("Re:", "RE:",
 * "Re[2]:", "Aw:"), so that there is never a "Re: Re:". */
static char *
reply_subject(const char *subject)
{
	g_autofree char *s = clean_line(subject, MAX_SUBJECT_CHARS);
	const char *p = s;

	for (;;) {
		const char *q = p;

		while (*q == ' ')
			q++;
		if (g_ascii_strncasecmp(q, "re", 2) == 0 ||
		    g_ascii_strncasecmp(q, "aw", 2) == 0) {
			q += 2;
			if (*q == '[') {
				q++;
				while (g_ascii_isdigit(*q))
					q++;
				if (*q != ']')
					break;
				q++;
			}
			while (*q == ' ')
				q++;
			if (*q == ':') {
				p = q + 1;
				continue;
			}
		}
		break;
	}
	while (*p == ' ')
		p++;
	return g_strdup_printf("Re: %s", *p ? p : "your patches");
}

char *
pgate_email_message_id(const char *idempotency_key, const char *from_address)
{
	g_autofree char *sum = NULL;
	g_autofree char *domain = NULL;

	g_return_val_if_fail(idempotency_key != NULL && *idempotency_key, NULL);
	g_return_val_if_fail(from_address != NULL, NULL);
	sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
					    idempotency_key, -1);
	domain = pgate_email__address_domain(from_address);
	sum[32] = '\0';
	return g_strdup_printf("patchgate.%s@%s", sum,
			       domain ? domain : "localhost");
}

char *
pgate_email__archive_link(const PgateEmailConfig *cfg, const char *list_id,
			  const char *msgid)
{
	g_autofree char *id = clean_msgid(msgid);

	return id ? pgate_report_archive_url(cfg->archive_url, list_id, id)
		  : NULL;
}

/* ---- the body --------------------------------------------------------- */

/* Appends @text word-wrapped at WRAP columns.  @text is ours: it holds
 * nothing from the report but numbers. */
static void
add_prose(GString *body, const char *text)
{
	g_auto(GStrv) words = g_strsplit(text, " ", -1);
	glong col = 0;

	for (guint i = 0; words[i] != NULL; i++) {
		glong w = g_utf8_strlen(words[i], -1);

		if (w == 0)
			continue;
		if (col > 0 && col + 1 + w > WRAP) {
			g_string_append_c(body, '\n');
			col = 0;
		} else if (col > 0) {
			g_string_append_c(body, ' ');
			col++;
		}
		g_string_append(body, words[i]);
		col += w;
	}
	g_string_append(body, "\n");
}

static const char *
plural(guint n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

typedef struct {
	guint pass, warn, fail, error, skip, total;
} Counts;

static Counts
count_jobs(const PgateEmailReport *r)
{
	Counts c = { 0 };

	for (guint i = 0; i < r->jobs->len; i++) {
		const PgateEmailJob *job = r->jobs->pdata[i];

		switch (job->verdict) {
		case PGATE_EMAIL_VERDICT_PASS: c.pass++; break;
		case PGATE_EMAIL_VERDICT_WARNING: c.warn++; break;
		case PGATE_EMAIL_VERDICT_FAIL: c.fail++; break;
		case PGATE_EMAIL_VERDICT_ERROR: c.error++; break;
		case PGATE_EMAIL_VERDICT_SKIPPED: c.skip++; break;
		}
		c.total++;
	}
	return c;
}

const char *
pgate_email__dpdk_status(const PgateEmailReport *r)
{
	Counts c = count_jobs(r);

	if (r->apply_failures->len > 0 || c.fail > 0)
		return "FAILURE";
	if (c.warn > 0 || c.error > 0)
		return "WARNING";
	return "SUCCESS";
}

static void
add_summary(GString *body, const PgateEmailReport *r)
{
	Counts c = count_jobs(r);
	guint napply = r->apply_failures->len;
	g_autoptr(GString) p = g_string_new(NULL);

	g_string_append_printf(p, "Thank you for the %s. ",
			       plural(r->patch_count, "patch", "patches"));
	if (napply > 0 && c.total == 0) {
		g_string_append_printf(p,
			"patchgate could not test this series because %u %s "
			"did not apply to %s, so no job ran.",
			napply, plural(napply, "patch", "patches"),
			r->base_branch || r->base_commit
				? "the base named below" : "its base");
	} else {
		if (napply > 0)
			g_string_append_printf(p,
				"%u %s did not apply (see below). ", napply,
				plural(napply, "patch", "patches"));
		g_string_append_printf(p, "patchgate ran %u %s on this series",
				       c.total, plural(c.total, "job", "jobs"));
		if (c.fail > 0)
			g_string_append_printf(p, " and %u of them failed.",
					       c.fail);
		else if (c.total > 0 && c.pass + c.warn == c.total)
			g_string_append(p, c.total == 1 ? " and it passed."
					   : " and all of them passed.");
		else
			g_string_append(p, ".");
		if (c.warn > 0)
			g_string_append_printf(p,
				" %u %s passed with new warnings.", c.warn,
				plural(c.warn, "job", "jobs"));
		if (c.error > 0)
			g_string_append_printf(p,
				" %u %s could not run at all; that is a "
				"problem of the CI, not of your patches, and "
				"is being looked at.", c.error,
				plural(c.error, "job", "jobs"));
	}
	add_prose(body, p->str);
}

static void
add_field(GString *body, const char *label, const char *value)
{
	g_string_append_printf(body, "  %-11s %s\n", label, value);
}

static char *
commit_str(const char *c)
{
	return clean_line(c, 64);
}

static void
add_series(GString *body, const PgateEmailReport *r)
{
	g_string_append(body, "\n");
	if (r->series_name != NULL) {
		g_autofree char *n = clean_line(r->series_name,
						MAX_FIELD_CHARS);

		add_field(body, "series", n);
	}
	if (r->version > 0 || r->series_id != NULL || r->patch_count > 0) {
		g_autoptr(GString) v = g_string_new(NULL);
		g_autofree char *id = clean_line(r->series_id, 40);

		if (r->version > 0)
			g_string_append_printf(v, "v%u", r->version);
		if (*id || r->patch_count > 0) {
			g_string_append(v, v->len ? " (" : "(");
			if (*id)
				g_string_append_printf(v, "series %s", id);
			if (*id && r->patch_count > 0)
				g_string_append(v, ", ");
			if (r->patch_count > 0)
				g_string_append_printf(v, "%u %s",
					r->patch_count,
					plural(r->patch_count, "patch",
					       "patches"));
			g_string_append(v, ")");
		}
		add_field(body, "version", v->str);
	}
	if (r->previous->len > 0) {
		g_autoptr(GString) s = g_string_new(NULL);

		for (guint i = 0; i < r->previous->len && i < MAX_PREVIOUS;
		     i++) {
			const PgateEmailPrevious *pv = r->previous->pdata[i];
			g_autofree char *id = clean_line(pv->series_id, 40);

			if (s->len)
				g_string_append(s, ", ");
			if (pv->version > 0)
				g_string_append_printf(s, "v%u", pv->version);
			else
				g_string_append(s, "an earlier version");
			if (*id)
				g_string_append_printf(s, " (series %s)", id);
		}
		if (r->previous->len > MAX_PREVIOUS)
			g_string_append_printf(s, " and %u more",
					       r->previous->len - MAX_PREVIOUS);
		add_field(body, "supersedes", s->str);
	}
	if (r->compared != NULL) {
		g_autofree char *c = clean_line(r->compared, MAX_FIELD_CHARS);

		add_field(body, "compared", c);
	}
	if (r->tree != NULL) {
		g_autofree char *t = clean_line(r->tree, MAX_FIELD_CHARS);

		add_field(body, "tree", t);
	}
	if (r->base_branch != NULL || r->base_commit != NULL) {
		g_autofree char *b = clean_line(r->base_branch, 100);
		g_autofree char *c = commit_str(r->base_commit);
		g_autofree char *v = NULL;

		if (*b && *c)
			v = g_strdup_printf("%s at %s", b, c);
		else
			v = g_strdup(*b ? b : c);
		add_field(body, "base", v);
	}
	if (r->head_commit != NULL) {
		g_autofree char *c = commit_str(r->head_commit);

		add_field(body, "applied as", c);
	}
}

static void
add_apply_failures(GString *body, const PgateEmailReport *r)
{
	guint n = r->apply_failures->len;

	if (n == 0)
		return;
	g_string_append(body, "\n");
	add_prose(body, n == 1 ? "This patch did not apply:"
			       : "These patches did not apply:");
	g_string_append(body, "\n");
	for (guint i = 0; i < n && i < MAX_APPLY; i++) {
		const PgateEmailApplyFailure *f = r->apply_failures->pdata[i];
		g_autofree char *file = clean_line(f->file, MAX_FIELD_CHARS);
		g_autofree char *why = clean_line(f->reason, MAX_FIELD_CHARS);

		g_string_append_printf(body, "  - patch %u", f->patch);
		if (r->patch_count > 0)
			g_string_append_printf(body, "/%u", r->patch_count);
		if (*file)
			g_string_append_printf(body, ", file %s", file);
		if (*why)
			g_string_append_printf(body, " (%s)", why);
		g_string_append(body, "\n");
	}
	if (n > MAX_APPLY)
		g_string_append_printf(body, "  - and %u more\n",
				       n - MAX_APPLY);
}

/* Link numbers: the jobs' URLs first, then the report's links. */
typedef struct {
	GPtrArray *labels;   /* (element-type utf8) */
	GPtrArray *urls;     /* (element-type utf8) */
} Links;

static guint
links_add(Links *l, const char *label, const char *url)
{
	g_autofree char *u = clean_url(url);

	if (u == NULL || l->urls->len >= MAX_LINKS + MAX_JOBS)
		return 0;
	for (guint i = 0; i < l->urls->len; i++)
		if (strcmp(l->urls->pdata[i], u) == 0)
			return i + 1;
	g_ptr_array_add(l->labels, clean_line(label, 60));
	g_ptr_array_add(l->urls, g_steal_pointer(&u));
	return l->urls->len;
}

static void
add_results(GString *body, const PgateEmailReport *r, Links *links)
{
	guint n = r->jobs->len;

	if (n == 0)
		return;
	g_string_append(body, "\nResults:\n\n");
	for (guint i = 0; i < n && i < MAX_JOBS; i++) {
		const PgateEmailJob *job = r->jobs->pdata[i];
		g_autofree char *name = clean_line(job->name, 64);
		g_autofree char *why = clean_line(job->reason, MAX_FIELD_CHARS);
		guint ref = links_add(links, job->name, job->url);

		g_string_append_printf(body, "  %-8s %s",
				       pgate_email_verdict_to_string(
					       job->verdict),
				       *name ? name : "(unnamed job)");
		if (job->patch > 0) {
			g_string_append_printf(body, " (patch %u", job->patch);
			if (r->patch_count > 0)
				g_string_append_printf(body, "/%u",
						       r->patch_count);
			g_string_append(body, ")");
		}
		if (*why)
			g_string_append_printf(body, " - %s", why);
		if (ref > 0)
			g_string_append_printf(body, " [%u]", ref);
		g_string_append(body, "\n");
	}
	if (n > MAX_JOBS)
		g_string_append_printf(body, "  and %u more jobs\n",
				       n - MAX_JOBS);
}

static void
add_excerpts(GString *body, const PgateEmailConfig *cfg,
	     const PgateEmailReport *r, Links *links)
{
	guint shown = 0;

	for (guint i = 0; i < r->jobs->len && i < MAX_JOBS; i++) {
		const PgateEmailJob *job = r->jobs->pdata[i];
		g_autofree char *name = NULL, *step = NULL;
		g_autoptr(GPtrArray) lines = NULL;
		guint omitted = 0, ref;

		if (job->verdict != PGATE_EMAIL_VERDICT_FAIL &&
		    job->verdict != PGATE_EMAIL_VERDICT_ERROR)
			continue;
		if (job->failed_step == NULL && job->log_excerpt == NULL)
			continue;
		if (shown++ == MAX_EXCERPTS)
			break;
		name = clean_line(job->name, 64);
		step = clean_line(job->failed_step, 64);
		ref = links_add(links, job->name, job->url);
		if (job->log_excerpt != NULL && cfg->log_lines > 0 &&
		    cfg->log_bytes > 0)
			lines = log_excerpt(job->log_excerpt, cfg->log_lines,
					    cfg->log_bytes, &omitted);

		g_string_append_printf(body, "\nThe job %s %s", name,
				       job->verdict ==
						       PGATE_EMAIL_VERDICT_FAIL
					       ? "failed"
					       : "could not run");
		if (*step)
			g_string_append_printf(body, " at step \"%s\"", step);
		if (lines != NULL && lines->len > 0)
			g_string_append(body, "; the end of its log:\n\n");
		else
			g_string_append(body, ".\n");
		if (lines == NULL || lines->len == 0)
			continue;
		if (omitted > 0)
			g_string_append_printf(body,
				"    [... %u earlier %s not shown]\n", omitted,
				plural(omitted, "line", "lines"));
		for (guint l = 0; l < lines->len; l++) {
			const char *line = lines->pdata[l];

			g_string_append_printf(body, "    |%s%s\n",
					       *line ? " " : "", line);
		}
		if (ref > 0)
			g_string_append_printf(body,
				"    [the whole log: see [%u]]\n", ref);
	}
}

static void
add_links(GString *body, const PgateEmailConfig *cfg,
	  const PgateEmailReport *r, Links *links)
{
	g_autofree char *archive = pgate_email__archive_link(cfg, r->list_id, r->msgid);

	for (guint i = 0; i < r->links->len && i < MAX_LINKS; i++) {
		const PgateEmailLink *l = r->links->pdata[i];

		links_add(links, l->label, l->url);
	}
	/* the archive copy of the answered mail (docs/report-email.md,
	 * "Archive links") */
	links_add(links, "archive", archive);
	if (links->urls->len == 0)
		return;
	g_string_append(body, "\nLinks:\n\n");
	for (guint i = 0; i < links->urls->len; i++) {
		const char *label = links->labels->pdata[i];

		g_string_append_printf(body, "  [%u] %s%s%s\n", i + 1, label,
				       *label ? " " : "",
				       (const char *)links->urls->pdata[i]);
	}
}

/* Does @line have a shape that Patchwork, b4 or git would read as part of
 * the thread: a trailer (b4: ^\s*(\w\S+):\s+\S, which also covers
 * Patchwork's ^Acked-by: and friends), a diff, a diffstat, a signature
 * separator or scissors, an mbox From_ line? */
static gboolean
looks_like_thread_syntax(const char *line)
{
	const char *p = line;

	if (g_str_has_prefix(line, "--") || g_str_has_prefix(line, "+++") ||
	    g_str_has_prefix(line, "@@") || g_str_has_prefix(line, "diff ") ||
	    g_str_has_prefix(line, "Index: ") ||
	    g_str_has_prefix(line, "From ") ||
	    g_str_has_prefix(line, ">From ") ||
	    g_str_has_prefix(line, "GIT binary patch"))
		return TRUE;
	while (*p == ' ' || *p == '\t')
		p++;
	/* a diffstat line: "^\s*\d+ file.*\d+ (insertion|deletion)" */
	if (g_ascii_isdigit(*p) && strstr(p, " file") != NULL &&
	    (strstr(p, "insertion") != NULL || strstr(p, "deletion") != NULL))
		return TRUE;
	/* a trailer: a word character, then non-spaces up to a colon that
	 * is followed by a space and more text */
	gunichar c = g_utf8_get_char(p);
	if (*p == '\0' || !(g_unichar_isalnum(c) || c == '_'))
		return FALSE;
	for (const char *q = p; *q && *q != ' ' && *q != '\t'; q++) {
		if (*q == ':' && q > p && (q[1] == ' ' || q[1] == '\t')) {
			const char *v = q + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			if (*v != '\0')
				return TRUE;
		}
	}
	return FALSE;
}

/* Quotes every line of @body that looks like thread syntax, but for the
 * lines that start with one of @keep (nullable): labels of ours at the
 * start of a line, which no text from the report can start, as long as
 * they hold no '@': b4 credits a follow-up's "Name: value" line to the
 * patch when the value has an address (tests/report/email, b4). */
static char *
defang_keep(const char *body, const char *const *keep)
{
	g_auto(GStrv) lines = g_strsplit(body, "\n", -1);
	GString *out = g_string_sized_new(strlen(body) + 64);

	for (guint i = 0; lines[i] != NULL; i++) {
		gboolean ours = FALSE;

		for (guint k = 0; keep != NULL && keep[k] != NULL; k++)
			ours |= g_str_has_prefix(lines[i], keep[k]) &&
				strchr(lines[i], '@') == NULL;
		if (!ours && looks_like_thread_syntax(lines[i]))
			g_string_append(out, "| ");
		g_string_append(out, lines[i]);
		if (lines[i + 1] != NULL)
			g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}

static char *
defang(const char *body)
{
	return defang_keep(body, NULL);
}

static char *
build_body(const PgateEmailConfig *cfg, const PgateEmailReport *r)
{
	g_autoptr(GString) body = g_string_new(NULL);
	g_autofree char *name = clean_line(r->submitter_name, MAX_NAME_CHARS);
	Links links = {
		g_ptr_array_new_with_free_func(g_free),
		g_ptr_array_new_with_free_func(g_free),
	};

	if (*name)
		g_string_append_printf(body, "Hi %s,\n\n", name);
	else
		g_string_append(body, "Hello,\n\n");
	add_summary(body, r);
	add_series(body, r);
	add_apply_failures(body, r);
	add_results(body, r, &links);
	add_excerpts(body, cfg, r, &links);
	add_links(body, cfg, r, &links);
	g_ptr_array_unref(links.labels);
	g_ptr_array_unref(links.urls);

	g_autofree char *safe = defang(body->str);
	g_autoptr(GString) out = g_string_new(safe);
	g_autoptr(GString) foot = g_string_new(NULL);

	g_string_append_printf(foot,
		"This is an automated reply from patchgate %s, the CI of "
		"this list, sent %s.",
		PGATE_EMAIL_VERSION,
		cfg->to == PGATE_EMAIL_TO_EVERYONE
			? "to every submitter of a tested series"
		: cfg->to == PGATE_EMAIL_TO_MAINTAINERS
			? "to the maintainers it is configured for"
			: "because your address is on its opt-in list");
	if (cfg->contact != NULL) {
		g_autofree char *contact = clean_line(cfg->contact, 200);

		g_string_append_printf(foot,
			" If a result looks wrong, please tell %s.", contact);
	}
	g_string_append(out, "\n-- \n");
	add_prose(out, foot->str);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* ---- format = dpdk (docs/report-email.md, "DPDK report mail") ---- */

/* The few words after the status: numbers and words of ours only. */
static char *
dpdk_description(const PgateEmailReport *r)
{
	Counts c = count_jobs(r);
	guint napply = r->apply_failures->len;

	if (napply > 0 && c.total == 0)
		return g_strdup_printf("%u %s did not apply", napply,
				       plural(napply, "patch", "patches"));
	if (c.fail > 0)
		return g_strdup_printf("%u of %u %s failed", c.fail, c.total,
				       plural(c.total, "job", "jobs"));
	if (napply > 0)
		return g_strdup_printf("%u %s did not apply", napply,
				       plural(napply, "patch", "patches"));
	if (c.warn > 0)
		return g_strdup_printf("%u of %u %s passed with warnings",
				       c.warn, c.total,
				       plural(c.total, "job", "jobs"));
	if (c.error > 0)
		return g_strdup_printf("%u of %u %s could not run", c.error,
				       c.total, plural(c.total, "job", "jobs"));
	return g_strdup_printf("%u %s passed", c.total,
			       plural(c.total, "job", "jobs"));
}

/* dpdk-ci's tools/send-patch-report.sh: "Test-Label:", "Test-Status:",
 * the patch's URL, a blank line, "_DESCRIPTION_", a blank line, then the
 * report; what ci@dpdk.org's update-pw.sh reads back.  The head is ours
 * and not defanged (its labels are what the bot looks for); the report
 * after it is built and defanged as the default reply is. */
static char *
build_dpdk_body(const PgateEmailConfig *cfg, const PgateEmailReport *r)
{
	g_autoptr(GString) head = g_string_new(NULL);
	g_autoptr(GString) body = g_string_new(NULL);
	g_autofree char *url = clean_url(r->patch_url);
	g_autofree char *desc = dpdk_description(r);
	g_autofree char *safe = NULL;
	Links links = {
		g_ptr_array_new_with_free_func(g_free),
		g_ptr_array_new_with_free_func(g_free),
	};

	g_string_append_printf(head, "Test-Label: %s\nTest-Status: %s\n",
			       cfg->dpdk_label, pgate_email__dpdk_status(r));
	if (url != NULL && r->patchwork_id > 0)
		g_string_append_printf(head, "%s\n", url);
	g_string_append_printf(head, "\n_%s_\n", desc);

	add_series(body, r);
	add_apply_failures(body, r);
	add_results(body, r, &links);
	add_excerpts(body, cfg, r, &links);
	add_links(body, cfg, r, &links);
	g_ptr_array_unref(links.labels);
	g_ptr_array_unref(links.urls);
	safe = defang(body->str);
	g_string_append(head, safe);
	return g_string_free(g_steal_pointer(&head), FALSE);
}

/* "|FAILURE| pw123 [PATCH v3 2/2] widget: add three": the patch's
 * subject without the "[dpdk-dev] " list tag (send-patch-report.sh). */
static char *
dpdk_subject(const PgateEmailReport *r)
{
	g_autofree char *s = clean_line(r->subject, MAX_SUBJECT_CHARS);
	g_autofree char *id = r->patchwork_id > 0
		? g_strdup_printf("%" G_GINT64_FORMAT, r->patchwork_id)
		: g_strdup("?");
	const char *p = s;
	char *tag = strstr(s, "[dpdk-dev] ");

	if (tag != NULL)
		memmove(tag, tag + 11, strlen(tag + 11) + 1);
	return g_strdup_printf("|%s| pw%s %s", pgate_email__dpdk_status(r),
			       id, *p ? p : "(no subject)");
}

/* ---- format = 0day (docs/report-email.md, "0-day style mail") ---- */

/* The labels of the kernel test robot's head lines: ours, never text
 * from the report, so they are not quoted although b4 would read some
 * as trailers (the robot's mails have them too). */
static const char *const ZERODAY_KEEP[] = {
	"base:   ", "config: ", "reproduce: ", NULL
};

static const PgateEmailJob *
first_failed(const PgateEmailReport *r)
{
	for (guint i = 0; i < r->jobs->len; i++) {
		const PgateEmailJob *j = r->jobs->pdata[i];

		if (j->verdict == PGATE_EMAIL_VERDICT_FAIL)
			return j;
	}
	return NULL;
}

/* "widgets/main" (the robot's "tree/branch"), or what is known of it. */
static char *
zeroday_where(const PgateEmailReport *r)
{
	g_autofree char *t = clean_line(r->tree, 100);
	g_autofree char *b = clean_line(r->base_branch, 100);
	g_autofree char *c = clean_line(r->base_commit, 12);

	if (*t && *b)
		return g_strdup_printf("%s/%s", t, b);
	if (*b || *t)
		return g_strdup(*b ? b : t);
	return g_strdup(*c ? c : "its base");
}

/* The log of @job as the robot shows errors: the lines with a compiler
 * diagnostic "error:" are new, marked ">> "; the others indented "   ". */
static void
zeroday_log(GString *body, const PgateEmailConfig *cfg,
	    const PgateEmailJob *job)
{
	g_autoptr(GPtrArray) lines = NULL;
	guint omitted = 0;

	if (job->log_excerpt == NULL || cfg->log_lines == 0 ||
	    cfg->log_bytes == 0)
		return;
	lines = log_excerpt(job->log_excerpt, cfg->log_lines, cfg->log_bytes,
			    &omitted);
	if (omitted > 0)
		g_string_append_printf(body, "   [... %u earlier %s not shown]\n",
				       omitted, plural(omitted, "line",
						       "lines"));
	for (guint l = 0; l < lines->len; l++) {
		const char *line = lines->pdata[l];
		g_autofree char *low = g_ascii_strdown(line, -1);

		g_string_append_printf(body, "%s%s\n",
				       strstr(low, "error:") ? ">> " : "   ",
				       line);
	}
}

/* The patches of @r that did not apply, as the robot lists them. */
static void
zeroday_apply_failures(GString *body, const PgateEmailReport *r)
{
	g_string_append(body, "\nThe patches that did not apply:\n\n");
	for (guint i = 0; i < r->apply_failures->len && i < MAX_APPLY;
	     i++) {
		const PgateEmailApplyFailure *f =
			r->apply_failures->pdata[i];
		g_autofree char *file = clean_line(f->file,
						   MAX_FIELD_CHARS);
		g_autofree char *why = clean_line(f->reason,
						  MAX_FIELD_CHARS);

		g_string_append_printf(body, "   patch %u", f->patch);
		if (r->patch_count > 0)
			g_string_append_printf(body, "/%u",
					       r->patch_count);
		if (*file)
			g_string_append_printf(body, ", file %s", file);
		if (*why)
			g_string_append_printf(body, " (%s)", why);
		g_string_append(body, "\n");
	}
}

static char *
build_0day_body(const PgateEmailConfig *cfg, const PgateEmailReport *r,
		const char *own_msgid)
{
	g_autoptr(GString) body = g_string_new(NULL);
	g_autofree char *name = clean_line(r->submitter_name, MAX_NAME_CHARS);
	g_autofree char *where = zeroday_where(r);
	g_autofree char *patch_link = pgate_email__archive_link(cfg, r->list_id, r->msgid);
	g_autofree char *closes = pgate_email__archive_link(cfg, r->list_id, own_msgid);
	g_autofree char *subject = clean_line(r->subject, MAX_SUBJECT_CHARS);
	g_autofree char *robot = clean_line(cfg->from_name, 64);
	const PgateEmailJob *job = first_failed(r);
	gboolean applied = r->apply_failures->len == 0;

	if (*name)
		g_string_append_printf(body, "Hi %s,\n\n", name);
	else
		g_string_append(body, "Hello,\n\n");
	g_string_append_printf(body, "%s noticed the following %s:\n\n", robot,
			       job ? "build errors" : "apply failures");
	if (job != NULL)
		g_string_append_printf(body, "[auto build test ERROR on %s]\n",
				       where);
	if (!applied)
		g_string_append_printf(body, "[cannot apply to %s]\n", where);
	g_string_append(body,
		"[If your patch is applied to the wrong git tree, kindly drop "
		"us a note.\n"
		"And when submitting patch, we suggest to use '--base' as "
		"documented in\n"
		"https://git-scm.com/docs/git-format-patch#"
		"_base_tree_information]\n\n");
	{
		g_autofree char *t = clean_line(r->tree, 100);
		g_autofree char *b = clean_line(r->base_branch, 100);
		g_autofree char *c = commit_str(r->base_commit);
		g_autoptr(GString) base = g_string_new(NULL);

		if (*t)
			g_string_append(base, t);
		if (*b)
			g_string_append_printf(base, "%s%s", base->len ? " " : "",
					       b);
		if (*c)
			g_string_append_printf(base, "%s%s", base->len ? " " : "",
					       c);
		if (base->len)
			g_string_append_printf(body, "base:   %s\n", base->str);
	}
	if (patch_link != NULL)
		g_string_append_printf(body, "patch link:    %s\n", patch_link);
	g_string_append_printf(body, "patch subject: %s\n", subject);
	if (job != NULL) {
		g_autofree char *jn = clean_line(job->name, 64);
		g_autofree char *url = clean_url(job->url);
		g_autofree char *step = clean_line(job->failed_step, 64);

		if (url != NULL)
			g_string_append_printf(body, "config: %s (%s)\n", jn, url);
		else
			g_string_append_printf(body, "config: %s\n", jn);
		if (*step)
			g_string_append_printf(body,
				"reproduce: apply the series on the base above "
				"and run the step \"%s\" of %s\n", step, jn);
	}
	g_string_append_printf(body,
		"\nIf you fix the issue in a separate patch/commit (i.e. not "
		"just a new version of\n"
		"the same patch/commit), kindly add following tags\n"
		"| Reported-by: %s <%s>\n", robot, cfg->from_address);
	if (closes != NULL)
		g_string_append_printf(body, "| Closes: %s\n", closes);

	if (!applied)
		zeroday_apply_failures(body, r);
	if (job != NULL) {
		guint shown = 0;

		g_string_append(body, "\nAll errors (new ones prefixed by >>):"
				"\n\n");
		for (guint i = 0; i < r->jobs->len && i < MAX_JOBS; i++) {
			const PgateEmailJob *j = r->jobs->pdata[i];

			if (j->verdict != PGATE_EMAIL_VERDICT_FAIL)
				continue;
			if (shown++ == MAX_EXCERPTS)
				break;
			if (j != job) {
				g_autofree char *jn = clean_line(j->name, 64);

				g_string_append_printf(body,
					"\n   [and in %s:]\n", jn);
			}
			zeroday_log(body, cfg, j);
		}
	}

	g_autofree char *safe = defang_keep(body->str, ZERODAY_KEEP);
	g_autoptr(GString) out = g_string_new(safe);

	g_string_append_printf(out, "\n-- \n%s, patchgate %s\n", robot,
			       PGATE_EMAIL_VERSION);
	if (cfg->contact != NULL) {
		g_autofree char *contact = clean_line(cfg->contact, 200);

		g_string_append_printf(out, "%s\n", contact);
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* ---- the message ------------------------------------------------------ */

static void
add_mailbox(InternetAddressList *list, const char *name, const char *addr)
{
	InternetAddress *ia = internet_address_mailbox_new(name, addr);

	internet_address_set_charset(ia, "utf-8");
	internet_address_list_add(list, ia);
	g_object_unref(ia);
}

static char *
references_value(const PgateEmailReport *r, const char *parent)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GString) v = g_string_new(NULL);

	for (guint i = 0; i < r->references->len; i++) {
		g_autofree char *id = NULL;

		/* only the first and the newest can be kept: look at no more
		 * (the de-duplication below is quadratic) */
		if (i >= REFS_HEAD && i + 64 < r->references->len)
			continue;
		id = clean_msgid(r->references->pdata[i]);
		gboolean dup = id == NULL || strcmp(id, parent) == 0;

		for (guint j = 0; !dup && j < ids->len; j++)
			dup = strcmp(ids->pdata[j], id) == 0;
		if (!dup)
			g_ptr_array_add(ids, g_steal_pointer(&id));
	}
	for (guint i = 0; i < ids->len; i++) {
		if (i >= REFS_HEAD && i + REFS_TAIL < ids->len)
			continue;
		g_string_append_printf(v, "<%s> ", (char *)ids->pdata[i]);
	}
	g_string_append_printf(v, "<%s>", parent);
	return g_string_free(g_steal_pointer(&v), FALSE);
}

/* The last step of every mail patchgate writes: @body (redacted of every
 * registered secret first: defence in depth, common/secret.c) as @msg's
 * text/plain UTF-8 part in its best 7-bit-safe encoding, and @msg's
 * bytes, at most PGATE_EMAIL_MAX_MESSAGE.  @what names the mail in the
 * errors ("compose", "digest"). */
GBytes *
pgate_email__write(GMimeMessage *msg, const char *body, const char *what,
		   GError **error)
{
	g_autoptr(GMimeStream) out = NULL;
	g_autofree char *text = g_strdup(body);
	GMimeTextPart *part;
	GMimeDataWrapper *content;
	GMimeStream *stream;
	GByteArray *bytes;

	pgate_secret_redact_in_place(&text);
	part = g_mime_text_part_new_with_subtype("plain");
	g_mime_text_part_set_charset(part, "utf-8");
	stream = g_mime_stream_mem_new_with_buffer(text, strlen(text));
	content = g_mime_data_wrapper_new_with_stream(
		stream, GMIME_CONTENT_ENCODING_DEFAULT);
	g_object_unref(stream);
	g_mime_part_set_content(GMIME_PART(part), content);
	g_object_unref(content);
	g_mime_part_set_content_encoding(
		GMIME_PART(part),
		g_mime_part_get_best_content_encoding(
			GMIME_PART(part), GMIME_ENCODING_CONSTRAINT_7BIT));
	g_mime_message_set_mime_part(msg, GMIME_OBJECT(part));
	g_object_unref(part);

	out = g_mime_stream_mem_new();
	if (g_mime_object_write_to_stream(GMIME_OBJECT(msg), NULL, out) < 0) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "%s: GMime could not write the message", what);
		return NULL;
	}
	bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(out));
	if (bytes->len > PGATE_EMAIL_MAX_MESSAGE) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_TOO_LARGE,
			    "%s: the mail would be %u bytes", what, bytes->len);
		return NULL;
	}
	return g_bytes_new(bytes->data, bytes->len);
}

GBytes *
pgate_email_compose(const PgateEmailConfig *cfg,
		    const PgateEmailReport *report, GError **error)
{
	g_autoptr(GMimeMessage) msg = NULL;
	g_autofree char *parent = NULL, *mid = NULL, *subject = NULL;
	g_autofree char *to_name = NULL, *to_addr = NULL, *refs = NULL;
	g_autofree char *body = NULL;
	g_autoptr(GDateTime) date = NULL;

	g_return_val_if_fail(cfg != NULL && report != NULL, NULL);
	pgate_email__init();
	if (!cfg->enabled) {
		g_set_error_literal(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_CONFIG,
				    "email reports are disabled");
		return NULL;
	}
	if (report->idempotency_key == NULL || !*report->idempotency_key) {
		g_set_error_literal(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_INVALID,
				    "compose: the report has no idempotency key");
		return NULL;
	}
	parent = clean_msgid(report->msgid);
	if (parent == NULL) {
		g_set_error_literal(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_INVALID,
				    "compose: the answered mail has no usable "
				    "Message-ID");
		return NULL;
	}
	if (cfg->format != PGATE_EMAIL_FORMAT_DPDK &&
	    !pgate_email__address_ok(report->submitter_email)) {
		g_set_error_literal(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_INVALID,
				    "compose: the submitter's address is not a "
				    "plain address");
		return NULL;
	}
	to_addr = g_ascii_strdown(report->submitter_email
				  ? report->submitter_email : "", -1);
	to_name = clean_line(report->submitter_name, MAX_NAME_CHARS);
	mid = pgate_email_message_id(report->idempotency_key,
				     cfg->from_address);
	if (cfg->format == PGATE_EMAIL_FORMAT_DPDK) {
		/* send-patch-report.sh: In-Reply-To and References are the
		 * patch, the subject is not a "Re:" */
		subject = dpdk_subject(report);
		refs = g_strdup_printf("<%s>", parent);
	} else {
		subject = reply_subject(report->subject);
		refs = references_value(report, parent);
	}
	date = report->date > 0 ? g_date_time_new_from_unix_utc(report->date)
				: g_date_time_new_now_utc();

	msg = g_mime_message_new(TRUE);
	add_mailbox(g_mime_message_get_from(msg), cfg->from_name,
		    cfg->from_address);
	if (cfg->format == PGATE_EMAIL_FORMAT_DPDK) {
		add_mailbox(g_mime_message_get_to(msg), NULL, cfg->report_to);
		if (pgate_email__dpdk_cc_submitter(cfg, report))
			add_mailbox(g_mime_message_get_cc(msg),
				    *to_name ? to_name : NULL, to_addr);
	} else if (cfg->to == PGATE_EMAIL_TO_MAINTAINERS) {
		/* to = maintainers: the maintainers, not the author */
		for (guint i = 0; i < cfg->maintainers->len; i++)
			add_mailbox(g_mime_message_get_to(msg), NULL,
				    cfg->maintainers->pdata[i]);
	} else {
		add_mailbox(g_mime_message_get_to(msg),
			    *to_name ? to_name : NULL, to_addr);
	}
	if (cfg->format != PGATE_EMAIL_FORMAT_DPDK && cfg->cc_list &&
	    pgate_email__address_ok(report->list_address) &&
	    g_ascii_strcasecmp(report->list_address, to_addr) != 0) {
		g_autofree char *l = g_ascii_strdown(report->list_address, -1);

		add_mailbox(g_mime_message_get_cc(msg), NULL, l);
	}
	g_mime_message_set_subject(msg, subject, "utf-8");
	g_mime_message_set_date(msg, date);
	g_mime_message_set_message_id(msg, mid);

	GMimeObject *obj = GMIME_OBJECT(msg);
	g_autofree char *irt = g_strdup_printf("<%s>", parent);
	g_mime_object_set_header(obj, "In-Reply-To", irt, NULL);
	g_mime_object_set_header(obj, "References", refs, NULL);
	g_mime_object_set_header(obj, "Auto-Submitted", "auto-replied", NULL);
	g_mime_object_set_header(obj, "X-Auto-Response-Suppress", "All", NULL);
	g_mime_object_set_header(obj, "X-Patchwork-Hint", "ignore", NULL);
	g_mime_object_set_header(obj, PGATE_EMAIL_MARKER_HEADER,
				 PGATE_EMAIL_VERSION, NULL);

	switch (cfg->format) {
	case PGATE_EMAIL_FORMAT_DPDK:
		body = build_dpdk_body(cfg, report);
		break;
	case PGATE_EMAIL_FORMAT_0DAY:
		body = build_0day_body(cfg, report, mid);
		break;
	case PGATE_EMAIL_FORMAT_DEFAULT:
	default:
		body = build_body(cfg, report);
		break;
	}
	return pgate_email__write(msg, body, "compose", error);
}
