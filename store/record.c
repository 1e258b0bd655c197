/* record.c - the message record and its tag/value encoding.
 *
 * A record is the byte 'M', a format version byte (1), then entries:
 *
 *   tag (1 byte) | length (4 bytes, big-endian) | value (length bytes)
 *
 * Strings are UTF-8 without a terminating NUL; integers are big-endian
 * (u8 kind/location, u32 flags/version/number/total, i32 tz, i64 dates,
 * u64 size); repeated tags make a list, in order; a trailer is
 * "Name\0value".  A reader skips tags it does not know, so new fields can
 * be added without a schema change.  Example, a record holding only
 * msgid "a@b" and kind PATCH (1):
 *
 *   4d 01  01 00000003 61 40 62  02 00000001 01
 */
#include "store/store-private.h"

#include <string.h>

enum {
	TAG_MSGID = 1, TAG_KIND, TAG_FLAGS, TAG_IN_REPLY_TO, TAG_REFERENCE,
	TAG_SUBJECT, TAG_NAME, TAG_PREFIX, TAG_VERSION, TAG_NUMBER, TAG_TOTAL,
	TAG_FROM_NAME, TAG_FROM_EMAIL, TAG_DATE, TAG_TZ, TAG_RECEIVED,
	TAG_LIST_ID, TAG_TO, TAG_CC, TAG_PULL_URL, TAG_PATCH_ID,
	TAG_CONTENT_HASH, TAG_TRAILER, TAG_BASE_COMMIT, TAG_CHANGE_ID,
	TAG_PREREQ_PATCH_ID, TAG_PREREQ_CHANGE_ID, TAG_PREREQ_MESSAGE_ID,
	TAG_DEPENDS_ON, TAG_BASED_ON, TAG_DIFF_FILE, TAG_REJECT_REASON,
	TAG_SOURCE, TAG_RAW_LOCATION, TAG_RAW_REF, TAG_RAW_SIZE,
	TAG_LINKED_MSGID, TAG_REF_MSGID, TAG_LINK_LINE,
};

/* Optional fields numbered apart from the sequence above, so that fields
 * added there and here never take the same number. */
enum {
	TAG_MORE_LIST_ID = 64,  /* repeated: List-Ids of later copies */
	TAG_RAW_CODEC = 65,     /* u8: how `raw` keeps it (schema 5) */
	TAG_DIFF_SKETCH = 66,   /* u32 BE, repeated in one value: the sketch
				 * of the diff's changed lines */
};

#define REC_MAGIC 'M'
#define REC_VERSION 1

static const char *const kind_names[] = {
	[PGATE_MSG_KIND_OTHER] = "other",
	[PGATE_MSG_KIND_PATCH] = "patch",
	[PGATE_MSG_KIND_COVER] = "cover",
	[PGATE_MSG_KIND_REPLY] = "reply",
	[PGATE_MSG_KIND_PULL] = "pull",
	[PGATE_MSG_KIND_REJECTED] = "rejected",
};

const char *
pgate_msg_kind_to_string(PgateMsgKind kind)
{
	if ((guint)kind >= G_N_ELEMENTS(kind_names))
		return "unknown";
	return kind_names[kind];
}

PgateTrailer *
pgate_trailer_new(const char *name, const char *value)
{
	PgateTrailer *t = g_new0(PgateTrailer, 1);

	t->name = g_strdup(name);
	t->value = g_strdup(value);
	return t;
}

void
pgate_trailer_free(PgateTrailer *t)
{
	if (t == NULL)
		return;
	g_free(t->name);
	g_free(t->value);
	g_free(t);
}

PgateMessageRec *
pgate_message_rec_new(void)
{
	PgateMessageRec *rec = g_new0(PgateMessageRec, 1);

	rec->references = g_ptr_array_new_with_free_func(g_free);
	rec->prefixes = g_ptr_array_new_with_free_func(g_free);
	rec->to = g_ptr_array_new_with_free_func(g_free);
	rec->cc = g_ptr_array_new_with_free_func(g_free);
	rec->trailers = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_trailer_free);
	rec->prereq_patch_ids = g_ptr_array_new_with_free_func(g_free);
	rec->prereq_change_ids = g_ptr_array_new_with_free_func(g_free);
	rec->prereq_message_ids = g_ptr_array_new_with_free_func(g_free);
	rec->depends_on = g_ptr_array_new_with_free_func(g_free);
	rec->based_on = g_ptr_array_new_with_free_func(g_free);
	rec->linked_msgids = g_ptr_array_new_with_free_func(g_free);
	rec->ref_msgids = g_ptr_array_new_with_free_func(g_free);
	rec->link_lines = g_ptr_array_new_with_free_func(g_free);
	rec->diff_files = g_ptr_array_new_with_free_func(g_free);
	rec->more_list_ids = g_ptr_array_new_with_free_func(g_free);
	rec->version = 1;
	rec->from_email = g_strdup("");
	return rec;
}

