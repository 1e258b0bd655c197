#!/bin/bash
# bench/buildbot.sh - 50 series through patchgate run, on the local runner
# and on a real Buildbot master with two workers on this machine.
#
#   bench/buildbot.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_SERIES  series (default 50)
#   BENCH_TMP     where everything goes (default $TMPDIR)
#
# Makes BENCH_SERIES one-patch series on the demo repository
# (fixtures/gen-demo.sh), each adding a file, and runs them through
# `patchgate run` passes until none is testing, twice from a fresh state
# directory: [ci.local] (bubblewrap; steps: check: true) and [ci] backend =
# buildbot (tests/lib/buildbot.sh's master, builder quick: clean, fetch
# the pushed ref, true; two workers, one build each at a time).  Prints the
# wall time of each and the time per series.  Both test the same commits,
# and neither's steps do any work: what is measured is the gateway and the
# CI engine (apply, push, trigger, poll, checkout).  Needs buildbot,
# buildbot-worker and bwrap.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
SRCDIR=$(dirname "$here")
PATCHGATE=${1:-${PATCHGATE:-$SRCDIR/build/cli/patchgate}}
nseries=${BENCH_SERIES:-50}
PY=/usr/bin/python3
T=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/pgate-bench-buildbot.XXXXXX")
chmod 755 "$T"
# what tests/lib/buildbot.sh needs of tests/lib/tap.sh
TAP_CLEANUP=
bail() { echo "bench/buildbot.sh: $*" >&2; exit 1; }
skip_all() { bail "$*"; }
trap 'eval "$TAP_CLEANUP"; rm -rf "$T"' EXIT
. "$SRCDIR/tests/lib/buildbot.sh"
command -v bwrap >/dev/null || bail "needs bwrap"
export GIT_AUTHOR_NAME="Ann Dev" GIT_AUTHOR_EMAIL=ann@demo.example.org
export GIT_COMMITTER_NAME="Ann Dev" GIT_COMMITTER_EMAIL=ann@demo.example.org

bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null
git clone -q "$T/d/repo.git" "$T/src"
: >"$T/list.mbox"
for i in $(seq "$nseries"); do
	git -C "$T/src" checkout -q -B "s$i" master
	echo "note $i" >"$T/src/note-$i.txt"
	git -C "$T/src" add "note-$i.txt"
	git -C "$T/src" commit -qm "notes: note $i"
	git -C "$T/src" format-patch -1 --stdout --to=calc@lists.demo.example.org \
		--add-header="List-Id: <calc.lists.demo.example.org>" \
		--add-header="Message-Id: <bench-$i@demo.example.org>" >>"$T/list.mbox"
done
git init -q --bare "$T/ci.git"
bb_setup "$T/bb"
bb_start_master
bb_start_worker 1
bb_start_worker 2

common="[apply]
repo = $T/d/repo.git
push_url = file://$T/ci.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0"
printf '%s\n[ci.local]\ncommands = check: true\nwork_root = %s\n' "$common" "$T" >"$T/local.conf"
printf '%s\n[ci]\nbackend = buildbot\n[ci.buildbot]\nurl = %s\nscheduler = patchgate\nbuilder = quick\n' \
	"$common" "$BB_URL" >"$T/bb.conf"

# through STATE CONF: passes until no series is testing; prints the
# seconds and the series done
through() {
	"$PATCHGATE" --state "$1" ingest "$T/list.mbox" >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	for _ in $(seq 2000); do
		"$PATCHGATE" --state "$1" --config "$2" run -q 2>>"$1.err" || true
		"$PATCHGATE" --state "$1" status | grep -q testing || break
		sleep 0.2
	done
	t1=$(date +%s.%N)
	"$PY" -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1"
	"$PATCHGATE" --state "$1" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["states"].get("done", 0))'

}
echo "$nseries one-patch series, $(nproc) cores"
for kind in local bb; do
	{ read -r s; read -r done; } < <(through "$T/s-$kind" "$T/$kind.conf")
	label=$([ $kind = local ] && echo "local runner (bwrap)" || echo "buildbot, 2 workers")
	printf '%-24s %6s s   %5s s/series   (%s done)\n' "$label" "$s" \
		"$("$PY" -c "print('%.2f' % ($s / $nseries))")" "$done"
done
