/* pipeline.h - the stages joined: apply -> ci -> report, driven through
 * each series' state in the store (docs/pipeline.md).
 *
 * The pipeline is the layer between the stages and the command line: it
 * reads [apply], [ci], [trust] and [pipeline], moves every series as far as
 * it can go in one pass (pipeline.c), applies (stage-apply.c), submits and
 * polls CI jobs (stage-ci.c), and queues and sends reports through the
 * store's outbox (report/: the outbox and the reply mail).  Its per-series state is
 * documents in the store, typed, and encoded in state.c only.  Errors:
 * domain PGATE_PIPELINE_ERROR with the codes of PgateErrorCode.  It never
 * prints: events go to a log callback.
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
typedef struct {
	char *name;              /* (nullable): %NULL for the implicit one */
	char **lists;            /* (nullable): lowercased List-Id globs */
	char **addresses;        /* (nullable): lowercased To/Cc globs */
	GKeyFile *kf;            /* what its stages read: the defaults with
				  * its GROUP.KEY set over them */
} PgateProject;

void pgate_project_free(PgateProject *pr);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateProject, pgate_project_free)
/* Returns: (transfer full) (element-type PgateProject): the projects in
 * file order, or the implicit one; %NULL with PGATE_ERROR_CONFIG. */
GPtrArray *pgate_projects_load(GKeyFile *kf, GError **error);
/* The name, "-" for the implicit project. */
const char *pgate_project_label(const PgateProject *pr);
/* The ID a project's documents are kept under: @sid for the implicit
 * project (the keys of before projects), "SID@NAME" for a named one
 * (SID@NAME/pipeline, SID@NAME/apply/TARGET, ...). */
char *pgate_project_state_id(const PgateProject *pr, const char *sid);
/* Returns: (transfer full) (nullable): why message @m is @pr's ("List-Id
 * <netdev.vger.kernel.org> matches netdev.*"), %NULL when it is not. */
char *pgate_project_match_message(const PgateProject *pr,
				  const PgateMessageRec *m);
/* The same for a series: the first of its cover and patches that is
 * the project's.  *@out_why %NULL: not the project's. */
gboolean pgate_project_match_series(PgateStoreTxn *txn, const PgateProject *pr,
				    const PgateSeriesRec *rec, char **out_why,
				    GError **error);

/* The rule that chose a target. */
typedef enum {
	PGATE_ROUTE_BASE_COMMIT = 0,  /* the series' base-commit */
	PGATE_ROUTE_TAG,              /* [apply] tags */
	PGATE_ROUTE_TAG_DEFAULT,      /* [apply] tag_default */
	PGATE_ROUTE_PATHS,            /* [apply] paths */
	PGATE_ROUTE_BRANCHES,         /* [apply] branches */
} PgateRouteRule;

/* "base-commit", "tag", "tag-default", "paths", "branches" */
const char *pgate_route_rule_to_string(PgateRouteRule rule);

/* [apply] tags, tag_default, paths, maintainers, maintainers_sections */
typedef struct {
	char **tags;             /* (nullable): "GLOB:BRANCH", GLOB lowercased */
	char *tag_default;       /* (nullable): a branch */
	char **paths;            /* (nullable): "GLOB:BRANCH" or "GLOB" */
	char *maintainers;       /* (nullable): a file in the repository */
	char **maintainers_sections; /* (nullable): section title globs */
} PgateRouteConfig;

gboolean pgate_route_config_load(GKeyFile *kf, PgateRouteConfig *c,
				 GError **error);
void pgate_route_config_clear(PgateRouteConfig *c);
/* Whether any routing key is set (else the branches are tried as before
 * routing existed, and nothing names a rule). */
gboolean pgate_route_config_routes(const PgateRouteConfig *c);

typedef struct {
	char *branch;            /* "base-commit" for the series' own base */
	PgateRouteRule rule;
	char *why;               /* "[net-next] matches net-next*" */
} PgateRouteTarget;

