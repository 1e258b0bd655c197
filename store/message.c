/* message.c - the messages: their records, raw bytes and Message-IDs.
 *
 * Databases (see docs/store-format.md):
 *   messages     u64 BE message number -> record (record.c)
 *   raw          u64 BE message number -> the raw message bytes, as they
 *                are or (schema 5, the record's raw_codec) one zstd frame,
 *                which names the store's dictionary it was compressed
 *                with, if any (schema 6, zdict.c)
 *   msgid_index  Message-ID -> sorted duplicates of
 *                [u64 BE number | 32-byte content hash]
 *
 * Keys longer than LMDB's limit (511 bytes) are replaced by "\x01" and the
 * SHA-256 of the Message-ID (pgate_store__str_key), as in every
 * string-keyed database.  A message with the Message-ID and content of a
 * stored one is a duplicate; with another content it is stored too, both
 * flagged PGATE_MSG_FLAG_ID_CONFLICT.
 */
#include "store/store-private.h"

#include <string.h>
#include <zstd.h>

#define INDEX_VAL_LEN (8 + 32)

/* ---- keys ---- */

/* The msgid_index key: the Message-ID itself, or for one too long for an
 * LMDB key, \x01 and its SHA-256 (into @buf). */
#define HASHED_KEY_LEN PGATE_STORE__HASHED_KEY_LEN

/* \x01 and the SHA-256 of @len bytes at @s, into @buf. */
gsize
pgate_store__hashed_key(const char *s, gsize len, guint8 buf[HASHED_KEY_LEN])
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

	if (len > 0 && len <= PGATE_STORE__MAX_PLAIN_KEY) {
		*out = msgid;
		return len;
	}
	*out = buf;
	return pgate_store__hashed_key(msgid, len, buf);
}
gsize
pgate_store__str_key(const char *s, guint8 buf[PGATE_STORE__HASHED_KEY_LEN],
		     const void **out)
{
	return msgid_key(s, buf, out);
}

/* ---- raw mail, compressed ---- */

/* @len bytes at @data compressed into store->zbuf as one zstd frame that
 * holds its content size and a checksum.  *@out_smaller: whether that
 * saves anything (else the bytes are kept as they are). */
static gboolean
compress_raw(PgateStoreTxn *t, const void *data, gsize len,
	     gboolean *out_smaller, GError **error)
{
	PgateStore *store = t->store;
	const ZSTD_CDict *cdict = NULL;
	PgateStoreBuf *z = &store->zbuf;
	gsize bound = ZSTD_compressBound(len), n;

	*out_smaller = FALSE;
	if (len < PGATE_STORE__ZSTD_MIN || len > PGATE_STORE_MAX_RAW_SIZE)
		return TRUE;
	if (store->zcctx == NULL) {
		store->zcctx = ZSTD_createCCtx();
		if (store->zcctx == NULL ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(store->zcctx,
			    ZSTD_c_compressionLevel, PGATE_STORE__ZSTD_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(store->zcctx,
			    ZSTD_c_checksumFlag, 1)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(store->zcctx,
			    ZSTD_c_contentSizeFlag, 1))) {
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
				    "cannot set up zstd compression");
			return FALSE;
		}
	}
	/* the store's newest dictionary, when it has one (schema 6): the
	 * frame records its ID */
	if (!pgate_store__zdict_cdict(t, &cdict, error))
		return FALSE;
	if (ZSTD_isError(ZSTD_CCtx_refCDict(store->zcctx, cdict))) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "cannot set up zstd compression with dictionary %u",
			    store->zcdict_id);
		return FALSE;
	}
	if (z->cap < bound) {
		g_free(z->data);
		z->cap = MAX(bound, 64 * 1024);
		z->data = g_malloc(z->cap);
	}
	n = ZSTD_compress2(store->zcctx, z->data, z->cap, data, len);
	if (ZSTD_isError(n)) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "compress a raw message: %s", ZSTD_getErrorName(n));
		return FALSE;
	}
	z->len = n;
	*out_smaller = n < len;
	return TRUE;
}

