/* test-pipeline.c - the pipeline's passes, driven through every state
 * transition of docs/pipeline.md with a fake CI backend (harness.c,
 * behind ci.h's PgateCiBackendClass) and a fake report sink (the
 * pipeline's queue_check and queue_mail hooks), on a real store and a
 * real repository; and the stage documents' codec (state.c), byte for
 * byte against documents the JSON-only pipeline wrote.
 *
 * The transitions (docs/pipeline.md, "States"), and the test of each:
 *
 *   new -> waiting                   /pipeline/wait/waiting-then-incomplete
 *   new -> incomplete                /pipeline/wait/incomplete-then-complete
 *   waiting -> incomplete            /pipeline/wait/waiting-then-incomplete
 *   waiting -> testing (complete)    /pipeline/wait/waiting-then-complete
 *   incomplete -> testing (the missing patches came)
 *                                    /pipeline/wait/incomplete-then-complete
 *   incomplete -> testing (a partial re-roll judged before its link to
 *     the older version existed)     /pipeline/race/reroll-before-link
 *   new -> awaiting-approval         /pipeline/trust/approve
 *   awaiting-approval -> testing (patchgate approve)
 *                                    /pipeline/trust/approve
 *   awaiting-approval -> rejected (patchgate reject)
 *                                    /pipeline/trust/reject
 *   awaiting-approval -> testing (an approving reply)
 *                                    /pipeline/trust/reply-approve
 *   awaiting-approval -> rejected (a rejecting reply)
 *                                    /pipeline/trust/reply-reject
 *   waiting -> (approved) -> awaiting-approval: a patch that came after
 *     the approval is not covered by it (issue #41); approved again ->
 *     testing                        /pipeline/race/approve-while-incomplete
 *   new -> skipped (pull request)    /pipeline/skip/pull
 *   new -> skipped (no [apply])      /pipeline/skip/no-apply
 *   new -> skipped (over max_patches) /pipeline/skip/max-patches
 *   new -> apply-failed              /pipeline/apply/failed
 *   new -> new (the repository is not there: a configuration error,
 *     nothing reported; fixed, it applies) /pipeline/apply/no-repo
 *   new -> done (no [ci])            /pipeline/apply/no-ci
 *   new -> testing                   /pipeline/ci/done
 *   testing -> testing (jobs running: polled again)
 *                                    /pipeline/ci/done
 *   testing -> done                  /pipeline/ci/done, /pipeline/ci/per-patch
 *   testing -> testing (a job lost, or stored before its submission:
 *     submitted again)               /pipeline/ci/resubmit
 *   testing -> superseded (a newer version while a job runs: cancelled)
 *                                    /pipeline/race/supersede-while-running
 *   new -> superseded (the newer version came before the first pass)
 *                                    /pipeline/supersede/before-judged
 *   waiting -> superseded            /pipeline/supersede/waiting
 *   awaiting-approval -> superseded  /pipeline/supersede/awaiting-approval
 *   testing -> superseded, the job done but not yet reported
 *                                    /pipeline/supersede/after-the-build
 *   final states stay (done, superseded later; rejected and skipped, a
 *     second pass)                   /pipeline/supersede/final-stays
 *   any -> (dropped): the state of a series ID that threading no longer
 *     has (a late cover) is removed, its jobs cancelled, and the series
 *     judged afresh under its new ID /pipeline/race/late-cover-drops-orphan
 */
#include "harness.h"
#include "pipeline/pipeline-private.h"
#include "common/json.h"

#include <string.h>

/* ---- the fixture: a store, a repository, a pipeline with a fake CI
 * backend and a fake report sink ---- */

typedef struct {
	PtEnv e;
	GKeyFile *kf;
	PgatePipeline p;
	PtCi *ci;            /* p.ci */
	GPtrArray *sink;     /* "check SID CONTEXT STATE: DESCRIPTION",
			      * "mail SID STATE", in queuing order */
	GPtrArray *log;      /* "SID WHAT" */
	gint64 now;
} Fx;

#define ALICE "Alice <alice@example.org>"
#define KERNEL "Kees <kees@kernel.org>"
#define MAINT "Maint <maint@example.org>"

static Fx *
fx_of(PgatePipeline *p)
{
	return (Fx *)(gpointer)((char *)p - G_STRUCT_OFFSET(Fx, p));
}

/* the fake report sink: what the move queued, in its transaction */
static gboolean
sink_check(PgateStoreTxn *txn, PgatePipeline *p, const PgateSeriesRec *rec,
	   const char *context, const char *state, const char *url,
	   const char *description, json_t *per_patch, GError **error)
{
	Fx *fx = fx_of(p);

	(void)txn;
	(void)url;
	(void)error;
	g_ptr_array_add(fx->sink, g_strdup_printf("check %s %s %s: %s",
						  rec->id, context, state,
						  description));
	if (per_patch != NULL) {
		const char *msgid;
		json_t *v;

		json_object_foreach(per_patch, msgid, v)
			g_ptr_array_add(fx->sink, g_strdup_printf(
				"patch %s %s %s: %s", rec->id, msgid,
				json_string_value(json_object_get(v, "state")),
				json_string_value(json_object_get(v, "description"))));
	}
	return TRUE;
}

static gboolean
sink_mail(PgateStoreTxn *txn, PgatePipeline *p, const PgateSeriesRec *rec,
	  const PgateSeriesDoc *doc, GError **error)
{
	(void)txn;
	(void)error;
	g_ptr_array_add(fx_of(p)->sink, g_strdup_printf(
		"mail %s %s", rec->id, pgate_series_state_name(doc->state)));
	return TRUE;
}

static void
log_event(gpointer data, const char *sid, const char *what, const char *detail)
{
	Fx *fx = data;

	(void)detail;
	g_ptr_array_add(fx->log, g_strdup_printf("%s %s", sid, what));
}

/* @data: (nullable) configuration beside the defaults below (a group
 * given again replaces theirs key by key) */
static void
fx_setup(Fx *fx, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *conf = NULL;

	pt_env_open(&fx->e);
	fx->now = g_get_real_time() / G_USEC_PER_SEC;
	conf = g_strdup_printf(
		"[apply]\nrepo=%s\nbranches=master\ncommitter_name=CI\n"
		"committer_email=ci@example.org\n"
		"[trust]\ntrusted=*@example.org;*@kernel.org\n"
		"[pipeline]\nwait_complete=0\n"
		"[ci]\nbackend=local\njob=build\n[ci.local]\ncommands=true\n",
		fx->e.repo);
	fx->kf = g_key_file_new();
	g_assert_true(g_key_file_load_from_data(fx->kf, conf, -1, 0, &error));
	if (data != NULL) {
		g_autoptr(GKeyFile) more = g_key_file_new();
		g_auto(GStrv) groups = NULL;

		g_assert_true(g_key_file_load_from_data(more, data, -1, 0, &error));
		groups = g_key_file_get_groups(more, NULL);
		for (guint i = 0; groups[i]; i++) {
			g_auto(GStrv) keys = g_key_file_get_keys(more, groups[i],
								 NULL, NULL);

			for (guint k = 0; keys[k]; k++) {
				g_autofree char *v = g_key_file_get_value(
					more, groups[i], keys[k], NULL);

				g_key_file_set_value(fx->kf, groups[i], keys[k], v);
			}
		}
		if (g_key_file_has_key(more, "apply", "enabled", NULL))
			g_key_file_remove_group(fx->kf, "apply", NULL);
		if (g_key_file_has_key(more, "ci", "enabled", NULL))
			g_key_file_remove_group(fx->kf, "ci.local", NULL);
	}
	memset(&fx->p, 0, sizeof fx->p);
	fx->p.store = fx->e.store;
	fx->p.kf = fx->kf;
	fx->p.state_dir = fx->e.state_dir;
	g_assert_true(pgate_pipeline_config_load(fx->kf, &fx->p.cfg, &error));
	g_assert_true(pgate_pipeline_apply_config_load(fx->kf, &fx->p.apply,
						       &error));
	g_assert_true(pgate_pipeline_ci_config_load(fx->kf, &fx->p.ci_cfg,
						    &error));
	g_assert_no_error(error);
	fx->ci = pt_ci_new();
	fx->p.ci = &fx->ci->parent;
	fx->p.queue_checks = TRUE;
	fx->p.queue_check = sink_check;
	fx->p.queue_mail = sink_mail;
	fx->p.log = log_event;
	fx->p.log_data = fx;
	fx->sink = g_ptr_array_new_with_free_func(g_free);
	fx->log = g_ptr_array_new_with_free_func(g_free);
}

