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

/* ---- a reply's own words ----------------------------------------------
 *
 * The own text ends at the first line that starts a quoted message.
 * Mail clients write those lines in their user's language, so the
 * markers are tables by language; each entry names the client that
 * writes it and where the string was read (docs/pipeline.md, "Which
 * replies count", lists them):
 *
 *  [TB]   Thunderbird's localisations, thunderbird/thunderbird-l10n:
 *         LOCALE/mail/chrome/messenger/messengercompose/composeMsgs.properties
 *         (mailnews.reply_header_*, mailnews.forward_header_originalmessage)
 *         and LOCALE/mail/messenger/messageheader/headerFields.ftl;
 *  [EFP]  crisp-oss/email-forward-parser, lib/parser.js: Apple Mail's,
 *         Outlook's, Gmail's, Yahoo's and HubSpot's forward separators
 *         and header words, by locale;
 *  [ERP]  crisp-oss/email-reply-parser, lib/regex.ts: reply headers;
 *  [TAL]  mailgun/talon, talon/quotations.py (and html_quotations.py for
 *         the HTML markers in parse.c);
 *  [MPR]  alfonsrv/mail-parser-reply, mailparser_reply/constants.py:
 *         Outlook's header words by language, Gmail's Chinese and
 *         Japanese attributions;
 *  [LKML] seen in replies on the kernel's lists (lore.kernel.org), not
 *         from the vendor.
 *
 * A marker missing from the tables still ends the own text when it has
 * the shape every attribution has: a line that ends in ':' and names an
 * e-mail address ("2024年12月2日(月) 10:00 A <a@example.org>:", "Am Mo.,
 * 2. Dez. 2024 um 10:00 Uhr schrieb A <a@example.org>:").  A line of the
 * replier's own that looks so ("ask alice@example.org:") is then taken
 * for a quote: the rule fails closed, as every rule here does, for a line
 * wrongly taken for a marker only means that a command written below it
 * does not count, while a marker missed lets a quoted command count.
 *
 * Lines are compared folded (fold_line()): the blanks clients vary (no-
 * break, narrow and ideographic spaces) as ' ', the full-width colon
 * U+FF1A as ':', the typographic apostrophe as '\'', zero-width
 * characters and byte order marks dropped, ASCII case aside.  Each line
 * is looked at once, in time linear in its length (the tables are
 * short), so a body of any size costs what its bytes cost.
 */

/* What a folded line is, for quote_starts(). */
enum {
	MARK_QUOTE = 1 << 0,    /* starts a quote by itself */
	MARK_ATTR = 1 << 1,     /* an attribution ("On DATE, A wrote:") */
	MARK_OPENER = 1 << 2,   /* may begin one wrapped over lines ("On ") */
	MARK_FROM = 1 << 3,     /* a quoted header field naming the sender */
	MARK_DATE = 1 << 4,     /* ... the date it was sent */
};

/* Words that make a line ending in ':' an attribution, as a word (Latin
 * script) or anywhere (CJK).  The word, not the whole line, is matched:
 * the date and the name between vary with the client and its version. */
