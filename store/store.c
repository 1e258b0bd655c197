/* store.c - the LMDB environment, transactions and message databases.
 *
 * Databases (see docs/store-format.md):
 *   meta         string key -> value ("schema_version" u32 BE,
 *                "next_msgnum" u64 BE, resume points of later stages)
 *   messages     u64 BE message number -> record (record.c)
 *   raw          u64 BE message number -> the raw message bytes
 *   msgid_index  Message-ID -> sorted duplicates of
 *                [u64 BE number | 32-byte content hash]
 *
 * and, since schema 2, threading's derived state (rebuildable):
 *   refs_index   referenced Message-ID -> dups of u64 BE number
 *   author_index lowercased email \0 i64 BE date (sign-flipped) u64 BE num
 *                -> empty
 *   series       series id -> series record (record.c)
 *   msg_series   u64 BE number -> series id
 *   change_index change-id -> dups of series id
 *   patchid_index patch-id -> dups of series id
 *   name_keys    sender \0 i64 BE date (sign-flipped) series id ->
 *                threading's name key hashes of the series
 *
 * Keys longer than LMDB's limit (511 bytes) are replaced by "\x01" and the
 * SHA-256 of the Message-ID.
 */
#include "store/store-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

G_DEFINE_QUARK(pgate-store-error-quark, pgate_store_error)

static const struct {
	const char *name;
	unsigned int flags;
} dbi_table[DBI_COUNT] = {
	[DBI_META] = { "meta", 0 },
	[DBI_MESSAGES] = { "messages", 0 },
	[DBI_RAW] = { "raw", 0 },
	[DBI_MSGID_INDEX] = { "msgid_index", MDB_DUPSORT | MDB_DUPFIXED },
	[DBI_REFS_INDEX] = { "refs_index", MDB_DUPSORT | MDB_DUPFIXED },
	[DBI_AUTHOR_INDEX] = { "author_index", 0 },
	[DBI_SERIES] = { "series", 0 },
	[DBI_MSG_SERIES] = { "msg_series", 0 },
	[DBI_CHANGE_INDEX] = { "change_index", MDB_DUPSORT },
	[DBI_PATCHID_INDEX] = { "patchid_index", MDB_DUPSORT },
	[DBI_NAME_KEYS] = { "name_keys", 0 },
	[DBI_LINK_INDEX] = { "link_index", MDB_DUPSORT },
	[DBI_STAGE] = { "stage", 0 },
	[DBI_OUTBOX] = { "outbox", 0 },
};

#define DEFAULT_MAP_SIZE (256ull << 20)
#define DEFAULT_MAX_MAP_SIZE (1ull << 40)
#define INDEX_VAL_LEN (8 + 32)
#define MAX_PLAIN_KEY 480

struct PgateStore {
	MDB_env *env;
	char *dir;
	int lock_fd;          /* write.lock: writers flock() it exclusively */
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
};

struct PgateStoreTxn {
	PgateStore *store;
	MDB_txn *txn;
	gboolean map_full;   /* an operation hit MDB_MAP_FULL: grow, retry */
	gboolean read_locked; /* holds one of store->read_locks */
	/* one cursor a database, opened by the first lookup that needs it
	 * and repositioned by every later one (txn_cursor): threading makes
	 * several lookups a message, and a cursor is a malloc and a free */
	MDB_cursor *cursors[DBI_COUNT];
};

/* Translates an LMDB error once, here at the boundary. */
static gboolean
set_mdb_error(GError **error, int rc, const char *what)
{
	PgateErrorCode code;

	switch (rc) {
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		code = PGATE_ERROR_FULL;
		break;
	case MDB_NOTFOUND:
		code = PGATE_ERROR_NOT_FOUND;
		break;
	case MDB_READERS_FULL:
	case MDB_MAP_RESIZED:
		code = PGATE_ERROR_BUSY;
		break;
	case MDB_VERSION_MISMATCH:
		code = PGATE_ERROR_SCHEMA;
		break;
	case MDB_INVALID:
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INCOMPATIBLE:
	case MDB_CURSOR_FULL:
		/* what LMDB notices of damaged pages (a tree deeper than
		 * its cursors go is one that loops) */
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "%s: %s: the store is damaged; run 'patchgate "
			    "store verify'", what, mdb_strerror(rc));
		return FALSE;
	default:
		code = rc > 0 ? pgate_error_errno_code(rc) : PGATE_ERROR_FAILED;
		break;
	}
	g_set_error(error, PGATE_STORE_ERROR, code, "%s: %s", what,
		    mdb_strerror(rc));
	return FALSE;
}

/* Notes a full map on the transaction so that pgate_store_write() grows
 * the map and retries, then reports the error like any other. */
static gboolean
txn_fail(PgateStoreTxn *t, GError **error, int rc, const char *what)
{
	if (rc == MDB_MAP_FULL)
		t->map_full = TRUE;
	return set_mdb_error(error, rc, what);
}

/* ---- opening ---- */

static guint64
env_map_size(MDB_env *env)
{
	MDB_envinfo info;

	mdb_env_info(env, &info);
	return (guint64)info.me_mapsize;
}

guint64
pgate_store_map_size(PgateStore *store)
{
	return env_map_size(store->env);
}

static gboolean
begin(PgateStore *store, unsigned int flags, MDB_txn **out, GError **error)
{
	for (int tries = 0;; tries++) {
		int rc = mdb_txn_begin(store->env, NULL, flags, out);

		if (rc == 0)
			return TRUE;
		if (rc == MDB_MAP_RESIZED && tries < 8) {
			/* another process grew the map: adopt its size */
			rc = mdb_env_set_mapsize(store->env, 0);
			if (rc == 0)
				continue;
		}
		if (rc == MDB_READERS_FULL && tries < 8) {
			int dead = 0;

			mdb_reader_check(store->env, &dead);
			if (dead > 0)
				continue;
		}
		return set_mdb_error(error, rc, "begin transaction");
	}
}

/* flock()s write.lock: @op LOCK_EX for a writer, LOCK_SH for a reader
 * without lock.mdb; waits at most lock_timeout_ms (0: for ever). */
static gboolean
lock_store(PgateStore *store, int op, GError **error)
{
	gint64 deadline = g_get_monotonic_time() +
			  (gint64)store->opts.lock_timeout_ms * 1000;
	useconds_t pause = 500;

	if (store->opts.lock_timeout_ms == 0) {
		while (flock(store->lock_fd, op) < 0) {
			if (errno != EINTR)
				goto fail;
		}
		return TRUE;
	}
	while (flock(store->lock_fd, op | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			goto fail;
		if (g_get_monotonic_time() >= deadline) {
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_BUSY,
				    "store %s is locked by %s for more than "
				    "%u ms", store->dir,
				    op == LOCK_EX ? "another writer"
						  : "a writer",
				    store->opts.lock_timeout_ms);
			return FALSE;
		}
		g_usleep(pause);
		pause = MIN(pause * 2, 20000);
	}
	return TRUE;
fail:
	g_set_error(error, PGATE_STORE_ERROR, pgate_error_errno_code(errno),
		    "lock %s: %s", store->dir, g_strerror(errno));
	return FALSE;
}

static gboolean
lock_writer(PgateStore *store, GError **error)
{
	return lock_store(store, LOCK_EX, error);
}

static void
unlock_writer(PgateStore *store)
{
	flock(store->lock_fd, LOCK_UN);
}

/* A store opened without lock.mdb (MDB_NOLOCK) has no reader table to
 * tell writers which pages its snapshot still uses: LMDB leaves it to the
 * caller to keep writers out while one of its read transactions lives
 * (mdb_env_open(3), MDB_NOLOCK).  Writers hold write.lock exclusively
 * (lock_writer), so such a reader holds it shared. */
static gboolean
read_lock(PgateStore *store, GError **error)
{
	if (!store->nolock)
		return TRUE;
	if (store->read_locks == 0 && !lock_store(store, LOCK_SH, error))
		return FALSE;
	store->read_locks++;
	return TRUE;
}

static void
read_unlock(PgateStore *store)
{
	if (!store->nolock)
		return;
	g_assert(store->read_locks > 0);
	if (--store->read_locks == 0)
		flock(store->lock_fd, LOCK_UN);
}

/* The schema mark into *@out, and whether there is one (a store older
 * than the mark has none: schema 0); one that cannot be read, or of the
 * wrong size, is damage. */
