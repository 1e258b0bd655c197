#!/bin/bash
# bench/merge.sh - merge detection: how right (issue #43), how fast
# (issue #28).
#
#   bench/merge.sh [path/to/patchgate]      BENCH_PART=kinds|scale|all (all)
#
# Part "kinds" (issue #43): bench/merge-kinds.py makes once, into
# bench/.cache/, the shapes of the issue's kernel run (which cannot be
# repeated here): 180 chains of versions, 70 landed on master and next
# by a maintainer in every way the issue lists (Link:, Message-Id:, no
# trailer, in part, next only, cherry-picked, edited four ways), 114
# older versions never merged, the indent heuristic, another person's
# identical patch, an unchained identical v6, same-subject look-alikes
# 200 days older.  The mbox is ingested into a fresh state, `run` reads
# master and next and makes the moves ([trust] everyone, no [apply]),
# and bench/merge-kinds.py scores every series against the truth: each
# landed kind merged (in part: exactly its landed patches matched), the
# patches matched that never landed (false merges) by rule, the series
# moved to merged that were not, the older versions superseded by the
# merge; then a second `run` (nothing may change), then one more series
# landed (the branch "incr" becomes master) and a third `run` (+1).
#
# Part "scale" (issue #28): bench/merge-gen.py makes once a bare
# repository (git fast-import) of BENCH_COMMITS (10,000) commits and an
# mbox of BENCH_PATCHES (100,000) patch mails: a quarter of the commits
# mailed and carrying a Link: trailer, a quarter mailed without one
# (patch-id rule), a twentieth mailed with another diff (subject rule),
# the rest other patches of the same 500 authors.  The mbox is ingested
# once (a template state per binary); each of BENCH_RUNS (3) runs copies
# it and times `patchgate upstream --json` (fetch off), the first read
# of the branch: every commit read, its patch-id computed, decided and
# remembered.  Beside it, `git log -p master | git patch-id --stable` of
# the same commits, and `patchgate upstream --patch-ids` (when the binary
# has it), whose patch-ids must be git's.  Prints wall and CPU time (user
# + system: on a busy machine the wall time mostly measures the
# scheduler) and the median wall time.  Goal: under 2 s.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
pg=${1:-$src/build/cli/patchgate}
PY=/usr/bin/python3
commits=${BENCH_COMMITS:-10000}
patches=${BENCH_PATCHES:-100000}
runs=${BENCH_RUNS:-3}
part=${BENCH_PART:-all}
cache=${BENCH_CACHE:-$src/bench/.cache}
. "$src/bench/lib.sh"

[ -x "$pg" ] || { echo "bench/merge.sh: no $pg (build first)" >&2; exit 1; }
# the template states are the binary's own (an older one has no sketches)
binkey=$(cat "$pg" "$(dirname "$pg")/patchgate-full" 2>/dev/null | sha1sum | cut -c1-12)
tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-merge.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf 'patchgate:  %s (%s)\n' "$("$pg" --version 2>/dev/null | head -1)" "$pg"

kinds() {
	local key dir conf f
	key=$(cat "$src/bench/merge-kinds.py" | sha1sum | cut -c1-12)-$(git --version | tr -dc '0-9.')
	dir=$cache/merge-kinds-$key
	if [ ! -s "$dir/truth.json" ]; then
		echo "generating the history into $dir ..."
		"$PY" "$src/bench/merge-kinds.py" gen "$dir"
	fi
	cp -a "$dir/up.git" "$tmp/kinds.git"
	conf=$tmp/kinds.conf
	cat >"$conf" <<EOF
[trust]
everyone = true
[upstream]
repos = $tmp/kinds.git
branches = master;next
fetch = false
window_days = 100000
EOF
	"$pg" --state "$tmp/kinds" ingest "$dir/list.mbox" >/dev/null
	f=$tmp/kinds-f
	"$pg" --state "$tmp/kinds" --config "$conf" run -q >/dev/null 2>&1 || true
	"$PY" "$src/bench/merge-kinds.py" score "$dir" "$tmp/kinds" "$pg" \
		--save "$f.1" >"$f.1.json"
	"$pg" --state "$tmp/kinds" --config "$conf" run -q >/dev/null 2>&1 || true
	"$PY" "$src/bench/merge-kinds.py" score "$dir" "$tmp/kinds" "$pg" \
		--save "$f.2" --compare "$f.1" >"$f.2.json"
	git -C "$tmp/kinds.git" update-ref refs/heads/master refs/heads/incr
	"$pg" --state "$tmp/kinds" --config "$conf" run -q >/dev/null 2>&1 || true
	"$PY" "$src/bench/merge-kinds.py" score "$dir" "$tmp/kinds" "$pg" \
		--compare "$f.2" >"$f.3.json"
	"$PY" - "$f.1.json" "$f.2.json" "$f.3.json" <<'PY'
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
k = a["kinds"]
def fig(*names):
    got = sum(k[n][0] for n in names); n = sum(k[n][1] for n in names)
    return "%d/%d" % (got, n)
print("kinds: %d landed series (and one more for the incremental pass), "
      "%d older versions of landed work" % (
          sum(v[1] for k2, v in k.items() if k2 != "incr"), a["older"]))
for label, names in [
        ("landed with a Link:/Message-Id: trailer", ["trailer-link", "trailer-msgid"]),
        ("landed without a trailer (patch-id)", ["none"]),
        ("partial merges flagged partial", ["partial-link", "partial-none"]),
        ("next-only", ["next-only"]), ("cherry-pick", ["cherry-pick"]),
        ("edited by the maintainer", ["edited-reword", "edited-diff", "edited-prefix", "edited-both"]),
        ("  subject reworded (patch-id)", ["edited-reword"]),
        ("  diff edited (same subject)", ["edited-diff"]),
        ("  prefix and a comment line added", ["edited-prefix"]),
        ("  subject and diff both edited", ["edited-both"])]:
    print("  %-44s %s" % (label, fig(*names)))
pid = a["notrailer_by_patch_id"]
print("  %-44s %d/%d" % ("  their patches matched by patch-id", pid[0], pid[1]))
print("  %-44s %d patches in %d series (%s)" % (
    "never-landed patches recorded as merged", a["false_patches"],
    a["false_series"], ", ".join("%d by %s" % (n, r) for r, n in
                                 sorted(a["false_by_rule"].items())) or "none"))
print("  %-44s %d" % ("series moved to merged that were not", a["wrongly_merged"]))
print("  %-44s %d/%d" % ("older versions superseded-by-merge", a["older_sbm"], a["older_of_merged"]))
print("  %-44s %s" % ("\"possibly merged\" hints", ", ".join(
    "%d on %s" % (n, w) for w, n in sorted(a["hints"].items())) or "none"))
print("  %-44s %d series changed, merged %+d" % ("second pass", b["changed"], b["merged_delta"]))
print("  %-44s %d series changed, merged %+d (incr %d/%d)" % (
    "one more series pushed", c["changed"], c["merged_delta"], *c["kinds"]["incr"]))
PY
}

