#!/bin/bash
# t0600-sandbox - issue #25, findings 1, 2 and 8: a patch's CI step
# attacks the machine that tests it, with `patchgate run` on a real
# configuration (a Patchwork token file, an SMTP password file, the state
# directory and the configuration outside /tmp, as a real deployment has
# them under /var/lib and /etc), once as root (the steps run as nobody)
# and once as an unprivileged user (the steps run as that user, as with
# the shipped systemd unit's User=patchgate).
#
# The patch's tests/run.sh tries to:
#  - print the token file, the password file, the configuration and the
#    store (finding 1: before, a non-root patchgate's steps read them and
#    the failure mail carried them to the submitter);
#  - connect to a host Unix socket open to everyone (finding 2);
#  - print a secret it "knows" (redaction, defence in depth);
#  - fill the disk beyond the limit (finding 8; its own series).
# None of it may reach the log, the result, `series show` or the mail.
# The controls: with `sandbox = off` the same step reads what the sandbox
# hides (the configuration as root, everything as the user) and
# connects: the attack is real, the sandbox is what stops it.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || skip_all "needs python3-aiosmtpd"
T=$TAP_TMP

# Outside /tmp, where the old sandbox showed everything: the deployment's
# /etc/patchgate and /var/lib/patchgate.
B=$(mktemp -d /var/tmp/pgate-t0600.XXXXXX) || bail "mktemp in /var/tmp"
chmod 755 "$B"
SOCK=$B/host.sock
TOKEN=pwtok-$$-3a9f1c
PASSWORD=smtppw-$$-77e2d0
TAP_CLEANUP='kill $SOCK_PID $SMTP_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$B"'

# a host service on a Unix socket, mode 0777: it answers "HOST"
"$PY" - "$SOCK" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"HOST-SERVICE"); c.close()
PY
SOCK_PID=$!

# an SMTP sink that takes any login (the password must be sent)
SMTP_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 - "$SMTP_PORT" "$T/mail" <<'PY' &
import sys, time
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult
def auth(server, session, envelope, mechanism, data):
    return AuthResult(success=True)
c = Controller(Mailbox(sys.argv[2]), hostname="127.0.0.1", port=int(sys.argv[1]),
               authenticator=auth, auth_require_tls=False)
c.start()
while True:
    time.sleep(3600)
PY
SMTP_PID=$!
for _ in $(seq 100); do
	"$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$SMTP_PORT" 2>/dev/null && break
	sleep 0.1
done

# the project, and the attacker's patch made with git format-patch
make_project() {
	local dir=$1
	export GIT_AUTHOR_NAME="Eve Attacker" GIT_AUTHOR_EMAIL=eve@example.net
	export GIT_COMMITTER_NAME="Eve Attacker" GIT_COMMITTER_EMAIL=eve@example.net
	git init -q -b master "$dir/src"
	mkdir -p "$dir/src/tests"
	printf '#!/bin/sh\necho tests pass\n' >"$dir/src/tests/run.sh"
	git -C "$dir/src" add . && git -C "$dir/src" commit -q -m "init"
	git clone -q --bare "$dir/src" "$dir/repo.git"
	cat >"$dir/src/tests/run.sh" <<EOF
#!/bin/sh
echo "== secrets"
cat $dir/etc/pw.token $dir/etc/smtp.pass
cat $dir/etc/patchgate.conf
ls -laR $dir/state
echo "== socket"
/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("$SOCK"); print("got", s.recv(64))'
echo "== literal: $TOKEN $PASSWORD"
exit 1
EOF
	git -C "$dir/src" commit -q -am "tests: check more" -m "Signed-off-by: Eve <eve@example.net>"
	git -C "$dir/src" format-patch -q -1 --stdout \
		--add-header="Message-ID: <attack-1@example.net>" >"$dir/attack.mbox"
	# the disk filler, on the same base
	git -C "$dir/src" checkout -q -b fill master~1
	printf '#!/bin/sh\ndd if=/dev/zero of=big bs=1M count=60\ndd if=/dev/zero of=/tmp/big bs=1M count=60\nsleep 60\n' \
		>"$dir/src/tests/run.sh"
	git -C "$dir/src" commit -q -am "make: a bigger build area"
	git -C "$dir/src" format-patch -q -1 --stdout \
		--add-header="Message-ID: <fill-1@example.net>" >"$dir/fill.mbox"
}

