/* track.c - the Jenkins backend's poll and cancel: a queue item followed
 * to its build, the build to its result (test report, console tail), or
 * either stopped.  The requests run on jenkins.c's engine.
 */
#include "ci/jenkins/jenkins-private.h"

#include <string.h>

#define JK_SUMMARY_MAX 4096            /* console tail kept in a result */
#define JK_CONSOLE_WINDOW 8192         /* raw console bytes fetched */
#define JK_CANCEL_POLLS 20             /* cancel: waits for a build number */

static char *
jk_build_rel(const JkHandle *h, const char *what)
{
	g_autofree char *job = pgate_ci_jenkins__job_url_path(h->job);

	return g_strdup_printf("%s%" G_GUINT64_FORMAT "/%s", job, h->build,
			       what);
}

/* -- poll -- */

static void
op_done_state(JkOp *op, PgateJobState state, PgateVerdict verdict,
	      char *reason)
{
	op->result->state = state;
	op->result->verdict = verdict;
	g_free(op->result->reason);
	op->result->reason = reason;
	pgate_ci_jenkins__op_finish(op);
}

static void
on_console_tail(JkOp *op)
{
	if (op->req.status == 200) {
		op->result->summary = pgate_ci_jenkins__console_tail(
			(const char *)op->req.reply->data, op->req.reply->len,
			JK_SUMMARY_MAX, op->console_start > 0 ||
			op->req.overflow);
		pgate_ci_jenkins__op_finish(op);
	} else if (op->req.status == 404) {
		pgate_ci_jenkins__op_finish(op);
	} else {
		pgate_ci_jenkins__op_http_error(op, "read the console log",
			"no console log");
	}
}

static void
console_tail_get(JkOp *op, gint64 start)
{
	g_autofree char *what = g_strdup_printf(
		"logText/progressiveText?start=%" G_GINT64_FORMAT, start);
	g_autofree char *rel = jk_build_rel(&op->h, what);

	op->console_start = start;
	pgate_ci_jenkins__op_get(op, rel, JK_CONSOLE_WINDOW, on_console_tail);
	op->req.tail = TRUE;
	op->req.cap = 8 * JK_CONSOLE_WINDOW;
	op->req.may_cut = TRUE;
}

static void
on_console_probe(JkOp *op)
{
	if (op->req.status == 200 && !op->req.overflow) {
		/* the whole log fitted */
		op->result->summary = pgate_ci_jenkins__console_tail(
			(const char *)op->req.reply->data, op->req.reply->len,
			JK_SUMMARY_MAX, FALSE);
		pgate_ci_jenkins__op_finish(op);
	} else if (op->req.status == 200 && op->req.text_size >= 0) {
		/* X-Text-Size counts raw bytes, hidden notes included: the
		 * window holds at most that many bytes of text */
		gint64 start = op->req.text_size - JK_CONSOLE_WINDOW;

		console_tail_get(op, MAX(start, 0));
	} else if (op->req.status == 200) {
		/* no X-Text-Size: read it all, keeping the end */
		g_autofree char *rel = jk_build_rel(&op->h, "consoleText");

		op->console_start = 0;
		pgate_ci_jenkins__op_get(op, rel, JK_CONSOLE_WINDOW,
			on_console_tail);
		op->req.tail = TRUE;
		op->req.cap = 64 * 1024 * 1024;
		op->req.may_cut = TRUE;
	} else if (op->req.status == 404) {
		pgate_ci_jenkins__op_finish(op);
	} else {
		pgate_ci_jenkins__op_http_error(op, "read the console log",
			"no console log");
	}
}

static void
after_test_report(JkOp *op)
{
	if (op->result->verdict == PGATE_VERDICT_FAIL) {
		g_autofree char *rel = jk_build_rel(
			&op->h, "logText/progressiveText?start=0");

		pgate_ci_jenkins__op_get(op, rel, JK_CONSOLE_WINDOW,
			on_console_probe);
		op->req.may_cut = TRUE;
		return;
	}
	pgate_ci_jenkins__op_finish(op);
}

static guint
count_of(json_t *o, const char *key)
{
	json_int_t n = json_integer_value(json_object_get(o, key));

	return n > 0 && n < G_MAXINT32 ? (guint)n : 0;
}

