/* pipeline.h - the stages joined: apply -> ci -> report, driven through
 * each series' state in the store (docs/pipeline.md).
 *
 * The pipeline is the layer between the stages and the command line: it
 * reads [apply], [ci], [trust] and [pipeline], moves every series as far as
 * it can go in one pass (pass.c, steps.c), applies (stage-apply.c), submits
 * and polls CI jobs (stage-ci.c), and queues reports in the store's outbox
 * (report/ delivers them).  Its per-series state is typed documents in the
 * store (store/docs.c).  Errors: domain PGATE_PIPELINE_ERROR with the codes
 * of PgateErrorCode.  It never prints: events go to a log callback.
 *
 * This header is what the command line calls.  The pipeline's
 * configuration, projects, routes and plans are opaque here (their fields
 * are in pipeline-private.h): a caller hands over the key file, or holds
 * a configuration made by pgate_pipeline_apply_config_new() or
 * pgate_pipeline_site_config_new(); only a call's options, counts and
 * results have their fields here (tests/cli/t0108-layers.py).
 */
#pragma once

#include <glib.h>
#include <jansson.h>

#include "apply/apply.h"
#include "ci/ci.h"
#include "report/report.h"
#include "common/json.h"
#include "common/pgate-common.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "upstream/upstream.h"

G_BEGIN_DECLS

#define PGATE_PIPELINE_ERROR (pgate_pipeline_error_quark())
GQuark pgate_pipeline_error_quark(void);

/* ---- route.c: projects and routing (docs/config.md, docs/pipeline.md) */

/* One project: [project NAME], or the implicit one (@name %NULL) of a
 * configuration without any. */
typedef struct PgateProject PgateProject;

void pgate_project_free(PgateProject *pr);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateProject, pgate_project_free)
/* Returns: (transfer full) (element-type PgateProject): the projects in
 * file order, or the implicit one; %NULL with PGATE_ERROR_CONFIG. */
GPtrArray *pgate_projects_load(GKeyFile *kf, GError **error);
/* (nullable): the name, %NULL for the implicit project. */
const char *pgate_project_name(const PgateProject *pr);
/* The ID a project's documents are kept under: @sid for the implicit
 * project (the keys of before projects), "SID@NAME" for a named one
 * (SID@NAME/pipeline, SID@NAME/apply/TARGET, ...). */
char *pgate_project_state_id(const PgateProject *pr, const char *sid);
/* *@out_why (transfer full): why series @rec is @pr's ("List-Id
 * <netdev.vger.kernel.org> matches netdev.*"): the first of its cover
 * and patches that is the project's; %NULL: not the project's. */
gboolean pgate_project_match_series(PgateStoreTxn *txn, const PgateProject *pr,
				    const PgateSeriesRec *rec, char **out_why,
				    GError **error);

/* ---- stage-apply.c ---- */

/* [apply] */
typedef struct PgateApplyConfig PgateApplyConfig;

/* Returns: (transfer full): [apply] of @kf, read and checked; %NULL
 * with PGATE_ERROR_CONFIG. */
PgateApplyConfig *pgate_pipeline_apply_config_new(GKeyFile *kf,
						  GError **error);
void pgate_pipeline_apply_config_free(PgateApplyConfig *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateApplyConfig, pgate_pipeline_apply_config_free)
/* Whether the configuration has an [apply] group. */
gboolean pgate_pipeline_apply_config_enabled(const PgateApplyConfig *c);

/**
 * pgate_pipeline_apply:
 * @only_branch: (nullable): try this target only
 *
 * Applies series @sid (its prerequisites first, a partial re-roll as the
 * whole new version) onto its base-commit when the repository has it,
 * then onto the configured branches until one applies (all of them with
 * all_branches); names each good result with a ref and pushes it.
 * Writes SERIES/apply/TARGET for every attempt.  Returns: (transfer
 * full) (element-type PgateApplyDoc): the attempts in the order
 * they were made (one per target), or %NULL on an error that is not the
 * series' fault.
 */
GPtrArray *pgate_pipeline_apply(PgateStore *store, const PgateApplyConfig *c,
				const char *sid, const char *only_branch,
				GError **error);