void
pgate_message_rec_free(PgateMessageRec *rec)
{
	if (rec == NULL)
		return;
	g_free(rec->msgid);
	g_free(rec->in_reply_to);
	g_ptr_array_unref(rec->references);
	g_free(rec->subject);
	g_free(rec->name);
	g_ptr_array_unref(rec->prefixes);
	g_free(rec->from_name);
	g_free(rec->from_email);
	g_free(rec->list_id);
	g_ptr_array_unref(rec->more_list_ids);
	g_ptr_array_unref(rec->to);
	g_ptr_array_unref(rec->cc);
	g_free(rec->pull_url);
	g_free(rec->patch_id);
	g_ptr_array_unref(rec->trailers);
	g_free(rec->base_commit);
	g_free(rec->change_id);
	g_ptr_array_unref(rec->prereq_patch_ids);
	g_ptr_array_unref(rec->prereq_change_ids);
	g_ptr_array_unref(rec->prereq_message_ids);
	g_ptr_array_unref(rec->depends_on);
	g_ptr_array_unref(rec->based_on);
	g_ptr_array_unref(rec->linked_msgids);
	g_ptr_array_unref(rec->ref_msgids);
	g_ptr_array_unref(rec->link_lines);
	g_ptr_array_unref(rec->diff_files);
	g_free(rec->reject_reason);
	g_free(rec->source);
	g_free(rec->raw_ref);
	g_free(rec);
}

/* ---- encoding ---- */

static void
set_len(guint8 *hdr, gsize len)
{
	hdr[1] = (guint8)(len >> 24);
	hdr[2] = (guint8)(len >> 16);
	hdr[3] = (guint8)(len >> 8);
	hdr[4] = (guint8)len;
}

/* @n more bytes at the end of @out; returns where they start. */
static guint8 *
buf_room(PgateStoreBuf *out, gsize n)
{
	guint8 *p;

	if (out->cap - out->len < n) {
		out->cap = MAX(MAX(2 * out->cap, out->len + n), 1024);
		out->data = g_realloc(out->data, out->cap);
	}
	p = out->data + out->len;
	out->len += n;
	return p;
}

/* Makes room for an entry of @len bytes; returns where its value goes. */
static guint8 *
put_header(PgateStoreBuf *out, guint8 tag, gsize len)
{
	guint8 *hdr;

	/* every string the parser makes is bounded far below 4 GiB */
	g_assert(len <= G_MAXUINT32 - 5 - out->len);
	hdr = buf_room(out, 5 + len);
	hdr[0] = tag;
	set_len(hdr, len);
	return hdr + 5;
}

/* Starts an entry whose value the next puts append; returns its offset,
 * for end_nested(). */
static guint
begin_nested(PgateStoreBuf *out, guint8 tag)
{
	guint off = out->len;

	put_header(out, tag, 0);
	return off;
}

static void
end_nested(PgateStoreBuf *out, guint off)
{
	set_len(out->data + off, out->len - off - 5);
}

static void
put_entry(PgateStoreBuf *out, guint8 tag, const void *val, gsize len)
{
	guint8 *v = put_header(out, tag, len);

	if (len > 0)
		memcpy(v, val, len);
}

/* "a\0b" */
static void
put_pair(PgateStoreBuf *out, guint8 tag, const char *a, const char *b)
{
	gsize al = strlen(a), bl = strlen(b);
	guint8 *v = put_header(out, tag, al + 1 + bl);

	memcpy(v, a, al);
	v[al] = '\0';
	memcpy(v + al + 1, b, bl);
}

static void
put_str(PgateStoreBuf *out, guint8 tag, const char *s)
{
	if (s != NULL)
		put_entry(out, tag, s, strlen(s));
}

