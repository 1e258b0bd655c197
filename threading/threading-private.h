/* threading-private.h - shared between the threading module's files. */
#pragma once

#include "threading/threading.h"

/* The most linked Message-IDs kept per series (the "link" rule). */
#define PGATE_THREADING_MAX_LINKS 64

#define PGATE_THREADING_ERROR (pgate_threading_error_quark())
GQuark pgate_threading_error_quark(void);

typedef struct {
	const char *id;    /* (borrowed) NULL: a free slot */
	gpointer val;
	guint hash;
} PgateThrIdSlot;

/* Message-ID -> pointer, open addressing.  Emptied once a transaction,
 * or once a unit, and filled again with about as many IDs: emptying
 * keeps the slots (GHashTable shrank to 8 buckets each time and grew
 * back in 10 steps, reallocating as it went), and touches only the slots
 * filled when they are few.  All zeroes is an empty map. */
typedef struct {
	PgateThrIdSlot *slots;
	guint mask;        /* slots - 1, a power of two less one */
	guint len;
	guint *used;       /* the indexes of the len slots filled (room for
			    * half the slots) */
} PgateThrIdMap;

/* A message of PgateThrFresh, and the usable references of it
 * (pgate_threading__refs_append()) noted when it was added: by the time
 * the units are formed the records have left the CPU's caches, and
 * reading the references anew was two cache misses a message. */
typedef struct {
	PgateMessageRec *rec; /* (borrowed) or NULL */
	guint32 refs_start;   /* in PgateThrFresh.refs */
	guint32 refs_len;
} PgateThrFreshMsg;

/* The messages added in the current transaction, as their caller holds
 * them (equal to what the store would return): by number, which the
 * store hands out in increasing order, so an array from the first. */
typedef struct {
	guint64 base;      /* the number of msgs[0] */
	GArray *msgs;      /* PgateThrFreshMsg */
	PgateThrIdMap by_id; /* Message-ID -> the one message with it (the
			      * store has no other), or PGATE_THR_FRESH_ASK:
			      * ask the store */
	GPtrArray *refs;   /* const char* (borrowed from the records) */
} PgateThrFresh;

/* (nullable): what @id maps to. */
gpointer pgate_threading__idmap_get(const PgateThrIdMap *m, const char *id);
/* Maps @id (borrowed: it must outlive the entry) to @val; returns FALSE
 * when @id was there already, and then maps it to @val too. */
gboolean pgate_threading__idmap_set(PgateThrIdMap *m, const char *id,
				    gpointer val);
/* Maps @id (borrowed, as above) to @val unless it is mapped already (the
 * first wins); returns whether it was added. */
gboolean pgate_threading__idmap_add(PgateThrIdMap *m, const char *id,
				    gpointer val);
/* (transfer none): the slot of @id, made (its val NULL, its id @id,
 * which the caller may replace with an equal string that lives longer)
 * when *@added. */
PgateThrIdSlot *pgate_threading__idmap_slot(PgateThrIdMap *m, const char *id,
					    gboolean *added);
void pgate_threading__idmap_clear(PgateThrIdMap *m);
void pgate_threading__idmap_free(PgateThrIdMap *m);

/* Message number -> record, open addressing; a free slot's rec is NULL.
 * Emptied for each unit without giving its slots back: a GHashTable
 * shrank to 8 buckets at each emptying and grew back as the next unit
 * filled it. */
typedef struct {
	guint64 num;
	gpointer rec;
} PgateThrNumSlot;

typedef struct {
	PgateThrNumSlot *slots;
	guint mask;        /* slots - 1, a power of two less one */
	GArray *used;      /* (element-type guint): the slots filled, in
			    * the order they were */
} PgateThrNumMap;

extern const char pgate_threading__fresh_ask[];
#define PGATE_THR_FRESH_ASK ((gpointer)pgate_threading__fresh_ask)

