/* steps.c - one series' step: the rules a series is put through, in
 * order (run_series()), and the apply and testing steps. */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

/* %FALSE (with why) when an attempt of @docs went wrong for reasons of
 * ours: a target that could not be tried (status error: a branch the
 * repository lacks) while none applied, or a good result that could not
 * be published (its ref, or the push CI fetches from). */
static gboolean
infrastructure_ok(GPtrArray *docs, GError **error)
{
	const PgateApplyDoc *err = NULL;
	gboolean any_ok = FALSE;

	for (guint i = 0; i < docs->len; i++) {
		const PgateApplyDoc *d = docs->pdata[i];

		if (pgate_apply_doc_testable(d) &&
		    d->publish_error != NULL) {
			g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_IO,
				    "%s: applied, but not published: %s "
				    "(retried by the next pass)", d->target,
				    d->publish_error);
			return FALSE;
		}
		any_ok |= pgate_apply_doc_testable(d);
		if ((d->has & PGATE_APPLY_DOC_STATUS) &&
		    d->status == PGATE_APPLY_NOT_MADE && err == NULL)
			err = d;
	}
	if (err != NULL && !any_ok) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] %s: %s", err->target,
			    err->failure && err->failure->reason
			    ? err->failure->reason : "could not be tried");
		return FALSE;
	}
	return TRUE;
}

