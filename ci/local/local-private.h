/* local-private.h - the local CI backend's parts, shared between the files
 * of ci/local/ and nothing else.
 *
 *   config.c    the [group] settings, validated (PgateCiLocalConfig)
 *   sandbox.c   one step: fork, drop privileges, rlimits, exec, timeout,
 *               capped output, its status (pgate_ci_local__step_run)
 *   bwrap.c     the sandbox's file system: bwrap's command line
 *   cgroup.c    the step's cgroup v1 memory and pids groups
 *   diskuse.c   the disk a work area takes, and the watchdog of the limit
 *   checkout.c  a commit's tree written into a work directory (libgit2),
 *               chown to the sandbox user, recursive removal
 *   judge.c     verdicts: plain and differential (against the base)
 *   jobfile.c   the files of a job directory (job.json, state.json,
 *               result.json) and of the baseline cache, as JSON
 *   local.c     the backend: submit, poll, cancel, the worker threads
 *
 * docs/ci-local.md describes the behaviour and every setting; the on-disk
 * layout is documented at the top of jobfile.c.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "ci/ci.h"
#include "ci/ci-private.h"

G_BEGIN_DECLS

/* Bounds on the configuration, and on what a job may carry. */
#define PGATE_CI_LOCAL_MAX_STEPS 32
#define PGATE_CI_LOCAL_MAX_ARGS 256
#define PGATE_CI_LOCAL_MAX_ARG_LEN 4096
#define PGATE_CI_LOCAL_MAX_COMMITS 1000
#define PGATE_CI_LOCAL_MAX_BINDS 32
#define PGATE_CI_LOCAL_MAX_ENV_VALUE 512
/* result->summary */
#define PGATE_CI_LOCAL_SUMMARY_MAX 4096
#define PGATE_CI_LOCAL_SUMMARY_LINES 20
/* the longest line the warning regex is matched against; longer lines are
 * matched on their first this-many bytes */
#define PGATE_CI_LOCAL_MAX_LINE 65536
/* JSON files of a job directory are never read past this */
#define PGATE_CI_LOCAL_MAX_JSON (4 * 1024 * 1024)

/* The sandbox's PATH, and where the work directory appears in it. */
#define PGATE_CI_LOCAL_PATH \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* Inside the sandbox's private /tmp (a tmpfs, so bwrap can make the mount
 * point): a path outside it, such as /work, would have to exist on the
 * host, since the host's root is bound read-only. */
#define PGATE_CI_LOCAL_WORK_MOUNT "/tmp/work"
/* nipa = on: where the sandbox sees the repository's objects (read-only),
 * the alternate object store of the checkout's .git */
#define PGATE_CI_LOCAL_OBJECTS_MOUNT "/git-objects"
/* Inside the sandbox the step runs under "timeout -s KILL" this many
 * seconds longer than its own timeout (see bwrap.c). */
#define PGATE_CI_LOCAL_BACKSTOP_S 30

typedef enum {
	PGATE_CI_LOCAL_MODE_SERIES = 0,  /* the last commit only */
	PGATE_CI_LOCAL_MODE_PATCH,       /* every commit */
} PgateCiLocalMode;

typedef struct {
	char *name;   /* [A-Za-z0-9_.-]{1,64}, unique */
	char **argv;  /* (array zero-terminated=1), never empty */
} PgateCiLocalStep;

typedef struct {
	GPtrArray *steps;          /* (element-type PgateCiLocalStep) */
	PgateCiLocalMode mode;
	guint timeout_s;           /* wall clock, per step */
	gsize max_output;          /* bytes of a step's output kept */
	guint jobs;                /* jobs run at once by one backend */
	guint64 memory;            /* bytes; 0: no limit */
	guint pids;                /* 0: no limit */
	guint cpu_s;               /* CPU seconds per process; 0: no limit */
	guint nofile;
	guint64 fsize;             /* bytes; 0: no limit */
	guint64 disk;              /* bytes of checkout + /tmp; 0: no limit */
	gboolean sandbox;          /* FALSE only with "sandbox = off" */
	char *bwrap;               /* as configured: a name or a path */
	gboolean cgroup;           /* try cgroup v1 memory+pids groups */
	char *work_root;           /* absolute: temporary work directories */
	GPtrArray *ro_binds;       /* (element-type utf8): SRC, DEST, SRC... */
	GRegex *warning_regex;     /* (nullable) */
	char *warning_regex_src;   /* (nullable) */
	char *log_url;             /* (nullable) a checked template, see
				    * pgate_ci_local__log_url() */
	gboolean differential;
	gboolean nipa;              /* NIPA's test script conventions:
				     * DESC_FD, exit 250 and 111 */
	/* Running as root: every step drops to uid/gid/groups. */
	gboolean drop;
	char *user;                /* as configured, for messages */
	uid_t uid;
	gid_t gid;
	GArray *groups;            /* (element-type gid_t) supplementary */
} PgateCiLocalConfig;

