/* recheck.c - recheck requests, by command and by mail, and the step
 * that runs them (docs/pipeline.md, "Recheck"). */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

/* ---- recheck requests (docs/pipeline.md, "Recheck") ----
 *
 * SERIES/recheck: {"pending": {"by", "jobs": [...], "rebase", "at",
 * "source"}, "rounds": N, "accepted": [at, ...], "seen": [num, ...],
 * "history": [...]}: a request waits in "pending" until the series is
 * done (or failed to apply), then runs. */

#define RECHECK_KEEP 32

static char *
recheck_key(const char *sid)
{
	return g_strdup_printf("%s/recheck", sid);
}

/* Appends @v to the array @field of @doc, keeping the newest @keep. */
static void
doc_append(json_t *doc, const char *field, json_t *v, gsize keep)
{
	json_t *a = json_object_get(doc, field);

	if (!json_is_array(a)) {
		a = json_array();
		json_object_set_new(doc, field, a);
	}
	json_array_append_new(a, v);
	while (json_array_size(a) > keep)
		json_array_remove(a, 0);
}

/* The requests accepted in the last day. */
static guint
recheck_recent(json_t *doc, gint64 now)
{
	json_t *v;
	gsize i;
	guint n = 0;

	json_array_foreach(json_object_get(doc, "accepted"), i, v)
		n += now - json_integer_value(v) < 24 * 3600;
	return n;
}

typedef struct {
	const char *sid;
	json_t *request;        /* {"by", "jobs", "rebase", "source"} */
	guint limit;            /* 0: none (the command line) */
	guint64 seen;           /* the reply's number; 0: none */
	guint64 scanned;        /* replies up to this number were read */
	gboolean accepted;      /* out */
} RecheckAdd;

static gboolean
recheck_add(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	RecheckAdd *r = payload;
	g_autofree char *key = recheck_key(r->sid);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, error);
	gint64 now = pgate_pipeline__now_s();

	if (doc == NULL && error != NULL && *error != NULL)
		return FALSE;
	if (doc == NULL)
		doc = json_object();
	r->accepted = r->request != NULL &&
		      (r->limit == 0 || recheck_recent(doc, now) < r->limit);
	if (r->seen != 0)
		doc_append(doc, "seen", json_integer((json_int_t)r->seen),
			   RECHECK_KEEP * 4);
	if ((json_int_t)r->scanned >
	    json_integer_value(json_object_get(doc, "scanned")))
		json_object_set_new(doc, "scanned",
				    json_integer((json_int_t)r->scanned));
	if (r->accepted) {
		json_object_set_new(r->request, "at", json_integer(now));
		json_object_set(doc, "pending", r->request);
		doc_append(doc, "accepted", json_integer(now), RECHECK_KEEP);
		/* a finished series is visited again for it (the series,
		 * not a project's state ID: SID@NAME) */
		const char *project = NULL;
		g_autofree char *own = pgate_project_split_state_id(r->sid,
								    &project);

		if (!pgate_store_active_mark(txn, own, error))
			return FALSE;
	}
	return pgate_state_put(txn, key, doc, error);
}

gboolean
pgate_pipeline_recheck_request(PgatePipeline *p, const char *sid,
			       const char *job, const char *rebase,
			       const char *by, GError **error)
{
	g_autoptr(json_t) req = json_pack("{s:s,s:[],s:o,s:s}", "by", by,
					  "jobs", "rebase",
					  pgate_json_str_or_null(rebase),
					  "source", "command line");
	RecheckAdd r = { sid, req, 0, 0, 0, FALSE };

	if (job == NULL)
		job = p->ci_cfg.job;	/* the configured one */
	if (job != NULL)
		json_array_append_new(json_object_get(req, "jobs"),
				      json_string(job));
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(PgateSeriesRec) rec = NULL;

		if (txn == NULL)
			return FALSE;
		rec = pgate_store_series_get(txn, sid, error);
		if (rec == NULL)
			return FALSE;
	}
	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	if (p->subs != NULL) {
		/* with projects: asked of every project that judged it */
		guint n = 0;

		for (guint i = 0; i < p->subs->len; i++) {
			PgatePipeline *sub = p->subs->pdata[i];
			g_autofree char *state_id = pgate_project_state_id(
				sub->project, sid);
			g_autoptr(PgateSeriesDoc) doc = NULL;
			RecheckAdd rs = { state_id, req, 0, 0, 0, FALSE };

			{
				g_autoptr(PgateStoreTxn) txn =
					pgate_store_begin_read(p->store, error);
				g_autoptr(GError) local = NULL;

				if (txn == NULL)
					return FALSE;
				doc = pgate_series_doc_get(txn, state_id,
							     &local);
				if (local != NULL) {
					g_propagate_error(error,
						g_steal_pointer(&local));
					return FALSE;
				}
			}
			if (doc == NULL)
				continue;
			if (!pgate_store_write(p->store, recheck_add, &rs,
					       error))
				return FALSE;
			n++;
		}
		if (n == 0) {
			g_set_error(error, PGATE_PIPELINE_ERROR,
				    PGATE_ERROR_NOT_FOUND,
				    "no project has judged series %s yet", sid);
			return FALSE;
		}
		return TRUE;
	}
	return pgate_store_write(p->store, recheck_add, &r, error);
}

