/* remembered.c - merge detection's side of the store (upstream-private.h).
 *
 * The store's upstream database (store/upstream-db.c) holds, keyed by a
 * letter, a newline and the rest:
 *
 *   h REPO\nBRANCH      the branch's last commit read (40 hex)
 *   l MSGID             [{"c": COMMIT, "r": REPO, "b": BRANCH}, ...]:
 *   p PATCH-ID            commits naming MSGID, with that patch-id, by
 *   c EMAIL\nCORE         that author with that subject once prefixes,
 *                         case and punctuation are off (the "sightings":
 *                         what a patch stored later looks up)
 *   x COMMIT            the commit as matching read it, the branches it
 *                       is on, its keys, the series its decision named
 *
 * A commit's decision (match.c) is written down by taking every entry of
 * the commit out of the documents of the series it named before and
 * putting in what it says now; a document that comes out the same is
 * not written.  So deciding again is harmless, and a decision made in
 * another order comes out the same.
 */
#include "upstream/upstream-private.h"

#include <string.h>

void
pgate_upstream__ctx_init(UCtx *x, PgateStoreTxn *txn,
			 const PgateUpstreamConfig *cfg, gint64 now)
{
	memset(x, 0, sizeof *x);
	x->txn = txn;
	x->cfg = cfg;
	x->now = now;
	x->docs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					(GDestroyNotify)json_decref);
	x->dirty = g_hash_table_new(g_str_hash, g_str_equal);
	x->series = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					  (GDestroyNotify)pgate_series_rec_free);
}

void
pgate_upstream__ctx_clear(UCtx *x)
{
	g_clear_pointer(&x->dirty, g_hash_table_unref);
	g_clear_pointer(&x->docs, g_hash_table_unref);
	g_clear_pointer(&x->names, g_hash_table_unref);
	g_clear_pointer(&x->authors, g_hash_table_unref);
	g_clear_pointer(&x->spans, g_hash_table_unref);
	g_clear_pointer(&x->chains, g_hash_table_unref);
	g_clear_pointer(&x->series, g_hash_table_unref);
}