static void
on_test_report(JkOp *op)
{
	if (op->req.status == 200) {
		JK_AUTO_JSON o = pgate_ci_jenkins__op_reply_json(op,
			"read the test report");
		guint pass, fail, skip;

		if (o == NULL)
			return;
		pass = count_of(o, "passCount");
		fail = count_of(o, "failCount");
		skip = count_of(o, "skipCount");
		op->result->has_tests = TRUE;
		op->result->tests_failed = fail;
		op->result->tests_skipped = skip;
		op->result->tests_total = pass + fail + skip;
	} else if (op->req.status != 404) {
		/* 404: no test results were recorded */
		pgate_ci_jenkins__op_http_error(op, "read the test report",
			"no test report");
		return;
	}
	after_test_report(op);
}

static void
on_stopped_after_timeout(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	long st = op->req.status;

	if (!(st >= 200 && st < 400) && st != 404)
		g_warning("jenkins: job=%s build=%" G_GUINT64_FORMAT ": stop "
			  "after the build timeout answered HTTP %ld",
			  op->h.job, op->h.build, st);
	op_done_state(op, PGATE_JOB_DONE, PGATE_VERDICT_FAIL,
		      g_strdup_printf("build #%" G_GUINT64_FORMAT " timed out "
				      "after %" G_GUINT64_FORMAT " s (stopped)",
				      op->h.build, cfg->build_timeout));
}

static void
on_build(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	JK_AUTO_JSON o = NULL;
	json_t *v;
	gboolean in_progress;
	const char *res;
	gint64 ts, duration, now = g_get_real_time() / G_USEC_PER_SEC;
	g_autofree char *job = NULL;

	if (op->req.status == 404) {
		op_done_state(op, PGATE_JOB_LOST, PGATE_VERDICT_NONE,
			      g_strdup_printf("build #%" G_GUINT64_FORMAT " of "
					      "job %s no longer exists",
					      op->h.build, op->h.job));
		return;
	}
	if (op->req.status != 200) {
		g_autofree char *what = g_strdup_printf(
			"read build #%" G_GUINT64_FORMAT " of job %s",
			op->h.build, op->h.job);

		pgate_ci_jenkins__op_http_error(op, what, "no such build");
		return;
	}
	o = pgate_ci_jenkins__op_reply_json(op, "read the build");
	if (o == NULL)
		return;
	job = pgate_ci_jenkins__job_url_path(op->h.job);
	g_free(op->result->url);
	op->result->url = g_strdup_printf("%s/%s%" G_GUINT64_FORMAT "/",
					  cfg->link_base, job, op->h.build);
	/* inProgress turns false only at completion, when logs and test
	 * reports are final; "building" turns false before (and older
	 * servers have only that) */
	v = json_object_get(o, "inProgress");
	if (!json_is_boolean(v))
		v = json_object_get(o, "building");
	if (!json_is_boolean(v)) {
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
			"read build #%" G_GUINT64_FORMAT ": no building or "
			"inProgress in the reply", op->h.build);
		return;
	}
	in_progress = json_is_true(v);
	ts = json_integer_value(json_object_get(o, "timestamp"));
	duration = json_integer_value(json_object_get(o, "duration"));
	if (ts > 0)
		op->result->started = ts / 1000;
	if (in_progress) {
		gint64 started = ts > 0 ? ts / 1000 : op->h.since;

		if (now - started > (gint64)cfg->build_timeout) {
			g_autofree char *rel = jk_build_rel(&op->h, "stop");

			pgate_ci_jenkins__op_post(op, rel, NULL,
				on_stopped_after_timeout);
			return;
		}
		op_done_state(op, PGATE_JOB_RUNNING, PGATE_VERDICT_NONE,
			      g_strdup_printf("build #%" G_GUINT64_FORMAT
					      " running", op->h.build));
		return;
	}
	op->result->state = PGATE_JOB_DONE;
	if (ts > 0 && duration >= 0)
		op->result->finished = (ts + duration) / 1000;
	res = json_string_value(json_object_get(o, "result"));
	g_free(op->result->reason);
	if (res == NULL) {
		op->result->verdict = PGATE_VERDICT_FAIL;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " finished without a "
			"result", op->h.build);
	} else if (g_str_equal(res, "SUCCESS")) {
		op->result->verdict = PGATE_VERDICT_SUCCESS;
		op->result->reason = NULL;
	} else if (g_str_equal(res, "UNSTABLE")) {
		op->result->verdict = PGATE_VERDICT_WARNING;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " unstable", op->h.build);
	} else if (g_str_equal(res, "FAILURE")) {
		op->result->verdict = PGATE_VERDICT_FAIL;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " failed", op->h.build);
	} else if (g_str_equal(res, "ABORTED")) {
		op->result->verdict = PGATE_VERDICT_FAIL;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " aborted", op->h.build);
	} else if (g_str_equal(res, "NOT_BUILT")) {
		op->result->verdict = PGATE_VERDICT_FAIL;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " not built", op->h.build);
	} else {
		g_autofree char *r = pgate_ci_jenkins__excerpt(res, strlen(res),
							       32);

		op->result->verdict = PGATE_VERDICT_FAIL;
		op->result->reason = g_strdup_printf(
			"build #%" G_GUINT64_FORMAT " ended %s", op->h.build,
			r);
	}
	{
		g_autofree char *rel = jk_build_rel(
			&op->h, "testReport/api/json"
			"?tree=failCount,passCount,skipCount");

		pgate_ci_jenkins__op_get(op, rel, JK_JSON_MAX, on_test_report);
	}
}

