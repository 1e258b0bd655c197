/* report.c - what the report stage's parts share. */
#include "report/report.h"

G_DEFINE_QUARK(pgate-report-error-quark, pgate_report_error)
