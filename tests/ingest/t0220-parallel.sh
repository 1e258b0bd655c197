#!/bin/bash
# t0220-parallel - concurrent deliveries lose nothing.
#
# Three rounds of `patchgate deliver`, 8 at a time (xargs -P8), over a
# generated list of about 200 messages (40 in a sanitized build); in the first round every message is
# delivered twice, in a seeded random order, so that the same message races
# with itself (and the empty store is created by 8 processes at once).
# Afterwards the store holds exactly the manifest's messages.  Then the same
# with a 256 KiB initial map, which the writers must grow between them.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
G=$T/gen

N=$(scaled 200 40)
ok "gen-list.py makes a $N-message list" gen_list "$N" 220 "$G" || bail "cannot generate the list"
find "$G/md" -type f | sort >"$T/files"
nfiles=$(wc -l <"$T/files")

# order SEED COPIES: the files, each COPIES times, shuffled
order() {
	"$PY" -c '
import random, sys
files = open(sys.argv[1]).read().split()
files = files * int(sys.argv[3])
random.Random(sys.argv[2]).shuffle(files)
print("\n".join(files))
' "$T/files" "$1" "$2"
}

# run STATE LOG: deliver every file named on stdin, 8 at a time; LOG gets
# "EXIT FILE JSON" per delivery (no process more than needed: this test
# is fork and exec bound)
run() {
	xargs -P8 -n1 sh -c '
		r=$("$0" --state "$1" deliver --json <"$3" 2>>"$2.err")
		echo "$? $3 $r" >>"$2"
	' "$PATCHGATE" "$1" "$2"
}

# check STATE LOG ROUND DELIVERIES
check() {
	local bad
	bad=$(awk '$1 != 0' "$2" | head -n 5)
	is "$(wc -l <"$2") $(awk '$1 != 0' "$2" | wc -l)" "$4 0" "$3: all $4 deliveries exit 0"
	[ -z "$bad" ] || diag "$bad" "$(head -n 5 "$2.err")"
}

S=$T/state
stored=$(jq_py "$G/list.json" 'd["counts"]["stored"]')
order 1 2 | run "$S" "$T/round1"
check "$S" "$T/round1" "round 1 (each message twice)" $((nfiles * 2))
is "$(grep -cv '"result":"duplicate"' "$T/round1")" "$stored" "round 1: each distinct message added once, every other delivery a duplicate"
order 2 1 | run "$S" "$T/round2"
check "$S" "$T/round2" "round 2" "$nfiles"
order 3 1 | run "$S" "$T/round3"
check "$S" "$T/round3" "round 3" "$nfiles"
is "$(cat "$T/round2" "$T/round3" | grep -c '"result":"duplicate"')" $((nfiles * 2)) "rounds 2 and 3: all duplicates"
is "$(store_msgids "$S")" "$(manifest_msgids "$G/list.json")" "the store holds exactly the manifest's messages"
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["messages"]')" "$stored" "store info agrees"

# -- a tiny map: the writers grow it between them
S2=$T/state-small
export PATCHGATE_STORE_MAP_SIZE=262144
order 4 1 | run "$S2" "$T/small"
check "$S2" "$T/small" "with a 256 KiB map" "$nfiles"
is "$(store_msgids "$S2")" "$(manifest_msgids "$G/list.json")" "with a 256 KiB map the store holds exactly the manifest's messages"
is "$(pg --state "$S2" store info --json | jq_py /dev/stdin '[d["messages"], d["map_size"] > 262144]')" \
	"[$stored, true]" "store info: every message, and the map grew"
unset PATCHGATE_STORE_MAP_SIZE

done_testing
