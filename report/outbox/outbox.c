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
 *   pwstate/SERIES         the Patchwork state of every patch of a series
 *                          ([patchwork] set_state, which the pipeline
 *                          decides: pipeline/pw-state.c): accepted
 *                          with commit_ref, or superseded
 *
 * A crash between the server's acceptance and the removal sends again:
 * Patchwork checks are listed and compared first (SKIP_SAME), and a mail
 * goes out with the same Message-ID, which receivers and archives fold.
 * A state change reads the patch's state and events first: a patch that
 * has the target state already is done, one a human touched is left
 * alone.
 * Transient failures wait with a backoff (30 s doubling to 1 h); permanent
 * ones keep the entry, marked failed with the reason, for
 * `patchgate outbox` -- except a state change's, which is logged once and
 * dropped (the state is a courtesy; a maintainer sets it by hand).
 */
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
	/* the List-Id: its archive is the default of the links */
	if (rec->project != NULL && *rec->project != '\0')
		json_object_set_new(doc, "list", json_string(rec->project));
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

gboolean
pgate_outbox_queue_state(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			 const char *state, json_t *commit_refs,
			 GError **error)
{
	g_autofree char *key = g_strdup_printf("pwstate/%s", rec->id);
	g_autoptr(json_t) doc = NULL;
	json_t *msgids = json_array();
	char *text;
	gboolean ok;

	for (guint i = 0; i < rec->patches->len; i++)
		json_array_append_new(msgids, json_string(
			((PgateSeriesPatch *)rec->patches->pdata[i])->msgid));
	doc = json_pack("{s:s,s:s,s:s,s:o,s:I,s:i,s:I,s:[]}",
			"dest", "patchwork-state", "series", rec->id,
			"state", state, "msgids", msgids,
			"created", (json_int_t)now_s(), "attempts", 0,
			"next_attempt", (json_int_t)0, "done");
	if (commit_refs != NULL)
		json_object_set(doc, "commit_refs", commit_refs);
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	ok = pgate_store_table_put(txn, PGATE_STORE_TABLE_OUTBOX, key, text,
				   strlen(text), error);
	free(text);
	return ok;
}

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

/*
 * The Patchwork ids of a series' patches, kept in SERIES/patchwork (shown
 * by `series show`; saves the lookups of every later post):
 *
 *   {"url": BASE, "project": P,
 *    "patches": {MSGID: ID}, "series": {MSGID: SERIES-ID}}
 *
 * Ids are valid on one Patchwork and in one project only: ids stored for
 * another url or project (the configuration changed) are not used, and
 * the next ids found replace them.  A document without url and project
 * (written by older versions) counts as another one.
 */
static gboolean
pw_map_is_ours(json_t *doc, PgatePatchwork *pw)
{
	return g_strcmp0(pgate_state_str(doc, "url"),
			 pgate_patchwork_get_url(pw)) == 0 &&
	       g_strcmp0(pgate_state_str(doc, "project"),
			 pgate_patchwork_get_project(pw)) == 0;
}

/* (transfer full): {MSGID: ID} of series @sid on our Patchwork, maybe
 * empty. */
static json_t *
pw_map_load(PgateOutbox *ob, const char *sid)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(ob->store, NULL);
	g_autofree char *key = pgate_state_key(sid, "patchwork", NULL);
	g_autoptr(json_t) doc = txn ? pgate_state_get(txn, key, NULL) : NULL;
	json_t *patches = json_object_get(doc, "patches");

	if (doc == NULL || !pw_map_is_ours(doc, ob->pw) ||
	    !json_is_object(patches))
		return json_object();
	return json_deep_copy(patches);
}

typedef struct {
	const char *sid;
	PgatePatchwork *pw;
	json_t *patches, *series;  /* found: {MSGID: ID}, {MSGID: SERIES-ID} */
} MapCtx;

static gboolean
pw_map_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	MapCtx *m = payload;
	g_autofree char *key = pgate_state_key(m->sid, "patchwork", NULL);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, error);

	if (doc == NULL && error && *error)
		return FALSE;
	if (doc == NULL || !pw_map_is_ours(doc, m->pw) ||
	    !json_is_object(json_object_get(doc, "patches")) ||
	    !json_is_object(json_object_get(doc, "series"))) {
		json_decref(doc);
		doc = json_pack("{s:s,s:s,s:{},s:{}}", "url",
				pgate_patchwork_get_url(m->pw), "project",
				pgate_patchwork_get_project(m->pw), "patches",
				"series");
	}
	json_object_update(json_object_get(doc, "patches"), m->patches);
	json_object_update(json_object_get(doc, "series"), m->series);
	return pgate_state_put(txn, key, doc, error);
}

