/* pipeline.c - one pass of the pipeline over every series (patchgate run).
 *
 * Each series has a document SERIES/pipeline (PgateSeriesDoc, state.c)
 * whose state (PgateSeriesState) is one of (docs/pipeline.md):
 *
 *   waiting            not complete yet, within [pipeline] wait_complete
 *   incomplete         still not complete after it: reported, not tested
 *   awaiting-approval  from a sender the trust policy does not trust
 *   rejected           a maintainer said no (patchgate reject)
 *   skipped            nothing to test (a pull request)
 *   apply-failed       applied nowhere: reported
 *   testing            CI jobs submitted, polled each pass
 *   done               results reported
 *   superseded         a newer version exists; its jobs were cancelled
 *
 * A pass moves every series as far as it can go now, and queues the
 * reports its moves call for in the same transaction as the move (the
 * outbox), then sends what is due.  Nothing here waits: a job still
 * running is polled again by the next pass.
 */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

gint64
pgate_pipeline__now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

/* [trust] KEY as a list of address globs, stripped and lowercased. */
static char **
address_globs(GKeyFile *kf, const char *key)
{
	char **globs = g_key_file_get_string_list(kf, "trust", key, NULL, NULL);

	for (guint i = 0; globs && globs[i]; i++) {
		char *l = g_ascii_strdown(g_strstrip(globs[i]), -1);

		g_free(globs[i]);
		globs[i] = l;
	}
	return globs;
}

