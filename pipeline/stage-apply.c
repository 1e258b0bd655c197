/* stage-apply.c - the apply stage in the pipeline: which patches of a
 * series, onto which bases, and what became of each attempt.
 *
 * Reads the series and its messages from the store, hands the mails to
 * apply/ (libgit2, no worktree), names and pushes the result, and writes
 * one document per target to SERIES/apply/TARGET (docs/pipeline.md).
 */
#include "pipeline/pipeline-private.h"
#include "apply/apply.h"
#include "threading/threading.h"
#include "common/json.h"

#include <git2.h>
#include <string.h>

#define DEFAULT_REF_FORMAT "refs/heads/patchgate/{series}/v{version}/{target}"

void
pgate_pipeline_apply_config_clear(PgateApplyConfig *c)
{
	g_clear_pointer(&c->repo, g_free);
	g_clear_pointer(&c->branches, g_strfreev);
	g_clear_pointer(&c->push_url, g_free);
	g_clear_pointer(&c->ref_format, g_free);
	g_clear_pointer(&c->committer_name, g_free);
	g_clear_pointer(&c->committer_email, g_free);
	g_clear_pointer(&c->push_user, g_free);
	g_clear_pointer(&c->push_password_file, g_free);
	g_clear_pointer(&c->push_password_env, g_free);
	g_clear_pointer(&c->push_ssh_key, g_free);
	g_clear_pointer(&c->link_pattern, g_free);
	g_clear_pointer(&c->signoff, g_free);
}

PgateApplyConfig *
pgate_pipeline_apply_config_new(GKeyFile *kf, GError **error)
{
	g_autofree PgateApplyConfig *c = g_new0(PgateApplyConfig, 1);

	if (!pgate_pipeline_apply_config_load(kf, c, error)) {
		pgate_pipeline_apply_config_clear(c);
		return NULL;
	}
	return g_steal_pointer(&c);
}

void
pgate_pipeline_apply_config_free(PgateApplyConfig *c)
{
	if (c == NULL)
		return;
	pgate_pipeline_apply_config_clear(c);
	g_free(c);
}

gboolean
pgate_pipeline_apply_config_enabled(const PgateApplyConfig *c)
{
	return c->enabled;
}

/* [apply] committer_date: "now" (the default), "author" (git am
 * --committer-date-is-author-date) or a fixed date (GIT_COMMITTER_DATE's
 * forms), so that the commits can be the very ones git am makes */
static gboolean
committer_date_load(GKeyFile *kf, PgateApplyOptions *o, GError **error)
{
	g_autofree char *v = g_key_file_get_string(kf, "apply", "committer_date",
						   NULL);
	g_autoptr(GError) local = NULL;

	if (v != NULL)
		g_strstrip(v);
	if (v == NULL || *v == '\0' || strcmp(v, "now") == 0)
		return TRUE;
	if (strcmp(v, "author") == 0) {
		o->committer_date_is_author_date = TRUE;
		return TRUE;
	}
	if (!pgate_apply_parse_date(v, &o->committer_time, &o->committer_tz,
				    &local)) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] committer_date: %s; or 'now', 'author'",
			    local->message);
		return FALSE;
	}
	return TRUE;
}

