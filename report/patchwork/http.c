/* http.c - the Patchwork client's only contact with libcurl and HTTP.
 *
 * One transfer at a time on the client's easy handle, reset before each
 * use (so no option leaks from one request into the next, while the
 * connection cache survives).  GETs reuse connections; a POST always opens
 * a fresh one, because curl re-sends a request on its own when a reused
 * connection dies before the answer, and a re-sent check is a double post.  Bodies and the headers we keep are bounded;
 * redirects are never followed; curl's error buffer is translated here,
 * once, into PGATE_REPORT_ERROR codes (transient ones are PGATE_ERROR_IO).
 * HTTP statuses are translated by pgate_patchwork__check_status(), which
 * knows Patchwork's bodies: {"detail": "..."} for most errors, a field ->
 * [messages] object for 400s, Django's HTML pages outside the API.
 */
#include "report/patchwork/patchwork-private.h"

#include <string.h>

void
pgate_patchwork__response_clear(PwResponse *r)
{
	if (r->body)
		g_byte_array_unref(r->body);
	if (r->link)
		g_string_free(r->link, TRUE);
	g_free(r->content_type);
	g_free(r->location);
	memset(r, 0, sizeof *r);
}

void
pgate_patchwork__set_error(PgatePatchwork *pw, GError **error, int code,
			   const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	/* Nothing we format contains the token; should a server ever echo it
	 * back in a body we quote, it still does not get out. */
	if (pw && pw->token && *pw->token && strstr(msg, pw->token)) {
		g_auto(GStrv) parts = g_strsplit(msg, pw->token, -1);

		g_free(msg);
		msg = g_strjoinv("[token]", parts);
	}
	g_set_error_literal(error, PGATE_REPORT_ERROR, code, msg);
}

char *
pgate_patchwork__quote(const char *text, gssize len)
{
	g_autofree char *valid = NULL;
	GString *out;
	const char *p;

	if (text == NULL)
		return g_strdup("");
	if (len < 0)
		len = strlen(text);
	valid = g_utf8_make_valid(text, MIN((gsize)len, PW_MAX_QUOTE * 4));
	out = g_string_sized_new(MIN((gsize)len, PW_MAX_QUOTE) + 4);
	for (p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (out->len >= PW_MAX_QUOTE) {
			g_string_append(out, "...");
			break;
		}
		if (c < 0x20 || c == 0x7f)
			g_string_append_c(out, c == '\n' || c == '\t' ? ' ' : '?');
		else
			g_string_append_unichar(out, c);
	}
	return g_string_free(out, FALSE);
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *payload)
{
	PwResponse *r = payload;
	size_t n = size * nmemb;

	if (r->body->len + n > PW_MAX_BODY)
		return 0; /* CURLE_WRITE_ERROR, reported as too large */
	g_byte_array_append(r->body, (const guint8 *)data, n);
	return n;
}

static gboolean
header_is(const char *line, size_t n, const char *name, const char **value,
	  size_t *vlen)
{
	size_t k = strlen(name);
	const char *v, *end = line + n;

	if (n <= k || g_ascii_strncasecmp(line, name, k) != 0 || line[k] != ':')
		return FALSE;
	v = line + k + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*value = v;
	*vlen = end - v;
	return TRUE;
}

static size_t
on_header(char *data, size_t size, size_t nmemb, void *payload)
{
	PwResponse *r = payload;
	size_t n = size * nmemb;
	const char *v;
	size_t vlen;

	/* A new status line (after a 100 Continue): forget what came before. */
	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		g_string_truncate(r->link, 0);
		g_clear_pointer(&r->location, g_free);
		return n;
	}
	if (header_is(data, n, "Link", &v, &vlen)) {
		if (r->link->len + vlen + 2 > PW_MAX_HEADER_VALUE) {
			r->header_overflow = TRUE;
			return n;
		}
		if (r->link->len)
			g_string_append(r->link, ", ");
		g_string_append_len(r->link, v, vlen);
	} else if (header_is(data, n, "Location", &v, &vlen)) {
		g_free(r->location);
		r->location = g_strndup(v, MIN(vlen, PW_MAX_QUOTE));
	}
	return n;
}

