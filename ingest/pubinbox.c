/* pubinbox.c - replaying public-inbox archives with libgit2.
 *
 * v2 (public-inbox-v2-format(5)): PATH/git/N.git are epochs, independent
 * bare repositories read in order of N.  Each commit's tree holds one file:
 * "m", a message, or "d", a message removed (spam, public-inbox-learn rm).
 * v1: PATH is one bare repository whose tree grows a blob per message at
 * sha1(Message-ID) split 2/38; a commit that removes a blob removes that
 * message.  Either way history is linear on the default branch.
 *
 * Resuming follows public-inbox's own V2Writable::log_range: the last
 * commit read is stored per epoch (meta key "replay:" + the epoch's real
 * path).  New commits are those after it; if it is no longer an ancestor
 * of the tip, history was rewritten, and reading restarts at the merge
 * base (messages read again are recognised as duplicates).
 *
 * Messages are stored by reference: raw_ref is "REPO\nBLOB-OID".
 */
#include "ingest/ingest-run.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_revwalk, git_revwalk_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
PGATE_DEFINE_AUTOPTR(git_blob, git_blob_free)
PGATE_DEFINE_AUTOPTR(git_diff, git_diff_free)
#define PG_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

/* Translates a libgit2 failure once, here at the boundary. */
static gboolean
set_git_error(GError **error, int rc, const char *what, const char *where)
{
	const git_error *e = git_error_last();

	g_set_error(error, PGATE_INGEST_ERROR,
		    rc == GIT_ENOTFOUND ? PGATE_ERROR_NOT_FOUND
					: PGATE_ERROR_FAILED,
		    "%s %s: %s", what, where,
		    e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

static void
git_init_once(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		git_libgit2_init();
		g_once_init_leave(&done, 1);
	}
}

typedef struct {
	PgateIngestRun *run;
	const PgateReplayOptions *ropts;
	PgateReplayStats *rstats;
	guint64 done;          /* commits processed, over all epochs */
	guint64 added;         /* messages added in this replay */
} Replay;

static gboolean
resolve_tip(git_repository *repo, git_oid *out)
{
	static const char *const names[] = {
		"HEAD", "refs/heads/master", "refs/heads/main",
	};

	for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
		if (git_reference_name_to_id(out, repo, names[i]) == 0)
			return TRUE;
	return FALSE;
}

static char *
resume_key(const char *repo_path)
{
	g_autofree char *real = realpath(repo_path, NULL);

	return g_strconcat("replay:", real ? real : repo_path, NULL);
}

/* The last commit read of this epoch, if any. */
static gboolean
load_resume(PgateStore *store, const char *key, git_oid *out, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GBytes) val = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *hex = NULL;

	if (txn == NULL)
		return FALSE;
	val = pgate_store_meta_get(txn, key, &local);
	if (val == NULL)
		return FALSE;
	hex = g_strndup(g_bytes_get_data(val, NULL), g_bytes_get_size(val));
	return git_oid_fromstr(out, hex) == 0;
}

/* Collects the commits to read, oldest first, into @oids. */
static gboolean
list_commits(git_repository *repo, const char *path, const git_oid *tip,
	     const git_oid *last, GArray *oids, PgateReplayStats *rstats,
	     GError **error)
{
	PG_AUTO(git_revwalk) walk = NULL;
	git_oid oid;
	int rc;

	if (last != NULL && git_oid_equal(tip, last))
		return TRUE;
	rc = git_revwalk_new(&walk, repo);
	if (rc == 0)
		rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL |
					 GIT_SORT_REVERSE);
	if (rc == 0)
		rc = git_revwalk_push(walk, tip);
	if (rc != 0)
		return set_git_error(error, rc, "walk", path);
	if (last != NULL) {
		git_commit *c = NULL;
		gboolean known = git_commit_lookup(&c, repo, last) == 0;

		git_commit_free(c);
		if (known && git_graph_descendant_of(repo, tip, last) == 1) {
			rc = git_revwalk_hide(walk, last);
		} else {
			git_oid base;
			char hex[GIT_OID_HEXSZ + 1];

			rstats->rewritten++;
			if (known && git_merge_base(&base, repo, tip, last) == 0) {
				git_oid_tostr(hex, sizeof hex, &base);
				g_warning("replay: %s: history was rewritten "
					  "since the last replay; reading again "
					  "from merge base %s", path, hex);
				rc = git_revwalk_hide(walk, &base);
			} else {
				g_warning("replay: %s: history was rewritten "
					  "and the last commit read is gone; "
					  "reading the whole epoch again", path);
			}
		}
		if (rc != 0)
			return set_git_error(error, rc, "walk", path);
	}
	while ((rc = git_revwalk_next(&oid, walk)) == 0)
		g_array_append_val(oids, oid);
	if (rc != GIT_ITEROVER)
		return set_git_error(error, rc, "walk", path);
	return TRUE;
}

