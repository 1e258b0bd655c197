/* route.c - projects and routing (docs/config.md "Projects",
 * docs/pipeline.md "Routing").
 *
 * A project ([project NAME], common/config.c) takes the mail whose
 * List-Id (that of any copy: the store keeps every list's) matches one
 * of its `lists` globs, or one of whose To/Cc
 * addresses matches one of its `addresses` globs; without any project
 * the configuration is one implicit project that takes every message.
 * Within a project, routing picks the branches a series is applied to:
 * its base-commit first (when the repository has it: stage-apply.c
 * finds out), then the first rule that says something of
 * [apply] tags / tag_default (the subject's tree tag), [apply] paths
 * and maintainers (the files the series touches), else [apply]
 * branches.  Everything here is pure but the reading of a series'
 * messages (a read transaction): the MAINTAINERS file is read from the
 * repository by the caller (stage-apply.c), the parsing is here.
 * This file is linked by the lean binary too (series show).
 */
#include "pipeline/pipeline-private.h"

#include <string.h>

/* ---- projects ---- */

void
pgate_project_free(PgateProject *pr)
{
	if (pr == NULL)
		return;
	g_free(pr->name);
	g_strfreev(pr->lists);
	g_strfreev(pr->addresses);
	if (pr->kf != NULL)
		g_key_file_unref(pr->kf);
	g_free(pr);
}

/* @list lowercased in place. */
static char **
lower_all(char **list)
{
	for (guint i = 0; list && list[i]; i++) {
		char *l = g_ascii_strdown(list[i], -1);

		g_free(list[i]);
		list[i] = l;
	}
	return list;
}

GPtrArray *
pgate_projects_load(GKeyFile *kf, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_project_free);
	g_auto(GStrv) names = pgate_config_projects(kf);

	if (names[0] == NULL) {
		PgateProject *pr = g_new0(PgateProject, 1);

		pr->kf = g_key_file_ref(kf);
		g_ptr_array_add(out, pr);
		return g_steal_pointer(&out);
	}
	for (guint i = 0; names[i]; i++) {
		g_autofree char *group = g_strdup_printf("project %s", names[i]);
		PgateProject *pr;

		if (!pgate_config_project_name_valid(names[i])) {
			pgate_config_error(error, PGATE_PIPELINE_ERROR, group,
					   NULL, "'%s' is no project name",
					   names[i]);
			return NULL;
		}
		pr = g_new0(PgateProject, 1);
		g_ptr_array_add(out, pr);
		pr->name = g_strdup(names[i]);
		if (!pgate_config_list(kf, group, "lists", &pr->lists,
				       PGATE_PIPELINE_ERROR, error) ||
		    !pgate_config_list(kf, group, "addresses", &pr->addresses,
				       PGATE_PIPELINE_ERROR, error))
			return NULL;
		if (pr->lists == NULL && pr->addresses == NULL) {
			pgate_config_error(error, PGATE_PIPELINE_ERROR, group,
					   NULL, "selects no mail: give lists "
					   "(List-Id globs) or addresses "
					   "(To/Cc globs)");
			return NULL;
		}
		lower_all(pr->lists);
		lower_all(pr->addresses);
		pr->kf = pgate_config_project_keyfile(kf, names[i],
						      PGATE_PIPELINE_ERROR,
						      error);
		if (pr->kf == NULL)
			return NULL;
	}
	return g_steal_pointer(&out);
}

const char *
pgate_project_label(const PgateProject *pr)
{
	return pr->name ? pr->name : "-";
}

const char *
pgate_project_name(const PgateProject *pr)
{
	return pr->name;
}

char *
pgate_project_state_id(const PgateProject *pr, const char *sid)
{
	if (pr == NULL || pr->name == NULL)
		return g_strdup(sid);
	return g_strdup_printf("%s@%s", sid, pr->name);
}

static const char *
glob_of(char **globs, const char *value)
{
	g_autofree char *v = g_ascii_strdown(value ? value : "", -1);

	for (guint i = 0; globs && globs[i]; i++)
		if (*globs[i] && g_pattern_match_simple(globs[i], v))
			return globs[i];
	return NULL;
}

