/* apply.c - a series onto a base, one commit per patch, in memory.
 *
 * For each patch: pgate_mailinfo_parse() gives the commit's author, date
 * and message and the diff text; git_diff_from_buffer() parses the diff.
 * Before anything is applied every patch passes the static checks
 * (precheck.c); then, patch by patch:
 *
 *  1. the tree checks simulate git apply on the current tree (precheck.c):
 *     they find where each hunk goes and why a patch does not apply;
 *  2. a small tree is built holding only the entries the diff reads (its
 *     old paths, taken from the current tree, through
 *     git_tree_create_updated() from the empty tree);
 *  3. git_apply_to_tree() applies the diff to that small tree, giving an
 *     index of the post-image of those paths;
 *  4. the post-image entries are grafted onto the current tree with one
 *     git_tree_create_updated(): an upsert per path the index holds, a
 *     removal per path it lost (deletions, rename sources).  Only the trees
 *     on the way to a touched path are read and written.
 *     libgit2 gives a file whose patch names no mode 100644; git keeps the
 *     file's mode then (a plain modification, a rename without "new
 *     mode"), so the graft takes the mode from the old entry in that case.
 *  5. the commit is made as git am makes it: author and date from the mail
 *     (through git's ident clean-up), the committer from the options, the
 *     message as mailinfo and am give it, invalid UTF-8 re-encoded as
 *     Latin-1 as git's commit_tree() does, no encoding header.
 *
 * No step needs the whole tree, binary patches included (libgit2 reads the
 * blob of the path from the small tree like any other), so there is no
 * fall-back to applying to the full tree.
 *
 * git copies and renames from a file's preimage, libgit2 copies from what
 * an earlier delta of the same patch made of it ("modify X, copy X to Y",
 * as format-patch -C writes a file changed and copied).  A patch that
 * copies a path an earlier delta names is applied one delta at a time
 * instead (post_one_by_one()), each on a small tree holding its preimage
 * as git reads it, and the results written as git writes them.
 *
 * Objects are written to an in-memory store (memodb.c) and, at the end, to
 * the object database as one pack: a series of ten patches makes some
 * sixty objects, and writing each as a loose object (a directory, a
 * temporary file, a link) costs more than all the rest on a slow file
 * system.
 *
 * A patch that does not apply is looked up in the base's history (bounded
 * by already_applied_depth, merges skipped): a commit touching one of its
 * paths whose patch-id (git_diff_patchid, renames detected) equals the
 * patch's, or whose subject equals the patch's subject.  Found, the patch
 * is skipped as already applied; else the series stops there.
 */
#include "apply/apply-private.h"

#include <git2/sys/odb_backend.h>
#include <string.h>

static void
patch_result_free(gpointer p)
{
	PgateApplyPatchResult *r = p;

	g_free(r->commit);
	g_free(r->tree);
	g_free(r->upstream);
	g_free(r->subject);
	g_free(r);
}

void
pgate_apply_result_free(PgateApplyResult *r)
{
	if (r == NULL)
		return;
	g_free(r->base);
	g_ptr_array_unref(r->commits);
	g_free(r->head);
	g_free(r->tree);
	g_ptr_array_unref(r->patches);
	g_free(r->failed_path);
	g_free(r->reason);
	g_free(r);
}

/* One input patch as read. */
typedef struct {
	PgateMailinfo *mi;      /* (nullable) NULL: mail unreadable */
	char *mi_error;         /* why */
	git_diff *diff;         /* (nullable) parsed diff */
	char *diff_error;
	gboolean oversized;     /* over max_patch_bytes: not parsed */
	GBytes *text;           /* (nullable) the diff text as given to
				 * libgit2: mi->diff, its headers normalized */
} Item;

static void
item_clear(gpointer p)
{
	Item *it = p;

	pgate_mailinfo_free(it->mi);
	g_free(it->mi_error);
	git_diff_free(it->diff);
	g_free(it->diff_error);
	if (it->text)
		g_bytes_unref(it->text);
}

static char *
oid_hex(const git_oid *oid)
{
	char buf[GIT_OID_HEXSZ + 1];

	git_oid_tostr(buf, sizeof buf, oid);
	return g_strdup(buf);
}

static void
set_failure(PgateApplyResult *r, guint index, const char *path, guint hunk,
	    const char *reason)
{
	r->failed_index = index;
	g_free(r->failed_path);
	r->failed_path = g_strdup(path);
	r->failed_hunk = hunk;
	g_free(r->reason);
	r->reason = g_strdup(reason);
}

static const char *
git_msg(void)
{
	const git_error *e = git_error_last();

	return e && e->message ? e->message : "libgit2 error";
}

/* Whether a libgit2 failure while applying is the patch's fault (it does
 * not apply, its data is corrupt, its paths or modes are refused) rather
 * than the repository's or the system's (an object that cannot be read or
 * written, no memory). */
static gboolean
is_patch_error(int rc)
{
	const git_error *e = git_error_last();

	if (rc == GIT_EAPPLYFAIL || rc == GIT_EINVALID || rc == GIT_EINVALIDSPEC)
		return TRUE;
	return e == NULL || !(e->klass == GIT_ERROR_OS ||
			      e->klass == GIT_ERROR_NOMEMORY ||
			      e->klass == GIT_ERROR_ODB ||
			      e->klass == GIT_ERROR_REPOSITORY ||
			      e->klass == GIT_ERROR_OBJECT);
}

/* ---- applying one patch ------------------------------------------------- */

