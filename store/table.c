/* table.c - the tables: the later stages' per-series state and the outbox.
 *
 * Databases, since schema 3 (see docs/store-format.md, and
 * docs/pipeline.md for the documents they hold):
 *   stage        SERIES-ID/STAGE/... -> the stage's JSON document
 *   outbox       a report's idempotency key -> the report's JSON document
 *
 * Keys are 1 to PGATE_STORE__MAX_PLAIN_KEY bytes, kept as they are (never
 * hashed), so that pgate_store_table_scan() can go by prefix; a longer
 * one is PGATE_ERROR_INVALID.
 */
#include "store/store-private.h"

#include <string.h>

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

	if (len == 0 || len > PGATE_STORE__MAX_PLAIN_KEY) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "table key of %zu bytes (1 to %d allowed)", len,
			    PGATE_STORE__MAX_PLAIN_KEY);
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
		return pgate_store__txn_fail(t, error, rc, "put table entry");
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
	pgate_store__step(t);
	rc = mdb_get(t->txn, table_dbi(t, table), &k, &v);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, key), NULL;
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
		return pgate_store__txn_fail(t, error, rc,
					     "delete table entry");
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
	int rc = pgate_store__txn_cursor(t, table_which(table), &cur);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor"), NULL;
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
		return pgate_store__mdb_error(error, rc, "scan table"), NULL;
	return g_steal_pointer(&out);
}
