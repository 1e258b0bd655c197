/* b4-check.c - b4's external check protocol (docs/ecosystem.md, "b4 review
 * checks").
 *
 * b4 0.15+ (`b4 review`, src/b4/review/checks.py: _run_external_cmd) runs
 * each `b4.review-perpatch-check-cmd` with one patch on stdin, and each
 * `b4.review-series-check-cmd` with the cover letter (or the first patch),
 * from the repository's top directory; it reads stdout as JSON: a list
 * (a lone object is taken as a list of one) of objects with "tool" and
 * "status" ("pass", "warn" or "fail"; anything else is shown as "fail"),
 * and optional "summary", "url" and "details".  Empty stdout and a
 * non-zero exit is an execution error (shown as a failure with stderr as
 * its details); empty stdout and exit 0 is "nothing to report".
 *
 * What is answered here comes from the store only: the series the
 * message belongs to (by its Message-ID), its SERIES/apply/TARGET and
 * SERIES/ci/TARGET/JOB documents, and the links to them.
 */
#include "pipeline/pipeline-private.h"

#include <string.h>


void
pgate_pipeline_check_target_clear(PgateCheckTarget *t)
{
	g_clear_pointer(&t->msgid, g_free);
	g_clear_pointer(&t->series, g_free);
	g_clear_pointer(&t->unknown, g_free);
	t->is_cover = FALSE;
}

/* A string safe for JSON: valid UTF-8, at most @max bytes (cut at a
 * character boundary). */
static char *
clean(const char *s, gsize max)
{
	g_autofree char *v = g_utf8_make_valid(s, -1);
	gsize n = strlen(v);

	if (n > max) {
		const char *end = g_utf8_find_prev_char(v, v + max + 1);

		n = end ? (gsize)(end - v) : 0;
		v[n] = '\0';
	}
	return g_steal_pointer(&v);
}

gboolean
pgate_pipeline_check_find(PgateStoreTxn *txn, GBytes *mail,
			  PgateCheckTarget *out, GError **error)
{
	gsize len;
	const char *raw = g_bytes_get_data(mail, &len);
	g_autoptr(PgateMail) m = NULL;
	g_autoptr(GArray) nums = NULL;

	memset(out, 0, sizeof *out);
	pgate_ingest_init();
	if (len > PGATE_CHECK_MAX_BYTES) {
		out->unknown = g_strdup_printf("the message is over %u bytes: "
					       "not read",
					       (guint)PGATE_CHECK_MAX_BYTES);
		return TRUE;
	}
	if (len == 0) {
		out->unknown = g_strdup("no message on stdin");
		return TRUE;
	}
	/* a git format-patch file starts with its mbox "From " line */
	if (len > 5 && memcmp(raw, "From ", 5) == 0) {
		const char *nl = memchr(raw, '\n', len);

		if (nl == NULL) {
			out->unknown = g_strdup("no message on stdin");
			return TRUE;
		}
		len -= (gsize)(nl + 1 - raw);
		raw = nl + 1;
	}
	m = pgate_mail_parse(raw, len, NULL);
	if (m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID) {
		out->unknown = g_strdup("the message has no valid Message-ID");
		return TRUE;
	}
	out->msgid = clean(m->rec->msgid, 998);
	nums = pgate_store_message_lookup(txn, m->rec->msgid, error);
	if (nums == NULL)
		return FALSE;
	if (nums->len == 0) {
		out->unknown = g_strdup_printf("patchgate has never seen "
					       "<%s>", out->msgid);
		return TRUE;
	}
	for (guint i = 0; i < nums->len && out->series == NULL; i++) {
		guint64 num = g_array_index(nums, guint64, i);

		if (!pgate_store_msg_series_get(txn, num, &out->series, error))
			return FALSE;
	}
	if (out->series == NULL) {
		out->unknown = g_strdup_printf("<%s> is in no patch series "
					       "patchgate knows of",
					       out->msgid);
		return TRUE;
	}
	{
		g_autoptr(PgateSeriesRec) r = pgate_store_series_get(
			txn, out->series, error);

		if (r == NULL)
			return FALSE;
		out->is_cover = g_strcmp0(r->cover, m->rec->msgid) == 0;
	}
	return TRUE;
}

