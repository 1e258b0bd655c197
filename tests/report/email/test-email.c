/* test-email.c - the email part of the report stage (report/email).
 *
 * Fixtures are made at run time: the answered series with git
 * format-patch, the SMTP servers with aiosmtpd (/usr/bin/python3 -m
 * aiosmtpd and the two small scripts beside this file), a fake sendmail as
 * a shell script.  Tests whose tool is missing skip themselves.
 *
 * Environment (tests/report/email/meson.build): G_TEST_SRCDIR (this
 * folder, for data/ and the python scripts).
 */
#include "report/report.h"
#include "common/autocleanups.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gmime/gmime.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PY "/usr/bin/python3"
#define PASSWORD "Tr0ub4dor&3-very-secret"

/* ---- small helpers ---------------------------------------------------- */

static char *
make_tmpdir(void)
{
	g_autoptr(GError) err = NULL;
	char *d = g_dir_make_tmp("test-email-XXXXXX", &err);

	g_assert_no_error(err);
	return d;
}

static void
write_file(const char *path, const char *text, int mode)
{
	g_autoptr(GError) err = NULL;

	g_file_set_contents(path, text, -1, &err);
	g_assert_no_error(err);
	g_assert_cmpint(chmod(path, (mode_t)mode), ==, 0);
}

/* (not inlined: GCC 12 at -O3 then takes a pointer into the result for
 * one to the local variable @text, and -Wdangling-pointer fails the
 * release build) */
static G_GNUC_NO_INLINE char *
read_file(const char *path)
{
	g_autoptr(GError) err = NULL;
	char *text = NULL;

	g_file_get_contents(path, &text, NULL, &err);
	g_assert_no_error(err);
	return text;
}

static gboolean
have_program(const char *path)
{
	return g_file_test(path, G_FILE_TEST_IS_EXECUTABLE);
}

/* Runs @argv in @cwd; returns its stdout; fails the test on failure. */
static char *
run(const char *cwd, const char *const *argv, char **envp)
{
	g_autoptr(GError) err = NULL;
	char *out = NULL, *errout = NULL;
	int status = 0;

	g_spawn_sync(cwd, (char **)argv, envp, G_SPAWN_SEARCH_PATH, NULL,
		     NULL, &out, &errout, &status, &err);
	g_assert_no_error(err);
	if (!g_spawn_check_wait_status(status, NULL))
		g_error("%s failed: %s", argv[0], errout);
	g_free(errout);
	return out;
}

static PgateEmailConfig *
config_from(const char *ini, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;

	g_key_file_load_from_data(kf, ini, -1, G_KEY_FILE_NONE, &err);
	g_assert_no_error(err);
	return pgate_email_config_new(kf, "report.email", error);
}

static PgateEmailConfig *
config_ok(const char *ini)
{
	g_autoptr(GError) err = NULL;
	PgateEmailConfig *cfg = config_from(ini, &err);

	g_assert_no_error(err);
	g_assert_nonnull(cfg);
	return cfg;
}

static GMimeMessage *
parse_message(const void *data, gsize len, GMimeFormat format)
{
	g_autoptr(GByteArray) ba = g_byte_array_new();
	GMimeStream *stream;
	GMimeParser *parser;
	GMimeMessage *msg;

	g_byte_array_append(ba, data, (guint)len);
	stream = g_mime_stream_mem_new_with_byte_array(g_steal_pointer(&ba));
	parser = g_mime_parser_new_with_stream(stream);
	g_mime_parser_set_format(parser, format);
	msg = g_mime_parser_construct_message(parser, NULL);
	g_object_unref(parser);
	g_object_unref(stream);
	g_assert_nonnull(msg);
	return msg;
}

static GMimeMessage *
parse_bytes(GBytes *b)
{
	gsize len;
	const void *data = g_bytes_get_data(b, &len);

	return parse_message(data, len, GMIME_FORMAT_MESSAGE);
}

static const char *
header(GMimeMessage *m, const char *name)
{
	return g_mime_object_get_header(GMIME_OBJECT(m), name);
}

/* The decoded text of a single-part message. */
static char *
body_text(GMimeMessage *m)
{
	GMimeObject *part = g_mime_message_get_mime_part(m);

	g_assert_true(GMIME_IS_TEXT_PART(part));
	return g_mime_text_part_get_text(GMIME_TEXT_PART(part));
}

/* The Message-IDs of a References or In-Reply-To value, in order. */
static GPtrArray *
ids_of(const char *value)
{
	GPtrArray *ids = g_ptr_array_new_with_free_func(g_free);
	GMimeReferences *refs = g_mime_references_parse(NULL, value);

	for (int i = 0; refs && i < g_mime_references_length(refs); i++)
		g_ptr_array_add(ids,
				g_strdup(g_mime_references_get_message_id(refs,
									  i)));
	if (refs)
		g_mime_references_free(refs);
	return ids;
}

static char *
substitute(const char *text, const char *const *pairs)
{
	char *s = g_strdup(text);

	for (guint i = 0; pairs[i] != NULL; i += 2) {
		g_auto(GStrv) parts = g_strsplit(s, pairs[i], -1);

		g_free(s);
		s = g_strjoinv(pairs[i + 1], parts);
	}
	return s;
}

/* ---- the answered series, made with git ------------------------------- */

typedef struct {
	char *dir;
	char *base, *head;          /* commit ids */
	GBytes *cover_raw, *patch2_raw;
	GMimeMessage *cover, *patch2;
} Series;

static void
series_free(Series *s)
{
	pgate_test_rm_rf(s->dir);
	g_free(s->dir);
	g_free(s->base);
	g_free(s->head);
	g_bytes_unref(s->cover_raw);
	g_bytes_unref(s->patch2_raw);
	g_object_unref(s->cover);
	g_object_unref(s->patch2);
	g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Series, series_free)

static GBytes *
file_bytes(const char *path)
{
	g_autoptr(GError) err = NULL;
	char *text = NULL;
	gsize len = 0;

	g_file_get_contents(path, &text, &len, &err);
	g_assert_no_error(err);
	return g_bytes_new_take(text, len);
}

/* A two-patch v3 series with a cover letter, threaded deep (each patch
 * answers the one before), by a submitter with a non-ASCII name. */
static Series *
make_series(void)
{
	Series *s = g_new0(Series, 1);
	g_autofree char *repo = NULL, *out = NULL;
	g_auto(GStrv) env = g_get_environ();

	g_autofree char *git = g_find_program_in_path("git");

	if (git == NULL) {
		g_free(s);
		return NULL;
	}
	s->dir = make_tmpdir();
	repo = g_build_filename(s->dir, "repo", NULL);
	out = g_build_filename(s->dir, "out", NULL);
	env = g_environ_setenv(env, "HOME", s->dir, TRUE);
	env = g_environ_setenv(env, "GIT_CONFIG_NOSYSTEM", "1", TRUE);
	env = g_environ_setenv(env, "GIT_AUTHOR_NAME", "Zoë Ünïcode", TRUE);
	env = g_environ_setenv(env, "GIT_AUTHOR_EMAIL", "Zoe@Example.org", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_NAME", "Zoë Ünïcode", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_EMAIL", "zoe@example.org",
			       TRUE);
	env = g_environ_setenv(env, "GIT_AUTHOR_DATE", "1700000000 +0000", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_DATE", "1700000000 +0000",
			       TRUE);

	const char *init[] = { "git", "init", "-q", "-b", "main", repo, NULL };
	g_free(run(s->dir, init, env));
	g_autofree char *a = g_build_filename(repo, "a.txt", NULL);
	write_file(a, "one\n", 0644);
	const char *add[] = { "git", "add", "a.txt", NULL };
	g_free(run(repo, add, env));
	const char *c0[] = { "git", "commit", "-q", "-m", "base", NULL };
	g_free(run(repo, c0, env));
	const char *br[] = { "git", "checkout", "-q", "-b", "topic", NULL };
	g_free(run(repo, br, env));
	write_file(a, "one\ntwo\n", 0644);
	const char *c1[] = { "git", "commit", "-q", "-a", "-m",
			     "widget: add two", NULL };
	g_free(run(repo, c1, env));
	write_file(a, "one\ntwo\nthree\n", 0644);
	const char *c2[] = { "git", "commit", "-q", "-a", "-m",
			     "widget: add three", NULL };
	g_free(run(repo, c2, env));
	const char *desc[] = { "git", "config", "branch.topic.description",
			       "widget: fix the Zoë driver's two bugs\n\n"
			       "They were there for years.", NULL };
	g_free(run(repo, desc, env));
	const char *fp[] = { "git", "format-patch", "-q", "--cover-letter",
			     "--cover-from-description=subject",
			     "--thread=deep", "-v3", "-o", out, "main", NULL };
	g_free(run(repo, fp, env));
	const char *rb[] = { "git", "rev-parse", "main", NULL };
	s->base = g_strstrip(run(repo, rb, env));
	const char *rh[] = { "git", "rev-parse", "topic", NULL };
	s->head = g_strstrip(run(repo, rh, env));

	g_autofree char *cover = g_build_filename(out,
		"v3-0000-cover-letter.patch", NULL);
	g_autofree char *p2 = g_build_filename(out,
		"v3-0002-widget-add-three.patch", NULL);
	gsize len;
	const void *data;

	s->cover_raw = file_bytes(cover);
	s->patch2_raw = file_bytes(p2);
	data = g_bytes_get_data(s->cover_raw, &len);
	s->cover = parse_message(data, len, GMIME_FORMAT_MBOX);
	data = g_bytes_get_data(s->patch2_raw, &len);
	s->patch2 = parse_message(data, len, GMIME_FORMAT_MBOX);
	return s;
}

/* The report on @s's cover (or, with @answer set, on that mail). */
static PgateEmailReport *
series_report(Series *s, GMimeMessage *answer)
{
	PgateEmailReport *r = pgate_email_report_new();
	GMimeMessage *m = answer ? answer : s->cover;
	InternetAddressList *from = g_mime_message_get_from(m);
	InternetAddress *ia = internet_address_list_get_address(from, 0);
	const char *refs = header(m, "References");

	r->idempotency_key = g_strdup("s0123456789ab/v3/final");
	r->subject = g_strdup(g_mime_message_get_subject(m));
	r->msgid = g_strdup(g_mime_message_get_message_id(m));
	if (refs != NULL) {
		g_autoptr(GPtrArray) ids = ids_of(refs);

		for (guint i = 0; i < ids->len; i++)
			g_ptr_array_add(r->references, g_strdup(ids->pdata[i]));
	}
	r->submitter_name = g_strdup(internet_address_get_name(ia));
	r->submitter_email = g_strdup(internet_address_mailbox_get_addr(
		INTERNET_ADDRESS_MAILBOX(ia)));
	r->list_address = g_strdup("widgets@lists.example.org");
	/* a list lore archives: the archive links' default is lore's */
	r->list_id = g_strdup("linux-widgets.vger.kernel.org");
	r->series_name = g_strdup("widget: fix the Zoë driver's two bugs");
	r->series_id = g_strdup("s0123456789ab");
	r->version = 3;
	r->patch_count = 2;
	g_ptr_array_add(r->previous,
			pgate_email_previous_new(2, "s00aa11bb22cc"));
	g_ptr_array_add(r->previous,
			pgate_email_previous_new(1, "s0011223344ff"));
	r->tree = g_strdup("widgets");
	r->base_branch = g_strdup("main");
	r->base_commit = g_strdup(s->base);
	r->head_commit = g_strdup(s->head);
	r->date = 1700003600;

	PgateEmailJob *build = pgate_email_job_new("build-x86_64",
						   PGATE_EMAIL_VERDICT_FAIL);
	build->reason = g_strdup("exit status 2");
	build->failed_step = g_strdup("make");
	build->url = g_strdup("https://ci.example.org/job/build/41/");
	build->log_excerpt = g_strdup(
		"  CC      widget.o\n"
		"widget.c: In function 'widget_add':\n"
		"widget.c:12:9: error: 'three' undeclared (first use in this "
		"function)\n"
		"   12 |         three++;\n"
		"      |         ^~~~~\n"
		"make[1]: *** [Makefile:7: widget.o] Error 1\n"
		"make: *** [Makefile:3: all] Error 2\n");
	g_ptr_array_add(r->jobs, build);
	PgateEmailJob *check = pgate_email_job_new("checkpatch",
						   PGATE_EMAIL_VERDICT_PASS);
	check->patch = 1;
	g_ptr_array_add(r->jobs, check);
	PgateEmailJob *test = pgate_email_job_new("unit-tests",
						  PGATE_EMAIL_VERDICT_SKIPPED);
	test->reason = g_strdup("the build failed");
	g_ptr_array_add(r->jobs, test);
	g_ptr_array_add(r->links, pgate_email_link_new(
		"patchwork", "https://patchwork.example.org/series/77/"));
	return r;
}

static const char *const BASE_CFG =
	"[report.email]\n"
	"enabled = true\n"
	"to = submitter-optin\n"
	"optin = *@example.org;someone@else.test\n"
	"when = failure\n"
	"cc_list = true\n"
	"from_address = ci@patchgate.example.net\n"
	"from_name = Widget CI\n"
	"contact = ci-admins@patchgate.example.net\n"
	"sendmail = /bin/true\n";

