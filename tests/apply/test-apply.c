/* test-apply.c - the apply library: mailinfo fields, hostile patches,
 * failures, "already applied", publishing.
 *
 * Repositories are made here with git itself (argv, no shell), with fixed
 * identities and dates; the equivalence with git am over a whole corpus is
 * t0500-apply-am.sh.  Tests that need git skip without it.
 */
#include "apply/apply.h"
#include "apply/apply-private.h"
#include "testutil.h"

#include <dlfcn.h>
#include <glib/gstdio.h>

#include <string.h>
#include <zlib.h>

/* ---- helpers -------------------------------------------------------------- */

static gboolean
have_git(void)
{
	g_autofree char *git = g_find_program_in_path("git");

	if (git == NULL)
		g_test_skip("needs git");
	return git != NULL;
}

static char **
git_env(void)
{
	char **env = g_get_environ();

	env = g_environ_setenv(env, "GIT_AUTHOR_NAME", "A U Thor", TRUE);
	env = g_environ_setenv(env, "GIT_AUTHOR_EMAIL", "author@example.org", TRUE);
	env = g_environ_setenv(env, "GIT_AUTHOR_DATE", "1600000000 +0000", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_NAME", "C O Mitter", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_EMAIL", "c@example.org", TRUE);
	env = g_environ_setenv(env, "GIT_COMMITTER_DATE", "1600000000 +0000", TRUE);
	env = g_environ_setenv(env, "GIT_CONFIG_NOSYSTEM", "1", TRUE);
	env = g_environ_setenv(env, "HOME", g_get_tmp_dir(), TRUE);
	return env;
}

/* runs git in @dir with the NULL-terminated arguments; its stdout,
 * stripped */
static char *
git(const char *dir, ...)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_auto(GStrv) env = git_env();
	g_autoptr(GError) err = NULL;
	g_autofree char *out = NULL, *errout = NULL;
	int status = 0;
	va_list ap;
	const char *a;

	g_ptr_array_add(argv, "git");
	g_ptr_array_add(argv, "-C");
	g_ptr_array_add(argv, (char *)dir);
	va_start(ap, dir);
	while ((a = va_arg(ap, const char *)) != NULL)
		g_ptr_array_add(argv, (char *)a);
	va_end(ap);
	g_ptr_array_add(argv, NULL);
	g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_SEARCH_PATH, NULL,
		     NULL, &out, &errout, &status, &err);
	g_assert_no_error(err);
	if (!g_spawn_check_wait_status(status, NULL))
		g_error("git %s failed: %s", (char *)argv->pdata[3], errout);
	return g_strstrip(g_steal_pointer(&out));
}

static void
put(const char *dir, const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	g_autofree char *d = g_path_get_dirname(p);

	g_mkdir_with_parents(d, 0755);
	g_assert_true(g_file_set_contents(p, content, -1, NULL));
}

