/* patchwork.c - the Patchwork REST client: configuration and the calls.
 *
 * Every list is read page by page along the Link header's rel="next"
 * (Patchwork answers bare JSON arrays, 30 items per page unless per_page
 * says otherwise, at most 250).  A next link is followed only on the
 * configured host, and on the configured origin: a Patchwork behind a
 * TLS-terminating proxy often writes http:// links, which must not make
 * us leave https.
 */
#include "report/patchwork/patchwork-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOKEN 256u
#define MAX_TOKEN_FILE 4096u

/* "patchwork: [GROUP] KEY: what" (pgate_config_verror) */
static gboolean G_GNUC_PRINTF(4, 5)
config_error(GError **error, const char *group, const char *key,
	     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pgate_config_verror(error, PGATE_REPORT_ERROR, group, key, fmt, ap);
	va_end(ap);
	g_prefix_error(error, "patchwork: ");
	return FALSE;
}

/* The getters of common/config.c in this group's domain. */
static gboolean
get_string(GKeyFile *kf, const char *group, const char *key, char **out,
	   GError **error)
{
	return pgate_config_string(kf, group, key, out, PGATE_REPORT_ERROR,
				   error);
}

static gboolean
get_uint(GKeyFile *kf, const char *group, const char *key, guint def,
	 guint min, guint max, guint *out, GError **error)
{
	gint64 v;

	if (!pgate_config_int(kf, group, key, def, min, max, FALSE, &v,
			      PGATE_REPORT_ERROR, error))
		return FALSE;
	*out = (guint)v;
	return TRUE;
}

static gboolean
token_is_valid(const char *t)
{
	gsize n = 0;

	for (; *t; t++, n++)
		if ((guchar)*t <= 0x20 || (guchar)*t >= 0x7f || n >= MAX_TOKEN)
			return FALSE;
	return n > 0;
}

/* Reads the token file (common/config.c); its content never reaches a
 * message. */
static char *
read_token_file(const char *group, const char *path, GError **error)
{
	char *tok = pgate_config_secret_file(group, "token_file", path,
					     MAX_TOKEN_FILE,
					     PGATE_REPORT_ERROR, error);

	if (tok == NULL)
		return NULL;
	g_strstrip(tok);
	if (!token_is_valid(tok)) {
		explicit_bzero(tok, strlen(tok));
		g_free(tok);
		config_error(error, group, "token_file",
			     "%s does not hold one token (1 to %u printable ASCII "
			     "characters without spaces)", path, MAX_TOKEN);
		return NULL;
	}
	return tok;
}

static gboolean
read_token(PgatePatchwork *pw, GKeyFile *kf, const char *group,
	   GError **error)
{
	g_autofree char *file = NULL, *env = NULL;

	if (g_key_file_has_key(kf, group, "token", NULL))
		return config_error(error, group, "token",
				    "a token does not belong in the configuration: "
				    "put it in a file named by token_file, or in an "
				    "environment variable named by token_env");
	if (!get_string(kf, group, "token_file", &file, error) ||
	    !get_string(kf, group, "token_env", &env, error))
		return FALSE;
	if (file && env)
		return config_error(error, group, "token_file",
				    "set token_file or token_env, not both");
	if (file) {
		pw->token = read_token_file(group, file, error);
		return pw->token != NULL;
	}
	if (env) {
		const char *v = g_getenv(env);
		g_autofree char *t = NULL;

		if (v == NULL)
			return config_error(error, group, "token_env",
					    "the environment variable %s is not set",
					    env);
		t = g_strstrip(g_strdup(v));
		if (!token_is_valid(t)) {
			explicit_bzero(t, strlen(t));
			return config_error(error, group, "token_env",
					    "the environment variable %s does not hold "
					    "one token", env);
		}
		pw->token = g_steal_pointer(&t);
		pgate_secret_add(pw->token);
	}
	return TRUE;
}

