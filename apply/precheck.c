/* precheck.c - what must hold before libgit2 applies a patch.
 *
 * Static checks (pgate_apply__check_static), on the patch alone: its size
 * and file count, every path it names (also read from the raw header
 * lines, in case libgit2's parser reads them otherwise), symlinks and
 * gitlinks unless allowed, and binary data: declared sizes, and an inflate
 * bounded by them (a zlib bomb stops at the declared size).
 *
 * Tree checks (pgate_apply__check_tree) simulate `git apply` (as git am
 * runs it: exact context, no fuzz, any offset) on the tree the patch goes
 * onto, file by file in patch order:
 *  - a file the patch creates (or renames or copies to) must not exist
 *    (unless a later delta deletes or renames it away), a file it changes
 *    must, with the type (file, link, gitlink) it says;
 *  - a copy or a rename reads the file as the tree has it (git's
 *    preimage), any other delta what the deltas before it wrote to the
 *    path; a path an earlier delta renamed or deleted is gone for it;
 *  - no path may lie beneath a symlink or a gitlink, or beneath a file;
 *  - every hunk must match: where its header says first, then the lines
 *    after and before it alternately (git's find_pos()), never over lines
 *    an earlier hunk wrote; a hunk from line 1 (or 0) must match at the
 *    start, one without trailing context at the end;
 *  - a deletion must leave the file empty;
 *  - a hunk must change something (git refuses one that does not as
 *    corrupt).
 * libgit2's git_apply_to_tree only applies a hunk at the line its header
 * names.  So when git apply would apply a hunk elsewhere (the branch moved
 * since the patch was made), the diff text is handed to libgit2 with that
 * hunk header's "+start" moved there ("fixed"), and libgit2 then makes the
 * same change git apply makes.  The failing file and hunk come from this
 * simulation, so they are what git apply would name.
 * Binary files are checked for existence and type only: their content is
 * checked by libgit2, which applies the reverse data and compares.
 */
#include "apply/apply-private.h"

#include <string.h>
#include <zlib.h>

#define MODE_TYPE(m) ((m) & 0170000)
#define MODE_LINK 0120000
#define MODE_GITLINK 0160000
#define MODE_TREE 0040000

void
pgate_apply__check_clear(PgateApplyCheck *c)
{
	g_clear_pointer(&c->failed_path, g_free);
	g_clear_pointer(&c->reason, g_free);
	if (c->fixed)
		g_string_free(c->fixed, TRUE);
	c->fixed = NULL;
	c->failed_file = c->failed_hunk = 0;
	c->rejected = FALSE;
}

static gboolean
refuse(PgateApplyCheck *out, gboolean rejected, guint file, const char *path,
       guint hunk, const char *fmt, ...) G_GNUC_PRINTF(6, 7);

static gboolean
refuse(PgateApplyCheck *out, gboolean rejected, guint file, const char *path,
       guint hunk, const char *fmt, ...)
{
	va_list ap;

	out->rejected = rejected;
	out->failed_file = file;
	g_free(out->failed_path);
	out->failed_path = g_strdup(path);
	out->failed_hunk = hunk;
	g_free(out->reason);
	va_start(ap, fmt);
	out->reason = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return FALSE;
}

/* ---- static checks ------------------------------------------------------ */

/* git's C-style quoted path ("a\tb\303\251") or the rest of the line */
static char *
header_path(const char *s, gsize n)
{
	GString *out;

	if (n == 0 || s[0] != '"') {
		/* git-style headers may end in a tab and a date (old diffs) */
		const char *tab = memchr(s, '\t', n);

		return g_strndup(s, tab ? (gsize)(tab - s) : n);
	}
	out = g_string_new(NULL);
	for (gsize i = 1; i < n && s[i] != '"'; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			g_string_append_c(out, s[i]);
			continue;
		}
		i++;
		switch (s[i]) {
		case 'a': g_string_append_c(out, '\a'); break;
		case 'b': g_string_append_c(out, '\b'); break;
		case 'f': g_string_append_c(out, '\f'); break;
		case 'n': g_string_append_c(out, '\n'); break;
		case 'r': g_string_append_c(out, '\r'); break;
		case 't': g_string_append_c(out, '\t'); break;
		case 'v': g_string_append_c(out, '\v'); break;
		default:
			/* three octal digits, or the byte as written */
			if (s[i] >= '0' && s[i] <= '3' && i + 2 < n &&
			    s[i + 1] >= '0' && s[i + 1] <= '7' &&
			    s[i + 2] >= '0' && s[i + 2] <= '7') {
				g_string_append_c(out, (char)(((s[i] - '0') << 6) |
							      ((s[i + 1] - '0') << 3) |
							      (s[i + 2] - '0')));
				i += 2;
			} else {
				g_string_append_c(out, s[i]);
			}
		}
	}
	return g_string_free(out, FALSE);
}

/* "a/N b/N" with the same N twice (git's rule for names with spaces):
 * N, or NULL */
static char *
same_name_split(const char *rest)
{
	gsize rl = strlen(rest), half = (rl - 1) / 2;

	if (rl % 2 == 1 && half > 2 && rest[half] == ' ' &&
	    strncmp(rest, "a/", 2) == 0 && strncmp(rest + half + 1, "b/", 2) == 0 &&
	    strncmp(rest + 2, rest + half + 3, half - 2) == 0)
		return g_strndup(rest + 2, half - 2);
	return NULL;
}

