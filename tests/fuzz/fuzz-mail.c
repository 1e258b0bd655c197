/* fuzz-mail.c - pgate_mail_parse() on the input, as one raw message.
 *
 * ingest.h promises that the parser never fails on bad mail: whatever the
 * bytes, a PgateMail comes back whose record holds what store.h documents
 * (pgate_fuzz_check_rec), with a body, and kind REJECTED with a reason
 * when it could not be read.  The limits are set low, so that the
 * fuzzer reaches the code that enforces them.
 */
#include "tests/fuzz/fuzz-private.h"

#include "ingest/ingest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pgate_fuzz_init();
	pgate_ingest_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PgateIngestOptions opts = PGATE_INGEST_OPTIONS_INIT;
	g_autoptr(PgateMail) mail = NULL;

	if (size > PGATE_FUZZ_MAX_INPUT)
		return -1;   /* not added to the corpus */
	opts.max_references = 8;
	opts.max_recipients = 8;
	opts.max_trailers = 8;
	mail = pgate_mail_parse((const char *)data, size, &opts);
	PGATE_FUZZ_CHECK(mail != NULL && mail->rec != NULL);
	PGATE_FUZZ_CHECK(mail->body != NULL);
	PGATE_FUZZ_CHECK(pgate_fuzz_utf8_ok(mail->body));
	pgate_fuzz_check_rec(mail->rec);
	PGATE_FUZZ_CHECK(mail->rec->references->len <= opts.max_references);
	PGATE_FUZZ_CHECK(mail->rec->to->len + mail->rec->cc->len <=
			 opts.max_recipients);
	PGATE_FUZZ_CHECK(mail->rec->trailers->len <= opts.max_trailers);
	return 0;
}