static gboolean
raw_corrupt(GError **error, const PgateMessageRec *rec, const char *why)
{
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
		    "its raw message %s", why);
	return FALSE;
}

GBytes *
pgate_store__raw_decode(PgateStoreTxn *t, const PgateMessageRec *rec,
			const guint8 *val, gsize len, GError **error)
{
	unsigned long long declared;
	g_autofree guint8 *out = NULL;
	const ZSTD_DDict *ddict = NULL;
	guint32 dict_id;
	gsize n;

	switch (rec->raw_codec) {
	case PGATE_RAW_CODEC_NONE:
		return g_bytes_new(val, len);
	case PGATE_RAW_CODEC_ZSTD:
		break;
	default:
		raw_corrupt(error, rec, "is kept in an unknown way (a newer "
			    "patchgate's?)");
		return NULL;
	}
	/* hostile bytes: the frame must declare its size, that size must be
	 * the record's, and within bounds, before anything is allocated */
	declared = ZSTD_getFrameContentSize(val, len);
	if (declared == ZSTD_CONTENTSIZE_ERROR) {
		raw_corrupt(error, rec, "is not a zstd frame");
		return NULL;
	}
	if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
		raw_corrupt(error, rec, "does not declare its size");
		return NULL;
	}
	if (declared > PGATE_STORE_MAX_RAW_SIZE ||
	    rec->raw_size > PGATE_STORE_MAX_RAW_SIZE) {
		g_autofree char *why = g_strdup_printf(
			"declares %llu bytes, over the limit of %" G_GUINT64_FORMAT,
			declared, PGATE_STORE_MAX_RAW_SIZE);

		raw_corrupt(error, rec, why);
		return NULL;
	}
	if (declared != rec->raw_size) {
		g_autofree char *why = g_strdup_printf(
			"declares %llu bytes, the record %" G_GUINT64_FORMAT,
			declared, rec->raw_size);

		raw_corrupt(error, rec, why);
		return NULL;
	}
	/* schema 6: the frame names the dictionary it was written with */
	dict_id = ZSTD_getDictID_fromFrame(val, len);
	if (dict_id != 0) {
		g_autoptr(GError) local = NULL;

		ddict = pgate_store__zdict_ddict(t, dict_id, &local);
		if (ddict == NULL) {
			if (!g_error_matches(local, PGATE_STORE_ERROR,
					     PGATE_ERROR_CORRUPT)) {
				g_propagate_error(error,
						  g_steal_pointer(&local));
				return NULL;
			}
			raw_corrupt(error, rec, local->message);
			return NULL;
		}
	}
	out = g_malloc(MAX(declared, 1));
	/* (the frame's checksum is checked here) */
	if (ddict != NULL) {
		ZSTD_DCtx *dctx = ZSTD_createDCtx();

		if (dctx == NULL) {
			g_set_error(error, PGATE_STORE_ERROR,
				    PGATE_ERROR_FAILED, "cannot set up zstd "
				    "decompression");
			return NULL;
		}
		n = ZSTD_decompress_usingDDict(dctx, out, (gsize)declared, val,
					       len, ddict);
		ZSTD_freeDCtx(dctx);
	} else {
		n = ZSTD_decompress(out, (gsize)declared, val, len);
	}
	if (ZSTD_isError(n)) {
		g_autofree char *why = g_strdup_printf(
			"does not decompress: %s", ZSTD_getErrorName(n));

		raw_corrupt(error, rec, why);
		return NULL;
	}
	if (n != declared) {
		raw_corrupt(error, rec, "decompresses to fewer bytes than it "
			    "declares");
		return NULL;
	}
	return g_bytes_new_take(g_steal_pointer(&out), n);
}

void
pgate_store__message_cleanup(PgateStore *store)
{
	ZSTD_freeCCtx(store->zcctx);
	store->zcctx = NULL;
	g_free(store->zbuf.data);
	store->zbuf = (PgateStoreBuf){ 0 };
	pgate_store__zdict_cleanup(store);
}

/* ---- messages ---- */