static gboolean
config_load(GKeyFile *kf, PgateApplyConfig *c, GError **error)
{
	static const char *const G = "apply";
	PgateApplyOptions def = PGATE_APPLY_OPTIONS_INIT;
	gint64 v;

	memset(c, 0, sizeof *c);
	c->opts = def;
	if (!g_key_file_has_group(kf, G))
		return TRUE;	/* not configured: the stage is off */
	c->repo = g_key_file_get_string(kf, G, "repo", NULL);
	if (c->repo == NULL || *c->repo == '\0') {
		g_auto(GStrv) projects = pgate_config_projects(kf);

		/* the defaults of projects that each name their own */
		g_clear_pointer(&c->repo, g_free);
		if (projects[0] != NULL)
			return TRUE;
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] repo: the repository to apply to is not set");
		return FALSE;
	}
	/* items stripped, as every list (docs/config.md): "net-next; net" */
	if (!pgate_config_list(kf, G, "branches", &c->branches,
			       PGATE_PIPELINE_ERROR, error))
		return FALSE;
	if (c->branches == NULL || c->branches[0] == NULL) {
		g_strfreev(c->branches);
		c->branches = g_new0(char *, 2);
		c->branches[0] = g_strdup("master");
	}
	if (!pgate_config_bool(kf, G, "all_branches", FALSE, &c->all_branches,
			       PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->push_url = g_key_file_get_string(kf, G, "push_url", NULL);
	c->ref_format = g_key_file_get_string(kf, G, "ref_format", NULL);
	if (c->ref_format == NULL)
		c->ref_format = g_strdup(DEFAULT_REF_FORMAT);
	if (!g_str_has_prefix(c->ref_format, "refs/")) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] ref_format: '%s' does not start with refs/",
			    c->ref_format);
		return FALSE;
	}
	if (!pgate_config_int(kf, G, "keep_days", 30, 0, 100000, FALSE, &v,
			      PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->keep_days = (guint)v;
	c->committer_name = g_key_file_get_string(kf, G, "committer_name", NULL);
	c->committer_email = g_key_file_get_string(kf, G, "committer_email", NULL);
	c->opts.committer_name = c->committer_name;
	c->opts.committer_email = c->committer_email;
	if (!committer_date_load(kf, &c->opts, error))
		return FALSE;
	if (!pgate_config_bool(kf, G, "allow_symlinks", c->opts.allow_symlinks,
			       &c->opts.allow_symlinks, PGATE_PIPELINE_ERROR,
			       error) ||
	    !pgate_config_bool(kf, G, "allow_submodules",
			       c->opts.allow_submodules,
			       &c->opts.allow_submodules, PGATE_PIPELINE_ERROR,
			       error))
		return FALSE;
#define LIMIT(key, field, max) do { \
		if (!pgate_config_int(kf, G, key, (gint64)c->opts.field, 0, \
				      max, FALSE, &v, PGATE_PIPELINE_ERROR, \
				      error)) \
			return FALSE; \
		c->opts.field = v; \
	} while (0)
	LIMIT("max_patch_bytes", max_patch_bytes, G_MAXINT64);
	LIMIT("max_files", max_files, G_MAXUINT);
	LIMIT("max_binary_bytes", max_binary_bytes, G_MAXINT64);
	LIMIT("already_applied_depth", already_applied_depth, G_MAXUINT);
#undef LIMIT
	c->push_user = g_key_file_get_string(kf, G, "push_user", NULL);
	c->push_password_file = g_key_file_get_string(kf, G, "push_password_file", NULL);
	c->push_password_env = g_key_file_get_string(kf, G, "push_password_env", NULL);
	c->push_ssh_key = g_key_file_get_string(kf, G, "push_ssh_key", NULL);
	/* b4 am's trailers (series-mbox.c) */
	if (!pgate_config_bool(kf, G, "add_trailers", FALSE, &c->add_trailers,
			       PGATE_PIPELINE_ERROR, error))
		return FALSE;
	c->link_pattern = g_key_file_get_string(kf, G, "link_pattern", NULL);
	if (c->link_pattern != NULL && *c->link_pattern == '\0')
		g_clear_pointer(&c->link_pattern, g_free);
	if (c->link_pattern != NULL && !strstr(c->link_pattern, "{msgid}")) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] link_pattern: no {msgid} in '%s'",
			    c->link_pattern);
		return FALSE;
	}
	c->signoff = g_key_file_get_string(kf, G, "signoff", NULL);
	if (c->signoff != NULL && *c->signoff == '\0')
		g_clear_pointer(&c->signoff, g_free);
	if (c->signoff != NULL &&
	    (strchr(c->signoff, '\n') || !strchr(c->signoff, '<') ||
	     !strchr(c->signoff, '@') || !g_str_has_suffix(c->signoff, ">"))) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] signoff: '%s' is not 'Name <email>'",
			    c->signoff);
		return FALSE;
	}
	c->opts.signoff = c->signoff;
	c->enabled = TRUE;
	return TRUE;
}

