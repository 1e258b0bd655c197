#!/bin/bash
# t0545-buildbot - the pipeline with [ci] backend = buildbot against a real
# Buildbot 3.7 master and two real workers on loopback (Debian's buildbot
# and buildbot-worker, tests/lib/buildbot.sh), started once for the whole
# script: the demo list gets one build per series, spread over both
# workers, with its verdicts, step results and build pages; a worker
# killed mid-build and a master restarted mid-build are survived and never
# blamed on the patch; a force whose answer is lost (tests/lib/
# drop-proxy.py) is found again by its trigger id instead of being built
# twice; a superseded series cancels its queued build request, across a
# master restart; config check --online names what is wrong; and a master
# that asks for a login gets one, the password redacted everywhere.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/buildbot.sh"

command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
git init -q --bare "$T/ci.git"
bb_setup "$T/bb"
bb_start_master
bb_start_worker 1
bb_start_worker 2

conf() {	# conf BUILDER [URL]: the configuration, on builder BUILDER
	cat <<EOF
[apply]
repo = $T/d/repo.git
push_url = file://$T/ci.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci]
backend = buildbot
[ci.buildbot]
url = ${2:-$BB_URL}
public_url = $BB_URL
scheduler = patchgate
builder = $1
request_timeout = 10
retry_backoff_ms = 100
EOF
}
conf calc >"$T/conf"
# wait_done STATE [CONF]: passes until no series is testing (90 s at most)
wait_done() {
	for _ in $(seq 180); do
		pg --state "$1" --config "${2:-$T/conf}" run -q 2>>"$1.err"
		pg --state "$1" status | grep -q 'testing' || return 0
		sleep 0.5
	done
	return 1
}
# requests SERIES: the build requests of series SERIES, one line each:
# "brid results builds", the builds as "results@worker"
requests() {
	bb_api "buildrequests?property=patchgate_series&order=buildrequestid" | "$PY" -c '
import json, subprocess, sys
d = json.load(sys.stdin)
for br in d["buildrequests"]:
    if br.get("properties", {}).get("patchgate_series", [None])[0] != sys.argv[1]:
        continue
    print(br["buildrequestid"], br["results"])
' "$1"
}
builds_of() {	# builds_of BRID: "results@workerid" per build
	bb_py "buildrequests/$1/builds" '" ".join("%s@%s" % (b["results"], b["workerid"]) for b in d["builds"])'
}
sid_of() {	# sid_of STATE SUBJECT-PART
	pg --state "$1" series list --all --json | "$PY" -c '
import json, sys
print([s["id"] for s in json.load(sys.stdin)["series"] if sys.argv[1] in s["name"]][-1])' "$2"
}

# --- the demo: one pass triggers, later passes follow ------------------
S=$T/s
ok "ingest the demo list" pg --state "$S" --config "$T/conf" ingest "$T/d/list.mbox"
ok "run: apply, push, force a build of each series" pg --state "$S" --config "$T/conf" run -q
like "$(pg --state "$S" status)" 'testing +[1-9]' "the forced series are testing"
ok "later passes follow each build to its result" wait_done "$S"
is "$(pg --state "$S" status --json | "$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin)["states"].items()))')" \
	"[('apply-failed', 1), ('awaiting-approval', 1), ('done', 3), ('superseded', 2)]" \
	"every demo series ends where it should"
v3=$(pg --state "$S" series list --json | "$PY" -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["series"] if s["version"] == 3][0])')
fast=$(sid_of "$S" "speed up addition")
docs=$(sid_of "$S" "describe the command line")
like "$(pg --state "$S" series show "$v3")" 'ci/base-commit/build: done success' "v3 passes (on its base-commit)"
like "$(pg --state "$S" series show "$fast")" \
	"ci/master/build: done fail - build #[0-9]+ failed: failed 'make check'" \
	"the broken addition fails make check, and the reason says so"
like "$(pg --state "$S" series show "$docs")" 'ci/master/build: done success' "docs passes"
for s in "$v3" "$fast" "$docs"; do
	requests "$s"
