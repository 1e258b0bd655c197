/* test-store.c - the LMDB store: records, duplicates, growth, schema, locks */
#include "store/store.h"
#include "testutil.h"

#include <glib/gstdio.h>

#include <fcntl.h>
#include <lmdb.h>
#include <string.h>
#include <sys/file.h>
#include <zstd.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	char *dir;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->dir = g_dir_make_tmp("pgate-store-XXXXXX", NULL);
	g_assert_nonnull(f->dir);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	pgate_test_rm_rf(f->dir);
	g_free(f->dir);
}

static PgateStore *
open_rw(Fixture *f, const PgateStoreOptions *o)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = pgate_store_open(f->dir, PGATE_STORE_RW | PGATE_STORE_CREATE,
					 o, &error);

	g_assert_no_error(error);
	g_assert_nonnull(s);
	return s;
}

static PgateMessageRec *
make_rec(const char *msgid, const char *content)
{
	PgateMessageRec *r = pgate_message_rec_new();
	g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
	gsize n = 32;

	r->msgid = g_strdup(msgid);
	r->kind = PGATE_MSG_KIND_PATCH;
	r->subject = g_strdup("[PATCH v2 3/5] foo: bar");
	r->name = g_strdup("foo: bar");
	g_ptr_array_add(r->prefixes, g_strdup("v2"));
	g_ptr_array_add(r->prefixes, g_strdup("3/5"));
	r->version = 2;
	r->number = 3;
	r->total = 5;
	r->from_name = g_strdup("A U Thor");
	g_free(r->from_email);
	r->from_email = g_strdup("author@example.org");
	r->date = 1700000000;
	r->tz_minutes = -300;
	r->in_reply_to = g_strdup("cover@example.org");
	g_ptr_array_add(r->references, g_strdup("v1@example.org"));
	g_ptr_array_add(r->references, g_strdup("cover@example.org"));
	g_ptr_array_add(r->trailers, pgate_trailer_new("Reviewed-by",
						      "R <r@example.org>"));
	r->patch_id = g_strdup("0123456789abcdef0123456789abcdef01234567");
	r->change_id = g_strdup("20240101-foo-abc");
	g_ptr_array_add(r->prereq_patch_ids, g_strdup("feedface"));
	g_ptr_array_add(r->diff_files, g_strdup("src/a.c"));
	r->diff_sketch_len = 3;
	r->diff_sketch[0] = 7;
	r->diff_sketch[1] = 0x80000000u;
	r->diff_sketch[2] = 0xfffffffeu;
	g_checksum_update(ck, (const guchar *)content, -1);
	g_checksum_get_digest(ck, r->content_hash, &n);
	return r;
}

typedef struct {
	PgateMessageRec *rec;
	GBytes *raw;
	PgateStoreAddResult result;
} AddCtx;

static gboolean
add_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	AddCtx *c = payload;

	return pgate_store_message_add(txn, c->rec, c->raw, &c->result, error);
}

static PgateStoreAddResult
add(PgateStore *s, PgateMessageRec *rec, const char *raw)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) b = g_bytes_new(raw, strlen(raw));
	AddCtx c = { rec, b, 0 };

	g_assert_true(pgate_store_write(s, add_fn, &c, &error));
	g_assert_no_error(error);
	return c.result;
}

static void
test_roundtrip(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(PgateMessageRec) rec = make_rec("a@example.org", "one");
	g_autoptr(PgateMessageRec) got = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(GError) error = NULL;
	const PgateTrailer *t;

	g_assert_cmpint(add(s, rec, "raw one"), ==, PGATE_STORE_ADDED);
	g_assert_cmpuint(rec->num, ==, 1);
	txn = pgate_store_begin_read(s, &error);
	g_assert_no_error(error);
	got = pgate_store_message_get(txn, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(got->msgid, ==, "a@example.org");
	g_assert_cmpint(got->kind, ==, PGATE_MSG_KIND_PATCH);
	g_assert_cmpstr(got->subject, ==, "[PATCH v2 3/5] foo: bar");
	g_assert_cmpuint(got->prefixes->len, ==, 2);
	g_assert_cmpstr(g_ptr_array_index(got->prefixes, 1), ==, "3/5");
	g_assert_cmpuint(got->version, ==, 2);
	g_assert_cmpuint(got->number, ==, 3);
	g_assert_cmpuint(got->total, ==, 5);
	g_assert_cmpint(got->date, ==, 1700000000);
	g_assert_cmpint(got->tz_minutes, ==, -300);
	g_assert_cmpstr(got->from_email, ==, "author@example.org");
	g_assert_cmpuint(got->references->len, ==, 2);
	g_assert_cmpstr(g_ptr_array_index(got->references, 0), ==, "v1@example.org");
	t = g_ptr_array_index(got->trailers, 0);
	g_assert_cmpstr(t->name, ==, "Reviewed-by");
	g_assert_cmpstr(t->value, ==, "R <r@example.org>");
	g_assert_cmpstr(got->change_id, ==, "20240101-foo-abc");
	g_assert_cmpstr(g_ptr_array_index(got->prereq_patch_ids, 0), ==, "feedface");
	g_assert_cmpmem(got->content_hash, 32, rec->content_hash, 32);
	g_assert_cmpuint(got->diff_sketch_len, ==, 3);
	g_assert_cmpmem(got->diff_sketch, 12, rec->diff_sketch, 12);
	g_assert_cmpuint(got->raw_size, ==, 7);
	g_assert_cmpint(got->received, >, 0);
	raw = pgate_store_message_raw(txn, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw),
			"raw one", 7);
	g_assert_cmpuint(pgate_store_message_count(txn), ==, 1);
}

static void
test_duplicates(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "one");
	g_autoptr(PgateMessageRec) a2 = make_rec("a@example.org", "one");
	g_autoptr(PgateMessageRec) a3 = make_rec("a@example.org", "other");
	g_autoptr(PgateMessageRec) old = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GArray) nums = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_cmpint(add(s, a, "x"), ==, PGATE_STORE_ADDED);
	g_assert_cmpint(add(s, a2, "x"), ==, PGATE_STORE_DUPLICATE);
	g_assert_cmpuint(a2->num, ==, a->num);
	g_assert_cmpint(add(s, a3, "y"), ==, PGATE_STORE_ADDED_CONFLICT);
	g_assert_cmpuint(a3->num, ==, 2);
	g_assert_true(a3->flags & PGATE_MSG_FLAG_ID_CONFLICT);

	txn = pgate_store_begin_read(s, &error);
	nums = pgate_store_message_lookup(txn, "a@example.org", &error);
	g_assert_no_error(error);
	g_assert_cmpuint(nums->len, ==, 2);
	g_assert_cmpuint(g_array_index(nums, guint64, 0), ==, 1);
	g_assert_cmpuint(g_array_index(nums, guint64, 1), ==, 2);
	/* the first one is flagged too */
	old = pgate_store_message_get(txn, 1, &error);
	g_assert_true(old->flags & PGATE_MSG_FLAG_ID_CONFLICT);
	g_assert_cmpuint(pgate_store_message_count(txn), ==, 2);
}

typedef struct {
	const char *msgid;
	const guint8 *hash;
	guint64 num;
} DelCtx;

static gboolean
del_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DelCtx *c = payload;

	return pgate_store_message_delete(txn, c->msgid, c->hash, &c->num, error);
}

/* public-inbox "rm": the message goes; the one left with its Message-ID no
 * longer conflicts; deleting it again is NOT_FOUND */
static void
test_delete(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "one");
	g_autoptr(PgateMessageRec) b = make_rec("a@example.org", "two");
	g_autoptr(PgateMessageRec) left = NULL;
	g_autoptr(GError) error = NULL;
	DelCtx c = { "a@example.org", NULL, 0 };

	add(s, a, "one");
	g_assert_cmpint(add(s, b, "two"), ==, PGATE_STORE_ADDED_CONFLICT);
	c.hash = a->content_hash;
	g_assert_true(pgate_store_write(s, del_fn, &c, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(c.num, ==, 1);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
		g_autoptr(GArray) nums = pgate_store_message_lookup(
			txn, "a@example.org", &error);
		g_autoptr(PgateMessageRec) gone = pgate_store_message_get(txn, 1, NULL);

		g_assert_cmpuint(nums->len, ==, 1);
		g_assert_cmpuint(g_array_index(nums, guint64, 0), ==, 2);
		g_assert_null(gone);
		left = pgate_store_message_get(txn, 2, &error);
		g_assert_false(left->flags & PGATE_MSG_FLAG_ID_CONFLICT);
		g_assert_cmpuint(pgate_store_message_count(txn), ==, 1);
	}
	g_assert_false(pgate_store_write(s, del_fn, &c, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
}

/* The on-disk key of a Message-ID too long for an LMDB key is \x01 and
 * its SHA-256: existing stores depend on it, so it is checked with LMDB
 * and GLib's SHA-256, not through the store. */
static void
check_long_key(Fixture *f, const char *id)
{
	g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
	guint8 key[33] = { 0x01 };
	gsize dlen = 32;
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi;
	MDB_val k = { sizeof key, key }, v;

	g_checksum_update(ck, (const guchar *)id, -1);
	g_checksum_get_digest(ck, key + 1, &dlen);
	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_RDONLY, 0), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "msgid_index", 0, &dbi), ==, 0);
	g_assert_cmpint(mdb_get(txn, dbi, &k, &v), ==, 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void
test_long_msgid(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autofree char *id = g_strnfill(900, 'x');
	g_autoptr(PgateMessageRec) a = make_rec(id, "one");
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GArray) nums = NULL;
	g_autoptr(GArray) none = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *other = g_strnfill(899, 'x');

	g_assert_cmpint(add(s, a, "x"), ==, PGATE_STORE_ADDED);
	txn = pgate_store_begin_read(s, &error);
	nums = pgate_store_message_lookup(txn, id, &error);
	g_assert_cmpuint(nums->len, ==, 1);
	none = pgate_store_message_lookup(txn, other, &error);
	g_assert_cmpuint(none->len, ==, 0);
	g_clear_pointer(&txn, pgate_store_txn_free);
	g_clear_pointer(&s, pgate_store_free);
	check_long_key(f, id);
}

/* A 256 KiB map cannot hold 3 MB of messages: it must grow, and no
 * message may be lost or doubled by the retried transactions. */
