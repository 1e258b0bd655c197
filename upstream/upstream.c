/* upstream.c - merge detection (upstream.h, docs/pipeline.md).
 *
 * A scan of one branch is two steps.  First, with no transaction open,
 * libgit2 reads the branch's new commits: for each its author, its
 * normalised subject, the Message-IDs its Link:/Message-Id: trailers
 * name, and its stable patch-id.  Then one write transaction matches
 * them against the store, remembers them, updates the matched series'
 * SERIES/upstream and moves the branch's last commit read, so that a
 * crash reads the same commits again (matching is idempotent).
 *
 * The store's upstream database (store/upstream.c) holds, keyed by a
 * letter, a newline and the rest:
 *
 *   h REPO\nBRANCH      the branch's last commit read (40 hex)
 *   l MSGID             [{"c": COMMIT, "r": REPO, "b": BRANCH}, ...]:
 *   p PATCH-ID            commits naming MSGID, with that patch-id, by
 *   a EMAIL\nSUBJECT      that author with that normalised subject
 *   x COMMIT            {"k": [its l/p/a keys], "s": [series matched]}:
 *                         what to undo when a rewrite drops it
 */
#include "upstream/upstream.h"

#include <git2.h>
#include <jansson.h>
#include <string.h>

#include "common/json.h"

