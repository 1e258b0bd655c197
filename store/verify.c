/* verify.c - reading the whole store to say what is damaged.
 *
 * What LMDB trusts: the two meta pages at the start of data.mdb (it checks
 * their magic number and version, and nothing of the page numbers and
 * sizes that tell it where everything else is), and every page it reaches
 * from them (it checks a page's number and type, not the offsets inside
 * it).  A flipped byte in either can make it read outside the file: a
 * SIGBUS or SIGSEGV, not an error.  pgate_store__check_header() checks the
 * meta pages, cheaply enough for every open; pgate_store_verify() walks
 * everything, which only `patchgate store verify` does (in a process of
 * its own, for the pages no check can vouch for).
 *
 * The meta page (LMDB 0.9; lmdb.h does not export it), with Z the size
 * of a size_t (8 on a 64-bit machine: the offsets given are for that):
 * the page header (Z page number, u16 pad, u16 flags at Z + 2: 0x08 for
 * a meta page, u16 lower, u16 upper; Z + 8 bytes, 16), then
 *
 *   16 u32 magic 0xBEEFC0DE   20 u32 format version (1)
 *   24 address (Z)   32 map size (Z)
 *   40 the free-page database: u32 pad (the page size, in the meta pages),
 *      u16 flags, u16 depth, Z branch, leaf, overflow pages, Z entries,
 *      Z root (at 80)
 *   88 the main database, the same (root at 128)
 *  136 Z last page number  144 Z transaction id
 *
 * in the machine's byte order.  LMDB reads the one of the two with the
 * higher transaction id (the first on a tie).
 */
#include "store/store-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define Z sizeof(size_t)
#define PAGE_HDR (Z + 8)
#define META_DB(i) (PAGE_HDR + 8 + 2 * Z + (i) * (8 + 5 * Z))
#define META_ROOT(i) (META_DB(i) + 8 + 4 * Z)
#define META_LAST_PG META_DB(2)
#define META_TXNID (META_DB(2) + Z)
#define META_LEN (META_DB(2) + 2 * Z)

#define META_MAGIC 0xBEEFC0DEu
#define META_VERSION 1
#define P_META 0x08
#define P_INVALID ((guint64)(size_t)-1)

typedef struct {
	guint16 flags;
	guint32 magic, version, psize;
	guint64 free_root, main_root, last_pg, txnid;
} Meta;

static guint16
get16(const guint8 *p)
{
	guint16 v;

	memcpy(&v, p, sizeof v);
	return v;
}

static guint32
get32(const guint8 *p)
{
	guint32 v;

	memcpy(&v, p, sizeof v);
	return v;
}

/* a size_t, as LMDB writes page numbers and transaction ids */
static guint64
getz(const guint8 *p)
{
	size_t v;

	memcpy(&v, p, sizeof v);
	return (guint64)v;
}

static void
meta_parse(const guint8 *b, Meta *m)
{
	m->flags = get16(b + Z + 2);
	m->magic = get32(b + PAGE_HDR);
	m->version = get32(b + PAGE_HDR + 4);
	m->psize = get32(b + META_DB(0));
	m->free_root = getz(b + META_ROOT(0));
	m->main_root = getz(b + META_ROOT(1));
	m->last_pg = getz(b + META_LAST_PG);
	m->txnid = getz(b + META_TXNID);
}

/* What is wrong with meta page @i itself (its type, magic, version):
 * LMDB refuses such a file.  NULL when nothing. */
static char *
meta_framing(int i, const Meta *m)
{
	if (!(m->flags & P_META))
		return g_strdup_printf("page %d is not a meta page (flags "
				       "0x%x)", i, m->flags);
	if (m->magic != META_MAGIC)
		return g_strdup_printf("meta page %d: bad magic number 0x%08x",
				       i, m->magic);
	if (m->version != META_VERSION)
		return g_strdup_printf("meta page %d: format version %u, not %u",
				       i, m->version, META_VERSION);
	return NULL;
}

/* What is wrong with where meta page @i says things are, in a file of
 * @size bytes.  NULL when nothing. */