static gint
cmp_strp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every path under @dir (but the object database), with its kind */
static void
list_tree(const char *top, const char *rel, GString *out)
{
	g_autofree char *dir = rel ? g_build_filename(top, rel, NULL) : g_strdup(top);
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	const char *name;

	while (d && (name = g_dir_read_name(d)) != NULL)
		g_ptr_array_add(names, g_strdup(name));
	g_ptr_array_sort(names, cmp_strp);
	for (guint i = 0; i < names->len; i++) {
		g_autofree char *r = rel ? g_build_filename(rel, names->pdata[i], NULL)
					 : g_strdup(names->pdata[i]);
		g_autofree char *p = g_build_filename(top, r, NULL);

		if (g_str_has_suffix(r, ".git/objects") || strcmp(r, "objects") == 0)
			continue;
		g_string_append_printf(out, "%s%s\n", r,
				       g_file_test(p, G_FILE_TEST_IS_SYMLINK) ? "@" :
				       g_file_test(p, G_FILE_TEST_IS_DIR) ? "/" : "");
		if (g_file_test(p, G_FILE_TEST_IS_DIR) &&
		    !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
			list_tree(top, r, out);
	}
}

static GBytes *
bytes_str(const char *s)
{
	return g_bytes_new_static(s, strlen(s));
}

static void
assert_bytes(GBytes *b, const char *want)
{
	gsize len;
	const char *got = g_bytes_get_data(b, &len);

	g_assert_cmpmem(got, len, want, strlen(want));
}

static GBytes *
mailf(const char *subject, const char *diff)
{
	char *s = g_strdup_printf(
		"From: Some One <someone@example.org>\n"
		"Subject: [PATCH] %s\n"
		"Date: Tue, 14 Nov 2023 22:13:20 +0100\n\n"
		"The body.\n---\n%s", subject, diff);

	return g_bytes_new_take(s, strlen(s));
}

static GPtrArray *
series(GBytes *first, ...)
{
	GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	va_list ap;
	GBytes *b;

	g_ptr_array_add(a, first);
	va_start(ap, first);
	while ((b = va_arg(ap, GBytes *)) != NULL)
		g_ptr_array_add(a, b);
	va_end(ap);
	return a;
}

/* git's base85, as in "GIT binary patch" data lines */
static void
base85_lines(GString *out, const guchar *data, gsize len)
{
	static const char a85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

	for (gsize off = 0; off < len; off += 52) {
		gsize n = MIN(52, len - off);

		g_string_append_c(out, n <= 26 ? 'A' + n - 1 : 'a' + n - 27);
		for (gsize i = 0; i < n; i += 4) {
			guint32 acc = 0;
			char enc[5];

			for (int k = 0; k < 4; k++)
				acc = (acc << 8) | (i + k < n ? data[off + i + k] : 0);
			for (int k = 4; k >= 0; k--) {
				enc[k] = a85[acc % 85];
				acc /= 85;
			}
			g_string_append_len(out, enc, 5);
		}
		g_string_append_c(out, '\n');
	}
}

/* a new binary file whose "literal" data claims @declared bytes and
 * inflates to @real bytes */
static char *
binary_patch(const char *path, gsize declared, gsize real, gboolean zeros)
{
	g_autofree guchar *raw = g_malloc0(real);
	uLongf zlen = compressBound(real);
	g_autofree guchar *z = g_malloc(zlen);
	GString *s = g_string_new(NULL);

	for (gsize i = 0; i < real && !zeros; i++)
		raw[i] = (guchar)(i * 7 + (i >> 8));
	g_assert_cmpint(compress(z, &zlen, raw, real), ==, Z_OK);
	g_string_append_printf(s, "diff --git a/%s b/%s\nnew file mode 100644\n"
			       "index 0000000..1111111\nGIT binary patch\n"
			       "literal %" G_GSIZE_FORMAT "\n", path, path, declared);
	base85_lines(s, z, zlen);
	g_string_append(s, "\nliteral 0\nHcmV?d00001\n\n");
	return g_string_free(s, FALSE);
}

/* ---- mailinfo --------------------------------------------------------------- */

/* Repeated rename/copy lines in one file header: git and libgit2 keep
 * the last; libgit2 1.5 leaks the ones it drops, so they are cut first
 * (tests/fuzz/crashers/fuzz-patch-libgit2-rename-leak). */
static void
test_normalize_repeated_rename(void)
{
	static const char in[] =
		"diff --git a/x b/y\n"
		"similarity index 90%\n"
		"rename from x\n"
		"rename to y\n"
		"similarity index 90%\n"
		"rename from z\n"
		"rename to w\n"
		"diff --git a/c b/d\n"
		"similarity index 80%\n"
		"copy from c\n"
		"copy to d\n"
		"copy from e\n"
		"--- a/c\n"
		"+++ b/d\n"
		"@@ -1 +1 @@\n"
		"-rename from q\n"
		"+rename from q\n";
	static const char want[] =
		"diff --git a/x b/y\n"
		"similarity index 90%\n"
		"similarity index 90%\n"
		"rename from z\n"
		"rename to w\n"
		"diff --git a/c b/d\n"
		"similarity index 80%\n"
		"copy to d\n"
		"copy from e\n"
		"--- a/c\n"
		"+++ b/d\n"
		"@@ -1 +1 @@\n"
		"-rename from q\n"
		"+rename from q\n";
	static const char plain[] =
		"diff --git a/x b/y\n"
		"similarity index 90%\n"
		"rename from x\n"
		"rename to y\n";
	g_autoptr(GString) out = pgate_apply__normalize_headers(in, strlen(in));
	g_autoptr(GString) none = pgate_apply__normalize_headers(plain,
								 strlen(plain));

	g_assert_nonnull(out);
	g_assert_cmpstr(out->str, ==, want);
	/* nothing repeated: nothing to change */
	g_assert_null(none);
}

static void
test_mailinfo_fields(void)
{
	static const char raw[] =
		"From 1234567890123456789012345678901234567890 Mon Sep 17 00:00:00 2001\n"
		"From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?= <jm@example.org>\n"
		"Date: Tue, 14 Nov 2023 22:13:20 +0130\n"
		"Subject: [PATCH v2 3/5] parser: handle\n"
		" =?UTF-8?q?caf=C3=A9?= tokens\n"
		"MIME-Version: 1.0\n"
		"Content-Type: text/plain; charset=UTF-8\n"
		"Content-Transfer-Encoding: quoted-printable\n"
		"\n"
		"The body, with a soft=\n"
		" line break and an =3D sign.   \n"
		"\n\n\n"
		"Signed-off-by: J=C3=B6rg <jm@example.org>\n"
		"---\n"
		" f | 2 +-\n"
		"\n"
		"diff --git a/f b/f\n";
	g_autoptr(GBytes) b = g_bytes_new_static(raw, sizeof raw - 1);
	g_autoptr(GError) err = NULL;
	g_autoptr(PgateMailinfo) mi = pgate_mailinfo_parse(b, FALSE, &err);

	g_assert_no_error(err);
	g_assert_cmpstr(mi->author_name, ==, "J\xc3\xb6rg M\xc3\xbcller");
	g_assert_cmpstr(mi->author_email, ==, "jm@example.org");
	g_assert_cmpstr(mi->subject, ==, "parser: handle caf\xc3\xa9 tokens");
	g_assert_true(mi->has_date);
	g_assert_cmpint(mi->author_time, ==, 1700000000 - 90 * 60);
	g_assert_cmpint(mi->author_tz, ==, 90);
	g_assert_cmpstr(mi->message, ==,
			"parser: handle caf\xc3\xa9 tokens\n\n"
			"The body, with a soft line break and an = sign.\n\n"
			"Signed-off-by: J\xc3\xb6rg <jm@example.org>\n");
	assert_bytes(mi->diff, "---\n f | 2 +-\n\ndiff --git a/f b/f\n");
}

static void
test_mailinfo_attachment(void)
{
	static const char raw[] =
		"From: Sender <s@example.org>\n"
		"Subject: Re: [PATCH] [RFC] x\n"
		"Content-Type: multipart/mixed; boundary=\"XX\"\n"
		"\n"
		"preamble\n"
		"--XX\n"
		"Content-Type: text/plain\n"
		"\n"
		"From: Real Author <real@example.org>\n"
		"Date: Mon, 1 Jan 2024 00:00:00 -0500\n"
		"\n"
		"Message text.\n"
		"--XX\n"
		"Content-Type: text/x-patch; name=x.patch\n"
		"Content-Transfer-Encoding: base64\n"
		"\n"
		/* "diff --git a/f b/f\n+x\n" */
		"ZGlmZiAtLWdpdCBhL2YgYi9mCit4Cg==\n"
		"--XX--\n";
	g_autoptr(GBytes) b = g_bytes_new_static(raw, sizeof raw - 1);
	g_autoptr(GError) err = NULL;
	g_autoptr(PgateMailinfo) mi = pgate_mailinfo_parse(b, FALSE, &err);

	g_assert_no_error(err);
	/* the in-body From: and Date: win, as the mail has a patch */
	g_assert_cmpstr(mi->author_name, ==, "Real Author");
	g_assert_cmpstr(mi->author_email, ==, "real@example.org");
	g_assert_cmpint(mi->author_time, ==, 1704085200);
	g_assert_cmpint(mi->author_tz, ==, -300);
	g_assert_cmpstr(mi->subject, ==, "x");
	g_assert_cmpstr(mi->message, ==, "x\n\nMessage text.\n");
	assert_bytes(mi->diff, "diff --git a/f b/f\n+x\n\n");
}

static void
test_mailinfo_errors(void)
{
	static const struct { const char *raw; int code; } cases[] = {
		{ "Subject: no author\n\nbody\n", PGATE_ERROR_INVALID },
		{ "From: a@example.org\nSubject: =?utf-8?q?broken\n\nb\n",
		  PGATE_ERROR_INVALID },
		{ "From: a@example.org\nSubject: x\nContent-Type: text/plain; "
		  "charset=us-ascii\n\ncaf\xe9\n", PGATE_ERROR_INVALID },
		{ "   \n\n", PGATE_ERROR_INVALID },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GBytes) b = g_bytes_new_static(cases[i].raw,
							 strlen(cases[i].raw));
		g_autoptr(GError) err = NULL;
		g_autoptr(PgateMailinfo) mi = pgate_mailinfo_parse(b, FALSE, &err);

		g_assert_null(mi);
		g_assert_error(err, PGATE_APPLY_ERROR, cases[i].code);
		g_assert_false(pgate_error_is_transient(err));
	}
	{
		gsize n = PGATE_MAILINFO_MAX_BYTES + 1;
		g_autofree char *big = g_malloc(n);
		g_autoptr(GBytes) b = NULL;
		g_autoptr(GError) err = NULL;
		g_autoptr(PgateMailinfo) mi = NULL;

		memset(big, 'a', n);
		b = g_bytes_new_static(big, n);
		mi = pgate_mailinfo_parse(b, FALSE, &err);
		g_assert_null(mi);
		g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_TOO_LARGE);
	}
}

