/* site-data.c - the static site (docs/report-site.md): what the store knows
 * of each series, read into report/'s PgateReportSiteSeries, which
 * report/site.c renders and writes.
 *
 * [report] html_dir, archive_url, public_url, page_size.
 */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"

#include <string.h>

#define LOG_MAX (4u << 20)
#define CHAIN_MAX 50

gboolean
pgate_pipeline_site_config_load(GKeyFile *kf, PgateSiteConfig *c,
				GError **error)
{
	gint64 ps = 100;

	memset(c, 0, sizeof *c);
	if (!pgate_config_string(kf, "report", "html_dir", &c->html_dir,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "report", "archive_url", &c->archive_url,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "report", "public_url", &c->public_url,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_int(kf, "report", "page_size", 100, 10, 10000, FALSE,
			      &ps, PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "patchwork", "url", &c->patchwork_url,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "apply", "repo", &c->repo,
				 PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->page_size = (guint)ps;
	if (c->archive_url && !strstr(c->archive_url, "{msgid}"))
		return pgate_config_error(error, PGATE_PIPELINE_ERROR, "report",
					  "archive_url", "no {msgid} in '%s'",
					  c->archive_url);
	return TRUE;
}

void
pgate_pipeline_site_config_clear(PgateSiteConfig *c)
{
	g_free(c->html_dir);
	g_free(c->archive_url);
	g_free(c->public_url);
	g_free(c->patchwork_url);
	g_free(c->repo);
	pgate_pipeline_apply_config_clear(&c->apply);
	memset(c, 0, sizeof *c);
}

PgateSiteConfig *
pgate_pipeline_site_config_new(GKeyFile *kf, GError **error)
{
	g_autofree PgateSiteConfig *c = g_new0(PgateSiteConfig, 1);

	if (!pgate_pipeline_site_config_load(kf, c, error) ||
	    !pgate_pipeline_apply_config_load(kf, &c->apply, error)) {
		pgate_pipeline_site_config_clear(c);
		return NULL;
	}
	return g_steal_pointer(&c);
}

void
pgate_pipeline_site_config_free(PgateSiteConfig *c)
{
	if (c == NULL)
		return;
	pgate_pipeline_site_config_clear(c);
	g_free(c);
}

const char *
pgate_pipeline_site_config_html_dir(const PgateSiteConfig *c)
{
	return c->html_dir;
}

char *
pgate_pipeline_site_job_url(const PgateSiteConfig *c, const char *ci_key)
{
	return c != NULL ? pgate_report_site_job_url(c->public_url, ci_key)
			 : NULL;
}

static PgateReportOutcome
job_outcome(const PgateCiDoc *c)
{
	if (c->cancelled)
		return PGATE_REPORT_OUTCOME_NONE;
	if (c->has & PGATE_CI_DOC_VERDICT) {
		switch (c->verdict) {
		case PGATE_VERDICT_SUCCESS: return PGATE_REPORT_OUTCOME_PASS;
		case PGATE_VERDICT_FAIL: return PGATE_REPORT_OUTCOME_FAIL;
		case PGATE_VERDICT_WARNING:
		case PGATE_VERDICT_ERROR: return PGATE_REPORT_OUTCOME_WARN;
		default: break;
		}
	}
	if (c->state == PGATE_JOB_LOST)
		return PGATE_REPORT_OUTCOME_WARN;
	return PGATE_REPORT_OUTCOME_PENDING;
}

/* The first step a log says failed ("== step NAME: failed ..."). */
static char *
failed_step(const char *log)
{
	for (const char *p = log; p && (p = strstr(p, "== step ")) != NULL; p += 8) {
		const char *colon = strchr(p + 8, ':');
		const char *nl = strchr(p, '\n');

		if (colon == NULL || (nl && colon > nl) || colon - p > 72)
			continue;
		if (g_str_has_prefix(colon, ": failed") ||
		    g_str_has_prefix(colon, ": timeout"))
			return g_strndup(p + 8, (gsize)(colon - p - 8));
	}
	return NULL;
}

/* Where the series stands, by outcome: a failed build is a failure
 * whatever the pipeline's state. */
static void
series_outcome(PgateReportSiteSeries *s, PgateSeriesState state)
{
	PgateReportOutcome worst = PGATE_REPORT_OUTCOME_NONE;
	const PgateReportSiteJob *bad = NULL;
	gboolean any = FALSE;

	for (guint i = 0; i < s->jobs->len; i++) {
		const PgateReportSiteJob *j = s->jobs->pdata[i];

		any = TRUE;
		if (j->outcome == PGATE_REPORT_OUTCOME_FAIL && bad == NULL)
			bad = j;
		if (worst != PGATE_REPORT_OUTCOME_FAIL &&
		    (j->outcome == PGATE_REPORT_OUTCOME_FAIL ||
		     (j->outcome == PGATE_REPORT_OUTCOME_WARN) ||
		     (j->outcome == PGATE_REPORT_OUTCOME_PENDING &&
		      worst != PGATE_REPORT_OUTCOME_WARN) ||
		     (j->outcome == PGATE_REPORT_OUTCOME_PASS &&
		      worst == PGATE_REPORT_OUTCOME_NONE)))
			worst = j->outcome;
	}
	switch (state) {
	case PGATE_SERIES_APPLY_FAILED:
		s->outcome = PGATE_REPORT_OUTCOME_FAIL;
		s->outcome_text = g_strdup("did not apply");
		return;
	case PGATE_SERIES_INCOMPLETE:
		s->outcome = PGATE_REPORT_OUTCOME_WARN;
		s->outcome_text = g_strdup("incomplete");
		return;
	case PGATE_SERIES_REJECTED:
	case PGATE_SERIES_SKIPPED:
		s->outcome = PGATE_REPORT_OUTCOME_NONE;
		s->outcome_text = g_strdup(pgate_series_state_name(state));
		return;
	case PGATE_SERIES_AWAITING_APPROVAL:
		s->outcome = PGATE_REPORT_OUTCOME_PENDING;
		s->outcome_text = g_strdup("awaiting approval");
		return;
	case PGATE_SERIES_NEW:
	case PGATE_SERIES_WAITING:
		s->outcome = PGATE_REPORT_OUTCOME_PENDING;
		s->outcome_text = g_strdup(pgate_series_state_name(state));
		return;
	default:
		break;
	}
	s->outcome = any ? worst : state == PGATE_SERIES_TESTING
		? PGATE_REPORT_OUTCOME_PENDING : PGATE_REPORT_OUTCOME_NONE;
	if (bad) {
		g_autofree char *step = failed_step(bad->log);

		s->outcome_text = g_strdup_printf("%s failed",
						  step ? step : bad->job ? bad->job
						  : "test");
	} else if (s->outcome == PGATE_REPORT_OUTCOME_PASS) {
		s->outcome_text = g_strdup("passed");
	} else if (s->outcome == PGATE_REPORT_OUTCOME_WARN) {
		s->outcome_text = g_strdup("warnings or CI error");
	} else if (s->outcome == PGATE_REPORT_OUTCOME_PENDING) {
		s->outcome_text = g_strdup("testing");
	} else {
		s->outcome_text = g_strdup(pgate_series_state_name(state));
	}
	if (state == PGATE_SERIES_SUPERSEDED &&
	    strcmp(s->outcome_text, "superseded") != 0) {
		char *t = g_strconcat("superseded; ", s->outcome_text, NULL);

		g_free(s->outcome_text);
		s->outcome_text = t;
	}
}

/* The log at @path: relative to the state directory (ci.h), or, as
 * documents written by earlier versions have it, relative to the working directory of
 * the pass that stored it (which held the state directory's own
 * relative name: "patchgate-state/ci-local/..."), or absolute. */
static char *
read_log(const char *state_dir, const char *path, gboolean *truncated)
{
	g_autofree char *full = g_path_is_absolute(path) || state_dir == NULL
		? g_strdup(path) : g_build_filename(state_dir, path, NULL);
	g_autoptr(GMappedFile) mf = g_mapped_file_new(full, FALSE, NULL);
	gsize len;

	if (mf == NULL && !g_path_is_absolute(path) && state_dir != NULL)
		mf = g_mapped_file_new(path, FALSE, NULL);
	if (mf == NULL)
		return NULL;
	len = g_mapped_file_get_length(mf);
	*truncated = len > LOG_MAX;
	return g_strndup(g_mapped_file_get_contents(mf), MIN(len, LOG_MAX));
}

/* The @hunk-th hunk (1-based) of @file in the diff of message @num. */
static char *
failing_hunk(PgateStoreTxn *txn, guint64 num, const char *file, gint64 hunk)
{
	g_autoptr(GBytes) raw = pgate_store_message_raw(txn, num, NULL);
	g_autofree char *text = NULL;
	g_autofree char *head = NULL;
	const char *p, *end;
	gint64 n = 0;

	if (raw == NULL || file == NULL || hunk <= 0 ||
	    g_bytes_get_size(raw) > (8u << 20))
		return NULL;
	text = g_strndup(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw));
	head = g_strdup_printf("\n+++ b/%s\n", file);
	p = strstr(text, head);
	if (p == NULL)
		return NULL;
	p += strlen(head);
	while (*p) {
		if (g_str_has_prefix(p, "diff --git ") || g_str_has_prefix(p, "-- \n"))
			return NULL;
		if (g_str_has_prefix(p, "@@") && ++n == hunk)
			break;
		p = strchr(p, '\n');
		if (p == NULL)
			return NULL;
		p++;
	}
	if (*p == '\0')
		return NULL;
	for (end = strchr(p, '\n'); end && end[1] &&
	     (end[1] == ' ' || end[1] == '+' || end[1] == '-' || end[1] == '\\');
	     end = strchr(end + 1, '\n'))
		;
	return g_strndup(p, end ? (gsize)(end - p) : MIN(strlen(p), 65536));
}

static char *
patchwork_base(PgateStoreTxn *txn, const char *sid, json_t **out_patches)
{
	g_autofree char *key = pgate_state_key(sid, "patchwork", NULL);
	g_autoptr(json_t) doc = pgate_state_get(txn, key, NULL);
	const char *url = pgate_state_str(doc, "url");
	json_t *patches = json_object_get(doc, "patches");

	*out_patches = json_is_object(patches) ? json_incref(patches) : NULL;
	if (url == NULL)
		return NULL;
	return g_strdup(url);
}

/* The jobs and apply attempts of @sid into @s (their logs only when
 * @logs). */
static gboolean
read_results(PgateStoreTxn *txn, const PgateSiteConfig *c,
	     const char *state_dir, const PgateSeriesRec *r,
	     PgateReportSiteSeries *s, gboolean full, GError **error)
{
	g_autoptr(PgateSeriesDocs) st =
		pgate_series_docs_read(txn, r->id, error);
	PgateSeriesState state;

	if (st == NULL)
		return FALSE;
	state = st->pipeline ? st->pipeline->state : PGATE_SERIES_NEW;
	if (r->superseded_by != NULL &&
	    (state == PGATE_SERIES_NEW || state == PGATE_SERIES_WAITING)) {
		/* a newer version is there and no pass has come to this one
		 * (a replay, or both came between two passes): it is
		 * superseded, not new, and the next pass will say so too */
		state = PGATE_SERIES_SUPERSEDED;
		s->state_reason = g_strdup("a newer version came before it "
					   "was tested");
	} else if (st->pipeline && st->pipeline->reason) {
		s->state_reason = g_strdup(st->pipeline->reason);
	}
	s->state = g_strdup(pgate_series_state_name(state));
	for (guint i = 0; i < st->apply->len; i++) {
		const PgateApplyDoc *a = st->apply->pdata[i];
		PgateReportSiteApply *x = pgate_report_site_apply_new();

		x->target = g_strdup(a->target);
		if (a->has & PGATE_APPLY_DOC_STATUS)
			x->status = g_strdup(pgate_apply_status_name(
				a->status));
		x->base = g_strdup(a->base);
		x->head = g_strdup(a->head);
		x->ref = g_strdup(a->ref);
		if (a->commits && a->commits->len &&
		    pgate_apply_doc_applied(a)) {
			x->commits = g_ptr_array_new_with_free_func(g_free);
			for (guint k = 0; k < a->commits->len; k++)
				g_ptr_array_add(x->commits,
						g_strdup(a->commits->pdata[k]));
		}
		if (a->failure) {
			x->fail_patch = a->failure->patch;
			x->fail_hunk = a->failure->hunk;
			x->fail_file = g_strdup(a->failure->file);
			x->fail_reason = g_strdup(a->failure->reason);
			if (full && a->failure->patch > 0) {
				for (guint k = 0; k < r->patches->len; k++) {
					const PgateSeriesPatch *p = r->patches->pdata[k];

					if (p->number == (guint32)a->failure->patch) {
						x->fail_hunk_text = failing_hunk(
							txn, p->num, a->failure->file,
							a->failure->hunk);
						break;
					}
				}
			}
		}
		g_ptr_array_add(s->apply, x);
	}
	for (guint i = 0; i < st->ci->len; i++) {
		const PgateCiDoc *d = st->ci->pdata[i];
		PgateReportSiteJob *j = pgate_report_site_job_new();

		j->key = g_strdup(d->key);
		j->target = g_strdup(d->target);
		j->job = g_strdup(d->job);
		j->backend = g_strdup(d->backend);
		j->result = g_strdup(d->cancelled ? "cancelled"
			: (d->has & PGATE_CI_DOC_VERDICT)
			? pgate_verdict_name(d->verdict)
			: pgate_job_state_name(d->state));
		j->outcome = job_outcome(d);
		j->reason = g_strdup(d->reason);
		j->summary = g_strdup(d->summary);
		j->url = g_strdup(d->url);
		j->submitted = d->submitted;
		j->finished = d->finished;
		j->has_tests = (d->has & PGATE_CI_DOC_TESTS) != 0;
		j->tests_total = d->tests_total;
		j->tests_failed = d->tests_failed;
		j->tests_skipped = d->tests_skipped;
		if (d->has & PGATE_CI_DOC_WARNINGS_ADDED)
			j->warnings_added = d->warnings_added;
		if (d->log_path)
			j->log = read_log(state_dir, d->log_path, &j->log_truncated);
		g_ptr_array_add(s->jobs, j);
	}
	series_outcome(s, state);
	(void)c;
	return TRUE;
}

static char *
series_json(PgateStoreTxn *txn, const PgateSeriesRec *r, GError **error)
{
	g_autofree char *prefix = g_strdup_printf("%s/", r->id);
	g_autoptr(GPtrArray) stages = pgate_store_table_scan(
		txn, PGATE_STORE_TABLE_STAGE, prefix, error);
	g_autoptr(json_t) top = NULL;
	json_t *sj, *docs, *ex;
	char *s;

	if (stages == NULL)
		return NULL;
	/* (kept the same as cli/cmd-series.c's series_show: t0700 compares
	 * the two byte for byte) */
	ex = pgate_threading_series_explain(txn, r, error);
	if (ex == NULL)
		return NULL;
	sj = pgate_threading_series_json(txn, r);
	json_object_set_new(sj, "explain", ex);
	docs = json_object();
	for (guint i = 0; i < stages->len; i++) {
		const PgateStoreEntry *e = stages->pdata[i];
		json_t *doc = pgate_state_decode(e->val, NULL);

		if (doc != NULL)
			json_object_set_new(docs, e->key + strlen(prefix), doc);
	}
	json_object_set_new(sj, "stages", docs);
	top = json_pack("{s:i,s:[o]}", "format_version", 1, "series", sj);
	s = json_dumps(top, JSON_COMPACT | JSON_ENSURE_ASCII |
		       JSON_REAL_PRECISION(6));
	if (s == NULL)
		return NULL;
	{
		char *out = g_strconcat(s, "\n", NULL);

		free(s);
		return out;
	}
}

static const GPtrArray *
applied_commits(const PgateReportSiteSeries *s)
{
	for (guint i = 0; i < s->apply->len; i++) {
		const PgateReportSiteApply *a = s->apply->pdata[i];

		if (a->commits)
			return a->commits;
	}
	return NULL;
}

/* At most PGATE_REPORT_SITE_DIFF_MAX bytes of @s (@n long), cut at a
 * line's end; *@out_cut whether anything was left out. */
static char *
bounded(const char *s, gsize n, gboolean *out_cut)
{
	gsize keep = n;

	*out_cut = n > PGATE_REPORT_SITE_DIFF_MAX;
	if (*out_cut) {
		const char *nl = g_strrstr_len(s, PGATE_REPORT_SITE_DIFF_MAX,
					       "\n");

		keep = nl ? (gsize)(nl - s) + 1 : PGATE_REPORT_SITE_DIFF_MAX;
	}
	return g_utf8_make_valid(s, (gssize)keep);
}

/* What `git am` reads of message @num (%NULL when it cannot be read). */
static PgateMailinfo *
am_read(PgateStoreTxn *txn, guint64 num)
{
	g_autoptr(GBytes) raw = num ? pgate_store_message_raw(txn, num, NULL)
				    : NULL;

	return raw ? pgate_mailinfo_parse(raw, FALSE, NULL) : NULL;
}

/* (nullable): @mi's message without its subject line: a cover's text. */
static char *
am_text(const PgateMailinfo *mi)
{
	const char *body = mi && mi->message ? strstr(mi->message, "\n\n")
					     : NULL;
	gboolean cut;

	if (body == NULL || body[2] == '\0')
		return NULL;
	return bounded(body + 2, strlen(body + 2), &cut);
}

/* (nullable): @mi's patch, from the diffstat on. */
static char *
am_diff(const PgateMailinfo *mi, gboolean *out_cut)
{
	const char *d;
	gsize n;

	*out_cut = FALSE;
	if (mi == NULL || mi->diff == NULL || g_bytes_get_size(mi->diff) == 0)
		return NULL;
	d = g_bytes_get_data(mi->diff, &n);
	/* the "---" before the diffstat is no content */
	if (n >= 4 && memcmp(d, "---\n", 4) == 0)
		d += 4, n -= 4;
	return bounded(d, n, out_cut);
}

/* The author `git am` would record for patch mail @m, read as @mi
 * (nullable): its From, but for mail a relay sent on someone's behalf
 * (B4 Relay's devnull+...@kernel.org, a list's "Name via list"
 * rewriting), whose in-body From: names the author: what git mailinfo
 * reads. */
static char *
am_author(const PgateMessageRec *m, const PgateMailinfo *mi)
{
	const char *email = m->from_email ? m->from_email : "";

	if ((g_str_has_prefix(email, "devnull+") ||
	     (m->from_name && strstr(m->from_name, " via ") != NULL)) &&
	    mi != NULL && mi->author_email && *mi->author_email)
		return mi->author_name && *mi->author_name
			? g_strdup_printf("%s <%s>", mi->author_name,
					  mi->author_email)
			: g_strdup(mi->author_email);
	return m->from_name && *m->from_name
		? g_strdup_printf("%s <%s>", m->from_name, email)
		: g_strdup(email);
}

/* The commits of series @sid applied now, in-process, onto @base: for a
 * version that was never applied (superseded before its turn came, as on
 * a replayed archive), so that the site still shows what changed.  Only
 * objects are written to the repository (libgit2, as an apply writes
 * them): no ref, no push, nothing stored, nothing run, and the same
 * checks as any apply.  %NULL when it does not apply whole. */
static GPtrArray *
commits_in_process(PgateStoreTxn *txn, const PgateSiteConfig *c,
		   const char *sid, const char *base)
{
	g_autoptr(PgateSeriesRec) rec = pgate_store_series_get(txn, sid, NULL);
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(PgateApplyResult) res = NULL;
	g_autoptr(GError) error = NULL;
	PgateApplyOptions opts = PGATE_APPLY_OPTIONS_INIT;

	if (rec == NULL || rec->patches->len == 0 ||
	    rec->patches->len < rec->total)
		return NULL;
	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		GBytes *raw = pgate_store_message_raw(txn, p->num, NULL);

		if (raw == NULL)
			return NULL;
		g_ptr_array_add(raws, raw);
	}
	/* the same commits at every build: dated by their mail, never now */
	opts.committer_date_is_author_date = TRUE;
	opts.committer_time = rec->date > 0 ? rec->date : 0;
	res = pgate_apply_series(c->repo, base, raws, &opts, &error);
	if (res == NULL) {
		g_message("series=%s interdiff: %s", sid, error->message);
		return NULL;
	}
	if (res->status != PGATE_APPLY_OK || res->commits->len != rec->patches->len)
		return NULL;
	return g_ptr_array_ref(res->commits);
}

/* What a version applied onto: the parent of its first commit. */
static char *
base_of(const GPtrArray *commits)
{
	return g_strconcat((const char *)commits->pdata[0], "^", NULL);
}

/* The base the newest applied version of @recs (a chain) went onto, for
 * two versions neither of which was applied; %NULL when none was. */
static char *
chain_base(PgateStoreTxn *txn, const PgateSiteConfig *c, const char *state_dir,
	   GPtrArray *recs)
{
	for (guint i = recs->len; i-- > 0;) {
		g_autoptr(PgateReportSiteSeries) x = pgate_report_site_series_new();
		const GPtrArray *a;

		if (!read_results(txn, c, state_dir, recs->pdata[i], x, FALSE,
				  NULL))
			return NULL;
		if ((a = applied_commits(x)) != NULL && a->len > 0)
			return base_of(a);
	}
	return NULL;
}

/* The interdiff and range-diff of @prev (series @prev_id) and @cur (@r)
 * into @s: of their applied commits, and for one that was not applied,
 * of its patches applied in-process onto the base the other went onto
 * (both not applied: onto the base of the newest version of @recs that
 * was).  A failure is logged: the page goes without. */
static void
between(PgateStoreTxn *txn, const PgateSiteConfig *c, const char *state_dir,
	GPtrArray *recs, const char *prev_id, const PgateReportSiteSeries *prev,
	const PgateSeriesRec *r, const PgateReportSiteSeries *cur,
	PgateReportSiteSeries *s)
{
	const GPtrArray *a = applied_commits(prev), *b = applied_commits(cur);
	g_autoptr(GPtrArray) a_now = NULL, b_now = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *base = NULL;

	if (c->repo == NULL)
		return;
	if (a != NULL && a->len == 0)
		a = NULL;
	if (b != NULL && b->len == 0)
		b = NULL;
	if (a == NULL || b == NULL) {
		base = b != NULL ? base_of(b) : a != NULL ? base_of(a)
			: chain_base(txn, c, state_dir, recs);
		if (base == NULL)
			return;
	}
	if (a == NULL)
		a = a_now = commits_in_process(txn, c, prev_id, base);
	if (b == NULL && a != NULL)
		b = b_now = commits_in_process(txn, c, r->id, base);
	if (a == NULL || b == NULL)
		return;
	if (!pgate_report_site_between(c->repo, a, b, &s->interdiff,
				       &s->range_diff, &error))
		g_message("series=%s interdiff: %s", s->id, error->message);
}

/* The chain of versions @r belongs to, oldest first. */
static gboolean
read_chain(PgateStoreTxn *txn, const PgateSiteConfig *c, const char *state_dir,
	   const PgateSeriesRec *r, PgateReportSiteSeries *s, GError **error)
{
	g_autoptr(GPtrArray) recs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_rec_free);
	g_autofree char *first = g_strdup(r->id);

	/* back to the first version */
	for (guint n = 0; n < CHAIN_MAX; n++) {
		g_autoptr(PgateSeriesRec) x = pgate_store_series_get(txn, first, NULL);

		if (x == NULL || x->supersedes == NULL)
			break;
		g_free(first);
		first = g_strdup(x->supersedes);
	}
	for (char *id = g_strdup(first); id && recs->len < CHAIN_MAX;) {
		PgateSeriesRec *x = pgate_store_series_get(txn, id, NULL);

		g_free(id);
		if (x == NULL)
			break;
		id = g_strdup(x->superseded_by);
		g_ptr_array_add(recs, x);
	}
	for (guint i = 0; i < recs->len; i++) {
		const PgateSeriesRec *x = recs->pdata[i];
		g_autoptr(PgateReportSiteSeries) tmp = pgate_report_site_series_new();
		PgateReportSiteVersion *v = pgate_report_site_version_new();

		tmp->version = x->version;
		if (!read_results(txn, c, state_dir, x, tmp, FALSE, error))
			return FALSE;
		v->id = g_strdup(x->id);
		v->version = x->version;
		v->rule = g_strdup(x->link_reason);
		v->state = g_strdup(tmp->outcome_text);
		v->outcome = tmp->outcome;
		v->date = x->date;
		g_ptr_array_add(s->versions, v);
		/* the version right before this one: the sentence */
		if (i + 1 < recs->len &&
		    strcmp(((PgateSeriesRec *)recs->pdata[i + 1])->id, r->id) == 0 &&
		    s->compare == NULL) {
			g_autoptr(PgateReportSiteSeries) cur =
				pgate_report_site_series_new();

			cur->version = r->version;
			if (!read_results(txn, c, state_dir, r, cur, FALSE, error))
				return FALSE;
			s->compare = pgate_report_site_compare(tmp, cur);
			between(txn, c, state_dir, recs, x->id, tmp, r, cur, s);
		}
	}
	return TRUE;
}

