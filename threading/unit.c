/* unit.c - finding the unit of recomputation, and the hooks.
 *
 * A unit is a set of messages closed under two symmetric relations:
 *  - threading: a message and every message it names in References or
 *    In-Reply-To, or that names it (ghost Message-IDs are nodes too);
 *  - markers: two patches or covers with a [N/M] marker, the same sender,
 *    version and total, dated within PGATE_THREADING_MARKER_WINDOW.
 * So the unit of any of its messages is the same set, whatever order the
 * messages came in, and the series formed inside it (series.c) too.
 *
 * Indexes kept here: refs_index (reverse references) for every message,
 * author_index for the messages that can be series members.
 */
#include "threading/threading-private.h"

#include <string.h>

G_DEFINE_QUARK(pgate-threading-error-quark, pgate_threading_error)

const char pgate_threading__fresh_ask[] = "ask the store";

struct PgateThreading {
	GPtrArray *seed_ids;  /* Message-IDs of messages added or deleted:
			       * borrowed from fresh or from seed_owned */
	GPtrArray *seed_owned;
	PgateThrFresh fresh;  /* the messages added since begin, borrowed
			       * from the caller (pgate_threading_hook_added) */
	GArray *seed_nums;    /* members of series that lost a message */
	PgateThrLinks *links; /* series dropped and formed: links to redo */
	PgateThrUnit *unit;   /* recompute()'s, kept for its tables' sake */
	guint64 recomputed;
	GPtrArray *scratch;   /* index_message's, empty between calls */
	gboolean deferred;    /* pgate_threading_set_deferred() */
	gboolean stale;       /* this transaction's store needs a rethread:
			       * the hooks do nothing */
	gboolean noted;       /* deferred: a message was added or deleted */
	char *skipped;        /* (nullable): pgate_threading_skipped() */
};

PgateThreading *
pgate_threading_new(void)
{
	PgateThreading *t = g_new0(PgateThreading, 1);

	t->seed_nums = g_array_new(FALSE, FALSE, sizeof(guint64));
	t->seed_ids = g_ptr_array_new();
	t->seed_owned = g_ptr_array_new_with_free_func(g_free);
	t->fresh.msgs = g_array_new(FALSE, TRUE, sizeof(PgateThrFreshMsg));
	t->fresh.refs = g_ptr_array_new();
	t->scratch = g_ptr_array_new();
	t->unit = pgate_threading__unit_new(&t->fresh);
	t->links = pgate_threading__links_new();
	return t;
}

void
pgate_threading_free(PgateThreading *t)
{
	if (t == NULL)
		return;
	g_array_unref(t->seed_nums);
	g_ptr_array_unref(t->seed_ids);
	g_ptr_array_unref(t->seed_owned);
	g_array_unref(t->fresh.msgs);
	g_ptr_array_unref(t->fresh.refs);
	g_ptr_array_unref(t->scratch);
	pgate_threading__unit_free(t->unit);
	pgate_threading__idmap_free(&t->fresh.by_id);
	pgate_threading__links_free(t->links);
	g_free(t->skipped);
	g_free(t);
}

guint64
pgate_threading_recomputed(PgateThreading *t)
{
	return t->recomputed;
}

void
pgate_threading_set_deferred(PgateThreading *t, gboolean deferred)
{
	t->deferred = deferred;
}

const char *
pgate_threading_skipped(const PgateThreading *t)
{
	return t->skipped;
}

gboolean
pgate_threading_stale(const PgateThreading *t)
{
	return t->stale;
}

guint
pgate_threading__str_hash(gconstpointer key)
{
	const char *s = key;
	gsize n = strlen(s);
	guint64 h = G_GUINT64_CONSTANT(0x9e3779b97f4a7c15) ^ n, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * G_GUINT64_CONSTANT(0xff51afd7ed558ccd);
		h ^= h >> 32;
	}
	if (n > 0) {
		w = 0;
		memcpy(&w, s, n);
		h = (h ^ w) * G_GUINT64_CONSTANT(0xff51afd7ed558ccd);
	}
	h ^= h >> 29;
	return (guint)h;
}

/* ---- Message-ID maps ---- */

static PgateThrIdSlot *
idmap_find(const PgateThrIdMap *m, const char *id, guint hash)
{
	for (guint i = hash & m->mask;; i = (i + 1) & m->mask) {
		PgateThrIdSlot *s = &m->slots[i];

		if (s->id == NULL ||
		    (s->hash == hash && strcmp(s->id, id) == 0))
			return s;
	}
}

gpointer
pgate_threading__idmap_get(const PgateThrIdMap *m, const char *id)
{
	PgateThrIdSlot *s;

	if (m->len == 0)
		return NULL;
	s = idmap_find(m, id, pgate_threading__str_hash(id));
	return s->id != NULL ? s->val : NULL;
}