static gboolean
parse_url(PgatePatchwork *pw, const char *group, const char *url,
	  GError **error)
{
	g_autoptr(GUri) uri = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *path = NULL;
	const char *scheme;

	uri = g_uri_parse(url, G_URI_FLAGS_ENCODED | G_URI_FLAGS_HAS_PASSWORD,
			  &local);
	if (uri == NULL)
		return config_error(error, group, "url", "not a URL (%s)",
				    local->message);
	scheme = g_uri_get_scheme(uri);
	if (g_ascii_strcasecmp(scheme, "http") != 0 &&
	    g_ascii_strcasecmp(scheme, "https") != 0)
		return config_error(error, group, "url",
				    "the scheme must be http or https");
	if (g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0')
		return config_error(error, group, "url", "no host");
	if (g_uri_get_user(uri) || g_uri_get_password(uri))
		return config_error(error, group, "url",
				    "must not carry credentials: use token_file");
	if (g_uri_get_query(uri) || g_uri_get_fragment(uri))
		return config_error(error, group, "url",
				    "must not have a query or a fragment");
	pw->host = g_ascii_strdown(g_uri_get_host(uri), -1);
	pw->origin = g_uri_join(G_URI_FLAGS_ENCODED, scheme, NULL,
				g_uri_get_host(uri), g_uri_get_port(uri), "",
				NULL, NULL);
	path = g_strdup(g_uri_get_path(uri));
	while (*path && path[strlen(path) - 1] == '/')
		path[strlen(path) - 1] = '\0';
	/* "https://host/api/" is a common slip: the API path is ours */
	if (g_str_has_suffix(path, "/api") ||
	    strstr(path, "/api/") != NULL)
		return config_error(error, group, "url",
				    "give Patchwork's base URL, without /api/...");
	pw->api = g_strdup_printf("%s%s/api/%s/", pw->origin, path,
				  pw->api_version);
	pw->base = g_strdup_printf("%s%s/", pw->origin, path);
	return TRUE;
}

PgatePatchwork *
pgate_patchwork_new(GKeyFile *kf, const char *group, GError **error)
{
	g_autoptr(PgatePatchwork) pw = g_new0(PgatePatchwork, 1);
	g_autofree char *url = NULL;
	guint minor = 0;

	g_return_val_if_fail(kf != NULL && group != NULL, NULL);
	pw->group = g_strdup(group);

	if (!get_string(kf, group, "url", &url, error) ||
	    !get_string(kf, group, "project", &pw->project, error) ||
	    !get_string(kf, group, "api_version", &pw->api_version, error) ||
	    !get_string(kf, group, "user", &pw->user, error) ||
	    !get_string(kf, group, "ca_file", &pw->ca_file, error))
		return NULL;
	if (url == NULL) {
		config_error(error, group, "url", "missing (Patchwork's base URL, "
			     "e.g. https://patchwork.example.org/)");
		return NULL;
	}
	if (pw->project == NULL) {
		config_error(error, group, "project",
			     "missing (the project's link name or id)");
		return NULL;
	}
	for (const char *p = pw->project; *p; p++)
		if ((guchar)*p <= 0x20 || *p == '/') {
			config_error(error, group, "project",
				     "not a link name or an id");
			return NULL;
		}
	if (pw->api_version == NULL)
		pw->api_version = g_strdup("1.3");
	/* 1.0 and 1.1 silently ignore ?msgid= and list every patch */
	if (!g_str_has_prefix(pw->api_version, "1.") ||
	    sscanf(pw->api_version + 2, "%u", &minor) != 1 || minor < 2 ||
	    strspn(pw->api_version + 2, "0123456789") !=
		    strlen(pw->api_version + 2)) {
		config_error(error, group, "api_version",
			     "'%s': must be 1.2 or newer (1.0 and 1.1 ignore the "
			     "msgid filter)", pw->api_version);
		return NULL;
	}
	if (!parse_url(pw, group, url, error))
		return NULL;
	if (pw->ca_file && !g_file_test(pw->ca_file, G_FILE_TEST_IS_REGULAR)) {
		config_error(error, group, "ca_file", "%s is not a file",
			     pw->ca_file);
		return NULL;
	}
	if (!get_uint(kf, group, "timeout", 30, 1, 3600, &pw->timeout, error) ||
	    !get_uint(kf, group, "connect_timeout", 10, 1, 3600,
		      &pw->connect_timeout, error) ||
	    !get_uint(kf, group, "per_page", 100, 0, 250, &pw->per_page, error) ||
	    !get_uint(kf, group, "max_description", 1000, 16, 100000,
		      &pw->max_description, error) ||
	    !get_uint(kf, group, "lookup_retry_min", 60, 1, 86400,
		      &pw->retry_min, error) ||
	    !get_uint(kf, group, "lookup_retry_max", 3600, 1, 7 * 86400,
		      &pw->retry_max, error) ||
	    !get_uint(kf, group, "lookup_give_up", 2 * 86400, 0, 60 * 86400,
		      &pw->give_up, error))
		return NULL;
	pw->connect_timeout = MIN(pw->connect_timeout, pw->timeout);
	if (pw->retry_max < pw->retry_min) {
		config_error(error, group, "lookup_retry_max",
			     "smaller than lookup_retry_min");
		return NULL;
	}
	if (!read_token(pw, kf, group, error))
		return NULL;
	return g_steal_pointer(&pw);
}

void
pgate_patchwork_free(PgatePatchwork *pw)
{
	if (pw == NULL)
		return;
	if (pw->curl)
		curl_easy_cleanup(pw->curl);
	if (pw->token) {
		explicit_bzero(pw->token, strlen(pw->token));
		g_free(pw->token);
	}
	g_free(pw->group);
	g_free(pw->origin);
	g_free(pw->base);
	g_free(pw->host);
	g_free(pw->api);
	g_free(pw->project);
	g_free(pw->api_version);
	g_free(pw->user);
	g_free(pw->learned_user);
	g_free(pw->token_user);
	g_free(pw->ca_file);
	g_free(pw);
}

const char *
pgate_patchwork_get_project(PgatePatchwork *pw)
{
	return pw->project;
}

const char *
pgate_patchwork_get_url(PgatePatchwork *pw)
{
	return pw->base;
}

const char *
pgate_patchwork_get_user(PgatePatchwork *pw)
{
	if (pw->user)
		return pw->user;
	return pw->token_user ? pw->token_user : pw->learned_user;
}

gboolean
pgate_patchwork_has_token(PgatePatchwork *pw)
{
	return pw->token != NULL;
}

static char *
esc(const char *s)
{
	return g_uri_escape_string(s, NULL, FALSE);
}

/* "&per_page=N" or "" */
static char *
per_page_arg(PgatePatchwork *pw, char sep)
{
	if (pw->per_page == 0)
		return g_strdup("");
	return g_strdup_printf("%cper_page=%u", sep, pw->per_page);
}

char *
pgate_patchwork__per_page_arg(PgatePatchwork *pw, char sep)
{
	return per_page_arg(pw, sep);
}

/* GETs @url and every next page, calling @fn on each item. */
static gboolean
get_list(PgatePatchwork *pw, const char *url, const char *subject,
	 PwItemFunc fn, gpointer payload, GError **error)
{
	g_autofree char *cur = g_strdup(url);
	PwResponse r = { 0 };
	gboolean ok = FALSE;

	for (guint page = 0;; page++) {
		PW_AUTO(json_t) list = NULL;
		g_autofree char *next = NULL;
		size_t i;
		json_t *item;

		if (page >= PW_MAX_PAGES) {
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
				"patchwork: GET %s: more than %u pages", url,
				PW_MAX_PAGES);
			goto out;
		}
		if (!pgate_patchwork__request(pw, "GET", cur, NULL, FALSE, &r,
					      error) ||
		    !pgate_patchwork__check_status(pw, &r, PW_REQ_READ, "GET", cur,
						   subject, error))
			goto out;
		list = pgate_patchwork__parse_json(&r, "GET", cur, error);
		if (list == NULL)
			goto out;
		if (!json_is_array(list)) {
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
				"patchwork: GET %s: the answer is not a JSON list", cur);
			goto out;
		}
		json_array_foreach(list, i, item)
			if (!fn(pw, item, payload, error))
				goto out;
		next = pgate_patchwork__link_next(r.link->str);
		if (next == NULL)
			break;
		g_free(cur);
		cur = pgate_patchwork__rebase_url(pw, next, error);
		if (cur == NULL)
			goto out;
	}
	ok = TRUE;
