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
#   CHAINS_LISTS    the archives of ../shared/corpus to measure (default
#                   "linux-rtc linux-i3c linux-spi linux-hwmon"; NAME.mbox,
#                   or NAME.mbox.xz decompressed into the scratch directory)
#   CHAINS_GENERATED  0: not the generated list
#
# Ingests each archive that is there and the generated list, then prints
# for each, by bench/chains.py: the number of version links, change-id
# chains exact, b4 "Link to vN:" right and exact, fan-outs and
# cross-person links (issue #49's definitions, in chains.py), and a line
# for each fan-out and cross-person link with the series and their rules;
# for the generated list also precision and recall of the links against
# its manifest.  See docs/threading.md ("Where the chains stand").

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

for name in ${CHAINS_LISTS:-linux-rtc linux-i3c linux-spi linux-hwmon}; do
	if [ -s "$corpus/$name.mbox" ]; then
		run "$name" "$corpus/$name.mbox"
	elif [ -s "$corpus/$name.mbox.xz" ]; then
		xz -dc "$corpus/$name.mbox.xz" >"$tmp/$name.mbox"
		run "$name" "$tmp/$name.mbox"
		rm -f "$tmp/$name.mbox"
	fi
done
[ "${CHAINS_GENERATED:-1}" = 0 ] && exit 0
cached_list "$n" "$seed"
run "generated-$n" "$mbox" "$list/list.json"