/* ---- series-mbox.c: a series as an mbox ---- */

typedef struct {
	gboolean trailers;       /* add what [apply] says (add_trailers:
				  * the follow-up trailers even when off) */
	gboolean cover;          /* the cover letter first, when there is
				  * one */
	guint version;           /* 0: the series given; else the version of
				  * its chain (supersedes/superseded_by) */
} PgateSeriesMboxOptions;

/**
 * pgate_pipeline_series_mbox:
 * @c: [apply] (its link_pattern and signoff); nullable
 *
 * Returns: (transfer full): series @sid (or its version @o->version) as
 * an mboxrd mbox, the cover first then the patches in order, each as
 * `b4 am` writes it (apply.h, pgate_apply_mbox_append()); %NULL with
 * NOT_FOUND when there is no such series or version, INVALID when a
 * member cannot be read as git mailinfo reads it.
 */
GBytes *pgate_pipeline_series_mbox(PgateStoreTxn *txn, const char *state_dir,
				   const PgateApplyConfig *c, const char *sid,
				   const PgateSeriesMboxOptions *o,
				   char **out_sid, GError **error);

/* ---- pipeline.c ---- */

/* The pipeline of a configuration (pgate_pipeline_new()): opaque. */
typedef struct PgatePipeline PgatePipeline;

/* One line per event: series=ID what detail */
typedef void (*PgatePipelineLog)(gpointer data, const char *series_id,
				 const char *what, const char *detail);

typedef struct {
	PgatePipelineLog log;    /* (nullable): the events of a pass */
	gpointer log_data;
	gint64 upstream_every;   /* seconds between two reads of the
				  * [upstream] branches: 0 at every pass,
				  * G_MAXINT64 once (a command's) */
} PgatePipelineOptions;

/* Returns: (transfer full): the pipeline of @kf ([pipeline], [trust],
 * [apply], [ci], [upstream], [email], [patchwork]: every group read and
 * checked here, once) over @store; %NULL with PGATE_ERROR_CONFIG.
 * @store, @kf and @state_dir are borrowed and must outlive it. */
PgatePipeline *pgate_pipeline_new(PgateStore *store, GKeyFile *kf,
				  const char *state_dir,
				  const PgatePipelineOptions *o,
				  GError **error);
void pgate_pipeline_free(PgatePipeline *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePipeline, pgate_pipeline_free)
/* The log callback (the daemon wraps it to learn which series moved). */
void pgate_pipeline_set_log(PgatePipeline *p, PgatePipelineLog log,
			    gpointer log_data);
void pgate_pipeline_get_log(const PgatePipeline *p, PgatePipelineLog *log,
			    gpointer *log_data);
/* Whether @p has [project NAME] pipelines, each with its own
 * [patchwork] client (after the first pass: pgate_pipeline_projects_init()). */
gboolean pgate_pipeline_has_projects(const PgatePipeline *p);
/* [email] of the implicit project (nullable). */
const PgateEmailConfig *pgate_pipeline_email(const PgatePipeline *p);
/* The result refs past [apply] keep_days, deleted (pgate_pipeline_prune_refs());
 * *@out_deleted: how many, *@out_keep_days: the setting; nothing without
 * [apply]. */
gboolean pgate_pipeline_prune(PgatePipeline *p, guint *out_deleted,
			      guint *out_keep_days, GError **error);

typedef struct {
	guint series, errors;
	guint testing;     /* series left in "testing" after the pass */
} PgatePipelineStats;

/* Asks for series @sid to be tested again by the next pass (docs/
 * pipeline.md, "Recheck"): @job (nullable: the configured one),
 * @rebase (nullable): apply it again on this branch first; @by: who. */
gboolean pgate_pipeline_recheck_request(PgatePipeline *p, const char *sid,
					const char *job, const char *rebase,
					const char *by, GError **error);
/* One pass over every series (or only @only).  With [project NAME]
 * groups: one pass per project, over the series that are its own,
 * their documents kept under SID@NAME. */
