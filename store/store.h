/* store.h - patchgate's durable state, kept in LMDB.
 *
 * One store is a directory (STATE/store) holding an LMDB environment.  Any
 * number of processes may open it at once: readers never block, writers are
 * serialised by a lock file with a timeout (so that a delivery hook fails
 * with a transient error instead of hanging forever) and by LMDB itself.
 *
 * Nothing of LMDB shows through this header.  Writes go through
 * pgate_store_write(), which runs a callback inside one write transaction:
 * when the map is full the transaction is aborted, the map grown, and the
 * callback run again from scratch, so callbacks must have no effect outside
 * the transaction.  The commit is fsync'd: when pgate_store_write() returns
 * %TRUE the data is on disk.
 *
 * Messages and series (threading's) are versioned tag/value records,
 * compact for the millions of them; the per-series documents of the later
 * stages (docs.c) are typed JSON documents, one codec for all of them.
 * Both are documented in docs/store-format.md.  _get functions copy data out; nothing returned by
 * this API points into the map.
 */
#pragma once

#include <glib.h>
#include <jansson.h>

#include "common/pgate-common.h"

G_BEGIN_DECLS

#define PGATE_STORE_ERROR (pgate_store_error_quark())
GQuark pgate_store_error_quark(void);

/* The schema this build reads and writes. */
/* Schema 2 added the threading databases (refs_index, author_index,
 * series, msg_series, change_index, patchid_index, name_index); schema 3
 * added link_index (threading) and the stage and outbox tables; schema 4
 * replaced name_index by name_keys; schema 5 keeps raw mail
 * zstd-compressed (message records' raw_codec).  A store of schema 4 is
 * opened as it is (nothing in it changes meaning); the first compressed
 * message written marks it 5, so that an older patchgate refuses it.
 * Schema 6: frames compressed with a zstd dictionary trained on the
 * store's own mail and kept in meta (zdict.c); the first write that
 * compresses marks a store of schema 4 or 5 6. */
#define PGATE_STORE_SCHEMA_VERSION 6
/* The oldest schema opened without "patchgate store upgrade". */
#define PGATE_STORE_SCHEMA_COMPAT 4

typedef struct PgateStore PgateStore;
typedef struct PgateStoreTxn PgateStoreTxn;

typedef enum {
	PGATE_STORE_RDONLY = 0,
	PGATE_STORE_RW = 1 << 0,      /* writes allowed */
	PGATE_STORE_CREATE = 1 << 1,  /* create an empty store if none */
	PGATE_STORE_NO_UPGRADE_CHECK = 1 << 2, /* for "store upgrade" itself */
} PgateStoreFlags;

typedef struct {
	guint64 map_size;        /* initial map size in bytes; 0: 256 MiB */
	guint64 max_map_size;    /* growth stops here; 0: 1 TiB */
	guint lock_timeout_ms;   /* writer lock wait; 0: wait forever */
	guint64 zdict_train_after; /* pgate_store_zdict_auto() trains once the
				    * raw database holds this many messages;
				    * 0: never */
} PgateStoreOptions;

#define PGATE_STORE_OPTIONS_INIT { 0, 0, 30000, PGATE_STORE_ZDICT_TRAIN_AFTER }

/**
 * pgate_store_open:
 * @dir: the store directory (created with %PGATE_STORE_CREATE)
 *
 * Opens the store and checks its schema version: a store written by a newer
 * schema is refused (PGATE_ERROR_SCHEMA), and so is an older one, which
 * "patchgate store upgrade" must convert first.
 *
 * Returns: (transfer full) (nullable): the store, or %NULL with @error set.
 */
PgateStore *pgate_store_open(const char *dir, PgateStoreFlags flags,
			     const PgateStoreOptions *opts, GError **error);
void pgate_store_free(PgateStore *store);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateStore, pgate_store_free)

/**
 * pgate_store_schema_version:
 * Returns: the schema version recorded in the store's meta database.
 */
guint pgate_store_schema_version(PgateStore *store);

/**
 * pgate_store_upgrade:
 * Brings an older store to %PGATE_STORE_SCHEMA_VERSION in one transaction.
 * @out_from: (out) (optional): the version it had before.
 */
gboolean pgate_store_upgrade(PgateStore *store, guint *out_from, GError **error);

/**
 * pgate_store_map_size:
 * Returns: the current size of the memory map, which grows when full.
 */
guint64 pgate_store_map_size(PgateStore *store);
/* The bytes of the map that the last committed transaction uses (its
 * last page, plus one, times the page size): what data.mdb needs. */
guint64 pgate_store_used_size(PgateStore *store);
/* The map's ceiling ([store] max_map_size, or its default). */
guint64 pgate_store_max_map_size(PgateStore *store);

typedef gboolean (*PgateStoreWriteFunc)(PgateStoreTxn *txn, gpointer payload,
					GError **error);

/**
 * pgate_store_write:
 * @fn: the unit of work; runs inside one write transaction
 * @payload: passed to @fn
 *
 * Takes the writer lock (waiting at most lock_timeout_ms, else
 * PGATE_ERROR_BUSY), begins a transaction, calls @fn and commits durably.
 * If @fn or the commit hits a full map, the map is doubled (up to
 * max_map_size) and @fn called again in a fresh transaction.  If @fn fails
 * the transaction is aborted and its error returned.
 */
gboolean pgate_store_write(PgateStore *store, PgateStoreWriteFunc fn,
			   gpointer payload, GError **error);

/**
 * pgate_store_begin_read:
 * Returns: (transfer full): a read-only snapshot; free it when done.
 */
PgateStoreTxn *pgate_store_begin_read(PgateStore *store, GError **error);
void pgate_store_txn_free(PgateStoreTxn *txn);
/* The transaction's LMDB id.  A write transaction's is one more than the
 * last committed one's: a caller that keeps what it read in its own last
 * transaction can tell whether anyone wrote since (id == its last + 1). */
guint64 pgate_store_txn_id(PgateStoreTxn *txn);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateStoreTxn, pgate_store_txn_free)

/* ---- messages ------------------------------------------------------- */

typedef enum {
	PGATE_MSG_KIND_OTHER = 0,  /* not a reply, no diff, not a cover */
	PGATE_MSG_KIND_PATCH,      /* carries a diff */
	PGATE_MSG_KIND_COVER,      /* 0/N with no diff */
	PGATE_MSG_KIND_REPLY,      /* "Re:" subject: a comment, even with a diff */
	PGATE_MSG_KIND_PULL,       /* git request-pull text */
	PGATE_MSG_KIND_REJECTED,   /* could not be parsed; see reject_reason */
} PgateMsgKind;

const char *pgate_msg_kind_to_string(PgateMsgKind kind);

typedef enum {
	PGATE_MSG_FLAG_SYNTHETIC_ID = 1 << 0, /* Message-ID missing or broken */
	PGATE_MSG_FLAG_ID_CONFLICT = 1 << 1,  /* another message has this ID */
	PGATE_MSG_FLAG_BAD_DATE = 1 << 2,     /* Date missing or unparsable */
	PGATE_MSG_FLAG_SUBJECT_RFC = 1 << 3,
	PGATE_MSG_FLAG_SUBJECT_RESEND = 1 << 4,
	PGATE_MSG_FLAG_BINARY_PATCH = 1 << 5, /* the diff has binary hunks */
	PGATE_MSG_FLAG_AUTOMATED = 1 << 6,    /* Auto-Submitted or bulk/list/junk */
} PgateMsgFlags;

typedef enum {
	PGATE_RAW_INLINE = 0,      /* raw bytes in the store's raw database */
	PGATE_RAW_FILE,            /* raw_ref is a path (quarantined, oversized) */
	PGATE_RAW_GIT_BLOB,        /* raw_ref is "REPO\nOID" (public-inbox) */
} PgateRawLocation;

