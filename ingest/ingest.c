/* ingest.c - sources into the store: mbox files, maildirs, one delivery.
 *
 * Files are stored in batches, one write transaction per batch (bounded by
 * count and bytes), which is what makes bulk import fast: each commit is
 * fsync'd.  A delivery is one message in one transaction.
 *
 * Oversized mail is never dropped.  From a file, the first
 * QUARANTINE_HEAD bytes are stored as a rejected message whose reason
 * names the source, which still holds the whole message.  From a delivery
 * (where nothing else keeps it) the whole message is written to
 * STATE/quarantine/ first, fsync'd, and the record points at that file:
 * one file per stored record, however often it is delivered.
 *
 * A maildir's entries are named by whoever delivers into it, and that
 * may be someone else than the user ingesting (maybe as root): only
 * regular files are read, symlinks are not followed, and nothing waits
 * on a FIFO (maildir_open()).  Other entries are skipped with a warning
 * and counted; the rest of the maildir is read all the same.
 */
#include "ingest/ingest-run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUARANTINE_HEAD (64u * 1024)

void
pgate_ingest_options_resolve(PgateIngestOptions *o)
{
	if (o->max_message_size == 0)
		o->max_message_size = 64u << 20;
	if (o->max_references == 0)
		o->max_references = 128;
	if (o->max_recipients == 0)
		o->max_recipients = 256;
	if (o->max_trailers == 0)
		o->max_trailers = 256;
	if (o->batch_messages == 0)
		o->batch_messages = 2000;
	if (o->batch_bytes == 0)
		o->batch_bytes = 32u << 20;   /* two batches may be in memory */
}

/* A message of a batch.  It is read first and parsed when the batch is
 * written, by several threads at once (parse_batch). */
typedef struct {
	GBytes *raw;       /* what is stored inline, or NULL (by reference) */
	GBytes *input;     /* what is parsed */
	gboolean truncated;
	gboolean delete;   /* remove the stored copy of mail (public-inbox "d") */
	char *source;
	PgateRawLocation location;
	char *ref;
	gsize size;
	PgateMail *mail;
	PgateStoreAddResult result;
	gboolean deleted;  /* for delete: whether a stored copy was found */
} Item;

static void
item_clear(Item *it)
{
	g_clear_pointer(&it->mail, pgate_mail_free);
	g_clear_pointer(&it->raw, g_bytes_unref);
	g_clear_pointer(&it->input, g_bytes_unref);
	g_clear_pointer(&it->source, g_free);
	g_clear_pointer(&it->ref, g_free);
}

static void mark_oversized(PgateMessageRec *rec, gsize max, const char *where);

static void
parse_item(Item *it, const PgateIngestOptions *opts)
{
	gsize len;
	const char *data = g_bytes_get_data(it->input, &len);
	PgateMessageRec *rec;

	it->mail = pgate_mail_parse(data, len, opts);
	rec = it->mail->rec;
	if (it->delete)
		return;
	if (it->truncated)
		mark_oversized(rec, opts->max_message_size, it->source);
	g_free(rec->source);
	rec->source = g_steal_pointer(&it->source);
	if (it->ref != NULL) {
		/* the archive keeps the bytes: store where, not what */
		rec->raw_location = it->location;
		rec->raw_ref = g_steal_pointer(&it->ref);
		rec->raw_size = it->size;
	}
}

/* The batch the writer thread has: run->inflight points at its first
 * member.  @written is set when the writer is done with it. */
typedef struct {
	PgateIngestBatch batch;
	GMutex lock;
	GCond cond;
	gboolean written;
} Inflight;

typedef struct {
	GArray *items;
	const PgateIngestOptions *opts;
	gint next;
	Inflight *writing;   /* (nullable): the batch being written meanwhile */
} ParseJob;

static gpointer
parse_worker(gpointer data)
{
	ParseJob *job = data;
	gint i;

	while ((i = g_atomic_int_add(&job->next, 1)) < (gint)job->items->len) {
		Item *it = &g_array_index(job->items, Item, i);

		if (it->mail == NULL)
			parse_item(it, job->opts);
	}
	return NULL;
}

/* The last parse thread leaves its CPU to the writer thread while it
 * writes the batch before: with one thread more than CPUs, the writer got
 * only a share of one while parsing went on, and writing is the longer
 * of the two when threading runs in the writer's transaction. */
static gpointer
parse_worker_last(gpointer data)
{
	ParseJob *job = data;
	Inflight *w = job->writing;

	if (w != NULL) {
		g_mutex_lock(&w->lock);
		while (!w->written &&
		       g_atomic_int_get(&job->next) < (gint)job->items->len)
			g_cond_wait(&w->cond, &w->lock);
		g_mutex_unlock(&w->lock);
	}
	return parse_worker(data);
}

/* Parsing is most of the work of an import: spread it over the CPUs.
 * Parsing is deterministic and each item is parsed by exactly one thread,
 * so the order of the batch, and so of the store, does not change.
 * @writing: (nullable): the batch the writer thread has meanwhile. */