static void
test_map_growth(Fixture *f, gconstpointer data)
{
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	g_autoptr(PgateStore) s = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *body = g_strnfill(3000, 'b');

	o.map_size = 256 * 1024;
	s = open_rw(f, &o);
	for (int i = 0; i < 1000; i++) {
		g_autofree char *id = g_strdup_printf("m%d@example.org", i);
		g_autoptr(PgateMessageRec) r = make_rec(id, id);

		g_assert_cmpint(add(s, r, body), ==, PGATE_STORE_ADDED);
		g_assert_cmpuint(r->num, ==, (guint64)i + 1);
	}
	g_assert_cmpuint(pgate_store_map_size(s), >, 256 * 1024);
	txn = pgate_store_begin_read(s, &error);
	g_assert_cmpuint(pgate_store_message_count(txn), ==, 1000);
}

static void
test_map_limit(Fixture *f, gconstpointer data)
{
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	g_autoptr(PgateStore) s = NULL;
	g_autoptr(GError) error = NULL;
	/* bytes that do not compress */
	g_autoptr(GRand) rand = g_rand_new_with_seed(34);
	g_autofree guint32 *body = g_new(guint32, 600 * 1024 / 4);
	g_autoptr(GBytes) b = NULL;
	g_autoptr(PgateMessageRec) r = make_rec("big@example.org", "big");
	AddCtx c = { r, NULL, 0 };

	for (gsize i = 0; i < 600 * 1024 / 4; i++)
		body[i] = g_rand_int(rand);
	b = g_bytes_new(body, 600 * 1024);
	c.raw = b;

	o.map_size = 256 * 1024;
	o.max_map_size = 512 * 1024;
	s = open_rw(f, &o);
	g_assert_false(pgate_store_write(s, add_fn, &c, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FULL);
	g_assert_true(pgate_error_is_transient(error));
}

static void
test_missing(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *dir = g_build_filename(f->dir, "nope", NULL);
	PgateStore *s = pgate_store_open(dir, PGATE_STORE_RDONLY, NULL, &error);

	g_assert_null(s);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
	g_assert_false(pgate_error_is_transient(error));
}

typedef struct {
	guint version;
} SchemaCtx;

static gboolean
set_schema(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	SchemaCtx *c = payload;
	guint8 b[4] = { (guint8)(c->version >> 24), (guint8)(c->version >> 16),
			(guint8)(c->version >> 8), (guint8)c->version };

	return pgate_store_meta_put(txn, "schema_version", b, 4, error);
}

static void
test_schema(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "one");
	SchemaCtx newer = { PGATE_STORE_SCHEMA_VERSION + 1 }, older = { 0 };
	guint from = 99;

	g_assert_cmpuint(pgate_store_schema_version(s), ==, PGATE_STORE_SCHEMA_VERSION);
	add(s, a, "x");
	/* mark it older: refused until upgraded; the upgrade rebuilds the
	 * index, so the message is found again afterwards */
	g_assert_true(pgate_store_write(s, set_schema, &older, &error));
	pgate_store_free(s);
	s = pgate_store_open(f->dir, PGATE_STORE_RDONLY, NULL, &error);
	g_assert_null(s);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA);
	g_assert_nonnull(strstr(error->message, "store upgrade"));
	g_clear_error(&error);

	s = pgate_store_open(f->dir, PGATE_STORE_RW | PGATE_STORE_NO_UPGRADE_CHECK,
			     NULL, &error);
	g_assert_true(pgate_store_upgrade(s, &from, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(from, ==, 0);
	pgate_store_free(s);
	s = pgate_store_open(f->dir, PGATE_STORE_RDONLY, NULL, &error);
	g_assert_no_error(error);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
		g_autoptr(GArray) nums = pgate_store_message_lookup(
			txn, "a@example.org", &error);

		g_assert_cmpuint(nums->len, ==, 1);
	}
	pgate_store_free(s);

	/* a newer schema is refused, even for an upgrade */
	s = open_rw(f, NULL);
	g_assert_true(pgate_store_write(s, set_schema, &newer, &error));
	pgate_store_free(s);

	s = pgate_store_open(f->dir, PGATE_STORE_RDONLY, NULL, &error);
	g_assert_null(s);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA);
	g_assert_nonnull(strstr(error->message, "newer"));
	g_clear_error(&error);

	s = pgate_store_open(f->dir, PGATE_STORE_RW | PGATE_STORE_NO_UPGRADE_CHECK,
			     NULL, &error);
	g_assert_null(s);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_SCHEMA);
}

static void
test_lock_timeout(Fixture *f, gconstpointer data)
{
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	g_autoptr(PgateStore) s = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "one");
	g_autoptr(GBytes) b = g_bytes_new("x", 1);
	g_autofree char *lock = NULL;
	AddCtx c = { a, b, 0 };
	gint64 t0;
	int fd;

	o.lock_timeout_ms = 150;
	s = open_rw(f, &o);
	lock = g_build_filename(f->dir, "write.lock", NULL);
	/* flock locks belong to the open file description: a second open
	 * conflicts even within this process */
	fd = open(lock, O_RDWR);
	g_assert_cmpint(flock(fd, LOCK_EX), ==, 0);
	t0 = g_get_monotonic_time();
	g_assert_false(pgate_store_write(s, add_fn, &c, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_BUSY);
	g_assert_true(pgate_error_is_transient(error));
	g_assert_cmpint(g_get_monotonic_time() - t0, >=, 150 * 1000);
	g_clear_error(&error);
	close(fd);
	g_assert_true(pgate_store_write(s, add_fn, &c, &error));
	g_assert_no_error(error);
}

static void
test_iter(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GError) error = NULL;
	PgateStoreMessageIter it;
	PgateMessageRec *r;
	guint64 expect = 1;

	for (int i = 0; i < 5; i++) {
		g_autofree char *id = g_strdup_printf("i%d@x", i);
		g_autoptr(PgateMessageRec) rec = make_rec(id, id);

		add(s, rec, id);
	}
	txn = pgate_store_begin_read(s, &error);
	pgate_store_message_iter_init(&it, txn);
	while (pgate_store_message_iter_next(&it, &r, &error)) {
		g_autofree char *id = g_strdup_printf("i%d@x", (int)expect - 1);

		g_assert_cmpuint(r->num, ==, expect);
		g_assert_cmpstr(r->msgid, ==, id);
		pgate_message_rec_free(r);
		expect++;
	}
	g_assert_no_error(error);
	g_assert_cmpuint(expect, ==, 6);
}

/* Message record @num becomes @bad (the store closed: LMDB itself
 * writes it). */
static void
corrupt_message(Fixture *f, guint64 num, const char *bad)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	guint8 kb[8];
	MDB_val k = { 8, kb }, v = { strlen(bad), (void *)bad };

	for (int i = 7; i >= 0; i--, num >>= 8)
		kb[i] = (guint8)num;
	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "messages", 0, &dbi), ==, 0);
	g_assert_cmpint(mdb_put(txn, dbi, &k, &v, 0), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);
}

static void
note_unreadable(guint64 num, const GError *why, gpointer data)
{
	g_assert_error(why, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_string_append_printf(data, "(%" G_GUINT64_FORMAT ") ", num);
}

/* A record that does not decode is PGATE_ERROR_CORRUPT, named by its
 * number; the iterator can go on past it (or step over it); a later message with its
 * Message-ID is stored (the conflict flag is not set on what cannot be
 * read). */
static void
test_corrupt(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(GError) error = NULL;
	static const char *const bad[] = { "garbage", "M\001\003\377" };

	for (int i = 0; i < 4; i++) {
		g_autofree char *id = g_strdup_printf("i%d@x", i);
		g_autoptr(PgateMessageRec) rec = make_rec(id, id);

		add(s, rec, id);
	}
	pgate_store_free(g_steal_pointer(&s));
	/* an unknown format; a known one cut short */
	corrupt_message(f, 2, bad[0]);
	corrupt_message(f, 3, bad[1]);
	s = open_rw(f, NULL);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
		g_autoptr(PgateMessageRec) got = pgate_store_message_get(txn, 2,
									 &error);
		PgateStoreMessageIter it;
		PgateMessageRec *r;
		GString *seen = g_string_new(NULL);

		g_assert_null(got);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
		g_assert_cmpstr(error->message, ==,
				"message 2: message record has an unknown format");
		g_clear_error(&error);
		pgate_store_message_iter_init(&it, txn);
		for (;;) {
			if (pgate_store_message_iter_next(&it, &r, &error)) {
				g_string_append_printf(seen, "%s ", r->msgid);
				pgate_message_rec_free(r);
				continue;
			}
			if (error == NULL)
				break;
			g_assert_error(error, PGATE_STORE_ERROR,
				       PGATE_ERROR_CORRUPT);
			g_string_append_printf(seen, "[%s] ", error->message);
			g_clear_error(&error);
		}
		g_assert_cmpstr(seen->str, ==,
				"i0@x [message 2: message record has an unknown "
				"format] [message 3: message record is corrupt] "
				"i3@x ");
		/* the same, stepping over them */
		g_string_truncate(seen, 0);
		pgate_store_message_iter_init(&it, txn);
		while (pgate_store_message_iter_next_readable(
			       &it, &r, note_unreadable, seen, &error)) {
			g_string_append_printf(seen, "%s ", r->msgid);
			pgate_message_rec_free(r);
		}
		g_assert_no_error(error);
		g_assert_cmpstr(seen->str, ==, "i0@x (2) (3) i3@x ");
		g_assert_cmpuint(it.unreadable, ==, 2);
		g_assert_cmpuint(it.first_unreadable, ==, 2);
		g_string_free(seen, TRUE);
	}
	{
		g_autoptr(PgateMessageRec) again = make_rec("i1@x", "other");

		g_assert_cmpint(add(s, again, "other"), ==,
				PGATE_STORE_ADDED_CONFLICT);
		g_assert_cmpuint(again->num, ==, 5);
	}
}

typedef struct {
	const char *key;
	const char *val;
	gboolean del;
} TableCtx;

static gboolean
table_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	TableCtx *c = payload;

	if (c->del)
		return pgate_store_table_delete(txn, PGATE_STORE_TABLE_STAGE,
						c->key, error);
	return pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE, c->key,
				     c->val, strlen(c->val), error);
}