/* How an INLINE message's bytes are kept in the raw database. */
typedef enum {
	PGATE_RAW_CODEC_NONE = 0,  /* as they are (every store before schema 5) */
	PGATE_RAW_CODEC_ZSTD = 1,  /* one zstd frame with its content size and
				    * checksum (schema 5) */
} PgateRawCodec;

/* The largest raw message the store decompresses: the largest
 * [ingest] max_message_size; a record declaring more is corrupt. */
#define PGATE_STORE_MAX_RAW_SIZE ((guint64)G_MAXINT)

/* ---- zstd dictionaries (schema 6; zdict.c, docs/store-format.md) ----
 *
 * A dictionary trained on a sample of the store's own raw mail is kept in
 * meta; writers compress with the newest one, and a frame names the one
 * it was written with, so a retraining leaves every message readable. */
#define PGATE_STORE_ZDICT_SIZE (110u << 10)      /* what training aims at */
#define PGATE_STORE_ZDICT_MAX_SIZE (1u << 20)    /* a larger one is corrupt */
#define PGATE_STORE_ZDICT_SAMPLES 4000           /* messages sampled */
#define PGATE_STORE_ZDICT_MIN_SAMPLES 16
#define PGATE_STORE_ZDICT_TRAIN_AFTER 2000       /* bulk ingest trains then */

typedef struct {
	guint32 id;              /* 0: none */
	gsize size;
} PgateStoreZdict;

typedef struct {
	guint32 id;              /* the dictionary's ID, as frames name it */
	gsize size;              /* its bytes */
	guint samples;           /* messages it was trained on */
	guint64 sample_bytes;    /* their bytes */
	guint64 compressed;      /* the sample compressed with it, one
				  * message a frame (level 3) */
	guint64 compressed_plain; /* and without it */
	double train_seconds;    /* reading the sample and training */
	double seconds;          /* everything */
} PgateStoreZdictTrained;

/* The dictionary writers use (out_current->id 0: none; its size 0 when
 * the store lacks it, which store verify reports) and how many the store
 * holds. */
gboolean pgate_store_zdict_list(PgateStoreTxn *txn, PgateStoreZdict *out_current,
				guint *out_count, GError **error);
/* Trains a dictionary on up to @max_samples (0: PGATE_STORE_ZDICT_SAMPLES)
 * messages whose raw mail the store holds, spread over the store, and
 * makes it the one writers use (older ones are kept: frames name them).
 * The sample is read in a read transaction, the training holds no lock,
 * the dictionary is written in a short write transaction of its own.
 * PGATE_ERROR_NOT_FOUND when fewer than PGATE_STORE_ZDICT_MIN_SAMPLES
 * messages are there. */
gboolean pgate_store_zdict_train(PgateStore *store, guint max_samples,
				 PgateStoreZdictTrained *out, GError **error);
typedef struct {
	guint64 examined;        /* raw messages looked at */
	guint64 rewritten;       /* compressed again with the current one */
	guint64 unreadable;      /* left as they are (store verify) */
	guint64 bytes_before;    /* what the rewritten ones took, and take */
	guint64 bytes_after;
	guint64 next;            /* where the next batch begins */
	gboolean done;           /* nothing after it (or no dictionary) */
} PgateStoreRecompressed;
/* One batch of `store recompress`, in one write transaction: from
 * message @from on, the inline messages whose frame does not name the
 * current dictionary (compressed without one, or with an older one, or
 * not compressed) are compressed again with it when that is smaller; at
 * most @max rewritten, 8 * @max looked at, 32 MiB of mail read.  Calls
 * in a row, each from the last one's out->next, go through the store
 * while deliveries go on between them; any later run takes up what is
 * left (what is done is skipped, by its frame header alone). */
gboolean pgate_store_recompress(PgateStore *store, guint64 from, guint max,
				PgateStoreRecompressed *out, GError **error);
/* For bulk ingest, after a batch: trains once, when the store holds no
 * dictionary and its raw database holds at least the options'
 * zdict_train_after messages.  Cheap when there is nothing to do; tries
 * once a process.  Deliveries never call it. */
gboolean pgate_store_zdict_auto(PgateStore *store, gboolean *out_trained,
				PgateStoreZdictTrained *out, GError **error);

typedef struct {
	char *name;   /* "Reviewed-by", as written */
	char *value;  /* "A U Thor <a@example.org>" */
} PgateTrailer;

PgateTrailer *pgate_trailer_new(const char *name, const char *value);
void pgate_trailer_free(PgateTrailer *t);

/*
 * A message as the store keeps it: everything later stages need, without
 * the body (the raw message is kept and can be parsed again).
 * Strings are UTF-8, owned by the record; nullable unless said.
 * Message-IDs never have angle brackets.
 */
typedef struct {
	guint64 num;             /* assigned by pgate_store_message_add() */
	char *msgid;             /* never NULL */
	PgateMsgKind kind;
	PgateMsgFlags flags;
	char *in_reply_to;       /* the first ID of In-Reply-To that is not a
				  * From/To/Cc address */
	GPtrArray *references;   /* (element-type utf8): oldest first, no dups,
				  * none a From/To/Cc address (any case) or
				  * the message's own ID */
	char *subject;           /* decoded, whitespace collapsed */
	char *name;              /* subject without Re: and [..] prefixes */
	GPtrArray *prefixes;     /* (element-type utf8): "RFC", "v2", "3/5" ... */
	guint32 version;         /* 1 unless a vN marker says otherwise */
	guint32 number;          /* N of [N/M]; 0 for a cover */
	guint32 total;           /* M of [N/M]; 0 when there is no marker */
	char *from_name;
	char *from_email;        /* never NULL ("" when absent) */
	gint64 date;             /* seconds since the epoch, UTC */
	gint32 tz_minutes;       /* the sender's offset from UTC */
	gint64 received;         /* when patchgate stored it */
	char *list_id;           /* the List-Id's <...> part */
	GPtrArray *more_list_ids; /* (element-type utf8): the List-Ids of
				   * later copies of the message (duplicates
				   * that came through other lists), none
				   * equal to list_id, at most
				   * PGATE_MSG_MAX_LIST_IDS - 1 */
	GPtrArray *to;           /* (element-type utf8): addresses */
	GPtrArray *cc;           /* (element-type utf8) */
	char *pull_url;          /* "URL BRANCH" of a pull request */
	char *patch_id;          /* git patch-id --stable of the diff, hex */
	guint8 content_hash[32]; /* SHA-256 of the content, for duplicates */
	GPtrArray *trailers;     /* (element-type PgateTrailer) */
	char *base_commit;
	char *change_id;
	GPtrArray *prereq_patch_ids;   /* (element-type utf8) */
	GPtrArray *prereq_change_ids;  /* (element-type utf8) */
	GPtrArray *prereq_message_ids; /* (element-type utf8) */
	GPtrArray *depends_on;         /* (element-type utf8): Depends-on: */
	GPtrArray *based_on;           /* (element-type utf8): Based-on: */
	GPtrArray *diff_files;   /* (element-type utf8): paths the diff touches */
	guint diff_sketch_len;   /* hashes in diff_sketch; 0: none (no diff,
				  * or a record stored before them) */
	guint32 diff_sketch[PGATE_DIFF_SKETCH_MAX]; /* the changed lines'
				  * sketch (pgate_diff_sketch()), ascending */
	GPtrArray *linked_msgids; /* (element-type utf8): Message-IDs named as
				   * older versions by archive URLs (lore,
				   * patch.msgid.link) in a cover, or in a
				   * patch's notes below "---": "v1: https://
				   * lore...", b4's "Link to v1:", Patchew's
				   * "Supersedes: <ID>".  Records written
				   * before ref_msgids existed hold every
				   * archive link here. */
	GPtrArray *ref_msgids;   /* (element-type utf8): the other archive
				  * links, neither versions nor dependencies */
	GPtrArray *link_lines;   /* (element-type utf8): why each link was
				  * classified: "KIND ID LINE", KIND one of
				  * version, depends, reference; LINE the text
				  * read (at most 200 bytes) */
	char *reject_reason;     /* set for PGATE_MSG_KIND_REJECTED */
	char *source;            /* "deliver", "mbox:PATH", "maildir:PATH" */
	PgateRawLocation raw_location;
	char *raw_ref;           /* see PgateRawLocation */
	guint64 raw_size;        /* the message's bytes (uncompressed) */
	PgateRawCodec raw_codec; /* set by pgate_store_message_add */
} PgateMessageRec;