const PgateSeriesRec *
pgate_upstream__series(UCtx *x, const char *sid, GError **error)
{
	gpointer v;
	g_autoptr(GError) local = NULL;
	PgateSeriesRec *s;

	if (g_hash_table_lookup_extended(x->series, sid, NULL, &v))
		return v;
	s = pgate_store_series_get(x->txn, sid, &local);
	if (s == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
					  PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	g_hash_table_insert(x->series, g_strdup(sid), s);
	return s;
}

char *
pgate_upstream__key(char kind, const char *a, const char *b)
{
	return b ? g_strdup_printf("%c\n%s\n%s", kind, a, b)
		 : g_strdup_printf("%c\n%s", kind, a);
}

json_t *
pgate_upstream__get(PgateStoreTxn *txn, const char *key, GError **error)
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

gboolean
pgate_upstream__put(PgateStoreTxn *txn, const char *key, json_t *v,
		    GError **error)
{
	g_autofree char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	return pgate_store_upstream_put(txn, key, s, strlen(s), error);
}

/* ---- SERIES/upstream ---- */

json_t *
pgate_upstream__doc_get(UCtx *x, const char *sid, GError **error)
{
	json_t *doc = g_hash_table_lookup(x->docs, sid);
	g_autofree char *key = NULL;
	g_autoptr(GBytes) b = NULL;
	g_autoptr(GError) local = NULL;

	if (doc != NULL)
		return doc;
	key = g_strdup_printf("%s/upstream", sid);
	b = pgate_store_table_get(x->txn, PGATE_STORE_TABLE_STAGE, key, &local);
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
	g_hash_table_insert(x->docs, g_strdup(sid), doc);
	return doc;
}

gboolean
pgate_upstream__docs_write(UCtx *x, GHashTable *changed, GError **error)
{
	GHashTableIter it;
	gpointer sid;

	g_hash_table_iter_init(&it, x->dirty);
	while (g_hash_table_iter_next(&it, &sid, NULL)) {
		json_t *doc = g_hash_table_lookup(x->docs, sid);
		g_autofree char *key = g_strdup_printf("%s/upstream",
						       (char *)sid);
		g_autofree char *s = NULL;

		if (json_object_size(json_object_get(doc, "possible")) == 0)
			json_object_del(doc, "possible");
		s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
		if (!pgate_store_table_put(x->txn, PGATE_STORE_TABLE_STAGE, key,
					   s, strlen(s), error))
			return FALSE;
		/* the next pipeline pass visits it, finished or not */
		if (!pgate_store_active_mark(x->txn, sid, error))
			return FALSE;
		if (changed != NULL)
			g_hash_table_add(changed, g_strdup(sid));
	}
	return TRUE;
}

static gboolean
is_commit(json_t *e, const char *oid)
{
	return g_strcmp0(json_string_value(json_object_get(e, "commit")),
			 oid) == 0;
}

/* Takes every entry of commit @oid out of @doc; the "at" of its
 * matches into @ats (msgid -> json integer). */
static void
doc_remove_commit(json_t *doc, const char *oid, GHashTable *ats)
{
	json_t *patches = json_object_get(doc, "patches");
	json_t *possible = json_object_get(doc, "possible");
	json_t *m, *v;
	const char *msgid;
	void *tmp;

	json_object_foreach_safe(patches, tmp, msgid, m) {
		json_t *also = json_object_get(m, "also");

		for (gsize i = json_array_size(also); i > 0; i--)
			if (is_commit(json_array_get(also, i - 1), oid))
				json_array_remove(also, i - 1);
		if (!is_commit(m, oid))
			continue;
		if (json_is_integer(json_object_get(m, "at")))
			g_hash_table_insert(ats, g_strdup(msgid), json_incref(
				json_object_get(m, "at")));
		if (json_array_size(also) > 0) {
			/* another commit or branch has it still */
			json_t *next = json_deep_copy(json_array_get(also, 0));

			json_array_remove(also, 0);
			if (json_array_size(also) > 0)
				json_object_set(next, "also", also);
			json_object_set_new(patches, msgid, next);
			continue;
		}
		json_object_del(patches, msgid);
	}
	json_object_foreach_safe(possible, tmp, msgid, v) {
		for (gsize i = json_array_size(v); i > 0; i--)
			if (is_commit(json_array_get(v, i - 1), oid))
				json_array_remove(v, i - 1);
		if (json_array_size(v) == 0)
			json_object_del(possible, msgid);
	}
}

static PgateUpstreamRank
rank_of(json_t *m)
{
	PgateUpstreamRule rule = pgate_upstream__rule_from_string(
		json_string_value(json_object_get(m, "rule")));

	return pgate_upstream__rank_from_string(
		json_string_value(json_object_get(m, "rank")), rule);
}

/* Adds match @e (stolen) for @msgid: the main one when it is the first
 * or has stronger evidence, else among "also" (once a commit and
 * branch). */
static void
doc_add_match(json_t *doc, const char *msgid, json_t *e)
{
	json_t *patches = json_object_get(doc, "patches");
	json_t *m = json_object_get(patches, msgid), *also;

	if (m == NULL) {
		json_object_set_new(patches, msgid, e);
		return;
	}
	also = json_object_get(m, "also");
	if (rank_of(e) < rank_of(m)) {
		json_t *old = json_deep_copy(m);

		json_object_del(old, "also");
		json_object_del(old, "lost");
		also = also ? json_incref(also) : json_array();
		json_array_insert_new(also, 0, old);
		while (json_array_size(also) > ALSO_MAX)
			json_array_remove(also, ALSO_MAX);
		json_object_set_new(e, "also", also);
		json_object_set_new(patches, msgid, e);
		return;
	}
	for (gsize i = 0; i < json_array_size(also) + 1; i++) {
		json_t *a = i == 0 ? m : json_array_get(also, i - 1);

		if (json_equal(json_object_get(a, "commit"),
			       json_object_get(e, "commit")) &&
		    json_equal(json_object_get(a, "repo"),
			       json_object_get(e, "repo")) &&
		    json_equal(json_object_get(a, "branch"),
			       json_object_get(e, "branch"))) {
			json_decref(e);
			return;
		}
	}
	if (also == NULL) {
		also = json_array();
		json_object_set_new(m, "also", also);
	}
	json_object_del(e, "lost");
	if (json_array_size(also) < ALSO_MAX)
		json_array_append(also, e);
	json_decref(e);
}

static void
doc_add_hint(json_t *doc, const char *msgid, json_t *h)
{
	json_t *possible = json_object_get(doc, "possible"), *v;

	if (!json_is_object(possible)) {
		possible = json_object();
		json_object_set_new(doc, "possible", possible);
	}
	v = json_object_get(possible, msgid);
	if (v == NULL) {
		v = json_array();
		json_object_set_new(possible, msgid, v);
	}
	if (json_array_size(v) < HINTS_MAX)
		json_array_append(v, h);
	json_decref(h);
}

/* ---- a commit's record ---- */

static json_t *
strv_json(GPtrArray *a)
{
	json_t *v = json_array();

	for (guint i = 0; i < a->len; i++)
		json_array_append_new(v, json_string(a->pdata[i]));
	return v;
}

/* The keys a patch stored later finds commit @c under. */
static GPtrArray *
commit_keys(const UCommit *c)
{
	GPtrArray *k = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < c->links->len; i++)
		g_ptr_array_add(k, pgate_upstream__key('l', c->links->pdata[i],
						       NULL));
	if (c->patch_id != NULL)
		g_ptr_array_add(k, pgate_upstream__key('p', c->patch_id, NULL));
	if (*c->email != '\0' && *c->core != '\0')
		g_ptr_array_add(k, pgate_upstream__key('c', c->email, c->core));
	return k;
}

