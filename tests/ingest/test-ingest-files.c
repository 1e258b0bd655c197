/* test-ingest-files.c - what ingest reads from and keeps in files: the
 * entries of a maildir (only regular files, never blocking, never
 * following a symlink), the quarantine (one file per stored record,
 * named relative to the state directory) and reading it back, older
 * records' paths included. */
#include "ingest/ingest.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	char *top;        /* a scratch directory, the working directory */
	char *oldcwd;
	PgateStore *store;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateStoreOptions so = PGATE_STORE_OPTIONS_INIT;

	(void)data;
	f->top = g_dir_make_tmp("pgate-ingest-files-XXXXXX", &error);
	g_assert_no_error(error);
	f->oldcwd = g_get_current_dir();
	g_assert_cmpint(chdir(f->top), ==, 0);
	/* a relative state directory, as `--state s` gives */
	f->store = pgate_store_open("s/store", PGATE_STORE_RW |
				    PGATE_STORE_CREATE, &so, &error);
	g_assert_no_error(error);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	(void)data;
	pgate_store_free(f->store);
	g_assert_cmpint(chdir(f->oldcwd), ==, 0);
	pgate_test_rm_rf(f->top);
	g_free(f->top);
	g_free(f->oldcwd);
}

static void
put(const char *path, const char *text)
{
	g_autoptr(GError) error = NULL;

	g_file_set_contents(path, text, -1, &error);
	g_assert_no_error(error);
}

static char *
message(const char *id, const char *body)
{
	return g_strdup_printf("From: Ann <ann@example.org>\nTo: l@example.org\n"
			       "Subject: %s\nDate: Mon, 2 Jan 2023 10:00:00 "
			       "+0000\nMessage-ID: <%s>\n\n%s\n", id, id, body);
}

static void
put_message(const char *path, const char *id)
{
	g_autofree char *m = message(id, "hello");

	put(path, m);
}

/* A maildir with two messages and four entries that are none. */
static void
make_hostile_maildir(void)
{
	g_assert_cmpint(g_mkdir_with_parents("md/new", 0700), ==, 0);
	g_assert_cmpint(g_mkdir_with_parents("md/cur", 0700), ==, 0);
	g_assert_cmpint(g_mkdir_with_parents("md/new/sub", 0700), ==, 0);
	put_message("md/new/1", "one@example.org");
	put_message("md/cur/2:2,S", "two@example.org");
	g_assert_cmpint(mkfifo("md/new/fifo", 0600), ==, 0);
	g_assert_cmpint(symlink("..", "md/new/dirlink"), ==, 0);
	put("secret", "SECRET-MARKER\n");
	g_assert_cmpint(chmod("secret", 0600), ==, 0);
	g_assert_cmpint(symlink("../../secret", "md/new/link"), ==, 0);
}

static void
collect_skipped(const char *path, const GError *why, gpointer data)
{
	GPtrArray *out = data;

	g_assert_error((GError *)why, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
	g_ptr_array_add(out, g_path_get_basename(path));
}

static GPtrArray *
stored_ids(PgateStore *store)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, &error);
	GPtrArray *ids = g_ptr_array_new_with_free_func(g_free);
	guint64 n;

	g_assert_no_error(error);
	n = pgate_store_message_count(txn);
	for (guint64 num = 1; num <= n; num++) {
		g_autoptr(PgateMessageRec) r = pgate_store_message_get(txn, num,
								       &error);

		g_assert_no_error(error);
		g_assert_null(strstr(r->subject ? r->subject : "", "SECRET"));
		g_ptr_array_add(ids, g_strdup(r->msgid));
	}
	return ids;
}

