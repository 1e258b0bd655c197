/* series-mbox.c - b4 am's trailers for the apply stage ([apply] add_trailers,
 * link_pattern, signoff), and `patchgate series mbox`: a series as the
 * mbox b4 am writes (docs/ecosystem.md). */
#include "pipeline/pipeline-private.h"

#include <string.h>

/* The Link: of @msgid: @pattern with {msgid} replaced (as b4's linkmask
 * % msgid; only characters that have no place in a URL are
 * percent-encoded). */
static char *
link_of(const char *pattern, const char *msgid)
{
	const char *at = strstr(pattern, "{msgid}");
	g_autofree char *enc = g_uri_escape_string(
		msgid, "@!$&'()*+,;=:/?~[]", FALSE);

	if (at == NULL)
		return g_strconcat(pattern, enc, NULL);
	return g_strdup_printf("%.*s%s%s", (int)(at - pattern), pattern, enc,
			       at + 7);
}

static gboolean
on_cover(const PgateSeriesRec *r, const PgateTrailer *t)
{
	for (guint i = 0; r && i < r->cover_trailers->len; i++) {
		const PgateTrailer *c = r->cover_trailers->pdata[i];

		if (g_ascii_strcasecmp(c->name, t->name) == 0 &&
		    strcmp(c->value, t->value) == 0)
			return TRUE;
	}
	return FALSE;
}

PgateApplyExtra *
pgate_pipeline_apply_extra(const PgateApplyConfig *c, const PgateSeriesRec *r,
			   const PgateSeriesPatch *p)
{
	PgateApplyExtra *e = pgate_apply_extra_new();

	if (c == NULL)
		return e;
	/* the patch's own first (pass 0), then the cover's (pass 1) */
	for (int pass = 0; c->add_trailers && pass < 2; pass++)
		for (guint i = 0; i < p->trailers->len; i++) {
			const PgateTrailer *t = p->trailers->pdata[i];

			if (on_cover(r, t) != (pass == 1))
				continue;
			/* a value over lines would write more than one */
			if (strpbrk(t->value, "\r\n") || strpbrk(t->name, "\r\n"))
				continue;
			g_ptr_array_add(e->trailers, g_strdup_printf(
				"%s: %s", t->name, t->value));
		}
	if (c->link_pattern != NULL)
		e->link = link_of(c->link_pattern, p->msgid);
	return e;
}

/* The series of @sid's chain with version @version. */
static PgateSeriesRec *
find_version(PgateStoreTxn *txn, PgateSeriesRec *r, guint version,
	     GError **error)
{
	g_autoptr(PgateSeriesRec) cur = r;
	guint steps = 0;

	while (cur->version != version) {
		const char *next = cur->version > version ? cur->supersedes
							  : cur->superseded_by;
		PgateSeriesRec *n;

		if (next == NULL || ++steps > 1000) {
			g_set_error(error, PGATE_PIPELINE_ERROR,
				    PGATE_ERROR_NOT_FOUND,
				    "series %s has no version %u in its chain",
				    r == cur ? r->id : cur->id, version);
			return NULL;
		}
		n = pgate_store_series_get(txn, next, error);
		if (n == NULL)
			return NULL;
		pgate_series_rec_free(g_steal_pointer(&cur));
		cur = n;
	}
	return g_steal_pointer(&cur);
}

static GBytes *
load(PgateStoreTxn *txn, const char *state_dir, guint64 num, GError **error)
{
	g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, num, error);

	if (m == NULL)
		return NULL;
	return pgate_ingest_load_raw(txn, state_dir, m,
				     PGATE_MAILINFO_MAX_BYTES, error);
}

/* "PATCH RFC v3 1/2", as b4's get_am_subject(indicate_reroll=False). */
static char *
prefix_of(const PgateSeriesRec *r, guint number, gboolean rfc)
{
	GString *s = g_string_new("PATCH");

	if (rfc)
		g_string_append(s, " RFC");
	if (r->version > 1)
		g_string_append_printf(s, " v%u", r->version);
	if (r->total > 0)
		g_string_append_printf(s, " %u/%u", number, r->total);
	return g_string_free(s, FALSE);
}

static gboolean
is_rfc(PgateStoreTxn *txn, guint64 num)
{
	g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, num, NULL);

	return m != NULL && (m->flags & PGATE_MSG_FLAG_SUBJECT_RFC);
}

GBytes *
pgate_pipeline_series_mbox(PgateStoreTxn *txn, const char *state_dir,
			   const PgateApplyConfig *c, const char *sid,
			   const PgateSeriesMboxOptions *o, char **out_sid,
			   GError **error)
{
	g_autoptr(PgateSeriesRec) r = pgate_store_series_get(txn, sid, error);
	g_autoptr(GString) mbox = g_string_new(NULL);
	PgateApplyConfig none = { 0 };
	const PgateApplyConfig *ac = c ? c : &none;
	gboolean rfc;

	if (r == NULL)
		return NULL;
	if (o->version > 0 && r->version != o->version) {
		r = find_version(txn, g_steal_pointer(&r), o->version, error);
		if (r == NULL)
			return NULL;
	}
	if (r->patches->len == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_NOT_FOUND,
			    "series %s has no patches", r->id);
		return NULL;
	}
	rfc = is_rfc(txn, ((PgateSeriesPatch *)r->patches->pdata[0])->num);
	if (o->cover && r->cover_num != 0) {
		g_autoptr(GBytes) raw = load(txn, state_dir, r->cover_num, error);
		g_autofree char *prefix = prefix_of(r, 0, rfc);
		PgateApplyMboxMail m = { prefix, r->cover, FALSE, NULL, NULL,
					 NULL };

		if (raw == NULL ||
		    !pgate_apply_mbox_append(mbox, raw, &m, error))
			return NULL;
	}
	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];
		g_autoptr(GBytes) raw = load(txn, state_dir, p->num, error);
		g_autofree char *prefix = prefix_of(r, p->number, rfc);
		PgateApplyConfig tc = *ac;
		PgateApplyExtra *ex;
		PgateApplyMboxMail m = { prefix, p->msgid, o->trailers, NULL,
					 NULL, o->trailers ? ac->signoff : NULL };
		gboolean ok;

		if (raw == NULL)
			return NULL;
		tc.add_trailers = TRUE;
		ex = pgate_pipeline_apply_extra(o->trailers ? &tc : NULL, r, p);
		m.trailers = ex->trailers;
		m.link = ex->link;
		ok = pgate_apply_mbox_append(mbox, raw, &m, error);
		pgate_apply_extra_free(ex);
		if (!ok) {
			g_prefix_error(error, "patch %u (<%s>): ", p->number,
				       p->msgid);
			return NULL;
		}
	}
	if (out_sid != NULL)
		*out_sid = g_strdup(r->id);
	return g_string_free_to_bytes(g_steal_pointer(&mbox));
}
