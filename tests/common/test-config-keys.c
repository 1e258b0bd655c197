/* test-config-keys.c - common/config-keys.c: the table of every key, the
 * names suggested for a typo, and the check that refuses unknown groups
 * and keys. */
#include <glib.h>
#include <string.h>

#include "common/pgate-common.h"

#define DOMAIN (g_quark_from_static_string("pgate-test-error-quark"))

static GKeyFile *
kf_new(const char *text)
{
	GKeyFile *kf = g_key_file_new();

	g_assert_true(g_key_file_load_from_data(kf, text, (gsize)-1,
						G_KEY_FILE_NONE, NULL));
	return kf;
}

/* The table is coherent: one row per key, a known doc, and every default
 * a value of its own type. */
static void
test_table(void)
{
	static const char *const docs[] = {
		"docs/config.md", "docs/pipeline.md", "docs/ci-local.md",
		"docs/ci-jenkins.md", "docs/ci-buildbot.md",
		"docs/report-patchwork.md",
		"docs/report-email.md", NULL,
	};
	g_autoptr(GHashTable) seen = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	const PgateConfigKey *keys;
	gsize n;

	keys = pgate_config_keys(&n);
	g_assert_cmpuint(n, >, 100);
	for (gsize i = 0; i < n; i++) {
		const PgateConfigKey *k = &keys[i];
		char *id = g_strdup_printf("[%s] %s", k->group, k->key);
		gboolean b;
		guint64 u;

		g_test_message("%s", id);
		g_assert_false(g_hash_table_contains(seen, id));
		g_hash_table_add(seen, id);
		g_assert_true(g_strv_contains(docs, k->doc));
		g_assert_nonnull(pgate_config_key_shown(k));
		g_assert_cmpstr(pgate_config_type_to_string(k->type), !=,
				"unknown");
		g_assert_true(pgate_config_key_lookup(k->group, k->key) == k ||
			      (k->flags & PGATE_CONFIG_KEY_PATTERN));
		if (k->flags & PGATE_CONFIG_KEY_PATTERN)
			g_assert_nonnull(strchr(k->key, '.'));
		if (k->flags & PGATE_CONFIG_KEY_REQUIRED)
			g_assert_null(k->value);
		g_assert_true((k->choices != NULL) ==
			      (k->type == PGATE_CONFIG_TYPE_CHOICE));
		if (k->value == NULL)
			continue;
		switch (k->type) {
		case PGATE_CONFIG_TYPE_BOOL:
			g_assert_true(pgate_config_bool_word(k->value, &b));
			break;
		case PGATE_CONFIG_TYPE_INT:
		case PGATE_CONFIG_TYPE_DURATION:
			g_assert_true(g_ascii_string_to_unsigned(
				k->value, 10, 0, G_MAXINT64, &u, NULL));
			break;
		case PGATE_CONFIG_TYPE_SIZE:
			g_assert_true(pgate_config_parse_size(k->value, &u));
			break;
		case PGATE_CONFIG_TYPE_CHOICE: {
			g_auto(GStrv) c = g_strsplit(k->choices, "|", -1);

			g_assert_true(g_strv_contains((const char *const *)c,
						      k->value));
			break;
		}
		default:
			break;
		}
	}
}

static void
test_lookup(void)
{
	const PgateConfigKey *k;

	k = pgate_config_key_lookup("apply", "branches");
	g_assert_nonnull(k);
	g_assert_cmpint(k->type, ==, PGATE_CONFIG_TYPE_LIST);
	g_assert_cmpstr(k->value, ==, "master");
	g_assert_cmpstr(k->doc, ==, "docs/pipeline.md");
	/* a family: step.NAME */
	k = pgate_config_key_lookup("ci.local", "step.build");
	g_assert_nonnull(k);
	g_assert_cmpstr(k->key, ==, "step.NAME");
	g_assert_null(pgate_config_key_lookup("ci.local", "step."));
	g_assert_null(pgate_config_key_lookup("ci.local", "step"));
	/* keys are per group, and case counts (GKeyFile's) */
	g_assert_null(pgate_config_key_lookup("store", "branches"));
	g_assert_null(pgate_config_key_lookup("apply", "Branches"));
	g_assert_null(pgate_config_key_lookup("nope", "branches"));
	g_assert_true(pgate_config_group_known("ci.jenkins"));
	g_assert_false(pgate_config_group_known("ci.locl"));
	g_assert_false(pgate_config_group_known("report.email"));
	g_assert_cmpstr(pgate_config_key_shown(
		pgate_config_key_lookup("apply", "repo")), ==, "(required)");
	g_assert_cmpstr(pgate_config_key_shown(
		pgate_config_key_lookup("trust", "trusted")), ==, "(none)");
	g_assert_cmpstr(pgate_config_key_shown(
		pgate_config_key_lookup("store", "map_size")), ==,
		"268435456 (256 MiB)");
}

