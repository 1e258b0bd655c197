/* threading.h - threads, patch series and version chains.
 *
 * The threading stage derives from the stored messages: which messages
 * form a thread (References/In-Reply-To, with ghosts for missing parents),
 * which patches form a series, and which series supersedes which.  All of
 * it is a pure function of the SET of stored messages: when messages
 * arrive, the affected unit (thread component plus unthreaded series
 * parts of the same sender nearby) is recomputed from scratch in a
 * canonical order (date, then Message-ID), so the result does not depend
 * on arrival order, and pgate_threading_rethread() rebuilds the same state
 * from nothing.  docs/threading.md describes the rules.
 *
 * Hooking into ingest: the pgate_threading_hook_* functions have the
 * signatures of ingest's PgateIngestHooks; the caller (the CLI) puts them
 * there with a PgateThreading as payload.  They run inside ingest's write
 * transaction, so messages and their threading commit together.
 */
#pragma once

#include <glib.h>
#include <jansson.h>

#include "store/store.h"

G_BEGIN_DECLS

/* Series within this many seconds with the same sender, version and
 * total join by markers (Patchwork's SERIES_DELAY_INTERVAL). */
#define PGATE_THREADING_MARKER_WINDOW (20 * 60)
/* The parts of one mailing (one sender's patches and cover threaded
 * together, the same total) are dated at most this many seconds apart,
 * one part from the next: a series with mismatched version labels is
 * still one series, and two series sent in one mailing are not versions
 * of each other (docs/threading.md). */
#define PGATE_THREADING_MAILING_GAP 240
/* Version links are looked for within this many seconds. */
#define PGATE_THREADING_LINK_WINDOW (365 * 24 * 3600)
/* The version of the rules that form series and link versions: a store
 * threaded by others (meta "threading_rules" absent or another value) is
 * marked "rethread_needed" by the first write transaction's hooks.
 * 2: issue #49 (one mailing one series, the line of versions). */
#define PGATE_THREADING_RULES 2
/* A unit larger than this is cut (with a warning). */
#define PGATE_THREADING_MAX_UNIT 20000

typedef struct PgateThreading PgateThreading;

/**
 * pgate_threading_new:
 * Returns: (transfer full): the state of one ingest run's hooks.
 */
PgateThreading *pgate_threading_new(void);
void pgate_threading_free(PgateThreading *thr);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateThreading, pgate_threading_free)

/* Hooks (payload: a PgateThreading).  begin forgets the messages noted by
 * an aborted attempt; message_added and message_deleted note a message;
 * before_commit recomputes every unit touched since begin.
 *
 * pgate_threading_hook_added() borrows @rec (with its num set, as
 * pgate_store_message_add() left it) until the next hook_commit or
 * hook_begin, and reads it instead of the stored copy: the caller keeps
 * it alive and unchanged until then, as ingest does with its batch. */
gboolean pgate_threading_hook_begin(PgateStoreTxn *txn, gpointer thr,
				    GError **error);
gboolean pgate_threading_hook_added(PgateStoreTxn *txn,
				    const PgateMessageRec *rec, gpointer thr,
				    GError **error);
gboolean pgate_threading_hook_deleted(PgateStoreTxn *txn,
				      const PgateMessageRec *rec, gpointer thr,
				      GError **error);
gboolean pgate_threading_hook_commit(PgateStoreTxn *txn, gpointer thr,
				     GError **error);
/* Ingest's skipped(): the messages were stored without threading (a hook
 * failed for good: @why); sets the meta flag "rethread_needed". */
gboolean pgate_threading_hook_skipped(PgateStoreTxn *txn, const GError *why,
				      gpointer thr, GError **error);

/*
 * While the meta flag "rethread_needed" is set (by a store upgrade, a
 * skipped hook or a deferred ingest), the hooks leave the derived state
 * alone: threading on top of state known to be incomplete would give
 * wrong series, and pgate_threading_rethread() rebuilds all of it anyway.
 */

/* Deferred (ingest --no-thread): the hooks do no threading, and set
 * "rethread_needed" in a transaction that adds or deletes a message. */
void pgate_threading_set_deferred(PgateThreading *thr, gboolean deferred);
/* (nullable): why a hook failed for good, when ingest then stored the
 * messages without threading (the last such failure of this object). */
const char *pgate_threading_skipped(const PgateThreading *thr);
/* Whether the last transaction found "rethread_needed" set (or was
 * deferred), so that it threaded nothing. */
gboolean pgate_threading_stale(const PgateThreading *thr);

/**
 * pgate_threading_recomputed:
 * Returns: how many messages the recomputations since pgate_threading_new()
 *   have read into their units: the cost measure of incremental threading.
 */
guint64 pgate_threading_recomputed(PgateThreading *thr);

typedef struct {
	guint64 messages;   /* messages read */
	guint64 series;     /* series formed */
	guint64 complete;   /* of which complete */
	guint64 superseded; /* series with a newer version */
	guint64 unreadable; /* message records that do not decode, left out */
	guint64 first_unreadable; /* the number of the first of them */
} PgateThreadingStats;