static void
put_strv(PgateStoreBuf *out, guint8 tag, const GPtrArray *a)
{
	for (guint i = 0; i < a->len; i++)
		put_str(out, tag, g_ptr_array_index(a, i));
}

static void
put_u64(PgateStoreBuf *out, guint8 tag, guint64 v)
{
	guint8 b[8];

	pgate_store__be64(b, v);
	put_entry(out, tag, b, 8);
}

static void
put_u32(PgateStoreBuf *out, guint8 tag, guint32 v)
{
	guint8 b[4] = { (guint8)(v >> 24), (guint8)(v >> 16), (guint8)(v >> 8),
			(guint8)v };

	put_entry(out, tag, b, 4);
}

void
pgate_store__rec_encode(PgateStoreBuf *out, const PgateMessageRec *rec)
{
	guint8 head[2] = { REC_MAGIC, REC_VERSION };
	guint8 kind = (guint8)rec->kind;
	guint8 loc = (guint8)rec->raw_location;

	out->len = 0;
	memcpy(buf_room(out, 2), head, 2);
	put_str(out, TAG_MSGID, rec->msgid);
	put_entry(out, TAG_KIND, &kind, 1);
	put_u32(out, TAG_FLAGS, (guint32)rec->flags);
	put_str(out, TAG_IN_REPLY_TO, rec->in_reply_to);
	put_strv(out, TAG_REFERENCE, rec->references);
	put_str(out, TAG_SUBJECT, rec->subject);
	put_str(out, TAG_NAME, rec->name);
	put_strv(out, TAG_PREFIX, rec->prefixes);
	put_u32(out, TAG_VERSION, rec->version);
	put_u32(out, TAG_NUMBER, rec->number);
	put_u32(out, TAG_TOTAL, rec->total);
	put_str(out, TAG_FROM_NAME, rec->from_name);
	put_str(out, TAG_FROM_EMAIL, rec->from_email);
	put_u64(out, TAG_DATE, (guint64)rec->date);
	put_u32(out, TAG_TZ, (guint32)rec->tz_minutes);
	put_u64(out, TAG_RECEIVED, (guint64)rec->received);
	put_str(out, TAG_LIST_ID, rec->list_id);
	put_strv(out, TAG_MORE_LIST_ID, rec->more_list_ids);
	put_strv(out, TAG_TO, rec->to);
	put_strv(out, TAG_CC, rec->cc);
	put_str(out, TAG_PULL_URL, rec->pull_url);
	put_str(out, TAG_PATCH_ID, rec->patch_id);
	put_entry(out, TAG_CONTENT_HASH, rec->content_hash,
		  sizeof rec->content_hash);
	for (guint i = 0; i < rec->trailers->len; i++) {
		const PgateTrailer *t = g_ptr_array_index(rec->trailers, i);

		put_pair(out, TAG_TRAILER, t->name, t->value);
	}
	put_str(out, TAG_BASE_COMMIT, rec->base_commit);
	put_str(out, TAG_CHANGE_ID, rec->change_id);
	put_strv(out, TAG_PREREQ_PATCH_ID, rec->prereq_patch_ids);
	put_strv(out, TAG_PREREQ_CHANGE_ID, rec->prereq_change_ids);
	put_strv(out, TAG_PREREQ_MESSAGE_ID, rec->prereq_message_ids);
	put_strv(out, TAG_DEPENDS_ON, rec->depends_on);
	put_strv(out, TAG_BASED_ON, rec->based_on);
	put_strv(out, TAG_DIFF_FILE, rec->diff_files);
	put_str(out, TAG_REJECT_REASON, rec->reject_reason);
	put_str(out, TAG_SOURCE, rec->source);
	put_entry(out, TAG_RAW_LOCATION, &loc, 1);
	put_str(out, TAG_RAW_REF, rec->raw_ref);
	put_u64(out, TAG_RAW_SIZE, rec->raw_size);
	if (rec->raw_codec != PGATE_RAW_CODEC_NONE) {
		guint8 codec = (guint8)rec->raw_codec;

		put_entry(out, TAG_RAW_CODEC, &codec, 1);
	}
	put_strv(out, TAG_LINKED_MSGID, rec->linked_msgids);
	put_strv(out, TAG_REF_MSGID, rec->ref_msgids);
	put_strv(out, TAG_LINK_LINE, rec->link_lines);
	if (rec->diff_sketch_len > 0) {
		guint8 b[PGATE_DIFF_SKETCH_MAX * 4];
		guint n = MIN(rec->diff_sketch_len, PGATE_DIFF_SKETCH_MAX);

		for (guint i = 0; i < n; i++) {
			b[4 * i] = (guint8)(rec->diff_sketch[i] >> 24);
			b[4 * i + 1] = (guint8)(rec->diff_sketch[i] >> 16);
			b[4 * i + 2] = (guint8)(rec->diff_sketch[i] >> 8);
			b[4 * i + 3] = (guint8)rec->diff_sketch[i];
		}
		put_entry(out, TAG_DIFF_SKETCH, b, 4 * n);
	}
}

