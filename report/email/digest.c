/* digest.c - the daily digest of held replies (docs/report-email.md,
 * "Digest and noise budget"): one mail per recipient a day, one line a
 * series.  What goes in is text of ours (counts, verdicts) and the
 * answered mail's subject, cleaned to one line. */
#include "report/email/email-private.h"

#include <string.h>

#define MAX_LINE_CHARS 300
#define MAX_DIGEST_LINES 500

/* One line: valid UTF-8, every control or space a single space, at most
 * @max characters. */
static char *
one_line(const char *s, glong max)
{
	g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
	GString *out = g_string_new(NULL);
	gboolean space = TRUE;

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) ||
		    g_unichar_isspace(c) || g_unichar_type(c) ==
		    G_UNICODE_FORMAT) {
			if (!space)
				g_string_append_c(out, ' ');
			space = TRUE;
			continue;
		}
		g_string_append_unichar(out, c);
		space = FALSE;
	}
	while (out->len > 0 && out->str[out->len - 1] == ' ')
		g_string_truncate(out, out->len - 1);
	if (g_utf8_strlen(out->str, -1) > max) {
		const char *end = g_utf8_offset_to_pointer(out->str, max - 3);

		g_string_truncate(out, (gsize)(end - out->str));
		g_string_append(out, "...");
	}
	return g_string_free(out, FALSE);
}

static const char *
plural(guint n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

char *
pgate_email_digest_line(const PgateEmailReport *r)
{
	guint fail = 0, err = 0, total = r->jobs->len;
	guint napply = r->apply_failures->len;
	g_autofree char *summary = NULL, *line = NULL;

	for (guint i = 0; i < r->jobs->len; i++) {
		const PgateEmailJob *j = r->jobs->pdata[i];

		if (j->verdict == PGATE_EMAIL_VERDICT_FAIL)
			fail++;
		else if (j->verdict == PGATE_EMAIL_VERDICT_ERROR)
			err++;
	}
	if (napply > 0)
		summary = g_strdup_printf("%u %s did not apply", napply,
					  plural(napply, "patch", "patches"));
	else if (fail > 0)
		summary = g_strdup_printf("%u of %u %s failed", fail, total,
					  plural(total, "job", "jobs"));
	else if (err > 0)
		summary = g_strdup_printf("%u of %u %s could not run", err,
					  total, plural(total, "job", "jobs"));
	else
		summary = g_strdup_printf("%u %s passed", total,
					  plural(total, "job", "jobs"));
	line = g_strdup_printf("%s: %s", r->subject ? r->subject
						    : "(no subject)", summary);
	return one_line(line, MAX_LINE_CHARS);
}

GBytes *
pgate_email_compose_digest(const PgateEmailConfig *cfg, const char *rcpt,
			   const char *day, GPtrArray *lines,
			   const char *idempotency_key, gint64 date,
			   GError **error)
{
	g_autoptr(GMimeMessage) msg = NULL;
	g_autoptr(GString) body = g_string_new(NULL);
	g_autoptr(GDateTime) when = NULL;
	g_autofree char *mid = NULL, *subject = NULL, *d = NULL;
	GMimeObject *obj;
	InternetAddress *ia;
	guint shown = 0;

	g_return_val_if_fail(cfg != NULL && lines != NULL, NULL);
	pgate_email__init();
	if (!cfg->enabled || !pgate_email__address_ok(rcpt) ||
	    idempotency_key == NULL || *idempotency_key == '\0') {
		g_set_error_literal(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_INVALID,
				    "digest: disabled, or no usable recipient "
				    "or key");
		return NULL;
	}
	d = one_line(day, 10);
	mid = pgate_email_message_id(idempotency_key, cfg->from_address);
	subject = g_strdup_printf("[patchgate] digest of %s: %u %s", d,
				  lines->len, plural(lines->len, "series",
						     "series"));
	g_string_append_printf(body,
		"The results of %u %s tested on %s, held for this digest:\n\n",
		lines->len, plural(lines->len, "series", "series"), d);
	for (guint i = 0; i < lines->len && shown < MAX_DIGEST_LINES; i++) {
		g_autofree char *l = one_line(lines->pdata[i], MAX_LINE_CHARS);

		g_string_append_printf(body, "  * %s\n", l);
		shown++;
	}
	if (shown < lines->len)
		g_string_append_printf(body, "  ... and %u more\n",
				       lines->len - shown);
	g_string_append_printf(body, "\n-- \nA daily digest from patchgate %s.\n",
			       PGATE_EMAIL_VERSION);
	if (cfg->contact != NULL) {
		g_autofree char *c = one_line(cfg->contact, 200);

		g_string_append_printf(body, "If a result looks wrong, please "
				       "tell %s.\n", c);
	}

	msg = g_mime_message_new(TRUE);
	ia = internet_address_mailbox_new(cfg->from_name, cfg->from_address);
	internet_address_set_charset(ia, "utf-8");
	internet_address_list_add(g_mime_message_get_from(msg), ia);
	g_object_unref(ia);
	ia = internet_address_mailbox_new(NULL, rcpt);
	internet_address_list_add(g_mime_message_get_to(msg), ia);
	g_object_unref(ia);
	g_mime_message_set_subject(msg, subject, "utf-8");
	when = date > 0 ? g_date_time_new_from_unix_utc(date)
			: g_date_time_new_now_utc();
	g_mime_message_set_date(msg, when);
	g_mime_message_set_message_id(msg, mid);
	obj = GMIME_OBJECT(msg);
	g_mime_object_set_header(obj, "Auto-Submitted", "auto-generated", NULL);
	g_mime_object_set_header(obj, "X-Auto-Response-Suppress", "All", NULL);
	g_mime_object_set_header(obj, "X-Patchwork-Hint", "ignore", NULL);
	g_mime_object_set_header(obj, PGATE_EMAIL_MARKER_HEADER,
				 PGATE_EMAIL_VERSION, NULL);

	return pgate_email__write(msg, body->str, "digest", error);
}
