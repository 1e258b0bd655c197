/* site.c - the static site of `patchgate report html DIR`
 * (docs/report-site.md): what lists the series, and the writing (the
 * listing pages are drawn by site-listing.c).
 *
 * DIR/
 *   index.html            summary counts, the chart, the newest series
 *   filters.html          every state, outcome, project, submitter, month
 *   all/N.html            every series, N pages of page_size, page 1 the
 *                         oldest: a page keeps its series as new ones
 *                         come, so a pass rewrites few pages
 *   state/S/N.html, outcome/O/N.html, project/H/N.html,
 *   submitter/H/N.html, month/YYYY-MM/N.html      the same, filtered
 *   series/ID.html, series/ID.json, series/ID.mbox, log/ID-H.html
 *                                                    (site-page.c)
 *   find.html, msgid/XX.json, msgid/H.html       finding a Message-ID
 *   index.json, site.css
 *   search.html, search-data.js   the combined filters, in the browser
 *                         (site-search.c): the rows of index.json as a
 *                         script, which a page opened from a file loads
 *   .pgate-site/cache     what the listings need of every series, and
 *                         the key of every listing page written
 *
 * H is FNV-1a (64 bits, hex) of the mail text it stands for, so that no
 * file name comes from mail.  A page is written only when its bytes
 * changed (a listing page: when the fingerprint of its rows changed),
 * to a temporary name, fsync'd, and renamed; the directories are
 * fsync'd once at the end.
 */
#include "report/site-private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define esc pgate_report_site__esc
#define hex_name pgate_report_site__hex_name
#define CACHE_MAGIC "pgate-site 3"
#define CACHE_MAX (512u << 20)
/* mixed into the key of every listing page: change it with the way
 * listing pages are rendered, so that a new build rewrites them all */
#define RENDER_VERSION 6

static const char *const outcome_names[] = {
	"none", "pending", "pass", "warn", "fail",
};
static const char *const outcome_symbols[] = {
	"\xe2\x80\x93", "\xe2\x80\xa6", "\xe2\x9c\x93", "!", "\xe2\x9c\x97",
};

const char *
pgate_report_outcome_to_string(PgateReportOutcome o)
{
	return (guint)o <= PGATE_REPORT_OUTCOME_LAST ? outcome_names[o] : "none";
}

gboolean
pgate_report_outcome_from_string(const char *s, PgateReportOutcome *out)
{
	for (guint i = 0; s && i < G_N_ELEMENTS(outcome_names); i++) {
		if (strcmp(s, outcome_names[i]) == 0) {
			*out = (PgateReportOutcome)i;
			return TRUE;
		}
	}
	return FALSE;
}

/* ---- the model ---- */

PgateReportSitePatch *
pgate_report_site_patch_new(void)
{
	PgateReportSitePatch *p = g_new0(PgateReportSitePatch, 1);

	p->trailers = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_trailer_free);
	return p;
}

static void
patch_free(gpointer d)
{
	PgateReportSitePatch *p = d;

	g_free(p->msgid);
	g_free(p->subject);
	g_free(p->author);
	g_free(p->patchwork_url);
	g_free(p->diff);
	g_ptr_array_unref(p->trailers);
	g_free(p);
}

PgateReportSiteApply *
pgate_report_site_apply_new(void)
{
	return g_new0(PgateReportSiteApply, 1);
}

static void
apply_free(gpointer d)
{
	PgateReportSiteApply *a = d;

	g_free(a->target);
	g_free(a->status);
	g_free(a->base);
	g_free(a->head);
	g_free(a->ref);
	g_free(a->fail_file);
	g_free(a->fail_reason);
	g_free(a->fail_hunk_text);
	if (a->commits)
		g_ptr_array_unref(a->commits);
	g_free(a);
}

PgateReportSiteJob *
pgate_report_site_job_new(void)
{
	PgateReportSiteJob *j = g_new0(PgateReportSiteJob, 1);

	j->warnings_added = -1;
	return j;
}

static void
job_free(gpointer d)
{
	PgateReportSiteJob *j = d;

	g_free(j->key);
	g_free(j->target);
	g_free(j->job);
	g_free(j->backend);
	g_free(j->result);
	g_free(j->reason);
	g_free(j->summary);
	g_free(j->url);
	g_free(j->log);
	g_free(j);
}

PgateReportSiteVersion *
pgate_report_site_version_new(void)
{
	return g_new0(PgateReportSiteVersion, 1);
}

static void
version_free(gpointer d)
{
	PgateReportSiteVersion *v = d;

	g_free(v->id);
	g_free(v->rule);
	g_free(v->state);
	g_free(v);
}

PgateReportSiteReply *
pgate_report_site_reply_new(void)
{
	return g_new0(PgateReportSiteReply, 1);
}

static void
reply_free(gpointer d)
{
	PgateReportSiteReply *r = d;

	g_free(r->msgid);
	g_free(r->subject);
	g_free(r->author);
	g_free(r);
}

PgateReportSiteSeries *
pgate_report_site_series_new(void)
{
	PgateReportSiteSeries *s = g_new0(PgateReportSiteSeries, 1);

	s->versions = g_ptr_array_new_with_free_func(version_free);
	s->patches = g_ptr_array_new_with_free_func(patch_free);
	s->apply = g_ptr_array_new_with_free_func(apply_free);
	s->jobs = g_ptr_array_new_with_free_func(job_free);
	s->deps = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_dep_free);
	s->replies = g_ptr_array_new_with_free_func(reply_free);
	return s;
}

void
pgate_report_site_series_free(PgateReportSiteSeries *s)
{
	if (s == NULL)
		return;
	g_free(s->id);
	g_free(s->name);
	g_free(s->project);
	g_free(s->submitter);
	g_free(s->submitter_email);
	g_free(s->state);
	g_free(s->state_reason);
	g_free(s->outcome_text);
	g_free(s->cover_msgid);
	g_free(s->cover_text);
	g_ptr_array_unref(s->versions);
	g_ptr_array_unref(s->patches);
	g_ptr_array_unref(s->apply);
	g_ptr_array_unref(s->jobs);
	g_ptr_array_unref(s->deps);
	g_ptr_array_unref(s->replies);
	g_free(s->merged_as);
	if (s->upstream != NULL)
		g_ptr_array_unref(s->upstream);
	if (s->projects != NULL)
		g_ptr_array_unref(s->projects);
	g_free(s->compare);
	g_free(s->interdiff);
	g_free(s->range_diff);
	g_free(s->json);
	if (s->mbox != NULL)
		g_bytes_unref(s->mbox);
	if (s->fetch != NULL)
		g_ptr_array_unref(s->fetch);
	g_free(s);
}