typedef struct {
	GPtrArray *targets;      /* (element-type PgateRouteTarget): in order */
	char *skip;              /* (nullable): why the series is not applied
				  * in this project ("no tree for tag X") */
} PgateRoute;

void pgate_route_free(PgateRoute *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateRoute, pgate_route_free)
/* The subject's tree tag (lowercased): its first prefix that is not
 * RFC, RESEND, vN, N/M, ...; %NULL when none. */
char *pgate_route_tree_tag(const GPtrArray *prefixes);
/* A MAINTAINERS-style glob: "dir/" is the directory and below, '*' and
 * '?' match any character ('/' too), a plain name is a file or a
 * directory. */
gboolean pgate_route_path_match(const char *glob, const char *path);
/* Returns: (transfer full): the F: globs of a MAINTAINERS file, of the
 * sections whose title matches one of @sections (nullable: all). */
char **pgate_route_maintainers_parse(const char *text, gsize len,
				     char **sections);
/* The targets of a series: @base_commit (nullable) first, then the
 * first rule that decides: tags, tag_default, paths (@files against
 * [apply] paths and @maint, the MAINTAINERS globs, nullable), branches.
 * Returns: (transfer full). */
PgateRoute *pgate_route_decide(const PgateRouteConfig *c, char **branches,
			       const char *base_commit,
			       const GPtrArray *prefixes,
			       const GPtrArray *files, char **maint);
/* The subject prefixes (of the cover, else the first patch) and the
 * files touched (all patches) of @rec. */
gboolean pgate_route_series_input(PgateStoreTxn *txn,
				  const PgateSeriesRec *rec,
				  GPtrArray **out_prefixes,
				  GPtrArray **out_files, GError **error);

/* ---- stage-apply.c ---- */

/* [apply] */
typedef struct {
	gboolean enabled;        /* the group exists */
	char *repo;
	char **branches;         /* tried in order */
	gboolean all_branches;   /* apply to every branch, not the first good */
	char *push_url;          /* (nullable) */
	char *ref_format;        /* {series} {version} {target} */
	guint keep_days;         /* refs older than this are pruned */
	char *committer_name, *committer_email;
	char *push_user, *push_password_file, *push_password_env, *push_ssh_key;
	PgateApplyOptions opts;  /* points into the strings above */
	/* b4 am's trailers (series-mbox.c, docs/ecosystem.md) */
	gboolean add_trailers;   /* the replies' review trailers */
	char *link_pattern;      /* (nullable): "...{msgid}..." */
	char *signoff;           /* (nullable): "Name <email>", last */
} PgateApplyConfig;

gboolean pgate_pipeline_apply_config_load(GKeyFile *kf, PgateApplyConfig *c,
				 GError **error);
void pgate_pipeline_apply_config_clear(PgateApplyConfig *c);

/* ---- plan.c: what an apply of a series applies ---- */

typedef enum {
	PGATE_PLAN_OWN = 0,     /* the series' own patch */
	PGATE_PLAN_BORROWED,    /* a partial re-roll's: the older version's */
	PGATE_PLAN_PREREQ,      /* a prerequisite series' */
} PgatePlanRole;

typedef struct {
	PgateSeriesPatch *patch;  /* (owned) */
	char *series;             /* the series it is a member of */
	PgatePlanRole role;
	char *why;                /* (nullable): a prerequisite's dependency,
				   * "KIND: VALUE" */
} PgatePlanItem;

typedef struct {
	PgateSeriesRec *rec;      /* the series */
	GPtrArray *items;         /* (element-type PgatePlanItem): in the order
				   * they are applied, prerequisites first */
	guint n_prereq;           /* how many of them are prerequisites' */
	GPtrArray *prereqs;       /* (element-type utf8): their series */
	char *reroll_of;          /* (nullable): the series a partial
				   * re-roll borrows from */
} PgatePipelinePlan;

/* Whether the submitter of @candidate is trusted (a dependency resolves
 * to a trusted sender's series before an untrusted one's). */
