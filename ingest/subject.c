/* subject.c - what the words of a mail say: the markers of its subject,
 * and in its body a pull request, trailers and b4's lines.
 *
 * Subjects follow Patchwork (parser.py clean_subject, split_prefixes,
 * parse_series_marker, parse_version), so that series build the way a
 * Patchwork instance builds them, with b4's additions:
 *
 *  - "Aw:" (German mailers) is a reply prefix too;
 *  - every leading "Re:", "Aw:", "Fw:", "Fwd:" goes, not only the first;
 *  - brackets nested inside a prefix group are flattened
 *    ("[PATCH [net] v2]" is PATCH, net, v2);
 *  - "PATCHv3" and "RFCv2" are split into two tokens;
 *  - "M of N" is one token wherever it is in a group, not only after PATCH;
 *  - a token starting with RFC or RESEND (any case) sets the flag.
 *
 * The token "PATCH" (any case) is dropped; every other token is kept, in
 * order, in rec->prefixes, and the name is the rest of the subject
 * (Patchwork's own name, "[tok1,tok2,...] rest", is prefixes and name).
 *
 * Bodies: pull requests as Patchwork's parse_pull_request() finds them,
 * trailers by git's interpret-trailers rules, and the lines b4 and
 * git format-patch --base write (base-commit:, change-id:, prerequisite-*).
 * None of it uses regular expressions: each is a scan over lines.
 */
#include "ingest/ingest-private.h"

#include <string.h>

#define MAX_TOKENS 64
#define MAX_DIGITS 9    /* what fits a guint32 */

static const char *
skip_space(const char *s)
{
	while (g_ascii_isspace(*s))
		s++;
	return s;
}

gboolean
pgate_ingest__subject_is_reply(const char *s)
{
	if (g_ascii_strncasecmp(s, "aw:", 3) == 0)
		return TRUE;
	return g_ascii_strncasecmp(s, "re", 2) == 0 &&
	       (s[2] == ':' || g_ascii_isspace(s[2]));
}

/* Length of a leading "Re:", "Fw:" or "Fwd:" (or with whitespace instead
 * of the colon) or "Aw:", and the space after it; 0 when there is none. */
static gsize
reply_prefix_len(const char *s)
{
	gsize n;

	if (g_ascii_strncasecmp(s, "aw:", 3) == 0)
		return (gsize)(skip_space(s + 3) - s);
	if (g_ascii_strncasecmp(s, "re", 2) == 0)
		n = 2;
	else if (g_ascii_strncasecmp(s, "fwd", 3) == 0)
		n = 3;
	else if (g_ascii_strncasecmp(s, "fw", 2) == 0)
		n = 2;
	else
		return 0;
	if (s[n] != ':' && !g_ascii_isspace(s[n]))
		return 0;
	return (gsize)(skip_space(s + n + 1) - s);
}

/* Parses a run of at most MAX_DIGITS digits; FALSE for none or more. */
static gboolean
parse_number(const char *s, gsize len, guint32 *out)
{
	guint32 v = 0;

	if (len == 0 || len > MAX_DIGITS)
		return FALSE;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_isdigit(s[i]))
			return FALSE;
		v = v * 10 + (guint32)(s[i] - '0');
	}
	*out = v;
	return TRUE;
}

/*
 * The series marker of one token: Patchwork's ".*?([0-9]+)(?:/| of )
 * ([0-9]+)$".  Anything may come before the first number ("PATCH1/8",
 * "v2PATCH12/15"), which is the whole run of digits before the separator.
 */
static gboolean
token_marker(const char *t, guint32 *number, guint32 *total)
{
	gsize len = strlen(t), end = len, start, sep;

	while (end > 0 && g_ascii_isdigit(t[end - 1]))
		end--;
	if (end == len)
		return FALSE;
	if (end >= 1 && t[end - 1] == '/')
		sep = end - 1;
	else if (end >= 4 && memcmp(t + end - 4, " of ", 4) == 0)
		sep = end - 4;
	else
		return FALSE;
	start = sep;
	while (start > 0 && g_ascii_isdigit(t[start - 1]))
		start--;
	return parse_number(t + start, sep - start, number) &&
	       parse_number(t + end, len - end, total);
}

/* "v3" or "V3": Patchwork's ^[vV](\d+)$. */
static gboolean
token_version(const char *t, guint32 *out)
{
	return (t[0] == 'v' || t[0] == 'V') &&
	       parse_number(t + 1, strlen(t + 1), out);
}

/* Patchwork's second chance: "(v2)" anywhere in the name. */
static gboolean
paren_version(const char *s, guint32 *out)
{
	for (const char *p = strchr(s, '('); p != NULL;
	     p = strchr(p + 1, '(')) {
		gsize n = 0;

		if (p[1] != 'v' && p[1] != 'V')
			continue;
		while (g_ascii_isdigit(p[2 + n]))
			n++;
		if (p[2 + n] == ')' && parse_number(p + 2, n, out))
			return TRUE;
	}
	return FALSE;
}

static void
tokens_add(GPtrArray *tokens, const char *s, gsize len)
{
	if (len == 0 || tokens->len >= MAX_TOKENS)
		return;
	g_ptr_array_add(tokens, g_strndup(s, len));
}

/* b4: "PATCHv3" is "PATCH v3", "RFCv2" is "RFC v2". */
static void
tokens_add_split(GPtrArray *tokens, const char *s, gsize len)
{
	static const char *const words[] = { "PATCH", "RFC" };

	for (guint i = 0; i < G_N_ELEMENTS(words); i++) {
		gsize w = strlen(words[i]);
		guint32 v;

		if (len > w + 1 && g_ascii_strncasecmp(s, words[i], w) == 0 &&
		    (s[w] == 'v' || s[w] == 'V') &&
		    parse_number(s + w + 1, len - w - 1, &v)) {
			tokens_add(tokens, s, w);
			tokens_add(tokens, s + w, len - w);
			return;
		}
	}
	tokens_add(tokens, s, len);
}