/* ---- shared helpers ---- */

void
pgate_report_site__esc_len(GString *out, const char *s, gsize len)
{
	g_autofree char *valid = NULL;

	if (s == NULL)
		return;
	if (!g_utf8_validate_len(s, len, NULL)) {
		valid = g_utf8_make_valid(s, (gssize)len);
		s = valid;
		len = strlen(valid);
	}
	for (gsize i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '<': g_string_append(out, "&lt;"); break;
		case '>': g_string_append(out, "&gt;"); break;
		case '&': g_string_append(out, "&amp;"); break;
		case '"': g_string_append(out, "&quot;"); break;
		case '\'': g_string_append(out, "&#39;"); break;
		case '\r': break;
		case '\t': case '\n': g_string_append_c(out, (char)c); break;
		default:
			if (c < 0x20 || c == 0x7f)
				g_string_append(out, "\xef\xbf\xbd");
			else
				g_string_append_c(out, (char)c);
		}
	}
}

void
pgate_report_site__esc(GString *out, const char *s)
{
	if (s)
		pgate_report_site__esc_len(out, s, strlen(s));
}

void
pgate_report_site__url(GString *out, const char *url)
{
	if (url && (g_ascii_strncasecmp(url, "https://", 8) == 0 ||
		    g_ascii_strncasecmp(url, "http://", 7) == 0) &&
	    strpbrk(url, " \t\r\n\"'<>`") == NULL)
		esc(out, url);
	else
		g_string_append_c(out, '#');
}