out:
	pgate_patchwork__response_clear(&r);
	return ok;
}

gboolean
pgate_patchwork__get_list(PgatePatchwork *pw, const char *url,
			  const char *subject, PwItemFunc fn, gpointer payload,
			  GError **error)
{
	return get_list(pw, url, subject, fn, payload, error);
}

/* GETs one object. */
static json_t *
get_object(PgatePatchwork *pw, const char *url, const char *subject,
	   PwRequestKind kind, gboolean auth, GError **error)
{
	PwResponse r = { 0 };
	json_t *j = NULL;

	if (pgate_patchwork__request(pw, "GET", url, NULL, auth, &r, error) &&
	    pgate_patchwork__check_status(pw, &r, kind, "GET", url, subject,
					  error))
		j = pgate_patchwork__parse_json(&r, "GET", url, error);
	pgate_patchwork__response_clear(&r);
	if (j && !json_is_object(j) && !json_is_array(j)) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: GET %s: the answer is not a JSON object", url);
		g_clear_pointer(&j, json_decref);
	}
	return j;
}

/* ---- lookups --------------------------------------------------------- */

/* The Message-ID without brackets, as ?msgid= wants it. */
static char *
bare_msgid(const char *msgid, GError **error)
{
	g_autofree char *m = g_strstrip(g_strdup(msgid ? msgid : ""));
	gsize n = strlen(m);

	if (n >= 2 && m[0] == '<' && m[n - 1] == '>') {
		memmove(m, m + 1, n - 2);
		m[n - 2] = '\0';
	}
	if (*m == '\0') {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: an empty Message-ID cannot be looked up");
		return NULL;
	}
	n = g_utf8_validate(m, -1, NULL) ? (gsize)g_utf8_strlen(m, -1) : strlen(m);
	if (n + 2 > PW_MAX_MSGID) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: a Message-ID of %" G_GSIZE_FORMAT
			    " characters cannot be looked up: Patchwork keeps "
			    "only the first %u, brackets included", n,
			    PW_MAX_MSGID);
		return NULL;
	}
	return g_steal_pointer(&m);
}

