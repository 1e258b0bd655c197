/* reply.c - the opt-in email reply of a series whose results are in:
 * built from the store (the answered mail, the series, its apply and CI
 * documents), held for the digest or rate-limited as the project's
 * policy says, composed once, and queued in the outbox.  What needs
 * another stage (the answered mail's raw bytes, the comparison with the
 * version before) the caller passes in (PgateReplyInput). */
#include "report/report.h"
#include "common/json.h"

#include <string.h>

static PgateEmailVerdict
verdict_of(const PgateCiDoc *doc)
{
	if (!(doc->has & PGATE_CI_DOC_VERDICT))
		return PGATE_EMAIL_VERDICT_SKIPPED;
	switch (doc->verdict) {
	case PGATE_VERDICT_SUCCESS: return PGATE_EMAIL_VERDICT_PASS;
	case PGATE_VERDICT_WARNING: return PGATE_EMAIL_VERDICT_WARNING;
	case PGATE_VERDICT_FAIL: return PGATE_EMAIL_VERDICT_FAIL;
	case PGATE_VERDICT_ERROR: return PGATE_EMAIL_VERDICT_ERROR;
	case PGATE_VERDICT_NONE: break;
	}
	return PGATE_EMAIL_VERDICT_SKIPPED;
}

/* The last lines of a CI summary: the log excerpt for the mail. */
static void
add_jobs(PgateEmailReport *r, const PgateSeriesDocs *state)
{
	for (guint i = 0; i < state->ci->len; i++) {
		const PgateCiDoc *doc = state->ci->pdata[i];
		PgateEmailJob *j = pgate_email_job_new(doc->job, verdict_of(doc));

		j->reason = g_strdup(doc->reason);
		j->log_excerpt = g_strdup(doc->summary);
		j->url = g_strdup(doc->url);
		if (r->base_branch == NULL && doc->target != NULL)
			r->base_branch = g_strdup(doc->target);
		g_ptr_array_add(r->jobs, j);
	}
}

static void
add_apply(PgateEmailReport *r, const PgateSeriesDocs *state)
{
	for (guint i = 0; i < state->apply->len; i++) {
		const PgateApplyDoc *doc = state->apply->pdata[i];
		const PgateApplyFailure *f = doc->failure;

		if (pgate_apply_doc_applied(doc)) {
			if (r->base_commit == NULL) {
				r->base_commit = g_strdup(doc->base_commit);
				r->head_commit = g_strdup(doc->head);
				g_free(r->base_branch);
				r->base_branch = g_strdup(doc->target);
			}
			continue;
		}
		if (f != NULL)
			g_ptr_array_add(r->apply_failures,
					pgate_email_apply_failure_new(
						(guint)f->patch, f->file,
						f->reason));
	}
	/* nothing applied: the base it was tried on first (the base-commit
	 * when the repository has it, else the first branch), which the
	 * reply names ("did not apply to the base named below") */
	for (guint i = 0; r->base_commit == NULL && i < state->apply->len;
	     i++) {
		const PgateApplyDoc *doc = state->apply->pdata[i];

		if (doc->failure == NULL || doc->base_commit == NULL)
			continue;
		r->base_commit = g_strdup(doc->base_commit);
		g_free(r->base_branch);
		r->base_branch = g_strdup(doc->target);
	}
}

/* The list's posting address: the To/Cc address that the List-Id names
 * ("<linux-i3c.lists.infradead.org>" -> linux-i3c@lists.infradead.org,
 * the mailman and public-inbox convention), or NULL. */
static char *
list_address(const PgateMessageRec *m)
{
	g_autofree char *want = NULL;
	const char *dot;
	GPtrArray *lists[] = { m->to, m->cc };

	if (m->list_id == NULL || (dot = strchr(m->list_id, '.')) == NULL)
		return NULL;
	want = g_strdup_printf("%.*s@%s", (int)(dot - m->list_id), m->list_id,
			       dot + 1);
	for (guint l = 0; l < G_N_ELEMENTS(lists); l++)
		for (guint i = 0; i < lists[l]->len; i++) {
			const char *a = lists[l]->pdata[i];
			const char *lt = strrchr(a, '<');
			g_autofree char *addr = lt ? g_strndup(lt + 1, strcspn(lt + 1, ">"))
						   : g_strdup(a);

			if (g_ascii_strcasecmp(g_strstrip(addr), want) == 0)
				return g_steal_pointer(&addr);
		}
	return NULL;
}

/* The per-recipient rate limit, over the history kept in the stage table
 * under "_email/rate/ADDRESS" ({"sent": [times]}, the newest 64), counted
 * when a reply is queued.  FALSE without error: over the limit (logged). */
