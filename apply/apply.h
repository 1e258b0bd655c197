/* apply.h - applying mailed patch series with libgit2, as `git am` would.
 *
 * Three parts:
 *
 *  - pgate_mailinfo_parse() reads one mail the way `git am` does (git
 *    mailsplit, then git mailinfo with am's defaults: no -k, no --scissors,
 *    in-body headers honoured, metadata re-encoded to UTF-8) and gives the
 *    author, the date, the cleaned subject, the commit message and the diff.
 *
 *  - pgate_apply_series() applies a series onto a base commit, in memory:
 *    each patch is parsed with git_diff_from_buffer, checked for safety,
 *    applied with git_apply_to_tree to a small tree holding only the paths
 *    it touches, and the result grafted onto the full tree with
 *    git_tree_create_updated.  Each patch becomes one commit, made exactly
 *    as `git am` makes it (same tree, same author, date and message, the
 *    committer from the options), so that for a series `git am` applies the
 *    commit OIDs are the same.  Nothing is written but objects into the
 *    repository's object database: no worktree, no index, no ref.
 *
 *  - Publishing: pgate_apply_update_ref(), pgate_apply_push() (libgit2's
 *    push over file://, ssh or https) and pgate_apply_prune_refs().
 *
 * Errors: GError domain PGATE_APPLY_ERROR with the codes of PgateErrorCode.
 * A series that does not apply, or that is refused as unsafe, is not an
 * error: it is a result (PgateApplyResult) whose status says so.  A GError
 * means trouble that is not the series' fault: the repository is missing
 * (NOT_FOUND) or unreadable, the base does not exist (NOT_FOUND), a write
 * to the object database failed (IO: transient), a push could not reach
 * its remote (IO) or was refused (FAILED).
 *
 * Secrets (push tokens, ssh passphrases) are read from a file or from the
 * environment, named in PgateApplyCredentials; they never appear in an
 * error message or a log line.
 *
 * See docs/apply.md for the user-visible behaviour and its limits.
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"

G_BEGIN_DECLS

#define PGATE_APPLY_ERROR (pgate_apply_error_quark())
GQuark pgate_apply_error_quark(void);

/* ---- mailinfo --------------------------------------------------------- */

/* The largest mail pgate_mailinfo_parse() reads (PGATE_ERROR_TOO_LARGE). */
#define PGATE_MAILINFO_MAX_BYTES (64u * 1024 * 1024)

typedef struct {
	char *author_name;   /* UTF-8 as git mailinfo gives it ("Author:"),
			      * before git's ident clean-up */
	char *author_email;  /* ("Email:") */
	char *date;          /* (nullable) the Date as git mailinfo prints it */
	gboolean has_date;   /* the date parsed: the two fields below are set */
	gint64 author_time;  /* seconds since the epoch */
	int author_tz;       /* offset east of UTC in minutes, e.g. +0130: 90 */
	char *subject;       /* the cleaned subject: "[PATCH v2 3/5] x" -> "x" */
	char *message;       /* the commit message `git am` makes: subject,
			      * blank line, body up to the "---" (stripspace'd,
			      * every line ending in "\n"); may be "" */
	GBytes *diff;        /* the patch part, from the line that ends the
			      * message on (as git mailinfo writes it) */
} PgateMailinfo;

/**
 * pgate_mailinfo_parse:
 * @raw: one mail, as delivered (an mbox "From " line may lead it)
 * @keep_cr: %TRUE to keep CRs before LFs (git am --keep-cr); by default
 *   git mailsplit turns every CRLF into LF before mailinfo sees the mail
 *
 * Errors: PGATE_ERROR_TOO_LARGE when @raw is over PGATE_MAILINFO_MAX_BYTES;
 * PGATE_ERROR_INVALID where git mailinfo (or git am after it) fails: a
 * broken RFC 2047 word, a charset that cannot be converted, a NUL in a
 * header, no author address.  A mail without a diff is not an error here
 * (diff is then empty).
 *
 * Returns: (transfer full) (nullable): the fields, or %NULL with @error set.
 */
PgateMailinfo *pgate_mailinfo_parse(GBytes *raw, gboolean keep_cr,
				    GError **error);
void pgate_mailinfo_free(PgateMailinfo *mi);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateMailinfo, pgate_mailinfo_free)

/* ---- applying --------------------------------------------------------- */

