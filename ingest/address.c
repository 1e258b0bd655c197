/* address.c - what a trust decision reads from a raw message, strictly.
 *
 * The record's from_email comes from GMime's address parser, which is
 * made to read whatever mail says: it takes the inner address of
 * "a@trusted.org@evil.net", of "undisclosed:; a@trusted.org" and of
 * "<a@trusted.org>x@evil.net", where the MTA's SPF, DKIM and DMARC checks
 * saw evil.net.  That is right for showing who sent a mail and wrong for
 * deciding whose code runs.  So the trust decision reads the raw header
 * here, with a grammar that is a strict subset of RFC 5322's and leaves
 * no room for two readings:
 *
 *  - pgate_mail_header_values(): the unfolded raw values of the fields of
 *    one name, top to bottom;
 *  - pgate_mail_address_strict(): exactly one mailbox;
 *  - pgate_mail_auth_results_pass(): what an Authentication-Results field
 *    (RFC 8601) says about a domain;
 *  - pgate_mail_body_own_text(): a reply's own words, without what it
 *    quotes.
 *
 * Pure functions over bytes: no GMime, no store.  Every input is bounded
 * by its caller (the header scanner by its arguments and
 * MAX_HEADER_BLOCK); nothing here recurses deeper than MAX_COMMENT_DEPTH.
 */
#include "ingest/ingest-private.h"

#include <string.h>

#define MAX_HEADER_BLOCK (1024u * 1024)
#define MAX_COMMENT_DEPTH 8
#define MAX_LOCAL_PART 64       /* RFC 5321 4.5.3.1.1 */
#define MAX_DOMAIN 253
#define MAX_LABEL 63

/* ---- header fields ---------------------------------------------------- */

/* The field name of the line @p..@end (up to a ':', blanks before it
 * allowed as RFC 5322's obsolete syntax does); its length, 0 when the line
 * is not a field.  *@out_value: the first byte after the ':'. */
static gsize
field_name(const char *p, const char *end, const char **out_value)
{
	const char *q = p;
	gsize n;

	while (q < end && *q > ' ' && *q < 127 && *q != ':')
		q++;
	n = q - p;
	while (q < end && pgate_ingest__is_wsp(*q))
		q++;
	if (n == 0 || q >= end || *q != ':')
		return 0;
	*out_value = q + 1;
	return n;
}

GPtrArray *
pgate_mail_header_values(const char *raw, gsize len, const char *name,
			 guint max_values, gsize max_len, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GString) cur = NULL;   /* the field being read, when wanted */
	const char *p = raw, *end = raw + len;
	gsize nlen = strlen(name);

	g_return_val_if_fail(raw != NULL || len == 0, NULL);
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl != NULL ? nl : end;
		const char *value = NULL;

		if ((gsize)(p - raw) >= MAX_HEADER_BLOCK) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_TOO_LARGE,
				    "header block over %u bytes",
				    MAX_HEADER_BLOCK);
			return NULL;
		}
		if (le > p && le[-1] == '\r')
			le--;
		if (le == p)
			break;          /* the blank line: the body follows */
		if (pgate_ingest__is_wsp(*p)) {
			/* a continuation: unfolding keeps its blanks */
			value = p;
		} else {
			gsize n;

			if (cur != NULL)
				g_ptr_array_add(out, g_string_free(
					g_steal_pointer(&cur), FALSE));
			n = field_name(p, le, &value);
			if (n != nlen || g_ascii_strncasecmp(p, name, n) != 0 ||
			    out->len >= max_values)
				value = NULL;
			else
				cur = g_string_new(NULL);
		}
		if (cur != NULL && value != NULL) {
			if (memchr(value, '\0', le - value) != NULL) {
				g_set_error(error, PGATE_INGEST_ERROR,
					    PGATE_ERROR_INVALID,
					    "a NUL byte in the %s field", name);
				return NULL;
			}
			if (cur->len + (le - value) > max_len) {
				g_set_error(error, PGATE_INGEST_ERROR,
					    PGATE_ERROR_TOO_LARGE,
					    "the %s field is over %" G_GSIZE_FORMAT
					    " bytes", name, max_len);
				return NULL;
			}
			g_string_append_len(cur, value, le - value);
		}
		p = nl != NULL ? nl + 1 : end;
	}
	if (cur != NULL)
		g_ptr_array_add(out, g_string_free(g_steal_pointer(&cur), FALSE));
	return g_steal_pointer(&out);
}

