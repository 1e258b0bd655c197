#!/bin/bash
# t0535-dpdk-report - `[email] format = dpdk` end to end: `patchgate run`
# tests a generated list's series, posts the checks to the fake Patchwork
# and mails one report per series to the test-report list
# (docs/report-email.md, "DPDK report mail"):
#
#  - Subject "|STATUS| pwID SUBJECT" of the series' last patch, To the
#    list, In-Reply-To and References that patch alone;
#  - the body starts "Test-Label:", "Test-Status:", then the patch's
#    Patchwork page when its id is known, then "_DESCRIPTION_";
#  - the failing series' submitter is copied, the passing ones' are not;
#  - every mail carries X-Patchwork-Hint: ignore and Auto-Submitted.
# A fake sendmail keeps the mail: no SMTP server is needed.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
T=$TAP_TMP
gen_list 40 7 "$T/g" || bail "gen-list.py failed"
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }

pg --state "$S" ingest "$T/g/list.mbox" >/dev/null || bail "ingest failed"
pg --state "$S" series list --all --json >"$T/series.json"

FAILSID=$("$PY" - "$T/series.json" "$T/seed.json" <<'PY'
import json, sys
ss = [s for s in json.load(open(sys.argv[1]))["series"] if s["kind"] == "patches"]
live = [s for s in ss if s["complete"] and not s["superseded_by"]]
seed = {"users": [{"username": "ci", "email": "ci@example.org", "token": "tok-ci-0123"}],
        "projects": [{"linkname": "tinyproj", "name": "tinyproj",
                      "listid": "tinyproj.lists.example.org",
                      "listemail": "tinyproj@lists.example.org",
                      "maintainers": ["ci"]}],
        "series": [], "patches": []}
for n, s in enumerate(ss, 1):
    seed["series"].append({"id": n, "project": "tinyproj", "name": s["name"],
                           "version": s["version"], "total": s["total"],
                           "submitter": s["submitter"]["email"]})
    for p in s["patches"]:
        seed["patches"].append({"project": "tinyproj", "msgid": "<%s>" % p["msgid"],
                                "name": p["subject"],
                                "submitter": s["submitter"]["email"],
                                "series": n, "number": p["number"]})
json.dump(seed, open(sys.argv[2], "w"))
print(live[0]["id"] if live else "")
PY
)
[ -n "$FAILSID" ] || bail "no series to test"

fake_start pw patchwork.py --seed "$T/seed.json" --state "$T/pw-state.json"
PW_PID=$fake_pid PW=$fake_url
TAP_CLEANUP='kill $PW_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"'
W=$(mktemp -d /tmp/pgate-t0535.XXXXXX) && chmod 755 "$W"
printf 'tok-ci-0123\n' >"$T/token" && chmod 600 "$T/token"
mkdir "$T/mail"
# sendmail -i -f FROM -- RCPT...: the message, and its envelope beside it
printf '%s\n' '#!/bin/sh' \
	"d=$T/mail" \
	'n=$(ls "$d" | wc -l)' \
	'cat >"$d/$n.eml"' \
	'shift 4' \
	'echo "$@" >"$d/$n.rcpt"' >"$T/sendmail"
chmod 755 "$T/sendmail"

{
	printf '[apply]\nrepo = %s\n' "$T/g/repo.git"
	printf '[trust]\neveryone = true\n[pipeline]\nwait_complete = 0\n'
	printf '[ci.local]\n'
	printf "commands = build: sh -c 'test \"\$PATCHGATE_SERIES\" != %s'\n" "$FAILSID"
	printf 'timeout = 60\nwork_root = %s\n' "$W"
	printf '[patchwork]\nurl = %s/\nproject = tinyproj\n' "$PW"
	printf 'token_file = %s\nuser = ci\n' "$T/token"
	printf 'lookup_retry_min = 1\nlookup_retry_max = 1\n'
	printf '[email]\nenabled = true\nsendmail = %s\n' "$T/sendmail"
	printf 'from_address = ci@example.org\nto = everyone\nwhen = always\n'
	printf 'format = dpdk\nreport_to = test-report@example.org\n'
	printf 'dpdk_label = tinyproj compile\n'
} >"$T/conf"

P run -q 2>"$T/run.err"
is "$?" 0 "run" || diag <"$T/run.err"
ok "outbox send" P outbox send
is "$(P outbox --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["outbox"]))')" 0 \
	"the outbox is empty"

"$PY" - "$T/mail" "$T/series.json" "$FAILSID" "$PW" "$T/seed.json" >"$T/check.out" 2>&1 <<'PY'
import email, email.policy, glob, json, sys
mdir, series, fail, pw, seed = sys.argv[1:6]
# the fake numbers the seeded patches from 1, in seed order
ids = {p["msgid"].strip("<>"): n
       for n, p in enumerate(json.load(open(seed))["patches"], 1)}
known = 0
ss = {s["id"]: s for s in json.load(open(series))["series"]}
last = {}
for s in ss.values():
    if s["kind"] == "patches" and s["patches"]:
        p = max(s["patches"], key=lambda p: p["number"])
        last[p["msgid"]] = s
mails = sorted(glob.glob(mdir + "/*.eml"))
print(len(mails), "mails")
assert mails, "no mail"
seen = set()
for path in mails:
    m = email.message_from_bytes(open(path, "rb").read(), policy=email.policy.default)
    rcpt = open(path[:-4] + ".rcpt").read().split()
    irt = m["In-Reply-To"].strip("<> ")
    assert irt in last, ("not a series' last patch", irt)
    s = last[irt]
    assert m["References"].strip() == "<%s>" % irt, m["References"]
    assert m["To"] == "test-report@example.org", m["To"]
    assert m["X-Patchwork-Hint"] == "ignore", m["X-Patchwork-Hint"]
    assert m["Auto-Submitted"] == "auto-replied", m["Auto-Submitted"]
    status = "FAILURE" if s["id"] == fail else "SUCCESS"
    subj = m["Subject"]
    assert subj.startswith("|%s| pw" % status), subj
    pwid = subj.split()[1][2:]
    body = m.get_content()
    head = "Test-Label: tinyproj-compile\nTest-Status: %s\n" % status
    assert body.startswith(head), body[:200]
    rest = body[len(head):]
    if pwid != "?":
        assert int(pwid) == ids[irt], (pwid, ids[irt])
        assert rest.startswith("%s/patch/%s/\n\n_" % (pw, pwid)), rest[:100]
        known += 1
    else:
        assert rest.startswith("\n_"), rest[:100]
    sub = s["submitter"]["email"].lower()
    if status == "FAILURE":
        assert rcpt == ["test-report@example.org", sub], rcpt
        assert sub in m["Cc"].lower(), m["Cc"]
    else:
        assert rcpt == ["test-report@example.org"], rcpt
        assert m["Cc"] is None, m["Cc"]
    print(subj.split(" ")[0], "pw" + pwid, s["id"])
    seen.add(s["id"])
assert fail in seen, "no report of the failing series"
assert known > 0, "no Patchwork id known"
PY
ok "one DPDK report per series, as send-patch-report.sh writes it" cat "$T/check.out"
diag "$(cat "$T/check.out")"

done_testing