done >"$T/requests"
is "$(wc -l <"$T/requests")" 3 "one build request per series tested"
is "$(awk '{print $2}' "$T/requests" | sort | tr '\n' ' ')" "0 0 2 " \
	"Buildbot's own results: two SUCCESS, one FAILURE"
for br in $(awk '{print $1}' "$T/requests"); do builds_of "$br"; done >"$T/builds"
is "$(wc -w <"$T/builds")" 3 "one build per request"
is "$(tr ' ' '\n' <"$T/builds" | sed 's/.*@//' | sort -u | wc -l)" 2 \
	"the builds are spread over both workers"
pg --state "$S" series show --json "$fast" >"$T/fast.json"
like "$(cat "$T/fast.json")" "\"url\": *\"${BB_URL//./\\.}/#/builders/[0-9]+/builds/[0-9]+\"" \
	"the result links the build's page"
summary=$(jq_py "$T/fast.json" '[v for k, v in d["series"][0]["stages"].items() if k.startswith("ci/")][0]["summary"]')
like "$summary" '== step fetch: passed in [0-9.]+ s' "the summary has each step: fetch passed"
like "$summary" '== step build: passed in [0-9.]+ s' "build passed"
like "$summary" '== step check: failed in [0-9.]+ s' "check failed"
like "$summary" '--- last lines of step check ---' "and the end of the failed step's log follows"
log=$(jq_py "$T/fast.json" '[v for k, v in d["series"][0]["stages"].items() if k.startswith("ci/")][0]["log_path"]')
like "$log" '^buildbot/[0-9]+\.log$' "the log path is relative to the state directory"
log=$S/$log
like "$(cat "$log" 2>/dev/null)" '== buildbot: build #[0-9]+ of builder calc .* on worker w[12]' \
	"the log file names the build and its worker"
like "$(cat "$log" 2>/dev/null)" '== verdict: fail' "and the verdict"
# the properties the build got: the pushed ref at the commit it names
bb_api "buildrequests?property=*&order=buildrequestid" >"$T/props.json"
"$PY" - "$T/props.json" "$T/ci.git" "$v3" >"$T/props.out" 2>&1 <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
refs = subprocess.run(["git", "-C", sys.argv[2], "for-each-ref", "--format=%(refname) %(objectname)"],
                      capture_output=True, text=True).stdout.split("\n")
refs = dict(l.split() for l in refs if l)
bad = []
for br in d["buildrequests"]:
    p = {k: v[0] for k, v in br["properties"].items()}
    if refs.get(p.get("patchgate_ref")) != p.get("patchgate_commit"):
        bad.append(("ref not pushed at the commit", p.get("patchgate_ref")))
    if not p.get("patchgate_trigger", "").startswith(p.get("patchgate_series", "?")):
        bad.append(("trigger", p))
    if p.get("patchgate_series") == sys.argv[3] and p.get("patchgate_version") != "3":
        bad.append(("version", p))
    if p.get("branch") != p.get("patchgate_ref") or p.get("revision") != p.get("patchgate_commit"):
        bad.append(("codebase", p))
print(len(d["buildrequests"]), bad)
sys.exit(1 if bad else 0)
PY
ok "each build got its series, version, commit, ref and trigger id" cat "$T/props.out"

# --- a worker killed mid-build: Buildbot retries it on the other -------
conf slow >"$T/conf-slow"
S2=$T/s2
"$PY" - "$T/d/list.mbox" "$T/docs.mbox" <<'PY'
import mailbox, sys
out = open(sys.argv[2], "wb")
for m in mailbox.mbox(sys.argv[1]):
    if "docs: describe the command line" in str(m["Subject"]):
        out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
PY
pg --state "$S2" --config "$T/conf-slow" ingest "$T/docs.mbox" >/dev/null
pg --state "$S2" --config "$T/conf-slow" run -q 2>>"$S2.err"
br=$(requests "$docs" | awk 'END {print $1}')
# until its build runs (the 5 s sleep step), then kill that worker
for _ in $(seq 100); do
	w=$(bb_py "buildrequests/$br/builds" '" ".join(str(b["workerid"]) for b in d["builds"] if not b["complete"])' 2>/dev/null)
	[ -n "$w" ] && break
	sleep 0.1
