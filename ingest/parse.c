/* parse.c - one raw message into a PgateMail.
 *
 * GMime parses the message once, reading the caller's bytes in place.
 * From its result come the headers (Message-ID, threading, addresses,
 * date, list) and the body: text parts are decoded as Patchwork's
 * _find_content() does, the first text/plain part is split into comment
 * and diff (patchid.c), a text/x-patch or text/x-diff part is the diff.
 * The comment gives the pull request URL, the trailers and the b4 lines.
 *
 * Mail is hostile.  Nothing here fails: input that is no mail at all is
 * returned as a REJECTED record with a reason; every value is bounded
 * (PgateIngestOptions and the PGATE_INGEST_MAX_* constants); at most
 * PGATE_INGEST_MAX_PARTS MIME parts are read, at most
 * PGATE_INGEST_MAX_DEPTH deep.  The same bytes always give the same
 * record.
 */
#include "ingest/ingest-private.h"

#include <errno.h>
#include <gmime/gmime.h>
#include <iconv.h>
#include <string.h>

#include "common/autocleanups.h"

G_DEFINE_QUARK(pgate-ingest-error-quark, pgate_ingest_error)

/* Input that is not a mail: more NUL bytes than this in the header
 * block, or at least four making more than a sixteenth of it.  A few NULs
 * are what a broken mailer leaves (Patchwork's codec-null fuzz case is a
 * patch). */
#define MAX_HEADER_NULS 16
#define MAX_HEADER_BLOCK (1024u * 1024)
#define MAX_HEADERS_KEPT 32     /* occurrences of one header looked at */
#define MAX_REF_TOKENS 10000    /* References tokens scanned */
#define MAX_ADDRESS_DEPTH 4     /* groups inside groups */

static GMimeParserOptions *parser_options;

static void gmime_probe(void);

void
pgate_ingest_init(void)
{
	static gsize once = 0;

	if (g_once_init_enter(&once)) {
		/* 8-bit header text is tried as these, as Patchwork does for
		 * bodies; ISO-8859-1 always succeeds */
		static const char *fallback[] = {
			"utf-8", "windows-1252", "iso-8859-1", NULL
		};

		g_mime_init();
		parser_options = g_mime_parser_options_new();
		g_mime_parser_options_set_fallback_charsets(parser_options,
							    fallback);
		gmime_probe();
		g_once_init_leave(&once, 1);
	}
}

/* ---- small string helpers ------------------------------------------- */

/* Cuts @s (in place) to at most @max bytes, on a character boundary. */
static void
utf8_truncate(char *s, gsize max)
{
	gsize len = strlen(s);

	if (len <= max)
		return;
	while (max > 0 && ((guchar)s[max] & 0xc0) == 0x80)
		max--;
	s[max] = '\0';
}

/* Whether @s is already clean: ASCII, no control characters, no space
 * at either end nor two in a row. */
static gboolean
is_clean(const char *s, const char *end)
{
	if (s == end || s[0] == ' ' || end[-1] == ' ')
		return FALSE;
	for (const char *p = s; p < end; p++) {
		if ((guchar)*p < ' ' || (guchar)*p >= 127 ||
		    (p[0] == ' ' && p[1] == ' '))
			return FALSE;
	}
	return TRUE;
}

char *
pgate_ingest__clean_value(const char *s, gssize len, gsize max)
{
	GString *out;
	const char *end;
	gboolean space = FALSE;
	char *valid;

	if (s == NULL)
		return NULL;
	end = len < 0 ? s + strlen(s) : s + len;
	if (is_clean(s, end) && (gsize)(end - s) <= max)
		return g_strndup(s, (gsize)(end - s));
	out = g_string_sized_new((gsize)(end - s));
	for (; s < end; s++) {
		if (g_ascii_isspace(*s)) {
			space = out->len > 0;
			continue;
		}
		if (space)
			g_string_append_c(out, ' ');
		space = FALSE;
		g_string_append_c(out, *s);
	}
	if (out->len == 0) {
		g_string_free(out, TRUE);
		return NULL;
	}
	valid = g_utf8_make_valid(out->str, (gssize)out->len);
	g_string_free(out, TRUE);
	utf8_truncate(valid, max);
	return valid;
}

/* ---- strings without duplicates -------------------------------------- */

gboolean
pgate_ingest__strset_has(const PgateStrSet *set, const char *s)
{
	if (set->seen != NULL)
		return g_hash_table_contains(set->seen, s);
	for (guint i = 0; i < set->items->len; i++)
		if (strcmp(g_ptr_array_index(set->items, i), s) == 0)
			return TRUE;
	return FALSE;
}

gboolean
pgate_ingest__strset_add(PgateStrSet *set, char *s)
{
	if (pgate_ingest__strset_has(set, s)) {
		g_free(s);
		return FALSE;
	}
	g_ptr_array_add(set->items, s);
	if (set->seen != NULL) {
		g_hash_table_add(set->seen, s);
	} else if (set->items->len >= 16) {
		/* a linear search is faster below that */
		set->seen = g_hash_table_new(g_str_hash, g_str_equal);
		for (guint i = 0; i < set->items->len; i++)
			g_hash_table_add(set->seen,
					 g_ptr_array_index(set->items, i));
	}
	return TRUE;
}

void
pgate_ingest__strset_clear(PgateStrSet *set)
{
	g_clear_pointer(&set->seen, g_hash_table_unref);
}

/* ---- the raw bytes: header block, rejection, content hash ------------ */

typedef struct {
	const char *start;     /* the message, after an mbox "From " line */
	const char *hdr_end;   /* where the header block ends */
	const char *body;      /* after the blank line that ends it */
	const char *end;
} Layout;

static const char *
line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (gsize)(end - p));

	return nl != NULL ? nl + 1 : end;
}

static void
layout_scan(const char *raw, gsize len, Layout *lay)
{
	const char *p;

	lay->start = raw;
	lay->end = raw + len;
	/* tolerated although callers remove it: an mbox separator, which
	 * is "From " and no colon after the word */
	if (len > 5 && memcmp(raw, "From ", 5) == 0) {
		const char *q = raw + 4;

		while (q < lay->end && pgate_ingest__is_wsp(*q))
			q++;
		if (q < lay->end && *q != ':')
			lay->start = line_end(raw, lay->end);
	}
	lay->hdr_end = lay->body = lay->end;
	for (p = lay->start; p < lay->end; p = line_end(p, lay->end)) {
		if (*p == '\n' || (*p == '\r' && p + 1 < lay->end &&
				   p[1] == '\n')) {
			lay->hdr_end = p;
			lay->body = line_end(p, lay->end);
			break;
		}
	}
}

/* A header field name (printable ASCII but ':'), maybe blanks, ':'. */
static gboolean
is_header_line(const char *p, const char *end)
{
	const char *s = p;

	while (p < end && (guchar)*p > ' ' && (guchar)*p < 127 && *p != ':')
		p++;
	if (p == s)
		return FALSE;
	while (p < end && pgate_ingest__is_wsp(*p))
		p++;
	return p < end && *p == ':';
}

/* Returns: why the bytes are no mail, or NULL. */
static const char *
layout_check(const Layout *lay, char **out_detail)
{
	const char *p;
	gsize nuls = 0, hlen = (gsize)(lay->hdr_end - lay->start);

	for (p = lay->start; p < lay->end && g_ascii_isspace(*p); p++)
		;
	if (p == lay->end)
		return "empty message";
	if (!is_header_line(lay->start, lay->end))
		return "not a mail: the first line is not a header field";
	if (hlen > MAX_HEADER_BLOCK)
		return "not a mail: the header block is over 1 MiB";
	for (p = lay->start; (p = memchr(p, '\0', (gsize)(lay->hdr_end - p)));
	     p++)
		nuls++;
	if (nuls > MAX_HEADER_NULS || (nuls >= 4 && nuls * 16 > hlen)) {
		*out_detail = g_strdup_printf(
			"not a mail: binary data in the header block "
			"(%" G_GSIZE_FORMAT " NUL bytes)", nuls);
		return *out_detail;
	}
	return NULL;
}

