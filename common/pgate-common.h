/* pgate-common.h - what every patchgate module shares.
 *
 * Error codes: every module has its own GError domain (PGATE_STORE_ERROR,
 * PGATE_INGEST_ERROR, ...) but all of them use the codes of PgateErrorCode,
 * so that one function, pgate_error_is_transient(), can tell a failure that
 * may go away by itself (lock held, disk or map full, I/O hiccup) from one
 * that will not.  The CLI turns transient failures into EX_TEMPFAIL (75),
 * which is what makes an MTA keep a message and retry the delivery hook.
 */
#pragma once

#include <glib.h>
#include <stdarg.h>
#include <stdbool.h>

G_BEGIN_DECLS

typedef enum {
	PGATE_ERROR_FAILED = 0,   /* permanent, unspecific */
	PGATE_ERROR_NOT_FOUND,    /* the thing asked for does not exist */
	PGATE_ERROR_EXISTS,       /* it exists already */
	PGATE_ERROR_INVALID,      /* bad argument, bad input data */
	PGATE_ERROR_TOO_LARGE,    /* input over a configured bound */
	PGATE_ERROR_SCHEMA,       /* store written by a newer/older patchgate */
	PGATE_ERROR_CONFIG,       /* the configuration is wrong */
	PGATE_ERROR_FULL,         /* transient: disk or LMDB map full */
	PGATE_ERROR_BUSY,         /* transient: a lock was held past its timeout */
	PGATE_ERROR_IO,           /* transient: an I/O error that may clear */
	PGATE_ERROR_CORRUPT,      /* a stored record that does not decode */
	PGATE_ERROR_NOT_ALLOWED,  /* refused by policy: untrusted code not
				   * approved (exit 77, EX_NOPERM) */
} PgateErrorCode;

/**
 * pgate_error_is_transient:
 * @error: (nullable): an error from any patchgate module, GIO or GFileError
 *
 * Returns: %TRUE when retrying the same operation later may succeed.
 */
gboolean pgate_error_is_transient(const GError *error);

/**
 * pgate_config_error:
 * @domain: the caller's error domain
 * @key: (nullable): the key at fault
 *
 * Sets @error to PGATE_ERROR_CONFIG in @domain: "[GROUP] KEY: what", or
 * "[GROUP] what" without a key.  The one way the stages word a bad
 * configuration value.
 *
 * Returns: %FALSE, for "return pgate_config_error (...);".
 */
gboolean pgate_config_error(GError **error, GQuark domain, const char *group,
			    const char *key, const char *fmt, ...)
	G_GNUC_PRINTF(5, 6);
/**
 * pgate_config_bool_word:
 * @v: a configuration value, stripped
 * @out: (out): what it says
 *
 * The words every section takes for a boolean: true, yes, on or 1; false,
 * no, off or 0; in any case.
 *
 * Returns: %FALSE when @v is none of them (*@out is not set).
 */
gboolean pgate_config_bool_word(const char *v, gboolean *out);

/* The same with a va_list, for wrappers that add to the message. */
gboolean pgate_config_verror(GError **error, GQuark domain, const char *group,
			     const char *key, const char *fmt, va_list ap)
	G_GNUC_PRINTF(5, 0);

/**
 * pgate_error_errno_code:
 * @errsv: an errno value
 *
 * Returns: the PgateErrorCode for a system call failure: ENOSPC, EDQUOT,
 * EIO, EAGAIN, EINTR, ENOMEM and EMFILE/ENFILE are transient, the rest
 * PGATE_ERROR_FAILED (or NOT_FOUND for ENOENT).
 */
PgateErrorCode pgate_error_errno_code(int errsv);

/**
 * pgate_file_replace:
 * @path: the final path
 * @data: (array length=len): the content
 * @mode: the new file's mode (before the umask)
 *
 * pgate_file_write_atomic() without the fsync of the directory, for a
 * caller that writes many files there and fsyncs it once at the end
 * (pgate_fsync_dir()): until then a crash may lose the rename, never
 * leave a half-written @path.
 */
