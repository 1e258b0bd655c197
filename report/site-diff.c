/* site-diff.c - between two versions of a series, in-process with
 * libgit2: the interdiff of the trees they applied to, and a
 * range-diff-style pairing of their patches (git range-diff's output,
 * simplified): each patch of the newer version is paired with one of the
 * older by patch-id (unchanged: "="), else by subject (changed: "!",
 * followed by the diff of the two diffs); the others were added (">")
 * or dropped ("<").
 *
 * Everything here is bounded: at most MAX_PATCHES commits a side, and
 * each text cut at MAX_TEXT bytes.
 */
#include "report/report.h"

#include <git2.h>
#include <string.h>

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
PGATE_DEFINE_AUTOPTR(git_diff, git_diff_free)
PGATE_DEFINE_AUTOPTR(git_patch, git_patch_free)
#define GIT_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

#define MAX_PATCHES 200
#define MAX_TEXT (1u << 20)

typedef struct {
	char *abbrev, *subject, *patch_id, *text;
	gint paired;            /* index in the other side, -1: none */
	gboolean same;
} Commit;

static void
commit_free(gpointer p)
{
	Commit *c = p;

	g_free(c->abbrev);
	g_free(c->subject);
	g_free(c->patch_id);
	g_free(c->text);
	g_free(c);
}

static gboolean
git_fail(GError **error, const char *what)
{
	const git_error *e = git_error_last();

	g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED, "%s: %s",
		    what, e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

static char *
cut(const char *s, gsize len)
{
	if (len <= MAX_TEXT)
		return g_strndup(s, len);
	return g_strdup_printf("%.*s\n[... cut at %u bytes]\n", (int)MAX_TEXT, s,
			       MAX_TEXT);
}

/* The tree of commit @hex (its parent's with @parent). */
static gboolean
tree_of(git_repository *repo, const char *hex, gboolean parent,
	git_tree **out, GError **error)
{
	git_oid oid;
	GIT_AUTO(git_commit) c = NULL;
	GIT_AUTO(git_commit) p = NULL;

	if (git_oid_fromstr(&oid, hex) != 0 ||
	    git_commit_lookup(&c, repo, &oid) != 0)
		return git_fail(error, hex);
	if (parent) {
		if (git_commit_parent(&p, c, 0) != 0)
			return git_fail(error, hex);
		return git_commit_tree(out, p) == 0 || git_fail(error, hex);
	}
	return git_commit_tree(out, c) == 0 || git_fail(error, hex);
}

static char *
diff_text(git_repository *repo, git_tree *a, git_tree *b, git_oid *out_id,
	  GError **error)
{
	GIT_AUTO(git_diff) diff = NULL;
	git_buf buf = GIT_BUF_INIT;
	char *s;

	if (git_diff_tree_to_tree(&diff, repo, a, b, NULL) != 0)
		return git_fail(error, "diff"), NULL;
	if (out_id && git_diff_patchid(out_id, diff, NULL) != 0)
		return git_fail(error, "patch-id"), NULL;
	if (git_diff_to_buf(&buf, diff, GIT_DIFF_FORMAT_PATCH) != 0)
		return git_fail(error, "diff"), NULL;
	s = cut(buf.ptr ? buf.ptr : "", buf.size);
	git_buf_dispose(&buf);
	return s;
}

static GPtrArray *
commits_of(git_repository *repo, const GPtrArray *hexes, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(commit_free);

	for (guint i = 0; i < hexes->len && i < MAX_PATCHES; i++) {
		const char *hex = hexes->pdata[i];
		GIT_AUTO(git_tree) a = NULL;
		GIT_AUTO(git_tree) b = NULL;
		GIT_AUTO(git_commit) c = NULL;
		git_oid oid, pid;
		char idhex[GIT_OID_HEXSZ + 1];
		Commit *x;

		if (git_oid_fromstr(&oid, hex) != 0 ||
		    git_commit_lookup(&c, repo, &oid) != 0) {
			git_fail(error, hex);
			return NULL;
		}
		if (!tree_of(repo, hex, TRUE, &a, error) ||
		    !tree_of(repo, hex, FALSE, &b, error))
			return NULL;
		x = g_new0(Commit, 1);
		x->paired = -1;
		x->text = diff_text(repo, a, b, &pid, error);
		if (x->text == NULL) {
			commit_free(x);
			return NULL;
		}
		git_oid_tostr(idhex, sizeof idhex, &pid);
		x->patch_id = g_strdup(idhex);
		x->abbrev = g_strndup(hex, 7);
		x->subject = g_strdup(git_commit_summary(c) ? git_commit_summary(c)
				      : "");
		g_ptr_array_add(out, x);
	}
	return g_steal_pointer(&out);
}

/* @text without its "index OLD..NEW MODE" lines, which differ whenever
 * the trees before do (git range-diff leaves them out too). */
static char *
without_index(const char *text)
{
	GString *out = g_string_sized_new(strlen(text));

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		gsize len = nl ? (gsize)(nl - p + 1) : strlen(p);

		if (!g_str_has_prefix(p, "index "))
			g_string_append_len(out, p, (gssize)len);
		p += len;
	}
	return g_string_free(out, FALSE);
}