static const char *const attribution_words[] = {
	/* en: Gmail, Apple Mail, Outlook for Mac, Thunderbird (en and ja:
	 * "On DATE TIME, A wrote:", "A wrote:") [TB][EFP][TAL] */
	"wrote",
	/* de: "Am DATE um TIME schrieb A:", "A schrieb am DATE um TIME:",
	 * "A schrieb:" (Thunderbird), Gmail's "Am DATE um TIME Uhr schrieb
	 * A <a@b>:", Outlook's "Am DATE schrieb \"A\" <a@b>:" [TB][EFP][ERP] */
	"schrieb",
	/* fr: "Le DATE à TIME, A a écrit :", "A a écrit le DATE à TIME :"
	 * (Thunderbird), Outlook's "Le DATE, « A » <a@b> a écrit :" [TB][EFP] */
	"a écrit",
	/* es: "El DATE a las TIME, A escribió:", "A escribió el DATE:" [TB][EFP] */
	"escribió",
	/* it: "Il DATE TIME, A ha scritto:" (Thunderbird), "Il giorno DATE
	 * \"A\" <a@b> ha scritto:" (Outlook, Gmail) [TB][EFP][ERP] */
	"ha scritto",
	/* pt: "Em DATE TIME, A escreveu:" (pt-BR), "Às TIME de DATE, A
	 * escreveu:" (pt-PT), "A escreveu em DATE:" [TB][EFP] */
	"escreveu",
	/* nl: "Op DATE om TIME schreef A:", "A schreef op DATE om TIME:"
	 * (Thunderbird); Outlook's "Op DATE heeft A <a@b> geschreven:"
	 * [TB][EFP][TAL] */
	"schreef", "geschreven",
	/* zh-CN: "在 DATE TIME, A 写道:", "A 写于 DATE TIME:" (Thunderbird),
	 * Gmail's "A <a@b> 于DATE写道：" [TB][ERP][MPR] */
	"写道", "写于",
	/* zh-TW: "A 於 DATE TIME 寫道:" (Thunderbird) [TB] */
	"寫道",
	/* ja: Apple Mail's "DATE、A のメッセージ:" [ERP]; and its
	 * "DATE、A <a@b>のメール:" (the address rule takes it too) */
	"のメッセージ", "のメール",
	/* beyond the nine languages, what the sources list as well: da, no,
	 * sv "skrev", pl "napisał", cs "napsal(a)", fi "kirjoitti", ru
	 * "написал(а)", vi "đã viết" [TAL][ERP][EFP] */
	"skrev", "napisał", "napsal", "kirjoitti", "написал", "đã viết",
};

/* Words an attribution begins with; a client may wrap it, so that the
 * line with the word and the one ending in ':' are apart (up to two
 * lines; the existing "On ... wrote:" rule, in every language). */
static const char *const attribution_openers[] = {
	"On",           /* en [TB][ERP] */
	"Am",           /* de [TB][ERP] */
	"Le",           /* fr [TB][ERP] */
	"El",           /* es [TB][ERP] */
	"Il",           /* it [TB][ERP]; "Il giorno" (Outlook) [EFP] */
	"Em", "Às",     /* pt-BR, pt-PT [TB][ERP] */
	"Op",           /* nl [TB][ERP] */
	"在",           /* zh-CN [TB][ERP] */
	"W dniu", "Dnia", "Den", "Dne",   /* pl, da/sv, cs [TAL][ERP][EFP] */
};

/* What a separator line says between its dashes:
 * "-----Original Message-----" (Outlook), "-------- Original-Nachricht
 * --------" (Thunderbird), "---------- Forwarded message ---------"
 * (Gmail), "----- Forwarded Message -----" (Yahoo), any spacing. */
static const char *const separator_phrases[] = {
	/* en: Outlook, Thunderbird, Gmail, Yahoo [TAL][EFP][TB] */
	"Original Message", "Forwarded message", "Reply Message",
	/* de: Outlook; Thunderbird, Yahoo [TAL][ERP][TB][EFP] */
	"Ursprüngliche Nachricht", "Original-Nachricht",
	"Weitergeleitete Nachricht", "Antwort Nachricht",
	/* fr: Outlook; Thunderbird; Yahoo [ERP][TB][EFP] */
	"Message d'origine", "Message original", "Message transféré",
	"Message transmis",
	/* es, it, pt, nl: Outlook and Thunderbird; their forwards [TB][EFP] */
	"Mensaje original", "Mensaje reenviado",
	"Messaggio originale", "Messaggio inoltrato",
	"Mensagem original", "Mensagem reencaminhada", "Mensagem encaminhada",
	"Oorspronkelijk bericht", "Doorgestuurd bericht",
	/* zh-CN: Outlook and Coremail [LKML]; Thunderbird [TB] */
	"原始邮件", "原始消息", "转发的消息", "转发的邮件",
	/* zh-TW: Thunderbird [TB] */
	"原始郵件", "轉寄郵件",
	/* ja: Outlook [LKML]; HubSpot [EFP]; Thunderbird (ja) writes the
	 * English ones [TB] */
	"元のメッセージ", "転送されたメッセージ", "メッセージを転送",
	/* da [TAL][ERP] */
	"Oprindelig meddelelse", "Oprindelig besked",
};

