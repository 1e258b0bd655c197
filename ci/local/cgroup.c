/* cgroup.c - the cgroup v1 memory and pids groups a step runs in.
 *
 * Running as root, when the hierarchies are mounted and writable, and
 * with a memory or pids limit: a group per controller is made below the
 * one this process is in ("patchgate-ci.LABEL"), the child joins them
 * between fork and exec (through the cgroup.procs descriptors opened
 * here), and afterwards what is left in them is killed, which limits were
 * hit is noted, and the groups are removed.  Groups left by a runner that
 * died are swept at start (pgate_ci_local__cgroup_sweep).  Everything here
 * is optional: without cgroups the rlimits still apply.
 */
#include "ci/local/local-private.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

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

void
pgate_ci_local__cgroup_kill(const PgateCiLocalCgroup *cg)
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
cgroup_empty(const PgateCiLocalCgroup *cg)
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

void
pgate_ci_local__cgroup_close_fds(PgateCiLocalCgroup *cg)
{
	for (guint i = 0; i < cg->n; i++) {
		if (cg->procs_fd[i] >= 0)
			close(cg->procs_fd[i]);
		cg->procs_fd[i] = -1;
	}
}

void
pgate_ci_local__cgroup_destroy(PgateCiLocalCgroup *cg, GString *hit,
			       gboolean wait)
{
	gint64 until = g_get_monotonic_time() +
		       (wait ? 5 * G_USEC_PER_SEC : 0);

	pgate_ci_local__cgroup_close_fds(cg);
	if (cg->n == 0)
		return;
	pgate_ci_local__cgroup_kill(cg);
	while (!cgroup_empty(cg) && g_get_monotonic_time() < until) {
		g_usleep(10000);
		pgate_ci_local__cgroup_kill(cg);
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
cgroup_add(PgateCiLocalCgroup *cg, const char *controller,
	   const char *label, const char *limit_file, guint64 limit,
	   const char *extra_file, GString *note)
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

gboolean
pgate_ci_local__cgroup_create(PgateCiLocalCgroup *cg,
			      const PgateCiLocalConfig *cfg, const char *label,
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
		pgate_ci_local__cgroup_destroy(cg, NULL, TRUE);
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
			PgateCiLocalCgroup cg = { .n = 1,
						  .procs_fd = { -1, -1 } };
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
			pgate_ci_local__cgroup_destroy(&cg, NULL, FALSE);
		}
	}
}
