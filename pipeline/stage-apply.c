/* stage-apply.c - the apply stage in the pipeline: which patches of a
 * series, onto which bases, and what became of each attempt.
 *
 * Reads the series and its messages from the store, hands the mails to
 * apply/ (libgit2, no worktree), names and pushes the result, and writes
 * one document per target to SERIES/apply/TARGET (docs/pipeline.md).
 */
#include "pipeline/pipeline.h"
#include "apply/apply.h"
#include "threading/threading.h"
#include "common/json.h"

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
}

gboolean
pgate_pipeline_apply_config_load(GKeyFile *kf, PgateApplyConfig *c, GError **error)
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
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG,
			    "[apply] repo: the repository to apply to is not set");
		return FALSE;
	}
	c->branches = g_key_file_get_string_list(kf, G, "branches", NULL, NULL);
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
	c->enabled = TRUE;
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

/* One series' patches as the apply stage sees them. */
typedef struct {
	PgateSeriesRec *rec;
	GPtrArray *raws;        /* GBytes*, in order: prerequisites first */
	GPtrArray *msgids;      /* the same, their Message-IDs */
	json_t *prereqs;        /* [series id, ...] applied first */
	guint n_prereq;         /* how many of raws are theirs */
	char *reroll_of;        /* (nullable) */
} Input;

static void
input_free(Input *in)
{
	if (in == NULL)
		return;
	pgate_series_rec_free(in->rec);
	g_ptr_array_unref(in->raws);
	g_ptr_array_unref(in->msgids);
	json_decref(in->prereqs);
	g_free(in->reroll_of);
	g_free(in);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Input, input_free)

static gboolean
add_series_patches(PgateStoreTxn *txn, const PgateSeriesRec *r, Input *in,
		   char **out_base, GError **error)
{
	g_autoptr(GPtrArray) eff = pgate_threading_effective_patches(
		txn, r, out_base, error);

	if (eff == NULL)
		return FALSE;
	for (guint i = 0; i < eff->len; i++) {
		PgateSeriesPatch *p = eff->pdata[i];
		g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, p->num,
								       error);
		GBytes *raw;

		if (m == NULL)
			return FALSE;
		/* no state directory: a patch is never quarantined (oversized
		 * mail is stored rejected, in no series) */
		raw = pgate_ingest_load_raw(txn, NULL, m,
					    PGATE_MAILINFO_MAX_BYTES, error);
		if (raw == NULL)
			return FALSE;
		g_ptr_array_add(in->raws, raw);
		g_ptr_array_add(in->msgids, g_strdup(p->msgid));
	}
	return TRUE;
}

static Input *
read_input(PgateStore *store, const char *sid, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(Input) in = NULL;
	g_autofree char *ignored = NULL;
	json_t *sj, *deps;
	gsize i;
	json_t *d;

	if (txn == NULL)
		return NULL;
	in = g_new0(Input, 1);
	in->raws = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	in->msgids = g_ptr_array_new_with_free_func(g_free);
	in->prereqs = json_array();
	in->rec = pgate_store_series_get(txn, sid, error);
	if (in->rec == NULL)
		return NULL;
	/* prerequisite series first, in the order the series names them
	 * (one level: a prerequisite's own prerequisites are its business) */
	sj = pgate_threading_series_json(txn, in->rec);
	deps = json_object_get(sj, "depends_on");
	json_array_foreach(deps, i, d) {
		const char *dep = json_string_value(json_object_get(d, "series"));
		g_autoptr(PgateSeriesRec) pr = NULL;
		g_autoptr(GError) local = NULL;
		gboolean seen = FALSE;
		gsize k;
		json_t *x;

		if (dep == NULL || strcmp(dep, sid) == 0)
			continue;
		json_array_foreach(in->prereqs, k, x)
			seen |= strcmp(json_string_value(x), dep) == 0;
		if (seen)
			continue;
		pr = pgate_store_series_get(txn, dep, &local);
		if (pr == NULL)
			continue;
		if (!add_series_patches(txn, pr, in, &ignored, error)) {
			json_decref(sj);
			return NULL;
		}
		g_clear_pointer(&ignored, g_free);
		json_array_append_new(in->prereqs, json_string(dep));
	}
	json_decref(sj);
	in->n_prereq = in->raws->len;
	if (!add_series_patches(txn, in->rec, in, &in->reroll_of, error))
		return NULL;
	return g_steal_pointer(&in);
}