guint64
pgate_report_site__hash(const char *s, gsize len)
{
	guint64 h = 0xcbf29ce484222325ull;

	for (gsize i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The key of a file's bytes: 8 at a time (not FNV: never a name). */
static guint64
content_hash(const char *s, gsize len)
{
	guint64 h = 0x9e3779b97f4a7c15ull ^ len;
	gsize i = 0;

	for (; i + 8 <= len; i += 8) {
		guint64 w;

		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	for (; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static guint64
hash_str(const char *s)
{
	return pgate_report_site__hash(s ? s : "", s ? strlen(s) : 0);
}

static guint64
mix(guint64 h, guint64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0x100000001b3ull;
}

char *
pgate_report_site__date(gint64 t)
{
	g_autoptr(GDateTime) dt = t ? g_date_time_new_from_unix_utc(t) : NULL;

	return dt ? g_date_time_format(dt, "%Y-%m-%d %H:%M") : g_strdup("");
}

void
pgate_report_site__head(GString *out, const char *root, const char *title)
{
	g_string_append(out, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
			"<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
			"content=\"width=device-width, initial-scale=1\">\n<title>");
	esc(out, title);
	g_string_append_printf(out, " \xe2\x80\x94 patchgate</title>\n<link "
			       "rel=\"stylesheet\" href=\"%ssite.css\">\n</head>"
			       "<body>\n<main>\n", root);
}

void
pgate_report_site__foot(GString *out)
{
	g_string_append(out, "</main>\n</body></html>\n");
}

void
pgate_report_site__badge(GString *out, PgateReportOutcome o, const char *text)
{
	g_string_append_printf(out, "<span class=\"b o-%s\"><span "
			       "aria-hidden=\"true\">%s</span> ",
			       pgate_report_outcome_to_string(o),
			       outcome_symbols[(guint)o <= PGATE_REPORT_OUTCOME_LAST
					       ? o : 0]);
	esc(out, text && *text ? text : pgate_report_outcome_to_string(o));
	g_string_append(out, "</span>");
}

char *
pgate_report_site__hex_name(const char *s)
{
	return g_strdup_printf("%016" G_GINT64_MODIFIER "x", hash_str(s));
}

char *
pgate_report_site_log_path(const char *ci_key)
{
	const char *slash = strchr(ci_key, '/');
	g_autofree char *sid = g_strndup(ci_key, slash ? (gsize)(slash - ci_key)
						       : strlen(ci_key));
	g_autofree char *h = hex_name(ci_key);

	/* the series id is ours: "s" and hex; anything else is hashed too */
	for (const char *p = sid; *p; p++)
		if (!g_ascii_isalnum(*p))
			return g_strdup_printf("log/%s.html", h);
	return g_strdup_printf("log/%s-%s.html", sid, h);
}

char *
pgate_report_site_msgid_path(const char *msgid)
{
	g_autofree char *h = hex_name(msgid);

	return g_strdup_printf("msgid/%s.html", h);
}

/* ---- the site ---- */

/* A row's strings are in the site's string chunk: only the row and its
 * array of Message-IDs are its own. */
static void
row_free(gpointer p)
{
	Row *r = p;

	g_free(r->msgids);
	g_free(r);
}

static void
row_fingerprint(Row *r)
{
	guint64 h = hash_str(r->id);

	h = mix(h, hash_str(r->name));
	h = mix(h, hash_str(r->project));
	h = mix(h, hash_str(r->submitter));
	h = mix(h, hash_str(r->email));
	h = mix(h, hash_str(r->state));
	h = mix(h, hash_str(r->outcome_text));
	h = mix(h, (guint64)r->date);
	h = mix(h, ((guint64)r->version << 40) ^ ((guint64)r->received << 20) ^
		r->total);
	h = mix(h, r->outcome);
	h = mix(h, hash_str(r->checks));
	h = mix(h, ((guint64)r->acked << 42) ^ ((guint64)r->reviewed << 21) ^
		r->tested);
	r->fp = h;
}

struct PgateReportSite {
	char *dir;
	char *archive_url, *public_url;
	PgateReportSiteOptions o;
	GHashTable *rows;        /* id -> Row */
	GStringChunk *strings;   /* the rows' strings */
	gboolean rows_changed;   /* a row put differs from the cache's */
	guint64 cache_key;       /* of the cache as loaded */
	GHashTable *old_keys;    /* path -> key (hex), from the cache */
	GHashTable *new_keys;    /* path -> key (hex), this build's */
	GHashTable *dirs;        /* directories written to */
	GHashTable *put_pages;   /* (nullable): the series/, log/ and msgid/
				  * pages put in a full build */
	PgateReportSiteStats stats;
};

void
pgate_report_site_free(PgateReportSite *site)
{
	if (site == NULL)
		return;
	g_free(site->dir);
	g_free(site->archive_url);
	g_free(site->public_url);
	g_hash_table_unref(site->rows);
	g_string_chunk_free(site->strings);
	g_hash_table_unref(site->old_keys);
	g_hash_table_unref(site->new_keys);
	g_hash_table_unref(site->dirs);
	if (site->put_pages)
		g_hash_table_unref(site->put_pages);
	g_free(site);
}

/* Cache fields: \\, \t, \n and space escaped. */
static void
cache_field(GString *out, const char *s)
{
	g_string_append_c(out, '\t');
	for (; s && *s; s++) {
		switch (*s) {
		case '\\': g_string_append(out, "\\\\"); break;
		case '\t': g_string_append(out, "\\t"); break;
		case '\n': g_string_append(out, "\\n"); break;
		case ' ': g_string_append(out, "\\s"); break;
		default: g_string_append_c(out, *s);
		}
	}
}

/* Unescapes @s (cut at @end) in place; returns it. */
static char *
cache_unfield(char *s, char *end)
{
	char *w = s;

	for (char *r = s; r < end; r++) {
		if (*r == '\\' && r + 1 < end) {
			r++;
			*w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : *r == 's' ? ' ' : *r;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return s;
}

/* The next tab-separated field of *@p (to @end), unescaped in place. */
static char *
next_field(char **p, char *end)
{
	char *s = *p, *tab;

	if (s >= end)
		return NULL;
	tab = memchr(s, '\t', (gsize)(end - s));
	*p = tab ? tab + 1 : end;
	return cache_unfield(s, tab ? tab : end);
}

static void
cache_load(PgateReportSite *site)
{
	g_autofree char *path = g_build_filename(site->dir, ".pgate-site",
						 "cache", NULL);
	g_autofree char *text = NULL;
	gsize len = 0;
	char *line, *next, *eof;

	if (!g_file_get_contents(path, &text, &len, NULL) || len > CACHE_MAX ||
	    !g_str_has_prefix(text, CACHE_MAGIC "\n"))
		return;
	site->cache_key = content_hash(text, len);
	eof = text + len;
	for (line = text + strlen(CACHE_MAGIC) + 1; line < eof; line = next) {
		char *nl = memchr(line, '\n', (gsize)(eof - line));
		char *p = line + 2, *f[15];
		guint nf = 0;

		if (nl == NULL)
			break;           /* a cut line: the rest is lost */
		next = nl + 1;
		if (nl - line < 2 || line[1] != '\t')
			continue;
		while (nf < G_N_ELEMENTS(f) && (f[nf] = next_field(&p, nl)) != NULL)
			nf++;
		if (line[0] == 'P' && nf == 2) {
			g_hash_table_replace(site->old_keys, g_strdup(f[0]),
					     g_strdup(f[1]));
		} else if (line[0] == 'R' && nf >= 12) {
			Row *r = g_new0(Row, 1);
			GStringChunk *c = site->strings;
			char *ids = nf > 12 ? f[12] : (char *)"";
			guint n = 0, cap = 1;

			r->id = g_string_chunk_insert(c, f[0]);
			r->date = g_ascii_strtoll(f[1], NULL, 10);
			r->version = (guint32)g_ascii_strtoull(f[2], NULL, 10);
			r->received = (guint32)g_ascii_strtoull(f[3], NULL, 10);
			r->total = (guint32)g_ascii_strtoull(f[4], NULL, 10);
			if (!pgate_report_outcome_from_string(f[5], &r->outcome))
				r->outcome = PGATE_REPORT_OUTCOME_NONE;
			r->state = g_string_chunk_insert_const(c, f[6]);
			r->outcome_text = g_string_chunk_insert_const(c, f[7]);
			r->name = g_string_chunk_insert(c, f[8]);
			r->project = g_string_chunk_insert_const(c, f[9]);
			r->submitter = g_string_chunk_insert_const(c, f[10]);
			r->email = g_string_chunk_insert_const(c, f[11]);
			/* the Message-IDs: space-separated (a space in one is \s,
			 * already unescaped: split on the original separators) */
			for (const char *q = ids; *q; q++)
				cap += *q == '\x1f';
			r->msgids = g_new0(char *, cap + 1);
			for (char *q = ids, *sep; *q; q = sep + 1) {
				sep = strchr(q, '\x1f');
				if (sep)
					*sep = '\0';
				if (*q)
					r->msgids[n++] = g_string_chunk_insert(c, q);
				if (sep == NULL)
					break;
			}
			r->checks = g_string_chunk_insert_const(c, nf > 13 ? f[13]
								    : "");
			if (nf > 14 &&
			    sscanf(f[14], "%u %u %u", &r->acked, &r->reviewed,
				   &r->tested) != 3)
				r->acked = r->reviewed = r->tested = 0;
			row_fingerprint(r);
			g_hash_table_replace(site->rows, r->id, r);
		}
	}
}

PgateReportSite *
pgate_report_site_open(const char *dir, const PgateReportSiteOptions *opts,
		       GError **error)
{
	g_autoptr(PgateReportSite) site = g_new0(PgateReportSite, 1);
	gboolean fresh = !g_file_test(dir, G_FILE_TEST_IS_DIR);

	if (!pgate_mkdir_p(dir, PGATE_REPORT_ERROR, error))
		return NULL;
	if (fresh)
		g_chmod(dir, 0755);
	site->dir = g_strdup(dir);
	site->o = *opts;
	site->archive_url = g_strdup(opts->archive_url);
	site->public_url = g_strdup(opts->public_url);
	site->o.archive_url = site->archive_url;
	site->o.public_url = site->public_url;
	if (site->o.page_size == 0)
		site->o.page_size = 100;
	site->rows = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					   row_free);
	site->strings = g_string_chunk_new(1 << 16);
	site->old_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					       g_free);
	site->new_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					       g_free);
	site->dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	cache_load(site);
	return g_steal_pointer(&site);
}

/* DIR/@rel, made with its directories (0755). */
static char *
site_path(PgateReportSite *site, const char *rel, GError **error)
{
	g_autofree char *path = g_build_filename(site->dir, rel, NULL);
	g_autofree char *parent = g_path_get_dirname(path);

	if (!g_hash_table_contains(site->dirs, parent)) {
		if (g_mkdir_with_parents(parent, 0755) != 0) {
			int errsv = errno;

			g_set_error(error, PGATE_REPORT_ERROR,
				    pgate_error_errno_code(errsv), "%s: %s", parent,
				    g_strerror(errsv));
			return NULL;
		}
		g_hash_table_add(site->dirs, g_strdup(parent));
	}
	return g_steal_pointer(&path);
}

/* Writes @data at DIR/@rel unless it holds those bytes already: a
 * temporary file beside it, fsync'd, renamed over it (the directory is
 * fsync'd by pgate_report_site_finish()). */
static gboolean write_file_full(PgateReportSite *site, const char *rel,
				const char *data, gsize len, gboolean compare,
				GError **error);

static gboolean
write_file(PgateReportSite *site, const char *rel, const char *data, gsize len,
	   GError **error)
{
	return write_file_full(site, rel, data, len, TRUE, error);
}

/* @compare: read the file first, and leave it when it holds @data */
static gboolean
write_file_full(PgateReportSite *site, const char *rel, const char *data,
		gsize len, gboolean compare, GError **error)
{
	g_autofree char *path = site_path(site, rel, error);
	g_autofree char *old = NULL;
	gsize old_len = 0;

	if (path == NULL)
		return FALSE;
	if (compare && g_file_get_contents(path, &old, &old_len, NULL) &&
	    old_len == len &&
	    memcmp(old, data, len) == 0) {
		site->stats.unchanged++;
		return TRUE;
	}
	/* readable by the web server; the directory is fsync'd once, by
	 * pgate_report_site_finish() */
	if (!pgate_file_replace(path, data, len, 0644, PGATE_REPORT_ERROR,
				error))
		return FALSE;
	site->stats.written++;
	return TRUE;
}

static gboolean
write_string(PgateReportSite *site, const char *rel, GString *s, GError **error)
{
	return write_file(site, rel, s->str, s->len, error);
}

/* A series' own page (series/, log/, msgid/) written: a full build
 * removes the others (sweep_pages()). */
static void
note_put(PgateReportSite *site, const char *rel)
{
	if (!site->o.full)
		return;
	if (site->put_pages == NULL)
		site->put_pages = g_hash_table_new_full(g_str_hash, g_str_equal,
							g_free, NULL);
	g_hash_table_add(site->put_pages, g_strdup(rel));
}

/* After a full build: the pages of series/, log/ and msgid/ that no
 * series put (a series gone, a job no longer there) are removed, so
 * that nothing stale is served. */
static void
sweep_pages(PgateReportSite *site)
{
	static const char *const dirs[] = { "series", "log", "msgid" };

	for (guint i = 0; i < G_N_ELEMENTS(dirs); i++) {
		g_autofree char *path = g_build_filename(site->dir, dirs[i], NULL);
		g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
		const char *name;

		while (d && (name = g_dir_read_name(d)) != NULL) {
			g_autofree char *rel = NULL;
			g_autofree char *full = NULL;

			if (!g_str_has_suffix(name, ".html") &&
			    !(i == 0 && g_str_has_suffix(name, ".json")))
				continue;
			rel = g_strdup_printf("%s/%s", dirs[i], name);
			if (site->put_pages &&
			    g_hash_table_contains(site->put_pages, rel))
				continue;
			full = g_build_filename(site->dir, rel, NULL);
			if (g_unlink(full) == 0)
				site->stats.removed++;
		}
	}
	g_clear_pointer(&site->put_pages, g_hash_table_unref);
}

/* A large file, known by the key of its bytes in the cache rather than
 * read back to compare. */
static gboolean
write_keyed(PgateReportSite *site, const char *rel, GString *data,
	    GError **error)
{
	g_autofree char *hex = g_strdup_printf("%016" G_GINT64_MODIFIER "x",
		content_hash(data->str, data->len));
	const char *old = g_hash_table_lookup(site->old_keys, rel);
	g_autofree char *full = g_build_filename(site->dir, rel, NULL);

	if (old && strcmp(old, hex) == 0 && g_file_test(full, G_FILE_TEST_EXISTS))
		site->stats.unchanged++;
	else if (!write_file_full(site, rel, data->str, data->len, FALSE, error))
		return FALSE;
	g_hash_table_replace(site->new_keys, g_strdup(rel), g_steal_pointer(&hex));
	return TRUE;
}

static void
redirect_page(GString *out, const char *to, const char *msgid)
{
	g_string_append(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
			"charset=\"utf-8\"><meta name=\"viewport\" "
			"content=\"width=device-width, initial-scale=1\">"
			"<meta http-equiv=\"refresh\" "
			"content=\"0; url=");
	esc(out, to);
	g_string_append(out, "\"><title>Message ");
	esc(out, msgid);
	g_string_append(out, "</title><style>code{overflow-wrap:anywhere}"
			"</style></head><body><main><p>Message <code>");
	esc(out, msgid);
	g_string_append(out, "</code> is in <a href=\"");
	esc(out, to);
	g_string_append(out, "\">this series</a>.</p></main></body></html>\n");
}

gboolean
pgate_report_site_needs_full(PgateReportSite *site)
{
	return site->o.full || site->cache_key == 0;
}

void
pgate_report_site_set_full(PgateReportSite *site, gboolean full)
{
	site->o.full = full;
	if (full) {
		GHashTableIter it;
		gpointer v;

		g_hash_table_iter_init(&it, site->rows);
		while (g_hash_table_iter_next(&it, NULL, &v))
			((Row *)v)->seen = FALSE;
	}
}

/* Row's A/R/T: the Acked-by, Reviewed-by and Tested-by trailers of the
 * patches (from the patches and the replies to them), as Patchwork's
 * list counts them. */
static void
row_trailers(const PgateReportSiteSeries *s, Row *r)
{
	for (guint i = 0; i < s->patches->len; i++) {
		const PgateReportSitePatch *p = s->patches->pdata[i];

		for (guint k = 0; p->trailers && k < p->trailers->len; k++) {
			const PgateTrailer *t = p->trailers->pdata[k];

			if (g_ascii_strcasecmp(t->name, "Acked-by") == 0)
				r->acked++;
			else if (g_ascii_strcasecmp(t->name, "Reviewed-by") == 0)
				r->reviewed++;
			else if (g_ascii_strcasecmp(t->name, "Tested-by") == 0)
				r->tested++;
		}
	}
}

gboolean
pgate_report_site_put(PgateReportSite *site, const PgateReportSiteSeries *s,
		      GError **error)
{
	g_autoptr(GString) page = NULL;
	g_autofree char *rel = NULL;
	g_autofree char *to = NULL;
	Row *r = g_new0(Row, 1);
	GPtrArray *ids = g_ptr_array_new();

	g_return_val_if_fail(s->id != NULL, FALSE);
	for (const char *p = s->id; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_') {
			g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
				    "series id %s: not a file name", s->id);
			g_ptr_array_unref(ids);
			g_free(r);
			return FALSE;
		}
	}
#define CHUNK(x) ((x) ? g_string_chunk_insert_const(site->strings, (x)) : NULL)
	r->id = CHUNK(s->id);
	r->name = CHUNK(s->name);
	r->project = CHUNK(s->project);
	r->submitter = CHUNK(s->submitter);
	r->email = CHUNK(s->submitter_email);
	r->state = CHUNK(s->state);
	r->outcome_text = CHUNK(s->outcome_text);
	r->date = s->date;
	r->version = s->version;
	r->received = s->received;
	r->total = s->total;
	r->outcome = s->outcome;
	{
		g_autofree char *checks = pgate_report_site__row_checks(s);

		r->checks = CHUNK(checks);
	}
	row_trailers(s, r);
	if (s->cover_msgid)
		g_ptr_array_add(ids, CHUNK(s->cover_msgid));
	for (guint i = 0; i < s->patches->len; i++)
		g_ptr_array_add(ids, CHUNK(((PgateReportSitePatch *)
					    s->patches->pdata[i])->msgid));
#undef CHUNK
	g_ptr_array_add(ids, NULL);
	r->msgids = (char **)g_ptr_array_free(ids, FALSE);
	r->seen = TRUE;
	row_fingerprint(r);
	{
		const Row *was = g_hash_table_lookup(site->rows, r->id);
		gboolean same = was && was->fp == r->fp;

		for (guint i = 0; same && (r->msgids[i] || was->msgids[i]); i++)
			same = r->msgids[i] && was->msgids[i] &&
			       strcmp(r->msgids[i], was->msgids[i]) == 0;
		if (!same)
			site->rows_changed = TRUE;
	}
	g_hash_table_replace(site->rows, r->id, r);
	site->stats.put++;

	page = pgate_report_site__series_page(s, &site->o);
	rel = g_strdup_printf("series/%s.html", s->id);
	if (!write_string(site, rel, page, error))
		return FALSE;
	note_put(site, rel);
	if (s->json) {
		g_free(rel);
		rel = g_strdup_printf("series/%s.json", s->id);
		if (!write_file(site, rel, s->json, strlen(s->json), error))
			return FALSE;
		note_put(site, rel);
	}
	if (s->mbox) {
		gsize len;
		const char *data = g_bytes_get_data(s->mbox, &len);

		g_free(rel);
		rel = g_strdup_printf("series/%s.mbox", s->id);
		if (!write_file(site, rel, data, len, error))
			return FALSE;
		note_put(site, rel);
	}
	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];
		g_autoptr(GString) lp = NULL;

		if (j->log == NULL || j->key == NULL)
			continue;
		lp = pgate_report_site__log_page(s, j);
		g_free(rel);
		rel = pgate_report_site_log_path(j->key);
		if (!write_string(site, rel, lp, error))
			return FALSE;
		note_put(site, rel);
	}
	to = g_strdup_printf("../series/%s.html", s->id);
	for (guint i = 0; r->msgids[i]; i++) {
		g_autoptr(GString) rp = g_string_new(NULL);

		redirect_page(rp, to, r->msgids[i]);
		g_free(rel);
		rel = pgate_report_site_msgid_path(r->msgids[i]);
		if (!write_string(site, rel, rp, error))
			return FALSE;
		note_put(site, rel);
	}
	return TRUE;
}

