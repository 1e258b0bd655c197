#!/bin/bash
# bench/apply.sh - applying a 10-patch series: `git am` in a worktree (as a
# maintainer runs it) against pgate_apply_series() (tests/apply's
# pgate-apply-tool, one process per series, like `git am`).
#
# usage: bench/apply.sh [BUILD_DIR]     (default build-apply)
#   BENCH_FILES (6000)  files in the generated tree (tests/apply/gen-repo.py
#                       --bench-series: C sources, docs, scripts, binaries)
#   BENCH_RUNS  (7)     runs of each; the median is shown
#
# Needs /usr/bin/time (package time), python3 and git.
# Each run starts from a fresh clone sharing the generated repository's
# objects (git clone --shared): new objects go to the clone, none exist
# from an earlier run.  Timed: git am alone (the clone and its checkout
# are not), and pgate-apply-tool alone.  Both make the same commits (fixed
# committer and date); the script checks their final trees are equal.
# Prints figures; it is not a test.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-apply}
tool=$build/tests/apply/pgate-apply-tool
files=${BENCH_FILES:-6000}
runs=${BENCH_RUNS:-7}
[ -x "$tool" ] || { echo "bench/apply.sh: build $tool first (ninja -C $build)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-apply.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
export GIT_COMMITTER_NAME="Bench Mark" GIT_COMMITTER_EMAIL=bench@example.org
export GIT_COMMITTER_DATE="1700000000 +0000"

python3 "$src/tests/apply/gen-repo.py" --files "$files" --bench-series "$tmp/r"
git -C "$tmp/r" gc -q
git -C "$tmp/r" format-patch -q --binary -o "$tmp/mails" base..bench
n=$(ls "$tmp/mails" | wc -l)
echo "tree: $(git -C "$tmp/r" ls-tree -r base | wc -l) files; series: $n patches," \
	"$(cat "$tmp"/mails/* | wc -c) bytes, $(grep -h '^diff --git' "$tmp"/mails/* | wc -l) file diffs"

now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# timed OUT CMD...: appends "wall cpu" (seconds; cpu = user + sys) to OUT
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$tmp/time" "$@"
	awk '{ print $1, $2 + $3 }' "$tmp/time" >>"$out"
}

: >"$tmp/am.t"
: >"$tmp/pg.t"
for i in $(seq "$runs"); do
	rm -rf "$tmp/wt" "$tmp/bare.git"
	git clone -q --shared "$tmp/r" "$tmp/wt"
	git -C "$tmp/wt" checkout -q --detach base
	git clone -q --bare --shared "$tmp/r" "$tmp/bare.git"
	sync
	timed "$tmp/am.t" git -C "$tmp/wt" am -q "$tmp"/mails/*.patch
	timed "$tmp/pg.t" "$tool" apply \
		--committer "$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>" \
		--date "$GIT_COMMITTER_DATE" "$tmp/bare.git" base \
		"$tmp"/mails/*.patch >"$tmp/pg.out"
	grep -q '^status: ok' "$tmp/pg.out" || { cat "$tmp/pg.out"; exit 1; }
	amtree=$(git -C "$tmp/wt" rev-parse 'HEAD^{tree}')
	amhead=$(git -C "$tmp/wt" rev-parse HEAD)
	pgtree=$(sed -n 's/^tree: //p' "$tmp/pg.out")
	pghead=$(sed -n 's/^head: //p' "$tmp/pg.out")
	[ "$amtree" = "$pgtree" ] && [ "$amhead" = "$pghead" ] || {
		echo "bench/apply.sh: results differ: git am $amhead/$amtree, pgate $pghead/$pgtree" >&2
		exit 1
	}
done
# in one process: the library's own cost, without process start-up
rm -rf "$tmp/bare.git"
git clone -q --bare --shared "$tmp/r" "$tmp/bare.git"
s=$(now)
"$tool" apply --repeat 20 --committer "$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>" \
	--date "$GIT_COMMITTER_DATE" "$tmp/bare.git" base "$tmp"/mails/*.patch >/dev/null
e=$(now)
am=$(cut -d' ' -f1 "$tmp/am.t" | median)
pg=$(cut -d' ' -f1 "$tmp/pg.t" | median)
amc=$(cut -d' ' -f2 "$tmp/am.t" | median)
pgc=$(cut -d' ' -f2 "$tmp/pg.t" | median)
inproc=$(calc "($e - $s) / 20")
echo "median of $runs runs, in ms    wall      cpu (user+sys)"
printf 'git am (worktree)         %8.0f %8.0f\n' "$(calc "$am * 1000")" "$(calc "$amc * 1000")"
printf 'pgate-apply-tool apply    %8.0f %8.0f\n' "$(calc "$pg * 1000")" "$(calc "$pgc * 1000")"
printf 'pgate_apply_series, warm  %8.1f          (mean of 20 in one process)\n' \
	"$(calc "$inproc * 1000")"
ratio=$(calc "$am / $pg")
printf 'git am / pgate, wall      %8.2fx  (target: >= 3x: %s)\n' "$ratio" \
	"$(awk "BEGIN { print ($ratio >= 3) ? \"met\" : \"MISSED\" }")"
# /usr/bin/time counts in 10 ms steps: a ratio of CPU times only when both
# are measurable
if [ "$(calc "($pgc > 0) ? 1 : 0")" = 1 ]; then
	printf 'git am / pgate, cpu       %8.2fx\n' "$(calc "$amc / $pgc")"
fi
echo "identical commits: $amhead"