static void
parse_batch(GArray *items, const PgateIngestOptions *opts, Inflight *writing)
{
	ParseJob job = { items, opts, 0, writing };
	guint n = MIN((guint)g_get_num_processors(), 8u);
	GThread *threads[8];

	if (items->len < 64)
		n = 1;
	for (guint t = 1; t < n; t++)
		threads[t] = g_thread_new("pgate-parse", t == n - 1 ?
					  parse_worker_last : parse_worker,
					  &job);
	parse_worker(&job);
	if (writing != NULL && n > 1) {
		/* every item is taken: the last thread need not wait */
		g_mutex_lock(&writing->lock);
		g_cond_broadcast(&writing->cond);
		g_mutex_unlock(&writing->lock);
	}
	for (guint t = 1; t < n; t++)
		g_thread_join(threads[t]);
}

/* The stored record of the message with @rec's Message-ID and content,
 * or NULL: what an after_delete hook is told. */
static PgateMessageRec *
stored_copy(PgateStoreTxn *txn, const PgateMessageRec *rec, GError **error)
{
	g_autoptr(GArray) nums = pgate_store_message_lookup(txn, rec->msgid,
							    error);

	if (nums == NULL)
		return NULL;
	for (guint i = 0; i < nums->len; i++) {
		PgateMessageRec *old = pgate_store_message_get(
			txn, g_array_index(nums, guint64, i), error);

		if (old == NULL)
			return NULL;
		if (memcmp(old->content_hash, rec->content_hash, 32) == 0)
			return old;
		pgate_message_rec_free(old);
	}
	return NULL;
}

/* ---- the hooks of a write ---- */

void
pgate_ingest__hooks_init(PgateIngestHookRun *h, const PgateIngestHooks *hooks)
{
	h->hooks = hooks;
	h->failed = FALSE;
	h->skip = NULL;
}

void
pgate_ingest__hooks_clear(PgateIngestHookRun *h)
{
	g_clear_error(&h->skip);
}

static gboolean
hooks_on(const PgateIngestHookRun *h)
{
	return h != NULL && h->hooks != NULL && h->skip == NULL;
}

/* @ok is what the hook returned: a failure is remembered */
static gboolean
hook_ran(PgateIngestHookRun *h, gboolean ok)
{
	if (!ok)
		h->failed = TRUE;
	return ok;
}

gboolean
pgate_ingest__hook_begin(PgateIngestHookRun *h, PgateStoreTxn *txn,
			 GError **error)
{
	/* every attempt starts afresh (the map may have grown) */
	if (h != NULL)
		h->failed = FALSE;
	if (!hooks_on(h) || h->hooks->begin == NULL)
		return TRUE;
	return hook_ran(h, h->hooks->begin(txn, h->hooks->payload, error));
}

gboolean
pgate_ingest__hook_added(PgateIngestHookRun *h, PgateStoreTxn *txn,
			 const PgateMessageRec *rec, GError **error)
{
	if (!hooks_on(h) || h->hooks->after_add == NULL)
		return TRUE;
	return hook_ran(h, h->hooks->after_add(txn, rec, h->hooks->payload,
					       error));
}

gboolean
pgate_ingest__hook_wants_deleted(const PgateIngestHookRun *h)
{
	return hooks_on(h) && h->hooks->after_delete != NULL;
}

gboolean
pgate_ingest__hook_deleted(PgateIngestHookRun *h, PgateStoreTxn *txn,
			   const PgateMessageRec *rec, GError **error)
{
	if (!pgate_ingest__hook_wants_deleted(h))
		return TRUE;
	return hook_ran(h, h->hooks->after_delete(txn, rec, h->hooks->payload,
						  error));
}

gboolean
pgate_ingest__hook_commit(PgateIngestHookRun *h, PgateStoreTxn *txn,
			  GError **error)
{
	if (h == NULL || h->hooks == NULL)
		return TRUE;
	if (h->skip != NULL)
		return h->hooks->skipped(txn, h->skip, h->hooks->payload,
					 error);
	if (h->hooks->before_commit == NULL)
		return TRUE;
	return hook_ran(h, h->hooks->before_commit(txn, h->hooks->payload,
						   error));
}