/* ---- a repository to apply to ------------------------------------------------ */

typedef struct {
	char *top;      /* the test's directory */
	char *repo;     /* top/r: a work tree repository */
	char *base;     /* its master commit */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree char *t = NULL;

	f->top = g_dir_make_tmp("pgate-apply-XXXXXX", NULL);
	g_assert_nonnull(f->top);
	if (!have_git())
		return;
	f->repo = g_build_filename(f->top, "r", NULL);
	g_mkdir(f->repo, 0755);
	g_free(git(f->repo, "init", "-q", "-b", "master", NULL));
	put(f->repo, "a.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	    "nine\nten\neleven\ntwelve\nthirteen\nfourteen\n");
	put(f->repo, "dir/b.txt", "bee\n");
	t = g_build_filename(f->repo, "link", NULL);
	g_assert_cmpint(symlink("dir", t), ==, 0);
	g_free(git(f->repo, "add", "-A", NULL));
	g_free(git(f->repo, "commit", "-q", "-m", "base", NULL));
	f->base = git(f->repo, "rev-parse", "HEAD", NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	pgate_test_rm_rf(f->top);
	g_free(f->top);
	g_free(f->repo);
	g_free(f->base);
}

static PgateApplyResult *
apply(Fixture *f, const char *base, GPtrArray *raws, const PgateApplyOptions *o)
{
	g_autoptr(GError) err = NULL;
	PgateApplyResult *r = pgate_apply_series(f->repo, base ? base : f->base,
						 raws, o, &err);

	g_assert_no_error(err);
	g_assert_nonnull(r);
	return r;
}

/* ---- hostile patches ---------------------------------------------------------- */

#define NEWFILE(p) \
	"diff --git a/" p " b/" p "\nnew file mode 100644\nindex 0000000..5c1b14c\n" \
	"--- /dev/null\n+++ b/" p "\n@@ -0,0 +1 @@\n+pwned\n"

static void
test_safety(Fixture *f, gconstpointer data)
{
	/* dynamic: refused by the tree checks, when the patch before it has
	 * been applied; the others before anything is */
	static const struct { const char *name, *diff, *reason; gboolean dynamic; } cases[] = {
		{ "dotdot", NEWFILE("../escape"), "escapes the tree", FALSE },
		{ "dotdot-inner", NEWFILE("dir/../../escape"), "escapes the tree", FALSE },
		{ "absolute", NEWFILE("/tmp/pgate-escape"), "absolute path", FALSE },
		{ "dotgit", NEWFILE(".git/config"), ".git", FALSE },
		{ "dotgit-case", NEWFILE(".GIT/hooks/pre-commit"), ".git", FALSE },
		{ "dotgit-deep", NEWFILE("dir/.Git/hooks/post-checkout"), ".git", FALSE },
		{ "ntfs-dots", NEWFILE(".git. /config"), ".git", FALSE },
		{ "ntfs-stream", NEWFILE(".git::$INDEX_ALLOCATION/config"), ".git", FALSE },
		{ "ntfs-8.3", NEWFILE("GIT~1/config"), ".git", FALSE },
		{ "hfs", NEWFILE(".g\xe2\x80\x8cit/config"), ".git", FALSE },
		{ "symlink", "diff --git a/evil b/evil\nnew file mode 120000\n"
		  "index 0000000..1111111\n--- /dev/null\n+++ b/evil\n"
		  "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n",
		  "symbolic link", FALSE },
		{ "beneath-symlink", NEWFILE("link/x"), "beyond a symbolic link", TRUE },
		{ "submodule", "diff --git a/sub b/sub\nnew file mode 160000\n"
		  "index 0000000..1111111111111111111111111111111111111111\n"
		  "--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n"
		  "+Subproject commit 1111111111111111111111111111111111111111\n",
		  "submodule", FALSE },
		{ "gitlink-mode", "diff --git a/dir/b.txt b/dir/b.txt\n"
		  "old mode 100644\nnew mode 160000\n", "submodule", FALSE },
	};
	g_autoptr(GString) before = g_string_new(NULL);
	g_autoptr(GString) after = g_string_new(NULL);
	g_autofree char *parent = NULL;

	if (f->repo == NULL)
		return;
	parent = g_path_get_dirname(f->top);
	list_tree(f->top, NULL, before);
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GPtrArray) raws = series(
			mailf("fine", NEWFILE("fine.txt")),
			mailf(cases[i].name, cases[i].diff), NULL);
		g_autoptr(PgateApplyResult) r = apply(f, NULL, raws, NULL);

		g_test_message("%s: %s", cases[i].name, r->reason);
		g_assert_cmpint(r->status, ==, PGATE_APPLY_REJECTED);
		g_assert_cmpuint(r->failed_index, ==, 2);
		g_assert_nonnull(strstr(r->reason, cases[i].reason));
		g_assert_cmpuint(r->commits->len, ==, cases[i].dynamic ? 1 : 0);
		if (!cases[i].dynamic) {
			/* refused before anything was applied */
			g_autofree char *t = git(f->repo, "rev-parse",
						 "HEAD^{tree}", NULL);

			g_assert_cmpstr(r->tree, ==, t);
		}
	}
	/* nothing appeared outside the object database */
	list_tree(f->top, NULL, after);
	g_assert_cmpstr(after->str, ==, before->str);
	g_assert_false(g_file_test("/tmp/pgate-escape", G_FILE_TEST_EXISTS));
	{
		g_autofree char *esc = g_build_filename(parent, "escape", NULL);

		g_assert_false(g_file_test(esc, G_FILE_TEST_EXISTS));
	}
	{
		g_autofree char *st = git(f->repo, "status", "--porcelain", NULL);

		g_assert_cmpstr(st, ==, "");
	}
}

