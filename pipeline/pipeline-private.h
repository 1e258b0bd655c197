/* pipeline-private.h - what the files of pipeline/ share and nothing
 * outside it uses (pipeline.h is the module's public header). */
#ifndef PGATE_PIPELINE_PRIVATE_H
#define PGATE_PIPELINE_PRIVATE_H

#include "pipeline/pipeline.h"

G_BEGIN_DECLS

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

G_END_DECLS

#endif
