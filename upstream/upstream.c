/* upstream.c - merge detection (upstream.h, docs/pipeline.md): the
 * [upstream] group, reading branches, and the two directions.
 *
 * A scan of one branch is two steps.  First, with no transaction open,
 * libgit2 reads the branch's new commits (commit.c).  Then one write
 * transaction decides each (match.c), writes the decisions to the series'
 * SERIES/upstream, remembers the commits (remembered.c) and moves the
 * branch's last commit read, so that a crash reads the same commits
 * again (deciding is idempotent).
 *
 * The other direction, pgate_upstream_series_check(): a series whose
 * patches came after their commits were read looks them up among the
 * remembered commits, which decide again with it among their candidates.
 */
#include "upstream/upstream-private.h"

#include <git2.h>
#include <string.h>

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_remote, git_remote_free)
PGATE_DEFINE_AUTOPTR(git_revwalk, git_revwalk_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_reference, git_reference_free)
PGATE_DEFINE_AUTOPTR(git_config, git_config_free)
#define GIT_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

#define G "upstream"
#define git_fail pgate_upstream__git_fail

/* ---- [upstream] ---- */

gboolean
pgate_upstream_config_load(GKeyFile *kf, PgateUpstreamConfig *c,
			   GError **error)
{
	GQuark d = PGATE_UPSTREAM_ERROR;

	memset(c, 0, sizeof *c);
	c->enabled = kf != NULL && g_key_file_has_group(kf, G);
	if (!c->enabled)
		return TRUE;
	if (!pgate_config_list(kf, G, "repos", &c->repos, d, error) ||
	    !pgate_config_list(kf, G, "branches", &c->branches, d, error) ||
	    !pgate_config_bool(kf, G, "fetch", TRUE, &c->fetch, d, error) ||
	    !pgate_config_string(kf, G, "remote", &c->remote, d, error) ||
	    !pgate_config_int(kf, G, "window_days", 180, 1, 100000, FALSE,
			      &c->window_days, d, error) ||
	    !pgate_config_int(kf, G, "subject_days", 14, 1, 100000, FALSE,
			      &c->subject_days, d, error) ||
	    !pgate_config_int(kf, G, "possible_days", 365, 1, 100000, FALSE,
			      &c->possible_days, d, error) ||
	    !pgate_config_list(kf, G, "link_patterns", &c->link_patterns, d,
			       error))
		return FALSE;
	if (c->repos == NULL || c->repos[0] == NULL)
		return pgate_config_error(error, d, G, "repos",
					  "no repository given");
	if (c->branches == NULL || c->branches[0] == NULL) {
		g_strfreev(c->branches);
		c->branches = g_strsplit("master", ";", -1);
	}
	if (c->remote == NULL)
		c->remote = g_strdup("origin");
	/* the hints' window holds the subject rule's */
	c->possible_days = MAX(c->possible_days, c->subject_days);
	return TRUE;
}

void
pgate_upstream_config_clear(PgateUpstreamConfig *c)
{
	g_clear_pointer(&c->repos, g_strfreev);
	g_clear_pointer(&c->branches, g_strfreev);
	g_clear_pointer(&c->remote, g_free);
	g_clear_pointer(&c->link_patterns, g_strfreev);
}


void
pgate_upstream_stats_clear(PgateUpstreamStats *st)
{
	g_clear_pointer(&st->series, g_hash_table_unref);
}

/* ---- reading a branch ---- */

static int
add_refspec(const git_config_entry *e, void *payload)
{
	g_ptr_array_add(payload, g_strdup(e->value));
	return 0;
}

/* git fetch NAME: its URL and refspecs read from the config, fetched by
 * an anonymous remote, as ingest/pubinbox.c does: git_remote_lookup()
 * goes through libgit2 1.5's config globs, whose regexp match leaks its
 * match data (the daemon fetches every interval). */