gboolean
pgate_pipeline_apply_config_load(GKeyFile *kf, PgateApplyConfig *c, GError **error)
{
	/* what was read before a bad value is not the caller's to free */
	if (!config_load(kf, c, error)) {
		pgate_pipeline_apply_config_clear(c);
		return FALSE;
	}
	return TRUE;
}

/* The ref for @target of series @r, from the ref format. */
static char *
ref_name(const PgateApplyConfig *c, const PgateSeriesRec *r, const char *target)
{
	g_autofree char *version = g_strdup_printf("%u", r->version);
	GString *out = g_string_new(NULL);

	for (const char *p = c->ref_format; *p;) {
		if (g_str_has_prefix(p, "{series}")) {
			g_string_append(out, r->id);
			p += 8;
		} else if (g_str_has_prefix(p, "{version}")) {
			g_string_append(out, version);
			p += 9;
		} else if (g_str_has_prefix(p, "{target}")) {
			g_string_append(out, target);
			p += 8;
		} else {
			g_string_append_c(out, *p++);
		}
	}
	return g_string_free(out, FALSE);
}

/* One series' patches as the apply stage sees them: the plan's
 * (plan.c), their raw mails loaded. */
typedef struct {
	PgatePipelinePlan *plan; /* (owned, or borrowed when own_plan is
				  * FALSE) */
	gboolean own_plan;
	PgateSeriesRec *rec;    /* (borrowed from the plan) */
	GPtrArray *raws;        /* GBytes*, in order: prerequisites first */
	GPtrArray *msgids;      /* the same, their Message-IDs */
	GPtrArray *extras;      /* the same, PgateApplyExtra (series-mbox.c) */
	GPtrArray *prereqs;     /* (borrowed) series IDs applied first */
	guint n_prereq;         /* how many of raws are theirs */
	char *reroll_of;        /* (borrowed) (nullable) */
} Input;

static void
input_free(Input *in)
{
	if (in == NULL)
		return;
	if (in->own_plan)
		pgate_pipeline_plan_free(in->plan);
	g_ptr_array_unref(in->raws);
	g_ptr_array_unref(in->msgids);
	g_ptr_array_unref(in->extras);
	g_free(in);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Input, input_free)

static Input *
read_input(PgateStore *store, const PgateApplyConfig *c, const char *sid,
	   const PgatePipelinePlan *plan, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(Input) in = NULL;
	g_autoptr(PgateSeriesRec) owner = NULL;

	if (txn == NULL)
		return NULL;
	in = g_new0(Input, 1);
	in->raws = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	in->msgids = g_ptr_array_new_with_free_func(g_free);
	in->extras = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_apply_extra_free);
	if (plan == NULL) {
		in->plan = pgate_pipeline_plan_read(txn, sid, NULL, NULL, error);
		if (in->plan == NULL)
			return NULL;
		in->own_plan = TRUE;
	} else {
		in->plan = (PgatePipelinePlan *)plan;
	}
	in->rec = in->plan->rec;
	in->prereqs = in->plan->prereqs;
	in->n_prereq = in->plan->n_prereq;
	in->reroll_of = in->plan->reroll_of;
	for (guint i = 0; i < in->plan->items->len; i++) {
		const PgatePlanItem *it = in->plan->items->pdata[i];
		g_autoptr(PgateMessageRec) m = pgate_store_message_get(
			txn, it->patch->num, error);
		GBytes *raw;

		/* a prerequisite's patch gets its own series' cover
		 * trailers */
		if (it->role == PGATE_PLAN_PREREQ &&
		    (owner == NULL || strcmp(owner->id, it->series) != 0)) {
			g_clear_pointer(&owner, pgate_series_rec_free);
			owner = pgate_store_series_get(txn, it->series, error);
			if (owner == NULL)
				return NULL;
		}

		if (m == NULL)
			return NULL;
		/* no state directory: a patch is never quarantined (oversized
		 * mail is stored rejected, in no series) */
		raw = pgate_ingest_load_raw(txn, NULL, m,
					    PGATE_MAILINFO_MAX_BYTES, error);
		if (raw == NULL)
			return NULL;
		g_ptr_array_add(in->raws, raw);
		g_ptr_array_add(in->msgids, g_strdup(it->patch->msgid));
		g_ptr_array_add(in->extras, pgate_pipeline_apply_extra(
			c, it->role == PGATE_PLAN_PREREQ ? owner : in->rec,
			it->patch));
	}
	return g_steal_pointer(&in);
}

