/* cmd-status.c - patchgate status [--json]: counts of series by pipeline
 * state, the CI queue, the oldest waiting series, the outbox, the last
 * error of each part, and whether threading is up to date. */
#include "cli/cli.h"
#include "pipeline/pipeline.h"
#include "common/json.h"
#include "threading/threading.h"

#include <string.h>
#include <sysexits.h>

/* {"state": "ok", "out-of-date" (a rethread was asked for) or "failed"
 * (threading failed for good: the daemon rethreads), "reason",
 * "rethread_at": the last message a rethread in progress threaded, or
 * null} */
static json_t *
threading_json(PgateStoreTxn *txn)
{
	g_autofree char *why = pgate_store_threading_failed(txn);
	const char *state = "ok";

	guint64 at = pgate_threading_rethread_at(txn);

	if (why != NULL)
		state = "failed";
	else if (pgate_store_rethread_needed(txn))
		state = "out-of-date";
	return json_pack("{s:s,s:o,s:o}", "state", state, "reason",
			 pgate_json_str_or_null(why), "rethread_at",
			 at > 0 ? json_integer((json_int_t)at) : json_null());
}

/* Whether state ID @id (the part of a stage key before its first '/',
 * or an outbox entry's series; @n bytes) is project @project's (%NULL:
 * the implicit project's). */
static gboolean
of_project(const char *id, gsize n, const char *project)
{
	g_autofree char *sid = g_strndup(id, n);

	return g_strcmp0(pgate_project_of_state_id(sid), project) == 0;
}

/* Counts CI job document @e (of the series its key's first @idlen bytes
 * name) in *@queued or *@running, and records its error, if any, in
 * @errors under its backend. */
static void
count_ci_doc(const PgateStoreEntry *e, gsize idlen, json_t *errors,
	     guint *queued, guint *running)
{
	g_autoptr(PgateCiDoc) doc = pgate_ci_doc_decode(e->val, e->key, NULL);

	if (doc == NULL)
		return;
	if (doc->state == PGATE_JOB_QUEUED ||
	    doc->state == PGATE_JOB_SUBMITTING)
		(*queued)++;
	else if (doc->state == PGATE_JOB_RUNNING)
		(*running)++;
	/* "reason" is there with the verdict (the poll that
	 * gave it wrote both) */
	if ((doc->has & PGATE_CI_DOC_VERDICT) &&
	    doc->verdict == PGATE_VERDICT_ERROR &&
	    (doc->has & PGATE_CI_DOC_REASON))
		json_object_set_new(errors, doc->backend
				    ? doc->backend : "ci",
				    json_pack("{s:s%,s:o}", "series", e->key,
					      (size_t)idlen,
					      "reason", pgate_json_str_or_null(doc->reason)));
}

/* Counts the reports of @outbox (with @by_project, only @project's) in
 * *@failed or *@pending, and records each one's last error in @errors
 * under its destination. */
static void
count_outbox(GPtrArray *outbox, gboolean by_project, const char *project,
	     json_t *errors, guint *failed, guint *pending)
{
	for (guint i = 0; i < outbox->len; i++) {
		PgateStoreEntry *e = outbox->pdata[i];
		json_t *doc = pgate_state_decode(e->val, NULL);

		if (doc == NULL)
			continue;
		if (by_project) {
			const char *sid = pgate_state_str(doc, "series");

			if (!of_project(sid ? sid : "",
					sid ? strlen(sid) : 0, project)) {
				json_decref(doc);
				continue;
			}
		}
		if (json_is_true(json_object_get(doc, "failed")))
			(*failed)++;
		else
			(*pending)++;
		if (pgate_state_str(doc, "last_error"))
			json_object_set_new(errors, pgate_state_str(doc, "dest"),
					    json_pack("{s:s,s:o}", "report", e->key,
						      "reason", json_incref(json_object_get(doc, "last_error"))));
		json_decref(doc);
	}
}

static json_t *status_json(PgateStore *store, gboolean by_project,
			   const char *project, GError **error);

json_t *
pgate_cli_status_json(PgateStore *store, GError **error)
{
	return status_json(store, FALSE, NULL, error);
}