/* Writes @c into its record @xr ("k": its keys, with those of an older
 * record, which a rewrite must still undo). */
static void
commit_to_x(const UCommit *c, json_t *xr, GPtrArray *keys)
{
	json_t *f = json_array(), *k = json_object_get(xr, "k");

	if (!json_is_array(k)) {
		k = json_array();
		json_object_set_new(xr, "k", k);
	}
	for (guint i = 0; i < keys->len; i++) {
		gboolean has = FALSE;
		json_t *e;
		gsize j;

		json_array_foreach(k, j, e)
			has = has || g_strcmp0(json_string_value(e),
					       keys->pdata[i]) == 0;
		if (!has)
			json_array_append_new(k, json_string(keys->pdata[i]));
	}
	for (guint i = 0; i < c->sketch_len; i++)
		json_array_append_new(f, json_integer(c->sketch[i]));
	json_object_set_new(xr, "e", json_string(c->email));
	json_object_set_new(xr, "t", json_integer(c->when));
	json_object_set_new(xr, "j", json_string(c->subject));
	json_object_set_new(xr, "o", json_string(c->core));
	json_object_set_new(xr, "l", strv_json(c->links));
	json_object_set_new(xr, "p", c->patch_id ? json_string(c->patch_id)
						 : json_null());
	json_object_set_new(xr, "f", f);
}

UCommit *
pgate_upstream__commit_from_x(const char *oid, json_t *xr)
{
	g_autoptr(UCommit) c = NULL;
	json_t *v;
	gsize i;

	if (!json_is_integer(json_object_get(xr, "t")) ||
	    strlen(oid) >= sizeof c->oid)
		return NULL;
	c = pgate_upstream__commit_new();
	g_strlcpy(c->oid, oid, sizeof c->oid);
	c->email = g_strdup(json_string_value(json_object_get(xr, "e")));
	c->when = json_integer_value(json_object_get(xr, "t"));
	c->subject = g_strdup(json_string_value(json_object_get(xr, "j")));
	c->core = g_strdup(json_string_value(json_object_get(xr, "o")));
	if (c->email == NULL || c->subject == NULL || c->core == NULL)
		return NULL;
	json_array_foreach(json_object_get(xr, "l"), i, v)
		if (json_is_string(v) && c->links->len < LINKS_MAX)
			g_ptr_array_add(c->links, g_strdup(json_string_value(v)));
	c->patch_id = g_strdup(json_string_value(json_object_get(xr, "p")));
	json_array_foreach(json_object_get(xr, "f"), i, v)
		if (c->sketch_len < PGATE_DIFF_SKETCH_MAX)
			c->sketch[c->sketch_len++] =
				(guint32)json_integer_value(v);
	return g_steal_pointer(&c);
}