static void
test_symlink_then_write(Fixture *f, gconstpointer data)
{
	PgateApplyOptions o = PGATE_APPLY_OPTIONS_INIT;
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(PgateApplyResult) r = NULL;

	if (f->repo == NULL)
		return;
	o.allow_symlinks = TRUE;
	raws = series(mailf("link", "diff --git a/evil b/evil\n"
			    "new file mode 120000\nindex 0000000..1111111\n"
			    "--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+/etc\n"
			    "\\ No newline at end of file\n"),
		      mailf("through", NEWFILE("evil/passwd")), NULL);
	r = apply(f, NULL, raws, &o);
	/* allowed, the link is made; the write through it is not */
	g_assert_cmpint(r->status, ==, PGATE_APPLY_REJECTED);
	g_assert_cmpuint(r->failed_index, ==, 2);
	g_assert_cmpstr(r->failed_path, ==, "evil/passwd");
	g_assert_nonnull(strstr(r->reason, "beyond a symbolic link"));
	g_assert_cmpuint(r->commits->len, ==, 1);
	g_assert_false(g_file_test("/etc/passwd.pgate", G_FILE_TEST_EXISTS));
	/* and a link named .gitmodules is refused even then */
	g_clear_pointer(&raws, g_ptr_array_unref);
	g_clear_pointer(&r, pgate_apply_result_free);
	raws = series(mailf("gm", "diff --git a/.gitmodules b/.gitmodules\n"
			    "new file mode 120000\nindex 0000000..1111111\n"
			    "--- /dev/null\n+++ b/.gitmodules\n@@ -0,0 +1 @@\n"
			    "+x\n\\ No newline at end of file\n"), NULL);
	r = apply(f, NULL, raws, &o);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_REJECTED);
}

