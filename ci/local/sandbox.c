/* sandbox.c - running one step of a local CI job.
 *
 * The step's process is forked here and, before it executes anything:
 *   1. leaves our process group (a new one, so that a timeout or a cancel
 *      kills the whole group), resets signals, gets /dev/null as stdin and
 *      one pipe as stdout and stderr; every other descriptor is closed;
 *   2. joins a cgroup v1 memory and pids group (running as root, when the
 *      hierarchy is mounted and writable; optional, made below the group
 *      this process is in, removed afterwards: cgroup.c);
 *   3. running as root: drops to the configured user (setgroups,
 *      setresgid, setresuid);
 *   4. sets its rlimits (AS, NPROC, CPU with soft < hard, NOFILE, FSIZE,
 *      CORE 0), no_new_privs, and dies with its parent;
 *   5. executes bwrap (sandbox = on), which executes the step's argv in a
 *      new user, mount, pid, network, ipc and uts namespace, the root
 *      read-only, the work directory on /work, a private /tmp, and a clean
 *      environment (bwrap.c); or, with sandbox = off, the argv itself.
 * Only async-signal-safe calls happen in the child: everything is prepared
 * before the fork.  The parent never runs a shell, and nothing of the job
 * is ever interpolated into a command line: argv arrays only.
 *
 * Whether the command itself ran is learnt from bwrap's --json-status-fd:
 * bwrap writes {"exit-code": N} only once the command has exited.  Without
 * it, bwrap failed first: the sandbox could not be set up (status ERROR,
 * the command never ran), or bwrap could not execute the command (FAILED,
 * like exit 127).
 *
 * pgate_ci_local__step_run() goes through the phases below in order: the
 * command line, the spawn, the output pumped while the limits (time,
 * disk, cancel) are watched, the reaping, the step's status.
 */
#include "ci/local/local-private.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define STATUS_MAX 8192          /* bwrap's JSON status; more is ignored */
#define TAIL_KEEP 16384          /* output kept for the summary */
#define DRAIN_GRACE_US (2 * G_USEC_PER_SEC)

const char *
pgate_ci_local__step_status_to_string(PgateCiLocalStepStatus s)
{
	switch (s) {
	case PGATE_CI_LOCAL_STEP_NOT_RUN: return "not-run";
	case PGATE_CI_LOCAL_STEP_PASSED: return "passed";
	case PGATE_CI_LOCAL_STEP_FAILED: return "failed";
	case PGATE_CI_LOCAL_STEP_TIMEOUT: return "timeout";
	case PGATE_CI_LOCAL_STEP_CANCELLED: return "cancelled";
	case PGATE_CI_LOCAL_STEP_ERROR: return "error";
	}
	return "unknown";
}

gboolean
pgate_ci_local__step_status_from_string(const char *s,
					PgateCiLocalStepStatus *out)
{
	for (int i = PGATE_CI_LOCAL_STEP_NOT_RUN;
	     i <= PGATE_CI_LOCAL_STEP_ERROR; i++) {
		if (g_strcmp0(s, pgate_ci_local__step_status_to_string(i)) ==
		    0) {
			*out = (PgateCiLocalStepStatus)i;
			return TRUE;
		}
	}
	return FALSE;
}

PgateCiLocalStepResult *
pgate_ci_local__step_result_new(const char *name)
{
	PgateCiLocalStepResult *r = g_new0(PgateCiLocalStepResult, 1);

	r->name = g_strdup(name);
	r->exit_code = -1;
	return r;
}

void
pgate_ci_local__step_result_free(PgateCiLocalStepResult *r)
{
	if (!r)
		return;
	g_free(r->name);
	g_free(r->detail);
	g_free(r->tail);
	g_free(r->desc);
	g_free(r);
}

/* ---- output: head and tail kept, warnings counted ------------------- */

typedef struct {
	gsize head_max, tail_max;
	GByteArray *head;
	guint8 *ring;            /* tail_max bytes */
	gsize ring_len, ring_pos;
	guint64 total;
	/* the current line, for the warning regex */
	const GRegex *regex;
	GByteArray *line;
	gboolean line_long;      /* over PGATE_CI_LOCAL_MAX_LINE: matched */
	guint warnings;
} Capture;

static void
capture_init(Capture *c, gsize max, const GRegex *regex)
{
	memset(c, 0, sizeof *c);
	c->head_max = max / 2;
	c->tail_max = max - c->head_max;
	c->head = g_byte_array_new();
	c->ring = g_malloc(c->tail_max);
	c->regex = regex;
	c->line = g_byte_array_new();
}

static void
capture_clear(Capture *c)
{
	g_byte_array_unref(c->head);
	g_free(c->ring);
	g_byte_array_unref(c->line);
}

static void
match_line(Capture *c)
{
	if (c->regex && g_regex_match_full(c->regex, (const char *)c->line->data,
					   (gssize)c->line->len, 0, 0, NULL,
					   NULL))
		c->warnings++;
}

static void
capture_lines(Capture *c, const guint8 *p, gsize n)
{
	if (c->regex == NULL)
		return;
	while (n > 0) {
		const guint8 *nl = memchr(p, '\n', n);
		gsize len = nl ? (gsize)(nl - p) : n;

		if (!c->line_long) {
			gsize room = PGATE_CI_LOCAL_MAX_LINE - c->line->len;

			g_byte_array_append(c->line, p, (guint)MIN(len, room));
			if (len >= room && !nl) {
				/* overlong: match its beginning once */
				match_line(c);
				c->line_long = TRUE;
			}
		}
		if (nl) {
			if (!c->line_long)
				match_line(c);
			g_byte_array_set_size(c->line, 0);
			c->line_long = FALSE;
			len++;
		}
		p += len;
		n -= len;
	}
}