/* (nullable) (transfer none): message @num if it is fresh. */
static inline PgateMessageRec *
pgate_threading__fresh_get(const PgateThrFresh *f, guint64 num)
{
	if (f == NULL || num < f->base || num - f->base >= f->msgs->len)
		return NULL;
	return g_array_index(f->msgs, PgateThrFreshMsg, num - f->base).rec;
}

/* A unit: messages by number, and every Message-ID visited (ghosts too).
 * The records are read-only to the unit's users. */
typedef struct {
	PgateThrNumMap msgs_by_num; /* num -> PgateMessageRec* (in owned, or
				     * borrowed from fresh) */
	GPtrArray *msgs;   /* the same records, in the order they joined */
	GPtrArray *owned;  /* the records read from the store */
	const PgateThrFresh *fresh; /* (nullable): the messages added in
				     * this transaction: not read again */
	/* every Message-ID the units of this recomputation visited (ghosts
	 * too; copies in idcopies) -> the serial of the last unit that did:
	 * the current one's when it is @serial */
	PgateThrIdMap visited;
	GStringChunk *idcopies;
	guint serial;
	gboolean cut;      /* PGATE_THREADING_MAX_UNIT reached */
	/* series.c's tables, emptied by pgate_threading__unit_reset and
	 * used again by each unit formed with this one (a unit is a few
	 * messages; making and freeing five tables for each was a tenth of
	 * forming it) */
	GHashTable *f_old, *f_member_of;
	PgateThrIdMap f_used, f_owner, f_byid;
} PgateThrUnit;

PgateThrUnit *pgate_threading__unit_new(const PgateThrFresh *fresh);
/* Empties @u for the next unit (u->visited stays: it is the
 * recomputation's, told apart by u->serial). */
void pgate_threading__unit_reset(PgateThrUnit *u);
void pgate_threading__unit_free(PgateThrUnit *u);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateThrUnit, pgate_threading__unit_free)

/* A series's id: "s" and the first 12 hex digits of the SHA-256 of
 * @anchor (its cover's Message-ID, else its first member's), or of
 * "@anchor\n#@salt" when @salt is not 0 (another series of the unit has
 * the id already). */
char *pgate_threading__series_id(const char *anchor, guint salt);

/* Series dropped and formed since the links were last updated. */
typedef struct PgateThrLinks PgateThrLinks;
PgateThrLinks *pgate_threading__links_new(void);
void pgate_threading__links_free(PgateThrLinks *l);
/* Forgets the series noted (a new transaction), not what the link passes
 * keep from one transaction to the next. */
void pgate_threading__links_clear(PgateThrLinks *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateThrLinks, pgate_threading__links_free)

/* A series was just formed (@s: transfer full; the link pass takes it and
 * puts the record, once, with its links): its index entries but the
 * record are written; notes it (the link pass puts its name_keys entry
 * and the record). */
gboolean pgate_threading__links_formed(PgateStoreTxn *txn, PgateThrLinks *l,
				       PgateSeriesRec *s, GError **error);
/* (transfer full) (nullable): series @id if it was formed in this
 * transaction, no longer noted. */
PgateSeriesRec *pgate_threading__links_take_formed(PgateThrLinks *l,
						   const char *id);
/* A series was just deleted (@s: transfer full, as it was stored):
 * notes it (the link pass deletes its name_keys entry). */
gboolean pgate_threading__links_dropped(PgateStoreTxn *txn, PgateThrLinks *l,
					PgateSeriesRec *s, GError **error);
/* Recomputes supersedes/superseded_by of every series that can be
 * affected by the series noted (versions.c). */
gboolean pgate_threading__links_update(PgateStoreTxn *txn, PgateThrLinks *l,
				       GError **error);

/* series.c: drops series @id and its index entries; forms the series of
 * a unit, replacing those its messages had. */
gboolean pgate_threading__series_drop(PgateStoreTxn *txn, const char *id,
				      PgateThrLinks *links, GError **error);