char *
pgate_pipeline_site_compare_text(PgateStoreTxn *txn, const char *state_dir,
				 const PgateSeriesRec *rec)
{
	PgateSiteConfig c = { 0 };
	g_autoptr(PgateSeriesRec) prev = NULL;
	g_autoptr(PgateReportSiteSeries) a = NULL;
	g_autoptr(PgateReportSiteSeries) b = NULL;

	if (rec->supersedes == NULL ||
	    (prev = pgate_store_series_get(txn, rec->supersedes, NULL)) == NULL)
		return NULL;
	a = pgate_report_site_series_new();
	b = pgate_report_site_series_new();
	a->version = prev->version;
	b->version = rec->version;
	if (!read_results(txn, &c, state_dir, prev, a, FALSE, NULL) ||
	    !read_results(txn, &c, state_dir, rec, b, FALSE, NULL))
		return NULL;
	return pgate_report_site_compare(a, b);
}

/* What the series was merged as, from SERIES/upstream: each matched
 * patch's commit, branch and rule ("2/3 1a2b3c4d5e6f on master, by
 * link"), "; "-separated; %NULL when nothing matched (or on error, with
 * @error set). */
static char *
merged_as(PgateStoreTxn *txn, const PgateSeriesRec *r, GError **error)
{
	g_autoptr(GPtrArray) matches = pgate_upstream_series_read(txn, r, error);
	g_autoptr(GString) out = NULL;

	if (matches == NULL || matches->len == 0)
		return NULL;
	out = g_string_new(NULL);
	for (guint i = 0; i < matches->len; i++) {
		const PgateUpstreamMatch *m = matches->pdata[i];
		guint32 number = 0;

		for (guint k = 0; k < r->patches->len; k++) {
			const PgateSeriesPatch *p = r->patches->pdata[k];

			if (g_strcmp0(p->msgid, m->msgid) == 0)
				number = p->number;
		}
		if (out->len > 0)
			g_string_append(out, "; ");
		g_string_append_printf(out, "%u/%u %.12s on %s, by %s%s", number,
				       r->total, m->commit ? m->commit : "?",
				       m->branch ? m->branch : "?",
				       pgate_upstream_rule_to_string(m->rule),
				       m->changes ? " (applied with changes)" : "");
	}
	if (matches->len < r->patches->len)
		g_string_append_printf(out, " (%u of %u patches)", matches->len,
				       r->patches->len);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* [project NAME] (docs/config.md, "Projects"): the state each project's
 * pipeline document (SID@NAME/pipeline) holds, one line a project. */
static gboolean
read_projects(PgateStoreTxn *txn, const PgateSeriesRec *r,
	      PgateReportSiteSeries *s, GError **error)
{
	g_autofree char *prefix = g_strdup_printf("%s@", r->id);
	g_autoptr(GPtrArray) v = pgate_store_table_scan(
		txn, PGATE_STORE_TABLE_STAGE, prefix, error);

	if (v == NULL)
		return FALSE;
	for (guint i = 0; i < v->len; i++) {
		const PgateStoreEntry *e = v->pdata[i];
		const char *name = e->key + strlen(prefix);
		const char *slash = strchr(name, '/');
		g_autoptr(json_t) doc = NULL;
		const char *state, *reason;

		if (slash == NULL || strcmp(slash, "/pipeline") != 0)
			continue;
		doc = pgate_state_decode(e->val, NULL);
		state = pgate_state_str(doc, "state");
		reason = pgate_state_str(doc, "reason");
		if (s->projects == NULL)
			s->projects = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(s->projects, g_strdup_printf(
			"%.*s: %s%s%s", (int)(slash - name), name,
			state ? state : "?", reason && *reason ? " - " : "",
			reason && *reason ? reason : ""));
	}
	return TRUE;
}

/* Oldest first; by number when two have the same date. */
static gint
reply_cmp(gconstpointer a, gconstpointer b)
{
	const PgateMessageRec *x = *(PgateMessageRec *const *)a;
	const PgateMessageRec *y = *(PgateMessageRec *const *)b;

	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

/* The replies to @r's cover and patches: the messages whose References
 * or In-Reply-To name one of them and that are replies (not a later
 * version's mail), oldest first. */
static gboolean
read_replies(PgateStoreTxn *txn, const PgateSeriesRec *r,
	     PgateReportSiteSeries *s, GError **error)
{
	g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(guint64));
	g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash,
						      g_int64_equal);
	g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_message_rec_free);

	if (r->cover && !pgate_store_refs_lookup_into(txn, r->cover, nums, error))
		return FALSE;
	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];

		if (!pgate_store_refs_lookup_into(txn, p->msgid, nums, error))
			return FALSE;
	}
	for (guint i = 0; i < nums->len; i++) {
		guint64 *num = &g_array_index(nums, guint64, i);
		PgateMessageRec *m;

		if (!g_hash_table_add(seen, num))
			continue;
		m = pgate_store_message_get(txn, *num, NULL);
		if (m == NULL)
			continue;
		if (m->kind != PGATE_MSG_KIND_REPLY) {
			pgate_message_rec_free(m);
			continue;
		}
		g_ptr_array_add(found, m);
	}
	g_ptr_array_sort(found, reply_cmp);
	s->replies_total = found->len;
	for (guint i = 0; i < found->len && i < PGATE_REPORT_SITE_REPLIES_MAX; i++) {
		const PgateMessageRec *m = found->pdata[i];
		PgateReportSiteReply *x = pgate_report_site_reply_new();

		x->msgid = g_strdup(m->msgid);
		x->subject = g_strdup(m->subject);
		x->author = g_strdup(m->from_name && *m->from_name ? m->from_name
				     : m->from_email);
		x->date = m->date;
		g_ptr_array_add(s->replies, x);
	}
	return TRUE;
}

