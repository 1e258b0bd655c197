/* series.c - forming the series of a unit.
 *
 * A set-based simulation of Patchwork's parser (docs/threading.md): the
 * unit's patches, covers and pull requests are taken in canonical order
 * (date, Message-ID), and each Message-ID a series member names is owned
 * by the first series that names it (Patchwork's SeriesReference).  Since
 * the input is a set sorted one way, the result does not depend on the
 * order in which the messages arrived.
 */
#include "threading/threading-private.h"

#include <string.h>

typedef struct FSeries FSeries;
struct FSeries {
	guint order;
	PgateMessageRec *creator;
	guint32 version;
	guint32 total;
	gint64 date;
	char *sender;
	gboolean pull;
	PgateMessageRec *cover;
	GPtrArray *members;     /* PgateMessageRec*, borrowed */
	GHashTable *slots;      /* number -> PgateMessageRec* */
	GHashTable *replaces;   /* (nullable): PgateMessageRec* -> const
				 * char*; made for the first (few series
				 * re-roll a patch) */
	char *id;
	PgateSeriesRec *rec;
};

static void
fseries_free(FSeries *s)
{
	g_free(s->sender);
	g_ptr_array_unref(s->members);
	g_hash_table_unref(s->slots);
	if (s->replaces != NULL)
		g_hash_table_unref(s->replaces);
	g_free(s->id);
	pgate_series_rec_free(s->rec);
	g_free(s);
}

typedef struct {
	GPtrArray *all;         /* FSeries*, in creation order (owned) */
	PgateThrIdMap *owner;   /* Message-ID -> FSeries* */
	GHashTable *member_of;  /* PgateMessageRec* -> FSeries* */
	PgateThrIdMap *byid;    /* Message-ID -> first PgateMessageRec* */
	GPtrArray *refs;        /* scratch for add_member() */
	const PgateThrFresh *fresh; /* (nullable): the unit's */
} Former;

static FSeries *
fseries_new(Former *f, PgateMessageRec *creator)
{
	FSeries *s = g_new0(FSeries, 1);

	s->order = f->all->len;
	s->creator = creator;
	s->version = creator->version;
	s->total = creator->total;
	s->date = pgate_threading__date(creator);
	s->sender = g_ascii_strdown(creator->from_email ? creator->from_email
							: "", -1);
	s->members = g_ptr_array_new();
	s->slots = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_ptr_array_add(f->all, s);
	return s;
}

static void
own(Former *f, const char *id, FSeries *s)
{
	pgate_threading__idmap_add(f->owner, id, s);
}

static gboolean
explicit_version(const PgateMessageRec *rec)
{
	if (rec->version > 1)
		return TRUE;
	for (guint i = 0; i < rec->prefixes->len; i++) {
		const char *p = rec->prefixes->pdata[i];

		if ((p[0] == 'v' || p[0] == 'V') && strcmp(p + 1, "1") == 0)
			return TRUE;
	}
	return FALSE;
}

static void
add_member(Former *f, FSeries *s, PgateMessageRec *m, guint32 number)
{
	GPtrArray *refs = f->refs;

	g_ptr_array_set_size(refs, 0);
	pgate_threading__refs_of(f->fresh, m, refs);
	g_ptr_array_add(s->members, m);
	g_hash_table_insert(s->slots, GUINT_TO_POINTER(number), m);
	g_hash_table_insert(f->member_of, m, s);
	/* SeriesReference: every ref and its own ID, first owner wins */
	own(f, m->msgid, s);
	for (guint i = 0; i < refs->len; i++)
		own(f, refs->pdata[i], s);
}

static FSeries *
find_by_refs(Former *f, const PgateMessageRec *m)
{
	FSeries *s;

	if ((s = pgate_threading__idmap_get(f->owner, m->msgid)) != NULL)
		return s;
	if (m->in_reply_to &&
	    (s = pgate_threading__idmap_get(f->owner, m->in_reply_to)) != NULL)
		return s;
	for (guint i = m->references->len; i-- > 0;)
		if ((s = pgate_threading__idmap_get(
			     f->owner, m->references->pdata[i])) != NULL)
			return s;
	return NULL;
}