static gboolean
is_separator(char c)
{
	return c == ',' || c == '[' || c == ']' || g_ascii_isspace(c);
}

/* Length of "M of N" at @s (digits, " of ", digits, in any case), 0 if
 * there is none; *@of is where " of " starts. */
static gsize
of_marker_len(const char *s, const char *end, const char **of)
{
	const char *p = s;

	while (p < end && g_ascii_isdigit(*p))
		p++;
	if (p == s || end - p < 5 || g_ascii_strncasecmp(p, " of ", 4) != 0 ||
	    !g_ascii_isdigit(p[4]))
		return 0;
	*of = p;
	p += 4;
	while (p < end && g_ascii_isdigit(*p))
		p++;
	if (p < end && !is_separator(*p))
		return 0;
	return (gsize)(p - s);
}

/* Splits the inside of one bracket group into tokens. */
static void
split_group(GPtrArray *tokens, const char *s, const char *end)
{
	while (s < end) {
		const char *t, *of;
		gsize n;

		while (s < end && is_separator(*s))
			s++;
		if (s == end)
			break;
		n = of_marker_len(s, end, &of);
		if (n > 0) {
			/* kept as "M of N" whatever case "of" had */
			g_autofree char *m = g_strdup_printf(
				"%.*s of %.*s", (int)(of - s), s,
				(int)(s + n - of - 4), of + 4);

			tokens_add(tokens, m, strlen(m));
			s += n;
			continue;
		}
		for (t = s; t < end && !is_separator(*t); t++)
			;
		tokens_add_split(tokens, s, (gsize)(t - s));
		s = t;
	}
}

/* The end of the bracket group opening at @s, nested groups included;
 * NULL when it is not closed. */
static const char *
group_end(const char *s)
{
	int depth = 0;

	for (; *s != '\0'; s++) {
		if (*s == '[')
			depth++;
		else if (*s == ']' && --depth == 0)
			return s;
	}
	return NULL;
}

static char *
make_name(GPtrArray *prefixes, const char *rest)
{
	GString *name;

	if (prefixes->len == 0)
		return g_strdup(rest);
	name = g_string_new("[");
	for (guint i = 0; i < prefixes->len; i++) {
		if (i > 0)
			g_string_append_c(name, ',');
		g_string_append(name, g_ptr_array_index(prefixes, i));
	}
	g_string_append_c(name, ']');
	if (*rest != '\0') {
		g_string_append_c(name, ' ');
		g_string_append(name, rest);
	}
	return g_string_free(name, FALSE);
}

/* Reads the markers of the tokens and keeps all but PATCH in
 * rec->prefixes.  Returns: whether a token gave the version. */
static gboolean
read_tokens(PgateMessageRec *rec, GPtrArray *tokens)
{
	gboolean have_marker = FALSE, have_version = FALSE;

	for (guint i = 0; i < tokens->len; i++) {
		char *t = g_ptr_array_index(tokens, i);

		if (g_ascii_strcasecmp(t, "patch") == 0)
			continue;
		if (g_ascii_strncasecmp(t, "rfc", 3) == 0)
			rec->flags |= PGATE_MSG_FLAG_SUBJECT_RFC;
		if (g_ascii_strncasecmp(t, "resend", 6) == 0)
			rec->flags |= PGATE_MSG_FLAG_SUBJECT_RESEND;
		if (!have_marker)
			have_marker = token_marker(t, &rec->number,
						   &rec->total);
		if (!have_version)
			have_version = token_version(t, &rec->version);
		g_ptr_array_add(rec->prefixes, g_strdup(t));
	}
	if (!have_marker)
		rec->number = rec->total = 0;
	return have_version;
}

void
pgate_ingest__subject_parse(const char *subject, PgateMessageRec *rec)
{
	g_autoptr(GPtrArray) tokens = g_ptr_array_new_with_free_func(g_free);
	const char *s = skip_space(subject), *end;
	g_autofree char *rest = NULL;
	gboolean have_version;
	gsize n;

	while ((n = reply_prefix_len(s)) > 0)
		s += n;
	while (*s == '[' && (end = group_end(s)) != NULL) {
		split_group(tokens, s + 1, end);
		s = skip_space(end + 1);
	}
	rest = g_strchomp(g_strdup(s));

	rec->version = 1;
	rec->flags &= ~(PGATE_MSG_FLAG_SUBJECT_RFC |
			PGATE_MSG_FLAG_SUBJECT_RESEND);
	have_version = read_tokens(rec, tokens);
	g_free(rec->name);
	rec->name = g_steal_pointer(&rest);
	/* Patchwork's second chance looks at its name, prefixes included */
	if (!have_version) {
		g_autofree char *pw_name = make_name(rec->prefixes, rec->name);

		paren_version(pw_name, &rec->version);
	}
}

/* ---- pull requests --------------------------------------------------- */

/*
 * Patchwork's parse_pull_request() regular expression, by hand:
 *
 *   ^The following changes since commit.*
 *   ^are available in the git repository at:\s*\n
 *   ^\s*([\w+-]+(?:://|@)[\w/.@:~-]+[\s\\]*[\w/._-]*)\s*$
 *
 * (dot matches newline, case-insensitive, multi-line).  The greedy ".*"
 * makes the last "are available" line that matches win; the URL, the
 * blanks and the branch are greedy too, and the first match in the
 * engine's backtracking order is the one returned.
 */
#define PULL_START "The following changes since commit"
#define PULL_AT "are available in the git repository at:"
#define PULL_MAX_SPAN 512
#define PULL_MAX_STEPS 100000

static gboolean
is_word(char c)
{
	return g_ascii_isalnum(c) || c == '_' || (guchar)c >= 0x80;
}

static gsize
span_of(const char *p, gboolean (*in)(char c))
{
	gsize n = 0;

	while (p[n] != '\0' && n < PULL_MAX_SPAN && in(p[n]))
		n++;
	return n;
}

static gboolean
in_scheme(char c)
{
	return is_word(c) || c == '+' || c == '-';
}

