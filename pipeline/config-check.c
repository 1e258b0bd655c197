/* config-check.c - what `patchgate config check` looks at beyond the
 * values the modules' readers take: that what the configuration names is
 * there and is what it should be (docs/config.md, "Checking a file").
 *
 *   offline   the paths (repositories, maildirs, inboxes, the CI's work
 *             root and binds, the site's directory, CA files), the
 *             branches in the repositories, the secrets' files (this user
 *             may read them, their group and others may not), the
 *             templates (ref_format, link_pattern, archive_url);
 *   online    Patchwork (the project, the token), Jenkins (the server,
 *             the credentials, the job, a crumb) and the SMTP server
 *             (connect, login).
 *
 * Each check is the stage's own where the stage has one (apply/'s
 * repositories and ref names, report/'s templates, Patchwork, SMTP,
 * ci/jenkins's server); this file reads the values and words the
 * problems "[GROUP] KEY: ...".  Nothing is created or written: no store,
 * no directory, no object or ref in a repository.  A key the module's
 * reader refused already (named in the problems so far) is not looked at
 * again, so that a problem is one line.
 */
#include "pipeline/pipeline-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What ref_format's placeholders are replaced with for the check: an ID,
 * version and target of the shapes the apply stage gives them. */
#define SAMPLE_SERIES "s0123456789ab"
#define SAMPLE_VERSION "1"

static void
add(GPtrArray *problems, const char *group, const char *key,
    const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static void
add(GPtrArray *problems, const char *group, const char *key,
    const char *fmt, ...)
{
	GError *e = NULL;
	va_list ap;

	va_start(ap, fmt);
	pgate_config_verror(&e, PGATE_PIPELINE_ERROR, group, key, fmt, ap);
	va_end(ap);
	g_ptr_array_add(problems, e);
}

/* A stage's check failed: its message, under the key. */
static void
add_error(GPtrArray *problems, const char *group, const char *key,
	  const GError *e)
{
	add(problems, group, key, "%s", e->message);
}

/* Whether a problem names [@group] @key already (a reader's). */
static gboolean
named(const GPtrArray *problems, const char *group, const char *key)
{
	g_autofree char *what = g_strdup_printf("[%s] %s:", group, key);

	for (guint i = 0; i < problems->len; i++)
		if (strstr(((const GError *)problems->pdata[i])->message,
			   what) != NULL)
			return TRUE;
	return FALSE;
}

/* [@group] @key as a string: %NULL when not set (or empty), or when it
 * does not read (its reader says why). */
static char *
string(GKeyFile *kf, const char *group, const char *key)
{
	char *v = NULL;

	if (!pgate_config_string(kf, group, key, &v, PGATE_PIPELINE_ERROR,
				 NULL))
		return NULL;
	return v;
}

/* Whether @path exists and is a directory this user may use with
 * @mode (access(2) bits); else says why under [@group] @key. */
static gboolean
check_dir(GPtrArray *problems, const char *group, const char *key,
	  const char *path, int mode)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		add(problems, group, key, errno == ENOENT ? "%s does not exist"
			: "%s: %s", path, g_strerror(errno));
		return FALSE;
	}
	if (!S_ISDIR(st.st_mode)) {
		add(problems, group, key, "%s is not a directory", path);
		return FALSE;
	}
	if (access(path, mode) < 0) {
		add(problems, group, key, "user %s may not %s %s",
		    g_get_user_name(), (mode & W_OK) ? "write in" : "read",
		    path);
		return FALSE;
	}
	return TRUE;
}

/* A file this user may read (a CA bundle, a MAINTAINERS-less file). */
static void
check_readable_file(GPtrArray *problems, const char *group, const char *key,
		    const char *path)
{
	struct stat st;

	if (path == NULL || named(problems, group, key))
		return;
	if (stat(path, &st) < 0)
		add(problems, group, key, errno == ENOENT ? "%s does not exist"
			: "%s: %s", path, g_strerror(errno));
	else if (!S_ISREG(st.st_mode))
		add(problems, group, key, "%s is not a regular file", path);
	else if (access(path, R_OK) < 0)
		add(problems, group, key, "user %s may not read %s",
		    g_get_user_name(), path);
}