/* Whether the patch names the new mode of delta @d (else git keeps the
 * old one): from the text, or else guessed from libgit2's modes (which
 * set both from an "index" line). */
static gboolean
mode_explicit(const git_diff_delta *d, GHashTable *explicit_modes)
{
	gpointer v;

	if (d->status == GIT_DELTA_ADDED)
		return TRUE;
	if (explicit_modes != NULL &&
	    g_hash_table_lookup_extended(explicit_modes, d->new_file.path,
					 NULL, &v))
		return GPOINTER_TO_INT(v);
	return d->old_file.mode && d->new_file.mode &&
	       d->old_file.mode != d->new_file.mode;
}

/* The tree made of @ups (upserts) on the empty tree */
static gboolean
small_tree(git_repository *repo, git_tree *empty, GArray *ups, git_tree **out,
	   GError **error)
{
	git_oid oid;
	int rc = git_tree_create_updated(&oid, repo, empty, ups->len,
					 (git_tree_update *)ups->data);

	if (rc == 0)
		rc = git_tree_lookup(out, repo, &oid);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, "build the patch's tree");
	return TRUE;
}

/* Steps 2 and 3, the common case: the small tree holding the paths the
 * diff names, as @tree has them, and one git_apply_to_tree(); appends to
 * @big_up the updates that graft its post-image onto @tree. */
static gboolean
post_at_once(git_repository *repo, git_tree *tree, git_tree *empty,
	     git_diff *diff, GHashTable *explicit_modes, GArray *big_up,
	     gboolean *patch_fault, GError **error)
{
	gsize n = git_diff_num_deltas(diff);
	g_autoptr(GPtrArray) paths = g_ptr_array_new();
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GArray) small_up = g_array_new(FALSE, TRUE, sizeof(git_tree_update));
	g_autoptr(GHashTable) old_modes = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) new_mode_of = g_hash_table_new(g_str_hash, g_str_equal);
	PGATE_GIT_AUTO(git_tree) small = NULL;
	PGATE_GIT_AUTO(git_index) post = NULL;
	int rc;

	/* the paths the diff reads and writes, each once */
	for (gsize i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *p[2] = {
			d->status == GIT_DELTA_ADDED ? NULL : d->old_file.path,
			d->status == GIT_DELTA_DELETED ? NULL : d->new_file.path,
		};

		for (int k = 0; k < 2; k++) {
			if (p[k] == NULL || g_hash_table_contains(seen, p[k]))
				continue;
			g_hash_table_add(seen, (gpointer)p[k]);
			g_ptr_array_add(paths, (gpointer)p[k]);
		}
		if (d->status != GIT_DELTA_DELETED)
			g_hash_table_insert(new_mode_of, (gpointer)d->new_file.path,
					    GSIZE_TO_POINTER(i + 1));
	}
	/* 2. the small tree: the entries at those paths */
	for (guint i = 0; i < paths->len; i++) {
		PGATE_GIT_AUTO(git_tree_entry) e = NULL;
		git_tree_update u = { 0 };

		if (git_tree_entry_bypath(&e, tree, paths->pdata[i]) != 0 ||
		    git_tree_entry_type(e) == GIT_OBJECT_TREE)
			continue;
		u.action = GIT_TREE_UPDATE_UPSERT;
		git_oid_cpy(&u.id, git_tree_entry_id(e));
		u.filemode = git_tree_entry_filemode(e);
		u.path = paths->pdata[i];
		g_array_append_val(small_up, u);
		g_hash_table_insert(old_modes, paths->pdata[i],
				    GUINT_TO_POINTER(u.filemode));
	}
	if (!small_tree(repo, empty, small_up, &small, error))
		return FALSE;
	/* 3. libgit2 applies the diff to it */
	rc = git_apply_to_tree(&post, repo, small, diff, NULL);
	if (rc != 0) {
		*patch_fault = is_patch_error(rc);
		return pgate_apply__git_error(error, rc, "apply");
	}
	/* 4. the post-image, to graft onto the full tree */
	for (guint i = 0; i < paths->len; i++) {
		const char *p = paths->pdata[i];
		const git_index_entry *ie = git_index_get_bypath(post, p, 0);
		git_tree_update u = { 0 };

		u.path = p;
		if (ie != NULL) {
			gsize di = GPOINTER_TO_SIZE(g_hash_table_lookup(new_mode_of, p));
			const git_diff_delta *d = di ? git_diff_get_delta(diff, di - 1)
						     : NULL;

			u.action = GIT_TREE_UPDATE_UPSERT;
			git_oid_cpy(&u.id, &ie->id);
			u.filemode = ie->mode;
			if (d != NULL && !mode_explicit(d, explicit_modes)) {
				/* the mode of the file it came from */
				gpointer m;

				if (g_hash_table_lookup_extended(old_modes,
						d->old_file.path, NULL, &m))
					u.filemode = GPOINTER_TO_UINT(m);
			}
		} else if (g_hash_table_contains(old_modes, p)) {
			u.action = GIT_TREE_UPDATE_REMOVE;
		} else {
			continue;
		}
		g_array_append_val(big_up, u);
	}
	return TRUE;
}

/* Whether the diff copies a path an earlier delta of it names.  git
 * copies from the preimage, the file as the tree has it; libgit2 from
 * what the earlier delta made of it (and it refuses to copy a path an
 * earlier delta renamed or deleted). */