static gboolean
in_url(char c)
{
	return is_word(c) || c == '/' || c == '.' || c == '@' || c == ':' ||
	       c == '~' || c == '-';
}

static gboolean
in_gap(char c)
{
	return g_ascii_isspace(c) || c == '\\';
}

static gboolean
in_branch(char c)
{
	return is_word(c) || c == '/' || c == '.' || c == '_' || c == '-';
}

/* \s*$ in multi-line mode: blanks, then a newline or the end. */
static gboolean
at_line_end(const char *p)
{
	for (; g_ascii_isspace(*p); p++)
		if (*p == '\n')
			return TRUE;
	return *p == '\0';
}

static gboolean
scheme_allowed(const char *s, gsize n, gboolean at_form, const char *url,
	       gsize url_len)
{
	static const char *const schemes[] = {
		"git", "ssh", "git+ssh", "http", "https",
	};

	if (at_form)   /* user@host:path */
		return memchr(url, ':', url_len) != NULL;
	for (guint i = 0; i < G_N_ELEMENTS(schemes); i++)
		if (n == strlen(schemes[i]) &&
		    g_ascii_strncasecmp(s, schemes[i], n) == 0)
			return TRUE;
	return FALSE;
}

/* "[\s\\]*[\w/._-]*\s*$" at @p, the longest spans tried first: returns
 * where the branch ends, or NULL.  *@steps bounds the backtracking. */
static const char *
match_gap_branch(const char *p, guint *steps)
{
	for (gsize g = span_of(p, in_gap) + 1; g-- > 0;) {
		const char *br = p + g;

		for (gsize b = span_of(br, in_branch) + 1; b-- > 0;) {
			if (++*steps > PULL_MAX_STEPS)
				return NULL;
			if (at_line_end(br + b))
				return br + b;
		}
	}
	return NULL;
}

/* The URL group matched at @s (a line's first non-blank), or NULL. */
static char *
match_pull_url(const char *s)
{
	gsize scheme = span_of(s, in_scheme), sep, url_max;
	const char *url, *end;
	guint steps = 0;

	if (scheme == 0)
		return NULL;
	if (strncmp(s + scheme, "://", 3) == 0)
		sep = 3;
	else if (s[scheme] == '@')
		sep = 1;
	else
		return NULL;
	url = s + scheme + sep;
	url_max = span_of(url, in_url);
	for (gsize u = url_max; u >= 1 && steps <= PULL_MAX_STEPS; u--) {
		if (!scheme_allowed(s, scheme, sep == 1, url, u))
			continue;
		end = match_gap_branch(url + u, &steps);
		if (end != NULL)
			return pgate_ingest__clean_value(s, end - s, G_MAXSIZE);
	}
	return NULL;
}

/* After "at:": blanks holding at least one newline, then the URL. */
static char *
pull_url_after(const char *p)
{
	gboolean newline = FALSE;

	for (; g_ascii_isspace(*p); p++)
		newline |= *p == '\n';
	return newline ? match_pull_url(p) : NULL;
}

