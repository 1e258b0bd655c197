/* body.c - the body of a parsed message: its comment and its diff.
 *
 * The text parts of the MIME tree parse.c read (or its one text part,
 * when GMime did not parse it) are decoded as Patchwork's _find_content()
 * does: transfer encoding undone, the declared charset, the fallbacks
 * when it is missing, unknown or wrong.  The first text/plain part is
 * split into comment and diff (patchid.c), a text/x-patch or text/x-diff
 * part is the diff, and the comment loses its signature and list
 * footer.  A diff stays as sent; the rest is UTF-8.  The text of a
 * reply's own part is decoded here too (parse.c,
 * pgate_mail_reply_own_text()).
 */
#include "ingest/ingest-private.h"

#include <errno.h>
#include <gmime/gmime.h>
#include <iconv.h>
#include <string.h>

#include "common/autocleanups.h"

/* ---- text parts ------------------------------------------------------ */

/* CRLF to LF and NUL bytes out, in place; returns the new length. */
static gsize
normalise_text(char *s, gsize len)
{
	const char *cr = memchr(s, '\r', len), *nul = memchr(s, '\0', len);
	gsize o;

	/* most text has neither: nothing moves before the first one */
	if (cr == NULL && nul == NULL) {
		s[len] = '\0';
		return len;
	}
	o = (gsize)(((cr == NULL || (nul != NULL && nul < cr)) ? nul : cr) - s);
	for (gsize i = o; i < len; i++) {
		if (s[i] == '\0' ||
		    (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n'))
			continue;
		s[o++] = s[i];
	}
	s[o] = '\0';
	return o;
}

const guint16 pgate_ingest__cp1252_high[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
};

/* windows-1252 (@strict: its five undefined bytes fail, as in Python)
 * or ISO-8859-1 to UTF-8. */
static char *
single_byte_to_utf8(const char *s, gsize len, gboolean cp1252, gboolean strict)
{
	GString *out = g_string_sized_new(len + len / 8 + 1);

	for (gsize i = 0; i < len; i++) {
		guchar c = (guchar)s[i];

		if (c < 0x80) {
			g_string_append_c(out, (char)c);
		} else if (cp1252 && c < 0xa0) {
			if (pgate_ingest__cp1252_high[c - 0x80] == 0 && strict) {
				g_string_free(out, TRUE);
				return NULL;
			}
			g_string_append_unichar(out, pgate_ingest__cp1252_high[c - 0x80] ?
						pgate_ingest__cp1252_high[c - 0x80] : c);
		} else {
			g_string_append_unichar(out, c);
		}
	}
	return g_string_free(out, FALSE);
}

/* Makes room for at least a quarter more output. */
static void
grow_output(char **out, char **outp, gsize *outleft, gsize *cap)
{
	gsize used = (gsize)(*outp - *out);

	*cap = *cap * 2 + 64;
	*out = g_realloc(*out, *cap + 1);
	*outp = *out + used;
	*outleft = *cap - used;
}

/* Strict conversion with GMime's iconv cache; NULL when the charset is
 * unknown or the text is not valid in it. */
static char *
iconv_to_utf8(const char *s, gsize len, const char *charset)
{
	iconv_t cd = g_mime_iconv_open("UTF-8", charset);
	gsize cap = len * 2 + 16, inleft = len, outleft = cap;
	char *inp = (char *)s, *out, *outp;
	gboolean flushed = FALSE;

	if (cd == (iconv_t)-1)
		return NULL;
	out = outp = g_malloc(cap + 1);
	iconv(cd, NULL, NULL, NULL, NULL);
	while (!flushed) {
		size_t r = inleft > 0 ?
			iconv(cd, &inp, &inleft, &outp, &outleft) :
			iconv(cd, NULL, NULL, &outp, &outleft);

		if (r == (size_t)-1 && errno == E2BIG) {
			grow_output(&out, &outp, &outleft, &cap);
		} else if (r == (size_t)-1) {
			g_clear_pointer(&out, g_free);
			break;
		} else {
			/* the input is done; the call after it flushed */
			flushed = inleft == 0 && inp == NULL;
			if (inleft == 0)
				inp = NULL;
		}
	}
	g_mime_iconv_close(cd);
	if (out != NULL)
		*outp = '\0';
	return out;
}

static gboolean
charset_in(const char *charset, const char *const *names)
{
	for (; *names != NULL; names++)
		if (g_ascii_strcasecmp(charset, *names) == 0)
			return TRUE;
	return FALSE;
}

/* Charsets whose bytes below 0x80 are not ASCII: their text is converted
 * before a diff is looked for in it. */
static gboolean
ascii_incompatible(const char *charset)
{
	static const char *const prefixes[] = {
		"utf-16", "utf16", "utf-32", "utf32", "ucs-2", "ucs2", "ucs-4",
		"ucs4", "utf-7", "utf7", "unicode",
	};

	for (guint i = 0; charset != NULL && i < G_N_ELEMENTS(prefixes); i++)
		if (g_ascii_strncasecmp(charset, prefixes[i],
					strlen(prefixes[i])) == 0)
			return TRUE;
	return FALSE;
}

static gboolean
is_ascii(const char *s, gsize len)
{
	guchar high = 0;

	for (gsize i = 0; i < len; i++)
		high |= (guchar)s[i];
	return high < 0x80;
}

/* The fallbacks: UTF-8 if valid, else windows-1252 if valid, else
 * ISO-8859-1, which always is.  Takes @text. */
static char *
fallback_to_utf8(char *text, gsize len)
{
	char *out;

	if (g_utf8_validate(text, (gssize)len, NULL))
		return text;
	out = single_byte_to_utf8(text, len, TRUE, TRUE);
	if (out == NULL)
		out = single_byte_to_utf8(text, len, FALSE, FALSE);
	g_free(text);
	return out;
}

/*
 * Patchwork's _find_content() decoding of ASCII-compatible text: the
 * declared charset, and when it is missing or unknown the fallbacks.
 * Where Patchwork drops a part that is invalid in its declared charset
 * (most often 8-bit UTF-8 declared us-ascii) the fallbacks are tried too,
 * so that no text is lost.  Takes @text (NUL-terminated, @len bytes).
 */
char *
pgate_ingest__text_to_utf8(char *text, gsize len, const char *charset)
{
	static const char *const utf8[] = {
		"utf-8", "utf8", "us-ascii", "ascii", "ansi_x3.4-1968", NULL
	};
	static const char *const latin1[] = {
		"iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "l1", NULL
	};
	static const char *const cp1252[] = {
		"windows-1252", "cp1252", NULL
	};
	char *out = NULL;

	if (is_ascii(text, len))
		return text;
	if (charset == NULL || *charset == '\0' || charset_in(charset, utf8))
		return fallback_to_utf8(text, len);
	if (charset_in(charset, latin1))
		out = single_byte_to_utf8(text, len, FALSE, FALSE);
	else if (charset_in(charset, cp1252))
		out = single_byte_to_utf8(text, len, TRUE, TRUE);
	else
		out = iconv_to_utf8(text, len, charset);
	if (out == NULL || !g_utf8_validate(out, -1, NULL)) {
		g_free(out);
		return fallback_to_utf8(text, len);
	}
	g_free(text);
	return out;
}

/*
 * A part without transfer encoding is a window of the message's bytes:
 * the parser makes it a memory stream on the same array with bounds.
 * Copying the window is much cheaper than GMime's stream-to-stream copy.
 * Returns: NULL when the content is not such a window.
 */
static GByteArray *
raw_window(GMimeDataWrapper *content, const GByteArray *raw)
{
	GMimeStream *s = g_mime_data_wrapper_get_stream(content);
	gint64 start, end;
	GByteArray *ba;

	switch (g_mime_data_wrapper_get_encoding(content)) {
	case GMIME_CONTENT_ENCODING_DEFAULT:
	case GMIME_CONTENT_ENCODING_7BIT:
	case GMIME_CONTENT_ENCODING_8BIT:
	case GMIME_CONTENT_ENCODING_BINARY:
		break;
	default:
		return NULL;
	}
	if (s == NULL || !GMIME_IS_STREAM_MEM(s) ||
	    g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(s)) != raw)
		return NULL;
	start = s->bound_start;
	end = s->bound_end < 0 ? (gint64)raw->len : s->bound_end;
	if (start < 0 || end < start || end > (gint64)raw->len)
		return NULL;
	ba = g_byte_array_sized_new((guint)(end - start + 1));
	g_byte_array_append(ba, raw->data + start, (guint)(end - start));
	return ba;
}

/* The content of a part as sent, transfer encoding undone. */
static GByteArray *
part_bytes(GMimePart *part, const GByteArray *raw)
{
	GMimeDataWrapper *content = g_mime_part_get_content(part);
	g_autoptr(GMimeStream) mem = NULL;
	GByteArray *ba;

	if (content == NULL)
		return g_byte_array_new();
	ba = raw_window(content, raw);
	if (ba != NULL)
		return ba;
	mem = g_mime_stream_mem_new();
	g_mime_stream_mem_set_owner(GMIME_STREAM_MEM(mem), FALSE);
	ba = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem));
	if (g_mime_data_wrapper_write_to_stream(content, mem) < 0)
		g_byte_array_set_size(ba, 0);
	return ba;
}