gboolean
pgate_pipeline_config_load(GKeyFile *kf, PgatePipelineConfig *c,
			   GError **error)
{
	gint64 v;

	memset(c, 0, sizeof *c);
	if (!pgate_config_int(kf, "pipeline", "wait_complete", 3600, 0,
			      G_MAXINT64, FALSE, &v, PGATE_PIPELINE_ERROR,
			      error) ||
	    !pgate_config_bool(kf, "trust", "everyone", FALSE,
			       &c->trust_everyone, PGATE_PIPELINE_ERROR,
			       error) ||
	    !pgate_config_bool(kf, "trust", "committers", FALSE,
			       &c->trust_committers, PGATE_PIPELINE_ERROR,
			       error))
		return FALSE;
	c->wait_complete = v;
	if (!pgate_config_int(kf, "pipeline", "recheck_limit", 3, 0, 1000,
			      FALSE, &v, PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->recheck_limit = (guint)v;
	/* at most the local runner's bound on a job's commits (ci/local) */
	if (!pgate_config_int(kf, "pipeline", "max_patches", 500, 0, 1000,
			      FALSE, &v, PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->max_patches = (guint)v;
	c->trusted = address_globs(kf, "trusted");
	c->approvers = address_globs(kf, "approvers");
	c->approve_keyword = g_key_file_get_string(kf, "trust", "approve_keyword",
						   NULL);
	if (c->approve_keyword == NULL)
		c->approve_keyword = g_strdup("patchgate: approve");
	c->reject_keyword = g_key_file_get_string(kf, "trust", "reject_keyword",
						  NULL);
	if (c->reject_keyword == NULL)
		c->reject_keyword = g_strdup("patchgate: reject");
	g_strstrip(c->approve_keyword);
	g_strstrip(c->reject_keyword);
	/* the checks' contexts: "apply", "build" unless a prefix is asked
	 * for (Patchwork shows USER/CONTEXT: the account is the brand) */
	if (!pgate_config_string(kf, "patchwork", "context_prefix",
				 &c->context_prefix, PGATE_PIPELINE_ERROR,
				 error)) {
		pgate_pipeline_config_clear(c);
		return FALSE;
	}
	if (c->context_prefix != NULL &&
	    (!pgate_patchwork_context_is_valid(c->context_prefix) ||
	     strlen(c->context_prefix) > 64)) {
		pgate_config_error(error, PGATE_PIPELINE_ERROR, "patchwork",
				   "context_prefix",
				   "not a slug of at most 64 letters, digits, "
				   "'_' and '-'");
		pgate_pipeline_config_clear(c);
		return FALSE;
	}
	c->require_authentication = g_key_file_get_string(
		kf, "trust", "require_authentication", NULL);
	if (c->require_authentication != NULL) {
		const char *id = g_strstrip(c->require_authentication);

		if (*id == '\0') {
			g_clear_pointer(&c->require_authentication, g_free);
		} else if (strpbrk(id, " \t;()\"\\=/@") != NULL ||
			   strlen(id) > 255) {
			pgate_config_error(error, PGATE_PIPELINE_ERROR, "trust",
					   "require_authentication",
					   "not an authserv-id (a host name "
					   "such as mx.example.org)");
			pgate_pipeline_config_clear(c);
			return FALSE;
		}
	}
	return TRUE;
}

void
pgate_pipeline_config_clear(PgatePipelineConfig *c)
{
	g_clear_pointer(&c->trusted, g_strfreev);
	g_clear_pointer(&c->approvers, g_strfreev);
	g_clear_pointer(&c->approve_keyword, g_free);
	g_clear_pointer(&c->reject_keyword, g_free);
	g_clear_pointer(&c->require_authentication, g_free);
	g_clear_pointer(&c->context_prefix, g_free);
}

/* The routing keys of @p's [apply] (once), and its MAINTAINERS file
 * when one is named (once: a pipeline lives one command, or the
 * daemon until a reload). */
static gboolean
route_config(PgatePipeline *p, GError **error)
{
	if (p->kf == NULL)
		return TRUE;	/* (a pipeline made by hand: no routing) */
	if (!p->route_loaded) {
		if (!pgate_route_config_load(p->kf, &p->route, error))
			return FALSE;
		p->route_loaded = TRUE;
	}
	if (!p->maint_read && p->route.maintainers != NULL) {
		p->maint = pgate_pipeline_maintainers_read(&p->apply, &p->route,
							   error);
		if (p->maint == NULL)
			return FALSE;
		p->maint_read = TRUE;
	}
	return TRUE;
}

/* Where @rec goes in @p: %NULL (without error) when no routing key is
 * set, the configured branches as always. */
PgateRoute *
pgate_pipeline__route_of(PgatePipeline *p, const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(GPtrArray) prefixes = NULL, files = NULL;

	if (!route_config(p, error))
		return NULL;
	/* the implicit project without routing keys: as before routing
	 * (a named project's documents always name the rule) */
	if (!pgate_route_config_routes(&p->route) && p->project == NULL)
		return NULL;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);

		if (txn == NULL ||
		    !pgate_route_series_input(txn, rec, &prefixes, &files,
					      error))
			return NULL;
	}
	return pgate_route_decide(&p->route, p->apply.branches,
				  rec->base_commit, prefixes, files, p->maint);
}

PgateRoute *
pgate_pipeline_route(PgateStore *store, const PgateProject *pr,
		     const char *sid, GError **error)
{
	PgatePipeline p;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autoptr(GError) local = NULL;
	PgateRoute *r = NULL;

	memset(&p, 0, sizeof p);
	p.store = store;
	p.kf = pr->kf;
	p.project = pr->name != NULL ? pr : NULL;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);

		if (txn == NULL)
			return NULL;
		rec = pgate_store_series_get(txn, sid, error);
		if (rec == NULL)
			return NULL;
	}
	if (!pgate_pipeline_apply_config_load(pr->kf, &p.apply, error))
		return NULL;
	if (p.apply.enabled) {
		r = pgate_pipeline__route_of(&p, rec, &local);
		if (r == NULL && local == NULL) {
			/* no routing key: the branches, as ever */
			PgateRouteConfig none = { 0 };

			r = pgate_route_decide(&none, p.apply.branches,
					       rec->base_commit, NULL, NULL,
					       NULL);
		}
	}
	pgate_pipeline_apply_config_clear(&p.apply);
	pgate_route_config_clear(&p.route);
	g_strfreev(p.maint);
	if (local != NULL)
		g_propagate_error(error, g_steal_pointer(&local));
	return r;
}

