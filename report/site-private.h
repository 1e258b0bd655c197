/* site-private.h - what the site's files (site.c, site-page.c,
 * site-listing.c, site-diff.c, site-css.c, site-search.c) share; nothing else includes
 * it. */
#pragma once

#include "report/report.h"

/* The site's style sheet (site-css.c): one file, site.css, linked by
 * every page. */
extern const char pgate_report_site__css[];

/* HTML text: < > & " ' escaped, control characters but \t \n shown as
 * U+FFFD, invalid UTF-8 replaced. */
void pgate_report_site__esc(GString *out, const char *s);
void pgate_report_site__esc_len(GString *out, const char *s, gsize len);
/* An attribute value that is a URL: only http(s) URLs, else "#". */
void pgate_report_site__url(GString *out, const char *url);
/* FNV-1a, 64 bits: names of pages derived from mail text. */
guint64 pgate_report_site__hash(const char *s, gsize len);
/* The hash of @s (NULL: "") in 16 lowercase hex digits: a file name. */
char *pgate_report_site__hex_name(const char *s);
/* "2026-12-05 09:55" (UTC), "" for 0. */
char *pgate_report_site__date(gint64 t);
/* The page head: title escaped, @root ("", "../") before site.css. */
void pgate_report_site__head(GString *out, const char *root,
			     const char *title);
void pgate_report_site__foot(GString *out);
/* The badge of an outcome: a symbol and a word besides the colour. */
void pgate_report_site__badge(GString *out, PgateReportOutcome o,
			      const char *text);

/* site-page.c */
/* An apply attempt's outcome by its status ("ok", "conflict", ...; NULL:
 * not yet). */
PgateReportOutcome pgate_report_site__apply_outcome(const char *status);
GString *pgate_report_site__series_page(const PgateReportSiteSeries *s,
					const PgateReportSiteOptions *o);
GString *pgate_report_site__log_page(const PgateReportSiteSeries *s,
				     const PgateReportSiteJob *j);

/* What the listings need of a series (site.c keeps them, in its cache). */
typedef struct {
	char *id, *name, *project, *submitter, *email, *state, *outcome_text;
	gint64 date;
	guint32 version, received, total;
	PgateReportOutcome outcome;
	char **msgids;
	char *checks;        /* the checks, as the index shows them:
			      * "LABEL=OUTCOME ..." (apply, apply@TARGET,
			      * JOB, JOB@TARGET), space-separated */
	guint32 acked, reviewed, tested;   /* A/R/T: the patches' trailers */
	guint64 fp;
	gboolean seen;
	guint pos;           /* in date order, in the build being finished */
} Row;

typedef struct {
	char *dir;               /* "all", "state/done", "project/HASH" */
	char *title;             /* "project demo.example.org" */
	GPtrArray *rows;         /* (element-type Row) (transfer none): by date */
	GArray *pages;           /* (element-type Page) */
} Listing;

/* A listing's page: its rows [from, to) and its number.  A listing that
 * series often leave and join (state/, outcome/, all/) numbers its pages
 * by all/'s: page N holds its series among all/N's, so that a series
 * that moves rewrites the pages of its own date only; the others (a
 * project, a submitter, a month: a series stays in them) are pages of
 * page_size from the oldest. */
typedef struct {
	guint num, from, to;
} Page;

/* site-listing.c */
/* (transfer full): Row.checks of @s (site-private.h, Row). */
char *pgate_report_site__row_checks(const PgateReportSiteSeries *s);
GString *pgate_report_site__listing_page(const Listing *l, guint k);
GString *pgate_report_site__index_page(const PgateReportSiteOptions *o,
				       GPtrArray *sorted, GPtrArray *ls,
				       GHashTable *lmap);
GString *pgate_report_site__filters_page(GPtrArray *ls);

/* site-search.c */
/* search-data.js: the rows of @sorted (by date), newest first, as a
 * script that sets one global (site-search.c says its form). */
GString *pgate_report_site__search_data(GPtrArray *sorted);
/* search.html: the combined filters, in the browser, from that file. */
GString *pgate_report_site__search_page(void);