static char *
meta_layout(int i, const Meta *m, guint64 size)
{
	guint64 pages = size / m->psize;

	if (m->last_pg < 1 || m->last_pg >= pages)
		return g_strdup_printf("meta page %d: last page %" G_GUINT64_FORMAT
				       " is past the end of the file (%"
				       G_GUINT64_FORMAT " pages)", i,
				       m->last_pg, pages);
	if (m->main_root != P_INVALID &&
	    (m->main_root < 2 || m->main_root > m->last_pg))
		return g_strdup_printf("meta page %d: the main database's root "
				       "page %" G_GUINT64_FORMAT " is out of "
				       "range", i, m->main_root);
	if (m->free_root != P_INVALID &&
	    (m->free_root < 2 || m->free_root > m->last_pg))
		return g_strdup_printf("meta page %d: the free list's root page %"
				       G_GUINT64_FORMAT " is out of range", i,
				       m->free_root);
	return NULL;
}

static gboolean
read_at(int fd, guint8 *buf, gsize len, guint64 off, gboolean *out_short,
	GError **error)
{
	gsize done = 0;

	*out_short = FALSE;
	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, PGATE_STORE_ERROR,
				    pgate_error_errno_code(errno),
				    "read data.mdb: %s", g_strerror(errno));
			return FALSE;
		}
		if (n == 0) {
			*out_short = TRUE;
			return TRUE;
		}
		done += (gsize)n;
	}
	return TRUE;
}

