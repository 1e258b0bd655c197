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
#include "store/store.h"

G_BEGIN_DECLS

#define PGATE_REPORT_ERROR (pgate_report_error_quark())
GQuark pgate_report_error_quark(void);

/* What a delivery did, for the caller's log: @key the series (or the
 * outbox entry), @what one word ("mail-skipped", "mail-held", "sent"),
 * @detail (nullable) why. */
typedef void (*PgateReportLog)(gpointer data, const char *key,
			       const char *what, const char *detail);

/* (transfer full) (nullable): @public_url ([report] public_url: where
 * the site is served; nullable) + the log page of CI job @ci_key: the
 * target_url of its checks and the link in mail when its backend has no
 * page of its own; %NULL without public_url. */
char *pgate_report_site_job_url(const char *public_url, const char *ci_key);

/* The archive of list @list_id (a List-Id's <...> part, nullable) when
 * it is one patchgate knows by its List-Id: lore.kernel.org for the
 * lists of vger.kernel.org and lists.linux.dev and the kernel's lists of
 * lists.infradead.org, QEMU and U-Boot; inbox.dpdk.org for DPDK's
 * (docs/config.md, "[report] archive_url").  A pattern with {msgid}, or
 * %NULL: no archive known, and no link is made. */
const char *pgate_report_archive_known(const char *list_id);

/* The archive copy of @msgid (with or without its <>) of a message of
 * list @list_id (nullable): @pattern ([report] archive_url; %NULL:
 * pgate_report_archive_known() of @list_id; "": none) with {msgid}
 * replaced by the percent-encoded Message-ID (appended when there is no
 * {msgid}); the site, the mail, the checks and b4's check give the same
 * address.  %NULL for an empty or %NULL @msgid, or when there is no
 * archive.  (transfer full) */
char *pgate_report_archive_url(const char *pattern, const char *list_id,
			       const char *msgid);

/* ---- site.c, site-page.c: the static site of `patchgate report html`
 * (docs/report-site.md) ----
 *
 * This part only renders and writes: the caller (pipeline/site-data.c) reads
 * the store and hands over one PgateReportSiteSeries per series.
 *
 *   site = pgate_report_site_open(dir, &opts, &error);  loads DIR's cache
 *   for each series that changed (or every series, with opts.full):
 *     pgate_report_site_put(site, &series, &error);   its own pages
 *   pgate_report_site_finish(site, &stats, &error);   listings, index.json,
 *                                                     msgid lookup, cache
 *
 * A page is written (temporary file, fsync, rename) only when its bytes
 * changed; with opts.full, the series not put since open are dropped.
 * Every text from mail is escaped; a URL is a link only when http(s).
 */
typedef enum {
	PGATE_REPORT_OUTCOME_NONE = 0,   /* nothing to judge (skipped) */
	PGATE_REPORT_OUTCOME_PENDING,    /* not yet (new, waiting, testing) */
	PGATE_REPORT_OUTCOME_PASS,
	PGATE_REPORT_OUTCOME_WARN,       /* warnings, a CI error, incomplete */
	PGATE_REPORT_OUTCOME_FAIL,       /* did not apply, build or test */
} PgateReportOutcome;
#define PGATE_REPORT_OUTCOME_LAST PGATE_REPORT_OUTCOME_FAIL

/* (transfer none): "none", "pending", "pass", "warn", "fail" */
const char *pgate_report_outcome_to_string(PgateReportOutcome o);
gboolean pgate_report_outcome_from_string(const char *s,
					  PgateReportOutcome *out);

typedef struct {
	guint32 number;
	char *msgid;
	char *subject, *author;          /* (nullable) */
	char *patchwork_url;             /* (nullable) */
	GPtrArray *trailers;             /* (element-type PgateTrailer) */
	char *diff;                      /* (nullable): the patch as `git am`
					  * reads it, at most
					  * PGATE_REPORT_SITE_DIFF_MAX bytes */
	gboolean diff_truncated;
} PgateReportSitePatch;

/* The most of one patch's diff a series page shows. */
#define PGATE_REPORT_SITE_DIFF_MAX (256u * 1024)