/*
 * The content hash tells the same message from another one with its
 * Message-ID, whatever way it came: MTAs, list servers and archives add
 * and drop Received, Delivered-To, Return-Path, List-*, X-* headers on
 * the way, so only these six headers count:
 *
 *   SHA-256( for H in From, Subject, Date, Message-ID, To, Cc:
 *              for each header H in the message, in order:
 *                lower(H) ":" value "\n"
 *            "\n"
 *            the body: the bytes after the blank line that ends the
 *            header block, every CRLF turned into LF )
 *
 * where a value is unfolded (CR and LF removed), its runs of spaces and
 * tabs made one space, trimmed.  A leading mbox "From " line is no part
 * of the message.  Of input that is no mail (layout_check()) every byte
 * is body.
 */
static const char *const hashed_headers[] = {
	"from", "subject", "date", "message-id", "to", "cc",
};

typedef struct {
	guint which;             /* index into hashed_headers */
	const char *value, *end;
} HashedHeader;

/* Hashes "name:value\n" with the value as described above: a run of
 * blanks is one space, except after a ':' (the field's or one of the
 * value's), where it is none; CR and LF are left out. */
static void
hash_value(PgateSha256 *sum, const char *name, const char *p, const char *end)
{
	char buf[512];
	gsize n = strlen(name);
	gboolean space = FALSE;

	memcpy(buf, name, n);   /* one of hashed_headers[] */
	buf[n++] = ':';
	for (; p < end; p++) {
		if (*p == '\r' || *p == '\n')
			continue;
		if (pgate_ingest__is_wsp(*p)) {
			space = TRUE;
			continue;
		}
		if (n + 3 > sizeof buf) {
			/* room for a space, a byte and the final newline; the
			 * last byte stays, the next one looks at it */
			pgate_sha256_update(sum, buf, n - 1);
			buf[0] = buf[n - 1];
			n = 1;
		}
		if (space && buf[n - 1] != ':')
			buf[n++] = ' ';
		space = FALSE;
		buf[n++] = *p;
	}
	buf[n++] = '\n';
	pgate_sha256_update(sum, buf, n);
}

static gssize
hashed_header_index(const char *name, const char *end)
{
	gsize n = (gsize)(end - name);

	for (guint i = 0; i < G_N_ELEMENTS(hashed_headers); i++)
		if (n == strlen(hashed_headers[i]) &&
		    g_ascii_strncasecmp(name, hashed_headers[i], n) == 0)
			return (gssize)i;
	return -1;
}

/* Finds the six headers' values in the header block. */
static guint
find_hashed_headers(const Layout *lay, HashedHeader *out, guint max)
{
	const char *p = lay->start, *next;
	guint n = 0;

	while (p < lay->hdr_end && n < max) {
		const char *colon = memchr(p, ':', (gsize)(lay->hdr_end - p));
		const char *eol = line_end(p, lay->hdr_end);

		next = eol;
		while (next < lay->hdr_end && pgate_ingest__is_wsp(*next))
			next = line_end(next, lay->hdr_end);
		if (colon != NULL && colon < eol && !pgate_ingest__is_wsp(*p)) {
			const char *name_end = colon;

			while (name_end > p && pgate_ingest__is_wsp(name_end[-1]))
				name_end--;
			gssize i = hashed_header_index(p, name_end);

			if (i >= 0)
				out[n++] = (HashedHeader){ (guint)i, colon + 1,
							   next };
		}
		p = next;
	}
	return n;
}

/* Hashes @p..@end with every CRLF as LF. */
static void
hash_body(PgateSha256 *sum, const char *p, const char *end)
{
	while (p < end) {
		const char *cr = memchr(p, '\r', (gsize)(end - p));

		if (cr == NULL) {
			pgate_sha256_update(sum, p, (gsize)(end - p));
			return;
		}
		/* the CR of a CRLF is left out */
		pgate_sha256_update(sum, p, (gsize)(cr - p));
		if (cr + 1 >= end || cr[1] != '\n')
			pgate_sha256_update(sum, "\r", 1);
		p = cr + 1;
	}
}

/* @no_mail: hash every byte as body. */
static void
content_hash(const Layout *lay, gboolean no_mail, guint8 out[32])
{
	PgateSha256 sum;
	HashedHeader hh[64];
	guint n = 0;

	pgate_sha256_init(&sum);
	if (!no_mail)
		n = find_hashed_headers(lay, hh, G_N_ELEMENTS(hh));
	for (guint which = 0; which < G_N_ELEMENTS(hashed_headers); which++)
		for (guint i = 0; i < n; i++)
			if (hh[i].which == which)
				hash_value(&sum, hashed_headers[which],
					   hh[i].value, hh[i].end);
	pgate_sha256_update(&sum, "\n", 1);
	hash_body(&sum, no_mail ? lay->start : lay->body, lay->end);
	pgate_sha256_finish(&sum, out);
}

static char *
synthetic_msgid(const guint8 hash[32])
{
	char hex[33];

	pgate_hex_encode(hex, hash, 16);
	return g_strdup_printf("pgate-%s@synthetic.invalid", hex);
}

/* ---- headers --------------------------------------------------------- */

typedef struct {
	const char *v[MAX_HEADERS_KEPT];   /* raw values, as GMime keeps them */
	guint n;
} Values;

typedef struct {
	Values msgid, in_reply_to, references;
	Values list_id, x_mailing_list, x_list;
	Values auto_submitted, precedence, pw_hint;
} Headers;

/* The fields read by their raw values. */
static const struct {
	const char *name;
	gsize len;
	gsize offset;
} wanted[] = {
#define WANT(name, field) { name, sizeof name - 1, \
			    G_STRUCT_OFFSET(Headers, field) }
	WANT("Message-ID", msgid),
	WANT("In-Reply-To", in_reply_to),
	WANT("References", references),
	WANT("List-Id", list_id),
	WANT("X-Mailing-List", x_mailing_list),
	WANT("X-List", x_list),
	WANT("Auto-Submitted", auto_submitted),
	WANT("Precedence", precedence),
	WANT("X-Patchwork-Hint", pw_hint),
#undef WANT
};

/* Where the raw values of the field @name go, or NULL: not wanted, or
 * MAX_HEADERS_KEPT of them already. */
static Values *
wanted_values(Headers *h, const char *name, gsize len)
{
	for (guint w = 0; w < G_N_ELEMENTS(wanted); w++) {
		Values *vs = G_STRUCT_MEMBER_P(h, wanted[w].offset);

		if (len == wanted[w].len &&
		    g_ascii_tolower(name[0]) == g_ascii_tolower(wanted[w].name[0]) &&
		    g_ascii_strncasecmp(name, wanted[w].name, len) == 0)
			return vs->n < MAX_HEADERS_KEPT ? vs : NULL;
	}
	return NULL;
}

static void
headers_collect(GMimeMessage *msg, Headers *h)
{
	GMimeHeaderList *list =
		g_mime_object_get_header_list(GMIME_OBJECT(msg));
	int count = g_mime_header_list_get_count(list);

	memset(h, 0, sizeof *h);
	for (int i = 0; i < count; i++) {
		GMimeHeader *hdr = g_mime_header_list_get_header_at(list, i);
		const char *name = g_mime_header_get_name(hdr);
		const char *v = g_mime_header_get_raw_value(hdr);
		Values *vs = wanted_values(h, name, strlen(name));

		if (vs != NULL && v != NULL)
			vs->v[vs->n++] = v;
	}
}

/* ---- GMime over the message's bytes ---------------------------------- */

