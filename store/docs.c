/* docs.c - the vocabulary every layer shares (store.h), and the later
 * stages' per-series state as JSON documents in the store's stage table
 * (docs/pipeline.md lists them), the only place that encodes or decodes
 * them:
 *
 *   SERIES/pipeline            PgateSeriesDoc: where the series is
 *   SERIES/apply/TARGET        PgateApplyDoc: one apply attempt
 *                              (TARGET: a branch, or "base-commit")
 *   SERIES/ci/TARGET/JOB       PgateCiDoc: one CI job on an
 *                              applied target
 *
 * Stored as compact JSON with sorted keys.  Decoding takes each known
 * field out of a copy of the object when its value has the type this
 * code writes (a string, or null where the field may be null; an
 * integer; true; an array or object of exactly the shape written); the
 * rest of the copy is the document's unknown part, and encoding puts it
 * back beside the known fields.  A known field that is absent stays
 * absent (the presence bits), so decode then encode gives the bytes that
 * were read.  Nested values (events, patches, failure, tests, commits)
 * are typed only when they have exactly the shape written; otherwise the
 * whole field is kept as unknown, as it was.
 *
 * Stages never call each other: the pipeline reads what one stage wrote
 * here and hands it to the next.
 */
#include "store/store.h"
#include "common/json.h"

#include <string.h>

/* ---- names ---- */

static const char *const state_names[] = {
	[PGATE_SERIES_NEW] = "new",
	[PGATE_SERIES_WAITING] = "waiting",
	[PGATE_SERIES_INCOMPLETE] = "incomplete",
	[PGATE_SERIES_AWAITING_APPROVAL] = "awaiting-approval",
	[PGATE_SERIES_REJECTED] = "rejected",
	[PGATE_SERIES_SKIPPED] = "skipped",
	[PGATE_SERIES_APPLY_FAILED] = "apply-failed",
	[PGATE_SERIES_TESTING] = "testing",
	[PGATE_SERIES_DONE] = "done",
	[PGATE_SERIES_SUPERSEDED] = "superseded",
	[PGATE_SERIES_MERGED] = "merged",
	[PGATE_SERIES_SUPERSEDED_BY_MERGE] = "superseded-by-merge",
};

static const char *const job_state_names[] = {
	[PGATE_JOB_SUBMITTING] = "submitting",
	[PGATE_JOB_QUEUED] = "queued",
	[PGATE_JOB_RUNNING] = "running",
	[PGATE_JOB_DONE] = "done",
	[PGATE_JOB_LOST] = "lost",
};

static const char *const verdict_names[] = {
	[PGATE_VERDICT_NONE] = "none",
	[PGATE_VERDICT_SUCCESS] = "success",
	[PGATE_VERDICT_WARNING] = "warning",
	[PGATE_VERDICT_FAIL] = "fail",
	[PGATE_VERDICT_ERROR] = "error",
};

static const char *const apply_status_names[] = {
	[PGATE_APPLY_OK] = "ok",
	[PGATE_APPLY_FAILED] = "failed",
	[PGATE_APPLY_ALREADY_APPLIED] = "already-applied",
	[PGATE_APPLY_REJECTED] = "rejected",
	[PGATE_APPLY_NOT_MADE] = "error",
};

static const char *const check_state_names[] = {
	[PGATE_CHECK_PENDING] = "pending",
	[PGATE_CHECK_SUCCESS] = "success",
	[PGATE_CHECK_WARNING] = "warning",
	[PGATE_CHECK_FAIL] = "fail",
};

static const char *
name_of(const char *const *names, guint n, guint v)
{
	g_return_val_if_fail(v < n, "unknown");
	return names[v];
}

static gboolean
index_of(const char *const *names, guint n, const char *s, guint *out)
{
	for (guint i = 0; s != NULL && i < n; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return TRUE;
		}
	}
	return FALSE;
}

#define NAMES(t) (t), G_N_ELEMENTS(t)

const char *
pgate_series_state_name(PgateSeriesState state)
{
	return name_of(NAMES(state_names), state);
}

gboolean
pgate_series_state_parse(const char *s, PgateSeriesState *out)
{
	guint i;

	if (!index_of(NAMES(state_names), s, &i))
		return FALSE;
	*out = (PgateSeriesState)i;
	return TRUE;
}

gboolean
pgate_series_state_is_final(PgateSeriesState state)
{
	switch (state) {
	case PGATE_SERIES_INCOMPLETE:
	case PGATE_SERIES_REJECTED:
	case PGATE_SERIES_SKIPPED:
	case PGATE_SERIES_APPLY_FAILED:
	case PGATE_SERIES_DONE:
	case PGATE_SERIES_SUPERSEDED:
	case PGATE_SERIES_MERGED:
	case PGATE_SERIES_SUPERSEDED_BY_MERGE:
		return TRUE;
	case PGATE_SERIES_NEW:
	case PGATE_SERIES_WAITING:
	case PGATE_SERIES_AWAITING_APPROVAL:
	case PGATE_SERIES_TESTING:
		break;
	}
	return FALSE;
}

const char *
pgate_job_state_name(PgateJobState state)
{
	return name_of(NAMES(job_state_names), state);
}

gboolean
pgate_job_state_parse(const char *s, PgateJobState *out)
{
	guint i;

	if (!index_of(NAMES(job_state_names), s, &i))
		return FALSE;
	*out = (PgateJobState)i;
	return TRUE;
}

