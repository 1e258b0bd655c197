/* test-patchwork.c - the Patchwork client against the fake Patchwork server
 * (tests/fakes/patchwork.py), which answers as Patchwork 3.1.3 does.
 *
 * One fake runs for the whole program; each test resets it to the seed
 * this program writes at start (users with tokens, two projects, a series,
 * patches with awkward Message-IDs, 70 checks on one patch).  Every error
 * a test sees is checked for its domain and code, and for not containing
 * any token.
 */
#include "report/report.h"
#include "report/patchwork/patchwork-private.h"

#include <gio/gio.h>
#include <glib/gstdio.h>

#include <string.h>

#define TOKEN_CI "0123456789abcdef0123456789abcdef0c0ffee0"
#define TOKEN_OUT "fedcba9876543210fedcba9876543210deadbeef"
#define TOKEN_SUB "5ub5ub5ub5ub5ub5ub5ub5ub5ub5ub5ub5ub5ub5"
#define TOKEN_DELEG "de1e9de1e9de1e9de1e9de1e9de1e9de1e9de1e9"
#define TOKEN_BAD "baadf00dbaadf00dbaadf00dbaadf00dbaadf00d"

#define MSGID_P1 "20240101.1-v2@example.org"
#define MSGID_ODD "odd+chars/=&%?#;x y@[127.0.0.1]"
#define MSGID_LATE "late-arrival@example.org"

static struct {
	char *dir;         /* the program's temporary directory */
	char *seed;        /* DIR/seed.json */
	GSubprocess *fake;
	guint16 port;
	char *base;        /* http://127.0.0.1:PORT */
} G;

/* ---- the fake ----------------------------------------------------------- */

static size_t
collect(char *data, size_t size, size_t nmemb, void *payload)
{
	g_byte_array_append(payload, (const guint8 *)data, size * nmemb);
	return size * nmemb;
}

/* One call to the fake's control interface (or its API); the JSON answer. */
static json_t *
fake_call_at(const char *base, const char *method, const char *path,
	     const char *body, long *out_status)
{
	PW_AUTO(CURL) c = curl_easy_init();
	g_autoptr(GByteArray) buf = g_byte_array_new();
	g_autofree char *url = g_strconcat(base, path, NULL);
	struct curl_slist *h = curl_slist_append(NULL,
						 "Content-Type: application/json");
	long status = 0;
	json_t *j;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, buf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	g_assert_cmpint(curl_easy_perform(c), ==, CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	if (out_status)
		*out_status = status;
	else
		g_assert_cmpint(status, ==, 200);
	j = json_loadb((const char *)buf->data, buf->len, JSON_DECODE_ANY, NULL);
	g_assert_nonnull(j);
	return j;
}

static json_t *
fake_call(const char *method, const char *path, const char *body)
{
	return fake_call_at(G.base, method, path, body, NULL);
}

static void
fake_do(const char *method, const char *path, const char *body)
{
	json_decref(fake_call(method, path, body));
}

/* The checks the fake holds for a patch (all patches: 0). */
static json_t *
fake_checks(gint64 patch)
{
	g_autofree char *path = patch ? g_strdup_printf("/_fake/checks?patch=%"
							G_GINT64_FORMAT, patch)
				      : g_strdup("/_fake/checks");

	return fake_call("GET", path, NULL);
}

static gsize
count_checks(gint64 patch)
{
	PW_AUTO(json_t) j = fake_checks(patch);

	return json_array_size(j);
}

/* How many logged API requests match @method (NULL: any). */
static guint
fake_count_requests(const char *method, const char *auth)
{
	PW_AUTO(json_t) log = fake_call("GET", "/_fake/requests", NULL);
	json_t *e;
	size_t i;
	guint n = 0;

	json_array_foreach(log, i, e) {
		if (method && g_strcmp0(json_string_value(json_object_get(e, "method")),
					method) != 0)
			continue;
		if (auth && g_strcmp0(json_string_value(json_object_get(e, "auth")),
				      auth) != 0)
			continue;
		n++;
	}
	return n;
}

static void
write_file(const char *path, const char *text, int mode)
{
	g_autoptr(GError) error = NULL;

	g_file_set_contents(path, text, -1, &error);
	g_assert_no_error(error);
	g_assert_cmpint(g_chmod(path, mode), ==, 0);
}

/* The seed: generated here, at run time. */
static char *
make_seed(void)
{
	PW_AUTO(json_t) seed = json_pack(
		"{s:[{s:s,s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s}],"
		" s:[{s:s,s:s,s:s}],"
		" s:[{s:i,s:s,s:s,s:[s]},{s:i,s:s,s:s,s:[s]}],"
		" s:[{s:i,s:s,s:s,s:i,s:i},{s:i,s:s,s:s,s:i,s:i}],"
		" s:[{s:s,s:s,s:s,s:i}]}",
		"users",
		"username", "ci", "token", TOKEN_CI, "first_name", "CI",
		"username", "outsider", "token", TOKEN_OUT,
		"username", "sub", "token", TOKEN_SUB,
		"username", "deleg", "token", TOKEN_DELEG,
		"username", "tokenless",
		"people",
		"name", "Sub Mitter", "email", "sub@example.org", "user", "sub",
		"projects",
		"id", 1, "linkname", "demo", "name", "Demo", "maintainers", "ci",
		"id", 2, "linkname", "other", "name", "Other", "maintainers",
		"outsider",
		"series",
		"id", 1, "project", "demo", "name", "foo: do things", "version", 2,
		"total", 3,
		"id", 2, "project", "other", "name", "elsewhere", "version", 1,
		"total", 1,
		"covers",
		"project", "demo", "msgid", "<cover.v2@example.org>", "name",
		"[v2,0/3] foo: do things", "series", 1);
	json_t *patches = json_array(), *checks = json_array();
	char *text;

	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s,s:s,s:i,s:i}", "id", 1, "project", "demo", "msgid",
		"<" MSGID_P1 ">", "name", "[v2,1/3] foo: one", "series", 1,
		"number", 1));
	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s,s:s,s:i,s:i}", "id", 2, "project", "demo", "msgid",
		"<" MSGID_ODD ">", "name", "[v2,2/3] foo: two", "series", 1,
		"number", 2));
	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s,s:s,s:i,s:i,s:s,s:s}", "id", 3, "project", "demo",
		"msgid", "<p3@example.org>", "name", "[v2,3/3] foo: three",
		"series", 1, "number", 3, "submitter", "sub@example.org",
		"delegate", "deleg"));
	/* cross-posted: the same Message-ID in another project */
	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s,s:i}", "id", 4, "project", "other", "msgid",
		"<" MSGID_P1 ">", "series", 2));
	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s}", "id", 5, "project", "demo", "msgid",
		"<no-series@example.org>"));
	json_array_append_new(patches, json_pack(
		"{s:i,s:s,s:s}", "id", 6, "project", "demo", "msgid",
		"<many-checks@example.org>"));
	for (int i = 1; i <= 70; i++) {
		g_autofree char *ctx = g_strdup_printf("ctx-%02d", i);
		g_autofree char *desc = g_strdup_printf("check %d", i);

		json_array_append_new(checks, json_pack(
			"{s:i,s:s,s:s,s:s,s:s}", "patch", 6, "user", i % 2 ? "ci"
			: "outsider", "state", i % 3 ? "success" : "fail",
			"context", ctx, "description", desc));
	}
	json_object_set_new(seed, "patches", patches);
	json_object_set_new(seed, "checks", checks);
	text = json_dumps(seed, JSON_INDENT(1));
	return text;
}

static GSubprocess *
start_fake(const char *prefix, guint16 *out_port)
{
	const char *script = g_getenv("PGATE_PW_FAKE");
	const char *python = g_getenv("PGATE_PYTHON");
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) in = NULL;
	g_autofree char *line = NULL;
	GSubprocess *p;

	g_assert_nonnull(script);
	/* the fake exits when its stdin closes, i.e. when we die */
	p = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
			     G_SUBPROCESS_FLAGS_STDIN_PIPE, &error,
			     python ? python : "/usr/bin/python3", script, "--seed", G.seed,
			     "--prefix", prefix ? prefix : "", "--exit-on-eof", NULL);
	g_assert_no_error(error);
	in = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p));
	line = g_data_input_stream_read_line(in, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(line);
	*out_port = (guint16)g_ascii_strtoull(line, NULL, 10);
	g_assert_cmpuint(*out_port, >, 0);
	return p;
}

static void
stop_fake(GSubprocess *p)
{
	g_subprocess_send_signal(p, SIGTERM);
	g_subprocess_wait(p, NULL, NULL);
	g_object_unref(p);
}

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
	PgatePatchwork *pw;
} Fixture;

/* A client for the fake; @extra: more "key = value" lines. */
static PgatePatchwork *
make_pw_at(const char *url, const char *extra, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *text = g_strdup_printf(
		"[patchwork]\nurl = %s\nproject = demo\n%s\n", url,
		extra ? extra : "");

	g_assert_true(g_key_file_load_from_data(kf, text, -1, G_KEY_FILE_NONE,
						NULL));
	return pgate_patchwork_new(kf, "patchwork", error);
}

static PgatePatchwork *
make_pw(const char *extra)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *url = g_strconcat(G.base, "/", NULL);
	PgatePatchwork *pw = make_pw_at(url, extra, &error);

	g_assert_no_error(error);
	g_assert_nonnull(pw);
	return pw;
}

static char *
token_line(const char *name)
{
	return g_strdup_printf("token_file = %s/%s.token", G.dir, name);
}

static void
setup(Fixture *f, gconstpointer data)
{
	g_autofree char *tok = token_line("ci");
	g_autofree char *extra = g_strdup_printf("%s\nuser = ci\ntimeout = 5",
						 tok);

	fake_do("POST", "/_fake/reset", NULL);
	f->pw = make_pw(extra);
}

static void
teardown(Fixture *f, gconstpointer data)
{
	pgate_patchwork_free(f->pw);
}