/* ---- decoding ---- */

static guint64
get_uint(const guint8 *p, guint32 len)
{
	guint64 v = 0;

	for (guint32 i = 0; i < len && i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
set_str(char **field, const guint8 *p, guint32 len)
{
	g_free(*field);
	*field = g_strndup((const char *)p, len);
}

/* Sets the field of @rec that @tag names to the value @v (@l bytes).
 * FALSE when the value is malformed. */
static gboolean
rec_decode_field(PgateMessageRec *rec, guint8 tag, const guint8 *v, guint32 l)
{
	switch (tag) {
	case TAG_MSGID: set_str(&rec->msgid, v, l); break;
	case TAG_KIND: rec->kind = (PgateMsgKind)get_uint(v, l); break;
	case TAG_FLAGS: rec->flags = (PgateMsgFlags)get_uint(v, l); break;
	case TAG_IN_REPLY_TO: set_str(&rec->in_reply_to, v, l); break;
	case TAG_REFERENCE:
		g_ptr_array_add(rec->references, g_strndup((const char *)v, l));
		break;
	case TAG_SUBJECT: set_str(&rec->subject, v, l); break;
	case TAG_NAME: set_str(&rec->name, v, l); break;
	case TAG_PREFIX:
		g_ptr_array_add(rec->prefixes, g_strndup((const char *)v, l));
		break;
	case TAG_VERSION: rec->version = (guint32)get_uint(v, l); break;
	case TAG_NUMBER: rec->number = (guint32)get_uint(v, l); break;
	case TAG_TOTAL: rec->total = (guint32)get_uint(v, l); break;
	case TAG_FROM_NAME: set_str(&rec->from_name, v, l); break;
	case TAG_FROM_EMAIL: set_str(&rec->from_email, v, l); break;
	case TAG_DATE: rec->date = (gint64)get_uint(v, l); break;
	case TAG_TZ: rec->tz_minutes = (gint32)(guint32)get_uint(v, l); break;
	case TAG_RECEIVED: rec->received = (gint64)get_uint(v, l); break;
	case TAG_LIST_ID: set_str(&rec->list_id, v, l); break;
	case TAG_MORE_LIST_ID:
		if (rec->more_list_ids->len + 1 < PGATE_MSG_MAX_LIST_IDS)
			g_ptr_array_add(rec->more_list_ids,
					g_strndup((const char *)v, l));
		break;
	case TAG_TO:
		g_ptr_array_add(rec->to, g_strndup((const char *)v, l));
		break;
	case TAG_CC:
		g_ptr_array_add(rec->cc, g_strndup((const char *)v, l));
		break;
	case TAG_PULL_URL: set_str(&rec->pull_url, v, l); break;
	case TAG_PATCH_ID: set_str(&rec->patch_id, v, l); break;
	case TAG_CONTENT_HASH:
		if (l == sizeof rec->content_hash)
			memcpy(rec->content_hash, v, l);
		break;
	case TAG_TRAILER: {
		const guint8 *nul = memchr(v, '\0', l);
		g_autofree char *name = NULL, *value = NULL;

		if (nul == NULL)
			return FALSE;
		name = g_strndup((const char *)v, (gsize)(nul - v));
		value = g_strndup((const char *)nul + 1,
				  l - (gsize)(nul - v) - 1);
		g_ptr_array_add(rec->trailers,
				pgate_trailer_new(name, value));
		break;
	}
	case TAG_BASE_COMMIT: set_str(&rec->base_commit, v, l); break;
	case TAG_CHANGE_ID: set_str(&rec->change_id, v, l); break;
	case TAG_PREREQ_PATCH_ID:
		g_ptr_array_add(rec->prereq_patch_ids, g_strndup((const char *)v, l));
		break;
	case TAG_PREREQ_CHANGE_ID:
		g_ptr_array_add(rec->prereq_change_ids, g_strndup((const char *)v, l));
		break;
	case TAG_PREREQ_MESSAGE_ID:
		g_ptr_array_add(rec->prereq_message_ids, g_strndup((const char *)v, l));
		break;
	case TAG_DEPENDS_ON:
		g_ptr_array_add(rec->depends_on, g_strndup((const char *)v, l));
		break;
	case TAG_BASED_ON:
		g_ptr_array_add(rec->based_on, g_strndup((const char *)v, l));
		break;
	case TAG_DIFF_FILE:
		g_ptr_array_add(rec->diff_files, g_strndup((const char *)v, l));
		break;
	case TAG_REJECT_REASON: set_str(&rec->reject_reason, v, l); break;
	case TAG_SOURCE: set_str(&rec->source, v, l); break;
	case TAG_RAW_LOCATION:
		rec->raw_location = (PgateRawLocation)get_uint(v, l);
		break;
	case TAG_RAW_REF: set_str(&rec->raw_ref, v, l); break;
	case TAG_RAW_SIZE: rec->raw_size = get_uint(v, l); break;
	case TAG_RAW_CODEC:
		rec->raw_codec = (PgateRawCodec)get_uint(v, l);
		break;
	case TAG_LINKED_MSGID:
		g_ptr_array_add(rec->linked_msgids, g_strndup((const char *)v, l));
		break;
	case TAG_REF_MSGID:
		g_ptr_array_add(rec->ref_msgids, g_strndup((const char *)v, l));
		break;
	case TAG_LINK_LINE:
		g_ptr_array_add(rec->link_lines, g_strndup((const char *)v, l));
		break;
	case TAG_DIFF_SKETCH:
		/* a sketch of another size is no sketch of ours */
		if (l % 4 != 0 || l / 4 > PGATE_DIFF_SKETCH_MAX)
			break;
		rec->diff_sketch_len = l / 4;
		for (guint32 i = 0; i < l / 4; i++)
			rec->diff_sketch[i] = (guint32)get_uint(v + 4 * i, 4);
		break;
	default:
		break;	/* a newer writer's field: skip it */
	}
	return TRUE;
}

PgateMessageRec *
pgate_store__rec_decode(const guint8 *data, gsize len, GError **error)
{
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();
	gsize off = 2;

	if (len < 2 || data[0] != REC_MAGIC || data[1] != REC_VERSION) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "message record has an unknown format");
		return NULL;
	}
	while (off < len) {
		guint8 tag;
		guint32 l;
		const guint8 *v;

		if (len - off < 5)
			goto corrupt;
		tag = data[off];
		l = (guint32)get_uint(data + off + 1, 4);
		off += 5;
		if (len - off < l)
			goto corrupt;
		v = data + off;
		off += l;

		if (!rec_decode_field(rec, tag, v, l))
			goto corrupt;
	}
	if (rec->msgid == NULL)
		goto corrupt;
	return g_steal_pointer(&rec);

corrupt:
	g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
		    "message record is corrupt");
	return NULL;
}