gboolean pgate_file_replace(const char *path, const void *data, gsize len,
			    int mode, GQuark domain, GError **error);

/**
 * pgate_file_write_atomic:
 * @path: the final path
 * @data: (array length=len): the content
 *
 * Writes @data to a temporary file beside @path with O_EXCL, fsyncs it,
 * renames it over @path and fsyncs the directory.  On failure nothing is
 * left at @path that was not there before.
 */
gboolean pgate_file_write_atomic(const char *path, const void *data, gsize len,
				 GQuark domain, GError **error);

/**
 * pgate_fd_read_bounded:
 * @fd: a readable descriptor
 * @max: the most bytes to keep
 * @out_overflow: (out): set when the input was longer than @max
 *
 * Reads @fd to end of file, or until more than @max bytes were read; then
 * *@out_overflow is set, what was read so far (a little over @max) is
 * returned and the rest is left unread on @fd for the caller, who must not
 * lose it.  Returns: (transfer full): the bytes, or %NULL on a read error.
 */
GBytes *pgate_fd_read_bounded(int fd, gsize max, gboolean *out_overflow,
			      GQuark domain, GError **error);

/**
 * pgate_fsync_dir:
 * @dir: a directory whose entries just changed
 */
gboolean pgate_fsync_dir(const char *dir, GQuark domain, GError **error);

/**
 * pgate_mkdir_p:
 * Creates @dir and its parents with mode 0700 unless they exist.
 */
gboolean pgate_mkdir_p(const char *dir, GQuark domain, GError **error);

/* Cleanup helpers for types that have none of their own. */
#define PGATE_DEFINE_AUTOPTR(Type, func) \
	static inline void pgate_autoptr_cleanup_##Type(Type **p) \
	{ if (*p) func(*p); }

/* ---- sha.c: SHA-256 and SHA-1, with the CPU's SHA extensions -------- */

/* What both hashes keep: the chaining value, a partial block, the
 * length; or GLib's GChecksum without SHA extensions. */
typedef struct {
	GChecksum *slow;     /* (nullable): GLib's, without SHA extensions */
	guint32 h[8];        /* SHA-1 uses the first five */
	guint8 block[64];
	gsize fill;
	guint64 bytes;
} PgateShaState;

typedef struct {
	PgateShaState st;
} PgateSha256;

void pgate_sha256_init(PgateSha256 *s);
void pgate_sha256_update(PgateSha256 *s, const void *data, gsize len);
/* Also frees what init allocated. */
void pgate_sha256_finish(PgateSha256 *s, guint8 out[32]);

/* The same for SHA-1 (git patch-ids). */
typedef struct {
	PgateShaState st;
} PgateSha1;

void pgate_sha1_init(PgateSha1 *s);
void pgate_sha1_update(PgateSha1 *s, const void *data, gsize len);
/* Also frees what init allocated. */
void pgate_sha1_finish(PgateSha1 *s, guint8 out[20]);

/* Writes @len bytes of @in as 2 * @len lower-case hex digits at @out,
 * then a NUL: @out holds 2 * @len + 1 bytes. */
void pgate_hex_encode(char *out, const guint8 *in, gsize len);

/* ---- diffsketch.c: what a diff changes, in a bounded fingerprint ---- */

/* How many hashes a sketch keeps at most. */
#define PGATE_DIFF_SKETCH_MAX 32

/* The sketch of the lines the hunks of @diff (a unified diff, git's
 * format) add or remove: the PGATE_DIFF_SKETCH_MAX smallest distinct
 * 32-bit hashes of their sign and non-blank text, ascending, into @out.
 * Returns how many (0: no changed line). */
guint pgate_diff_sketch(const char *diff, gsize len,
			guint32 out[PGATE_DIFF_SKETCH_MAX]);
/* The Jaccard similarity of the two sets of changed lines, estimated from
 * their sketches (exact below PGATE_DIFF_SKETCH_MAX lines each): 1.0 for
 * the same lines, 0.0 for none in common or an empty sketch. */
double pgate_diff_sketch_similarity(const guint32 *a, guint na,
				    const guint32 *b, guint nb);