PgateThrIdSlot *
pgate_threading__idmap_slot(PgateThrIdMap *m, const char *id, gboolean *added)
{
	guint hash = pgate_threading__str_hash(id);
	PgateThrIdSlot *s;

	/* at most half full */
	if (m->slots == NULL || 2 * (m->len + 1) > m->mask + 1) {
		PgateThrIdMap bigger = { 0 };
		guint n = m->slots == NULL ? 64 : 2 * (m->mask + 1);

		bigger.slots = g_new0(PgateThrIdSlot, n);
		bigger.mask = n - 1;
		bigger.used = g_new(guint, n / 2);
		for (guint i = 0; i < m->len; i++) {
			const PgateThrIdSlot *o = &m->slots[m->used[i]];
			PgateThrIdSlot *d = idmap_find(&bigger, o->id, o->hash);

			*d = *o;
			bigger.used[i] = (guint)(d - bigger.slots);
		}
		bigger.len = m->len;
		g_free(m->slots);
		g_free(m->used);
		*m = bigger;
	}
	s = idmap_find(m, id, hash);
	*added = s->id == NULL;
	if (*added) {
		s->id = id;
		s->hash = hash;
		s->val = NULL;
		m->used[m->len++] = (guint)(s - m->slots);
	}
	return s;
}

gboolean
pgate_threading__idmap_set(PgateThrIdMap *m, const char *id, gpointer val)
{
	gboolean added;

	pgate_threading__idmap_slot(m, id, &added)->val = val;
	return added;
}

gboolean
pgate_threading__idmap_add(PgateThrIdMap *m, const char *id, gpointer val)
{
	gboolean added;
	PgateThrIdSlot *s = pgate_threading__idmap_slot(m, id, &added);

	if (added)
		s->val = val;
	return added;
}

void
pgate_threading__idmap_clear(PgateThrIdMap *m)
{
	if (8 * m->len > m->mask + 1) {
		memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
	} else {
		for (guint i = 0; i < m->len; i++)
			m->slots[m->used[i]].id = NULL;
	}
	m->len = 0;
}

void
pgate_threading__idmap_free(PgateThrIdMap *m)
{
	g_clear_pointer(&m->slots, g_free);
	g_clear_pointer(&m->used, g_free);
	m->mask = 0;
	m->len = 0;
}

/* ---- message number maps ---- */

static guint
num_hash(guint64 num)
{
	num *= G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
	return (guint)(num >> 32);
}

static PgateThrNumSlot *
nummap_find(const PgateThrNumMap *m, guint64 num)
{
	for (guint i = num_hash(num) & m->mask;; i = (i + 1) & m->mask) {
		PgateThrNumSlot *s = &m->slots[i];

		if (s->rec == NULL || s->num == num)
			return s;
	}
}

static gpointer
nummap_get(const PgateThrNumMap *m, guint64 num)
{
	if (m->used->len == 0)
		return NULL;
	return nummap_find(m, num)->rec;
}

/* Maps @num to @rec (not NULL), which it must not be mapped to yet. */
static void
nummap_add(PgateThrNumMap *m, guint64 num, gpointer rec)
{
	PgateThrNumSlot *s;
	guint i;

	/* at most half full */
	if (2 * (m->used->len + 1) > m->mask + 1) {
		guint n = 2 * (m->mask + 1);
		PgateThrNumSlot *old = m->slots;

		m->slots = g_new0(PgateThrNumSlot, n);
		m->mask = n - 1;
		for (i = 0; i < m->used->len; i++) {
			PgateThrNumSlot *o = &old[g_array_index(m->used, guint,
								i)];

			s = nummap_find(m, o->num);
			*s = *o;
			g_array_index(m->used, guint, i) =
				(guint)(s - m->slots);
		}
		g_free(old);
	}
	s = nummap_find(m, num);
	g_assert(s->rec == NULL);
	s->num = num;
	s->rec = rec;
	i = (guint)(s - m->slots);
	g_array_append_val(m->used, i);
}

static void
nummap_init(PgateThrNumMap *m)
{
	m->slots = g_new0(PgateThrNumSlot, 64);
	m->mask = 63;
	m->used = g_array_new(FALSE, FALSE, sizeof(guint));
}

/* Empties @m, keeping its slots. */
static void
nummap_clear(PgateThrNumMap *m)
{
	if (8 * m->used->len > m->mask + 1) {
		memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
	} else {
		for (guint i = 0; i < m->used->len; i++)
			m->slots[g_array_index(m->used, guint, i)].rec = NULL;
	}
	g_array_set_size(m->used, 0);
}

static void
nummap_free(PgateThrNumMap *m)
{
	g_clear_pointer(&m->slots, g_free);
	g_clear_pointer(&m->used, g_array_unref);
}

gboolean
pgate_threading__is_member_kind(const PgateMessageRec *rec)
{
	return rec->kind == PGATE_MSG_KIND_PATCH ||
	       rec->kind == PGATE_MSG_KIND_COVER ||
	       rec->kind == PGATE_MSG_KIND_PULL;
}

gint64
pgate_threading__date(const PgateMessageRec *rec)
{
	return (rec->flags & PGATE_MSG_FLAG_BAD_DATE) ? 0 : rec->date;
}

/* Canonical order: date (bad dates as 0), Message-ID, then the message
 * number only for two messages with one Message-ID and the same date. */
gint
pgate_threading__rec_cmp(const PgateMessageRec *a, const PgateMessageRec *b)
{
	gint64 da = pgate_threading__date(a), db = pgate_threading__date(b);
	int c;

	if (da != db)
		return da < db ? -1 : 1;
	c = strcmp(a->msgid, b->msgid);
	if (c != 0)
		return c;
	/* same ID, same date: order by content, not by arrival */
	c = memcmp(a->content_hash, b->content_hash, 32);
	if (c != 0)
		return c;
	return a->num < b->num ? -1 : a->num > b->num;
}

