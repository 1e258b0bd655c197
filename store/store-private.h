/* store-private.h - shared between the store's own files only.
 *
 *   env.c      the LMDB environment, locks, transactions, pgate_store_write,
 *              schema upgrades, meta; LMDB's errors translated
 *   message.c  messages, raw bytes, msgid_index; the string keys
 *   index.c    series and threading's derived indexes
 *   table.c    the stage and outbox tables
 *   record.c   message and series records, encoded and decoded
 *   verify.c   store verify, and the check of data.mdb's header at open
 */
#pragma once

#include "store/store.h"

#include <lmdb.h>

/* The databases, opened once by pgate_store_open() (env.c's table holds
 * their names and flags; docs/store-format.md their formats). */
enum {
	DBI_META,
	DBI_MESSAGES,
	DBI_RAW,
	DBI_MSGID_INDEX,
	DBI_REFS_INDEX,
	DBI_AUTHOR_INDEX,
	DBI_SERIES,
	DBI_MSG_SERIES,
	DBI_CHANGE_INDEX,
	DBI_PATCHID_INDEX,
	DBI_NAME_KEYS,
	DBI_LINK_INDEX,
	DBI_STAGE,
	DBI_OUTBOX,
	DBI_COUNT,
};

/* The name of database @which ("messages"), and its flags. */
const char *pgate_store__db_name(int which);
unsigned int pgate_store__db_flags(int which);

/* Told of each entry of a walk, borrowed for the call (valid until the
 * transaction ends); returns FALSE with *error set to stop the walk. */
typedef gboolean (*PgateStoreEntryFunc)(const guint8 *key, gsize klen,
					const guint8 *val, gsize vlen,
					gpointer data, GError **error);
/* Every entry of database @which in key order (each duplicate of a
 * DUPSORT database), with *@out_count the number walked and
 * *@out_recorded the number the database records it holds.  An error of
 * LMDB (damaged pages) is PGATE_ERROR_CORRUPT. */
gboolean pgate_store__walk(PgateStoreTxn *txn, int which,
			   PgateStoreEntryFunc fn, gpointer data,
			   guint64 *out_count, guint64 *out_recorded,
			   GError **error);
/* The value under @key in database @which (the first duplicate),
 * borrowed until the transaction ends; %FALSE with PGATE_ERROR_NOT_FOUND
 * when there is none. */
gboolean pgate_store__peek(PgateStoreTxn *txn, int which, const void *key,
			   gsize klen, const guint8 **out_val, gsize *out_len,
			   GError **error);
/* Whether DUPSORT database @which holds exactly @val under @key. */
gboolean pgate_store__has_dup(PgateStoreTxn *txn, int which, const void *key,
			      gsize klen, const void *val, gsize vlen,
			      gboolean *out, GError **error);
/* The key a Message-ID (or another string: a series id, a change-id)
 * has in the string-keyed databases: itself, or \x01 and its SHA-256
 * when empty or over PGATE_STORE__MAX_PLAIN_KEY bytes.  Returns its
 * length; *@out points at @s or at @buf (message.c). */
#define PGATE_STORE__HASHED_KEY_LEN 33
#define PGATE_STORE__MAX_PLAIN_KEY 480
gsize pgate_store__str_key(const char *s, guint8 buf[PGATE_STORE__HASHED_KEY_LEN],
			   const void **out);
/* \x01 and the SHA-256 of @len bytes at @s, into @buf; returns
 * PGATE_STORE__HASHED_KEY_LEN. */
gsize pgate_store__hashed_key(const char *s, gsize len,
			      guint8 buf[PGATE_STORE__HASHED_KEY_LEN]);

/* The header of data.mdb: its two meta pages, which LMDB trusts without
 * checking more than their magic number (a page number or size in them
 * that is wrong makes it read past the file: SIGBUS).  Appends to
 * @problems (element-type utf8) what is wrong with them, and sets
 * *@out_usable to %FALSE when opening the store would read a damaged
 * one.  A file that is missing or empty has no header yet (a new store):
 * no problem.  Returns %FALSE only when the file cannot be read. */
gboolean pgate_store__check_header(const char *path, GPtrArray *problems,
				   gboolean *out_usable, GError **error);

/* A growing buffer that records are encoded into, again and again: the
 * store keeps one for its writes, so a put allocates nothing. */
typedef struct {
	guint8 *data;
	gsize len;
	gsize cap;
} PgateStoreBuf;

/* ---- the environment and its transactions (env.c) ---- */