/* The diff of two patches' texts, each line indented by four. */
static void
diff_of_diffs(GString *out, const Commit *a, const Commit *b)
{
	GIT_AUTO(git_patch) p = NULL;
	git_buf buf = GIT_BUF_INIT;
	const char *s, *nl;

	g_autofree char *ta = without_index(a->text);
	g_autofree char *tb = without_index(b->text);

	if (git_patch_from_buffers(&p, ta, strlen(ta), "a", tb, strlen(tb), "b",
				   NULL) != 0 ||
	    git_patch_to_buf(&buf, p) != 0)
		return;
	/* past the "diff --git", "---" and "+++" lines of the two names */
	s = buf.ptr ? strstr(buf.ptr, "\n@@") : NULL;
	for (s = s ? s + 1 : NULL; s && *s; s = nl + 1) {
		nl = strchr(s, '\n');
		g_string_append(out, "    ");
		g_string_append_len(out, s, nl ? nl - s : (gssize)strlen(s));
		g_string_append_c(out, '\n');
		if (nl == NULL)
			break;
	}
	git_buf_dispose(&buf);
}

static void
pair(GPtrArray *olds, GPtrArray *news, gboolean by_id)
{
	for (guint i = 0; i < news->len; i++) {
		Commit *n = news->pdata[i];

		if (n->paired >= 0)
			continue;
		for (guint j = 0; j < olds->len; j++) {
			Commit *o = olds->pdata[j];

			if (o->paired >= 0)
				continue;
			if (by_id ? strcmp(o->patch_id, n->patch_id) == 0
				  : strcmp(o->subject, n->subject) == 0) {
				o->paired = (gint)i;
				n->paired = (gint)j;
				o->same = n->same = by_id;
				break;
			}
		}
	}
}

/* pgate_report_site_between() between libgit2's init and shutdown: every
 * libgit2 object is freed when this returns, before the shutdown (one
 * freed after it leaks what the library's caches held). */
static gboolean
between(const char *repo_path, const GPtrArray *old_commits,
	const GPtrArray *new_commits, char **out_interdiff,
	char **out_range_diff, GError **error)
{
	GIT_AUTO(git_repository) repo = NULL;
	GIT_AUTO(git_tree) a = NULL;
	GIT_AUTO(git_tree) b = NULL;
	g_autoptr(GPtrArray) olds = NULL;
	g_autoptr(GPtrArray) news = NULL;
	g_autoptr(GString) rd = g_string_new(NULL);
	g_autofree char *inter = NULL;
	guint j = 0;

	if (git_repository_open_bare(&repo, repo_path) != 0 &&
	    git_repository_open(&repo, repo_path) != 0)
		return git_fail(error, repo_path);
	if (!tree_of(repo, old_commits->pdata[old_commits->len - 1], FALSE, &a,
		     error) ||
	    !tree_of(repo, new_commits->pdata[new_commits->len - 1], FALSE, &b,
		     error) ||
	    (inter = diff_text(repo, a, b, NULL, error)) == NULL ||
	    (olds = commits_of(repo, old_commits, error)) == NULL ||
	    (news = commits_of(repo, new_commits, error)) == NULL)
		return FALSE;
	pair(olds, news, TRUE);
	pair(olds, news, FALSE);
	/* in the newer version's order, each dropped patch where it was */
	for (guint i = 0; i < news->len; i++) {
		const Commit *n = news->pdata[i];

		for (; j < olds->len && (n->paired < 0 || j <= (guint)n->paired); j++) {
			const Commit *o = olds->pdata[j];

			if (o->paired < 0)
				g_string_append_printf(rd, "%u: %s < -: ------- %s\n",
						       j + 1, o->abbrev, o->subject);
		}
		if (n->paired < 0) {
			g_string_append_printf(rd, "-: ------- > %u: %s %s\n", i + 1,
					       n->abbrev, n->subject);
			continue;
		}
		g_string_append_printf(rd, "%d: %s %c %u: %s %s\n", n->paired + 1,
				       ((Commit *)olds->pdata[n->paired])->abbrev,
				       n->same ? '=' : '!', i + 1, n->abbrev,
				       n->subject);
		if (!n->same)
			diff_of_diffs(rd, olds->pdata[n->paired], n);
	}
	for (; j < olds->len; j++) {
		const Commit *o = olds->pdata[j];

		if (o->paired < 0)
			g_string_append_printf(rd, "%u: %s < -: ------- %s\n", j + 1,
					       o->abbrev, o->subject);
	}
	*out_interdiff = *inter ? g_steal_pointer(&inter)
		: g_strdup("(the two versions give the same tree)\n");
	*out_range_diff = cut(rd->str, rd->len);
	return TRUE;
}

gboolean
pgate_report_site_between(const char *repo_path, const GPtrArray *old_commits,
			  const GPtrArray *new_commits, char **out_interdiff,
			  char **out_range_diff, GError **error)
{
	gboolean ok;

	g_return_val_if_fail(old_commits->len > 0 && new_commits->len > 0, FALSE);
	git_libgit2_init();
	ok = between(repo_path, old_commits, new_commits, out_interdiff,
		     out_range_diff, error);
	git_libgit2_shutdown();
	return ok;
}
