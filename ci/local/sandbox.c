/* sandbox.c - running one step of a local CI job.
 *
 * The step's process is forked here and, before it executes anything:
 *   1. leaves our process group (a new one, so that a timeout or a cancel
 *      kills the whole group), resets signals, gets /dev/null as stdin and
 *      one pipe as stdout and stderr; every other descriptor is closed;
 *   2. joins a cgroup v1 memory and pids group (running as root, when the
 *      hierarchy is mounted and writable; optional, made below the group
 *      this process is in, removed afterwards);
 *   3. running as root: drops to the configured user (setgroups,
 *      setresgid, setresuid);
 *   4. sets its rlimits (AS, NPROC, CPU with soft < hard, NOFILE, FSIZE,
 *      CORE 0), no_new_privs, and dies with its parent;
 *   5. executes bwrap (sandbox = on), which executes the step's argv in a
 *      new user, mount, pid, network, ipc and uts namespace, the root
 *      read-only, the work directory on /work, a private /tmp, and a clean
 *      environment; or, with sandbox = off, the argv itself.
 * Only async-signal-safe calls happen in the child: everything is prepared
 * before the fork.  The parent never runs a shell, and nothing of the job
 * is ever interpolated into a command line: argv arrays only.
 *
 * Whether the command itself ran is learnt from bwrap's --json-status-fd:
 * bwrap writes {"exit-code": N} only once the command has exited.  Without
 * it, bwrap failed first: the sandbox could not be set up (status ERROR,
 * the command never ran), or bwrap could not execute the command (FAILED,
 * like exit 127).
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

#define CGROUP_ROOT "/sys/fs/cgroup"
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

/* ---- cgroup v1 ------------------------------------------------------ */

typedef struct {
	char *dir[2];            /* memory, pids */
	int procs_fd[2];
	guint n;
} Cgroup;

/* Our own group in @controller's v1 hierarchy ("/" for the root). */
static char *
own_cgroup(const char *controller)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents("/proc/self/cgroup", &text, NULL, NULL))
		return NULL;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit(lines[i], ":", 3);

		if (g_strv_length(f) != 3)
			continue;
		g_auto(GStrv) ctls = g_strsplit(f[1], ",", -1);
		if (g_strv_contains((const char *const *)ctls, controller))
			return g_strdup(f[2]);
	}
	return NULL;
}

static gboolean
write_file(const char *dir, const char *name, const char *value)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	gsize len = strlen(value);
	gboolean ok;

	if (fd < 0)
		return FALSE;
	ok = write(fd, value, len) == (ssize_t)len;
	if (close(fd) < 0)
		ok = FALSE;
	return ok;
}

static guint64
read_number(const char *dir, const char *name, const char *prefix)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *text = NULL;
	const char *p;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	p = text;
	if (prefix) {
		p = strstr(text, prefix);
		if (p == NULL)
			return 0;
		p += strlen(prefix);
	}
	return g_ascii_strtoull(p, NULL, 10);
}

static void
cgroup_kill(const Cgroup *cg)
{
	for (guint i = 0; i < cg->n; i++) {
		g_autofree char *path = g_build_filename(cg->dir[i],
							 "cgroup.procs", NULL);
		g_autofree char *text = NULL;
		g_auto(GStrv) pids = NULL;

		if (!g_file_get_contents(path, &text, NULL, NULL))
			continue;
		pids = g_strsplit(text, "\n", -1);
		for (guint j = 0; pids[j]; j++) {
			gint64 pid = g_ascii_strtoll(pids[j], NULL, 10);

			if (pid > 1)
				kill((pid_t)pid, SIGKILL);
		}
	}
}

static gboolean
cgroup_empty(const Cgroup *cg)
{
	for (guint i = 0; i < cg->n; i++) {
		g_autofree char *path = g_build_filename(cg->dir[i],
							 "cgroup.procs", NULL);
		g_autofree char *text = NULL;

		if (g_file_get_contents(path, &text, NULL, NULL) &&
		    text[0] != '\0')
			return FALSE;
	}
	return TRUE;
}

static void
cgroup_close_fds(Cgroup *cg)
{
	for (guint i = 0; i < cg->n; i++) {
		if (cg->procs_fd[i] >= 0)
			close(cg->procs_fd[i]);
		cg->procs_fd[i] = -1;
	}
}

/* Kills what is left in the groups, notes which limits were hit, removes
 * the groups; waits for their processes to go (at most 5 s, then 2 s for
 * the removal) unless @wait is %FALSE. */