typedef enum {
	PGATE_APPLY_OK = 0,          /* every patch applied */
	PGATE_APPLY_FAILED,          /* a patch did not apply: failed_* say
				      * where; patches before it applied */
	PGATE_APPLY_ALREADY_APPLIED, /* no failure, but at least one patch was
				      * already on the base branch (same
				      * patch-id, or same subject touching a
				      * same path) and was skipped */
	PGATE_APPLY_REJECTED,        /* a patch is unsafe or over a limit:
				      * refused by the static checks, before
				      * anything was applied; or, for a write
				      * beneath a symlink or a gitlink of the
				      * tree, when its turn came (the patches
				      * before it applied) */
} PgateApplyStatus;

const char *pgate_apply_status_name(PgateApplyStatus status);

typedef enum {
	PGATE_APPLY_PATCH_NOT_TRIED = 0, /* after a failure or a rejection */
	PGATE_APPLY_PATCH_APPLIED,
	PGATE_APPLY_PATCH_ALREADY_APPLIED,
	PGATE_APPLY_PATCH_FAILED,
	PGATE_APPLY_PATCH_REJECTED,
} PgateApplyPatchState;

typedef struct {
	PgateApplyPatchState state;
	char *commit;        /* (nullable) hex OID of its commit (APPLIED) */
	char *tree;          /* (nullable) hex OID of that commit's tree */
	char *upstream;      /* (nullable) ALREADY_APPLIED: the commit on the
			      * branch that has the change */
	char *subject;       /* (nullable) the cleaned subject */
} PgateApplyPatchResult;

typedef struct {
	PgateApplyStatus status;
	char *base;          /* hex OID of the commit the series went onto */
	GPtrArray *commits;  /* (element-type utf8): hex OIDs of the commits
			      * made, one per applied patch, oldest first */
	char *head;          /* (nullable) the last commit made, else NULL */
	char *tree;          /* hex OID of the final tree (the base's tree
			      * when nothing applied) */
	GPtrArray *patches;  /* (element-type PgateApplyPatchResult): one per
			      * input patch, in order */
	/* FAILED / REJECTED (and for ALREADY_APPLIED the first such patch): */
	guint failed_index;  /* 1-based index of the patch, 0 none */
	char *failed_path;   /* (nullable) the file, as the patch names it */
	guint failed_hunk;   /* 1-based hunk of that file, 0 unknown/none */
	char *reason;        /* (nullable) one line, e.g. "patch does not
			      * apply", "path escapes the tree: ../x" */
} PgateApplyResult;

void pgate_apply_result_free(PgateApplyResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateApplyResult, pgate_apply_result_free)

typedef struct {
	const char *committer_name;   /* NULL: "patchgate" */
	const char *committer_email;  /* NULL: "patchgate@localhost" */
	gint64 committer_time;        /* < 0: now */
	int committer_tz;             /* minutes east of UTC */
	gsize max_patch_bytes;        /* a mail's diff; 0: no limit */
	guint max_files;              /* files one patch may touch; 0: none */
	gsize max_binary_bytes;       /* a binary file's new size, and the
				       * inflated size of its patch data */
	gboolean allow_symlinks;      /* create or change mode 120000 */
	gboolean allow_submodules;    /* any mode 160000 (gitlink) change */
	gboolean keep_cr;             /* git am --keep-cr */
	guint already_applied_depth;  /* commits of the base's history looked
				       * at for "already applied"; 0: never */
	gboolean committer_date_is_author_date;
				      /* git am --committer-date-is-author-date:
				       * each commit's committer date (time
				       * and zone) is its author date; a mail
				       * without a date gets committer_time */
	/* b4 am's trailers (trailers.c, docs/apply.md "Trailers"): */
	GPtrArray *extras;            /* (nullable) (element-type
				       * PgateApplyExtra): one per mail of
				       * the series, in order; a NULL element
				       * or a shorter array adds nothing */
	const char *signoff;          /* (nullable): "Name <email>": put as
				       * the last Signed-off-by (b4 am -s) */
} PgateApplyOptions;

/* What b4 am adds to one patch's commit message. */
typedef struct {
	GPtrArray *trailers;  /* (nullable) (element-type utf8): follow-up
			       * trailers, "Name: value", in order */
	char *link;           /* (nullable): the Link: trailer's value */
} PgateApplyExtra;

PgateApplyExtra *pgate_apply_extra_new(void);
void pgate_apply_extra_free(PgateApplyExtra *e);

#define PGATE_APPLY_OPTIONS_INIT { \
	NULL, NULL, -1, 0, \
	8u * 1024 * 1024, 1000, 16u * 1024 * 1024, \
	FALSE, FALSE, FALSE, 1000, FALSE, NULL, NULL }

