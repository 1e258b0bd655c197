/* upstream-db.c - the upstream database: what merge detection remembers of
 * the upstream trees it reads (docs/store-format.md, "upstream").
 *
 *   upstream     string key -> value; the keys and values belong to the
 *                upstream stage (upstream/upstream.h): each branch's last
 *                commit read, and the commits read by Message-ID, patch-id
 *                and author + subject, so that a patch that arrives after
 *                its commit still finds it
 *
 * The database is not in env.c's table: it is created by the first write
 * of merge detection, so that stores written before it open as they are
 * (no schema change) and a store that never reads an upstream has none.
 * A transaction opens it at its first use; a read of a store without it
 * finds nothing.  Keys longer than PGATE_STORE__MAX_PLAIN_KEY bytes are
 * kept as \x01 and their SHA-256, as Message-IDs are.
 */
#include "store/store-private.h"

#include <errno.h>
#include <string.h>

#define UPSTREAM_DB "upstream"

/* Opens the database in @t; with @create, creates it (a write).  %FALSE
 * and *@out_absent without error when there is none and not @create. */
static gboolean
upstream_dbi(PgateStoreTxn *t, gboolean create, gboolean *out_absent,
	     GError **error)
{
	int rc;

	*out_absent = FALSE;
	if (t->upstream_open)
		return TRUE;
	rc = mdb_dbi_open(t->txn, UPSTREAM_DB, create ? MDB_CREATE : 0,
			  &t->upstream_dbi);
	if (rc == MDB_NOTFOUND && !create) {
		*out_absent = TRUE;
		return FALSE;
	}
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc,
					     "open the upstream database");
	t->upstream_open = TRUE;
	return TRUE;
}

gboolean
pgate_store_upstream_put(PgateStoreTxn *t, const char *key, const void *val,
			 gsize len, GError **error)
{
	guint8 buf[PGATE_STORE__HASHED_KEY_LEN];
	MDB_val k, v = { len, (void *)val };
	gboolean absent;
	int rc;

	g_return_val_if_fail(key != NULL && *key != '\0', FALSE);
	if (!upstream_dbi(t, TRUE, &absent, error))
		return FALSE;
	k.mv_size = pgate_store__str_key(key, buf, (const void **)&k.mv_data);
	rc = mdb_put(t->txn, t->upstream_dbi, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put upstream entry");
	return TRUE;
}

GBytes *
pgate_store_upstream_get(PgateStoreTxn *t, const char *key, GError **error)
{
	guint8 buf[PGATE_STORE__HASHED_KEY_LEN];
	MDB_val k, v;
	gboolean absent;
	int rc;

	g_return_val_if_fail(key != NULL && *key != '\0', NULL);
	if (!upstream_dbi(t, FALSE, &absent, error)) {
		if (absent)
			g_set_error(error, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND, "%s: not found", key);
		return NULL;
	}
	k.mv_size = pgate_store__str_key(key, buf, (const void **)&k.mv_data);
	rc = mdb_get(t->txn, t->upstream_dbi, &k, &v);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, key), NULL;
	return g_bytes_new(v.mv_data, v.mv_size);
}

gboolean
pgate_store_upstream_delete(PgateStoreTxn *t, const char *key, GError **error)
{
	guint8 buf[PGATE_STORE__HASHED_KEY_LEN];
	MDB_val k;
	gboolean absent;
	int rc;

	g_return_val_if_fail(key != NULL && *key != '\0', FALSE);
	if (!upstream_dbi(t, FALSE, &absent, error))
		return absent;
	k.mv_size = pgate_store__str_key(key, buf, (const void **)&k.mv_data);
	rc = mdb_del(t->txn, t->upstream_dbi, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc,
					     "delete upstream entry");
	return TRUE;
}

/* A big-endian unsigned integer of @len (at most 8) bytes. */
static guint64
be_uint(const guint8 *v, gsize len)
{
	guint64 x = 0;

	for (gsize i = 0; i < len && i < 8; i++)
		x = (x << 8) | v[i];
	return x;
}

gboolean
pgate_store_message_peek_name(PgateStoreTxn *t, guint64 num,
			      PgateMsgKind *out_kind, char **out_msgid,
			      char **out_name, GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	const guint8 *data;
	const guint8 *subject = NULL, *name = NULL;
	gsize off = 2, slen = 0, nlen = 0;
	int rc;

	*out_kind = PGATE_MSG_KIND_OTHER;
	*out_msgid = NULL;
	*out_name = NULL;
	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_MESSAGES], &k, &v);
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf(
			"message %" G_GUINT64_FORMAT, num);

		return pgate_store__mdb_error(error, rc, what);
	}
	data = v.mv_data;
	/* the record format of record.c (docs/store-format.md): 'M', 1,
	 * then tag (u8), length (u32 BE), value */
	if (v.mv_size < 2 || data[0] != 'M' || data[1] != 1)
		goto corrupt;
	while (off < v.mv_size) {
		guint8 tag;
		gsize l;

		if (v.mv_size - off < 5)
			goto corrupt;
		tag = data[off];
		l = (gsize)be_uint(data + off + 1, 4);
		off += 5;
		if (v.mv_size - off < l)
			goto corrupt;
		switch (tag) {
		case 1:		/* msgid */
			g_free(*out_msgid);
			*out_msgid = g_strndup((const char *)data + off, l);
			break;
		case 2:		/* kind */
			*out_kind = (PgateMsgKind)be_uint(data + off, l);
			break;
		case 6:		/* subject */
			subject = data + off, slen = l;
			break;
		case 7:		/* name */
			name = data + off, nlen = l;
			break;
		default:
			break;
		}
		off += l;
	}
	if (*out_msgid == NULL)
		goto corrupt;
	if (name != NULL)
		*out_name = g_strndup((const char *)name, nlen);
	else if (subject != NULL)
		*out_name = g_strndup((const char *)subject, slen);
	return TRUE;
corrupt:
	g_clear_pointer(out_msgid, g_free);
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
		    "message %" G_GUINT64_FORMAT ": a record that does not "
		    "decode", num);
	return FALSE;
}