static gboolean
rate_allows(PgateStoreTxn *txn, const PgateReplyConfig *c, const PgateSeriesRec *rec,
	    const char *addr, GError **error)
{
	g_autofree char *lower = g_ascii_strdown(addr, -1);
	g_autofree char *key = g_strdup_printf("_email/rate/%.400s", lower);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, error);
	g_autoptr(GArray) times = g_array_new(FALSE, FALSE, sizeof(gint64));
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	json_t *sent, *v;
	gsize i;

	if (doc == NULL && error && *error)
		return FALSE;
	if (doc == NULL)
		doc = json_pack("{s:[]}", "sent");
	sent = json_object_get(doc, "sent");
	json_array_foreach(sent, i, v) {
		gint64 t = json_integer_value(v);

		g_array_append_val(times, t);
	}
	if (!pgate_email_rate_allows(c->email, (const gint64 *)times->data,
				     times->len, now)) {
		if (c->log)
			c->log(c->log_data, rec->id, "mail-skipped",
			       "rate limit for this recipient reached");
		return FALSE;
	}
	json_array_append_new(sent, json_integer(now));
	while (json_array_size(sent) > 64)
		json_array_remove(sent, 0);
	return pgate_state_put(txn, key, doc, error);
}

/* ---- the reply policy: noise budget and daily digest ----
 *
 * (docs/report-email.md, "Digest and noise budget").  In the stage
 * table, per project (LABEL: its name, "-" for the implicit one):
 *   _email/day/LABEL/DAY/LIST      {"sent": N}: replies sent at once on
 *                                  DAY (UTC) to LIST (the list's
 *                                  address, else the first recipient)
 *   _email/held/LABEL/DAY/KEY      {"rcpts": [...], "line": "..."}: a
 *                                  reply (outbox KEY) held for DAY's
 *                                  digest
 * Held replies of a day that is over become one digest mail per
 * recipient, queued in the outbox (mail-digest/LABEL/DAY/RCPT) in the
 * transaction that deletes them: each is sent once. */

/* The clock of the budget and the digest: now, or PGATE_TEST_NOW
 * (seconds since the epoch) in the tests. */
static gint64
policy_now(void)
{
	const char *t = g_getenv("PGATE_TEST_NOW");
	guint64 v;

	if (t != NULL && g_ascii_string_to_unsigned(t, 10, 1, G_MAXINT64, &v,
						    NULL))
		return (gint64)v;
	return g_get_real_time() / G_USEC_PER_SEC;
}

static char *
day_of(gint64 t)
{
	g_autoptr(GDateTime) d = g_date_time_new_from_unix_utc(t);

	return d ? g_date_time_format(d, "%Y-%m-%d") : g_strdup("1970-01-01");
}

/* Whether the reply @key goes out now (*@out_send) or waits for the
 * digest (held here, in @txn). */
static gboolean
policy_decide(PgateStoreTxn *txn, const PgateReplyConfig *c, const PgateSeriesRec *rec,
	      const PgateEmailReport *r, const char *key, GPtrArray *rcpts,
	      gboolean *out_send, GError **error)
{
	guint max = pgate_email_config_max_per_day(c->email);
	gboolean digest = pgate_email_config_digest(c->email);
	g_autofree char *day = day_of(policy_now());
	g_autofree char *list = NULL, *ck = NULL, *hk = NULL, *line = NULL;
	g_autoptr(json_t) count = NULL, held = NULL;
	json_t *to;
	json_int_t sent;

	*out_send = TRUE;
	if (!digest && max == 0)
		return TRUE;
	list = g_ascii_strdown(r->list_address && *r->list_address
				       ? r->list_address
				       : (const char *)rcpts->pdata[0], -1);
	if (!digest) {
		ck = g_strdup_printf("_email/day/%s/%s/%.300s", c->label,
				     day, list);
		count = pgate_state_get(txn, ck, error);
		if (count == NULL && error && *error)
			return FALSE;
		sent = json_integer_value(json_object_get(count, "sent"));
		if (sent < (json_int_t)max) {
			g_autoptr(json_t) n = json_pack("{s:I}", "sent",
							sent + 1);

			return pgate_state_put(txn, ck, n, error);
		}
	}
	/* held for the digest */
	*out_send = FALSE;
	hk = g_strdup_printf("_email/held/%s/%s/%s", c->label, day, key);
	line = pgate_email_digest_line(r);
	to = json_array();
	for (guint i = 0; i < rcpts->len; i++)
		json_array_append_new(to, json_string(rcpts->pdata[i]));
	held = json_pack("{s:o,s:s,s:s}", "rcpts", to, "line", line,
			 "series", rec->id);
	if (c->log)
		c->log(c->log_data, rec->id, "mail-held",
		       digest ? "replies go in the daily digest"
			      : "the list's noise budget for today is spent: "
				"held for the digest");
	return pgate_state_put(txn, hk, held, error);
}