static gboolean
copies_a_touched_path(git_diff *diff)
{
	g_autoptr(GHashTable) named = g_hash_table_new(g_str_hash, g_str_equal);

	for (gsize i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (d->status == GIT_DELTA_COPIED &&
		    g_hash_table_contains(named, d->old_file.path))
			return TRUE;
		if (d->status != GIT_DELTA_ADDED)
			g_hash_table_add(named, (gpointer)d->old_file.path);
		if (d->status != GIT_DELTA_DELETED)
			g_hash_table_add(named, (gpointer)d->new_file.path);
	}
	return FALSE;
}

/* What a path holds, for post_one_by_one() */
typedef struct {
	gboolean gone;       /* deleted or renamed away by a delta */
	git_oid id;
	guint32 mode;
} Slot;

typedef struct {
	gsize want, seen;
} OnlyDelta;

/* git_apply_options.delta_cb: apply delta number @want alone */
static int
only_delta_cb(const git_diff_delta *delta, void *payload)
{
	OnlyDelta *od = payload;

	return od->seen++ == od->want ? 0 : 1;
}

/* Appends to @big_up the updates grafting post_one_by_one()'s results onto
 * @tree: the removal of every path of @removed_order that @tree has and no
 * delta wrote, then the paths of @order as @written has them. */
static void
graft_updates(git_tree *tree, GPtrArray *removed_order, GPtrArray *order,
	      GHashTable *written, GArray *big_up)
{
	for (guint i = 0; i < removed_order->len; i++) {
		const char *p = removed_order->pdata[i];
		PGATE_GIT_AUTO(git_tree_entry) e = NULL;
		git_tree_update u = { 0 };

		if (g_hash_table_contains(written, p) ||
		    git_tree_entry_bypath(&e, tree, p) != 0)
			continue;
		u.action = GIT_TREE_UPDATE_REMOVE;
		u.path = p;
		g_array_append_val(big_up, u);
	}
	for (guint i = 0; i < order->len; i++) {
		const Slot *sl = g_hash_table_lookup(written, order->pdata[i]);
		git_tree_update u = { 0 };

		u.action = GIT_TREE_UPDATE_UPSERT;
		u.path = order->pdata[i];
		git_oid_cpy(&u.id, &sl->id);
		u.filemode = sl->mode;
		g_array_append_val(big_up, u);
	}
}

/* Steps 2 and 3 as git apply reads a patch, one delta at a time, each on
 * its own small tree holding its preimage: for a copy or a rename the
 * file as @tree has it, else what an earlier delta of the patch wrote to
 * the path (or, when none did, @tree's file).  Then, as git apply writes
 * its results, every old path of a deletion, a rename or a modification
 * is removed and every delta's new path written, the last delta to write
 * a path winning.  Appends the graft's updates to @big_up. */
static gboolean
post_one_by_one(git_repository *repo, git_tree *tree, git_tree *empty,
		git_diff *diff, GHashTable *explicit_modes, GArray *big_up,
		gboolean *patch_fault, GError **error)
{
	gsize n = git_diff_num_deltas(diff);
	/* path -> Slot: what later deltas read */
	g_autoptr(GHashTable) now = g_hash_table_new_full(g_str_hash,
		g_str_equal, NULL, g_free);
	/* path -> Slot: the last result written to it */
	g_autoptr(GHashTable) written = g_hash_table_new_full(g_str_hash,
		g_str_equal, NULL, g_free);
	g_autoptr(GPtrArray) order = g_ptr_array_new();
	g_autoptr(GHashTable) removed = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GPtrArray) removed_order = g_ptr_array_new();
	int rc;

	for (gsize i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *oldp = d->old_file.path, *newp = d->new_file.path;
		gboolean from_tree = d->status == GIT_DELTA_COPIED ||
				     d->status == GIT_DELTA_RENAMED;
		g_autoptr(GArray) up = g_array_new(FALSE, TRUE, sizeof(git_tree_update));
		PGATE_GIT_AUTO(git_tree) small = NULL;
		PGATE_GIT_AUTO(git_index) post = NULL;
		git_apply_options ao;
		OnlyDelta od = { i, 0 };
		gboolean has_pre = FALSE;
		guint32 pre_mode = 0;

		if (d->status != GIT_DELTA_ADDED) {
			Slot *sl = from_tree ? NULL : g_hash_table_lookup(now, oldp);
			git_tree_update u = { 0 };

			if (sl != NULL && sl->gone) {
				*patch_fault = TRUE;
				git_error_clear();
				g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_FAILED,
					    "%s: renamed or deleted by an "
					    "earlier part of the patch", oldp);
				return FALSE;
			}
			if (sl != NULL) {
				git_oid_cpy(&u.id, &sl->id);
				u.filemode = sl->mode;
				has_pre = TRUE;
			} else {
				PGATE_GIT_AUTO(git_tree_entry) e = NULL;

				if (git_tree_entry_bypath(&e, tree, oldp) == 0 &&
				    git_tree_entry_type(e) != GIT_OBJECT_TREE) {
					git_oid_cpy(&u.id, git_tree_entry_id(e));
					u.filemode = git_tree_entry_filemode(e);
					has_pre = TRUE;
				}
			}
			if (has_pre) {
				u.action = GIT_TREE_UPDATE_UPSERT;
				u.path = oldp;
				pre_mode = u.filemode;
				g_array_append_val(up, u);
			}
		}
		if (!small_tree(repo, empty, up, &small, error))
			return FALSE;
		git_apply_options_init(&ao, GIT_APPLY_OPTIONS_VERSION);
		ao.delta_cb = only_delta_cb;
		ao.payload = &od;
		rc = git_apply_to_tree(&post, repo, small, diff, &ao);
		if (rc != 0) {
			*patch_fault = is_patch_error(rc);
			return pgate_apply__git_error(error, rc, "apply");
		}
		if (d->status != GIT_DELTA_DELETED) {
			const git_index_entry *ie = git_index_get_bypath(post, newp, 0);
			Slot *sl;

			if (ie == NULL) {
				*patch_fault = TRUE;
				git_error_clear();
				g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_FAILED,
					    "%s: no result", newp);
				return FALSE;
			}
			sl = g_new0(Slot, 1);
			git_oid_cpy(&sl->id, &ie->id);
			sl->mode = has_pre && !mode_explicit(d, explicit_modes)
				   ? pre_mode : ie->mode;
			if (!g_hash_table_contains(written, newp))
				g_ptr_array_add(order, (gpointer)newp);
			g_hash_table_insert(written, (gpointer)newp,
					    g_memdup2(sl, sizeof *sl));
			g_hash_table_insert(now, (gpointer)newp, sl);
		}
		if (d->status != GIT_DELTA_ADDED && d->status != GIT_DELTA_COPIED &&
		    g_hash_table_add(removed, (gpointer)oldp))
			g_ptr_array_add(removed_order, (gpointer)oldp);
		if (d->status == GIT_DELTA_DELETED || d->status == GIT_DELTA_RENAMED) {
			Slot *gone = g_new0(Slot, 1);

			gone->gone = TRUE;
			/* a path written before keeps its result in
			 * @written: git writes it after the removals */
			g_hash_table_insert(now, (gpointer)oldp, gone);
		}
	}
	/* 4. the post-image, to graft onto the full tree */
	graft_updates(tree, removed_order, order, written, big_up);
	return TRUE;
}