typedef struct {
	const char *want;  /* "<id>" */
	gint64 patch_id;
	gint64 series_id;
	guint matches;
} Lookup;

static gboolean
lookup_item(PgatePatchwork *pw, json_t *item, gpointer payload,
	    GError **error)
{
	Lookup *l = payload;
	json_t *id = json_object_get(item, "id");
	json_t *msgid = json_object_get(item, "msgid");
	json_t *series = json_object_get(item, "series");

	if (!json_is_string(msgid) || strcmp(json_string_value(msgid), l->want))
		return TRUE;
	if (!json_is_integer(id)) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: a patch without an integer id");
		return FALSE;
	}
	if (l->matches++ > 0)
		return TRUE;  /* the first (lowest id) wins */
	l->patch_id = json_integer_value(id);
	if (json_is_array(series) && json_array_size(series) > 0) {
		json_t *sid = json_object_get(json_array_get(series, 0), "id");

		if (json_is_integer(sid))
			l->series_id = json_integer_value(sid);
	}
	return TRUE;
}

gboolean
pgate_patchwork_lookup_msgid(PgatePatchwork *pw, const char *msgid,
			     gint64 *out_patch_id, gint64 *out_series_id,
			     GError **error)
{
	g_autofree char *bare = NULL, *want = NULL, *url = NULL;
	g_autofree char *eproj = NULL, *eid = NULL, *pp = NULL;
	g_autofree char *subject = NULL, *shown = NULL;
	Lookup l = { 0 };

	g_return_val_if_fail(pw != NULL, FALSE);
	bare = bare_msgid(msgid, error);
	if (bare == NULL)
		return FALSE;
	want = g_strconcat("<", bare, ">", NULL);
	l.want = want;
	eproj = esc(pw->project);
	eid = esc(bare);
	pp = per_page_arg(pw, '&');
	url = g_strdup_printf("%spatches/?project=%s&msgid=%s%s", pw->api, eproj,
			      eid, pp);
	shown = pgate_patchwork__quote(want, -1);
	subject = g_strdup_printf("msgid=%s", shown);
	if (!get_list(pw, url, subject, lookup_item, &l, error))
		return FALSE;
	if (l.matches == 0) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_NOT_FOUND,
			    "patchwork: no patch with msgid=%s in project %s (yet)",
			    shown, pw->project);
		return FALSE;
	}
	if (l.matches > 1)
		g_debug("patchwork: msgid=%s: %u patches in project %s, using %"
			G_GINT64_FORMAT, shown, l.matches, pw->project, l.patch_id);
	if (out_patch_id)
		*out_patch_id = l.patch_id;
	if (out_series_id)
		*out_series_id = l.series_id;
	return TRUE;
}

static void
patch_ref_free(gpointer p)
{
	PgatePatchworkPatchRef *r = p;

	g_free(r->msgid);
	g_free(r->name);
	g_free(r);
}

void
pgate_patchwork_series_free(PgatePatchworkSeries *series)
{
	if (series == NULL)
		return;
	g_free(series->name);
	g_free(series->cover_msgid);
	if (series->patches)
		g_ptr_array_unref(series->patches);
	g_free(series);
}

static guint
json_uint(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
			       json_integer_value(v) <= G_MAXUINT
		       ? (guint)json_integer_value(v)
		       : 0;
}

char *
pgate_patchwork__json_str(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? g_strndup(json_string_value(v),
					     json_string_length(v))
				 : NULL;
}

/* Whether a project object is the configured project. */
static gboolean
is_our_project(PgatePatchwork *pw, json_t *project)
{
	json_t *id = json_object_get(project, "id");
	json_t *link = json_object_get(project, "link_name");
	g_autofree char *ids = NULL;

	if (json_is_string(link) &&
	    g_ascii_strcasecmp(json_string_value(link), pw->project) == 0)
		return TRUE;
	if (!json_is_integer(id))
		return FALSE;
	ids = g_strdup_printf("%" G_GINT64_FORMAT, (gint64)json_integer_value(id));
	return strcmp(ids, pw->project) == 0;
}

