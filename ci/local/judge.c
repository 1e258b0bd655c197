/* judge.c - from step results to a verdict, a reason and a summary.
 *
 * Plain: every step passed -> SUCCESS; else FAIL naming the first step
 * that did not pass (ERROR when the sandbox could not be set up).
 *
 * Differential (the same steps were run on a commit before, the base):
 *   - a step that fails here and passed there: FAIL, the series broke it;
 *   - a step that fails here and failed there too, or that the base never
 *     reached (an earlier step failed there): WARNING, with the reason
 *     saying "fails on the base too" - the series did not break it, but the
 *     reviewer should know that the tests did not pass;
 *   - every step passed: WARNING when there are more warnings than there,
 *     else SUCCESS.
 * Cancellation and sandbox errors are never compared: FAIL "cancelled" and
 * ERROR.
 */
#include "ci/local/local-private.h"

#include <string.h>

PgateCiLocalRun *
pgate_ci_local__run_new(const char *commit)
{
	PgateCiLocalRun *run = g_new0(PgateCiLocalRun, 1);

	run->commit = g_strdup(commit);
	run->steps = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_ci_local__step_result_free);
	return run;
}

void
pgate_ci_local__run_free(PgateCiLocalRun *run)
{
	if (!run)
		return;
	g_free(run->commit);
	g_ptr_array_unref(run->steps);
	g_free(run);
}

const PgateCiLocalStepResult *
pgate_ci_local__run_first_bad(const PgateCiLocalRun *run)
{
	for (guint i = 0; i < run->steps->len; i++) {
		const PgateCiLocalStepResult *s = run->steps->pdata[i];

		if (s->status != PGATE_CI_LOCAL_STEP_PASSED)
			return s;
	}
	return NULL;
}

static const PgateCiLocalStepResult *
find_step(const PgateCiLocalRun *run, const char *name)
{
	for (guint i = 0; i < run->steps->len; i++) {
		const PgateCiLocalStepResult *s = run->steps->pdata[i];

		if (g_str_equal(s->name, name))
			return s;
	}
	return NULL;
}

static int
verdict_rank(PgateVerdict v)
{
	switch (v) {
	case PGATE_VERDICT_NONE: return 0;
	case PGATE_VERDICT_SUCCESS: return 1;
	case PGATE_VERDICT_WARNING: return 2;
	case PGATE_VERDICT_FAIL: return 3;
	case PGATE_VERDICT_ERROR: return 4;
	}
	return 0;
}

PgateVerdict
pgate_ci_local__verdict_worst(PgateVerdict a, PgateVerdict b)
{
	return verdict_rank(a) >= verdict_rank(b) ? a : b;
}

/* "step test failed (exit 2)", "step build timed out after 600 s", ... */
static char *
step_reason(const PgateCiLocalStepResult *s)
{
	switch (s->status) {
	case PGATE_CI_LOCAL_STEP_FAILED:
		if (s->signal == 0 && s->exit_code >= 0 && s->detail)
			return g_strdup_printf("step %s failed (exit %d: %s)",
					       s->name, s->exit_code,
					       s->detail);
		if (s->signal == 0 && s->exit_code >= 0)
			return g_strdup_printf("step %s failed (exit %d)",
					       s->name, s->exit_code);
		return g_strdup_printf("step %s failed (%s)", s->name,
				       s->detail ? s->detail : "unknown");
	case PGATE_CI_LOCAL_STEP_TIMEOUT:
		return g_strdup_printf("step %s %s", s->name,
				       s->detail ? s->detail : "timed out");
	case PGATE_CI_LOCAL_STEP_CANCELLED:
		return g_strdup("cancelled");
	case PGATE_CI_LOCAL_STEP_ERROR:
		/* the sandbox's errors come before the command runs; a limit
		 * of the work area (the disk) ends one that ran */
		if (s->detail && !g_str_has_prefix(s->detail, "sandbox:"))
			return g_strdup_printf("step %s ended: %s", s->name,
					       s->detail);
		return g_strdup_printf("step %s could not run: %s", s->name,
				       s->detail ? s->detail : "sandbox error");
	case PGATE_CI_LOCAL_STEP_NOT_RUN:
		return g_strdup_printf("step %s did not run", s->name);
	case PGATE_CI_LOCAL_STEP_PASSED:
		break;
	}
	return g_strdup_printf("step %s passed", s->name);
}