typedef gboolean (*PgatePlanTrustFunc)(const PgateSeriesRec *candidate,
				       gpointer data);

/* Returns: (transfer full): what applying series @sid (a state ID:
 * SID@PROJECT too) applies, in order (plan.c); PGATE_ERROR_NOT_FOUND
 * "no series SID" when there is none.  @trusted (nullable) ranks the
 * candidates of a dependency after the submitter's own. */
PgatePipelinePlan *pgate_pipeline_plan_read(PgateStoreTxn *txn,
					    const char *sid,
					    PgatePlanTrustFunc trusted,
					    gpointer data, GError **error);
void pgate_pipeline_plan_free(PgatePipelinePlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePipelinePlan, pgate_pipeline_plan_free)

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
/* The same with the targets @route chose (nullable: the configured
 * branches), each document naming its rule; @sid may be a state ID
 * (SID@NAME, pgate_project_state_id()): the series is read under its
 * own ID, the documents written under @sid.  @plan (nullable: read
 * here, without a trust ranking) is what is applied: the one the trust
 * decision judged. */
GPtrArray *pgate_pipeline_apply_routed(PgateStore *store,
				       const PgateApplyConfig *c,
				       const char *sid, const char *only_branch,
				       const PgateRoute *route,
				       const PgatePipelinePlan *plan,
				       GError **error);
/* Returns: (transfer full) (nullable): the F: globs of [apply]
 * maintainers, read from the first of [apply] branches that has it;
 * %NULL without error when it is not set. */
char **pgate_pipeline_maintainers_read(const PgateApplyConfig *c,
				       const PgateRouteConfig *rc,
				       GError **error);

/* ---- mbox.c: b4 am's trailers, and a series as an mbox ---- */

/* Returns: (transfer full): what [apply] add_trailers and link_pattern
 * add to patch @p (of series @r) commit message: its review trailers
 * from replies as threading collected them, those given to @p itself
 * first, then those given to the cover (as b4 am -t orders them), and
 * the Link: with @p's Message-ID. */
PgateApplyExtra *pgate_pipeline_apply_extra(const PgateApplyConfig *c,
					    const PgateSeriesRec *r,
					    const PgateSeriesPatch *p);

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

/* Deletes (and pushes the deletion of) the refs under ref_format's fixed
 * prefix whose commits are older than keep_days; never with a prefix of
 * fewer than three components ("refs/heads/" would be every branch). */
gboolean pgate_pipeline_prune_refs(const PgateApplyConfig *c,
				   guint *out_deleted, GError **error);

/* [ci] backend = local | jenkins | buildbot; job = NAME.  The backend's
 * own settings are in [ci.local] / [ci.jenkins] / [ci.buildbot]. */

typedef struct {
	gboolean enabled;        /* the backend's group exists */
	char *backend;
	char *group;             /* "ci.local" */
	char *job;               /* "build" */
	guint retries;           /* an error verdict is retried this often */
} PgateCiConfig;

gboolean pgate_pipeline_ci_config_load(GKeyFile *kf, PgateCiConfig *c, GError **error);
void pgate_pipeline_ci_config_clear(PgateCiConfig *c);

/* Submits the job for @target's applied series (@apply_doc: its attempt
 * there); writes and returns (transfer full) SERIES/ci/TARGET/JOB. */
PgateCiDoc *pgate_pipeline_ci_submit(PgateStore *store,
					     const PgateApplyConfig *ac,
					     const PgateCiConfig *cc,
					     PgateCiBackend *backend,
					     const PgateSeriesRec *rec,
					     const char *target,
					     const PgateApplyDoc *apply_doc,
					     GError **error);
/* Polls the job of @doc and stores what it says (in @doc too). */
gboolean pgate_pipeline_ci_poll(PgateStore *store, PgateCiBackend *backend,
				PgateCiDoc *doc, GError **error);
/* Polls every queued or running job in the store at once (Jenkins: many
 * requests in flight, curl multi), storing what each says; adds the keys
 * polled to @polled (a set of strings). */
