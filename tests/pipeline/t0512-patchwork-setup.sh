#!/bin/bash
# t0512-patchwork-setup - `patchgate run` against tests/fakes/patchwork.py
# (as strict as Patchwork 3.1.3) when the setup is wrong, and what it
# says and exits with (docs/pipeline.md, docs/report-patchwork.md):
#
#  - the start-up check: a project that does not exist, a token Patchwork
#    does not accept, a token whose user maintains nothing: exit 78 on
#    every run, the reason said once, no report tried or marked failed;
#  - fixed, without `user`: the token's user is found (its settings are
#    shown to it only), and another user's identical check is not taken
#    for ours; contexts are short ("ci/apply" on the patch's page);
#  - one msgid lookup and one series request per series, not a lookup
#    per patch;
#  - each report counted once across the run's flushes; "already there"
#    is not "sent";
#  - the cached Patchwork ids belong to a url and project: after a change
#    of project, checks go to that project's patches;
#  - a report refused by a 403 is kept, `status` says that only
#    `outbox send --all` tries it again, and it does.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
# Three projects with the same mail (a cross-post): calc's patch ids are
# 100 + n, calc2's 200 + n, calc3's 300 + n.  A series per cover (or lone
# patch).
"$PY" - "$T/d/list.mbox" "$T/seed.json" <<'PY'
import json, mailbox, re, sys
seed = {"users": [{"username": "ci", "email": "ci@demo.example.org", "token": "tok-ci-12"},
                  {"username": "outsider", "token": "tok-out-12"},
                  {"username": "bot", "token": "tok-bot-12"}],
        "projects": [{"id": 1, "linkname": "calc", "maintainers": ["ci"]},
                     {"id": 2, "linkname": "calc2", "maintainers": ["outsider", "ci"]},
                     {"id": 3, "linkname": "calc3", "maintainers": ["ci"]}],
        "series": [], "patches": []}
series = {}
n = 0
for m in mailbox.mbox(sys.argv[1]):
    subj = str(m["Subject"])
    if "[PATCH" not in subj or " 0/" in subj or subj.startswith("Re:"):
        continue
    n += 1
    msgid = m["Message-ID"].strip()
    key = (m["In-Reply-To"] or msgid).strip()
    mark = re.search(r"(\d+)/(\d+)\]", subj)
    num, total = (int(mark.group(1)), int(mark.group(2))) if mark else (1, 1)
    for proj, base in (("calc", 100), ("calc2", 200), ("calc3", 300)):
        if (proj, key) not in series:
            sid = base + len([k for k in series if k[0] == proj]) + 1
            series[(proj, key)] = sid
            seed["series"].append({"id": sid, "project": proj, "total": total,
                                   "name": subj})
        seed["patches"].append({"id": base + n, "project": proj, "msgid": msgid,
                                "name": subj, "series": series[(proj, key)],
                                "number": num,
                                "submitter": "someone@demo.example.org"})