static gboolean
next_msgnum(PgateStoreTxn *t, guint64 *out, GError **error)
{
	MDB_val k = { 11, (void *)"next_msgnum" }, v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
	guint8 b[8];

	if (rc == MDB_NOTFOUND)
		*out = 1;
	else if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "get next_msgnum");
	else if (v.mv_size != 8)
		return g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
				   "meta next_msgnum is corrupt"), FALSE;
	else
		*out = pgate_store__get_be64(v.mv_data);
	pgate_store__be64(b, *out + 1);
	return pgate_store_meta_put(t, "next_msgnum", b, 8, error);
}

/* Puts a new message's entry, whose number is above every other's, with
 * MDB_APPEND: LMDB then leaves the full page full and begins a new one,
 * where a split in the middle would leave every page of the numbered
 * databases half empty (measured: the raw database of 100,008 messages,
 * 330 MB, mostly that).  A number that is not the last is put as usual. */
static int
put_last(PgateStoreTxn *t, int which, MDB_val *k, MDB_val *v)
{
	MDB_val kc = *k, vc = *v;
	int rc = pgate_store__txn_put(t, which, &kc, &vc, MDB_APPEND);

	if (rc == MDB_KEYEXIST)
		rc = pgate_store__txn_put(t, which, k, v, 0);
	return rc;
}

static gboolean
put_record_new(PgateStoreTxn *t, const PgateMessageRec *rec, gboolean last,
	       GError **error)
{
	PgateStoreBuf *enc = &t->store->enc;
	guint8 kb[8];
	MDB_val k = { 8, kb }, v;
	int rc;

	/* (LMDB copies the value: the buffer serves the next put) */
	pgate_store__rec_encode(enc, rec);
	v = (MDB_val){ enc->len, enc->data };
	pgate_store__be64(kb, rec->num);
	rc = last ? put_last(t, DBI_MESSAGES, &k, &v)
		  : pgate_store__txn_put(t, DBI_MESSAGES, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put message");
	return TRUE;
}

static gboolean
put_record(PgateStoreTxn *t, const PgateMessageRec *rec, GError **error)
{
	return put_record_new(t, rec, FALSE, error);
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

/* A copy of stored message @num came through list @list_id: the record
 * keeps every list's List-Id (at most PGATE_MSG_MAX_LIST_IDS). */
static gboolean
add_list_id(PgateStoreTxn *t, guint64 num, const char *list_id,
	    GError **error)
{
	g_autoptr(PgateMessageRec) old = NULL;

	if (list_id == NULL || *list_id == '\0')
		return TRUE;
	if (!get_unless_corrupt(t, num, &old, error))
		return FALSE;
	if (old == NULL)
		return TRUE;
	if (old->list_id == NULL || *old->list_id == '\0') {
		g_free(old->list_id);
		old->list_id = g_strdup(list_id);
		return put_record(t, old, error);
	}
	if (g_ascii_strcasecmp(old->list_id, list_id) == 0)
		return TRUE;
	for (guint i = 0; i < old->more_list_ids->len; i++)
		if (g_ascii_strcasecmp(old->more_list_ids->pdata[i],
				       list_id) == 0)
			return TRUE;
	if (old->more_list_ids->len + 1 >= PGATE_MSG_MAX_LIST_IDS)
		return TRUE;
	g_ptr_array_add(old->more_list_ids, g_strdup(list_id));
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

	rc = pgate_store__txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "open cursor");
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
			return add_list_id(t, num, rec->list_id, error);
		}
		g_array_append_val(same_id, num);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "read msgid index");

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
	rec->raw_codec = PGATE_RAW_CODEC_NONE;
	if (raw != NULL && rec->raw_location == PGATE_RAW_INLINE) {
		gsize len;
		const void *data = g_bytes_get_data(raw, &len);
		guint8 kb[8];
		MDB_val rk = { 8, kb }, rv = { len, (void *)data };
		gboolean smaller;

		rec->raw_size = len;
		if (!compress_raw(t, data, len, &smaller, error))
			return FALSE;
		if (smaller) {
			if (!pgate_store__mark_current(t, error))
				return FALSE;
			rec->raw_codec = PGATE_RAW_CODEC_ZSTD;
			rv = (MDB_val){ t->store->zbuf.len, t->store->zbuf.data };
		}
		pgate_store__be64(kb, rec->num);
		rc = put_last(t, DBI_RAW, &rk, &rv);
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc,
						     "put raw message");
	}
	if (!put_record_new(t, rec, TRUE, error))
		return FALSE;

	pgate_store__be64(ival, rec->num);
	memcpy(ival + 8, rec->content_hash, 32);
	v.mv_size = INDEX_VAL_LEN;
	v.mv_data = ival;
	rc = pgate_store__txn_put(t, DBI_MSGID_INDEX, &k, &v, 0);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "put msgid index");
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
	rc = pgate_store__txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "open cursor");
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
			return pgate_store__txn_fail(t, error, rc,
						     "read msgid index");
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no message <%s> with that content", msgid);
		return FALSE;
	}
	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc,
					     "delete msgid index entry");
	pgate_store__be64(kb, num);
	rc = mdb_del(t->txn, t->store->dbi[DBI_MESSAGES], &nk, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc, "delete message");
	rc = mdb_del(t->txn, t->store->dbi[DBI_RAW], &nk, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__txn_fail(t, error, rc,
					     "delete raw message");
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

	pgate_store__step(t);
	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_MESSAGES], &k, &v);
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf(
			"message %" G_GUINT64_FORMAT, num);

		return pgate_store__mdb_error(error, rc, what), NULL;
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
	rc = pgate_store__txn_cursor(t, DBI_MSGID_INDEX, &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
	while (rc == 0) {
		guint64 num = pgate_store__get_be64(v.mv_data);

		g_array_append_val(nums, num);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP);
	}
	if (rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "read msgid index");
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
	g_autoptr(PgateMessageRec) rec = NULL;
	GBytes *out;
	int rc;

	/* the record says how the bytes are kept */
	rec = pgate_store_message_get(t, num, error);
	if (rec == NULL)
		return NULL;
	pgate_store__be64(kb, num);
	rc = mdb_get(t->txn, t->store->dbi[DBI_RAW], &k, &v);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "raw message"), NULL;
	out = pgate_store__raw_decode(t, rec, v.mv_data, v.mv_size, error);
	if (out == NULL)
		g_prefix_error(error, "message %" G_GUINT64_FORMAT ": ", num);
	return out;
}

