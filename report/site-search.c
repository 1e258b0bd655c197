/* site-search.c - search.html, the combined filters (project, state,
 * result, submitter and text, ANDed) that work without a server, and
 * its data, search-data.js (site.c writes both, from the rows that
 * index.json lists).
 *
 * The data is a script, not JSON, so that a page opened from a file
 * (file://, where a browser fetches no JSON) loads it: one global,
 *
 *   var PGATE_SERIES={"format_version":1,
 *     "outcomes":["none","pending","pass","warn","fail"],
 *     "states":[STATE,...],
 *     "projects":[[NAME,HASH],...],          HASH: project/HASH/
 *     "submitters":[[NAME,EMAIL,HASH],...],  HASH: submitter/HASH/
 *     "rows":[[ID,NAME,VERSION,RECEIVED,TOTAL,DATE,STATE,OUTCOME,
 *              RESULT,PROJECT,SUBMITTER],...]};
 *
 * a row per series, newest first; STATE, OUTCOME, PROJECT and
 * SUBMITTER index the tables (each in the order of its first row).
 * Strings are JSON with < > & U+2028 U+2029 (and every control
 * character) as \uXXXX, so that no subject closes the script or ends a
 * line of it.  The page puts text in the DOM with textContent and
 * createElement only: mail text is hostile.
 */
#include "report/site-private.h"

#include <string.h>

#define hex_name pgate_report_site__hex_name

/* A JSON string that is safe in a script (above); invalid UTF-8
 * replaced. */
static void
js_str(GString *out, const char *s)
{
	g_autofree char *valid = s && !g_utf8_validate(s, -1, NULL)
		? g_utf8_make_valid(s, -1) : NULL;
	const unsigned char *p = (const unsigned char *)(valid ? valid : s);

	g_string_append_c(out, '"');
	for (; p && *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || *p == '<' || *p == '>' ||
			 *p == '&')
			g_string_append_printf(out, "\\u%04x", *p);
		else if (p[0] == 0xe2 && p[1] == 0x80 &&
			 (p[2] == 0xa8 || p[2] == 0xa9)) {
			g_string_append_printf(out, "\\u%04x", 0x2000 + p[2] - 0x80);
			p += 2;
		} else
			g_string_append_c(out, (char)*p);
	}
	g_string_append_c(out, '"');
}

/* The index of @key in @map, added to @order (and to the table text
 * @table by @add) the first time. */
typedef void (*TableAdd)(GString *table, const Row *r);

static guint
table_index(GHashTable *map, const char *key, GString *table,
	    TableAdd add, const Row *r)
{
	gpointer v;
	guint n;

	if (g_hash_table_lookup_extended(map, key, NULL, &v))
		return GPOINTER_TO_UINT(v);
	n = g_hash_table_size(map);
	g_hash_table_insert(map, g_strdup(key), GUINT_TO_POINTER(n));
	g_string_append_c(table, n ? ',' : '[');
	add(table, r);
	return n;
}

static void
add_state(GString *t, const Row *r)
{
	js_str(t, r->state ? r->state : "");
}

static void
add_project(GString *t, const Row *r)
{
	g_autofree char *h = hex_name(r->project);

	g_string_append_c(t, '[');
	js_str(t, r->project ? r->project : "");
	g_string_append_printf(t, ",\"%s\"]", h);
}

/* the submitter's listing is keyed by the address, else the name */
static void
add_submitter(GString *t, const Row *r)
{
	g_autofree char *h = hex_name(r->email && *r->email ? r->email
						: r->submitter);

	g_string_append_c(t, '[');
	js_str(t, r->submitter ? r->submitter : "");
	g_string_append_c(t, ',');
	js_str(t, r->email ? r->email : "");
	g_string_append_printf(t, ",\"%s\"]", h);
}

