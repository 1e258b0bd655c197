/* ingest-run.h - the batching loop shared by the ingest module's sources
 * (ingest.c: mbox, maildir; pubinbox.c: public-inbox).  Private to ingest/.
 *
 * A run collects parsed messages (and deletions) in a batch and writes the
 * batch in one transaction when it is full and at the end.  A source that
 * can resume sets a resume point before each message: it is written in the
 * same transaction as the messages read up to it, so that an interrupted
 * run neither loses nor doubles anything.
 */
#pragma once

#include "ingest/ingest.h"

/* The hooks of one write (ingest.h, PgateIngestHooks): which ran, and
 * whether this write goes without them. */
typedef struct {
	const PgateIngestHooks *hooks;  /* (nullable) */
	gboolean failed;     /* a hook failed in this attempt */
	GError *skip;        /* (nullable): set, the write runs without them */
} PgateIngestHookRun;

void pgate_ingest__hooks_init(PgateIngestHookRun *h,
			      const PgateIngestHooks *hooks);
void pgate_ingest__hooks_clear(PgateIngestHookRun *h);
/* Each is TRUE when there is no such hook, or the write skips them. */
gboolean pgate_ingest__hook_begin(PgateIngestHookRun *h, PgateStoreTxn *txn,
				  GError **error);
gboolean pgate_ingest__hook_added(PgateIngestHookRun *h, PgateStoreTxn *txn,
				  const PgateMessageRec *rec, GError **error);
gboolean pgate_ingest__hook_deleted(PgateIngestHookRun *h,
				    PgateStoreTxn *txn,
				    const PgateMessageRec *rec,
				    GError **error);
/* Whether after_delete() will want the deleted record. */
gboolean pgate_ingest__hook_wants_deleted(const PgateIngestHookRun *h);
/* before_commit(), or skipped() in a write that skips the hooks. */
gboolean pgate_ingest__hook_commit(PgateIngestHookRun *h, PgateStoreTxn *txn,
				   GError **error);
/* pgate_store_write(), then, when a hook failed for good and the hooks
 * have skipped(), once more without them. */
gboolean pgate_ingest__hooked_write(PgateStore *store, PgateStoreWriteFunc fn,
				   gpointer payload, PgateIngestHookRun *h,
				   GError **error);

typedef struct {
	GArray *items;       /* of ingest.c's Item */
	const PgateIngestOptions *opts;  /* how to parse them */
	gsize bytes;
	char *resume_key;    /* (nullable): meta key of the resume point */
	char *resume_val;
	gboolean resume_dirty;
	PgateIngestHookRun *hooks;  /* (nullable): while it is written */
} PgateIngestBatch;

typedef struct {
	PgateStore *store;
	PgateIngestOptions opts;   /* resolved */
	PgateIngestStats *stats;
	PgateIngestProgressFunc progress;
	gpointer payload;
	PgateIngestBatch batch;
	char *source;              /* rec->source of what is added */
	guint64 total;             /* for progress: bytes or commits */
	gint64 last_progress;
	/* the batch being written by the writer thread while the next one is
	 * read and parsed; batches are written one at a time, in order */
	GThread *writer;
	PgateIngestBatch *inflight;
	PgateIngestStats inflight_stats;
	gboolean writer_ok;
	GError *writer_error;
} PgateIngestRun;

/* Where the bytes of a message stay when the store keeps only a
 * reference (public-inbox blobs). */
typedef struct {
	PgateRawLocation location;
	const char *ref;
} PgateIngestRawRef;

void pgate_ingest__run_init(PgateIngestRun *run, PgateStore *store,
			    const PgateIngestOptions *opts,
			    PgateIngestStats *stats,
			    PgateIngestProgressFunc progress, gpointer payload);
void pgate_ingest__run_clear(PgateIngestRun *run);

/**
 * pgate_ingest__run_add:
 * @truncated: @raw is only the head of a message over max_message_size
 * @done: progress so far, in the unit of run->total
 * @ref: (nullable): store this reference instead of @raw
 */
gboolean pgate_ingest__run_add(PgateIngestRun *run, GBytes *raw,
			       gboolean truncated, guint64 done,
			       const PgateIngestRawRef *ref, GError **error);
/* Queues the removal of the stored copy of message @raw. */
gboolean pgate_ingest__run_delete(PgateIngestRun *run, GBytes *raw,
				  GError **error);
void pgate_ingest__run_set_resume(PgateIngestRun *run, const char *key,
				  const char *val);
/* Writes everything added so far and waits until it is committed. */
gboolean pgate_ingest__run_flush(PgateIngestRun *run, GError **error);

/**
 * pgate_ingest__load_file:
 * @state_dir: (nullable): the state directory
 * @ref: a PGATE_RAW_FILE record's raw_ref
 *
 * The first @max bytes of a message kept in a file: @ref relative to
 * @state_dir (what is stored now, ingest.c), else @ref as it is (an
 * older record's absolute path, or one relative to the working directory
 * it was stored from), else, for an older "DIR/quarantine/NAME", the
 * state directory's quarantine/NAME.
 */
GBytes *pgate_ingest__load_file(const char *state_dir, const char *ref,
				gsize max, GError **error);