/* With @by_project, only the documents and reports of @project's
 * series (docs/config.md, "Projects"), and "series" counts the series
 * it judged. */
static json_t *
status_json(PgateStore *store, gboolean by_project, const char *project,
	    GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GPtrArray) stage = NULL, outbox = NULL;
	json_t *counts, *out, *oldest = json_null(), *errors;
	gint64 oldest_since = G_MAXINT64;
	guint queued = 0, running = 0, series = 0;
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GError) local = NULL;

	if (txn == NULL)
		return NULL;
	stage = pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, NULL, error);
	if (stage == NULL)
		return NULL;
	outbox = pgate_store_table_scan(txn, PGATE_STORE_TABLE_OUTBOX, NULL, error);
	if (outbox == NULL)
		return NULL;
	counts = json_object();
	errors = json_object();
	/* merge detection: SERIES/upstream's matches, by series */
	g_autoptr(GHashTable) matched = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) merged = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	json_t *partial = json_array();
	for (guint i = 0; i < stage->len; i++) {
		PgateStoreEntry *e = stage->pdata[i];
		const char *slash = strchr(e->key, '/');

		if (slash == NULL)
			continue;
		if (by_project &&
		    !of_project(e->key, (gsize)(slash - e->key), project))
			continue;
		if (strcmp(slash + 1, "pipeline") == 0) {
			if (by_project)
				series++;
			g_autoptr(PgateSeriesDoc) doc =
				pgate_series_doc_decode(e->val, NULL);
			const char *st;
			json_int_t n;
			gint64 since;

			if (doc == NULL)
				continue;
			if (doc->state == PGATE_SERIES_MERGED ||
			    doc->state == PGATE_SERIES_SUPERSEDED_BY_MERGE)
				g_hash_table_add(merged, g_strndup(
					e->key, (gsize)(slash - e->key)));
			st = pgate_series_state_name(doc->state);
			n = json_integer_value(json_object_get(counts, st));
			since = (doc->has & PGATE_SERIES_DOC_SINCE) ? doc->since : 0;
			json_object_set_new(counts, st, json_integer(n + 1));
			if ((doc->state == PGATE_SERIES_AWAITING_APPROVAL ||
			     doc->state == PGATE_SERIES_WAITING ||
			     doc->state == PGATE_SERIES_TESTING) &&
			    since < oldest_since) {
				oldest_since = since;
				json_decref(oldest);
				oldest = json_pack("{s:s%,s:s,s:I}", "series", e->key,
						   (size_t)(slash - e->key),
						   "state", st, "since",
						   (json_int_t)since);
			}
		} else if (strcmp(slash + 1, "upstream") == 0) {
			g_autoptr(json_t) doc = pgate_state_decode(e->val, NULL);
			gsize n = json_object_size(json_object_get(doc,
								   "patches"));

			if (n > 0)
				g_hash_table_insert(matched, g_strndup(
					e->key, (gsize)(slash - e->key)),
					GSIZE_TO_POINTER(n));
		} else if (g_str_has_prefix(slash + 1, "ci/")) {
			count_ci_doc(e, (gsize)(slash - e->key), errors,
				     &queued, &running);
		}
	}
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &local)) {
		gsize k = GPOINTER_TO_SIZE(g_hash_table_lookup(matched, s->id));
		gsize of = MAX(s->total, s->patches->len);

		if (!by_project)
			series++;
		if (k > 0 && k < of && !g_hash_table_contains(merged, s->id))
			json_array_append_new(partial, json_pack(
				"{s:s,s:I,s:I}", "series", s->id, "matched",
				(json_int_t)k, "of", (json_int_t)of));
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	{
		guint failed = 0, pending = 0;

		count_outbox(outbox, by_project, project, errors, &failed,
			     &pending);
		out = json_pack("{s:i,s:i,s:o,s:{s:i,s:i},s:o,s:{s:i,s:i},s:o}",
				"format_version", 1, "series", (int)series,
				"states", counts, "ci", "queued", (int)queued,
				"running", (int)running, "oldest_waiting", oldest,
				"outbox", "pending", (int)(by_project ? pending
							     : outbox->len - failed),
				"failed", (int)failed, "last_errors", errors);
	}
	if (out != NULL)
		json_object_set_new(out, "partially_merged", partial);
	else
		json_decref(partial);
	if (out != NULL)
		json_object_set_new(out, "threading", threading_json(txn));
	return out;
}