static gboolean
read_schema(PgateStore *store, MDB_txn *txn, guint *out, gboolean *out_found,
	    GError **error)
{
	MDB_val k = { 14, (void *)"schema_version" }, v;
	int rc = mdb_get(txn, store->dbi[DBI_META], &k, &v);

	*out = 0;
	*out_found = FALSE;
	if (rc == MDB_NOTFOUND)
		return TRUE;
	if (rc != 0)
		return set_mdb_error(error, rc, "read the schema version");
	if (v.mv_size != 4) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "store %s is damaged: its schema version is %zu "
			    "bytes long, not 4; run 'patchgate store verify'",
			    store->dir, v.mv_size);
		return FALSE;
	}
	*out = (guint)get_be32(v.mv_data);
	*out_found = TRUE;
	return TRUE;
}

static gboolean
damaged(PgateStore *store, GError **error, const char *what)
{
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
		    "store %s is damaged: %s; run 'patchgate store verify'",
		    store->dir, what);
	return FALSE;
}

/* Opens every database of dbi_table; creates them (and the schema mark)
 * in a new store, and those an older schema did not have.  A database
 * missing from a store of this schema, or a store with databases but no
 * meta, is damage: creating it empty would hide what was lost. */
static gboolean
open_dbis(PgateStore *store, GError **error)
{
	MDB_txn *txn;
	size_t snapshot;
	int rc = 0, missing = -1, present = 0;
	gboolean marked = FALSE;

	if (!begin(store, MDB_RDONLY, &txn, error))
		return FALSE;
	/* this read's own view of the past: another process may create the
	 * store meanwhile (parallel first deliveries), which the env's
	 * latest meta page (mdb_env_info) would already show */
	snapshot = mdb_txn_id(txn);
	for (int i = 0; i < DBI_COUNT && rc == 0; i++) {
		rc = mdb_dbi_open(txn, dbi_table[i].name, dbi_table[i].flags,
				  &store->dbi[i]);
		if (rc == MDB_NOTFOUND) {
			if (missing < 0)
				missing = i;
			rc = 0;
		} else if (rc == 0) {
			present++;
		}
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		return set_mdb_error(error, rc, "open databases");
	}
	if (missing != DBI_META &&
	    !read_schema(store, txn, &store->schema, &marked, error)) {
		mdb_txn_abort(txn);
		return FALSE;
	}
	if (missing < 0) {
		/* every database of schema 3 and later, and no mark */
		if (!marked) {
			mdb_txn_abort(txn);
			return damaged(store, error,
				       "its schema version is missing");
		}
		rc = mdb_txn_commit(txn);	/* keeps the handles */
		if (rc != 0)
			return set_mdb_error(error, rc, "open databases");
		return TRUE;
	}
	mdb_txn_abort(txn);

	if (store->schema > PGATE_STORE_SCHEMA_VERSION)
		return TRUE;	/* check_schema() refuses it */
	if (missing != DBI_META &&
	    store->schema == PGATE_STORE_SCHEMA_VERSION) {
		g_autofree char *what = g_strdup_printf(
			"its database %s is missing", dbi_table[missing].name);

		return damaged(store, error, what);
	}
	/* no meta: a new store, unless something was ever committed in the
	 * view read (the first commit creates every database) */
	if (missing == DBI_META && (present > 0 || snapshot > 0))
		return damaged(store, error, "its database meta is missing");
	if (!(store->flags & (PGATE_STORE_CREATE | PGATE_STORE_RW))) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no store at %s, or one of an older schema (run "
			    "'patchgate store upgrade')", store->dir);
		return FALSE;
	}
	if (!lock_writer(store, error))
		return FALSE;
	if (!begin(store, 0, &txn, error)) {
		unlock_writer(store);
		return FALSE;
	}
	for (int i = 0; i < DBI_COUNT && rc == 0; i++)
		rc = mdb_dbi_open(txn, dbi_table[i].name,
				  dbi_table[i].flags | MDB_CREATE,
				  &store->dbi[i]);
	if (rc == 0 && !read_schema(store, txn, &store->schema, &marked,
				    error)) {
		mdb_txn_abort(txn);
		unlock_writer(store);
		return FALSE;
	}
	if (rc == 0 && !marked && missing == DBI_META) {
		/* a new store: this build's schema */
		guint8 b[4];
		MDB_val k = { 14, (void *)"schema_version" }, v = { 4, b };

		put_be32(b, PGATE_STORE_SCHEMA_VERSION);
		rc = mdb_put(txn, store->dbi[DBI_META], &k, &v, 0);
		store->schema = PGATE_STORE_SCHEMA_VERSION;
	}
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	else
		mdb_txn_abort(txn);
	unlock_writer(store);
	if (rc != 0)
		return set_mdb_error(error, rc, "create databases");
	return TRUE;
}

static gboolean
check_schema(PgateStore *store, GError **error)
{
	if (store->schema > PGATE_STORE_SCHEMA_VERSION) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA,
			    "store %s has schema %u, newer than this patchgate "
			    "understands (%u); use a newer patchgate",
			    store->dir, store->schema,
			    PGATE_STORE_SCHEMA_VERSION);
		return FALSE;
	}
	if (store->schema < PGATE_STORE_SCHEMA_VERSION &&
	    !(store->flags & PGATE_STORE_NO_UPGRADE_CHECK)) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA,
			    "store %s has schema %u, older than %u; run "
			    "'patchgate store upgrade' first", store->dir,
			    store->schema, PGATE_STORE_SCHEMA_VERSION);
		return FALSE;
	}
	return TRUE;
}

/* LMDB asserts that the pages it reads are consistent, and when they are
 * not (a damaged store) prints where to stderr and aborts.  It aborts
 * all the same here, without the line: the command's signal guard says
 * what happened in its one line (cli.h).  The assertion is a debug
 * message. */
static void
lmdb_assert(MDB_env *env, const char *msg)
{
	g_debug("LMDB: %s", msg);
	abort();
}

/* Whether this process can use lock.mdb, LMDB's table of readers: a
 * reader writes its slot there, and creates the file when it is not. */
static gboolean
lock_table_usable(const char *dir)
{
	g_autofree char *path = g_build_filename(dir, "lock.mdb", NULL);
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return TRUE;
	}
	return errno == ENOENT && faccessat(AT_FDCWD, dir, W_OK,
					    AT_EACCESS) == 0;
}

/* Refuses a data.mdb whose header would make LMDB read past the file
 * (pgate_store__check_header).  A writer may be rewriting a meta page
 * this moment: a damaged look is checked once more before it counts. */
static gboolean
check_header(PgateStore *store, const char *data, GError **error)
{
	for (int tries = 0;; tries++) {
		g_autoptr(GPtrArray) problems =
			g_ptr_array_new_with_free_func(g_free);
		gboolean usable = TRUE;

		if (!pgate_store__check_header(data, problems, &usable, error))
			return FALSE;
		if (usable)
			return TRUE;
		if (tries > 0) {
			g_set_error(error, PGATE_STORE_ERROR,
				    PGATE_ERROR_CORRUPT,
				    "store %s is damaged: %s; run 'patchgate "
				    "store verify'", store->dir,
				    (const char *)problems->pdata[0]);
			return FALSE;
		}
		g_usleep(10000);
	}
}