/**
 * pgate_apply_add_trailers:
 * @message: a commit message as pgate_mailinfo_parse() gives it
 * @followups: (nullable) (element-type utf8): "Name: value" trailers
 *   from replies, in order
 * @link: (nullable): the value of a Link: trailer to add
 * @signoff: (nullable): "Name <email>" of the applier
 *
 * Returns: (transfer full): the message with the trailers added as
 * `b4 am` adds them (its fix_trailers, trailer-order "*"): the last
 * paragraph's trailers normalised, then each follow-up trailer and the
 * Link: not already there, then the applier's Signed-off-by last (moved
 * there when already present).  With nothing to add, @message as is.
 */
char *pgate_apply_add_trailers(const char *message, const GPtrArray *followups,
			       const char *link, const char *signoff);

/* One mail of pgate_apply_mbox_append(). */
typedef struct {
	const char *prefix;       /* (nullable): "PATCH v3 1/2" */
	const char *msgid;        /* (nullable): without <> */
	gboolean add_trailers;    /* the three below are added */
	const GPtrArray *trailers;  /* (nullable) (element-type utf8) */
	const char *link;         /* (nullable) */
	const char *signoff;      /* (nullable) */
} PgateApplyMboxMail;

/**
 * pgate_apply_mbox_append:
 * @mbox: where the mail is appended, in mboxrd form (a "From mboxrd@z"
 *   line; body lines matching ">*From " get one more '>')
 * @raw: the mail as delivered
 *
 * Appends @raw as `b4 am` writes it: From, Date, Subject ("[PREFIX]
 * subject", RFC 2047 where needed) and Message-Id headers, a UTF-8
 * 8bit text/plain body: the commit message without its subject (with
 * the trailers when asked), then the patch part as git mailinfo gives
 * it.  `git am --patch-format=mboxrd` applies it.  Errors: those of
 * pgate_mailinfo_parse().
 */
gboolean pgate_apply_mbox_append(GString *mbox, GBytes *raw,
				 const PgateApplyMboxMail *m, GError **error);

/**
 * pgate_apply_parse_date:
 * @s: a date as git's GIT_COMMITTER_DATE takes it, with its zone: git's
 *   own "SECONDS +HHMM", "@SECONDS" (UTC) or "@SECONDS +HHMM", RFC 2822
 *   ("Tue, 14 Nov 2023 22:13:20 +0100"), ISO 8601
 *   ("2023-11-14T22:13:20+01:00", "2023-11-14 22:13:20 +0100")
 * @out_time: (out): seconds since the epoch
 * @out_tz: (out): minutes east of UTC
 *
 * For PgateApplyOptions' committer_time and committer_tz.  A date
 * without a zone (which git takes as local time) is refused.
 *
 * Errors: PGATE_ERROR_INVALID when @s is none of these.
 */
gboolean pgate_apply_parse_date(const char *s, gint64 *out_time, int *out_tz,
				GError **error);

/**
 * pgate_apply_series:
 * @repo_path: a git repository (bare or not; only its objects are used)
 * @base: what to apply onto: a branch name, a ref or a (full or unique
 *   abbreviated) hex commit OID; anything git_revparse_single() takes that
 *   names a commit
 * @raws: (element-type GBytes): the mails, one patch each, in order.  To
 *   apply prerequisite series first, put their patches before.
 * @opts: (nullable): NULL for PGATE_APPLY_OPTIONS_INIT
 *
 * Applies the patches in order, one commit each.  Before anything is
 * applied every patch is parsed and checked statically (paths that escape
 * the tree or name .git, symlinks and gitlinks unless allowed, other file
 * modes, the size limits, binary data inflated only to its declared size);
 * during application each patch is also checked against the tree it
 * applies to, as git apply checks it (files that must or must not exist,
 * their types, every hunk's context, found at an offset if need be), and
 * writes beneath a symlink or a gitlink are refused.  A patch that does not apply is looked for in the base's
 * history (opts->already_applied_depth commits): found, it is skipped and
 * the next one applied; not found, application stops there (FAILED).
 *
 * Returns: (transfer full) (nullable): the result, or %NULL with @error
 * set when the repository or the base cannot be read or an object cannot
 * be written.
 */
PgateApplyResult *pgate_apply_series(const char *repo_path, const char *base,
				     GPtrArray *raws,
				     const PgateApplyOptions *opts,
				     GError **error);