/* How many List-Ids a message record keeps (list_id and more_list_ids) */
#define PGATE_MSG_MAX_LIST_IDS 16

/**
 * pgate_message_rec_new:
 * Returns: (transfer full): an empty record, every array allocated.
 */
PgateMessageRec *pgate_message_rec_new(void);
void pgate_message_rec_free(PgateMessageRec *rec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateMessageRec, pgate_message_rec_free)

typedef enum {
	PGATE_STORE_ADDED = 0,       /* a new message */
	PGATE_STORE_DUPLICATE,       /* same Message-ID and content: not stored */
	PGATE_STORE_ADDED_CONFLICT,  /* same Message-ID, other content: kept, flagged */
} PgateStoreAddResult;

/**
 * pgate_store_message_add:
 * @rec: the record; rec->num and rec->received are set here, and
 *   %PGATE_MSG_FLAG_ID_CONFLICT when another message has the same ID
 * @raw: (nullable): the raw message, stored when raw_location is INLINE
 * @out_result: (out): what happened
 *
 * A message whose Message-ID and content_hash equal a stored one's is a
 * duplicate: nothing is written and rec->num is set to the stored number.
 */
gboolean pgate_store_message_add(PgateStoreTxn *txn, PgateMessageRec *rec,
				 GBytes *raw, PgateStoreAddResult *out_result,
				 GError **error);

/**
 * pgate_store_message_delete:
 * @msgid: the Message-ID
 * @content_hash: (array fixed-size=32): which of the messages with @msgid
 * @out_num: (out) (optional): the number the deleted message had
 *
 * Removes a message (record, raw bytes, index entry), as public-inbox's
 * "rm" does.  PGATE_ERROR_NOT_FOUND when no such message is stored.
 */
gboolean pgate_store_message_delete(PgateStoreTxn *txn, const char *msgid,
				    const guint8 *content_hash,
				    guint64 *out_num, GError **error);

/**
 * pgate_store_message_get:
 * Returns: (transfer full) (nullable): the record of message @num, or %NULL
 *   with PGATE_ERROR_NOT_FOUND.
 */
PgateMessageRec *pgate_store_message_get(PgateStoreTxn *txn, guint64 num,
					 GError **error);

/**
 * pgate_store_message_lookup:
 * Returns: (transfer full): the numbers of every message with @msgid, in
 *   the order they were stored (empty when there is none).
 */
GArray *pgate_store_message_lookup(PgateStoreTxn *txn, const char *msgid,
				   GError **error);
/* The same numbers appended to @nums (guint64), for a caller that looks
 * up many IDs with one array. */
gboolean pgate_store_message_lookup_into(PgateStoreTxn *txn,
					 const char *msgid, GArray *nums,
					 GError **error);

/**
 * pgate_store_message_raw:
 * Returns: (transfer full) (nullable): the raw bytes of an INLINE message
 *   (decompressed: schema 5); PGATE_ERROR_NOT_FOUND for others (their
 *   raw_ref says where they are); PGATE_ERROR_CORRUPT for bytes that do
 *   not decompress to the record's raw_size, or over
 *   PGATE_STORE_MAX_RAW_SIZE.
 */
GBytes *pgate_store_message_raw(PgateStoreTxn *txn, guint64 num, GError **error);

/**
 * pgate_store_message_count:
 * Returns: how many messages (duplicates excluded) the store holds.
 */
guint64 pgate_store_message_count(PgateStoreTxn *txn);
/* The number the last message stored was given (deleted or not); 0 when
 * none was ever stored.  Every later message gets a higher one. */
guint64 pgate_store_message_last_num(PgateStoreTxn *txn);

typedef struct {
	PgateStoreTxn *txn;
	guint64 next;
	guint64 unreadable;       /* records stepped over (_next_readable) */
	guint64 first_unreadable; /* the number of the first of them */
} PgateStoreMessageIter;

/* Iterates every message in storage order. */
void pgate_store_message_iter_init(PgateStoreMessageIter *iter,
				   PgateStoreTxn *txn);
/**
 * pgate_store_message_iter_next:
 * @out: (out) (transfer full): the next record
 * Returns: %FALSE at the end (with *out %NULL) or on error.  A record that
 *   does not decode is PGATE_ERROR_CORRUPT ("message N: ..."), and leaves
 *   the iterator past it: calling again goes on with the next message.
 */
gboolean pgate_store_message_iter_next(PgateStoreMessageIter *iter,
				       PgateMessageRec **out, GError **error);
/* Told of each record pgate_store_message_iter_next_readable() steps
 * over: its number and why (PGATE_ERROR_CORRUPT, "message N: ..."). */
typedef void (*PgateStoreUnreadableFunc)(guint64 num, const GError *why,
					 gpointer data);
/* The same, stepping over the records that do not decode: each is counted
 * in @iter (unreadable, first_unreadable) and told to @fn (nullable);
 * any other error ends the iteration as before. */
gboolean pgate_store_message_iter_next_readable(PgateStoreMessageIter *iter,
						PgateMessageRec **out,
						PgateStoreUnreadableFunc fn,
						gpointer data, GError **error);

/* ---- meta: small named values (counters, resume points) -------------- */

gboolean pgate_store_meta_put(PgateStoreTxn *txn, const char *key,
			      const void *val, gsize len, GError **error);
/* Deletes @key; one that is not there is no error. */
gboolean pgate_store_meta_delete(PgateStoreTxn *txn, const char *key,
				 GError **error);
/**
 * pgate_store_meta_get:
 * Returns: (transfer full) (nullable): the value, or %NULL with
 *   PGATE_ERROR_NOT_FOUND.
 */
GBytes *pgate_store_meta_get(PgateStoreTxn *txn, const char *key,
			     GError **error);

/* ---- series: threading's derived state (schema 2) -------------------
 *
 * Everything below is derived from the messages by the threading stage and
 * can be rebuilt from them at any time (pgate_store_derived_clear() and a
 * rethread).  The store only keeps it; what it means is threading's
 * business (docs/threading.md).
 */

typedef enum {
	PGATE_SERIES_KIND_PATCHES = 0,
	PGATE_SERIES_KIND_PULL,
} PgateSeriesKind;

typedef enum {
	PGATE_SERIES_FLAG_COMPLETE = 1 << 0,       /* 1..total all present */
	PGATE_SERIES_FLAG_PARTIAL_REROLL = 1 << 1, /* some patches of vN, each
						    * replying to vN-1's same
						    * number */
} PgateSeriesFlags;

/* One member patch (or the pull request) of a series. */
typedef struct {
	guint32 number;          /* N of [N/M]; 1 for an unnumbered patch */
	guint64 num;             /* message number */
	char *msgid;             /* never NULL */
	char *subject;
	char *patch_id;          /* (nullable) */
	char *replaces;          /* (nullable): Message-ID of the older
				  * version's patch this one re-rolls */
	GPtrArray *trailers;     /* (element-type PgateTrailer): from replies */
} PgateSeriesPatch;

PgateSeriesPatch *pgate_series_patch_new(void);
void pgate_series_patch_free(PgateSeriesPatch *p);

