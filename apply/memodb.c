/* memodb.c - an object database backend in memory, written out as one
 * pack.
 *
 * pgate_apply_series() makes some six objects a patch (blobs, the trees on
 * the way to them, the commit).  Written as loose objects, each costs a
 * directory, a temporary file, a rename: on a slow file system more than
 * all the rest of applying.  So the objects are kept in memory (this
 * backend has the highest priority, so every write of the odb comes here
 * and every read looks here first) and stored at the end as one pack,
 * without deltas, through git_odb_write_pack() (libgit2's indexer writes
 * the .idx).  libgit2's own mempack backend is no use here: its dump packs
 * every object reachable from the commits, the whole tree, with delta
 * search.
 */
#include "apply/apply-private.h"

#include <git2/sys/odb_backend.h>
#include <string.h>
#include <zlib.h>

typedef struct {
	git_oid oid;
	git_object_t type;
	gsize len;
	guchar data[];
} MemObj;

typedef struct {
	git_odb_backend parent;
	GHashTable *objs;     /* git_oid * -> MemObj * (owned) */
	GPtrArray *order;     /* the MemObj, as written */
} MemOdb;

static guint
oid_hash(gconstpointer p)
{
	guint h;

	memcpy(&h, ((const git_oid *)p)->id, sizeof h);
	return h;
}

static gboolean
oid_eq(gconstpointer a, gconstpointer b)
{
	return git_oid_equal(a, b);
}

static int
mem_write(git_odb_backend *b, const git_oid *oid, const void *data,
	  size_t len, git_object_t type)
{
	MemOdb *db = (MemOdb *)b;
	MemObj *o;

	if (g_hash_table_contains(db->objs, oid))
		return 0;
	o = g_malloc(sizeof *o + len);
	git_oid_cpy(&o->oid, oid);
	o->type = type;
	o->len = len;
	memcpy(o->data, data, len);
	g_hash_table_insert(db->objs, &o->oid, o);
	g_ptr_array_add(db->order, o);
	return 0;
}

static int
mem_read(void **out, size_t *len, git_object_t *type, git_odb_backend *b,
	 const git_oid *oid)
{
	MemOdb *db = (MemOdb *)b;
	MemObj *o = g_hash_table_lookup(db->objs, oid);

	if (o == NULL)
		return GIT_ENOTFOUND;
	*out = git_odb_backend_data_alloc(b, o->len ? o->len : 1);
	if (*out == NULL)
		return -1;
	memcpy(*out, o->data, o->len);
	*len = o->len;
	*type = o->type;
	return 0;
}

static int
mem_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
		const git_oid *oid)
{
	MemOdb *db = (MemOdb *)b;
	MemObj *o = g_hash_table_lookup(db->objs, oid);

	if (o == NULL)
		return GIT_ENOTFOUND;
	*len = o->len;
	*type = o->type;
	return 0;
}

static int
mem_exists(git_odb_backend *b, const git_oid *oid)
{
	return g_hash_table_contains(((MemOdb *)b)->objs, oid);
}

static void
mem_free(git_odb_backend *b)
{
	MemOdb *db = (MemOdb *)b;

	g_hash_table_unref(db->objs);
	g_ptr_array_unref(db->order);
	g_free(db);
}

git_odb_backend *
pgate_apply__memodb_new(void)
{
	MemOdb *db = g_new0(MemOdb, 1);

	git_odb_init_backend(&db->parent, GIT_ODB_BACKEND_VERSION);
	db->parent.read = mem_read;
	db->parent.read_header = mem_read_header;
	db->parent.write = mem_write;
	db->parent.exists = mem_exists;
	db->parent.free = mem_free;
	db->objs = g_hash_table_new(oid_hash, oid_eq);
	db->order = g_ptr_array_new_with_free_func(g_free);
	return &db->parent;
}

/* the pack entry header: type and size, 4 then 7 bits a byte */
static void
pack_entry_header(GByteArray *out, git_object_t type, gsize size)
{
	guchar c = (guchar)((type << 4) | (size & 15));

	size >>= 4;
	while (size) {
		c |= 0x80;
		g_byte_array_append(out, &c, 1);
		c = size & 0x7f;
		size >>= 7;
	}
	g_byte_array_append(out, &c, 1);
}

gboolean
pgate_apply__memodb_flush(git_odb_backend *b, git_odb *odb, GError **error)
{
	MemOdb *db = (MemOdb *)b;
	g_autoptr(GByteArray) pack = NULL;
	g_autoptr(GChecksum) sum = NULL;
	git_odb_writepack *wp = NULL;
	git_indexer_progress stats = { 0 };
	guint8 digest[20];
	gsize dlen = sizeof digest;
	guint32 be;
	int rc;

	if (db->order->len == 0)
		return TRUE;
	pack = g_byte_array_new();
	g_byte_array_append(pack, (const guint8 *)"PACK", 4);
	be = GUINT32_TO_BE(2);
	g_byte_array_append(pack, (const guint8 *)&be, 4);
	be = GUINT32_TO_BE(db->order->len);
	g_byte_array_append(pack, (const guint8 *)&be, 4);
	for (guint i = 0; i < db->order->len; i++) {
		MemObj *o = db->order->pdata[i];
		uLongf zlen = compressBound(o->len);
		gsize at;

		pack_entry_header(pack, o->type, o->len);
		at = pack->len;
		g_byte_array_set_size(pack, at + zlen);
		if (compress2(pack->data + at, &zlen, o->data, o->len,
			      Z_BEST_SPEED) != Z_OK) {
			g_set_error_literal(error, PGATE_APPLY_ERROR,
					    PGATE_ERROR_IO, "compressing an object failed");
			return FALSE;
		}
		g_byte_array_set_size(pack, at + zlen);
	}
	sum = g_checksum_new(G_CHECKSUM_SHA1);
	g_checksum_update(sum, pack->data, pack->len);
	g_checksum_get_digest(sum, digest, &dlen);
	g_byte_array_append(pack, digest, sizeof digest);

	rc = git_odb_write_pack(&wp, odb, NULL, NULL);
	if (rc == 0)
		rc = wp->append(wp, pack->data, pack->len, &stats);
	if (rc == 0)
		rc = wp->commit(wp, &stats);
	if (wp != NULL)
		wp->free(wp);
	if (rc != 0)
		return pgate_apply__git_error(error, rc, "write the objects");
	g_hash_table_remove_all(db->objs);
	g_ptr_array_set_size(db->order, 0);
	return TRUE;
}
