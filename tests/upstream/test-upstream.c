/* test-upstream.c - merge detection's pieces (upstream/upstream.h): the
 * Message-ID a trailer names, the subject as the subject rules compare
 * it, [upstream]'s settings, the store's upstream database, created by
 * its first write and absent from a store that never had one, and
 * SERIES/upstream read back (ranks, hints, documents of before ranks)
 * and explained. */
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
	g_assert_cmpstr(pgate_upstream_rule_to_string(
				PGATE_UPSTREAM_RULE_EDITED_SUBJECT), ==,
			"edited-subject");
	g_assert_cmpstr(pgate_upstream_rank_to_string(
				PGATE_UPSTREAM_RANK_APPLIED), ==,
			"applied-with-changes");
	g_assert_cmpstr(pgate_upstream_rank_to_string(
				PGATE_UPSTREAM_RANK_POSSIBLE), ==,
			"possibly-merged");
}

/* A maintainer's edit of a subject: a subsystem prefix gained or
 * changed, case and punctuation; the words themselves stay. */
static void
test_subject_core(void)
{
	static const struct {
		const char *s, *want;
	} cases[] = {
		{ "Add X driver", "add x driver" },
		{ "watchdog: Add X driver", "add x driver" },
		{ "[PATCH v3 2/7] dt-bindings: leds: add X-driver.", "add x driver" },
		{ "leds:add x driver", "leds add x driver" },
		{ "fix: ", "fix" },
		{ "net: fix:", "fix" },
		{ "Revert \"net: fix it\"", "revert net fix it" },
		{ "usb: caf\xc3\xa9 au lait", "caf\xc3\xa9 au lait" },
		{ "", "" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *n = pgate_upstream_subject_core(cases[i].s);

		g_assert_cmpstr(n, ==, cases[i].want);
	}
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
	g_assert_cmpint(c.possible_days, ==, 365);
	pgate_upstream_config_clear(&c);

	/* the hints' window holds the subject rule's */
	g_assert_true(g_key_file_load_from_data(
		kf, "[upstream]\nrepos = /r\nsubject_days = 30\n"
		"possible_days = 7\n", -1, 0, NULL));
	g_assert_true(pgate_upstream_config_load(kf, &c, &error));
	g_assert_cmpint(c.possible_days, ==, 30);
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

static gboolean
put_doc(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const char *doc = payload;

	return pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE,
				     "s000000000001/upstream", doc, strlen(doc),
				     error);
}

/* SERIES/upstream read back: matches of both ranks, a "possibly merged"
 * hint is no match, a document of before ranks reads as it was meant;
 * and told, a line a fact. */
static void
test_series_doc(void)
{
	g_autofree char *dir = g_dir_make_tmp("pgate-upstream-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "store", NULL);
	PgateStoreOptions o = PGATE_STORE_OPTIONS_INIT;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateSeriesRec) rec = pgate_series_rec_new();
	static const char doc[] =
		"{\"patches\":{"
		"\"a@x\":{\"commit\":\"1111111111111111\",\"branch\":\"master\","
		"\"rule\":\"link\",\"rank\":\"merged\",\"evidence\":\"E1\","
		"\"lost\":[{\"msgid\":\"old@x\",\"series\":\"s0\",\"version\":1,"
		"\"why\":\"an older version\"}],"
		"\"also\":[{\"commit\":\"3333333333333333\",\"branch\":\"next\","
		"\"rule\":\"link\"}]},"
		"\"b@x\":{\"commit\":\"2222222222222222\",\"branch\":\"master\","
		"\"rule\":\"subject\"},"
		"\"c@x\":{\"commit\":\"4444444444444444\",\"branch\":\"master\","
		"\"rule\":\"subject\",\"rank\":\"possibly-merged\"}},"
		"\"possible\":{\"d@x\":[{\"commit\":\"5555555555555555\","
		"\"branch\":\"master\",\"rule\":\"patch-id\",\"evidence\":\"E4\","
		"\"why\":\"W4\"}]}}";
	static const char *const want[] = {
		"1/4 merged as 111111111111 on master, by link: E1",
		"  also 333333333333 on next (link)",
		"  not s0 v1 <old@x>: an older version",
		"2/4 applied with changes as 222222222222 on master, by subject",
		"4/4 possibly merged as 555555555555 on master (patch-id: E4): W4",
	};
	const char *ids[] = { "a@x", "b@x", "c@x", "d@x" };

	rec->id = g_strdup("s000000000001");
	rec->total = 4;
	for (guint i = 0; i < 4; i++) {
		PgateSeriesPatch *p = pgate_series_patch_new();

		p->number = i + 1;
		p->msgid = g_strdup(ids[i]);
		g_ptr_array_add(rec->patches, p);
	}
	{
		g_autoptr(PgateStore) s = pgate_store_open(
			path, PGATE_STORE_RW | PGATE_STORE_CREATE, &o, &error);
		g_autoptr(PgateStoreTxn) txn = NULL;
		g_autoptr(GPtrArray) m = NULL, lines = NULL;
		const PgateUpstreamMatch *m0, *m1;

		g_assert_no_error(error);
		g_assert_true(pgate_store_write(s, put_doc, (gpointer)doc, &error));
		txn = pgate_store_begin_read(s, &error);
		m = pgate_upstream_series_read(txn, rec, &error);
		g_assert_no_error(error);
		g_assert_cmpuint(m->len, ==, 2);
		m0 = m->pdata[0];
		m1 = m->pdata[1];
		g_assert_cmpint(m0->rank, ==, PGATE_UPSTREAM_RANK_MERGED);
		g_assert_false(m0->changes);
		/* no rank: a document of before ranks; subject was applied
		 * with changes */
		g_assert_cmpstr(m1->msgid, ==, "b@x");
		g_assert_cmpint(m1->rank, ==, PGATE_UPSTREAM_RANK_APPLIED);
		g_assert_true(m1->changes);
		lines = pgate_upstream_explain(txn, rec, &error);
		g_assert_no_error(error);
		g_assert_cmpuint(lines->len, ==, G_N_ELEMENTS(want) + 1);
		for (guint i = 0; i < 4; i++)
			g_assert_cmpstr(lines->pdata[i], ==, want[i]);
		/* c@x's entry says possibly merged: told so, never counted */
		g_assert_cmpstr(lines->pdata[4], ==, "3/4 possibly merged as "
				"444444444444 on master, by subject");
		g_assert_cmpstr(lines->pdata[5], ==, want[4]);
	}
	pgate_test_rm_rf(dir);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/upstream/link", test_link);
	g_test_add_func("/upstream/subject", test_subject);
	g_test_add_func("/upstream/subject-core", test_subject_core);
	g_test_add_func("/upstream/series-doc", test_series_doc);
	g_test_add_func("/upstream/config", test_config);
	g_test_add_func("/upstream/store-db", test_store_db);
	return g_test_run();
}
