/* trailers.c - follow-up trailers, Link: and Signed-off-by in commit
 * messages as `b4 am` puts them, and a series as the mbox b4 am writes.
 *
 * The rules are b4's (src/b4/__init__.py: LoreMessage.get_body_parts,
 * find_trailers, fix_trailers with the default trailer-order "*";
 * LoreTrailer's normalisation and equality; LoreSeries.get_am_ready,
 * which gives "Link: <linkmask % msgid>" as an extra after the
 * follow-ups): docs/apply.md, "Trailers".
 *
 *  - the message's last paragraph is read for trailers ("Name: value"
 *    lines, the name a word character and more non-blanks); its other
 *    lines stay in the message, as a paragraph before the trailers;
 *  - a person trailer's value ("Name <addr>", "addr") is rewritten as
 *    "Name <addr>" (quotes and extra blanks dropped), as b4's
 *    email.utils.parseaddr normalisation does;
 *  - the applier's Signed-off-by, already there, is taken out and put
 *    back last;
 *  - each follow-up trailer, then the Link:, is added unless an equal
 *    one (same name in any case, same value in any case) is there;
 *  - the applier's Signed-off-by goes last.
 */
#include "apply/apply.h"
#include "apply/apply-private.h"

#include <gmime/gmime.h>
#include <string.h>

typedef struct {
	char *name;
	char *value;
	char *extinfo;   /* (nullable): " # ..." or a "[...]" line */
} Trailer;

static void
trailer_free(gpointer p)
{
	Trailer *t = p;

	g_free(t->name);
	g_free(t->value);
	g_free(t->extinfo);
	g_free(t);
}

/* b4's normalisation of a person trailer: parseaddr, then "Name <addr>"
 * or "addr". */
static char *
normalize_value(const char *value)
{
	const char *lt = strrchr(value, '<');
	const char *gt = lt ? strchr(lt, '>') : NULL;
	g_autoptr(GString) name = NULL;
	g_autofree char *addr = NULL;
	gboolean blank = FALSE;

	if (!g_regex_match_simple("\\S+@\\S+\\.\\S+", value, 0, 0))
		return g_strdup(value);
	if (lt == NULL || gt == NULL || gt[1] != '\0')
		return g_strstrip(g_strdup(value));
	addr = g_strstrip(g_strndup(lt + 1, gt - lt - 1));
	name = g_string_new(NULL);
	for (const char *p = value; p < lt; p++) {
		if (*p == '"')
			continue;
		if (g_ascii_isspace(*p)) {
			blank = name->len > 0;
			continue;
		}
		if (blank)
			g_string_append_c(name, ' ');
		blank = FALSE;
		g_string_append_c(name, *p);
	}
	if (name->len == 0)
		return g_steal_pointer(&addr);
	return g_strdup_printf("%s <%s>", name->str, addr);
}

static Trailer *
trailer_new(const char *name, const char *value, const char *extinfo)
{
	Trailer *t = g_new0(Trailer, 1);

	t->name = g_strdup(name);
	t->value = normalize_value(value);
	t->extinfo = g_strdup(extinfo);
	return t;
}

static gboolean
trailer_eq(const Trailer *a, const Trailer *b)
{
	g_autofree char *va = g_utf8_casefold(a->value, -1);
	g_autofree char *vb = g_utf8_casefold(b->value, -1);

	return g_ascii_strcasecmp(a->name, b->name) == 0 &&
	       strcmp(va, vb) == 0;
}

static void
trailer_append(GString *out, const Trailer *t)
{
	g_string_append_printf(out, "%s: %s", t->name, t->value);
	if (t->extinfo != NULL) {
		if (t->extinfo[strspn(t->extinfo, " \t")] == '#')
			g_string_append(out, t->extinfo);
		else
			g_string_append_printf(out, "\n%s", t->extinfo);
	}
	g_string_append_c(out, '\n');
}

/* A "Name: value" line as b4's find_trailers reads it: (\w\S+):\s+(\S.*)
 * after leading blanks, the name's last ':' followed by a blank. */
static gboolean
parse_line(const char *line, char **name, char **value)
{
	static GRegex *re;
	g_autoptr(GMatchInfo) mi = NULL;

	if (g_once_init_enter(&re))
		g_once_init_leave(&re, g_regex_new("^\\s*(\\w\\S+):\\s+(\\S.*)",
						   G_REGEX_OPTIMIZE, 0, NULL));
	if (!g_regex_match(re, line, 0, &mi))
		return FALSE;
	*name = g_match_info_fetch(mi, 1);
	*value = g_match_info_fetch(mi, 2);
	return TRUE;
}

/* b4's find_trailers (not for a follow-up) on one paragraph: its
 * trailers into @trailers, the other lines into @others. */