G_DEFINE_QUARK(pgate-upstream-error-quark, pgate_upstream_error)

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_remote, git_remote_free)
PGATE_DEFINE_AUTOPTR(git_revwalk, git_revwalk_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
PGATE_DEFINE_AUTOPTR(git_diff, git_diff_free)
PGATE_DEFINE_AUTOPTR(git_reference, git_reference_free)
PGATE_DEFINE_AUTOPTR(git_blob, git_blob_free)
PGATE_DEFINE_AUTOPTR(git_config, git_config_free)
PGATE_DEFINE_AUTOPTR(git_patch, git_patch_free)
#define GIT_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

#define G "upstream"
#define SIGHTINGS_MAX 16    /* commits kept under one key */
#define ALSO_MAX 8          /* other branches kept with a match */
#define DAY (24 * 3600)

static gboolean
git_fail(GError **error, int rc, const char *what)
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

static const char *const rule_names[] = {
	[PGATE_UPSTREAM_RULE_LINK] = "link",
	[PGATE_UPSTREAM_RULE_PATCH_ID] = "patch-id",
	[PGATE_UPSTREAM_RULE_SUBJECT] = "subject",
};

const char *
pgate_upstream_rule_to_string(PgateUpstreamRule rule)
{
	g_return_val_if_fail(rule <= PGATE_UPSTREAM_RULE_SUBJECT, "link");
	return rule_names[rule];
}

static PgateUpstreamRule
rule_from_string(const char *s)
{
	for (guint i = 0; i < G_N_ELEMENTS(rule_names); i++)
		if (s != NULL && strcmp(s, rule_names[i]) == 0)
			return (PgateUpstreamRule)i;
	return PGATE_UPSTREAM_RULE_LINK;
}

void
pgate_upstream_match_free(PgateUpstreamMatch *m)
{
	if (m == NULL)
		return;
	g_free(m->msgid);
	g_free(m->commit);
	g_free(m->repo);
	g_free(m->branch);
	g_free(m);
}

/* ---- what a commit says ---- */

char *
pgate_upstream_subject_normalize(const char *subject)
{
	const char *s = subject ? subject : "";
	GString *out = g_string_new(NULL);
	gboolean blank = FALSE;

	for (;;) {
		while (g_ascii_isspace(*s))
			s++;
		if (g_ascii_strncasecmp(s, "re:", 3) == 0) {
			s += 3;
		} else if (*s == '[' && strchr(s, ']') != NULL) {
			s = strchr(s, ']') + 1;
		} else {
			break;
		}
	}
	for (; *s; s++) {
		if (g_ascii_isspace(*s)) {
			blank = TRUE;
			continue;
		}
		if (blank && out->len > 0)
			g_string_append_c(out, ' ');
		blank = FALSE;
		g_string_append_c(out, g_ascii_tolower(*s));
	}
	while (out->len > 0 && out->str[out->len - 1] == '.')
		g_string_truncate(out, out->len - 1);
	return g_string_free(out, FALSE);
}

/* The path component at @p (up to '/', '?', '#' or the end),
 * percent-decoded; %NULL when empty. */
static char *
url_component(const char *p)
{
	gsize n = strcspn(p, "/?# \t>");
	g_autofree char *raw = g_strndup(p, n);
	char *id;

	if (n == 0)
		return NULL;
	id = g_uri_unescape_string(raw, NULL);
	if (id == NULL || *id == '\0') {
		g_free(id);
		return NULL;
	}
	return id;
}

static const char *
skip_scheme(const char *v)
{
	if (g_ascii_strncasecmp(v, "https://", 8) == 0)
		return v + 8;
	if (g_ascii_strncasecmp(v, "http://", 7) == 0)
		return v + 7;
	return NULL;
}

char *
pgate_upstream_link_msgid(const char *value, char *const *patterns)
{
	const char *v = value, *rest;

	while (g_ascii_isspace(*v))
		v++;
	if (*v == '<') {
		gsize n = strcspn(v + 1, ">");

		return v[1 + n] == '>' && n > 0 ? g_strndup(v + 1, n) : NULL;
	}
	for (guint i = 0; patterns != NULL && patterns[i] != NULL; i++) {
		gsize n = strlen(patterns[i]);

		if (n > 0 && g_ascii_strncasecmp(v, patterns[i], n) == 0)
			return url_component(v + n);
	}
	rest = skip_scheme(v);
	if (rest == NULL)
		return NULL;
	if (g_ascii_strncasecmp(rest, "patch.msgid.link/", 17) == 0)
		return url_component(rest + 17);
	if (g_ascii_strncasecmp(rest, "lore.kernel.org/", 16) == 0) {
		/* /r/ID, /all/ID, /LIST/ID: the second component */
		const char *list = rest + 16;
		gsize n = strcspn(list, "/?#");

		if (n == 0 || list[n] != '/')
			return NULL;
		return url_component(list + n + 1);
	}
	return NULL;
}

/* One commit as matching reads it. */
typedef struct {
	char oid[GIT_OID_HEXSZ + 1];
	char *email;        /* lowercased */
	gint64 when;        /* the author's date */
	char *subject;      /* normalised */
	GPtrArray *links;   /* (element-type utf8): Message-IDs named */
	char *patch_id;     /* (nullable): none for a merge or empty diff */
} Commit;

static void
commit_free(Commit *c)
{
	g_free(c->email);
	g_free(c->subject);
	g_ptr_array_unref(c->links);
	g_free(c->patch_id);
	g_free(c);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Commit, commit_free)

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
	if (git_patch_from_blobs(&patch, b1, e1 ? path : NULL, b2,
				 e2 ? path : NULL, NULL) != 0 ||
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

static char *
commit_patch_id_fast(git_repository *repo, git_tree *pt, git_tree *t,
		     gboolean *out_odd)
{
	Changed ch = { repo, g_string_new(NULL), FALSE, FALSE, FALSE, 0 };
	GIT_AUTO(git_diff) d = NULL;
	git_oid id;
	char hex[GIT_OID_HEXSZ + 1];
	char *out = NULL;

	changed_trees(&ch, pt, t, "");
	*out_odd = ch.odd || (ch.added && ch.deleted);
	if (!*out_odd && ch.text->len > 0 &&
	    git_diff_from_buffer(&d, ch.text->str, ch.text->len) == 0 &&
	    git_diff_patchid(&id, d, NULL) == 0) {
		git_oid_tostr(hex, sizeof hex, &id);
		out = g_strdup(hex);
	}
	g_string_free(ch.text, TRUE);
	return out;
}

static char *
commit_patch_id(git_repository *repo, git_commit *c)
{
	GIT_AUTO(git_commit) parent = NULL;
	GIT_AUTO(git_tree) t = NULL;
	GIT_AUTO(git_tree) pt = NULL;
	GIT_AUTO(git_diff) d = NULL;
	git_diff_find_options fo;
	git_oid id;
	char hex[GIT_OID_HEXSZ + 1];

	char *fast;
	gboolean odd;

	if (git_commit_parentcount(c) != 1 ||
	    git_commit_parent(&parent, c, 0) != 0 ||
	    git_commit_tree(&t, c) != 0 || git_commit_tree(&pt, parent) != 0)
		return NULL;
	fast = commit_patch_id_fast(repo, pt, t, &odd);
	if (!odd)
		return fast;
	g_free(fast);
	if (git_diff_tree_to_tree(&d, repo, pt, t, NULL) != 0 ||
	    git_diff_num_deltas(d) == 0)
		return NULL;
	git_diff_find_options_init(&fo, GIT_DIFF_FIND_OPTIONS_VERSION);
	fo.flags = GIT_DIFF_FIND_RENAMES;
	if (git_diff_find_similar(d, &fo) != 0 ||
	    git_diff_patchid(&id, d, NULL) != 0)
		return NULL;
	git_oid_tostr(hex, sizeof hex, &id);
	return g_strdup(hex);
}

static Commit *
commit_read(git_repository *repo, git_commit *c, char *const *patterns)
{
	g_autoptr(Commit) out = g_new0(Commit, 1);
	const git_signature *a = git_commit_author(c);
	git_message_trailer_array tr = { 0 };

	git_oid_tostr(out->oid, sizeof out->oid, git_commit_id(c));
	out->email = g_ascii_strdown(a && a->email ? a->email : "", -1);
	out->when = a ? (gint64)a->when.time : 0;
	out->subject = pgate_upstream_subject_normalize(git_commit_summary(c));
	out->links = g_ptr_array_new_with_free_func(g_free);
	if (git_message_trailers(&tr, git_commit_message(c)) == 0) {
		for (size_t i = 0; i < tr.count; i++) {
			char *id;

			if (g_ascii_strcasecmp(tr.trailers[i].key, "Link") != 0 &&
			    g_ascii_strcasecmp(tr.trailers[i].key,
					       "Message-Id") != 0)
				continue;
			id = pgate_upstream_link_msgid(tr.trailers[i].value,
						       patterns);
			if (id != NULL)
				g_ptr_array_add(out->links, id);
		}
		git_message_trailer_array_free(&tr);
	}
	out->patch_id = commit_patch_id(repo, c);
	return g_steal_pointer(&out);
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
		g_ptr_array_add(out, commit_read(repo, c, patterns));
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

/* ---- the store side ---- */

static char *
ukey(char kind, const char *a, const char *b)
{
	return b ? g_strdup_printf("%c\n%s\n%s", kind, a, b)
		 : g_strdup_printf("%c\n%s", kind, a);
}

/* (transfer full): the JSON value under @key, %NULL when none */
static json_t *
uget(PgateStoreTxn *txn, const char *key, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_upstream_get(txn, key, &local);
	gsize len;
	const char *data;

	if (b == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	data = g_bytes_get_data(b, &len);
	return json_loadb(data, len, 0, NULL);
}

static gboolean
uput(PgateStoreTxn *txn, const char *key, json_t *v, GError **error)
{
	g_autofree char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	return pgate_store_upstream_put(txn, key, s, strlen(s), error);
}

/* The series documents a transaction changes: sid -> SERIES/upstream. */
typedef struct {
	PgateStoreTxn *txn;
	GHashTable *docs;      /* sid -> json_t (owned) */
	GHashTable *dirty;     /* sids (the docs' keys) */
	GHashTable *touched;   /* (nullable): sids one commit matched */
	gint64 now;
	guint matched;
} Docs;

/* Marks @sid's document (loaded) as changed. */
static void
mark_dirty(Docs *d, const char *sid)
{
	gpointer key;

	if (g_hash_table_lookup_extended(d->docs, sid, &key, NULL))
		g_hash_table_add(d->dirty, key);
}

static void
docs_init(Docs *d, PgateStoreTxn *txn, gint64 now)
{
	d->txn = txn;
	d->docs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					(GDestroyNotify)json_decref);
	d->dirty = g_hash_table_new(g_str_hash, g_str_equal);
	d->touched = NULL;
	d->now = now;
	d->matched = 0;
}

static void
docs_clear(Docs *d)
{
	g_clear_pointer(&d->dirty, g_hash_table_unref);
	g_clear_pointer(&d->docs, g_hash_table_unref);
}

static json_t *
doc_get(Docs *d, const char *sid, GError **error)
{
	json_t *doc = g_hash_table_lookup(d->docs, sid);
	g_autofree char *key = NULL;
	g_autoptr(GBytes) b = NULL;
	g_autoptr(GError) local = NULL;

	if (doc != NULL)
		return doc;
	key = g_strdup_printf("%s/upstream", sid);
	b = pgate_store_table_get(d->txn, PGATE_STORE_TABLE_STAGE, key, &local);
	if (b != NULL) {
		gsize len;
		const char *data = g_bytes_get_data(b, &len);

		doc = json_loadb(data, len, 0, NULL);
	} else if (!g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		doc = json_object();
	}
	if (!json_is_object(json_object_get(doc, "patches")))
		json_object_set_new(doc, "patches", json_object());
	g_hash_table_insert(d->docs, g_strdup(sid), doc);
	return doc;
}

static gboolean
docs_write(Docs *d, GHashTable *changed, GError **error)
{
	GHashTableIter it;
	gpointer sid;

	g_hash_table_iter_init(&it, d->dirty);
	while (g_hash_table_iter_next(&it, &sid, NULL)) {
		json_t *doc = g_hash_table_lookup(d->docs, sid);
		g_autofree char *key = g_strdup_printf("%s/upstream",
						       (char *)sid);
		g_autofree char *s = json_dumps(doc, JSON_COMPACT |
						JSON_SORT_KEYS);

		if (!pgate_store_table_put(d->txn, PGATE_STORE_TABLE_STAGE, key,
					   s, strlen(s), error))
			return FALSE;
		/* the next pipeline pass visits it, finished or not */
		if (!pgate_store_active_mark(d->txn, sid, error))
			return FALSE;
		if (changed != NULL)
			g_hash_table_add(changed, g_strdup(sid));
	}
	return TRUE;
}

/* Records that commit @c (on @repo @branch) is patch @msgid of series
 * @sid by @rule; the first match stays, another branch's is kept in
 * "also". */
static gboolean
record(Docs *d, const char *sid, const char *msgid, const char *commit,
       const char *repo, const char *branch, PgateUpstreamRule rule,
       GError **error)
{
	json_t *doc = doc_get(d, sid, error);
	json_t *patches, *m, *also;

	if (doc == NULL)
		return FALSE;
	patches = json_object_get(doc, "patches");
	m = json_object_get(patches, msgid);
	if (m != NULL) {
		if (g_strcmp0(json_string_value(json_object_get(m, "branch")),
			      branch) == 0 &&
		    g_strcmp0(json_string_value(json_object_get(m, "repo")),
			      repo) == 0)
			return TRUE;
		also = json_object_get(m, "also");
		if (!json_is_array(also)) {
			also = json_array();
			json_object_set_new(m, "also", also);
		}
		for (gsize i = 0; i < json_array_size(also); i++) {
			json_t *a = json_array_get(also, i);

			if (g_strcmp0(json_string_value(json_object_get(
					a, "branch")), branch) == 0 &&
			    g_strcmp0(json_string_value(json_object_get(
					a, "repo")), repo) == 0)
				return TRUE;
		}
		if (json_array_size(also) >= ALSO_MAX)
			return TRUE;
		json_array_append_new(also, json_pack("{s:s,s:s,s:s}", "commit",
						      commit, "repo", repo,
						      "branch", branch));
		mark_dirty(d, sid);
		if (d->touched != NULL)
			g_hash_table_add(d->touched, g_strdup(sid));
		return TRUE;
	}
	json_object_set_new(patches, msgid, json_pack(
		"{s:s,s:s,s:s,s:s,s:b,s:I}", "commit", commit, "repo", repo,
		"branch", branch, "rule", pgate_upstream_rule_to_string(rule),
		"changes", rule == PGATE_UPSTREAM_RULE_SUBJECT,
		"at", (json_int_t)d->now));
	mark_dirty(d, sid);
	if (d->touched != NULL)
		g_hash_table_add(d->touched, g_strdup(sid));
	d->matched++;
	return TRUE;
}

/* Removes the matches (and "also" entries) of @commit from series @sid. */
static gboolean
unrecord(Docs *d, const char *sid, const char *commit, guint *dropped,
	 GError **error)
{
	json_t *doc = doc_get(d, sid, error);
	json_t *patches, *m;
	const char *msgid;
	void *tmp;
	gboolean changed = FALSE;

	if (doc == NULL)
		return FALSE;
	patches = json_object_get(doc, "patches");
	json_object_foreach_safe(patches, tmp, msgid, m) {
		json_t *also = json_object_get(m, "also");

		for (gsize i = json_array_size(also); i > 0; i--)
			if (g_strcmp0(json_string_value(json_object_get(
				json_array_get(also, i - 1), "commit")),
				      commit) == 0) {
				json_array_remove(also, i - 1);
				changed = TRUE;
			}
		if (g_strcmp0(json_string_value(json_object_get(m, "commit")),
			      commit) != 0)
			continue;
		changed = TRUE;
		if (json_array_size(also) > 0) {
			/* another branch has it still */
			json_t *a = json_array_get(also, 0);

			json_object_set(m, "commit", json_object_get(a, "commit"));
			json_object_set(m, "repo", json_object_get(a, "repo"));
			json_object_set(m, "branch", json_object_get(a, "branch"));
			json_array_remove(also, 0);
			continue;
		}
		json_object_del(patches, msgid);
		(*dropped)++;
	}
	if (changed)
		mark_dirty(d, sid);
	return TRUE;
}

/* Adds @c to the sightings under @key (once, at most SIGHTINGS_MAX). */
static gboolean
sighting_add(PgateStoreTxn *txn, const char *key, const Commit *c,
	     const char *repo, const char *branch, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = uget(txn, key, &local);

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (!json_is_array(v)) {
		json_decref(v);
		v = json_array();
	}
	for (gsize i = 0; i < json_array_size(v); i++) {
		json_t *s = json_array_get(v, i);

		if (g_strcmp0(json_string_value(json_object_get(s, "c")),
			      c->oid) == 0 &&
		    g_strcmp0(json_string_value(json_object_get(s, "b")),
			      branch) == 0)
			return TRUE;
	}
	if (json_array_size(v) >= SIGHTINGS_MAX)
		json_array_remove(v, 0);
	json_array_append_new(v, json_pack("{s:s,s:s,s:s}", "c", c->oid, "r",
					   repo, "b", branch));
	return uput(txn, key, v, error);
}

static gboolean
sighting_remove(PgateStoreTxn *txn, const char *key, const char *commit,
		GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = uget(txn, key, &local);
	gboolean changed = FALSE;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	for (gsize i = json_array_size(v); i > 0; i--)
		if (g_strcmp0(json_string_value(json_object_get(
			json_array_get(v, i - 1), "c")), commit) == 0) {
			json_array_remove(v, i - 1);
			changed = TRUE;
		}
	if (!changed)
		return TRUE;
	if (json_array_size(v) == 0)
		return pgate_store_upstream_delete(txn, key, error);
	return uput(txn, key, v, error);
}

/* One branch's update, the payload of its transaction. */
typedef struct {
	const PgateUpstreamConfig *cfg;
	const char *repo, *branch;
	const char *head;            /* 40 hex */
	GPtrArray *commits;          /* (element-type Commit) */
	GPtrArray *dropped;          /* (element-type utf8) */
	gint64 now;
	guint matched, lost;
	GHashTable *changed;         /* sids, filled after the commit */
	GHashTable *pending;         /* sids, filled by the transaction */
} Update;

/* The series of message @num and the message, when it is a patch. */
static gboolean
patch_series(PgateStoreTxn *txn, guint64 num, PgateMessageRec **out_msg,
	     char **out_sid, GError **error)
{
	g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, num, error);

	*out_sid = NULL;
	*out_msg = NULL;
	if (m == NULL)
		return FALSE;
	if (m->kind != PGATE_MSG_KIND_PATCH)
		return TRUE;
	if (!pgate_store_msg_series_get(txn, num, out_sid, error))
		return FALSE;
	*out_msg = g_steal_pointer(&m);
	return TRUE;
}

/* Rule 1: a stored patch with a Message-ID the commit names. */
static gboolean
match_link(Docs *d, const Commit *c, const Update *u, gboolean *found,
	   GError **error)
{
	for (guint i = 0; i < c->links->len; i++) {
		g_autoptr(GArray) nums = pgate_store_message_lookup(
			d->txn, c->links->pdata[i], error);

		if (nums == NULL)
			return FALSE;
		for (guint j = 0; j < nums->len; j++) {
			g_autoptr(PgateMessageRec) m = NULL;
			g_autofree char *sid = NULL;

			if (!patch_series(d->txn, g_array_index(nums, guint64, j),
					  &m, &sid, error))
				return FALSE;
			if (sid == NULL)
				continue;
			if (!record(d, sid, m->msgid, c->oid, u->repo, u->branch,
				    PGATE_UPSTREAM_RULE_LINK, error))
				return FALSE;
			*found = TRUE;
		}
	}
	return TRUE;
}

/* Rule 2: the stored patches with the commit's patch-id. */
static gboolean
match_patch_id(Docs *d, const Commit *c, const Update *u, gboolean *found,
	       GError **error)
{
	g_autoptr(GPtrArray) sids = NULL;

	if (c->patch_id == NULL)
		return TRUE;
	sids = pgate_store_index_lookup(d->txn, PGATE_STORE_INDEX_PATCHID,
					c->patch_id, error);
	if (sids == NULL)
		return FALSE;
	for (guint i = 0; i < sids->len; i++) {
		gsize len;
		const char *data = g_bytes_get_data(sids->pdata[i], &len);
		g_autofree char *sid = g_strndup(data, len);
		g_autoptr(PgateSeriesRec) s = pgate_store_series_get(d->txn, sid,
								     NULL);

		for (guint j = 0; s != NULL && j < s->patches->len; j++) {
			const PgateSeriesPatch *p = s->patches->pdata[j];

			if (g_strcmp0(p->patch_id, c->patch_id) != 0)
				continue;
			if (!record(d, sid, p->msgid, c->oid, u->repo,
				    u->branch, PGATE_UPSTREAM_RULE_PATCH_ID,
				    error))
				return FALSE;
			*found = TRUE;
		}
	}
	return TRUE;
}

/* Rule 3: the author's patches of the window with the same subject. */
static gboolean
match_subject(Docs *d, const Commit *c, const Update *u, gboolean *found,
	      GError **error)
{
	g_autoptr(GArray) nums = NULL;

	if (*c->email == '\0' || *c->subject == '\0')
		return TRUE;
	nums = pgate_store_author_range(d->txn, c->email,
					c->when - u->cfg->subject_days * DAY,
					c->when + DAY, error);
	if (nums == NULL)
		return FALSE;
	for (guint i = 0; i < nums->len; i++) {
		guint64 num = g_array_index(nums, guint64, i);
		g_autofree char *sid = NULL, *norm = NULL;
		g_autofree char *msgid = NULL, *name = NULL;
		PgateMsgKind kind;

		/* the subject first, without decoding the whole record: an
		 * author's patches of the window are many, the match one */
		if (!pgate_store_message_peek_name(d->txn, num, &kind, &msgid,
						   &name, error))
			return FALSE;
		if (kind != PGATE_MSG_KIND_PATCH)
			continue;
		norm = pgate_upstream_subject_normalize(name);
		if (strcmp(norm, c->subject) != 0)
			continue;
		if (!pgate_store_msg_series_get(d->txn, num, &sid, error))
			return FALSE;
		if (sid == NULL)
			continue;
		if (!record(d, sid, msgid, c->oid, u->repo, u->branch,
			    PGATE_UPSTREAM_RULE_SUBJECT, error))
			return FALSE;
		*found = TRUE;
	}
	return TRUE;
}

/* The keys commit @c is remembered under. */
static GPtrArray *
commit_keys(const Commit *c)
{
	GPtrArray *k = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < c->links->len; i++)
		g_ptr_array_add(k, ukey('l', c->links->pdata[i], NULL));
	if (c->patch_id != NULL)
		g_ptr_array_add(k, ukey('p', c->patch_id, NULL));
	if (*c->email != '\0' && *c->subject != '\0')
		g_ptr_array_add(k, ukey('a', c->email, c->subject));
	return k;
}

static gboolean
drop_commit(Docs *d, const char *commit, guint *lost, GError **error)
{
	g_autofree char *xk = ukey('x', commit, NULL);
	g_autoptr(json_t) x = uget(d->txn, xk, error);
	json_t *v;
	gsize i;

	if (x == NULL)
		return error == NULL || *error == NULL;
	json_array_foreach(json_object_get(x, "k"), i, v)
		if (!sighting_remove(d->txn, json_string_value(v), commit, error))
			return FALSE;
	json_array_foreach(json_object_get(x, "s"), i, v)
		if (!unrecord(d, json_string_value(v), commit, lost, error))
			return FALSE;
	return pgate_store_upstream_delete(d->txn, xk, error);
}

static gboolean
update_txn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Update *u = payload;
	g_autofree char *hk = ukey('h', u->repo, u->branch);
	Docs d;
	gboolean ok = TRUE;

	docs_init(&d, txn, u->now);
	u->lost = 0;
	for (guint i = 0; ok && i < u->dropped->len; i++)
		ok = drop_commit(&d, u->dropped->pdata[i], &u->lost, error);
	for (guint i = 0; ok && i < u->commits->len; i++) {
		const Commit *c = u->commits->pdata[i];
		g_autoptr(GPtrArray) keys = commit_keys(c);
		g_autoptr(GHashTable) touched = g_hash_table_new_full(
			g_str_hash, g_str_equal, g_free, NULL);
		gboolean found = FALSE;
		json_t *x, *s;
		GHashTableIter it;
		gpointer sid;

		d.touched = touched;
		ok = match_link(&d, c, u, &found, error);
		if (ok && !found)
			ok = match_patch_id(&d, c, u, &found, error);
		if (ok && !found)
			ok = match_subject(&d, c, u, &found, error);
		d.touched = NULL;
		for (guint k = 0; ok && k < keys->len; k++)
			ok = sighting_add(txn, keys->pdata[k], c, u->repo,
					  u->branch, error);
		if (!ok)
			break;
		x = json_object();
		json_object_set_new(x, "k", json_array());
		for (guint k = 0; k < keys->len; k++)
			json_array_append_new(json_object_get(x, "k"),
					      json_string(keys->pdata[k]));
		s = json_array();
		json_object_set_new(x, "s", s);
		g_hash_table_iter_init(&it, touched);
		while (g_hash_table_iter_next(&it, &sid, NULL))
			json_array_append_new(s, json_string(sid));
		{
			g_autofree char *xk = ukey('x', c->oid, NULL);

			ok = uput(txn, xk, x, error);
		}
		json_decref(x);
	}
	ok = ok && docs_write(&d, NULL, error) &&
	     pgate_store_upstream_put(txn, hk, u->head, strlen(u->head), error);
	if (ok) {
		GHashTableIter it;
		gpointer sid;

		g_hash_table_remove_all(u->pending);
		g_hash_table_iter_init(&it, d.dirty);
		while (g_hash_table_iter_next(&it, &sid, NULL))
			g_hash_table_add(u->pending, g_strdup(sid));
		u->matched = d.matched;
	}
	docs_clear(&d);
	return ok;
}