/**
 * pgate_ci_local__config_load:
 * Reads and validates group @group of @kf.  Every problem is reported as
 * PGATE_ERROR_CONFIG naming the key.  Returns: (transfer full).
 */
PgateCiLocalConfig *pgate_ci_local__config_load(GKeyFile *kf, const char *group,
						GError **error);
void pgate_ci_local__config_free(PgateCiLocalConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiLocalConfig, pgate_ci_local__config_free)

/**
 * pgate_ci_local__log_url:
 * @tmpl: log_url as the configuration checked it: http(s), with the
 *   placeholders {series}, {version}, {job}, {handle} and {commit} (the
 *   series' last commit)
 *
 * Returns: (transfer full): @tmpl with each placeholder replaced by the
 * job's value, percent-encoded (a "/" in a series id stays inside its
 * path segment); {version} of a job without one is "0".
 */
char *pgate_ci_local__log_url(const char *tmpl, const PgateCiJob *job,
			      const char *handle);

/* A digest of what decides a baseline's outcome (the steps' argv and the
 * warning regex), hex. (transfer full) */
char *pgate_ci_local__config_digest(const PgateCiLocalConfig *cfg);

/* ---- one step ------------------------------------------------------- */

typedef enum {
	PGATE_CI_LOCAL_STEP_NOT_RUN = 0,
	PGATE_CI_LOCAL_STEP_PASSED,
	PGATE_CI_LOCAL_STEP_FAILED,     /* exit != 0, killed by a signal, or
					 * the command could not be executed */
	PGATE_CI_LOCAL_STEP_TIMEOUT,
	PGATE_CI_LOCAL_STEP_CANCELLED,
	PGATE_CI_LOCAL_STEP_ERROR,      /* the sandbox could not be set up:
					 * the command did not run */
} PgateCiLocalStepStatus;

const char *pgate_ci_local__step_status_to_string(PgateCiLocalStepStatus s);
gboolean pgate_ci_local__step_status_from_string(const char *s,
						 PgateCiLocalStepStatus *out);

/* How a step that passed passed, with nipa = on. */
typedef enum {
	PGATE_CI_LOCAL_NIPA_OK = 0,
	PGATE_CI_LOCAL_NIPA_WARNING,    /* exit 250 */
	PGATE_CI_LOCAL_NIPA_SKIP,       /* exit 111: pending, skipped */
} PgateCiLocalNipa;

/* The descriptor a step writes its description to, with nipa = on: NIPA's
 * $DESC_FD. */
#define PGATE_CI_LOCAL_DESC_FD 4
/* At most this much of it is read; it is made one line. */
#define PGATE_CI_LOCAL_DESC_MAX 1000

typedef struct {
	char *name;
	PgateCiLocalStepStatus status;
	int exit_code;      /* FAILED: the exit status, or -1 */
	int signal;         /* FAILED: the signal that killed it, or 0 */
	guint warnings;     /* lines matching warning_regex */
	double seconds;
	char *detail;       /* (nullable) one line: why it could not run,
			     * "memory limit reached", ... */
	char *tail;         /* (nullable) the last lines of its output */
	/* nipa = on (docs/ci-local.md, "NIPA test scripts") */
	PgateCiLocalNipa nipa; /* PASSED: a plain pass, a warning (exit 250)
				* or a skip (exit 111) */
	char *desc;         /* (nullable) one line the step wrote to
			     * $DESC_FD: the check's description */
} PgateCiLocalStepResult;