/* A "Recheck-request: [rebase=BRANCH,] CONTEXT[, CONTEXT...]" line of
 * @own (DPDK's syntax): the request, or %NULL. */
static json_t *
recheck_line(const char *own)
{
	g_auto(GStrv) lines = g_strsplit(own, "\n", -1);

	for (guint k = 0; lines[k]; k++) {
		const char *l = lines[k];
		g_auto(GStrv) items = NULL;
		json_t *req;

		while (*l == ' ' || *l == '\t')
			l++;
		if (g_ascii_strncasecmp(l, "Recheck-request:", 16) != 0)
			continue;
		items = g_strsplit(l + 16, ",", 64);
		req = json_pack("{s:[],s:n}", "jobs", "rebase");
		for (guint i = 0; items[i]; i++) {
			char *it = g_strstrip(items[i]);

			if (*it == '\0')
				continue;
			for (const char *c = it; *c; c++)
				if (!g_ascii_isalnum(*c) && !strchr("._-/=", *c))
					goto bad;
			if (i == 0 && g_str_has_prefix(it, "rebase="))
				json_object_set_new(req, "rebase",
						    json_string(it + 7));
			else if (strchr(it, '=') == NULL)
				json_array_append_new(json_object_get(req, "jobs"),
						      json_string(it));
			else
				goto bad;
		}
		if (json_array_size(json_object_get(req, "jobs")) > 0)
			return req;
bad:
		json_decref(req);
	}
	return NULL;
}

/* Whether a request names this pipeline's job (its name, its context
 * with or without the prefix and target) or the apply step. */
static gboolean
recheck_names_job(Move *m, json_t *req)
{
	json_t *v;
	gsize i;

	json_array_foreach(json_object_get(req, "jobs"), i, v) {
		const char *j = json_string_value(v);
		g_autofree char *ctx = pgate_pipeline__context_for(m, m->p->ci_cfg.job, NULL, 1);
		g_autofree char *actx = pgate_pipeline__context_for(m, "apply", NULL, 1);

		if (j != NULL && (strcmp(j, m->p->ci_cfg.job) == 0 ||
				  strcmp(j, ctx) == 0 || strcmp(j, "apply") == 0 ||
				  strcmp(j, actx) == 0 ||
				  g_str_has_prefix(j, ctx)))
			return TRUE;
	}
	return FALSE;
}

/* Reads reply @num to @parent for a Recheck-request: line: a request from
 * the submitter or an approver is appended to @found (and @num to
 * @nums_found); one from anyone else is logged and appended as NULL (read
 * once). */