static gboolean
last_read(PgateStore *store, const char *repo, const char *branch,
	  git_oid *out, gboolean *out_found, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autofree char *hk = ukey('h', repo, branch);
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
		(GDestroyNotify)commit_free);
	g_autoptr(GPtrArray) dropped = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GHashTable) pending = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GError) local = NULL;
	git_oid head, last;
	gboolean have_last;
	char hex[GIT_OID_HEXSZ + 1];
	Update u = { c, path, branch, hex, commits, dropped, now, 0, 0, NULL,
		     pending };
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

typedef struct {
	const PgateUpstreamConfig *cfg;
	const PgateSeriesRec *rec;
	gint64 now;
	guint matched;
} Check;

/* The first sighting under @key, whose commit is then @msgid's. */
static gboolean
check_key(Docs *d, const char *sid, const char *msgid, const char *key,
	  PgateUpstreamRule rule, gboolean *found, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = uget(d->txn, key, &local);
	json_t *s;
	gsize i;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	json_array_foreach(v, i, s) {
		const char *commit = json_string_value(json_object_get(s, "c"));
		const char *repo = json_string_value(json_object_get(s, "r"));
		const char *branch = json_string_value(json_object_get(s, "b"));
		g_autofree char *xk = NULL;
		g_autoptr(json_t) x = NULL;

		if (commit == NULL || repo == NULL || branch == NULL)
			continue;
		if (!record(d, sid, msgid, commit, repo, branch, rule, error))
			return FALSE;
		*found = TRUE;
		/* so that a rewrite that drops the commit undoes this too */
		xk = ukey('x', commit, NULL);
		x = uget(d->txn, xk, NULL);
		if (x != NULL) {
			json_t *sl = json_object_get(x, "s");
			gboolean has = FALSE;
			json_t *e;
			gsize j;

			json_array_foreach(sl, j, e)
				has = has || g_strcmp0(json_string_value(e),
						       sid) == 0;
			if (!has && json_is_array(sl)) {
				json_array_append_new(sl, json_string(sid));
				if (!uput(d->txn, xk, x, error))
					return FALSE;
			}
		}
	}
	return TRUE;
}

