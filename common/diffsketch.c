/* diffsketch.c - a bounded fingerprint of the lines a diff changes, so
 * that two diffs can be compared without keeping either (merge
 * detection's "the maintainer edited it" rule, docs/pipeline.md).
 *
 * Each line a hunk adds or removes is hashed (32-bit FNV-1a of its sign
 * and its text without whitespace, as git patch-id leaves whitespace
 * out); lines that are blank once whitespace is gone do not count.  The
 * sketch is the PGATE_DIFF_SKETCH_MAX smallest distinct hashes, sorted
 * (a bottom-k sketch): two sketches estimate the Jaccard similarity of
 * the two sets of changed lines, exactly when both diffs change fewer
 * lines than that.  The same diff text gives the same sketch whoever
 * wrote it (a mail's diff, libgit2's of a commit).
 */
#include "common/pgate-common.h"

#include <string.h>

/* "@@ -a[,b] +c[,d] @@": the two counts (1 when absent); FALSE when the
 * line is no hunk header. */
static gboolean
hunk_counts(const char *p, const char *end, gint64 *old_n, gint64 *new_n)
{
	gint64 *out[2] = { old_n, new_n };
	const char sign[2] = { '-', '+' };

	if (end - p < 4 || memcmp(p, "@@ -", 4) != 0)
		return FALSE;
	p += 3;
	for (guint k = 0; k < 2; k++) {
		gint64 v = 1;

		if (p >= end || *p != sign[k])
			return FALSE;
		p++;
		if (p >= end || !g_ascii_isdigit(*p))
			return FALSE;
		while (p < end && g_ascii_isdigit(*p))
			p++;
		if (p < end && *p == ',') {
			v = 0;
			for (p++; p < end && g_ascii_isdigit(*p); p++)
				v = MIN(v * 10 + (*p - '0'), (gint64)G_MAXINT32);
		}
		*out[k] = v;
		if (k == 0 && (p >= end || *p++ != ' '))
			return FALSE;
	}
	return TRUE;
}

/* FNV-1a of @sign and the non-blank bytes of [p, end); 0 when blank. */
static guint32
line_hash(char sign, const char *p, const char *end)
{
	guint32 h = 2166136261u;
	gboolean any = FALSE;

	h = (h ^ (guchar)sign) * 16777619u;
	for (; p < end; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' ||
		    *p == '\f' || *p == '\v')
			continue;
		any = TRUE;
		h = (h ^ (guchar)*p) * 16777619u;
	}
	return any ? (h == 0 ? 1 : h) : 0;
}

/* Keeps @h among the @max smallest of @set (sorted, *@n of them). */
static void
sketch_add(guint32 *set, guint *n, guint max, guint32 h)
{
	guint lo = 0, hi = *n;

	while (lo < hi) {
		guint mid = (lo + hi) / 2;

		if (set[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((lo < *n && set[lo] == h) || lo >= max)
		return;
	if (*n == max)
		(*n)--;
	memmove(set + lo + 1, set + lo, (*n - lo) * sizeof *set);
	set[lo] = h;
	(*n)++;
}

guint
pgate_diff_sketch(const char *diff, gsize len,
		  guint32 out[PGATE_DIFF_SKETCH_MAX])
{
	const char *pos = diff, *end = diff + len;
	gint64 old_left = 0, new_left = 0;
	guint n = 0;

	while (pos != NULL && pos < end) {
		const char *nl = memchr(pos, '\n', (gsize)(end - pos));
		const char *le = nl != NULL ? nl : end;
		char c = le > pos ? *pos : ' ';

		if (old_left > 0 || new_left > 0) {
			if (c == '-')
				old_left--;
			else if (c == '+')
				new_left--;
			else if (c != '\\')
				old_left--, new_left--;
			if (c == '-' || c == '+') {
				guint32 h = line_hash(c, pos + 1, le);

				if (h != 0)
					sketch_add(out, &n,
						   PGATE_DIFF_SKETCH_MAX, h);
			}
		} else {
			hunk_counts(pos, le, &old_left, &new_left);
		}
		pos = nl != NULL ? nl + 1 : NULL;
	}
	return n;
}

double
pgate_diff_sketch_similarity(const guint32 *a, guint na, const guint32 *b,
			     guint nb)
{
	guint i = 0, j = 0, seen = 0, both = 0;

	if (na == 0 || nb == 0)
		return 0.0;
	/* the union's smallest k: a bottom-k sketch of the union */
	while (seen < PGATE_DIFF_SKETCH_MAX && (i < na || j < nb)) {
		if (j >= nb || (i < na && a[i] < b[j])) {
			i++;
		} else if (i >= na || b[j] < a[i]) {
			j++;
		} else {
			both++;
			i++, j++;
		}
		seen++;
	}
	return (double)both / seen;
}
