/* fuzz-util.c - shared by the fuzz targets (see fuzz-private.h). */
#include "tests/fuzz/fuzz-private.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static GLogWriterOutput
quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
	     gpointer user_data)
{
	/* criticals and errors are bugs: shown, then fatal in g_logv() */
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		return g_log_writer_standard_streams(level, fields, n_fields,
						     user_data);
	return G_LOG_WRITER_HANDLED;
}

void
pgate_fuzz_init(void)
{
	static gsize once = 0;

	if (g_once_init_enter(&once)) {
		g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL);
		g_log_set_writer_func(quiet_writer, NULL, NULL);
		/* fuzz-mbox writes into a pipe whose reader may stop early */
		signal(SIGPIPE, SIG_IGN);
		g_once_init_leave(&once, 1);
	}
}

void
pgate_fuzz_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "pgate-fuzz: invariant failed at %s:%d: %s\n", file,
		line, what);
	fflush(stderr);
	abort();
}

gboolean
pgate_fuzz_utf8_ok(const char *s)
{
	return s == NULL || g_utf8_validate(s, -1, NULL);
}

static gboolean
id_ok(const char *s)
{
	return s == NULL ||
	       (pgate_fuzz_utf8_ok(s) && strpbrk(s, "<>") == NULL);
}

static void
check_strings(const GPtrArray *a, gboolean ids)
{
	PGATE_FUZZ_CHECK(a != NULL);
	for (guint i = 0; i < a->len; i++) {
		const char *s = a->pdata[i];

		PGATE_FUZZ_CHECK(s != NULL);
		PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(s));
		if (ids)
			PGATE_FUZZ_CHECK(id_ok(s));
	}
}

void
pgate_fuzz_check_rec(const PgateMessageRec *rec)
{
	const char *strings[] = {
		rec->subject, rec->name, rec->from_name, rec->from_email,
		rec->list_id, rec->pull_url, rec->patch_id, rec->base_commit,
		rec->change_id, rec->reject_reason,
	};

	PGATE_FUZZ_CHECK(rec->msgid != NULL && *rec->msgid != '\0');
	PGATE_FUZZ_CHECK(id_ok(rec->msgid));
	PGATE_FUZZ_CHECK(id_ok(rec->in_reply_to));
	PGATE_FUZZ_CHECK(rec->from_email != NULL);
	PGATE_FUZZ_CHECK(rec->kind <= PGATE_MSG_KIND_REJECTED);
	PGATE_FUZZ_CHECK(rec->kind != PGATE_MSG_KIND_REJECTED ||
			 rec->reject_reason != NULL);
	for (gsize i = 0; i < G_N_ELEMENTS(strings); i++)
		PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(strings[i]));
	check_strings(rec->references, TRUE);
	check_strings(rec->prefixes, FALSE);
	check_strings(rec->to, FALSE);
	check_strings(rec->cc, FALSE);
	check_strings(rec->prereq_patch_ids, FALSE);
	check_strings(rec->prereq_change_ids, FALSE);
	check_strings(rec->prereq_message_ids, TRUE);
	check_strings(rec->depends_on, FALSE);
	check_strings(rec->based_on, FALSE);
	check_strings(rec->diff_files, FALSE);
	check_strings(rec->linked_msgids, TRUE);
	check_strings(rec->ref_msgids, TRUE);
	check_strings(rec->link_lines, FALSE);
	PGATE_FUZZ_CHECK(rec->trailers != NULL);
	for (guint i = 0; i < rec->trailers->len; i++) {
		const PgateTrailer *t = rec->trailers->pdata[i];

		PGATE_FUZZ_CHECK(t != NULL && t->name != NULL &&
				 t->value != NULL);
		PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(t->name));
		PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(t->value));
	}
}

char *
pgate_fuzz_clean_text(const uint8_t *data, size_t len)
{
	g_autoptr(GString) s = g_string_sized_new(len + 1);

	for (size_t i = 0; i < len; i++) {
		if (data[i] == '\0')
			continue;
		if (data[i] == '\r') {
			g_string_append_c(s, '\n');
			if (i + 1 < len && data[i + 1] == '\n')
				i++;
			continue;
		}
		g_string_append_c(s, (char)data[i]);
	}
	return g_utf8_make_valid(s->str, (gssize)s->len);
}