done
wname=$(bb_py "workers/$w" 'd["workers"][0]["name"]')
bb_kill_worker "${wname#w}"
ok "the worker's death: later passes finish the job" wait_done "$S2" "$T/conf-slow"
like "$(pg --state "$S2" series show "$docs")" 'ci/master/build: done success' \
	"the series' verdict is its own (success), not the lost worker's"
like "$(builds_of "$br")" '^5@[0-9]+ 0@[0-9]+$' \
	"one request, two builds: RETRY on the killed worker, SUCCESS on the other"
is "$(requests "$docs" | wc -l)" 2 "and no second request from patchgate (the demo's and this one)"
bb_start_worker "${wname#w}"

# --- the master restarted mid-build ------------------------------------
S3=$T/s3
pg --state "$S3" --config "$T/conf-slow" ingest "$T/docs.mbox" >/dev/null
pg --state "$S3" --config "$T/conf-slow" run -q 2>>"$S3.err"
br=$(requests "$docs" | awk 'END {print $1}')
for _ in $(seq 100); do
	[ -n "$(bb_py "buildrequests/$br/builds" '" ".join(str(b["buildid"]) for b in d["builds"] if not b["complete"])' 2>/dev/null)" ] && break
	sleep 0.1
done
bb_stop_master
ok "the master down: a pass goes on (polling again is always safe)" \
	pg --state "$S3" --config "$T/conf-slow" run -q
like "$(pg --state "$S3" series show "$docs")" 'ci/master/build: (running|queued)' \
	"and the job is still where it was"
bb_start_master
bb_wait_worker 1
bb_wait_worker 2
ok "the master back: later passes finish the job" wait_done "$S3" "$T/conf-slow"
like "$(builds_of "$br")" '^6@' "Buildbot cancelled the build at its shutdown (CANCELLED)"
like "$(pg --state "$S3" series show "$docs")" 'ci/master/build: done success' \
	"which is no verdict on the patch: the job ran again and passed"
is "$(requests "$docs" | awk '{print $2}' | tail -2 | tr '\n' ' ')" "6 0 " \
	"a second request, after the cancelled one"

# --- a lost answer to the force ----------------------------------------
fake_start proxy ../lib/drop-proxy.py --upstream "$BB_WWW_PORT" --control "$T/drops" \
	--match "POST /api/v2/forceschedulers" --match "GET /api/v2/buildrequests?property"
proxy_pid=$fake_pid
TAP_CLEANUP="$TAP_CLEANUP; kill $proxy_pid 2>/dev/null"
conf calc "$fake_url" >"$T/conf-proxy"
S4=$T/s4
pg --state "$S4" --config "$T/conf-proxy" ingest "$T/docs.mbox" >/dev/null
before=$(requests "$docs" | wc -l)
echo 1 >"$T/drops"
G_MESSAGES_DEBUG=all pg --state "$S4" --config "$T/conf-proxy" run -q 2>"$T/lost1.err"
is "$?" 0 "one answer lost: the pass goes on"
is "$(cat "$T/drops")" 0 "(the proxy dropped it)"
like "$(cat "$T/lost1.err")" 'buildbot: trigger [^ ]+: the answer was lost, build request [0-9]+ found by its trigger id' \
	"the backend looked for it before forcing again"
is "$(( $(requests "$docs" | wc -l) - before ))" 1 \
	"the request was found by its trigger id, not forced again"
