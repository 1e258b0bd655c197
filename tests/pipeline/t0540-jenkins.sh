#!/bin/bash
# t0540-jenkins - the pipeline with the Jenkins backend, against
# tests/fakes/jenkins.py: results are pushed where Jenkins fetches them,
# every applied series is triggered once with its parameters, later
# passes follow the queue item to the build and its result, and a series
# superseded while its build is queued gets the queue item cancelled.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
git init -q --bare "$T/ci.git"
printf 'tok-jenkins-42\n' >"$T/token" && chmod 600 "$T/token"
PARAMS='{"PATCHGATE_REPO_URL": "", "PATCHGATE_REF": "", "PATCHGATE_COMMIT": "",
 "PATCHGATE_BASE_COMMIT": "", "PATCHGATE_SERIES": "", "PATCHGATE_VERSION": "",
 "PATCHGATE_BRANCH": "", "PATCHGATE_MSGID": "", "PATCHGATE_TRIGGER": ""}'
cat >"$T/fake.json" <<EOF
{"users": {"ci": {"token": "tok-jenkins-42"}},
 "quiet": 0.2, "start_delay": 0.1, "executors": 4,
 "jobs": {"calc": {"params": $PARAMS, "duration": 0.3, "result": "SUCCESS"}}}
EOF
fake_start jenkins jenkins.py --config "$T/fake.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null"
J=$fake_url

cat >"$T/conf" <<EOF
[apply]
repo = $T/d/repo.git
push_url = file://$T/ci.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci]
backend = jenkins
[ci.jenkins]
url = $J
job = calc
user = ci
token_file = $T/token
request_timeout = 10
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
ok "ingest" P ingest "$T/d/list.mbox"
ok "run: apply, push, trigger" P run -q
like "$(P status)" 'testing +[1-9]' "the triggered series are testing"
for _ in $(seq 60); do
	P run -q
	P status | grep -q 'testing' || break
	sleep 0.5
done
is "$(P status --json | "$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin)["states"].items()))')" \
	"[('apply-failed', 1), ('awaiting-approval', 1), ('done', 3), ('superseded', 2)]" \
	"later passes follow each build to its result"
curl -s "$J/fake/state" >"$T/state.json"
"$PY" - "$T/state.json" "$T/ci.git" >"$T/check.out" 2>&1 <<'PY'
import json, subprocess, sys
st = json.load(open(sys.argv[1]))
builds = [b for j in st["jobs"].values() for b in j["builds"]] if isinstance(st.get("jobs"), dict) else []
refs = subprocess.run(["git", "-C", sys.argv[2], "for-each-ref", "--format=%(refname) %(objectname)"],
                      capture_output=True, text=True).stdout.split("\n")
refs = dict(l.split() for l in refs if l)
print("builds", len(builds), "pushed refs", len(refs))
bad = []
for b in builds:
    p = dict(b.get("params") or [])
    if p.get("PATCHGATE_REF") not in refs or refs[p["PATCHGATE_REF"]] != p.get("PATCHGATE_COMMIT"):
        bad.append(("ref not pushed at the commit built", p.get("PATCHGATE_REF")))
    if not p.get("PATCHGATE_SERIES") or not p.get("PATCHGATE_TRIGGER", "").startswith(p.get("PATCHGATE_SERIES", "?")):
        bad.append(("parameters", p))
print(bad)
sys.exit(1 if bad or len(builds) != 3 else 0)
PY
ok "three builds, each of a pushed ref at the commit it names" cat "$T/check.out"
like "$(P series show --json "$(P series list --json | "$PY" -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["series"] if s["version"] == 3][0])')")" \
	'"url": *"http://127.0.0.1:[0-9]+/job/calc/[0-9]+/"' "the result links the build"

# supersession while queued: v1 alone first, its build held in the
# queue by a long quiet period; then v2 arrives and the next pass cancels it
curl -s -X POST --data '{"quiet": 30}' "$J/fake/config" >/dev/null
"$PY" - "$T/d/list.mbox" "$T/v1.mbox" "$T/rest.mbox" <<'PY'
import mailbox, sys
v1, rest = open(sys.argv[2], "wb"), open(sys.argv[3], "wb")
for m in mailbox.mbox(sys.argv[1]):
    out = v1 if "calc: multiplication" in str(m["Subject"]) and "v2" not in str(m["Subject"]) and "v3" not in str(m["Subject"]) or "add multiplication" in str(m["Subject"]) and "v2" not in str(m["Subject"]) and "v3" not in str(m["Subject"]) or "tests: multiplication" in str(m["Subject"]) and "v2" not in str(m["Subject"]) and "v3" not in str(m["Subject"]) else rest
    out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
PY
S2=$T/s2
pg --state "$S2" --config "$T/conf" ingest "$T/v1.mbox" >/dev/null
pg --state "$S2" --config "$T/conf" run -q
v1=$(pg --state "$S2" series list --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["id"])')
like "$(pg --state "$S2" series show "$v1")" 'ci/.*: queued' "v1's build is queued"
pg --state "$S2" --config "$T/conf" ingest "$T/rest.mbox" >/dev/null
pg --state "$S2" --config "$T/conf" run -q
like "$(pg --state "$S2" series show "$v1")" 'pipeline: superseded' "v2 supersedes v1"
curl -s "$J/fake/state" >"$T/state2.json"
like "$(cat "$T/state2.json")" '"cancelled": *true' "and v1's queue item was cancelled in Jenkins"
done_testing
