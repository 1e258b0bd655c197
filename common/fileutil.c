/* fileutil.c - durable writes and bounded reads */
#include "common/pgate-common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gboolean
set_errno_error(GError **error, GQuark domain, int errsv, const char *what,
		const char *path)
{
	g_set_error(error, domain, pgate_error_errno_code(errsv), "%s %s: %s",
		    what, path, g_strerror(errsv));
	return FALSE;
}

gboolean
pgate_fsync_dir(const char *dir, GQuark domain, GError **error)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return set_errno_error(error, domain, errno, "open", dir);
	if (fsync(fd) < 0 && errno != EINVAL) {
		int errsv = errno;

		close(fd);
		return set_errno_error(error, domain, errsv, "fsync", dir);
	}
	close(fd);
	return TRUE;
}

gboolean
pgate_mkdir_p(const char *dir, GQuark domain, GError **error)
{
	if (g_mkdir_with_parents(dir, 0700) < 0)
		return set_errno_error(error, domain, errno, "mkdir", dir);
	return TRUE;
}

static gboolean
write_all(int fd, const guint8 *p, gsize len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return FALSE;
		}
		p += n;
		len -= (gsize)n;
	}
	return TRUE;
}

gboolean
pgate_file_replace(const char *path, const void *data, gsize len, int mode,
		   GQuark domain, GError **error)
{
	g_autofree char *tmp = g_strdup_printf("%s.tmp.%ld", path, (long)getpid());
	int fd;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST) {
		/* left over from a process with our pid that died: ours now */
		unlink(tmp);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	}
	if (fd < 0)
		return set_errno_error(error, domain, errno, "create", tmp);
	if (!write_all(fd, data, len) || fsync(fd) < 0) {
		int errsv = errno;

		close(fd);
		unlink(tmp);
		return set_errno_error(error, domain, errsv, "write", tmp);
	}
	if (close(fd) < 0) {
		int errsv = errno;

		unlink(tmp);
		return set_errno_error(error, domain, errsv, "close", tmp);
	}
	if (rename(tmp, path) < 0) {
		int errsv = errno;

		unlink(tmp);
		return set_errno_error(error, domain, errsv, "rename", path);
	}
	return TRUE;
}

gboolean
pgate_file_write_atomic(const char *path, const void *data, gsize len,
			GQuark domain, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(path);

	return pgate_file_replace(path, data, len, 0600, domain, error) &&
	       pgate_fsync_dir(dir, domain, error);
}

GBytes *
pgate_fd_read_bounded(int fd, gsize max, gboolean *out_overflow, GQuark domain,
		      GError **error)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	guint8 chunk[65536];

	if (out_overflow)
		*out_overflow = FALSE;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			set_errno_error(error, domain, errno, "read", "input");
			return NULL;
		}
		if (n == 0)
			break;
		g_byte_array_append(buf, chunk, (guint)n);
		if (buf->len > max) {
			/* stop here: the caller decides what to do with
			 * the rest, which is still unread on fd */
			if (out_overflow)
				*out_overflow = TRUE;
			break;
		}
	}
	return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}
