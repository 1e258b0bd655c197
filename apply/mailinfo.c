/* mailinfo.c - what `git am` takes from one mail.
 *
 * git am runs git mailsplit (which turns CRLF into LF unless --keep-cr),
 * then git mailinfo with its defaults: no -k (the subject is cleaned), no
 * --scissors, no -m, in-body headers honoured, and the metadata and the
 * message re-encoded to UTF-8.  This file follows what those programs do
 * (git 2.39), including their heuristics: mailinfo does not claim to
 * understand MIME and neither does this; it reads lines.
 *
 *  - Headers are read up to the first line that is not one ("From " lines
 *    count as headers), folded lines joined.  From, Subject and Date are
 *    kept (the last of each wins), RFC 2047 words decoded and converted to
 *    UTF-8; a malformed "=?" word is an error, as in git.
 *  - Content-Type's boundary= opens a multipart level (at most four), its
 *    charset= is the charset of the message lines that follow, format=flowed
 *    and delsp=yes are honoured; Content-Transfer-Encoding base64 or
 *    quoted-printable decodes each body line.  The type of a part does not
 *    matter: every part's text goes through the same filter.
 *  - The filter: before the first non-blank line, lines naming From:,
 *    Subject: or Date: (and folded continuations) are in-body headers
 *    (they override the mail's, when the mail has a patch); "[PATCH] x" is
 *    an in-body subject; an escaped format-patch separator ">From <sha>
 *    Mon Sep 17 00:00:00 2001" is skipped.  Then lines go to the message
 *    until a patch break ("diff -", "Index: ", "--- file", "---" and
 *    blanks); from that line on everything is the patch.
 *  - The subject loses leading "Re:", ":", blanks and [...] groups; runs of
 *    whitespace become one space.  From: is split into a name and an
 *    address the way git does (a name that is empty, longer than 60 bytes
 *    or holds @, < or > is replaced by the address).
 *  - git am then makes the message: subject, blank line, the message lines;
 *    git's stripspace (trailing blanks, runs of blank lines, leading and
 *    trailing blank lines go; every line ends in LF).
 *
 * Every size is bounded by the input, itself at most
 * PGATE_MAILINFO_MAX_BYTES; nesting is bounded by the boundary stack.
 */
#include "apply/apply-private.h"

#include <gmime/gmime.h>
#include <string.h>

G_DEFINE_QUARK(pgate-apply-error-quark, pgate_apply_error)

enum { HDR_FROM, HDR_SUBJECT, HDR_DATE, N_HDR };
static const char *const hdr_names[N_HDR] = { "From", "Subject", "Date" };

/* git's mailinfo keeps at most this many boundaries, slot 0 unused */
#define MAX_BOUNDARIES 5

typedef enum { TE_DONTCARE, TE_QP, TE_BASE64 } TransferEncoding;

typedef struct {
	/* input, CRLF already folded as mailsplit does */
	const char *buf;
	gsize len, pos;

	GString *p_hdr[N_HDR];   /* the mail's headers (NULL: unset) */
	GString *s_hdr[N_HDR];   /* in-body headers */
	GString *content[MAX_BOUNDARIES];
	int top;                 /* content[top]: the current boundary */
	GString *charset;
	TransferEncoding te;
	gboolean format_flowed, delsp;
	gboolean header_stage;   /* still before the message text */
	int filter_stage;        /* 0: message, 1: patch */
	GString *inbody_accum;
	GString *log;
	GString *patch;
	guint patch_lines;
	GString *name, *email;
	char *error;             /* the first input error */
} Mi;

