/* test-upstream.c - merge detection's pieces (upstream/upstream.h): the
 * Message-ID a trailer names, the subject as the subject rule compares
 * it, [upstream]'s settings, and the store's upstream database, created
 * by its first write and absent from a store that never had one. */
#include "upstream/upstream.h"
#include "tests/lib/testutil.h"

#include <string.h>

static void
test_link(void)
{
	static const char *const pats[] = { "https://lists.example.org/m/",
					    NULL };
	static const struct {
		const char *value, *want;
	} cases[] = {
		{ "https://lore.kernel.org/r/20240101.1234-1-a@b.org",
		  "20240101.1234-1-a@b.org" },
		{ "https://lore.kernel.org/all/x@y/", "x@y" },
		{ "https://lore.kernel.org/linux-doc/x@y/T/#u", "x@y" },
		{ "http://lore.kernel.org/r/x@y", "x@y" },
		{ "https://patch.msgid.link/x@y", "x@y" },
		{ "https://patch.msgid.link/a%2Fb%40c", "a/b@c" },
		{ "<x@y>", "x@y" },
		{ "  <x@y>", "x@y" },
		{ "https://lists.example.org/m/q@r", "q@r" },
		{ "https://example.org/r/x@y", NULL },
		{ "https://lore.kernel.org/", NULL },
		{ "https://lore.kernel.org/r/", NULL },
		{ "<>", NULL },
		{ "x@y", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *id = pgate_upstream_link_msgid(
			cases[i].value, (char *const *)pats);

		g_assert_cmpstr(id, ==, cases[i].want);
	}
}

static void
test_subject(void)
{
	static const struct {
		const char *s, *want;
	} cases[] = {
		{ "net: fix a leak", "net: fix a leak" },
		{ "[PATCH v2 3/5] Net:  Fix a Leak.", "net: fix a leak" },
		{ "Re: [PATCH] net: fix\ta  leak", "net: fix a leak" },
		{ "[RFC][PATCH] x", "x" },
		{ "", "" },
		{ "[unclosed x", "[unclosed x" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *n = pgate_upstream_subject_normalize(cases[i].s);

		g_assert_cmpstr(n, ==, cases[i].want);
	}
	g_assert_cmpstr(pgate_upstream_rule_to_string(PGATE_UPSTREAM_RULE_LINK),
			==, "link");
	g_assert_cmpstr(pgate_upstream_rule_to_string(
				PGATE_UPSTREAM_RULE_PATCH_ID), ==, "patch-id");
	g_assert_cmpstr(pgate_upstream_rule_to_string(
				PGATE_UPSTREAM_RULE_SUBJECT), ==, "subject");
}

static void
test_config(void)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) error = NULL;
	PgateUpstreamConfig c;

	g_assert_true(pgate_upstream_config_load(kf, &c, &error));
	g_assert_false(c.enabled);
	pgate_upstream_config_clear(&c);

	g_assert_true(g_key_file_load_from_data(kf, "[upstream]\nbranches = a\n",
						-1, 0, NULL));
	g_assert_false(pgate_upstream_config_load(kf, &c, &error));
	g_assert_error(error, PGATE_UPSTREAM_ERROR, PGATE_ERROR_CONFIG);
	pgate_upstream_config_clear(&c);
	g_clear_error(&error);

	g_assert_true(g_key_file_load_from_data(
		kf, "[upstream]\nrepos = /r1;/r2\n", -1, 0, NULL));
	g_assert_true(pgate_upstream_config_load(kf, &c, &error));
	g_assert_no_error(error);
	g_assert_true(c.enabled && c.fetch);
	g_assert_cmpuint(g_strv_length(c.repos), ==, 2);
	g_assert_cmpstr(c.branches[0], ==, "master");
	g_assert_null(c.branches[1]);
	g_assert_cmpstr(c.remote, ==, "origin");
	g_assert_cmpint(c.window_days, ==, 180);
	g_assert_cmpint(c.subject_days, ==, 14);
	pgate_upstream_config_clear(&c);
}

typedef struct {
	const char *key, *val;
} Put;

static gboolean
put_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const Put *p = payload;

	return pgate_store_upstream_put(txn, p->key, p->val, strlen(p->val),
					error);
}

static gboolean
del_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	return pgate_store_upstream_delete(txn, payload, error);
}

/* A store without the upstream database reads as empty, opens as it is,
 * and gets the database with its first write; long keys are hashed. */
static void
test_store_db(void)
{
	g_autofree char *dir = g_dir_make_tmp("pgate-upstream-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "store", NULL);
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	g_autoptr(GError) error = NULL;
	g_autofree char *longkey = g_strnfill(1000, 'k');
	Put p1 = { "h\n/repo\nmaster", "0123" }, p2 = { longkey, "long" };

	{
		g_autoptr(PgateStore) s = pgate_store_open(
			path, PGATE_STORE_RW | PGATE_STORE_CREATE, &o, &error);
		g_autoptr(PgateStoreTxn) txn = NULL;
		g_autoptr(GBytes) b = NULL;

		g_assert_no_error(error);
		txn = pgate_store_begin_read(s, &error);
		b = pgate_store_upstream_get(txn, p1.key, &error);
		g_assert_null(b);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
		g_clear_error(&error);
		g_clear_pointer(&txn, pgate_store_txn_free);
		/* deleting from a store without the database is no error */
		g_assert_true(pgate_store_write(s, del_fn, (gpointer)p1.key,
						&error));
		g_assert_true(pgate_store_write(s, put_fn, &p1, &error));
		g_assert_true(pgate_store_write(s, put_fn, &p2, &error));
		g_assert_no_error(error);
	}
	{
		g_autoptr(PgateStore) s = pgate_store_open(path, PGATE_STORE_RDONLY,
							   &o, &error);
		g_autoptr(PgateStoreTxn) txn = NULL;
		g_autoptr(GBytes) b1 = NULL, b2 = NULL;

		g_assert_no_error(error);
		txn = pgate_store_begin_read(s, &error);
		b1 = pgate_store_upstream_get(txn, p1.key, &error);
		b2 = pgate_store_upstream_get(txn, longkey, &error);
		g_assert_no_error(error);
		g_assert_cmpmem(g_bytes_get_data(b1, NULL), g_bytes_get_size(b1),
				"0123", 4);
		g_assert_cmpmem(g_bytes_get_data(b2, NULL), g_bytes_get_size(b2),
				"long", 4);
	}
	{
		g_autoptr(PgateStore) s = pgate_store_open(path, PGATE_STORE_RW,
							   &o, &error);
		g_autoptr(PgateStoreTxn) txn = NULL;
		g_autoptr(GBytes) b = NULL;

		g_assert_true(pgate_store_write(s, del_fn, (gpointer)p1.key,
						&error));
		txn = pgate_store_begin_read(s, &error);
		b = pgate_store_upstream_get(txn, p1.key, &error);
		g_assert_null(b);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_NOT_FOUND);
	}
	pgate_test_rm_rf(dir);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/upstream/link", test_link);
	g_test_add_func("/upstream/subject", test_subject);
	g_test_add_func("/upstream/config", test_config);
	g_test_add_func("/upstream/store-db", test_store_db);
	return g_test_run();
}
