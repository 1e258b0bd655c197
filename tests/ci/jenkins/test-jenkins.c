/* test-jenkins.c - the Jenkins CI backend against tests/fakes/jenkins.py.
 *
 * Each test starts its own fake (on port 0, so tests can run in parallel)
 * with the jobs and users it needs, drives the backend through ci.h only,
 * and checks both what the backend reports and what the fake saw (its
 * /fake/state: queue items, builds, and a log of the requests with the
 * authentication, crumb and cookie each one carried).
 */
#include "ci/ci.h"
#include "testutil.h"

#include <curl/curl.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_t, json_decref)

#define TOKEN "11c0ffee2233445566778899aabbccdd"
#define PASSWORD "correct horse battery staple"

typedef struct {
	char *dir;
	GPid pid;
	int in_fd;
	int port;
	char *base;       /* http://127.0.0.1:PORT[/prefix] */
	char *control;    /* http://127.0.0.1:PORT */
} Fake;

/* -- the fake -- */

/* The users and settings every test gets; @jobs is a JSON object. */
static char *
fake_config(const char *jobs, const char *extra)
{
	return g_strdup_printf(
		"{\"users\": {"
		"\"alice\": {\"token\": \"" TOKEN "\", \"password\": \""
		PASSWORD "\"},"
		"\"reader\": {\"token\": \"rtoken\", \"permissions\": "
		"[\"read\"]}},"
		"\"quiet\": 0.2, \"start_delay\": 0.15, \"left_expiry\": 60,"
		"\"executors\": 4 %s%s, \"jobs\": %s}",
		extra ? ", " : "", extra ? extra : "", jobs);
}

static void
fake_start(Fake *f, const char *jobs, const char *extra, const char *prefix)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *cfg = fake_config(jobs, extra);
	g_autofree char *cfg_path = NULL;
	const char *python = g_getenv("PGATE_PYTHON");
	const char *script = g_getenv("PGATE_JENKINS_FAKE");
	const char *argv[10];
	int n = 0, out_fd;
	char line[32];
	gsize len = 0;

	g_assert_nonnull(script);
	memset(f, 0, sizeof *f);
	f->dir = g_dir_make_tmp("pgate-jenkins-XXXXXX", &error);
	g_assert_no_error(error);
	cfg_path = g_build_filename(f->dir, "fake.json", NULL);
	g_assert_true(g_file_set_contents(cfg_path, cfg, -1, &error));
	argv[n++] = python ? python : "/usr/bin/python3";
	argv[n++] = script;
	argv[n++] = "--config";
	argv[n++] = cfg_path;
	argv[n++] = "--exit-on-eof";
	if (prefix) {
		argv[n++] = "--prefix";
		argv[n++] = prefix;
	}
	argv[n] = NULL;
	g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
				 G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
				 &f->pid, &f->in_fd, &out_fd, NULL, &error);
	g_assert_no_error(error);
	while (len < sizeof line - 1) {
		ssize_t r = read(out_fd, line + len, 1);

		if (r < 0 && errno == EINTR)
			continue;
		g_assert_cmpint(r, ==, 1);
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(out_fd);
	f->port = atoi(line);
	g_assert_cmpint(f->port, >, 0);
	f->control = g_strdup_printf("http://127.0.0.1:%d", f->port);
	f->base = g_strdup_printf("%s%s", f->control, prefix ? prefix : "");
}

static void
fake_stop(Fake *f)
{
	int status;

	if (f->pid) {
		close(f->in_fd);
		kill(f->pid, SIGTERM);
		waitpid(f->pid, &status, 0);
		g_spawn_close_pid(f->pid);
		f->pid = 0;
	}
	if (f->dir)
		pgate_test_rm_rf(f->dir);
	g_free(f->dir);
	g_free(f->base);
	g_free(f->control);
	memset(f, 0, sizeof *f);
}

static size_t
collect(char *ptr, size_t size, size_t nmemb, void *data)
{
	g_string_append_len(data, ptr, (gssize)(size * nmemb));
	return size * nmemb;
}

/* A call to the fake's control endpoint; returns its JSON reply. */
static json_t *
fake_call(Fake *f, const char *path, const char *body)
{
	CURL *c = curl_easy_init();
	g_autofree char *url = g_strconcat(f->control, path, NULL);
	g_autoptr(GString) out = g_string_new(NULL);
	json_error_t jerr;
	json_t *j;
	CURLcode cc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	cc = curl_easy_perform(c);
	curl_easy_cleanup(c);
	g_assert_cmpint(cc, ==, CURLE_OK);
	j = json_loads(out->str, 0, &jerr);
	g_assert_nonnull(j);
	return j;
}

static void
fake_post(Fake *f, const char *path, const char *body)
{
	json_decref(fake_call(f, path, body));
}

/* The fake's request log, only the entries whose path has @needle. */
static GPtrArray *
fake_log(Fake *f, const char *needle)
{
	json_t *st = fake_call(f, "/fake/state", NULL);
	json_t *log = json_object_get(st, "log");
	GPtrArray *out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	size_t i;
	json_t *e;

	json_array_foreach(log, i, e) {
		const char *p = json_string_value(json_object_get(e, "path"));

		if (needle == NULL || strstr(p, needle))
			g_ptr_array_add(out, json_incref(e));
	}
	json_decref(st);
	return out;
}

static json_t *
fake_build(Fake *f, const char *job, int number)
{
	json_t *st = fake_call(f, "/fake/state", NULL);
	json_t *builds = json_object_get(st, "builds");
	json_t *found = NULL, *b;
	size_t i;

	json_array_foreach(builds, i, b) {
		if (g_str_equal(json_string_value(json_object_get(b, "job")),
				job) &&
		    json_integer_value(json_object_get(b, "number")) == number)
			found = json_incref(b);
	}
	json_decref(st);
	return found;
}

/* -- the backend -- */

typedef struct {
	Fake fake;
	PgateCiBackend *b;
} Fixture;

/* A backend for @job; @extra are more "key = value" lines. */
static PgateCiBackend *
backend_new_full(Fake *f, const char *base, const char *job,
		 const char *extra, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *text = NULL;
	gboolean secret_given = extra && (strstr(extra, "token_") ||
					  strstr(extra, "password_"));

	g_setenv("PGATE_TEST_JENKINS_TOKEN", TOKEN, TRUE);
	text = g_strdup_printf("[ci.jenkins]\nurl = %s\njob = %s\n"
			       "user = alice\n%s"
			       "request_timeout = 5\nretry_backoff_ms = 50\n"
			       "%s\n", base, job,
			       secret_given ? "" :
			       "token_env = PGATE_TEST_JENKINS_TOKEN\n",
			       extra ? extra : "");
	g_assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
	return pgate_ci_backend_new("jenkins", kf, "ci.jenkins", f->dir,
				    error);
}

static PgateCiBackend *
backend_new(Fake *f, const char *job, const char *extra)
{
	g_autoptr(GError) error = NULL;
	PgateCiBackend *b = backend_new_full(f, f->base, job, extra, &error);

	g_assert_no_error(error);
	g_assert_nonnull(b);
	return b;
}