/*
 * Finds the Patchwork id of @msgid, a patch of the entry @doc, and adds
 * it to @map.  One lookup by Message-ID gives the patch and its
 * Patchwork series; when other patches of the entry are still unknown,
 * one more request (the series) maps every patch Patchwork lists in it,
 * instead of a lookup per patch.  The patches Patchwork's series does
 * not list (its threading is not ours) are looked up when their turn
 * comes.  What was found is remembered (SERIES/patchwork).
 */
static gboolean
pw_map_find(PgateOutbox *ob, json_t *doc, const char *msgid, json_t *map,
	    GError **error)
{
	json_t *msgids = json_object_get(doc, "msgids");
	g_autoptr(json_t) patches = json_object();
	g_autoptr(json_t) series = json_object();
	MapCtx mc = { pgate_state_str(doc, "series"), ob->pw, patches, series };
	gint64 pid = 0, psid = 0;
	gboolean others = FALSE;
	gsize i;
	json_t *m;

	if (!pgate_patchwork_lookup_msgid(ob->pw, msgid, &pid, &psid, error))
		return FALSE;
	json_object_set_new(patches, msgid, json_integer(pid));
	if (psid > 0)
		json_object_set_new(series, msgid, json_integer(psid));
	json_array_foreach(msgids, i, m)
		others |= json_is_string(m) &&
			  strcmp(json_string_value(m), msgid) != 0 &&
			  json_object_get(map, json_string_value(m)) == NULL;
	if (psid > 0 && others) {
		g_autoptr(GError) local = NULL;
		g_autoptr(PgatePatchworkSeries) s =
			pgate_patchwork_series_get(ob->pw, psid, &local);

		/* not worth failing for: each patch is looked up instead */
		if (s == NULL)
			g_debug("outbox: series=%s: %s", mc.sid, local->message);
		json_array_foreach(msgids, i, m) {
			const char *other = json_string_value(m);
			gint64 id = s && other ? pgate_patchwork_series_find_patch(
							 s, other) : 0;

			if (id <= 0 || json_object_get(patches, other) != NULL)
				continue;
			json_object_set_new(patches, other, json_integer(id));
			json_object_set_new(series, other, json_integer(psid));
		}
	}
	json_object_update(map, patches);
	/* remembered: not worth failing the post for */
	pgate_store_write(ob->store, pw_map_fn, &mc, NULL);
	return TRUE;
}

/* The Patchwork id of @msgid: from @map, else looked up (and added to
 * it). */
static gboolean
patch_id_of(PgateOutbox *ob, json_t *doc, const char *msgid, json_t *map,
	    gint64 *out, GError **error)
{
	pgate_state_set_str(doc, "looking_up", msgid);
	*out = json_integer_value(json_object_get(map, msgid));
	if (*out > 0)
		return TRUE;
	if (!pw_map_find(ob, doc, msgid, map, error))
		return FALSE;
	*out = json_integer_value(json_object_get(map, msgid));
	return TRUE;
}

/* A request about patch @patch_id failed with *@local: a 404 now means
 * the patch was deleted (it was found a moment ago), not that it is still
 * unparsed: a failure of its own.  Always %FALSE. */
static gboolean
patch_failed(gint64 patch_id, const char *msgid, GError **local,
	     GError **error)
{
	if (g_error_matches(*local, PGATE_REPORT_ERROR, PGATE_ERROR_NOT_FOUND)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "patch %" G_GINT64_FORMAT " (%s) is gone from "
			    "Patchwork: %s", patch_id, msgid, (*local)->message);
		return FALSE;
	}
	g_propagate_error(error, g_steal_pointer(local));
	return FALSE;
}

/* @description, then "archive: URL" of @msgid ([report] archive_url,
 * else the known archive of list @list), or %NULL when there is no
 * archive link to add. */
