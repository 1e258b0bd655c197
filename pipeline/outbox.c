/* outbox.c - reports that must reach their server exactly once.
 *
 * Every report is an entry of the store's outbox table, written in the
 * same transaction as the pipeline state that calls for it, and removed
 * only after the server accepted it (docs/pipeline.md):
 *
 *   pw/SERIES/CONTEXT      a Patchwork check for every patch of a series;
 *                          a newer state of the same context replaces an
 *                          unsent older one (never a final by a pending)
 *   mail/SERIES/vN/KIND    an email reply, composed when queued (so its
 *                          Message-ID, the mail's idempotency key, never
 *                          changes)
 *
 * A crash between the server's acceptance and the removal sends again:
 * Patchwork checks are listed and compared first (SKIP_SAME), and a mail
 * goes out with the same Message-ID, which receivers and archives fold.
 * Transient failures wait with a backoff (30 s doubling to 1 h); permanent
 * ones keep the entry, marked failed with the reason, for
 * `patchgate outbox`.
 */
#include "pipeline/pipeline.h"
#include "report/report.h"
#include "common/json.h"

#include <string.h>

#define BACKOFF_MIN 30
#define BACKOFF_MAX 3600

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

static json_t *
outbox_get(PgateStoreTxn *txn, const char *key, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_OUTBOX,
						    key, &local);

	if (b == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	return pgate_state_decode(b, NULL);
}

static gboolean
outbox_put(PgateStoreTxn *txn, const char *key, json_t *doc, GError **error)
{
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	gboolean ok = pgate_store_table_put(txn, PGATE_STORE_TABLE_OUTBOX, key,
					    text, strlen(text), error);

	free(text);
	return ok;
}

static int
state_rank(const char *s)
{
	return s == NULL ? -1 : strcmp(s, "pending") == 0 ? 0 : 1;
}

gboolean
pgate_outbox_queue_check(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			 const char *context, const char *state,
			 const char *url, const char *description,
			 json_t *per_patch, GError **error)
{
	g_autofree char *key = g_strdup_printf("pw/%s/%s", rec->id, context);
	json_t *old = outbox_get(txn, key, error);
	json_t *msgids, *doc;
	gboolean ok;

	if (old == NULL && error && *error)
		return FALSE;
	/* never replace a final state waiting to be sent by a pending one */
	if (old != NULL && state_rank(pgate_state_str(old, "state")) >
			   state_rank(state)) {
		json_decref(old);
		return TRUE;
	}
	json_decref(old);
	msgids = json_array();
	for (guint i = 0; i < rec->patches->len; i++)
		json_array_append_new(msgids, json_string(
			((PgateSeriesPatch *)rec->patches->pdata[i])->msgid));
	doc = json_pack("{s:s,s:s,s:o,s:s,s:s,s:o,s:o,s:I,s:i,s:I,s:[]}",
			"dest", "patchwork", "series", rec->id, "msgids", msgids,
			"context", context, "state", state,
			"target_url", pgate_json_str_or_null(url),
			"description", pgate_json_str_or_null(description),
			"created", (json_int_t)now_s(), "attempts", 0,
			"next_attempt", (json_int_t)0, "done");
	if (per_patch != NULL)
		json_object_set(doc, "per_patch", per_patch);
	ok = outbox_put(txn, key, doc, error);
	json_decref(doc);
	return ok;
}