static void
test_limits(Fixture *f, gconstpointer data)
{
	PgateApplyOptions o = PGATE_APPLY_OPTIONS_INIT;
	g_autofree char *big = binary_patch("big.bin", 5000, 5000, FALSE);
	g_autofree char *bomb = binary_patch("bomb.bin", 100, 4u << 20, TRUE);
	g_autofree char *ok = binary_patch("ok.bin", 500, 500, FALSE);
	struct { const char *name; char *diff; gsize max_patch; guint max_files;
		 const char *reason; } cases[] = {
		{ "patch size", g_strdup(NEWFILE("x")), 100, 0, "bytes is over" },
		{ "file count", g_strdup(NEWFILE("x") NEWFILE("y")), 0, 1,
		  "2 files" },
		{ "binary size", g_strdup(big), 0, 0, "5000 bytes is over" },
		{ "zlib bomb", g_strdup(bomb), 0, 0, "corrupt binary" },
	};

	if (f->repo == NULL)
		return;
	o.max_binary_bytes = 1000;
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GPtrArray) raws = series(mailf(cases[i].name,
							 cases[i].diff), NULL);
		g_autoptr(PgateApplyResult) r = NULL;

		o.max_patch_bytes = cases[i].max_patch;
		o.max_files = cases[i].max_files;
		r = apply(f, NULL, raws, &o);
		g_test_message("%s: %s", cases[i].name, r->reason);
		g_assert_cmpint(r->status, ==, PGATE_APPLY_REJECTED);
		g_assert_nonnull(strstr(r->reason, cases[i].reason));
		g_free(cases[i].diff);
	}
	/* under the limits, the same kind of patch applies */
	{
		g_autoptr(GPtrArray) raws = series(mailf("ok", ok), NULL);
		g_autoptr(PgateApplyResult) r = NULL;
		g_autofree char *size = NULL, *spec = NULL;

		o.max_patch_bytes = 0;
		o.max_files = 0;
		r = apply(f, NULL, raws, &o);
		g_assert_cmpint(r->status, ==, PGATE_APPLY_OK);
		spec = g_strdup_printf("%s:ok.bin", r->head);
		size = git(f->repo, "cat-file", "-s", spec, NULL);
		g_assert_cmpstr(size, ==, "500");
	}
}

/* ---- failures ----------------------------------------------------------------- */

static void
test_failure(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(PgateApplyResult) r = NULL;
	/* hunk 1 applies, hunk 2's context is not in a.txt */
	static const char two_hunks[] =
		"diff --git a/a.txt b/a.txt\nindex 1234567..89abcde 100644\n--- a/a.txt\n+++ b/a.txt\n"
		"@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
		"@@ -10,3 +10,3 @@\n ten\n-ELEVEN\n+11\n twelve\n";

	if (f->repo == NULL)
		return;
	raws = series(mailf("first", NEWFILE("new.txt")),
		      mailf("second", two_hunks),
		      mailf("third", NEWFILE("third.txt")), NULL);
	r = apply(f, NULL, raws, NULL);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_FAILED);
	g_assert_cmpuint(r->failed_index, ==, 2);
	g_assert_cmpstr(r->failed_path, ==, "a.txt");
	g_assert_cmpuint(r->failed_hunk, ==, 2);
	g_assert_nonnull(strstr(r->reason, "does not apply"));
	g_assert_cmpuint(r->commits->len, ==, 1);
	g_assert_cmpint(((PgateApplyPatchResult *)r->patches->pdata[2])->state,
			==, PGATE_APPLY_PATCH_NOT_TRIED);
	g_clear_pointer(&raws, g_ptr_array_unref);
	g_clear_pointer(&r, pgate_apply_result_free);

	/* a file that is already there, one that is not */
	raws = series(mailf("exists", NEWFILE("a.txt")), NULL);
	r = apply(f, NULL, raws, NULL);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_FAILED);
	g_assert_nonnull(strstr(r->reason, "already exists"));
	g_clear_pointer(&raws, g_ptr_array_unref);
	g_clear_pointer(&r, pgate_apply_result_free);
	raws = series(mailf("missing", "diff --git a/nope b/nope\nindex 1234567..89abcde 100644\n"
			    "--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-a\n+b\n"), NULL);
	r = apply(f, NULL, raws, NULL);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_FAILED);
	g_assert_cmpstr(r->failed_path, ==, "nope");
	g_assert_nonnull(strstr(r->reason, "does not exist"));
	g_clear_pointer(&raws, g_ptr_array_unref);
	g_clear_pointer(&r, pgate_apply_result_free);
	/* the tree's types and contents, as git apply checks them */
	{
		static const struct { const char *diff, *path, *reason; } more[] = {
			{ "diff --git a/link b/link\nindex 1234567..89abcde 100644\n"
			  "--- a/link\n+++ b/link\n@@ -1 +1 @@\n-dir\n+dir2\n",
			  "link", "wrong type" },
			{ "diff --git a/dir/b.txt b/dir/b.txt\ndeleted file mode 100644\n"
			  "index 1234567..0000000\n--- a/dir/b.txt\n+++ /dev/null\n"
			  "@@ -1,2 +0,0 @@\n-bee\n-and more\n",
			  "dir/b.txt", "does not apply" },
			{ "diff --git a/dir/b.txt b/dir/b.txt\ndeleted file mode 100644\n"
			  "index 1234567..0000000\n--- a/dir/b.txt\n+++ /dev/null\n",
			  "dir/b.txt", "removal patch leaves file contents" },
			{ NEWFILE("a.txt/x"), "a.txt/x", "a.txt is a file" },
			{ NEWFILE("dir"), "dir", "dir/b.txt is still in it" },
		};

		for (gsize i = 0; i < G_N_ELEMENTS(more); i++) {
			g_clear_pointer(&raws, g_ptr_array_unref);
			g_clear_pointer(&r, pgate_apply_result_free);
			raws = series(mailf("more", more[i].diff), NULL);
			r = apply(f, NULL, raws, NULL);
			g_test_message("%s", r->reason);
			g_assert_cmpint(r->status, ==, PGATE_APPLY_FAILED);
			g_assert_cmpstr(r->failed_path, ==, more[i].path);
			g_assert_nonnull(strstr(r->reason, more[i].reason));
		}
	}
	g_clear_pointer(&raws, g_ptr_array_unref);
	g_clear_pointer(&r, pgate_apply_result_free);
	/* a mail without a diff */
	raws = series(mailf("cover", ""), NULL);
	r = apply(f, NULL, raws, NULL);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_FAILED);
	g_assert_cmpuint(r->failed_index, ==, 1);
}