PgateStore *
pgate_store_open(const char *dir, PgateStoreFlags flags,
		 const PgateStoreOptions *opts, GError **error)
{
	g_autoptr(PgateStore) store = g_new0(PgateStore, 1);
	g_autofree char *data = g_build_filename(dir, "data.mdb", NULL);
	g_autofree char *lock = g_build_filename(dir, "write.lock", NULL);
	PgateStoreOptions defaults = PGATE_STORE_OPTIONS_INIT;
	gboolean writable = (flags & (PGATE_STORE_RW | PGATE_STORE_CREATE)) != 0;
	struct stat st;
	guint64 map_size;
	int rc;

	store->lock_fd = -1;
	store->dir = g_strdup(dir);
	store->flags = flags;
	store->opts = opts ? *opts : defaults;
	if (store->opts.map_size == 0)
		store->opts.map_size = DEFAULT_MAP_SIZE;
	if (store->opts.max_map_size == 0)
		store->opts.max_map_size = DEFAULT_MAX_MAP_SIZE;

	if (flags & PGATE_STORE_CREATE) {
		if (!pgate_mkdir_p(dir, PGATE_STORE_ERROR, error))
			return NULL;
	} else if (stat(data, &st) < 0) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no store at %s", dir);
		return NULL;
	}

	if (writable) {
		store->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	} else if (!lock_table_usable(dir)) {
		/* a reader that may not write (a read-only file system, a
		 * user who can only read the store): without lock.mdb, and
		 * with write.lock shared while it reads (read_lock) */
		store->nolock = TRUE;
		store->lock_fd = open(lock, O_RDONLY | O_CLOEXEC);
	}
	if (store->lock_fd < 0 && (writable || store->nolock)) {
		int e = errno;

		g_set_error(error, PGATE_STORE_ERROR, pgate_error_errno_code(e),
			    "open %s: %s%s", lock, g_strerror(e),
			    store->nolock ? " (a reader that may not write "
			    "lock.mdb must read write.lock)" : "");
		return NULL;
	}
	if (!read_lock(store, error))
		return NULL;
	if (!check_header(store, data, error))
		return NULL;

	rc = mdb_env_create(&store->env);
	if (rc != 0)
		return set_mdb_error(error, rc, "create environment"), NULL;
	mdb_env_set_assert(store->env, lmdb_assert);
	mdb_env_set_maxdbs(store->env, 16);
	mdb_env_set_maxreaders(store->env, 1022);
	/* Never map less than the file holds, so that an explicit size
	 * cannot shrink what another process grew. */
	map_size = store->opts.map_size;
	if (stat(data, &st) == 0 && (guint64)st.st_size > map_size)
		map_size = (guint64)st.st_size;
	mdb_env_set_mapsize(store->env, (size_t)map_size);
	rc = mdb_env_open(store->env, dir,
			  MDB_NOTLS | (writable ? 0 : MDB_RDONLY) |
			  (store->nolock ? MDB_NOLOCK : 0), 0600);
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("open store %s", dir);

		return set_mdb_error(error, rc, what), NULL;
	}
	mdb_reader_check(store->env, NULL);
	{
		MDB_envinfo info;

		if (mdb_env_info(store->env, &info) == 0)
			store->released_pgno = info.me_last_pgno;
	}

	if (!open_dbis(store, error))
		return NULL;
	read_unlock(store);
	if (!check_schema(store, error))
		return NULL;
	return g_steal_pointer(&store);
}

void
pgate_store_free(PgateStore *store)
{
	if (store == NULL)
		return;
	if (store->env != NULL)
		mdb_env_close(store->env);
	if (store->lock_fd >= 0)
		close(store->lock_fd);
	g_free(store->dir);
	g_free(store->enc.data);
	g_free(store);
}

guint
pgate_store_schema_version(PgateStore *store)
{
	return store->schema;
}

/* The transaction's cursor on database @which (transfer none): valid
 * until txn_close_cursors().  Every user positions it first (MDB_SET,
 * MDB_SET_RANGE, MDB_FIRST...), so what an earlier user left does not
 * matter; LMDB keeps a write transaction's cursors valid across its puts
 * and deletes. */
static int
txn_cursor(PgateStoreTxn *t, int which, MDB_cursor **out)
{
	int rc = 0;

	if (t->cursors[which] == NULL)
		rc = mdb_cursor_open(t->txn, t->store->dbi[which],
				     &t->cursors[which]);
	*out = t->cursors[which];
	return rc;
}

/* mdb_put() through the transaction's cursor of the database: LMDB
 * starts the search from the cursor's leaf page when the key falls in
 * it, where mdb_put() descends from the root every time, and the puts of
 * one transaction often land next to the one before (message numbers,
 * one sender's messages, one series's members). */
static int
txn_put(PgateStoreTxn *t, int which, MDB_val *k, MDB_val *v,
	unsigned int flags)
{
	MDB_cursor *cur;
	int rc = txn_cursor(t, which, &cur);

	return rc != 0 ? rc : mdb_cursor_put(cur, k, v, flags);
}

/* Before the transaction ends: a write transaction's cursors may only be
 * closed while it lives, a read-only one's must be closed at all. */
static void
txn_close_cursors(PgateStoreTxn *t)
{
	for (int i = 0; i < DBI_COUNT; i++)
		g_clear_pointer(&t->cursors[i], mdb_cursor_close);
}

/* ---- transactions ---- */

PgateStoreTxn *
pgate_store_begin_read(PgateStore *store, GError **error)
{
	PgateStoreTxn *t;

	if (!read_lock(store, error))
		return NULL;
	t = g_new0(PgateStoreTxn, 1);
	t->store = store;
	t->read_locked = TRUE;
	if (!begin(store, MDB_RDONLY, &t->txn, error)) {
		pgate_store_txn_free(t);
		return NULL;
	}
	return t;
}

void
pgate_store_txn_free(PgateStoreTxn *txn)
{
	if (txn == NULL)
		return;
	txn_close_cursors(txn);
	if (txn->txn != NULL)
		mdb_txn_abort(txn->txn);
	if (txn->read_locked)
		read_unlock(txn->store);
	g_free(txn);
}

guint64
pgate_store_txn_id(PgateStoreTxn *txn)
{
	return mdb_txn_id(txn->txn);
}

static gboolean
grow_map(PgateStore *store, GError **error)
{
	guint64 cur = env_map_size(store->env);
	guint64 next = MIN(cur * 2, store->opts.max_map_size);
	int rc;

	if (next <= cur) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FULL,
			    "store %s is full at its maximum map size of %"
			    G_GUINT64_FORMAT " bytes", store->dir, cur);
		return FALSE;
	}
	rc = mdb_env_set_mapsize(store->env, (size_t)next);
	if (rc != 0)
		return set_mdb_error(error, rc, "grow map");
	g_debug("store %s: map grown to %" G_GUINT64_FORMAT " bytes",
		store->dir, next);
	return TRUE;
}

/* The pages of the map this process touched count in its RSS, and a bulk
 * ingest reads much of a growing store (indexes, threading): after every
 * 16 MiB of growth, drop the mapping's pages (they stay in the page
 * cache, and the next access maps them again: LMDB's map is a read-only
 * shared file mapping, so nothing is lost).  This keeps a long ingest's
 * memory bounded by a few batches, not by the store's size; a delivery
 * never gets here. */
static void
release_pages(PgateStore *store)
{
	g_autofree char *maps = NULL;
	g_autofree char *path = NULL, *real = NULL;
	MDB_envinfo info;
	MDB_stat st;
	const char *line;

	if (mdb_env_info(store->env, &info) != 0 ||
	    mdb_env_stat(store->env, &st) != 0)
		return;
	/* once per 16 MiB the store grew in this process: a bulk ingest
	 * drops its pages now and then, a delivery (a few KiB) never pays */
	if (info.me_last_pgno < store->released_pgno ||
	    (guint64)(info.me_last_pgno - store->released_pgno) * st.ms_psize <
	    (16u << 20))
		return;
	store->released_pgno = info.me_last_pgno;
	path = g_build_filename(store->dir, "data.mdb", NULL);
	real = realpath(path, NULL);
	if (real == NULL)
		return;
	/* LMDB does not say where its map is: /proc/self/maps does */
	if (!g_file_get_contents("/proc/self/maps", &maps, NULL, NULL))
		return;
	for (line = maps; line && *line;) {
		const char *nl = strchr(line, '\n');
		gsize len = nl ? (gsize)(nl - line) : strlen(line);
		gsize plen = strlen(real);
		unsigned long lo, hi;

		if (len > plen && memcmp(line + len - plen, real, plen) == 0 &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi > lo)
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
		line = nl ? nl + 1 : NULL;
	}
}

gboolean
pgate_store_write(PgateStore *store, PgateStoreWriteFunc fn, gpointer payload,
		  GError **error)
{
	g_return_val_if_fail(store->flags & (PGATE_STORE_RW | PGATE_STORE_CREATE),
			     FALSE);

	if (!lock_writer(store, error))
		return FALSE;
	for (;;) {
		PgateStoreTxn t = { .store = store };
		g_autoptr(GError) local = NULL;
		gboolean ok;
		int rc;

		if (!begin(store, 0, &t.txn, error))
			break;
		ok = fn(&t, payload, &local);
		txn_close_cursors(&t);
		if (!ok) {
			mdb_txn_abort(t.txn);
			if (!t.map_full) {
				g_propagate_error(error, g_steal_pointer(&local));
				break;
			}
			if (grow_map(store, error))
				continue;
			break;
		}
		rc = mdb_txn_commit(t.txn);	/* frees the txn either way */
		if (rc == MDB_MAP_FULL) {
			if (grow_map(store, error))
				continue;
			break;
		}
		if (rc != 0) {
			set_mdb_error(error, rc, "commit");
			break;
		}
		unlock_writer(store);
		release_pages(store);
		return TRUE;
	}
	unlock_writer(store);
	return FALSE;
}

/* ---- schema upgrades ---- */

/* Schema 0 (stores written before the schema mark existed, or marked so
 * by hand) had no Message-ID index of content hashes: rebuild it. */
static gboolean
upgrade_0_to_1(PgateStoreTxn *t, GError **error);

