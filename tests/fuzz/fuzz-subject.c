/* fuzz-subject.c - what the words of a mail say (ingest/subject.c).
 *
 * The input is text: its first line is a subject, the whole of it a mail
 * body.  Both are first made what the parser hands these functions (a
 * subject as pgate_ingest__clean_value() leaves it, a body with LF line
 * ends, no NUL and valid UTF-8: pgate_fuzz_clean_text()), then go through
 *
 *  - pgate_ingest__subject_is_reply() and pgate_ingest__subject_parse(),
 *    the subject and series-marker parser;
 *  - pgate_ingest__pull_url(), pgate_ingest__body_fields() (trailers, b4
 *    lines) and pgate_ingest__body_links() (archive URLs), with a patch's
 *    notes and with a cover's whole body.
 *
 * Checked: the record holds what store.h documents, and no list is longer
 * than the max_items it was given.
 */
#include "tests/fuzz/fuzz-private.h"

#include <string.h>

#include "ingest/ingest-private.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* small, so that the fuzzer reaches the bounds */
#define MAX_ITEMS 8

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pgate_fuzz_init();
	return 0;
}

static void
check_bounded(const PgateMessageRec *rec)
{
	PGATE_FUZZ_CHECK(rec->trailers->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->prereq_patch_ids->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->prereq_change_ids->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->prereq_message_ids->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->depends_on->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->based_on->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->linked_msgids->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->ref_msgids->len <= MAX_ITEMS);
	PGATE_FUZZ_CHECK(rec->link_lines->len <= MAX_ITEMS);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(PgateMessageRec) rec = NULL;
	g_autoptr(PgateMessageRec) cover = NULL;
	g_autofree char *subject = NULL;
	g_autofree char *body = NULL;
	g_autofree char *pull = NULL;
	const uint8_t *nl;
	gboolean reply;

	if (size > PGATE_FUZZ_MAX_INPUT)
		return -1;

	/* the subject: the first line, cleaned as parse.c cleans it */
	nl = memchr(data, '\n', size);
	subject = pgate_ingest__clean_value((const char *)data,
					    nl ? nl - data : (gssize)size,
					    PGATE_INGEST_MAX_SUBJECT);
	if (subject == NULL)
		subject = g_strdup("");
	PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(subject));
	PGATE_FUZZ_CHECK(strlen(subject) <= PGATE_INGEST_MAX_SUBJECT);

	rec = pgate_message_rec_new();
	rec->subject = g_strdup(subject);
	reply = pgate_ingest__subject_is_reply(subject);
	pgate_ingest__subject_parse(subject, rec);
	PGATE_FUZZ_CHECK(rec->name != NULL);

	/* the body: the whole input as text */
	body = pgate_fuzz_clean_text(data, size);
	pull = pgate_ingest__pull_url(body);
	PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(pull));
	pgate_ingest__body_fields(body, MAX_ITEMS, rec);
	pgate_ingest__body_links(body, TRUE, MAX_ITEMS, rec);
	rec->pull_url = g_steal_pointer(&pull);
	rec->msgid = g_strdup("fuzz@patchgate.invalid");
	pgate_fuzz_check_rec(rec);
	check_bounded(rec);

	/* a cover letter's links: the whole body, not only the notes */
	if (!reply) {
		cover = pgate_message_rec_new();
		cover->msgid = g_strdup("fuzz@patchgate.invalid");
		pgate_ingest__body_links(body, FALSE, MAX_ITEMS, cover);
		pgate_fuzz_check_rec(cover);
		check_bounded(cover);
	}
	return 0;
}