/* ---- series records ----
 *
 * A series record is the byte 'S', a format version byte (1), then
 * tag/length/value entries as above.  A patch is one entry whose value is
 * itself a list of entries (SP_* tags); a trailer is "Name\0value"; a
 * dependency "kind\0value".  Readers skip unknown tags at both levels.
 */
enum {
	TAG_S_ID = 1, TAG_S_PROJECT, TAG_S_NAME, TAG_S_SUB_NAME, TAG_S_SUB_EMAIL,
	TAG_S_DATE, TAG_S_VERSION, TAG_S_TOTAL, TAG_S_KIND, TAG_S_FLAGS,
	TAG_S_COVER, TAG_S_COVER_NUM, TAG_S_PATCH, TAG_S_COVER_TRAILER,
	TAG_S_SUPERSEDES, TAG_S_SUPERSEDED_BY, TAG_S_LINK_REASON,
	TAG_S_RESEND_OF, TAG_S_CHANGE_ID, TAG_S_BASE_COMMIT, TAG_S_DEP,
	TAG_S_REPLIES_INTO, TAG_S_REPLIED_BY, TAG_S_LINKED_MSGID,
	TAG_S_REF_MSGID,
};

enum {
	SP_NUMBER = 1, SP_NUM, SP_MSGID, SP_SUBJECT, SP_PATCH_ID, SP_REPLACES,
	SP_TRAILER,
};