/* git's isspace(): only these four (git has its own ctype table) */
static inline gboolean
g_isspace(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void
mi_fail(Mi *mi, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
mi_fail(Mi *mi, const char *fmt, ...)
{
	va_list ap;

	if (mi->error != NULL)
		return;
	va_start(ap, fmt);
	mi->error = g_strdup_vprintf(fmt, ap);
	va_end(ap);
}

/* ---- line input --------------------------------------------------------- */

/* strbuf_getwholeline: the next line with its LF; FALSE at the end */
static gboolean
get_whole_line(Mi *mi, GString *line)
{
	const char *nl;
	gsize n;

	g_string_truncate(line, 0);
	if (mi->pos >= mi->len)
		return FALSE;
	nl = memchr(mi->buf + mi->pos, '\n', mi->len - mi->pos);
	n = nl ? (gsize)(nl - (mi->buf + mi->pos)) + 1 : mi->len - mi->pos;
	g_string_append_len(line, mi->buf + mi->pos, n);
	mi->pos += n;
	return TRUE;
}

/* strbuf_getline_lf: the same without the LF */
static gboolean
get_line_lf(Mi *mi, GString *line)
{
	if (!get_whole_line(mi, line))
		return FALSE;
	if (line->len && line->str[line->len - 1] == '\n')
		g_string_truncate(line, line->len - 1);
	return TRUE;
}

static int
peek_char(Mi *mi)
{
	return mi->pos < mi->len ? (guchar)mi->buf[mi->pos] : -1;
}

static void
rtrim(GString *s)
{
	while (s->len && g_isspace((guchar)s->str[s->len - 1]))
		g_string_truncate(s, s->len - 1);
}

static void
trim(GString *s)
{
	gsize i = 0;

	rtrim(s);
	while (i < s->len && g_isspace((guchar)s->str[i]))
		i++;
	g_string_erase(s, 0, i);
}

/* ---- headers ------------------------------------------------------------ */

static gboolean
is_rfc2822_header(const GString *line)
{
	const char *cp = line->str;

	if (g_str_has_prefix(cp, "From ") || g_str_has_prefix(cp, ">From "))
		return TRUE;
	for (; *cp; cp++) {
		guchar ch = *cp;

		if (ch == ':')
			return TRUE;
		if ((33 <= ch && ch <= 57) || (59 <= ch && ch <= 126))
			continue;
		break;
	}
	return FALSE;
}

/* One header line, folded lines joined; FALSE (and the line, with its
 * LF, in @line) when the line is not a header. */
static gboolean
read_one_header_line(Mi *mi, GString *line)
{
	g_autoptr(GString) cont = g_string_new(NULL);

	if (!get_line_lf(mi, line))
		return FALSE;
	rtrim(line);
	if (!line->len || !is_rfc2822_header(line)) {
		g_string_append_c(line, '\n');
		return FALSE;
	}
	for (;;) {
		int peek = peek_char(mi);

		if (peek != ' ' && peek != '\t')
			break;
		if (!get_line_lf(mi, cont))
			break;
		cont->str[0] = ' ';
		rtrim(cont);
		g_string_append_len(line, cont->str, cont->len);
	}
	return TRUE;
}

/* "Name:" case-insensitively, then blanks: *@val is the value */
static gboolean
skip_header(const GString *line, const char *hdr, const char **val)
{
	gsize n = strlen(hdr);
	const char *v;

	if (line->len <= n || g_ascii_strncasecmp(line->str, hdr, n) != 0 ||
	    line->str[n] != ':')
		return FALSE;
	v = line->str + n + 1;
	while (g_isspace((guchar)*v))
		v++;
	*val = v;
	return TRUE;
}

static gboolean
same_utf8(const char *name)
{
	if (g_ascii_strncasecmp(name, "utf", 3) != 0)
		return FALSE;
	name += 3;
	if (*name == '-')
		name++;
	return g_ascii_strcasecmp(name, "8") == 0;
}

/* convert_to_utf8(): text in @charset re-encoded; no charset, or UTF-8,
 * leaves it alone.  A failure is an input error, as in git. */
static void
convert_to_utf8(Mi *mi, GString *s, const char *charset)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *out = NULL;

	if (charset == NULL || *charset == '\0' || same_utf8(charset))
		return;
	out = g_convert(s->str, s->len, "UTF-8", charset, NULL, NULL, &err);
	if (out == NULL) {
		mi_fail(mi, "cannot convert from %s to UTF-8", charset);
		return;
	}
	g_string_assign(s, out);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* quoted-printable, one line (or one RFC 2047 "Q" word when @rfc2047) */
static GString *
decode_q(const char *in, gsize len, gboolean rfc2047)
{
	GString *out = g_string_sized_new(len);
	const char *end = in + len;

	while (in < end && *in) {
		int c = (guchar)*in++;

		if (c == '=') {
			int d = in < end ? (guchar)*in : 0;

			if (d == '\n' || d == 0)
				break;  /* a soft line break */
			if (in + 1 < end && hexval(in[0]) >= 0 &&
			    hexval(in[1]) >= 0) {
				g_string_append_c(out, (char)(hexval(in[0]) * 16 +
							      hexval(in[1])));
				in += 2;
				continue;
			}
		}
		if (rfc2047 && c == '_')
			c = ' ';
		g_string_append_c(out, (char)c);
	}
	return out;
}

/* base64, one line at a time: anything not in the alphabet is skipped */
static GString *
decode_b(const char *in, gsize len)
{
	GString *out = g_string_sized_new(len);
	const char *end = in + len;
	int pos = 0, acc = 0;

	while (in < end && *in) {
		int c = (guchar)*in++;

		if (c == '+')
			c = 62;
		else if (c == '/')
			c = 63;
		else if (c >= 'A' && c <= 'Z')
			c -= 'A';
		else if (c >= 'a' && c <= 'z')
			c -= 'a' - 26;
		else if (c >= '0' && c <= '9')
			c -= '0' - 52;
		else
			continue;
		switch (pos++) {
		case 0:
			acc = c << 2;
			break;
		case 1:
			g_string_append_c(out, (char)(acc | (c >> 4)));
			acc = (c & 15) << 4;
			break;
		case 2:
			g_string_append_c(out, (char)(acc | (c >> 2)));
			acc = (c & 3) << 6;
			break;
		case 3:
			g_string_append_c(out, (char)(acc | c));
			acc = pos = 0;
			break;
		}
	}
	return out;
}

/* RFC 2047 words in a header value, decoded and converted to UTF-8.
 * Blanks between two words go; text that is not a word stays as it is
 * (raw 8-bit bytes included). */
static void
decode_header(Mi *mi, GString *it)
{
	g_autoptr(GString) out = g_string_new(NULL);
	const char *in = it->str;
	const char *ep;

	while ((ep = strstr(in, "=?")) != NULL) {
		const char *cp, *scan;
		g_autofree char *charset = NULL;
		g_autoptr(GString) dec = NULL;
		int encoding;

		if (in != ep) {
			for (scan = in; scan < ep; scan++)
				if (!g_isspace((guchar)*scan))
					break;
			if (scan != ep || in == it->str)
				g_string_append_len(out, in, ep - in);
		}
		ep += 2;
		cp = strchr(ep, '?');
		if (cp == NULL || cp[1] == '\0' || cp[2] != '?')
			goto bad;
		charset = g_strndup(ep, cp - ep);
		encoding = g_ascii_tolower(cp[1]);
		ep = strstr(cp + 3, "?=");
		if (ep == NULL)
			goto bad;
		if (encoding == 'b')
			dec = decode_b(cp + 3, ep - (cp + 3));
		else if (encoding == 'q')
			dec = decode_q(cp + 3, ep - (cp + 3), TRUE);
		else
			goto bad;
		convert_to_utf8(mi, dec, charset);
		if (mi->error)
			return;
		g_string_append_len(out, dec->str, dec->len);
		in = ep + 2;
	}
	g_string_append(out, in);
	g_string_assign(it, out->str);
	return;
bad:
	mi_fail(mi, "malformed RFC 2047 encoded word in a header");
}

static void
set_hdr(GString **slot, const char *val)
{
	if (*slot == NULL)
		*slot = g_string_new(val);
	else
		g_string_assign(*slot, val);
}

/* attribute @name ("boundary=") of a Content-Type value, as slurp_attr */
static gboolean
slurp_attr(const char *line, const char *name, GString *attr)
{
	const char *ap = strcasestr(line, name);
	const char *ends;

	g_string_truncate(attr, 0);
	if (ap == NULL)
		return FALSE;
	ap += strlen(name);
	if (*ap == '"') {
		ap++;
		ends = "\"";
	} else {
		ends = "; \t";
	}
	g_string_append_len(attr, ap, strcspn(ap, ends));
	return TRUE;
}

static gboolean
has_attr_value(const char *line, const char *name, const char *value)
{
	g_autoptr(GString) v = g_string_new(NULL);

	return slurp_attr(line, name, v) && g_ascii_strcasecmp(v->str, value) == 0;
}

static void
handle_content_type(Mi *mi, const char *value)
{
	g_autoptr(GString) boundary = g_string_new(NULL);

	mi->format_flowed = has_attr_value(value, "format=", "flowed");
	mi->delsp = has_attr_value(value, "delsp=", "yes");
	if (slurp_attr(value, "boundary=", boundary)) {
		g_string_prepend(boundary, "--");
		if (mi->top + 1 >= MAX_BOUNDARIES) {
			mi_fail(mi, "too many MIME boundaries");
		} else {
			mi->top++;
			mi->content[mi->top] = g_steal_pointer(&boundary);
		}
	}
	slurp_attr(value, "charset=", mi->charset);
}

static gboolean
check_header(Mi *mi, const GString *line, GString **hdr, gboolean overwrite)
{
	g_autoptr(GString) sb = NULL;
	const char *val;

	for (int i = 0; i < N_HDR; i++) {
		if ((hdr[i] == NULL || overwrite) &&
		    skip_header(line, hdr_names[i], &val)) {
			sb = g_string_new(val);
			decode_header(mi, sb);
			set_hdr(&hdr[i], sb->str);
			return TRUE;
		}
	}
	if (skip_header(line, "Content-Type", &val)) {
		sb = g_string_new(val);
		decode_header(mi, sb);
		handle_content_type(mi, sb->str);
		return TRUE;
	}
	if (skip_header(line, "Content-Transfer-Encoding", &val)) {
		sb = g_string_new(val);
		decode_header(mi, sb);
		if (strcasestr(sb->str, "base64"))
			mi->te = TE_BASE64;
		else if (strcasestr(sb->str, "quoted-printable"))
			mi->te = TE_QP;
		else
			mi->te = TE_DONTCARE;
		return TRUE;
	}
	if (skip_header(line, "Message-Id", &val)) {
		sb = g_string_new(val);
		decode_header(mi, sb);  /* only for its errors, as in git */
		return TRUE;
	}
	return FALSE;
}

/* ---- the body ----------------------------------------------------------- */

static gboolean
patchbreak(const GString *line)
{
	const char *s = line->str;

	if (g_str_has_prefix(s, "diff -") || g_str_has_prefix(s, "Index: "))
		return TRUE;
	if (line->len < 4 || !g_str_has_prefix(s, "---"))
		return FALSE;
	if (s[3] == ' ' && !g_isspace((guchar)s[4]))
		return TRUE;
	for (gsize i = 3; i < line->len; i++) {
		if (s[i] == '\n')
			return TRUE;
		if (!g_isspace((guchar)s[i]))
			break;
	}
	return FALSE;
}

static gboolean
is_format_patch_separator(const char *line, gsize len)
{
	static const char sample[] =
		"From e6807f3efca28b30decfecb1732a56c7db1137ee Mon Sep 17 00:00:00 2001\n";
	const char *cp;

	if (len != strlen(sample) || !g_str_has_prefix(line, "From "))
		return FALSE;
	cp = line + 5;
	if (strspn(cp, "0123456789abcdef") != 40)
		return FALSE;
	cp += 40;
	return memcmp(sample + (cp - line), cp, strlen(sample) - (cp - line)) == 0;
}

static void
flush_inbody_header_accum(Mi *mi)
{
	if (!mi->inbody_accum->len)
		return;
	check_header(mi, mi->inbody_accum, mi->s_hdr, FALSE);
	g_string_truncate(mi->inbody_accum, 0);
}

static gboolean
is_inbody_header(Mi *mi, const GString *line)
{
	const char *val;

	for (int i = 0; i < N_HDR; i++)
		if (mi->s_hdr[i] == NULL && skip_header(line, hdr_names[i], &val))
			return TRUE;
	return FALSE;
}

/* TRUE while @line is (part of) an in-body header */
static gboolean
check_inbody_header(Mi *mi, const GString *line)
{
	if (mi->inbody_accum->len &&
	    (line->str[0] == ' ' || line->str[0] == '\t')) {
		if (mi->inbody_accum->len &&
		    mi->inbody_accum->str[mi->inbody_accum->len - 1] == '\n')
			g_string_truncate(mi->inbody_accum,
					  mi->inbody_accum->len - 1);
		g_string_append_len(mi->inbody_accum, line->str, line->len);
		return TRUE;
	}
	flush_inbody_header_accum(mi);
	if (g_str_has_prefix(line->str, ">From") && g_isspace((guchar)line->str[5]))
		return is_format_patch_separator(line->str + 1, line->len - 1);
	if (g_str_has_prefix(line->str, "[PATCH]") &&
	    g_isspace((guchar)line->str[7])) {
		set_hdr(&mi->s_hdr[HDR_SUBJECT], line->str);
		return TRUE;
	}
	if (is_inbody_header(mi, line)) {
		g_string_append_len(mi->inbody_accum, line->str, line->len);
		return TRUE;
	}
	return FALSE;
}

/* TRUE when @line starts the patch */
static gboolean
handle_commit_msg(Mi *mi, GString *line)
{
	if (mi->header_stage) {
		if (!line->len || (line->len == 1 && line->str[0] == '\n')) {
			if (mi->inbody_accum->len) {
				flush_inbody_header_accum(mi);
				mi->header_stage = FALSE;
			}
			return FALSE;
		}
		mi->header_stage = check_inbody_header(mi, line);
		if (mi->header_stage)
			return FALSE;
	}
	convert_to_utf8(mi, line, mi->charset->str);
	if (mi->error)
		return FALSE;
	if (patchbreak(line))
		return TRUE;
	g_string_append_len(mi->log, line->str, line->len);
	return FALSE;
}

static void
handle_patch(Mi *mi, const GString *line)
{
	g_string_append_len(mi->patch, line->str, line->len);
	mi->patch_lines++;
}

static void
handle_filter(Mi *mi, GString *line)
{
	if (mi->filter_stage == 0) {
		if (!handle_commit_msg(mi, line))
			return;
		mi->filter_stage = 1;
	}
	handle_patch(mi, line);
}

static void
handle_filter_flowed(Mi *mi, GString *line, GString *prev)
{
	gsize len = line->len;

	if (!mi->format_flowed) {
		/* git am's default --quoted-cr=warn keeps a decoded CR */
		handle_filter(mi, line);
		return;
	}
	if (len && line->str[len - 1] == '\n') {
		len--;
		if (len && line->str[len - 1] == '\r')
			len--;
	}
	/* the signature separator stays as it is */
	if (len == 3 && strncmp(line->str, "-- ", 3) == 0) {
		if (prev->len) {
			handle_filter(mi, prev);
			g_string_truncate(prev, 0);
		}
		handle_filter(mi, line);
		return;
	}
	/* space-stuffed line */
	if (len && line->str[0] == ' ') {
		g_string_erase(line, 0, 1);
		len--;
	}
	/* a flowed line: kept for the next, without its soft break */
	if (len && line->str[len - 1] == ' ') {
		g_string_append_len(prev, line->str, len - (mi->delsp ? 1 : 0));
		return;
	}
	g_string_prepend_len(line, prev->str, prev->len);
	g_string_truncate(prev, 0);
	handle_filter(mi, line);
}

static gboolean
is_multipart_boundary(Mi *mi, const GString *line)
{
	const GString *b = mi->content[mi->top];

	return b->len <= line->len && memcmp(line->str, b->str, b->len) == 0;
}

static gboolean
find_boundary(Mi *mi, GString *line)
{
	while (get_line_lf(mi, line))
		if (mi->content[mi->top] && is_multipart_boundary(mi, line))
			return TRUE;
	return FALSE;
}

static gboolean
handle_boundary(Mi *mi, GString *line)
{
	g_autoptr(GString) newline = g_string_new("\n");

	for (;;) {
		const GString *b = mi->content[mi->top];

		if (!(line->len >= b->len + 2 &&
		      memcmp(line->str + b->len, "--", 2) == 0))
			break;
		/* an end boundary: pop it */
		g_string_free(mi->content[mi->top], TRUE);
		mi->content[mi->top] = NULL;
		mi->top--;
		if (mi->top < 0) {
			mi_fail(mi, "mismatched MIME boundaries");
			mi->top = 0;
			return FALSE;
		}
		handle_filter(mi, newline);
		if (mi->error)
			return FALSE;
		if (!find_boundary(mi, line))
			return FALSE;
	}
	mi->te = TE_DONTCARE;
	g_string_truncate(mi->charset, 0);
	while (read_one_header_line(mi, line))
		check_header(mi, line, mi->p_hdr, FALSE);
	if (!get_line_lf(mi, line))
		return FALSE;
	g_string_append_c(line, '\n');
	return TRUE;
}

static void
decode_transfer_encoding(Mi *mi, GString *line)
{
	g_autoptr(GString) dec = NULL;

	if (mi->te == TE_QP)
		dec = decode_q(line->str, line->len, FALSE);
	else if (mi->te == TE_BASE64)
		dec = decode_b(line->str, line->len);
	else
		return;
	g_string_truncate(line, 0);
	g_string_append_len(line, dec->str, dec->len);
}

static void
handle_body(Mi *mi, GString *line)
{
	g_autoptr(GString) prev = g_string_new(NULL);
	g_autoptr(GString) piece = g_string_new(NULL);

	if (mi->content[mi->top] && !find_boundary(mi, line))
		return;
	do {
		if (mi->content[mi->top] && is_multipart_boundary(mi, line)) {
			if (prev->len) {
				handle_filter(mi, prev);
				g_string_truncate(prev, 0);
			}
			if (!handle_boundary(mi, line))
				return;
		}
		decode_transfer_encoding(mi, line);
		if (mi->te == TE_BASE64 || mi->te == TE_QP) {
			const char *p, *end, *nl;

			g_string_prepend_len(line, prev->str, prev->len);
			g_string_truncate(prev, 0);
			/* one decoded line may hold several: one at a time */
			p = line->str;
			end = line->str + line->len;
			while (p < end) {
				nl = memchr(p, '\n', end - p);
				if (nl == NULL) {
					g_string_append_len(prev, p, end - p);
					break;
				}
				g_string_truncate(piece, 0);
				g_string_append_len(piece, p, nl + 1 - p);
				handle_filter_flowed(mi, piece, prev);
				p = nl + 1;
			}
		} else {
			handle_filter_flowed(mi, line, prev);
		}
		if (mi->error)
			return;
	} while (get_whole_line(mi, line));
	if (prev->len)
		handle_filter(mi, prev);
	flush_inbody_header_accum(mi);
}

/* ---- the results -------------------------------------------------------- */

static void
cleanup_space(GString *sb)
{
	for (gsize pos = 0; pos < sb->len; pos++) {
		if (g_isspace((guchar)sb->str[pos])) {
			gsize cnt = 0;

			sb->str[pos] = ' ';
			while (pos + cnt + 1 < sb->len &&
			       g_isspace((guchar)sb->str[pos + cnt + 1]))
				cnt++;
			g_string_erase(sb, pos + 1, cnt);
		}
	}
}

static void
cleanup_subject(GString *subject)
{
	gsize at = 0;

	while (at < subject->len) {
		const char *pos;

		switch (subject->str[at]) {
		case 'r':
		case 'R':
			if (subject->len <= at + 3)
				goto out;
			if ((subject->str[at + 1] == 'e' ||
			     subject->str[at + 1] == 'E') &&
			    subject->str[at + 2] == ':') {
				g_string_erase(subject, at, 3);
				continue;
			}
			goto out;
		case ' ':
		case '\t':
		case ':':
			g_string_erase(subject, at, 1);
			continue;
		case '[':
			pos = strchr(subject->str + at, ']');
			if (pos == NULL)
				goto out;
			g_string_erase(subject, at, pos - (subject->str + at) + 1);
			continue;
		}
		break;
	}
out:
	trim(subject);
}

static void
get_sane_name(GString *out, const GString *name, const GString *email)
{
	const GString *src = name;

	if (!name->len || name->len > 60 || strpbrk(name->str, "@<>"))
		src = email;
	else if (name == out)
		return;
	if (src != out)
		g_string_assign(out, src->str);
}

static void
parse_bogus_from(Mi *mi, const GString *line)
{
	const char *bra, *ket;

	if (mi->email->len)
		return;
	bra = strchr(line->str, '<');
	if (bra == NULL)
		return;
	ket = strchr(bra, '>');
	if (ket == NULL)
		return;
	g_string_truncate(mi->email, 0);
	g_string_append_len(mi->email, bra + 1, ket - bra - 1);
	g_string_truncate(mi->name, 0);
	g_string_append_len(mi->name, line->str, bra - line->str);
	trim(mi->name);
	get_sane_name(mi->name, mi->name, mi->email);
}

static const char *
unquote_comment(GString *out, const char *in)
{
	gboolean literal = FALSE;
	int c;

	g_string_append_c(out, '(');
	while ((c = *in++) != 0) {
		if (literal) {
			literal = FALSE;
		} else if (c == '\\') {
			literal = TRUE;
			continue;
		} else if (c == '(') {
			in = unquote_comment(out, in);
			continue;
		} else if (c == ')') {
			g_string_append_c(out, ')');
			return in;
		}
		g_string_append_c(out, (char)c);
	}
	return in - 1;
}

static const char *
unquote_quoted_string(GString *out, const char *in)
{
	gboolean literal = FALSE;
	int c;

	while ((c = *in++) != 0) {
		if (literal) {
			literal = FALSE;
		} else if (c == '\\') {
			literal = TRUE;
			continue;
		} else if (c == '"') {
			return in;
		}
		g_string_append_c(out, (char)c);
	}
	return in - 1;
}

static void
unquote_quoted_pair(GString *line)
{
	g_autoptr(GString) out = g_string_sized_new(line->len);
	const char *in = line->str;
	int c;

	while ((c = *in++) != 0) {
		if (c == '"') {
			in = unquote_quoted_string(out, in);
			continue;
		}
		if (c == '(') {
			in = unquote_comment(out, in);
			continue;
		}
		g_string_append_c(out, (char)c);
	}
	g_string_assign(line, out->str);
}

static void
handle_from(Mi *mi, const GString *from)
{
	g_autoptr(GString) f = g_string_new(from->str);
	char *at;
	gsize el, start;

	unquote_quoted_pair(f);
	at = strchr(f->str, '@');
	if (at == NULL) {
		parse_bogus_from(mi, from);
		return;
	}
	if (mi->email->len && strchr(at + 1, '@'))
		return;
	while (at > f->str) {
		char c = at[-1];

		if (g_isspace((guchar)c))
			break;
		if (c == '<') {
			at[-1] = ' ';
			break;
		}
		at--;
	}
	el = strcspn(at, " \n\t\r\v\f>");
	g_string_truncate(mi->email, 0);
	g_string_append_len(mi->email, at, el);
	start = at - f->str;
	g_string_erase(f, start, el + (at[el] ? 1 : 0));
	cleanup_space(f);
	trim(f);
	if (f->len && f->str[0] == '(' && f->str[f->len - 1] == ')') {
		g_string_erase(f, 0, 1);
		g_string_truncate(f, f->len - 1);
	}
	get_sane_name(mi->name, f, mi->email);
}

/* git's strbuf_stripspace(sb, 0) */
static void
stripspace(GString *sb)
{
	g_autoptr(GString) out = g_string_sized_new(sb->len + 1);
	gsize empties = 0, i = 0;

	while (i < sb->len) {
		const char *line = sb->str + i;
		const char *eol = memchr(line, '\n', sb->len - i);
		gsize len = eol ? (gsize)(eol - line) + 1 : sb->len - i;
		gsize newlen = len;

		while (newlen && g_isspace((guchar)line[newlen - 1]))
			newlen--;
		if (newlen) {
			if (empties > 0 && out->len > 0)
				g_string_append_c(out, '\n');
			empties = 0;
			g_string_append_len(out, line, newlen);
			g_string_append_c(out, '\n');
		} else {
			empties++;
		}
		i += len;
	}
	g_string_assign(sb, out->str);
}

static void
gmime_init_once(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		g_mime_init();
		g_once_init_leave(&once, 1);
	}
}

/* The date as git's parse_date() would read it: RFC 2822 (with its
 * obsolete forms) through GMime, which is what mail carries. */
static gboolean
parse_date(const char *s, gint64 *out_time, int *out_tz)
{
	g_autoptr(GDateTime) dt = NULL;

	gmime_init_once();
	dt = g_mime_utils_header_decode_date(s);
	if (dt == NULL)
		return FALSE;
	*out_time = g_date_time_to_unix(dt);
	*out_tz = (int)(g_date_time_get_utc_offset(dt) / G_TIME_SPAN_MINUTE);
	return TRUE;
}

/* "+HHMM" or "-HHMM" at @s: minutes east of UTC */
static gboolean
parse_zone(const char *s, int *out_tz)
{
	if ((s[0] != '+' && s[0] != '-') || strlen(s) != 5 ||
	    !g_ascii_isdigit(s[1]) || !g_ascii_isdigit(s[2]) ||
	    !g_ascii_isdigit(s[3]) || !g_ascii_isdigit(s[4]))
		return FALSE;
	*out_tz = ((s[1] - '0') * 10 + (s[2] - '0')) * 60 +
		  (s[3] - '0') * 10 + (s[4] - '0');
	if (s[0] == '-')
		*out_tz = -*out_tz;
	return *out_tz > -24 * 60 && *out_tz < 24 * 60;
}

/* "[@]SECONDS[ +HHMM]" (git's own form; "@" makes the zone optional) */
static gboolean
parse_raw_date(const char *s, gint64 *out_time, int *out_tz)
{
	gboolean at = s[0] == '@';
	const char *p = s + at, *end;
	guint64 t;

	if (!g_ascii_isdigit(*p))
		return FALSE;
	t = g_ascii_strtoull(p, (char **)&end, 10);
	if (t > G_MAXINT64 / 2)
		return FALSE;
	*out_time = (gint64)t;
	*out_tz = 0;
	if (*end == '\0')
		return at;
	return *end == ' ' && parse_zone(end + 1, out_tz);
}

gboolean
pgate_apply_parse_date(const char *s, gint64 *out_time, int *out_tz,
		       GError **error)
{
	g_autofree char *v = g_strstrip(g_strdup(s ? s : ""));
	gsize n = strlen(v);
	g_autoptr(GDateTime) dt = NULL;

	if (parse_raw_date(v, out_time, out_tz))
		return TRUE;
	/* ISO 8601, a blank (not only a T) between date and time, and a
	 * zone git also reads as " +HHMM" */
	if (n > 6 && v[n - 6] == ' ' && parse_zone(v + n - 5, out_tz)) {
		g_autofree char *iso = g_strdup_printf("%.*s%.3s:%s", (int)(n - 6), v,
						       v + n - 5, v + n - 2);

		dt = g_date_time_new_from_iso8601(iso, NULL);
	} else if (strchr(v, ',') == NULL) {
		dt = g_date_time_new_from_iso8601(v, NULL);
	}
	if (dt == NULL && strchr(v, ',') != NULL &&
	    parse_date(v, out_time, out_tz))
		return TRUE;
	if (dt == NULL) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID,
			    "'%s' is not a date with a zone (\"SECONDS +HHMM\", "
			    "\"@SECONDS\", RFC 2822 or ISO 8601)", v);
		return FALSE;
	}
	*out_time = g_date_time_to_unix(dt);
	*out_tz = (int)(g_date_time_get_utc_offset(dt) / G_TIME_SPAN_MINUTE);
	return TRUE;
}

