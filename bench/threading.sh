#!/bin/bash
# bench/threading.sh - threading: accuracy on a real list, and what it costs.
#
#   bench/threading.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_MESSAGES  messages of the generated list (default 20000)
#   BENCH_SEED      gen-list.py seed (default 1)
#   BENCH_RUNS      runs of each mode, alternated; medians shown (default 11)
#   BENCH_CACHE     where the generated list is kept (default bench/.cache,
#                   shared with bench/ingest.sh)
#   BENCH_TMP       where the state goes (default $TMPDIR)
#
# 1. Accuracy: ingests ../shared/corpus/linux-i3c.mbox (when there) and
#    prints the number of series, complete series and version chains, then
#    every chain longer than one with the rule of each link.
# 2. Cost: `patchgate ingest` of the generated list with threading on and
#    with --no-thread, alternated BENCH_RUNS times; the medians of the
#    process's wall time (and messages a second), of ingest's own "seconds"
#    (--json: without process start and exit) and of its CPU time, their
#    ratios, and the verdict on the target: throughput with threading on
#    within 20% of plain ingest's (>= 80% of its messages a second); then
#    how many CPUs each mode kept busy, and the shortest wall time the
#    threaded run's CPU time allows on this machine's CPUs; the writer
#    thread's CPU time in each mode (ingest --json writer_cpu_seconds) and
#    what threading adds to it; the CPU time other processes used during
#    the runs (the ratio is the idle machine's only when that is near 0);
#    last, the spread of the wall time ratio over the rounds.
# See bench/README.md.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_MESSAGES:-20000}
seed=${BENCH_SEED:-1}
runs=${BENCH_RUNS:-11}
cache=${BENCH_CACHE:-$here/.cache}
corpus=$src/../shared/corpus
PY=/usr/bin/python3

[ -x "$pg" ] || { echo "bench/threading.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-threading.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== accuracy: linux-i3c.mbox"
if [ -s "$corpus/linux-i3c.mbox" ]; then
	"$pg" --state "$tmp/i3c" ingest "$corpus/linux-i3c.mbox" >/dev/null
	"$pg" --state "$tmp/i3c" series list --all --json | "$PY" -c '
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
else
	echo "(skipped: no $corpus/linux-i3c.mbox)"
fi

# the list, generated once per (messages, seed, generator, git)
. "$here/lib.sh"
cached_list "$n" "$seed"
cat "$mbox" >/dev/null		# warm the page cache

echo
echo "== cost: $n messages, $runs runs of each mode, alternated"
"$PY" - "$pg" "$tmp" "$mbox" "$runs" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, time

pg, tmp, mbox, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def busy_jiffies():
    # every CPU's busy time so far, in clock ticks: user, nice, system,
    # irq, softirq and steal (another guest's); not idle or iowait, nor
    # guest and guest_nice, which user and nice include already
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4]

hz = os.sysconf("SC_CLK_TCK")
res = {"on": [], "off": []}
others = {"on": 0.0, "off": 0.0}   # CPU seconds used by other processes
stored = 0
for _ in range(runs):
    for mode, args in (("off", ["--no-thread"]), ("on", [])):
        state = os.path.join(tmp, "s")
        shutil.rmtree(state, ignore_errors=True)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        b0 = busy_jiffies()
        t = time.perf_counter()
        out = subprocess.run([pg, "--state", state, "ingest", "--json"] + args + [mbox],
                             check=True, capture_output=True, text=True).stdout
        wall = time.perf_counter() - t
        b1 = busy_jiffies()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        others[mode] += max(0.0, (b1 - b0) / hz - cpu)
        d = json.loads(out)
        stored = d["stored"]
        res[mode].append((wall, d["seconds"], cpu, d["writer_cpu_seconds"]))
med = {m: [statistics.median(x[i] for x in v) for i in range(4)]
       for m, v in res.items()}
for m, label in (("off", "ingest --no-thread"), ("on", "ingest (threading on)")):
    print("%-22s wall %.3f s  %6.0f msgs/s   ingest's own %.3f s   CPU %.2f s   (walls: %s)" % (
        label, med[m][0], stored / med[m][0], med[m][1], med[m][2],
        " ".join("%.2f" % x[0] for x in res[m])))
# the target: "throughput with threading on within 20% of plain ingest",
# i.e. at least 80% of its messages a second (a wall time ratio <= 1.25)
share = med["off"][0] / med["on"][0]
print("threading on / off:    wall x%.2f   ingest's own x%.2f   CPU x%.2f" % (
    med["on"][0] / med["off"][0], med["on"][1] / med["off"][1],
    med["on"][2] / med["off"][2]))
print("throughput with threading on: %.0f%% of plain ingest's   target: >= 80%% [%s]" % (
    100 * share, "ok" if share >= 0.8 else "MISSED"))
# how busy the CPUs were: with threading on, a run that keeps every CPU
# busy cannot be shorter than its CPU time over the CPUs; the rest of its
# wall time is where CPUs waited (start, the last batch's commit, exit)
ncpu = os.cpu_count() or 1
print("CPUs busy (CPU / wall, of %d): off %.2f  on %.2f   CPU-bound floor with threading on: %.3f s (x%.2f of plain's wall)" % (
    ncpu, med["off"][2] / med["off"][0], med["on"][2] / med["on"][0],
    med["on"][2] / ncpu, med["on"][2] / ncpu / med["off"][0]))
# threading runs in the writer thread: its cost is what it adds to that
# thread's CPU time
wd = statistics.median(on[3] - off[3] for on, off in zip(res["on"], res["off"]))
print("writer thread CPU: off %.3f s  on %.3f s   threading's share: %.3f s, %.1f us a message (median of the rounds' differences)" % (
    med["off"][3], med["on"][3], wd, 1e6 * wd / max(stored, 1)))
# the ratio is only meaningful on an otherwise idle machine: under
# contention the writer thread, which does the threading, gets a share of a
# CPU and sets the pace, so the ratio grows past the CPU ratio
load = {m: others[m] / sum(x[0] for x in res[m]) for m in res}
print("other processes' CPU use during the runs (of %d CPUs): off %.2f  on %.2f%s" % (
    ncpu, load["off"], load["on"],
    "   [machine busy: the ratio above is not the idle machine's]"
    if max(load.values()) >= 0.1 else ""))
# the spread: the two modes of one round ran within seconds of each other,
# so their ratio shows how far the host's load moves the verdict
rr = sorted(on[0] / off[0] for on, off in zip(res["on"], res["off"]))
q = lambda f: rr[round(f * (len(rr) - 1))]
print("wall ratio of each round (on/off): min x%.2f  q1 x%.2f  median x%.2f  q3 x%.2f  max x%.2f" % (
    rr[0], q(0.25), q(0.5), q(0.75), rr[-1]))
PY