PgateCiLocalStepResult *pgate_ci_local__step_result_new(const char *name);
void pgate_ci_local__step_result_free(PgateCiLocalStepResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiLocalStepResult,
			      pgate_ci_local__step_result_free)

/* Called about ten times a second while a step runs: %TRUE stops it
 * (killed; status CANCELLED). */
typedef gboolean (*PgateCiLocalStopFunc)(gpointer data);

typedef struct {
	const PgateCiLocalConfig *cfg;
	const char *workdir;        /* host path, owned by the sandbox user */
	const char *tmpdir;         /* host path of the step's /tmp: new,
				     * empty, owned by the sandbox user */
	char **env;                 /* NAME=VALUE for the step (HOME aside) */
	const char *git_objects;    /* (nullable) nipa: the repository's
				     * objects, shown read-only */
	const char *label;          /* names the cgroup: [A-Za-z0-9_.-]+ */
	PgateCiLocalStopFunc stop;  /* (nullable) */
	gpointer stop_data;
} PgateCiLocalStepContext;

/**
 * pgate_ci_local__step_run:
 * @log: (nullable): the capped output and a status line are appended
 *
 * Runs @step as the configuration says (sandboxed unless sandbox = off)
 * and waits for it, at most timeout seconds.  Never fails: whatever goes
 * wrong is in the returned result's status and detail.
 * Returns: (transfer full).
 */
PgateCiLocalStepResult *pgate_ci_local__step_run(
	const PgateCiLocalStepContext *ctx, const PgateCiLocalStep *step,
	GString *log);

/* One measurement of a step's disk (diskuse.c). */
typedef struct {
	guint64 tree;            /* the checkout and /tmp as du counts them,
				  * files the step has open there included */
	guint64 unlinked;        /* files of the work area without a name
				  * left that the step holds open or mapped */
	guint unlinked_files;
	guint unsized;           /* of those, mapped files whose size cannot
				  * be read (not root): counted at fsize */
	gboolean too_deep;       /* a tree deeper than could be walked */
	char why[200];           /* "" or what could not be measured: then
				  * the measurement is over any limit */
} PgateCiLocalDiskUse;

/* The disk watchdog (diskuse.c): while a step runs, a thread measures
 * its work area (workdir and tmpdir, and what the step's processes hold
 * of it) again and again; none when the configuration sets no disk
 * limit. */
typedef struct {
	const char *paths[3];    /* checkout, /tmp */
	GPtrArray *areas;        /* (element-type utf8) the work area as the
				  * step's processes see it (their paths
				  * under /proc), and below it what is not
				  * of it: */
	GPtrArray *not_areas;    /* (element-type utf8) ro_binds
				  * destinations */
	guint64 limit;
	guint64 fsize;           /* 0: no bound on a file of unknown size */
	int desc_fd;             /* nipa: the file behind $DESC_FD, or -1 */
	GMutex m;
	GCond c;
	gboolean stop;
	/* which processes are the step's (under m): those of its sandbox's
	 * pid namespace once known, with sandbox = off those of its
	 * process group */
	gboolean sandboxed;
	gboolean ns_known;
	guint64 ns_dev, ns_ino;
	pid_t pgid;
	/* under m */
	gboolean over;           /* measured over the limit (or too deep,
				  * or unmeasurable) */
	PgateCiLocalDiskUse use; /* the last measurement; once over, the
				  * one that was */
	GThread *thread;
} PgateCiLocalDiskWatch;

/* @pgid: the step's process group (its first process's pid); @desc_fd:
 * nipa's description file, -1 without. */
void pgate_ci_local__disk_watch_start(PgateCiLocalDiskWatch *w,
				      const PgateCiLocalStepContext *ctx,
				      pid_t pgid, int desc_fd);
/* The sandbox's pid 1 is @pid (pinned by @pidfd, or -1): from now on the
 * processes of its pid namespace are the step's. */
void pgate_ci_local__disk_watch_sandbox(PgateCiLocalDiskWatch *w, pid_t pid,
					int pidfd);
