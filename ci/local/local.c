/* local.c - the "local" CI backend: the embedded default, which runs a
 * project's configured steps on this machine, sandboxed with bubblewrap
 * (sandbox.c).
 *
 * submit() checks the job (its commits exist), makes a job directory
 * STATE_DIR/ci/local/<handle>/ with job.json and state.json, and queues
 * the job on a thread pool of `jobs` threads: it returns at once.  A worker
 * thread checks each commit out into a temporary directory (checkout.c),
 * runs the steps, judges (judge.c) and writes result.json: from then on
 * the job is done, and any process polls its result.
 *
 * A job without a result is alive only as long as the process that
 * queued it (state.json names it by pid, start time and boot id) and the
 * backend object in it: poll() reports it LOST once they are gone, and
 * the caller submits it again.  cancel() kills the running step and
 * records FAIL "cancelled"; for a job of another process it leaves a
 * "cancel" file that the runner there acts on within a tenth of a second.
 */
#include "ci/local/local-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define HANDLE_LEN 16
#define MAX_JOB_STRING 1024
#define CANCEL_WAIT_US (10 * G_USEC_PER_SEC)

typedef struct PgateCiLocal PgateCiLocal;

typedef struct {
	gint ref;
	PgateCiLocal *b;       /* outlives the job: free() waits for it */
	char *handle;
	char *dir;
	PgateCiJob *job;
	gint cancel;           /* atomic: cancel() was called */
	/* under jobs_lock */
	gboolean started;      /* a worker took it */
	gboolean finished;     /* result written, or abandoned */
} LocalJob;

struct PgateCiLocal {
	PgateCiBackend parent;
	PgateCiLocalConfig *cfg;
	char *root;            /* STATE_DIR/ci/local */
	char *baseline_dir;
	char *boot_id;
	guint64 self_start;
	GThreadPool *pool;
	gint shutdown;         /* atomic */
	gint seq;              /* atomic: cgroup labels */
};

/* Every live job of this process, whichever backend object runs it:
 * handle -> LocalJob (a reference). */
static GMutex jobs_lock;
static GCond jobs_cond;
static GHashTable *jobs_live;
/* Baselines being computed in this process (their file names): one
 * thread computes a given one, the others wait for its result. */
static GHashTable *baselines_busy;

static LocalJob *
local_job_ref(LocalJob *j)
{
	g_atomic_int_inc(&j->ref);
	return j;
}

static void
local_job_unref(LocalJob *j)
{
	if (j && g_atomic_int_dec_and_test(&j->ref)) {
		g_free(j->handle);
		g_free(j->dir);
		pgate_ci_job_free(j->job);
		g_free(j);
	}
}

static PgateCiJob *
job_copy(const PgateCiJob *src)
{
	PgateCiJob *j = pgate_ci_job_new();

	j->job = g_strdup(src->job);
	j->repo_path = g_strdup(src->repo_path);
	j->repo_url = g_strdup(src->repo_url);
	j->ref = g_strdup(src->ref);
	for (guint i = 0; i < src->commits->len; i++)
		g_ptr_array_add(j->commits, g_strdup(src->commits->pdata[i]));
	j->base_commit = g_strdup(src->base_commit);
	j->series_id = g_strdup(src->series_id);
	j->version = src->version;
	j->branch = g_strdup(src->branch);
	j->msgid = g_strdup(src->msgid);
	j->trigger_id = g_strdup(src->trigger_id);
	return j;
}

static gboolean
valid_handle(const char *h)
{
	if (h == NULL || strlen(h) != HANDLE_LEN)
		return FALSE;
	for (const char *p = h; *p; p++)
		if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
			return FALSE;
	return TRUE;
}

static gboolean
valid_oid(const char *s)
{
	if (s == NULL || strlen(s) != 40)
		return FALSE;
	for (const char *p = s; *p; p++)
		if (!g_ascii_isxdigit(*p))
			return FALSE;
	return TRUE;
}

static char *
job_path(const PgateCiLocal *b, const char *handle, const char *file)
{
	return g_build_filename(b->root, handle, file, NULL);
}

/* The log's path as results give it: relative to the state directory
 * (ci.h), whatever the working directory is. */
static char *
log_rel(const char *handle)
{
	return g_build_filename(PGATE_STATE_CI_LOCAL, handle, "log", NULL);
}

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

/* ---- the job's log ------------------------------------------------- */

static void
log_flush(int fd, GString *log)
{
	const char *p;
	gsize left;

	/* no secret is kept in a log (common/secret.c) */
	pgate_secret_redact_string(log);
	p = log->str;
	left = log->len;

	while (fd >= 0 && left > 0) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the log is best effort; the result is not */
		p += n;
		left -= (gsize)n;
	}
	g_string_truncate(log, 0);
}

/* ---- running a job ------------------------------------------------- */

typedef struct {
	PgateCiLocal *b;
	LocalJob *j;
	char *cancel_path;
	int log_fd;
	GString *log;
	char *tmp;             /* the job's temporary directory */
	char *git_objects;     /* (nullable) nipa: the repository's objects */
} Runner;

