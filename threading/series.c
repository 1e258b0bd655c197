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
	guint32 version;        /* while placing: the creator's, or the
				 * cover's; then the mailing's (vote()) */
	guint32 total;
	gint64 date;
	gint64 last;            /* the latest date of its messages */
	guint gen;              /* its creator's copy (copy_of()) */
	char *sender;
	gboolean pull;
	PgateMessageRec *cover;
	GPtrArray *extra_covers; /* (nullable): extra_cover_of() */
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
	if (s->extra_covers != NULL)
		g_ptr_array_unref(s->extra_covers);
	if (s->replaces != NULL)
		g_hash_table_unref(s->replaces);
	g_free(s->id);
	pgate_series_rec_free(s->rec);
	g_free(s);
}

typedef struct {
	GPtrArray *all;         /* FSeries*, in creation order (owned) */
	PgateThrIdMap *owner;   /* Message-ID (gen_key()) -> FSeries* */
	GHashTable *member_of;  /* PgateMessageRec* -> FSeries* */
	PgateThrIdMap *byid;    /* Message-ID -> first PgateMessageRec* */
	GPtrArray *refs;        /* scratch for add_member() */
	const PgateThrFresh *fresh; /* (nullable): the unit's */
	GHashTable *copies;     /* (nullable): PgateMessageRec* -> its copy
				 * number, for the later copies of a
				 * Message-ID sent again (copy_of()) */
	GStringChunk *keys;     /* (nullable): gen_key()'s strings */
	GHashTable *bygen;      /* (nullable): gen_key() -> the copy of
				 * that send (copy_named()) */
	GString *scratch;
} Former;

/* Which send of its Message-ID @m is: 0 for the first (nearly every
 * message), k for the k-th later send that reused it (copies_note()). */
static guint
copy_of(const Former *f, const PgateMessageRec *m)
{
	if (f->copies == NULL)
		return 0;
	return GPOINTER_TO_UINT(g_hash_table_lookup(f->copies, m));
}

/* The owner-map key of Message-ID @id for the messages of send @gen: the
 * ID itself for the first send; a resend that reused the Message-IDs
 * (a "RESEND v14" a week later, stored as id-conflicts) owns and looks up
 * "ID\n#GEN", so that its messages find each other and not the first
 * send's series, whose slots they would find taken. */
static const char *
gen_key(Former *f, const char *id, guint gen)
{
	if (gen == 0)
		return id;
	if (f->keys == NULL)
		f->keys = g_string_chunk_new(1024);
	g_string_printf(f->scratch, "%s\n#%u", id, gen);
	return g_string_chunk_insert_const(f->keys, f->scratch->str);
}

static FSeries *
fseries_new(Former *f, PgateMessageRec *creator)
{
	FSeries *s = g_new0(FSeries, 1);

	s->order = f->all->len;
	s->creator = creator;
	s->version = creator->version;
	s->total = creator->total;
	s->date = pgate_threading__date(creator);
	s->last = s->date;
	s->gen = copy_of(f, creator);
	s->sender = g_ascii_strdown(creator->from_email ? creator->from_email
							: "", -1);
	s->members = g_ptr_array_new();
	s->slots = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_ptr_array_add(f->all, s);
	return s;
}

static void
own(Former *f, const char *id, guint gen, FSeries *s)
{
	pgate_threading__idmap_add(f->owner, gen_key(f, id, gen), s);
}

static FSeries *
owner_of(Former *f, const char *id, guint gen)
{
	return pgate_threading__idmap_get(f->owner, gen_key(f, id, gen));
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
	guint gen = copy_of(f, m);

	g_ptr_array_set_size(refs, 0);
	pgate_threading__refs_of(f->fresh, m, refs);
	g_ptr_array_add(s->members, m);
	g_hash_table_insert(s->slots, GUINT_TO_POINTER(number), m);
	g_hash_table_insert(f->member_of, m, s);
	s->last = MAX(s->last, pgate_threading__date(m));
	/* SeriesReference: every ref and its own ID, first owner wins */
	own(f, m->msgid, gen, s);
	for (guint i = 0; i < refs->len; i++)
		own(f, refs->pdata[i], gen, s);
}

