/* test-ci-local.c - the local CI backend through ci.h, with real bubblewrap,
 * real cgroups (as root) and a real git repository made here.
 *
 * The project under test is a small git repository generated at start:
 * build.sh prints "building VERSION" and WARNINGS lines "warning: ...";
 * test.sh prints 40 lines and exits with TEST_RESULT.  Its commits:
 *
 *   c0  base  WARNINGS=1 TEST_RESULT=0
 *   c1  p1    WARNINGS=2 TEST_RESULT=0
 *   c2  p2    WARNINGS=3 TEST_RESULT=1   (breaks the tests)
 *   c3  p3    WARNINGS=3 TEST_RESULT=0   (fixes them)
 *   c4  p4    WARNINGS=3 TEST_RESULT=1
 *   c5  p5    WARNINGS=3 TEST_RESULT=1   (fails like its parent)
 *
 * Jobs read it from a bare clone.  Every test has its own state directory.
 * Several checks come with a control that must come out the other way
 * (sandbox = off reaches the network, sees the host's /tmp, runs the
 * marker step), so that a check cannot pass because its step never ran.
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ci/ci.h"
#include "common/pgate-common.h"

#define GROUP "ci.local"
#define NOBODY 65534

static char *T;          /* the test's directory (0755) */
static char *work_root;  /* 01777 */
static char *markers;    /* 0777 */
static char *bare;       /* the project, bare */
static char *commits[6];

/* ---- fixture ---------------------------------------------------------- */

static char *
run_argv(const char *const *argv, const char *cwd)
{
	g_autoptr(GError) error = NULL;
	char *out = NULL;
	int status;

	g_spawn_sync(cwd, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
		     &out, NULL, &status, &error);
	g_assert_no_error(error);
	g_spawn_check_wait_status(status, &error);
	g_assert_no_error(error);
	return g_strstrip(out);
}

static void
write_file(const char *dir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autoptr(GError) error = NULL;

	g_file_set_contents(path, text, -1, &error);
	g_assert_no_error(error);
	g_assert_cmpint(g_chmod(path, 0644), ==, 0);
}

static const char build_sh[] =
	"#!/bin/sh\n"
	"v=$(cat VERSION)\n"
	"echo \"building $v\"\n"
	"n=$(cat WARNINGS)\n"
	"i=0\n"
	"while [ $i -lt $n ]; do i=$((i+1)); "
	"echo \"warning: thing $i in $v\"; done\n"
	"echo \"built $v\"\n";

static const char test_sh[] =
	"#!/bin/sh\n"
	"i=0\n"
	"while [ $i -lt 40 ]; do i=$((i+1)); echo \"test line $i\"; done\n"
	"r=$(cat TEST_RESULT)\n"
	"if [ \"$r\" != 0 ]; then echo \"tests FAILED\"; exit $r; fi\n"
	"echo \"tests passed\"\n";

static void
make_project(void)
{
	static const struct {
		const char *version, *warnings, *result;
	} revs[] = {
		{ "base", "1", "0" }, { "p1", "2", "0" }, { "p2", "3", "1" },
		{ "p3", "3", "0" }, { "p4", "3", "1" }, { "p5", "3", "1" },
	};
	g_autofree char *src = g_build_filename(T, "project", NULL);

	g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
	g_free(run_argv((const char *[]){ "git", "init", "-q", "-b", "main",
					  src, NULL }, NULL));
	write_file(src, "build.sh", build_sh);
	write_file(src, "test.sh", test_sh);
	for (gsize i = 0; i < G_N_ELEMENTS(revs); i++) {
		write_file(src, "VERSION", revs[i].version);
		write_file(src, "WARNINGS", revs[i].warnings);
		write_file(src, "TEST_RESULT", revs[i].result);
		g_free(run_argv((const char *[]){ "git", "add", "-A", NULL },
				src));
		g_free(run_argv((const char *[]){
			"git", "-c", "user.name=Tess Ter", "-c",
			"user.email=tess@example.org", "commit", "-q", "-m",
			revs[i].version, NULL }, src));
		commits[i] = run_argv((const char *[]){ "git", "rev-parse",
							 "HEAD", NULL }, src);
	}
	bare = g_build_filename(T, "project.git", NULL);
	g_free(run_argv((const char *[]){ "git", "clone", "-q", "--bare", src,
					  bare, NULL }, NULL));
}

static char *
new_state_dir(void)
{
	static gint n;
	char *dir = g_strdup_printf("%s/state-%d", T, g_atomic_int_add(&n, 1));

	g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
	return dir;
}

/* The state directory of the backend made last. */
static char last_state[4096];

/* A backend from "[ci.local]" + defaults for the tests + @extra. */
static PgateCiBackend *
backend_try(const char *state, const char *extra, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *text = g_strdup_printf(
		"[" GROUP "]\nwork_root = %s\ntimeout = 30\n%s\n", work_root,
		extra);

	g_strlcpy(last_state, state, sizeof last_state);
	if (!g_key_file_load_from_data(kf, text, -1, G_KEY_FILE_NONE, error))
		return NULL;
	return pgate_ci_backend_new("local", kf, GROUP, state, error);
}

static PgateCiBackend *
backend(const char *state, const char *extra)
{
	g_autoptr(GError) error = NULL;
	PgateCiBackend *b = backend_try(state, extra, &error);

	g_assert_no_error(error);
	g_assert_nonnull(b);
	return b;
}

static PgateCiJob *
job_for(const char *repo, int first, int last, int base)
{
	PgateCiJob *job = pgate_ci_job_new();

	job->job = g_strdup("build");
	job->repo_path = g_strdup(repo);
	for (int i = first; i <= last; i++)
		g_ptr_array_add(job->commits, g_strdup(commits[i]));
	job->base_commit = base >= 0 ? g_strdup(commits[base]) : NULL;
	job->series_id = g_strdup("series-1");
	job->version = 3;
	job->branch = g_strdup("main");
	job->msgid = g_strdup("<cover@example.org>");
	job->trigger_id = g_strdup("series-1.nonce");
	return job;
}

static char *
submit(PgateCiBackend *b, int first, int last, int base)
{
	g_autoptr(PgateCiJob) job = job_for(bare, first, last, base);
	g_autoptr(GError) error = NULL;
	char *handle = pgate_ci_submit(b, job, &error);

	g_assert_no_error(error);
	g_assert_nonnull(handle);
	return handle;
}

static PgateCiResult *
poll_ok(PgateCiBackend *b, const char *handle)
{
	g_autoptr(GError) error = NULL;
	PgateCiResult *r = pgate_ci_poll(b, handle, &error);

	g_assert_no_error(error);
	g_assert_nonnull(r);
	return r;
}

/* Polls until the job is done or lost (at most @secs seconds). */
static PgateCiResult *
wait_done(PgateCiBackend *b, const char *handle, int secs)
{
	gint64 until = g_get_monotonic_time() + secs * G_USEC_PER_SEC;

	for (;;) {
		PgateCiResult *r = poll_ok(b, handle);

		if (r->state == PGATE_JOB_DONE ||
		    r->state == PGATE_JOB_LOST)
			return r;
		pgate_ci_result_free(r);
		g_assert_cmpint(g_get_monotonic_time(), <, until);
		g_usleep(20000);
	}
}

static void
wait_state(PgateCiBackend *b, const char *handle, PgateJobState state)
{
	gint64 until = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

	for (;;) {
		g_autoptr(PgateCiResult) r = poll_ok(b, handle);

		if (r->state == state)
			return;
		g_assert_cmpint(r->state, !=, PGATE_JOB_DONE);
		g_assert_cmpint(g_get_monotonic_time(), <, until);
		g_usleep(20000);
	}
}

static char *
read_log(const PgateCiResult *r)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *path = NULL;
	char *text = NULL;

	/* relative to the state directory, never to the working one */
	g_assert_nonnull(r->log_path);
	g_assert_false(g_path_is_absolute(r->log_path));
	path = g_build_filename(last_state, r->log_path, NULL);
	g_file_get_contents(path, &text, NULL, &error);
	g_assert_no_error(error);
	return text;
}

/* Runs one job of steps @extra on commit @c and returns its result. */
static PgateCiResult *
run_steps(const char *extra, int c, char **out_log)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, extra);
	g_autofree char *h = submit(b, c, c, -1);
	PgateCiResult *r = wait_done(b, h, 60);

	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	if (g_test_verbose() || g_getenv("PGATE_TEST_SHOW_LOGS")) {
		g_autofree char *log = read_log(r);

		g_test_message("verdict %s: %s\n%s",
			       pgate_verdict_name(r->verdict),
			       r->reason, log);
	}
	if (out_log)
		*out_log = read_log(r);
	return r;
}

/* Whether a process whose command line starts with @prefix exists (so
 * that "sleep 5" matches the step, not the bwrap that runs it). */
static gboolean
process_exists(const char *prefix)
{
	g_autoptr(GDir) d = g_dir_open("/proc", 0, NULL);
	const char *name;

	while ((name = g_dir_read_name(d)) != NULL) {
		g_autofree char *path = NULL, *cmd = NULL;
		gsize len;

		if (!g_ascii_isdigit(name[0]))
			continue;
		path = g_strdup_printf("/proc/%s/cmdline", name);
		if (!g_file_get_contents(path, &cmd, &len, NULL))
			continue;
		for (gsize i = 0; i + 1 < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		if (g_str_has_prefix(cmd, prefix))
			return TRUE;
	}
	return FALSE;
}

static gboolean
gone_soon(const char *prefix)
{
	for (int i = 0; i < 100; i++) {
		if (!process_exists(prefix))
			return TRUE;
		g_usleep(20000);
	}
	return FALSE;
}

static gboolean
appears_soon(const char *prefix)
{
	for (int i = 0; i < 500; i++) {
		if (process_exists(prefix))
			return TRUE;
		g_usleep(20000);
	}
	return FALSE;
}

static guint
count_dir(const char *dir, const char *prefix)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	const char *name;
	guint n = 0;

	while (d && (name = g_dir_read_name(d)) != NULL)
		if (g_str_has_prefix(name, prefix))
			n++;
	return n;
}

#define STEPS "commands = build: sh build.sh;test: sh test.sh\n"

/* ---- configuration ---------------------------------------------------- */

