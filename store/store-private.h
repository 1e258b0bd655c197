/* store-private.h - shared between the store's own files only. */
#pragma once

#include "store/store.h"

/* A growing buffer that records are encoded into, again and again: the
 * store keeps one for its writes, so a put allocates nothing. */
typedef struct {
	guint8 *data;
	gsize len;
	gsize cap;
} PgateStoreBuf;

/* Record encoding (docs/store-format.md, "messages"): @out is emptied
 * first. */
void pgate_store__rec_encode(PgateStoreBuf *out, const PgateMessageRec *rec);
PgateMessageRec *pgate_store__rec_decode(const guint8 *data, gsize len,
					 GError **error);
/* Series records (docs/store-format.md, "series"). */
void pgate_store__series_encode(PgateStoreBuf *out, const PgateSeriesRec *rec);
PgateSeriesRec *pgate_store__series_decode(const guint8 *data, gsize len,
					   GError **error);

static inline void
pgate_store__be64(guint8 out[8], guint64 v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (guint8)(v & 0xff);
		v >>= 8;
	}
}

static inline guint64
pgate_store__get_be64(const guint8 *p)
{
	guint64 v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline void
put_be32(guint8 out[4], guint32 v)
{
	out[0] = (guint8)(v >> 24);
	out[1] = (guint8)(v >> 16);
	out[2] = (guint8)(v >> 8);
	out[3] = (guint8)v;
}

static inline guint32
get_be32(const guint8 *p)
{
	return ((guint32)p[0] << 24) | ((guint32)p[1] << 16) |
	       ((guint32)p[2] << 8) | p[3];
}