/* Schema 1 had no threading databases.  They were created empty when the
 * store was opened for writing; their content is derived, so the store
 * only marks it missing ("rethread_needed") and "patchgate rethread"
 * rebuilds it: the store knows nothing of threading. */
static gboolean
upgrade_1_to_2(PgateStoreTxn *t, GError **error)
{
	return pgate_store_set_rethread_needed(t, TRUE, error);
}

/* Schema 2 had no link_index (derived: rethread), stage or outbox (new
 * and empty). */
static gboolean
upgrade_2_to_3(PgateStoreTxn *t, GError **error)
{
	return pgate_store_set_rethread_needed(t, TRUE, error);
}

/* Schema 3 kept the same-sender name keys in name_index, one entry a key
 * and series; schema 4 keeps them in name_keys (created empty), one entry
 * a series.  name_index is dropped and name_keys filled by a rethread. */
static gboolean
upgrade_3_to_4(PgateStoreTxn *t, GError **error)
{
	MDB_dbi dbi;
	int rc = mdb_dbi_open(t->txn, "name_index", 0, &dbi);

	if (rc == 0)
		rc = mdb_drop(t->txn, dbi, 1);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "drop name_index");
	return pgate_store_set_rethread_needed(t, TRUE, error);
}

static const struct {
	guint from;
	gboolean (*fn)(PgateStoreTxn *t, GError **error);
} upgrade_steps[] = {
	{ 0, upgrade_0_to_1 },
	{ 1, upgrade_1_to_2 },
	{ 2, upgrade_2_to_3 },
	{ 3, upgrade_3_to_4 },
};

typedef struct {
	guint from;
} UpgradeCtx;

static gboolean
put_schema(PgateStoreTxn *t, guint version, GError **error)
{
	guint8 b[4];

	put_be32(b, version);
	return pgate_store_meta_put(t, "schema_version", b, 4, error);
}

static gboolean
upgrade_txn(PgateStoreTxn *t, gpointer payload, GError **error)
{
	UpgradeCtx *ctx = payload;
	guint v = ctx->from;

	while (v < PGATE_STORE_SCHEMA_VERSION) {
		gboolean found = FALSE;

		for (gsize i = 0; i < G_N_ELEMENTS(upgrade_steps); i++) {
			if (upgrade_steps[i].from != v)
				continue;
			if (!upgrade_steps[i].fn(t, error))
				return FALSE;
			found = TRUE;
		}
		if (!found) {
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA,
				    "no upgrade from schema %u", v);
			return FALSE;
		}
		v++;
	}
	return put_schema(t, PGATE_STORE_SCHEMA_VERSION, error);
}

gboolean
pgate_store_upgrade(PgateStore *store, guint *out_from, GError **error)
{
	UpgradeCtx ctx = { store->schema };

	if (out_from)
		*out_from = store->schema;
	if (store->schema > PGATE_STORE_SCHEMA_VERSION)
		return check_schema(store, error);
	if (store->schema == PGATE_STORE_SCHEMA_VERSION)
		return TRUE;
	if (!pgate_store_write(store, upgrade_txn, &ctx, error))
		return FALSE;
	store->schema = PGATE_STORE_SCHEMA_VERSION;
	return TRUE;
}

/* ---- meta ---- */

gboolean
pgate_store_meta_put(PgateStoreTxn *t, const char *key, const void *val,
		     gsize len, GError **error)
{
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
	int rc = mdb_put(t->txn, t->store->dbi[DBI_META], &k, &v, 0);

	if (rc != 0)
		return txn_fail(t, error, rc, "put meta");
	return TRUE;
}

GBytes *
pgate_store_meta_get(PgateStoreTxn *t, const char *key, GError **error)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);

	if (rc != 0)
		return set_mdb_error(error, rc, key), NULL;
	return g_bytes_new(v.mv_data, v.mv_size);
}

/* ---- messages ---- */

/* The msgid_index key: the Message-ID itself, or for one too long for an
 * LMDB key, \x01 and its SHA-256 (into @buf). */
#define HASHED_KEY_LEN PGATE_STORE__HASHED_KEY_LEN

/* \x01 and the SHA-256 of @len bytes at @s, into @buf. */
static gsize
hashed_key(const char *s, gsize len, guint8 buf[HASHED_KEY_LEN])
{
	PgateSha256 sha;

	pgate_sha256_init(&sha);
	pgate_sha256_update(&sha, s, len);
	buf[0] = 0x01;
	pgate_sha256_finish(&sha, buf + 1);
	return HASHED_KEY_LEN;
}

static gsize
msgid_key(const char *msgid, guint8 buf[HASHED_KEY_LEN], const void **out)
{
	gsize len = strlen(msgid);

	if (len > 0 && len <= MAX_PLAIN_KEY) {
		*out = msgid;
		return len;
	}
	*out = buf;
	return hashed_key(msgid, len, buf);
}

/* A sender (a lower-cased From address: the parser allows 512 bytes) at
 * the start of an author_index or name_keys key: itself when 1 to
 * SENDER_KEY_MAX bytes, else \x01 and its SHA-256.  Writes at most
 * SENDER_KEY_MAX bytes at @buf; returns how many. */
#define SENDER_KEY_MAX 400

static gsize
sender_key(const char *sender, guint8 *buf)
{
	gsize len = strlen(sender);

	if (len > 0 && len <= SENDER_KEY_MAX) {
		memcpy(buf, sender, len);
		return len;
	}
	return hashed_key(sender, len, buf);
}

static gboolean
next_msgnum(PgateStoreTxn *t, guint64 *out, GError **error)
{
	MDB_val k = { 11, (void *)"next_msgnum" }, v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
	guint8 b[8];

	if (rc == MDB_NOTFOUND)
		*out = 1;
	else if (rc != 0)
		return txn_fail(t, error, rc, "get next_msgnum");
	else if (v.mv_size != 8)
		return g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
				   "meta next_msgnum is corrupt"), FALSE;
	else
		*out = pgate_store__get_be64(v.mv_data);
	pgate_store__be64(b, *out + 1);
	return pgate_store_meta_put(t, "next_msgnum", b, 8, error);
}

static gboolean
put_record(PgateStoreTxn *t, const PgateMessageRec *rec, GError **error)
{
	PgateStoreBuf *enc = &t->store->enc;
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	/* (LMDB copies the value: the buffer serves the next put) */
	pgate_store__rec_encode(enc, rec);
	v = (MDB_val){ enc->len, enc->data };
	pgate_store__be64(kb, rec->num);
	rc = txn_put(t, DBI_MESSAGES, &k, &v, 0);
	if (rc != 0)
		return txn_fail(t, error, rc, "put message");
	return TRUE;
}

/* *@out: message @num, or NULL when its record does not decode (which
 * flags it carries is then moot: nothing reads it). */
static gboolean
get_unless_corrupt(PgateStoreTxn *t, guint64 num, PgateMessageRec **out,
		   GError **error)
{
	g_autoptr(GError) local = NULL;

	*out = pgate_store_message_get(t, num, &local);
	if (*out == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
					     PGATE_ERROR_CORRUPT)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

/* Marks an already stored message as sharing its Message-ID. */
static gboolean
flag_conflict(PgateStoreTxn *t, guint64 num, GError **error)
{
	g_autoptr(PgateMessageRec) old = NULL;

	if (!get_unless_corrupt(t, num, &old, error))
		return FALSE;
	if (old == NULL)
		return TRUE;
	if (old->flags & PGATE_MSG_FLAG_ID_CONFLICT)
		return TRUE;
	old->flags |= PGATE_MSG_FLAG_ID_CONFLICT;
	return put_record(t, old, error);
}

gboolean
pgate_store_message_add(PgateStoreTxn *t, PgateMessageRec *rec, GBytes *raw,
			PgateStoreAddResult *out_result, GError **error)
{
	guint8 keybuf[40];
	const void *kp;
	MDB_val k, v;
	MDB_cursor *cur;
	g_autoptr(GArray) same_id = g_array_new(FALSE, FALSE, sizeof(guint64));
	guint8 ival[INDEX_VAL_LEN];
	int rc;

	g_return_val_if_fail(rec->msgid != NULL, FALSE);
	k.mv_size = msgid_key(rec->msgid, keybuf, &kp);
	k.mv_data = (void *)kp;

	rc = txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return txn_fail(t, error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		guint64 num;

		if (v.mv_size != INDEX_VAL_LEN) {
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
				    "msgid index entry is corrupt");
			return FALSE;
		}
		num = pgate_store__get_be64(v.mv_data);
		if (memcmp((const guint8 *)v.mv_data + 8, rec->content_hash,
			   32) == 0) {
			rec->num = num;
			*out_result = PGATE_STORE_DUPLICATE;
			return TRUE;
		}
		g_array_append_val(same_id, num);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "read msgid index");

	if (!next_msgnum(t, &rec->num, error))
		return FALSE;
	if (rec->received == 0)
		rec->received = g_get_real_time() / G_USEC_PER_SEC;
	if (same_id->len > 0) {
		rec->flags |= PGATE_MSG_FLAG_ID_CONFLICT;
		for (guint i = 0; i < same_id->len; i++)
			if (!flag_conflict(t, g_array_index(same_id, guint64, i),
					   error))
				return FALSE;
	}
	if (raw != NULL && rec->raw_location == PGATE_RAW_INLINE) {
		gsize len;
		const void *data = g_bytes_get_data(raw, &len);
		guint8 kb[8];
		MDB_val rk = { 8, kb }, rv = { len, (void *)data };

		rec->raw_size = len;
		pgate_store__be64(kb, rec->num);
		rc = txn_put(t, DBI_RAW, &rk, &rv, 0);
		if (rc != 0)
			return txn_fail(t, error, rc, "put raw message");
	}
	if (!put_record(t, rec, error))
		return FALSE;

	pgate_store__be64(ival, rec->num);
	memcpy(ival + 8, rec->content_hash, 32);
	v.mv_size = INDEX_VAL_LEN;
	v.mv_data = ival;
	rc = txn_put(t, DBI_MSGID_INDEX, &k, &v, 0);
	if (rc != 0)
		return txn_fail(t, error, rc, "put msgid index");
	*out_result = same_id->len > 0 ? PGATE_STORE_ADDED_CONFLICT
				       : PGATE_STORE_ADDED;
	return TRUE;
}