static void
mi_clear(Mi *mi)
{
	for (int i = 0; i < N_HDR; i++) {
		if (mi->p_hdr[i])
			g_string_free(mi->p_hdr[i], TRUE);
		if (mi->s_hdr[i])
			g_string_free(mi->s_hdr[i], TRUE);
	}
	for (int i = 0; i < MAX_BOUNDARIES; i++)
		if (mi->content[i])
			g_string_free(mi->content[i], TRUE);
	g_string_free(mi->charset, TRUE);
	g_string_free(mi->inbody_accum, TRUE);
	g_string_free(mi->log, TRUE);
	g_string_free(mi->patch, TRUE);
	g_string_free(mi->name, TRUE);
	g_string_free(mi->email, TRUE);
	g_free(mi->error);
}

/* mailsplit: CRLF -> LF on every line (unless keep_cr); leading blank
 * lines skipped. */
static GString *
mailsplit(const char *data, gsize len, gboolean keep_cr)
{
	GString *out = g_string_sized_new(len);
	gsize i = 0;

	while (i < len && g_isspace((guchar)data[i]))
		i++;
	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		gsize n = nl ? (gsize)(nl - (data + i)) + 1 : len - i;

		if (!keep_cr && n > 1 && data[i + n - 1] == '\n' &&
		    data[i + n - 2] == '\r') {
			g_string_append_len(out, data + i, n - 2);
			g_string_append_c(out, '\n');
		} else {
			g_string_append_len(out, data + i, n);
		}
		i += n;
	}
	return out;
}

