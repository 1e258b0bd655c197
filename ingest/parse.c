/* parse.c - one raw message into a PgateMail.
 *
 * GMime parses the message once, reading the caller's bytes in place.
 * From its result come the headers (Message-ID, threading, addresses,
 * date, list: headers.c) and the body (body.c): text parts are decoded as
 * Patchwork's _find_content() does, the first text/plain part is split
 * into comment and diff (patchid.c), a text/x-patch or text/x-diff part
 * is the diff.
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

#include <gmime/gmime.h>
#include <string.h>

#include "common/autocleanups.h"

G_DEFINE_QUARK(pgate-ingest-error-quark, pgate_ingest_error)

/* Input that is not a mail: more NUL bytes than this in the header
 * block, or at least four making more than a sixteenth of it.  A few NULs
 * are what a broken mailer leaves (Patchwork's codec-null fuzz case is a
 * patch). */
#define MAX_HEADER_NULS 16
#define MAX_HEADER_BLOCK (1024u * 1024)

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

char *
pgate_ingest__synthetic_msgid(const guint8 hash[32])
{
	char hex[33];

	pgate_hex_encode(hex, hash, 16);
	return g_strdup_printf("pgate-%s@synthetic.invalid", hex);
}

/* ---- headers --------------------------------------------------------- */

/* The fields read by their raw values. */
static const struct {
	const char *name;
	gsize len;
	gsize offset;
} wanted[] = {
#define WANT(name, field) { name, sizeof name - 1, \
			    G_STRUCT_OFFSET(PgateMailHeaders, field) }
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
 * PGATE_INGEST_MAX_HEADERS_KEPT of them already. */
static PgateMailValues *
wanted_values(PgateMailHeaders *h, const char *name, gsize len)
{
	for (guint w = 0; w < G_N_ELEMENTS(wanted); w++) {
		PgateMailValues *vs = G_STRUCT_MEMBER_P(h, wanted[w].offset);

		if (len == wanted[w].len &&
		    g_ascii_tolower(name[0]) == g_ascii_tolower(wanted[w].name[0]) &&
		    g_ascii_strncasecmp(name, wanted[w].name, len) == 0)
			return vs->n < PGATE_INGEST_MAX_HEADERS_KEPT ?
			       vs : NULL;
	}
	return NULL;
}

static void
headers_collect(GMimeMessage *msg, PgateMailHeaders *h)
{
	GMimeHeaderList *list =
		g_mime_object_get_header_list(GMIME_OBJECT(msg));
	int count = g_mime_header_list_get_count(list);

	memset(h, 0, sizeof *h);
	for (int i = 0; i < count; i++) {
		GMimeHeader *hdr = g_mime_header_list_get_header_at(list, i);
		const char *name = g_mime_header_get_name(hdr);
		const char *v = g_mime_header_get_raw_value(hdr);
		PgateMailValues *vs = wanted_values(h, name, strlen(name));

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
	PgateMailView view;
} MimeInput;

static void
mime_input_init(MimeInput *in)
{
	memset(in, 0, sizeof *in);
}

static void
mime_input_clear(MimeInput *in)
{
	PgateMailView *view = &in->view;

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
	PgateMailSpan last[FIELD_CONTENT_ENCODING + 1];   /* by FieldKind */
	guint count[FIELD_CONTENT_ENCODING + 1];
	PgateMailSpan first_from;
	gboolean ok;                       /* FALSE: parse the message whole */
} Decoded;

/*
 * Adds the addresses of @s to *@list.  internet_address_list_parse() gives
 * what internet_address_list_append_parse() would add, or NULL when the
 * field holds no address or has a syntax error after which GMime keeps
 * what it read before: the message is then parsed whole.
 */
static void
add_addresses(InternetAddressList **list, PgateMailSpan s, gboolean *ok)
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
	PgateMailValues *vs = kind == FIELD_OTHER ?
		wanted_values(&in->view.raw, name, name_len) : NULL;
	PgateMailSpan s = { value, (gsize)(end - value) };

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
decode_text(PgateMailSpan s)
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
raw_type_is_text(PgateMailSpan s)
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
	PgateMailView *view = &in->view;

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
	PgateMailView *view = &in->view;

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
	PgateMailView *view = &in->view;

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
	PgateMailView *view = &in->view;
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
char *
pgate_ingest__view_from_header(const PgateMailView *view)
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

/* ---- the message ----------------------------------------------------- */

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
	const PgateMailView *view = &in->view;
	gboolean reply;

	pgate_ingest__read_headers(rec, view, o);
	reply = pgate_ingest__subject_is_reply(rec->subject);

	pgate_ingest__read_body(mail, view, in->bytes, reply);
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
	rec->msgid = pgate_ingest__synthetic_msgid(rec->content_hash);
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
 * signature is cut as the body is (pgate_ingest__clean_content(),
 * body.c) and the quoted lines are dropped with
 * pgate_mail_body_own_text() (address.c).
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
	text = pgate_ingest__part_text(part, in.bytes, &charset);
	text = pgate_ingest__text_to_utf8(text, strlen(text), charset);
	mime_input_clear(&in);          /* charset was the part's */
	if (kind == OWN_HTML) {
		char *rendered = pgate_ingest__html_to_text(text, strlen(text),
							    max_lines);

		g_free(text);
		text = rendered;
	}
	cut = g_string_new(text);
	g_free(text);
	text = pgate_ingest__clean_content(cut);      /* takes cut */
	own = pgate_mail_body_own_text(text, max_lines);
	g_free(text);
	return own;
}
