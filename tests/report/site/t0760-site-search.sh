#!/bin/bash
# t0760-site-search - search.html, the combined filters that work
# without a server (issue 44): opened from disk (file://, where a
# browser fetches no JSON), with a query string, in headless chromium,
# it lists exactly the series that series list/show --json say each
# filter (project, state, result, submitter, text) and their
# combination should, newest first; typing puts the form in the URL; its
# data, search-data.js, is a script that no subject can break out of (a
# delivered mail whose subject closes the script and adds an image with
# a handler shows as text, and runs nothing); the page strict-parses,
# fits 390 px, says what to use without JavaScript, and a `report html
# --series ID` update puts the series' new state in the data.
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

"$PY" -c 'import html5lib' 2>/dev/null ||
	skip_all "needs python3-html5lib (scripts/install-deps)"
demo_setup t0760
H=$T/html
P ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"
# a hostile subject, on a list of its own (a second project), whose id
# has a line separator (U+2028: it ends a line of a script in older
# engines; the store keeps it there, not in a subject) and an &
"$PY" - >"$T/hostile.eml" <<'PY'
import sys
from email.header import Header
sys.stdout.reconfigure(encoding="utf-8")
subj = "[PATCH] net: </script><img src=x onerror=document.documentElement.classList.add('pwned')> & Evil-Fix"
print("From: Eve <eve@evil.example>")
print("To: net@lists.other.example")
print("List-Id: <net\u2028&lists.other.example>")
print("Subject: " + Header(subj, "utf-8").encode())
print("Date: Tue, 3 Dec 2024 23:00:00 +0000")
print("Message-ID: <hostile-search@evil.example>")
print("MIME-Version: 1.0")
print("Content-Type: text/plain; charset=UTF-8")
print()
print("Fix.")
print()
print("Signed-off-by: Eve <eve@evil.example>")
print("---")
print(" README | 1 +")
print(" 1 file changed, 1 insertion(+)")
print()
print("diff --git a/README b/README")
print("--- a/README")
print("+++ b/README")
print("@@ -1 +1,2 @@")
print(" calc")
print("+evil")
PY
ok "patchgate deliver stores the hostile mail" P deliver <"$T/hostile.eml"
P run -q >/dev/null 2>&1
ok "report html" P report html "$H"

P series list --all --json >"$T/all.json"
shows() {
	for id in $(jq_py "$T/all.json" '" ".join(s["id"] for s in d["series"])'); do
		P series show --json "$id"
	done >"$T/shows.json"
}
shows
EVIL=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if "onerror" in s["name"]][0]')
like "$EVIL" '^s[0-9a-f]+$' "the hostile series is stored"

# expect QUERY: the series that the query should list, newest first, as
# series list/show --json say (the site's state: the pipeline's, a newer
# version's supersession before a pass came to it; the result: as
# index.json says, which t0700 checks)
cat >"$T/expect.py" <<'PY'
import json, sys, urllib.parse
shows = [json.loads(l)["series"][0] for l in open(sys.argv[1])]
outcome = {s["id"]: s["outcome"] for s in json.load(open(sys.argv[2]))["series"]}
q = dict(urllib.parse.parse_qsl(sys.argv[3]))
def state(s):
    st = s["stages"].get("pipeline", {}).get("state", "new")
    return "superseded" if st in ("new", "waiting") and s["superseded_by"] else st
def who(s):
    n, e = s["submitter"]["name"], s["submitter"]["email"]
    return "%s <%s>" % (n, e) if n and e else n or e
out = []
for s in sorted(shows, key=lambda s: (s["date"], s["id"]), reverse=True):
    if "project" in q and (s["project"] or "(none)") != q["project"]:
        continue
    if "state" in q and state(s) != q["state"]:
        continue
    if "outcome" in q and outcome[s["id"]] != q["outcome"]:
        continue
    if "submitter" in q and q["submitter"].lower() not in who(s).lower():
        continue
    if "q" in q and q["q"].lower() not in "\n".join((s["name"], s["id"], who(s))).lower():
        continue
    out.append(s["id"])
print(" ".join(out))
PY
expect() { "$PY" "$T/expect.py" "$T/shows.json" "$H/index.json" "$1"; }
vals() {  # the values of a filter, space-separated, URL-encoded
	"$PY" - "$T/shows.json" "$1" <<'PY'
import json, sys, urllib.parse
shows = [json.loads(l)["series"][0] for l in open(sys.argv[1])]
k = sys.argv[2]
def state(s):
    st = s["stages"].get("pipeline", {}).get("state", "new")
    return "superseded" if st in ("new", "waiting") and s["superseded_by"] else st
v = {"project": lambda s: s["project"] or "(none)", "state": state,
     "submitter": lambda s: "%s <%s>" % (s["submitter"]["name"], s["submitter"]["email"])}[k]
print(" ".join(sorted(urllib.parse.quote(x, safe="") for x in set(map(v, shows)))))
PY
}