/* After a deletion, a message left alone with its Message-ID no longer
 * conflicts with anything. */
static gboolean
unflag_lone_survivor(PgateStoreTxn *t, const char *msgid, GError **error)
{
	g_autoptr(GArray) nums = pgate_store_message_lookup(t, msgid, error);
	g_autoptr(PgateMessageRec) rec = NULL;

	if (nums == NULL)
		return FALSE;
	if (nums->len != 1)
		return TRUE;
	if (!get_unless_corrupt(t, g_array_index(nums, guint64, 0), &rec,
				error))
		return FALSE;
	if (rec == NULL)
		return TRUE;
	if (!(rec->flags & PGATE_MSG_FLAG_ID_CONFLICT))
		return TRUE;
	rec->flags &= ~PGATE_MSG_FLAG_ID_CONFLICT;
	return put_record(t, rec, error);
}

gboolean
pgate_store_message_delete(PgateStoreTxn *t, const char *msgid,
			   const guint8 *content_hash, guint64 *out_num,
			   GError **error)
{
	guint8 keybuf[40], kb[8];
	const void *kp;
	MDB_val k, v, nk = { 8, kb };
	MDB_cursor *cur;
	guint64 num = 0;
	int rc;

	k.mv_size = msgid_key(msgid, keybuf, &kp);
	k.mv_data = (void *)kp;
	rc = txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return txn_fail(t, error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		if (v.mv_size == INDEX_VAL_LEN &&
		    memcmp((const guint8 *)v.mv_data + 8, content_hash, 32) == 0) {
			num = pgate_store__get_be64(v.mv_data);
			rc = mdb_cursor_del(cur, 0);
			break;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (num == 0) {
		if (rc != 0 && rc != MDB_NOTFOUND)
			return txn_fail(t, error, rc, "read msgid index");
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no message <%s> with that content", msgid);
		return FALSE;
	}
	if (rc != 0)
		return txn_fail(t, error, rc, "delete msgid index entry");
	pgate_store__be64(kb, num);
	rc = mdb_del(t->txn, t->store->dbi[DBI_MESSAGES], &nk, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete message");
	rc = mdb_del(t->txn, t->store->dbi[DBI_RAW], &nk, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete raw message");
	if (out_num)
		*out_num = num;
	return unflag_lone_survivor(t, msgid, error);
}

/* (transfer full): message @num's record @v, decoded; a record that does
 * not decode is a PGATE_ERROR_CORRUPT that names the message. */
static PgateMessageRec *
decode_message(guint64 num, const MDB_val *v, GError **error)
{
	PgateMessageRec *rec = pgate_store__rec_decode(v->mv_data, v->mv_size,
						       error);

	if (rec == NULL) {
		g_prefix_error(error, "message %" G_GUINT64_FORMAT ": ", num);
		return NULL;
	}
	rec->num = num;
	return rec;
}

PgateMessageRec *
pgate_store_message_get(PgateStoreTxn *t, guint64 num, GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_MESSAGES], &k, &v);
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf(
			"message %" G_GUINT64_FORMAT, num);

		return set_mdb_error(error, rc, what), NULL;
	}
	return decode_message(num, &v, error);
}

gboolean
pgate_store_message_lookup_into(PgateStoreTxn *t, const char *msgid,
				GArray *nums, GError **error)
{
	guint8 keybuf[40];
	const void *kp;
	MDB_val k, v;
	MDB_cursor *cur;
	int rc;

	k.mv_size = msgid_key(msgid, keybuf, &kp);
	k.mv_data = (void *)kp;
	rc = txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		guint64 num = pgate_store__get_be64(v.mv_data);

		g_array_append_val(nums, num);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, "read msgid index");
	return TRUE;
}

GArray *
pgate_store_message_lookup(PgateStoreTxn *t, const char *msgid, GError **error)
{
	g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(guint64));

	if (!pgate_store_message_lookup_into(t, msgid, nums, error))
		return NULL;
	return g_steal_pointer(&nums);
}

GBytes *
pgate_store_message_raw(PgateStoreTxn *t, guint64 num, GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_RAW], &k, &v);
	if (rc != 0)
		return set_mdb_error(error, rc, "raw message"), NULL;
	return g_bytes_new(v.mv_data, v.mv_size);
}

guint64
pgate_store_message_count(PgateStoreTxn *t)
{
	MDB_stat st;

	if (mdb_stat(t->txn, t->store->dbi[DBI_MESSAGES], &st) != 0)
		return 0;
	return st.ms_entries;
}

void
pgate_store_message_iter_init(PgateStoreMessageIter *iter, PgateStoreTxn *txn)
{
	iter->txn = txn;
	iter->next = 1;
	iter->unreadable = 0;
	iter->first_unreadable = 0;
}

gboolean
pgate_store_message_iter_next(PgateStoreMessageIter *iter,
			      PgateMessageRec **out, GError **error)
{
	PgateStoreTxn *t = iter->txn;
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	MDB_cursor *cur;
	int rc;

	*out = NULL;
	pgate_store__be64(kb, iter->next);
	rc = txn_cursor(t, DBI_MESSAGES, &cur);
	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND)
		return FALSE;
	if (rc != 0)
		return set_mdb_error(error, rc, "iterate messages");
	if (k.mv_size != 8) {
		/* not a record of ours: the page is damaged */
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "iterate messages: a key of %zu bytes after message "
			    "%" G_GUINT64_FORMAT ": the store is damaged; run "
			    "'patchgate store verify'", k.mv_size,
			    iter->next - 1);
		return FALSE;
	}
	/* past this record even when it does not decode: the caller may go
	 * on to the next one */
	iter->next = pgate_store__get_be64(k.mv_data) + 1;
	*out = decode_message(iter->next - 1, &v, error);
	return *out != NULL;
}

gboolean
pgate_store_message_iter_next_readable(PgateStoreMessageIter *iter,
				       PgateMessageRec **out,
				       PgateStoreUnreadableFunc fn,
				       gpointer data, GError **error)
{
	g_autoptr(GError) local = NULL;
	guint64 at = iter->next;

	while (!pgate_store_message_iter_next(iter, out, &local)) {
		if (local == NULL)
			return FALSE;	/* the end */
		/* a record that does not decode leaves the iterator past
		 * it; damaged pages (PGATE_ERROR_CORRUPT too) do not, and
		 * end the iteration */
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_CORRUPT) || iter->next == at) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		/* iter_next left the iterator past it */
		if (iter->unreadable++ == 0)
			iter->first_unreadable = iter->next - 1;
		if (fn != NULL)
			fn(iter->next - 1, local, data);
		g_clear_error(&local);
		at = iter->next;
	}
	return TRUE;
}