static PgateCiJob *
make_job(const char *trigger)
{
	PgateCiJob *job = pgate_ci_job_new();

	job->job = g_strdup("build");
	job->repo_path = g_strdup("/srv/patchgate/repo.git");
	job->repo_url = g_strdup("https://git.example.org/pg/repo.git");
	job->ref = g_strdup("refs/heads/patchgate/S42/v3");
	g_ptr_array_add(job->commits,
			g_strdup("1111111111111111111111111111111111111111"));
	g_ptr_array_add(job->commits,
			g_strdup("2222222222222222222222222222222222222222"));
	job->base_commit = g_strdup("0000000000000000000000000000000000000000");
	job->series_id = g_strdup("S42");
	job->version = 3;
	job->branch = g_strdup("main");
	job->msgid = g_strdup("<cover+a&b=c%20@example.org>");
	job->trigger_id = g_strdup(trigger);
	return job;
}

static char *
submit_ok(PgateCiBackend *b, const char *trigger)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job(trigger);
	char *h = pgate_ci_submit(b, job, &error);

	g_assert_no_error(error);
	g_assert_nonnull(h);
	return h;
}

/* Polls @handle (replaced by upgrades) until DONE or LOST or @secs pass.
 * @seen collects the states met, as "q", "r", "d", "l". */
static PgateCiResult *
poll_until_done(PgateCiBackend *b, char **handle, double secs, GString *seen,
		guint *upgrades)
{
	gint64 end = g_get_monotonic_time() + (gint64)(secs * G_USEC_PER_SEC);

	for (;;) {
		g_autoptr(GError) error = NULL;
		PgateCiResult *r = pgate_ci_poll(b, *handle, &error);

		g_assert_no_error(error);
		g_assert_nonnull(r);
		if (seen) {
			static const char letters[] = "qrdl";

			if (seen->len == 0 ||
			    seen->str[seen->len - 1] != letters[r->state])
				g_string_append_c(seen, letters[r->state]);
		}
		if (r->handle) {
			g_free(*handle);
			*handle = g_strdup(r->handle);
			if (upgrades)
				(*upgrades)++;
		}
		if (r->state == PGATE_JOB_DONE ||
		    r->state == PGATE_JOB_LOST ||
		    g_get_monotonic_time() > end)
			return r;
		pgate_ci_result_free(r);
		g_usleep(40 * 1000);
	}
}

static void
teardown(Fixture *fx, gconstpointer data)
{
	pgate_ci_backend_free(fx->b);
	fake_stop(&fx->fake);
}

#define PARAMS_ALL "{\"PATCHGATE_REPO_URL\": \"\", \"PATCHGATE_REF\": \"\"," \
	"\"PATCHGATE_COMMIT\": \"\", \"PATCHGATE_BASE_COMMIT\": \"\"," \
	"\"PATCHGATE_SERIES\": \"\", \"PATCHGATE_VERSION\": \"\"," \
	"\"PATCHGATE_BRANCH\": \"\", \"PATCHGATE_MSGID\": \"\"," \
	"\"PATCHGATE_TRIGGER\": \"\"}"

/* -- tests -- */

static void
test_success(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(GString) seen = g_string_new(NULL);
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autofree char *url = NULL;
	json_t *params;
	guint upgrades = 0;

	fake_start(&fx->fake, "{\"ci/sub/patchgate\": {\"params\": "
		   PARAMS_ALL ", \"duration\": 0.3, \"post\": 0.1}}", NULL,
		   "/jenkins");
	fx->b = backend_new(&fx->fake, "ci/sub/patchgate", NULL);
	h = submit_ok(fx->b, "S42-v3-n1");
	g_assert_nonnull(strstr(h, "\"queue\":1"));
	g_assert_null(strstr(h, "build"));

	r = poll_until_done(fx->b, &h, 10, seen, &upgrades);
	g_assert_cmpstr(seen->str, ==, "qrd");
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_null(r->reason);
	g_assert_null(r->summary);
	g_assert_false(r->has_tests);
	g_assert_cmpint(upgrades, ==, 1);
	g_assert_nonnull(strstr(h, "\"build\":1"));
	url = g_strdup_printf("%s/job/ci/job/sub/job/patchgate/1/",
			      fx->fake.base);
	g_assert_cmpstr(r->url, ==, url);
	g_assert_cmpint(r->started, >, 0);
	g_assert_cmpint(r->finished, >=, r->started);

	/* the parameters as the job saw them; token auth, no crumb */
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, ==, 1);
	params = json_object_get(log->pdata[0], "params");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_REPO_URL")), ==, "https://git.example.org/pg/repo.git");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_REF")), ==, "refs/heads/patchgate/S42/v3");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_COMMIT")), ==,
		"2222222222222222222222222222222222222222");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_BASE_COMMIT")), ==,
		"0000000000000000000000000000000000000000");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_SERIES")), ==, "S42");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_VERSION")), ==, "3");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_BRANCH")), ==, "main");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_MSGID")), ==, "<cover+a&b=c%20@example.org>");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_TRIGGER")), ==, "S42-v3-n1");
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"auth")), ==, "token");
	g_assert_false(json_is_true(json_object_get(log->pdata[0], "crumb")));
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"method")), ==, "POST");
	/* nothing of the trigger in the URL, no secret anywhere in it */
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"query")), ==, "");
	g_ptr_array_unref(g_steal_pointer(&log));
	log = fake_log(&fx->fake, NULL);
	for (guint i = 0; i < log->len; i++) {
		const char *q = json_string_value(json_object_get(
			log->pdata[i], "query"));

		g_assert_null(strstr(q, TOKEN));
		g_assert_cmpstr(json_string_value(json_object_get(
			log->pdata[i], "auth")), ==, "token");
	}
}

static void
test_unstable_tests(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"result\": \"UNSTABLE\", \"tests\": {\"pass\": 40, "
		   "\"fail\": 2, \"skip\": 3}}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = submit_ok(fx->b, "t-unstable");
	r = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpstr(r->reason, ==, "build #1 unstable");
	g_assert_true(r->has_tests);
	g_assert_cmpuint(r->tests_total, ==, 45);
	g_assert_cmpuint(r->tests_failed, ==, 2);
	g_assert_cmpuint(r->tests_skipped, ==, 3);
	g_assert_null(r->summary);
}

static void
test_failure_summary(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL, *h2 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;
	g_autoptr(PgateCiBackend) small = NULL;
	g_autoptr(GPtrArray) log = NULL;
	gboolean windowed = FALSE;

	/* a long log (~ 200 KB): only its end is fetched */
	fake_start(&fx->fake, "{\"big\": {\"params\": " PARAMS_ALL ", "
		   "\"result\": \"FAILURE\", \"console_filler\": 6000},"
		   "\"small\": {\"params\": " PARAMS_ALL ", "
		   "\"result\": \"FAILURE\", \"console\": "
		   "\"+ make\\n\\u001b[31merror\\u001b[0m: x.c:1: bad\\n\"}}",
		   NULL, NULL);
	fx->b = backend_new(&fx->fake, "big", NULL);
	h = submit_ok(fx->b, "t-fail");
	r = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "build #1 failed");
	g_assert_false(r->has_tests);
	g_assert_nonnull(r->summary);
	g_assert_cmpuint(strlen(r->summary), <=, 4096);
	g_assert_cmpuint(strlen(r->summary), >, 3000);
	g_assert_true(g_str_has_suffix(r->summary,
				       "Recording test results\n"
				       "Finished: FAILURE"));
	g_assert_true(g_str_has_prefix(r->summary, "line 0"));
	g_assert_null(strchr(r->summary, '\x1b'));
	log = fake_log(&fx->fake, "progressiveText");
	for (guint i = 0; i < log->len; i++) {
		const char *q = json_string_value(json_object_get(
			log->pdata[i], "query"));

		if (!g_str_equal(q, "start=0"))
			windowed = TRUE;
	}
	g_assert_true(windowed);
	g_ptr_array_unref(g_steal_pointer(&log));
	log = fake_log(&fx->fake, "consoleText");
	g_assert_cmpuint(log->len, ==, 0);

	/* a short one whole, its escape sequences removed */
	small = backend_new(&fx->fake, "small", NULL);
	h2 = submit_ok(small, "t-fail-small");
	r2 = poll_until_done(small, &h2, 10, NULL, NULL);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r2->summary, ==,
			"Started by user alice\n+ make\nerror: x.c:1: bad\n"
			"Recording test results\nFinished: FAILURE");
}