/* ---- listings ---- */

static gint
row_cmp(gconstpointer a, gconstpointer b)
{
	const Row *x = *(Row *const *)a, *y = *(Row *const *)b;

	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return strcmp(x->id, y->id);
}

static void
listing_free(gpointer p)
{
	Listing *l = p;

	g_free(l->dir);
	g_free(l->title);
	g_ptr_array_unref(l->rows);
	if (l->pages)
		g_array_unref(l->pages);
	g_free(l);
}

static void
listing_add(GHashTable *ls, const char *dir, const char *what,
	    const char *value, Row *r)
{
	Listing *l = g_hash_table_lookup(ls, dir);

	if (l == NULL) {
		l = g_new0(Listing, 1);
		l->dir = g_strdup(dir);
		l->title = g_strconcat(what, value, NULL);
		l->rows = g_ptr_array_new();
		g_hash_table_insert(ls, l->dir, l);
	}
	g_ptr_array_add(l->rows, r);
}

static gboolean
plain_word(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 40)
		return FALSE;
	for (; *s; s++)
		if (!g_ascii_islower(*s) && *s != '-')
			return FALSE;
	return TRUE;
}

/* "YYYY-MM" of @t (UTC) into @buf: days to civil date (H. Hinnant). */
static void
month_of(gint64 t, char buf[16])
{
	gint64 z = (t >= 0 ? t : t - 86399) / 86400 + 719468;
	gint64 era = (z >= 0 ? z : z - 146096) / 146097;
	gint64 doe = z - era * 146097;
	gint64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	gint64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	gint64 mp = (5 * doy + 2) / 153;
	gint64 m = mp < 10 ? mp + 3 : mp - 9;
	gint64 y = yoe + era * 400 + (m <= 2);

	if (y < 0 || y > 9999)
		y = 0;
	g_snprintf(buf, 16, "%04d-%02d", (int)y, (int)m);
}