static FSeries *
find_by_refs(Former *f, const PgateMessageRec *m)
{
	guint gen = copy_of(f, m);
	FSeries *s;

	if ((s = owner_of(f, m->msgid, gen)) != NULL)
		return s;
	if (m->in_reply_to && (s = owner_of(f, m->in_reply_to, gen)) != NULL)
		return s;
	for (guint i = m->references->len; i-- > 0;)
		if ((s = owner_of(f, m->references->pdata[i], gen)) != NULL)
			return s;
	return NULL;
}

/* Whether @m, threaded into @s, is a part of the same mailing although
 * its version label differs ("[PATCH v5 0/2]" over "[PATCH v6 1/2]", a
 * cover "[PATCH 0/7] *** SUBJECT HERE ***" over v5 patches, a stale
 * "[PATCH v2 1/2]" beside "[PATCH v4 2/2]"): the same sender, the same
 * total, sent within PGATE_THREADING_MAILING_GAP of its messages (git
 * send-email dates its mails a second apart; a mailer's by hand come a
 * minute or two apart; a re-roll threaded to the version before came
 * 8 minutes later at the earliest in Patchwork's fixtures).  Patchwork
 * splits such a mailing by label, and each fragment then became the
 * next version of a sibling sent a second before it (issue #49, A). */
static gboolean
in_mailing(const FSeries *s, const PgateMessageRec *m)
{
	gint64 d = pgate_threading__date(m);

	return g_ascii_strcasecmp(s->sender,
				  m->from_email ? m->from_email : "") == 0 &&
	       d >= s->date - PGATE_THREADING_MAILING_GAP &&
	       d <= s->last + PGATE_THREADING_MAILING_GAP;
}

static gboolean
same_mailing(const FSeries *s, const PgateMessageRec *m)
{
	return s->total == m->total && in_mailing(s, m);
}

/* Whether @m, a patch without a marker, is the one patch of @s, a cover
 * "[PATCH 0/1]" of the same mailing that it replies to (git send-email
 * --cover-letter over a single "[PATCH]"): a series of its own and a
 * cover of none it used to be, one a version of the other. */