gboolean
pgate_ingest__hooked_write(PgateStore *store, PgateStoreWriteFunc fn,
			   gpointer payload, PgateIngestHookRun *h,
			   GError **error)
{
	g_autoptr(GError) local = NULL;

	if (pgate_store_write(store, fn, payload, &local))
		return TRUE;
	if (h == NULL || !h->failed || local == NULL || h->hooks == NULL ||
	    h->hooks->skipped == NULL || pgate_error_is_transient(local)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	/* the messages go in; the derived state is marked stale */
	h->skip = g_steal_pointer(&local);
	return pgate_store_write(store, fn, payload, error);
}

static gboolean
delete_item(PgateStoreTxn *txn, Item *it, PgateIngestHookRun *hooks,
	    GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(PgateMessageRec) old = NULL;
	const PgateMessageRec *rec = it->mail->rec;

	if (pgate_ingest__hook_wants_deleted(hooks)) {
		old = stored_copy(txn, rec, &local);
		if (local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	it->deleted = pgate_store_message_delete(txn, rec->msgid,
						 rec->content_hash, NULL,
						 &local);
	if (it->deleted && old != NULL)
		return pgate_ingest__hook_deleted(hooks, txn, old, error);
	if (it->deleted ||
	    g_error_matches(local, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND))
		return TRUE;
	g_propagate_error(error, g_steal_pointer(&local));
	return FALSE;
}

static gboolean
write_batch(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	PgateIngestBatch *b = payload;
	PgateIngestHookRun *hooks = b->hooks;

	if (!pgate_ingest__hook_begin(hooks, txn, error))
		return FALSE;
	for (guint i = 0; i < b->items->len; i++) {
		Item *it = &g_array_index(b->items, Item, i);

		if (it->delete) {
			if (!delete_item(txn, it, hooks, error))
				return FALSE;
			continue;
		}

		/* a retry after growing the map runs this again: start
		 * each record from the same state */
		it->mail->rec->flags &= ~PGATE_MSG_FLAG_ID_CONFLICT;
		it->mail->rec->num = 0;
		if (!pgate_store_message_add(txn, it->mail->rec, it->raw,
					     &it->result, error)) {
			g_prefix_error(error, "message %s: ",
				       it->mail->rec->msgid);
			return FALSE;
		}
		if (it->result != PGATE_STORE_DUPLICATE &&
		    !pgate_ingest__hook_added(hooks, txn, it->mail->rec, error))
			return FALSE;
	}
	if (!pgate_ingest__hook_commit(hooks, txn, error))
		return FALSE;
	/* the resume point commits with the messages read up to it */
	if (b->resume_key != NULL &&
	    !pgate_store_meta_put(txn, b->resume_key, b->resume_val,
				  strlen(b->resume_val), error))
		return FALSE;
	return TRUE;
}

static void
count(PgateIngestStats *s, const PgateMessageRec *rec,
      PgateStoreAddResult result, gboolean quarantined)
{
	switch (result) {
	case PGATE_STORE_DUPLICATE:
		s->duplicates++;
		return;
	case PGATE_STORE_ADDED_CONFLICT:
		s->conflicts++;
		break;
	case PGATE_STORE_ADDED:
		break;
	}
	s->stored++;
	if (quarantined)
		s->quarantined++;
	if (rec->kind == PGATE_MSG_KIND_REJECTED)
		s->rejected++;
	if ((guint)rec->kind < G_N_ELEMENTS(s->by_kind))
		s->by_kind[rec->kind]++;
}

static void
count_batch(const PgateIngestBatch *b, PgateIngestStats *stats)
{
	for (guint i = 0; i < b->items->len; i++) {
		Item *it = &g_array_index(b->items, Item, i);
		const PgateMessageRec *rec = it->mail->rec;

		if (it->delete) {
			stats->deleted += it->deleted;
			continue;
		}
		count(stats, rec, it->result, it->truncated);
	}
}

static void
stats_add(PgateIngestStats *to, const PgateIngestStats *from)
{
	to->stored += from->stored;
	to->duplicates += from->duplicates;
	to->conflicts += from->conflicts;
	to->rejected += from->rejected;
	to->quarantined += from->quarantined;
	to->deleted += from->deleted;
	to->writer_cpu += from->writer_cpu;
	for (gsize k = 0; k < G_N_ELEMENTS(to->by_kind); k++)
		to->by_kind[k] += from->by_kind[k];
}

/* Frees the in-flight batch. */
static void
batch_free(PgateIngestBatch *b)
{
	Inflight *w = (Inflight *)b;

	g_array_unref(b->items);
	g_free(b->resume_key);
	g_free(b->resume_val);
	g_mutex_clear(&w->lock);
	g_cond_clear(&w->cond);
	g_free(w);
}

static double
thread_cpu_seconds(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The writer thread: one transaction for the batch.  Its counts go to
 * inflight_stats, merged by the main thread after the join, so that the
 * progress callback never reads what this thread writes. */
static gpointer
writer_main(gpointer data)
{
	PgateIngestRun *run = data;
	Inflight *w = (Inflight *)run->inflight;

	PgateIngestHookRun hooks;

	pgate_ingest__hooks_init(&hooks, run->inflight->opts->hooks);
	run->inflight->hooks = &hooks;
	run->writer_ok = pgate_ingest__hooked_write(run->store, write_batch,
						    run->inflight, &hooks,
						    &run->writer_error);
	run->inflight->hooks = NULL;
	pgate_ingest__hooks_clear(&hooks);
	if (run->writer_ok)
		count_batch(run->inflight, &run->inflight_stats);
	/* a bulk ingest trains the store's zstd dictionary once it holds
	 * enough mail (store/zdict.c), while the next batch is parsed; what
	 * fails there leaves the mail compressed without one */
	if (run->writer_ok) {
		g_autoptr(GError) zerr = NULL;
		gboolean trained;

		if (!pgate_store_zdict_auto(run->store, &trained, NULL, &zerr))
			g_debug("no zstd dictionary trained: %s",
				zerr->message);
	}
	/* the thread is this batch's: its whole CPU time */
	run->inflight_stats.writer_cpu = thread_cpu_seconds();
	g_mutex_lock(&w->lock);
	w->written = TRUE;
	g_cond_broadcast(&w->cond);
	g_mutex_unlock(&w->lock);
	return NULL;
}

/* Waits for the batch being written; returns its outcome, and the
 * batch in *@out_done (to free) when @out_done is not NULL. */
static gboolean
join_writer_keep(PgateIngestRun *run, PgateIngestBatch **out_done,
		 GError **error)
{
	PgateIngestBatch *done;
	gboolean ok;

	if (run->writer == NULL)
		return TRUE;
	g_thread_join(g_steal_pointer(&run->writer));
	ok = run->writer_ok;
	if (ok)
		stats_add(run->stats, &run->inflight_stats);
	else
		g_propagate_error(error, g_steal_pointer(&run->writer_error));
	done = g_steal_pointer(&run->inflight);
	if (out_done != NULL)
		*out_done = done;
	else
		batch_free(done);
	return ok;
}

static gboolean
join_writer(PgateIngestRun *run, GError **error)
{
	return join_writer_keep(run, NULL, error);
}

/* Parses the current batch (on every CPU; on all but one while the
 * previous batch is still committing), then hands it to the writer
 * thread and frees the previous batch meanwhile. */
static gboolean
flush_async(PgateIngestRun *run, GError **error)
{
	PgateIngestBatch *b = &run->batch;
	PgateIngestBatch *done = NULL;
	Inflight *w;

	if (b->items->len == 0 && !b->resume_dirty)
		return TRUE;
	parse_batch(b->items, b->opts, run->writer != NULL ?
		    (Inflight *)run->inflight : NULL);
	if (!join_writer_keep(run, &done, error)) {
		g_clear_pointer(&done, batch_free);
		return FALSE;
	}
	w = g_new0(Inflight, 1);
	w->batch = *b;
	g_mutex_init(&w->lock);
	g_cond_init(&w->cond);
	run->inflight = &w->batch;
	memset(&run->inflight_stats, 0, sizeof run->inflight_stats);
	b->items = g_array_new(FALSE, TRUE, sizeof(Item));
	g_array_set_clear_func(b->items, (GDestroyNotify)item_clear);
	b->bytes = 0;
	b->resume_key = NULL;
	b->resume_val = NULL;
	b->resume_dirty = FALSE;
	run->writer = g_thread_new("pgate-write", writer_main, run);
	/* the batch written before is freed while this one is written */
	g_clear_pointer(&done, batch_free);
	return TRUE;
}

/* Turns a parsed oversized message into a rejected one that says where
 * the whole of it is. */
static void
mark_oversized(PgateMessageRec *rec, gsize max, const char *where)
{
	rec->kind = PGATE_MSG_KIND_REJECTED;
	g_free(rec->reject_reason);
	rec->reject_reason = g_strdup_printf(
		"larger than max_message_size (%" G_GSIZE_FORMAT " bytes); "
		"the whole message is in %s", max, where);
}

void
pgate_ingest__run_init(PgateIngestRun *run, PgateStore *store,
		       const PgateIngestOptions *opts, PgateIngestStats *stats,
		       PgateIngestProgressFunc progress, gpointer payload)
{
	memset(run, 0, sizeof *run);
	pgate_ingest_init();
	run->opts = *opts;
	pgate_ingest_options_resolve(&run->opts);
	run->store = store;
	run->stats = stats;
	run->progress = progress;
	run->payload = payload;
	run->batch.items = g_array_new(FALSE, TRUE, sizeof(Item));
	run->batch.opts = &run->opts;
	g_array_set_clear_func(run->batch.items, (GDestroyNotify)item_clear);
}

void
pgate_ingest__run_clear(PgateIngestRun *run)
{
	/* after a failure elsewhere: the write still has to finish */
	if (run->writer != NULL) {
		g_autoptr(GError) ignored = NULL;

		join_writer(run, &ignored);
	}
	g_clear_error(&run->writer_error);
	g_clear_pointer(&run->batch.items, g_array_unref);
	g_clear_pointer(&run->batch.resume_key, g_free);
	g_clear_pointer(&run->batch.resume_val, g_free);
	g_clear_pointer(&run->source, g_free);
}

void
pgate_ingest__run_set_resume(PgateIngestRun *run, const char *key,
			     const char *val)
{
	if (g_strcmp0(run->batch.resume_key, key) != 0) {
		g_free(run->batch.resume_key);
		run->batch.resume_key = g_strdup(key);
	}
	g_free(run->batch.resume_val);
	run->batch.resume_val = g_strdup(val);
	run->batch.resume_dirty = TRUE;
}

gboolean
pgate_ingest__run_flush(PgateIngestRun *run, GError **error)
{
	return flush_async(run, error) && join_writer(run, error);
}

static gboolean
maybe_flush(PgateIngestRun *run, GError **error)
{
	if (run->batch.items->len >= run->opts.batch_messages ||
	    run->batch.bytes >= run->opts.batch_bytes)
		return flush_async(run, error);
	return TRUE;
}

gboolean
pgate_ingest__run_delete(PgateIngestRun *run, GBytes *raw, GError **error)
{
	gsize len = g_bytes_get_size(raw);
	Item it = { 0 };

	it.input = g_bytes_new_from_bytes(raw, 0,
					  MIN(len, run->opts.max_message_size));
	it.delete = TRUE;
	g_array_append_val(run->batch.items, it);
	return maybe_flush(run, error);
}

static void
report_progress(PgateIngestRun *run, guint64 done)
{
	gint64 now;

	if (run->progress == NULL || (run->stats->read & 63) != 0)
		return;
	now = g_get_monotonic_time();
	if (now - run->last_progress >= G_USEC_PER_SEC / 4) {
		run->last_progress = now;
		run->progress(run->stats, done, run->total, run->payload);
	}
}

gboolean
pgate_ingest__run_add(PgateIngestRun *run, GBytes *raw, gboolean truncated,
		      guint64 done, const PgateIngestRawRef *ref,
		      GError **error)
{
	gsize len = g_bytes_get_size(raw);
	Item it = { 0 };

	run->stats->read++;
	run->stats->bytes += len;
	it.truncated = truncated;
	it.source = g_strdup(run->source);
	if (truncated) {
		/* the head is enough for the headers; the source keeps all */
		it.input = g_bytes_new_from_bytes(raw, 0,
						  MIN(len, QUARANTINE_HEAD));
		it.raw = g_bytes_ref(it.input);
	} else {
		it.input = g_bytes_ref(raw);
		if (ref != NULL) {
			it.location = ref->location;
			it.ref = g_strdup(ref->ref);
			it.size = len;
		} else {
			it.raw = g_bytes_ref(raw);
		}
	}
	g_array_append_val(run->batch.items, it);
	run->batch.bytes += len;
	if (!maybe_flush(run, error))
		return FALSE;
	report_progress(run, done);
	return TRUE;
}

static gboolean
ingest_mbox(PgateIngestRun *run, const char *path, PgateMboxFormat format,
	    GError **error)
{
	g_autoptr(PgateMboxReader) r = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	gboolean ok = TRUE;

	if (fd < 0) {
		g_set_error(error, PGATE_INGEST_ERROR,
			    pgate_error_errno_code(errno), "open %s: %s", path,
			    g_strerror(errno));
		return FALSE;
	}
	if (fstat(fd, &st) == 0)
		run->total = (guint64)st.st_size;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	r = pgate_mbox_reader_new(fd, format, run->opts.max_message_size);
	for (;;) {
		g_autoptr(GBytes) raw = NULL;
		gboolean truncated;

		if (!pgate_mbox_reader_next(r, &raw, &truncated, error)) {
			ok = raw == NULL && (error == NULL || *error == NULL);
			break;
		}
		if (!pgate_ingest__run_add(run, raw, truncated,
					   pgate_mbox_reader_offset(r), NULL,
					   error)) {
			ok = FALSE;
			break;
		}
	}
	close(fd);
	return ok;
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- maildir entries ---- */

/* What a maildir entry is, when it is not a message. */
static const char *
file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

/* Opens a file of a maildir.  Whoever can deliver into the maildir names
 * its entries, and the reader may be root: so a symlink is not followed
 * (O_NOFOLLOW: "new/x -> /etc/shadow" is not read), the open never waits
 * (O_NONBLOCK: a FIFO would wait for a writer forever), and what the
 * descriptor is, not what the name was, decides: only a regular file is
 * read (O_NONBLOCK does nothing to those).  Returns the descriptor, or -1
 * with @error set: PGATE_ERROR_NOT_FOUND when the entry is gone (a mail
 * reader moved it), PGATE_ERROR_INVALID when it is not a regular file,
 * else errno's code. */
static int
maildir_open(const char *path, struct stat *st, GError **error)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int errsv;

	if (fd < 0) {
		errsv = errno;
		if (errsv == ELOOP)
			g_set_error(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_INVALID, "%s is a symbolic "
				    "link, not followed", path);
		else if (errsv == ENXIO)
			g_set_error(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_INVALID, "%s is a socket, not "
				    "a regular file", path);
		else
			g_set_error(error, PGATE_INGEST_ERROR,
				    pgate_error_errno_code(errsv),
				    "open %s: %s", path, g_strerror(errsv));
		return -1;
	}
	if (fstat(fd, st) < 0) {
		errsv = errno;
		close(fd);
		g_set_error(error, PGATE_INGEST_ERROR,
			    pgate_error_errno_code(errsv), "stat %s: %s", path,
			    g_strerror(errsv));
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "%s is %s, not a regular file", path,
			    file_kind(st->st_mode));
		return -1;
	}
	return fd;
}

/* Reads a file of a maildir, at most max bytes of it.  Returns %NULL
 * with @error set as maildir_open() sets it, or on a read error. */
static GBytes *
read_file_bounded(const char *path, gsize max, gboolean *truncated,
		  guint64 *out_size, GError **error)
{
	struct stat st;
	int fd = maildir_open(path, &st, error);
	GBytes *b;

	if (fd < 0)
		return NULL;
	*out_size = (guint64)st.st_size;
	b = pgate_fd_read_bounded(fd, max, truncated, PGATE_INGEST_ERROR,
				  error);
	close(fd);
	return b;
}

/* Whether ingesting a maildir goes on after failing to read its entry
 * @path: a message moved away meanwhile (by a mail reader: not ours to
 * worry about) and entries that are no messages (FIFOs, directories,
 * symlinks, unreadable files: put there by whoever delivers) are left
 * alone; running out of descriptors or memory, or an I/O error, fails
 * the ingest, to be retried.  The entries left alone but the vanished
 * ones are counted and told of. */
static gboolean
maildir_skip(PgateIngestRun *run, const char *path, const GError *why)
{
	g_autofree char *msg = NULL;

	if (g_error_matches(why, PGATE_INGEST_ERROR, PGATE_ERROR_NOT_FOUND))
		return TRUE;
	if (g_error_matches(why, PGATE_INGEST_ERROR, PGATE_ERROR_IO))
		return FALSE;
	run->stats->skipped++;
	if (run->opts.skipped_entry != NULL) {
		run->opts.skipped_entry(path, why,
					run->opts.skipped_entry_payload);
		return TRUE;
	}
	/* the name is the deliverer's: no control characters in the log */
	msg = g_strescape(why->message, NULL);
	g_warning("maildir: skipped: %s", msg);
	return TRUE;
}

static gboolean
ingest_maildir(PgateIngestRun *run, const char *path, GError **error)
{
	static const char *const subs[] = { "new", "cur" };
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
	guint64 done = 0;

	for (gsize s = 0; s < G_N_ELEMENTS(subs); s++) {
		g_autofree char *dir = g_build_filename(path, subs[s], NULL);
		g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
		DIR *d = opendir(dir);
		struct dirent *de;

		if (d == NULL) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    pgate_error_errno_code(errno),
				    "open %s: %s", dir, g_strerror(errno));
			return FALSE;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			g_ptr_array_add(names, g_strdup(de->d_name));
		}
		closedir(d);
		/* storage order should not depend on readdir's */
		g_ptr_array_sort(names, compare_names);
		for (guint i = 0; i < names->len; i++)
			g_ptr_array_add(files, g_build_filename(
				dir, (char *)g_ptr_array_index(names, i), NULL));
	}
	for (guint i = 0; i < files->len; i++) {
		const char *f = g_ptr_array_index(files, i);
		gboolean truncated = FALSE;
		guint64 size = 0;
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) local = NULL;

		raw = read_file_bounded(f, run->opts.max_message_size,
					&truncated, &size, &local);
		if (raw == NULL) {
			if (maildir_skip(run, f, local))
				continue;
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		run->total += size;
		done += g_bytes_get_size(raw);
		if (!pgate_ingest__run_add(run, raw, truncated, done, NULL,
					   error))
			return FALSE;
	}
	return TRUE;
}

gboolean
pgate_ingest_maildir_file(PgateStore *store, const char *state_dir,
			  const char *path, const PgateIngestOptions *opts,
			  PgateStoreAddResult *out_result,
			  PgateMessageRec **out_rec, GError **error)
{
	struct stat st;
	int fd = maildir_open(path, &st, error);
	gboolean ok;

	if (fd < 0)
		return FALSE;
	ok = pgate_ingest_deliver(store, state_dir, fd, opts, out_result,
				  out_rec, error);
	close(fd);
	return ok;
}

gboolean
pgate_ingest_path(PgateStore *store, const char *state_dir, const char *path,
		  PgateMboxFormat format, const PgateIngestOptions *opts,
		  PgateIngestStats *stats, PgateIngestProgressFunc progress,
		  gpointer payload, GError **error)
{
	PgateIngestRun run;
	struct stat st;
	gboolean ok;

	if (stat(path, &st) < 0) {
		g_set_error(error, PGATE_INGEST_ERROR,
			    pgate_error_errno_code(errno), "%s: %s", path,
			    g_strerror(errno));
		return FALSE;
	}
	pgate_ingest__run_init(&run, store, opts, stats, progress, payload);
	if (S_ISDIR(st.st_mode)) {
		g_autofree char *cur = g_build_filename(path, "cur", NULL);
		g_autofree char *new = g_build_filename(path, "new", NULL);

		if (!g_file_test(cur, G_FILE_TEST_IS_DIR) ||
		    !g_file_test(new, G_FILE_TEST_IS_DIR)) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_INVALID,
				    "%s is a directory but not a maildir "
				    "(no cur/ and new/)", path);
			pgate_ingest__run_clear(&run);
			return FALSE;
		}
		run.source = g_strconcat("maildir:", path, NULL);
		ok = ingest_maildir(&run, path, error);
	} else {
		run.source = g_strconcat("mbox:", path, NULL);
		ok = ingest_mbox(&run, path, format, error);
	}
	ok = ok && pgate_ingest__run_flush(&run, error);
	if (ok && progress != NULL)
		progress(stats, run.total, run.total, payload);
	pgate_ingest__run_clear(&run);
	(void)state_dir;
	return ok;
}