const char *
pgate_verdict_name(PgateVerdict verdict)
{
	return name_of(NAMES(verdict_names), verdict);
}

gboolean
pgate_verdict_parse(const char *s, PgateVerdict *out)
{
	guint i;

	if (!index_of(NAMES(verdict_names), s, &i))
		return FALSE;
	*out = (PgateVerdict)i;
	return TRUE;
}

const char *
pgate_apply_status_name(PgateApplyStatus s)
{
	return name_of(NAMES(apply_status_names), s);
}

gboolean
pgate_apply_status_parse(const char *s, PgateApplyStatus *out)
{
	guint i;

	if (!index_of(NAMES(apply_status_names), s, &i))
		return FALSE;
	*out = (PgateApplyStatus)i;
	return TRUE;
}

const char *
pgate_check_state_name(PgateCheckState state)
{
	return name_of(NAMES(check_state_names), state);
}

gboolean
pgate_check_state_parse(const char *s, PgateCheckState *out)
{
	guint i;

	if (!index_of(NAMES(check_state_names), s, &i))
		return FALSE;
	*out = (PgateCheckState)i;
	return TRUE;
}

/* ---- decoding helpers: each takes @key out of @rest when its value has
 * the type asked for, and says whether it did ---- */

static gboolean
take_str(json_t *rest, const char *key, gboolean nullable, char **out)
{
	json_t *v = json_object_get(rest, key);

	if (v == NULL || !(json_is_string(v) || (nullable && json_is_null(v))))
		return FALSE;
	g_free(*out);
	*out = g_strdup(json_string_value(v));
	json_object_del(rest, key);
	return TRUE;
}

static gboolean
take_int(json_t *rest, const char *key, gint64 *out)
{
	json_t *v = json_object_get(rest, key);

	if (!json_is_integer(v))
		return FALSE;
	*out = json_integer_value(v);
	json_object_del(rest, key);
	return TRUE;
}

static gboolean
take_true(json_t *rest, const char *key, gboolean *out)
{
	if (!json_is_true(json_object_get(rest, key)))
		return FALSE;
	*out = TRUE;
	json_object_del(rest, key);
	return TRUE;
}

static gboolean
take_strv(json_t *rest, const char *key, GPtrArray **out)
{
	json_t *v = json_object_get(rest, key), *x;
	gsize i;

	if (!json_is_array(v))
		return FALSE;
	json_array_foreach(v, i, x)
		if (!json_is_string(x))
			return FALSE;
	if (*out != NULL)
		g_ptr_array_unref(*out);
	*out = g_ptr_array_new_with_free_func(g_free);
	json_array_foreach(v, i, x)
		g_ptr_array_add(*out, g_strdup(json_string_value(x)));
	json_object_del(rest, key);
	return TRUE;
}

/* An array of message numbers (positive integers) */
static gboolean
take_nums(json_t *rest, const char *key, GArray **out)
{
	json_t *v = json_object_get(rest, key), *x;
	gsize i;

	if (!json_is_array(v))
		return FALSE;
	json_array_foreach(v, i, x)
		if (!json_is_integer(x) || json_integer_value(x) <= 0)
			return FALSE;
	if (*out != NULL)
		g_array_unref(*out);
	*out = g_array_sized_new(FALSE, FALSE, sizeof(guint64),
				 (guint)json_array_size(v));
	json_array_foreach(v, i, x) {
		guint64 n = (guint64)json_integer_value(x);

		g_array_append_val(*out, n);
	}
	json_object_del(rest, key);
	return TRUE;
}

/* An array of objects each decoded by @fn (NULL: not of the shape) */
typedef gpointer (*FromJsonFunc)(json_t *obj);

static gboolean
take_array(json_t *rest, const char *key, FromJsonFunc fn,
	   GDestroyNotify free_fn, GPtrArray **out)
{
	json_t *v = json_object_get(rest, key), *x;
	g_autoptr(GPtrArray) a = NULL;
	gsize i;

	if (!json_is_array(v))
		return FALSE;
	a = g_ptr_array_new_with_free_func(free_fn);
	json_array_foreach(v, i, x) {
		gpointer item = json_is_object(x) ? fn(x) : NULL;

		if (item == NULL)
			return FALSE;
		g_ptr_array_add(a, item);
	}
	if (*out != NULL)
		g_ptr_array_unref(*out);
	*out = g_steal_pointer(&a);
	json_object_del(rest, key);
	return TRUE;
}

/* (transfer full): what is left of @rest, or NULL when nothing is */
static json_t *
leftover(json_t *rest)
{
	return json_object_size(rest) > 0 ? json_incref(rest) : NULL;
}

/* ---- encoding helpers ---- */

static void
set_str(json_t *o, const char *key, const char *s)
{
	json_object_set_new(o, key, pgate_json_str_or_null(s));
}

static void
set_str_if(json_t *o, const char *key, const char *s)
{
	if (s != NULL)
		json_object_set_new(o, key, json_string(s));
}

static json_t *
strv_json(const GPtrArray *a)
{
	json_t *j = json_array();

	for (guint i = 0; i < a->len; i++)
		json_array_append_new(j, json_string(a->pdata[i]));
	return j;
}

/* Puts the unknown fields back: a known field set in @o wins. */
static json_t *
with_unknown(json_t *o, json_t *unknown)
{
	const char *k;
	json_t *v;

	json_object_foreach(unknown, k, v)
		if (json_object_get(o, k) == NULL)
			json_object_set(o, k, v);
	return o;
}

