/* series-json.c - series as JSON (format_version 1), and the canonical dump. */
#include "threading/threading-private.h"
#include "common/json.h"

#include <string.h>

static json_t *
trailers_json(const GPtrArray *a)
{
	json_t *arr = json_array();

	for (guint i = 0; i < a->len; i++) {
		const PgateTrailer *t = a->pdata[i];

		json_array_append_new(arr, json_pack("{s:s,s:s}", "name", t->name,
						     "value", t->value));
	}
	return arr;
}

/* The Message-ID inside "<id>", a lore URL or a bare id. */
static char *
msgid_of(const char *v)
{
	const char *lt = strchr(v, '<'), *gt;
	g_autofree char *s = NULL;
	char *at, *start, *end;

	if (lt && (gt = strchr(lt, '>')) != NULL)
		return g_strndup(lt + 1, (gsize)(gt - lt - 1));
	s = g_strstrip(g_strdup(v));
	at = strchr(s, '@');
	if (at == NULL)
		return g_strdup(s);
	start = at;
	while (start > s && start[-1] != '/')
		start--;
	end = at;
	while (*end && *end != '/' && *end != ' ')
		end++;
	return g_uri_unescape_segment(start, end, NULL);
}

/* A candidate of a dependency: a series, its rank, and where it came
 * in the lookup (the tie-break). */
typedef struct {
	char *id;
	int score;
	int order;
} Cand;

/* Adds series @id to @out with its score: +2 when its submitter is
 * @submitter (a dependency on one's own work is the likely reading, and
 * another person's look-alike must never win over it: issue #41), +1
 * for the version asked for or, without one, the newest of its chain
 * (@chain).  A series already there keeps its best score; @self, the
 * dependent series, is no candidate of its own. */
static void
cand_add(PgateStoreTxn *txn, GArray *out, const char *id, const char *self,
	 const char *submitter, gboolean chain, guint32 version, int order)
{
	g_autoptr(PgateSeriesRec) r = pgate_store_series_get(txn, id, NULL);
	int score = 0;

	if (r == NULL || (self != NULL && strcmp(self, id) == 0))
		return;
	if (version != 0)
		score += r->version == version;
	else if (chain)
		score += r->superseded_by == NULL;
	if (submitter != NULL &&
	    g_ascii_strcasecmp(r->submitter_email, submitter) == 0)
		score += 2;
	for (guint i = 0; i < out->len; i++) {
		Cand *c = &g_array_index(out, Cand, i);

		if (strcmp(c->id, id) == 0) {
			c->score = MAX(c->score, score);
			return;
		}
	}
	{
		Cand c = { g_strdup(id), score, order };

		g_array_append_val(out, c);
	}
}

/* The series under @key of index @idx, the later in the index first
 * among equals (the old resolution took the last). */
static void
cand_index(PgateStoreTxn *txn, GArray *out, PgateStoreIndex idx,
	   const char *key, const char *self, const char *submitter,
	   guint32 version)
{
	g_autoptr(GPtrArray) v = pgate_store_index_lookup(txn, idx, key, NULL);

	for (guint i = 0; v != NULL && i < v->len; i++) {
		gsize len;
		const char *d = g_bytes_get_data(v->pdata[i], &len);
		g_autofree char *id = g_strndup(d, len);

		cand_add(txn, out, id, self, submitter, TRUE, version, -(int)i);
	}
}

