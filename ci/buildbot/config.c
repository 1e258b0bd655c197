/* config.c - the Buildbot backend's settings: read, checked, the password
 * loaded.
 *
 * Every key is described in docs/ci-buildbot.md.  The password comes from
 * a file or an environment variable, never from the configuration itself,
 * and no error message quotes it (nor the url, which might hold one).
 */
#include "ci/buildbot/buildbot-private.h"

#include <curl/curl.h>
#include <string.h>

const char *const pgate_ci_buildbot__prop_names[BB_P_N] = {
	[BB_P_REPO_URL] = "repo_url",
	[BB_P_REF] = "ref",
	[BB_P_COMMIT] = "commit",
	[BB_P_BASE_COMMIT] = "base_commit",
	[BB_P_SERIES] = "series",
	[BB_P_VERSION] = "version",
	[BB_P_BRANCH] = "branch",
	[BB_P_MSGID] = "msgid",
	[BB_P_TRIGGER] = "trigger",
};

#define config_error(error, group, ...) \
	pgate_config_error(error, PGATE_CI_ERROR, group, NULL, __VA_ARGS__)

static char *
get_string(GKeyFile *kf, const char *group, const char *key)
{
	char *v = g_key_file_get_string(kf, group, key, NULL);

	if (v != NULL)
		g_strstrip(v);
	return v;
}

static gboolean
get_uint(GKeyFile *kf, const char *group, const char *key, guint64 def,
	 guint64 min, guint64 max, guint64 *out, GError **error)
{
	gint64 v;

	if (!pgate_config_int(kf, group, key, (gint64)def, (gint64)min,
			      (gint64)max, FALSE, &v, PGATE_CI_ERROR, error))
		return FALSE;
	*out = (guint64)v;
	return TRUE;
}

/* http or https, a host, no credentials, no query or fragment; the
 * trailing slashes dropped.  Never quotes the URL in errors. */
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
			     "user and password_file (or password_env)", key);
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

/* A scheduler's, builder's or property's name: Buildbot's identifiers
 * (letters, digits, _ - . and, for builders, spaces); it goes into a
 * path and a JSON body, so nothing that would need escaping. */
static gboolean
valid_name(const char *s, gboolean spaces)
{
	gsize n = strlen(s);

	if (n == 0 || n > BB_NAME_MAX)
		return FALSE;
	for (gsize i = 0; i < n; i++)
		if (!g_ascii_isalnum(s[i]) && s[i] != '_' && s[i] != '-' &&
		    s[i] != '.' && !(spaces && s[i] == ' '))
			return FALSE;
	return TRUE;
}

static gboolean
load_secret(BbConfig *cfg, GKeyFile *kf, const char *group, GError **error)
{
	gboolean file = g_key_file_has_key(kf, group, "password_file", NULL);
	gboolean env = g_key_file_has_key(kf, group, "password_env", NULL);
	const char *key = file ? "password_file" : "password_env";
	g_autofree char *where = NULL;

	if (file && env)
		return config_error(error, group, "give only one of "
				    "password_file and password_env");
	if (cfg->user == NULL) {
		if (file || env)
			return config_error(error, group, "%s is set but user "
					    "is not", key);
		return TRUE;	/* a master that asks for no login */
	}
	if (!file && !env)
		return config_error(error, group, "user is set without a "
				    "password: set password_file or "
				    "password_env");
	where = get_string(kf, group, key);
	if (where == NULL || *where == '\0')
		return config_error(error, group, "%s is empty", key);
	/* it goes into a basic auth header: one line (common/config.c) */
	cfg->secret = file
		? pgate_config_secret_file(group, key, where, BB_SECRET_MAX,
					   PGATE_CI_ERROR, error)
		: pgate_config_secret_env(group, key, where, BB_SECRET_MAX,
					  PGATE_CI_ERROR, error);
	return cfg->secret != NULL;
}

gboolean
pgate_ci_buildbot__config_load(BbConfig *cfg, GKeyFile *kf,
			       const char *group, GError **error)
{
	g_autofree char *url = NULL, *public_url = NULL;
	guint64 n;

	memset(cfg, 0, sizeof *cfg);
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

	cfg->scheduler = get_string(kf, group, "scheduler");
	if (cfg->scheduler == NULL || *cfg->scheduler == '\0')
		return config_error(error, group, "scheduler is not set (the "
				    "name of a ForceScheduler in master.cfg)");
	if (!valid_name(cfg->scheduler, FALSE))
		return config_error(error, group, "scheduler \"%s\" is not a "
				    "scheduler name (letters, digits, _ - .)",
				    cfg->scheduler);
	cfg->builder = get_string(kf, group, "builder");
	if (cfg->builder == NULL || *cfg->builder == '\0')
		return config_error(error, group, "builder is not set");
	if (!valid_name(cfg->builder, TRUE))
		return config_error(error, group, "builder \"%s\" is not a "
				    "builder name (letters, digits, spaces, "
				    "_ - .)", cfg->builder);
	cfg->prefix = get_string(kf, group, "property_prefix");
	if (cfg->prefix == NULL)
		cfg->prefix = g_strdup("patchgate_");
	if (*cfg->prefix != '\0' && !valid_name(cfg->prefix, FALSE))
		return config_error(error, group, "property_prefix \"%s\" is "
				    "not usable in a property name",
				    cfg->prefix);
	for (int i = 0; i < BB_P_N; i++)
		cfg->prop[i] = g_strconcat(cfg->prefix,
					   pgate_ci_buildbot__prop_names[i],
					   NULL);

	cfg->user = get_string(kf, group, "user");
	if (cfg->user != NULL && *cfg->user == '\0')
		g_clear_pointer(&cfg->user, g_free);
	if (cfg->user != NULL)
		for (const char *p = cfg->user; *p; p++)
			if (*p == ':' || (unsigned char)*p < 0x20 || *p == 0x7f)
				return config_error(error, group, "user may "
						    "not hold ':' or control "
						    "characters");
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
	if (!get_uint(kf, group, "queue_timeout", 86400, 1, G_MAXINT32,
		      &cfg->queue_timeout, error))
		return FALSE;
	if (!get_uint(kf, group, "build_timeout", 21600, 1, G_MAXINT32,
		      &cfg->build_timeout, error))
		return FALSE;
	return TRUE;
}

void
pgate_ci_buildbot__config_clear(BbConfig *cfg)
{
	if (cfg->secret) {
		explicit_bzero(cfg->secret, strlen(cfg->secret));
		g_free(cfg->secret);
	}
	g_free(cfg->base);
	g_free(cfg->link_base);
	g_free(cfg->scheduler);
	g_free(cfg->builder);
	g_free(cfg->prefix);
	for (int i = 0; i < BB_P_N; i++)
		g_free(cfg->prop[i]);
	g_free(cfg->user);
	g_free(cfg->ca_file);
	g_free(cfg->ca_path);
	memset(cfg, 0, sizeof *cfg);
}
