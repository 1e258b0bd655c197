/* ingest-private.h - shared between the ingest module's own files (and its
 * unit tests) only.
 *
 * The mail model is split in five files: parse.c reads the MIME structure
 * and the headers, headers.c makes the record's fields of the headers,
 * body.c makes the body and the diff of the text parts, subject.c reads
 * what the words say (subject markers, pull requests, trailers, b4
 * lines), patchid.c reads diffs (where one starts and ends in a mail body,
 * the files it touches, its `git patch-id --stable`).  Text handed
 * between them has LF line ends and no NUL bytes; it is UTF-8 but for
 * diffs, which stay as sent.
 */
#pragma once

#include "ingest/ingest.h"

#include <gmime/gmime.h>

G_BEGIN_DECLS

/* A space or a tab: what may fold a header line or stand between words.
 * (Other classes: g_ascii_isspace(), g_ascii_isdigit().) */
static inline gboolean
pgate_ingest__is_wsp(char c)
{
	return c == ' ' || c == '\t';
}

/* Bounds on what one header gives the record; longer values are cut on a
 * UTF-8 character boundary. */
#define PGATE_INGEST_MAX_MSGID 995        /* a Message-ID, without <> */
#define PGATE_INGEST_MAX_SUBJECT 2048
#define PGATE_INGEST_MAX_ADDRESS 512      /* a name or an address */
#define PGATE_INGEST_MAX_PATH 4096        /* a file name in a diff */
#define PGATE_INGEST_MAX_DIFF_FILES 4096
#define PGATE_INGEST_MAX_PARTS 256        /* MIME parts walked */
#define PGATE_INGEST_MAX_DEPTH 16         /* MIME nesting */

/* ---- parse.c: strings ------------------------------------------------- */

/* html.c: (transfer full): what a reader sees as the text of HTML @s,
 * as far as a command in it is concerned (tags out, references decoded,
 * nothing of the quote), at most @max_lines line breaks. */
char *pgate_ingest__html_to_text(const char *s, gsize len, guint max_lines);
/* body.c: windows-1252's characters for the bytes 0x80 to 0x9f (0:
 * undefined), which HTML's numeric references of them mean too. */
extern const guint16 pgate_ingest__cp1252_high[32];

/**
 * pgate_ingest__clean_value:
 * @len: the length of @s, or -1 when NUL-terminated
 *
 * Returns: (transfer full) (nullable): @s as the record keeps a header
 *   value: CR and LF removed (unfolding), runs of whitespace made one
 *   space, trimmed, valid UTF-8, at most @max bytes; %NULL when empty.
 */
char *pgate_ingest__clean_value(const char *s, gssize len, gsize max);

/* Strings without duplicates. */

typedef struct {
	GPtrArray *items;    /* the caller's array, which owns the strings */
	GHashTable *seen;    /* (nullable): made once @items is not small */
} PgateStrSet;

gboolean pgate_ingest__strset_has(const PgateStrSet *set, const char *s);
/* Takes @s; returns %FALSE (and frees it) when it is there already. */
gboolean pgate_ingest__strset_add(PgateStrSet *set, char *s);
void pgate_ingest__strset_clear(PgateStrSet *set);

/* ---- parse.c: the message as read ------------------------------------ */

/* Occurrences of one header field looked at. */
#define PGATE_INGEST_MAX_HEADERS_KEPT 32

typedef struct {
	/* raw values, as GMime keeps them */
	const char *v[PGATE_INGEST_MAX_HEADERS_KEPT];
	guint n;
} PgateMailValues;

typedef struct {
	PgateMailValues msgid, in_reply_to, references;
	PgateMailValues list_id, x_mailing_list, x_list;
	PgateMailValues auto_submitted, precedence, pw_hint;
} PgateMailHeaders;

/* The raw value of a field: a span of the header block. */
typedef struct {
	const char *p;
	gsize len;
} PgateMailSpan;

/* What the message says, from GMime's message or read from the plain
 * header block; everything lives as long as the MimeInput (parse.c). */
typedef struct {
	PgateMailHeaders raw;              /* the fields of wanted[] */
	const char *subject;               /* (nullable) decoded */
	InternetAddressList *from, *to, *cc;   /* (nullable) */
	GDateTime *date;                   /* (nullable) */
	GMimeObject *part;                 /* (nullable) the top MIME part */
	GMimeMessage *message;             /* (nullable) when parsed whole */
	PgateMailSpan first_from;          /* when plain */
	/* when plain and one text part without transfer encoding, which
	 * GMime does not parse: its content type and its content */
	GMimeContentType *text_type;       /* (nullable) */
	PgateMailSpan text;
} PgateMailView;

/* (transfer full) (nullable): g_mime_object_get_header(message, "From")
 * of @view. */
char *pgate_ingest__view_from_header(const PgateMailView *view);
/* (transfer full): the Message-ID given to a message without one, of
 * its content hash. */
char *pgate_ingest__synthetic_msgid(const guint8 hash[32]);

/* ---- headers.c ------------------------------------------------------- */

/* An ID (Message-ID, change-id ...): printable ASCII but '<' and '>', at
 * most PGATE_INGEST_MAX_MSGID bytes. */
gboolean pgate_ingest__valid_id(const char *s, gsize len);

