/* pgate-parse-dump - prints what pgate_mail_parse() makes of messages.
 *
 *   pgate-parse-dump [--body] [--diff] FILE...   fields as "key: value"
 *   pgate-parse-dump --diff-only FILE            the diff as extracted
 *   pgate-parse-dump --patch-id < DIFF           pgate_patch_id_stable()
 *   pgate-parse-dump --ids FILE...               per FILE: "ID_RAW ID FILE"
 *   pgate-parse-dump --mbox --bench N MBOX       parse speed, in msgs/s
 *
 * A FILE may start with an mbox "From " line; an MBOX is read with the
 * ingest module's mboxrd reader.  For tests and for people, not for
 * programs: the output format may change.
 */
#include "ingest/ingest.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gboolean opt_body, opt_diff, opt_diff_only, opt_patch_id, opt_mbox;
static gboolean opt_ids;
static gint opt_bench;

static const GOptionEntry entries[] = {
	{ "body", 0, 0, G_OPTION_ARG_NONE, &opt_body, "print the body", NULL },
	{ "diff", 0, 0, G_OPTION_ARG_NONE, &opt_diff, "print the diff", NULL },
	{ "diff-only", 0, 0, G_OPTION_ARG_NONE, &opt_diff_only,
	  "print only the diff", NULL },
	{ "patch-id", 0, 0, G_OPTION_ARG_NONE, &opt_patch_id,
	  "patch-id of stdin", NULL },
	{ "ids", 0, 0, G_OPTION_ARG_NONE, &opt_ids,
	  "per FILE, the patch-id of its bytes and of the parsed mail ('-' "
	  "for none)", NULL },
	{ "mbox", 0, 0, G_OPTION_ARG_NONE, &opt_mbox, "FILEs are mboxes",
	  NULL },
	{ "bench", 0, 0, G_OPTION_ARG_INT, &opt_bench,
	  "parse every message N times, print the speed", "N" },
	{ NULL, 0, 0, 0, NULL, NULL, NULL },
};

static void
print_list(const char *key, GPtrArray *a)
{
	for (guint i = 0; i < a->len; i++)
		printf("%s: %s\n", key, (char *)g_ptr_array_index(a, i));
}

static void
print_str(const char *key, const char *v)
{
	if (v != NULL)
		printf("%s: %s\n", key, v);
}

static void
print_flags(PgateMsgFlags f)
{
	static const char *const names[] = {
		"synthetic-id", "id-conflict", "bad-date", "rfc", "resend",
		"binary", "automated",
	};
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		if ((f & (1u << i)) == 0)
			continue;
		if (s->len > 0)
			g_string_append_c(s, ',');
		g_string_append(s, names[i]);
	}
	printf("flags: %s\n", s->str);
	g_string_free(s, TRUE);
}

static void
print_mail(const PgateMail *mail)
{
	const PgateMessageRec *r = mail->rec;

	printf("kind: %s\n", pgate_msg_kind_to_string(r->kind));
	print_str("msgid", r->msgid);
	print_flags(r->flags);
	print_str("reject_reason", r->reject_reason);
	print_str("in_reply_to", r->in_reply_to);
	print_list("reference", r->references);
	print_str("subject", r->subject);
	print_str("name", r->name);
	print_list("prefix", r->prefixes);
	printf("version: %u\nnumber: %u\ntotal: %u\n", r->version, r->number,
	       r->total);
	print_str("from_name", r->from_name);
	print_str("from_email", r->from_email);
	printf("date: %" G_GINT64_FORMAT "\ntz_minutes: %d\n", r->date,
	       r->tz_minutes);
	print_str("list_id", r->list_id);
	print_list("to", r->to);
	print_list("cc", r->cc);
	print_str("pull_url", r->pull_url);
	print_str("patch_id", r->patch_id);
	printf("content_hash: ");
	for (int i = 0; i < 32; i++)
		printf("%02x", r->content_hash[i]);
	printf("\n");
	for (guint i = 0; i < r->trailers->len; i++) {
		PgateTrailer *t = g_ptr_array_index(r->trailers, i);

		printf("trailer: %s: %s\n", t->name, t->value);
	}
	print_str("base_commit", r->base_commit);
	print_str("change_id", r->change_id);
	print_list("prereq_patch_id", r->prereq_patch_ids);
	print_list("prereq_change_id", r->prereq_change_ids);
	print_list("prereq_message_id", r->prereq_message_ids);
	print_list("depends_on", r->depends_on);
	print_list("based_on", r->based_on);
	print_list("diff_file", r->diff_files);
	print_list("linked_msgid", r->linked_msgids);
	print_list("ref_msgid", r->ref_msgids);
	print_list("link_line", r->link_lines);
	if (opt_body)
		printf("body:\n%s\n", mail->body);
	if (opt_diff && mail->diff != NULL)
		printf("diff:\n%s", mail->diff);
}

