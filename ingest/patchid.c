/* patchid.c - reading diffs: where a diff starts and ends in a mail body,
 * the files it touches, and its `git patch-id --stable`.
 *
 * Everything here works line by line on memory, never with regular
 * expressions: a mail body is walked once per question.
 */
#include "ingest/ingest-private.h"

#include <string.h>

typedef struct {
	const char *p;     /* start of the line */
	gsize len;         /* without the newline */
	const char *next;  /* start of the next line */
} Line;

/* Steps @l to the next line of [*@pos, @end); FALSE at the end. */
static gboolean
next_line(const char **pos, const char *end, Line *l)
{
	const char *nl;

	if (*pos >= end)
		return FALSE;
	nl = memchr(*pos, '\n', (gsize)(end - *pos));
	l->p = *pos;
	l->len = (gsize)((nl != NULL ? nl : end) - *pos);
	l->next = nl != NULL ? nl + 1 : end;
	*pos = l->next;
	return TRUE;
}

static gboolean
has_prefix(const Line *l, const char *prefix)
{
	gsize n = strlen(prefix);

	return l->len >= n && memcmp(l->p, prefix, n) == 0;
}

/* ---- splitting a mail body into comment and diff -------------------- */

/*
 * Patchwork's parse_patch() state machine.  States name the line just
 * seen and what may follow:
 *
 *   TEXT   comment text
 *   HDR    a suspected file header (diff, Index:): lines wait in "pending"
 *   MINUS  after "--- "
 *   PLUS   after "+++ ", or after a hunk: a hunk header or a new file next
 *   HUNK   inside a hunk, counting lines down to its end
 *   EXT    git extended header lines (rename from, new file mode, index)
 *   BIN    a "GIT binary patch" block
 *
 * Pending header lines go to the diff once a hunk header, "--- " or an
 * extended header confirms them, else back to the comment.  Text after
 * the last hunk returns to the comment.  Differences from Patchwork, each
 * a case where Patchwork moves text to the wrong side:
 *
 *  - in HDR, a blank line ends the suspected header (no file header has
 *    one), and a second "diff " or "Index: " line restarts it, so prose
 *    that starts with "diff" before the real diff stays in the comment;
 *  - "diff --git" followed by one extended header is a diff at once (an
 *    empty new file without an index line, a mode change);
 *  - a binary block ends at the first line that is not binary patch data,
 *    and a "diff " line after it starts the next file with its header
 *    (Patchwork puts the rest of the mail in the diff, or the header of
 *    the next file in the comment);
 *  - "Binary files a/x and b/x differ" belongs to the diff, and so does
 *    a hunk right after extended headers, without a ---/+++ pair;
 *  - any "\ " line ends a hunk's "no newline" marker, not only the
 *    English one, and a hunk of zero lines takes none;
 *  - the last line gets no extra empty line after it.
 */
typedef enum {
	ST_TEXT, ST_HDR, ST_MINUS, ST_PLUS, ST_HUNK, ST_EXT, ST_BIN,
} SplitState;

typedef struct {
	SplitState state;
	GString *diff;
	GString *comment;
	const char *pending;   /* start of the pending lines, or NULL */
	const char *end;       /* of the text */
	guint hunks;           /* hunks seen so far, in all files */
	gint64 old_left, new_left;
} Split;

/* Appends [from, end of @l) to @to, with a newline if the text had none. */
static void
emit_upto(GString *to, const char *from, const Line *l)
{
	g_string_append_len(to, from, l->p + l->len - from);
	g_string_append_c(to, '\n');
}

/* Moves the pending lines and @l to @to. */
static void
flush_with(Split *sp, GString *to, const Line *l)
{
	emit_upto(to, sp->pending != NULL ? sp->pending : l->p, l);
	sp->pending = NULL;
}

/* Moves the pending lines (not @l) to @to. */
static void
flush_pending(Split *sp, GString *to, const Line *l)
{
	if (sp->pending != NULL)
		g_string_append_len(to, sp->pending, l->p - sp->pending);
	sp->pending = NULL;
}

static void
hold(Split *sp, const Line *l)
{
	if (sp->pending == NULL)
		sp->pending = l->p;
}

static gboolean
is_blank(const Line *l)
{
	for (gsize i = 0; i < l->len; i++)
		if (l->p[i] != ' ' && l->p[i] != '\t' && l->p[i] != '\r')
			return FALSE;
	return TRUE;
}

