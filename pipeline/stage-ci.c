/* stage-ci.c - the CI stage in the pipeline: a job per applied target,
 * submitted once, polled until done, cancelled when superseded.
 *
 * SERIES/ci/TARGET/JOB holds (docs/pipeline.md):
 *   {"backend", "job", "target", "trigger_id", "handle", "state",
 *    "verdict", "reason", "summary", "url", "log_path", "tests": {...},
 *    "warnings_added", "commits": [{commit, verdict, reason}],
 *    "submitted", "finished", "head"}
 *
 * The document is written with state "submitting" and its trigger id
 * BEFORE the backend is asked, and with the handle right after.  A crash
 * in between leaves "submitting" without a handle: the next pass submits
 * again under a new trigger id (a build may run twice; none is lost).
 */
#include "pipeline/pipeline.h"
#include "common/json.h"

#include <string.h>

void
pgate_pipeline_ci_config_clear(PgateCiConfig *c)
{
	g_clear_pointer(&c->backend, g_free);
	g_clear_pointer(&c->group, g_free);
	g_clear_pointer(&c->job, g_free);
}

gboolean
pgate_pipeline_ci_config_load(GKeyFile *kf, PgateCiConfig *c, GError **error)
{
	memset(c, 0, sizeof *c);
	c->backend = g_key_file_get_string(kf, "ci", "backend", NULL);
	if (c->backend == NULL)
		c->backend = g_strdup("local");
	if (strcmp(c->backend, "local") != 0 &&
	    strcmp(c->backend, "jenkins") != 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[ci] backend: '%s' is neither local nor jenkins",
			    c->backend);
		return FALSE;
	}
	c->group = g_strdup_printf("ci.%s", c->backend);
	c->job = g_key_file_get_string(kf, "ci", "job", NULL);
	if (c->job == NULL)
		c->job = g_strdup("build");
	c->enabled = g_key_file_has_group(kf, c->group);
	return TRUE;
}

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

static void
set_result(json_t *doc, const PgateCiResult *r)
{
	json_t *commits = json_array();

	pgate_state_set_str(doc, "state", pgate_ci_state_to_string(r->state));
	if (r->state == PGATE_CI_STATE_DONE)
		pgate_state_set_str(doc, "verdict",
				    pgate_ci_verdict_to_string(r->verdict));
	pgate_state_set_str(doc, "reason", r->reason);
	pgate_state_set_str(doc, "summary", r->summary);
	pgate_state_set_str(doc, "url", r->url);
	pgate_state_set_str(doc, "log_path", r->log_path);
	if (r->has_tests)
		json_object_set_new(doc, "tests", json_pack(
			"{s:i,s:i,s:i}", "total", (int)r->tests_total,
			"failed", (int)r->tests_failed,
			"skipped", (int)r->tests_skipped));
	json_object_set_new(doc, "warnings_added",
			    json_integer(r->warnings_added));
	for (guint i = 0; i < r->commits->len; i++) {
		const PgateCiCommitResult *c = r->commits->pdata[i];

		json_array_append_new(commits, json_pack(
			"{s:s,s:s,s:o}", "commit", c->commit,
			"verdict", pgate_ci_verdict_to_string(c->verdict),
			"reason", pgate_json_str_or_null(c->reason)));
	}
	json_object_set_new(doc, "commits", commits);
	if (r->handle != NULL)
		pgate_state_set_str(doc, "handle", r->handle);
	if (r->state == PGATE_CI_STATE_DONE)
		json_object_set_new(doc, "finished", json_integer(now_s()));
}

typedef struct {
	const char *key;
	json_t *doc;
} PutCtx;

static gboolean
put_one(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	PutCtx *p = payload;

	return pgate_state_put(txn, p->key, p->doc, error);
}

static gboolean
put_doc(PgateStore *store, const char *key, json_t *doc, GError **error)
{
	PutCtx p = { key, doc };

	return pgate_store_write(store, put_one, &p, error);
}