/* The first line of @text starting with @prefix, in any case. */
static const char *
find_line_ci(const char *text, const char *prefix)
{
	gsize n = strlen(prefix);
	const char *p = text;

	while (p != NULL && *p != '\0') {
		if (g_ascii_strncasecmp(p, prefix, n) == 0)
			return p;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return NULL;
}

char *
pgate_ingest__pull_url(const char *text)
{
	const char *start = find_line_ci(text, PULL_START);
	g_autoptr(GPtrArray) at = NULL;
	const char *p;

	if (start == NULL)
		return NULL;
	at = g_ptr_array_new();
	for (p = strchr(start, '\n'); p != NULL &&
	     (p = find_line_ci(p + 1, PULL_AT)) != NULL; p = strchr(p, '\n'))
		g_ptr_array_add(at, (gpointer)(p + strlen(PULL_AT)));
	for (guint i = at->len; i-- > 0;) {
		char *url = pull_url_after(g_ptr_array_index(at, i));

		if (url != NULL)
			return url;
	}
	return NULL;
}

/* ---- trailers and b4 lines ------------------------------------------- */

typedef struct {
	const char *p;
	gsize len;
} Span;

static GArray *
split_lines(const char *text, const char *end)
{
	GArray *lines = g_array_sized_new(FALSE, FALSE, sizeof(Span),
					  (guint)((end - text) / 40 + 8));

	while (text < end) {
		const char *nl = memchr(text, '\n', (gsize)(end - text));
		Span s = { text, (gsize)((nl != NULL ? nl : end) - text) };

		g_array_append_val(lines, s);
		text = nl != NULL ? nl + 1 : end;
	}
	return lines;
}

/* git's find_patch_start(): the first line "---" and then whitespace;
 * returns the number of lines before it. */
static guint
message_lines(GArray *lines)
{
	for (guint i = 0; i < lines->len; i++) {
		const Span *l = &g_array_index(lines, Span, i);

		if (l->len >= 3 && memcmp(l->p, "---", 3) == 0 &&
		    (l->len == 3 || g_ascii_isspace(l->p[3])))
			return i;
	}
	return lines->len;
}

/* git's find_separator() for ":": a token of letters, digits and '-',
 * maybe blanks; -1 when the line is no "Token: value". */
static gssize
trailer_separator(const Span *l)
{
	gboolean blank = FALSE;

	for (gsize i = 0; i < l->len; i++) {
		char c = l->p[i];

		if (c == ':')
			return (gssize)i;
		if (!blank && (g_ascii_isalnum(c) || c == '-'))
			continue;
		if (i > 0 && pgate_ingest__is_wsp(c)) {
			blank = TRUE;
			continue;
		}
		break;
	}
	return -1;
}

static gboolean
span_is_blank(const Span *l)
{
	for (gsize i = 0; i < l->len; i++)
		if (!g_ascii_isspace(l->p[i]))
			return FALSE;
	return TRUE;
}

static gboolean
span_has_prefix(const Span *l, const char *prefix)
{
	gsize n = strlen(prefix);

	return l->len >= n && memcmp(l->p, prefix, n) == 0;
}

/*
 * git's find_trailer_block_start(): from the end, the last paragraph is
 * the trailer block if all its lines are trailers (or continue one), or
 * if it has a git-made trailer (Signed-off-by, cherry picked) and at
 * least a quarter of its lines are trailers.  The start of @lines counts
 * as the blank line git has after the title.  Returns: the index of the
 * block's first line, or @nlines when there is none.
 */
static guint
trailer_block_start(GArray *lines, guint nlines)
{
	gboolean only_spaces = TRUE, recognized = FALSE;
	guint trailers = 0, others = 0, maybe_continued = 0;

	for (guint i = nlines; i-- > 0;) {
		const Span *l = &g_array_index(lines, Span, i);

		if (l->len > 0 && l->p[0] == '#') {
			others += maybe_continued;
			maybe_continued = 0;
			continue;
		}
		if (span_is_blank(l)) {
			if (only_spaces)
				continue;
			others += maybe_continued;
			if ((recognized && trailers * 3 >= others) ||
			    (trailers > 0 && others == 0))
				return i + 1;
			return nlines;
		}
		only_spaces = FALSE;
		if (span_has_prefix(l, "Signed-off-by: ") ||
		    span_has_prefix(l, "(cherry picked from commit ")) {
			trailers++;
			maybe_continued = 0;
			recognized = TRUE;
		} else if (trailer_separator(l) >= 1 && !g_ascii_isspace(l->p[0])) {
			trailers++;
			maybe_continued = 0;
		} else if (l->len > 0 && g_ascii_isspace(l->p[0])) {
			maybe_continued++;
		} else {
			others += 1 + maybe_continued;
			maybe_continued = 0;
		}
	}
	others += maybe_continued;
	if (!only_spaces && ((recognized && trailers * 3 >= others) ||
			     (trailers > 0 && others == 0)))
		return 0;
	return nlines;
}

/* Trailers b4 and Patchwork users look for anywhere in a message. */
static gboolean
is_known_trailer(const char *p, gsize n)
{
	static const char *const known[] = {
		"Reviewed-by", "Acked-by", "Tested-by", "Signed-off-by",
		"Reported-by", "Suggested-by", "Co-developed-by", "Cc",
		"Fixes", "Link", "Closes",
	};

	for (guint i = 0; i < G_N_ELEMENTS(known); i++)
		if (n == strlen(known[i]) &&
		    g_ascii_strncasecmp(p, known[i], n) == 0)
			return TRUE;
	return FALSE;
}

#define MAX_TRAILER_NAME 128
#define MAX_TRAILER_VALUE 2048

typedef struct {
	GPtrArray *trailers;
	guint max;
	GString *value;         /* the value being read, continuations */
	char *name;             /* and its name; NULL when none */
} TrailerReader;

static void
trailer_finish(TrailerReader *tr)
{
	if (tr->name != NULL) {
		g_autofree char *v = pgate_ingest__clean_value(
			tr->value->str, (gssize)tr->value->len,
			MAX_TRAILER_VALUE);

		if (v != NULL && tr->trailers->len < tr->max)
			g_ptr_array_add(tr->trailers,
					pgate_trailer_new(tr->name, v));
	}
	g_clear_pointer(&tr->name, g_free);
	g_string_truncate(tr->value, 0);
}

static void
trailer_start(TrailerReader *tr, const Span *l, gssize sep)
{
	gsize n = (gsize)sep;

	trailer_finish(tr);
	while (n > 0 && pgate_ingest__is_wsp(l->p[n - 1]))
		n--;
	tr->name = pgate_ingest__clean_value(l->p, (gssize)n, MAX_TRAILER_NAME);
	g_string_append_len(tr->value, l->p + sep + 1,
			    (gssize)l->len - sep - 1);
}

static void
read_trailers(GArray *lines, guint nlines, guint block, guint max,
	      PgateMessageRec *rec)
{
	TrailerReader tr = { rec->trailers, max, g_string_new(NULL), NULL };

	for (guint i = 0; i < nlines; i++) {
		const Span *l = &g_array_index(lines, Span, i);
		gssize sep = trailer_separator(l);
		gboolean in_block = i >= block;

		if (in_block && tr.name != NULL && l->len > 0 &&
		    g_ascii_isspace(l->p[0]) && !span_is_blank(l)) {
			g_string_append_c(tr.value, ' ');
			g_string_append_len(tr.value, l->p, (gssize)l->len);
			continue;
		}
		if (sep >= 1 && !g_ascii_isspace(l->p[0]) && l->p[0] != '#' &&
		    (in_block || is_known_trailer(l->p, (gsize)sep)))
			trailer_start(&tr, l, sep);
		else
			trailer_finish(&tr);
	}
	trailer_finish(&tr);
	g_string_free(tr.value, TRUE);
}

/* b4 and format-patch lines that say what a series needs. */
typedef enum {
	B4_BASE_COMMIT, B4_CHANGE_ID, B4_PREREQ_PATCH, B4_PREREQ_CHANGE,
	B4_PREREQ_MESSAGE, B4_DEPENDS_ON, B4_BASED_ON,
} B4Key;

static const struct {
	const char *key;
	B4Key which;
} b4_keys[] = {
	{ "base-commit:", B4_BASE_COMMIT },
	{ "change-id:", B4_CHANGE_ID },
	{ "prerequisite-patch-id:", B4_PREREQ_PATCH },
	{ "prerequisite-change-id:", B4_PREREQ_CHANGE },
	{ "prerequisite-message-id:", B4_PREREQ_MESSAGE },
	{ "Depends-on:", B4_DEPENDS_ON },
	{ "Based-on:", B4_BASED_ON },
};

/* The first word of a b4 value, <> removed; NULL unless it is one
 * printable ASCII token. */
static char *
b4_token(const char *p, gsize len)
{
	const char *end = p + len;
	const char *w;

	while (p < end && g_ascii_isspace(*p))
		p++;
	for (w = p; w < end && !g_ascii_isspace(*w); w++)
		;
	if (w - p >= 2 && *p == '<' && w[-1] == '>')
		p++, w--;
	if (!pgate_ingest__valid_id(p, (gsize)(w - p)))
		return NULL;
	return g_strndup(p, (gsize)(w - p));
}

static gboolean
is_hex_string(const char *s)
{
	gsize n = strspn(s, "0123456789abcdefABCDEF");

	return n >= 4 && n <= 64 && s[n] == '\0';
}

static void
b4_add(GPtrArray *to, char *value, guint max)
{
	for (guint i = 0; i < to->len; i++) {
		if (strcmp(g_ptr_array_index(to, i), value) == 0) {
			g_free(value);
			return;
		}
	}
	if (to->len < max)
		g_ptr_array_add(to, value);
	else
		g_free(value);
}

static void
b4_line(PgateMessageRec *rec, B4Key which, char *value, guint max)
{
	switch (which) {
	case B4_BASE_COMMIT:
		if (rec->base_commit == NULL && is_hex_string(value))
			rec->base_commit = g_ascii_strdown(value, -1);
		g_free(value);
		return;
	case B4_CHANGE_ID:
		if (rec->change_id == NULL)
			rec->change_id = g_steal_pointer(&value);
		g_free(value);
		return;
	case B4_PREREQ_PATCH:
		b4_add(rec->prereq_patch_ids, value, max);
		return;
	case B4_PREREQ_CHANGE:
		b4_add(rec->prereq_change_ids, value, max);
		return;
	case B4_PREREQ_MESSAGE:
		b4_add(rec->prereq_message_ids, value, max);
		return;
	case B4_DEPENDS_ON:
		b4_add(rec->depends_on, value, max);
		return;
	case B4_BASED_ON:
		b4_add(rec->based_on, value, max);
		return;
	}
}

static void
read_b4_lines(GArray *lines, guint max, PgateMessageRec *rec)
{
	for (guint i = 0; i < lines->len; i++) {
		const Span *l = &g_array_index(lines, Span, i);
		char c = l->len > 0 ? g_ascii_tolower(l->p[0]) : '\0';

		/* the keys start with these letters */
		if (c != 'b' && c != 'c' && c != 'p' && c != 'd')
			continue;
		for (guint k = 0; k < G_N_ELEMENTS(b4_keys); k++) {
			gsize n = strlen(b4_keys[k].key);
			char *v;

			if (l->len < n ||
			    g_ascii_strncasecmp(l->p, b4_keys[k].key, n) != 0)
				continue;
			v = b4_token(l->p + n, l->len - n);
			if (v != NULL)
				b4_line(rec, b4_keys[k].which, v, max);
			break;
		}
	}
}

void
pgate_ingest__body_fields(const char *body, guint max_items,
			  PgateMessageRec *rec)
{
	g_autoptr(GArray) lines = split_lines(body, body + strlen(body));
	guint n = message_lines(lines);

	read_trailers(lines, n, trailer_block_start(lines, n), max_items, rec);
	read_b4_lines(lines, max_items, rec);
}

/* ---- links to other messages: archive URLs ----
 *
 * A re-roll often names its older version by URL ("v1:
 * https://lore.kernel.org/r/ID", b4's "Link to v1:", patch.msgid.link).
 * Every public-inbox, lore, lkml.kernel.org/r and patch.msgid.link URL
 * carries the Message-ID as one path component, the only one with an
 * "@" (percent-encoded or not), so that is what is taken, whatever the
 * host. */

static int
hex_val(char c)
{
	return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* The Message-ID in the URL @p..@end (scheme included), or NULL. */
static char *
url_msgid(const char *p, const char *end)
{
	const char *c = memchr(p, '/', (gsize)(end - p));

	/* past "scheme://host" */
	if (c == NULL || c + 2 > end || c[1] != '/')
		return NULL;
	c = memchr(c + 2, '/', (gsize)(end - c - 2));
	while (c != NULL && c < end) {
		const char *e;
		g_autoptr(GString) comp = g_string_new(NULL);

		c++;
		e = memchr(c, '/', (gsize)(end - c));
		if (e == NULL)
			e = end;
		for (const char *q = c; q < e; q++) {
			if (*q == '%' && q + 2 < e &&
			    hex_val(q[1]) >= 0 && hex_val(q[2]) >= 0) {
				g_string_append_c(comp, (char)(hex_val(q[1]) * 16 +
							       hex_val(q[2])));
				q += 2;
			} else {
				g_string_append_c(comp, *q);
			}
		}
		if (strchr(comp->str, '@') != NULL && comp->str[0] != '@' &&
		    pgate_ingest__valid_id(comp->str, comp->len))
			return g_string_free(g_steal_pointer(&comp), FALSE);
		c = e;
	}
	return NULL;
}

/* ---- which links are versions ----
 *
 * A link is an older version only when the text says so; any other
 * archive link is a reference, or a dependency when the text says the
 * series needs it.  What a URL's "text" is: the words of its line
 * around it, else (a line holding only the URL, a bullet or a footnote
 * mark) the line above, past the other URL lines of a list ("v1:\n
 * URL", "Links to previous cover letters (v1 to v10):\n  URL\n  URL");
 * a footnote "[1] URL" reads the lines that cite "[1]".  In that text,
 * in this order:
 *   - b4's "Link to vN" (and Patchew's "Supersedes:") is a version;
 *   - "depends on", "dependency", "based on", "on top of",
 *     "prerequisite", "requires", "needs" make a dependency;
 *   - a version word makes a version: "vN" (not "v5.18", a kernel),
 *     "version N", "previous/last/earlier/prior/older" then within a
 *     few words "version/revision/iteration/series/posting/submission/
 *     patch set", "changes since/from", "compared to vN", "supersedes",
 *     "resend of", "revisits a series";
 *   - a URL alone as an item of a changelog section's list, or right
 *     under its heading ("Changes since v1:", "Changes in v2:", "v2:" or
 *     "v1 -> v2" heading a list, up to the next paragraph that is not
 *     part of the list), is a version; one that ends a sentence of an
 *     item ("... removed from all drivers by:\n  URL") or follows words
 *     without version wording ("- link: URL") is not;
 *   - anything else is a reference. */

typedef enum {
	LINK_REFERENCE,
	LINK_DEPENDS,
	LINK_VERSION,
} LinkKind;

#define LINK_LINE_MAX 200	/* bytes of the line kept in link_lines */
#define LINK_LOOKBACK 12	/* lines walked up for a URL alone */
#define LINK_FOOTNOTES 100	/* footnote marks [0]..[99] */
#define LINK_WHAT_REACH 24	/* "previous" ... "series": bytes between */

/* Whether @l holds the lower-case ASCII @word (a substring). */
static gboolean
span_has(const Span *l, const char *word)
{
	gsize n = strlen(word);

	if (l->len < n)
		return FALSE;
	for (gsize i = 0; i + n <= l->len; i++)
		if (g_ascii_strncasecmp(l->p + i, word, n) == 0)
			return TRUE;
	return FALSE;
}

/* Whether @l names a version: "v3", "V3", "PATCHv3", "version 3",
 * "revision 3"; "v5.18" or "v6.1-rc1" is a kernel, not a version. */
static gboolean
span_has_version_token(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;

	for (const char *q = p; q < end; q++) {
		const char *d;

		if ((end - q >= 8 &&
		     g_ascii_strncasecmp(q, "version ", 8) == 0) ||
		    (end - q >= 9 &&
		     g_ascii_strncasecmp(q, "revision ", 9) == 0)) {
			if (q > p && g_ascii_isalpha(q[-1]))
				continue;
			d = q + (g_ascii_tolower(*q) == 'v' ? 8 : 9);
		} else if (*q == 'v' || *q == 'V') {
			/* a word start, or after "PATCH" */
			if (q > p && g_ascii_isalnum(q[-1]) &&
			    !(q - p >= 5 &&
			      g_ascii_strncasecmp(q - 5, "patch", 5) == 0))
				continue;
			d = q + 1;
		} else {
			continue;
		}
		if (d >= end || !g_ascii_isdigit(*d))
			continue;
		while (d < end && g_ascii_isdigit(*d))
			d++;
		if (d < end && (g_ascii_isalpha(*d) || *d == '_'))
			continue;
		if (d + 1 < end && *d == '.' && g_ascii_isdigit(d[1]))
			continue;	/* v5.18 */
		if (d < end && *d == '-' && d + 1 < end &&
		    g_ascii_tolower(d[1]) == 'r')
			continue;	/* v6.1-rc1 */
		return TRUE;
	}
	return FALSE;
}

static gboolean
span_says_depends(const Span *l)
{
	static const char *const words[] = {
		"depends on", "depend on", "dependency", "dependencies",
		"dependent on", "based on", "based-on", "on top of",
		"prerequisite", "pre-requisite", "requires", "needs ",
		"applies on", "apply on", "applied on", "depends-on",
	};

	for (gsize i = 0; i < G_N_ELEMENTS(words); i++)
		if (span_has(l, words[i]))
			return TRUE;
	return FALSE;
}

static gboolean
span_says_version(const Span *l)
{
	static const char *const before[] = {
		"previous ", "last ", "earlier ", "prior ", "older ", "old ",
	};
	static const char *const what[] = {
		"version", "revision", "iteration", "series", "posting",
		"submission", "spin", "round", "cover letter", "patchset",
		"patch set",
	};
	static const char *const words[] = {
		"changes since", "changes from", "change since", "changes in v",
		"supersede", "resend of", "re-spin of", "respin of",
		"compared to v", "revisits a series", "revisit of",
	};

	if (span_has_version_token(l))
		return TRUE;
	for (gsize i = 0; i < G_N_ELEMENTS(words); i++)
		if (span_has(l, words[i]))
			return TRUE;
	/* "previous version", "the previous driver series", "my last
	 * patch set": a what-word within a few words after */
	for (gsize i = 0; i < G_N_ELEMENTS(before); i++) {
		gsize n = strlen(before[i]);

		for (gsize k = 0; k + n <= l->len; k++) {
			Span rest;

			if (g_ascii_strncasecmp(l->p + k, before[i], n) != 0 ||
			    (k > 0 && g_ascii_isalpha(l->p[k - 1])))
				continue;
			rest.p = l->p + k + n;
			rest.len = MIN(l->len - k - n, (gsize)LINK_WHAT_REACH);
			for (gsize j = 0; j < G_N_ELEMENTS(what); j++)
				if (span_has(&rest, what[j]))
					return TRUE;
		}
	}
	return FALSE;
}

/* b4's "- Link to v3: URL" (or "Link to V3"), Patchew's "Supersedes:" */
static gboolean
span_says_b4_link(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;

	while (p < end && (g_ascii_isspace(*p) || *p == '-' || *p == '*'))
		p++;
	if (end - p >= 10 && g_ascii_strncasecmp(p, "supersedes", 10) == 0)
		return TRUE;
	return end - p >= 10 && g_ascii_strncasecmp(p, "link to v", 9) == 0 &&
	       g_ascii_isdigit(p[9]);
}

static LinkKind
span_kind(const Span *l)
{
	if (span_says_b4_link(l))
		return LINK_VERSION;
	if (span_says_depends(l))
		return LINK_DEPENDS;
	if (span_says_version(l))
		return LINK_VERSION;
	return LINK_REFERENCE;
}

static gboolean
span_blank(const Span *l)
{
	for (gsize i = 0; i < l->len; i++)
		if (!g_ascii_isspace(l->p[i]))
			return FALSE;
	return TRUE;
}

/* A changelog heading: "Changes since v1:", "Changes in v2:", "Changelog",
 * "Change log:", "v2:" or "v1 -> v2:" alone, "Between version 1 and
 * version 2:", "Revision history". */
static gboolean
span_changelog_heading(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;
	const char *q;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '-' || *p == '*'))
		p++;
	if (end - p < 2)
		return FALSE;
	if ((end - p >= 7 && g_ascii_strncasecmp(p, "changes", 7) == 0) ||
	    (end - p >= 6 && g_ascii_strncasecmp(p, "change", 6) == 0 &&
	     span_has(l, " v")) ||
	    (end - p >= 9 && g_ascii_strncasecmp(p, "changelog", 9) == 0) ||
	    (end - p >= 10 && g_ascii_strncasecmp(p, "change log", 10) == 0) ||
	    (end - p >= 16 && g_ascii_strncasecmp(p, "revision history", 16) == 0) ||
	    (end - p >= 8 && g_ascii_strncasecmp(p, "between ", 8) == 0 &&
	     span_has_version_token(l)))
		return TRUE;
	/* "v2:", "v2 changes:", "v1 -> v2:", "V3" alone */
	if ((*p != 'v' && *p != 'V') || !g_ascii_isdigit(p[1]))
		return FALSE;
	for (q = p + 1; q < end && g_ascii_isdigit(*q); q++)
		;
	while (q < end && g_ascii_isspace(end[-1]))
		end--;
	return q == end || *q == ':' || span_has(l, "->") ||
	       (end[-1] == ':' && end - p < 40);
}