/* ---- configuration ---------------------------------------------------- */

static void
test_config_disabled(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok("[other]\nx = 1\n");
	g_autoptr(PgateEmailConfig) off = config_ok(
		"[report.email]\nenabled = false\nsmtp_url = nonsense\n");
	/* the words every section takes for a boolean (docs/config.md) */
	g_autoptr(PgateEmailConfig) off2 = config_ok(
		"[report.email]\nenabled = OFF\nsmtp_url = nonsense\n");
	g_autoptr(GPtrArray) rcpts = NULL;
	g_autoptr(PgateEmailReport) r = pgate_email_report_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(GBytes) msg = g_bytes_new_static("x\n", 2);
	PgateEmailDecision d = PGATE_EMAIL_SEND;

	g_assert_false(pgate_email_config_enabled(cfg));
	g_assert_false(pgate_email_config_enabled(off));
	g_assert_false(pgate_email_config_enabled(off2));
	rcpts = pgate_email_recipients(cfg, "zoe@example.org", TRUE, NULL, &d);
	g_assert_cmpuint(rcpts->len, ==, 0);
	g_assert_cmpint(d, ==, PGATE_EMAIL_SKIP_DISABLED);
	g_assert_cmpstr(pgate_email_decision_to_string(d), ==,
			"email reports are disabled");

	r->idempotency_key = g_strdup("k");
	r->msgid = g_strdup("a@b");
	r->submitter_email = g_strdup("zoe@example.org");
	g_assert_null(pgate_email_compose(cfg, r, &err));
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
	g_clear_error(&err);
	g_ptr_array_add(rcpts, g_strdup("zoe@example.org"));
	g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
}

static void
test_config_valid(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailConfig) env = NULL;

	g_setenv("PGATE_TEST_PW", PASSWORD, TRUE);
	env = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=CI@Example.NET\nenvelope_from=bounces@example.net\n"
		"smtp_url=smtps://mail.example.net\nuser=ci\n"
		"password_env=PGATE_TEST_PW\nrate_max=3\nrate_period=2h\n");

	g_assert_true(pgate_email_config_enabled(cfg));
	g_assert_cmpstr(pgate_email_config_from(cfg), ==,
			"ci@patchgate.example.net");
	g_assert_cmpstr(pgate_email_config_envelope_from(cfg), ==,
			"ci@patchgate.example.net");
	g_assert_cmpstr(pgate_email_config_from(env), ==, "ci@example.net");
	g_assert_cmpstr(pgate_email_config_envelope_from(env), ==,
			"bounces@example.net");
}

typedef struct {
	const char *ini;      /* after "[report.email]\nenabled=true\n" */
	const char *key;      /* the key the message must name */
} BadConfig;

static void
test_config_errors(void)
{
	g_autofree char *dir = make_tmpdir();
	g_autofree char *pw_open = g_build_filename(dir, "pw-open", NULL);
	g_autofree char *pw_ok = g_build_filename(dir, "pw", NULL);
	g_autofree char *pw_empty = g_build_filename(dir, "pw-empty", NULL);
	const char *F = "from_address=ci@example.net\n";

	write_file(pw_open, PASSWORD "\n", 0644);
	write_file(pw_ok, PASSWORD "\n", 0600);
	write_file(pw_empty, "\n", 0600);
	g_unsetenv("PGATE_TEST_UNSET");

	const BadConfig table[] = {
		{ "enabled=maybe\n", "enabled" },
		{ "to=all\nsendmail=/bin/true\n", "to" },
		{ "optin=\nsendmail=/bin/true\n", "optin" },
		{ "to=everyone\nsendmail=/bin/true\nfrom_address=\n",
		  "from_address" },
		{ "optin=a b@c\nsendmail=/bin/true\n", "optin" },
		{ "when=sometimes\nto=everyone\nsendmail=/bin/true\n", "when" },
		{ "to=everyone\nfrom_address=not-an-address\n"
		  "sendmail=/bin/true\n", "from_address" },
		{ "to=everyone\nfrom_address=-oQ@example.net\n"
		  "sendmail=/bin/true\n", "from_address" },
		{ "to=everyone\n", "smtp_url" },
		{ "to=everyone\nsendmail=/bin/true\nsmtp_url=smtp://h\n",
		  "smtp_url" },
		{ "to=everyone\nsendmail=sendmail\n", "sendmail" },
		{ "to=everyone\nsendmail=/nonexistent/sendmail\n", "sendmail" },
		{ "to=everyone\nsmtp_url=http://h/\n", "smtp_url" },
		{ "to=everyone\nsmtp_url=smtp://ci:" PASSWORD "@h/\n",
		  "smtp_url" },
		{ "to=everyone\nsmtp_url=smtp://h/?x=1\n", "smtp_url" },
		{ "to=everyone\nsmtp_url=smtp://h/\nstarttls=maybe\n",
		  "starttls" },
		{ "to=everyone\nsmtp_url=smtps://h/\nstarttls=no\n",
		  "starttls" },
		{ "to=everyone\nsmtp_url=smtp://h/\npassword=" PASSWORD "\n",
		  "password" },
		{ "to=everyone\nsmtp_url=smtp://h/\nuser=ci\n", "user" },
		{ "to=everyone\nsmtp_url=smtp://h/\nuser=ci\n"
		  "password_env=PGATE_TEST_UNSET\n", "password_env" },
		{ "to=everyone\nsmtp_url=smtp://h/\nuser=ci\n"
		  "password_file=@OPEN@\n", "password_file" },
		{ "to=everyone\nsmtp_url=smtp://h/\nuser=ci\n"
		  "password_file=@EMPTY@\n", "password_file" },
		{ "to=everyone\nsmtp_url=smtp://h/\nuser=ci\n"
		  "password_file=/nonexistent\n", "password_file" },
		/* a password over a connection that may stay plain */
		{ "to=everyone\nsmtp_url=smtp://mail.example.net/\nuser=ci\n"
		  "starttls=optional\npassword_file=@OK@\n", "starttls" },
		{ "to=everyone\nsendmail=/bin/true\nrate_max=-1\n", "rate_max" },
		{ "to=everyone\nsendmail=/bin/true\nrate_period=0\n",
		  "rate_period" },
		{ "to=everyone\nsendmail=/bin/true\nrate_period=5y\n",
		  "rate_period" },
		{ "to=everyone\nsendmail=/bin/true\ntimeout=0\n", "timeout" },
		{ "to=everyone\nsendmail=/bin/true\nlog_lines=1000\n",
		  "log_lines" },
		{ "to=everyone\nsendmail=/bin/true\nuser=ci\n"
		  "password_file=@OK@\n", "sendmail" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
		const char *subst[] = { "@OPEN@", pw_open, "@OK@", pw_ok,
					"@EMPTY@", pw_empty, NULL };
		g_autofree char *body = substitute(table[i].ini, subst);
		g_autofree char *ini = g_strdup_printf(
			"[report.email]\nenabled=true\n%s%s", body,
			strstr(body, "from_address") ? "" : F);
		g_autoptr(GError) err = NULL;
		g_autoptr(PgateEmailConfig) cfg = config_from(ini, &err);
		g_autofree char *want = g_strdup_printf("] %s:", table[i].key);

		g_test_message("case %zu: %s", i, table[i].key);
		g_assert_null(cfg);
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
		g_assert_false(pgate_error_is_transient(err));
		g_assert_nonnull(strstr(err->message, want));
		g_assert_null(strstr(err->message, PASSWORD));
	}
	pgate_test_rm_rf(dir);
}

static void
test_config_password_sources(void)
{
	g_autofree char *dir = make_tmpdir();
	g_autofree char *pw = g_build_filename(dir, "pw", NULL);
	g_autofree char *ini = NULL;

	write_file(pw, PASSWORD "\r\n", 0640);
	ini = g_strdup_printf("[report.email]\nenabled=true\nto=everyone\n"
			      "from_address=ci@example.net\n"
			      "smtp_url=smtp://127.0.0.1:1/\nstarttls=no\n"
			      "user=ci\npassword_file=%s\n", pw);
	g_autoptr(PgateEmailConfig) a = config_ok(ini);
	g_assert_true(pgate_email_config_enabled(a));
	g_setenv("PGATE_TEST_PW", PASSWORD, TRUE);
	g_autoptr(PgateEmailConfig) b = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsmtp_url=smtp://[::1]:1/\n"
		"starttls=optional\nuser=ci\npassword_env=PGATE_TEST_PW\n");
	g_assert_true(pgate_email_config_enabled(b));
	pgate_test_rm_rf(dir);
}

/* The shipped example is valid once enabled, and every key it sets is
 * documented. */
static void
test_config_contrib_example(void)
{
	g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "..",
		"..", "contrib", "report-email.conf.example", NULL);
	g_autofree char *docs_path = g_test_build_filename(G_TEST_DIST, "..",
		"..", "..", "docs", "report-email.md", NULL);
	g_autofree char *docs = read_file(docs_path);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) keys = NULL;

	g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &err);
	g_assert_no_error(err);
	keys = g_key_file_get_keys(kf, "email", NULL, &err);
	g_assert_no_error(err);
	for (guint i = 0; keys[i]; i++) {
		g_autofree char *row = g_strdup_printf("| `%s` |", keys[i]);

		g_test_message("key %s", keys[i]);
		g_assert_nonnull(strstr(docs, row));
	}
	g_key_file_set_boolean(kf, "email", "enabled", TRUE);
	g_autoptr(PgateEmailConfig) cfg = pgate_email_config_new(
		kf, "email", &err);
	g_assert_no_error(err);
	g_assert_true(pgate_email_config_enabled(cfg));
}

/* ---- recipients and rate ---------------------------------------------- */

typedef struct {
	const char *cfg;        /* keys after enabled=true and a transport */
	const char *submitter;
	gboolean failed;
	const char *list;
	PgateEmailDecision decision;
	const char *rcpts;      /* space-separated, "" for none */
} RcptCase;

