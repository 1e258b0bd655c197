/* test-common.c - common/: the secret registry (secret.c) and the one
 * translation of libcurl's errors (curl.c). */
#include <curl/curl.h>
#include <glib.h>
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

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/common/secret/redact", test_redact);
	g_test_add_func("/common/secret/paths", test_paths);
	g_test_add_func("/common/curl/codes", test_curl_codes);
	return g_test_run();
}
