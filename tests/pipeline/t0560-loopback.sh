#!/bin/bash
# t0560-loopback - the whole pipeline on loopback, every outside part real
# or a faithful fake:
#  - sources: real procmail delivering half of the demo list through
#    `patchgate deliver`, and a real public-inbox v2 archive
#    (public-inbox-init -V2, public-inbox-mda) holding the other half,
#    read by `patchgate replay`;
#  - CI: the fake Jenkins, whose job really clones the pushed ref and runs
#    make && make check;
#  - reports: the fake Patchwork receiving checks, and aiosmtpd receiving
#    the opt-in replies.
# Every step's outcome is asserted.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

for t in procmail formail public-inbox-init public-inbox-mda make cc; do
	command -v $t >/dev/null || skip_all "needs $t"
done
"$PY" -c 'import aiosmtpd' 2>/dev/null || skip_all "needs python3-aiosmtpd"
T=$TAP_TMP
S=$T/state
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
git init -q --bare "$T/ci.git"

# the list in two halves, as files
"$PY" - "$T/d/list.mbox" "$T/half1.mbox" "$T/half2" "$T/seed.json" <<'PY'
import json, mailbox, os, sys
msgs = list(mailbox.mbox(sys.argv[1]))
os.makedirs(sys.argv[3])
with open(sys.argv[2], "wb") as h1:
    for i, m in enumerate(msgs):
        if i % 2 == 0:
            h1.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
        else:
            open("%s/%02d" % (sys.argv[3], i), "wb").write(m.as_bytes())
seed = {"users": [{"username": "ci", "email": "ci@demo.example.org", "token": "tok-ci-56"}],
        "projects": [{"linkname": "calc", "name": "calc", "listid": "calc.lists.demo.example.org",
                      "listemail": "calc@lists.demo.example.org", "maintainers": ["ci"]}],
        "patches": [{"project": "calc", "msgid": m["Message-ID"].strip(), "name": str(m["Subject"]),
                     "submitter": "someone@demo.example.org"} for m in msgs
                    if "[PATCH" in str(m["Subject"]) and " 0/" not in str(m["Subject"])
                    and not str(m["Subject"]).startswith("Re:")]}
json.dump(seed, open(sys.argv[4], "w"))
PY

# 1. procmail -> patchgate deliver
cat >"$HOME/.procmailrc" <<RC
SHELL=/bin/sh
LOGFILE=$T/procmail.log
DEFAULT=$T/fallback.mbox
:0 w
| $PATCHGATE --state $S deliver
RC
chmod 600 "$HOME/.procmailrc"
formail -s procmail -m "$HOME/.procmailrc" <"$T/half1.mbox" >/dev/null 2>&1
ok "procmail delivered its half, nothing fell back" test ! -e "$T/fallback.mbox"
is "$(pg --state "$S" msg list | wc -l)" 7 "7 messages stored by the hook"

# 2. public-inbox v2 -> patchgate replay
PI=$T/pi
mkdir -p "$PI" "$T/bin"
export PI_CONFIG=$PI/config PI_EMERGENCY=$PI/emergency
printf '#!/bin/sh\nexec cat\n' >"$T/bin/spamc" && chmod +x "$T/bin/spamc"
export PATH=$T/bin:$PATH
public-inbox-init -V2 -L basic calc "$PI/calc" http://localhost/calc calc@lists.demo.example.org &&
	git config -f "$PI_CONFIG" publicinboxmda.spamcheck none || bail "public-inbox-init failed"