/*
 * GMime makes every header field a GObject with copies of its name and
 * value, a change event and a hash table entry, and a message object with
 * six address lists around them: more than a third of a parse, mostly
 * for fields that nothing here reads (Received, DKIM-Signature, ARC-*,
 * List-Post ...).  So when the header block is plain, the fields of the
 * message are read here, with the functions that GMime's message would
 * have used on them, and GMime only parses the MIME structure, from a
 * copy of the message that keeps the Content-* fields alone; or not at
 * all when the message is one text part without transfer encoding
 * (view_text_part()), as most list mail is.
 *
 * Plain: a blank line ends the block, it holds no NUL byte, and each of
 * its lines is either a continuation (it starts with a space or a tab;
 * not the first line) or starts with a field name of printable ASCII,
 * without blanks, followed at once by ':'.  Of such a block GMime's
 * parser makes one field per name line, whose raw value is every byte
 * after the ':' up to the end of its last continuation line, newline
 * included: a contiguous span of the block, which is what is read here.
 * GMime 3.2's message then holds (gmime-message.c, process_header()):
 *
 *   subject   of the last Subject field: its unfolded raw value,
 *             g_mime_utils_header_decode_text()'d;
 *   date      of the last Date field: g_mime_utils_header_decode_date()
 *             of that decoded text;
 *   from, to, cc   the addresses of every field of the name in order,
 *             each appended as internet_address_list_append_parse()
 *             reads its raw value; GMime 3.2.13 as released clears the
 *             list at each field, so only the last one counts (Debian
 *             and later GMime append);
 *   g_mime_object_get_header(msg, "From")   the first From field,
 *             decoded as the subject;
 *
 * with the parser options as the fields' options, and offsets that only
 * go to warnings (no warning callback is set).  Its MIME part is what
 * parser_construct_part() makes of the Content-* fields (with toplevel
 * set, the message's part gets exactly those) in their order, the blank
 * line and the body.  gmime_probe() checks these rules on the GMime that
 * is linked, once; without them every message goes to GMime whole, as
 * does any message whose block is not plain.
 */
static gboolean plain_ok;       /* the rules above hold */
static gboolean addr_append;    /* each address field appends */
static gboolean plain_text_ok;  /* see decodes_to_itself() */

/* The raw value of a field: a span of the header block. */
typedef struct {
	const char *p;
	gsize len;
} Span;

/* What the message says, from GMime's message or read from the plain
 * header block; everything lives as long as the MimeInput. */
typedef struct {
	Headers raw;                       /* the fields of wanted[] */
	const char *subject;               /* (nullable) decoded */
	InternetAddressList *from, *to, *cc;   /* (nullable) */
	GDateTime *date;                   /* (nullable) */
	GMimeObject *part;                 /* (nullable) the top MIME part */
	GMimeMessage *message;             /* (nullable) when parsed whole */
	Span first_from;                   /* when plain */
	/* when plain and one text part without transfer encoding, which
	 * GMime does not parse: its content type and its content */
	GMimeContentType *text_type;       /* (nullable) */
	Span text;
} MailView;

/*
 * The bytes GMime parses: the caller's (@owned FALSE: the stream is told
 * it does not own the array, nothing writes to it, and the array is
 * emptied before it is freed, after every GMime object that reads from it
 * is gone), or content_copy().
 */
typedef struct {
	GByteArray *bytes;
	gboolean owned;
	char *values;          /* (nullable): raw values of a plain block */
	char *subject;         /* (nullable): owned when plain */
	GMimeStream *stream;
	GMimeParser *parser;
	MailView view;
} MimeInput;

static void
mime_input_init(MimeInput *in)
{
	memset(in, 0, sizeof *in);
}

static void
mime_input_clear(MimeInput *in)
{
	MailView *view = &in->view;

	if (view->message != NULL) {
		g_clear_object(&view->message);
	} else {
		g_clear_object(&view->part);
		g_clear_object(&view->from);
		g_clear_object(&view->to);
		g_clear_object(&view->cc);
		g_clear_pointer(&view->date, g_date_time_unref);
		g_clear_object(&view->text_type);
	}
	g_clear_object(&in->parser);
	g_clear_object(&in->stream);
	if (in->bytes != NULL && !in->owned)
		g_byte_array_steal(in->bytes, NULL);
	g_clear_pointer(&in->bytes, g_byte_array_unref);
	g_clear_pointer(&in->values, g_free);
	g_clear_pointer(&in->subject, g_free);
	mime_input_init(in);
}

typedef enum {
	FIELD_FROM, FIELD_TO, FIELD_CC, FIELD_SUBJECT, FIELD_DATE,
	FIELD_CONTENT_TYPE, FIELD_CONTENT_ENCODING, FIELD_CONTENT,
	FIELD_OTHER,
} FieldKind;

#define FIELD_IS_CONTENT(k) ((k) >= FIELD_CONTENT_TYPE && (k) <= FIELD_CONTENT)

static gboolean
name_is(const char *name, gsize len, const char *lit, gsize lit_len)
{
	return len == lit_len && g_ascii_strncasecmp(name, lit, len) == 0;
}

/* Called for every field of every message: by length first. */
static FieldKind
field_kind(const char *name, gsize len)
{
	switch (len) {
	case 2:
		return name_is(name, len, "To", 2) ? FIELD_TO :
		       name_is(name, len, "Cc", 2) ? FIELD_CC : FIELD_OTHER;
	case 4:
		return name_is(name, len, "From", 4) ? FIELD_FROM :
		       name_is(name, len, "Date", 4) ? FIELD_DATE : FIELD_OTHER;
	case 7:
		if (name_is(name, len, "Subject", 7))
			return FIELD_SUBJECT;
		break;
	}
	if (len < 8 || g_ascii_strncasecmp(name, "Content-", 8) != 0)
		return FIELD_OTHER;
	if (name_is(name, len, "Content-Type", 12))
		return FIELD_CONTENT_TYPE;
	if (name_is(name, len, "Content-Transfer-Encoding", 25))
		return FIELD_CONTENT_ENCODING;
	return FIELD_CONTENT;
}

/* The fields of a plain block that GMime's message would decode. */
typedef struct {
	Span last[FIELD_CONTENT_ENCODING + 1];   /* by FieldKind */
	guint count[FIELD_CONTENT_ENCODING + 1];
	Span first_from;
	gboolean ok;                       /* FALSE: parse the message whole */
} Decoded;

/*
 * Adds the addresses of @s to *@list.  internet_address_list_parse() gives
 * what internet_address_list_append_parse() would add, or NULL when the
 * field holds no address or has a syntax error after which GMime keeps
 * what it read before: the message is then parsed whole.
 */
static void
add_addresses(InternetAddressList **list, Span s, gboolean *ok)
{
	g_autofree char *raw = NULL;
	InternetAddressList *more;

	if (s.p == NULL || !*ok)
		return;
	raw = g_strndup(s.p, s.len);
	more = internet_address_list_parse(parser_options, raw);
	if (more == NULL) {
		*ok = FALSE;
	} else if (*list == NULL) {
		*list = more;
	} else {
		internet_address_list_append(*list, more);
		g_object_unref(more);
	}
}

/* One field of a plain block: its name, its kind, and its raw value as
 * a span. */
static void
field_done(MimeInput *in, Decoded *d, char **v, const char *name,
	   gsize name_len, FieldKind kind, const char *value, const char *end)
{
	InternetAddressList **lists[] = {
		&in->view.from, &in->view.to, &in->view.cc,
	};
	Values *vs = kind == FIELD_OTHER ?
		wanted_values(&in->view.raw, name, name_len) : NULL;
	Span s = { value, (gsize)(end - value) };

	if (kind == FIELD_FROM && d->first_from.p == NULL)
		d->first_from = s;
	if (kind <= FIELD_CC && addr_append)
		add_addresses(lists[kind], s, &d->ok);
	else if (kind <= FIELD_CONTENT_ENCODING)
		d->last[kind] = s;
	if (kind <= FIELD_CONTENT_ENCODING)
		d->count[kind]++;
	if (vs != NULL) {
		vs->v[vs->n++] = *v;
		memcpy(*v, s.p, s.len);
		*v += s.len;
		*(*v)++ = '\0';
	}
}

/*
 * When the header block of @lay is plain: the raw values of wanted[] in
 * in->view.raw, the address lists when they append, and the spans of the
 * other fields GMime would decode in @d.  FALSE (and nothing set)
 * otherwise.
 */