static void
paginate(Listing *l, guint P)
{
	gboolean bucketed = strcmp(l->dir, "all") == 0 ||
			    g_str_has_prefix(l->dir, "state/") ||
			    g_str_has_prefix(l->dir, "outcome/");

	l->pages = g_array_new(FALSE, FALSE, sizeof(Page));
	for (guint i = 0; i < l->rows->len;) {
		Page pg = { 0, i, 0 };

		if (bucketed) {
			guint b = ((const Row *)l->rows->pdata[i])->pos / P;

			pg.num = b + 1;
			while (i < l->rows->len &&
			       ((const Row *)l->rows->pdata[i])->pos / P == b)
				i++;
		} else {
			pg.num = i / P + 1;
			i = MIN(l->rows->len, i + P);
		}
		pg.to = i;
		g_array_append_val(l->pages, pg);
	}
}

static gint
listing_cmp(gconstpointer a, gconstpointer b)
{
	const Listing *x = *(Listing *const *)a, *y = *(Listing *const *)b;

	return strcmp(x->dir, y->dir);
}

static void
json_str(GString *out, const char *s)
{
	g_string_append_c(out, '"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			g_string_append_printf(out, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			g_string_append_printf(out, "\\u%04x", c);
		else
			g_string_append_c(out, (char)c);
	}
	g_string_append_c(out, '"');
}