static void
fx_teardown(Fx *fx, gconstpointer data)
{
	(void)data;
	pgate_pipeline_config_clear(&fx->p.cfg);
	pgate_pipeline_apply_config_clear(&fx->p.apply);
	pgate_pipeline_ci_config_clear(&fx->p.ci_cfg);
	g_clear_pointer(&fx->p.ci, pgate_ci_backend_free);
	g_clear_pointer(&fx->p.polled, g_hash_table_unref);
	g_clear_pointer(&fx->p.committers, g_hash_table_unref);
	g_clear_pointer(&fx->p.upstream_merged, g_ptr_array_unref);
	pgate_upstream_stats_clear(&fx->p.upstream_stats);
	pgate_upstream_config_clear(&fx->p.upstream);
	g_key_file_unref(fx->kf);
	g_ptr_array_unref(fx->sink);
	g_ptr_array_unref(fx->log);
	pt_env_close(&fx->e);
}

static PgatePipelineStats
pass(Fx *fx)
{
	PgatePipelineStats st = { 0 };
	g_autoptr(GError) error = NULL;

	g_assert_true(pgate_pipeline_run(&fx->p, NULL, &st, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(st.errors, ==, 0);
	return st;
}

/* ---- mail ---- */

static void
deliver(Fx *fx, const char *from, const char *msgid, const char *irt,
	const char *subject, const char *extra, const char *file,
	const char *line)
{
	g_autofree char *m = pt_mail(from, msgid, irt, subject, fx->now, extra,
				     file, line);

	pt_deliver(&fx->e, m);
}

static const char *const files[] = { "a.c", "b.c", "c.c", "d.c" };

/* Patch @i (1-based) of @n of version @v of series @tag, in reply to its
 * cover (when @cover); it changes files[i - 1]. */
static void
patch(Fx *fx, const char *from, const char *tag, guint v, guint i, guint n,
      gboolean cover)
{
	g_autofree char *id = g_strdup_printf("p%u-%s-v%u@x", i, tag, v);
	g_autofree char *c = g_strdup_printf("c-%s-v%u@x", tag, v);
	g_autofree char *subj = g_strdup_printf(
		"[PATCH%s%.0u %u/%u] %s: change %u of the %s work",
		v > 1 ? " v" : "", v > 1 ? v : 0, i, n, tag, i, tag);
	g_autofree char *line = g_strdup_printf("%c %s-v%u", files[i - 1][0],
						tag, v);

	deliver(fx, from, id, cover ? c : NULL, subj, NULL, files[i - 1], line);
}

static void
cover(Fx *fx, const char *from, const char *tag, guint v, guint n)
{
	g_autofree char *c = g_strdup_printf("c-%s-v%u@x", tag, v);
	g_autofree char *subj = g_strdup_printf(
		"[PATCH%s%.0u 0/%u] %s: the %s work", v > 1 ? " v" : "",
		v > 1 ? v : 0, n, tag, tag);

	deliver(fx, from, c, NULL, subj, NULL, NULL, NULL);
}

/* A whole series: a cover and @n patches. */
static void
series(Fx *fx, const char *from, const char *tag, guint v, guint n)
{
	cover(fx, from, tag, v, n);
	for (guint i = 1; i <= n; i++)
		patch(fx, from, tag, v, i, n, TRUE);
}

static char *
sid_of(Fx *fx, const char *tag, guint v)
{
	g_autofree char *c = g_strdup_printf("c-%s-v%u@x", tag, v);
	g_autofree char *p1 = g_strdup_printf("p1-%s-v%u@x", tag, v);
	char *sid = pt_series_of(&fx->e, c);

	if (sid == NULL)
		sid = pt_series_of(&fx->e, p1);
	g_assert_nonnull(sid);
	return sid;
}

/* ---- the typed state ---- */

static PgateSeriesDoc *
doc_of(Fx *fx, const char *sid)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(fx->e.store,
							      &error);
	PgateSeriesDoc *d;

	g_assert_no_error(error);
	d = pgate_series_doc_get(txn, sid, &error);
	g_assert_no_error(error);
	return d;
}

static PgateSeriesDocs *
state_of(Fx *fx, const char *sid)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(fx->e.store,
							      &error);
	PgateSeriesDocs *s;

	g_assert_no_error(error);
	s = pgate_series_docs_read(txn, sid, &error);
	g_assert_no_error(error);
	return s;
}

static void
assert_state(Fx *fx, const char *sid, PgateSeriesState want)
{
	g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

	g_assert_nonnull(d);
	g_assert_cmpstr(pgate_series_state_name(d->state), ==,
			pgate_series_state_name(want));
}

/* How many sink entries start with "KIND SID REST" (@rest a prefix). */
static guint
sunk(Fx *fx, const char *kind, const char *sid, const char *rest)
{
	g_autofree char *pre = g_strdup_printf("%s %s %s", kind, sid, rest);
	guint n = 0;

	for (guint i = 0; i < fx->sink->len; i++)
		n += g_str_has_prefix(fx->sink->pdata[i], pre);
	return n;
}

static guint
logged(Fx *fx, const char *sid, const char *what)
{
	g_autofree char *line = g_strdup_printf("%s %s", sid, what);
	guint n = 0;

	for (guint i = 0; i < fx->log->len; i++)
		n += strcmp(fx->log->pdata[i], line) == 0;
	return n;
}

/* What `patchgate approve|reject` writes (cli/cmd-approve.c). */
typedef struct {
	const char *sid;
	gboolean approve;
} Decide;

static gboolean
decide_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Decide *c = payload;
	g_autoptr(PgateSeriesDoc) d = pgate_series_doc_get(txn, c->sid,
							       error);

	if (d == NULL)
		d = pgate_series_doc_new(PGATE_SERIES_NEW);
	if (c->approve) {
		pgate_series_doc_approve(
			d, "ann (command line)",
			(gint64)pgate_store_message_last_num(txn));
	} else {
		d->rejected = TRUE;
		d->rejected_by = g_strdup("ann (command line)");
		d->has |= PGATE_SERIES_DOC_REJECTED_BY;
	}
	return pgate_series_doc_put(txn, c->sid, d, error);
}

static void
decide(Fx *fx, const char *sid, gboolean approve)
{
	Decide c = { sid, approve };
	g_autoptr(GError) error = NULL;

	g_assert_true(pgate_store_write(fx->e.store, decide_fn, &c, &error));
	g_assert_no_error(error);
}

/* ---- waiting for the whole series ---- */

static const char wait_long[] = "[pipeline]\nwait_complete=100000\n";

static void
test_waiting_then_incomplete(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	patch(fx, ALICE, "wait", 1, 1, 2, FALSE);
	sid = sid_of(fx, "wait", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_WAITING);
	g_assert_cmpuint(fx->sink->len, ==, 0);
	/* a second pass within the time: nothing moves, nothing is said */
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "waiting"), ==, 1);
	fx->p.cfg.wait_complete = 0;
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_INCOMPLETE);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply warning:"), ==, 1);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);
		const PgateSeriesEvent *last =
			d->events->pdata[d->events->len - 1];

		g_assert_cmpuint(d->events->len, ==, 2);
		g_assert_cmpint(last->state, ==, PGATE_SERIES_INCOMPLETE);
		g_assert_cmpstr(d->reason, ==, "1 of 2 patches");
	}
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 0);
}

