/* pipeline-private.h - what the files of pipeline/ share and nothing
 * outside it uses (pipeline.h is the module's public header). */
#ifndef PGATE_PIPELINE_PRIVATE_H
#define PGATE_PIPELINE_PRIVATE_H

#include "pipeline/pipeline.h"

G_BEGIN_DECLS

/* ---- projects, routes and plans (route.c, plan.c) ---- */

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
typedef struct PgateRouteConfig PgateRouteConfig;


typedef struct PgateRouteTarget PgateRouteTarget;

typedef struct PgateRoute PgateRoute;

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

/* ---- plan.c: what an apply of a series applies ---- */

typedef enum {
	PGATE_PLAN_OWN = 0,     /* the series' own patch */
	PGATE_PLAN_BORROWED,    /* a partial re-roll's: the older version's */
	PGATE_PLAN_PREREQ,      /* a prerequisite series' */
} PgatePlanRole;

typedef struct PgatePlanItem PgatePlanItem;

typedef struct PgatePipelinePlan PgatePipelinePlan;

/* Whether the submitter of @candidate is trusted (a dependency resolves
 * to a trusted sender's series before an untrusted one's). */
typedef gboolean (*PgatePlanTrustFunc)(const PgateSeriesRec *candidate,
				       gpointer data);

void pgate_pipeline_plan_free(PgatePipelinePlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePipelinePlan, pgate_pipeline_plan_free)

/* [ci] backend = local | jenkins | buildbot; job = NAME.  The backend's
 * own settings are in [ci.local] / [ci.jenkins] / [ci.buildbot]. */

typedef struct PgateCiConfig PgateCiConfig;

/* [pipeline], [trust] and [patchwork] context_prefix */
typedef struct PgatePipelineConfig PgatePipelineConfig;

/* The name, "-" for the implicit project. */
const char *pgate_project_label(const PgateProject *pr);

/* Returns: (transfer full) (nullable): why message @m is @pr's ("List-Id
 * <netdev.vger.kernel.org> matches netdev.*"), %NULL when it is not. */
char *pgate_project_match_message(const PgateProject *pr,
				  const PgateMessageRec *m);

/* ---- the configuration (pipeline.h: opaque outside pipeline/) ----
 *
 * Each group is read and checked once, into these; the callers outside
 * pipeline/ hand over the GKeyFile, or hold one of them as an opaque
 * pointer (pgate_pipeline_apply_config_new(),
 * pgate_pipeline_site_config_new()). */

struct PgateProject {
	char *name;              /* (nullable): %NULL for the implicit one */
	char **lists;            /* (nullable): lowercased List-Id globs */
	char **addresses;        /* (nullable): lowercased To/Cc globs */
	GKeyFile *kf;            /* what its stages read: the defaults with
				  * its GROUP.KEY set over them */
};

struct PgateRouteConfig {
	char **tags;             /* (nullable): "GLOB:BRANCH", GLOB lowercased */
	char *tag_default;       /* (nullable): a branch */
	char **paths;            /* (nullable): "GLOB:BRANCH" or "GLOB" */
	char *maintainers;       /* (nullable): a file in the repository */
	char **maintainers_sections; /* (nullable): section title globs */
};

struct PgateApplyConfig {
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
};

struct PgateCiConfig {
	gboolean enabled;        /* the backend's group exists */
	char *backend;
	char *group;             /* "ci.local" */
	char *job;               /* "build" */
	guint retries;           /* an error verdict is retried this often */
};

struct PgatePipelineConfig {
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
};

struct PgateSiteConfig {
	char *html_dir;          /* (nullable): the daemon keeps it up to date */
	char *archive_url;       /* (nullable): with {msgid} */
	char *public_url;        /* (nullable): where html_dir is served */
	guint page_size;
	char *patchwork_url;     /* (nullable): [patchwork] url */
	char *repo;              /* (nullable): [apply] repo, for interdiffs */
	PgateApplyConfig apply;  /* [apply], for the series' mbox (its
				  * trailers) and fetch lines (push_url):
				  * read by pgate_pipeline_site_config_new()
				  * only (zero from _load()) */
};