#define SERIES_MAGIC 'S'
#define SERIES_VERSION 1

PgateSeriesPatch *
pgate_series_patch_new(void)
{
	PgateSeriesPatch *p = g_new0(PgateSeriesPatch, 1);

	p->trailers = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_trailer_free);
	return p;
}

void
pgate_series_patch_free(PgateSeriesPatch *p)
{
	if (p == NULL)
		return;
	g_free(p->msgid);
	g_free(p->subject);
	g_free(p->patch_id);
	g_free(p->replaces);
	g_ptr_array_unref(p->trailers);
	g_free(p);
}

PgateSeriesDep *
pgate_series_dep_new(const char *kind, const char *value)
{
	PgateSeriesDep *d = g_new0(PgateSeriesDep, 1);

	d->kind = g_strdup(kind);
	d->value = g_strdup(value);
	return d;
}

void
pgate_series_dep_free(PgateSeriesDep *d)
{
	if (d == NULL)
		return;
	g_free(d->kind);
	g_free(d->value);
	g_free(d);
}

PgateSeriesRec *
pgate_series_rec_new(void)
{
	PgateSeriesRec *r = g_new0(PgateSeriesRec, 1);

	r->project = g_strdup("");
	r->submitter_email = g_strdup("");
	r->version = 1;
	r->patches = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_patch_free);
	r->cover_trailers = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_trailer_free);
	r->deps = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_dep_free);
	r->replies_into = g_ptr_array_new_with_free_func(g_free);
	r->replied_by = g_ptr_array_new_with_free_func(g_free);
	r->linked_msgids = g_ptr_array_new_with_free_func(g_free);
	r->ref_msgids = g_ptr_array_new_with_free_func(g_free);
	return r;
}

void
pgate_series_rec_free(PgateSeriesRec *r)
{
	if (r == NULL)
		return;
	g_free(r->id);
	g_free(r->project);
	g_free(r->name);
	g_free(r->submitter_name);
	g_free(r->submitter_email);
	g_free(r->cover);
	g_ptr_array_unref(r->patches);
	g_ptr_array_unref(r->cover_trailers);
	g_free(r->supersedes);
	g_free(r->superseded_by);
	g_free(r->link_reason);
	g_free(r->resend_of);
	g_free(r->change_id);
	g_free(r->base_commit);
	g_ptr_array_unref(r->deps);
	g_ptr_array_unref(r->replies_into);
	g_ptr_array_unref(r->replied_by);
	g_ptr_array_unref(r->linked_msgids);
	g_ptr_array_unref(r->ref_msgids);
	g_free(r);
}

