#!/bin/bash
# t0230-sigkill - a delivery killed at any moment leaves a consistent store.
#
# 100 times (30 in a sanitized build): start `patchgate deliver` on a message and SIGKILL it after a
# short delay (0-30 ms from a seeded RNG; two in three under 8 ms, since a
# delivery takes a few ms, so that kills land before, during and after the
# write transaction); after each kill `store info` and `msg list` must work.  Then every message is delivered normally: each
# delivery exits 0 and the store holds each message exactly once.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
G=$T/gen
S=$T/state
KILLS=$(scaled 100 30)

ok "gen-list.py makes a small list" gen_list 60 230 "$G" || bail "cannot generate the list"
find "$G/md" -type f | sort >"$T/files"
mapfile -t files <"$T/files"

# the store exists before the first kill (creating it is another test)
pg --state "$S" deliver <"${files[0]}"
is "$?" 0 "the first message is delivered"

"$PY" -c '
import random, sys
r = random.Random(230)
for _ in range(int(sys.argv[1])):
    print("%.4f" % r.uniform(0, 0.008 if r.random() < 2 / 3 else 0.030))
' "$KILLS" >"$T/delays"
mapfile -t delays <"$T/delays"

broken=0
killed=0
for i in $(seq 0 $((KILLS - 1))); do
	f=${files[$(((i + 1) % ${#files[@]}))]}
	"$PATCHGATE" --state "$S" deliver <"$f" 2>/dev/null &
	pid=$!
	sleep "${delays[$i]}"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ $? -eq 137 ] && killed=$((killed + 1))
	if ! pg --state "$S" store info --json >"$T/info" 2>"$T/info.err" ||
	   ! pg --state "$S" msg list --json >"$T/list" 2>"$T/list.err"; then
		broken=$((broken + 1))
		diag "after kill $i (${delays[$i]} s): $(cat "$T/info.err" "$T/list.err")"
	fi
done
diag "$killed of $KILLS deliveries were killed before they finished"
is "$broken" 0 "after each of $KILLS SIGKILLs, store info and msg list work"

fails=0
for f in "${files[@]}"; do
	pg --state "$S" deliver <"$f" 2>>"$T/deliver.err" || fails=$((fails + 1))
done
is "$fails" 0 "every message is then delivered normally (exit 0)"
[ "$fails" -eq 0 ] || diag "$(head -n 5 "$T/deliver.err")"
is "$(store_msgids "$S")" "$(manifest_msgids "$G/list.json")" "each message is in the store exactly once"
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["messages"]')" \
	"$(jq_py "$G/list.json" 'd["counts"]["stored"]')" "store info counts no half-written message"

done_testing