static gboolean
is_ext_header(const Line *l)
{
	static const char *const ext[] = {
		"old mode ", "new mode ", "deleted file mode ",
		"new file mode ", "copy from ", "copy to ", "rename from ",
		"rename to ", "similarity index ", "dissimilarity index ",
		"index ",
	};

	for (guint i = 0; i < G_N_ELEMENTS(ext); i++)
		if (has_prefix(l, ext[i]))
			return TRUE;
	return FALSE;
}

static gboolean
is_file_start(const Line *l)
{
	return has_prefix(l, "diff ") || has_prefix(l, "Index: ");
}

/* Parses digits at *@p, saturating; FALSE when there are none. */
static gboolean
parse_count(const char **p, const char *end, gint64 *out)
{
	gint64 v = 0;
	const char *s = *p;

	while (*p < end && g_ascii_isdigit(**p)) {
		if (v < G_MAXINT32)
			v = v * 10 + (**p - '0');
		(*p)++;
	}
	*out = MIN(v, G_MAXINT32);
	return *p > s;
}

/* One "-N[,M]" or "+N[,M]" range of a hunk header; M defaults to 1. */
static gboolean
parse_range(const char **p, const char *end, char sign, gint64 *count)
{
	gint64 start;

	if (*p >= end || **p != sign)
		return FALSE;
	(*p)++;
	if (!parse_count(p, end, &start))
		return FALSE;
	*count = 1;
	if (*p < end && **p == ',') {
		(*p)++;
		if (!parse_count(p, end, count))
			return FALSE;
	}
	return TRUE;
}

/* "@@ -a[,b] +c[,d] @@": Patchwork's _hunk_re. */
static gboolean
parse_hunk_header(const Line *l, gint64 *old_count, gint64 *new_count)
{
	const char *p = l->p + 3, *end = l->p + l->len;

	if (!has_prefix(l, "@@ -"))
		return FALSE;
	if (!parse_range(&p, end, '-', old_count) || p >= end || *p++ != ' ')
		return FALSE;
	if (!parse_range(&p, end, '+', new_count))
		return FALSE;
	return end - p >= 3 && memcmp(p, " @@", 3) == 0;
}

static gboolean
pending_starts_with(const Split *sp, const char *prefix)
{
	gsize n = strlen(prefix);

	return sp->pending != NULL && (gsize)(sp->end - sp->pending) >= n &&
	       memcmp(sp->pending, prefix, n) == 0;
}

/* A line of a git binary hunk: a length character (A-Z: 1-26 bytes,
 * a-z: 27-52) then five base85 characters per four bytes. */
static gboolean
is_base85_line(const Line *l)
{
	static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
	gsize bytes;
	const char *end = l->p + l->len;
	const char *p;

	if (l->len < 6)
		return FALSE;
	if (l->p[0] >= 'A' && l->p[0] <= 'Z')
		bytes = (gsize)(l->p[0] - 'A' + 1);
	else if (l->p[0] >= 'a' && l->p[0] <= 'z')
		bytes = (gsize)(l->p[0] - 'a' + 27);
	else
		return FALSE;
	if (end > l->p && end[-1] == '\r')
		end--;
	if ((gsize)(end - l->p - 1) != (bytes + 3) / 4 * 5)
		return FALSE;
	for (p = l->p + 1; p < end; p++)
		if (*p == '\0' || strchr(alphabet, *p) == NULL)
			return FALSE;
	return TRUE;
}

static gboolean
is_binary_method(const Line *l)
{
	const char *p;

	if (has_prefix(l, "literal "))
		p = l->p + 8;
	else if (has_prefix(l, "delta "))
		p = l->p + 6;
	else
		return FALSE;
	return p < l->p + l->len && g_ascii_isdigit(*p);
}

static void
split_text(Split *sp, const Line *l)
{
	if (is_file_start(l)) {
		sp->pending = l->p;
		sp->state = ST_HDR;
	} else if (has_prefix(l, "--- ")) {
		sp->pending = l->p;
		sp->state = ST_MINUS;
	} else {
		emit_upto(sp->comment, l->p, l);
	}
}