static gboolean
lone_patch_of(const FSeries *s, const PgateMessageRec *m)
{
	return s != NULL && !s->pull && s->cover != NULL && s->total == 1 &&
	       m->kind == PGATE_MSG_KIND_PATCH &&
	       !g_hash_table_contains(s->slots, GUINT_TO_POINTER(1)) &&
	       in_mailing(s, m);
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

/* Places patch @m; returns FALSE, placing nothing, when @m is threaded
 * into a series of another version label that it may still join as a
 * part of the same mailing (same_mailing()): that is decided once the
 * parts that agree with their series are placed (@late: now), so that a
 * stale "[PATCH v10 5/6]" sent along with "[PATCH 1/6]" .. "[PATCH 6/6]"
 * does not take slot 5 from the mailing's own 5/6. */
static gboolean
place_patch(Former *f, PgateMessageRec *m, gboolean late)
{
	FSeries *s = NULL, *r;

	if (m->kind == PGATE_MSG_KIND_PULL || m->total == 0) {
		/* no marker: a series of its own (Patchwork), unless the
		 * cover of its mailing announced one patch */
		if (m->total == 0 && lone_patch_of(r = find_by_refs(f, m), m)) {
			add_member(f, r, m, 1);
			return TRUE;
		}
		s = fseries_new(f, m);
		s->pull = m->kind == PGATE_MSG_KIND_PULL;
		s->total = 1;
		add_member(f, s, m, 1);
		return TRUE;
	}
	r = find_by_refs(f, m);
	if (r != NULL && !r->pull &&
	    (!explicit_version(m) || m->version == r->version)) {
		if (!g_hash_table_contains(r->slots,
					   GUINT_TO_POINTER(m->number)))
			s = r;
	} else if (r != NULL && !r->pull && same_mailing(r, m) &&
		   !g_hash_table_contains(r->slots,
					  GUINT_TO_POINTER(m->number))) {
		if (!late) {
			/* the mailing goes on through it, placed or not: a
			 * mailer's parts by hand come minutes apart */
			r->last = MAX(r->last, pgate_threading__date(m));
			return FALSE;
		}
		s = r;
	} else {
		/* unthreaded, or threaded into another version: markers */
		s = find_by_markers(f, m);
	}
	if (s == NULL)
		s = fseries_new(f, m);
	add_member(f, s, m, m->number);
	return TRUE;
}

/* A [PATCH vN k/M] whose parent is patch k of an older version replaces
 * it (once every series has its version). */
static void
note_replaces(Former *f, FSeries *s, PgateMessageRec *m)
{
	const char *parent = pgate_threading__parent(m);
	PgateMessageRec *p;
	FSeries *ps;

	if (parent == NULL ||
	    (p = pgate_threading__idmap_get(f->byid, parent)) == NULL)
		return;
	ps = g_hash_table_lookup(f->member_of, p);
	if (ps != NULL && ps != s && p->number == m->number &&
	    p->kind == PGATE_MSG_KIND_PATCH && ps->version < s->version) {
		if (s->replaces == NULL)
			s->replaces = g_hash_table_new(g_direct_hash,
						       g_direct_equal);
		g_hash_table_insert(s->replaces, m, p->msgid);
	}
}

static gint
u32_cmp(gconstpointer a, gconstpointer b)
{
	guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;

	return x < y ? -1 : x > y;
}

/* The version most of @s's patches carry (a patch without a label is
 * v1: git format-patch labels every patch or none, so a stale labelled
 * file sent along is outvoted); a tie goes to the highest.  0 for none. */
static guint32
patches_vote(const FSeries *s)
{
	g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(guint32));
	guint32 best = 0;
	guint best_n = 0;

	for (guint i = 0; i < s->members->len; i++)
		g_array_append_val(v, ((PgateMessageRec *)
				       s->members->pdata[i])->version);
	g_array_sort(v, u32_cmp);
	for (guint i = 0; i < v->len;) {
		guint32 x = g_array_index(v, guint32, i);
		guint n = 0;

		for (; i < v->len && g_array_index(v, guint32, i) == x; i++)
			n++;
		/* (ascending: an equal count later is a higher version) */
		if (n >= best_n) {
			best = x;
			best_n = n;
		}
	}
	return best;
}

/* The version of a mailing: its cover's when the cover has a label
 * ("[PATCH net-next v3 0/4]" over "[PATCH 1/4]" .. is v3), else the one
 * most of its patches carry ("[PATCH 0/3]" or "*** SUBJECT HERE ***"
 * over v2 patches is v2). */
static guint32
vote(const FSeries *s)
{
	guint32 v;

	if (s->cover != NULL && explicit_version(s->cover))
		return s->cover->version;
	v = patches_vote(s);
	return v != 0 ? v : s->version;
}

/* A second cover threaded into a covered series of the same mailing (a
 * "[PATCH v7 0/3]" sent after a stale "[PATCH v6 0/3]", both over the v7
 * patches; the same cover sent twice): it competes with the first for
 * the place (choose_cover()), instead of being a series of no patch. */
static FSeries *
extra_cover_of(Former *f, PgateMessageRec *m, guint gen)
{
	const char *parent = pgate_threading__parent(m);
	FSeries *s = parent ? owner_of(f, parent, gen) : NULL;

	if (s == NULL || s->pull || s->cover == NULL ||
	    !same_mailing(s, m))
		return NULL;
	return s;
}

static void
place_cover(Former *f, PgateMessageRec *m)
{
	guint gen = copy_of(f, m);
	FSeries *s = owner_of(f, m->msgid, gen);

	if (s != NULL && s->cover == NULL && !s->pull) {
		s->cover = m;
		s->version = m->version;
		s->last = MAX(s->last, pgate_threading__date(m));
		g_hash_table_insert(f->member_of, m, s);
		return;
	}
	if (s == NULL && (s = extra_cover_of(f, m, gen)) != NULL) {
		if (s->extra_covers == NULL)
			s->extra_covers = g_ptr_array_new();
		g_ptr_array_add(s->extra_covers, m);
		own(f, m->msgid, gen, s);
		return;
	}
	s = fseries_new(f, m);
	s->cover = m;
	g_hash_table_insert(f->member_of, m, s);
	own(f, m->msgid, gen, s);
}