static void
test_tables(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(GError) error = NULL;
	static const char *const keys[] = {
		"s1/apply/master", "s1/apply/next", "s1/ci/build",
		"s10/apply/master", "s2/apply/master",
	};
	g_autofree char *huge = g_strnfill(481, 'k');
	TableCtx del = { "s1/apply/next", NULL, TRUE };
	TableCtx bad = { huge, "v", FALSE };
	TableCtx empty = { "", "v", FALSE };

	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		TableCtx c = { keys[i], keys[i], FALSE };

		g_assert_true(pgate_store_write(s, table_fn, &c, &error));
		g_assert_no_error(error);
	}
	g_assert_true(pgate_store_write(s, table_fn, &del, &error));
	/* deleting what is not there is no error */
	g_assert_true(pgate_store_write(s, table_fn, &del, &error));
	g_assert_no_error(error);
	g_assert_false(pgate_store_write(s, table_fn, &bad, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(pgate_store_write(s, table_fn, &empty, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
		/* "s1/" must not match "s10/" */
		g_autoptr(GPtrArray) one = pgate_store_table_scan(
			txn, PGATE_STORE_TABLE_STAGE, "s1/", &error);
		g_autoptr(GPtrArray) all = pgate_store_table_scan(
			txn, PGATE_STORE_TABLE_STAGE, NULL, &error);
		g_autoptr(GPtrArray) none = pgate_store_table_scan(
			txn, PGATE_STORE_TABLE_OUTBOX, NULL, &error);
		g_autoptr(GBytes) v = pgate_store_table_get(
			txn, PGATE_STORE_TABLE_STAGE, "s2/apply/master", &error);
		g_autoptr(GBytes) gone = NULL;
		PgateStoreEntry *e;

		g_assert_no_error(error);
		g_assert_cmpuint(one->len, ==, 2);
		e = one->pdata[0];
		g_assert_cmpstr(e->key, ==, "s1/apply/master");
		e = one->pdata[1];
		g_assert_cmpstr(e->key, ==, "s1/ci/build");
		g_assert_cmpmem(g_bytes_get_data(e->val, NULL),
				g_bytes_get_size(e->val), "s1/ci/build", 11);
		g_assert_cmpuint(all->len, ==, 4);
		g_assert_cmpuint(none->len, ==, 0);
		g_assert_cmpmem(g_bytes_get_data(v, NULL), g_bytes_get_size(v),
				"s2/apply/master", 15);
		gone = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
					     "s1/apply/next", &error);
		g_assert_null(gone);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
	}
}

/* The store at @f->dir opened without the schema check and upgraded,
 * from schema @from. */
static PgateStore *
upgraded(Fixture *f, guint from)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = pgate_store_open(
		f->dir, PGATE_STORE_RW | PGATE_STORE_NO_UPGRADE_CHECK, NULL,
		&error);
	guint was = 0;

	g_assert_no_error(error);
	g_assert_true(pgate_store_upgrade(s, &was, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(was, ==, from);
	return s;
}

static void
assert_rethread_needed(PgateStore *s)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
	g_autoptr(GBytes) flag = pgate_store_meta_get(txn, "rethread_needed",
						      &error);

	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(flag, NULL), g_bytes_get_size(flag),
			"1", 1);
}

/* as threading's skipped hook does */
static gboolean
failed_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	return pgate_store_set_rethread_needed(txn, TRUE, error) &&
	       pgate_store_set_threading_failed(txn, payload, error);
}

/* threading_failed: unset, set, bounded (400 bytes, cut between UTF-8
 * characters), an empty reason still a reason, cleared. */
static void
test_threading_failed(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(GError) error = NULL;
	GString *long_why = g_string_new("a");
	struct {
		const char *why;
		const char *want;
	} cases[] = {
		{ "series record is corrupt", "series record is corrupt" },
		{ "", "threading failed" },
		{ NULL, NULL },
	};

	for (guint i = 0; i < 250; i++)
		g_string_append(long_why, "\xc3\xa9");	/* e acute */
	for (gsize i = 0; i <= G_N_ELEMENTS(cases); i++) {
		const char *why = i < G_N_ELEMENTS(cases) ? cases[i].why
							   : long_why->str;
		g_autoptr(PgateStoreTxn) txn = NULL;
		g_autofree char *got = NULL;

		g_assert_true(pgate_store_write(s, failed_fn, (gpointer)why,
						&error));
		g_assert_no_error(error);
		txn = pgate_store_begin_read(s, &error);
		got = pgate_store_threading_failed(txn);
		if (i < G_N_ELEMENTS(cases)) {
			g_assert_cmpstr(got, ==, cases[i].want);
			continue;
		}
		/* byte 400 continues a character: cut before it */
		g_assert_cmpuint(strlen(got), ==, 399);
		g_assert_true(g_utf8_validate(got, -1, NULL));
		g_assert_true(g_str_has_prefix(long_why->str, got));
	}
	g_string_free(long_why, TRUE);
}

/* A schema 2 store gains the tables and asks for a rethread (link_index
 * is derived). */
static void
test_upgrade_2_3(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	SchemaCtx two = { 2 };

	g_assert_true(pgate_store_write(s, set_schema, &two, &error));
	pgate_store_free(s);
	s = upgraded(f, 2);
	assert_rethread_needed(s);
	pgate_store_free(s);
}

/* A schema 3 store loses name_index (schema 4 keeps the name keys in
 * name_keys, one entry a series) and asks for a rethread to fill it. */
static void
test_upgrade_3_4(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	SchemaCtx three = { 3 };
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { 1, (void *)"k" }, v = { 1, (void *)"v" };

	g_assert_true(pgate_store_write(s, set_schema, &three, &error));
	pgate_store_free(s);
	/* what schema 3 had beside the rest: name_index, not empty */
	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 4), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "name_index",
				     MDB_CREATE | MDB_DUPSORT, &dbi), ==, 0);
	g_assert_cmpint(mdb_put(txn, dbi, &k, &v, 0), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);

	s = upgraded(f, 3);
	g_assert_cmpuint(pgate_store_schema_version(s), ==,
			 PGATE_STORE_SCHEMA_VERSION);
	assert_rethread_needed(s);
	pgate_store_free(s);

	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 4), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS | MDB_RDONLY, 0600),
			==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "name_index", 0, &dbi), ==,
			MDB_NOTFOUND);
	g_assert_cmpint(mdb_dbi_open(txn, "name_keys", 0, &dbi), ==, 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* ---- indexes: lookups without copies, the transaction's cursors ---- */

static gboolean
index_fill(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	static const struct {
		const char *sender;
		gint64 date;
		const char *id;
	} names[] = {
		{ "a@x", 30, "sC" },
		{ "a@x", 10, "sA" },
		{ "a@x", 20, "sB" },
		{ "a@x", -5, "sN" },
		{ "a@x", 20, "sD" },      /* deleted below */
		{ "a@xy", 20, "sZ" },     /* a sender the first is a prefix of */
		{ "a@w", 20, "sY" },
	};
	g_autofree char *longsender = g_strnfill(600, 'q');

	for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
		if (!pgate_store_name_put(txn, names[i].sender, names[i].date,
					  names[i].id,
					  (const guint8 *)names[i].id, 2,
					  error))
			return FALSE;
	if (!pgate_store_name_delete(txn, "a@x", 20, "sD", error) ||
	    /* not there: not an error */
	    !pgate_store_name_delete(txn, "a@x", 21, "sD", error) ||
	    !pgate_store_name_put(txn, longsender, 7, "sL",
				  (const guint8 *)"L", 1, error))
		return FALSE;
	return pgate_store_index_add(txn, PGATE_STORE_INDEX_CHANGE, "I1",
				     "s2", 2, error) &&
	       pgate_store_index_add(txn, PGATE_STORE_INDEX_CHANGE, "I1",
				     "s1", 2, error) &&
	       pgate_store_index_add(txn, PGATE_STORE_INDEX_CHANGE, "I1",
				     "s3", 2, error) &&
	       pgate_store_index_add(txn, PGATE_STORE_INDEX_PATCHID, "P",
				     "s9", 2, error);
}

typedef struct {
	PgateStoreTxn *txn;
	GString *seen;
	guint fail_at;     /* 0: never */
} Walk;

/* Notes each value; reads another index meanwhile (allowed); fails at
 * the value fail_at. */
static gboolean
walk_fn(const void *val, gsize len, gpointer data, GError **error)
{
	Walk *w = data;
	g_autoptr(GPtrArray) other = pgate_store_index_lookup(
		w->txn, PGATE_STORE_INDEX_PATCHID, "P", error);

	if (other == NULL)
		return FALSE;
	g_assert_cmpuint(other->len, ==, 1);
	g_string_append_len(w->seen, val, (gssize)len);
	g_string_append_c(w->seen, ' ');
	if (w->fail_at != 0 && --w->fail_at == 0) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "stop here");
		return FALSE;
	}
	return TRUE;
}

/* Notes "DATE ID=VALUE " of each name_keys entry. */
static gboolean
name_walk_fn(gint64 date, const char *id, gsize idlen, const guint8 *val,
	     gsize len, gpointer data, GError **error)
{
	g_string_append_printf(data, "%" G_GINT64_FORMAT " %.*s=%.*s ", date,
			       (int)idlen, id, (int)len, (const char *)val);
	return TRUE;
}

/* The entries of @sender dated @from..@to are @expect (name_walk_fn). */
static void
assert_name_walk(PgateStoreTxn *txn, const char *sender, gint64 from,
		 gint64 to, const char *expect)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) seen = g_string_new(NULL);

	g_assert_true(pgate_store_name_range(txn, sender, from, to,
					     name_walk_fn, seen, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(seen->str, ==, expect);
}

static gboolean
name_walk_fail(gint64 date, const char *id, gsize idlen, const guint8 *val,
	       gsize len, gpointer data, GError **error)
{
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID, "stop");
	return FALSE;
}

static gboolean
note_txn_id(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	*(guint64 *)payload = pgate_store_txn_id(txn);
	return pgate_store_meta_put(txn, "test", "1", 1, error);
}

/* Senders of any length the parser lets through (addresses up to 512
 * bytes) key author_index and name_keys: up to 400 bytes as they are,
 * longer ones hashed.  A 401-480 byte From address once overflowed the
 * author key's buffer (ASan: stack-buffer-overflow in author_key). */
static const gsize sender_lens[] = { 1, 399, 400, 401, 450, 480, 481, 512 };

static char *
long_sender(gsize len, char last)
{
	char *s = g_strnfill(len, 'a');

	s[len - 1] = last;
	return s;
}

static gboolean
long_senders_fill(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	for (gsize i = 0; i < G_N_ELEMENTS(sender_lens); i++)
		for (char last = 'x'; last <= 'y'; last++) {
			g_autofree char *s = long_sender(sender_lens[i], last);
			guint64 num = 100 * i + (guint64)(last - 'x') + 1;
			char id[16];

			g_snprintf(id, sizeof id, "s%" G_GUINT64_FORMAT, num);
			if (!pgate_store_author_add(txn, s, 50, num, error) ||
			    !pgate_store_name_put(txn, s, 50, id,
						  (const guint8 *)id,
						  strlen(id), error))
				return FALSE;
		}
	return TRUE;
}

