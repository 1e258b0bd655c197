/* handle.c - the Jenkins backend's handles, and text from the server.
 *
 * A handle is a compact JSON object, persisted by the caller:
 *
 *   {"jenkins":1,"job":"ci/patchgate","queue":17,"since":1700000000,
 *    "trigger":"S42-1a2b3c4d"}
 *   {"jenkins":1,"job":"ci/patchgate","queue":17,"build":42,
 *    "since":1700000000,"trigger":"S42-1a2b3c4d","merged":true}
 *
 * "jenkins" is the format version; "job" the job path the trigger went to
 * (so that a handle outlives a change of the configured job); "queue" the
 * queue item, "build" its build number once known (then the queue item,
 * which Jenkins forgets 5 minutes after it left the queue, is no longer
 * needed); "since" when it was submitted (the queue timeout counts from
 * there); "trigger" the value of the trigger parameter it was sent with
 * (how its build is found again once Jenkins forgot the queue item:
 * jenkins.c, find_build); "merged" that Jenkins merged the trigger into an
 * item another submission had queued.  Unknown members are ignored, and a
 * handle without "trigger" (written before it existed) is found by its
 * queue item number alone.
 */
#include "ci/jenkins/jenkins-private.h"

#include <jansson.h>
#include <string.h>

char *
pgate_ci_jenkins__handle_encode(const JkHandle *h)
{
	JK_AUTO_JSON o = json_object();
	char *s;
	char *out;

	json_object_set_new(o, "jenkins", json_integer(1));
	json_object_set_new(o, "job", json_string(h->job));
	if (h->queue_id)
		json_object_set_new(o, "queue",
				    json_integer((json_int_t)h->queue_id));
	if (h->build)
		json_object_set_new(o, "build",
				    json_integer((json_int_t)h->build));
	json_object_set_new(o, "since", json_integer(h->since));
	if (h->trigger)
		json_object_set_new(o, "trigger", json_string(h->trigger));
	if (h->merged)
		json_object_set_new(o, "merged", json_true());
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	out = g_strdup(s);
	free(s);
	return out;
}

static gboolean
get_count(json_t *o, const char *key, guint64 *out)
{
	json_t *v = json_object_get(o, key);

	*out = 0;
	if (v == NULL)
		return TRUE;
	if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	    json_integer_value(v) > (json_int_t)1 << 53)
		return FALSE;
	*out = (guint64)json_integer_value(v);
	return TRUE;
}

gboolean
pgate_ci_jenkins__handle_decode(JkHandle *h, const char *text, GError **error)
{
	JK_AUTO_JSON o = NULL;
	json_error_t jerr;
	json_t *v;
	const char *job;
	g_autofree char *path = NULL;

	memset(h, 0, sizeof *h);
	if (text == NULL || strlen(text) > JK_HANDLE_MAX)
		goto bad;
	o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL || !json_is_object(o))
		goto bad;
	v = json_object_get(o, "jenkins");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		goto bad;
	job = json_string_value(json_object_get(o, "job"));
	if (job == NULL || (path = pgate_ci_jenkins__job_url_path(job)) == NULL)
		goto bad;
	if (!get_count(o, "queue", &h->queue_id) ||
	    !get_count(o, "build", &h->build))
		goto bad;
	if (h->queue_id == 0 && h->build == 0)
		goto bad;
	v = json_object_get(o, "since");
	if (v != NULL && !json_is_integer(v))
		goto bad;
	h->since = v ? json_integer_value(v) : 0;
	v = json_object_get(o, "trigger");
	if (v != NULL && (!json_is_string(v) ||
			  strlen(json_string_value(v)) > JK_TRIGGER_MAX ||
			  *json_string_value(v) == '\0'))
		goto bad;
	h->merged = json_is_true(json_object_get(o, "merged"));
	h->job = g_strdup(job);
	h->trigger = v ? g_strdup(json_string_value(v)) : NULL;
	return TRUE;
