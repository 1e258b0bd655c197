/* test-mbox.c - splitting mboxo/mboxrd files */
#include "ingest/ingest.h"

#include <string.h>
#include <unistd.h>

/* Splits text with the reader and returns the messages joined by "|". */
static char *
split(const char *text, PgateMboxFormat fmt, gsize max, guint *out_trunc)
{
	int fds[2];
	g_autoptr(PgateMboxReader) r = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	GBytes *b;
	gboolean trunc;
	guint n = 0, ntrunc = 0;
	g_autofree char *path = NULL;
	int fd = g_file_open_tmp("pgate-mbox-XXXXXX", &path, &error);

	g_assert_no_error(error);
	g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
	lseek(fd, 0, SEEK_SET);
	(void)fds;
	r = pgate_mbox_reader_new(fd, fmt, max);
	while (pgate_mbox_reader_next(r, &b, &trunc, &error)) {
		if (n++)
			g_string_append_c(out, '|');
		g_string_append_len(out, g_bytes_get_data(b, NULL),
				    (gssize)g_bytes_get_size(b));
		ntrunc += trunc;
		g_bytes_unref(b);
	}
	g_assert_no_error(error);
	g_assert_cmpuint(pgate_mbox_reader_offset(r), ==, strlen(text));
	close(fd);
	unlink(path);
	if (out_trunc)
		*out_trunc = ntrunc;
	return g_string_free(g_steal_pointer(&out), FALSE);
}

#define SEP "From a@b Thu Jan  1 00:00:00 1970\n"

static void
test_basic(void)
{
	g_autofree char *s = split(SEP "A: 1\n\nbody\n\n" SEP "A: 2\n\nx\n\n",
				   PGATE_MBOX_MBOXRD, 1 << 20, NULL);

	g_assert_cmpstr(s, ==, "A: 1\n\nbody\n|A: 2\n\nx\n");
}

static void
test_mboxrd_unescape(void)
{
	g_autofree char *s = split(SEP "A: 1\n\n>From x\n>>From y\n >From z\n"
				   ">Fromage\n\n", PGATE_MBOX_MBOXRD, 1 << 20, NULL);

	g_assert_cmpstr(s, ==, "A: 1\n\nFrom x\n>From y\n >From z\n>Fromage\n");
}

static void
test_mboxo_unescape(void)
{
	g_autofree char *s = split(SEP "A: 1\n\n>From x\n>>From y\n\n",
				   PGATE_MBOX_MBOXO, 1 << 20, NULL);

	g_assert_cmpstr(s, ==, "A: 1\n\nFrom x\n>>From y\n");
}

/* "From " lines that are not separators: not after a blank line, or not
 * looking like "From SENDER DATE". */
static void
test_not_separators(void)
{
	g_autofree char *s = split(SEP "A: 1\n\nline\nFrom a@b Thu Jan  1 00:00:00 1970\n"
				   "\nFrom me to you\n\n" SEP "A: 2\n\n",
				   PGATE_MBOX_MBOXRD, 1 << 20, NULL);

	g_assert_cmpstr(s, ==, "A: 1\n\nline\nFrom a@b Thu Jan  1 00:00:00 1970\n"
			"\nFrom me to you\n|A: 2\n");
}

/* git format-patch's separator, and a file that is one bare message */
static void
test_format_patch_and_bare(void)
{
	g_autofree char *s = split("From 6445500b43129baac36c56d629cf1dd9e1104167 "
				   "Mon Sep 17 00:00:00 2001\nA: 1\n\nb\n",
				   PGATE_MBOX_MBOXRD, 1 << 20, NULL);
	g_autofree char *t = split("A: 1\nB: 2\n\nbody\n", PGATE_MBOX_MBOXRD,
				   1 << 20, NULL);
	g_autofree char *u = split("\n\n" SEP "A: 1\n", PGATE_MBOX_MBOXRD,
				   1 << 20, NULL);

	g_assert_cmpstr(s, ==, "A: 1\n\nb\n");
	g_assert_cmpstr(t, ==, "A: 1\nB: 2\n\nbody\n");
	g_assert_cmpstr(u, ==, "A: 1\n");
}

static void
test_truncated(void)
{
	guint ntrunc = 0;
	g_autofree char *s = split(SEP "A: 1\n\n0123456789abcdef\n\n" SEP "B: 2\n\n",
				   PGATE_MBOX_MBOXRD, 10, &ntrunc);

	g_assert_cmpstr(s, ==, "A: 1\n\n0123|B: 2\n");
	g_assert_cmpuint(ntrunc, ==, 1);
}

/* lines longer than the reader's 1 MiB buffer, and no final newline */
static void
test_long_lines(void)
{
	g_autofree char *longline = g_strnfill(3 * 1024 * 1024, 'x');
	g_autofree char *in = g_strconcat(SEP "A: 1\n\n", longline, "\n\n" SEP
					  "A: 2\n\nlast", NULL);
	g_autofree char *want = g_strconcat("A: 1\n\n", longline, "\n|A: 2\n\nlast",
					    NULL);
	g_autofree char *s = split(in, PGATE_MBOX_MBOXRD, 64 << 20, NULL);

	g_assert_true(strcmp(s, want) == 0);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/mbox/basic", test_basic);
	g_test_add_func("/mbox/mboxrd-unescape", test_mboxrd_unescape);
	g_test_add_func("/mbox/mboxo-unescape", test_mboxo_unescape);
	g_test_add_func("/mbox/not-separators", test_not_separators);
	g_test_add_func("/mbox/format-patch-and-bare", test_format_patch_and_bare);
	g_test_add_func("/mbox/truncated", test_truncated);
	g_test_add_func("/mbox/long-lines", test_long_lines);
	return g_test_run();
}