typedef struct {
	char *target, *status, *base, *head, *ref;   /* (nullable) */
	gint64 fail_patch, fail_hunk;    /* 0: none */
	char *fail_file, *fail_reason;   /* (nullable) */
	char *fail_hunk_text;            /* (nullable): the hunk that failed */
	GPtrArray *commits;              /* (nullable) (element-type utf8):
					  * one per applied patch */
} PgateReportSiteApply;

typedef struct {
	char *key;                       /* SERIES/ci/TARGET/JOB */
	char *target, *job, *backend;    /* (nullable) */
	char *result;                    /* the verdict, or the job's state */
	PgateReportOutcome outcome;
	char *reason, *summary, *url;    /* (nullable) */
	gint64 submitted, finished;      /* 0: unknown */
	gboolean has_tests;
	gint64 tests_total, tests_failed, tests_skipped;
	gint64 warnings_added;           /* -1: unknown */
	char *log;                       /* (nullable): the full log */
	gboolean log_truncated;
} PgateReportSiteJob;

typedef struct {
	char *id;
	guint32 version;
	char *rule;                      /* (nullable): how it is linked to
					  * the version before it */
	char *state;
	PgateReportOutcome outcome;
	gint64 date;
} PgateReportSiteVersion;

/* A reply to one of a series' mails (review, discussion). */
typedef struct {
	char *msgid;
	char *subject, *author;          /* (nullable) */
	gint64 date;
} PgateReportSiteReply;

/* The most replies a series page lists (the count says how many more). */
#define PGATE_REPORT_SITE_REPLIES_MAX 200

typedef struct {
	char *id, *name, *project, *submitter, *submitter_email;
	gint64 date;
	guint32 version, received, total;
	char *state, *state_reason;      /* reason: (nullable) */
	PgateReportOutcome outcome;
	char *outcome_text;              /* "build failed", "passed" ... */
	char *cover_msgid;               /* (nullable) */
	char *cover_text;                /* (nullable): the cover letter's
					  * text ("Changes in v3: ..."), at
					  * most PGATE_REPORT_SITE_DIFF_MAX */
	GPtrArray *versions;   /* (element-type PgateReportSiteVersion):
				* the chain, oldest first, this one included */
	GPtrArray *patches;    /* (element-type PgateReportSitePatch) */
	GPtrArray *apply;      /* (element-type PgateReportSiteApply) */
	GPtrArray *jobs;       /* (element-type PgateReportSiteJob) */
	GPtrArray *deps;       /* (element-type PgateSeriesDep) */
	char *merged_as;       /* (nullable) */
	GPtrArray *upstream;   /* (nullable) (element-type utf8): merge
				* detection's explanation, a line a fact
				* (pgate_upstream_explain()): each match and
				* what it beat, the "possibly merged" hints */
	char *compare;         /* (nullable): results against the version
				* before ("v3: build fixed since v2") */
	char *interdiff;       /* (nullable): against the version before */
	char *range_diff;      /* (nullable): the patches paired */
	char *json;            /* (nullable): `series show --json`'s document */
	GBytes *mbox;          /* (nullable): the series as `patchgate series
				* mbox --trailers` writes it (no cover: what
				* git am takes), series/ID.mbox */
	GPtrArray *replies;    /* (element-type PgateReportSiteReply): the
				* replies to its cover and patches, oldest
				* first, at most PGATE_REPORT_SITE_REPLIES_MAX */
	guint replies_total;   /* how many there are */
	GPtrArray *fetch;      /* (nullable) (element-type utf8): "URL REF"
				* of each published result, for its git
				* fetch line */
	GPtrArray *projects;   /* (nullable) (element-type utf8): with
				* [project NAME] groups, one line a project
				* that judged the series: "NAME: STATE" or
				* "NAME: STATE - REASON" */
} PgateReportSiteSeries;

PgateReportSiteSeries *pgate_report_site_series_new(void);
void pgate_report_site_series_free(PgateReportSiteSeries *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateReportSiteSeries,
			      pgate_report_site_series_free)