static char *
dump(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	char *out = g_strdup(text);

	free(text);
	json_decref(j);
	return out;
}

/* @val as a JSON object: (transfer full), or NULL with @error */
static json_t *
parse(GBytes *val, GError **error)
{
	json_error_t jerr = { 0 };
	g_autoptr(json_t) j = pgate_state_decode(val, &jerr);

	if (j == NULL) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "is not a JSON object: %s", jerr.text);
		return NULL;
	}
	return g_steal_pointer(&j);
}

static gboolean
put_text(PgateStoreTxn *txn, const char *key, char *text, GError **error)
{
	gboolean ok;

	if (text == NULL) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
			    "cannot encode stage state %s", key);
		return FALSE;
	}
	ok = pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE, key, text,
				   strlen(text), error);
	g_free(text);
	return ok;
}

/* ---- SERIES/apply/TARGET ---- */

PgateApplyDocPatch *
pgate_apply_doc_patch_new(const char *msgid, const char *state,
			       const char *commit, const char *upstream)
{
	PgateApplyDocPatch *p = g_new0(PgateApplyDocPatch, 1);

	p->msgid = g_strdup(msgid);
	p->state = g_strdup(state);
	p->commit = g_strdup(commit);
	p->upstream = g_strdup(upstream);
	return p;
}

void
pgate_apply_doc_patch_free(PgateApplyDocPatch *p)
{
	g_free(p->msgid);
	g_free(p->state);
	g_free(p->commit);
	g_free(p->upstream);
	g_free(p);
}

static gpointer
apply_patch_from_json(json_t *obj)
{
	g_autoptr(json_t) rest = json_copy(obj);
	PgateApplyDocPatch *p = g_new0(PgateApplyDocPatch, 1);

	if (!take_str(rest, "msgid", FALSE, &p->msgid) ||
	    !take_str(rest, "state", FALSE, &p->state) ||
	    !take_str(rest, "commit", TRUE, &p->commit) ||
	    !take_str(rest, "upstream", TRUE, &p->upstream) ||
	    json_object_size(rest) > 0) {
		pgate_apply_doc_patch_free(p);
		return NULL;
	}
	return p;
}

PgateApplyFailure *
pgate_apply_failure_new(gint64 patch, const char *file, gint64 hunk,
				 const char *reason)
{
	PgateApplyFailure *f = g_new0(PgateApplyFailure, 1);

	f->patch = patch;
	f->file = g_strdup(file);
	f->hunk = hunk;
	f->reason = g_strdup(reason);
	return f;
}

void
pgate_apply_failure_free(PgateApplyFailure *f)
{
	if (f == NULL)
		return;
	g_free(f->file);
	g_free(f->reason);
	g_free(f);
}

static gboolean
take_failure(json_t *rest, PgateApplyFailure **out)
{
	json_t *v = json_object_get(rest, "failure");
	g_autoptr(json_t) r = json_is_object(v) ? json_copy(v) : NULL;
	PgateApplyFailure *f;

	if (r == NULL)
		return FALSE;
	f = g_new0(PgateApplyFailure, 1);
	if (!take_int(r, "patch", &f->patch) ||
	    !take_str(r, "file", TRUE, &f->file) ||
	    !take_int(r, "hunk", &f->hunk) ||
	    !take_str(r, "reason", TRUE, &f->reason) ||
	    json_object_size(r) > 0) {
		pgate_apply_failure_free(f);
		return FALSE;
	}
	pgate_apply_failure_free(*out);
	*out = f;
	json_object_del(rest, "failure");
	return TRUE;
}

PgateApplyDoc *
pgate_apply_doc_new(void)
{
	return g_new0(PgateApplyDoc, 1);
}

void
pgate_apply_doc_free(PgateApplyDoc *doc)
{
	if (doc == NULL)
		return;
	g_free(doc->target);
	g_free(doc->base);
	g_free(doc->base_commit);
	g_clear_pointer(&doc->commits, g_ptr_array_unref);
	g_clear_pointer(&doc->patches, g_ptr_array_unref);
	g_free(doc->head);
	g_clear_pointer(&doc->prerequisites, g_ptr_array_unref);
	g_free(doc->reroll_of);
	pgate_apply_failure_free(doc->failure);
	g_free(doc->prerequisites_dropped);
	g_free(doc->ref);
	g_free(doc->pushed_to);
	g_free(doc->publish_error);
	g_free(doc->route);
	g_free(doc->route_why);
	json_decref(doc->unknown);
	g_free(doc);
}