static char *
with_archive(PgateOutbox *ob, const char *description, const char *list,
	     const char *msgid)
{
	g_autofree char *url = pgate_report_archive_url(ob->archive_url, list,
							msgid);

	if (url == NULL)
		return NULL;
	return description && *description
		? g_strdup_printf("%s\narchive: %s", description, url)
		: g_strdup_printf("archive: %s", url);
}

/* Whether the entry's "done" list (of Message-IDs) holds @msgid. */
static gboolean
done_has(json_t *done, const char *msgid)
{
	gsize k;
	json_t *x;

	json_array_foreach(done, k, x)
		if (g_strcmp0(json_string_value(x), msgid) == 0)
			return TRUE;
	return FALSE;
}

/* Posts the check of @doc to every patch not done yet; *@out_posted says
 * whether anything was posted (else Patchwork showed it already).
 * Returns FALSE with @error when the entry must wait or has failed. */
static gboolean
send_check(PgateOutbox *ob, json_t *doc, gboolean *out_posted, GError **error)
{
	json_t *msgids = json_object_get(doc, "msgids");
	json_t *done = json_object_get(doc, "done");
	g_autoptr(PgatePatchworkCheck) check = pgate_patchwork_check_new(
		pw_state(pgate_state_str(doc, "state")),
		pgate_state_str(doc, "context"), pgate_state_str(doc, "target_url"),
		pgate_state_str(doc, "description"));
	g_autoptr(json_t) map = NULL;
	gsize i;
	json_t *m;

	if (ob->pw == NULL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "no [patchwork] configuration to send to");
		return FALSE;
	}
	map = pw_map_load(ob, pgate_state_str(doc, "series"));
	json_array_foreach(msgids, i, m) {
		const char *msgid = json_string_value(m);
		json_t *own = json_object_get(json_object_get(doc, "per_patch"),
					      msgid);
		g_autoptr(PgatePatchworkCheck) mine = NULL;
		PgatePatchworkDecision decision = PGATE_PATCHWORK_POST;
		gint64 patch_id = 0;
		g_autoptr(GError) local = NULL;

		if (done_has(done, msgid))
			continue;
		if (!patch_id_of(ob, doc, msgid, map, &patch_id, error))
			return FALSE;
		/* a job run per patch: this patch's own verdict; the
		 * description ends with the patch's archive copy */
		{
			g_autofree char *desc = with_archive(ob,
				pgate_state_str(own ? own : doc, "description"),
				pgate_state_str(doc, "list"), msgid);

			if (own != NULL || desc != NULL)
				mine = pgate_patchwork_check_new(
					pw_state(pgate_state_str(own ? own : doc,
								 "state")),
					pgate_state_str(doc, "context"),
					pgate_state_str(doc, "target_url"),
					desc ? desc : pgate_state_str(own,
								      "description"));
		}
		if (!pgate_patchwork_post_check_decided(ob->pw, patch_id,
							mine ? mine : check,
							&decision, &local)) {
			return patch_failed(patch_id, msgid, &local, error);
		}
		if (decision == PGATE_PATCHWORK_POST)
			*out_posted = TRUE;
		json_array_append_new(done, json_string(msgid));
	}
	return TRUE;
}

/* Sets the Patchwork state of @doc on every patch not done yet, unless a
 * human changed it (see report/patchwork/state.c); *@out_posted says
 * whether any state was changed. */