static gboolean
runner_stop(gpointer data)
{
	Runner *r = data;

	return g_atomic_int_get(&r->j->cancel) ||
	       g_atomic_int_get(&r->b->shutdown) ||
	       g_file_test(r->cancel_path, G_FILE_TEST_EXISTS);
}

static void
env_add(GPtrArray *env, const char *name, const char *value)
{
	g_autofree char *clean = NULL;

	if (value == NULL)
		return;
	clean = pgate_ci_local__clean_text(value, -1,
					   PGATE_CI_LOCAL_MAX_ENV_VALUE, FALSE);
	g_ptr_array_add(env, g_strdup_printf("%s=%s", name, clean));
}

/* The step's environment: nothing of ours, a few facts of the job. */
static GPtrArray *
step_env(const Runner *r, const char *commit, gboolean base,
	 const char *step)
{
	const PgateCiJob *job = r->j->job;
	GPtrArray *env = g_ptr_array_new_with_free_func(g_free);

	g_ptr_array_add(env, g_strdup("PATH=" PGATE_CI_LOCAL_PATH));
	g_ptr_array_add(env, g_strdup("LANG=C.UTF-8"));
	env_add(env, "PATCHGATE_JOB", job->job);
	env_add(env, "PATCHGATE_COMMIT", commit);
	env_add(env, "PATCHGATE_STEP", step);
	env_add(env, "PATCHGATE_BRANCH", job->branch);
	if (r->b->cfg->nipa) {
		g_autofree char *fd = g_strdup_printf("%d",
						      PGATE_CI_LOCAL_DESC_FD);

		env_add(env, "DESC_FD", fd);
	}
	if (base) {
		/* shared by every series on this base: nothing of one */
		env_add(env, "PATCHGATE_BASELINE", "1");
	} else {
		g_autofree char *v = g_strdup_printf("%u", job->version);

		env_add(env, "PATCHGATE_SERIES", job->series_id);
		env_add(env, "PATCHGATE_VERSION", v);
	}
	g_ptr_array_add(env, NULL);
	return env;
}

/* Checks @commit out and runs every step on it, stopping at the first
 * that does not pass.  %NULL with @error when the checkout failed. */
/* A step's /tmp: a new, empty directory beside the checkout, on disk
 * (so that the disk limit sees it), the sandbox user's. */
static gboolean
step_tmp(const PgateCiLocalConfig *cfg, const char *tmp, GError **error)
{
	if (!pgate_ci_local__rm_rf(tmp, error))
		return FALSE;
	if (mkdir(tmp, 0700) < 0 ||
	    (cfg->drop && chown(tmp, cfg->uid, cfg->gid) < 0)) {
		int errsv = errno;

		g_set_error(error, PGATE_CI_ERROR, pgate_error_errno_code(errsv),
			    "making the step's /tmp %s: %s", tmp,
			    g_strerror(errsv));
		return FALSE;
	}
	return TRUE;
}

static PgateCiLocalRun *
run_commit(Runner *r, const char *commit, gboolean base, GError **error)
{
	const PgateCiLocalConfig *cfg = r->b->cfg;
	g_autoptr(PgateCiLocalRun) run = pgate_ci_local__run_new(commit);
	g_autofree char *work = g_build_filename(r->tmp, "work", NULL);
	g_autofree char *tmp = g_build_filename(r->tmp, "tmp", NULL);
	gboolean stop = FALSE;

	g_string_append_printf(r->log, "== checkout %s%s\n", commit,
			       base ? " (the base)" : "");
	log_flush(r->log_fd, r->log);
	if (!pgate_ci_local__rm_rf(work, error))
		return NULL;
	if (mkdir(work, 0700) < 0) {
		int errsv = errno;

		g_set_error(error, PGATE_CI_ERROR, pgate_error_errno_code(errsv),
			    "mkdir %s: %s", work, g_strerror(errsv));
		return NULL;
	}
	if (!pgate_ci_local__checkout(cfg, r->j->job->repo_path, commit, work,
				      error)) {
		g_autoptr(GError) ignored = NULL;

		pgate_ci_local__rm_rf(work, &ignored);
		return NULL;
	}
	for (guint i = 0; i < cfg->steps->len; i++) {
		const PgateCiLocalStep *step = cfg->steps->pdata[i];
		PgateCiLocalStepResult *sr;
		g_autoptr(GPtrArray) env = NULL;
		g_autofree char *label = NULL;
		PgateCiLocalStepContext ctx = { 0 };

		if (stop) {
			g_ptr_array_add(run->steps,
					pgate_ci_local__step_result_new(
						step->name));
			continue;
		}
		env = step_env(r, commit, base, step->name);
		label = g_strdup_printf("%s.%d.%d", r->j->handle, (int)getpid(),
					g_atomic_int_add(&r->b->seq, 1));
		if (!step_tmp(cfg, tmp, error))
			return NULL;
		ctx.cfg = cfg;
		ctx.workdir = work;
		ctx.tmpdir = tmp;
		ctx.env = (char **)env->pdata;
		ctx.git_objects = r->git_objects;
		ctx.label = label;
		ctx.stop = runner_stop;
		ctx.stop_data = r;
		sr = pgate_ci_local__step_run(&ctx, step, r->log);
		log_flush(r->log_fd, r->log);
		{
			g_autoptr(GError) local = NULL;

			if (!pgate_ci_local__rm_rf(tmp, &local)) {
				g_string_append_printf(r->log, "== cleanup: "
						       "%s\n", local->message);
				log_flush(r->log_fd, r->log);
			}
		}
		run->warnings += sr->warnings;
		stop = sr->status != PGATE_CI_LOCAL_STEP_PASSED;
		g_ptr_array_add(run->steps, sr);
	}
	{
		g_autoptr(GError) local = NULL;

		if (!pgate_ci_local__rm_rf(work, &local)) {
			g_string_append_printf(r->log, "== cleanup: %s\n",
					       local->message);
			log_flush(r->log_fd, r->log);
		}
	}
	return g_steal_pointer(&run);
}