static gpointer
apply_doc_from_json(json_t *obj)
{
	g_autoptr(json_t) rest = json_copy(obj);
	PgateApplyDoc *d = pgate_apply_doc_new();
	json_t *v = json_object_get(rest, "status");

	take_str(rest, "target", FALSE, &d->target);
	take_str(rest, "base", FALSE, &d->base);
	if (json_is_string(v) &&
	    pgate_apply_status_parse(json_string_value(v),
						    &d->status)) {
		d->has |= PGATE_APPLY_DOC_STATUS;
		json_object_del(rest, "status");
	}
	take_str(rest, "base_commit", FALSE, &d->base_commit);
	take_strv(rest, "commits", &d->commits);
	take_array(rest, "patches", apply_patch_from_json,
		   (GDestroyNotify)pgate_apply_doc_patch_free, &d->patches);
	if (take_str(rest, "head", TRUE, &d->head))
		d->has |= PGATE_APPLY_DOC_HEAD;
	take_strv(rest, "prerequisites", &d->prerequisites);
	if (take_str(rest, "reroll_of", TRUE, &d->reroll_of))
		d->has |= PGATE_APPLY_DOC_REROLL_OF;
	if (take_int(rest, "at", &d->at))
		d->has |= PGATE_APPLY_DOC_AT;
	take_failure(rest, &d->failure);
	take_str(rest, "prerequisites_dropped", FALSE, &d->prerequisites_dropped);
	take_str(rest, "ref", FALSE, &d->ref);
	take_str(rest, "pushed_to", FALSE, &d->pushed_to);
	take_str(rest, "publish_error", FALSE, &d->publish_error);
	take_str(rest, "route", FALSE, &d->route);
	take_str(rest, "route_why", FALSE, &d->route_why);
	d->unknown = leftover(rest);
	return d;
}

PgateApplyDoc *
pgate_apply_doc_decode(GBytes *val, GError **error)
{
	g_autoptr(json_t) j = parse(val, error);

	return j ? apply_doc_from_json(j) : NULL;
}

json_t *
pgate_apply_doc_to_json(const PgateApplyDoc *d)
{
	json_t *o = json_object();
	/* the error document (pgate_pipeline_apply()) was written with
	 * "failure" before "at"; the others after */
	gboolean error_order = (d->has & PGATE_APPLY_DOC_STATUS) &&
			       d->status == PGATE_APPLY_NOT_MADE;

	set_str_if(o, "target", d->target);
	set_str_if(o, "base", d->base);
	if (d->has & PGATE_APPLY_DOC_STATUS)
		set_str(o, "status",
			pgate_apply_status_name(d->status));
	set_str_if(o, "base_commit", d->base_commit);
	if (d->commits != NULL)
		json_object_set_new(o, "commits", strv_json(d->commits));
	if (d->patches != NULL) {
		json_t *a = json_array();

		for (guint i = 0; i < d->patches->len; i++) {
			const PgateApplyDocPatch *p = d->patches->pdata[i];
			json_t *x = json_object();

			set_str(x, "msgid", p->msgid);
			set_str(x, "state", p->state);
			set_str(x, "commit", p->commit);
			set_str(x, "upstream", p->upstream);
			json_array_append_new(a, x);
		}
		json_object_set_new(o, "patches", a);
	}
	if (d->has & PGATE_APPLY_DOC_HEAD)
		set_str(o, "head", d->head);
	if (d->prerequisites != NULL)
		json_object_set_new(o, "prerequisites",
				    strv_json(d->prerequisites));
	if (d->has & PGATE_APPLY_DOC_REROLL_OF)
		set_str(o, "reroll_of", d->reroll_of);
	if ((d->has & PGATE_APPLY_DOC_AT) && !error_order)
		json_object_set_new(o, "at", json_integer(d->at));
	if (d->failure != NULL) {
		json_t *f = json_object();

		json_object_set_new(f, "patch", json_integer(d->failure->patch));
		set_str(f, "file", d->failure->file);
		json_object_set_new(f, "hunk", json_integer(d->failure->hunk));
		set_str(f, "reason", d->failure->reason);
		json_object_set_new(o, "failure", f);
	}
	if ((d->has & PGATE_APPLY_DOC_AT) && error_order)
		json_object_set_new(o, "at", json_integer(d->at));
	set_str_if(o, "prerequisites_dropped", d->prerequisites_dropped);
	set_str_if(o, "ref", d->ref);
	set_str_if(o, "pushed_to", d->pushed_to);
	set_str_if(o, "publish_error", d->publish_error);
	set_str_if(o, "route", d->route);
	set_str_if(o, "route_why", d->route_why);
	return with_unknown(o, d->unknown);
}

char *
pgate_apply_doc_encode(const PgateApplyDoc *doc)
{
	return dump(pgate_apply_doc_to_json(doc));
}

gboolean
pgate_apply_doc_put(PgateStoreTxn *txn, const char *sid,
			     const PgateApplyDoc *doc, GError **error)
{
	g_autofree char *key = pgate_state_key(sid, "apply", doc->target);

	g_return_val_if_fail(doc->target != NULL, FALSE);
	return put_text(txn, key, pgate_apply_doc_encode(doc), error);
}

gboolean
pgate_apply_doc_applied(const PgateApplyDoc *doc)
{
	return (doc->has & PGATE_APPLY_DOC_STATUS) &&
	       (doc->status == PGATE_APPLY_OK ||
		doc->status == PGATE_APPLY_ALREADY_APPLIED);
}

gboolean
pgate_apply_doc_testable(const PgateApplyDoc *doc)
{
	return pgate_apply_doc_applied(doc) && doc->commits != NULL &&
	       doc->commits->len > 0;
}

/* ---- SERIES/ci/TARGET/JOB ---- */

PgateCiDocCommit *
pgate_ci_doc_commit_new(const char *commit, PgateVerdict verdict,
			     const char *reason)
{
	PgateCiDocCommit *c = g_new0(PgateCiDocCommit, 1);

	c->commit = g_strdup(commit);
	c->verdict = verdict;
	c->reason = g_strdup(reason);
	return c;
}

void
pgate_ci_doc_commit_free(PgateCiDocCommit *c)
{
	g_free(c->commit);
	g_free(c->reason);
	g_free(c);
}