static void
json_strv(GString *out, const char *s)
{
	g_autofree char *valid = s && !g_utf8_validate(s, -1, NULL)
		? g_utf8_make_valid(s, -1) : NULL;

	json_str(out, valid ? valid : s);
}

static int
path_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
shard_free(gpointer p)
{
	if (p)
		g_ptr_array_unref(p);
}

/* 256 slots, each (nullable) a GPtrArray of msgid, series id pairs. */
static GPtrArray *
shards_new(void)
{
	GPtrArray *a = g_ptr_array_new_full(256, shard_free);

	g_ptr_array_set_size(a, 256);
	return a;
}

static const char find_html[] =
	"<nav><a href=\"index.html\">all series</a></nav>\n"
	"<h1>Find a series by Message-ID</h1>\n"
	"<form id=\"find\" action=\"find.html\" method=\"get\"><p><label "
	"for=\"msgid\">Message-ID (without angle brackets)</label><br>"
	"<input id=\"msgid\" name=\"msgid\" size=\"50\" required> "
	"<button type=\"submit\">Find</button></p></form>\n"
	"<p id=\"result\" role=\"status\"></p>\n"
	"<p>Without JavaScript: every Message-ID has a page <code>msgid/H.html"
	"</code> that leads to its series, where H is the 64-bit FNV-1a hash of "
	"the Message-ID in 16 lowercase hex digits; <code>msgid/XX.json</code> "
	"(XX: H's first two digits) maps each Message-ID to its series.</p>\n"
	"<script>\n"
	"function fnv(s){let h=0xcbf29ce484222325n;for(const b of new "
	"TextEncoder().encode(s)){h^=BigInt(b);h=(h*0x100000001b3n)&"
	"0xffffffffffffffffn;}return h.toString(16).padStart(16,'0');}\n"
	"const q=new URLSearchParams(location.search).get('msgid');\n"
	"if(q){const id=q.trim().replace(/^</,'').replace(/>$/,'');"
	"const h=fnv(id);const out=document.getElementById('result');"
	"fetch('msgid/'+h.slice(0,2)+'.json').then(r=>r.json()).then(m=>{"
	"if(m[id]){location.href='series/'+encodeURIComponent(m[id])+'.html';}"
	"else{out.textContent='No series has this message.';}}).catch(()=>{"
	"location.href='msgid/'+h+'.html';});}\n"
	"</script>\n";

/* The rows in date order, each knowing its place; a full build first
 * drops the rows it did not see, and their pages. */
static void
sort_rows(PgateReportSite *site, GPtrArray *sorted)
{
	GHashTableIter it;
	gpointer k, v;

	/* drop what a full build did not see */
	g_hash_table_iter_init(&it, site->rows);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		Row *r = v;

		if (site->o.full && !r->seen) {
			g_autofree char *p = g_strdup_printf("%s/series/%s.html",
							     site->dir, r->id);

			if (g_unlink(p) == 0)
				site->stats.removed++;
			g_free(p);
			p = g_strdup_printf("%s/series/%s.json", site->dir, r->id);
			g_unlink(p);
			g_hash_table_iter_remove(&it);
			continue;
		}
		g_ptr_array_add(sorted, r);
	}
	if (site->o.full)
		sweep_pages(site);
	g_ptr_array_sort(sorted, row_cmp);
	for (guint i = 0; i < sorted->len; i++)
		((Row *)sorted->pdata[i])->pos = i;
}

/* Every row into the listings it is in (@lmap: dir -> Listing), and
 * its Message-IDs into @shards (by their hash's first byte). */