/* Whether @l opens with a list bullet ("- ", "* ", "+ "). */
static gboolean
span_bullet(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p + 1 < end && (*p == '-' || *p == '*' || *p == '+') &&
	       (p[1] == ' ' || p[1] == '\t');
}

/* A line of the changelog's list: a bullet, an indented line, a heading. */
static gboolean
span_list_line(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;

	if (p < end && (*p == ' ' || *p == '\t'))
		return TRUE;
	if (p < end && (*p == '-' || *p == '*' || *p == '+') &&
	    (p + 1 == end || p[1] == ' ' || p[1] == '\t'))
		return TRUE;
	return span_changelog_heading(l);
}

/* Where a changelog section ends: the shortlog ("Name (3):"), a diffstat,
 * the "---" of a patch, the signature, b4's footer. */
static gboolean
span_section_end(const Span *l)
{
	if (l->len >= 3 && memcmp(l->p, "---", 3) == 0)
		return TRUE;
	if (l->len == 3 && memcmp(l->p, "-- ", 3) == 0)
		return TRUE;
	if (l->len >= 12 && (g_ascii_strncasecmp(l->p, "base-commit:", 12) == 0 ||
			     g_ascii_strncasecmp(l->p, "change-id:", 10) == 0))
		return TRUE;
	if (span_has(l, " changed, ") || span_has(l, " file changed") ||
	    span_has(l, " files changed"))
		return TRUE;
	/* "Alice Example (3):" */
	return l->len > 4 && l->p[l->len - 1] == ':' &&
	       l->p[l->len - 2] == ')' && g_ascii_isalpha(l->p[0]);
}