/* A dependency as written: kind is "base-commit", "prerequisite-patch-id",
 * "prerequisite-change-id", "prerequisite-message-id", "depends-on" or
 * "based-on". */
typedef struct {
	char *kind;
	char *value;
} PgateSeriesDep;

PgateSeriesDep *pgate_series_dep_new(const char *kind, const char *value);
void pgate_series_dep_free(PgateSeriesDep *d);

typedef struct {
	char *id;                /* "s" + 12 hex digits; never NULL */
	char *project;           /* the List-Id; "" when absent */
	char *name;              /* subject without prefixes and markers */
	char *submitter_name;
	char *submitter_email;   /* lowercased */
	gint64 date;             /* the first member's Date */
	guint32 version;
	guint32 total;
	PgateSeriesKind kind;
	PgateSeriesFlags flags;
	char *cover;             /* (nullable): the cover letter's Message-ID */
	guint64 cover_num;       /* its message number, 0 without */
	GPtrArray *patches;      /* (element-type PgateSeriesPatch): by number */
	GPtrArray *cover_trailers; /* (element-type PgateTrailer): on the cover */
	char *supersedes;        /* (nullable): series id */
	char *superseded_by;     /* (nullable): series id */
	char *link_reason;       /* (nullable): the rule of supersedes */
	char *resend_of;         /* (nullable): same version sent again */
	char *change_id;         /* (nullable) */
	char *base_commit;       /* (nullable) */
	GPtrArray *deps;         /* (element-type PgateSeriesDep) */
	GPtrArray *replies_into; /* (element-type utf8): ids of series that
				  * this one's messages reply into */
	GPtrArray *replied_by;   /* (element-type utf8): the reverse */
	GPtrArray *linked_msgids; /* (element-type utf8): the members' and the
				   * cover's linked_msgids, sorted, distinct */
	GPtrArray *ref_msgids;   /* (element-type utf8): their ref_msgids
				  * ("references"), sorted, distinct */
} PgateSeriesRec;

PgateSeriesRec *pgate_series_rec_new(void);
void pgate_series_rec_free(PgateSeriesRec *rec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateSeriesRec, pgate_series_rec_free)

/**
 * pgate_store_series_put:
 * Writes @rec under rec->id, replacing what was there.
 */
gboolean pgate_store_series_put(PgateStoreTxn *txn, const PgateSeriesRec *rec,
				GError **error);
/**
 * pgate_store_series_get:
 * Returns: (transfer full) (nullable): the series, or %NULL with
 *   PGATE_ERROR_NOT_FOUND.
 */
PgateSeriesRec *pgate_store_series_get(PgateStoreTxn *txn, const char *id,
				       GError **error);
/* Removes series @id; no error when there is none. */
gboolean pgate_store_series_delete(PgateStoreTxn *txn, const char *id,
				   GError **error);

typedef struct {
	PgateStoreTxn *txn;
	char *last;   /* the id returned last */
	gboolean started;
} PgateStoreSeriesIter;

/* Iterates every series in id order.  Clear with _iter_clear. */
void pgate_store_series_iter_init(PgateStoreSeriesIter *iter,
				  PgateStoreTxn *txn);
/**
 * pgate_store_series_iter_next:
 * @out: (out) (transfer full): the next series
 * Returns: %FALSE at the end (*out %NULL) or on error.
 */
gboolean pgate_store_series_iter_next(PgateStoreSeriesIter *iter,
				      PgateSeriesRec **out, GError **error);
void pgate_store_series_iter_clear(PgateStoreSeriesIter *iter);

/* What a listing sorts and filters series by, read from a record
 * without decoding the rest of it (patches, trailers...). */
typedef struct {
	char *id;
	char *project;        /* (nullable) */
	gint64 date;
	gboolean superseded;  /* it has a superseded_by */
} PgateSeriesBrief;

/* Returns FALSE with @error set to stop pgate_store_series_brief_foreach
 * (which then returns FALSE too).  @b is valid during the call only. */
typedef gboolean (*PgateSeriesBriefFunc)(const PgateSeriesBrief *b,
					 gpointer data, GError **error);
/* Calls @fn for every series, in id order; a record that does not
 * decode is PGATE_ERROR_CORRUPT. */
gboolean pgate_store_series_brief_foreach(PgateStoreTxn *txn,
					  PgateSeriesBriefFunc fn,
					  gpointer data, GError **error);
/**
 * pgate_store_series_dates_foreach:
 * Calls @fn for the series in (date, id) order from the first at or after
 * (@from_date, @from_id) (@from_id %NULL: the first of @from_date), out of
 * the series_dates index, until @fn returns %FALSE: without error, the
 * walk stops there and this returns %TRUE.  A store without the index
 * (written before it; a rethread makes it) sets *@out_absent and calls
 * nothing: then pgate_store_series_brief_foreach() does.
 */
/* A page of the series listing (series list --limit/--since/--after). */
typedef struct {
	gboolean all;             /* superseded series too */
	const char *project;      /* (nullable): only this list-id */
	gboolean has_since;
	gint64 since;             /* only series dated then or later */
	const char *after;        /* (nullable): a cursor, "DATE:ID" */
	guint limit;              /* 0: every series */
	/* (nullable): FALSE leaves series @id out; FALSE with @error set
	 * ends the listing */
	gboolean (*keep)(PgateStoreTxn *txn, const char *id, gpointer data,
			 GError **error);
	gpointer keep_data;
} PgateSeriesQuery;

/**
 * pgate_store_series_page:
 * @out_next: (out) (transfer full): the cursor of the next page, "DATE:ID"
 *   (the last series of this one), or %NULL when this is the last
 * Returns: (transfer full) (element-type utf8): the ids of the series
 *   selected, in (date, id) order: out of series_dates from where the page
 *   starts, else (a store without it) a scan that keeps only the @limit
 *   first; PGATE_ERROR_INVALID for a bad cursor.
 */
GPtrArray *pgate_store_series_page(PgateStoreTxn *txn,
				   const PgateSeriesQuery *q, char **out_next,
				   GError **error);
/* Splits a cursor "DATE:ID" (either out may be %NULL); %FALSE when it is
 * not one. */
gboolean pgate_store_series_cursor_parse(const char *s, gint64 *out_date,
					 char **out_id);
gboolean pgate_store_series_dates_foreach(PgateStoreTxn *txn,
					  gint64 from_date,
					  const char *from_id,
					  PgateSeriesBriefFunc fn,
					  gpointer data, gboolean *out_absent,
					  GError **error);

/* msg_series: which series a message (member or cover) belongs to. */
gboolean pgate_store_msg_series_put(PgateStoreTxn *txn, guint64 num,
				    const char *id, GError **error);
/**
 * pgate_store_msg_series_get:
 * @out: (out) (transfer full): the series id, %NULL when the message is in
 *   none
 * Returns: %FALSE only on error.
 */
gboolean pgate_store_msg_series_get(PgateStoreTxn *txn, guint64 num,
				    char **out, GError **error);
gboolean pgate_store_msg_series_delete(PgateStoreTxn *txn, guint64 num,
				       GError **error);

/* Multi-valued indexes: a string key with sorted distinct values. */
typedef enum {
	PGATE_STORE_INDEX_REFS = 0,  /* referenced Message-ID -> u64 BE num */
	PGATE_STORE_INDEX_CHANGE,    /* change-id -> series id */
	PGATE_STORE_INDEX_PATCHID,   /* patch-id -> series id */
	PGATE_STORE_INDEX_LINK,      /* Message-ID named by a URL in a series'
				      * cover or patch -> series id */
} PgateStoreIndex;

/* Adds @val (@len bytes, at most 480) under @key; adding twice is a no-op. */
gboolean pgate_store_index_add(PgateStoreTxn *txn, PgateStoreIndex idx,
			       const char *key, const void *val, gsize len,
			       GError **error);