static gboolean
usable_ref(const PgateMessageRec *rec, const char *id)
{
	if (id == NULL || id[0] == '\0' || strcmp(id, rec->msgid) == 0)
		return FALSE;
	/* old git-send-email prompts left "y"/"n" (public-inbox drops
	 * them); addresses in References are dropped by the parser (see
	 * PgateMessageRec) */
	return strchr(id, '@') != NULL || strlen(id) >= 3;
}

void
pgate_threading__refs_append(const PgateMessageRec *rec, GPtrArray *out)
{
	guint start = out->len;

	for (guint i = 0; i <= rec->references->len; i++) {
		/* In-Reply-To last */
		const char *r = i < rec->references->len
			? rec->references->pdata[i] : rec->in_reply_to;
		gboolean dup = FALSE;

		if (!usable_ref(rec, r))
			continue;
		for (guint j = start; j < out->len && !dup; j++)
			dup = strcmp(out->pdata[j], r) == 0;
		if (!dup)
			g_ptr_array_add(out, (gpointer)r);
	}
}

void
pgate_threading__refs_of(const PgateThrFresh *f, const PgateMessageRec *rec,
			 GPtrArray *out)
{
	const PgateThrFreshMsg *m;

	if (pgate_threading__fresh_get(f, rec->num) != rec) {
		pgate_threading__refs_append(rec, out);
		return;
	}
	m = &g_array_index(f->msgs, PgateThrFreshMsg, rec->num - f->base);
	for (guint i = 0; i < m->refs_len; i++)
		g_ptr_array_add(out, f->refs->pdata[m->refs_start + i]);
}

const char *
pgate_threading__parent(const PgateMessageRec *rec)
{
	if (usable_ref(rec, rec->in_reply_to))
		return rec->in_reply_to;
	for (guint i = rec->references->len; i-- > 0;)
		if (usable_ref(rec, rec->references->pdata[i]))
			return rec->references->pdata[i];
	return NULL;
}

static char *
lower_email(const PgateMessageRec *rec)
{
	return g_ascii_strdown(rec->from_email ? rec->from_email : "", -1);
}

/* ---- indexes ---- */

static gboolean
index_message(PgateStoreTxn *txn, PgateThreading *t,
	      const PgateMessageRec *rec, gboolean add, GError **error)
{
	PgateThrFresh *f = &t->fresh;
	/* an added message's references are noted for its unit */
	gboolean note = add && pgate_threading__fresh_get(f, rec->num) == rec;
	GPtrArray *refs = note ? f->refs : t->scratch;
	guint start = refs->len;
	gboolean ok = TRUE;

	pgate_threading__refs_append(rec, refs);
	for (guint i = start; ok && i < refs->len; i++)
		ok = add
			? pgate_store_refs_add(txn, refs->pdata[i], rec->num, error)
			: pgate_store_refs_remove(txn, refs->pdata[i], rec->num,
						  error);
	if (note) {
		PgateThrFreshMsg *m = &g_array_index(f->msgs, PgateThrFreshMsg,
						     rec->num - f->base);

		m->refs_start = start;
		m->refs_len = refs->len - start;
	} else {
		g_ptr_array_set_size(refs, 0);
	}
	if (ok && pgate_threading__is_member_kind(rec)) {
		const char *from = rec->from_email ? rec->from_email : "";
		gsize n = strlen(from);
		char buf[256];
		g_autofree char *big = n < sizeof buf ? NULL : g_malloc(n + 1);
		char *email = big != NULL ? big : buf;
		gint64 d = pgate_threading__date(rec);

		for (gsize i = 0; i <= n; i++)
			email[i] = g_ascii_tolower(from[i]);
		ok = add ? pgate_store_author_add(txn, email, d, rec->num, error)
			 : pgate_store_author_remove(txn, email, d, rec->num,
						     error);
	}
	return ok;
}

/* ---- units ---- */

PgateThrUnit *
pgate_threading__unit_new(const PgateThrFresh *fresh)
{
	PgateThrUnit *u = g_new0(PgateThrUnit, 1);

	nummap_init(&u->msgs_by_num);
	u->msgs = g_ptr_array_new();
	u->owned = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_message_rec_free);
	u->fresh = fresh;
	u->idcopies = g_string_chunk_new(4096);
	u->f_old = g_hash_table_new_full(pgate_threading__str_hash,
					 g_str_equal, g_free, NULL);
	u->f_member_of = g_hash_table_new(g_direct_hash, g_direct_equal);
	return u;
}

void
pgate_threading__unit_reset(PgateThrUnit *u)
{
	/* (the tables borrow from the records, f_used from the series the
	 * unit before formed; emptying them reads no key) */
	GHashTable *tables[] = { u->f_old, u->f_member_of };

	/* (most units are a few messages, and some tables stay empty) */
	for (gsize i = 0; i < G_N_ELEMENTS(tables); i++)
		if (g_hash_table_size(tables[i]) > 0)
			g_hash_table_remove_all(tables[i]);
	nummap_clear(&u->msgs_by_num);
	pgate_threading__idmap_clear(&u->f_used);
	pgate_threading__idmap_clear(&u->f_owner);
	pgate_threading__idmap_clear(&u->f_byid);
	g_ptr_array_set_size(u->msgs, 0);
	/* (visited stays: the next unit is told apart by its serial) */
	u->serial++;
	g_ptr_array_set_size(u->owned, 0);
	u->cut = FALSE;
}

