#!/bin/bash
# bench/merge.sh - merge detection at scale (issue #28): BENCH_COMMITS
# (10,000) new upstream commits matched against BENCH_PATCHES (100,000)
# stored patches.  Goal: under 2 s.
#
#   bench/merge.sh [path/to/patchgate]
#
# bench/merge-gen.py makes the input once into bench/.cache/: a bare
# repository (git fast-import) and an mbox whose patches are a quarter
# of the commits mailed with a Link: trailer in the commit, a quarter by
# patch-id, a twentieth with another diff (subject rule), and the rest
# other patches of the same 500 authors.  The mbox is ingested once into
# a template state directory; each run copies it and times
# `patchgate upstream --json` (fetch off), the first read of the branch:
# every commit read, its patch-id computed, matched and remembered.
# Prints each run's wall and CPU time (user + system: on a busy machine
# the wall time mostly measures the scheduler), its split into reading
# the commits (libgit2) and matching and storing them (one transaction),
# the counts, and the median wall time of BENCH_RUNS (3) runs.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
pg=${1:-$src/build/cli/patchgate}
PY=/usr/bin/python3
commits=${BENCH_COMMITS:-10000}
patches=${BENCH_PATCHES:-100000}
runs=${BENCH_RUNS:-3}
cache=${BENCH_CACHE:-$src/bench/.cache}
. "$src/bench/lib.sh"

[ -x "$pg" ] || { echo "bench/merge.sh: no $pg (build first)" >&2; exit 1; }
key=$commits-$patches-$(sha1sum <"$src/bench/merge-gen.py" | cut -c1-12)
dir=$cache/merge-$key
if [ ! -s "$dir/list.mbox" ]; then
	echo "generating $commits commits and $patches mails into $dir ..."
	rm -rf "$dir" && mkdir -p "$dir"
	"$PY" "$src/bench/merge-gen.py" "$dir" "$commits" "$patches"
fi
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-merge.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/conf" <<EOF
[upstream]
repos = $dir/upstream.git
branches = master
fetch = false
window_days = 100000
EOF
if [ ! -d "$dir/state/store" ]; then
	echo "ingesting $dir/list.mbox (once) ..."
	rm -rf "$dir/state"
	"$pg" --state "$dir/state" ingest "$dir/list.mbox" >/dev/null
fi
stored=$("$pg" --state "$dir/state" store info --json 2>/dev/null |
	"$PY" -c 'import json, sys; print(json.load(sys.stdin).get("messages", "?"))' || echo "?")
git -C "$dir/upstream.git" cat-file --batch-all-objects --batch >/dev/null

printf 'upstream:   %d commits (%s)\n' "$commits" "$dir/upstream.git"
printf 'store:      %s messages\n' "$stored"
printf 'patchgate:  %s\n' "$("$pg" --version 2>/dev/null | head -1)"
: >"$tmp/walls"
for run in $(seq "$runs"); do
	rm -rf "$tmp/state" && cp -a "$dir/state" "$tmp/state"
	sync
	t0=$(date +%s.%N)
	G_MESSAGES_DEBUG=pgate-upstream /usr/bin/time -f "%U %S" -o "$tmp/cpu" \
		"$pg" --state "$tmp/state" --config "$tmp/conf" upstream --json \
		>"$tmp/out.json" 2>"$tmp/err"
	t1=$(date +%s.%N)
	calc "$t1 - $t0" >>"$tmp/walls"
	echo "run $run: $(calc "$t1 - $t0") s wall, $(awk '{ print $1 + $2 }' "$tmp/cpu") s CPU: $(cat "$tmp/out.json")"
	sed -n 's/.*master: /  /p' "$tmp/err"
done
wall=$(sort -n "$tmp/walls" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
printf '\nmedian wall time: %.2f s for %d commits against %s stored patches (goal: < 2 s): %s\n' \
	"$wall" "$commits" "$stored" "$([ "$(calc "$wall < 2")" = 1 ] && echo met || echo NOT met)"