static void
test_long_senders(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;

	g_assert_true(pgate_store_write(s, long_senders_fill, NULL, &error));
	g_assert_no_error(error);
	txn = pgate_store_begin_read(s, &error);
	g_assert_no_error(error);
	for (gsize i = 0; i < G_N_ELEMENTS(sender_lens); i++)
		for (char last = 'x'; last <= 'y'; last++) {
			g_autofree char *snd = long_sender(sender_lens[i], last);
			guint64 num = 100 * i + (guint64)(last - 'x') + 1;
			g_autofree char *want = g_strdup_printf(
				"50 s%" G_GUINT64_FORMAT "=s%" G_GUINT64_FORMAT
				" ", num, num);
			g_autoptr(GArray) nums = pgate_store_author_range(
				txn, snd, 0, 100, &error);

			/* each sender its own entries: two that differ in
			 * their last byte only are kept apart */
			g_assert_no_error(error);
			g_assert_cmpuint(nums->len, ==, 1);
			g_assert_cmpuint(g_array_index(nums, guint64, 0), ==, num);
			assert_name_walk(txn, snd, 0, 100, want);
		}
}

static void
test_index_walk(Fixture *f, gconstpointer data)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GString) seen = g_string_new(NULL);
	Walk w = { NULL, seen, 0 };
	guint64 id1, id2;
	g_autofree char *longsender = g_strnfill(600, 'q');

	g_assert_true(pgate_store_write(s, index_fill, NULL, &error));
	g_assert_no_error(error);
	txn = pgate_store_begin_read(s, &error);
	g_assert_no_error(error);
	w.txn = txn;

	/* by date within the bounds, inclusive, only the sender itself */
	assert_name_walk(txn, "a@x", 10, 20, "10 sA=sA 20 sB=sB ");
	assert_name_walk(txn, "a@x", -100, 100,
			 "-5 sN=sN 10 sA=sA 20 sB=sB 30 sC=sC ");
	assert_name_walk(txn, "a@xy", G_MININT64, G_MAXINT64, "20 sZ=sZ ");
	assert_name_walk(txn, longsender, 0, 10, "7 sL=L ");
	assert_name_walk(txn, "nobody@x", G_MININT64, G_MAXINT64, "");
	/* the callback's error stops the walk and comes out */
	g_assert_false(pgate_store_name_range(txn, "a@x", -100, 100,
					      name_walk_fail, seen, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	g_string_truncate(seen, 0);

	/* sorted values; the callback's error stops the walk and comes out */
	g_string_truncate(seen, 0);
	g_assert_true(pgate_store_index_foreach(txn, PGATE_STORE_INDEX_CHANGE,
						"I1", walk_fn, &w, &error));
	g_assert_cmpstr(seen->str, ==, "s1 s2 s3 ");
	g_string_truncate(seen, 0);
	w.fail_at = 2;
	g_assert_false(pgate_store_index_foreach(txn, PGATE_STORE_INDEX_CHANGE,
						 "I1", walk_fn, &w, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_cmpstr(seen->str, ==, "s1 s2 ");
	g_string_truncate(seen, 0);
	g_assert_true(pgate_store_index_foreach(txn, PGATE_STORE_INDEX_CHANGE,
						"none", walk_fn, &w, &error));
	g_assert_cmpstr(seen->str, ==, "");
	g_clear_pointer(&txn, pgate_store_txn_free);

	/* a write transaction's id is the last committed one's plus one (a
	 * read-only one's is the last committed one's) */
	txn = pgate_store_begin_read(s, &error);
	id1 = pgate_store_txn_id(txn);
	g_clear_pointer(&txn, pgate_store_txn_free);
	g_assert_true(pgate_store_write(s, note_txn_id, &id2, &error));
	g_assert_cmpuint(id2, ==, id1 + 1);
	txn = pgate_store_begin_read(s, &error);
	g_assert_cmpuint(pgate_store_txn_id(txn), ==, id2);
}

/* ---- store verify, and opening a damaged store ---- */

/* A sound store: messages 1 and 2, a series of message 1 with its
 * indexes, a stage entry. */
static gboolean
verify_fill(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	g_autoptr(PgateSeriesRec) sr = pgate_series_rec_new();
	PgateSeriesPatch *p = pgate_series_patch_new();

	sr->id = g_strdup("s000000000001");
	p->number = 1;
	p->num = 1;
	p->msgid = g_strdup("a@example.org");
	g_ptr_array_add(sr->patches, p);
	return pgate_store_series_put(txn, sr, error) &&
	       pgate_store_msg_series_put(txn, 1, sr->id, error) &&
	       pgate_store_refs_add(txn, "cover@example.org", 1, error) &&
	       pgate_store_author_add(txn, "author@example.org", 1700000000, 1,
				      error) &&
	       pgate_store_index_add(txn, PGATE_STORE_INDEX_CHANGE, "chg",
				     sr->id, strlen(sr->id), error) &&
	       pgate_store_index_add(txn, PGATE_STORE_INDEX_LINK, "l@x",
				     sr->id, strlen(sr->id), error) &&
	       pgate_store_name_put(txn, "author@example.org", 1700000000,
				    sr->id, (const guint8 *)"h", 1, error) &&
	       pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE,
				     "s000000000001/apply", "x", 1, error);
}

static void
verify_store_fill(Fixture *f)
{
	g_autoptr(PgateStore) s = open_rw(f, NULL);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "one");
	g_autoptr(PgateMessageRec) b = make_rec("b@example.org", "two");
	g_autoptr(GError) error = NULL;

	add(s, a, "raw one");
	add(s, b, "raw two");
	g_assert_true(pgate_store_write(s, verify_fill, NULL, &error));
	g_assert_no_error(error);
}

typedef struct {
	GString *problems;   /* "DATABASE|KEY|PROBLEM\n" each */
	GString *order;      /* "<DATABASE ... >" */
} VerifyLog;

static void
verify_note(const PgateStoreVerifyReport *r, gpointer data)
{
	VerifyLog *l = data;

	switch (r->event) {
	case PGATE_STORE_VERIFY_BEGIN:
		g_string_append_printf(l->order, "<%s ", r->database);
		break;
	case PGATE_STORE_VERIFY_END:
		g_string_append_printf(l->order, "%s>", r->database);
		break;
	case PGATE_STORE_VERIFY_PROBLEM:
		g_string_append_printf(l->problems, "%s|%s|%s\n", r->database,
				       r->key ? r->key : "-", r->problem);
		break;
	}
}

/* store verify of @f's store: its problems, a line each */
static char *
verify(Fixture *f, guint64 *out_problems, char **out_order)
{
	g_autoptr(GError) error = NULL;
	VerifyLog l = { g_string_new(NULL), g_string_new(NULL) };
	guint64 n = 99;

	g_assert_true(pgate_store_verify(f->dir, NULL, verify_note, &l, &n,
					 &error));
	g_assert_no_error(error);
	*out_problems = n;
	if (out_order != NULL)
		*out_order = g_string_free(g_steal_pointer(&l.order), FALSE);
	else
		g_string_free(l.order, TRUE);
	return g_string_free(l.problems, FALSE);
}

/* Puts @val under @key in database @db of @f's store, or deletes @key
 * (@val NULL), with LMDB itself, the store closed. */
static void
raw_put(Fixture *f, const char *db, const void *key, gsize klen,
	const void *val, gsize vlen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };

	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, db, 0, &dbi), ==, 0);
	if (val != NULL)
		g_assert_cmpint(mdb_put(txn, dbi, &k, &v, 0), ==, 0);
	else
		g_assert_cmpint(mdb_del(txn, dbi, &k, NULL), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);
}

static void
be64(guint8 b[8], guint64 v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (guint8)v;
}

/* A sound store is sound, every database read; each kind of damage of a
 * record or an index entry is named, by database and key. */
static void
test_verify(Fixture *f, gconstpointer data)
{
	g_autofree char *clean = NULL, *order = NULL, *got = NULL;
	guint8 k2[8], k77[8], k1[8], ghost[40] = { 0 }, n55[8], one[8];
	guint64 n;

	verify_store_fill(f);
	clean = verify(f, &n, &order);
	g_assert_cmpstr(clean, ==, "");
	g_assert_cmpuint(n, ==, 0);
	g_assert_cmpstr(order, ==,
			"<data.mdb data.mdb><meta meta><messages messages>"
			"<raw raw><msgid_index msgid_index>"
			"<refs_index refs_index><author_index author_index>"
			"<series series><msg_series msg_series>"
			"<change_index change_index>"
			"<patchid_index patchid_index><name_keys name_keys>"
			"<link_index link_index><stage stage><outbox outbox>");

	be64(k1, 1);
	be64(k2, 2);
	be64(k77, 77);
	be64(ghost, 99);
	be64(n55, 55);
	be64(one, 1);
	raw_put(f, "messages", k2, 8, "garbage", 7);
	raw_put(f, "msgid_index", "ghost@example.org", 17, ghost, 40);
	raw_put(f, "raw", k77, 8, "x", 1);
	raw_put(f, "series", "s000000000002", 13, "garbage", 7);
	raw_put(f, "msg_series", k1, 8, "s9", 2);
	raw_put(f, "refs_index", "cover@example.org", 17, n55, 8);
	raw_put(f, "meta", "next_msgnum", 11, one, 8);
	raw_put(f, "meta", "threading_rules", 15, "\0\0\2", 3);
	got = verify(f, &n, NULL);
	g_assert_nonnull(strstr(got, "messages|2|does not decode: message "
				"record has an unknown format\n"));
	g_assert_nonnull(strstr(got, "msgid_index|ghost@example.org|names "
				"message 99, which is not stored\n"));
	g_assert_nonnull(strstr(got, "raw|77|no message record has this raw "
				"message\n"));
	g_assert_nonnull(strstr(got, "series|s000000000002|does not decode: "));
	g_assert_nonnull(strstr(got, "msg_series|1|names series s9, which is "
				"not stored\n"));
	g_assert_nonnull(strstr(got, "refs_index|cover@example.org|names "
				"message 55, which is not stored\n"));
	g_assert_nonnull(strstr(got, "meta|next_msgnum|1 is not above the "
				"highest message number, 2\n"));
	g_assert_nonnull(strstr(got, "meta|threading_rules|value of 3 bytes, "
				"not 4\n"));
	/* the series that does not decode has no series_dates entry */
	g_assert_nonnull(strstr(got, "series_dates|-|holds 1 entries for 2 "
				"series\n"));
	g_assert_cmpuint(n, ==, 9);
	g_clear_pointer(&got, g_free);

	/* derived state that waits for a rethread is not damage */
	raw_put(f, "meta", "rethread_needed", 15, "1", 1);
	got = verify(f, &n, NULL);
	g_assert_null(strstr(got, "refs_index|"));
	g_assert_null(strstr(got, "msg_series|"));
	g_assert_nonnull(strstr(got, "messages|2|does not decode"));
	g_assert_cmpuint(n, ==, 6);
}