static void
test_config_errors(void)
{
	static const struct {
		const char *extra, *key;
	} bad[] = {
		{ "", "commands" },
		{ "commands =\n", "commands" },
		{ "commands = build: \"unterminated\n", "commands" },
		{ "commands = a: true;a: false\n", "commands" },
		{ "commands = true\nstep.x = true\n", "step.x" },
		{ "step.bad/name = true\n", "step.bad/name" },
		{ STEPS "mode = sometimes\n", "mode" },
		{ STEPS "timeout = 0\n", "timeout" },
		{ STEPS "timeout = ten\n", "timeout" },
		{ STEPS "max_output = 12\n", "max_output" },
		{ STEPS "max_output = 1Q\n", "max_output" },
		{ STEPS "jobs = 0\n", "jobs" },
		{ STEPS "memory = 1M\n", "memory" },
		{ STEPS "pids = 3\n", "pids" },
		{ STEPS "sandbox = maybe\n", "sandbox" },
		{ STEPS "differential = perhaps\n", "differential" },
		{ STEPS "cgroup = v3\n", "cgroup" },
		{ STEPS "warning_regex = (unclosed\n", "warning_regex" },
		{ STEPS "ro_binds = relative/path\n", "ro_binds" },
		{ STEPS "ro_binds = /usr:/tmp/work/x\n", "ro_binds" },
		{ STEPS "ro_binds = /usr/../etc\n", "ro_binds" },
		{ STEPS "work_root = /nonexistent/dir\n", "work_root" },
		{ STEPS "log_url = ftp://ci.example.org/{series}\n",
		  "log_url" },
		{ STEPS "log_url = https://ci.example.org/{branch}\n",
		  "log_url" },
		{ STEPS "log_url = https://ci.example.org/{series\n",
		  "log_url" },
		{ STEPS "log_url = https://ci.example.org/series}\n",
		  "log_url" },
		{ STEPS "log_url = https://ci.example.org/a b\n", "log_url" },
	};
	g_autofree char *state = new_state_dir();

	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateCiBackend) b = backend_try(state, bad[i].extra,
							  &error);
		g_autofree char *want = g_strdup_printf("[%s] %s:", GROUP,
							bad[i].key);

		if (g_test_verbose())
			g_test_message("config %zu: %s", i, bad[i].extra);
		g_assert_null(b);
		g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, want));
		g_assert_false(pgate_error_is_transient(error));
	}
	if (geteuid() == 0) {
		static const char *const root_users[] = {
			"user = root\n", "user = 0\n", "user = 1000:0\n",
			"user = no-such-user-here\n",
		};

		for (gsize i = 0; i < G_N_ELEMENTS(root_users); i++) {
			g_autoptr(GError) error = NULL;
			g_autofree char *extra = g_strconcat(STEPS,
							     root_users[i],
							     NULL);
			g_autoptr(PgateCiBackend) b = backend_try(state, extra,
								  &error);

			g_assert_null(b);
			g_assert_error(error, PGATE_CI_ERROR,
				       PGATE_ERROR_CONFIG);
			g_assert_nonnull(strstr(error->message, "user:"));
		}
	}
	/* the good forms */
	{
		g_autoptr(PgateCiBackend) b1 = backend(state, STEPS
			"mode = patch\nmax_output = 64K\nmemory = 2G\n"
			"pids = 0\ncpu = 0\nsandbox = on\ncgroup = off\n"
			"ro_binds = /usr/share:/opt/share;/etc\n"
			"warning_regex = ^warning:\ndifferential = on\n");
		g_autoptr(PgateCiBackend) b2 = backend(state,
			"step.build = sh;build.sh\nstep.check = sh;-c;true\n"
			"unknown_key = ignored\n");

		g_assert_nonnull(b1);
		g_assert_nonnull(b2);
	}
}

/* contrib/ci-local.conf.example is a valid configuration. */
static void
test_config_example(void)
{
	const char *src = g_getenv("PGATE_SRCDIR");
	g_autofree char *path = NULL, *state = new_state_dir();
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiBackend) b = NULL;

	if (src == NULL) {
		g_test_skip("PGATE_SRCDIR is not set");
		return;
	}
	path = g_build_filename(src, "contrib", "ci-local.conf.example", NULL);
	g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &error);
	g_assert_no_error(error);
	b = pgate_ci_backend_new("local", kf, GROUP, state, &error);
	g_assert_no_error(error);
	g_assert_nonnull(b);
}

/* ---- submit and poll: bad input --------------------------------------- */

static void
test_submit_invalid(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, STEPS);
	g_autoptr(PgateCiBackend) bd = backend(state, STEPS
					       "differential = on\n");
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiJob) job = job_for(bare, 1, 1, -1);
	g_autoptr(PgateCiResult) r = NULL;
	char *h;

	g_free(job->commits->pdata[0]);
	job->commits->pdata[0] = g_strdup("not-a-commit");
	h = pgate_ci_submit(b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);

	g_free(job->commits->pdata[0]);
	job->commits->pdata[0] = g_strdup(
		"0123456789abcdef0123456789abcdef01234567");
	h = pgate_ci_submit(b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&error);

	g_ptr_array_set_size(job->commits, 0);
	h = pgate_ci_submit(b, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);

	/* differential without a base */
	g_ptr_array_add(job->commits, g_strdup(commits[1]));
	h = pgate_ci_submit(bd, job, &error);
	g_assert_null(h);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_assert_nonnull(strstr(error->message, "base"));
	g_clear_error(&error);

	/* a repository that is not one */
	g_free(job->repo_path);
	job->repo_path = g_strdup(markers);
	h = pgate_ci_submit(b, job, &error);
	g_assert_null(h);
	g_assert_nonnull(error);
	g_clear_error(&error);
	/* nothing was left behind: only the baseline directory */
	{
		g_autofree char *root = g_build_filename(state, "ci", "local",
							 NULL);

		g_assert_cmpuint(count_dir(root, ""), ==, 1);
	}

	/* handles: malformed is an error, unknown is lost */
	r = pgate_ci_poll(b, "../../etc", &error);
	g_assert_null(r);
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	g_assert_false(pgate_ci_cancel(b, "x/y", &error));
	g_assert_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	r = poll_ok(b, "0123456789abcdef");
	g_assert_cmpint(r->state, ==, PGATE_JOB_LOST);
	g_assert_true(pgate_ci_cancel(b, "0123456789abcdef", &error));
	g_assert_no_error(error);
}

/* ---- outcomes ---------------------------------------------------------- */

static void
test_success(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, STEPS);
	g_autofree char *h = submit(b, 1, 1, -1);
	g_autoptr(PgateCiResult) r = wait_done(b, h, 60);
	g_autofree char *log = read_log(r);
	g_autofree char *dir = g_build_filename(state, "ci", "local", h, NULL);
	g_autofree char *jobjson = g_build_filename(dir, "job.json", NULL);
	g_autofree char *logpath = g_build_filename("ci", "local", h, "log",
						    NULL);
	g_autofree char *prefix = g_strdup_printf("pgate-ci-%s", h);

	g_assert_cmpuint(strlen(h), ==, 16);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpstr(r->reason, ==, "2 step(s) passed");
	g_assert_cmpint(r->warnings_added, ==, -1);
	g_assert_cmpuint(r->commits->len, ==, 0);
	g_assert_cmpint(r->started, >, 0);
	g_assert_cmpint(r->finished, >=, r->started);
	g_assert_cmpstr(r->log_path, ==, logpath);
	g_assert_true(g_file_test(jobjson, G_FILE_TEST_EXISTS));
	g_assert_nonnull(strstr(log, "building p1\n"));
	g_assert_nonnull(strstr(log, "tests passed\n"));
	g_assert_nonnull(strstr(log, "== step test: passed (exit 0)"));
	/* the temporary checkout is gone */
	g_assert_cmpuint(count_dir(work_root, prefix), ==, 0);
}

/* log_url: every result links the job's published log. */
static void
test_log_url(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, STEPS
		"log_url = https://ci.example.org/logs/{series}/v{version}/"
		"{job}/{handle}?c={commit}\n");
	g_autoptr(PgateCiBackend) plain = backend(state, STEPS);
	g_autoptr(PgateCiJob) job = job_for(bare, 1, 2, -1);
	g_autoptr(GError) error = NULL;
	g_autofree char *h = NULL, *want = NULL;
	g_autoptr(PgateCiResult) first = NULL, r = NULL, other = NULL;

	/* a series id from mail: its "/" and space stay in their segment */
	g_free(job->series_id);
	job->series_id = g_strdup("s1/../x y");
	h = pgate_ci_submit(b, job, &error);
	g_assert_no_error(error);
	want = g_strdup_printf("https://ci.example.org/logs/s1%%2F..%%2Fx%%20y/"
			       "v3/build/%s?c=%s", h, commits[2]);
	first = poll_ok(b, h);
	g_assert_cmpstr(first->url, ==, want);
	r = wait_done(b, h, 60);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpstr(r->url, ==, want);
	/* without log_url, no link */
	other = poll_ok(plain, h);
	g_assert_null(other->url);
}

static void
test_fail(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_steps(STEPS, 2, &log);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "step test failed (exit 1)");
	g_assert_nonnull(r->summary);
	g_assert_cmpuint(strlen(r->summary), <=, 4096);
	g_assert_true(g_str_has_prefix(r->summary,
				       "step test failed (exit 1)\n"));
	g_assert_nonnull(strstr(r->summary, "last lines of step test"));
	g_assert_nonnull(strstr(r->summary, "test line 40\ntests FAILED\n"));
	g_assert_nonnull(strstr(r->summary, "test line 22\n"));
	g_assert_null(strstr(r->summary, "test line 21\n"));
	g_assert_null(strstr(r->summary, "building"));
	g_assert_nonnull(strstr(log, "test line 1\n"));
}

static void
test_summary_bounded(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_steps(
		"step.noisy = python3;-c;import sys\\nfor i in range(60): "
		"print('x' * 1000, i)\\nprint('\\\\x1b[31mred\\\\x07 "
		"\\\\u00e9')\\nsys.exit(3)\n", 1, &log);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "step noisy failed (exit 3)");
	g_assert_cmpuint(strlen(r->summary), <=, 4096);
	g_assert_true(g_utf8_validate(r->summary, -1, NULL));
	g_assert_nonnull(strstr(r->summary, "?[31mred? \xc3\xa9\n"));
	for (const char *p = r->summary; *p; p++)
		g_assert_true(*p == '\n' || (guchar)*p >= 0x20);
	/* the log keeps the bytes as they were */
	g_assert_nonnull(strstr(log, "\x1b[31mred\x07"));
}

static void
test_timeout(void)
{
	gint64 t0 = g_get_monotonic_time();
	g_autoptr(PgateCiResult) r = run_steps(
		"timeout = 1\ncommands = sleepy: sleep 29.7071\n", 1, NULL);
	gint64 took = g_get_monotonic_time() - t0;

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "step sleepy timed out after 1 s");
	g_assert_cmpint(took, <, 10 * G_USEC_PER_SEC);
	g_assert_true(gone_soon("sleep 29.7071"));
}

static void
test_output_cap(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_steps(
		"max_output = 4096\ncommands = seq 1 100000\n", 1, &log);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "\n1\n2\n3\n"));
	g_assert_nonnull(strstr(log, "\n99999\n100000\n"));
	g_assert_nonnull(strstr(log, "bytes of output cut here"));
	g_assert_null(strstr(log, "\n50000\n"));
	g_assert_cmpuint(strlen(log), <, 4096 + 1024);
}

/* What a step leaves running in the background dies with it, with and
 * without the sandbox. */