gboolean pgate_pipeline_run(PgatePipeline *p, const char *only,
			    PgatePipelineStats *stats, GError **error);
/* Whether @p (or one of its projects' pipelines) has the local CI
 * backend running jobs in this process (run waits for them). */
gboolean pgate_pipeline_runs_local_jobs(const PgatePipeline *p);
/* Sends what is due as pgate_outbox_flush(), once per project with the
 * project's Patchwork and mail settings when @p has projects; else once
 * with @ob as it is. */
gboolean pgate_pipeline_outbox_flush(PgatePipeline *p, PgateOutbox *ob,
				     PgateOutboxStats *stats, GError **error);
/* Returns: (transfer full): which projects message @m goes to and why,
 * and the targets in each (patchgate route): {"msgid", "series",
 * "projects": [{"project", "why", "targets": [{"target", "rule",
 * "why"}], "skip"}], "not_projects": [NAME...]}.  With @sid (and
 * @store), the targets of that series; else of the message alone. */
json_t *pgate_pipeline_route_explain(PgateStore *store, GKeyFile *kf,
				     const PgateMessageRec *m,
				     const char *sid, GError **error);

/* ---- site-data.c: the static site (docs/report-site.md) ---- */

/* [report] */
typedef struct PgateSiteConfig PgateSiteConfig;

/* Returns: (transfer full): [report] of @kf (and what it takes of
 * [patchwork] and [apply]), read and checked; %NULL with
 * PGATE_ERROR_CONFIG. */
PgateSiteConfig *pgate_pipeline_site_config_new(GKeyFile *kf, GError **error);
void pgate_pipeline_site_config_free(PgateSiteConfig *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateSiteConfig, pgate_pipeline_site_config_free)
/* (nullable): [report] html_dir */
const char *pgate_pipeline_site_config_html_dir(const PgateSiteConfig *c);
/* (transfer full): the site in @dir, its cache loaded, for
 * pgate_pipeline_site_update(); the daemon keeps it from pass to pass. */
PgateReportSite *pgate_pipeline_site_open(const PgateSiteConfig *c,
					  const char *dir, GError **error);
/* As pgate_pipeline_site_build(), on a site already open. */
gboolean pgate_pipeline_site_update(PgateStore *store,
				    const PgateSiteConfig *c,
				    const char *state_dir, PgateReportSite *site,
				    const char *const *ids,
				    PgateReportSiteStats *stats, GError **error);
/* Writes the site in @dir: every series when @ids is %NULL (a series
 * the store no longer has is dropped), else only the series @ids names
 * and the other versions of their chains; then the listings and index
 * where they changed (report/site.c). */
gboolean pgate_pipeline_site_build(PgateStore *store, const PgateSiteConfig *c,
				   const char *state_dir, const char *dir,
				   const char *const *ids,
				   PgateReportSiteStats *stats, GError **error);

/* ---- check.c: b4's external check protocol (docs/ecosystem.md) ---- */

/* The largest message `patchgate check` reads. */
#define PGATE_CHECK_MAX_BYTES (64u * 1024 * 1024)

/* What a message given to `patchgate check` is to the store. */
typedef struct {
	char *msgid;       /* (nullable): its Message-ID (valid UTF-8) */
	char *series;      /* (nullable): the series it is a member or the
			    * cover of */
	gboolean is_cover;
	char *unknown;     /* (nullable): why there is no series (the
			    * warning b4 shows) */
} PgateCheckTarget;

void pgate_pipeline_check_target_clear(PgateCheckTarget *t);
/* Reads @mail (one RFC 2822 message as b4 pipes it; a leading mbox
 * "From " line is skipped) and looks its Message-ID up.  A message the
 * store lacks, or that is in no series, or that cannot be read, is not
 * an error: @out->unknown says why.  %FALSE only on a store error. */
gboolean pgate_pipeline_check_find(PgateStoreTxn *txn, GBytes *mail,
				   PgateCheckTarget *out, GError **error);