gboolean
pgate_pipeline__step_apply_on(Move *m, const char *only_branch, GError **error)
{
	PgatePipeline *p = m->p;
	g_autoptr(GPtrArray) docs = NULL;
	g_autoptr(GPtrArray) ok = g_ptr_array_new();
	g_autoptr(GString) failures = g_string_new(NULL);
	g_autoptr(PgateRoute) route = NULL;

	/* the trust gate said yes (pgate_pipeline__gate()) */
	g_return_val_if_fail(m->plan != NULL, FALSE);
	if (!p->apply.enabled) {
		pgate_pipeline__move_to(m, PGATE_SERIES_SKIPPED,
			"no [apply] repository configured");
		return TRUE;
	}
	if (p->cfg.max_patches > 0 &&
	    m->plan->items->len > p->cfg.max_patches) {
		g_autofree char *why = g_strdup_printf(
			"%u patches with its prerequisites: over [pipeline] "
			"max_patches (%u)", m->plan->items->len,
			p->cfg.max_patches);

		pgate_pipeline__move_to(m, PGATE_SERIES_SKIPPED, why);
		pgate_pipeline__want_apply_check(m, "warning", why);
		return TRUE;
	}
	/* routing (docs/pipeline.md): which branches; a rebase asked for
	 * names its own */
	if (only_branch == NULL) {
		g_autoptr(GError) local = NULL;

		route = pgate_pipeline__route_of(p, m->rec, &local);
		if (route == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (route != NULL && route->skip != NULL) {
			/* not the series' failure: a tree or paths this
			 * project does not have */
			pgate_pipeline__move_to(m, PGATE_SERIES_SKIPPED, route->skip);
			return TRUE;
		}
	}
	docs = pgate_pipeline_apply_routed(p->store, &p->apply, m->rec->id,
					   only_branch, route, m->plan, error);
	if (docs == NULL)
		return FALSE;
	/* ours, not the patch's (issue #41): a target that could not be
	 * tried, or a result that could not be published where CI fetches
	 * it, is retried by the next pass and never reported as the
	 * series' failure */
	if (!infrastructure_ok(docs, error))
		return FALSE;
	for (guint i = 0; i < docs->len; i++) {
		PgateApplyDoc *doc = docs->pdata[i];
		const PgateApplyFailure *f = doc->failure;

		if (pgate_apply_doc_testable(doc)) {
			g_ptr_array_add(ok, doc);
			continue;
		}
		if (failures->len)
			g_string_append(failures, "; ");
		g_string_append_printf(failures, "%s: %s", doc->target,
				       (doc->has & PGATE_APPLY_DOC_STATUS)
				       ? pgate_apply_status_name(doc->status)
				       : "?");
		if (f != NULL) {
			g_string_append_printf(failures, " at patch %d",
					       (int)f->patch);
			if (f->file)
				g_string_append_printf(failures, " (%s)", f->file);
			if (f->reason)
				g_string_append_printf(failures, ": %s", f->reason);
		}
	}
	g_clear_pointer(&m->doc->apply, g_ptr_array_unref);
	m->doc->apply = g_ptr_array_ref(docs);
	if (ok->len == 0) {
		pgate_pipeline__move_to(m, PGATE_SERIES_APPLY_FAILED, failures->str);
		pgate_pipeline__want_apply_check(m, "fail", failures->str);
		m->mail = TRUE;
		return TRUE;
	}
	{
		g_autofree char *d = g_strdup_printf("applied to %s%s",
			((PgateApplyDoc *)ok->pdata[0])->target,
			ok->len > 1 ? " and others" : "");

		pgate_pipeline__want_apply_check(m, "success", d);
	}
	if (!p->ci_cfg.enabled) {
		pgate_pipeline__move_to(m, PGATE_SERIES_DONE, "applied; no CI configured");
		return TRUE;
	}
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return FALSE;
	for (guint i = 0; i < ok->len; i++) {
		const PgateApplyDoc *adoc = ok->pdata[i];
		g_autoptr(PgateCiDoc) cdoc = pgate_pipeline_ci_submit(
			p->store, &p->apply, &p->ci_cfg, p->ci, m->rec,
			adoc->target, adoc, error);
		g_autofree char *ctx = NULL, *d = NULL;

		if (cdoc == NULL)
			return FALSE;
		ctx = pgate_pipeline__context_for(m, p->ci_cfg.job, adoc->target, ok->len);
		d = g_strdup_printf("%s queued on %s", p->ci_cfg.job,
				    adoc->target);
		pgate_pipeline__want_check(m, ctx, "pending", NULL, d);
	}
	pgate_pipeline__move_to(m, PGATE_SERIES_TESTING, NULL);
	return TRUE;
}

static gboolean
step_apply(Move *m, GError **error)
{
	return pgate_pipeline__step_apply_on(m, NULL, error);
}

/* A job run per patch: each patch gets its own commit's verdict (the
 * apply document maps commits to patches).  Returns: (transfer full):
 * {MSGID: {state, description}}. */
static json_t *
per_patch_checks(const PgateCiDoc *doc, const PgateApplyDoc *ad)
{
	json_t *per = json_object();

	for (guint ci = 0; ci < doc->commits->len; ci++) {
		const PgateCiDocCommit *c = doc->commits->pdata[ci];
		const char *v = pgate_verdict_name(c->verdict);
		g_autofree char *w = pgate_pipeline__first_line(c->reason, 150);

		for (guint pi = 0; ad && ad->patches && pi < ad->patches->len; pi++) {
			const PgateApplyDocPatch *pp = ad->patches->pdata[pi];
			g_autofree char *pd = NULL;

			if (g_strcmp0(pp->commit, c->commit) != 0)
				continue;
			pd = g_strdup_printf("%s on %s, patch %u: %s%s%s",
					     doc->job, doc->target, pi + 1, v,
					     *w ? " - " : "", w);
			json_object_set_new(per, pp->msgid, json_pack(
				"{s:s,s:s}", "state", pgate_pipeline__check_state_of(v),
				"description", pd));
		}
	}
	return per;
}

/* ---- infrastructure errors (docs/pipeline.md, "Test") ----
 *
 * A job whose verdict is error failed for a reason of its own (the
 * sandbox, the runner's timeout, Jenkins lost, a full disk), not the
 * patch's: it is submitted again, [ci] retries times at most.  The tries
 * made are kept in SERIES/retry/TARGET/JOB ({"tries": N}). */

/* "SERIES/retry/TARGET/JOB" of "SERIES/ci/TARGET/JOB" (transfer full) */
char *
pgate_pipeline__retry_key(const char *ci_key)
{
	const char *ci = ci_key ? strstr(ci_key, "/ci/") : NULL;

	if (ci == NULL)
		return NULL;
	return g_strdup_printf("%.*s/retry/%s", (int)(ci - ci_key), ci_key,
			       ci + 4);
}

/* How many times job @ci_key was tried (1 before any retry). */
static guint
job_tries(PgateStore *store, const char *ci_key)
{
	g_autofree char *key = pgate_pipeline__retry_key(ci_key);
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(json_t) doc = NULL;
	json_int_t n;

	if (key == NULL || (txn = pgate_store_begin_read(store, NULL)) == NULL)
		return 1;
	doc = pgate_state_get(txn, key, NULL);
	n = json_integer_value(json_object_get(doc, "tries"));
	return n > 1 ? (guint)n : 1;
}

typedef struct {
	const char *key;
	guint tries;
} SetTries;

static gboolean
set_tries(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const SetTries *s = payload;
	g_autoptr(json_t) doc = json_pack("{s:i}", "tries", (int)s->tries);

	return pgate_state_put(txn, s->key, doc, error);
}

static gboolean
job_is_error(const PgateCiDoc *doc)
{
	return doc->state == PGATE_JOB_DONE && !doc->cancelled &&
	       (doc->has & PGATE_CI_DOC_VERDICT) &&
	       doc->verdict == PGATE_VERDICT_ERROR;
}

/* Submits again the jobs of @all whose verdict is error and that have
 * tries left, each with a check "infrastructure error, retrying".
 * *@out_retried: how many. */
static gboolean
retry_errors(Move *m, const PgateSeriesDocs *all, guint *out_retried,
	     GError **error)
{
	PgatePipeline *p = m->p;

	*out_retried = 0;
	for (guint i = 0; i < all->ci->len; i++) {
		const PgateCiDoc *doc = all->ci->pdata[i];
		const PgateApplyDoc *adoc;
		g_autoptr(PgateCiDoc) again = NULL;
		g_autofree char *rkey = NULL, *ctx = NULL, *d = NULL;
		g_autofree char *why = NULL;
		guint tries;
		SetTries st;

		if (!job_is_error(doc))
			continue;
		tries = job_tries(p->store, doc->key);
		adoc = pgate_series_docs_apply(all, doc->target);
		rkey = pgate_pipeline__retry_key(doc->key);
		if (tries > p->ci_cfg.retries || adoc == NULL || rkey == NULL)
			continue;
		why = pgate_pipeline__first_line(doc->reason, 120);
		st.key = rkey;
		st.tries = tries + 1;
		/* the count first: a crash after the submission retries
		 * once less, never once more */
		if (!pgate_store_write(p->store, set_tries, &st, error))
			return FALSE;
		again = pgate_pipeline_ci_submit(p->store, &p->apply, &p->ci_cfg,
						 p->ci, m->rec, doc->target,
						 adoc, error);
		if (again == NULL)
			return FALSE;
		ctx = pgate_pipeline__context_for(m, doc->job, doc->target, all->ci->len);
		d = g_strdup_printf("%s on %s: infrastructure error, retrying "
				    "(try %u of %u)%s%s", doc->job, doc->target,
				    tries + 1, p->ci_cfg.retries + 1,
				    *why ? " - " : "", why);
		pgate_pipeline__want_check(m, ctx, "warning", doc->url, d);
		if (p->log)
			p->log(p->log_data, m->rec->id, "retry", d);
		(*out_retried)++;
	}
	return TRUE;
}

/* Queues the final check of job @doc, one of @ntargets (@all: the
 * series' documents).  Returns: (transfer full): its description. */
char *
pgate_pipeline__want_job_check(Move *m, const PgateCiDoc *doc, guint ntargets,
	       const PgateSeriesDocs *all)
{
	const char *verdict = (doc->has & PGATE_CI_DOC_VERDICT)
		? pgate_verdict_name(doc->verdict) : NULL;
	g_autofree char *ctx = NULL, *why = NULL;
	char *d;

	ctx = pgate_pipeline__context_for(m, doc->job, doc->target, ntargets);
	why = pgate_pipeline__first_line(doc->reason, 150);
	if (job_is_error(doc))
		/* never the patch's fault: said so, posted as warning */
		d = g_strdup_printf("%s on %s: infrastructure error, gave up "
				    "after %u %s%s%s", doc->job, doc->target,
				    job_tries(m->p->store, doc->key),
				    job_tries(m->p->store, doc->key) == 1
				    ? "try" : "tries", *why ? " - " : "", why);
	else
		d = g_strdup_printf("%s on %s: %s%s%s", doc->job, doc->target,
				    verdict ? verdict : "?", *why ? " - " : "",
				    why);
	{
		/* a backend without a page of its own (local): the job's log
		 * page on the site, [report] public_url */
		g_autofree char *site_url = doc->url ? NULL
			: pgate_report_site_job_url(m->p->reply.public_url,
						    doc->key);

		/* the results against the version before, when it had
		 * some (docs/report-site.md) */
		g_autoptr(PgateStoreTxn) txn = m->rec->supersedes
			? pgate_store_begin_read(m->p->store, NULL) : NULL;
		g_autofree char *cmp = txn ? pgate_pipeline_site_compare_text(
			txn, m->p->state_dir, m->rec) : NULL;

		g_autofree char *desc = cmp ? g_strdup_printf("%s; %s", d, cmp)
					    : NULL;

		pgate_pipeline__want_check(m, ctx, pgate_pipeline__check_state_of(verdict),
			   doc->url ? doc->url : site_url, desc ? desc : d);
	}
	if (doc->commits != NULL && doc->commits->len > 0) {
		json_t **last = (json_t **)&g_ptr_array_index(
			m->per_patch, m->per_patch->len - 1);

		json_decref(*last);
		*last = per_patch_checks(doc, pgate_series_docs_apply(
						      all, doc->target));
	}
	return d;
}

/*
 * A series superseded while its checks are pending: their last word.
 * Patchwork keeps the newest check of a context, and a pending one left
 * there says "being tested" for ever.  So every job of a series in
 * testing gets a final check, and so does the apply check of a series
 * awaiting approval: `warning` (not `success`: nothing was shown to
 * work; not `fail`: nothing was shown broken), "superseded by v3 before
 * the build finished".  A job that did finish (one target of several)
 * reports its verdict.  @all: the documents after the cancellation.
 */
static void
want_superseded_checks(Move *m, PgateStoreTxn *txn, PgateSeriesState state,
		       const PgateSeriesDocs *all)
{
	g_autoptr(PgateSeriesRec) newer = pgate_store_series_get(
		txn, m->rec->superseded_by, NULL);
	g_autofree char *by = newer != NULL
		? g_strdup_printf("superseded by v%u", newer->version)
		: g_strdup("superseded by a newer version");

	if (state == PGATE_SERIES_AWAITING_APPROVAL) {
		g_autofree char *d = g_strdup_printf(
			"%s before a maintainer approved it", by);

		pgate_pipeline__want_apply_check(m, "warning", d);
		return;
	}
	if (state != PGATE_SERIES_TESTING)
		return;
	for (guint i = 0; i < all->ci->len; i++) {
		const PgateCiDoc *doc = all->ci->pdata[i];
		g_autofree char *ctx = NULL, *d = NULL;

		if (doc->state == PGATE_JOB_DONE && !doc->cancelled) {
			g_free(pgate_pipeline__want_job_check(m, doc, all->ci->len, all));
			continue;
		}
		ctx = pgate_pipeline__context_for(m, doc->job, doc->target, all->ci->len);
		d = all->ci->len > 1
			? g_strdup_printf("%s before the %s on %s finished", by,
					  doc->job, doc->target)
			: g_strdup_printf("%s before the %s finished", by, doc->job);
		pgate_pipeline__want_check(m, ctx, "warning", NULL, d);
	}
}

static gboolean
step_testing(Move *m, GError **error)
{
	PgatePipeline *p = m->p;
	g_autoptr(PgateSeriesDocs) all = pgate_pipeline__series_state(p->store,
							       m->rec->id,
							       error);
	guint pending = 0, ntargets;
	gboolean no_mail = FALSE;
	g_autoptr(GString) summary = g_string_new(NULL);

	if (all == NULL)
		return FALSE;
	if (p->ci == NULL && !pgate_pipeline_ci_backend(p, error))
		return FALSE;
	ntargets = all->ci->len;
	for (guint i = 0; i < all->ci->len; i++) {
		PgateCiDoc *doc = all->ci->pdata[i];
		g_autoptr(GError) local = NULL;

		if (doc->state == PGATE_JOB_DONE)
			continue;
		if (doc->state == PGATE_JOB_SUBMITTING ||
		    doc->state == PGATE_JOB_LOST) {
			/* crashed before the handle was stored, or the
			 * backend forgot the job: submit again */
			const PgateApplyDoc *adoc =
				pgate_series_docs_apply(all, doc->target);
			g_autoptr(PgateCiDoc) cdoc = adoc
				? pgate_pipeline_ci_submit(p->store, &p->apply,
							   &p->ci_cfg, p->ci,
							   m->rec, doc->target,
							   adoc, &local)
				: NULL;

			if (cdoc == NULL && local != NULL) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			pending++;
			continue;
		}
		if (p->polled != NULL && g_hash_table_contains(p->polled,
							       doc->key)) {
			/* polled with all the others at the start of the pass */
		} else if (!pgate_pipeline_ci_poll(p->store, p->ci, doc, &local)) {
			if (!pgate_error_is_transient(local)) {
				g_propagate_error(error, g_steal_pointer(&local));
				return FALSE;
			}
			if (p->log)
				p->log(p->log_data, m->rec->id, "poll-retry",
				       local->message);
		}
		if (doc->state != PGATE_JOB_DONE)
			pending++;
	}
	if (pending > 0)
		return TRUE;
	{
		guint retried = 0, errors = 0;

		if (!retry_errors(m, all, &retried, error))
			return FALSE;
		if (retried > 0)
			return TRUE;	/* still testing */
		for (guint i = 0; i < all->ci->len; i++)
			errors += job_is_error(all->ci->pdata[i]);
		/* no mail when nothing is known of the patch: every job
		 * failed for the infrastructure's reasons */
		no_mail = errors > 0 && errors == all->ci->len;
	}
	for (guint i = 0; i < all->ci->len; i++) {
		g_autofree char *d = pgate_pipeline__want_job_check(m, all->ci->pdata[i],
						    ntargets, all);

		if (summary->len)
			g_string_append(summary, "; ");
		g_string_append(summary, d);
	}
	pgate_pipeline__move_to(m, PGATE_SERIES_DONE, summary->str);
	m->mail = !no_mail;
	return TRUE;
}

/* ---- the rules ----
 *
 * A series is put through these rules in order; each looks at the series
 * and its document, and says what became of it:
 *
 *   NEXT   nothing for this rule: the next one decides
 *   STAY   the series stays as it is (nothing to store)
 *   SAVE   it moved (or its document changed): the move is stored with
 *          the checks and mail it calls for, in one transaction
 *   FAIL   an error (set): nothing is stored, the next pass tries again
 *
 * The order is the policy: what happened upstream and newer versions
 * come first, whatever the state; rechecks before the final states stay;
 * then the way of a new series, one question at a time.
 */

typedef enum { NEXT, STAY, SAVE, FAIL } Said;

typedef Said (*Rule)(Move *m, GError **error);

static Said
said_of(int moved)
{
	return moved < 0 ? FAIL : moved > 0 ? SAVE : NEXT;
}

/* merged upstream, or a newer version merged (merged.c) */
static Said
rule_upstream(Move *m, GError **error)
{
	Said r;

	if (!m->p->upstream.enabled || m->rec->kind != PGATE_SERIES_KIND_PATCHES)
		return NEXT;
	r = said_of(pgate_pipeline__step_upstream(m, m->was, error));
	if (r == NEXT && (m->was == PGATE_SERIES_MERGED ||
			  m->was == PGATE_SERIES_SUPERSEDED_BY_MERGE))
		return STAY;
	return r;
}

/* a newer version: its jobs cancelled, its pending checks final */
static Said
rule_superseded(Move *m, GError **error)
{
	PgatePipeline *p = m->p;
	g_autoptr(PgateSeriesDocs) all = NULL;
	g_autofree char *why = NULL;

	if (m->rec->superseded_by == NULL || m->was == PGATE_SERIES_SUPERSEDED ||
	    pgate_series_state_is_final(m->was))
		return NEXT;
	all = pgate_pipeline__series_state(p->store, m->rec->id, error);
	if (all == NULL ||
	    !pgate_pipeline__cancel_jobs(p, m->rec->id, all, "cancelled: "
					 "superseded by a newer version", error))
		return FAIL;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL)
			return FAIL;
		want_superseded_checks(m, txn, m->was, all);
	}
	why = g_strdup_printf("superseded by %s", m->rec->superseded_by);
	pgate_pipeline__move_to(m, PGATE_SERIES_SUPERSEDED, why);
	return SAVE;
}