static gboolean
plain_fields(MimeInput *in, const Layout *lay, Decoded *d)
{
	gsize hlen = (gsize)(lay->hdr_end - lay->start);
	const char *p = lay->start, *name = NULL, *value = NULL;
	gsize name_len = 0;
	FieldKind kind = FIELD_OTHER;
	char *v;

	if (!plain_ok || lay->hdr_end == lay->end ||
	    memchr(p, '\0', hlen) != NULL)
		return FALSE;
	/* a value is shorter than its field by the name and the ':' at
	 * least, which leaves room for its NUL */
	in->values = v = g_malloc(hlen + 1);
	memset(d, 0, sizeof *d);
	d->ok = TRUE;
	while (p < lay->hdr_end) {
		/* every line of the block ends with a newline */
		const char *next = (const char *)memchr(
			p, '\n', (gsize)(lay->hdr_end - p)) + 1;

		if (pgate_ingest__is_wsp(*p)) {
			if (name == NULL)
				goto not_plain;
		} else {
			const char *q = p;

			while ((guchar)*q > ' ' && (guchar)*q < 127 && *q != ':')
				q++;
			if (q == p || *q != ':')
				goto not_plain;
			if (name != NULL)
				field_done(in, d, &v, name, name_len, kind,
					   value, p);
			name = p;
			name_len = (gsize)(q - p);
			value = q + 1;
			kind = field_kind(name, name_len);
		}
		p = next;
	}
	field_done(in, d, &v, name, name_len, kind, value, p);
	return TRUE;

not_plain:
	mime_input_clear(in);
	return FALSE;
}

/* The copy of a plain message that GMime parses: its Content-* fields,
 * the blank line and the body. */
static GByteArray *
content_copy(const Layout *lay)
{
	gsize hlen = (gsize)(lay->hdr_end - lay->start);
	gsize blen = (gsize)(lay->end - lay->hdr_end);
	char *buf = g_malloc(hlen + blen), *o = buf;
	gboolean content = FALSE;

	for (const char *p = lay->start, *next; p < lay->hdr_end; p = next) {
		next = (const char *)memchr(p, '\n',
					    (gsize)(lay->hdr_end - p)) + 1;
		if (!pgate_ingest__is_wsp(*p)) {
			const char *q = memchr(p, ':', (gsize)(next - p));

			content = FIELD_IS_CONTENT(field_kind(p, (gsize)(q - p)));
		}
		if (content) {
			memcpy(o, p, (gsize)(next - p));
			o += next - p;
		}
	}
	memcpy(o, lay->hdr_end, blen);
	return g_byte_array_new_take((guint8 *)buf, (gsize)(o - buf) + blen);
}

/* Whether @s is ASCII without "=?": text that
 * g_mime_utils_header_decode_text() returns as it is, as it keeps every
 * word and every run of blanks that is no encoded word (checked by
 * gmime_probe()). */
static gboolean
decodes_to_itself(const char *s)
{
	guchar high = 0;

	for (const char *p = s; *p != '\0'; p++)
		high |= (guchar)*p;
	return plain_text_ok && high < 0x80 && strstr(s, "=?") == NULL;
}

/* What GMime's message holds of a text field: the decoded text. */
static char *
decode_text(Span s)
{
	g_autofree char *raw = g_strndup(s.p, s.len);
	char *unfolded = g_mime_utils_header_unfold(raw);
	char *text;

	if (decodes_to_itself(unfolded))
		return unfolded;
	text = g_mime_utils_header_decode_text(parser_options, unfolded);
	g_free(unfolded);
	return text;
}

/* Whether GMime's parser reads the raw Content-Type value @s as a text
 * type (g_mime_parse_content_type(): after blanks, the token "text",
 * '/', a subtype token).  When the value does not start so plainly,
 * g_mime_content_type_parse() says, which gives application/octet-stream
 * on a syntax error. */
static gboolean
raw_type_is_text(Span s)
{
	const char *p = s.p, *end = s.p + s.len;
	g_autofree char *raw = NULL;
	GMimeContentType *ct;
	gboolean text;

	while (p < end && pgate_ingest__is_wsp(*p))
		p++;
	if (end - p > 5 && g_ascii_strncasecmp(p, "text/", 5) == 0 &&
	    g_ascii_isalnum(p[5]))
		return TRUE;
	raw = g_strndup(s.p, s.len);
	ct = g_mime_content_type_parse(parser_options, raw);
	text = g_ascii_strcasecmp(g_mime_content_type_get_media_type(ct),
				  "text") == 0;
	g_object_unref(ct);
	return text;
}

/* Fills in->view from the fields of a plain block; FALSE when GMime's
 * message has to read them. */
static gboolean
view_decode(MimeInput *in, Decoded *d)
{
	MailView *view = &in->view;

	if (!addr_append) {
		add_addresses(&view->from, d->last[FIELD_FROM], &d->ok);
		add_addresses(&view->to, d->last[FIELD_TO], &d->ok);
		add_addresses(&view->cc, d->last[FIELD_CC], &d->ok);
	}
	if (!d->ok)
		return FALSE;
	if (d->last[FIELD_SUBJECT].p != NULL)
		view->subject = in->subject =
			decode_text(d->last[FIELD_SUBJECT]);
	if (d->last[FIELD_DATE].p != NULL) {
		g_autofree char *text = decode_text(d->last[FIELD_DATE]);

		view->date = g_mime_utils_header_decode_date(text);
	}
	view->first_from = d->first_from;
	return TRUE;
}

/*
 * A plain message whose only part is text without transfer encoding needs
 * no MIME parse.  Of its Content-* fields (at most one Content-Type and
 * one Content-Transfer-Encoding here) GMime's parser picks the part's
 * class by the Content-Type raw value, a text one (parser_content_type(),
 * g_mime_object_new_type()); the part's content type is
 * g_mime_content_type_parse() of the decoded value, text/plain without
 * the field (object_header_changed(), parser_construct_leaf_part()); its
 * encoding g_mime_content_encoding_from_string() of the decoded value
 * (gmime-part.c, process_header()); and its content, the whole body
 * (parser_scan_content() with no boundary).  Returns: FALSE when
 * GMime has to parse the message.
 */
static gboolean
view_text_part(MimeInput *in, const Decoded *d, const Layout *lay)
{
	MailView *view = &in->view;

	if (d->count[FIELD_CONTENT_TYPE] > 1 ||
	    d->count[FIELD_CONTENT_ENCODING] > 1)
		return FALSE;
	if (d->count[FIELD_CONTENT_ENCODING] == 1) {
		g_autofree char *v = decode_text(d->last[FIELD_CONTENT_ENCODING]);

		switch (g_mime_content_encoding_from_string(v)) {
		case GMIME_CONTENT_ENCODING_DEFAULT:
		case GMIME_CONTENT_ENCODING_7BIT:
		case GMIME_CONTENT_ENCODING_8BIT:
		case GMIME_CONTENT_ENCODING_BINARY:
			break;
		default:
			return FALSE;
		}
	}
	if (d->count[FIELD_CONTENT_TYPE] == 1) {
		g_autofree char *v = NULL;

		if (!raw_type_is_text(d->last[FIELD_CONTENT_TYPE]))
			return FALSE;
		v = decode_text(d->last[FIELD_CONTENT_TYPE]);
		view->text_type = g_mime_content_type_parse(parser_options, v);
	} else {
		view->text_type = g_mime_content_type_new("text", "plain");
	}
	view->text.p = lay->body;
	view->text.len = (gsize)(lay->end - lay->body);
	return TRUE;
}

/* GMime's parser over in->bytes, which it does not own. */
static void
mime_input_open(MimeInput *in)
{
	in->stream = g_mime_stream_mem_new_with_byte_array(in->bytes);
	g_mime_stream_mem_set_owner(GMIME_STREAM_MEM(in->stream), FALSE);
	in->parser = g_mime_parser_new_with_stream(in->stream);
	g_mime_parser_set_format(in->parser, GMIME_FORMAT_MESSAGE);
}