# --- the data file: a script no subject breaks out of -------------------
ok "search.html and search-data.js" test -s "$H/search.html" -a -s "$H/search-data.js"
is "$(LC_ALL=C grep -c '[<>&]' "$H/search-data.js")" 0 "search-data.js has no < > & (each is \\u003c ...)"
is "$(LC_ALL=C grep -c "$(printf '\342\200[\250\251]')" "$H/search-data.js")" 0 "nor a raw U+2028 or U+2029"
"$PY" - "$H/search-data.js" "$H/index.json" "$T/all.json" >"$T/data.out" 2>&1 <<'PY'
import json, sys
t = open(sys.argv[1], encoding="utf-8").read()
pre, post = "var PGATE_SERIES=", ";\n"
assert t.startswith(pre) and t.endswith(post), "not one assignment"
d = json.loads(t[len(pre):-len(post)])
idx = json.load(open(sys.argv[2]))["series"]
names = {s["id"]: s["name"] for s in json.load(open(sys.argv[3]))["series"]}
got = [(r[0], r[1], r[2], d["states"][r[6]], d["outcomes"][r[7]],
        d["projects"][r[9]][0], d["submitters"][r[10]][1]) for r in d["rows"]]
want = [(s["id"], s["name"], s["version"], s["state"], s["outcome"],
         s["project"], s["email"]) for s in idx]
print("same as index.json" if got == want else "differs: %r %r" % (got, want))
print("names as stored" if all(names[r[0]] == r[1] for r in d["rows"]) else "names differ")
PY
like "$(cat "$T/data.out")" 'same as index\.json' \
	"search-data.js: one assignment of JSON, the rows of index.json, newest first"
like "$(cat "$T/data.out")" 'names as stored' "every subject as stored, the hostile one included"
is "$("$PY" "$CHECK" parse "$H")" "" "html5lib: no parse error in any page, search.html included"
is "$("$PY" "$CHECK" links "$H")" "" "no local link is broken (search-data.js is there)"
like "$(cat "$H/search.html")" '<noscript><p[^>]*>This page needs JavaScript\. Without it, <a href="filters\.html">' \
	"without JavaScript the page says to use filters.html"
like "$(grep -o '<nav>.*</nav>' "$H/index.html" | head -1)" 'href="search\.html"' "index.html's nav links it"
like "$(cat "$H/filters.html")" 'href="search\.html"' "and filters.html"

# --- in chromium, from a file ---------------------------------------------
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if [ -z "$CHROMIUM" ] || [ "${PGATE_TEST_SANITIZED:-0}" = 1 ]; then
	skip "search.html in chromium" "needs chromium, in the plain build"
	done_testing
	exit 0
fi
found() {  # QUERY: the series search.html?QUERY lists, opened by file://
	# (its DOM in $T/last.dom)
	browser --virtual-time-budget=3000 --dump-dom "file://$H/search.html${1:+?$1}" >"$T/last.dom"
	"$PY" -c 'import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"<tbody>(.*?)</tbody>", t, re.S)
print(" ".join(re.findall(r"data-id=\"([^\"]*)\"", m.group(1))) if m else "no table")' "$T/last.dom"
}
check() {  # QUERY WHAT
	local want got
	want=$(expect "$1")
	got=$(found "$1")
	[ -n "$want" ] || { fail "$2: the store has no series for it"; return 1; }
	is "$got" "$want" "$2 ($(echo $want | wc -w) series)"
}
total=$(jq_py "$T/all.json" 'len(d["series"])')
check "" "no filter: every series, newest first"
is "$(grep -o 'data-matches="[0-9]*"' "$T/last.dom")" "data-matches=\"$total\"" "and the status counts them"
for k in project state submitter; do
	for v in $(vals $k); do
		check "$k=$v" "$k=$("$PY" -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$v")"
	done
done
for o in pass fail pending; do
	check "outcome=$o" "outcome=$o"
done
check "q=MULTIPLICATION" "text: a subject's substring, in another case"
check "q=dave%40DEMO" "text: the submitter's address"
check "q=$EVIL" "text: a series id"
combo="project=calc.lists.demo.example.org&state=done&submitter=alice&q=Multi"
ok "the combination's parts each select more than it does" "$PY" - <<PY
import subprocess, sys
def e(q): return subprocess.run([sys.executable, "$T/expect.py", "$T/shows.json", "$H/index.json", q], capture_output=True, text=True).stdout.split()
whole = e("$combo")
parts = [e(p) for p in "$combo".split("&")]
sys.exit(0 if whole and all(len(p) > len(whole) for p in parts) else 1)
PY
check "$combo" "project, state, submitter and text combined (AND)"
check "state=done&q=calc" "state and text combined"