GHashTable *
pgate_apply__explicit_modes(const char *text, gsize len)
{
	GHashTable *modes = g_hash_table_new_full(g_str_hash, g_str_equal,
						  g_free, NULL);
	g_autofree char *name = NULL;   /* the current file's new name */
	gboolean in_header = FALSE, explicit = FALSE;
	gsize i = 0;

	for (;;) {
		const char *line = text + i;
		const char *nl = i < len ? memchr(line, '\n', len - i) : NULL;
		gsize n = i < len ? (nl ? (gsize)(nl - line) : len - i) : 0;
		gboolean start = i < len && n >= 11 &&
				 strncmp(line, "diff --git ", 11) == 0;

		if ((start || i >= len) && name != NULL) {
			g_hash_table_insert(modes, g_steal_pointer(&name),
					    GINT_TO_POINTER(explicit));
		}
		if (i >= len)
			break;
		i += n + (nl ? 1 : 0);
		if (start) {
			g_autofree char *rest = g_strndup(line + 11, n - 11);

			g_clear_pointer(&name, g_free);
			in_header = TRUE;
			explicit = FALSE;
			if (rest[0] == '"') {
				const char *q = strstr(rest + 1, "\" \"b/");

				/* the second quoted name, unquoted */
				if (q != NULL) {
					g_autofree char *b = header_path(q + 2, strlen(q + 2));

					name = g_strdup(b + 2);
				}
			} else if (strchr(rest, ' ') == strrchr(rest, ' ')) {
				const char *sp = strchr(rest, ' ');

				if (sp && strncmp(sp + 1, "b/", 2) == 0)
					name = g_strdup(sp + 3);
			} else {
				name = same_name_split(rest);
			}
		} else if (in_header && ((n >= 2 && strncmp(line, "@@", 2) == 0) ||
					 (n >= 16 && strncmp(line, "GIT binary patch", 16) == 0))) {
			in_header = FALSE;
		} else if (in_header) {
			if ((n > 9 && strncmp(line, "new mode ", 9) == 0) ||
			    (n > 14 && strncmp(line, "new file mode ", 14) == 0))
				explicit = TRUE;
			else if (n > 10 && strncmp(line, "rename to ", 10) == 0) {
				g_free(name);
				name = header_path(line + 10, n - 10);
			} else if (n > 8 && strncmp(line, "copy to ", 8) == 0) {
				g_free(name);
				name = header_path(line + 8, n - 8);
			}
		}
	}
	return modes;
}

/* The end of the C-quoted string at @s (its closing quote), or NULL */
static const char *
quoted_end(const char *s)
{
	for (s++; *s; s++) {
		if (*s == '\\' && s[1])
			s++;
		else if (*s == '"')
			return s;
	}
	return NULL;
}

/* Whether a "diff --git " line (@rest, after that) names one file twice,
 * the one case where git takes its name from it (git_header_name()) */
static gboolean
header_same_name(const char *rest)
{
	g_autofree char *one = NULL, *two = NULL;
	const char *end, *second, *a, *b;

	if (rest[0] != '"') {
		g_autofree char *n = same_name_split(rest);

		return n != NULL;
	}
	end = quoted_end(rest);
	if (end == NULL || end[1] != ' ')
		return FALSE;
	one = header_path(rest, end + 1 - rest);
	second = end + 2;
	two = second[0] == '"' ? header_path(second, strlen(second))
			       : g_strdup(second);
	a = strchr(one, '/');
	b = strchr(two, '/');
	return a && b && strcmp(a, b) == 0;
}

/* The paths in the header lines of every file of a git diff, checked
 * before libgit2 reads them: "--- a/x", "+++ b/x" (the first component
 * dropped, as -p1), "rename from x", "copy to x"... */
static gboolean
scan_header_paths(const char *text, gsize len, PgateApplyCheck *out)
{
	static const struct { const char *prefix; gboolean strip; } hdrs[] = {
		{ "--- ", TRUE }, { "+++ ", TRUE },
		{ "rename from ", FALSE }, { "rename to ", FALSE },
		{ "copy from ", FALSE }, { "copy to ", FALSE },
		{ "rename old ", FALSE }, { "rename new ", FALSE },
	};
	gboolean in_header = FALSE, named = TRUE;
	guint file = 0;
	gsize i = 0;

	for (;;) {
		const char *line = text + i;
		const char *nl = i < len ? memchr(line, '\n', len - i) : NULL;
		gsize n = i < len ? (nl ? (gsize)(nl - line) : len - i) : 0;
		gboolean start = n >= 11 && strncmp(line, "diff --git ", 11) == 0;

		/* git takes a file's names from its "diff --git" line only
		 * when it names one file twice; else from the lines below */
		if ((start || i >= len) && file && !named)
			return refuse(out, FALSE, file, NULL, 0,
				      "corrupt patch: git diff header lacks "
				      "filename information (file %u)", file);
		if (i >= len)
			break;
		i += n + 1;
		if (n && line[n - 1] == '\r')
			n--;
		if (start) {
			g_autofree char *rest = g_strndup(line + 11, n - 11);

			in_header = TRUE;
			file++;
			named = header_same_name(rest);
			/* "a//x": an absolute path once the prefix is gone */
			if ((n > 14 && strncmp(line + 11, "a//", 3) == 0) ||
			    (n > 15 && strncmp(line + 11, "\"a//", 4) == 0) ||
			    g_strstr_len(line, n, " b//") ||
			    g_strstr_len(line, n, " \"b//")) {
				g_autofree char *l = g_strndup(line, n);

				return refuse(out, TRUE, file, NULL, 0,
					      "absolute path: %s", l + 11);
			}
			continue;
		}
		if (!in_header)
			continue;
		if ((n >= 2 && strncmp(line, "@@", 2) == 0) ||
		    (n >= 16 && strncmp(line, "GIT binary patch", 16) == 0) ||
		    (n >= 13 && strncmp(line, "Binary files ", 13) == 0)) {
			in_header = FALSE;
			continue;
		}
		for (gsize h = 0; h < G_N_ELEMENTS(hdrs); h++) {
			gsize pl = strlen(hdrs[h].prefix);
			g_autofree char *path = NULL;
			const char *p, *why;

			if (n < pl || strncmp(line, hdrs[h].prefix, pl) != 0)
				continue;
			path = header_path(line + pl, n - pl);
			if (strcmp(path, "/dev/null") == 0)
				break;
			named = TRUE;
			p = path;
			if (hdrs[h].strip) {
				const char *slash = strchr(p, '/');

				p = slash ? slash + 1 : p;
			}
			why = pgate_apply__bad_path(p);
			if (why != NULL)
				return refuse(out, TRUE, file, p, 0, "%s: %s",
					      why, p);
			break;
		}
	}
	return TRUE;
}