static FSeries *
find_by_markers(Former *f, const PgateMessageRec *m)
{
	/* s->sender is lower-cased: compare without a lower-cased copy */
	const char *sender = m->from_email ? m->from_email : "";
	gint64 d = pgate_threading__date(m);

	for (guint i = 0; i < f->all->len; i++) {
		FSeries *s = f->all->pdata[i];

		if (s->pull || s->version != m->version || s->total != m->total ||
		    g_ascii_strcasecmp(s->sender, sender) != 0 ||
		    ABS(s->date - d) > PGATE_THREADING_MARKER_WINDOW ||
		    g_hash_table_contains(s->slots, GUINT_TO_POINTER(m->number)))
			continue;
		return s;
	}
	return NULL;
}

static void
place_patch(Former *f, PgateMessageRec *m)
{
	FSeries *s = NULL, *r;
	const char *parent;

	if (m->kind == PGATE_MSG_KIND_PULL || m->total == 0) {
		/* no marker: always a series of its own (Patchwork) */
		s = fseries_new(f, m);
		s->pull = m->kind == PGATE_MSG_KIND_PULL;
		s->total = 1;
		add_member(f, s, m, 1);
		goto replaces;
	}
	r = find_by_refs(f, m);
	if (r != NULL && !r->pull &&
	    (!explicit_version(m) || m->version == r->version)) {
		if (!g_hash_table_contains(r->slots,
					   GUINT_TO_POINTER(m->number)))
			s = r;
	} else {
		/* unthreaded, or threaded into another version: markers */
		s = find_by_markers(f, m);
	}
	if (s == NULL)
		s = fseries_new(f, m);
	add_member(f, s, m, m->number);

replaces:
	parent = pgate_threading__parent(m);
	if (parent != NULL) {
		PgateMessageRec *p = pgate_threading__idmap_get(f->byid,
								parent);
		FSeries *ps = p ? g_hash_table_lookup(f->member_of, p) : NULL;

		if (ps != NULL && ps != s && p->number == m->number &&
		    p->kind == PGATE_MSG_KIND_PATCH &&
		    ps->version < s->version) {
			if (s->replaces == NULL)
				s->replaces = g_hash_table_new(g_direct_hash,
							       g_direct_equal);
			g_hash_table_insert(s->replaces, m, p->msgid);
		}
	}
}

static void
place_cover(Former *f, PgateMessageRec *m)
{
	FSeries *s = pgate_threading__idmap_get(f->owner, m->msgid);

	if (s != NULL && s->cover == NULL && !s->pull) {
		s->cover = m;
		s->version = m->version;
		g_hash_table_insert(f->member_of, m, s);
		return;
	}
	s = fseries_new(f, m);
	s->cover = m;
	g_hash_table_insert(f->member_of, m, s);
	own(f, m->msgid, s);
}

static gint
rec_cmp_p(gconstpointer a, gconstpointer b)
{
	return pgate_threading__rec_cmp(*(PgateMessageRec *const *)a,
					*(PgateMessageRec *const *)b);
}

char *
pgate_threading__series_id(const char *anchor, guint salt)
{
	PgateSha256 ck;
	guint8 d[32];
	char *id = g_malloc(14);

	/* "s" and the first 12 hex digits of SHA-256(anchor), or of
	 * "anchor\n#salt" */
	pgate_sha256_init(&ck);
	pgate_sha256_update(&ck, anchor, strlen(anchor));
	if (salt != 0) {
		char b[16];
		int n = g_snprintf(b, sizeof b, "\n#%u", salt);

		pgate_sha256_update(&ck, b, (gsize)n);
	}
	pgate_sha256_finish(&ck, d);
	id[0] = 's';
	pgate_hex_encode(id + 1, d, 6);
	return id;
}

static gint
member_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
	FSeries *s = data;
	const PgateMessageRec *x = *(PgateMessageRec *const *)a;
	const PgateMessageRec *y = *(PgateMessageRec *const *)b;
	guint32 nx = s->pull || x->total == 0 ? 1 : x->number;
	guint32 ny = s->pull || y->total == 0 ? 1 : y->number;

	if (nx != ny)
		return nx < ny ? -1 : 1;
	return pgate_threading__rec_cmp(x, y);
}

