/* zdict.c - zstd dictionaries trained on the store's own mail (schema 6).
 *
 * meta (docs/store-format.md, "Raw mail, compressed"):
 *   zdict/IIIIIIII   a zstd dictionary (zstd's format: magic 0xEC30A437,
 *                    its ID, entropy tables, content), IIIIIIII its ID in
 *                    8 lowercase hex digits
 *   zdict_current    u32 BE: the ID of the dictionary writers use (the
 *                    newest)
 *
 * A frame written with a dictionary records its ID (zstd's frame header),
 * so every dictionary ever used is kept: a reader loads the one its frame
 * names (ZSTD_getDictID_fromFrame) and keeps it, digested, for the rest
 * of the process (one ZSTD_DDict each, shared by its threads: a DDict is
 * only read once made).  The writer digests the current one once a
 * process (a ZSTD_CDict at PGATE_STORE__ZSTD_LEVEL, smaller tables), and again when
 * zdict_current names another (a retraining, by this process or another).
 *
 * Training reads a sample of the stored mail in one read transaction,
 * trains without any lock (deliveries go on), and writes the dictionary
 * in one short write transaction.
 */
#include "store/store-private.h"

#include <stdio.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY  /* ZSTD_createCDict_advanced */
#include <zstd.h>
#define ZDICT_STATIC_LINKING_ONLY  /* ZDICT_trainFromBuffer_fastCover */
#include <zdict.h>

#define CURRENT_KEY "zdict_current"
#define KEY_PREFIX "zdict/"

/* the readers' cache of digested dictionaries (store->zddicts) */
static GMutex ddict_lock;

static void
free_ddict(gpointer d)
{
	ZSTD_freeDDict(d);
}

static void
dict_key(char buf[sizeof KEY_PREFIX + 8], guint32 id)
{
	g_snprintf(buf, sizeof KEY_PREFIX + 8, KEY_PREFIX "%08x", id);
}

static gboolean
zdict_corrupt(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
zdict_corrupt(GError **error, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT, "%s", msg);
	return FALSE;
}

/* Dictionary @id's bytes, borrowed from the transaction: %FALSE with
 * PGATE_ERROR_CORRUPT when the store does not hold it, or holds
 * something else under its key. */
static gboolean
dict_bytes(PgateStoreTxn *t, guint32 id, const guint8 **out, gsize *out_len,
	   GError **error)
{
	char key[sizeof KEY_PREFIX + 8];
	MDB_val k, v;
	int rc;

	dict_key(key, id);
	k = (MDB_val){ strlen(key), key };
	rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
	if (rc == MDB_NOTFOUND)
		return zdict_corrupt(error, "needs zstd dictionary %u, which "
				     "the store does not hold (meta %s)", id,
				     key);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, key);
	if (v.mv_size > PGATE_STORE_ZDICT_MAX_SIZE ||
	    ZSTD_getDictID_fromDict(v.mv_data, v.mv_size) != id)
		return zdict_corrupt(error, "needs zstd dictionary %u, but meta "
				     "%s holds something else", id, key);
	*out = v.mv_data;
	*out_len = v.mv_size;
	return TRUE;
}

const struct ZSTD_DDict_s *
pgate_store__zdict_ddict(PgateStoreTxn *t, guint32 id, GError **error)
{
	PgateStore *store = t->store;
	ZSTD_DDict *d;
	const guint8 *bytes;
	gsize len;

	g_mutex_lock(&ddict_lock);
	d = store->zddicts ? g_hash_table_lookup(store->zddicts,
						 GUINT_TO_POINTER(id)) : NULL;
	g_mutex_unlock(&ddict_lock);
	if (d != NULL)
		return d;
	if (!dict_bytes(t, id, &bytes, &len, error))
		return NULL;
	d = ZSTD_createDDict(bytes, len);
	if (d == NULL) {
		zdict_corrupt(error, "zstd dictionary %u does not load", id);
		return NULL;
	}
	g_mutex_lock(&ddict_lock);
	if (store->zddicts == NULL)
		store->zddicts = g_hash_table_new_full(
			g_direct_hash, g_direct_equal, NULL,
			free_ddict);
	if (g_hash_table_lookup(store->zddicts, GUINT_TO_POINTER(id))) {
		/* another thread made it meanwhile */
		ZSTD_freeDDict(d);
		d = g_hash_table_lookup(store->zddicts, GUINT_TO_POINTER(id));
	} else {
		g_hash_table_insert(store->zddicts, GUINT_TO_POINTER(id), d);
	}
	g_mutex_unlock(&ddict_lock);
	return d;
}