ok "later passes finish the job" wait_done "$S4" "$T/conf-proxy"
like "$(pg --state "$S4" series show "$docs")" 'ci/master/build: done success' "its verdict"
# the force's answer lost and then every search for it (a request and
# its 2 retries): 75, the job stays submitting; the next pass repeats the
# trigger and finds the request
S5=$T/s5
pg --state "$S5" --config "$T/conf-proxy" ingest "$T/docs.mbox" >/dev/null
before=$(requests "$docs" | wc -l)
echo 4 >"$T/drops"
pg --state "$S5" --config "$T/conf-proxy" run -q 2>"$T/lost2.err"
is "$?" 75 "every answer lost: the pass exits 75"
like "$(pg --state "$S5" series show "$docs")" 'ci/.*: submitting' "the job is still submitting"
is "$(( $(requests "$docs" | wc -l) - before ))" 1 \
	"one force sent: no second without a search first"
echo 0 >"$T/drops"
ok "the next passes repeat the trigger and finish" wait_done "$S5" "$T/conf-proxy"
is "$(( $(requests "$docs" | wc -l) - before ))" 1 "still one request for the submission"
like "$(pg --state "$S5" series show "$docs")" 'ci/master/build: done success' "its verdict"

# a proxy's 502 after the master took the force: looked for, not resent
fake_start proxy502 ../lib/drop-proxy.py --upstream "$BB_WWW_PORT" --control "$T/drops502" \
	--match "POST /api/v2/forceschedulers" --status 502
TAP_CLEANUP="$TAP_CLEANUP; kill $fake_pid 2>/dev/null"
conf calc "$fake_url" >"$T/conf-502"
S9=$T/s9
pg --state "$S9" --config "$T/conf-502" ingest "$T/docs.mbox" >/dev/null
before=$(requests "$docs" | wc -l)
echo 1 >"$T/drops502"
ok "a 502 to the force: the pass goes on" pg --state "$S9" --config "$T/conf-502" run -q
is "$(( $(requests "$docs" | wc -l) - before ))" 1 \
	"the master had taken it: found by its trigger id, not forced twice"

# --- supersede: v1 queued (no worker for builder held), across a master
# restart, then v2 arrives and the next pass cancels it ---------------
conf held >"$T/conf-held"
"$PY" - "$T/d/list.mbox" "$T/v1.mbox" "$T/v2.mbox" <<'PY'
import mailbox, sys
v1, v2 = open(sys.argv[2], "wb"), open(sys.argv[3], "wb")
for m in mailbox.mbox(sys.argv[1]):
    s = str(m["Subject"])
    if not any(w in s for w in ("multiplication", "add multiplication")):
        continue
    out = v2 if "v2" in s else v1 if "v3" not in s else None
    if out:
        out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
PY
S6=$T/s6
pg --state "$S6" --config "$T/conf-held" ingest "$T/v1.mbox" >/dev/null
pg --state "$S6" --config "$T/conf-held" run -q 2>>"$S6.err"
pg --state "$S6" --config "$T/conf-held" run -q 2>>"$S6.err"
v1=$(pg --state "$S6" series list --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["id"])')
reason_of() {	# reason_of STATE SERIES: its CI job's reason
	pg --state "$1" series show --json "$2" | "$PY" -c '
import json, sys
st = json.load(sys.stdin)["series"][0]["stages"]
print([v.get("state", "") + ": " + (v.get("reason") or "") for k, v in st.items() if k.startswith("ci/")][0])'
}
is "$(reason_of "$S6" "$v1")" 'queued: waiting for a worker' "v1's build request waits for a worker"
br=$(requests "$v1" | awk 'END {print $1}')
bb_stop_master
bb_start_master
pg --state "$S6" --config "$T/conf-held" run -q 2>>"$S6.err"
is "$(reason_of "$S6" "$v1")" 'queued: waiting for a worker' \
	"a master restart keeps the queued request (the handle still names it)"
pg --state "$S6" --config "$T/conf-held" ingest "$T/v2.mbox" >/dev/null
pg --state "$S6" --config "$T/conf-held" run -q 2>>"$S6.err"
like "$(pg --state "$S6" series show "$v1")" 'pipeline: superseded' "v2 supersedes v1"
is "$(bb_py "buildrequests/$br" 'str((d["buildrequests"][0]["complete"], d["buildrequests"][0]["results"]))')" \
	"(True, 6)" "and v1's build request was cancelled in Buildbot"
