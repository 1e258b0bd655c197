/* ci.h - running tests on applied series: one interface, several backends.
 *
 * A backend takes a job (which commit of which series to test), starts it
 * and hands back a handle: a short string that names the job on the
 * backend (a Jenkins queue or build URL, a local job directory).  The
 * caller persists the handle in the store before doing anything else, so
 * that after a crash or a restart it polls the same job again instead of
 * starting a second one.  Polling is cheap and never blocks for long;
 * cancelling is how a superseded series stops its jobs.
 *
 * The backends are "local" (the embedded default: a checkout run under
 * bubblewrap on this machine), "jenkins" and "buildbot".  Each one
 * reads its own
 * settings from a group of the configuration file.
 *
 * Errors: GError domain PGATE_CI_ERROR with the codes of PgateErrorCode.
 * A job that ran and failed is not an error: it is a result with the
 * verdict FAIL.  An error is the backend's trouble (unreachable server,
 * 5xx: transient; 401/403/404, bad configuration: permanent).
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"
#include "store/store.h"

G_BEGIN_DECLS

#define PGATE_CI_ERROR (pgate_ci_error_quark())
GQuark pgate_ci_error_quark(void);

/* The verdict (PgateVerdict) and the job state (PgateJobState) are the
 * store's vocabulary (store/store.h). */

/* What to test.  Strings are owned by the struct. */
typedef struct {
	char *job;           /* the configured job's name, e.g. "build" */
	char *repo_path;     /* local repository that holds the commits */
	char *repo_url;      /* where a remote CI fetches them (pushed) */
	char *ref;           /* the pushed ref, e.g. refs/heads/patchgate/... */
	GPtrArray *commits;  /* (element-type utf8): hex OIDs, one per patch,
			      * oldest first; the last is the series' head */
	char *base_commit;   /* (nullable) hex OID the series applies on */
	char *series_id;
	guint32 version;
	char *branch;        /* the base branch's name */
	char *msgid;         /* the cover's (or first patch's) Message-ID */
	char *trigger_id;    /* unique per submission (series id + a nonce),
			      * so that queued triggers are never merged;
			      * the same when a submission is repeated */
	gboolean repeat;     /* this trigger_id was submitted before and its
			      * answer never came (a lost reply, a crash
			      * before the handle was stored), maybe with
			      * other commits (the series was applied again):
			      * the backend first looks for what that
			      * submission started and hands back its handle,
			      * so that one submission never makes two
			      * builds (Jenkins; local jobs die with their
			      * process, and start anew) */
} PgateCiJob;

PgateCiJob *pgate_ci_job_new(void);
void pgate_ci_job_free(PgateCiJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiJob, pgate_ci_job_free)

/* The outcome of one commit's run (per-patch mode) or of the series. */
typedef struct {
	char *commit;        /* hex OID */
	PgateVerdict verdict;
	char *reason;        /* (nullable) one line, e.g. "step make failed
			      * (exit 2)", "aborted", "timed out after 600 s" */
} PgateCiCommitResult;

typedef struct {
	PgateJobState state;
	PgateVerdict verdict;  /* NONE unless state is DONE */
	char *reason;        /* (nullable) one line */
	char *summary;       /* (nullable) failing step and last log lines,
			      * bounded (at most 4 KiB) for reports */
	char *url;           /* (nullable) the build's web page */
	char *log_path;      /* (nullable) the full log: a path relative
			      * to the state directory (the working
			      * directory may be another when it is read) */
	gboolean has_tests;  /* a test report exists: counts below are set */
	guint tests_total, tests_failed, tests_skipped;
	gint warnings_added; /* differential runs: new warnings, else -1 */
	gint64 started, finished;  /* seconds since the epoch, 0 unknown */
	GPtrArray *commits;  /* (element-type PgateCiCommitResult): per-patch
			      * results, empty in per-series mode */
	char *handle;        /* (nullable) the handle to persist from now on,
			      * replacing the one polled (Jenkins: the queue
			      * item became a build); %NULL when unchanged */
} PgateCiResult;

PgateCiResult *pgate_ci_result_new(void);
void pgate_ci_result_free(PgateCiResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiResult, pgate_ci_result_free)
PgateCiCommitResult *pgate_ci_commit_result_new(const char *commit);
void pgate_ci_commit_result_free(PgateCiCommitResult *r);

typedef struct PgateCiBackend PgateCiBackend;

