# pgate.sh - what patchgate's integration tests share.  Source after tap.sh:
#
#   . "$SRCDIR/tests/lib/tap.sh"
#   . "$SRCDIR/tests/lib/pgate.sh"
#
# Needs PATCHGATE (the binary) and SRCDIR (the source tree) in the
# environment, as tests/meson.build sets them (integration_env).  Makes
# TAP_TMP, a fresh directory removed on exit, and points HOME and TMPDIR
# there.
#
#   pg ARG...                   runs $PATCHGATE (no implicit --state)
#   gen_list N SEED DIR         generates a list archive with
#                               fixtures/gen-list.py: DIR/list.mbox (mboxrd),
#                               DIR/list.json (manifest), DIR/md (maildir),
#                               DIR/repo.git
#   jq_py FILE EXPR             prints EXPR evaluated by Python with d = the
#                               JSON in FILE (strings bare, the rest as JSON)
#   manifest_msgids MANIFEST    the Message-IDs the store must hold: one per
#                               stored message (duplicates once, a reused
#                               ID twice), sorted
#   store_msgids STATE          the same, from `patchgate msg list --json`
#   fake_start NAME SCRIPT ARG...
#                               starts tests/fakes/SCRIPT (which prints its
#                               port) in the background, output in
#                               $TAP_TMP/NAME.port and NAME.log; sets
#                               fake_pid at once and, once the port is
#                               there (5 s at most), fake_url
#   maildir_deliver MBOX MAILDIR [SECONDS]
#                               each message of MBOX into MAILDIR/new, as
#                               an MTA does (written in tmp/, renamed),
#                               SECONDS apart (default 0)
#   smtp_start MAILBOX          starts aiosmtpd on a free port, delivering
#                               to the mbox MAILBOX; sets smtp_pid and
#                               smtp_port, and waits until it accepts

: "${PATCHGATE:?PATCHGATE must name the patchgate binary}"
: "${SRCDIR:?SRCDIR must name the source tree}"
[ -x "$PATCHGATE" ] || bail "PATCHGATE=$PATCHGATE is not executable"

PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
command -v git >/dev/null || skip_all "needs git"

tap_tmpdir
export HOME=$TAP_TMP TMPDIR=$TAP_TMP LC_ALL=C TZ=UTC
unset PATCHGATE_STATE PATCHGATE_CONFIG PATCHGATE_STORE_MAP_SIZE

pg() {
	"$PATCHGATE" "$@"
}

gen_list() {
	mkdir -p "$3" &&
	"$PY" "$SRCDIR/fixtures/gen-list.py" --quiet --messages "$1" --seed "$2" \
		--out "$3/list.mbox" --manifest "$3/list.json" --maildir "$3/md" \
		--repo "$3/repo.git"
}

jq_py() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$1" "$2"
}

manifest_msgids() {
	"$PY" -c '
import json, sys
for e in json.load(open(sys.argv[1]))["messages"]:
    if e.get("duplicate_of") is None:
        print(e["msgid"])
' "$1" | sort
}

store_msgids() {
	"$PATCHGATE" --state "$1" msg list --json |
	"$PY" -c '
import json, sys
for m in json.load(sys.stdin)["messages"]:
    print(m["msgid"])
' | sort
}

fake_start() {
	local name=$1 script=$2
	shift 2
	"$PY" "$SRCDIR/tests/fakes/$script" "$@" >"$TAP_TMP/$name.port" 2>"$TAP_TMP/$name.log" &
	fake_pid=$!
	for _ in $(seq 100); do [ -s "$TAP_TMP/$name.port" ] && break; sleep 0.05; done
	fake_url=http://127.0.0.1:$(head -1 "$TAP_TMP/$name.port")
}

smtp_start() {
	smtp_port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$PY" -m aiosmtpd -n -l "127.0.0.1:$smtp_port" -c aiosmtpd.handlers.Mailbox "$1" &
	smtp_pid=$!
	for _ in $(seq 100); do
		"$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$smtp_port" 2>/dev/null && break
		sleep 0.05
	done
}

maildir_deliver() {
	"$PY" - "$1" "$2" "${3:-0}" <<'PY'
import mailbox, os, sys, time
for i, m in enumerate(mailbox.mbox(sys.argv[1])):
    name = "%d.%d.demo" % (time.time(), i)
    tmp = os.path.join(sys.argv[2], "tmp", name)
    with open(tmp, "wb") as f:
        f.write(m.as_bytes())
    os.rename(tmp, os.path.join(sys.argv[2], "new", name))
    time.sleep(float(sys.argv[3]))
PY
}