void
pgate_threading__unit_free(PgateThrUnit *u)
{
	if (u == NULL)
		return;
	nummap_free(&u->msgs_by_num);
	g_ptr_array_unref(u->msgs);
	g_ptr_array_unref(u->owned);
	pgate_threading__idmap_free(&u->visited);
	g_string_chunk_free(u->idcopies);
	g_hash_table_unref(u->f_old);
	pgate_threading__idmap_free(&u->f_used);
	pgate_threading__idmap_free(&u->f_owner);
	g_hash_table_unref(u->f_member_of);
	pgate_threading__idmap_free(&u->f_byid);
	g_free(u);
}

/* (transfer none) (nullable): message @num, from the transaction's fresh
 * records when it is one, else read into u->owned; NULL with *error
 * unset when there is no such message. */
static PgateMessageRec *
unit_rec(PgateThrUnit *u, PgateStoreTxn *txn, guint64 num, GError **error)
{
	g_autoptr(GError) local = NULL;
	PgateMessageRec *rec;

	if ((rec = pgate_threading__fresh_get(u->fresh, num)) != NULL)
		return rec;
	rec = pgate_store_message_get(txn, num, &local);
	if (rec == NULL) {
		/* a record that does not decode is left out, as a rethread
		 * leaves it out: it indexed nothing there */
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND) &&
		    !g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_CORRUPT))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	g_ptr_array_add(u->owned, rec);
	return rec;
}

/* Loads message num into the unit; queues its IDs. */
static gboolean
unit_take(PgateThrUnit *u, PgateStoreTxn *txn, guint64 num, GPtrArray *queue,
	  GError **error)
{
	g_autoptr(GError) local = NULL;
	PgateMessageRec *rec;

	if (nummap_get(&u->msgs_by_num, num) != NULL)
		return TRUE;
	if (u->msgs->len >= PGATE_THREADING_MAX_UNIT) {
		if (!u->cut)
			g_warning("threading: unit larger than %u messages; "
				  "cut (num=%" G_GUINT64_FORMAT ")",
				  PGATE_THREADING_MAX_UNIT, num);
		u->cut = TRUE;
		return TRUE;
	}
	rec = unit_rec(u, txn, num, &local);
	if (rec == NULL) {
		if (local == NULL)
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	nummap_add(&u->msgs_by_num, num, rec);
	g_ptr_array_add(u->msgs, rec);
	g_ptr_array_add(queue, rec->msgid);
	pgate_threading__refs_of(u->fresh, rec, queue);
	return TRUE;
}

/* Adds the thread component of Message-ID @id (a ghost or not). */
static gboolean
unit_add_component(PgateThrUnit *u, PgateStoreTxn *txn, const char *id,
		   GError **error)
{
	/* the IDs are borrowed: from @id, which outlives the unit, and from
	 * the unit's records; a queue, read from @head on */
	g_autoptr(GPtrArray) queue = g_ptr_array_new();
	g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(guint64));
	const PgateMessageRec *one;
	gboolean ok = TRUE;

	g_ptr_array_add(queue, (gpointer)id);
	for (guint head = 0; ok && head < queue->len; head++) {
		char *cur = queue->pdata[head];
		gboolean added;
		PgateThrIdSlot *seen = pgate_threading__idmap_slot(&u->visited,
								   cur, &added);

		if (!added && seen->val == GUINT_TO_POINTER(u->serial))
			continue;
		if (added)
			seen->id = g_string_chunk_insert(u->idcopies, cur);
		seen->val = GUINT_TO_POINTER(u->serial);
		/* the messages with this ID (a message of this transaction
		 * that the ID is unique to is known), then those naming it */
		g_array_set_size(nums, 0);
		one = u->fresh != NULL
			? pgate_threading__idmap_get(&u->fresh->by_id, cur)
			: NULL;
		if (one != NULL && one != PGATE_THR_FRESH_ASK)
			g_array_append_val(nums, one->num);
		else
			ok = pgate_store_message_lookup_into(txn, cur, nums,
							     error);
		ok = ok && pgate_store_refs_lookup_into(txn, cur, nums, error);
		for (guint i = 0; ok && i < nums->len; i++)
			ok = unit_take(u, txn, g_array_index(nums, guint64, i),
				       queue, error);
	}
	return ok;
}

static gint
rec_date_cmp(gconstpointer a, gconstpointer b)
{
	gint64 x = pgate_threading__date(*(PgateMessageRec *const *)a);
	gint64 y = pgate_threading__date(*(PgateMessageRec *const *)b);

	return x < y ? -1 : x > y;
}

/* Whether @o is a marker neighbour of one of @group (one sender's). */
static gboolean
marker_match(const PgateMessageRec *o, GPtrArray *group)
{
	gint64 d = pgate_threading__date(o);

	if (!pgate_threading__is_member_kind(o))
		return FALSE;
	for (guint i = 0; i < group->len; i++) {
		const PgateMessageRec *r = group->pdata[i];

		if (o->total == r->total && o->version == r->version &&
		    ABS(d - pgate_threading__date(r)) <=
		    PGATE_THREADING_MARKER_WINDOW)
			return TRUE;
	}
	return FALSE;
}