/* Whether the watchdog has seen the limit passed. */
gboolean pgate_ci_local__disk_watch_over(PgateCiLocalDiskWatch *w);
/* Stops the watchdog; then, unless it saw the limit passed already, one
 * last measurement of what the step left.  Returns: whether the limit
 * was passed. */
gboolean pgate_ci_local__disk_watch_finish(PgateCiLocalDiskWatch *w);
/* After finish, the limit passed: what was measured, one line for the
 * log ("70.0 MiB in 3 file(s) ..."). (transfer full) */
char *pgate_ci_local__disk_watch_describe(PgateCiLocalDiskWatch *w);
/* "2 GiB", "1.5 GiB", "512 bytes": as the configuration says it.
 * (transfer full) */
char *pgate_ci_local__size_text(guint64 n);

/* A step's cgroup v1 groups (cgroup.c): memory and pids, as many as are
 * in use. */
typedef struct {
	char *dir[2];            /* memory, pids */
	int procs_fd[2];         /* their cgroup.procs, for the child */
	guint n;
} PgateCiLocalCgroup;

/* Sets up the groups the step will join; %FALSE (and nothing left behind)
 * when cgroups are not available here, with @note saying why. */
gboolean pgate_ci_local__cgroup_create(PgateCiLocalCgroup *cg,
				       const PgateCiLocalConfig *cfg,
				       const char *label, GString *note);
/* Closes the cgroup.procs descriptors (the child has joined). */
void pgate_ci_local__cgroup_close_fds(PgateCiLocalCgroup *cg);
/* SIGKILL to every process in the groups. */
void pgate_ci_local__cgroup_kill(const PgateCiLocalCgroup *cg);
/* Kills what is left in the groups, notes which limits were hit (in
 * @hit, nullable: "memory limit reached"), removes the groups; waits for
 * their processes to go (at most 5 s, then 2 s for the removal) unless
 * @wait is %FALSE. */
void pgate_ci_local__cgroup_destroy(PgateCiLocalCgroup *cg, GString *hit,
				    gboolean wait);
/* Removes the cgroups of steps whose runner died (killing what is left in
 * them); as root with cgroup = auto only. */
void pgate_ci_local__cgroup_sweep(const PgateCiLocalConfig *cfg);

/**
 * pgate_ci_local__bwrap_argv:
 * @bwrap: the bwrap executable, argv[0]
 *
 * bwrap's command line for @step (bwrap.c): the sandbox of
 * docs/ci-local.md, the step's argv last.  PGATE_ERROR_CONFIG when an
 * ro_binds source would show the step what patchgate keeps from it.
 * Returns: (transfer full) (nullable): the argv, %NULL-terminated.
 */
GPtrArray *pgate_ci_local__bwrap_argv(const PgateCiLocalStepContext *ctx,
				      const PgateCiLocalStep *step,
				      const char *bwrap, GError **error);

/* ---- checkout ------------------------------------------------------- */

/**
 * pgate_ci_local__checkout:
 * @repo_path: a repository (bare or not)
 * @commit: a hex object id
 * @dir: an existing empty directory (absolute)
 *
 * Writes the tree of @commit into @dir with libgit2; nothing else of the
 * repository changes.  With nipa = on, @dir is made a git work tree as
 * NIPA's scripts expect one (git diff HEAD~, git log): a .git whose HEAD
 * is @commit, whose index is its tree, and whose objects are the
 * repository's, as an alternate object store (read-only:
 * PGATE_CI_LOCAL_OBJECTS_MOUNT in the sandbox).  Then, when @cfg drops
 * privileges, gives everything to the sandbox user.
 */
gboolean pgate_ci_local__checkout(const PgateCiLocalConfig *cfg,
				  const char *repo_path, const char *commit,
				  const char *dir, GError **error);

/* (transfer full): the objects directory of @repo_path, or NULL. */
char *pgate_ci_local__git_objects(const char *repo_path);

/* Checks that each of @commits names a commit of @repo_path: NOT_FOUND
 * (the repository or a commit is missing) or INVALID. */
gboolean pgate_ci_local__commits_check(const char *repo_path,
				       const char *const *commits, guint n,
				       GError **error);

/* Removes @path and everything below it, never following symlinks; also
 * what a step made unreadable. */