/* GMime's message of the whole of @lay, read in place, into
 * in->view.message and in->view.part; FALSE when GMime cannot. */
static gboolean
mime_input_parse_message(MimeInput *in, const Layout *lay)
{
	MailView *view = &in->view;

	in->bytes = g_byte_array_new_take((guint8 *)lay->start,
					  (gsize)(lay->end - lay->start));
	mime_input_open(in);
	view->message = g_mime_parser_construct_message(in->parser,
							parser_options);
	if (view->message == NULL)
		return FALSE;
	view->part = g_mime_message_get_mime_part(view->message);
	return TRUE;
}

/* Parses the message of @lay into in->view; FALSE when GMime cannot. */
static gboolean
mime_input_parse(MimeInput *in, const Layout *lay)
{
	MailView *view = &in->view;
	Decoded d;
	gboolean plain = plain_fields(in, lay, &d);

	if (plain && !view_decode(in, &d)) {
		mime_input_clear(in);
		plain = FALSE;
	}
	if (plain && view_text_part(in, &d, lay))
		return TRUE;
	if (plain) {
		in->bytes = content_copy(lay);
		in->owned = TRUE;
		mime_input_open(in);
		view->part = g_mime_parser_construct_part(in->parser,
							  parser_options);
		return view->part != NULL;
	}
	if (!mime_input_parse_message(in, lay))
		return FALSE;
	headers_collect(view->message, &view->raw);
	view->subject = g_mime_message_get_subject(view->message);
	view->from = g_mime_message_get_from(view->message);
	view->to = g_mime_message_get_to(view->message);
	view->cc = g_mime_message_get_cc(view->message);
	view->date = g_mime_message_get_date(view->message);
	return TRUE;
}

/* g_mime_object_get_header(message, "From"). */
static char *
view_from_header(const MailView *view)
{
	if (view->message != NULL)
		return g_strdup(g_mime_object_get_header(
			GMIME_OBJECT(view->message), "From"));
	return view->first_from.p != NULL ? decode_text(view->first_from) :
		NULL;
}

/* The names of the addresses of @list, "" when none. */
static char *
probe_names(InternetAddressList *list)
{
	GString *s = g_string_new(NULL);
	int n = list != NULL ? internet_address_list_length(list) : 0;

	for (int i = 0; i < n; i++) {
		InternetAddress *ia = internet_address_list_get_address(list, i);

		if (INTERNET_ADDRESS_IS_MAILBOX(ia))
			g_string_append(s, internet_address_mailbox_get_addr(
				INTERNET_ADDRESS_MAILBOX(ia)));
		g_string_append_c(s, ';');
	}
	return g_string_free(s, FALSE);
}

/* Checks the rules of the plain path on the GMime that is linked, and
 * which way it reads repeated address fields. */
static void
gmime_probe(void)
{
	static const char mail[] =
		"From: a@x\nTo: c@x\nCc: e@x\nSubject: s1\n"
		"Date: Mon, 1 Jan 2001 00:00:00 +0000\n"
		"From: b@x\nTo: d@x\nCc: f@x\nSubject: s2\n"
		"Date: Tue, 2 Jan 2001 00:00:00 +0000\n\nx\n";
	static const char *const verbatim[] = {
		"text/plain;  charset=\"utf-8\" (x)", "a \t b\t\t?= =x? q?b?",
		"Re: [PATCH v2 1/3] a\tb  c", "=", "?",
	};
	g_autoptr(GMimeStream) stream =
		g_mime_stream_mem_new_with_buffer(mail, sizeof mail - 1);
	g_autoptr(GMimeParser) parser = g_mime_parser_new_with_stream(stream);
	g_autoptr(GMimeMessage) msg = NULL;
	g_autofree char *from = NULL, *to = NULL, *cc = NULL;
	GDateTime *date;

	g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
	msg = g_mime_parser_construct_message(parser, parser_options);
	if (msg == NULL)
		return;
	from = probe_names(g_mime_message_get_from(msg));
	to = probe_names(g_mime_message_get_to(msg));
	cc = probe_names(g_mime_message_get_cc(msg));
	date = g_mime_message_get_date(msg);
	addr_append = strcmp(from, "a@x;b@x;") == 0 &&
		      strcmp(to, "c@x;d@x;") == 0 &&
		      strcmp(cc, "e@x;f@x;") == 0;
	plain_ok = (addr_append || (strcmp(from, "b@x;") == 0 &&
				    strcmp(to, "d@x;") == 0 &&
				    strcmp(cc, "f@x;") == 0)) &&
		   g_strcmp0(g_mime_message_get_subject(msg), "s2") == 0 &&
		   date != NULL && g_date_time_get_day_of_month(date) == 2 &&
		   g_strcmp0(g_mime_object_get_header(GMIME_OBJECT(msg),
						      "From"), "a@x") == 0;
	plain_text_ok = TRUE;
	for (guint i = 0; i < G_N_ELEMENTS(verbatim); i++) {
		g_autofree char *d = g_mime_utils_header_decode_text(
			parser_options, verbatim[i]);

		plain_text_ok = plain_text_ok && strcmp(d, verbatim[i]) == 0;
	}
}

gboolean
pgate_ingest__valid_id(const char *s, gsize len)
{
	if (len == 0 || len > PGATE_INGEST_MAX_MSGID)
		return FALSE;
	for (gsize i = 0; i < len; i++)
		if ((guchar)s[i] <= ' ' || (guchar)s[i] >= 127 || s[i] == '<' ||
		    s[i] == '>')
			return FALSE;
	return TRUE;
}

/*
 * The next <...> token from *@pos, whitespace inside it removed (long IDs
 * get folded); invalid tokens are skipped.  Returns: (transfer full)
 * (nullable): the ID without brackets.
 */
static char *
next_angle_id(const char **pos)
{
	const char *p = *pos;

	while ((p = strchr(p, '<')) != NULL) {
		const char *close = strchr(p + 1, '>');
		const char *inner = p + 1;
		char *id;
		gsize n;

		if (close == NULL)
			break;
		/* "<a <b@c>": the innermost token */
		for (const char *q = p + 1; q < close; q++)
			if (*q == '<')
				inner = q + 1;
		id = g_malloc((gsize)(close - inner) + 1);
		n = 0;
		for (const char *q = inner; q < close; q++)
			if (!g_ascii_isspace(*q))
				id[n++] = *q;
		id[n] = '\0';
		p = close + 1;
		if (pgate_ingest__valid_id(id, n)) {
			*pos = p;
			return id;
		}
		g_free(id);
	}
	*pos = NULL;
	return NULL;
}

/* Without brackets: the trimmed value when it is one printable token. */
static char *
bare_id(const char *raw, gboolean need_at)
{
	g_autofree char *v = pgate_ingest__clean_value(raw, -1, G_MAXSIZE);

	if (v == NULL || !pgate_ingest__valid_id(v, strlen(v)) ||
	    (need_at && strchr(v, '@') == NULL))
		return NULL;
	return g_steal_pointer(&v);
}

/* The first Message-ID header that holds an ID. */
static char *
find_msgid(const Values *vs)
{
	for (guint i = 0; i < vs->n; i++) {
		const char *pos = vs->v[i];
		char *id = next_angle_id(&pos);

		if (id == NULL && strchr(vs->v[i], '<') == NULL)
			id = bare_id(vs->v[i], FALSE);
		if (id != NULL)
			return id;
	}
	return NULL;
}

/* Whether @id is one of @addrs, the addresses of From, To and Cc: old
 * mailers wrote "In-Reply-To: <addr>'s message of ...". */
static gboolean
is_address(GPtrArray *addrs, const char *id)
{
	if (strchr(id, '@') == NULL)
		return FALSE;
	for (guint i = 0; i < addrs->len; i++)
		if (g_ascii_strcasecmp(g_ptr_array_index(addrs, i), id) == 0)
			return TRUE;
	return FALSE;
}

