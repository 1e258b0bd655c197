/* test-buildbot.c - the Buildbot backend's parts that need no master:
 * its settings, its handles, and what each of Buildbot's results means.
 * The backend against a real master and workers is t0545-buildbot. */
#include "ci/buildbot/buildbot-private.h"

#include <string.h>

static GKeyFile *
conf(const char *text)
{
	GKeyFile *kf = g_key_file_new();

	g_assert_true(g_key_file_load_from_data(kf, text, (gsize)-1,
						G_KEY_FILE_NONE, NULL));
	return kf;
}

static void
test_results(void)
{
	/* SUCCESS, WARNINGS, FAILURE, SKIPPED, EXCEPTION, RETRY, CANCELLED */
	static const PgateVerdict want[] = {
		PGATE_VERDICT_SUCCESS, PGATE_VERDICT_WARNING,
		PGATE_VERDICT_FAIL, PGATE_VERDICT_WARNING,
		PGATE_VERDICT_ERROR, PGATE_VERDICT_ERROR,
		PGATE_VERDICT_ERROR,
	};

	for (gint64 r = 0; r < (gint64)G_N_ELEMENTS(want); r++)
		g_assert_cmpint(pgate_ci_buildbot__verdict(r), ==, want[r]);
	/* a master shutdown cancels its builds: never the patch's fault */
	g_assert_cmpint(pgate_ci_buildbot__verdict(6), !=,
			PGATE_VERDICT_FAIL);
	g_assert_cmpint(pgate_ci_buildbot__verdict(99), ==,
			PGATE_VERDICT_ERROR);
	g_assert_cmpstr(pgate_ci_buildbot__results_word(5), ==, "retry");
	g_assert_cmpstr(pgate_ci_buildbot__results_word(-1), ==, "unknown");
}

static void
test_handle(void)
{
	BbHandle h = { .builder = "calc", .bsid = 7, .brid = 9,
		       .since = 1700000000, .trigger = "S1-ab" }, d;
	g_autofree char *text = pgate_ci_buildbot__handle_encode(&h);
	GError *e = NULL;

	g_assert_cmpstr(text, ==, "{\"buildbot\":1,\"builder\":\"calc\","
			"\"bsid\":7,\"brid\":9,\"since\":1700000000,"
			"\"trigger\":\"S1-ab\"}");
	g_assert_true(pgate_ci_buildbot__handle_decode(&d, text, &e));
	g_assert_cmpuint(d.brid, ==, 9);
	g_assert_cmpuint(d.bsid, ==, 7);
	g_assert_cmpstr(d.builder, ==, "calc");
	g_assert_cmpstr(d.trigger, ==, "S1-ab");
	pgate_ci_buildbot__handle_clear(&d);
	/* a Jenkins handle, or no brid, is none of ours */
	g_assert_false(pgate_ci_buildbot__handle_decode(
		&d, "{\"jenkins\":1,\"job\":\"x\",\"queue\":1}", &e));
	g_assert_error(e, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&e);
	g_assert_false(pgate_ci_buildbot__handle_decode(
		&d, "{\"buildbot\":1,\"builder\":\"calc\"}", &e));
	g_clear_error(&e);
}

static void
test_config(void)
{
	static const struct {
		const char *text;
		const char *error;   /* NULL: valid */
	} cases[] = {
		{ "url = http://127.0.0.1:8010/\nscheduler = s\nbuilder = b\n",
		  NULL },
		{ "scheduler = s\nbuilder = b\n", "url is not set" },
		{ "url = ftp://h/\nscheduler = s\nbuilder = b\n",
		  "url must be an http or https URL" },
		{ "url = http://u:p@h/\nscheduler = s\nbuilder = b\n",
		  "url must not hold credentials" },
		{ "url = http://h/\nbuilder = b\n", "scheduler is not set" },
		{ "url = http://h/\nscheduler = a/b\nbuilder = b\n",
		  "is not a scheduler name" },
		{ "url = http://h/\nscheduler = s\n", "builder is not set" },
		{ "url = http://h/\nscheduler = s\nbuilder = b\nuser = ci\n",
		  "user is set without a password" },
		{ "url = http://h/\nscheduler = s\nbuilder = b\n"
		  "password_env = X\n", "password_env is set but user is not" },
		{ "url = http://h/\nscheduler = s\nbuilder = b\nuser = ci\n"
		  "password_env = PGATE_TEST_BB_UNSET\n", "PGATE_TEST_BB_UNSET" },
		{ "url = http://h/\nscheduler = s\nbuilder = b\n"
		  "property_prefix = a b\n", "property_prefix" },
		{ "url = http://h/\nscheduler = s\nbuilder = b\nretries = 11\n",
		  "retries" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strconcat("[ci.buildbot]\n",
						    cases[i].text, NULL);
		g_autoptr(GKeyFile) kf = conf(text);
		BbConfig cfg;
		GError *e = NULL;
		gboolean ok = pgate_ci_buildbot__config_load(&cfg, kf,
							     "ci.buildbot", &e);

		g_test_message("case %" G_GSIZE_FORMAT ": %s", i,
			       ok ? "valid" : e->message);
		if (cases[i].error == NULL) {
			g_assert_no_error(e);
			g_assert_cmpstr(cfg.base, ==, "http://127.0.0.1:8010");
			g_assert_cmpstr(cfg.prop[BB_P_TRIGGER], ==,
					"patchgate_trigger");
			g_assert_null(cfg.secret);
		} else {
			g_assert_false(ok);
			g_assert_error(e, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
			g_assert_nonnull(strstr(e->message, cases[i].error));
			g_clear_error(&e);
		}
		pgate_ci_buildbot__config_clear(&cfg);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_unsetenv("PGATE_TEST_BB_UNSET");
	g_test_add_func("/ci/buildbot/results", test_results);
	g_test_add_func("/ci/buildbot/handle", test_handle);
	g_test_add_func("/ci/buildbot/config", test_config);
	return g_test_run();
}
