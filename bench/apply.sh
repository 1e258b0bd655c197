#!/bin/bash
# bench/apply.sh - applying a 10-patch series: `git am` in a worktree (as a
# maintainer runs it) against pgate_apply_series() (tests/apply's
# pgate-apply-tool, one process per series, like `git am`) and against the
# command, `patchgate apply SERIES` (the lean binary execs patchgate-full;
# it reads the series from a store, applies, writes its ref and its result).
#
# usage: bench/apply.sh [BUILD_DIR]     (default build-apply)
#   BENCH_FILES (6000)  files in the generated tree (tests/apply/gen-repo.py
#                       --bench-series: C sources, docs, scripts, binaries)
#   BENCH_RUNS  (7)     runs of each; the median is shown
#
# Needs /usr/bin/time (package time), python3 and git.
# Each run starts from fresh clones sharing the generated repository's
# objects (git clone --shared): new objects go to the clone, none exist
# from an earlier run.  Timed: git am alone (the clone and its checkout
# are not), pgate-apply-tool alone, and patchgate apply alone (the mails
# are ingested into its store once, untimed; [apply] committer_date fixes
# the date).  All three make the same commits (fixed committer and date);
# the script checks it.  Then the start-up of each process, by itself:
# `git --version`, `patchgate --version`, `patchgate-full --version`.
# Prints figures; it is not a test.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-apply}
tool=$build/tests/apply/pgate-apply-tool
pgate=$build/cli/patchgate
files=${BENCH_FILES:-6000}
runs=${BENCH_RUNS:-7}
for x in "$tool" "$pgate"; do
	[ -x "$x" ] || { echo "bench/apply.sh: build $x first (ninja -C $build)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-apply.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
export GIT_COMMITTER_NAME="Bench Mark" GIT_COMMITTER_EMAIL=bench@example.org
export GIT_COMMITTER_DATE="1700000000 +0000"

/usr/bin/python3 "$src/tests/apply/gen-repo.py" --files "$files" --bench-series "$tmp/r"
git -C "$tmp/r" gc -q
# threaded, with a cover letter: a series for patchgate's store too
git -C "$tmp/r" format-patch -q --binary --thread=shallow --cover-letter \
	--to=list@example.org -o "$tmp/mails" base..bench
patches=("$tmp"/mails/0*-bench-*.patch)
n=${#patches[@]}
echo "tree: $(git -C "$tmp/r" ls-tree -r base | wc -l) files; series: $n patches," \
	"$(cat "${patches[@]}" | wc -c) bytes, $(grep -h '^diff --git' "${patches[@]}" | wc -l) file diffs"
for m in "$tmp"/mails/*.patch; do cat "$m"; echo; done >"$tmp/list.mbox"
"$pgate" --state "$tmp/state" ingest "$tmp/list.mbox" >/dev/null
sid=$("$pgate" --state "$tmp/state" series list | cut -d' ' -f1)
cat >"$tmp/conf" <<EOF
[apply]
repo = $tmp/cmd.git
branches = base
committer_name = $GIT_COMMITTER_NAME
committer_email = $GIT_COMMITTER_EMAIL
committer_date = $GIT_COMMITTER_DATE
EOF

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
: >"$tmp/cmd.t"
for i in $(seq "$runs"); do
	rm -rf "$tmp/wt" "$tmp/bare.git" "$tmp/cmd.git"
	git clone -q --shared "$tmp/r" "$tmp/wt"
	git -C "$tmp/wt" checkout -q --detach base
	git clone -q --bare --shared "$tmp/r" "$tmp/bare.git"
	git clone -q --bare --shared "$tmp/r" "$tmp/cmd.git"
	sync
	timed "$tmp/am.t" git -C "$tmp/wt" am -q "${patches[@]}"
	timed "$tmp/pg.t" "$tool" apply \
		--committer "$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>" \
		--date "$GIT_COMMITTER_DATE" "$tmp/bare.git" base \
		"${patches[@]}" >"$tmp/pg.out"
	timed "$tmp/cmd.t" "$pgate" --state "$tmp/state" --config "$tmp/conf" \
		apply "$sid" >"$tmp/cmd.out"
	grep -q '^status: ok' "$tmp/pg.out" || { cat "$tmp/pg.out"; exit 1; }
	grep -q '^base: ok' "$tmp/cmd.out" || { cat "$tmp/cmd.out"; exit 1; }
	amtree=$(git -C "$tmp/wt" rev-parse 'HEAD^{tree}')
	amhead=$(git -C "$tmp/wt" rev-parse HEAD)
	pgtree=$(sed -n 's/^tree: //p' "$tmp/pg.out")
	pghead=$(sed -n 's/^head: //p' "$tmp/pg.out")
	cmdhead=$(git -C "$tmp/cmd.git" rev-parse "refs/heads/patchgate/$sid/v1/base")
	[ "$amtree" = "$pgtree" ] && [ "$amhead" = "$pghead" ] &&
	[ "$amhead" = "$cmdhead" ] || {
		echo "bench/apply.sh: results differ: git am $amhead/$amtree," \
		     "pgate-apply-tool $pghead/$pgtree, patchgate apply $cmdhead" >&2
		exit 1
	}
done
# in one process: the library's own cost, without process start-up
rm -rf "$tmp/bare.git"
git clone -q --bare --shared "$tmp/r" "$tmp/bare.git"
s=$(now)
"$tool" apply --repeat 20 --committer "$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>" \
	--date "$GIT_COMMITTER_DATE" "$tmp/bare.git" base "${patches[@]}" >/dev/null
e=$(now)
# start-up alone: the mean of 50 runs of each, wall
startup() {
	local s e
	s=$(now)
	for _ in $(seq 50); do "$@" >/dev/null; done
	e=$(now)
	calc "($e - $s) * 1000 / 50"
}
su_git=$(startup git --version)
su_lean=$(startup "$pgate" --version)
su_full=$(startup "$build/cli/patchgate-full" --version)
am=$(cut -d' ' -f1 "$tmp/am.t" | median)
pg=$(cut -d' ' -f1 "$tmp/pg.t" | median)
cmd=$(cut -d' ' -f1 "$tmp/cmd.t" | median)
amc=$(cut -d' ' -f2 "$tmp/am.t" | median)
pgc=$(cut -d' ' -f2 "$tmp/pg.t" | median)
cmdc=$(cut -d' ' -f2 "$tmp/cmd.t" | median)
inproc=$(calc "($e - $s) / 20")
echo "median of $runs runs, in ms    wall      cpu (user+sys)"
printf 'git am (worktree)         %8.0f %8.0f\n' "$(calc "$am * 1000")" "$(calc "$amc * 1000")"
printf 'pgate-apply-tool apply    %8.0f %8.0f\n' "$(calc "$pg * 1000")" "$(calc "$pgc * 1000")"
printf 'patchgate apply           %8.0f %8.0f\n' "$(calc "$cmd * 1000")" "$(calc "$cmdc * 1000")"
printf 'pgate_apply_series, warm  %8.1f          (mean of 20 in one process)\n' \
	"$(calc "$inproc * 1000")"
printf 'start-up, mean of 50, ms: git --version %.1f, patchgate --version %.1f,\n' \
	"$su_git" "$su_lean"
printf '                          patchgate-full --version %.1f\n' "$su_full"
# ratio LABEL NUM DEN: NUM / DEN against the 3x target
ratio() {
	local r
	r=$(calc "$2 / $3")
	printf '%-26s%8.2fx  (target: >= 3x: %s)\n' "$1" "$r" \
		"$(awk "BEGIN { print ($r >= 3) ? \"met\" : \"MISSED\" }")"
}
ratio "git am / library, wall" "$am" "$pg"
ratio "git am / command, wall" "$am" "$cmd"
# /usr/bin/time counts in 10 ms steps: a ratio of CPU times only when both
# are measurable
if [ "$(calc "($pgc > 0 && $cmdc > 0) ? 1 : 0")" = 1 ]; then
	printf 'git am / library, cpu     %8.2fx\n' "$(calc "$amc / $pgc")"
	printf 'git am / command, cpu     %8.2fx\n' "$(calc "$amc / $cmdc")"
fi
echo "identical commits: $amhead"