static void
test_waiting_then_complete(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	cover(fx, ALICE, "late", 1, 2);
	patch(fx, ALICE, "late", 1, 1, 2, TRUE);
	sid = sid_of(fx, "late", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_WAITING);
	patch(fx, ALICE, "late", 1, 2, 2, TRUE);
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit fake-1 master"), ==, 1);
}

static void
test_incomplete_then_complete(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	cover(fx, ALICE, "inc", 1, 2);
	patch(fx, ALICE, "inc", 1, 2, 2, TRUE);
	sid = sid_of(fx, "inc", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_INCOMPLETE);
	/* final: another pass leaves it */
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "incomplete"), ==, 1);
	patch(fx, ALICE, "inc", 1, 1, 2, TRUE);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply success:"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "build pending:"), ==, 1);
}

/* ---- trust ---- */

static const char untrusted[] =
	"[trust]\ntrusted=*@kernel.org\napprovers=maint@example.org\n";

static void
test_approve(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "appr", 1, 1);
	sid = sid_of(fx, "appr", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_AWAITING_APPROVAL);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply pending:"), ==, 1);
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "awaiting-approval"), ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 0);
	decide(fx, sid, TRUE);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_true(d->approved);
		g_assert_cmpstr(d->approved_by, ==, "ann (command line)");
	}
	/* a trusted sender's series never waits */
	series(fx, KERNEL, "kern", 1, 1);
	pass(fx);
	{
		g_autofree char *k = sid_of(fx, "kern", 1);

		assert_state(fx, k, PGATE_SERIES_TESTING);
	}
}

static void
test_reject(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "rej", 1, 1);
	sid = sid_of(fx, "rej", 1);
	pass(fx);
	decide(fx, sid, FALSE);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_REJECTED);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_true(d->rejected);
		g_assert_cmpstr(d->reason, ==, "ann (command line)");
	}
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "rejected"), ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 0);
}

static void
reply(Fx *fx, const char *tag, const char *id, const char *text)
{
	g_autofree char *c = g_strdup_printf("c-%s-v1@x", tag);
	g_autofree char *subj = g_strdup_printf("Re: [PATCH 0/1] %s: the %s work",
						tag, tag);

	deliver(fx, MAINT, id, c, subj, text, NULL, NULL);
}

static void
test_reply_approve(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "rapp", 1, 1);
	sid = sid_of(fx, "rapp", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_AWAITING_APPROVAL);
	reply(fx, "rapp", "r1@x", "Looks fine.\n\npatchgate: approve\n");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_true(d->approved);
		g_assert_cmpstr(d->approved_by, ==,
				"maint@example.org (reply r1@x)");
	}
}

static void
test_reply_reject(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "rrej", 1, 1);
	sid = sid_of(fx, "rrej", 1);
	pass(fx);
	reply(fx, "rrej", "r2@x", "patchgate: reject\n");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_REJECTED);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_true(d->rejected);
		g_assert_cmpstr(d->rejected_by, ==,
				"maint@example.org (reply r2@x)");
	}
}

/* ---- merged upstream ---- */

typedef struct {
	const char *key, *doc;
} PutStage;

static gboolean
put_stage(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	const PutStage *s = payload;

	return pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE, s->key,
				     s->doc, strlen(s->doc), error);
}

/* What the upstream stage found (SERIES/upstream, as upstream.c writes
 * it; t0580-upstream makes it from real trees): a series testing whose
 * every patch is matched is merged, its job cancelled and its pending
 * check made final; one with some matched goes on. */
static void
test_merged_while_testing(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL, *part = NULL, *k1 = NULL, *k2 = NULL;
	g_autoptr(GError) error = NULL;
	PutStage s1, s2;

	(void)data;
	series(fx, ALICE, "mrg", 1, 2);
	series(fx, ALICE, "half", 1, 2);
	sid = sid_of(fx, "mrg", 1);
	part = sid_of(fx, "half", 1);
	g_assert_cmpuint(pass(fx).testing, ==, 2);
	k1 = g_strdup_printf("%s/upstream", sid);
	k2 = g_strdup_printf("%s/upstream", part);
	s1.key = k1;
	s1.doc = "{\"patches\":{"
		"\"p1-mrg-v1@x\":{\"at\":1,\"branch\":\"master\","
		"\"changes\":false,\"commit\":\"1111111111111111111111111111111111111111\","
		"\"repo\":\"/r\",\"rule\":\"link\"},"
		"\"p2-mrg-v1@x\":{\"at\":1,\"branch\":\"master\","
		"\"changes\":true,\"commit\":\"2222222222222222222222222222222222222222\","
		"\"repo\":\"/r\",\"rule\":\"subject\"}}}";
	s2.key = k2;
	s2.doc = "{\"patches\":{"
		"\"p1-half-v1@x\":{\"at\":1,\"branch\":\"master\","
		"\"changes\":false,\"commit\":\"3333333333333333333333333333333333333333\","
		"\"repo\":\"/r\",\"rule\":\"patch-id\"}}}";
	g_assert_true(pgate_store_write(fx->e.store, put_stage, &s1, &error));
	g_assert_true(pgate_store_write(fx->e.store, put_stage, &s2, &error));
	g_assert_no_error(error);
	/* merge detection on, its read of the trees done already */
	fx->p.upstream.enabled = TRUE;
	fx->p.upstream_at = 1;
	fx->p.upstream_every = G_MAXINT64;
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	assert_state(fx, sid, PGATE_SERIES_MERGED);
	assert_state(fx, part, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "build warning: merged upstream "
			      "before the build finished"), ==, 1);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_cmpstr(d->reason, ==, "2 of 2 patches merged: master "
				"111111111111 (link), master 222222222222 "
				"(subject); 1 applied with changes");
	}
	g_assert_cmpuint(logged(fx, sid, "merged"), ==, 1);
	/* final: the next pass leaves it */
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "merged"), ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel"), ==, 1);
}

/* ---- recheck requests ---- */

static const char recheck_conf[] =
	"[trust]\napprovers=maint@example.org\n"
	"[pipeline]\nrecheck_limit=3\n";

static void
reply_from(Fx *fx, const char *from, const char *tag, const char *id,
	   const char *text)
{
	g_autofree char *c = g_strdup_printf("c-%s-v1@x", tag);
	g_autofree char *subj = g_strdup_printf("Re: [PATCH 0/1] %s: the %s work",
						tag, tag);

	deliver(fx, from, id, c, subj, text, NULL, NULL);
}

/* Recheck by the command line and by mail: from the submitter or an
 * approver only, never from a quote, at most recheck_limit a day; each
 * runs the job again (rebase=BRANCH: applied again there first) and
 * its results replace the old ones. */
static void
test_recheck(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;
	g_autoptr(GError) error = NULL;

	(void)data;
	series(fx, ALICE, "rck", 1, 1);
	sid = sid_of(fx, "rck", 1);
	pass(fx);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(sunk(fx, "mail", sid, "done"), ==, 1);

	/* the command line */
	g_assert_true(pgate_pipeline_recheck_request(&fx->p, sid, "build", NULL,
						     "ann", &error));
	g_assert_no_error(error);
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 2);
	g_assert_cmpuint(sunk(fx, "check", sid, "build pending: build queued "
			      "again on master (recheck requested by ann)"), ==, 1);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_FAIL, "step make failed");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(sunk(fx, "check", sid, "build fail: build on master: "
			      "fail - step make failed"), ==, 1);
	g_assert_cmpuint(sunk(fx, "mail", sid, "done"), ==, 2);

	/* a forged requester, and a request inside a quote: nothing */
	reply_from(fx, KERNEL, "rck", "rk1@x", "Recheck-request: build\n");
	reply_from(fx, MAINT, "rck", "rk2@x",
		   "Hm.\n\nOn Mon, 2 Dec 2024, Alice wrote:\n"
		   "> Recheck-request: build\n");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 2);
	g_assert_cmpuint(logged(fx, sid, "recheck-ignored"), ==, 1);
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "recheck-ignored"), ==, 1);

	/* the submitter */
	reply_from(fx, ALICE, "rck", "rk3@x", "Recheck-request: build\n");
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 3);
	g_assert_cmpuint(logged(fx, sid, "recheck-requested"), ==, 1);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);

	/* an approver, rebased: applied again on master */
	reply_from(fx, MAINT, "rck", "rk4@x",
		   "Recheck-request: rebase=master, build\n");
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply success: applied to "
			      "master"), ==, 2);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);

	/* the fourth of the day: over the limit */
	reply_from(fx, ALICE, "rck", "rk5@x", "Recheck-request: build\n");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(logged(fx, sid, "recheck-refused"), ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 4);
}