/*
 * A secret's file (a token, a password, an ssh key): a regular file this
 * user may read, that its group and others may neither read nor write.
 * The readers refuse a file everyone may read (common/config.c); a group
 * that may read a secret is one more way it leaks (a web server's group
 * that serves the site), and ssh refuses such a key anyway.
 */
static void
check_secret(GPtrArray *problems, const char *group, const char *key,
	     const char *path)
{
	g_autoptr(GPtrArray) who = NULL;
	struct stat st;
	int fd;

	if (path == NULL || named(problems, group, key))
		return;
	if (stat(path, &st) < 0) {
		add(problems, group, key, errno == ENOENT ? "%s does not exist"
			: "%s: %s", path, g_strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		add(problems, group, key, "%s is not a regular file", path);
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		add(problems, group, key, "user %s may not read %s (%s)",
		    g_get_user_name(), path, g_strerror(errno));
		return;
	}
	close(fd);
	who = g_ptr_array_new();
	if (st.st_mode & S_IRGRP)
		g_ptr_array_add(who, "read by its group");
	if (st.st_mode & S_IWGRP)
		g_ptr_array_add(who, "written by its group");
	if (st.st_mode & S_IROTH)
		g_ptr_array_add(who, "read by others");
	if (st.st_mode & S_IWOTH)
		g_ptr_array_add(who, "written by others");
	if (who->len > 0) {
		g_autofree char *list = NULL;

		g_ptr_array_add(who, NULL);
		list = g_strjoinv(", ", (char **)who->pdata);
		add(problems, group, key, "%s may be %s (mode %04o): chmod "
		    "go-rw it (and make a new secret if the old one may be "
		    "known)", path, list, (unsigned)(st.st_mode & 07777));
	}
}

/* An environment variable a secret is read from when it is needed. */
static void
check_env(GPtrArray *problems, const char *group, const char *key,
	  const char *name)
{
	const char *v;

	if (name == NULL || named(problems, group, key))
		return;
	v = g_getenv(name);
	if (v == NULL || *v == '\0')
		add(problems, group, key, "the environment variable %s is not "
		    "set", name);
}

static void
check_template(GPtrArray *problems, const char *group, const char *key,
	       const char *tpl, const char *const *names)
{
	g_autoptr(GError) e = NULL;

	if (tpl == NULL || named(problems, group, key))
		return;
	if (!pgate_report_check_template(tpl, names, &e))
		add_error(problems, group, key, e);
}

/* The branch of a routing rule "GLOB:BRANCH" (%NULL: "GLOB", paths'). */
static const char *
rule_branch(const char *item)
{
	const char *colon = strrchr(item, ':');

	return colon ? colon + 1 : NULL;
}

/* Every branch [@key] names is in @repo: one line per missing one. */
static void
check_branches(GPtrArray *problems, const char *key, const char *repo,
	       GPtrArray *revs, GPtrArray *shown)
{
	g_autoptr(GPtrArray) missing = NULL;
	g_autoptr(GError) e = NULL;

	if (revs->len == 0)
		return;
	g_ptr_array_add(revs, NULL);
	missing = pgate_apply_check_revs(repo,
					 (const char *const *)revs->pdata, &e);
	g_ptr_array_remove_index(revs, revs->len - 1);
	if (missing == NULL) {
		add_error(problems, "apply", key, e);
		return;
	}
	for (guint i = 0; i < missing->len; i++) {
		const char *rule = NULL;

		for (guint r = 0; shown && r < revs->len; r++)
			if (strcmp(revs->pdata[r], missing->pdata[i]) == 0)
				rule = shown->pdata[r];
		add(problems, "apply", key, "no branch %s in %s%s%s%s",
		    (char *)missing->pdata[i], repo, rule ? " (" : "",
		    rule ? rule : "", rule ? ")" : "");
	}
}

/* A push URL that is a local repository: file:// or a path. */
static char *
local_push_path(const char *url)
{
	if (g_str_has_prefix(url, "file://"))
		return g_uri_unescape_string(url + strlen("file://"), NULL);
	if (url[0] == '/')
		return g_strdup(url);
	return NULL;
}

static void
check_apply(GKeyFile *kf, GPtrArray *problems)
{
	static const char *const ref_names[] = { "series", "version",
						 "target", NULL };
	static const char *const msgid[] = { "msgid", NULL };
	PgateApplyConfig ac;
	PgateRouteConfig rc;
	gboolean routed;
	g_autoptr(GError) e = NULL;
	g_autoptr(GPtrArray) revs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) rules = g_ptr_array_new_with_free_func(g_free);

	if (!pgate_pipeline_apply_config_load(kf, &ac, NULL))
		return;		/* its reader said why */
	if (!ac.enabled) {
		pgate_pipeline_apply_config_clear(&ac);
		return;
	}
	routed = pgate_route_config_load(kf, &rc, NULL);
	if (pgate_apply_check_repo(ac.repo, &e)) {
		for (guint i = 0; ac.branches[i]; i++)
			g_ptr_array_add(revs, g_strdup(ac.branches[i]));
		check_branches(problems, "branches", ac.repo, revs, NULL);
		if (routed) {
			/* the branches the routing rules name */
			static const char *const keys[] = { "tags", "paths" };

			for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
				char **items = k == 0 ? rc.tags : rc.paths;

				g_ptr_array_set_size(revs, 0);
				g_ptr_array_set_size(rules, 0);
				for (guint i = 0; items && items[i]; i++) {
					const char *b = rule_branch(items[i]);

					if (b == NULL)
						continue;
					g_ptr_array_add(revs, g_strdup(b));
					g_ptr_array_add(rules,
							g_strdup(items[i]));
				}
				check_branches(problems, keys[k], ac.repo,
					       revs, rules);
			}
			g_ptr_array_set_size(revs, 0);
			if (rc.tag_default)
				g_ptr_array_add(revs,
						g_strdup(rc.tag_default));
			check_branches(problems, "tag_default", ac.repo, revs,
				       NULL);
			if (rc.maintainers &&
			    !named(problems, "apply", "branches")) {
				g_auto(GStrv) globs =
					pgate_pipeline_maintainers_read(
						&ac, &rc, &e);

				/* (its message names [apply] maintainers) */
				if (globs == NULL && e != NULL)
					g_ptr_array_add(problems,
							g_steal_pointer(&e));
			}
		}
	} else if (!named(problems, "apply", "repo")) {
		add_error(problems, "apply", "repo", e);
	}
	g_clear_error(&e);
	if (routed)
		pgate_route_config_clear(&rc);

	/* the templates, and a ref name made from ref_format */
	check_template(problems, "apply", "ref_format", ac.ref_format,
		       ref_names);
	if (!named(problems, "apply", "ref_format")) {
		g_autoptr(GString) ref = g_string_new(ac.ref_format);

		g_string_replace(ref, "{series}", SAMPLE_SERIES, 0);
		g_string_replace(ref, "{version}", SAMPLE_VERSION, 0);
		g_string_replace(ref, "{target}", ac.branches[0], 0);
		if (!pgate_apply_check_refname(ref->str, &e))
			add(problems, "apply", "ref_format", "%s (series "
			    SAMPLE_SERIES ", version " SAMPLE_VERSION
			    ", target %s)", e->message, ac.branches[0]);
		g_clear_error(&e);
	}
	check_template(problems, "apply", "link_pattern", ac.link_pattern,
		       msgid);

	/* publishing: the push's credentials, a local remote */
	check_secret(problems, "apply", "push_password_file",
		     ac.push_password_file);
	check_env(problems, "apply", "push_password_env", ac.push_password_env);
	check_secret(problems, "apply", "push_ssh_key", ac.push_ssh_key);
	if (ac.push_url != NULL) {
		g_autofree char *path = local_push_path(ac.push_url);

		if (path != NULL && !pgate_apply_check_repo(path, &e))
			add_error(problems, "apply", "push_url", e);
		g_clear_error(&e);
	}
	pgate_pipeline_apply_config_clear(&ac);
}