static gboolean
read_blob(git_repository *repo, const git_oid *id, const char *path,
	  GBytes **out, GError **error)
{
	PG_AUTO(git_blob) blob = NULL;
	int rc = git_blob_lookup(&blob, repo, id);

	if (rc != 0)
		return set_git_error(error, rc, "read blob in", path);
	*out = g_bytes_new(git_blob_rawcontent(blob),
			   (gsize)git_blob_rawsize(blob));
	return TRUE;
}

static gboolean
add_blob(Replay *r, git_repository *repo, const char *path,
	 const git_oid *id, GError **error)
{
	g_autoptr(GBytes) raw = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	g_autofree char *ref = NULL;
	PgateIngestRawRef rr = { PGATE_RAW_GIT_BLOB, NULL };
	gsize max = r->run->opts.max_message_size;
	gboolean truncated;

	if (!read_blob(repo, id, path, &raw, error))
		return FALSE;
	truncated = g_bytes_get_size(raw) > max;
	if (truncated) {
		GBytes *head = g_bytes_new_from_bytes(raw, 0, max);

		g_bytes_unref(raw);
		raw = head;
	}
	git_oid_tostr(hex, sizeof hex, id);
	ref = g_strconcat(path, "\n", hex, NULL);
	rr.ref = ref;
	r->added++;
	return pgate_ingest__run_add(r->run, raw, truncated, r->done, &rr,
				     error);
}

static gboolean
delete_blob(Replay *r, git_repository *repo, const char *path,
	    const git_oid *id, GError **error)
{
	g_autoptr(GBytes) raw = NULL;

	if (!read_blob(repo, id, path, &raw, error))
		return FALSE;
	return pgate_ingest__run_delete(r->run, raw, error);
}

/* v2: the commit's tree is "m" or "d". */
static gboolean
read_v2_commit(Replay *r, git_repository *repo, const char *path,
	       git_commit *commit, GError **error)
{
	PG_AUTO(git_tree) tree = NULL;
	const git_tree_entry *e;
	int rc = git_commit_tree(&tree, commit);

	if (rc != 0)
		return set_git_error(error, rc, "read tree in", path);
	if ((e = git_tree_entry_byname(tree, "m")) != NULL &&
	    git_tree_entry_type(e) == GIT_OBJECT_BLOB)
		return add_blob(r, repo, path, git_tree_entry_id(e), error);
	if ((e = git_tree_entry_byname(tree, "d")) != NULL &&
	    git_tree_entry_type(e) == GIT_OBJECT_BLOB)
		return delete_blob(r, repo, path, git_tree_entry_id(e), error);
	return TRUE;	/* not a message commit: nothing to do */
}

