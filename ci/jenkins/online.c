/* online.c - `patchgate config check --online` of a [ci.jenkins]-style
 * group: the server is a Jenkins that takes our credentials, the job is
 * there and may be built, and (password logins only, whose POSTs need
 * one) a crumb is issued.  GETs only, one at a time, each bounded by
 * request_timeout: nothing is triggered.  No message quotes the url (it
 * may hold a secret, as config.c says) or the secret: request paths only.
 */
#include "ci/jenkins/jenkins-private.h"

#include <curl/curl.h>
#include <jansson.h>
#include <string.h>

PGATE_DEFINE_AUTOPTR(CURL, curl_easy_cleanup)
#define JK_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

/* The most of a reply kept: a job's JSON pruned by tree= is small. */
#define ONLINE_MAX_BODY (1u << 20)

typedef struct {
	GString *body;
	gboolean jenkins;    /* an X-Jenkins header came */
} Reply;

static size_t
on_body(char *buf, size_t size, size_t n, void *data)
{
	Reply *r = data;

	if (r->body->len + size * n > ONLINE_MAX_BODY)
		return 0;
	g_string_append_len(r->body, buf, (gssize)(size * n));
	return size * n;
}

static size_t
on_header(char *buf, size_t size, size_t n, void *data)
{
	Reply *r = data;

	if (size * n >= 10 && g_ascii_strncasecmp(buf, "X-Jenkins:", 10) == 0)
		r->jenkins = TRUE;
	return size * n;
}

/* GET @path below the configured base; *@status its HTTP status.  A
 * transport failure is the error (IO transient, CONFIG for TLS trust and
 * the like), keyed to url. */
static gboolean
get(const JkConfig *cfg, const char *group, const char *path, Reply *r,
    long *status, GError **error)
{
	JK_AUTO(CURL) e = curl_easy_init();
	g_autofree char *url = g_strdup_printf("%s/%s", cfg->base, path);
	char errbuf[CURL_ERROR_SIZE];
	CURLcode cc;

	if (e == NULL)
		return pgate_config_error(error, PGATE_CI_ERROR, group, "url",
					  "libcurl could not make a handle");
	pgate_curl_setup(e, "http,https", errbuf);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	pgate_ci_jenkins__easy_auth(e, cfg);
	pgate_curl_timeouts(e, (gint64)cfg->request_timeout * 1000,
			    (gint64)cfg->request_timeout * 1000);
	cc = curl_easy_perform(e);
	if (cc != CURLE_OK) {
		PgateErrorCode code = pgate_curl_error_code(cc);

		g_set_error(error, PGATE_CI_ERROR,
			    code == PGATE_ERROR_CONFIG ? code : PGATE_ERROR_IO,
			    "[%s] url: GET /%s: %s", group, path,
			    pgate_curl_message(cc, errbuf));
		return FALSE;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	return TRUE;
}

/* The key the secret came from, for the messages. */
static const char *
secret_key(GKeyFile *kf, const char *group)
{
	static const char *const keys[] = { "token_file", "token_env",
					    "password_file", "password_env" };

	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (g_key_file_has_key(kf, group, keys[i], NULL))
			return keys[i];
	return "token_file";
}

/* What a status other than 200 says of the request for @what. */
static gboolean
status_error(const JkConfig *cfg, GKeyFile *kf, const char *group,
	     const char *path, long status, const Reply *r, GError **error)
{
	if (status == 401)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] %s: Jenkins refused user %s's credentials "
			    "(GET /%s: 401)", group, secret_key(kf, group),
			    cfg->user, path);
	else if (status == 403)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] user: %s may not read /%s (403: it needs "
			    "Overall/Read, and Job/Read and Job/Build on the "
			    "job)", group, cfg->user, path);
	else if (status == 408 || status == 429 || status >= 500)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
			    "[%s] url: GET /%s: HTTP %ld (Jenkins is starting "
			    "or overloaded: try again later)", group, path,
			    status);
	else if (!r->jenkins)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] url: GET /%s: HTTP %ld without an X-Jenkins "
			    "header: no Jenkins there", group, path, status);
	else
		return FALSE;	/* Jenkins' own answer: the caller's */
	return TRUE;
}

gboolean
pgate_ci_jenkins_check_online(GKeyFile *kf, const char *group,
			      GError **error)
{
	JkConfig cfg;
	gboolean ok = FALSE;
	long status = 0;
	Reply r = { g_string_new(NULL), FALSE };
	g_autofree char *jpath = NULL;
	json_t *j = NULL;

	memset(&cfg, 0, sizeof cfg);
	pgate_curl_init();
	if (!pgate_ci_jenkins__config_load(&cfg, kf, group, error))
		goto out;
	/* the server, and our credentials on it */
	if (!get(&cfg, group, "api/json?tree=mode", &r, &status, error))
		goto out;
	if (status != 200) {
		if (!status_error(&cfg, kf, group, "api/json", status, &r,
				  error))
			g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
				    "[%s] url: GET /api/json: HTTP %ld", group,
				    status);
		goto out;
	}
	if (!r.jenkins) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] url: GET /api/json answered without an "
			    "X-Jenkins header: no Jenkins there", group);
		goto out;
	}
	/* the job (a folder of that name is no job) */
	jpath = g_strdup_printf("%sapi/json?tree=name,buildable",
				cfg.job_url_path);
	g_string_truncate(r.body, 0);
	if (!get(&cfg, group, jpath, &r, &status, error))
		goto out;
	if (status == 404) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] job: no job %s (GET /%sapi/json: 404; or "
			    "user %s may not see it)", group, cfg.job,
			    cfg.job_url_path, cfg.user);
		goto out;
	}
	if (status != 200) {
		if (!status_error(&cfg, kf, group, jpath, status, &r, error))
			g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_FAILED,
				    "[%s] job: GET /%s: HTTP %ld", group, jpath,
				    status);
		goto out;
	}
	j = json_loadb(r.body->str, r.body->len, 0, NULL);
	if (!json_is_object(j)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_FAILED,
			    "[%s] job: GET /%s: the answer is no JSON object",
			    group, jpath);
		goto out;
	}
	if (!json_is_boolean(json_object_get(j, "buildable"))) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] job: %s is a folder, not a job", group,
			    cfg.job);
		goto out;
	}
	if (!json_is_true(json_object_get(j, "buildable"))) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "[%s] job: %s is disabled (Jenkins would refuse "
			    "every build: 409)", group, cfg.job);
		goto out;
	}
	/* a password login's POSTs carry a crumb (jenkins.c); 404: CSRF
	 * protection is off and none is needed */
	if (cfg.auth == JK_AUTH_PASSWORD) {
		static const char crumb[] = "crumbIssuer/api/json";

		g_string_truncate(r.body, 0);
		if (!get(&cfg, group, crumb, &r, &status, error))
			goto out;
		if (status != 200 && status != 404) {
			if (!status_error(&cfg, kf, group, crumb, status, &r,
					  error))
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_FAILED,
					    "[%s] %s: no crumb for user %s "
					    "(GET /%s: HTTP %ld)", group,
					    secret_key(kf, group), cfg.user,
					    crumb, status);
			goto out;
		}
	}
	ok = TRUE;
out:
	if (j != NULL)
		json_decref(j);
	g_string_free(r.body, TRUE);
	pgate_ci_jenkins__config_clear(&cfg);
	return ok;
}