static void
test_maildir_skips(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) skipped = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) ids = NULL;
	g_autofree char *names = NULL;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateIngestStats st = { 0 };

	(void)data;
	make_hostile_maildir();
	o.skipped_entry = collect_skipped;
	o.skipped_entry_payload = skipped;
	g_assert_true(pgate_ingest_path(f->store, "s", "md", PGATE_MBOX_MBOXRD,
					&o, &st, NULL, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(st.read, ==, 2);
	g_assert_cmpuint(st.stored, ==, 2);
	g_assert_cmpuint(st.skipped, ==, 4);
	g_ptr_array_add(skipped, NULL);
	names = g_strjoinv(" ", (char **)skipped->pdata);
	g_assert_cmpstr(names, ==, "dirlink fifo link sub");
	ids = stored_ids(f->store);
	g_assert_cmpuint(ids->len, ==, 2);
	g_assert_cmpstr(ids->pdata[0], ==, "one@example.org");
	g_assert_cmpstr(ids->pdata[1], ==, "two@example.org");

	/* without a callback: one warning each, and the same counts */
	memset(&st, 0, sizeof st);
	o.skipped_entry = NULL;
	g_test_expect_message("pgate-ingest", G_LOG_LEVEL_WARNING,
			      "maildir: skipped: md/new/dirlink is a symbolic link*");
	g_test_expect_message("pgate-ingest", G_LOG_LEVEL_WARNING,
			      "maildir: skipped: md/new/fifo is a FIFO*");
	g_test_expect_message("pgate-ingest", G_LOG_LEVEL_WARNING,
			      "maildir: skipped: md/new/link is a symbolic link*");
	g_test_expect_message("pgate-ingest", G_LOG_LEVEL_WARNING,
			      "maildir: skipped: md/new/sub is a directory*");
	g_assert_true(pgate_ingest_path(f->store, "s", "md", PGATE_MBOX_MBOXRD,
					&o, &st, NULL, NULL, &error));
	g_test_assert_expected_messages();
	g_assert_no_error(error);
	g_assert_cmpuint(st.duplicates, ==, 2);
	g_assert_cmpuint(st.skipped, ==, 4);
}

/* A name with a newline does not make a second log line. */
static void
test_maildir_skip_escaped(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateIngestStats st = { 0 };

	(void)data;
	g_assert_cmpint(g_mkdir_with_parents("md/new", 0700), ==, 0);
	g_assert_cmpint(g_mkdir_with_parents("md/cur", 0700), ==, 0);
	g_assert_cmpint(mkfifo("md/new/x\nforged line", 0600), ==, 0);
	g_test_expect_message("pgate-ingest", G_LOG_LEVEL_WARNING,
			      "maildir: skipped: md/new/x\\nforged line is a FIFO*");
	g_assert_true(pgate_ingest_path(f->store, "s", "md", PGATE_MBOX_MBOXRD,
					&o, &st, NULL, NULL, &error));
	g_test_assert_expected_messages();
	g_assert_no_error(error);
	g_assert_cmpuint(st.skipped, ==, 1);
}

static void
test_maildir_file(Fixture *f, gconstpointer data)
{
	static const char *const refused[] = {
		"md/new/fifo", "md/new/sub", "md/new/dirlink", "md/new/link",
	};
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateStoreAddResult res;

	(void)data;
	make_hostile_maildir();
	for (gsize i = 0; i < G_N_ELEMENTS(refused); i++) {
		g_autoptr(GError) error = NULL;

		g_assert_false(pgate_ingest_maildir_file(f->store, "s",
							 refused[i], &o, &res,
							 NULL, &error));
		g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
		g_assert_nonnull(strstr(error->message, refused[i]));
	}
	{
		g_autoptr(GError) error = NULL;

		g_assert_false(pgate_ingest_maildir_file(f->store, "s",
							 "md/new/gone", &o,
							 &res, NULL, &error));
		g_assert_error(error, PGATE_INGEST_ERROR,
			       PGATE_ERROR_NOT_FOUND);
	}
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateMessageRec) rec = NULL;

		g_assert_true(pgate_ingest_maildir_file(f->store, "s",
							"md/new/1", &o, &res,
							&rec, &error));
		g_assert_no_error(error);
		g_assert_cmpint(res, ==, PGATE_STORE_ADDED);
		g_assert_cmpstr(rec->msgid, ==, "one@example.org");
	}
}

static guint
count_files(const char *dir)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	guint n = 0;

	while (d != NULL && g_dir_read_name(d) != NULL)
		n++;
	return n;
}

/* Delivers @text as `deliver` does, from a pipe. */
static PgateMessageRec *
deliver(PgateStore *store, const char *state_dir, const char *text,
	gsize max, PgateStoreAddResult *res)
{
	g_autoptr(GError) error = NULL;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateMessageRec *rec = NULL;
	g_autofree char *path = NULL;
	int fd = g_file_open_tmp("pgate-deliver-XXXXXX", &path, &error);

	g_assert_no_error(error);
	g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
	g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
	o.max_message_size = max;
	g_assert_true(pgate_ingest_deliver(store, state_dir, fd, &o, res, &rec,
					   &error));
	g_assert_no_error(error);
	close(fd);
	unlink(path);
	return rec;
}

static GBytes *
load(PgateStore *store, const char *state_dir, const PgateMessageRec *rec,
     GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	g_assert_nonnull(txn);
	return pgate_ingest_load_raw(txn, state_dir, rec, 1u << 20, error);
}