static void
test_errors(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(PgateApplyResult) r = NULL;
	g_autofree char *missing = NULL;

	if (f->repo == NULL)
		return;
	raws = series(mailf("x", NEWFILE("x")), NULL);
	missing = g_build_filename(f->top, "no-such-repo", NULL);
	r = pgate_apply_series(missing, "master", raws, NULL, &err);
	g_assert_null(r);
	g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&err);
	r = pgate_apply_series(f->repo, "no-such-branch", raws, NULL, &err);
	g_assert_null(r);
	g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_NOT_FOUND);
}

static void
test_already_applied(Fixture *f, gconstpointer data)
{
	g_autofree char *p1 = NULL, *p2 = NULL, *picked = NULL, *out = NULL;
	g_autofree char *dir = NULL, *m1 = NULL, *m2 = NULL;
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(PgateApplyResult) r = NULL;
	gsize len;

	if (f->repo == NULL)
		return;
	/* a topic of two commits, mailed */
	g_free(git(f->repo, "checkout", "-q", "-b", "topic", NULL));
	put(f->repo, "a.txt", "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n"
	    "nine\nten\neleven\ntwelve\nthirteen\nfourteen\n");
	g_free(git(f->repo, "commit", "-q", "-am", "a: shout two", NULL));
	put(f->repo, "dir/b.txt", "bee\nsea\n");
	g_free(git(f->repo, "commit", "-q", "-am", "b: add sea", NULL));
	dir = g_build_filename(f->top, "mails", NULL);
	g_free(git(f->repo, "format-patch", "-q", "-o", dir, "master..topic", NULL));
	/* master gets the first one (cherry-picked) and moves on */
	g_free(git(f->repo, "checkout", "-q", "master", NULL));
	g_free(git(f->repo, "cherry-pick", "topic~1", NULL));
	put(f->repo, "other.txt", "other\n");
	g_free(git(f->repo, "add", "other.txt", NULL));
	g_free(git(f->repo, "commit", "-q", "-m", "other", NULL));
	picked = git(f->repo, "rev-parse", "HEAD~1", NULL);

	m1 = g_build_filename(dir, "0001-a-shout-two.patch", NULL);
	m2 = g_build_filename(dir, "0002-b-add-sea.patch", NULL);
	g_assert_true(g_file_get_contents(m1, &p1, &len, NULL));
	g_assert_true(g_file_get_contents(m2, &p2, &len, NULL));
	raws = series(g_bytes_new(p1, strlen(p1)), g_bytes_new(p2, strlen(p2)), NULL);
	r = apply(f, "master", raws, NULL);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_ALREADY_APPLIED);
	g_assert_cmpuint(r->failed_index, ==, 1);
	g_assert_cmpint(((PgateApplyPatchResult *)r->patches->pdata[0])->state,
			==, PGATE_APPLY_PATCH_ALREADY_APPLIED);
	g_assert_cmpstr(((PgateApplyPatchResult *)r->patches->pdata[0])->upstream,
			==, picked);
	/* the rest applied on top */
	g_assert_cmpint(((PgateApplyPatchResult *)r->patches->pdata[1])->state,
			==, PGATE_APPLY_PATCH_APPLIED);
	g_assert_cmpuint(r->commits->len, ==, 1);

	/* looked for nowhere (depth 0): a plain failure */
	{
		PgateApplyOptions o = PGATE_APPLY_OPTIONS_INIT;
		g_autoptr(PgateApplyResult) r2 = NULL;

		o.already_applied_depth = 0;
		r2 = apply(f, "master", raws, &o);
		g_assert_cmpint(r2->status, ==, PGATE_APPLY_FAILED);
		g_assert_cmpuint(r2->failed_index, ==, 1);
		g_assert_cmpstr(r2->failed_path, ==, "a.txt");
		g_assert_cmpuint(r2->failed_hunk, ==, 1);
	}
	/* the same subject and file, applied differently upstream */
	g_free(git(f->repo, "checkout", "-q", "-b", "reworded", f->base, NULL));
	put(f->repo, "a.txt", "one\nTwO!\nthree\nfour\nfive\nsix\nseven\neight\n"
	    "nine\nten\neleven\ntwelve\nthirteen\nfourteen\n");
	g_free(git(f->repo, "commit", "-q", "-am", "a: shout two", NULL));
	out = git(f->repo, "rev-parse", "HEAD", NULL);
	{
		g_autoptr(PgateApplyResult) r3 = apply(f, "reworded", raws, NULL);

		g_assert_cmpint(r3->status, ==, PGATE_APPLY_ALREADY_APPLIED);
		g_assert_cmpstr(((PgateApplyPatchResult *)r3->patches->pdata[0])->upstream,
				==, out);
	}
}