/* Adds the marker neighbours of @group, the unit's unexpanded members of
 * one sender (@email), sorted by date: one author_index range for each
 * run of them whose windows overlap, rather than one a message (a
 * series's patches come seconds apart). */
static gboolean
expand_sender(PgateThrUnit *u, PgateStoreTxn *txn, const char *email,
	      GPtrArray *group, gboolean *changed, GError **error)
{
	const gint64 w = PGATE_THREADING_MARKER_WINDOW;

	for (guint i = 0; i < group->len;) {
		gint64 lo = pgate_threading__date(group->pdata[i]) - w;
		gint64 hi = pgate_threading__date(group->pdata[i]) + w;
		g_autoptr(GArray) near = NULL;

		for (i++; i < group->len &&
		     pgate_threading__date(group->pdata[i]) - w <= hi; i++)
			hi = pgate_threading__date(group->pdata[i]) + w;
		near = pgate_store_author_range(txn, email, lo, hi, error);
		if (near == NULL)
			return FALSE;
		for (guint j = 0; j < near->len; j++) {
			guint64 n = g_array_index(near, guint64, j);
			const PgateMessageRec *o;
			g_autoptr(GError) local = NULL;

			if (nummap_get(&u->msgs_by_num, n) != NULL)
				continue;
			/* (kept in u->owned until the unit goes) */
			o = unit_rec(u, txn, n, &local);
			if (o == NULL || !marker_match(o, group))
				continue;
			if (!unit_add_component(u, txn, o->msgid, error))
				return FALSE;
			*changed = TRUE;
		}
	}
	return TRUE;
}

typedef struct {
	char *email;       /* lower-cased */
	PgateMessageRec *rec;
} SenderRec;

static gint
sender_rec_cmp(gconstpointer pa, gconstpointer pb)
{
	const SenderRec *a = pa, *b = pb;
	gint c = strcmp(a->email, b->email);

	return c != 0 ? c : rec_date_cmp(&a->rec, &b->rec);
}

static void
sender_rec_clear(gpointer p)
{
	g_free(((SenderRec *)p)->email);
}

/* Closes the unit under the marker relation. */
static gboolean
unit_close_markers(PgateThrUnit *u, PgateStoreTxn *txn, GError **error)
{
	/* the members before u->msgs[done] are expanded: a member joins at
	 * the end */
	guint done = 0;
	gboolean changed = TRUE;
	g_autoptr(GArray) by_sender = g_array_new(FALSE, FALSE,
						  sizeof(SenderRec));
	g_autoptr(GPtrArray) group = g_ptr_array_new();

	g_array_set_clear_func(by_sender, sender_rec_clear);
	while (changed && !u->cut) {
		guint end = u->msgs->len;

		changed = FALSE;
		/* the unexpanded members, by lower-cased sender, then date */
		g_array_set_size(by_sender, 0);
		for (; done < end; done++) {
			PgateMessageRec *rec = u->msgs->pdata[done];
			SenderRec sr;

			if (!pgate_threading__is_member_kind(rec) ||
			    rec->total == 0)
				continue;
			sr.email = lower_email(rec);
			sr.rec = rec;
			g_array_append_val(by_sender, sr);
		}
		g_array_sort(by_sender, sender_rec_cmp);
		/* (the units found are the same in any order: a closure) */
		for (guint i = 0; i < by_sender->len;) {
			const char *email = g_array_index(by_sender, SenderRec,
							  i).email;

			g_ptr_array_set_size(group, 0);
			for (; i < by_sender->len &&
			       strcmp(g_array_index(by_sender, SenderRec,
						    i).email, email) == 0; i++)
				g_ptr_array_add(group, g_array_index(
					by_sender, SenderRec, i).rec);
			if (!expand_sender(u, txn, email, group,
					   &changed, error))
				return FALSE;
		}
	}
	return TRUE;
}

/* ---- the hooks ---- */

static void
seeds_clear(PgateThreading *t)
{
	g_array_set_size(t->seed_nums, 0);
	g_ptr_array_set_size(t->seed_ids, 0);
	g_ptr_array_set_size(t->seed_owned, 0);
	g_array_set_size(t->fresh.msgs, 0);
	g_ptr_array_set_size(t->fresh.refs, 0);
	pgate_threading__idmap_clear(&t->fresh.by_id);
}

/* Notes Message-ID @id as a seed, a copy of it. */
static void
seed_copy(PgateThreading *t, const char *id)
{
	char *c = g_strdup(id);

	g_ptr_array_add(t->seed_owned, c);
	g_ptr_array_add(t->seed_ids, c);
}