/* Steps 2 to 4: @tree with @diff applied, into *@out.  FALSE with
 * *@patch_fault set when libgit2 refused the patch (message in @error). */
static gboolean
apply_diff(git_repository *repo, git_tree *tree, git_tree *empty,
	   git_diff *diff, GHashTable *explicit_modes, git_oid *out,
	   gboolean *patch_fault, GError **error)
{
	g_autoptr(GArray) big_up = g_array_new(FALSE, TRUE, sizeof(git_tree_update));
	g_autoptr(GArray) rm = g_array_new(FALSE, TRUE, sizeof(git_tree_update));
	g_autoptr(GArray) up = g_array_new(FALSE, TRUE, sizeof(git_tree_update));
	PGATE_GIT_AUTO(git_tree) mid = NULL;
	git_oid mid_oid;
	int rc;

	*patch_fault = FALSE;
	if (!(copies_a_touched_path(diff)
	      ? post_one_by_one(repo, tree, empty, diff, explicit_modes,
				big_up, patch_fault, error)
	      : post_at_once(repo, tree, empty, diff, explicit_modes, big_up,
			     patch_fault, error)))
		return FALSE;
	/* removals first, in a pass of their own when there are upserts too:
	 * git_tree_create_updated() refuses a file and a directory of the
	 * same name in one call (a file "a" replaced by "a/b", or the reverse) */
	for (guint i = 0; i < big_up->len; i++) {
		git_tree_update *u = &g_array_index(big_up, git_tree_update, i);

		g_array_append_val(u->action == GIT_TREE_UPDATE_REMOVE ? rm : up, *u);
	}
	if (rm->len && up->len) {
		rc = git_tree_create_updated(&mid_oid, repo, tree, rm->len,
					     (git_tree_update *)rm->data);
		if (rc == 0)
			rc = git_tree_lookup(&mid, repo, &mid_oid);
		if (rc == 0)
			rc = git_tree_create_updated(out, repo, mid, up->len,
						     (git_tree_update *)up->data);
	} else {
		rc = git_tree_create_updated(out, repo, tree, big_up->len,
					     (git_tree_update *)big_up->data);
	}
	if (rc != 0) {
		*patch_fault = is_patch_error(rc);
		return pgate_apply__git_error(error, rc, "update the tree");
	}
	return TRUE;
}

/* ---- the commit --------------------------------------------------------- */

static int
local_tz_minutes(gint64 t)
{
	g_autoptr(GDateTime) dt = g_date_time_new_from_unix_local(t);

	return dt ? (int)(g_date_time_get_utc_offset(dt) / G_TIME_SPAN_MINUTE) : 0;
}

/* git's fmt_ident(IDENT_STRICT) parts, then libgit2's signature */
static int
make_sig(git_signature **out, const char *name, const char *email,
	 gint64 when, int tz, char **reason)
{
	g_autofree char *n0 = pgate_apply__strip_crud(name);
	g_autofree char *e0 = pgate_apply__strip_crud(email);
	g_autofree char *n = pgate_apply__fix_utf8(n0, strlen(n0));
	g_autofree char *e = pgate_apply__fix_utf8(e0, strlen(e0));

	if (*n == '\0') {
		*reason = g_strdup_printf("name consists only of disallowed "
					  "characters: %s", name);
		return -1;
	}
	if (git_signature_new(out, n, e, when, tz) != 0) {
		*reason = g_strdup_printf("invalid identity: %s", git_msg());
		return -1;
	}
	return 0;
}