static gpointer
ci_commit_from_json(json_t *obj)
{
	g_autoptr(json_t) rest = json_copy(obj);
	PgateCiDocCommit *c = g_new0(PgateCiDocCommit, 1);
	g_autofree char *verdict = NULL;

	if (!take_str(rest, "commit", FALSE, &c->commit) ||
	    !take_str(rest, "verdict", FALSE, &verdict) ||
	    !pgate_verdict_parse(verdict, &c->verdict) ||
	    !take_str(rest, "reason", TRUE, &c->reason) ||
	    json_object_size(rest) > 0) {
		pgate_ci_doc_commit_free(c);
		return NULL;
	}
	return c;
}

static gboolean
take_tests(json_t *rest, PgateCiDoc *d)
{
	json_t *v = json_object_get(rest, "tests");
	g_autoptr(json_t) r = json_is_object(v) ? json_copy(v) : NULL;
	gint64 total, failed, skipped;

	if (r == NULL || !take_int(r, "total", &total) ||
	    !take_int(r, "failed", &failed) ||
	    !take_int(r, "skipped", &skipped) || json_object_size(r) > 0)
		return FALSE;
	d->tests_total = total;
	d->tests_failed = failed;
	d->tests_skipped = skipped;
	json_object_del(rest, "tests");
	return TRUE;
}

PgateCiDoc *
pgate_ci_doc_new(void)
{
	PgateCiDoc *d = g_new0(PgateCiDoc, 1);

	d->warnings_added = -1;
	return d;
}

void
pgate_ci_doc_free(PgateCiDoc *doc)
{
	if (doc == NULL)
		return;
	g_free(doc->key);
	g_free(doc->backend);
	g_free(doc->job);
	g_free(doc->target);
	g_free(doc->trigger_id);
	g_free(doc->handle);
	g_free(doc->head);
	g_free(doc->reason);
	g_free(doc->summary);
	g_free(doc->url);
	g_free(doc->log_path);
	g_clear_pointer(&doc->commits, g_ptr_array_unref);
	json_decref(doc->unknown);
	g_free(doc);
}

PgateCiDoc *
pgate_ci_doc_decode(GBytes *val, const char *key, GError **error)
{
	g_autoptr(json_t) j = parse(val, error);
	g_autoptr(json_t) rest = NULL;
	g_autoptr(PgateCiDoc) d = NULL;

	if (j == NULL)
		return NULL;
	rest = json_copy(j);
	d = pgate_ci_doc_new();
	d->key = g_strdup(key);
	if (!json_is_string(json_object_get(rest, "state")) ||
	    !pgate_job_state_parse(
		    json_string_value(json_object_get(rest, "state")),
		    &d->state)) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "has no known job state");
		return NULL;
	}
	json_object_del(rest, "state");
	take_str(rest, "backend", FALSE, &d->backend);
	take_str(rest, "job", FALSE, &d->job);
	take_str(rest, "target", FALSE, &d->target);
	take_str(rest, "trigger_id", FALSE, &d->trigger_id);
	take_str(rest, "handle", FALSE, &d->handle);
	take_str(rest, "head", FALSE, &d->head);
	if (take_int(rest, "submitted", &d->submitted))
		d->has |= PGATE_CI_DOC_SUBMITTED;
	if (json_is_string(json_object_get(rest, "verdict")) &&
	    pgate_verdict_parse(
		    json_string_value(json_object_get(rest, "verdict")),
		    &d->verdict)) {
		d->has |= PGATE_CI_DOC_VERDICT;
		json_object_del(rest, "verdict");
	}
	if (take_str(rest, "reason", TRUE, &d->reason))
		d->has |= PGATE_CI_DOC_REASON;
	if (take_str(rest, "summary", TRUE, &d->summary))
		d->has |= PGATE_CI_DOC_SUMMARY;
	if (take_str(rest, "url", TRUE, &d->url))
		d->has |= PGATE_CI_DOC_URL;
	if (take_str(rest, "log_path", TRUE, &d->log_path))
		d->has |= PGATE_CI_DOC_LOG_PATH;
	if (take_tests(rest, d))
		d->has |= PGATE_CI_DOC_TESTS;
	if (take_int(rest, "warnings_added", &d->warnings_added))
		d->has |= PGATE_CI_DOC_WARNINGS_ADDED;
	take_array(rest, "commits", ci_commit_from_json,
		   (GDestroyNotify)pgate_ci_doc_commit_free, &d->commits);
	if (take_int(rest, "finished", &d->finished))
		d->has |= PGATE_CI_DOC_FINISHED;
	take_true(rest, "cancelled", &d->cancelled);
	d->unknown = leftover(rest);
	return g_steal_pointer(&d);
}