static gint64
now_s(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

static PgateApplyDoc *
result_doc(const char *target, const char *base_name,
	   const PgateApplyResult *res, const Input *in, gboolean alone)
{
	static const char *const names[] = {
		"not-tried", "applied", "already-applied", "failed", "rejected",
	};
	guint skip = alone ? in->n_prereq : 0;
	PgateApplyDoc *d = pgate_apply_doc_new();

	d->target = g_strdup(target);
	d->base = g_strdup(base_name);
	d->status = res->status;
	d->base_commit = g_strdup(res->base ? res->base : "");
	d->commits = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < res->commits->len; i++)
		g_ptr_array_add(d->commits, g_strdup(res->commits->pdata[i]));
	d->patches = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_apply_doc_patch_free);
	for (guint i = 0; i < res->patches->len; i++) {
		const PgateApplyPatchResult *p = res->patches->pdata[i];

		g_ptr_array_add(d->patches, pgate_apply_doc_patch_new(
			i + skip < in->msgids->len
				? (char *)in->msgids->pdata[i + skip] : "",
			names[p->state], p->commit, p->upstream));
	}
	d->head = g_strdup(res->head);
	d->prerequisites = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; !alone && i < in->prereqs->len; i++)
		g_ptr_array_add(d->prerequisites,
				g_strdup(in->prereqs->pdata[i]));
	d->reroll_of = g_strdup(in->reroll_of);
	d->at = now_s();
	d->has = PGATE_APPLY_DOC_STATUS | PGATE_APPLY_DOC_HEAD |
		 PGATE_APPLY_DOC_REROLL_OF | PGATE_APPLY_DOC_AT;
	if (res->status != PGATE_APPLY_OK || res->reason != NULL)
		d->failure = pgate_apply_failure_new(
			(int)res->failed_index, res->failed_path,
			(int)res->failed_hunk, res->reason);
	return d;
}

/* The attempt that could not be made: @base is no commit here. */
static PgateApplyDoc *
error_doc(const char *target, const char *base, const char *why)
{
	PgateApplyDoc *d = pgate_apply_doc_new();

	d->target = g_strdup(target);
	d->base = g_strdup(base);
	d->status = PGATE_APPLY_NOT_MADE;
	d->failure = pgate_apply_failure_new(0, NULL, 0, why);
	d->at = now_s();
	d->has = PGATE_APPLY_DOC_STATUS | PGATE_APPLY_DOC_AT;
	return d;
}

typedef struct {
	const char *sid;
	GPtrArray *docs;   /* PgateApplyDoc */
} WriteCtx;

static gboolean
write_docs(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	WriteCtx *w = payload;

	for (guint i = 0; i < w->docs->len; i++)
		if (!pgate_apply_doc_put(txn, w->sid, w->docs->pdata[i],
						  error))
			return FALSE;
	return TRUE;
}