bb_wait_worker 1
bb_wait_worker 2

# --- config check --online ---------------------------------------------
conf calc >"$T/conf-ok"
ok "config check --online: the master, scheduler and properties fit" \
	pg --config "$T/conf-ok" config check --online
sed 's/^scheduler = .*/scheduler = nope/' "$T/conf-ok" >"$T/conf-nosched"
pg --config "$T/conf-nosched" config check --online >"$T/cc1.out" 2>&1
is "$?" 78 "a scheduler that is not there: 78"
like "$(cat "$T/cc1.out")" '\[ci.buildbot\] scheduler: the master has no force scheduler nope' "and says so"
sed 's/^scheduler = .*/scheduler = bare/' "$T/conf-ok" >"$T/conf-bare"
pg --config "$T/conf-bare" config check --online >"$T/cc2.out" 2>&1
is "$?" 78 "a scheduler without the properties: 78"
like "$(cat "$T/cc2.out")" "does not take the property patchgate_(trigger|commit)" "and says which"
sed 's/^builder = .*/builder = nobody/' "$T/conf-ok" >"$T/conf-nobuilder"
like "$(pg --config "$T/conf-nobuilder" config check --online 2>&1)" \
	'\[ci.buildbot\] builder: force scheduler patchgate does not build on builder nobody' \
	"a builder the scheduler does not build on"
sed "s|^url = .*|url = http://127.0.0.1:$(bb_free_port)|" "$T/conf-ok" >"$T/conf-down"
pg --config "$T/conf-down" config check --online >"$T/cc3.out" 2>&1
is "$?" 75 "a master that cannot be reached: 75"
like "$(cat "$T/cc3.out")" '\[ci.buildbot\] url: the master cannot be reached' "and says so"

# --- a master that asks for a login ------------------------------------
printf 'bb-secret-pw-42\n' >"$T/bb/master/password"
bb_stop_master
bb_start_master
bb_wait_worker 1
bb_wait_worker 2
S7=$T/s7
pg --state "$S7" --config "$T/conf" ingest "$T/docs.mbox" >/dev/null
pg --state "$S7" --config "$T/conf" run -q 2>"$T/auth0.err"
is "$?" 78 "no login where the master asks for one: 78 (EX_CONFIG)"
like "$(cat "$T/auth0.err")" 'the master refused it \(403.*set user and password_file' \
	"and says what to set"
printf 'wrong\n' >"$T/pw-wrong" && chmod 600 "$T/pw-wrong"
printf 'bb-secret-pw-42\n' >"$T/pw" && chmod 600 "$T/pw"
{ conf calc; printf 'user = ci\npassword_file = %s\n' "$T/pw-wrong"; } >"$T/conf-wrong"
like "$(pg --config "$T/conf-wrong" config check --online 2>&1)" \
	"Buildbot refused user ci's password \\(GET /auth/login: 401\\)" "a wrong password: said"
{ conf calc; printf 'user = ci\npassword_file = %s\n' "$T/pw"; } >"$T/conf-auth"
ok "config check --online with the login" pg --config "$T/conf-auth" config check --online
S8=$T/s8
pg --state "$S8" --config "$T/conf-auth" ingest "$T/docs.mbox" >/dev/null
G_MESSAGES_DEBUG=all pg --state "$S8" --config "$T/conf-auth" run -q 2>"$T/auth.err"
ok "logged in, the job is forced" grep -q 'forced as buildset' "$T/auth.err"
G_MESSAGES_DEBUG=all wait_done "$S8" "$T/conf-auth"
like "$(pg --state "$S8" series show "$docs")" 'ci/master/build: done success' "and tested"
cat "$T/auth.err" "$S8.err" "$S8"/buildbot/*.log >"$T/all.err" 2>/dev/null
is "$(grep -c 'bb-secret-pw-42' "$T/all.err")" 0 "no log line or log file holds the password"
is "$(grep -vc '^patchgate: ' "$T/auth.err")" 0 "every line is patchgate's"
done_testing