# the hostile series: text, and nothing ran
check "q=onerror" "the hostile subject is found"
d=$T/hostile.dom
cp "$T/last.dom" "$d"
ok "and shown as text" grep -qF "&lt;/script&gt;&lt;img src=x onerror=document.documentElement.classList.add('pwned')&gt; &amp; Evil-Fix</a>" "$d"
ok "its project too, the line separator and & included" grep -qF "$(printf 'net\342\200\250&amp;lists.other.example</a>')" "$d"
is "$("$PY" "$CHECK" dom "$d" search | sed -n 's/^\(scripts\|event-handlers\|javascript-links\): //p' | tr '\n' ' ')" \
	"2 0 0 " "no element from it: the page's own 2 scripts, no handler, no javascript: link"
unlike "$(cat "$d")" '<img|<html[^>]*pwned' "no image, and its handler never ran"

# the URL reflects the form; the form, the URL
probe() {  # QUERY JS: search.html?QUERY with JS run after its own
	# script, which sets <body data-probe>: what that is
	"$PY" - "$H/search.html" "$2" >"$H/search.probe-test.html" <<'PY'
import sys
page, js = open(sys.argv[1]).read(), sys.argv[2]
print(page.replace("</body>", '<script>var f = document.getElementById("search");\n'
      'document.body.setAttribute("data-probe", ' + js + ');</script></body>'), end="")
PY
	browser --virtual-time-budget=3000 --dump-dom "file://$H/search.probe-test.html${1:+?$1}" |
		"$PY" -c 'import html, re, sys
m = re.search(r"<body[^>]*data-probe=\"([^\"]*)\"", sys.stdin.read())
print(html.unescape(m.group(1)) if m else "none")'
	rm -f "$H/search.probe-test.html"
}
is "$(probe "" '(f.state.value = "done", f.state.dispatchEvent(new Event("change", {bubbles: true})),
	f.q.value = "Multi", f.q.dispatchEvent(new Event("input", {bubbles: true})),
	location.search + " " + document.querySelectorAll("#results tbody tr").length)')" \
	"?state=done&q=Multi $(expect 'state=done&q=Multi' | wc -w)" \
	"typing puts the form in the URL's query (a link to the view), and filters"
q="project=calc.lists.demo.example.org&state=done&outcome=fail&submitter=Bob&q=Speed%20up"
is "$(probe "$q" '[f.project.value, f.state.value, f.outcome.value, f.submitter.value, f.q.value].join("|")')" \
	"calc.lists.demo.example.org|done|fail|Bob|Speed up" "a query fills the form back in"
check "$q" "and lists what it says"

# 390 px
for q in "" "q=onerror"; do
	l=$(layout search.html 390 "$q")
	[ "$l" = none ] && { ok "search.html?$q at 390 px: measured" false; continue; }
	is "$(lf "$l" scroll)" "$(lf "$l" width)" "search.html?$q at 390 px: no wider than the window"
	is "$(lf "$l" out)" "" "search.html?$q at 390 px: nothing sticks out"
done

# --- an update of one series ----------------------------------------------
# a site an older build wrote (its cache knows no search-data.js): the
# first update writes the search page, though no row changed
cp -r "$H" "$T/old-html"
rm "$T/old-html/search.html" "$T/old-html/search-data.js"
grep -v "^P	search-data\.js	" "$H/.pgate-site/cache" >"$T/old-html/.pgate-site/cache"
ok "an update of an older build's site" P report html --series "$EVIL" "$T/old-html"
ok "writes search.html and search-data.js" cmp "$H/search-data.js" "$T/old-html/search-data.js"
# Mallory's series awaits approval (the demo trusts demo.example.org)
MAL=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if s["submitter"]["email"].startswith("mallory@")][0]')
is "$(found "q=$MAL")" "$MAL" "Mallory's series is found before the update"
unlike "$(grep -o '<tbody>.*</tbody>' "$T/last.dom")" '>rejected<' "and is not rejected yet"
P reject "$MAL" >/dev/null
P run -q >/dev/null 2>&1
shows
want=$("$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    if s["id"] == sys.argv[2]:
        print(s["stages"]["pipeline"]["state"])' "$T/shows.json" "$MAL")
is "$want" rejected "series show: Mallory's series is rejected"
ok "report html --series ID" P report html --json --series "$MAL" "$H"
is "$("$PY" - "$H/search-data.js" "$MAL" <<'PY'
import json, sys
t = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(t[len("var PGATE_SERIES="):-2])
print([d["states"][r[6]] for r in d["rows"] if r[0] == sys.argv[2]][0])
PY
)" "$want" "search-data.js has its new state"
check "state=rejected" "and search.html?state=rejected lists it"

done_testing
