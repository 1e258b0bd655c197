/* fuzz-patch.c - the input of the apply stage: one mail read as `git am`
 * reads it, then its diff parsed by libgit2 and checked statically.
 *
 * As apply.c's read_item() and the static pass of pgate_apply_series():
 *
 *  - pgate_mailinfo_parse() on the bytes (and again with keep_cr);
 *  - pgate_apply__normalize_headers() on its diff, git_diff_from_buffer()
 *    on the result;
 *  - pgate_apply__check_static() on what libgit2 made of it (or on the text
 *    alone when libgit2 refused it), with the default options and with
 *    permissive ones (symlinks and gitlinks allowed, binary data over
 *    64 bytes refused), and pgate_apply__explicit_modes();
 *  - pgate_apply_find_base_commit() on the mail.
 *
 * Nothing touches a repository.  Checked: what apply.h promises of
 * PgateMailinfo (every field set, the message "" or ending in a newline;
 * an error with a message otherwise) and of a refusal (a reason).
 */
#include "tests/fuzz/fuzz-private.h"

#include <string.h>

#include "apply/apply-private.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pgate_fuzz_init();
	pgate_apply__git_init();
	return 0;
}

static void
check_mailinfo(const PgateMailinfo *mi)
{
	gsize n;
	const char *m;

	PGATE_FUZZ_CHECK(mi->author_name != NULL);
	PGATE_FUZZ_CHECK(mi->author_email != NULL);
	PGATE_FUZZ_CHECK(mi->subject != NULL);
	PGATE_FUZZ_CHECK(mi->message != NULL);
	PGATE_FUZZ_CHECK(mi->diff != NULL);
	m = mi->message;
	n = strlen(m);
	PGATE_FUZZ_CHECK(n == 0 || m[n - 1] == '\n');
}

static void
check_static(git_diff *diff, const char *text, gsize len,
	     const PgateApplyOptions *o)
{
	PgateApplyCheck chk = { 0 };

	if (!pgate_apply__check_static(diff, text, len, o, &chk))
		PGATE_FUZZ_CHECK(chk.reason != NULL);
	pgate_apply__check_clear(&chk);
}

static void
one(GBytes *raw, gboolean keep_cr)
{
	PgateApplyOptions defaults = PGATE_APPLY_OPTIONS_INIT;
	PgateApplyOptions permissive = PGATE_APPLY_OPTIONS_INIT;
	g_autoptr(PgateMailinfo) mi = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GBytes) text = NULL;
	g_autoptr(GHashTable) modes = NULL;
	PGATE_GIT_AUTO(git_diff) diff = NULL;
	GString *norm;
	const char *p;
	gsize len;

	mi = pgate_mailinfo_parse(raw, keep_cr, &err);
	if (mi == NULL) {
		PGATE_FUZZ_CHECK(err != NULL && err->message != NULL);
		PGATE_FUZZ_CHECK(err->domain == PGATE_APPLY_ERROR);
		return;
	}
	PGATE_FUZZ_CHECK(err == NULL);
	check_mailinfo(mi);

	text = g_bytes_ref(mi->diff);
	p = g_bytes_get_data(text, &len);
	if (len == 0)
		return;
	norm = pgate_apply__normalize_headers(p, len);
	if (norm != NULL) {
		g_bytes_unref(text);
		text = g_string_free_to_bytes(norm);
		p = g_bytes_get_data(text, &len);
	}
	if (git_diff_from_buffer(&diff, p, len) != 0)
		diff = NULL;   /* the text alone is still checked */

	check_static(diff, p, len, &defaults);
	permissive.allow_symlinks = TRUE;
	permissive.allow_submodules = TRUE;
	permissive.max_binary_bytes = 64;
	permissive.max_files = 0;
	check_static(diff, p, len, &permissive);
	modes = pgate_apply__explicit_modes(p, len);
	PGATE_FUZZ_CHECK(modes != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(GPtrArray) raws = NULL;
	g_autofree char *base = NULL;

	if (size > PGATE_FUZZ_MAX_INPUT)
		return -1;
	raw = g_bytes_new(data, size);
	one(raw, FALSE);
	one(raw, TRUE);

	raws = g_ptr_array_new();
	g_ptr_array_add(raws, raw);
	base = pgate_apply_find_base_commit(raws);
	PGATE_FUZZ_CHECK(base == NULL || pgate_fuzz_utf8_ok(base));
	return 0;
}
