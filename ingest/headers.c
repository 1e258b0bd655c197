/* headers.c - the header fields of a parsed message into its record.
 *
 * parse.c reads the fields (PgateMailView: GMime's message, or the plain
 * header block read as GMime would); here they become the record's
 * Message-ID, In-Reply-To and References (as public-inbox threads
 * them), list, robot flag, From, To and Cc, date and subject, each
 * bounded (the PGATE_INGEST_MAX_* constants and PgateIngestOptions).
 */
#include "ingest/ingest-private.h"

#include <string.h>

#define MAX_REF_TOKENS 10000    /* References tokens scanned */
#define MAX_ADDRESS_DEPTH 4     /* groups inside groups */

/* ---- Message-IDs ----------------------------------------------------- */

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
find_msgid(const PgateMailValues *vs)
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
find_in_reply_to(const PgateMailValues *vs, GPtrArray *addrs)
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
add_ids(PgateStrSet *set, const PgateMailValues *vs, guint *budget)
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
set_threading(PgateMessageRec *rec, const PgateMailHeaders *h, GPtrArray *addrs,
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
set_list_id(PgateMessageRec *rec, const PgateMailHeaders *h)
{
	const PgateMailValues *order[] = {
		&h->list_id, &h->x_mailing_list, &h->x_list
	};

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
set_automated(PgateMessageRec *rec, const PgateMailHeaders *h)
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
set_from(PgateMessageRec *rec, const PgateMailView *view, GPtrArray *addrs)
{
	g_autoptr(GPtrArray) boxes = g_ptr_array_new();
	InternetAddressMailbox *mb;
	char *addr;

	flatten_mailboxes(view->from, boxes, 1, 0);
	if (boxes->len == 0) {
		/* no address in it: keep what it says */
		g_autofree char *from = pgate_ingest__view_from_header(view);

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
set_date(PgateMessageRec *rec, const PgateMailView *view)
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

/* ---- the record ------------------------------------------------------ */

static void
set_subject(PgateMessageRec *rec, const PgateMailView *view)
{
	g_free(rec->subject);
	rec->subject = pgate_ingest__clean_value(
		view->subject, -1, PGATE_INGEST_MAX_SUBJECT);
	if (rec->subject == NULL)
		rec->subject = g_strdup("");
	pgate_ingest__subject_parse(rec->subject, rec);
}

static void
set_addresses(PgateMessageRec *rec, const PgateMailView *view, guint max,
	      GPtrArray *addrs)
{
	guint budget = max;

	set_from(rec, view, addrs);
	add_recipients(rec->to, view->to, &budget, addrs);
	add_recipients(rec->cc, view->cc, &budget, addrs);
}

static void
set_msgid(PgateMessageRec *rec, const PgateMailHeaders *h)
{
	g_free(rec->msgid);
	rec->msgid = find_msgid(&h->msgid);
	if (rec->msgid == NULL) {
		rec->msgid = pgate_ingest__synthetic_msgid(rec->content_hash);
		rec->flags |= PGATE_MSG_FLAG_SYNTHETIC_ID;
	}
}

/* The record's header fields, in the order each needs the one before:
 * threading leaves out the message's own ID and its addresses. */
void
pgate_ingest__read_headers(PgateMessageRec *rec, const PgateMailView *view,
			   const PgateIngestOptions *o)
{
	const PgateMailHeaders *h = &view->raw;
	/* From, To and Cc addresses, which are no Message-IDs */
	g_autoptr(GPtrArray) addrs = g_ptr_array_new_with_free_func(g_free);

	set_subject(rec, view);
	set_addresses(rec, view, o->max_recipients, addrs);
	set_msgid(rec, h);
	set_threading(rec, h, addrs, o->max_references);
	set_date(rec, view);
	set_list_id(rec, h);
	set_automated(rec, h);
}