static void
capture_add(Capture *c, const guint8 *p, gsize n)
{
	gsize take;

	capture_lines(c, p, n);
	c->total += n;
	take = MIN(n, c->head_max - c->head->len);
	g_byte_array_append(c->head, p, (guint)take);
	p += take;
	n -= take;
	if (n >= c->tail_max) {
		p += n - c->tail_max;
		n = c->tail_max;
	}
	while (n > 0) {
		gsize chunk = MIN(n, c->tail_max - c->ring_pos);

		memcpy(c->ring + c->ring_pos, p, chunk);
		c->ring_pos = (c->ring_pos + chunk) % c->tail_max;
		c->ring_len = MIN(c->ring_len + chunk, c->tail_max);
		p += chunk;
		n -= chunk;
	}
}

static void
capture_finish(Capture *c)
{
	if (c->line->len > 0 && !c->line_long)
		match_line(c);
}

/* The tail in order. (transfer full) */
static GByteArray *
capture_tail(const Capture *c)
{
	GByteArray *t = g_byte_array_sized_new((guint)c->ring_len);
	gsize start = (c->ring_pos + c->tail_max - c->ring_len) % c->tail_max;
	gsize first = MIN(c->ring_len, c->tail_max - start);

	g_byte_array_append(t, c->ring + start, (guint)first);
	g_byte_array_append(t, c->ring, (guint)(c->ring_len - first));
	return t;
}

/* The output as kept: all of it, or its head, a line saying how much was
 * cut, and its tail. */
static void
capture_to_log(const Capture *c, GString *log)
{
	g_autoptr(GByteArray) tail = capture_tail(c);
	guint64 cut = c->total - c->head->len - tail->len;

	g_string_append_len(log, (const char *)c->head->data, c->head->len);
	if (cut > 0) {
		if (c->head->len && c->head->data[c->head->len - 1] != '\n')
			g_string_append_c(log, '\n');
		g_string_append_printf(log,
				       "[... patchgate: %" G_GUINT64_FORMAT
				       " bytes of output cut here (max_output "
				       "= %zu) ...]\n", cut,
				       c->head_max + c->tail_max);
	}
	g_string_append_len(log, (const char *)tail->data, tail->len);
	if (c->total > 0 && log->len && log->str[log->len - 1] != '\n')
		g_string_append_c(log, '\n');
}

/* The end of the output (at most TAIL_KEEP bytes), for the summary;
 * "" when there was none (an empty GByteArray has no data, and
 * g_strndup(NULL, 0) is NULL). */
static char *
capture_tail_text(const Capture *c)
{
	g_autoptr(GByteArray) tail = capture_tail(c);
	g_autoptr(GByteArray) all = g_byte_array_new();
	gsize off;

	if (c->total <= c->head->len + tail->len)
		g_byte_array_append(all, c->head->data, c->head->len);
	g_byte_array_append(all, tail->data, tail->len);
	if (all->len == 0)
		return g_strdup("");
	off = all->len > TAIL_KEEP ? all->len - TAIL_KEEP : 0;
	return g_strndup((const char *)all->data + off, all->len - off);
}

/* ---- the child ------------------------------------------------------ */

enum {
	STAGE_SETUP = 1,
	STAGE_CGROUP,
	STAGE_GROUPS,
	STAGE_GID,
	STAGE_UID,
	STAGE_RLIMIT,
	STAGE_PRCTL,
	STAGE_CHDIR,
	STAGE_EXEC,
};

static const char *
stage_name(int stage)
{
	switch (stage) {
	case STAGE_SETUP: return "setting up descriptors";
	case STAGE_CGROUP: return "joining the cgroup";
	case STAGE_GROUPS: return "setgroups";
	case STAGE_GID: return "setresgid";
	case STAGE_UID: return "setresuid";
	case STAGE_RLIMIT: return "setrlimit";
	case STAGE_PRCTL: return "prctl";
	case STAGE_CHDIR: return "chdir";
	case STAGE_EXEC: return "execve";
	}
	return "?";
}

#define MAX_LIMITS 7

typedef struct {
	int null_fd, out_w, status_w, err_w;
	int desc_w;        /* nipa: becomes PGATE_CI_LOCAL_DESC_FD, or -1 */
	int cg_fd[2];
	guint n_cg;
	gboolean drop;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	gsize ngroups;
	int n_lim;
	int res[MAX_LIMITS];
	struct rlimit lim[MAX_LIMITS];
	const char *dir;
	const char *exe;
	char *const *argv;
	char *const *envp;
	pid_t parent;
} Child;

static void G_GNUC_NORETURN
child_fail(const Child *c, int stage)
{
	int msg[2] = { stage, errno };
	ssize_t n = write(c->err_w, msg, sizeof msg);

	(void)n;
	_exit(127);
}