json_t *
pgate_ci_doc_to_json(const PgateCiDoc *d)
{
	json_t *o = json_object();

	set_str_if(o, "backend", d->backend);
	set_str_if(o, "job", d->job);
	set_str_if(o, "target", d->target);
	set_str_if(o, "trigger_id", d->trigger_id);
	set_str(o, "state", pgate_job_state_name(d->state));
	if (d->has & PGATE_CI_DOC_SUBMITTED)
		json_object_set_new(o, "submitted", json_integer(d->submitted));
	set_str_if(o, "head", d->head);
	set_str_if(o, "handle", d->handle);
	if (d->has & PGATE_CI_DOC_VERDICT)
		set_str(o, "verdict", pgate_verdict_name(d->verdict));
	if (d->has & PGATE_CI_DOC_REASON)
		set_str(o, "reason", d->reason);
	if (d->has & PGATE_CI_DOC_SUMMARY)
		set_str(o, "summary", d->summary);
	if (d->has & PGATE_CI_DOC_URL)
		set_str(o, "url", d->url);
	if (d->has & PGATE_CI_DOC_LOG_PATH)
		set_str(o, "log_path", d->log_path);
	if (d->has & PGATE_CI_DOC_TESTS)
		json_object_set_new(o, "tests", json_pack(
			"{s:I,s:I,s:I}", "total", (json_int_t)d->tests_total,
			"failed", (json_int_t)d->tests_failed,
			"skipped", (json_int_t)d->tests_skipped));
	if (d->has & PGATE_CI_DOC_WARNINGS_ADDED)
		json_object_set_new(o, "warnings_added",
				    json_integer(d->warnings_added));
	if (d->commits != NULL) {
		json_t *a = json_array();

		for (guint i = 0; i < d->commits->len; i++) {
			const PgateCiDocCommit *c = d->commits->pdata[i];
			json_t *x = json_object();

			set_str(x, "commit", c->commit);
			set_str(x, "verdict",
				pgate_verdict_name(c->verdict));
			set_str(x, "reason", c->reason);
			json_array_append_new(a, x);
		}
		json_object_set_new(o, "commits", a);
	}
	if (d->cancelled)
		json_object_set_new(o, "cancelled", json_true());
	if (d->has & PGATE_CI_DOC_FINISHED)
		json_object_set_new(o, "finished", json_integer(d->finished));
	return with_unknown(o, d->unknown);
}

char *
pgate_ci_doc_encode(const PgateCiDoc *doc)
{
	return dump(pgate_ci_doc_to_json(doc));
}

gboolean
pgate_ci_doc_put(PgateStoreTxn *txn, const PgateCiDoc *doc,
			  GError **error)
{
	g_return_val_if_fail(doc->key != NULL, FALSE);
	return put_text(txn, doc->key, pgate_ci_doc_encode(doc),
			error);
}

/* ---- SERIES/pipeline ---- */

PgateSeriesEvent *
pgate_series_event_new(gint64 at, PgateSeriesState state,
			 const char *reason)
{
	PgateSeriesEvent *e = g_new0(PgateSeriesEvent, 1);

	e->at = at;
	e->state = state;
	e->reason = g_strdup(reason);
	return e;
}

void
pgate_series_event_free(PgateSeriesEvent *e)
{
	g_free(e->reason);
	g_free(e);
}

static gpointer
event_from_json(json_t *obj)
{
	g_autoptr(json_t) rest = json_copy(obj);
	PgateSeriesEvent *e = g_new0(PgateSeriesEvent, 1);
	g_autofree char *state = NULL;

	if (!take_int(rest, "at", &e->at) ||
	    !take_str(rest, "state", FALSE, &state) ||
	    !pgate_series_state_parse(state, &e->state) ||
	    !take_str(rest, "reason", TRUE, &e->reason) ||
	    json_object_size(rest) > 0) {
		pgate_series_event_free(e);
		return NULL;
	}
	return e;
}

/* "apply": {TARGET: attempt}, each keyed by its own target */
static gboolean
take_apply_map(json_t *rest, GPtrArray **out)
{
	json_t *v = json_object_get(rest, "apply"), *x;
	g_autoptr(GPtrArray) a = NULL;
	const char *k;

	if (!json_is_object(v))
		return FALSE;
	a = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_apply_doc_free);
	json_object_foreach(v, k, x) {
		PgateApplyDoc *d = json_is_object(x)
					   ? apply_doc_from_json(x) : NULL;

		if (d != NULL)
			g_ptr_array_add(a, d);
		if (d == NULL || g_strcmp0(d->target, k) != 0)
			return FALSE;
	}
	*out = g_steal_pointer(&a);
	json_object_del(rest, "apply");
	return TRUE;
}

PgateSeriesDoc *
pgate_series_doc_new(PgateSeriesState state)
{
	PgateSeriesDoc *d = g_new0(PgateSeriesDoc, 1);

	d->state = state;
	return d;
}

void
pgate_series_doc_free(PgateSeriesDoc *doc)
{
	if (doc == NULL)
		return;
	g_free(doc->reason);
	g_clear_pointer(&doc->events, g_ptr_array_unref);
	g_clear_pointer(&doc->apply, g_ptr_array_unref);
	g_free(doc->approved_by);
	g_free(doc->rejected_by);
	if (doc->approved_msgs != NULL)
		g_array_unref(doc->approved_msgs);
	g_free(doc->decision_note);
	json_decref(doc->unknown);
	g_free(doc);
}

void
pgate_series_doc_approve(PgateSeriesDoc *d, const char *who, gint64 upto)
{
	d->approved = TRUE;
	g_free(d->approved_by);
	d->approved_by = g_strdup(who);
	d->approved_upto = upto;
	if (d->approved_msgs != NULL)
		g_clear_pointer(&d->approved_msgs, g_array_unref);
	d->has |= PGATE_SERIES_DOC_APPROVED_BY |
		  PGATE_SERIES_DOC_APPROVED_UPTO;
}