static void
op_build_get(JkOp *op)
{
	g_autofree char *rel = jk_build_rel(
		&op->h, "api/json?tree=number,url,building,inProgress,result,"
		"timestamp,duration");

	pgate_ci_jenkins__op_get(op, rel, JK_JSON_MAX, on_build);
}

static void
on_queue_cancelled_after_timeout(JkOp *op)
{
	long st = op->req.status;

	if (st == 422) {
		/* it left the queue meanwhile: look again next time */
		op_done_state(op, PGATE_JOB_RUNNING, PGATE_VERDICT_NONE,
			      g_strdup("build starting"));
		return;
	}
	if (!(st >= 200 && st < 400) && st != 404)
		g_warning("jenkins: job=%s queue item %" G_GUINT64_FORMAT
			  ": cancelling after the queue timeout answered HTTP "
			  "%ld", op->h.job, op->h.queue_id, st);
	/* the reason was set when the timeout was seen */
	op->result->state = PGATE_JOB_DONE;
	op->result->verdict = PGATE_VERDICT_ERROR;
	pgate_ci_jenkins__op_finish(op);
}

/* The queue item is known to be build op->h.build: the handle names the
 * build from now on (the caller persists it), and the build is read. */
static void
op_upgrade_to_build(JkOp *op)
{
	g_free(op->handle_out);
	op->handle_out = pgate_ci_jenkins__handle_encode(&op->h);
	g_info("jenkins: job=%s queue item %" G_GUINT64_FORMAT " is build #%"
	       G_GUINT64_FORMAT, op->h.job, op->h.queue_id, op->h.build);
	op_build_get(op);
}

static void
after_find_poll(JkOp *op)
{
	if (op->h.build != 0) {
		op_upgrade_to_build(op);
		return;
	}
	op_done_state(op, PGATE_JOB_LOST, PGATE_VERDICT_NONE,
		      g_strdup_printf("queue item %" G_GUINT64_FORMAT " is "
				      "gone (expired or Jenkins restarted) and "
				      "no build of job %s came from it",
				      op->h.queue_id, op->h.job));
}