/* ---- one mailbox -------------------------------------------------------
 *
 * What is accepted (RFC 5322 3.4, narrowed):
 *
 *   value     = [CFWS] ( addr-spec / [phrase] "<" addr-spec ">" ) [CFWS]
 *   addr-spec = dot-atom-text "@" domain         (no CFWS inside)
 *   domain    = label *("." label), label = letters, digits, '-'
 *   phrase    = word *(word / ".")   word = atom / quoted-string
 *
 * Refused although RFC 5322 has them: groups ("undisclosed:;"), lists
 * (","), quoted local parts ("\"a@b\"@c"), domain literals, comments or
 * blanks inside the addr-spec or its angle brackets, routes, and '@', '<'
 * or '>' in a name or a comment: a reader that looks for the first "<" or
 * the last "@" (some do) must not find another address than this one.
 * Bytes over 127 (RFC 6532's UTF-8) only in names and comments.
 */

static gboolean
is_atext(guchar c)
{
	return g_ascii_isalnum(c) || (c != '\0' && strchr("!#$%&'*+-/=?^_`{|}~",
							  c) != NULL);
}

static gboolean
addr_fail(GError **error, const char *start, const char *at,
	  const char *what)
{
	g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
		    "not one plain mailbox: %s at byte %d", what,
		    (int)(at - start));
	return FALSE;
}

/* Characters a name or comment may hold besides its syntax: printable
 * ASCII and UTF-8, but no '@', '<' or '>' (see above). */
static gboolean
is_name_text(guchar c)
{
	return (c > ' ' && c < 127 && c != '@' && c != '<' && c != '>') ||
	       c >= 0x80;
}

/* Skips blanks and comments.  FALSE on a comment that is not closed, too
 * deep, or holds what a name may not. */
static gboolean
skip_cfws(const char **pp, const char *start, GError **error)
{
	const char *p = *pp;

	for (;;) {
		int depth = 0;

		while (pgate_ingest__is_wsp(*p))
			p++;
		if (*p != '(')
			break;
		do {
			guchar c = *p;

			if (c == '(') {
				if (++depth > MAX_COMMENT_DEPTH)
					return addr_fail(error, start, p,
							 "comments nested too deep");
			} else if (c == ')') {
				depth--;
			} else if (c == '\\') {
				p++;
				if (!is_name_text(*p) && !pgate_ingest__is_wsp(*p))
					return addr_fail(error, start, p,
							 "a bad quoted pair in a comment");
			} else if (c == '\0') {
				return addr_fail(error, start, p,
						 "a comment not closed");
			} else if (!is_name_text(c) && !pgate_ingest__is_wsp(c)) {
				return addr_fail(error, start, p,
						 "a character a comment may not hold");
			}
			p++;
		} while (depth > 0);
	}
	*pp = p;
	return TRUE;
}

/* A quoted-string of a display name. */
static gboolean
skip_quoted(const char **pp, const char *start, GError **error)
{
	const char *p = *pp + 1;

	for (; *p != '"'; p++) {
		guchar c = *p;

		if (c == '\\') {
			p++;
			c = *p;
			if (!is_name_text(c) && !pgate_ingest__is_wsp(c) &&
			    c != '"' && c != '\\')
				return addr_fail(error, start, p,
						 "a bad quoted pair in a name");
		} else if (c == '\0') {
			return addr_fail(error, start, p,
					 "a quoted name not closed");
		} else if (!is_name_text(c) && !pgate_ingest__is_wsp(c)) {
			return addr_fail(error, start, p,
					 "a character a name may not hold");
		}
	}
	*pp = p + 1;
	return TRUE;
}

/* local-part "@" domain from *@pp, no blanks; sets *@pp past it and
 * returns its length, 0 (with @error) when it is not one. */