/* The sandbox's program, as bubblewrap is run: a path, or a name looked
 * for in PATH. */
static void
check_bwrap(GKeyFile *kf, const char *group, GPtrArray *problems)
{
	g_autofree char *bwrap = string(kf, group, "bwrap");
	g_autofree char *found = NULL;
	gboolean sandbox = TRUE;

	if (!pgate_config_bool(kf, group, "sandbox", TRUE, &sandbox,
			       PGATE_PIPELINE_ERROR, NULL) ||
	    !sandbox || named(problems, group, "bwrap"))
		return;
	if (bwrap == NULL)
		bwrap = g_strdup("bwrap");
	found = strchr(bwrap, '/') ? g_strdup(bwrap)
				   : g_find_program_in_path(bwrap);
	if (found == NULL)
		add(problems, group, "bwrap", "%s is not in PATH (sandbox is "
		    "on)", bwrap);
	else if (!g_file_test(found, G_FILE_TEST_IS_REGULAR) ||
		 access(found, X_OK) < 0)
		add(problems, group, "bwrap", "%s is not a program user %s "
		    "may run", found, g_get_user_name());
}

static void
check_ci_local(GKeyFile *kf, const char *group, GPtrArray *problems)
{
	g_autofree char *work = string(kf, group, "work_root");
	g_auto(GStrv) binds = NULL;

	/* a job's directory is made in it (the reader checks it is one) */
	if (!named(problems, group, "work_root"))
		check_dir(problems, group, "work_root",
			  work ? work : g_get_tmp_dir(), W_OK | X_OK);
	check_bwrap(kf, group, problems);
	if (named(problems, group, "ro_binds") ||
	    !pgate_config_list(kf, group, "ro_binds", &binds,
			       PGATE_PIPELINE_ERROR, NULL))
		return;
	for (guint i = 0; binds && binds[i]; i++) {
		g_auto(GStrv) sd = g_strsplit(binds[i], ":", 2);

		/* bubblewrap refuses a bind whose source is missing */
		if (access(sd[0], F_OK) < 0)
			add(problems, group, "ro_binds", "%s: %s", sd[0],
			    g_strerror(errno));
	}
}

