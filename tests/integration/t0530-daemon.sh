#!/bin/bash
# t0530-daemon - patchgate daemon: messages delivered into a watched
# maildir (tmp/ then a rename into new/, as an MTA does) are stored, the
# series they make go through the pipeline without anybody running
# `patchgate run`, SIGHUP reloads the configuration, SIGTERM stops it
# cleanly (exit 0), and a second daemon is refused while one runs.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0530.XXXXXX) && chmod 755 "$W"
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp"
cat >"$T/conf" <<EOF
[daemon]
maildirs = $T/md
interval = 1
[apply]
repo = $T/d/repo.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
commands = build: make; check: make check
timeout = 120
work_root = $W
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
P store info >/dev/null 2>&1 || true

"$PATCHGATE" --state "$T/s" --config "$T/conf" daemon 2>"$T/daemon.log" &
DPID=$!
TAP_CLEANUP="kill $DPID 2>/dev/null; rm -rf '$W'"
for _ in $(seq 100); do grep -q 'daemon: started' "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" 'daemon: started \(1 maildirs' "the daemon starts"
like "$(P run 2>&1)" 'another .* is at work|another daemon' "a 'run' is refused while the daemon runs"

# deliver the demo list, message by message, as an MTA would
"$PY" - "$T/d/list.mbox" "$T/md" <<'PY'
import mailbox, os, sys, time
for i, m in enumerate(mailbox.mbox(sys.argv[1])):
    name = "%d.%d.demo" % (time.time(), i)
    tmp = os.path.join(sys.argv[2], "tmp", name)
    with open(tmp, "wb") as f:
        f.write(m.as_bytes())
    os.rename(tmp, os.path.join(sys.argv[2], "new", name))
    time.sleep(0.02)
PY

states() { P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in sorted(d["states"].items())))'; }
want="apply-failed=1 awaiting-approval=1 done=3 superseded=2"
for _ in $(seq 150); do
	[ "$(states)" = "$want" ] && break
	sleep 0.2
done
is "$(states)" "$want" "the delivered series went through the pipeline by themselves"
is "$(P msg list | wc -l)" 14 "every delivered message is stored"
like "$(cat "$T/daemon.log")" 'msgid=.* stored \(patch\)' "one line per stored message"
like "$(cat "$T/daemon.log")" 'series=s[0-9a-f]{12} done: build on' "one line per pipeline event"

kill -HUP $DPID
for _ in $(seq 50); do grep -q 'configuration reloaded' "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" 'daemon: configuration reloaded' "SIGHUP reloads the configuration"

kill -TERM $DPID
wait $DPID
is "$?" 0 "SIGTERM: exit 0"
like "$(tail -1 "$T/daemon.log")" 'daemon: stopped' "and says so"
done_testing