gboolean pgate_pipeline_ci_poll_all(PgateStore *store, PgateCiBackend *backend,
				    GHashTable *polled, GError **error);
/* Cancels it (a superseded series): verdict fail, reason @why. */
gboolean pgate_pipeline_ci_cancel(PgateStore *store, PgateCiBackend *backend,
				  PgateCiDoc *doc, const char *why,
				  GError **error);

/* ---- pw-state.c: Patchwork patch states ([patchwork] set_state) ---- */

typedef struct PgatePipeline PgatePipeline;

/* *@out: [patchwork] set_state (FALSE without a [patchwork] group). */
gboolean pgate_pw_state_enabled(GKeyFile *kf, gboolean *out, GError **error);
/* Called by every save of a series' pipeline document, in its
 * transaction: when the save moves @rec into merged (every patch matched
 * upstream), superseded or superseded-by-merge and set_state is on,
 * queues the patches' new Patchwork state (accepted with each patch's
 * commit, or superseded). */
gboolean pgate_pw_state_on_move(PgateStoreTxn *txn, PgatePipeline *p,
				const PgateSeriesRec *rec,
				const PgateSeriesDoc *doc, GError **error);
/* A series in final state @state (done, apply-failed, ...) that a newer
 * version superseded: its patches become "superseded" in Patchwork, once
 * (with [patchwork] set_state). */
gboolean pgate_pw_state_on_final(PgatePipeline *p, const PgateSeriesRec *rec,
				 PgateSeriesState state, GError **error);

/* ---- pipeline.c ---- */

/* [pipeline], [trust] and [patchwork] context_prefix */
typedef struct {
	gint64 wait_complete;    /* seconds an incomplete series is waited for */
	gboolean trust_everyone;
	char **trusted;          /* lowercased address globs */
	gboolean trust_committers; /* authors of commits on [apply] branches */
	char **approvers;        /* lowercased globs: whose replies decide */
	char *approve_keyword;   /* a line of a reply that approves ("") */
	char *reject_keyword;    /* ... that rejects */
	char *require_authentication; /* (nullable): the local MTA's
				  * authserv-id, whose topmost
				  * Authentication-Results must pass for the
				  * From domain of every message that grants
				  * trust or approves */
	guint recheck_limit;     /* recheck requests by mail a series may
				  * have in a day */
	guint max_patches;       /* a larger series is skipped (0: no
				  * bound) */
	char *context_prefix;    /* (nullable): [patchwork] context_prefix,
				  * joined to each check's context with
				  * '-' ("apply" -> "patchgate-apply") */
} PgatePipelineConfig;

gboolean pgate_pipeline_config_load(GKeyFile *kf, PgatePipelineConfig *c,
				    GError **error);
void pgate_pipeline_config_clear(PgatePipelineConfig *c);
gboolean pgate_pipeline_trusted(const PgatePipelineConfig *c,
				const char *email);

/* One line per event: series=ID what detail */
typedef void (*PgatePipelineLog)(gpointer data, const char *series_id,
				 const char *what, const char *detail);
/* The pipeline of a configuration (pgate_pipeline_new()): opaque. */

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

gboolean pgate_pipeline_ci_backend(PgatePipeline *p, GError **error);
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
/* Makes the projects' pipelines of @p (once): none without [project
 * NAME] groups. */
gboolean pgate_pipeline_projects_init(PgatePipeline *p, GError **error);
/* Whether @p (or one of its projects' pipelines) has the local CI
 * backend running jobs in this process (run waits for them). */
gboolean pgate_pipeline_runs_local_jobs(const PgatePipeline *p);
/* Frees what the projects' pipelines hold (pgate_cli_pipeline_clear()). */
void pgate_pipeline_projects_clear(PgatePipeline *p);
/* Sends what is due as pgate_outbox_flush(), once per project with the
 * project's Patchwork and mail settings when @p has projects; else once
 * with @ob as it is. */
gboolean pgate_pipeline_outbox_flush(PgatePipeline *p, PgateOutbox *ob,
				     PgateOutboxStats *stats, GError **error);