/* ---- publishing --------------------------------------------------------------- */

static void
test_publish(Fixture *f, gconstpointer data)
{
	PgateApplyOptions o = PGATE_APPLY_OPTIONS_INIT;
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(PgateApplyResult) r = NULL;
	g_autoptr(PgateApplyResult) r2 = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) deleted = NULL;
	g_autofree char *remote = NULL, *url = NULL, *got = NULL;
	const char *ref_new = "refs/heads/patchgate/7/v2/master";
	const char *ref_old = "refs/heads/patchgate/3/v1/master";
	const char *push1[] = { "+refs/heads/patchgate/7/v2/master:refs/heads/patchgate/7/v2/master",
				"+refs/heads/patchgate/3/v1/master:refs/heads/patchgate/3/v1/master" };

	if (f->repo == NULL)
		return;
	remote = g_build_filename(f->top, "remote.git", NULL);
	g_free(git(f->top, "init", "-q", "--bare", remote, NULL));
	url = g_strconcat("file://", remote, NULL);

	/* two applied series: one old, one recent */
	o.committer_time = 1000000000;
	raws = series(mailf("old", NEWFILE("old.txt")), NULL);
	r = apply(f, NULL, raws, &o);
	g_assert_cmpint(r->status, ==, PGATE_APPLY_OK);
	g_clear_pointer(&raws, g_ptr_array_unref);
	o.committer_time = 1700000000;
	raws = series(mailf("new", NEWFILE("new.txt")), NULL);
	r2 = apply(f, NULL, raws, &o);

	g_assert_false(pgate_apply_update_ref(f->repo, "refs/heads/bad..name",
					      r->head, NULL, &err));
	g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&err);
	g_assert_false(pgate_apply_update_ref(f->repo, ref_old,
		"1111111111111111111111111111111111111111", NULL, &err));
	g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_NOT_FOUND);
	g_clear_error(&err);
	g_assert_true(pgate_apply_update_ref(f->repo, ref_old, r->head,
					     "patchgate: apply", &err));
	g_assert_no_error(err);
	g_assert_true(pgate_apply_update_ref(f->repo, ref_new, r2->head,
					     "patchgate: apply", &err));
	g_assert_no_error(err);

	g_assert_true(pgate_apply_push(f->repo, url, push1, 2, NULL, &err));
	g_assert_no_error(err);
	got = git(remote, "rev-parse", ref_new, NULL);
	g_assert_cmpstr(got, ==, r2->head);
	g_free(got);
	got = git(remote, "rev-parse", ref_old, NULL);
	g_assert_cmpstr(got, ==, r->head);

	/* a non-fast-forward without "+" is refused, and says so */
	{
		const char *nff[] = { "refs/heads/patchgate/3/v1/master:refs/heads/patchgate/7/v2/master" };

		g_assert_false(pgate_apply_push(f->repo, url, nff, 1, NULL, &err));
		g_assert_nonnull(err);
		g_test_message("non-ff: %s", err->message);
		g_clear_error(&err);
	}
	/* a remote that is not there */
	{
		g_autofree char *nowhere = g_strconcat("file://", f->top, "/nowhere.git", NULL);

		g_assert_false(pgate_apply_push(f->repo, nowhere, push1, 1, NULL, &err));
		g_assert_nonnull(err);
		g_clear_error(&err);
	}
	/* a password in the URL never reaches the message (stored as the
	 * attempt's publish_error, shown on the site and in logs) */
	{
		const char *with_pw = "http://ci:s3cret-pw@127.0.0.1:9/x.git";

		g_assert_false(pgate_apply_push(f->repo, with_pw, push1, 1, NULL, &err));
		g_assert_nonnull(err);
		g_test_message("with a password: %s", err->message);
		g_assert_null(strstr(err->message, "s3cret-pw"));
		g_assert_nonnull(strstr(err->message, "http://ci@127.0.0.1:9/x.git"));
		g_clear_error(&err);
	}

	/* pruning: refs whose tip is older than a day, as of 1700000100 */
	g_assert_false(pgate_apply_prune_refs(f->repo, "heads/", 86400, 1700000100,
					      &deleted, &err));
	g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&err);
	g_assert_true(pgate_apply_prune_refs(f->repo, "refs/heads/patchgate/",
					     86400, 1700000100, &deleted, &err));
	g_assert_no_error(err);
	g_assert_cmpuint(deleted->len, ==, 1);
	g_assert_cmpstr(deleted->pdata[0], ==, ref_old);
	g_free(got);
	got = git(f->repo, "for-each-ref", "--format=%(refname)",
		  "refs/heads/patchgate/", NULL);
	g_assert_cmpstr(got, ==, ref_new);
	/* and the deletion pushed */
	{
		g_autofree char *del = g_strconcat(":", (char *)deleted->pdata[0], NULL);
		const char *specs[] = { del };

		g_assert_true(pgate_apply_push(f->repo, url, specs, 1, NULL, &err));
		g_assert_no_error(err);
		g_free(got);
		got = git(remote, "for-each-ref", "--format=%(refname)", NULL);
		g_assert_cmpstr(got, ==, ref_new);
	}
}