GString *
pgate_report_site__search_data(GPtrArray *sorted)
{
	GString *out = g_string_sized_new(112 * (gsize)sorted->len + 4096);
	g_autoptr(GString) rows = g_string_sized_new(96 * (gsize)sorted->len + 64);
	g_autoptr(GString) states = g_string_new(NULL);
	g_autoptr(GString) projects = g_string_new(NULL);
	g_autoptr(GString) submitters = g_string_new(NULL);
	g_autoptr(GHashTable) smap = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) pmap = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) wmap = g_hash_table_new_full(g_str_hash,
		g_str_equal, g_free, NULL);
	g_autoptr(GString) key = g_string_new(NULL);

	for (guint i = sorted->len; i-- > 0;) {
		const Row *r = sorted->pdata[i];
		guint st, pr, who;

		st = table_index(smap, r->state ? r->state : "", states,
				 add_state, r);
		pr = table_index(pmap, r->project ? r->project : "", projects,
				 add_project, r);
		g_string_assign(key, r->submitter ? r->submitter : "");
		g_string_append_c(key, '\n');
		g_string_append(key, r->email ? r->email : "");
		who = table_index(wmap, key->str, submitters, add_submitter, r);

		g_string_append(rows, i + 1 == sorted->len ? "\n[" : ",\n[");
		js_str(rows, r->id);
		g_string_append_c(rows, ',');
		js_str(rows, r->name);
		g_string_append_printf(rows, ",%u,%u,%u,%" G_GINT64_FORMAT
				       ",%u,%u,", r->version, r->received,
				       r->total, r->date, st, (guint)r->outcome);
		js_str(rows, r->outcome_text);
		g_string_append_printf(rows, ",%u,%u]", pr, who);
	}
	g_string_append(out, "var PGATE_SERIES={\"format_version\":1,"
			"\"outcomes\":[");
	for (guint k = 0; k <= PGATE_REPORT_OUTCOME_LAST; k++)
		g_string_append_printf(out, "%s\"%s\"", k ? "," : "",
				       pgate_report_outcome_to_string(k));
	g_string_append(out, "],\n\"states\":");
	g_string_append(out, states->len ? states->str : "[");
	g_string_append(out, "],\n\"projects\":");
	g_string_append(out, projects->len ? projects->str : "[");
	g_string_append(out, "],\n\"submitters\":");
	g_string_append(out, submitters->len ? submitters->str : "[");
	g_string_append(out, "],\n\"rows\":[");
	g_string_append_len(out, rows->str, rows->len);
	g_string_append(out, "\n]};\n");
	return out;
}

/* The page: the form (its options filled in by the script from the
 * data), the status line and the table, then the script. */