/*
 * The text of a part, with LF line ends and without NUL bytes.  In an
 * ASCII-compatible charset it stays as sent, for the diff in it is kept
 * so (git applies and hashes bytes) and only the rest is converted later
 * with pgate_ingest__text_to_utf8(); other text is converted here, and
 * *@charset becomes "utf-8".  Takes @ba, the content as sent, transfer
 * encoding undone; *@charset is its content type's.
 */
static char *
text_of(GByteArray *ba, const char **charset)
{
	char *text;
	gsize len;

	if (ascii_incompatible(*charset)) {
		text = iconv_to_utf8((char *)ba->data, ba->len, *charset);
		if (text != NULL && g_utf8_validate(text, -1, NULL)) {
			g_byte_array_unref(ba);
			normalise_text(text, strlen(text));
			*charset = "utf-8";
			return text;
		}
		g_free(text);
	}
	g_byte_array_append(ba, (guint8 *)"", 1);
	len = ba->len - 1;
	text = (char *)g_byte_array_free(ba, FALSE);
	normalise_text(text, len);
	return text;
}

char *
pgate_ingest__part_text(GMimePart *part, const GByteArray *raw,
			const char **charset)
{
	*charset = g_mime_object_get_content_type_parameter(GMIME_OBJECT(part),
							    "charset");
	return text_of(part_bytes(part, raw), charset);
}