static char *
find_in_reply_to(const Values *vs, GPtrArray *addrs)
{
	char *id;

	for (guint i = 0; i < vs->n; i++) {
		const char *pos = vs->v[i];

		while (pos != NULL && (id = next_angle_id(&pos)) != NULL) {
			if (!is_address(addrs, id))
				return id;
			g_free(id);
		}
	}
	/* "In-Reply-To: id@host" without brackets */
	if (vs->n > 0 && strchr(vs->v[0], '<') == NULL) {
		id = bare_id(vs->v[0], TRUE);
		if (id != NULL && !is_address(addrs, id))
			return id;
		g_free(id);
	}
	return NULL;
}

static void
add_ids(PgateStrSet *set, const Values *vs, guint *budget)
{
	for (guint i = 0; i < vs->n; i++) {
		const char *pos = vs->v[i];
		char *id;

		while (*budget > 0 && pos != NULL &&
		       (id = next_angle_id(&pos)) != NULL) {
			pgate_ingest__strset_add(set, id);
			(*budget)--;
		}
	}
}

/* Keeps the first reference and the newest max - 1 (all the newest when
 * max is 1: the parent matters most). */
static void
bound_references(GPtrArray *refs, guint max)
{
	guint drop;

	if (refs->len <= max)
		return;
	drop = refs->len - max;
	if (max == 1)
		g_ptr_array_remove_range(refs, 0, drop);
	else
		g_ptr_array_remove_range(refs, 1, drop);
}

/*
 * References as public-inbox builds them: every <...> of every References
 * header, then of every In-Reply-To, oldest first, without duplicates,
 * without IDs that are From/To/Cc addresses or the message's own.
 */
static void
set_threading(PgateMessageRec *rec, const Headers *h, GPtrArray *addrs,
	      guint max_references)
{
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
	PgateStrSet set = { all, NULL };
	guint budget = MAX_REF_TOKENS;

	rec->in_reply_to = find_in_reply_to(&h->in_reply_to, addrs);
	add_ids(&set, &h->references, &budget);
	add_ids(&set, &h->in_reply_to, &budget);
	if (rec->in_reply_to != NULL)
		pgate_ingest__strset_add(&set, g_strdup(rec->in_reply_to));
	pgate_ingest__strset_clear(&set);
	for (guint i = 0; i < all->len; i++) {
		char *id = g_ptr_array_index(all, i);

		if (strcmp(id, rec->msgid) == 0 || is_address(addrs, id))
			continue;
		g_ptr_array_add(rec->references, g_strdup(id));
	}
	bound_references(rec->references, max_references);
}

/* The text inside the first <...>, else the whole value if it is one
 * token: Patchwork's find_project() reading of List-Id. */
static char *
list_id_of(const char *raw)
{
	g_autofree char *v = pgate_ingest__clean_value(
		raw, -1, PGATE_INGEST_MAX_ADDRESS);
	const char *open, *close;

	if (v == NULL)
		return NULL;
	open = strchr(v, '<');
	close = open != NULL ? strchr(open + 1, '>') : NULL;
	if (close != NULL && close > open + 1)
		return g_strndup(open + 1, (gsize)(close - open - 1));
	if (strchr(v, ' ') == NULL)
		return g_steal_pointer(&v);
	return NULL;
}

static void
set_list_id(PgateMessageRec *rec, const Headers *h)
{
	const Values *order[] = { &h->list_id, &h->x_mailing_list, &h->x_list };

	for (guint i = 0; i < G_N_ELEMENTS(order) && rec->list_id == NULL; i++)
		if (order[i]->n > 0)
			rec->list_id = list_id_of(order[i]->v[0]);
}

/* The first word of a header value, lower case. */
static char *
first_word(const char *raw)
{
	g_autofree char *v = pgate_ingest__clean_value(raw, -1, 64);
	gsize n;

	if (v == NULL)
		return g_strdup("");
	n = strcspn(v, " ;(");
	v[n] = '\0';
	return g_ascii_strdown(v, -1);
}

/* RFC 3834: Auto-Submitted other than "no"; Precedence junk.  Also
 * "X-Patchwork-Hint: ignore", which bots such as the "Applied" mails of
 * some maintainers send and Patchwork drops.  "Precedence: list" and
 * "bulk" are not signs of a robot: list servers (vger, infradead,
 * Mailman) put one of them on every message they relay, so they would
 * mark all list mail as automated. */
static void
set_automated(PgateMessageRec *rec, const Headers *h)
{
	if (h->auto_submitted.n > 0) {
		g_autofree char *w = first_word(h->auto_submitted.v[0]);

		if (*w != '\0' && strcmp(w, "no") != 0)
			rec->flags |= PGATE_MSG_FLAG_AUTOMATED;
	}
	if (h->precedence.n > 0) {
		g_autofree char *w = first_word(h->precedence.v[0]);

		if (strcmp(w, "junk") == 0)
			rec->flags |= PGATE_MSG_FLAG_AUTOMATED;
	}
	if (h->pw_hint.n > 0) {
		g_autofree char *w = first_word(h->pw_hint.v[0]);

		if (strcmp(w, "ignore") == 0)
			rec->flags |= PGATE_MSG_FLAG_AUTOMATED;
	}
}

/* ---- addresses ------------------------------------------------------- */

static void
flatten_mailboxes(InternetAddressList *list, GPtrArray *out, guint max,
		  int depth)
{
	int n = list != NULL ? internet_address_list_length(list) : 0;

	for (int i = 0; i < n && out->len < max; i++) {
		InternetAddress *ia =
			internet_address_list_get_address(list, i);

		if (INTERNET_ADDRESS_IS_MAILBOX(ia))
			g_ptr_array_add(out, ia);
		else if (INTERNET_ADDRESS_IS_GROUP(ia) &&
			 depth < MAX_ADDRESS_DEPTH)
			flatten_mailboxes(internet_address_group_get_members(
				INTERNET_ADDRESS_GROUP(ia)), out, max,
				depth + 1);
	}
}

/* The address with its domain in lower case. */
static char *
clean_addr(InternetAddressMailbox *mb)
{
	char *addr = pgate_ingest__clean_value(
		internet_address_mailbox_get_addr(mb), -1,
		PGATE_INGEST_MAX_ADDRESS);
	char *at;

	if (addr == NULL)
		return NULL;
	at = strrchr(addr, '@');
	if (at != NULL)
		for (char *p = at; *p != '\0'; p++)
			*p = g_ascii_tolower(*p);
	return addr;
}

static void
set_from(PgateMessageRec *rec, const MailView *view, GPtrArray *addrs)
{
	g_autoptr(GPtrArray) boxes = g_ptr_array_new();
	InternetAddressMailbox *mb;
	char *addr;

	flatten_mailboxes(view->from, boxes, 1, 0);
	if (boxes->len == 0) {
		/* no address in it: keep what it says */
		g_autofree char *from = view_from_header(view);

		rec->from_name = pgate_ingest__clean_value(
			from, -1, PGATE_INGEST_MAX_ADDRESS);
		return;
	}
	mb = g_ptr_array_index(boxes, 0);
	rec->from_name = pgate_ingest__clean_value(
		internet_address_get_name(INTERNET_ADDRESS(mb)), -1,
		PGATE_INGEST_MAX_ADDRESS);
	addr = clean_addr(mb);
	if (addr != NULL) {
		g_free(rec->from_email);
		rec->from_email = addr;
		g_ptr_array_add(addrs, g_strdup(addr));
	}
}

/* "Name <addr>" or "addr". */
static void
add_recipients(GPtrArray *to, InternetAddressList *list, guint *budget,
	       GPtrArray *addrs)
{
	g_autoptr(GPtrArray) boxes = g_ptr_array_new();

	flatten_mailboxes(list, boxes, *budget, 0);
	for (guint i = 0; i < boxes->len; i++) {
		InternetAddressMailbox *mb = g_ptr_array_index(boxes, i);
		g_autofree char *name = pgate_ingest__clean_value(
			internet_address_get_name(INTERNET_ADDRESS(mb)), -1,
			PGATE_INGEST_MAX_ADDRESS);
		g_autofree char *addr = clean_addr(mb);

		if (addr == NULL)
			continue;
		g_ptr_array_add(to, name != NULL ?
				g_strconcat(name, " <", addr, ">", NULL) :
				g_strdup(addr));
		g_ptr_array_add(addrs, g_steal_pointer(&addr));
		(*budget)--;
	}
}