bad:
	g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
		    "not a Jenkins job handle");
	return FALSE;
}

void
pgate_ci_jenkins__handle_clear(JkHandle *h)
{
	g_free(h->job);
	g_free(h->trigger);
	memset(h, 0, sizeof *h);
}

guint64
pgate_ci_jenkins__location_queue_id(const char *location)
{
	const char *p = NULL, *q;
	guint64 id = 0;

	if (location == NULL)
		return 0;
	/* the last occurrence: a context path could contain the words */
	for (q = location; (q = strstr(q, "/queue/item/")) != NULL; q++)
		p = q;
	if (p == NULL)
		return 0;
	p += strlen("/queue/item/");
	if (!g_ascii_isdigit(*p))
		return 0;
	while (g_ascii_isdigit(*p)) {
		if (id > ((guint64)1 << 53) / 10)
			return 0;
		id = id * 10 + (guint64)(*p++ - '0');
	}
	if (*p == '/')
		p++;
	return *p == '\0' ? id : 0;
}

char *
pgate_ci_jenkins__excerpt(const char *text, gsize len, gsize max)
{
	g_autofree char *valid = g_utf8_make_valid(text, (gssize)len);
	GString *out = g_string_new(NULL);
	gboolean in_tag = FALSE, space = FALSE;
	const char *end;
	gsize n;

	for (const char *p = valid; *p && out->len < max; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '<') {
			in_tag = TRUE;
			space = TRUE;
			continue;
		}
		if (in_tag) {
			if (c == '>')
				in_tag = FALSE;
			continue;
		}
		if (c <= ' ' || c == 0x7f) {
			/* whitespace and controls become one space */
			space = TRUE;
			continue;
		}
		if (space && out->len > 0)
			g_string_append_c(out, ' ');
		space = FALSE;
		g_string_append_c(out, (char)c);
	}
	/* the input was valid UTF-8: only a character cut at the end can
	 * be invalid now */
	g_utf8_validate(out->str, (gssize)out->len, &end);
	n = (gsize)(end - out->str);
	g_string_truncate(out, n);
	return g_string_free(out, FALSE);
}

char *
pgate_ci_jenkins__console_tail(const char *text, gsize len, gsize max,
			       gboolean cut_first_line)
{
	g_autofree char *valid = NULL;
	GString *out;
	const char *p;
	gsize n;

	if (len > max) {
		text += len - max;
		len = max;
		cut_first_line = TRUE;
	}
	if (cut_first_line) {
		const char *nl = memchr(text, '\n', len);

		if (nl != NULL && (gsize)(nl - text) + 1 < len) {
			len -= (gsize)(nl - text) + 1;
			text = nl + 1;
		}
	}
	valid = g_utf8_make_valid(text, (gssize)len);
	out = g_string_sized_new(len);
	for (p = valid; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == 0x1b) {
			/* an escape sequence: ESC [ params final */
			if (p[1] == '[') {
				p += 2;
				while (*p && !(*p >= 0x40 && *p <= 0x7e))
					p++;
				if (*p == '\0')
					break;
			}
			continue;
		}
		if (c == '\r')
			continue;
		if (c < 0x20 && c != '\n' && c != '\t')
			c = '?';
		if (c == 0x7f)
			c = '?';
		g_string_append_c(out, (char)c);
	}
	/* U+FFFD from g_utf8_make_valid is longer than the byte it replaced:
	 * cut again, at a character boundary */
	if (out->len > max) {
		gsize cut = out->len - max;

		while (cut < out->len &&
		       ((unsigned char)out->str[cut] & 0xc0) == 0x80)
			cut++;
		g_string_erase(out, 0, (gssize)cut);
	}
	n = out->len;
	while (n > 0 && out->str[n - 1] == '\n')
		n--;
	g_string_truncate(out, n);
	return g_string_free(out, FALSE);
}