static void
split_hdr(Split *sp, const Line *l)
{
	if (is_blank(l)) {
		flush_with(sp, sp->comment, l);
		sp->state = ST_TEXT;
		return;
	}
	if (has_prefix(l, "Index: ") ||
	    (has_prefix(l, "diff ") && !pending_starts_with(sp, "Index: "))) {
		/* what was pending was no file header after all */
		flush_pending(sp, sp->comment, l);
		sp->pending = l->p;
		return;
	}
	if (has_prefix(l, "--- ")) {
		hold(sp, l);
		sp->state = ST_MINUS;
	} else if (is_ext_header(l)) {
		if (pending_starts_with(sp, "diff --git "))
			flush_with(sp, sp->diff, l);
		else
			hold(sp, l);
		sp->state = ST_EXT;
	} else if (has_prefix(l, "Binary files ") &&
		   pending_starts_with(sp, "diff ")) {
		flush_with(sp, sp->diff, l);
		sp->state = ST_PLUS;
	} else if (has_prefix(l, "GIT binary patch") &&
		   pending_starts_with(sp, "diff --git ")) {
		flush_with(sp, sp->diff, l);
		sp->state = ST_BIN;
	} else {
		hold(sp, l);
	}
}

static void
split_minus(Split *sp, const Line *l)
{
	if (has_prefix(l, "+++ ")) {
		hold(sp, l);
		sp->state = ST_PLUS;
	} else if (sp->hunks > 0) {
		hold(sp, l);
		sp->state = ST_HDR;
	} else {
		flush_with(sp, sp->comment, l);
		sp->state = ST_TEXT;
	}
}

static void
start_hunk(Split *sp, const Line *l, gint64 old_count, gint64 new_count)
{
	flush_with(sp, sp->diff, l);
	sp->old_left = old_count;
	sp->new_left = new_count;
	if (old_count <= 0 && new_count <= 0) {
		sp->hunks++;
		sp->state = ST_PLUS;
	} else {
		sp->state = ST_HUNK;
	}
}

static void
split_plus(Split *sp, const Line *l)
{
	gint64 o, n;

	if (parse_hunk_header(l, &o, &n)) {
		start_hunk(sp, l, o, n);
	} else if (has_prefix(l, "--- ")) {
		flush_with(sp, sp->diff, l);
		sp->state = ST_MINUS;
	} else if (sp->hunks > 0 && has_prefix(l, "\\ ")) {
		flush_with(sp, sp->diff, l);
	} else if (is_file_start(l)) {
		/* a ---/+++ pair without a hunk was no diff */
		if (sp->hunks == 0)
			flush_pending(sp, sp->comment, l);
		hold(sp, l);
		sp->state = ST_HDR;
	} else if (sp->hunks > 0 && !is_blank(l)) {
		hold(sp, l);
		sp->state = ST_HDR;
	} else {
		flush_with(sp, sp->comment, l);
		sp->state = ST_TEXT;
	}
}

static void
split_hunk(Split *sp, const Line *l)
{
	char c = l->len > 0 ? l->p[0] : '\n';

	if (c == '-')
		sp->old_left--;
	else if (c == '+')
		sp->new_left--;
	else if (c != '\\')
		sp->old_left--, sp->new_left--;
	emit_upto(sp->diff, l->p, l);
	if (sp->old_left <= 0 && sp->new_left <= 0) {
		sp->hunks++;
		sp->state = ST_PLUS;
	}
}

static void
split_ext(Split *sp, const Line *l)
{
	gint64 o, n;

	if (is_ext_header(l)) {
		flush_with(sp, sp->diff, l);
	} else if (parse_hunk_header(l, &o, &n)) {
		/* no ---/+++ pair, but after git's headers still a hunk */
		start_hunk(sp, l, o, n);
	} else if (has_prefix(l, "--- ")) {
		flush_with(sp, sp->diff, l);
		sp->state = ST_MINUS;
	} else if (has_prefix(l, "GIT binary patch") ||
		   has_prefix(l, "Binary files ")) {
		flush_with(sp, sp->diff, l);
		sp->state = l->p[0] == 'G' ? ST_BIN : ST_PLUS;
	} else if (is_blank(l) && sp->pending == NULL) {
		/* a diff of extended headers only (a rename) ended */
		emit_upto(sp->comment, l->p, l);
		sp->state = ST_TEXT;
	} else {
		hold(sp, l);
		sp->state = ST_HDR;
	}
}