static void
add_deps(PgateSeriesRec *r, const PgateMessageRec *src)
{
	static const struct {
		const char *kind;
		gsize off;
	} lists[] = {
		{ "prerequisite-patch-id", G_STRUCT_OFFSET(PgateMessageRec, prereq_patch_ids) },
		{ "prerequisite-change-id", G_STRUCT_OFFSET(PgateMessageRec, prereq_change_ids) },
		{ "prerequisite-message-id", G_STRUCT_OFFSET(PgateMessageRec, prereq_message_ids) },
		{ "depends-on", G_STRUCT_OFFSET(PgateMessageRec, depends_on) },
		{ "based-on", G_STRUCT_OFFSET(PgateMessageRec, based_on) },
	};

	if (src->base_commit)
		g_ptr_array_add(r->deps, pgate_series_dep_new("base-commit",
							      src->base_commit));
	for (gsize i = 0; i < G_N_ELEMENTS(lists); i++) {
		GPtrArray *a = G_STRUCT_MEMBER(GPtrArray *, src, lists[i].off);

		for (guint j = 0; j < a->len; j++)
			g_ptr_array_add(r->deps, pgate_series_dep_new(
				lists[i].kind, a->pdata[j]));
	}
}

static void
add_unique(GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return;
	g_ptr_array_add(a, g_strdup(s));
}

static gint
str_cmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
add_sorted_union(GPtrArray *to, FSeries *s, gsize off)
{
	if (s->cover != NULL) {
		GPtrArray *a = G_STRUCT_MEMBER(GPtrArray *, s->cover, off);

		for (guint j = 0; j < a->len; j++)
			add_unique(to, a->pdata[j]);
	}
	for (guint i = 0; i < s->members->len; i++) {
		GPtrArray *a = G_STRUCT_MEMBER(GPtrArray *, s->members->pdata[i],
					       off);

		for (guint j = 0; j < a->len; j++)
			add_unique(to, a->pdata[j]);
	}
	g_ptr_array_sort(to, str_cmp_p);
	if (to->len > PGATE_THREADING_MAX_LINKS)
		g_ptr_array_set_size(to, PGATE_THREADING_MAX_LINKS);
}

/* The Message-IDs that the cover and the members name by URL as older
 * versions (the "link" rule), and as references, sorted, at most
 * PGATE_THREADING_MAX_LINKS each. */
static void
add_links(PgateSeriesRec *r, FSeries *s)
{
	add_sorted_union(r->linked_msgids, s,
			 G_STRUCT_OFFSET(PgateMessageRec, linked_msgids));
	add_sorted_union(r->ref_msgids, s,
			 G_STRUCT_OFFSET(PgateMessageRec, ref_msgids));
}

static PgateSeriesRec *
build_rec(FSeries *s)
{
	PgateSeriesRec *r = pgate_series_rec_new();
	PgateMessageRec *first = NULL, *one, *src;

	g_ptr_array_sort_with_data(s->members, member_cmp, s);
	if (s->members->len > 0)
		first = s->members->pdata[0];
	one = g_hash_table_lookup(s->slots, GUINT_TO_POINTER(1));
	r->id = g_strdup(s->id);
	g_free(r->project);
	r->project = g_strdup(s->creator->list_id ? s->creator->list_id : "");
	src = s->cover ? s->cover : one ? one : first;
	r->name = g_strdup(src && src->name ? src->name : "");
	r->submitter_name = g_strdup(s->creator->from_name);
	g_free(r->submitter_email);
	r->submitter_email = g_strdup(s->sender);
	r->date = s->date;
	r->version = s->version;
	r->total = s->total;
	r->kind = s->pull ? PGATE_SERIES_KIND_PULL : PGATE_SERIES_KIND_PATCHES;
	if (s->cover) {
		r->cover = g_strdup(s->cover->msgid);
		r->cover_num = s->cover->num;
	}
	for (guint i = 0; i < s->members->len; i++) {
		PgateMessageRec *m = s->members->pdata[i];
		PgateSeriesPatch *p = pgate_series_patch_new();

		p->number = s->pull || m->total == 0 ? 1 : m->number;
		p->num = m->num;
		p->msgid = g_strdup(m->msgid);
		p->subject = g_strdup(m->subject ? m->subject : "");
		p->patch_id = g_strdup(m->patch_id);
		if (s->replaces != NULL)
			p->replaces = g_strdup(g_hash_table_lookup(s->replaces,
								   m));
		g_ptr_array_add(r->patches, p);
	}
	if (s->total > 0) {
		guint32 n;

		for (n = 1; n <= s->total; n++)
			if (!g_hash_table_contains(s->slots, GUINT_TO_POINTER(n)))
				break;
		if (n > s->total && s->members->len > 0)
			r->flags |= PGATE_SERIES_FLAG_COMPLETE;
	}
	if (!(r->flags & PGATE_SERIES_FLAG_COMPLETE) && s->members->len > 0 &&
	    s->replaces != NULL &&
	    g_hash_table_size(s->replaces) == s->members->len)
		r->flags |= PGATE_SERIES_FLAG_PARTIAL_REROLL;
	if (src != NULL) {
		r->change_id = g_strdup(src->change_id);
		r->base_commit = g_strdup(src->base_commit);
		add_deps(r, src);
	}
	for (guint i = 0; r->change_id == NULL && i < s->members->len; i++)
		r->change_id = g_strdup(((PgateMessageRec *)
					 s->members->pdata[i])->change_id);
	add_links(r, s);
	return r;
}