/* asked to test again (recheck.c) */
static Said
rule_recheck(Move *m, GError **error)
{
	return said_of(pgate_pipeline__step_recheck(m, m->was, error));
}

/* final states stay (the missing patches of an incomplete one came
 * after all, or what looked incomplete is a partial re-roll whose link
 * was made after it was judged: judged again, as new) */
static Said
rule_final(Move *m, GError **error)
{
	if (m->was == PGATE_SERIES_INCOMPLETE &&
	    (m->rec->flags & (PGATE_SERIES_FLAG_COMPLETE |
			      PGATE_SERIES_FLAG_PARTIAL_REROLL))) {
		m->was = PGATE_SERIES_NEW;
		return NEXT;
	}
	if (!pgate_series_state_is_final(m->was))
		return NEXT;
	return pgate_pw_state_on_final(m->p, m->rec, m->was, error) ? STAY
								   : FAIL;
}

static Said
rule_pull(Move *m, GError **error)
{
	(void)error;
	if (m->rec->kind != PGATE_SERIES_KIND_PULL)
		return NEXT;
	pgate_pipeline__move_to(m, PGATE_SERIES_SKIPPED,
				"pull requests are not applied");
	return SAVE;
}

/* its jobs polled */
static Said
rule_testing(Move *m, GError **error)
{
	if (m->was != PGATE_SERIES_TESTING)
		return NEXT;
	return step_testing(m, error) ? SAVE : FAIL;
}

