#!/bin/bash
# t0410-rethread-live - a rethread does not stop the mail.
#
# `rethread` fills the other generation of the threading databases in
# batches and holds the write lock for one batch at a time: deliveries go
# on while it runs, threaded into the live generation, and it threads
# them too before it makes its generation live.  Whatever the
# interleaving, the end is the store that ingesting the same messages in
# the same order gives.  A rethread killed half way goes on where it got
# to.  (The interleavings themselves, a deletion meanwhile and readers
# during it: tests/threading/test-threading.c, /threading/rethread/batched.)

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v git >/dev/null || skip_all "needs git"
T=$TAP_TMP
n=$(scaled 600 200)
mkdir "$T/g"
"$PY" "$SRCDIR/fixtures/gen-list.py" --quiet --messages "$n" --seed 41 \
	--out "$T/g/list.mbox" --repo "$T/g/repo.git" || bail "gen-list.py failed"
mkdir "$T/m"
total=$(git mailsplit --mboxrd -o"$T/m" "$T/g/list.mbox") || bail "git mailsplit failed"
late=40
# the head: every message but the last $late, as one mbox
awk -v n=$((total - late)) '/^From / { c++ } c <= n' "$T/g/list.mbox" >"$T/head.mbox"

S=$T/s
ok "ingest the head" pg --state "$S" ingest "$T/head.mbox"
pg --state "$S" series list --all --json >"$T/before.json"

# one message a batch, and the rest delivered one by one meanwhile
pg --state "$S" rethread --batch 1 --json >"$T/r1.json" 2>"$T/r1.err" &
pid=$!
TAP_CLEANUP="kill $pid 2>/dev/null"
during=0 failed=0
for f in $(ls "$T/m" | tail -n "$late"); do
	pg --state "$S" deliver <"$T/m/$f" >/dev/null 2>>"$T/deliver.err" || failed=$((failed + 1))
	kill -0 "$pid" 2>/dev/null && during=$((during + 1))
done
wait "$pid"
is "$?" 0 "the rethread succeeds"
is "$failed" 0 "every delivery succeeds (exit 0)"
ok "deliveries went on while it ran ($during of $late)" test "$during" -gt 0
like "$(cat "$T/r1.json")" '"messages": *[0-9]+' "it says what it read"

# the reference: the same messages, in the same order, ingested at once
ok "ingest the reference" pg --state "$T/ref" ingest "$T/g/list.mbox"
pg --state "$T/ref" series list --all --json >"$T/want.json"
pg --state "$S" series list --all --json >"$T/got.json"
ok "the series are those of ingesting the same mail" cmp "$T/want.json" "$T/got.json"
cmp -s "$T/before.json" "$T/got.json"
is "$?" 1 "which differ from before the deliveries"

# killed half way, then run again: it goes on, and ends the same
# the binary itself in the background, not pg (a function: its subshell
# would be what the kill kills, and the rethread would go on)
"$PATCHGATE" --state "$S" rethread --batch 1 >/dev/null 2>&1 &
pid=$!
for i in $(seq 200); do
	pg --state "$S" status --json | grep -Eq '"rethread_at": *[0-9]' && break
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
# (when the kill came after its first batch and before its last)
at=$(pg --state "$S" status --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["threading"]["rethread_at"])')
like "$at" '^([0-9]+|None)$' "status --json says how far it got ($at)"
if [ "$at" != None ]; then
	like "$(pg --state "$S" status)" "threading: a rethread is under way, up to message $at " "and status says so"
else
	pass "and status says so (the kill came before or after)"
fi
ok "a rethread after a killed one" pg --state "$S" rethread --json
is "$(pg --state "$S" status --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["threading"]["rethread_at"])')" None "status: no rethread under way" 
pg --state "$S" series list --all --json >"$T/got2.json"
ok "ends with the same series" cmp "$T/want.json" "$T/got2.json"
ok "store verify finds nothing wrong" pg --state "$S" store verify
done_testing
