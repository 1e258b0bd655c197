#!/bin/bash
# t0510-report - the pipeline's reports, exactly once: Patchwork checks
# through tests/fakes/patchwork.py (as strict as Patchwork 3.1.3) and
# email replies to a real SMTP sink (python3 -m aiosmtpd).
#
#  - every tested patch gets apply success and a final
#    build check (pending first); the failing series' is fail;
#  - a series Patchwork has not parsed yet stays in the outbox (run
#    exits 75) and is posted once Patchwork has it;
#  - a second run posts nothing (exactly once); a POST whose answer is
#    lost (the fake stores it, then drops the connection) and a client
#    killed while its POST is in flight are not posted twice;
#  - Patchwork down: the reports wait and arrive after it comes back;
#  - the failing series' submitter gets one mail, threaded to the cover.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
"$PY" -c 'import aiosmtpd' 2>/dev/null || skip_all "needs python3-aiosmtpd"
T=$TAP_TMP
gen_list 120 3 "$T/g" || bail "gen-list.py failed"
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }

pg --state "$S" ingest "$T/g/list.mbox" >/dev/null || bail "ingest failed"
pg --state "$S" series list --all --json >"$T/series.json"

# Patchwork knows every patch but those of one series (not parsed yet)
read -r FAILSID LATESID <<EOF
$("$PY" - "$T/series.json" "$T/seed.json" "$T/late.json" <<'PY'
import json, sys
ss = [s for s in json.load(open(sys.argv[1]))["series"] if s["kind"] == "patches"]
live = [s for s in ss if s["complete"] and not s["superseded_by"]]
fail = [s for s in live if s["cover"]][0]
late = [s for s in live if s is not fail][0]
seed = {"users": [{"username": "ci", "email": "ci@example.org", "token": "tok-ci-0123"}],
        "projects": [{"linkname": "tinyproj", "name": "tinyproj",
                      "listid": "tinyproj.lists.example.org",
                      "listemail": "tinyproj@lists.example.org",
                      "maintainers": ["ci"]}],
        "series": [], "patches": []}
later = {"patches": []}
for n, s in enumerate(ss, 1):
    seed["series"].append({"id": n, "project": "tinyproj", "name": s["name"],
                           "version": s["version"], "total": s["total"],
                           "submitter": s["submitter"]["email"]})
    for p in s["patches"]:
        patch = {"project": "tinyproj", "msgid": "<%s>" % p["msgid"],
                 "name": p["subject"], "submitter": s["submitter"]["email"],
                 "series": n, "number": p["number"]}
        (later if s is late else seed)["patches"].append(patch)
json.dump(seed, open(sys.argv[2], "w"))
json.dump(later, open(sys.argv[3], "w"))
print(fail["id"], late["id"])
PY
)
EOF
diag "failing series $FAILSID; Patchwork parses $LATESID late"

start_fake() {
	fake_start pw patchwork.py --seed "$T/seed.json" --state "$T/pw-state.json"
	PW_PID=$fake_pid PW=$fake_url
}
start_fake
smtp_start "$T/mail"
SMTP_PORT=$smtp_port SMTP_PID=$smtp_pid
TAP_CLEANUP='kill $PW_PID $SMTP_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"'
W=$(mktemp -d /tmp/pgate-t0510.XXXXXX) && chmod 755 "$W"
printf 'tok-ci-0123\n' >"$T/token" && chmod 600 "$T/token"

cat >"$T/conf" <<EOF
[apply]
repo = $T/g/repo.git
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci.local]
commands = build: sh -c 'test "\$PATCHGATE_SERIES" != $FAILSID'
timeout = 60
work_root = $W
[patchwork]
url = $PW/
project = tinyproj
token_file = $T/token
user = ci
lookup_retry_min = 1
lookup_retry_max = 1
[email]
enabled = true
smtp_url = smtp://127.0.0.1:$SMTP_PORT
starttls = no
from_address = ci@example.org
to = everyone
when = failure
EOF

checks() { curl -sf "$PW/_fake/checks"; }

P run -q 2>"$T/run1.err"
is "$?" 75 "run exits 75 (EX_TEMPFAIL): a series' reports wait for Patchwork to parse its mail" ||
	diag <"$T/run1.err"
checks >"$T/checks1.json"
P outbox --json >"$T/outbox1.json"
"$PY" - "$T/series.json" "$T/checks1.json" "$FAILSID" "$LATESID" >"$T/v1.out" 2>&1 <<'PY'
import collections, json, sys
ss = {s["id"]: s for s in json.load(open(sys.argv[1]))["series"]}
checks = json.load(open(sys.argv[2]))
fail, late = sys.argv[3], sys.argv[4]
by = collections.defaultdict(list)
for c in checks:
    by[(c["patch"], c["context"])].append(c["state"])