/* Removes one value; no error when it is not there. */
gboolean pgate_store_index_remove(PgateStoreTxn *txn, PgateStoreIndex idx,
				  const char *key, const void *val, gsize len,
				  GError **error);
/**
 * pgate_store_index_lookup:
 * Returns: (transfer full) (element-type GBytes): the values under @key,
 *   sorted; empty when none; %NULL on error.
 */
GPtrArray *pgate_store_index_lookup(PgateStoreTxn *txn, PgateStoreIndex idx,
				    const char *key, GError **error);
/* Called with each value of a lookup, borrowed for the call; returns FALSE
 * with *error set to stop the lookup with that error.  It must not read or
 * write the same index (the lookup's cursor is the transaction's, which
 * its puts use too). */
typedef gboolean (*PgateStoreValueFunc)(const void *val, gsize len,
					gpointer data, GError **error);
/* The values under @key, sorted, without copying them. */
gboolean pgate_store_index_foreach(PgateStoreTxn *txn, PgateStoreIndex idx,
				   const char *key, PgateStoreValueFunc fn,
				   gpointer data, GError **error);

/* refs_index, typed: the messages whose References or In-Reply-To name
 * @msgid.  Returns: (transfer full): u64 message numbers, ascending. */
gboolean pgate_store_refs_add(PgateStoreTxn *txn, const char *msgid,
			      guint64 num, GError **error);
gboolean pgate_store_refs_remove(PgateStoreTxn *txn, const char *msgid,
				 guint64 num, GError **error);
GArray *pgate_store_refs_lookup(PgateStoreTxn *txn, const char *msgid,
				GError **error);
gboolean pgate_store_refs_lookup_into(PgateStoreTxn *txn, const char *msgid,
				      GArray *nums, GError **error);

/* name_keys: for each series with a sender, what threading keeps to find
 * "the same sender's series with a similar name within a time window"
 * (its name key hashes: threading/versions.c), by sender, date and series
 * id.  @id is at most 64 bytes; a sender over 400 bytes is hashed like a
 * long Message-ID. */
gboolean pgate_store_name_put(PgateStoreTxn *txn, const char *sender,
			      gint64 date, const char *id, const guint8 *val,
			      gsize len, GError **error);
/* Deleting an entry that is not there is not an error. */
gboolean pgate_store_name_delete(PgateStoreTxn *txn, const char *sender,
				 gint64 date, const char *id, GError **error);
/* @id and @val are borrowed for the call; @id is not NUL-terminated. */
typedef gboolean (*PgateStoreNameFunc)(gint64 date, const char *id,
				       gsize idlen, const guint8 *val,
				       gsize len, gpointer data,
				       GError **error);
/* The entries of @sender dated @from..@to inclusive, by date then id. */
gboolean pgate_store_name_range(PgateStoreTxn *txn, const char *sender,
				gint64 from, gint64 to, PgateStoreNameFunc fn,
				gpointer data, GError **error);

/* author_index: (lowercased sender, date, num), for "the same sender
 * within a time window".  @email should already be lowercased. */
gboolean pgate_store_author_add(PgateStoreTxn *txn, const char *email,
				gint64 date, guint64 num, GError **error);
gboolean pgate_store_author_remove(PgateStoreTxn *txn, const char *email,
				   gint64 date, guint64 num, GError **error);
/**
 * pgate_store_author_range:
 * Returns: (transfer full): the numbers of @email's messages dated
 *   @from..@to inclusive, by date then number; %NULL on error.
 */
GArray *pgate_store_author_range(PgateStoreTxn *txn, const char *email,
				 gint64 from, gint64 to, GError **error);

/* The meta flag "rethread_needed": the databases below are out of date
 * (an upgrade, a deferred or failed threading); `patchgate rethread`
 * rebuilds them and clears it. */
gboolean pgate_store_rethread_needed(PgateStoreTxn *txn);
gboolean pgate_store_set_rethread_needed(PgateStoreTxn *txn, gboolean needed,
					 GError **error);
/* The meta value "threading_failed": why threading failed for good and
 * the mail was stored without it (which also set "rethread_needed"), as
 * opposed to a rethread asked for (an upgrade, ingest --no-thread).
 * (transfer full) (nullable): NULL when not set, or when
 * "rethread_needed" no longer is.  @why NULL clears it. */
char *pgate_store_threading_failed(PgateStoreTxn *txn);
gboolean pgate_store_set_threading_failed(PgateStoreTxn *txn, const char *why,
					  GError **error);

/**
 * pgate_store_derived_dump:
 * Returns: (transfer full): every entry of the databases
 *   pgate_store_derived_clear() empties but series, a line each, "DB KEY
 *   VALUE" (key and value in hex), sorted; a message number in one
 *   (refs_index, author_index, msg_series) is left out of the hex and
 *   shown after it as " <Message-ID>", since numbers go by arrival (series
 *   records hold them too: pgate_threading_dump() shows those without).
 *   For tests, which compare the derived state of two stores.
 */
char *pgate_store_derived_dump(PgateStoreTxn *txn, GError **error);

/**
 * pgate_store_derived_clear:
 * Empties every threading database (refs, author, series, msg_series,
 * change, patchid, name, link), for a rethread.
 */
gboolean pgate_store_derived_clear(PgateStoreTxn *txn, GError **error);

/*
 * Generations (schema 6): the threading databases exist twice, and meta
 * "derived_gen" says which copy is live; every transaction sees the live
 * one.  A rethread fills the other copy in many transactions, between
 * which deliveries go on threading the live one, and makes it live in
 * one commit: readers see the old threading or the new, never half.
 *
 * pgate_store_derived_generation: the live generation (0 or 1).
 * pgate_store_derived_shadow: from now on, in @txn (a write transaction,
 *   before it touched a threading database), the threading databases are
 *   the other generation's, created when missing; derived_clear empties
 *   those.
 * pgate_store_derived_switch: in a shadowed @txn, makes its generation
 *   the live one when @txn commits (marking the store schema 6 when that
 *   is generation 1).  The old generation is still there: empty it in a
 *   later transaction (derived_shadow, derived_clear), or leave it to the
 *   next rethread.
 */
guint pgate_store_derived_generation(PgateStoreTxn *txn);
gboolean pgate_store_derived_shadow(PgateStoreTxn *txn, GError **error);
gboolean pgate_store_derived_switch(PgateStoreTxn *txn, GError **error);

/* ---- tables: the later stages' state (schema 3) ---------------------
 *
 * Two string-keyed tables of opaque values, whose format belongs to the
 * stage that writes them (docs/store-format.md lists them):
 *
 *   stage   per-series state of apply, ci, report and the pipeline, keyed
 *           "SERIES-ID/STAGE/..." so that one series' state is one prefix;
 *   outbox  reports not yet accepted by their server, keyed by the
 *           report's idempotency key.
 *
 * Keys are 1 to 480 bytes (PGATE_ERROR_INVALID otherwise). */
typedef enum {
	PGATE_STORE_TABLE_STAGE = 0,
	PGATE_STORE_TABLE_OUTBOX,
} PgateStoreTable;

typedef struct {
	char *key;
	GBytes *val;
} PgateStoreEntry;

void pgate_store_entry_free(PgateStoreEntry *e);

gboolean pgate_store_table_put(PgateStoreTxn *txn, PgateStoreTable table,
			       const char *key, const void *val, gsize len,
			       GError **error);
/**
 * pgate_store_table_get:
 * Returns: (transfer full): the value, or %NULL with PGATE_ERROR_NOT_FOUND
 *   when there is none.
 */
GBytes *pgate_store_table_get(PgateStoreTxn *txn, PgateStoreTable table,
			      const char *key, GError **error);
