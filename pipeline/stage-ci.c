/* stage-ci.c - the CI stage in the pipeline: a job per applied target,
 * submitted once, polled until done, cancelled when superseded.
 *
 * SERIES/ci/TARGET/JOB is a PgateCiDoc (state.c, docs/pipeline.md).
 *
 * The document is written with state "submitting" and its trigger id
 * BEFORE the backend is asked, and with the handle right after.  A crash
 * in between, or an answer that never came (every attempt's reply lost
 * after Jenkins queued the trigger), leaves "submitting" without a
 * handle: the next submission of that job repeats the stored trigger id
 * (PgateCiJob.repeat), so the backend finds what the first one started
 * (Jenkins merges a repeat into a still queued item, and the backend
 * looks for the build of one that left the queue) instead of starting a
 * second build.  A "lost" job gets a new trigger id.
 */
#include "pipeline/pipeline-private.h"

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
	    strcmp(c->backend, "jenkins") != 0 &&
	    strcmp(c->backend, "buildbot") != 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[ci] backend: '%s' is none of local, jenkins and "
			    "buildbot",
			    c->backend);
		return FALSE;
	}
	c->group = g_strdup_printf("ci.%s", c->backend);
	c->job = g_key_file_get_string(kf, "ci", "job", NULL);
	if (c->job == NULL)
		c->job = g_strdup("build");
	c->enabled = g_key_file_has_group(kf, c->group);
	{
		gint64 v;

		/* a job whose verdict is error (the infrastructure's,
		 * not the patch's) is submitted again this many times */
		if (!pgate_config_int(kf, "ci", "error_retries", 2, 0, 10, FALSE, &v,
				      PGATE_PIPELINE_ERROR, error))
			return FALSE;
		c->retries = (guint)v;
	}
	return TRUE;
}

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

static void
replace_str(char **field, const char *value)
{
	g_free(*field);
	*field = g_strdup(value);
}

static void
set_result(PgateCiDoc *doc, const PgateCiResult *r)
{
	doc->state = r->state;	/* a backend never says "submitting" */
	if (r->state == PGATE_JOB_DONE) {
		doc->verdict = r->verdict;
		doc->has |= PGATE_CI_DOC_VERDICT;
	}
	replace_str(&doc->reason, r->reason);
	replace_str(&doc->summary, r->summary);
	replace_str(&doc->url, r->url);
	replace_str(&doc->log_path, r->log_path);
	doc->has |= PGATE_CI_DOC_REASON | PGATE_CI_DOC_SUMMARY |
		    PGATE_CI_DOC_URL | PGATE_CI_DOC_LOG_PATH |
		    PGATE_CI_DOC_WARNINGS_ADDED;
	if (r->has_tests) {
		doc->tests_total = (int)r->tests_total;
		doc->tests_failed = (int)r->tests_failed;
		doc->tests_skipped = (int)r->tests_skipped;
		doc->has |= PGATE_CI_DOC_TESTS;
	}
	doc->warnings_added = r->warnings_added;
	if (doc->commits != NULL)
		g_ptr_array_unref(doc->commits);
	doc->commits = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_doc_commit_free);
	for (guint i = 0; i < r->commits->len; i++) {
		const PgateCiCommitResult *c = r->commits->pdata[i];

		g_ptr_array_add(doc->commits, pgate_ci_doc_commit_new(
			c->commit, c->verdict, c->reason));
	}
	if (r->handle != NULL)
		replace_str(&doc->handle, r->handle);
	if (r->state == PGATE_JOB_DONE) {
		doc->finished = now_s();
		doc->has |= PGATE_CI_DOC_FINISHED;
	}
}

/* The trigger id of the stored submission of @key that never got its
 * answer (state "submitting"), or %NULL (transfer full).  Its head may
 * differ from the one submitted now (the series was applied again, which
 * makes new commit ids): the backend sorts that out (ci.h, repeat). */