/* data.mdb's bytes, to damage them */
static char *
data_path(Fixture *f)
{
	return g_build_filename(f->dir, "data.mdb", NULL);
}

static void
data_write(Fixture *f, gsize off, const void *bytes, gsize len)
{
	g_autofree char *path = data_path(f);
	int fd = open(path, O_WRONLY);

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(pwrite(fd, bytes, len, (off_t)off), ==, (gssize)len);
	close(fd);
}

static guint64
data_u64(Fixture *f, gsize off)
{
	g_autofree char *path = data_path(f);
	g_autofree char *d = NULL;
	gsize len;
	guint64 v;

	g_assert_true(g_file_get_contents(path, &d, &len, NULL));
	g_assert_cmpuint(len, >=, off + 8);
	memcpy(&v, d + off, 8);
	return v;
}

static void
assert_open_damaged(Fixture *f, PgateStoreFlags flags, const char *what)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStore) s = pgate_store_open(f->dir, flags, NULL, &error);

	g_assert_null(s);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_assert_nonnull(strstr(error->message, "is damaged"));
	g_assert_nonnull(strstr(error->message, what));
	g_assert_nonnull(strstr(error->message, "patchgate store verify"));
}

/* The meta pages: damage in the one LMDB reads refuses the store
 * (LMDB would read past the file), in the other it is told by verify
 * only; a file cut short is refused. */
static void
test_verify_header(Fixture *f, gconstpointer data)
{
	g_autofree char *got = NULL, *order = NULL;
	long ps = sysconf(_SC_PAGESIZE);
	guint64 n, huge = G_GUINT64_CONSTANT(1) << 40;
	int use, other;
	g_autoptr(GError) error = NULL;

	verify_store_fill(f);
	/* the meta page with the higher transaction id is the one read */
	use = data_u64(f, 144) < data_u64(f, ps + 144) ? 1 : 0;
	other = 1 - use;

	/* the other's last page number: LMDB does not read it */
	data_write(f, other * ps + 136, &huge, 8);
	{
		g_autoptr(PgateStore) s = pgate_store_open(f->dir,
							   PGATE_STORE_RDONLY,
							   NULL, &error);

		g_assert_no_error(error);
		g_assert_nonnull(s);
	}
	got = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 1);
	g_assert_nonnull(strstr(got, "is past the end of the file"));
	g_clear_pointer(&got, g_free);

	/* the one read: refused, for reading and for writing */
	data_write(f, use * ps + 136, &huge, 8);
	assert_open_damaged(f, PGATE_STORE_RDONLY, "past the end of the file");
	assert_open_damaged(f, PGATE_STORE_RW | PGATE_STORE_CREATE,
			    "past the end of the file");
	got = verify(f, &n, &order);
	g_assert_cmpuint(n, ==, 2);
	g_assert_true(g_str_has_prefix(got, "data.mdb|-|meta page "));
	/* nothing else is read */
	g_assert_cmpstr(order, ==, "<data.mdb data.mdb>");
	g_clear_pointer(&got, g_free);

	/* a bad magic number */
	data_write(f, 16, "\0\0\0\0", 4);
	assert_open_damaged(f, PGATE_STORE_RDONLY, "bad magic number");
	got = verify(f, &n, NULL);
	g_assert_true(g_str_has_prefix(got, "data.mdb|-|meta page 0: bad magic "
				       "number 0x00000000\n"));
}

static void
test_verify_truncated(Fixture *f, gconstpointer data)
{
	g_autofree char *path = data_path(f), *got = NULL;
	g_autoptr(GError) error = NULL;
	struct stat st;
	guint64 n;

	verify_store_fill(f);
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(truncate(path, st.st_size - 2 * sysconf(_SC_PAGESIZE)),
			==, 0);
	assert_open_damaged(f, PGATE_STORE_RDONLY, "past the end of the file");
	got = verify(f, &n, NULL);
	g_assert_cmpuint(n, >=, 1);
	g_assert_nonnull(strstr(got, "past the end of the file"));
	g_clear_pointer(&got, g_free);

	/* no store at all is an error, not damage */
	g_assert_cmpint(unlink(path), ==, 0);
	{
		g_autoptr(GString) problems = g_string_new(NULL);
		g_autoptr(GString) order = g_string_new(NULL);
		VerifyLog l = { problems, order };

		g_assert_false(pgate_store_verify(f->dir, NULL, verify_note, &l,
						  &n, &error));
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
	}
}

/* A database of this schema missing, or the schema mark, is damage:
 * opening for writing does not create them afresh. */
static void
test_open_damaged(Fixture *f, gconstpointer data)
{
	g_autofree char *got = NULL;
	guint64 n;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;

	verify_store_fill(f);
	raw_put(f, "meta", "schema_version", 14, NULL, 0);
	assert_open_damaged(f, PGATE_STORE_RDONLY, "schema version is missing");
	assert_open_damaged(f, PGATE_STORE_RW | PGATE_STORE_CREATE,
			    "schema version is missing");
	got = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(g_str_has_prefix(got, "data.mdb|-|store "));
	g_clear_pointer(&got, g_free);

	/* the mark back; link_index dropped */
	{
		guint8 b[4] = { 0, 0, 0, PGATE_STORE_SCHEMA_VERSION };

		raw_put(f, "meta", "schema_version", 14, b, 4);
	}
	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "link_index", 0, &dbi), ==, 0);
	g_assert_cmpint(mdb_drop(txn, dbi, 1), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);
	assert_open_damaged(f, PGATE_STORE_RDONLY,
			    "its database link_index is missing");
	assert_open_damaged(f, PGATE_STORE_RW | PGATE_STORE_CREATE,
			    "its database link_index is missing");
	assert_open_damaged(f, PGATE_STORE_RDONLY,
			    "its database link_index is missing");
}

/* ---- series_dates: the series in listing order (issue #34) ---- */

typedef struct {
	const char *id;
	gint64 date;
	gboolean superseded;
	gboolean del;
} DatePut;

static gboolean
dates_write(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const DatePut *p = payload;
	g_autoptr(PgateSeriesRec) r = pgate_series_rec_new();

	if (p->del)
		return pgate_store_series_delete(txn, p->id, error);
	g_free(r->id);
	r->id = g_strdup(p->id);
	g_free(r->project);
	r->project = g_strdup("list.example.org");
	g_free(r->name);
	r->name = g_strdup("foo: bar");
	g_free(r->submitter_email);
	r->submitter_email = g_strdup("a@example.org");
	r->date = p->date;
	if (p->superseded)
		r->superseded_by = g_strdup("s0000000000ff");
	return pgate_store_series_put(txn, r, error);
}

static void
dates_do(PgateStore *s, const char *id, gint64 date, gboolean superseded,
	 gboolean del)
{
	g_autoptr(GError) error = NULL;
	DatePut p = { id, date, superseded, del };

	g_assert_true(pgate_store_write(s, dates_write, &p, &error));
	g_assert_no_error(error);
}

static gboolean
dates_note(const PgateSeriesBrief *b, gpointer data, GError **error)
{
	g_string_append_printf(data, "%" G_GINT64_FORMAT ":%s%s%s ", b->date,
			       b->id, b->superseded ? "!" : "",
			       g_strcmp0(b->project, "list.example.org") == 0
			       ? "" : "?");
	return TRUE;
}

/* The index's walk from (@from, @id) as "DATE:ID[!] ...", or "absent" */
static char *
dates_list(PgateStore *s, gint64 from, const char *id)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
	GString *out = g_string_new(NULL);
	gboolean absent = TRUE;

	g_assert_nonnull(txn);
	g_assert_true(pgate_store_series_dates_foreach(txn, from, id,
						       dates_note, out,
						       &absent, &error));
	g_assert_no_error(error);
	if (absent)
		g_string_assign(out, "absent");
	return g_string_free(out, FALSE);
}

static gboolean
dates_clear(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	return pgate_store_derived_clear(txn, error);
}

/* Drops series_dates from @f's store, with LMDB itself: a store written
 * before the index. */
static void
dates_drop(Fixture *f)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;

	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, "series_dates", 0, &dbi), ==, 0);
	g_assert_cmpint(mdb_drop(txn, dbi, 1), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);
}

/* pgate_store_series_page() as "ID ID ... [next CURSOR]" */
static char *
dates_page(PgateStore *s, gboolean all, guint limit, const char *after)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
	PgateSeriesQuery q = { .all = all, .limit = limit, .after = after };
	g_autofree char *next = NULL;
	g_autoptr(GPtrArray) ids = NULL;
	GString *out = g_string_new(NULL);

	g_assert_nonnull(txn);
	ids = pgate_store_series_page(txn, &q, &next, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < ids->len; i++)
		g_string_append_printf(out, "%s%s", i ? " " : "",
				       (char *)ids->pdata[i]);
	if (next != NULL)
		g_string_append_printf(out, " next %s", next);
	return g_string_free(out, FALSE);
}

