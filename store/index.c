/* index.c - series and threading's indexes: derived state, rebuildable.
 *
 * Threading (threading/) keeps here what it derives from the messages;
 * the store knows nothing of threading, and "patchgate rethread" rebuilds
 * it all (pgate_store_derived_clear).  Databases, since schema 2 (see
 * docs/store-format.md):
 *   refs_index   referenced Message-ID -> dups of u64 BE number
 *   author_index lowercased email \0 i64 BE date (sign-flipped) u64 BE num
 *                -> empty
 *   series       series id -> series record (record.c)
 *   msg_series   u64 BE number -> series id
 *   change_index change-id -> dups of series id
 *   patchid_index patch-id -> dups of series id
 *   name_keys    sender \0 i64 BE date (sign-flipped) series id ->
 *                threading's name key hashes of the series
 *   link_index   a Message-ID a series names by URL -> dups of series id
 *   series_dates i64 BE date (sign-flipped) series id -> flags (u8: 1
 *                superseded) and project: the series in listing order
 *                (not in env.c's table: created empty with the series
 *                table's first record or by a rethread, so that stores
 *                written before it open as they are; without it a
 *                listing scans the series)
 *
 * String keys longer than LMDB's limit are replaced by "\x01" and their
 * SHA-256 (pgate_store__str_key), senders longer than SENDER_KEY_MAX
 * likewise.
 */
#include "store/store-private.h"

#include <string.h>

/* ---- keys ---- */

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
	return pgate_store__hashed_key(sender, len, buf);
}

/* A string key as LMDB takes it: itself, or \x01 and its SHA-256 when
 * empty or too long. */
static MDB_val
str_key(const char *s, guint8 buf[40])
{
	const void *p;
	MDB_val k;

	k.mv_size = pgate_store__str_key(s, buf, &p);
	k.mv_data = (void *)p;
	return k;
}

/* ---- series_dates: the series by date ---- */

#define DATES_DB "series_dates"
#define DATES_SUPERSEDED 1

/* Opens series_dates in @t: TRUE when it is there (or was just made,
 * with @create); FALSE and no error when it is not. */
static gboolean
dates_dbi(PgateStoreTxn *t, gboolean create, GError **error)
{
	char buf[64];
	int rc;

	if (t->dates_state > 0)
		return TRUE;
	if (t->dates_state < 0 && !create)
		return FALSE;
	rc = mdb_dbi_open(t->txn, pgate_store__gen_name(t->gen, DATES_DB, buf),
			  create ? MDB_CREATE : 0, &t->dates_dbi);
	if (rc == MDB_NOTFOUND && !create) {
		t->dates_state = -1;
		return FALSE;
	}
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc,
					     "open the series_dates database");
	t->dates_state = 1;
	return TRUE;
}

/* KEY: the date (sign bit flipped, so that keys sort as dates do) and
 * the id; at most 8 + 40 bytes (the id as series keys: str_key). */
static MDB_val
dates_key(gint64 date, const char *id, guint8 buf[8 + 40])
{
	guint8 kb[40];
	MDB_val idk = str_key(id, kb);

	pgate_store__be64(buf, (guint64)date ^ G_GUINT64_CONSTANT(0x8000000000000000));
	memcpy(buf + 8, idk.mv_data, idk.mv_size);
	return (MDB_val){ 8 + idk.mv_size, buf };
}