static void
on_queue(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	JK_AUTO_JSON o = NULL;
	const char *cls;
	json_t *exe;
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	if (op->req.status == 404) {
		/* forgotten: 5 minutes after it left the queue, or at a
		 * restart; the build it became is still there */
		pgate_ci_jenkins__op_find_build(op, after_find_poll);
		return;
	}
	if (op->req.status != 200) {
		g_autofree char *what = g_strdup_printf(
			"read queue item %" G_GUINT64_FORMAT, op->h.queue_id);

		pgate_ci_jenkins__op_http_error(op, what, "no such queue item");
		return;
	}
	o = pgate_ci_jenkins__op_reply_json(op, "read the queue item");
	if (o == NULL)
		return;
	cls = json_string_value(json_object_get(o, "_class"));
	exe = json_object_get(o, "executable");
	if ((cls && g_str_has_suffix(cls, "$LeftItem")) ||
	    json_object_get(o, "cancelled") != NULL) {
		if (json_is_true(json_object_get(o, "cancelled"))) {
			op_done_state(op, PGATE_JOB_DONE,
				      PGATE_VERDICT_FAIL,
				      g_strdup_printf("queue item %"
						      G_GUINT64_FORMAT
						      " cancelled",
						      op->h.queue_id));
			return;
		}
		if (json_is_object(exe)) {
			json_int_t num = json_integer_value(
				json_object_get(exe, "number"));

			if (num > 0 && num <= (json_int_t)1 << 53) {
				op->h.build = (guint64)num;
				op_upgrade_to_build(op);
				return;
			}
		}
		/* executable:null for a moment: the build is starting */
		op_done_state(op, PGATE_JOB_RUNNING, PGATE_VERDICT_NONE,
			      g_strdup("build starting"));
		return;
	}
	{
		const char *why = json_string_value(json_object_get(o, "why"));
		g_autofree char *w = why ? pgate_ci_jenkins__excerpt(
			why, strlen(why), JK_WHY_MAX) : g_strdup("queued");
		gboolean stuck = json_is_true(json_object_get(o, "stuck"));
		char *reason;

		if (op->h.since > 0 &&
		    now - op->h.since > (gint64)cfg->queue_timeout) {
			g_autofree char *rel = g_strdup_printf(
				"queue/cancelItem?id=%" G_GUINT64_FORMAT,
				op->h.queue_id);

			g_free(op->result->reason);
			op->result->reason = g_strdup_printf(
				"still queued after %" G_GUINT64_FORMAT " s, "
				"cancelled: %s", cfg->queue_timeout, w);
			pgate_ci_jenkins__op_post(op, rel, NULL,
				on_queue_cancelled_after_timeout);
			return;
		}
		reason = g_strdup_printf("%s%s%s", w, stuck ? " (stuck)" : "",
					 op->h.merged ? " (trigger merged "
					 "with another)" : "");
		op_done_state(op, PGATE_JOB_QUEUED, PGATE_VERDICT_NONE,
			      reason);
	}
}

static void
op_queue_get(JkOp *op, JkHandler handler)
{
	g_autofree char *rel = g_strdup_printf(
		"queue/item/%" G_GUINT64_FORMAT "/api/json?tree=id,why,stuck,"
		"cancelled,executable%%5Bnumber%%5D", op->h.queue_id);

	pgate_ci_jenkins__op_get(op, rel, JK_JSON_MAX, handler);
}

static void
op_poll_init(JkOp *op, JkBackend *jb, const char *handle)
{
	memset(op, 0, sizeof *op);
	op->jb = jb;
	op->kind = OP_POLL;
	if (!pgate_ci_jenkins__handle_decode(&op->h, handle, &op->error)) {
		op->done = TRUE;
		return;
	}
	op->result = pgate_ci_result_new();
	if (op->h.build)
		op_build_get(op);
	else
		op_queue_get(op, on_queue);
}

/* Hands out an operation's outcome and frees the rest of it. */
static PgateCiResult *
op_poll_take(JkOp *op, GError **error)
{
	PgateCiResult *r = NULL;

	if (op->error == NULL && op->result != NULL) {
		r = g_steal_pointer(&op->result);
		r->handle = g_steal_pointer(&op->handle_out);
	} else {
		g_propagate_error(error, g_steal_pointer(&op->error));
	}
	pgate_ci_jenkins__op_clear(op);
	return r;
}

void
pgate_ci_jenkins__poll_many(PgateCiBackend *b, const char *const *handles,
			    guint n, PgateCiResult **out_results,
			    GError **out_errors)
{
	JkBackend *jb = (JkBackend *)b;
	g_autofree JkOp *ops = g_new0(JkOp, MAX(n, 1));
	g_autofree JkOp **ptrs = g_new0(JkOp *, MAX(n, 1));

	for (guint i = 0; i < n; i++) {
		op_poll_init(&ops[i], jb, handles[i]);
		ptrs[i] = &ops[i];
	}
	pgate_ci_jenkins__run(jb, ptrs, n);
	for (guint i = 0; i < n; i++) {
		out_errors[i] = NULL;
		out_results[i] = op_poll_take(&ops[i], &out_errors[i]);
	}
}

PgateCiResult *
pgate_ci_jenkins__poll(PgateCiBackend *b, const char *handle, GError **error)
{
	PgateCiResult *r = NULL;
	GError *e = NULL;

	pgate_ci_jenkins__poll_many(b, &handle, 1, &r, &e);
	if (e != NULL)
		g_propagate_error(error, e);
	return r;
}

/* -- cancel -- */

static void on_cancel_queue_item(JkOp *op);