/* a route and a plan (pipeline.h: opaque outside pipeline/) */
struct PgateRouteTarget {
	char *branch;            /* "base-commit" for the series' own base */
	PgateRouteRule rule;
	char *why;               /* "[net-next] matches net-next*" */
};

struct PgateRoute {
	GPtrArray *targets;      /* (element-type PgateRouteTarget): in order */
	char *skip;              /* (nullable): why the series is not applied
				  * in this project ("no tree for tag X") */
};

struct PgatePlanItem {
	PgateSeriesPatch *patch;  /* (owned) */
	char *series;             /* the series it is a member of */
	PgatePlanRole role;
	char *why;                /* (nullable): a prerequisite's dependency,
				   * "KIND: VALUE" */
};

struct PgatePipelinePlan {
	PgateSeriesRec *rec;      /* the series */
	GPtrArray *items;         /* (element-type PgatePlanItem): in the order
				   * they are applied, prerequisites first */
	guint n_prereq;           /* how many of them are prerequisites' */
	GPtrArray *prereqs;       /* (element-type utf8): their series */
	char *reroll_of;          /* (nullable): the series a partial
				   * re-roll borrows from */
};

gboolean pgate_route_config_load(GKeyFile *kf, PgateRouteConfig *c,
				 GError **error);
void pgate_route_config_clear(PgateRouteConfig *c);

gboolean pgate_pipeline_apply_config_load(GKeyFile *kf, PgateApplyConfig *c,
				 GError **error);
void pgate_pipeline_apply_config_clear(PgateApplyConfig *c);

gboolean pgate_pipeline_ci_config_load(GKeyFile *kf, PgateCiConfig *c, GError **error);
void pgate_pipeline_ci_config_clear(PgateCiConfig *c);

gboolean pgate_pipeline_config_load(GKeyFile *kf, PgatePipelineConfig *c,
				    GError **error);
void pgate_pipeline_config_clear(PgatePipelineConfig *c);
gboolean pgate_pipeline_trusted(const PgatePipelineConfig *c,
				const char *email);

gboolean pgate_pipeline_site_config_load(GKeyFile *kf, PgateSiteConfig *c,
					 GError **error);
void pgate_pipeline_site_config_clear(PgateSiteConfig *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PgateSiteConfig, pgate_pipeline_site_config_clear)

/* ---- pipeline's own calls (the stages, routes, plans and hooks of a
 * pass; no caller outside pipeline/ needs them) ---- */

/* Whether any routing key is set (else the branches are tried as before
 * routing existed, and nothing names a rule). */
gboolean pgate_route_config_routes(const PgateRouteConfig *c);
/* The subject prefixes (of the cover, else the first patch) and the
 * files touched (all patches) of @rec. */
gboolean pgate_route_series_input(PgateStoreTxn *txn,
				  const PgateSeriesRec *rec,
				  GPtrArray **out_prefixes,
				  GPtrArray **out_files, GError **error);
/* Returns: (transfer full): what applying series @sid (a state ID:
 * SID@PROJECT too) applies, in order (plan.c); PGATE_ERROR_NOT_FOUND
 * "no series SID" when there is none.  @trusted (nullable) ranks the
 * candidates of a dependency after the submitter's own. */
PgatePipelinePlan *pgate_pipeline_plan_read(PgateStoreTxn *txn,
					    const char *sid,
					    PgatePlanTrustFunc trusted,
					    gpointer data, GError **error);
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
/* Returns: (transfer full): what [apply] add_trailers and link_pattern
 * add to patch @p (of series @r) commit message: its review trailers
 * from replies as threading collected them, those given to @p itself
 * first, then those given to the cover (as b4 am -t orders them), and
 * the Link: with @p's Message-ID. */
PgateApplyExtra *pgate_pipeline_apply_extra(const PgateApplyConfig *c,
					    const PgateSeriesRec *r,
					    const PgateSeriesPatch *p);