/* Returns: (transfer full) (nullable): where series @sid of project @pr
 * goes (its targets by rule, or why it is skipped), read from the store
 * (and the MAINTAINERS file of its repository when configured). */
PgateRoute *pgate_pipeline_route(PgateStore *store, const PgateProject *pr,
				 const char *sid, GError **error);
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
typedef struct {
	char *html_dir;          /* (nullable): the daemon keeps it up to date */
	char *archive_url;       /* (nullable): with {msgid} */
	char *public_url;        /* (nullable): where html_dir is served */
	guint page_size;
	char *patchwork_url;     /* (nullable): [patchwork] url */
	char *repo;              /* (nullable): [apply] repo, for interdiffs */
} PgateSiteConfig;

gboolean pgate_pipeline_site_config_load(GKeyFile *kf, PgateSiteConfig *c,
					 GError **error);
void pgate_pipeline_site_config_clear(PgateSiteConfig *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PgateSiteConfig, pgate_pipeline_site_config_clear)
/* (transfer full) (nullable): public_url + the log page of CI job
 * @ci_key, the target_url of its checks and the link in mail; %NULL
 * without public_url. */
char *pgate_pipeline_site_job_url(const PgateSiteConfig *c,
				  const char *ci_key);
/* (transfer full) (nullable): the sentence that compares @rec's results
 * with those of the version it supersedes ("v3: build fixed since v2"),
 * for the site, the mail report and the checks; %NULL when nothing
 * compares. */
char *pgate_pipeline_site_compare_text(PgateStoreTxn *txn,
				       const char *state_dir,
				       const PgateSeriesRec *rec);
/* (transfer full): what the site shows of series @sid; @state_dir
 * (nullable) is where relative log paths are. */
PgateReportSiteSeries *pgate_pipeline_site_series(PgateStoreTxn *txn,
						  const PgateSiteConfig *c,
						  const char *state_dir,
						  const char *sid,
						  GError **error);
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
/* Returns: (transfer full): what applying series @sid applies, when the
 * trust rules let it run now (docs/pipeline.md, "What runs"), as a pass
 * judges it; %NULL with PGATE_ERROR_NOT_ALLOWED saying why not (exit 77),
 * or another error.  Whatever applies or tests a series outside a pass
 * (patchgate test, check --run) asks it first. */
PgatePipelinePlan *pgate_pipeline_may_run(PgatePipeline *p, const char *sid,
					  GError **error);
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

/* A project's groups (@kf: what it sees; the file, without projects):
 * [apply] (the repository, its branches and the routing rules', the
 * MAINTAINERS file, ref_format and link_pattern, the push's secrets and
 * a local push_url), the CI backend's ([ci.local] work_root, bwrap,
 * ro_binds; [ci.jenkins] secrets and CA files), [patchwork] and [email]
 * (secrets, CA files).  PGATE_ERROR_CONFIG each. */
void pgate_pipeline_config_check_project(GKeyFile *kf, GPtrArray *problems);
/* The instance's: [daemon] @maildirs and @inboxes (nullable: the
 * daemon's lists as its reader read them), [upstream] (the repositories,
 * their remote or branches) and [report] (archive_url, html_dir); a group
 * its reader refuses is not looked at.  PGATE_ERROR_CONFIG each. */
void pgate_pipeline_config_check_instance(GKeyFile *kf, char **maildirs,
					  char **inboxes, GPtrArray *problems);
/* `config check --online`, for a project (@kf as above): its Patchwork
 * project and token, its Jenkins and job, its SMTP server and login;
 * GETs, a login and a NOOP only.  Each failure keeps its code:
 * PGATE_ERROR_CONFIG the setup, a transient one (pgate_error_is_transient())
 * the network or a server unavailable for now, another an answer that is
 * none of these.  A group its reader refuses is not asked. */
void pgate_pipeline_config_check_online(GKeyFile *kf, GPtrArray *problems);

G_END_DECLS