static void
test_background(void)
{
	for (int off = 0; off < 2; off++) {
		g_autofree char *steps = g_strdup_printf(
			"commands = sh -c 'sleep 24.68 & echo started'\n%s",
			off ? "sandbox = off\n" : "");
		gint64 t0 = g_get_monotonic_time();
		g_autofree char *log = NULL;
		g_autoptr(PgateCiResult) r = run_steps(steps, 1, &log);

		g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
		g_assert_nonnull(strstr(log, "started\n"));
		g_assert_cmpint(g_get_monotonic_time() - t0, <,
				10 * G_USEC_PER_SEC);
		g_assert_true(gone_soon("sleep 24.68"));
	}
}

/* ---- the sandbox ------------------------------------------------------- */

static void
test_no_network(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	g_autofree char *steps = NULL, *log = NULL, *log_off = NULL;
	g_autofree char *steps_off = NULL;
	g_autoptr(PgateCiResult) r = NULL, off = NULL;

	g_assert_cmpint(s, >=, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(bind(s, (struct sockaddr *)&sa, sizeof sa), ==, 0);
	g_assert_cmpint(listen(s, 8), ==, 0);
	g_assert_cmpint(getsockname(s, (struct sockaddr *)&sa, &len), ==, 0);
	steps = g_strdup_printf(
		"step.connect = python3;-c;import socket\\n"
		"socket.create_connection(('127.0.0.1', %u), 3)\\n"
		"print('connected')\n", ntohs(sa.sin_port));
	r = run_steps(steps, 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_null(strstr(log, "connected\n"));
	g_assert_nonnull(strstr(log, "ConnectionRefusedError"));
	g_assert_cmpint(accept(s, NULL, NULL), <, 0);
	g_assert_cmpint(errno, ==, EAGAIN);

	/* control: the same step without the sandbox connects */
	steps_off = g_strconcat(steps, "sandbox = off\n", NULL);
	off = run_steps(steps_off, 1, &log_off);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log_off, "connected\n"));
	close(s);
}

static void
test_read_only_root(void)
{
	g_autofree char *usr = g_strdup_printf("/usr/pgate-ro-%d", getpid());
	g_autofree char *etc = g_strdup_printf("/etc/pgate-ro-%d", getpid());
	g_autofree char *s1 = g_strdup_printf(
		"commands = work: touch /tmp/work/ok;usr: touch %s\n", usr);
	g_autofree char *s2 = g_strdup_printf("commands = touch %s\n", etc);
	g_autofree char *log1 = NULL, *log2 = NULL;
	g_autoptr(PgateCiResult) r1 = run_steps(s1, 1, &log1);
	g_autoptr(PgateCiResult) r2 = run_steps(s2, 1, &log2);

	g_assert_cmpint(r1->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r1->reason, ==, "step usr failed (exit 1)");
	g_assert_nonnull(strstr(log1, "Read-only file system"));
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_nonnull(strstr(log2, "Read-only file system"));
	g_assert_false(g_file_test(usr, G_FILE_TEST_EXISTS));
	g_assert_false(g_file_test(etc, G_FILE_TEST_EXISTS));
}

static void
test_private_tmp(void)
{
	g_autofree char *host = g_strdup_printf("/tmp/pgate-host-%d", getpid());
	g_autofree char *inside = g_strdup_printf("/tmp/pgate-inside-%d",
						  getpid());
	g_autofree char *steps = g_strdup_printf(
		"commands = hidden: test ! -e %s;"
		"write: sh -c 'touch %s && test -e %s';"
		"fresh: test ! -e %s\n", host, inside, inside, inside);
	g_autofree char *steps_off = g_strconcat(steps, "sandbox = off\n",
						 NULL);
	g_autoptr(PgateCiResult) r = NULL, off = NULL;

	write_file("/tmp", host + 5, "host\n");
	/* each step has a /tmp of its own, which the host does not see */
	r = run_steps(steps, 1, NULL);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_false(g_file_test(inside, G_FILE_TEST_EXISTS));
	/* control: without the sandbox the host's /tmp is visible */
	off = run_steps(steps_off, 1, NULL);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(off->reason, ==, "step hidden failed (exit 1)");
	g_unlink(host);
}

static void
test_drop_uid(void)
{
	g_autofree char *log = NULL, *log2 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;

	if (geteuid() != 0) {
		g_test_skip("not running as root");
		return;
	}
	r = run_steps("commands = uid: id -u;gid: id -g;groups: id -G\n", 1,
		      &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "\n65534\n== step uid: passed"));
	g_assert_nonnull(strstr(log, "\n65534\n== step gid: passed"));
	g_assert_nonnull(strstr(log, "\n65534\n== step groups: passed"));
	g_assert_nonnull(strstr(log, "user nobody (uid 65534)"));

	/* a configured user, by number */
	/* a ';' inside a GKeyFile list item is written "\;" */
	r2 = run_steps("user = 4242:4343\ncommands = sh -c 'id -u\\; id -g\\; "
		       "touch f\\; stat -c %u.%g f'\n", 1, &log2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log2, "\n4242\n4343\n4242.4343\n"));
}

static void
test_memory_limit(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_steps(
		"memory = 64M\n"
		"step.small = python3;-c;b = bytearray(8 << 20)\\n"
		"print('small ok')\n"
		"step.big = python3;-c;b = bytearray(512 << 20)\\n"
		"print('big ok')\n", 1, &log);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_true(g_str_has_prefix(r->reason, "step big failed"));
	g_assert_nonnull(strstr(log, "small ok\n"));
	g_assert_null(strstr(log, "big ok\n"));
}

/* A step one of our rlimits stopped (SIGXFSZ, SIGXCPU) ended by a limit
 * of ours, not by the patch's failure: an infrastructure error, retried
 * and never reported as a fail (issue #41). */
static void
test_fsize_limit(void)
{
	g_autoptr(PgateCiResult) r = run_steps(
		"fsize = 1M\n"
		"step.big = dd;if=/dev/zero;of=big;bs=65536;count=64\n", 1, NULL);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r->reason, "step big ended: stopped by the "
				"[ci.local] fsize limit (1 MiB): killed by "
				"signal 25 (SIGXFSZ)"));
}

/* As root, a memory cgroup holds the whole step: four processes of 60 MiB
 * each pass RLIMIT_AS (per process) but not memory = 128M together. */
static void
test_memory_cgroup(void)
{
	g_autofree char *log = NULL, *own = NULL, *text = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	g_auto(GStrv) lines = NULL;

	if (geteuid() != 0 ||
	    !g_file_test("/sys/fs/cgroup/memory/cgroup.procs",
			 G_FILE_TEST_EXISTS)) {
		g_test_skip("needs root and the cgroup v1 memory hierarchy");
		return;
	}
	r = run_steps(
		"memory = 128M\ntimeout = 20\n"
		"step.hog = python3;-c;import os, sys, time\\n"
		"pids = []\\n"
		"for i in range(4):\\n"
		"    pid = os.fork()\\n"
		"    if pid == 0:\\n"
		"        b = bytearray(60 << 20)\\n"
		"        time.sleep(2)\\n"
		"        os._exit(0)\\n"
		"    pids.append(pid)\\n"
		"st = [os.waitpid(p, 0)[1] for p in pids]\\n"
		"bad = sum(s != 0 for s in st)\\n"
		"print('killed', bad, st)\\n"
		"sys.exit(1 if bad else 0)\n", 1, &log);
	g_assert_nonnull(strstr(log, "cgroup v1 memory pids\n"));
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_nonnull(strstr(r->reason, "memory limit reached"));
	g_assert_null(strstr(log, "killed 0"));
	/* the step's groups are gone */
	g_assert_true(g_file_get_contents("/proc/self/cgroup", &text, NULL,
					  NULL));
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++)
		if (strstr(lines[i], ":memory:"))
			own = g_strdup(strstr(lines[i], ":memory:") + 8);
	g_assert_nonnull(own);
	{
		g_autofree char *dir = g_build_filename("/sys/fs/cgroup/memory",
							own, NULL);
		g_autofree char *dir2 = g_build_filename("/sys/fs/cgroup/pids",
							 NULL);

		const char *h = strstr(log, "local CI job ");
		g_autofree char *mine = NULL;

		g_assert_nonnull(h);
		mine = g_strdup_printf("patchgate-ci.%.16s.", h + 13);
		g_assert_cmpuint(count_dir(dir, mine), ==, 0);
		g_assert_cmpuint(count_dir(dir2, mine), ==, 0);
	}
}

static void
test_pids_limit(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = NULL;
	const char *p;
	int forked;

	/* at most 100 children, each sleeping 3 s: safe even unbounded */
	r = run_steps(
		"pids = 24\ntimeout = 20\n"
		"step.forks = python3;-c;import os, time\\n"
		"n = 0\\n"
		"for i in range(100):\\n"
		"    try:\\n"
		"        pid = os.fork()\\n"
		"    except OSError as e:\\n"
		"        print('fork failed:', e.strerror)\\n"
		"        break\\n"
		"    if pid == 0:\\n"
		"        time.sleep(3)\\n"
		"        os._exit(0)\\n"
		"    n += 1\\n"
		"print('forked', n, 'pids-test-marker')\n", 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "fork failed: Resource temporarily "
				     "unavailable"));
	p = strstr(log, "forked ");
	g_assert_nonnull(p);
	forked = atoi(p + 7);
	g_test_message("forked %d children under pids = 24", forked);
	g_assert_cmpint(forked, >, 0);
	g_assert_cmpint(forked, <, 24);
	/* the step's children died with its sandbox */
	g_assert_true(gone_soon("python3 -c import os, time"));
}

static void
test_clean_env(void)
{
	g_autofree char *secret = g_strdup_printf("hunter2-%d", getpid());
	g_autofree char *log = NULL, *log_off = NULL;
	g_autoptr(PgateCiResult) r = NULL, off = NULL;
	g_autofree char *want = g_strdup_printf("PATCHGATE_COMMIT=%s\n",
						commits[1]);

	g_setenv("PGATE_TEST_SECRET", secret, TRUE);
	g_setenv("GIT_DIR", "/secret/git", TRUE);
	r = run_steps("commands = env\n", 1, &log);
	off = run_steps("commands = env\nsandbox = off\n", 1, &log_off);
	g_unsetenv("PGATE_TEST_SECRET");
	g_unsetenv("GIT_DIR");

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_SUCCESS);
	for (int i = 0; i < 2; i++) {
		const char *l = i ? log_off : log;

		g_assert_null(strstr(l, secret));
		g_assert_null(strstr(l, "PGATE_TEST_SECRET"));
		g_assert_null(strstr(l, "GIT_DIR"));
		g_assert_nonnull(strstr(l, "PATCHGATE_SERIES=series-1\n"));
		g_assert_nonnull(strstr(l, "PATCHGATE_VERSION=3\n"));
		g_assert_nonnull(strstr(l, "PATCHGATE_BRANCH=main\n"));
		g_assert_nonnull(strstr(l, "PATCHGATE_STEP=env\n"));
		g_assert_nonnull(strstr(l, want));
		g_assert_nonnull(strstr(l, "LANG=C.UTF-8\n"));
	}
	g_assert_nonnull(strstr(log, "HOME=/tmp/work\n"));
}

