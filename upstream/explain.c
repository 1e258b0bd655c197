/* explain.c - the parts of merge detection that need no libgit2
 * (upstream.h): names of rules and ranks, the subjects and trailers as
 * matching reads them, and SERIES/upstream read back and told, for the
 * pipeline, `series show` and the site.
 */
#include "upstream/upstream-private.h"

#include <string.h>

G_DEFINE_QUARK(pgate-upstream-error-quark, pgate_upstream_error)

static const char *const rule_names[] = {
	[PGATE_UPSTREAM_RULE_LINK] = "link",
	[PGATE_UPSTREAM_RULE_PATCH_ID] = "patch-id",
	[PGATE_UPSTREAM_RULE_SUBJECT] = "subject",
	[PGATE_UPSTREAM_RULE_EDITED_SUBJECT] = "edited-subject",
};

static const char *const rank_names[] = {
	[PGATE_UPSTREAM_RANK_MERGED] = "merged",
	[PGATE_UPSTREAM_RANK_APPLIED] = "applied-with-changes",
	[PGATE_UPSTREAM_RANK_POSSIBLE] = "possibly-merged",
};

const char *
pgate_upstream_rule_to_string(PgateUpstreamRule rule)
{
	g_return_val_if_fail(rule <= PGATE_UPSTREAM_RULE_EDITED_SUBJECT,
			     "link");
	return rule_names[rule];
}

const char *
pgate_upstream_rank_to_string(PgateUpstreamRank rank)
{
	g_return_val_if_fail(rank <= PGATE_UPSTREAM_RANK_POSSIBLE, "merged");
	return rank_names[rank];
}

PgateUpstreamRule
pgate_upstream__rule_from_string(const char *s)
{
	for (guint i = 0; i < G_N_ELEMENTS(rule_names); i++)
		if (s != NULL && strcmp(s, rule_names[i]) == 0)
			return (PgateUpstreamRule)i;
	return PGATE_UPSTREAM_RULE_LINK;
}

/* A document of before ranks has none: its subject rule was applied
 * with changes, the others merged. */
PgateUpstreamRank
pgate_upstream__rank_from_string(const char *s, PgateUpstreamRule rule)
{
	for (guint i = 0; i < G_N_ELEMENTS(rank_names); i++)
		if (s != NULL && strcmp(s, rank_names[i]) == 0)
			return (PgateUpstreamRank)i;
	return rule == PGATE_UPSTREAM_RULE_SUBJECT ||
	       rule == PGATE_UPSTREAM_RULE_EDITED_SUBJECT
		? PGATE_UPSTREAM_RANK_APPLIED : PGATE_UPSTREAM_RANK_MERGED;
}

void
pgate_upstream_match_free(PgateUpstreamMatch *m)
{
	if (m == NULL)
		return;
	g_free(m->msgid);
	g_free(m->commit);
	g_free(m->repo);
	g_free(m->branch);
	g_free(m);
}

/* ---- subjects ---- */

char *
pgate_upstream_subject_normalize(const char *subject)
{
	const char *s = subject ? subject : "";
	GString *out = g_string_new(NULL);
	gboolean blank = FALSE;

	for (;;) {
		while (g_ascii_isspace(*s))
			s++;
		if (g_ascii_strncasecmp(s, "re:", 3) == 0) {
			s += 3;
		} else if (*s == '[' && strchr(s, ']') != NULL) {
			s = strchr(s, ']') + 1;
		} else {
			break;
		}
	}
	for (; *s; s++) {
		if (g_ascii_isspace(*s)) {
			blank = TRUE;
			continue;
		}
		if (blank && out->len > 0)
			g_string_append_c(out, ' ');
		blank = FALSE;
		g_string_append_c(out, g_ascii_tolower(*s));
	}
	while (out->len > 0 && out->str[out->len - 1] == '.')
		g_string_truncate(out, out->len - 1);
	return g_string_free(out, FALSE);
}

/* The length of the subsystem prefix at @s ("net: ", "dt-bindings: "):
 * a word of no blank ending in ':' and followed by a blank; 0 if none. */