/* ---- nothing to apply ---- */

static void
test_skip_pull(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	deliver(fx, ALICE, "pull@x", NULL, "[GIT PULL] widgets for 6.9",
		"The following changes since commit 0123456789abcdef:\n\n"
		"are available in the Git repository at:\n\n"
		"  git://git.example.org/w.git tags/w-1\n", NULL, NULL);
	sid = pt_series_of(&fx->e, "pull@x");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_SKIPPED);
	pass(fx);
	g_assert_cmpuint(logged(fx, sid, "skipped"), ==, 1);
	g_assert_cmpuint(fx->sink->len, ==, 0);
}

static void
test_skip_no_apply(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "noap", 1, 1);
	sid = sid_of(fx, "noap", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_SKIPPED);
	{
		g_autoptr(PgateSeriesDoc) d = doc_of(fx, sid);

		g_assert_cmpstr(d->reason, ==, "no [apply] repository configured");
	}
}

/* ---- apply ---- */

/* Bounded work (issue #41): a series over [pipeline] max_patches is told
 * so, final, before anything reads its patches. */
static void
test_skip_max_patches(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;
	g_autoptr(PgateSeriesDoc) d = NULL;

	(void)data;
	fx->p.cfg.max_patches = 2;
	series(fx, ALICE, "big", 1, 3);
	sid = sid_of(fx, "big", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_SKIPPED);
	d = doc_of(fx, sid);
	g_assert_cmpstr(d->reason, ==,
			"3 patches: over [pipeline] max_patches (2)");
	g_assert_cmpuint(sunk(fx, "check", sid, "apply warning: 3 patches"),
			 ==, 1);
	{
		g_autoptr(PgateSeriesDocs) st = state_of(fx, sid);

		g_assert_cmpuint(st->apply->len, ==, 0);
	}
}

/* An administrator's mistake is not the submitter's fault (issue #41):
 * an [apply] repo that is no repository is a configuration error of the
 * pass, the series is not judged, nothing is reported. */
static void
test_apply_no_repo(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL, *repo = NULL;
	g_autoptr(GError) error = NULL;
	PgatePipelineStats st = { 0 };

	(void)data;
	series(fx, ALICE, "norepo", 1, 1);
	sid = sid_of(fx, "norepo", 1);
	repo = fx->p.apply.repo;
	fx->p.apply.repo = g_strdup("/nonexistent/patchgate-test.git");
	g_assert_false(pgate_pipeline_run(&fx->p, NULL, &st, &error));
	g_assert_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG);
	g_assert_nonnull(strstr(error->message, "[apply] repo: cannot open "
				"/nonexistent/patchgate-test.git"));
	g_assert_null(doc_of(fx, sid));
	g_assert_cmpuint(fx->sink->len, ==, 0);
	g_free(fx->p.apply.repo);
	fx->p.apply.repo = g_steal_pointer(&repo);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
}

static void
test_apply_failed(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	deliver(fx, ALICE, "p-fail@x", NULL, "[PATCH] e: new", NULL, "e.c",
		"e 2");
	sid = pt_series_of(&fx->e, "p-fail@x");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_APPLY_FAILED);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateApplyDoc *a =
			pgate_series_docs_apply(s, "master");

		g_assert_nonnull(a);
		g_assert_cmpint(a->status, ==, PGATE_APPLY_FAILED);
		g_assert_cmpint(a->failure->patch, ==, 1);
		g_assert_cmpstr(a->failure->file, ==, "e.c");
		g_assert_nonnull(s->pipeline->apply);
		g_assert_cmpuint(s->pipeline->apply->len, ==, 1);
		g_assert_cmpuint(s->ci->len, ==, 0);
	}
	/* the reply names the base it did not apply to (#33) */
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(fx->e.store, &error);
		g_autoptr(PgateSeriesRec) rec =
			pgate_store_series_get(txn, sid, &error);
		g_autoptr(PgateMessageRec) m = NULL;
		g_autoptr(PgateEmailReport) r = NULL;
		g_auto(PgateReplyConfig) rc = { 0 };
		g_autofree char *pw_url = NULL;
		gint64 pw_id = 0;

		g_assert_no_error(error);
		m = pgate_reply_answered(txn, &rc, rec, &pw_id, &pw_url,
					 &error);
		g_assert_no_error(error);
		r = pgate_reply_report(txn, rec, m, &error);
		g_assert_no_error(error);
		g_assert_cmpstr(r->base_branch, ==, "master");
		g_assert_cmpstr(r->base_commit, ==, fx->e.base);
		g_assert_null(r->head_commit);
		g_assert_cmpuint(r->apply_failures->len, ==, 1);
		g_assert_cmpuint(r->patch_count, ==, 1);
	}
	g_assert_cmpuint(sunk(fx, "check", sid,
			      "apply fail: master: failed at patch 1 (e.c)"),
			 ==, 1);
	g_assert_cmpuint(sunk(fx, "mail", sid, "apply-failed"), ==, 1);
}

static void
test_apply_no_ci(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "noci", 1, 2);
	sid = sid_of(fx, "noci", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 0);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply success: applied to master"),
			 ==, 1);
}

/* ---- CI ---- */

static void
test_ci_done(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "ci", 1, 2);
	sid = sid_of(fx, "ci", 1);
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateCiDoc *c;

		g_assert_cmpuint(s->ci->len, ==, 1);
		c = s->ci->pdata[0];
		g_assert_cmpint(c->state, ==, PGATE_JOB_QUEUED);
		g_assert_cmpstr(c->handle, ==, "fake-1");
		g_assert_cmpstr(c->target, ==, "master");
		g_assert_cmpstr(c->job, ==, "build");
	}
	pt_ci_set(fx->ci, "fake-1", PGATE_JOB_RUNNING, 0, NULL);
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	g_assert_cmpuint(sunk(fx, "mail", sid, ""), ==, 0);
	pt_ci_set(fx->ci, "fake-1", PGATE_JOB_DONE, PGATE_VERDICT_FAIL,
		  "step make failed (exit 2)\nthe rest");
	g_assert_cmpuint(pass(fx).testing, ==, 0);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateCiDoc *c = s->ci->pdata[0];

		g_assert_cmpint(c->state, ==, PGATE_JOB_DONE);
		g_assert_true(c->has & PGATE_CI_DOC_VERDICT);
		g_assert_cmpint(c->verdict, ==, PGATE_VERDICT_FAIL);
		g_assert_cmpint(c->tests_failed, ==, 1);
		g_assert_cmpstr(s->pipeline->reason, ==,
				"build on master: fail - step make failed (exit 2)");
	}
	g_assert_cmpuint(sunk(fx, "check", sid,
			      "build fail: build on master: fail - step make failed (exit 2)"),
			 ==, 1);
	g_assert_cmpuint(sunk(fx, "mail", sid, "done"), ==, 1);
	/* done is final: no more polls */
	pass(fx);
	g_assert_cmpuint(pt_ci_count(fx->ci, "poll"), ==, 2);
}

/* An error verdict is the infrastructure's: the job is submitted again
 * ([ci] retries, 2 by default), with a warning check that says so; a
 * retry that works ends as any job; one that keeps failing gives up
 * after 3 tries, with a warning (never fail) and no mail. */