static char *
unanswered_trigger(PgateStore *store, const char *key, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GBytes) val = NULL;
	g_autoptr(PgateCiDoc) doc = NULL;
	g_autoptr(GError) local = NULL;

	if (txn == NULL)
		return NULL;
	val = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE, key, &local);
	if (val == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	doc = pgate_ci_doc_decode(val, key, NULL);
	if (doc == NULL || doc->state != PGATE_JOB_SUBMITTING ||
	    doc->handle != NULL || doc->trigger_id == NULL ||
	    *doc->trigger_id == '\0')
		return NULL;
	return g_steal_pointer(&doc->trigger_id);
}

/* What PATCHGATE_BRANCH says: the base branch's name; for a series
 * applied on its own base-commit, which is no branch, the base commit's
 * id, which a job can check out as well. */
static const char *
branch_of(const char *target, const PgateApplyDoc *ad)
{
	if (strcmp(target, "base-commit") != 0)
		return target;
	if (ad->base_commit != NULL && *ad->base_commit != '\0')
		return ad->base_commit;
	if (ad->base != NULL && *ad->base != '\0')
		return ad->base;
	return target;
}

static gboolean
put_one(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	return pgate_ci_doc_put(txn, payload, error);
}

static gboolean
put_doc(PgateStore *store, PgateCiDoc *doc, GError **error)
{
	return pgate_store_write(store, put_one, doc, error);
}

PgateCiDoc *
pgate_pipeline_ci_submit(PgateStore *store, const PgateApplyConfig *ac,
			 const PgateCiConfig *cc, PgateCiBackend *backend,
			 const PgateSeriesRec *rec, const char *target,
			 const PgateApplyDoc *apply_doc, GError **error)
{
	g_autofree char *sub = g_strdup_printf("%s/%s", target, cc->job);
	g_autofree char *key = pgate_state_key(rec->id, "ci", sub);
	g_autofree char *trigger = NULL;
	g_autoptr(PgateCiJob) job = pgate_ci_job_new();
	g_autoptr(PgateCiDoc) doc = NULL;
	g_autoptr(GError) local = NULL;
	const char *ref = apply_doc->ref;

	job->job = g_strdup(cc->job);
	job->repo_path = g_strdup(ac->repo);
	/* never a password a push URL may hold: a CI step reads this */
	job->repo_url = pgate_url_without_password(ac->push_url && *ac->push_url
						   ? ac->push_url : ac->repo);
	job->ref = g_strdup(ref ? ref : "");
	for (guint i = 0; apply_doc->commits && i < apply_doc->commits->len; i++)
		g_ptr_array_add(job->commits,
				g_strdup(apply_doc->commits->pdata[i]));
	job->base_commit = g_strdup(apply_doc->base_commit);
	job->series_id = g_strdup(rec->id);
	job->version = rec->version;
	job->branch = g_strdup(branch_of(target, apply_doc));
	job->msgid = g_strdup(rec->cover ? rec->cover
			      : rec->patches->len
			      ? ((PgateSeriesPatch *)rec->patches->pdata[0])->msgid
			      : "");
	if (job->commits->len == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    "series %s on %s: nothing applied to test", rec->id,
			    target);
		return NULL;
	}
	trigger = unanswered_trigger(store, key, &local);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	job->repeat = trigger != NULL;
	if (trigger == NULL) {
		g_autofree char *nonce = g_uuid_string_random();

		trigger = g_strdup_printf("%s-%.8s", rec->id, nonce);
	}
	job->trigger_id = g_strdup(trigger);

	doc = pgate_ci_doc_new();
	doc->key = g_steal_pointer(&key);
	doc->backend = g_strdup(cc->backend);
	doc->job = g_strdup(cc->job);
	doc->target = g_strdup(target);
	doc->trigger_id = g_strdup(trigger);
	doc->state = PGATE_JOB_SUBMITTING;
	doc->submitted = now_s();
	doc->has |= PGATE_CI_DOC_SUBMITTED;
	doc->head = g_strdup(job->commits->pdata[job->commits->len - 1]);
	if (!put_doc(store, doc, error))
		return NULL;
	doc->handle = pgate_ci_submit(backend, job, error);
	if (doc->handle == NULL)
		return NULL;
	doc->state = PGATE_JOB_QUEUED;
	if (!put_doc(store, doc, error))
		return NULL;
	return g_steal_pointer(&doc);
}