PgatePatchworkSeries *
pgate_patchwork_series_get(PgatePatchwork *pw, gint64 series_id,
			   GError **error)
{
	g_autoptr(PgatePatchworkSeries) s = NULL;
	g_autofree char *url = NULL, *subject = NULL;
	PW_AUTO(json_t) j = NULL;
	json_t *patches, *cover, *project, *item;
	size_t i;

	g_return_val_if_fail(pw != NULL, NULL);
	if (series_id <= 0) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: series id %" G_GINT64_FORMAT " is not valid",
			    series_id);
		return NULL;
	}
	url = g_strdup_printf("%sseries/%" G_GINT64_FORMAT "/", pw->api,
			      series_id);
	subject = g_strdup_printf("series %" G_GINT64_FORMAT, series_id);
	j = get_object(pw, url, subject, PW_REQ_READ, FALSE, error);
	if (j == NULL)
		return NULL;
	project = json_object_get(j, "project");
	patches = json_object_get(j, "patches");
	if (!json_is_object(j) || !json_is_array(patches) ||
	    !json_is_object(project)) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: GET %s: not a series (no patches or project)", url);
		return NULL;
	}
	if (!is_our_project(pw, project)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: series %" G_GINT64_FORMAT
			    " is not in project %s", series_id, pw->project);
		return NULL;
	}
	s = g_new0(PgatePatchworkSeries, 1);
	s->id = series_id;
	s->project_id = json_integer_value(json_object_get(project, "id"));
	s->name = pgate_patchwork__json_str(j, "name");
	s->version = json_uint(j, "version");
	s->total = json_uint(j, "total");
	s->received_total = json_uint(j, "received_total");
	s->received_all = json_is_true(json_object_get(j, "received_all"));
	cover = json_object_get(j, "cover_letter");
	if (json_is_object(cover))
		s->cover_msgid = pgate_patchwork__json_str(cover, "msgid");
	s->patches = g_ptr_array_new_with_free_func(patch_ref_free);
	json_array_foreach(patches, i, item) {
		PgatePatchworkPatchRef *r;
		json_t *id = json_object_get(item, "id");

		if (!json_is_integer(id) || !json_is_string(json_object_get(item, "msgid")))
			continue;
		r = g_new0(PgatePatchworkPatchRef, 1);
		r->id = json_integer_value(id);
		r->msgid = pgate_patchwork__json_str(item, "msgid");
		r->name = pgate_patchwork__json_str(item, "name");
		g_ptr_array_add(s->patches, r);
	}
	return g_steal_pointer(&s);
}

gint64
pgate_patchwork_series_find_patch(const PgatePatchworkSeries *series,
				  const char *msgid)
{
	g_autofree char *bare = NULL, *want = NULL;

	g_return_val_if_fail(series != NULL, 0);
	bare = bare_msgid(msgid, NULL);
	if (bare == NULL)
		return 0;
	want = g_strconcat("<", bare, ">", NULL);
	for (guint i = 0; i < series->patches->len; i++) {
		const PgatePatchworkPatchRef *r = g_ptr_array_index(series->patches, i);

		if (g_strcmp0(r->msgid, want) == 0)
			return r->id;
	}
	return 0;
}

/* ---- checks ------------------------------------------------------------ */

static gboolean
check_item(PgatePatchwork *pw, json_t *item, gpointer payload, GError **error)
{
	PgatePatchworkCheck *c = pgate_patchwork__check_from_json(item, error);

	if (c == NULL)
		return FALSE;
	g_ptr_array_add(payload, c);
	return TRUE;
}