typedef struct {
	const PgateReplyConfig *c;
	guint queued;
} DigestCtx;

static gint
sort_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static gboolean
digest_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DigestCtx *dc = payload;
	const PgateReplyConfig *c = dc->c;
	gint64 now = policy_now();
	g_autofree char *today = day_of(now);
	g_autofree char *prefix = g_strdup_printf("_email/held/%s/",
						  c->label);
	g_autoptr(json_t) all = pgate_state_scan(txn, prefix, error);
	/* "DAY\nRCPT" -> (element-type utf8) lines, in key order */
	g_autoptr(GHashTable) groups = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free,
		(GDestroyNotify)g_ptr_array_unref);
	g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func(g_free);
	const char *rest;
	json_t *doc;

	dc->queued = 0;
	if (all == NULL)
		return FALSE;
	json_object_foreach(all, rest, doc) {
		const char *slash = strchr(rest, '/');
		g_autofree char *day = NULL;
		json_t *to, *v;
		gsize i;

		if (slash == NULL)
			continue;
		day = g_strndup(rest, (gsize)(slash - rest));
		if (strcmp(day, today) >= 0)
			continue;	/* the day is not over */
		to = json_object_get(doc, "rcpts");
		json_array_foreach(to, i, v) {
			g_autofree char *g = g_strdup_printf(
				"%s\n%s", day, json_string_value(v)
				? json_string_value(v) : "");
			GPtrArray *lines = g_hash_table_lookup(groups, g);

			if (lines == NULL) {
				lines = g_ptr_array_new_with_free_func(g_free);
				g_ptr_array_add(order, g_strdup(g));
				g_hash_table_insert(groups, g_steal_pointer(&g),
						    lines);
			}
			g_ptr_array_add(lines, g_strdup(
				pgate_state_str(doc, "line")
				? pgate_state_str(doc, "line") : ""));
		}
		g_ptr_array_add(done, g_strconcat(prefix, rest, NULL));
	}
	for (guint i = 0; i < order->len; i++) {
		char *g = order->pdata[i];
		char *nl = strchr(g, '\n');
		GPtrArray *lines = g_hash_table_lookup(groups, g);
		g_autofree char *key = NULL, *series = NULL;
		g_autoptr(GPtrArray) rcpt = g_ptr_array_new_with_free_func(g_free);
		g_autoptr(GBytes) msg = NULL;
		g_autoptr(GError) local = NULL;

		*nl = '\0';
		key = g_strdup_printf("mail-digest/%s/%s/%s", c->label,
				      g, nl + 1);
		/* the outbox flushes a project's entries: SID@NAME */
		series = g_strdup(c->digest_series);
		g_ptr_array_add(rcpt, g_strdup(nl + 1));
		g_ptr_array_sort(lines, sort_str);
		msg = pgate_email_compose_digest(c->email, nl + 1, g, lines,
						 key, now, &local);
		if (msg == NULL && g_error_matches(local, PGATE_REPORT_ERROR,
						   PGATE_ERROR_INVALID)) {
			/* no usable recipient: nothing to send it to */
			if (c->log)
				c->log(c->log_data, c->label,
				       "mail-skipped", local->message);
			g_clear_error(&local);
			continue;
		}
		if (msg == NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (!pgate_outbox_queue_mail(txn, key, series, msg, NULL, rcpt,
					     error))
			return FALSE;
		dc->queued++;
	}
	/* the counters of the days that are over are done with too */
	{
		g_autofree char *cp = g_strdup_printf("_email/day/%s/",
						      c->label);
		g_autoptr(json_t) counters = pgate_state_scan(txn, cp, error);

		if (counters == NULL)
			return FALSE;
		json_object_foreach(counters, rest, doc)
			if (strncmp(rest, today, strlen(today)) < 0)
				g_ptr_array_add(done, g_strconcat(cp, rest,
								  NULL));
	}
	for (guint i = 0; i < done->len; i++)
		if (!pgate_store_table_delete(txn, PGATE_STORE_TABLE_STAGE,
					      done->pdata[i], error))
			return FALSE;
	return TRUE;
}