static gsize
prefix_len(const char *s)
{
	gsize n = strcspn(s, " :");

	if (n == 0 || s[n] != ':' || s[n + 1] != ' ')
		return 0;
	return n + 2;
}

char *
pgate_upstream_subject_core(const char *subject)
{
	g_autofree char *norm = pgate_upstream_subject_normalize(subject);
	const char *s = norm;
	GString *out = g_string_new(NULL);
	gboolean blank = FALSE;
	gsize n;

	/* every prefix but a last word: "fix: " alone stays a subject */
	while ((n = prefix_len(s)) > 0 && s[n] != '\0')
		s += n;
	for (; *s; s++) {
		/* letters, digits and any byte of a UTF-8 sequence stay */
		if (!g_ascii_isalnum(*s) && (guchar)*s < 0x80) {
			blank = TRUE;
			continue;
		}
		if (blank && out->len > 0)
			g_string_append_c(out, ' ');
		blank = FALSE;
		g_string_append_c(out, *s);
	}
	return g_string_free(out, FALSE);
}

/* ---- trailers ---- */

/* The path component at @p (up to '/', '?', '#' or the end),
 * percent-decoded; %NULL when empty. */
static char *
url_component(const char *p)
{
	gsize n = strcspn(p, "/?# \t>");
	g_autofree char *raw = g_strndup(p, n);
	char *id;

	if (n == 0)
		return NULL;
	id = g_uri_unescape_string(raw, NULL);
	if (id == NULL || *id == '\0') {
		g_free(id);
		return NULL;
	}
	return id;
}

static const char *
skip_scheme(const char *v)
{
	if (g_ascii_strncasecmp(v, "https://", 8) == 0)
		return v + 8;
	if (g_ascii_strncasecmp(v, "http://", 7) == 0)
		return v + 7;
	return NULL;
}

char *
pgate_upstream_link_msgid(const char *value, char *const *patterns)
{
	const char *v = value, *rest;

	while (g_ascii_isspace(*v))
		v++;
	if (*v == '<') {
		gsize n = strcspn(v + 1, ">");

		return v[1 + n] == '>' && n > 0 ? g_strndup(v + 1, n) : NULL;
	}
	for (guint i = 0; patterns != NULL && patterns[i] != NULL; i++) {
		gsize n = strlen(patterns[i]);

		if (n > 0 && g_ascii_strncasecmp(v, patterns[i], n) == 0)
			return url_component(v + n);
	}
	rest = skip_scheme(v);
	if (rest == NULL)
		return NULL;
	if (g_ascii_strncasecmp(rest, "patch.msgid.link/", 17) == 0)
		return url_component(rest + 17);
	if (g_ascii_strncasecmp(rest, "lore.kernel.org/", 16) == 0) {
		/* /r/ID, /all/ID, /LIST/ID: the second component */
		const char *list = rest + 16;
		gsize n = strcspn(list, "/?#");

		if (n == 0 || list[n] != '/')
			return NULL;
		return url_component(list + n + 1);
	}
	return NULL;
}

/* ---- SERIES/upstream read back ---- */

/* (transfer full) (nullable): @rec's document; %NULL with @error unset
 * when there is none */