/* ---- one delivered message ---- */

/* Drops the mbox "From " line that procmail and maildrop put first. */
static GBytes *
strip_from_line(GBytes *raw)
{
	gsize len;
	const char *p = g_bytes_get_data(raw, &len);
	const char *nl;

	if (len < 5 || memcmp(p, "From ", 5) != 0)
		return g_bytes_ref(raw);
	nl = memchr(p, '\n', len);
	if (nl == NULL)
		return g_bytes_ref(raw);
	return g_bytes_new_from_bytes(raw, (gsize)(nl + 1 - p),
				      len - (gsize)(nl + 1 - p));
}

/* ---- the quarantine ---- */

/* A quarantined message's raw_ref is "quarantine/NAME.eml", relative to
 * the state directory.  Not relative to the working directory, as it
 * was: `--state s deliver` recorded "s/quarantine/...", which `msg show`
 * run from anywhere else could not open.  And not absolute: the state
 * directory is one unit (the store and its quarantine), which may be
 * moved, restored from a backup elsewhere or mounted at another path in
 * a container, and a reference from the store into it must survive
 * that.  (What lies outside it, a public-inbox archive, is referred to
 * by the path it was given.)  So whoever reads a message needs the state
 * directory: pgate_ingest_load_raw(). */
#define QUARANTINE_DIR PGATE_STATE_QUARANTINE