static void
test_aborted(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) b = NULL;

	fake_start(&fx->fake, "{\"long\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 60}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "long", NULL);
	h = submit_ok(fx->b, "t-abort");
	/* until it runs and the handle names the build */
	while (strstr(h, "build") == NULL) {
		PgateCiResult *p = pgate_ci_poll(fx->b, h, &error);

		g_assert_no_error(error);
		if (p->handle) {
			g_free(h);
			h = g_strdup(p->handle);
		}
		pgate_ci_result_free(p);
		g_usleep(40 * 1000);
	}
	g_assert_true(pgate_ci_cancel(fx->b, h, &error));
	g_assert_no_error(error);
	r = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "build #1 aborted");
	g_assert_true(g_str_has_suffix(r->summary,
				       "Build was aborted\n"
				       "Recording test results\n"
				       "Finished: ABORTED"));
	b = fake_build(&fx->fake, "long", 1);
	g_assert_cmpstr(json_string_value(json_object_get(b, "result")), ==,
			"ABORTED");
	/* stopping a finished build is not an error */
	g_assert_true(pgate_ci_cancel(fx->b, h, &error));
	g_assert_no_error(error);
}

static void
test_cancel_queued(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"quiet\": 60}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = submit_ok(fx->b, "t-cancel");
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_QUEUED);
	g_assert_true(g_str_has_prefix(r->reason, "In the quiet period."));
	g_clear_pointer(&r, pgate_ci_result_free);

	g_assert_true(pgate_ci_cancel(fx->b, h, &error));
	g_assert_no_error(error);
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "queue item 1 cancelled");
	/* again: 422 (not cancellable), the item says it was cancelled */
	g_assert_true(pgate_ci_cancel(fx->b, h, &error));
	g_assert_no_error(error);
}

static void
test_merge(Fixture *fx, gconstpointer data)
{
	g_autofree char *h1 = NULL, *h2 = NULL, *h3 = NULL, *h4 = NULL;
	g_autofree char *h5 = NULL;
	g_autoptr(PgateCiBackend) undeclared = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) st = NULL;

	/* "plain" does not declare PATCHGATE_TRIGGER: Jenkins drops it */
	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"quiet\": 30},"
		   "\"plain\": {\"params\": {\"PATCHGATE_COMMIT\": \"\"}, "
		   "\"quiet\": 30}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h1 = submit_ok(fx->b, "S42-v3-a");
	h2 = submit_ok(fx->b, "S42-v3-b");
	/* distinct trigger ids: never merged */
	g_assert_nonnull(strstr(h1, "\"queue\":1"));
	g_assert_nonnull(strstr(h2, "\"queue\":2"));
	g_assert_null(strstr(h2, "merged"));
	/* the same trigger twice (a repeated submission): Jenkins merges
	 * it (303) with its own first time, which is no merge with another
	 * submission: the item carries this very trigger */
	h3 = submit_ok(fx->b, "S42-v3-a");
	g_assert_nonnull(strstr(h3, "\"queue\":1"));
	g_assert_null(strstr(h3, "merged"));
	r = pgate_ci_poll(fx->b, h3, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_QUEUED);
	g_assert_null(strstr(r->reason, "merged"));
	g_clear_pointer(&r, pgate_ci_result_free);

	undeclared = backend_new(&fx->fake, "plain", NULL);
	h4 = submit_ok(undeclared, "S42-v3-c");
	h5 = submit_ok(undeclared, "S42-v3-d");
	g_assert_nonnull(strstr(h4, "\"queue\":3"));
	g_assert_null(strstr(h4, "merged"));
	g_assert_nonnull(strstr(h5, "\"queue\":3"));
	g_assert_nonnull(strstr(h5, "\"merged\":true"));
	r = pgate_ci_poll(undeclared, h5, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(r->reason, "(trigger merged with another)"));

	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 3);
}

static void
test_refused_302(Fixture *fx, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job("t-302");
	g_autofree char *h = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"refuse\": true}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = pgate_ci_submit(fx->b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_FAILED);
	g_assert_nonnull(strstr(error->message, "refused to queue"));
	g_assert_nonnull(strstr(error->message, "302"));
	g_assert_false(pgate_error_is_transient(error));
}

static void
expect_submit_error(Fake *f, const char *job_path, const char *extra,
		    int code, const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job("t-err");
	g_autoptr(PgateCiBackend) b = backend_new(f, job_path, extra);
	g_autofree char *h = pgate_ci_submit(b, job, &error);

	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, code);
	if (strstr(error->message, text) == NULL)
		g_error("\"%s\" lacks \"%s\"", error->message, text);
	g_assert_null(strstr(error->message, TOKEN));
	g_assert_null(strstr(error->message, "rtoken"));
	g_assert_false(pgate_error_is_transient(error));
}

