/* report.h - telling people what happened: Patchwork checks and opt-in
 * email replies to the submitter.
 *
 * This module talks to the outside world only; what to report and whether
 * it was already reported is the caller's business (the store's outbox).
 * Every function that sends something either succeeds (the server accepted
 * it) or fails with a GError in domain PGATE_REPORT_ERROR whose code tells
 * a transient failure (PGATE_ERROR_IO: timeout, connection refused, 5xx,
 * 429) from a permanent one (PGATE_ERROR_FAILED, _INVALID, _NOT_FOUND,
 * _CONFIG: 4xx, a refused recipient).
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"

G_BEGIN_DECLS

#define PGATE_REPORT_ERROR (pgate_report_error_quark())
GQuark pgate_report_error_quark(void);

/* ---- html.c: the static page of `patchgate report html` ----
 *
 * Built a series at a time, in the order the page shows them:
 *
 *   h = pgate_report_html_new();
 *   for each series:
 *     pgate_report_html_series_begin(h, &s);
 *     pgate_report_html_supersedes(h, ...);   each older version, newest first
 *     pgate_report_html_state(h, state, reason);
 *     pgate_report_html_result(h, ...);       each apply attempt and CI job
 *     pgate_report_html_series_end(h);
 *   path = pgate_report_html_write(h, dir, &error);
 *
 * Every text is escaped; a URL is a link only when it is http(s).
 */
typedef struct PgateReportHtml PgateReportHtml;

typedef struct {
	const char *id;
	const char *name;
	const char *submitter;   /* a name, or an address */
	guint version, received, total;
	gint64 date;             /* seconds since the epoch */
} PgateReportHtmlSeries;

PgateReportHtml *pgate_report_html_new(void);
void pgate_report_html_free(PgateReportHtml *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateReportHtml, pgate_report_html_free)
void pgate_report_html_series_begin(PgateReportHtml *h,
				    const PgateReportHtmlSeries *s);
/* @why: (nullable): how the two versions were linked */
void pgate_report_html_supersedes(PgateReportHtml *h, guint version,
				  const char *id, const char *why);
/* @state: the pipeline state's name; @reason: (nullable) */
void pgate_report_html_state(PgateReportHtml *h, const char *state,
			     const char *reason);
/* @key: "apply/TARGET", "ci/TARGET/JOB"; @result: a status, verdict or
 * job state; @url, @reason: (nullable) */
void pgate_report_html_result(PgateReportHtml *h, const char *key,
			      const char *result, const char *url,
			      const char *reason);
void pgate_report_html_series_end(PgateReportHtml *h);
/* Writes DIR/index.html atomically (DIR made 0755 when it is new, the
 * page 0644: it is meant to be served).  Returns: (transfer full): its
 * path, %NULL on error. */
char *pgate_report_html_write(PgateReportHtml *h, const char *dir,
			      GError **error);

G_END_DECLS

/* The Patchwork client and the email sender declare their API in these
 * two parts, which this header includes: one module, one header to
 * include. */
#include "report/patchwork/patchwork.h"
#include "report/email/email.h"