char *
pgate_project_match_message(const PgateProject *pr, const PgateMessageRec *m)
{
	const char *g;
	guint n;

	if (pr->name == NULL)
		return g_strdup("the only project");
	/* every list the message came through: its first copy's, then
	 * those of the duplicates stored later */
	n = 1 + (m->more_list_ids != NULL ? m->more_list_ids->len : 0);
	for (guint i = 0; i < n; i++) {
		const char *id = i == 0 ? m->list_id
					: m->more_list_ids->pdata[i - 1];

		if (id != NULL && *id != '\0' &&
		    (g = glob_of(pr->lists, id)) != NULL)
			return g_strdup_printf("List-Id <%s> matches %s", id, g);
	}
	for (guint k = 0; k < 2; k++) {
		GPtrArray *a = k == 0 ? m->to : m->cc;

		for (guint i = 0; a != NULL && i < a->len; i++)
			if ((g = glob_of(pr->addresses, a->pdata[i])) != NULL)
				return g_strdup_printf("%s %s matches %s",
						       k == 0 ? "To" : "Cc",
						       (char *)a->pdata[i], g);
	}
	return NULL;
}

/* The message numbers of @rec's cover and patches, cover first. */
static GArray *
series_nums(const PgateSeriesRec *rec)
{
	GArray *nums = g_array_new(FALSE, FALSE, sizeof(guint64));

	if (rec->cover_num != 0)
		g_array_append_val(nums, rec->cover_num);
	for (guint i = 0; rec->patches != NULL && i < rec->patches->len; i++) {
		const PgateSeriesPatch *sp = rec->patches->pdata[i];

		if (sp->num != 0)
			g_array_append_val(nums, sp->num);
	}
	return nums;
}

gboolean
pgate_project_match_series(PgateStoreTxn *txn, const PgateProject *pr,
			   const PgateSeriesRec *rec, char **out_why,
			   GError **error)
{
	g_autoptr(GArray) nums = NULL;

	*out_why = NULL;
	if (pr->name == NULL) {
		*out_why = g_strdup("the only project");
		return TRUE;
	}
	nums = series_nums(rec);
	for (guint i = 0; i < nums->len && *out_why == NULL; i++) {
		g_autoptr(PgateMessageRec) m = pgate_store_message_get(
			txn, g_array_index(nums, guint64, i), error);

		if (m == NULL)
			return FALSE;
		*out_why = pgate_project_match_message(pr, m);
	}
	return TRUE;
}

/* ---- routing ---- */

const char *
pgate_route_rule_to_string(PgateRouteRule rule)
{
	switch (rule) {
	case PGATE_ROUTE_BASE_COMMIT: return "base-commit";
	case PGATE_ROUTE_TAG: return "tag";
	case PGATE_ROUTE_TAG_DEFAULT: return "tag-default";
	case PGATE_ROUTE_PATHS: return "paths";
	case PGATE_ROUTE_BRANCHES: return "branches";
	}
	return "?";
}

void
pgate_route_config_clear(PgateRouteConfig *c)
{
	g_clear_pointer(&c->tags, g_strfreev);
	g_clear_pointer(&c->tag_default, g_free);
	g_clear_pointer(&c->paths, g_strfreev);
	g_clear_pointer(&c->maintainers, g_free);
	g_clear_pointer(&c->maintainers_sections, g_strfreev);
}

/* "GLOB:BRANCH" items (BRANCH optional when @branch_optional). */
static gboolean
check_map(char **items, const char *key, gboolean branch_optional,
	  GError **error)
{
	for (guint i = 0; items && items[i]; i++) {
		const char *colon = strrchr(items[i], ':');

		if ((colon == NULL && !branch_optional) || colon == items[i] ||
		    (colon != NULL && colon[1] == '\0'))
			return pgate_config_error(
				error, PGATE_PIPELINE_ERROR, "apply", key,
				"'%s' is not GLOB:BRANCH%s", items[i],
				branch_optional ? " (or GLOB)" : "");
	}
	return TRUE;
}