# patch ids: the fake numbers seeded patches from 1 in seed order
bad = []
finals = collections.Counter()
for (patch, ctx), states in by.items():
    if ctx == "build":
        if states[0] != "pending" or states[-1] not in ("success", "fail") or len(states) != 2:
            bad.append((patch, ctx, states))
        finals[states[-1]] += 1
    elif ctx == "apply":
        if states != ["success"]:
            bad.append((patch, ctx, states))
print("finals", dict(finals), "bad", bad)
sys.exit(1 if bad or finals["fail"] == 0 or finals["success"] == 0 else 0)
PY
ok "each patch: apply success once, build pending then final; one series fails" cat "$T/v1.out"
like "$(jq_py "$T/outbox1.json" '" ".join(e["key"] for e in d["outbox"])')" "pw/$LATESID/" \
	"the series Patchwork has not parsed waits in the outbox"
like "$(jq_py "$T/outbox1.json" '[e.get("last_error") for e in d["outbox"]]')" 'no patch with msgid' \
	"and says why"
n1=$(jq_py "$T/checks1.json" 'len(d)')
like "$(P series show "$FAILSID")" 'patchwork: [0-9]+ [0-9]+' "series show gives the Patchwork patch ids"

# Patchwork parses the late series: the next send posts its checks
curl -sf -X POST --data-binary @"$T/late.json" "$PW/_fake/seed" >/dev/null
sleep 1.1
ok "outbox send" P outbox send
P outbox --json >"$T/outbox2.json"
is "$(jq_py "$T/outbox2.json" "len(d[\"outbox\"])")" 0 "the outbox is empty" || diag "$(cat "$T/outbox2.json")"
n2=$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$n2" -gt "$n1" ] && pass "the late series' checks arrived ($n1 -> $n2)" || fail "late checks" "$n1 $n2"

# exactly once: nothing new on a second run
P run -q
is "$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$n2" "a second run posts nothing"

# a lost answer: the fake stores the POST, then drops the connection
one=$(jq_py "$T/series.json" '[s["id"] for s in d["series"] if s["id"] not in ("'"$FAILSID"'", "'"$LATESID"'") and s["kind"] == "patches" and s["complete"] and not s["superseded_by"]][1]')
# (the pipeline never re-tests a finished series: a fresh state directory
# reports one series again, to a Patchwork that has no checks yet)
reset_fake() {
	curl -sf -X POST "$PW/_fake/reset" >/dev/null &&
	curl -sf -X POST --data-binary @"$T/late.json" "$PW/_fake/seed" >/dev/null
}
reset_fake
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "drop_after", "method": "POST", "path": "checks"}' "$PW/_fake/fault" >/dev/null
S2=$T/state2
pg --state "$S2" ingest "$T/g/list.mbox" >/dev/null
before=$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
pg --state "$S2" --config "$T/conf" run -q --series "$one"
after_lost=$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
like "$(pg --state "$S2" --config "$T/conf" outbox)" "pw/$one/" "a POST whose answer was lost stays in the outbox"
ok "outbox send --all" pg --state "$S2" --config "$T/conf" outbox send --all
"$PY" - <<PY >"$T/dups2.out"
import collections, json, urllib.request
c = json.load(urllib.request.urlopen("$PW/_fake/checks"))
n = collections.Counter((x["patch"], x["context"], x["state"]) for x in c)
print(json.dumps({str(k): v for k, v in n.items() if v > 1}), len(c) > 0)
PY
is "$(cat "$T/dups2.out")" "{} True" "sending it again posts nothing twice (the lost POST was stored once)"
# without [report] archive_url, no archive link: the generated list
# (tinyproj.lists.example.org) is in no archive patchgate knows, and
# lore does not have it
"$PY" - <<PY >"$T/archive.out"
import json, urllib.request
c = json.load(urllib.request.urlopen("$PW/_fake/checks"))
bad = [x["description"] for x in c if "archive:" in (x["description"] or "")]
print(len(c) > 0, bad[:2])
PY
is "$(cat "$T/archive.out")" "True []" "no check links an archive the list is not in"
diag "checks: $before before, $after_lost after the lost answer"