/* Removes the index entry of the series stored as @old (a record). */
static int
dates_del_old(PgateStoreTxn *t, const MDB_val *old)
{
	PgateSeriesBrief b;
	guint8 kb[48];
	MDB_val k;
	int rc;

	if (!pgate_store__series_brief(old->mv_data, old->mv_size, &b, NULL))
		return 0;	/* a record that does not decode has no entry */
	k = dates_key(b.date, b.id, kb);
	rc = mdb_del(t->txn, t->dates_dbi, &k, NULL);
	g_free(b.id);
	g_free(b.project);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Keeps series_dates in step with a put of @rec (@old: the record it
 * replaces, or NULL).  A store whose series table has records but no
 * series_dates (written before it) gets none: a rethread makes it. */
static gboolean
dates_put(PgateStoreTxn *t, const PgateSeriesRec *rec, const MDB_val *old,
	  GError **error)
{
	GString *v;
	guint8 kb[48];
	MDB_val k, val;
	int rc;

	if (!dates_dbi(t, FALSE, error)) {
		MDB_stat st;

		if (error != NULL && *error != NULL)
			return FALSE;
		rc = mdb_stat(t->txn, t->dbi[DBI_SERIES], &st);
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc, "stat series");
		if (old != NULL || st.ms_entries > 0)
			return TRUE;
		if (!dates_dbi(t, TRUE, error))
			return FALSE;
	}
	if (old != NULL && (rc = dates_del_old(t, old)) != 0)
		return pgate_store__txn_fail(t, error, rc, "update series_dates");
	v = g_string_sized_new(32);
	g_string_append_c(v, rec->superseded_by != NULL ? DATES_SUPERSEDED : 0);
	if (rec->project != NULL)
		g_string_append(v, rec->project);
	k = dates_key(rec->date, rec->id, kb);
	val = (MDB_val){ v->len, v->str };
	rc = mdb_put(t->txn, t->dates_dbi, &k, &val, 0);
	g_string_free(v, TRUE);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put series_dates");
	return TRUE;
}

gboolean
pgate_store_series_dates_foreach(PgateStoreTxn *t, gint64 from_date,
				 const char *from_id,
				 PgateSeriesBriefFunc fn, gpointer data,
				 gboolean *out_absent, GError **error)
{
	MDB_cursor *cur;
	MDB_val k, v;
	guint8 kb[48];
	int rc;

	*out_absent = FALSE;
	if (!dates_dbi(t, FALSE, error)) {
		if (error != NULL && *error != NULL)
			return FALSE;
		*out_absent = TRUE;
		return TRUE;
	}
	rc = mdb_cursor_open(t->txn, t->dates_dbi, &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	k = dates_key(from_date, from_id != NULL ? from_id : "", kb);
	if (from_id == NULL)
		k.mv_size = 8;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		PgateSeriesBrief b = { 0 };
		const guint8 *val = v.mv_data;
		gboolean ok;

		pgate_store__step(t);
		if (k.mv_size < 9 || v.mv_size < 1) {
			mdb_cursor_close(cur);
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
				    "series_dates: an entry of %zu bytes",
				    k.mv_size);
			return FALSE;
		}
		b.date = (gint64)(pgate_store__get_be64(k.mv_data) ^
				  G_GUINT64_CONSTANT(0x8000000000000000));
		b.id = g_strndup((const char *)k.mv_data + 8, k.mv_size - 8);
		b.project = v.mv_size > 1
			? g_strndup((const char *)val + 1, v.mv_size - 1) : NULL;
		b.superseded = (val[0] & DATES_SUPERSEDED) != 0;
		ok = fn(&b, data, error);
		g_free(b.id);
		g_free(b.project);
		if (!ok) {
			mdb_cursor_close(cur);
			return error == NULL || *error == NULL;
		}
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "iterate series_dates");
	return TRUE;
}

/* ---- a page of the listing (series list) ---- */

typedef struct {
	gint64 date;
	char *id;
} PageKey;

static gint
page_key_cmp(gconstpointer a, gconstpointer b)
{
	const PageKey *x = a, *y = b;

	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return strcmp(x->id, y->id);
}

static void
page_key_clear(gpointer p)
{
	g_free(((PageKey *)p)->id);
}

typedef struct {
	PgateStoreTxn *txn;
	const PgateSeriesQuery *q;
	gboolean has_after;
	PageKey after;
	GArray *keys;         /* (element-type PageKey) */
	gboolean more;        /* a series past the limit was left out */
	gboolean in_order;    /* fed from series_dates */
} Page;

/* Keeps the @limit smallest keys: sorted and cut whenever twice as many
 * are held, so that a scan's memory follows the limit, not the store. */