gboolean
pgate_reply_digest(PgateStore *store, const PgateReplyConfig *c,
		   GError **error)
{
	DigestCtx dc = { c, 0 };

	if (c->email == NULL || !pgate_email_config_enabled(c->email))
		return TRUE;
	if (!pgate_store_write(store, digest_fn, &dc, error))
		return FALSE;
	if (dc.queued > 0 && c->log) {
		g_autofree char *m = g_strdup_printf("%u digest %s queued",
						     dc.queued, dc.queued == 1
						     ? "mail" : "mails");

		c->log(c->log_data, c->label, "mail-digest", m);
	}
	return TRUE;
}

/* @s without its trailing '/'s, in place (nullable). */
static void
strip_slashes(char *s)
{
	gsize n = s ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
}

/* The cover, else the first patch. */
static PgateMessageRec *
first_answered(PgateStoreTxn *txn, const PgateSeriesRec *rec, GError **error)
{
	guint64 num = rec->cover_num;

	if (num == 0 && rec->patches->len > 0)
		num = ((PgateSeriesPatch *)rec->patches->pdata[0])->num;
	return pgate_store_message_get(txn, num, error);
}

/* format = dpdk: Patchwork checks are on patches, so the report answers
 * the last patch (the whole series applied), with its Patchwork id as
 * the outbox found it when it posted the series' checks (SERIES/
 * patchwork; "pw?" when not known yet, as send-patch-report.sh writes)
 * and its page, [patchwork] url + /patch/ID/. */
static PgateMessageRec *
dpdk_answered(PgateStoreTxn *txn, const PgateReplyConfig *c, const PgateSeriesRec *rec,
	      gint64 *out_id, char **out_url, GError **error)
{
	const PgateSeriesPatch *last = NULL;
	g_autofree char *key = NULL, *pw = g_strdup(c->patchwork_url);
	g_autofree char *theirs = NULL;
	const char *project = c->patchwork_project;
	g_autoptr(json_t) map = NULL;

	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *sp = rec->patches->pdata[i];

		if (last == NULL || sp->number >= last->number)
			last = sp;
	}
	if (last == NULL)
		return first_answered(txn, rec, error);
	key = pgate_state_key(rec->id, "patchwork", NULL);
	map = pgate_state_get(txn, key, NULL);
	theirs = g_strdup(pgate_state_str(map, "url"));
	strip_slashes(pw);
	strip_slashes(theirs);
	/* ids of another Patchwork or project (the configuration changed)
	 * are not ours, as for the outbox's pw_map_is_ours() */
	if (pw == NULL || g_strcmp0(pw, theirs) != 0 ||
	    g_strcmp0(project, pgate_state_str(map, "project")) != 0)
		return pgate_store_message_get(txn, last->num, error);
	*out_id = json_integer_value(json_object_get(
		json_object_get(map, "patches"), last->msgid));
	if (*out_id > 0)
		*out_url = g_strdup_printf("%s/patch/%" G_GINT64_FORMAT "/", pw,
					   *out_id);
	return pgate_store_message_get(txn, last->num, error);
}

PgateEmailReport *
pgate_reply_report(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			   const PgateMessageRec *answered, GError **error)
{
	g_autoptr(PgateEmailReport) r = pgate_email_report_new();
	g_autoptr(PgateSeriesDocs) state =
		pgate_series_docs_read(txn, rec->id, error);

	if (state == NULL)
		return NULL;
	r->subject = g_strdup(answered->subject);
	r->msgid = g_strdup(answered->msgid);
	for (guint i = 0; i < answered->references->len; i++)
		g_ptr_array_add(r->references, g_strdup(answered->references->pdata[i]));
	r->list_address = list_address(answered);
	r->list_id = g_strdup(answered->list_id);
	r->submitter_name = g_strdup(rec->submitter_name);
	r->submitter_email = g_strdup(rec->submitter_email);
	r->series_name = g_strdup(rec->name);
	r->series_id = g_strdup(rec->id);
	r->version = rec->version;
	r->patch_count = rec->patches->len;
	/* the version chain, newest first */
	{
		g_autofree char *prev = g_strdup(rec->supersedes);

		for (int n = 0; prev != NULL && n < 8; n++) {
			g_autoptr(PgateSeriesRec) pr = pgate_store_series_get(
				txn, prev, NULL);

			if (pr == NULL)
				break;
			g_ptr_array_add(r->previous, pgate_email_previous_new(
				pr->version, pr->id));
			g_free(prev);
			prev = g_strdup(pr->supersedes);
		}
	}
	add_apply(r, state);
	add_jobs(r, state);
	return g_steal_pointer(&r);
}

