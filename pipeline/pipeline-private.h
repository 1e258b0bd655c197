/* pipeline-private.h - what the files of pipeline/ share and nothing
 * outside it uses (pipeline.h is the module's public header). */
#ifndef PGATE_PIPELINE_PRIVATE_H
#define PGATE_PIPELINE_PRIVATE_H

#include "pipeline/pipeline.h"

G_BEGIN_DECLS

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