static void
page_trim(Page *pg)
{
	g_array_sort(pg->keys, page_key_cmp);
	if (pg->q->limit > 0 && pg->keys->len > pg->q->limit) {
		g_array_remove_range(pg->keys, pg->q->limit,
				     pg->keys->len - pg->q->limit);
		pg->more = TRUE;
	}
}

/* Whether @b is in the page's selection; FALSE with @error on a read
 * error of the caller's filter. */
static gboolean
page_selects(Page *pg, const PgateSeriesBrief *b, gboolean *out,
	     GError **error)
{
	const PgateSeriesQuery *q = pg->q;
	PageKey k = { b->date, b->id };

	*out = FALSE;
	if ((!q->all && b->superseded) ||
	    (q->project && g_strcmp0(q->project, b->project) != 0) ||
	    (q->has_since && b->date < q->since) ||
	    (pg->has_after && page_key_cmp(&k, &pg->after) <= 0))
		return TRUE;
	if (q->keep != NULL && !q->keep(pg->txn, b->id, q->keep_data, error))
		return error == NULL || *error == NULL;
	*out = TRUE;
	return TRUE;
}

static gboolean
page_one(const PgateSeriesBrief *b, gpointer data, GError **error)
{
	Page *pg = data;
	gboolean sel;
	PageKey k;

	if (!page_selects(pg, b, &sel, error))
		return FALSE;
	if (!sel)
		return TRUE;
	if (pg->in_order && pg->q->limit > 0 && pg->keys->len >= pg->q->limit) {
		pg->more = TRUE;	/* one past the page: stop the walk */
		return FALSE;
	}
	k.date = b->date;
	k.id = g_strdup(b->id);
	g_array_append_val(pg->keys, k);
	if (!pg->in_order && pg->q->limit > 0 &&
	    pg->keys->len >= 2 * (gsize)pg->q->limit)
		page_trim(pg);
	return TRUE;
}

gboolean
pgate_store_series_cursor_parse(const char *s, gint64 *out_date,
				char **out_id)
{
	const char *colon = s != NULL ? strchr(s, ':') : NULL;
	g_autofree char *num = NULL;
	gint64 d;

	if (colon == NULL || colon == s || colon[1] == '\0')
		return FALSE;
	num = g_strndup(s, (gsize)(colon - s));
	if (!g_ascii_string_to_signed(num, 10, G_MININT64, G_MAXINT64, &d,
				      NULL))
		return FALSE;
	if (out_date != NULL)
		*out_date = d;
	if (out_id != NULL)
		*out_id = g_strdup(colon + 1);
	return TRUE;
}

GPtrArray *
pgate_store_series_page(PgateStoreTxn *t, const PgateSeriesQuery *q,
			char **out_next, GError **error)
{
	g_autoptr(GArray) keys = g_array_new(FALSE, FALSE, sizeof(PageKey));
	g_autofree char *after_id = NULL;
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	Page pg = { t, q, FALSE, { 0, NULL }, keys, FALSE, TRUE };
	gint64 from = G_MININT64;
	gboolean absent = FALSE;

	*out_next = NULL;
	g_array_set_clear_func(keys, page_key_clear);
	if (q->after != NULL) {
		if (!pgate_store_series_cursor_parse(q->after, &pg.after.date,
						     &after_id)) {
			g_set_error(error, PGATE_STORE_ERROR,
				    PGATE_ERROR_INVALID,
				    "not a cursor (DATE:ID): %s", q->after);
			return NULL;
		}
		pg.after.id = after_id;
		pg.has_after = TRUE;
		from = pg.after.date;
	}
	if (q->has_since && q->since > from)
		from = q->since;
	/* from the index, from where the page starts; else a scan */
	if (!pgate_store_series_dates_foreach(t, from, NULL, page_one, &pg,
					      &absent, error))
		return NULL;
	if (absent) {
		pg.in_order = FALSE;
		if (!pgate_store_series_brief_foreach(t, page_one, &pg, error))
			return NULL;
		page_trim(&pg);
	}
	for (guint i = 0; i < keys->len; i++)
		g_ptr_array_add(ids, g_strdup(g_array_index(keys, PageKey, i).id));
	if (pg.more && keys->len > 0) {
		const PageKey *k = &g_array_index(keys, PageKey, keys->len - 1);

		*out_next = g_strdup_printf("%" G_GINT64_FORMAT ":%s", k->date,
					    k->id);
	}
	return g_steal_pointer(&ids);
}