/* v1: what the commit changed against its first parent. */
static gboolean
read_v1_commit(Replay *r, git_repository *repo, const char *path,
	       git_commit *commit, GError **error)
{
	PG_AUTO(git_tree) tree = NULL;
	PG_AUTO(git_tree) ptree = NULL;
	PG_AUTO(git_commit) parent = NULL;
	PG_AUTO(git_diff) diff = NULL;
	int rc = git_commit_tree(&tree, commit);

	if (rc == 0 && git_commit_parentcount(commit) > 0) {
		rc = git_commit_parent(&parent, commit, 0);
		if (rc == 0)
			rc = git_commit_tree(&ptree, parent);
	}
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, repo, ptree, tree, NULL);
	if (rc != 0)
		return set_git_error(error, rc, "diff in", path);
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		switch (d->status) {
		case GIT_DELTA_ADDED:
		case GIT_DELTA_MODIFIED:
			if (d->status == GIT_DELTA_MODIFIED &&
			    !delete_blob(r, repo, path, &d->old_file.id, error))
				return FALSE;
			if (!add_blob(r, repo, path, &d->new_file.id, error))
				return FALSE;
			break;
		case GIT_DELTA_DELETED:
			if (!delete_blob(r, repo, path, &d->old_file.id, error))
				return FALSE;
			break;
		default:
			break;
		}
	}
	return TRUE;
}

/* A v2 epoch has "m" or "d" at the top of its tree; a v1 inbox has
 * two-hex-digit directories. */
static gboolean
is_v1(git_repository *repo, const git_oid *tip)
{
	PG_AUTO(git_commit) c = NULL;
	PG_AUTO(git_tree) t = NULL;

	if (git_commit_lookup(&c, repo, tip) != 0 ||
	    git_commit_tree(&t, c) != 0)
		return FALSE;
	return git_tree_entry_byname(t, "m") == NULL &&
	       git_tree_entry_byname(t, "d") == NULL;
}

static gboolean
replay_repo(Replay *r, const char *path, GError **error)
{
	PG_AUTO(git_repository) repo = NULL;
	g_autoptr(GArray) oids = g_array_new(FALSE, FALSE, sizeof(git_oid));
	g_autofree char *key = resume_key(path);
	git_oid tip, last;
	gboolean have_last, v1;
	int rc;

	rc = git_repository_open_bare(&repo, path);
	if (rc != 0)
		return set_git_error(error, rc, "open", path);
	r->rstats->epochs++;
	if (!resolve_tip(repo, &tip))
		return TRUE;	/* an empty epoch: nothing yet */
	have_last = load_resume(r->run->store, key, &last, error);
	if (!have_last && error && *error)
		return FALSE;
	if (!list_commits(repo, path, &tip, have_last ? &last : NULL, oids,
			  r->rstats, error))
		return FALSE;
	v1 = is_v1(repo, &tip);
	r->run->total += oids->len;

	for (guint i = 0; i < oids->len; i++) {
		const git_oid *id = &g_array_index(oids, git_oid, i);
		PG_AUTO(git_commit) commit = NULL;
		char hex[GIT_OID_HEXSZ + 1];
		gboolean ok;

		if (r->ropts->limit > 0 && r->added >= r->ropts->limit) {
			r->rstats->limited = TRUE;
			break;
		}
		rc = git_commit_lookup(&commit, repo, id);
		if (rc != 0)
			return set_git_error(error, rc, "read commit in", path);
		r->rstats->commits++;
		r->done++;
		/* the resume point goes into the transaction that stores
		 * this commit's message */
		git_oid_tostr(hex, sizeof hex, id);
		pgate_ingest__run_set_resume(r->run, key, hex);
		if (r->ropts->since > 0 &&
		    git_commit_time(commit) < r->ropts->since) {
			r->rstats->skipped++;
			continue;
		}
		ok = v1 ? read_v1_commit(r, repo, path, commit, error)
			: read_v2_commit(r, repo, path, commit, error);
		if (!ok)
			return FALSE;
	}
	return pgate_ingest__run_flush(r->run, error);
}

static gint
compare_epochs(gconstpointer a, gconstpointer b)
{
	guint64 x = g_ascii_strtoull(*(char *const *)a, NULL, 10);
	guint64 y = g_ascii_strtoull(*(char *const *)b, NULL, 10);

	return x < y ? -1 : x > y;
}

