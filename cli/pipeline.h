/* pipeline.h - the stages joined: apply -> ci -> report, driven through
 * each series' state in the store (cli/ only; docs/pipeline.md). */
#pragma once

#include "cli/cli.h"
#include "apply/apply.h"

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
} PgateApplyConfig;

gboolean pgate_apply_config_load(GKeyFile *kf, PgateApplyConfig *c,
				 GError **error);
void pgate_apply_config_clear(PgateApplyConfig *c);

/**
 * pgate_pipeline_apply:
 * @only_branch: (nullable): try this target only
 *
 * Applies series @sid (its prerequisites first, a partial re-roll as the
 * whole new version) onto its base-commit when the repository has it,
 * then onto the configured branches until one applies (all of them with
 * all_branches); names each good result with a ref and pushes it.
 * Writes SERIES/apply/TARGET for every attempt.  Returns: (transfer
 * full): {TARGET: document}, or %NULL on an error that is not the
 * series' fault.
 */
json_t *pgate_pipeline_apply(PgateStore *store, const PgateApplyConfig *c,
			     const char *sid, const char *only_branch,
			     GError **error);

/* Deletes (and pushes the deletion of) the refs under ref_format's fixed
 * prefix whose commits are older than keep_days; never with a prefix of
 * fewer than three components ("refs/heads/" would be every branch). */
gboolean pgate_pipeline_prune_refs(const PgateApplyConfig *c,
				   guint *out_deleted, GError **error);

/* [ci] backend = local | jenkins; job = NAME.  The backend's own settings
 * are in [ci.local] / [ci.jenkins]. */
#include "ci/ci.h"

typedef struct {
	gboolean enabled;        /* the backend's group exists */
	char *backend;
	char *group;             /* "ci.local" */
	char *job;               /* "build" */
} PgateCiConfig;

gboolean pgate_ci_config_load(GKeyFile *kf, PgateCiConfig *c, GError **error);
void pgate_ci_config_clear(PgateCiConfig *c);

/* Submits the job for @target's applied series; writes and returns
 * (transfer full) SERIES/ci/TARGET/JOB. */
json_t *pgate_pipeline_ci_submit(PgateStore *store, const PgateApplyConfig *ac,
				 const PgateCiConfig *cc,
				 PgateCiBackend *backend,
				 const PgateSeriesRec *rec, const char *target,
				 json_t *apply_doc, GError **error);
/* Polls the job of @doc (stored under @key) and stores what it says. */
gboolean pgate_pipeline_ci_poll(PgateStore *store, PgateCiBackend *backend,
				const char *key, json_t *doc, GError **error);
/* Polls every queued or running job in the store at once (Jenkins: many
 * requests in flight, curl multi), storing what each says; adds the keys
 * polled to @polled (a set of strings). */
gboolean pgate_pipeline_ci_poll_all(PgateStore *store, PgateCiBackend *backend,
				    GHashTable *polled, GError **error);
/* Cancels it (a superseded series): verdict fail, reason @why. */
gboolean pgate_pipeline_ci_cancel(PgateStore *store, PgateCiBackend *backend,
				  const char *key, json_t *doc,
				  const char *why, GError **error);

/* ---- outbox.c ---- */
#include "report/report.h"

typedef void (*PgateOutboxLog)(gpointer data, const char *key,
			       const char *what, const char *detail);

typedef struct {
	PgateStore *store;
	PgatePatchwork *pw;          /* (nullable) */
	PgateEmailConfig *email;     /* (nullable) */
	PgateOutboxLog log;          /* (nullable) */
	gpointer log_data;
	gboolean all;                /* ignore retry times and failures */
} PgateOutbox;

typedef struct {
	guint sent, retrying, failed, waiting;
} PgateOutboxStats;

/* Queues (in @txn) a check for every patch of @rec; replaces an unsent
 * one of the same context unless that one is final and this pending.
 * @per_patch: (nullable): {MSGID: {state, description}} for the patches
 * that have their own verdict (a job run per patch). */
gboolean pgate_outbox_queue_check(PgateStoreTxn *txn, const PgateSeriesRec *rec,
				  const char *context, const char *state,
				  const char *url, const char *description,
				  json_t *per_patch, GError **error);
/* Queues (in @txn) a composed mail under @key, once. */
gboolean pgate_outbox_queue_mail(PgateStoreTxn *txn, const char *key,
				 const char *series_id, GBytes *message,
				 const char *envelope_from, GPtrArray *rcpts,
				 GError **error);
/* Sends what is due; each entry removed when its server accepted it. */
gboolean pgate_outbox_flush(PgateOutbox *ob, PgateOutboxStats *stats,
			    GError **error);
/* (transfer full): the entries, without their message bodies. */
json_t *pgate_outbox_list(PgateStore *store, GError **error);

/* ---- pipeline.c ---- */

/* [pipeline] and [trust] */
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
} PgatePipelineConfig;

gboolean pgate_pipeline_config_load(GKeyFile *kf, PgatePipelineConfig *c,
				    GError **error);
void pgate_pipeline_config_clear(PgatePipelineConfig *c);
gboolean pgate_pipeline_trusted(const PgatePipelineConfig *c,
				const char *email);

typedef struct PgatePipeline PgatePipeline;

/* One line per event: series=ID what detail */
typedef void (*PgatePipelineLog)(gpointer data, const char *series_id,
				 const char *what, const char *detail);
/* Queues the email report of @rec (in @txn), given its pipeline doc. */
typedef gboolean (*PgatePipelineQueueMail)(PgateStoreTxn *txn,
					   PgatePipeline *p,
					   const PgateSeriesRec *rec,
					   json_t *pipeline_doc,
					   GError **error);

struct PgatePipeline {
	PgateStore *store;
	GKeyFile *kf;
	const char *state_dir;
	PgatePipelineConfig cfg;
	PgateApplyConfig apply;
	PgateCiConfig ci_cfg;
	PgateCiBackend *ci;          /* made when first needed */
	GHashTable *polled;          /* (nullable): ci keys this pass polled */
	GHashTable *committers;      /* (nullable): lowercased author emails */
	gboolean queue_checks;       /* a [patchwork] group exists */
	PgatePipelineQueueMail queue_mail;  /* (nullable) */
	PgateEmailConfig *email;     /* (nullable) */
	PgatePipelineLog log;        /* (nullable) */
	gpointer log_data;
};

typedef struct {
	guint series, errors;
	guint testing;     /* series left in "testing" after the pass */
} PgatePipelineStats;

gboolean pgate_pipeline_ci_backend(PgatePipeline *p, GError **error);
/* One pass over every series (or only @only). */
gboolean pgate_pipeline_run(PgatePipeline *p, const char *only,
			    PgatePipelineStats *stats, GError **error);

/* cmd-run.c: a pipeline from the configuration (@quiet: no event lines) */
gboolean pgate_cli_pipeline_init(PgateCli *cli, PgatePipeline *p,
				 gboolean quiet, GError **error);
void pgate_cli_pipeline_clear(PgatePipeline *p);
