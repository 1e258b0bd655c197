#!/bin/bash
# t0580-upstream - merge detection against real git upstreams built here
# (issue #28, docs/pipeline.md "Merged upstream").
#
# A maintainer applies mailed series with `git am` to a tree that
# patchgate reads through a mirror it fetches:
#
#   A  git am + a b4-style Link: trailer             link rule   merged
#   B  git am -m (Message-ID: trailer), and one
#      patch cherry-picked onto a second branch      link        merged
#   C  plain git am: patch 1 with a fix-up squashed
#      in (subject rule, "applied with changes"),
#      patch 2 with an edited subject (patch-id)                 merged
#   D  two patches of three                          patch-id    partial 2 of 3
#   E  patch 1, then patch 2 a run later             patch-id    partial, merged
#   F  merged before its last patch reached the list link        merged once it comes
#   G  v1 and v2; v2 merged                          link        v1 superseded-by-merge
#
# then master is rebased (rewritten) without D's second patch: D loses
# that match, the others keep theirs under the new commit ids.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
. "$SRCDIR/tests/pipeline/lib-upstream.sh"

cat >"$T/conf" <<EOF
[trust]
everyone = true
[pipeline]
wait_complete = 3600
[upstream]
repos = $T/mirror.git
branches = master;stable
window_days = 36500
EOF
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }
deliver() { for f in "$@"; do P deliver <"$f" >/dev/null || fail "deliver $f"; done; }
sid() {
	P series list --all --json |
	jq_py /dev/stdin "[s['id'] for s in d['series'] if s['name'] == '$1: the series' and s['version'] == ${2:-1}][0]"
}
state() { P series show --json "$(sid "$@")" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]'; }
up() {
	P series show --json "$(sid "$1" "${3:-1}")" |
	jq_py /dev/stdin "sorted((m['rule'], m['branch'], m['changes']) for m in d['series'][0]['stages'].get('upstream', {}).get('patches', {}).values())$2"
}
nmatched() { P series show --json "$(sid "$1" "${2:-1}")" | jq_py /dev/stdin 'str(len(d["series"][0]["stages"].get("upstream", {}).get("patches", {})))'; }
run() { P run >"$T/run.out" 2>&1; }

for s in A B C D E F; do mkseries "$s" 3; done
mkseries G 2
git -C "$T/src" checkout -q G && git -C "$T/src" checkout -q -B G2 G &&
	echo "G 2 better" >"$T/src/G-2.txt" && git -C "$T/src" commit -q -a --amend --no-edit &&
	git -C "$T/src" format-patch -q --cover-letter --thread -2 -o "$T/G2" \
		--subject-prefix="PATCH v2" >/dev/null &&
	git -C "$T/src" checkout -q master && unique G2 G