static const char search_html[] =
	"<nav><a href=\"index.html\">all series</a> \xc2\xb7 "
	"<a href=\"filters.html\">filters</a></nav>\n"
	"<h1>Search the series</h1>\n"
	"<noscript><p class=\"noscript\">This page needs JavaScript. Without "
	"it, <a href=\"filters.html\">filters.html</a> lists the series by "
	"state, result, project, month and submitter.</p></noscript>\n"
	"<form id=\"search\" class=\"search\" action=\"search.html\" "
	"method=\"get\">\n"
	"<p><label for=\"f-project\">project</label> <select id=\"f-project\" "
	"name=\"project\"><option value=\"\">any</option></select></p>\n"
	"<p><label for=\"f-state\">state</label> <select id=\"f-state\" "
	"name=\"state\"><option value=\"\">any</option></select></p>\n"
	"<p><label for=\"f-outcome\">result</label> <select id=\"f-outcome\" "
	"name=\"outcome\"><option value=\"\">any</option></select></p>\n"
	"<p><label for=\"f-submitter\">submitter</label> <input "
	"id=\"f-submitter\" name=\"submitter\" list=\"submitters\" "
	"autocomplete=\"off\"><datalist id=\"submitters\"></datalist></p>\n"
	"<p><label for=\"f-q\">text</label> <input id=\"f-q\" name=\"q\" "
	"type=\"search\" placeholder=\"subject, series id, submitter\"></p>\n"
	"<p><button type=\"submit\">Search</button> <a href=\"search.html\">"
	"clear</a></p>\n</form>\n"
	"<p id=\"status\" role=\"status\"></p>\n"
	"<div class=\"scroll\"><table class=\"series\" id=\"results\"><caption>"
	"Matching series, newest first</caption>\n<thead><tr>"
	"<th scope=\"col\">series</th><th scope=\"col\">state</th>"
	"<th scope=\"col\">result</th><th scope=\"col\">submitter</th>"
	"<th scope=\"col\" class=\"hide-narrow\">project</th>"
	"<th scope=\"col\">date</th></tr></thead>\n<tbody></tbody></table>"
	"</div>\n"
	"<script src=\"search-data.js\"></script>\n"
	"<script>\n"
	"(function () {\n"
	"'use strict';\n"
	"var D = window.PGATE_SERIES, LIMIT = 500;\n"
	"var f = document.getElementById('search');\n"
	"var status = document.getElementById('status');\n"
	"var body = document.querySelector('#results tbody');\n"
	"var SYM = {none: '\\u2013', pending: '\\u2026', pass: '\\u2713', "
	"warn: '!', fail: '\\u2717'};\n"
	"if (!D) { status.textContent = 'search-data.js did not load.'; "
	"return; }\n"
	"function el(tag, text, cls) { var e = document.createElement(tag);\n"
	"  if (text !== undefined) e.textContent = text;\n"
	"  if (cls) e.className = cls; return e; }\n"
	"function who(s) { return s[0] && s[1] ? s[0] + ' <' + s[1] + '>' : "
	"(s[0] || s[1]); }\n"
	"function proj(p) { return p[0] || '(none)'; }\n"
	"var subs = D.submitters.map(function (s) { return who(s).toLowerCase(); });\n"
	"function fill(sel, values) {\n"
	"  values.slice().sort().forEach(function (v) {\n"
	"    var o = el('option', v); o.value = v; sel.appendChild(o); }); }\n"
	"fill(f.project, D.projects.map(proj));\n"
	"fill(f.state, D.states);\n"
	"fill(f.outcome, D.outcomes);\n"
	"fill(document.getElementById('submitters'), D.submitters.map(who));\n"
	"function set(sel, v) {\n"
	"  if (v && !Array.prototype.some.call(sel.options, function (o) "
	"{ return o.value === v; })) {\n"
	"    var o = el('option', v); o.value = v; sel.appendChild(o); }\n"
	"  sel.value = v; }\n"
	"var q = new URLSearchParams(location.search);\n"
	"set(f.project, q.get('project') || '');\n"
	"set(f.state, q.get('state') || '');\n"
	"set(f.outcome, q.get('outcome') || '');\n"
	"f.submitter.value = q.get('submitter') || '';\n"
	"f.q.value = q.get('q') || '';\n"
	"function date(t) { return t ? new Date(t * 1000).toISOString()"
	".slice(0, 16).replace('T', ' ') : ''; }\n"
	"function link(href, text) { var a = el('a', text); a.href = href; "
	"return a; }\n"
	"function row(r) {\n"
	"  var o = D.outcomes[r[7]], p = D.projects[r[9]], s = D.submitters[r[10]];\n"
	"  var tr = el('tr', undefined, 'r-' + o), td;\n"
	"  tr.setAttribute('data-outcome', o);\n"
	"  tr.setAttribute('data-id', r[0]);\n"
	"  td = el('td'); td.appendChild(link('series/' + r[0] + '.html', "
	"r[1] || r[0]));\n"
	"  td.appendChild(el('br'));\n"
	"  td.appendChild(el('small', 'v' + r[2] + ', ' + r[3] + '/' + r[4]));\n"
	"  tr.appendChild(td);\n"
	"  tr.appendChild(el('td', D.states[r[6]]));\n"
	"  var b = el('span', undefined, 'b o-' + o), sym = el('span', SYM[o]);\n"
	"  sym.setAttribute('aria-hidden', 'true'); b.appendChild(sym);\n"
	"  b.appendChild(document.createTextNode(' ' + (r[8] || o)));\n"
	"  td = el('td'); td.appendChild(b); tr.appendChild(td);\n"
	"  td = el('td'); td.appendChild(link('submitter/' + s[2] + "
	"'/1.html', s[0] || s[1])); tr.appendChild(td);\n"
	"  td = el('td', undefined, 'hide-narrow');\n"
	"  td.appendChild(link('project/' + p[1] + '/1.html', proj(p)));\n"
	"  tr.appendChild(td);\n"
	"  tr.appendChild(el('td', date(r[5])));\n"
	"  return tr; }\n"
	"function query() {\n"
	"  var u = new URLSearchParams();\n"
	"  ['project', 'state', 'outcome', 'submitter', 'q'].forEach(function (k) {\n"
	"    var v = f[k].value.trim(); if (v) u.set(k, v); });\n"
	"  var s = u.toString(); return s ? '?' + s : ''; }\n"
	"function run() {\n"
	"  var p = f.project.value, st = f.state.value, o = f.outcome.value;\n"
	"  var w = f.submitter.value.trim().toLowerCase();\n"
	"  var t = f.q.value.trim().toLowerCase(), n = 0;\n"
	"  var rows = document.createDocumentFragment();\n"
	"  D.rows.forEach(function (r) {\n"
	"    if (p && proj(D.projects[r[9]]) !== p) return;\n"
	"    if (st && D.states[r[6]] !== st) return;\n"
	"    if (o && D.outcomes[r[7]] !== o) return;\n"
	"    if (w && subs[r[10]].indexOf(w) < 0) return;\n"
	"    if (t && (r[1] + '\\n' + r[0] + '\\n' + subs[r[10]]).toLowerCase()"
	".indexOf(t) < 0) return;\n"
	"    if (++n <= LIMIT) rows.appendChild(row(r)); });\n"
	"  body.textContent = ''; body.appendChild(rows);\n"
	"  status.textContent = n + ' of ' + D.rows.length + ' series match' +\n"
	"    (n > LIMIT ? '; the newest ' + LIMIT + ' are shown' : '') + '.';\n"
	"  status.setAttribute('data-matches', n); }\n"
	"function update() {\n"
	"  run();\n"
	"  try { history.replaceState(null, '', location.pathname + query()); }\n"
	"  catch (e) { /* a browser that keeps a file's URL as it is */ } }\n"
	"f.addEventListener('submit', function (e) {\n"
	"  var s = query(); e.preventDefault();\n"
	"  try { history.replaceState(null, '', location.pathname + s); run(); }\n"
	"  catch (x) { location.search = s; } });\n"
	"f.addEventListener('change', update);\n"
	"f.addEventListener('input', update);\n"
	"run();\n"
	"})();\n"
	"</script>\n";

GString *
pgate_report_site__search_page(void)
{
	GString *out = g_string_sized_new(sizeof search_html + 1024);

	pgate_report_site__head(out, "", "search");
	g_string_append(out, search_html);
	pgate_report_site__foot(out);
	return out;
}
