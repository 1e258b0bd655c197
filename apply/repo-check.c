/* repo-check.c - what `patchgate config check` asks of a repository the
 * configuration names, without changing it: that it is one, that the
 * branches to apply to are in it, that a remote to fetch is configured,
 * that a ref name made from ref_format is one git takes.  The repository
 * is opened as the apply stage opens it (libgit2, no search upwards), and
 * only read: no object, ref, lock or index is written, so that a check
 * run by an administrator leaves nothing behind owned by the wrong user.
 */
#include "apply/apply-private.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libgit2's failure as the configuration's fault: what it names cannot
 * be used as it is (a repository of another owner, a broken config). */
static gboolean
config_git_error(GError **error, int rc, const char *what)
{
	g_autoptr(GError) local = NULL;

	pgate_apply__git_error(&local, rc, what);
	g_set_error_literal(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    local->message);
	return FALSE;
}

/* Whether @path has what a git directory has (bare, or with .git/). */
static gboolean
looks_like_repo(const char *path)
{
	g_autofree char *head = g_build_filename(path, "HEAD", NULL);
	g_autofree char *dot = g_build_filename(path, ".git", "HEAD", NULL);

	return g_file_test(head, G_FILE_TEST_EXISTS) ||
	       g_file_test(dot, G_FILE_TEST_EXISTS);
}

/* Opens @repo_path, saying why it cannot be, in words for a person. */
static git_repository *
check_open(const char *repo_path, GError **error)
{
	git_repository *repo = NULL;
	struct stat st;
	int rc;

	pgate_apply__git_init();
	if (stat(repo_path, &st) < 0) {
		int e = errno;

		g_set_error(error, PGATE_APPLY_ERROR,
			    e == ENOENT ? PGATE_ERROR_NOT_FOUND
					: PGATE_ERROR_CONFIG,
			    e == ENOENT ? "%s does not exist" : "%s: %s",
			    repo_path, g_strerror(e));
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "%s is not a directory, so no git repository",
			    repo_path);
		return NULL;
	}
	/* libgit2 says "could not find repository" of a directory this
	 * user may not read as of one that is none */
	if (access(repo_path, R_OK | X_OK) < 0) {
		int e = errno;

		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "%s: %s (user %s may not read it)", repo_path,
			    g_strerror(e), g_get_user_name());
		return NULL;
	}
	rc = git_repository_open_ext(&repo, repo_path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND && looks_like_repo(repo_path) &&
	    st.st_uid != geteuid()) {
		/* libgit2 1.5 says "config value 'safe.directory' was not
		 * found" of a repository it refuses as git does since
		 * 2.35.2: one of another owner */
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "%s is owned by uid %u, not by user %s, and libgit2 "
			    "(as git) opens no repository of another owner: "
			    "run patchgate as its owner, or name it in "
			    "safe.directory of that user's git configuration",
			    repo_path, (unsigned)st.st_uid, g_get_user_name());
		return NULL;
	}
	if (rc == GIT_ENOTFOUND) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "%s is not a git repository", repo_path);
		return NULL;
	}
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("cannot open %s",
							repo_path);

		config_git_error(error, rc, what);
		return NULL;
	}
	return repo;
}

gboolean
pgate_apply_check_repo(const char *repo_path, GError **error)
{
	git_repository *repo = check_open(repo_path, error);

	if (repo == NULL)
		return FALSE;
	git_repository_free(repo);
	return TRUE;
}

GPtrArray *
pgate_apply_check_revs(const char *repo_path, const char *const *revs,
		       GError **error)
{
	PGATE_GIT_AUTO(git_repository) repo = check_open(repo_path, error);
	GPtrArray *missing;

	if (repo == NULL)
		return NULL;
	missing = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; revs != NULL && revs[i] != NULL; i++) {
		PGATE_GIT_AUTO(git_object) o = NULL;
		PGATE_GIT_AUTO(git_object) c = NULL;

		/* what pgate_apply_series() takes as a base: a branch, a
		 * ref, an OID, anything that names a commit */
		if (git_revparse_single(&o, repo, revs[i]) != 0 ||
		    git_object_peel(&c, o, GIT_OBJECT_COMMIT) != 0)
			g_ptr_array_add(missing, g_strdup(revs[i]));
	}
	return missing;
}

gboolean
pgate_apply_check_remote(const char *repo_path, const char *name,
			 GError **error)
{
	PGATE_GIT_AUTO(git_repository) repo = check_open(repo_path, error);
	git_config *cfg = NULL;
	git_buf url = GIT_BUF_INIT;
	g_autofree char *key = g_strdup_printf("remote.%s.url", name);
	int rc;

	if (repo == NULL)
		return FALSE;
	/* its URL, as upstream/'s fetch reads it: not git_remote_lookup(),
	 * whose config glob match leaks libgit2 1.5's regexp match data */
	rc = git_repository_config_snapshot(&cfg, repo);
	if (rc == 0)
		rc = git_config_get_string_buf(&url, cfg, key);
	git_buf_dispose(&url);
	git_config_free(cfg);
	if (rc == GIT_ENOTFOUND) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "%s has no remote %s to fetch (no %s)", repo_path,
			    name, key);
		return FALSE;
	}
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("remote %s of %s",
							name, repo_path);

		return config_git_error(error, rc, what);
	}
	return TRUE;
}

gboolean
pgate_apply_check_refname(const char *refname, GError **error)
{
	int valid = 0;

	pgate_apply__git_init();
	if (git_reference_name_is_valid(&valid, refname) != 0 || !valid) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "'%s' is not a valid ref name", refname);
		return FALSE;
	}
	return TRUE;
}