/* An error of PGATE_REPORT_ERROR with @code that shows no token. */
static void
assert_error(const GError *error, int code)
{
	static const char *const tokens[] = {
		TOKEN_CI, TOKEN_OUT, TOKEN_SUB, TOKEN_DELEG, TOKEN_BAD,
	};

	g_assert_nonnull(error);
	if (!g_error_matches(error, PGATE_REPORT_ERROR, code))
		g_error("expected report error %d, got %s %d: %s", code,
			g_quark_to_string(error->domain), error->code,
			error->message);
	for (guint i = 0; i < G_N_ELEMENTS(tokens); i++)
		g_assert_null(strstr(error->message, tokens[i]));
}

static void
assert_transient(const GError *error)
{
	assert_error(error, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
}

/* ---- configuration ------------------------------------------------------- */

static void
test_config_valid(void)
{
	g_autofree char *tok = token_line("ci");
	g_autoptr(PgatePatchwork) pw = NULL;
	g_autoptr(GError) error = NULL;

	pw = make_pw_at("https://pw.example.org/patchwork/", tok, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(pw->api, ==, "https://pw.example.org/patchwork/api/1.3/");
	g_assert_cmpstr(pgate_patchwork_get_project(pw), ==, "demo");
	g_assert_true(pgate_patchwork_has_token(pw));
	g_assert_cmpstr(pw->token, ==, TOKEN_CI);
	g_assert_null(pgate_patchwork_get_user(pw));
	g_assert_cmpuint(pw->timeout, ==, 30);
	g_assert_cmpuint(pw->per_page, ==, 100);
	g_clear_pointer(&pw, pgate_patchwork_free);

	pw = make_pw_at("http://[::1]:8080", "token_env = PGATE_TEST_PW_TOKEN\n"
			"api_version = 1.2\nuser = bot\ntimeout = 7", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(pw->api, ==, "http://[::1]:8080/api/1.2/");
	g_assert_cmpstr(pw->token, ==, TOKEN_OUT);
	g_assert_cmpstr(pgate_patchwork_get_user(pw), ==, "bot");
	g_assert_cmpuint(pw->timeout, ==, 7);
	g_assert_cmpuint(pw->connect_timeout, ==, 7);
	g_clear_pointer(&pw, pgate_patchwork_free);

	/* no token: reading works, posting says why not */
	pw = make_pw_at("http://pw.example.org", NULL, &error);
	g_assert_no_error(error);
	g_assert_false(pgate_patchwork_has_token(pw));
	{
		g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);

		g_assert_false(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "no token"));
	}
}

static void
test_config_errors(void)
{
	g_autofree char *ci = token_line("ci");
	g_autofree char *world = g_strdup_printf("token_file = %s/world.token",
						 G.dir);
	g_autofree char *spaces = g_strdup_printf("token_file = %s/spaces.token",
						  G.dir);
	g_autofree char *missing = g_strdup_printf("token_file = %s/nope.token",
						   G.dir);
	g_autofree char *both = g_strdup_printf("%s\ntoken_env = HOME", ci);
	const struct {
		const char *url;
		const char *extra;
		const char *expect;  /* in the message */
	} cases[] = {
		{ "ftp://pw.example.org/", NULL, "url" },
		{ "pw.example.org", NULL, "url" },
		{ "https://bot:secret@pw.example.org/", NULL, "credentials" },
		{ "https://pw.example.org/api/1.3/", NULL, "without /api/" },
		{ "https://pw.example.org/?x=1", NULL, "query" },
		{ "https://pw.example.org/", "api_version = 1.1", "api_version" },
		{ "https://pw.example.org/", "api_version = 2", "api_version" },
		{ "https://pw.example.org/", "api_version = 1.3x", "api_version" },
		{ "https://pw.example.org/", "timeout = soon", "timeout" },
		{ "https://pw.example.org/", "timeout = 0", "timeout" },
		{ "https://pw.example.org/", "per_page = 300", "per_page" },
		{ "https://pw.example.org/", "lookup_retry_min = 600\n"
		  "lookup_retry_max = 60", "lookup_retry_max" },
		{ "https://pw.example.org/", "token = " TOKEN_CI, "token_file" },
		{ "https://pw.example.org/", world, "everyone" },
		{ "https://pw.example.org/", spaces, "one token" },
		{ "https://pw.example.org/", missing, "cannot open" },
		{ "https://pw.example.org/", both, "not both" },
		{ "https://pw.example.org/", "token_env = PGATE_TEST_UNSET_VAR",
		  "not set" },
		{ "https://pw.example.org/", "ca_file = /nonexistent/ca.pem",
		  "ca_file" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		PgatePatchwork *pw = make_pw_at(cases[i].url, cases[i].extra, &error);

		if (pw != NULL)
			g_error("case %u (%s) was accepted", i, cases[i].url);
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "[patchwork]"));
		if (strstr(error->message, cases[i].expect) == NULL)
			g_error("case %u: '%s' not in: %s", i, cases[i].expect,
				error->message);
	}
	/* an empty value is no value, as in every group (common/config.c) */
	{
		g_autoptr(GError) error = NULL;
		PgatePatchwork *pw = make_pw_at("https://pw.example.org/",
						"user =", &error);

		g_assert_no_error(error);
		g_assert_nonnull(pw);
		pgate_patchwork_free(pw);
	}
	/* no project */
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) error = NULL;

		g_key_file_set_string(kf, "pw", "url", "https://pw.example.org/");
		g_assert_null(pgate_patchwork_new(kf, "pw", &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "project"));
	}
}

/* contrib/report-patchwork.conf.example parses, and its values are the
 * defaults it claims to show. */
static void
test_config_example(void)
{
	g_autofree char *path = g_build_filename(g_getenv("SRCDIR"), "contrib",
						 "report-patchwork.conf.example",
						 NULL);
	g_autofree char *tok = g_strdup_printf("%s/ci.token", G.dir);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(PgatePatchwork) ex = NULL, def = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &error));
	g_assert_no_error(error);
	g_key_file_set_string(kf, "patchwork", "token_file", tok);
	ex = pgate_patchwork_new(kf, "patchwork", &error);
	g_assert_no_error(error);
	def = make_pw_at("https://patchwork.example.org/", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(ex->api, ==, def->api);
	g_assert_cmpuint(ex->timeout, ==, def->timeout);
	g_assert_cmpuint(ex->connect_timeout, ==, def->connect_timeout);
	g_assert_cmpuint(ex->per_page, ==, def->per_page);
	g_assert_cmpuint(ex->max_description, ==, def->max_description);
	g_assert_cmpuint(ex->retry_min, ==, def->retry_min);
	g_assert_cmpuint(ex->retry_max, ==, def->retry_max);
	g_assert_cmpuint(ex->give_up, ==, def->give_up);
}

/* ---- lookups ------------------------------------------------------------- */

static void
test_lookup_found(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 patch = -1, series = -1;

	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, "<" MSGID_P1 ">", &patch,
						   &series, &error));
	g_assert_no_error(error);
	/* patch 4 has the same Message-ID in project "other" */
	g_assert_cmpint(patch, ==, 1);
	g_assert_cmpint(series, ==, 1);
	patch = series = -1;
	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, "  " MSGID_P1 "\n",
						   &patch, &series, &error));
	g_assert_cmpint(patch, ==, 1);
	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, "no-series@example.org",
						   &patch, &series, &error));
	g_assert_cmpint(patch, ==, 5);
	g_assert_cmpint(series, ==, 0);
	/* read-only requests carry no credentials */
	g_assert_cmpuint(fake_count_requests("GET", NULL), ==, 3);
	g_assert_cmpuint(fake_count_requests("GET", "none"), ==, 3);
}

static void
test_lookup_odd_chars(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PW_AUTO(json_t) log = NULL;
	const char *query;
	gint64 patch = 0;

	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, "<" MSGID_ODD ">",
						   &patch, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpint(patch, ==, 2);
	/* every reserved character went percent-encoded */
	log = fake_call("GET", "/_fake/requests", NULL);
	query = json_string_value(json_object_get(json_array_get(log, 0), "query"));
	g_assert_nonnull(strstr(query, "msgid=odd%2Bchars%2F%3D%26%25%3F%23%3Bx%20y%40%5B127.0.0.1%5D"));
	g_assert_null(strstr(query, "%3C"));
}

static void
test_lookup_not_yet(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gint64 patch = 0, series = 0;

	g_assert_false(pgate_patchwork_lookup_msgid(f->pw, "<" MSGID_LATE ">",
						    &patch, &series, &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_assert_false(pgate_error_is_transient(error));
	g_assert_nonnull(strstr(error->message, MSGID_LATE));
	g_assert_nonnull(strstr(error->message, "demo"));
	g_clear_error(&error);

	/* Patchwork parses the mail... */
	fake_do("POST", "/_fake/seed",
		"{\"patches\":[{\"id\":40,\"project\":\"demo\",\"series\":1,"
		"\"number\":4,\"msgid\":\"<" MSGID_LATE ">\"}]}");
	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, MSGID_LATE, &patch,
						   &series, &error));
	g_assert_no_error(error);
	g_assert_cmpint(patch, ==, 40);
	g_assert_cmpint(series, ==, 1);
}