gboolean
pgate_outbox_queue_mail(PgateStoreTxn *txn, const char *key,
			const char *series_id, GBytes *message,
			const char *envelope_from, GPtrArray *rcpts,
			GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) old = pgate_store_table_get(
		txn, PGATE_STORE_TABLE_OUTBOX, key, &local);
	g_autofree char *b64 = NULL;
	json_t *to = json_array(), *doc;
	gsize len;
	const guint8 *d = g_bytes_get_data(message, &len);
	gboolean ok;

	if (old != NULL) {	/* queued already: the same mail */
		json_decref(to);
		return TRUE;
	}
	b64 = g_base64_encode(d, len);
	for (guint i = 0; i < rcpts->len; i++)
		json_array_append_new(to, json_string(rcpts->pdata[i]));
	doc = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:i,s:I}", "dest", "email",
			"series", series_id, "message", b64,
			"envelope_from", envelope_from ? envelope_from : "",
			"rcpts", to, "created", (json_int_t)now_s(),
			"attempts", 0, "next_attempt", (json_int_t)0);
	ok = outbox_put(txn, key, doc, error);
	json_decref(doc);
	return ok;
}

/* ---- sending ---- */

typedef struct {
	const char *key;
	json_t *doc;     /* NULL: remove the entry */
} SaveCtx;

static gboolean
save_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	SaveCtx *s = payload;

	if (s->doc == NULL)
		return pgate_store_table_delete(txn, PGATE_STORE_TABLE_OUTBOX,
						s->key, error);
	return outbox_put(txn, s->key, s->doc, error);
}

static gboolean
save(PgateStore *store, const char *key, json_t *doc, GError **error)
{
	SaveCtx s = { key, doc };

	return pgate_store_write(store, save_fn, &s, error);
}

static void
note_failure(json_t *doc, const GError *e, gint64 retry_at)
{
	json_int_t attempts = json_integer_value(json_object_get(doc, "attempts"));

	json_object_set_new(doc, "attempts", json_integer(attempts + 1));
	pgate_state_set_str(doc, "last_error", e->message);
	if (retry_at > 0) {
		json_object_set_new(doc, "next_attempt", json_integer(retry_at));
	} else {
		json_object_set_new(doc, "failed", json_true());
	}
}

static gint64
backoff(json_t *doc)
{
	json_int_t a = json_integer_value(json_object_get(doc, "attempts"));
	gint64 d = BACKOFF_MIN;

	for (json_int_t i = 0; i < a && d < BACKOFF_MAX; i++)
		d *= 2;
	return now_s() + MIN(d, BACKOFF_MAX);
}

static PgatePatchworkState
pw_state(const char *s)
{
	PgatePatchworkState st = PGATE_PATCHWORK_STATE_PENDING;

	pgate_patchwork_state_from_string(s, &st);
	return st;
}

/* The Patchwork ids of a series' patches, kept in SERIES/patchwork:
 * {"patches": {MSGID: ID}, "series": {MSGID: SERIES-ID}} (shown by
 * `series show`; saves a lookup per post). */
static gint64
pw_map_get(PgateStore *store, const char *sid, const char *msgid)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, NULL);
	g_autofree char *key = pgate_state_key(sid, "patchwork", NULL);
	g_autoptr(json_t) doc = txn ? pgate_state_get(txn, key, NULL) : NULL;

	return json_integer_value(json_object_get(json_object_get(doc, "patches"),
						  msgid));
}

typedef struct {
	const char *sid, *msgid;
	gint64 patch, series;
} MapCtx;

static gboolean
pw_map_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	MapCtx *m = payload;
	g_autofree char *key = pgate_state_key(m->sid, "patchwork", NULL);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, error);

	if (doc == NULL && error && *error)
		return FALSE;
	if (doc == NULL)
		doc = json_pack("{s:{},s:{}}", "patches", "series");
	json_object_set_new(json_object_get(doc, "patches"), m->msgid,
			    json_integer(m->patch));
	if (m->series > 0)
		json_object_set_new(json_object_get(doc, "series"), m->msgid,
				    json_integer(m->series));
	return pgate_state_put(txn, key, doc, error);
}

/* Posts the check of @doc to every patch not done yet.  Returns FALSE
 * with @error when the entry must wait or has failed. */
