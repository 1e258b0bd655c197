/* test-common.c - common/: the secret registry (secret.c), the one
 * translation of libcurl's errors (curl.c), and the sketch of a diff's
 * changed lines (diffsketch.c). */
#include <curl/curl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "common/pgate-common.h"

static void
test_redact(void)
{
	g_autofree char *none = NULL, *one = NULL, *many = NULL;
	g_autoptr(GString) s = g_string_new("x hunter2 y");

	pgate_secret_forget_all();
	none = pgate_secret_redact("token hunter2");
	g_assert_cmpstr(none, ==, "token hunter2");
	g_assert_false(pgate_secret_redact_string(s));

	pgate_secret_add("hunter2");
	pgate_secret_add("");          /* ignored */
	pgate_secret_add(NULL);
	one = pgate_secret_redact("token hunter2, again hunter2hunter2.");
	g_assert_cmpstr(one, ==, "token [redacted], again "
			"[redacted][redacted].");
	g_assert_true(pgate_secret_redact_string(s));
	g_assert_cmpstr(s->str, ==, "x [redacted] y");

	/* a secret holding another is replaced whole, first */
	pgate_secret_add("xhunter2x");
	many = pgate_secret_redact("axhunter2xb hunter2");
	g_assert_cmpstr(many, ==, "a[redacted]b [redacted]");
	g_assert_null(pgate_secret_redact(NULL));
	pgate_secret_forget_all();
}

static void
test_paths(void)
{
	g_auto(GStrv) p = NULL;

	pgate_secret_forget_all();
	pgate_secret_add_path("/etc/patchgate/../patchgate/pw.token");
	pgate_secret_add_path("/etc/patchgate/pw.token");   /* once */
	pgate_secret_add_path("");
	pgate_secret_add_path("relative/state");
	p = pgate_secret_paths();
	g_assert_cmpuint(g_strv_length(p), ==, 2);
	g_assert_cmpstr(p[0], ==, "/etc/patchgate/pw.token");
	g_assert_true(g_path_is_absolute(p[1]));
	g_assert_true(g_str_has_suffix(p[1], "/relative/state"));
	pgate_secret_forget_all();
}

static void
test_curl_codes(void)
{
	g_assert_cmpint(pgate_curl_error_code(CURLE_COULDNT_CONNECT), ==,
			PGATE_ERROR_IO);
	g_assert_cmpint(pgate_curl_error_code(CURLE_OPERATION_TIMEDOUT), ==,
			PGATE_ERROR_IO);
	g_assert_cmpint(pgate_curl_error_code(CURLE_WEIRD_SERVER_REPLY), ==,
			PGATE_ERROR_IO);
	g_assert_cmpint(pgate_curl_error_code(CURLE_URL_MALFORMAT), ==,
			PGATE_ERROR_CONFIG);
	g_assert_cmpint(pgate_curl_error_code(CURLE_PEER_FAILED_VERIFICATION),
			==, PGATE_ERROR_CONFIG);
	g_assert_cmpint(pgate_curl_error_code(CURLE_LOGIN_DENIED), ==,
			PGATE_ERROR_CONFIG);
	g_assert_cmpint(pgate_curl_error_code(CURLE_WRITE_ERROR), ==,
			PGATE_ERROR_FAILED);
	g_assert_cmpstr(pgate_curl_message(CURLE_COULDNT_CONNECT, "refused"),
			==, "refused");
	g_assert_cmpstr(pgate_curl_message(CURLE_COULDNT_CONNECT, ""), ==,
			curl_easy_strerror(CURLE_COULDNT_CONNECT));
}

static GKeyFile *
keyfile(const char *text)
{
	GKeyFile *kf = g_key_file_new();

	g_assert_true(g_key_file_load_from_data(kf, text, -1, G_KEY_FILE_NONE,
						NULL));
	return kf;
}

#define DOM g_quark_from_static_string("test")