/* ---- secret.c: secret values and protected paths -------------------- */

/* Registers a secret value (a token, a password) as its reader reads it:
 * from now on pgate_secret_redact() replaces it with "[redacted]". */
void pgate_secret_add(const char *value);
/* Registers a path a CI step must never see: a secret's file, the
 * configuration file, the state directory.  Made absolute. */
void pgate_secret_add_path(const char *path);
/* The registered paths.  Returns: (transfer full). */
char **pgate_secret_paths(void);
/* Every registered secret value in @s becomes "[redacted]".  Returns:
 * %TRUE when something was replaced. */
gboolean pgate_secret_redact_string(GString *s);
/* A copy of @text (nullable) redacted.  Returns: (transfer full). */
char *pgate_secret_redact(const char *text);
/* Replaces *@text (nullable) by its redacted copy. */
void pgate_secret_redact_in_place(char **text);
/* Forgets everything registered (tests). */
void pgate_secret_forget_all(void);
/* Where the user part of URL @url (nullable) is: "SCHEME://" ends at
 * *@out_start, the ':' before a password is at *@out_colon (0: none),
 * and the '@' after it ends before *@out_end.  %FALSE: none. */
gboolean pgate_url_userinfo(const char *url, gsize *out_start,
			    gsize *out_colon, gsize *out_end);
/* A copy of URL @url (nullable) without the password of its user part
 * ("https://ci:pw@host/x" -> "https://ci@host/x"): what is logged,
 * stored, shown or handed to a CI job of a URL a secret may be in.
 * Returns: (transfer full) (nullable). */
char *pgate_url_without_password(const char *url);

/* ---- curl.c: what every libcurl client shares ------------------------ */

/* libcurl's own name for an easy handle (the same typedef as curl.h's) */
typedef void CURL;

/* curl_global_init() once per process, from any thread. */
void pgate_curl_init(void);
/* The options every transfer gets: no signals, only @protocols ("http,https",
 * "smtp,smtps"), never a redirect followed, @errbuf (CURL_ERROR_SIZE
 * bytes, emptied here) as the error buffer. */
void pgate_curl_setup(CURL *e, const char *protocols, char *errbuf);
/* The whole transfer's and the connection's time limits, in ms (>= 1). */
void pgate_curl_timeouts(CURL *e, gint64 total_ms, gint64 connect_ms);
/* A CURLcode as a PgateErrorCode: PGATE_ERROR_IO (transient: resolve,
 * connect, timeout, a broken transfer), PGATE_ERROR_CONFIG (the URL, TLS
 * trust, credentials), else PGATE_ERROR_FAILED. */
PgateErrorCode pgate_curl_error_code(int curlcode);
/* The error buffer when curl filled it, else curl's text for @curlcode. */
const char *pgate_curl_message(int curlcode, const char *errbuf);

/* ---- config.c: reading the configuration's values -------------------- */

/*
 * Every getter reads [@group] @key of @kf, stripped.  Absent (the key or
 * the group) or empty, *@out is the default and %TRUE is returned.  A value
 * that does not fit is PGATE_ERROR_CONFIG in @domain, worded
 * "[GROUP] KEY: 'VALUE' is not a whole number", "... N is out of range
 * (MIN to MAX)", ... (pgate_config_error()).
 */
/* *@out: (transfer full) (nullable): the value, %NULL when not set. */
gboolean pgate_config_string(GKeyFile *kf, const char *group, const char *key,
			     char **out, GQuark domain, GError **error);
/* true, yes, on, 1 / false, no, off, 0 (pgate_config_bool_word()). */
gboolean pgate_config_bool(GKeyFile *kf, const char *group, const char *key,
			   gboolean def, gboolean *out, GQuark domain,
			   GError **error);
/* A whole number from @min to @max (or 0 when @zero_off: "no limit"). */
gboolean pgate_config_int(GKeyFile *kf, const char *group, const char *key,
			  gint64 def, gint64 min, gint64 max,
			  gboolean zero_off, gint64 *out, GQuark domain,
			  GError **error);