/* Adds (@add) or removes @repo @branch from the record's branches. */
static void
x_branch(json_t *xr, const char *repo, const char *branch, gboolean add)
{
	json_t *b = json_object_get(xr, "b");

	if (!json_is_array(b)) {
		b = json_array();
		json_object_set_new(xr, "b", b);
	}
	for (gsize i = json_array_size(b); i > 0; i--) {
		json_t *e = json_array_get(b, i - 1);

		if (g_strcmp0(json_string_value(json_array_get(e, 0)), repo) ||
		    g_strcmp0(json_string_value(json_array_get(e, 1)), branch))
			continue;
		if (add)
			return;
		json_array_remove(b, i - 1);
	}
	if (add && json_array_size(b) < BRANCHES_MAX)
		json_array_append_new(b, json_pack("[ss]", repo, branch));
}

/* ---- sightings ---- */

static gboolean
sighting_add(PgateStoreTxn *txn, const char *key, const char *oid,
	     const char *repo, const char *branch, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = pgate_upstream__get(txn, key, &local);

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
			      oid) == 0 &&
		    g_strcmp0(json_string_value(json_object_get(s, "r")),
			      repo) == 0 &&
		    g_strcmp0(json_string_value(json_object_get(s, "b")),
			      branch) == 0)
			return TRUE;
	}
	if (json_array_size(v) >= SIGHTINGS_MAX)
		json_array_remove(v, 0);
	json_array_append_new(v, json_pack("{s:s,s:s,s:s}", "c", oid, "r",
					   repo, "b", branch));
	return pgate_upstream__put(txn, key, v, error);
}

/* Removes @oid's sightings under @key: on @repo @branch, or (@branch
 * %NULL) all of them. */
static gboolean
sighting_remove(PgateStoreTxn *txn, const char *key, const char *oid,
		const char *repo, const char *branch, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) v = pgate_upstream__get(txn, key, &local);
	gboolean changed = FALSE;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	for (gsize i = json_array_size(v); i > 0; i--) {
		json_t *s = json_array_get(v, i - 1);

		if (g_strcmp0(json_string_value(json_object_get(s, "c")),
			      oid) != 0 ||
		    (branch != NULL &&
		     (g_strcmp0(json_string_value(json_object_get(s, "r")),
				repo) != 0 ||
		      g_strcmp0(json_string_value(json_object_get(s, "b")),
				branch) != 0)))
			continue;
		json_array_remove(v, i - 1);
		changed = TRUE;
	}
	if (!changed)
		return TRUE;
	if (json_array_size(v) == 0)
		return pgate_store_upstream_delete(txn, key, error);
	return pgate_upstream__put(txn, key, v, error);
}

/* ---- a decision written down ---- */

static json_t *
lost_json(const UCand *w, GPtrArray *cands)
{
	json_t *lost = json_array();

	for (guint i = 0; i < cands->len; i++) {
		const UCand *k = cands->pdata[i];

		if (k->by != w || k->why == NULL ||
		    (k->fate != FATE_CHAIN && k->fate != FATE_HINT) ||
		    json_array_size(lost) >= LOST_MAX)
			continue;
		json_array_append_new(lost, json_pack(
			"{s:s,s:s,s:i,s:s}", "msgid", k->msg->msgid,
			"series", k->series->id, "version",
			(int)k->series->version, "why", k->why));
	}
	return lost;
}