static void
test_lookup_invalid(Fixture *f, gconstpointer data)
{
	g_autofree char *long_id = NULL;
	g_autofree char *ok_id = NULL;
	g_autoptr(GError) error = NULL;
	const char *bad[] = { "", "<>", "   " };

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_assert_false(pgate_patchwork_lookup_msgid(f->pw, bad[i], NULL, NULL,
							    &error));
		assert_error(error, PGATE_ERROR_INVALID);
		g_clear_error(&error);
	}
	/* 254 characters + brackets: Patchwork cut it to 255, no lookup can match */
	long_id = g_strnfill(254, 'a');
	g_assert_false(pgate_patchwork_lookup_msgid(f->pw, long_id, NULL, NULL,
						    &error));
	assert_error(error, PGATE_ERROR_INVALID);
	g_assert_nonnull(strstr(error->message, "255"));
	g_clear_error(&error);
	g_assert_cmpuint(fake_count_requests(NULL, NULL), ==, 0);
	/* 253 is still fine (not found here, but asked) */
	ok_id = g_strnfill(253, 'a');
	g_assert_false(pgate_patchwork_lookup_msgid(f->pw, ok_id, NULL, NULL,
						    &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_assert_cmpuint(fake_count_requests(NULL, NULL), ==, 1);
}

/* A Patchwork under a path prefix, e.g. https://host/patchwork/. */
static void
test_lookup_prefix(void)
{
	g_autofree char *tok = token_line("ci");
	g_autofree char *url = NULL, *bad = NULL;
	g_autoptr(PgatePatchwork) pw = NULL, wrong = NULL;
	g_autoptr(GError) error = NULL;
	GSubprocess *p;
	guint16 port;
	gint64 patch = 0;

	p = start_fake("/pw", &port);
	url = g_strdup_printf("http://127.0.0.1:%u/pw/", port);
	pw = make_pw_at(url, tok, &error);
	g_assert_no_error(error);
	g_assert_true(pgate_patchwork_lookup_msgid(pw, MSGID_P1, &patch, NULL,
						   &error));
	g_assert_no_error(error);
	g_assert_cmpint(patch, ==, 1);
	/* without the prefix: an HTML 404, i.e. no Patchwork API there */
	bad = g_strdup_printf("http://127.0.0.1:%u/", port);
	wrong = make_pw_at(bad, tok, &error);
	g_assert_false(pgate_patchwork_lookup_msgid(wrong, MSGID_P1, &patch, NULL,
						    &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "not a Patchwork REST API"));
	stop_fake(p);
}

static void
test_series_get(Fixture *f, gconstpointer data)
{
	g_autoptr(PgatePatchworkSeries) s = NULL;
	g_autoptr(GError) error = NULL;
	const PgatePatchworkPatchRef *r;

	s = pgate_patchwork_series_get(f->pw, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpint(s->id, ==, 1);
	g_assert_cmpint(s->project_id, ==, 1);
	g_assert_cmpstr(s->name, ==, "foo: do things");
	g_assert_cmpuint(s->version, ==, 2);
	g_assert_cmpuint(s->total, ==, 3);
	g_assert_cmpuint(s->received_total, ==, 3);
	g_assert_true(s->received_all);
	g_assert_cmpstr(s->cover_msgid, ==, "<cover.v2@example.org>");
	g_assert_cmpuint(s->patches->len, ==, 3);
	r = g_ptr_array_index(s->patches, 1);
	g_assert_cmpint(r->id, ==, 2);
	g_assert_cmpstr(r->msgid, ==, "<" MSGID_ODD ">");
	g_assert_cmpstr(r->name, ==, "[v2,2/3] foo: two");
	g_assert_cmpint(pgate_patchwork_series_find_patch(s, MSGID_ODD), ==, 2);
	g_assert_cmpint(pgate_patchwork_series_find_patch(s, "<p3@example.org>"),
			==, 3);
	g_assert_cmpint(pgate_patchwork_series_find_patch(s, "nope@x"), ==, 0);
	g_assert_cmpuint(fake_count_requests(NULL, NULL), ==, 1);
	g_clear_pointer(&s, pgate_patchwork_series_free);

	g_assert_null(pgate_patchwork_series_get(f->pw, 2, &error));
	assert_error(error, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_null(pgate_patchwork_series_get(f->pw, 999, &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "series 999"));
}

/* ---- checks ------------------------------------------------------------- */

static void
assert_70_checks(GPtrArray *checks)
{
	g_assert_cmpuint(checks->len, ==, 70);
	for (guint i = 0; i < 70; i++) {
		const PgatePatchworkCheck *c = g_ptr_array_index(checks, i);
		g_autofree char *ctx = g_strdup_printf("ctx-%02u", i + 1);
		g_autofree char *desc = g_strdup_printf("check %u", i + 1);

		g_assert_cmpstr(c->context, ==, ctx);
		g_assert_cmpstr(c->description, ==, desc);
		g_assert_cmpstr(c->user, ==, (i + 1) % 2 ? "ci" : "outsider");
		g_assert_cmpint(c->state, ==, (i + 1) % 3
						? PGATE_PATCHWORK_STATE_SUCCESS
						: PGATE_PATCHWORK_STATE_FAIL);
		g_assert_null(c->target_url);
		g_assert_nonnull(c->date);
		if (i > 0)
			g_assert_cmpint(c->id, >, ((PgatePatchworkCheck *)
						   g_ptr_array_index(checks, i - 1))->id);
	}
}

static void
test_checks_paginated(void)
{
	const struct {
		const char *per_page;
		guint requests;
	} cases[] = {
		{ "per_page = 0", 3 },   /* the server's 30 */
		{ "per_page = 7", 10 },
		{ "per_page = 250", 1 },
		{ NULL, 1 },             /* our default, 100 */
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgatePatchwork) pw = make_pw(cases[i].per_page);
		g_autoptr(GPtrArray) checks = NULL;
		g_autoptr(GError) error = NULL;

		fake_do("POST", "/_fake/reset", NULL);
		checks = pgate_patchwork_list_checks(pw, 6, &error);
		g_assert_no_error(error);
		assert_70_checks(checks);
		g_assert_cmpuint(fake_count_requests("GET", NULL), ==,
				 cases[i].requests);
	}
}

static void
test_checks_empty_and_unknown(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) checks = NULL;
	g_autoptr(GError) error = NULL;

	checks = pgate_patchwork_list_checks(f->pw, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(checks->len, ==, 0);
	g_assert_null(pgate_patchwork_list_checks(f->pw, 9999, &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "patch 9999"));
}

static void
test_post_check(Fixture *f, gconstpointer data)
{
	g_autoptr(PgatePatchworkCheck) c = NULL, posted = NULL;
	g_autoptr(GPtrArray) checks = NULL;
	g_autoptr(GError) error = NULL;
	PW_AUTO(json_t) stored = NULL;
	json_t *s;

	c = pgate_patchwork_check_new(PGATE_PATCHWORK_STATE_FAIL, "patchgate-build",
				      "https://ci.example.org/job/7/?x=1",
				      "  build failed: make exited 2\n");
	g_assert_true(pgate_patchwork_post_check(f->pw, 1, c, &posted, &error));
	g_assert_no_error(error);
	g_assert_cmpint(posted->id, >, 0);
	g_assert_cmpstr(posted->user, ==, "ci");
	g_assert_cmpint(posted->state, ==, PGATE_PATCHWORK_STATE_FAIL);
	g_assert_nonnull(posted->date);

	stored = fake_checks(1);
	g_assert_cmpuint(json_array_size(stored), ==, 1);
	s = json_array_get(stored, 0);
	g_assert_cmpstr(json_string_value(json_object_get(s, "state")), ==, "fail");
	g_assert_cmpstr(json_string_value(json_object_get(s, "context")), ==,
			"patchgate-build");
	g_assert_cmpstr(json_string_value(json_object_get(s, "target_url")), ==,
			"https://ci.example.org/job/7/?x=1");
	g_assert_cmpstr(json_string_value(json_object_get(s, "description")), ==,
			"build failed: make exited 2");
	g_assert_cmpstr(json_string_value(json_object_get(s, "user")), ==, "ci");
	g_assert_cmpint(json_integer_value(json_object_get(s, "id")), ==,
			posted->id);
	/* the token went with the POST only */
	g_assert_cmpuint(fake_count_requests("POST", "token"), ==, 1);
	g_assert_cmpuint(fake_count_requests(NULL, "token"), ==, 1);

	/* read back through the API */
	checks = pgate_patchwork_list_checks(f->pw, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(checks->len, ==, 1);
	g_assert_cmpstr(((PgatePatchworkCheck *)checks->pdata[0])->description, ==,
			"build failed: make exited 2");
}

/* Without "user" in the configuration, the first post tells who we are. */
static void
test_post_learns_user(void)
{
	g_autofree char *tok = token_line("ci");
	g_autoptr(PgatePatchwork) pw = make_pw(tok);
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_PENDING, "patchgate-build", NULL, NULL);
	g_autoptr(GError) error = NULL;

	fake_do("POST", "/_fake/reset", NULL);
	g_assert_null(pgate_patchwork_get_user(pw));
	g_assert_true(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(pgate_patchwork_get_user(pw), ==, "ci");
}

static void
test_post_limits(Fixture *f, gconstpointer data)
{
	g_autofree char *url200 = NULL, *url201 = NULL, *desc = NULL;
	g_autoptr(GError) error = NULL;
	PW_AUTO(json_t) stored = NULL;
	const struct {
		const char *url;
		gboolean kept;
	} urls[] = {
		{ "http://jenkins:8080/job/1/", FALSE },   /* Django wants a TLD */
		{ "jenkins.example.org/job/1/", FALSE },
		{ "file:///var/log/ci.log", FALSE },
		{ "https://ci.example.org/a b", FALSE },
		{ "https://ci.example.org/l\xc3\xb6g", FALSE },
		{ "http://127.0.0.1:8080/job/1/", TRUE },
		{ "https://localhost/x", TRUE },
		{ "https://[::1]:8443/x", TRUE },
		{ "ftp://ftp.example.org/log.txt", TRUE },
		{ "   ", FALSE },
	};
	GString *u = g_string_new("https://ci.example.org/");

	while (u->len < 200)
		g_string_append_c(u, 'x');
	url200 = g_strdup(u->str);
	g_string_append_c(u, 'x');
	url201 = g_string_free(u, FALSE);
	desc = g_strnfill(5000, 'd');

	{
		g_autoptr(PgatePatchworkCheck) a = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, "c200", url200, desc);
		g_autoptr(PgatePatchworkCheck) b = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, "c201", url201, "x\x01y\r\nz\tw");

		g_assert_true(pgate_patchwork_post_check(f->pw, 1, a, NULL, &error));
		g_assert_no_error(error);
		g_assert_true(pgate_patchwork_post_check(f->pw, 1, b, NULL, &error));
		g_assert_no_error(error);
	}
	for (guint i = 0; i < G_N_ELEMENTS(urls); i++) {
		g_autofree char *ctx = g_strdup_printf("url-%u", i);
		g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_WARNING, ctx, urls[i].url, NULL);

		/* a URL Patchwork would refuse never costs the report */
		if (!pgate_patchwork_post_check(f->pw, 2, c, NULL, &error))
			g_error("url %u: %s", i, error->message);
	}

	stored = fake_checks(1);
	g_assert_cmpuint(json_array_size(stored), ==, 2);
	{
		json_t *a = json_array_get(stored, 0), *b = json_array_get(stored, 1);
		const char *d = json_string_value(json_object_get(a, "description"));

		g_assert_cmpstr(json_string_value(json_object_get(a, "target_url")), ==,
				url200);
		g_assert_cmpuint(strlen(d), ==, 1000);
		g_assert_true(g_str_has_suffix(d, "ddd..."));
		g_assert_true(json_is_null(json_object_get(b, "target_url")));
		g_assert_cmpstr(json_string_value(json_object_get(b, "description")),
				==, "xy\nz\tw");
	}
	json_decref(g_steal_pointer(&stored));
	stored = fake_checks(2);
	g_assert_cmpuint(json_array_size(stored), ==, G_N_ELEMENTS(urls));
	for (guint i = 0; i < G_N_ELEMENTS(urls); i++) {
		json_t *t = json_object_get(json_array_get(stored, i), "target_url");

		if (urls[i].kept)
			g_assert_cmpstr(json_string_value(t), ==, urls[i].url);
		else
			g_assert_true(json_is_null(t));
	}
}