/* Of a series' covers, the first whose label is the version most of its
 * patches carry, else the first; the others are no member of it. */
static void
choose_cover(Former *f, FSeries *s)
{
	guint32 v = patches_vote(s);
	PgateMessageRec *c = s->cover;

	if (s->extra_covers == NULL)
		return;
	for (guint i = 0; i <= s->extra_covers->len; i++) {
		PgateMessageRec *x = i == 0 ? s->cover
					    : s->extra_covers->pdata[i - 1];

		if (explicit_version(x) && x->version == v) {
			c = x;
			break;
		}
	}
	if (c != s->cover) {
		g_hash_table_remove(f->member_of, s->cover);
		g_hash_table_insert(f->member_of, c, s);
		s->cover = c;
	}
}

/* The messages of @sorted that are not placed: a later copy of a
 * Message-ID sent within the marker window of its first copy is the same
 * mail delivered twice (by another path, with other headers: an
 * id-conflict), not a part of its own.  A copy sent later is a resend
 * that reused the Message-IDs ("RESEND v14" a week later): its number is
 * noted in f->copies (copy_of()), and its series is formed apart from the
 * first send's.  Either way the copy used to find its slot taken and start
 * a series of one patch, which then linked by subject to unrelated older
 * series (issue #49, B). */
static GHashTable *
copies_note(Former *f, GPtrArray *sorted)
{
	GHashTable *skip = NULL;
	g_autoptr(GHashTable) first = NULL, sends = NULL;

	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i], *one;
		guint n;

		if (m->kind != PGATE_MSG_KIND_PATCH &&
		    m->kind != PGATE_MSG_KIND_COVER)
			continue;
		/* (most units have no id-conflict: no table for them) */
		if (!(m->flags & PGATE_MSG_FLAG_ID_CONFLICT) && first == NULL)
			continue;
		if (first == NULL) {
			first = g_hash_table_new(pgate_threading__str_hash,
						 g_str_equal);
			sends = g_hash_table_new(pgate_threading__str_hash,
						 g_str_equal);
			/* the members before m: their first copies */
			for (guint j = 0; j < i; j++) {
				PgateMessageRec *o = sorted->pdata[j];

				if (o->kind == PGATE_MSG_KIND_PATCH ||
				    o->kind == PGATE_MSG_KIND_COVER)
					g_hash_table_insert(first, o->msgid, o);
			}
		}
		one = g_hash_table_lookup(first, m->msgid);
		if (one == NULL) {
			g_hash_table_insert(first, m->msgid, m);
			continue;
		}
		if (ABS(pgate_threading__date(m) - pgate_threading__date(one)) <=
		    PGATE_THREADING_MARKER_WINDOW) {
			if (skip == NULL)
				skip = g_hash_table_new(g_direct_hash,
							g_direct_equal);
			g_hash_table_add(skip, m);
			continue;
		}
		if (f->copies == NULL)
			f->copies = g_hash_table_new(g_direct_hash,
						     g_direct_equal);
		n = GPOINTER_TO_UINT(g_hash_table_lookup(sends, m->msgid)) + 1;
		g_hash_table_insert(sends, m->msgid, GUINT_TO_POINTER(n));
		g_hash_table_insert(f->copies, m, GUINT_TO_POINTER(n));
		if (f->bygen == NULL)
			f->bygen = g_hash_table_new(g_str_hash, g_str_equal);
		g_hash_table_insert(f->bygen, (gpointer)gen_key(f, m->msgid, n),
				    m);
	}
	return skip;
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

/* Whether a cover's name is git format-patch's "*** SUBJECT HERE ***",
 * left as it was: a name every such cover shares is no name (the series
 * is named after its first patch instead). */
static gboolean
placeholder(const char *name)
{
	const char *p = name ? name : "";
	gsize n;

	while (*p == '*' || g_ascii_isspace(*p))
		p++;
	n = strlen(p);
	while (n > 0 && (p[n - 1] == '*' || g_ascii_isspace(p[n - 1])))
		n--;
	return n == strlen("SUBJECT HERE") &&
	       g_ascii_strncasecmp(p, "SUBJECT HERE", n) == 0;
}

