#!/bin/bash
# t0720-site-daemon - with [report] html_dir, the daemon keeps the site up
# to date: the demo list delivered into a watched maildir shows up on the
# index without a `report html`, and a later pass with nothing new writes
# nothing.
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

demo_setup t0720
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp"
printf '[daemon]\nmaildirs = %s\ninterval = 1\n[report]\nhtml_dir = %s\n' \
	"$T/md" "$T/html" >>"$T/conf"
P store info >/dev/null 2>&1 || true

"$PATCHGATE" --state "$T/s" --config "$T/conf" daemon 2>"$T/daemon.log" &
DPID=$!
TAP_CLEANUP="kill $DPID 2>/dev/null; rm -rf '$W'"
for _ in $(seq 100); do grep -q 'daemon: started' "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" 'daemon: started' "the daemon starts"
for _ in $(seq 100); do test -s "$T/html/index.html" && break; sleep 0.1; done
like "$(cat "$T/html/index.html" 2>/dev/null)" '0 series' "its first pass writes the (empty) site"

maildir_deliver "$T/d/list.mbox" "$T/md"
rows() { grep -c '<tr class="r-' "$T/html/index.html" 2>/dev/null; }
fails() { grep -c '<tr class="r-fail"' "$T/html/index.html" 2>/dev/null; }
for _ in $(seq 300); do
	[ "$(rows)" = 7 ] && [ "$(fails)" = 2 ] &&
		grep -q 'r-pass.*multiplication' "$T/html/index.html" && break
	sleep 0.2
done
is "$(rows)" 7 "every delivered series is on the index"
is "$(fails)" 2 "the failed build and the series that does not apply, in red"
like "$(cat "$T/daemon.log")" 'site: .*files written' "the daemon says what it wrote"
ok "each series has its page" test "$(ls "$T/html/series/"*.html | wc -l)" = 7
# passes that change nothing write nothing (a pass every second)
states() { P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in sorted(d["states"].items())))'; }
want="apply-failed=1 awaiting-approval=1 done=3 superseded=2"
for _ in $(seq 150); do
	[ "$(states)" = "$want" ] && break
	sleep 0.2
done
sleep 2
n1=$(grep -c 'site: ' "$T/daemon.log")
sleep 3
n2=$(grep -c 'site: ' "$T/daemon.log")
is "$n2" "$n1" "passes that changed nothing rendered nothing" ||
	diag <"$T/daemon.log"
kill "$DPID"
wait "$DPID"
is "$?" 0 "the daemon stops cleanly"

done_testing