static void
test_post_forbidden(Fixture *f, gconstpointer data)
{
	g_autofree char *tok = token_line("outsider");
	g_autofree char *extra = g_strdup_printf("%s\nuser = outsider", tok);
	g_autoptr(PgatePatchwork) pw = make_pw(extra);
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
	g_autoptr(GError) error = NULL;
	PW_AUTO(json_t) stored = NULL;

	g_assert_false(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_false(pgate_error_is_transient(error));
	g_assert_nonnull(strstr(error->message, "'outsider' may not post checks"));
	g_assert_nonnull(strstr(error->message, "patch 1 of project demo"));
	g_assert_nonnull(strstr(error->message, "maintainer"));
	g_assert_nonnull(strstr(error->message, "403"));
	stored = fake_checks(0);
	g_assert_cmpuint(json_array_size(stored), ==, 70);  /* the seed's */
}

/* Patchwork lets the submitter's user and the delegate post too. */
static void
test_post_submitter_delegate(Fixture *f, gconstpointer data)
{
	const char *who[] = { "sub", "deleg" };

	for (guint i = 0; i < G_N_ELEMENTS(who); i++) {
		g_autofree char *tok = token_line(who[i]);
		g_autoptr(PgatePatchwork) pw = make_pw(tok);
		g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
		g_autoptr(GError) error = NULL;

		g_assert_true(pgate_patchwork_post_check(pw, 3, c, NULL, &error));
		g_assert_no_error(error);
		g_assert_false(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
	}
}

static void
test_post_bad_token(Fixture *f, gconstpointer data)
{
	g_autofree char *tok = token_line("bad");
	g_autoptr(PgatePatchwork) pw = make_pw(tok);
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
	g_autoptr(GError) error = NULL;

	/* Patchwork says 403 "Invalid token.", not 401 */
	g_assert_false(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "does not accept our API token"));
	g_assert_nonnull(strstr(error->message, "Invalid token."));
	g_assert_nonnull(strstr(error->message, "token_file"));
	g_clear_error(&error);

	/* a 401 (from a proxy, say) is the same trouble */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"status\",\"status\":401}");
	g_assert_false(pgate_patchwork_post_check(f->pw, 1, c, NULL, &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "401"));
	g_clear_error(&error);

	/* a 403 that is no Patchwork JSON is not blamed on the user */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"status\",\"status\":403}");
	g_assert_false(pgate_patchwork_post_check(f->pw, 1, c, NULL, &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "proxy or firewall"));
	g_assert_cmpuint(count_checks(1), ==, 0);
}

static void
test_post_bad_fields(Fixture *f, gconstpointer data)
{
	const char *bad_ctx[] = { "patchgate/apply", "", "has space", NULL };
	g_autofree char *long_ctx = g_strnfill(256, 'c');
	g_autoptr(GError) error = NULL;

	/* a context Patchwork would refuse is not even sent */
	for (guint i = 0; i < G_N_ELEMENTS(bad_ctx); i++) {
		const char *ctx = bad_ctx[i] ? bad_ctx[i] : long_ctx;
		g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, ctx, NULL, NULL);

		g_assert_false(pgate_patchwork_post_check(f->pw, 1, c, NULL, &error));
		assert_error(error, PGATE_ERROR_INVALID);
		g_clear_error(&error);
	}
	g_assert_cmpuint(fake_count_requests(NULL, NULL), ==, 0);

	/* what the server's 400s turn into: its field messages, permanent */
	{
		const char *bodies[] = {
			"{\"state\":\"passed\",\"context\":\"a/b\",\"target_url\":\"x\"}",
			"{}",
			"{\"state\":",
		};
		const char *expect[] = {
			"state: \"passed\" is not a valid choice.; target_url: Enter a "
			"valid URL.; context: Enter a valid \"slug\" consisting of "
			"letters, numbers, underscores or hyphens.",
			"state: A check must have a state.",
			"JSON parse error - Expecting value: line 1 column 10 (char 9)",
		};
		g_autofree char *url = g_strdup_printf("%spatches/1/checks/",
						       f->pw->api);

		for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
			PwResponse r = { 0 };

			g_assert_true(pgate_patchwork__request(f->pw, "POST", url,
							       bodies[i], TRUE, &r,
							       &error));
			g_assert_cmpint(r.status, ==, 400);
			g_assert_false(pgate_patchwork__check_status(
				f->pw, &r, PW_REQ_POST_CHECK, "POST", url, "patch 1",
				&error));
			assert_error(error, PGATE_ERROR_INVALID);
			g_assert_false(pgate_error_is_transient(error));
			if (strstr(error->message, expect[i]) == NULL)
				g_error("'%s' not in: %s", expect[i], error->message);
			g_clear_error(&error);
			pgate_patchwork__response_clear(&r);
		}
	}
}

static void
test_post_unknown_patch(Fixture *f, gconstpointer data)
{
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
	g_autoptr(GError) error = NULL;

	g_assert_false(pgate_patchwork_post_check(f->pw, 424242, c, NULL, &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "patch 424242 not found"));
}

/* ---- transient trouble ---------------------------------------------------- */

static void
expect_transient_post(PgatePatchwork *pw, const char *fault, const char *what)
{
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
	g_autoptr(GError) error = NULL;

	if (fault)
		fake_do("POST", "/_fake/fault", fault);
	g_assert_false(pgate_patchwork_post_check(pw, 1, c, NULL, &error));
	assert_transient(error);
	if (what && strstr(error->message, what) == NULL)
		g_error("'%s' not in: %s", what, error->message);
}

static void
test_transient(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) checks = NULL;
	g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build", NULL, NULL);
	gint64 patch = 0;

	expect_transient_post(f->pw, "{\"kind\":\"status\",\"status\":500}", "500");
	expect_transient_post(f->pw, "{\"kind\":\"status\",\"status\":502}", "502");
	expect_transient_post(f->pw, "{\"kind\":\"status\",\"status\":503,"
			      "\"retry_after\":30}", "503");
	expect_transient_post(f->pw, "{\"kind\":\"status\",\"status\":429}", "429");
	expect_transient_post(f->pw, "{\"kind\":\"drop\"}", NULL);
	g_assert_cmpuint(count_checks(1), ==, 0);

	/* a read fails the same way, on the second page too */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"status\",\"status\":504,"
		"\"path\":\"checks\"}");
	g_assert_null(pgate_patchwork_list_checks(f->pw, 6, &error));
	assert_transient(error);
	g_clear_error(&error);
	{
		g_autoptr(PgatePatchwork) pw = make_pw("per_page = 30");

		fake_do("POST", "/_fake/requests/clear", NULL);
		fake_do("POST", "/_fake/fault", "{\"kind\":\"drop\","
			"\"path\":\"checks/\\\\?.*page=2\",\"method\":\"GET\","
			"\"count\":2}");
		/* page 1 arrived, page 2 was dropped twice (curl sends a GET
		 * again by itself when a reused connection dies, once): no
		 * partial list */
		g_assert_null(pgate_patchwork_list_checks(pw, 6, &error));
		assert_transient(error);
		g_clear_error(&error);
		g_assert_cmpuint(fake_count_requests("GET", NULL), ==, 3);
	}
	fake_do("POST", "/_fake/fault", "{\"kind\":\"down\"}");
	g_assert_false(pgate_patchwork_lookup_msgid(f->pw, MSGID_P1, &patch, NULL,
						    &error));
	assert_transient(error);
	g_clear_error(&error);
	fake_do("POST", "/_fake/fault", "{\"kind\":\"up\"}");

	/* and everything works again */
	g_assert_true(pgate_patchwork_lookup_msgid(f->pw, MSGID_P1, &patch, NULL,
						   &error));
	g_assert_no_error(error);
	checks = pgate_patchwork_list_checks(f->pw, 6, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(checks->len, ==, 70);
	g_assert_true(pgate_patchwork_post_check(f->pw, 1, c, NULL, &error));
	g_assert_no_error(error);
}

