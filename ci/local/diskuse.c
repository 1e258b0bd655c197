/* diskuse.c - how much disk a step's work area takes (the `disk` limit).
 *
 * A step may write anywhere in its checkout and its /tmp, both
 * directories on the host's disk (docs/ci-local.md).  Their use is
 * measured by walking them, as du does: every entry's allocated blocks,
 * at least one 4 KiB block an entry (so that a flood of empty files or
 * symlinks, which use inodes, counts too), a file with several links
 * once.  The walk never follows a symlink, tolerates entries that vanish
 * under it (the build is running), and gives a directory the step made
 * unreadable back to its owner (u+rwx) so that nothing can be hidden
 * from it; deeper than MAX_DEPTH it stops and says so, which the caller
 * treats as over the limit.
 *
 * While a step runs, a watchdog thread measures them again and again
 * (pgate_ci_local__disk_watch_start): the step is killed once they are
 * over the limit.
 */
#include "ci/local/local-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 512
#define MIN_ENTRY 4096

typedef struct {
	guint64 bytes;
	GHashTable *links;     /* dev:ino of files with several links */
	gboolean too_deep;
} Use;

static void
add_entry(Use *u, const struct stat *st)
{
	guint64 b = (guint64)st->st_blocks * 512;

	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		char *key = g_strdup_printf("%ju:%ju", (uintmax_t)st->st_dev,
					    (uintmax_t)st->st_ino);

		if (!g_hash_table_add(u->links, key))
			return;  /* counted already */
	}
	u->bytes += MAX(b, MIN_ENTRY);
}

/* @dirfd is consumed. */
static void
walk(Use *u, int dirfd, guint depth)
{
	DIR *d;
	struct dirent *de;

	if (depth > MAX_DEPTH) {
		u->too_deep = TRUE;
		close(dirfd);
		return;
	}
	d = fdopendir(dirfd);
	if (d == NULL) {
		close(dirfd);
		return;
	}
	while ((de = readdir(d)) != NULL && !u->too_deep) {
		struct stat st;
		int sub;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;  /* gone meanwhile */
		add_entry(u, &st);
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
			walk(u, sub, depth + 1);
	}
	closedir(d);
}

guint64
pgate_ci_local__disk_use(const char *const *paths, gboolean *out_too_deep)
{
	Use u = { 0 };

	u.links = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; paths[i] && !u.too_deep; i++) {
		int fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			      O_CLOEXEC);

		if (fd < 0 && errno == EACCES && chmod(paths[i], 0700) == 0)
			fd = open(paths[i], O_RDONLY | O_DIRECTORY |
				  O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			walk(&u, fd, 0);
	}
	g_hash_table_unref(u.links);
	*out_too_deep = u.too_deep;
	return u.bytes;
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
disk_measure(PgateCiLocalDiskWatch *w)
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
				 const PgateCiLocalStepContext *ctx)
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
	g_mutex_clear(&w->m);
	g_cond_clear(&w->c);
	return over;
}