/* FALSE: *@reason (the patch's fault) or @error (the repository's) */
static gboolean
make_commit(git_repository *repo, const PgateMailinfo *mi, guint index,
	    const PgateApplyOptions *o, const git_oid *tree_oid,
	    git_commit *parent, git_oid *out, char **reason, GError **error)
{
	PGATE_GIT_AUTO(git_signature) author = NULL;
	PGATE_GIT_AUTO(git_signature) committer = NULL;
	PGATE_GIT_AUTO(git_tree) tree = NULL;
	const PgateApplyExtra *ex = o->extras && index < o->extras->len
		? o->extras->pdata[index] : NULL;
	g_autofree char *fixed = pgate_apply__fix_utf8(mi->message,
						       strlen(mi->message));
	/* b4 am's trailers (trailers.c) */
	g_autofree char *msg = pgate_apply_add_trailers(
		fixed, ex ? ex->trailers : NULL, ex ? ex->link : NULL,
		o->signoff);
	gint64 ctime = o->committer_time;
	int ctz = o->committer_tz;
	gint64 atime;
	int atz, rc;
	const git_commit *parents[1] = { parent };

	if (ctime < 0) {
		ctime = g_get_real_time() / G_USEC_PER_SEC;
		ctz = local_tz_minutes(ctime);
	}
	if (mi->date != NULL && *mi->date != '\0' && !mi->has_date) {
		*reason = g_strdup_printf("invalid date format: %s", mi->date);
		return FALSE;
	}
	/* git am: no Date: at all, the author date is now */
	atime = mi->has_date ? mi->author_time : ctime;
	atz = mi->has_date ? mi->author_tz : ctz;
	if (o->committer_date_is_author_date) {
		ctime = atime;
		ctz = atz;
	}
	if (make_sig(&author, mi->author_name, mi->author_email, atime, atz,
		     reason) != 0)
		return FALSE;
	if (make_sig(&committer,
		     o->committer_name ? o->committer_name : "patchgate",
		     o->committer_email ? o->committer_email : "patchgate@localhost",
		     ctime, ctz, reason) != 0)
		return FALSE;
	rc = git_tree_lookup(&tree, repo, tree_oid);
	if (rc == 0)
		rc = git_commit_create(out, repo, NULL, author, committer, NULL,
				       msg, tree, 1, parents);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, "write the commit");
	return TRUE;
}

/* ---- already applied ---------------------------------------------------- */

static gboolean
same_patch_id(git_repository *repo, git_tree *parent_tree, git_tree *tree,
	      const git_oid *want, git_diff_options *dopts, gboolean *touches)
{
	PGATE_GIT_AUTO(git_diff) d = NULL;
	git_diff_find_options fo;
	git_oid id;

	git_diff_find_options_init(&fo, GIT_DIFF_FIND_OPTIONS_VERSION);

	*touches = FALSE;
	if (git_diff_tree_to_tree(&d, repo, parent_tree, tree, dopts) != 0)
		return FALSE;
	if (git_diff_num_deltas(d) == 0)
		return FALSE;
	*touches = TRUE;
	if (want == NULL)
		return FALSE;
	fo.flags = GIT_DIFF_FIND_RENAMES;
	if (git_diff_find_similar(d, &fo) != 0)
		return FALSE;
	if (git_diff_patchid(&id, d, NULL) != 0)
		return FALSE;
	return git_oid_equal(&id, want);
}

/* The commit among the last @depth of @base's history that has this
 * patch's change already, or NULL. */
static char *
find_upstream(git_repository *repo, const git_oid *base, const char *text,
	      gsize len, const char *subject, guint depth)
{
	PGATE_GIT_AUTO(git_diff) diff = NULL;
	PGATE_GIT_AUTO(git_revwalk) walk = NULL;
	git_diff_options dopts;
	g_autoptr(GPtrArray) paths = g_ptr_array_new();
	git_oid want, oid;
	gboolean have_id;
	guint seen = 0;

	git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION);
	if (depth == 0 || git_diff_from_buffer(&diff, text, len) != 0)
		return NULL;
	have_id = git_diff_patchid(&want, diff, NULL) == 0;
	for (gsize i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (d->old_file.path)
			g_ptr_array_add(paths, (char *)d->old_file.path);
		if (d->new_file.path)
			g_ptr_array_add(paths, (char *)d->new_file.path);
	}
	if (paths->len == 0)
		return NULL;
	dopts.pathspec.strings = (char **)paths->pdata;
	dopts.pathspec.count = paths->len;
	dopts.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
	if (git_revwalk_new(&walk, repo) != 0 || git_revwalk_push(walk, base) != 0)
		return NULL;
	while (seen < depth && git_revwalk_next(&oid, walk) == 0) {
		PGATE_GIT_AUTO(git_commit) c = NULL;
		PGATE_GIT_AUTO(git_commit) p = NULL;
		PGATE_GIT_AUTO(git_tree) t = NULL;
		PGATE_GIT_AUTO(git_tree) pt = NULL;
		gboolean touches = FALSE, match;
		const char *summary;

		seen++;
		if (git_commit_lookup(&c, repo, &oid) != 0 ||
		    git_commit_parentcount(c) != 1 ||
		    git_commit_parent(&p, c, 0) != 0 ||
		    git_commit_tree(&t, c) != 0 || git_commit_tree(&pt, p) != 0)
			continue;
		match = same_patch_id(repo, pt, t, have_id ? &want : NULL,
				      &dopts, &touches);
		summary = git_commit_summary(c);
		if (!match && touches && subject && *subject && summary &&
		    strcmp(summary, subject) == 0)
			match = TRUE;
		if (match)
			return oid_hex(&oid);
	}
	return NULL;
}

/* ---- the series --------------------------------------------------------- */

/* The repository, and where the series has got to: the commit and tree
 * the next patch goes onto. */