static void
test_config_getters(void)
{
	g_autoptr(GKeyFile) kf = keyfile(
		"[g]\ns =  two words  \nempty =\nb = Yes\nbad = maybe\n"
		"n = 42\nneg = -1\nword = 5m\nsize = 64K\nbig = 3T\n"
		"zero = 0\nd = 2h\nlist = a; ;b ;\n");
	g_autoptr(GError) e = NULL;
	g_autofree char *s = NULL, *empty = NULL, *absent = NULL;
	g_auto(GStrv) list = NULL, none = NULL;
	gboolean b;
	gint64 n;
	guint64 z;

	g_assert_true(pgate_config_string(kf, "g", "s", &s, DOM, NULL));
	g_assert_cmpstr(s, ==, "two words");
	g_assert_true(pgate_config_string(kf, "g", "empty", &empty, DOM, NULL));
	g_assert_null(empty);
	g_assert_true(pgate_config_string(kf, "nogroup", "s", &absent, DOM,
					  NULL));
	g_assert_null(absent);

	g_assert_true(pgate_config_bool(kf, "g", "b", FALSE, &b, DOM, NULL));
	g_assert_true(b);
	g_assert_true(pgate_config_bool(kf, "g", "nokey", TRUE, &b, DOM, NULL));
	g_assert_true(b);
	g_assert_false(pgate_config_bool(kf, "g", "bad", TRUE, &b, DOM, &e));
	g_assert_cmpstr(e->message, ==, "[g] bad: 'maybe' is not true or false");
	g_clear_error(&e);

	g_assert_true(pgate_config_int(kf, "g", "n", 0, 1, 100, FALSE, &n, DOM,
				       NULL));
	g_assert_cmpint(n, ==, 42);
	g_assert_false(pgate_config_int(kf, "g", "neg", 0, 0, 10, FALSE, &n,
					DOM, &e));
	g_assert_cmpstr(e->message, ==, "[g] neg: -1 is out of range (0 to 10)");
	g_assert_true(g_error_matches(e, DOM, PGATE_ERROR_CONFIG));
	g_clear_error(&e);
	g_assert_false(pgate_config_int(kf, "g", "word", 0, 0, 10, FALSE, &n,
					DOM, &e));
	g_assert_cmpstr(e->message, ==, "[g] word: '5m' is not a whole number");
	g_clear_error(&e);
	g_assert_true(pgate_config_int(kf, "g", "zero", 7, 5, 10, TRUE, &n, DOM,
				       NULL));
	g_assert_cmpint(n, ==, 0);

	g_assert_true(pgate_config_size(kf, "g", "size", 0, 1, 1ULL << 40,
					FALSE, &z, DOM, NULL));
	g_assert_cmpuint(z, ==, 65536);
	g_assert_false(pgate_config_size(kf, "g", "big", 0, 1, 1ULL << 40,
					 FALSE, &z, DOM, &e));
	g_assert_nonnull(strstr(e->message, "3T is out of range"));
	g_clear_error(&e);
	g_assert_false(pgate_config_size(kf, "g", "bad", 0, 1, 10, FALSE, &z,
					 DOM, &e));
	g_assert_nonnull(strstr(e->message, "'maybe' is not a size"));
	g_clear_error(&e);

	g_assert_true(pgate_config_duration(kf, "g", "d", 0, 1, 86400, &n, DOM,
					    NULL));
	g_assert_cmpint(n, ==, 7200);
	g_assert_true(pgate_config_duration(kf, "g", "n", 0, 1, 86400, &n, DOM,
					    NULL));
	g_assert_cmpint(n, ==, 42);
	g_assert_false(pgate_config_duration(kf, "g", "d", 0, 1, 3600, &n, DOM,
					     &e));
	g_assert_cmpstr(e->message, ==,
			"[g] d: 2h is out of range (1 s to 3600 s)");
	g_clear_error(&e);
	g_assert_false(pgate_config_duration(kf, "g", "s", 0, 1, 3600, &n, DOM,
					     &e));
	g_clear_error(&e);

	g_assert_true(pgate_config_list(kf, "g", "list", &list, DOM, NULL));
	g_assert_cmpuint(g_strv_length(list), ==, 2);
	g_assert_cmpstr(list[1], ==, "b");
	g_assert_true(pgate_config_list(kf, "g", "nokey", &none, DOM, NULL));
	g_assert_null(none);
}

static void
test_config_secrets(void)
{
	g_autofree char *dir = g_dir_make_tmp("pgate-common-XXXXXX", NULL);
	g_autofree char *ok = g_build_filename(dir, "ok", NULL);
	g_autofree char *open = g_build_filename(dir, "open", NULL);
	g_autofree char *two = g_build_filename(dir, "two", NULL);
	g_autofree char *s = NULL, *r = NULL, *env = NULL;
	g_autoptr(GError) e = NULL;
	g_auto(GStrv) paths = NULL;

	pgate_secret_forget_all();
	g_assert_true(g_file_set_contents_full(ok, "s3cret-1\n", -1, 0, 0600,
					       NULL));
	g_assert_true(g_file_set_contents_full(open, "x\n", -1, 0, 0644,
					       NULL));
	g_assert_true(g_file_set_contents_full(two, "a\nb\n", -1, 0, 0600,
					       NULL));
	s = pgate_config_secret_file("g", "token_file", ok, 64, DOM, NULL);
	g_assert_cmpstr(s, ==, "s3cret-1");
	r = pgate_secret_redact("is s3cret-1?");
	g_assert_cmpstr(r, ==, "is [redacted]?");
	paths = pgate_secret_paths();
	g_assert_cmpstr(paths[0], ==, ok);
	g_assert_null(pgate_config_secret_file("g", "token_file", open, 64,
					       DOM, &e));
	g_assert_nonnull(strstr(e->message, "read or written by everyone"));
	g_clear_error(&e);
	g_assert_null(pgate_config_secret_file("g", "token_file", two, 64, DOM,
					       &e));
	g_assert_nonnull(strstr(e->message, "does not hold one line"));
	g_clear_error(&e);
	g_assert_null(pgate_config_secret_file("g", "token_file", ok, 4, DOM,
					       &e));
	g_clear_error(&e);
	g_assert_null(pgate_config_secret_file("g", "token_file", dir, 64, DOM,
					       &e));
	g_assert_nonnull(strstr(e->message, "not a regular file"));
	g_clear_error(&e);
	g_setenv("PGATE_TEST_SECRET_ENV", "env-s3cret", TRUE);
	env = pgate_config_secret_env("g", "token_env", "PGATE_TEST_SECRET_ENV",
				      64, DOM, NULL);
	g_assert_cmpstr(env, ==, "env-s3cret");
	g_assert_null(pgate_config_secret_env("g", "token_env",
					      "PGATE_TEST_UNSET_ENV", 64, DOM,
					      &e));
	g_assert_cmpstr(e->message, ==, "[g] token_env: the environment "
			"variable PGATE_TEST_UNSET_ENV is not set");
	pgate_secret_forget_all();
	g_unlink(ok);
	g_unlink(open);
	g_unlink(two);
	g_rmdir(dir);
}

