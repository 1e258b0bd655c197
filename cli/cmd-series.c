/* cmd-series.c - patchgate series list|show */
#include "cli/cli.h"
#include "pipeline/pipeline.h"
#include "cli/projects.h"
#include "threading/threading.h"
#include "upstream/upstream.h"

#include <string.h>
#include <sysexits.h>
#include <unistd.h>

void
pgate_cli_thread_hooks(PgateThreading *thr, PgateIngestHooks *h)
{
	h->begin = pgate_threading_hook_begin;
	h->after_add = pgate_threading_hook_added;
	h->after_delete = pgate_threading_hook_deleted;
	h->before_commit = pgate_threading_hook_commit;
	h->skipped = pgate_threading_hook_skipped;
	h->payload = thr;
}

const char *
pgate_cli_thread_state(const PgateThreading *thr, gboolean deferred)
{
	if (deferred)
		return "deferred";
	if (pgate_threading_skipped(thr) != NULL)
		return "skipped";
	return pgate_threading_stale(thr) ? "stale" : "done";
}

void
pgate_cli_thread_warn(const PgateThreading *thr, const char *cmd,
		      gboolean stored)
{
	const char *why = pgate_threading_skipped(thr);

	if (why != NULL)
		fprintf(stderr, "patchgate: %s: stored without threading (%s); "
			"run 'patchgate rethread'\n", cmd, why);
	else if (stored && pgate_threading_stale(thr))
		fprintf(stderr, "patchgate: %s: the series are out of date; "
			"run 'patchgate rethread'\n", cmd);
}

void
pgate_cli_rethread_warn(guint64 unreadable, guint64 first_unreadable)
{
	if (unreadable == 1)
		fprintf(stderr, "patchgate: rethread: 1 message record does "
			"not decode and was left out (message %"
			G_GUINT64_FORMAT ")\n", first_unreadable);
	else if (unreadable > 1)
		fprintf(stderr, "patchgate: rethread: %" G_GUINT64_FORMAT
			" message records do not decode and were left out "
			"(the first: message %" G_GUINT64_FORMAT ")\n",
			unreadable, first_unreadable);
}

/* The process is about to exit when a bulk command ends: freeing @thr
 * (its link pass keeps up to 4,096 decoded series, some 300,000
 * allocations) one allocation at a time took 36 ms of a 0.9 s ingest of
 * the 20,000-message list, memory the kernel takes back at once.  It stays
 * reachable from here, so leak checkers do not count it as lost. */
static PgateThreading *kept_for_exit;

void
pgate_cli_thread_keep(PgateThreading *thr)
{
	g_clear_pointer(&kept_for_exit, pgate_threading_free);
	kept_for_exit = thr;
}

static void
warn_rethread(PgateStoreTxn *txn)
{
	if (pgate_store_rethread_needed(txn))
		fprintf(stderr, "patchgate: series: the series are out of date "
			"(after a store upgrade, 'ingest --no-thread' or a "
			"failed threading); run 'patchgate rethread'\n");
}

static gboolean	/* series list --project naming a [project P] */
list_keep(PgateStoreTxn *txn, const char *id, gpointer pr, GError **error)
{
	return pgate_cli_in_project(txn, pr, id, error);
}

static int
series_list(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, all = FALSE;
	g_autofree char *project = NULL, *since = NULL;
	g_autofree char *after = NULL, *next = NULL;
	gint limit = 0;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "all", 0, 0, G_OPTION_ARG_NONE, &all,
		  "include superseded series", NULL },
		{ "project", 0, 0, G_OPTION_ARG_STRING, &project,
		  "only series of this project ([project P]), else of this "
		  "list-id", "P" },
		{ "limit", 0, 0, G_OPTION_ARG_INT, &limit, "at most N series; "
		  "the JSON's \"next\" is the next page's cursor", "N" },
		{ "since", 0, 0, G_OPTION_ARG_STRING, &since, "only series "
		  "dated DATE or later (YYYY-MM-DD[THH:MM:SS], UTC, or "
		  "seconds)", "DATE" },
		{ "after", 0, 0, G_OPTION_ARG_STRING, &after, "only series "
		  "after this cursor (\"next\" of the page before)", "CURSOR" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GPtrArray) projects = NULL, ids = NULL;
	PgateSeriesQuery q = { 0 };
	const PgateProject *pr = NULL;

	if (!pgate_cli_parse("", "List the patch series, oldest first; "
			     "superseded ones only with --all.", entries,
			     &argc, &argv, error))
		return 0;
	q = (PgateSeriesQuery){ .all = all, .after = after, .has_since = since
				!= NULL, .limit = (guint)MAX(limit, 0) };
	if (limit < 0 || (since && !pgate_cli_parse_date(since, &q.since)) ||
	    (after && !pgate_store_series_cursor_parse(after, NULL, NULL)))
		return g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
				   "series list: --limit takes N >= 0, --since "
				   "a date, --after a cursor (DATE:ID)"), 0;
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	warn_rethread(txn);
	if (project != NULL &&
	    !pgate_cli_project_find(cli, project, &projects, &pr, error))
		return 0;
	q.keep = pr != NULL ? list_keep : NULL, q.keep_data = (gpointer)pr;
	q.project = pr != NULL ? NULL : project;
	ids = pgate_store_series_page(txn, &q, &next, error);
	return ids != NULL && pgate_cli_series_page_print(txn, ids, next, json,
							  error) ? EX_OK : 0;
}