/* ---- recompression with the current dictionary (store recompress) ---- */

typedef struct {
	guint64 from;
	guint max;
	PgateStoreRecompressed r;
} RecompressCtx;

/* One batch: from message @c->from on, every inline message whose raw
 * bytes are not a frame of the current dictionary is compressed again
 * with it, when that makes it smaller; at most @c->max rewritten and
 * 8 times as many looked at, 32 MiB of mail read. */
static gboolean
recompress_txn(PgateStoreTxn *t, gpointer payload, GError **error)
{
	RecompressCtx *c = payload;
	PgateStoreRecompressed *r = &c->r;
	const ZSTD_CDict *cdict;
	guint64 read = 0;
	guint32 want;

	memset(r, 0, sizeof *r);
	r->next = c->from;
	if (!pgate_store__zdict_cdict(t, &cdict, error))
		return FALSE;
	if (cdict == NULL) {
		r->done = TRUE;	/* no dictionary: nothing to gain */
		return TRUE;
	}
	want = t->store->zcdict_id;
	while (r->rewritten < c->max && r->examined < (guint64)c->max * 8 &&
	       read < (32u << 20)) {
		guint8 kb[8];
		MDB_val k = { 8, kb }, v;
		MDB_cursor *cur;
		g_autoptr(PgateMessageRec) rec = NULL;
		g_autoptr(GBytes) plain = NULL;
		g_autoptr(GError) local = NULL;
		PgateRawCodec was;
		const void *data;
		gsize len, old_len;
		guint64 num;
		gboolean smaller;
		int rc;

		pgate_store__be64(kb, r->next);
		rc = pgate_store__txn_cursor(t, DBI_RAW, &cur);
		if (rc == 0)
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == MDB_NOTFOUND) {
			r->done = TRUE;
			break;
		}
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc, "read raw");
		if (k.mv_size != 8)
			return g_set_error(error, PGATE_STORE_ERROR,
					   PGATE_ERROR_CORRUPT, "raw: a key of "
					   "%zu bytes: the store is damaged; "
					   "run 'patchgate store verify'",
					   k.mv_size), FALSE;
		num = pgate_store__get_be64(k.mv_data);
		r->next = num + 1;
		r->examined++;
		old_len = v.mv_size;
		/* already a frame of this dictionary: not even its record */
		if (old_len >= 4 &&
		    memcmp(v.mv_data, "\x28\xb5\x2f\xfd", 4) == 0 &&
		    ZSTD_getDictID_fromFrame(v.mv_data, old_len) == want)
			continue;
		rec = pgate_store_message_get(t, num, &local);
		if (rec == NULL || rec->raw_location != PGATE_RAW_INLINE) {
			r->unreadable += rec == NULL;
			continue;
		}
		if (rec->raw_codec == PGATE_RAW_CODEC_NONE &&
		    old_len < PGATE_STORE__ZSTD_MIN)
			continue;
		plain = pgate_store__raw_decode(t, rec, v.mv_data, old_len,
						&local);
		if (plain == NULL) {
			/* store verify tells of it; left as it is */
			r->unreadable++;
			continue;
		}
		data = g_bytes_get_data(plain, &len);
		read += len;
		if (!compress_raw(t, data, len, &smaller, error))
			return FALSE;
		if (!smaller || t->store->zbuf.len >= old_len)
			continue;
		if (!pgate_store__mark_current(t, error))
			return FALSE;
		v = (MDB_val){ t->store->zbuf.len, t->store->zbuf.data };
		k = (MDB_val){ 8, kb };
		pgate_store__be64(kb, num);
		rc = pgate_store__txn_put(t, DBI_RAW, &k, &v, 0);
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc,
						     "put raw message");
		was = rec->raw_codec;
		if (was != PGATE_RAW_CODEC_ZSTD) {
			rec->raw_codec = PGATE_RAW_CODEC_ZSTD;
			if (!put_record(t, rec, error))
				return FALSE;
		}
		r->rewritten++;
		r->bytes_before += old_len;
		r->bytes_after += t->store->zbuf.len;
	}
	return TRUE;
}