/* bounded work (issue #41): a series too large to apply and test is told
 * so once, before anything reads its patches */
static Said
rule_too_large(Move *m, GError **error)
{
	guint n = pgate_pipeline__series_size(m->rec);
	guint max = m->p->cfg.max_patches;
	g_autofree char *why = NULL;

	(void)error;
	if (max == 0 || n <= max)
		return NEXT;
	why = g_strdup_printf("%u patches: over [pipeline] max_patches (%u)",
			      n, max);
	pgate_pipeline__move_to(m, PGATE_SERIES_SKIPPED, why);
	pgate_pipeline__want_apply_check(m, "warning", why);
	return SAVE;
}

/* not complete: waited for, then reported incomplete */
static Said
rule_incomplete(Move *m, GError **error)
{
	const PgateSeriesRec *rec = m->rec;
	g_autofree char *why = NULL;

	(void)error;
	if (rec->flags & (PGATE_SERIES_FLAG_COMPLETE |
			  PGATE_SERIES_FLAG_PARTIAL_REROLL))
		return NEXT;
	why = g_strdup_printf("%u of %u patches", rec->patches->len, rec->total);
	if (pgate_pipeline__now_s() - rec->date >= m->p->cfg.wait_complete) {
		pgate_pipeline__move_to(m, PGATE_SERIES_INCOMPLETE, why);
		pgate_pipeline__want_apply_check(
			m, "warning", "not tested: the series is incomplete");
		return SAVE;
	}
	if (m->was == PGATE_SERIES_WAITING)
		return STAY;
	pgate_pipeline__move_to(m, PGATE_SERIES_WAITING, why);
	return SAVE;
}