static void
test_auth_errors(Fixture *fx, gconstpointer data)
{
	g_autofree char *tokfile = NULL, *extra = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiBackend) bad = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL "},"
		   "\"ci/secret\": {\"params\": " PARAMS_ALL ", "
		   "\"visible_to\": [\"reader\"]}, "
		   "\"noparams\": {}, "
		   "\"off\": {\"params\": " PARAMS_ALL ", \"disabled\": true}}",
		   NULL, NULL);
	/* a wrong token: 401 */
	tokfile = g_build_filename(fx->fake.dir, "token", NULL);
	g_assert_true(g_file_set_contents_full(tokfile, "not-the-token\n", -1,
					       0, 0600, NULL));
	extra = g_strdup_printf("token_file = %s", tokfile);
	expect_submit_error(&fx->fake, "pg", extra, PGATE_ERROR_CONFIG,
			    "Jenkins refused the credentials for user alice "
			    "(401)");
	/* the same for a poll */
	bad = backend_new(&fx->fake, "pg", extra);
	r = pgate_ci_poll(bad, "{\"jenkins\":1,\"job\":\"pg\",\"queue\":1}",
			  &error);
	g_assert_null(r);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "(401)"));
	g_clear_error(&error);

	/* a job that does not exist, one the user may not see: 404 */
	expect_submit_error(&fx->fake, "nope/x", NULL, PGATE_ERROR_NOT_FOUND,
			    "job nope/x not found");
	expect_submit_error(&fx->fake, "ci/secret", NULL,
			    PGATE_ERROR_NOT_FOUND, "job ci/secret not found");
	/* a user without Job/Build: 403 */
	g_setenv("PGATE_TEST_READER_TOKEN", "rtoken", TRUE);
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autofree char *text = g_strdup_printf(
			"[j]\nurl = %s\njob = pg\nuser = reader\n"
			"token_env = PGATE_TEST_READER_TOKEN\n", fx->fake.base);
		g_autoptr(PgateCiBackend) b = NULL;
		g_autoptr(PgateCiJob) job = make_job("t-403");
		g_autofree char *hh = NULL;

		g_assert_true(g_key_file_load_from_data(kf, text, -1, 0,
							NULL));
		b = pgate_ci_backend_new("jenkins", kf, "j", fx->fake.dir,
					 &error);
		g_assert_no_error(error);
		hh = pgate_ci_submit(b, job, &error);
		g_assert_null(hh);
		g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message,
					"user reader lacks the permission"));
		g_assert_nonnull(strstr(error->message, "(403)"));
		g_assert_nonnull(strstr(error->message, "Job/Build"));
		g_clear_error(&error);
	}
	/* a job without parameters: 400; a disabled job: 409 */
	expect_submit_error(&fx->fake, "noparams", NULL, PGATE_ERROR_INVALID,
			    "noparams is not parameterized");
	expect_submit_error(&fx->fake, "off", NULL, PGATE_ERROR_FAILED,
			    "disabled (409)");
	/* the fake really said 401, 404, 403, 400 and 409 */
	{
		g_autoptr(GPtrArray) log = fake_log(&fx->fake, "/job/");
		GString *codes = g_string_new(NULL);

		for (guint i = 0; i < log->len; i++)
			g_string_append_printf(codes, "%lld ",
				(long long)json_integer_value(json_object_get(
					log->pdata[i], "status")));
		g_assert_cmpstr(codes->str, ==, "401 404 404 403 400 409 ");
		g_string_free(codes, TRUE);
	}
	/* an unknown queue item is LOST, not an error */
	r = pgate_ci_poll(fx->b = backend_new(&fx->fake, "pg", NULL),
			  "{\"jenkins\":1,\"job\":\"pg\",\"queue\":99}", &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_LOST);
}

static void
test_password_crumb(Fixture *fx, gconstpointer data)
{
	g_autofree char *pwfile = NULL, *extra = NULL;
	g_autofree char *h1 = NULL, *h2 = NULL, *h3 = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) st = NULL;
	json_t *e;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"quiet\": 30}}", NULL, "/ci");
	pwfile = g_build_filename(fx->fake.dir, "password", NULL);
	g_assert_true(g_file_set_contents_full(pwfile, PASSWORD "\n", -1, 0,
					       0600, NULL));
	extra = g_strdup_printf("password_file = %s", pwfile);
	fx->b = backend_new(&fx->fake, "pg", extra);
	h1 = submit_ok(fx->b, "t-pw-1");
	h2 = submit_ok(fx->b, "t-pw-2");
	log = fake_log(&fx->fake, NULL);
	/* one crumb, then two POSTs with it and the session cookie */
	g_assert_cmpuint(log->len, ==, 3);
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"path")), ==, "/ci/crumbIssuer/api/json");
	for (guint i = 1; i < 3; i++) {
		e = log->pdata[i];
		g_assert_cmpint(json_integer_value(json_object_get(e,
			"status")), ==, 201);
		g_assert_cmpstr(json_string_value(json_object_get(e, "auth")),
				==, "password");
		g_assert_true(json_is_true(json_object_get(e, "crumb")));
		g_assert_true(json_is_true(json_object_get(e, "cookie")));
	}

	/* Jenkins restarts: the session and its cookie name are gone, the
	 * old crumb gives 403 "No valid crumb"; a new one is fetched */
	fake_post(&fx->fake, "/fake/restart", "{}");
	h3 = submit_ok(fx->b, "t-pw-3");
	g_ptr_array_unref(g_steal_pointer(&log));
	log = fake_log(&fx->fake, NULL);
	g_assert_cmpuint(log->len, ==, 6);
	g_assert_cmpint(json_integer_value(json_object_get(log->pdata[3],
		"status")), ==, 403);
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[4],
		"path")), ==, "/ci/crumbIssuer/api/json");
	g_assert_cmpint(json_integer_value(json_object_get(log->pdata[5],
		"status")), ==, 201);

	/* cancelling POSTs with the crumb too */
	g_assert_true(pgate_ci_cancel(fx->b, h1, &error));
	g_assert_no_error(error);
	r = pgate_ci_poll(fx->b, h1, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(r->reason, ==, "queue item 1 cancelled");
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 3);
}

static void
test_crumb_issuer_off(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(GPtrArray) log = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL "}}",
		   "\"crumb_issuer\": false", NULL);
	g_setenv("PGATE_TEST_JENKINS_PW", PASSWORD, TRUE);
	fx->b = backend_new(&fx->fake, "pg",
			    "password_env = PGATE_TEST_JENKINS_PW");
	h = submit_ok(fx->b, "t-nocrumb");
	log = fake_log(&fx->fake, NULL);
	g_assert_cmpuint(log->len, ==, 2);
	g_assert_cmpint(json_integer_value(json_object_get(log->pdata[0],
		"status")), ==, 404);
	g_assert_cmpint(json_integer_value(json_object_get(log->pdata[1],
		"status")), ==, 201);
	g_assert_false(json_is_true(json_object_get(log->pdata[1], "crumb")));
}

static void
test_retry_5xx(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job("t-5xx-b");
	g_autofree char *h2 = NULL;
	g_autoptr(json_t) st = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL "}}", NULL,
		   NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	/* two 503s, then the trigger passes (retries = 2) */
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"status\", "
		  "\"status\": 503, \"count\": 2}");
	h = submit_ok(fx->b, "t-5xx");
	{
		g_autoptr(GPtrArray) log = fake_log(&fx->fake,
						    "buildWithParameters");
		g_assert_cmpuint(log->len, ==, 3);
		for (guint i = 0; i < 3; i++)
			g_assert_cmpint(json_integer_value(json_object_get(
				log->pdata[i], "status")), ==,
				i < 2 ? 503 : 201);
	}
	/* a dropped connection and a 500 while polling */
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"drop\", "
		  "\"count\": 1, \"match\": \"/queue/\"}");
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"status\", "
		  "\"count\": 1, \"match\": \"/queue/\"}");
	r = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "injections")),
			 ==, 0);

	/* more 5xx than retries: a transient error */
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"status\", "
		  "\"status\": 500, \"count\": 3}");
	h2 = pgate_ci_submit(fx->b, job, &error);
	g_assert_null(h2);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
	g_assert_nonnull(strstr(error->message, "HTTP 500 (3 attempts)"));

	/* "Jenkins is getting ready to work": 503, then it is up */
	g_clear_error(&error);
	fake_post(&fx->fake, "/fake/restart", "{\"down\": 0.3}");
	{
		g_autoptr(PgateCiBackend) patient = backend_new(
			&fx->fake, "pg", "retries = 4\nretry_backoff_ms = 100");
		g_autofree char *h3 = submit_ok(patient, "t-starting");

		g_assert_nonnull(h3);
	}
}