static gboolean
check_txn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	Check *c = payload;
	const PgateSeriesRec *rec = c->rec;
	Docs d;
	json_t *doc, *patches;
	gboolean ok = TRUE;

	docs_init(&d, txn, c->now);
	doc = doc_get(&d, rec->id, error);
	if (doc == NULL) {
		docs_clear(&d);
		return FALSE;
	}
	patches = json_object_get(doc, "patches");
	for (guint i = 0; ok && i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		g_autoptr(PgateMessageRec) m = NULL;
		g_autofree char *lk = NULL, *pk = NULL, *ak = NULL, *norm = NULL;
		gboolean found = FALSE;

		if (json_object_get(patches, p->msgid) != NULL)
			continue;
		lk = ukey('l', p->msgid, NULL);
		ok = check_key(&d, rec->id, p->msgid, lk,
			       PGATE_UPSTREAM_RULE_LINK, &found, error);
		if (ok && !found && p->patch_id != NULL) {
			pk = ukey('p', p->patch_id, NULL);
			ok = check_key(&d, rec->id, p->msgid, pk,
				       PGATE_UPSTREAM_RULE_PATCH_ID, &found,
				       error);
		}
		if (!ok || found)
			continue;
		m = pgate_store_message_get(txn, p->num, NULL);
		if (m == NULL || m->from_email == NULL || *m->from_email == '\0')
			continue;
		{
			g_autofree char *email = g_ascii_strdown(m->from_email,
								 -1);

			norm = pgate_upstream_subject_normalize(
				m->name ? m->name : m->subject);
			ak = ukey('a', email, norm);
		}
		ok = check_key(&d, rec->id, p->msgid, ak,
			       PGATE_UPSTREAM_RULE_SUBJECT, &found, error);
	}
	if (ok)
		ok = docs_write(&d, NULL, error);
	if (ok) {
		patches = json_object_get(doc_get(&d, rec->id, NULL), "patches");
		c->matched = 0;
		for (guint i = 0; i < rec->patches->len; i++) {
			const PgateSeriesPatch *p = rec->patches->pdata[i];

			c->matched += json_object_get(patches, p->msgid) != NULL;
		}
	}
	docs_clear(&d);
	return ok;
}

