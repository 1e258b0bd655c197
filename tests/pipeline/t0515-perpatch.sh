#!/bin/bash
# t0515-perpatch - a CI job run per patch reports each patch's own verdict
# to Patchwork: the demo's v3 multiplication series, whose first patch
# adds the operator without its test case and whose second adds the case,
# against a check that wants every operator tested: patch 1 fails, patch
# 2 passes.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0515.XXXXXX) && chmod 755 "$W"
"$PY" - "$T/d/list.mbox" "$T/seed.json" <<'PY'
import json, mailbox, sys
seed = {"users": [{"username": "ci", "email": "ci@demo.example.org", "token": "tok-ci-15"}],
        "projects": [{"linkname": "calc", "name": "calc", "listid": "calc.lists.demo.example.org",
                      "listemail": "calc@lists.demo.example.org", "maintainers": ["ci"]}],
        "patches": [{"project": "calc", "msgid": m["Message-ID"].strip(), "name": str(m["Subject"]),
                     "submitter": "someone@demo.example.org"} for m in mailbox.mbox(sys.argv[1])
                    if "[PATCH" in str(m["Subject"]) and " 0/" not in str(m["Subject"])
                    and not str(m["Subject"]).startswith("Re:")]}
json.dump(seed, open(sys.argv[2], "w"))
PY
fake_start pw patchwork.py --seed "$T/seed.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null; rm -rf '$W'"
PW=$fake_url
printf 'tok-ci-15\n' >"$T/token" && chmod 600 "$T/token"
cat >"$T/conf" <<EOF
[apply]
repo = $T/d/repo.git
[trust]
trusted = alice@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
mode = patch
commands = tested: sh -c 'grep -q "6 x 7" tests/cases || ! grep -q "mul(" calc.c'
work_root = $W
[patchwork]
url = $PW/
project = calc
token_file = $T/token
user = ci
[apply]
repo = $T/d/repo.git
[trust]
trusted = alice@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
mode = patch
commands = tested: sh -c 'grep -q "6 x 7" tests/cases || ! grep -q "mul(" calc.c'
work_root = $W
[patchwork]
url = $PW/
project = calc
token_file = $T/token
user = ci
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
P ingest "$T/d/list.mbox" >/dev/null
ok "run" P run -q
v3=$(P series list --json | "$PY" -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["series"] if s["version"] == 3][0])')
like "$(P series show --json "$v3")" '"commits": *\[\{' "the job ran per commit"
curl -s "$PW/_fake/checks" >"$T/checks.json"
curl -s "$PW/_fake/state" >"$T/pw.json"
is "$("$PY" - "$T/checks.json" "$T/pw.json" "$(P series show --json "$v3")" <<'PY'
import json, sys
checks = json.load(open(sys.argv[1]))
ids = {p["msgid"].strip("<>"): p["id"] for p in json.load(open(sys.argv[2]))["patches"]}
s = json.loads(sys.argv[3])["series"][0]
out = []
for p in s["patches"]:
    mine = [c for c in checks if c["patch"] == ids[p["msgid"]] and c["context"] == "build"]
    out.append("%d:%s" % (p["number"], mine[-1]["state"] if mine else "none"))
print(" ".join(out))
PY
)" "1:fail 2:success" "each patch gets its own verdict"
done_testing