static void
test_server_down(Fixture *fx, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job("t-down");
	g_autoptr(PgateCiBackend) b = NULL;
	g_autofree char *base = NULL;
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	gint64 t0;

	fake_start(&fx->fake, "{}", NULL, NULL);
	base = g_strdup(fx->fake.base);
	fake_stop(&fx->fake);   /* nothing listens on its port now */
	fx->fake.dir = g_dir_make_tmp("pgate-jenkins-XXXXXX", NULL);
	b = backend_new_full(&fx->fake, base, "pg", NULL, &error);
	g_assert_no_error(error);
	t0 = g_get_monotonic_time();
	h = pgate_ci_submit(b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
	g_assert_nonnull(strstr(error->message, "3 attempts"));
	g_clear_error(&error);
	r = pgate_ci_poll(b, "{\"jenkins\":1,\"job\":\"pg\",\"build\":7}",
			  &error);
	g_assert_null(r);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
	/* refused connections fail fast: two calls, two short backoffs */
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 3 * G_USEC_PER_SEC);
}

static void
test_request_timeout(Fixture *fx, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autofree char *h = NULL;
	gint64 t0;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL "}}", NULL,
		   NULL);
	fx->b = backend_new(&fx->fake, "pg", "request_timeout = 1");
	h = submit_ok(fx->b, "t-slow");
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"slow\", "
		  "\"seconds\": 3, \"count\": 1}");
	t0 = g_get_monotonic_time();
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_null(r);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
	/* the reply would have come after 3 s */
	g_assert_cmpint(g_get_monotonic_time() - t0, <,
			(gint64)(2.5 * G_USEC_PER_SEC));
}

static void
test_resume(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL, *queue_handle = NULL;
	g_autoptr(PgateCiResult) r = NULL, lost = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiBackend) b2 = NULL;
	g_autoptr(GPtrArray) log = NULL;
	guint upgrades = 0;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 1.0}}", "\"left_expiry\": 0.5", NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = submit_ok(fx->b, "t-resume");
	queue_handle = g_strdup(h);
	/* the first process polls until the handle names the build ... */
	while (upgrades == 0) {
		PgateCiResult *p = pgate_ci_poll(fx->b, h, &error);

		g_assert_no_error(error);
		g_assert_cmpint(p->state, !=, PGATE_JOB_DONE);
		if (p->handle) {
			g_free(h);
			h = g_strdup(p->handle);
			upgrades++;
		}
		pgate_ci_result_free(p);
		g_usleep(40 * 1000);
	}
	/* ... and stops; the handle it persisted is all a new one has */
	g_clear_pointer(&fx->b, pgate_ci_backend_free);
	g_usleep(800 * 1000);   /* the left item expires meanwhile */
	b2 = backend_new(&fx->fake, "pg", NULL);
	r = poll_until_done(b2, &h, 10, NULL, NULL);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_null(r->handle);
	/* the queue handle alone (404 after the expiry) finds it too */
	lost = pgate_ci_poll(b2, queue_handle, &error);
	g_assert_no_error(error);
	g_assert_cmpint(lost->state, ==, PGATE_JOB_DONE);
	g_assert_nonnull(strstr(lost->handle, "\"build\":1"));
	/* one trigger only: nothing was submitted again */
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, ==, 1);
}

static void
test_left_expiry(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) b = NULL;

	/* nobody polls while the item leaves and expires: the build is
	 * found by its trigger, and the handle upgraded to name it */
	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 0.1, \"post\": 0.05}}",
		   "\"left_expiry\": 0.3", NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	/* another build first, so that build and item numbers differ */
	g_free(submit_ok(fx->b, "t-other"));
	g_usleep(600 * 1000);
	h = submit_ok(fx->b, "t-expiry");
	g_assert_nonnull(strstr(h, "\"queue\":2"));
	g_assert_nonnull(strstr(h, "\"trigger\":\"t-expiry\""));
	g_usleep(1200 * 1000);
	b = fake_build(&fx->fake, "pg", 2);
	g_assert_nonnull(b);
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(r->handle);
	g_assert_nonnull(strstr(r->handle, "\"build\":2"));
	g_assert_true(g_str_has_suffix(r->url, "/job/pg/2/"));
	g_clear_pointer(&r, pgate_ci_result_free);

	/* a handle written before handles had a trigger: by queueId */
	r = pgate_ci_poll(fx->b, "{\"jenkins\":1,\"job\":\"pg\",\"queue\":1,"
			  "\"since\":1}", &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_nonnull(strstr(r->handle, "\"build\":1"));
	g_clear_pointer(&r, pgate_ci_result_free);

	/* Jenkins crashed before the queue was saved: a queued item and
	 * no build of it; that is lost */
	fake_post(&fx->fake, "/fake/config", "{\"quiet\": 30}");
	g_free(h);
	h = submit_ok(fx->b, "t-crash");
	fake_post(&fx->fake, "/fake/restart", "{\"queue\": true}");
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_LOST);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_NONE);
	g_assert_nonnull(strstr(r->reason, "is gone"));
	g_assert_null(r->handle);
}

/* Passes of `patchgate run` from cron, more than 5 minutes apart: the
 * queue item a pass saw is forgotten by the next one (Jenkins' real
 * expiry, on the fake's clock moved on), and the job still ends. */
static void
test_cron_passes(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL, *h2 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autoptr(json_t) st = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 0.2, \"post\": 0.05, \"result\": "
		   "\"FAILURE\"}}", "\"left_expiry\": 300", NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = submit_ok(fx->b, "t-cron");
	/* pass 1: queued */
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_QUEUED);
	g_clear_pointer(&r, pgate_ci_result_free);
	/* the build runs and ends while nobody looks; five minutes pass */
	g_usleep(900 * 1000);
	fake_post(&fx->fake, "/fake/advance", "{\"seconds\": 301}");
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 0);
	/* pass 2 */
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "build #1 failed");
	g_assert_true(g_str_has_suffix(r->summary, "Finished: FAILURE"));
	g_assert_nonnull(strstr(r->handle, "\"build\":1"));

	/* the same with a build that still runs at pass 2 (for 400 s of
	 * the fake's time), and ends before pass 3 */
	fake_post(&fx->fake, "/fake/config", "{\"jobs\": {\"pg\": "
		  "{\"duration\": 400, \"result\": \"SUCCESS\"}}}");
	h2 = submit_ok(fx->b, "t-cron-2");
	g_usleep(600 * 1000);
	fake_post(&fx->fake, "/fake/advance", "{\"seconds\": 301}");
	r2 = pgate_ci_poll(fx->b, h2, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r2->state, ==, PGATE_JOB_RUNNING);
	g_assert_nonnull(strstr(r2->handle, "\"build\":2"));
	g_free(h2);
	h2 = g_strdup(r2->handle);
	g_clear_pointer(&r2, pgate_ci_result_free);
	fake_post(&fx->fake, "/fake/advance", "{\"seconds\": 301}");
	g_usleep(200 * 1000);
	r2 = pgate_ci_poll(fx->b, h2, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r2->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_SUCCESS);
	/* one trigger each: nothing was submitted again */
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, ==, 2);
}

/* Every reply to a trigger is lost after Jenkins queued it: the call
 * fails (transient), and its repeat under the same trigger id finds what
 * the first one made instead of making a second build. */