static void
test_sandbox_error(void)
{
	g_autofree char *m1 = g_build_filename(markers, "m1", NULL);
	g_autofree char *m2 = g_build_filename(markers, "m2", NULL);
	g_autofree char *m3 = g_build_filename(markers, "m3", NULL);
	g_autofree char *s1 = g_strdup_printf(
		"bwrap = /nonexistent/bwrap\ncommands = touch %s\n", m1);
	g_autofree char *s2 = g_strdup_printf(
		"ro_binds = /nonexistent-source-%d:/opt/x\n"
		"commands = touch %s\n", getpid(), m2);
	g_autofree char *s3 = g_strdup_printf(
		"bwrap = /nonexistent/bwrap\nsandbox = off\n"
		"commands = touch %s\n", m3);
	g_autofree char *m4 = g_build_filename(markers, "m4", NULL);
	g_autofree char *s4 = g_strdup_printf(
		"bwrap = /bin/false\ncommands = touch %s\n", m4);
	g_autofree char *log2 = NULL;
	g_autoptr(PgateCiResult) r4 = NULL;
	g_autoptr(PgateCiResult) r1 = run_steps(s1, 1, NULL);
	g_autoptr(PgateCiResult) r2 = run_steps(s2, 1, &log2);
	g_autoptr(PgateCiResult) r3 = NULL;

	g_assert_cmpint(r1->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r1->reason, "step touch could not run: "
					    "sandbox: bwrap "
					    "(\"/nonexistent/bwrap\") not "
					    "found"));
	g_assert_false(g_file_test(m1, G_FILE_TEST_EXISTS));

	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r2->reason, "sandbox: bwrap: Can't find "
					    "source path /nonexistent-source"));
	g_assert_nonnull(strstr(r2->reason, "the step was not run"));
	g_assert_false(g_file_test(m2, G_FILE_TEST_EXISTS));
	g_assert_nonnull(strstr(log2, "== step touch: error"));

	/* a bwrap that fails without a word (killed, or a broken install):
	 * an error that says so, not a crash on the empty output */
	r4 = run_steps(s4, 1, NULL);
	g_assert_cmpint(r4->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r4->reason, "sandbox: bwrap failed before "
					    "running the command; the step "
					    "was not run"));
	g_assert_false(g_file_test(m4, G_FILE_TEST_EXISTS));

	/* control: sandbox = off needs no bwrap, and the step does run */
	r3 = run_steps(s3, 1, NULL);
	g_assert_cmpint(r3->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_true(g_file_test(m3, G_FILE_TEST_EXISTS));
}

static void
test_sandbox_off(void)
{
	g_autofree char *host = NULL, *log_on = NULL, *log_off = NULL;
	g_autofree char *want = NULL;
	g_autoptr(PgateCiResult) on = NULL, off = NULL;
	char buf[256];
	ssize_t n = readlink("/proc/self/ns/net", buf, sizeof buf - 1);

	g_assert_cmpint(n, >, 0);
	buf[n] = '\0';
	host = g_strdup(buf);
	want = g_strdup_printf("\n%s\n", host);
	on = run_steps("commands = readlink /proc/self/ns/net\n", 1, &log_on);
	off = run_steps("sandbox = off\ncommands = readlink "
			"/proc/self/ns/net\n", 1, &log_off);
	g_assert_cmpint(on->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_null(strstr(log_on, want));
	g_assert_nonnull(strstr(log_off, want));
	g_assert_nonnull(strstr(log_off, "== sandbox: OFF"));
}

/* ---- modes and verdicts -------------------------------------------- */

static void
test_per_patch(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, STEPS "mode = patch\n");
	g_autofree char *h = submit(b, 1, 3, -1);
	g_autoptr(PgateCiResult) r = wait_done(b, h, 60);
	g_autofree char *log = read_log(r);
	g_autofree char *abbrev = g_strndup(commits[2], 12);
	g_autofree char *want = g_strdup_printf(
		"patch 2/3 (%s): step test failed (exit 1)", abbrev);
	static const PgateVerdict expect[] = {
		PGATE_VERDICT_SUCCESS, PGATE_VERDICT_FAIL,
		PGATE_VERDICT_SUCCESS,
	};

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, want);
	g_assert_cmpuint(r->commits->len, ==, 3);
	for (guint i = 0; i < 3; i++) {
		const PgateCiCommitResult *c = r->commits->pdata[i];

		g_assert_cmpstr(c->commit, ==, commits[i + 1]);
		g_assert_cmpint(c->verdict, ==, expect[i]);
	}
	g_assert_cmpstr(((PgateCiCommitResult *)r->commits->pdata[1])->reason,
			==, "step test failed (exit 1)");
	g_assert_nonnull(strstr(log, "building p1\n"));
	g_assert_nonnull(strstr(log, "building p2\n"));
	g_assert_nonnull(strstr(log, "building p3\n"));
}

static void
test_series_mode_last_only(void)
{
	g_autofree char *log = NULL;
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, STEPS);
	g_autofree char *h = submit(b, 1, 3, -1);
	g_autoptr(PgateCiResult) r = wait_done(b, h, 60);

	log = read_log(r);
	/* p2 fails, but only the head (p3) runs */
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpuint(r->commits->len, ==, 0);
	g_assert_null(strstr(log, "building p1\n"));
	g_assert_null(strstr(log, "building p2\n"));
	g_assert_nonnull(strstr(log, "building p3\n"));
}

#define DIFF STEPS "differential = on\nwarning_regex = ^warning:\n"

static void
test_differential(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, DIFF);
	g_autofree char *h1 = NULL, *h2 = NULL, *h3 = NULL, *h4 = NULL;
	g_autofree char *h5 = NULL;
	g_autofree char *log1 = NULL, *log2 = NULL, *log3 = NULL;
	g_autofree char *bdir = g_build_filename(state, "ci", "local",
						 "baseline", NULL);
	g_autoptr(PgateCiResult) r1 = NULL, r2 = NULL, r3 = NULL, r4 = NULL;
	g_autoptr(PgateCiResult) r5 = NULL;
	g_autoptr(GDir) d = NULL;
	g_autofree char *cache = NULL, *text = NULL;
	g_autoptr(GError) error = NULL;
	const char *name;
	char *p;

	/* base 1 warning, head 3: WARNING, 2 added */
	h1 = submit(b, 1, 3, 0);
	r1 = wait_done(b, h1, 60);
	log1 = read_log(r1);
	g_assert_cmpint(r1->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpint(r1->warnings_added, ==, 2);
	g_assert_cmpstr(r1->reason, ==, "2 new warning(s) (3, 1 before)");
	g_assert_nonnull(strstr(log1, "running the steps on the base"));
	g_assert_nonnull(strstr(log1, "building base\n"));
	g_assert_nonnull(strstr(log1, "building p3\n"));

	/* the baseline was cached: one file */
	d = g_dir_open(bdir, 0, &error);
	g_assert_no_error(error);
	while ((name = g_dir_read_name(d)) != NULL) {
		g_assert_null(cache);
		cache = g_build_filename(bdir, name, NULL);
	}
	g_assert_nonnull(cache);
	g_assert_true(g_str_has_suffix(cache, ".json"));

	/* the second run on the same base does not run it again */
	h2 = submit(b, 1, 1, 0);
	r2 = wait_done(b, h2, 60);
	log2 = read_log(r2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpint(r2->warnings_added, ==, 1);
	g_assert_nonnull(strstr(log2, "from the cache"));
	g_assert_null(strstr(log2, "building base"));

	/* proof that the cache is what is read: doctor it (1 -> 0) */
	g_file_get_contents(cache, &text, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(text, "\"warnings\": 1\n}"));
	while ((p = strstr(text, "\"warnings\": 1")) != NULL)
		p[12] = '0';
	g_file_set_contents(cache, text, -1, &error);
	g_assert_no_error(error);
	h3 = submit(b, 1, 3, 0);
	r3 = wait_done(b, h3, 60);
	log3 = read_log(r3);
	g_assert_cmpint(r3->warnings_added, ==, 3);
	g_assert_null(strstr(log3, "building base"));

	/* the series breaks the tests, which pass on the base: FAIL */
	h4 = submit(b, 2, 2, 0);
	r4 = wait_done(b, h4, 60);
	g_assert_cmpint(r4->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r4->reason, ==, "step test failed (exit 1)");

	/* they fail on the base too: WARNING, said so */
	h5 = submit(b, 5, 5, 4);
	r5 = wait_done(b, h5, 60);
	g_assert_cmpint(r5->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpstr(r5->reason, ==,
			"step test failed (exit 1); fails on the base too");
	g_assert_cmpint(r5->warnings_added, ==, 0);
}

static void
test_differential_per_patch(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, DIFF "mode = patch\n");
	g_autofree char *h = submit(b, 1, 3, 0);
	g_autoptr(PgateCiResult) r = wait_done(b, h, 60);
	static const PgateVerdict expect[] = {
		PGATE_VERDICT_WARNING, /* 2 vs 1 warnings */
		PGATE_VERDICT_FAIL,    /* test broken vs p1 */
		PGATE_VERDICT_SUCCESS, /* 3 vs 3 and fixed */
	};

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpint(r->warnings_added, ==, 2);
	g_assert_cmpuint(r->commits->len, ==, 3);
	for (guint i = 0; i < 3; i++)
		g_assert_cmpint(((PgateCiCommitResult *)
				 r->commits->pdata[i])->verdict, ==, expect[i]);
}

/* ---- job control --------------------------------------------------- */

static void
test_cancel(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state,
		"jobs = 1\ncommands = sleep 31.4159\n");
	g_autoptr(PgateCiBackend) other = backend(state, STEPS);
	g_autofree char *h1 = submit(b, 1, 1, -1);
	g_autofree char *h2 = NULL, *h3 = NULL;
	g_autoptr(PgateCiResult) r1 = NULL, r2 = NULL, r2b = NULL, r3 = NULL;
	g_autoptr(GError) error = NULL;
	gint64 t0;

	wait_state(b, h1, PGATE_JOB_RUNNING);
	h2 = submit(b, 1, 1, -1);
	r2 = poll_ok(b, h2);
	g_assert_cmpint(r2->state, ==, PGATE_JOB_QUEUED);

	/* a queued job */
	g_assert_true(pgate_ci_cancel(b, h2, &error));
	g_assert_no_error(error);
	r2b = poll_ok(b, h2);
	g_assert_cmpint(r2b->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r2b->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r2b->reason, ==, "cancelled");

	/* a running one, through another backend object */
	g_assert_true(appears_soon("sleep 31.4159"));
	t0 = g_get_monotonic_time();
	g_assert_true(pgate_ci_cancel(other, h1, &error));
	g_assert_no_error(error);
	r1 = wait_done(b, h1, 10);
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
	g_assert_cmpint(r1->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r1->reason, ==, "cancelled");
	g_assert_true(gone_soon("sleep 31.4159"));

	/* cancelling a finished job changes nothing */
	g_assert_true(pgate_ci_cancel(b, h1, &error));
	g_assert_no_error(error);

	/* the slot is free again */
	h3 = submit(b, 1, 1, -1);
	wait_state(b, h3, PGATE_JOB_RUNNING);
	g_assert_true(pgate_ci_cancel(b, h3, &error));
	r3 = poll_ok(b, h3);
	g_assert_cmpint(r3->state, ==, PGATE_JOB_DONE);
}