static void
cloexec_from(int first)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)first, ~0U,
		    CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	{
		struct rlimit rl;
		int max = 65536;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
			max = (int)rl.rlim_cur;
		for (int fd = first; fd < max; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
}

/* Between fork and exec: async-signal-safe calls only. */
static void G_GNUC_NORETURN
child_main(const Child *c)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (setpgid(0, 0) < 0 || dup2(c->null_fd, 0) < 0 ||
	    dup2(c->out_w, 1) < 0 || dup2(c->out_w, 2) < 0 ||
	    (c->status_w >= 0 && dup2(c->status_w, 3) < 0))
		child_fail(c, STAGE_SETUP);
	if (c->desc_w >= 0) {
		/* NIPA's $DESC_FD; nothing else is left below it */
		if (dup2(c->desc_w, PGATE_CI_LOCAL_DESC_FD) < 0)
			child_fail(c, STAGE_SETUP);
		if (c->status_w < 0)
			close(3);
		cloexec_from(PGATE_CI_LOCAL_DESC_FD + 1);
	} else {
		/* everything else is closed by the exec, the error pipe
		 * last */
		cloexec_from(c->status_w >= 0 ? 4 : 3);
	}

	for (guint i = 0; i < c->n_cg; i++)
		if (write(c->cg_fd[i], "0", 1) != 1)
			child_fail(c, STAGE_CGROUP);
	if (c->drop) {
		if (setgroups(c->ngroups, c->groups) < 0)
			child_fail(c, STAGE_GROUPS);
		if (setresgid(c->gid, c->gid, c->gid) < 0)
			child_fail(c, STAGE_GID);
		if (setresuid(c->uid, c->uid, c->uid) < 0)
			child_fail(c, STAGE_UID);
		if (getuid() != c->uid || geteuid() != c->uid)
			child_fail(c, STAGE_UID);
	}
	/* after the uid change, so that it does not count against them */
	for (int i = 0; i < c->n_lim; i++)
		if (setrlimit(c->res[i], &c->lim[i]) < 0)
			child_fail(c, STAGE_RLIMIT);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(c, STAGE_PRCTL);
	if (getppid() != c->parent)
		_exit(127);
	if (chdir(c->dir) < 0)
		child_fail(c, STAGE_CHDIR);
	execve(c->exe, c->argv, c->envp);
	child_fail(c, STAGE_EXEC);
}

/* ---- the parent ----------------------------------------------------- */

static int
high_fd(int fd)
{
	int h;

	if (fd < 0)
		return -1;
	h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	close(fd);
	return h;
}

static gboolean
make_pipe(int *r, int *w)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return FALSE;
	*r = high_fd(p[0]);
	*w = high_fd(p[1]);
	if (*r < 0 || *w < 0) {
		if (*r >= 0)
			close(*r);
		if (*w >= 0)
			close(*w);
		return FALSE;
	}
	fcntl(*r, F_SETFL, fcntl(*r, F_GETFL) | O_NONBLOCK);
	return TRUE;
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static char *
find_in_path(const char *prog, const char *path)
{
	g_auto(GStrv) dirs = NULL;

	if (strchr(prog, '/'))
		return g_strdup(prog);
	dirs = g_strsplit(path, ":", -1);
	for (guint i = 0; dirs[i]; i++) {
		g_autofree char *cand = g_build_filename(dirs[i], prog, NULL);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_mode & 0111))
			return g_steal_pointer(&cand);
	}
	return NULL;
}

static char *
argv_text(char **argv)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; argv[i]; i++) {
		gboolean plain = argv[i][0] != '\0';

		for (const char *p = argv[i]; *p && plain; p++)
			plain = g_ascii_isalnum(*p) || strchr("-_./=:,+@%", *p);
		if (i)
			g_string_append_c(s, ' ');
		if (plain) {
			g_string_append(s, argv[i]);
		} else {
			g_autofree char *q = g_shell_quote(argv[i]);

			g_string_append(s, q);
		}
	}
	return g_string_free(s, FALSE);
}

static void
add_limit(Child *c, int res, guint64 soft, guint64 hard)
{
	g_assert(c->n_lim < MAX_LIMITS);
	c->res[c->n_lim] = res;
	c->lim[c->n_lim].rlim_cur = (rlim_t)soft;
	c->lim[c->n_lim].rlim_max = (rlim_t)hard;
	c->n_lim++;
}

static void
set_limits(Child *c, const PgateCiLocalConfig *cfg)
{
	if (cfg->memory)
		add_limit(c, RLIMIT_AS, cfg->memory, cfg->memory);
	if (cfg->pids)
		add_limit(c, RLIMIT_NPROC, cfg->pids, cfg->pids);
	/* SIGXCPU first, SIGKILL 5 s later */
	if (cfg->cpu_s)
		add_limit(c, RLIMIT_CPU, cfg->cpu_s, (guint64)cfg->cpu_s + 5);
	add_limit(c, RLIMIT_NOFILE, cfg->nofile, cfg->nofile);
	if (cfg->fsize)
		add_limit(c, RLIMIT_FSIZE, cfg->fsize, cfg->fsize);
	add_limit(c, RLIMIT_CORE, 0, 0);
}

/* The last line of @out that starts with "bwrap: ", cleaned. */
static char *
bwrap_message(const char *out)
{
	const char *last = NULL, *p = out;

	while ((p = strstr(p, "bwrap: ")) != NULL) {
		if (p == out || p[-1] == '\n')
			last = p;
		p++;
	}
	if (last == NULL)
		return NULL;
	p = strchr(last, '\n');
	return pgate_ci_local__clean_text(last, p ? p - last : -1, 400, FALSE);
}

static gboolean
status_exit_code(const GString *status, int *out)
{
	const char *p = strstr(status->str, "\"exit-code\"");

	if (p == NULL)
		return FALSE;
	p = strchr(p, ':');
	if (p == NULL)
		return FALSE;
	*out = (int)g_ascii_strtoll(p + 1, NULL, 10);
	return TRUE;
}