static void
split_bin(Split *sp, const Line *l)
{
	if (is_binary_method(l) || is_base85_line(l) || is_blank(l)) {
		/* the blank line ending a binary hunk is part of it:
		 * git apply needs it */
		emit_upto(sp->diff, l->p, l);
	} else {
		/* text after the diff, or the next file */
		sp->pending = l->p;
		sp->state = ST_HDR;
	}
}

void
pgate_ingest__split_patch(const char *text, gsize len, char **out_diff,
			  char **out_comment)
{
	const char *pos = text, *end = text + len;
	Split sp = { ST_TEXT, g_string_new(NULL), g_string_new(NULL), NULL,
		     end, 0, 0, 0 };
	Line l;

	while (next_line(&pos, end, &l)) {
		switch (sp.state) {
		case ST_TEXT: split_text(&sp, &l); break;
		case ST_HDR: split_hdr(&sp, &l); break;
		case ST_MINUS: split_minus(&sp, &l); break;
		case ST_PLUS: split_plus(&sp, &l); break;
		case ST_HUNK: split_hunk(&sp, &l); break;
		case ST_EXT: split_ext(&sp, &l); break;
		case ST_BIN: split_bin(&sp, &l); break;
		}
	}
	if (sp.pending != NULL) {
		g_string_append_len(sp.comment, sp.pending, end - sp.pending);
		if (end > sp.pending && end[-1] != '\n')
			g_string_append_c(sp.comment, '\n');
	}
	*out_diff = sp.diff->len > 0 ? g_string_free(sp.diff, FALSE) :
		(g_string_free(sp.diff, TRUE), NULL);
	*out_comment = sp.comment->len > 0 ?
		g_string_free(sp.comment, FALSE) :
		(g_string_free(sp.comment, TRUE), NULL);
}

/* ---- the files a diff touches --------------------------------------- */

typedef struct {
	PgateStrSet set;
	guint max;
} FileSet;

/* Takes @path. */
static void
fileset_add(FileSet *fs, char *path)
{
	if (*path == '\0' || fs->set.items->len >= fs->max ||
	    strcmp(path, "/dev/null") == 0) {
		g_free(path);
		return;
	}
	pgate_ingest__strset_add(&fs->set, path);
}

/* A C-quoted path as git writes names with unusual characters:
 * "\"a/t\\303\\251l\\tx\"".  Returns the end of the quoted string. */
static const char *
unquote_path(const char *p, const char *end, GString *out)
{
	for (p++; p < end && *p != '"'; p++) {
		if (*p != '\\' || p + 1 >= end) {
			g_string_append_c(out, *p);
			continue;
		}
		p++;
		/* three octal digits, or the byte as written */
		if (*p >= '0' && *p <= '3' && end - p >= 3 &&
		    p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7') {
			g_string_append_c(out, (char)(((p[0] - '0') << 6) |
						      ((p[1] - '0') << 3) |
						      (p[2] - '0')));
			p += 2;
		} else {
			const char *from = "abfnrtv", *to = "\a\b\f\n\r\t\v";
			const char *c = strchr(from, *p);

			g_string_append_c(out, c != NULL && *p != '\0' ?
					  to[c - from] : *p);
		}
	}
	return p < end ? p + 1 : end;
}

/* Bounded, valid UTF-8 copy of a path. */
static char *
clean_path(const char *p, gsize len)
{
	g_autofree char *raw = g_strndup(p, MIN(len, PGATE_INGEST_MAX_PATH));

	return g_utf8_make_valid(raw, -1);
}

static char *
strip_prefix(const char *path, gsize len, const char *prefix)
{
	if (len > 2 && strncmp(path, prefix, 2) == 0)
		return clean_path(path + 2, len - 2);
	return clean_path(path, len);
}

/* "diff --git a/x b/x": with unquoted names that may hold spaces, the
 * split is where both halves name the same file, as git decides. */