PgatePipelinePlan *
pgate_pipeline_may_run(PgatePipeline *p, const char *sid, GError **error)
{
	g_autoptr(PgateSeriesDoc) doc = NULL;
	g_autoptr(PgatePipelinePlan) plan = NULL;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autofree char *why = NULL;
	int g;

	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(p->store,
								      error);
		g_autoptr(GError) local = NULL;

		if (txn == NULL)
			return NULL;
		rec = pgate_store_series_get(txn, sid, &local);
		if (rec == NULL) {
			if (g_error_matches(local, PGATE_STORE_ERROR,
					    PGATE_ERROR_NOT_FOUND))
				g_set_error(error, PGATE_PIPELINE_ERROR,
					    PGATE_ERROR_NOT_FOUND,
					    "no series %s", sid);
			else
				g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		doc = pgate_series_doc_get(txn, sid, &local);
		if (doc == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
	}
	if (doc == NULL)
		doc = pgate_series_doc_new(PGATE_SERIES_NEW);
	g = pgate_pipeline__trust_gate(p, rec, doc, &plan, &why, error);
	if (g < 0)
		return NULL;
	if (g == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_NOT_ALLOWED,
			    "series %s may not run before a maintainer approves "
			    "it ('patchgate approve %s'): %s", sid, sid, why);
		return NULL;
	}
	return g_steal_pointer(&plan);
}

/* ---- the object ---- */

PgatePipeline *
pgate_pipeline_new(PgateStore *store, GKeyFile *kf, const char *state_dir,
		   const PgatePipelineOptions *o, GError **error)
{
	g_autoptr(PgatePipeline) p = g_new0(PgatePipeline, 1);

	p->store = store;
	p->kf = kf;
	p->state_dir = state_dir;
	if (o != NULL) {
		p->log = o->log;
		p->log_data = o->log_data;
		p->upstream_every = o->upstream_every;
	}
	if (!pgate_pipeline_config_load(kf, &p->cfg, error) ||
	    !pgate_pipeline_apply_config_load(kf, &p->apply, error) ||
	    !pgate_pipeline_ci_config_load(kf, &p->ci_cfg, error) ||
	    !pgate_upstream_config_load(kf, &p->upstream, error))
		return NULL;
	p->queue_checks = g_key_file_has_group(kf, "patchwork");
	if (g_key_file_has_group(kf, "email")) {
		p->email = pgate_email_config_new(kf, "email", error);
		if (p->email == NULL)
			return NULL;
		p->queue_mail = pgate_pipeline__queue_mail;
	}
	if (!pgate_pipeline__reply_config_load(p, error))
		return NULL;
	return g_steal_pointer(&p);
}

void
pgate_pipeline_free(PgatePipeline *p)
{
	if (p == NULL)
		return;
	pgate_pipeline_config_clear(&p->cfg);
	pgate_pipeline_apply_config_clear(&p->apply);
	pgate_pipeline_ci_config_clear(&p->ci_cfg);
	pgate_upstream_config_clear(&p->upstream);
	pgate_upstream_stats_clear(&p->upstream_stats);
	g_clear_pointer(&p->upstream_merged, g_ptr_array_unref);
	g_clear_pointer(&p->ci, pgate_ci_backend_free);
	g_clear_pointer(&p->polled, g_hash_table_unref);
	g_clear_pointer(&p->committers, g_hash_table_unref);
	g_clear_pointer(&p->email, pgate_email_config_free);
	pgate_reply_config_clear(&p->reply);
	pgate_pipeline_projects_clear(p);
	g_free(p);
}

void
pgate_pipeline_set_log(PgatePipeline *p, PgatePipelineLog log,
		       gpointer log_data)
{
	p->log = log;
	p->log_data = log_data;
	for (guint i = 0; p->subs != NULL && i < p->subs->len; i++)
		pgate_pipeline_set_log(p->subs->pdata[i], log, log_data);
}

void
pgate_pipeline_get_log(const PgatePipeline *p, PgatePipelineLog *log,
		       gpointer *log_data)
{
	*log = p->log;
	*log_data = p->log_data;
}

gboolean
pgate_pipeline_has_projects(const PgatePipeline *p)
{
	return p->subs != NULL;
}

const PgateEmailConfig *
pgate_pipeline_email(const PgatePipeline *p)
{
	return p->email;
}

gboolean
pgate_pipeline_prune(PgatePipeline *p, guint *out_deleted,
		     guint *out_keep_days, GError **error)
{
	*out_deleted = 0;
	*out_keep_days = p->apply.keep_days;
	if (!p->apply.enabled)
		return TRUE;
	return pgate_pipeline_prune_refs(&p->apply, out_deleted, error);
}