static gsize
scan_addr_spec(const char **pp, const char *start, GError **error)
{
	const char *p = *pp, *s = *pp, *label;
	gsize n;

	/* dot-atom-text */
	for (;;) {
		const char *w = p;

		while (is_atext(*p))
			p++;
		if (p == w)
			return addr_fail(error, start, p, *p == '"'
					 ? "a quoted local part"
					 : "an empty word in the local part");
		if (*p != '.')
			break;
		p++;
	}
	if ((gsize)(p - s) > MAX_LOCAL_PART)
		return addr_fail(error, start, p, "a local part too long");
	if (*p != '@')
		return addr_fail(error, start, p, "no '@' after the local part");
	s = ++p;
	for (;;) {
		label = p;
		while (g_ascii_isalnum(*p) || *p == '-')
			p++;
		if (p == label)
			return addr_fail(error, start, p, *p == '['
					 ? "a domain literal"
					 : "an empty label in the domain");
		if (p - label > MAX_LABEL || *label == '-' || p[-1] == '-')
			return addr_fail(error, start, label,
					 "a bad label in the domain");
		if (*p != '.')
			break;
		p++;
	}
	if ((gsize)(p - s) > MAX_DOMAIN)
		return addr_fail(error, start, p, "a domain too long");
	n = p - *pp;
	*pp = p;
	return n;
}

/* After the address: nothing but blanks and comments. */
static gboolean
expect_end(const char *p, const char *start, GError **error)
{
	if (!skip_cfws(&p, start, error))
		return FALSE;
	if (*p == '\0')
		return TRUE;
	return addr_fail(error, start, p, *p == '@'
			 ? "a second '@'"
			 : *p == ','
			 ? "more than one address"
			 : "text after the address");
}

static char *
addr_copy(const char *addr, gsize len)
{
	char *s = g_strndup(addr, len);
	char *at = strchr(s, '@');

	for (char *q = at; *q != '\0'; q++)
		*q = g_ascii_tolower(*q);
	return s;
}

char *
pgate_mail_address_strict(const char *value, GError **error)
{
	const char *p = value, *addr;
	gsize n;
	guint words = 0;

	g_return_val_if_fail(value != NULL, NULL);
	if (!skip_cfws(&p, value, error))
		return NULL;
	if (*p == '\0') {
		addr_fail(error, value, p, "no address");
		return NULL;
	}
	/* addr-spec alone */
	if (*p != '<' && *p != '"') {
		const char *q = p;
		g_autoptr(GError) local = NULL;

		addr = q;
		n = scan_addr_spec(&q, value, &local);
		if (n > 0) {
			if (!expect_end(q, value, error))
				return NULL;
			return addr_copy(addr, n);
		}
	}
	/* [phrase] angle-addr */
	for (;;) {
		if (!skip_cfws(&p, value, error))
			return NULL;
		if (*p == '<')
			break;
		if (*p == '"') {
			if (!skip_quoted(&p, value, error))
				return NULL;
		} else if (*p == '.' && words > 0) {
			p++;            /* obs-phrase: "J. Random Hacker" */
		} else if (is_atext(*p) || (guchar)*p >= 0x80) {
			while (is_atext(*p) || (guchar)*p >= 0x80)
				p++;
		} else {
			addr_fail(error, value, p, *p == ':'
				  ? "a group"
				  : *p == '\0'
				  ? "no address"
				  : *p == '@'
				  ? "an '@' outside the address"
				  : *p == ','
				  ? "more than one address"
				  : "a character a name may not hold");
			return NULL;
		}
		words++;
	}
	addr = ++p;
	n = scan_addr_spec(&p, value, error);
	if (n == 0)
		return NULL;
	if (*p != '>') {
		addr_fail(error, value, p, *p == '@'
			  ? "a second '@'" : "no '>' right after the address");
		return NULL;
	}
	if (!expect_end(p + 1, value, error))
		return NULL;
	return addr_copy(addr, n);
}

/* ---- Authentication-Results (RFC 8601 2.2) ----------------------------
 *
 *   value   = [CFWS] authserv-id [CFWS version] (";" "none" / 1*resinfo)
 *   resinfo = [CFWS] ";" [CFWS] method ["/" version] [CFWS] "=" [CFWS]
 *             result *(CFWS prop)
 *   prop    = ptype "." property [CFWS] "=" [CFWS] pvalue
 *
 * Comments may hold anything here (they are not read).  A field this
 * cannot read says nothing: that is a "no", never a guess.
 */