static gint
cand_cmp(gconstpointer a, gconstpointer b)
{
	const Cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void
cand_clear(gpointer p)
{
	g_free(((Cand *)p)->id);
}

GPtrArray *
pgate_threading_dep_candidates(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			       const PgateSeriesDep *d, GError **error)
{
	g_autoptr(GArray) c = g_array_new(FALSE, FALSE, sizeof(Cand));
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
	const char *who = rec != NULL ? rec->submitter_email : NULL;
	const char *self = rec != NULL ? rec->id : NULL;

	g_array_set_clear_func(c, cand_clear);
	if (strcmp(d->kind, "base-commit") == 0)
		return g_steal_pointer(&out);
	if (strcmp(d->kind, "prerequisite-patch-id") == 0) {
		cand_index(txn, c, PGATE_STORE_INDEX_PATCHID, d->value, self,
			   who, 0);
	} else if (strcmp(d->kind, "prerequisite-change-id") == 0) {
		g_autofree char *cid = g_strdup(d->value);
		char *colon = strchr(cid, ':');
		guint64 version = 0;

		if (colon) {
			*colon = '\0';	/* "change-id:vN" */
			if (colon[1] == 'v' || colon[1] == 'V')
				g_ascii_string_to_unsigned(colon + 2, 10, 1,
							   G_MAXUINT32,
							   &version, NULL);
		}
		cand_index(txn, c, PGATE_STORE_INDEX_CHANGE, g_strstrip(cid),
			   self, who, (guint32)version);
	} else {
		/* a Message-ID: the series of each stored copy of it, the
		 * first copy first (a copy under a reused ID is somebody
		 * else's message) */
		g_autofree char *id = msgid_of(d->value);
		g_autoptr(GArray) nums = pgate_store_message_lookup(txn, id,
								    error);

		if (nums == NULL)
			return NULL;
		for (guint i = 0; i < nums->len; i++) {
			g_autofree char *sid = NULL;

			if (!pgate_store_msg_series_get(
				    txn, g_array_index(nums, guint64, i), &sid,
				    error))
				return NULL;
			if (sid != NULL)
				cand_add(txn, c, sid, self, who, FALSE, 0,
					 (int)i);
		}
	}
	g_array_sort(c, cand_cmp);
	for (guint i = 0; i < c->len; i++)
		g_ptr_array_add(out, g_strdup(g_array_index(c, Cand, i).id));
	return g_steal_pointer(&out);
}

/* (transfer full) (nullable): the series that message @msgid is in (its
 * first stored copy's). */
char *
pgate_threading__series_of_msgid(PgateStoreTxn *txn, const char *msgid,
				 GError **error)
{
	g_autoptr(GArray) nums = pgate_store_message_lookup(txn, msgid, error);
	char *sid = NULL;

	if (nums == NULL)
		return NULL;
	for (guint i = 0; i < nums->len && sid == NULL; i++)
		if (!pgate_store_msg_series_get(
			    txn, g_array_index(nums, guint64, i), &sid, error))
			return NULL;
	return sid;
}

/* The series dependency @d of @rec means, as the JSON shows it: the
 * best candidate (pgate_threading_dep_candidates()). */
static char *
resolve(PgateStoreTxn *txn, const PgateSeriesRec *rec, const PgateSeriesDep *d)
{
	g_autoptr(GPtrArray) c = pgate_threading_dep_candidates(txn, rec, d,
								NULL);

	return c != NULL && c->len > 0 ? g_strdup(c->pdata[0]) : NULL;
}

/* Appends to @uni (borrowed pointers) the trailers of @from it does not
 * hold yet, in order. */
static void
union_add(GPtrArray *uni, const GPtrArray *from)
{
	for (guint j = 0; j < from->len; j++) {
		const PgateTrailer *t = from->pdata[j];
		gboolean dup = FALSE;

		for (guint k = 0; k < uni->len && !dup; k++) {
			const PgateTrailer *o = uni->pdata[k];

			dup = strcmp(o->name, t->name) == 0 &&
			      strcmp(o->value, t->value) == 0;
		}
		if (!dup)
			g_ptr_array_add(uni, (gpointer)t);
	}
}

static PgateSeriesPatch *
patch_copy(const PgateSeriesPatch *p)
{
	PgateSeriesPatch *c = pgate_series_patch_new();

	c->number = p->number;
	c->num = p->num;
	c->msgid = g_strdup(p->msgid);
	c->subject = g_strdup(p->subject);
	c->patch_id = g_strdup(p->patch_id);
	c->replaces = g_strdup(p->replaces);
	for (guint i = 0; i < p->trailers->len; i++) {
		const PgateTrailer *t = p->trailers->pdata[i];

		g_ptr_array_add(c->trailers, pgate_trailer_new(t->name, t->value));
	}
	return c;
}

GPtrArray *
pgate_threading_effective_patches(PgateStoreTxn *txn, const PgateSeriesRec *r,
				  char **out_base, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_patch_free);
	g_autoptr(PgateSeriesRec) base = NULL;
	g_autofree char *base_id = NULL;
	g_autoptr(GError) local = NULL;
	const PgateSeriesPatch *first = r->patches->len ? r->patches->pdata[0] : NULL;

	*out_base = NULL;
	if ((r->flags & PGATE_SERIES_FLAG_PARTIAL_REROLL) && first &&
	    first->replaces) {
		base_id = pgate_threading__series_of_msgid(txn, first->replaces, &local);
		if (base_id == NULL && local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
	}
	if (base_id != NULL) {
		base = pgate_store_series_get(txn, base_id, &local);
		if (base == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
						     PGATE_ERROR_NOT_FOUND)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
	}
	if (base == NULL) {
		for (guint i = 0; i < r->patches->len; i++)
			g_ptr_array_add(out, patch_copy(r->patches->pdata[i]));
		return g_steal_pointer(&out);
	}
	/* the base's patches, each replaced by the re-roll's of that number */
	for (guint i = 0; i < base->patches->len; i++) {
		const PgateSeriesPatch *b = base->patches->pdata[i];
		const PgateSeriesPatch *use = b;

		for (guint j = 0; j < r->patches->len; j++) {
			const PgateSeriesPatch *p = r->patches->pdata[j];

			if (p->replaces && strcmp(p->replaces, b->msgid) == 0)
				use = p;
		}
		g_ptr_array_add(out, patch_copy(use));
	}
	*out_base = g_steal_pointer(&base_id);
	return g_steal_pointer(&out);
}

static json_t *reroll_json(PgateStoreTxn *txn, const PgateSeriesRec *r);

/* The series ids of @a as a JSON array. */
static json_t *
ids_json(const GPtrArray *a)
{
	json_t *arr = json_array();

	for (guint i = 0; i < a->len; i++)
		json_array_append_new(arr, json_string(a->pdata[i]));
	return arr;
}

json_t *
pgate_threading_series_json(PgateStoreTxn *txn, const PgateSeriesRec *r)
{
	json_t *patches = json_array(), *deps = json_array();
	json_t *all = json_array(), *links, *j;
	g_autoptr(GPtrArray) uni = g_ptr_array_new();

	for (guint i = 0; i < r->patches->len; i++) {
		const PgateSeriesPatch *p = r->patches->pdata[i];

		json_array_append_new(patches, json_pack(
			"{s:i,s:s,s:s,s:o,s:o,s:o}", "number", (int)p->number,
			"msgid", p->msgid, "subject", p->subject ? p->subject : "",
			"patch_id", pgate_json_str_or_null(p->patch_id),
			"replaces", pgate_json_str_or_null(p->replaces),
			"trailers", trailers_json(p->trailers)));
		union_add(uni, p->trailers);
	}
	union_add(uni, r->cover_trailers);
	for (guint i = 0; i < r->deps->len; i++) {
		const PgateSeriesDep *d = r->deps->pdata[i];
		g_autofree char *sid = txn ? resolve(txn, r, d) : NULL;

		json_array_append_new(deps, json_pack(
			"{s:s,s:s,s:o}", "kind", d->kind, "value", d->value,
			"series", pgate_json_str_or_null(sid)));
	}
	for (guint k = 0; k < uni->len; k++) {
		const PgateTrailer *t = uni->pdata[k];

		json_array_append_new(all, json_pack("{s:s,s:s}", "name", t->name,
						     "value", t->value));
	}
	links = json_array();
	for (guint i = 0; i < r->linked_msgids->len; i++)
		json_array_append_new(links, json_string(r->linked_msgids->pdata[i]));
	j = json_pack(
		"{s:s,s:s,s:s,s:{s:o,s:s},s:I,s:i,s:i,s:i,s:b,s:s,s:o,s:o,"
		"s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		"id", r->id, "project", r->project, "name", r->name ? r->name : "",
		"submitter", "name", pgate_json_str_or_null(r->submitter_name),
		"email", r->submitter_email,
		"date", (json_int_t)r->date, "version", (int)r->version,
		"total", (int)r->total, "received", (int)r->patches->len,
		"complete", (r->flags & PGATE_SERIES_FLAG_COMPLETE) != 0,
		"kind", r->kind == PGATE_SERIES_KIND_PULL ? "pull" : "patches",
		"cover", pgate_json_str_or_null(r->cover), "patches", patches,
		"supersedes", pgate_json_str_or_null(r->supersedes),
		"superseded_by", pgate_json_str_or_null(r->superseded_by),
		"version_link_reason", pgate_json_str_or_null(r->link_reason),
		"resend_of", pgate_json_str_or_null(r->resend_of),
		"partial_reroll", (r->flags & PGATE_SERIES_FLAG_PARTIAL_REROLL) != 0,
		"change_id", pgate_json_str_or_null(r->change_id),
		"base_commit", pgate_json_str_or_null(r->base_commit),
		"depends_on", deps, "trailers", all,
		"cover_trailers", trailers_json(r->cover_trailers),
		"replies_into", ids_json(r->replies_into),
		"linked_msgids", links);
	json_object_set_new(j, "reroll", reroll_json(txn, r));
	links = json_array();
	for (guint i = 0; i < r->ref_msgids->len; i++)
		json_array_append_new(links, json_string(r->ref_msgids->pdata[i]));
	/* archive links that are neither versions nor dependencies */
	json_object_set_new(j, "references", links);
	return j;
}

/* "reroll": {"of": BASE, "patches": [{number, msgid, series}]}: what
 * applying a partial re-roll means (pgate_threading_effective_patches). */
static json_t *
reroll_json(PgateStoreTxn *txn, const PgateSeriesRec *r)
{
	g_autofree char *base = NULL;
	g_autoptr(GPtrArray) eff = NULL;
	json_t *list;

	if (txn == NULL || !(r->flags & PGATE_SERIES_FLAG_PARTIAL_REROLL))
		return json_null();
	eff = pgate_threading_effective_patches(txn, r, &base, NULL);
	if (eff == NULL || base == NULL)
		return json_null();
	list = json_array();
	for (guint i = 0; i < eff->len; i++) {
		const PgateSeriesPatch *p = eff->pdata[i];
		gboolean own = FALSE;

		for (guint j = 0; j < r->patches->len && !own; j++)
			own = strcmp(((PgateSeriesPatch *)r->patches->pdata[j])->msgid,
				     p->msgid) == 0;
		json_array_append_new(list, json_pack(
			"{s:i,s:s,s:s}", "number", (int)p->number, "msgid", p->msgid,
			"series", own ? r->id : base));
	}
	return json_pack("{s:s,s:o}", "of", base, "patches", list);
}

char *
pgate_threading_dump(PgateStoreTxn *txn, GError **error)
{
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GError) local = NULL;
	GString *out = g_string_new(NULL);

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &local)) {
		json_t *j = pgate_threading_series_json(txn, s);
		char *text;

		json_object_set_new(j, "replied_by", ids_json(s->replied_by));
		/* message numbers depend on arrival order: leave them out */
		text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
		g_string_append(out, text);
		g_string_append_c(out, '\n');
		free(text);
		json_decref(j);
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		g_string_free(out, TRUE);
		return NULL;
	}
	return g_string_free(out, FALSE);
}