# one deployment in $B/$1: state, configuration and secrets
setup() {
	local d=$B/$1 sandbox=$2
	rm -rf "$d"
	mkdir -p "$d/etc" "$d/work"
	chmod 755 "$d" "$d/work"
	make_project "$d" >/dev/null 2>&1 || bail "making the project failed"
	printf '%s\n' "$TOKEN" >"$d/etc/pw.token"
	printf '%s\n' "$PASSWORD" >"$d/etc/smtp.pass"
	chmod 600 "$d/etc/pw.token" "$d/etc/smtp.pass"
	cat >"$d/etc/patchgate.conf" <<EOF
[apply]
repo = $d/repo.git
branches = master
committer_name = CI
committer_email = ci@example.org
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = sh tests/run.sh
timeout = 60
work_root = $d/work
disk = 40M
sandbox = $sandbox
[patchwork]
url = http://127.0.0.1:9/
project = demo
token_file = $d/etc/pw.token
[email]
enabled = true
smtp_url = smtp://127.0.0.1:$SMTP_PORT
starttls = no
user = ci
password_file = $d/etc/smtp.pass
from_address = ci@example.org
to = everyone
when = failure
EOF
	chmod 644 "$d/etc/patchgate.conf"
}

# runs the pipeline in $B/$1 as $2 (root or unpriv) until the job is done
run_pipeline() {
	local d=$B/$1 who=$2 i
	local cmd=("$PATCHGATE" --state "$d/state" --config "$d/etc/patchgate.conf")
	if [ "$who" = unpriv ]; then
		unpriv_own "$d"
		cmd=(as_unpriv "${cmd[@]}")
	fi
	"${cmd[@]}" ingest "$d/attack.mbox" "$d/fill.mbox" >/dev/null || return 1
	for i in $(seq 60); do
		"${cmd[@]}" run -q >/dev/null 2>&1
		"${cmd[@]}" series list --all --json >"$d/series.json" || return 1
		"${cmd[@]}" status --json >"$d/status.json" || return 1
		[ "$(jq_py "$d/status.json" 'str(d["states"].get("testing", 0))')" = 0 ] &&
			[ "$(jq_py "$d/status.json" 'str(sum(d["states"].values()))')" != 0 ] && break
		sleep 1
	done
	for id in $(jq_py "$d/series.json" '" ".join(s["id"] for s in d["series"])'); do
		"${cmd[@]}" series show --json "$id"
	done >"$d/show.json"
}

everything() {
	local d=$B/$1
	cat "$d/show.json"
	find "$d/state" "$d/work" -type f ! -name '*.mdb' -exec cat {} + 2>/dev/null
	mails "$d"
}

# the SMTP sink's mail (a maildir) about the deployment in $1
mails() {
	grep -l -F "$1/" "$T/mail"/new/* 2>/dev/null | xargs -r cat
}

attack() {
	local name=$1 who=$2 d=$B/$1 all
	setup "$name" on
	run_pipeline "$name" "$who" || { fail "$name: the pipeline ran" "$(cat "$d/status.json" 2>/dev/null)"; return; }
	all=$(everything "$name")
	like "$all" '== socket' "$name: the attack step ran and its log was kept"
	unlike "$all" "$TOKEN|$PASSWORD" "$name: no secret anywhere: log, result, series show, mail"
	like "$(cat "$d/show.json")" '== literal: \[redacted\] \[redacted\]' \
		"$name: a secret the step printed is [redacted] in the reports"
	unlike "$all" 'HOST-SERVICE' "$name: the host's Unix socket was not reached"
	unlike "$all" 'token_file|\[patchwork\]' "$name: the configuration was not read"
	unlike "$all" 'data\.mdb' "$name: the state directory was not listed"
	like "$(mails "$d")" 'Subject: .*tests: check more' \
		"$name: the failure mail was sent"
	like "$(cat "$d/show.json")" 'disk limit 40 MiB reached' \
		"$name: the disk filler ended with the disk limit"
}

control() {
	local name=$1 who=$2 d=$B/$1 all
	setup "$name" off
	run_pipeline "$name" "$who" || { fail "$name: the pipeline ran"; return; }
	all=$(everything "$name")
	like "$all" 'HOST-SERVICE' "$name (control, sandbox = off): the socket is reached"
	like "$all" 'token_file' "$name (control, sandbox = off): the configuration is read"
	if [ "$who" = unpriv ]; then
		# the secrets are read: what stops them leaving is the redaction
		like "$all" '^\[redacted\]$' \
			"$name (control, sandbox = off): the step reads the secret files"
	fi
	unlike "$all" "$TOKEN|$PASSWORD" "$name (control): redaction still keeps the secrets in"
}

if [ "$(id -u)" -eq 0 ]; then
	attack root root
	control root-off root
else
	skip "as root" "not running as root"
fi
if unpriv_init; then
	attack user unpriv
	control user-off unpriv
else
	skip "as an unprivileged user" "needs root to make the user"
fi
done_testing