gboolean
pgate_upstream_series_check(PgateStore *store, const PgateUpstreamConfig *c,
			    const PgateSeriesRec *rec, guint *out_matched,
			    GError **error)
{
	Check ck = { c, rec, g_get_real_time() / G_USEC_PER_SEC, 0 };
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
	}
	if (have->len == rec->patches->len) {
		*out_matched = have->len;
		return TRUE;
	}
	/* look first, write only when something is found */
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);
		gboolean any = FALSE;

		if (txn == NULL)
			return FALSE;
		for (guint i = 0; !any && i < rec->patches->len; i++) {
			const PgateSeriesPatch *p = rec->patches->pdata[i];
			g_autofree char *lk = ukey('l', p->msgid, NULL);
			g_autofree char *pk = p->patch_id
				? ukey('p', p->patch_id, NULL) : NULL;
			g_autoptr(PgateMessageRec) m = NULL;
			g_autoptr(GBytes) b = NULL;

			b = pgate_store_upstream_get(txn, lk, NULL);
			if (b == NULL && pk != NULL)
				b = pgate_store_upstream_get(txn, pk, NULL);
			if (b == NULL &&
			    (m = pgate_store_message_get(txn, p->num, NULL)) &&
			    m->from_email != NULL) {
				g_autofree char *email = g_ascii_strdown(
					m->from_email, -1);
				g_autofree char *norm =
					pgate_upstream_subject_normalize(
						m->name ? m->name : m->subject);
				g_autofree char *ak = ukey('a', email, norm);

				b = pgate_store_upstream_get(txn, ak, NULL);
			}
			any = b != NULL;
		}
		if (!any) {
			*out_matched = have->len;
			return TRUE;
		}
	}
	if (!pgate_store_write(store, check_txn, &ck, error))
		return FALSE;
	*out_matched = ck.matched;
	return TRUE;
}