static void
test_recipients(void)
{
	const RcptCase table[] = {
		/* opt-in by exact address, case-insensitively */
		{ "optin=zoe@example.org", "Zoe@Example.ORG", TRUE, NULL,
		  PGATE_EMAIL_SEND, "zoe@example.org" },
		{ "optin=zoe@example.org", "bob@example.org", TRUE, NULL,
		  PGATE_EMAIL_SKIP_NOT_OPTED_IN, "" },
		/* globs */
		{ "optin=*@example.org", "bob@example.org", TRUE, NULL,
		  PGATE_EMAIL_SEND, "bob@example.org" },
		{ "optin=*@example.org", "bob@evil-example.org", TRUE, NULL,
		  PGATE_EMAIL_SKIP_NOT_OPTED_IN, "" },
		{ "optin=*@example.org", "bob@sub.example.org", TRUE, NULL,
		  PGATE_EMAIL_SKIP_NOT_OPTED_IN, "" },
		{ "optin=*@*.example.org;x@y.z", "bob@sub.example.org", TRUE,
		  NULL, PGATE_EMAIL_SEND, "bob@sub.example.org" },
		{ "optin=dev?@example.org", "dev1@example.org", TRUE, NULL,
		  PGATE_EMAIL_SEND, "dev1@example.org" },
		{ "optin=dev?@example.org", "dev12@example.org", TRUE, NULL,
		  PGATE_EMAIL_SKIP_NOT_OPTED_IN, "" },
		/* everyone */
		{ "to=everyone", "anyone@anywhere.test", TRUE, NULL,
		  PGATE_EMAIL_SEND, "anyone@anywhere.test" },
		/* failure only (the default) */
		{ "to=everyone", "anyone@anywhere.test", FALSE, NULL,
		  PGATE_EMAIL_SKIP_SUCCESS, "" },
		{ "to=everyone\nwhen=failure", "a@b.test", FALSE, NULL,
		  PGATE_EMAIL_SKIP_SUCCESS, "" },
		{ "to=everyone\nwhen=always", "a@b.test", FALSE, NULL,
		  PGATE_EMAIL_SEND, "a@b.test" },
		/* the list: only with cc_list, only as a copy */
		{ "to=everyone", "a@b.test", TRUE, "list@lists.test",
		  PGATE_EMAIL_SEND, "a@b.test" },
		{ "to=everyone\ncc_list=true", "a@b.test", TRUE,
		  "List@Lists.test", PGATE_EMAIL_SEND,
		  "a@b.test list@lists.test" },
		{ "optin=x@y.test\ncc_list=true", "a@b.test", TRUE,
		  "list@lists.test", PGATE_EMAIL_SKIP_NOT_OPTED_IN, "" },
		{ "to=everyone\ncc_list=true", "a@b.test", TRUE, "not a list",
		  PGATE_EMAIL_SEND, "a@b.test" },
		{ "to=everyone\ncc_list=true", "a@b.test", TRUE, "a@b.test",
		  PGATE_EMAIL_SEND, "a@b.test" },
		/* addresses that could smuggle syntax */
		{ "to=everyone", "-oQ/tmp/x@b.test", TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
		{ "to=everyone", "a@b.test>\r\nRCPT TO:<c@d.test", TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
		{ "to=everyone", "\"a b\"@b.test", TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
		{ "to=everyone", "zoë@example.org", TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
		{ "to=everyone", "", TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
		{ "to=everyone", NULL, TRUE, NULL,
		  PGATE_EMAIL_SKIP_BAD_ADDRESS, "" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
		g_autofree char *ini = g_strdup_printf(
			"[report.email]\nenabled=true\n"
			"from_address=ci@example.net\nsendmail=/bin/true\n%s\n",
			table[i].cfg);
		g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
		PgateEmailDecision d = 99;
		g_autoptr(GPtrArray) r = pgate_email_recipients(
			cfg, table[i].submitter, table[i].failed, table[i].list,
			&d);
		g_autoptr(GString) got = g_string_new(NULL);

		for (guint j = 0; j < r->len; j++)
			g_string_append_printf(got, "%s%s", j ? " " : "",
					       (char *)r->pdata[j]);
		g_test_message("case %zu", i);
		g_assert_cmpint(d, ==, table[i].decision);
		g_assert_cmpstr(got->str, ==, table[i].rcpts);
	}
}

static void
test_rate(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsendmail=/bin/true\n"
		"rate_max=3\nrate_period=1h\n");
	g_autoptr(PgateEmailConfig) unlimited = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsendmail=/bin/true\n"
		"rate_max=0\n");
	g_autoptr(PgateEmailConfig) dflt = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsendmail=/bin/true\n");
	const gint64 now = 1700000000;
	const gint64 two[] = { now - 10, now - 3599 };
	const gint64 three[] = { now - 10, now - 3599, now - 1800 };
	const gint64 old[] = { now - 3600, now - 7200, now - 86400 * 30 };
	const gint64 mixed[] = { now - 3600, now - 1, now - 2, now - 4000 };
	const gint64 future[] = { now + 60, now + 120, now + 3600 * 5 };
	gint64 ten[10];

	for (guint i = 0; i < 10; i++)
		ten[i] = now - (gint64)i * 60;
	g_assert_true(pgate_email_rate_allows(cfg, NULL, 0, now));
	g_assert_true(pgate_email_rate_allows(cfg, two, 2, now));
	g_assert_false(pgate_email_rate_allows(cfg, three, 3, now));
	/* exactly one period ago is outside the window */
	g_assert_true(pgate_email_rate_allows(cfg, old, 3, now));
	g_assert_true(pgate_email_rate_allows(cfg, mixed, 4, now));
	/* a clock that went back: future sends count */
	g_assert_false(pgate_email_rate_allows(cfg, future, 3, now));
	/* after the hour, the same history allows again */
	g_assert_true(pgate_email_rate_allows(cfg, three, 3, now + 3600));
	g_assert_true(pgate_email_rate_allows(unlimited, ten, 10, now));
	/* default: 10 per day */
	g_assert_true(pgate_email_rate_allows(dflt, ten, 9, now));
	g_assert_false(pgate_email_rate_allows(dflt, ten, 10, now));
}

/* ---- automated mail --------------------------------------------------- */

typedef struct {
	const char *headers;
	gboolean automated;
} AutoCase;

static void
test_automated(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	const char *H = "From: Zoe <zoe@example.org>\n"
			"Subject: [PATCH] x\nMessage-ID: <1@example.org>\n";
	const AutoCase table[] = {
		{ "", FALSE },
		{ "Auto-Submitted: no\n", FALSE },
		{ "Auto-Submitted: No (a human)\n", FALSE },
		{ "Auto-Submitted: auto-generated\n", TRUE },
		{ "Auto-Submitted: auto-replied\n", TRUE },
		{ "AUTO-SUBMITTED: Auto-Notified; owner-email=x@y\n", TRUE },
		{ "Auto-Submitted:\n", TRUE },
		{ "Precedence: junk\n", TRUE },
		{ "Precedence: bulk\n", TRUE },
		{ "Precedence: list\n", TRUE },
		/* what vger and Mailman put on every relayed message */
		{ "Precedence: bulk\nList-Id: <widgets.lists.example.org>\n",
		  FALSE },
		{ "List-Id: Widgets <widgets.lists.example.org>\n"
		  "Precedence: list\n", FALSE },
		{ "Precedence: first-class\n", FALSE },
		{ "Precedence: junk\nList-Id: <w.example.org>\n", TRUE },
		{ "X-Patchwork-Hint: ignore\n", TRUE },
		{ "X-Patchwork-Hint: IGNORE\n", TRUE },
		{ "X-Patchwork-Hint: keep\n", FALSE },
		{ "X-Auto-Response-Suppress: All\n", TRUE },
		{ "X-Auto-Response-Suppress: DR, AutoReply\n", TRUE },
		{ "X-Auto-Response-Suppress: OOF\n", FALSE },
		{ "X-Patchgate: 0.0.1\n", TRUE },
		{ "x-patchgate: whatever\n", TRUE },
		{ "Return-Path: <>\n", TRUE },
		{ "Return-Path: <zoe@example.org>\n", FALSE },
		{ "Content-Type: multipart/report; report-type=delivery-status;"
		  " boundary=x\n", TRUE },
		{ "Content-Type: text/plain; charset=utf-8\n", FALSE },
		{ "X-Auto-Submitted: no\n", FALSE },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
		g_autofree char *raw = g_strdup_printf(
			"%s%s\nbody\nAuto-Submitted: auto-generated\n",
			table[i].headers, H);
		g_autoptr(GBytes) b = g_bytes_new(raw, strlen(raw));
		const char *why = NULL;

		g_test_message("case %zu", i);
		g_assert_cmpint(pgate_email_is_automated(cfg, b, &why), ==,
				table[i].automated);
		g_assert_true((why != NULL) == table[i].automated);
	}

	/* From and Message-ID: daemons and ourselves */
	const AutoCase from_table[] = {
		{ "From: MAILER-DAEMON@mx.example.org\n", TRUE },
		{ "From: Mail Delivery System <Mailer-Daemon@mx.example.org>\n",
		  TRUE },
		{ "From: postmaster@example.org\n", TRUE },
		{ "From: Widget CI <CI@patchgate.example.net>\n", TRUE },
		{ "From: Zoe <zoe@example.org>\n", FALSE },
		{ "From: daemon-fan@example.org\n", FALSE },
	};
	for (gsize i = 0; i < G_N_ELEMENTS(from_table); i++) {
		g_autofree char *raw = g_strdup_printf(
			"%sSubject: x\nMessage-ID: <2@example.org>\n\nbody\n",
			from_table[i].headers);
		g_autoptr(GBytes) b = g_bytes_new(raw, strlen(raw));

		g_test_message("from case %zu", i);
		g_assert_cmpint(pgate_email_is_automated(cfg, b, NULL), ==,
				from_table[i].automated);
	}
	g_autofree char *own_id = pgate_email_message_id(
		"k", "ci@patchgate.example.net");
	g_autofree char *own = g_strdup_printf(
		"From: Someone <someone@example.org>\nSubject: x\n"
		"Message-ID: <%s>\n\nbody\n", own_id);
	g_autoptr(GBytes) own_b = g_bytes_new(own, strlen(own));
	g_assert_true(pgate_email_is_automated(cfg, own_b, NULL));
	/* without the configuration, only the headers themselves count */
	g_assert_false(pgate_email_is_automated(NULL, own_b, NULL));

	/* CRLF headers, folded, and an mbox From_ line */
	const char *crlf = "From abc Mon Sep 17 00:00:00 2001\r\n"
			   "From: Zoe <zoe@example.org>\r\n"
			   "Auto-Submitted:\r\n auto-generated\r\n"
			   "Subject: x\r\n\r\nbody\r\n";
	g_autoptr(GBytes) crlf_b = g_bytes_new_static(crlf, strlen(crlf));
	g_assert_true(pgate_email_is_automated(cfg, crlf_b, NULL));

	/* headers that never end: unreadable, so automated */
	GString *huge = g_string_new("From: zoe@example.org\n");
	while (huge->len < 300 * 1024)
		g_string_append(huge, "X-Filler: 0123456789abcdef\n");
	g_autoptr(GBytes) huge_b = g_string_free_to_bytes(huge);
	const char *why = NULL;
	g_assert_true(pgate_email_is_automated(cfg, huge_b, &why));
	g_assert_nonnull(strstr(why, "256 KiB"));
	g_assert_true(pgate_email_is_automated(cfg, NULL, NULL));
}

static void
test_automated_real(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) reply = NULL;
	g_autoptr(GError) err = NULL;
	const char *why = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	/* a patch as git format-patch writes it is answered... */
	g_assert_false(pgate_email_is_automated(cfg, s->cover_raw, NULL));
	g_assert_false(pgate_email_is_automated(cfg, s->patch2_raw, NULL));
	/* ...our own reply never is, with or without the configuration */
	r = series_report(s, NULL);
	reply = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	g_assert_true(pgate_email_is_automated(cfg, reply, &why));
	g_assert_true(pgate_email_is_automated(NULL, reply, NULL));
}

/* ---- composition ------------------------------------------------------ */

static char *
golden_path(const char *name)
{
	return g_test_build_filename(G_TEST_DIST, "data", name, NULL);
}

static void
test_compose_golden(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);

	/* every header */
	InternetAddressList *from = g_mime_message_get_from(m);
	g_assert_cmpint(internet_address_list_length(from), ==, 1);
	InternetAddress *f = internet_address_list_get_address(from, 0);
	g_assert_cmpstr(internet_address_get_name(f), ==, "Widget CI");
	g_assert_cmpstr(internet_address_mailbox_get_addr(
				INTERNET_ADDRESS_MAILBOX(f)), ==,
			"ci@patchgate.example.net");
	InternetAddressList *to = g_mime_message_get_to(m);
	g_assert_cmpint(internet_address_list_length(to), ==, 1);
	InternetAddress *t = internet_address_list_get_address(to, 0);
	g_assert_cmpstr(internet_address_get_name(t), ==, "Zoë Ünïcode");
	g_assert_cmpstr(internet_address_mailbox_get_addr(
				INTERNET_ADDRESS_MAILBOX(t)), ==,
			"zoe@example.org");
	InternetAddressList *cc = g_mime_message_get_cc(m);
	g_assert_cmpint(internet_address_list_length(cc), ==, 1);
	g_assert_cmpstr(internet_address_mailbox_get_addr(
				INTERNET_ADDRESS_MAILBOX(
					internet_address_list_get_address(cc,
									  0))),
			==, "widgets@lists.example.org");
	g_autofree char *want_subject = g_strdup_printf(
		"Re: %s", g_mime_message_get_subject(s->cover));
	g_assert_cmpstr(g_mime_message_get_subject(m), ==, want_subject);
	g_assert_cmpstr(g_mime_message_get_subject(m), ==,
			"Re: [PATCH v3 0/2] widget: fix the Zoë driver's two "
			"bugs");
	GDateTime *date = g_mime_message_get_date(m);
	g_assert_cmpint(g_date_time_to_unix(date), ==, 1700003600);
	g_autofree char *mid = pgate_email_message_id(
		"s0123456789ab/v3/final", "ci@patchgate.example.net");
	g_assert_cmpstr(g_mime_message_get_message_id(m), ==, mid);
	g_assert_true(g_str_has_prefix(mid, "patchgate."));
	g_assert_true(g_str_has_suffix(mid, "@patchgate.example.net"));
	g_assert_cmpstr(header(m, "Auto-Submitted"), ==, "auto-replied");
	g_assert_cmpstr(header(m, "X-Auto-Response-Suppress"), ==, "All");
	g_assert_cmpstr(header(m, "X-Patchwork-Hint"), ==, "ignore");
	g_assert_nonnull(header(m, "X-Patchgate"));
	g_assert_cmpstr(header(m, "MIME-Version"), ==, "1.0");
	GMimeObject *part = g_mime_message_get_mime_part(m);
	GMimeContentType *ct = g_mime_object_get_content_type(part);
	g_assert_true(g_mime_content_type_is_type(ct, "text", "plain"));
	g_assert_cmpstr(g_mime_content_type_get_parameter(ct, "charset"), ==,
			"utf-8");
	g_assert_cmpint(g_mime_part_get_content_encoding(GMIME_PART(part)),
			==, GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE);

	/* threading: the reply hangs under the cover letter */
	const char *cover_id = g_mime_message_get_message_id(s->cover);
	g_autoptr(GPtrArray) irt = ids_of(header(m, "In-Reply-To"));
	g_autoptr(GPtrArray) refs = ids_of(header(m, "References"));
	g_assert_cmpuint(irt->len, ==, 1);
	g_assert_cmpstr(irt->pdata[0], ==, cover_id);
	g_assert_cmpuint(refs->len, ==, 1);
	g_assert_cmpstr(refs->pdata[0], ==, cover_id);
	/* and the patches hang under it too: one thread */
	g_autoptr(GPtrArray) p2refs = ids_of(header(s->patch2, "References"));
	g_assert_cmpstr(p2refs->pdata[0], ==, cover_id);

	/* the raw headers are 7-bit with lines within RFC 5322's limit */
	gsize len;
	const char *raw = g_bytes_get_data(out, &len);
	const char *end = g_strstr_len(raw, (gssize)len, "\n\n");
	g_assert_nonnull(end);
	for (const char *p = raw; p < end; p++)
		g_assert_cmpint((guchar)*p, <, 0x80);
	g_autofree char *rawz = g_strndup(raw, len);
	g_auto(GStrv) hlines = g_strsplit(rawz, "\n", -1);
	for (guint i = 0; hlines[i] && *hlines[i]; i++)
		g_assert_cmpuint(strlen(hlines[i]), <=, 78);

	/* the body, against the golden file */
	g_autofree char *body = body_text(m);
	g_autofree char *gpath = golden_path("fail.body");
	g_autofree char *golden = read_file(gpath);
	const char *cid = g_mime_message_get_message_id(s->cover);
	g_autofree char *stamp = g_strndup(cid + 6, strcspn(cid + 6, "."));
	const char *subst[] = { "@BASE@", s->base, "@HEAD@", s->head,
				"@VERSION@", PGATE_TEST_VERSION,
				"@STAMP@", stamp, NULL };
	g_autofree char *want = substitute(golden, subst);
	if (g_strcmp0(body, want) != 0) {
		g_autofree char *got = g_build_filename(g_get_tmp_dir(),
							"fail.body.got", NULL);

		g_file_set_contents(got, body, -1, NULL);
		g_test_message("body differs; written to %s", got);
	}
	g_assert_cmpstr(body, ==, want);
}

static void
test_compose_pass(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(
		"[report.email]\nenabled=true\nto=everyone\nwhen=always\n"
		"from_address=ci@patchgate.example.net\nsendmail=/bin/true\n");
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	g_ptr_array_set_size(r->jobs, 0);
	g_ptr_array_add(r->jobs,
			pgate_email_job_new("build", PGATE_EMAIL_VERDICT_PASS));
	PgateEmailJob *w = pgate_email_job_new("sparse",
					       PGATE_EMAIL_VERDICT_WARNING);
	w->reason = g_strdup("2 new warnings");
	g_ptr_array_add(r->jobs, w);
	g_ptr_array_set_size(r->previous, 0);
	g_ptr_array_set_size(r->links, 0);
	g_free(r->submitter_name);
	r->submitter_name = NULL;
	g_assert_false(pgate_email_report_failed(r));
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	/* no cc_list: no Cc */
	g_assert_cmpint(internet_address_list_length(
				g_mime_message_get_cc(m)), ==, 0);
	g_autofree char *body = body_text(m);
	g_autofree char *gpath = golden_path("pass.body");
	g_autofree char *golden = read_file(gpath);
	const char *cid = g_mime_message_get_message_id(s->cover);
	g_autofree char *stamp = g_strndup(cid + 6, strcspn(cid + 6, "."));
	const char *subst[] = { "@BASE@", s->base, "@HEAD@", s->head,
				"@VERSION@", PGATE_TEST_VERSION,
				"@STAMP@", stamp, NULL };
	g_autofree char *want = substitute(golden, subst);
	if (g_strcmp0(body, want) != 0) {
		g_autofree char *got = g_build_filename(g_get_tmp_dir(),
							"pass.body.got", NULL);

		g_file_set_contents(got, body, -1, NULL);
		g_test_message("body differs; written to %s", got);
	}
	g_assert_cmpstr(body, ==, want);
}

static void
test_compose_apply_failure(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	g_ptr_array_set_size(r->jobs, 0);
	g_ptr_array_add(r->apply_failures, pgate_email_apply_failure_new(
		2, "a.txt", "patch does not apply"));
	g_assert_true(pgate_email_report_failed(r));
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_autofree char *body = body_text(m);
	g_autofree char *flat = g_strdelimit(g_strdup(body), "\n", ' ');
	g_assert_nonnull(strstr(flat, "could not test this series because 1 "
				      "patch did not apply"));
	g_assert_nonnull(strstr(body, "\n  - patch 2/2, file a.txt (patch "
				      "does not apply)\n"));
	g_assert_null(strstr(body, "Results:"));
	/* the base it did not apply to is named (#33) */
	g_assert_nonnull(strstr(flat, "did not apply to the base named "
				      "below"));
	g_assert_nonnull(strstr(body, "\n  base        main at "));
	g_assert_nonnull(strstr(flat, "Thank you for the patches. "));
}

/* One patch is thanked for as one; a report that knows no base does not
 * point at one. */
static void
test_compose_apply_failure_one(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	r->patch_count = 1;
	g_clear_pointer(&r->base_branch, g_free);
	g_clear_pointer(&r->base_commit, g_free);
	g_clear_pointer(&r->head_commit, g_free);
	g_ptr_array_set_size(r->jobs, 0);
	g_ptr_array_add(r->apply_failures, pgate_email_apply_failure_new(
		1, "a.txt", "patch does not apply"));
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_autofree char *body = body_text(m);
	g_autofree char *flat = g_strdelimit(g_strdup(body), "\n", ' ');
	g_assert_nonnull(strstr(flat, "Thank you for the patch. "));
	g_assert_nonnull(strstr(flat, "because 1 patch did not apply to its "
				      "base, so no job ran."));
	g_assert_null(strstr(body, "\n  base "));
}

/* Answering a patch (no cover): its References are kept, it is added. */
static void
test_compose_reply_to_patch(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, s->patch2);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_autoptr(GPtrArray) orig = ids_of(header(s->patch2, "References"));
	g_autoptr(GPtrArray) refs = ids_of(header(m, "References"));
	g_autoptr(GPtrArray) irt = ids_of(header(m, "In-Reply-To"));
	const char *p2 = g_mime_message_get_message_id(s->patch2);

	g_assert_cmpuint(orig->len, ==, 2);   /* cover, patch 1 */
	g_assert_cmpuint(refs->len, ==, 3);
	g_assert_cmpstr(refs->pdata[0], ==, orig->pdata[0]);
	g_assert_cmpstr(refs->pdata[1], ==, orig->pdata[1]);
	g_assert_cmpstr(refs->pdata[2], ==, p2);
	g_assert_cmpstr(irt->pdata[0], ==, p2);
	g_assert_cmpstr(g_mime_message_get_subject(m), ==,
			"Re: [PATCH v3 2/2] widget: add three");
}

static PgateEmailReport *
plain_report(void)
{
	PgateEmailReport *r = pgate_email_report_new();

	r->idempotency_key = g_strdup("key-1");
	r->subject = g_strdup("[PATCH] x: y");
	r->msgid = g_strdup("<parent@example.org>");
	r->submitter_name = g_strdup("A U Thor");
	r->submitter_email = g_strdup("author@example.org");
	r->date = 1700000000;
	g_ptr_array_add(r->jobs, pgate_email_job_new("build",
						     PGATE_EMAIL_VERDICT_FAIL));
	return r;
}

static GMimeMessage *
compose_parse(const PgateEmailConfig *cfg, const PgateEmailReport *r)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GBytes) out = pgate_email_compose(cfg, r, &err);

	g_assert_no_error(err);
	return parse_bytes(out);
}