static void
test_base_commit(void)
{
	g_autoptr(GPtrArray) raws = series(
		bytes_str("Subject: [PATCH 0/2] cover\n\nbody\n"),
		bytes_str("x\n-- \nbase-commit: 0123456789ABCDEF0123456789abcdef01234567\n"
			  "prerequisite-patch-id: 1\n"), NULL);
	g_autofree char *b = pgate_apply_find_base_commit(raws);
	g_autoptr(GPtrArray) none = series(bytes_str("nothing\n"), NULL);
	g_autofree char *n = pgate_apply_find_base_commit(none);

	g_assert_cmpstr(b, ==, "0123456789abcdef0123456789abcdef01234567");
	g_assert_null(n);
}

/* libgit2 with mbedtls leaves its CA bundle to util.c's stand-in at
 * start-up (the executable exports it), for an https push to load */
static void
test_tls_deferred(void)
{
	g_autoptr(GError) err = NULL;

	pgate_apply__git_init();
	if (dlsym(RTLD_DEFAULT, "mbedtls_ssl_conf_ca_chain") == NULL) {
		g_test_skip("libgit2 does not use mbedtls here");
		return;
	}
	g_assert_true(pgate_apply__git_tls_deferred());
	g_assert_true(pgate_apply__git_tls(&err));
	g_assert_no_error(err);
	g_assert_false(pgate_apply__git_tls_deferred());
	/* once */
	g_assert_true(pgate_apply__git_tls(&err));
	g_assert_no_error(err);
}

/* [apply] committer_date's forms: the instant and the zone */
static void
test_parse_date(void)
{
	static const struct { const char *in; gint64 t; int tz; } ok[] = {
		{ "1700000000 +0100", 1700000000, 60 },
		{ " 1700000000 -0930 ", 1700000000, -570 },
		{ "@1700000000", 1700000000, 0 },
		{ "@1700000000 +0530", 1700000000, 330 },
		{ "Tue, 14 Nov 2023 23:13:20 +0100", 1700000000, 60 },
		{ "2023-11-14 23:13:20 +0100", 1700000000, 60 },
		{ "2023-11-14T23:13:20+01:00", 1700000000, 60 },
		{ "2023-11-14T22:13:20Z", 1700000000, 0 },
	};
	static const char *const bad[] = {
		"", "now", "yesterday", "1700000000", "1700000000 +01",
		"1700000000 0100", "1700000000 +2500", "@x", "2023-11-14 22:13:20",
		"2023-11-14T22:13:20", "Tue, 14 Nov 2023 99:13:20 +0100",
	};

	for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
		g_autoptr(GError) err = NULL;
		gint64 t = -1;
		int tz = 12345;

		g_assert_true(pgate_apply_parse_date(ok[i].in, &t, &tz, &err));
		g_assert_no_error(err);
		g_assert_cmpint(t, ==, ok[i].t);
		g_assert_cmpint(tz, ==, ok[i].tz);
	}
	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) err = NULL;
		gint64 t;
		int tz;

		g_assert_false(pgate_apply_parse_date(bad[i], &t, &tz, &err));
		g_assert_error(err, PGATE_APPLY_ERROR, PGATE_ERROR_INVALID);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/apply/normalize/repeated-rename",
			test_normalize_repeated_rename);
	g_test_add_func("/apply/mailinfo/fields", test_mailinfo_fields);
	g_test_add_func("/apply/mailinfo/attachment", test_mailinfo_attachment);
	g_test_add_func("/apply/mailinfo/errors", test_mailinfo_errors);
	g_test_add_func("/apply/base-commit", test_base_commit);
	g_test_add_func("/apply/parse-date", test_parse_date);
	g_test_add_func("/apply/tls-deferred", test_tls_deferred);
#define ADD(path, fn) g_test_add(path, Fixture, NULL, fixture_setup, fn, \
				 fixture_teardown)
	ADD("/apply/safety/rejected", test_safety);
	ADD("/apply/safety/symlink-then-write", test_symlink_then_write);
	ADD("/apply/safety/limits", test_limits);
	ADD("/apply/failure", test_failure);
	ADD("/apply/errors", test_errors);
	ADD("/apply/already-applied", test_already_applied);
	ADD("/apply/publish", test_publish);
	return g_test_run();
}