static gboolean
run_interrupted(const PgateCiLocalRun *run)
{
	const PgateCiLocalStepResult *bad = pgate_ci_local__run_first_bad(run);

	return bad && (bad->status == PGATE_CI_LOCAL_STEP_CANCELLED ||
		       bad->status == PGATE_CI_LOCAL_STEP_ERROR);
}

static char *
baseline_path(const PgateCiLocal *b, const char *base)
{
	g_autofree char *cfg_digest = pgate_ci_local__config_digest(b->cfg);
	g_autofree char *key = g_strdup_printf("%s\n%s", base, cfg_digest);
	g_autofree char *digest = g_compute_checksum_for_string(
		G_CHECKSUM_SHA256, key, -1);
	g_autofree char *name = g_strdup_printf("%s.json", digest);

	return g_build_filename(b->baseline_dir, name, NULL);
}

/* The base's run: from the cache, or run now and cached when complete.
 * One thread at a time computes a given baseline; others wait for it. */
static PgateCiLocalRun *
get_baseline(Runner *r, gboolean *out_cached, GError **error)
{
	PgateCiLocal *b = r->b;
	const char *base = r->j->job->base_commit;
	g_autofree char *path = baseline_path(b, base);
	g_autofree char *name = g_path_get_basename(path);
	PgateCiLocalRun *run;

	*out_cached = FALSE;
	g_mutex_lock(&jobs_lock);
	for (;;) {
		g_autoptr(GError) local = NULL;

		run = pgate_ci_local__baseline_read(path, &local);
		if (run || !g_hash_table_contains(baselines_busy, name))
			break;
		if (runner_stop(r)) {
			g_mutex_unlock(&jobs_lock);
			return pgate_ci_local__run_new(base);
		}
		g_cond_wait_until(&jobs_cond, &jobs_lock,
				  g_get_monotonic_time() + 200000);
	}
	if (run == NULL)
		g_hash_table_add(baselines_busy, g_strdup(name));
	g_mutex_unlock(&jobs_lock);

	if (run) {
		*out_cached = TRUE;
		g_string_append_printf(r->log,
				       "== baseline %s: from the cache "
				       "(baseline/%s): %u warning(s)\n", base,
				       name, run->warnings);
		log_flush(r->log_fd, r->log);
		return run;
	}
	g_string_append_printf(r->log, "== baseline %s: running the steps on "
			       "the base\n", base);
	run = run_commit(r, base, TRUE, error);
	if (run && !run_interrupted(run)) {
		g_autoptr(GError) local = NULL;

		if (!pgate_ci_local__baseline_write(path, run, &local))
			g_string_append_printf(r->log, "== baseline: not "
					       "cached: %s\n", local->message);
	}
	g_mutex_lock(&jobs_lock);
	g_hash_table_remove(baselines_busy, name);
	g_cond_broadcast(&jobs_cond);
	g_mutex_unlock(&jobs_lock);
	return run;
}

static char *
short_oid(const char *oid)
{
	return g_strndup(oid, 12);
}