/* The file of the record @rec: named by what makes two messages the same
 * message for the store, its Message-ID and content hash.  Every copy
 * the store takes for a duplicate of a stored message finds its file
 * there, so the quarantine keeps one file per stored record and no
 * orphans.  (A hash of the bytes would not do that: copies relayed by
 * other hosts differ in their Received lines.)  A copy that finds the file
 * is not written: what is there first stays, the whole message the
 * record was made from. */
static char *
quarantine_ref(const PgateMessageRec *rec)
{
	PgateSha256 sum;
	guint8 h[32];
	char hex[65];

	pgate_sha256_init(&sum);
	pgate_sha256_update(&sum, rec->content_hash, sizeof rec->content_hash);
	pgate_sha256_update(&sum, rec->msgid, strlen(rec->msgid) + 1);
	pgate_sha256_finish(&sum, h);
	pgate_hex_encode(hex, h, sizeof h);
	return g_strconcat(QUARANTINE_DIR "/", hex, ".eml", NULL);
}

/* Reads the rest of @fd and drops it: a delivery's pipe is read to its
 * end, or the MTA may take the broken pipe for a failed delivery.  A
 * file need not be read. */
static gboolean
drain(int fd, GError **error)
{
	guint8 buf[65536];
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return TRUE;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);

		if (n == 0)
			return TRUE;
		if (n < 0 && errno != EINTR) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    pgate_error_errno_code(errno),
				    "read: %s", g_strerror(errno));
			return FALSE;
		}
	}
}

