/* automated.c - is the mail we would answer itself sent by a machine?
 *
 * Never answering machines is what keeps two robots from mailing each
 * other forever.  The signs, strongest first:
 *
 *   Auto-Submitted: anything but "no"           RFC 3834 section 5
 *   X-Patchgate: (any)                          our own replies
 *   Message-ID patchgate.<hex>@<our domain>     our own replies
 *   From: our own from_address
 *   X-Patchwork-Hint: ignore                    what CI bots put on reports
 *                                               (Patchwork drops such mail)
 *   X-Auto-Response-Suppress: All / AutoReply   the sender asks for no
 *                                               automatic answers
 *   Return-Path: <>, From: MAILER-DAEMON@ or    bounces
 *   postmaster@, Content-Type: multipart/report
 *   Precedence: junk; Precedence: bulk or list  informal, but common
 *   without a List-Id
 *
 * Precedence bulk and list are not trusted on mail that carries a List-Id:
 * list servers put them on every message they relay (vger adds
 * "Precedence: bulk", Mailman "Precedence: list"), so there they describe
 * the list, not the sender, and honouring them would mean never answering
 * any patch.  The other signs still catch a robot posting to a list.
 */
#include "report/email/email-private.h"

#include <string.h>

#define MAX_HEADER_BYTES (256 * 1024)

/* The first word of a header value, lowercased: up to a space, ';', ','
 * or '(' (a comment). */
static char *
first_word(const char *v)
{
	gsize n;

	if (v == NULL)
		return g_strdup("");
	while (g_ascii_isspace(*v))
		v++;
	n = strcspn(v, " \t\r\n;,(");
	return g_ascii_strdown(v, (gssize)n);
}

/* The length of the header block, blank line excluded; -1 when it does
 * not end within MAX_HEADER_BYTES. */
static gssize
header_length(const char *raw, gsize len)
{
	gsize max = MIN(len, (gsize)MAX_HEADER_BYTES);

	for (gsize i = 0; i < max; i++) {
		if (raw[i] != '\n')
			continue;
		if (i + 1 < len && raw[i + 1] == '\n')
			return (gssize)(i + 1);
		if (i + 2 < len && raw[i + 1] == '\r' && raw[i + 2] == '\n')
			return (gssize)(i + 1);
	}
	return len <= MAX_HEADER_BYTES ? (gssize)len : -1;
}

static GMimeMessage *
parse_headers(const char *raw, gsize len)
{
	g_autoptr(GByteArray) buf = g_byte_array_sized_new((guint)len + 2);
	g_autoptr(GMimeStream) stream = NULL;
	g_autoptr(GMimeParser) parser = NULL;

	/* an mbox "From " line is not a header */
	if (len > 5 && memcmp(raw, "From ", 5) == 0) {
		const char *nl = memchr(raw, '\n', len);

		if (nl == NULL)
			return NULL;
		len -= (gsize)(nl + 1 - raw);
		raw = nl + 1;
	}
	g_byte_array_append(buf, (const guint8 *)raw, (guint)len);
	g_byte_array_append(buf, (const guint8 *)"\n\n", 2);
	stream = g_mime_stream_mem_new_with_byte_array(g_steal_pointer(&buf));
	parser = g_mime_parser_new_with_stream(stream);
	g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
	return g_mime_parser_construct_message(parser, NULL);
}

static gboolean
is_own_msgid(const PgateEmailConfig *cfg, const char *value)
{
	g_autofree char *domain = NULL;
	g_autofree char *v = NULL;
	const char *at;

	if (cfg == NULL || cfg->from_address == NULL || value == NULL)
		return FALSE;
	v = g_ascii_strdown(value, -1);
	g_strstrip(v);
	if (!g_str_has_prefix(v, "<patchgate."))
		return FALSE;
	at = strrchr(v, '@');
	domain = pgate_email__address_domain(cfg->from_address);
	return at != NULL && g_str_has_prefix(at + 1, domain) &&
	       at[1 + strlen(domain)] == '>';
}

/* The first mailbox of an address header, lowercased, or NULL. */
static char *
first_address(const char *value)
{
	InternetAddressList *list = internet_address_list_parse(NULL, value);
	char *addr = NULL;

	if (list == NULL)
		return NULL;
	if (internet_address_list_length(list) > 0) {
		InternetAddress *ia = internet_address_list_get_address(list, 0);

		if (INTERNET_ADDRESS_IS_MAILBOX(ia))
			addr = g_ascii_strdown(internet_address_mailbox_get_addr(
						       INTERNET_ADDRESS_MAILBOX(ia)),
					       -1);
	}
	g_object_unref(list);
	return addr;
}