static json_t *
entry(const char *tool, const char *status, const char *summary,
      const char *url, const char *details)
{
	json_t *o = json_object();
	g_autofree char *t = clean(tool, 200);

	json_object_set_new(o, "tool", json_string(t));
	json_object_set_new(o, "status", json_string(status));
	if (summary != NULL) {
		g_autofree char *s = clean(summary, 400);
		char *nl = strchr(s, '\n');

		if (nl != NULL)
			*nl = '\0';
		json_object_set_new(o, "summary", json_string(s));
	}
	if (url != NULL) {
		g_autofree char *u = clean(url, 2000);

		json_object_set_new(o, "url", json_string(u));
	}
	if (details != NULL && *details != '\0') {
		g_autofree char *d = clean(details, 64 * 1024);

		json_object_set_new(o, "details", json_string(d));
	}
	return o;
}

json_t *
pgate_pipeline_check_unknown(const char *why)
{
	json_t *a = json_array();

	json_array_append_new(a, entry("patchgate", "warn", why, NULL, NULL));
	return a;
}

static const PgateSeriesPatch *
find_patch(const PgateSeriesRec *r, const char *msgid)
{
	for (guint i = 0; msgid && i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];

		if (strcmp(p->msgid, msgid) == 0)
			return p;
	}
	return NULL;
}

static const PgateApplyDocPatch *
apply_patch_of(const PgateApplyDoc *d, const char *msgid)
{
	for (guint i = 0; d->patches && msgid && i < d->patches->len; i++) {
		const PgateApplyDocPatch *p = d->patches->pdata[i];

		if (g_strcmp0(p->msgid, msgid) == 0)
			return p;
	}
	return NULL;
}

/* One line on an attempt, for "details". */
static void
describe_attempt(GString *out, const PgateApplyDoc *d)
{
	g_string_append_printf(out, "%s: %s", d->target ? d->target : "?",
			       (d->has & PGATE_APPLY_DOC_STATUS)
			       ? pgate_apply_status_name(d->status)
			       : "?");
	if (d->base)
		g_string_append_printf(out, " on %.12s", d->base);
	if (d->head)
		g_string_append_printf(out, ", head %.12s", d->head);
	if (d->ref)
		g_string_append_printf(out, ", ref %s", d->ref);
	if (d->failure) {
		g_string_append_printf(out, ", patch %" G_GINT64_FORMAT,
				       d->failure->patch);
		if (d->failure->file)
			g_string_append_printf(out, " %s", d->failure->file);
		if (d->failure->hunk > 0)
			g_string_append_printf(out, " hunk %" G_GINT64_FORMAT,
					       d->failure->hunk);
		if (d->failure->reason)
			g_string_append_printf(out, ": %s", d->failure->reason);
	}
	g_string_append_c(out, '\n');
}