static void
test_ci_retry(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL, *ok = NULL;

	(void)data;
	series(fx, ALICE, "retry", 1, 1);
	sid = sid_of(fx, "retry", 1);
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	pt_ci_set(fx->ci, "fake-1", PGATE_JOB_DONE, PGATE_VERDICT_ERROR,
		  "the runner timed out");
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 2);
	g_assert_cmpuint(sunk(fx, "check", sid, "build warning: build on master: "
			      "infrastructure error, retrying (try 2 of 3) - "
			      "the runner timed out"), ==, 1);
	g_assert_cmpuint(logged(fx, sid, "retry"), ==, 1);
	pt_ci_set(fx->ci, "fake-2", PGATE_JOB_DONE, PGATE_VERDICT_ERROR,
		  "disk full");
	g_assert_cmpuint(pass(fx).testing, ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "build warning: build on master: "
			      "infrastructure error, retrying (try 3 of 3) - "
			      "disk full"), ==, 1);
	pt_ci_set(fx->ci, "fake-3", PGATE_JOB_DONE, PGATE_VERDICT_ERROR,
		  "Jenkins lost the build");
	g_assert_cmpuint(pass(fx).testing, ==, 0);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 3);
	g_assert_cmpuint(sunk(fx, "check", sid, "build warning: build on master: "
			      "infrastructure error, gave up after 3 tries - "
			      "Jenkins lost the build"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "build fail"), ==, 0);
	g_assert_cmpuint(sunk(fx, "mail", sid, ""), ==, 0);

	/* a retry that works: its verdict, and the mail */
	series(fx, ALICE, "retryok", 1, 1);
	ok = sid_of(fx, "retryok", 1);
	pass(fx);
	pt_ci_set(fx->ci, "fake-4", PGATE_JOB_DONE, PGATE_VERDICT_ERROR,
		  "sandbox: bwrap failed");
	pass(fx);
	pt_ci_set(fx->ci, "fake-5", PGATE_JOB_DONE,
		  PGATE_VERDICT_SUCCESS, NULL);
	g_assert_cmpuint(pass(fx).testing, ==, 0);
	assert_state(fx, ok, PGATE_SERIES_DONE);
	g_assert_cmpuint(sunk(fx, "check", ok, "build success: build on "
			      "master: success"), ==, 1);
	g_assert_cmpuint(sunk(fx, "mail", ok, "done"), ==, 1);
}

static void
test_ci_per_patch(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	fx->ci->per_patch = TRUE;
	series(fx, ALICE, "pp", 1, 2);
	sid = sid_of(fx, "pp", 1);
	pass(fx);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_WARNING, "new warnings");
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(sunk(fx, "patch", sid,
			      "p1-pp-v1@x success: build on master, patch 1: success"),
			 ==, 1);
	g_assert_cmpuint(sunk(fx, "patch", sid,
			      "p2-pp-v1@x warning: build on master, patch 2: warning - new warnings"),
			 ==, 1);
}

static void
test_ci_resubmit(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "resub", 1, 1);
	sid = sid_of(fx, "resub", 1);
	/* the backend is away when asked: the job stays "submitting" (as
	 * after a crash between the two writes) and the pass says so */
	fx->ci->fail_submits = 1;
	{
		PgatePipelineStats st = { 0 };
		g_autoptr(GError) error = NULL;

		g_assert_true(pgate_pipeline_run(&fx->p, NULL, &st, &error));
		g_assert_cmpuint(st.errors, ==, 1);
	}
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateCiDoc *c = s->ci->pdata[0];

		g_assert_cmpint(c->state, ==, PGATE_JOB_SUBMITTING);
		g_assert_null(c->handle);
		/* the move was not made: the next pass applies again */
		g_assert_null(s->pipeline);
	}
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
	/* renamed by the backend (a queue item became a build) */
	pt_ci_rename(fx->ci, "fake-1", "build-7");
	pass(fx);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateCiDoc *c = s->ci->pdata[0];

		g_assert_cmpstr(c->handle, ==, "build-7");
	}
	/* the backend forgets the job: lost, then submitted again */
	g_hash_table_remove_all(fx->ci->jobs);
	pass(fx);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit fake-2"), ==, 1);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, sid);
		const PgateCiDoc *c = s->ci->pdata[0];

		g_assert_cmpint(c->state, ==, PGATE_JOB_QUEUED);
		g_assert_cmpstr(c->handle, ==, "fake-2");
	}
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_DONE);
	g_assert_cmpuint(sunk(fx, "check", sid,
			      "build success: build on master: success"),
			 ==, 1);
}

/* ---- supersession ---- */

static void
test_supersede_while_running(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL;

	(void)data;
	series(fx, ALICE, "sup", 1, 2);
	v1 = sid_of(fx, "sup", 1);
	pass(fx);
	pt_ci_set(fx->ci, "fake-1", PGATE_JOB_RUNNING, 0, NULL);
	pass(fx);
	series(fx, ALICE, "sup", 2, 2);
	v2 = sid_of(fx, "sup", 2);
	g_assert_cmpstr(v1, !=, v2);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	assert_state(fx, v2, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel fake-1"), ==, 1);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, v1);
		const PgateCiDoc *c = s->ci->pdata[0];
		g_autofree char *why = g_strdup_printf("superseded by %s", v2);

		g_assert_true(c->cancelled);
		g_assert_cmpint(c->state, ==, PGATE_JOB_DONE);
		g_assert_cmpint(c->verdict, ==, PGATE_VERDICT_FAIL);
		g_assert_cmpstr(s->pipeline->reason, ==, why);
	}
	/* the cancelled job's verdict is never reported as the series';
	 * its pending check gets a last word, which is not "passed" */
	g_assert_cmpuint(sunk(fx, "check", v1, "build fail"), ==, 0);
	g_assert_cmpuint(sunk(fx, "check", v1, "build warning: superseded by v2 "
			      "before the build finished"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", v1, "build success"), ==, 0);
	g_assert_cmpuint(sunk(fx, "mail", v1, ""), ==, 0);
	pass(fx);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel"), ==, 1);
}

static void
test_supersede_before_judged(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL;

	(void)data;
	series(fx, ALICE, "early", 1, 1);
	series(fx, ALICE, "early", 2, 1);
	v1 = sid_of(fx, "early", 1);
	v2 = sid_of(fx, "early", 2);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	assert_state(fx, v2, PGATE_SERIES_TESTING);
	g_assert_cmpuint(pt_ci_count(fx->ci, "submit"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", v1, ""), ==, 0);
}

static void
test_supersede_waiting(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL;

	(void)data;
	cover(fx, ALICE, "sw", 1, 2);
	patch(fx, ALICE, "sw", 1, 1, 2, TRUE);
	v1 = sid_of(fx, "sw", 1);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_WAITING);
	series(fx, ALICE, "sw", 2, 2);
	v2 = sid_of(fx, "sw", 2);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	assert_state(fx, v2, PGATE_SERIES_TESTING);
}

static void
test_supersede_awaiting(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL;

	(void)data;
	series(fx, ALICE, "sa", 1, 1);
	v1 = sid_of(fx, "sa", 1);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_AWAITING_APPROVAL);
	series(fx, ALICE, "sa", 2, 1);
	v2 = sid_of(fx, "sa", 2);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	assert_state(fx, v2, PGATE_SERIES_AWAITING_APPROVAL);
	/* its pending "waiting for approval" is not left pending */
	g_assert_cmpuint(sunk(fx, "check", v1, "apply pending"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", v1, "apply warning: superseded by v2 "
			      "before a maintainer approved it"), ==, 1);
}

/* The build finished, but the newer version came before the pass that
 * would report it: its verdict is reported, not "superseded". */
static void
test_supersede_after_build(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL;

	(void)data;
	series(fx, ALICE, "sb", 1, 1);
	v1 = sid_of(fx, "sb", 1);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_TESTING);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	series(fx, ALICE, "sb", 2, 1);
	v2 = sid_of(fx, "sb", 2);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	g_assert_cmpuint(sunk(fx, "check", v1, "build success: build on master: "
			      "success"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", v1, "build warning"), ==, 0);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel"), ==, 0);
}

/* Contexts are short ("apply", "build": Patchwork shows USER/CONTEXT);
 * [patchwork] context_prefix puts a prefix before them. */
static void
test_context_prefix(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;

	(void)data;
	series(fx, ALICE, "cp", 1, 1);
	sid = sid_of(fx, "cp", 1);
	pass(fx);
	g_assert_cmpuint(sunk(fx, "check", sid, "patchgate-apply success"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "patchgate-build pending"), ==, 1);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply"), ==, 0);
}

static void
test_context_prefix_invalid(void)
{
	const char *const bad[] = { "a/b", "ci build", "caf\xc3\xa9" };

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) error = NULL;
		PgatePipelineConfig c;

		g_key_file_set_string(kf, "patchwork", "context_prefix", bad[i]);
		g_assert_false(pgate_pipeline_config_load(kf, &c, &error));
		g_assert_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "context_prefix"));
	}
}