static json_t *
match_json(UCtx *x, const UCommit *c, const UCand *k, GPtrArray *cands,
	   json_t *branch, GHashTable *ats)
{
	json_t *at = g_hash_table_lookup(ats, k->msg->msgid);

	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:I,s:s,s:o}",
			 "commit", c->oid,
			 "repo", json_string_value(json_array_get(branch, 0)),
			 "branch", json_string_value(json_array_get(branch, 1)),
			 "rule", pgate_upstream_rule_to_string(k->rule),
			 "rank", pgate_upstream_rank_to_string(k->rank),
			 "changes", k->rank == PGATE_UPSTREAM_RANK_APPLIED,
			 "at", at ? json_integer_value(at) : (json_int_t)x->now,
			 "evidence", k->evidence, "lost", lost_json(k, cands));
}

static json_t *
hint_json(const UCommit *c, const UCand *k, json_t *branch)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "commit", c->oid,
			 "repo", json_string_value(json_array_get(branch, 0)),
			 "branch", json_string_value(json_array_get(branch, 1)),
			 "rule", pgate_upstream_rule_to_string(k->rule),
			 "evidence", k->evidence,
			 "why", k->why ? k->why : "");
}

/* Counts the patches @doc's update matched and unmatched. */
static void
count_changes(UCtx *x, json_t *before, json_t *after)
{
	json_t *b = json_object_get(before, "patches");
	json_t *a = json_object_get(after, "patches");
	const char *msgid;
	json_t *m;

	json_object_foreach(a, msgid, m)
		x->matched += json_object_get(b, msgid) == NULL;
	json_object_foreach(b, msgid, m)
		x->lost += json_object_get(a, msgid) == NULL;
}

/* Rewrites what @c says in the documents of @sid. */
static gboolean
apply_series(UCtx *x, const UCommit *c, const char *sid, json_t *xr,
	     GPtrArray *cands, GError **error)
{
	json_t *doc = pgate_upstream__doc_get(x, sid, error);
	json_t *branches = json_object_get(xr, "b");
	g_autoptr(json_t) before = NULL;
	g_autoptr(GHashTable) ats = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, (GDestroyNotify)json_decref);
	gpointer key;

	if (doc == NULL)
		return FALSE;
	before = json_deep_copy(doc);
	doc_remove_commit(doc, c->oid, ats);
	for (guint i = 0; json_array_size(branches) > 0 && i < cands->len;
	     i++) {
		const UCand *k = cands->pdata[i];
		json_t *br;
		gsize j;

		if (strcmp(k->series->id, sid) != 0)
			continue;
		if (k->fate == FATE_HINT)
			doc_add_hint(doc, k->msg->msgid,
				     hint_json(c, k, json_array_get(branches, 0)));
		if (k->fate != FATE_WIN)
			continue;
		json_array_foreach(branches, j, br)
			doc_add_match(doc, k->msg->msgid,
				      match_json(x, c, k, cands, br, ats));
	}
	if (json_equal(before, doc))
		return TRUE;
	count_changes(x, before, doc);
	if (g_hash_table_lookup_extended(x->docs, sid, &key, NULL))
		g_hash_table_add(x->dirty, key);
	return TRUE;
}

/* Writes @cands, the decision of @c, to the documents of every series it
 * names and every series the last one named; the record names the new
 * ones then ("s"), and every patch looked at ("m"). */