/* ---- series ---- */

gboolean
pgate_store_series_put(PgateStoreTxn *t, const PgateSeriesRec *rec,
		       GError **error)
{
	PgateStoreBuf *enc = &t->store->enc;
	guint8 kb[40];
	MDB_val k = str_key(rec->id, kb), v, old;
	int rc;

	rc = mdb_get(t->txn, t->dbi[DBI_SERIES], &k, &old);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "get series");
	/* the old record's date first: the put may reuse its page */
	if (!dates_put(t, rec, rc == 0 ? &old : NULL, error))
		return FALSE;
	pgate_store__series_encode(enc, rec);
	v = (MDB_val){ enc->len, enc->data };
	rc = pgate_store__txn_put(t, DBI_SERIES, &k, &v, 0);

	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put series");
	/* a changed series is one the next pipeline pass visits */
	return pgate_store_active_mark(t, rec->id, error);
}

PgateSeriesRec *
pgate_store_series_get(PgateStoreTxn *t, const char *id, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(id, kb), v;
	int rc;

	pgate_store__step(t);
	rc = mdb_get(t->txn, t->dbi[DBI_SERIES], &k, &v);
	if (rc == MDB_NOTFOUND) {
		/* what a user who typed an ID reads: not LMDB's words */
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no series %s", id);
		return NULL;
	}
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("series %s", id);

		return pgate_store__mdb_error(error, rc, what), NULL;
	}
	return pgate_store__series_decode(v.mv_data, v.mv_size, error);
}

gboolean
pgate_store_series_delete(PgateStoreTxn *t, const char *id, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(id, kb), old;
	int rc = mdb_get(t->txn, t->dbi[DBI_SERIES], &k, &old);

	if (rc == 0 && dates_dbi(t, FALSE, error))
		rc = dates_del_old(t, &old);
	else if (error != NULL && *error != NULL)
		return FALSE;
	if (rc == 0 || rc == MDB_NOTFOUND)
		rc = mdb_del(t->txn, t->dbi[DBI_SERIES], &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete series");
	/* the next pass drops its state */
	return pgate_store_active_mark(t, id, error);
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
	pgate_store__step(t);
	rc = pgate_store__txn_cursor(t, DBI_SERIES, &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
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
		return pgate_store__mdb_error(error, rc, "iterate series");
	return *out != NULL;
}

gboolean
pgate_store_series_brief_foreach(PgateStoreTxn *t, PgateSeriesBriefFunc fn,
				 gpointer data, GError **error)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = pgate_store__txn_cursor(t, DBI_SERIES, &cur);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		PgateSeriesBrief b;
		gboolean ok;

		pgate_store__step(t);
		if (!pgate_store__series_brief(v.mv_data, v.mv_size, &b, error))
			return FALSE;
		ok = fn(&b, data, error);
		g_free(b.id);
		g_free(b.project);
		if (!ok)
			return FALSE;
	}
	if (rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "iterate series");
	return TRUE;
}

gboolean
pgate_store_msg_series_put(PgateStoreTxn *t, guint64 num, const char *id,
			   GError **error)
{
	guint8 kb[8];
	MDB_val k = { 8, kb }, v = { strlen(id), (void *)id };
	int rc;

	pgate_store__be64(kb, num);
	rc = pgate_store__txn_put(t, DBI_MSG_SERIES, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put msg_series");
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
	pgate_store__step(t);
	rc = mdb_get(t->txn, t->dbi[DBI_MSG_SERIES], &k, &v);
	if (rc == MDB_NOTFOUND)
		return TRUE;
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "get msg_series");
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
	rc = mdb_del(t->txn, t->dbi[DBI_MSG_SERIES], &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete msg_series");
	return TRUE;
}

/* ---- the string-keyed indexes and refs ---- */

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
	return t->dbi[index_which(idx)];
}