/* The apply entry: the series' attempts, or this patch's part in them. */
static json_t *
apply_entry(const PgateSeriesRec *r, const PgateSeriesDocs *st,
	    const char *patch_msgid, const char *url, GString *details)
{
	const PgateApplyDoc *good = NULL, *first = NULL;
	const char *status;
	g_autofree char *summary = NULL;

	for (guint i = 0; i < st->apply->len; i++) {
		const PgateApplyDoc *d = st->apply->pdata[i];

		describe_attempt(details, d);
		if (first == NULL)
			first = d;
		if (good == NULL && pgate_apply_doc_applied(d))
			good = d;
	}
	if (first == NULL) {
		const PgateSeriesDoc *pd = st->pipeline;

		summary = g_strdup_printf(
			"not applied: %s%s%s",
			pd ? pgate_series_state_name(pd->state) : "new",
			pd && pd->reason ? ": " : "",
			pd && pd->reason ? pd->reason : "");
		return entry("patchgate-apply", "warn", summary, url,
			     details->str);
	}
	if (good != NULL && patch_msgid != NULL) {
		const PgateApplyDocPatch *ap = apply_patch_of(good,
								   patch_msgid);

		if (ap != NULL && g_strcmp0(ap->state, "applied") == 0) {
			status = "pass";
			summary = g_strdup_printf("applied to %s as %.12s",
						  good->target ? good->target : "?",
						  ap->commit ? ap->commit : "?");
		} else if (ap != NULL &&
			   g_strcmp0(ap->state, "already-applied") == 0) {
			status = "warn";
			summary = g_strdup_printf("already on %s%s%.12s",
						  good->target ? good->target : "?",
						  ap->upstream ? " as " : "",
						  ap->upstream ? ap->upstream : "");
		} else {
			status = "warn";
			summary = g_strdup_printf("%s on %s",
						  ap && ap->state ? ap->state
								   : "not applied",
						  good->target ? good->target : "?");
		}
	} else if (good != NULL) {
		status = good->status == PGATE_APPLY_OK ? "pass" : "warn";
		guint n = good->commits ? good->commits->len : 0;

		summary = g_strdup_printf(
			"%s to %s (%u commit%s, head %.12s)",
			good->status == PGATE_APPLY_OK
			? "applied" : "applied, some patches already there,",
			good->target ? good->target : "?", n, n == 1 ? "" : "s",
			good->head ? good->head : "none");
	} else {
		const PgateApplyFailure *f = first->failure;
		const PgateSeriesPatch *mine = find_patch(r, patch_msgid);

		status = "fail";
		if (f != NULL && mine != NULL && f->patch > 0 &&
		    (guint)f->patch < mine->number) {
			/* an earlier patch stopped the series */
			status = "warn";
			summary = g_strdup_printf(
				"not tried: patch %" G_GINT64_FORMAT
				" does not apply to %s", f->patch,
				first->target ? first->target : "?");
		} else {
			summary = g_strdup_printf(
				"does not apply to %s%s%s",
				first->target ? first->target : "?",
				f && f->reason ? ": " : "",
				f && f->reason ? f->reason : "");
		}
	}
	return entry("patchgate-apply", status, summary, url, details->str);
}

static const char *
verdict_status(PgateVerdict v)
{
	switch (v) {
	case PGATE_VERDICT_SUCCESS:
		return "pass";
	case PGATE_VERDICT_WARNING:
	case PGATE_VERDICT_NONE:
		return "warn";
	default:
		return "fail";
	}
}

static json_t *
ci_entry(const PgateCiDoc *d, const PgateApplyDoc *ad,
	 const char *patch_msgid, gboolean many_targets,
	 const PgateSiteConfig *site, const char *fallback_url)
{
	g_autofree char *tool = NULL;
	g_autofree char *url = pgate_pipeline_site_job_url(site, d->key);
	g_autofree char *summary = NULL;
	const char *status;
	const char *v = (d->has & PGATE_CI_DOC_VERDICT)
		? pgate_verdict_name(d->verdict) : NULL;

	tool = many_targets
		? g_strdup_printf("patchgate-%s@%s", d->job ? d->job : "ci",
				  d->target ? d->target : "?")
		: g_strdup_printf("patchgate-%s", d->job ? d->job : "ci");
	if (url == NULL)
		url = g_strdup(d->url ? d->url : fallback_url);
	if (d->state != PGATE_JOB_DONE || v == NULL) {
		summary = g_strdup_printf("%s on %s",
					  pgate_job_state_name(d->state),
					  d->target ? d->target : "?");
		return entry(tool, "warn", summary, url, d->reason);
	}
	status = verdict_status(d->verdict);
	/* a job run per patch has each patch's verdict */
	if (patch_msgid != NULL && d->commits != NULL && ad != NULL) {
		const PgateApplyDocPatch *ap = apply_patch_of(ad,
								   patch_msgid);

		for (guint i = 0; ap && ap->commit && i < d->commits->len; i++) {
			const PgateCiDocCommit *c = d->commits->pdata[i];

			if (g_strcmp0(c->commit, ap->commit) != 0)
				continue;
			summary = g_strdup_printf(
				"%s on %s (this patch, %.12s)%s%s",
				pgate_verdict_name(c->verdict),
				d->target ? d->target : "?", c->commit,
				c->reason ? ": " : "",
				c->reason ? c->reason : "");
			return entry(tool, verdict_status(c->verdict), summary,
				     url, d->summary);
		}
	}
	summary = g_strdup_printf("%s on %s%s%s", v,
				  d->target ? d->target : "?",
				  d->reason ? ": " : "",
				  d->reason ? d->reason : "");
	return entry(tool, status, summary, url, d->summary);
}