/* What a backend implements.  Every function may be called from one thread
 * at a time per backend. */
typedef struct {
	const char *name;    /* "local", "jenkins" */
	/* Starts @job; returns the handle (transfer full). */
	char *(*submit)(PgateCiBackend *b, const PgateCiJob *job, GError **error);
	/* Reports where a job is; never blocks for longer than one request. */
	PgateCiResult *(*poll)(PgateCiBackend *b, const char *handle,
			       GError **error);
	/* Polls many handles at once (Jenkins: concurrently with curl multi).
	 * Fills @out_results[i] or @out_errors[i] for each handle. */
	void (*poll_many)(PgateCiBackend *b, const char *const *handles,
			  guint n, PgateCiResult **out_results,
			  GError **out_errors);
	/* Cancels a queued or running job; a finished or unknown one is not
	 * an error. */
	gboolean (*cancel)(PgateCiBackend *b, const char *handle,
			   GError **error);
	void (*free)(PgateCiBackend *b);
} PgateCiBackendClass;

struct PgateCiBackend {
	const PgateCiBackendClass *klass;
};

/**
 * pgate_ci_backend_new:
 * @kind: "local", "jenkins" or "buildbot"
 * @kf: the configuration; the backend reads group @group
 * @state_dir: patchgate's state directory (logs, local job directories)
 *
 * Returns: (transfer full): the backend, or %NULL with PGATE_ERROR_CONFIG
 * when @kind is unknown or its settings are wrong.
 */
PgateCiBackend *pgate_ci_backend_new(const char *kind, GKeyFile *kf,
				     const char *group, const char *state_dir,
				     GError **error);

/**
 * pgate_ci_config_check:
 * @kind: "local", "jenkins" or "buildbot"
 * @kf: the configuration; group @group is checked
 *
 * Reads and checks the settings pgate_ci_backend_new() would (secrets
 * included), and does nothing else: no directory is made, no job or
 * thread started, no server asked.
 *
 * Returns: %FALSE with PGATE_ERROR_CONFIG naming the key at fault.
 */
gboolean pgate_ci_config_check(const char *kind, GKeyFile *kf,
			       const char *group, GError **error);

/**
 * pgate_ci_jenkins_check_online:
 * @kf: the configuration; group @group is a [ci.jenkins] one
 *
 * `patchgate config check --online`: the server answers as a Jenkins,
 * takes the credentials (401 when not), the job exists (404 when not) and
 * may be built, and, with a password (whose POSTs need one), a crumb is
 * issued.  GETs only: nothing is triggered.  The local backend has
 * nothing to ask over the network.
 *
 * Returns: %FALSE with one line "[GROUP] KEY: ..." naming the key to fix:
 * PGATE_ERROR_IO when the server could not be reached or is unavailable
 * for now, PGATE_ERROR_CONFIG when the setup is wrong, PGATE_ERROR_FAILED
 * for an answer of another kind.
 */
gboolean pgate_ci_jenkins_check_online(GKeyFile *kf, const char *group,
				       GError **error);

/**
 * pgate_ci_buildbot_check_online:
 * @kf: the configuration; group @group is a [ci.buildbot] one
 *
 * `patchgate config check --online`: the master answers (logged in to
 * when user is set: 401 when the password is wrong), has the force
 * scheduler, which builds on the builder and takes the trigger id and
 * commit properties.  GETs only: nothing is built.
 *
 * Returns: %FALSE with one line "[GROUP] KEY: ..." naming the key to fix:
 * PGATE_ERROR_IO when the master could not be reached, PGATE_ERROR_CONFIG
 * when the setup is wrong, PGATE_ERROR_FAILED for an answer of another
 * kind.
 */
gboolean pgate_ci_buildbot_check_online(GKeyFile *kf, const char *group,
					GError **error);

char *pgate_ci_submit(PgateCiBackend *b, const PgateCiJob *job, GError **error);
PgateCiResult *pgate_ci_poll(PgateCiBackend *b, const char *handle,
			     GError **error);
void pgate_ci_poll_many(PgateCiBackend *b, const char *const *handles, guint n,
			PgateCiResult **out_results, GError **out_errors);
gboolean pgate_ci_cancel(PgateCiBackend *b, const char *handle, GError **error);
void pgate_ci_backend_free(PgateCiBackend *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiBackend, pgate_ci_backend_free)

G_END_DECLS