PgateSeriesDoc *
pgate_series_doc_decode(GBytes *val, GError **error)
{
	g_autoptr(json_t) j = parse(val, error);
	g_autoptr(json_t) rest = NULL;
	g_autoptr(PgateSeriesDoc) d = NULL;

	if (j == NULL)
		return NULL;
	rest = json_copy(j);
	d = pgate_series_doc_new(PGATE_SERIES_NEW);
	if (!json_is_string(json_object_get(rest, "state")) ||
	    !pgate_series_state_parse(
		    json_string_value(json_object_get(rest, "state")),
		    &d->state)) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "has no known pipeline state");
		return NULL;
	}
	json_object_del(rest, "state");
	if (take_int(rest, "since", &d->since))
		d->has |= PGATE_SERIES_DOC_SINCE;
	if (take_str(rest, "reason", TRUE, &d->reason))
		d->has |= PGATE_SERIES_DOC_REASON;
	take_array(rest, "events", event_from_json, (GDestroyNotify)pgate_series_event_free,
		   &d->events);
	take_apply_map(rest, &d->apply);
	take_true(rest, "approved", &d->approved);
	if (take_str(rest, "approved_by", TRUE, &d->approved_by))
		d->has |= PGATE_SERIES_DOC_APPROVED_BY;
	if (take_int(rest, "approved_upto", &d->approved_upto))
		d->has |= PGATE_SERIES_DOC_APPROVED_UPTO;
	take_nums(rest, "approved_messages", &d->approved_msgs);
	take_true(rest, "rejected", &d->rejected);
	if (take_str(rest, "rejected_by", TRUE, &d->rejected_by))
		d->has |= PGATE_SERIES_DOC_REJECTED_BY;
	take_str(rest, "decision_note", FALSE, &d->decision_note);
	if (take_int(rest, "decided", &d->decided))
		d->has |= PGATE_SERIES_DOC_DECIDED;
	d->unknown = leftover(rest);
	return g_steal_pointer(&d);
}

json_t *
pgate_series_doc_to_json(const PgateSeriesDoc *d)
{
	json_t *o = json_object();

	set_str(o, "state", pgate_series_state_name(d->state));
	if (d->has & PGATE_SERIES_DOC_SINCE)
		json_object_set_new(o, "since", json_integer(d->since));
	if (d->has & PGATE_SERIES_DOC_REASON)
		set_str(o, "reason", d->reason);
	if (d->events != NULL) {
		json_t *a = json_array();

		for (guint i = 0; i < d->events->len; i++) {
			const PgateSeriesEvent *e = d->events->pdata[i];
			json_t *x = json_object();

			json_object_set_new(x, "at", json_integer(e->at));
			set_str(x, "state", pgate_series_state_name(e->state));
			set_str(x, "reason", e->reason);
			json_array_append_new(a, x);
		}
		json_object_set_new(o, "events", a);
	}
	if (d->apply != NULL) {
		json_t *m = json_object();

		for (guint i = 0; i < d->apply->len; i++) {
			const PgateApplyDoc *a = d->apply->pdata[i];

			if (a->target != NULL)
				json_object_set_new(
					m, a->target,
					pgate_apply_doc_to_json(a));
		}
		json_object_set_new(o, "apply", m);
	}
	if (d->approved)
		json_object_set_new(o, "approved", json_true());
	if (d->has & PGATE_SERIES_DOC_APPROVED_BY)
		set_str(o, "approved_by", d->approved_by);
	if (d->has & PGATE_SERIES_DOC_APPROVED_UPTO)
		json_object_set_new(o, "approved_upto",
				    json_integer(d->approved_upto));
	if (d->approved_msgs != NULL) {
		json_t *a = json_array();

		for (guint i = 0; i < d->approved_msgs->len; i++)
			json_array_append_new(a, json_integer((json_int_t)
				g_array_index(d->approved_msgs, guint64, i)));
		json_object_set_new(o, "approved_messages", a);
	}
	if (d->rejected)
		json_object_set_new(o, "rejected", json_true());
	if (d->has & PGATE_SERIES_DOC_REJECTED_BY)
		set_str(o, "rejected_by", d->rejected_by);
	set_str_if(o, "decision_note", d->decision_note);
	if (d->has & PGATE_SERIES_DOC_DECIDED)
		json_object_set_new(o, "decided", json_integer(d->decided));
	return with_unknown(o, d->unknown);
}

char *
pgate_series_doc_encode(const PgateSeriesDoc *doc)
{
	return dump(pgate_series_doc_to_json(doc));
}

PgateSeriesDoc *
pgate_series_doc_get(PgateStoreTxn *txn, const char *sid, GError **error)
{
	g_autofree char *key = pgate_state_key(sid, "pipeline", NULL);
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);
	PgateSeriesDoc *d;

	if (b == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	d = pgate_series_doc_decode(b, &local);
	if (d == NULL)
		g_propagate_prefixed_error(error, g_steal_pointer(&local),
					   "stage state %s ", key);
	return d;
}

gboolean
pgate_series_doc_put(PgateStoreTxn *txn, const char *sid,
		       const PgateSeriesDoc *doc, GError **error)
{
	g_autofree char *key = pgate_state_key(sid, "pipeline", NULL);

	if (!put_text(txn, key, pgate_series_doc_encode(doc), error))
		return FALSE;
	/* a decision (patchgate approve or reject) not acted on yet: the
	 * next pass visits the series, which a series awaiting approval is
	 * not otherwise (pipeline.c, the active set) */
	if ((doc->approved || doc->rejected) &&
	    (doc->state == PGATE_SERIES_AWAITING_APPROVAL ||
	     doc->state == PGATE_SERIES_NEW ||
	     doc->state == PGATE_SERIES_WAITING)) {
		const char *at = strchr(sid, '@');
		g_autofree char *own = at ? g_strndup(sid, (gsize)(at - sid))
					  : g_strdup(sid);

		return pgate_store_active_mark(txn, own, error);
	}
	return TRUE;
}