/* The ID meta zdict_current names, 0 for none. */
static gboolean
current_id(PgateStoreTxn *t, guint32 *out, GError **error)
{
	MDB_val k = { strlen(CURRENT_KEY), (void *)CURRENT_KEY }, v;
	int rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);

	*out = 0;
	if (rc == MDB_NOTFOUND)
		return TRUE;
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, CURRENT_KEY);
	if (v.mv_size != 4)
		return zdict_corrupt(error, "meta " CURRENT_KEY " is %zu bytes, "
				     "not 4", v.mv_size);
	*out = get_be32(v.mv_data);
	return TRUE;
}

gboolean
pgate_store__zdict_cdict(PgateStoreTxn *t, const struct ZSTD_CDict_s **out,
			 GError **error)
{
	PgateStore *store = t->store;
	const guint8 *bytes;
	gsize len;
	guint32 id;
	ZSTD_compressionParameters params;

	*out = NULL;
	if (!current_id(t, &id, error))
		return FALSE;
	if (id == 0)
		return TRUE;
	if (store->zcdict != NULL && store->zcdict_id == id) {
		*out = store->zcdict;
		return TRUE;
	}
	if (!dict_bytes(t, id, &bytes, &len, error))
		return FALSE;
	ZSTD_freeCDict(store->zcdict);
	store->zcdict_id = 0;
	/* level 3's parameters, with smaller tables: a delivery digests the
	 * dictionary for its one message, and on a virtual machine whose
	 * page faults are dear, the 520 KB that level 3 makes of a 110 KB
	 * dictionary cost a delivery 3 ms of CPU; 226 KB cost 0.8 ms, for
	 * frames 1.8% larger (2,000 messages of linux-rtc: 0.364 of the
	 * mail, 0.357 with level 3's tables, 0.452 without a dictionary) */
	params = ZSTD_getCParams(PGATE_STORE__ZSTD_LEVEL, 0, len);
	params.hashLog = MIN(params.hashLog, 14);
	params.chainLog = MIN(params.chainLog, 13);
	store->zcdict = ZSTD_createCDict_advanced(bytes, len, ZSTD_dlm_byCopy,
						  ZSTD_dct_auto, params,
						  ZSTD_defaultCMem);
	if (store->zcdict == NULL)
		return zdict_corrupt(error, "zstd dictionary %u does not load",
				     id);
	store->zcdict_id = id;
	*out = store->zcdict;
	return TRUE;
}

void
pgate_store__zdict_cleanup(PgateStore *store)
{
	ZSTD_freeCDict(store->zcdict);
	store->zcdict = NULL;
	store->zcdict_id = 0;
	g_clear_pointer(&store->zddicts, g_hash_table_unref);
}

/* ---- what the store holds ---- */

gboolean
pgate_store_zdict_list(PgateStoreTxn *t, PgateStoreZdict *out_current,
		       guint *out_count, GError **error)
{
	MDB_cursor *cur;
	MDB_val k = { strlen(KEY_PREFIX), (void *)KEY_PREFIX }, v;
	guint32 id;
	int rc;

	memset(out_current, 0, sizeof *out_current);
	*out_count = 0;
	if (!current_id(t, &id, error))
		return FALSE;
	rc = mdb_cursor_open(t->txn, t->store->dbi[DBI_META], &cur);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "open cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < strlen(KEY_PREFIX) ||
		    memcmp(k.mv_data, KEY_PREFIX, strlen(KEY_PREFIX)) != 0)
			break;
		++*out_count;
		if (k.mv_size == strlen(KEY_PREFIX) + 8 && id != 0) {
			char key[sizeof KEY_PREFIX + 8];

			dict_key(key, id);
			if (memcmp(k.mv_data, key, k.mv_size) == 0) {
				out_current->id = id;
				out_current->size = v.mv_size;
			}
		}
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return pgate_store__mdb_error(error, rc, "list dictionaries");
	/* (one that is not there: size 0; store verify tells of it) */
	out_current->id = id;
	return TRUE;
}

