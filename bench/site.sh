#!/bin/bash
# bench/site.sh - the static site (docs/report-site.md) with many series.
#
#   bench/site.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_SERIES  series in the store (default 20000)
#   BENCH_RUNS    runs of each timed step; the median is shown (default 3)
#   BENCH_TMP     where the state and the site go (default $TMPDIR)
#
# Generates BENCH_SERIES one-patch series (200 senders, 3 lists, 90 days),
# ingests them, and times, as whole commands (process start included):
#
#   full      `report html DIR` into an empty DIR: every page
#   again     the same into the full DIR, nothing changed: nothing written
#   one       after `run --series ID` moved one series: `report html
#             --series ID DIR`, which is what the daemon does after a pass
#             that changed that series (its pages, the listings that show
#             it, index.html, index.json)
#
# Goals (issue #30): one < 50 ms, full < 20 s, with 20,000 series.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_SERIES:-20000}
runs=${BENCH_RUNS:-3}
PY=/usr/bin/python3
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/pgate-bench-site.XXXXXX")
[ -n "${BENCH_KEEP:-}" ] && echo "keeping $tmp" || trap 'rm -rf "$tmp"' EXIT

"$PY" - "$n" "$tmp/list.mbox" <<'PY'
import sys
n, out = int(sys.argv[1]), sys.argv[2]
base = 1730000000
with open(out, "w") as f:
    for i in range(n):
        who = i % 200
        lst = ("alpha", "beta", "gamma")[i % 3]
        t = base + i * (90 * 86400 // n)
        f.write(f"""From dev{who}@example.org Mon Jan  1 00:00:00 2024
From: Dev {who} <dev{who}@example.org>
To: {lst}@lists.example.org
List-Id: <{lst}.lists.example.org>
Subject: [PATCH] {lst}: change number {i} <&>
Date: {__import__('email.utils').utils.formatdate(t)}
Message-ID: <bench-{i}@example.org>

Change {i}.

Signed-off-by: Dev {who} <dev{who}@example.org>
---
 f{i % 50}.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/f{i % 50}.c b/f{i % 50}.c
--- a/f{i % 50}.c
+++ b/f{i % 50}.c
@@ -1 +1,2 @@
 x
+y{i}

""")
PY
printf '[pipeline]\nwait_complete = 0\n[trust]\neveryone = true\n' >"$tmp/conf"
P() { "$pg" --state "$tmp/s" --config "$tmp/conf" "$@"; }
P ingest "$tmp/list.mbox" >/dev/null
stored=$(P series list --all --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["series"]))')
echo "series stored: $stored"

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$tmp/full"
for r in $(seq "$runs"); do
	rm -rf "$tmp/html"
	t=$(date +%s%N)
	P report html "$tmp/html" >/dev/null
	ms "$t" >>"$tmp/full"
done
: >"$tmp/again"
for r in $(seq "$runs"); do
	t=$(date +%s%N)
	P report html --json "$tmp/html" >"$tmp/again.json"
	ms "$t" >>"$tmp/again"
done
ids=$(P series list --all --json | "$PY" -c '
import json, sys
s = json.load(sys.stdin)["series"]
print(" ".join(x["id"] for x in s[len(s) // 2:len(s) // 2 + '"$runs"']))')
: >"$tmp/one"
for id in $ids; do
	P run -q --series "$id" >/dev/null 2>&1 || true
	t=$(date +%s%N)
	P report html --json --series "$id" "$tmp/html" >"$tmp/one.json"
	ms "$t" >>"$tmp/one"
done
files=$(find "$tmp/html" -type f | wc -l)
size=$(du -sh "$tmp/html" | cut -f1)
echo "site: $files files, $size"
echo "full build:          $(median <"$tmp/full") ms (median of $runs; goal < 20000)"
echo "again, no change:    $(median <"$tmp/again") ms; $(cat "$tmp/again.json")"
echo "one series changed:  $(median <"$tmp/one") ms (median of $runs; goal < 50); $(cat "$tmp/one.json")"