static void
recheck_read_reply(PgatePipeline *p, PgateStoreTxn *txn,
		   const PgateSeriesRec *rec, gint64 num, const char *parent,
		   const char *submitter, GPtrArray *found, GArray *nums_found)
{
	g_autoptr(PgateMessageRec) m = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *own = NULL, *addr = NULL;
	json_t *req;

	own = pgate_pipeline__reply_own_text(p, txn, (guint64)num, parent,
					     NULL, &m, &raw);
	if (own == NULL)
		return;
	req = recheck_line(own);
	if (req == NULL)
		return;
	addr = pgate_pipeline__sender(p, raw, &local);
	if (addr == NULL ||
	    (g_ascii_strcasecmp(addr, submitter) != 0 &&
	     !pgate_pipeline__glob_match(p->cfg.approvers, addr))) {
		if (p->log) {
			g_autofree char *why = g_strdup_printf(
				"reply %s: %s", m->msgid, addr == NULL
				? local->message
				: "its From is neither the submitter "
				  "nor an approver");

			p->log(p->log_data, rec->id, "recheck-ignored", why);
		}
		json_decref(req);
		{
			guint64 u = (guint64)num;

			/* read once */
			g_array_append_val(nums_found, u);
			g_ptr_array_add(found, NULL);
		}
		return;
	}
	json_object_set_new(req, "by", json_string(addr));
	json_object_set_new(req, "source", json_sprintf("reply %s", m->msgid));
	{
		guint64 u = (guint64)num;

		g_array_append_val(nums_found, u);
		g_ptr_array_add(found, req);
	}
}

/*
 * Recheck requests by mail: a reply to the cover or a patch whose own
 * text (as for approvals: no quoted text) has a Recheck-request: line,
 * from the submitter or an approver by the strict reading of From.  Each
 * reply is read once (its number kept in "seen"); one over the rate
 * limit is logged and dropped.
 */
static gboolean
recheck_from_mail(PgatePipeline *p, const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store, error);
	g_autoptr(GPtrArray) ids = NULL;
	g_autofree char *submitter = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(
		g_int64_hash, g_int64_equal, g_free, NULL);
	g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	g_autoptr(GArray) nums_found = g_array_new(FALSE, FALSE,
						   sizeof(guint64));
	/* every reply is read once: those up to "scanned" were, and each
	 * pass reads only the newer ones (a done series' review thread is
	 * not parsed again at every pass) */
	guint64 scanned = 0, newest = 0;

	if (txn == NULL)
		return FALSE;
	if (p->cfg.recheck_limit == 0)
		return TRUE;	/* none by mail */
	{
		g_autofree char *key = recheck_key(rec->id);
		g_autoptr(json_t) doc = pgate_state_get(txn, key, NULL);
		json_t *v;
		gsize i;

		json_array_foreach(json_object_get(doc, "seen"), i, v) {
			gint64 *n = g_new(gint64, 1);

			*n = json_integer_value(v);
			g_hash_table_add(seen, n);
		}
		scanned = (guint64)json_integer_value(json_object_get(
			doc, "scanned"));
	}
	ids = pgate_pipeline__reply_parents(p, txn, rec, error);
	if (ids == NULL)
		return FALSE;
	/* the submitter as trust reads the first message (a relay's user:
	 * their replies come from their own address) */
	submitter = pgate_pipeline__submitter(p, txn, rec);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(GArray) nums = pgate_store_refs_lookup(txn, ids->pdata[i],
								 NULL);

		for (guint j = 0; nums && j < nums->len; j++) {
			gint64 num = (gint64)g_array_index(nums, guint64, j);

			if ((guint64)num <= scanned ||
			    g_hash_table_contains(seen, &num))
				continue;
			newest = MAX(newest, (guint64)num);
			recheck_read_reply(p, txn, rec, num, ids->pdata[i],
					   submitter, found, nums_found);
		}
	}
	g_clear_pointer(&txn, pgate_store_txn_free);
	if (found->len == 0 && newest > scanned) {
		RecheckAdd r = { rec->id, NULL, 0, 0, newest, FALSE };

		return pgate_store_write(p->store, recheck_add, &r, error);
	}
	for (guint i = 0; i < found->len; i++) {
		json_t *req = found->pdata[i];
		RecheckAdd r = { rec->id, req, p->cfg.recheck_limit,
				 g_array_index(nums_found, guint64, i), newest,
				 FALSE };

		/* req NULL: only marked seen (a request nobody may make) */
		if (!pgate_store_write(p->store, recheck_add, &r, error))
			return FALSE;
		if (req == NULL)
			continue;
		if (p->log)
			p->log(p->log_data, rec->id, r.accepted
			       ? "recheck-requested" : "recheck-refused",
			       r.accepted ? json_string_value(json_object_get(
					req, "source"))
			       : "rate limit: too many rechecks in a day");
	}
	return TRUE;
}

/* A recheck that applies the series again (on @rebase): what it applies
 * is judged again (issue #41), so a patch that joined the series after
 * its approval, or a prerequisite that changed, waits for a new one. */