gboolean
pgate_store_index_add(PgateStoreTxn *t, PgateStoreIndex idx, const char *key,
		      const void *val, gsize len, GError **error)
{
	guint8 kb[40];
	MDB_val k = str_key(key, kb), v = { len, (void *)val };
	int rc;

	g_return_val_if_fail(len > 0 && len <= PGATE_STORE__MAX_PLAIN_KEY,
			     FALSE);
	rc = pgate_store__txn_put(t, index_which(idx), &k, &v, MDB_NODUPDATA);
	if (rc != 0 && rc != MDB_KEYEXIST)
		return pgate_store__txn_fail(t, error, rc, "put index");
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
		return pgate_store__txn_fail(t, error, rc,
					     "delete index entry");
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
	int rc = pgate_store__txn_cursor(t, index_which(idx), &cur);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		if (!fn(v.mv_data, v.mv_size, data, error))
			return FALSE;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "read index");
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

/* ---- a sender's series and messages by date ---- */

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
	rc = pgate_store__txn_put(t, DBI_NAME_KEYS, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put name keys");
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
	rc = mdb_del(t->txn, t->dbi[DBI_NAME_KEYS], &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete name keys");
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
	int rc = pgate_store__txn_cursor(t, DBI_NAME_KEYS, &cur);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
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
		return pgate_store__mdb_error(error, rc, "read name keys");
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
	int rc = pgate_store__txn_put(t, DBI_AUTHOR_INDEX, &k, &v, 0);

	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put author index");
	return TRUE;
}

gboolean
pgate_store_author_remove(PgateStoreTxn *t, const char *email, gint64 date,
			  guint64 num, GError **error)
{
	guint8 kb[AUTHOR_KEY_LEN];
	MDB_val k = { author_key(email, date, num, kb), kb };
	int rc = mdb_del(t->txn, t->dbi[DBI_AUTHOR_INDEX], &k, NULL);

	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc,
					     "delete author index entry");
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
	int rc = pgate_store__txn_cursor(t, DBI_AUTHOR_INDEX, &cur);

	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor"), NULL;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		MDB_val h = { hil, hi };
		guint64 n;

		if (mdb_cmp(t->txn, t->dbi[DBI_AUTHOR_INDEX], &k, &h) > 0)
			break;
		if (k.mv_size == hil) {
			n = pgate_store__get_be64((const guint8 *)k.mv_data +
						  k.mv_size - 8);
			g_array_append_val(nums, n);
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "read author index"),
					      NULL;
	return g_steal_pointer(&nums);
}

/* ---- the derived state as a whole ---- */

static const int derived_dbis[] = { DBI_REFS_INDEX, DBI_AUTHOR_INDEX,
				    DBI_SERIES, DBI_MSG_SERIES,
				    DBI_CHANGE_INDEX, DBI_PATCHID_INDEX,
				    DBI_NAME_KEYS, DBI_LINK_INDEX };

/* ---- generations ----
 *
 * The derived databases exist twice: generation 0 under the names above,
 * generation 1 under the same names with "@1" ("series@1", and
 * "series_dates@1"; not series_active, the pipeline's, which a switch
 * only tells to visit every series).  Meta "derived_gen" (one byte;
 * absent: 0) says which one is live: every transaction sees that one,
 * unless a rethread turns it to the other (pgate_store_derived_shadow),
 * which it fills batch by batch while deliveries go on threading the
 * live one, then makes live in one commit (pgate_store_derived_switch).
 * A store that ever switched to generation 1 is marked schema 6: an older
 * build would read generation 0. */

#define GEN_KEY "derived_gen"

const char *
pgate_store__gen_name(guint gen, const char *base, char buf[64])
{
	if (gen == 0)
		return base;
	g_snprintf(buf, 64, "%s@%u", base, gen);
	return buf;
}