static json_t *
result_json(const char *target, const char *base_name,
	    const PgateApplyResult *res, const Input *in, gboolean alone)
{
	guint skip = alone ? in->n_prereq : 0;
	json_t *commits = json_array(), *patches = json_array();
	json_t *j;

	for (guint i = 0; i < res->commits->len; i++)
		json_array_append_new(commits, json_string(res->commits->pdata[i]));
	for (guint i = 0; i < res->patches->len; i++) {
		const PgateApplyPatchResult *p = res->patches->pdata[i];
		static const char *const names[] = {
			"not-tried", "applied", "already-applied", "failed",
			"rejected",
		};

		json_array_append_new(patches, json_pack(
			"{s:s,s:s,s:o,s:o}", "msgid",
			i + skip < in->msgids->len
				? (char *)in->msgids->pdata[i + skip] : "",
			"state", names[p->state],
			"commit", pgate_json_str_or_null(p->commit),
			"upstream", pgate_json_str_or_null(p->upstream)));
	}
	j = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:I}",
		      "target", target, "base", base_name,
		      "status", pgate_apply_status_to_string(res->status),
		      "base_commit", res->base ? res->base : "",
		      "commits", commits, "patches", patches,
		      "head", pgate_json_str_or_null(res->head),
		      "prerequisites", alone ? json_array()
					     : json_incref(in->prereqs),
		      "reroll_of", pgate_json_str_or_null(in->reroll_of),
		      "at", (json_int_t)(g_get_real_time() / G_USEC_PER_SEC));
	if (res->status != PGATE_APPLY_OK || res->reason != NULL)
		json_object_set_new(j, "failure", json_pack(
			"{s:i,s:o,s:i,s:o}", "patch", (int)res->failed_index,
			"file", pgate_json_str_or_null(res->failed_path),
			"hunk", (int)res->failed_hunk,
			"reason", pgate_json_str_or_null(res->reason)));
	return j;
}

typedef struct {
	const char *sid;
	json_t *docs;   /* target -> doc */
} WriteCtx;

static gboolean
write_docs(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	WriteCtx *w = payload;
	const char *target;
	json_t *doc;

	json_object_foreach(w->docs, target, doc) {
		g_autofree char *key = pgate_state_key(w->sid, "apply", target);

		if (!pgate_state_put(txn, key, doc, error))
			return FALSE;
	}
	return TRUE;
}

/* Publishes a successful attempt: the ref in the repository, and the
 * push when configured.  Failures are recorded in the document. */
static void
publish(const PgateApplyConfig *c, const PgateSeriesRec *r, json_t *doc,
	const char *target, const char *head)
{
	g_autofree char *ref = ref_name(c, r, target);
	g_autofree char *msg = g_strdup_printf("patchgate: %s v%u onto %s",
					       r->id, r->version, target);
	g_autoptr(GError) error = NULL;

	if (!pgate_apply_update_ref(c->repo, ref, head, msg, &error)) {
		json_object_set_new(doc, "publish_error",
				    json_string(error->message));
		return;
	}
	json_object_set_new(doc, "ref", json_string(ref));
	if (c->push_url != NULL && *c->push_url != '\0') {
		g_autofree char *spec = g_strdup_printf("+%s:%s", ref, ref);
		const char *specs[] = { spec };
		PgateApplyCredentials creds = {
			c->push_user, c->push_password_file, c->push_password_env,
			c->push_ssh_key, NULL, NULL, NULL,
		};

		if (pgate_apply_push(c->repo, c->push_url, specs, 1, &creds,
				     &error))
			json_object_set_new(doc, "pushed_to",
					    json_string(c->push_url));
		else
			json_object_set_new(doc, "publish_error",
					    json_string(error->message));
	}
}