static void
add_rows(GPtrArray *sorted, GHashTable *lmap, GPtrArray **shards)
{
	for (guint i = 0; i < sorted->len; i++) {
		Row *r = sorted->pdata[i];
		const char *who = r->email && *r->email ? r->email : r->submitter;
		char d[96], m[16];

		month_of(r->date, m);
		listing_add(lmap, "all", "all series", "", r);
		if (plain_word(r->state)) {
			g_snprintf(d, sizeof d, "state/%s", r->state);
			listing_add(lmap, d, "state ", r->state, r);
		}
		g_snprintf(d, sizeof d, "outcome/%s", outcome_names[r->outcome]);
		listing_add(lmap, d, "result ", outcome_names[r->outcome], r);
		g_snprintf(d, sizeof d, "project/%016" G_GINT64_MODIFIER "x",
			   hash_str(r->project));
		listing_add(lmap, d, "project ", r->project && *r->project
			    ? r->project : "(none)", r);
		g_snprintf(d, sizeof d, "submitter/%016" G_GINT64_MODIFIER "x",
			   hash_str(who));
		listing_add(lmap, d, "submitter ", who ? who : "", r);
		g_snprintf(d, sizeof d, "month/%s", m);
		listing_add(lmap, d, "month ", m, r);
		for (guint j = 0; r->msgids && r->msgids[j]; j++) {
			guint64 h = hash_str(r->msgids[j]);
			guint s = (guint)(h >> 56);

			if (shards[s] == NULL)
				shards[s] = g_ptr_array_new();
			g_ptr_array_add(shards[s], r->msgids[j]);
			g_ptr_array_add(shards[s], r->id);
		}
	}
}

/* Paginates the listings @ls and writes the pages whose rows changed;
 * every page's key goes into the new keys. */
static gboolean
write_listings(PgateReportSite *site, GPtrArray *ls, GError **error)
{
	guint P = site->o.page_size;

	/* the listing pages whose rows changed */
	for (guint i = 0; i < ls->len; i++) {
		Listing *l = ls->pdata[i];

		paginate(l, P);
		for (guint k = 0; k < l->pages->len; k++) {
			const Page *pg = &g_array_index(l->pages, Page, k);
			guint prev = k ? g_array_index(l->pages, Page, k - 1).num : 0;
			guint next = k + 1 < l->pages->len
				? g_array_index(l->pages, Page, k + 1).num : 0;
			guint64 key = mix(hash_str(l->title) ^ RENDER_VERSION,
					  ((guint64)pg->num << 40) ^
					  ((guint64)prev << 20) ^ next);
			g_autofree char *rel = g_strdup_printf("%s/%u.html", l->dir,
							       pg->num);
			g_autofree char *hex = NULL;
			const char *old;
			g_autofree char *full = NULL;

			for (guint j = pg->from; j < pg->to; j++)
				key = mix(key, ((const Row *)l->rows->pdata[j])->fp);
			hex = g_strdup_printf("%016" G_GINT64_MODIFIER "x", key);
			old = g_hash_table_lookup(site->old_keys, rel);
			full = g_build_filename(site->dir, rel, NULL);
			if (old == NULL || strcmp(old, hex) != 0 ||
			    !g_file_test(full, G_FILE_TEST_EXISTS)) {
				g_autoptr(GString) lp =
					pgate_report_site__listing_page(l, k);

				if (!write_file_full(site, rel, lp->str, lp->len, FALSE,
						     error))
					return FALSE;
			}
			g_hash_table_replace(site->new_keys, g_steal_pointer(&rel),
					     g_steal_pointer(&hex));
		}
	}
	return TRUE;
}

/* Writes msgid/XX.json, the map of Message-ID to series of @shards[XX];
 * each shard's key goes into the new keys. */
static gboolean
write_shards(PgateReportSite *site, GPtrArray **shards, GError **error)
{
	/* the msgid shards whose entries changed */
	for (guint s = 0; s < 256; s++) {
		g_autofree char *rel = g_strdup_printf("msgid/%02x.json", s);
		guint64 key = 0;
		g_autofree char *hex = NULL;
		const char *old;

		for (guint j = 0; shards[s] && j < shards[s]->len; j += 2)
			key += mix(hash_str(shards[s]->pdata[j]),
				   hash_str(shards[s]->pdata[j + 1]));
		if (shards[s] == NULL)
			continue;
		hex = g_strdup_printf("%016" G_GINT64_MODIFIER "x", key);
		old = g_hash_table_lookup(site->old_keys, rel);
		if (old == NULL || strcmp(old, hex) != 0) {
			g_autoptr(GString) js = g_string_new("{");

			for (guint j = 0; j < shards[s]->len; j += 2) {
				if (j)
					g_string_append_c(js, ',');
				json_strv(js, shards[s]->pdata[j]);
				g_string_append_c(js, ':');
				json_str(js, shards[s]->pdata[j + 1]);
			}
			g_string_append(js, "}\n");
			if (!write_string(site, rel, js, error))
				return FALSE;
		}
		g_hash_table_replace(site->new_keys, g_steal_pointer(&rel),
				     g_steal_pointer(&hex));
	}
	return TRUE;
}

/* index.json: every series, newest first. */
static GString *
index_json(GPtrArray *sorted)
{
	GString *page = g_string_sized_new(256 * (gsize)sorted->len + 64);

	g_string_append(page, "{\"format_version\":1,\"series\":[");
	for (guint i = sorted->len; i-- > 0;) {
		const Row *r = sorted->pdata[i];

		g_string_append(page, i + 1 == sorted->len ? "\n{\"id\":" : ",\n{\"id\":");
		json_str(page, r->id);
		g_string_append(page, ",\"name\":");
		json_strv(page, r->name);
		g_string_append_printf(page, ",\"version\":%u,\"received\":%u,"
				       "\"total\":%u,\"date\":%" G_GINT64_FORMAT
				       ",\"state\":", r->version, r->received,
				       r->total, r->date);
		json_strv(page, r->state);
		g_string_append_printf(page, ",\"outcome\":\"%s\",\"result\":",
				       outcome_names[r->outcome]);
		json_strv(page, r->outcome_text);
		g_string_append(page, ",\"project\":");
		json_strv(page, r->project);
		g_string_append(page, ",\"submitter\":");
		json_strv(page, r->submitter);
		g_string_append(page, ",\"email\":");
		json_strv(page, r->email);
		g_string_append(page, ",\"page\":\"series/");
		g_string_append(page, r->id);
		g_string_append(page, ".html\"}");
	}
	g_string_append(page, "\n]}\n");
	return page;
}

/* The cache's text: a line per row (R), by date, then one per page
 * written with its key (P), by path. */