/* nipa = on: what the steps said of themselves ("NAME: DESC; ..."),
 * bounded; NULL when none wrote a description. */
static char *
nipa_descs(const PgateCiLocalRun *run)
{
	GString *s = NULL;

	for (guint i = 0; i < run->steps->len; i++) {
		const PgateCiLocalStepResult *st = run->steps->pdata[i];

		if (st->desc == NULL || (s && s->len > 2000))
			continue;
		if (s == NULL)
			s = g_string_new(NULL);
		else
			g_string_append(s, "; ");
		g_string_append_printf(s, "%s: %s", st->name, st->desc);
	}
	return s ? g_string_free(s, FALSE) : NULL;
}

/* nipa = on, every step passed: a step that exited 250 makes the verdict
 * a warning; the reason is what the steps wrote to $DESC_FD (one step
 * alone: its words as they are, as NIPA shows them in the check). */
static gboolean
nipa_judge(const PgateCiLocalRun *run, PgateVerdict *out_v,
	   char **out_reason)
{
	const PgateCiLocalStepResult *warned = NULL, *only = NULL;
	guint skipped = 0, described = 0;
	g_autofree char *descs = nipa_descs(run);

	for (guint i = 0; i < run->steps->len; i++) {
		const PgateCiLocalStepResult *s = run->steps->pdata[i];

		if (s->nipa == PGATE_CI_LOCAL_NIPA_WARNING && warned == NULL)
			warned = s;
		skipped += s->nipa == PGATE_CI_LOCAL_NIPA_SKIP;
		if (s->desc != NULL) {
			described++;
			only = s;
		}
	}
	if (warned == NULL && skipped == 0 && descs == NULL)
		return FALSE;
	if (warned != NULL) {
		*out_v = PGATE_VERDICT_WARNING;
		*out_reason = warned->desc && described == 1
			? g_strdup(warned->desc)
			: g_strdup_printf("step %s: a warning (exit 250)%s%s",
					  warned->name, descs ? "; " : "",
					  descs ? descs : "");
		return TRUE;
	}
	*out_v = PGATE_VERDICT_SUCCESS;
	if (run->steps->len == 1 && only != NULL)
		*out_reason = g_strdup(only->desc);
	else if (skipped > 0)
		*out_reason = g_strdup_printf(
			"%u step(s) passed, %u of them skipped (exit 111)%s%s",
			run->steps->len, skipped, descs ? "; " : "",
			descs ? descs : "");
	else
		*out_reason = g_strdup_printf("%u step(s) passed; %s",
					      run->steps->len, descs);
	return TRUE;
}

PgateVerdict
pgate_ci_local__judge(const PgateCiLocalRun *run, const PgateCiLocalRun *before,
		      char **out_reason)
{
	const PgateCiLocalStepResult *bad = pgate_ci_local__run_first_bad(run);
	g_autofree char *why = NULL;

	if (bad == NULL) {
		PgateVerdict v;

		if (nipa_judge(run, &v, out_reason))
			return v;
		if (before && run->warnings > before->warnings) {
			*out_reason = g_strdup_printf(
				"%u new warning(s) (%u, %u before)",
				run->warnings - before->warnings,
				run->warnings, before->warnings);
			return PGATE_VERDICT_WARNING;
		}
		*out_reason = g_strdup_printf("%u step(s) passed",
					      run->steps->len);
		return PGATE_VERDICT_SUCCESS;
	}
	why = step_reason(bad);
	if (bad->desc != NULL) {
		/* nipa: the step's own words after ours */
		char *w = g_strdup_printf("%s: %s", why, bad->desc);

		g_free(why);
		why = w;
	}
	switch (bad->status) {
	case PGATE_CI_LOCAL_STEP_CANCELLED:
		*out_reason = g_steal_pointer(&why);
		return PGATE_VERDICT_FAIL;
	case PGATE_CI_LOCAL_STEP_ERROR:
		*out_reason = g_steal_pointer(&why);
		return PGATE_VERDICT_ERROR;
	default:
		break;
	}
	if (before) {
		const PgateCiLocalStepResult *there = find_step(before,
								bad->name);

		if (there == NULL ||
		    there->status == PGATE_CI_LOCAL_STEP_NOT_RUN) {
			const PgateCiLocalStepResult *b =
				pgate_ci_local__run_first_bad(before);

			*out_reason = g_strdup_printf(
				"%s; fails on the base too (it stops at step "
				"%s there)", why, b ? b->name : "?");
			return PGATE_VERDICT_WARNING;
		}
		if (there->status != PGATE_CI_LOCAL_STEP_PASSED) {
			*out_reason = g_strdup_printf(
				"%s; fails on the base too", why);
			return PGATE_VERDICT_WARNING;
		}
	}
	*out_reason = g_steal_pointer(&why);
	return PGATE_VERDICT_FAIL;
}