static PgateCiResult *
error_result(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static PgateCiResult *
error_result(const char *fmt, ...)
{
	PgateCiResult *res = pgate_ci_result_new();
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	res->state = PGATE_JOB_DONE;
	res->verdict = PGATE_VERDICT_ERROR;
	res->reason = pgate_ci_local__clean_text(msg, -1, 1024, FALSE);
	res->summary = pgate_ci_local__summary(res->reason, NULL);
	return res;
}

/* Runs the job; %NULL when the backend is shutting down (the job is then
 * abandoned, not finished). */
static PgateCiResult *
run_job_steps(Runner *r)
{
	const PgateCiLocalConfig *cfg = r->b->cfg;
	const PgateCiJob *job = r->j->job;
	g_autoptr(PgateCiLocalRun) baseline = NULL;
	g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_local__run_free);
	g_autoptr(PgateCiResult) res = pgate_ci_result_new();
	g_autoptr(GError) error = NULL;
	const PgateCiLocalRun *prev = NULL, *worst_run = NULL;
	g_autofree char *worst_reason = NULL;
	guint first, n = job->commits->len;
	PgateVerdict worst = PGATE_VERDICT_NONE;
	gboolean interrupted = FALSE;

	first = cfg->mode == PGATE_CI_LOCAL_MODE_PATCH ? 0 : n - 1;
	if (cfg->differential) {
		gboolean cached;

		baseline = get_baseline(r, &cached, &error);
		if (baseline == NULL)
			return error_result("checkout of the base %s failed: "
					    "%s", job->base_commit,
					    error->message);
		if (g_atomic_int_get(&r->b->shutdown))
			return NULL;
		if (run_interrupted(baseline) || baseline->steps->len == 0) {
			const PgateCiLocalStepResult *bad =
				pgate_ci_local__run_first_bad(baseline);
			g_autofree char *why = NULL;

			if (bad == NULL || bad->status ==
			    PGATE_CI_LOCAL_STEP_CANCELLED) {
				res->state = PGATE_JOB_DONE;
				res->verdict = PGATE_VERDICT_FAIL;
				res->reason = g_strdup("cancelled");
				res->summary = pgate_ci_local__summary(
					"cancelled", NULL);
				return g_steal_pointer(&res);
			}
			pgate_ci_local__judge(baseline, NULL, &why);
			return error_result("on the base %s: %s",
					    job->base_commit, why);
		}
		prev = baseline;
	}

	for (guint i = first; i < n; i++) {
		const char *commit = job->commits->pdata[i];
		g_autofree char *reason = NULL, *abbrev = short_oid(commit);
		PgateCiLocalRun *run;
		PgateVerdict v;

		run = run_commit(r, commit, FALSE, &error);
		if (run == NULL)
			return error_result("checkout of %s failed: %s", commit,
					    error->message);
		g_ptr_array_add(runs, run);
		if (g_atomic_int_get(&r->b->shutdown))
			return NULL;
		v = pgate_ci_local__judge(run, cfg->differential ? prev : NULL,
					  &reason);
		g_string_append_printf(r->log, "== commit %s: %s: %s\n", abbrev,
				       pgate_verdict_name(v), reason);
		log_flush(r->log_fd, r->log);
		if (cfg->mode == PGATE_CI_LOCAL_MODE_PATCH) {
			PgateCiCommitResult *cr =
				pgate_ci_commit_result_new(commit);

			cr->verdict = v;
			cr->reason = pgate_ci_local__clean_text(reason, -1, 1024,
								FALSE);
			g_ptr_array_add(res->commits, cr);
		}
		if (worst_run == NULL ||
		    pgate_ci_local__verdict_worst(worst, v) != worst) {
			worst = v;
			worst_run = run;
			g_free(worst_reason);
			worst_reason = cfg->mode == PGATE_CI_LOCAL_MODE_PATCH
				? g_strdup_printf("patch %u/%u (%s): %s", i + 1,
						  n, abbrev, reason)
				: g_steal_pointer(&reason);
		}
		prev = run;
		/* a cancel or a sandbox failure ends the job */
		if (run_interrupted(run)) {
			const PgateCiLocalStepResult *bad =
				pgate_ci_local__run_first_bad(run);

			interrupted = TRUE;
			if (bad->status == PGATE_CI_LOCAL_STEP_CANCELLED) {
				g_free(worst_reason);
				worst_reason = g_strdup("cancelled");
				worst = PGATE_VERDICT_FAIL;
				worst_run = run;
			}
			break;
		}
	}

	res->state = PGATE_JOB_DONE;
	res->verdict = worst;
	res->reason = pgate_ci_local__clean_text(worst_reason, -1, 1024, FALSE);
	res->summary = pgate_ci_local__summary(
		res->reason, pgate_ci_local__run_first_bad(worst_run));
	/* the series' head against the base, when both ran to the end */
	if (cfg->differential && !interrupted) {
		const PgateCiLocalRun *head = runs->pdata[runs->len - 1];

		res->warnings_added = head->warnings > baseline->warnings
			? (gint)MIN(head->warnings - baseline->warnings,
				    (guint)G_MAXINT)
			: 0;
	}
	return g_steal_pointer(&res);
}

static void
job_forget(LocalJob *j)
{
	g_mutex_lock(&jobs_lock);
	j->finished = TRUE;
	if (g_hash_table_lookup(jobs_live, j->handle) == j)
		g_hash_table_remove(jobs_live, j->handle);
	g_cond_broadcast(&jobs_cond);
	g_mutex_unlock(&jobs_lock);
}

static void
write_lost(PgateCiLocal *b, LocalJob *j, const char *reason)
{
	g_autofree char *path = job_path(b, j->handle, "state.json");
	g_autoptr(GError) error = NULL;
	PgateCiLocalState st = { 0 };

	st.state = PGATE_JOB_LOST;
	st.pid = getpid();
	st.pid_start = b->self_start;
	st.boot_id = b->boot_id;
	st.reason = (char *)reason;
	if (!pgate_ci_local__state_write(path, &st, &error))
		g_warning("job=%s: %s", j->handle, error->message);
}