static void
test_lost(void)
{
	g_autofree char *state = NULL, *handle_file = NULL, *handle = NULL;
	g_autoptr(GError) error = NULL;

	if (g_test_subprocess()) {
		/* the runner: submit, wait until it runs, die */
		g_autoptr(PgateCiBackend) b = backend(
			g_getenv("PGATE_TEST_STATE"),
			"commands = sleep 27.1828\n");
		g_autofree char *h = submit(b, 1, 1, -1);

		wait_state(b, h, PGATE_JOB_RUNNING);
		/* past bwrap's setup: see bwrap.c about its window */
		g_assert_true(appears_soon("sleep 27.1828"));
		g_file_set_contents(g_getenv("PGATE_TEST_HANDLE_FILE"), h, -1,
				    &error);
		g_assert_no_error(error);
		raise(SIGKILL);
		return;
	}
	state = new_state_dir();
	handle_file = g_build_filename(T, "lost-handle", NULL);
	g_setenv("PGATE_TEST_STATE", state, TRUE);
	g_setenv("PGATE_TEST_HANDLE_FILE", handle_file, TRUE);
	g_test_trap_subprocess(NULL, 30 * G_USEC_PER_SEC, 0);
	g_assert_false(g_test_trap_has_passed());
	g_file_get_contents(handle_file, &handle, NULL, &error);
	g_assert_no_error(error);
	/* its sandbox died with it (bwrap --die-with-parent) */
	g_assert_true(gone_soon("sleep 27.1828"));
	{
		g_autofree char *prefix = g_strdup_printf("pgate-ci-%s-",
							  handle);
		g_autoptr(PgateCiBackend) b = NULL;
		g_autoptr(PgateCiResult) r = NULL;

		/* the killed runner left its checkout... */
		g_assert_cmpuint(count_dir(work_root, prefix), ==, 1);
		b = backend(state, STEPS);
		r = poll_ok(b, handle);
		g_assert_cmpint(r->state, ==, PGATE_JOB_LOST);
		g_assert_nonnull(strstr(r->reason, "is gone"));
		/* ...which the next backend removed */
		g_assert_cmpuint(count_dir(work_root, prefix), ==, 0);
	}
}

/* A job run by another process: polled as running from here, cancelled
 * from here through its "cancel" file. */
static void
test_cancel_other_process(void)
{
	g_autofree char *state = new_state_dir();
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	const char *argv[] = { self, "--run-job", state,
			       "commands = sleep 25.1234", NULL };
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateCiBackend) b = backend(state, STEPS);
	g_autoptr(PgateCiResult) running = NULL, r = NULL;
	g_autoptr(GIOChannel) ch = NULL;
	g_autofree char *handle = NULL;
	int out_fd, status;
	GPid pid;

	g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
				 G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
				 NULL, &out_fd, NULL, &error);
	g_assert_no_error(error);
	ch = g_io_channel_unix_new(out_fd);
	g_io_channel_set_close_on_unref(ch, TRUE);
	g_io_channel_read_line(ch, &handle, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(handle);
	g_strstrip(handle);
	g_assert_true(appears_soon("sleep 25.1234"));
	running = poll_ok(b, handle);
	g_assert_cmpint(running->state, ==, PGATE_JOB_RUNNING);

	g_assert_true(pgate_ci_cancel(b, handle, &error));
	g_assert_no_error(error);
	r = wait_done(b, handle, 10);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(r->reason, ==, "cancelled");
	g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
	g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	g_assert_true(gone_soon("sleep 25.1234"));
}

/* --run-job STATE CONFIG: the other process of the test above. */
/* ---- NIPA test scripts (docs/ci-local.md, "NIPA test scripts") ------ */

/* A project of three commits for contrib/nipa-checkpatch.sh: the root
 * (nothing to check: exit 111), one signed off that adds a line with
 * trailing whitespace (a warning: exit 250), one without Signed-off-by
 * (an error: exit 1).  Returns the bare repository; @c gets the ids. */
static char *
make_nipa_project(char *c[3])
{
	g_autofree char *src = g_build_filename(T, "nipa-project", NULL);
	char *bare_nipa = g_build_filename(T, "nipa-project.git", NULL);
	static const struct {
		const char *text, *msg;
	} revs[] = {
		{ "one\n", "base" },
		{ "one\ntwo \n", "add two\n\nSigned-off-by: Tess Ter "
				 "<tess@example.org>" },
		{ "one\ntwo \nthree\n", "add three" },
	};

	g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
	g_free(run_argv((const char *[]){ "git", "init", "-q", "-b", "main",
					  src, NULL }, NULL));
	for (gsize i = 0; i < G_N_ELEMENTS(revs); i++) {
		write_file(src, "a.txt", revs[i].text);
		g_free(run_argv((const char *[]){ "git", "add", "-A", NULL },
				src));
		g_free(run_argv((const char *[]){
			"git", "-c", "user.name=Tess Ter", "-c",
			"user.email=tess@example.org", "commit", "-q", "-m",
			revs[i].msg, NULL }, src));
		c[i] = run_argv((const char *[]){ "git", "rev-parse", "HEAD",
						  NULL }, src);
	}
	g_free(run_argv((const char *[]){ "git", "clone", "-q", "--bare", src,
					  bare_nipa, NULL }, NULL));
	return bare_nipa;
}

static PgateCiResult *
run_nipa(const char *repo, const char *commit, const char *extra,
	 char **out_log)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state, extra);
	g_autoptr(PgateCiJob) job = pgate_ci_job_new();
	g_autoptr(GError) error = NULL;
	g_autofree char *h = NULL;
	PgateCiResult *r;

	job->job = g_strdup("checkpatch");
	job->repo_path = g_strdup(repo);
	g_ptr_array_add(job->commits, g_strdup(commit));
	job->series_id = g_strdup("series-1");
	job->version = 1;
	job->branch = g_strdup("main");
	job->msgid = g_strdup("<cover@example.org>");
	job->trigger_id = g_strdup("series-1.nipa");
	h = pgate_ci_submit(b, job, &error);
	g_assert_no_error(error);
	r = wait_done(b, h, 60);
	g_assert_cmpint(r->state, ==, PGATE_JOB_DONE);
	*out_log = read_log(r);
	if (g_test_verbose())
		g_test_message("%s", *out_log);
	return r;
}

/* contrib/nipa-checkpatch.sh, a script in NIPA's shape (it writes to
 * $DESC_FD, exits 250 for a warning and 111 for nothing to do, runs git
 * in its tree), run unchanged in the sandbox. */