/* ---- date ------------------------------------------------------------ */

static void
set_date(PgateMessageRec *rec, const MailView *view)
{
	GDateTime *dt = view->date;
	gint64 offset;

	rec->date = 0;
	rec->tz_minutes = 0;
	if (dt == NULL || g_date_time_get_year(dt) < 1970) {
		rec->flags |= PGATE_MSG_FLAG_BAD_DATE;
		return;
	}
	offset = g_date_time_get_utc_offset(dt) / G_TIME_SPAN_MINUTE;
	if (offset < -24 * 60 || offset > 24 * 60) {
		rec->flags |= PGATE_MSG_FLAG_BAD_DATE;
		return;
	}
	rec->date = g_date_time_to_unix(dt);
	rec->tz_minutes = (gint32)offset;
	if (rec->date < 0) {
		rec->date = 0;
		rec->tz_minutes = 0;
		rec->flags |= PGATE_MSG_FLAG_BAD_DATE;
	}
}

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
static char *
text_to_utf8(char *text, gsize len, const char *charset)
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
 * with text_to_utf8(); other text is converted here, and *@charset
 * becomes "utf-8".  Takes @ba, the content as sent, transfer encoding
 * undone; *@charset is its content type's.
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

static char *
part_text(GMimePart *part, const GByteArray *raw, const char **charset)
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
		append_stripped(b->comment, text_to_utf8(text, len, charset));
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
			append_stripped(b->comment, text_to_utf8(
				comment, strlen(comment), charset));
		g_free(text);
	} else if (!b->reply && plain) {
		append_stripped(b->comment, text_to_utf8(text, len, charset));
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
		text = part_text(GMIME_PART(obj), b->raw, &charset);
		body_add_text(b, g_mime_content_type_get_media_subtype(ct),
			      text, charset);
	}
}

/* Patchwork's clean_content(): everything from a "-- " signature line or
 * a line of underscores (a list footer) goes, then the outer whitespace. */
static char *
clean_content(GString *s)
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

/* ---- the message ----------------------------------------------------- */

static void
set_subject(PgateMessageRec *rec, const MailView *view)
{
	g_free(rec->subject);
	rec->subject = pgate_ingest__clean_value(
		view->subject, -1, PGATE_INGEST_MAX_SUBJECT);
	if (rec->subject == NULL)
		rec->subject = g_strdup("");
	pgate_ingest__subject_parse(rec->subject, rec);
}

static void
set_addresses(PgateMessageRec *rec, const MailView *view, guint max,
	      GPtrArray *addrs)
{
	guint budget = max;

	set_from(rec, view, addrs);
	add_recipients(rec->to, view->to, &budget, addrs);
	add_recipients(rec->cc, view->cc, &budget, addrs);
}

static void
set_msgid(PgateMessageRec *rec, const Headers *h)
{
	g_free(rec->msgid);
	rec->msgid = find_msgid(&h->msgid);
	if (rec->msgid == NULL) {
		rec->msgid = synthetic_msgid(rec->content_hash);
		rec->flags |= PGATE_MSG_FLAG_SYNTHETIC_ID;
	}
}

/* body_walk() of a part that view_text_part() read. */
static void
body_text_part(Body *b, GMimeContentType *ct, Span content)
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

static void
read_body(PgateMail *mail, const MailView *view, const GByteArray *raw,
	  gboolean reply)
{
	Body b = { reply, raw, g_string_new(NULL), NULL, 0 };

	if (view->text_type != NULL)
		body_text_part(&b, view->text_type, view->text);
	else
		body_walk(&b, view->part, 0);
	mail->body = clean_content(b.comment);
	mail->diff = b.diff;
	if (mail->diff != NULL && *mail->diff == '\0')
		g_clear_pointer(&mail->diff, g_free);
}

/* Whether @mail is a cover letter whose diff is git format-patch's
 * interdiff ("Interdiff against v1:" then a diff of the two versions'
 * trees, or "Interdiff:" with --interdiff and no previous version
 * named): a 0/N cover, and the diff no patch of the series. */
static gboolean
interdiff_cover(const PgateMail *mail)
{
	static const char *const heads[] = { "Interdiff against ",
					     "Interdiff vs ", "Interdiff:" };
	const char *p = mail->body;

	if (mail->diff == NULL || p == NULL || mail->rec->number != 0 ||
	    mail->rec->total == 0)
		return FALSE;
	for (; *p != '\0'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
		for (gsize i = 0; i < G_N_ELEMENTS(heads); i++)
			if (strncmp(p, heads[i], strlen(heads[i])) == 0)
				return TRUE;
	}
	return FALSE;
}

/* Patchwork's order (parse_mail): a reply is a comment whatever it
 * holds; then a diff or a pull request makes a patch; then 0/N a
 * cover (a cover's interdiff is no patch: interdiff_cover()). */
static PgateMsgKind
classify(const PgateMail *mail, gboolean reply)
{
	const PgateMessageRec *rec = mail->rec;

	if (reply)
		return PGATE_MSG_KIND_REPLY;
	if (rec->pull_url != NULL)
		return PGATE_MSG_KIND_PULL;
	if (mail->diff != NULL && !interdiff_cover(mail))
		return PGATE_MSG_KIND_PATCH;
	if (rec->number == 0 && rec->total > 0)
		return PGATE_MSG_KIND_COVER;
	return PGATE_MSG_KIND_OTHER;
}

static void
read_diff(PgateMail *mail)
{
	PgateMessageRec *rec = mail->rec;
	gsize len = strlen(mail->diff);

	if (pgate_ingest__diff_scan(mail->diff, len, rec->diff_files,
				    PGATE_INGEST_MAX_DIFF_FILES))
		rec->flags |= PGATE_MSG_FLAG_BINARY_PATCH;
	rec->patch_id = pgate_patch_id_stable(mail->diff, len);
	rec->diff_sketch_len = pgate_diff_sketch(mail->diff, len,
						 rec->diff_sketch);
}

static void
fill(PgateMail *mail, const MimeInput *in, const PgateIngestOptions *o)
{
	PgateMessageRec *rec = mail->rec;
	const MailView *view = &in->view;
	const Headers *h = &view->raw;
	/* From, To and Cc addresses, which are no Message-IDs */
	g_autoptr(GPtrArray) addrs = g_ptr_array_new_with_free_func(g_free);
	gboolean reply;

	set_subject(rec, view);
	reply = pgate_ingest__subject_is_reply(rec->subject);
	set_addresses(rec, view, o->max_recipients, addrs);
	set_msgid(rec, h);
	set_threading(rec, h, addrs, o->max_references);
	set_date(rec, view);
	set_list_id(rec, h);
	set_automated(rec, h);

	read_body(mail, view, in->bytes, reply);
	if (!reply)
		rec->pull_url = pgate_ingest__pull_url(mail->body);
	pgate_ingest__body_fields(mail->body, o->max_trailers, rec);
	rec->kind = classify(mail, reply);
	/* (a cover's interdiff is read as no diff: its links as a cover's,
	 * no patch-id) */
	if (!reply)
		pgate_ingest__body_links(mail->body,
					 mail->diff != NULL &&
					 rec->kind != PGATE_MSG_KIND_COVER,
					 o->max_trailers, rec);
	if (mail->diff != NULL && rec->kind != PGATE_MSG_KIND_COVER)
		read_diff(mail);
}