static void
cgroup_destroy(Cgroup *cg, GString *hit, gboolean wait)
{
	gint64 until = g_get_monotonic_time() +
		       (wait ? 5 * G_USEC_PER_SEC : 0);

	cgroup_close_fds(cg);
	if (cg->n == 0)
		return;
	cgroup_kill(cg);
	while (!cgroup_empty(cg) && g_get_monotonic_time() < until) {
		g_usleep(10000);
		cgroup_kill(cg);
	}
	until = g_get_monotonic_time() + (wait ? 2 * G_USEC_PER_SEC : 0);
	for (guint i = 0; i < cg->n; i++) {
		/* with swap accounting the memsw counter is the one hit */
		if (hit && strstr(cg->dir[i], CGROUP_ROOT "/memory/") &&
		    (read_number(cg->dir[i], "memory.failcnt", NULL) > 0 ||
		     read_number(cg->dir[i], "memory.memsw.failcnt", NULL) > 0 ||
		     read_number(cg->dir[i], "memory.oom_control",
				 "oom_kill ") > 0))
			g_string_append(hit, hit->len ? ", memory limit reached"
						      : "memory limit reached");
		if (hit && strstr(cg->dir[i], CGROUP_ROOT "/pids/") &&
		    read_number(cg->dir[i], "pids.events", "max ") > 0)
			g_string_append(hit, hit->len ? ", pids limit reached"
						      : "pids limit reached");
		while (rmdir(cg->dir[i]) < 0 && errno == EBUSY &&
		       g_get_monotonic_time() < until)
			g_usleep(10000);
		g_free(cg->dir[i]);
		cg->dir[i] = NULL;
	}
	cg->n = 0;
}

static gboolean
cgroup_add(Cgroup *cg, const char *controller, const char *label,
	   const char *limit_file, guint64 limit, const char *extra_file,
	   GString *note)
{
	g_autofree char *own = own_cgroup(controller);
	g_autofree char *name = NULL, *dir = NULL, *value = NULL;
	int fd;

	if (own == NULL) {
		g_string_append_printf(note, "no %s hierarchy", controller);
		return FALSE;
	}
	name = g_strdup_printf("patchgate-ci.%s", label);
	dir = g_build_filename(CGROUP_ROOT, controller, own, name, NULL);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		g_string_append_printf(note, "mkdir %s: %s", dir,
				       g_strerror(errno));
		return FALSE;
	}
	cg->dir[cg->n] = g_strdup(dir);
	cg->procs_fd[cg->n] = -1;
	cg->n++;
	value = g_strdup_printf("%" G_GUINT64_FORMAT, limit);
	if (!write_file(dir, limit_file, value)) {
		g_string_append_printf(note, "%s/%s: %s", dir, limit_file,
				       g_strerror(errno));
		return FALSE;
	}
	/* no swapping around the memory limit, where swap accounting is on */
	if (extra_file) {
		g_autofree char *path = g_build_filename(dir, extra_file, NULL);

		if (g_file_test(path, G_FILE_TEST_EXISTS))
			write_file(dir, extra_file, value);
	}
	{
		g_autofree char *path = g_build_filename(dir, "cgroup.procs",
							 NULL);

		fd = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		g_string_append_printf(note, "%s/cgroup.procs: %s", dir,
				       g_strerror(errno));
		return FALSE;
	}
	cg->procs_fd[cg->n - 1] = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	close(fd);
	return cg->procs_fd[cg->n - 1] >= 0;
}

/* Sets up the groups the step will join; %FALSE (and nothing left behind)
 * when cgroups are not available here, with @note saying why. */
static gboolean
cgroup_create(Cgroup *cg, const PgateCiLocalConfig *cfg, const char *label,
	      GString *note)
{
	memset(cg, 0, sizeof *cg);
	cg->procs_fd[0] = cg->procs_fd[1] = -1;
	if (!cfg->cgroup) {
		g_string_append(note, "off (cgroup = off)");
		return FALSE;
	}
	if (geteuid() != 0) {
		g_string_append(note, "not used (not running as root)");
		return FALSE;
	}
	if (cfg->memory == 0 && cfg->pids == 0) {
		g_string_append(note, "not used (no memory or pids limit)");
		return FALSE;
	}
	if ((cfg->memory &&
	     !cgroup_add(cg, "memory", label, "memory.limit_in_bytes",
			 cfg->memory, "memory.memsw.limit_in_bytes", note)) ||
	    (cfg->pids &&
	     !cgroup_add(cg, "pids", label, "pids.max", cfg->pids, NULL,
			 note))) {
		cgroup_destroy(cg, NULL, TRUE);
		return FALSE;
	}
	g_string_append_printf(note, "v1%s%s", cfg->memory ? " memory" : "",
			       cfg->pids ? " pids" : "");
	return TRUE;
}

