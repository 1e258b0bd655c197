/* config.c - the Jenkins backend's settings: read, checked, secrets loaded.
 *
 * Every key is described in docs/ci-jenkins.md.  Secrets come from a file
 * or an environment variable, never from the configuration itself, and no
 * error message ever quotes them (nor the url, which might hold some).
 */
#include "ci/jenkins/jenkins-private.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *key;
	const char *def;
} param_keys[JK_P_N] = {
	[JK_P_REPO_URL] = { "param_repo_url", "PATCHGATE_REPO_URL" },
	[JK_P_REF] = { "param_ref", "PATCHGATE_REF" },
	[JK_P_COMMIT] = { "param_commit", "PATCHGATE_COMMIT" },
	[JK_P_BASE_COMMIT] = { "param_base_commit", "PATCHGATE_BASE_COMMIT" },
	[JK_P_SERIES] = { "param_series", "PATCHGATE_SERIES" },
	[JK_P_VERSION] = { "param_version", "PATCHGATE_VERSION" },
	[JK_P_BRANCH] = { "param_branch", "PATCHGATE_BRANCH" },
	[JK_P_MSGID] = { "param_msgid", "PATCHGATE_MSGID" },
	[JK_P_TRIGGER] = { "param_trigger", "PATCHGATE_TRIGGER" },
};

/* "[GROUP] what": the key is in the message (pgate_config_error) */
#define config_error(error, group, ...) \
	pgate_config_error(error, PGATE_CI_ERROR, group, NULL, __VA_ARGS__)

/* The value of @key, or NULL when absent; empty counts as set (an empty
 * param_* key is refused, not taken for the default). */
static char *
get_string(GKeyFile *kf, const char *group, const char *key)
{
	char *v = g_key_file_get_string(kf, group, key, NULL);

	if (v != NULL)
		g_strstrip(v);
	return v;
}

/* A number through common/config.c, in this group's domain. */
static gboolean
get_uint(GKeyFile *kf, const char *group, const char *key, guint64 def,
	 guint64 min, guint64 max, guint64 *out, GError **error)
{
	gint64 v;

	if (!pgate_config_int(kf, group, key, (gint64)def, (gint64)min,
			      (gint64)MIN(max, (guint64)G_MAXINT64), FALSE,
			      &v, PGATE_CI_ERROR, error))
		return FALSE;
	*out = (guint64)v;
	return TRUE;
}

static gboolean
load_secret(JkConfig *cfg, GKeyFile *kf, const char *group, GError **error)
{
	static const struct {
		const char *key;
		gboolean file;
		JkAuth auth;
	} sources[] = {
		{ "token_file", TRUE, JK_AUTH_TOKEN },
		{ "token_env", FALSE, JK_AUTH_TOKEN },
		{ "password_file", TRUE, JK_AUTH_PASSWORD },
		{ "password_env", FALSE, JK_AUTH_PASSWORD },
	};
	int found = -1;
	g_autofree char *where = NULL;

	for (gsize i = 0; i < G_N_ELEMENTS(sources); i++) {
		if (!g_key_file_has_key(kf, group, sources[i].key, NULL))
			continue;
		if (found >= 0)
			return config_error(error, group, "give only one of "
					    "token_file, token_env, "
					    "password_file and password_env");
		found = (int)i;
	}
	if (found < 0)
		return config_error(error, group, "no credentials: set "
				    "token_file or token_env (an API token), "
				    "or password_file or password_env");
	where = get_string(kf, group, sources[found].key);
	if (where == NULL || *where == '\0')
		return config_error(error, group, "%s is empty",
				    sources[found].key);
	cfg->auth = sources[found].auth;
	/* it goes into a basic auth header: one line (common/config.c) */
	cfg->secret = sources[found].file
		? pgate_config_secret_file(group, sources[found].key, where,
					   JK_SECRET_MAX, PGATE_CI_ERROR, error)
		: pgate_config_secret_env(group, sources[found].key, where,
					  JK_SECRET_MAX, PGATE_CI_ERROR, error);
	return cfg->secret != NULL;
}