gboolean
pgate_pipeline_ci_backend(PgatePipeline *p, GError **error)
{
	if (p->ci != NULL)
		return TRUE;
	p->ci = pgate_ci_backend_new(p->ci_cfg.backend, p->kf, p->ci_cfg.group,
				     p->state_dir, error);
	return p->ci != NULL;
}

gboolean
pgate_pipeline__reply_config_load(PgatePipeline *p, GError **error)
{
	PgateReplyConfig *c = &p->reply;

	pgate_reply_config_clear(c);
	/* its email and log are @p's, set by pgate_pipeline__reply_config() */
	c->label = g_strdup(p->project != NULL
			    ? pgate_project_label(p->project) : "-");
	c->digest_series = p->project != NULL
		? pgate_project_state_id(p->project, "digest")
		: g_strdup("digest");
	if (p->kf == NULL)
		return TRUE;
	return pgate_config_string(p->kf, "patchwork", "url",
				   &c->patchwork_url, PGATE_PIPELINE_ERROR,
				   error) &&
	       pgate_config_string(p->kf, "patchwork", "project",
				   &c->patchwork_project, PGATE_PIPELINE_ERROR,
				   error) &&
	       pgate_config_string(p->kf, "report", "public_url",
				   &c->public_url, PGATE_PIPELINE_ERROR, error);
}

PgateReplyConfig
pgate_pipeline__reply_config(const PgatePipeline *p)
{
	PgateReplyConfig c = p->reply;

	c.email = p->email;
	c.log = p->log;
	c.log_data = p->log_data;
	return c;
}

gboolean
pgate_pipeline__queue_mail(PgateStoreTxn *txn, PgatePipeline *p,
			   const PgateSeriesRec *rec, const PgateSeriesDoc *doc,
			   GError **error)
{
	PgateReplyConfig c = pgate_pipeline__reply_config(p);
	PgateReplyInput in = { 0 };
	g_autoptr(PgateMessageRec) answered = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autofree char *pw_url = NULL, *compared = NULL;

	if (p->email == NULL || !pgate_email_config_enabled(p->email))
		return TRUE;
	answered = pgate_reply_answered(txn, &c, rec, &in.patchwork_id,
					&pw_url, error);
	if (answered == NULL)
		return FALSE;
	raw = pgate_ingest_load_raw(txn, p->state_dir, answered, 1u << 20,
				    NULL);
	compared = pgate_pipeline_site_compare_text(txn, p->state_dir, rec);
	in.answered = answered;
	in.answered_raw = raw;
	in.compared = compared;
	in.patch_url = pw_url;
	return pgate_reply_queue(txn, &c, rec, doc->state, &in, error);
}

/* The daily digest of @p's project. */
static gboolean
mail_digest(PgatePipeline *p, GError **error)
{
	PgateReplyConfig c = pgate_pipeline__reply_config(p);

	return pgate_reply_digest(p->store, &c, error);
}

static gboolean
flush_projects(PgatePipeline *p, PgateOutbox *ob, PgateOutboxStats *stats,
	       GError **error)
{
	if (p->project == NULL && !pgate_pipeline_projects_init(p, error))
		return FALSE;
	if (p->subs == NULL)
		return mail_digest(p, error) &&
		       pgate_outbox_flush(ob, stats, error);
	/* each project's reports with its own Patchwork and mail */
	for (guint i = 0; i < p->subs->len; i++) {
		PgatePipeline *sub = p->subs->pdata[i];
		PgateOutbox o = *ob;

		if (!mail_digest(sub, error))
			return FALSE;

		/* one client a flush, as the command line makes: its setup
		 * is checked once a flush */
		g_clear_pointer(&sub->pw, pgate_patchwork_free);
		if (g_key_file_has_group(sub->kf, "patchwork")) {
			sub->pw = pgate_patchwork_new(sub->kf, "patchwork",
						      error);
			if (sub->pw == NULL)
				return FALSE;
		}
		o.pw = sub->pw;
		o.email = sub->email;
		if (!pgate_outbox_flush_project(&o, sub->project->name, stats,
						error))
			return FALSE;
	}
	return TRUE;
}