static gboolean
send_state(PgateOutbox *ob, const char *key, json_t *doc,
	   gboolean *out_posted, GError **error)
{
	json_t *msgids = json_object_get(doc, "msgids");
	json_t *done = json_object_get(doc, "done");
	json_t *refs = json_object_get(doc, "commit_refs");
	const char *state = pgate_state_str(doc, "state");
	g_autoptr(json_t) map = NULL;
	gsize i;
	json_t *m;

	if (ob->pw == NULL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "no [patchwork] configuration to send to");
		return FALSE;
	}
	if (!json_is_array(done)) {
		done = json_array();
		json_object_set_new(doc, "done", done);
	}
	map = pw_map_load(ob, pgate_state_str(doc, "series"));
	json_array_foreach(msgids, i, m) {
		const char *msgid = json_string_value(m);
		PgatePatchworkStateDecision decision = PGATE_PATCHWORK_STATE_SET;
		g_autofree char *why = NULL;
		g_autoptr(GError) local = NULL;
		gint64 patch_id;

		if (msgid == NULL || done_has(done, msgid))
			continue;
		if (!patch_id_of(ob, doc, msgid, map, &patch_id, error))
			return FALSE;
		if (!pgate_patchwork_set_patch_state_decided(
			    ob->pw, patch_id, state,
			    json_string_value(json_object_get(refs, msgid)),
			    &decision, &why, &local)) {
			return patch_failed(patch_id, msgid, &local, error);
		}
		if (decision == PGATE_PATCHWORK_STATE_SET)
			*out_posted = TRUE;
		if (decision == PGATE_PATCHWORK_STATE_SKIP_HUMAN && ob->log) {
			g_autofree char *d = g_strdup_printf(
				"patch %" G_GINT64_FORMAT " (%s) not made %s: %s",
				patch_id, msgid, state, why ? why : "a human's");

			ob->log(ob->log_data, key, "left", d);
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
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
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

/* ---- what became of each report ---- */

typedef enum {
	OUTCOME_SENT = 1,
	OUTCOME_SKIPPED,
	OUTCOME_RETRYING,
	OUTCOME_FAILED,
	OUTCOME_REFUSED,
	OUTCOME_WAITING,   /* not tried */
	OUTCOME_HELD,      /* not tried */
} Outcome;

static guint *
counter(PgateOutboxStats *st, Outcome o)
{
	switch (o) {
	case OUTCOME_SENT:
		return &st->sent;
	case OUTCOME_SKIPPED:
		return &st->skipped;
	case OUTCOME_RETRYING:
		return &st->retrying;
	case OUTCOME_FAILED:
		return &st->failed;
	case OUTCOME_REFUSED:
		return &st->refused;
	case OUTCOME_WAITING:
		return &st->waiting;
	case OUTCOME_HELD:
	default:
		return &st->held;
	}
}

/* Counts report @key once: a try replaces what an earlier flush saw of
 * it; not trying it (waiting, held) only counts when nothing else did. */
static void
tally(PgateOutboxStats *st, const char *key, Outcome o)
{
	gpointer old;

	if (st->outcome == NULL)
		st->outcome = g_hash_table_new_full(g_str_hash, g_str_equal,
						    g_free, NULL);
	old = g_hash_table_lookup(st->outcome, key);
	if (old != NULL) {
		if (o == OUTCOME_WAITING || o == OUTCOME_HELD)
			return;
		(*counter(st, GPOINTER_TO_INT(old)))--;
	}
	g_hash_table_insert(st->outcome, g_strdup(key), GINT_TO_POINTER(o));
	(*counter(st, o))++;
}

static void
note_refusal(PgateOutboxStats *st, const GError *e)
{
	if (st->refusal == NULL)
		st->refusal = g_error_copy(e);
}

void
pgate_outbox_stats_clear(PgateOutboxStats *stats)
{
	g_clear_error(&stats->refusal);
	g_clear_pointer(&stats->outcome, g_hash_table_unref);
	memset(stats, 0, sizeof *stats);
}

/* The setup check before the first check of a flush: %TRUE when checks
 * may be tried, else @error says why not. */
static gboolean
pw_ready(PgateOutbox *ob, GError **error)
{
	if (ob->pw == NULL)
		return TRUE;	/* each entry says so (send_check()) */
	if (!pgate_patchwork_has_token(ob->pw)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "patchwork: no token configured (token_file or "
			    "token_env in [patchwork]): cannot post checks");
		return FALSE;
	}
	return pgate_patchwork_verify(ob->pw, error);
}

static gboolean flush(PgateOutbox *ob, gboolean by_project, const char *only,
		      PgateOutboxStats *stats, GError **error);

gboolean
pgate_outbox_flush(PgateOutbox *ob, PgateOutboxStats *stats, GError **error)
{
	return flush(ob, FALSE, NULL, stats, error);
}

gboolean
pgate_outbox_flush_project(PgateOutbox *ob, const char *project,
			   PgateOutboxStats *stats, GError **error)
{
	return flush(ob, TRUE, project, stats, error);
}

/* An entry not sent (@local says why): tallied, logged, and kept with
 * its next attempt; a state change that failed for good is dropped.
 * %FALSE: the store failed (@error). */
static gboolean
record_failure(PgateOutbox *ob, const char *key, json_t *doc,
	       gboolean is_state, gint64 now, GError **local,
	       PgateOutboxStats *stats, GError **error)
{
	gboolean transient = pgate_error_is_transient(*local);
	gint64 retry_at = transient ? backoff(doc) : 0;

	/* Patchwork has not parsed the mail yet: its own
	 * backoff, and a time after which it gives up */
	if (ob->pw != NULL &&
	    g_error_matches(*local, PGATE_REPORT_ERROR,
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

			g_clear_error(local);
			g_set_error_literal(local, PGATE_REPORT_ERROR,
					    PGATE_ERROR_NOT_FOUND, m);
			retry_at = 0;
		}
	}
	note_failure(doc, *local, transient ? retry_at : 0);
	if (transient) {
		tally(stats, key, OUTCOME_RETRYING);
	} else if ((*local)->code == PGATE_ERROR_CONFIG) {
		note_refusal(stats, *local);
		tally(stats, key, OUTCOME_REFUSED);
	} else {
		tally(stats, key, OUTCOME_FAILED);
	}
	if (ob->log)
		ob->log(ob->log_data, key,
			transient ? "retry" : "failed",
			(*local)->message);
	/* a state change failed for good: said once, dropped */
	if (is_state && !transient)
		return save(ob->store, key, NULL, error);
	return save(ob->store, key, doc, error);
}

static gboolean
flush(PgateOutbox *ob, gboolean by_project, const char *only,
      PgateOutboxStats *stats, GError **error)
{
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GError) pw_error = NULL;
	gboolean pw_checked = FALSE;
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
		gboolean sent, posted = FALSE, is_state = FALSE;

		if (doc == NULL)
			continue;
		if (by_project) {
			/* one project's entries: its series are SID@NAME */
			const char *project = pgate_project_of_state_id(
				pgate_state_str(doc, "series"));

			if (g_strcmp0(project, only) != 0) {
				json_decref(doc);
				continue;
			}
		}
		dest = pgate_state_str(doc, "dest");
		if (!ob->all && json_is_true(json_object_get(doc, "failed"))) {
			tally(stats, e->key, OUTCOME_HELD);
			json_decref(doc);
			continue;
		}
		if (!ob->all &&
		    json_integer_value(json_object_get(doc, "next_attempt")) > now) {
			tally(stats, e->key, OUTCOME_WAITING);
			json_decref(doc);
			continue;
		}
		if (g_strcmp0(dest, "patchwork-state") == 0)
			dest = "patchwork", is_state = TRUE;
		if (g_strcmp0(dest, "patchwork") == 0 && !pw_checked) {
			pw_checked = TRUE;
			if (!pw_ready(ob, &pw_error)) {
				gboolean first = stats->refusal == NULL;

				if (!pgate_error_is_transient(pw_error))
					note_refusal(stats, pw_error);
				/* said once, not once per check */
				if (ob->log && (first || pgate_error_is_transient(pw_error)))
					ob->log(ob->log_data, "patchwork",
						pgate_error_is_transient(pw_error)
						? "retry" : "refused", pw_error->message);
			}
		}
		if (g_strcmp0(dest, "patchwork") == 0 && pw_error != NULL) {
			/* not the report's fault: left as it is */
			tally(stats, e->key, pgate_error_is_transient(pw_error)
					     ? OUTCOME_RETRYING : OUTCOME_REFUSED);
			json_decref(doc);
			continue;
		}
		if (is_state)
			sent = send_state(ob, e->key, doc, &posted, &local);
		else if (g_strcmp0(dest, "patchwork") == 0)
			sent = send_check(ob, doc, &posted, &local);
		else if (g_strcmp0(dest, "email") == 0)
			sent = posted = send_mail(ob, doc, &local);
		else
			sent = FALSE, g_set_error(&local, PGATE_REPORT_ERROR,
						  PGATE_ERROR_INVALID,
						  "unknown destination %s",
						  dest ? dest : "(none)");
		if (sent) {
			tally(stats, e->key, posted ? OUTCOME_SENT : OUTCOME_SKIPPED);
			if (!save(ob->store, e->key, NULL, error)) {
				json_decref(doc);
				return FALSE;
			}
			if (ob->log)
				ob->log(ob->log_data, e->key,
					posted ? "sent" : "skipped",
					posted ? NULL : "Patchwork shows it already");
		} else if (!record_failure(ob, e->key, doc, is_state, now, &local,
					   stats, error)) {
			json_decref(doc);
			return FALSE;
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