/* Apple Mail's line above a forwarded message, without its ':' [EFP]. */
static const char *const forward_intros[] = {
	"Begin forwarded message",                    /* en */
	"Anfang der weitergeleiteten Nachricht",      /* de */
	"Anfang der weitergeleiteten E-Mail",         /* de, older */
	"Début du message réexpédié",                 /* fr */
	"Début du message transféré",                 /* fr, iOS */
	"Inicio del mensaje reenviado",               /* es */
	"Inizio messaggio inoltrato",                 /* it */
	"Início da mensagem reencaminhada",           /* pt */
	"Início da mensagem encaminhada",             /* pt-BR */
	"Begin doorgestuurd bericht",                 /* nl */
	"以下是转发的邮件",                           /* zh-CN */
	"転送されたメッセージ",                       /* ja */
	"Forwarded message",                          /* MailMate */
};

/* The first words of a quoted header block ("From: A\nSent: DATE\nTo:
 * ..."): Outlook's, Apple Mail's and Gmail's forwards, Thunderbird's
 * inline forward (Subject, Date, From, To: the order varies, so a From
 * word with a Date word within three lines, either first). */
static const char *const from_words[] = {
	"From",                 /* en; Outlook Live in every locale [EFP] */
	"Von",                  /* de [TAL][EFP][MPR][TB] */
	"De",                   /* fr ("De :"), es, pt [TAL][EFP][MPR][TB] */
	"Da",                   /* it [EFP][MPR][TB] */
	"Van",                  /* nl [TAL][EFP][MPR][TB] */
	"Expéditeur",           /* fr, Thunderbird's inline forward [TB] */
	"Mittente",             /* it, Thunderbird [EFP] */
	"发件人",               /* zh-CN: Outlook, Coremail, Thunderbird [MPR][TB][LKML] */
	"寄件者",               /* zh-TW: Outlook */
	"差出人",               /* ja: Outlook, Thunderbird [TB] */
	"送信者", "送信元",     /* ja [EFP] */
	"Fra", "Från", "Od",    /* da/no, sv, cs/pl [TAL][EFP] */
};

static const char *const date_words[] = {
	"Sent", "Date",                 /* en [EFP] */
	"Gesendet", "Datum",            /* de [TAL][EFP][MPR][TB] */
	"Envoyé", "Envoyé le",          /* fr ("Envoyé :") [TAL][EFP][MPR] */
	"Enviado", "Enviado el", "Enviada em", "Fecha",   /* es, pt [EFP][MPR][TB] */
	"Inviato", "Data",              /* it, pt [EFP][MPR][TB] */
	"Verzonden",                    /* nl [EFP][MPR] */
	"发送时间", "日期",             /* zh-CN [MPR][TB][LKML] */
	"寄件日期",                     /* zh-TW: Outlook */
	"送信日時", "日付",             /* ja: Outlook, Thunderbird; HubSpot [TB][EFP] */
	"Sendt", "Skickat", "Dato", "Wysłano",    /* da/no, sv, pl [TAL][EFP] */
};

/* Outlook's rule above the quoted header block (32 underscores, Outlook
 * Live in every locale [EFP]); shorter ones count too. */
#define MIN_RULE 10

/* @p..@len as markers are compared, into @buf (see above). */
static void
fold_line(GString *buf, const char *p, gsize len)
{
	gsize s = 0;

	g_string_truncate(buf, 0);
	for (gsize i = 0; i < len; i++) {
		guchar c = p[i], c1 = i + 1 < len ? p[i + 1] : 0,
		       c2 = i + 2 < len ? p[i + 2] : 0;

		if (c == '\t' || c == '\r') {
			g_string_append_c(buf, ' ');
		} else if (c == 0xc2 && c1 == 0xa0) {           /* U+00A0 */
			g_string_append_c(buf, ' ');
			i++;
		} else if (c == 0xe2 && c1 == 0x80 &&
			   ((c2 >= 0x80 && c2 <= 0x8a) || c2 == 0xaf)) {
			/* U+2000-200A, U+202F */
			g_string_append_c(buf, ' ');
			i += 2;
		} else if (c == 0xe2 && c1 == 0x80 && c2 >= 0x8b && c2 <= 0x8d) {
			i += 2;                                  /* U+200B-200D */
		} else if (c == 0xe2 && c1 == 0x80 && c2 == 0x99) {
			g_string_append_c(buf, '\'');            /* U+2019 */
			i += 2;
		} else if (c == 0xe3 && c1 == 0x80 && c2 == 0x80) {
			g_string_append_c(buf, ' ');             /* U+3000 */
			i += 2;
		} else if (c == 0xef && c1 == 0xbc && c2 == 0x9a) {
			g_string_append_c(buf, ':');             /* U+FF1A */
			i += 2;
		} else if (c == 0xef && c1 == 0xbb && c2 == 0xbf) {
			i += 2;                                  /* U+FEFF */
		} else {
			g_string_append_c(buf, (char)c);
		}
	}
	while (s < buf->len && buf->str[s] == ' ')
		s++;
	g_string_erase(buf, 0, (gssize)s);
	while (buf->len > 0 && buf->str[buf->len - 1] == ' ')
		g_string_truncate(buf, buf->len - 1);
}

