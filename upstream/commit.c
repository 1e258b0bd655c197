/* commit.c - a commit as merge detection reads it, with libgit2
 * (upstream-private.h): its author, its subject (normalised, and without
 * its prefixes), the Message-IDs its Link:/Message-Id: trailers name,
 * its `git patch-id --stable`, and the sketch of the lines it changes.
 *
 * The diff is made as git makes it by default for `git log -p` (and so
 * for `git log -p | git patch-id --stable`): the indent heuristic on
 * (git's default since 2.14; libgit2's is off, and without it some
 * diffs slide a hunk by a line: another patch-id), renames detected.
 */
#include "upstream/upstream-private.h"

#include <git2.h>
#include <string.h>

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_revwalk, git_revwalk_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
PGATE_DEFINE_AUTOPTR(git_diff, git_diff_free)
PGATE_DEFINE_AUTOPTR(git_blob, git_blob_free)
PGATE_DEFINE_AUTOPTR(git_patch, git_patch_free)
PGATE_DEFINE_AUTOPTR(git_object, git_object_free)
#define GIT_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

gboolean
pgate_upstream__git_fail(GError **error, int rc, const char *what)
{
	const git_error *e = git_error_last();
	PgateErrorCode code = PGATE_ERROR_FAILED;

	if (rc == GIT_ENOTFOUND)
		code = PGATE_ERROR_NOT_FOUND;
	else if (e != NULL && (e->klass == GIT_ERROR_OS ||
			       e->klass == GIT_ERROR_NET ||
			       e->klass == GIT_ERROR_NOMEMORY))
		code = PGATE_ERROR_IO;
	g_set_error(error, PGATE_UPSTREAM_ERROR, code, "%s: %s", what,
		    e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

UCommit *
pgate_upstream__commit_new(void)
{
	UCommit *c = g_new0(UCommit, 1);

	c->links = g_ptr_array_new_with_free_func(g_free);
	return c;
}

void
pgate_upstream__commit_free(UCommit *c)
{
	if (c == NULL)
		return;
	g_free(c->email);
	g_free(c->subject);
	g_free(c->core);
	g_ptr_array_unref(c->links);
	g_free(c->patch_id);
	g_free(c);
}

/* git's diff defaults that change a patch's text */
static void
diff_options(git_diff_options *o)
{
	git_diff_options_init(o, GIT_DIFF_OPTIONS_VERSION);
	o->flags |= GIT_DIFF_INDENT_HEURISTIC;
}

/*
 * The diff of a commit, fast: libgit2's tree-to-tree diff walks every
 * entry of both trees (about a millisecond a commit on a tree of 10,000
 * files), where the trees of a commit and its parent differ in a few
 * subtrees.  So the changed files are found by comparing the trees
 * entry by entry, skipping equal subtrees by id, and each changed
 * file's patch is made from its two blobs; the patch-id is then
 * libgit2's, of that text.  What this cannot do as git would (a file
 * added and another deleted: maybe a rename; a binary file; a
 * submodule) is left to the full diff (*@odd).
 */
typedef struct {
	git_repository *repo;
	GString *text;
	gboolean added, deleted, odd;
	guint files;
} Changed;

#define CHANGED_FILES_MAX 2000

static void
changed_file(Changed *ch, const git_tree_entry *e1, const git_tree_entry *e2,
	     const char *path)
{
	GIT_AUTO(git_blob) b1 = NULL;
	GIT_AUTO(git_blob) b2 = NULL;
	GIT_AUTO(git_patch) patch = NULL;
	git_buf buf = GIT_BUF_INIT;
	git_diff_options o;

	if (++ch->files > CHANGED_FILES_MAX ||
	    (e1 && git_tree_entry_type(e1) != GIT_OBJECT_BLOB) ||
	    (e2 && git_tree_entry_type(e2) != GIT_OBJECT_BLOB) ||
	    (e1 && git_blob_lookup(&b1, ch->repo, git_tree_entry_id(e1)) != 0) ||
	    (e2 && git_blob_lookup(&b2, ch->repo, git_tree_entry_id(e2)) != 0) ||
	    (b1 && git_blob_is_binary(b1)) || (b2 && git_blob_is_binary(b2))) {
		ch->odd = TRUE;
		return;
	}
	ch->added |= e1 == NULL;
	ch->deleted |= e2 == NULL;
	if (b1 != NULL && b2 != NULL && git_oid_equal(git_blob_id(b1),
						      git_blob_id(b2)))
		return;	/* a mode change: nothing a patch-id hashes */
	diff_options(&o);
	if (git_patch_from_blobs(&patch, b1, e1 ? path : NULL, b2,
				 e2 ? path : NULL, &o) != 0 ||
	    git_patch_to_buf(&buf, patch) != 0) {
		ch->odd = TRUE;
		git_buf_dispose(&buf);
		return;
	}
	g_string_append_len(ch->text, buf.ptr, (gssize)buf.size);
	git_buf_dispose(&buf);
}

static void
changed_trees(Changed *ch, git_tree *a, git_tree *b, const char *prefix)
{
	size_t i = 0, j = 0;
	size_t na = a ? git_tree_entrycount(a) : 0;
	size_t nb = b ? git_tree_entrycount(b) : 0;

	while (!ch->odd && (i < na || j < nb)) {
		const git_tree_entry *ea = i < na ? git_tree_entry_byindex(a, i)
						  : NULL;
		const git_tree_entry *eb = j < nb ? git_tree_entry_byindex(b, j)
						  : NULL;
		const git_tree_entry *e1, *e2;
		int cmp = ea == NULL ? 1 : eb == NULL ? -1
			: strcmp(git_tree_entry_name(ea), git_tree_entry_name(eb));
		gboolean t1, t2;
		g_autofree char *path = NULL;

		if (cmp == 0 && git_oid_equal(git_tree_entry_id(ea),
					      git_tree_entry_id(eb)) &&
		    git_tree_entry_filemode(ea) == git_tree_entry_filemode(eb)) {
			i++, j++;
			continue;
		}
		e1 = cmp <= 0 ? ea : NULL;
		e2 = cmp >= 0 ? eb : NULL;
		if (cmp <= 0)
			i++;
		if (cmp >= 0)
			j++;
		path = g_strconcat(prefix, git_tree_entry_name(e1 ? e1 : e2),
				   NULL);
		t1 = e1 && git_tree_entry_type(e1) == GIT_OBJECT_TREE;
		t2 = e2 && git_tree_entry_type(e2) == GIT_OBJECT_TREE;
		if (t1 || t2) {
			GIT_AUTO(git_tree) s1 = NULL;
			GIT_AUTO(git_tree) s2 = NULL;
			g_autofree char *sub = g_strconcat(path, "/", NULL);

			if ((t1 && git_tree_lookup(&s1, ch->repo,
						   git_tree_entry_id(e1)) != 0) ||
			    (t2 && git_tree_lookup(&s2, ch->repo,
						   git_tree_entry_id(e2)) != 0)) {
				ch->odd = TRUE;
				return;
			}
			changed_trees(ch, s1, s2, sub);
		}
		if ((e1 && !t1) || (e2 && !t2))
			changed_file(ch, t1 ? NULL : e1, t2 ? NULL : e2, path);
	}
}

/* The patch-id of diff text @text (%NULL when it has no diff). */
static char *
text_patch_id(const GString *text)
{
	GIT_AUTO(git_diff) d = NULL;
	git_oid id;
	char hex[GIT_OID_HEXSZ + 1];

	if (text->len == 0 ||
	    git_diff_from_buffer(&d, text->str, text->len) != 0 ||
	    git_diff_patchid(&id, d, NULL) != 0)
		return NULL;
	git_oid_tostr(hex, sizeof hex, &id);
	return g_strdup(hex);
}

/* The full diff, for what the fast one cannot do: renames found, the
 * text into @text. */
static gboolean
full_diff(git_repository *repo, git_tree *pt, git_tree *t, GString *text)
{
	GIT_AUTO(git_diff) d = NULL;
	git_diff_options o;
	git_diff_find_options fo;
	git_buf buf = GIT_BUF_INIT;

	diff_options(&o);
	if (git_diff_tree_to_tree(&d, repo, pt, t, &o) != 0 ||
	    git_diff_num_deltas(d) == 0)
		return FALSE;
	git_diff_find_options_init(&fo, GIT_DIFF_FIND_OPTIONS_VERSION);
	fo.flags = GIT_DIFF_FIND_RENAMES;
	if (git_diff_find_similar(d, &fo) != 0 ||
	    git_diff_to_buf(&buf, d, GIT_DIFF_FORMAT_PATCH) != 0) {
		git_buf_dispose(&buf);
		return FALSE;
	}
	g_string_append_len(text, buf.ptr, (gssize)buf.size);
	git_buf_dispose(&buf);
	return TRUE;
}

/* The diff of @c against its parent (a root commit: against nothing) as
 * git log -p shows it into @text; FALSE for a merge or an unreadable
 * commit. */
static gboolean
commit_diff(git_repository *repo, git_commit *c, GString *text)
{
	GIT_AUTO(git_commit) parent = NULL;
	GIT_AUTO(git_tree) t = NULL;
	GIT_AUTO(git_tree) pt = NULL;
	Changed ch = { repo, text, FALSE, FALSE, FALSE, 0 };

	if (git_commit_parentcount(c) > 1 || git_commit_tree(&t, c) != 0 ||
	    (git_commit_parentcount(c) == 1 &&
	     (git_commit_parent(&parent, c, 0) != 0 ||
	      git_commit_tree(&pt, parent) != 0)))
		return FALSE;
	changed_trees(&ch, pt, t, "");
	if (!ch.odd && !(ch.added && ch.deleted))
		return TRUE;
	g_string_truncate(text, 0);
	return full_diff(repo, pt, t, text);
}

UCommit *
pgate_upstream__commit_read(git_repository *repo, git_commit *c,
			    char *const *patterns)
{
	g_autoptr(UCommit) out = pgate_upstream__commit_new();
	const git_signature *a = git_commit_author(c);
	git_message_trailer_array tr = { 0 };
	g_autoptr(GString) text = g_string_new(NULL);

	git_oid_tostr(out->oid, sizeof out->oid, git_commit_id(c));
	out->email = g_ascii_strdown(a && a->email ? a->email : "", -1);
	out->when = a ? (gint64)a->when.time : 0;
	out->subject = pgate_upstream_subject_normalize(git_commit_summary(c));
	out->core = pgate_upstream_subject_core(git_commit_summary(c));
	if (git_message_trailers(&tr, git_commit_message(c)) == 0) {
		for (size_t i = 0; i < tr.count; i++) {
			char *id;

			if (out->links->len >= LINKS_MAX ||
			    (g_ascii_strcasecmp(tr.trailers[i].key, "Link") != 0 &&
			     g_ascii_strcasecmp(tr.trailers[i].key,
						"Message-Id") != 0))
				continue;
			id = pgate_upstream_link_msgid(tr.trailers[i].value,
						       patterns);
			if (id != NULL)
				g_ptr_array_add(out->links, id);
		}
		git_message_trailer_array_free(&tr);
	}
	if (git_commit_parentcount(c) == 1 && commit_diff(repo, c, text)) {
		out->patch_id = text_patch_id(text);
		out->sketch_len = pgate_diff_sketch(text->str, text->len,
						    out->sketch);
	}
	return g_steal_pointer(&out);
}

gboolean
pgate_upstream_patch_ids(const char *path, const char *rev, guint max,
			 PgateUpstreamPatchIdFunc fn, gpointer data,
			 GError **error)
{
	GIT_AUTO(git_repository) repo = NULL;
	GIT_AUTO(git_revwalk) walk = NULL;
	GIT_AUTO(git_object) obj = NULL;
	git_oid oid;
	guint n = 0;
	int rc;

	git_libgit2_init();
	if ((rc = git_repository_open_ext(&repo, path,
					  GIT_REPOSITORY_OPEN_NO_SEARCH,
					  NULL)) != 0 ||
	    (rc = git_revparse_single(&obj, repo, rev)) != 0 ||
	    (rc = git_revwalk_new(&walk, repo)) != 0)
		return pgate_upstream__git_fail(error, rc, rev);
	git_revwalk_sorting(walk, GIT_SORT_TIME);
	if ((rc = git_revwalk_push(walk, git_object_id(obj))) != 0)
		return pgate_upstream__git_fail(error, rc, rev);
	while ((max == 0 || n < max) &&
	       (rc = git_revwalk_next(&oid, walk)) == 0) {
		GIT_AUTO(git_commit) c = NULL;
		g_autoptr(GString) text = g_string_new(NULL);
		g_autofree char *id = NULL;
		char hex[GIT_OID_HEXSZ + 1];

		if ((rc = git_commit_lookup(&c, repo, &oid)) != 0)
			return pgate_upstream__git_fail(error, rc,
							"read a commit");
		n++;
		if (!commit_diff(repo, c, text) ||
		    (id = text_patch_id(text)) == NULL)
			continue;
		git_oid_tostr(hex, sizeof hex, &oid);
		fn(data, hex, id);
	}
	if (rc != 0 && rc != GIT_ITEROVER)
		return pgate_upstream__git_fail(error, rc, "walk");
	return TRUE;
}
