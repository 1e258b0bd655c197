/* site-private.h - what the site's files (site.c, site-page.c) share;
 * nothing else includes it. */
#pragma once

#include "report/report.h"

/* The site's style sheet: one file, site.css, linked by every page. */
extern const char pgate_report_site__css[];

/* HTML text: < > & " ' escaped, control characters but \t \n shown as
 * U+FFFD, invalid UTF-8 replaced. */
void pgate_report_site__esc(GString *out, const char *s);
void pgate_report_site__esc_len(GString *out, const char *s, gsize len);
/* An attribute value that is a URL: only http(s) URLs, else "#". */
void pgate_report_site__url(GString *out, const char *url);
/* FNV-1a, 64 bits: names of pages derived from mail text. */
guint64 pgate_report_site__hash(const char *s, gsize len);
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
GString *pgate_report_site__series_page(const PgateReportSiteSeries *s,
					const PgateReportSiteOptions *o);
GString *pgate_report_site__log_page(const PgateReportSiteSeries *s,
				     const PgateReportSiteJob *j);