/* Deletes (and pushes the deletion of) the refs under ref_format's fixed
 * prefix whose commits are older than keep_days; never with a prefix of
 * fewer than three components ("refs/heads/" would be every branch). */
gboolean pgate_pipeline_prune_refs(const PgateApplyConfig *c,
				   guint *out_deleted, GError **error);
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
gboolean pgate_pipeline_ci_backend(PgatePipeline *p, GError **error);
/* Makes the projects' pipelines of @p (once): none without [project
 * NAME] groups. */
gboolean pgate_pipeline_projects_init(PgatePipeline *p, GError **error);
/* Frees what the projects' pipelines hold (pgate_cli_pipeline_clear()). */
void pgate_pipeline_projects_clear(PgatePipeline *p);
/* Returns: (transfer full) (nullable): where series @sid of project @pr
 * goes (its targets by rule, or why it is skipped), read from the store
 * (and the MAINTAINERS file of its repository when configured). */
PgateRoute *pgate_pipeline_route(PgateStore *store, const PgateProject *pr,
				 const char *sid, GError **error);
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
/* Returns: (transfer full): what applying series @sid applies, when the
 * trust rules let it run now (docs/pipeline.md, "What runs"), as a pass
 * judges it; %NULL with PGATE_ERROR_NOT_ALLOWED saying why not (exit 77),
 * or another error.  Whatever applies or tests a series outside a pass
 * (patchgate test, check --run) asks it first. */
PgatePipelinePlan *pgate_pipeline_may_run(PgatePipeline *p, const char *sid,
					  GError **error);
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

/* ---- the pipeline object (pipeline.h: opaque) ---- */

/* Queues the email report of @rec (in @txn), given its pipeline doc. */
typedef gboolean (*PgatePipelineQueueMail)(PgateStoreTxn *txn,
					   PgatePipeline *p,
					   const PgateSeriesRec *rec,
					   const PgateSeriesDoc *doc,
					   GError **error);
/* Queues a check of @rec (in @txn), as pgate_outbox_queue_check(). */
typedef gboolean (*PgatePipelineQueueCheck)(PgateStoreTxn *txn,
					    PgatePipeline *p,
					    const PgateSeriesRec *rec,
					    const char *context,
					    const char *state, const char *url,
					    const char *description,
					    json_t *per_patch, GError **error);

struct PgatePipeline {
	PgateStore *store;
	GKeyFile *kf;
	const char *state_dir;
	PgatePipelineConfig cfg;
	PgateApplyConfig apply;
	PgateCiConfig ci_cfg;
	PgateCiBackend *ci;          /* made from [ci] when first needed;
				      * set before a pass, the one used
				      * (tests: a fake behind ci.h's
				      * PgateCiBackendClass) */
	GHashTable *polled;          /* (nullable): ci keys this pass polled */
	GHashTable *committers;      /* (nullable): lowercased author emails */
	gboolean queue_checks;       /* a [patchwork] group exists */
	PgatePipelineQueueCheck queue_check;  /* (nullable): how checks are
				      * queued: pgate_outbox_queue_check()
				      * when NULL (tests put a fake here) */
	PgatePipelineQueueMail queue_mail;  /* (nullable) */
	PgateEmailConfig *email;     /* (nullable) */
	PgateReplyConfig reply;      /* what the reply mail needs of the
				      * project (report/), read with it; its
				      * log is @log (pgate_pipeline__reply_config) */
	PgatePipelineLog log;        /* (nullable) */
	gpointer log_data;
	PgateUpstreamConfig upstream; /* [upstream]: merge detection */
	gint64 upstream_every;       /* seconds between two reads of the
				      * upstream branches (0: every pass;
				      * G_MAXINT64: once) */
	gint64 upstream_at;          /* when they were read last (0: never) */
	PgateUpstreamStats upstream_stats; /* what the last read did */
	GPtrArray *upstream_merged;  /* (nullable): series merged in a pass */
	/* projects (route.c; docs/config.md "Projects"): a configuration
	 * with [project NAME] groups runs one pipeline per project, made
	 * by the first pass from this one (its callbacks, store, state
	 * directory; the project's own key file) */
	const PgateProject *project; /* (nullable): the project this one is;
				      * NULL: the implicit project, or the
				      * parent of @subs */
	GPtrArray *projects;         /* (nullable) (element-type PgateProject) */
	GPtrArray *subs;             /* (nullable) (element-type PgatePipeline):
				      * one per project, owned */
	PgatePatchwork *pw;          /* (nullable): a project's own client of
				      * its [patchwork], for its reports */
	PgateRouteConfig route;      /* [apply] tags, paths, ... */
	gboolean route_loaded;
	char **maint;                /* (nullable): the MAINTAINERS globs,
				      * read once */
	gboolean maint_read;
};


