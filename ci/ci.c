/* ci.c - the backend-neutral half of ci.h: jobs, results, dispatch. */
#include "ci/ci.h"
#include "ci/ci-private.h"

G_DEFINE_QUARK(pgate-ci-error-quark, pgate_ci_error)

const char *
pgate_verdict_name(PgateVerdict v)
{
	switch (v) {
	case PGATE_VERDICT_NONE: return "none";
	case PGATE_VERDICT_SUCCESS: return "success";
	case PGATE_VERDICT_WARNING: return "warning";
	case PGATE_VERDICT_FAIL: return "fail";
	case PGATE_VERDICT_ERROR: return "error";
	}
	return "unknown";
}

const char *
pgate_job_state_name(PgateJobState s)
{
	switch (s) {
	case PGATE_JOB_QUEUED: return "queued";
	case PGATE_JOB_RUNNING: return "running";
	case PGATE_JOB_DONE: return "done";
	case PGATE_JOB_LOST: return "lost";
	}
	return "unknown";
}

PgateCiJob *
pgate_ci_job_new(void)
{
	PgateCiJob *job = g_new0(PgateCiJob, 1);

	job->commits = g_ptr_array_new_with_free_func(g_free);
	job->version = 1;
	return job;
}

void
pgate_ci_job_free(PgateCiJob *job)
{
	if (!job)
		return;
	g_free(job->job);
	g_free(job->repo_path);
	g_free(job->repo_url);
	g_free(job->ref);
	g_ptr_array_unref(job->commits);
	g_free(job->base_commit);
	g_free(job->series_id);
	g_free(job->branch);
	g_free(job->msgid);
	g_free(job->trigger_id);
	g_free(job);
}

PgateCiCommitResult *
pgate_ci_commit_result_new(const char *commit)
{
	PgateCiCommitResult *r = g_new0(PgateCiCommitResult, 1);

	r->commit = g_strdup(commit);
	return r;
}

void
pgate_ci_commit_result_free(PgateCiCommitResult *r)
{
	if (!r)
		return;
	g_free(r->commit);
	g_free(r->reason);
	g_free(r);
}

PgateCiResult *
pgate_ci_result_new(void)
{
	PgateCiResult *r = g_new0(PgateCiResult, 1);

	r->warnings_added = -1;
	r->commits = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_commit_result_free);
	return r;
}

void
pgate_ci_result_free(PgateCiResult *r)
{
	if (!r)
		return;
	g_free(r->reason);
	g_free(r->summary);
	g_free(r->url);
	g_free(r->log_path);
	g_ptr_array_unref(r->commits);
	g_free(r->handle);
	g_free(r);
}

PgateCiBackend *
pgate_ci_backend_new(const char *kind, GKeyFile *kf, const char *group,
		     const char *state_dir, GError **error)
{
	for (guint i = 0; pgate_ci_backends[i].name; i++) {
		if (g_str_equal(kind, pgate_ci_backends[i].name))
			return pgate_ci_backends[i].create(kf, group, state_dir,
							   error);
	}
	g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
		    "unknown CI backend \"%s\"", kind);
	return NULL;
}

char *
pgate_ci_submit(PgateCiBackend *b, const PgateCiJob *job, GError **error)
{
	return b->klass->submit(b, job, error);
}

/* Whatever a backend says of a job passes through here: no secret the
 * step may have printed goes further (common/secret.c). */
void
pgate_ci__result_redact(PgateCiResult *r)
{
	if (r == NULL)
		return;
	pgate_secret_redact_in_place(&r->reason);
	pgate_secret_redact_in_place(&r->summary);
	pgate_secret_redact_in_place(&r->url);
	for (guint i = 0; r->commits && i < r->commits->len; i++) {
		PgateCiCommitResult *c = r->commits->pdata[i];

		pgate_secret_redact_in_place(&c->reason);
	}
}

PgateCiResult *
pgate_ci_poll(PgateCiBackend *b, const char *handle, GError **error)
{
	PgateCiResult *r = b->klass->poll(b, handle, error);

	pgate_ci__result_redact(r);
	return r;
}

void
pgate_ci_poll_many(PgateCiBackend *b, const char *const *handles, guint n,
		   PgateCiResult **out_results, GError **out_errors)
{
	if (b->klass->poll_many) {
		b->klass->poll_many(b, handles, n, out_results, out_errors);
	} else {
		for (guint i = 0; i < n; i++) {
			out_errors[i] = NULL;
			out_results[i] = b->klass->poll(b, handles[i],
							&out_errors[i]);
		}
	}
	for (guint i = 0; i < n; i++)
		pgate_ci__result_redact(out_results[i]);
}

gboolean
pgate_ci_cancel(PgateCiBackend *b, const char *handle, GError **error)
{
	return b->klass->cancel(b, handle, error);
}

void
pgate_ci_backend_free(PgateCiBackend *b)
{
	if (b)
		b->klass->free(b);
}