/* "123", "64K", "512M", "4G", "1T" (powers of 1024; a B may follow). */
gboolean pgate_config_parse_size(const char *s, guint64 *out);
gboolean pgate_config_size(GKeyFile *kf, const char *group, const char *key,
			   guint64 def, guint64 min, guint64 max,
			   gboolean zero_off, guint64 *out, GQuark domain,
			   GError **error);
/* Seconds, or a number with s, m, h or d; from @min to @max seconds. */
gboolean pgate_config_duration(GKeyFile *kf, const char *group,
			       const char *key, gint64 def, gint64 min,
			       gint64 max, gint64 *out, GQuark domain,
			       GError **error);
/* A ';'-separated list, items stripped, empty ones dropped; *@out
 * (transfer full) is %NULL when not set or empty. */
gboolean pgate_config_list(GKeyFile *kf, const char *group, const char *key,
			   char ***out, GQuark domain, GError **error);
/*
 * A secret from file @path (named by [@group] @key): a regular file, not
 * readable or writable by everyone, one line of at most @max bytes (a
 * final line end is not part of it).  From the environment variable
 * @name: set, one line, at most @max bytes.  Both register the secret
 * (and the file) with pgate_secret_add(); messages never quote it.
 * Returns: (transfer full) (nullable).
 */
char *pgate_config_secret_file(const char *group, const char *key,
			       const char *path, gsize max, GQuark domain,
			       GError **error);
char *pgate_config_secret_env(const char *group, const char *key,
			      const char *name, gsize max, GQuark domain,
			      GError **error);

/* ---- config-keys.c: every key of the configuration file -------------- */

/* What a key's value is; the module that reads it checks it. */
typedef enum {
	PGATE_CONFIG_TYPE_STRING,
	PGATE_CONFIG_TYPE_BOOL,        /* pgate_config_bool_word() */
	PGATE_CONFIG_TYPE_INT,         /* a whole number */
	PGATE_CONFIG_TYPE_SIZE,        /* bytes, with K, M, G or T */
	PGATE_CONFIG_TYPE_DURATION,    /* seconds, or with s, m, h or d */
	PGATE_CONFIG_TYPE_LIST,        /* ';'-separated */
	PGATE_CONFIG_TYPE_CHOICE,      /* one of PgateConfigKey.choices */
	PGATE_CONFIG_TYPE_PATH,        /* a file or a directory */
	PGATE_CONFIG_TYPE_URL,
	PGATE_CONFIG_TYPE_SECRET_FILE, /* a file holding a secret */
	PGATE_CONFIG_TYPE_ENV,         /* an environment variable's name */
	PGATE_CONFIG_TYPE_REFUSED,     /* a secret written in the file:
					* always an error */
} PgateConfigType;

typedef enum {
	PGATE_CONFIG_KEY_REQUIRED = 1 << 0, /* when its group is there */
	PGATE_CONFIG_KEY_PATTERN = 1 << 1,  /* "PREFIX.NAME": any NAME */
} PgateConfigKeyFlags;

/*
 * One key of the configuration file (docs/config.md).  The table holds
 * every key every module reads; tests/cli/t0106-config-docs.sh
 * holds @doc and contrib/patchgate.conf.example to it.
 */
typedef struct {
	const char *group;
	const char *key;          /* "step.NAME" for a pattern */
	PgateConfigType type;
	PgateConfigKeyFlags flags;
	const char *value;        /* (nullable): the default as a value in
				   * the file; %NULL: none, or computed */
	const char *shown;        /* (nullable): the default as @doc shows
				   * it; %NULL: @value, else "(required)"
				   * or "(none)" */
	const char *choices;      /* (nullable): CHOICE: "series|patch" */
	const char *doc;          /* "docs/config.md", ... */
} PgateConfigKey;

/* The table, in the order of the groups' documentation.
 * Returns: (transfer none) (array length=n_out). */