static PgateSeriesRec *
build_rec(FSeries *s)
{
	PgateSeriesRec *r = pgate_series_rec_new();
	PgateMessageRec *first = NULL, *one, *src, *named;

	g_ptr_array_sort_with_data(s->members, member_cmp, s);
	if (s->members->len > 0)
		first = s->members->pdata[0];
	one = g_hash_table_lookup(s->slots, GUINT_TO_POINTER(1));
	r->id = g_strdup(s->id);
	g_free(r->project);
	r->project = g_strdup(s->creator->list_id ? s->creator->list_id : "");
	src = s->cover ? s->cover : one ? one : first;
	named = src;
	if (named == s->cover && placeholder(s->cover->name) &&
	    (one != NULL || first != NULL))
		named = one ? one : first;
	r->name = g_strdup(named && named->name ? named->name : "");
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

/* The message Message-ID @id names for a message of send @gen: the copy
 * of the same send when there is one (a resend's patches reply to the
 * resend's cover, not to the first send's), else the first. */
static PgateMessageRec *
copy_named(Former *f, const char *id, guint gen)
{
	PgateMessageRec *p = NULL;

	if (gen > 0 && f->bygen != NULL)
		p = g_hash_table_lookup(f->bygen, gen_key(f, id, gen));
	return p != NULL ? p : pgate_threading__idmap_get(f->byid, id);
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
		guint gen = copy_of(f, cur);
		FSeries *s;

		if (pid != NULL)
			p = copy_named(f, pid, gen);
		if (p == NULL) {
			/* a ghost parent: the newest known reference */
			for (guint i = cur->references->len; i-- > 0 && !p;)
				p = copy_named(f, cur->references->pdata[i],
					       gen);
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

/* Places the members of @sorted (canonical order) into f->all: the
 * parts that agree with their series first, those of a mailing with
 * another label after (place_patch()); then each series' cover, its
 * version, and what its patches re-roll. */
static void
place_all(Former *f, GPtrArray *sorted)
{
	g_autoptr(GPtrArray) late = g_ptr_array_new();
	g_autoptr(GHashTable) skip = NULL;

	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i];

		pgate_threading__idmap_add(f->byid, m->msgid, m);
	}
	skip = copies_note(f, sorted);
	for (guint i = 0; i < sorted->len; i++) {
		PgateMessageRec *m = sorted->pdata[i];

		if (skip != NULL && g_hash_table_contains(skip, m))
			continue;
		if (m->kind == PGATE_MSG_KIND_COVER)
			place_cover(f, m);
		else if ((m->kind == PGATE_MSG_KIND_PATCH ||
			  m->kind == PGATE_MSG_KIND_PULL) &&
			 !place_patch(f, m, FALSE))
			g_ptr_array_add(late, m);
	}
	for (guint i = 0; i < late->len; i++)
		place_patch(f, late->pdata[i], TRUE);
	for (guint i = 0; i < f->all->len; i++) {
		FSeries *s = f->all->pdata[i];

		choose_cover(f, s);
		s->version = vote(s);
	}
	for (guint i = 0; i < f->all->len; i++) {
		FSeries *s = f->all->pdata[i];

		for (guint j = 0; j < s->members->len; j++)
			note_replaces(f, s, s->members->pdata[j]);
	}
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

	f = (Former){ .all = g_ptr_array_new_with_free_func(
			      (GDestroyNotify)fseries_free),
		      .owner = &u->f_owner, .member_of = u->f_member_of,
		      .byid = &u->f_byid, .refs = g_ptr_array_new(),
		      .fresh = u->fresh, .scratch = g_string_new(NULL) };
	place_all(&f, sorted);

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
	g_string_free(f.scratch, TRUE);
	if (f.keys != NULL)
		g_string_chunk_free(f.keys);
	if (f.copies != NULL)
		g_hash_table_unref(f.copies);
	if (f.bygen != NULL)
		g_hash_table_unref(f.bygen);
	return ok;
}