/* Adds @doc to @docs, in the place of an attempt on the same target. */
static void
add_doc(GPtrArray *docs, PgateApplyDoc *doc)
{
	for (guint i = 0; i < docs->len; i++) {
		PgateApplyDoc *old = docs->pdata[i];

		if (strcmp(old->target, doc->target) == 0) {
			pgate_apply_doc_free(old);
			docs->pdata[i] = doc;
			return;
		}
	}
	g_ptr_array_add(docs, doc);
}

/* Publishes a successful attempt: the ref in the repository, and the
 * push when configured.  Failures are recorded in the document. */
static void
publish(const PgateApplyConfig *c, const PgateSeriesRec *r,
	PgateApplyDoc *doc, const char *target, const char *head)
{
	g_autofree char *ref = ref_name(c, r, target);
	g_autofree char *msg = g_strdup_printf("patchgate: %s v%u onto %s",
					       r->id, r->version, target);
	g_autoptr(GError) error = NULL;

	if (!pgate_apply_update_ref(c->repo, ref, head, msg, &error)) {
		doc->publish_error = g_strdup(error->message);
		return;
	}
	doc->ref = g_strdup(ref);
	if (c->push_url != NULL && *c->push_url != '\0') {
		g_autofree char *spec = g_strdup_printf("+%s:%s", ref, ref);
		const char *specs[] = { spec };
		PgateApplyCredentials creds = {
			c->push_user, c->push_password_file, c->push_password_env,
			c->push_ssh_key, NULL, NULL, NULL,
		};

		if (pgate_apply_push(c->repo, c->push_url, specs, 1, &creds,
				     &error))
			doc->pushed_to = pgate_url_without_password(c->push_url);
		else
			doc->publish_error = g_strdup(error->message);
	}
}

/* Whether [apply] repo @path opens as a git repository: PGATE_ERROR_CONFIG
 * when it does not (missing, not a repository, not readable), a
 * transient PGATE_ERROR_IO when the system failed (memory, I/O). */
static gboolean
repo_usable(const char *path, GError **error)
{
	git_repository *repo = NULL;
	const git_error *e;
	int rc;

	git_libgit2_init();
	rc = git_repository_open_ext(&repo, path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	e = git_error_last();
	if (rc != 0) {
		gboolean transient = e != NULL && e->klass == GIT_ERROR_NOMEMORY;

		g_set_error(error, PGATE_PIPELINE_ERROR,
			    transient ? PGATE_ERROR_IO : PGATE_ERROR_CONFIG,
			    "[apply] repo: cannot open %s: %s", path,
			    e && e->message ? e->message : "not a repository");
	}
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc == 0;
}

GPtrArray *
pgate_pipeline_apply(PgateStore *store, const PgateApplyConfig *c,
		     const char *sid, const char *only_branch, GError **error)
{
	return pgate_pipeline_apply_routed(store, c, sid, only_branch, NULL,
					   NULL, error);
}

/* The route's entry for @target (nullable). */
static const PgateRouteTarget *
route_target(const PgateRoute *route, const char *target)
{
	for (guint i = 0; route != NULL && i < route->targets->len; i++) {
		const PgateRouteTarget *t = route->targets->pdata[i];

		if (strcmp(t->branch, target) == 0)
			return t;
	}
	return NULL;
}

char **
pgate_pipeline_maintainers_read(const PgateApplyConfig *c,
				const PgateRouteConfig *rc, GError **error)
{
	git_repository *repo = NULL;
	char **out = NULL;

	if (rc->maintainers == NULL || !c->enabled)
		return NULL;
	git_libgit2_init();
	if (git_repository_open_ext(&repo, c->repo, 0, NULL) != 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] maintainers: cannot open %s: %s", c->repo,
			    git_error_last() ? git_error_last()->message : "?");
		git_libgit2_shutdown();
		return NULL;
	}
	for (guint i = 0; out == NULL && c->branches[i] != NULL; i++) {
		g_autofree char *spec = g_strdup_printf("%s:%s", c->branches[i],
							rc->maintainers);
		git_object *o = NULL;

		if (git_revparse_single(&o, repo, spec) != 0)
			continue;
		if (git_object_type(o) == GIT_OBJECT_BLOB) {
			const git_blob *b = (const git_blob *)o;
			git_object_size_t n = git_blob_rawsize(b);

			/* bounded: the kernel's is under 1 MiB */
			if (n <= 16 * 1024 * 1024)
				out = pgate_route_maintainers_parse(
					git_blob_rawcontent(b), (gsize)n,
					rc->maintainers_sections);
		}
		git_object_free(o);
	}
	git_repository_free(repo);
	git_libgit2_shutdown();
	if (out == NULL)
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] maintainers: no %s on any of [apply] "
			    "branches of %s", rc->maintainers, c->repo);
	return out;
}