/* The series message (member or cover) that @m's In-Reply-To chain
 * reaches first, walking through messages of the unit. */
static PgateMessageRec *
reaches(Former *f, PgateMessageRec *m, FSeries **out_s)
{
	PgateMessageRec *cur = m;

	for (int depth = 0; depth < 256; depth++) {
		PgateMessageRec *p = NULL;
		const char *pid = pgate_threading__parent(cur);
		FSeries *s;

		if (pid != NULL)
			p = pgate_threading__idmap_get(f->byid, pid);
		if (p == NULL) {
			/* a ghost parent: the newest known reference */
			for (guint i = cur->references->len; i-- > 0 && !p;)
				p = pgate_threading__idmap_get(
					f->byid, cur->references->pdata[i]);
		}
		if (p == NULL || p == m)
			return NULL;
		if ((s = g_hash_table_lookup(f->member_of, p)) != NULL) {
			*out_s = s;
			return p;
		}
		cur = p;
	}
	return NULL;
}

static char *
trailer_email(const char *value)
{
	const char *lt = strrchr(value, '<'), *gt;

	if (lt != NULL && (gt = strchr(lt, '>')) != NULL)
		return g_ascii_strdown(lt + 1, gt - lt - 1);
	return g_ascii_strdown(value, -1);
}

/* The trailers a reply gives the patch it answers, as b4 collects
 * follow-up trailers (Reported-by: a bug report answered by a fix). */
static gboolean
review_trailer(const PgateTrailer *t)
{
	return g_ascii_strcasecmp(t->name, "Reviewed-by") == 0 ||
	       g_ascii_strcasecmp(t->name, "Acked-by") == 0 ||
	       g_ascii_strcasecmp(t->name, "Tested-by") == 0 ||
	       g_ascii_strcasecmp(t->name, "Reported-by") == 0;
}

static void
add_trailer(GPtrArray *list, const PgateTrailer *t, const char *author)
{
	g_autofree char *email = trailer_email(t->value);
	g_autofree char *a = g_ascii_strdown(author ? author : "", -1);

	if (strcmp(email, a) == 0)
		return;
	for (guint i = 0; i < list->len; i++) {
		PgateTrailer *o = list->pdata[i];

		if (g_ascii_strcasecmp(o->name, t->name) == 0 &&
		    strcmp(o->value, t->value) == 0)
			return;
	}
	g_ptr_array_add(list, pgate_trailer_new(t->name, t->value));
}

