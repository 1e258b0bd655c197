/* fuzz-store-keys.c - the keys the store builds from mail (store/index.c).
 *
 * A From address, a Message-ID or a patch-id is hostile text, and the
 * threading indexes build LMDB keys from it in fixed buffers: a sender of
 * 401 to 480 bytes once overflowed author_index's (found by a unit test,
 * not by the parser's fuzz targets, which never reach the store).  Here
 * the input is, after an 8-byte date, up to four fields separated by
 * newlines: a sender, a key (Message-ID, patch-id), a series id (cut to
 * the 64 bytes name_keys allows) and a value (cut to the 480 bytes an
 * index value may have; "v" when empty).  In one write transaction, never
 * committed, each of these is put, read back, removed and looked for
 * again:
 *
 *  - author_index: pgate_store_author_add(), _range() over the date and
 *    over every date, _remove();
 *  - name_keys: pgate_store_name_put(), _range(), _delete();
 *  - refs_index: pgate_store_refs_add(), _lookup(), _remove();
 *  - patchid_index: pgate_store_index_add(), _foreach(), _remove().
 *
 * Checked: what was put is found exactly once, with its value, and is
 * gone once removed; a sender or key one byte longer finds nothing.
 */
#include "tests/fuzz/fuzz-private.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static PgateStore *store;
static char *store_dir;