json.dump(seed, open(sys.argv[2], "w"))
PY
fake_start pw patchwork.py --seed "$T/seed.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null"
PW=$fake_url
for u in ci out bot; do printf 'tok-%s-12\n' "$u" >"$T/$u.token"; done
printf 'nope\n' >"$T/bad.token"
chmod 600 "$T"/*.token

# conf FILE PROJECT TOKEN [EXTRA]: the configuration, no CI
conf() {
	cat >"$1" <<EOF
[apply]
repo = $T/d/repo.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[patchwork]
url = $PW/
project = $2
token_file = $T/$3.token
lookup_retry_min = 1
lookup_retry_max = 1
$4
EOF
}
checks() { curl -sf "$PW/_fake/checks"; }
reqs() { curl -sf "$PW/_fake/requests"; }
S=$T/s
P() { pg --state "$S" --config "$T/conf" "$@"; }
pg --state "$S" ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"

# ---- the start-up check ------------------------------------------------------
conf "$T/conf" nosuch ci
P run 2>"$T/run1.err"
is "$?" 78 "a project that does not exist: run exits 78 (EX_CONFIG)"
is "$(grep -c 'project: nosuch does not exist at' "$T/run1.err")" 1 \
	"and says so once, not once per report" || diag <"$T/run1.err"
P outbox --json >"$T/ob1.json"
is "$(jq_py "$T/ob1.json" 'str(len(d["outbox"]) > 0) + " " + str(sum(1 for e in d["outbox"] if e.get("failed") or e.get("attempts")))')" \
	"True 0" "the reports wait untried: not marked failed"
is "$(checks | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0 "nothing was posted"

P run -q 2>"$T/run2.err"
is "$?" 78 "the next run (nothing new to do) exits 78 again: cron notices"
like "$(cat "$T/run2.err")" 'refused: patchwork: \[patchwork\] project: nosuch does not exist' \
	"-q still says why, once"

conf "$T/conf" calc bad
P run -q 2>"$T/run3.err"
is "$?" 78 "a token Patchwork does not accept: 78"
like "$(cat "$T/run3.err")" 'does not accept our API token \(403 "Invalid token\."\)' "and why"

conf "$T/conf" calc bot
P run -q 2>"$T/run4.err"
is "$?" 78 "a token whose user maintains nothing: 78"
like "$(cat "$T/run4.err")" "the token's user is not a maintainer of project calc \\(maintainers: ci\\)" \
	"and why, naming the maintainers"
conf "$T/conf" calc out "user = ci"
P run -q 2>"$T/run5.err"
is "$?" 78 "user = ci with somebody else's token: 78"
like "$(cat "$T/run5.err")" "the token is not 'ci''s" "and why"

# ---- fixed: the token's user is found; another user's check is not ours
# Every patch of calc shows another user's check identical to the one we
# will post (what a run against calc3 posts, copied as outsider's): taken
# for ours, they would stop every post.
conf "$T/conf0" calc3 ci
pg --state "$T/s0" ingest "$T/d/list.mbox" >/dev/null
pg --state "$T/s0" --config "$T/conf0" run -q
checks | "$PY" -c '
import json, sys
out = [{"patch": c["patch"] - 200, "user": "outsider", "state": c["state"],
        "context": c["context"], "target_url": c["target_url"],
        "description": c["description"]} for c in json.load(sys.stdin)]
json.dump({"checks": out}, sys.stdout)' >"$T/theirs.json"
is "$(jq_py "$T/theirs.json" 'len(d["checks"])')" 6 "(6 checks of another user seeded on calc's patches)"
curl -sf -X POST --data-binary @"$T/theirs.json" "$PW/_fake/seed" >/dev/null
curl -sf -X POST "$PW/_fake/requests/clear" >/dev/null
conf "$T/conf" calc ci
P run -q --json >"$T/run6.json"
is "$?" 0 "fixed (no user configured): run exits 0"
is "$(jq_py "$T/run6.json" 'd["outbox"]')" \
	'{"failed": 0, "held": 0, "refused": 0, "retrying": 0, "sent": 5, "skipped": 0, "waiting": 0}' \
	"5 reports (one per series), each counted once: 5 sent"
checks >"$T/checks6.json"
is "$(jq_py "$T/checks6.json" 'sorted({c["shown"] for c in d if c["patch"] < 200})')" '["ci/apply", "outsider/apply"]' \
	"posted by the token's user, found by asking Patchwork; contexts are short: ci/apply"
is "$(jq_py "$T/checks6.json" 'sorted(c["patch"] for c in d if c["patch"] < 200 and c["user"] == "ci") == sorted(c["patch"] for c in d if c["patch"] < 200 and c["user"] == "outsider")')" \
	true "another user's identical checks did not stop ours: every patch got ours"
reqs >"$T/reqs6.json"
is "$("$PY" -c '
import json, re, sys
d = json.load(open(sys.argv[1]))
print("%d lookups, %d series" % (
    sum(1 for r in d if r["path"].endswith("/patches/") and "msgid=" in r["query"]),
    sum(1 for r in d if re.search(r"/series/[0-9]+/$", r["path"]))))' "$T/reqs6.json")" \
	"5 lookups, 1 series" "a lookup per series, and one request maps the 2-patch series"
v3=$(P series list --json | "$PY" -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["series"] if s["version"] == 3][0])')
like "$(P series show "$v3")" 'patchwork: 1[0-9][0-9] 1[0-9][0-9] \(patch ids\)' \
	"both patches of the series mapped (calc's ids)"

# mallory's series awaits approval: its pending check went to calc (the
# ids cached are calc's; see below)
mal=$(P series list --json | "$PY" -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["series"] if "faster test" in s["name"]][0])')
malpw() {
	"$PY" -c '
import json, sys
print(" ".join("%s:%s" % (c["patch"], c["state"]) for c in json.load(sys.stdin)
               if c["user"] == "ci" and c["patch"] in (int(sys.argv[1]), int(sys.argv[2]))))' "$1" "$2"
}
malid=$("$PY" -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(open(sys.argv[1]))["patches"] if "faster test" in p["name"]))' "$T/seed.json")
is "$(checks | malpw $malid)" "$(echo "$malid" | cut -d' ' -f1):pending" "calc: the untrusted series' pending check"

# ---- counted once per report; "already there" is not "sent" ------------------
# (project calc2, whose patches have no check yet)
conf "$T/conf2" calc2 ci
S2=$T/s2
pg --state "$S2" ingest "$T/d/list.mbox" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "status", "status": 503, "method": "POST", "count": 1000}' "$PW/_fake/fault" >/dev/null
pg --state "$S2" --config "$T/conf2" run -q --json >"$T/run7.json"
is "$?" 75 "Patchwork refusing posts for now: run exits 75 (EX_TEMPFAIL)"
is "$(jq_py "$T/run7.json" '[d["outbox"][k] for k in ("retrying", "waiting", "sent")]')" '[5, 0, 0]' \
	"5 reports to retry, not also 5 waiting (the run's second flush)"
curl -sf -X DELETE "$PW/_fake/fault" >/dev/null
pg --state "$S2" --config "$T/conf2" outbox send >"$T/send8.out"
is "$?" 75 "outbox send: what waits for its retry time is not due: 75"
like "$(cat "$T/send8.out")" '0 sent, 0 already there, 0 to retry, 0 failed, 0 refused, 5 waiting' \
	"and says they wait"
pg --state "$S2" --config "$T/conf2" outbox send --all --json >"$T/send9.json"
is "$(jq_py "$T/send9.json" '[d[k] for k in ("sent", "skipped", "waiting")]')" '[5, 0, 0]' \
	"outbox send --all: 5 sent"
S3=$T/s3
pg --state "$S3" ingest "$T/d/list.mbox" >/dev/null
pg --state "$S3" --config "$T/conf2" run -q --json >"$T/run10.json"
is "$(jq_py "$T/run10.json" '[d["outbox"][k] for k in ("sent", "skipped")]')" '[0, 5]' \
	"reports Patchwork shows already: 0 sent, 5 already there"

# ---- the Patchwork ids belong to a url and project ---------------------------
# the project becomes calc2, and mallory's series is approved: its next
# check must go to calc2's patch
conf "$T/conf" calc2 ci
P approve "$mal" >/dev/null
P run -q
is "$?" 0 "the project changed to calc2: run exits 0"
is "$(checks | malpw $malid | tr ' ' '\n' | grep -v ':pending' | cut -d: -f1)" "$(echo "$malid" | cut -d' ' -f2)" \
	"the final check went to calc2's patch, not to the id cached for calc"
like "$(P series show "$mal")" 'patchwork: 2[0-9][0-9] \(patch ids\)' "and calc2's id replaced calc's"

# ---- a report refused by a 403: kept, said, sent by --all only ---------------
S4=$T/s4
pg --state "$S4" ingest "$T/d/list.mbox" >/dev/null
curl -sf -X POST "$PW/_fake/reset" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "status", "status": 403, "method": "POST", "count": 1}' "$PW/_fake/fault" >/dev/null
Q() { pg --state "$S4" --config "$T/conf" "$@"; }
Q run -q 2>"$T/run11.err"
is "$?" 78 "a check refused with 403: run exits 78"
like "$(Q status)" "1 failed" "status counts it"
like "$(Q status)" "not tried again by 'run' or 'outbox send'.*'patchgate outbox send --all'" \
	"and says only 'outbox send --all' tries it again"
like "$(Q outbox)" "FAILED.*'patchgate outbox send --all' does" "so does outbox"
Q outbox send >"$T/send12.out"
is "$?" 0 "outbox send leaves it (exit 0: it was reported when it failed)"
like "$(cat "$T/send12.out")" "1 failed before \\(only 'patchgate outbox send --all' retries them\\)" \
	"and says so"
Q outbox send --all >/dev/null
is "$?" 0 "outbox send --all sends it"
like "$(Q status)" "outbox: 0 pending, 0 failed" "the outbox is empty"

done_testing
