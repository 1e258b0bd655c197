/* env.c - the LMDB environment and its transactions.
 *
 * Opening a store (the header of data.mdb checked first, every database
 * of dbi_table opened in one transaction, the schema checked), the
 * writer's lock, read snapshots, pgate_store_write()'s grow-and-retry
 * loop, schema upgrades, the meta database, and the walks and peeks of
 * store verify (verify.c).  LMDB's errors are translated here
 * (pgate_store__mdb_error), once.  The databases' formats are described
 * at the top of the files that keep them (message.c, index.c, table.c)
 * and in docs/store-format.md:
 *
 *   meta         string key -> value ("schema_version" u32 BE,
 *                "next_msgnum" u64 BE, "rethread_needed",
 *                "threading_failed", resume points of later stages)
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

/* Translates an LMDB error once, here at the boundary. */
gboolean
pgate_store__mdb_error(GError **error, int rc, const char *what)
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
gboolean
pgate_store__txn_fail(PgateStoreTxn *t, GError **error, int rc,
		      const char *what)
{
	if (rc == MDB_MAP_FULL)
		t->map_full = TRUE;
	return pgate_store__mdb_error(error, rc, what);
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

guint64
pgate_store_used_size(PgateStore *store)
{
	MDB_envinfo info;
	MDB_stat st;

	mdb_env_info(store->env, &info);
	if (mdb_env_stat(store->env, &st) != 0)
		return 0;
	return ((guint64)info.me_last_pgno + 1) * st.ms_psize;
}

guint64
pgate_store_max_map_size(PgateStore *store)
{
	return store->opts.max_map_size;
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
		return pgate_store__mdb_error(error, rc, "begin transaction");
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

/* A writer that takes write.lock again and again (ingest's batches, a
 * rethread's) would keep it from the others: it takes it back the moment
 * it lets go, while a delivery waiting for it polls (lock_store) and
 * mostly finds it taken, until its lock_timeout_ms runs out.  So a
 * writer waiting for write.lock holds write.want shared meanwhile, and
 * one that held write.lock before lets them go first: while write.want
 * cannot be had exclusively, somebody waits, and it waits too (100 ms at
 * most, so that a waiter that is gone cannot stop it for long). */
static void
let_waiters_in(PgateStore *store)
{
	for (int i = 0; i < 100; i++) {
		if (flock(store->want_fd, LOCK_EX | LOCK_NB) == 0) {
			flock(store->want_fd, LOCK_UN);
			return;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			return;
		g_usleep(1000);
	}
}

static gboolean
lock_writer(PgateStore *store, GError **error)
{
	gboolean ok;

	if (store->want_fd < 0)
		return lock_store(store, LOCK_EX, error);
	if (store->wrote)
		let_waiters_in(store);
	/* (another writer holds it exclusively for a moment at most) */
	while (flock(store->want_fd, LOCK_SH) < 0 && errno == EINTR)
		;
	ok = lock_store(store, LOCK_EX, error);
	flock(store->want_fd, LOCK_UN);
	store->wrote = ok;
	return ok;
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
		return pgate_store__mdb_error(error, rc,
					      "read the schema version");
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
		return pgate_store__mdb_error(error, rc, "open databases");
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
			return pgate_store__mdb_error(error, rc,
						      "open databases");
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
		return pgate_store__mdb_error(error, rc, "create databases");
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
	/* schema 4 reads as it is: its records have no raw_codec, and the
	 * first compressed one written marks the store 5
	 * (pgate_store__mark_current) */
	if (store->schema < PGATE_STORE_SCHEMA_COMPAT &&
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

void
pgate_store__missing(GError **error, const char *dir, int e)
{
	/* "no store" only when there is none: a store this user may not
	 * reach is there all the same */
	if (e == ENOENT || e == ENOTDIR)
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no store at %s", dir);
	else
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "store %s: %s", dir, g_strerror(e));
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
	store->want_fd = -1;
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
		pgate_store__missing(error, dir, errno);
		return NULL;
	}

	if (writable) {
		g_autofree char *want = g_build_filename(dir, "write.want",
							 NULL);

		/* without it (a store made before it, on a file system that
		 * is read-only now), writers just take turns less fairly */
		store->want_fd = open(want, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
		return pgate_store__mdb_error(error, rc, "create environment"),
					      NULL;
	mdb_env_set_assert(store->env, lmdb_assert);
	/* DBI_COUNT, upstream, series_dates, series_active, the derived ones
	 * of the other generation, an upgrade's old ones */
	mdb_env_set_maxdbs(store->env, 40);
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

		return pgate_store__mdb_error(error, rc, what), NULL;
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
	if (store->want_fd >= 0)
		close(store->want_fd);
	g_free(store->dir);
	g_free(store->enc.data);
	pgate_store__message_cleanup(store);
	g_free(store);
}

guint
pgate_store_schema_version(PgateStore *store)
{
	return store->schema;
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
	if (!begin(store, MDB_RDONLY, &t->txn, error) ||
	    !pgate_store__txn_dbis(t, error)) {
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
		return pgate_store__mdb_error(error, rc, "grow map");
	g_debug("store %s: map grown to %" G_GUINT64_FORMAT " bytes",
		store->dir, next);
	return TRUE;
}

/* The pages of the map this process touched count in its RSS, and a bulk
 * ingest, a pass over every series, a listing or a rethread reads much
 * of the store: drop the mapping's pages (they stay in the page cache,
 * and the next access maps them again: LMDB's map is a read-only shared
 * file mapping, so nothing is lost).  This keeps a long run's memory
 * bounded by what it reads between two drops, not by the store's size.
 * A writer drops them after every 16 MiB the store grew; pgate_store__trim
 * (every 512 records read or written, pgate_store__step) when more than
 * MAP_RSS_MAX of file pages are resident. */
#define MAP_RSS_MAX (64u << 20)

static void
drop_map_pages(PgateStore *store)
{
	g_autofree char *maps = NULL;
	g_autofree char *path = NULL, *real = NULL;
	const char *line;

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

static void
release_pages(PgateStore *store)
{
	MDB_envinfo info;
	MDB_stat st;

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
	drop_map_pages(store);
}

void
pgate_store__trim(PgateStore *store)
{
	char buf[128];
	unsigned long size, resident, shared;
	ssize_t n;
	int fd;

	/* statm's third field: the resident file-backed pages, which are
	 * mostly the map's (a few MB of libraries besides) */
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3 ||
	    (guint64)shared * (guint64)sysconf(_SC_PAGESIZE) <= MAP_RSS_MAX)
		return;
	drop_map_pages(store);
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
		ok = pgate_store__txn_dbis(&t, &local) &&
		     fn(&t, payload, &local);
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
			pgate_store__mdb_error(error, rc, "commit");
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
 * by hand) had no Message-ID index of content hashes: rebuild it
 * (message.c). */
static gboolean
upgrade_0_to_1(PgateStoreTxn *t, GError **error)
{
	return pgate_store__msgid_index_rebuild(t, error);
}

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
		return pgate_store__txn_fail(t, error, rc, "drop name_index");
	return pgate_store_set_rethread_needed(t, TRUE, error);
}

/* Schemas 5 and 6 add what an older store does not hold and reads as it
 * is: schema 5 keeps raw mail compressed, marked in each record (a record
 * without the mark is read as it is: what is stored stays uncompressed,
 * what is written from now on is not); schema 6 frames may name a zstd
 * dictionary kept in meta (zdict.c), and the threading databases may
 * live in generation 1 (index.c).  The first write that uses one marks
 * the store (pgate_store__mark_current), so that an older patchgate
 * refuses it.  Nothing to convert. */
static gboolean
upgrade_nothing(PgateStoreTxn *t, GError **error)
{
	return TRUE;
}

static const struct {
	guint from;
	gboolean (*fn)(PgateStoreTxn *t, GError **error);
} upgrade_steps[] = {
	{ 0, upgrade_0_to_1 },
	{ 1, upgrade_1_to_2 },
	{ 2, upgrade_2_to_3 },
	{ 3, upgrade_3_to_4 },
	{ 4, upgrade_nothing },
	{ 5, upgrade_nothing },
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

gboolean
pgate_store__mark_current(PgateStoreTxn *t, GError **error)
{
	MDB_val k = { 14, (void *)"schema_version" }, v;
	int rc;

	if (t->store->schema >= PGATE_STORE_SCHEMA_VERSION)
		return TRUE;
	rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc,
					     "read the schema version");
	if (rc == 0 && v.mv_size == 4 &&
	    get_be32(v.mv_data) >= PGATE_STORE_SCHEMA_VERSION)
		return TRUE;
	/* (store->schema is left as it is: this transaction may abort) */
	return put_schema(t, PGATE_STORE_SCHEMA_VERSION, error);
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
		return pgate_store__txn_fail(t, error, rc, "put meta");
	return TRUE;
}

gboolean
pgate_store_meta_delete(PgateStoreTxn *t, const char *key, GError **error)
{
	MDB_val k = { strlen(key), (void *)key };
	int rc = mdb_del(t->txn, t->store->dbi[DBI_META], &k, NULL);

	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete meta");
	return TRUE;
}

GBytes *
pgate_store_meta_get(PgateStoreTxn *t, const char *key, GError **error)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, key), NULL;
	return g_bytes_new(v.mv_data, v.mv_size);
}

/* ---- for store verify (verify.c) ---- */

unsigned int
pgate_store__db_flags(int which)
{
	g_return_val_if_fail(which >= 0 && which < DBI_COUNT, 0);
	return dbi_table[which].flags;
}

const char *
pgate_store__db_name(int which)
{
	g_return_val_if_fail(which >= 0 && which < DBI_COUNT, NULL);
	return dbi_table[which].name;
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
	rc = mdb_stat(t->txn, t->dbi[which], &st);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, dbi_table[which].name);
	*out_recorded = st.ms_entries;
	/* a cursor of its own: @fn may look things up in this database */
	rc = mdb_cursor_open(t->txn, t->dbi[which], &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		pgate_store__step(t);
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

		return pgate_store__mdb_error(error, rc, what);
	}
	return TRUE;
}

gboolean
pgate_store__peek(PgateStoreTxn *t, int which, const void *key, gsize klen,
		  const guint8 **out_val, gsize *out_len, GError **error)
{
	MDB_val k = { klen, (void *)key }, v;
	int rc = mdb_get(t->txn, t->dbi[which], &k, &v);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, dbi_table[which].name);
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
	rc = mdb_cursor_open(t->txn, t->dbi[which], &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH);
	mdb_cursor_close(cur);
	if (rc == 0)
		*out = TRUE;
	else if (rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, dbi_table[which].name);
	return TRUE;
}
