/* check.c - Patchwork checks: states, contexts, what to send, whether to.
 *
 * Nothing here does I/O.  pgate_patchwork_check_normalize() reproduces
 * what Patchwork's serializer does to a check (it trims strings) and what
 * it refuses (target_url over 200 characters or not a URL Django's
 * URLValidator takes, NUL characters), so that what we post is accepted
 * and what we compare in pgate_patchwork_check_decide() is what the server
 * stored.
 */
#include "report/patchwork/patchwork-private.h"

#include <string.h>

static const char *const state_names[] = {
	[PGATE_PATCHWORK_STATE_PENDING] = "pending",
	[PGATE_PATCHWORK_STATE_SUCCESS] = "success",
	[PGATE_PATCHWORK_STATE_WARNING] = "warning",
	[PGATE_PATCHWORK_STATE_FAIL] = "fail",
};

const char *
pgate_patchwork_state_to_string(PgatePatchworkState state)
{
	if ((guint)state < G_N_ELEMENTS(state_names))
		return state_names[state];
	return "invalid";
}

gboolean
pgate_patchwork_state_from_string(const char *s, PgatePatchworkState *out)
{
	for (guint i = 0; s && i < G_N_ELEMENTS(state_names); i++) {
		if (strcmp(s, state_names[i]) == 0) {
			*out = (PgatePatchworkState)i;
			return TRUE;
		}
	}
	return FALSE;
}

const char *
pgate_patchwork_decision_to_string(PgatePatchworkDecision d)
{
	switch (d) {
	case PGATE_PATCHWORK_POST:
		return "post";
	case PGATE_PATCHWORK_SKIP_SAME:
		return "skip-same";
	case PGATE_PATCHWORK_SKIP_DOWNGRADE:
		return "skip-downgrade";
	}
	return "invalid";
}

PgatePatchworkCheck *
pgate_patchwork_check_new(PgatePatchworkState state, const char *context,
			  const char *target_url, const char *description)
{
	PgatePatchworkCheck *c = g_new0(PgatePatchworkCheck, 1);

	c->state = state;
	c->context = g_strdup(context);
	c->target_url = g_strdup(target_url);
	c->description = g_strdup(description);
	return c;
}

PgatePatchworkCheck *
pgate_patchwork_check_copy(const PgatePatchworkCheck *check)
{
	PgatePatchworkCheck *c;

	g_return_val_if_fail(check != NULL, NULL);
	c = pgate_patchwork_check_new(check->state, check->context,
				      check->target_url, check->description);
	c->id = check->id;
	c->user_id = check->user_id;
	c->user = g_strdup(check->user);
	c->date = g_strdup(check->date);
	return c;
}

void
pgate_patchwork_check_free(PgatePatchworkCheck *check)
{
	if (check == NULL)
		return;
	g_free(check->context);
	g_free(check->target_url);
	g_free(check->description);
	g_free(check->user);
	g_free(check->date);
	g_free(check);
}

static gboolean
is_slug_char(char c)
{
	return g_ascii_isalnum(c) || c == '-' || c == '_';
}

gboolean
pgate_patchwork_context_is_valid(const char *context)
{
	gsize n = 0;

	if (context == NULL || *context == '\0')
		return FALSE;
	for (const char *p = context; *p; p++, n++)
		if (!is_slug_char(*p) || n >= PW_MAX_CONTEXT)
			return FALSE;
	return TRUE;
}

char *
pgate_patchwork_context_from_name(const char *prefix, const char *name)
{
	g_autofree char *joined = NULL;
	GString *out = g_string_new(NULL);

	joined = prefix && *prefix ? g_strconcat(prefix, "-", name ? name : "", NULL)
				   : g_strdup(name ? name : "");
	for (const char *p = joined; *p && out->len < PW_MAX_CONTEXT; p++) {
		if (is_slug_char(*p))
			g_string_append_c(out, *p);
		else if (out->len > 0 && out->str[out->len - 1] != '-')
			g_string_append_c(out, '-');
	}
	while (out->len > 0 && out->str[out->len - 1] == '-')
		g_string_truncate(out, out->len - 1);
	while (out->len > 0 && out->str[0] == '-')
		g_string_erase(out, 0, 1);
	if (out->len == 0)
		g_string_assign(out, "default");
	return g_string_free(out, FALSE);
}