static void
test_final_stays(Fx *fx, gconstpointer data)
{
	g_autofree char *v1 = NULL, *v2 = NULL, *v3 = NULL;

	(void)data;
	series(fx, ALICE, "fin", 1, 1);
	v1 = sid_of(fx, "fin", 1);
	pass(fx);
	pt_ci_finish_all(fx->ci, PGATE_VERDICT_SUCCESS, NULL);
	pass(fx);
	assert_state(fx, v1, PGATE_SERIES_DONE);
	series(fx, ALICE, "fin", 2, 1);
	v2 = sid_of(fx, "fin", 2);
	pass(fx);
	/* done is final: a newer version does not change what was said */
	assert_state(fx, v1, PGATE_SERIES_DONE);
	assert_state(fx, v2, PGATE_SERIES_TESTING);
	series(fx, ALICE, "fin", 3, 1);
	v3 = sid_of(fx, "fin", 3);
	pass(fx);
	/* superseded is final too */
	assert_state(fx, v2, PGATE_SERIES_SUPERSEDED);
	pass(fx);
	g_assert_cmpuint(logged(fx, v2, "superseded"), ==, 1);
	g_assert_cmpuint(logged(fx, v1, "superseded"), ==, 0);
	(void)v3;
}

/* ---- the orders that race ---- */

/* A partial re-roll ([PATCH v2 2/3] alone) judged before version 1 is in
 * the store is incomplete; once version 1 comes and threading links the
 * re-roll to it, the next pass tests it as the whole new version (the
 * bug: it stayed incomplete for ever). */
static void
test_reroll_before_link(Fx *fx, gconstpointer data)
{
	g_autofree char *v2 = NULL, *v1 = NULL;

	(void)data;
	deliver(fx, ALICE, "p2-rr-v2@x", "p2-rr-v1@x",
		"[PATCH v2 2/3] rr: change 2 of the rr work", NULL, "b.c",
		"b rr-v2");
	v2 = pt_series_of(&fx->e, "p2-rr-v2@x");
	pass(fx);
	assert_state(fx, v2, PGATE_SERIES_INCOMPLETE);
	series(fx, ALICE, "rr", 1, 3);
	v1 = sid_of(fx, "rr", 1);
	{
		g_autofree char *again = pt_series_of(&fx->e, "p2-rr-v2@x");

		g_assert_cmpstr(again, ==, v2);
	}
	pass(fx);
	assert_state(fx, v2, PGATE_SERIES_TESTING);
	assert_state(fx, v1, PGATE_SERIES_SUPERSEDED);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, v2);
		const PgateApplyDoc *a =
			pgate_series_docs_apply(s, "master");

		g_assert_nonnull(a);
		g_assert_cmpstr(a->reroll_of, ==, v1);
		/* the whole new version: v1's 1 and 3 with v2's 2 */
		g_assert_cmpuint(a->commits->len, ==, 3);
	}
}

/* Approved while still waiting for its patches: the approval holds when
 * the series is whole, even after it was found incomplete. */
static void
test_approve_while_incomplete(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL;
	g_autoptr(PgateSeriesDoc) d = NULL;

	(void)data;
	cover(fx, ALICE, "awi", 1, 2);
	patch(fx, ALICE, "awi", 1, 1, 2, TRUE);
	sid = sid_of(fx, "awi", 1);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_WAITING);
	decide(fx, sid, TRUE);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_WAITING);
	fx->p.cfg.wait_complete = 0;
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_INCOMPLETE);
	/* the approval saw the cover and 1/2: 2/2, which came after it,
	 * is not covered (issue #41, finding 8) */
	patch(fx, ALICE, "awi", 1, 2, 2, TRUE);
	pass(fx);
	d = doc_of(fx, sid);
	assert_state(fx, sid, PGATE_SERIES_AWAITING_APPROVAL);
	g_assert_nonnull(strstr(d->reason, "message p2-awi-v1@x is from "
				"alice@example.org, not a trusted sender; the "
				"approval by ann (command line) does not cover it"));
	g_assert_nonnull(d->approved_msgs);
	g_assert_cmpuint(d->approved_msgs->len, ==, 2);
	g_assert_cmpuint(sunk(fx, "check", sid, "apply pending"), ==, 1);
	/* approved again, now with 2/2: tested */
	decide(fx, sid, TRUE);
	pass(fx);
	assert_state(fx, sid, PGATE_SERIES_TESTING);
}

/* Patches before their cover: the series has the first patch's ID, then
 * the cover's.  The first ID's state is dropped (its job cancelled) and
 * the series judged afresh under the cover's. */
static void
test_late_cover_drops_orphan(Fx *fx, gconstpointer data)
{
	g_autofree char *early = NULL, *late = NULL;
	g_autoptr(GPtrArray) ids = NULL;

	(void)data;
	patch(fx, ALICE, "lc", 1, 1, 2, TRUE);
	patch(fx, ALICE, "lc", 1, 2, 2, TRUE);
	early = sid_of(fx, "lc", 1);
	pass(fx);
	assert_state(fx, early, PGATE_SERIES_TESTING);
	cover(fx, ALICE, "lc", 1, 2);
	late = sid_of(fx, "lc", 1);
	g_assert_cmpstr(early, !=, late);
	pass(fx);
	g_assert_cmpuint(logged(fx, early, "dropped"), ==, 1);
	g_assert_cmpuint(pt_ci_count(fx->ci, "cancel fake-1"), ==, 1);
	{
		g_autoptr(PgateSeriesDocs) s = state_of(fx, early);

		g_assert_null(s->pipeline);
		g_assert_cmpuint(s->apply->len, ==, 0);
		g_assert_cmpuint(s->ci->len, ==, 0);
	}
	assert_state(fx, late, PGATE_SERIES_TESTING);
	ids = pt_series_ids(&fx->e);
	g_assert_cmpuint(ids->len, ==, 1);
}

/* ---- the real outbox behind the default hook ---- */

static void
test_outbox(Fx *fx, gconstpointer data)
{
	g_autofree char *sid = NULL, *key = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(json_t) list = NULL;
	gboolean found = FALSE;
	gsize i;
	json_t *e;

	(void)data;
	fx->p.queue_check = NULL;
	series(fx, ALICE, "ob", 1, 1);
	sid = sid_of(fx, "ob", 1);
	pass(fx);
	list = pgate_outbox_list(fx->e.store, &error);
	g_assert_no_error(error);
	key = g_strdup_printf("pw/%s/build", sid);
	json_array_foreach(list, i, e)
		found |= g_strcmp0(json_string_value(json_object_get(e, "key")),
				   key) == 0 &&
			 g_strcmp0(json_string_value(json_object_get(e, "state")),
				   "pending") == 0;
	g_assert_true(found);
}

/* ---- the documents' codec ---- */

static char *
data_path(const char *name)
{
	return g_test_build_filename(G_TEST_DIST, "data", name, NULL);
}