/* Skips blanks and comments of any content. */
static void
ar_skip(const char **pp)
{
	const char *p = *pp;

	for (;;) {
		int depth = 0;

		while (g_ascii_isspace(*p))
			p++;
		if (*p != '(')
			break;
		do {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '(')
				depth++;
			else if (*p == ')')
				depth--;
			else if (*p == '\0')
				break;
			p++;
		} while (depth > 0);
	}
	*pp = p;
}

/* An RFC 2045 token. */
static gboolean
is_token(guchar c)
{
	return c > ' ' && c < 127 && strchr("()<>@,;:\\\"/[]?=", c) == NULL;
}

/* A value: a token or a quoted-string, unquoted.  A property's value is
 * read up to a blank, ';' or '(' whatever it holds: MTAs write
 * "header.i=@kernel.org" and "header.b=ab/c+d=" unquoted.  NULL when
 * there is none. */
static char *
ar_value(const char **pp, gboolean pvalue)
{
	const char *p = *pp;
	GString *s;

	if (*p == '"') {
		s = g_string_new(NULL);
		for (p++; *p != '"'; p++) {
			if (*p == '\0') {
				g_string_free(s, TRUE);
				return NULL;
			}
			if (*p == '\\' && p[1] != '\0')
				p++;
			g_string_append_c(s, *p);
		}
		*pp = p + 1;
		return g_string_free(s, FALSE);
	}
	while (pvalue ? (*p > ' ' && *p < 127 && *p != ';' && *p != '(' &&
			 *p != '"')
		      : is_token(*p))
		p++;
	if (p == *pp)
		return NULL;
	s = g_string_new_len(*pp, p - *pp);
	*pp = p;
	return g_string_free(s, FALSE);
}

static gboolean
ar_fail(GError **error, const char *what)
{
	g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
		    "Authentication-Results: %s", what);
	return FALSE;
}

gboolean
pgate_mail_auth_results_pass(const char *value, const char *authserv_id,
			     const char *domain, GError **error)
{
	const char *p = value;
	g_autofree char *id = NULL;
	gboolean pass = FALSE;

	g_return_val_if_fail(value != NULL && authserv_id != NULL &&
			     domain != NULL, FALSE);
	ar_skip(&p);
	id = ar_value(&p, FALSE);
	if (id == NULL)
		return ar_fail(error, "no authserv-id");
	if (g_ascii_strcasecmp(id, authserv_id) != 0)
		return ar_fail(error, "the topmost field is not the local "
			       "MTA's (another authserv-id)");
	ar_skip(&p);
	while (g_ascii_isdigit(*p))
		p++;                    /* the version */
	for (;;) {
		g_autofree char *method = NULL, *result = NULL;
		gboolean dkim, dmarc, good;

		ar_skip(&p);
		if (*p == '\0')
			break;
		if (*p != ';')
			return ar_fail(error, "cannot be read");
		p++;
		ar_skip(&p);
		method = ar_value(&p, FALSE);
		if (method == NULL)
			return ar_fail(error, "cannot be read");
		ar_skip(&p);
		if (*p == '/') {        /* method version */
			p++;
			ar_skip(&p);
			while (g_ascii_isdigit(*p))
				p++;
			ar_skip(&p);
		}
		if (*p != '=') {
			if (g_ascii_strcasecmp(method, "none") == 0)
				continue;   /* no-result */
			return ar_fail(error, "cannot be read");
		}
		p++;
		ar_skip(&p);
		result = ar_value(&p, FALSE);
		if (result == NULL)
			return ar_fail(error, "cannot be read");
		dkim = g_ascii_strcasecmp(method, "dkim") == 0;
		dmarc = g_ascii_strcasecmp(method, "dmarc") == 0;
		good = g_ascii_strcasecmp(result, "pass") == 0;
		for (;;) {
			g_autofree char *prop = NULL, *v = NULL;

			ar_skip(&p);
			if (*p == ';' || *p == '\0')
				break;
			prop = ar_value(&p, FALSE);
			if (prop == NULL)
				return ar_fail(error, "cannot be read");
			ar_skip(&p);
			if (*p != '=')
				return ar_fail(error, "cannot be read");
			p++;
			ar_skip(&p);
			v = ar_value(&p, TRUE);
			if (v == NULL)
				return ar_fail(error, "cannot be read");
			if (good && g_ascii_strcasecmp(v, domain) == 0 &&
			    ((dkim && g_ascii_strcasecmp(prop, "header.d") == 0) ||
			     (dmarc && g_ascii_strcasecmp(prop, "header.from") == 0)))
				pass = TRUE;
		}
	}
	if (!pass)
		return ar_fail(error, "no dkim=pass header.d or dmarc=pass "
			       "header.from for the From domain");
	return TRUE;
}