/* Copies @head and the rest of @fd to a temporary file, durably, and
 * renames it to @path. */
static gboolean
write_quarantine(const char *dir, const char *path, GBytes *head, int fd,
		 guint64 *out_size, GError **error)
{
	g_autofree char *tmp = g_strdup_printf(
		"%s/tmp.%ld.%" G_GINT64_FORMAT ".%08x", dir, (long)getpid(),
		g_get_real_time(), g_random_int());
	gsize len;
	const guint8 *p = g_bytes_get_data(head, &len);
	guint8 buf[65536];
	guint64 size = 0;
	ssize_t n = (ssize_t)len;
	int errsv;
	int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		       O_CLOEXEC, 0600);

	if (out < 0)
		goto fail;
	for (;;) {
		while (n > 0) {
			ssize_t w = write(out, p, (size_t)n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				goto fail_close;
			p += w;
			n -= w;
			size += (guint64)w;
		}
		n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0)
			goto fail_close;
		if (n == 0)
			break;
		p = buf;
	}
	if (fsync(out) < 0)
		goto fail_close;
	if (close(out) < 0)
		goto fail;
	if (rename(tmp, path) < 0)
		goto fail;
	*out_size = size;
	return TRUE;

fail_close:
	errsv = errno;
	close(out);
	errno = errsv;