static void
test_lost_reply(Fixture *fx, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = make_job("t-lost-reply");
	g_autofree char *h = NULL, *h2 = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autoptr(json_t) st = NULL;
	guint posts;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"quiet\": 30}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	/* (more than the attempts: libcurl itself sends a request again
	 * once when a reused connection closes before any reply) */
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"lose\", "
		  "\"count\": 20, \"match\": \"buildWithParameters\"}");
	h = pgate_ci_submit(fx->b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO);
	g_assert_true(pgate_error_is_transient(error));
	g_assert_nonnull(strstr(error->message, "(3 attempts)"));
	g_clear_error(&error);
	fake_post(&fx->fake, "/fake/inject", "{\"clear\": true}");
	/* three attempts (each after looking for a build), one queue item:
	 * the retries joined the first */
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, >=, 3);
	posts = log->len;
	g_ptr_array_unref(g_steal_pointer(&log));
	log = fake_log(&fx->fake, "/job/pg/api/json");
	g_assert_cmpuint(log->len, ==, 2);
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 1);
	g_clear_pointer(&st, json_decref);

	/* the repeat, while the item is still queued: it joins it (303),
	 * and that is no merge with another submission */
	job->repeat = TRUE;
	h = pgate_ci_submit(fx->b, job, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(h, "\"queue\":1"));
	g_assert_null(strstr(h, "merged"));
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_QUEUED);
	g_assert_null(strstr(r->reason, "merged"));
	g_clear_pointer(&r, pgate_ci_result_free);
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 1);
	g_clear_pointer(&st, json_decref);

	/* the series was applied again meanwhile (new commit ids): the
	 * queued item would build a commit its ref no longer has, so the
	 * repeat cancels it and queues its own */
	g_free(g_ptr_array_steal_index(job->commits, 1));
	g_ptr_array_add(job->commits,
			g_strdup("3333333333333333333333333333333333333333"));
	g_free(h);
	h = pgate_ci_submit(fx->b, job, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(h, "\"queue\":2"));
	g_assert_null(strstr(h, "merged"));
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 2);
	g_assert_true(json_is_true(json_object_get(json_array_get(
		json_object_get(st, "items"), 0), "cancelled")));
	g_clear_pointer(&st, json_decref);

	/* once it left the queue and was forgotten, the repeat finds its
	 * build and triggers nothing */
	fake_post(&fx->fake, "/fake/config", "{\"left_expiry\": 0.2}");
	fake_post(&fx->fake, "/fake/advance", "{\"seconds\": 31}");
	g_usleep(1000 * 1000);
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "items")), ==, 0);
	g_assert_cmpuint(json_array_size(json_object_get(st, "builds")), ==, 1);
	g_ptr_array_unref(g_steal_pointer(&log));
	h2 = pgate_ci_submit(fx->b, job, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(h2, "\"queue\":2"));
	g_assert_nonnull(strstr(h2, "\"build\":1"));
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, ==, posts + 2);
	r = pgate_ci_poll(fx->b, h2, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
}

/* A reply lost after Jenkins queued the trigger, and a quiet period
 * shorter than the pause before the retry: the item has left the queue
 * when the retry comes (Jenkins would not merge it), so the retry looks
 * for its build first and finds it. */
static void
test_lost_reply_left(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autoptr(json_t) st = NULL;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL "}}",
		   NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", "retry_backoff_ms = 800");
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"lose\", "
		  "\"count\": 1, \"match\": \"buildWithParameters\"}");
	h = submit_ok(fx->b, "t-lost-left");
	g_assert_nonnull(strstr(h, "\"queue\":1"));
	g_assert_nonnull(strstr(h, "\"build\":1"));
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpuint(log->len, ==, 1);
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_cmpuint(json_array_size(json_object_get(st, "builds")), ==, 1);
}

/* Cancelling a handle whose queue item was forgotten stops its build. */
static void
test_cancel_forgotten(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) b = NULL;

	fake_start(&fx->fake, "{\"long\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 60}}", "\"left_expiry\": 0.2", NULL);
	fx->b = backend_new(&fx->fake, "long", NULL);
	h = submit_ok(fx->b, "t-cancel-forgotten");
	g_usleep(1000 * 1000);
	b = fake_build(&fx->fake, "long", 1);
	g_assert_nonnull(b);
	g_assert_true(pgate_ci_cancel(fx->b, h, &error));
	g_assert_no_error(error);
	g_usleep(200 * 1000);
	json_decref(b);
	b = fake_build(&fx->fake, "long", 1);
	g_assert_cmpstr(json_string_value(json_object_get(b, "result")), ==,
			"ABORTED");
}

static void
test_folder_and_location(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL, *url = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GPtrArray) log = NULL;

	/* Jenkins builds Location from the request's Host: here it
	 * advertises a host that does not exist */
	fake_start(&fx->fake, "{\"team a/ci/my job\": {\"params\": "
		   PARAMS_ALL "}}", "\"location_host\": \"jenkins.invalid:1\","
		   "\"root_url\": \"https://ci.example.org/jk/\"",
		   "/jk");
	fx->b = backend_new(&fx->fake, "team a/ci/my job",
			    "public_url = https://ci.example.org/jk/");
	h = submit_ok(fx->b, "t-folder");
	r = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	url = g_strdup("https://ci.example.org/jk/job/team%20a/job/ci/job/"
		       "my%20job/1/");
	g_assert_cmpstr(r->url, ==, url);
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"path")), ==, "/jk/job/team%20a/job/ci/job/my%20job/"
		"buildWithParameters");
}

static void
test_poll_many(Fixture *fx, gconstpointer data)
{
	enum { N = 20 };
	char *handles[N];
	PgateCiResult *res[N];
	GError *errs[N];
	guint done = 0, rounds = 0;
	gint64 t0, slow_round;

	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"concurrent\": true, \"duration\": 0.5, "
		   "\"tests\": {\"pass\": 1}}}", "\"executors\": 20", NULL);
	fx->b = backend_new(&fx->fake, "pg", "max_connections = 8");
	for (guint i = 0; i < N; i++) {
		g_autofree char *t = g_strdup_printf("t-many-%u", i);

		handles[i] = submit_ok(fx->b, t);
	}
	/* concurrency: 20 requests that each take 0.4 s, 8 at a time */
	fake_post(&fx->fake, "/fake/inject", "{\"mode\": \"slow\", "
		  "\"seconds\": 0.4, \"count\": 20}");
	t0 = g_get_monotonic_time();
	pgate_ci_poll_many(fx->b, (const char *const *)handles, N, res, errs);
	slow_round = g_get_monotonic_time() - t0;
	for (guint i = 0; i < N; i++) {
		g_assert_no_error(errs[i]);
		g_assert_nonnull(res[i]);
		pgate_ci_result_free(res[i]);
	}
	g_test_message("poll_many: 20 handles, 0.4 s per request, "
		       "8 connections: %.2f s", slow_round / 1e6);
	/* one after the other would take 8 s; 8 at a time, 1.2 s */
	g_assert_cmpint(slow_round, <, 3 * G_USEC_PER_SEC);
	g_assert_cmpint(slow_round, >=, (gint64)(0.9 * G_USEC_PER_SEC));

	while (done < N && rounds++ < 200) {
		done = 0;
		pgate_ci_poll_many(fx->b, (const char *const *)handles, N, res,
				   errs);
		for (guint i = 0; i < N; i++) {
			g_assert_no_error(errs[i]);
			if (res[i]->handle) {
				g_free(handles[i]);
				handles[i] = g_strdup(res[i]->handle);
			}
			if (res[i]->state == PGATE_JOB_DONE) {
				g_assert_cmpint(res[i]->verdict, ==,
						PGATE_VERDICT_SUCCESS);
				g_assert_true(res[i]->has_tests);
				done++;
			}
			pgate_ci_result_free(res[i]);
		}
		g_usleep(50 * 1000);
	}
	g_assert_cmpuint(done, ==, N);
	for (guint i = 0; i < N; i++) {
		g_assert_nonnull(strstr(handles[i], "\"build\":"));
		g_free(handles[i]);
	}
}