static void
find_trailers(const char *para, GPtrArray *trailers, GPtrArray *others)
{
	g_auto(GStrv) lines = g_strsplit(para, "\n", -1);
	static GRegex *hashtag, *bracket;
	gboolean was_trailer = FALSE;

	if (g_once_init_enter(&hashtag)) {
		bracket = g_regex_new("^\\s*\\[[^]]+]\\s*$", G_REGEX_OPTIMIZE,
				      0, NULL);
		g_once_init_leave(&hashtag, g_regex_new("^(.*\\S+)(\\s+#[^#]+)$",
							G_REGEX_OPTIMIZE, 0,
							NULL));
	}
	for (guint i = 0; lines[i] != NULL; i++) {
		g_autofree char *name = NULL, *value = NULL;
		const char *line = lines[i];

		if (parse_line(line, &name, &value)) {
			g_autofree char *lname = g_ascii_strdown(name, -1);
			g_autoptr(GMatchInfo) mi = NULL;
			g_autofree char *v = NULL, *ext = NULL;

			if (!strcmp(lname, "phone") || !strcmp(lname, "email") ||
			    !strcmp(lname, "prerequisite-message-id"))
				continue;
			if (others->len > 0 &&
			    (!strcmp(lname, "subject") || !strcmp(lname, "date") ||
			     !strcmp(lname, "from")))
				continue;
			if (g_regex_match(hashtag, value, 0, &mi)) {
				v = g_match_info_fetch(mi, 1);
				ext = g_match_info_fetch(mi, 2);
			}
			g_ptr_array_add(trailers, trailer_new(name, v ? v : value,
							      ext));
			was_trailer = TRUE;
			continue;
		}
		if (strlen(line) > 2 && was_trailer &&
		    g_regex_match(bracket, line, 0, NULL)) {
			Trailer *t = trailers->pdata[trailers->len - 1];

			g_free(t->extinfo);
			t->extinfo = g_strdup(line);
			was_trailer = FALSE;
			continue;
		}
		was_trailer = FALSE;
		g_ptr_array_add(others, g_strdup(line));
	}
}

char *
pgate_apply_add_trailers(const char *message, const GPtrArray *followups,
			 const char *link, const char *signoff)
{
	g_autoptr(GPtrArray) btr = g_ptr_array_new_with_free_func(trailer_free);
	g_autoptr(GPtrArray) others = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) added = g_ptr_array_new_with_free_func(trailer_free);
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GString) body = g_string_new(NULL);
	g_autofree char *subject = NULL;
	g_auto(GStrv) paras = NULL;
	g_autofree char *rest = NULL;
	Trailer *sob = NULL;
	gboolean hassob = FALSE;
	const char *nl;
	guint n;

	g_autofree char *valid = NULL;

	if ((followups == NULL || followups->len == 0) && link == NULL &&
	    signoff == NULL)
		return g_strdup(message);
	/* (GRegex and case folding want UTF-8: git's own re-encoding) */
	if (!g_utf8_validate(message, -1, NULL))
		message = valid = pgate_apply__fix_utf8(message, strlen(message));
	nl = strchr(message, '\n');
	subject = nl ? g_strndup(message, nl - message) : g_strdup(message);
	rest = g_strdup(nl ? nl + 1 : "");
	g_strstrip(rest);
	paras = g_strsplit(rest, "\n\n", -1);
	n = g_strv_length(paras);
	/* every paragraph but the last is message; the last is read for
	 * trailers */
	for (guint i = 0; i + 1 < n; i++) {
		if (body->len)
			g_string_append(body, "\n\n");
		g_string_append(body, paras[i]);
	}
	if (n > 0)
		find_trailers(paras[n - 1], btr, others);
	for (guint i = 0; i < others->len; i++) {
		if (i == 0 && body->len)
			g_string_append(body, "\n\n");
		else if (i > 0)
			g_string_append_c(body, '\n');
		g_string_append(body, others->pdata[i]);
	}
	if (signoff != NULL) {
		sob = trailer_new("Signed-off-by", signoff, NULL);
		for (guint i = 0; i < btr->len; i++)
			if (trailer_eq(btr->pdata[i], sob)) {
				g_ptr_array_remove_index(btr, i);
				hassob = TRUE;
				break;
			}
	}
	for (guint i = 0; followups && i < followups->len; i++) {
		g_autofree char *name = NULL, *value = NULL;

		if (g_utf8_validate(followups->pdata[i], -1, NULL) &&
		    parse_line(followups->pdata[i], &name, &value))
			g_ptr_array_add(added, trailer_new(name, value, NULL));
	}
	if (link != NULL)
		g_ptr_array_add(added, trailer_new("Link", link, NULL));
	for (guint i = 0; i < added->len; i++) {
		Trailer *t = added->pdata[i];
		gboolean dup = FALSE;

		if (sob != NULL && trailer_eq(t, sob)) {
			hassob = TRUE;	/* moves to the bottom */
			continue;
		}
		for (guint k = 0; k < btr->len && !dup; k++)
			dup = trailer_eq(btr->pdata[k], t);
		if (!dup)
			g_ptr_array_add(btr, g_ptr_array_steal_index(added, i--));
	}
	if (sob != NULL) {
		(void)hassob;	/* either way it goes last */
		g_ptr_array_add(btr, sob);
	}
	g_string_append_printf(out, "%s\n\n", subject);
	/* b4: subject, blank, message, blank, trailers; git stripspace
	 * keeps the message's own blank lines */
	if (body->len) {
		g_string_append(out, body->str);
		g_string_append_c(out, '\n');
		if (btr->len)
			g_string_append_c(out, '\n');
	}
	for (guint i = 0; i < btr->len; i++)
		trailer_append(out, btr->pdata[i]);
	if (body->len == 0 && btr->len == 0)
		g_string_truncate(out, strlen(subject) + 1);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* ---- the mbox ------------------------------------------------------------ */