static void
scan_git_header(FileSet *fs, const Line *l)
{
	const char *p = l->p + 11, *end = l->p + l->len;
	gsize n;

	while (end > p && end[-1] == '\r')
		end--;
	if (p < end && *p == '"') {
		g_autoptr(GString) a = g_string_new(NULL);
		g_autoptr(GString) b = g_string_new(NULL);

		p = unquote_path(p, end, a);
		while (p < end && *p == ' ')
			p++;
		if (p < end && *p == '"')
			unquote_path(p, end, b);
		else
			g_string_append_len(b, p, end - p);
		fileset_add(fs, strip_prefix(a->str, a->len, "a/"));
		fileset_add(fs, strip_prefix(b->str, b->len, "b/"));
		return;
	}
	n = (gsize)(end - p);
	if (n % 2 == 1 && p[n / 2] == ' ') {
		gsize half = n / 2;
		gboolean prefixed = half > 2 && strncmp(p, "a/", 2) == 0 &&
				    strncmp(p + half + 1, "b/", 2) == 0;
		gsize skip = prefixed ? 2 : 0;

		if (memcmp(p + skip, p + half + 1 + skip, half - skip) == 0) {
			fileset_add(fs, clean_path(p + skip, half - skip));
			return;
		}
	}
	/* different names (a rename): split at the first " b/" or space */
	{
		const char *sp = g_strstr_len(p, end - p, " b/");

		if (sp == NULL)
			sp = memchr(p, ' ', n);
		if (sp == NULL)
			return;
		fileset_add(fs, strip_prefix(p, (gsize)(sp - p), "a/"));
		fileset_add(fs, strip_prefix(sp + 1, (gsize)(end - sp - 1),
					     "b/"));
	}
}

/* "--- a/x" or "+++ b/x": the name ends at a tab (diff puts the date
 * there, git puts one after a name with spaces). */