/* Returns: (transfer full): b4's JSON array for @t: a "patchgate-apply"
 * entry (the series' apply attempts; with @series FALSE and a patch,
 * that patch's part in them) and one "patchgate-JOB" entry per CI job
 * ("patchgate-JOB@TARGET" when jobs ran on several targets), with the
 * job's log page (public_url), else its CI URL, else the archive link;
 * one "patchgate" warn entry when @t has no series.  %NULL on error. */
json_t *pgate_pipeline_check_results(PgateStoreTxn *txn,
				     const PgateSiteConfig *site,
				     const PgateCheckTarget *t, gboolean series,
				     GError **error);
/* Returns: (transfer full): [{"tool": "patchgate", "status": "warn",
 * "summary": @why}] */
json_t *pgate_pipeline_check_unknown(const char *why);
/* ---- test-now.c: patchgate test ---- */

typedef struct {
	const char *backend;     /* (nullable): another [ci] backend */
	const char *branch;      /* (nullable): only this applied target */
	gboolean no_wait;        /* submit and return (local jobs always
				  * wait: they run in this process) */
	gint retry_for;          /* seconds of transient poll errors in a
				  * row waited through */
	gint max_wait;           /* seconds the jobs are waited for at most
				  * (PGATE_ERROR_IO after); 0: no bound */
	gboolean ci_optional;    /* without [ci], the apply is the result
				  * (else the backend's missing settings
				  * are the error) */
	/* (nullable): told once when polls start failing for now: the
	 * job's TARGET/JOB and the error */
	void (*waiting)(gpointer data, const char *job, const char *message);
	gpointer data;
} PgatePipelineTestOptions;

typedef struct {
	char *series;
	char *prefix;            /* "SERIES/ci/": what docs' keys start with */
	GPtrArray *docs;         /* (element-type PgateCiDoc): every job */
	GPtrArray *raw;          /* (element-type json_t): each as stored */
	guint lost;              /* of them, lost by the backend */
} PgatePipelineTestResult;

void pgate_pipeline_test_result_free(PgatePipelineTestResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePipelineTestResult,
			      pgate_pipeline_test_result_free)
/* Series @sid's CI job now, on every target it applied to (applying it
 * first when it never was), its verdicts waited for; the trust gate
 * first (PGATE_ERROR_NOT_ALLOWED).  Returns: (transfer full): the jobs
 * as they ended. */
PgatePipelineTestResult *pgate_pipeline_test(PgatePipeline *p,
					     const char *sid,
					     const PgatePipelineTestOptions *o,
					     GError **error);

/* `check --run`: applies series @sid when no attempt of it applied, then
 * submits the CI job on every applied target and, with the local
 * backend, waits for it (an hour at most: PGATE_ERROR_IO). */
gboolean pgate_pipeline_check_run(PgatePipeline *p, const char *sid,
				  GError **error);

/* ---- config-check.c: `patchgate config check` (docs/config.md,
 * "Checking a file") ----
 *
 * What the configuration names, looked at without changing anything (no
 * store, directory, object or ref is made).  Each problem is appended to
 * @problems (element-type GError, transfer full) as one line "[GROUP]
 * KEY: ..."; a key a module's reader refused already (a problem in
 * @problems names it) is not looked at again. */

/* The caller's reader of its own groups (cli/'s [daemon]): appends what
 * it refuses in @kf to @problems. */
typedef void (*PgateConfigCheckOwn)(GKeyFile *kf, GPtrArray *problems);
/* All of `config check` on @kf, as `run` reads it: every module's reader
 * (@own, nullable, first) on the file, or on what each [project NAME]
 * sees (its problems worded "project NAME: ..."), with the routing keys;
 * then the instance's [upstream] and [report] readers; unless
 * @values_only, what the values name
 * (pgate_pipeline_config_check_project(), _instance(), with the daemon's
 * @maildirs and @inboxes, nullable).  @online (nullable): the servers'
 * answers too (pgate_pipeline_config_check_online()). */
void pgate_pipeline_config_check(GKeyFile *kf, gboolean values_only,
				 PgateConfigCheckOwn own, char **maildirs,
				 char **inboxes, GPtrArray *problems,
				 GPtrArray *online);

G_END_DECLS
