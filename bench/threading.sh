#!/bin/bash
# bench/threading.sh - threading accuracy on linux-i3c.mbox (series,
# complete, version chains with their rules) and ingest throughput with
# threading on vs off on a generated 20,000-message list.
# usage: bench/threading.sh [BUILD_DIR]   (default build-thr)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
pg=${1:-$src/build-thr}/cli/patchgate
corpus=$src/../shared/corpus
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$pg" --state "$tmp/i3c" ingest "$corpus/linux-i3c.mbox" >/dev/null
"$pg" --state "$tmp/i3c" series list --all --json | python3 -c '
import json, sys
d = {s["id"]: s for s in json.load(sys.stdin)["series"]}
print("series", len(d), "complete", sum(s["complete"] for s in d.values()))
heads = [s for s in d.values() if s["superseded_by"] is None]
chains = []
for h in heads:
    c = [h]
    while c[-1]["supersedes"] in d:
        c.append(d[c[-1]["supersedes"]])
    chains.append(c[::-1])
print("chains", len(chains), "longer than one", sum(len(c) > 1 for c in chains))
for c in sorted(chains, key=lambda c: c[0]["date"]):
    if len(c) > 1:
        print(" -> ".join("v%d %s" % (s["version"], s["id"]) + ("" if i == 0 else " [%s]" % s["version_link_reason"]) for i, s in enumerate(c)), "|", c[-1]["name"][:60])
'
n=${PGATE_BENCH_MESSAGES:-20000}
python3 "$src/fixtures/gen-list.py" --messages "$n" --seed 1 --out "$tmp/list.mbox" --manifest "$tmp/list.json" >/dev/null
for mode in --no-thread ""; do
	rm -rf "$tmp/s"
	s=$(date +%s.%N)
	"$pg" --state "$tmp/s" ingest $mode "$tmp/list.mbox" >/dev/null
	e=$(date +%s.%N)
	echo "ingest ${mode:-(threading on)}: $n messages in $(echo "$e - $s" | bc) s"
done