/* Decodes @text as the document stored under @key, and encodes it. */
static char *
roundtrip(const char *key, const char *text)
{
	g_autoptr(GBytes) b = g_bytes_new(text, strlen(text));
	g_autoptr(GError) error = NULL;
	const char *slash = strchr(key, '/');
	char *out = NULL;

	g_assert_nonnull(slash);
	if (strcmp(slash + 1, "pipeline") == 0) {
		g_autoptr(PgateSeriesDoc) d = pgate_series_doc_decode(b, &error);

		g_assert_no_error(error);
		out = pgate_series_doc_encode(d);
	} else if (g_str_has_prefix(slash + 1, "apply/")) {
		g_autoptr(PgateApplyDoc) d =
			pgate_apply_doc_decode(b, &error);

		g_assert_no_error(error);
		g_assert_null(d->unknown);
		out = pgate_apply_doc_encode(d);
	} else if (g_str_has_prefix(slash + 1, "ci/")) {
		g_autoptr(PgateCiDoc) d =
			pgate_ci_doc_decode(b, key, &error);

		g_assert_no_error(error);
		g_assert_null(d->unknown);
		out = pgate_ci_doc_encode(d);
	} else {
		g_assert_not_reached();
	}
	return out;
}

/* tests/pipeline/data/stage-docs.tsv: KEY TAB DOCUMENT, every stage
 * document the pipeline wrote before its state was typed (commit
 * e5be839, when pipeline/ held json_t only: its pgate_pipeline_run()
 * driven with this harness, the approvals written as cmd-approve.c wrote
 * them, each document stored after each pass), through every state and
 * optional field: series trusted and not, approved and rejected (by
 * command and by reply), waiting, incomplete, pull requests, apply
 * failed, rejected and already applied, an error attempt (a missing
 * branch), base-commit, prerequisites (dropped too), a partial re-roll,
 * pushed and not, a push that failed, jobs submitting, queued, running,
 * lost, renamed, done with each verdict, per patch, and cancelled.  Each
 * must encode again to the same bytes. */
static void
test_codec_bytes(void)
{
	g_autofree char *path = data_path("stage-docs.tsv");
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint n = 0, kinds[3] = { 0 };
	GHashTable *states = g_hash_table_new(g_str_hash, g_str_equal);

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char *tab = strchr(lines[i], '\t');
		g_autofree char *out = NULL;

		if (*lines[i] == '\0')
			continue;
		g_assert_nonnull(tab);
		*tab = '\0';
		out = roundtrip(lines[i], tab + 1);
		g_assert_cmpstr(out, ==, tab + 1);
		n++;
		kinds[g_str_has_suffix(lines[i], "/pipeline") ? 0
		      : strstr(lines[i], "/apply/") ? 1 : 2]++;
		if (g_str_has_suffix(lines[i], "/pipeline")) {
			g_autoptr(GBytes) b = g_bytes_new(tab + 1, strlen(tab + 1));
			g_autoptr(PgateSeriesDoc) d = pgate_series_doc_decode(b, NULL);

			g_hash_table_add(states, (gpointer)
					 pgate_series_state_name(d->state));
		}
	}
	g_assert_cmpuint(n, >, 90);
	g_assert_cmpuint(kinds[0], >, 0);
	g_assert_cmpuint(kinds[1], >, 0);
	g_assert_cmpuint(kinds[2], >, 0);
	/* every state is there */
	for (PgateSeriesState s = 0; s <= PGATE_SERIES_STATE_LAST; s++)
		g_assert_true(g_hash_table_contains(
			states, pgate_series_state_name(s)));
	g_hash_table_unref(states);
}

/* `patchgate apply --json` prints the attempts as they were built, not
 * sorted: the typed document keeps that order (an error attempt had
 * "failure" before "at"). */
static void
test_codec_apply_order(void)
{
	static const char *const order[] = {
		"target", "base", "status", "base_commit", "commits", "patches",
		"head", "prerequisites", "reroll_of", "at", "failure",
		"prerequisites_dropped", "ref", "pushed_to", "publish_error",
	};
	static const char *const error_order[] = {
		"target", "base", "status", "failure", "at",
	};
	g_autofree char *path = data_path("stage-docs.tsv");
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint errors = 0;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char *tab = strchr(lines[i], '\t');
		g_autoptr(GBytes) b = NULL;
		g_autoptr(PgateApplyDoc) d = NULL;
		g_autoptr(json_t) j = NULL;
		gboolean error_doc;
		const char *k;
		json_t *v;
		guint at = 0;

		if (tab == NULL || strstr(lines[i], "/apply/") == NULL ||
		    strstr(lines[i], "/apply/") > tab)
			continue;
		b = g_bytes_new(tab + 1, strlen(tab + 1));
		d = pgate_apply_doc_decode(b, NULL);
		j = pgate_apply_doc_to_json(d);
		error_doc = d->status == PGATE_APPLY_NOT_MADE;
		errors += error_doc;
		json_object_foreach(j, k, v) {
			const char *const *o = error_doc ? error_order : order;
			guint n = error_doc ? G_N_ELEMENTS(error_order)
					    : G_N_ELEMENTS(order);

			while (at < n && strcmp(o[at], k) != 0)
				at++;
			g_assert_cmpuint(at, <, n);
		}
	}
	g_assert_cmpuint(errors, >, 0);
}

/* Fields this version does not know, or known ones of another type, are
 * kept as they were, nested ones too. */
static void
test_codec_unknown(void)
{
	static const char *const docs[][2] = {
		{ "s1/pipeline",
		  "{\"events\":[{\"at\":1,\"reason\":null,\"state\":\"testing\","
		  "\"x\":1}],\"future\":{\"a\":[1,2]},\"since\":\"yesterday\","
		  "\"state\":\"testing\"}" },
		{ "s1/pipeline",
		  "{\"apply\":{\"master\":{\"status\":\"ok\",\"target\":\"next\"}},"
		  "\"approved\":false,\"reason\":7,\"state\":\"new\"}" },
		{ "s1/pipeline",
		  "{\"apply\":{\"master\":{\"new\":1,\"status\":\"merged\","
		  "\"target\":\"master\"}},\"state\":\"done\"}" },
		{ "s1/apply/master",
		  "{\"failure\":{\"patch\":1,\"why\":\"x\"},\"patches\":[{\"msgid\":"
		  "\"a\"}],\"status\":\"merged\",\"target\":\"master\",\"zz\":null}" },
		{ "s1/ci/master/build",
		  "{\"cancelled\":false,\"commits\":[{\"commit\":\"c\",\"reason\":null,"
		  "\"verdict\":\"maybe\"}],\"state\":\"queued\",\"tests\":{\"total\":1},"
		  "\"verdict\":\"perhaps\",\"x\":[]}" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
		g_autoptr(GBytes) b = g_bytes_new(docs[i][1], strlen(docs[i][1]));
		g_autoptr(GError) error = NULL;
		g_autofree char *out = NULL;

		if (g_str_has_suffix(docs[i][0], "/pipeline")) {
			g_autoptr(PgateSeriesDoc) d =
				pgate_series_doc_decode(b, &error);

			g_assert_no_error(error);
			/* the third: the attempt keeps its own */
			g_assert_true(d->unknown != NULL ||
				      ((PgateApplyDoc *)
				       d->apply->pdata[0])->unknown != NULL);
			out = pgate_series_doc_encode(d);
		} else if (strstr(docs[i][0], "/apply/")) {
			g_autoptr(PgateApplyDoc) d =
				pgate_apply_doc_decode(b, &error);

			g_assert_no_error(error);
			g_assert_nonnull(d->unknown);
			out = pgate_apply_doc_encode(d);
		} else {
			g_autoptr(PgateCiDoc) d =
				pgate_ci_doc_decode(b, docs[i][0], &error);

			g_assert_no_error(error);
			g_assert_nonnull(d->unknown);
			out = pgate_ci_doc_encode(d);
		}
		g_assert_cmpstr(out, ==, docs[i][1]);
	}
}

/* What a document without a known state is: refused, not guessed. */
static void
test_codec_refused(void)
{
	static const char *const bad[] = {
		"[]", "{\"state\":\"later\"}", "{\"reason\":\"x\"}", "{",
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GBytes) b = g_bytes_new(bad[i], strlen(bad[i]));
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateSeriesDoc) d = pgate_series_doc_decode(b, &error);
		g_autoptr(PgateCiDoc) c = NULL;

		g_assert_null(d);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
		g_clear_error(&error);
		c = pgate_ci_doc_decode(b, NULL, &error);
		g_assert_null(c);
		g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_INVALID);
	}
}