static void
reject(PgateMail *mail, const char *why)
{
	PgateMessageRec *rec = mail->rec;

	rec->kind = PGATE_MSG_KIND_REJECTED;
	rec->flags |= PGATE_MSG_FLAG_SYNTHETIC_ID | PGATE_MSG_FLAG_BAD_DATE;
	g_free(rec->msgid);
	rec->msgid = synthetic_msgid(rec->content_hash);
	rec->reject_reason = g_strdup(why);
	if (mail->body == NULL)
		mail->body = g_strdup("");
}

PgateMail *
pgate_mail_parse(const char *raw, gsize len, const PgateIngestOptions *opts)
{
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateMail *mail = g_new0(PgateMail, 1);
	g_autofree char *detail = NULL;
	const char *why;
	Layout lay;

	g_return_val_if_fail(raw != NULL || len == 0, NULL);

	pgate_ingest_init();
	if (opts != NULL)
		o = *opts;
	pgate_ingest_options_resolve(&o);
	mail->rec = pgate_message_rec_new();

	layout_scan(raw != NULL ? raw : "", len, &lay);
	why = layout_check(&lay, &detail);
	if (why == NULL && (gsize)(lay.end - lay.start) > G_MAXUINT)
		why = "not read: larger than 4 GiB";
	content_hash(&lay, why != NULL, mail->rec->content_hash);
	if (why == NULL) {
		MimeInput in;

		mime_input_init(&in);
		if (mime_input_parse(&in, &lay))
			fill(mail, &in, &o);
		else
			why = "GMime could not read a message";
		mime_input_clear(&in);
	}
	if (why != NULL)
		reject(mail, why);
	return mail;
}

void
pgate_mail_free(PgateMail *mail)
{
	if (mail == NULL)
		return;
	pgate_message_rec_free(mail->rec);
	g_free(mail->body);
	g_free(mail->diff);
	g_free(mail);
}

/* ---- a reply's own text ----------------------------------------------
 *
 * What the trust decision reads a command in ("patchgate: approve",
 * "Recheck-request: ..."): the text the replier wrote, which is one part
 * of the reply and not every text part pgate_mail_parse() puts in the
 * body.  A maintainer who answers "not approved" and attaches the
 * original (message/rfc822, or the original saved as a text file) must
 * not approve with the original's words.  So of the MIME tree exactly
 * one part is read (own_part()):
 *
 *  - the first text part in document order that is no attachment and
 *    not inside an attached message; "text part" is text/plain or
 *    text/html, and of a multipart/alternative its text/plain
 *    alternative (the same words: the plain one is read exactly), else
 *    its text/html one;
 *  - no other part, ever: neither a second text part (Apple Mail writes
 *    the text after an inline attachment as a part of its own, and
 *    marks attachments it can show "inline"; nothing tells such a part
 *    from an attached document but its position), nor an attachment,
 *    nor anything of a message/rfc822 part, inline or not.  A command
 *    counts only in the first part, above the attachments: clients put
 *    what the user types first there.
 *
 * An attachment is a part with a Content-Disposition other than
 * "inline" (RFC 2183 2.8: an unknown disposition is taken as
 * "attachment"), or with a file name (a disposition filename or a
 * Content-Type name), as Apple Mail names the attachments it marks
 * inline.  multipart/signed is read as any multipart: its first part is
 * the content, its second the signature (not text).  Encrypted mail has
 * no text part to read.  At most PGATE_INGEST_MAX_PARTS parts are
 * looked at, PGATE_INGEST_MAX_DEPTH deep.
 *
 * An HTML part is rendered to text (html.c); then, for either, the
 * signature is cut as the body is (clean_content()) and the quoted lines
 * are dropped with pgate_mail_body_own_text() (address.c).
 */

typedef enum {
	OWN_NONE,
	OWN_HTML,
	OWN_PLAIN,
} OwnKind;

static gboolean
is_attachment(GMimeObject *obj)
{
	const char *disp = g_mime_object_get_disposition(obj);

	if (disp != NULL && g_ascii_strcasecmp(disp, "inline") != 0)
		return TRUE;
	return GMIME_IS_PART(obj) &&
	       g_mime_part_get_filename(GMIME_PART(obj)) != NULL;
}

/* The part of @obj a reply's own text is read from (above); *@parts
 * counts the parts looked at. */
static OwnKind
own_part(GMimeObject *obj, int depth, guint *parts, GMimePart **out)
{
	GMimeContentType *ct;
	const char *sub;

	if (obj == NULL || depth > PGATE_INGEST_MAX_DEPTH ||
	    *parts >= PGATE_INGEST_MAX_PARTS)
		return OWN_NONE;
	(*parts)++;
	if (is_attachment(obj) || GMIME_IS_MESSAGE_PART(obj))
		return OWN_NONE;
	ct = g_mime_object_get_content_type(obj);
	sub = ct != NULL ? g_mime_content_type_get_media_subtype(ct) : NULL;
	if (GMIME_IS_MULTIPART(obj)) {
		GMimeMultipart *mp = GMIME_MULTIPART(obj);
		gboolean alt = sub != NULL &&
			       g_ascii_strcasecmp(sub, "alternative") == 0;
		int n = g_mime_multipart_get_count(mp);
		OwnKind best = OWN_NONE;

		for (int i = 0; i < n; i++) {
			GMimePart *cand = NULL;
			OwnKind k = own_part(g_mime_multipart_get_part(mp, i),
					     depth + 1, parts, &cand);

			if (k == OWN_NONE)
				continue;
			if (!alt || k == OWN_PLAIN) {
				*out = cand;
				return k;
			}
			if (best == OWN_NONE) {
				best = k;
				*out = cand;
			}
		}
		return best;
	}
	if (!GMIME_IS_PART(obj) || sub == NULL ||
	    g_ascii_strcasecmp(g_mime_content_type_get_media_type(ct),
			       "text") != 0)
		return OWN_NONE;
	*out = GMIME_PART(obj);
	if (g_ascii_strcasecmp(sub, "plain") == 0)
		return OWN_PLAIN;
	if (g_ascii_strcasecmp(sub, "html") == 0)
		return OWN_HTML;
	return OWN_NONE;
}

char *
pgate_mail_reply_own_text(const char *raw, gsize len,
			  const PgateIngestOptions *opts, guint max_lines,
			  GError **error)
{
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	g_autofree char *detail = NULL;
	const char *why, *charset = NULL;
	GMimePart *part = NULL;
	guint parts = 0;
	MimeInput in;
	OwnKind kind;
	Layout lay;
	GString *cut;
	char *text, *own;

	g_return_val_if_fail(raw != NULL || len == 0, NULL);
	pgate_ingest_init();
	if (opts != NULL)
		o = *opts;
	pgate_ingest_options_resolve(&o);
	if (len > o.max_message_size) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_TOO_LARGE,
			    "a reply of %" G_GSIZE_FORMAT " bytes, over %"
			    G_GSIZE_FORMAT, len, o.max_message_size);
		return NULL;
	}
	layout_scan(raw != NULL ? raw : "", len, &lay);
	why = layout_check(&lay, &detail);
	if (why == NULL && (gsize)(lay.end - lay.start) > G_MAXUINT)
		why = "not read: larger than 4 GiB";
	if (why != NULL) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "%s", why);
		return NULL;
	}
	mime_input_init(&in);
	if (!mime_input_parse_message(&in, &lay)) {
		mime_input_clear(&in);
		g_set_error_literal(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_INVALID,
				    "GMime could not read a message");
		return NULL;
	}
	kind = own_part(in.view.part, 0, &parts, &part);
	if (kind == OWN_NONE) {
		mime_input_clear(&in);
		return g_strdup("");
	}
	text = part_text(part, in.bytes, &charset);
	text = text_to_utf8(text, strlen(text), charset);
	mime_input_clear(&in);          /* charset was the part's */
	if (kind == OWN_HTML) {
		char *rendered = pgate_ingest__html_to_text(text, strlen(text),
							    max_lines);

		g_free(text);
		text = rendered;
	}
	cut = g_string_new(text);
	g_free(text);
	text = clean_content(cut);      /* takes cut */
	own = pgate_mail_body_own_text(text, max_lines);
	g_free(text);
	return own;
}
