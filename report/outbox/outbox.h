/* outbox.h - the report stage's outbox: every report (a Patchwork check,
 * a Patchwork state, an email reply) is an entry of the store's outbox
 * table, queued in the transaction of the state that calls for it, and
 * removed only when its server accepted it (outbox.c; docs/pipeline.md,
 * "The outbox").  Included by report/report.h.  It takes the store and
 * the destinations' clients, never the pipeline. */
#pragma once

#include <glib.h>
#include <jansson.h>

#include "store/store.h"
#include "report/patchwork/patchwork.h"
#include "report/email/email.h"

G_BEGIN_DECLS


typedef PgateReportLog PgateOutboxLog;

typedef struct {
	PgateStore *store;
	PgatePatchwork *pw;          /* (nullable) */
	PgateEmailConfig *email;     /* (nullable) */
	PgateOutboxLog log;          /* (nullable) */
	gpointer log_data;
	gboolean all;                /* ignore retry times and failures */
	const char *archive_url;     /* (nullable): [report] archive_url,
				      * the link each check's description
				      * ends with; the pipeline's flush sets
				      * it; "": none; %NULL: the known archive
				      * of the series' list
				      * (pgate_report_archive_known()) */
} PgateOutbox;

/* What became of each report, counted once per report however many
 * flushes saw it (the last that tried it wins; one that only waited
 * counts as waiting).  Zero-initialise ({ 0 }); clear with
 * pgate_outbox_stats_clear(). */
typedef struct {
	guint sent;      /* posted or mailed, and removed */
	guint skipped;   /* removed: the server showed it already */
	guint retrying;  /* failed for now (or Patchwork lacks the mail) */
	guint failed;    /* failed for good: kept, marked failed */
	guint refused;   /* not sent: the configuration was refused (a 401
			  * or 403, the start-up check of [patchwork]) */
	guint waiting;   /* not tried: its retry time has not come */
	guint held;      /* not tried: failed before (only --all retries) */
	GError *refusal; /* (nullable): the first refusal, to say once */
	GHashTable *outcome; /* (nullable): private */
} PgateOutboxStats;

void pgate_outbox_stats_clear(PgateOutboxStats *stats);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PgateOutboxStats, pgate_outbox_stats_clear)

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
/* Sends what is due; each entry removed when its server accepted it.
 * Before the first check, the Patchwork setup is checked
 * (pgate_patchwork_verify()); when it fails, no check is tried: they
 * count as refused (a CONFIG failure, also in @stats->refusal) or
 * retrying, and stay as they were. */
gboolean pgate_outbox_flush(PgateOutbox *ob, PgateOutboxStats *stats,
			    GError **error);
/* pgate_outbox_flush() of the entries of one project's series only
 * (SID@NAME; @project %NULL: those of the implicit project, SID). */
gboolean pgate_outbox_flush_project(PgateOutbox *ob, const char *project,
				    PgateOutboxStats *stats, GError **error);
/* (transfer full): the entries, without their message bodies. */
json_t *pgate_outbox_list(PgateStore *store, GError **error);

/* Queues (in @txn) the entry pwstate/SERIES: every patch of @rec to
 * become @state ("accepted", "superseded") in Patchwork; replaces an
 * unsent one.  @commit_refs: (nullable): {MSGID: SHA}. */
gboolean pgate_outbox_queue_state(PgateStoreTxn *txn, const PgateSeriesRec *rec,
				  const char *state, json_t *commit_refs,
				  GError **error);

/* ---- reply.c (report/email/): a series' reply mail, queued here ----
 * (docs/report-email.md) */

/* What a reply needs of the project, read once with its configuration;
 * its strings are owned: clear with pgate_reply_config_clear(). */
typedef struct {
	const PgateEmailConfig *email; /* (nullable) (not owned): [email];
				      * %NULL or disabled: no replies */
	char *label;                 /* the project's name, "-" for the
				      * implicit one: the key of its noise
				      * budget and digests */
	char *digest_series;         /* the state ID its digest mails are
				      * queued under ("digest", "digest@NAME") */
	char *patchwork_url;         /* (nullable): [patchwork] url (format
				      * dpdk names the patch's page) */
	char *patchwork_project;     /* (nullable): [patchwork] project */
	char *public_url;            /* (nullable): [report] public_url */
	PgateReportLog log;          /* (nullable) */
	gpointer log_data;
} PgateReplyConfig;

void pgate_reply_config_clear(PgateReplyConfig *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PgateReplyConfig, pgate_reply_config_clear)

/* What the caller reads of other stages for a reply. */
typedef struct {
	const PgateMessageRec *answered; /* pgate_reply_answered() */
	GBytes *answered_raw;        /* (nullable): its bytes as received,
				      * never answered when automated */
	const char *compared;        /* (nullable): the sentence comparing
				      * the results with the version before */
	gint64 patchwork_id;         /* format dpdk: the answered patch's id */
	const char *patch_url;       /* (nullable): and its page */
} PgateReplyInput;

/* Returns: (transfer full): the message a reply to @rec answers: its
 * cover, else its first patch; with format = dpdk its last patch, with
 * its Patchwork id and page (*@out_pw_id 0 and *@out_pw_url %NULL when
 * not known, or another Patchwork's). */
PgateMessageRec *pgate_reply_answered(PgateStoreTxn *txn,
				      const PgateReplyConfig *c,
				      const PgateSeriesRec *rec,
				      gint64 *out_pw_id, char **out_pw_url,
				      GError **error);
/* Returns: (transfer full): the report of @rec as its documents in @txn
 * stand (what applied where, or the base it did not apply to; the jobs'
 * verdicts), answering @answered; no recipient nor idempotency key yet. */
PgateEmailReport *pgate_reply_report(PgateStoreTxn *txn,
				     const PgateSeriesRec *rec,
				     const PgateMessageRec *answered,
				     GError **error);
/* (transfer full): the outbox key of @rec's reply in @state: once a
 * version and state, and once more each recheck round. */
char *pgate_reply_key(PgateStoreTxn *txn, const PgateSeriesRec *rec,
		      PgateSeriesState state);
/* Queues (in @txn) @rec's reply for its move into @state, as [email]
 * and the project's policy say: at once (within the recipient's rate
 * limit), held for the day's digest, or not at all (logged why). */
gboolean pgate_reply_queue(PgateStoreTxn *txn, const PgateReplyConfig *c,
			   const PgateSeriesRec *rec, PgateSeriesState state,
			   const PgateReplyInput *in, GError **error);
/* Queues the daily digest of @c's project (docs/report-email.md, "Digest
 * and noise budget"): the replies held on a day that is over, one mail
 * per recipient, in the transaction that deletes them. */
gboolean pgate_reply_digest(PgateStore *store, const PgateReplyConfig *c,
			    GError **error);

G_END_DECLS
