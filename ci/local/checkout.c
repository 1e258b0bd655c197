/* checkout.c - a commit's tree in a work directory, with libgit2.
 *
 * git_checkout_tree() with a target directory writes only the files of the
 * tree there: the repository (bare or not) is opened read-only in effect
 * (GIT_CHECKOUT_DONT_UPDATE_INDEX; HEAD is never moved).  No git
 * subprocess runs, and no filter but libgit2's built-in ones (no smudge
 * commands from a hostile .gitattributes).  libgit2 errors are translated
 * here, once.
 */
#include "ci/local/local-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
#define PG_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

/* deeper directories than this are not walked (chown, removal) */
#define MAX_DEPTH 512

/* Once per process, never shut down: worker threads end after the
 * backend that started them is freed, and libgit2 frees their state only
 * while it is initialised. */
void
pgate_ci_local__git_init(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		git_libgit2_init();
		g_once_init_leave(&done, 1);
	}
}

static gboolean
set_git_error(GError **error, int rc, const char *what, const char *where)
{
	const git_error *e = git_error_last();

	g_set_error(error, PGATE_CI_ERROR,
		    rc == GIT_ENOTFOUND ? PGATE_ERROR_NOT_FOUND
					: PGATE_ERROR_FAILED,
		    "%s %s: %s", what, where,
		    e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

/* Opens @path, saying why when libgit2's ownership check refused it. */
static gboolean
open_repo(git_repository **out, const char *path, GError **error)
{
	struct stat st;
	int rc;

	rc = git_repository_open_ext(out, path, GIT_REPOSITORY_OPEN_NO_SEARCH,
				     NULL);
	if (rc == 0)
		return TRUE;
	if (stat(path, &st) == 0 && st.st_uid != geteuid()) {
		g_autofree char *where = g_strdup_printf(
			"%s (owned by uid %u: libgit2 opens only repositories "
			"of the user it runs as, uid %u)", path,
			(unsigned)st.st_uid, (unsigned)geteuid());

		return set_git_error(error, rc, "opening repository", where);
	}
	set_git_error(error, rc, "opening repository", path);
	return FALSE;
}

static gboolean
lookup_commit(git_repository **out_repo, git_commit **out_commit,
	      const char *repo_path, const char *hex, GError **error)
{
	PG_AUTO(git_repository) repo = NULL;
	git_oid oid;
	int rc;

	if (strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstr(&oid, hex) < 0) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "\"%s\" is not a full hex object id", hex);
		return FALSE;
	}
	if (!open_repo(&repo, repo_path, error))
		return FALSE;
	rc = git_commit_lookup(out_commit, repo, &oid);
	if (rc < 0)
		return set_git_error(error, rc, "looking up commit", hex);
	*out_repo = g_steal_pointer(&repo);
	return TRUE;
}

gboolean
pgate_ci_local__commits_check(const char *repo_path,
			      const char *const *commits, guint n,
			      GError **error)
{
	PG_AUTO(git_repository) repo = NULL;
	int rc;

	if (!open_repo(&repo, repo_path, error))
		return FALSE;
	for (guint i = 0; i < n; i++) {
		PG_AUTO(git_commit) c = NULL;
		git_oid oid;

		if (strlen(commits[i]) != GIT_OID_HEXSZ ||
		    git_oid_fromstr(&oid, commits[i]) < 0) {
			g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
				    "\"%s\" is not a full hex object id",
				    commits[i]);
			return FALSE;
		}
		rc = git_commit_lookup(&c, repo, &oid);
		if (rc < 0)
			return set_git_error(error, rc, "looking up commit",
					     commits[i]);
	}
	return TRUE;
}

typedef gboolean (*WalkFunc)(int dirfd, const char *name,
			     const struct stat *st, gpointer data);

/* Calls @fn for every entry below @dirfd, children before their
 * directory, never following symlinks.  @dirfd is consumed. */
static gboolean
walk(int dirfd, guint depth, WalkFunc fn, gpointer data)
{
	DIR *d;
	struct dirent *de;
	gboolean ok = TRUE;

	if (depth > MAX_DEPTH) {
		close(dirfd);
		errno = ELOOP;
		return FALSE;
	}
	d = fdopendir(dirfd);
	if (d == NULL) {
		close(dirfd);
		return FALSE;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (g_str_equal(de->d_name, ".") ||
		    g_str_equal(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ok = FALSE;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub < 0 && errno == EACCES &&
			    fchmodat(dirfd, de->d_name, 0700, 0) == 0)
				sub = openat(dirfd, de->d_name,
					     O_RDONLY | O_DIRECTORY |
					     O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || !walk(sub, depth + 1, fn, data))
				ok = FALSE;
		}
		if (!fn(dirfd, de->d_name, &st, data))
			ok = FALSE;
	}
	closedir(d);
	return ok;
}