gboolean
pgate_patchwork__request(PgatePatchwork *pw, const char *method,
			 const char *url, const char *body, gboolean auth,
			 PwResponse *resp, GError **error)
{
	struct curl_slist *hdrs = NULL;
	CURLcode rc;
	char *ct = NULL;

	g_return_val_if_fail(pw != NULL && url != NULL && resp != NULL, FALSE);
	g_return_val_if_fail(!auth || pw->token != NULL, FALSE);

	pgate_curl_init();
	if (pw->curl == NULL && (pw->curl = curl_easy_init()) == NULL) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_IO,
					   "patchwork: cannot create a curl handle");
		return FALSE;
	}
	pgate_patchwork__response_clear(resp);
	resp->body = g_byte_array_new();
	resp->link = g_string_new(NULL);

	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (body)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (auth) {
		g_autofree char *h = g_strconcat("Authorization: Token ",
						 pw->token, NULL);

		hdrs = curl_slist_append(hdrs, h);
		explicit_bzero(h, strlen(h));
	}

	curl_easy_reset(pw->curl);
	pgate_curl_setup(pw->curl, "http,https", pw->errbuf);
	curl_easy_setopt(pw->curl, CURLOPT_URL, url);
	pgate_curl_timeouts(pw->curl, (gint64)pw->timeout * 1000,
			    (gint64)pw->connect_timeout * 1000);
	curl_easy_setopt(pw->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(pw->curl, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(pw->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(pw->curl, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(pw->curl, CURLOPT_USERAGENT, PGATE_PATCHWORK_UA);
	curl_easy_setopt(pw->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(pw->curl, CURLOPT_ACCEPT_ENCODING, "");
	if (pw->ca_file)
		curl_easy_setopt(pw->curl, CURLOPT_CAINFO, pw->ca_file);
	if (body) {
		/* curl silently sends a request again when a reused connection
		 * turns out dead before any answer; for a POST the server may
		 * have stored the first one.  A fresh connection is never
		 * retried: the caller sees the error and lists before posting
		 * again. */
		curl_easy_setopt(pw->curl, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(pw->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
		curl_easy_setopt(pw->curl, CURLOPT_POSTFIELDS, body);
		if (g_strcmp0(method, "POST") != 0)	/* PATCH */
			curl_easy_setopt(pw->curl, CURLOPT_CUSTOMREQUEST, method);
	} else if (g_strcmp0(method, "GET") == 0) {
		curl_easy_setopt(pw->curl, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(pw->curl, CURLOPT_CUSTOMREQUEST, method);
	}

	rc = curl_easy_perform(pw->curl);
	/* the slist holds the token: drop it before anything else */
	curl_easy_setopt(pw->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);

	if (rc == CURLE_WRITE_ERROR && resp->body->len > 0) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_TOO_LARGE,
					   "patchwork: %s %s: the answer is larger than %u bytes",
					   method, url, PW_MAX_BODY);
		return FALSE;
	}
	if (rc != CURLE_OK) {
		pgate_patchwork__set_error(pw, error, pgate_curl_error_code(rc),
					   "patchwork: %s %s: %s", method, url,
					   pgate_curl_message(rc, pw->errbuf));
		return FALSE;
	}
	curl_easy_getinfo(pw->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (curl_easy_getinfo(pw->curl, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK &&
	    ct != NULL)
		resp->content_type = g_strdup(ct);
	return TRUE;
}

static gboolean
is_json(const PwResponse *r)
{
	return r->content_type != NULL &&
	       g_ascii_strncasecmp(r->content_type, "application/json", 16) == 0;
}

json_t *
pgate_patchwork__parse_json(const PwResponse *r, const char *method,
			    const char *url, GError **error)
{
	json_error_t jerr;
	json_t *j;

	j = json_loadb((const char *)r->body->data, r->body->len,
		       JSON_DECODE_ANY, &jerr);
	if (j == NULL) {
		g_autofree char *why = pgate_patchwork__quote(jerr.text, -1);

		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "patchwork: %s %s: the answer (HTTP %ld, %s) is not JSON: %s "
			    "(line %d, column %d)", method, url, r->status,
			    r->content_type ? r->content_type : "no Content-Type",
			    why, jerr.line, jerr.column);
	}
	return j;
}

/* The "detail" of a JSON error body, or %NULL. */
static char *
body_detail(const PwResponse *r)
{
	PW_AUTO(json_t) j = NULL;
	json_t *d;

	if (!is_json(r))
		return NULL;
	j = json_loadb((const char *)r->body->data, r->body->len, 0, NULL);
	if (j == NULL || !json_is_object(j))
		return NULL;
	d = json_object_get(j, "detail");
	if (!json_is_string(d))
		return NULL;
	return pgate_patchwork__quote(json_string_value(d),
				      json_string_length(d));
}

/* "field: msg msg; field: msg" from a 400 body of field errors. */
static char *
field_errors(const PwResponse *r)
{
	PW_AUTO(json_t) j = NULL;
	GString *out;
	const char *key;
	json_t *val;

	if (!is_json(r))
		return NULL;
	j = json_loadb((const char *)r->body->data, r->body->len, 0, NULL);
	if (j == NULL || !json_is_object(j))
		return NULL;
	out = g_string_new(NULL);
	json_object_foreach(j, key, val) {
		g_autofree char *k = pgate_patchwork__quote(key, -1);
		size_t i;
		json_t *m;

		if (out->len)
			g_string_append(out, "; ");
		if (strcmp(key, "detail") != 0 && strcmp(key, "non_field_errors") != 0)
			g_string_append_printf(out, "%s: ", k);
		if (json_is_string(val)) {
			g_autofree char *q = pgate_patchwork__quote(
				json_string_value(val), json_string_length(val));
			g_string_append(out, q);
			continue;
		}
		json_array_foreach(val, i, m) {
			g_autofree char *q = NULL;

			if (!json_is_string(m))
				continue;
			q = pgate_patchwork__quote(json_string_value(m),
						   json_string_length(m));
			g_string_append_printf(out, "%s%s", i ? " " : "", q);
		}
		if (out->len > 4 * PW_MAX_QUOTE)
			break;
	}
	return g_string_free(out, FALSE);
}

gboolean
pgate_patchwork__check_status(PgatePatchwork *pw, const PwResponse *r,
			      PwRequestKind kind, const char *method,
			      const char *url, const char *subject,
			      GError **error)
{
	g_autofree char *detail = NULL;
	long s = r->status;

	if (s >= 200 && s < 300)
		return TRUE;
	detail = body_detail(r);

	if (s >= 300 && s < 400) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
			"patchwork: %s %s: redirected (%ld) to %s; patchgate follows no "
			"redirect: set url in [%s] to where Patchwork really is "
			"(scheme, host and path prefix)", method, url, s,
			r->location ? r->location : "nowhere", pw->group);
		return FALSE;
	}
	if (s == 400) {
		g_autofree char *fields = field_errors(r);

		pgate_patchwork__set_error(pw, error, PGATE_ERROR_INVALID,
			"patchwork: %s %s: Patchwork refused the request (400): %s",
			method, url, fields && *fields ? fields
				   : "no field errors given");
		return FALSE;
	}
	if (s == 401 || (s == 403 && detail &&
			 (g_str_has_prefix(detail, "Invalid token") ||
			  g_str_has_prefix(detail, "Invalid basic header") ||
			  strcmp(detail, "User inactive or deleted.") == 0))) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
			"patchwork: %s %s: Patchwork does not accept our API token "
			"(%ld \"%s\"): put the token shown on the Patchwork user's "
			"profile page in the file named by token_file (or the variable "
			"named by token_env) of [%s]", method, url, s,
			detail ? detail : "no detail", pw->group);
		return FALSE;
	}
	if (s == 403) {
		const char *user = pgate_patchwork_get_user(pw);

		if (detail == NULL)  /* not Patchwork's JSON: a proxy, a firewall */
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
				"patchwork: %s %s: forbidden (403%s%s, not an answer of "
				"Patchwork's API: a proxy or firewall in between?)",
				method, url, r->content_type ? ", " : "",
				r->content_type ? r->content_type : "");
		else if (kind == PW_REQ_POST_CHECK)
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
				"patchwork: %s %s: Patchwork user %s%s%s may not post checks "
				"on %s of project %s (403 \"%s\"): only a maintainer of the "
				"project, the patch's delegate or its submitter may; ask a "
				"Patchwork administrator to add the user to the project's "
				"maintainers, or use a maintainer's token",
				method, url, user ? "'" : "", user ? user : "(the token's user)",
				user ? "'" : "", subject ? subject : "the patch", pw->project,
				detail);
		else if (kind == PW_REQ_PATCH_STATE)
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
				"patchwork: %s %s: Patchwork user %s%s%s may not change the "
				"state of %s of project %s (403 \"%s\"): only a maintainer "
				"of the project, the patch's delegate or its submitter may; "
				"set_state in [%s] needs a maintainer's token",
				method, url, user ? "'" : "", user ? user : "(the token's user)",
				user ? "'" : "", subject ? subject : "the patch", pw->project,
				detail, pw->group);
		else
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
				"patchwork: %s %s: forbidden (403 \"%s\")", method, url,
				detail);
		return FALSE;
	}
	if (s == 404) {
		if (detail == NULL) {
			pgate_patchwork__set_error(pw, error, PGATE_ERROR_CONFIG,
				"patchwork: %s %s: not found (404%s%s): this is not a "
				"Patchwork REST API; check url and api_version in [%s]",
				method, url, r->content_type ? ", " : "",
				r->content_type ? r->content_type : "", pw->group);
			return FALSE;
		}
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_NOT_FOUND,
			"patchwork: %s %s: %s not found (404 \"%s\")", method, url,
			subject ? subject : "object", detail);
		return FALSE;
	}
	if (s == 408 || s == 429 || s >= 500) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_IO,
			"patchwork: %s %s: the server is unavailable or overloaded "
			"(HTTP %ld%s%s), try again later", method, url, s,
			detail ? ": " : "", detail ? detail : "");
		return FALSE;
	}
	pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
		"patchwork: %s %s: unexpected HTTP %ld%s%s", method, url, s,
		detail ? ": " : "", detail ? detail : "");
	return FALSE;
}