struct PgateStore {
	MDB_env *env;
	char *dir;
	int lock_fd;          /* write.lock: writers flock() it exclusively */
	int want_fd;          /* write.want: writers waiting for write.lock
			       * flock() it shared (env.c, lock_writer) */
	gboolean wrote;       /* this process held write.lock before */
	gint steps;           /* records read or written: pgate_store__step */
	gboolean nolock;      /* read-only without lock.mdb (MDB_NOLOCK): its
			       * read transactions hold write.lock shared */
	guint read_locks;     /* how many of them are open */
	PgateStoreOptions opts;
	PgateStoreFlags flags;
	MDB_dbi dbi[DBI_COUNT];
	guint schema;
	gsize released_pgno;  /* the store's last page when this process last
			       * dropped the map's pages (release_pages) */
	PgateStoreBuf enc;    /* records are encoded here (the writer's) */
	/* raw mail is compressed with these (the writer's; message.c) */
	struct ZSTD_CCtx_s *zcctx;
	PgateStoreBuf zbuf;
	/* zstd dictionaries (zdict.c): the writer's, digested once a
	 * process; the readers', by ID (under zdict.c's lock) */
	struct ZSTD_CDict_s *zcdict;
	guint32 zcdict_id;
	GHashTable *zddicts;
	gboolean zdict_auto_done;
};

struct PgateStoreTxn {
	PgateStore *store;
	MDB_txn *txn;
	gboolean map_full;   /* an operation hit MDB_MAP_FULL: grow, retry */
	gboolean read_locked; /* holds one of store->read_locks */
	/* one cursor a database, opened by the first lookup that needs it
	 * and repositioned by every later one (pgate_store__txn_cursor):
	 * threading makes several lookups a message, and a cursor is a
	 * malloc and a free */
	MDB_cursor *cursors[DBI_COUNT];
	/* upstream.c's database, opened by its first use in this
	 * transaction (it is created by the first write, not at open) */
	MDB_dbi upstream_dbi;
	gboolean upstream_open;
	/* index.c's series_dates, likewise (0: not looked for yet, 1: open,
	 * -1: absent) */
	MDB_dbi dates_dbi;
	int dates_state;
	/* the databases this transaction sees: the store's, with the derived
	 * ones (threading's) of generation @gen, the live one (meta
	 * "derived_gen") or, for a rethread, the other (index.c) */
	MDB_dbi dbi[DBI_COUNT];
	guint gen;
	gboolean shadow;
};

/* Drops the pages of the store's map from this process's resident memory
 * when more than 64 MiB of them are (they stay in the page cache; env.c). */
void pgate_store__trim(PgateStore *store);

/* Counts a record read or written (a message, a series, an entry of a
 * walk, a cursor's lookup), in this process across its transactions, and
 * every 512 trims the map's pages (pgate_store__trim: a look at
 * /proc/self/statm): a listing reads some 100 KB of pages a series, and a
 * pass over every series reads each in a short transaction of its own,
 * while a delivery, mostly a few dozen records, seldom looks. */
static inline void
pgate_store__step(PgateStoreTxn *t)
{
	if (((guint)g_atomic_int_add(&t->store->steps, 1) & 511) == 511)
		pgate_store__trim(t->store);
}

/* Translates an LMDB error once, here at the boundary: sets @error
 * ("@what: message") and returns %FALSE. */
gboolean pgate_store__mdb_error(GError **error, int rc, const char *what);
/* Notes a full map on the transaction so that pgate_store_write() grows
 * the map and retries, then reports the error like any other. */
/* The error of a store that cannot be opened at @dir for errno @e:
 * "no store at DIR" only when there is none (ENOENT, ENOTDIR). */
void pgate_store__missing(GError **error, const char *dir, int e);
gboolean pgate_store__txn_fail(PgateStoreTxn *t, GError **error, int rc,
			       const char *what);

/* The transaction's cursor on database @which (transfer none): valid
 * until the transaction ends (env.c closes them).  Every user positions
 * it first (MDB_SET, MDB_SET_RANGE, MDB_FIRST...), so what an earlier
 * user left does not matter; LMDB keeps a write transaction's cursors
 * valid across its puts and deletes. */
static inline int
pgate_store__txn_cursor(PgateStoreTxn *t, int which, MDB_cursor **out)
{
	int rc = 0;

	pgate_store__step(t);
	if (t->cursors[which] == NULL)
		rc = mdb_cursor_open(t->txn, t->dbi[which],
				     &t->cursors[which]);
	*out = t->cursors[which];
	return rc;
}

/* mdb_put() through the transaction's cursor of the database: LMDB
 * starts the search from the cursor's leaf page when the key falls in
 * it, where mdb_put() descends from the root every time, and the puts of
 * one transaction often land next to the one before (message numbers,
 * one sender's messages, one series's members). */
