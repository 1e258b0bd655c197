#!/bin/bash
# t0530-daemon - patchgate daemon: messages delivered into a watched
# maildir (tmp/ then a rename into new/, as an MTA does) and messages
# added to a public-inbox archive that the daemon's mirror fetches (fetch
# = true) are stored, the series they make go through the pipeline
# without anybody running `patchgate run`, SIGHUP reloads the
# configuration, SIGTERM stops it cleanly (exit 0), and a `run` is
# refused while it runs.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0530.XXXXXX) && chmod 755 "$W"
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp"

# a public-inbox archive (upstream) and our mirror of its epoch
have_pi=true
for t in public-inbox-init public-inbox-mda; do command -v $t >/dev/null || have_pi=false; done
if $have_pi; then
	PI=$T/pi
	mkdir -p "$PI" "$T/bin"
	export PI_CONFIG=$PI/config PI_EMERGENCY=$PI/emergency
	printf '#!/bin/sh\nexec cat\n' >"$T/bin/spamc" && chmod +x "$T/bin/spamc"
	export PATH=$T/bin:$PATH
	public-inbox-init -V2 -L basic up "$PI/up" http://localhost/up up@lists.demo.example.org &&
		git config -f "$PI_CONFIG" publicinboxmda.spamcheck none || bail "public-inbox-init failed"
	printf 'From: Erin <erin@demo.example.org>\nTo: up@lists.demo.example.org\nSubject: hello from the archive\nDate: Wed, 4 Dec 2024 10:00:00 +0000\nMessage-ID: <pi-1@demo.example.org>\n\nfirst\n' |
		ORIGINAL_RECIPIENT=up@lists.demo.example.org public-inbox-mda --no-precheck
	mkdir -p "$T/mirror/git"
	git clone -q --mirror "$PI/up/git/0.git" "$T/mirror/git/0.git"
	INBOXES="inboxes = $T/mirror
fetch = true"
fi

cat >"$T/conf" <<EOF
[daemon]
maildirs = $T/md
$INBOXES
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
if $have_pi; then
	for _ in $(seq 50); do P msg list | grep -q 'pi-1@' && break; sleep 0.1; done
	like "$(P msg list)" 'pi-1@demo.example.org' "the mirrored archive is replayed"
	printf 'From: Erin <erin@demo.example.org>\nTo: up@lists.demo.example.org\nSubject: later in the archive\nDate: Wed, 4 Dec 2024 11:00:00 +0000\nMessage-ID: <pi-2@demo.example.org>\n\nsecond\n' |
		ORIGINAL_RECIPIENT=up@lists.demo.example.org public-inbox-mda --no-precheck
	for _ in $(seq 100); do P msg list | grep -q 'pi-2@' && break; sleep 0.1; done
	like "$(P msg list)" 'pi-2@demo.example.org' "a message added upstream is fetched and replayed"
else
	skip "the mirrored archive is replayed" "no public-inbox"
	skip "a message added upstream is fetched and replayed" "no public-inbox"
fi
like "$(P run 2>&1)" 'another .* is at work|another daemon' "a 'run' is refused while the daemon runs"

# deliver the demo list, message by message, as an MTA would
maildir_deliver "$T/d/list.mbox" "$T/md" 0.02

states() { P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in sorted(d["states"].items())))'; }
want="apply-failed=1 awaiting-approval=1 done=3 superseded=2"
for _ in $(seq 150); do
	[ "$(states)" = "$want" ] && break
	sleep 0.2
done
is "$(states)" "$want" "the delivered series went through the pipeline by themselves"
is "$(P msg list | grep -vc 'pi-[12]@')" 14 "every delivered message is stored"
# each message is told once: by its own line when inotify saw it first,
# or in the count of a rescan that came first (every second here: under
# load a rescan can take the whole batch)
told=$("$PY" - "$T/daemon.log" "$T/md" <<'PY'
import re, sys
n = 0
for l in open(sys.argv[1]):
    if re.search(r"msgid=\S+ stored \(", l):
        n += 1
    m = re.search(r"maildir: (\S+): (\d+) new messages", l)
    if m and m.group(1) == sys.argv[2]:
        n += int(m.group(2))
print(n)
PY
)
is "$told" 14 "every stored message is told once (its own line, or a rescan's count)"
like "$(cat "$T/daemon.log")" 'series=s[0-9a-f]{12} done: build on' "one line per pipeline event"

kill -HUP $DPID
for _ in $(seq 50); do grep -q 'configuration reloaded' "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" 'daemon: configuration reloaded' "SIGHUP reloads the configuration"

kill -TERM $DPID
wait $DPID
is "$?" 0 "SIGTERM: exit 0"
like "$(tail -1 "$T/daemon.log")" 'daemon: stopped' "and says so"
done_testing