static Said
rule_rejected(Move *m, GError **error)
{
	(void)error;
	if (!m->doc->rejected)
		return NEXT;
	pgate_pipeline__move_to(m, PGATE_SERIES_REJECTED, m->doc->rejected_by);
	return SAVE;
}

/* trust (trust.c): what would run is trusted or approved; else a
 * maintainer's answer by mail, when it is newer than the approval the
 * series has (a reply older than it, or the reply that gave it, decides
 * nothing new); else it waits */
static Said
rule_trust(Move *m, GError **error)
{
	PgateSeriesDoc *doc = m->doc;
	gboolean fixed = doc->approved && doc->approved_msgs == NULL;
	g_autofree char *untrusted = NULL, *who = NULL;
	g_autoptr(GError) local = NULL;
	guint64 num = 0;
	int g = pgate_pipeline__gate(m, &untrusted, error);
	int said;

	if (g != 0)
		return g < 0 ? FAIL : NEXT;
	said = pgate_pipeline__reply_decision(m->p, m->rec, &who, &num, &local);
	if (said != 0 && doc->approved &&
	    (doc->has & PGATE_SERIES_DOC_APPROVED_UPTO) &&
	    num <= (guint64)doc->approved_upto)
		said = 0;
	if (said > 0) {
		/* it saw what had arrived before it */
		pgate_series_doc_approve(doc, who, (gint64)num);
		g_clear_pointer(&untrusted, g_free);
		g = pgate_pipeline__gate(m, &untrusted, error);
		if (g != 0)
			return g < 0 ? FAIL : NEXT;
	} else if (said < 0) {
		doc->rejected = TRUE;
		g_free(doc->rejected_by);
		doc->rejected_by = g_strdup(who);
		doc->has |= PGATE_SERIES_DOC_REJECTED_BY;
		pgate_pipeline__move_to(m, PGATE_SERIES_REJECTED, who);
		return SAVE;
	}
	fixed &= doc->approved_msgs != NULL;
	if (!pgate_pipeline__await_approval(m, m->was, untrusted) && !fixed)
		return STAY;
	return SAVE;
}

