#!/bin/bash
# t0520-demo - the bundled demo (fixtures/gen-demo.sh) through the whole
# pipeline on the embedded defaults, as scripts/demo runs it: every
# series ends where the demo says it does, the sandbox keeps the
# untrusted series' Makefile off the network once it is approved, and the
# HTML report shows them all.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
ok "gen-demo.sh" bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0520.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="rm -rf '$W'"
cat >"$T/conf" <<EOF
[apply]
repo = $T/d/repo.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
commands = build: make; check: make check
timeout = 120
work_root = $W
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
P ingest "$T/d/list.mbox" >"$T/ingest.out"
is "$?" 0 "ingest"
like "$(cat "$T/ingest.out")" '^kinds: 10 patches, 3 covers, 1 reply, 0 pull requests, 0 other$' \
	"ingest counts each kind in words that agree with the number (1 reply)"
ok "run" P run -q
# nothing reports anywhere in the demo: run says so, not "0 sent, 0 ..."
P run --series "$(P series list --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["id"])')" 2>"$T/run.err"
like "$(cat "$T/run.err")" 'reports: none \(no \[patchwork\] or \[email\] is configured\)$' \
	"run: 'reports: none', and why, when nothing reports"
unlike "$(cat "$T/run.err")" '0 sent' "not a row of zeros"

# name -> pipeline state and CI verdicts, per series
summary() {
	P series list --all --json >"$T/list.json"
	for id in $(jq_py "$T/list.json" '" ".join(s["id"] for s in d["series"])'); do
		P series show --json "$id"
	done | "$PY" -c '
import json, sys
out = []
for l in sys.stdin:
    s = json.loads(l)["series"][0]
    st = s["stages"]
    ci = sorted(v.get("verdict") or v.get("state") for k, v in st.items() if k.startswith("ci/"))
    out.append("v%d %s: %s %s" % (s["version"], s["name"], st.get("pipeline", {}).get("state"), ",".join(ci)))
print("\n".join(sorted(out)))'
}
is "$(summary)" "v1 build: faster test target: awaiting-approval 
v1 calc: add a modulo operator: apply-failed 
v1 calc: multiplication: superseded 
v1 calc: speed up addition: done fail
v1 docs: describe the command line: done success
v2 calc: multiplication: superseded 
v3 calc: multiplication: done success" "every demo series ends where it should"

like "$(P series show "$(jq_py "$T/list.json" '[s["id"] for s in d["series"] if s["version"] == 3][0]')")" \
	'supersedes .* \(v2\) — rule in-reply-to' "v3 supersedes v2 by in-reply-to"
like "$(P series show "$(jq_py "$T/list.json" '[s["id"] for s in d["series"] if s["name"].startswith("calc: speed")][0]')")" \
	'ci/master/build: done fail - step check failed' "the broken addition fails make check"

# approved by a maintainer's reply ([trust] approvers), the untrusted
# Makefile runs, but in the sandbox: no network
evil=$(jq_py "$T/list.json" '[s["id"] for s in d["series"] if s["name"].startswith("build:")][0]')
emid=$(P series show --json "$evil" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["patches"][0]["msgid"])')
"$PY" - "$T/conf" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read().replace("[trust]\ntrusted = *@demo.example.org\n", "[trust]\ntrusted = *@demo.example.org\napprovers = maint@demo.example.org\n", 1)
assert "approvers" in s
open(p, "w").write(s)
PY
reply() {	# reply FROM KEYWORD MSGID
	printf 'From: %s\nTo: calc@lists.demo.example.org\nSubject: Re: [PATCH] build: faster test target\nDate: Wed, 4 Dec 2024 10:00:00 +0000\nMessage-ID: <%s@demo.example.org>\nIn-Reply-To: <%s>\nReferences: <%s>\n\n> quoted: patchgate: approve\n\n%s\n' \
		"$1" "$RANDOM$RANDOM" "$3" "$3" "$2"
}
reply "Mallory <mallory@untrusted.example.net>" "patchgate: approve" "$emid" | P deliver
ok "run" P run -q
like "$(P series show "$evil")" 'pipeline: awaiting-approval' "the sender's own 'approve' reply counts for nothing"
reply "Maintainer <maint@demo.example.org>" "  Patchgate: Approve " "$emid" | P deliver
ok "run" P run -q
like "$(P series show --json "$evil")" '"approved_by": *"maint@demo.example.org \(reply' "a maintainer's reply approves it"
out=$(P series show --json "$evil")
like "$out" '"verdict": *"fail"' "the approved series ran and failed"
like "$(jq_py <(echo "$out") '[v.get("summary") for k, v in d["series"][0]["stages"].items() if k.startswith("ci/")][0]')" \
	'curl: \(7\)|Could not resolve|Failed to connect|Couldn.t connect|Network is unreachable' \
	"its download failed: the sandbox has no network"

# (freed memory filled by glibc, so that a reason read after its series
# was freed shows)
ok "report html" env MALLOC_PERTURB_=85 "$PATCHGATE" --state "$T/s" --config "$T/conf" report html "$T/html"
html=$(cat "$T/html/index.html")
like "$html" 'calc: multiplication' "the page lists the series"
# every link of every chain, on the newer series' page, with the reason
# of that link (the rule by which the newer of the two supersedes the
# older); the site itself is tested in tests/report/site
P series list --all --json >"$T/all.json"
"$PY" - "$T/all.json" "$T/html" >"$T/chains.out" <<'PY'
import html, json, sys
ss = {s["id"]: s for s in json.load(open(sys.argv[1]))["series"]}
deep = 0
for s in ss.values():
    cur, depth = s, 0
    while cur["supersedes"]:
        old = ss[cur["supersedes"]]
        page = open("%s/series/%s.html" % (sys.argv[2], cur["id"])).read()
        link = '<a href="%s.html">v%d</a>' % (old["id"], old["version"])
        rule = "linked to the version before by: " + html.escape(cur["version_link_reason"])
        if link not in page or rule not in page:
            print("missing: %s -> %s (%s)" % (cur["id"], old["id"], cur["version_link_reason"]))
        depth += 1
        deep += depth > 1
        cur = old
print("second links or later: %d" % deep)
PY
is "$(grep missing "$T/chains.out")" "" "each link of a chain shows its own reason"
like "$(cat "$T/chains.out")" 'second links or later: [1-9]' "(chains of more than one link among them)"
like "$html" '<svg' "and a timeline"

done_testing