static GString *
pick(Mi *mi, int i)
{
	if (mi->patch_lines && mi->s_hdr[i])
		return mi->s_hdr[i];
	return mi->p_hdr[i];
}

PgateMailinfo *
pgate_mailinfo_parse(GBytes *raw, gboolean keep_cr, GError **error)
{
	g_autoptr(PgateMailinfo) res = NULL;
	g_autoptr(GString) input = NULL;
	g_autoptr(GString) line = g_string_new(NULL);
	g_autoptr(GString) msg = g_string_new(NULL);
	Mi mi = { 0 };
	gsize len;
	const char *data = g_bytes_get_data(raw, &len);
	GString *h;

	g_return_val_if_fail(raw != NULL, NULL);
	if (len > PGATE_MAILINFO_MAX_BYTES) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_TOO_LARGE,
			    "mail of %" G_GSIZE_FORMAT " bytes is over the "
			    "limit of %u", len, PGATE_MAILINFO_MAX_BYTES);
		return NULL;
	}
	input = mailsplit(data ? data : "", len, keep_cr);
	if (input->len == 0) {
		g_set_error_literal(error, PGATE_APPLY_ERROR,
				    PGATE_ERROR_INVALID, "empty mail");
		return NULL;
	}
	mi.buf = input->str;
	mi.len = input->len;
	mi.charset = g_string_new(NULL);
	mi.inbody_accum = g_string_new(NULL);
	mi.log = g_string_new(NULL);
	mi.patch = g_string_new(NULL);
	mi.name = g_string_new(NULL);
	mi.email = g_string_new(NULL);
	mi.header_stage = TRUE;

	while (read_one_header_line(&mi, line))
		check_header(&mi, line, mi.p_hdr, TRUE);
	if (!mi.error)
		handle_body(&mi, line);

	res = g_new0(PgateMailinfo, 1);
	for (int i = 0; i < N_HDR && !mi.error; i++) {
		h = pick(&mi, i);
		if (h == NULL)
			continue;
		if (memchr(h->str, '\0', h->len)) {
			mi_fail(&mi, "a NUL byte in '%s' is not allowed",
				hdr_names[i]);
			break;
		}
		if (i == HDR_SUBJECT) {
			cleanup_subject(h);
			cleanup_space(h);
			res->subject = g_strdup(h->str);
		} else if (i == HDR_FROM) {
			cleanup_space(h);
			handle_from(&mi, h);
		} else {
			cleanup_space(h);
			res->date = g_strdup(h->str);
		}
	}
	if (!mi.error && memchr(mi.log->str, '\0', mi.log->len))
		mi_fail(&mi, "a NUL byte in the commit message");
	if (!mi.error && mi.email->len == 0)
		mi_fail(&mi, "the patch has no valid author e-mail address");
	if (mi.error) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID,
			    "%s", mi.error);
		mi_clear(&mi);
		return NULL;
	}
	res->author_name = g_strdup(mi.name->str);
	res->author_email = g_strdup(mi.email->str);
	if (res->subject == NULL)
		res->subject = g_strdup("");
	if (res->date != NULL)
		res->has_date = parse_date(res->date, &res->author_time,
					   &res->author_tz);
	/* git am: "Subject\n\n" + the message lines, stripspace'd */
	g_string_append(msg, res->subject);
	g_string_append(msg, "\n\n");
	g_string_append_len(msg, mi.log->str, mi.log->len);
	stripspace(msg);
	res->message = g_strdup(msg->str);
	res->diff = g_bytes_new(mi.patch->str, mi.patch->len);
	mi_clear(&mi);
	return g_steal_pointer(&res);
}

void
pgate_mailinfo_free(PgateMailinfo *mi)
{
	if (mi == NULL)
		return;
	g_free(mi->author_name);
	g_free(mi->author_email);
	g_free(mi->date);
	g_free(mi->subject);
	g_free(mi->message);
	if (mi->diff)
		g_bytes_unref(mi->diff);
	g_free(mi);
}