gboolean
pgate_store__zdict_check_meta(PgateStoreTxn *t, const guint8 *key,
			      gsize klen, const guint8 *val, gsize vlen,
			      char **out_problem)
{
	*out_problem = NULL;
	if (klen == strlen(CURRENT_KEY) && memcmp(key, CURRENT_KEY, klen) == 0) {
		const guint8 *b;
		gsize l;
		g_autoptr(GError) e = NULL;

		if (vlen != 4)
			*out_problem = g_strdup_printf("value of %zu bytes, "
						       "not 4", vlen);
		else if (!dict_bytes(t, get_be32(val), &b, &l, &e))
			*out_problem = g_strdup_printf(
				"names dictionary %u: %s", get_be32(val),
				e->message);
		return TRUE;
	}
	if (klen < strlen(KEY_PREFIX) ||
	    memcmp(key, KEY_PREFIX, strlen(KEY_PREFIX)) != 0)
		return FALSE;
	{
		char want[sizeof KEY_PREFIX + 8];
		guint32 id = ZSTD_getDictID_fromDict(val, vlen);

		dict_key(want, id);
		if (vlen > PGATE_STORE_ZDICT_MAX_SIZE)
			*out_problem = g_strdup_printf(
				"a dictionary of %zu bytes, over %u", vlen,
				PGATE_STORE_ZDICT_MAX_SIZE);
		else if (id == 0)
			*out_problem = g_strdup("not a zstd dictionary");
		else if (klen != strlen(want) || memcmp(key, want, klen) != 0)
			*out_problem = g_strdup_printf(
				"holds zstd dictionary %u, not the one its key "
				"names", id);
	}
	return TRUE;
}

/* ---- training ---- */

typedef struct {
	GByteArray *data;   /* the samples, one after the other */
	GArray *sizes;      /* (size_t) each one's length */
} Sample;

static void
sample_clear(Sample *s)
{
	g_clear_pointer(&s->data, g_byte_array_unref);
	g_clear_pointer(&s->sizes, g_array_unref);
}

/* Up to @max messages whose raw bytes the store holds, spread evenly over
 * the message numbers, each at most SAMPLE_MAX_ONE bytes (its head), at
 * most SAMPLE_MAX_BYTES in all; one read transaction.  A message that
 * does not decode is left out (store verify tells of it). */
#define SAMPLE_MAX_ONE (128u << 10)
#define SAMPLE_MAX_BYTES (8u << 20)

static gboolean
read_sample(PgateStore *store, guint max, Sample *s, GError **error)
{
	g_autoptr(PgateStoreTxn) t = pgate_store_begin_read(store, error);
	MDB_cursor *cur;
	MDB_stat st;
	guint64 first = 0, last = 0, prev = 0, span;
	MDB_val k, v;
	int rc;

	if (t == NULL)
		return FALSE;
	s->data = g_byte_array_new();
	s->sizes = g_array_new(FALSE, FALSE, sizeof(size_t));
	rc = mdb_stat(t->txn, store->dbi[DBI_RAW], &st);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "raw");
	if (st.ms_entries == 0 || max == 0)
		return TRUE;
	rc = pgate_store__txn_cursor(t, DBI_RAW, &cur);
	if (rc == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	if (rc == 0 && k.mv_size == 8)
		first = pgate_store__get_be64(k.mv_data);
	if (rc == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		last = pgate_store__get_be64(k.mv_data);
	if (rc != 0)
		return pgate_store__mdb_error(error, rc, "read raw");
	span = last >= first ? last - first + 1 : 1;
	if (st.ms_entries < max)
		max = (guint)st.ms_entries;
	for (guint i = 0; i < max && s->data->len < SAMPLE_MAX_BYTES; i++) {
		guint8 kb[8];
		guint64 num;
		g_autoptr(PgateMessageRec) rec = NULL;
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) local = NULL;
		const guint8 *p;
		gsize n;
		size_t take;

		/* (span / max may be 0: the numbers at the start, then) */
		num = first + (guint64)((double)span * i / max);
		pgate_store__be64(kb, num);
		k = (MDB_val){ 8, kb };
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == MDB_NOTFOUND)
			break;
		if (rc != 0)
			return pgate_store__mdb_error(error, rc, "read raw");
		if (k.mv_size != 8)
			continue;
		num = pgate_store__get_be64(k.mv_data);
		if (num == prev && s->sizes->len > 0)
			continue;
		prev = num;
		rec = pgate_store_message_get(t, num, &local);
		if (rec == NULL || rec->raw_location != PGATE_RAW_INLINE)
			continue;
		raw = pgate_store__raw_decode(t, rec, v.mv_data, v.mv_size,
					      &local);
		if (raw == NULL)
			continue;
		p = g_bytes_get_data(raw, &n);
		take = MIN(n, SAMPLE_MAX_ONE);
		if (take < 16)
			continue;
		g_byte_array_append(s->data, p, (guint)take);
		g_array_append_val(s->sizes, take);
	}
	return TRUE;
}