/* A byte of a word: ASCII letters and digits, and any byte of a UTF-8
 * sequence (é, ü ...). */
static gboolean
is_word_byte(guchar c)
{
	return g_ascii_isalnum(c) || c >= 0x80;
}

/* Whether @s..@n holds @w (ASCII case aside); a word of Latin script only
 * as a word ("wrote", not "rewrote"). */
static gboolean
has_word(const char *s, gsize n, const char *w)
{
	gsize m = strlen(w);
	gboolean latin = (guchar)w[0] < 0x80;

	for (gsize i = 0; i + m <= n; i++) {
		if (g_ascii_strncasecmp(s + i, w, m) != 0)
			continue;
		if (latin && ((i > 0 && is_word_byte(s[i - 1])) ||
			      (i + m < n && is_word_byte(s[i + m]))))
			continue;
		return TRUE;
	}
	return FALSE;
}

/* Whether @s..@n starts with @w, then blanks (and '*', as Gmail writes
 * bold in its plain text) and ':'. */
static gboolean
is_field(const char *s, gsize n, const char *w)
{
	gsize m = strlen(w), i = 0;

	while (i < n && i < 2 && s[i] == '*')
		i++;
	if (n - i < m || g_ascii_strncasecmp(s + i, w, m) != 0)
		return FALSE;
	for (i += m; i < n && (s[i] == ' ' || s[i] == '*'); i++)
		;
	return i < n && s[i] == ':';
}

/* The length of @s without its final ':' and the blanks and '*' before
 * it; 0 when it does not end in ':'. */
static gsize
colon_head(const char *s, gsize n)
{
	if (n == 0 || s[n - 1] != ':')
		return 0;
	n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '*'))
		n--;
	return n;
}

static gboolean
in_table(const char *s, gsize n, const char *const *table, gsize count)
{
	for (gsize i = 0; i < count; i++)
		if (strlen(table[i]) == n && g_ascii_strncasecmp(s, table[i], n) == 0)
			return TRUE;
	return FALSE;
}

/* "-----Original Message-----" and the other separators, any spacing. */
static gboolean
is_separator(const char *s, gsize n)
{
	const char *p = s, *e = s + n;

	if (n < 2 || s[0] != '-' || s[1] != '-')
		return FALSE;
	while (p < e && (*p == '-' || *p == ' '))
		p++;
	while (e > p && (e[-1] == '-' || e[-1] == ' '))
		e--;
	return in_table(p, (gsize)(e - p), separator_phrases,
			G_N_ELEMENTS(separator_phrases));
}

/* An address anywhere in @s: an atext byte, '@', a domain with a dot
 * inside.  A loose reading on purpose: any address-like word counts. */
static gboolean
has_address(const char *s, gsize n)
{
	for (gsize i = 1; i + 1 < n; i++) {
		guchar b = s[i - 1];

		if (s[i] != '@' || b == 0 ||
		    !(g_ascii_isalnum(b) || b >= 0x80 || strchr("._%+-", b)))
			continue;
		for (gsize j = i + 1; j + 1 < n; j++) {
			guchar c = s[j];

			if (!(g_ascii_isalnum(c) || c >= 0x80 || c == '-' ||
			      c == '.'))
				break;
			if (c == '.' && j > i + 1 && is_word_byte(s[j + 1]))
				return TRUE;
		}
	}
	return FALSE;
}

/* Gmail's Japanese attribution, "2024年12月2日(月) 10:00 A <a@b>:"
 * [MPR], when wrapped so that its address is on the next line. */
