#!/bin/bash
# bench/threading-instructions.sh - what threading costs, in instructions.
#
#   bench/threading-instructions.sh [PATCHGATE]
#
# bench/threading.sh times threading against plain ingest, but on a shared
# 2-CPU host the wall ratio of one run moves by several hundredths from
# run to run (the spread it prints), more than most changes to threading
# are worth.  This one counts instructions with valgrind's callgrind, which
# gives the same figures on every run and every host: a change to
# threading shows here as it is, and bench/threading.sh then says what it
# is worth in time.
#
# `patchgate ingest` of the generated list (the same one, BENCH_MESSAGES
# and BENCH_SEED as bench/threading.sh) three times under callgrind:
#  1. --no-thread: every thread's instructions (plain ingest, the peer);
#  2. threading on: every thread's;
#  3. threading on, counting only inside the threading hooks (after_add
#     and commit), in the writer thread: threading's own cost.
# It prints the three totals, 2/1 (what threading adds to the work, not to
# the wall time: parsing runs on other CPUs), and 3 a message.
#
# Caveats: SHA-1 and SHA-256 run GLib's portable code under valgrind (no
# SHA-NI), which inflates parsing (content hashes, patch-ids) in both runs
# and the series ids in 3 (about 25M instructions on 20,000 messages); an
# instruction is not a nanosecond (cache misses and LMDB's page copies
# cost more than they count).  About four minutes.  Needs valgrind.
# See bench/README.md.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_MESSAGES:-20000}
seed=${BENCH_SEED:-1}
cache=${BENCH_CACHE:-$here/.cache}
PY=/usr/bin/python3

[ -x "$pg" ] || { echo "bench/threading-instructions.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench/threading-instructions.sh: needs valgrind" >&2; exit 1; }
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-thrinsn.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$here/lib.sh"
cached_list "$n" "$seed"

# cg NAME INGEST_ARG... [-- VALGRIND_ARG...]: patchgate ingest of the list
# under callgrind, one output file a thread ($tmp/NAME.out-*); prints the
# sum of their totals
cg() {
	local name=$1 a
	local -a ing=() vg=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do ing+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	vg=("$@")
	rm -rf "$tmp/state"
	valgrind --tool=callgrind --separate-threads=yes \
		--callgrind-out-file="$tmp/$name.out" ${vg[@]+"${vg[@]}"} \
		"$pg" --state "$tmp/state" ingest ${ing[@]+"${ing[@]}"} "$mbox" \
		>/dev/null 2>"$tmp/$name.err" ||
		{ echo "bench/threading-instructions.sh: $name failed:" >&2; tail -5 "$tmp/$name.err" >&2; exit 1; }
	cat "$tmp/$name".out-* | awk '/^totals:/ { s += $2 } END { printf "%.0f\n", s }'
}

echo "== instructions: $n messages (callgrind)"
plain=$(cg plain --no-thread)
on=$(cg on)
hooks=$(cg hooks -- --toggle-collect=pgate_threading_hook_added \
	--toggle-collect=pgate_threading_hook_commit)
"$PY" - "$plain" "$on" "$hooks" "$n" <<'PY'
import sys
plain, on, hooks, n = (int(x) for x in sys.argv[1:])
print("ingest --no-thread     %6.0fM instructions (all threads)" % (plain / 1e6))
print("ingest (threading on)  %6.0fM instructions (all threads)   x%.3f of plain" % (on / 1e6, on / plain))
print("threading hooks        %6.0fM instructions (writer thread)  %.0f a message" % (hooks / 1e6, hooks / n))
PY