json_t *
pgate_pipeline_apply(PgateStore *store, const PgateApplyConfig *c,
		     const char *sid, const char *only_branch, GError **error)
{
	g_autoptr(Input) in = read_input(store, sid, error);
	g_autoptr(GPtrArray) targets = NULL, bases = NULL;
	json_t *docs;
	WriteCtx w = { sid, NULL };

	if (in == NULL)
		return NULL;
	if (in->raws->len == 0) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    "series %s has no patches to apply", sid);
		return NULL;
	}
	docs = json_object();
	/* the series' own base first, then the configured branches */
	targets = g_ptr_array_new();
	bases = g_ptr_array_new();
	if (in->rec->base_commit != NULL) {
		g_ptr_array_add(targets, (gpointer)"base-commit");
		g_ptr_array_add(bases, in->rec->base_commit);
	}
	for (guint i = 0; c->branches[i] != NULL; i++) {
		g_ptr_array_add(targets, c->branches[i]);
		g_ptr_array_add(bases, c->branches[i]);
	}
	for (guint i = 0; i < targets->len; i++) {
		const char *target = targets->pdata[i], *base = bases->pdata[i];
		gboolean own_base = base == in->rec->base_commit;
		g_autoptr(PgateApplyResult) res = NULL;
		g_autofree char *doc_note = NULL;
		g_autoptr(GError) local = NULL;
		json_t *doc;

		if (only_branch && strcmp(only_branch, target) != 0)
			continue;
		res = pgate_apply_series(c->repo, base, in->raws, &c->opts, &local);
		/* a prerequisite that does not apply here (or not together
		 * with the others) is not this series' failure: try the
		 * series alone, and say so */
		if (res != NULL && res->status == PGATE_APPLY_FAILED &&
		    in->n_prereq > 0 && res->failed_index <= in->n_prereq) {
			g_autoptr(GPtrArray) own = g_ptr_array_new();
			g_autoptr(PgateApplyResult) alone = NULL;

			for (guint k = in->n_prereq; k < in->raws->len; k++)
				g_ptr_array_add(own, in->raws->pdata[k]);
			alone = pgate_apply_series(c->repo, base, own, &c->opts,
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
				json_decref(docs);
				g_propagate_error(error, g_steal_pointer(&local));
				return NULL;
			}
			/* a base-commit this repository lacks is no failure:
			 * the configured branches are tried instead; a
			 * missing branch is the configuration's fault, said
			 * in the document */
			if (own_base)
				continue;
			json_object_set_new(docs, target, json_pack(
				"{s:s,s:s,s:s,s:{s:i,s:n,s:i,s:s},s:I}",
				"target", target, "base", base, "status", "error",
				"failure", "patch", 0, "file", "hunk", 0,
				"reason", local->message,
				"at", (json_int_t)(g_get_real_time() / G_USEC_PER_SEC)));
			continue;
		}
		doc = result_json(target, base, res, in, doc_note != NULL);
		if (doc_note != NULL)
			json_object_set_new(doc, "prerequisites_dropped",
					    json_string(doc_note));
		if (res->head != NULL && (res->status == PGATE_APPLY_OK ||
					  res->status == PGATE_APPLY_ALREADY_APPLIED))
			publish(c, in->rec, doc, target, res->head);
		json_object_set_new(docs, target, doc);
		if (res->status == PGATE_APPLY_OK && !c->all_branches &&
		    only_branch == NULL)
			break;
	}
	w.docs = docs;
	if (!pgate_store_write(store, write_docs, &w, error)) {
		json_decref(docs);
		return NULL;
	}
	return docs;
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