GPtrArray *
pgate_patchwork_list_checks(PgatePatchwork *pw, gint64 patch_id,
			    GError **error)
{
	g_autoptr(GPtrArray) out = NULL;
	g_autofree char *url = NULL, *subject = NULL, *pp = NULL;

	g_return_val_if_fail(pw != NULL, NULL);
	out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_patchwork_check_free);
	pp = per_page_arg(pw, '?');
	url = g_strdup_printf("%spatches/%" G_GINT64_FORMAT "/checks/%s", pw->api,
			      patch_id, pp);
	subject = g_strdup_printf("patch %" G_GINT64_FORMAT, patch_id);
	if (!get_list(pw, url, subject, check_item, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

gboolean
pgate_patchwork_post_check(PgatePatchwork *pw, gint64 patch_id,
			   const PgatePatchworkCheck *check,
			   PgatePatchworkCheck **out_posted, GError **error)
{
	g_autoptr(PgatePatchworkCheck) c = NULL;
	g_autofree char *url = NULL, *subject = NULL, *body = NULL;
	PW_AUTO(json_t) req = NULL;
	PW_AUTO(json_t) answer = NULL;
	PwResponse r = { 0 };
	gboolean ok = FALSE;

	g_return_val_if_fail(pw != NULL && check != NULL, FALSE);
	if (!pgate_patchwork_context_is_valid(check->context)) {
		g_autofree char *q = pgate_patchwork__quote(check->context, -1);

		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: context '%s' is not valid: 1 to %u letters, "
			    "digits, '_' or '-'", q, PW_MAX_CONTEXT);
		return FALSE;
	}
	if ((guint)check->state > PGATE_PATCHWORK_STATE_FAIL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: check state %d is not valid", check->state);
		return FALSE;
	}
	if (pw->token == NULL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "patchwork: [%s]: no token configured (token_file or "
			    "token_env): cannot post checks", pw->group);
		return FALSE;
	}
	c = pgate_patchwork_check_normalize(check, pw->max_description);
	req = json_pack("{s:s, s:s}", "state",
			pgate_patchwork_state_to_string(c->state), "context",
			c->context);
	if (c->target_url)
		json_object_set_new(req, "target_url", json_string(c->target_url));
	if (c->description)
		json_object_set_new(req, "description", json_string(c->description));
	body = json_dumps(req, JSON_COMPACT);
	if (body == NULL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "patchwork: cannot encode the check as JSON");
		return FALSE;
	}
	url = g_strdup_printf("%spatches/%" G_GINT64_FORMAT "/checks/", pw->api,
			      patch_id);
	subject = g_strdup_printf("patch %" G_GINT64_FORMAT, patch_id);
	if (!pgate_patchwork__request(pw, "POST", url, body, TRUE, &r, error) ||
	    !pgate_patchwork__check_status(pw, &r, PW_REQ_POST_CHECK, "POST", url,
					   subject, error))
		goto out;
	if (r.status != 201) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: POST %s: HTTP %ld instead of 201 Created", url,
			r.status);
		goto out;
	}
	/* Accepted.  The answer only adds detail: a bad one is no failure. */
	ok = TRUE;
	answer = pgate_patchwork__parse_json(&r, "POST", url, NULL);
	if (answer && json_is_object(answer)) {
		g_autoptr(PgatePatchworkCheck) posted =
			pgate_patchwork__check_from_json(answer, NULL);

		if (posted && posted->user && pw->user == NULL &&
		    g_strcmp0(pw->learned_user, posted->user) != 0) {
			g_free(pw->learned_user);
			pw->learned_user = g_strdup(posted->user);
		}
		if (out_posted)
			*out_posted = g_steal_pointer(&posted);
	}
	if (out_posted && *out_posted == NULL) {
		*out_posted = g_steal_pointer(&c);
	}
	g_debug("patchwork: patch=%" G_GINT64_FORMAT " context=%s state=%s posted",
		patch_id, check->context, pgate_patchwork_state_to_string(check->state));
out:
	pgate_patchwork__response_clear(&r);
	return ok;
}

gboolean
pgate_patchwork_post_check_decided(PgatePatchwork *pw, gint64 patch_id,
				   const PgatePatchworkCheck *check,
				   PgatePatchworkDecision *out_decision,
				   GError **error)
{
	g_autoptr(PgatePatchworkCheck) ours = NULL;
	g_autoptr(GPtrArray) existing = NULL;
	PgatePatchworkDecision d;

	g_return_val_if_fail(pw != NULL && check != NULL, FALSE);
	ours = pgate_patchwork_check_normalize(check, pw->max_description);
	existing = pgate_patchwork_list_checks(pw, patch_id, error);
	if (existing == NULL)
		return FALSE;
	d = pgate_patchwork_check_decide(existing, ours,
					 pgate_patchwork_get_user(pw));
	if (out_decision)
		*out_decision = d;
	if (d != PGATE_PATCHWORK_POST) {
		g_debug("patchwork: patch=%" G_GINT64_FORMAT " context=%s state=%s: %s",
			patch_id, ours->context,
			pgate_patchwork_state_to_string(ours->state),
			pgate_patchwork_decision_to_string(d));
		return TRUE;
	}
	return pgate_patchwork_post_check(pw, patch_id, ours, NULL, error);
}

/* ---- setup check, retries ------------------------------------------------- */

/* Whether the token is user @id's: Patchwork (API 1.2 and newer) shows a
 * user's "settings" to that user only (it has no "who am I" request). */
static gboolean
probe_user(PgatePatchwork *pw, gint64 id, gboolean *out_is_us, GError **error)
{
	g_autofree char *url = g_strdup_printf("%susers/%" G_GINT64_FORMAT "/",
					       pw->api, id);
	g_autofree char *subject = g_strdup_printf("user %" G_GINT64_FORMAT, id);
	PW_AUTO(json_t) u = get_object(pw, url, subject, PW_REQ_AUTH_CHECK, TRUE,
				       error);

	if (u == NULL)
		return FALSE;
	*out_is_us = json_is_object(json_object_get(u, "settings"));
	return TRUE;
}