fail:
	errsv = errno;
	unlink(tmp);
	g_set_error(error, PGATE_INGEST_ERROR, pgate_error_errno_code(errsv),
		    "quarantine %s: %s", tmp, g_strerror(errsv));
	return FALSE;
}

/* Keeps the whole of the oversized message @rec was parsed from (@head,
 * what was read of it, then the rest of @fd) under STATE/quarantine,
 * durably, unless its file is there already.  Returns: (transfer full):
 * the reference to store (see QUARANTINE_DIR). */
static char *
quarantine(const char *state_dir, const PgateMessageRec *rec, GBytes *head,
	   int fd, guint64 *out_size, GError **error)
{
	g_autofree char *dir = g_build_filename(state_dir, QUARANTINE_DIR,
						NULL);
	g_autofree char *ref = quarantine_ref(rec);
	g_autofree char *path = g_build_filename(state_dir, ref, NULL);
	struct stat st;

	if (!pgate_mkdir_p(dir, PGATE_INGEST_ERROR, error))
		return NULL;
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		if (!drain(fd, error))
			return NULL;
		*out_size = (guint64)st.st_size;
	} else if (!write_quarantine(dir, path, head, fd, out_size, error)) {
		return NULL;
	}
	/* the rename made durable; or, when it was there, the rename of a
	 * delivery at work that may not have got this far yet */
	if (!pgate_fsync_dir(dir, PGATE_INGEST_ERROR, error))
		return NULL;
	return g_steal_pointer(&ref);
}