static void
write_result(PgateCiLocal *b, LocalJob *j, PgateCiResult *res)
{
	g_autofree char *path = job_path(b, j->handle, "result.json");
	g_autoptr(GError) error = NULL;

	pgate_ci__result_redact(res);
	if (!pgate_ci_local__result_write(path, res, &error)) {
		/* without a result the job reads as lost: submit again */
		g_warning("job=%s: %s", j->handle, error->message);
		write_lost(b, j, error->message);
	}
}

static PgateCiResult *
cancelled_result(gint64 started)
{
	PgateCiResult *res = pgate_ci_result_new();

	res->state = PGATE_JOB_DONE;
	res->verdict = PGATE_VERDICT_FAIL;
	res->reason = g_strdup("cancelled");
	res->summary = pgate_ci_local__summary("cancelled", NULL);
	res->started = started;
	res->finished = now_s();
	return res;
}

static void
remove_tmp(Runner *r)
{
	g_autoptr(GError) error = NULL;

	if (r->tmp && !pgate_ci_local__rm_rf(r->tmp, &error))
		g_warning("job=%s: %s", r->j->handle, error->message);
	g_clear_pointer(&r->tmp, g_free);
}

static void
worker(gpointer data, gpointer user_data)
{
	LocalJob *j = data;
	PgateCiLocal *b = user_data;
	g_autoptr(PgateCiResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *state_path = job_path(b, j->handle, "state.json");
	g_autofree char *log_path = job_path(b, j->handle, "log");
	g_autofree char *tmpl = NULL;
	PgateCiLocalState st = { 0 };
	gboolean skip;
	Runner r = { .log_fd = -1 };

	g_mutex_lock(&jobs_lock);
	skip = j->finished;
	j->started = TRUE;
	g_mutex_unlock(&jobs_lock);
	if (skip)
		goto out;

	r.b = b;
	r.j = j;
	r.cancel_path = job_path(b, j->handle, "cancel");
	r.log = g_string_new(NULL);
	r.log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			0600);
	if (g_atomic_int_get(&b->shutdown)) {
		write_lost(b, j, "the backend was shut down before the job "
			   "started");
		goto out;
	}
	if (runner_stop(&r)) {
		res = cancelled_result(now_s());
		goto done;
	}

	st.state = PGATE_JOB_RUNNING;
	st.pid = getpid();
	st.pid_start = b->self_start;
	st.boot_id = b->boot_id;
	st.started = now_s();
	if (!pgate_ci_local__state_write(state_path, &st, &error)) {
		res = error_result("cannot record the job's state: %s",
				   error->message);
		goto done;
	}
	g_string_append_printf(r.log,
			       "== patchgate local CI job %s: series %s v%u, "
			       "job %s, %u commit(s), mode %s%s\n",
			       j->handle, j->job->series_id ? j->job->series_id
							    : "-",
			       j->job->version, j->job->job ? j->job->job : "-",
			       j->job->commits->len,
			       b->cfg->mode == PGATE_CI_LOCAL_MODE_PATCH
				       ? "patch" : "series",
			       b->cfg->differential ? ", differential" : "");
	log_flush(r.log_fd, r.log);

	tmpl = g_strdup_printf("%s/pgate-ci-%s-XXXXXX", b->cfg->work_root,
			       j->handle);
	if (g_mkdtemp_full(tmpl, 0700) == NULL) {
		res = error_result("cannot make a work directory in %s: %s",
				   b->cfg->work_root, g_strerror(errno));
		goto done;
	}
	r.tmp = g_steal_pointer(&tmpl);
	/* the sandbox user may pass through, not list it */
	if (chmod(r.tmp, 0711) < 0) {
		res = error_result("chmod %s: %s", r.tmp, g_strerror(errno));
		goto done;
	}
	if (b->cfg->nipa)
		r.git_objects = pgate_ci_local__git_objects(j->job->repo_path);
	res = run_job_steps(&r);
	if (res == NULL) {
		write_lost(b, j, "the backend was shut down while the job ran");
		goto out;
	}
	res->started = st.started;

done:
	if (res->finished == 0)
		res->finished = now_s();
	g_string_append_printf(r.log, "== verdict: %s: %s\n",
			       pgate_verdict_name(res->verdict),
			       res->reason ? res->reason : "");
	log_flush(r.log_fd, r.log);
	/* the checkout goes before the result: done means cleaned up */
	remove_tmp(&r);
	write_result(b, j, res);
out:
	remove_tmp(&r);
	g_free(r.git_objects);
	g_free(r.cancel_path);
	if (r.log)
		g_string_free(r.log, TRUE);
	if (r.log_fd >= 0)
		close(r.log_fd);
	job_forget(j);
	local_job_unref(j);
}

/* ---- the backend class ---------------------------------------------- */

static gboolean
check_string(const char *what, const char *s, GError **error)
{
	if (s == NULL)
		return TRUE;
	if (strlen(s) > MAX_JOB_STRING || !g_utf8_validate(s, -1, NULL)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "the job's %s is not valid UTF-8 of at most %d "
			    "bytes", what, MAX_JOB_STRING);
		return FALSE;
	}
	return TRUE;
}