gboolean pgate_ci_local__rm_rf(const char *path, GError **error);

/* Initialises libgit2 once per process. */
void pgate_ci_local__git_init(void);

/* ---- verdicts ------------------------------------------------------- */

/* The steps of one commit's run, in configuration order: those after the
 * first one that did not pass are NOT_RUN. */
typedef struct {
	char *commit;
	GPtrArray *steps;   /* (element-type PgateCiLocalStepResult) */
	guint warnings;     /* sum over the steps */
} PgateCiLocalRun;

PgateCiLocalRun *pgate_ci_local__run_new(const char *commit);
void pgate_ci_local__run_free(PgateCiLocalRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateCiLocalRun, pgate_ci_local__run_free)

/* The first step that did not pass, or %NULL. */
const PgateCiLocalStepResult *pgate_ci_local__run_first_bad(
	const PgateCiLocalRun *run);

/**
 * pgate_ci_local__judge:
 * @run: the commit's run
 * @before: (nullable): differential mode: the run it is compared with (the
 *   base, or in per-patch mode the previous commit)
 * @out_reason: (out) (transfer full): one line
 *
 * Without @before: SUCCESS when every step passed, else FAIL (ERROR when
 * the sandbox failed; FAIL "cancelled").  With @before: FAIL only when a
 * step fails that passed on @before; a step that fails there too, or that
 * @before never reached, gives WARNING ("fails on the base too"); more
 * warnings than @before give WARNING.
 */
PgateVerdict pgate_ci_local__judge(const PgateCiLocalRun *run,
				     const PgateCiLocalRun *before,
				     char **out_reason);

/* The worse of two verdicts (ERROR > FAIL > WARNING > SUCCESS > NONE). */
PgateVerdict pgate_ci_local__verdict_worst(PgateVerdict a,
					     PgateVerdict b);

/* A failing step's name and last lines, at most
 * PGATE_CI_LOCAL_SUMMARY_MAX bytes, valid UTF-8, no control characters
 * but newlines and tabs.  (transfer full) */
char *pgate_ci_local__summary(const char *headline,
			      const PgateCiLocalStepResult *step);

/* Makes hostile bytes fit for a one-line reason or a report: valid UTF-8,
 * control characters replaced, at most @max bytes (0: no limit); newlines
 * kept only when @keep_newlines.  (transfer full) */
char *pgate_ci_local__clean_text(const char *s, gssize len, gsize max,
				 gboolean keep_newlines);

/* ---- job directory files -------------------------------------------- */

gboolean pgate_ci_local__job_write(const char *path, const PgateCiJob *job,
				   PgateCiLocalMode mode, GError **error);
PgateCiJob *pgate_ci_local__job_read(const char *path, GError **error);

/* state.json: where a job without a result is, and who runs it. */
typedef struct {
	PgateJobState state;   /* QUEUED, RUNNING or LOST */
	gint64 pid;
	guint64 pid_start;    /* /proc/PID/stat starttime */
	char *boot_id;
	gint64 started;       /* RUNNING: since when */
	char *reason;         /* (nullable) LOST: why */
} PgateCiLocalState;

void pgate_ci_local__state_clear(PgateCiLocalState *st);
gboolean pgate_ci_local__state_write(const char *path,
				     const PgateCiLocalState *st,
				     GError **error);
gboolean pgate_ci_local__state_read(const char *path, PgateCiLocalState *out,
				    GError **error);

gboolean pgate_ci_local__result_write(const char *path,
				      const PgateCiResult *r, GError **error);
PgateCiResult *pgate_ci_local__result_read(const char *path, GError **error);

/* baseline/<digest>.json: a base commit's run for one step set. */
gboolean pgate_ci_local__baseline_write(const char *path,
					const PgateCiLocalRun *run,
					GError **error);
PgateCiLocalRun *pgate_ci_local__baseline_read(const char *path,
					       GError **error);

/* /proc/@pid/stat's starttime, 0 when there is no such process. */
guint64 pgate_ci_local__proc_start_time(gint64 pid);
/* The kernel's boot id; (transfer full), "" when unknown. */
char *pgate_ci_local__boot_id(void);

G_END_DECLS