static void
test_series_dates(Fixture *f, gconstpointer data)
{
	PgateStore *s = open_rw(f, NULL);
	g_autofree char *got = NULL, *problems = NULL;
	guint8 key[8 + 13];
	guint64 n;

	/* made with the first series; kept in (date, id) order */
	dates_do(s, "s00000000000a", 200, FALSE, FALSE);
	dates_do(s, "s00000000000b", -100, FALSE, FALSE);
	dates_do(s, "s00000000000c", 300, TRUE, FALSE);
	dates_do(s, "s00000000000d", 200, FALSE, FALSE);
	got = dates_list(s, G_MININT64, NULL);
	g_assert_cmpstr(got, ==, "-100:s00000000000b 200:s00000000000a "
			"200:s00000000000d 300:s00000000000c! ");
	g_free(got);
	/* from a date, and from a cursor (date and id) */
	got = dates_list(s, 200, NULL);
	g_assert_cmpstr(got, ==, "200:s00000000000a 200:s00000000000d "
			"300:s00000000000c! ");
	g_free(got);
	got = dates_list(s, 200, "s00000000000b");
	g_assert_cmpstr(got, ==, "200:s00000000000d 300:s00000000000c! ");
	g_free(got);
	/* a new date moves the entry; a delete removes it */
	dates_do(s, "s00000000000a", 400, TRUE, FALSE);
	dates_do(s, "s00000000000b", 0, FALSE, TRUE);
	got = dates_list(s, G_MININT64, NULL);
	g_assert_cmpstr(got, ==, "200:s00000000000d 300:s00000000000c! "
			"400:s00000000000a! ");
	g_free(got);
	got = dates_page(s, TRUE, 1, NULL);
	g_assert_cmpstr(got, ==, "s00000000000d next 200:s00000000000d");
	g_free(got);
	got = dates_page(s, TRUE, 2, "200:s00000000000d");
	g_assert_cmpstr(got, ==, "s00000000000c s00000000000a");
	g_free(got);
	got = dates_page(s, FALSE, 1, NULL);
	g_assert_cmpstr(got, ==, "s00000000000d");
	g_free(got);
	pgate_store_free(s);

	/* verify: sound; then an entry naming no series, and one that
	 * differs from its series */
	problems = verify(f, &n, NULL);
	g_assert_cmpstr(problems, ==, "");
	g_free(problems);
	be64(key, 500 ^ G_GUINT64_CONSTANT(0x8000000000000000));
	memcpy(key + 8, "s0000000000ee", 13);
	raw_put(f, "series_dates", key, sizeof key, "\0list.example.org", 17);
	be64(key, 200 ^ G_GUINT64_CONSTANT(0x8000000000000000));
	memcpy(key + 8, "s00000000000d", 13);
	raw_put(f, "series_dates", key, sizeof key, "\1list.example.org", 17);
	problems = verify(f, &n, NULL);
	g_assert_nonnull(strstr(problems, "series_dates|500:s0000000000ee|"
				"names no series\n"));
	g_assert_nonnull(strstr(problems, "series_dates|200:s00000000000d|"
				"differs from the series"));
	g_assert_nonnull(strstr(problems, "series_dates|-|holds 4 entries "
				"for 3 series\n"));
	g_assert_cmpuint(n, ==, 3);
	g_free(problems);

	/* a store written before the index: none is made for it by a put
	 * (it would lack the older series) but by a rethread's clear */
	dates_drop(f);
	s = open_rw(f, NULL);
	dates_do(s, "s00000000000e", 50, FALSE, FALSE);
	got = dates_list(s, G_MININT64, NULL);
	g_assert_cmpstr(got, ==, "absent");
	g_free(got);
	/* ... and a listing scans: the same pages as out of the index */
	got = dates_page(s, TRUE, 2, NULL);
	g_assert_cmpstr(got, ==, "s00000000000e s00000000000d "
			"next 200:s00000000000d");
	g_free(got);
	got = dates_page(s, TRUE, 0, "200:s00000000000d");
	g_assert_cmpstr(got, ==, "s00000000000c s00000000000a");
	g_free(got);
	got = dates_page(s, FALSE, 0, NULL);
	g_assert_cmpstr(got, ==, "s00000000000e s00000000000d");
	g_free(got);
	{
		g_autoptr(GError) error = NULL;

		g_assert_true(pgate_store_write(s, dates_clear, NULL, &error));
		g_assert_no_error(error);
	}
	got = dates_list(s, G_MININT64, NULL);
	g_assert_cmpstr(got, ==, "");
	g_free(got);
	dates_do(s, "s00000000000f", 60, FALSE, FALSE);
	got = dates_list(s, G_MININT64, NULL);
	g_assert_cmpstr(got, ==, "60:s00000000000f ");
	pgate_store_free(s);
	problems = verify(f, &n, NULL);
	g_assert_cmpstr(problems, ==, "");
}

/* ---- raw mail compressed (schema 5) ---- */

/* A mail of @n bytes that compresses as mail does: repeated lines. */
static char *
mail_text(gsize n)
{
	GString *m = g_string_new("From: A <a@example.org>\nSubject: x\n\n");

	for (guint i = 0; m->len < n; i++)
		g_string_append_printf(m, "+\tline %u of a patch, %s;\n", i % 97,
				       i % 3 ? "foo(bar)" : "baz->quux");
	g_string_truncate(m, n);
	return g_string_free(m, FALSE);
}

/* The value under @key in database @db of @f's store (closed), or NULL. */
static GBytes *
raw_get(Fixture *f, const char *db, const void *key, gsize klen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { klen, (void *)key }, v;
	GBytes *out = NULL;

	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, f->dir, MDB_NOTLS | MDB_RDONLY, 0600),
			==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, db, 0, &dbi), ==, 0);
	if (mdb_get(txn, dbi, &k, &v) == 0)
		out = g_bytes_new(v.mv_data, v.mv_size);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return out;
}

static guint
schema_mark(Fixture *f)
{
	g_autoptr(GBytes) b = raw_get(f, "meta", "schema_version", 14);
	const guint8 *p;

	g_assert_nonnull(b);
	g_assert_cmpuint(g_bytes_get_size(b), ==, 4);
	p = g_bytes_get_data(b, NULL);
	return (guint)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/* Message @num's raw bytes read through the store, or NULL and *@error. */
static GBytes *
read_raw(Fixture *f, guint64 num, GError **error)
{
	g_autoptr(PgateStore) s = pgate_store_open(f->dir, PGATE_STORE_RDONLY,
						   NULL, error);
	g_autoptr(PgateStoreTxn) txn = NULL;

	g_assert_nonnull(s);
	txn = pgate_store_begin_read(s, error);
	g_assert_nonnull(txn);
	return pgate_store_message_raw(txn, num, error);
}

static PgateMessageRec *
read_rec(Fixture *f, guint64 num)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStore) s = pgate_store_open(f->dir, PGATE_STORE_RDONLY,
						   NULL, &error);
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);
	PgateMessageRec *rec = pgate_store_message_get(txn, num, &error);

	g_assert_no_error(error);
	return rec;
}

/* Mail is kept compressed, read back byte for byte, and the store marked
 * schema 5; a message too small to gain is kept as it is. */
static void
test_raw_zstd(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	g_autofree char *text = mail_text(20000);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "a");
	g_autoptr(PgateMessageRec) b = make_rec("b@example.org", "b");
	g_autoptr(PgateMessageRec) got = NULL;
	g_autoptr(GBytes) kept = NULL, raw = NULL;
	guint8 k[8];
	guint64 n;
	g_autofree char *problems = NULL;

	g_assert_cmpint(add(s, a, text), ==, PGATE_STORE_ADDED);
	g_assert_cmpint(add(s, b, "tiny"), ==, PGATE_STORE_ADDED);
	pgate_store_free(s);
	g_assert_cmpuint(schema_mark(f), ==, PGATE_STORE_SCHEMA_VERSION);

	got = read_rec(f, 1);
	g_assert_cmpint(got->raw_codec, ==, PGATE_RAW_CODEC_ZSTD);
	g_assert_cmpuint(got->raw_size, ==, 20000);
	be64(k, 1);
	kept = raw_get(f, "raw", k, 8);
	g_assert_cmpuint(g_bytes_get_size(kept), <, 20000 / 4);
	raw = read_raw(f, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw),
			text, 20000);
	g_clear_pointer(&got, pgate_message_rec_free);
	g_clear_pointer(&raw, g_bytes_unref);

	got = read_rec(f, 2);
	g_assert_cmpint(got->raw_codec, ==, PGATE_RAW_CODEC_NONE);
	raw = read_raw(f, 2, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw),
			"tiny", 4);

	problems = verify(f, &n, NULL);
	g_assert_cmpstr(problems, ==, "");
	g_assert_cmpuint(n, ==, 0);
}

/* A record written the old way (schema 4: no raw_codec, the bytes as
 * they are) reads in a schema 4 store, opened without an upgrade, and
 * still after a compressed message made it schema 5. */
static void
test_raw_old_format(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	g_autofree char *text = mail_text(5000);
	g_autoptr(PgateMessageRec) b = make_rec("b@example.org", "b");
	SchemaCtx four = { 4 };
	guint8 k[8], rec[64], *p = rec;
	g_autoptr(GBytes) raw = NULL;
	guint64 n;
	g_autofree char *problems = NULL;
	static const char id[] = "old@example.org";

	g_assert_true(pgate_store_write(s, set_schema, &four, &error));
	pgate_store_free(s);
	/* 'M' 1, msgid, raw_location 0, raw_size: as schema 4 wrote it */
	*p++ = 'M';
	*p++ = 1;
	*p++ = 1; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = sizeof id - 1;
	memcpy(p, id, sizeof id - 1);
	p += sizeof id - 1;
	*p++ = 34; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 1; *p++ = 0;
	*p++ = 36; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 8;
	be64(p, 5000);
	p += 8;
	be64(k, 1);
	raw_put(f, "messages", k, 8, rec, (gsize)(p - rec));
	raw_put(f, "raw", k, 8, text, 5000);
	be64(k, 2);
	raw_put(f, "meta", "next_msgnum", 11, k, 8);

	/* schema 4 opens as it is */
	raw = read_raw(f, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw),
			text, 5000);
	g_clear_pointer(&raw, g_bytes_unref);
	g_assert_cmpuint(schema_mark(f), ==, 4);

	s = open_rw(f, NULL);
	g_assert_cmpint(add(s, b, text), ==, PGATE_STORE_ADDED);
	g_assert_cmpuint(b->num, ==, 2);
	pgate_store_free(s);
	g_assert_cmpuint(schema_mark(f), ==, PGATE_STORE_SCHEMA_VERSION);
	for (guint64 i = 1; i <= 2; i++) {
		raw = read_raw(f, i, &error);
		g_assert_no_error(error);
		g_assert_cmpmem(g_bytes_get_data(raw, NULL),
				g_bytes_get_size(raw), text, 5000);
		g_clear_pointer(&raw, g_bytes_unref);
	}
	/* (the hand-made record is in no msgid_index: that is all) */
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 1);
	g_assert_nonnull(strstr(problems, "msgid_index"));
}

/* A compressed raw message damaged: a flipped byte (the frame checksum,
 * or the frame, fails) is CORRUPT for a reader and a problem for verify. */
static void
test_raw_corrupt(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	g_autofree char *text = mail_text(20000);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "a");
	g_autoptr(GBytes) kept = NULL, raw = NULL;
	g_autofree guint8 *bad = NULL;
	gsize len;
	guint8 k[8];
	guint64 n;
	g_autofree char *problems = NULL;

	g_assert_cmpint(add(s, a, text), ==, PGATE_STORE_ADDED);
	pgate_store_free(s);
	be64(k, 1);
	kept = raw_get(f, "raw", k, 8);
	bad = g_bytes_unref_to_data(g_steal_pointer(&kept), &len);
	bad[len / 2] ^= 0x20;
	raw_put(f, "raw", k, 8, bad, len);

	raw = read_raw(f, 1, &error);
	g_assert_null(raw);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_assert_nonnull(strstr(error->message, "message 1"));
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 1);
	g_assert_nonnull(strstr(problems, "does not decompress"));
	g_free(g_steal_pointer(&problems));

	/* cut short: the frame is incomplete */
	raw_put(f, "raw", k, 8, bad, len - 5);
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 1);
	g_assert_nonnull(strstr(problems, "message"));
}