/* Rebuilds msgid_index from the message records. */
static gboolean
upgrade_0_to_1(PgateStoreTxn *t, GError **error)
{
	PgateStoreMessageIter it;
	PgateMessageRec *rec;
	int rc = mdb_drop(t->txn, t->store->dbi[DBI_MSGID_INDEX], 0);

	if (rc != 0)
		return txn_fail(t, error, rc, "empty msgid index");
	g_autoptr(GError) local = NULL;

	pgate_store_message_iter_init(&it, t);
	while (pgate_store_message_iter_next(&it, &rec, &local)) {
		g_autoptr(PgateMessageRec) r = rec;
		guint8 keybuf[40], ival[INDEX_VAL_LEN];
		const void *kp;
		MDB_val k, v = { INDEX_VAL_LEN, ival };

		k.mv_size = msgid_key(r->msgid, keybuf, &kp);
		k.mv_data = (void *)kp;
		pgate_store__be64(ival, r->num);
		memcpy(ival + 8, r->content_hash, 32);
		rc = mdb_put(t->txn, t->store->dbi[DBI_MSGID_INDEX], &k, &v, 0);
		if (rc != 0)
			return txn_fail(t, error, rc, "put msgid index");
	}
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

/* ---- series and threading indexes ---- */

/* A string key as LMDB takes it: itself, or \x01 and its SHA-256 when
 * empty or too long. */
static MDB_val
str_key(const char *s, guint8 buf[40])
{
	const void *p;
	MDB_val k;

	k.mv_size = msgid_key(s, buf, &p);
	k.mv_data = (void *)p;
	return k;
}

gboolean
pgate_store_series_put(PgateStoreTxn *t, const PgateSeriesRec *rec,
		       GError **error)
{
	PgateStoreBuf *enc = &t->store->enc;
	guint8 kb[40];
	MDB_val k = str_key(rec->id, kb), v;
	int rc;

	pgate_store__series_encode(enc, rec);
	v = (MDB_val){ enc->len, enc->data };
	rc = txn_put(t, DBI_SERIES, &k, &v, 0);

	if (rc != 0)
		return txn_fail(t, error, rc, "put series");
	return TRUE;
}

PgateSeriesRec *
pgate_store_series_get(PgateStoreTxn *t, const char *id, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(id, kb), v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_SERIES], &k, &v);

	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("series %s", id);

		return set_mdb_error(error, rc, what), NULL;
	}
	return pgate_store__series_decode(v.mv_data, v.mv_size, error);
}

gboolean
pgate_store_series_delete(PgateStoreTxn *t, const char *id, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(id, kb);
	int rc = mdb_del(t->txn, t->store->dbi[DBI_SERIES], &k, NULL);

	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete series");
	return TRUE;
}

void
pgate_store_series_iter_init(PgateStoreSeriesIter *iter, PgateStoreTxn *txn)
{
	iter->txn = txn;
	iter->last = NULL;
	iter->started = FALSE;
}

void
pgate_store_series_iter_clear(PgateStoreSeriesIter *iter)
{
	g_clear_pointer(&iter->last, g_free);
}

gboolean
pgate_store_series_iter_next(PgateStoreSeriesIter *iter, PgateSeriesRec **out,
			     GError **error)
{
	PgateStoreTxn *t = iter->txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*out = NULL;
	rc = txn_cursor(t, DBI_SERIES, &cur);
	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	if (iter->last == NULL) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	} else {
		k.mv_size = strlen(iter->last);
		k.mv_data = iter->last;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == 0 && k.mv_size == strlen(iter->last) &&
		    memcmp(k.mv_data, iter->last, k.mv_size) == 0)
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc == 0) {
		g_free(iter->last);
		iter->last = g_strndup(k.mv_data, k.mv_size);
		*out = pgate_store__series_decode(v.mv_data, v.mv_size, error);
	}
	if (rc == MDB_NOTFOUND)
		return FALSE;
	if (rc != 0)
		return set_mdb_error(error, rc, "iterate series");
	return *out != NULL;
}

gboolean
pgate_store_msg_series_put(PgateStoreTxn *t, guint64 num, const char *id,
			   GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v = { strlen(id), (void *)id };
	int rc;

	pgate_store__be64(kb, num);
	rc = txn_put(t, DBI_MSG_SERIES, &k, &v, 0);
	if (rc != 0)
		return txn_fail(t, error, rc, "put msg_series");
	return TRUE;
}

gboolean
pgate_store_msg_series_get(PgateStoreTxn *t, guint64 num, char **out,
			   GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	*out = NULL;
	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_MSG_SERIES], &k, &v);
	if (rc == MDB_NOTFOUND)
		return TRUE;
	if (rc != 0)
		return set_mdb_error(error, rc, "get msg_series");
	*out = g_strndup(v.mv_data, v.mv_size);
	return TRUE;
}

gboolean
pgate_store_msg_series_delete(PgateStoreTxn *t, guint64 num, GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb };
	int rc;

	pgate_store__be64(kb, num);
	rc = mdb_del(t->txn, t->store->dbi[DBI_MSG_SERIES], &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete msg_series");
	return TRUE;
}

static int
index_which(PgateStoreIndex idx)
{
	switch (idx) {
	case PGATE_STORE_INDEX_REFS:
		return DBI_REFS_INDEX;
	case PGATE_STORE_INDEX_CHANGE:
		return DBI_CHANGE_INDEX;
	case PGATE_STORE_INDEX_PATCHID:
		return DBI_PATCHID_INDEX;
	case PGATE_STORE_INDEX_LINK:
		return DBI_LINK_INDEX;
	}
	g_assert_not_reached();
}

static MDB_dbi
index_dbi(PgateStoreTxn *t, PgateStoreIndex idx)
{
	return t->store->dbi[index_which(idx)];
}

gboolean
pgate_store_index_add(PgateStoreTxn *t, PgateStoreIndex idx, const char *key,
		      const void *val, gsize len, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(key, kb), v = { len, (void *)val };
	int rc;

	g_return_val_if_fail(len > 0 && len <= MAX_PLAIN_KEY, FALSE);
	rc = txn_put(t, index_which(idx), &k, &v, MDB_NODUPDATA);
	if (rc != 0 && rc != MDB_KEYEXIST)
		return txn_fail(t, error, rc, "put index");
	return TRUE;
}

gboolean
pgate_store_index_remove(PgateStoreTxn *t, PgateStoreIndex idx,
			 const char *key, const void *val, gsize len,
			 GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(key, kb), v = { len, (void *)val };
	int rc = mdb_del(t->txn, index_dbi(t, idx), &k, &v);

	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete index entry");
	return TRUE;
}

gboolean
pgate_store_index_foreach(PgateStoreTxn *t, PgateStoreIndex idx,
			  const char *key, PgateStoreValueFunc fn,
			  gpointer data, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(key, kb), v;
	MDB_cursor *cur;
	int rc = txn_cursor(t, index_which(idx), &cur);

	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		if (!fn(v.mv_data, v.mv_size, data, error))
			return FALSE;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, "read index");
	return TRUE;
}

static gboolean
collect_bytes(const void *val, gsize len, gpointer data, GError **error)
{
	g_ptr_array_add(data, g_bytes_new(val, len));
	return TRUE;
}

