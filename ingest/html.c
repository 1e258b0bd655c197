/* html.c - HTML to text, for the own text of a reply (parse.c,
 * pgate_mail_reply_own_text()).
 *
 * What a reader of an HTML-only reply sees as its text, as far as the
 * command is concerned: tags removed, character references decoded,
 * whitespace collapsed as a browser does (but in <pre>), line breaks at
 * <br> and the block elements (<p>, <div>, <li>, <tr>, ...), nothing of
 * <script>, <style>, <title>, comments and declarations, nothing inside
 * <blockquote> (where every client puts the quoted message).  Rendering
 * stops at an element that a client marks as holding the quote by its
 * class, id or style (quote_tokens), and at a tag or comment that is not
 * closed: what follows is not the replier's text, or not text.  The
 * quote markers of plain text (address.c) are applied to the result,
 * which catches the attribution that Apple Mail and Outlook write as
 * text above the quote.
 *
 * One pass over the input, which every step advances; the output is no
 * longer than the input (a reference is longer than what it decodes
 * to), and rendering stops after @max_lines line breaks.
 */
#include "ingest/ingest-private.h"

#include <string.h>


/* Substrings of a start tag (ASCII case aside) that mark the element
 * holding the quoted message [TAL html_quotations.py]. */
static const char *const quote_tokens[] = {
	"gmail_quote",                  /* Gmail: attribution and quote [TAL] */
	"moz-cite-prefix",              /* Thunderbird: the attribution */
	"yahoo_quoted",                 /* Yahoo Mail */
	"divrplyfwdmsg",                /* Outlook: the From/Sent block */
	"olk_src_body_section",         /* Outlook for Mac [TAL] */
	"border-top:solid #e1e1e1",     /* Outlook 2013 and later [TAL] */
	"border-top:solid #b5c4df",     /* Outlook 2007, 2010 [TAL] */
	"__divider__",                  /* Zimbra's <hr data-marker> [TAL] */
};

static const char *const break_elements[] = {
	"br", "p", "div", "tr", "li", "ul", "ol", "dl", "dt", "dd", "table",
	"h1", "h2", "h3", "h4", "h5", "h6", "hr", "address", "section",
	"article", "header", "footer", "center",
};

/* Elements whose content is no text a reader sees (raw text elements;
 * <textarea>'s is shown and not listed). */
static const char *const hidden_elements[] = {
	"script", "style", "title", "template", "xml",
};

/* The names of HTML 4's Latin-1 entities, U+00A0 to U+00FF in order. */
static const char *const latin1_entities[] = {
	"nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect",
	"uml", "copy", "ordf", "laquo", "not", "shy", "reg", "macr",
	"deg", "plusmn", "sup2", "sup3", "acute", "micro", "para", "middot",
	"cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
	"Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil",
	"Egrave", "Eacute", "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml",
	"ETH", "Ntilde", "Ograve", "Oacute", "Ocirc", "Otilde", "Ouml", "times",
	"Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute", "THORN", "szlig",
	"agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
	"egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml",
	"eth", "ntilde", "ograve", "oacute", "ocirc", "otilde", "ouml", "divide",
	"oslash", "ugrave", "uacute", "ucirc", "uuml", "yacute", "thorn", "yuml",
};
G_STATIC_ASSERT(G_N_ELEMENTS(latin1_entities) == 0x100 - 0xa0);

