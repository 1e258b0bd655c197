#!/bin/bash
# bench/ingest.sh - bulk import speed: `patchgate ingest` of a generated
# list archive, against `git mailsplit` reading the same file.
#
#   bench/ingest.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_MESSAGES  messages to generate (default 20000)
#   BENCH_SEED      gen-list.py seed (default 1)
#   BENCH_RUNS      timed runs of each command; the median is shown (default 3)
#   BENCH_CACHE     where the generated list is kept (default bench/.cache)
#   BENCH_TMP       where the state and mailsplit output go (default $TMPDIR)
# See bench/README.md for what the numbers mean.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_MESSAGES:-20000}
seed=${BENCH_SEED:-1}
runs=${BENCH_RUNS:-3}
cache=${BENCH_CACHE:-$here/.cache}
PY=/usr/bin/python3

[ -x "$pg" ] || { echo "bench/ingest.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench/ingest.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

# the list, generated once per (messages, seed, generator, git)
. "$here/lib.sh"
cached_list "$n" "$seed"
cat "$mbox" >/dev/null		# warm the page cache: we measure the CPU, not the disk

tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-ingest.XXXXXX")
# git mailsplit is the parsing baseline: its 20,000 output files go to a
# tmpfs when there is one, else creating them dominates and varies wildly
split=$tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && split=$(mktemp -d /dev/shm/bench-mailsplit.XXXXXX)
trap 'rm -rf "$tmp" "$split"' EXIT

msgs=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["counts"]["messages"])' "$list/list.json")
bytes=$(stat -c %s "$mbox")

bench_name=bench/ingest.sh

printf 'list:       %d messages, %.1f MB (%s)\n' "$msgs" "$(calc "$bytes / 1000000")" "$mbox"
printf 'patchgate:  %s\n' "$("$pg" --version 2>/dev/null || echo "$pg")"
printf 'runs:       %d of each; median wall time, largest peak RSS\n' "$runs"
printf 'state in:   %s; mailsplit output in %s\n\n' "$(df --output=fstype "$tmp" | tail -n 1)" \
	"$(df --output=fstype "$split" | tail -n 1)"

timed "$tmp/out" "patchgate ingest" "$pg" --state "$tmp/out/state" ingest --json "$mbox"
pg_wall=$wall pg_rss=$rss
stored=$("$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["stored"])' "$tmp/stdout")
rate=$(calc "$msgs / $pg_wall")
mbs=$(calc "$bytes / 1000000 / $pg_wall")
printf 'patchgate ingest:        %6.2f s  %8.0f msgs/s  %6.1f MB/s  peak RSS %5.1f MB  (%d stored)\n' \
	"$pg_wall" "$rate" "$mbs" "$(calc "$pg_rss / 1024")" "$stored"
printf '  target:                             >= 15000 msgs/s [%s]     < 200 MB [%s]\n' \
	"$(verdict "$rate >= 15000")" "$(verdict "$pg_rss < 204800")"

timed "$split/out" "git mailsplit" git mailsplit -o"$split/out" "$mbox"
st=$tmp/rss-state
rm -rf "$st"
printf 'patchgate peak memory:   %s\n' "$("$PY" "$here/peak-rss.py" "$pg" --state "$st" ingest "$mbox")"
rm -rf "$st"
t0=$(date +%s.%N)
"$pg" --state "$st" ingest --no-thread "$mbox" >/dev/null
t1=$(date +%s.%N)
printf 'patchgate ingest --no-thread (threading off, one run): %6.2f s  %8.0f msgs/s\n' \
	"$(calc "$t1 - $t0")" "$(calc "$msgs / ($t1 - $t0)")"
printf 'git mailsplit:           %6.2f s  %8.0f msgs/s  %6.1f MB/s  peak RSS %5.1f MB  (patchgate/mailsplit %.2fx)\n' \
	"$wall" "$(calc "$msgs / $wall")" "$(calc "$bytes / 1000000 / $wall")" \
	"$(calc "$rss / 1024")" "$(calc "$pg_wall / $wall")"
timed "$split/out" "git mailsplit --mboxrd" git mailsplit --mboxrd -o"$split/out" "$mbox"
printf 'git mailsplit --mboxrd:  %6.2f s  %8.0f msgs/s  %6.1f MB/s  peak RSS %5.1f MB  (patchgate/mailsplit %.2fx)\n' \
	"$wall" "$(calc "$msgs / $wall")" "$(calc "$bytes / 1000000 / $wall")" \
	"$(calc "$rss / 1024")" "$(calc "$pg_wall / $wall")"