/* [apply] push_url as a reader of the site may fetch from it: %NULL for
 * a path or file:// URL (this machine's), and without a password in its
 * user part ("https://user:secret@host/x" -> "https://host/x"). */
static char *
fetch_url(const char *push_url)
{
	gsize start, colon, end;
	GString *out;

	if (push_url == NULL || *push_url == '\0' || *push_url == '/' ||
	    g_str_has_prefix(push_url, "file:"))
		return NULL;
	/* scp-like (user@host:path), or no password: as it is */
	if (!pgate_url_userinfo(push_url, &start, &colon, &end) || colon == 0)
		return g_strdup(push_url);
	out = g_string_new_len(push_url, start);
	g_string_append(out, push_url + end);
	return g_string_free(out, FALSE);
}

/* The series' mbox (no cover: what git am takes; the review trailers as
 * series mbox --trailers adds them) and a fetch line per published
 * result.  A series whose mail git mailinfo cannot read has no mbox. */
static gboolean
read_get(PgateStoreTxn *txn, const PgateSiteConfig *c, const char *state_dir,
	 const PgateSeriesRec *r, PgateReportSiteSeries *s, GError **error)
{
	PgateSeriesMboxOptions o = { .trailers = TRUE, .cover = FALSE };
	g_autofree char *url = fetch_url(c->apply.push_url);
	GError *local = NULL;

	if (r->patches->len > 0) {
		s->mbox = pgate_pipeline_series_mbox(txn, state_dir, &c->apply,
						     r->id, &o, NULL, &local);
		if (s->mbox == NULL &&
		    !g_error_matches(local, PGATE_PIPELINE_ERROR,
				     PGATE_ERROR_INVALID) &&
		    !g_error_matches(local, PGATE_PIPELINE_ERROR,
				     PGATE_ERROR_NOT_FOUND)) {
			g_propagate_error(error, local);
			return FALSE;
		}
		g_clear_error(&local);
	}
	for (guint i = 0; url != NULL && i < s->apply->len; i++) {
		const PgateReportSiteApply *a = s->apply->pdata[i];

		if (a->ref == NULL || a->status == NULL ||
		    (strcmp(a->status, "ok") != 0 &&
		     strcmp(a->status, "already-applied") != 0))
			continue;
		if (s->fetch == NULL)
			s->fetch = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(s->fetch, g_strdup_printf("%s %s", url, a->ref));
	}
	return TRUE;
}