static const char *
check_header(const PgateEmailConfig *cfg, const char *name,
	     const char *value, gboolean *precedence_bulk,
	     gboolean *has_list_id)
{
	g_autofree char *w = first_word(value);

	if (g_ascii_strcasecmp(name, "Auto-Submitted") == 0)
		return strcmp(w, "no") != 0 ? "Auto-Submitted" : NULL;
	if (g_ascii_strcasecmp(name, PGATE_EMAIL_MARKER_HEADER) == 0)
		return "our own marker header " PGATE_EMAIL_MARKER_HEADER;
	if (g_ascii_strcasecmp(name, "X-Patchwork-Hint") == 0)
		return strcmp(w, "ignore") == 0 ? "X-Patchwork-Hint: ignore"
						: NULL;
	if (g_ascii_strcasecmp(name, "X-Auto-Response-Suppress") == 0) {
		g_auto(GStrv) toks = g_strsplit_set(value ? value : "", ", \t",
						    -1);

		for (guint i = 0; toks[i] != NULL; i++)
			if (g_ascii_strcasecmp(toks[i], "All") == 0 ||
			    g_ascii_strcasecmp(toks[i], "AutoReply") == 0)
				return "X-Auto-Response-Suppress";
		return NULL;
	}
	if (g_ascii_strcasecmp(name, "Precedence") == 0) {
		if (strcmp(w, "junk") == 0)
			return "Precedence: junk";
		if (strcmp(w, "bulk") == 0 || strcmp(w, "list") == 0)
			*precedence_bulk = TRUE;
		return NULL;
	}
	if (g_ascii_strcasecmp(name, "List-Id") == 0) {
		*has_list_id = TRUE;
		return NULL;
	}
	if (g_ascii_strcasecmp(name, "Return-Path") == 0) {
		g_autofree char *v = g_strdup(value ? value : "");

		g_strstrip(v);
		return strcmp(v, "<>") == 0 ? "Return-Path: <> (a bounce)"
					    : NULL;
	}
	if (g_ascii_strcasecmp(name, "Message-Id") == 0)
		return is_own_msgid(cfg, value) ? "our own Message-ID" : NULL;
	if (g_ascii_strcasecmp(name, "Content-Type") == 0) {
		return g_str_has_prefix(w, "multipart/report")
			       ? "Content-Type: multipart/report (a bounce)"
			       : NULL;
	}
	if (g_ascii_strcasecmp(name, "From") == 0) {
		g_autofree char *addr = first_address(value);

		if (addr == NULL)
			return NULL;
		if (g_str_has_prefix(addr, "mailer-daemon@") ||
		    g_str_has_prefix(addr, "postmaster@"))
			return "From: a mailer daemon";
		if (cfg != NULL && cfg->from_address != NULL &&
		    strcmp(addr, cfg->from_address) == 0)
			return "From: our own address";
	}
	return NULL;
}

gboolean
pgate_email_is_automated(const PgateEmailConfig *cfg, GBytes *raw_original,
			 const char **out_why)
{
	g_autoptr(GMimeMessage) msg = NULL;
	const char *why = NULL;
	gboolean bulk = FALSE, list_id = FALSE;
	gsize len = 0;
	const char *raw;
	gssize hlen;

	pgate_email__init();
	raw = raw_original ? g_bytes_get_data(raw_original, &len) : NULL;
	hlen = raw ? header_length(raw, len) : -1;
	if (hlen < 0) {
		why = "no header block within 256 KiB";
		goto out;
	}
	msg = parse_headers(raw, (gsize)hlen);
	if (msg == NULL) {
		why = "headers that cannot be parsed";
		goto out;
	}
	/* the message's own headers: GMime keeps Content-* on the part */
	GMimeHeaderList *lists[2] = {
		g_mime_object_get_header_list(GMIME_OBJECT(msg)),
		NULL,
	};
	GMimeObject *part = g_mime_message_get_mime_part(msg);
	if (part != NULL)
		lists[1] = g_mime_object_get_header_list(part);
	for (guint l = 0; l < 2 && why == NULL; l++) {
		int n = lists[l] ? g_mime_header_list_get_count(lists[l]) : 0;

		for (int i = 0; i < n && why == NULL; i++) {
			GMimeHeader *h =
				g_mime_header_list_get_header_at(lists[l], i);

			why = check_header(cfg, g_mime_header_get_name(h),
					   g_mime_header_get_value(h), &bulk,
					   &list_id);
		}
	}
	if (why == NULL && bulk && !list_id)
		why = "Precedence: bulk or list, not from a list";
out:
	if (out_why != NULL)
		*out_why = why;
	return why != NULL;
}
