#!/bin/bash
# t0730-site-versions - between versions: the demo's multiplication
# series arrives v1, then v2, then v3, each tested before the next comes,
# so that each version was applied; v3's page has the interdiff of the
# trees v2 and v3 applied to, the range-diff pairing of their patches
# (libgit2, in-process), and the sentence that compares their results.
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

demo_setup t0730
# checks are queued (and never sent: nothing listens there)
printf '[patchwork]\nurl = http://127.0.0.1:9/\nproject = calc\n' >>"$T/conf"

# the list in the three parts gen-demo.sh writes: the multiplication's
# v1, its v2 (which does not build), the rest
for n in 1 2 3; do
	P ingest "$T/d/list-$n.mbox" >/dev/null && P run -q >/dev/null 2>&1
	ok "part $n ingested and run" true
done
P series list --all --json >"$T/all.json"
V3=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if s["name"] == "calc: multiplication" and s["version"] == 3][0]')
V2=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if s["name"] == "calc: multiplication" and s["version"] == 2][0]')
P series show --json "$V2" >"$T/v2.json"
is "$(jq_py "$T/v2.json" '" ".join(sorted(set(v.get("status", "?") for k, v in d["series"][0]["stages"].items() if k.startswith("apply/"))))')" \
	ok "v2 was applied before v3 came"
ok "report html" P report html "$T/html"
page=$(cat "$T/html/series/$V3.html")
like "$page" 'Since the version before' "v3's page compares it with v2"
like "$page" 'Interdiff of the applied' "with the interdiff of the applied trees"
like "$page" 'diff --git a/calc.c b/calc.c' "which is a diff of the code"
like "$page" '[0-9]+: [0-9a-f]{7} [=!] [0-9]+: [0-9a-f]{7} ' "and the patches paired, range-diff style"
like "$page" 'class="compare">v3: build fixed since v2<' \
	"and the sentence that compares the results"
like "$(cat "$T/html/series/$V2.html")" 'class="compare">v2: build fails, it passed in v1<' \
	"v2's page says it broke what v1 built"
"$PY" - "$T/html/series/$V3.html" >"$T/rd.txt" <<'PY'
import html, re, sys
t = open(sys.argv[1]).read()
m = re.search(r'<h3>Patches paired \(range-diff\)</h3><pre class="diff">(.*?)</pre>', t, re.S)
print(html.unescape(m.group(1)) if m else "none")
PY
diag <"$T/rd.txt"
P outbox list --json >"$T/outbox.json"
like "$(cat "$T/outbox.json")" 'success[^"]*; v3: build fixed since v2' \
	"the same sentence ends the description of v3's check"
is "$("$PY" "$SRCDIR/tests/report/site/site-check.py" links "$T/html")" "" "no broken link"

done_testing