static void
fresh_add(PgateThrFresh *f, PgateMessageRec *rec)
{
	PgateThrFreshMsg m = { rec, 0, 0 };

	if (f->msgs->len == 0)
		f->base = rec->num;
	if (rec->num < f->base) {
		/* (the store numbers upwards: not seen) */
		guint d = (guint)(f->base - rec->num);

		g_array_set_size(f->msgs, f->msgs->len + d);
		memmove(f->msgs->data + d * sizeof m, f->msgs->data,
			(f->msgs->len - d) * sizeof m);
		memset(f->msgs->data, 0, d * sizeof m);
		f->base = rec->num;
	}
	if (rec->num - f->base >= f->msgs->len)
		g_array_set_size(f->msgs, (guint)(rec->num - f->base) + 1);
	g_array_index(f->msgs, PgateThrFreshMsg, rec->num - f->base) = m;
	/* a Message-ID the store had, or that two of the transaction's
	 * messages have, is looked up in the store */
	if ((rec->flags & PGATE_MSG_FLAG_ID_CONFLICT) ||
	    !pgate_threading__idmap_set(&f->by_id, rec->msgid, rec))
		pgate_threading__idmap_set(&f->by_id, rec->msgid,
					   PGATE_THR_FRESH_ASK);
}

/* Meta RULES_KEY: the version of the rules that threaded the store's
 * derived state (PGATE_THREADING_RULES, u32 BE), written by a rethread
 * and into a store that has no message yet. */
#define RULES_KEY "threading_rules"

static void
rules_value(guint8 b[4])
{
	for (int i = 0; i < 4; i++)
		b[i] = (guint8)(PGATE_THREADING_RULES >> (24 - 8 * i));
}

/* Whether the store was threaded by these rules (*@out_same).  Series
 * formed by other rules beside these would be neither what the old nor
 * what the new rules give, so a store threaded before (no key: rules 1,
 * or another version) is marked for a rethread, as a store upgrade marks
 * it; a store without messages is these rules'. */