char *
pgate_ci_jenkins__job_url_path(const char *path)
{
	g_auto(GStrv) segs = NULL;
	g_autoptr(GString) out = g_string_new(NULL);

	if (path == NULL || *path == '\0' || strlen(path) > JK_JOB_PATH_MAX)
		return NULL;
	segs = g_strsplit(path, "/", -1);
	for (guint i = 0; segs[i]; i++) {
		char *esc;

		if (*segs[i] == '\0' || g_str_equal(segs[i], ".") ||
		    g_str_equal(segs[i], ".."))
			return NULL;
		for (const char *p = segs[i]; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return NULL;
		esc = curl_easy_escape(NULL, segs[i], 0);
		if (esc == NULL)
			return NULL;
		g_string_append_printf(out, "job/%s/", esc);
		curl_free(esc);
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* Parses and normalises a base URL: http or https, no credentials, no
 * query or fragment.  Never quotes the URL in errors: it may hold a
 * password someone put there by mistake. */
static char *
normalise_base(const char *group, const char *key, const char *text,
	       GError **error)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char *user = NULL, *password = NULL, *query = NULL, *frag = NULL;
	char *out = NULL;

	if (u == NULL || curl_url_set(u, CURLUPART_URL, text, 0) != CURLUE_OK) {
		config_error(error, group, "%s is not a valid URL", key);
		goto done;
	}
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_HOST, &host, 0);
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	curl_url_get(u, CURLUPART_USER, &user, 0);
	curl_url_get(u, CURLUPART_PASSWORD, &password, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
	if (scheme == NULL || (g_ascii_strcasecmp(scheme, "http") != 0 &&
			       g_ascii_strcasecmp(scheme, "https") != 0)) {
		config_error(error, group, "%s must be an http or https URL",
			     key);
	} else if (user != NULL || password != NULL) {
		config_error(error, group, "%s must not hold credentials: use "
			     "user and token_file (or token_env)", key);
	} else if (query != NULL || frag != NULL) {
		config_error(error, group, "%s must not have a query or a "
			     "fragment", key);
	} else if (host == NULL || *host == '\0') {
		config_error(error, group, "%s has no host", key);
	} else {
		g_autofree char *p = g_strdup(path ? path : "");
		gsize n = strlen(p);

		while (n > 0 && p[n - 1] == '/')
			p[--n] = '\0';
		out = g_strdup_printf("%s://%s%s%s%s", scheme, host,
				      port ? ":" : "", port ? port : "", p);
	}
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(user);
	curl_free(password);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return out;
}

static gboolean
valid_param_name(const char *s)
{
	gsize n = strlen(s);

	if (n == 0 || n > 64)
		return FALSE;
	for (gsize i = 0; i < n; i++)
		if (!g_ascii_isalnum(s[i]) && s[i] != '_' && s[i] != '.' &&
		    s[i] != '-')
			return FALSE;
	/* fields Jenkins reads itself on a trigger */
	return !g_str_equal(s, "delay") && !g_str_equal(s, "token") &&
	       !g_str_equal(s, "json") && !g_str_equal(s, "Jenkins-Crumb") &&
	       !g_str_equal(s, "cause");
}

gboolean
pgate_ci_jenkins__config_load(JkConfig *cfg, GKeyFile *kf, const char *group,
			      GError **error)
{
	g_autofree char *url = NULL, *public_url = NULL;
	guint64 n;

	memset(cfg, 0, sizeof *cfg);
	cfg->delay = -1;
	if (!g_key_file_has_group(kf, group))
		return config_error(error, group, "the group is missing");
	url = get_string(kf, group, "url");
	if (url == NULL || *url == '\0')
		return config_error(error, group, "url is not set");
	cfg->base = normalise_base(group, "url", url, error);
	if (cfg->base == NULL)
		return FALSE;
	public_url = get_string(kf, group, "public_url");
	if (public_url != NULL && *public_url != '\0') {
		cfg->link_base = normalise_base(group, "public_url",
						public_url, error);
		if (cfg->link_base == NULL)
			return FALSE;
	} else {
		cfg->link_base = g_strdup(cfg->base);
	}

	cfg->job = get_string(kf, group, "job");
	if (cfg->job == NULL || *cfg->job == '\0')
		return config_error(error, group, "job is not set");
	cfg->job_url_path = pgate_ci_jenkins__job_url_path(cfg->job);
	if (cfg->job_url_path == NULL)
		return config_error(error, group, "job \"%s\" is not a job "
				    "path like folder/sub/name", cfg->job);

	cfg->user = get_string(kf, group, "user");
	if (cfg->user == NULL || *cfg->user == '\0')
		return config_error(error, group, "user is not set");
	for (const char *p = cfg->user; *p; p++)
		if (*p == ':' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return config_error(error, group, "user may not hold "
					    "':' or control characters");
	if (!load_secret(cfg, kf, group, error))
		return FALSE;

	cfg->ca_file = get_string(kf, group, "ca_file");
	cfg->ca_path = get_string(kf, group, "ca_path");
	if (cfg->ca_file && !g_file_test(cfg->ca_file, G_FILE_TEST_IS_REGULAR))
		return config_error(error, group, "ca_file %s is not a file",
				    cfg->ca_file);
	if (cfg->ca_path && !g_file_test(cfg->ca_path, G_FILE_TEST_IS_DIR))
		return config_error(error, group, "ca_path %s is not a "
				    "directory", cfg->ca_path);

	if (!get_uint(kf, group, "request_timeout", 30, 1, 600, &n, error))
		return FALSE;
	cfg->request_timeout = (guint)n;
	if (!get_uint(kf, group, "retries", 2, 0, 10, &n, error))
		return FALSE;
	cfg->retries = (guint)n;
	if (!get_uint(kf, group, "retry_backoff_ms", 500, 0, 60000, &n, error))
		return FALSE;
	cfg->retry_backoff_ms = (guint)n;
	if (!get_uint(kf, group, "max_connections", 8, 1, 64, &n, error))
		return FALSE;
	cfg->max_connections = (guint)n;
	if (!get_uint(kf, group, "queue_timeout", 86400, 1, G_MAXINT32,
		      &cfg->queue_timeout, error))
		return FALSE;
	if (!get_uint(kf, group, "build_timeout", 21600, 1, G_MAXINT32,
		      &cfg->build_timeout, error))
		return FALSE;
	if (g_key_file_has_key(kf, group, "delay", NULL)) {
		if (!get_uint(kf, group, "delay", 0, 0, 86400, &n, error))
			return FALSE;
		cfg->delay = (gint64)n;
	}

	for (int i = 0; i < JK_P_N; i++) {
		char *v = get_string(kf, group, param_keys[i].key);

		if (v == NULL) {
			cfg->param[i] = g_strdup(param_keys[i].def);
			continue;
		}
		if (*v == '\0') {
			g_free(v);
			if (i == JK_P_TRIGGER || i == JK_P_COMMIT)
				return config_error(error, group, "%s may not "
						    "be empty: without it "
						    "Jenkins merges triggers "
						    "or cannot test",
						    param_keys[i].key);
			continue;
		}
		cfg->param[i] = v;
		if (!valid_param_name(v))
			return config_error(error, group, "%s \"%s\" is not a "
					    "usable parameter name",
					    param_keys[i].key, v);
	}
	for (int i = 0; i < JK_P_N; i++)
		for (int j = i + 1; j < JK_P_N; j++)
			if (cfg->param[i] && cfg->param[j] &&
			    g_str_equal(cfg->param[i], cfg->param[j]))
				/* Jenkins answers 500 to a name given twice */
				return config_error(error, group, "%s and %s "
						    "name the same parameter",
						    param_keys[i].key,
						    param_keys[j].key);
	return TRUE;
}

void
pgate_ci_jenkins__config_clear(JkConfig *cfg)
{
	if (cfg->secret) {
		explicit_bzero(cfg->secret, strlen(cfg->secret));
		g_free(cfg->secret);
	}
	g_free(cfg->base);
	g_free(cfg->link_base);
	g_free(cfg->job);
	g_free(cfg->job_url_path);
	g_free(cfg->user);
	g_free(cfg->ca_file);
	g_free(cfg->ca_path);
	for (int i = 0; i < JK_P_N; i++)
		g_free(cfg->param[i]);
	memset(cfg, 0, sizeof *cfg);
}