void
pgate_ci_local__cgroup_sweep(const PgateCiLocalConfig *cfg)
{
	static const char *const controllers[] = { "memory", "pids" };

	if (!cfg->cgroup || geteuid() != 0)
		return;
	for (gsize i = 0; i < G_N_ELEMENTS(controllers); i++) {
		g_autofree char *own = own_cgroup(controllers[i]);
		g_autofree char *parent = NULL;
		g_autoptr(GDir) d = NULL;
		const char *name;

		if (own == NULL)
			continue;
		parent = g_build_filename(CGROUP_ROOT, controllers[i], own,
					  NULL);
		d = g_dir_open(parent, 0, NULL);
		while (d && (name = g_dir_read_name(d)) != NULL) {
			g_auto(GStrv) f = NULL;
			g_autofree char *proc = NULL;
			Cgroup cg = { .n = 1, .procs_fd = { -1, -1 } };
			gint64 pid;

			if (!g_str_has_prefix(name, "patchgate-ci."))
				continue;
			/* patchgate-ci.HANDLE.PID.SEQ */
			f = g_strsplit(name, ".", -1);
			if (g_strv_length(f) != 4)
				continue;
			pid = g_ascii_strtoll(f[2], NULL, 10);
			proc = g_strdup_printf("/proc/%" G_GINT64_FORMAT, pid);
			if (pid <= 0 || pid == getpid() ||
			    g_file_test(proc, G_FILE_TEST_EXISTS))
				continue;
			cg.dir[0] = g_build_filename(parent, name, NULL);
			g_debug("removing the stale cgroup %s", cg.dir[0]);
			/* zombies not reaped yet keep it: next time then */
			cgroup_destroy(&cg, NULL, FALSE);
		}
	}
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
	/* everything else is closed by the exec, the error pipe last */
	cloexec_from(c->status_w >= 0 ? 4 : 3);

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

/* ---- the sandbox's file system: an allow-list ------------------------ */

/* The top-level links (or, on a system without merged /usr, directories)
 * that lead into /usr. */
static const char *const root_entries[] = {
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

/* What of /etc a build needs: the dynamic linker's cache, the
 * alternatives (cc, c++, awk...), the users and groups (id, whoami, ls
 * -l), name service, hosts (localhost), time zone, the system's name. */
static const char *const etc_entries[] = {
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
	"/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf",
	"/etc/localtime", "/etc/timezone", "/etc/os-release",
	"/etc/debian_version", "/etc/protocols", "/etc/services",
};

/* /dev/shm: POSIX shared memory and semaphores, in memory: bounded */
#define SHM_SIZE (64u << 20)

typedef struct {
	char *src;       /* on the host, symlinks resolved */
	char *dest;      /* in the sandbox */
	gboolean user;   /* from ro_binds */
} Bind;

static void
bind_free(gpointer p)
{
	Bind *b = p;

	g_free(b->src);
	g_free(b->dest);
	g_free(b);
}

/* Whether @path is @dir or below it (both absolute and canonical). */
static gboolean
path_within(const char *path, const char *dir)
{
	gsize n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return TRUE;
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

static void
add_bind(GPtrArray *binds, const char *src, const char *dest,
	 gboolean user)
{
	char real[PATH_MAX];
	Bind *b;

	if (realpath(src, real) == NULL)
		return;  /* bwrap says so (user binds) or it is optional */
	b = g_new0(Bind, 1);
	b->src = g_strdup(real);
	b->dest = g_strdup(dest);
	b->user = user;
	g_ptr_array_add(binds, b);
}

/*
 * What patchgate must keep from the step (common/secret.c: the state
 * directory, the configuration file, every secret's file): the
 * allow-list binds none of them, but a bound tree may hold one (a
 * configuration under /usr/local/etc, an ro_binds directory holding the
 * state): each is hidden under an empty tmpfs (a directory) or /dev/null
 * (a file).  An ro_binds source that lies inside one of them would hand
 * the step what it holds: refused.
 */
static gboolean
add_masks(GPtrArray *a, const GPtrArray *binds, GError **error)
{
	g_auto(GStrv) protect = pgate_secret_paths();

	for (guint i = 0; protect[i]; i++) {
		char real[PATH_MAX];
		struct stat st;

		if (realpath(protect[i], real) == NULL ||
		    stat(real, &st) < 0)
			continue;  /* not there: nothing to see */
		for (guint j = 0; j < binds->len; j++) {
			const Bind *b = binds->pdata[j];
			g_autofree char *dest = NULL;

			if (b->user && path_within(b->src, real)) {
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_CONFIG,
					    "ro_binds %s would show the step "
					    "%s (the state directory, the "
					    "configuration or a secret)",
					    b->src, protect[i]);
				return FALSE;
			}
			if (!path_within(real, b->src))
				continue;
			dest = g_build_filename(b->dest,
						real + strlen(b->src), NULL);
			if (S_ISDIR(st.st_mode)) {
				g_ptr_array_add(a, g_strdup("--tmpfs"));
			} else {
				g_ptr_array_add(a, g_strdup("--ro-bind"));
				g_ptr_array_add(a, g_strdup("/dev/null"));
			}
			g_ptr_array_add(a, g_steal_pointer(&dest));
		}
	}
	return TRUE;
}

/* argv for bwrap: the sandbox of docs/ci-local.md. */
static GPtrArray *
bwrap_argv(const PgateCiLocalStepContext *ctx, const PgateCiLocalStep *step,
	   const char *bwrap, GError **error)
{
	const PgateCiLocalConfig *cfg = ctx->cfg;
	g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) binds = g_ptr_array_new_with_free_func(bind_free);

#define ADD(s) g_ptr_array_add(a, g_strdup(s))
	ADD(bwrap);
	ADD("--unshare-all");
	ADD("--unshare-user");
	ADD("--disable-userns");
	ADD("--die-with-parent");
	ADD("--new-session");
	/* the root is an empty tmpfs, made read-only at the end: what is
	 * not bound below does not exist */
	ADD("--ro-bind"); ADD("/usr"); ADD("/usr");
	add_bind(binds, "/usr", "/usr", FALSE);
	for (gsize i = 0; i < G_N_ELEMENTS(root_entries); i++) {
		const char *e = root_entries[i];
		g_autofree char *target = g_file_read_link(e, NULL);
		struct stat st;

		if (target) {
			ADD("--symlink"); ADD(target); ADD(e);
		} else if (lstat(e, &st) == 0 && S_ISDIR(st.st_mode)) {
			ADD("--ro-bind"); ADD(e); ADD(e);
			add_bind(binds, e, e, FALSE);
		}
	}
	for (gsize i = 0; i < G_N_ELEMENTS(etc_entries); i++) {
		ADD("--ro-bind-try"); ADD(etc_entries[i]); ADD(etc_entries[i]);
		add_bind(binds, etc_entries[i], etc_entries[i], FALSE);
	}
	ADD("--dev"); ADD("/dev");
	g_ptr_array_add(a, g_strdup("--size"));
	g_ptr_array_add(a, g_strdup_printf("%u", SHM_SIZE));
	ADD("--tmpfs"); ADD("/dev/shm");
	ADD("--proc"); ADD("/proc");
	ADD("--bind"); ADD(ctx->tmpdir); ADD("/tmp");
	for (guint i = 0; i + 1 < cfg->ro_binds->len; i += 2) {
		ADD("--ro-bind");
		ADD(cfg->ro_binds->pdata[i]);
		ADD(cfg->ro_binds->pdata[i + 1]);
		add_bind(binds, cfg->ro_binds->pdata[i],
			 cfg->ro_binds->pdata[i + 1], TRUE);
	}
	ADD("--bind"); ADD(ctx->workdir); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	add_bind(binds, ctx->workdir, PGATE_CI_LOCAL_WORK_MOUNT, FALSE);
	add_bind(binds, ctx->tmpdir, "/tmp", FALSE);
	if (!add_masks(a, binds, error))
		return NULL;
	ADD("--remount-ro"); ADD("/dev");
	ADD("--remount-ro"); ADD("/");
	ADD("--chdir"); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	ADD("--json-status-fd"); ADD("3");
	ADD("--clearenv");
	ADD("--setenv"); ADD("HOME"); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	for (guint i = 0; ctx->env && ctx->env[i]; i++) {
		const char *eq = strchr(ctx->env[i], '=');

		if (eq == NULL)
			continue;
		ADD("--setenv");
		g_ptr_array_add(a, g_strndup(ctx->env[i],
					     (gsize)(eq - ctx->env[i])));
		ADD(eq + 1);
	}
	ADD("--");
	/* A backstop: bwrap's --die-with-parent has a window during its
	 * setup in which the death of this process leaves the sandbox
	 * running; coreutils' timeout bounds its life anyway. */
	ADD("timeout");
	ADD("-s");
	ADD("KILL");
	g_ptr_array_add(a, g_strdup_printf("%u", cfg->timeout_s +
					   PGATE_CI_LOCAL_BACKSTOP_S));
	for (guint i = 0; step->argv[i]; i++)
		ADD(step->argv[i]);
#undef ADD
	g_ptr_array_add(a, NULL);
	return g_steal_pointer(&a);
}

/* ---- the disk watchdog --------------------------------------------- */

/* How often the work area is measured while a step runs: at least this,
 * and at least four times as long as a measurement took. */
#define DISK_POLL_US G_USEC_PER_SEC

typedef struct {
	const char *paths[3];    /* checkout, /tmp */
	guint64 limit;
	GMutex m;
	GCond c;
	gboolean stop;
	gboolean over;           /* measured over the limit (or too deep) */
	guint64 used;
	GThread *thread;
} DiskWatch;

/* "2 GiB", "1.5 GiB", "512 bytes": as the configuration says it. */
static char *
size_text(guint64 n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	while (u + 1 < (int)G_N_ELEMENTS(unit) && n >= (1ULL << (10 * (u + 2))))
		u++;
	if (u < 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", n);
	if (n % (1ULL << (10 * (u + 1))) == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " %s",
				       n >> (10 * (u + 1)), unit[u]);
	return g_strdup_printf("%.1f %s",
			       (double)n / (double)(1ULL << (10 * (u + 1))),
			       unit[u]);
}

static gboolean
disk_measure(DiskWatch *w)
{
	gboolean deep;
	guint64 used = pgate_ci_local__disk_use(w->paths, &deep);

	g_mutex_lock(&w->m);
	w->used = used;
	if (deep || used > w->limit)
		w->over = TRUE;
	g_mutex_unlock(&w->m);
	return deep || used > w->limit;
}

static gpointer
disk_watch_thread(gpointer data)
{
	DiskWatch *w = data;

	for (;;) {
		gint64 t0 = g_get_monotonic_time(), until;

		if (disk_measure(w))
			return NULL;
		until = g_get_monotonic_time() +
			MAX(DISK_POLL_US, 4 * (g_get_monotonic_time() - t0));
		g_mutex_lock(&w->m);
		while (!w->stop && g_cond_wait_until(&w->c, &w->m, until))
			;
		if (w->stop) {
			g_mutex_unlock(&w->m);
			return NULL;
		}
		g_mutex_unlock(&w->m);
	}
}

static void
disk_watch_start(DiskWatch *w, const PgateCiLocalStepContext *ctx)
{
	memset(w, 0, sizeof *w);
	w->limit = ctx->cfg->disk;
	w->paths[0] = ctx->workdir;
	w->paths[1] = ctx->tmpdir;
	g_mutex_init(&w->m);
	g_cond_init(&w->c);
	if (w->limit > 0)
		w->thread = g_thread_new("pgate-ci-disk", disk_watch_thread, w);
}

static gboolean
disk_over(DiskWatch *w)
{
	gboolean over;

	g_mutex_lock(&w->m);
	over = w->over;
	g_mutex_unlock(&w->m);
	return over;
}

/* Stops the watchdog; then, unless it saw the limit passed already, one
 * last measurement of what the step left.  Returns: whether the limit
 * was passed. */
static gboolean
disk_watch_finish(DiskWatch *w)
{
	gboolean over = FALSE;

	if (w->thread) {
		g_mutex_lock(&w->m);
		w->stop = TRUE;
		g_cond_signal(&w->c);
		g_mutex_unlock(&w->m);
		g_thread_join(w->thread);
		w->thread = NULL;
		over = disk_over(w) || disk_measure(w);
	}
	g_mutex_clear(&w->m);
	g_cond_clear(&w->c);
	return over;
}

typedef struct {
	pid_t pid;
	int inner_pidfd;   /* bwrap's pid 1 of the sandbox, once known */
	Cgroup cg;
	gboolean has_cg;
} Running;

/* bwrap's status names the sandbox's pid 1 (it runs in a session of its
 * own, out of reach of our process group kill): pin it with a pidfd. */
static void
note_inner_pid(Running *run, const GString *status)
{
#if defined(SYS_pidfd_open)
	const char *p;
	gint64 pid;

	if (run->inner_pidfd >= 0)
		return;
	p = strstr(status->str, "\"child-pid\"");
	if (p == NULL || (p = strchr(p, ':')) == NULL)
		return;
	pid = g_ascii_strtoll(p + 1, NULL, 10);
	if (pid > 1 && pid <= G_MAXINT)
		run->inner_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
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
		cgroup_kill(&run->cg);
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

PgateCiLocalStepResult *
pgate_ci_local__step_run(const PgateCiLocalStepContext *ctx,
			 const PgateCiLocalStep *step, GString *log)
{
	const PgateCiLocalConfig *cfg = ctx->cfg;
	g_autoptr(PgateCiLocalStepResult) r =
		pgate_ci_local__step_result_new(step->name);
	g_autoptr(GPtrArray) argv = NULL, envp = NULL;
	g_autofree char *exe = NULL, *cmdline = argv_text(step->argv);
	g_autoptr(GString) cgnote = g_string_new(NULL);
	g_autoptr(GString) status = g_string_new(NULL);
	g_autoptr(GString) hit = g_string_new(NULL);
	int out_r = -1, out_w = -1, st_r = -1, st_w = -1, err_r = -1;
	int err_w = -1, null_fd = -1, wstatus = 0, child_err[2] = { 0, 0 };
	gboolean out_eof = FALSE, st_eof = TRUE, exited = FALSE;
	gboolean killed = FALSE, timed_out = FALSE, cancelled = FALSE;
	gint64 t0 = g_get_monotonic_time(), deadline, exit_time = 0;
	gint64 kill_time = 0;
	Running run = { .pid = -1, .inner_pidfd = -1 };
	Capture cap;
	Child c;
	ssize_t n;
	g_autoptr(GError) local = NULL;
	DiskWatch disk;
	gboolean disk_hit = FALSE, disk_started = FALSE;

	capture_init(&cap, cfg->max_output, cfg->warning_regex);
	if (log)
		g_string_append_printf(log, "== step %s: %s\n", step->name,
				       cmdline);

	/* what to execute, with which environment */
	envp = g_ptr_array_new_with_free_func(g_free);
	if (cfg->sandbox) {
		exe = strchr(cfg->bwrap, '/') ? g_strdup(cfg->bwrap)
					      : g_find_program_in_path(cfg->bwrap);
		if (exe == NULL || access(exe, X_OK) < 0) {
			set_error(r, "sandbox: bwrap (\"%s\") not found or not "
				  "executable; the step was not run "
				  "(install bubblewrap, or see bwrap in "
				  "docs/ci-local.md)", cfg->bwrap);
			goto done;
		}
		argv = bwrap_argv(ctx, step, exe, &local);
		if (argv == NULL) {
			set_error(r, "sandbox: %s; the step was not run",
				  local->message);
			goto done;
		}
		g_ptr_array_add(envp, g_strdup("PATH=" PGATE_CI_LOCAL_PATH));
	} else {
		exe = find_in_path(step->argv[0], PGATE_CI_LOCAL_PATH);
		if (exe == NULL) {
			r->status = PGATE_CI_LOCAL_STEP_FAILED;
			r->exit_code = 127;
			r->detail = g_strdup_printf("cannot execute %s: not "
						    "found in PATH",
						    step->argv[0]);
			goto done;
		}
		argv = g_ptr_array_new_with_free_func(g_free);
		for (guint i = 0; step->argv[i]; i++)
			g_ptr_array_add(argv, g_strdup(step->argv[i]));
		g_ptr_array_add(argv, NULL);
		g_ptr_array_add(envp, g_strdup_printf("HOME=%s", ctx->workdir));
		g_ptr_array_add(envp, g_strdup_printf("TMPDIR=%s", ctx->tmpdir));
		for (guint i = 0; ctx->env && ctx->env[i]; i++)
			g_ptr_array_add(envp, g_strdup(ctx->env[i]));
	}
	g_ptr_array_add(envp, NULL);

	null_fd = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (null_fd < 0 || !make_pipe(&out_r, &out_w) ||
	    !make_pipe(&err_r, &err_w) ||
	    (cfg->sandbox && !make_pipe(&st_r, &st_w))) {
		set_error(r, "sandbox: pipe: %s", g_strerror(errno));
		goto done;
	}
	st_eof = st_r < 0;

	run.has_cg = cgroup_create(&run.cg, cfg, ctx->label, cgnote);
	if (log) {
		g_string_append_printf(log, "== sandbox: %s, ",
				       cfg->sandbox ? "bwrap" : "OFF");
		if (cfg->drop)
			g_string_append_printf(log, "user %s (uid %u)",
					       cfg->user, (unsigned)cfg->uid);
		else
			g_string_append_printf(log, "uid %u (not root)",
					       (unsigned)geteuid());
		g_string_append_printf(log, ", cgroup %s\n", cgnote->str);
	}

	memset(&c, 0, sizeof c);
	c.null_fd = null_fd;
	c.out_w = out_w;
	c.status_w = st_w;
	c.err_w = err_w;
	for (guint i = 0; run.has_cg && i < run.cg.n; i++)
		c.cg_fd[c.n_cg++] = run.cg.procs_fd[i];
	c.drop = cfg->drop;
	c.uid = cfg->uid;
	c.gid = cfg->gid;
	c.groups = (const gid_t *)cfg->groups->data;
	c.ngroups = cfg->groups->len;
	set_limits(&c, cfg);
	c.dir = cfg->sandbox ? "/" : ctx->workdir;
	c.exe = exe;
	c.argv = (char *const *)argv->pdata;
	c.envp = (char *const *)envp->pdata;
	c.parent = getpid();

	run.pid = fork();
	if (run.pid == 0)
		child_main(&c);
	if (run.pid < 0) {
		set_error(r, "sandbox: fork: %s", g_strerror(errno));
		goto done;
	}
	setpgid(run.pid, run.pid);
	close_fd(&out_w);
	close_fd(&st_w);
	close_fd(&err_w);
	close_fd(&null_fd);
	if (run.has_cg)
		cgroup_close_fds(&run.cg);

	/* the child reports a failure before its exec, or closes the pipe */
	do
		n = read(err_r, child_err, sizeof child_err);
	while (n < 0 && errno == EINTR);
	close_fd(&err_r);
	if (n == (ssize_t)sizeof child_err) {
		waitpid(run.pid, &wstatus, 0);
		run.pid = -1;
		if (!cfg->sandbox && child_err[0] == STAGE_EXEC) {
			r->status = PGATE_CI_LOCAL_STEP_FAILED;
			r->exit_code = 127;
			r->detail = g_strdup_printf("cannot execute %s: %s",
						    step->argv[0],
						    g_strerror(child_err[1]));
		} else {
			set_error(r, "sandbox: %s%s%s: %s; the step was not "
				  "run", stage_name(child_err[0]),
				  child_err[0] == STAGE_EXEC ? " " : "",
				  child_err[0] == STAGE_EXEC ? exe : "",
				  g_strerror(child_err[1]));
		}
		goto done;
	}

	disk_watch_start(&disk, ctx);
	disk_started = TRUE;
	deadline = t0 + (gint64)cfg->timeout_s * G_USEC_PER_SEC;
	for (;;) {
		struct pollfd pfd[2];
		nfds_t nfds = 0;
		gint64 now, wait_us;

		if (!exited) {
			pid_t w = waitpid(run.pid, &wstatus, WNOHANG);

			if (w == run.pid || (w < 0 && errno != EINTR)) {
				exited = TRUE;
				exit_time = g_get_monotonic_time();
				if (w < 0) /* reaped by someone else */
					wstatus = W_EXITCODE(0, SIGKILL);
			}
		}
		if (exited && out_eof && st_eof)
			break;
		now = g_get_monotonic_time();
		if (!killed) {
			if (ctx->stop && ctx->stop(ctx->stop_data))
				cancelled = killed = TRUE;
			else if (disk_over(&disk))
				disk_hit = killed = TRUE;
			else if (now >= deadline)
				timed_out = killed = TRUE;
			else if (exited && now - exit_time > DRAIN_GRACE_US)
				killed = TRUE; /* strays hold the pipe */
			if (killed) {
				kill_all(&run);
				kill_time = now;
			}
		} else if (exited && now - kill_time > DRAIN_GRACE_US) {
			break; /* whatever still holds the pipe: stop reading */
		} else if (!exited && now - kill_time > G_USEC_PER_SEC) {
			kill_all(&run);
			kill_time = now;
		}
		if (out_r >= 0)
			pfd[nfds++] = (struct pollfd){ .fd = out_r,
						       .events = POLLIN };
		if (st_r >= 0)
			pfd[nfds++] = (struct pollfd){ .fd = st_r,
						       .events = POLLIN };
		wait_us = killed ? 50000 : MIN(100000, MAX(deadline - now, 0));
		if (nfds > 0)
			poll(pfd, nfds, (int)(wait_us / 1000) + 1);
		else
			g_usleep((gulong)MAX(wait_us, 1000));
		if (out_r >= 0)
			read_ready(&out_r, &cap, NULL, &out_eof);
		if (st_r >= 0) {
			read_ready(&st_r, NULL, status, &st_eof);
			note_inner_pid(&run, status);
		}
	}
	close_fd(&out_r);
	close_fd(&st_r);
	if (!exited)
		waitpid(run.pid, &wstatus, 0);
	/* the process group, and with a cgroup every process, is gone */
	kill(-run.pid, SIGKILL);
	run.pid = -1;
	capture_finish(&cap);
	r->warnings = cap.warnings;
	disk_started = FALSE;
	if (disk_watch_finish(&disk) && !cancelled)
		disk_hit = TRUE;

	if (disk_hit) {
		g_autofree char *lim = size_text(cfg->disk);

		set_error(r, "disk limit %s reached (the checkout and /tmp "
			  "together; disk in docs/ci-local.md)", lim);
	} else if (cancelled) {
		r->status = PGATE_CI_LOCAL_STEP_CANCELLED;
	} else if (timed_out) {
		r->status = PGATE_CI_LOCAL_STEP_TIMEOUT;
		r->detail = g_strdup_printf("timed out after %u s",
					    cfg->timeout_s);
	} else if (WIFSIGNALED(wstatus)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(wstatus));

		r->status = PGATE_CI_LOCAL_STEP_FAILED;
		r->signal = WTERMSIG(wstatus);
		r->detail = g_strdup_printf("killed by signal %d (SIG%s)",
					    r->signal, abbrev ? abbrev : "?");
	} else if (!cfg->sandbox) {
		r->exit_code = WEXITSTATUS(wstatus);
		r->status = r->exit_code == 0 ? PGATE_CI_LOCAL_STEP_PASSED
					      : PGATE_CI_LOCAL_STEP_FAILED;
	} else if (status_exit_code(status, &r->exit_code)) {
		r->status = r->exit_code == 0 ? PGATE_CI_LOCAL_STEP_PASSED
					      : PGATE_CI_LOCAL_STEP_FAILED;
		if (r->exit_code > 128 && r->exit_code < 128 + NSIG) {
			const char *abbrev = sigabbrev_np(r->exit_code - 128);

			r->signal = r->exit_code - 128;
			r->detail = g_strdup_printf("killed by signal %d "
						    "(SIG%s)", r->signal,
						    abbrev ? abbrev : "?");
		}
	} else {
		/* bwrap gave up before the command ran: its output is
		 * bwrap's own */
		g_autofree char *out = capture_tail_text(&cap);
		g_autofree char *msg = bwrap_message(out);

		set_error(r, "sandbox: %s; the step was not run",
			  msg ? msg : "bwrap failed before running the command");
	}
	if (cfg->sandbox && r->status == PGATE_CI_LOCAL_STEP_FAILED &&
	    (r->exit_code == 126 || r->exit_code == 127) && r->detail == NULL) {
		/* what the timeout backstop says when it cannot execute
		 * the step's program */
		g_autofree char *out = capture_tail_text(&cap);
		const char *p = strstr(out, "timeout: failed to run command");

		if (p && (p == out || p[-1] == '\n')) {
			const char *nl = strchr(p, '\n');
			g_autofree char *line = pgate_ci_local__clean_text(
				p + 9, nl ? nl - p - 9 : -1, 300, FALSE);

			r->detail = g_strdup_printf("cannot execute: %s", line);
		}
	}
	if (run.has_cg) {
		cgroup_destroy(&run.cg, hit, TRUE);
		run.has_cg = FALSE;
		if (hit->len && r->status != PGATE_CI_LOCAL_STEP_PASSED) {
			char *d = r->detail
				? g_strdup_printf("%s; %s", r->detail, hit->str)
				: g_strdup(hit->str);

			g_free(r->detail);
			r->detail = d;
		}
	}
	r->tail = capture_tail_text(&cap);
	/* what the step printed keeps no secret (common/secret.c) */
	pgate_secret_redact_in_place(&r->tail);
	if (log)
		capture_to_log(&cap, log);

done:
	if (disk_started)
		disk_watch_finish(&disk);
	if (run.has_cg)
		cgroup_destroy(&run.cg, NULL, TRUE);
	close_fd(&out_r);
	close_fd(&out_w);
	close_fd(&st_r);
	close_fd(&st_w);
	close_fd(&err_r);
	close_fd(&err_w);
	close_fd(&null_fd);
	close_fd(&run.inner_pidfd);
	capture_clear(&cap);
	r->seconds = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
	if (log) {
		g_string_append_printf(log, "== step %s: %s", step->name,
				       pgate_ci_local__step_status_to_string(
					       r->status));
		if (r->status == PGATE_CI_LOCAL_STEP_PASSED ||
		    (r->status == PGATE_CI_LOCAL_STEP_FAILED &&
		     r->exit_code >= 0 && r->signal == 0))
			g_string_append_printf(log, " (exit %d)", r->exit_code);
		if (r->detail)
			g_string_append_printf(log, ": %s", r->detail);
		g_string_append_printf(log, " in %.2f s", r->seconds);
		if (cfg->warning_regex)
			g_string_append_printf(log, ", %u warning(s)",
					       r->warnings);
		g_string_append_c(log, '\n');
	}
	return g_steal_pointer(&r);
}