GPtrArray *
pgate_upstream_series_read(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			   GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_upstream_match_free);
	g_autofree char *key = g_strdup_printf("%s/upstream", rec->id);
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);
	g_autoptr(json_t) doc = NULL;
	json_t *patches;

	if (b == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		return g_steal_pointer(&out);
	}
	doc = json_loadb(g_bytes_get_data(b, NULL), g_bytes_get_size(b), 0,
			 NULL);
	patches = json_object_get(doc, "patches");
	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		json_t *m = json_object_get(patches, p->msgid);
		PgateUpstreamMatch *um;

		if (!json_is_object(m))
			continue;
		um = g_new0(PgateUpstreamMatch, 1);
		um->msgid = g_strdup(p->msgid);
		um->commit = g_strdup(json_string_value(json_object_get(m,
								       "commit")));
		um->repo = g_strdup(json_string_value(json_object_get(m, "repo")));
		um->branch = g_strdup(json_string_value(json_object_get(m,
								       "branch")));
		um->rule = rule_from_string(json_string_value(
			json_object_get(m, "rule")));
		um->changes = json_is_true(json_object_get(m, "changes"));
		um->at = json_integer_value(json_object_get(m, "at"));
		g_ptr_array_add(out, um);
	}
	return g_steal_pointer(&out);
}