typedef struct {
	uid_t uid;
	gid_t gid;
} Owner;

static gboolean
chown_one(int dirfd, const char *name, const struct stat *st, gpointer data)
{
	const Owner *o = data;

	return fchownat(dirfd, name, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) == 0;
}

static gboolean
remove_one(int dirfd, const char *name, const struct stat *st, gpointer data)
{
	if (unlinkat(dirfd, name, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) == 0)
		return TRUE;
	return errno == ENOENT;
}

gboolean
pgate_ci_local__rm_rf(const char *path, GError **error)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return TRUE;
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == EACCES && chmod(path, 0700) == 0)
			fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC);
		if (fd < 0 || !walk(fd, 0, remove_one, NULL))
			goto fail;
		if (rmdir(path) < 0)
			goto fail;
		return TRUE;
	}
	if (unlink(path) == 0)
		return TRUE;
fail:
	g_set_error(error, PGATE_CI_ERROR, pgate_error_errno_code(errno),
		    "removing %s: %s", path, g_strerror(errno));
	return FALSE;
}

char *
pgate_ci_local__git_objects(const char *repo_path)
{
	PG_AUTO(git_repository) repo = NULL;

	pgate_ci_local__git_init();
	if (git_repository_open_ext(&repo, repo_path,
				    GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
		return NULL;
	return g_build_filename(git_repository_path(repo), "objects", NULL);
}

/* nipa = on: @dir/.git, made with libgit2 (no git process): HEAD is
 * @c, detached; the index is @tree; the objects are the repository's,
 * through objects/info/alternates (where the sandbox sees them, or with
 * sandbox = off where they are). */
static gboolean
git_metadata(const PgateCiLocalConfig *cfg, git_repository *repo,
	     git_commit *c, git_tree *tree, const char *dir, GError **error)
{
	PG_AUTO(git_repository) work = NULL;
	g_autofree char *gitdir = g_build_filename(dir, ".git", NULL);
	g_autofree char *objects = g_build_filename(git_repository_path(repo),
						    "objects", NULL);
	g_autofree char *alt = g_build_filename(gitdir, "objects", "info",
						"alternates", NULL);
	g_autofree char *head = g_build_filename(gitdir, "HEAD", NULL);
	g_autofree char *alt_text = g_strdup_printf(
		"%s\n", cfg->sandbox ? PGATE_CI_LOCAL_OBJECTS_MOUNT : objects);
	g_autofree char *head_text = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	git_index *index = NULL;
	int rc;

	rc = git_repository_init(&work, dir, 0);
	if (rc < 0)
		return set_git_error(error, rc, "making a .git in", dir);
	git_oid_tostr(hex, sizeof hex, git_commit_id(c));
	head_text = g_strdup_printf("%s\n", hex);
	if (!g_file_set_contents(alt, alt_text, -1, error) ||
	    !g_file_set_contents(head, head_text, -1, error))
		return FALSE;
	rc = git_repository_index(&index, work);
	if (rc >= 0)
		rc = git_index_read_tree(index, tree);
	if (rc >= 0)
		rc = git_index_write(index);
	git_index_free(index);
	if (rc < 0)
		return set_git_error(error, rc, "writing the index of", hex);
	return TRUE;
}

gboolean
pgate_ci_local__checkout(const PgateCiLocalConfig *cfg, const char *repo_path,
			 const char *commit, const char *dir, GError **error)
{
	PG_AUTO(git_repository) repo = NULL;
	PG_AUTO(git_commit) c = NULL;
	PG_AUTO(git_tree) tree = NULL;
	git_checkout_options opts;
	int rc;

	g_return_val_if_fail(g_path_is_absolute(dir), FALSE);
	if (!lookup_commit(&repo, &c, repo_path, commit, error))
		return FALSE;
	rc = git_commit_tree(&tree, c);
	if (rc < 0)
		return set_git_error(error, rc, "reading the tree of", commit);
	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_FORCE |
				 GIT_CHECKOUT_DONT_UPDATE_INDEX |
				 GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	opts.target_directory = dir;
	opts.dir_mode = 0755;
	rc = git_checkout_tree(repo, (const git_object *)tree, &opts);
	if (rc < 0)
		return set_git_error(error, rc, "checking out", commit);
	if (cfg->nipa && !git_metadata(cfg, repo, c, tree, dir, error))
		return FALSE;
	if (cfg->drop) {
		Owner o = { cfg->uid, cfg->gid };
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			      O_CLOEXEC);

		if (fd < 0 || !walk(fd, 0, chown_one, &o) ||
		    chown(dir, o.uid, o.gid) < 0) {
			g_set_error(error, PGATE_CI_ERROR,
				    pgate_error_errno_code(errno),
				    "giving %s to uid %u: %s", dir,
				    (unsigned)o.uid, g_strerror(errno));
			return FALSE;
		}
	}
	return TRUE;
}