static gboolean
send_check(PgateOutbox *ob, json_t *doc, GError **error)
{
	json_t *msgids = json_object_get(doc, "msgids");
	json_t *done = json_object_get(doc, "done");
	g_autoptr(PgatePatchworkCheck) check = pgate_patchwork_check_new(
		pw_state(pgate_state_str(doc, "state")),
		pgate_state_str(doc, "context"), pgate_state_str(doc, "target_url"),
		pgate_state_str(doc, "description"));
	gsize i;
	json_t *m;

	if (ob->pw == NULL) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "no [patchwork] configuration to send to");
		return FALSE;
	}
	json_array_foreach(msgids, i, m) {
		const char *msgid = json_string_value(m);
		json_t *own = json_object_get(json_object_get(doc, "per_patch"),
					      msgid);
		g_autoptr(PgatePatchworkCheck) mine = NULL;
		gboolean seen = FALSE;
		gint64 patch_id = 0;
		g_autoptr(GError) local = NULL;
		gsize k;
		json_t *x;

		json_array_foreach(done, k, x)
			seen |= g_strcmp0(json_string_value(x), msgid) == 0;
		if (seen)
			continue;
		pgate_state_set_str(doc, "looking_up", msgid);
		patch_id = pw_map_get(ob->store, pgate_state_str(doc, "series"), msgid);
		if (patch_id <= 0) {
			MapCtx m = { pgate_state_str(doc, "series"), msgid, 0, 0 };

			if (!pgate_patchwork_lookup_msgid(ob->pw, msgid, &m.patch,
							  &m.series, error))
				return FALSE;
			/* remembered: not worth failing the post for */
			pgate_store_write(ob->store, pw_map_fn, &m, NULL);
			patch_id = m.patch;
		}
		/* a job run per patch: this patch's own verdict */
		if (own != NULL)
			mine = pgate_patchwork_check_new(
				pw_state(pgate_state_str(own, "state")),
				pgate_state_str(doc, "context"),
				pgate_state_str(doc, "target_url"),
				pgate_state_str(own, "description"));
		if (!pgate_patchwork_post_check_decided(ob->pw, patch_id,
							mine ? mine : check,
							NULL, &local)) {
			/* the patch was found a moment ago: a 404 now means
			 * it was deleted, not that it is still unparsed */
			if (g_error_matches(local, PGATE_REPORT_ERROR,
					    PGATE_ERROR_NOT_FOUND)) {
				g_set_error(error, PGATE_PIPELINE_ERROR,
					    PGATE_ERROR_FAILED,
					    "patch %" G_GINT64_FORMAT " (%s) is gone "
					    "from Patchwork: %s", patch_id, msgid,
					    local->message);
				return FALSE;
			}
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		json_array_append_new(done, json_string(msgid));
	}
	return TRUE;
}

static gboolean
send_mail(PgateOutbox *ob, json_t *doc, GError **error)
{
	g_autoptr(GPtrArray) rcpts = g_ptr_array_new_with_free_func(g_free);
	const char *b64 = pgate_state_str(doc, "message");
	const char *from;
	g_autoptr(GBytes) msg = NULL;
	gsize len = 0;
	guchar *raw;
	gsize i;
	json_t *r;

	if (ob->email == NULL) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "no [email] configuration to send with");
		return FALSE;
	}
	raw = g_base64_decode(b64 ? b64 : "", &len);
	msg = g_bytes_new_take(raw, len);
	json_array_foreach(json_object_get(doc, "rcpts"), i, r)
		g_ptr_array_add(rcpts, g_strdup(json_string_value(r)));
	from = pgate_state_str(doc, "envelope_from");
	return pgate_email_send(ob->email, msg, from && *from ? from : NULL,
				rcpts, error);
}