static void
test_nipa(void)
{
	const char *src = g_getenv("PGATE_SRCDIR");
	char *c[3] = { NULL, NULL, NULL };
	g_autofree char *repo = NULL, *cfg = NULL, *cfg_off = NULL;
	g_autofree char *cfg_nosandbox = NULL;
	g_autofree char *log_w = NULL, *log_f = NULL, *log_s = NULL;
	g_autofree char *log_off = NULL, *log_ns = NULL;
	g_autoptr(PgateCiResult) warn = NULL, fail = NULL, skip = NULL;
	g_autoptr(PgateCiResult) off = NULL, ns = NULL;

	if (src == NULL) {
		g_test_skip("PGATE_SRCDIR is not set");
		return;
	}
	repo = make_nipa_project(c);
	cfg = g_strdup_printf("nipa = on\nro_binds = %s/contrib:/opt/nipa\n"
			      "commands = checkpatch: "
			      "/opt/nipa/nipa-checkpatch.sh\n", src);
	warn = run_nipa(repo, c[1], cfg, &log_w);
	g_assert_cmpint(warn->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpstr(warn->reason, ==, "total: 0 errors, 1 warnings");
	g_assert_nonnull(strstr(log_w, "== step checkpatch: passed (exit 250)"
				       ", a warning (nipa)"));
	g_assert_nonnull(strstr(log_w, "WARNING: trailing whitespace at "
				       "a.txt:2\n"));

	fail = run_nipa(repo, c[2], cfg, &log_f);
	g_assert_cmpint(fail->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(fail->reason, ==, "step checkpatch failed (exit 1): "
			"total: 1 errors, 0 warnings");

	skip = run_nipa(repo, c[0], cfg, &log_s);
	g_assert_cmpint(skip->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_cmpstr(skip->reason, ==, "no parent commit: nothing to check");
	g_assert_nonnull(strstr(log_s, "skipped (nipa)"));

	/* the same without the sandbox */
	cfg_nosandbox = g_strdup_printf("nipa = on\nsandbox = off\n"
					"commands = checkpatch: sh "
					"%s/contrib/nipa-checkpatch.sh\n", src);
	ns = run_nipa(repo, c[1], cfg_nosandbox, &log_ns);
	g_assert_cmpint(ns->verdict, ==, PGATE_VERDICT_WARNING);
	g_assert_cmpstr(ns->reason, ==, "total: 0 errors, 1 warnings");

	/* nipa = off: 250 is a failure like any other, and no DESC_FD */
	cfg_off = g_strdup_printf("ro_binds = %s/contrib:/opt/nipa\n"
				  "commands = checkpatch: "
				  "/opt/nipa/nipa-checkpatch.sh\n", src);
	off = run_nipa(repo, c[0], cfg_off, &log_off);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_nonnull(strstr(off->reason, "(exit 111)"));
	g_assert_nonnull(strstr(log_off, "desc: "));
	for (int i = 0; i < 3; i++)
		g_free(c[i]);
}

static int
run_job_helper(const char *state, const char *config)
{
	g_autoptr(PgateCiBackend) b = backend(state, config);
	g_autofree char *h = submit(b, 1, 1, -1);
	g_autoptr(PgateCiResult) r = NULL;

	printf("%s\n", h);
	fflush(stdout);
	r = wait_done(b, h, 60);
	return r->state == PGATE_JOB_DONE ? 0 : 1;
}

static void
test_restart(void)
{
	g_autofree char *state = new_state_dir();
	g_autofree char *h = NULL, *h2 = NULL;
	PgateCiBackend *b = backend(state, STEPS);
	g_autoptr(PgateCiResult) r = NULL, again = NULL, lost = NULL;

	/* a finished job survives its backend */
	h = submit(b, 2, 2, -1);
	r = wait_done(b, h, 60);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	pgate_ci_backend_free(b);
	b = backend(state, STEPS);
	again = poll_ok(b, h);
	g_assert_cmpint(again->state, ==, PGATE_JOB_DONE);
	g_assert_cmpint(again->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_cmpstr(again->reason, ==, r->reason);
	g_assert_cmpstr(again->summary, ==, r->summary);
	pgate_ci_backend_free(b);

	/* a running one does not: it is killed and lost */
	b = backend(state, "commands = sleep 26.535\n");
	h2 = submit(b, 1, 1, -1);
	wait_state(b, h2, PGATE_JOB_RUNNING);
	g_assert_true(appears_soon("sleep 26.535"));
	pgate_ci_backend_free(b);
	g_assert_true(gone_soon("sleep 26.535"));
	b = backend(state, STEPS);
	lost = poll_ok(b, h2);
	g_assert_cmpint(lost->state, ==, PGATE_JOB_LOST);
	g_assert_nonnull(strstr(lost->reason, "shut down"));
	pgate_ci_backend_free(b);
}

static void
test_parallel(void)
{
	g_autofree char *state = new_state_dir();
	g_autoptr(PgateCiBackend) b = backend(state,
		"jobs = 2\ncommands = sleep 1\n");
	char *h[4];
	guint max_running = 0, done = 0;
	gint64 t0 = g_get_monotonic_time();

	for (int i = 0; i < 4; i++)
		h[i] = submit(b, 1, 1, -1);
	while (done < 4) {
		guint running = 0;

		done = 0;
		for (int i = 0; i < 4; i++) {
			g_autoptr(PgateCiResult) r = poll_ok(b, h[i]);

			running += r->state == PGATE_JOB_RUNNING;
			if (r->state == PGATE_JOB_DONE) {
				g_assert_cmpint(r->verdict, ==,
						PGATE_VERDICT_SUCCESS);
				done++;
			}
			g_assert_cmpint(r->state, !=, PGATE_JOB_LOST);
		}
		max_running = MAX(max_running, running);
		g_assert_cmpint(g_get_monotonic_time() - t0, <,
				30 * G_USEC_PER_SEC);
		g_usleep(20000);
	}
	g_test_message("4 jobs of 1 s with jobs = 2: %.2f s, at most %u "
		       "running", (g_get_monotonic_time() - t0) / 1e6,
		       max_running);
	g_assert_cmpuint(max_running, ==, 2);
	g_assert_cmpint(g_get_monotonic_time() - t0, >=, 2 * G_USEC_PER_SEC);
	for (int i = 0; i < 4; i++)
		g_free(h[i]);
}

static void
test_bare_tree_only(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_steps("commands = ls -a\n", 3, &log);
	g_autofree char *index = g_build_filename(bare, "index", NULL);

	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "\nbuild.sh\n"));
	g_assert_nonnull(strstr(log, "\nVERSION\n"));
	g_assert_null(strstr(log, ".git"));
	/* the bare repository did not grow an index */
	g_assert_false(g_file_test(index, G_FILE_TEST_EXISTS));
}

/* The whole path as an unprivileged user (the runner itself is not root:
 * no uid to drop, no cgroups): as root, this test's child becomes nobody
 * first. */
static void
test_unprivileged(void)
{
	g_autofree char *state = NULL, *repo = NULL;

	if (g_test_subprocess()) {
		g_autofree char *log = NULL;
		g_autoptr(PgateCiResult) r = NULL;
		g_autoptr(PgateCiBackend) b = NULL;
		g_autofree char *h = NULL;
		g_autoptr(PgateCiJob) job = NULL;
		g_autoptr(GError) error = NULL;

		if (geteuid() == 0) {
			g_assert_cmpint(setgroups(0, NULL), ==, 0);
			g_assert_cmpint(setresgid(NOBODY, NOBODY, NOBODY), ==,
					0);
			g_assert_cmpint(setresuid(NOBODY, NOBODY, NOBODY), ==,
					0);
			/* for LeakSanitizer, which ptraces its own threads */
			prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
			/* libgit2 reads ~/.gitconfig: a home of its own */
			g_setenv("HOME", T, TRUE);
		}
		b = backend(g_getenv("PGATE_TEST_STATE"),
			    "memory = 256M\npids = 64\n"
			    "commands = uid: id -u;build: sh build.sh;"
			    "ro: sh -c '! touch /usr/x 2>/dev/null'\n");
		job = job_for(g_getenv("PGATE_TEST_REPO"), 1, 1, -1);
		h = pgate_ci_submit(b, job, &error);
		g_assert_no_error(error);
		r = wait_done(b, h, 60);
		log = read_log(r);
		g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
		g_assert_nonnull(strstr(log, "\n65534\n== step uid: passed"));
		g_assert_nonnull(strstr(log, "building p1\n"));
		g_assert_nonnull(strstr(log, "not running as root"));
		return;
	}
	if (geteuid() != 0) {
		g_test_skip("already unprivileged: every other test is this "
			    "path");
		return;
	}
	state = new_state_dir();
	g_assert_cmpint(chown(state, NOBODY, NOBODY), ==, 0);
	/* libgit2 opens only repositories of the user running it */
	repo = g_build_filename(T, "nobody.git", NULL);
	g_free(run_argv((const char *[]){ "git", "clone", "-q", "--bare", bare,
					  repo, NULL }, NULL));
	g_free(run_argv((const char *[]){ "chown", "-R", "65534:65534", repo,
					  NULL }, NULL));
	g_setenv("PGATE_TEST_STATE", state, TRUE);
	g_setenv("PGATE_TEST_REPO", repo, TRUE);
	g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, 0);
	g_test_trap_assert_passed();
}

/* ---- issue #25: what a step can see, reach and fill ------------------ */

/* The sandbox's file system is an allow-list: nothing of the host but
 * /usr, a few files of /etc, a new /dev, /proc and /tmp, and the
 * checkout.  Each path below exists on the host (or is made here). */
static void
test_allow_list(void)
{
	g_autofree char *log = NULL, *log_off = NULL;
	g_autoptr(PgateCiResult) r = NULL, off = NULL;
	const char *steps =
		"step.look = sh;-c;"
		"for p in /var /var/tmp /run /home /root /srv /opt /mnt /boot "
		"/sys /etc/shadow /etc/ssh /etc/patchgate /work\\ndo\\n"
		"if test -e $p\\nthen echo \"visible: $p\"\\nfi\\ndone\\n"
		"echo \"tmp: $(ls -A /tmp | tr '\\n' ' ')\"\\n"
		"cc --version >/dev/null && echo 'cc works'\\n"
		"id -un\\ntouch /etc/x 2>/dev/null || echo 'etc read-only'\\n"
		"touch /x 2>/dev/null || echo 'root read-only'\\n"
		"touch /dev/x 2>/dev/null || echo 'dev read-only'\\n"
		"dd if=/dev/zero of=/dev/shm/big bs=1M count=80 2>/dev/null\\n"
		"echo \"shm: $(du -m /dev/shm/big | cut -f1)\"\n";

	g_assert_cmpint(g_mkdir_with_parents("/var/tmp", 01777), ==, 0);
	r = run_steps(steps, 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_null(strstr(log, "\nvisible: /"));
	g_assert_nonnull(strstr(log, "tmp: work \n"));
	g_assert_nonnull(strstr(log, "cc works\n"));
	g_assert_nonnull(strstr(log, "etc read-only\n"));
	g_assert_nonnull(strstr(log, "root read-only\n"));
	g_assert_nonnull(strstr(log, "dev read-only\n"));
	g_assert_nonnull(strstr(log, "shm: 64\n"));
	/* control: the host's /var/tmp is there without the sandbox */
	off = run_steps("sandbox = off\nstep.look = sh;-c;test -e /var/tmp "
			"&& echo 'visible: /var/tmp'\n", 1, &log_off);
	g_assert_nonnull(strstr(log_off, "visible: /var/tmp\n"));
}

/* A Unix-domain socket of the host, open to everyone, in a place the
 * old sandbox showed (/var/tmp): connect() must fail.  The control
 * without the sandbox connects. */
static void
test_host_socket(void)
{
	g_autofree char *path = g_strdup_printf("/var/tmp/pgate-sock-%d",
						(int)getpid());
	g_autofree char *steps = g_strdup_printf(
		"step.connect = python3;-c;import socket\\n"
		"s = socket.socket(socket.AF_UNIX)\\n"
		"s.connect('%s')\\nprint('connected')\n", path);
	g_autofree char *steps_off = g_strconcat(steps, "sandbox = off\n",
						 NULL);
	g_autofree char *log = NULL, *log_off = NULL;
	g_autoptr(PgateCiResult) r = NULL, off = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	g_assert_cmpint(g_mkdir_with_parents("/var/tmp", 01777), ==, 0);
	g_assert_cmpint(s, >=, 0);
	g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
	unlink(path);
	g_assert_cmpint(bind(s, (struct sockaddr *)&sa, sizeof sa), ==, 0);
	g_assert_cmpint(chmod(path, 0777), ==, 0);
	g_assert_cmpint(listen(s, 8), ==, 0);
	r = run_steps(steps, 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_null(strstr(log, "connected\n"));
	g_assert_nonnull(strstr(log, "FileNotFoundError"));
	g_assert_cmpint(accept(s, NULL, NULL), <, 0);
	off = run_steps(steps_off, 1, &log_off);
	g_assert_cmpint(off->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log_off, "connected\n"));
	close(s);
	unlink(path);
}

/* A protected path (common/secret.c: the state directory, the
 * configuration, a secret's file) inside a tree the sandbox binds is
 * hidden: under /usr here (as root), or under an ro_binds source.  An
 * ro_binds source inside a protected path is refused.  The control: the
 * same file unprotected is read. */
static void
test_protected_paths(void)
{
	g_autofree char *dir = g_strdup_printf("%s/prot-%d", T, (int)getpid());
	g_autofree char *sec = g_build_filename(dir, "secret", NULL);
	g_autofree char *token = g_build_filename(sec, "token", NULL);
	g_autofree char *steps = NULL, *steps_in = NULL;
	g_autofree char *log = NULL, *log2 = NULL, *log3 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL, r3 = NULL;

	g_assert_cmpint(g_mkdir_with_parents(sec, 0755), ==, 0);
	write_file(sec, "token", "tok-visible-42\n");
	steps = g_strdup_printf("ro_binds = %s:/opt/x\n"
				"commands = cat /opt/x/secret/token\n", dir);
	/* control: not protected, it is read */
	pgate_secret_forget_all();
	r = run_steps(steps, 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "tok-visible-42"));
	/* protected: the directory is an empty tmpfs in the sandbox */
	pgate_secret_add_path(sec);
	r2 = run_steps(steps, 1, &log2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_null(strstr(log2, "tok-visible-42"));
	g_assert_nonnull(strstr(log2, "No such file or directory"));
	/* the file itself protected: /dev/null in its place */
	pgate_secret_forget_all();
	pgate_secret_add_path(token);
	g_clear_pointer(&r2, pgate_ci_result_free);
	g_clear_pointer(&log2, g_free);
	r2 = run_steps(steps, 1, &log2);
	g_assert_null(strstr(log2, "tok-visible-42"));
	/* a bind from inside a protected directory: refused */
	pgate_secret_forget_all();
	pgate_secret_add_path(dir);
	steps_in = g_strdup_printf("ro_binds = %s:/opt/x\n"
				   "commands = true\n", sec);
	r3 = run_steps(steps_in, 1, &log3);
	g_assert_cmpint(r3->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r3->reason, "would show the step"));
	pgate_secret_forget_all();
	if (geteuid() == 0) {
		/* under /usr, which the sandbox binds whole */
		g_autofree char *usr = g_strdup_printf("/usr/share/pgate-prot-%d",
						       (int)getpid());
		g_autofree char *s4 = g_strdup_printf(
			"commands = cat %s/token\n", usr);
		g_autofree char *log4 = NULL;
		g_autoptr(PgateCiResult) r4 = NULL;

		g_assert_cmpint(g_mkdir_with_parents(usr, 0755), ==, 0);
		write_file(usr, "token", "tok-usr-42\n");
		pgate_secret_add_path(usr);
		r4 = run_steps(s4, 1, &log4);
		g_assert_cmpint(r4->verdict, ==, PGATE_VERDICT_FAIL);
		g_assert_null(strstr(log4, "tok-usr-42"));
		pgate_secret_forget_all();
		g_free(run_argv((const char *[]){ "rm", "-rf", usr, NULL },
				NULL));
	}
}

/* A secret the step prints (it learnt it somehow) is "[redacted]" in the
 * log, the summary and the reason kept and reported. */
static void
test_redacted(void)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = NULL;

	pgate_secret_add("pw-SECRET-1234");
	pgate_secret_add("tok-SECRET-5678");
	r = run_steps("step.leak = sh;-c;echo 'token: tok-SECRET-5678'\\n"
		      "echo pw-SECRET-1234 >&2\\nexit 3\n", 1, &log);
	pgate_secret_forget_all();
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_FAIL);
	g_assert_null(strstr(log, "SECRET"));
	g_assert_nonnull(strstr(log, "token: [redacted]\n"));
	g_assert_nonnull(strstr(log, "\n[redacted]\n"));
	g_assert_null(strstr(r->summary, "SECRET"));
	g_assert_nonnull(strstr(r->summary, "token: [redacted]"));
}

