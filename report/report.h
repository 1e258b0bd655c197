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

G_END_DECLS

/* The Patchwork client and the email sender declare their API in these
 * two parts, which this header includes: one module, one header to
 * include. */
#include "report/patchwork/patchwork.h"
#include "report/email/email.h"