GPtrArray *
pgate_pipeline_apply_routed(PgateStore *store, const PgateApplyConfig *c,
			    const char *sid, const char *only_branch,
			    const PgateRoute *route, const PgatePipelinePlan *plan,
			    GError **error)
{
	g_autoptr(Input) in = NULL;
	g_autoptr(GPtrArray) targets = NULL, bases = NULL;
	g_autoptr(GPtrArray) docs = NULL;
	WriteCtx w = { sid, NULL };

	/* a repository that is not there is the configuration's fault,
	 * never the series' (issue #41): said before anything is tried */
	if (!repo_usable(c->repo, error))
		return NULL;
	in = read_input(store, c, sid, plan, error);
	if (in == NULL)
		return NULL;
	if (in->raws->len == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    "series %s has no patches to apply", sid);
		return NULL;
	}
	docs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_apply_doc_free);
	/* the series' own base first, then the configured branches */
	targets = g_ptr_array_new();
	bases = g_ptr_array_new();
	if (in->rec->base_commit != NULL) {
		g_ptr_array_add(targets, (gpointer)"base-commit");
		g_ptr_array_add(bases, in->rec->base_commit);
	}
	for (guint i = 0; route == NULL && c->branches[i] != NULL; i++) {
		g_ptr_array_add(targets, c->branches[i]);
		g_ptr_array_add(bases, c->branches[i]);
	}
	/* routed: the branches the rules chose, in their order */
	for (guint i = 0; route != NULL && i < route->targets->len; i++) {
		const PgateRouteTarget *t = route->targets->pdata[i];

		if (t->rule == PGATE_ROUTE_BASE_COMMIT)
			continue;
		g_ptr_array_add(targets, t->branch);
		g_ptr_array_add(bases, t->branch);
	}
	for (guint i = 0; i < targets->len; i++) {
		const char *target = targets->pdata[i], *base = bases->pdata[i];
		gboolean own_base = base == in->rec->base_commit;
		g_autoptr(PgateApplyResult) res = NULL;
		g_autofree char *doc_note = NULL;
		g_autoptr(GError) local = NULL;
		PgateApplyDoc *doc;
		PgateApplyOptions opts;

		if (only_branch && strcmp(only_branch, target) != 0)
			continue;
		opts = c->opts;
		opts.extras = in->extras;
		res = pgate_apply_series(c->repo, base, in->raws, &opts, &local);
		/* a prerequisite that does not apply here (or not together
		 * with the others) is not this series' failure: try the
		 * series alone, and say so */
		if (res != NULL && res->status == PGATE_APPLY_FAILED &&
		    in->n_prereq > 0 && res->failed_index <= in->n_prereq) {
			g_autoptr(GPtrArray) own = g_ptr_array_new();
			g_autoptr(GPtrArray) own_extras = g_ptr_array_new();
			g_autoptr(PgateApplyResult) alone = NULL;

			for (guint k = in->n_prereq; k < in->raws->len; k++) {
				g_ptr_array_add(own, in->raws->pdata[k]);
				g_ptr_array_add(own_extras, in->extras->pdata[k]);
			}
			opts.extras = own_extras;
			alone = pgate_apply_series(c->repo, base, own, &opts,
						   &local);
			if (alone == NULL)
				g_clear_pointer(&res, pgate_apply_result_free);
			else {
				g_autofree char *why = g_strdup_printf(
					"prerequisite patch %u does not apply: %s",
					res->failed_index,
					res->reason ? res->reason : "?");

				pgate_apply_result_free(res);
				res = g_steal_pointer(&alone);
				doc_note = g_steal_pointer(&why);
			}
		}
		if (res == NULL) {
			if (!g_error_matches(local, PGATE_APPLY_ERROR,
					     PGATE_ERROR_NOT_FOUND)) {
				g_propagate_error(error, g_steal_pointer(&local));
				return NULL;
			}
			/* a base-commit this repository lacks is no failure:
			 * the configured branches are tried instead; a
			 * missing branch is the configuration's fault, said
			 * in the document */
			if (own_base)
				continue;
			add_doc(docs, error_doc(target, base, local->message));
			continue;
		}
		doc = result_doc(target, base, res, in, doc_note != NULL);
		doc->prerequisites_dropped = g_steal_pointer(&doc_note);
		if (route_target(route, target) != NULL) {
			const PgateRouteTarget *rt = route_target(route, target);

			doc->route = g_strdup(
				pgate_route_rule_to_string(rt->rule));
			doc->route_why = g_strdup(rt->why);
		}
		if (res->head != NULL && (res->status == PGATE_APPLY_OK ||
					  res->status == PGATE_APPLY_ALREADY_APPLIED))
			publish(c, in->rec, doc, target, res->head);
		add_doc(docs, doc);
		if (res->status == PGATE_APPLY_OK && !c->all_branches &&
		    only_branch == NULL)
			break;
	}
	w.docs = docs;
	if (!pgate_store_write(store, write_docs, &w, error))
		return NULL;
	return g_steal_pointer(&docs);
}