static json_t *
doc_read(PgateStoreTxn *txn, const PgateSeriesRec *rec, GError **error)
{
	g_autofree char *key = g_strdup_printf("%s/upstream", rec->id);
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);
	json_t *doc;

	if (b == NULL) {
		if (!g_error_matches(local, PGATE_STORE_ERROR,
				     PGATE_ERROR_NOT_FOUND))
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	doc = json_loadb(g_bytes_get_data(b, NULL), g_bytes_get_size(b), 0,
			 NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

GPtrArray *
pgate_upstream_series_read(PgateStoreTxn *txn, const PgateSeriesRec *rec,
			   GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_upstream_match_free);
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) doc = doc_read(txn, rec, &local);
	json_t *patches;

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	patches = json_object_get(doc, "patches");
	for (guint i = 0; i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		json_t *m = json_object_get(patches, p->msgid);
		PgateUpstreamMatch *um;

		if (!json_is_object(m))
			continue;
		um = g_new0(PgateUpstreamMatch, 1);
		um->msgid = g_strdup(p->msgid);
		um->commit = g_strdup(json_string_value(json_object_get(m,
								       "commit")));
		um->repo = g_strdup(json_string_value(json_object_get(m, "repo")));
		um->branch = g_strdup(json_string_value(json_object_get(m,
								       "branch")));
		um->rule = pgate_upstream__rule_from_string(json_string_value(
			json_object_get(m, "rule")));
		um->rank = pgate_upstream__rank_from_string(json_string_value(
			json_object_get(m, "rank")), um->rule);
		if (um->rank == PGATE_UPSTREAM_RANK_POSSIBLE) {
			/* never a match, whoever wrote it */
			pgate_upstream_match_free(um);
			continue;
		}
		um->changes = json_is_true(json_object_get(m, "changes")) ||
			      um->rank == PGATE_UPSTREAM_RANK_APPLIED;
		um->at = json_integer_value(json_object_get(m, "at"));
		g_ptr_array_add(out, um);
	}
	return g_steal_pointer(&out);
}

static const char *
str_of(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : dflt;
}

/* "1/3 merged as 1a2b3c4d5e6f on master, by link: EVIDENCE", its other
 * commits, then the candidates it beat. */
static void
explain_match(GPtrArray *out, const PgateSeriesPatch *p, guint32 total,
	      json_t *m)
{
	PgateUpstreamRule rule = pgate_upstream__rule_from_string(
		str_of(m, "rule", NULL));
	PgateUpstreamRank rank = pgate_upstream__rank_from_string(
		str_of(m, "rank", NULL), rule);
	const char *evidence = str_of(m, "evidence", NULL);
	json_t *e;
	gsize i;

	g_ptr_array_add(out, g_strdup_printf(
		"%u/%u %s as %.12s on %s, by %s%s%s", p->number, total,
		rank == PGATE_UPSTREAM_RANK_APPLIED ? "applied with changes"
		: rank == PGATE_UPSTREAM_RANK_POSSIBLE ? "possibly merged"
		: "merged",
		str_of(m, "commit", "?"), str_of(m, "branch", "?"),
		pgate_upstream_rule_to_string(rule), evidence ? ": " : "",
		evidence ? evidence : ""));
	json_array_foreach(json_object_get(m, "also"), i, e)
		g_ptr_array_add(out, g_strdup_printf(
			"  also %.12s on %s (%s)", str_of(e, "commit", "?"),
			str_of(e, "branch", "?"), str_of(e, "rule", "?")));
	json_array_foreach(json_object_get(m, "lost"), i, e)
		g_ptr_array_add(out, g_strdup_printf(
			"  not %s v%" JSON_INTEGER_FORMAT " <%s>: %s",
			str_of(e, "series", "?"),
			json_integer_value(json_object_get(e, "version")),
			str_of(e, "msgid", "?"), str_of(e, "why", "?")));
}

GPtrArray *
pgate_upstream_explain(PgateStoreTxn *txn, const PgateSeriesRec *rec,
		       GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) local = NULL;
	g_autoptr(json_t) doc = doc_read(txn, rec, &local);
	guint32 total = MAX(rec->total, rec->patches->len);

	if (local != NULL) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	for (guint i = 0; doc != NULL && i < rec->patches->len; i++) {
		const PgateSeriesPatch *p = rec->patches->pdata[i];
		json_t *m = json_object_get(json_object_get(doc, "patches"),
					    p->msgid);
		json_t *h;
		gsize k;

		if (json_is_object(m))
			explain_match(out, p, total, m);
		json_array_foreach(json_object_get(json_object_get(
			doc, "possible"), p->msgid), k, h) {
			const char *ev = str_of(h, "evidence", NULL);

			g_ptr_array_add(out, g_strdup_printf(
				"%u/%u possibly merged as %.12s on %s (%s%s%s): %s",
				p->number, total, str_of(h, "commit", "?"),
				str_of(h, "branch", "?"), str_of(h, "rule", "?"),
				ev ? ": " : "", ev ? ev : "",
				str_of(h, "why", "?")));
		}
	}
	return g_steal_pointer(&out);
}
