/* mbox.c - splitting an mbox into messages, in bounded memory.
 *
 * A message starts at a "From " line that is the first line of the file or
 * follows an empty line, and that looks like an mbox separator: after the
 * sender comes a time of day "hh:mm" followed by a plausible year, as git
 * mailsplit checks (is_from_line).  The empty line before a separator
 * belongs to the mbox, not to the message, and is removed.
 *
 * Unescaping: mboxrd turns "^>+From " into one '>' less; mboxo turns
 * "^>From " into "From " and leaves deeper quoting alone.
 */
#include "ingest/ingest.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1u << 20)

struct PgateMboxReader {
	int fd;
	PgateMboxFormat format;
	gsize max;
	guint8 *buf;          /* read buffer */
	gsize len, pos;       /* valid bytes, parse position */
	gboolean eof;
	guint64 offset;       /* file offset of buf[0] */
	GByteArray *cur;      /* the message being collected */
	gboolean cur_truncated;
	gboolean in_message;
	gboolean prev_blank;  /* the line before was empty */
	gboolean pending_blank; /* an empty line not yet added to cur */
	const guint8 *pending;  /* (nullable): that line, while in buf */
	gboolean first_line;
	/* bytes of buf still to be added to cur: consecutive lines are added
	 * with one copy, or none when they are the whole message */
	const guint8 *run;      /* (nullable) */
	gsize run_len;
};

PgateMboxReader *
pgate_mbox_reader_new(int fd, PgateMboxFormat format, gsize max_message_size)
{
	PgateMboxReader *r = g_new0(PgateMboxReader, 1);

	r->fd = fd;
	r->format = format;
	r->max = max_message_size;
	r->buf = g_malloc(CHUNK);
	r->cur = g_byte_array_new();
	r->first_line = TRUE;
	return r;
}

void
pgate_mbox_reader_free(PgateMboxReader *r)
{
	if (r == NULL)
		return;
	g_free(r->buf);
	g_byte_array_unref(r->cur);
	g_free(r);
}

guint64
pgate_mbox_reader_offset(PgateMboxReader *r)
{
	return r->offset + r->pos;
}

/* git's is_from_line(): "From " SENDER ... hh:mm[:ss] YEAR */
static gboolean
is_from_line(const char *line, gsize len)
{
	const char *colon, *end = line + len, *y;
	long year = 0;

	if (len < 20 || memcmp(line, "From ", 5) != 0)
		return FALSE;
	colon = line + len - 2;
	line += 5;
	for (;;) {
		if (colon < line)
			return FALSE;
		if (*--colon == ':')
			break;
	}
	if (colon - 4 < line || colon + 3 > end)
		return FALSE;
	if (!g_ascii_isdigit(colon[-4]) || !g_ascii_isdigit(colon[-2]) ||
	    !g_ascii_isdigit(colon[-1]) || !g_ascii_isdigit(colon[1]) || !g_ascii_isdigit(colon[2]))
		return FALSE;
	/* a year after the time: "... 12:34:56 2001" */
	for (y = colon + 3; y < end && (*y == ' ' || *y == '\t'); y++)
		;
	for (; y < end && g_ascii_isdigit(*y) && year < 100000; y++)
		year = year * 10 + (*y - '0');
	return year > 90;
}

static void
append(PgateMboxReader *r, const guint8 *p, gsize n)
{
	if (r->cur_truncated)
		return;
	if (r->cur->len + n > r->max) {
		gsize keep = r->max - r->cur->len;

		g_byte_array_append(r->cur, p, (guint)keep);
		r->cur_truncated = TRUE;
		return;
	}
	g_byte_array_append(r->cur, p, (guint)n);
}

/* Adds what the run holds to cur. */
static void
run_flush(PgateMboxReader *r)
{
	if (r->run != NULL)
		append(r, r->run, r->run_len);
	r->run = NULL;
	r->run_len = 0;
}

/* Adds [p, p + n) of buf: to the run when it follows it. */
static void
run_add(PgateMboxReader *r, const guint8 *p, gsize n)
{
	if (r->run != NULL && r->run + r->run_len == p) {
		r->run_len += n;
		return;
	}
	run_flush(r);
	r->run = p;
	r->run_len = n;
}

static void
add_line(PgateMboxReader *r, const guint8 *line, gsize n)
{
	const guint8 *p = line;
	gsize q = 0;

	/* count leading '>' of a quoted From line */
	while (q < n && p[q] == '>')
		q++;
	if (q > 0 && n - q >= 5 && memcmp(p + q, "From ", 5) == 0 &&
	    (r->format == PGATE_MBOX_MBOXRD || q == 1)) {
		p++;
		n--;
	}
	run_add(r, p, n);
}