static const struct {
	const char *name;
	gunichar c;
} other_entities[] = {
	{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' },
	{ "apos", '\'' }, { "ensp", 0x2002 }, { "emsp", 0x2003 },
	{ "thinsp", 0x2009 }, { "zwnj", 0x200c }, { "zwj", 0x200d },
	{ "lrm", 0x200e }, { "rlm", 0x200f }, { "ndash", 0x2013 },
	{ "mdash", 0x2014 }, { "lsquo", 0x2018 }, { "rsquo", 0x2019 },
	{ "sbquo", 0x201a }, { "ldquo", 0x201c }, { "rdquo", 0x201d },
	{ "bdquo", 0x201e }, { "bull", 0x2022 }, { "hellip", 0x2026 },
	{ "euro", 0x20ac }, { "trade", 0x2122 },
};

typedef struct {
	GString *out;
	guint quote;        /* <blockquote> elements open */
	guint pre;          /* <pre> elements open */
	gboolean blank;     /* collapsed whitespace waits to be written */
	guint lines;        /* line breaks written */
} Html;

static void
html_break(Html *h)
{
	if (h->quote > 0)
		return;
	g_string_append_c(h->out, '\n');
	h->blank = FALSE;
	h->lines++;
}

/* Text of the document, references decoded. */
static void
html_text(Html *h, const char *s, gsize n)
{
	if (h->quote > 0)
		return;
	for (gsize i = 0; i < n; i++) {
		guchar c = s[i];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\f') {
			if (h->pre > 0 && c == '\n')
				html_break(h);
			else if (h->pre > 0)
				g_string_append_c(h->out, ' ');
			else
				h->blank = TRUE;
			continue;
		}
		if (h->blank && h->out->len > 0 &&
		    h->out->str[h->out->len - 1] != '\n')
			g_string_append_c(h->out, ' ');
		h->blank = FALSE;
		if (c == 0xc2 && i + 1 < n && (guchar)s[i + 1] == 0xa0) {
			/* U+00A0 is a blank that is not collapsed */
			g_string_append_c(h->out, ' ');
			i++;
			continue;
		}
		g_string_append_c(h->out, (char)c);
	}
}

/* A numeric character reference's value as HTML decodes it. */
static gunichar
html_numeric(guint64 v)
{
	if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0xfffd;
	if (v >= 0x80 && v < 0xa0 && pgate_ingest__cp1252_high[v - 0x80] != 0)
		return pgate_ingest__cp1252_high[v - 0x80];
	return (gunichar)v;
}

static gboolean
html_named(const char *name, gunichar *out)
{
	for (gsize i = 0; i < G_N_ELEMENTS(latin1_entities); i++)
		if (strcmp(name, latin1_entities[i]) == 0) {
			*out = 0xa0 + (gunichar)i;
			return TRUE;
		}
	for (gsize i = 0; i < G_N_ELEMENTS(other_entities); i++)
		if (strcmp(name, other_entities[i].name) == 0) {
			*out = other_entities[i].c;
			return TRUE;
		}
	return FALSE;
}

/* The reference at @p ('&'); returns where the text goes on.  One that
 * is not known is text ("&" and what follows). */
static const char *
html_entity(Html *h, const char *p, const char *end)
{
	const char *q = p + 1;
	gunichar c = 0;
	char u[6];

	if (q < end && *q == '#') {
		gboolean hex = q + 1 < end && (q[1] == 'x' || q[1] == 'X');
		const char *d = q + (hex ? 2 : 1), *digits = d;
		guint64 v = 0;

		for (; d < end && (hex ? g_ascii_isxdigit(*d) : g_ascii_isdigit(*d));
		     d++)
			if (v <= 0x10ffff)      /* saturates: U+FFFD */
				v = v * (hex ? 16 : 10) +
				    (guint64)(hex ? g_ascii_xdigit_value(*d)
						  : *d - '0');
		if (d == digits)
			goto text;
		if (d < end && *d == ';')
			d++;
		c = html_numeric(v);
		q = d;
	} else {
		char name[12];
		gsize n = 0;

		while (q < end && g_ascii_isalnum(*q)) {
			if (n == sizeof name - 1)
				goto text;
			name[n++] = *q++;
		}
		name[n] = '\0';
		if (n == 0 || !html_named(name, &c))
			goto text;
		if (q < end && *q == ';')
			q++;
		else if (strcmp(name, "amp") != 0 && strcmp(name, "lt") != 0 &&
			 strcmp(name, "gt") != 0 && strcmp(name, "quot") != 0 &&
			 strcmp(name, "nbsp") != 0)
			goto text;      /* only these five without ';' */
	}
	html_text(h, u, (gsize)g_unichar_to_utf8(c, u));
	return q;

text:
	html_text(h, "&", 1);
	return p + 1;
}

/* After the tag at @p ('<'), quoted attribute values skipped; NULL when
 * it is not closed. */
static const char *
html_tag_end(const char *p, const char *end)
{
	char quote = 0;
	gboolean value = FALSE;     /* after '=': a quote opens a value */

	for (p++; p < end; p++) {
		char c = *p;

		if (quote != 0) {
			if (c == quote)
				quote = 0;
		} else if (c == '>') {
			return p + 1;
		} else if ((c == '"' || c == '\'') && value) {
			quote = c;
			value = FALSE;
		} else if (c == '=') {
			value = TRUE;
		} else if (!g_ascii_isspace(c)) {
			value = FALSE;
		}
	}
	return NULL;
}

