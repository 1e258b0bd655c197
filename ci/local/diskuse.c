/* diskuse.c - how much disk a step's work area takes (the `disk` limit).
 *
 * A step may write anywhere in its checkout and its /tmp, both
 * directories on the host's disk (docs/ci-local.md).  Their use is
 * measured in two passes:
 *
 * 1. What the step's processes hold of the work area (issue #41, finding
 *    12): a file it unlinked but keeps open or mapped still takes its
 *    blocks, and no walk of the directories finds it.  So every
 *    descriptor and every file mapping of every process of the step is
 *    looked at through /proc: a regular file whose path, as the step
 *    sees it, lies in the work area is counted (by its allocated blocks,
 *    once per file however often it is open), whether it still has a
 *    name or not.  Counting the named ones too, and first, means that a
 *    file cannot be missed by being unlinked or linked again (O_TMPFILE
 *    and linkat) between the two passes: it is open throughout, so this
 *    pass sees it, and the walk skips it.  The processes are those of
 *    the sandbox's pid namespace, which a step cannot leave (no new user
 *    namespaces, so no new pid namespaces); with sandbox = off those of
 *    the step's process group, as the kill does.  Root reads them by
 *    CAP_SYS_PTRACE; a patchgate that is not root by owning the user
 *    namespace the step runs in (ptrace read access), both also when a
 *    process made itself undumpable.  One thing an unprivileged reader
 *    cannot do is stat a mapping's file (/proc/PID/map_files needs
 *    CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): a mapped file without a
 *    name and without a descriptor is then counted at fsize, the most it
 *    can hold.
 *
 * 2. The trees, walked as du does: every entry's allocated blocks, at
 *    least one 4 KiB block an entry (so that a flood of empty files or
 *    symlinks, which use inodes, counts too), a file with several links
 *    once, a file the first pass counted not again.  The walk never
 *    follows a symlink, tolerates entries that vanish under it (the
 *    build is running), and gives a directory the step made unreadable
 *    back to its owner (u+rwx) so that nothing can be hidden from it;
 *    deeper than MAX_DEPTH it stops and says so, which the caller treats
 *    as over the limit.
 *
 * What /proc cannot show (a file in flight in a Unix socket, one
 * registered with io_uring) is not counted: docs/ci-local.md says so and
 * what bounds it.
 *
 * While a step runs, a watchdog thread measures again and again
 * (pgate_ci_local__disk_watch_start): the step is killed once it is over
 * the limit.
 */
#include "ci/local/local-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_DEPTH 512
#define MIN_ENTRY 4096
/* Tasks of one process whose descriptor tables (or memory) are compared
 * with kcmp before a task's own is read: beyond this many distinct ones
 * every further task is read without comparing (bounds the work at
 * O(tasks) per process when a step makes many tables on purpose). */
#define MAX_TABLES 64

typedef struct {
	dev_t dev;
	ino_t ino;
} FileKey;

static guint
file_key_hash(gconstpointer p)
{
	const FileKey *k = p;

	return g_int64_hash(&(gint64){ (gint64)k->ino }) ^
	       g_int64_hash(&(gint64){ (gint64)k->dev });
}

static gboolean
file_key_equal(gconstpointer a, gconstpointer b)
{
	const FileKey *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino;
}

/* Whether @k was not counted yet; records it. */
static gboolean
first_time(GHashTable *counted, dev_t dev, ino_t ino)
{
	FileKey k = { dev, ino };

	if (g_hash_table_contains(counted, &k))
		return FALSE;
	g_hash_table_add(counted, g_memdup2(&k, sizeof k));
	return TRUE;
}

/* One measurement in progress. */
typedef struct {
	PgateCiLocalDiskUse *use;
	GHashTable *counted;       /* FileKey: files counted already */
	const GPtrArray *areas, *not_areas;
	guint64 fsize;
	/* the step's processes */
	gboolean sandboxed;
	guint64 ns_dev, ns_ino;
	pid_t pgid;
} Measure;

static void G_GNUC_PRINTF(2, 3)
unmeasurable(Measure *me, const char *fmt, ...)
{
	va_list ap;

	if (me->use->why[0])
		return;  /* the first reason is enough */
	va_start(ap, fmt);
	g_vsnprintf(me->use->why, sizeof me->use->why, fmt, ap);
	va_end(ap);
}