static void
test_timeouts(Fixture *fx, gconstpointer data)
{
	g_autofree char *hq = NULL, *hb = NULL;
	g_autoptr(PgateCiResult) rq = NULL, rb = NULL;
	g_autoptr(PgateCiBackend) bb = NULL;
	g_autoptr(json_t) st = NULL, build = NULL;

	fake_start(&fx->fake, "{\"offline\": {\"params\": " PARAMS_ALL ", "
		   "\"label_offline\": true},"
		   "\"long\": {\"params\": " PARAMS_ALL ", \"duration\": 60}}",
		   NULL, NULL);
	/* stuck in the queue: its label has no node */
	fx->b = backend_new(&fx->fake, "offline", "queue_timeout = 1");
	hq = submit_ok(fx->b, "t-qto");
	/* a build that runs for too long */
	bb = backend_new(&fx->fake, "long", "build_timeout = 1");
	hb = submit_ok(bb, "t-bto");
	rq = poll_until_done(fx->b, &hq, 5, NULL, NULL);
	g_assert_cmpint(rq->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(rq->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_true(g_str_has_prefix(rq->reason, "still queued after 1 s, "
				       "cancelled: There are no nodes"));
	rb = poll_until_done(bb, &hb, 5, NULL, NULL);
	g_assert_cmpint(rb->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(rb->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(rb->reason, ==, "build #1 timed out after 1 s "
			"(stopped)");
	st = fake_call(&fx->fake, "/fake/state", NULL);
	g_assert_true(json_is_true(json_object_get(json_array_get(
		json_object_get(st, "items"), 0), "cancelled")));
	g_usleep(200 * 1000);
	build = fake_build(&fx->fake, "long", 1);
	g_assert_cmpstr(json_string_value(json_object_get(build, "result")),
			==, "ABORTED");
}

static void
test_done_means_in_progress_false(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;
	g_autoptr(GError) error = NULL;

	/* the result is set mid-build, and post-production takes long */
	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"result\": \"FAILURE\", \"result_early\": true, "
		   "\"duration\": 0.4, \"post\": 1.5, "
		   "\"tests\": {\"pass\": 3, \"fail\": 1}}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h = submit_ok(fx->b, "t-post");
	for (;;) {
		g_autoptr(json_t) b = fake_build(&fx->fake, "pg", 1);

		if (b && g_str_equal(json_string_value(json_object_get(b,
				"phase")), "post"))
			break;
		g_usleep(20 * 1000);
	}
	/* building is false and the result is known, but inProgress is
	 * still true: logs and test report are not final yet */
	r = poll_until_done(fx->b, &h, 0, NULL, NULL);
	g_assert_cmpint(r->state, ==, PGATE_JOB_RUNNING);
	r2 = poll_until_done(fx->b, &h, 10, NULL, NULL);
	g_assert_cmpint(r2->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpuint(r2->tests_total, ==, 4);
	g_assert_cmpuint(r2->tests_failed, ==, 1);
	g_assert_true(g_str_has_suffix(r2->summary, "Finished: FAILURE"));
	(void)error;
}

static void
test_blocked(Fixture *fx, gconstpointer data)
{
	g_autofree char *h1 = NULL, *h2 = NULL;
	g_autoptr(PgateCiResult) r1 = NULL, r2 = NULL;
	gboolean blocked = FALSE;

	/* concurrent builds off: a second trigger waits for the first */
	fake_start(&fx->fake, "{\"pg\": {\"params\": " PARAMS_ALL ", "
		   "\"duration\": 1.0}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", NULL);
	h1 = submit_ok(fx->b, "t-blocked-1");
	g_usleep(500 * 1000);
	h2 = submit_ok(fx->b, "t-blocked-2");
	for (int i = 0; i < 100 && !blocked; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateCiResult) r = pgate_ci_poll(fx->b, h2, &error);

		g_assert_no_error(error);
		g_assert_cmpint(r->state, ==, PGATE_JOB_QUEUED);
		blocked = g_str_has_prefix(r->reason, "Build #1 is already in "
					   "progress (ETA:");
		g_usleep(40 * 1000);
	}
	g_assert_true(blocked);
	r1 = poll_until_done(fx->b, &h1, 10, NULL, NULL);
	r2 = poll_until_done(fx->b, &h2, 10, NULL, NULL);
	g_assert_cmpint(r1->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_true(g_str_has_suffix(r1->url, "/job/pg/1/"));
	g_assert_true(g_str_has_suffix(r2->url, "/job/pg/2/"));
}

static void
expect_config_error(Fake *f, const char *text, const char *needle)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiBackend) b = NULL;

	g_assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
	b = pgate_ci_backend_new("jenkins", kf, "ci.jenkins", f->dir, &error);
	g_assert_null(b);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
	if (strstr(error->message, needle) == NULL)
		g_error("\"%s\" lacks \"%s\"", error->message, needle);
	g_assert_null(strstr(error->message, "hunter2"));
	g_assert_null(strstr(error->message, TOKEN));
}

static void
test_config(Fixture *fx, gconstpointer data)
{
	Fake *f = &fx->fake;
	g_autofree char *big = NULL, *bigfile = NULL, *text = NULL;

	f->dir = g_dir_make_tmp("pgate-jenkins-XXXXXX", NULL);
	g_setenv("PGATE_TEST_JENKINS_TOKEN", TOKEN, TRUE);
#define G "[ci.jenkins]\n"
#define OK_AUTH "user = alice\ntoken_env = PGATE_TEST_JENKINS_TOKEN\n"
	expect_config_error(f, G "job = x\n" OK_AUTH, "url is not set");
	expect_config_error(f, G "url = https://alice:hunter2@ci.example.org/"
			    "\njob = x\n" OK_AUTH, "must not hold credentials");
	expect_config_error(f, G "url = ftp://ci.example.org/\njob = x\n"
			    OK_AUTH, "http or https");
	expect_config_error(f, G "url = http://ci.example.org/?a=b\njob = x\n"
			    OK_AUTH, "query");
	expect_config_error(f, G "url = http://ci/\njob = a//b\n" OK_AUTH,
			    "not a job path");
	expect_config_error(f, G "url = http://ci/\njob = a/../b\n" OK_AUTH,
			    "not a job path");
	expect_config_error(f, G "url = http://ci/\n" OK_AUTH,
			    "job is not set");
	expect_config_error(f, G "url = http://ci/\njob = x\n"
			    "token_env = PGATE_TEST_JENKINS_TOKEN\n",
			    "user is not set");
	expect_config_error(f, G "url = http://ci/\njob = x\nuser = alice\n",
			    "no credentials");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "token_file = /nonexistent\n", "only one of");
	expect_config_error(f, G "url = http://ci/\njob = x\nuser = alice\n"
			    "token_file = /nonexistent/token\n",
			    "token_file: cannot open /nonexistent/token: No "
			    "such file");
	expect_config_error(f, G "url = http://ci/\njob = x\nuser = alice\n"
			    "token_env = PGATE_TEST_UNSET_VARIABLE\n",
			    "PGATE_TEST_UNSET_VARIABLE is not set");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "request_timeout = soon\n",
			    "request_timeout: 'soon' is not a whole number");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "queue_timeout = 0\n", "queue_timeout");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "param_ref = PATCHGATE_COMMIT\n",
			    "param_ref and param_commit name the same");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "param_trigger =\n", "param_trigger may not be "
			    "empty");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "param_msgid = delay\n", "usable parameter name");
	expect_config_error(f, G "url = http://ci/\njob = x\n" OK_AUTH
			    "ca_file = /nonexistent.pem\n", "ca_file");
	expect_config_error(f, "[other]\n", "the group is missing");
	/* a secret file that is too big, or two lines */
	bigfile = g_build_filename(f->dir, "big", NULL);
	big = g_strnfill(5000, 'x');
	g_assert_true(g_file_set_contents_full(bigfile, big, -1, 0, 0600,
					       NULL));
	text = g_strdup_printf(G "url = http://ci/\njob = x\nuser = alice\n"
			       "password_file = %s\n", bigfile);
	expect_config_error(f, text, "does not hold one line of at most "
			    "4096 bytes");
	g_assert_true(g_file_set_contents_full(bigfile, "hunter2\nmore\n", -1,
					       0, 0600, NULL));
	expect_config_error(f, text, "does not hold one line");
	/* a secret everyone may read is refused: it may be known */
	g_assert_cmpint(g_chmod(bigfile, 0644), ==, 0);
	expect_config_error(f, text, "read or written by everyone");
	/* contrib/ci-jenkins.conf.example: every key is valid; only its
	 * token file does not exist here */
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) error = NULL;
		g_autofree char *example = g_build_filename(
			g_getenv("PGATE_SRCDIR"), "contrib",
			"ci-jenkins.conf.example", NULL);
		PgateCiBackend *b;

		g_assert_true(g_key_file_load_from_file(kf, example, 0,
							&error));
		b = pgate_ci_backend_new("jenkins", kf, "ci.jenkins", f->dir,
					 &error);
		g_assert_null(b);
		g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
		g_assert_cmpstr(error->message, ==, "[ci.jenkins] token_file: "
				"cannot open /etc/patchgate/jenkins.token: No "
				"such file or directory");
	}
	/* and a good one, with every key */
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateCiBackend) b = NULL;
		g_autoptr(PgateCiResult) r = NULL;

		g_assert_true(g_key_file_load_from_data(kf, G
			"url = http://127.0.0.1:1/jenkins/\n"
			"public_url = https://ci.example.org/\n"
			"job = a/b\n" OK_AUTH "request_timeout = 2\n"
			"retries = 0\nretry_backoff_ms = 10\n"
			"max_connections = 2\nqueue_timeout = 60\n"
			"build_timeout = 60\ndelay = 0\n"
			"param_base_commit =\nparam_msgid = MSGID\n",
			-1, 0, NULL));
		b = pgate_ci_backend_new("jenkins", kf, "ci.jenkins", f->dir,
					 &error);
		g_assert_no_error(error);
		g_assert_nonnull(b);
		/* a handle that is not one */
		r = pgate_ci_poll(b, "queue:17", &error);
		g_assert_null(r);
		g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
		g_clear_error(&error);
		g_assert_false(pgate_ci_cancel(b, "{\"jenkins\":1,\"job\":"
					       "\"../x\",\"queue\":1}",
					       &error));
		g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	}