# killed while a POST is in flight: the fake stalls the POST, the client
# is killed, the fake stores it; the next send does not post it again
reset_fake
S3=$T/state3
two=$(jq_py "$T/series.json" '[s["id"] for s in d["series"] if s["id"] not in ("'"$FAILSID"'", "'"$LATESID"'", "'"$one"'") and s["kind"] == "patches" and s["complete"] and not s["superseded_by"]][1]')
pg --state "$S3" ingest "$T/g/list.mbox" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "stall", "seconds": 2, "count": 1, "method": "POST", "path": "checks"}' "$PW/_fake/fault" >/dev/null
"$PATCHGATE" --state "$S3" --config "$T/conf" run -q --series "$two" &
RUN_PID=$!
sleep 1
kill -KILL $RUN_PID 2>/dev/null
wait $RUN_PID 2>/dev/null
sleep 1.5
mid=$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
pg --state "$S3" --config "$T/conf" run -q --series "$two"
pg --state "$S3" --config "$T/conf" outbox send --all >/dev/null
"$PY" - <<PY >"$T/dups.out"
import collections, json, urllib.request
c = json.load(urllib.request.urlopen("$PW/_fake/checks"))
n = collections.Counter((x["patch"], x["context"], x["state"]) for x in c)
d = {str(k): v for k, v in n.items() if v > 1}
print(json.dumps(d))
PY
is "$(cat "$T/dups.out")" "{}" "after a kill mid-POST and a rerun, no check is posted twice"

# Patchwork down: reports wait, and arrive after it comes back
reset_fake
S4=$T/state4
three=$(jq_py "$T/series.json" '[s["id"] for s in d["series"] if s["id"] not in ("'"$FAILSID"'", "'"$LATESID"'", "'"$one"'", "'"$two"'") and s["kind"] == "patches" and s["complete"] and not s["superseded_by"]][1]')
pg --state "$S4" ingest "$T/g/list.mbox" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' --data '{"kind": "down"}' "$PW/_fake/fault" >/dev/null
pg --state "$S4" --config "$T/conf" run --series "$three" 2>"$T/run4.err"
diag <"$T/run4.err"
like "$(pg --state "$S4" --config "$T/conf" outbox)" "pw/$three/.*pending" "while Patchwork is down the reports wait"
curl -sf -X POST -H 'Content-Type: application/json' --data '{"kind": "up"}' "$PW/_fake/fault" >/dev/null
{ cat "$T/conf"; printf '[report]\narchive_url = https://archive.example.org/tinyproj/{msgid}/\n'; } >"$T/conf-archive"
ok "send once it is back" pg --state "$S4" --config "$T/conf-archive" outbox send --all
is "$(pg --state "$S4" --config "$T/conf" outbox --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["outbox"]))')" 0 \
	"nothing left in the outbox"
# every description ends with the archive copy of its own patch, by
# [report] archive_url (set for this store's sends)
"$PY" - <<PY >"$T/archive.out"
import json, urllib.parse, urllib.request
c = json.load(urllib.request.urlopen("$PW/_fake/checks"))
st = json.load(urllib.request.urlopen("$PW/_fake/state"))
mid = {p["id"]: p["msgid"][1:-1] for p in st["patches"]}
bad = [x["description"] for x in c if not (x["description"] or "").endswith(
    "\narchive: https://archive.example.org/tinyproj/" + urllib.parse.quote(mid[x["patch"]], safe="@!\$&()*+,;=:") + "/")]
print(len(c) > 0, bad[:2])
PY
is "$(cat "$T/archive.out")" "True []" "each check's description ends with its patch's archive link ([report] archive_url)"

# the mail: one reply, to the failing series' submitter, threaded
"$PY" - "$T/mail" "$T/series.json" "$FAILSID" >"$T/mail.out" 2>&1 <<'PY'
import json, mailbox, sys
box = mailbox.Maildir(sys.argv[1], create=False)
msgs = list(box)
ss = {s["id"]: s for s in json.load(open(sys.argv[2]))["series"]}
s = ss[sys.argv[3]]
mine = [m for m in msgs if (m["In-Reply-To"] or "").strip("<> ") == s["cover"]]
print(len(msgs), "mails;", len(mine), "to the failing series")
m = mine[0]
assert len(mine) == 1, mine
assert m["Auto-Submitted"] == "auto-replied", m["Auto-Submitted"]
assert m["X-Patchwork-Hint"] == "ignore"
assert m["Subject"].startswith("Re: "), m["Subject"]
assert s["submitter"]["email"] in m["To"], m["To"]
assert "FAIL" in m.get_payload(decode=True).decode(), "no FAIL in the body"
PY
ok "the failing series' submitter got one threaded reply" cat "$T/mail.out"

done_testing