gboolean
pgate_store__check_header(const char *path, GPtrArray *problems,
			  gboolean *out_usable, GError **error)
{
	guint8 b[2][META_LEN];
	Meta m[2];
	struct stat st;
	gboolean shrt = FALSE;
	char *why;
	int fd, use;

	*out_usable = TRUE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return TRUE;	/* a new store */
	if (fd < 0 || fstat(fd, &st) < 0) {
		g_set_error(error, PGATE_STORE_ERROR,
			    pgate_error_errno_code(errno), "open %s: %s", path,
			    g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	if (st.st_size == 0) {
		close(fd);
		return TRUE;	/* created, not written yet */
	}
	if (!read_at(fd, b[0], META_LEN, 0, &shrt, error)) {
		close(fd);
		return FALSE;
	}
	if (shrt) {
		close(fd);
		*out_usable = FALSE;
		g_ptr_array_add(problems, g_strdup_printf(
			"data.mdb is truncated (%" G_GUINT64_FORMAT " bytes)",
			(guint64)st.st_size));
		return TRUE;
	}
	meta_parse(b[0], &m[0]);
	if ((why = meta_framing(0, &m[0])) != NULL ||
	    m[0].psize < 512 || m[0].psize > 65536 ||
	    (m[0].psize & (m[0].psize - 1)) != 0) {
		/* without a page size, the second meta page is nowhere */
		close(fd);
		*out_usable = FALSE;
		g_ptr_array_add(problems, why ? why : g_strdup_printf(
			"meta page 0: bad page size %u", m[0].psize));
		return TRUE;
	}
	if (!read_at(fd, b[1], META_LEN, m[0].psize, &shrt, error)) {
		close(fd);
		return FALSE;
	}
	close(fd);
	if (shrt || (guint64)st.st_size < 2 * (guint64)m[0].psize) {
		*out_usable = FALSE;
		g_ptr_array_add(problems, g_strdup_printf(
			"data.mdb is truncated (%" G_GUINT64_FORMAT " bytes)",
			(guint64)st.st_size));
		return TRUE;
	}
	meta_parse(b[1], &m[1]);
	m[1].psize = m[0].psize;	/* LMDB reads it from page 0 only */
	if ((why = meta_framing(1, &m[1])) != NULL) {
		*out_usable = FALSE;
		g_ptr_array_add(problems, why);
		return TRUE;
	}
	/* LMDB goes by the newer one: damage there is fatal, in the other
	 * it is a problem the next commit overwrites */
	use = m[0].txnid < m[1].txnid ? 1 : 0;
	for (int i = 0; i < 2; i++) {
		int at = i == use ? 0 : (int)problems->len;

		why = meta_layout(i, &m[i], (guint64)st.st_size);
		if (why == NULL)
			continue;
		if (i == use)
			*out_usable = FALSE;
		g_ptr_array_insert(problems, at, why);
	}
	return TRUE;
}

/* ---- the walk ---- */

typedef struct {
	PgateStoreVerifyFunc fn;
	gpointer data;
	PgateStoreTxn *txn;
	int which;            /* the database walked */
	gboolean stale;       /* rethread_needed: derived state may be behind */
	guint64 problems;
	guint64 max_num;      /* the highest message number seen */
} Verify;

static void
say(Verify *v, PgateStoreVerifyEvent ev, const char *db, const char *key,
    const char *problem, guint64 entries)
{
	PgateStoreVerifyReport r = { ev, db, key, problem, entries };

	if (ev == PGATE_STORE_VERIFY_PROBLEM)
		v->problems++;
	v->fn(&r, v->data);
}

/* @len bytes of a key, printable: at most 120 of them shown */
static char *
printable(const guint8 *p, gsize len)
{
	GString *s = g_string_sized_new(len + 8);

	for (gsize i = 0; i < len && i < 120; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			g_string_append_c(s, (char)p[i]);
		else
			g_string_append_printf(s, "\\x%02x", p[i]);
	}
	if (len > 120)
		g_string_append(s, "...");
	return g_string_free(s, FALSE);
}

static gboolean
numeric_key(int which)
{
	return which == DBI_MESSAGES || which == DBI_RAW ||
	       which == DBI_MSG_SERIES;
}

static void
problem(Verify *v, const guint8 *key, gsize klen, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

static void
problem(Verify *v, const guint8 *key, gsize klen, const char *fmt, ...)
{
	g_autofree char *what = NULL, *k = NULL;
	va_list ap;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (key != NULL && klen == 8 && numeric_key(v->which))
		k = g_strdup_printf("%" G_GUINT64_FORMAT,
				    pgate_store__get_be64(key));
	else if (key != NULL)
		k = printable(key, klen);
	say(v, PGATE_STORE_VERIFY_PROBLEM, pgate_store__db_name(v->which), k,
	    what, 0);
}

/* Whether @key is in database @which: %FALSE with @error only when it
 * cannot be told (which ends the walk). */
static gboolean
exists(Verify *v, int which, const void *key, gsize klen, gboolean *out,
       GError **error)
{
	g_autoptr(GError) local = NULL;
	const guint8 *val;
	gsize len;

	*out = pgate_store__peek(v->txn, which, key, klen, &val, &len, &local);
	if (*out || g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
		return TRUE;
	g_propagate_prefixed_error(error, g_steal_pointer(&local),
				   "looking up %s: ",
				   pgate_store__db_name(which));
	return FALSE;
}

static gboolean
message_exists(Verify *v, const guint8 *key, gsize klen, guint64 num,
	       GError **error)
{
	guint8 kb[8];
	gboolean found;

	pgate_store__be64(kb, num);
	if (!exists(v, DBI_MESSAGES, kb, 8, &found, error))
		return FALSE;
	if (!found)
		problem(v, key, klen, "names message %" G_GUINT64_FORMAT
			", which is not stored", num);
	return TRUE;
}

/* @id (@len bytes, not NUL-terminated) is a stored series */
static gboolean
series_exists(Verify *v, const guint8 *key, gsize klen, const guint8 *id,
	      gsize len, GError **error)
{
	g_autofree char *s = g_strndup((const char *)id, len);
	guint8 kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	gsize kl = pgate_store__str_key(s, kb, &kp);
	gboolean found;

	if (!exists(v, DBI_SERIES, kp, kl, &found, error))
		return FALSE;
	if (!found) {
		g_autofree char *p = printable(id, len);

		problem(v, key, klen, "names series %s, which is not stored", p);
	}
	return TRUE;
}

static gboolean
check_meta(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	   gpointer data, GError **error)
{
	static const struct {
		const char *name;
		gsize len;     /* 0: any */
	} known[] = {
		{ "schema_version", 4 },
		{ "next_msgnum", 8 },
		{ "rethread_needed", 1 },
		{ "threading_rules", 4 },
	};

	g_autofree char *why = NULL;

	for (gsize i = 0; i < G_N_ELEMENTS(known); i++)
		if (klen == strlen(known[i].name) &&
		    memcmp(key, known[i].name, klen) == 0 &&
		    vlen != known[i].len)
			problem(data, key, klen, "value of %zu bytes, not %zu",
				vlen, known[i].len);
	/* the zstd dictionaries (schema 6): each one the dictionary its key
	 * names, zdict_current one of them */
	if (pgate_store__zdict_check_meta(((Verify *)data)->txn, key, klen,
					  val, vlen, &why) && why != NULL)
		problem(data, key, klen, "%s", why);
	return TRUE;
}

static gboolean
check_message(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	      gpointer data, GError **error)
{
	Verify *v = data;
	g_autoptr(GError) why = NULL;
	g_autoptr(PgateMessageRec) rec = NULL;
	guint8 ival[8 + 32], kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	gsize kl;
	guint64 num;
	gboolean found;

	if (klen != 8) {
		problem(v, key, klen, "key of %zu bytes, not 8", klen);
		return TRUE;
	}
	num = pgate_store__get_be64(key);
	v->max_num = MAX(v->max_num, num);
	rec = pgate_store__rec_decode(val, vlen, &why);
	if (rec == NULL) {
		problem(v, key, klen, "does not decode: %s", why->message);
		return TRUE;
	}
	/* the index finds it */
	kl = pgate_store__str_key(rec->msgid, kb, &kp);
	pgate_store__be64(ival, num);
	memcpy(ival + 8, rec->content_hash, 32);
	if (!pgate_store__has_dup(v->txn, DBI_MSGID_INDEX, kp, kl, ival,
				  sizeof ival, &found, error))
		return FALSE;
	if (!found)
		problem(v, key, klen, "<%s> with its content hash is not in "
			"msgid_index", rec->msgid);
	if (rec->raw_location == PGATE_RAW_INLINE) {
		const guint8 *raw;
		gsize len;
		g_autoptr(GError) local = NULL;

		if (pgate_store__peek(v->txn, DBI_RAW, key, 8, &raw, &len,
				      &local)) {
			g_autoptr(GBytes) plain = NULL;

			if (rec->raw_codec == PGATE_RAW_CODEC_NONE) {
				if (len != rec->raw_size)
					problem(v, key, klen, "its raw message "
						"is %zu bytes, the record says %"
						G_GUINT64_FORMAT, len,
						rec->raw_size);
			} else if ((plain = pgate_store__raw_decode(
					    v->txn, rec, raw, len,
					    &local)) == NULL) {
				/* decompressed whole, its size and zstd's
				 * checksum of it checked */
				problem(v, key, klen, "%s", local->message);
			}
		} else if (g_error_matches(local, PGATE_STORE_ERROR,
					   PGATE_ERROR_NOT_FOUND)) {
			problem(v, key, klen, "its raw message is missing");
		} else {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	return TRUE;
}

static gboolean
check_raw(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	  gpointer data, GError **error)
{
	Verify *v = data;
	gboolean found;

	if (klen != 8) {
		problem(v, key, klen, "key of %zu bytes, not 8", klen);
		return TRUE;
	}
	if (!exists(v, DBI_MESSAGES, key, 8, &found, error))
		return FALSE;
	if (!found)
		problem(v, key, klen, "no message record has this raw message");
	return TRUE;
}

static gboolean
check_msgid_index(const guint8 *key, gsize klen, const guint8 *val,
		  gsize vlen, gpointer data, GError **error)
{
	Verify *v = data;
	g_autoptr(GError) local = NULL;
	g_autoptr(PgateMessageRec) rec = NULL;
	guint8 kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	gsize kl;
	guint64 num;

	if (vlen != 8 + 32) {
		problem(v, key, klen, "entry of %zu bytes, not 40", vlen);
		return TRUE;
	}
	num = pgate_store__get_be64(val);
	rec = pgate_store_message_get(v->txn, num, &local);
	if (rec == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			problem(v, key, klen, "names message %" G_GUINT64_FORMAT
				", which is not stored", num);
		else if (!g_error_matches(local, PGATE_STORE_ERROR,
					  PGATE_ERROR_CORRUPT)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		/* (a record that does not decode: told with messages) */
		return TRUE;
	}
	kl = pgate_store__str_key(rec->msgid, kb, &kp);
	if (kl != klen || memcmp(kp, key, klen) != 0)
		problem(v, key, klen, "names message %" G_GUINT64_FORMAT
			", whose Message-ID is <%s>", num, rec->msgid);
	else if (memcmp(val + 8, rec->content_hash, 32) != 0)
		problem(v, key, klen, "the content hash of message %"
			G_GUINT64_FORMAT " differs", num);
	return TRUE;
}

/* refs_index: dups of a u64 message number */
static gboolean
check_refs(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	   gpointer data, GError **error)
{
	Verify *v = data;

	if (vlen != 8) {
		problem(v, key, klen, "entry of %zu bytes, not 8", vlen);
		return TRUE;
	}
	return v->stale || message_exists(v, key, klen,
					  pgate_store__get_be64(val), error);
}

/* author_index: sender \0 date(8) num(8) -> empty */
static gboolean
check_author(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	     gpointer data, GError **error)
{
	Verify *v = data;

	if (klen < 18 || key[klen - 17] != '\0' || vlen != 0) {
		problem(v, key, klen, "not an author entry (%zu bytes, value "
			"of %zu)", klen, vlen);
		return TRUE;
	}
	return v->stale || message_exists(v, key, klen,
					  pgate_store__get_be64(key + klen - 8),
					  error);
}

static gboolean
check_series(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	     gpointer data, GError **error)
{
	Verify *v = data;
	g_autoptr(GError) why = NULL;
	g_autoptr(PgateSeriesRec) rec = NULL;
	guint8 kb[PGATE_STORE__HASHED_KEY_LEN];
	const void *kp;
	gsize kl;

	rec = pgate_store__series_decode(val, vlen, &why);
	if (rec == NULL) {
		problem(v, key, klen, "does not decode: %s", why->message);
		return TRUE;
	}
	kl = pgate_store__str_key(rec->id, kb, &kp);
	if (kl != klen || memcmp(kp, key, klen) != 0)
		problem(v, key, klen, "holds series %s", rec->id);
	if (v->stale)
		return TRUE;
	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];

		if (!message_exists(v, key, klen, p->num, error))
			return FALSE;
	}
	return rec->cover_num == 0 ||
	       message_exists(v, key, klen, rec->cover_num, error);
}

/* msg_series: u64 number -> series id */
static gboolean
check_msg_series(const guint8 *key, gsize klen, const guint8 *val,
		 gsize vlen, gpointer data, GError **error)
{
	Verify *v = data;

	if (klen != 8) {
		problem(v, key, klen, "key of %zu bytes, not 8", klen);
		return TRUE;
	}
	if (v->stale)
		return TRUE;
	return message_exists(v, key, klen, pgate_store__get_be64(key), error) &&
	       series_exists(v, key, klen, val, vlen, error);
}

/* change_index, patchid_index, link_index: dups of a series id */
static gboolean
check_series_index(const guint8 *key, gsize klen, const guint8 *val,
		   gsize vlen, gpointer data, GError **error)
{
	Verify *v = data;

	return v->stale || series_exists(v, key, klen, val, vlen, error);
}

/* name_keys: sender (itself, or \x01 and 32 bytes) \0 date(8) series id */
static gboolean
check_name_keys(const guint8 *key, gsize klen, const guint8 *val,
		gsize vlen, gpointer data, GError **error)
{
	Verify *v = data;
	const guint8 *nul;
	gsize at;

	if (klen > 34 && key[0] == 0x01 && key[33] == '\0')
		at = 33;
	else if ((nul = memchr(key, '\0', klen)) != NULL)
		at = (gsize)(nul - key);
	else
		at = klen;
	if (at == 0 || klen < at + 1 + 8 + 1 || klen - at - 9 > 64) {
		problem(v, key, klen, "not a name key");
		return TRUE;
	}
	return v->stale || series_exists(v, key, klen, key + at + 9,
					 klen - at - 9, error);
}

/* stage, outbox: keys of 1 to 480 bytes; values are the stages' */
static gboolean
check_table(const guint8 *key, gsize klen, const guint8 *val, gsize vlen,
	    gpointer data, GError **error)
{
	if (klen == 0 || klen > 480)
		problem(data, key, klen, "key of %zu bytes", klen);
	return TRUE;
}

static const PgateStoreEntryFunc checks[DBI_COUNT] = {
	[DBI_META] = check_meta,
	[DBI_MESSAGES] = check_message,
	[DBI_RAW] = check_raw,
	[DBI_MSGID_INDEX] = check_msgid_index,
	[DBI_REFS_INDEX] = check_refs,
	[DBI_AUTHOR_INDEX] = check_author,
	[DBI_SERIES] = check_series,
	[DBI_MSG_SERIES] = check_msg_series,
	[DBI_CHANGE_INDEX] = check_series_index,
	[DBI_PATCHID_INDEX] = check_series_index,
	[DBI_NAME_KEYS] = check_name_keys,
	[DBI_LINK_INDEX] = check_series_index,
	[DBI_STAGE] = check_table,
	[DBI_OUTBOX] = check_table,
};

/* next_msgnum must be above every message number, or the next message
 * would overwrite one */
static void
check_next_msgnum(Verify *v)
{
	g_autoptr(GBytes) b = pgate_store_meta_get(v->txn, "next_msgnum", NULL);
	gsize len = 0;
	const guint8 *p = b ? g_bytes_get_data(b, &len) : NULL;
	guint64 next;

	if (v->max_num == 0 || len != 8)
		return;	/* none stored yet; a bad size is told with meta */
	next = pgate_store__get_be64(p);
	if (next <= v->max_num) {
		v->which = DBI_META;
		problem(v, (const guint8 *)"next_msgnum", 11, "%" G_GUINT64_FORMAT
			" is not above the highest message number, %"
			G_GUINT64_FORMAT, next, v->max_num);
		v->which = DBI_MESSAGES;
	}
}

/* Walks database @which in a transaction of its own: an error LMDB found
 * in one database leaves its transaction unusable, not the others'. */
static gboolean
walk_one(Verify *v, PgateStore *store, int which, GError **error)
{
	const char *name = pgate_store__db_name(which);
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GError) local = NULL;
	guint64 count = 0, recorded = 0;

	say(v, PGATE_STORE_VERIFY_BEGIN, name, NULL, NULL, 0);
	txn = pgate_store_begin_read(store, error);
	if (txn == NULL)
		return FALSE;
	v->txn = txn;
	v->which = which;
	if (!pgate_store__walk(txn, which, checks[which], v, &count, &recorded,
			       &local)) {
		if (pgate_error_is_transient(local)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		problem(v, NULL, 0, "%s", local->message);
	} else if (count != recorded) {
		problem(v, NULL, 0, "holds %" G_GUINT64_FORMAT " entries, its "
			"header says %" G_GUINT64_FORMAT, count, recorded);
	}
	if (which == DBI_MESSAGES)
		check_next_msgnum(v);
	v->txn = NULL;
	say(v, PGATE_STORE_VERIFY_END, name, NULL, NULL, count);
	return TRUE;
}

/* series_dates (index.c), when the store has it and the derived state
 * is not stale: each entry names a series of that date, superseded or
 * not and of that project as the entry says, and there is one entry a
 * series.  Only its problems are reported: it is not one of the
 * databases counted (an index a store may lack). */
typedef struct {
	Verify *v;
	PgateStoreTxn *txn;
	guint64 entries;
} DatesCheck;

static gboolean
check_date_entry(const PgateSeriesBrief *b, gpointer data, GError **error)
{
	DatesCheck *d = data;
	g_autoptr(GError) why = NULL;
	g_autoptr(PgateSeriesRec) rec = NULL;
	g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%s",
					       b->date, b->id);

	(void)error;
	d->entries++;
	rec = pgate_store_series_get(d->txn, b->id, &why);
	if (rec == NULL)
		say(d->v, PGATE_STORE_VERIFY_PROBLEM, "series_dates", key,
		    "names no series", 0);
	else if (rec->date != b->date ||
		 (rec->superseded_by != NULL) != b->superseded ||
		 g_strcmp0(rec->project ? rec->project : "",
			   b->project ? b->project : "") != 0)
		say(d->v, PGATE_STORE_VERIFY_PROBLEM, "series_dates", key,
		    "differs from the series (its date, project or "
		    "superseded_by)", 0);
	return TRUE;
}

static gboolean
check_dates(Verify *v, PgateStore *store, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);
	g_autoptr(GError) local = NULL;
	DatesCheck d = { v, NULL, 0 };
	gboolean absent = FALSE;
	guint64 series;

	if (txn == NULL)
		return FALSE;
	d.txn = txn;
	if (!pgate_store_series_dates_foreach(txn, G_MININT64, NULL,
					      check_date_entry, &d, &absent,
					      &local)) {
		if (pgate_error_is_transient(local)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		say(v, PGATE_STORE_VERIFY_PROBLEM, "series_dates", NULL,
		    local->message, 0);
		return TRUE;
	}
	if (absent)
		return TRUE;
	{
		MDB_stat st;

		series = mdb_stat(txn->txn, txn->dbi[DBI_SERIES], &st) == 0
			? (guint64)st.ms_entries : d.entries;
	}
	if (series != d.entries) {
		g_autofree char *what = g_strdup_printf(
			"holds %" G_GUINT64_FORMAT " entries for %"
			G_GUINT64_FORMAT " series", d.entries, series);

		say(v, PGATE_STORE_VERIFY_PROBLEM, "series_dates", NULL, what,
		    0);
	}
	return TRUE;
}

gboolean
pgate_store_verify(const char *dir, const PgateStoreOptions *opts,
		   PgateStoreVerifyFunc fn, gpointer data,
		   guint64 *out_problems, GError **error)
{
	g_autofree char *path = g_build_filename(dir, "data.mdb", NULL);
	g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(PgateStore) store = NULL;
	g_autoptr(GError) local = NULL;
	Verify v = { fn, data, NULL, DBI_META, FALSE, 0, 0 };
	gboolean usable = TRUE;

	if (out_problems)
		*out_problems = 0;
	say(&v, PGATE_STORE_VERIFY_BEGIN, "data.mdb", NULL, NULL, 0);
	if (access(path, F_OK) < 0) {
		pgate_store__missing(error, dir, errno);
		return FALSE;
	}
	if (!pgate_store__check_header(path, problems, &usable, error))
		return FALSE;
	for (guint i = 0; i < problems->len; i++)
		say(&v, PGATE_STORE_VERIFY_PROBLEM, "data.mdb", NULL,
		    problems->pdata[i], 0);
	if (usable) {
		store = pgate_store_open(dir, PGATE_STORE_RDONLY, opts, &local);
		if (store == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
						      PGATE_ERROR_CORRUPT)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		if (store == NULL)
			say(&v, PGATE_STORE_VERIFY_PROBLEM, "data.mdb", NULL,
			    local->message, 0);
	}
	say(&v, PGATE_STORE_VERIFY_END, "data.mdb", NULL, NULL, 0);
	if (store != NULL) {
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store,
								      error);

		if (txn == NULL)
			return FALSE;
		/* derived state behind the messages is not damage */
		v.stale = pgate_store_rethread_needed(txn);
	}
	for (int i = 0; store != NULL && i < DBI_COUNT; i++)
		if (!walk_one(&v, store, i, error))
			return FALSE;
	if (store != NULL && !v.stale && !check_dates(&v, store, error))
		return FALSE;
	if (out_problems)
		*out_problems = v.problems;
	return TRUE;
}
