#!/bin/bash
# t0535-daemon-rethread - the daemon repairs failed threading by itself.
#
# A series record that no longer decodes makes threading fail for good:
# `deliver` stores the review anyway and marks the store (meta
# threading_failed), and from then on nothing is threaded until a
# rethread, so the pipeline would see no new series.  The daemon's pass
# rethreads first (`[daemon] rethread`, on by default): the flag goes,
# the review's trailer is on its series, later mail is threaded again.
# With rethread = false it leaves the store alone, and it never
# rethreads a store whose rethread was asked for (ingest --no-thread).
# `status` tells the three apart.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/store-corrupt.sh"

command -v mdb_load >/dev/null || skip_all "needs mdb_load (lmdb-utils)"
command -v git >/dev/null || skip_all "needs git"
T=$TAP_TMP
gen_list 60 5 "$T/g" || bail "gen-list.py failed"
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp"
S=$T/s

# $1: the state; $2: extra [daemon] lines.  Runs the daemon until its log
# ($T/daemon.log) matches $3 (or 10 s), then stops it; its exit status.
daemon_until() {
	printf '[daemon]\nmaildirs = %s\ninterval = 1\n%s\n' "$T/md" "$2" >"$T/conf"
	"$PATCHGATE" --state "$1" --config "$T/conf" daemon 2>"$T/daemon.log" &
	local pid=$! i
	TAP_CLEANUP="kill $pid 2>/dev/null"
	for i in $(seq 100); do grep -Eq "$3" "$T/daemon.log" && break; sleep 0.1; done
	kill -TERM "$pid"
	wait "$pid"
}

ok "ingest" pg --state "$S" ingest "$T/g/list.mbox" || bail "ingest failed"
pg --state "$S" series list --all --json >"$T/series.json"
read -r sid pmid < <(first_patched "$T/series.json")
corrupt_record "$S/store" series "$sid"
review() { review_of "$pmid" "$1"; }
review t0535-1@example.org | pg --state "$S" deliver --json >"$T/d1.json" 2>/dev/null
like "$(cat "$T/d1.json")" '"threading": *"skipped"' "a corrupt series record: the review is stored without threading"
is "$(pg --state "$S" status --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["threading"])')" \
	"{'state': 'failed', 'reason': 'series record has an unknown format', 'rethread_at': None}" "status --json says threading failed, and why"
like "$(pg --state "$S" status)" "^threading: failed \(series record has an unknown format\); the daemon rethreads" "and so does status"

daemon_until "$S" "rethread = false" 'daemon: started'
is "$?" 0 "rethread = false: the daemon runs (exit 0)"
unlike "$(cat "$T/daemon.log")" 'rethread' "and leaves the store alone"
like "$(pg --state "$S" series list 2>&1 >/dev/null)" "run 'patchgate rethread'" "series list still warns"

daemon_until "$S" "" 'rethread: [0-9]+ messages'
is "$?" 0 "by default the daemon runs (exit 0)"
like "$(cat "$T/daemon.log")" "rethread: threading failed \(series record has an unknown format\); rethreading" "it says why it rethreads"
like "$(cat "$T/daemon.log")" 'rethread: [0-9]+ messages, [0-9]+ series' "and what the rethread did"
is "$(pg --state "$S" series list 2>&1 >/dev/null)" "" "series list has nothing to warn of"
like "$(pg --state "$S" status)" '^threading: ok$' "status says threading is up to date"
like "$(pg --state "$S" series show "$sid" --json)" 'rita@example.org' "the series has the review's trailer"
review t0535-2@example.org | pg --state "$S" deliver --json >"$T/d2.json" 2>/dev/null
like "$(cat "$T/d2.json")" '"threading": *"done"' "later mail is threaded again"
daemon_until "$S" "" 'daemon: started'
unlike "$(cat "$T/daemon.log")" 'rethread' "a repaired store is not rethreaded again"

# a rethread asked for is left to whoever asked
ok "ingest --no-thread" pg --state "$T/n" ingest --no-thread "$T/g/list.mbox"
daemon_until "$T/n" "" 'daemon: started'
unlike "$(cat "$T/daemon.log")" 'rethread' "after ingest --no-thread the daemon does not rethread"
like "$(pg --state "$T/n" series list 2>&1 >/dev/null)" "run 'patchgate rethread'" "series list says to"
like "$(pg --state "$T/n" status)" "^threading: out of date; run 'patchgate rethread'$" "and so does status"

done_testing