json_t *
pgate_pipeline_ci_submit(PgateStore *store, const PgateApplyConfig *ac,
			 const PgateCiConfig *cc, PgateCiBackend *backend,
			 const PgateSeriesRec *rec, const char *target,
			 json_t *apply_doc, GError **error)
{
	g_autofree char *sub = g_strdup_printf("%s/%s", target, cc->job);
	g_autofree char *key = pgate_state_key(rec->id, "ci", sub);
	g_autofree char *nonce = g_uuid_string_random();
	g_autofree char *trigger = g_strdup_printf("%s-%.8s", rec->id, nonce);
	g_autoptr(PgateCiJob) job = pgate_ci_job_new();
	g_autofree char *handle = NULL;
	json_t *commits = json_object_get(apply_doc, "commits");
	const char *ref = pgate_state_str(apply_doc, "ref");
	json_t *doc;
	gsize i;
	json_t *c;

	job->job = g_strdup(cc->job);
	job->repo_path = g_strdup(ac->repo);
	job->repo_url = g_strdup(ac->push_url && *ac->push_url ? ac->push_url
							       : ac->repo);
	job->ref = g_strdup(ref ? ref : "");
	json_array_foreach(commits, i, c)
		g_ptr_array_add(job->commits, g_strdup(json_string_value(c)));
	job->base_commit = g_strdup(pgate_state_str(apply_doc, "base_commit"));
	job->series_id = g_strdup(rec->id);
	job->version = rec->version;
	job->branch = g_strdup(target);
	job->msgid = g_strdup(rec->cover ? rec->cover
			      : rec->patches->len
			      ? ((PgateSeriesPatch *)rec->patches->pdata[0])->msgid
			      : "");
	job->trigger_id = g_strdup(trigger);
	if (job->commits->len == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    "series %s on %s: nothing applied to test", rec->id,
			    target);
		return NULL;
	}

	doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:s}", "backend", cc->backend,
			"job", cc->job, "target", target, "trigger_id", trigger,
			"state", "submitting", "submitted", (json_int_t)now_s(),
			"head", (char *)job->commits->pdata[job->commits->len - 1]);
	if (!put_doc(store, key, doc, error))
		goto fail;
	handle = pgate_ci_submit(backend, job, error);
	if (handle == NULL)
		goto fail;
	pgate_state_set_str(doc, "handle", handle);
	pgate_state_set_str(doc, "state", "queued");
	if (!put_doc(store, key, doc, error))
		goto fail;
	return doc;
fail:
	json_decref(doc);
	return NULL;
}

gboolean
pgate_pipeline_ci_poll(PgateStore *store, PgateCiBackend *backend,
		       const char *key, json_t *doc, GError **error)
{
	const char *handle = pgate_state_str(doc, "handle");
	g_autoptr(PgateCiResult) r = NULL;

	if (handle == NULL)
		return TRUE;
	r = pgate_ci_poll(backend, handle, error);
	if (r == NULL)
		return FALSE;
	set_result(doc, r);
	return put_doc(store, key, doc, error);
}

gboolean
pgate_pipeline_ci_cancel(PgateStore *store, PgateCiBackend *backend,
			 const char *key, json_t *doc, const char *why,
			 GError **error)
{
	const char *handle = pgate_state_str(doc, "handle");

	if (handle != NULL && !pgate_ci_cancel(backend, handle, error))
		return FALSE;
	pgate_state_set_str(doc, "state", "done");
	pgate_state_set_str(doc, "verdict", "fail");
	pgate_state_set_str(doc, "reason", why);
	json_object_set_new(doc, "cancelled", json_true());
	json_object_set_new(doc, "finished", json_integer(now_s()));
	return put_doc(store, key, doc, error);
}

gboolean
pgate_pipeline_ci_poll_all(PgateStore *store, PgateCiBackend *backend,
			   GHashTable *polled, GError **error)
{
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GPtrArray) keys = g_ptr_array_new();
	g_autoptr(GPtrArray) docs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_decref);
	g_autoptr(GPtrArray) handles = g_ptr_array_new();
	g_autofree PgateCiResult **results = NULL;
	g_autofree GError **errors = NULL;

	entries = pgate_state_entries(store, error);
	if (entries == NULL)
		return FALSE;
	for (guint i = 0; i < entries->len; i++) {
		PgateStoreEntry *e = entries->pdata[i];
		const char *slash = strchr(e->key, '/');
		json_t *doc;
		const char *st;

		if (slash == NULL || !g_str_has_prefix(slash + 1, "ci/"))
			continue;
		doc = pgate_state_decode(e->val, NULL);
		st = pgate_state_str(doc, "state");
		if (doc == NULL || pgate_state_str(doc, "handle") == NULL ||
		    (g_strcmp0(st, "queued") != 0 && g_strcmp0(st, "running") != 0)) {
			json_decref(doc);
			continue;
		}
		g_ptr_array_add(keys, e->key);
		g_ptr_array_add(docs, doc);
		g_ptr_array_add(handles, (gpointer)pgate_state_str(doc, "handle"));
	}
	if (handles->len == 0)
		return TRUE;
	results = g_new0(PgateCiResult *, handles->len);
	errors = g_new0(GError *, handles->len);
	pgate_ci_poll_many(backend, (const char *const *)handles->pdata,
			   handles->len, results, errors);
	for (guint i = 0; i < handles->len; i++) {
		if (results[i] != NULL) {
			set_result(docs->pdata[i], results[i]);
			pgate_ci_result_free(results[i]);
			if (put_doc(store, keys->pdata[i], docs->pdata[i], error))
				g_hash_table_add(polled, g_strdup(keys->pdata[i]));
			else
				return FALSE;	/* the rest: the next pass */
		} else {
			/* transient trouble: that job's series polls again */
			g_clear_error(&errors[i]);
		}
	}
	return TRUE;
}