static void
test_compose_references_bounded(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = plain_report();
	g_autoptr(GMimeMessage) m = NULL;

	for (guint i = 0; i < 30; i++)
		g_ptr_array_add(r->references,
				g_strdup_printf("<ref%u@example.org>", i));
	/* broken or duplicate ones are dropped */
	g_ptr_array_add(r->references, g_strdup("has space@example.org"));
	g_ptr_array_add(r->references, g_strdup("<a\r\nX-Evil: 1>"));
	g_ptr_array_add(r->references, g_strdup("ref29@example.org"));
	g_ptr_array_add(r->references, g_strdup("<parent@example.org>"));
	m = compose_parse(cfg, r);
	g_autoptr(GPtrArray) refs = ids_of(header(m, "References"));
	g_assert_cmpuint(refs->len, ==, 12);
	g_assert_cmpstr(refs->pdata[0], ==, "ref0@example.org");
	g_assert_cmpstr(refs->pdata[1], ==, "ref20@example.org");
	g_assert_cmpstr(refs->pdata[10], ==, "ref29@example.org");
	g_assert_cmpstr(refs->pdata[11], ==, "parent@example.org");
	g_assert_null(header(m, "X-Evil"));
}

static void
test_compose_no_double_re(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	const char *table[][2] = {
		{ "[PATCH] x: y", "Re: [PATCH] x: y" },
		{ "Re: [PATCH] x: y", "Re: [PATCH] x: y" },
		{ "RE: re: Re:[PATCH] x", "Re: [PATCH] x" },
		{ "Re[2]: Aw: [PATCH] x", "Re: [PATCH] x" },
		{ "  re :  [PATCH] x", "Re: [PATCH] x" },
		{ "Reorder the widgets", "Re: Reorder the widgets" },
		{ "Re:", "Re: your patches" },
		{ "", "Re: your patches" },
		{ "[PATCH]\r\n\tfolded\nsubject", "Re: [PATCH] folded subject" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
		g_autoptr(PgateEmailReport) r = plain_report();
		g_autoptr(GMimeMessage) m = NULL;

		g_free(r->subject);
		r->subject = g_strdup(table[i][0]);
		m = compose_parse(cfg, r);
		g_assert_cmpstr(g_mime_message_get_subject(m), ==, table[i][1]);
	}
	/* a subject is bounded */
	g_autoptr(PgateEmailReport) r = plain_report();
	g_free(r->subject);
	r->subject = g_strnfill(5000, 'x');
	g_autoptr(GMimeMessage) m = compose_parse(cfg, r);
	g_assert_cmpuint(strlen(g_mime_message_get_subject(m)), <=, 310);
}

static void
test_compose_rfc2047(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(
		"[report.email]\nenabled=true\nto=everyone\ncc_list=true\n"
		"from_address=ci@example.net\n"
		"from_name=Ŝtrange, \"Quoted\" CI (bot)\n"
		"sendmail=/bin/true\n");
	g_autoptr(PgateEmailReport) r = plain_report();
	const char *subject = "[PATCH v2 1/3] ünïcode: make the "
			      "Größenberechnung of the widget driver correct "
			      "again — 日本語 too";
	const char *name = "Jöhn \"Q\" Düe, Jr.";

	g_free(r->subject);
	r->subject = g_strdup(subject);
	g_free(r->submitter_name);
	r->submitter_name = g_strdup(name);
	r->list_address = g_strdup("widgets@lists.example.org");
	g_autoptr(GError) err = NULL;
	g_autoptr(GBytes) out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	g_autoptr(GMimeMessage) m = parse_bytes(out);
	g_autofree char *want = g_strdup_printf("Re: %s", subject);

	g_assert_cmpstr(g_mime_message_get_subject(m), ==, want);
	InternetAddress *t = internet_address_list_get_address(
		g_mime_message_get_to(m), 0);
	g_assert_cmpstr(internet_address_get_name(t), ==, name);
	InternetAddress *f = internet_address_list_get_address(
		g_mime_message_get_from(m), 0);
	g_assert_cmpstr(internet_address_get_name(f), ==,
			"Ŝtrange, \"Quoted\" CI (bot)");
	g_assert_cmpint(internet_address_list_length(g_mime_message_get_to(m)),
			==, 1);
	g_assert_cmpint(internet_address_list_length(g_mime_message_get_cc(m)),
			==, 1);
	/* encoded words, not 8-bit bytes; lines folded */
	gsize len;
	const char *raw = g_bytes_get_data(out, &len);
	const char *end = g_strstr_len(raw, (gssize)len, "\n\n");
	for (const char *p = raw; p < end; p++)
		g_assert_cmpint((guchar)*p, <, 0x80);
	g_autofree char *lower = g_ascii_strdown(raw, end - raw);
	g_assert_nonnull(strstr(lower, "=?utf-8?"));
	g_assert_null(strstr(lower, "=?iso-8859"));
	g_autofree char *rawz = g_strndup(raw, len);
	g_auto(GStrv) lines = g_strsplit(rawz, "\n", -1);
	for (guint i = 0; lines[i] && *lines[i]; i++)
		g_assert_cmpuint(strlen(lines[i]), <=, 78);
	/* the greeting carries the decoded name */
	g_autofree char *body = body_text(m);
	g_autofree char *hi = g_strdup_printf("Hi %s,\n", name);
	g_assert_true(g_str_has_prefix(body, hi));
}

/* The lines of a decoded body above the signature. */
static GPtrArray *
body_lines(GMimeMessage *m)
{
	g_autofree char *body = body_text(m);
	char *sig = strstr(body, "\n-- \n");
	GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
	g_auto(GStrv) split = NULL;

	g_assert_nonnull(sig);
	sig[1] = '\0';
	split = g_strsplit(body, "\n", -1);
	for (guint i = 0; split[i]; i++)
		g_ptr_array_add(lines, g_strdup(split[i]));
	return lines;
}

static void
test_compose_excerpt_bounded(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = plain_report();
	PgateEmailJob *job = r->jobs->pdata[0];
	GString *log = g_string_new(NULL);

	for (guint i = 1; i <= 1000; i++)
		g_string_append_printf(log, "line %u of the build log\n", i);
	g_string_append(log, "\n\n");
	job->log_excerpt = g_string_free(log, FALSE);
	job->failed_step = g_strdup("make");

	g_autoptr(GMimeMessage) m = compose_parse(cfg, r);
	g_autoptr(GPtrArray) lines = body_lines(m);
	guint quoted = 0, bytes = 0;
	gboolean note = FALSE;
	const char *last = NULL;

	for (guint i = 0; i < lines->len; i++) {
		const char *l = lines->pdata[i];

		if (g_str_has_prefix(l, "    | ")) {
			quoted++;
			bytes += (guint)strlen(l + 6) + 1;
			last = l;
		}
		if (strcmp(l, "    [... 960 earlier lines not shown]") == 0)
			note = TRUE;
	}
	g_assert_cmpuint(quoted, ==, 40);
	g_assert_cmpuint(bytes, <=, 4096);
	g_assert_true(note);
	g_assert_cmpstr(last, ==, "    | line 1000 of the build log");

	/* the byte bound, and long lines cut */
	g_autoptr(PgateEmailConfig) small = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsendmail=/bin/true\n"
		"log_lines=100\nlog_bytes=1000\n");
	g_free(job->log_excerpt);
	GString *wide = g_string_new(NULL);
	for (guint i = 0; i < 50; i++) {
		for (guint j = 0; j < 100; j++)
			g_string_append(wide, "wide");
		g_string_append(wide, "\n");
	}
	job->log_excerpt = g_string_free(wide, FALSE);
	g_autoptr(GMimeMessage) m2 = compose_parse(small, r);
	g_autoptr(GPtrArray) l2 = body_lines(m2);
	quoted = bytes = 0;
	for (guint i = 0; i < l2->len; i++) {
		const char *l = l2->pdata[i];

		if (!g_str_has_prefix(l, "    | "))
			continue;
		quoted++;
		bytes += (guint)strlen(l + 6) + 1;
		g_assert_cmpuint(g_utf8_strlen(l + 6, -1), <=, 200);
		g_assert_true(g_str_has_suffix(l, "..."));
	}
	g_assert_cmpuint(quoted, ==, 4);
	g_assert_cmpuint(bytes, <=, 1000);

	/* log_lines = 0: no excerpt at all */
	g_autoptr(PgateEmailConfig) none = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@example.net\nsendmail=/bin/true\n"
		"log_lines=0\n");
	g_autoptr(GMimeMessage) m3 = compose_parse(none, r);
	g_autofree char *b3 = body_text(m3);
	g_assert_null(strstr(b3, "    |"));
	g_assert_nonnull(strstr(b3, "The job build failed at step \"make\".\n"));
}