static void
set_error(PgateCiLocalStepResult *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
set_error(PgateCiLocalStepResult *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_free(r->detail);
	r->detail = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	r->status = PGATE_CI_LOCAL_STEP_ERROR;
}

/* ---- running a step ------------------------------------------------- */

/* One step from its command line to its status: what the phases of
 * pgate_ci_local__step_run() share.  Descriptors are -1 when closed. */
typedef struct {
	const PgateCiLocalStepContext *ctx;
	const PgateCiLocalStep *step;
	PgateCiLocalStepResult *r;  /* (not owned) what the step came to */
	/* what is executed (bwrap, or with sandbox = off the step's own
	 * program), with which argv and environment */
	char *exe;
	GPtrArray *argv, *envp;
	int null_fd, out_r, out_w, st_r, st_w, err_r, err_w;
	int desc_fd;       /* nipa: the file the step's $DESC_FD writes to */
	pid_t pid;
	int inner_pidfd;   /* bwrap's pid 1 of the sandbox, once known */
	gboolean inner_noted; /* its pid was read from bwrap's status */
	PgateCiLocalCgroup cg;
	gboolean has_cg;
	Capture cap;       /* the step's output */
	GString *status;   /* bwrap's --json-status-fd */
	PgateCiLocalDiskWatch disk;
	gboolean disk_started;
	gint64 t0;         /* when the step began */
	int wstatus;
	gint64 exit_time, kill_time;
	gboolean out_eof, st_eof, exited;
	gboolean killed, timed_out, cancelled, disk_hit;
} Running;

static void
running_init(Running *run, const PgateCiLocalStepContext *ctx,
	     const PgateCiLocalStep *step, PgateCiLocalStepResult *r)
{
	memset(run, 0, sizeof *run);
	run->t0 = g_get_monotonic_time();
	run->ctx = ctx;
	run->step = step;
	run->r = r;
	run->null_fd = run->out_r = run->out_w = -1;
	run->st_r = run->st_w = run->err_r = run->err_w = -1;
	run->desc_fd = -1;
	run->pid = -1;
	run->inner_pidfd = -1;
	run->st_eof = TRUE;
	run->status = g_string_new(NULL);
	capture_init(&run->cap, ctx->cfg->max_output, ctx->cfg->warning_regex);
}

/* Whatever the step left behind, however far it got. */
static void
running_clear(Running *run)
{
	if (run->disk_started)
		pgate_ci_local__disk_watch_finish(&run->disk);
	if (run->has_cg)
		pgate_ci_local__cgroup_destroy(&run->cg, NULL, TRUE);
	close_fd(&run->out_r);
	close_fd(&run->out_w);
	close_fd(&run->st_r);
	close_fd(&run->st_w);
	close_fd(&run->err_r);
	close_fd(&run->err_w);
	close_fd(&run->null_fd);
	close_fd(&run->desc_fd);
	close_fd(&run->inner_pidfd);
	capture_clear(&run->cap);
	g_free(run->exe);
	g_clear_pointer(&run->argv, g_ptr_array_unref);
	g_clear_pointer(&run->envp, g_ptr_array_unref);
	g_string_free(run->status, TRUE);
}

/* bwrap's status names the sandbox's pid 1 (it runs in a session of its
 * own, out of reach of our process group kill): pin it with a pidfd.
 * The processes of its pid namespace are the step's, whose open files
 * the disk watchdog counts. */
static void
note_inner_pid(Running *run, const GString *status)
{
	const char *p;
	gint64 pid;

	if (run->inner_noted)
		return;
	p = strstr(status->str, "\"child-pid\"");
	if (p == NULL || (p = strchr(p, ':')) == NULL)
		return;
	pid = g_ascii_strtoll(p + 1, NULL, 10);
	if (pid <= 1 || pid > G_MAXINT)
		return;
	run->inner_noted = TRUE;
#if defined(SYS_pidfd_open)
	run->inner_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
	if (run->disk_started)
		pgate_ci_local__disk_watch_sandbox(&run->disk, (pid_t)pid,
						   run->inner_pidfd);
}

static void
kill_all(Running *run)
{
	kill(-run->pid, SIGKILL);
	kill(run->pid, SIGKILL);
#if defined(SYS_pidfd_send_signal)
	if (run->inner_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, run->inner_pidfd, SIGKILL, NULL,
			0);
#endif
	if (run->has_cg)
		pgate_ci_local__cgroup_kill(&run->cg);
}

static void
read_ready(int *fd, Capture *cap, GString *status, gboolean *eof)
{
	guint8 buf[65536];

	for (;;) {
		ssize_t n = read(*fd, buf, sizeof buf);

		if (n > 0) {
			if (cap)
				capture_add(cap, buf, (gsize)n);
			else if (status->len < STATUS_MAX)
				g_string_append_len(status, (const char *)buf,
						    MIN((gsize)n, STATUS_MAX -
							status->len));
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* end of file, or an error: either way nothing more */
		*eof = TRUE;
		close_fd(fd);
		return;
	}
}

/* ---- 1. the command line ---- */

/* bwrap, with the step's argv at the end of its own; the environment is
 * bwrap's, the step's is set by bwrap. */
static gboolean
command_sandboxed(Running *run)
{
	const PgateCiLocalConfig *cfg = run->ctx->cfg;
	g_autoptr(GError) local = NULL;

	run->exe = strchr(cfg->bwrap, '/') ? g_strdup(cfg->bwrap)
					   : g_find_program_in_path(cfg->bwrap);
	if (run->exe == NULL || access(run->exe, X_OK) < 0) {
		set_error(run->r, "sandbox: bwrap (\"%s\") not found or not "
			  "executable; the step was not run (install "
			  "bubblewrap, or see bwrap in docs/ci-local.md)",
			  cfg->bwrap);
		return FALSE;
	}
	run->argv = pgate_ci_local__bwrap_argv(run->ctx, run->step, run->exe,
					       &local);
	if (run->argv == NULL) {
		set_error(run->r, "sandbox: %s; the step was not run",
			  local->message);
		return FALSE;
	}
	g_ptr_array_add(run->envp, g_strdup("PATH=" PGATE_CI_LOCAL_PATH));
	return TRUE;
}

/* sandbox = off: the step's program, found in the sandbox's PATH, with
 * the step's environment. */
static gboolean
command_direct(Running *run)
{
	const PgateCiLocalStepContext *ctx = run->ctx;
	char **argv = run->step->argv;

	run->exe = find_in_path(argv[0], PGATE_CI_LOCAL_PATH);
	if (run->exe == NULL) {
		run->r->status = PGATE_CI_LOCAL_STEP_FAILED;
		run->r->exit_code = 127;
		run->r->detail = g_strdup_printf("cannot execute %s: not "
						 "found in PATH", argv[0]);
		return FALSE;
	}
	run->argv = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; argv[i]; i++)
		g_ptr_array_add(run->argv, g_strdup(argv[i]));
	g_ptr_array_add(run->argv, NULL);
	g_ptr_array_add(run->envp, g_strdup_printf("HOME=%s", ctx->workdir));
	g_ptr_array_add(run->envp, g_strdup_printf("TMPDIR=%s", ctx->tmpdir));
	for (guint i = 0; ctx->env && ctx->env[i]; i++)
		g_ptr_array_add(run->envp, g_strdup(ctx->env[i]));
	return TRUE;
}

/* What to execute, with which argv and environment.  %FALSE: the step
 * cannot run, and run->r says why. */
static gboolean
step_command(Running *run)
{
	run->envp = g_ptr_array_new_with_free_func(g_free);
	if (run->ctx->cfg->sandbox ? !command_sandboxed(run)
				   : !command_direct(run))
		return FALSE;
	g_ptr_array_add(run->envp, NULL);
	return TRUE;
}

/* ---- 2. the child, spawned ---- */

/* nipa: the file behind the step's $DESC_FD, a file without a name
 * beside the step's work area (out of the sandbox's sight: the step has
 * only the descriptor), read back through our own descriptor. */
static gboolean
open_desc(Running *run)
{
	g_autofree char *dir = g_path_get_dirname(run->ctx->tmpdir);
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0) {
		g_autofree char *templ = g_build_filename(dir, ".desc-XXXXXX",
							  NULL);

		fd = g_mkstemp_full(templ, O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			unlink(templ);
	}
	run->desc_fd = high_fd(fd);
	if (run->desc_fd < 0) {
		set_error(run->r, "sandbox: the description file (nipa): %s",
			  g_strerror(errno));
		return FALSE;
	}
	return TRUE;
}

/* nipa: what the step wrote to $DESC_FD, one line; NULL when nothing. */
static char *
read_desc(int fd)
{
	char buf[PGATE_CI_LOCAL_DESC_MAX * 4 + 1];
	ssize_t n;
	g_autofree char *text = NULL;

	if (fd < 0)
		return NULL;
	do
		n = pread(fd, buf, sizeof buf - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	text = pgate_ci_local__clean_text(buf, n, PGATE_CI_LOCAL_DESC_MAX,
					  FALSE);
	g_strstrip(text);
	return *text ? g_steal_pointer(&text) : NULL;
}

/* /dev/null, the output pipe, the error pipe of the child's setup and,
 * sandboxed, bwrap's status pipe. */
static gboolean
open_pipes(Running *run)
{
	run->null_fd = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (run->null_fd < 0 || !make_pipe(&run->out_r, &run->out_w) ||
	    !make_pipe(&run->err_r, &run->err_w) ||
	    (run->ctx->cfg->sandbox && !make_pipe(&run->st_r, &run->st_w))) {
		set_error(run->r, "sandbox: pipe: %s", g_strerror(errno));
		return FALSE;
	}
	run->st_eof = run->st_r < 0;
	if (run->ctx->cfg->nipa && !open_desc(run))
		return FALSE;
	return TRUE;
}

static void
log_sandbox(GString *log, const PgateCiLocalConfig *cfg, const char *cgnote)
{
	g_string_append_printf(log, "== sandbox: %s, ",
			       cfg->sandbox ? "bwrap" : "OFF");
	if (cfg->drop)
		g_string_append_printf(log, "user %s (uid %u)", cfg->user,
				       (unsigned)cfg->uid);
	else
		g_string_append_printf(log, "uid %u (not root)",
				       (unsigned)geteuid());
	g_string_append_printf(log, ", cgroup %s\n", cgnote);
}

/* Everything the child needs, prepared before the fork. */
static void
child_prepare(Child *c, const Running *run)
{
	const PgateCiLocalConfig *cfg = run->ctx->cfg;

	memset(c, 0, sizeof *c);
	c->null_fd = run->null_fd;
	c->out_w = run->out_w;
	c->status_w = run->st_w;
	c->err_w = run->err_w;
	c->desc_w = run->desc_fd;
	for (guint i = 0; run->has_cg && i < run->cg.n; i++)
		c->cg_fd[c->n_cg++] = run->cg.procs_fd[i];
	c->drop = cfg->drop;
	c->uid = cfg->uid;
	c->gid = cfg->gid;
	c->groups = (const gid_t *)cfg->groups->data;
	c->ngroups = cfg->groups->len;
	set_limits(c, cfg);
	c->dir = cfg->sandbox ? "/" : run->ctx->workdir;
	c->exe = run->exe;
	c->argv = (char *const *)run->argv->pdata;
	c->envp = (char *const *)run->envp->pdata;
	c->parent = getpid();
}

/* Whether the child got as far as its exec: it reports a failure before
 * it on the error pipe, or the exec closes the pipe.  %FALSE: the step
 * did not run (reaped), and run->r says why. */
static gboolean
child_started(Running *run)
{
	int child_err[2] = { 0, 0 };
	ssize_t n;

	do
		n = read(run->err_r, child_err, sizeof child_err);
	while (n < 0 && errno == EINTR);
	close_fd(&run->err_r);
	if (n != (ssize_t)sizeof child_err)
		return TRUE;
	waitpid(run->pid, &run->wstatus, 0);
	run->pid = -1;
	if (!run->ctx->cfg->sandbox && child_err[0] == STAGE_EXEC) {
		run->r->status = PGATE_CI_LOCAL_STEP_FAILED;
		run->r->exit_code = 127;
		run->r->detail = g_strdup_printf("cannot execute %s: %s",
						 run->step->argv[0],
						 g_strerror(child_err[1]));
	} else {
		set_error(run->r, "sandbox: %s%s%s: %s; the step was not run",
			  stage_name(child_err[0]),
			  child_err[0] == STAGE_EXEC ? " " : "",
			  child_err[0] == STAGE_EXEC ? run->exe : "",
			  g_strerror(child_err[1]));
	}
	return FALSE;
}

/* Pipes, cgroups, the fork; %TRUE once the child executes the command,
 * else run->r says why not. */
static gboolean
step_spawn(Running *run, GString *log)
{
	const PgateCiLocalConfig *cfg = run->ctx->cfg;
	g_autoptr(GString) cgnote = g_string_new(NULL);
	Child c;

	if (!open_pipes(run))
		return FALSE;
	run->has_cg = pgate_ci_local__cgroup_create(&run->cg, cfg,
						    run->ctx->label, cgnote);
	if (log)
		log_sandbox(log, cfg, cgnote->str);
	child_prepare(&c, run);

	run->pid = fork();
	if (run->pid == 0)
		child_main(&c);
	if (run->pid < 0) {
		set_error(run->r, "sandbox: fork: %s", g_strerror(errno));
		return FALSE;
	}
	setpgid(run->pid, run->pid);
	close_fd(&run->out_w);
	close_fd(&run->st_w);
	close_fd(&run->err_w);
	close_fd(&run->null_fd);
	if (run->has_cg)
		pgate_ci_local__cgroup_close_fds(&run->cg);
	return child_started(run);
}

/* ---- 3. its output pumped, the limits watched ---- */

/* Notes the child's exit, without waiting for it. */
static void
poll_exit(Running *run)
{
	pid_t w;

	if (run->exited)
		return;
	w = waitpid(run->pid, &run->wstatus, WNOHANG);
	if (w == run->pid || (w < 0 && errno != EINTR)) {
		run->exited = TRUE;
		run->exit_time = g_get_monotonic_time();
		if (w < 0) /* reaped by someone else */
			run->wstatus = W_EXITCODE(0, SIGKILL);
	}
}

/* Kills the step when it is cancelled, over its disk limit or its time,
 * or when it exited but strays still hold the pipe; once killed, kills
 * again each second until it exits.  Returns %FALSE when the pipes are no
 * longer worth reading: it exited and was killed, and still something
 * holds them. */
static gboolean
watch_limits(Running *run, gint64 now, gint64 deadline)
{
	const PgateCiLocalStepContext *ctx = run->ctx;

	if (!run->killed) {
		if (ctx->stop && ctx->stop(ctx->stop_data))
			run->cancelled = run->killed = TRUE;
		else if (pgate_ci_local__disk_watch_over(&run->disk))
			run->disk_hit = run->killed = TRUE;
		else if (now >= deadline)
			run->timed_out = run->killed = TRUE;
		else if (run->exited && now - run->exit_time > DRAIN_GRACE_US)
			run->killed = TRUE; /* strays hold the pipe */
		if (run->killed) {
			kill_all(run);
			run->kill_time = now;
		}
	} else if (run->exited && now - run->kill_time > DRAIN_GRACE_US) {
		return FALSE; /* whatever still holds the pipe: stop reading */
	} else if (!run->exited && now - run->kill_time > G_USEC_PER_SEC) {
		kill_all(run);
		run->kill_time = now;
	}
	return TRUE;
}

/* Waits a moment for output (at most until the deadline, or 50 ms once
 * killed) and reads what came. */
static void
read_output(Running *run, gint64 now, gint64 deadline)
{
	struct pollfd pfd[2];
	nfds_t nfds = 0;
	gint64 wait_us;

	if (run->out_r >= 0)
		pfd[nfds++] = (struct pollfd){ .fd = run->out_r,
					       .events = POLLIN };
	if (run->st_r >= 0)
		pfd[nfds++] = (struct pollfd){ .fd = run->st_r,
					       .events = POLLIN };
	wait_us = run->killed ? 50000 : MIN(100000, MAX(deadline - now, 0));
	if (nfds > 0)
		poll(pfd, nfds, (int)(wait_us / 1000) + 1);
	else
		g_usleep((gulong)MAX(wait_us, 1000));
	if (run->out_r >= 0)
		read_ready(&run->out_r, &run->cap, NULL, &run->out_eof);
	if (run->st_r >= 0) {
		read_ready(&run->st_r, NULL, run->status, &run->st_eof);
		note_inner_pid(run, run->status);
	}
}

/* Until the step has exited and its pipes are closed, or it was killed
 * and they stay open. */
static void
step_pump(Running *run)
{
	gint64 deadline = run->t0 +
			  (gint64)run->ctx->cfg->timeout_s * G_USEC_PER_SEC;

	pgate_ci_local__disk_watch_start(&run->disk, run->ctx, run->pid,
					 run->desc_fd);
	run->disk_started = TRUE;
	for (;;) {
		gint64 now;

		poll_exit(run);
		if (run->exited && run->out_eof && run->st_eof)
			break;
		now = g_get_monotonic_time();
		if (!watch_limits(run, now, deadline))
			break;
		read_output(run, now, deadline);
	}
}

/* ---- 4. reaped ---- */

/* The step waited for, and with its process group (and with a cgroup
 * every process) gone; the output and the disk watch closed. */
static void
step_reap(Running *run)
{
	close_fd(&run->out_r);
	close_fd(&run->st_r);
	if (!run->exited)
		waitpid(run->pid, &run->wstatus, 0);
	/* the process group, and with a cgroup every process, is gone */
	kill(-run->pid, SIGKILL);
	run->pid = -1;
	capture_finish(&run->cap);
	run->r->warnings = run->cap.warnings;
	run->disk_started = FALSE;
	if (pgate_ci_local__disk_watch_finish(&run->disk) && !run->cancelled)
		run->disk_hit = TRUE;
}

/* ---- 5. classified ---- */

/* "killed by signal 9 (SIGKILL)" into r. */
static void
set_signal(PgateCiLocalStepResult *r, int sig)
{
	const char *abbrev = sigabbrev_np(sig);

	r->signal = sig;
	r->detail = g_strdup_printf("killed by signal %d (SIG%s)", r->signal,
				    abbrev ? abbrev : "?");
}

/* The status from how the step ended: a limit, a signal, its exit code
 * (sandboxed, from bwrap's status), or bwrap's failure. */
static void
classify_end(Running *run)
{
	const PgateCiLocalConfig *cfg = run->ctx->cfg;
	PgateCiLocalStepResult *r = run->r;
	int wstatus = run->wstatus;

	if (run->disk_hit) {
		g_autofree char *lim = pgate_ci_local__size_text(cfg->disk);

		set_error(r, "disk limit %s reached (the checkout and /tmp "
			  "together; disk in docs/ci-local.md)", lim);
	} else if (run->cancelled) {
		r->status = PGATE_CI_LOCAL_STEP_CANCELLED;
	} else if (run->timed_out) {
		r->status = PGATE_CI_LOCAL_STEP_TIMEOUT;
		r->detail = g_strdup_printf("timed out after %u s",
					    cfg->timeout_s);
	} else if (WIFSIGNALED(wstatus)) {
		r->status = PGATE_CI_LOCAL_STEP_FAILED;
		set_signal(r, WTERMSIG(wstatus));
	} else if (!cfg->sandbox) {
		r->exit_code = WEXITSTATUS(wstatus);
		r->status = r->exit_code == 0 ? PGATE_CI_LOCAL_STEP_PASSED
					      : PGATE_CI_LOCAL_STEP_FAILED;
	} else if (status_exit_code(run->status, &r->exit_code)) {
		r->status = r->exit_code == 0 ? PGATE_CI_LOCAL_STEP_PASSED
					      : PGATE_CI_LOCAL_STEP_FAILED;
		if (r->exit_code > 128 && r->exit_code < 128 + NSIG)
			set_signal(r, r->exit_code - 128);
	} else {
		/* bwrap gave up before the command ran: its output is
		 * bwrap's own */
		g_autofree char *out = capture_tail_text(&run->cap);
		g_autofree char *msg = bwrap_message(out);

		set_error(r, "sandbox: %s; the step was not run",
			  msg ? msg : "bwrap failed before running the command");
	}
	/* a limit of ours stopped it (only our rlimits send these): not
	 * the patch's failure but an infrastructure error, retried and
	 * never reported as a fail (issue #41) */
	if (r->status == PGATE_CI_LOCAL_STEP_FAILED &&
	    (r->signal == SIGXCPU || r->signal == SIGXFSZ)) {
		g_autofree char *was = g_steal_pointer(&r->detail);
		g_autofree char *lim = r->signal == SIGXFSZ
			? pgate_ci_local__size_text(cfg->fsize)
			: g_strdup_printf("%u s", cfg->cpu_s);

		set_error(r, "stopped by the [ci.local] %s limit (%s): %s",
			  r->signal == SIGXFSZ ? "fsize" : "cpu", lim, was);
	}
	/* NIPA's core/test.py: 250 is a warning; 111 a test that is
	 * pending or skipped */
	if (cfg->nipa && r->status == PGATE_CI_LOCAL_STEP_FAILED &&
	    r->signal == 0 && (r->exit_code == 250 || r->exit_code == 111)) {
		r->status = PGATE_CI_LOCAL_STEP_PASSED;
		r->nipa = r->exit_code == 250 ? PGATE_CI_LOCAL_NIPA_WARNING
					      : PGATE_CI_LOCAL_NIPA_SKIP;
	}
	if (cfg->nipa)
		r->desc = read_desc(run->desc_fd);
}

/* Sandboxed, exit 126 or 127 with nothing said: what the timeout
 * backstop says when it cannot execute the step's program. */
static void
explain_not_executed(Running *run)
{
	PgateCiLocalStepResult *r = run->r;
	g_autofree char *out = NULL;
	const char *p;

	if (!run->ctx->cfg->sandbox ||
	    r->status != PGATE_CI_LOCAL_STEP_FAILED ||
	    (r->exit_code != 126 && r->exit_code != 127) || r->detail != NULL)
		return;
	out = capture_tail_text(&run->cap);
	p = strstr(out, "timeout: failed to run command");
	if (p && (p == out || p[-1] == '\n')) {
		const char *nl = strchr(p, '\n');
		g_autofree char *line = pgate_ci_local__clean_text(
			p + 9, nl ? nl - p - 9 : -1, 300, FALSE);

		r->detail = g_strdup_printf("cannot execute: %s", line);
	}
}

/* The cgroups removed; a step that did not pass learns which of their
 * limits it hit. */
static void
note_cgroup_limits(Running *run)
{
	PgateCiLocalStepResult *r = run->r;
	g_autoptr(GString) hit = g_string_new(NULL);

	if (!run->has_cg)
		return;
	pgate_ci_local__cgroup_destroy(&run->cg, hit, TRUE);
	run->has_cg = FALSE;
	if (hit->len && r->status != PGATE_CI_LOCAL_STEP_PASSED) {
		char *d = r->detail ? g_strdup_printf("%s; %s", r->detail,
						      hit->str)
				    : g_strdup(hit->str);

		g_free(r->detail);
		r->detail = d;
	}
}

/* The step's status, detail and output tail into run->r; its output into
 * @log. */
static void
step_classify(Running *run, GString *log)
{
	PgateCiLocalStepResult *r = run->r;

	classify_end(run);
	explain_not_executed(run);
	note_cgroup_limits(run);
	r->tail = capture_tail_text(&run->cap);
	/* what the step printed keeps no secret (common/secret.c) */
	pgate_secret_redact_in_place(&r->tail);
	if (log)
		capture_to_log(&run->cap, log);
}

/* "== disk: limit 16 MiB: 20.0 KiB in the checkout and /tmp, 70.0 MiB in
 * 3 file(s) deleted but still open or mapped": what the limit was
 * reached with, since a step that unlinks its files leaves nothing to
 * see afterwards.  Paths in it are the step's: cleaned. */
static void
log_disk(GString *log, PgateCiLocalDiskWatch *w)
{
	g_autofree char *what = pgate_ci_local__disk_watch_describe(w);
	g_autofree char *clean = pgate_ci_local__clean_text(what, -1, 1000,
							    FALSE);

	g_string_append_printf(log, "== disk: %s\n", clean);
}

/* "== step build: failed (exit 2): ... in 1.20 s, 3 warning(s)" */
static void
log_step_end(GString *log, const PgateCiLocalConfig *cfg,
	     const PgateCiLocalStepResult *r)
{
	g_string_append_printf(log, "== step %s: %s", r->name,
			       pgate_ci_local__step_status_to_string(
				       r->status));
	if (r->status == PGATE_CI_LOCAL_STEP_PASSED ||
	    (r->status == PGATE_CI_LOCAL_STEP_FAILED && r->exit_code >= 0 &&
	     r->signal == 0))
		g_string_append_printf(log, " (exit %d)", r->exit_code);
	if (r->nipa == PGATE_CI_LOCAL_NIPA_WARNING)
		g_string_append(log, ", a warning (nipa)");
	else if (r->nipa == PGATE_CI_LOCAL_NIPA_SKIP)
		g_string_append(log, ", skipped (nipa)");
	if (r->detail)
		g_string_append_printf(log, ": %s", r->detail);
	g_string_append_printf(log, " in %.2f s", r->seconds);
	if (r->desc)
		g_string_append_printf(log, ", desc: %s", r->desc);
	if (cfg->warning_regex)
		g_string_append_printf(log, ", %u warning(s)", r->warnings);
	g_string_append_c(log, '\n');
}

PgateCiLocalStepResult *
pgate_ci_local__step_run(const PgateCiLocalStepContext *ctx,
			 const PgateCiLocalStep *step, GString *log)
{
	g_autoptr(PgateCiLocalStepResult) r =
		pgate_ci_local__step_result_new(step->name);
	Running run;

	running_init(&run, ctx, step, r);
	if (log) {
		g_autofree char *cmdline = argv_text(step->argv);

		g_string_append_printf(log, "== step %s: %s\n", step->name,
				       cmdline);
	}
	if (step_command(&run) && step_spawn(&run, log)) {
		step_pump(&run);
		step_reap(&run);
		step_classify(&run, log);
		if (run.disk_hit && log)
			log_disk(log, &run.disk);
	}
	running_clear(&run);
	r->seconds = (double)(g_get_monotonic_time() - run.t0) / G_USEC_PER_SEC;
	if (log)
		log_step_end(log, ctx->cfg, r);
	return g_steal_pointer(&r);
}