/* ---- 1. what the step's processes hold ------------------------------ */

/* Whether @path is @dir or below it. */
static gboolean
path_within(const char *path, const char *dir)
{
	gsize n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return TRUE;
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

/* Whether a file the step sees at @path is of its work area.  Paths are
 * as /proc shows them: in the step's mount namespace, " (deleted)"
 * already cut off.  The step can reach the work area's file system only
 * through the work area's mounts (a rename or link into another mount
 * fails with EXDEV), so a file of it always has such a path. */
static gboolean
in_area(const Measure *me, const char *path)
{
	gboolean in = FALSE;

	for (guint i = 0; i < me->areas->len && !in; i++)
		in = path_within(path, me->areas->pdata[i]);
	for (guint i = 0; i < me->not_areas->len && in; i++)
		in = !path_within(path, me->not_areas->pdata[i]);
	return in;
}

static void
count_file(Measure *me, const struct stat *st)
{
	guint64 b = MAX((guint64)st->st_blocks * 512, MIN_ENTRY);

	if (!first_time(me->counted, st->st_dev, st->st_ino))
		return;
	if (st->st_nlink == 0) {
		me->use->unlinked += b;
		me->use->unlinked_files++;
	} else {
		me->use->tree += b;
	}
}

/* A mapped file without a name whose size cannot be read: the most it
 * can hold. */
static void
count_unsized(Measure *me, dev_t dev, ino_t ino, const char *path)
{
	if (!first_time(me->counted, dev, ino))
		return;
	me->use->unsized++;
	me->use->unlinked_files++;
	if (me->fsize == 0)
		unmeasurable(me, "the size of %s (deleted), mapped by the "
			     "step, cannot be read and fsize does not bound "
			     "it", path);
	else
		me->use->unlinked += me->fsize;
}

static gboolean
proc_gone(int errsv)
{
	/* the process or task exited, or the descriptor was closed */
	return errsv == ENOENT || errsv == ESRCH;
}

/* One open file of the step, found through /proc: @st the file, @link
 * what /proc says it is (NULL when that could not be read). */
static void
held_file(Measure *me, const struct stat *st, char *link)
{
	if (!S_ISREG(st->st_mode))
		return;
	if (link != NULL) {
		gsize n = strlen(link);

		if (st->st_nlink == 0 && g_str_has_suffix(link, " (deleted)"))
			link[n - strlen(" (deleted)")] = '\0';
		if (!in_area(me, link))
			return;
	}
	/* a path too long to read: counted, it can only be the step's own
	 * doing */
	count_file(me, st);
}

/* The task's state letter (/proc/PID/task/TID/stat: "tid (comm) S ...",
 * comm holding anything, so after its last ')'), or '?'. */
static char
task_state(int tdir)
{
	char buf[1024], state = '?';
	int fd = openat(tdir, "stat", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	const char *p;

	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 1, " %c", &state) != 1)
		return '?';
	return state;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* The descriptors of a task whose /proc/PID/task/TID/fd we may not
 * read: not root, and the process made itself undumpable (ssh-agent
 * does: the directory is then root's).  Owning its user namespace we
 * may still take its descriptors one by one with pidfd_getfd(2); each
 * copy is only looked at, and closed. */
static gboolean
held_fds_copied(Measure *me, int tdir, pid_t tid, gboolean leader)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	char buf[4096];
	const char *p;
	long max = 0;
	int pidfd, fd;
	ssize_t n;

	pidfd = (int)syscall(SYS_pidfd_open, tid, leader ? 0 : PIDFD_THREAD);
	if (pidfd < 0)
		return proc_gone(errno);  /* an exiting task's mm goes
					    * first: that is the EACCES */
	/* the task lived after its pidfd was made, so the pidfd is its
	 * (a pid is not reused while its task lives) */
	fd = openat(tdir, "status", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		/* gone: nothing to count */
		close(pidfd);
		return TRUE;
	}
	buf[n] = '\0';
	/* the size of its descriptor table: every descriptor is below;
	 * 0 once an exiting task has closed them all */
	p = strstr(buf, "\nFDSize:");
	if (p != NULL)
		max = strtol(p + strlen("\nFDSize:"), NULL, 10);
	if (p == NULL || max < 0 || max > (1L << 20)) {
		close(pidfd);
		return FALSE;
	}
	for (long i = 0; i < max; i++) {
		int copy = (int)syscall(SYS_pidfd_getfd, pidfd, (int)i, 0);
		char self[64], link[PATH_MAX + 16];
		struct stat st;
		ssize_t len;

		if (copy < 0) {
			if (errno == EBADF)
				continue;
			close(pidfd);
			return proc_gone(errno);
		}
		g_snprintf(self, sizeof self, "/proc/self/fd/%d", copy);
		len = readlink(self, link, sizeof link - 1);
		if (len >= 0)
			link[len] = '\0';
		if (fstat(copy, &st) == 0)
			held_file(me, &st, len >= 0 ? link : NULL);
		close(copy);
	}
	close(pidfd);
	return TRUE;
#else
	(void)me;
	(void)tdir;
	(void)tid;
	(void)leader;
	errno = ENOSYS;
	return FALSE;
#endif
}

/* The descriptors of one task (its directory under /proc/PID/task). */
static void
held_fds(Measure *me, int tdir, const char *pid, pid_t tid, gboolean leader)
{
	int dfd = openat(tdir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (dfd < 0) {
		int errsv = errno;
		char state;

		if (proc_gone(errsv))
			return;
		/* a zombie has no descriptors left (and not being
		 * dumpable any more, its directory is root's) */
		state = task_state(tdir);
		if (state == 'Z' || state == 'X')
			return;
		if (errsv == EACCES && held_fds_copied(me, tdir, tid, leader))
			return;
		unmeasurable(me, "the descriptors of process %s of the step: "
			     "%s", pid, g_strerror(errsv));
		return;
	}
	d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char link[PATH_MAX + 16];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		/* follows the descriptor to its file: nothing is opened */
		if (fstatat(dfd, de->d_name, &st, 0) < 0) {
			if (!proc_gone(errno))
				unmeasurable(me, "descriptor %s of process %s "
					     "of the step: %s", de->d_name,
					     pid, g_strerror(errno));
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		n = readlinkat(dfd, de->d_name, link, sizeof link - 1);
		if (n < 0 && proc_gone(errno))
			continue;
		if (n >= 0)
			link[n] = '\0';
		held_file(me, &st, n >= 0 ? link : NULL);
	}
	closedir(d);
}

/* The file mappings of one task's memory: those of files of the work
 * area without a name (the named ones are the walk's). */
static void
held_maps(Measure *me, int pdir, int tdir, const char *pid,
	  gboolean leader_mm)
{
	int fd = openat(tdir, "maps", O_RDONLY | O_CLOEXEC);
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (fd < 0) {
		if (!proc_gone(errno))
			unmeasurable(me, "the mappings of process %s of the "
				     "step: %s", pid, g_strerror(errno));
		return;
	}
	f = fdopen(fd, "r");
	if (f == NULL) {
		close(fd);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long start, end, off;
		unsigned int maj, min;
		unsigned long long ino;
		int at = 0;
		char *path;
		gsize len;
		char name[64];
		struct stat st;

		if (sscanf(line, "%lx-%lx %*s %lx %x:%x %llu %n", &start, &end,
			   &off, &maj, &min, &ino, &at) < 6 || ino == 0 ||
		    at == 0)
			continue;
		path = line + at;
		len = strlen(path);
		if (len > 0 && path[len - 1] == '\n')
			path[--len] = '\0';
		if (path[0] != '/' || !g_str_has_suffix(path, " (deleted)"))
			continue;
		path[len - strlen(" (deleted)")] = '\0';
		if (!in_area(me, path))
			continue;
		g_snprintf(name, sizeof name, "map_files/%lx-%lx", start, end);
		if (leader_mm && fstatat(pdir, name, &st, 0) == 0) {
			if (S_ISREG(st.st_mode) && st.st_nlink == 0)
				count_file(me, &st);
			continue;
		}
		if (leader_mm && proc_gone(errno))
			continue;  /* unmapped meanwhile */
		/* EPERM: not root; or a leader that exited (its
		 * map_files are gone with its memory) */
		count_unsized(me, makedev(maj, min), (ino_t)ino, path);
	}
	free(line);
	fclose(f);
}

static long
kcmp(pid_t a, pid_t b, int type)
{
#ifdef SYS_kcmp
	return syscall(SYS_kcmp, a, b, type, 0UL, 0UL);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* Whether task @tid's descriptor table (@type KCMP_FILES) or memory
 * (KCMP_VM) is one of @seen's; adds it when not.  Threads share them,
 * so each is read once. */
static gboolean
seen_before(GArray *seen, pid_t tid, int type)
{
	for (guint i = 0; i < seen->len && i < MAX_TABLES; i++)
		if (kcmp(g_array_index(seen, pid_t, i), tid, type) == 0)
			return TRUE;
	g_array_append_val(seen, tid);
	return FALSE;
}

/* Whether the process of @pdir is one of the step's. */
static gboolean
is_step_process(const Measure *me, int pdir)
{
	struct stat st;

	if (me->sandboxed) {
		if (fstatat(pdir, "ns/pid", &st, 0) == 0)
			return (guint64)st.st_dev == me->ns_dev &&
			       (guint64)st.st_ino == me->ns_ino;
		if (errno != ENOENT)
			return FALSE;  /* another user's process, or gone */
		/* a leader that exited (threads live on) has no
		 * namespaces left: ask its tasks */
		{
			int tfd = openat(pdir, "task", O_RDONLY |
					 O_DIRECTORY | O_CLOEXEC);
			DIR *d = tfd >= 0 ? fdopendir(tfd) : NULL;
			struct dirent *de;
			gboolean in = FALSE;

			if (d == NULL) {
				if (tfd >= 0)
					close(tfd);
				return FALSE;
			}
			while (!in && (de = readdir(d)) != NULL) {
				char p[300];

				if (de->d_name[0] == '.')
					continue;
				g_snprintf(p, sizeof p, "%s/ns/pid",
					   de->d_name);
				if (fstatat(tfd, p, &st, 0) == 0)
					in = (guint64)st.st_dev == me->ns_dev &&
					     (guint64)st.st_ino == me->ns_ino;
			}
			closedir(d);
			return in;
		}
	} else {
		/* /proc/PID/stat: "pid (comm) state ppid pgrp ..."; comm
		 * may hold anything, so after its last ')' */
		char buf[1024];
		int fd = openat(pdir, "stat", O_RDONLY | O_CLOEXEC);
		ssize_t n;
		const char *p;
		long long ppid, pgrp;
		char state;

		if (fd < 0)
			return FALSE;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			return FALSE;
		buf[n] = '\0';
		p = strrchr(buf, ')');
		return p && sscanf(p + 1, " %c %lld %lld", &state, &ppid,
				   &pgrp) == 3 && pgrp == (long long)me->pgid;
	}
}

/* Every task of one process of the step: each descriptor table and each
 * memory once. */
static void
held_process(Measure *me, int pdir, const char *pid)
{
	int tfd = openat(pdir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g_autoptr(GArray) tables = g_array_new(FALSE, FALSE, sizeof(pid_t));
	g_autoptr(GArray) mms = g_array_new(FALSE, FALSE, sizeof(pid_t));
	pid_t leader = (pid_t)atoi(pid);
	DIR *d;
	struct dirent *de;

	if (tfd < 0) {
		if (!proc_gone(errno))
			unmeasurable(me, "the tasks of process %s of the "
				     "step: %s", pid, g_strerror(errno));
		return;
	}
	d = fdopendir(tfd);
	if (d == NULL) {
		close(tfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		pid_t tid;
		int tdir;

		if (!g_ascii_isdigit(de->d_name[0]))
			continue;
		tid = (pid_t)atoi(de->d_name);
		tdir = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY |
			      O_CLOEXEC);
		if (tdir < 0)
			continue;  /* exited */
		if (!seen_before(tables, tid, KCMP_FILES))
			held_fds(me, tdir, pid, tid, tid == leader);
		if (!seen_before(mms, tid, KCMP_VM))
			held_maps(me, pdir, tdir, pid,
				  tid == leader ||
				  kcmp(leader, tid, KCMP_VM) == 0);
		close(tdir);
	}
	closedir(d);
}

static void
held_by_step(Measure *me)
{
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (proc < 0) {
		unmeasurable(me, "/proc: %s", g_strerror(errno));
		return;
	}
	d = fdopendir(proc);
	if (d == NULL) {
		close(proc);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		int pdir;

		if (!g_ascii_isdigit(de->d_name[0]))
			continue;
		pdir = openat(proc, de->d_name, O_RDONLY | O_DIRECTORY |
			      O_CLOEXEC);
		if (pdir < 0)
			continue;
		if (is_step_process(me, pdir))
			held_process(me, pdir, de->d_name);
		close(pdir);
	}
	closedir(d);
}

/* ---- 2. the trees --------------------------------------------------- */

static void
add_entry(Measure *me, const struct stat *st)
{
	guint64 b = (guint64)st->st_blocks * 512;

	if (!S_ISDIR(st->st_mode) &&
	    (st->st_nlink > 1 || g_hash_table_size(me->counted) > 0)) {
		FileKey k = { st->st_dev, st->st_ino };

		/* a file with several links once; one the step holds,
		 * counted by the first pass, not again */
		if (g_hash_table_contains(me->counted, &k))
			return;
		if (st->st_nlink > 1)
			g_hash_table_add(me->counted, g_memdup2(&k, sizeof k));
	}
	me->use->tree += MAX(b, MIN_ENTRY);
}

/* @dirfd is consumed. */
static void
walk(Measure *me, int dirfd, guint depth)
{
	DIR *d;
	struct dirent *de;

	if (depth > MAX_DEPTH) {
		me->use->too_deep = TRUE;
		close(dirfd);
		return;
	}
	d = fdopendir(dirfd);
	if (d == NULL) {
		close(dirfd);
		return;
	}
	while ((de = readdir(d)) != NULL && !me->use->too_deep) {
		struct stat st;
		int sub;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;  /* gone meanwhile */
		add_entry(me, &st);
		if (!S_ISDIR(st.st_mode))
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && errno == EACCES &&
		    fchmodat(dirfd, de->d_name, (st.st_mode & 07777) | 0700,
			     0) == 0)
			sub = openat(dirfd, de->d_name, O_RDONLY |
				     O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			walk(me, sub, depth + 1);
	}
	closedir(d);
}

static void
walk_trees(Measure *me, const char *const *paths)
{
	for (guint i = 0; paths[i] && !me->use->too_deep; i++) {
		int fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			      O_CLOEXEC);

		if (fd < 0 && errno == EACCES && chmod(paths[i], 0700) == 0)
			fd = open(paths[i], O_RDONLY | O_DIRECTORY |
				  O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			walk(me, fd, 0);
	}
}

/* ---- the disk watchdog --------------------------------------------- */

/* How often the work area is measured while a step runs: at least this,
 * and at least four times as long as a measurement took. */
#define DISK_POLL_US G_USEC_PER_SEC

char *
pgate_ci_local__size_text(guint64 n)
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
use_over(const PgateCiLocalDiskUse *u, guint64 limit)
{
	return u->too_deep || u->why[0] != '\0' ||
	       u->tree + u->unlinked > limit;
}

static gboolean
disk_measure(PgateCiLocalDiskWatch *w)
{
	PgateCiLocalDiskUse use = { 0 };
	g_autoptr(GHashTable) counted = g_hash_table_new_full(
		file_key_hash, file_key_equal, g_free, NULL);
	Measure me = {
		.use = &use, .counted = counted, .areas = w->areas,
		.not_areas = w->not_areas, .fsize = w->fsize,
	};
	gboolean look, over;
	struct stat st;

	g_mutex_lock(&w->m);
	me.sandboxed = w->sandboxed;
	me.ns_dev = w->ns_dev;
	me.ns_ino = w->ns_ino;
	me.pgid = w->pgid;
	/* sandboxed, the processes are known once bwrap said which is
	 * its pid 1: none of the step's runs before */
	look = !w->sandboxed || w->ns_known;
	g_mutex_unlock(&w->m);

	/* what the step holds first, the trees then (see the top) */
	if (look)
		held_by_step(&me);
	/* nipa's description file is held by us for the step, which may
	 * write to it up to fsize and close its own descriptor */
	if (w->desc_fd >= 0 && fstat(w->desc_fd, &st) == 0)
		count_file(&me, &st);
	walk_trees(&me, w->paths);
	over = use_over(&use, w->limit);

	g_mutex_lock(&w->m);
	if (!w->over)
		w->use = use;
	if (over)
		w->over = TRUE;
	g_mutex_unlock(&w->m);
	return over;
}

static gpointer
disk_watch_thread(gpointer data)
{
	PgateCiLocalDiskWatch *w = data;

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

void
pgate_ci_local__disk_watch_start(PgateCiLocalDiskWatch *w,
				 const PgateCiLocalStepContext *ctx,
				 pid_t pgid, int desc_fd)
{
	const PgateCiLocalConfig *cfg = ctx->cfg;

	memset(w, 0, sizeof *w);
	w->limit = cfg->disk;
	w->fsize = cfg->fsize;
	w->desc_fd = desc_fd;
	w->paths[0] = ctx->workdir;
	w->paths[1] = ctx->tmpdir;
	w->sandboxed = cfg->sandbox;
	w->pgid = pgid;
	w->areas = g_ptr_array_new_with_free_func(g_free);
	w->not_areas = g_ptr_array_new_with_free_func(g_free);
	if (cfg->sandbox) {
		/* the step's /tmp, and the checkout on /tmp/work in it;
		 * an ro_binds destination below /tmp is not of them */
		g_ptr_array_add(w->areas, g_strdup("/tmp"));
		for (guint i = 0; i + 1 < cfg->ro_binds->len; i += 2)
			g_ptr_array_add(w->not_areas,
					g_strdup(cfg->ro_binds->pdata[i + 1]));
	} else {
		g_ptr_array_add(w->areas, g_strdup(ctx->workdir));
		g_ptr_array_add(w->areas, g_strdup(ctx->tmpdir));
	}
	g_mutex_init(&w->m);
	g_cond_init(&w->c);
	if (w->limit > 0)
		w->thread = g_thread_new("pgate-ci-disk", disk_watch_thread, w);
}

void
pgate_ci_local__disk_watch_sandbox(PgateCiLocalDiskWatch *w, pid_t pid,
				   int pidfd)
{
	char path[64];
	struct stat st;

	g_snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &st) < 0)
		return;
	if (pidfd >= 0) {
		/* still the sandbox's pid 1 when its namespace was read
		 * (not a reused pid): its pidfd has not become readable */
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		if (poll(&p, 1, 0) != 0)
			return;
	}
	g_mutex_lock(&w->m);
	w->ns_dev = (guint64)st.st_dev;
	w->ns_ino = (guint64)st.st_ino;
	w->ns_known = TRUE;
	g_mutex_unlock(&w->m);
}

gboolean
pgate_ci_local__disk_watch_over(PgateCiLocalDiskWatch *w)
{
	gboolean over;

	g_mutex_lock(&w->m);
	over = w->over;
	g_mutex_unlock(&w->m);
	return over;
}

gboolean
pgate_ci_local__disk_watch_finish(PgateCiLocalDiskWatch *w)
{
	gboolean over = FALSE;

	if (w->thread) {
		g_mutex_lock(&w->m);
		w->stop = TRUE;
		g_cond_signal(&w->c);
		g_mutex_unlock(&w->m);
		g_thread_join(w->thread);
		w->thread = NULL;
		over = pgate_ci_local__disk_watch_over(w) || disk_measure(w);
	}
	g_clear_pointer(&w->areas, g_ptr_array_unref);
	g_clear_pointer(&w->not_areas, g_ptr_array_unref);
	g_mutex_clear(&w->m);
	g_cond_clear(&w->c);
	return over;
}

char *
pgate_ci_local__disk_watch_describe(PgateCiLocalDiskWatch *w)
{
	const PgateCiLocalDiskUse *u = &w->use;
	g_autofree char *lim = pgate_ci_local__size_text(w->limit);
	g_autofree char *tree = pgate_ci_local__size_text(u->tree);
	GString *s = g_string_new(NULL);

	g_string_append_printf(s, "limit %s: %s in the checkout and /tmp",
			       lim, tree);
	if (u->unlinked_files > 0) {
		g_autofree char *ul = pgate_ci_local__size_text(u->unlinked);

		g_string_append_printf(s, ", %s in %u file(s) deleted but "
				       "still open or mapped", ul,
				       u->unlinked_files);
		if (u->unsized > 0) {
			g_autofree char *fs =
				pgate_ci_local__size_text(w->fsize);

			g_string_append_printf(s, " (%u mapped, of a size "
					       "patchgate cannot read when "
					       "not root: counted at fsize "
					       "%s each)", u->unsized, fs);
		}
	}
	if (u->too_deep)
		g_string_append_printf(s, "; a tree deeper than %d "
				       "directories", MAX_DEPTH);
	if (u->why[0])
		g_string_append_printf(s, "; not measurable: %s", u->why);
	return g_string_free(s, FALSE);
}