gboolean
pgate_pipeline_outbox_flush(PgatePipeline *p, PgateOutbox *ob,
			    PgateOutboxStats *stats, GError **error)
{
	g_autofree char *archive = NULL;
	PgateOutbox o = *ob;

	/* the instance's [report] archive_url ([report] is no project's);
	 * unset, each list's known archive */
	if (o.archive_url == NULL && p->kf != NULL) {
		if (!pgate_config_string(p->kf, "report", "archive_url",
					 &archive, PGATE_PIPELINE_ERROR, error))
			return FALSE;
		o.archive_url = archive;
	}
	return flush_projects(p, &o, stats, error);
}

/* The route of one message alone (route --file): its own tag, files and
 * base-commit. */
static PgateRoute *
route_message(const PgateProject *pr, const PgateMessageRec *m,
	      GError **error)
{
	PgatePipeline p;
	PgateRoute *r = NULL;
	g_autoptr(GError) local = NULL;

	memset(&p, 0, sizeof p);
	p.kf = pr->kf;
	if (!pgate_pipeline_apply_config_load(pr->kf, &p.apply, error))
		return NULL;
	if (p.apply.enabled && route_config(&p, &local)) {
		PgateRouteConfig none = { 0 };

		r = pgate_route_decide(pgate_route_config_routes(&p.route)
				       ? &p.route : &none, p.apply.branches,
				       m->base_commit, m->prefixes,
				       m->diff_files, p.maint);
	}
	pgate_pipeline_apply_config_clear(&p.apply);
	pgate_route_config_clear(&p.route);
	g_strfreev(p.maint);
	if (local != NULL)
		g_propagate_error(error, g_steal_pointer(&local));
	return r;
}

static json_t *
route_json(const PgateRoute *r)
{
	json_t *o = json_object(), *a = json_array();

	for (guint i = 0; r != NULL && i < r->targets->len; i++) {
		const PgateRouteTarget *t = r->targets->pdata[i];

		json_array_append_new(a, json_pack(
			"{s:s,s:s,s:s}", "target", t->branch, "rule",
			pgate_route_rule_to_string(t->rule), "why", t->why));
	}
	json_object_set_new(o, "targets", r && r->skip == NULL ? a
							       : json_array());
	if (r == NULL || r->skip != NULL)
		json_decref(a);
	json_object_set_new(o, "skip", r ? pgate_json_str_or_null(r->skip)
					 : json_string("no [apply] repository "
						       "configured"));
	return o;
}

json_t *
pgate_pipeline_route_explain(PgateStore *store, GKeyFile *kf,
			     const PgateMessageRec *m, const char *sid,
			     GError **error)
{
	g_autoptr(GPtrArray) projects = pgate_projects_load(kf, error);
	json_t *out, *in, *not;

	if (projects == NULL)
		return NULL;
	in = json_array();
	not = json_array();
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		g_autofree char *why = pgate_project_match_message(pr, m);
		g_autoptr(PgateRoute) r = NULL;
		g_autoptr(GError) local = NULL;
		json_t *o;

		if (why == NULL) {
			json_array_append_new(not, json_string(pr->name));
			continue;
		}
		r = sid != NULL && store != NULL
			? pgate_pipeline_route(store, pr, sid, &local)
			: route_message(pr, m, &local);
		if (r == NULL && local != NULL) {
			json_decref(in);
			json_decref(not);
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		o = route_json(r);
		json_object_set_new(o, "project", pgate_json_str_or_null(pr->name));
		json_object_set_new(o, "why", json_string(why));
		if (r != NULL && r->skip == NULL && r->targets->len == 0)
			json_object_set_new(o, "skip", json_string(
				"no branch to apply to"));
		json_array_append_new(in, o);
	}
	out = json_pack("{s:o,s:o,s:o,s:o}", "msgid",
			json_string(m->msgid), "series",
			pgate_json_str_or_null(sid), "projects", in,
			"not_projects", not);
	return out;
}

gboolean
pgate_pipeline_runs_local_jobs(const PgatePipeline *p)
{
	if (p->ci != NULL && g_strcmp0(p->ci_cfg.backend, "local") == 0)
		return TRUE;
	for (guint i = 0; p->subs != NULL && i < p->subs->len; i++)
		if (pgate_pipeline_runs_local_jobs(p->subs->pdata[i]))
			return TRUE;
	return FALSE;
}