json_t *
pgate_pipeline_check_results(PgateStoreTxn *txn, const PgateSiteConfig *site,
			     const PgateCheckTarget *t, gboolean series,
			     GError **error)
{
	g_autoptr(PgateSeriesRec) r = NULL;
	g_autoptr(PgateSeriesDocs) st = NULL;
	g_autoptr(GString) details = g_string_new(NULL);
	g_autofree char *url = NULL;
	const char *patch_msgid;
	json_t *out;
	GHashTable *targets;

	if (t->series == NULL)
		return pgate_pipeline_check_unknown(t->unknown ? t->unknown
					      : "unknown message");
	r = pgate_store_series_get(txn, t->series, error);
	if (r == NULL)
		return NULL;
	st = pgate_series_docs_read(txn, r->id, error);
	if (st == NULL)
		return NULL;
	patch_msgid = series || t->is_cover ? NULL : t->msgid;
	url = pgate_report_archive_url(site ? site->archive_url : NULL,
				       r->project, t->msgid);
	g_string_append_printf(details, "series %s v%u: %s (%u of %u patches%s)\n",
			       r->id, r->version, r->name, r->patches->len,
			       r->total,
			       (r->flags & PGATE_SERIES_FLAG_COMPLETE)
			       ? ", complete" : "");
	if (st->pipeline)
		g_string_append_printf(details, "state: %s%s%s\n",
				       pgate_series_state_name(st->pipeline->state),
				       st->pipeline->reason ? ": " : "",
				       st->pipeline->reason ? st->pipeline->reason : "");
	if (r->superseded_by)
		g_string_append_printf(details, "superseded by %s\n",
				       r->superseded_by);
	if (url != NULL)
		g_string_append_printf(details, "archive: %s\n", url);
	out = json_array();
	json_array_append_new(out, apply_entry(r, st, patch_msgid, url, details));
	targets = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < st->ci->len; i++) {
		const PgateCiDoc *d = st->ci->pdata[i];

		g_hash_table_add(targets, d->target ? d->target : (char *)"");
	}
	for (guint i = 0; i < st->ci->len; i++) {
		const PgateCiDoc *d = st->ci->pdata[i];

		json_array_append_new(out, ci_entry(
			d, pgate_series_docs_apply(st, d->target),
			patch_msgid, g_hash_table_size(targets) > 1, site, url));
	}
	g_hash_table_unref(targets);
	/* b4 files the --series result of a series without a cover letter
	 * in patch 1's row, under the same tool names as patch 1's own: a
	 * name of its own (patchgate-series-apply, patchgate-series-JOB)
	 * keeps the one from overwriting the other */
	if (series) {
		gsize i;
		json_t *e;

		json_array_foreach(out, i, e) {
			const char *tool = json_string_value(
				json_object_get(e, "tool"));

			if (tool != NULL && g_str_has_prefix(tool, "patchgate-"))
				json_object_set_new(e, "tool", json_sprintf(
					"patchgate-series-%s", tool + 10));
		}
	}
	return out;
}

/* How long --run waits for the local jobs, at most. */
#define CHECK_RUN_WAIT_S 3600

gboolean
pgate_pipeline_check_run(PgatePipeline *p, const char *sid, GError **error)
{
	/* Jenkins' and Buildbot's jobs are left to the next poll: what is
	 * stored is answered; the local runner's are waited for (they run in
	 * this process), an hour at most */
	PgatePipelineTestOptions o = { NULL, NULL, TRUE, 0, CHECK_RUN_WAIT_S,
				       TRUE, NULL, NULL };
	g_autoptr(PgatePipelineTestResult) r = pgate_pipeline_test(p, sid, &o,
								   error);

	return r != NULL;
}