typedef struct {
	git_repository *repo;
	git_odb *odb;
	git_odb_backend *mempack;  /* owned by odb: the new objects, until
				    * pgate_apply__memodb_flush() */
	git_oid base_oid;
	git_commit *head;
	git_tree *tree;
	git_tree *empty;           /* the empty tree (apply_diff) */
} Series;

static void
series_clear(Series *s)
{
	git_tree_free(s->empty);
	git_tree_free(s->tree);
	git_commit_free(s->head);
	git_odb_free(s->odb);
	git_repository_free(s->repo);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Series, series_clear)

/* The repository at @repo_path, every write going to memory first. */
static gboolean
series_open_repo(Series *s, const char *repo_path, GError **error)
{
	int rc = git_repository_open_ext(&s->repo, repo_path,
					 GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);

	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	/* every write goes to memory first (highest priority backend); the
	 * odb owns the backend from here on */
	rc = git_repository_odb(&s->odb, s->repo);
	if (rc == 0) {
		s->mempack = pgate_apply__memodb_new();
		rc = git_odb_add_backend(s->odb, s->mempack, 9999);
		if (rc != 0) {
			s->mempack->free(s->mempack);
			s->mempack = NULL;
		}
	}
	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	return TRUE;
}

/* The series starts on the commit @base names, and the empty tree. */
static gboolean
series_start(Series *s, const char *repo_path, const char *base,
	     GError **error)
{
	PGATE_GIT_AUTO(git_object) obj = NULL;
	git_treebuilder *bld = NULL;
	git_oid empty_oid;
	int rc = git_revparse_single(&obj, s->repo, base);

	if (rc == 0) {
		git_object *c = NULL;

		rc = git_object_peel(&c, obj, GIT_OBJECT_COMMIT);
		s->head = (git_commit *)c;
	}
	if (rc != 0) {
		g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_NOT_FOUND,
			    "%s: no commit %s: %s", repo_path, base, git_msg());
		return FALSE;
	}
	git_oid_cpy(&s->base_oid, git_commit_id(s->head));
	rc = git_commit_tree(&s->tree, s->head);
	if (rc == 0)
		rc = git_treebuilder_new(&bld, s->repo, NULL);
	if (rc == 0)
		rc = git_treebuilder_write(&empty_oid, bld);
	git_treebuilder_free(bld);
	if (rc == 0)
		rc = git_tree_lookup(&s->empty, s->repo, &empty_oid);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, repo_path);
	return TRUE;
}

/* The series moves on to the commit just made. */
static gboolean
series_advance(Series *s, const git_oid *commit_oid, const git_oid *tree_oid,
	       GError **error)
{
	PGATE_GIT_AUTO(git_tree) next = NULL;
	int rc;

	git_commit_free(s->head);
	s->head = NULL;
	rc = git_commit_lookup(&s->head, s->repo, commit_oid);
	if (rc == 0)
		rc = git_tree_lookup(&next, s->repo, tree_oid);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, "read the new commit");
	git_tree_free(s->tree);
	s->tree = g_steal_pointer(&next);
	return TRUE;
}

static void
read_item(Item *it, GBytes *raw, const PgateApplyOptions *o)
{
	g_autoptr(GError) err = NULL;
	gsize len;
	const char *text;

	it->mi = pgate_mailinfo_parse(raw, o->keep_cr, &err);
	if (it->mi == NULL) {
		it->mi_error = g_strdup(err->message);
		return;
	}
	text = g_bytes_get_data(it->mi->diff, &len);
	it->text = g_bytes_ref(it->mi->diff);
	if (len == 0) {
		it->diff_error = g_strdup("patch is empty (no diff in the mail)");
		return;
	}
	if (o->max_patch_bytes && len > o->max_patch_bytes) {
		it->oversized = TRUE;  /* the static check refuses it */
		return;
	}
	{
		GString *norm = pgate_apply__normalize_headers(text, len);

		if (norm != NULL) {
			g_bytes_unref(it->text);
			it->text = g_string_free_to_bytes(norm);
			text = g_bytes_get_data(it->text, &len);
		}
	}
	if (git_diff_from_buffer(&it->diff, text, len) != 0) {
		it->diff_error = g_strdup_printf("corrupt patch: %s", git_msg());
		return;
	}
	if (git_diff_num_deltas(it->diff) == 0) {
		it->diff_error = g_strdup("no valid patches in input");
		g_clear_pointer(&it->diff, git_diff_free);
	}
}

/* Every mail of @raws read (element-type Item), and a patch result for
 * each in @r. */
static GArray *
read_items(PgateApplyResult *r, GPtrArray *raws, const PgateApplyOptions *o)
{
	GArray *items = g_array_sized_new(FALSE, TRUE, sizeof(Item), raws->len);

	g_array_set_size(items, raws->len);
	g_array_set_clear_func(items, item_clear);
	for (guint i = 0; i < raws->len; i++) {
		Item *it = &g_array_index(items, Item, i);
		PgateApplyPatchResult *pr = g_new0(PgateApplyPatchResult, 1);

		read_item(it, raws->pdata[i], o);
		if (it->mi)
			pr->subject = g_strdup(it->mi->subject);
		g_ptr_array_add(r->patches, pr);
	}
	return items;
}

static PgateApplyResult *
result_new(const git_oid *base_oid)
{
	PgateApplyResult *r = g_new0(PgateApplyResult, 1);

	r->status = PGATE_APPLY_OK;
	r->base = oid_hex(base_oid);
	r->commits = g_ptr_array_new_with_free_func(g_free);
	r->patches = g_ptr_array_new_with_free_func(patch_result_free);
	return r;
}