for s in A B C D E G G2; do deliver "$T/$s"/*.patch; done
deliver "$(patch_n F 0)" "$(patch_n F 1)" "$(patch_n F 2)"

ok "a first run with nothing upstream" run
is "$(state A)" skipped "nothing merged: A goes on as before (no [apply]: skipped)"

# --- the maintainer applies ---
for i in 1 2 3; do am_link "$(patch_n A $i)" || fail "am A $i"; done
for i in 1 2 3; do git -C "$T/maint" am -q -m "$(patch_n B $i)" || fail "am B $i"; done
b3=$(git -C "$T/maint" rev-parse HEAD)
# C: patch 1 with a fix-up squashed in, patch 2 with another subject
git -C "$T/maint" am -q "$(patch_n C 1)" && echo "fixed" >>"$T/maint/C-1.txt" &&
	git -C "$T/maint" commit -q -a --amend --no-edit || fail "C 1"
git -C "$T/maint" am -q "$(patch_n C 2)" &&
	git -C "$T/maint" commit -q --amend -m "C: add the second part, reworded" || fail "C 2"
git -C "$T/maint" am -q "$(patch_n C 3)" || fail "C 3"
git -C "$T/maint" am -q "$(patch_n D 1)" "$(patch_n D 2)" || fail "am D"
git -C "$T/maint" am -q "$(patch_n E 1)" || fail "am E 1"
for i in 1 2 3; do am_link "$(patch_n F $i)" || fail "am F $i"; done
for i in 1 2; do am_link "$(patch_n G2 $i)" || fail "am G2 $i"; done
push master
# B's last patch cherry-picked onto a stable branch too
git -C "$T/maint" checkout -q -b stable "$(git -C "$T/maint" rev-list --max-parents=0 HEAD)"
git -C "$T/maint" cherry-pick -x "$b3" >/dev/null 2>&1 || fail "cherry-pick"
push stable
git -C "$T/maint" checkout -q master

ok "the run that reads them" run
like "$(cat "$T/run.out")" "upstream-read: master: 17 new commits" "run logs what it read" ||
	diag "$(cat "$T/run.out")"
is "$(state A)" merged "A: merged"
is "$(up A)" '[["link", "master", false], ["link", "master", false], ["link", "master", false]]' \
	"A: each patch by its Link: trailer, on master"
is "$(state B)" merged "B: merged"
is "$(up B '[0][0]')" link "B: by git am -m's Message-ID: trailer"
is "$(P series show --json "$(sid B)" | jq_py /dev/stdin '[m.get("also", [{}])[0].get("branch") for k, m in d["series"][0]["stages"]["upstream"]["patches"].items() if m.get("also")]')" \
	'["stable"]' "B: the patch cherry-picked onto stable is seen on both branches"
is "$(state C)" merged "C: merged"
is "$(up C)" '[["patch-id", "master", false], ["patch-id", "master", false], ["subject", "master", true]]' \
	"C: fix-up squashed in: subject rule, applied with changes; edited subject: patch-id"
is "$(state D)" skipped "D: two of three: not merged"
is "$(nmatched D)" 2 "D: partially merged, 2 of 3"
like "$(P status)" "$(sid D): 2 of 3 patches merged upstream" \
	"status names the partially merged series"
is "$(nmatched E)" 1 "E: 1 of 3 after the first step"
isnt_state=$(state F)
unlike "$isnt_state" merged "F: its last patch has not come: not merged yet"
is "$(nmatched F)" 2 "F: the two patches there are matched"
is "$(state G 2)" merged "G v2: merged"
is "$(state G 1)" superseded-by-merge "G v1: superseded by the merge of v2"
P status >"$T/status.txt" 2>&1
like "$(cat "$T/status.txt")" "merged" "status shows merged series" || diag "$(cat "$T/status.txt")"
ok "report html" P report html "$T/html"
like "$(cat "$T/html/series/$(sid C).html")" \
	'<li>merged as <code>1/3 [0-9a-f]{12} on master, by subject \(applied with changes\); 2/3 [0-9a-f]{12} on master, by patch-id; 3/3 [0-9a-f]{12} on master, by patch-id</code>' \
	"C's page says what it was merged as, patch by patch"
like "$(cat "$T/html/series/$(sid D).html")" 'by patch-id \(2 of 3 patches\)</code>' \
	"D's page says it is merged in part"

# --- E's next patches, F's last mail ---
git -C "$T/maint" am -q "$(patch_n E 2)" "$(patch_n E 3)" || fail "am E 2-3"
push master
deliver "$(patch_n F 3)"
ok "the next run" run
is "$(state E)" merged "E: merged in two steps"
is "$(state F)" merged "F: merged once its last patch came (the commit was read before)"
is "$(up F '[2][0]')" link "F: its last patch by the Link: of a commit read a run earlier"

# --- a rebase that drops D's second patch ---
dcommit=$(git -C "$T/maint" log --format=%H --grep='^D: add part 2' master)
git -C "$T/maint" rebase -q --onto "$dcommit~1" "$dcommit" master >/dev/null 2>&1 ||
	fail "rebase"
push master
ok "the run after the rewrite" run
like "$(cat "$T/run.out")" "upstream-rewritten: master" "the rewrite is noticed" ||
	diag "$(cat "$T/run.out")"
is "$(nmatched D)" 1 "D: the dropped patch lost its match"
is "$(state A)" merged "A: still merged"
is "$(state F)" merged "F: still merged"
is "$(P series show --json "$(sid F)" | jq_py /dev/stdin "sorted(m['commit'] for m in d['series'][0]['stages']['upstream']['patches'].values())")" \
	"$(git -C "$T/maint" log --format=%H --grep='^F: add' master | sort | "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))')" \
	"F: matched by its rebased commits now"
ok "a run with nothing new" run
is "$(P upstream --json | jq_py /dev/stdin '[d["branches"], d["commits"], d["matched"]]')" \
	"[0, 0, 0]" "patchgate upstream: nothing new to read" ||
	diag "$(P upstream --json)"
like "$(P recheck "$(sid D)" --rebase master 2>&1)" "recheck of its jobs rebased on master asked by" \
	"patchgate recheck records a request"
P series show --json "$(sid D)" >"$T/d.json"
is "$(jq_py "$T/d.json" 'd["series"][0]["stages"]["recheck"]["pending"]["rebase"]')" master \
	"the request waits in SERIES/recheck"
P recheck s000000000000 >/dev/null 2>&1
is "$?" 66 "patchgate recheck of no series fails (not found)"
done_testing