/* Fills the buffer so that buf[pos..len) holds at least one whole line,
 * unless at end of file.  Returns FALSE on a read error. */
static gboolean
fill(PgateMboxReader *r, GError **error)
{
	/* what points into buf is done with */
	run_flush(r);
	r->pending = NULL;
	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->offset += r->pos;
		r->pos = 0;
	}
	while (!r->eof && r->len < CHUNK) {
		ssize_t n = read(r->fd, r->buf + r->len, CHUNK - r->len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			g_set_error(error, PGATE_INGEST_ERROR,
				    pgate_error_errno_code(errno),
				    "read mbox: %s", g_strerror(errno));
			return FALSE;
		}
		if (n == 0)
			r->eof = TRUE;
		r->len += (gsize)n;
		if (memchr(r->buf, '\n', r->len) != NULL)
			break;
	}
	return TRUE;
}

static gboolean
only_space(const guint8 *p, gsize n)
{
	for (gsize i = 0; i < n; i++)
		if (!g_ascii_isspace(p[i]))
			return FALSE;
	return TRUE;
}

/* Hands out the collected message; returns FALSE (and drops it) when it is
 * nothing but white space, such as blank lines before the first "From ". */
static gboolean
take(PgateMboxReader *r, GBytes **out, gboolean *out_truncated)
{
	gboolean none;

	r->pending_blank = FALSE;
	r->pending = NULL;
	if (r->cur->len == 0 && !r->cur_truncated && r->run != NULL &&
	    r->run_len <= r->max) {
		/* the message is one run of buf: copied once */
		none = only_space(r->run, r->run_len);
		if (!none)
			*out = g_bytes_new(r->run, r->run_len);
		r->run = NULL;
		r->run_len = 0;
		return !none;
	}
	run_flush(r);
	if (only_space(r->cur->data, r->cur->len)) {
		g_byte_array_set_size(r->cur, 0);
		return FALSE;
	}
	*out = g_bytes_new(r->cur->data, r->cur->len);
	*out_truncated = r->cur_truncated;
	g_byte_array_set_size(r->cur, 0);
	r->cur_truncated = FALSE;
	return TRUE;
}

gboolean
pgate_mbox_reader_next(PgateMboxReader *r, GBytes **out,
		       gboolean *out_truncated, GError **error)
{
	*out = NULL;
	*out_truncated = FALSE;
	for (;;) {
		const guint8 *line, *nl = NULL;
		gsize n;

		if (r->pos < r->len)
			nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
		if (nl == NULL) {
			if (!fill(r, error))
				return FALSE;
			if (r->pos >= r->len) {
				/* end of file */
				if (r->in_message) {
					r->in_message = FALSE;
					if (take(r, out, out_truncated))
						return TRUE;
				}
				return FALSE;
			}
			nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
		}
		line = r->buf + r->pos;
		/* a line longer than the buffer, or the last unterminated
		 * line, is handled in pieces */
		n = nl ? (gsize)(nl - line) + 1 : r->len - r->pos;
		r->pos += n;

		if ((r->first_line || r->prev_blank) &&
		    is_from_line((const char *)line, nl ? n - 1 : n)) {
			gboolean had = r->in_message;

			r->first_line = FALSE;
			r->prev_blank = FALSE;
			r->in_message = TRUE;
			/* the blank line before the separator is dropped
			 * with pending_blank */
			if (had && take(r, out, out_truncated))
				return TRUE;
			continue;
		}
		r->first_line = FALSE;
		r->prev_blank = (n == 1 && line[0] == '\n') ||
				(n == 2 && line[0] == '\r' && line[1] == '\n');
		if (!r->in_message) {
			/* text before the first separator: treat it as a
			 * message of its own so nothing is lost */
			r->in_message = TRUE;
		}
		if (r->pending_blank && r->pending != NULL) {
			run_add(r, r->pending, 1);
		} else if (r->pending_blank) {
			/* read before the buffer was refilled */
			run_flush(r);
			append(r, (const guint8 *)"\n", 1);
		}
		r->pending_blank = FALSE;
		r->pending = NULL;
		if (r->prev_blank && n == 1) {
			r->pending_blank = TRUE;
			r->pending = line;
		} else {
			add_line(r, line, n);
		}
	}
}
