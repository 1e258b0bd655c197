/* fuzz-mbox.c - the mbox splitter (PgateMboxReader) on the input as an
 * mbox, in both formats.
 *
 * For each format (mboxrd with a 1 MiB message bound, mboxo with a bound
 * of 1000 bytes, so that truncation is reached) the input is read twice:
 *
 *  - from a memfd holding all of it, which the reader gets in one read();
 *  - from a pipe in packet mode (O_DIRECT), written by a thread in pieces
 *    of 1 to 4096 bytes (log-uniform: mostly small), so that every read()
 *    returns one piece: lines and messages then straddle the reader's
 *    refills.  The piece sizes come
 *    from a generator seeded with the input's length: a given input is
 *    always cut the same way.
 *
 * Checked: both reads hand out the same messages (how the bytes arrive
 * must not change what the mbox holds); no message is longer than the
 * bound, a truncated one is exactly the bound, none is empty or only
 * white space; the messages hold no more bytes than the input; at the end
 * the reader's offset is the input's length.
 */
#include "tests/fuzz/fuzz-private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ingest/ingest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the pipe read is only tried when the reader's 1 MiB buffer cannot fill
 * up (a packet larger than the room left would be cut short) */
#define PIPE_MAX_INPUT (PGATE_FUZZ_MAX_INPUT / 2)

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pgate_fuzz_init();
	return 0;
}

typedef struct {
	GPtrArray *msgs;        /* (element-type GBytes) */
	GArray *truncated;      /* of gboolean */
	guint64 offset;         /* the reader's at the end */
	gboolean failed;        /* a read error */
} Split;

static void
split_clear(Split *s)
{
	g_clear_pointer(&s->msgs, g_ptr_array_unref);
	g_clear_pointer(&s->truncated, g_array_unref);
}

static void
split_read(int fd, PgateMboxFormat format, gsize max, Split *out)
{
	g_autoptr(PgateMboxReader) r = pgate_mbox_reader_new(fd, format, max);
	g_autoptr(GError) err = NULL;
	GBytes *msg;
	gboolean truncated;

	out->msgs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	out->truncated = g_array_new(FALSE, FALSE, sizeof(gboolean));
	while (pgate_mbox_reader_next(r, &msg, &truncated, &err)) {
		PGATE_FUZZ_CHECK(msg != NULL);
		g_ptr_array_add(out->msgs, msg);
		g_array_append_val(out->truncated, truncated);
	}
	PGATE_FUZZ_CHECK(msg == NULL);
	out->failed = err != NULL;
	out->offset = pgate_mbox_reader_offset(r);
}

/* ---- the two ways in ------------------------------------------------- */

static gboolean
write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return FALSE;
		p += w;
		n -= (size_t)w;
	}
	return TRUE;
}

static void
split_memfd(const uint8_t *data, size_t size, PgateMboxFormat format,
	    gsize max, Split *out)
{
	int fd = memfd_create("fuzz-mbox", MFD_CLOEXEC);

	PGATE_FUZZ_CHECK(fd >= 0);
	PGATE_FUZZ_CHECK(write_all(fd, data, size));
	PGATE_FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	split_read(fd, format, max, out);
	close(fd);
}

typedef struct {
	int fd;
	const uint8_t *data;
	size_t size;
} Writer;

/* xorshift32: the piece sizes, from the input's length */
static guint32
next_rand(guint32 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void *
writer_main(void *p)
{
	Writer *w = p;
	guint32 x = (guint32)w->size * 2654435761u | 1;
	size_t off = 0;

	while (off < w->size) {
		guint32 r = next_rand(&x);
		/* log-uniform sizes from 1 to 4096 (PIPE_BUF: a write of at
		 * most that is one packet): mostly small pieces, some big */
		size_t n = 1 + (r >> 4) % (1u << (r % 13));

		n = MIN(n, w->size - off);
		if (!write_all(w->fd, w->data + off, n))
			break;   /* the reader stopped (EPIPE) */
		off += n;
	}
	close(w->fd);
	return NULL;
}

static void
split_pipe(const uint8_t *data, size_t size, PgateMboxFormat format,
	   gsize max, Split *out)
{
	Writer w = { -1, data, size };
	pthread_attr_t attr;
	pthread_t t;
	int fds[2];

	PGATE_FUZZ_CHECK(pipe2(fds, O_CLOEXEC | O_DIRECT) == 0);
	w.fd = fds[1];
	/* a small stack: ASan clears the shadow of the whole stack of every
	 * new thread, which for the default 8 MiB costs more than the rest */
	PGATE_FUZZ_CHECK(pthread_attr_init(&attr) == 0);
	PGATE_FUZZ_CHECK(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
	PGATE_FUZZ_CHECK(pthread_create(&t, &attr, writer_main, &w) == 0);
	pthread_attr_destroy(&attr);
	split_read(fds[0], format, max, out);
	close(fds[0]);
	PGATE_FUZZ_CHECK(pthread_join(t, NULL) == 0);
}

/* ---- the checks ------------------------------------------------------ */

static gboolean
only_space(const guint8 *p, gsize n)
{
	for (gsize i = 0; i < n; i++)
		if (!g_ascii_isspace(p[i]))
			return FALSE;
	return TRUE;
}

static void
check_split(const Split *s, size_t size, gsize max)
{
	gsize total = 0;

	PGATE_FUZZ_CHECK(!s->failed);
	PGATE_FUZZ_CHECK(s->offset == size);
	for (guint i = 0; i < s->msgs->len; i++) {
		gsize n;
		const guint8 *p = g_bytes_get_data(s->msgs->pdata[i], &n);

		PGATE_FUZZ_CHECK(n <= max);
		PGATE_FUZZ_CHECK(!g_array_index(s->truncated, gboolean, i) ||
				 n == max);
		PGATE_FUZZ_CHECK(n > 0 && !only_space(p, n));
		total += n;
	}
	PGATE_FUZZ_CHECK(total <= size);
}

static void
check_same(const Split *a, const Split *b)
{
	PGATE_FUZZ_CHECK(a->msgs->len == b->msgs->len);
	for (guint i = 0; i < a->msgs->len; i++) {
		PGATE_FUZZ_CHECK(g_bytes_equal(a->msgs->pdata[i],
					       b->msgs->pdata[i]));
		PGATE_FUZZ_CHECK(g_array_index(a->truncated, gboolean, i) ==
				 g_array_index(b->truncated, gboolean, i));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		PgateMboxFormat format;
		gsize max;
	} runs[] = {
		{ PGATE_MBOX_MBOXRD, 1u << 20 },
		{ PGATE_MBOX_MBOXO, 1000 },
	};

	if (size > PGATE_FUZZ_MAX_INPUT)
		return -1;
	for (gsize i = 0; i < G_N_ELEMENTS(runs); i++) {
		Split whole = { 0 }, pieces = { 0 };

		split_memfd(data, size, runs[i].format, runs[i].max, &whole);
		check_split(&whole, size, runs[i].max);
		if (size <= PIPE_MAX_INPUT) {
			split_pipe(data, size, runs[i].format, runs[i].max,
				   &pieces);
			check_split(&pieces, size, runs[i].max);
			check_same(&whole, &pieces);
		}
		split_clear(&whole);
		split_clear(&pieces);
	}
	return 0;
}