/* The samples' bytes compressed one by one at PGATE_STORE__ZSTD_LEVEL,
 * with @cdict or without (NULL). */
static guint64
compressed_size(const Sample *s, const ZSTD_CDict *cdict)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	g_autofree guint8 *buf = NULL;
	gsize cap = ZSTD_compressBound(SAMPLE_MAX_ONE), off = 0;
	guint64 total = 0;

	if (c == NULL)
		return 0;
	buf = g_malloc(cap);
	for (guint i = 0; i < s->sizes->len; i++) {
		size_t len = g_array_index(s->sizes, size_t, i);
		size_t n = cdict != NULL
			? ZSTD_compress_usingCDict(c, buf, cap,
						   s->data->data + off, len,
						   cdict)
			: ZSTD_compressCCtx(c, buf, cap, s->data->data + off,
					    len, PGATE_STORE__ZSTD_LEVEL);

		total += ZSTD_isError(n) ? len : MIN(n, len);
		off += len;
	}
	ZSTD_freeCCtx(c);
	return total;
}

typedef struct {
	const guint8 *dict;
	gsize len;
	guint32 id;         /* out: the ID it was stored under */
} PutCtx;

/* Stores the dictionary and makes it the current one.  An ID taken by
 * another dictionary (zstd picks them from a hash of the content, so two
 * different ones may share it) is changed to the next free one: the ID
 * is the 4 bytes after the magic number (RFC 8878, 5), and nothing in
 * the dictionary depends on it. */
static gboolean
put_dict(PgateStoreTxn *t, gpointer payload, GError **error)
{
	PutCtx *c = payload;
	g_autofree guint8 *d = g_memdup2(c->dict, c->len);
	guint32 id = ZSTD_getDictID_fromDict(d, c->len);
	guint8 b[4];

	for (guint tries = 0;; tries++) {
		char key[sizeof KEY_PREFIX + 8];
		MDB_val k, v;
		int rc;

		dict_key(key, id);
		k = (MDB_val){ strlen(key), key };
		rc = mdb_get(t->txn, t->store->dbi[DBI_META], &k, &v);
		if (rc == MDB_NOTFOUND ||
		    (rc == 0 && v.mv_size == c->len &&
		     memcmp(v.mv_data, d, c->len) == 0))
			break;
		if (rc != 0)
			return pgate_store__txn_fail(t, error, rc, key);
		if (tries > 1000)
			return g_set_error(error, PGATE_STORE_ERROR,
					   PGATE_ERROR_FAILED, "no free zstd "
					   "dictionary ID"), FALSE;
		/* the private range: 32768 to 2^31-1 */
		id = id + 1 >= (1u << 31) ? 32768 : MAX(id + 1, 32768);
		d[4] = (guint8)id;
		d[5] = (guint8)(id >> 8);
		d[6] = (guint8)(id >> 16);
		d[7] = (guint8)(id >> 24);
	}
	{
		char key[sizeof KEY_PREFIX + 8];

		dict_key(key, id);
		if (!pgate_store_meta_put(t, key, d, c->len, error))
			return FALSE;
	}
	put_be32(b, id);
	if (!pgate_store_meta_put(t, CURRENT_KEY, b, 4, error))
		return FALSE;
	/* an older patchgate could not read what is written with it */
	if (!pgate_store__mark_current(t, error))
		return FALSE;
	c->id = id;
	return TRUE;
}