gboolean
pgate_pipeline_prune_refs(const PgateApplyConfig *c, guint *out_deleted,
			  GError **error)
{
	const char *brace = strchr(c->ref_format, '{');
	g_autofree char *prefix = g_strndup(c->ref_format,
					    brace ? (gsize)(brace - c->ref_format)
						  : strlen(c->ref_format));
	g_autoptr(GPtrArray) deleted = NULL;
	char *slash = strrchr(prefix, '/');
	guint depth = 0;

	*out_deleted = 0;
	if (slash)
		slash[1] = '\0';	/* "refs/heads/patchgate/" */
	for (const char *p = prefix; *p; p++)
		depth += *p == '/';
	/* never "refs/" or "refs/heads/": that would be every branch */
	if (c->keep_days == 0 || depth < 3)
		return TRUE;
	if (!pgate_apply_prune_refs(c->repo, prefix,
				    (gint64)c->keep_days * 86400, -1, &deleted,
				    error))
		return FALSE;
	*out_deleted = deleted->len;
	if (deleted->len > 0 && c->push_url != NULL && *c->push_url != '\0') {
		g_autoptr(GPtrArray) specs = g_ptr_array_new_with_free_func(g_free);
		PgateApplyCredentials creds = {
			c->push_user, c->push_password_file, c->push_password_env,
			c->push_ssh_key, NULL, NULL, NULL,
		};

		for (guint i = 0; i < deleted->len; i++)
			g_ptr_array_add(specs, g_strdup_printf(
				":%s", (char *)deleted->pdata[i]));
		return pgate_apply_push(c->repo, c->push_url,
					(const char *const *)specs->pdata,
					specs->len, &creds, error);
	}
	return TRUE;
}