static gboolean
check_job(const PgateCiLocal *b, const PgateCiJob *job, GError **error)
{
	if (job->repo_path == NULL || job->repo_path[0] == '\0') {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "the job has no repository");
		return FALSE;
	}
	if (job->commits->len == 0 ||
	    job->commits->len > PGATE_CI_LOCAL_MAX_COMMITS) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "a job has 1 to %d commits, not %u",
			    PGATE_CI_LOCAL_MAX_COMMITS, job->commits->len);
		return FALSE;
	}
	if (b->cfg->differential && job->base_commit == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "differential = on needs the job's base commit");
		return FALSE;
	}
	if (!check_string("name", job->job, error) ||
	    !check_string("repository", job->repo_path, error) ||
	    !check_string("repository URL", job->repo_url, error) ||
	    !check_string("ref", job->ref, error) ||
	    !check_string("series id", job->series_id, error) ||
	    !check_string("branch", job->branch, error) ||
	    !check_string("Message-ID", job->msgid, error) ||
	    !check_string("trigger id", job->trigger_id, error))
		return FALSE;
	{
		g_autoptr(GPtrArray) all = g_ptr_array_new();

		for (guint i = 0; i < job->commits->len; i++)
			g_ptr_array_add(all, job->commits->pdata[i]);
		if (b->cfg->differential)
			g_ptr_array_add(all, job->base_commit);
		for (guint i = 0; i < all->len; i++)
			if (!valid_oid(all->pdata[i])) {
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_INVALID,
					    "\"%s\" is not a full hex commit "
					    "id", (char *)all->pdata[i]);
				return FALSE;
			}
		if (!pgate_ci_local__commits_check(
			    job->repo_path, (const char *const *)all->pdata,
			    all->len, error))
			return FALSE;
	}
	return TRUE;
}

static char *
new_handle(void)
{
	guint8 raw[HANDLE_LEN / 2];
	GString *s = g_string_sized_new(HANDLE_LEN);

	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		for (gsize i = 0; i < sizeof raw; i++)
			raw[i] = (guint8)g_random_int_range(0, 256);
	for (gsize i = 0; i < sizeof raw; i++)
		g_string_append_printf(s, "%02x", raw[i]);
	return g_string_free(s, FALSE);
}

static char *
local_submit(PgateCiBackend *base, const PgateCiJob *job, GError **error)
{
	PgateCiLocal *b = (PgateCiLocal *)base;
	g_autofree char *handle = NULL, *dir = NULL, *path = NULL;
	PgateCiLocalState st = { 0 };
	LocalJob *j;

	if (g_atomic_int_get(&b->shutdown)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_FAILED,
			    "the backend is shutting down");
		return NULL;
	}
	if (!check_job(b, job, error))
		return NULL;
	for (int tries = 0;; tries++) {
		g_free(handle);
		g_free(dir);
		handle = new_handle();
		dir = g_build_filename(b->root, handle, NULL);
		if (mkdir(dir, 0700) == 0)
			break;
		if (errno != EEXIST || tries > 8) {
			int errsv = errno;

			g_set_error(error, PGATE_CI_ERROR,
				    pgate_error_errno_code(errsv),
				    "mkdir %s: %s", dir, g_strerror(errsv));
			return NULL;
		}
	}
	path = job_path(b, handle, "job.json");
	if (!pgate_ci_local__job_write(path, job, b->cfg->mode, error))
		goto fail;
	g_free(path);
	path = job_path(b, handle, "state.json");
	st.state = PGATE_JOB_QUEUED;
	st.pid = getpid();
	st.pid_start = b->self_start;
	st.boot_id = b->boot_id;
	if (!pgate_ci_local__state_write(path, &st, error))
		goto fail;

	j = g_new0(LocalJob, 1);
	j->ref = 1;
	j->b = b;
	j->handle = g_strdup(handle);
	j->dir = g_strdup(dir);
	j->job = job_copy(job);
	g_mutex_lock(&jobs_lock);
	g_hash_table_insert(jobs_live, g_strdup(handle), local_job_ref(j));
	g_mutex_unlock(&jobs_lock);
	/* the pool's reference: dropped by the worker */
	if (!g_thread_pool_push(b->pool, j, error)) {
		job_forget(j);
		local_job_unref(j);
		goto fail;
	}
	g_debug("job=%s series=%s: queued", handle,
	       job->series_id ? job->series_id : "-");
	return g_steal_pointer(&handle);

fail:
	{
		g_autoptr(GError) ignored = NULL;

		pgate_ci_local__rm_rf(dir, &ignored);
	}
	return NULL;
}

/* Whether the process (and backend) that wrote @st still runs the job. */
static gboolean
runner_alive(const PgateCiLocal *b, const PgateCiLocalState *st,
	     const char *handle)
{
	gboolean live;

	if (g_strcmp0(st->boot_id, b->boot_id) != 0 || st->pid_start == 0)
		return FALSE;
	if (st->pid == getpid() && st->pid_start == b->self_start) {
		g_mutex_lock(&jobs_lock);
		live = g_hash_table_contains(jobs_live, handle);
		g_mutex_unlock(&jobs_lock);
		return live;
	}
	return pgate_ci_local__proc_start_time(st->pid) == st->pid_start;
}

