#!/bin/bash
# bench/chains.sh - version chains: how right they are on real archives.
#
#   bench/chains.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_MESSAGES  messages of the generated list (default 20000)
#   BENCH_SEED      gen-list.py seed (default 1)
#   BENCH_CACHE     where the generated list is kept (default bench/.cache,
#                   shared with bench/ingest.sh)
#   BENCH_TMP       where the states go (default $TMPDIR)
#
# Ingests ../shared/corpus/linux-rtc.mbox.xz (decompressed into the
# scratch directory), ../shared/corpus/linux-i3c.mbox (each when there) and
# the generated list, then prints for each, by bench/chains.py: the
# number of version links, change-id chains exact, b4 "Link to vN:" exact,
# fan-out and cross-person links (see chains.py for the definitions); for
# the generated list also precision and recall of the links against its
# manifest.  See docs/threading.md ("A chain is a line").

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_MESSAGES:-20000}
seed=${BENCH_SEED:-1}
cache=${BENCH_CACHE:-$here/.cache}
corpus=$src/../shared/corpus
PY=/usr/bin/python3
. "$here/lib.sh"

[ -x "$pg" ] || { echo "bench/chains.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-chains.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

run() {	# run NAME MBOX [MANIFEST]
	echo "== $1"
	"$pg" --state "$tmp/$1" ingest "$2" >/dev/null
	"$pg" --state "$tmp/$1" series list --all --json >"$tmp/$1.json"
	"$PY" "$here/chains.py" "$tmp/$1.json" "$2" ${3:+"$3"}
	rm -rf "$tmp/$1" "$tmp/$1.json"
}

if [ -s "$corpus/linux-rtc.mbox.xz" ]; then
	xz -dc "$corpus/linux-rtc.mbox.xz" >"$tmp/linux-rtc.mbox"
	run linux-rtc "$tmp/linux-rtc.mbox"
	rm -f "$tmp/linux-rtc.mbox"
fi
[ -s "$corpus/linux-i3c.mbox" ] && run linux-i3c "$corpus/linux-i3c.mbox"
cached_list "$n" "$seed"
run "generated-$n" "$mbox" "$list/list.json"