/* ---- trust.c: whose code runs ---- */

/* Whether lowercased @email matches one of @globs. */
gboolean pgate_pipeline__glob_match(char **globs, const char *email);
/* Whether @email is a trusted sender: [trust] trusted, everyone, or a
 * committer of the [apply] branches with committers = true. */
gboolean pgate_pipeline__sender_trusted(PgatePipeline *p, const char *email);
/* Returns: (transfer full) (nullable): whom raw message @raw speaks for,
 * read strictly (one plain From mailbox, authenticated with [trust]
 * require_authentication, a relay's user for the relay); %NULL with why
 * not (PGATE_ERROR_INVALID). */
char *pgate_pipeline__sender(PgatePipeline *p, GBytes *raw, GError **error);
/* Returns: (transfer full): the sender of @rec's first message (its
 * cover, else its first patch) as pgate_pipeline__sender() reads it;
 * the record's submitter when that cannot be read. */
char *pgate_pipeline__submitter(PgatePipeline *p, PgateStoreTxn *txn,
				const PgateSeriesRec *rec);
/*
 * Whether series @rec may be applied now: every message an apply would
 * apply (its plan, plan.c) and its cover is from a trusted sender or is
 * one of those the approval in @doc saw (an approval not fixed yet is
 * fixed in @doc here).  Returns 1 when it may, with the plan to apply in
 * *@out_plan; 0 when not, with *@out_why naming the first message that
 * may not run and why it is included; -1 on a store error.
 */
int pgate_pipeline__trust_gate(PgatePipeline *p, const PgateSeriesRec *rec,
			       PgateSeriesDoc *doc,
			       PgatePipelinePlan **out_plan, char **out_why,
			       GError **error);
/* Returns: (transfer full) (element-type utf8) (nullable): the
 * Message-IDs of @rec (cover, then patches; borrowed from @rec) whose
 * replies may decide anything: those exactly one stored message has
 * (an ID in conflict is answered by nobody knows which; logged). */
GPtrArray *pgate_pipeline__reply_parents(PgatePipeline *p, PgateStoreTxn *txn,
					 const PgateSeriesRec *rec,
					 GError **error);
/* The own text of message @num when it is a human reply straight to
 * @parent, within the size bounds, and, with @from_globs, from a
 * matching From address (the cheap check before the strict one); %NULL
 * otherwise.  *@out_m, *@out_raw: its record and raw bytes. */
char *pgate_pipeline__reply_own_text(PgatePipeline *p, PgateStoreTxn *txn,
				     guint64 num, const char *parent,
				     char **from_globs, PgateMessageRec **out_m,
				     GBytes **out_raw);
/*
 * A maintainer's answer by mail: a reply to the cover or a patch
 * (pgate_pipeline__reply_parents()) whose own text has a line that is
 * exactly the approve or reject keyword, from an approver by the strict
 * reading.  The newest by arrival wins (the message number, never the
 * Date).  Returns 1 approve, -1 reject, 0 none; *@out_who its sender
 * and ID, *@out_num its number.
 */
int pgate_pipeline__reply_decision(PgatePipeline *p, const PgateSeriesRec *rec,
				   char **out_who, guint64 *out_num,
				   GError **error);

/* ---- one series' move (move.c) ---- */