GPtrArray *
pgate_store_index_lookup(PgateStoreTxn *t, PgateStoreIndex idx,
			 const char *key, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);

	if (!pgate_store_index_foreach(t, idx, key, collect_bytes, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

gboolean
pgate_store_refs_add(PgateStoreTxn *t, const char *msgid, guint64 num,
		     GError **error)
{
	guint8 b[8];

	pgate_store__be64(b, num);
	return pgate_store_index_add(t, PGATE_STORE_INDEX_REFS, msgid, b, 8,
				     error);
}

gboolean
pgate_store_refs_remove(PgateStoreTxn *t, const char *msgid, guint64 num,
			GError **error)
{
	guint8 b[8];

	pgate_store__be64(b, num);
	return pgate_store_index_remove(t, PGATE_STORE_INDEX_REFS, msgid, b, 8,
					error);
}

static gboolean
collect_num(const void *val, gsize len, gpointer data, GError **error)
{
	if (len == 8) {
		guint64 n = pgate_store__get_be64(val);

		g_array_append_val((GArray *)data, n);
	}
	return TRUE;
}

gboolean
pgate_store_refs_lookup_into(PgateStoreTxn *t, const char *msgid,
			     GArray *nums, GError **error)
{
	return pgate_store_index_foreach(t, PGATE_STORE_INDEX_REFS, msgid,
					 collect_num, nums, error);
}

GArray *
pgate_store_refs_lookup(PgateStoreTxn *t, const char *msgid, GError **error)
{
	g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(guint64));

	if (!pgate_store_refs_lookup_into(t, msgid, nums, error))
		return NULL;
	return g_steal_pointer(&nums);
}

/* name_keys key: the sender (hashed when too long), NUL, the date with
 * its sign bit flipped (BE order is then numeric order), the series id.
 * Returns its length. */
#define NAME_ID_MAX 64
#define NAME_KEY_LEN (SENDER_KEY_MAX + 1 + 8 + NAME_ID_MAX)

static gsize
name_key(const char *sender, gint64 date, const char *id, guint8 *buf)
{
	gsize len = sender_key(sender, buf), idlen = strlen(id);

	buf[len++] = '\0';
	pgate_store__be64(buf + len, (guint64)date ^ G_GUINT64_CONSTANT(0x8000000000000000));
	len += 8;
	memcpy(buf + len, id, idlen);
	return len + idlen;
}

gboolean
pgate_store_name_put(PgateStoreTxn *t, const char *sender, gint64 date,
		     const char *id, const guint8 *val, gsize len,
		     GError **error)
{
	guint8 kb[NAME_KEY_LEN];
	MDB_val k, v = { len, (void *)val };
	int rc;

	g_return_val_if_fail(strlen(id) <= NAME_ID_MAX, FALSE);
	k.mv_data = kb;
	k.mv_size = name_key(sender, date, id, kb);
	rc = txn_put(t, DBI_NAME_KEYS, &k, &v, 0);
	if (rc != 0)
		return txn_fail(t, error, rc, "put name keys");
	return TRUE;
}

gboolean
pgate_store_name_delete(PgateStoreTxn *t, const char *sender, gint64 date,
			const char *id, GError **error)
{
	guint8 kb[NAME_KEY_LEN];
	MDB_val k;
	int rc;

	g_return_val_if_fail(strlen(id) <= NAME_ID_MAX, FALSE);
	k.mv_data = kb;
	k.mv_size = name_key(sender, date, id, kb);
	rc = mdb_del(t->txn, t->store->dbi[DBI_NAME_KEYS], &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete name keys");
	return TRUE;
}

gboolean
pgate_store_name_range(PgateStoreTxn *t, const char *sender, gint64 from,
		       gint64 to, PgateStoreNameFunc fn, gpointer data,
		       GError **error)
{
	guint8 kb[NAME_KEY_LEN], hi[8];
	/* (the key of no id: the sender's part, then the date) */
	gsize plen = name_key(sender, from, "", kb) - 8;
	MDB_val k = { plen + 8, kb }, v;
	MDB_cursor *cur;
	int rc = txn_cursor(t, DBI_NAME_KEYS, &cur);

	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	pgate_store__be64(hi, (guint64)to ^ G_GUINT64_CONSTANT(0x8000000000000000));
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const guint8 *kp = k.mv_data;

		if (k.mv_size < plen + 8 || memcmp(kp, kb, plen) != 0 ||
		    memcmp(kp + plen, hi, 8) > 0)
			break;
		if (!fn((gint64)(pgate_store__get_be64(kp + plen) ^
				 G_GUINT64_CONSTANT(0x8000000000000000)),
			(const char *)kp + plen + 8, k.mv_size - plen - 8,
			v.mv_data, v.mv_size, data, error))
			return FALSE;
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, "read name keys");
	return TRUE;
}

/* author_index key: the address (hashed when too long), NUL, the date
 * with its sign bit flipped (so that BE order is numeric order), num. */
#define AUTHOR_KEY_LEN (SENDER_KEY_MAX + 1 + 8 + 8)

static gsize
author_key(const char *email, gint64 date, guint64 num, guint8 *buf)
{
	gsize len = sender_key(email, buf);

	buf[len++] = '\0';
	pgate_store__be64(buf + len, (guint64)date ^ G_GUINT64_CONSTANT(0x8000000000000000));
	pgate_store__be64(buf + len + 8, num);
	return len + 16;
}

gboolean
pgate_store_author_add(PgateStoreTxn *t, const char *email, gint64 date,
		       guint64 num, GError **error)
{
	guint8 kb[AUTHOR_KEY_LEN];
	MDB_val k = { author_key(email, date, num, kb), kb }, v = { 0, kb };
	int rc = txn_put(t, DBI_AUTHOR_INDEX, &k, &v, 0);

	if (rc != 0)
		return txn_fail(t, error, rc, "put author index");
	return TRUE;
}

gboolean
pgate_store_author_remove(PgateStoreTxn *t, const char *email, gint64 date,
			  guint64 num, GError **error)
{
	guint8 kb[AUTHOR_KEY_LEN];
	MDB_val k = { author_key(email, date, num, kb), kb };
	int rc = mdb_del(t->txn, t->store->dbi[DBI_AUTHOR_INDEX], &k, NULL);

	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete author index entry");
	return TRUE;
}

GArray *
pgate_store_author_range(PgateStoreTxn *t, const char *email, gint64 from,
			 gint64 to, GError **error)
{
	g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(guint64));
	guint8 lo[AUTHOR_KEY_LEN], hi[AUTHOR_KEY_LEN];
	gsize lol = author_key(email, from, 0, lo);
	gsize hil = author_key(email, to, G_MAXUINT64, hi);
	MDB_val k = { lol, lo }, v;
	MDB_cursor *cur;
	int rc = txn_cursor(t, DBI_AUTHOR_INDEX, &cur);

	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor"), NULL;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		MDB_val h = { hil, hi };
		guint64 n;

		if (mdb_cmp(t->txn, t->store->dbi[DBI_AUTHOR_INDEX], &k, &h) > 0)
			break;
		if (k.mv_size == hil) {
			n = pgate_store__get_be64((const guint8 *)k.mv_data +
						  k.mv_size - 8);
			g_array_append_val(nums, n);
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, "read author index"), NULL;
	return g_steal_pointer(&nums);
}

static const int derived_dbis[] = { DBI_REFS_INDEX, DBI_AUTHOR_INDEX,
				    DBI_SERIES, DBI_MSG_SERIES,
				    DBI_CHANGE_INDEX, DBI_PATCHID_INDEX,
				    DBI_NAME_KEYS, DBI_LINK_INDEX };

gboolean
pgate_store_rethread_needed(PgateStoreTxn *t)
{
	g_autoptr(GBytes) b = pgate_store_meta_get(t, "rethread_needed", NULL);
	gsize n = 0;
	const char *v = b != NULL ? g_bytes_get_data(b, &n) : NULL;

	return n == 1 && v[0] == '1';
}

gboolean
pgate_store_set_rethread_needed(PgateStoreTxn *t, gboolean needed,
				GError **error)
{
	return pgate_store_meta_put(t, "rethread_needed", needed ? "1" : "0", 1,
				    error);
}

char *
pgate_store_threading_failed(PgateStoreTxn *t)
{
	g_autoptr(GBytes) b = NULL;
	gsize n = 0;
	const char *v;

	/* a reason a rethread by an older patchgate left behind is moot */
	if (!pgate_store_rethread_needed(t))
		return NULL;
	b = pgate_store_meta_get(t, "threading_failed", NULL);
	v = b != NULL ? g_bytes_get_data(b, &n) : NULL;
	return n > 0 ? g_strndup(v, n) : NULL;
}

gboolean
pgate_store_set_threading_failed(PgateStoreTxn *t, const char *why,
				 GError **error)
{
	/* "": not set (meta values are put, never deleted).  A reason may
	 * quote mail (a Message-ID in an error): at most 400 bytes, cut
	 * between characters */
	gsize n = why != NULL ? strnlen(why, 401) : 0;

	if (n > 400)
		for (n = 400; n > 0 && ((guchar)why[n] & 0xC0) == 0x80; n--)
			;
	if (why != NULL && n == 0) {
		why = "threading failed";
		n = strlen(why);
	}
	return pgate_store_meta_put(t, "threading_failed", why ? why : "", n,
				    error);
}

static void
hex_append(GString *out, const MDB_val *v)
{
	gsize at = out->len;

	g_string_set_size(out, at + 2 * v->mv_size);
	pgate_hex_encode(out->str + at, v->mv_data, v->mv_size);
}

static gint
line_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One entry as pgate_store_derived_dump() shows it. */
static char *
dump_entry(PgateStoreTxn *t, int which, MDB_val k, MDB_val v)
{
	GString *line = g_string_new(dbi_table[which].name);
	/* message numbers go by arrival: shown as their Message-IDs (the
	 * key's last 8 bytes in author_index, the key in msg_series, the
	 * value in refs_index) */
	MDB_val *num = which == DBI_REFS_INDEX ? &v
		       : which == DBI_MSG_SERIES || which == DBI_AUTHOR_INDEX
			       ? &k : NULL;
	g_autoptr(PgateMessageRec) r = NULL;

	if (num != NULL && num->mv_size >= 8) {
		num->mv_size -= 8;
		r = pgate_store_message_get(
			t, pgate_store__get_be64((const guint8 *)num->mv_data +
						 num->mv_size), NULL);
	}
	g_string_append_c(line, ' ');
	hex_append(line, &k);
	g_string_append_c(line, ' ');
	hex_append(line, &v);
	if (num != NULL)
		g_string_append_printf(line, " <%s>", r ? r->msgid : "?");
	return g_string_free(line, FALSE);
}