static int
recheck_apply(Move *m, PgateSeriesState state, const char *rebase,
	      GError **error)
{
	g_autofree char *why = NULL;
	int g = pgate_pipeline__gate(m, &why, error);

	if (g < 0)
		return -1;
	if (g == 0) {
		pgate_pipeline__await_approval(m, state, why);
		return 1;
	}
	return pgate_pipeline__step_apply_on(m, rebase, error) ? 1 : -1;
}

/*
 * A recheck request of a series that is done (or failed to apply) runs
 * now: with rebase=BRANCH (or after a failed apply) the series is
 * applied again (on BRANCH only), else the jobs are submitted again on
 * the targets it was applied to.  The new results replace the old: new
 * checks in the same contexts, a new reply.  Returns 1 when @m moved,
 * 0 when not, -1 on error.
 */
int
pgate_pipeline__step_recheck(Move *m, PgateSeriesState state, GError **error)
{
	PgatePipeline *p = m->p;
	g_autofree char *key = recheck_key(m->rec->id);
	g_autoptr(json_t) doc = NULL;
	g_autoptr(PgateSeriesDocs) all = NULL;
	json_t *req;
	const char *rebase, *by;
	g_autofree char *why = NULL;
	guint submitted = 0;

	if (state != PGATE_SERIES_DONE &&
	    state != PGATE_SERIES_APPLY_FAILED)
		return 0;
	if (!recheck_from_mail(p, m->rec, error))
		return -1;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return -1;
		doc = pgate_state_get(txn, key, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return -1;
		}
	}
	req = json_object_get(doc, "pending");
	if (!json_is_object(req))
		return 0;
	json_incref(req);
	json_object_del(doc, "pending");
	doc_append(doc, "history", req, RECHECK_KEEP);
	m->extra_key = g_strdup(key);
	m->extra = json_incref(doc);
	rebase = json_string_value(json_object_get(req, "rebase"));
	by = json_string_value(json_object_get(req, "by"));
	if (!recheck_names_job(m, req)) {
		if (p->log)
			p->log(p->log_data, m->rec->id, "recheck-ignored",
			       "it names no job of this series");
		return 1;	/* the document is stored, nothing moves */
	}
	json_object_set_new(doc, "rounds", json_integer(
		json_integer_value(json_object_get(doc, "rounds")) + 1));
	why = g_strdup_printf("recheck requested by %s%s%s", by ? by : "?",
			      rebase ? ", rebased on " : "",
			      rebase ? rebase : "");
	all = pgate_pipeline__series_state(p->store, m->rec->id, error);
	if (all == NULL)
		return -1;
	m->reset = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < all->ci->len; i++) {
		g_autofree char *rk = pgate_pipeline__retry_key(
			((PgateCiDoc *)all->ci->pdata[i])->key);

		if (rk != NULL)
			g_ptr_array_add(m->reset, g_steal_pointer(&rk));
	}
	if (p->log)
		p->log(p->log_data, m->rec->id, "recheck", why);
	if (rebase != NULL || state == PGATE_SERIES_APPLY_FAILED ||
	    !p->ci_cfg.enabled)
		return recheck_apply(m, state, rebase, error);
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return -1;
	for (guint i = 0; i < all->apply->len; i++) {
		const PgateApplyDoc *adoc = all->apply->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = NULL;
		g_autofree char *ctx = NULL, *d = NULL;

		if (!pgate_apply_doc_testable(adoc))
			continue;
		cdoc = pgate_pipeline_ci_submit(p->store, &p->apply, &p->ci_cfg,
						p->ci, m->rec, adoc->target,
						adoc, error);
		if (cdoc == NULL)
			return -1;
		ctx = pgate_pipeline__context_for(m, p->ci_cfg.job, adoc->target,
				  all->ci->len > 0 ? all->ci->len : 1);
		d = g_strdup_printf("%s queued again on %s (%s)", p->ci_cfg.job,
				    adoc->target, why);
		pgate_pipeline__want_check(m, ctx, "pending", NULL, d);
		submitted++;
	}
	if (submitted == 0)
		return recheck_apply(m, state, NULL, error);
	pgate_pipeline__move_to(m, PGATE_SERIES_TESTING, why);
	return 1;
}