static gboolean
rules_check(PgateStoreTxn *txn, gboolean *out_same, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_meta_get(txn, RULES_KEY, &local);
	guint8 want[4];

	rules_value(want);
	*out_same = TRUE;
	if (b == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
					  PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (b != NULL && g_bytes_get_size(b) == sizeof want &&
	    memcmp(g_bytes_get_data(b, NULL), want, sizeof want) == 0)
		return TRUE;
	if (b == NULL && pgate_store_message_count(txn) == 0)
		return pgate_store_meta_put(txn, RULES_KEY, want, sizeof want,
					    error);
	*out_same = FALSE;
	return pgate_store_set_rethread_needed(txn, TRUE, error);
}

gboolean
pgate_threading_hook_begin(PgateStoreTxn *txn, gpointer payload,
			   GError **error)
{
	PgateThreading *t = payload;
	gboolean same;

	seeds_clear(t);
	pgate_threading__links_clear(t->links);
	t->noted = FALSE;
	/* incremental threading on derived state known to be incomplete
	 * would only add to it: wait for the rethread */
	t->stale = t->deferred || pgate_store_rethread_needed(txn);
	if (!t->stale) {
		if (!rules_check(txn, &same, error))
			return FALSE;
		t->stale = !same;
	}
	return TRUE;
}

gboolean
pgate_threading_hook_skipped(PgateStoreTxn *txn, const GError *why,
			     gpointer payload, GError **error)
{
	PgateThreading *t = payload;

	/* what the failed attempt noted goes with it */
	seeds_clear(t);
	pgate_threading__links_clear(t->links);
	g_free(t->skipped);
	t->skipped = g_strdup(why->message);
	return pgate_store_set_rethread_needed(txn, TRUE, error) &&
	       pgate_store_set_threading_failed(txn, why->message, error);
}

/* ---- a rethread in batches ----
 *
 * pgate_threading_rethread() fills the other generation of the derived
 * databases (pgate_store_derived_shadow) a batch of messages a
 * transaction, in the order they were stored, each batch as an ingest
 * of those messages would thread them (threading is a function of the
 * set of messages: the last batch leaves what one transaction over all
 * of them would); between batches the write lock is free, and
 * deliveries thread into the live generation.  The batch that finds no
 * message left makes the new generation live.  Where it got to is meta
 * PROGRESS_KEY, so that a rethread that was stopped goes on from there:
 * one byte, the generation being filled, and the u64 BE number of the
 * last message it threaded.  A message deleted meanwhile that the new
 * generation already holds would stay in it: the deletion forgets the
 * progress, and the rethread starts again. */

#define PROGRESS_KEY "rethread_progress"
#define PROGRESS_LEN 9

/* The progress of a rethread filling generation 1 - the live one: the
 * number of the last message threaded into it, 0 when there is none (or
 * it was for a generation that has been made live since). */
static gboolean
progress_get(PgateStoreTxn *txn, guint64 *out_done, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_meta_get(txn, PROGRESS_KEY, &local);
	const guint8 *p;
	gsize len;

	*out_done = 0;
	if (b == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	p = g_bytes_get_data(b, &len);
	if (len != PROGRESS_LEN ||
	    p[0] != 1 - pgate_store_derived_generation(txn))
		return TRUE;
	for (int i = 1; i < PROGRESS_LEN; i++)
		*out_done = *out_done << 8 | p[i];
	return TRUE;
}

guint64
pgate_threading_rethread_at(PgateStoreTxn *txn)
{
	guint64 done;

	return progress_get(txn, &done, NULL) ? done : 0;
}

static gboolean
progress_put(PgateStoreTxn *txn, guint64 done, GError **error)
{
	guint8 b[PROGRESS_LEN];

	b[0] = (guint8)(1 - pgate_store_derived_generation(txn));
	for (int i = PROGRESS_LEN - 1; i >= 1; i--, done >>= 8)
		b[i] = (guint8)done;
	return pgate_store_meta_put(txn, PROGRESS_KEY, b, sizeof b, error);
}

static gboolean
progress_forget_deleted(PgateStoreTxn *txn, guint64 num, GError **error)
{
	guint64 done;

	if (!progress_get(txn, &done, error))
		return FALSE;
	if (done == 0 || num > done)
		return TRUE;	/* a later batch will not see it */
	return pgate_store_meta_delete(txn, PROGRESS_KEY, error);
}

static gboolean
note_added(PgateStoreTxn *txn, const PgateMessageRec *rec, PgateThreading *t,
	   gboolean borrow, GError **error)
{
	if (borrow) {
		fresh_add(&t->fresh, (PgateMessageRec *)rec);
		g_ptr_array_add(t->seed_ids, rec->msgid);
	} else {
		seed_copy(t, rec->msgid);
	}
	return index_message(txn, t, rec, TRUE, error);
}

gboolean
pgate_threading_hook_added(PgateStoreTxn *txn, const PgateMessageRec *rec,
			   gpointer payload, GError **error)
{
	PgateThreading *t = payload;

	if (t->stale) {
		t->noted = TRUE;
		return TRUE;
	}
	return note_added(txn, rec, t, TRUE, error);
}

gboolean
pgate_threading_hook_deleted(PgateStoreTxn *txn, const PgateMessageRec *rec,
			     gpointer payload, GError **error)
{
	PgateThreading *t = payload;
	g_autofree char *sid = NULL;
	g_autoptr(PgateSeriesRec) s = NULL;

	if (!progress_forget_deleted(txn, rec->num, error))
		return FALSE;
	if (t->stale) {
		t->noted = TRUE;
		return TRUE;
	}
	if (!index_message(txn, t, rec, FALSE, error))
		return FALSE;
	if (pgate_threading__fresh_get(&t->fresh, rec->num) != NULL)
		g_array_index(t->fresh.msgs, PgateThrFreshMsg,
			      rec->num - t->fresh.base).rec = NULL;
	if (pgate_threading__idmap_get(&t->fresh.by_id, rec->msgid) != NULL)
		pgate_threading__idmap_set(&t->fresh.by_id, rec->msgid,
					   PGATE_THR_FRESH_ASK);
	seed_copy(t, rec->msgid);
	/* what it replied to: a deleted review reply takes its trailers
	 * away from the patch it answered, whose unit it no longer reaches */
	if (rec->in_reply_to != NULL)
		seed_copy(t, rec->in_reply_to);
	for (guint i = 0; i < rec->references->len; i++)
		seed_copy(t, rec->references->pdata[i]);
	if (!pgate_store_msg_series_get(txn, rec->num, &sid, error))
		return FALSE;
	if (sid != NULL) {
		s = pgate_store_series_get(txn, sid, NULL);
		if (s != NULL) {
			/* the rest of its series must be formed again */
			for (guint i = 0; i < s->patches->len; i++) {
				PgateSeriesPatch *p = s->patches->pdata[i];

				g_array_append_val(t->seed_nums, p->num);
			}
			if (s->cover_num != 0)
				g_array_append_val(t->seed_nums, s->cover_num);
		}
		/* the unit will not see this message any more: drop its
		 * series here */
		if (!pgate_threading__series_drop(txn, sid, t->links, error))
			return FALSE;
	}
	return pgate_store_msg_series_delete(txn, rec->num, error);
}

/* Recomputes the units of the noted messages: each unit once. */
static gboolean
recompute(PgateStoreTxn *txn, PgateThreading *t, GError **error)
{
	/* the seeds' Message-IDs, borrowed from t->seed_ids and from the
	 * records of t->seed_nums; those a unit reached are in u->visited */
	g_autoptr(GPtrArray) recs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_message_rec_free);
	g_autoptr(GPtrArray) seeds = g_ptr_array_new();
	PgateThrUnit *u = t->unit;
	PgateThrLinks *links = t->links;

	for (guint i = 0; i < t->seed_nums->len; i++) {
		PgateMessageRec *rec = pgate_store_message_get(
			txn, g_array_index(t->seed_nums, guint64, i), NULL);

		if (rec != NULL) {
			g_ptr_array_add(recs, rec);
			g_ptr_array_add(seeds, rec->msgid);
		}
	}
	for (guint i = 0; i < t->seed_ids->len; i++)
		g_ptr_array_add(seeds, t->seed_ids->pdata[i]);
	/* the IDs the units of the last recomputation visited are not
	 * this one's */
	pgate_threading__idmap_clear(&u->visited);
	g_string_chunk_clear(u->idcopies);
	u->serial = 0;
	for (guint i = 0; i < seeds->len; i++) {
		/* a seed some unit reached is done */
		if (pgate_threading__idmap_get(&u->visited,
					       seeds->pdata[i]) != NULL)
			continue;
		pgate_threading__unit_reset(u);
		if (!unit_add_component(u, txn, seeds->pdata[i], error) ||
		    !unit_close_markers(u, txn, error))
			return FALSE;
		t->recomputed += u->msgs->len;
		if (!pgate_threading__unit_form(txn, u, links, error))
			return FALSE;
	}
	/* the unit is kept for its tables, not its contents: they borrow
	 * records that go with this transaction */
	pgate_threading__unit_reset(u);
	return pgate_threading__links_update(txn, links, error);
}

gboolean
pgate_threading_hook_commit(PgateStoreTxn *txn, gpointer payload,
			    GError **error)
{
	PgateThreading *t = payload;
	gboolean ok;

	if (t->stale) {
		/* deferred: what was stored waits for a rethread too */
		ok = !t->deferred || !t->noted ||
		     pgate_store_rethread_needed(txn) ||
		     pgate_store_set_rethread_needed(txn, TRUE, error);
		t->noted = FALSE;
		return ok;
	}
	ok = recompute(txn, t, error);
	seeds_clear(t);
	pgate_threading__links_clear(t->links);
	return ok;
}

typedef struct {
	guint batch;          /* messages a transaction */
	PgateThreadingStats stats;
	gboolean done;        /* the new generation is live */
	gboolean drop_old;    /* (the transaction after): empty the old one */
	guint64 last;         /* the last message threaded */
	/* this batch's, added to stats when it commits */
	guint64 messages, unreadable, first_unreadable;
} RethreadCtx;

static gboolean
rethread_batch(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	RethreadCtx *c = payload;
	g_autoptr(PgateThreading) t = pgate_threading_new();
	g_autoptr(GError) local = NULL;
	PgateStoreMessageIter it;
	PgateMessageRec *rec;
	guint64 done;
	guint n = 0;
	guint8 rules[4];

	c->messages = c->unreadable = c->first_unreadable = 0;
	if (c->drop_old)
		return pgate_store_derived_shadow(txn, error) &&
		       pgate_store_derived_clear(txn, error);
	if (!progress_get(txn, &done, error) ||
	    !pgate_store_derived_shadow(txn, error))
		return FALSE;
	/* a new start empties what an older attempt, or the generation
	 * before the live one, left there */
	if (done == 0 && !pgate_store_derived_clear(txn, error))
		return FALSE;
	if (done == 0)
		c->stats = (PgateThreadingStats){ 0 };
	pgate_store_message_iter_init(&it, txn);
	it.next = done + 1;
	while (n < c->batch &&
	       pgate_store_message_iter_next_readable(&it, &rec, NULL, NULL,
						      &local)) {
		g_autoptr(PgateMessageRec) r = rec;

		n++;
		if (!note_added(txn, r, t, FALSE, error))
			return FALSE;
	}
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	c->messages = n;
	c->unreadable = it.unreadable;
	c->first_unreadable = it.first_unreadable;
	c->last = it.next - 1;
	if (!pgate_threading_hook_commit(txn, t, error))
		return FALSE;
	if (n + it.unreadable > 0 || c->last > done)
		return progress_put(txn, c->last, error);
	/* nothing was left: the new generation becomes the live one */
	c->done = TRUE;
	rules_value(rules);
	return pgate_store_meta_delete(txn, PROGRESS_KEY, error) &&
	       pgate_store_meta_put(txn, RULES_KEY, rules, sizeof rules,
				    error) &&
	       pgate_store_derived_switch(txn, error) &&
	       pgate_store_set_rethread_needed(txn, FALSE, error) &&
	       pgate_store_set_threading_failed(txn, NULL, error);
}

/* The figures of the series the live generation holds. */
static gboolean
count_series(PgateStore *store, PgateThreadingStats *st, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GError) local = NULL;
	PgateStoreSeriesIter si;
	PgateSeriesRec *s;

	if (txn == NULL)
		return FALSE;
	pgate_store_series_iter_init(&si, txn);
	while (pgate_store_series_iter_next(&si, &s, &local)) {
		st->series++;
		st->complete += (s->flags & PGATE_SERIES_FLAG_COMPLETE) != 0;
		st->superseded += s->superseded_by != NULL;
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&si);
	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	return TRUE;
}