gboolean
pgate_outbox_flush(PgateOutbox *ob, PgateOutboxStats *stats, GError **error)
{
	g_autoptr(GPtrArray) entries = NULL;
	gint64 now = now_s();

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(ob->store,
								      error);

		if (txn == NULL)
			return FALSE;
		entries = pgate_store_table_scan(txn, PGATE_STORE_TABLE_OUTBOX,
						 NULL, error);
		if (entries == NULL)
			return FALSE;
	}
	for (guint i = 0; i < entries->len; i++) {
		PgateStoreEntry *e = entries->pdata[i];
		json_t *doc = pgate_state_decode(e->val, NULL);
		g_autoptr(GError) local = NULL;
		const char *dest;
		gboolean sent;

		if (doc == NULL)
			continue;
		dest = pgate_state_str(doc, "dest");
		if (!ob->all &&
		    (json_is_true(json_object_get(doc, "failed")) ||
		     json_integer_value(json_object_get(doc, "next_attempt")) > now)) {
			stats->waiting++;
			json_decref(doc);
			continue;
		}
		if (g_strcmp0(dest, "patchwork") == 0)
			sent = send_check(ob, doc, &local);
		else if (g_strcmp0(dest, "email") == 0)
			sent = send_mail(ob, doc, &local);
		else
			sent = FALSE, g_set_error(&local, PGATE_PIPELINE_ERROR,
						  PGATE_ERROR_INVALID,
						  "unknown destination %s",
						  dest ? dest : "(none)");
		if (sent) {
			stats->sent++;
			if (!save(ob->store, e->key, NULL, error)) {
				json_decref(doc);
				return FALSE;
			}
			if (ob->log)
				ob->log(ob->log_data, e->key, "sent", NULL);
		} else {
			gboolean transient = pgate_error_is_transient(local);
			gint64 retry_at = transient ? backoff(doc) : 0;

			/* Patchwork has not parsed the mail yet: its own
			 * backoff, and a time after which it gives up */
			if (ob->pw != NULL &&
			    g_error_matches(local, PGATE_REPORT_ERROR,
					    PGATE_ERROR_NOT_FOUND)) {
				json_int_t first = json_integer_value(
					json_object_get(doc, "first_not_found"));
				guint n = (guint)json_integer_value(
					json_object_get(doc, "attempts")) + 1;

				if (first == 0) {
					first = now;
					json_object_set_new(doc, "first_not_found",
							    json_integer(first));
				}
				transient = pgate_patchwork_lookup_retry_at(
					ob->pw, first, now, n, &retry_at);
				if (!transient) {
					g_autofree char *m =
						pgate_patchwork_lookup_give_up_message(
							ob->pw,
							pgate_state_str(doc, "looking_up"), n,
							now - first);

					g_clear_error(&local);
					g_set_error_literal(&local, PGATE_PIPELINE_ERROR,
							    PGATE_ERROR_NOT_FOUND, m);
					retry_at = 0;
				}
			}
			note_failure(doc, local, transient ? retry_at : 0);
			if (transient)
				stats->retrying++;
			else
				stats->failed++;
			if (ob->log)
				ob->log(ob->log_data, e->key,
					transient ? "retry" : "failed",
					local->message);
			if (!save(ob->store, e->key, doc, error)) {
				json_decref(doc);
				return FALSE;
			}
		}
		json_decref(doc);
	}
	return TRUE;
}

json_t *
pgate_outbox_list(PgateStore *store, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GPtrArray) entries = NULL;
	json_t *out;

	if (txn == NULL)
		return NULL;
	entries = pgate_store_table_scan(txn, PGATE_STORE_TABLE_OUTBOX, NULL,
					 error);
	if (entries == NULL)
		return NULL;
	out = json_array();
	for (guint i = 0; i < entries->len; i++) {
		PgateStoreEntry *e = entries->pdata[i];
		json_t *doc = pgate_state_decode(e->val, NULL);

		if (doc == NULL)
			continue;
		json_object_del(doc, "message");	/* bulky */
		json_object_set_new(doc, "key", json_string(e->key));
		json_array_append_new(out, doc);
	}
	return out;
}
