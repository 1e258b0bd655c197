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
 * path).  New commits are those after it.
 *
 * If it is no longer an ancestor of the tip, history was rewritten
 * (public-inbox-purge, -edit): public-inbox un-indexes merge-base..old tip
 * and re-reads from the merge base.  Here the old commits are usually gone
 * (public-inbox-purge prunes them; a re-cloned mirror never had them), so
 * instead the live messages of the new history are listed (v2: the "m"
 * blobs not removed by a later "d"; v1: the blobs of the tip's tree), every
 * stored message that refers to a blob of this epoch not among them is
 * deleted, and reading restarts at the merge base (or at the root when there
 * is none) adding only live blobs not stored yet.  Blobs are the identity:
 * a purge or an edit rewrites the commits but keeps every other blob.
 *
 * Messages are stored by reference: raw_ref is "REPO\nBLOB-OID", REPO the
 * epoch's absolute real path (it must not depend on the working directory
 * of the replay).  Empty "m" blobs (what public-inbox-purge leaves in place
 * of a purged message) are not messages and are skipped.
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
		/* every object is read once: caching them only costs memory */
		git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
		g_once_init_leave(&done, 1);
	}
}

typedef struct {
	PgateIngestRun *run;
	const PgateReplayOptions *ropts;
	PgateReplayStats *rstats;
	guint64 done;          /* commits processed, over all epochs */
	guint64 added;         /* messages added in this replay */
	/* (nullable): reading an epoch whose history was rewritten: blob
	 * OID -> LIVE or STORED, the only blobs that may be added */
	GHashTable *live;
} Replay;

enum { BLOB_LIVE = 1, BLOB_STORED = 2 };

static guint
oid_hash(gconstpointer p)
{
	guint h;

	memcpy(&h, ((const git_oid *)p)->id, sizeof h);
	return h;
}

static gboolean
oid_equal(gconstpointer a, gconstpointer b)
{
	return git_oid_equal(a, b);
}

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

/* Collects the commits to read, oldest first, into @oids; *@rewritten is
 * set when @last is no longer an ancestor of @tip, and then *@has_base
 * when the merge base @base (where @oids start) was found. */