static gboolean
fetch_remote(git_repository *repo, const char *name, GError **error)
{
	GIT_AUTO(git_remote) remote = NULL;
	GIT_AUTO(git_config) cfg = NULL;
	git_buf url = GIT_BUF_INIT;
	git_remote_create_options ro;
	git_fetch_options fo;
	g_autoptr(GPtrArray) specs = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *ukey = g_strdup_printf("remote.%s.url", name);
	g_autofree char *fkey = g_strdup_printf("remote.%s.fetch", name);
	git_strarray sa;
	int rc;

	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	rc = git_repository_config_snapshot(&cfg, repo);
	if (rc == 0)
		rc = git_config_get_string_buf(&url, cfg, ukey);
	if (rc != 0) {
		git_buf_dispose(&url);
		return git_fail(error, rc, "the remote's URL");
	}
	git_config_get_multivar_foreach(cfg, fkey, NULL, add_refspec, specs);
	if (specs->len == 0)
		g_ptr_array_add(specs, g_strdup_printf(
			"+refs/heads/*:refs/remotes/%s/*", name));
	ro.repository = repo;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
		   GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	rc = git_remote_create_with_opts(&remote, url.ptr, &ro);
	git_buf_dispose(&url);
	if (rc != 0)
		return git_fail(error, rc, "the remote");
	sa.strings = (char **)specs->pdata;
	sa.count = specs->len;
	rc = git_remote_fetch(remote, &sa, &fo, "patchgate: upstream fetch");
	if (rc != 0)
		return git_fail(error, rc, "fetch");
	return TRUE;
}

/* The commit @branch names in @repo: NAME, refs/heads/NAME,
 * refs/remotes/NAME. */
static gboolean
branch_head(git_repository *repo, const char *branch, git_oid *out,
	    GError **error)
{
	const char *forms[] = { "%s", "refs/heads/%s", "refs/remotes/%s" };

	for (guint i = 0; i < G_N_ELEMENTS(forms); i++) {
		g_autofree char *name = g_strdup_printf(forms[i], branch);
		GIT_AUTO(git_reference) ref = NULL;
		GIT_AUTO(git_reference) res = NULL;

		if (i == 0 && !g_str_has_prefix(branch, "refs/"))
			continue;
		if (git_reference_lookup(&ref, repo, name) != 0 ||
		    git_reference_resolve(&res, ref) != 0)
			continue;
		git_oid_cpy(out, git_reference_target(res));
		return TRUE;
	}
	g_set_error(error, PGATE_UPSTREAM_ERROR, PGATE_ERROR_NOT_FOUND,
		    "no branch %s", branch);
	return FALSE;
}

/* The new commits of @head, oldest first: those not reachable from
 * @last (nullable: those dated @cutoff or later); the commits of @last
 * that @head no longer has into @dropped (40-hex strings). */
static gboolean
read_commits(git_repository *repo, const git_oid *head, const git_oid *last,
	     gint64 cutoff, char *const *patterns, GPtrArray *out,
	     GPtrArray *dropped, GError **error)
{
	GIT_AUTO(git_revwalk) walk = NULL;
	git_oid oid;
	int rc;

	if ((rc = git_revwalk_new(&walk, repo)) != 0)
		return git_fail(error, rc, "walk");
	git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME |
			    GIT_SORT_REVERSE);
	if ((rc = git_revwalk_push(walk, head)) != 0 ||
	    (last != NULL && (rc = git_revwalk_hide(walk, last)) != 0))
		return git_fail(error, rc, "walk");
	while ((rc = git_revwalk_next(&oid, walk)) == 0) {
		GIT_AUTO(git_commit) c = NULL;

		if ((rc = git_commit_lookup(&c, repo, &oid)) != 0)
			return git_fail(error, rc, "read a commit");
		if (last == NULL && (gint64)git_commit_time(c) < cutoff)
			continue;
		g_ptr_array_add(out, pgate_upstream__commit_read(repo, c, patterns));
	}
	if (rc != GIT_ITEROVER)
		return git_fail(error, rc, "walk");
	if (last == NULL || git_graph_descendant_of(repo, head, last) == 1 ||
	    git_oid_equal(head, last))
		return TRUE;
	/* rewritten: what the branch had and has no more */
	git_revwalk_reset(walk);
	git_revwalk_sorting(walk, GIT_SORT_NONE);
	if ((rc = git_revwalk_push(walk, last)) != 0 ||
	    (rc = git_revwalk_hide(walk, head)) != 0)
		return git_fail(error, rc, "walk the old history");
	while ((rc = git_revwalk_next(&oid, walk)) == 0) {
		char hex[GIT_OID_HEXSZ + 1];

		git_oid_tostr(hex, sizeof hex, &oid);
		g_ptr_array_add(dropped, g_strdup(hex));
	}
	if (rc != GIT_ITEROVER)
		return git_fail(error, rc, "walk the old history");
	return TRUE;
}

