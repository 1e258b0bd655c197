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

# --- a Jenkins of their own for what follows ---------------------------
kill "$fake_pid" 2>/dev/null
wait "$fake_pid" 2>/dev/null
fake_start jenkins2 jenkins.py --config "$T/fake.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null"
J=$fake_url
sed -i "s|^url = .*|url = $J|" "$T/conf"
# one series alone: "docs: describe the command line"
"$PY" - "$T/d/list.mbox" "$T/docs.mbox" <<'PY'
import mailbox, sys
out = open(sys.argv[2], "wb")
for m in mailbox.mbox(sys.argv[1]):
    if "docs: describe the command line" in str(m["Subject"]):
        out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
PY
# fake_count WHAT [SID]: builds (or "posts" of a trigger) in the fake,
# only those of series SID when given
fake_count() {
	curl -s "$J/fake/state" | "$PY" -c '
import json, sys
st, what = json.load(sys.stdin), sys.argv[1]
sid = sys.argv[2] if len(sys.argv) > 2 else None
if what == "builds":
    rows = [b["params"] for b in st["builds"]]
else:
    rows = [e.get("params", {}) for e in st["log"]
            if e["path"].endswith("/buildWithParameters")]
print(len([p for p in rows if sid is None or p.get("PATCHGATE_SERIES") == sid]))
' "$@"
}
# wait_built SID N: until the fake has N finished builds of series SID
# (10 s at most)
wait_built() {
	for _ in $(seq 100); do
		curl -s "$J/fake/state" | "$PY" -c '
import json, sys
st = json.load(sys.stdin)
sys.exit(0 if sum(b["phase"] == "done" and b["params"].get("PATCHGATE_SERIES") == sys.argv[1]
                  for b in st["builds"]) >= int(sys.argv[2]) else 1)
' "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}
# wait_done STATE: passes until no series is testing (30 at most)
wait_done() {
	for _ in $(seq 30); do
		pg --state "$1" --config "$T/conf" run -q 2>>"$1.err"
		pg --state "$1" status | grep -q 'testing' || return 0
		sleep 0.3
	done
	return 1
}

# 1, 4: every reply to the trigger is lost after Jenkins queued it (a
# quiet period of 3 s: the pass's own retries join the queued item); the
# next pass, after the item left the queue, repeats the same trigger and
# finds that build
S3=$T/s3
pg --state "$S3" --config "$T/conf" ingest "$T/docs.mbox" >/dev/null
sid=$(pg --state "$S3" series list --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["id"])')
curl -s -X POST --data '{"jobs": {"calc": {"quiet": 3}}}' "$J/fake/config" >/dev/null
curl -s -X POST --data '{"mode": "lose", "count": 20, "match": "buildWithParameters"}' \
	"$J/fake/inject" >/dev/null
pg --state "$S3" --config "$T/conf" run -q 2>"$T/lost1.err"
is "$?" 75 "lost replies: the pass exits 75"
curl -s -X POST --data '{"clear": true}' "$J/fake/inject" >/dev/null
like "$(pg --state "$S3" series show "$sid")" 'ci/.*: submitting' "the job is still submitting"
is "$(curl -s "$J/fake/state" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" 1 \
	"Jenkins queued it all the same, once"
unlike "$(cat "$T/lost1.err")" 'does the job declare' \
	"the retries joining their own queue item are no merge with another"
posts=$(fake_count posts "$sid")
# the item leaves the queue and its build runs: the fake's clock moved on
# past the quiet period (3 s), then the build (0.3 s) waited for until it
# is done, as a real wait of 4 s left it
curl -s -X POST --data '{"seconds": 4}' "$J/fake/advance" >/dev/null
wait_built "$sid" 1
curl -s -X POST --data '{"jobs": {"calc": {"quiet": null}}}' "$J/fake/config" >/dev/null
ok "later passes finish the job" wait_done "$S3"
is "$(fake_count builds "$sid")" 1 "one build for the series, not two"
is "$(fake_count posts "$sid")" "$posts" "the repeat found the build: no trigger posted again"
like "$(pg --state "$S3" series show "$sid")" 'ci/master/build: done success' "its verdict"

# 2: passes from cron, more than 5 minutes apart: Jenkins has forgotten
# the queue item each time (the fake's clock moved on 301 s)
S4=$T/s4
pg --state "$S4" --config "$T/conf" ingest "$T/docs.mbox" >/dev/null
before=$(fake_count builds "$sid")
pg --state "$S4" --config "$T/conf" run -q 2>"$S4.err"
like "$(pg --state "$S4" series show "$sid")" 'ci/.*: queued' "cron: pass 1 queued the job"
for pass in 2 3 4; do
	# the build runs and ends meanwhile
	wait_built "$sid" $((before + 1))
	curl -s -X POST --data '{"seconds": 301}' "$J/fake/advance" >/dev/null
	pg --state "$S4" --config "$T/conf" run -q 2>>"$S4.err"
	pg --state "$S4" status | grep -q 'testing' || break
done
is "$pass" 2 "cron: the next pass finds the build of the forgotten item"
like "$(pg --state "$S4" series show "$sid")" 'ci/master/build: done success' "cron: its verdict"
is "$(( $(fake_count builds "$sid") - before ))" 1 "cron: and nothing was built twice"

# 5: a series applied on its own base-commit: PATCHGATE_BRANCH is the
# commit's id, not "base-commit"
git clone -q "$T/d/repo.git" "$T/bc"
base=$(git -C "$T/bc" rev-parse HEAD~1)
# (the identity in the environment: scripts/test exports GIT_AUTHOR_*,
# which would win over git config)
(cd "$T/bc" && git checkout -q "$base" &&
 export GIT_AUTHOR_NAME="Ann Dev" GIT_AUTHOR_EMAIL=ann@demo.example.org \
	GIT_COMMITTER_NAME="Ann Dev" GIT_COMMITTER_EMAIL=ann@demo.example.org &&
 echo "a note" >NOTES &&
 git add NOTES && git commit -qm "notes: add a note" &&
 git format-patch -1 --thread --base="$base" --to=dev@demo.example.org \
	--stdout >"$T/bc.mbox")
S5=$T/s5
pg --state "$S5" --config "$T/conf" ingest "$T/bc.mbox" >/dev/null
bsid=$(pg --state "$S5" series list --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["id"])')
ok "base-commit series: tested" wait_done "$S5"
like "$(pg --state "$S5" series show "$bsid")" 'ci/base-commit/build: done success' "on its base-commit"
curl -s "$J/fake/state" | "$PY" -c '
import json, sys
print(sorted(b["params"]["PATCHGATE_BRANCH"] for b in json.load(sys.stdin)["builds"]
             if b["params"].get("PATCHGATE_SERIES") == sys.argv[1]))
' "$bsid" >"$T/branches"
is "$(cat "$T/branches")" "['$base']" \
	"PATCHGATE_BRANCH: the base commit's id, not \"base-commit\""

# 3: patchgate test waits through a short outage, and ends on a lost job
curl -s -X POST --data "{\"jobs\": {\"slow\": {\"params\": $(echo $PARAMS | tr -d '\n'), \"duration\": 2.5},
 \"held\": {\"params\": $(echo $PARAMS | tr -d '\n'), \"quiet\": 60}}}" "$J/fake/config" >/dev/null
sed 's/^job = calc$/job = slow/' "$T/conf" >"$T/conf-slow"
sed 's/^job = calc$/job = held/' "$T/conf" >"$T/conf-held"
S6=$T/s6
pg --state "$S6" --config "$T/conf-slow" ingest "$T/docs.mbox" >/dev/null
# six 503s on the build's page: two polls in a row fail (3 tries each)
curl -s -X POST --data '{"mode": "status", "status": 503, "count": 6, "match": "/job/slow/1/api"}' \
	"$J/fake/inject" >/dev/null
timeout 60 "$PATCHGATE" --state "$S6" --config "$T/conf-slow" test "$sid" >"$T/test6.out" 2>"$T/test6.err"
is "$?" 0 "test: a 503 while the build runs is waited through"
like "$(cat "$T/test6.out")" 'master/build: success' "test: and the verdict comes"
like "$(cat "$T/test6.err")" '^patchgate: test: master/build: .*HTTP 503.*; waiting up to 300 s' \
	"test: the outage is reported once"
S7=$T/s7
pg --state "$S7" --config "$T/conf-held" ingest "$T/docs.mbox" >/dev/null
# Jenkins crashes once patchgate has queued the job and seen its queue
# item (a GET of it answered), 30 s at most
(trap - EXIT
 for _ in $(seq 300); do
	curl -s "$J/fake/state" | "$PY" -c '
import json, sys
st = json.load(sys.stdin)
ids = [i["id"] for i in st["items"] if i["job"] == "held"]
sys.exit(0 if any(e["method"] == "GET" and e.get("status") == 200 and
                  any("/queue/item/%d/" % i in e["path"] for i in ids)
                  for e in st["log"]) else 1)
' && break
	sleep 0.1
 done
 curl -s -X POST --data '{"queue": true}' "$J/fake/restart" >/dev/null) &
crash=$!
timeout 60 "$PATCHGATE" --state "$S7" --config "$T/conf-held" test "$sid" >"$T/test7.out" 2>"$T/test7.err"
is "$?" 75 "test: a job Jenkins lost (a crash with its queue) ends it with 75, no hang"
wait "$crash"
like "$(cat "$T/test7.out")" 'master/build: lost - queue item [0-9]+ is gone' "test: says so"
like "$(cat "$T/test7.err")" 'the CI backend lost the job .*run patchgate test again' \
	"test: and what to do"

# 4: library messages are patchgate's lines, secrets redacted: a job
# whose name is the token (absurd, but then the token is in log lines)
curl -s -X POST --data "{\"jobs\": {\"tok-jenkins-42\": {\"params\": $(echo $PARAMS | tr -d '\n')}}}" \
	"$J/fake/config" >/dev/null
sed -e 's/^job = calc$/job = tok-jenkins-42/' -e "s|^url = .*|url = ${J/127.0.0.1/0.0.0.0}|" \
	"$T/conf" >"$T/conf-log"
S8=$T/s8
pg --state "$S8" --config "$T/conf-log" ingest "$T/docs.mbox" >/dev/null
"$PATCHGATE" --state "$S8" --config "$T/conf-log" test --no-wait "$sid" >/dev/null 2>"$T/test8.err"
like "$(cat "$T/test8.err")" '^patchgate: warning: jenkins: \[ci.jenkins\] url is plain http' \
	"a library warning is a patchgate: line"
G_MESSAGES_DEBUG=all "$PATCHGATE" --state "$S8" --config "$T/conf-log" test --no-wait "$sid" \
	>/dev/null 2>"$T/test9.err"
like "$(cat "$T/test9.err")" '^patchgate: debug: jenkins: POST /job/\[redacted\]/buildWithParameters -> 201' \
	"G_MESSAGES_DEBUG=all: debug lines too, the secret redacted"
like "$(cat "$T/test9.err")" 'patchgate: jenkins: job=\[redacted\] trigger [^ ]+ queued as item' \
	"and info lines"
is "$(grep -c 'tok-jenkins-42' "$T/test9.err")" 0 "no line holds the secret"
is "$(grep -vc '^patchgate: ' "$T/test9.err")" 0 "every line is patchgate's"
done_testing