PgateReportSiteSeries *
pgate_pipeline_site_series(PgateStoreTxn *txn, const PgateSiteConfig *c,
			   const char *state_dir, const char *sid,
			   GError **error)
{
	g_autoptr(PgateSeriesRec) r = pgate_store_series_get(txn, sid, error);
	g_autoptr(PgateReportSiteSeries) s = NULL;
	g_autoptr(json_t) pw = NULL;
	g_autofree char *pw_base = NULL;

	if (r == NULL)
		return NULL;
	s = pgate_report_site_series_new();
	s->id = g_strdup(r->id);
	s->name = g_strdup(r->name);
	s->project = g_strdup(r->project);
	s->submitter = g_strdup(r->submitter_name && *r->submitter_name
				? r->submitter_name : r->submitter_email);
	s->submitter_email = g_strdup(r->submitter_email);
	s->date = r->date;
	s->version = r->version;
	s->received = r->patches->len;
	s->total = r->total;
	s->cover_msgid = g_strdup(r->cover);
	if (r->cover_num != 0) {
		g_autoptr(PgateMailinfo) mi = am_read(txn, r->cover_num);

		s->cover_text = am_text(mi);
	}
	for (guint i = 0; r->deps && i < r->deps->len; i++) {
		const PgateSeriesDep *d = r->deps->pdata[i];

		g_ptr_array_add(s->deps, pgate_series_dep_new(d->kind, d->value));
	}
	pw_base = patchwork_base(txn, r->id, &pw);
	if (pw_base == NULL && c->patchwork_url)
		pw_base = g_strdup(c->patchwork_url);
	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];
		PgateReportSitePatch *x = pgate_report_site_patch_new();
		g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, p->num,
								       NULL);
		json_t *pwid = json_object_get(pw, p->msgid);
		/* read once: the diff, and the author of relayed mail */
		g_autoptr(PgateMailinfo) mi = am_read(txn, p->num);

		x->number = p->number;
		x->msgid = g_strdup(p->msgid);
		x->subject = g_strdup(p->subject);
		x->diff = am_diff(mi, &x->diff_truncated);
		if (m) {
			x->author = am_author(m, mi);
			for (guint k = 0; m->trailers && k < m->trailers->len; k++) {
				const PgateTrailer *t = m->trailers->pdata[k];

				g_ptr_array_add(x->trailers, pgate_trailer_new(t->name,
									      t->value));
			}
		}
		for (guint k = 0; p->trailers && k < p->trailers->len; k++) {
			const PgateTrailer *t = p->trailers->pdata[k];

			g_ptr_array_add(x->trailers, pgate_trailer_new(t->name, t->value));
		}
		if (pw_base && json_is_integer(pwid))
			x->patchwork_url = g_strdup_printf("%s%spatch/%" JSON_INTEGER_FORMAT
							   "/", pw_base,
							   g_str_has_suffix(pw_base, "/")
							   ? "" : "/",
							   json_integer_value(pwid));
		g_ptr_array_add(s->patches, x);
	}
	if (!read_results(txn, c, state_dir, r, s, TRUE, error) ||
	    !read_chain(txn, c, state_dir, r, s, error) ||
	    !read_get(txn, c, state_dir, r, s, error) ||
	    !read_replies(txn, r, s, error))
		return NULL;
	s->merged_as = merged_as(txn, r, error);
	if (s->merged_as == NULL && error != NULL && *error != NULL)
		return NULL;
	s->upstream = pgate_upstream_explain(txn, r, error);
	if (s->upstream == NULL)
		return NULL;
	if (s->upstream->len == 0)
		g_clear_pointer(&s->upstream, g_ptr_array_unref);
	if (!read_projects(txn, r, s, error))
		return NULL;
	s->json = series_json(txn, r, error);
	if (s->json == NULL)
		return NULL;
	return g_steal_pointer(&s);
}