/* Django's URLValidator host rule, ASCII only: localhost, an IPv4 or IPv6
 * address, or a domain name whose last label is a TLD (letters, or an
 * xn-- label).  "http://jenkins:8080/" is refused by Patchwork. */
static gboolean
host_is_valid(const char *host)
{
	g_auto(GStrv) labels = NULL;
	guint n;

	if (host == NULL || *host == '\0')
		return FALSE;
	if (g_ascii_strcasecmp(host, "localhost") == 0)
		return TRUE;
	if (strchr(host, ':'))
		return g_hostname_is_ip_address(host);
	if (g_hostname_is_ip_address(host))
		return TRUE;
	labels = g_strsplit(host, ".", -1);
	n = g_strv_length(labels);
	if (n > 1 && *labels[n - 1] == '\0') /* a trailing dot */
		n--;
	if (n < 2)
		return FALSE;
	for (guint i = 0; i < n; i++) {
		const char *l = labels[i];
		gsize len = strlen(l);

		if (len == 0 || len > 63 || l[0] == '-' || l[len - 1] == '-')
			return FALSE;
		for (const char *p = l; *p; p++)
			if (!g_ascii_isalnum(*p) && *p != '-')
				return FALSE;
		if (i == n - 1 && !g_str_has_prefix(l, "xn--")) {
			if (len < 2)
				return FALSE;
			for (const char *p = l; *p; p++)
				if (!g_ascii_isalpha(*p))
					return FALSE;
		}
	}
	return TRUE;
}

/* Why a target_url cannot be posted as it is, or %NULL when it can. */
static const char *
target_url_problem(const char *url)
{
	g_autoptr(GUri) uri = NULL;
	const char *scheme;

	for (const char *p = url; *p; p++)
		if ((guchar)*p <= 0x20 || (guchar)*p >= 0x7f)
			return "it has spaces, control or non-ASCII characters";
	if (strlen(url) > PW_MAX_TARGET_URL)
		return "it is longer than Patchwork's 200 characters";
	uri = g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL);
	if (uri == NULL)
		return "it is not a URL";
	scheme = g_uri_get_scheme(uri);
	if (g_ascii_strcasecmp(scheme, "http") != 0 &&
	    g_ascii_strcasecmp(scheme, "https") != 0 &&
	    g_ascii_strcasecmp(scheme, "ftp") != 0 &&
	    g_ascii_strcasecmp(scheme, "ftps") != 0)
		return "its scheme is not http, https, ftp or ftps";
	if (!host_is_valid(g_uri_get_host(uri)))
		return "its host is not a domain with a TLD, localhost or an IP address";
	return NULL;
}

/* Trims white space (Python's str.strip(), as Patchwork does) in place. */
static void
utf8_strip(char *s)
{
	char *start = s, *end;

	while (*start && g_unichar_isspace(g_utf8_get_char(start)))
		start = g_utf8_next_char(start);
	end = start + strlen(start);
	while (end > start) {
		char *prev = g_utf8_prev_char(end);

		if (!g_unichar_isspace(g_utf8_get_char(prev)))
			break;
		end = prev;
	}
	memmove(s, start, end - start);
	s[end - start] = '\0';
}

static char *
normalize_description(const char *text, guint max_chars)
{
	g_autofree char *valid = NULL;
	GString *out;
	glong n;

	if (text == NULL)
		return NULL;
	valid = g_utf8_make_valid(text, -1);
	out = g_string_sized_new(strlen(valid));
	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f &&
					       !(c >= 0x80 && c < 0xa0)))
			g_string_append_unichar(out, c);
	}
	utf8_strip(out->str);
	g_string_set_size(out, strlen(out->str));
	n = g_utf8_strlen(out->str, -1);
	if (n > (glong)max_chars) {
		char *cut = g_utf8_offset_to_pointer(out->str, max_chars - 3);

		g_string_truncate(out, cut - out->str);
		utf8_strip(out->str);
		g_string_set_size(out, strlen(out->str));
		g_string_append(out, "...");
	}
	if (out->len == 0) {
		g_string_free(out, TRUE);
		return NULL;
	}
	return g_string_free(out, FALSE);
}