static void
check_ci_jenkins(GKeyFile *kf, const char *group, GPtrArray *problems)
{
	g_autofree char *token = string(kf, group, "token_file");
	g_autofree char *password = string(kf, group, "password_file");
	g_autofree char *ca_file = string(kf, group, "ca_file");
	g_autofree char *ca_path = string(kf, group, "ca_path");

	check_secret(problems, group, "token_file", token);
	check_secret(problems, group, "password_file", password);
	check_readable_file(problems, group, "ca_file", ca_file);
	if (ca_path != NULL && !named(problems, group, "ca_path"))
		check_dir(problems, group, "ca_path", ca_path, R_OK | X_OK);
}

/* [patchwork] and [email]: their secrets and CA files. */
static void
check_report(GKeyFile *kf, GPtrArray *problems)
{
	if (g_key_file_has_group(kf, "patchwork")) {
		g_autofree char *token = string(kf, "patchwork", "token_file");
		g_autofree char *ca = string(kf, "patchwork", "ca_file");

		check_secret(problems, "patchwork", "token_file", token);
		check_readable_file(problems, "patchwork", "ca_file", ca);
	}
	if (g_key_file_has_group(kf, "email")) {
		g_autofree char *pw = string(kf, "email", "password_file");
		g_autofree char *ca = string(kf, "email", "ca_file");
		gboolean on = FALSE;

		if (!pgate_config_bool(kf, "email", "enabled", FALSE, &on,
				       PGATE_PIPELINE_ERROR, NULL) || !on)
			return;
		check_secret(problems, "email", "password_file", pw);
		check_readable_file(problems, "email", "ca_file", ca);
	}
}

void
pgate_pipeline_config_check_project(GKeyFile *kf, GPtrArray *problems)
{
	PgateCiConfig cc;

	check_apply(kf, problems);
	if (pgate_pipeline_ci_config_load(kf, &cc, NULL) && cc.enabled) {
		if (strcmp(cc.backend, "local") == 0)
			check_ci_local(kf, cc.group, problems);
		else if (strcmp(cc.backend, "jenkins") == 0 ||
			 strcmp(cc.backend, "buildbot") == 0)
			/* the same keys: secret files and the CA */
			check_ci_jenkins(kf, cc.group, problems);
	}
	pgate_pipeline_ci_config_clear(&cc);
	check_report(kf, problems);
}