#undef G
#undef OK_AUTH
}

static void
test_delay_param(Fixture *fx, gconstpointer data)
{
	g_autofree char *h = NULL;
	g_autoptr(GPtrArray) log = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_autoptr(GError) error = NULL;
	json_t *params;

	/* the job's quiet period is long; delay = 0 overrides it, and
	 * renamed or omitted parameters are honoured */
	fake_start(&fx->fake, "{\"pg\": {\"params\": {\"SHA\": \"\", "
		   "\"PATCHGATE_TRIGGER\": \"\", \"PATCHGATE_BASE_COMMIT\": "
		   "\"none\"}, \"quiet\": 60}}", NULL, NULL);
	fx->b = backend_new(&fx->fake, "pg", "delay = 0\n"
			    "param_commit = SHA\nparam_base_commit =");
	h = submit_ok(fx->b, "t-delay");
	g_usleep(400 * 1000);
	r = pgate_ci_poll(fx->b, h, &error);
	g_assert_no_error(error);
	g_assert_cmpint(r->state, !=, PGATE_JOB_QUEUED);
	log = fake_log(&fx->fake, "buildWithParameters");
	g_assert_cmpstr(json_string_value(json_object_get(log->pdata[0],
		"query")), ==, "delay=0sec");
	params = json_object_get(log->pdata[0], "params");
	g_assert_cmpstr(json_string_value(json_object_get(params, "SHA")), ==,
			"2222222222222222222222222222222222222222");
	g_assert_cmpstr(json_string_value(json_object_get(params,
		"PATCHGATE_BASE_COMMIT")), ==, "none");
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
#define ADD(path, fn) g_test_add(path, Fixture, NULL, NULL, fn, teardown)
	ADD("/ci/jenkins/token-success", test_success);
	ADD("/ci/jenkins/unstable-test-report", test_unstable_tests);
	ADD("/ci/jenkins/failure-console-tail", test_failure_summary);
	ADD("/ci/jenkins/aborted", test_aborted);
	ADD("/ci/jenkins/cancel-queued", test_cancel_queued);
	ADD("/ci/jenkins/merge-303", test_merge);
	ADD("/ci/jenkins/refused-302", test_refused_302);
	ADD("/ci/jenkins/http-errors", test_auth_errors);
	ADD("/ci/jenkins/password-crumb-cookie", test_password_crumb);
	ADD("/ci/jenkins/crumb-issuer-off", test_crumb_issuer_off);
	ADD("/ci/jenkins/retry-5xx", test_retry_5xx);
	ADD("/ci/jenkins/server-down", test_server_down);
	ADD("/ci/jenkins/request-timeout", test_request_timeout);
	ADD("/ci/jenkins/restart-resume", test_resume);
	ADD("/ci/jenkins/left-item-expiry", test_left_expiry);
	ADD("/ci/jenkins/cron-passes", test_cron_passes);
	ADD("/ci/jenkins/lost-reply", test_lost_reply);
	ADD("/ci/jenkins/lost-reply-left", test_lost_reply_left);
	ADD("/ci/jenkins/cancel-forgotten", test_cancel_forgotten);
	ADD("/ci/jenkins/folder-location-host", test_folder_and_location);
	ADD("/ci/jenkins/poll-many", test_poll_many);
	ADD("/ci/jenkins/queue-build-timeouts", test_timeouts);
	ADD("/ci/jenkins/in-progress", test_done_means_in_progress_false);
	ADD("/ci/jenkins/blocked", test_blocked);
	ADD("/ci/jenkins/config", test_config);
	ADD("/ci/jenkins/delay-and-names", test_delay_param);
	return g_test_run();
}