for f in "$T"/half2/*; do
	ORIGINAL_RECIPIENT=calc@lists.demo.example.org public-inbox-mda --no-precheck <"$f" ||
		bail "public-inbox-mda failed"
done
ok "replay the public-inbox archive" pg --state "$S" replay "$PI/calc"
is "$(pg --state "$S" msg list | wc -l)" 14 "14 messages from both sources"

# 3. the fakes and the sink
cat >"$T/jenkins.json" <<EOF
{"users": {"ci": {"token": "tok-jenkins-56"}}, "quiet": 0.1, "start_delay": 0.05, "executors": 2,
 "jobs": {"calc": {"params": {"PATCHGATE_REPO_URL": "", "PATCHGATE_REF": "", "PATCHGATE_COMMIT": "",
   "PATCHGATE_BASE_COMMIT": "", "PATCHGATE_SERIES": "", "PATCHGATE_VERSION": "", "PATCHGATE_BRANCH": "",
   "PATCHGATE_MSGID": "", "PATCHGATE_TRIGGER": ""},
   "command": ["sh", "-c", "set -e; w=\$(mktemp -d); git clone -q \"\$PATCHGATE_REPO_URL\" \"\$w\"; cd \"\$w\"; git checkout -q \"\$PATCHGATE_COMMIT\"; make; make check"]}}}
EOF
fake_start jenkins jenkins.py --config "$T/jenkins.json"
JPID=$fake_pid J=$fake_url
TAP_CLEANUP="kill $JPID 2>/dev/null"
fake_start pw patchwork.py --seed "$T/seed.json"
PWPID=$fake_pid PW=$fake_url
TAP_CLEANUP="kill $JPID $PWPID 2>/dev/null"
smtp_start "$T/mail"
SMTP_PORT=$smtp_port SPID=$smtp_pid
TAP_CLEANUP="kill $JPID $PWPID $SPID 2>/dev/null; wait 2>/dev/null"
printf 'tok-jenkins-56\n' >"$T/jtoken" && printf 'tok-ci-56\n' >"$T/pwtoken" && chmod 600 "$T/jtoken" "$T/pwtoken"

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
token_file = $T/jtoken
[patchwork]
url = $PW/
project = calc
token_file = $T/pwtoken
user = ci
[email]
enabled = true
smtp_url = smtp://127.0.0.1:$SMTP_PORT
starttls = no
from_address = ci@demo.example.org
to = everyone
when = failure
EOF
P() { pg --state "$S" --config "$T/conf" "$@"; }

# 4. the pipeline, pass after pass until the builds are in
for _ in $(seq 120); do
	P run -q
	P status | grep -q 'testing' || break
	sleep 0.5
done
is "$(P status --json | "$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin)["states"].items()))')" \
	"[('apply-failed', 1), ('awaiting-approval', 1), ('done', 3), ('superseded', 2)]" \
	"every series reached its end"
P series list --all --json >"$T/list.json"
for id in $(jq_py "$T/list.json" '" ".join(s["id"] for s in d["series"])'); do
	P series show --json "$id"
done >"$T/shows.jsonl"
is "$("$PY" - "$T/shows.jsonl" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    ci = [v for k, v in s["stages"].items() if k.startswith("ci/")]
    if ci:
        out.append("%s: %s %s" % (s["name"], ci[0]["verdict"],
                                  "jenkins" if "/job/calc/" in (ci[0].get("url") or "") else "?"))
print("; ".join(sorted(out)))
PY
)" "calc: multiplication: success jenkins; calc: speed up addition: fail jenkins; docs: describe the command line: success jenkins" \
	"Jenkins built each pushed series for real: the broken addition fails make check"
like "$(grep 'speed up addition' "$T/shows.jsonl")" 'FAIL: 40 \+ 2 = 43' \
	"the failing build's summary has its console's test output"

# 5. Patchwork: a final check per patch, none twice
curl -s "$PW/_fake/checks" >"$T/checks.json"
is "$("$PY" - "$T/checks.json" <<'PY'
import collections, json, sys
c = json.load(open(sys.argv[1]))
n = collections.Counter((x["patch"], x["context"], x["state"]) for x in c)
final = collections.Counter(x["state"] for x in c if x["state"] != "pending")
print(sum(v > 1 for v in n.values()), dict(sorted(final.items())))
PY
)" "0 {'fail': 2, 'success': 7}" "Patchwork got every check once: 7 success, 2 fail (apply and build)"

# 6. mail: the two failures were answered, threaded
is "$("$PY" - "$T/mail" "$T/shows.jsonl" <<'PY'
import json, mailbox, sys
box = mailbox.Maildir(sys.argv[1], create=False)
ss = [json.loads(l)["series"][0] for l in open(sys.argv[2])]
answered = {(m["In-Reply-To"] or "").strip("<> ") for m in box}
names = sorted(s["name"] for s in ss
               if (s["cover"] or s["patches"][0]["msgid"]) in answered)
print(len(box), "; ".join(names))
PY
)" "2 calc: add a modulo operator; calc: speed up addition" "the failing series' submitters got one reply each"
done_testing