/* ---- the body -------------------------------------------------------- */

typedef struct {
	gboolean reply;
	const GByteArray *raw;   /* the bytes GMime parsed */
	GString *comment;
	char *diff;              /* as sent */
	guint parts;
} Body;

/* Appends @text (UTF-8) without its surrounding whitespace and a
 * newline, as Patchwork adds each part.  Takes @text. */
static void
append_stripped(GString *to, char *text)
{
	const char *p = text, *end = text + strlen(text);

	while (g_ascii_isspace(*p))
		p++;
	while (end > p && g_ascii_isspace(end[-1]))
		end--;
	g_string_append_len(to, p, end - p);
	g_string_append_c(to, '\n');
	g_free(text);
}

/* A diff as sent, ending with a newline: the newline before a MIME
 * boundary is the boundary's.  Takes @text. */
static char *
diff_of(char *text)
{
	gsize len = strlen(text);
	char *diff;

	if (len == 0 || text[len - 1] == '\n')
		return text;
	diff = g_strconcat(text, "\n", NULL);
	g_free(text);
	return diff;
}

/* find_patch_content() and find_comment_content() for one text part;
 * takes @text. */
static void
body_add_text(Body *b, const char *subtype, char *text, const char *charset)
{
	gboolean plain = g_ascii_strcasecmp(subtype, "plain") == 0;
	gsize len = strlen(text);

	if (b->reply && plain && len > 0) {
		append_stripped(b->comment, pgate_ingest__text_to_utf8(
			text, len, charset));
	} else if (!b->reply && (g_ascii_strcasecmp(subtype, "x-patch") == 0 ||
				 g_ascii_strcasecmp(subtype, "x-diff") == 0)) {
		g_free(b->diff);
		b->diff = diff_of(text);
	} else if (!b->reply && plain &&
		   (b->diff == NULL || *b->diff == '\0')) {
		char *comment = NULL;

		g_free(b->diff);
		pgate_ingest__split_patch(text, len, &b->diff, &comment);
		if (comment != NULL)
			append_stripped(b->comment, pgate_ingest__text_to_utf8(
				comment, strlen(comment), charset));
		g_free(text);
	} else if (!b->reply && plain) {
		append_stripped(b->comment, pgate_ingest__text_to_utf8(
			text, len, charset));
	} else {
		g_free(text);
	}
}