const PgateConfigKey *pgate_config_keys(gsize *n_out);
/* "string", "bool", ... */
const char *pgate_config_type_to_string(PgateConfigType type);
/* The default as the docs show it (see PgateConfigKey.shown). */
const char *pgate_config_key_shown(const PgateConfigKey *k);
/* Returns: (transfer none) (nullable): the row of [@group] @key; a key
 * of a pattern's family ("step.build") finds the pattern. */
const PgateConfigKey *pgate_config_key_lookup(const char *group,
					      const char *key);
/* Whether @group is a group of the table. */
gboolean pgate_config_group_known(const char *group);
/*
 * The closest group, or key of @group, to a name that is not in the
 * table (edit distance, case aside; a transposition counts once), when it
 * is close enough to be a typo.  For a pattern ("step.NAME") the name
 * given is kept: "stpe.build" gives "step.build".
 * Returns: (transfer full) (nullable).
 */
char *pgate_config_suggest_group(const char *group);
char *pgate_config_suggest_key(const char *group, const char *key);
/*
 * Checks that every group and key of @kf is in the table.  Each unknown
 * one is PGATE_ERROR_CONFIG in @domain, "[GROUP]: no such group (did you
 * mean [GROUP2]?)" or "[GROUP] KEY: no such key (did you mean KEY2?)";
 * a key of type REFUSED (a secret written in the file) is one too.  The
 * values are not looked at: each module reads its own.
 * @problems: (nullable) (element-type GError): every problem is appended
 * (transfer full); @error gets the first.
 * Returns: %TRUE when there is none.
 */
gboolean pgate_config_validate(GKeyFile *kf, GQuark domain,
			       GPtrArray *problems, GError **error);

/* ---- config.c: projects ([project NAME], docs/config.md) -------------
 *
 * A group "[project NAME]" is one project: its own keys (the table's
 * group "project NAME": lists, addresses) and, as "GROUP.KEY = value",
 * the keys of the groups a project may override (apply, ci, ci.local,
 * ci.jenkins, ci.buildbot, trust, pipeline, patchwork, email).  Keys outside any
 * project are the defaults every project inherits.  Without any
 * [project] group the file is one implicit project (name %NULL).
 */
#define PGATE_CONFIG_PROJECT_GROUP "project NAME"  /* the table's group */
/* The NAME of group "project NAME" (transfer none, into @group), %NULL
 * when @group is no project group. */
const char *pgate_config_project_name(const char *group);
/* A project name is 1 to 64 letters, digits, '_', '-' and '.', not
 * starting with '.' or '-'. */
gboolean pgate_config_project_name_valid(const char *name);
/* Whether a project may set keys of [@group]. */
gboolean pgate_config_project_group_overridable(const char *group);
/* "ci.local.step.build" -> group "ci.local", key "step.build": the
 * longest group the table knows that @dotted starts with, then '.'.
 * Returns: (transfer full) (nullable): the group, *@key_out pointing
 * into @dotted; %NULL when no known group prefixes it. */
char *pgate_config_project_key_split(const char *dotted,
				     const char **key_out);
/* Returns: (transfer full): the project names in file order (empty
 * vector when there is none). */
char **pgate_config_projects(GKeyFile *kf);
/* Returns: (transfer full): what project @name sees: every group of @kf
 * but the project groups, with the project's GROUP.KEY values set over
 * them (raw values: copied as written).  %NULL with PGATE_ERROR_CONFIG
 * (@domain) when there is no such project or a key names no group a
 * project may override. */
GKeyFile *pgate_config_project_keyfile(GKeyFile *kf, const char *name,
				       GQuark domain, GError **error);

/* ---- the state directory's layout ------------------------------------ */

/* What patchgate keeps below its state directory (--state), each named
 * here once (docs/config.md): */
#define PGATE_STATE_STORE "store"            /* the LMDB store */
#define PGATE_STATE_RUN_LOCK "run.lock"      /* one pipeline pass at a time */
#define PGATE_STATE_QUARANTINE "quarantine"  /* oversized mail, whole */
#define PGATE_STATE_CI_LOCAL "ci/local"      /* the local CI's jobs, logs,
					      * baselines */

G_END_DECLS