/**
 * pgate_apply_find_base_commit:
 * @raws: (element-type GBytes): a series' mails (cover letter included or
 *   not)
 *
 * Returns: (transfer full) (nullable): the hex OID named by the last
 * "base-commit: <hex>" line (as `git format-patch --base` writes it) in
 * any of the mails, or %NULL.  Whether the commit exists is for the caller
 * to try (pgate_apply_series() fails with NOT_FOUND when it does not).
 */
char *pgate_apply_find_base_commit(GPtrArray *raws);

/* ---- publishing ------------------------------------------------------- */

/**
 * pgate_apply_update_ref:
 * @refname: a full ref name, e.g. "refs/heads/patchgate/42/v2/master"
 * @commit_hex: the commit it is to point to
 * @log_message: (nullable): the reflog message
 *
 * Creates or moves (force) the ref.  An invalid ref name is
 * PGATE_ERROR_INVALID, a commit not in the repository NOT_FOUND.
 */
gboolean pgate_apply_update_ref(const char *repo_path, const char *refname,
				const char *commit_hex, const char *log_message,
				GError **error);

/* How to authenticate a push.  Every field is nullable; the secrets are
 * read when the remote asks for them, from the file or else the variable
 * named (the file's content up to its first newline, at most 4 KiB). */
typedef struct {
	const char *username;         /* https user, ssh user (else the
				       * URL's, else "git") */
	const char *password_file;    /* https password or token */
	const char *password_env;
	const char *ssh_private_key;  /* a key file path */
	const char *ssh_public_key;   /* (nullable) its .pub */
	const char *ssh_passphrase_file;
	const char *ssh_passphrase_env;
} PgateApplyCredentials;

/**
 * pgate_apply_push:
 * @url: the remote: file://, ssh:// (or scp-like user@host:path), https://
 * @refspecs: (array length=n): "+src:dst" to force-push, ":dst" to delete
 * @creds: (nullable): NULL for none
 *
 * Pushes with git_remote_create_anonymous() and git_remote_push().  A ref
 * the remote refuses (its status in the push report) is an error
 * (PGATE_ERROR_FAILED) naming the ref and the remote's reason; so is an
 * authentication failure (PGATE_ERROR_CONFIG).  Not reaching the remote is
 * PGATE_ERROR_IO (transient).  Secrets never appear in @error.
 */
gboolean pgate_apply_push(const char *repo_path, const char *url,
			  const char *const *refspecs, guint n,
			  const PgateApplyCredentials *creds, GError **error);

/**
 * pgate_apply_prune_refs:
 * @prefix: only refs whose name starts with this, e.g.
 *   "refs/heads/patchgate/"; must start with "refs/"
 * @max_age_seconds: a ref is old when its tip's committer time is more
 *   than this before @now
 * @now: seconds since the epoch; < 0 for the current time
 * @out_deleted: (out) (optional) (element-type utf8) (transfer full): the
 *   names deleted, sorted, so that the caller can push their deletions
 *
 * Deletes the old local refs under @prefix.  A ref that does not point to
 * a commit is left alone.
 */
gboolean pgate_apply_prune_refs(const char *repo_path, const char *prefix,
				gint64 max_age_seconds, gint64 now,
				GPtrArray **out_deleted, GError **error);

/* ---- checking (repo-check.c): `patchgate config check` ------------------
 *
 * Each reads only: no object, ref or lock is written.  Errors are
 * PGATE_ERROR_CONFIG (NOT_FOUND for a path that does not exist), their
 * message naming the path but not the configuration key, which the
 * caller adds. */

/* Whether @repo_path is a git repository this user can open, as the
 * apply stage opens it (no search in the directories above). */
gboolean pgate_apply_check_repo(const char *repo_path, GError **error);
/* Returns: (transfer full) (element-type utf8): the ones of @revs (a
 * %NULL-terminated vector, nullable) that name no commit of @repo_path,
 * as pgate_apply_series() resolves a base (a branch, a ref, an OID);
 * %NULL with @error when the repository cannot be opened. */
GPtrArray *pgate_apply_check_revs(const char *repo_path,
				  const char *const *revs, GError **error);
/* Whether @repo_path has the remote @name (a fetch's). */
gboolean pgate_apply_check_remote(const char *repo_path, const char *name,
				  GError **error);
/* Whether git takes @refname as a ref name. */
gboolean pgate_apply_check_refname(const char *refname, GError **error);

G_END_DECLS