gboolean
pgate_store_zdict_train(PgateStore *store, guint max_samples,
			PgateStoreZdictTrained *out, GError **error)
{
	Sample s = { 0 };
	g_autofree guint8 *dict = NULL;
	gint64 start = g_get_monotonic_time();
	ZSTD_CDict *cdict;
	PutCtx put;
	ZDICT_fastCover_params_t params = { 0 };
	size_t n;

	memset(out, 0, sizeof *out);
	if (max_samples == 0)
		max_samples = PGATE_STORE_ZDICT_SAMPLES;
	if (!read_sample(store, max_samples, &s, error)) {
		sample_clear(&s);
		return FALSE;
	}
	out->samples = s.sizes->len;
	out->sample_bytes = s.data->len;
	if (s.sizes->len < PGATE_STORE_ZDICT_MIN_SAMPLES) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "too few messages to train a dictionary on: %u "
			    "whose raw mail the store holds, at least %u "
			    "needed", s.sizes->len,
			    PGATE_STORE_ZDICT_MIN_SAMPLES);
		sample_clear(&s);
		return FALSE;
	}
	dict = g_malloc(PGATE_STORE_ZDICT_SIZE);
	/* fastCover with fixed parameters: ZDICT_trainFromBuffer() tries
	 * several (k from 50 to 2000), which took 4 times as long for no
	 * better dictionary (measured on 2,000 messages of linux-rtc and
	 * 2,000 others: 0.35 of the mail either way, 0.45 without) */
	params.k = 1024;
	params.d = 8;
	params.f = 20;
	params.accel = 2;
	params.zParams.compressionLevel = PGATE_STORE__ZSTD_LEVEL;
	n = ZDICT_trainFromBuffer_fastCover(
		dict, PGATE_STORE_ZDICT_SIZE, s.data->data,
		(const size_t *)(void *)s.sizes->data, s.sizes->len, params);
	if (ZDICT_isError(n) || ZDICT_getDictID(dict, n) == 0) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "train a zstd dictionary on %u messages: %s",
			    s.sizes->len, ZDICT_isError(n)
			    ? ZDICT_getErrorName(n) : "no dictionary made");
		sample_clear(&s);
		return FALSE;
	}
	out->train_seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	put = (PutCtx){ dict, n, 0 };
	if (!pgate_store_write(store, put_dict, &put, error)) {
		sample_clear(&s);
		return FALSE;
	}
	out->id = put.id;
	out->size = n;
	cdict = ZSTD_createCDict(dict, n, PGATE_STORE__ZSTD_LEVEL);
	out->compressed = cdict ? compressed_size(&s, cdict) : 0;
	out->compressed_plain = compressed_size(&s, NULL);
	ZSTD_freeCDict(cdict);
	out->seconds = (double)(g_get_monotonic_time() - start) / 1e6;
	sample_clear(&s);
	return TRUE;
}

gboolean
pgate_store_zdict_auto(PgateStore *store, gboolean *out_trained,
		       PgateStoreZdictTrained *out, GError **error)
{
	PgateStoreZdictTrained local_out;
	guint64 raw = 0;
	guint32 id = 0;

	*out_trained = FALSE;
	if (out == NULL)
		out = &local_out;
	if (store->zdict_auto_done || store->opts.zdict_train_after == 0)
		return TRUE;
	{
		g_autoptr(PgateStoreTxn) t = pgate_store_begin_read(store,
								    error);
		MDB_stat st;

		if (t == NULL || !current_id(t, &id, error))
			return FALSE;
		if (mdb_stat(t->txn, store->dbi[DBI_RAW], &st) == 0)
			raw = st.ms_entries;
	}
	if (id != 0) {
		store->zdict_auto_done = TRUE;
		return TRUE;
	}
	if (raw < store->opts.zdict_train_after)
		return TRUE;
	/* once a process, whatever comes of it: a sample that cannot be
	 * trained on now will not be better a batch later */
	store->zdict_auto_done = TRUE;
	if (!pgate_store_zdict_train(store, 0, out, error))
		return FALSE;
	*out_trained = TRUE;
	return TRUE;
}