/* The footnote a line defines ("[1] URL", "[1]: URL"), or -1. */
static int
footnote_mark(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;
	int n = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= end || *p != '[')
		return -1;
	p++;
	if (p >= end || !g_ascii_isdigit(*p))
		return -1;
	while (p < end && g_ascii_isdigit(*p) && n < LINK_FOOTNOTES)
		n = n * 10 + (*p++ - '0');
	if (p >= end || *p != ']' || n >= LINK_FOOTNOTES)
		return -1;
	/* a definition: the mark, maybe a colon, then the URL */
	for (p++; p < end && (*p == ':' || *p == ' ' || *p == '\t'); p++)
		;
	if (end - p < 4 || g_ascii_strncasecmp(p, "http", 4) != 0)
		return -1;
	return n;
}

/* Whether @l holds words besides its URLs, bullets and footnote mark. */
static gboolean
span_has_words(const Span *l)
{
	const char *p = l->p, *end = l->p + l->len;
	guint letters = 0;

	if (footnote_mark(l) >= 0)
		p = memchr(p, ']', (gsize)(end - p)) + 1;
	while (p < end) {
		if (end - p > 3 && (g_ascii_strncasecmp(p, "http", 4) == 0)) {
			while (p < end && !g_ascii_isspace(*p))
				p++;
			continue;
		}
		if (g_ascii_isalnum(*p))
			letters++;
		p++;
	}
	return letters >= 2;
}