/* What b4 (0.12, LoreMessage.find_trailers) would take for a trailer:
 * ^\s*(\w\S+):\s+(\S.*); and the diff, diffstat, signature and mbox
 * shapes. */
static gboolean
dangerous(const char *line)
{
	static GRegex *re;

	if (re == NULL)
		re = g_regex_new("^\\s*\\w\\S+:\\s+\\S|^---|^\\+\\+\\+ |^diff |"
				 "^Index: |^@@ |^-- $|^From |^>From |"
				 "^\\s*\\d+ file.*\\d+ (insertion|deletion)|"
				 "^GIT binary patch",
				 G_REGEX_OPTIMIZE, 0, NULL);
	return g_regex_match(re, line, 0, NULL);
}

static PgateEmailReport *
hostile_report(void)
{
	const char *evil = "Signed-off-by: Mallory <m@evil.example>\n"
			   "Reviewed-by: Mallory <m@evil.example>\n"
			   "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-- \n"
			   "From mallory Mon Sep 17 00:00:00 2001\n"
			   "Link: https://evil.example/\n";
	PgateEmailReport *r = pgate_email_report_new();

	r->idempotency_key = g_strdup("hostile");
	r->subject = g_strdup("[PATCH] Signed-off-by: x <y@z.example>");
	r->msgid = g_strdup("<h@example.org>");
	r->submitter_name = g_strdup(evil);
	r->submitter_email = g_strdup("m@evil.example");
	r->series_name = g_strdup(evil);
	r->series_id = g_strdup(evil);
	r->version = 2;
	r->tree = g_strdup(evil);
	r->base_branch = g_strdup(evil);
	r->base_commit = g_strdup(evil);
	r->head_commit = g_strdup(evil);
	g_ptr_array_add(r->previous, pgate_email_previous_new(1, evil));
	g_ptr_array_add(r->apply_failures,
			pgate_email_apply_failure_new(1, evil, evil));
	for (guint v = 0; v < 5; v++) {
		PgateEmailJob *job = pgate_email_job_new(evil, v);

		job->reason = g_strdup(evil);
		job->failed_step = g_strdup(evil);
		job->url = g_strdup("https://ci.example.org/x\nSigned-off-by: a "
				    "<b@c.example>");
		job->log_excerpt = g_strdup_printf(
			"%s\033[31mred\033[0m\r\nprogress 10%%\rprogress 100%%\n"
			" 3 files changed, 10 insertions(+), 2 deletions(-)\n"
			"diff --git a/x b/x\nGIT binary patch\n"
			"\t    Acked-by: Tab <t@a.example>\n"
			"bidi \u202e-- \n\xff\xfe invalid utf-8\n", evil);
		g_ptr_array_add(r->jobs, job);
	}
	g_ptr_array_add(r->links, pgate_email_link_new(evil,
		"https://patchwork.example.org/series/1/"));
	g_ptr_array_add(r->links, pgate_email_link_new(
		"js", "javascript:alert(1)"));
	return r;
}

static void
test_compose_defanged(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = hostile_report();
	g_autoptr(GMimeMessage) m = compose_parse(cfg, r);
	g_autoptr(GPtrArray) lines = body_lines(m);
	g_autofree char *body = body_text(m);

	for (guint i = 0; i < lines->len; i++) {
		const char *l = lines->pdata[i];

		if (dangerous(l))
			g_test_message("thread syntax in the body: %s", l);
		g_assert_false(dangerous(l));
		g_assert_null(strstr(l, "\033"));
		g_assert_null(strstr(l, "\r"));
		g_assert_null(strstr(l, "\u202e"));
	}
	g_assert_true(g_utf8_validate(body, -1, NULL));
	/* the signature separator appears once: ours */
	g_assert_nonnull(strstr(body, "\n-- \n"));
	g_assert_null(strstr(strstr(body, "\n-- \n") + 1, "\n-- \n"));
	/* the log is there, quoted, not lost */
	g_assert_nonnull(strstr(body, "    | Signed-off-by: Mallory"));
	g_assert_nonnull(strstr(body, "    | --- a/x\n"));
	g_assert_nonnull(strstr(body, "    | progress 100%\n"));
	g_assert_nonnull(strstr(body, "    | red\n"));
	/* a URL with a line break in it, or not http(s), is left out */
	g_assert_null(strstr(body, "javascript:"));
	g_assert_null(strstr(body, "ci.example.org/x"));
	/* no header was injected through the name or subject */
	g_assert_null(header(m, "Signed-off-by"));
	g_assert_null(header(m, "Link"));
}

/* b4 itself, when installed, finds nothing in our replies. */
static void
test_compose_b4(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autofree char *script = g_test_build_filename(G_TEST_DIST,
							"b4_check.py", NULL);
	g_autofree char *dir = NULL;
	const PgateEmailReport *reports[2];
	g_autoptr(PgateEmailReport) hostile = hostile_report();
	g_autoptr(PgateEmailReport) plain = plain_report();

	if (!have_program(PY)) {
		g_test_skip("needs " PY);
		return;
	}
	reports[0] = hostile;
	reports[1] = plain;
	dir = make_tmpdir();
	for (guint i = 0; i < 2; i++) {
		g_autoptr(GMimeMessage) m = compose_parse(cfg, reports[i]);
		g_autofree char *body = body_text(m);
		g_autofree char *path = g_build_filename(dir, "body", NULL);
		g_autofree char *out = NULL, *errout = NULL;
		const char *argv[] = { PY, script, path, NULL };
		int status = 0;

		write_file(path, body, 0644);
		g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out,
			     &errout, &status, NULL);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
			g_test_skip("needs b4 (Debian package b4)");
			break;
		}
		g_test_message("b4 says: %s%s", out, errout);
		g_assert_cmpstr(out, ==, "");
		g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* and the check can fail: a body with a trailer is caught */
	{
		g_autofree char *path = g_build_filename(dir, "evil", NULL);
		g_autofree char *out = NULL;
		const char *argv[] = { PY, script, path, NULL };
		int status = 0;

		write_file(path, "Hi,\n\nTested-by: M <m@evil.example>\n",
			   0644);
		g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out,
			     NULL, &status, NULL);
		if (!(WIFEXITED(status) && WEXITSTATUS(status) == 77)) {
			g_assert_true(WIFEXITED(status) &&
				      WEXITSTATUS(status) == 1);
			g_assert_nonnull(strstr(out, "trailer Tested-by"));
		}
	}
	pgate_test_rm_rf(dir);
}

static void
test_compose_message_id(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailConfig) other = config_ok(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=bot@other.example\nsendmail=/bin/true\n");
	g_autoptr(PgateEmailReport) a = plain_report();
	g_autoptr(PgateEmailReport) b = plain_report();
	g_autoptr(PgateEmailReport) c = plain_report();

	/* the same key: the same Message-ID, whatever else changed */
	b->date = 1800000000;
	g_ptr_array_add(b->jobs, pgate_email_job_new("more",
						     PGATE_EMAIL_VERDICT_PASS));
	g_free(c->idempotency_key);
	c->idempotency_key = g_strdup("key-2");
	g_autoptr(GMimeMessage) ma = compose_parse(cfg, a);
	g_autoptr(GMimeMessage) mb = compose_parse(cfg, b);
	g_autoptr(GMimeMessage) mc = compose_parse(cfg, c);
	g_autoptr(GMimeMessage) md = compose_parse(other, a);
	const char *ida = g_mime_message_get_message_id(ma);

	g_assert_cmpstr(ida, ==, g_mime_message_get_message_id(mb));
	g_assert_cmpstr(ida, !=, g_mime_message_get_message_id(mc));
	g_assert_true(g_str_has_suffix(ida, "@patchgate.example.net"));
	g_assert_true(g_str_has_suffix(g_mime_message_get_message_id(md),
				       "@other.example"));
	g_autofree char *id = pgate_email_message_id("key-1",
						     "X@PatchGate.Example.NET");
	g_assert_cmpstr(id, ==, ida);
	/* sha256("key-1"), first 32 hex digits */
	g_assert_cmpstr(id, ==,
			"patchgate.be2974546978e3739e6d6da85c4be9f3"
			"@patchgate.example.net");
}

static void
test_compose_invalid(void)
{
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	struct {
		const char *key, *msgid, *email;
	} table[] = {
		{ NULL, "<a@b>", "x@example.org" },
		{ "", "<a@b>", "x@example.org" },
		{ "k", NULL, "x@example.org" },
		{ "k", "<>", "x@example.org" },
		{ "k", "<a b@c>", "x@example.org" },
		{ "k", "<a@b>", NULL },
		{ "k", "<a@b>", "not an address" },
		{ "k", "<a@b>", "x@example.org\r\nBcc: y@example.org" },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
		g_autoptr(PgateEmailReport) r = pgate_email_report_new();
		g_autoptr(GError) err = NULL;

		r->idempotency_key = g_strdup(table[i].key);
		r->msgid = g_strdup(table[i].msgid);
		r->submitter_email = g_strdup(table[i].email);
		g_assert_null(pgate_email_compose(cfg, r, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID);
	}
}

/* ---- SMTP servers ----------------------------------------------------- */

typedef struct {
	GPid pid;
	int port;
	char *dir;        /* a temporary directory; the maildir is dir/md */
	char *maildir;
} Server;

static void
server_stop(Server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
}

static void
server_free(Server *s)
{
	server_stop(s);
	pgate_test_rm_rf(s->dir);
	g_free(s->dir);
	g_free(s->maildir);
	g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Server, server_free)

static int
free_port(void)
{
	struct sockaddr_in a = { 0 };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
	close(fd);
	return ntohs(a.sin_port);
}

static gboolean
port_open(int port)
{
	struct sockaddr_in a = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	gboolean ok;

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
}

static gboolean
have_aiosmtpd(void)
{
	const char *argv[] = { PY, "-c", "import aiosmtpd", NULL };
	int status = 1;

	if (!have_program(PY))
		return FALSE;
	g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL |
		     G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL,
		     &status, NULL);
	return g_spawn_check_wait_status(status, NULL);
}

/* A server dies with the test, even when an assertion aborts it. */
static void
die_with_parent(gpointer unused)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Starts @argv ("@PORT@" and "@MD@" replaced), waits until it listens. */
static Server *
server_start(const char *const *argv_tmpl)
{
	Server *s = g_new0(Server, 1);
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) env = g_get_environ();
	g_autofree char *srcdir = g_test_build_filename(G_TEST_DIST, ".", NULL);
	g_autofree char *port = NULL;

	s->dir = make_tmpdir();
	s->maildir = g_build_filename(s->dir, "md", NULL);
	s->port = free_port();
	port = g_strdup_printf("%d", s->port);
	for (guint i = 0; argv_tmpl[i]; i++) {
		const char *subst[] = { "@PORT@", port, "@MD@", s->maildir,
					"@DIR@", s->dir, NULL };

		g_ptr_array_add(argv, substitute(argv_tmpl[i], subst));
	}
	g_ptr_array_add(argv, NULL);
	env = g_environ_setenv(env, "PYTHONPATH", srcdir, TRUE);
	env = g_environ_setenv(env, "PYTHONDONTWRITEBYTECODE", "1", TRUE);
	env = g_environ_unsetenv(env, "LD_PRELOAD");
	/* its chatter goes to DIR/server.log, not into the TAP stream */
	g_autofree char *log = g_build_filename(s->dir, "server.log", NULL);
	int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	g_assert_cmpint(logfd, >=, 0);
	g_spawn_async_with_pipes_and_fds(s->dir,
		(const char *const *)argv->pdata, (const char *const *)env,
		G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
		die_with_parent, NULL, -1, -1, logfd, NULL, NULL, 0, &s->pid,
		NULL, NULL, NULL, &err);
	close(logfd);
	g_assert_no_error(err);
	for (guint i = 0; i < 200; i++) {
		if (port_open(s->port))
			return s;
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			g_autofree char *text = read_file(log);

			s->pid = 0;
			g_error("the SMTP sink %s exited: %s", argv_tmpl[1],
				text);
		}
		g_usleep(50000);
	}
	g_error("the SMTP sink did not listen on port %d", s->port);
	return NULL;
}