void
pgate_store__series_encode(PgateStoreBuf *out, const PgateSeriesRec *r)
{
	guint8 head[2] = { SERIES_MAGIC, SERIES_VERSION };
	guint8 kind = (guint8)r->kind;

	out->len = 0;
	memcpy(buf_room(out, 2), head, 2);
	put_str(out, TAG_S_ID, r->id);
	put_str(out, TAG_S_PROJECT, r->project);
	put_str(out, TAG_S_NAME, r->name);
	put_str(out, TAG_S_SUB_NAME, r->submitter_name);
	put_str(out, TAG_S_SUB_EMAIL, r->submitter_email);
	put_u64(out, TAG_S_DATE, (guint64)r->date);
	put_u32(out, TAG_S_VERSION, r->version);
	put_u32(out, TAG_S_TOTAL, r->total);
	put_entry(out, TAG_S_KIND, &kind, 1);
	put_u32(out, TAG_S_FLAGS, (guint32)r->flags);
	put_str(out, TAG_S_COVER, r->cover);
	put_u64(out, TAG_S_COVER_NUM, r->cover_num);
	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = g_ptr_array_index(r->patches, i);
		guint at = begin_nested(out, TAG_S_PATCH);

		put_u32(out, SP_NUMBER, p->number);
		put_u64(out, SP_NUM, p->num);
		put_str(out, SP_MSGID, p->msgid);
		put_str(out, SP_SUBJECT, p->subject);
		put_str(out, SP_PATCH_ID, p->patch_id);
		put_str(out, SP_REPLACES, p->replaces);
		for (guint j = 0; j < p->trailers->len; j++) {
			const PgateTrailer *t = g_ptr_array_index(p->trailers, j);

			put_pair(out, SP_TRAILER, t->name, t->value);
		}
		end_nested(out, at);
	}
	for (guint j = 0; j < r->cover_trailers->len; j++) {
		const PgateTrailer *t = g_ptr_array_index(r->cover_trailers, j);

		put_pair(out, TAG_S_COVER_TRAILER, t->name, t->value);
	}
	put_str(out, TAG_S_SUPERSEDES, r->supersedes);
	put_str(out, TAG_S_SUPERSEDED_BY, r->superseded_by);
	put_str(out, TAG_S_LINK_REASON, r->link_reason);
	put_str(out, TAG_S_RESEND_OF, r->resend_of);
	put_str(out, TAG_S_CHANGE_ID, r->change_id);
	put_str(out, TAG_S_BASE_COMMIT, r->base_commit);
	for (guint i = 0; i < r->deps->len; i++) {
		const PgateSeriesDep *d = g_ptr_array_index(r->deps, i);

		put_pair(out, TAG_S_DEP, d->kind, d->value);
	}
	put_strv(out, TAG_S_REPLIES_INTO, r->replies_into);
	put_strv(out, TAG_S_REPLIED_BY, r->replied_by);
	put_strv(out, TAG_S_LINKED_MSGID, r->linked_msgids);
	put_strv(out, TAG_S_REF_MSGID, r->ref_msgids);
}

/* Walks the entries of data[0..len): calls fn for each; FALSE if the
 * framing is broken. */
typedef gboolean (*EntryFunc)(guint8 tag, const guint8 *v, guint32 l,
			      gpointer payload);

static gboolean
walk_entries(const guint8 *data, gsize len, EntryFunc fn, gpointer payload)
{
	gsize off = 0;

	while (off < len) {
		guint32 l;
		guint8 tag;

		if (len - off < 5)
			return FALSE;
		tag = data[off];
		l = (guint32)get_uint(data + off + 1, 4);
		off += 5;
		if (len - off < l)
			return FALSE;
		if (!fn(tag, data + off, l, payload))
			return FALSE;
		off += l;
	}
	return TRUE;
}

static PgateTrailer *
split_pair(const guint8 *v, guint32 l)
{
	const guint8 *nul = memchr(v, '\0', l);
	g_autofree char *a = NULL, *b = NULL;

	if (nul == NULL)
		return NULL;
	a = g_strndup((const char *)v, (gsize)(nul - v));
	b = g_strndup((const char *)nul + 1, l - (gsize)(nul - v) - 1);
	return pgate_trailer_new(a, b);
}

static gboolean
patch_entry(guint8 tag, const guint8 *v, guint32 l, gpointer payload)
{
	PgateSeriesPatch *p = payload;
	PgateTrailer *t;

	switch (tag) {
	case SP_NUMBER: p->number = (guint32)get_uint(v, l); break;
	case SP_NUM: p->num = get_uint(v, l); break;
	case SP_MSGID: set_str(&p->msgid, v, l); break;
	case SP_SUBJECT: set_str(&p->subject, v, l); break;
	case SP_PATCH_ID: set_str(&p->patch_id, v, l); break;
	case SP_REPLACES: set_str(&p->replaces, v, l); break;
	case SP_TRAILER:
		t = split_pair(v, l);
		if (t == NULL)
			return FALSE;
		g_ptr_array_add(p->trailers, t);
		break;
	default:
		break;
	}
	return TRUE;
}