/* "a, b, c" of the maintainers' usernames (transfer full). */
static char *
maintainer_names(json_t *maint)
{
	GString *out = g_string_new(NULL);
	json_t *m;
	size_t i;

	json_array_foreach(maint, i, m) {
		json_t *name = json_object_get(m, "username");

		if (!json_is_string(name))
			continue;
		if (out->len > PW_MAX_QUOTE) {
			g_string_append(out, ", ...");
			break;
		}
		if (out->len)
			g_string_append(out, ", ");
		g_string_append(out, json_string_value(name));
	}
	if (out->len == 0)
		g_string_append(out, "none");
	return g_string_free(out, FALSE);
}

/* The token's user among the project's maintainers @maint (transfer
 * full), or %NULL: with @error set when asking failed, without when the
 * token is none of theirs.  With "user" configured, only that one is
 * asked. */
static char *
find_token_user(PgatePatchwork *pw, json_t *maint, GError **error)
{
	json_t *m;
	size_t i;
	guint probes = 0;

	json_array_foreach(maint, i, m) {
		json_t *id = json_object_get(m, "id");
		json_t *name = json_object_get(m, "username");
		gboolean us = FALSE;

		if (!json_is_integer(id) || !json_is_string(name))
			continue;
		if (pw->user && strcmp(json_string_value(name), pw->user) != 0)
			continue;
		if (probes++ >= PW_MAX_PROBES)
			break;
		if (!probe_user(pw, json_integer_value(id), &us, error))
			return NULL;
		if (us)
			return g_strdup(json_string_value(name));
	}
	return NULL;
}

gboolean
pgate_patchwork_verify(PgatePatchwork *pw, GError **error)
{
	g_autofree char *eproj = esc(pw->project);
	g_autofree char *url = g_strdup_printf("%sprojects/%s/", pw->api, eproj);
	g_autofree char *subject = g_strdup_printf("project %s", pw->project);
	g_autofree char *names = NULL, *found = NULL;
	g_autoptr(GError) local = NULL;
	PW_AUTO(json_t) proj = NULL;
	json_t *maint, *m;
	size_t i;

	g_return_val_if_fail(pw != NULL, FALSE);
	if (pw->verified)
		return TRUE;
	proj = get_object(pw, url, subject, PW_REQ_READ, FALSE, &local);
	if (proj == NULL) {
		if (g_error_matches(local, PGATE_REPORT_ERROR, PGATE_ERROR_NOT_FOUND)) {
			g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
				    "patchwork: [%s] project: %s does not exist at %s "
				    "(give its link name, as in %sproject/NAME/, or its "
				    "id)", pw->group, pw->project, pw->base, pw->base);
			return FALSE;
		}
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	maint = json_object_get(proj, "maintainers");
	names = maintainer_names(maint);
	if (pw->token) {
		g_autofree char *uurl = g_strdup_printf("%susers/?per_page=1", pw->api);
		PW_AUTO(json_t) users = get_object(pw, uurl, "users",
						   PW_REQ_AUTH_CHECK, TRUE, error);

		if (users == NULL)
			return FALSE;
		found = find_token_user(pw, maint, &local);
		if (local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (found == NULL && pw->user) {
			gboolean listed = FALSE;

			json_array_foreach(maint, i, m)
				listed |= g_strcmp0(json_string_value(json_object_get(
					m, "username")), pw->user) == 0;
			if (listed) {
				g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
					    "patchwork: [%s] user: the token is not "
					    "'%s''s: set user to the token's user, or "
					    "put '%s''s token in token_file (or token_env)",
					    pw->group, pw->user, pw->user);
				return FALSE;
			}
		}
		if (found == NULL && pw->user == NULL) {
			g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
				    "patchwork: [%s]: the token's user is not a "
				    "maintainer of project %s (maintainers: %s), so "
				    "Patchwork will refuse its checks (403) on patches "
				    "it did not submit and is not delegate of: ask a "
				    "Patchwork administrator to make it a maintainer, "
				    "or use a maintainer's token",
				    pw->group, pw->project, names);
			return FALSE;
		}
		if (found != NULL) {
			g_free(pw->token_user);
			pw->token_user = g_steal_pointer(&found);
			pw->verified = TRUE;
			return TRUE;
		}
	}
	if (pw->user) {
		json_array_foreach(maint, i, m) {
			json_t *name = json_object_get(m, "username");

			if (json_is_string(name) &&
			    strcmp(json_string_value(name), pw->user) == 0) {
				pw->verified = TRUE;
				return TRUE;
			}
		}
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "patchwork: [%s] user: '%s' is not a maintainer of project "
			    "%s (maintainers: %s), so Patchwork will refuse its checks "
			    "(403) on patches it did not submit and is not delegate "
			    "of: ask a Patchwork administrator to make it a maintainer",
			    pw->group, pw->user, pw->project, names);
		return FALSE;
	}
	pw->verified = TRUE;
	return TRUE;
}