/* The message without an mbox "From " line. */
static const char *
skip_from_line(const char *data, gsize *len)
{
	const char *nl;

	if (*len < 5 || memcmp(data, "From ", 5) != 0)
		return data;
	nl = memchr(data, '\n', *len);
	if (nl == NULL)
		return data;
	*len -= (gsize)(nl + 1 - data);
	return nl + 1;
}

static int
dump_file(const char *path, const PgateIngestOptions *o)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *data = NULL;
	g_autoptr(PgateMail) mail = NULL;
	const char *msg;
	gsize len;

	if (!g_file_get_contents(path, &data, &len, &error)) {
		fprintf(stderr, "pgate-parse-dump: %s\n", error->message);
		return 1;
	}
	msg = skip_from_line(data, &len);
	mail = pgate_mail_parse(msg, len, o);
	if (opt_ids) {
		g_autofree char *raw = pgate_patch_id_stable(data,
			(gsize)(msg - data) + len);

		printf("%s %s %s\n", raw != NULL ? raw : "-",
		       mail->rec->patch_id != NULL ? mail->rec->patch_id : "-",
		       path);
		return 0;
	}
	if (opt_diff_only) {
		if (mail->diff != NULL)
			fputs(mail->diff, stdout);
		return 0;
	}
	print_mail(mail);
	return 0;
}

static GPtrArray *
read_mbox(const char *path)
{
	g_autoptr(GPtrArray) msgs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(PgateMboxReader) r = NULL;
	g_autoptr(GError) error = NULL;
	GBytes *b;
	gboolean truncated;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror(path);
		return NULL;
	}
	r = pgate_mbox_reader_new(fd, PGATE_MBOX_MBOXRD, 64u << 20);
	while (pgate_mbox_reader_next(r, &b, &truncated, &error))
		g_ptr_array_add(msgs, b);
	close(fd);
	if (error != NULL) {
		fprintf(stderr, "pgate-parse-dump: %s\n", error->message);
		return NULL;
	}
	return g_steal_pointer(&msgs);
}

static int
run_mbox(const char *path, const PgateIngestOptions *o)
{
	g_autoptr(GPtrArray) msgs = read_mbox(path);
	gint64 start;
	gsize bytes = 0;
	double secs;
	int rounds = MAX(opt_bench, 1);

	if (msgs == NULL)
		return 1;
	start = g_get_monotonic_time();
	for (int round = 0; round < rounds; round++) {
		for (guint i = 0; i < msgs->len; i++) {
			gsize len;
			const char *d = g_bytes_get_data(
				g_ptr_array_index(msgs, i), &len);
			PgateMail *mail = pgate_mail_parse(d, len, o);

			bytes += len;
			if (opt_bench == 0) {
				print_mail(mail);
				printf("\n");
			}
			pgate_mail_free(mail);
		}
	}
	secs = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	if (opt_bench > 0)
		printf("%u messages x %d in %.3f s: %.0f msgs/s, %.1f MB/s\n",
		       msgs->len, rounds, secs, msgs->len * rounds / secs,
		       bytes / secs / 1e6);
	return 0;
}

static int
run_patch_id(void)
{
	g_autoptr(GByteArray) in = g_byte_array_new();
	g_autofree char *id = NULL;
	guint8 buf[65536];
	ssize_t n;

	while ((n = read(0, buf, sizeof buf)) > 0)
		g_byte_array_append(in, buf, (guint)n);
	id = pgate_patch_id_stable((const char *)in->data, in->len);
	if (id != NULL)
		printf("%s\n", id);
	return 0;
}

int
main(int argc, char **argv)
{
	g_autoptr(GOptionContext) ctx = g_option_context_new("FILE...");
	g_autoptr(GError) error = NULL;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	int rc = 0;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "pgate-parse-dump: %s\n", error->message);
		return 2;
	}
	pgate_ingest_init();
	pgate_ingest_options_resolve(&o);
	if (opt_patch_id)
		return run_patch_id();
	for (int i = 1; i < argc; i++) {
		if (opt_mbox)
			rc |= run_mbox(argv[i], &o);
		else
			rc |= dump_file(argv[i], &o);
		if (!opt_mbox && !opt_diff_only && !opt_ids && i + 1 < argc)
			printf("\n");
	}
	return rc;
}
