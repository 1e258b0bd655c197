/* publish.c - refs for applied series, pushing them, pruning old ones.
 *
 * Pushing uses libgit2's own transports (file://, ssh, https) through an
 * anonymous remote (git_remote_create_with_opts() with no name, as
 * git_remote_create_anonymous() makes it, but without insteadOf): nothing
 * is added to the repository's configuration.
 * The remote's report is read per ref (push_update_reference): a ref it
 * refused fails the push, with the remote's reason.  Credentials are read
 * only when the remote asks, from a file or an environment variable, and
 * are wiped from memory after use; they never reach a message.
 */
#include "apply/apply-private.h"

#include <errno.h>
#include <string.h>

gboolean
pgate_apply_update_ref(const char *repo_path, const char *refname,
		       const char *commit_hex, const char *log_message,
		       GError **error)
{
	PGATE_GIT_AUTO(git_repository) repo = NULL;
	PGATE_GIT_AUTO(git_reference) ref = NULL;
	PGATE_GIT_AUTO(git_commit) commit = NULL;
	git_oid oid;
	int valid = 0, rc;

	pgate_apply__git_init();
	if (git_reference_name_is_valid(&valid, refname) != 0 || !valid ||
	    !g_str_has_prefix(refname, "refs/")) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID,
			    "invalid ref name: %s", refname);
		return FALSE;
	}
	if (git_oid_fromstr(&oid, commit_hex) != 0) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID,
			    "not a commit id: %s", commit_hex);
		return FALSE;
	}
	rc = git_repository_open_ext(&repo, repo_path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	rc = git_commit_lookup(&commit, repo, &oid);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, commit_hex);
	rc = git_reference_create(&ref, repo, refname, &oid, 1, log_message);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, refname);
	return TRUE;
}

/* ---- push --------------------------------------------------------------- */

#define MAX_SECRET 4096

typedef struct {
	const PgateApplyCredentials *creds;
	guint attempts;
	GString *rejected;      /* "ref: reason; ..." */
	char *secret_error;     /* why a secret could not be read */
} PushCtx;

/* A secret from @file (its first line) or else the variable @env.  The
 * error names where it was looked for, never what was found. */
static char *
read_secret(const char *file, const char *env, char **why)
{
	if (file != NULL) {
		g_autoptr(GError) err = NULL;
		char *data = NULL;
		gsize len = 0;
		char *nl;

		if (!g_file_get_contents(file, &data, &len, &err)) {
			*why = g_strdup_printf("cannot read the secret file %s: %s",
					       file, err->message);
			return NULL;
		}
		if (len > MAX_SECRET) {
			explicit_bzero(data, len);
			g_free(data);
			*why = g_strdup_printf("the secret file %s is over %d bytes",
					       file, MAX_SECRET);
			return NULL;
		}
		nl = strpbrk(data, "\r\n");
		if (nl != NULL)
			explicit_bzero(nl, len - (nl - data));
		return data;
	}
	if (env != NULL) {
		const char *v = g_getenv(env);

		if (v == NULL) {
			*why = g_strdup_printf("the variable %s is not set", env);
			return NULL;
		}
		return g_strdup(v);
	}
	return NULL;
}

static void
free_secret(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		g_free(s);
	}
}

static int
cred_cb(git_credential **out, const char *url, const char *user_from_url,
	unsigned int allowed, void *payload)
{
	PushCtx *ctx = payload;
	const PgateApplyCredentials *c = ctx->creds;
	const char *user;
	char *secret = NULL;
	int rc = GIT_PASSTHROUGH;

	/* libgit2 asks again after a refusal: give up after a few */
	if (c == NULL || ++ctx->attempts > 3)
		return GIT_EAUTH;
	user = c->username ? c->username
	     : user_from_url ? user_from_url : "git";
	if ((allowed & GIT_CREDENTIAL_USERNAME) != 0)
		return git_credential_username_new(out, user);
	if ((allowed & GIT_CREDENTIAL_SSH_KEY) && c->ssh_private_key) {
		secret = read_secret(c->ssh_passphrase_file, c->ssh_passphrase_env,
				     &ctx->secret_error);
		if (secret == NULL && ctx->secret_error)
			return GIT_EUSER;
		rc = git_credential_ssh_key_new(out, user, c->ssh_public_key,
						c->ssh_private_key, secret);
	} else if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) &&
		   (c->password_file || c->password_env)) {
		secret = read_secret(c->password_file, c->password_env,
				     &ctx->secret_error);
		if (secret == NULL)
			return GIT_EUSER;
		rc = git_credential_userpass_plaintext_new(out, user, secret);
	}
	free_secret(secret);
	return rc;
}

static int
push_ref_cb(const char *refname, const char *status, void *payload)
{
	PushCtx *ctx = payload;

	if (status != NULL) {
		if (ctx->rejected->len)
			g_string_append(ctx->rejected, "; ");
		g_string_append_printf(ctx->rejected, "%s: %s", refname, status);
	}
	return 0;
}

/* The error of a push that libgit2 failed: transient when the remote
 * could not be reached or the connection broke. */