/* Points @t's derived databases at generation @gen's, creating them
 * with @create. */
static gboolean
map_generation(PgateStoreTxn *t, guint gen, gboolean create, GError **error)
{
	for (gsize i = 0; i < G_N_ELEMENTS(derived_dbis); i++) {
		int which = derived_dbis[i];
		char buf[64];
		int rc;

		if (gen == 0) {
			t->dbi[which] = t->store->dbi[which];
			continue;
		}
		rc = mdb_dbi_open(t->txn,
				  pgate_store__gen_name(gen,
					pgate_store__db_name(which), buf),
				  pgate_store__db_flags(which) |
				  (create ? MDB_CREATE : 0),
				  &t->dbi[which]);
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc,
					"open the other generation's databases");
	}
	for (int i = 0; i < DBI_COUNT; i++)
		g_clear_pointer(&t->cursors[i], mdb_cursor_close);
	t->gen = gen;
	t->dates_state = 0;
	return TRUE;
}

gboolean
pgate_store__txn_dbis(PgateStoreTxn *t, GError **error)
{
	MDB_val k = { strlen(GEN_KEY), (void *)GEN_KEY }, v;
	int rc;

	memcpy(t->dbi, t->store->dbi, sizeof t->dbi);
	t->gen = 0;
	rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
	if (rc == MDB_NOTFOUND)
		return TRUE;
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc,
					     "read the live generation");
	if (v.mv_size != 1 || *(const guint8 *)v.mv_data > 1) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "store %s is damaged: its meta derived_gen is "
			    "not 0 or 1", t->store->dir);
		return FALSE;
	}
	if (*(const guint8 *)v.mv_data == 0)
		return TRUE;
	return map_generation(t, 1, FALSE, error);
}

guint
pgate_store_derived_generation(PgateStoreTxn *t)
{
	return t->shadow ? 1 - t->gen : t->gen;
}

gboolean
pgate_store_derived_shadow(PgateStoreTxn *t, GError **error)
{
	g_return_val_if_fail(!t->shadow, FALSE);
	if (!map_generation(t, 1 - t->gen, TRUE, error))
		return FALSE;
	t->shadow = TRUE;
	return TRUE;
}

gboolean
pgate_store_derived_switch(PgateStoreTxn *t, GError **error)
{
	guint8 b = (guint8)t->gen;

	g_return_val_if_fail(t->shadow, FALSE);
	if (t->gen == 1 && !pgate_store__mark_current(t, error))
		return FALSE;
	if (!pgate_store_meta_put(t, GEN_KEY, &b, 1, error) ||
	    !pgate_store_active_complete(t, NULL, error))
		return FALSE;
	t->shadow = FALSE;
	return TRUE;
}

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
	GString *line = g_string_new(pgate_store__db_name(which));
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
		rc = mdb_cursor_open(t->txn, t->dbi[derived_dbis[i]],
				     &cur);
		if (rc != 0)
			return pgate_store__mdb_error(error, rc, "open cursor"),
						      NULL;
		while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
			g_ptr_array_add(lines,
					dump_entry(t, derived_dbis[i], k, v));
		mdb_cursor_close(cur);
		if (rc != MDB_NOTFOUND)
			return pgate_store__mdb_error(error, rc, "walk"), NULL;
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
		int rc = mdb_drop(t->txn, t->dbi[derived_dbis[i]], 0);

		if (rc != 0)
			return pgate_store__txn_fail(
				t, error, rc, "empty threading databases");
	}
	/* series_dates too, made here when the store had none */
	if (!dates_dbi(t, TRUE, error))
		return FALSE;
	{
		int rc = mdb_drop(t->txn, t->dates_dbi, 0);

		if (rc != 0)
			return pgate_store__txn_fail(
				t, error, rc, "empty series_dates");
	}
	/* the series that vanish are not marked: the next pass visits all
	 * (a rethread's: once its generation is live, derived_switch) */
	return t->shadow || pgate_store_active_complete(t, NULL, error);
}