/* ---- every document of a series ---- */

void
pgate_series_docs_free(PgateSeriesDocs *s)
{
	if (s == NULL)
		return;
	pgate_series_doc_free(s->pipeline);
	g_ptr_array_unref(s->apply);
	g_ptr_array_unref(s->ci);
	g_free(s);
}

PgateSeriesDocs *
pgate_series_docs_read(PgateStoreTxn *txn, const char *sid,
				 GError **error)
{
	g_autofree char *prefix = g_strdup_printf("%s/", sid);
	g_autoptr(GPtrArray) v = pgate_store_table_scan(
		txn, PGATE_STORE_TABLE_STAGE, prefix, error);
	g_autoptr(PgateSeriesDocs) s = NULL;

	if (v == NULL)
		return NULL;
	s = g_new0(PgateSeriesDocs, 1);
	s->apply = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_apply_doc_free);
	s->ci = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_doc_free);
	for (guint i = 0; i < v->len; i++) {
		const PgateStoreEntry *e = v->pdata[i];
		const char *rest = e->key + strlen(prefix);
		g_autoptr(GError) local = NULL;
		gpointer d = NULL;

		if (strcmp(rest, "pipeline") == 0) {
			pgate_series_doc_free(s->pipeline);
			d = s->pipeline = pgate_series_doc_decode(e->val,
								    &local);
		} else if (g_str_has_prefix(rest, "apply/")) {
			d = pgate_apply_doc_decode(e->val, &local);
			if (d != NULL)
				g_ptr_array_add(s->apply, d);
		} else if (g_str_has_prefix(rest, "ci/")) {
			d = pgate_ci_doc_decode(e->val, e->key, &local);
			if (d != NULL)
				g_ptr_array_add(s->ci, d);
		} else {
			continue;
		}
		if (d == NULL)
			g_debug("series=%s %s left out: %s", sid, e->key,
				local->message);
	}
	return g_steal_pointer(&s);
}

PgateApplyDoc *
pgate_series_docs_apply(const PgateSeriesDocs *s,
				  const char *target)
{
	for (guint i = 0; i < s->apply->len; i++) {
		PgateApplyDoc *d = s->apply->pdata[i];

		if (g_strcmp0(d->target, target) == 0)
			return d;
	}
	return NULL;
}

/* ---- raw documents ---- */

char *
pgate_state_key(const char *series_id, const char *stage, const char *sub)
{
	if (sub == NULL)
		return g_strdup_printf("%s/%s", series_id, stage);
	return g_strdup_printf("%s/%s/%s", series_id, stage, sub);
}

json_t *
pgate_state_decode(GBytes *val, json_error_t *jerr)
{
	gsize len;
	const char *d = g_bytes_get_data(val, &len);
	json_t *j = json_loadb(d, len, 0, jerr);

	if (j != NULL && !json_is_object(j))
		g_clear_pointer(&j, json_decref);
	return j;
}

json_t *
pgate_state_get(PgateStoreTxn *txn, const char *key, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);
	json_error_t jerr = { 0 };
	json_t *j;

	if (b == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			return NULL;
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	j = pgate_state_decode(b, &jerr);
	if (j == NULL) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID,
			    "stage state %s is not a JSON object: %s", key,
			    jerr.text);
		return NULL;
	}
	return j;
}

gboolean
pgate_state_put(PgateStoreTxn *txn, const char *key, json_t *doc,
		GError **error)
{
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	char *copy = g_strdup(text);

	free(text);
	return put_text(txn, key, copy, error);
}

json_t *
pgate_state_scan(PgateStoreTxn *txn, const char *prefix, GError **error)
{
	g_autoptr(GPtrArray) v = pgate_store_table_scan(
		txn, PGATE_STORE_TABLE_STAGE, prefix, error);
	json_t *out;

	if (v == NULL)
		return NULL;
	out = json_object();
	for (guint i = 0; i < v->len; i++) {
		PgateStoreEntry *e = v->pdata[i];
		json_t *j = pgate_state_decode(e->val, NULL);

		if (j != NULL)
			json_object_set_new(out, e->key + strlen(prefix), j);
	}
	return out;
}

const char *
pgate_state_str(json_t *doc, const char *field)
{
	json_t *v = doc ? json_object_get(doc, field) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

void
pgate_state_set_str(json_t *doc, const char *field, const char *value)
{
	json_object_set_new(doc, field, pgate_json_str_or_null(value));
}

GPtrArray *
pgate_state_entries(PgateStore *store, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	if (txn == NULL)
		return NULL;
	return pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, NULL,
				      error);
}

char *
pgate_project_split_state_id(const char *state_id, const char **project)
{
	const char *at = strchr(state_id, '@');

	*project = at ? at + 1 : NULL;
	return at ? g_strndup(state_id, (gsize)(at - state_id))
		  : g_strdup(state_id);
}

const char *
pgate_project_of_state_id(const char *state_id)
{
	const char *at = state_id ? strchr(state_id, '@') : NULL;

	return at ? at + 1 : NULL;
}
