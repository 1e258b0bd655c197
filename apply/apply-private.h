/* apply-private.h - shared between the files of the apply module only. */
#pragma once

#include "apply/apply.h"

#include <git2.h>

G_BEGIN_DECLS

PGATE_DEFINE_AUTOPTR(git_repository, git_repository_free)
PGATE_DEFINE_AUTOPTR(git_object, git_object_free)
PGATE_DEFINE_AUTOPTR(git_commit, git_commit_free)
PGATE_DEFINE_AUTOPTR(git_tree, git_tree_free)
PGATE_DEFINE_AUTOPTR(git_tree_entry, git_tree_entry_free)
PGATE_DEFINE_AUTOPTR(git_blob, git_blob_free)
PGATE_DEFINE_AUTOPTR(git_diff, git_diff_free)
PGATE_DEFINE_AUTOPTR(git_patch, git_patch_free)
PGATE_DEFINE_AUTOPTR(git_index, git_index_free)
PGATE_DEFINE_AUTOPTR(git_signature, git_signature_free)
PGATE_DEFINE_AUTOPTR(git_revwalk, git_revwalk_free)
PGATE_DEFINE_AUTOPTR(git_reference, git_reference_free)
PGATE_DEFINE_AUTOPTR(git_reference_iterator, git_reference_iterator_free)
PGATE_DEFINE_AUTOPTR(git_remote, git_remote_free)
PGATE_DEFINE_AUTOPTR(git_odb, git_odb_free)
/* a local whose pointee is freed at the end of its scope */
#define PGATE_GIT_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

/* libgit2 is initialised once per process (never shut down), its CA
 * certificates left for pgate_apply__git_tls() (util.c). */
void pgate_apply__git_init(void);
/* Loads the CA certificates git_libgit2_init() left out, once: before
 * anything libgit2 does over TLS (an https push).  FALSE (CONFIG) when
 * they cannot be read. */
gboolean pgate_apply__git_tls(GError **error);
/* Whether certificates are still to be loaded (for tests). */
gboolean pgate_apply__git_tls_deferred(void);

/* Translates the last libgit2 failure (@rc) into @error, once, here at
 * the boundary: "@what: message".  GIT_ENOTFOUND is NOT_FOUND, an OS
 * failure (GIT_ERROR_OS) is IO (transient), the rest FAILED. */
gboolean pgate_apply__git_error(GError **error, int rc, const char *what);

/* git's fmt_ident() clean-up of an ident part: strips "crud" (control
 * characters, space, . , : ; < > " \ ') from both ends and drops every
 * '<', '>' and newline.  (transfer full) */
char *pgate_apply__strip_crud(const char *s);

/* git's verify_utf8(): bytes that are not valid UTF-8 are taken as Latin-1
 * and re-encoded, in place of @s.  (transfer full) */
char *pgate_apply__fix_utf8(const char *s, gsize len);

/* A path component or path check as git's verify_path() and its .git
 * protections (HFS and NTFS included) do.  Returns the reason a path is
 * refused, or NULL when it is fine. (transfer none) */
const char *pgate_apply__bad_path(const char *path);

/* libgit2 1.5 cannot split a "diff --git a/x y b/x y" header whose names
 * hold spaces (git splits a name given twice in the middle, or reads the
 * rename or copy lines), nor read such names in rename, copy and ---/+++
 * lines.  Returns the text with such headers
 * rewritten with quoted names, or NULL when none needed it. */
GString *pgate_apply__normalize_headers(const char *text, gsize len);

/* For each file of the diff in @text, by its new name: whether its header
 * names the new mode ("new mode", "new file mode"; git keeps a file's mode
 * otherwise).  (transfer full): name -> GINT_TO_POINTER(explicit). */
GHashTable *pgate_apply__explicit_modes(const char *text, gsize len);

/* The preflight of one patch, a git apply simulation (precheck.c). */
typedef struct {
	guint failed_file;   /* 1-based delta, 0: none */
	char *failed_path;
	guint failed_hunk;   /* 1-based, 0 unknown */
	char *reason;
	gboolean rejected;   /* the failure is a safety refusal */
	/* the diff text to give libgit2: NULL when the original will do (every
	 * hunk applies where its header says); else the same text with the
	 * "+c,d" of hunk headers moved to where git apply applies them */
	GString *fixed;
} PgateApplyCheck;

void pgate_apply__check_clear(PgateApplyCheck *c);

/* The limits and permissions of PgateApplyOptions the checks need.
 * @diff may be NULL (libgit2 could not parse @text): then only the text
 * is checked. */
gboolean pgate_apply__check_static(git_diff *diff, const char *text,
				   gsize len, const PgateApplyOptions *o,
				   PgateApplyCheck *out);

/* Simulates git apply of @diff (parsed from @text) on @tree: paths must
 * exist or not, types must agree, no writes beneath a symlink or a
 * gitlink, every hunk must match (exact context, any offset, as git apply
 * with its defaults).  FALSE with @error only on a read failure. */
gboolean pgate_apply__check_tree(git_repository *repo, git_tree *tree,
				 git_diff *diff, const char *text, gsize len,
				 PgateApplyCheck *out, GError **error);

/* An object database backend that keeps what is written in memory
 * (memodb.c); _flush stores it in @odb as one pack and empties it. */
git_odb_backend *pgate_apply__memodb_new(void);
gboolean pgate_apply__memodb_flush(git_odb_backend *b, git_odb *odb,
				   GError **error);

G_END_DECLS