static void
link_add(PgateMessageRec *rec, LinkKind kind, char *id, const Span *line,
	 guint max)
{
	static const char *const names[] = {
		[LINK_REFERENCE] = "reference",
		[LINK_DEPENDS] = "depends",
		[LINK_VERSION] = "version",
	};
	GPtrArray *to = kind == LINK_VERSION ? rec->linked_msgids :
			kind == LINK_DEPENDS ? rec->depends_on : rec->ref_msgids;
	GPtrArray *all[] = { rec->linked_msgids, rec->depends_on,
			     rec->ref_msgids };
	gsize n = MIN(line->len, (gsize)LINK_LINE_MAX);
	g_autofree char *text = NULL;

	/* a Message-ID named twice keeps its first (highest) kind */
	for (gsize k = 0; k < G_N_ELEMENTS(all); k++)
		for (guint i = 0; i < all[k]->len; i++)
			if (strcmp(all[k]->pdata[i], id) == 0) {
				g_free(id);
				return;
			}
	while (n > 0 && (line->p[n - 1] & 0xc0) == 0x80)
		n--;	/* not inside a UTF-8 character */
	if (n > 0 && n < line->len && (line->p[n] & 0xc0) == 0x80)
		n--;
	text = g_utf8_make_valid(line->p, (gssize)n);
	g_strstrip(text);
	if (rec->link_lines->len < max)
		g_ptr_array_add(rec->link_lines,
				g_strdup_printf("%s %s %s", names[kind], id, text));
	b4_add(to, id, max);
}