/* Link: <url>; rel="next", <url>; rel="prev" (RFC 8288).  Parameters may
 * be quoted or not, rel may hold several space-separated types, and the
 * order of the links is free. */
char *
pgate_patchwork__link_next(const char *link)
{
	const char *p = link;

	if (link == NULL)
		return NULL;
	while (*p) {
		const char *u0, *u1;
		gboolean next = FALSE;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p != '<')
			return NULL; /* malformed: follow nothing */
		u0 = ++p;
		while (*p && *p != '>')
			p++;
		if (*p != '>')
			return NULL;
		u1 = p++;
		/* parameters up to the next ',' outside quotes */
		while (*p && *p != ',') {
			const char *n0, *n1, *v0, *v1;

			while (*p == ' ' || *p == '\t' || *p == ';')
				p++;
			n0 = p;
			while (*p && *p != '=' && *p != ';' && *p != ',')
				p++;
			n1 = p;
			while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t'))
				n1--;
			v0 = v1 = p;
			if (*p == '=') {
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				if (*p == '"') {
					v0 = ++p;
					while (*p && *p != '"')
						p++;
					v1 = p;
					if (*p == '"')
						p++;
				} else {
					v0 = p;
					while (*p && *p != ';' && *p != ',')
						p++;
					v1 = p;
					while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t'))
						v1--;
				}
			}
			if (n1 - n0 == 3 && g_ascii_strncasecmp(n0, "rel", 3) == 0) {
				g_autofree char *rel = g_strndup(v0, v1 - v0);
				g_auto(GStrv) types = g_strsplit_set(rel, " \t", -1);

				for (char **t = types; *t; t++)
					if (g_ascii_strcasecmp(*t, "next") == 0)
						next = TRUE;
			}
			while (*p && *p != ';' && *p != ',')
				p++;
		}
		if (next)
			return g_strndup(u0, u1 - u0);
	}
	return NULL;
}

char *
pgate_patchwork__rebase_url(PgatePatchwork *pw, const char *next,
			    GError **error)
{
	g_autoptr(GUri) uri = NULL;
	g_autofree char *quoted = NULL;
	const char *host, *query;

	uri = g_uri_parse(next, G_URI_FLAGS_ENCODED | G_URI_FLAGS_SCHEME_NORMALIZE,
			  NULL);
	host = uri ? g_uri_get_host(uri) : NULL;
	if (host == NULL || g_ascii_strcasecmp(host, pw->host) != 0) {
		quoted = pgate_patchwork__quote(next, -1);
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: the next page's link %s is not on %s: not followed",
			quoted, pw->origin);
		return NULL;
	}
	query = g_uri_get_query(uri);
	return g_strconcat(pw->origin, g_uri_get_path(uri), query ? "?" : "",
			   query ? query : "", NULL);
}