int
cmd_status(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	g_autofree char *project = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "project", 0, 0, G_OPTION_ARG_STRING, &project,
		  "only this project's series and reports ([project P])", "P" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	json_t *j, *v;
	const char *k;

	if (!pgate_cli_parse("", "Show how many series are in each pipeline "
			     "state, the CI queue, the oldest waiting series, "
			     "the outbox, the last errors and whether the "
			     "series are up to date.", entries, &argc,
			     &argv, error))
		return 0;
	if (project != NULL) {
		g_autofree char *group = g_strdup_printf("project %s", project);

		if (!g_key_file_has_group(cli->config, group)) {
			g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
				    "--project: no [project %s] in the "
				    "configuration", project);
			return 0;
		}
	}
	j = status_json(cli->store, project != NULL, project, error);
	if (j == NULL)
		return 0;
	if (project != NULL)
		json_object_set_new(j, "project", json_string(project));
	if (json) {
		pgate_cli_json_print(j);
		return EX_OK;
	}
	printf("series: %d\n", (int)json_integer_value(json_object_get(j, "series")));
	json_object_foreach(json_object_get(j, "states"), k, v)
		printf("  %-18s %d\n", k, (int)json_integer_value(v));
	v = json_object_get(j, "partially_merged");
	for (gsize i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);

		printf("%s %s: %d of %d patches merged upstream\n",
		       i == 0 ? "partially merged:" : "                 ",
		       json_string_value(json_object_get(e, "series")),
		       (int)json_integer_value(json_object_get(e, "matched")),
		       (int)json_integer_value(json_object_get(e, "of")));
	}
	v = json_object_get(j, "ci");
	printf("ci: %d queued, %d running\n",
	       (int)json_integer_value(json_object_get(v, "queued")),
	       (int)json_integer_value(json_object_get(v, "running")));
	v = json_object_get(j, "oldest_waiting");
	if (json_is_object(v)) {
		g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(
			json_integer_value(json_object_get(v, "since")));
		g_autofree char *ts = t ? g_date_time_format_iso8601(t) : NULL;

		printf("oldest waiting: %s (%s since %s)\n",
		       json_string_value(json_object_get(v, "series")),
		       json_string_value(json_object_get(v, "state")),
		       ts ? ts : "?");
	}
	v = json_object_get(j, "outbox");
	printf("outbox: %d pending, %d failed\n",
	       (int)json_integer_value(json_object_get(v, "pending")),
	       (int)json_integer_value(json_object_get(v, "failed")));
	if (json_integer_value(json_object_get(v, "failed")) > 0)
		printf("  failed reports are not tried again by 'run' or "
		       "'outbox send': once their cause is fixed, 'patchgate "
		       "outbox send --all' sends them\n");
	json_object_foreach(json_object_get(j, "last_errors"), k, v)
		printf("last error (%s): %s\n", k,
		       json_string_value(json_object_get(v, "reason")));
	v = json_object_get(j, "threading");
	k = json_string_value(json_object_get(v, "state"));
	if (g_strcmp0(k, "failed") == 0)
		printf("threading: failed (%s); the daemon rethreads, or run "
		       "'patchgate rethread'\n",
		       json_string_value(json_object_get(v, "reason")));
	else if (g_strcmp0(k, "out-of-date") == 0)
		printf("threading: out of date; run 'patchgate rethread'\n");
	else
		printf("threading: ok\n");
	if (json_integer_value(json_object_get(v, "rethread_at")) > 0)
		printf("threading: a rethread is under way, up to message %"
		       JSON_INTEGER_FORMAT " (running, or stopped: 'patchgate "
		       "rethread' goes on from there)\n",
		       json_integer_value(json_object_get(v, "rethread_at")));
	json_decref(j);
	return EX_OK;
}
