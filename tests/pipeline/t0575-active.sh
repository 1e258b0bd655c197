#!/bin/bash
# t0575-active - a pass visits the series that may need work, not the
# whole store (issue #34, item 5: the active set, store/active.c):
#
#  - the first pass over a store visits every series (and builds the set);
#    the next visits only the series left in progress (not final, and
#    not awaiting an approval that only new mail or a command can bring);
#  - new mail puts its series (and those it changes) in the set: the
#    next pass visits them and the unfinished ones, not the others;
#  - a rethread, or another configuration, makes the next pass visit
#    every series again; the states are those of a pass over everything.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
gen_list "$(scaled 150 60)" 5 "$T/a" || bail "gen-list.py failed"
gen_list 25 6 "$T/b" || bail "gen-list.py failed"
S=$T/state
: >"$T/conf"
P() { pg --state "$S" --config "$T/conf" "$@"; }

# series looked at by a pass; the series status counts; the unfinished
looked() { P run --json >"$T/run.json" && jq_py "$T/run.json" 'd["series"]'; }
total() { P status --json >"$T/st.json" && jq_py "$T/st.json" 'd["series"]'; }
unfinished() {
	P status --json >"$T/st.json" &&
	jq_py "$T/st.json" 'sum(n for k, n in d["states"].items() if k in ("new", "waiting", "testing"))'
}

ok "ingest" P ingest --json "$T/a/list.mbox" || bail "ingest failed"
N=$(P series list --all --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["series"]))')
is "$(looked)" "$N" "the first pass visits all $N series"
P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["states"], sort_keys=True))' >"$T/states1"
is "$(total)" "$N" "every series has a state"
is "$(looked)" "$(unfinished)" "the second visits only the series in progress"
is "$(looked)" "$(unfinished)" "and so does the third"

ok "more mail" P ingest --json "$T/b/list.mbox"
N2=$(P series list --all --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["series"]))')
got=$(looked)
# (the new mail also supersedes some older series: those are visited too)
ok "the pass after it visits the new series, not all ($got of $N2)" \
	test "$got" -ge $((N2 - N)) -a "$got" -lt "$N2"
is "$(total)" "$N2" "every series has a state"

P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["states"], sort_keys=True))' >"$T/states2"
ok "rethread" P rethread
is "$(looked)" "$N2" "after a rethread the pass visits every series"
is "$(looked)" "$(unfinished)" "then the unfinished ones again"
is "$(P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["states"], sort_keys=True))')" \
	"$(cat "$T/states2")" "the states are the same"

printf '[pipeline]\nwait_complete = 86400\n' >"$T/conf"
is "$(looked)" "$N2" "another configuration: every series visited once"
is "$(looked)" "$(unfinished)" "then the unfinished ones"
done_testing