static void
body_walk(Body *b, GMimeObject *obj, int depth)
{
	if (obj == NULL || depth > PGATE_INGEST_MAX_DEPTH ||
	    b->parts >= PGATE_INGEST_MAX_PARTS)
		return;
	b->parts++;
	if (GMIME_IS_MULTIPART(obj)) {
		GMimeMultipart *mp = GMIME_MULTIPART(obj);
		int n = g_mime_multipart_get_count(mp);

		for (int i = 0; i < n; i++)
			body_walk(b, g_mime_multipart_get_part(mp, i),
				  depth + 1);
	} else if (GMIME_IS_MESSAGE_PART(obj)) {
		GMimeMessage *m = g_mime_message_part_get_message(
			GMIME_MESSAGE_PART(obj));

		if (m != NULL)
			body_walk(b, g_mime_message_get_mime_part(m),
				  depth + 1);
	} else if (GMIME_IS_PART(obj)) {
		GMimeContentType *ct = g_mime_object_get_content_type(obj);
		const char *charset;
		char *text;

		if (ct == NULL || g_ascii_strcasecmp(
			    g_mime_content_type_get_media_type(ct),
			    "text") != 0)
			return;
		text = pgate_ingest__part_text(GMIME_PART(obj), b->raw,
					       &charset);
		body_add_text(b, g_mime_content_type_get_media_subtype(ct),
			      text, charset);
	}
}

/* Patchwork's clean_content(): everything from a "-- " signature line or
 * a line of underscores (a list footer) goes, then the outer whitespace. */
char *
pgate_ingest__clean_content(GString *s)
{
	const char *p = s->str, *end = s->str + s->len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (gsize)(end - p));
		gsize n;

		if (eol == NULL)
			break;
		n = (gsize)(eol - p);
		if ((n == 3 && memcmp(p, "-- ", 3) == 0) ||
		    (n > 0 && strspn(p, "_") == n)) {
			g_string_truncate(s, (gsize)(p - s->str));
			break;
		}
		p = eol + 1;
	}
	return g_strstrip(g_string_free(s, FALSE));
}

/* body_walk() of a part that view_text_part() read. */
static void
body_text_part(Body *b, GMimeContentType *ct, PgateMailSpan content)
{
	const char *charset;
	GByteArray *ba;
	char *text;

	if (g_ascii_strcasecmp(g_mime_content_type_get_media_type(ct),
			       "text") != 0)
		return;
	charset = g_mime_content_type_get_parameter(ct, "charset");
	ba = g_byte_array_sized_new((guint)content.len + 1);
	g_byte_array_append(ba, (const guint8 *)content.p, (guint)content.len);
	text = text_of(ba, &charset);    /* may change charset */
	body_add_text(b, g_mime_content_type_get_media_subtype(ct), text,
		      charset);
}

void
pgate_ingest__read_body(PgateMail *mail, const PgateMailView *view,
			const GByteArray *raw, gboolean reply)
{
	Body b = { reply, raw, g_string_new(NULL), NULL, 0 };

	if (view->text_type != NULL)
		body_text_part(&b, view->text_type, view->text);
	else
		body_walk(&b, view->part, 0);
	mail->body = pgate_ingest__clean_content(b.comment);
	mail->diff = b.diff;
	if (mail->diff != NULL && *mail->diff == '\0')
		g_clear_pointer(&mail->diff, g_free);
}