/* One branch's update, the payload of its transaction. */
typedef struct {
	const PgateUpstreamConfig *cfg;
	const char *repo, *branch;
	const char *head;            /* 40 hex */
	GPtrArray *commits;          /* (element-type UCommit) */
	GPtrArray *dropped;          /* (element-type utf8) */
	gint64 now;
	guint matched, lost;
	GHashTable *pending;         /* sids, filled by the transaction */
} Update;

static gboolean
update_txn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Update *u = payload;
	g_autofree char *hk = pgate_upstream__key('h', u->repo, u->branch);
	UCtx x;
	gboolean ok = TRUE;

	pgate_upstream__ctx_init(&x, txn, u->cfg, u->now);
	for (guint i = 0; i < u->commits->len; i++) {
		const UCommit *c = u->commits->pdata[i];

		pgate_upstream__ctx_span(&x, c->email, c->when);
	}
	for (guint i = 0; ok && i < u->dropped->len; i++)
		ok = pgate_upstream__commit_left(&x, u->dropped->pdata[i],
						 u->repo, u->branch, error);
	for (guint i = 0; ok && i < u->commits->len; i++)
		ok = pgate_upstream__commit_seen(&x, u->commits->pdata[i],
						 u->repo, u->branch, error);
	g_hash_table_remove_all(u->pending);
	ok = ok && pgate_upstream__docs_write(&x, u->pending, error) &&
	     pgate_store_upstream_put(txn, hk, u->head, strlen(u->head), error);
	u->matched = x.matched;
	u->lost = x.lost;
	pgate_upstream__ctx_clear(&x);
	return ok;
}

static gboolean
last_read(PgateStore *store, const char *repo, const char *branch,
	  git_oid *out, gboolean *out_found, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autofree char *hk = pgate_upstream__key('h', repo, branch);
	g_autoptr(GBytes) b = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *hex = NULL;

	*out_found = FALSE;
	if (txn == NULL)
		return FALSE;
	b = pgate_store_upstream_get(txn, hk, &local);
	if (b == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	hex = g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b));
	*out_found = git_oid_fromstr(out, hex) == 0;
	return TRUE;
}

