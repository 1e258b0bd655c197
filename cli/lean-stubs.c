/*
 * lean-stubs.c - stand-ins for libmount and libselinux in the delivery hook
 *
 * Linked only into the lean, statically linked `patchgate` (meson option
 * static_hook).  GMime's g_mime_init() registers GMimeStreamGIO, whose
 * GFile reference pulls GIO's local-file and unix-mount code out of the
 * static libgio, and that code calls libmount and libselinux.  Debian ships
 * libmount as a shared library only, and loading it (with libselinux,
 * libblkid and libpcre2 behind it) costs every delivery about 0.45 ms of
 * its 3.5 (bench/deliver.sh; docs/config.md, "Building").
 *
 * No command of the lean binary touches a GFile, a mount table or a file's
 * security context: the mail is read from stdin and files, the store is
 * LMDB.  Were one of these ever called, it answers as a system without
 * mount tables and without SELinux would, and GIO copes with that: it
 * checks every result.  tests/cli/t0115-lean-hook.sh checks that
 * the lean binary loads neither library and still delivers.
 *
 * The prototypes come from the libraries' own headers, so a signature
 * that drifts is a compile error.
 */

#include <errno.h>
#include <libmount/libmount.h>
#include <selinux/selinux.h>
#include <stddef.h>

/* libmount: no mount table, no fstab. */

struct libmnt_table *
mnt_new_table(void)
{
	return NULL;
}

void
mnt_free_table(struct libmnt_table *tb)
{
	(void)tb;
}

struct libmnt_iter *
mnt_new_iter(int direction)
{
	(void)direction;
	return NULL;
}

void
mnt_free_iter(struct libmnt_iter *itr)
{
	(void)itr;
}

int
mnt_table_parse_mtab(struct libmnt_table *tb, const char *filename)
{
	(void)tb;
	(void)filename;
	return -ENOSYS;
}

int
mnt_table_parse_fstab(struct libmnt_table *tb, const char *filename)
{
	(void)tb;
	(void)filename;
	return -ENOSYS;
}

int
mnt_table_next_fs(struct libmnt_table *tb, struct libmnt_iter *itr,
		  struct libmnt_fs **fs)
{
	(void)tb;
	(void)itr;
	if (fs)
		*fs = NULL;
	return 1;   /* end of table */
}

const char *
mnt_fs_get_source(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

const char *
mnt_fs_get_target(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

const char *
mnt_fs_get_fstype(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

const char *
mnt_fs_get_options(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

const char *
mnt_fs_get_root(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

char *
mnt_fs_strdup_options(struct libmnt_fs *fs)
{
	(void)fs;
	return NULL;
}

const struct libmnt_optmap *
mnt_get_builtin_optmap(int id)
{
	(void)id;
	return NULL;
}

const char *
mnt_get_fstab_path(void)
{
	return "/etc/fstab";
}

int
mnt_has_regular_mtab(const char **mtab, int *writable)
{
	if (mtab)
		*mtab = NULL;
	if (writable)
		*writable = 0;
	return 0;
}

int
mnt_optstr_get_flags(const char *optstr, unsigned long *flags,
		     const struct libmnt_optmap *map)
{
	(void)optstr;
	(void)map;
	if (flags)
		*flags = 0;
	return -ENOSYS;
}

/* libselinux: SELinux is off, files have no context. */

int
is_selinux_enabled(void)
{
	return 0;
}

void
freecon(char *con)
{
	(void)con;
}

int
getfilecon_raw(const char *path, char **con)
{
	(void)path;
	(void)con;
	errno = ENOTSUP;
	return -1;
}

int
lgetfilecon_raw(const char *path, char **con)
{
	(void)path;
	(void)con;
	errno = ENOTSUP;
	return -1;
}

int
fgetfilecon_raw(int fd, char **con)
{
	(void)fd;
	(void)con;
	errno = ENOTSUP;
	return -1;
}

int
setfilecon_raw(const char *path, const char *con)
{
	(void)path;
	(void)con;
	errno = ENOTSUP;
	return -1;
}