char *
pgate_store_derived_dump(PgateStoreTxn *t, GError **error)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);

	for (gsize i = 0; i < G_N_ELEMENTS(derived_dbis); i++) {
		MDB_cursor *cur;
		MDB_val k, v;
		int rc;

		/* (a series record holds message numbers too) */
		if (derived_dbis[i] == DBI_SERIES)
			continue;
		rc = mdb_cursor_open(t->txn, t->store->dbi[derived_dbis[i]],
				     &cur);
		if (rc != 0)
			return set_mdb_error(error, rc, "open cursor"), NULL;
		while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
			g_ptr_array_add(lines,
					dump_entry(t, derived_dbis[i], k, v));
		mdb_cursor_close(cur);
		if (rc != MDB_NOTFOUND)
			return set_mdb_error(error, rc, "walk"), NULL;
	}
	g_ptr_array_sort(lines, line_cmp);
	g_ptr_array_add(lines, g_strdup(""));
	g_ptr_array_add(lines, NULL);
	return g_strjoinv("\n", (char **)lines->pdata);
}

gboolean
pgate_store_derived_clear(PgateStoreTxn *t, GError **error)
{
	for (gsize i = 0; i < G_N_ELEMENTS(derived_dbis); i++) {
		int rc = mdb_drop(t->txn, t->store->dbi[derived_dbis[i]], 0);

		if (rc != 0)
			return txn_fail(t, error, rc, "empty threading databases");
	}
	return TRUE;
}

/* ---- tables: the later stages' per-series state and the outbox ---- */

static int
table_which(PgateStoreTable table)
{
	switch (table) {
	case PGATE_STORE_TABLE_STAGE:
		return DBI_STAGE;
	case PGATE_STORE_TABLE_OUTBOX:
		return DBI_OUTBOX;
	}
	g_assert_not_reached();
}

static MDB_dbi
table_dbi(PgateStoreTxn *t, PgateStoreTable table)
{
	return t->store->dbi[table_which(table)];
}

static gboolean
table_key(const char *key, MDB_val *k, GError **error)
{
	gsize len = strlen(key);

	if (len == 0 || len > MAX_PLAIN_KEY) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "table key of %zu bytes (1 to %d allowed)", len,
			    MAX_PLAIN_KEY);
		return FALSE;
	}
	k->mv_size = len;
	k->mv_data = (void *)key;
	return TRUE;
}

gboolean
pgate_store_table_put(PgateStoreTxn *t, PgateStoreTable table,
		      const char *key, const void *val, gsize len,
		      GError **error)
{
	MDB_val k, v = { len, (void *)val };
	int rc;

	if (!table_key(key, &k, error))
		return FALSE;
	rc = mdb_put(t->txn, table_dbi(t, table), &k, &v, 0);
	if (rc != 0)
		return txn_fail(t, error, rc, "put table entry");
	return TRUE;
}

GBytes *
pgate_store_table_get(PgateStoreTxn *t, PgateStoreTable table,
		      const char *key, GError **error)
{
	MDB_val k, v;
	int rc;

	if (!table_key(key, &k, error))
		return NULL;
	rc = mdb_get(t->txn, table_dbi(t, table), &k, &v);
	if (rc != 0)
		return set_mdb_error(error, rc, key), NULL;
	return g_bytes_new(v.mv_data, v.mv_size);
}

gboolean
pgate_store_table_delete(PgateStoreTxn *t, PgateStoreTable table,
			 const char *key, GError **error)
{
	MDB_val k;
	int rc;

	if (!table_key(key, &k, error))
		return FALSE;
	rc = mdb_del(t->txn, table_dbi(t, table), &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return txn_fail(t, error, rc, "delete table entry");
	return TRUE;
}

void
pgate_store_entry_free(PgateStoreEntry *e)
{
	if (e == NULL)
		return;
	g_free(e->key);
	g_bytes_unref(e->val);
	g_free(e);
}

GPtrArray *
pgate_store_table_scan(PgateStoreTxn *t, PgateStoreTable table,
		       const char *prefix, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_store_entry_free);
	gsize plen = prefix ? strlen(prefix) : 0;
	MDB_val k = { plen, (void *)prefix }, v;
	MDB_cursor *cur;
	int rc = txn_cursor(t, table_which(table), &cur);

	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor"), NULL;
	rc = mdb_cursor_get(cur, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST);
	while (rc == 0) {
		PgateStoreEntry *e;

		if (plen > 0 && (k.mv_size < plen ||
				 memcmp(k.mv_data, prefix, plen) != 0))
			break;
		e = g_new0(PgateStoreEntry, 1);
		e->key = g_strndup(k.mv_data, k.mv_size);
		e->val = g_bytes_new(v.mv_data, v.mv_size);
		g_ptr_array_add(out, e);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, "scan table"), NULL;
	return g_steal_pointer(&out);
}

/* ---- for store verify (verify.c) ---- */

const char *
pgate_store__db_name(int which)
{
	g_return_val_if_fail(which >= 0 && which < DBI_COUNT, NULL);
	return dbi_table[which].name;
}

gsize
pgate_store__str_key(const char *s, guint8 buf[PGATE_STORE__HASHED_KEY_LEN],
		     const void **out)
{
	return msgid_key(s, buf, out);
}

gboolean
pgate_store__walk(PgateStoreTxn *t, int which, PgateStoreEntryFunc fn,
		  gpointer data, guint64 *out_count, guint64 *out_recorded,
		  GError **error)
{
	MDB_cursor *cur;
	MDB_stat st;
	MDB_val k, v;
	int rc;

	*out_count = 0;
	*out_recorded = 0;
	rc = mdb_stat(t->txn, t->store->dbi[which], &st);
	if (rc != 0)
		return set_mdb_error(error, rc, dbi_table[which].name);
	*out_recorded = st.ms_entries;
	/* a cursor of its own: @fn may look things up in this database */
	rc = mdb_cursor_open(t->txn, t->store->dbi[which], &cur);
	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		/* damaged branch pages can lead the cursor round and round */
		if (++*out_count > st.ms_entries) {
			mdb_cursor_close(cur);
			g_set_error(error, PGATE_STORE_ERROR,
				    PGATE_ERROR_CORRUPT, "%s holds more entries "
				    "than its header says (%" G_GUINT64_FORMAT
				    "): its pages are damaged",
				    dbi_table[which].name,
				    (guint64)st.ms_entries);
			return FALSE;
		}
		if (!fn(k.mv_data, k.mv_size, v.mv_data, v.mv_size, data,
			error)) {
			mdb_cursor_close(cur);
			return FALSE;
		}
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND) {
		g_autofree char *what = g_strdup_printf(
			"walk %s after %" G_GUINT64_FORMAT " entries",
			dbi_table[which].name, *out_count);

		return set_mdb_error(error, rc, what);
	}
	return TRUE;
}

gboolean
pgate_store__peek(PgateStoreTxn *t, int which, const void *key, gsize klen,
		  const guint8 **out_val, gsize *out_len, GError **error)
{
	MDB_val k = { klen, (void *)key }, v;
	int rc = mdb_get(t->txn, t->store->dbi[which], &k, &v);

	if (rc != 0)
		return set_mdb_error(error, rc, dbi_table[which].name);
	*out_val = v.mv_data;
	*out_len = v.mv_size;
	return TRUE;
}

gboolean
pgate_store__has_dup(PgateStoreTxn *t, int which, const void *key, gsize klen,
		     const void *val, gsize vlen, gboolean *out, GError **error)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	MDB_cursor *cur;
	int rc;

	g_return_val_if_fail(dbi_table[which].flags & MDB_DUPSORT, FALSE);
	*out = FALSE;
	/* a cursor of its own: the caller may be walking this database */
	rc = mdb_cursor_open(t->txn, t->store->dbi[which], &cur);
	if (rc != 0)
		return set_mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH);
	mdb_cursor_close(cur);
	if (rc == 0)
		*out = TRUE;
	else if (rc != MDB_NOTFOUND)
		return set_mdb_error(error, rc, dbi_table[which].name);
	return TRUE;
}