/* @path in git's C quotes: "b/x\ty" */
static void
append_quoted(GString *out, const char *prefix, const char *path)
{
	g_string_append_c(out, '"');
	g_string_append(out, prefix);
	for (const guchar *p = (const guchar *)path; *p; p++) {
		switch (*p) {
		case '"': g_string_append(out, "\\\""); break;
		case '\\': g_string_append(out, "\\\\"); break;
		case '\t': g_string_append(out, "\\t"); break;
		case '\n': g_string_append(out, "\\n"); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				g_string_append_printf(out, "\\%03o", *p);
			else
				g_string_append_c(out, (char)*p);
		}
	}
	g_string_append_c(out, '"');
}

/* The next line of the file header that goes on at *@i (the start of a
 * line): FALSE at its end (a hunk, the next file, a binary patch). */
static gboolean
next_header_line(const char *text, gsize len, gsize *i, const char **out_l,
		 gsize *out_m)
{
	const char *l, *e;
	gsize m;

	if (*i >= len)
		return FALSE;
	l = text + *i;
	e = memchr(l, '\n', len - *i);
	m = e ? (gsize)(e - l) : len - *i;
	*i += m + (e ? 1 : 0);
	if ((m >= 2 && strncmp(l, "@@", 2) == 0) ||
	    (m >= 11 && strncmp(l, "diff --git ", 11) == 0) ||
	    (m >= 16 && strncmp(l, "GIT binary patch", 16) == 0) ||
	    (m >= 13 && strncmp(l, "Binary files ", 13) == 0))
		return FALSE;
	*out_l = l;
	*out_m = m;
	return TRUE;
}

/* the names of the file whose header starts at @i, from its rename or
 * copy lines, or (@minus_plus) its ---/+++ lines: where git reads them
 * when the "diff --git" line is ambiguous */
static void
header_names(const char *text, gsize len, gsize i, char **oldp, char **newp,
	     gboolean minus_plus)
{
	const char *l;
	gsize m;

	while (next_header_line(text, len, &i, &l, &m)) {
		if (m > 12 && strncmp(l, "rename from ", 12) == 0) {
			g_free(*oldp);
			*oldp = header_path(l + 12, m - 12);
		} else if (m > 10 && strncmp(l, "copy from ", 10) == 0) {
			g_free(*oldp);
			*oldp = header_path(l + 10, m - 10);
		} else if (m > 10 && strncmp(l, "rename to ", 10) == 0) {
			g_free(*newp);
			*newp = header_path(l + 10, m - 10);
		} else if (m > 8 && strncmp(l, "copy to ", 8) == 0) {
			g_free(*newp);
			*newp = header_path(l + 8, m - 8);
		} else if (minus_plus && m > 6 && strncmp(l, "--- a/", 6) == 0) {
			g_free(*oldp);
			*oldp = header_path(l + 6, m - 6);
		} else if (minus_plus && m > 6 && strncmp(l, "+++ b/", 6) == 0) {
			g_free(*newp);
			*newp = header_path(l + 6, m - 6);
		}
	}
}

/* Whether the file header that goes on at @i (the start of a line) has
 * another line starting with @prefix: git and libgit2 keep the last of
 * repeated rename/copy lines, and libgit2 1.5 leaks the names it drops
 * (tests/fuzz/crashers/fuzz-patch-libgit2-rename-leak), so the earlier
 * ones are cut before libgit2 sees them. */
static gboolean
repeated_later(const char *text, gsize len, gsize i, const char *prefix)
{
	gsize pl = strlen(prefix);
	const char *l;
	gsize m;

	while (next_header_line(text, len, &i, &l, &m))
		if (m >= pl && strncmp(l, prefix, pl) == 0)
			return TRUE;
	return FALSE;
}

GString *
pgate_apply__normalize_headers(const char *text, gsize len)
{
	static const char *const once[] = {
		"rename from ", "rename to ", "copy from ", "copy to ",
	};
	static const struct { const char *prefix, *quote; } named[] = {
		{ "rename from ", "" }, { "rename to ", "" },
		{ "copy from ", "" }, { "copy to ", "" },
		{ "--- a/", "a/" }, { "+++ b/", "b/" },
	};
	GString *out = NULL;
	gboolean in_header = FALSE;
	gsize i = 0, done = 0;

	while (i < len) {
		const char *line = text + i;
		const char *nl = memchr(line, '\n', len - i);
		gsize n = nl ? (gsize)(nl - line) : len - i;
		g_autofree char *oldp = NULL, *newp = NULL;
		g_autoptr(GString) repl = NULL;

		i += n + (nl ? 1 : 0);
		if (n >= 11 && strncmp(line, "diff --git ", 11) == 0) {
			g_autofree char *rest = g_strndup(line + 11, n - 11);
			gsize spaces = 0;

			in_header = TRUE;
			for (const char *c = rest; *c; c++)
				spaces += *c == ' ';
			if (rest[0] == '"' || spaces <= 1)
				continue;
			/* as git: the same name twice, else the names of
			 * the rename or copy lines; else nothing to do */
			oldp = same_name_split(rest);
			if (oldp != NULL) {
				newp = g_strdup(oldp);
			} else {
				header_names(text, len, i, &oldp, &newp, FALSE);
				if (oldp == NULL || newp == NULL) {
					/* then git takes the ---/+++ names */
					g_clear_pointer(&oldp, g_free);
					g_clear_pointer(&newp, g_free);
					header_names(text, len, i, &oldp, &newp, TRUE);
					if (oldp == NULL)
						oldp = g_strdup(newp);
					if (newp == NULL)
						newp = g_strdup(oldp);
				}
				if (oldp == NULL || newp == NULL)
					continue;
			}
			repl = g_string_new("diff --git ");
			append_quoted(repl, "a/", oldp);
			g_string_append_c(repl, ' ');
			append_quoted(repl, "b/", newp);
		} else if (in_header) {
			gboolean drop = FALSE;

			if ((n >= 2 && strncmp(line, "@@", 2) == 0) ||
			    (n >= 16 && strncmp(line, "GIT binary patch", 16) == 0)) {
				in_header = FALSE;
				continue;
			}
			for (gsize h = 0; h < G_N_ELEMENTS(once) && !drop; h++)
				drop = n >= strlen(once[h]) &&
				       strncmp(line, once[h], strlen(once[h])) == 0 &&
				       repeated_later(text, len, i, once[h]);
			if (drop) {
				/* the line and its newline go */
				if (out == NULL)
					out = g_string_sized_new(len + 64);
				g_string_append_len(out, text + done,
						    line - (text + done));
				done = i;
				continue;
			}
			for (gsize h = 0; h < G_N_ELEMENTS(named); h++) {
				gsize pl = strlen(named[h].prefix);
				g_autofree char *path = NULL;
				gsize keep;

				if (n <= pl || strncmp(line, named[h].prefix, pl) != 0 ||
				    line[pl] == '"')
					continue;
				path = header_path(line + pl, n - pl);
				if (strchr(path, ' ') == NULL)
					break;
				/* "--- a/" keeps "--- ", the rest their words */
				keep = named[h].quote[0] ? 4 : pl;
				repl = g_string_new_len(line, keep);
				append_quoted(repl, named[h].quote, path);
				break;
			}
		}
		if (repl == NULL)
			continue;
		if (out == NULL)
			out = g_string_sized_new(len + 64);
		g_string_append_len(out, text + done, line - (text + done));
		g_string_append_len(out, repl->str, repl->len);
		done = line + n - text;
	}
	if (out != NULL)
		g_string_append_len(out, text + done, len - done);
	return out;
}

