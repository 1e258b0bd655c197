#!/bin/bash
# t0750-site-index - the index a maintainer scans instead of Patchwork's
# list (issue 44, "Missing"): each series' row has its state, a badge per
# check context (every apply target and CI job, as Patchwork has one
# context each) with its outcome, Patchwork's S/W/F counts and the A/R/T
# counts of its review trailers; superseded and merged series are hidden
# until a switch shows them (a checkbox, no script: checked in headless
# chromium); the table comes before the 30-day chart, so that the chart
# never pushes it off the first screen.  A series page links the series'
# mbox (what git am takes, with the review trailers) and gives the git
# fetch line of each published result, pushed here to a real git daemon
# on loopback, whose push URL holds a password that appears nowhere: not
# on the site, not in the CI job's files, not in the store; and it lists
# the replies to the series' mails, linked into the archive.
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

demo_setup t0750
# the demo's list is in no archive patchgate knows (no link by default:
# t0700); the archive links checked here are lore's by configuration
printf '[report]\narchive_url = https://lore.kernel.org/r/{msgid}\n' >>"$T/conf"
P ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"
P run -q >/dev/null 2>&1
ok "report html" P report html "$T/html"
P series list --all --json >"$T/all.json"
for id in $(jq_py "$T/all.json" '" ".join(s["id"] for s in d["series"])'); do
	P series show --json "$id"
done >"$T/shows.json"

# what the index's rows say, and what the store says they should
"$PY" - "$T/html/index.html" "$T/shows.json" >"$T/rows.out" 2>&1 <<'PY'
import html.parser, json, re, sys