/* PATH/git/N.git, in order of N. */
static GPtrArray *
list_epochs(const char *path, GError **error)
{
	g_autofree char *gitdir = g_build_filename(path, "git", NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *out;
	g_autoptr(GDir) d = g_dir_open(gitdir, 0, NULL);
	const char *n;

	if (d == NULL)
		return NULL;
	while ((n = g_dir_read_name(d)) != NULL) {
		const char *p = n;

		while (g_ascii_isdigit(*p))
			p++;
		if (p != n && strcmp(p, ".git") == 0)
			g_ptr_array_add(names, g_strdup(n));
	}
	g_ptr_array_sort(names, compare_epochs);
	out = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < names->len; i++)
		g_ptr_array_add(out, g_build_filename(
			gitdir, (char *)g_ptr_array_index(names, i), NULL));
	(void)error;
	return out;
}

gboolean
pgate_ingest_replay(PgateStore *store, const char *path,
		    const PgateIngestOptions *opts,
		    const PgateReplayOptions *ropts, PgateIngestStats *stats,
		    PgateReplayStats *rstats, PgateIngestProgressFunc progress,
		    gpointer payload, GError **error)
{
	PgateIngestRun run;
	Replay r = { &run, ropts, rstats, 0, 0 };
	g_autoptr(GPtrArray) epochs = NULL;
	g_autofree char *head = g_build_filename(path, "HEAD", NULL);
	gboolean ok = TRUE;

	git_init_once();
	epochs = list_epochs(path, error);
	if (epochs == NULL || epochs->len == 0) {
		if (!g_file_test(head, G_FILE_TEST_EXISTS)) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    PGATE_ERROR_INVALID,
				    "%s is not a public-inbox archive (no "
				    "git/N.git epochs, and not a git "
				    "repository)", path);
			return FALSE;
		}
		g_clear_pointer(&epochs, g_ptr_array_unref);
		epochs = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(epochs, g_strdup(path));
	}
	pgate_ingest__run_init(&run, store, opts, stats, progress, payload);
	for (guint i = 0; ok && i < epochs->len && !rstats->limited; i++) {
		const char *epoch = g_ptr_array_index(epochs, i);

		g_free(run.source);
		run.source = g_strconcat("public-inbox:", epoch, NULL);
		ok = replay_repo(&r, epoch, error);
	}
	if (ok && progress != NULL)
		progress(stats, r.done, run.total, payload);
	pgate_ingest__run_clear(&run);
	return ok;
}

/* ---- reading a message back ---- */

static GBytes *
load_git_blob(const char *ref, GError **error)
{
	const char *nl = strchr(ref, '\n');
	g_autofree char *repo_path = NULL;
	PG_AUTO(git_repository) repo = NULL;
	git_oid id;
	GBytes *out = NULL;
	int rc;

	if (nl == NULL || git_oid_fromstr(&id, nl + 1) != 0) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_FAILED,
			    "bad git blob reference");
		return NULL;
	}
	git_init_once();
	repo_path = g_strndup(ref, (gsize)(nl - ref));
	rc = git_repository_open_bare(&repo, repo_path);
	if (rc != 0)
		return set_git_error(error, rc, "open", repo_path), NULL;
	if (!read_blob(repo, &id, repo_path, &out, error))
		return NULL;
	return out;
}

GBytes *
pgate_ingest_load_raw(PgateStoreTxn *txn, const PgateMessageRec *rec,
		      gsize max, GError **error)
{
	switch (rec->raw_location) {
	case PGATE_RAW_INLINE:
		return pgate_store_message_raw(txn, rec->num, error);
	case PGATE_RAW_FILE: {
		g_autoptr(GError) local = NULL;
		int fd = open(rec->raw_ref, O_RDONLY | O_CLOEXEC);
		gboolean over;
		GBytes *b;

		if (fd < 0) {
			g_set_error(error, PGATE_INGEST_ERROR,
				    pgate_error_errno_code(errno),
				    "raw message %s: %s", rec->raw_ref,
				    g_strerror(errno));
			return NULL;
		}
		b = pgate_fd_read_bounded(fd, max, &over, PGATE_INGEST_ERROR,
					  error);
		close(fd);
		return b;
	}
	case PGATE_RAW_GIT_BLOB:
		return load_git_blob(rec->raw_ref, error);
	}
	g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_FAILED,
		    "unknown raw location %d", (int)rec->raw_location);
	return NULL;
}