gboolean
pgate_patchwork_lookup_retry_at(PgatePatchwork *pw, gint64 first_try,
				gint64 now, guint attempts, gint64 *out_next)
{
	gint64 delay = pw->retry_min, deadline = first_try + pw->give_up;

	if (now >= deadline)
		return FALSE;
	for (guint i = 1; i < attempts && delay < pw->retry_max; i++)
		delay *= 2;
	delay = MIN(delay, (gint64)pw->retry_max);
	/* one last try at the deadline, then give up */
	*out_next = MIN(now + delay, deadline);
	return TRUE;
}

char *
pgate_patchwork_lookup_give_up_message(PgatePatchwork *pw, const char *msgid,
				       guint attempts, gint64 elapsed)
{
	g_autofree char *q = pgate_patchwork__quote(msgid, -1);

	return g_strdup_printf("patchwork: msgid=%s not found in project %s at "
			       "%s after %u lookups over %" G_GINT64_FORMAT
			       " s: giving up (does this Patchwork receive the "
			       "list? lookup_give_up in [%s] sets how long to wait)",
			       q, pw->project, pw->origin, attempts, elapsed,
			       pw->group);
}

/* ---- checking: `patchgate config check --online` ---------------------- */

/* @e's message without the "patchwork: " every message of this client
 * starts with, after "[GROUP] KEY: " (transfer full). */
static GError *
keyed(PgatePatchwork *pw, const char *key, const GError *e)
{
	g_autofree char *bare = g_strdup_printf("[%s]: ", pw->group);
	g_autofree char *named = g_strdup_printf("[%s] ", pw->group);
	const char *m = e->message;

	if (g_str_has_prefix(m, "patchwork: "))
		m += strlen("patchwork: ");
	/* pgate_patchwork_verify() names the group, and the key when it
	 * knows it */
	if (g_str_has_prefix(m, bare))
		m += strlen(bare);
	else if (g_str_has_prefix(m, named))
		return g_error_new_literal(PGATE_REPORT_ERROR, e->code, m);
	return g_error_new(PGATE_REPORT_ERROR, e->code, "[%s] %s: %s",
			   pw->group, key, m);
}

gboolean
pgate_patchwork_check_online(PgatePatchwork *pw, const char *token_key,
			     GError **error)
{
	g_autofree char *eproj = esc(pw->project);
	g_autofree char *url = g_strdup_printf("%sprojects/%s/", pw->api, eproj);
	g_autofree char *subject = g_strdup_printf("project %s", pw->project);
	g_autoptr(GError) local = NULL;
	PW_AUTO(json_t) proj = NULL;

	g_return_val_if_fail(pw != NULL, FALSE);
	/* the project, anonymously: a 404 of Patchwork's is the project's
	 * (the key to fix), any other failure the server's (url) */
	proj = get_object(pw, url, subject, PW_REQ_READ, FALSE, &local);
	if (proj == NULL) {
		if (g_error_matches(local, PGATE_REPORT_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_error_new(
				PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
				"[%s] project: no project %s at %s (404; give "
				"its link name, as in %sproject/NAME/, or its "
				"id)", pw->group, pw->project, pw->base,
				pw->base));
		else
			g_propagate_error(error, keyed(pw, "url", local));
		return FALSE;
	}
	/* the token, by a GET that needs one: Patchwork refuses a token it
	 * does not know with 403 "Invalid token." (never 401), which is
	 * not the 404 of a missing project above */
	if (pw->token != NULL) {
		g_autofree char *uurl = g_strdup_printf("%susers/?per_page=1",
							pw->api);
		PW_AUTO(json_t) users = get_object(pw, uurl, "users",
						   PW_REQ_AUTH_CHECK, TRUE,
						   &local);

		if (users == NULL) {
			g_propagate_error(error, keyed(pw, token_key ? token_key
							       : "token_file",
						       local));
			return FALSE;
		}
	}
	/* the rest of the setup the outbox checks before its first post:
	 * the token's (or the configured) user is a maintainer */
	if (!pgate_patchwork_verify(pw, &local)) {
		g_propagate_error(error, keyed(pw, token_key ? token_key
							   : "user", local));
		return FALSE;
	}
	return TRUE;
}