static PgateApplyPatchResult *
patch_result(PgateApplyResult *r, guint i)
{
	return r->patches->pdata[i];
}

/* What became of a patch. */
typedef enum {
	PATCH_APPLIES,  /* it passed the tree checks: on with applying it */
	PATCH_NEXT,     /* applied, or skipped as already applied: on to the
			 * next patch */
	PATCH_STOP,     /* the series stops at it: the result says why */
	PATCH_ERROR,    /* the repository's or the system's fault: @error */
} PatchOutcome;

/* Patch @i (from 0) stops the series, @state being FAILED or REJECTED;
 * the series's status follows. */
static PatchOutcome
patch_stop(PgateApplyResult *r, guint i, PgateApplyPatchState state,
	   const char *path, guint hunk, const char *reason)
{
	patch_result(r, i)->state = state;
	r->status = state == PGATE_APPLY_PATCH_REJECTED ? PGATE_APPLY_REJECTED
							: PGATE_APPLY_FAILED;
	set_failure(r, i + 1, path, hunk, reason);
	return PATCH_STOP;
}

/* The static checks (precheck.c), of every patch before any is applied:
 * %FALSE when one is rejected, which stops the series.  A corrupt patch
 * fails when its turn comes. */
static gboolean
check_static_all(PgateApplyResult *r, GArray *items,
		 const PgateApplyOptions *o)
{
	for (guint i = 0; i < items->len; i++) {
		Item *it = &g_array_index(items, Item, i);
		PgateApplyCheck chk = { 0 };
		gsize len = 0;
		const char *text;
		gboolean ok;

		if (it->mi == NULL)
			continue;
		text = g_bytes_get_data(it->text, &len);
		if (it->oversized) {
			chk.rejected = TRUE;
			chk.reason = g_strdup_printf("patch of %" G_GSIZE_FORMAT
						     " bytes is over the limit of "
						     "%" G_GSIZE_FORMAT, len,
						     o->max_patch_bytes);
			ok = FALSE;
		} else {
			ok = pgate_apply__check_static(it->diff, text, len, o,
						       &chk);
		}
		if (!ok && chk.rejected) {
			patch_stop(r, i, PGATE_APPLY_PATCH_REJECTED,
				   chk.failed_path, chk.failed_hunk,
				   chk.reason);
			pgate_apply__check_clear(&chk);
			return FALSE;
		}
		if (!ok && it->diff != NULL) {
			/* a corrupt patch: it fails when its turn comes */
			it->diff_error = g_strdup(chk.reason);
			g_clear_pointer(&it->diff, git_diff_free);
		}
		pgate_apply__check_clear(&chk);
	}
	return TRUE;
}

/* Patch @i does not apply to the current tree (@chk says where and why):
 * rejected, skipped when the base's history has it already, or failed. */
static PatchOutcome
not_applicable(Series *s, const Item *it, guint i, const PgateApplyCheck *chk,
	       const PgateApplyOptions *o, PgateApplyResult *r)
{
	PgateApplyPatchResult *pr = patch_result(r, i);
	const char *text;
	gsize len;

	if (chk->rejected)
		return patch_stop(r, i, PGATE_APPLY_PATCH_REJECTED,
				  chk->failed_path, chk->failed_hunk,
				  chk->reason);
	text = g_bytes_get_data(it->text, &len);
	pr->upstream = find_upstream(s->repo, &s->base_oid, text, len,
				     it->mi->subject, o->already_applied_depth);
	if (pr->upstream == NULL)
		return patch_stop(r, i, PGATE_APPLY_PATCH_FAILED,
				  chk->failed_path, chk->failed_hunk,
				  chk->reason);
	pr->state = PGATE_APPLY_PATCH_ALREADY_APPLIED;
	if (r->status == PGATE_APPLY_OK) {
		r->status = PGATE_APPLY_ALREADY_APPLIED;
		set_failure(r, i + 1, chk->failed_path, chk->failed_hunk,
			    "already applied");
	}
	return PATCH_NEXT;
}

/* Step 1: the tree checks (precheck.c) of patch @i on the current tree.
 * PATCH_APPLIES with *@out_fixed the diff as precheck.c fixed it, or %NULL
 * to apply the item's own (transfer full). */
static PatchOutcome
check_on_tree(Series *s, const Item *it, guint i, const PgateApplyOptions *o,
	      PgateApplyResult *r, git_diff **out_fixed, GError **error)
{
	PgateApplyCheck chk = { 0 };
	PatchOutcome res = PATCH_APPLIES;
	const char *text;
	gsize len;

	*out_fixed = NULL;
	text = g_bytes_get_data(it->text, &len);
	if (!pgate_apply__check_tree(s->repo, s->tree, it->diff, text, len,
				     &chk, error)) {
		res = error && *error ? PATCH_ERROR
				      : not_applicable(s, it, i, &chk, o, r);
	} else if (chk.fixed != NULL &&
		   git_diff_from_buffer(out_fixed, chk.fixed->str,
					chk.fixed->len) != 0) {
		res = patch_stop(r, i, PGATE_APPLY_PATCH_FAILED, NULL, 0,
				 git_msg());
	}
	pgate_apply__check_clear(&chk);
	return res;
}