/* Removes @key; no error when it is not there. */
gboolean pgate_store_table_delete(PgateStoreTxn *txn, PgateStoreTable table,
				  const char *key, GError **error);
/**
 * pgate_store_table_scan:
 * @prefix: (nullable): only keys that start with it; %NULL for all
 * Returns: (transfer full) (element-type PgateStoreEntry): in key order;
 *   %NULL on error.
 */
GPtrArray *pgate_store_table_scan(PgateStoreTxn *txn, PgateStoreTable table,
				  const char *prefix, GError **error);

/* ---- upstream: what merge detection remembers (store/upstream-db.c) -----
 *
 * One string-keyed database whose keys and values belong to the upstream
 * stage (upstream/upstream.h, docs/store-format.md).  It is created by
 * its first write, so older stores open as they are; a read of a store
 * without it finds nothing.  Keys of any length (a long one is kept
 * hashed, so there is no prefix scan). */

gboolean pgate_store_upstream_put(PgateStoreTxn *txn, const char *key,
				  const void *val, gsize len, GError **error);
/* Returns: (transfer full): the value, or %NULL with PGATE_ERROR_NOT_FOUND
 *   when there is none. */
GBytes *pgate_store_upstream_get(PgateStoreTxn *txn, const char *key,
				 GError **error);
/* The kind, Message-ID and name (the subject without its prefixes; the
 * subject when there is none) of message @num, read from its record
 * without decoding the rest: for a caller that compares many messages'
 * subjects (merge detection's subject rule).  *@out_msgid and *@out_name:
 * (transfer full) (nullable on error; @out_name when neither is kept). */
gboolean pgate_store_message_peek_name(PgateStoreTxn *txn, guint64 num,
				       PgateMsgKind *out_kind,
				       char **out_msgid, char **out_name,
				       GError **error);
/* Removes @key; no error when it is not there. */
gboolean pgate_store_upstream_delete(PgateStoreTxn *txn, const char *key,
				     GError **error);

/* ---- verification ---------------------------------------------------- */

typedef enum {
	PGATE_STORE_VERIFY_BEGIN = 0, /* about to read @database */
	PGATE_STORE_VERIFY_PROBLEM,   /* @database is damaged: @key, @problem */
	PGATE_STORE_VERIFY_END,       /* done with @database: @entries read */
} PgateStoreVerifyEvent;

typedef struct {
	PgateStoreVerifyEvent event;
	const char *database;  /* "messages", "msgid_index" ...; "data.mdb"
				* for the file's header pages and the list
				* of databases */
	const char *key;       /* (nullable): the entry at fault, printable
				* (a message number in decimal, other bytes
				* than printable ASCII as \xNN) */
	const char *problem;   /* PROBLEM: what is wrong */
	guint64 entries;       /* END: how many entries were read */
} PgateStoreVerifyReport;

typedef void (*PgateStoreVerifyFunc)(const PgateStoreVerifyReport *report,
				     gpointer data);

/**
 * pgate_store_verify:
 * @dir: the store directory
 * @opts: (nullable): as for pgate_store_open()
 * @fn: told of each database as it is read and of every problem found
 * @out_problems: (out) (optional): how many problems were found
 *
 * Reads the whole store, read-only, and says what is damaged: the header
 * pages of data.mdb; every database (its pages, by walking each entry,
 * and its count of entries); every message and series record, with the
 * store's own decoders; every index entry against the record it points
 * at (msgid_index both ways, refs_index, author_index, msg_series,
 * change_index, patchid_index, link_index, name_keys); the raw messages
 * against their records; meta's own values.  A store too damaged to be
 * opened is a problem, not an error.
 *
 * Damaged pages can still make LMDB read outside the file (SIGSEGV,
 * SIGBUS) or abort: a caller that must survive that runs this in a
 * process of its own, as `patchgate store verify` does, and the BEGIN
 * reports say where it was.
 *
 * Returns: %FALSE when the store could not be read for another reason
 *   (there is none, its schema is not this build's, permissions).
 */
gboolean pgate_store_verify(const char *dir, const PgateStoreOptions *opts,
			    PgateStoreVerifyFunc fn, gpointer data,
			    guint64 *out_problems, GError **error);

/* ---- active set: the series a pipeline pass must visit (active.c) ---
 *
 * pgate_store_series_put() and pgate_store_series_delete() mark the series
 * they write; so does anything else that changes what a pass would decide
 * (pgate_store_active_mark).  A pass lists the set, visits those series,
 * and settles them: an entry stays while its series needs more passes
 * (@keep), and is removed once it does not, unless it was marked again
 * since it was listed (its mark differs).  The set is complete only while
 * it holds the token the pipeline gave it (pgate_store_active_complete);
 * a store without one (written before the set, or after a rethread)
 * needs a pass over every series first.
 */
typedef struct {
	char *id;
	guint64 mark;	/* the id of the transaction that marked it */
} PgateStoreActive;

void pgate_store_active_free(PgateStoreActive *a);
gboolean pgate_store_active_mark(PgateStoreTxn *txn, const char *id,
				 GError **error);
/* Returns: (transfer full) (element-type PgateStoreActive): the set (empty
 *   when the store has none); @out_token: its token, or %NULL. */
GPtrArray *pgate_store_active_list(PgateStoreTxn *txn, GBytes **out_token,
				   GError **error);
gboolean pgate_store_active_settle(PgateStoreTxn *txn, const char *id,
				   guint64 mark, gboolean keep,
				   GError **error);
/* Stores @token (nullable: forgets it, the set is then incomplete). */
gboolean pgate_store_active_complete(PgateStoreTxn *txn, GBytes *token,
				     GError **error);
/* Commits after pgate_store_defer_sync(@store, TRUE) sync their data but
 * not LMDB's meta page (one sync instead of two): a system crash may undo
 * the last of them, never tear the store; pgate_store_sync() makes them
 * all durable.  For a long pass of many small commits (a first pass: one
 * a series); what follows it, such as sending the outbox, runs after the
 * sync. */
void pgate_store_defer_sync(PgateStore *store, gboolean defer);
gboolean pgate_store_sync(PgateStore *store, GError **error);

/* ---- the vocabulary (docs.c) ----
 *
 * What every layer says of a series, defined once: the stages produce
 * it (apply/ an apply status, ci/ a job state and a verdict), the
 * pipeline moves a series through the states, report/ and the site show
 * it, and each name below is the one the documents, the JSON output and
 * the checks use.  Each enum has one name table, in docs.c.
 */

/* Where a series is in the pipeline (SERIES/pipeline "state"). */
typedef enum {
	PGATE_SERIES_NEW = 0,          /* never looked at */
	PGATE_SERIES_WAITING,          /* not complete yet */
	PGATE_SERIES_INCOMPLETE,       /* still not: reported */
	PGATE_SERIES_AWAITING_APPROVAL,
	PGATE_SERIES_REJECTED,
	PGATE_SERIES_SKIPPED,          /* nothing to apply */
	PGATE_SERIES_APPLY_FAILED,
	PGATE_SERIES_TESTING,          /* CI jobs in flight */
	PGATE_SERIES_DONE,
	PGATE_SERIES_SUPERSEDED,
	PGATE_SERIES_MERGED,           /* every patch upstream */
	PGATE_SERIES_SUPERSEDED_BY_MERGE, /* a newer version merged */
} PgateSeriesState;
#define PGATE_SERIES_STATE_LAST PGATE_SERIES_SUPERSEDED_BY_MERGE

/* (transfer none): "new", "waiting", "incomplete", "awaiting-approval",
 * "rejected", "skipped", "apply-failed", "testing", "done",
 * "superseded", "merged", "superseded-by-merge" */
const char *pgate_series_state_name(PgateSeriesState state);
/* %FALSE when @s (nullable) names no state. */
gboolean pgate_series_state_parse(const char *s, PgateSeriesState *out);
/* Whether a pass leaves a series in @state alone (incomplete: unless its
 * missing patches came after all). */