static void
on_stop(JkOp *op)
{
	long st = op->req.status;

	if ((st >= 200 && st < 400) || st == 404) {
		/* 302 is the normal answer; 404: unknown, nothing to stop */
		op->cancelled = TRUE;
		pgate_ci_jenkins__op_finish(op);
		return;
	}
	{
		g_autofree char *what = g_strdup_printf(
			"stop build #%" G_GUINT64_FORMAT " of job %s",
			op->h.build, op->h.job);

		pgate_ci_jenkins__op_http_error(op, what, "no such build");
	}
}

static void
op_stop(JkOp *op)
{
	g_autofree char *rel = jk_build_rel(&op->h, "stop");

	pgate_ci_jenkins__op_post(op, rel, NULL, on_stop);
}

/* The queue item is forgotten: its build, if any, is stopped. */
static void
after_find_cancel(JkOp *op)
{
	if (op->h.build != 0) {
		op_stop(op);
		return;
	}
	op->cancelled = TRUE;   /* nothing left to cancel */
	pgate_ci_jenkins__op_finish(op);
}

static void
on_cancel_lookup(JkOp *op)
{
	JK_AUTO_JSON o = NULL;
	json_t *exe;

	if (op->req.status == 404) {
		pgate_ci_jenkins__op_find_build(op, after_find_cancel);
		return;
	}
	if (op->req.status != 200) {
		pgate_ci_jenkins__op_http_error(op, "read the queue item",
			"no such queue item");
		return;
	}
	o = pgate_ci_jenkins__op_reply_json(op, "read the queue item");
	if (o == NULL)
		return;
	if (json_is_true(json_object_get(o, "cancelled"))) {
		op->cancelled = TRUE;
		pgate_ci_jenkins__op_finish(op);
		return;
	}
	exe = json_object_get(o, "executable");
	if (json_is_object(exe) &&
	    json_integer_value(json_object_get(exe, "number")) > 0) {
		op->h.build = (guint64)json_integer_value(
			json_object_get(exe, "number"));
		op_stop(op);
		return;
	}
	if (++op->cancel_polls > JK_CANCEL_POLLS) {
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_BUSY,
			"cancel queue item %" G_GUINT64_FORMAT
			": its build is starting; cancel again",
			op->h.queue_id);
		return;
	}
	/* executable:null, or still queued after all: look again shortly */
	op_queue_get(op, on_cancel_lookup);
	op->not_before = g_get_monotonic_time() + 100 * 1000;
	if (op->not_before >= op->jb->deadline)
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_BUSY,
			"cancel queue item %" G_GUINT64_FORMAT
			": its build is starting; cancel again",
			op->h.queue_id);
}

static void
on_cancel_queue_item(JkOp *op)
{
	long st = op->req.status;

	if (st == 404) {
		/* unknown: forgotten after it left the queue (its build may
		 * run), or never there */
		pgate_ci_jenkins__op_find_build(op, after_find_cancel);
		return;
	}
	if (st >= 200 && st < 400) {
		/* 204 cancelled */
		op->cancelled = TRUE;
		pgate_ci_jenkins__op_finish(op);
		return;
	}
	if (st == 422) {
		/* not cancellable: it left the queue; stop its build */
		op_queue_get(op, on_cancel_lookup);
		return;
	}
	{
		g_autofree char *what = g_strdup_printf(
			"cancel queue item %" G_GUINT64_FORMAT,
			op->h.queue_id);

		pgate_ci_jenkins__op_http_error(op, what, "no such queue item");
	}
}

gboolean
pgate_ci_jenkins__cancel(PgateCiBackend *b, const char *handle,
			 GError **error)
{
	JkBackend *jb = (JkBackend *)b;
	JkOp op = { 0 };
	JkOp *ops[1] = { &op };
	gboolean ok;

	op.jb = jb;
	op.kind = OP_CANCEL;
	if (!pgate_ci_jenkins__handle_decode(&op.h, handle, error))
		return FALSE;
	if (op.h.build) {
		op_stop(&op);
	} else {
		g_autofree char *rel = g_strdup_printf(
			"queue/cancelItem?id=%" G_GUINT64_FORMAT,
			op.h.queue_id);

		pgate_ci_jenkins__op_post(&op, rel, NULL, on_cancel_queue_item);
	}
	pgate_ci_jenkins__run(jb, ops, 1);
	ok = op.error == NULL && op.cancelled;
	if (!ok)
		g_propagate_error(error, g_steal_pointer(&op.error));
	pgate_ci_jenkins__op_clear(&op);
	return ok;
}
