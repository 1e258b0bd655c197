#!/bin/bash
# t0592-reply-policy - each project's email reply policy
# (docs/report-email.md, "Digest and noise budget"; docs/config.md
# "Projects"), against a real SMTP sink (python3 -m aiosmtpd):
#
#   project alpha (List-Id alpha.example.org): to = author+list,
#     when = failures, max_per_day = 1: of its three failing series one
#     reply goes out at once, the other two wait for the digest;
#   project beta (List-Id beta.example.org): to = maintainers,
#     digest = true: its reply waits for the digest, which goes to the
#     maintainers only.
#
# The next day (PGATE_TEST_NOW) the digests go out, one mail per
# recipient (golden file data/t0592/digest-alpha.txt), and only once.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
"$PY" -c 'import aiosmtpd' 2>/dev/null || skip_all "needs python3-aiosmtpd"

T=$TAP_TMP
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }
export GIT_AUTHOR_NAME=Dev GIT_AUTHOR_EMAIL=dev@example.org \
	GIT_COMMITTER_NAME=Dev GIT_COMMITTER_EMAIL=dev@example.org \
	GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
	GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'

# ---- a repository, four one-patch series on two lists -----------------------

L=$T/repo
{
	git init -q -b master "$L" &&
	printf 'base\n' >"$L/file.c" &&
	git -C "$L" add -A && git -C "$L" commit -qm base &&
	for s in a1:alpha a2:alpha a3:alpha b1:beta; do
		name=${s%%:*} list=${s#*:}
		git -C "$L" checkout -q -b "w-$name" master &&
		printf '%s\n' "$name" >"$L/$name.c" &&
		git -C "$L" add -A && git -C "$L" commit -qm "$name change" &&
		git -C "$L" format-patch -q --stdout master..w-$name |
		sed "0,/^Subject:/s//To: $list@example.org\nList-Id: <$list.example.org>\nMessage-ID: <$name@example.org>\nSubject:/" \
			>>"$T/list.mbox" || exit 1
	done
	git -C "$L" checkout -q master
} || bail "making the repository and patches failed"
pg --state "$S" ingest "$T/list.mbox" >/dev/null 2>"$T/ingest.err" ||
	{ diag <"$T/ingest.err"; bail "ingest failed"; }

smtp_start "$T/mail"
SMTP_PID=$smtp_pid
W=$(mktemp -d /tmp/pgate-t0592.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP='kill $SMTP_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"'

cat >"$T/conf" <<EOF
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci.local]
commands = build: false
timeout = 60
work_root = $W
[apply]
repo = $L
branches = master
[email]
enabled = true
smtp_url = smtp://127.0.0.1:$smtp_port
starttls = no
from_address = ci@example.org
to = everyone

[project alpha]
lists = alpha.example.org
email.to = author+list
email.when = failures
email.max_per_day = 1

[project beta]
lists = beta.example.org
email.to = maintainers
email.maintainers = beta-maint@example.org
email.digest = true
EOF

P config check >"$T/check.out" 2>&1
is "$?" 0 "config check accepts the policies" || diag <"$T/check.out"
printf '[email]\nenabled = true\nsmtp_url = smtp://127.0.0.1:25\nfrom_address = a@example.org\nto = maintainers\n' >"$T/bad.conf"
pg --state "$T/s2" --config "$T/bad.conf" config check >"$T/bad.out" 2>&1
is "$?" 78 "to = maintainers without maintainers is refused"
like "$(cat "$T/bad.out")" "maintainers.*at least one" "saying what is missing"

# mails (aiosmtpd's Mailbox handler writes a Maildir): "TO|CC|SUBJECT"
# a line, sorted
mails() {
	"$PY" - "$T/mail" <<'PY' | sort
import mailbox, sys
for m in mailbox.Maildir(sys.argv[1], create=False):
    print("%s|%s|%s" % (m["To"], m["Cc"] or "", m["Subject"]))
PY
}

# ---- day 0: one reply at once, the rest held ---------------------------------

DAY0=1767268800   # 2026-01-01T12:00:00Z
DAY1=$((DAY0 + 86400))
PGATE_TEST_NOW=$DAY0 P run -q 2>"$T/run1.err"
is "$?" 0 "run (day 0)" || diag <"$T/run1.err"
mails >"$T/mails1.out"
is "$(wc -l <"$T/mails1.out")" 1 "day 0: one mail, alpha's budget" || diag <"$T/mails1.out"
like "$(cat "$T/mails1.out")" "^Dev <dev@example.org>\\|alpha@example.org\\|Re: \\[PATCH\\] a[123] change$" \
	"alpha's reply: to the author, the list copied"
P outbox --json >"$T/outbox1.json"
is "$(jq_py "$T/outbox1.json" 'str(len(d["outbox"]))')" 0 "nothing waits in the outbox"
PGATE_TEST_NOW=$DAY0 P run -q 2>"$T/run1b.err"
is "$(mails | wc -l)" 1 "a second run the same day sends nothing"

# ---- day 1: the digests, one per recipient, once ----------------------------

PGATE_TEST_NOW=$DAY1 P run -q 2>"$T/run2.err"
is "$?" 0 "run (day 1)" || diag <"$T/run2.err"
mails >"$T/mails2.out"
is "$(grep -v '|Re: ' "$T/mails2.out")" \
"alpha@example.org||[patchgate] digest of 2026-01-01: 2 series
beta-maint@example.org||[patchgate] digest of 2026-01-01: 1 series
dev@example.org||[patchgate] digest of 2026-01-01: 2 series" \
	"day 1: alpha's digest to the author and the list, beta's to its maintainers only"
"$PY" - "$T/mail" "$T/digest-alpha.txt" "$T/digest-beta.txt" <<'PY'
import mailbox, sys
for m in mailbox.Maildir(sys.argv[1], create=False):
    if m["To"] == "dev@example.org":
        open(sys.argv[2], "w").write(m.get_payload(decode=True).decode())
    if m["To"] == "beta-maint@example.org":
        open(sys.argv[3], "w").write(m.get_payload(decode=True).decode())
PY
# the held lines: the two series the budget held, whichever they are
sent=$(sed -n 's/.*Re: \[PATCH\] \(a[123]\) change$/\1/p' "$T/mails1.out")
grep -v "\\] $sent change:" "$SRCDIR/tests/pipeline/data/t0592/digest-alpha.txt" \
	>"$T/digest-alpha.want"
is "$(sed 's/^\(A daily digest from patchgate\) .*\.$/\1 @VERSION@./' "$T/digest-alpha.txt")" \
	"$(cat "$T/digest-alpha.want")" \
	"alpha's digest (golden file, less the series sent at once)"
like "$(cat "$T/digest-beta.txt")" "^  \\* \\[PATCH\\] b1 change: 1 of 1 job failed$" \
	"beta's digest: its series"
PGATE_TEST_NOW=$DAY1 P run -q 2>"$T/run3.err"
PGATE_TEST_NOW=$((DAY1 + 86400)) P run -q 2>>"$T/run3.err"
is "$(mails | wc -l)" 4 "the digests are sent once"

done_testing