/* ---- a reply's own words ---------------------------------------------- */

static gboolean
ends_with_ci(const char *s, gsize len, const char *suffix)
{
	gsize n = strlen(suffix);

	return len >= n && g_ascii_strncasecmp(s + len - n, suffix, n) == 0;
}

static gboolean
starts_with_ci(const char *s, gsize len, const char *prefix)
{
	gsize n = strlen(prefix);

	return len >= n && g_ascii_strncasecmp(s, prefix, n) == 0;
}

typedef struct {
	const char *p;      /* the line without its surrounding blanks */
	gsize len;
} Line;

/* "-----Original Message-----", "---------- Forwarded message ---------"
 * and their spacings. */
static gboolean
is_separator(Line l)
{
	const char *p = l.p, *e = l.p + l.len;

	if (!starts_with_ci(l.p, l.len, "--"))
		return FALSE;
	while (p < e && (*p == '-' || *p == ' '))
		p++;
	while (e > p && (e[-1] == '-' || e[-1] == ' '))
		e--;
	return ((gsize)(e - p) == 16 &&
		g_ascii_strncasecmp(p, "Original Message", 16) == 0) ||
	       ((gsize)(e - p) == 17 &&
		g_ascii_strncasecmp(p, "Forwarded message", 17) == 0);
}

/* Outlook's "From: / Sent: / To: / Subject:" block (also with "*From:*",
 * as its plain text writes bold): "From:" and one of the next three lines
 * "Sent:" or "Date:". */
static gboolean
is_header_word(Line l, const char *word)
{
	if (l.len > 0 && l.p[0] == '*') {
		l.p++;
		l.len--;
	}
	return starts_with_ci(l.p, l.len, word);
}

static gboolean
quote_starts(const Line *lines, guint i, guint n)
{
	Line l = lines[i];

	if (ends_with_ci(l.p, l.len, "wrote:") || is_separator(l) ||
	    (l.len == 24 && g_ascii_strncasecmp(l.p, "Begin forwarded message:",
						24) == 0))
		return TRUE;
	/* "On Mon, 2 Dec 2024, A. U. Thor <a@example.org>" + "wrote:" */
	if (starts_with_ci(l.p, l.len, "On "))
		for (guint j = i + 1; j < n && j <= i + 2; j++)
			if (ends_with_ci(lines[j].p, lines[j].len, "wrote:"))
				return TRUE;
	if (is_header_word(l, "From:"))
		for (guint j = i + 1; j < n && j <= i + 3; j++)
			if (is_header_word(lines[j], "Sent:") ||
			    is_header_word(lines[j], "Date:"))
				return TRUE;
	return FALSE;
}

char *
pgate_mail_body_own_text(const char *body, guint max_lines)
{
	g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(Line));
	GString *out = g_string_new(NULL);
	const char *p = body;

	while (p != NULL && *p != '\0' && lines->len < max_lines) {
		const char *nl = strchr(p, '\n');
		const char *e = nl != NULL ? nl : p + strlen(p);
		Line l = { p, 0 };

		while (l.p < e && g_ascii_isspace(*l.p))
			l.p++;
		while (e > l.p && g_ascii_isspace(e[-1]))
			e--;
		l.len = e - l.p;
		g_array_append_val(lines, l);
		p = nl != NULL ? nl + 1 : NULL;
	}
	for (guint i = 0; i < lines->len; i++) {
		Line l = g_array_index(lines, Line, i);

		if (quote_starts((const Line *)(void *)lines->data, i,
				 lines->len))
			break;
		if (l.len > 0 && l.p[0] == '>')
			continue;
		g_string_append_len(out, l.p, l.len);
		g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}