/* Why libgit2 refused a patch (its last error, else @local's message). */
static char *
refusal(const GError *local)
{
	const git_error *e = git_error_last();

	return g_strdup_printf("%s: %s",
			       e && e->klass == GIT_ERROR_ZLIB
			       ? "corrupt patch" : "patch does not apply",
			       e && e->message ? e->message : local->message);
}

/* Steps 2 to 5 for patch @i, which passed the tree checks (@diff as
 * they fixed it): its tree, its commit, and the series moved on to
 * them. */
static PatchOutcome
commit_patch(Series *s, const Item *it, guint i, git_diff *diff,
	     const PgateApplyOptions *o, PgateApplyResult *r, GError **error)
{
	PgateApplyPatchResult *pr = patch_result(r, i);
	g_autoptr(GError) local = NULL;
	g_autoptr(GHashTable) explicit_modes = NULL;
	g_autofree char *reason = NULL;
	git_oid tree_oid, commit_oid;
	const char *text;
	gsize len;
	gboolean fault;

	text = g_bytes_get_data(it->text, &len);
	explicit_modes = pgate_apply__explicit_modes(text, len);
	if (!apply_diff(s->repo, s->tree, s->empty, diff, explicit_modes,
			&tree_oid, &fault, &local)) {
		g_autofree char *why = NULL;

		if (!fault) {
			g_propagate_error(error, g_steal_pointer(&local));
			return PATCH_ERROR;
		}
		why = refusal(local);
		return patch_stop(r, i, PGATE_APPLY_PATCH_FAILED, NULL, 0, why);
	}
	if (!make_commit(s->repo, it->mi, i, o, &tree_oid, s->head, &commit_oid,
			 &reason, error)) {
		if (reason == NULL)
			return PATCH_ERROR;
		return patch_stop(r, i, PGATE_APPLY_PATCH_FAILED, NULL, 0,
				  reason);
	}
	if (!series_advance(s, &commit_oid, &tree_oid, error))
		return PATCH_ERROR;
	pr->state = PGATE_APPLY_PATCH_APPLIED;
	pr->commit = oid_hex(&commit_oid);
	pr->tree = oid_hex(&tree_oid);
	g_ptr_array_add(r->commits, g_strdup(pr->commit));
	g_free(r->head);
	r->head = g_strdup(pr->commit);
	return PATCH_NEXT;
}

/* Patch @i onto the series: steps 1 to 5. */
static PatchOutcome
apply_patch(Series *s, const Item *it, guint i, const PgateApplyOptions *o,
	    PgateApplyResult *r, GError **error)
{
	PGATE_GIT_AUTO(git_diff) fixed = NULL;
	PatchOutcome res;

	if (it->mi == NULL || it->diff == NULL)
		return patch_stop(r, i, PGATE_APPLY_PATCH_FAILED, NULL, 0,
				  it->mi ? it->diff_error : it->mi_error);
	res = check_on_tree(s, it, i, o, r, &fixed, error);
	if (res != PATCH_APPLIES)
		return res;
	return commit_patch(s, it, i, fixed ? fixed : it->diff, o, r, error);
}

/* Patch after patch, until one stops the series; %FALSE: @error. */
static gboolean
apply_patches(Series *s, GArray *items, const PgateApplyOptions *o,
	      PgateApplyResult *r, GError **error)
{
	for (guint i = 0; i < items->len; i++) {
		Item *it = &g_array_index(items, Item, i);
		PatchOutcome res = apply_patch(s, it, i, o, r, error);

		if (res == PATCH_ERROR)
			return FALSE;
		if (res == PATCH_STOP)
			break;
	}
	return TRUE;
}

PgateApplyResult *
pgate_apply_series(const char *repo_path, const char *base, GPtrArray *raws,
		   const PgateApplyOptions *opts, GError **error)
{
	static const PgateApplyOptions defaults = PGATE_APPLY_OPTIONS_INIT;
	const PgateApplyOptions *o = opts ? opts : &defaults;
	g_auto(Series) s = { 0 };
	g_autoptr(PgateApplyResult) r = NULL;
	g_autoptr(GArray) items = NULL;

	g_return_val_if_fail(repo_path != NULL && base != NULL && raws != NULL,
			     NULL);
	pgate_apply__git_init();
	if (!series_open_repo(&s, repo_path, error) ||
	    !series_start(&s, repo_path, base, error))
		return NULL;
	r = result_new(&s.base_oid);
	items = read_items(r, raws, o);
	if (check_static_all(r, items, o) &&
	    !apply_patches(&s, items, o, r, error))
		return NULL;
	r->tree = oid_hex(git_tree_id(s.tree));
	if (!pgate_apply__memodb_flush(s.mempack, s.odb, error))
		return NULL;
	return g_steal_pointer(&r);
}

char *
pgate_apply_find_base_commit(GPtrArray *raws)
{
	char *found = NULL;

	for (guint i = 0; i < raws->len; i++) {
		gsize len;
		const char *s = g_bytes_get_data(raws->pdata[i], &len);
		gsize pos = 0;

		while (s && pos < len) {
			const char *nl = memchr(s + pos, '\n', len - pos);
			gsize n = nl ? (gsize)(nl - (s + pos)) : len - pos;
			const char *line = s + pos;

			pos += n + 1;
			if (n >= 13 + 40 && strncmp(line, "base-commit: ", 13) == 0) {
				gsize hl = 0;

				while (13 + hl < n && g_ascii_isxdigit(line[13 + hl]))
					hl++;
				if (hl == 40 || hl == 64) {
					g_free(found);
					found = g_ascii_strdown(line + 13, hl);
				}
			}
		}
	}
	return found;
}