/* After the end tag of raw text element @name at or after @p; NULL when
 * there is none. */
static const char *
html_skip_raw(const char *p, const char *end, const char *name)
{
	gsize m = strlen(name);

	for (; (gsize)(end - p) >= m + 2; p++)
		if (p[0] == '<' && p[1] == '/' &&
		    g_ascii_strncasecmp(p + 2, name, m) == 0 &&
		    (p + 2 + m == end || !g_ascii_isalnum(p[2 + m])))
			return html_tag_end(p, end);
	return NULL;
}

static gboolean
html_has_token(const char *p, gsize n)
{
	for (gsize t = 0; t < G_N_ELEMENTS(quote_tokens); t++) {
		gsize m = strlen(quote_tokens[t]);

		for (gsize i = 0; i + m <= n; i++)
			if (g_ascii_strncasecmp(p + i, quote_tokens[t], m) == 0)
				return TRUE;
	}
	return FALSE;
}

static gboolean
name_in(const char *name, const char *const *names, gsize count)
{
	for (gsize i = 0; i < count; i++)
		if (strcmp(name, names[i]) == 0)
			return TRUE;
	return FALSE;
}

/* The markup at @p ('<'); returns where the text goes on, NULL where
 * rendering stops. */
static const char *
html_tag(Html *h, const char *p, const char *end)
{
	const char *q = p + 1, *e;
	gboolean closing = FALSE;
	char name[16];
	gsize n = 0;

	if (q < end && *q == '!') {
		if (end - q >= 3 && memcmp(q, "!--", 3) == 0) {
			e = memmem(q + 3, (gsize)(end - q - 3), "-->", 3);
			return e != NULL ? e + 3 : NULL;
		}
		if (end - q >= 8 && memcmp(q, "![CDATA[", 8) == 0) {
			e = memmem(q + 8, (gsize)(end - q - 8), "]]>", 3);
			return e != NULL ? e + 3 : NULL;
		}
	}
	if (q < end && (*q == '!' || *q == '?')) {
		e = memchr(q, '>', (gsize)(end - q));
		return e != NULL ? e + 1 : NULL;
	}
	if (q < end && *q == '/') {
		closing = TRUE;
		q++;
	}
	if (q >= end || !g_ascii_isalpha(*q)) {
		html_text(h, "<", 1);
		return p + 1;
	}
	while (q < end && g_ascii_isalnum(*q) && n < sizeof name - 1)
		name[n++] = g_ascii_tolower(*q++);
	name[n] = '\0';
	if (q < end && g_ascii_isalnum(*q))
		name[0] = '\0';         /* longer than any name below */
	e = html_tag_end(p, end);
	if (e == NULL)
		return NULL;
	if (!closing && html_has_token(p, (gsize)(e - p)))
		return NULL;
	if (!closing && name_in(name, hidden_elements,
				G_N_ELEMENTS(hidden_elements)))
		return html_skip_raw(e, end, name);
	if (strcmp(name, "blockquote") == 0) {
		if (closing && h->quote > 0)
			h->quote--;
		html_break(h);
		if (!closing)
			h->quote++;
	} else if (strcmp(name, "pre") == 0) {
		html_break(h);
		if (closing && h->pre > 0)
			h->pre--;
		else if (!closing)
			h->pre++;
	} else if (name_in(name, break_elements, G_N_ELEMENTS(break_elements))) {
		html_break(h);
	} else if (strcmp(name, "td") == 0 || strcmp(name, "th") == 0) {
		h->blank = TRUE;
	}
	return e;
}

char *
pgate_ingest__html_to_text(const char *s, gsize len, guint max_lines)
{
	Html h = { g_string_sized_new(MIN(len, 4096)), 0, 0, FALSE, 0 };
	const char *p = s, *end = s + len;

	while (p != NULL && p < end && h.lines <= max_lines) {
		if (*p == '<') {
			p = html_tag(&h, p, end);
		} else if (*p == '&') {
			p = html_entity(&h, p, end);
		} else {
			const char *q = p;

			while (q < end && *q != '<' && *q != '&')
				q++;
			html_text(&h, p, (gsize)(q - p));
			p = q;
		}
	}
	return g_string_free(h.out, FALSE);
}