static Server *
sink_start(void)
{
	const char *argv[] = { PY, "-m", "aiosmtpd", "-n", "-l",
			       "127.0.0.1:@PORT@", "-c",
			       "aiosmtpd.handlers.Mailbox", "@MD@", NULL };

	return server_start(argv);
}

/* The messages delivered into @s's maildir, sorted by file name. */
static GPtrArray *
delivered(Server *s)
{
	g_autofree char *newdir = g_build_filename(s->maildir, "new", NULL);
	g_autoptr(GDir) dir = g_dir_open(newdir, 0, NULL);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	const char *n;

	while (dir != NULL && (n = g_dir_read_name(dir)) != NULL)
		g_ptr_array_add(names, g_build_filename(newdir, n, NULL));
	return names;
}

static char *
smtp_cfg(int port, const char *extra)
{
	return g_strdup_printf("[report.email]\nenabled=true\nto=everyone\n"
			       "cc_list=true\n"
			       "from_address=ci@patchgate.example.net\n"
			       "envelope_from=bounces@patchgate.example.net\n"
			       "smtp_url=smtp://127.0.0.1:%d\n"
			       "connect_timeout=5\ntimeout=20\n%s",
			       port, extra);
}

static GPtrArray *
strv_array(const char *a, const char *b)
{
	GPtrArray *r = g_ptr_array_new_with_free_func(g_free);

	g_ptr_array_add(r, g_strdup(a));
	if (b)
		g_ptr_array_add(r, g_strdup(b));
	return r;
}

static void
test_send_smtp(void)
{
	g_autoptr(Server) srv = NULL;
	g_autoptr(Series) s = NULL;
	g_autofree char *ini = NULL;
	g_autoptr(PgateEmailConfig) cfg = NULL;
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) msg = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) rcpts = NULL;
	PgateEmailDecision d;

	if (!have_aiosmtpd()) {
		g_test_skip("needs " PY " with aiosmtpd (python3-aiosmtpd)");
		return;
	}
	s = make_series();
	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	srv = sink_start();
	ini = smtp_cfg(srv->port, "starttls=no\n");
	cfg = config_ok(ini);
	r = series_report(s, NULL);
	rcpts = pgate_email_recipients(cfg, r->submitter_email,
				       pgate_email_report_failed(r),
				       r->list_address, &d);
	g_assert_cmpint(d, ==, PGATE_EMAIL_SEND);
	msg = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_assert_no_error(err);

	g_autoptr(GPtrArray) got = delivered(srv);
	g_assert_cmpuint(got->len, ==, 1);
	g_autofree char *text = read_file(got->pdata[0]);
	g_autoptr(GMimeMessage) m = parse_message(text, strlen(text),
						  GMIME_FORMAT_MESSAGE);
	g_autoptr(GMimeMessage) sent = parse_bytes(msg);

	/* the envelope, as the sink saw it */
	g_assert_cmpstr(header(m, "X-MailFrom"), ==,
			"bounces@patchgate.example.net");
	g_assert_cmpstr(header(m, "X-RcptTo"), ==,
			"zoe@example.org, widgets@lists.example.org");
	/* the headers and body arrived unchanged */
	const char *names[] = { "From", "To", "Cc", "Subject", "Date",
				"Message-Id", "In-Reply-To", "References",
				"Auto-Submitted", "X-Auto-Response-Suppress",
				"X-Patchwork-Hint", "X-Patchgate",
				"MIME-Version" };
	for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
		g_assert_cmpstr(header(m, names[i]), ==, header(sent, names[i]));
	g_assert_cmpstr(g_mime_message_get_message_id(m), ==,
			g_mime_message_get_message_id(sent));
	g_autoptr(GPtrArray) irt = ids_of(header(m, "In-Reply-To"));
	g_assert_cmpstr(irt->pdata[0], ==,
			g_mime_message_get_message_id(s->cover));
	g_autofree char *b1 = body_text(m);
	g_autofree char *b2 = body_text(sent);
	g_assert_cmpstr(b1, ==, b2);
}

/* Dot-stuffing and line ends: what SMTP must not change. */
static void
test_send_smtp_transparency(void)
{
	g_autoptr(Server) srv = NULL;
	g_autofree char *ini = NULL;
	g_autoptr(PgateEmailConfig) cfg = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);
	const char *raw = "From: ci@patchgate.example.net\n"
			  "To: a@example.org\nSubject: dots\n"
			  "Message-ID: <dots@patchgate.example.net>\n\n"
			  ".\n..\n.leading dot\nFrom the start\n"
			  "crlf line\r\nlast line without newline";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	if (!have_aiosmtpd()) {
		g_test_skip("needs " PY " with aiosmtpd (python3-aiosmtpd)");
		return;
	}
	srv = sink_start();
	ini = smtp_cfg(srv->port, "starttls=no\n");
	cfg = config_ok(ini);
	g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_assert_no_error(err);
	g_autoptr(GPtrArray) got = delivered(srv);
	g_assert_cmpuint(got->len, ==, 1);
	g_autofree char *text = read_file(got->pdata[0]);
	const char *body = strstr(text, "\n\n");
	g_assert_nonnull(body);
	g_assert_cmpstr(body + 2, ==,
			".\n..\n.leading dot\nFrom the start\ncrlf line\n"
			"last line without newline\n");
}

static void
test_send_smtp_down(void)
{
	int port = free_port();    /* nothing listens there */
	g_autofree char *ini = smtp_cfg(port, "starttls=no\n");
	g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);
	const char *raw = "Subject: x\n\nx\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(err));
	g_test_message("%s", err->message);
}

static void
test_send_smtp_reject(void)
{
	const char *argv[] = { PY, "-m", "aiosmtpd", "-n", "-l",
			       "127.0.0.1:@PORT@", "-c",
			       "reject_handler.RejectingMailbox", "@MD@",
			       NULL };
	g_autoptr(Server) srv = NULL;
	g_autofree char *ini = NULL;
	g_autoptr(PgateEmailConfig) cfg = NULL;
	const char *raw = "Subject: x\n\nx\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	if (!have_aiosmtpd()) {
		g_test_skip("needs " PY " with aiosmtpd (python3-aiosmtpd)");
		return;
	}
	srv = server_start(argv);
	ini = smtp_cfg(srv->port, "starttls=no\n");
	cfg = config_ok(ini);

	/* 550: permanent, with the server's words */
	{
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array(
			"ok@example.org", "reject550@example.org");

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED);
		g_assert_false(pgate_error_is_transient(err));
		g_test_message("%s", err->message);
		g_assert_nonnull(strstr(err->message, "550 5.1.1"));
		g_assert_nonnull(strstr(err->message, "User unknown"));
	}
	/* 451: transient */
	{
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("defer451@example.org",
							NULL);

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_IO);
		g_assert_true(pgate_error_is_transient(err));
		g_test_message("%s", err->message);
		g_assert_nonnull(strstr(err->message, "451 4.3.0"));
	}
	/* one refused recipient: nothing was delivered to anyone */
	g_autoptr(GPtrArray) none = delivered(srv);
	g_assert_cmpuint(none->len, ==, 0);
	/* and a good one goes through the same server */
	{
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("ok@example.org", NULL);

		g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_no_error(err);
	}
	g_autoptr(GPtrArray) one = delivered(srv);
	g_assert_cmpuint(one->len, ==, 1);
}

static void
test_send_smtp_auth(void)
{
	g_autofree char *script = g_test_build_filename(G_TEST_DIST,
							"auth_smtpd.py", NULL);
	const char *argv[] = { PY, script, "--port", "@PORT@", "--maildir",
			       "@MD@", "--user", "ci-bot", "--password-file",
			       NULL, NULL };
	g_autoptr(Server) srv = NULL;
	const char *raw = "Subject: auth\n\nx\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));
	g_autofree char *dir = make_tmpdir();
	g_autofree char *good = g_build_filename(dir, "good", NULL);
	g_autofree char *bad = g_build_filename(dir, "bad", NULL);

	if (!have_aiosmtpd()) {
		g_test_skip("needs " PY " with aiosmtpd (python3-aiosmtpd)");
		pgate_test_rm_rf(dir);
		return;
	}
	/* the server reads its password before it listens */
	g_autofree char *server_pw = g_build_filename(dir, "server-pw", NULL);
	write_file(server_pw, PASSWORD "\n", 0600);
	argv[9] = server_pw;
	srv = server_start(argv);
	write_file(good, PASSWORD "\n", 0600);
	write_file(bad, "wrong-" PASSWORD "\n", 0600);

	/* the right password: delivered */
	{
		g_autofree char *extra = g_strdup_printf(
			"starttls=no\nuser=ci-bot\npassword_file=%s\n", good);
		g_autofree char *ini = smtp_cfg(srv->port, extra);
		g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);

		g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_no_error(err);
		g_autoptr(GPtrArray) got = delivered(srv);
		g_assert_cmpuint(got->len, ==, 1);
	}
	/* a wrong one: permanent, and no password in the message */
	{
		g_autofree char *extra = g_strdup_printf(
			"starttls=no\nuser=ci-bot\npassword_file=%s\n", bad);
		g_autofree char *ini = smtp_cfg(srv->port, extra);
		g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_nonnull(err);
		g_test_message("%s", err->message);
		g_assert_false(pgate_error_is_transient(err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(err->message, "535"));
		g_assert_null(strstr(err->message, PASSWORD));
		g_assert_null(strstr(err->message, "Tr0ub4dor"));
	}
	/* no user at all: the server wants AUTH, a permanent 530 */
	{
		g_autofree char *ini = smtp_cfg(srv->port, "starttls=no\n");
		g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_test_message("%s", err->message);
		g_assert_false(pgate_error_is_transient(err));
		g_assert_nonnull(strstr(err->message, "530"));
	}
	/* the password from the environment works the same */
	{
		g_autofree char *ini = smtp_cfg(srv->port,
			"starttls=no\nuser=ci-bot\npassword_env=PGATE_TEST_PW\n");
		g_autoptr(PgateEmailConfig) cfg = NULL;
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("b@example.org", NULL);

		g_setenv("PGATE_TEST_PW", PASSWORD, TRUE);
		cfg = config_ok(ini);
		g_unsetenv("PGATE_TEST_PW");
		g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_no_error(err);
	}
	pgate_test_rm_rf(dir);
}

/* starttls = required against a server that offers none: permanent. */
static void
test_send_starttls_missing(void)
{
	g_autoptr(Server) srv = NULL;
	g_autofree char *ini = NULL;
	g_autoptr(PgateEmailConfig) cfg = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);
	const char *raw = "Subject: x\n\nx\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	if (!have_aiosmtpd()) {
		g_test_skip("needs " PY " with aiosmtpd (python3-aiosmtpd)");
		return;
	}
	srv = sink_start();
	ini = smtp_cfg(srv->port, "");    /* starttls defaults to required */
	cfg = config_ok(ini);
	g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_test_message("%s", err->message);
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
	g_autoptr(GPtrArray) got = delivered(srv);
	g_assert_cmpuint(got->len, ==, 0);
}