PgatePatchworkCheck *
pgate_patchwork_check_normalize(const PgatePatchworkCheck *check,
				guint max_description)
{
	PgatePatchworkCheck *c;

	g_return_val_if_fail(check != NULL, NULL);
	c = pgate_patchwork_check_copy(check);
	g_free(c->description);
	c->description = normalize_description(check->description,
					       MAX(max_description, 16));
	/* defence in depth: no secret leaves in a check (common/secret.c) */
	pgate_secret_redact_in_place(&c->description);
	pgate_secret_redact_in_place(&c->target_url);
	if (c->target_url) {
		const char *why;

		g_strstrip(c->target_url);
		why = *c->target_url ? target_url_problem(c->target_url) : NULL;
		if (why) {
			/* the query may carry a job's secret: log without it */
			g_autofree char *shown = g_strndup(c->target_url,
				strcspn(c->target_url, "?#"));
			g_autofree char *q = pgate_patchwork__quote(shown, -1);

			g_info("patchwork: context=%s: target_url %s dropped: %s",
			       c->context ? c->context : "(none)", q, why);
			g_clear_pointer(&c->target_url, g_free);
		} else if (*c->target_url == '\0') {
			g_clear_pointer(&c->target_url, g_free);
		}
	}
	return c;
}

static gboolean
same_text(const char *a, const char *b)
{
	return g_strcmp0(a && *a ? a : NULL, b && *b ? b : NULL) == 0;
}

PgatePatchworkDecision
pgate_patchwork_check_decide(const GPtrArray *existing,
			     const PgatePatchworkCheck *ours,
			     const char *our_user)
{
	const PgatePatchworkCheck *newest = NULL;

	g_return_val_if_fail(ours != NULL, PGATE_PATCHWORK_POST);
	for (guint i = 0; existing && i < existing->len; i++) {
		const PgatePatchworkCheck *c = g_ptr_array_index(existing, i);

		if (g_strcmp0(c->context, ours->context) != 0)
			continue;
		if (our_user && g_strcmp0(c->user, our_user) != 0)
			continue;
		if (newest == NULL || c->id > newest->id)
			newest = c;
	}
	if (newest == NULL)
		return PGATE_PATCHWORK_POST;
	if (newest->state == ours->state &&
	    same_text(newest->target_url, ours->target_url) &&
	    same_text(newest->description, ours->description))
		return PGATE_PATCHWORK_SKIP_SAME;
	if (ours->state == PGATE_PATCHWORK_STATE_PENDING &&
	    newest->state != PGATE_PATCHWORK_STATE_PENDING)
		return PGATE_PATCHWORK_SKIP_DOWNGRADE;
	return PGATE_PATCHWORK_POST;
}

PgatePatchworkCheck *
pgate_patchwork__check_from_json(json_t *obj, GError **error)
{
	g_autoptr(PgatePatchworkCheck) c = g_new0(PgatePatchworkCheck, 1);
	json_t *id = json_object_get(obj, "id");
	json_t *state = json_object_get(obj, "state");
	json_t *user = json_object_get(obj, "user");

	if (!json_is_integer(id) || !json_is_string(state) ||
	    !pgate_patchwork_state_from_string(json_string_value(state),
					       &c->state)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "patchwork: a check without an integer id or a known state");
		return NULL;
	}
	c->id = json_integer_value(id);
	c->context = pgate_patchwork__json_str(obj, "context");
	c->target_url = pgate_patchwork__json_str(obj, "target_url");
	c->description = pgate_patchwork__json_str(obj, "description");
	c->date = pgate_patchwork__json_str(obj, "date");
	if (json_is_object(user)) {
		json_t *uid = json_object_get(user, "id");

		c->user_id = json_is_integer(uid) ? json_integer_value(uid) : 0;
		c->user = pgate_patchwork__json_str(user, "username");
	}
	if (c->context == NULL)
		c->context = g_strdup("default");
	return g_steal_pointer(&c);
}