static GString *
cache_text(GPtrArray *sorted, GHashTable *new_keys)
{
	GString *cache = g_string_sized_new(
		192 * (gsize)sorted->len +
		64 * (gsize)g_hash_table_size(new_keys) + 64);

	g_string_append(cache, CACHE_MAGIC "\n");
	for (guint i = 0; i < sorted->len; i++) {
		const Row *r = sorted->pdata[i];
		char num[96];

		g_string_append_c(cache, 'R');
		cache_field(cache, r->id);
		g_snprintf(num, sizeof num, "\t%" G_GINT64_FORMAT "\t%u\t%u\t%u",
			   r->date, r->version, r->received, r->total);
		g_string_append(cache, num);
		cache_field(cache, outcome_names[r->outcome]);
		cache_field(cache, r->state);
		cache_field(cache, r->outcome_text);
		cache_field(cache, r->name);
		cache_field(cache, r->project);
		cache_field(cache, r->submitter);
		cache_field(cache, r->email);
		g_string_append_c(cache, '\t');
		for (guint j = 0; r->msgids && r->msgids[j]; j++) {
			if (j)
				g_string_append_c(cache, '\x1f');
			for (const char *q = r->msgids[j]; *q; q++) {
				if (*q == '\\' || *q == '\t' || *q == '\n' ||
				    *q == '\x1f')
					g_string_append_c(cache, '_');
				else
					g_string_append_c(cache, *q);
			}
		}
		cache_field(cache, r->checks);
		g_snprintf(num, sizeof num, "\t%u %u %u", r->acked, r->reviewed,
			   r->tested);
		g_string_append(cache, num);
		g_string_append_c(cache, '\n');
	}
	{
		g_autofree gpointer *paths = g_hash_table_get_keys_as_array(
			new_keys, NULL);
		guint np = g_hash_table_size(new_keys);

		qsort(paths, np, sizeof *paths, path_cmp);
		for (guint i = 0; i < np; i++) {
			g_string_append_c(cache, 'P');
			cache_field(cache, paths[i]);
			cache_field(cache, g_hash_table_lookup(new_keys,
							       paths[i]));
			g_string_append_c(cache, '\n');
		}
	}
	return cache;
}

gboolean
pgate_report_site_finish(PgateReportSite *site, PgateReportSiteStats *stats,
			 GError **error)
{
	g_autoptr(GPtrArray) sorted = g_ptr_array_sized_new(
		g_hash_table_size(site->rows));
	g_autoptr(GHashTable) lmap = g_hash_table_new_full(g_str_hash, g_str_equal,
							   NULL, listing_free);
	g_autoptr(GPtrArray) ls = g_ptr_array_new();
	g_autoptr(GString) page = NULL;
	g_autoptr(GString) cache = NULL;
	g_autoptr(GPtrArray) shardv = shards_new();
	GPtrArray **shards = (GPtrArray **)shardv->pdata;
	g_autofree char *cache_path = NULL;
	GHashTableIter it;
	gpointer k, v;

	/* nothing a listing shows changed: the listings are as they were
	 * (unless the cache is of a build before search-data.js) */
	if (!site->o.full && !site->rows_changed && site->cache_key != 0 &&
	    g_hash_table_contains(site->old_keys, "search-data.js")) {
		site->stats.series = g_hash_table_size(site->rows);
		if (stats)
			*stats = site->stats;
		memset(&site->stats, 0, sizeof site->stats);
		return TRUE;
	}
	site->rows_changed = FALSE;
	sort_rows(site, sorted);

	add_rows(sorted, lmap, shards);
	g_hash_table_iter_init(&it, lmap);
	while (g_hash_table_iter_next(&it, NULL, &v))
		g_ptr_array_add(ls, v);
	g_ptr_array_sort(ls, listing_cmp);

	if (!write_listings(site, ls, error))
		return FALSE;
	if (!write_shards(site, shards, error))
		return FALSE;

	page = pgate_report_site__index_page(&site->o, sorted, ls, lmap);
	if (!write_string(site, "index.html", page, error))
		return FALSE;
	g_string_free(page, TRUE);
	page = pgate_report_site__filters_page(ls);
	if (!write_string(site, "filters.html", page, error))
		return FALSE;
	g_string_free(page, TRUE);
	page = g_string_new(NULL);
	pgate_report_site__head(page, "", "find by Message-ID");
	g_string_append(page, find_html);
	pgate_report_site__foot(page);
	if (!write_string(site, "find.html", page, error) ||
	    !write_file(site, "site.css", pgate_report_site__css,
			strlen(pgate_report_site__css), error))
		return FALSE;

	/* index.json, newest first */
	g_string_free(page, TRUE);
	page = index_json(sorted);
	if (!write_keyed(site, "index.json", page, error))
		return FALSE;
	/* the same rows for search.html, a script */
	g_string_free(page, TRUE);
	page = pgate_report_site__search_data(sorted);
	if (!write_keyed(site, "search-data.js", page, error))
		return FALSE;
	g_string_free(page, TRUE);
	page = pgate_report_site__search_page();
	if (!write_string(site, "search.html", page, error))
		return FALSE;

	/* pages of the last build that are no more */
	g_hash_table_iter_init(&it, site->old_keys);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		if (!g_hash_table_contains(site->new_keys, k)) {
			g_autofree char *p = g_build_filename(site->dir, k, NULL);

			if (g_unlink(p) == 0)
				site->stats.removed++;
		}
	}
	/* the cache */
	cache = cache_text(sorted, site->new_keys);
	cache_path = g_build_filename(site->dir, ".pgate-site", NULL);
	if (content_hash(cache->str, cache->len) != site->cache_key &&
	    (g_mkdir_with_parents(cache_path, 0755) != 0 ||
	     !write_file_full(site, ".pgate-site/cache", cache->str, cache->len,
			      FALSE, error)))
		return FALSE;
	site->cache_key = content_hash(cache->str, cache->len);
	/* the renames are durable once their directories are */
	g_hash_table_iter_init(&it, site->dirs);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (!pgate_fsync_dir(k, PGATE_REPORT_ERROR, error))
			return FALSE;
	{
		GHashTable *swap = site->old_keys;

		site->old_keys = site->new_keys;
		site->new_keys = swap;
		g_hash_table_remove_all(site->new_keys);
	}
	site->stats.series = sorted->len;
	if (stats)
		*stats = site->stats;
	memset(&site->stats, 0, sizeof site->stats);
	return TRUE;
}
