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