static gboolean
is_cjk_date(const char *s, gsize n)
{
	static const char year[] = "年", month[] = "月", day[] = "日";

	if (n < 4 + 3 * 3)
		return FALSE;
	for (int i = 0; i < 4; i++)
		if (!g_ascii_isdigit(s[i]))
			return FALSE;
	return memcmp(s + 4, year, 3) == 0 &&
	       g_strstr_len(s + 7, (gssize)(n - 7), month) != NULL &&
	       g_strstr_len(s + 7, (gssize)(n - 7), day) != NULL;
}

static gboolean
is_opener(const char *s, gsize n)
{
	for (gsize i = 0; i < G_N_ELEMENTS(attribution_openers); i++) {
		const char *w = attribution_openers[i];
		gsize m = strlen(w);

		if (n > m && g_ascii_strncasecmp(s, w, m) == 0 &&
		    (s[m] == ' ' || (guchar)w[0] >= 0x80))
			return TRUE;
	}
	return FALSE;
}

/* The MARK_* of line @p..@len; @buf is scratch. */
static guint
line_marks(GString *buf, const char *p, gsize len)
{
	const char *s;
	gsize n, head;
	guint m = 0;

	fold_line(buf, p, len);
	s = buf->str;
	n = buf->len;
	head = colon_head(s, n);
	if (is_separator(s, n) ||
	    (head > 0 && in_table(s, head, forward_intros,
				  G_N_ELEMENTS(forward_intros))) ||
	    (n >= MIN_RULE && strspn(s, "_") == n))
		m |= MARK_QUOTE;
	if (head > 0) {
		gboolean attr = has_address(s, head) || is_cjk_date(s, head);

		for (gsize i = 0; !attr && i < G_N_ELEMENTS(attribution_words); i++)
			attr = has_word(s, head, attribution_words[i]);
		if (attr)
			m |= MARK_QUOTE | MARK_ATTR;
	}
	if (is_opener(s, n))
		m |= MARK_OPENER;
	for (gsize i = 0; i < G_N_ELEMENTS(from_words); i++)
		if (is_field(s, n, from_words[i]))
			m |= MARK_FROM;
	for (gsize i = 0; i < G_N_ELEMENTS(date_words); i++)
		if (is_field(s, n, date_words[i]))
			m |= MARK_DATE;
	return m;
}

typedef struct {
	const char *p;      /* the line without its surrounding blanks */
	gsize len;
	guint marks;        /* line_marks() */
} Line;

static gboolean
quote_starts(const Line *lines, guint i, guint n)
{
	guint m = lines[i].marks;

	if (m & MARK_QUOTE)
		return TRUE;
	for (guint j = i + 1; j < n && j <= i + 3; j++) {
		guint o = lines[j].marks;

		/* "On Mon, 2 Dec 2024, A. U. Thor <a@example.org>" + "wrote:" */
		if ((m & MARK_OPENER) && j <= i + 2 && (o & MARK_ATTR))
			return TRUE;
		if (((m & MARK_FROM) && (o & MARK_DATE)) ||
		    ((m & MARK_DATE) && (o & MARK_FROM)))
			return TRUE;
	}
	return FALSE;
}

/* A line quoted with '>', or with the full-width '＞' some Japanese
 * clients write. */
static gboolean
is_quoted(Line l)
{
	return l.len > 0 && (l.p[0] == '>' ||
			     (l.len >= 3 && memcmp(l.p, "\xef\xbc\x9e", 3) == 0));
}

char *
pgate_mail_body_own_text(const char *body, guint max_lines)
{
	g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(Line));
	g_autoptr(GString) buf = g_string_new(NULL);
	GString *out = g_string_new(NULL);
	const char *p = body;

	while (p != NULL && *p != '\0' && lines->len < max_lines) {
		const char *nl = strchr(p, '\n');
		const char *e = nl != NULL ? nl : p + strlen(p);
		Line l = { p, 0, 0 };

		while (l.p < e && g_ascii_isspace(*l.p))
			l.p++;
		while (e > l.p && g_ascii_isspace(e[-1]))
			e--;
		l.len = e - l.p;
		l.marks = line_marks(buf, l.p, l.len);
		g_array_append_val(lines, l);
		p = nl != NULL ? nl + 1 : NULL;
	}
	for (guint i = 0; i < lines->len; i++) {
		Line l = g_array_index(lines, Line, i);

		if (quote_starts((const Line *)(void *)lines->data, i,
				 lines->len))
			break;
		if (is_quoted(l))
			continue;
		g_string_append_len(out, l.p, l.len);
		g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}