/* STARTTLS and smtps:// with a certificate made here by openssl. */
static void
test_send_tls(void)
{
	g_autofree char *script = g_test_build_filename(G_TEST_DIST,
							"auth_smtpd.py", NULL);
	g_autofree char *dir = NULL, *cert = NULL, *key = NULL, *pw = NULL;
	const char *raw = "Subject: tls\n\nx\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	if (!have_aiosmtpd() || !have_program("/usr/bin/openssl")) {
		g_test_skip("needs aiosmtpd and /usr/bin/openssl");
		return;
	}
	dir = make_tmpdir();
	cert = g_build_filename(dir, "cert.pem", NULL);
	key = g_build_filename(dir, "key.pem", NULL);
	pw = g_build_filename(dir, "pw", NULL);
	write_file(pw, PASSWORD "\n", 0600);
	const char *gen[] = { "/usr/bin/openssl", "req", "-x509", "-newkey",
			      "rsa:2048", "-nodes", "-days", "2", "-subj",
			      "/CN=127.0.0.1", "-addext",
			      "subjectAltName=IP:127.0.0.1", "-keyout", key,
			      "-out", cert, NULL };
	g_autofree char *o = NULL, *e = NULL;
	int status = 1;
	g_spawn_sync(dir, (char **)gen, NULL, 0, NULL, NULL, &o, &e, &status,
		     NULL);
	g_assert_true(g_spawn_check_wait_status(status, NULL));

	for (guint smtps = 0; smtps < 2; smtps++) {
		const char *argv[] = { PY, script, "--port", "@PORT@",
				       "--maildir", "@MD@", "--user", "ci-bot",
				       "--password-file", pw, "--cert", cert,
				       "--key", key,
				       smtps ? "--smtps" : NULL, NULL };
		g_autoptr(Server) srv = server_start(argv);
		g_autofree char *ini = g_strdup_printf(
			"[report.email]\nenabled=true\nto=everyone\n"
			"from_address=ci@patchgate.example.net\n"
			"smtp_url=%s://127.0.0.1:%d\nstarttls=required\n"
			"ca_file=%s\nuser=ci-bot\npassword_file=%s\n"
			"connect_timeout=5\ntimeout=20\n",
			smtps ? "smtps" : "smtp", srv->port, cert, pw);
		g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
		g_autoptr(GError) err = NULL;
		g_autoptr(GPtrArray) rcpts = strv_array("a@example.org", NULL);

		g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_no_error(err);
		g_autoptr(GPtrArray) got = delivered(srv);
		g_assert_cmpuint(got->len, ==, 1);

		/* without the CA the certificate is refused: permanent */
		g_autofree char *ini2 = g_strdup_printf(
			"[report.email]\nenabled=true\nto=everyone\n"
			"from_address=ci@patchgate.example.net\n"
			"smtp_url=%s://127.0.0.1:%d\nuser=ci-bot\n"
			"password_file=%s\nconnect_timeout=5\ntimeout=20\n",
			smtps ? "smtps" : "smtp", srv->port, pw);
		g_autoptr(PgateEmailConfig) cfg2 = config_ok(ini2);
		g_autoptr(GError) err2 = NULL;
		g_assert_false(pgate_email_send(cfg2, msg, NULL, rcpts, &err2));
		g_test_message("%s", err2->message);
		g_assert_false(pgate_error_is_transient(err2));
		g_assert_null(strstr(err2->message, PASSWORD));
	}
	pgate_test_rm_rf(dir);
}

/* ---- sendmail --------------------------------------------------------- */

static char *
fake_sendmail(const char *dir, const char *name, const char *tail)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *script = g_strdup_printf(
		"#!/bin/sh\n"
		"printf '%%s\\n' \"$@\" > '%s/argv'\n"
		"cat > '%s/stdin'\n"
		"%s\n", dir, dir, tail);

	write_file(path, script, 0755);
	return g_steal_pointer(&path);
}

static PgateEmailConfig *
sendmail_cfg(const char *path, const char *extra)
{
	g_autofree char *ini = g_strdup_printf(
		"[report.email]\nenabled=true\nto=everyone\n"
		"from_address=ci@patchgate.example.net\nsendmail=%s\n%s",
		path, extra);

	return config_ok(ini);
}

static void
test_send_sendmail(void)
{
	g_autofree char *dir = make_tmpdir();
	g_autofree char *ok = fake_sendmail(dir, "sendmail-ok", "exit 0");
	g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(ok, "");
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) rcpts = strv_array("zoe@example.org",
						"widgets@lists.example.org");
	const char *raw = "Subject: x\r\n\r\nline; rm -rf /\r\n$(reboot)\r\n";
	g_autoptr(GBytes) msg = g_bytes_new_static(raw, strlen(raw));

	g_assert_true(pgate_email_send(cfg, msg, NULL, rcpts, &err));
	g_assert_no_error(err);
	g_autofree char *argv_path = g_build_filename(dir, "argv", NULL);
	g_autofree char *stdin_path = g_build_filename(dir, "stdin", NULL);
	g_autofree char *argv = read_file(argv_path);
	g_autofree char *in = read_file(stdin_path);
	g_assert_cmpstr(argv, ==,
			"-i\n-f\nci@patchgate.example.net\n--\n"
			"zoe@example.org\nwidgets@lists.example.org\n");
	/* the message, with local line ends */
	g_assert_cmpstr(in, ==, "Subject: x\n\nline; rm -rf /\n$(reboot)\n");

	/* an explicit envelope sender */
	unlink(argv_path);
	g_assert_true(pgate_email_send(cfg, msg, "bounce@example.net", rcpts,
				       &err));
	g_free(argv);
	argv = read_file(argv_path);
	g_assert_true(g_str_has_prefix(argv, "-i\n-f\nbounce@example.net\n"));

	/* addresses that could be read as options or syntax never run it */
	const char *bad[] = { "-oQ/tmp/x@example.org", "a b@example.org",
			      "<a@example.org>", "a@example.org\n-X/tmp/log",
			      "" };
	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		g_autoptr(GPtrArray) r = strv_array(bad[i], NULL);

		unlink(argv_path);
		g_assert_false(pgate_email_send(cfg, msg, NULL, r, &e));
		g_assert_error(e, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID);
		g_assert_false(g_file_test(argv_path, G_FILE_TEST_EXISTS));
	}
	{
		g_autoptr(GError) e = NULL;

		g_assert_false(pgate_email_send(cfg, msg, "-f@x.org", rcpts,
						&e));
		g_assert_error(e, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID);
	}
	pgate_test_rm_rf(dir);
}

static void
test_send_sendmail_failures(void)
{
	g_autofree char *dir = make_tmpdir();
	g_autofree char *temp = fake_sendmail(dir, "sendmail-75",
		"echo 'queue file write error' >&2; exit 75");
	g_autofree char *perm = fake_sendmail(dir, "sendmail-67",
		"echo 'sendmail: fatal: No recipient addresses' >&2; exit 67");
	g_autofree char *slow = fake_sendmail(dir, "sendmail-slow",
					      "exec sleep 30");
	g_autofree char *deaf = g_build_filename(dir, "sendmail-deaf", NULL);
	g_autofree char *gone = fake_sendmail(dir, "sendmail-gone", "exit 0");
	g_autoptr(GPtrArray) rcpts = strv_array("zoe@example.org", NULL);
	GString *big = g_string_new("Subject: big\n\n");
	g_autoptr(GBytes) msg = NULL;

	/* a message larger than any pipe buffer */
	while (big->len < 1024 * 1024)
		g_string_append(big, "0123456789abcdef0123456789abcdef\n");
	msg = g_string_free_to_bytes(big);
	/* exits at once without reading its input */
	write_file(deaf, "#!/bin/sh\nexit 0\n", 0755);

	{
		g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(temp, "");
		g_autoptr(GError) err = NULL;

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_IO);
		g_assert_true(pgate_error_is_transient(err));
		g_assert_nonnull(strstr(err->message, "queue file write error"));
	}
	{
		g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(perm, "");
		g_autoptr(GError) err = NULL;

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED);
		g_assert_false(pgate_error_is_transient(err));
		g_assert_nonnull(strstr(err->message, "exit 67"));
		g_assert_nonnull(strstr(err->message, "No recipient"));
	}
	{
		g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(slow,
							       "timeout=1\n");
		g_autoptr(GError) err = NULL;
		gint64 t0 = g_get_monotonic_time();

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_IO);
		g_assert_nonnull(strstr(err->message, "killed"));
		g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
	}
	{
		g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(deaf, "");
		g_autoptr(GError) err = NULL;

		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_IO);
		g_assert_nonnull(strstr(err->message, "whole message"));
	}
	{
		g_autoptr(PgateEmailConfig) cfg = sendmail_cfg(gone, "");
		g_autoptr(GError) err = NULL;

		unlink(gone);
		g_assert_false(pgate_email_send(cfg, msg, NULL, rcpts, &err));
		g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
	}
	pgate_test_rm_rf(dir);
}

/* ---- formats (docs/report-email.md, "Formats") ------------------------ */

/* @out against the golden message data/@name: every byte, with the
 * commit ids and the version put in.  A difference is written to
 * $TMPDIR/@name.got, with the ids put back as @BASE@ and @HEAD@, ready
 * to be looked at and copied over the golden file. */
static void
assert_golden_message(GBytes *out, const char *name, Series *s)
{
	gsize len;
	const char *data = g_bytes_get_data(out, &len);
	g_autofree char *got = g_strndup(data, len);
	g_autofree char *gpath = golden_path(name);
	g_autofree char *golden = read_file(gpath);
	/* git format-patch's Message-IDs hold the time it ran:
	 * "cover.STAMP.git.zoe@example.org" */
	const char *cid = g_mime_message_get_message_id(s->cover);
	g_autofree char *stamp = g_strndup(cid + 6, strcspn(cid + 6, "."));
	const char *subst[] = { "@BASE@", s->base, "@HEAD@", s->head,
				"@VERSION@", PGATE_TEST_VERSION,
				"@STAMP@", stamp, NULL };
	g_autofree char *want = substitute(golden, subst);

	g_assert_true(g_str_has_prefix(cid, "cover."));
	if (g_strcmp0(got, want) != 0) {
		const char *back[] = { s->base, "@BASE@", s->head, "@HEAD@",
				       stamp, "@STAMP@", NULL };
		g_autofree char *templ = substitute(got, back);
		g_autofree char *file = g_strdup_printf("%s.got", name);
		g_autofree char *path = g_build_filename(g_get_tmp_dir(), file,
							 NULL);

		g_file_set_contents(path, templ, -1, NULL);
		g_test_message("%s differs; written to %s", name, path);
	}
	g_assert_cmpstr(got, ==, want);
}

/* The marks every format's mail carries: never answered, never stored
 * by Patchwork as a comment (item 6 of issue 31). */
static void
assert_robot_headers(GMimeMessage *m)
{
	g_assert_cmpstr(header(m, "Auto-Submitted"), ==, "auto-replied");
	g_assert_cmpstr(header(m, "X-Patchwork-Hint"), ==, "ignore");
	g_assert_cmpstr(header(m, "X-Auto-Response-Suppress"), ==, "All");
	g_assert_nonnull(header(m, "X-Patchgate"));
}

static void
test_format_default_golden(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	g_assert_cmpint(pgate_email_config_format(cfg), ==,
			PGATE_EMAIL_FORMAT_DEFAULT);
	r = series_report(s, NULL);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	assert_golden_message(out, "default.eml", s);
	m = parse_bytes(out);
	assert_robot_headers(m);
	/* the archive copy of the cover: lore's by default, for a list on
	 * lore (its List-Id is vger's) */
	g_autofree char *body = body_text(m);
	g_autofree char *want = g_strdup_printf(
		"  [3] archive https://lore.kernel.org/r/%s\n",
		g_mime_message_get_message_id(s->cover));
	g_assert_nonnull(strstr(body, want));
}

/* Without [report] archive_url, the link is the list's known archive,
 * and none for a list patchgate does not know: never lore's for a list
 * that is not on lore (issue #44). */
static void
test_format_archive_default(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(BASE_CFG);
	static const struct {
		const char *list_id, *want;
	} cases[] = {
		{ "widgets.lists.example.org", NULL },
		{ NULL, NULL },
		{ "dev.dpdk.org", "https://inbox.dpdk.org/dev/%s/" },
		{ "qemu-devel.nongnu.org", "https://lore.kernel.org/qemu-devel/%s/" },
		{ "Linux-I3C.lists.infradead.org", "https://lore.kernel.org/r/%s" },
		{ "hostap.lists.infradead.org", NULL },
		{ "ksummit.lists.linux.dev", "https://lore.kernel.org/r/%s" },
	};

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateEmailReport) r = series_report(s, NULL);
		g_autoptr(GError) err = NULL;
		g_autoptr(GBytes) out = NULL;
		g_autoptr(GMimeMessage) m = NULL;
		g_autofree char *body = NULL;

		g_free(r->list_id);
		r->list_id = g_strdup(cases[i].list_id);
		out = pgate_email_compose(cfg, r, &err);
		g_assert_no_error(err);
		m = parse_bytes(out);
		body = body_text(m);
		if (cases[i].want == NULL) {
			g_assert_null(strstr(body, " archive "));
			g_assert_null(strstr(body, "lore.kernel.org"));
		} else {
			g_autofree char *url = g_strdup_printf(cases[i].want,
				g_mime_message_get_message_id(s->cover));
			g_autofree char *line = g_strdup_printf(
				"  [3] archive %s\n", url);

			g_assert_nonnull(strstr(body, line));
		}
	}
}

/* [report] archive_url is the pattern of every archive link. */
static void
test_format_archive_url(void)
{
	g_autoptr(Series) s = make_series();
	g_autofree char *ini = g_strconcat(
		BASE_CFG, "[report]\narchive_url = https://inbox.example.org/"
		"widgets/{msgid}/\n", NULL);
	g_autoptr(PgateEmailConfig) cfg = config_ok(ini);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_autofree char *body = body_text(m);
	g_autofree char *want = g_strdup_printf(
		" archive https://inbox.example.org/widgets/%s/\n",
		g_mime_message_get_message_id(s->cover));
	g_assert_nonnull(strstr(body, want));
	g_assert_null(strstr(body, "lore.kernel.org"));

	/* a pattern without {msgid} is refused, naming [report] */
	g_autofree char *bad = g_strconcat(
		BASE_CFG, "[report]\narchive_url = https://x.example.org/\n",
		NULL);
	g_autoptr(PgateEmailConfig) none = config_from(bad, &err);
	g_assert_null(none);
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(err->message, "[report] archive_url"));
}