static inline int
pgate_store__txn_put(PgateStoreTxn *t, int which, MDB_val *k, MDB_val *v,
		     unsigned int flags)
{
	MDB_cursor *cur;
	int rc = pgate_store__txn_cursor(t, which, &cur);

	return rc != 0 ? rc : mdb_cursor_put(cur, k, v, flags);
}

/* Sets up @t's databases (t->dbi) once it has begun: the derived ones
 * of the live generation (index.c). */
gboolean pgate_store__txn_dbis(PgateStoreTxn *t, GError **error);
/* @base ("series_dates") as generation @gen names it, into @buf. */
const char *pgate_store__gen_name(guint gen, const char *base, char buf[64]);

/* Rebuilds msgid_index from the message records (message.c): the upgrade
 * from schema 0. */
gboolean pgate_store__msgid_index_rebuild(PgateStoreTxn *t, GError **error);

/* Record encoding (docs/store-format.md, "messages"): @out is emptied
 * first. */
void pgate_store__rec_encode(PgateStoreBuf *out, const PgateMessageRec *rec);
/* (transfer full): the message of @rec's raw_size bytes, from the @len
 * bytes of its `raw` value kept with @rec's raw_codec (message.c).  A
 * value that does not decompress to exactly raw_size bytes (at most
 * PGATE_STORE_MAX_RAW_SIZE), or whose frame checksum is wrong, is
 * PGATE_ERROR_CORRUPT; nothing larger than raw_size is allocated. */
GBytes *pgate_store__raw_decode(PgateStoreTxn *t, const PgateMessageRec *rec,
				const guint8 *val, gsize len, GError **error);
/* zstd dictionaries (zdict.c).  The digested dictionary @id for
 * decompression, loaded from meta by the first use in the process
 * (transfer none); PGATE_ERROR_CORRUPT when the store does not hold it. */
const struct ZSTD_DDict_s *pgate_store__zdict_ddict(PgateStoreTxn *t,
						     guint32 id, GError **error);
/* *@out: the current dictionary digested for compression (transfer none),
 * NULL when there is none. */
gboolean pgate_store__zdict_cdict(PgateStoreTxn *t,
				  const struct ZSTD_CDict_s **out,
				  GError **error);
void pgate_store__zdict_cleanup(PgateStore *store);
/* For store verify: %TRUE when meta key @key is zdict.c's, with
 * *@out_problem (transfer full) what is wrong with its value, or NULL. */
gboolean pgate_store__zdict_check_meta(PgateStoreTxn *t, const guint8 *key,
				       gsize klen, const guint8 *val,
				       gsize vlen, char **out_problem);
/* Marks the store of schema PGATE_STORE_SCHEMA_COMPAT this build's
 * schema, in @t, when it is not yet (env.c): before the first record
 * that an older build would misread. */
gboolean pgate_store__mark_current(PgateStoreTxn *t, GError **error);
/* Frees what message.c keeps in @store (pgate_store_free). */
void pgate_store__message_cleanup(PgateStore *store);
/* The raw bytes are compressed, at this zstd level, when they are at
 * least this long (smaller ones are kept as they are). */
#define PGATE_STORE__ZSTD_LEVEL 3
#ifndef PGATE_STORE__ZSTD_MIN  /* (bench: -DPGATE_STORE__ZSTD_MIN=G_MAXSIZE, none) */
#define PGATE_STORE__ZSTD_MIN 64
#endif
PgateMessageRec *pgate_store__rec_decode(const guint8 *data, gsize len,
					 GError **error);
/* Series records (docs/store-format.md, "series"). */
void pgate_store__series_encode(PgateStoreBuf *out, const PgateSeriesRec *rec);
PgateSeriesRec *pgate_store__series_decode(const guint8 *data, gsize len,
					   GError **error);
/* Only the fields of a PgateSeriesBrief; the caller frees b->id and
 * b->project. */
gboolean pgate_store__series_brief(const guint8 *data, gsize len,
				   PgateSeriesBrief *b, GError **error);

static inline void
pgate_store__be64(guint8 out[8], guint64 v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (guint8)(v & 0xff);
		v >>= 8;
	}
}

static inline guint64
pgate_store__get_be64(const guint8 *p)
{
	guint64 v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline void
put_be32(guint8 out[4], guint32 v)
{
	out[0] = (guint8)(v >> 24);
	out[1] = (guint8)(v >> 16);
	out[2] = (guint8)(v >> 8);
	out[3] = (guint8)v;
}

static inline guint32
get_be32(const guint8 *p)
{
	return ((guint32)p[0] << 24) | ((guint32)p[1] << 16) |
	       ((guint32)p[2] << 8) | p[3];
}