typedef struct {
	const PgateApplyOptions *o;
	PgateApplyCheck *out;
	guint file;
	gboolean bad;
} BinCheck;

/* Inflates @data (zlib) only to count its bytes, stopping past @limit. */
static gboolean
inflated_size(const void *data, gsize len, gsize limit, gsize *out_size,
	      guchar *head, gsize head_len)
{
	z_stream zs = { 0 };
	guchar buf[16384];
	gsize total = 0;
	int rc;

	if (inflateInit(&zs) != Z_OK)
		return FALSE;
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = buf;
		zs.avail_out = sizeof buf;
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END) {
			inflateEnd(&zs);
			return FALSE;
		}
		if (total < head_len) {
			gsize got = sizeof buf - zs.avail_out;
			gsize take = MIN(got, head_len - total);

			memcpy(head + total, buf, take);
		}
		total += sizeof buf - zs.avail_out;
		if (total > limit)
			break;
	} while (rc != Z_STREAM_END && (zs.avail_in > 0 || zs.avail_out == 0));
	inflateEnd(&zs);
	*out_size = total;
	return TRUE;
}

/* the target size in a git delta's header (two varints: source, target) */
static gsize
delta_target_size(const guchar *h, gsize n)
{
	gsize i = 0, size = 0;
	int shift;

	for (int v = 0; v < 2; v++) {
		size = 0;
		shift = 0;
		while (i < n) {
			guchar c = h[i++];

			size |= (gsize)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80) || shift > 56)
				break;
		}
	}
	return size;
}

static gboolean
check_binary_side(BinCheck *bc, const git_diff_delta *d,
		  const git_diff_binary_file *f, const char *path)
{
	gsize max = bc->o->max_binary_bytes ? bc->o->max_binary_bytes : G_MAXSIZE;
	guchar head[32] = { 0 };
	gsize got = 0, target;

	if (f->type == GIT_DIFF_BINARY_NONE || f->datalen == 0)
		return TRUE;
	if (f->inflatedlen > max)
		return refuse(bc->out, TRUE, bc->file, path, 0,
			      "binary data of %" G_GSIZE_FORMAT " bytes is over "
			      "the limit of %" G_GSIZE_FORMAT, f->inflatedlen, max);
	if (!inflated_size(f->data, f->datalen, f->inflatedlen, &got, head,
			   sizeof head) || got != f->inflatedlen)
		return refuse(bc->out, TRUE, bc->file, path, 0,
			      "corrupt binary patch data");
	if (f->type == GIT_DIFF_BINARY_DELTA) {
		target = delta_target_size(head, MIN(got, sizeof head));
		if (target > max)
			return refuse(bc->out, TRUE, bc->file, path, 0,
				      "binary file of %" G_GSIZE_FORMAT " bytes "
				      "is over the limit of %" G_GSIZE_FORMAT,
				      target, max);
	}
	return TRUE;
}

static int
binary_cb(const git_diff_delta *d, const git_diff_binary *b, void *payload)
{
	BinCheck *bc = payload;
	const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;

	if (!check_binary_side(bc, d, &b->new_file, path) ||
	    !check_binary_side(bc, d, &b->old_file, path)) {
		bc->bad = TRUE;
		return 1;
	}
	return 0;
}

static int
file_cb(const git_diff_delta *d, float progress, void *payload)
{
	((BinCheck *)payload)->file++;
	return 0;
}