gboolean
pgate_threading_rethread_batched(PgateStore *store, guint batch,
				 PgateThreadingProgressFunc progress,
				 gpointer data, PgateThreadingStats *out_stats,
				 GError **error)
{
	RethreadCtx c = { .batch = batch > 0 ? batch :
				   PGATE_THREADING_RETHREAD_BATCH };

	while (!c.done) {
		if (!pgate_store_write(store, rethread_batch, &c, error))
			return FALSE;
		c.stats.messages += c.messages;
		if (c.stats.unreadable == 0)
			c.stats.first_unreadable = c.first_unreadable;
		c.stats.unreadable += c.unreadable;
		if (progress != NULL && !c.done &&
		    !progress(c.stats.messages, c.last, data)) {
			g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED,
				    "rethread stopped after message %"
				    G_GUINT64_FORMAT "; the next one goes on "
				    "from there", c.last);
			return FALSE;
		}
	}
	/* the old generation's pages back to the free list; a failure here
	 * leaves them to the next rethread, which empties them first */
	c.drop_old = TRUE;
	if (!pgate_store_write(store, rethread_batch, &c, error))
		return FALSE;
	if (!count_series(store, &c.stats, error))
		return FALSE;
	if (out_stats != NULL)
		*out_stats = c.stats;
	return TRUE;
}

gboolean
pgate_threading_rethread(PgateStore *store, PgateThreadingStats *out_stats,
			 GError **error)
{
	return pgate_threading_rethread_batched(store, 0, NULL, NULL,
						out_stats, error);
}