gboolean pgate_threading__unit_form(PgateStoreTxn *txn, PgateThrUnit *u,
				    PgateThrLinks *links, GError **error);

/* unit.c helpers */
/* A string hash for the tables of Message-IDs and series ids: eight bytes
 * a step (g_str_hash takes one), which the link pass and the formation of
 * series call about twenty times a message. */
guint pgate_threading__str_hash(gconstpointer key);
gboolean pgate_threading__is_member_kind(const PgateMessageRec *rec);
gint64 pgate_threading__date(const PgateMessageRec *rec);
gint pgate_threading__rec_cmp(const PgateMessageRec *a,
			      const PgateMessageRec *b);
/* Appends to @out the usable references of @rec, oldest first, In-Reply-To
 * last if it is not among them, each once; pointers into @rec. */
void pgate_threading__refs_append(const PgateMessageRec *rec, GPtrArray *out);
/* pgate_threading__refs_append(), from what @f noted when @rec is one
 * of its messages. */
void pgate_threading__refs_of(const PgateThrFresh *f,
			      const PgateMessageRec *rec, GPtrArray *out);
/* (nullable) (transfer none): In-Reply-To, else the newest reference. */
const char *pgate_threading__parent(const PgateMessageRec *rec);

/* versions.c */

/* A series as the rules of the link pass see it (versions.c; its name
 * keys: name-keys.c). */
typedef struct {
	PgateSeriesRec *rec;
	gboolean own_rec;
	char *norm;              /* normalised name */
	char *strings;           /* what tokens and pnames point into */
	GPtrArray *tokens;       /* words of the name: sorted, distinct */
	GPtrArray *pnames;       /* normalised patch names: sorted, distinct */
	char *pids;              /* sorted patch-ids joined, or NULL */
	const char *min_pid;     /* the smallest of them, into rec */
	GPtrArray *pidset;       /* the patch-ids it has (borrowed from rec):
				  * sorted, distinct */
	char *person;            /* (nullable): its name_keys owner as a
				  * person ("\x02" and person_name()) */
	char *tree;              /* (nullable): the stable tree its subject
				  * names ("AUTOSEL 5.10", "6.1.y") */
	guint64 *kh;             /* (nullable): the hashes of its name keys,
				  * sorted, distinct (name_hashes()) */
	guint nkh;
	guint64 norm_h;          /* name_hashes(): of norm (0: none) */
	GPtrArray *ncand;        /* (nullable): for a series formed in this
				  * pass, the ids that share a name key
				  * with it (pgate_threading__name_pass()) */
	GPtrArray *nb;           /* (nullable): neighbours(), when asked in
				  * this pass (PgateThrSer*, borrowed from the
				  * pass's cache) */
	guint pass;              /* the last pass that used it */
	guint64 nb_mark;         /* the neighbours() call that last found it */
	gboolean dirty;
} PgateThrSer;

char *pgate_threading__name_norm(const char *name);
/* One person: the same address, or the same display name without b4's
 * " via B4 Relay" (case-folded). */
gboolean pgate_threading__same_person(const PgateSeriesRec *s,
				      const PgateSeriesRec *p);

/* name-keys.c */
/* Before the link pass: the name candidates of the series formed
 * (PgateThrSer*: each one's ncand), and the name_keys entries of those
 * formed and dropped (PgateThrSer*). */
gboolean pgate_threading__name_pass(PgateStoreTxn *txn, GPtrArray *formed,
				    GPtrArray *dropped, GError **error);
/* The ids of the name_keys entries of @S's owners (its address, its
 * person) within the window that share a key hash with it, appended to
 * @ids (which owns them); @S's key hashes are made first. */
gboolean pgate_threading__name_scan(PgateStoreTxn *txn, PgateThrSer *S,
				    GPtrArray *ids, GError **error);

/* series-json.c: (transfer full) (nullable) the series of the first stored
 * copy of @msgid. */
char *pgate_threading__series_of_msgid(PgateStoreTxn *txn, const char *msgid,
				       GError **error);