class Rows(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.chk, self.text = [], None, None, None, ""
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "tr" and "data-outcome" in a:
            self.row = {"class": a.get("class", ""), "cells": [], "checks": {}}
        elif tag == "td" and self.row is not None:
            self.cell = ""
        elif tag == "a" and self.row is not None and not self.row.get("id"):
            m = re.match(r"series/(s[0-9a-f]+)\.html", a.get("href", ""))
            if m:
                self.row["id"] = m.group(1)
        elif tag == "span" and self.row is not None and "chk" in a.get("class", ""):
            self.chk = (a.get("title", ""), re.search(r"o-(\w+)", a["class"]).group(1))
    def handle_endtag(self, tag):
        if tag == "td" and self.row is not None and self.cell is not None:
            self.row["cells"].append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None
        elif tag == "span" and self.chk:
            label = self.chk[0].rsplit(":", 1)[0]
            self.row["checks"][label] = self.chk[1]
            self.chk = None
    def handle_data(self, d):
        if self.cell is not None:
            self.cell += d

p = Rows()
p.feed(open(sys.argv[1]).read())
rows = {r["id"]: r for r in p.rows}
want = {}
for line in open(sys.argv[2]):
    s = json.loads(line)["series"][0]
    checks = {}
    applies = [k for k in s["stages"] if k.startswith("apply/")]
    for k in applies:
        st = s["stages"][k].get("status")
        label = "apply" if len(applies) == 1 else "apply@" + k.split("/", 1)[1]
        checks[label] = "pass" if st in ("ok", "already-applied") else "fail"
    for k, v in s["stages"].items():
        if k.startswith("ci/"):
            checks[v["job"]] = {"success": "pass", "fail": "fail"}.get(v.get("verdict"), "?")
    art = [0, 0, 0]
    for pt in s["patches"]:
        for t in pt["trailers"]:
            for i, n in enumerate(("acked-by", "reviewed-by", "tested-by")):
                art[i] += t["name"].lower() == n
    state = s["stages"]["pipeline"]["state"] if "pipeline" in s["stages"] else "new"
    want[s["id"]] = (checks, "%d/%d/%d" % tuple(art), state)
print("rows", len(rows), "series", len(want))
bad = []
for sid, (checks, art, state) in want.items():
    r = rows.get(sid)
    if r is None:
        bad.append((sid, "no row"))
        continue
    if r["checks"] != checks:
        bad.append((sid, "checks", r["checks"], checks))
    cells = r["cells"]
    if cells[1] != state:
        bad.append((sid, "state", cells[1], state))
    if cells[4] != art:
        bad.append((sid, "A/R/T", cells[4], art))
    n = [list(checks.values()).count(o) for o in ("pass", "warn", "fail")]
    if checks and not cells[3].endswith("S%d W%d F%d" % tuple(n)):
        bad.append((sid, "S/W/F", cells[3], n))
    old = state.startswith("superseded") or state == "merged"
    if old != (" old" in " " + r["class"]):
        bad.append((sid, "old", r["class"], state))
print("bad", bad)
PY
like "$(cat "$T/rows.out")" '^rows 7 series 7$' "the index has a row per series"
like "$(cat "$T/rows.out")" 'bad \[\]$' \
	"each row: its state, a badge per apply target and CI job with its outcome, S/W/F and A/R/T as the store says"
like "$(grep -o 'title="apply: [a-z]*">apply [^<]*</span> <span class="b chk o-fail" title="build: fail">build' "$T/html/index.html")" \
	'apply: pass' "the broken addition: apply passed, build failed, side by side"
like "$(grep -o '<td class="art">[0-9/]*</td>' "$T/html/index.html" | sort -u | tr '\n' ' ')" '0/1/0' \
	"the reviewed v3 counts its Reviewed-by (A/R/T 0/1/0)"
is "$(grep -c '<tr class="[^"]* old"' "$T/html/index.html")" 2 "the two superseded versions are marked old"
like "$(cat "$T/html/index.html")" '<input type="checkbox" id="show-old" class="show-old"><label for="show-old">show the 2 superseded and merged series</label>' \
	"a switch above the table says how many it hides"
like "$(cat "$T/html/site.css")" '\.show-old:not\(:checked\)~\.scroll tr\.old\{display:none\}' \
	"and the style sheet hides them until it is on"
"$PY" - "$T/html/index.html" <<'PY'
import sys
s = open(sys.argv[1]).read()
t, c = s.find('<table class="series"'), s.find("<svg")
sys.exit(0 if 0 <= t < c else 1)
PY
ok "the table comes before the chart" test $? = 0

# in a browser: hidden by default, shown by the switch
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if [ -z "$CHROMIUM" ] || [ "${PGATE_TEST_SANITIZED:-0}" = 1 ]; then
	skip "in chromium the superseded rows are hidden" "needs chromium, in the plain build"
	skip "and the switch shows them" "needs chromium, in the plain build"
else
	sed 's|</body>|<script>var o = document.querySelectorAll("tr.old"), r = [];\
for (var i = 0; i < o.length; i++) r.push(getComputedStyle(o[i]).display);\
document.getElementById("show-old").click();\
for (var i = 0; i < o.length; i++) r.push(getComputedStyle(o[i]).display);\
document.body.setAttribute("data-shown", r.join(" "));</script></body>|' \
		"$T/html/index.html" >"$T/html/index.switch-test.html"
	prof=$(mktemp -d "$T/chrome.XXXXXX")
	shown=$(timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$prof" \
		--virtual-time-budget=3000 --dump-dom "file://$T/html/index.switch-test.html" 2>>"$T/chromium.log" |
		sed -n 's/.*data-shown="\([^"]*\)".*/\1/p')
	is "${shown% table-row table-row}" "none none" "in chromium the superseded rows are hidden"
	is "${shown#none none }" "table-row table-row" "and the switch shows them"
fi

# --- the series page: its replies, linked into the archive --------------
v3=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if s["version"] == 3][0]')
like "$(cat "$T/html/series/$v3.html")" '<h2 id="h-replies">Replies \(1\)</h2>' \
	"v3's page counts the replies to its mails: the review, not its own patches (which reply to its cover)"
like "$(cat "$T/html/series/$v3.html")" '<li>2024-12-03 17:00 Maintainer: <a href="https://lore\.kernel\.org/r/demo-review-1@demo\.example\.org">Re: \[PATCH v3 1/2\]' \
	"each with its date, author and subject, linked to its archive copy"

# --- the series page: its mbox, and where to fetch its result -----------
command -v git >/dev/null && [ -x "$(git --exec-path)/git-daemon" ] ||
	{ skip_all_rest=1; }
if [ -n "${skip_all_rest:-}" ]; then
	skip "the series page links the mbox" "needs git daemon"
else
	mkdir -p "$T/gd" && git init -q --bare "$T/gd/ci.git"
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	git daemon --reuseaddr --listen=127.0.0.1 --port="$port" --base-path="$T/gd" \
		--export-all --enable=receive-pack --detach --pid-file="$T/gd.pid" "$T/gd" ||
		bail "git daemon did not start"
	TAP_CLEANUP="$TAP_CLEANUP; kill \$(cat '$T/gd.pid') 2>/dev/null"
	for _ in $(seq 50); do git ls-remote "git://127.0.0.1:$port/ci.git" >/dev/null 2>&1 && break; sleep 0.1; done
	sed "/^\[apply\]/a push_url = git://ci:pw-1f2e3d@127.0.0.1:$port/ci.git" "$T/conf" >"$T/conf-push"
	Q() { pg --state "$T/s2" --config "$T/conf-push" "$@"; }
	Q ingest "$T/d/list.mbox" >/dev/null
	ok "a pass that pushes to the git daemon" Q run -q
	ok "report html" Q report html "$T/html2"
	page=$T/html2/series/$v3.html
	like "$(cat "$page")" "<a href=\"$v3\\.mbox\" download>" "v3's page links its mbox"
	git clone -q "$T/d/repo.git" "$T/am" && git -C "$T/am" checkout -q \
		"$(sed -n 's/^base-commit: //p' "$T/html2/series/$v3.mbox" | head -1)"
	ok "git am applies it" git -C "$T/am" -c user.name=t -c user.email=t@t.invalid am -q "$T/html2/series/$v3.mbox"
	like "$(git -C "$T/am" log -1 --format=%B HEAD~1)" 'Reviewed-by: Maintainer <maint@demo.example.org>' \
		"with the review trailer a reply gave"
	ref=$(jq_py "$T/html2/series/$v3.json" '[v["ref"] for k, v in d["series"][0]["stages"].items() if k.startswith("apply/")][0]')
	like "$(cat "$page")" "<code>git fetch git://127\\.0\\.0\\.1:$port/ci\\.git $ref</code>" \
		"and the git fetch line of its published result, without the user and password"
	ok "which fetches what was tested" git -C "$T/am" fetch -q "git://127.0.0.1:$port/ci.git" "$ref"
	is "$(grep -rl 'pw-1f2e3d' "$T/html2" "$T/s2" "$W" 2>/dev/null | wc -l)" 0 \
		"the push URL's password is nowhere: the site, the store, the CI job's files"
fi
done_testing