gboolean pgate_series_state_is_final(PgateSeriesState state);

/* A CI job's state: what a backend says of it, and "submitting" (stored
 * before the backend was asked; no backend says it). */
typedef enum {
	PGATE_JOB_SUBMITTING = 0,
	PGATE_JOB_QUEUED,      /* accepted, not started */
	PGATE_JOB_RUNNING,
	PGATE_JOB_DONE,        /* verdict is set */
	PGATE_JOB_LOST,        /* the backend no longer knows the handle
				* (local job killed with its process,
				* Jenkins queue item expired before we saw
				* its build): submit again */
} PgateJobState;

/* "submitting", "queued", "running", "done", "lost" */
const char *pgate_job_state_name(PgateJobState state);
gboolean pgate_job_state_parse(const char *s, PgateJobState *out);

/* A CI job's verdict. */
typedef enum {
	PGATE_VERDICT_NONE = 0,  /* not finished */
	PGATE_VERDICT_SUCCESS,
	PGATE_VERDICT_WARNING,   /* passed, but worse than the base (new
				  * warnings) or Jenkins UNSTABLE */
	PGATE_VERDICT_FAIL,      /* the series broke something, or the job
				  * was aborted/cancelled: see reason */
	PGATE_VERDICT_ERROR,     /* the job could not run (sandbox, checkout,
				  * a limit of ours): not the series' fault */
} PgateVerdict;

/* "none", "success", "warning", "fail", "error" */
const char *pgate_verdict_name(PgateVerdict verdict);
gboolean pgate_verdict_parse(const char *s, PgateVerdict *out);

/* What became of an apply attempt. */
typedef enum {
	PGATE_APPLY_OK = 0,          /* every patch applied */
	PGATE_APPLY_FAILED,          /* a patch did not apply: failed_* say
				      * where; patches before it applied */
	PGATE_APPLY_ALREADY_APPLIED, /* no failure, but at least one patch was
				      * already on the base branch (same
				      * patch-id, or same subject touching a
				      * same path) and was skipped */
	PGATE_APPLY_REJECTED,        /* a patch is unsafe or over a limit:
				      * refused by the static checks, before
				      * anything was applied; or, for a write
				      * beneath a symlink or a gitlink of the
				      * tree, when its turn came (the patches
				      * before it applied) */
	PGATE_APPLY_NOT_MADE,        /* "error": the attempt could not be
				      * made (no such branch): ours, never
				      * the series' (the apply stage never
				      * returns it) */
} PgateApplyStatus;

/* "ok", "failed", "already-applied", "rejected", "error" */
const char *pgate_apply_status_name(PgateApplyStatus status);
gboolean pgate_apply_status_parse(const char *s, PgateApplyStatus *out);

/* A check's state, as Patchwork (and b4's protocol) name them. */
typedef enum {
	PGATE_CHECK_PENDING = 0,
	PGATE_CHECK_SUCCESS,
	PGATE_CHECK_WARNING,
	PGATE_CHECK_FAIL,
} PgateCheckState;

/* "pending", "success", "warning", "fail" */
const char *pgate_check_state_name(PgateCheckState state);
gboolean pgate_check_state_parse(const char *s, PgateCheckState *out);

/* ---- the series' documents (docs.c) ----
 *
 *   SERIES/pipeline         PgateSeriesDoc: where the series is
 *   SERIES/apply/TARGET     PgateApplyDoc: one apply attempt
 *   SERIES/ci/TARGET/JOB    PgateCiDoc: one CI job
 *
 * Each is a JSON object (compact, keys sorted) in the stage table,
 * encoded and decoded in docs.c only.  A struct holds the fields this
 * version knows; its presence bits (@has) tell a field left out from one
 * that is null, and @unknown keeps the rest as it was (fields this
 * version does not know, and known ones whose value is not of the type
 * it writes), so that encoding what was decoded gives the bytes that
 * were read (tests/pipeline proves it on documents the JSON-only code
 * wrote).  Arrays own their elements (made with the _new functions
 * below).  docs/pipeline.md describes the fields.
 */

/* -- SERIES/apply/TARGET -- */

typedef enum {
	PGATE_APPLY_DOC_STATUS = 1 << 0,
	PGATE_APPLY_DOC_HEAD = 1 << 1,
	PGATE_APPLY_DOC_REROLL_OF = 1 << 2,
	PGATE_APPLY_DOC_AT = 1 << 3,
} PgateApplyDocFields;

typedef struct {
	char *msgid;
	char *state;        /* apply/'s patch state: "applied", "failed", ... */
	char *commit;       /* (nullable) */
	char *upstream;     /* (nullable): where it was applied already */
} PgateApplyDocPatch;

PgateApplyDocPatch *pgate_apply_doc_patch_new(const char *msgid,
							const char *state,
							const char *commit,
							const char *upstream);
void pgate_apply_doc_patch_free(PgateApplyDocPatch *p);

typedef struct {
	gint64 patch;       /* 1-based; 0: none */
	char *file;         /* (nullable) */
	gint64 hunk;
	char *reason;       /* (nullable) */
} PgateApplyFailure;

PgateApplyFailure *pgate_apply_failure_new(gint64 patch,
							    const char *file,
							    gint64 hunk,
							    const char *reason);
void pgate_apply_failure_free(PgateApplyFailure *f);

typedef struct {
	char *target;                 /* (nullable): "master", "base-commit" */
	char *base;                   /* (nullable): what it was applied on */
	PgateApplyStatus status;          /* (STATUS) */
	char *base_commit;            /* (nullable) */
	GPtrArray *commits;           /* (nullable) (element-type utf8):
				       * one per applied patch, oldest first */
	GPtrArray *patches;           /* (nullable) (element-type
				       * PgateApplyDocPatch) */
	char *head;                   /* (nullable) (HEAD) */
	GPtrArray *prerequisites;     /* (nullable) (element-type utf8):
				       * series applied first */
	char *reroll_of;              /* (nullable) (REROLL_OF) */
	gint64 at;                    /* (AT) */
	PgateApplyFailure *failure;   /* (nullable) */
	/* (nullable): left out when NULL */
	char *prerequisites_dropped, *ref, *pushed_to, *publish_error;
	/* (nullable): the routing rule that chose this target ("tag",
	 * pgate_route_rule_to_string()) and why; left out when NULL (no
	 * routing key set, the implicit project) */
	char *route, *route_why;
	PgateApplyDocFields has;
	json_t *unknown;              /* (nullable) */
} PgateApplyDoc;

PgateApplyDoc *pgate_apply_doc_new(void);
void pgate_apply_doc_free(PgateApplyDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateApplyDoc,
			      pgate_apply_doc_free)
/* Returns: (transfer full): the document stored as @val, or %NULL with
 * PGATE_ERROR_INVALID when it is no JSON object. */
PgateApplyDoc *pgate_apply_doc_decode(GBytes *val,
						       GError **error);
/* Returns: (transfer full): the stored text. */
char *pgate_apply_doc_encode(const PgateApplyDoc *doc);
/* Returns: (transfer full): the document as JSON, its fields in the
 * order the apply stage always wrote them (what `apply --json` shows). */
json_t *pgate_apply_doc_to_json(const PgateApplyDoc *doc);
/* Stores @doc as SERIES/apply/TARGET (@doc->target). */
gboolean pgate_apply_doc_put(PgateStoreTxn *txn, const char *sid,
				      const PgateApplyDoc *doc,
				      GError **error);
/* Whether the attempt applied (ok, or already-applied): and with
 * commits, something to test. */
gboolean pgate_apply_doc_applied(const PgateApplyDoc *doc);
gboolean pgate_apply_doc_testable(const PgateApplyDoc *doc);

/* -- SERIES/ci/TARGET/JOB -- */

