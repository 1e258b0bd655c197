#!/bin/bash
# bench/deliver.sh - delivery hook latency: one `patchgate deliver` process
# per message, as procmail or maildrop would run it.
#
#   bench/deliver.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_DELIVERIES  distinct messages delivered (default 500)
#   BENCH_SEED        gen-list.py seed (default 1)
#   BENCH_CACHE       where the generated messages are kept (default bench/.cache)
#   BENCH_TMP         where the state goes (default $TMPDIR): put it on the
#                     disk you care about, since every delivery fsyncs
# See bench/README.md for what the numbers mean.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_DELIVERIES:-500}
seed=${BENCH_SEED:-1}
cache=${BENCH_CACHE:-$here/.cache}
PY=/usr/bin/python3

[ -x "$pg" ] || { echo "bench/deliver.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }

# the messages: a generated list as a maildir, once per (count, seed, generator)
. "$here/lib.sh"
cached_list $((n + n / 5 + 50)) "$seed" maildir

tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-deliver.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$PY" - "$pg" "$tmp" "$list/md" "$n" <<'PY'
import glob, hashlib, os, sys, time

pg, tmp, md, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
state = os.path.join(tmp, "state")
msgdir = os.path.join(tmp, "msgs")
os.mkdir(msgdir)

# n distinct messages (the list has one duplicate delivery: skip it), each
# in a file that becomes the hook's standard input, as an MDA's spool file
paths, seen = [], set()
for path in sorted(glob.glob(os.path.join(md, "cur", "*")) + glob.glob(os.path.join(md, "new", "*"))):
    data = open(path, "rb").read()
    h = hashlib.sha256(data).digest()
    if h in seen:
        continue
    seen.add(h)
    p = os.path.join(msgdir, "%05d.eml" % len(paths))
    open(p, "wb").write(data)
    paths.append(p)
    if len(paths) == n:
        break
if len(paths) < n:
    sys.exit("bench/deliver.sh: only %d distinct messages" % len(paths))
warm = os.path.join(msgdir, "warm.eml")
open(warm, "wb").write(b"From: warm@example.org\nSubject: warm\nMessage-ID: <warm@x>\n\nup\n")
err = os.path.join(tmp, "stderr")

def run(argv, stdin="/dev/null"):
    """Wall time of one process in ms: posix_spawn, as lean as an MDA's fork+exec."""
    fa = [(os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
    _, status = os.waitpid(pid, 0)
    dt = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench/deliver.sh: %s <%s exited %d: %s" % (" ".join(argv), stdin,
                 os.waitstatus_to_exitcode(status), open(err).read()))
    return dt

def pct(ms, q):
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(q * len(ms)))]

def stats(label, ms, note=""):
    print("%-34s n=%-4d p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms%s" % (
        label, len(ms), pct(ms, 0.5), pct(ms, 0.99), max(ms), note))

print("messages:  %d distinct, %.1f KB on average" % (n, sum(os.path.getsize(p) for p in paths) / n / 1024))
print("state in:  %s" % state)
print()

deliver = [pg, "--state", state, "deliver"]
run(deliver, warm)
# interleaved, so that a busy machine skews all four alike
base, start, new, dup = [], [], [], []
for p in paths:
    base.append(run(["/bin/true"]))
    start.append(run([pg, "--version"]))
    new.append(run(deliver, p))
    dup.append(run(deliver, p))

# what the two syncs of an LMDB commit cost on this disk, without patchgate
probe = os.path.join(tmp, "fsync-probe")
fd = os.open(probe, os.O_RDWR | os.O_CREAT, 0o600)
syncs = []
for i in range(200):
    t = time.perf_counter()
    os.pwrite(fd, os.urandom(4096), (i % 64) * 4096)
    os.fdatasync(fd)
    os.pwrite(fd, os.urandom(4096), 64 * 4096)
    os.fdatasync(fd)
    syncs.append((time.perf_counter() - t) * 1000)
os.close(fd)

stats("posix_spawn /bin/true", base)
stats("patchgate --version (startup)", start)
stats("deliver, new message", new, "   target: p99 < 5 ms [%s]" % ("ok" if pct(new, 0.99) < 5 else "MISSED"))
stats("deliver, duplicate (no write)", dup)
stats("2 x (4 KiB pwrite + fdatasync)", syncs)
if pct(base, 0.99) > 3 * pct(base, 0.5):
    print("warning: the machine is busy (starting /bin/true: p99 %.2f ms, %.1fx its p50):"
          " the tails measure the scheduler; run again when it is idle" % (
              pct(base, 0.99), pct(base, 0.99) / pct(base, 0.5)))
print()
print("a delivery's commit (new - duplicate, p50):      %6.2f ms" % (pct(new, 0.5) - pct(dup, 0.5)))
print("a delivery's work past startup (dup - startup):  %6.2f ms" % (pct(dup, 0.5) - pct(start, 0.5)))
PY