/* Sets the record's fields that the headers of @view give: subject (and
 * what it says: pgate_ingest__subject_parse()), from, to, cc, msgid,
 * in_reply_to, references, date, list_id, the AUTOMATED, BAD_DATE and
 * SYNTHETIC_ID flags; within the bounds of @o. */
void pgate_ingest__read_headers(PgateMessageRec *rec,
				const PgateMailView *view,
				const PgateIngestOptions *o);

/* ---- body.c ---------------------------------------------------------- */

/* (transfer full): @text (taken; NUL-terminated, @len bytes, of an
 * ASCII-compatible @charset, nullable) as UTF-8, as Patchwork's
 * _find_content() decodes it, falling back to UTF-8, windows-1252,
 * ISO-8859-1. */
char *pgate_ingest__text_to_utf8(char *text, gsize len, const char *charset);
/* (transfer full): the content of @part (@raw: the bytes GMime parsed)
 * with LF line ends and no NUL bytes; converted to UTF-8 when its
 * charset is not ASCII-compatible, and *@charset then "utf-8", else the
 * part's. */
char *pgate_ingest__part_text(GMimePart *part, const GByteArray *raw,
			      const char **charset);
/* (transfer full): Patchwork's clean_content() of @s (taken): cut at a
 * signature or list footer line, trimmed. */
char *pgate_ingest__clean_content(GString *s);
/* Sets mail->body (the cleaned comment, UTF-8) and mail->diff (as sent,
 * nullable) from the text parts of @view; @reply: the message is a reply
 * (every text/plain part is comment). */
void pgate_ingest__read_body(PgateMail *mail, const PgateMailView *view,
			     const GByteArray *raw, gboolean reply);

/* ---- subject.c ------------------------------------------------------- */

/**
 * pgate_ingest__subject_is_reply:
 * @subject: a decoded subject
 *
 * Returns: %TRUE when it starts with "Re" and then ':' or whitespace, in
 *   any case (Patchwork's subject_check: "Re foo" counts, "Fwd:" not), or
 *   with "Aw:" (b4's rule, for German mailers).
 */
gboolean pgate_ingest__subject_is_reply(const char *subject);

/**
 * pgate_ingest__subject_parse:
 * @subject: a decoded subject, whitespace already collapsed
 * @rec: the record whose name, prefixes (empty before), version, number,
 *   total and SUBJECT_RFC/SUBJECT_RESEND flags are set
 *
 * Patchwork's clean_subject(), parse_series_marker() and parse_version()
 * with b4's additions; see subject.c.
 */
void pgate_ingest__subject_parse(const char *subject, PgateMessageRec *rec);

/**
 * pgate_ingest__pull_url:
 * @text: a mail body
 *
 * Returns: (transfer full) (nullable): "URL BRANCH" of the git
 *   request-pull text in @text, as Patchwork's parse_pull_request() finds
 *   it, for the schemes git://, ssh://, git+ssh://, http(s):// and
 *   user@host:path only.
 */
char *pgate_ingest__pull_url(const char *text);

/**
 * pgate_ingest__body_fields:
 * @body: a cleaned mail body
 * @max_items: the most trailers, and the most values of each b4 list
 *
 * Fills rec->trailers (git's trailer block, and the well-known trailers
 * anywhere in the message above "---") and the b4 fields (base_commit,
 * change_id, the prerequisites, depends_on, based_on).
 */
void pgate_ingest__body_fields(const char *body, guint max_items,
			       PgateMessageRec *rec);

/**
 * pgate_ingest__body_links:
 * @patch: @body is a patch's comment: only its notes (from the "---"
 *   line on) are read
 *
 * Reads the Message-IDs named by http(s) URLs (lore, public-inbox,
 * lkml.kernel.org/r, patch.msgid.link: the path component holding an
 * "@", percent-decoded), skipping quoted lines, and Patchew's
 * "Supersedes: <ID>", and sorts each by what its text says (subject.c,
 * "which links are versions"): older versions to rec->linked_msgids,
 * dependencies to rec->depends_on, the rest to rec->ref_msgids; each
 * with its line in rec->link_lines ("KIND ID LINE").  Of a patch's
 * commit message (above "---") only b4's "Link to vN:" lines are read.
 * At most @max_items links in all: reading stops there.
 */
void pgate_ingest__body_links(const char *body, gboolean patch,
			      guint max_items, PgateMessageRec *rec);

/* ---- patchid.c ------------------------------------------------------- */

/**
 * pgate_ingest__split_patch:
 * @text: a text/plain part
 * @out_diff: (out) (transfer full) (nullable): the diff in it
 * @out_comment: (out) (transfer full) (nullable): everything else
 *
 * Patchwork's parse_patch() state machine, with the fixes listed in
 * patchid.c.
 */
void pgate_ingest__split_patch(const char *text, gsize len, char **out_diff,
			       char **out_comment);

/**
 * pgate_ingest__diff_scan:
 * @diff: a diff
 * @files: paths the diff touches are appended here (no duplicates,
 *   /dev/null left out, a/ and b/ removed), at most @max_files of them
 *
 * Returns: %TRUE when the diff has a binary change ("GIT binary patch"
 *   or "Binary files ... differ").
 */
gboolean pgate_ingest__diff_scan(const char *diff, gsize len, GPtrArray *files,
				 guint max_files);

G_END_DECLS