static const char *const DPDK_CFG =
	"[report.email]\n"
	"enabled = true\n"
	"to = everyone\n"
	"when = always\n"
	"format = dpdk\n"
	"report_to = Test-Report@dpdk.example.org\n"
	"dpdk_label = widget  build\n"
	"from_address = ci@patchgate.example.net\n"
	"from_name = Widget CI\n"
	"sendmail = /bin/true\n";

/* The report on the last patch, as the pipeline makes it for dpdk. */
static PgateEmailReport *
dpdk_report(Series *s)
{
	PgateEmailReport *r = series_report(s, s->patch2);

	r->patchwork_id = 1234;
	r->patch_url = g_strdup("http://patches.example.org/patch/1234/");
	return r;
}

static void
test_format_dpdk_golden(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(DPDK_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;
	PgateEmailDecision d;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	g_assert_cmpint(pgate_email_config_format(cfg), ==,
			PGATE_EMAIL_FORMAT_DPDK);
	r = dpdk_report(s);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	assert_golden_message(out, "dpdk.eml", s);
	m = parse_bytes(out);
	assert_robot_headers(m);
	/* dpdk-ci's send-patch-report.sh: |STATUS| pwID SUBJECT, to the
	 * list, the submitter copied as it is not a SUCCESS, threaded
	 * under the patch alone */
	g_assert_cmpstr(g_mime_message_get_subject(m), ==,
			"|FAILURE| pw1234 [PATCH v3 2/2] widget: add three");
	const char *p2 = g_mime_message_get_message_id(s->patch2);
	g_autoptr(GPtrArray) irt = ids_of(header(m, "In-Reply-To"));
	g_autoptr(GPtrArray) refs = ids_of(header(m, "References"));
	g_assert_cmpuint(refs->len, ==, 1);
	g_assert_cmpstr(refs->pdata[0], ==, p2);
	g_assert_cmpstr(irt->pdata[0], ==, p2);
	g_autofree char *body = body_text(m);
	g_assert_true(g_str_has_prefix(body,
		"Test-Label: widget-build\nTest-Status: FAILURE\n"
		"http://patches.example.org/patch/1234/\n\n"
		"_1 of 3 jobs failed_\n\n"));
	g_autoptr(GPtrArray) rcpts = pgate_email_report_recipients(cfg, r, &d);
	g_assert_cmpint(d, ==, PGATE_EMAIL_SEND);
	g_assert_cmpuint(rcpts->len, ==, 2);
	g_assert_cmpstr(rcpts->pdata[0], ==, "test-report@dpdk.example.org");
	g_assert_cmpstr(rcpts->pdata[1], ==, "zoe@example.org");
}

/* SUCCESS: the list only; an unknown Patchwork id is "pw?" without a
 * patch line, as send-patch-report.sh writes it. */
static void
test_format_dpdk_success(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(DPDK_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;
	PgateEmailDecision d;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = dpdk_report(s);
	r->patchwork_id = 0;
	g_ptr_array_set_size(r->jobs, 0);
	g_ptr_array_add(r->jobs,
			pgate_email_job_new("build", PGATE_EMAIL_VERDICT_PASS));
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_assert_cmpstr(g_mime_message_get_subject(m), ==,
			"|SUCCESS| pw? [PATCH v3 2/2] widget: add three");
	g_assert_cmpint(internet_address_list_length(
				g_mime_message_get_cc(m)), ==, 0);
	g_autofree char *body = body_text(m);
	g_assert_true(g_str_has_prefix(body,
		"Test-Label: widget-build\nTest-Status: SUCCESS\n\n"
		"_1 job passed_\n"));
	g_autoptr(GPtrArray) rcpts = pgate_email_report_recipients(cfg, r, &d);
	g_assert_cmpuint(rcpts->len, ==, 1);
	g_assert_cmpstr(rcpts->pdata[0], ==, "test-report@dpdk.example.org");

	/* a warning copies the submitter */
	PgateEmailJob *w = pgate_email_job_new("sparse",
					       PGATE_EMAIL_VERDICT_WARNING);
	g_ptr_array_add(r->jobs, w);
	g_autoptr(GBytes) out2 = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	g_autoptr(GMimeMessage) m2 = parse_bytes(out2);
	g_assert_true(g_str_has_prefix(g_mime_message_get_subject(m2),
				       "|WARNING| pw? "));
	g_assert_cmpint(internet_address_list_length(
				g_mime_message_get_cc(m2)), ==, 1);

	/* format = dpdk needs its list */
	g_autoptr(PgateEmailConfig) none = config_from(
		"[report.email]\nenabled=true\nto=everyone\nformat=dpdk\n"
		"from_address=ci@patchgate.example.net\nsendmail=/bin/true\n",
		&err);
	g_assert_null(none);
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(err->message, "report_to"));
	g_clear_error(&err);
	none = config_from("[report.email]\nenabled=true\nto=everyone\n"
			   "format=kernel\nfrom_address=ci@patchgate.example."
			   "net\nsendmail=/bin/true\n", &err);
	g_assert_null(none);
	g_assert_error(err, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG);
}

static const char *const ZERODAY_CFG =
	"[report.email]\n"
	"enabled = true\n"
	"to = everyone\n"
	"when = always\n"
	"cc_list = true\n"
	"format = 0day\n"
	"from_address = ci@patchgate.example.net\n"
	"from_name = Widget CI\n"
	"contact = ci-admins@patchgate.example.net\n"
	"sendmail = /bin/true\n";

static void
test_format_0day_golden(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(ZERODAY_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	g_assert_cmpint(pgate_email_config_format(cfg), ==,
			PGATE_EMAIL_FORMAT_0DAY);
	r = series_report(s, NULL);
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	assert_golden_message(out, "0day.eml", s);
	m = parse_bytes(out);
	assert_robot_headers(m);
	g_autofree char *body = body_text(m);
	g_assert_nonnull(strstr(body, "\n[auto build test ERROR on "
				      "widgets/main]\n"));
	g_assert_nonnull(strstr(body, "\n>> widget.c:12:9: error: 'three' "
				      "undeclared"));
	g_assert_nonnull(strstr(body, "\n| Reported-by: Widget CI "
				      "<ci@patchgate.example.net>\n"));
	/* Closes: the archive copy of this very mail */
	g_autofree char *closes = g_strdup_printf(
		"\n| Closes: https://lore.kernel.org/r/%s\n",
		g_mime_message_get_message_id(m));
	g_assert_nonnull(strstr(body, closes));
}

static void
test_format_0day_apply(void)
{
	g_autoptr(Series) s = make_series();
	g_autoptr(PgateEmailConfig) cfg = config_ok(ZERODAY_CFG);
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GBytes) out = NULL;
	g_autoptr(GMimeMessage) m = NULL;
	g_autoptr(GError) err = NULL;
	PgateEmailDecision d;

	if (s == NULL) {
		g_test_skip("needs git");
		return;
	}
	r = series_report(s, NULL);
	g_ptr_array_set_size(r->jobs, 0);
	g_ptr_array_add(r->apply_failures, pgate_email_apply_failure_new(
		2, "a.txt", "patch does not apply"));
	out = pgate_email_compose(cfg, r, &err);
	g_assert_no_error(err);
	m = parse_bytes(out);
	g_autofree char *body = body_text(m);
	g_assert_nonnull(strstr(body, "\n[cannot apply to widgets/main]\n"));
	g_assert_null(strstr(body, "auto build test"));
	g_assert_nonnull(strstr(body, "\n   patch 2/2, file a.txt (patch "
				      "does not apply)\n"));
	g_assert_cmpstr(g_mime_message_get_subject(m), ==,
			"Re: [PATCH v3 0/2] widget: fix the Zoë driver's two "
			"bugs");

	/* the robot mails failures only, whatever `when` says */
	g_ptr_array_set_size(r->apply_failures, 0);
	g_ptr_array_add(r->jobs,
			pgate_email_job_new("build", PGATE_EMAIL_VERDICT_PASS));
	g_autoptr(GPtrArray) rcpts = pgate_email_report_recipients(cfg, r, &d);
	g_assert_cmpuint(rcpts->len, ==, 0);
	g_assert_cmpint(d, ==, PGATE_EMAIL_SKIP_SUCCESS);
}

/* b4's own parsers take nothing from the dpdk and 0-day mails either:
 * not "Test-Label:", "base:" or "config:", nor a hostile log's lines. */
static void
test_format_b4(void)
{
	g_autofree char *script = g_test_build_filename(G_TEST_DIST,
							"b4_check.py", NULL);
	g_autofree char *dir = NULL;
	const char *const cfgs[] = { DPDK_CFG, ZERODAY_CFG };
	g_autoptr(PgateEmailReport) hostile = hostile_report();
	g_autoptr(PgateEmailReport) plain = plain_report();
	const PgateEmailReport *reports[] = { hostile, plain };

	if (!have_program(PY)) {
		g_test_skip("needs " PY);
		return;
	}
	dir = make_tmpdir();
	for (guint c = 0; c < G_N_ELEMENTS(cfgs); c++) {
		g_autoptr(PgateEmailConfig) cfg = config_ok(cfgs[c]);

		for (guint i = 0; i < G_N_ELEMENTS(reports); i++) {
			g_autoptr(GMimeMessage) m = compose_parse(cfg,
								  reports[i]);
			g_autofree char *body = body_text(m);
			g_autofree char *path = g_build_filename(dir, "body",
								 NULL);
			g_autofree char *out = NULL, *errout = NULL;
			const char *argv[] = { PY, script, path, NULL };
			int status = 0;

			write_file(path, body, 0644);
			g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL,
				     &out, &errout, &status, NULL);
			if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
				g_test_skip("needs b4 (Debian package b4)");
				pgate_test_rm_rf(dir);
				return;
			}
			g_test_message("b4 says: %s%s", out, errout);
			g_assert_cmpstr(out, ==, "");
			g_assert_true(WIFEXITED(status) &&
				      WEXITSTATUS(status) == 0);
		}
	}
	pgate_test_rm_rf(dir);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_mime_init();

	g_test_add_func("/email/config/disabled", test_config_disabled);
	g_test_add_func("/email/config/valid", test_config_valid);
	g_test_add_func("/email/config/errors", test_config_errors);
	g_test_add_func("/email/config/password-sources",
			test_config_password_sources);
	g_test_add_func("/email/config/contrib-example",
			test_config_contrib_example);
	g_test_add_func("/email/recipients", test_recipients);
	g_test_add_func("/email/rate", test_rate);
	g_test_add_func("/email/automated/table", test_automated);
	g_test_add_func("/email/automated/format-patch", test_automated_real);
	g_test_add_func("/email/compose/golden-failure", test_compose_golden);
	g_test_add_func("/email/compose/golden-pass", test_compose_pass);
	g_test_add_func("/email/compose/apply-failure",
			test_compose_apply_failure);
	g_test_add_func("/email/compose/apply-failure-one",
			test_compose_apply_failure_one);
	g_test_add_func("/email/compose/reply-to-patch",
			test_compose_reply_to_patch);
	g_test_add_func("/email/compose/references-bounded",
			test_compose_references_bounded);
	g_test_add_func("/email/compose/no-double-re",
			test_compose_no_double_re);
	g_test_add_func("/email/compose/rfc2047", test_compose_rfc2047);
	g_test_add_func("/email/compose/excerpt-bounded",
			test_compose_excerpt_bounded);
	g_test_add_func("/email/compose/defanged", test_compose_defanged);
	g_test_add_func("/email/compose/b4", test_compose_b4);
	g_test_add_func("/email/compose/message-id", test_compose_message_id);
	g_test_add_func("/email/compose/invalid", test_compose_invalid);
	g_test_add_func("/email/format/default-golden",
			test_format_default_golden);
	g_test_add_func("/email/format/archive-url", test_format_archive_url);
	g_test_add_func("/email/format/archive-default",
			test_format_archive_default);
	g_test_add_func("/email/format/dpdk-golden", test_format_dpdk_golden);
	g_test_add_func("/email/format/dpdk-success",
			test_format_dpdk_success);
	g_test_add_func("/email/format/0day-golden", test_format_0day_golden);
	g_test_add_func("/email/format/0day-apply", test_format_0day_apply);
	g_test_add_func("/email/format/b4", test_format_b4);
	g_test_add_func("/email/send/smtp", test_send_smtp);
	g_test_add_func("/email/send/smtp-transparency",
			test_send_smtp_transparency);
	g_test_add_func("/email/send/smtp-down", test_send_smtp_down);
	g_test_add_func("/email/send/smtp-reject", test_send_smtp_reject);
	g_test_add_func("/email/send/smtp-auth", test_send_smtp_auth);
	g_test_add_func("/email/send/starttls-missing",
			test_send_starttls_missing);
	g_test_add_func("/email/send/tls", test_send_tls);
	g_test_add_func("/email/send/sendmail", test_send_sendmail);
	g_test_add_func("/email/send/sendmail-failures",
			test_send_sendmail_failures);
	return g_test_run();
}
