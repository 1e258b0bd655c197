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

typedef struct {
	GArray *items;       /* of ingest.c's Item */
	const PgateIngestOptions *opts;  /* how to parse them */
	gsize bytes;
	char *resume_key;    /* (nullable): meta key of the resume point */
	char *resume_val;
	gboolean resume_dirty;
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