/* ---- the instance's groups ---- */

/* A maildir the daemon watches: new/ and cur/ it reads. */
static void
check_maildir(GPtrArray *problems, const char *path)
{
	static const char *const subs[] = { "new", "cur" };

	if (!check_dir(problems, "daemon", "maildirs", path, R_OK | X_OK))
		return;
	for (gsize i = 0; i < G_N_ELEMENTS(subs); i++) {
		g_autofree char *sub = g_build_filename(path, subs[i], NULL);

		if (!g_file_test(sub, G_FILE_TEST_IS_DIR)) {
			add(problems, "daemon", "maildirs", "%s is not a "
			    "maildir (no %s/)", path, subs[i]);
			return;
		}
		if (access(sub, R_OK | X_OK) < 0) {
			add(problems, "daemon", "maildirs", "user %s may not "
			    "read %s", g_get_user_name(), sub);
			return;
		}
	}
}

/* A public-inbox archive the daemon replays: v2 (git/N.git epochs), or a
 * v1 inbox or one epoch (a git repository), as ingest/pubinbox.c takes
 * them. */
static void
check_inbox(GPtrArray *problems, const char *path)
{
	g_autofree char *gitdir = g_build_filename(path, "git", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(GDir) d = NULL;
	const char *n;
	guint epochs = 0;

	if (!check_dir(problems, "daemon", "inboxes", path, R_OK | X_OK))
		return;
	d = g_dir_open(gitdir, 0, NULL);
	while (d != NULL && (n = g_dir_read_name(d)) != NULL) {
		const char *p = n;
		g_autofree char *epoch = NULL;

		while (g_ascii_isdigit(*p))
			p++;
		if (p == n || strcmp(p, ".git") != 0)
			continue;
		epochs++;
		epoch = g_build_filename(gitdir, n, NULL);
		if (!pgate_apply_check_repo(epoch, &e)) {
			add_error(problems, "daemon", "inboxes", e);
			return;
		}
	}
	if (epochs > 0)
		return;
	if (!pgate_apply_check_repo(path, &e))
		add(problems, "daemon", "inboxes", "%s is not a public-inbox "
		    "archive (no git/N.git epochs, and %s)", path, e->message);
}

static void
check_upstream(GKeyFile *kf, GPtrArray *problems)
{
	PgateUpstreamConfig uc;

	if (!pgate_upstream_config_load(kf, &uc, NULL)) {
		pgate_upstream_config_clear(&uc);
		return;		/* its reader said why */
	}
	for (guint i = 0; uc.enabled && uc.repos && uc.repos[i]; i++) {
		const char *repo = uc.repos[i];
		g_autoptr(GError) e = NULL;
		g_autoptr(GPtrArray) missing = NULL;

		if (!pgate_apply_check_repo(repo, &e)) {
			add_error(problems, "upstream", "repos", e);
			continue;
		}
		/* fetched: the branches may come with the first fetch, the
		 * remote must be there; else the branches must */
		if (uc.fetch) {
			if (!pgate_apply_check_remote(repo, uc.remote, &e))
				add(problems, "upstream", "remote", "%s",
				    e->message);
			continue;
		}
		missing = pgate_apply_check_revs(
			repo, (const char *const *)uc.branches, &e);
		for (guint m = 0; missing && m < missing->len; m++)
			add(problems, "upstream", "branches", "no branch %s in "
			    "%s (and fetch is off)",
			    (char *)missing->pdata[m], repo);
	}
	pgate_upstream_config_clear(&uc);
}

/* The site's directory: one to write in, or one that can be made (the
 * site makes it with its parents: their nearest that exists must let
 * this user). */
static void
check_site(GKeyFile *kf, GPtrArray *problems)
{
	static const char *const msgid[] = { "msgid", NULL };
	g_auto(PgateSiteConfig) sc = { 0 };
	g_autofree char *up = NULL;

	if (!g_key_file_has_group(kf, "report"))
		return;
	if (!pgate_pipeline_site_config_load(kf, &sc, NULL))
		return;		/* its reader said why */
	check_template(problems, "report", "archive_url", sc.archive_url,
		       msgid);
	if (sc.html_dir == NULL)
		return;
	if (g_file_test(sc.html_dir, G_FILE_TEST_EXISTS)) {
		check_dir(problems, "report", "html_dir", sc.html_dir,
			  W_OK | X_OK);
		return;
	}
	up = g_path_get_dirname(sc.html_dir);
	while (!g_file_test(up, G_FILE_TEST_EXISTS)) {
		char *next = g_path_get_dirname(up);

		if (strcmp(next, up) == 0) {
			g_free(next);
			break;
		}
		g_free(up);
		up = next;
	}
	if (!g_file_test(up, G_FILE_TEST_IS_DIR))
		add(problems, "report", "html_dir", "%s does not exist, and "
		    "%s is not a directory to make it in", sc.html_dir, up);
	else if (access(up, W_OK | X_OK) < 0)
		add(problems, "report", "html_dir", "%s does not exist, and "
		    "user %s may not make it in %s", sc.html_dir,
		    g_get_user_name(), up);
}

void
pgate_pipeline_config_check_instance(GKeyFile *kf, char **maildirs,
				     char **inboxes, GPtrArray *problems)
{
	for (guint i = 0; maildirs && maildirs[i]; i++)
		check_maildir(problems, maildirs[i]);
	for (guint i = 0; inboxes && inboxes[i]; i++)
		check_inbox(problems, inboxes[i]);
	check_upstream(kf, problems);
	check_site(kf, problems);
}

/* ---- online ---- */

/* Which of @keys of [@group] is set (the messages name it). */
static const char *
set_key(GKeyFile *kf, const char *group, const char *a, const char *b)
{
	if (g_key_file_has_key(kf, group, b, NULL))
		return b;
	return g_key_file_has_key(kf, group, a, NULL) ? a : NULL;
}

void
pgate_pipeline_config_check_online(GKeyFile *kf, GPtrArray *problems)
{
	PgateCiConfig cc;
	GError *e = NULL;

	/* a group its reader refused was said offline: not asked */
	if (g_key_file_has_group(kf, "patchwork")) {
		g_autoptr(PgatePatchwork) pw =
			pgate_patchwork_new(kf, "patchwork", NULL);

		if (pw != NULL &&
		    !pgate_patchwork_check_online(
			    pw, set_key(kf, "patchwork", "token_file",
					"token_env"), &e))
			g_ptr_array_add(problems, e);
		e = NULL;
	}
	if (pgate_pipeline_ci_config_load(kf, &cc, NULL) && cc.enabled &&
	    strcmp(cc.backend, "jenkins") == 0 &&
	    pgate_ci_config_check(cc.backend, kf, cc.group, NULL) &&
	    !pgate_ci_jenkins_check_online(kf, cc.group, &e))
		g_ptr_array_add(problems, e);
	else if (cc.enabled && strcmp(cc.backend, "buildbot") == 0 &&
		 pgate_ci_config_check(cc.backend, kf, cc.group, NULL) &&
		 !pgate_ci_buildbot_check_online(kf, cc.group, &e))
		g_ptr_array_add(problems, e);
	e = NULL;
	pgate_pipeline_ci_config_clear(&cc);
	if (g_key_file_has_group(kf, "email")) {
		g_autoptr(PgateEmailConfig) ec =
			pgate_email_config_new(kf, "email", NULL);

		if (ec != NULL &&
		    !pgate_email_check_online(
			    ec, "email", set_key(kf, "email", "password_file",
						 "password_env"), &e))
			g_ptr_array_add(problems, e);
	}
}

/* ---- the whole file, as `config check` reads it ---- */

/* Appends *@e (when set) to @problems. */
static void
note(GPtrArray *problems, GError **e)
{
	if (*e != NULL)
		g_ptr_array_add(problems, g_steal_pointer(e));
}

/* Every module's reader of its groups, as `run` would call them (@own
 * first: the caller's), then what the values name; @online (nullable):
 * the servers' answers. */
static void
check_modules(GKeyFile *kf, gboolean values_only, PgateConfigCheckOwn own,
	      GPtrArray *problems, GPtrArray *online)
{
	PgatePipelineConfig pc;
	PgateApplyConfig ac;
	PgateCiConfig cc;
	GError *e = NULL;

	if (own != NULL)
		own(kf, problems);
	if (pgate_pipeline_config_load(kf, &pc, &e))
		pgate_pipeline_config_clear(&pc);
	note(problems, &e);
	pgate_pipeline_apply_config_load(kf, &ac, &e);
	pgate_pipeline_apply_config_clear(&ac);
	note(problems, &e);
	if (pgate_pipeline_ci_config_load(kf, &cc, &e) && cc.enabled)
		pgate_ci_config_check(cc.backend, kf, cc.group, &e);
	pgate_pipeline_ci_config_clear(&cc);
	note(problems, &e);
	if (g_key_file_has_group(kf, "patchwork")) {
		g_autoptr(PgatePatchwork) pw =
			pgate_patchwork_new(kf, "patchwork", &e);

		if (pw == NULL)
			note(problems, &e);
	}
	if (g_key_file_has_group(kf, "email")) {
		g_autoptr(PgateEmailConfig) ec =
			pgate_email_config_new(kf, "email", &e);

		if (ec == NULL)
			note(problems, &e);
	}
	if (!values_only)
		pgate_pipeline_config_check_project(kf, problems);
	if (online != NULL)
		pgate_pipeline_config_check_online(kf, online);
}

/* @from's problems appended to @to as "project NAME: ..." */
static void
note_project(GPtrArray *to, GPtrArray *from, const char *name)
{
	for (guint k = 0; from != NULL && k < from->len; k++) {
		GError *o = from->pdata[k];

		g_ptr_array_add(to, g_error_new(o->domain, o->code,
						"project %s: %s", name,
						o->message));
	}
}

/* With [project NAME] groups: each project's modules, as its pipeline
 * reads them (its problems named "project NAME: ..."), and the routing
 * keys.  Returns: %FALSE when there is no project (the file is one). */
static gboolean
check_projects(GKeyFile *kf, gboolean values_only, PgateConfigCheckOwn own,
	       GPtrArray *problems, GPtrArray *online)
{
	g_auto(GStrv) names = pgate_config_projects(kf);
	g_autoptr(GPtrArray) projects = NULL;
	GError *e = NULL;
	PgateRouteConfig rc;

	if (names[0] == NULL) {
		if (pgate_route_config_load(kf, &rc, &e))
			pgate_route_config_clear(&rc);
		note(problems, &e);
		return FALSE;
	}
	projects = pgate_projects_load(kf, &e);
	if (projects == NULL) {
		note(problems, &e);
		return TRUE;
	}
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		g_autoptr(GPtrArray) mine = g_ptr_array_new_with_free_func(
			(GDestroyNotify)g_error_free);
		g_autoptr(GPtrArray) mine_online = online == NULL ? NULL
			: g_ptr_array_new_with_free_func(
				(GDestroyNotify)g_error_free);

		check_modules(pr->kf, values_only, own, mine, mine_online);
		if (pgate_route_config_load(pr->kf, &rc, &e))
			pgate_route_config_clear(&rc);
		note(mine, &e);
		note_project(problems, mine, pr->name);
		note_project(online, mine_online, pr->name);
	}
	return TRUE;
}

void
pgate_pipeline_config_check(GKeyFile *kf, gboolean values_only,
			    PgateConfigCheckOwn own, char **maildirs,
			    char **inboxes, GPtrArray *problems,
			    GPtrArray *online)
{
	PgateUpstreamConfig uc;
	g_auto(PgateSiteConfig) sc = { 0 };
	GError *e = NULL;

	if (!check_projects(kf, values_only, own, problems, online))
		check_modules(kf, values_only, own, problems, online);
	/* the instance's groups, once */
	pgate_upstream_config_load(kf, &uc, &e);
	pgate_upstream_config_clear(&uc);
	note(problems, &e);
	if (g_key_file_has_group(kf, "report"))
		pgate_pipeline_site_config_load(kf, &sc, &e);
	note(problems, &e);
	if (!values_only)
		pgate_pipeline_config_check_instance(kf, maildirs, inboxes,
						     problems);
}
