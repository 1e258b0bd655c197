/* active.c - the active set: the series a pipeline pass must visit.
 *
 * Database (not in env.c's table: created by its first write, so that
 * stores written before it open as they are):
 *   series_active  series id (as series keys: str_key) -> u64 BE mark
 *                  (the id of the write transaction that marked it) and
 *                  the id; and the key "\0" -> the pipeline's token that
 *                  says the set is complete (a series key is never
 *                  "\0": ids are not empty, hashed keys start \x01)
 *
 * pgate_store_series_put() and pgate_store_series_delete() mark the
 * series they write, in their transaction; the pipeline settles an entry
 * when a pass leaves its series in a final state, unless it was marked
 * again meanwhile (its mark changed).  A rethread
 * (pgate_store_derived_clear) forgets the token: the pass after it
 * visits every series.
 */
#include "store/store-private.h"

#include <string.h>

#define ACTIVE_DB "series_active"

static const guint8 complete_key[1] = { 0 };

/* Opens series_active in @t: TRUE when it is there (or was just made,
 * with @create); FALSE and no error when it is not. */
static gboolean
active_dbi(PgateStoreTxn *t, gboolean create, MDB_dbi *dbi, GError **error)
{
	int rc = mdb_dbi_open(t->txn, ACTIVE_DB, create ? MDB_CREATE : 0, dbi);

	if (rc == MDB_NOTFOUND && !create)
		return FALSE;
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc,
					     "open the series_active database");
	return TRUE;
}

static gboolean
put_mark(PgateStoreTxn *t, MDB_dbi dbi, const char *id, GError **error)
{
	guint8 kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	gsize idlen = strlen(id);
	g_autofree guint8 *vb = g_malloc(8 + idlen);
	MDB_val k, v = { 8 + idlen, vb };
	int rc;

	k.mv_size = pgate_store__str_key(id, kb, &kp);
	k.mv_data = (void *)kp;
	pgate_store__be64(vb, mdb_txn_id(t->txn));
	memcpy(vb + 8, id, idlen);
	rc = mdb_put(t->txn, dbi, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put series_active");
	return TRUE;
}

gboolean
pgate_store_active_mark(PgateStoreTxn *t, const char *id, GError **error)
{
	MDB_dbi dbi;

	if (!active_dbi(t, TRUE, &dbi, error))
		return FALSE;
	return put_mark(t, dbi, id, error);
}

void
pgate_store_active_free(PgateStoreActive *a)
{
	if (a == NULL)
		return;
	g_free(a->id);
	g_free(a);
}

GPtrArray *
pgate_store_active_list(PgateStoreTxn *t, GBytes **out_token,
			GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_store_active_free);
	g_autoptr(GError) local = NULL;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	int rc;

	if (out_token != NULL)
		*out_token = NULL;
	if (!active_dbi(t, FALSE, &dbi, &local)) {
		if (local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		return g_steal_pointer(&out);
	}
	rc = mdb_cursor_open(t->txn, dbi, &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "series_active"), NULL;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		PgateStoreActive *a;

		if (k.mv_size == 1 && ((const guint8 *)k.mv_data)[0] == 0) {
			if (out_token != NULL)
				*out_token = g_bytes_new(v.mv_data, v.mv_size);
			continue;
		}
		if (v.mv_size <= 8)
			continue;	/* not ours: verify says so */
		a = g_new0(PgateStoreActive, 1);
		a->mark = pgate_store__get_be64(v.mv_data);
		a->id = g_strndup((const char *)v.mv_data + 8, v.mv_size - 8);
		g_ptr_array_add(out, a);
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND) {
		if (out_token != NULL)
			g_clear_pointer(out_token, g_bytes_unref);
		return pgate_store__mdb_error(error, rc, "series_active"), NULL;
	}
	return g_steal_pointer(&out);
}

gboolean
pgate_store_active_settle(PgateStoreTxn *t, const char *id, guint64 mark,
			  gboolean keep, GError **error)
{
	guint8 kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	MDB_dbi dbi;
	MDB_val k, v;
	int rc;

	if (!active_dbi(t, TRUE, &dbi, error))
		return FALSE;
	k.mv_size = pgate_store__str_key(id, kb, &kp);
	k.mv_data = (void *)kp;
	rc = mdb_get(t->txn, dbi, &k, &v);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "get series_active");
	if (keep)
		return rc == 0 ? TRUE : put_mark(t, dbi, id, error);
	if (rc == MDB_NOTFOUND ||
	    (v.mv_size > 8 && pgate_store__get_be64(v.mv_data) != mark))
		return TRUE;	/* marked again since: the next pass sees it */
	rc = mdb_del(t->txn, dbi, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete series_active");
	return TRUE;
}

gboolean
pgate_store_active_complete(PgateStoreTxn *t, GBytes *token, GError **error)
{
	MDB_dbi dbi;
	MDB_val k = { sizeof complete_key, (void *)complete_key }, v;
	int rc;

	if (token == NULL) {
		g_autoptr(GError) local = NULL;

		if (!active_dbi(t, FALSE, &dbi, &local)) {
			if (local == NULL)
				return TRUE;
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		rc = mdb_del(t->txn, dbi, &k, NULL);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return pgate_store__txn_fail(t, error, rc,
						     "reset series_active");
		return TRUE;
	}
	if (!active_dbi(t, TRUE, &dbi, error))
		return FALSE;
	v.mv_data = (void *)g_bytes_get_data(token, &v.mv_size);
	rc = mdb_put(t->txn, dbi, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put series_active");
	return TRUE;
}

/* ---- a pass's commits, one sync each instead of two ----
 *
 * MDB_NOMETASYNC: each commit syncs its data pages but not the meta page,
 * which the next commit's sync (or pgate_store_sync) writes out; a system
 * crash may undo the last commit, never tear the store (LMDB keeps ACI). */

void
pgate_store_defer_sync(PgateStore *store, gboolean defer)
{
	mdb_env_set_flags(store->env, MDB_NOMETASYNC, defer ? 1 : 0);
}

gboolean
pgate_store_sync(PgateStore *store, GError **error)
{
	int rc = mdb_env_sync(store->env, 1);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "sync the store");
	return TRUE;
}