static void
test_quarantine_once(Fixture *f, gconstpointer data)
{
	g_autoptr(GString) body = g_string_new(NULL);
	g_autofree char *big = NULL, *other = NULL, *with_from = NULL;
	g_autofree char *abs_state = g_build_filename(f->top, "s", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(PgateMessageRec) first = NULL;
	PgateStoreAddResult res;

	(void)data;
	for (int i = 0; i < 200; i++)
		g_string_append(body, "a line of a long message\n");
	big = message("big@example.org", body->str);
	with_from = g_strconcat("From MAILER-DAEMON Mon Jan  2 10:00:00 2023\n",
				big, NULL);
	g_string_append(body, "and another ending\n");
	other = message("big@example.org", body->str);

	first = deliver(f->store, "s", big, 1000, &res);
	g_assert_cmpint(res, ==, PGATE_STORE_ADDED);
	g_assert_cmpint(first->raw_location, ==, PGATE_RAW_FILE);
	g_assert_true(g_str_has_prefix(first->raw_ref, "quarantine/"));
	g_assert_cmpuint(first->raw_size, ==, strlen(big));
	for (int i = 0; i < 2; i++) {
		g_autoptr(PgateMessageRec) again = deliver(
			f->store, "s", i == 0 ? big : with_from, 1000, &res);

		g_assert_cmpint(res, ==, PGATE_STORE_DUPLICATE);
		g_assert_cmpstr(again->raw_ref, ==, first->raw_ref);
	}
	/* one file per stored record, and no temporary one left */
	g_assert_cmpuint(count_files("s/quarantine"), ==, 1);

	/* the same Message-ID with other content is another record */
	{
		g_autoptr(PgateMessageRec) conflict = deliver(f->store, "s",
							      other, 1000, &res);

		g_assert_cmpint(res, ==, PGATE_STORE_ADDED_CONFLICT);
		g_assert_cmpstr(conflict->raw_ref, !=, first->raw_ref);
		g_assert_cmpuint(count_files("s/quarantine"), ==, 2);
	}

	/* read from elsewhere, given where the state directory is */
	g_assert_cmpint(chdir("/"), ==, 0);
	raw = load(f->store, abs_state, first, &error);
	g_assert_no_error(error);
	g_assert_cmpmem(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw),
			big, strlen(big));
	g_assert_cmpint(chdir(f->top), ==, 0);
}

/* Records written before raw_ref was relative to the state directory. */
static void
test_load_old_refs(Fixture *f, gconstpointer data)
{
	g_autofree char *abs_state = g_build_filename(f->top, "s", NULL);
	g_autofree char *abs_file = g_build_filename(f->top, "s", "quarantine",
						     "1700000000.42.eml", NULL);
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();
	g_autofree char *moved = g_build_filename(f->top, "moved", NULL);

	(void)data;
	g_assert_cmpint(g_mkdir_with_parents("s/quarantine", 0700), ==, 0);
	put("s/quarantine/1700000000.42.eml", "old message\n");
	rec->raw_location = PGATE_RAW_FILE;

	/* an absolute path: read as it is */
	rec->raw_ref = g_strdup(abs_file);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) b = load(f->store, "elsewhere", rec, &error);

		g_assert_no_error(error);
		g_assert_cmpuint(g_bytes_get_size(b), ==, 12);
	}
	/* relative to the working directory of `--state s deliver`: read
	 * from there as before, and from anywhere else through the state
	 * directory */
	g_free(rec->raw_ref);
	rec->raw_ref = g_strdup("s/quarantine/1700000000.42.eml");
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) b = load(f->store, "s", rec, &error);

		g_assert_no_error(error);
		g_assert_cmpuint(g_bytes_get_size(b), ==, 12);
	}
	g_assert_cmpint(chdir("/"), ==, 0);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) b = load(f->store, abs_state, rec, &error);

		g_assert_no_error(error);
		g_assert_cmpuint(g_bytes_get_size(b), ==, 12);
	}
	/* an absolute one, after the state directory moved */
	g_assert_cmpint(rename(abs_state, moved), ==, 0);
	g_free(rec->raw_ref);
	rec->raw_ref = g_strdup(abs_file);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) b = load(f->store, moved, rec, &error);

		g_assert_no_error(error);
		g_assert_cmpuint(g_bytes_get_size(b), ==, 12);
	}
	/* and one that is nowhere */
	g_free(rec->raw_ref);
	rec->raw_ref = g_strdup("quarantine/nothere.eml");
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GBytes) b = load(f->store, moved, rec, &error);

		g_assert_null(b);
		g_assert_error(error, PGATE_INGEST_ERROR,
			       PGATE_ERROR_NOT_FOUND);
	}
	g_assert_cmpint(rename(moved, abs_state), ==, 0);
	g_assert_cmpint(chdir(f->top), ==, 0);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, \
				 fixture_teardown)
	ADD("/ingest-files/maildir/skips", test_maildir_skips);
	ADD("/ingest-files/maildir/skip-escaped", test_maildir_skip_escaped);
	ADD("/ingest-files/maildir/file", test_maildir_file);
	ADD("/ingest-files/quarantine/once", test_quarantine_once);
	ADD("/ingest-files/quarantine/old-refs", test_load_old_refs);
	return g_test_run();
}
