/* secret.c - what must never leave patchgate: secret values and the paths
 * a CI step must never see.
 *
 * Every secret patchgate reads (the Patchwork token, the Jenkins API token
 * or password, the SMTP password) is registered here by the code that
 * reads it, with the file it came from; the configuration file and the
 * state directory are registered as protected paths by the command that
 * opens them.  Two uses:
 *   - pgate_secret_redact(): the text of every log, summary, result
 *     document, check and mail passes through it before it is stored or
 *     sent, and each registered value becomes "[redacted]".  This is
 *     defence in depth only: a step that can read a secret can also print
 *     it encoded.  The defence is that it cannot read it (ci/local's
 *     sandbox binds none of the protected paths).
 *   - pgate_secret_paths(): what the local CI sandbox must hide.
 * The registry is process-wide (a secret is a secret for every module of
 * the process) and guarded by a mutex: CI jobs run in worker threads.
 */
#include "common/pgate-common.h"

#include <string.h>

#define REDACTED "[redacted]"
/* registered entries are bounded: a misuse must not grow without end */
#define MAX_ENTRIES 256

static GMutex lock;
static GPtrArray *values;   /* (element-type utf8) longest first */
static GPtrArray *paths;

static gint
longest_first(gconstpointer a, gconstpointer b)
{
	gsize la = strlen(*(const char *const *)a);
	gsize lb = strlen(*(const char *const *)b);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

static void
add_unique(GPtrArray **arr, const char *s)
{
	if (*arr == NULL)
		*arr = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < (*arr)->len; i++)
		if (strcmp((*arr)->pdata[i], s) == 0)
			return;
	if ((*arr)->len < MAX_ENTRIES)
		g_ptr_array_add(*arr, g_strdup(s));
}

void
pgate_secret_add(const char *value)
{
	if (value == NULL || *value == '\0')
		return;
	g_mutex_lock(&lock);
	add_unique(&values, value);
	/* a secret that holds another is replaced first */
	g_ptr_array_sort(values, longest_first);
	g_mutex_unlock(&lock);
}

void
pgate_secret_add_path(const char *path)
{
	g_autofree char *abs = NULL;

	if (path == NULL || *path == '\0')
		return;
	abs = g_canonicalize_filename(path, NULL);
	g_mutex_lock(&lock);
	add_unique(&paths, abs);
	g_mutex_unlock(&lock);
}

char **
pgate_secret_paths(void)
{
	GStrvBuilder *b = g_strv_builder_new();
	char **out;

	g_mutex_lock(&lock);
	for (guint i = 0; paths && i < paths->len; i++)
		g_strv_builder_add(b, paths->pdata[i]);
	g_mutex_unlock(&lock);
	out = g_strv_builder_end(b);
	g_strv_builder_unref(b);
	return out;
}

gboolean
pgate_secret_redact_string(GString *s)
{
	gboolean changed = FALSE;

	if (s == NULL)
		return FALSE;
	g_mutex_lock(&lock);
	for (guint i = 0; values && i < values->len; i++) {
		const char *v = values->pdata[i];
		gsize vlen = strlen(v), pos = 0;
		char *hit;

		while (pos + vlen <= s->len &&
		       (hit = memmem(s->str + pos, s->len - pos, v, vlen))) {
			pos = (gsize)(hit - s->str);
			g_string_erase(s, (gssize)pos, (gssize)vlen);
			g_string_insert(s, (gssize)pos, REDACTED);
			pos += strlen(REDACTED);
			changed = TRUE;
		}
	}
	g_mutex_unlock(&lock);
	return changed;
}

char *
pgate_secret_redact(const char *text)
{
	GString *s;

	if (text == NULL)
		return NULL;
	s = g_string_new(text);
	pgate_secret_redact_string(s);
	return g_string_free(s, FALSE);
}

void
pgate_secret_redact_in_place(char **text)
{
	char *r;

	if (text == NULL || *text == NULL)
		return;
	r = pgate_secret_redact(*text);
	g_free(*text);
	*text = r;
}

void
pgate_secret_forget_all(void)
{
	g_mutex_lock(&lock);
	g_clear_pointer(&values, g_ptr_array_unref);
	g_clear_pointer(&paths, g_ptr_array_unref);
	g_mutex_unlock(&lock);
}

gboolean
pgate_url_userinfo(const char *url, gsize *out_start, gsize *out_colon,
		   gsize *out_end)
{
	const char *scheme = url ? strstr(url, "://") : NULL;
	const char *host, *slash, *at, *colon;

	if (scheme == NULL)
		return FALSE;
	host = scheme + 3;
	slash = strchr(host, '/');
	at = memchr(host, '@', slash ? (gsize)(slash - host) : strlen(host));
	if (at == NULL)
		return FALSE;
	colon = memchr(host, ':', (gsize)(at - host));
	*out_start = (gsize)(host - url);
	*out_colon = colon ? (gsize)(colon - url) : 0;
	*out_end = (gsize)(at + 1 - url);
	return TRUE;
}

char *
pgate_url_without_password(const char *url)
{
	gsize start, colon, end;
	GString *out;

	if (!pgate_url_userinfo(url, &start, &colon, &end) || colon == 0)
		return g_strdup(url);
	out = g_string_new_len(url, colon);
	g_string_append(out, url + end - 1);
	return g_string_free(out, FALSE);
}
