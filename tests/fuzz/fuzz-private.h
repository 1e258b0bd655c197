/* fuzz-private.h - what the libFuzzer targets of tests/fuzz share.
 *
 * Each target is one LLVMFuzzerTestOneInput() (and an
 * LLVMFuzzerInitialize() that calls pgate_fuzz_init()).  A target never
 * prints: a finding is a crash, which libFuzzer turns into an artifact.
 * Crashes are made by the sanitizers, by a g_critical() (a failed
 * g_return_if_fail() is a bug: criticals are fatal here, as under
 * G_DEBUG=fatal-criticals in the tests), and by PGATE_FUZZ_CHECK(), which
 * aborts when an invariant that a header documents does not hold.
 *
 * See docs/fuzzing.md.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

G_BEGIN_DECLS

/* Inputs larger than this are skipped (returned from at once): the
 * modules bound sizes far above it, and big inputs only slow the search
 * down.  1 MiB. */
#define PGATE_FUZZ_MAX_INPUT (1u << 20)

/* Makes g_critical() and g_error() fatal, silences the rest of GLib's
 * logging (the modules' g_debug/g_message/g_warning about hostile mail
 * would drown libFuzzer's output), and ignores SIGPIPE.  Safe to call
 * twice. */
void pgate_fuzz_init(void);

/* Aborts with the failed condition on stderr: libFuzzer keeps the input
 * as a crash artifact. */
G_NORETURN void pgate_fuzz_fail(const char *what, const char *file, int line);

#define PGATE_FUZZ_CHECK(cond) \
	do { \
		if (G_UNLIKELY(!(cond))) \
			pgate_fuzz_fail(#cond, __FILE__, __LINE__); \
	} while (0)

/* NULL, or valid UTF-8 without a NUL before its end. */
gboolean pgate_fuzz_utf8_ok(const char *s);

/* The invariants store.h documents for a record the parser made: msgid
 * and from_email never NULL, Message-IDs without angle brackets, every
 * string (and every string of every array) UTF-8, a rejected record has
 * a reason.  Aborts when one does not hold. */
void pgate_fuzz_check_rec(const PgateMessageRec *rec);

/* @data as "cleaned" text (what ingest-private.h hands between its
 * files): NUL bytes dropped, CRLF and lone CR made LF, invalid UTF-8
 * replaced.  (transfer full) */
char *pgate_fuzz_clean_text(const uint8_t *data, size_t len);

G_END_DECLS