static void
scan_name_line(FileSet *fs, const Line *l, gboolean git)
{
	const char *prefix = l->p[0] == '-' ? "a/" : "b/";
	const char *p, *tab;
	gsize n;

	if (l->len <= 4)
		return;
	p = l->p + 4;
	n = l->len - 4;
	if (*p == '"') {
		g_autoptr(GString) s = g_string_new(NULL);

		unquote_path(p, p + n, s);
		fileset_add(fs, strip_prefix(s->str, s->len, prefix));
		return;
	}
	tab = memchr(p, '\t', n);
	if (tab != NULL)
		n = (gsize)(tab - p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\r'))
		n--;
	if (n == 9 && memcmp(p, "/dev/null", 9) == 0)
		return;
	if (git) {
		fileset_add(fs, strip_prefix(p, n, prefix));
	} else {
		/* without the first directory, as patch -p1 and
		 * Patchwork's find_filenames() do */
		const char *slash = memchr(p, '/', n);

		if (slash != NULL) {
			n -= (gsize)(slash + 1 - p);
			p = slash + 1;
		}
		fileset_add(fs, clean_path(p, n));
	}
}

gboolean
pgate_ingest__diff_scan(const char *diff, gsize len, GPtrArray *files,
			guint max_files)
{
	FileSet fs = { { files, NULL }, max_files };
	const char *pos = diff, *end = diff + len;
	gint64 old_left = 0, new_left = 0;
	gboolean git = FALSE, binary = FALSE;
	Line l;

	while (next_line(&pos, end, &l)) {
		if (old_left > 0 || new_left > 0) {
			char c = l.len > 0 ? l.p[0] : ' ';

			/* a hunk shorter than its header says ends at
			 * the next file: no hunk line starts with "diff" */
			if (has_prefix(&l, "diff --git ")) {
				old_left = new_left = 0;
			} else {
				if (c == '-')
					old_left--;
				else if (c == '+')
					new_left--;
				else if (c != '\\')
					old_left--, new_left--;
				continue;
			}
		}
		if (parse_hunk_header(&l, &old_left, &new_left))
			continue;
		if (has_prefix(&l, "diff --git ")) {
			git = TRUE;
			scan_git_header(&fs, &l);
		} else if (is_file_start(&l)) {
			git = FALSE;
		} else if (has_prefix(&l, "--- ") || has_prefix(&l, "+++ ")) {
			scan_name_line(&fs, &l, git);
		} else if (has_prefix(&l, "GIT binary patch") ||
			   has_prefix(&l, "Binary files ")) {
			binary = TRUE;
		}
	}
	pgate_ingest__strset_clear(&fs.set);
	return binary;
}

/* ---- git patch-id --stable ------------------------------------------ */

/*
 * git 2.39's builtin/patch-id.c, get_one_patchid() with the stable flag,
 * on memory instead of stdin.  The id is the sum, as 20-byte little-endian
 * numbers with carry, of the SHA-1 of each file's part of the diff;
 * whitespace is left out of what is hashed, "index" lines are skipped,
 * and a binary file counts by its index line's two object names.
 *
 * git reads stdin as C strings, so a line ends for it at a NUL byte; its
 * ctype knows ' ', \t, \n and \r as space and ASCII letters as alpha.
 */

#define HEXSZ 64   /* GIT_MAX_HEXSZ */

typedef struct {
	PgateSha1 ctx;         /* fresh after each flush */
	guint8 result[20];
	int patchlen;
	int before, after;
	gboolean binary;
	char pre_oid[HEXSZ + 1], post_oid[HEXSZ + 1];
} PatchId;

static void
patchid_flush(PatchId *pid)
{
	guint8 hash[20];
	guint carry = 0;

	pgate_sha1_finish(&pid->ctx, hash);
	pgate_sha1_init(&pid->ctx);
	for (int i = 0; i < 20; i++) {
		carry += pid->result[i] + hash[i];
		pid->result[i] = (guint8)carry;
		carry >>= 8;
	}
}

static void
patchid_reset(PatchId *pid)
{
	memset(pid->result, 0, sizeof pid->result);
	pid->patchlen = 0;
	pid->before = pid->after = -1;
	pid->binary = FALSE;
	/* uninitialised in git; the empty string is the sane reading */
	pid->pre_oid[0] = pid->post_oid[0] = '\0';
}

static gboolean
git_isalpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static gboolean
is_hex(char c)
{
	return g_ascii_isdigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* git's get_oid_hex() for SHA-1: 40 hex digits, whatever follows. */
static gboolean
has_oid_hex(const char *p, gsize len)
{
	if (len < 40)
		return FALSE;
	for (int i = 0; i < 40; i++)
		if (!is_hex(p[i]))
			return FALSE;
	return TRUE;
}

/* Hashes @l without its whitespace; returns how many bytes that was.
 * Space is git's isspace(): ' ', \t, \n, \r.  Every byte is copied and
 * the space ones are then written over: no branch to mispredict on the
 * many spaces of code. */
static int
patchid_update(PatchId *pid, const char *p, gsize len)
{
	static const guint8 space[256] = {
		[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1,
	};
	char buf[1024];
	int total = 0;

	while (len > 0) {
		gsize chunk = MIN(len, sizeof buf), n = 0;

		for (gsize i = 0; i < chunk; i++) {
			buf[n] = p[i];
			n += 1 - space[(guchar)p[i]];
		}
		pgate_sha1_update(&pid->ctx, buf, n);
		total += (int)n;
		p += chunk;
		len -= chunk;
	}
	return total;
}

/* git's scan_hunk_header(): sets the counts even when it fails. */
static void
patchid_hunk_header(PatchId *pid, const char *p, const char *end)
{
	gint64 v;
	const char *q = p + 4, *s;

	s = q;
	parse_count(&q, end, &v);
	if (q < end && *q == ',') {
		s = ++q;
		parse_count(&q, end, &v);
		pid->before = (int)v;
	} else {
		pid->before = 1;
	}
	if (q == s || end - q < 2 || q[0] != ' ' || q[1] != '+')
		return;
	q += 2;
	s = q;
	parse_count(&q, end, &v);
	if (q < end && *q == ',') {
		q++;
		parse_count(&q, end, &v);
		pid->after = (int)v;
	} else {
		pid->after = 1;
	}
}

/* An "index A..B[ mode]" line: keeps A and B for a binary file. */
static void
patchid_index_line(PatchId *pid, const char *line, gsize len)
{
	const char *end = line + len;
	const char *dots = g_strstr_len(line, len, "..");
	const char *oid2_end;
	gsize n;

	if (dots == NULL)
		return;
	oid2_end = memchr(dots, ' ', (gsize)(end - dots));
	if (oid2_end == NULL)
		oid2_end = end - 1;   /* the newline; else git loses a byte */
	n = MIN((gsize)(dots - (line + 6)), (gsize)HEXSZ);
	memcpy(pid->pre_oid, line + 6, n);
	pid->pre_oid[n] = '\0';
	n = oid2_end > dots + 2 ? (gsize)(oid2_end - dots - 2) : 0;
	n = MIN(n, (gsize)HEXSZ);
	memcpy(pid->post_oid, dots + 2, n);
	pid->post_oid[n] = '\0';
}

typedef enum { PID_NEXT, PID_END_OF_PATCH, PID_NEW_PATCH } PidStep;

/* The body of get_one_patchid()'s loop for one line, newline included;
 * @len stops at the first NUL, as git's string functions do. */
static PidStep
patchid_line(PatchId *pid, const char *line, gsize len)
{
	const char *p = line;
	gsize plen = len;
	Line l = { line, len, NULL };

	if (has_prefix(&l, "diff-tree "))
		p += 10, plen -= 10;
	else if (has_prefix(&l, "commit "))
		p += 7, plen -= 7;
	else if (has_prefix(&l, "From "))
		p += 5, plen -= 5;
	else if (has_prefix(&l, "\\ ") && len > 12)
		return PID_NEXT;
	if (has_oid_hex(p, plen))
		return PID_NEW_PATCH;

	if (pid->patchlen == 0 && !has_prefix(&l, "diff "))
		return PID_NEXT;

	if (pid->before == -1) {
		if (has_prefix(&l, "GIT binary patch") ||
		    has_prefix(&l, "Binary files")) {
			pid->binary = TRUE;
			pid->before = 0;
			pgate_sha1_update(&pid->ctx, pid->pre_oid,
					  strlen(pid->pre_oid));
			pgate_sha1_update(&pid->ctx, pid->post_oid,
					  strlen(pid->post_oid));
			patchid_flush(pid);
			return PID_NEXT;
		} else if (has_prefix(&l, "index ")) {
			patchid_index_line(pid, line, len);
			return PID_NEXT;
		} else if (has_prefix(&l, "--- ")) {
			pid->before = pid->after = 1;
		} else if (!git_isalpha(len > 0 ? line[0] : '\0')) {
			return PID_END_OF_PATCH;
		}
	}

	if (pid->binary) {
		if (has_prefix(&l, "diff ")) {
			pid->binary = FALSE;
			pid->before = -1;
		}
		return PID_NEXT;
	}

	if (pid->before == 0 && pid->after == 0) {
		if (has_prefix(&l, "@@ -")) {
			patchid_hunk_header(pid, line, line + len);
			return PID_NEXT;
		}
		if (!has_prefix(&l, "diff "))
			return PID_END_OF_PATCH;
		patchid_flush(pid);
		pid->before = pid->after = -1;
	}

	if (len > 0 && (line[0] == '-' || line[0] == ' '))
		pid->before--;
	if (len > 0 && (line[0] == '+' || line[0] == ' '))
		pid->after--;
	pid->patchlen += patchid_update(pid, line, len);
	return PID_NEXT;
}

static char *
patchid_hex(const guint8 *id)
{
	char *hex = g_malloc(41);

	pgate_hex_encode(hex, id, 20);
	return hex;
}

char *
pgate_patch_id_stable(const char *diff, gsize len)
{
	PatchId pid;
	const char *pos = diff, *end = diff + len;
	char *hex = NULL;
	gboolean any_nul;
	guint8 unused[20];
	Line l;

	g_return_val_if_fail(diff != NULL || len == 0, NULL);

	any_nul = len > 0 && memchr(diff, '\0', len) != NULL;
	pgate_sha1_init(&pid.ctx);
	patchid_reset(&pid);
	while (hex == NULL && next_line(&pos, end, &l)) {
		/* git's line: up to the first NUL, newline included */
		gsize full = (gsize)(l.next - l.p);
		const char *nul = any_nul ? memchr(l.p, '\0', full) : NULL;
		PidStep step = patchid_line(&pid, l.p,
					    nul != NULL ? (gsize)(nul - l.p) :
					    full);

		if (step == PID_NEXT)
			continue;
		/* git prints the id of what came before, if anything */
		patchid_flush(&pid);
		if (pid.patchlen > 0)
			hex = patchid_hex(pid.result);
		patchid_reset(&pid);
	}
	if (hex == NULL) {
		patchid_flush(&pid);
		if (pid.patchlen > 0)
			hex = patchid_hex(pid.result);
	}
	pgate_sha1_finish(&pid.ctx, unused);   /* frees it */
	return hex;
}