PgateMessageRec *
pgate_reply_answered(PgateStoreTxn *txn, const PgateReplyConfig *c,
		     const PgateSeriesRec *rec, gint64 *out_pw_id,
		     char **out_pw_url, GError **error)
{
	*out_pw_id = 0;
	*out_pw_url = NULL;
	if (c->email != NULL &&
	    pgate_email_config_format(c->email) == PGATE_EMAIL_FORMAT_DPDK)
		return dpdk_answered(txn, c, rec, out_pw_id, out_pw_url, error);
	return first_answered(txn, rec, error);
}

char *
pgate_reply_key(PgateStoreTxn *txn, const PgateSeriesRec *rec,
		PgateSeriesState state)
{
	/* a recheck's results are a new reply, not the old one's retry
	 * (docs/pipeline.md, "Recheck") */
	g_autofree char *rk = g_strdup_printf("%s/recheck", rec->id);
	g_autoptr(json_t) rd = pgate_state_get(txn, rk, NULL);
	json_int_t round = json_integer_value(json_object_get(rd, "rounds"));

	if (round > 0)
		return g_strdup_printf("mail/%s/v%u/%s/r%d", rec->id,
				       rec->version,
				       pgate_series_state_name(state),
				       (int)round);
	return g_strdup_printf("mail/%s/v%u/%s", rec->id, rec->version,
			       pgate_series_state_name(state));
}

gboolean
pgate_reply_queue(PgateStoreTxn *txn, const PgateReplyConfig *c,
		  const PgateSeriesRec *rec, PgateSeriesState state,
		  const PgateReplyInput *in, GError **error)
{
	g_autoptr(PgateEmailReport) r = NULL;
	g_autoptr(GPtrArray) rcpts = NULL;
	g_autoptr(GBytes) msg = NULL;
	g_autofree char *key = NULL;
	PgateEmailDecision decision;
	const char *why = NULL;
	gboolean dpdk;

	if (c->email == NULL || !pgate_email_config_enabled(c->email))
		return TRUE;
	dpdk = pgate_email_config_format(c->email) == PGATE_EMAIL_FORMAT_DPDK;
	/* never answer mail that is itself automated */
	if (in->answered_raw != NULL &&
	    pgate_email_is_automated(c->email, in->answered_raw, &why)) {
		if (c->log)
			c->log(c->log_data, rec->id, "mail-skipped", why);
		return TRUE;
	}
	r = pgate_reply_report(txn, rec, in->answered, error);
	if (r == NULL)
		return FALSE;
	r->patchwork_id = in->patchwork_id;
	r->patch_url = g_strdup(in->patch_url);
	r->compared = g_strdup(in->compared);
	{
		/* jobs without a page of their own: the site's log page */
		g_autoptr(PgateSeriesDocs) st =
			pgate_series_docs_read(txn, rec->id, NULL);

		for (guint i = 0; st && i < st->ci->len && i < r->jobs->len; i++) {
			PgateEmailJob *j = r->jobs->pdata[i];

			if (j->url == NULL)
				j->url = pgate_report_site_job_url(
					c->public_url, ((PgateCiDoc *)
						st->ci->pdata[i])->key);
		}
	}
	key = pgate_reply_key(txn, rec, state);
	r->idempotency_key = g_strdup(key);

	rcpts = pgate_email_report_recipients(c->email, r, &decision);
	if (rcpts == NULL || rcpts->len == 0) {
		if (c->log)
			c->log(c->log_data, rec->id, "mail-skipped",
			       pgate_email_decision_to_string(decision));
		return TRUE;
	}
	/* dpdk: every result goes to the test-report list, which counts
	 * them all (the limit is for mail to people) */
	/* the project's policy: at once, or in the day's digest */
	if (!dpdk) {
		gboolean send = TRUE;

		if (!policy_decide(txn, c, rec, r, key, rcpts, &send, error))
			return FALSE;
		if (!send)
			return TRUE;
		if (!rate_allows(txn, c, rec, rcpts->pdata[0], error))
			return error == NULL || *error == NULL;
	}
	msg = pgate_email_compose(c->email, r, error);
	if (msg == NULL)
		return FALSE;
	return pgate_outbox_queue_mail(txn, key, rec->id, msg, NULL, rcpts, error);
}

void
pgate_reply_config_clear(PgateReplyConfig *c)
{
	g_free(c->label);
	g_free(c->digest_series);
	g_free(c->patchwork_url);
	g_free(c->patchwork_project);
	g_free(c->public_url);
	memset(c, 0, sizeof *c);
}
