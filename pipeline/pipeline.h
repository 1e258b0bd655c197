/* pipeline.h - the stages joined: apply -> ci -> report, driven through
 * each series' state in the store (docs/pipeline.md).
 *
 * The pipeline is the layer between the stages and the command line: it
 * reads [apply], [ci], [trust] and [pipeline], moves every series as far as
 * it can go in one pass (pipeline.c), applies (stage-apply.c), submits and
 * polls CI jobs (stage-ci.c), and queues and sends reports through the
 * store's outbox (outbox.c, report-mail.c).  Its per-series state is JSON
 * in the store (state.c).  Errors: domain PGATE_PIPELINE_ERROR with the
 * codes of PgateErrorCode.  It never prints: events go to a log callback.
 */
#pragma once

#include <glib.h>
#include <jansson.h>

#include "apply/apply.h"
#include "common/json.h"
#include "common/pgate-common.h"
#include "ingest/ingest.h"
#include "store/store.h"

G_BEGIN_DECLS

#define PGATE_PIPELINE_ERROR (pgate_pipeline_error_quark())
GQuark pgate_pipeline_error_quark(void);

/* ---- state.c: per-series stage state as JSON in the store ---- */

/* "SERIES/STAGE" or "SERIES/STAGE/SUB" */
char *pgate_state_key(const char *series_id, const char *stage,
		      const char *sub);
/* (transfer full) (nullable): a stored value as a JSON object, NULL when
 * it is none (@jerr says why when not NULL). */
json_t *pgate_state_decode(GBytes *val, json_error_t *jerr);
/* (transfer full) (nullable): the document, NULL without error when there
 * is none. */
json_t *pgate_state_get(PgateStoreTxn *txn, const char *key, GError **error);
gboolean pgate_state_put(PgateStoreTxn *txn, const char *key, json_t *doc,
			 GError **error);
/* (transfer full): {"REST-OF-KEY": doc, ...} of every key under @prefix
 * (which should end with "/"), NULL on error. */
json_t *pgate_state_scan(PgateStoreTxn *txn, const char *prefix,
			 GError **error);
/* (transfer full) (element-type PgateStoreEntry): every stage document
 * of every series, raw, in key order, read in a transaction of its own;
 * %NULL on error. */
GPtrArray *pgate_state_entries(PgateStore *store, GError **error);
const char *pgate_state_str(json_t *doc, const char *field);
void pgate_state_set_str(json_t *doc, const char *field, const char *value);

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
} PgateApplyConfig;

gboolean pgate_pipeline_apply_config_load(GKeyFile *kf, PgateApplyConfig *c,
				 GError **error);
void pgate_pipeline_apply_config_clear(PgateApplyConfig *c);

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

gboolean pgate_pipeline_ci_config_load(GKeyFile *kf, PgateCiConfig *c, GError **error);
void pgate_pipeline_ci_config_clear(PgateCiConfig *c);

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

/* ---- report-mail.c ---- */

/* Queues the email report of @rec (in @txn) as its pipeline document
 * @pipeline_doc calls for: a PgatePipelineQueueMail. */
gboolean pgate_pipeline_queue_mail(PgateStoreTxn *txn, PgatePipeline *p,
				   const PgateSeriesRec *rec,
				   json_t *pipeline_doc, GError **error);

G_END_DECLS