gboolean
pgate_apply__check_static(git_diff *diff, const char *text, gsize len,
			  const PgateApplyOptions *o, PgateApplyCheck *out)
{
	gsize n = diff ? git_diff_num_deltas(diff) : 0;
	BinCheck bc = { o, out, 0, FALSE };

	if (o->max_patch_bytes && len > o->max_patch_bytes)
		return refuse(out, TRUE, 0, NULL, 0,
			      "patch of %" G_GSIZE_FORMAT " bytes is over the "
			      "limit of %" G_GSIZE_FORMAT, len, o->max_patch_bytes);
	if (o->max_files && n > o->max_files)
		return refuse(out, TRUE, 0, NULL, 0,
			      "patch touches %" G_GSIZE_FORMAT " files, over the "
			      "limit of %u", n, o->max_files);
	if (!scan_header_paths(text, len, out))
		return FALSE;
	if (diff == NULL)
		return TRUE;
	for (gsize i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *paths[2] = { NULL, NULL };
		guint32 modes[2] = { d->old_file.mode, d->new_file.mode };

		if (d->status != GIT_DELTA_ADDED)
			paths[0] = d->old_file.path;
		if (d->status != GIT_DELTA_DELETED)
			paths[1] = d->new_file.path;
		for (int k = 0; k < 2; k++) {
			const char *why;

			if (paths[k] == NULL)
				continue;
			why = pgate_apply__bad_path(paths[k]);
			if (why != NULL)
				return refuse(out, TRUE, i + 1, paths[k], 0,
					      "%s: %s", why, paths[k]);
		}
		for (int k = 0; k < 2; k++) {
			guint32 t = MODE_TYPE(modes[k]);

			/* git makes a gitlink of anything else (a directory
			 * mode, for one): refused like one, always */
			if (modes[k] && t != 0100000 && t != MODE_LINK &&
			    t != MODE_GITLINK)
				return refuse(out, TRUE, i + 1,
					      paths[1] ? paths[1] : paths[0], 0,
					      "unsupported file mode %06o: %s",
					      modes[k], paths[1] ? paths[1] : paths[0]);
		}
		if (d->status != GIT_DELTA_DELETED &&
		    MODE_TYPE(modes[1]) == MODE_LINK) {
			const char *base = strrchr(paths[1], '/');

			base = base ? base + 1 : paths[1];
			if (!o->allow_symlinks)
				return refuse(out, TRUE, i + 1, paths[1], 0,
					      "creates or changes a symbolic "
					      "link: %s", paths[1]);
			if (g_ascii_strcasecmp(base, ".gitmodules") == 0 ||
			    g_ascii_strcasecmp(base, ".gitattributes") == 0 ||
			    g_ascii_strcasecmp(base, ".gitignore") == 0)
				return refuse(out, TRUE, i + 1, paths[1], 0,
					      "%s as a symbolic link", base);
		}
		if (!o->allow_submodules &&
		    (MODE_TYPE(modes[0]) == MODE_GITLINK ||
		     MODE_TYPE(modes[1]) == MODE_GITLINK))
			return refuse(out, TRUE, i + 1,
				      paths[1] ? paths[1] : paths[0], 0,
				      "changes a submodule (gitlink): %s",
				      paths[1] ? paths[1] : paths[0]);
	}
	if (git_diff_foreach(diff, file_cb, binary_cb, NULL, NULL, &bc) < 0 &&
	    !bc.bad)
		return refuse(out, FALSE, 0, NULL, 0, "corrupt patch: %s",
			      git_error_last() ? git_error_last()->message : "?");
	return !bc.bad;
}

/* ---- the git apply simulation ------------------------------------------- */

typedef struct {
	const char *s;
	gsize len;
	gboolean patched;   /* written by an earlier hunk: never matched */
} Line;

/* What a path holds after the deltas seen so far. */
typedef struct {
	gboolean exists;
	guint32 mode;
	char *tree_path;    /* (nullable) where its content is in the tree */
	GArray *lines;      /* (nullable) of Line: the text, once read */
	GBytes *content;    /* keeps the blob's bytes the lines point to */
	gboolean written;   /* a delta of this patch wrote it */
	gboolean gone;      /* a delta of this patch deleted or renamed it
			     * away: later deltas may not read it (git's
			     * PATH_WAS_DELETED) */
} VFile;

static void
vfile_clear(VFile *v)
{
	g_clear_pointer(&v->tree_path, g_free);
	g_clear_pointer(&v->lines, g_array_unref);
	g_clear_pointer(&v->content, g_bytes_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(VFile, vfile_clear)

static void
vfile_free(gpointer p)
{
	vfile_clear(p);
	g_free(p);
}

typedef struct {
	git_repository *repo;
	git_tree *tree;
	GHashTable *files;  /* path -> VFile */
} Sim;

/* @v as @path is in the tree (the patch's preimage) */
static void
sim_from_tree(Sim *sim, const char *path, VFile *v)
{
	PGATE_GIT_AUTO(git_tree_entry) e = NULL;

	if (git_tree_entry_bypath(&e, sim->tree, path) == 0) {
		v->exists = TRUE;
		v->mode = git_tree_entry_filemode(e);
		v->tree_path = g_strdup(path);
	}
}

/* What @path holds now (created on first use from the tree). */
static VFile *
sim_get(Sim *sim, const char *path)
{
	VFile *v = g_hash_table_lookup(sim->files, path);

	if (v != NULL)
		return v;
	v = g_new0(VFile, 1);
	sim_from_tree(sim, path, v);
	g_hash_table_insert(sim->files, g_strdup(path), v);
	return v;
}

static GArray *
split_lines(const char *s, gsize len)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(Line));
	gsize i = 0;

	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		Line l = { s + i, nl ? (gsize)(nl - (s + i)) + 1 : len - i, FALSE };

		g_array_append_val(a, l);
		i += l.len;
	}
	return a;
}

static gboolean
sim_load(Sim *sim, VFile *v, GError **error)
{
	PGATE_GIT_AUTO(git_tree_entry) e = NULL;
	PGATE_GIT_AUTO(git_blob) blob = NULL;
	const char *s;
	gsize n;
	int rc;

	if (v->lines != NULL)
		return TRUE;
	if (v->tree_path == NULL) {
		v->lines = g_array_new(FALSE, FALSE, sizeof(Line));
		return TRUE;
	}
	rc = git_tree_entry_bypath(&e, sim->tree, v->tree_path);
	if (rc == 0)
		rc = git_blob_lookup(&blob, sim->repo, git_tree_entry_id(e));
	if (rc != 0)
		return pgate_apply__git_error(error, rc, v->tree_path);
	v->content = g_bytes_new(git_blob_rawcontent(blob),
				 (gsize)git_blob_rawsize(blob));
	s = g_bytes_get_data(v->content, &n);
	v->lines = split_lines(s ? s : "", n);
	return TRUE;
}

/* What type of thing is in the way of @path: a prefix that is a symlink,
 * a gitlink or a file.  0 when nothing is. */
static guint32
sim_blocker(Sim *sim, const char *path, gboolean original, char **out_prefix)
{
	g_autofree char *copy = g_strdup(path);

	for (char *slash = strchr(copy, '/'); slash; slash = strchr(slash + 1, '/')) {
		guint32 mode = 0;

		*slash = '\0';
		if (original) {
			PGATE_GIT_AUTO(git_tree_entry) e = NULL;

			if (git_tree_entry_bypath(&e, sim->tree, copy) == 0)
				mode = git_tree_entry_filemode(e);
		} else {
			VFile *v = sim_get(sim, copy);

			mode = v->exists ? v->mode : 0;
		}
		if (mode && MODE_TYPE(mode) != MODE_TREE) {
			*out_prefix = g_strdup(copy);
			return mode;
		}
		*slash = '/';
	}
	return 0;
}

typedef struct {
	Sim *sim;
	const char *root;
	char *left;     /* the first file still there */
} DirCheck;