static gboolean
series_entry(guint8 tag, const guint8 *v, guint32 l, gpointer payload)
{
	PgateSeriesRec *r = payload;
	PgateTrailer *t;

	switch (tag) {
	case TAG_S_ID: set_str(&r->id, v, l); break;
	case TAG_S_PROJECT: set_str(&r->project, v, l); break;
	case TAG_S_NAME: set_str(&r->name, v, l); break;
	case TAG_S_SUB_NAME: set_str(&r->submitter_name, v, l); break;
	case TAG_S_SUB_EMAIL: set_str(&r->submitter_email, v, l); break;
	case TAG_S_DATE: r->date = (gint64)get_uint(v, l); break;
	case TAG_S_VERSION: r->version = (guint32)get_uint(v, l); break;
	case TAG_S_TOTAL: r->total = (guint32)get_uint(v, l); break;
	case TAG_S_KIND: r->kind = (PgateSeriesKind)get_uint(v, l); break;
	case TAG_S_FLAGS: r->flags = (PgateSeriesFlags)get_uint(v, l); break;
	case TAG_S_COVER: set_str(&r->cover, v, l); break;
	case TAG_S_COVER_NUM: r->cover_num = get_uint(v, l); break;
	case TAG_S_PATCH: {
		PgateSeriesPatch *p = pgate_series_patch_new();

		g_ptr_array_add(r->patches, p);
		if (!walk_entries(v, l, patch_entry, p) || p->msgid == NULL)
			return FALSE;
		break;
	}
	case TAG_S_COVER_TRAILER:
		t = split_pair(v, l);
		if (t == NULL)
			return FALSE;
		g_ptr_array_add(r->cover_trailers, t);
		break;
	case TAG_S_SUPERSEDES: set_str(&r->supersedes, v, l); break;
	case TAG_S_SUPERSEDED_BY: set_str(&r->superseded_by, v, l); break;
	case TAG_S_LINK_REASON: set_str(&r->link_reason, v, l); break;
	case TAG_S_RESEND_OF: set_str(&r->resend_of, v, l); break;
	case TAG_S_CHANGE_ID: set_str(&r->change_id, v, l); break;
	case TAG_S_BASE_COMMIT: set_str(&r->base_commit, v, l); break;
	case TAG_S_DEP:
		t = split_pair(v, l);
		if (t == NULL)
			return FALSE;
		g_ptr_array_add(r->deps, pgate_series_dep_new(t->name, t->value));
		pgate_trailer_free(t);
		break;
	case TAG_S_REPLIES_INTO:
		g_ptr_array_add(r->replies_into, g_strndup((const char *)v, l));
		break;
	case TAG_S_REPLIED_BY:
		g_ptr_array_add(r->replied_by, g_strndup((const char *)v, l));
		break;
	case TAG_S_LINKED_MSGID:
		g_ptr_array_add(r->linked_msgids, g_strndup((const char *)v, l));
		break;
	case TAG_S_REF_MSGID:
		g_ptr_array_add(r->ref_msgids, g_strndup((const char *)v, l));
		break;
	default:
		break;
	}
	return TRUE;
}

PgateSeriesRec *
pgate_store__series_decode(const guint8 *data, gsize len, GError **error)
{
	g_autoptr(PgateSeriesRec) r = pgate_series_rec_new();

	if (len < 2 || data[0] != SERIES_MAGIC || data[1] != SERIES_VERSION) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "series record has an unknown format");
		return NULL;
	}
	if (!walk_entries(data + 2, len - 2, series_entry, r) || r->id == NULL) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "series record is corrupt");
		return NULL;
	}
	return g_steal_pointer(&r);
}

/* What a listing sorts and filters by (pgate_store_series_brief_foreach):
 * the fields are copied, every other tag skipped undecoded. */
static gboolean
brief_entry(guint8 tag, const guint8 *v, guint32 l, gpointer payload)
{
	PgateSeriesBrief *b = payload;

	switch (tag) {
	case TAG_S_ID: set_str(&b->id, v, l); break;
	case TAG_S_PROJECT: set_str(&b->project, v, l); break;
	case TAG_S_DATE: b->date = (gint64)get_uint(v, l); break;
	case TAG_S_SUPERSEDED_BY: b->superseded = TRUE; break;
	default: break;
	}
	return TRUE;
}

gboolean
pgate_store__series_brief(const guint8 *data, gsize len, PgateSeriesBrief *b,
			  GError **error)
{
	memset(b, 0, sizeof *b);
	if (len < 2 || data[0] != SERIES_MAGIC || data[1] != SERIES_VERSION) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "series record has an unknown format");
		return FALSE;
	}
	if (!walk_entries(data + 2, len - 2, brief_entry, b) || b->id == NULL) {
		g_free(b->id);
		g_free(b->project);
		memset(b, 0, sizeof *b);
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "series record is corrupt");
		return FALSE;
	}
	return TRUE;
}