static gint
trailer_cmp(gconstpointer a, gconstpointer b)
{
	const PgateTrailer *x = *(PgateTrailer *const *)a;
	const PgateTrailer *y = *(PgateTrailer *const *)b;
	int c = g_ascii_strcasecmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static void
collect_trailers(Former *f, GPtrArray *sorted)
{
	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i];
		PgateMessageRec *target;
		FSeries *s = NULL;

		if (m->kind != PGATE_MSG_KIND_REPLY || m->trailers->len == 0)
			continue;
		target = reaches(f, m, &s);
		if (target == NULL || s->rec == NULL)
			continue;
		for (guint j = 0; j < m->trailers->len; j++) {
			const PgateTrailer *t = m->trailers->pdata[j];

			if (!review_trailer(t))
				continue;
			if (target == s->cover) {
				add_trailer(s->rec->cover_trailers, t,
					    target->from_email);
				for (guint k = 0; k < s->rec->patches->len; k++)
					add_trailer(((PgateSeriesPatch *)
						     s->rec->patches->pdata[k])->trailers,
						    t, target->from_email);
				continue;
			}
			for (guint k = 0; k < s->rec->patches->len; k++) {
				PgateSeriesPatch *p = s->rec->patches->pdata[k];

				if (p->num == target->num)
					add_trailer(p->trailers, t,
						    target->from_email);
			}
		}
	}
	for (guint i = 0; i < f->all->len; i++) {
		PgateSeriesRec *r = ((FSeries *)f->all->pdata[i])->rec;

		g_ptr_array_sort(r->cover_trailers, trailer_cmp);
		for (guint k = 0; k < r->patches->len; k++)
			g_ptr_array_sort(((PgateSeriesPatch *)
					  r->patches->pdata[k])->trailers,
					 trailer_cmp);
	}
}