/* A frame that declares more than a message may be, or than its record
 * says, is refused before anything of that size is allocated: a frame of
 * one 128 KiB RLE block that declares 1 TiB. */
static void
test_raw_bomb(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	g_autofree char *text = mail_text(20000);
	g_autoptr(PgateMessageRec) a = make_rec("a@example.org", "a");
	g_autoptr(PgateMessageRec) b = make_rec("b@example.org", "b");
	g_autoptr(GBytes) raw = NULL;
	guint8 k[8], frame[32], *p = frame;
	guint64 big = (guint64)1 << 40, n;
	guint32 bh = 1 | 1 << 1 | (128 * 1024) << 3; /* last, RLE, size */
	g_autofree char *problems = NULL;

	g_assert_cmpint(add(s, a, text), ==, PGATE_STORE_ADDED);
	g_assert_cmpint(add(s, b, text), ==, PGATE_STORE_ADDED);
	pgate_store_free(s);

	*p++ = 0x28; *p++ = 0xb5; *p++ = 0x2f; *p++ = 0xfd;
	*p++ = 0xe0;	/* 8-byte content size, single segment */
	for (int i = 0; i < 8; i++)
		*p++ = (guint8)(big >> (8 * i));
	*p++ = (guint8)bh; *p++ = (guint8)(bh >> 8); *p++ = (guint8)(bh >> 16);
	*p++ = 'x';
	g_assert_cmpuint(ZSTD_getFrameContentSize(frame, (gsize)(p - frame)),
			 ==, big);
	be64(k, 1);
	raw_put(f, "raw", k, 8, frame, (gsize)(p - frame));
	raw = read_raw(f, 1, &error);
	g_assert_null(raw);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_assert_nonnull(strstr(error->message, "over the limit"));
	g_clear_error(&error);

	/* a frame of the right kind whose size is not the record's */
	{
		g_autofree char *other = mail_text(30000);
		gsize cap = ZSTD_compressBound(30000);
		g_autofree guint8 *z = g_malloc(cap);
		gsize zn = ZSTD_compress(z, cap, other, 30000, 3);

		g_assert_false(ZSTD_isError(zn));
		be64(k, 2);
		raw_put(f, "raw", k, 8, z, zn);
	}
	raw = read_raw(f, 2, &error);
	g_assert_null(raw);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_assert_nonnull(strstr(error->message, "declares 30000 bytes"));

	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 2);
	g_assert_nonnull(strstr(problems, "over the limit"));
}

/* ---- zstd dictionaries (schema 6) ---- */

/* Mail @i of a list: headers and a patch that differ from one to the
 * next, of 3 to 12 KB; @flavour changes the words (another list). */
static char *
list_mail(guint i, const char *flavour)
{
	GString *m = g_string_new(NULL);
	guint lines = 60 + (i * 37) % 240;

	g_string_append_printf(m, "From: Dev %u <dev%u@example.org>\n"
			       "To: %s-list@example.org\nSubject: [PATCH v%u "
			       "%u/9] %s: fix the %u path\nMessage-ID: <%u.%s@"
			       "example.org>\n\n", i % 13, i % 13, flavour,
			       1 + i % 3, 1 + i % 9, flavour, i, i, flavour);
	for (guint l = 0; l < lines; l++)
		g_string_append_printf(m, "%c\t%s_%s(ctx, %u); /* %s */\n",
				       l % 5 ? '+' : '-', flavour,
				       l % 2 ? "read" : "write", (i + l) % 31,
				       l % 3 ? "the device" : flavour);
	g_string_append(m, "-- \n2.43.0\n");
	return g_string_free(m, FALSE);
}

typedef struct {
	GPtrArray *texts;  /* every mail added, by message number - 1 */
} Mails;

/* Adds @count mails of @flavour to @s, remembered in @m. */
static void
add_mails(PgateStore *s, Mails *m, guint count, const char *flavour)
{
	for (guint i = 0; i < count; i++) {
		guint n = m->texts->len;
		g_autofree char *id = g_strdup_printf("%u.%s@example.org", n,
						      flavour);
		char *text = list_mail(n, flavour);
		g_autoptr(PgateMessageRec) r = make_rec(id, text);

		g_assert_cmpint(add(s, r, text), ==, PGATE_STORE_ADDED);
		g_assert_cmpuint(r->num, ==, n + 1);
		g_ptr_array_add(m->texts, text);
	}
}

/* Every mail of @m reads back byte for byte, in a process that has
 * digested no dictionary yet (a fresh store handle). */
static void
assert_mails(Fixture *f, const Mails *m)
{
	for (guint i = 0; i < m->texts->len; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) raw = read_raw(f, i + 1, &error);
		const char *text = m->texts->pdata[i];

		g_assert_no_error(error);
		g_assert_cmpmem(g_bytes_get_data(raw, NULL),
				g_bytes_get_size(raw), text, strlen(text));
	}
}

/* The dictionary ID message @num's frame names (0: none). */
static guint32
frame_dict(Fixture *f, guint64 num)
{
	guint8 k[8];
	g_autoptr(GBytes) kept = NULL;

	be64(k, num);
	kept = raw_get(f, "raw", k, 8);
	g_assert_nonnull(kept);
	return ZSTD_getDictID_fromFrame(g_bytes_get_data(kept, NULL),
					g_bytes_get_size(kept));
}

static void
zdict_current(PgateStore *s, PgateStoreZdict *cur, guint *count)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, &error);

	g_assert_no_error(error);
	g_assert_true(pgate_store_zdict_list(txn, cur, count, &error));
	g_assert_no_error(error);
}

/* A dictionary trained on the store's mail: messages written after it
 * name it in their frame, are smaller, read back byte for byte (and so do
 * those written before); a second one trained later becomes the
 * writers', and the messages of the first still read; verify is clean.
 * The store is marked schema 6 by the dictionary's write. */