static gboolean
scan_branch(PgateStore *store, const PgateUpstreamConfig *c,
	    git_repository *repo, const char *path, const char *branch,
	    gint64 now, PgateUpstreamLog log, gpointer log_data,
	    PgateUpstreamStats *st, GError **error)
{
	g_autoptr(GPtrArray) commits = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_upstream__commit_free);
	g_autoptr(GPtrArray) dropped = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) pending = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GError) local = NULL;
	git_oid head, last;
	gboolean have_last;
	char hex[GIT_OID_HEXSZ + 1];
	Update u = { c, path, branch, hex, commits, dropped, now, 0, 0, pending };
	GHashTableIter it;
	gpointer sid;
	gint64 t0, t1;

	if (!branch_head(repo, branch, &head, &local)) {
		if (log)
			log(log_data, branch, "missing", local->message);
		return TRUE;
	}
	if (!last_read(store, path, branch, &last, &have_last, error))
		return FALSE;
	if (have_last && git_oid_equal(&head, &last))
		return TRUE;
	if (have_last) {
		GIT_AUTO(git_commit) lc = NULL;

		/* a last commit the repository lost (gc after a rewrite):
		 * read the window again */
		if (git_commit_lookup(&lc, repo, &last) != 0)
			have_last = FALSE;
	}
	if (have_last) {
		git_oid base;

		/* a branch that now holds an unrelated history: read as a
		 * first read (the window), not every commit it has */
		if (git_merge_base(&base, repo, &head, &last) != 0)
			have_last = FALSE;
	}
	git_oid_tostr(hex, sizeof hex, &head);
	t0 = g_get_monotonic_time();
	if (!read_commits(repo, &head, have_last ? &last : NULL,
			  now - c->window_days * DAY, c->link_patterns,
			  commits, dropped, error)) {
		g_prefix_error(error, "%s %s: ", path, branch);
		return FALSE;
	}
	t1 = g_get_monotonic_time();
	if (!pgate_store_write(store, update_txn, &u, error))
		return FALSE;
	g_debug("%s %s: %u commits read in %.3f s, matched and stored in "
		"%.3f s", path, branch, commits->len,
		(double)(t1 - t0) / G_USEC_PER_SEC,
		(double)(g_get_monotonic_time() - t1) / G_USEC_PER_SEC);
	st->branches++;
	st->commits += commits->len;
	st->matched += u.matched;
	st->dropped += u.lost;
	if (dropped->len > 0) {
		st->rewritten++;
		if (log) {
			g_autofree char *why = g_strdup_printf(
				"%u commits left the branch, %u matches lost",
				dropped->len, u.lost);

			log(log_data, branch, "rewritten", why);
		}
	}
	if (st->series == NULL)
		st->series = g_hash_table_new_full(g_str_hash, g_str_equal,
						   g_free, NULL);
	g_hash_table_iter_init(&it, pending);
	while (g_hash_table_iter_next(&it, &sid, NULL))
		g_hash_table_add(st->series, g_strdup(sid));
	if (log) {
		g_autofree char *what = g_strdup_printf(
			"%u new commits up to %.12s, %u patches matched",
			commits->len, hex, u.matched);

		log(log_data, branch, "read", what);
	}
	return TRUE;
}

gboolean
pgate_upstream_scan(PgateStore *store, const PgateUpstreamConfig *c,
		    gint64 now, PgateUpstreamLog log, gpointer log_data,
		    PgateUpstreamStats *stats, GError **error)
{
	if (!c->enabled)
		return TRUE;
	git_libgit2_init();
	for (guint r = 0; c->repos[r] != NULL; r++) {
		GIT_AUTO(git_repository) repo = NULL;
		int rc = git_repository_open_ext(&repo, c->repos[r],
						 GIT_REPOSITORY_OPEN_NO_SEARCH,
						 NULL);

		if (rc != 0) {
			git_fail(error, rc, "open the repository");
			g_prefix_error(error, "[upstream] %s: ", c->repos[r]);
			return FALSE;
		}
		if (c->fetch) {
			g_autoptr(GError) local = NULL;

			if (!fetch_remote(repo, c->remote, &local) && log)
				log(log_data, c->repos[r], "fetch-failed",
				    local->message);
		}
		for (guint b = 0; c->branches[b] != NULL; b++)
			if (!scan_branch(store, c, repo, c->repos[r],
					 c->branches[b], now, log, log_data,
					 stats, error))
				return FALSE;
	}
	return TRUE;
}

/* ---- the patch side ---- */

/* The commits remembered under @key that have not looked at patch
 * @msgid yet into @out (once each); with @when_from..@when_to (a subject
 * key), only those whose author date is in it: the patch is in their
 * window. */
static gboolean
commits_under(PgateStoreTxn *txn, const char *key, const char *msgid,
	      gint64 when_from, gint64 when_to, GHashTable *out,
	      GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = pgate_upstream__get(txn, key, &local);
	json_t *s;
	gsize i;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	json_array_foreach(v, i, s) {
		const char *oid = json_string_value(json_object_get(s, "c"));
		g_autofree char *xk = NULL;
		g_autoptr(json_t) xr = NULL;
		json_t *e, *t;
		gsize j;
		gboolean known = FALSE;

		if (oid == NULL || g_hash_table_contains(out, oid))
			continue;
		xk = pgate_upstream__key('x', oid, NULL);
		xr = pgate_upstream__get(txn, xk, NULL);
		t = json_object_get(xr, "t");
		if (!json_is_integer(t) || json_integer_value(t) < when_from ||
		    json_integer_value(t) > when_to)
			continue;	/* an older version's record, or too far */
		json_array_foreach(json_object_get(xr, "m"), j, e)
			known = known || g_strcmp0(json_string_value(e),
						   msgid) == 0;
		if (!known)
			g_hash_table_add(out, g_strdup(oid));
	}
	return TRUE;
}