char *
pgate_ci_local__clean_text(const char *s, gssize len, gsize max,
			   gboolean keep_newlines)
{
	g_autofree char *valid = g_utf8_make_valid(s ? s : "", len);
	GString *out = g_string_sized_new(strlen(valid));

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar ch = g_utf8_get_char(p);

		if (ch == '\n' && keep_newlines)
			g_string_append_c(out, '\n');
		else if (ch == '\t')
			g_string_append_c(out, keep_newlines ? '\t' : ' ');
		else if (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && ch < 0xa0))
			g_string_append_c(out, keep_newlines || ch != '\n'
					  ? '?' : ' ');
		else
			g_string_append_len(out, p,
					    g_utf8_next_char(p) - p);
	}
	if (max > 0 && out->len > max) {
		/* cut at a character boundary */
		const char *end = g_utf8_find_prev_char(out->str,
							out->str + max + 1);

		g_string_truncate(out, end ? (gsize)(end - out->str) : 0);
	}
	return g_string_free(out, FALSE);
}

char *
pgate_ci_local__summary(const char *headline,
			const PgateCiLocalStepResult *step)
{
	g_autofree char *head = pgate_ci_local__clean_text(headline, -1, 1024,
							   FALSE);
	GString *s = g_string_new(head);
	g_auto(GStrv) lines = NULL;
	guint n, first;
	gsize budget;

	g_string_append_c(s, '\n');
	if (step == NULL || step->tail == NULL || step->tail[0] == '\0')
		goto out;
	{
		g_autofree char *tail = pgate_ci_local__clean_text(step->tail, -1,
								  0, TRUE);
		gsize l = strlen(tail);

		while (l > 0 && tail[l - 1] == '\n')
			tail[--l] = '\0';
		lines = g_strsplit(tail, "\n", -1);
	}
	n = g_strv_length(lines);
	first = n > PGATE_CI_LOCAL_SUMMARY_LINES
			? n - PGATE_CI_LOCAL_SUMMARY_LINES : 0;
	g_string_append_printf(s, "--- last lines of step %s ---\n",
			       step->name);
	budget = PGATE_CI_LOCAL_SUMMARY_MAX > s->len
			 ? PGATE_CI_LOCAL_SUMMARY_MAX - s->len : 0;
	/* keep the last lines that fit, each at most 200 bytes */
	{
		GPtrArray *kept = g_ptr_array_new_with_free_func(g_free);
		gsize used = 0;

		for (guint i = n; i > first; i--) {
			g_autofree char *line = pgate_ci_local__clean_text(
				lines[i - 1], -1, 200, FALSE);
			gsize need = strlen(line) + 1;

			if (used + need > budget)
				break;
			used += need;
			g_ptr_array_add(kept, g_steal_pointer(&line));
		}
		for (guint i = kept->len; i > 0; i--) {
			g_string_append(s, kept->pdata[i - 1]);
			g_string_append_c(s, '\n');
		}
		g_ptr_array_unref(kept);
	}
out:
	if (s->len > PGATE_CI_LOCAL_SUMMARY_MAX)
		g_string_truncate(s, PGATE_CI_LOCAL_SUMMARY_MAX);
	return g_string_free(s, FALSE);
}