static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autofree char *tok = token_line("ci");
	g_autofree char *extra = g_strdup_printf("%s\ntimeout = 1", tok);
	g_autoptr(PgatePatchwork) pw = make_pw(extra);
	gint64 t0 = g_get_monotonic_time();

	expect_transient_post(pw, "{\"kind\":\"stall\",\"seconds\":2.5}",
			      "timed out");
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 2 * G_USEC_PER_SEC);
	/* the slow server still stores it: a transient error says nothing
	 * about whether the check arrived (hence list-and-decide) */
	while (count_checks(1) == 0) {
		g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
		g_usleep(100000);
	}
	g_assert_cmpuint(count_checks(1), ==, 1);
}

static void
test_refused(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocket) s = g_socket_new(G_SOCKET_FAMILY_IPV4,
					    G_SOCKET_TYPE_STREAM,
					    G_SOCKET_PROTOCOL_TCP, &error);
	g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
	g_autoptr(GSocketAddress) bound = NULL;
	g_autoptr(PgatePatchwork) pw = NULL;
	g_autofree char *url = NULL;
	guint16 port;

	g_assert_true(g_socket_bind(s, any, FALSE, &error));
	bound = g_socket_get_local_address(s, &error);
	port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
	g_socket_close(s, NULL);  /* nothing listens there now */
	url = g_strdup_printf("http://127.0.0.1:%u/", port);
	pw = make_pw_at(url, NULL, &error);
	g_assert_no_error(error);
	g_assert_false(pgate_patchwork_lookup_msgid(pw, MSGID_P1, NULL, NULL,
						    &error));
	assert_transient(error);
}

static void
test_redirect_and_html(Fixture *f, gconstpointer data)
{
	g_autofree char *url = g_strdup_printf("%spatches", f->pw->api);
	g_autoptr(GError) error = NULL;
	PwResponse r = { 0 };

	/* Django's APPEND_SLASH: a 301 we never follow */
	g_assert_true(pgate_patchwork__request(f->pw, "POST", url, "{}", TRUE, &r,
					       &error));
	g_assert_cmpint(r.status, ==, 301);
	g_assert_false(pgate_patchwork__check_status(f->pw, &r, PW_REQ_READ,
						     "POST", url, NULL, &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "patches/"));
	g_assert_nonnull(strstr(error->message, "redirect"));
	pgate_patchwork__response_clear(&r);
}

/* ---- exactly once ------------------------------------------------------- */

static void
test_decided_exactly_once(Fixture *f, gconstpointer data)
{
	g_autoptr(PgatePatchworkCheck) pending = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_PENDING, "patchgate-build",
		"https://ci.example.org/job/1/", "queued");
	g_autoptr(PgatePatchworkCheck) done = pgate_patchwork_check_new(
		PGATE_PATCHWORK_STATE_SUCCESS, "patchgate-build",
		"https://ci.example.org/job/1/", "build and 12 tests passed ");
	g_autoptr(GError) error = NULL;
	PgatePatchworkDecision d;

	g_assert_true(pgate_patchwork_post_check_decided(f->pw, 1, pending, &d,
							 &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_POST);
	/* the same again (a retry after a crash): not posted twice */
	g_assert_true(pgate_patchwork_post_check_decided(f->pw, 1, pending, &d,
							 &error));
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_SKIP_SAME);
	g_assert_cmpuint(count_checks(1), ==, 1);

	/* the answer to the final post is lost: the server has it anyway */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"drop_after\",\"method\":\"POST\"}");
	g_assert_false(pgate_patchwork_post_check_decided(f->pw, 1, done, &d,
							  &error));
	assert_transient(error);
	g_clear_error(&error);
	g_assert_cmpuint(count_checks(1), ==, 2);
	/* the outbox retries: found, not doubled */
	g_assert_true(pgate_patchwork_post_check_decided(f->pw, 1, done, &d,
							 &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_SKIP_SAME);
	g_assert_cmpuint(count_checks(1), ==, 2);

	/* a late "pending" never hides the final state */
	g_assert_true(pgate_patchwork_post_check_decided(f->pw, 1, pending, &d,
							 &error));
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_SKIP_DOWNGRADE);
	g_assert_cmpuint(count_checks(1), ==, 2);

	/* another user's check of the same context is not ours */
	fake_do("POST", "/_fake/seed", "{\"checks\":[{\"patch\":2,\"user\":"
		"\"outsider\",\"state\":\"success\",\"context\":\"patchgate-build\","
		"\"target_url\":\"https://ci.example.org/job/1/\",\"description\":"
		"\"build and 12 tests passed\"}]}");
	g_assert_true(pgate_patchwork_post_check_decided(f->pw, 2, done, &d,
							 &error));
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_POST);
	g_assert_cmpuint(count_checks(2), ==, 2);
}

static PgatePatchworkCheck *
existing(gint64 id, PgatePatchworkState state, const char *ctx,
	 const char *user, const char *url, const char *desc)
{
	PgatePatchworkCheck *c = pgate_patchwork_check_new(state, ctx, url, desc);

	c->id = id;
	c->user = g_strdup(user);
	return c;
}

static PgatePatchworkDecision
decide(GPtrArray *have, PgatePatchworkCheck **ours, PgatePatchworkState st,
       const char *url, const char *desc, const char *user)
{
	g_clear_pointer(ours, pgate_patchwork_check_free);
	*ours = pgate_patchwork_check_new(st, "pg-build", url, desc);
	return pgate_patchwork_check_decide(have, *ours, user);
}

static void
test_decide(void)
{
	g_autoptr(GPtrArray) have = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_patchwork_check_free);
	g_autoptr(PgatePatchworkCheck) ours = NULL;
	const PgatePatchworkState S = PGATE_PATCHWORK_STATE_SUCCESS,
				  P = PGATE_PATCHWORK_STATE_PENDING,
				  F = PGATE_PATCHWORK_STATE_FAIL,
				  W = PGATE_PATCHWORK_STATE_WARNING;

#define DECIDE(st, url, desc, user) decide(have, &ours, st, url, desc, user)
	g_assert_cmpint(DECIDE(P, NULL, NULL, "ci"), ==, PGATE_PATCHWORK_POST);
	g_assert_cmpint(pgate_patchwork_check_decide(NULL, ours, "ci"), ==,
			PGATE_PATCHWORK_POST);
	g_ptr_array_add(have, existing(1, P, "pg-build", "ci", "http://a.org/",
				       NULL));
	g_ptr_array_add(have, existing(2, F, "pg-other", "ci", NULL, NULL));
	g_ptr_array_add(have, existing(3, F, "pg-build", "bob", NULL, NULL));
	/* same state/url, NULL vs "" description: the same */
	g_assert_cmpint(DECIDE(P, "http://a.org/", "", "ci"), ==,
			PGATE_PATCHWORK_SKIP_SAME);
	g_assert_cmpint(DECIDE(P, "http://a.org/", "queued", "ci"), ==,
			PGATE_PATCHWORK_POST);
	g_assert_cmpint(DECIDE(P, "http://b.org/", NULL, "ci"), ==,
			PGATE_PATCHWORK_POST);
	g_assert_cmpint(DECIDE(S, "http://a.org/", NULL, "ci"), ==,
			PGATE_PATCHWORK_POST);
	/* any user: bob's fail (id 3) is the newest */
	g_assert_cmpint(DECIDE(P, "http://a.org/", NULL, NULL), ==,
			PGATE_PATCHWORK_SKIP_DOWNGRADE);
	g_assert_cmpint(DECIDE(F, NULL, NULL, NULL), ==, PGATE_PATCHWORK_SKIP_SAME);
	/* ours turns final; later a pending must not replace it */
	g_ptr_array_add(have, existing(7, W, "pg-build", "ci", "http://a.org/",
				       "3 new warnings"));
	g_assert_cmpint(DECIDE(W, "http://a.org/", "3 new warnings", "ci"), ==,
			PGATE_PATCHWORK_SKIP_SAME);
	g_assert_cmpint(DECIDE(P, "http://a.org/", NULL, "ci"), ==,
			PGATE_PATCHWORK_SKIP_DOWNGRADE);
	g_assert_cmpint(DECIDE(P, "http://a.org/", "3 new warnings", "ci"), ==,
			PGATE_PATCHWORK_SKIP_DOWNGRADE);
	/* a changed final result is posted */
	g_assert_cmpint(DECIDE(S, "http://a.org/", "3 new warnings", "ci"), ==,
			PGATE_PATCHWORK_POST);
	g_assert_cmpint(DECIDE(W, "http://a.org/", "4 new warnings", "ci"), ==,
			PGATE_PATCHWORK_POST);
	/* the newest counts, not an older identical one (by id, any order) */
	g_ptr_array_insert(have, 0, existing(9, F, "pg-build", "ci", NULL, "x"));
	g_assert_cmpint(DECIDE(W, "http://a.org/", "3 new warnings", "ci"), ==,
			PGATE_PATCHWORK_POST);
	g_assert_cmpint(DECIDE(F, NULL, "x", "ci"), ==, PGATE_PATCHWORK_SKIP_SAME);
#undef DECIDE
	g_assert_cmpstr(pgate_patchwork_decision_to_string(
				PGATE_PATCHWORK_SKIP_DOWNGRADE), ==, "skip-downgrade");
}

/* ---- pure helpers ----------------------------------------------------------- */

static void
test_context(void)
{
	g_autofree char *c255 = g_strnfill(255, 'a');
	g_autofree char *c256 = g_strnfill(256, 'a');
	const struct {
		const char *prefix, *name, *expect;
	} names[] = {
		{ "patchgate", "build / arm64", "patchgate-build-arm64" },
		{ "patchgate", "apply", "patchgate-apply" },
		{ NULL, "  ", "default" },
		{ NULL, "kunit_x86-64", "kunit_x86-64" },
		{ "pg", "\xc3\xa9t\xc3\xa9!", "pg-t" },
		{ "", "--x--", "x" },
	};

	g_assert_true(pgate_patchwork_context_is_valid("patchgate-apply"));
	g_assert_true(pgate_patchwork_context_is_valid("A_b-9"));
	g_assert_true(pgate_patchwork_context_is_valid(c255));
	g_assert_false(pgate_patchwork_context_is_valid(c256));
	g_assert_false(pgate_patchwork_context_is_valid("patchgate/apply"));
	g_assert_false(pgate_patchwork_context_is_valid(""));
	g_assert_false(pgate_patchwork_context_is_valid(NULL));
	g_assert_false(pgate_patchwork_context_is_valid("caf\xc3\xa9"));
	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *c = pgate_patchwork_context_from_name(names[i].prefix,
								       names[i].name);

		g_assert_cmpstr(c, ==, names[i].expect);
		g_assert_true(pgate_patchwork_context_is_valid(c));
	}
	{
		g_autofree char *c = pgate_patchwork_context_from_name("p", c256);

		g_assert_cmpuint(strlen(c), ==, 255);
		g_assert_true(pgate_patchwork_context_is_valid(c));
	}
}