/* The commits that may be @rec's unmatched patches into @out. */
static gboolean
commits_for(PgateStoreTxn *txn, const PgateUpstreamConfig *cfg,
	    const PgateSeriesRec *rec, GPtrArray *have, GHashTable *out,
	    GError **error)
{
	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		g_autofree char *lk = pgate_upstream__key('l', p->msgid, NULL);
		g_autofree char *pk = NULL, *ck = NULL;
		g_autoptr(PgateMessageRec) m = NULL;
		gboolean matched = FALSE;

		for (guint j = 0; j < have->len; j++)
			matched |= g_strcmp0(((PgateUpstreamMatch *)
					      have->pdata[j])->msgid,
					     p->msgid) == 0;
		if (matched)
			continue;
		if (!commits_under(txn, lk, p->msgid, G_MININT64, G_MAXINT64,
				   out, error))
			return FALSE;
		pk = p->patch_id ? pgate_upstream__key('p', p->patch_id, NULL)
				 : NULL;
		if (pk != NULL && !commits_under(txn, pk, p->msgid, G_MININT64,
						 G_MAXINT64, out, error))
			return FALSE;
		m = pgate_store_message_get(txn, p->num, NULL);
		if (m == NULL || m->from_email == NULL || *m->from_email == '\0')
			continue;
		{
			g_autofree char *email = g_ascii_strdown(m->from_email,
								 -1);
			g_autofree char *core = pgate_upstream_subject_core(
				m->name ? m->name : m->subject);

			ck = pgate_upstream__key('c', email, core);
		}
		if (!commits_under(txn, ck, p->msgid, m->date - DAY,
				   m->date + cfg->possible_days * DAY, out,
				   error))
			return FALSE;
	}
	return TRUE;
}

typedef struct {
	const PgateUpstreamConfig *cfg;
	GHashTable *commits;
	gint64 now;
} Check;

static gint
str_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static gboolean
check_txn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Check *ck = payload;
	g_autoptr(GPtrArray) oids = g_ptr_array_new();
	GHashTableIter it;
	gpointer oid;
	UCtx x;
	gboolean ok = TRUE;

	/* in commit order: the same writes whatever the hash's order */
	g_hash_table_iter_init(&it, ck->commits);
	while (g_hash_table_iter_next(&it, &oid, NULL))
		g_ptr_array_add(oids, oid);
	g_ptr_array_sort(oids, str_cmp);
	pgate_upstream__ctx_init(&x, txn, ck->cfg, ck->now);
	for (guint i = 0; ok && i < oids->len; i++)
		ok = pgate_upstream__commit_redecide(&x, oids->pdata[i], error);
	ok = ok && pgate_upstream__docs_write(&x, NULL, error);
	pgate_upstream__ctx_clear(&x);
	return ok;
}

gboolean
pgate_upstream_series_check(PgateStore *store, const PgateUpstreamConfig *c,
			    const PgateSeriesRec *rec, guint *out_matched,
			    GError **error)
{
	g_autoptr(GHashTable) commits = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	Check ck = { c, commits, g_get_real_time() / G_USEC_PER_SEC };
	g_autoptr(GPtrArray) have = NULL;

	*out_matched = 0;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);

		if (txn == NULL)
			return FALSE;
		have = pgate_upstream_series_read(txn, rec, error);
		if (have == NULL)
			return FALSE;
		*out_matched = have->len;
		if (have->len == rec->patches->len)
			return TRUE;
		/* look first, write only when a commit must decide again */
		if (!commits_for(txn, c, rec, have, commits, error))
			return FALSE;
	}
	if (g_hash_table_size(commits) == 0)
		return TRUE;
	if (!pgate_store_write(store, check_txn, &ck, error))
		return FALSE;
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);
		g_autoptr(GPtrArray) now = NULL;

		if (txn == NULL ||
		    (now = pgate_upstream_series_read(txn, rec, error)) == NULL)
			return FALSE;
		*out_matched = now->len;
	}
	return TRUE;
}