static PgateCiResult *
read_result(const PgateCiLocal *b, const char *handle, GError **error)
{
	g_autofree char *path = job_path(b, handle, "result.json");
	PgateCiResult *res = pgate_ci_local__result_read(path, error);

	if (res)
		res->log_path = log_rel(handle);
	return res;
}

static PgateCiResult *
local_poll_state(PgateCiLocal *b, const char *handle, GError **error)
{
	g_autofree char *dir = NULL, *result_path = NULL, *state_path = NULL;
	g_autoptr(PgateCiResult) res = NULL;
	g_autoptr(GError) local = NULL;
	PgateCiLocalState st;

	if (!valid_handle(handle)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "\"%s\" is not a local job handle", handle);
		return NULL;
	}
	dir = g_build_filename(b->root, handle, NULL);
	result_path = job_path(b, handle, "result.json");
	state_path = job_path(b, handle, "state.json");
	if (g_file_test(result_path, G_FILE_TEST_EXISTS))
		return read_result(b, handle, error);

	res = pgate_ci_result_new();
	res->state = PGATE_JOB_LOST;
	if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
		res->reason = g_strdup("no such job");
		return g_steal_pointer(&res);
	}
	res->log_path = log_rel(handle);
	if (!pgate_ci_local__state_read(state_path, &st, &local)) {
		if (!g_error_matches(local, PGATE_CI_ERROR,
				     PGATE_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		/* submit died between its two files */
		res->reason = g_strdup("the job has no state");
		return g_steal_pointer(&res);
	}
	if (st.state != PGATE_JOB_LOST && runner_alive(b, &st, handle)) {
		res->state = st.state;
		res->started = st.started;
	} else if (g_file_test(result_path, G_FILE_TEST_EXISTS)) {
		/* it finished while we looked */
		pgate_ci_local__state_clear(&st);
		return read_result(b, handle, error);
	} else if (st.state == PGATE_JOB_LOST) {
		res->reason = g_strdup(st.reason ? st.reason : "lost");
	} else {
		res->reason = g_strdup_printf(
			"the process that ran the job (pid %" G_GINT64_FORMAT
			") is gone", st.pid);
	}
	pgate_ci_local__state_clear(&st);
	return g_steal_pointer(&res);
}

/* log_url for the job @handle names, or %NULL (no log_url, or no job). */
static char *
job_log_url(const PgateCiLocal *b, const char *handle)
{
	g_autofree char *path = NULL;
	g_autoptr(PgateCiJob) job = NULL;
	g_autoptr(GError) error = NULL;

	if (b->cfg->log_url == NULL)
		return NULL;
	path = job_path(b, handle, "job.json");
	job = pgate_ci_local__job_read(path, &error);
	if (job == NULL) {
		g_debug("job=%s: no log_url: %s", handle, error->message);
		return NULL;
	}
	return pgate_ci_local__log_url(b->cfg->log_url, job, handle);
}

static PgateCiResult *
local_poll(PgateCiBackend *base, const char *handle, GError **error)
{
	PgateCiLocal *b = (PgateCiLocal *)base;
	PgateCiResult *res = local_poll_state(b, handle, error);

	/* where the log is published: the result's (and check's) link */
	if (res != NULL && res->url == NULL)
		res->url = job_log_url(b, handle);
	return res;
}

static gboolean
local_cancel(PgateCiBackend *base, const char *handle, GError **error)
{
	PgateCiLocal *b = (PgateCiLocal *)base;
	g_autofree char *dir = NULL, *path = NULL;
	LocalJob *j;
	gboolean claimed = FALSE;

	if (!valid_handle(handle)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "\"%s\" is not a local job handle", handle);
		return FALSE;
	}
	dir = g_build_filename(b->root, handle, NULL);
	path = job_path(b, handle, "result.json");
	if (!g_file_test(dir, G_FILE_TEST_IS_DIR) ||
	    g_file_test(path, G_FILE_TEST_EXISTS))
		return TRUE;

	g_mutex_lock(&jobs_lock);
	j = g_hash_table_lookup(jobs_live, handle);
	if (j) {
		local_job_ref(j);
		if (!j->started && !j->finished)
			claimed = j->finished = TRUE;
	}
	g_mutex_unlock(&jobs_lock);

	if (j == NULL) {
		/* another process's job, or nobody's: ask the runner */
		g_free(path);
		path = job_path(b, handle, "cancel");
		return pgate_file_write_atomic(path, "cancel\n", 7,
					       PGATE_CI_ERROR, error);
	}
	if (claimed) {
		g_autoptr(PgateCiResult) res = cancelled_result(0);

		write_result(j->b, j, res);
		job_forget(j);
	} else {
		gint64 until = g_get_monotonic_time() + CANCEL_WAIT_US;

		g_atomic_int_set(&j->cancel, 1);
		g_mutex_lock(&jobs_lock);
		while (!j->finished &&
		       g_cond_wait_until(&jobs_cond, &jobs_lock, until))
			;
		g_mutex_unlock(&jobs_lock);
	}
	g_debug("job=%s: cancelled", handle);
	local_job_unref(j);
	return TRUE;
}