static int
dir_walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
	DirCheck *dc = payload;
	g_autofree char *path = NULL;
	VFile *v;

	if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
		return 0;
	path = g_strconcat(dc->root, "/", root, git_tree_entry_name(e), NULL);
	v = g_hash_table_lookup(dc->sim->files, path);
	if (v == NULL || v->exists) {
		dc->left = g_steal_pointer(&path);
		return -1;
	}
	return 0;
}

/* A file created where the tree has a directory: git apply allows it when
 * the same patch removes everything in that directory.  NULL when it does,
 * else the first file left (transfer full). */
static char *
dir_left(Sim *sim, const char *dir)
{
	PGATE_GIT_AUTO(git_tree_entry) e = NULL;
	PGATE_GIT_AUTO(git_tree) sub = NULL;
	DirCheck dc = { sim, dir, NULL };

	if (git_tree_entry_bypath(&e, sim->tree, dir) != 0 ||
	    git_tree_lookup(&sub, sim->repo, git_tree_entry_id(e)) != 0)
		return NULL;
	git_tree_walk(sub, GIT_TREEWALK_PRE, dir_walk_cb, &dc);
	return dc.left;
}

static gboolean
lines_equal(const Line *a, const Line *b)
{
	return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

static gboolean
match_at(GArray *img, GArray *pre, gsize at, gboolean mbeg, gboolean mend)
{
	if (pre->len + at > img->len)
		return FALSE;
	if (mend && pre->len + at != img->len)
		return FALSE;
	if (mbeg && at != 0)
		return FALSE;
	for (gsize i = 0; i < pre->len; i++) {
		const Line *il = &g_array_index(img, Line, at + i);

		if (il->patched || !lines_equal(il, &g_array_index(pre, Line, i)))
			return FALSE;
	}
	return TRUE;
}

/* git apply's find_pos(): from @line, then after and before it in turn */
static gssize
find_pos(GArray *img, GArray *pre, gssize line, gboolean mbeg, gboolean mend)
{
	gsize nr = img->len, fwd, back;

	/* a hunk that must match at one end can only match there */
	if (mbeg)
		return match_at(img, pre, 0, mbeg, mend) ? 0 : -1;
	if (mend) {
		if (pre->len > nr)
			return -1;
		return match_at(img, pre, nr - pre->len, mbeg, mend)
			? (gssize)(nr - pre->len) : -1;
	}
	if (line < 0 || (gsize)line > nr)
		line = nr;
	fwd = back = line;
	if (match_at(img, pre, line, FALSE, FALSE))
		return line;
	for (;;) {
		gboolean moved = FALSE;

		if (fwd < nr) {
			fwd++;
			moved = TRUE;
			if (match_at(img, pre, fwd, FALSE, FALSE))
				return fwd;
		}
		if (back > 0) {
			back--;
			moved = TRUE;
			if (match_at(img, pre, back, FALSE, FALSE))
				return back;
		}
		if (!moved)
			return -1;
	}
}

typedef struct {
	guint file;      /* 1-based delta */
	guint hunk;      /* 1-based */
	gsize new_start; /* what the header must say */
} Fix;

/* Simulates the hunks of delta @idx on @v's lines; records the hunks that
 * libgit2 must be told to apply elsewhere. */
static gboolean
sim_hunks(Sim *sim, git_diff *diff, gsize idx, const char *path, VFile *v,
	  gboolean load, GArray *fixes, PgateApplyCheck *out, GError **error)
{
	PGATE_GIT_AUTO(git_patch) patch = NULL;
	int rc = git_patch_from_diff(&patch, diff, idx);
	gsize nh;

	if (rc != 0)
		return pgate_apply__git_error(error, rc, "read patch");
	nh = git_patch_num_hunks(patch);
	if ((nh > 0 || load) && !sim_load(sim, v, error))
		return FALSE;
	for (gsize h = 0; h < nh; h++) {
		const git_diff_hunk *hunk;
		size_t nl;
		g_autoptr(GArray) pre = g_array_new(FALSE, FALSE, sizeof(Line));
		g_autoptr(GArray) post = g_array_new(FALSE, FALSE, sizeof(Line));
		guint leading = 0, trailing = 0;
		gboolean changed = FALSE, mbeg, mend;
		gssize pos, want;
		Line *last_pre = NULL, *last_post = NULL;
		char last_origin = 0;

		if ((rc = git_patch_get_hunk(&hunk, &nl, patch, h)) != 0)
			return pgate_apply__git_error(error, rc, "read hunk");
		for (size_t l = 0; l < nl; l++) {
			const git_diff_line *dl;
			Line line;

			if ((rc = git_patch_get_line_in_hunk(&dl, patch, h, l)) != 0)
				return pgate_apply__git_error(error, rc, "read line");
			line.s = dl->content;
			line.len = dl->content_len;
			line.patched = TRUE;
			switch (dl->origin) {
			case GIT_DIFF_LINE_CONTEXT:
				g_array_append_val(pre, line);
				g_array_append_val(post, line);
				last_pre = &g_array_index(pre, Line, pre->len - 1);
				last_post = &g_array_index(post, Line, post->len - 1);
				if (!changed)
					leading++;
				trailing++;
				break;
			case GIT_DIFF_LINE_DELETION:
				g_array_append_val(pre, line);
				last_pre = &g_array_index(pre, Line, pre->len - 1);
				changed = TRUE;
				trailing = 0;
				break;
			case GIT_DIFF_LINE_ADDITION:
				g_array_append_val(post, line);
				last_post = &g_array_index(post, Line, post->len - 1);
				changed = TRUE;
				trailing = 0;
				break;
			case GIT_DIFF_LINE_CONTEXT_EOFNL:
			case GIT_DIFF_LINE_DEL_EOFNL:
			case GIT_DIFF_LINE_ADD_EOFNL: {
				/* "\ No newline at end of file": the line
				 * before it has none */
				Line *targets[2] = { NULL, NULL };

				if (last_origin == GIT_DIFF_LINE_CONTEXT) {
					targets[0] = last_pre;
					targets[1] = last_post;
				} else if (last_origin == GIT_DIFF_LINE_DELETION) {
					targets[0] = last_pre;
				} else if (last_origin == GIT_DIFF_LINE_ADDITION) {
					targets[0] = last_post;
				}
				for (int t = 0; t < 2; t++)
					if (targets[t] && targets[t]->len &&
					    targets[t]->s[targets[t]->len - 1] == '\n')
						targets[t]->len--;
				break;
			}
			default:
				break;
			}
			last_origin = dl->origin;
		}
		if (!changed)
			/* git apply refuses a hunk that changes nothing */
			return refuse(out, FALSE, idx + 1, path, h + 1,
				      "corrupt patch: hunk #%" G_GSIZE_FORMAT
				      " of %s changes nothing", h + 1, path);
		mbeg = hunk->old_start == 0 || hunk->old_start == 1;
		mend = trailing == 0;
		want = hunk->new_start ? hunk->new_start - 1 : 0;
		pos = find_pos(v->lines, pre, want, mbeg, mend);
		if (pos < 0)
			return refuse(out, FALSE, idx + 1, path, h + 1,
				      "patch does not apply: hunk #%" G_GSIZE_FORMAT
				      " of %s does not match", h + 1, path);
		if (pos != want) {
			Fix f = { idx + 1, h + 1, (gsize)pos + 1 };

			g_array_append_val(fixes, f);
		}
		/* the postimage replaces the preimage; its lines are marked
		 * written (they point into the patch, which outlives this) */
		g_array_remove_range(v->lines, pos, pre->len);
		g_array_insert_vals(v->lines, pos, post->data, post->len);
	}
	return TRUE;
}

/* The same diff text with the "+start" of the hunk headers in @fixes
 * replaced.  NULL when its sections do not line up with the deltas. */
static GString *
fix_text(const char *text, gsize len, GArray *fixes, gsize ndeltas)
{
	GString *out = g_string_sized_new(len + 64);
	guint file = 0, hunk = 0, fi = 0;
	gsize i = 0;

	while (i < len) {
		const char *line = text + i;
		const char *nl = memchr(line, '\n', len - i);
		gsize n = nl ? (gsize)(nl - line) + 1 : len - i;
		const Fix *f = fi < fixes->len ? &g_array_index(fixes, Fix, fi) : NULL;

		i += n;
		if (n >= 11 && strncmp(line, "diff --git ", 11) == 0) {
			file++;
			hunk = 0;
		} else if (file && n >= 4 && strncmp(line, "@@ -", 4) == 0) {
			hunk++;
			if (f && f->file == file && f->hunk == hunk) {
				const char *plus = memchr(line, '+', n);
				const char *end;

				if (plus == NULL)
					goto bad;
				end = plus + 1;
				while (end < line + n && g_ascii_isdigit(*end))
					end++;
				g_string_append_len(out, line, plus + 1 - line);
				g_string_append_printf(out, "%" G_GSIZE_FORMAT,
						       f->new_start);
				g_string_append_len(out, end, line + n - end);
				fi++;
				continue;
			}
		}
		g_string_append_len(out, line, n);
	}
	if (fi != fixes->len || file != ndeltas)
		goto bad;
	return out;
bad:
	g_string_free(out, TRUE);
	return NULL;
}

static const char *
type_name(guint32 mode)
{
	switch (MODE_TYPE(mode)) {
	case MODE_LINK: return "symbolic link";
	case MODE_GITLINK: return "submodule";
	case MODE_TREE: return "directory";
	default: return "file";
	}
}

/* Refuses delta @i (@d) when one of its paths lies beneath a link or a
 * file. */
static gboolean
check_blockers(Sim *sim, const git_diff_delta *d, gsize i,
	       PgateApplyCheck *out)
{
	const char *touched[2] = {
		d->status == GIT_DELTA_ADDED ? NULL : d->old_file.path,
		d->status == GIT_DELTA_DELETED ? NULL : d->new_file.path,
	};

	/* the path read must lie beneath no link in the tree; the path
	 * written beneath nothing but directories as they are now */
	for (int k = 0; k < 2; k++) {
		g_autofree char *prefix = NULL;
		guint32 m;

		if (touched[k] == NULL)
			continue;
		m = sim_blocker(sim, touched[k], k == 0, &prefix);
		if (m == 0)
			continue;
		if (MODE_TYPE(m) == MODE_LINK || MODE_TYPE(m) == MODE_GITLINK)
			return refuse(out, TRUE, i + 1, touched[k], 0,
				      "%s is beyond a %s: %s",
				      touched[k], type_name(m), prefix);
		return refuse(out, FALSE, i + 1, touched[k], 0,
			      "%s: %s is a file", touched[k], prefix);
	}
	return TRUE;
}

/* Records what the paths of delta @d hold once it is applied to @src;
 * @scratch: @src is a temporary of the caller, its content may be taken. */
static void
sim_store(Sim *sim, const git_diff_delta *d, VFile *src, gboolean scratch)
{
	const char *oldp = d->old_file.path, *newp = d->new_file.path;
	gboolean deletes = d->status == GIT_DELTA_DELETED;
	gboolean binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
	VFile *dst;

	if (!deletes) {
		dst = sim_get(sim, newp);
		if (dst != src) {
			vfile_clear(dst);
			if (scratch) {
				dst->tree_path = g_steal_pointer(&src->tree_path);
				dst->lines = g_steal_pointer(&src->lines);
				dst->content = g_steal_pointer(&src->content);
			} else {
				dst->tree_path = g_strdup(src->tree_path);
				if (src->lines)
					dst->lines = g_array_copy(src->lines);
				if (src->content)
					dst->content = g_bytes_ref(src->content);
			}
		}
		dst->exists = dst->written = TRUE;
		dst->gone = FALSE;
		dst->mode = d->new_file.mode ? d->new_file.mode
			  : (src->mode ? src->mode : 0100644);
		if (binary) {
			/* unknown text now: it is libgit2's to check */
			g_clear_pointer(&dst->lines, g_array_unref);
			g_clear_pointer(&dst->tree_path, g_free);
		}
	}
	if (deletes || d->status == GIT_DELTA_RENAMED) {
		VFile *old = sim_get(sim, oldp);

		vfile_clear(old);
		old->exists = FALSE;
		old->gone = TRUE;
	}
}

/* Simulates delta @i of @diff on @sim: FALSE (with @out filled in, or
 * @error set on a read failure) when git apply would refuse it.  @doomed
 * holds the paths a delta deletes or renames away; directories of the tree
 * a delta replaces are added to @replaced, hunks applying at an offset to
 * @fixes. */
static gboolean
sim_delta(Sim *sim, git_diff *diff, gsize i, GHashTable *doomed,
	  GPtrArray *replaced, GArray *fixes, PgateApplyCheck *out,
	  GError **error)
{
	const git_diff_delta *d = git_diff_get_delta(diff, i);
	const char *oldp = d->old_file.path, *newp = d->new_file.path;
	gboolean from_tree = d->status == GIT_DELTA_RENAMED ||
			     d->status == GIT_DELTA_COPIED;
	gboolean creates = d->status == GIT_DELTA_ADDED || from_tree;
	gboolean deletes = d->status == GIT_DELTA_DELETED;
	gboolean binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
	VFile *src;
	g_auto(VFile) empty = { 0 };
	g_auto(VFile) orig = { 0 };

	if (!check_blockers(sim, d, i, out))
		return FALSE;
	if (d->status == GIT_DELTA_ADDED) {
		src = &empty;
	} else {
		if (from_tree) {
			/* git copies and renames from the preimage: the
			 * file as the tree has it, whatever an earlier
			 * delta of this patch made of it */
			sim_from_tree(sim, oldp, &orig);
			src = &orig;
		} else {
			src = sim_get(sim, oldp);
			if (src->gone)
				return refuse(out, FALSE, i + 1, oldp, 0,
					      "%s: renamed or deleted by "
					      "an earlier part of the "
					      "patch", oldp);
		}
		if (!src->exists || MODE_TYPE(src->mode) == MODE_TREE)
			return refuse(out, FALSE, i + 1, oldp, 0,
				      "%s: does not exist in the tree",
				      oldp);
		if (d->old_file.mode &&
		    MODE_TYPE(d->old_file.mode) != MODE_TYPE(src->mode))
			return refuse(out, FALSE, i + 1, oldp, 0,
				      "%s: wrong type (a %s in the tree)",
				      oldp, type_name(src->mode));
	}
	if (d->status != GIT_DELTA_ADDED && d->status != GIT_DELTA_DELETED &&
	    d->new_file.mode &&
	    MODE_TYPE(d->new_file.mode) !=
	    MODE_TYPE(d->old_file.mode ? d->old_file.mode : src->mode))
		return refuse(out, FALSE, i + 1, newp, 0,
			      "new mode (%06o) of %s does not match old "
			      "mode (%06o)", d->new_file.mode, newp,
			      d->old_file.mode ? d->old_file.mode : src->mode);
	if (creates && sim_get(sim, newp)->exists) {
		VFile *nv = sim_get(sim, newp);
		/* a file of the tree that a later delta deletes or
		 * renames away may be created before it comes */
		gboolean doomed_file = !nv->written && !nv->gone &&
			MODE_TYPE(nv->mode) != MODE_TREE &&
			g_hash_table_contains(doomed, newp);

		if (!doomed_file && (MODE_TYPE(nv->mode) != MODE_TREE ||
				     nv->tree_path == NULL))
			return refuse(out, FALSE, i + 1, newp, 0,
				      "%s: already exists in the tree",
				      newp);
		if (!doomed_file) {
			/* a directory of the tree: checked at the end */
			g_ptr_array_add(replaced, g_strdup(newp));
			nv->exists = FALSE;
		}
	}
	/* the content: text hunks simulated on the lines */
	if (!binary) {
		gboolean ok = sim_hunks(sim, diff, i, deletes ? oldp : newp,
					src, deletes, fixes, out, error);

		if (ok && deletes && src->lines->len)
			ok = refuse(out, FALSE, i + 1, oldp, 0,
				    "%s: removal patch leaves file "
				    "contents", oldp);
		if (!ok)
			return FALSE;
	}
	/* what the paths hold now */
	sim_store(sim, d, src, src == &empty || src == &orig);
	return TRUE;
}

gboolean
pgate_apply__check_tree(git_repository *repo, git_tree *tree, git_diff *diff,
			const char *text, gsize len, PgateApplyCheck *out,
			GError **error)
{
	g_autoptr(GHashTable) files = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, vfile_free);
	g_autoptr(GArray) fixes = g_array_new(FALSE, FALSE, sizeof(Fix));
	g_autoptr(GPtrArray) replaced = g_ptr_array_new_with_free_func(g_free);
	/* the paths a delta of the patch deletes or renames away: until that
	 * delta comes they may be created (git's PATH_TO_BE_DELETED) */
	g_autoptr(GHashTable) doomed = g_hash_table_new(g_str_hash, g_str_equal);
	Sim sim = { repo, tree, files };
	gsize n = git_diff_num_deltas(diff);

	for (gsize i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (d->status == GIT_DELTA_DELETED || d->status == GIT_DELTA_RENAMED)
			g_hash_table_add(doomed, (gpointer)d->old_file.path);
	}
	for (gsize i = 0; i < n; i++)
		if (!sim_delta(&sim, diff, i, doomed, replaced, fixes, out,
			       error))
			return FALSE;
	for (guint k = 0; k < replaced->len; k++) {
		g_autofree char *left = dir_left(&sim, replaced->pdata[k]);

		if (left != NULL) {
			guint file = 0;

			for (gsize i = 0; i < n && !file; i++)
				if (g_strcmp0(git_diff_get_delta(diff, i)->new_file.path,
					      replaced->pdata[k]) == 0)
					file = i + 1;
			return refuse(out, FALSE, file, replaced->pdata[k], 0,
				      "%s: a directory in the tree, and %s is "
				      "still in it", (char *)replaced->pdata[k],
				      left);
		}
	}
	if (fixes->len) {
		out->fixed = fix_text(text, len, fixes, n);
		if (out->fixed == NULL) {
			const Fix *f = &g_array_index(fixes, Fix, 0);
			const git_diff_delta *d = git_diff_get_delta(diff, f->file - 1);

			return refuse(out, FALSE, f->file, d->new_file.path,
				      f->hunk, "hunk #%u applies at an offset, "
				      "and the patch text could not be "
				      "re-aligned for libgit2", f->hunk);
		}
	}
	return TRUE;
}