gboolean
pgate_store_recompress(PgateStore *store, guint64 from, guint max,
		       PgateStoreRecompressed *out, GError **error)
{
	RecompressCtx c = { MAX(from, 1), MAX(max, 1), { 0 } };

	if (!pgate_store_write(store, recompress_txn, &c, error))
		return FALSE;
	*out = c.r;
	return TRUE;
}

guint64
pgate_store_message_count(PgateStoreTxn *t)
{
	MDB_stat st;

	if (mdb_stat(t->txn, t->store->dbi[DBI_MESSAGES], &st) != 0)
		return 0;
	return st.ms_entries;
}

guint64
pgate_store_message_last_num(PgateStoreTxn *t)
{
	MDB_val k = { 11, (void *)"next_msgnum" }, v;

	if (mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v) != 0 ||
	    v.mv_size != 8)
		return 0;
	return pgate_store__get_be64(v.mv_data) - 1;
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
	pgate_store__step(t);
	pgate_store__be64(kb, iter->next);
	rc = pgate_store__txn_cursor(t, DBI_MESSAGES, &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND)
		return FALSE;
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "iterate messages");
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

gboolean
pgate_store__msgid_index_rebuild(PgateStoreTxn *t, GError **error)
{
	PgateStoreMessageIter it;
	PgateMessageRec *rec;
	int rc = mdb_drop(t->txn, t->store->dbi[DBI_MSGID_INDEX], 0);

	if (rc != 0)
		return pgate_store__txn_fail(t, error, rc, "empty msgid index");
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
			return pgate_store__txn_fail(t, error, rc,
						     "put msgid index");
	}
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}