scale() {
	local key dir state stored wall
	key=$commits-$patches-$(sha1sum <"$src/bench/merge-gen.py" | cut -c1-12)
	dir=$cache/merge-$key
	if [ ! -s "$dir/list.mbox" ]; then
		echo "generating $commits commits and $patches mails into $dir ..."
		rm -rf "$dir" && mkdir -p "$dir"
		"$PY" "$src/bench/merge-gen.py" "$dir" "$commits" "$patches"
	fi
	cat >"$tmp/conf" <<EOF
[upstream]
repos = $dir/upstream.git
branches = master
fetch = false
window_days = 100000
EOF
	state=$dir/state-$binkey
	if [ ! -d "$state/store" ]; then
		echo "ingesting $dir/list.mbox (once for this binary) ..."
		rm -rf "$state"
		"$pg" --state "$state" ingest "$dir/list.mbox" >/dev/null
	fi
	stored=$("$pg" --state "$state" store info --json 2>/dev/null |
		"$PY" -c 'import json, sys; print(json.load(sys.stdin).get("messages", "?"))' || echo "?")
	git -C "$dir/upstream.git" cat-file --batch-all-objects --batch >/dev/null
	printf 'upstream:   %d commits (%s)\n' "$commits" "$dir/upstream.git"
	printf 'store:      %s messages\n' "$stored"
	: >"$tmp/walls"
	for run in $(seq "$runs"); do
		rm -rf "$tmp/state" && cp -a "$state" "$tmp/state"
		sync
		t0=$(date +%s.%N)
		G_MESSAGES_DEBUG=pgate-upstream /usr/bin/time -f "%U %S" -o "$tmp/cpu" \
			"$pg" --state "$tmp/state" --config "$tmp/conf" upstream --json \
			>"$tmp/out.json" 2>"$tmp/err"
		t1=$(date +%s.%N)
		calc "$t1 - $t0" >>"$tmp/walls"
		echo "run $run: $(calc "$t1 - $t0") s wall, $(awk '{ print $1 + $2 }' "$tmp/cpu") s CPU: $(cat "$tmp/out.json")"
		sed -n 's/.*master: /  /p' "$tmp/err"
	done
	wall=$(sort -n "$tmp/walls" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf 'median wall time: %.2f s for %d commits against %s stored patches (goal: < 2 s): %s\n' \
		"$wall" "$commits" "$stored" "$([ "$(calc "$wall < 2")" = 1 ] && echo met || echo NOT met)"
	# beside it: git's patch-ids of the same commits
	t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S" -o "$tmp/cpu" sh -c \
		'git -C "$1" log -p master | git patch-id --stable >"$2"' sh \
		"$dir/upstream.git" "$tmp/git-ids"
	t1=$(date +%s.%N)
	echo "git log -p master | git patch-id --stable: $(calc "$t1 - $t0") s wall, $(awk '{ print $1 + $2 }' "$tmp/cpu") s CPU, $(wc -l <"$tmp/git-ids") patch-ids"
	t0=$(date +%s.%N)
	if /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$pg" --state "$tmp/state" \
		upstream --patch-ids "$dir/upstream.git" master >"$tmp/pg-ids" 2>/dev/null; then
		t1=$(date +%s.%N)
		echo "patchgate upstream --patch-ids: $(calc "$t1 - $t0") s wall, $(awk '{ print $1 + $2 }' "$tmp/cpu") s CPU; $(sort "$tmp/git-ids" | comm -12 - <(sort "$tmp/pg-ids") | wc -l) of $(wc -l <"$tmp/git-ids") equal to git's, $(sort "$tmp/pg-ids" | comm -13 <(sort "$tmp/git-ids") - | wc -l) not"
	else
		echo "patchgate upstream --patch-ids: not in this binary"
	fi
}

case $part in
kinds) kinds ;;
scale) scale ;;
*) kinds && scale ;;
esac