gboolean
pgate_route_config_load(GKeyFile *kf, PgateRouteConfig *c, GError **error)
{
	memset(c, 0, sizeof *c);
	if (!pgate_config_list(kf, "apply", "tags", &c->tags,
			       PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "apply", "tag_default", &c->tag_default,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_list(kf, "apply", "paths", &c->paths,
			       PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_string(kf, "apply", "maintainers", &c->maintainers,
				 PGATE_PIPELINE_ERROR, error) ||
	    !pgate_config_list(kf, "apply", "maintainers_sections",
			       &c->maintainers_sections, PGATE_PIPELINE_ERROR,
			       error) ||
	    !check_map(c->tags, "tags", FALSE, error) ||
	    !check_map(c->paths, "paths", TRUE, error)) {
		pgate_route_config_clear(c);
		return FALSE;
	}
	lower_all(c->tags);
	return TRUE;
}

gboolean
pgate_route_config_routes(const PgateRouteConfig *c)
{
	return c->tags != NULL || c->tag_default != NULL || c->paths != NULL ||
	       c->maintainers != NULL;
}

/* Whether subject token @t is no tree tag: RFC, RESEND, vN, N/M, ... */
static gboolean
is_marker(const char *t)
{
	static const char *const words[] = {
		"rfc", "resend", "pull", "git", "patch", "patchv", "rfcv",
		NULL,
	};
	g_autofree char *l = g_ascii_strdown(t, -1);
	const char *s = l;
	gboolean digits = FALSE;

	for (guint i = 0; words[i]; i++)
		if (g_str_has_prefix(l, words[i])) {
			s = l + strlen(words[i]);
			/* "rfc", "resend", "patchv2": the word and digits */
			while (g_ascii_isdigit(*s))
				s++;
			if (*s == '\0')
				return TRUE;
			s = l;
		}
	if (*s == 'v')
		s++;
	while (g_ascii_isdigit(*s)) {
		digits = TRUE;
		s++;
	}
	if (digits && *s == '\0')
		return TRUE;	/* v2, 3 */
	if (digits && *s == '/') {
		for (s++; g_ascii_isdigit(*s); s++)
			;
		return *s == '\0';	/* 3/5 */
	}
	return FALSE;
}

char *
pgate_route_tree_tag(const GPtrArray *prefixes)
{
	for (guint i = 0; prefixes != NULL && i < prefixes->len; i++) {
		const char *t = prefixes->pdata[i];

		if (*t != '\0' && !is_marker(t))
			return g_ascii_strdown(t, -1);
	}
	return NULL;
}

gboolean
pgate_route_path_match(const char *glob, const char *path)
{
	gsize n = strlen(glob);

	if (n == 0)
		return FALSE;
	/* "drivers/net/": the directory and everything below it */
	if (glob[n - 1] == '/')
		return strncmp(glob, path, n) == 0;
	if (g_pattern_match_simple(glob, path))
		return TRUE;
	/* a directory named without its '/' */
	if (strpbrk(glob, "*?") == NULL)
		return strncmp(glob, path, n) == 0 && path[n] == '/';
	return FALSE;
}

char **
pgate_route_maintainers_parse(const char *text, gsize len,
			      char **sections)
{
	g_autofree char *copy = g_strndup(text, len);
	g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
	GStrvBuilder *b = g_strv_builder_new();
	gboolean want = sections == NULL;
	char **out;

	for (guint i = 0; lines[i]; i++) {
		char *l = g_strchomp(lines[i]);

		if (l[0] == '\0') {
			continue;
		} else if (l[0] != '\t' && l[0] != ' ' &&
			   !(g_ascii_isupper(l[0]) && l[1] == ':')) {
			/* a section's title */
			g_autofree char *title = g_ascii_strdown(l, -1);

			want = sections == NULL;
			for (guint k = 0; !want && sections[k]; k++) {
				g_autofree char *s =
					g_ascii_strdown(sections[k], -1);

				want = g_pattern_match_simple(s, title);
			}
		} else if (want && l[0] == 'F' && l[1] == ':') {
			const char *glob = l + 2;

			while (*glob == ' ' || *glob == '\t')
				glob++;
			if (*glob != '\0')
				g_strv_builder_add(b, glob);
		}
	}
	out = g_strv_builder_end(b);
	g_strv_builder_unref(b);
	return out;
}

void
pgate_route_free(PgateRoute *r)
{
	if (r == NULL)
		return;
	g_ptr_array_unref(r->targets);
	g_free(r->skip);
	g_free(r);
}

static void
target_free(PgateRouteTarget *t)
{
	g_free(t->branch);
	g_free(t->why);
	g_free(t);
}

static void
add_target(PgateRoute *r, const char *branch, PgateRouteRule rule,
	   const char *why)
{
	PgateRouteTarget *t;

	for (guint i = 0; i < r->targets->len; i++)
		if (strcmp(((PgateRouteTarget *)r->targets->pdata[i])->branch,
			   branch) == 0)
			return;
	t = g_new0(PgateRouteTarget, 1);
	t->branch = g_strdup(branch);
	t->rule = rule;
	t->why = g_strdup(why);
	g_ptr_array_add(r->targets, t);
}

/* The paths rule: each file of @files against the globs of [apply]
 * paths (with or without a branch) and of MAINTAINERS (without).
 * Returns: 1 when it chose branches, 0 when it leaves the choice to the
 * branches, -1 when the series touches nothing of the project's. */
static int
route_paths(PgateRoute *r, const PgateRouteConfig *c, const GPtrArray *files,
	    char **maint)
{
	gboolean claimed = FALSE, chose = FALSE;

	for (guint f = 0; files != NULL && f < files->len; f++) {
		const char *path = files->pdata[f];

		for (guint i = 0; c->paths && c->paths[i]; i++) {
			const char *colon = strrchr(c->paths[i], ':');
			g_autofree char *glob = colon
				? g_strndup(c->paths[i],
					    (gsize)(colon - c->paths[i]))
				: g_strdup(c->paths[i]);

			if (!pgate_route_path_match(glob, path))
				continue;
			claimed = TRUE;
			if (colon != NULL) {
				g_autofree char *why = g_strdup_printf(
					"%s matches %s", path, glob);

				add_target(r, colon + 1, PGATE_ROUTE_PATHS,
					   why);
				chose = TRUE;
			}
		}
		for (guint i = 0; !claimed && maint && maint[i]; i++)
			if (pgate_route_path_match(maint[i], path))
				claimed = TRUE;
	}
	if (chose)
		return 1;
	return claimed ? 0 : -1;
}

PgateRoute *
pgate_route_decide(const PgateRouteConfig *c, char **branches,
		   const char *base_commit, const GPtrArray *prefixes,
		   const GPtrArray *files, char **maint)
{
	PgateRoute *r = g_new0(PgateRoute, 1);
	g_autofree char *tag = pgate_route_tree_tag(prefixes);
	int paths;

	r->targets = g_ptr_array_new_with_free_func((GDestroyNotify)target_free);
	if (base_commit != NULL)
		add_target(r, "base-commit", PGATE_ROUTE_BASE_COMMIT,
			   base_commit);
	/* (2) the subject's tree tag */
	if (c->tags != NULL && tag != NULL) {
		for (guint i = 0; c->tags[i]; i++) {
			const char *colon = strrchr(c->tags[i], ':');
			g_autofree char *glob = g_strndup(
				c->tags[i], (gsize)(colon - c->tags[i]));

			if (g_pattern_match_simple(glob, tag)) {
				g_autofree char *why = g_strdup_printf(
					"[%s] matches %s", tag, glob);

				add_target(r, colon + 1, PGATE_ROUTE_TAG, why);
				return r;
			}
		}
		/* a tree the project does not have: not an apply failure */
		r->skip = g_strdup_printf("no tree for tag %s", tag);
		return r;
	}
	/* a subject without a tree tag (a tag at all, without tags) */
	if (c->tag_default != NULL) {
		add_target(r, c->tag_default, PGATE_ROUTE_TAG_DEFAULT,
			   tag ? "[apply] tags is not set"
			       : "no tree tag in the subject");
		return r;
	}
	/* (3) the touched paths */
	if (c->paths != NULL || maint != NULL) {
		paths = route_paths(r, c, files, maint);
		if (paths > 0)
			return r;
		if (paths < 0) {
			r->skip = g_strdup("touches no path of the project's");
			return r;
		}
	}
	/* (4) the configured branches */
	for (guint i = 0; branches && branches[i]; i++)
		add_target(r, branches[i], PGATE_ROUTE_BRANCHES,
			   "[apply] branches");
	return r;
}

gboolean
pgate_route_series_input(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			 GPtrArray **out_prefixes, GPtrArray **out_files,
			 GError **error)
{
	g_autoptr(GArray) nums = series_nums(rec);
	g_autoptr(GPtrArray) prefixes = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	gboolean have_prefixes = FALSE;

	for (guint i = 0; i < nums->len; i++) {
		g_autoptr(PgateMessageRec) m = pgate_store_message_get(
			txn, g_array_index(nums, guint64, i), error);

		if (m == NULL)
			return FALSE;
		/* the tag of the first message that has prefixes (the
		 * cover, else the first patch) */
		if (!have_prefixes && m->prefixes != NULL &&
		    m->prefixes->len > 0) {
			for (guint k = 0; k < m->prefixes->len; k++)
				g_ptr_array_add(prefixes,
						g_strdup(m->prefixes->pdata[k]));
			have_prefixes = TRUE;
		}
		for (guint k = 0; m->diff_files != NULL &&
		     k < m->diff_files->len; k++) {
			char *f = g_strdup(m->diff_files->pdata[k]);

			if (g_hash_table_contains(seen, f)) {
				g_free(f);
				continue;
			}
			g_ptr_array_add(files, f);
			g_hash_table_add(seen, f);
		}
	}
	*out_prefixes = g_steal_pointer(&prefixes);
	*out_files = g_steal_pointer(&files);
	return TRUE;
}