static void
check_suggest(const char *group, const char *key, const char *want)
{
	g_autofree char *got = key ? pgate_config_suggest_key(group, key)
				   : pgate_config_suggest_group(group);

	g_assert_cmpstr(got, ==, want);
}

static void
test_suggest(void)
{
	/* groups */
	check_suggest("ci.locl", NULL, "ci.local");
	check_suggest("ci.jenkin", NULL, "ci.jenkins");
	check_suggest("Store", NULL, "store");
	check_suggest("patchwrok", NULL, "patchwork");     /* transposed */
	check_suggest("report.email", NULL, NULL);          /* too far */
	check_suggest("x", NULL, NULL);
	/* keys: one typo, a case slip, a transposition */
	check_suggest("apply", "brances", "branches");
	check_suggest("apply", "brnaches", "branches");
	check_suggest("store", "Map_Size", "map_size");
	check_suggest("daemon", "maildir", "maildirs");
	check_suggest("ci.local", "timeot", "timeout");
	/* the key of the group it is in, not of another */
	check_suggest("ci.jenkins", "jobs", "job");
	check_suggest("ci.local", "job", "jobs");
	/* nothing close */
	check_suggest("apply", "colour", NULL);
	check_suggest("store", "a", NULL);
	/* a pattern keeps the name given */
	check_suggest("ci.local", "stpe.build", "step.build");
	check_suggest("ci.local", "steps.test", "step.test");
	/* a refused key is never offered */
	check_suggest("patchwork", "tokn", NULL);
	check_suggest("email", "pasword", NULL);
}

static void
test_validate_ok(void)
{
	g_autoptr(GKeyFile) kf = kf_new(
		"[store]\nmap_size = 1\n"
		"[apply]\nrepo = /r\nbranches = a;b\n"
		"[ci.local]\nstep.build = make\nstep.test = make;check\n"
		"[email]\n"
		"[daemon]\nmaildirs = x\n");
	g_autoptr(GPtrArray) problems =
		g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
	g_autoptr(GError) error = NULL;

	g_assert_true(pgate_config_validate(kf, DOMAIN, problems, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(problems->len, ==, 0);
	/* an empty file too */
	{
		g_autoptr(GKeyFile) empty = g_key_file_new();

		g_assert_true(pgate_config_validate(empty, DOMAIN, NULL,
						    &error));
		g_assert_no_error(error);
	}
}

static void
test_validate_bad(void)
{
	g_autoptr(GKeyFile) kf = kf_new(
		"[ci.locl]\ntimeout = 5\n"
		"[apply]\nrepo = /r\nbrances = a\ncolour = red\n"
		"[patchwork]\ntoken = hunter2\n"
		"[ci.local]\nstep. = x\n"
		"[nonsense]\n");
	g_autoptr(GPtrArray) problems =
		g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
	g_autoptr(GError) error = NULL;
	static const char *const want[] = {
		"[ci.locl]: no such group (did you mean [ci.local]?)",
		"[apply] brances: no such key (did you mean branches?)",
		"[apply] colour: no such key",
		"[patchwork] token: a secret is never written in the "
		"configuration: put it in a file named by token_file, or in an "
		"environment variable named by token_env",
		"[ci.local] step.: no such key",
		"[nonsense]: no such group",
	};

	g_assert_false(pgate_config_validate(kf, DOMAIN, problems, &error));
	g_assert_error(error, DOMAIN, PGATE_ERROR_CONFIG);
	g_assert_cmpstr(error->message, ==, want[0]);
	g_assert_cmpuint(problems->len, ==, G_N_ELEMENTS(want));
	for (guint i = 0; i < problems->len; i++) {
		const GError *e = problems->pdata[i];

		g_assert_error(e, DOMAIN, PGATE_ERROR_CONFIG);
		g_assert_cmpstr(e->message, ==, want[i]);
		/* the secret is never quoted */
		g_assert_null(strstr(e->message, "hunter2"));
	}
	/* without @problems: the first, alone */
	g_clear_error(&error);
	g_assert_false(pgate_config_validate(kf, DOMAIN, NULL, &error));
	g_assert_cmpstr(error->message, ==, want[0]);
	g_clear_error(&error);
	g_assert_false(pgate_config_validate(kf, DOMAIN, NULL, NULL));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/common/config-keys/table", test_table);
	g_test_add_func("/common/config-keys/lookup", test_lookup);
	g_test_add_func("/common/config-keys/suggest", test_suggest);
	g_test_add_func("/common/config-keys/validate-ok", test_validate_ok);
	g_test_add_func("/common/config-keys/validate-bad", test_validate_bad);
	return g_test_run();
}