/* at exit: the store and its directory */
static void
cleanup(void)
{
	pgate_store_free(store);
	pgate_test_rm_rf(store_dir);
	g_free(store_dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	g_autoptr(GError) error = NULL;

	pgate_fuzz_init();
	store_dir = g_dir_make_tmp("pgate-fuzz-store-XXXXXX", &error);
	PGATE_FUZZ_CHECK(store_dir != NULL);
	store = pgate_store_open(store_dir,
				 PGATE_STORE_RW | PGATE_STORE_CREATE, NULL,
				 &error);
	PGATE_FUZZ_CHECK(store != NULL);
	atexit(cleanup);
	return 0;
}

typedef struct {
	gint64 date;
	const char *sender, *key, *id;
	const guint8 *val;
	gsize vlen;
} Input;

typedef struct {
	const Input *in;
	guint found, other;
} Seen;

static gboolean
name_seen(gint64 date, const char *id, gsize idlen, const guint8 *val,
	  gsize len, gpointer data, GError **error)
{
	Seen *s = data;

	if (date == s->in->date && idlen == strlen(s->in->id) &&
	    memcmp(id, s->in->id, idlen) == 0 && len == s->in->vlen &&
	    memcmp(val, s->in->val, len) == 0)
		s->found++;
	else
		s->other++;
	return TRUE;
}

static gboolean
value_seen(const void *val, gsize len, gpointer data, GError **error)
{
	Seen *s = data;

	if (len == s->in->vlen && memcmp(val, s->in->val, len) == 0)
		s->found++;
	else
		s->other++;
	return TRUE;
}

static guint
count_num(GArray *nums, guint64 num)
{
	guint n = 0;

	PGATE_FUZZ_CHECK(nums != NULL);
	for (guint i = 0; i < nums->len; i++)
		n += g_array_index(nums, guint64, i) == num;
	return n;
}

static void
check_author(PgateStoreTxn *txn, const Input *in, const char *longer)
{
	g_autoptr(GArray) at = NULL, all = NULL, none = NULL, gone = NULL;

	PGATE_FUZZ_CHECK(pgate_store_author_add(txn, in->sender, in->date, 42,
						NULL));
	at = pgate_store_author_range(txn, in->sender, in->date, in->date,
				      NULL);
	all = pgate_store_author_range(txn, in->sender, G_MININT64, G_MAXINT64,
				       NULL);
	none = pgate_store_author_range(txn, longer, G_MININT64, G_MAXINT64,
					NULL);
	PGATE_FUZZ_CHECK(count_num(at, 42) == 1 && at->len == 1);
	PGATE_FUZZ_CHECK(count_num(all, 42) == 1 && all->len == 1);
	PGATE_FUZZ_CHECK(none != NULL && none->len == 0);
	PGATE_FUZZ_CHECK(pgate_store_author_remove(txn, in->sender, in->date,
						   42, NULL));
	gone = pgate_store_author_range(txn, in->sender, G_MININT64,
					G_MAXINT64, NULL);
	PGATE_FUZZ_CHECK(gone != NULL && gone->len == 0);
}

static void
check_name(PgateStoreTxn *txn, const Input *in, const char *longer)
{
	Seen at = { in, 0, 0 }, all = { in, 0, 0 }, none = { in, 0, 0 };
	Seen gone = { in, 0, 0 };

	PGATE_FUZZ_CHECK(pgate_store_name_put(txn, in->sender, in->date, in->id,
					      in->val, in->vlen, NULL));
	PGATE_FUZZ_CHECK(pgate_store_name_range(txn, in->sender, in->date,
						in->date, name_seen, &at, NULL));
	PGATE_FUZZ_CHECK(pgate_store_name_range(txn, in->sender, G_MININT64,
						G_MAXINT64, name_seen, &all,
						NULL));
	PGATE_FUZZ_CHECK(pgate_store_name_range(txn, longer, G_MININT64,
						G_MAXINT64, name_seen, &none,
						NULL));
	PGATE_FUZZ_CHECK(at.found == 1 && at.other == 0);
	PGATE_FUZZ_CHECK(all.found == 1 && all.other == 0);
	PGATE_FUZZ_CHECK(none.found == 0 && none.other == 0);
	PGATE_FUZZ_CHECK(pgate_store_name_delete(txn, in->sender, in->date,
						 in->id, NULL));
	PGATE_FUZZ_CHECK(pgate_store_name_range(txn, in->sender, G_MININT64,
						G_MAXINT64, name_seen, &gone,
						NULL));
	PGATE_FUZZ_CHECK(gone.found == 0 && gone.other == 0);
}

static void
check_indexes(PgateStoreTxn *txn, const Input *in, const char *longer)
{
	g_autoptr(GArray) refs = NULL, other = NULL, gone = NULL;
	Seen got = { in, 0, 0 }, none = { in, 0, 0 }, after = { in, 0, 0 };

	PGATE_FUZZ_CHECK(pgate_store_refs_add(txn, in->key, 7, NULL));
	refs = pgate_store_refs_lookup(txn, in->key, NULL);
	other = pgate_store_refs_lookup(txn, longer, NULL);
	PGATE_FUZZ_CHECK(count_num(refs, 7) == 1 && refs->len == 1);
	PGATE_FUZZ_CHECK(other != NULL && other->len == 0);
	PGATE_FUZZ_CHECK(pgate_store_refs_remove(txn, in->key, 7, NULL));
	gone = pgate_store_refs_lookup(txn, in->key, NULL);
	PGATE_FUZZ_CHECK(gone != NULL && gone->len == 0);

	PGATE_FUZZ_CHECK(pgate_store_index_add(txn, PGATE_STORE_INDEX_PATCHID,
					       in->key, in->val, in->vlen,
					       NULL));
	PGATE_FUZZ_CHECK(pgate_store_index_foreach(
		txn, PGATE_STORE_INDEX_PATCHID, in->key, value_seen, &got,
		NULL));
	PGATE_FUZZ_CHECK(pgate_store_index_foreach(
		txn, PGATE_STORE_INDEX_PATCHID, longer, value_seen, &none,
		NULL));
	PGATE_FUZZ_CHECK(got.found == 1 && got.other == 0);
	PGATE_FUZZ_CHECK(none.found == 0 && none.other == 0);
	PGATE_FUZZ_CHECK(pgate_store_index_remove(
		txn, PGATE_STORE_INDEX_PATCHID, in->key, in->val, in->vlen,
		NULL));
	PGATE_FUZZ_CHECK(pgate_store_index_foreach(
		txn, PGATE_STORE_INDEX_PATCHID, in->key, value_seen, &after,
		NULL));
	PGATE_FUZZ_CHECK(after.found == 0 && after.other == 0);
}

static gboolean
run(PgateStoreTxn *txn, gpointer data, GError **error)
{
	const Input *in = data;
	g_autofree char *longer_sender = g_strconcat(in->sender, "x", NULL);
	g_autofree char *longer_key = g_strconcat(in->key, "x", NULL);

	check_author(txn, in, longer_sender);
	check_name(txn, in, longer_sender);
	check_indexes(txn, in, longer_key);
	/* never committed: every input starts from an empty store */
	g_set_error_literal(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "rolled back");
	return FALSE;
}

/* The next field of @p..@end (up to a newline), as a C string: a NUL in
 * it ends it, as it would end any string the parser hands on. */
static char *
field(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
	const uint8_t *stop = nl != NULL ? nl : end;
	char *f = g_strndup((const char *)*p, (gsize)(stop - *p));

	*p = nl != NULL ? nl + 1 : end;
	return f;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *sender = NULL, *key = NULL, *id = NULL, *val = NULL;
	const uint8_t *p = data + 8, *end = data + size;
	guint64 d = 0;
	Input in;

	if (size < 8 || size > PGATE_FUZZ_MAX_INPUT)
		return -1;
	for (int i = 0; i < 8; i++)
		d = d << 8 | data[i];
	sender = field(&p, end);
	key = field(&p, end);
	id = field(&p, end);
	val = field(&p, end);
	if (strlen(id) > 64)
		id[64] = '\0';
	if (strlen(val) > 480)
		val[480] = '\0';
	in = (Input){ (gint64)d, sender, key, id, (const guint8 *)val,
		      strlen(val) };
	if (in.vlen == 0) {
		in.val = (const guint8 *)"v";
		in.vlen = 1;
	}
	PGATE_FUZZ_CHECK(!pgate_store_write(store, run, &in, NULL));
	return 0;
}