static void
test_states(void)
{
	PgatePatchworkState s;

	for (int i = 0; i <= 3; i++) {
		g_assert_true(pgate_patchwork_state_from_string(
			pgate_patchwork_state_to_string(i), &s));
		g_assert_cmpint(s, ==, i);
	}
	g_assert_cmpstr(pgate_patchwork_state_to_string(PGATE_PATCHWORK_STATE_FAIL),
			==, "fail");
	g_assert_false(pgate_patchwork_state_from_string("SUCCESS", &s));
	g_assert_false(pgate_patchwork_state_from_string("passed", &s));
}

static void
test_normalize(void)
{
	g_autoptr(PgatePatchworkCheck) in = NULL, out = NULL, again = NULL;
	g_autofree char *multi = NULL;
	GString *d = g_string_new(NULL);

	/* cut at a character boundary, counted in characters */
	for (int i = 0; i < 30; i++)
		g_string_append(d, "\xc3\xa4");  /* a-umlaut, 2 bytes */
	multi = g_string_free(d, FALSE);
	in = pgate_patchwork_check_new(PGATE_PATCHWORK_STATE_FAIL, "c",
				       " https://ci.example.org/x ", multi);
	out = pgate_patchwork_check_normalize(in, 20);
	g_assert_cmpstr(out->target_url, ==, "https://ci.example.org/x");
	g_assert_true(g_utf8_validate(out->description, -1, NULL));
	g_assert_cmpint(g_utf8_strlen(out->description, -1), ==, 20);
	g_assert_true(g_str_has_suffix(out->description, "\xc3\xa4..."));
	/* normalising twice changes nothing */
	again = pgate_patchwork_check_normalize(out, 20);
	g_assert_cmpstr(again->description, ==, out->description);
	g_clear_pointer(&in, pgate_patchwork_check_free);
	g_clear_pointer(&out, pgate_patchwork_check_free);

	/* invalid UTF-8 repaired, white space only becomes NULL */
	in = pgate_patchwork_check_new(PGATE_PATCHWORK_STATE_FAIL, "c", "",
				       "bad \xff byte");
	out = pgate_patchwork_check_normalize(in, 100);
	g_assert_null(out->target_url);
	g_assert_true(g_utf8_validate(out->description, -1, NULL));
	g_assert_true(g_str_has_prefix(out->description, "bad "));
	g_clear_pointer(&in, pgate_patchwork_check_free);
	g_clear_pointer(&out, pgate_patchwork_check_free);
	in = pgate_patchwork_check_new(PGATE_PATCHWORK_STATE_FAIL, "c", NULL,
				       " \n\t \xc2\xa0");
	out = pgate_patchwork_check_normalize(in, 100);
	g_assert_null(out->description);
}

static void
test_retry(void)
{
	g_autoptr(PgatePatchwork) pw = make_pw("lookup_retry_min = 60\n"
					       "lookup_retry_max = 600\n"
					       "lookup_give_up = 3600");
	g_autofree char *msg = NULL, *expect = NULL;
	const gint64 t0 = 1000000;
	const gint64 delays[] = { 60, 120, 240, 480, 600, 600 };
	gint64 now = t0, next = 0;
	guint attempts = 0;

	for (guint i = 0; i < G_N_ELEMENTS(delays); i++) {
		g_assert_true(pgate_patchwork_lookup_retry_at(pw, t0, now, i + 1,
							      &next));
		g_assert_cmpint(next - now, ==, delays[i]);
		now = next;
	}
	/* continue until given up; the last try is at the deadline */
	attempts = G_N_ELEMENTS(delays);
	while (pgate_patchwork_lookup_retry_at(pw, t0, now, ++attempts, &next)) {
		g_assert_cmpint(next, <=, t0 + 3600);
		now = next;
	}
	g_assert_cmpint(now, ==, t0 + 3600);
	g_assert_cmpuint(attempts, ==, 10);
	msg = pgate_patchwork_lookup_give_up_message(pw, "<a\nb@x>", attempts,
						     now - t0);
	expect = g_strdup_printf(
		"patchwork: msgid=<a b@x> not found in project demo at %s after 10 "
		"lookups over 3600 s: giving up (does this Patchwork receive the "
		"list? lookup_give_up in [patchwork] sets how long to wait)", G.base);
	g_assert_cmpstr(msg, ==, expect);
}

static void
test_verify(Fixture *f, gconstpointer data)
{
	g_autofree char *out_tok = token_line("outsider");
	g_autofree char *bad_tok = token_line("bad");
	g_autofree char *outsider = g_strdup_printf("%s\nuser = outsider", out_tok);
	g_autoptr(GError) error = NULL;

	g_assert_true(pgate_patchwork_verify(f->pw, &error));
	g_assert_no_error(error);
	{
		g_autoptr(PgatePatchwork) pw = make_pw(outsider);

		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message,
					"'outsider' is not a maintainer of project demo"));
		g_clear_error(&error);
	}
	{
		g_autoptr(PgatePatchwork) pw = make_pw(bad_tok);

		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "Invalid token."));
		g_clear_error(&error);
	}
	{
		g_autoptr(GError) local = NULL;
		g_autofree char *url = g_strconcat(G.base, "/", NULL);
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(PgatePatchwork) pw = NULL;

		g_key_file_set_string(kf, "pw", "url", url);
		g_key_file_set_string(kf, "pw", "project", "nosuch");
		pw = pgate_patchwork_new(kf, "pw", &local);
		g_assert_no_error(local);
		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "nosuch does not exist"));
	}
}

/* Without "user", the token's user is found among the maintainers (the
 * one whose settings Patchwork shows), and only its checks count as
 * ours: another user's identical check does not stop a post. */
static void
test_verify_token_user(void)
{
	g_autofree char *ci_tok = token_line("ci");
	g_autofree char *out_tok = token_line("outsider");
	g_autofree char *out_as_ci = g_strdup_printf("%s\nuser = ci", out_tok);
	g_autoptr(GError) error = NULL;

	fake_do("POST", "/_fake/reset", NULL);
	fake_do("POST", "/_fake/seed", "{\"users\":[{\"username\":\"bot\","
		"\"token\":\"b0tb0tb0t\"}]}");
	fake_do("POST", "/_fake/seed", "{\"projects\":[{\"linkname\":\"busy\","
		"\"maintainers\":[\"outsider\",\"sub\",\"ci\"]}]}");
	{
		g_autoptr(PgatePatchwork) pw = make_pw(ci_tok);
		g_autoptr(PgatePatchworkCheck) c = pgate_patchwork_check_new(
			PGATE_PATCHWORK_STATE_SUCCESS, "build", NULL, "passed");
		PgatePatchworkDecision d;

		fake_do("POST", "/_fake/seed", "{\"checks\":[{\"patch\":1,"
			"\"user\":\"outsider\",\"state\":\"success\","
			"\"context\":\"build\",\"description\":\"passed\"}]}");
		g_assert_null(pgate_patchwork_get_user(pw));
		g_assert_true(pgate_patchwork_verify(pw, &error));
		g_assert_no_error(error);
		g_assert_cmpstr(pgate_patchwork_get_user(pw), ==, "ci");
		fake_do("POST", "/_fake/requests/clear", NULL);
		/* verified once: no more requests */
		g_assert_true(pgate_patchwork_verify(pw, &error));
		g_assert_cmpuint(fake_count_requests(NULL, NULL), ==, 0);
		g_assert_true(pgate_patchwork_post_check_decided(pw, 1, c, &d,
								 &error));
		g_assert_no_error(error);
		g_assert_cmpint(d, ==, PGATE_PATCHWORK_POST);
		g_assert_cmpuint(count_checks(1), ==, 2);
	}
	{
		/* the third of three maintainers: each asked in turn */
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autofree char *url = g_strconcat(G.base, "/", NULL);
		g_autofree char *tokfile = g_strdup_printf("%s/ci.token", G.dir);
		g_autoptr(PgatePatchwork) pw = NULL;

		g_key_file_set_string(kf, "pw", "url", url);
		g_key_file_set_string(kf, "pw", "project", "busy");
		g_key_file_set_string(kf, "pw", "token_file", tokfile);
		pw = pgate_patchwork_new(kf, "pw", &error);
		g_assert_no_error(error);
		fake_do("POST", "/_fake/requests/clear", NULL);
		g_assert_true(pgate_patchwork_verify(pw, &error));
		g_assert_no_error(error);
		g_assert_cmpstr(pgate_patchwork_get_user(pw), ==, "ci");
		/* the project, the token, three users */
		g_assert_cmpuint(fake_count_requests("GET", NULL), ==, 5);
		g_assert_cmpuint(fake_count_requests("GET", "token"), ==, 4);
	}
	{
		/* a valid token of a user who maintains another project */
		g_autoptr(PgatePatchwork) pw = make_pw(out_tok);

		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message,
					"the token's user is not a maintainer of "
					"project demo (maintainers: ci)"));
		g_assert_null(pgate_patchwork_get_user(pw));
		g_clear_error(&error);
	}
	{
		/* a maintainer's name, somebody else's token */
		g_autoptr(PgatePatchwork) pw = make_pw(out_as_ci);

		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "the token is not 'ci''s"));
		g_clear_error(&error);
	}
	{
		/* the token of a user nobody made a maintainer */
		g_autofree char *p = g_strdup_printf("%s/bot.token", G.dir);
		g_autofree char *line = g_strdup_printf("token_file = %s", p);
		g_autoptr(PgatePatchwork) pw = NULL;

		write_file(p, "b0tb0tb0t\n", 0600);
		pw = make_pw(line);
		g_assert_false(pgate_patchwork_verify(pw, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "not a maintainer"));
		g_clear_error(&error);
	}
}