/**
 * pgate_threading_rethread:
 * Empties all threading state and recomputes it from every stored message,
 * without holding the store's write lock all along: the other
 * generation of the derived databases is filled in transactions of
 * PGATE_THREADING_RETHREAD_BATCH messages, between which deliveries go
 * on (threading into the live generation), then made live in one commit
 * (pgate_store_derived_switch), and the old one emptied.  Readers see the
 * old threading until then.  A rethread that was stopped goes on where
 * it got to (meta "rethread_progress"); one that a message deletion
 * overtook starts again.  Clears the meta flags "rethread_needed" and
 * "threading_failed".  A message record that does not decode is left out
 * and counted in @out_stats (unreadable), as incremental threading leaves
 * it out; any other failure fails the rethread, and the live generation
 * stays as it was.  @out_stats counts the messages this call read.
 */
gboolean pgate_threading_rethread(PgateStore *store,
				  PgateThreadingStats *out_stats,
				  GError **error);
/* The number of the last message the rethread in progress has threaded
 * (one that was stopped, or is running in another process); 0: none. */
guint64 pgate_threading_rethread_at(PgateStoreTxn *txn);
/* Messages a transaction of pgate_threading_rethread, as ingest's: at a
 * million messages (some 10,000 a second) a delivery waits 0.2 s at most
 * (bench/scale.sh). */
#define PGATE_THREADING_RETHREAD_BATCH 2000
/* Told after each batch but the last, with the lock free: the messages
 * read so far, and the number of the last one.  Returns FALSE to stop
 * there (the rethread fails, PGATE_ERROR_FAILED; the next one goes on
 * from there). */
typedef gboolean (*PgateThreadingProgressFunc)(guint64 messages,
					       guint64 last, gpointer data);
/* pgate_threading_rethread with @batch messages a transaction (0: the
 * default) and @progress (nullable). */
gboolean pgate_threading_rethread_batched(PgateStore *store, guint batch,
					  PgateThreadingProgressFunc progress,
					  gpointer data,
					  PgateThreadingStats *out_stats,
					  GError **error);

/**
 * pgate_threading_effective_patches:
 * @r: a series
 * @out_base: (out) (transfer full) (nullable): for a partial re-roll, the
 *   series whose patches it re-rolls; %NULL otherwise
 *
 * The patches to apply for @r, in order: its own; for a partial re-roll
 * (a [PATCH v2 3/5] replying to v1's 3/5), the older series' patches with
 * the re-rolled ones swapped in, so that the whole v2 can be applied and
 * tested.  Returns: (transfer full) (element-type PgateSeriesPatch):
 * copies; %NULL on a store error.
 */
GPtrArray *pgate_threading_effective_patches(PgateStoreTxn *txn,
					     const PgateSeriesRec *r,
					     char **out_base, GError **error);

/**
 * pgate_threading_dep_candidates:
 * @rec: (nullable): the series that names @d
 * @d: one of its dependencies
 *
 * The series @d may mean, best first: those of @rec's own submitter
 * first (never another person's look-alike over one's own work), then
 * the version asked for (b4's "change-id:vN") or the newest of its chain;
 * among equals the last in the index, or for a Message-ID the first
 * stored copy's.  @rec itself is none of them; base-commit has none.
 * Callers with more to go on (the pipeline knows whom it trusts) pick
 * among them; the JSON shows the first.
 *
 * Returns: (transfer full) (element-type utf8): series ids; %NULL on a
 *   store error.
 */
GPtrArray *pgate_threading_dep_candidates(PgateStoreTxn *txn,
					  const PgateSeriesRec *rec,
					  const PgateSeriesDep *d,
					  GError **error);

/**
 * pgate_threading_series_json:
 * The JSON object of one series (docs/threading.md): dependencies are
 * resolved to series ids here, at read time, so that they resolve as the
 * series they name arrive.
 *
 * Returns: (transfer full): the object.
 */
json_t *pgate_threading_series_json(PgateStoreTxn *txn,
				    const PgateSeriesRec *rec);

/**
 * pgate_threading_series_explain:
 * @r: a stored series
 *
 * Why @r supersedes what it does, and why the other series its text or
 * its replies point at are not its predecessor: {"rule": RULE|null,
 * "predecessor": ID|null, "predecessor_version": N (0 for none),
 * "evidence": [{"text", "msgid"}], "links":
 * [{"msgid", "kind": "version"|"depends"|"reference", "line", "from",
 * "series": ID|null}], "rejected": [{"series", "version", "reason",
 * "text"|null}]}.  "text" is the line of the mail that was read.
 *
 * Returns: (transfer full) (nullable): the explanation, or %NULL with
 *   @error set when the store fails.
 */
json_t *pgate_threading_series_explain(PgateStoreTxn *txn,
				       const PgateSeriesRec *r, GError **error);

/**
 * pgate_threading_explain_text:
 * @ex: what pgate_threading_series_explain() returned
 *
 * Returns: (transfer full): @ex as indented lines for people, each
 *   ending in a newline ("" when there is nothing to say).
 */
char *pgate_threading_explain_text(const json_t *ex);

/**
 * pgate_threading_dump:
 * A canonical text of every series (ids, members, links, trailers),
 * sorted, one JSON object per line: equal for equal threading state.
 *
 * Returns: (transfer full) (nullable): the dump, %NULL on error.
 */
char *pgate_threading_dump(PgateStoreTxn *txn, GError **error);

G_END_DECLS