/* One line of print_stages(): KEY: WHAT[ VERDICT][ - REASON][ (REF)][ URL] */
static void
print_stage(const char *key, const char *what, const char *verdict,
	    const char *reason, const char *ref, const char *url)
{
	printf("%s: %s%s%s%s%s", key, what ? what : "?",
	       verdict ? " " : "", verdict ? verdict : "",
	       reason ? " - " : "", reason ? reason : "");
	if (ref)
		printf(" (%s)", ref);
	if (url)
		printf(" %s", url);
	printf("\n");
}

/* A stage document of no kind known here (or one that does not decode
 * as its kind), read for the fields print_stage() shows. */
static void
print_raw_stage(const char *key, json_t *doc)
{
	const char *st = pgate_state_str(doc, "state");
	const char *status = pgate_state_str(doc, "status");
	const char *reason = pgate_state_str(doc, "reason");
	json_t *f = json_object_get(doc, "failure");

	if (f != NULL && reason == NULL)
		reason = pgate_state_str(f, "reason");
	print_stage(key, st ? st : status, pgate_state_str(doc, "verdict"),
		    reason, pgate_state_str(doc, "ref"),
		    pgate_state_str(doc, "url"));
}

/* The pipeline's view of the series, a line per stage document (@v:
 * the entries under SERIES/, whose IDs are @prefix long). */
static void
print_stages(GPtrArray *v, gsize prefix)
{
	for (guint i = 0; i < v->len; i++) {
		const PgateStoreEntry *e = v->pdata[i];
		const char *key = e->key + prefix;
		g_autoptr(json_t) raw = pgate_state_decode(e->val, NULL);

		if (raw == NULL || strcmp(key, "upstream") == 0)
			continue;	/* upstream: print_upstream() */
		if (strcmp(key, "patchwork") == 0) {
			const char *mid;
			json_t *id;

			printf("patchwork:");
			json_object_foreach(json_object_get(raw, "patches"), mid, id)
				printf(" %" JSON_INTEGER_FORMAT, json_integer_value(id));
			printf(" (patch ids)\n");
			continue;
		}
		if (strcmp(key, "pipeline") == 0) {
			g_autoptr(PgateSeriesDoc) d =
				pgate_series_doc_decode(e->val, NULL);

			if (d != NULL) {
				print_stage(key, pgate_series_state_name(d->state),
					    NULL, d->reason, NULL, NULL);
				continue;
			}
		} else if (g_str_has_prefix(key, "apply/")) {
			g_autoptr(PgateApplyDoc) d =
				pgate_apply_doc_decode(e->val, NULL);

			if (d != NULL) {
				print_stage(key, (d->has & PGATE_APPLY_DOC_STATUS)
					    ? pgate_apply_status_name(d->status)
					    : NULL, NULL,
					    d->failure ? d->failure->reason : NULL,
					    d->ref, NULL);
				if (d->route != NULL)	/* routing: the rule */
					printf("  target chosen by rule %s: %s\n",
					       d->route, d->route_why ?
					       d->route_why : "");
				continue;
			}
		} else if (g_str_has_prefix(key, "ci/")) {
			g_autoptr(PgateCiDoc) d =
				pgate_ci_doc_decode(e->val, e->key, NULL);

			if (d != NULL) {
				print_stage(key, pgate_job_state_name(d->state),
					    (d->has & PGATE_CI_DOC_VERDICT)
					    ? pgate_verdict_name(d->verdict)
					    : NULL, d->reason, NULL, d->url);
				continue;
			}
		}
		print_raw_stage(key, raw);
	}
}

/* What merge detection found (SERIES/upstream), explained: each match,
 * what it beat, and the "possibly merged" hints. */