static void
test_zdict_roundtrip(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	Mails m = { g_ptr_array_new_with_free_func(g_free) };
	PgateStoreZdictTrained d1, d2;
	PgateStoreZdict cur;
	SchemaCtx five = { 5 };
	guint count;
	guint64 n;
	g_autofree char *problems = NULL;

	/* too few messages: no dictionary */
	add_mails(s, &m, 8, "net");
	g_assert_false(pgate_store_zdict_train(s, 0, &d1, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	add_mails(s, &m, 112, "net");
	g_assert_true(pgate_store_write(s, set_schema, &five, &error));
	g_assert_no_error(error);
	pgate_store_free(s);
	g_assert_cmpuint(schema_mark(f), ==, 5);

	/* a store of schema 5 opens as it is, and is marked 6 by the
	 * dictionary's write */
	s = open_rw(f, NULL);
	g_assert_true(pgate_store_zdict_train(s, 0, &d1, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(d1.id, >=, 32768);
	g_assert_cmpuint(d1.samples, ==, 120);
	g_assert_cmpuint(d1.size, >, 0);
	g_assert_cmpuint(d1.size, <=, PGATE_STORE_ZDICT_SIZE);
	g_assert_cmpuint(d1.compressed, <, d1.compressed_plain);
	g_assert_cmpuint(schema_mark(f), ==, PGATE_STORE_SCHEMA_VERSION);
	zdict_current(s, &cur, &count);
	g_assert_cmpuint(cur.id, ==, d1.id);
	g_assert_cmpuint(cur.size, ==, d1.size);
	g_assert_cmpuint(count, ==, 1);
	add_mails(s, &m, 20, "net");
	g_assert_cmpuint(frame_dict(f, 1), ==, 0);
	g_assert_cmpuint(frame_dict(f, 121), ==, d1.id);

	/* another list's mail, another dictionary */
	add_mails(s, &m, 300, "usb");
	g_assert_true(pgate_store_zdict_train(s, 200, &d2, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(d2.id, !=, d1.id);
	add_mails(s, &m, 10, "usb");
	g_assert_cmpuint(frame_dict(f, 441), ==, d2.id);
	g_assert_cmpuint(frame_dict(f, 140), ==, d1.id);
	zdict_current(s, &cur, &count);
	g_assert_cmpuint(cur.id, ==, d2.id);
	g_assert_cmpuint(count, ==, 2);
	pgate_store_free(s);

	assert_mails(f, &m);
	problems = verify(f, &n, NULL);
	g_assert_cmpstr(problems, ==, "");
	g_assert_cmpuint(n, ==, 0);
	g_ptr_array_unref(m.texts);
}

/* A frame that names a dictionary the store does not hold is CORRUPT for
 * a reader (which says which) and a problem for verify; so is a
 * dictionary kept under another's key. */
static void
test_zdict_missing(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	Mails m = { g_ptr_array_new_with_free_func(g_free) };
	PgateStoreZdictTrained d;
	g_autoptr(GBytes) raw = NULL, dict = NULL;
	char key[32];
	guint64 n;
	g_autofree char *problems = NULL;

	add_mails(s, &m, 100, "net");
	g_assert_true(pgate_store_zdict_train(s, 0, &d, &error));
	g_assert_no_error(error);
	add_mails(s, &m, 5, "net");
	pgate_store_free(s);
	g_assert_cmpuint(frame_dict(f, 101), ==, d.id);

	g_snprintf(key, sizeof key, "zdict/%08x", d.id);
	dict = raw_get(f, "meta", key, strlen(key));
	g_assert_nonnull(dict);
	g_assert_cmpuint(g_bytes_get_size(dict), ==, d.size);
	raw_put(f, "meta", key, strlen(key), NULL, 0);

	raw = read_raw(f, 101, &error);
	g_assert_null(raw);
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
	g_assert_nonnull(strstr(error->message, "message 101"));
	g_assert_nonnull(strstr(error->message, "needs zstd dictionary"));
	g_clear_error(&error);
	/* those written before it still read */
	raw = read_raw(f, 1, &error);
	g_assert_no_error(error);
	g_clear_pointer(&raw, g_bytes_unref);

	/* five messages, and zdict_current naming what is gone */
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 6);
	g_assert_nonnull(strstr(problems, "needs zstd dictionary"));
	g_assert_nonnull(strstr(problems, "zdict_current"));
	g_clear_pointer(&problems, g_free);

	/* a dictionary under another ID's key */
	g_snprintf(key, sizeof key, "zdict/%08x", d.id + 1);
	raw_put(f, "meta", key, strlen(key), g_bytes_get_data(dict, NULL),
		g_bytes_get_size(dict));
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 7);
	g_assert_nonnull(strstr(problems, "not the one its key names"));
	g_ptr_array_unref(m.texts);
}

/* The bounds hold for a frame that names a dictionary: a frame that
 * declares 1 TiB (and names the store's dictionary) is refused before
 * anything is allocated or any dictionary loaded; one that names an
 * unknown dictionary, with the record's size, is CORRUPT. */
static void
test_zdict_bomb(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	Mails m = { g_ptr_array_new_with_free_func(g_free) };
	PgateStoreZdictTrained d;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(PgateMessageRec) rec = NULL;
	guint8 k[8], frame[40], *p;
	guint64 big = (guint64)1 << 40, n;
	guint32 bh = 1 | 1 << 1 | (128 * 1024) << 3; /* last, RLE, size */
	g_autofree char *problems = NULL;

	add_mails(s, &m, 100, "net");
	g_assert_true(pgate_store_zdict_train(s, 0, &d, &error));
	g_assert_no_error(error);
	add_mails(s, &m, 2, "net");
	pgate_store_free(s);

	for (int which = 0; which < 2; which++) {
		guint64 size = which == 0 ? big : 0;
		guint32 id = which == 0 ? d.id : d.id ^ 0x5a5a;

		g_clear_pointer(&rec, pgate_message_rec_free);
		rec = read_rec(f, 101 + which);
		if (which == 1)
			size = rec->raw_size;
		p = frame;
		*p++ = 0x28; *p++ = 0xb5; *p++ = 0x2f; *p++ = 0xfd;
		/* 8-byte content size, single segment, 4-byte dictionary ID */
		*p++ = 0xe3;
		for (int i = 0; i < 4; i++)
			*p++ = (guint8)(id >> (8 * i));
		for (int i = 0; i < 8; i++)
			*p++ = (guint8)(size >> (8 * i));
		*p++ = (guint8)bh; *p++ = (guint8)(bh >> 8);
		*p++ = (guint8)(bh >> 16);
		*p++ = 'x';
		g_assert_cmpuint(ZSTD_getFrameContentSize(frame,
							  (gsize)(p - frame)),
				 ==, size);
		g_assert_cmpuint(ZSTD_getDictID_fromFrame(frame,
							  (gsize)(p - frame)),
				 ==, id);
		be64(k, 101 + which);
		raw_put(f, "raw", k, 8, frame, (gsize)(p - frame));
		raw = read_raw(f, 101 + which, &error);
		g_assert_null(raw);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT);
		g_assert_nonnull(strstr(error->message, which == 0
					? "over the limit"
					: "needs zstd dictionary"));
		g_clear_error(&error);
	}
	problems = verify(f, &n, NULL);
	g_assert_cmpuint(n, ==, 2);
	g_assert_nonnull(strstr(problems, "over the limit"));
	g_assert_nonnull(strstr(problems, "needs zstd dictionary"));
	g_ptr_array_unref(m.texts);
}

/* Bulk ingest's automatic training: nothing below the threshold, one
 * dictionary once it is reached, then nothing more (once a process, and
 * never over an existing dictionary); 0 turns it off. */
static void
test_zdict_auto(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	PgateStore *s;
	Mails m = { g_ptr_array_new_with_free_func(g_free) };
	PgateStoreZdictTrained d;
	PgateStoreZdict cur;
	gboolean trained = TRUE;
	guint count;

	g_assert_cmpuint(o.zdict_train_after, ==, PGATE_STORE_ZDICT_TRAIN_AFTER);
	o.zdict_train_after = 0;
	s = open_rw(f, &o);
	add_mails(s, &m, 60, "net");
	g_assert_true(pgate_store_zdict_auto(s, &trained, &d, &error));
	g_assert_false(trained);
	pgate_store_free(s);

	o.zdict_train_after = 80;
	s = open_rw(f, &o);
	g_assert_true(pgate_store_zdict_auto(s, &trained, &d, &error));
	g_assert_false(trained);
	add_mails(s, &m, 20, "net");
	g_assert_true(pgate_store_zdict_auto(s, &trained, &d, &error));
	g_assert_no_error(error);
	g_assert_true(trained);
	g_assert_cmpuint(d.samples, ==, 80);
	g_assert_true(pgate_store_zdict_auto(s, &trained, &d, &error));
	g_assert_false(trained);
	pgate_store_free(s);
	s = open_rw(f, &o);
	add_mails(s, &m, 100, "usb");
	g_assert_true(pgate_store_zdict_auto(s, &trained, &d, &error));
	g_assert_false(trained);
	zdict_current(s, &cur, &count);
	g_assert_cmpuint(count, ==, 1);
	pgate_store_free(s);
	assert_mails(f, &m);
	g_ptr_array_unref(m.texts);
}

/* store recompress: in batches, the messages written without the current
 * dictionary (before any, with an older one, or not compressed at all:
 * schema 4's) are written again with it, their records saying so; they
 * read back byte for byte, verify is clean, and a second run has nothing
 * left to do. */
static void
test_zdict_recompress(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStore *s = open_rw(f, NULL);
	Mails m = { g_ptr_array_new_with_free_func(g_free) };
	PgateStoreZdictTrained d1, d2;
	PgateStoreRecompressed r = { 0 };
	guint64 rewritten = 0, n;
	guint batches = 0;
	g_autoptr(PgateMessageRec) rec = NULL;
	guint8 k[8];
	g_autofree char *problems = NULL;

	/* message 1 as schema 4 kept it: the bytes as they are, its
	 * record without raw_codec */
	pgate_store_free(s);
	g_ptr_array_add(m.texts, list_mail(0, "old"));
	{
		static const char id[] = "0.old@example.org";
		const char *text = m.texts->pdata[0];
		guint8 buf[128], *p = buf, ival[40];
		gsize tl = strlen(text);

		*p++ = 'M';
		*p++ = 1;
		*p++ = 1; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = sizeof id - 1;
		memcpy(p, id, sizeof id - 1);
		p += sizeof id - 1;
		*p++ = 22; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 32;
		memset(p, 0x42, 32);
		p += 32;
		*p++ = 34; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 1; *p++ = 0;
		*p++ = 36; *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 8;
		be64(p, tl);
		p += 8;
		be64(k, 1);
		raw_put(f, "messages", k, 8, buf, (gsize)(p - buf));
		raw_put(f, "raw", k, 8, text, tl);
		be64(ival, 1);
		memset(ival + 8, 0x42, 32);
		raw_put(f, "msgid_index", id, sizeof id - 1, ival, 40);
		be64(k, 2);
		raw_put(f, "meta", "next_msgnum", 11, k, 8);
	}
	s = open_rw(f, NULL);
	add_mails(s, &m, 59, "net");
	g_assert_true(pgate_store_recompress(s, 1, 10, &r, &error));
	g_assert_true(r.done);
	g_assert_cmpuint(r.rewritten, ==, 0);	/* no dictionary yet */
	g_assert_true(pgate_store_zdict_train(s, 0, &d1, &error));
	add_mails(s, &m, 40, "usb");
	g_assert_true(pgate_store_zdict_train(s, 0, &d2, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(d2.id, !=, d1.id);
	pgate_store_free(s);
	rec = read_rec(f, 1);
	g_assert_cmpint(rec->raw_codec, ==, PGATE_RAW_CODEC_NONE);
	g_clear_pointer(&rec, pgate_message_rec_free);
	g_assert_cmpuint(frame_dict(f, 2), ==, 0);
	g_assert_cmpuint(frame_dict(f, 61), ==, d1.id);

	s = open_rw(f, NULL);
	for (r.next = 1, r.done = FALSE; !r.done; batches++) {
		g_assert_true(pgate_store_recompress(s, r.next, 7, &r, &error));
		g_assert_no_error(error);
		g_assert_cmpuint(r.rewritten, <=, 7);
		g_assert_cmpuint(r.bytes_after, <, r.bytes_before + 1);
		rewritten += r.rewritten;
	}
	g_assert_cmpuint(batches, >, 10);
	/* (a frame that would not get smaller is left as it is) */
	g_assert_cmpuint(rewritten, >=, 90);
	g_assert_true(pgate_store_recompress(s, 1, 1000, &r, &error));
	g_assert_true(r.done);
	g_assert_cmpuint(r.rewritten, ==, 0);
	g_assert_cmpuint(r.examined, ==, 100);
	pgate_store_free(s);

	n = 0;
	for (guint64 i = 1; i <= 100; i++) {
		guint32 id = frame_dict(f, i);

		g_assert_true(id == d2.id || (i > 60 && id == d1.id));
		n += id == d2.id;
	}
	g_assert_cmpuint(n, ==, rewritten);
	rec = read_rec(f, 1);
	g_assert_cmpint(rec->raw_codec, ==, PGATE_RAW_CODEC_ZSTD);
	assert_mails(f, &m);
	problems = verify(f, &n, NULL);
	g_assert_cmpstr(problems, ==, "");
	g_assert_cmpuint(n, ==, 0);
	g_ptr_array_unref(m.texts);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
	ADD("/store/roundtrip", test_roundtrip);
	ADD("/store/duplicates", test_duplicates);
	ADD("/store/long-msgid", test_long_msgid);
	ADD("/store/delete", test_delete);
	ADD("/store/map-growth", test_map_growth);
	ADD("/store/map-limit", test_map_limit);
	ADD("/store/missing", test_missing);
	ADD("/store/schema", test_schema);
	ADD("/store/lock-timeout", test_lock_timeout);
	ADD("/store/iter", test_iter);
	ADD("/store/corrupt", test_corrupt);
	ADD("/store/threading-failed", test_threading_failed);
	ADD("/store/tables", test_tables);
	ADD("/store/upgrade-2-3", test_upgrade_2_3);
	ADD("/store/upgrade-3-4", test_upgrade_3_4);
	ADD("/store/long-senders", test_long_senders);
	ADD("/store/index-walk", test_index_walk);
	ADD("/store/verify", test_verify);
	ADD("/store/verify-header", test_verify_header);
	ADD("/store/verify-truncated", test_verify_truncated);
	ADD("/store/open-damaged", test_open_damaged);
	ADD("/store/series-dates", test_series_dates);
	ADD("/store/raw-zstd", test_raw_zstd);
	ADD("/store/raw-old-format", test_raw_old_format);
	ADD("/store/raw-corrupt", test_raw_corrupt);
	ADD("/store/raw-bomb", test_raw_bomb);
	ADD("/store/zdict-roundtrip", test_zdict_roundtrip);
	ADD("/store/zdict-missing", test_zdict_missing);
	ADD("/store/zdict-bomb", test_zdict_bomb);
	ADD("/store/zdict-auto", test_zdict_auto);
	ADD("/store/zdict-recompress", test_zdict_recompress);
	return g_test_run();
}