/* The disk limit: the checkout and /tmp together.  Over it, the step ends
 * with the verdict error and a clear reason, whether it is still running
 * (the watchdog kills it) or exited already (the last measurement). */
static void
test_disk_limit(void)
{
	g_autofree char *log = NULL, *log2 = NULL, *log3 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL, r3 = NULL;
	gint64 t0;

	r = run_steps("disk = 20M\n"
		      "step.small = dd;if=/dev/zero;of=small;bs=1M;count=5\n"
		      "step.fill = dd;if=/dev/zero;of=big;bs=1M;count=40\n",
		      1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_cmpstr(r->reason, ==, "step fill ended: disk limit 20 MiB "
			"reached (the checkout and /tmp together; disk in "
			"docs/ci-local.md)");
	/* in /tmp, and a step that goes on running is killed */
	t0 = g_get_monotonic_time();
	r2 = run_steps("disk = 20M\n"
		       "step.fill = sh;-c;dd if=/dev/zero of=/tmp/big bs=1M "
		       "count=40; sleep 20\n", 1, &log2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r2->reason, "disk limit 20 MiB reached"));
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 15 * G_USEC_PER_SEC);
	/* a flood of empty files counts too (a block each) */
	r3 = run_steps("disk = 20M\n"
		       "step.files = sh;-c;mkdir f && cd f && "
		       "seq 1 6000 | xargs touch\n", 1, &log3);
	g_assert_cmpint(r3->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r3->reason, "disk limit 20 MiB reached"));
}

/* ---- issue #41, finding 12: what a step unlinks but keeps ------------ */

/* hold.py MODE MIB SECONDS: writes MIB MiB into files of the work area
 * that have no name left, keeps them for SECONDS and exits 0.
 *   fd          three files, each opened, unlinked, filled; descriptors
 *               kept
 *   procs       the same in three child processes (the parent waits)
 *   tmpfile     one O_TMPFILE file in /tmp (never had a name)
 *   mmap        one file, unlinked, filled, mapped (one page), its
 *               descriptor closed: only the mapping keeps it
 *   undumpable  as fd, after prctl(PR_SET_DUMPABLE, 0), which makes the
 *               process's /proc/PID/fd root's */
static const char hold_py[] =
	"import ctypes, os, sys, time\n"
	"mode, mib, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"libc.mmap.restype = ctypes.c_void_p\n"
	"libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,\n"
	"                      ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
	"def fill(fd, n):\n"
	"    for _ in range(n):\n"
	"        os.write(fd, b'\\1' * (1 << 20))\n"
	"def unlinked(name, n):\n"
	"    fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o600)\n"
	"    os.unlink(name)\n"
	"    fill(fd, n)\n"
	"    return fd\n"
	"keep = []\n"
	"if mode == 'undumpable':\n"
	"    assert libc.prctl(4, 0, 0, 0, 0) == 0\n"
	"if mode in ('fd', 'undumpable'):\n"
	"    keep = [unlinked('held%d' % i, mib // 3 + 1) for i in range(3)]\n"
	"elif mode == 'procs':\n"
	"    kids = []\n"
	"    for i in range(3):\n"
	"        pid = os.fork()\n"
	"        if pid == 0:\n"
	"            keep = unlinked('/tmp/kid%d' % i, mib // 3 + 1)\n"
	"            time.sleep(secs)\n"
	"            os._exit(0)\n"
	"        kids.append(pid)\n"
	"elif mode == 'tmpfile':\n"
	"    keep = os.open('/tmp', os.O_TMPFILE | os.O_RDWR, 0o600)\n"
	"    fill(keep, mib)\n"
	"elif mode == 'mmap':\n"
	"    fd = unlinked('mapped', mib)\n"
	"    keep = libc.mmap(None, 4096, 1, 1, fd, 0)\n"
	"    assert keep not in (None, ctypes.c_void_p(-1).value)\n"
	"    os.close(fd)\n"
	"print('holding', mode, mib, 'MiB', flush=True)\n"
	"if mode == 'procs':\n"
	"    for pid in kids:\n"
	"        os.waitpid(pid, 0)\n"
	"else:\n"
	"    time.sleep(secs)\n";

/* The directory of hold.py (made by the test's first process, readable
 * by nobody). (transfer full) */
static char *
hold_dir(void)
{
	char *dir = g_build_filename(T, "hold", NULL);

	if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
		g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
		write_file(dir, "hold.py", hold_py);
	}
	return dir;
}

/* A step that holds MIB MiB in MODE for SECONDS, sandboxed (hold.py bound
 * at /opt/hold) or not. */
static PgateCiResult *
run_hold(const char *limits, const char *mode, int mib, int secs,
	 gboolean sandbox, char **out_log)
{
	g_autofree char *dir = hold_dir();
	g_autofree char *cfg = NULL;

	if (sandbox)
		cfg = g_strdup_printf("%s\nro_binds = %s:/opt/hold\n"
				      "step.hold = python3;/opt/hold/hold.py;"
				      "%s;%d;%d\n", limits, dir, mode, mib,
				      secs);
	else
		cfg = g_strdup_printf("%s\nsandbox = off\n"
				      "step.hold = python3;%s/hold.py;%s;%d;"
				      "%d\n", limits, dir, mode, mib, secs);
	return run_steps(cfg, 1, out_log);
}

/* Over the limit with files that have no name: killed (it would hold
 * them 20 s), the verdict error with the usual reason, and the log says
 * what was counted.  (A failure's log goes to stderr, which a trapped
 * subprocess's report shows, unlike g_test_message.) */
static void
assert_held_over(const char *limits, const char *mode, int mib,
		 gboolean sandbox, const char *log_has)
{
	g_autofree char *log = NULL;
	gint64 t0 = g_get_monotonic_time();
	g_autoptr(PgateCiResult) r = run_hold(limits, mode, mib, 20, sandbox,
					      &log);

	if (r->verdict != PGATE_VERDICT_ERROR)
		g_printerr("%s: %s\n%s", mode, r->reason, log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_cmpstr(r->reason, ==, "step hold ended: disk limit 20 MiB "
			"reached (the checkout and /tmp together; disk in "
			"docs/ci-local.md)");
	/* (it may be killed before it says "holding") */
	if (strstr(log, log_has) == NULL)
		g_printerr("%s: %s\n", mode, log);
	g_assert_nonnull(strstr(log, log_has));
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 15 * G_USEC_PER_SEC);
}

static void
assert_held_passes(const char *limits, const char *mode, gboolean sandbox)
{
	g_autofree char *log = NULL;
	g_autoptr(PgateCiResult) r = run_hold(limits, mode, 30, 2, sandbox,
					      &log);

	if (r->verdict != PGATE_VERDICT_SUCCESS)
		g_printerr("%s: %s\n%s", mode, r->reason, log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);
	g_assert_nonnull(strstr(log, "holding "));
}

/* As root the sizes are exact: 30 MiB of files without a name against
 * 20 MiB, however they are held; the controls, with the limit raised,
 * pass (the step did hold them, and nothing else counted).  When the
 * suite itself is not root this is the unprivileged path, where a
 * mapping's size cannot be read (see disk-unlinked-unprivileged). */
static void
test_disk_unlinked(void)
{
	static const char *const modes[] = {
		"fd", "procs", "tmpfile", "undumpable",
	};
	const char *lim = "disk = 20M\nfsize = 64M";

	for (gsize i = 0; i < G_N_ELEMENTS(modes); i++)
		assert_held_over(lim, modes[i], 30, TRUE, "deleted but still "
				 "open or mapped\n");
	assert_held_over(lim, "mmap", 30, TRUE, geteuid() == 0 ?
			 "MiB in 1 file(s) deleted but still open or mapped\n"
			 : "counted at fsize 64 MiB each)\n");
	/* sandbox = off: the step's process group */
	assert_held_over(lim, "fd", 30, FALSE, "deleted but still open");
	assert_held_passes("disk = 1G\nfsize = 64M", "fd", TRUE);
	assert_held_passes("disk = 1G\nfsize = 64M", "mmap", TRUE);
	assert_held_passes("disk = 1G\nfsize = 64M", "fd", FALSE);
}

/* What is counted once, or not at all: a named file of the work area
 * that two processes hold open is counted once (by /proc or the walk,
 * not both: 2 x 15 MiB would pass 20 MiB), and a file of an ro_binds
 * tree below /tmp that the step holds is not the work area's. */