/* The rules a series is put through, in the order docs/pipeline.md
 * ("The rules") gives them: the order is the policy. */
static void
test_rules(void)
{
	static const char *const want[] = {
		"upstream", "superseded", "recheck", "final", "pull",
		"testing", "too-large", "incomplete", "rejected", "trust",
		"apply",
	};
	guint i;

	for (i = 0; i < G_N_ELEMENTS(want); i++)
		g_assert_cmpstr(pgate_pipeline__rule_name(i), ==, want[i]);
	g_assert_null(pgate_pipeline__rule_name(i));
}

/* The vocabulary (store/docs.c): each enum's names, spelled as the
 * documents, the JSON output and the checks always spelled them, each
 * giving its value back; nothing else parses. */
static void
test_names(void)
{
	static const char *const states[] = {
		"new", "waiting", "incomplete", "awaiting-approval", "rejected",
		"skipped", "apply-failed", "testing", "done", "superseded",
		"merged", "superseded-by-merge",
	};
	static const char *const jobs[] = {
		"submitting", "queued", "running", "done", "lost",
	};
	static const char *const verdicts[] = {
		"none", "success", "warning", "fail", "error",
	};
	static const char *const applies[] = {
		"ok", "failed", "already-applied", "rejected", "error",
	};
	static const char *const checks[] = {
		"pending", "success", "warning", "fail",
	};
	PgateSeriesState s;
	PgateJobState js;
	PgateApplyStatus as;
	PgateVerdict v;
	PgateCheckState cs;

	g_assert_cmpuint(G_N_ELEMENTS(states), ==, PGATE_SERIES_STATE_LAST + 1);
	for (guint i = 0; i < G_N_ELEMENTS(states); i++) {
		g_assert_cmpstr(pgate_series_state_name(i), ==, states[i]);
		g_assert_true(pgate_series_state_parse(states[i], &s));
		g_assert_cmpuint(s, ==, i);
	}
	g_assert_cmpuint(G_N_ELEMENTS(jobs), ==, PGATE_JOB_LOST + 1);
	for (guint i = 0; i < G_N_ELEMENTS(jobs); i++) {
		g_assert_cmpstr(pgate_job_state_name(i), ==, jobs[i]);
		g_assert_true(pgate_job_state_parse(jobs[i], &js));
		g_assert_cmpuint(js, ==, i);
	}
	g_assert_cmpuint(G_N_ELEMENTS(verdicts), ==, PGATE_VERDICT_ERROR + 1);
	for (guint i = 0; i < G_N_ELEMENTS(verdicts); i++) {
		g_assert_cmpstr(pgate_verdict_name(i), ==, verdicts[i]);
		g_assert_true(pgate_verdict_parse(verdicts[i], &v));
		g_assert_cmpuint(v, ==, i);
	}
	g_assert_cmpuint(G_N_ELEMENTS(applies), ==, PGATE_APPLY_NOT_MADE + 1);
	for (guint i = 0; i < G_N_ELEMENTS(applies); i++) {
		g_assert_cmpstr(pgate_apply_status_name(i), ==, applies[i]);
		g_assert_true(pgate_apply_status_parse(applies[i], &as));
		g_assert_cmpuint(as, ==, i);
	}
	g_assert_cmpuint(G_N_ELEMENTS(checks), ==, PGATE_CHECK_FAIL + 1);
	for (guint i = 0; i < G_N_ELEMENTS(checks); i++) {
		g_assert_cmpstr(pgate_check_state_name(i), ==, checks[i]);
		g_assert_true(pgate_check_state_parse(checks[i], &cs));
		g_assert_cmpuint(cs, ==, i);
	}
	g_assert_false(pgate_series_state_parse("Done", &s));
	g_assert_false(pgate_series_state_parse(NULL, &s));
	g_assert_false(pgate_verdict_parse("passed", &v));
	g_assert_false(pgate_check_state_parse("error", &cs));
	g_assert_true(pgate_series_state_is_final(PGATE_SERIES_DONE));
	g_assert_false(pgate_series_state_is_final(PGATE_SERIES_TESTING));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

#define ADD(path, fn, conf) \
	g_test_add(path, Fx, conf, fx_setup, fn, fx_teardown)
	ADD("/pipeline/wait/waiting-then-incomplete",
	    test_waiting_then_incomplete, wait_long);
	ADD("/pipeline/wait/waiting-then-complete", test_waiting_then_complete,
	    wait_long);
	ADD("/pipeline/wait/incomplete-then-complete",
	    test_incomplete_then_complete, NULL);
	ADD("/pipeline/trust/approve", test_approve, untrusted);
	ADD("/pipeline/trust/reject", test_reject, untrusted);
	ADD("/pipeline/trust/reply-approve", test_reply_approve, untrusted);
	ADD("/pipeline/trust/reply-reject", test_reply_reject, untrusted);
	ADD("/pipeline/skip/pull", test_skip_pull, NULL);
	ADD("/pipeline/skip/no-apply", test_skip_no_apply, "[apply]\nenabled=no\n");
	ADD("/pipeline/apply/failed", test_apply_failed, NULL);
	ADD("/pipeline/apply/no-repo", test_apply_no_repo, NULL);
	ADD("/pipeline/skip/max-patches", test_skip_max_patches, NULL);
	ADD("/pipeline/apply/no-ci", test_apply_no_ci, "[ci]\nenabled=no\n");
	ADD("/pipeline/ci/done", test_ci_done, NULL);
	ADD("/pipeline/ci/retry", test_ci_retry, NULL);
	ADD("/pipeline/recheck", test_recheck, recheck_conf);
	ADD("/pipeline/upstream/merged-while-testing",
	    test_merged_while_testing, NULL);
	ADD("/pipeline/ci/per-patch", test_ci_per_patch, NULL);
	ADD("/pipeline/ci/resubmit", test_ci_resubmit, NULL);
	ADD("/pipeline/race/supersede-while-running",
	    test_supersede_while_running, NULL);
	ADD("/pipeline/race/reroll-before-link", test_reroll_before_link, NULL);
	ADD("/pipeline/race/approve-while-incomplete",
	    test_approve_while_incomplete,
	    "[trust]\ntrusted=*@kernel.org\n[pipeline]\nwait_complete=100000\n");
	ADD("/pipeline/race/late-cover-drops-orphan",
	    test_late_cover_drops_orphan, NULL);
	ADD("/pipeline/supersede/before-judged", test_supersede_before_judged,
	    NULL);
	ADD("/pipeline/supersede/waiting", test_supersede_waiting, wait_long);
	ADD("/pipeline/supersede/awaiting-approval", test_supersede_awaiting,
	    untrusted);
	ADD("/pipeline/supersede/after-the-build", test_supersede_after_build,
	    NULL);
	ADD("/pipeline/supersede/final-stays", test_final_stays, NULL);
	ADD("/pipeline/report/context-prefix", test_context_prefix,
	    "[patchwork]\ncontext_prefix=patchgate\n");
	ADD("/pipeline/outbox", test_outbox, NULL);
#undef ADD
	g_test_add_func("/pipeline/codec/bytes", test_codec_bytes);
	g_test_add_func("/pipeline/codec/apply-order", test_codec_apply_order);
	g_test_add_func("/pipeline/codec/unknown", test_codec_unknown);
	g_test_add_func("/pipeline/codec/refused", test_codec_refused);
	g_test_add_func("/pipeline/codec/names", test_names);
	g_test_add_func("/pipeline/rules", test_rules);
	g_test_add_func("/pipeline/report/context-prefix-invalid",
			test_context_prefix_invalid);
	return g_test_run();
}