PgateReportSitePatch *pgate_report_site_patch_new(void);
PgateReportSiteApply *pgate_report_site_apply_new(void);
PgateReportSiteJob *pgate_report_site_job_new(void);
PgateReportSiteVersion *pgate_report_site_version_new(void);
PgateReportSiteReply *pgate_report_site_reply_new(void);

typedef struct {
	const char *archive_url;   /* (nullable): with {msgid}; %NULL: the
				    * series' list's known archive */
	const char *public_url;    /* (nullable): where the site is served */
	guint page_size;           /* rows per listing page; 0: 100 */
	gboolean full;             /* every series is put: drop the others */
} PgateReportSiteOptions;

typedef struct {
	guint series;              /* series known to the site */
	guint put;                 /* series put */
	guint written;             /* files written (their bytes changed) */
	guint unchanged;           /* files rendered, found the same */
	guint removed;             /* files removed */
	gint64 usec;               /* the time it took (set by the caller) */
} PgateReportSiteStats;

typedef struct PgateReportSite PgateReportSite;

/* Returns: (transfer full): the site in @dir (made 0755 when new), its
 * cache loaded (a damaged cache is dropped: the next full build makes
 * it again). */
PgateReportSite *pgate_report_site_open(const char *dir,
					const PgateReportSiteOptions *opts,
					GError **error);
void pgate_report_site_free(PgateReportSite *site);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateReportSite, pgate_report_site_free)
/* Whether every series must be put: opts.full, or DIR had no cache (a
 * new site, or one an older version wrote). */
gboolean pgate_report_site_needs_full(PgateReportSite *site);
/* Whether the next puts are every series (see opts.full). */
void pgate_report_site_set_full(PgateReportSite *site, gboolean full);
/* Writes the pages of @s: series/ID.html, series/ID.json, a log page
 * per job with a log, msgid/HASH.html per Message-ID. */
gboolean pgate_report_site_put(PgateReportSite *site,
			       const PgateReportSiteSeries *s,
			       GError **error);
/* Writes what lists the series (index.html, the listing and filter
 * pages, index.json, msgid/XX.json, find.html) where it changed, and the
 * cache. */
gboolean pgate_report_site_finish(PgateReportSite *site,
				  PgateReportSiteStats *stats,
				  GError **error);
/* (transfer full): the path of the log page of job @ci_key ("SERIES/ci/
 * TARGET/JOB") below the site's root: "log/SERIES-HASH.html". */
char *pgate_report_site_log_path(const char *ci_key);
/* (transfer full): "msgid/HASH.html", the redirect to @msgid's series. */
char *pgate_report_site_msgid_path(const char *msgid);

/* site-diff.c: between two versions applied in the repository at
 * @repo_path, each given by its applied commits (hex, oldest first, not
 * empty): the interdiff of the two trees, and the patches paired by
 * patch-id, then subject, the changed ones with the diff of their diffs
 * (git range-diff's form).  In-process, with libgit2. */
gboolean pgate_report_site_between(const char *repo_path,
				   const GPtrArray *old_commits,
				   const GPtrArray *new_commits,
				   char **out_interdiff, char **out_range_diff,
				   GError **error);

/* The sentence that compares two versions' results ("v3: build fixed
 * since v2; check still fails"), or %NULL when nothing compares.
 * (transfer full) */
char *pgate_report_site_compare(const PgateReportSiteSeries *prev,
				const PgateReportSiteSeries *cur);

/* A template of the configuration ([report] archive_url, [apply]
 * link_pattern, ref_format) parses: every {NAME} in @tpl is one of @names
 * (%NULL-terminated, without braces), and every brace is one of a pair.
 * Returns: %FALSE with PGATE_ERROR_CONFIG saying which is not (the
 * message names the template, not its key: the caller adds it). */
gboolean pgate_report_check_template(const char *tpl,
				     const char *const *names,
				     GError **error);

G_END_DECLS

/* The Patchwork client, the email sender and the outbox that delivers
 * through both declare their API in these parts, which this header
 * includes: one module, one header to include. */
#include "report/patchwork/patchwork.h"
#include "report/email/email.h"
#include "report/outbox/outbox.h"