static void
test_disk_open_files(void)
{
	g_autofree char *tool = g_build_filename(T, "disk-tool", NULL);
	g_autofree char *big = g_build_filename(tool, "big", NULL);
	g_autofree char *cfg = NULL, *log = NULL, *log2 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;
	g_autoptr(GError) error = NULL;
	gchar *data = g_malloc0(30 << 20);

	r = run_steps("disk = 20M\n"
		      "step.named = sh;-c;dd if=/dev/zero of=f bs=1M count=15 "
		      "2>/dev/null && exec 3<f 4>>f && (exec 5<f\\; sleep 3) & "
		      "sleep 3\\; wait\n", 1, &log);
	if (r->verdict != PGATE_VERDICT_SUCCESS)
		g_printerr("%s\n", log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_SUCCESS);

	g_assert_cmpint(g_mkdir(tool, 0755), ==, 0);
	g_file_set_contents(big, data, 30 << 20, &error);
	g_free(data);
	g_assert_no_error(error);
	g_assert_cmpint(g_chmod(big, 0644), ==, 0);
	cfg = g_strdup_printf("disk = 20M\nro_binds = %s:/tmp/tool\n"
			      "step.tool = sh;-c;exec 3</tmp/tool/big\\; "
			      "sleep 3\n", tool);
	r2 = run_steps(cfg, 1, &log2);
	if (r2->verdict != PGATE_VERDICT_SUCCESS)
		g_printerr("%s\n", log2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_SUCCESS);
}

/* nipa's $DESC_FD is a file without a name that patchgate keeps open
 * for the step: written past the limit and closed by the step, it is
 * still counted. */
static void
test_disk_desc_fd(void)
{
	g_autofree char *log = NULL, *log2 = NULL;
	g_autoptr(PgateCiResult) r = NULL, r2 = NULL;

	r = run_steps("nipa = on\ndisk = 20M\n"
		      "step.desc = sh;-c;dd if=/dev/zero bs=1M count=30 "
		      ">&4 2>/dev/null\\; exec 4>&-\\; sleep 20\n", 1, &log);
	g_assert_cmpint(r->verdict, ==, PGATE_VERDICT_ERROR);
	g_assert_nonnull(strstr(r->reason, "disk limit 20 MiB reached"));
	r2 = run_steps("nipa = on\ndisk = 1G\n"
		       "step.desc = sh;-c;dd if=/dev/zero bs=1M count=30 "
		       ">&4 2>/dev/null\\; exec 4>&-\\; sleep 1\n", 1, &log2);
	g_assert_cmpint(r2->verdict, ==, PGATE_VERDICT_SUCCESS);
}

/* Not root (the shipped unit's User=patchgate): the step's processes are
 * still read, also one that made itself undumpable; a mapped file
 * without a name or a descriptor, whose size cannot be read without
 * CAP_SYS_ADMIN, counts as fsize.  As root, this test's child becomes
 * nobody first. */
static void
test_disk_unlinked_unprivileged(void)
{
	g_autofree char *home = NULL, *repo = NULL;

	if (g_test_subprocess()) {
		const char *lim = "disk = 20M\nfsize = 64M";

		if (geteuid() == 0) {
			g_assert_cmpint(setgroups(0, NULL), ==, 0);
			g_assert_cmpint(setresgid(NOBODY, NOBODY, NOBODY), ==,
					0);
			g_assert_cmpint(setresuid(NOBODY, NOBODY, NOBODY), ==,
					0);
			prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
			g_setenv("HOME", T, TRUE);
		}
		/* state directories and hold.py in a directory of its
		 * own, the project a clone of its own (libgit2 opens only
		 * the user's repositories) */
		g_free(T);
		T = g_strdup(g_getenv("PGATE_TEST_HOME"));
		g_free(bare);
		bare = g_build_filename(T, "project.git", NULL);
		assert_held_over(lim, "fd", 30, TRUE, "deleted but still "
				 "open");
		assert_held_over(lim, "undumpable", 30, TRUE, "deleted but "
				 "still open");
		/* 1 MiB, but mapped without a descriptor: of a size that
		 * cannot be read */
		assert_held_over(lim, "mmap", 1, TRUE, "1 file(s) deleted but "
				 "still open or mapped (1 mapped, of a size "
				 "patchgate cannot read when not root: counted "
				 "at fsize 64 MiB each)\n");
		assert_held_passes("disk = 1G\nfsize = 64M", "mmap", TRUE);
		assert_held_passes("disk = 1G\nfsize = 64M", "fd", TRUE);
			return;
	}
	if (geteuid() != 0) {
		g_test_skip("already unprivileged: disk-unlinked is this path");
		return;
	}
	home = g_build_filename(T, "disk-nobody", NULL);
	repo = g_build_filename(home, "project.git", NULL);
	g_assert_cmpint(g_mkdir(home, 0755), ==, 0);
	g_free(run_argv((const char *[]){ "git", "clone", "-q", "--bare", bare,
					  repo, NULL }, NULL));
	g_free(run_argv((const char *[]){ "chown", "-R", "65534:65534", home,
					  NULL }, NULL));
	g_setenv("PGATE_TEST_HOME", home, TRUE);
	g_test_trap_subprocess(NULL, 120 * G_USEC_PER_SEC, 0);
	g_test_trap_assert_passed();
}

int
main(int argc, char **argv)
{
	int rc;

	if (argc == 4 && g_str_equal(argv[1], "--run-job")) {
		T = g_strdup(g_getenv("PGATE_TEST_T"));
		bare = g_strdup(g_getenv("PGATE_TEST_BARE"));
		work_root = g_build_filename(T, "work", NULL);
		for (int i = 0; i < 6; i++) {
			g_autofree char *k = g_strdup_printf("PGATE_TEST_C%d",
							     i);

			commits[i] = g_strdup(g_getenv(k));
		}
		rc = run_job_helper(argv[2], argv[3]);
		g_free(T);
		g_free(bare);
		g_free(work_root);
		for (int i = 0; i < 6; i++)
			g_free(commits[i]);
		return rc;
	}
	g_test_init(&argc, &argv, NULL);
	if (g_test_subprocess()) {
		T = g_strdup(g_getenv("PGATE_TEST_T"));
		bare = g_strdup(g_getenv("PGATE_TEST_BARE"));
		for (int i = 0; i < 6; i++) {
			g_autofree char *k = g_strdup_printf("PGATE_TEST_C%d",
							     i);

			commits[i] = g_strdup(g_getenv(k));
		}
	} else {
		T = g_dir_make_tmp("pgate-ci-local-XXXXXX", NULL);
		g_assert_nonnull(T);
		g_assert_cmpint(g_chmod(T, 0755), ==, 0);
		make_project();
		g_setenv("PGATE_TEST_T", T, TRUE);
		g_setenv("PGATE_TEST_BARE", bare, TRUE);
		for (int i = 0; i < 6; i++) {
			g_autofree char *k = g_strdup_printf("PGATE_TEST_C%d",
							     i);

			g_setenv(k, commits[i], TRUE);
		}
	}
	work_root = g_build_filename(T, "work", NULL);
	markers = g_build_filename(T, "markers", NULL);
	if (!g_test_subprocess()) {
		g_assert_cmpint(g_mkdir(work_root, 0755), ==, 0);
		g_assert_cmpint(g_chmod(work_root, 01777), ==, 0);
		g_assert_cmpint(g_mkdir(markers, 0755), ==, 0);
		g_assert_cmpint(g_chmod(markers, 0777), ==, 0);
	}

	g_test_add_func("/ci/local/config/errors", test_config_errors);
	g_test_add_func("/ci/local/config/example", test_config_example);
	g_test_add_func("/ci/local/submit/invalid", test_submit_invalid);
	g_test_add_func("/ci/local/success", test_success);
	g_test_add_func("/ci/local/fail", test_fail);
	g_test_add_func("/ci/local/log-url", test_log_url);
	g_test_add_func("/ci/local/summary/bounded", test_summary_bounded);
	g_test_add_func("/ci/local/timeout", test_timeout);
	g_test_add_func("/ci/local/output-cap", test_output_cap);
	g_test_add_func("/ci/local/background", test_background);
	g_test_add_func("/ci/local/sandbox/no-network", test_no_network);
	g_test_add_func("/ci/local/sandbox/read-only-root",
			test_read_only_root);
	g_test_add_func("/ci/local/sandbox/private-tmp", test_private_tmp);
	g_test_add_func("/ci/local/sandbox/drop-uid", test_drop_uid);
	g_test_add_func("/ci/local/sandbox/memory-limit", test_memory_limit);
	g_test_add_func("/ci/local/sandbox/fsize-limit", test_fsize_limit);
	g_test_add_func("/ci/local/sandbox/memory-cgroup", test_memory_cgroup);
	g_test_add_func("/ci/local/sandbox/pids-limit", test_pids_limit);
	g_test_add_func("/ci/local/sandbox/clean-env", test_clean_env);
	g_test_add_func("/ci/local/sandbox/error", test_sandbox_error);
	g_test_add_func("/ci/local/sandbox/off", test_sandbox_off);
	g_test_add_func("/ci/local/sandbox/unprivileged", test_unprivileged);
	g_test_add_func("/ci/local/sandbox/allow-list", test_allow_list);
	g_test_add_func("/ci/local/sandbox/host-socket", test_host_socket);
	g_test_add_func("/ci/local/sandbox/protected-paths",
			test_protected_paths);
	g_test_add_func("/ci/local/sandbox/redacted", test_redacted);
	g_test_add_func("/ci/local/sandbox/disk-limit", test_disk_limit);
	g_test_add_func("/ci/local/sandbox/disk-unlinked", test_disk_unlinked);
	g_test_add_func("/ci/local/sandbox/disk-unlinked-unprivileged",
			test_disk_unlinked_unprivileged);
	g_test_add_func("/ci/local/sandbox/disk-desc-fd", test_disk_desc_fd);
	g_test_add_func("/ci/local/sandbox/disk-open-files",
			test_disk_open_files);
	g_test_add_func("/ci/local/checkout/bare-tree-only",
			test_bare_tree_only);
	g_test_add_func("/ci/local/mode/per-patch", test_per_patch);
	g_test_add_func("/ci/local/mode/series-last-only",
			test_series_mode_last_only);
	g_test_add_func("/ci/local/differential", test_differential);
	g_test_add_func("/ci/local/differential/per-patch",
			test_differential_per_patch);
	g_test_add_func("/ci/local/cancel", test_cancel);
	g_test_add_func("/ci/local/cancel/other-process",
			test_cancel_other_process);
	g_test_add_func("/ci/local/lost", test_lost);
	g_test_add_func("/ci/local/restart", test_restart);
	g_test_add_func("/ci/local/parallel", test_parallel);
	g_test_add_func("/ci/local/nipa", test_nipa);

	rc = g_test_run();
	if (!g_test_subprocess() && rc == 0)
		g_free(run_argv((const char *[]){ "rm", "-rf", T, NULL },
				NULL));
	g_free(T);
	g_free(work_root);
	g_free(markers);
	g_free(bare);
	for (int i = 0; i < 6; i++)
		g_free(commits[i]);
	return rc;
}