gboolean
pgate_pipeline_ci_poll(PgateStore *store, PgateCiBackend *backend,
		       PgateCiDoc *doc, GError **error)
{
	g_autoptr(PgateCiResult) r = NULL;

	if (doc->handle == NULL)
		return TRUE;
	r = pgate_ci_poll(backend, doc->handle, error);
	if (r == NULL)
		return FALSE;
	set_result(doc, r);
	return put_doc(store, doc, error);
}

gboolean
pgate_pipeline_ci_cancel(PgateStore *store, PgateCiBackend *backend,
			 PgateCiDoc *doc, const char *why,
			 GError **error)
{
	if (doc->handle != NULL && !pgate_ci_cancel(backend, doc->handle, error))
		return FALSE;
	doc->state = PGATE_JOB_DONE;
	doc->verdict = PGATE_VERDICT_FAIL;
	replace_str(&doc->reason, why);
	doc->cancelled = TRUE;
	doc->finished = now_s();
	doc->has |= PGATE_CI_DOC_VERDICT | PGATE_CI_DOC_REASON |
		    PGATE_CI_DOC_FINISHED;
	return put_doc(store, doc, error);
}

gboolean
pgate_pipeline_ci_poll_all(PgateStore *store, PgateCiBackend *backend,
			   GHashTable *polled, GError **error)
{
	g_autoptr(GPtrArray) entries = NULL;
	g_autoptr(GPtrArray) docs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_doc_free);
	g_autoptr(GPtrArray) handles = g_ptr_array_new();
	g_autofree PgateCiResult **results = NULL;
	g_autofree GError **errors = NULL;

	entries = pgate_state_entries(store, error);
	if (entries == NULL)
		return FALSE;
	for (guint i = 0; i < entries->len; i++) {
		PgateStoreEntry *e = entries->pdata[i];
		const char *slash = strchr(e->key, '/');
		PgateCiDoc *doc;

		if (slash == NULL || !g_str_has_prefix(slash + 1, "ci/"))
			continue;
		doc = pgate_ci_doc_decode(e->val, e->key, NULL);
		if (doc == NULL || doc->handle == NULL ||
		    (doc->state != PGATE_JOB_QUEUED &&
		     doc->state != PGATE_JOB_RUNNING)) {
			pgate_ci_doc_free(doc);
			continue;
		}
		g_ptr_array_add(docs, doc);
		g_ptr_array_add(handles, doc->handle);
	}
	if (handles->len == 0)
		return TRUE;
	results = g_new0(PgateCiResult *, handles->len);
	errors = g_new0(GError *, handles->len);
	/* the handles are borrowed from docs, which set_result() may give
	 * a new one: copy them for the call */
	{
		g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func(g_free);

		for (guint i = 0; i < handles->len; i++)
			g_ptr_array_add(copies, g_strdup(handles->pdata[i]));
		pgate_ci_poll_many(backend, (const char *const *)copies->pdata,
				   copies->len, results, errors);
	}
	for (guint i = 0; i < handles->len; i++) {
		PgateCiDoc *doc = docs->pdata[i];

		if (results[i] != NULL) {
			set_result(doc, results[i]);
			pgate_ci_result_free(results[i]);
			results[i] = NULL;
			if (put_doc(store, doc, error)) {
				g_hash_table_add(polled, g_strdup(doc->key));
			} else {
				for (guint k = i + 1; k < handles->len; k++) {
					pgate_ci_result_free(results[k]);
					g_clear_error(&errors[k]);
				}
				return FALSE;	/* the rest: the next pass */
			}
		} else {
			/* transient trouble: that job's series polls again */
			g_clear_error(&errors[i]);
		}
	}
	return TRUE;
}