/* Opens @path, or tells that it is not there. */
static int
open_raw_file(const char *path, gboolean *missing, GError **error)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*missing = fd < 0 && (errno == ENOENT || errno == ENOTDIR);
	if (fd < 0 && !*missing)
		g_set_error(error, PGATE_INGEST_ERROR,
			    pgate_error_errno_code(errno),
			    "raw message %s: %s", path, g_strerror(errno));
	return fd;
}

GBytes *
pgate_ingest__load_file(const char *state_dir, const char *ref, gsize max,
			GError **error)
{
	g_autofree char *base = g_path_get_basename(ref);
	g_autofree char *parent = g_path_get_dirname(ref);
	g_autofree char *parent_base = g_path_get_basename(parent);
	gboolean missing = TRUE, over;
	int fd = -1;
	GBytes *b;

	/* what is stored now: relative to the state directory */
	if (state_dir != NULL && !g_path_is_absolute(ref)) {
		g_autofree char *p = g_build_filename(state_dir, ref, NULL);

		fd = open_raw_file(p, &missing, error);
		if (fd < 0 && !missing)
			return NULL;
	}
	/* what older records hold: an absolute path, or one relative to
	 * the working directory of the command that stored the message
	 * (read as before, when it is there) */
	if (fd < 0) {
		fd = open_raw_file(ref, &missing, error);
		if (fd < 0 && !missing)
			return NULL;
	}
	/* and when it is not: the same file in this state directory, for a
	 * state directory used from elsewhere or moved since */
	if (fd < 0 && state_dir != NULL &&
	    strcmp(parent_base, QUARANTINE_DIR) == 0) {
		g_autofree char *p = g_build_filename(state_dir, QUARANTINE_DIR,
						      base, NULL);

		fd = open_raw_file(p, &missing, error);
		if (fd < 0 && !missing)
			return NULL;
	}
	if (fd < 0) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_NOT_FOUND,
			    "raw message %s: not found%s", ref,
			    state_dir != NULL ? " in the state directory "
			    "nor from the working directory" : "");
		return NULL;
	}
	b = pgate_fd_read_bounded(fd, max, &over, PGATE_INGEST_ERROR, error);
	close(fd);
	return b;
}

typedef struct {
	PgateMessageRec *rec;
	GBytes *raw;
	PgateStoreAddResult result;
	PgateIngestHookRun hooks;
} DeliverCtx;

static gboolean
write_one(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DeliverCtx *c = payload;

	c->rec->flags &= ~PGATE_MSG_FLAG_ID_CONFLICT;
	c->rec->num = 0;
	if (!pgate_ingest__hook_begin(&c->hooks, txn, error) ||
	    !pgate_store_message_add(txn, c->rec, c->raw, &c->result, error))
		return FALSE;
	if (c->result != PGATE_STORE_DUPLICATE &&
	    !pgate_ingest__hook_added(&c->hooks, txn, c->rec, error))
		return FALSE;
	return pgate_ingest__hook_commit(&c->hooks, txn, error);
}

gboolean
pgate_ingest_deliver(PgateStore *store, const char *state_dir, int fd,
		     const PgateIngestOptions *opts,
		     PgateStoreAddResult *out_result, PgateMessageRec **out_rec,
		     GError **error)
{
	PgateIngestOptions o = *opts;
	g_autoptr(GBytes) input = NULL, raw = NULL;
	g_autoptr(PgateMail) mail = NULL;
	gboolean overflow = FALSE;
	DeliverCtx c = { 0 };
	gboolean ok;
	gsize len;
	const char *data;

	pgate_ingest_init();
	pgate_ingest_options_resolve(&o);
	input = pgate_fd_read_bounded(fd, o.max_message_size, &overflow,
				      PGATE_INGEST_ERROR, error);
	if (input == NULL)
		return FALSE;
	raw = strip_from_line(input);
	data = g_bytes_get_data(raw, &len);
	if (overflow) {
		guint64 size = 0;
		g_autofree char *ref = NULL, *where = NULL;

		mail = pgate_mail_parse(data, MIN(len, QUARANTINE_HEAD), &o);
		ref = quarantine(state_dir, mail->rec, raw, fd, &size, error);
		if (ref == NULL)
			return FALSE;
		where = g_strconcat("STATE/", ref, NULL);
		mark_oversized(mail->rec, o.max_message_size, where);
		mail->rec->raw_location = PGATE_RAW_FILE;
		mail->rec->raw_ref = g_steal_pointer(&ref);
		mail->rec->raw_size = size;
		g_clear_pointer(&raw, g_bytes_unref);   /* not kept inline */
	} else {
		mail = pgate_mail_parse(data, len, &o);
	}
	g_free(mail->rec->source);
	mail->rec->source = g_strdup("deliver");

	c.rec = mail->rec;
	c.raw = raw;
	pgate_ingest__hooks_init(&c.hooks, o.hooks);
	ok = pgate_ingest__hooked_write(store, write_one, &c, &c.hooks, error);
	pgate_ingest__hooks_clear(&c.hooks);
	if (!ok)
		return FALSE;
	*out_result = c.result;
	if (out_rec != NULL)
		*out_rec = g_steal_pointer(&mail->rec);
	return TRUE;
}