static gboolean
list_commits(git_repository *repo, const char *path, const git_oid *tip,
	     const git_oid *last, GArray *oids, gboolean *rewritten,
	     git_oid *base, gboolean *has_base, GError **error)
{
	PG_AUTO(git_revwalk) walk = NULL;
	git_oid oid;
	int rc;

	*rewritten = *has_base = FALSE;
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
			char hex[GIT_OID_HEXSZ + 1];

			*rewritten = TRUE;
			if (known && git_merge_base(base, repo, tip, last) == 0) {
				*has_base = TRUE;
				git_oid_tostr(hex, sizeof hex, base);
				g_warning("replay: %s: history was rewritten "
					  "since the last replay; reading again "
					  "from merge base %s", path, hex);
				rc = git_revwalk_hide(walk, base);
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

/* After a rewrite: what the new history holds. */
typedef struct {
	GHashTable *live;   /* blob OID -> BLOB_LIVE, or BLOB_STORED */
	/* live blobs that reading from the merge base does not meet, oldest
	 * first: stored unless a "d" (or a v1 removal) the rewrite dropped
	 * deleted them */
	GArray *older;      /* of OlderBlob */
} Live;

typedef struct {
	git_oid blob;
	gint64 time;        /* of its commit, for --since; G_MAXINT64: none */
} OlderBlob;

static void
live_clear(Live *l)
{
	g_clear_pointer(&l->live, g_hash_table_unref);
	g_clear_pointer(&l->older, g_array_unref);
}

static void
live_add(Live *l, const git_oid *blob)
{
	g_hash_table_insert(l->live, g_memdup2(blob, sizeof *blob),
			    GINT_TO_POINTER(BLOB_LIVE));
}

/* v2: the "m" blobs of the history up to @tip that no later "d" removed
 * (public-inbox honours a "d" only after the matching "m").  Those of
 * commits not in @read go to l->older. */
static gboolean
live_v2(git_repository *repo, const char *path, const git_oid *tip,
	GHashTable *read, Live *l, GError **error)
{
	PG_AUTO(git_revwalk) walk = NULL;
	git_oid oid, empty;
	int rc;

	git_oid_fromstr(&empty, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	rc = git_revwalk_new(&walk, repo);
	if (rc == 0)
		rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL |
					 GIT_SORT_REVERSE);
	if (rc == 0)
		rc = git_revwalk_push(walk, tip);
	if (rc != 0)
		return set_git_error(error, rc, "walk", path);
	while ((rc = git_revwalk_next(&oid, walk)) == 0) {
		PG_AUTO(git_commit) commit = NULL;
		PG_AUTO(git_tree) tree = NULL;
		const git_tree_entry *e;

		rc = git_commit_lookup(&commit, repo, &oid);
		if (rc == 0)
			rc = git_commit_tree(&tree, commit);
		if (rc != 0)
			return set_git_error(error, rc, "read tree in", path);
		if ((e = git_tree_entry_byname(tree, "m")) != NULL &&
		    git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
			if (git_oid_equal(git_tree_entry_id(e), &empty))
				continue;	/* purged */
			live_add(l, git_tree_entry_id(e));
			if (!g_hash_table_contains(read, &oid)) {
				OlderBlob o = { *git_tree_entry_id(e),
						git_commit_time(commit) };

				g_array_append_val(l->older, o);
			}
		} else if ((e = git_tree_entry_byname(tree, "d")) != NULL &&
			   git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
			g_hash_table_remove(l->live, git_tree_entry_id(e));
		}
	}
	if (rc != GIT_ITEROVER)
		return set_git_error(error, rc, "walk", path);
	return TRUE;
}

static int
tree_blob_live(const char *root, const git_tree_entry *e, void *payload)
{
	if (git_tree_entry_type(e) == GIT_OBJECT_BLOB)
		live_add(payload, git_tree_entry_id(e));
	return 0;
}

static int
tree_blob_older(const char *root, const git_tree_entry *e, void *payload)
{
	Live *l = payload;

	if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
		OlderBlob o = { *git_tree_entry_id(e), G_MAXINT64 };

		g_array_append_val(l->older, o);
	}
	return 0;
}

static gboolean
walk_tree_of(git_repository *repo, const char *path, const git_oid *id,
	     git_treewalk_cb cb, void *payload, GError **error)
{
	PG_AUTO(git_commit) commit = NULL;
	PG_AUTO(git_tree) tree = NULL;
	int rc = git_commit_lookup(&commit, repo, id);

	if (rc == 0)
		rc = git_commit_tree(&tree, commit);
	if (rc == 0)
		rc = git_tree_walk(tree, GIT_TREEWALK_PRE, cb, payload);
	if (rc != 0)
		return set_git_error(error, rc, "read tree in", path);
	return TRUE;
}

/* v1: the blobs of the tip's tree are live; those of the merge base's
 * tree are what reading from there does not add. */
static gboolean
live_v1(git_repository *repo, const char *path, const git_oid *tip,
	const git_oid *base, Live *l, GError **error)
{
	return walk_tree_of(repo, path, tip, tree_blob_live, l, error) &&
	       (base == NULL ||
		walk_tree_of(repo, path, base, tree_blob_older, l, error));
}

typedef struct {
	const char *prefix;    /* "REPO\n" */
	GHashTable *live;
	PgateIngestHookRun hooks;
	guint64 deleted;
} Prune;

/* Deletes the stored messages that refer to a blob of this epoch that is
 * no longer live, and marks the live ones stored; runs the ingest hooks
 * as a batch of deletions would (after_delete gets the record deleted). */
static gboolean
prune_stale(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Prune *p = payload;
	PgateStoreMessageIter it;
	PgateMessageRec *r;
	g_autoptr(GError) local = NULL;
	g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_message_rec_free);
	gsize plen = strlen(p->prefix);

	p->deleted = 0;	/* this runs again after the map grew */
	if (!pgate_ingest__hook_begin(&p->hooks, txn, error))
		return FALSE;
	pgate_store_message_iter_init(&it, txn);
	/* (a record that does not decode says not where its message came
	 * from: it is kept) */
	while (pgate_store_message_iter_next_readable(&it, &r, NULL, NULL,
						      &local)) {
		git_oid id;
		gpointer key;

		if (r->raw_location != PGATE_RAW_GIT_BLOB ||
		    r->raw_ref == NULL ||
		    strncmp(r->raw_ref, p->prefix, plen) != 0 ||
		    git_oid_fromstr(&id, r->raw_ref + plen) != 0) {
			pgate_message_rec_free(r);
			continue;
		}
		if (g_hash_table_lookup_extended(p->live, &id, &key, NULL)) {
			g_hash_table_insert(p->live, g_memdup2(&id, sizeof id),
					    GINT_TO_POINTER(BLOB_STORED));
			pgate_message_rec_free(r);
		} else {
			g_ptr_array_add(gone, r);
		}
	}
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	for (guint i = 0; i < gone->len; i++) {
		const PgateMessageRec *rec = g_ptr_array_index(gone, i);

		if (pgate_store_message_delete(txn, rec->msgid,
					       rec->content_hash, NULL,
					       &local)) {
			p->deleted++;
			if (!pgate_ingest__hook_deleted(&p->hooks, txn, rec,
							error))
				return FALSE;
		} else if (g_error_matches(local, PGATE_STORE_ERROR,
					   PGATE_ERROR_NOT_FOUND)) {
			g_clear_error(&local);
		} else {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	return pgate_ingest__hook_commit(&p->hooks, txn, error);
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

/* Stores message @raw, blob @id of @path, by reference. */
static gboolean
add_raw(Replay *r, const char *path, const git_oid *id, GBytes *raw,
	GError **error)
{
	g_autoptr(GBytes) head = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	g_autofree char *ref = NULL;
	PgateIngestRawRef rr = { PGATE_RAW_GIT_BLOB, NULL };
	gsize max = r->run->opts.max_message_size;
	gboolean truncated = g_bytes_get_size(raw) > max;

	if (g_bytes_get_size(raw) == 0)
		return TRUE;	/* what public-inbox-purge leaves */
	if (truncated)
		raw = head = g_bytes_new_from_bytes(raw, 0, max);
	git_oid_tostr(hex, sizeof hex, id);
	ref = g_strconcat(path, "\n", hex, NULL);
	rr.ref = ref;
	r->added++;
	return pgate_ingest__run_add(r->run, raw, truncated, r->done, &rr,
				     error);
}

static gboolean
add_blob(Replay *r, git_repository *repo, const char *path,
	 const git_oid *id, GError **error)
{
	g_autoptr(GBytes) raw = NULL;

	if (r->live != NULL) {
		gpointer state = g_hash_table_lookup(r->live, id);

		/* stored already, or removed by a later "d" */
		if (GPOINTER_TO_INT(state) != BLOB_LIVE)
			return TRUE;
		g_hash_table_insert(r->live, g_memdup2(id, sizeof *id),
				    GINT_TO_POINTER(BLOB_STORED));
	}
	if (!read_blob(repo, id, path, &raw, error))
		return FALSE;
	return add_raw(r, path, id, raw, error);
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

/* ---- v2: reading ahead ----
 *
 * Reading a message from a pack (inflating it, resolving its delta chain,
 * with the commit and the tree) costs about 50 us of CPU, a third of what
 * parsing it does, and what an mbox import does not pay; parsing runs on
 * several threads only when a batch is written.  So a v2 epoch is read by
 * a thread of its own, with its own repository handle, a bounded number of
 * commits ahead, while this one parses and stores: what it hands over is,
 * per commit in order, the commit time and the "m" or "d" blob. */

typedef struct {
	gint64 time;        /* of the commit */
	char kind;          /* 'm', 'd', or 0: neither */
	git_oid blob;
	GBytes *raw;        /* NULL when kind is 0 or the commit is before
			     * --since */
} Ahead;

static void
ahead_free(Ahead *a)
{
	g_clear_pointer(&a->raw, g_bytes_unref);
	g_free(a);
}

#define AHEAD_MAX_ITEMS 4096
#define AHEAD_MAX_BYTES (32u << 20)

typedef struct {
	GMutex lock;
	GCond cond;
	GQueue queue;        /* of Ahead */
	gsize bytes;         /* of the queued blobs */
	gboolean stop;       /* set by the reader's consumer: give up */
	gboolean done;       /* set by the reader: nothing more comes */
	GError *error;       /* why the reader stopped early */
	const char *path;
	const GArray *oids;
	gint64 since;
	GThread *thread;
} Reader;

static gpointer
reader_main(gpointer data)
{
	Reader *rd = data;
	PG_AUTO(git_repository) repo = NULL;
	GError *error = NULL;
	int rc = git_repository_open_bare(&repo, rd->path);

	if (rc != 0)
		set_git_error(&error, rc, "open", rd->path);
	for (guint i = 0; error == NULL && i < rd->oids->len; i++) {
		PG_AUTO(git_commit) commit = NULL;
		PG_AUTO(git_tree) tree = NULL;
		const git_tree_entry *e = NULL;
		Ahead *a = g_new0(Ahead, 1);
		gsize size;

		rc = git_commit_lookup(&commit, repo,
				       &g_array_index(rd->oids, git_oid, i));
		if (rc == 0)
			rc = git_commit_tree(&tree, commit);
		if (rc != 0) {
			set_git_error(&error, rc, "read commit in", rd->path);
			ahead_free(a);
			break;
		}
		a->time = git_commit_time(commit);
		if ((e = git_tree_entry_byname(tree, "m")) != NULL &&
		    git_tree_entry_type(e) == GIT_OBJECT_BLOB)
			a->kind = 'm';
		else if ((e = git_tree_entry_byname(tree, "d")) != NULL &&
			 git_tree_entry_type(e) == GIT_OBJECT_BLOB)
			a->kind = 'd';
		if (a->kind != 0) {
			a->blob = *git_tree_entry_id(e);
			if ((rd->since == 0 || a->time >= rd->since) &&
			    !read_blob(repo, &a->blob, rd->path, &a->raw,
				       &error)) {
				ahead_free(a);
				break;
			}
		}
		size = a->raw != NULL ? g_bytes_get_size(a->raw) : 0;
		g_mutex_lock(&rd->lock);
		while (!rd->stop && (rd->queue.length >= AHEAD_MAX_ITEMS ||
				     rd->bytes >= AHEAD_MAX_BYTES))
			g_cond_wait(&rd->cond, &rd->lock);
		if (rd->stop) {
			g_mutex_unlock(&rd->lock);
			ahead_free(a);
			break;
		}
		g_queue_push_tail(&rd->queue, a);
		rd->bytes += size;
		g_cond_broadcast(&rd->cond);
		g_mutex_unlock(&rd->lock);
	}
	g_mutex_lock(&rd->lock);
	rd->error = error;
	rd->done = TRUE;
	g_cond_broadcast(&rd->cond);
	g_mutex_unlock(&rd->lock);
	return NULL;
}

static gboolean
reader_start(Reader *rd, const char *path, const GArray *oids, gint64 since)
{
	memset(rd, 0, sizeof *rd);
	g_mutex_init(&rd->lock);
	g_cond_init(&rd->cond);
	g_queue_init(&rd->queue);
	rd->path = path;
	rd->oids = oids;
	rd->since = since;
	rd->thread = g_thread_try_new("pgate-git", reader_main, rd, NULL);
	if (rd->thread == NULL) {
		g_mutex_clear(&rd->lock);
		g_cond_clear(&rd->cond);
		return FALSE;
	}
	return TRUE;
}

/* The next commit's, in order; %NULL with @error set when the reader
 * failed (it never ends early otherwise). */
static Ahead *
reader_next(Reader *rd, GError **error)
{
	Ahead *a;

	g_mutex_lock(&rd->lock);
	while (rd->queue.length == 0 && !rd->done)
		g_cond_wait(&rd->cond, &rd->lock);
	a = g_queue_pop_head(&rd->queue);
	if (a != NULL) {
		rd->bytes -= a->raw != NULL ? g_bytes_get_size(a->raw) : 0;
		g_cond_broadcast(&rd->cond);
	} else if (rd->error != NULL) {
		g_propagate_error(error, g_steal_pointer(&rd->error));
	} else {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_FAILED,
			    "%s: the reader ended early", rd->path);
	}
	g_mutex_unlock(&rd->lock);
	return a;
}

static void
reader_finish(Reader *rd)
{
	g_mutex_lock(&rd->lock);
	rd->stop = TRUE;
	g_cond_broadcast(&rd->cond);
	g_mutex_unlock(&rd->lock);
	g_thread_join(rd->thread);
	g_queue_clear_full(&rd->queue, (GDestroyNotify)ahead_free);
	g_clear_error(&rd->error);
	g_mutex_clear(&rd->lock);
	g_cond_clear(&rd->cond);
}

/* After a rewrite: deletes what the new history no longer holds, then
 * adds the live messages that reading from the merge base does not meet
 * (those a dropped "d" had deleted).  Returns FALSE on error only; sets
 * rstats->limited when --limit stopped it. */
static gboolean
rewrite_prepare(Replay *r, git_repository *repo, const char *path,
		const git_oid *tip, const git_oid *base, gboolean v1,
		GArray *oids, Live *l, GError **error)
{
	g_autofree char *prefix = g_strconcat(path, "\n", NULL);
	Prune p = { prefix, NULL, { NULL, FALSE, NULL }, 0 };
	gboolean ok;
	g_autoptr(GHashTable) read = NULL;

	r->rstats->rewritten++;
	l->live = g_hash_table_new_full(oid_hash, oid_equal, g_free, NULL);
	l->older = g_array_new(FALSE, FALSE, sizeof(OlderBlob));
	if (v1) {
		if (!live_v1(repo, path, tip, base, l, error))
			return FALSE;
	} else {
		read = g_hash_table_new(oid_hash, oid_equal);
		for (guint i = 0; i < oids->len; i++)
			g_hash_table_add(read, &g_array_index(oids, git_oid, i));
		if (!live_v2(repo, path, tip, read, l, error))
			return FALSE;
	}
	p.live = l->live;
	pgate_ingest__hooks_init(&p.hooks, r->run->opts.hooks);
	ok = pgate_ingest__hooked_write(r->run->store, prune_stale, &p,
					&p.hooks, error);
	pgate_ingest__hooks_clear(&p.hooks);
	if (!ok)
		return FALSE;
	r->run->stats->deleted += p.deleted;
	if (p.deleted > 0)
		g_warning("replay: %s: deleted %" G_GUINT64_FORMAT " stored "
			  "message(s) that the rewritten history no longer "
			  "holds", path, p.deleted);
	r->live = l->live;
	for (guint i = 0; i < l->older->len; i++) {
		const OlderBlob *o = &g_array_index(l->older, OlderBlob, i);

		if (GPOINTER_TO_INT(g_hash_table_lookup(l->live, &o->blob)) !=
		    BLOB_LIVE ||
		    (r->ropts->since > 0 && o->time < r->ropts->since))
			continue;
		if (r->ropts->limit > 0 && r->added >= r->ropts->limit) {
			r->rstats->limited = TRUE;
			break;
		}
		if (!add_blob(r, repo, path, &o->blob, error))
			return FALSE;
	}
	return TRUE;
}

static gboolean
replay_repo(Replay *r, const char *epoch, GError **error)
{
	PG_AUTO(git_repository) repo = NULL;
	g_autoptr(GArray) oids = g_array_new(FALSE, FALSE, sizeof(git_oid));
	g_autofree char *path = realpath(epoch, NULL);
	g_autofree char *key = NULL;
	Live l = { NULL, NULL };
	Reader rd;
	git_oid tip, last, base;
	gboolean have_last, v1, rewritten, has_base, prefetch, ok = TRUE;
	int rc;

	if (path == NULL) {
		g_set_error(error, PGATE_INGEST_ERROR,
			    pgate_error_errno_code(errno), "%s: %s", epoch,
			    g_strerror(errno));
		return FALSE;
	}
	key = g_strconcat("replay:", path, NULL);
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
			  &rewritten, &base, &has_base, error))
		return FALSE;
	v1 = is_v1(repo, &tip);
	r->run->total += oids->len;
	g_free(r->run->source);
	r->run->source = g_strconcat("public-inbox:", path, NULL);

	if (rewritten)
		ok = rewrite_prepare(r, repo, path, &tip,
				     has_base ? &base : NULL, v1, oids, &l,
				     error);
	/* the common case, v2 and no rewrite, reads ahead on a thread */
	prefetch = ok && !v1 && r->live == NULL && oids->len > 1 &&
		   reader_start(&rd, path, oids, r->ropts->since);
	for (guint i = 0; ok && !r->rstats->limited && i < oids->len; i++) {
		const git_oid *id = &g_array_index(oids, git_oid, i);
		PG_AUTO(git_commit) commit = NULL;
		Ahead *a = NULL;
		char hex[GIT_OID_HEXSZ + 1];
		gint64 time;

		if (r->ropts->limit > 0 && r->added >= r->ropts->limit) {
			r->rstats->limited = TRUE;
			break;
		}
		if (prefetch) {
			if ((a = reader_next(&rd, error)) == NULL) {
				ok = FALSE;
				break;
			}
			time = a->time;
		} else {
			rc = git_commit_lookup(&commit, repo, id);
			if (rc != 0) {
				ok = set_git_error(error, rc, "read commit in",
						   path);
				break;
			}
			time = git_commit_time(commit);
		}
		r->rstats->commits++;
		r->done++;
		/* the resume point goes into the transaction that stores
		 * this commit's message */
		git_oid_tostr(hex, sizeof hex, id);
		pgate_ingest__run_set_resume(r->run, key, hex);
		if (r->ropts->since > 0 && time < r->ropts->since)
			r->rstats->skipped++;
		else if (a != NULL && a->kind == 'm')
			ok = add_raw(r, path, &a->blob, a->raw, error);
		else if (a != NULL && a->kind == 'd')
			ok = pgate_ingest__run_delete(r->run, a->raw, error);
		else if (a == NULL)
			ok = v1 ? read_v1_commit(r, repo, path, commit, error)
				: read_v2_commit(r, repo, path, commit, error);
		if (a != NULL)
			ahead_free(a);
	}
	if (prefetch)
		reader_finish(&rd);
	r->live = NULL;
	live_clear(&l);
	return ok && pgate_ingest__run_flush(r->run, error);
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
	Replay r = { &run, ropts, rstats, 0, 0, NULL };
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
	for (guint i = 0; ok && i < epochs->len && !rstats->limited; i++)
		ok = replay_repo(&r, g_ptr_array_index(epochs, i), error);
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
pgate_ingest_load_raw(PgateStoreTxn *txn, const char *state_dir,
		      const PgateMessageRec *rec, gsize max, GError **error)
{
	switch (rec->raw_location) {
	case PGATE_RAW_INLINE:
		return pgate_store_message_raw(txn, rec->num, error);
	case PGATE_RAW_FILE:
		return pgate_ingest__load_file(state_dir, rec->raw_ref, max,
					       error);
	case PGATE_RAW_GIT_BLOB:
		return load_git_blob(rec->raw_ref, error);
	}
	g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_FAILED,
		    "unknown raw location %d", (int)rec->raw_location);
	return NULL;
}

/* ---- fetching --------------------------------------------------------- */

/* git fetch origin, for a mirror of an archive's epoch.  The URL is read
 * from the config and fetched by an anonymous remote: git_remote_lookup()
 * goes through libgit2 1.5's config globs, whose regexp match leaks its
 * match data on every entry that does not match (a daemon fetching every
 * minute would grow without end).  A repository without an origin is no
 * mirror: nothing to fetch. */
static gboolean
fetch_repo(const char *path, GError **error)
{
	git_repository *repo = NULL;
	git_config *cfg = NULL;
	git_remote *remote = NULL;
	git_buf url = GIT_BUF_INIT;
	git_remote_create_options ro;
	git_fetch_options fo;
	char *spec = (char *)"+refs/heads/*:refs/heads/*";
	git_strarray specs = { &spec, 1 };
	gboolean ok = TRUE;
	int rc;

	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	if (git_repository_open_bare(&repo, path) != 0 ||
	    git_repository_config_snapshot(&cfg, repo) != 0 ||
	    git_config_get_string_buf(&url, cfg, "remote.origin.url") != 0)
		goto out;
	ro.repository = repo;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
		   GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	rc = git_remote_create_with_opts(&remote, url.ptr, &ro);
	if (rc == 0)
		rc = git_remote_fetch(remote, &specs, &fo, "patchgate: fetch");
	if (rc != 0) {
		const git_error *e = git_error_last();

		/* the network: may work next time */
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_IO, "%s: %s",
			    path, e && e->message ? e->message : "failed");
		ok = FALSE;
	}
out:
	git_buf_dispose(&url);
	git_remote_free(remote);
	git_config_free(cfg);
	git_repository_free(repo);
	return ok;
}

gboolean
pgate_ingest_fetch(const char *path, GError **error)
{
	g_autofree char *gitdir = g_build_filename(path, "git", NULL);
	g_autoptr(GDir) gd = g_dir_open(gitdir, 0, NULL);
	const char *name;
	gboolean ok = TRUE;

	git_init_once();
	if (gd == NULL)	/* v1, or an epoch given directly */
		return fetch_repo(path, error);
	while ((name = g_dir_read_name(gd)) != NULL) {
		g_autofree char *p = g_build_filename(gitdir, name, NULL);
		g_autoptr(GError) local = NULL;

		if (!g_str_has_suffix(name, ".git") || fetch_repo(p, &local))
			continue;
		/* the other epochs are fetched all the same; the first
		 * failure is told */
		if (ok)
			g_propagate_error(error, g_steal_pointer(&local));
		ok = FALSE;
	}
	return ok;
}