/* The Message-IDs of the archive URLs of @l, in order. */
static void
line_urls(const Span *l, GPtrArray *out, guint max)
{
	const char *p = l->p, *end = l->p + l->len;

	while (p < end && out->len < max) {
		const char *u = g_strstr_len(p, end - p, "://");
		const char *s, *e;

		if (u == NULL)
			return;
		/* the scheme: http or https */
		s = u;
		while (s > p && g_ascii_isalpha(s[-1]))
			s--;
		for (e = u + 3; e < end && !g_ascii_isspace(*e) &&
		     strchr("<>\"'()[]{}#?", *e) == NULL; e++)
			;
		while (e > u + 3 && strchr(".,;:!", e[-1]) != NULL)
			e--;
		if ((u - s == 4 && g_ascii_strncasecmp(s, "http", 4) == 0) ||
		    (u - s == 5 && g_ascii_strncasecmp(s, "https", 5) == 0)) {
			char *id = url_msgid(s, e);

			if (id != NULL)
				g_ptr_array_add(out, id);
		}
		p = e > u + 3 ? e : u + 3;
	}
}

static gboolean
span_is_quote(const Span *l)
{
	return l->len > 0 && l->p[0] == '>';
}

/* The kind a footnote's citing lines give it: the strongest of them. */
static LinkKind
footnote_kind(GArray *lines, guint from, int mark, const Span **out_line)
{
	char tag[8];
	LinkKind best = LINK_REFERENCE;

	g_snprintf(tag, sizeof tag, "[%d]", mark);
	*out_line = NULL;
	for (guint i = from; i < lines->len; i++) {
		const Span *l = &g_array_index(lines, Span, i);
		LinkKind k;

		if (span_is_quote(l) || footnote_mark(l) == mark ||
		    !span_has(l, tag))
			continue;
		k = span_kind(l);
		if (*out_line == NULL || k > best) {
			*out_line = l;
			best = k;
		}
		if (best == LINK_VERSION)
			break;
	}
	return best;
}

void
pgate_ingest__body_links(const char *body, gboolean patch, guint max_items,
			 PgateMessageRec *rec)
{
	g_autoptr(GArray) lines = split_lines(body, body + strlen(body));
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	/* a patch's commit message is the change's own text: its Link:
	 * trailers name bug reports and discussions, not older versions;
	 * only b4's own words, "Link to v1: URL", are read there (a
	 * changelog kept above "---" by hand, linux-rtc's "rtc: rtc-pm8xxx:
	 * Retrigger RTC alarm" v2) */
	guint from = patch ? message_lines(lines) : 0;
	gboolean changelog = FALSE, blank = FALSE;
	/* each footnote's kind, read once (a hostile body may define one
	 * mark on every line): 0 unknown, else kind + 1 */
	guint8 fn_kind[LINK_FOOTNOTES] = { 0 };
	const Span *fn_why[LINK_FOOTNOTES] = { NULL };

	for (guint i = 0; i < from; i++) {
		const Span *l = &g_array_index(lines, Span, i);

		if (span_is_quote(l) || !span_says_b4_link(l))
			continue;
		line_urls(l, ids, max_items);
		for (guint k = 0; k < ids->len; k++)
			link_add(rec, LINK_VERSION,
				 g_steal_pointer(&ids->pdata[k]), l, max_items);
		g_ptr_array_set_size(ids, 0);
	}
	/* at most @max_items links a message, in all: past them nothing
	 * is read (a hostile body of URL lines costs no more) */
	for (guint i = from; i < lines->len &&
	     rec->link_lines->len < max_items; i++) {
		const Span *l = &g_array_index(lines, Span, i);
		const Span *why = l;
		LinkKind kind;
		int mark;

		if (span_is_quote(l))
			continue;
		/* the changelog section this line is in */
		if (span_blank(l)) {
			blank = TRUE;
			continue;
		}
		if (span_changelog_heading(l))
			changelog = TRUE;
		else if (span_section_end(l) || (blank && !span_list_line(l)))
			changelog = FALSE;
		blank = FALSE;
		/* Patchew's "Supersedes: <ID>" */
		if (l->len > 12 &&
		    g_ascii_strncasecmp(l->p, "Supersedes:", 11) == 0) {
			char *id = b4_token(l->p + 11, l->len - 11);

			if (id != NULL && strchr(id, '@') != NULL &&
			    strstr(id, "://") == NULL) {
				link_add(rec, LINK_VERSION, id, l, max_items);
				continue;
			}
			g_free(id);
		}
		if (l->len <= 7 || memchr(l->p, ':', l->len) == NULL)
			continue;
		line_urls(l, ids, max_items);
		if (ids->len == 0)
			continue;
		mark = footnote_mark(l);
		if (span_has_words(l)) {
			kind = span_kind(l);
		} else if (mark >= 0) {
			if (fn_kind[mark] == 0) {
				fn_kind[mark] = (guint8)(footnote_kind(
					lines, from, mark, &fn_why[mark]) + 1);
			}
			kind = (LinkKind)(fn_kind[mark] - 1);
			why = fn_why[mark] != NULL ? fn_why[mark] : l;
		} else {
			/* the line above, past the list's other URL lines */
			guint j = i, steps = 0;

			kind = LINK_REFERENCE;
			while (j > from && steps++ < LINK_LOOKBACK) {
				const Span *u = &g_array_index(lines, Span, --j);

				if (span_blank(u) && steps == 1)
					continue;	/* "v1:\n\nURL" */
				if (span_blank(u) || span_is_quote(u))
					break;
				if (span_has_words(u)) {
					kind = span_kind(u);
					why = u;
					break;
				}
			}
		}
		/* a URL that is an item of a changelog's list, or stands
		 * under its heading; not one that ends a sentence of an
		 * item ("removed from all drivers by:\n URL") */
		if (kind == LINK_REFERENCE && changelog && mark < 0 &&
		    !span_has_words(l) &&
		    (span_bullet(l) || span_changelog_heading(why)))
			kind = LINK_VERSION;
		for (guint k = 0; k < ids->len; k++)
			link_add(rec, kind, g_steal_pointer(&ids->pdata[k]),
				 why, max_items);
		g_ptr_array_set_size(ids, 0);
	}
}