/* A diff's changed lines, whitespace aside, and only a hunk's: context,
 * headers and blank lines do not count; the same lines in another diff
 * (another hunk header, other context, re-indented) give the same
 * sketch; a comment line more makes it 9/10 alike; a long diff keeps
 * PGATE_DIFF_SKETCH_MAX hashes, and one line of 200 changed still shows. */
static void
test_diff_sketch(void)
{
	static const char a[] =
		"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n"
		"@@ -1,3 +1,10 @@\n ctx\n-old line\n+int a;\n+int b;\n"
		"+int c;\n+\n+int d;\n+int e;\n+int f;\n+int g;\n ctx\n"
		"-- not a change: after the hunk\n";
	static const char b[] =
		"diff --git a/g.c b/g.c\n--- a/g.c\n+++ b/g.c\n"
		"@@ -10,4 +10,11 @@ fn\n other\n-old  line\n+int  a;\n"
		"+\tint b;\n+int c;\n+int d;\n+int e;\n+int f;\n+int g;\n"
		"+\n other\n context\n";
	static const char c[] =
		"@@ -1,2 +1,9 @@\n-old line\n+int a;\n+int b;\n+int c;\n"
		"+/* a comment */\n+int d;\n+int e;\n+int f;\n+int g;\n ctx\n";
	guint32 sa[PGATE_DIFF_SKETCH_MAX], sb[PGATE_DIFF_SKETCH_MAX];
	guint32 sc[PGATE_DIFF_SKETCH_MAX], big[PGATE_DIFF_SKETCH_MAX];
	guint32 one[PGATE_DIFF_SKETCH_MAX];
	guint na = pgate_diff_sketch(a, strlen(a), sa);
	guint nb = pgate_diff_sketch(b, strlen(b), sb);
	guint nc = pgate_diff_sketch(c, strlen(c), sc);
	g_autoptr(GString) d = g_string_new("@@ -0,0 +1,200 @@\n");
	guint nbig, none;

	g_assert_cmpuint(na, ==, 8);
	g_assert_cmpuint(nb, ==, 8);
	g_assert_cmpmem(sa, na * 4, sb, nb * 4);
	for (guint i = 1; i < na; i++)
		g_assert_cmpuint(sa[i - 1], <, sa[i]);
	g_assert_cmpfloat(pgate_diff_sketch_similarity(sa, na, sb, nb), ==, 1.0);
	g_assert_cmpuint(nc, ==, 9);
	g_assert_cmpfloat(pgate_diff_sketch_similarity(sa, na, sc, nc), ==,
			  8.0 / 9.0);
	for (guint i = 0; i < 200; i++)
		g_string_append_printf(d, "+line %u\n", i);
	nbig = pgate_diff_sketch(d->str, d->len, big);
	g_assert_cmpuint(nbig, ==, PGATE_DIFF_SKETCH_MAX);
	none = pgate_diff_sketch("@@ -0,0 +1 @@\n+line 7\n", 22, one);
	g_assert_cmpuint(none, ==, 1);
	g_assert_cmpfloat(pgate_diff_sketch_similarity(big, nbig, big, nbig),
			  ==, 1.0);
	g_assert_cmpfloat(pgate_diff_sketch_similarity(one, none, big, nbig),
			  <=, 1.0 / PGATE_DIFF_SKETCH_MAX);
	g_assert_cmpfloat(pgate_diff_sketch_similarity(sa, 0, sb, nb), ==, 0.0);
	g_assert_cmpuint(pgate_diff_sketch("no diff\n", 8, one), ==, 0);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/common/secret/redact", test_redact);
	g_test_add_func("/common/diff-sketch", test_diff_sketch);
	g_test_add_func("/common/secret/paths", test_paths);
	g_test_add_func("/common/curl/codes", test_curl_codes);
	g_test_add_func("/common/config/getters", test_config_getters);
	g_test_add_func("/common/config/secrets", test_config_secrets);
	return g_test_run();
}