/* An encoded header line "Name: value\n" (RFC 2047 where not ASCII). */
static void
header(GString *out, const char *name, const char *value)
{
	g_autofree char *enc = g_mime_utils_header_encode_text(NULL, value,
							       "utf-8");
	g_autofree char *line = g_strdup_printf("%s: %s", name, enc);
	g_autofree char *folded = g_mime_utils_unstructured_header_fold(
		NULL, NULL, line);

	g_string_append(out, folded);
	if (out->len == 0 || out->str[out->len - 1] != '\n')
		g_string_append_c(out, '\n');
}

static void
from_header(GString *out, const char *name, const char *email)
{
	InternetAddress *ia = internet_address_mailbox_new(name, email);
	g_autofree char *s = internet_address_to_string(ia, NULL, TRUE);

	g_object_unref(ia);
	g_string_append_printf(out, "From: %s\n", s);
}

/* mboxrd: a line of the body matching ">*From " gets one more '>'. */
static void
body_mboxrd(GString *out, const char *text, gsize len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *q = p;
		gsize l = nl ? (gsize)(nl - p + 1) : (gsize)(end - p);

		while (q < p + l && *q == '>')
			q++;
		if ((gsize)(p + l - q) >= 5 && memcmp(q, "From ", 5) == 0)
			g_string_append_c(out, '>');
		g_string_append_len(out, p, l);
		p += l;
	}
	if (len > 0 && text[len - 1] != '\n')
		g_string_append_c(out, '\n');
}

gboolean
pgate_apply_mbox_append(GString *mbox, GBytes *raw,
			const PgateApplyMboxMail *m, GError **error)
{
	g_autoptr(PgateMailinfo) mi = pgate_mailinfo_parse(raw, FALSE, error);
	g_autofree char *msg = NULL;
	g_autofree char *subject = NULL;
	const char *body;
	gsize dlen = 0;
	const char *diff;

	if (mi == NULL)
		return FALSE;
	g_mime_init();
	/* the body is declared UTF-8: git am's re-encoding */
	msg = pgate_apply__fix_utf8(mi->message, strlen(mi->message));
	if (m->add_trailers) {
		char *with = pgate_apply_add_trailers(msg, m->trailers, m->link,
						      m->signoff);

		g_free(msg);
		msg = with;
	}
	body = strchr(msg, '\n');
	body = body ? body + 1 : "";
	if (*body == '\n')
		body++;
	subject = m->prefix && *m->prefix
		? g_strdup_printf("[%s] %s", m->prefix, mi->subject)
		: g_strdup(mi->subject);
	g_string_append(mbox, "From mboxrd@z Thu Jan  1 00:00:00 1970\n");
	from_header(mbox, mi->author_name, mi->author_email);
	if (mi->date && *mi->date)
		g_string_append_printf(mbox, "Date: %s\n", mi->date);
	header(mbox, "Subject", subject);
	if (m->msgid)
		g_string_append_printf(mbox, "Message-Id: <%s>\n", m->msgid);
	g_string_append(mbox, "MIME-Version: 1.0\n"
			"Content-Type: text/plain; charset=\"utf-8\"\n"
			"Content-Transfer-Encoding: 8bit\n\n");
	body_mboxrd(mbox, body, strlen(body));
	diff = g_bytes_get_data(mi->diff, &dlen);
	if (dlen > 0)
		body_mboxrd(mbox, diff, dlen);
	g_string_append_c(mbox, '\n');
	return TRUE;
}

PgateApplyExtra *
pgate_apply_extra_new(void)
{
	PgateApplyExtra *e = g_new0(PgateApplyExtra, 1);

	e->trailers = g_ptr_array_new_with_free_func(g_free);
	return e;
}

void
pgate_apply_extra_free(PgateApplyExtra *e)
{
	if (e == NULL)
		return;
	g_clear_pointer(&e->trailers, g_ptr_array_unref);
	g_free(e->link);
	g_free(e);
}