static gboolean
print_upstream(PgateStoreTxn *txn, const PgateSeriesRec *r, GError **error)
{
	g_autoptr(GPtrArray) lines = pgate_upstream_explain(txn, r, error);

	if (lines == NULL)
		return FALSE;
	if (lines->len > 0)
		printf("upstream:\n");
	for (guint i = 0; i < lines->len; i++)
		printf("  %s\n", (char *)lines->pdata[i]);
	return TRUE;
}

static int
series_show(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(PgateSeriesRec) r = NULL;
	g_autofree char *prefix = NULL;
	g_autoptr(GPtrArray) stages = NULL;
	g_autofree char *why = NULL;
	json_t *ex = NULL;

	if (!pgate_cli_parse("ID", "Show one series and why it is linked to "
			     "its other versions.", entries, &argc, &argv,
			     error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "series show takes one series ID");
		return 0;
	}
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	r = pgate_store_series_get(txn, argv[1], error);
	if (r == NULL)
		return 0;
	prefix = g_strdup_printf("%s/", r->id);
	stages = pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, prefix,
					error);
	if (stages == NULL ||
	    (ex = pgate_threading_series_explain(txn, r, error)) == NULL)
		return 0;
	if (json) {
		json_t *arr = json_array();
		json_t *sj = pgate_threading_series_json(txn, r);
		json_t *docs = json_object();

		json_object_set_new(sj, "explain", ex);

		/* what the later stages did, as stored: {"pipeline": {...},
		 * "apply/master": {...}, "ci/master/build": {...}, ...} */
		for (guint i = 0; i < stages->len; i++) {
			const PgateStoreEntry *e = stages->pdata[i];
			json_t *doc = pgate_state_decode(e->val, NULL);

			if (doc != NULL)
				json_object_set_new(docs, e->key + strlen(prefix),
						    doc);
		}
		json_object_set_new(sj, "stages", docs);
		json_array_append_new(arr, sj);
		if (!pgate_cli_series_projects(cli, txn, r, sj, NULL, error)) {
			json_decref(arr);
			return 0;
		}
		pgate_cli_json_print(json_pack("{s:i,s:o}", "format_version", 1,
					       "series", arr));
		return EX_OK;
	}
	printf("series %s: %s\n", r->id, r->name);
	printf("submitter: %s <%s>\nproject: %s\nversion: %u\n"
	       "received: %u of %u%s\n",
	       r->submitter_name ? r->submitter_name : "", r->submitter_email,
	       r->project, r->version, r->patches->len, r->total,
	       (r->flags & PGATE_SERIES_FLAG_COMPLETE) ? " (complete)" : "");
	if (r->cover)
		printf("cover: %s\n", r->cover);
	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];

		printf("  %u: %s <%s>%s%s\n", p->number, p->subject, p->msgid,
		       p->replaces ? " replaces " : "",
		       p->replaces ? p->replaces : "");
		for (guint j = 0; j < p->trailers->len; j++) {
			const PgateTrailer *t = p->trailers->pdata[j];

			printf("     %s: %s\n", t->name, t->value);
		}
	}
	why = pgate_threading_explain_text(ex);	/* "supersedes ..." */
	json_decref(ex);
	printf("%s", why);
	if (r->resend_of)
		printf("resend of %s\n", r->resend_of);
	if (r->superseded_by) {
		g_autoptr(PgateSeriesRec) o = pgate_store_series_get(
			txn, r->superseded_by, NULL);

		printf("superseded by %s (v%u) — rule %s\n", r->superseded_by,
		       o ? o->version : 0, o ? o->link_reason : "?");
	}
	if (r->change_id)
		printf("change-id: %s\n", r->change_id);
	if (r->base_commit)
		printf("base-commit: %s\n", r->base_commit);
	print_stages(stages, strlen(prefix));
	if (!print_upstream(txn, r, error) ||
	    !pgate_cli_series_projects(cli, txn, r, NULL, print_stages, error))
		return 0;
	return EX_OK;
}

int
cmd_series(PgateCli *cli, int argc, char **argv, GError **error)
{
	static const char usage[] = "patchgate series list [--json] [--all] "
		"[--project P] [--limit N] [--since DATE] [--after CURSOR] "
		"| show ID [--json] | mbox ID [--trailers] "
		"[--version N] [--cover] [-o FILE]";

	if (argc >= 2 && strcmp(argv[1], "list") == 0)
		return series_list(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "show") == 0)
		return series_show(cli, argc - 1, argv + 1, error);
#ifdef PGATE_FULL
	if (argc >= 2 && strcmp(argv[1], "mbox") == 0)
		return cmd_series_mbox(cli, argc - 1, argv + 1, error);
#endif
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s\n\nLook at the patch series in the store.\n",
		       usage);
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE, "usage: %s", usage);
	return 0;
}