static gboolean
apply(UCtx *x, const UCommit *c, json_t *xr, GPtrArray *cands,
      GError **error)
{
	g_autoptr(GPtrArray) sids = g_ptr_array_new_with_free_func(g_free);
	json_t *olds = json_object_get(xr, "s"), *news = json_array(), *v;
	json_t *seen = json_array();
	gsize i;

	json_array_foreach(olds, i, v)
		if (json_is_string(v))
			g_ptr_array_add(sids, g_strdup(json_string_value(v)));
	for (guint k = 0; k < cands->len; k++) {
		const UCand *cand = cands->pdata[k];
		const char *sid = cand->series->id;
		gboolean has = FALSE;

		json_array_append_new(seen, json_string(cand->msg->msgid));
		if (cand->ignored)
			continue;
		for (guint j = 0; j < sids->len; j++)
			has = has || strcmp(sids->pdata[j], sid) == 0;
		if (!has)
			g_ptr_array_add(sids, g_strdup(sid));
		has = FALSE;
		json_array_foreach(news, i, v)
			has = has || strcmp(json_string_value(v), sid) == 0;
		if (!has && json_array_size(news) < SERIES_MAX)
			json_array_append_new(news, json_string(sid));
	}
	json_object_set_new(xr, "s", news);
	json_object_set_new(xr, "m", seen);
	for (guint k = 0; k < sids->len; k++)
		if (!apply_series(x, c, sids->pdata[k], xr, cands, error))
			return FALSE;
	return TRUE;
}

/* @c decides and its record @xr (written under @xk) follows. */
static gboolean
decide_and_write(UCtx *x, const UCommit *c, const char *xk, json_t *xr,
		 GError **error)
{
	g_autoptr(GPtrArray) cands = pgate_upstream__decide(x, c, error);

	return cands != NULL && apply(x, c, xr, cands, error) &&
	       pgate_upstream__put(x->txn, xk, xr, error);
}

gboolean
pgate_upstream__commit_seen(UCtx *x, const UCommit *c, const char *repo,
			    const char *branch, GError **error)
{
	g_autofree char *xk = pgate_upstream__key('x', c->oid, NULL);
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) xr = pgate_upstream__get(x->txn, xk, &local);
	g_autoptr(GPtrArray) keys = commit_keys(c);

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (!json_is_object(xr)) {
		json_decref(xr);
		xr = json_object();
	}
	commit_to_x(c, xr, keys);
	x_branch(xr, repo, branch, TRUE);
	for (guint i = 0; i < keys->len; i++)
		if (!sighting_add(x->txn, keys->pdata[i], c->oid, repo, branch,
				  error))
			return FALSE;
	return decide_and_write(x, c, xk, xr, error);
}

gboolean
pgate_upstream__commit_left(UCtx *x, const char *oid, const char *repo,
			    const char *branch, GError **error)
{
	g_autofree char *xk = pgate_upstream__key('x', oid, NULL);
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) xr = pgate_upstream__get(x->txn, xk, &local);
	g_autoptr(UCommit) c = NULL;
	g_autoptr(GPtrArray) none = g_ptr_array_new();
	json_t *v;
	gsize i;

	if (xr == NULL) {
		if (local != NULL)
			g_propagate_error(error, g_steal_pointer(&local));
		return local == NULL;
	}
	x_branch(xr, repo, branch, FALSE);
	c = pgate_upstream__commit_from_x(oid, xr);
	if (c != NULL && json_array_size(json_object_get(xr, "b")) > 0) {
		json_array_foreach(json_object_get(xr, "k"), i, v)
			if (!sighting_remove(x->txn, json_string_value(v), oid,
					     repo, branch, error))
				return FALSE;
		return decide_and_write(x, c, xk, xr, error);
	}
	/* on no branch any more (or a record of an older version): gone */
	if (c == NULL) {
		c = pgate_upstream__commit_new();
		g_strlcpy(c->oid, oid, sizeof c->oid);
	}
	json_array_foreach(json_object_get(xr, "k"), i, v)
		if (!sighting_remove(x->txn, json_string_value(v), oid, NULL,
				     NULL, error))
			return FALSE;
	json_object_set_new(xr, "b", json_array());
	return apply(x, c, xr, none, error) &&
	       pgate_store_upstream_delete(x->txn, xk, error);
}

gboolean
pgate_upstream__commit_redecide(UCtx *x, const char *oid, GError **error)
{
	g_autofree char *xk = pgate_upstream__key('x', oid, NULL);
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) xr = pgate_upstream__get(x->txn, xk, &local);
	g_autoptr(UCommit) c = NULL;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	c = xr ? pgate_upstream__commit_from_x(oid, xr) : NULL;
	return c == NULL || decide_and_write(x, c, xk, xr, error);
}