/* applied (what the trust rule judged, m->plan), its jobs submitted */
static Said
rule_apply(Move *m, GError **error)
{
	return step_apply(m, error) ? SAVE : FAIL;
}

static const struct {
	const char *name;
	Rule rule;
} rules[] = {
	{ "upstream", rule_upstream },
	{ "superseded", rule_superseded },
	{ "recheck", rule_recheck },
	{ "final", rule_final },
	{ "pull", rule_pull },
	{ "testing", rule_testing },
	{ "too-large", rule_too_large },
	{ "incomplete", rule_incomplete },
	{ "rejected", rule_rejected },
	{ "trust", rule_trust },
	{ "apply", rule_apply },
};

const char *
pgate_pipeline__rule_name(guint i)
{
	return i < G_N_ELEMENTS(rules) ? rules[i].name : NULL;
}

gboolean
pgate_pipeline__run_series(PgatePipeline *p, PgateSeriesRec *rec,
			   guint *testing, GError **error)
{
	g_autoptr(GPtrArray) checks = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) per_patch = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	g_autoptr(PgateSeriesDoc) doc = NULL;
	g_auto(Move) m = { p, rec, NULL, checks, per_patch, FALSE, NULL, NULL,
			   NULL, NULL, PGATE_SERIES_NEW };
	Said said = STAY;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return FALSE;
		doc = pgate_series_doc_get(txn, rec->id, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	if (doc == NULL) {
		doc = pgate_series_doc_new(PGATE_SERIES_NEW);
		doc->since = pgate_pipeline__now_s();
		doc->has |= PGATE_SERIES_DOC_SINCE;
	}
	m.doc = doc;
	m.was = doc->state;
	for (gsize i = 0; i < G_N_ELEMENTS(rules); i++) {
		said = rules[i].rule(&m, error);
		if (said != NEXT)
			break;
	}
	if (said == FAIL ||
	    (said == SAVE && !pgate_pipeline__save_move(&m, error)))
		return FALSE;
	if (doc->state == PGATE_SERIES_TESTING)
		(*testing)++;
	return TRUE;
}