static void
local_free(PgateCiBackend *base)
{
	PgateCiLocal *b = (PgateCiLocal *)base;
	GHashTableIter it;
	gpointer value;
	g_autoptr(GPtrArray) queued = g_ptr_array_new_with_free_func(
		(GDestroyNotify)local_job_unref);

	g_atomic_int_set(&b->shutdown, 1);
	/* queued jobs never start; running ones see shutdown and stop */
	g_mutex_lock(&jobs_lock);
	g_hash_table_iter_init(&it, jobs_live);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		LocalJob *j = value;

		if (j->b == b && !j->started && !j->finished) {
			j->finished = TRUE;
			g_ptr_array_add(queued, local_job_ref(j));
		}
	}
	g_mutex_unlock(&jobs_lock);
	for (guint i = 0; i < queued->len; i++) {
		LocalJob *j = queued->pdata[i];

		write_lost(b, j, "the backend was shut down before the job "
			   "started");
		job_forget(j);
	}
	g_thread_pool_free(b->pool, FALSE, TRUE);
	pgate_ci_local__config_free(b->cfg);
	g_free(b->root);
	g_free(b->baseline_dir);
	g_free(b->boot_id);
	g_free(b);
}

/* Removes the temporary directories of this state directory's jobs that
 * are done or lost: a runner that was killed leaves its checkout. */
static void
sweep_work_root(PgateCiLocal *b)
{
	g_autoptr(GDir) d = g_dir_open(b->cfg->work_root, 0, NULL);
	const char *name;

	while (d && (name = g_dir_read_name(d)) != NULL) {
		g_autofree char *handle = NULL, *path = NULL;
		g_autoptr(PgateCiResult) res = NULL;
		g_autoptr(GError) error = NULL;

		/* pgate-ci-HANDLE-XXXXXX */
		if (!g_str_has_prefix(name, "pgate-ci-") ||
		    strlen(name) != 9 + HANDLE_LEN + 7 ||
		    name[9 + HANDLE_LEN] != '-')
			continue;
		handle = g_strndup(name + 9, HANDLE_LEN);
		path = g_build_filename(b->root, handle, NULL);
		if (!valid_handle(handle) ||
		    !g_file_test(path, G_FILE_TEST_IS_DIR))
			continue; /* not one of ours */
		res = local_poll(&b->parent, handle, NULL);
		if (res == NULL || (res->state != PGATE_JOB_DONE &&
				    res->state != PGATE_JOB_LOST))
			continue;
		g_free(path);
		path = g_build_filename(b->cfg->work_root, name, NULL);
		if (!pgate_ci_local__rm_rf(path, &error))
			g_warning("job=%s: %s", handle, error->message);
		else
			g_debug("job=%s: removed the stale %s", handle, path);
	}
}

static const PgateCiBackendClass local_class = {
	.name = "local",
	.submit = local_submit,
	.poll = local_poll,
	.poll_many = NULL,
	.cancel = local_cancel,
	.free = local_free,
};

PgateCiBackend *
pgate_ci_local_create(GKeyFile *kf, const char *group, const char *state_dir,
		      GError **error)
{
	g_autoptr(PgateCiLocalConfig) cfg = NULL;
	PgateCiLocal *b;
	g_autofree char *root = NULL, *baseline_dir = NULL;

	cfg = pgate_ci_local__config_load(kf, group, error);
	if (cfg == NULL)
		return NULL;
	root = g_build_filename(state_dir, PGATE_STATE_CI_LOCAL, NULL);
	baseline_dir = g_build_filename(root, "baseline", NULL);
	if (!pgate_mkdir_p(baseline_dir, PGATE_CI_ERROR, error))
		return NULL;
	pgate_ci_local__cgroup_sweep(cfg);
	if (!cfg->sandbox)
		g_info("[%s] sandbox = off: steps run without bubblewrap",
		       group);

	g_mutex_lock(&jobs_lock);
	if (jobs_live == NULL) {
		jobs_live = g_hash_table_new_full(
			g_str_hash, g_str_equal, g_free,
			(GDestroyNotify)local_job_unref);
		baselines_busy = g_hash_table_new_full(g_str_hash, g_str_equal,
						       g_free, NULL);
	}
	g_mutex_unlock(&jobs_lock);

	b = g_new0(PgateCiLocal, 1);
	b->parent.klass = &local_class;
	/* exclusive: the threads end with the pool, and libgit2's
	 * per-thread state with them */
	b->pool = g_thread_pool_new(worker, b, (gint)cfg->jobs, TRUE, error);
	if (b->pool == NULL) {
		g_free(b);
		return NULL;
	}
	b->cfg = g_steal_pointer(&cfg);
	b->root = g_steal_pointer(&root);
	b->baseline_dir = g_steal_pointer(&baseline_dir);
	b->boot_id = pgate_ci_local__boot_id();
	b->self_start = pgate_ci_local__proc_start_time(getpid());
	sweep_work_root(b);
	pgate_ci_local__git_init();
	return &b->parent;
}