static gboolean
push_error(GError **error, int rc, const char *url)
{
	const git_error *e = git_error_last();
	PgateErrorCode code = PGATE_ERROR_FAILED;

	if (rc == GIT_EAUTH)
		code = PGATE_ERROR_CONFIG;
	else if (rc == GIT_EEOF ||
		 (e && (e->klass == GIT_ERROR_NET || e->klass == GIT_ERROR_OS ||
			e->klass == GIT_ERROR_SSH || e->klass == GIT_ERROR_HTTP)))
		code = PGATE_ERROR_IO;
	else if (rc == GIT_ENOTFOUND)
		code = PGATE_ERROR_NOT_FOUND;
	g_set_error(error, PGATE_APPLY_ERROR, code, "push to %s: %s", url,
		    e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

gboolean
pgate_apply_push(const char *repo_path, const char *url_given,
		 const char *const *refspecs, guint n,
		 const PgateApplyCredentials *creds, GError **error)
{
	PGATE_GIT_AUTO(git_repository) repo = NULL;
	PGATE_GIT_AUTO(git_remote) remote = NULL;
	git_push_options po;
	git_remote_create_options ro;
	git_strarray specs = { (char **)refspecs, n };
	g_autoptr(GString) rejected = g_string_new(NULL);
	PushCtx ctx = { creds, 0, rejected, NULL };
	/* what the messages say of it: without a password (a message is
	 * logged, stored with the attempt and shown on the site) */
	g_autofree char *url = pgate_url_without_password(url_given);
	int rc;

	pgate_apply__git_init();
	if (n == 0)
		return TRUE;
	if (g_ascii_strncasecmp(url_given, "https://", 8) == 0 &&
	    !pgate_apply__git_tls(error))
		return FALSE;
	git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
	rc = git_repository_open_ext(&repo, repo_path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	/* an anonymous remote, without url.*.insteadOf rewriting: the URL is
	 * the one configured for patchgate, used as it is.  (Skipping it also
	 * avoids libgit2 1.5's config glob, whose regexp match leaks its match
	 * data on every entry that does not match.) */
	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	ro.repository = repo;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
		   GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	rc = git_remote_create_with_opts(&remote, url_given, &ro);
	if (rc != 0) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
			    "remote %s: %s", url, git_error_last() ?
			    git_error_last()->message : "invalid");
		return FALSE;
	}
	po.callbacks.credentials = cred_cb;
	po.callbacks.push_update_reference = push_ref_cb;
	po.callbacks.payload = &ctx;
	rc = git_remote_push(remote, &specs, &po);
	if (rc != 0) {
		if (ctx.secret_error != NULL) {
			g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
				    "push to %s: %s", url, ctx.secret_error);
			g_free(ctx.secret_error);
			return FALSE;
		}
		if (rc == GIT_EAUTH || ctx.attempts > 3) {
			/* libgit2 leaves no message of its own here */
			g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
				    "push to %s: authentication failed: %s", url,
				    creds == NULL ? "no credentials are configured"
				    : "the remote refused the credentials");
			return FALSE;
		}
		return push_error(error, rc, url);
	}
	g_free(ctx.secret_error);
	if (rejected->len) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_FAILED,
			    "push to %s: refused: %s", url, rejected->str);
		return FALSE;
	}
	return TRUE;
}

/* ---- pruning ------------------------------------------------------------ */

static gint
cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

gboolean
pgate_apply_prune_refs(const char *repo_path, const char *prefix,
		       gint64 max_age_seconds, gint64 now,
		       GPtrArray **out_deleted, GError **error)
{
	PGATE_GIT_AUTO(git_repository) repo = NULL;
	PGATE_GIT_AUTO(git_reference_iterator) it = NULL;
	g_autoptr(GPtrArray) old = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) deleted = g_ptr_array_new_with_free_func(g_free);
	const char *name;
	int rc;

	pgate_apply__git_init();
	if (prefix == NULL || !g_str_has_prefix(prefix, "refs/")) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID,
			    "ref prefix must start with refs/: %s",
			    prefix ? prefix : "(null)");
		return FALSE;
	}
	if (now < 0)
		now = g_get_real_time() / G_USEC_PER_SEC;
	rc = git_repository_open_ext(&repo, repo_path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == 0)
		rc = git_reference_iterator_new(&it, repo);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	/* first the names (deleting while iterating is not safe) */
	while ((rc = git_reference_next_name(&name, it)) == 0)
		if (g_str_has_prefix(name, prefix))
			g_ptr_array_add(old, g_strdup(name));
	if (rc != GIT_ITEROVER)
		return pgate_apply__git_error(error, rc, "list refs");
	for (guint i = 0; i < old->len; i++) {
		PGATE_GIT_AUTO(git_reference) ref = NULL;
		PGATE_GIT_AUTO(git_object) obj = NULL;
		const git_signature *c;

		if (git_reference_lookup(&ref, repo, old->pdata[i]) != 0 ||
		    git_reference_peel(&obj, ref, GIT_OBJECT_COMMIT) != 0)
			continue;
		c = git_commit_committer((git_commit *)obj);
		if (c == NULL || now - c->when.time <= max_age_seconds)
			continue;
		rc = git_reference_delete(ref);
		if (rc != 0)
			return pgate_apply__git_error(error, rc, old->pdata[i]);
		g_ptr_array_add(deleted, g_strdup(old->pdata[i]));
	}
	g_ptr_array_sort(deleted, cmp_str);
	if (out_deleted)
		*out_deleted = g_steal_pointer(&deleted);
	return TRUE;
}