typedef enum {
	PGATE_CI_DOC_SUBMITTED = 1 << 0,
	PGATE_CI_DOC_VERDICT = 1 << 1,
	PGATE_CI_DOC_REASON = 1 << 2,
	PGATE_CI_DOC_SUMMARY = 1 << 3,
	PGATE_CI_DOC_URL = 1 << 4,
	PGATE_CI_DOC_LOG_PATH = 1 << 5,
	PGATE_CI_DOC_TESTS = 1 << 6,
	PGATE_CI_DOC_WARNINGS_ADDED = 1 << 7,
	PGATE_CI_DOC_FINISHED = 1 << 8,
} PgateCiDocFields;

typedef struct {
	char *commit;
	PgateVerdict verdict;
	char *reason;       /* (nullable) */
} PgateCiDocCommit;

PgateCiDocCommit *pgate_ci_doc_commit_new(const char *commit,
						    PgateVerdict verdict,
						    const char *reason);
void pgate_ci_doc_commit_free(PgateCiDocCommit *c);

typedef struct {
	char *key;          /* (nullable): where it is stored
			     * (SERIES/ci/TARGET/JOB); not in the document */
	/* (nullable): left out when NULL */
	char *backend, *job, *target, *trigger_id, *handle, *head;
	PgateJobState state;
	gint64 submitted;                 /* (SUBMITTED) */
	PgateVerdict verdict;           /* (VERDICT) */
	char *reason, *summary, *url, *log_path;  /* (nullable) (REASON...) */
	gint64 tests_total, tests_failed, tests_skipped;  /* (TESTS) */
	gint64 warnings_added;            /* (WARNINGS_ADDED) */
	GPtrArray *commits;               /* (nullable) (element-type
					   * PgateCiDocCommit): per patch */
	gint64 finished;                  /* (FINISHED) */
	gboolean cancelled;               /* left out when FALSE */
	PgateCiDocFields has;
	json_t *unknown;                  /* (nullable) */
} PgateCiDoc;

PgateCiDoc *pgate_ci_doc_new(void);
void pgate_ci_doc_free(PgateCiDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiDoc, pgate_ci_doc_free)
/* As pgate_apply_doc_decode(); also PGATE_ERROR_INVALID without
 * a known "state".  @key: (nullable): where it was read, kept in ->key. */
PgateCiDoc *pgate_ci_doc_decode(GBytes *val, const char *key,
						 GError **error);
char *pgate_ci_doc_encode(const PgateCiDoc *doc);
json_t *pgate_ci_doc_to_json(const PgateCiDoc *doc);
/* Stores @doc under @doc->key. */
gboolean pgate_ci_doc_put(PgateStoreTxn *txn,
				   const PgateCiDoc *doc,
				   GError **error);

/* -- SERIES/pipeline -- */

typedef enum {
	PGATE_SERIES_DOC_SINCE = 1 << 0,
	PGATE_SERIES_DOC_REASON = 1 << 1,
	PGATE_SERIES_DOC_APPROVED_BY = 1 << 2,
	PGATE_SERIES_DOC_REJECTED_BY = 1 << 3,
	PGATE_SERIES_DOC_DECIDED = 1 << 4,
	PGATE_SERIES_DOC_APPROVED_UPTO = 1 << 5,
} PgateSeriesDocFields;

typedef struct {
	gint64 at;
	PgateSeriesState state;
	char *reason;       /* (nullable) */
} PgateSeriesEvent;

PgateSeriesEvent *pgate_series_event_new(gint64 at,
					     PgateSeriesState state,
					     const char *reason);
void pgate_series_event_free(PgateSeriesEvent *e);

/* The number of events a document keeps (the newest). */
#define PGATE_SERIES_EVENTS_MAX 32

typedef struct {
	PgateSeriesState state;
	gint64 since;                 /* (SINCE): when it was entered */
	char *reason;                 /* (nullable) (REASON) */
	GPtrArray *events;            /* (nullable) (element-type
				       * PgateSeriesEvent): oldest first */
	GPtrArray *apply;             /* (nullable) (element-type
				       * PgateApplyDoc): the attempts
				       * as they were at the move */
	gboolean approved, rejected;  /* left out when FALSE */
	char *approved_by, *rejected_by;  /* (nullable) (APPROVED_BY...) */
	/* what an approval saw (docs/pipeline.md, "What an approval
	 * covers"): the messages of the store up to approved_upto (the
	 * approving reply's number less one, the store's last at
	 * `patchgate approve`) (APPROVED_UPTO), narrowed by the first pass
	 * that acts on it to the records the series was then made of */
	gint64 approved_upto;
	GArray *approved_msgs;        /* (nullable) (element-type guint64):
				       * those records; NULL: not fixed yet */
	char *decision_note;          /* (nullable): left out when NULL */
	gint64 decided;               /* (DECIDED) */
	PgateSeriesDocFields has;
	json_t *unknown;              /* (nullable) */
} PgateSeriesDoc;

/* A document in @state with no other field. */
PgateSeriesDoc *pgate_series_doc_new(PgateSeriesState state);
void pgate_series_doc_free(PgateSeriesDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateSeriesDoc, pgate_series_doc_free)
/* Records an approval by @who that saw the store's messages up to number
 * @upto (the approving reply's, or the store's last at `patchgate
 * approve`); the records it covers are fixed by the next pass. */
void pgate_series_doc_approve(PgateSeriesDoc *doc, const char *who,
				gint64 upto);
/* As pgate_ci_doc_decode(). */
PgateSeriesDoc *pgate_series_doc_decode(GBytes *val, GError **error);
char *pgate_series_doc_encode(const PgateSeriesDoc *doc);
json_t *pgate_series_doc_to_json(const PgateSeriesDoc *doc);
/* Returns: (transfer full) (nullable): SERIES/pipeline of @sid, %NULL
 * without error when there is none. */
PgateSeriesDoc *pgate_series_doc_get(PgateStoreTxn *txn, const char *sid,
					 GError **error);
gboolean pgate_series_doc_put(PgateStoreTxn *txn, const char *sid,
				const PgateSeriesDoc *doc, GError **error);

/* -- every document of a series -- */

typedef struct {
	PgateSeriesDoc *pipeline;   /* (nullable) */
	GPtrArray *apply;             /* (element-type PgateApplyDoc) */
	GPtrArray *ci;                /* (element-type PgateCiDoc) */
} PgateSeriesDocs;

/* Returns: (transfer full): the documents of series @sid, each kind in
 * key order; a document that does not decode is left out (logged). */
PgateSeriesDocs *pgate_series_docs_read(
	PgateStoreTxn *txn, const char *sid, GError **error);
void pgate_series_docs_free(PgateSeriesDocs *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateSeriesDocs,
			      pgate_series_docs_free)
/* (transfer none) (nullable): its attempt on @target. */
PgateApplyDoc *pgate_series_docs_apply(
	const PgateSeriesDocs *s, const char *target);

/* -- raw documents --
 *
 * For what has no struct (the Patchwork IDs in SERIES/patchwork, the mail
 * rate history in _email/rate/ADDRESS, the outbox's entries) and for
 * showing stored documents as they are. */

/* State IDs: a series' documents are kept under its ID for the implicit
 * project and under "SID@NAME" for [project NAME] (SID@NAME/pipeline,
 * SID@NAME/apply/TARGET, pw/SID@NAME/CONTEXT in the outbox).
 * Returns: (transfer full): the series ID of a state ID, *@project the
 * project's name in @state_id (%NULL: the implicit project). */
char *pgate_project_split_state_id(const char *state_id,
				   const char **project);
/* (transfer none) (nullable): the project's name in @state_id (nullable),
 * %NULL for the implicit project's. */
const char *pgate_project_of_state_id(const char *state_id);

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


G_END_DECLS