typedef struct {
	PgatePipeline *p;
	PgateSeriesRec *rec;
	PgateSeriesDoc *doc;  /* SERIES/pipeline */
	/* checks to queue with the move: [context, state, url, description] */
	GPtrArray *checks;
	GPtrArray *per_patch;   /* json_t* or NULL, one per check: per-patch
				 * {msgid: {state, description}} */
	gboolean mail;          /* queue the email report */
	char *extra_key;        /* (nullable): a stage document to store */
	json_t *extra;          /* with the move (SERIES/recheck) */
	GPtrArray *reset;       /* (nullable): stage keys to delete */
	PgatePipelinePlan *plan; /* (nullable) (owned): what an apply
				 * applies, as the trust gate judged it */
	PgateSeriesState was;   /* the state the step began in (an
				 * incomplete series whose patches came is
				 * judged as new) */
} Move;

/* ---- what the files of the pass share ---- */

/* pipeline.c */
gint64 pgate_pipeline__now_s(void);
/* Reads @p->reply from @p's key file and project. */
gboolean pgate_pipeline__reply_config_load(PgatePipeline *p, GError **error);
/* @p->reply with @p's log now (a shallow copy: never cleared). */
PgateReplyConfig pgate_pipeline__reply_config(const PgatePipeline *p);
/* Queues the email reply of @rec (in @txn), given its pipeline doc: what
 * report/ needs of other stages gathered (the answered mail's bytes, the
 * comparison with the version before), pgate_reply_queue(). */
gboolean pgate_pipeline__queue_mail(PgateStoreTxn *txn, PgatePipeline *p,
				    const PgateSeriesRec *rec,
				    const PgateSeriesDoc *doc, GError **error);
PgateRoute * pgate_pipeline__route_of(PgatePipeline *p, const PgateSeriesRec *rec, GError **error);

/* move.c */
void pgate_pipeline__move_clear(Move *m);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Move, pgate_pipeline__move_clear)
void pgate_pipeline__move_to(Move *m, PgateSeriesState state, const char *reason);
void pgate_pipeline__want_check(Move *m, const char *context, const char *state, const char *url, const char *description);
char * pgate_pipeline__context_for(Move *m, const char *what, const char *target, guint ntargets);
void pgate_pipeline__want_apply_check(Move *m, const char *state, const char *description);
int pgate_pipeline__gate(Move *m, char **out_why, GError **error);
gboolean pgate_pipeline__await_approval(Move *m, PgateSeriesState state, const char *why);
gboolean pgate_pipeline__save_move(Move *m, GError **error);
PgateSeriesDocs * pgate_pipeline__series_state(PgateStore *store, const char *sid, GError **error);
gboolean pgate_pipeline__cancel_jobs(PgatePipeline *p, const char *sid, PgateSeriesDocs *s, const char *why, GError **error);
const char * pgate_pipeline__check_state_of(const char *verdict);
char * pgate_pipeline__first_line(const char *s, gsize max);
guint pgate_pipeline__series_size(const PgateSeriesRec *rec);

/* steps.c */
gboolean pgate_pipeline__step_apply_on(Move *m, const char *only_branch, GError **error);
char * pgate_pipeline__retry_key(const char *ci_key);
char * pgate_pipeline__want_job_check(Move *m, const PgateCiDoc *doc, guint ntargets, const PgateSeriesDocs *all);
/* The name of the @i-th rule a series is put through (steps.c), %NULL
 * past the last. */
const char *pgate_pipeline__rule_name(guint i);
gboolean pgate_pipeline__run_series(PgatePipeline *p, PgateSeriesRec *rec, guint *testing, GError **error);

/* recheck.c */
int pgate_pipeline__step_recheck(Move *m, PgateSeriesState state, GError **error);

/* merged.c */
int pgate_pipeline__step_upstream(Move *m, PgateSeriesState state, GError **error);
void pgate_pipeline__upstream_log(gpointer data, const char *branch, const char *what, const char *detail);

G_END_DECLS

#endif