gboolean
pgate_threading__series_drop(PgateStoreTxn *txn, const char *id,
			     PgateThrLinks *links, GError **error)
{
	g_autoptr(GError) local = NULL;
	/* one formed in this transaction is not in the store yet */
	g_autoptr(PgateSeriesRec) s = pgate_threading__links_take_formed(links,
									 id);

	if (s == NULL)
		s = pgate_store_series_get(txn, id, &local);
	if (s == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (s->change_id != NULL &&
	    !pgate_store_index_remove(txn, PGATE_STORE_INDEX_CHANGE,
				      s->change_id, s->id, strlen(s->id), error))
		return FALSE;
	for (guint i = 0; i < s->linked_msgids->len; i++)
		if (!pgate_store_index_remove(txn, PGATE_STORE_INDEX_LINK,
					      s->linked_msgids->pdata[i], s->id,
					      strlen(s->id), error))
			return FALSE;
	for (guint i = 0; i < s->patches->len; i++) {
		PgateSeriesPatch *p = s->patches->pdata[i];

		if (p->patch_id != NULL &&
		    !pgate_store_index_remove(txn, PGATE_STORE_INDEX_PATCHID,
					      p->patch_id, s->id, strlen(s->id),
					      error))
			return FALSE;
		if (!pgate_store_msg_series_delete(txn, p->num, error))
			return FALSE;
	}
	if (s->cover_num != 0 &&
	    !pgate_store_msg_series_delete(txn, s->cover_num, error))
		return FALSE;
	if (!pgate_store_series_delete(txn, id, error))
		return FALSE;
	return pgate_threading__links_dropped(txn, links, g_steal_pointer(&s),
					      error);
}

static gboolean
write_series(PgateStoreTxn *txn, const PgateSeriesRec *r, GError **error)
{
	/* (the record itself is put by the link pass, once, with its links:
	 * pgate_threading__links_update) */
	if (r->change_id != NULL &&
	    !pgate_store_index_add(txn, PGATE_STORE_INDEX_CHANGE, r->change_id,
				   r->id, strlen(r->id), error))
		return FALSE;
	for (guint i = 0; i < r->linked_msgids->len; i++)
		if (!pgate_store_index_add(txn, PGATE_STORE_INDEX_LINK,
					   r->linked_msgids->pdata[i], r->id,
					   strlen(r->id), error))
			return FALSE;
	for (guint i = 0; i < r->patches->len; i++) {
		PgateSeriesPatch *p = r->patches->pdata[i];

		if (p->patch_id != NULL &&
		    !pgate_store_index_add(txn, PGATE_STORE_INDEX_PATCHID,
					   p->patch_id, r->id, strlen(r->id),
					   error))
			return FALSE;
		if (!pgate_store_msg_series_put(txn, p->num, r->id, error))
			return FALSE;
	}
	if (r->cover_num != 0 &&
	    !pgate_store_msg_series_put(txn, r->cover_num, r->id, error))
		return FALSE;
	return TRUE;
}

gboolean
pgate_threading__unit_form(PgateStoreTxn *txn, PgateThrUnit *u,
			   PgateThrLinks *links, GError **error)
{
	g_autoptr(GPtrArray) sorted = g_ptr_array_new();
	GHashTable *old;
	PgateThrIdMap *used;
	Former f;
	GHashTableIter it;
	gpointer k;
	gboolean ok = TRUE;

	/* the unit's tables, empty (pgate_threading__unit_reset) */
	old = u->f_old;
	used = &u->f_used;

	for (guint i = 0; i < u->msgs->len; i++) {
		PgateMessageRec *m = u->msgs->pdata[i];
		char *sid = NULL;

		g_ptr_array_add(sorted, m);
		/* a message added in this transaction has no series yet */
		if (pgate_threading__fresh_get(u->fresh, m->num) != NULL)
			continue;
		if (!pgate_store_msg_series_get(txn, m->num, &sid, error))
			return FALSE;
		if (sid != NULL)
			g_hash_table_add(old, sid);
	}
	g_ptr_array_sort(sorted, rec_cmp_p);

	/* drop what the unit had, in a fixed order */
	{
		g_autoptr(GPtrArray) ids = g_ptr_array_new();

		g_hash_table_iter_init(&it, old);
		while (g_hash_table_iter_next(&it, &k, NULL))
			g_ptr_array_add(ids, k);
		g_ptr_array_sort(ids, str_cmp_p);
		for (guint i = 0; i < ids->len; i++)
			if (!pgate_threading__series_drop(txn, ids->pdata[i],
							  links, error))
				return FALSE;
	}

	f.all = g_ptr_array_new_with_free_func((GDestroyNotify)fseries_free);
	f.owner = &u->f_owner;
	f.member_of = u->f_member_of;
	f.byid = &u->f_byid;
	f.refs = g_ptr_array_new();
	f.fresh = u->fresh;
	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i];

		pgate_threading__idmap_add(f.byid, m->msgid, m);
	}
	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i];

		if (m->kind == PGATE_MSG_KIND_COVER)
			place_cover(&f, m);
		else if (m->kind == PGATE_MSG_KIND_PATCH ||
			 m->kind == PGATE_MSG_KIND_PULL)
			place_patch(&f, m);
	}

	/* ids: the cover's Message-ID, else the lowest-numbered member's */
	for (guint i = 0; i < f.all->len; i++) {
		FSeries *s = f.all->pdata[i];
		PgateMessageRec *anchor = s->cover;
		guint salt = 0;

		if (anchor == NULL) {
			g_ptr_array_sort_with_data(s->members, member_cmp, s);
			anchor = s->members->pdata[0];
		}
		do {
			g_free(s->id);
			s->id = pgate_threading__series_id(anchor->msgid,
							   salt++);
		} while (pgate_threading__idmap_get(used, s->id) != NULL);
		pgate_threading__idmap_set(used, s->id, s);
		s->rec = build_rec(s);
	}

	/* which series each replies into (transitively, In-Reply-To) */
	for (guint i = 0; i < f.all->len; i++) {
		FSeries *s = f.all->pdata[i];
		g_autoptr(GPtrArray) msgs = g_ptr_array_copy(s->members, NULL,
							     NULL);

		if (s->cover)
			g_ptr_array_add(msgs, s->cover);
		for (guint j = 0; j < msgs->len; j++) {
			FSeries *o = NULL;

			if (reaches(&f, msgs->pdata[j], &o) && o != s) {
				add_unique(s->rec->replies_into, o->id);
				add_unique(o->rec->replied_by, s->id);
			}
		}
	}
	for (guint i = 0; i < f.all->len; i++) {
		FSeries *s = f.all->pdata[i];

		g_ptr_array_sort(s->rec->replies_into, str_cmp_p);
		g_ptr_array_sort(s->rec->replied_by, str_cmp_p);
	}
	collect_trailers(&f, sorted);

	for (guint i = 0; ok && i < f.all->len; i++) {
		FSeries *s = f.all->pdata[i];

		ok = write_series(txn, s->rec, error) &&
		     pgate_threading__links_formed(txn, links,
						   g_steal_pointer(&s->rec),
						   error);
	}
	g_ptr_array_unref(f.all);
	g_ptr_array_unref(f.refs);
	return ok;
}