/* The one place a token could slip into a message, defended anyway. */
static void
test_token_scrubbed(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;

	pgate_patchwork__set_error(f->pw, &error, PGATE_ERROR_FAILED,
				   "server said: %s and %s", TOKEN_CI, TOKEN_CI);
	g_assert_cmpstr(error->message, ==, "server said: [token] and [token]");
}

static void
test_link_header(void)
{
	const struct {
		const char *link, *next;
	} cases[] = {
		{ "<http://h/api/1.3/x/?page=2>; rel=\"next\", <http://h/api/1.3/x/>; "
		  "rel=\"first\"", "http://h/api/1.3/x/?page=2" },
		{ "<http://h/a/>; rel=\"prev\", <http://h/a/?page=3>; rel=next",
		  "http://h/a/?page=3" },
		{ "<http://h/a/?p=1,2>; title=\"a, b\"; rel=\"last next\"",
		  "http://h/a/?p=1,2" },
		{ "<http://h/a/>; rel=\"first\", <http://h/a/?page=9>; rel=\"last\"",
		  NULL },
		{ "", NULL },
		{ "garbage; rel=next", NULL },
		{ "<http://h/unterminated; rel=next", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *n = pgate_patchwork__link_next(cases[i].link);

		g_assert_cmpstr(n, ==, cases[i].next);
	}
}

static void
test_rebase_url(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *a = NULL, *b = NULL, *want = NULL;

	/* a proxy's http:// link stays on our origin */
	a = pgate_patchwork__rebase_url(f->pw, "http://127.0.0.1/api/1.3/x/?page=2&q=%40",
					&error);
	g_assert_no_error(error);
	want = g_strdup_printf("%s/api/1.3/x/?page=2&q=%%40", G.base);
	g_assert_cmpstr(a, ==, want);
	b = pgate_patchwork__rebase_url(f->pw, "https://evil.example.org/api/", &error);
	g_assert_null(b);
	assert_error(error, PGATE_ERROR_FAILED);
}

/* ---- patch states ([patchwork] set_state) -------------------------------- */

static char *
state_of(PgatePatchwork *pw, gint64 patch, char **out_ref)
{
	g_autoptr(GError) error = NULL;
	char *state = NULL;

	g_assert_true(pgate_patchwork_get_patch_state(pw, patch, &state, out_ref,
						      &error));
	g_assert_no_error(error);
	return state;
}

static guint
count_events(gint64 patch)
{
	g_autofree char *path = g_strdup_printf("/_fake/events?patch=%"
						G_GINT64_FORMAT, patch);
	PW_AUTO(json_t) j = fake_call("GET", path, NULL);

	return json_array_size(j);
}

static PgatePatchwork *
make_pw_as(const char *who)
{
	g_autofree char *tok = token_line(who);
	g_autofree char *extra = g_strdup_printf("%s\ntimeout = 5", tok);

	return make_pw(extra);
}

static void
test_state_set(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree char *state = NULL, *ref = NULL;
	PW_AUTO(json_t) fe = NULL;
	const PgatePatchworkStateEvent *ev;

	state = state_of(f->pw, 1, &ref);
	g_assert_cmpstr(state, ==, "new");
	g_assert_null(ref);
	events = pgate_patchwork_list_state_events(f->pw, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(events->len, ==, 0);
	g_clear_pointer(&events, g_ptr_array_unref);

	g_assert_true(pgate_patchwork_set_patch_state(f->pw, 1, "accepted",
						      "0123456789abcdef", &error));
	g_assert_no_error(error);
	g_clear_pointer(&state, g_free);
	g_clear_pointer(&ref, g_free);
	state = state_of(f->pw, 1, &ref);
	g_assert_cmpstr(state, ==, "accepted");
	g_assert_cmpstr(ref, ==, "0123456789abcdef");
	events = pgate_patchwork_list_state_events(f->pw, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(events->len, ==, 1);
	ev = events->pdata[0];
	g_assert_true(ev->has_actor);
	g_assert_cmpstr(ev->actor, ==, "ci");
	g_assert_cmpstr(ev->previous_state, ==, "new");
	g_assert_cmpstr(ev->current_state, ==, "accepted");
	/* the fake's own record of it */
	fe = fake_call("GET", "/_fake/events?patch=1", NULL);
	g_assert_cmpuint(json_array_size(fe), ==, 1);
	g_assert_cmpstr(json_string_value(json_object_get(json_array_get(fe, 0),
							  "actor")), ==, "ci");
	/* the same state again: 200, and no event (nothing changed) */
	g_assert_true(pgate_patchwork_set_patch_state(f->pw, 1, "accepted", NULL,
						      &error));
	g_assert_no_error(error);
	g_assert_cmpuint(count_events(1), ==, 1);
	/* the other patches' events are not this one's */
	g_assert_cmpuint(count_events(2), ==, 0);
}

static void
test_state_errors(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgatePatchwork) out = make_pw_as("outsider");
	g_autoptr(PgatePatchwork) anon = make_pw("");
	g_autofree char *state = NULL;
	long status = 0;
	PW_AUTO(json_t) j = NULL;

	/* 400: a state this Patchwork does not have */
	g_assert_false(pgate_patchwork_set_patch_state(f->pw, 1, "bogus", NULL,
						       &error));
	assert_error(error, PGATE_ERROR_INVALID);
	g_assert_nonnull(strstr(error->message, "Invalid state bogus"));
	g_clear_error(&error);
	/* not a slug: refused before sending */
	g_assert_false(pgate_patchwork_set_patch_state(f->pw, 1, "Accepted", NULL,
						       &error));
	assert_error(error, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	/* 403 for a user who is no maintainer, delegate or submitter */
	g_assert_false(pgate_patchwork_set_patch_state(out, 1, "accepted", NULL,
						       &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "may not change the state"));
	g_clear_error(&error);
	/* no token: nothing sent; the fake answers an anonymous PATCH 403 */
	g_assert_false(pgate_patchwork_set_patch_state(anon, 1, "accepted", NULL,
						       &error));
	assert_error(error, PGATE_ERROR_CONFIG);
	g_clear_error(&error);
	j = fake_call_at(G.base, "PATCH", "/api/1.3/patches/1/",
			 "{\"state\":\"accepted\"}", &status);
	g_assert_cmpint(status, ==, 403);
	g_assert_cmpstr(json_string_value(json_object_get(j, "detail")), ==,
			"Authentication credentials were not provided.");
	/* 404 */
	g_assert_false(pgate_patchwork_set_patch_state(f->pw, 999, "accepted",
						       NULL, &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	g_assert_false(pgate_patchwork_get_patch_state(f->pw, 999, &state, NULL,
						       &error));
	assert_error(error, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&error);
	state = state_of(f->pw, 1, NULL);
	g_assert_cmpstr(state, ==, "new");
	g_assert_cmpuint(count_events(1), ==, 0);

	/* 5xx: transient, nothing changed */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"status\",\"status\":502,"
		"\"method\":\"PATCH\"}");
	g_assert_false(pgate_patchwork_set_patch_state(f->pw, 1, "accepted", NULL,
						       &error));
	assert_transient(error);
	g_clear_error(&error);
	fake_do("POST", "/_fake/fault", "{\"kind\":\"status\",\"status\":503,"
		"\"path\":\"events\"}");
	g_assert_null(pgate_patchwork_list_state_events(f->pw, 1, &error));
	assert_transient(error);
	g_clear_error(&error);
	g_assert_cmpuint(count_events(1), ==, 0);
}

static void
test_state_decided(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgatePatchwork) human = make_pw_as("deleg");
	g_autofree char *why = NULL, *state = NULL, *ref = NULL;
	PgatePatchworkStateDecision d = PGATE_PATCHWORK_STATE_SET;

	/* the answer to the PATCH is lost: the server has it anyway */
	fake_do("POST", "/_fake/fault", "{\"kind\":\"drop_after\","
		"\"method\":\"PATCH\"}");
	g_assert_false(pgate_patchwork_set_patch_state_decided(
		f->pw, 1, "accepted", "abc", &d, NULL, &error));
	assert_transient(error);
	g_clear_error(&error);
	g_assert_cmpuint(count_events(1), ==, 1);
	/* the retry finds it done: not changed twice */
	g_assert_true(pgate_patchwork_set_patch_state_decided(
		f->pw, 1, "accepted", "abc", &d, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_STATE_SKIP_SAME);
	g_assert_cmpuint(count_events(1), ==, 1);

	/* a human's state (patch 3's delegate) is left alone */
	g_assert_true(pgate_patchwork_set_patch_state(human, 3,
						      "changes-requested", NULL,
						      &error));
	g_assert_no_error(error);
	g_assert_true(pgate_patchwork_set_patch_state_decided(
		f->pw, 3, "accepted", "abc", &d, &why, &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	g_assert_nonnull(strstr(why, "changes-requested"));
	g_clear_pointer(&why, g_free);
	state = state_of(f->pw, 3, NULL);
	g_assert_cmpstr(state, ==, "changes-requested");
	g_clear_pointer(&state, g_free);

	/* a human moved it new -> under-review -> new: still a human's */
	g_assert_true(pgate_patchwork_set_patch_state(f->pw, 2, "under-review",
						      NULL, &error));
	g_assert_no_error(error);
	{
		/* the delegate of patch 3 may not change patch 2: the fake
		 * checks is_editable; make ci's own change count first */
		g_autoptr(PgatePatchwork) sub = make_pw_as("sub");

		g_assert_true(pgate_patchwork_set_patch_state(human, 3, "new",
							      NULL, &error));
		g_assert_no_error(error);
		g_assert_false(pgate_patchwork_set_patch_state(sub, 2, "new",
							       NULL, &error));
		assert_error(error, PGATE_ERROR_CONFIG);
		g_clear_error(&error);
	}
	/* patch 3 is back at new, but a human went through it */
	g_assert_true(pgate_patchwork_set_patch_state_decided(
		f->pw, 3, "superseded", NULL, &d, &why, &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	g_assert_nonnull(strstr(why, "deleg"));
	g_clear_pointer(&why, g_free);
	state = state_of(f->pw, 3, NULL);
	g_assert_cmpstr(state, ==, "new");
	g_clear_pointer(&state, g_free);

	/* our own earlier change does not stop us */
	g_assert_true(pgate_patchwork_set_patch_state_decided(
		f->pw, 2, "accepted", "def", &d, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpint(d, ==, PGATE_PATCHWORK_STATE_SET);
	state = state_of(f->pw, 2, &ref);
	g_assert_cmpstr(state, ==, "accepted");
	g_assert_cmpstr(ref, ==, "def");
}

static void
test_state_events_paginated(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree char *tok = token_line("ci");
	g_autofree char *extra = g_strdup_printf("%s\nuser = ci\nper_page = 2",
						 tok);
	g_autoptr(PgatePatchwork) pw = make_pw(extra);
	const char *cycle[] = { "under-review", "new", "under-review", "new",
				"deferred" };

	for (guint i = 0; i < G_N_ELEMENTS(cycle); i++) {
		g_assert_true(pgate_patchwork_set_patch_state(pw, 5, cycle[i], NULL,
							      &error));
		g_assert_no_error(error);
	}
	/* another patch's event, filtered out by the server */
	g_assert_true(pgate_patchwork_set_patch_state(pw, 1, "rfc", NULL, &error));
	fake_do("POST", "/_fake/requests/clear", NULL);
	events = pgate_patchwork_list_state_events(pw, 5, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(events->len, ==, 5);
	g_assert_cmpuint(fake_count_requests("GET", NULL), ==, 3);
	/* newest first */
	g_assert_cmpstr(((PgatePatchworkStateEvent *)events->pdata[0])
			->current_state, ==, "deferred");
	g_assert_cmpstr(((PgatePatchworkStateEvent *)events->pdata[4])
			->current_state, ==, "under-review");
	g_assert_cmpstr(((PgatePatchworkStateEvent *)events->pdata[4])
			->previous_state, ==, "new");
	for (guint i = 1; i < events->len; i++)
		g_assert_cmpint(((PgatePatchworkStateEvent *)events->pdata[i])->id,
				<, ((PgatePatchworkStateEvent *)events->pdata[i - 1])->id);
	/* deferred is a human's kind of state: left alone */
	{
		PgatePatchworkStateDecision d;

		g_assert_true(pgate_patchwork_set_patch_state_decided(
			pw, 5, "accepted", NULL, &d, NULL, &error));
		g_assert_cmpint(d, ==, PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	}
}

static void
test_state_decide_rules(void)
{
	g_autoptr(GPtrArray) ev = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_patchwork_state_event_free);
	PgatePatchworkStateEvent *e;

	g_assert_cmpint(pgate_patchwork_patch_state_decide("new", ev, "accepted",
							   "ci"), ==,
			PGATE_PATCHWORK_STATE_SET);
	g_assert_cmpint(pgate_patchwork_patch_state_decide("under-review", NULL,
							   "superseded", "ci"), ==,
			PGATE_PATCHWORK_STATE_SET);
	g_assert_cmpint(pgate_patchwork_patch_state_decide("accepted", ev,
							   "accepted", "ci"), ==,
			PGATE_PATCHWORK_STATE_SKIP_SAME);
	g_assert_cmpint(pgate_patchwork_patch_state_decide("rejected", ev,
							   "accepted", "ci"), ==,
			PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	e = g_new0(PgatePatchworkStateEvent, 1);
	e->actor = g_strdup("ci");
	e->has_actor = TRUE;
	g_ptr_array_add(ev, e);
	g_assert_cmpint(pgate_patchwork_patch_state_decide("new", ev, "accepted",
							   "ci"), ==,
			PGATE_PATCHWORK_STATE_SET);
	/* without knowing our user, every change is someone else's */
	g_assert_cmpint(pgate_patchwork_patch_state_decide("new", ev, "accepted",
							   NULL), ==,
			PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	/* an event without an actor (API 1.1, or a script) */
	e = g_new0(PgatePatchworkStateEvent, 1);
	g_ptr_array_add(ev, e);
	g_assert_cmpint(pgate_patchwork_patch_state_decide("new", ev, "accepted",
							   "ci"), ==,
			PGATE_PATCHWORK_STATE_SKIP_HUMAN);
	g_assert_true(pgate_patchwork_patch_state_is_valid("under-review"));
	g_assert_false(pgate_patchwork_patch_state_is_valid("Under Review"));
	g_assert_false(pgate_patchwork_patch_state_is_valid(""));
}

int
main(int argc, char **argv)
{
	g_autofree char *seed = NULL;
	int rc;

	g_test_init(&argc, &argv, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* before any thread exists */
	g_setenv("PGATE_TEST_PW_TOKEN", "  " TOKEN_OUT "\n", TRUE);
	g_unsetenv("PGATE_TEST_UNSET_VAR");

	G.dir = g_dir_make_tmp("pgate-pw-XXXXXX", NULL);
	g_assert_nonnull(G.dir);
	G.seed = g_build_filename(G.dir, "seed.json", NULL);
	seed = make_seed();
	write_file(G.seed, seed, 0644);
	{
		const char *names[] = { "ci", "outsider", "sub", "deleg", "bad" };
		const char *tokens[] = { TOKEN_CI, TOKEN_OUT, TOKEN_SUB, TOKEN_DELEG,
					 TOKEN_BAD };

		for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
			g_autofree char *p = g_strdup_printf("%s/%s.token", G.dir,
							     names[i]);
			g_autofree char *t = g_strconcat(tokens[i], "\n", NULL);

			write_file(p, t, 0600);
		}
		g_autofree char *w = g_strdup_printf("%s/world.token", G.dir);
		g_autofree char *s = g_strdup_printf("%s/spaces.token", G.dir);

		write_file(w, TOKEN_CI "\n", 0644);
		write_file(s, "two words\n", 0600);
	}
	G.fake = start_fake(NULL, &G.port);
	G.base = g_strdup_printf("http://127.0.0.1:%u", G.port);

#define ADD(name, fn) g_test_add(name, Fixture, NULL, setup, fn, teardown)
	g_test_add_func("/patchwork/config/valid", test_config_valid);
	g_test_add_func("/patchwork/config/errors", test_config_errors);
	g_test_add_func("/patchwork/config/example", test_config_example);
	ADD("/patchwork/lookup/found", test_lookup_found);
	ADD("/patchwork/lookup/odd-chars", test_lookup_odd_chars);
	ADD("/patchwork/lookup/not-yet-parsed", test_lookup_not_yet);
	ADD("/patchwork/lookup/invalid", test_lookup_invalid);
	g_test_add_func("/patchwork/lookup/path-prefix", test_lookup_prefix);
	ADD("/patchwork/series/get", test_series_get);
	g_test_add_func("/patchwork/checks/list-70-paginated", test_checks_paginated);
	ADD("/patchwork/checks/list-empty-unknown", test_checks_empty_and_unknown);
	ADD("/patchwork/checks/post", test_post_check);
	g_test_add_func("/patchwork/checks/post-learns-user", test_post_learns_user);
	ADD("/patchwork/checks/post-limits", test_post_limits);
	ADD("/patchwork/checks/post-403-not-maintainer", test_post_forbidden);
	ADD("/patchwork/checks/post-submitter-delegate", test_post_submitter_delegate);
	ADD("/patchwork/checks/post-bad-token", test_post_bad_token);
	ADD("/patchwork/checks/post-400-fields", test_post_bad_fields);
	ADD("/patchwork/checks/post-404", test_post_unknown_patch);
	ADD("/patchwork/errors/transient", test_transient);
	ADD("/patchwork/errors/timeout", test_timeout);
	g_test_add_func("/patchwork/errors/refused", test_refused);
	ADD("/patchwork/errors/redirect", test_redirect_and_html);
	ADD("/patchwork/errors/token-scrubbed", test_token_scrubbed);
	ADD("/patchwork/decide/exactly-once", test_decided_exactly_once);
	g_test_add_func("/patchwork/decide/rules", test_decide);
	g_test_add_func("/patchwork/context", test_context);
	g_test_add_func("/patchwork/states", test_states);
	g_test_add_func("/patchwork/normalize", test_normalize);
	g_test_add_func("/patchwork/lookup/retry-backoff", test_retry);
	ADD("/patchwork/verify", test_verify);
	g_test_add_func("/patchwork/verify/token-user", test_verify_token_user);
	g_test_add_func("/patchwork/http/link-header", test_link_header);
	ADD("/patchwork/http/rebase-url", test_rebase_url);
	ADD("/patchwork/state/get-set-events", test_state_set);
	ADD("/patchwork/state/errors", test_state_errors);
	ADD("/patchwork/state/decided", test_state_decided);
	ADD("/patchwork/state/events-paginated", test_state_events_paginated);
	g_test_add_func("/patchwork/state/decide-rules", test_state_decide_rules);
#undef ADD

	rc = g_test_run();

	stop_fake(G.fake);
	{
		g_autofree char *cmd_dir = g_strdup(G.dir);
		g_autoptr(GDir) d = g_dir_open(cmd_dir, 0, NULL);
		const char *name;

		while (d && (name = g_dir_read_name(d)) != NULL) {
			g_autofree char *p = g_build_filename(cmd_dir, name, NULL);

			g_unlink(p);
		}
		g_rmdir(cmd_dir);
	}
	g_free(G.dir);
	g_free(G.seed);
	g_free(G.base);
	curl_global_cleanup();
	return rc;
}