gboolean
pgate_pipeline_site_update(PgateStore *store, const PgateSiteConfig *c,
			   const char *state_dir, PgateReportSite *site,
			   const char *const *ids, PgateReportSiteStats *stats,
			   GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GHashTable) done = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, NULL);
	g_autoptr(GPtrArray) todo = g_ptr_array_new_with_free_func(g_free);
	gint64 t0 = g_get_monotonic_time();

	if (txn == NULL)
		return FALSE;
	if (ids == NULL || pgate_report_site_needs_full(site)) {
		PgateStoreSeriesIter it;
		PgateSeriesRec *r;
		g_autoptr(GError) local = NULL;

		pgate_report_site_set_full(site, TRUE);
		pgate_store_series_iter_init(&it, txn);
		while (pgate_store_series_iter_next(&it, &r, &local)) {
			g_ptr_array_add(todo, g_strdup(r->id));
			pgate_series_rec_free(r);
		}
		pgate_store_series_iter_clear(&it);
		if (local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	} else {
		pgate_report_site_set_full(site, FALSE);
		/* each series asked for and the other versions of its chain,
		 * whose timelines show it */
		for (guint i = 0; ids[i]; i++) {
			g_autofree char *id = g_strdup(ids[i]);

			for (guint n = 0; id && n < CHAIN_MAX; n++) {
				g_autoptr(PgateSeriesRec) x = pgate_store_series_get(
					txn, id, NULL);

				g_ptr_array_add(todo, g_strdup(id));
				g_free(id);
				id = x ? g_strdup(x->supersedes) : NULL;
			}
			g_free(id);
			id = g_strdup(ids[i]);
			for (guint n = 0; id && n < CHAIN_MAX; n++) {
				g_autoptr(PgateSeriesRec) x = pgate_store_series_get(
					txn, id, NULL);

				g_free(id);
				id = x ? g_strdup(x->superseded_by) : NULL;
				if (id)
					g_ptr_array_add(todo, g_strdup(id));
			}
		}
	}
	for (guint i = 0; i < todo->len; i++) {
		const char *id = todo->pdata[i];
		g_autoptr(PgateReportSiteSeries) s = NULL;
		g_autoptr(GError) local = NULL;

		if (!g_hash_table_add(done, g_strdup(id)))
			continue;
		s = pgate_pipeline_site_series(txn, c, state_dir, id, &local);
		if (s == NULL) {
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_NOT_FOUND) && ids != NULL)
				continue;    /* gone: the next full build drops it */
			g_propagate_prefixed_error(error, g_steal_pointer(&local),
						   "series %s: ", id);
			return FALSE;
		}
		if (!pgate_report_site_put(site, s, error))
			return FALSE;
	}
	if (!pgate_report_site_finish(site, stats, error))
		return FALSE;
	if (stats)
		stats->usec = g_get_monotonic_time() - t0;
	return TRUE;
}

PgateReportSite *
pgate_pipeline_site_open(const PgateSiteConfig *c, const char *dir,
			 GError **error)
{
	PgateReportSiteOptions o = {
		.archive_url = c->archive_url, .public_url = c->public_url,
		.page_size = c->page_size,
	};

	return pgate_report_site_open(dir, &o, error);
}

gboolean
pgate_pipeline_site_build(PgateStore *store, const PgateSiteConfig *c,
			  const char *state_dir, const char *dir,
			  const char *const *ids, PgateReportSiteStats *stats,
			  GError **error)
{
	g_autoptr(PgateReportSite) site = pgate_pipeline_site_open(c, dir, error);

	/* (stats->usec: the update, without reading the cache, as the
	 * daemon pays it) */
	return site != NULL &&
	       pgate_pipeline_site_update(store, c, state_dir, site, ids, stats,
					  error);
}
