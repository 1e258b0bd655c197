#!/bin/bash
# t0582-upstream-evidence - merge detection never calls a look-alike
# merged (issue #43, docs/pipeline.md "Merged upstream"): one commit is one
# patch, the evidence has ranks, and every match says why.  Real git trees
# built here; Ann is trusted, the others wait for approval (so their
# series stay unfinished and each pass looks their patches up among the
# commits read before, the direction where look-alikes used to match):
#
#   V  v1, v2, v3; v2 identical to v3; v3 applied with a Link: trailer
#                            v3 merged (link), v2 and v1 superseded-by-merge,
#                            v2 never matched
#   W  the same, v3 applied without a trailer
#                            v3 merged (patch-id), v2 never matched
#   P  "Add the pulse driver" applied as "pulse: Add the pulse driver"
#      with a comment line   merged, applied with changes (edited-subject)
#   I  a diff git makes with the indent heuristic, subject reworded
#                            merged (patch-id); `upstream --patch-ids` is
#                            `git log -p | git patch-id --stable`
#   T  Ann's patch and Bob's identical one; Ann's applied
#                            Ann's merged, Bob's possibly merged, waiting
#   Z  Zed's patch, and a commit of his with its subject 200 days later
#      (Z2: the same, the mail stored after the commit was read)
#                            possibly merged, waiting (never merged)
#   S  v6 identical to v7, not chained to it; v7 applied
#                            v7 merged, v6 possibly merged
#   L  Lin's 2-patch series and another of hers with one patch of the same
#      subject, applied with a Link: naming the second (the first stored
#      after the commit was read)
#                            the first possibly merged, never matched
#
# then a pass with nothing new changes nothing, and commits on master and
# next that leave next keep their matches on master.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
. "$SRCDIR/tests/pipeline/lib-upstream.sh"

cat >"$T/conf" <<EOF
[trust]
trusted = ann@example.org
[pipeline]
wait_complete = 3600
[upstream]
repos = $T/mirror.git
branches = master;next
window_days = 36500
subject_days = 14
EOF
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }
deliver() { for f in "$@"; do P deliver <"$f" >/dev/null || fail "deliver $f"; done; }
# sid KEY [VERSION]: the series KEY names (its cover "KEY: the series",
# or a single patch's subject)
sid() {
	local name=$1 v=${2:-1}
	case $1 in
	P) name="Add the pulse driver" ;;
	I) name="I: add g" ;;
	T) name="T: fix the frobnicator" ;;
	T-bob) name="frob: fix it too" ;;
	Z) name="Z: tune the widget" ;;
	Z2) name="Z2: tune the gadget" ;;
	S6) name="S: add the knob" v=6 ;;
	S7) name="S: introduce a knob control" v=7 ;;
	esac
	P series list --all --json |
	jq_py /dev/stdin "[s['id'] for s in d['series'] if s['name'] in ('$name: the series', '$name') and s['version'] == $v][0]"
}
show() { P series show --json "$(sid "$@")" >"$T/show.json" && echo "$T/show.json"; }
state() { jq_py "$(show "$@")" 'd["series"][0]["stages"]["pipeline"]["state"]'; }
# matches NAME [VERSION]: [rule, rank] of each matched patch
matches() {
	jq_py "$(show "$@")" 'sorted([m["rule"], m.get("rank")] for m in d["series"][0]["stages"].get("upstream", {}).get("patches", {}).values())'
}
# hints NAME [VERSION]: the rules of its "possibly merged" hints
hints() {
	jq_py "$(show "$@")" 'sorted(h["rule"] for v in d["series"][0]["stages"].get("upstream", {}).get("possible", {}).values() for h in v)'
}
events() {
	jq_py "$(show "$@")" '[e["state"] for e in d["series"][0]["stages"]["pipeline"]["events"]]'
}
text() { P series show "$(sid "$@")"; }
run() { P run >"$T/run.out" 2>&1 || diag "$(cat "$T/run.out")"; }
am() { git -C "$T/maint" am -q "$1" >/dev/null || fail "am $1"; }
day() { echo "$((1733212800 + $1 * 86400)) +0000"; }

# --- the mails ---
# V and W: v1, then v2 and v3 with the same diff (v3 sent a day later)
for s in V W; do
	mkseries "$s" 2
	git -C "$T/src" checkout -q -B "${s}2" "$s" &&
		echo "$s 2 better" >"$T/src/$s-2.txt" &&
		git -C "$T/src" commit -q -a --amend --no-edit || bail "$s v2"
	for v in 2 3; do
		git -C "$T/src" format-patch -q --cover-letter --thread -2 \
			-o "$T/$s$v" --subject-prefix="PATCH v$v" >/dev/null
		unique "$s$v" "$s"
	done
	git -C "$T/src" checkout -q master
	"$PY" - "$T/${s}3" <<'PY' || bail "dates"
import email.utils, glob, re, sys
for f in glob.glob(sys.argv[1] + "/*.patch"):
    t = open(f).read()
    d = re.search(r"^Date: (.*)$", t, re.M).group(1)
    later = email.utils.formatdate(email.utils.mktime_tz(
        email.utils.parsedate_tz(d)) + 86400)
    open(f, "w").write(t.replace("Date: " + d, "Date: " + later, 1))
PY
done

# P: a driver, and I: a diff the indent heuristic slides
export GIT_AUTHOR_DATE=$(day 10)
mkpatch P "Add the pulse driver" pulse.c \
	"$(printf 'int pulse_%s(void);\n' init exit read write probe remove)"
func() { printf 'int f%s(void)\n{\n\tif (x) {\n\t\treturn %s;\n\t}\n\n\treturn 0;\n}\n\n' "$1" "$1"; }
printf '%s\n' "$(func 0; func 1; func 2)" >"$T/src/i.c"
git -C "$T/src" add i.c && git -C "$T/src" commit -q -m "i.c" &&
	git -C "$T/src" push -q "$T/up.git" master &&
	git -C "$T/maint" pull -q || bail "i.c upstream"
mkpatch I "I: add g" i.c "$({ func 0; func 1; printf 'int f2(void)\n{\n}\n\nint g(void)\n'; func 2 | tail -n +2; })"
git -C "$T/src" show I >"$T/i-default.diff"
git -C "$T/src" show --no-indent-heuristic I >"$T/i-plain.diff"
isnt_same=$(cmp -s "$T/i-default.diff" "$T/i-plain.diff" || echo differ)
is "$isnt_same" differ "I's diff is one the indent heuristic changes"

# T: Ann's patch, and Bob's identical one (sent later)
export GIT_AUTHOR_DATE=$(day 20)
mkpatch T "T: fix the frobnicator" frob.c "int frob = 1;"
GIT_AUTHOR_NAME="Bob Other" GIT_AUTHOR_EMAIL=bob@example.org \
	GIT_AUTHOR_DATE=$(day 21) \
	mkpatch T-bob "frob: fix it too" frob.c "int frob = 1;"

# Z: Zed's patch on day 30, and a second one (its copy for the other order)
GIT_AUTHOR_NAME=Zed GIT_AUTHOR_EMAIL=zed@example.org GIT_AUTHOR_DATE=$(day 30) \
	mkpatch Z "Z: tune the widget" widget.c "int widget = 3;"
GIT_AUTHOR_NAME=Zed GIT_AUTHOR_EMAIL=zed@example.org GIT_AUTHOR_DATE=$(day 31) \
	mkpatch Z2 "Z2: tune the gadget" gadget.c "int gadget = 3;"

# S: v6 and v7 of the same patch under other names (not one chain)
export GIT_AUTHOR_DATE=$(day 40)
mkpatch S6 "S: add the knob" knob.c "int knob;" "PATCH v6"
export GIT_AUTHOR_DATE=$(day 41)
mkpatch S7 "S: introduce a knob control" knob.c "int knob;" "PATCH v7"

# L: Lin's series, then another one whose first patch has the same
# subject; the second is applied, edited, with its Link:
lin() { GIT_AUTHOR_NAME=Lin GIT_AUTHOR_EMAIL=lin@example.org "$@"; }
# mklin NAME DAY SUBJECT1 SUBJECT2: Lin's 2-patch series of that day
mklin() {
	git -C "$T/src" checkout -q -B "$1" master
	for i in 1 2; do
		echo "$1 $i" >"$T/src/$1-$i.txt" && git -C "$T/src" add . &&
		GIT_AUTHOR_DATE=$(day "$2") lin git -C "$T/src" commit -q \
			-m "$([ "$i" = 1 ] && echo "$3" || echo "$4")"
	done
	git -C "$T/src" format-patch -q --cover-letter --thread -2 -o "$T/$1" >/dev/null
	git -C "$T/src" checkout -q master
}
mklin L 50 "L: add part 1" "L: add part 2" && unique L
mklin L2 52 "L: add part 1" "L: rework the lamp" && unique L2 "L: a new lamp"

for s in V V2 V3 W W2 W3 P I T T-bob Z S6 S7 L2; do deliver "$T/$s"/*.patch; done
ok "a first run with nothing upstream" run
is "$(state V 3) $(state V 2) $(state T-bob)" "skipped superseded awaiting-approval" \
	"V v3 skipped (no [apply]), v2 superseded, Bob's patch waits for approval"

# --- the maintainer applies ---
for i in 1 2; do am_link "$(patch_n V3 $i)" || fail "am V3 $i"; done
for i in 1 2; do am "$(patch_n W3 $i)"; done
am "$T/P/0001-"*.patch
echo "/* the pulse of it */" >>"$T/maint/pulse.c"
git -C "$T/maint" commit -q -a --amend -m "pulse: Add the pulse driver" || fail "P"
am "$T/I/0001-"*.patch
git -C "$T/maint" commit -q --amend -m "i: a g between f1 and f2" || fail "I"
am "$T/T/0001-"*.patch
am "$T/S7/0001-"*.patch
am "$(patch_n L2 1)"
echo "lamp 1, edited" >"$T/maint/lamp-1.txt"
git -C "$T/maint" commit -q -a --amend --no-edit \
	--trailer "Link: https://lore.kernel.org/r/$(msgid "$(patch_n L2 1)")" || fail "L2"
# Zed's later commits: the same subjects, other diffs, 200 days on
for z in widget:Z gadget:Z2; do
	echo "int ${z%%:*} = 4;" >"$T/maint/${z%%:*}.c" && git -C "$T/maint" add . &&
	GIT_AUTHOR_NAME=Zed GIT_AUTHOR_EMAIL=zed@example.org GIT_AUTHOR_DATE=$(day 230) \
		git -C "$T/maint" commit -q -m "${z#*:}: tune the $([ "${z%%:*}" = widget ] && echo widget || echo gadget)" ||
		fail "Zed's commit"
done
push master

ok "the run that reads them" run
is "$(state V 3)" merged "V v3: merged"
is "$(matches V 3)" '[["link", "merged"], ["link", "merged"]]' "V v3: by its Link: trailers"
is "$(state V 2) $(state V 1)" "superseded-by-merge superseded-by-merge" \
	"V v2 and v1: superseded by the merge of v3"
is "$(matches V 2) $(hints V 2)" "[] []" "V v2, identical to v3: never matched, no hint"
like "$(text V 3)" "1/2 merged as [0-9a-f]{12} on master, by link: the commit's Link:/Message-Id: names it, the same patch-id" \
	"series show says the rule and the evidence"
like "$(text V 3)" "not $(sid V 2) v2 <[^>]*>: the commit's trailer names <[^>]*> of its chain \(v3\)" \
	"and why v2 lost" || diag "$(text V 3)"

is "$(state W 3)" merged "W v3: merged"
is "$(matches W 3)" '[["patch-id", "merged"], ["patch-id", "merged"]]' "W v3: by patch-id"
is "$(matches W 2) $(state W 2)" "[] superseded-by-merge" \
	"W v2, identical to v3 and older: never matched, superseded-by-merge"
is "$(events W 2)" '["superseded", "superseded-by-merge"]' "W v2 was never merged, not even for a pass"
like "$(text W 3)" "not $(sid W 2) v2 <[^>]*>: an older version in the chain of the one merged \(v3\)" \
	"W v3 says why v2 lost" || diag "$(text W 3)"

is "$(state P)" merged "P: merged"
is "$(matches P)" '[["edited-subject", "applied-with-changes"]]' \
	"P: the same author and subject but for its new prefix, most lines alike: applied with changes"
like "$(text P)" "applied with changes as [0-9a-f]{12} on master, by edited-subject: the same author and subject but for prefix, case or punctuation, dated within a day of the commit, changed lines 86% alike" \
	"P: the evidence" || diag "$(text P)"

is "$(state I)" merged "I: merged"
is "$(matches I)" '[["patch-id", "merged"]]' "I: by git's patch-id (indent heuristic)"
git -C "$T/mirror.git" log -p master | git patch-id --stable | sort >"$T/git-ids"
P upstream --patch-ids "$T/mirror.git" master | sort >"$T/pg-ids"
is "$(diff "$T/git-ids" "$T/pg-ids" && wc -l <"$T/pg-ids")" "$(wc -l <"$T/git-ids")" \
	"upstream --patch-ids: every commit's patch-id is git patch-id --stable's"

is "$(state T) $(matches T)" 'merged [["patch-id", "merged"]]' "T: Ann's patch merged"
is "$(state T-bob) $(matches T-bob) $(hints T-bob)" 'awaiting-approval [] ["patch-id"]' \
	"T: Bob's identical patch possibly merged, and still waiting"
like "$(text T-bob)" "1/1 possibly merged as [0-9a-f]{12} on master \(patch-id: .*\): sent by bob@example.org, not by the commit's author ann@example.org" \
	"Bob's page says why" || diag "$(text T-bob)"

is "$(state Z) $(matches Z) $(hints Z)" 'awaiting-approval [] ["subject"]' \
	"Z: a commit 200 days after the patch: possibly merged, never merged"
like "$(text Z)" "dated 200 days before the commit: outside subject_days \(14\)" "Z: why" ||
	diag "$(text Z)"

is "$(state S7 7) $(matches S7 7)" 'merged [["patch-id", "merged"]]' "S v7: merged"
is "$(state S6 6) $(matches S6 6) $(hints S6 6)" 'skipped [] ["patch-id"]' \
	"S v6, identical but in no chain with v7: possibly merged, not merged"
like "$(text S6 6)" "possibly merged as [0-9a-f]{12} on master \(patch-id: .*\): sent before $(sid S7 7)'s" \
	"S v6: why" || diag "$(text S6 6)"

is "$(matches "L: a new lamp")" '[["link", "merged"]]' "L's second series: patch 1 by its Link:"

ok "report html" P report html "$T/html"
like "$(cat "$T/html/series/$(sid T-bob).html")" \
	'<li><code>1/1 possibly merged as [0-9a-f]{12} on master \(patch-id: [^<]*\): sent by bob@example.org, not by the commit&#39;s author ann@example.org</code></li>' \
	"the site: Bob's page says possibly merged, and why" ||
	diag "$(grep -A3 upstream "$T/html/series/$(sid T-bob).html")"
like "$(cat "$T/html/series/$(sid W 3).html")" \
	'<li><code>  not [^ ]* v2 &lt;[^<]*&gt;: an older version in the chain of the one merged \(v3\)</code></li>' \
	"the site: W v3's page says why v2 lost"

# --- the other order: mail stored after the commits were read ---
deliver "$T/Z2"/*.patch "$T/L"/*.patch
ok "the run after the late mails" run
is "$(state Z2) $(matches Z2) $(hints Z2)" 'awaiting-approval [] ["subject"]' \
	"Z2, stored after its look-alike commit was read: the same as Z"
is "$(matches L) $(hints L) $(state L)" '[] ["subject"] awaiting-approval' \
	"L: the same author and subject, but the commit's Link: names another mail: possibly merged"
like "$(text L)" "the commit's trailer names <[^>]*>" "L: why" || diag "$(text L)"

# --- nothing new ---
# every series' state and SERIES/upstream
snapshot() {
	for id in $(P series list --all --json | jq_py /dev/stdin '" ".join(s["id"] for s in d["series"])'); do
		P series show --json "$id" |
		jq_py /dev/stdin '[d["series"][0]["id"], d["series"][0]["stages"].get("pipeline", {}).get("state"), d["series"][0]["stages"].get("upstream")]'
	done
}
snapshot >"$T/snap1"
ok "a run with nothing new" run
snapshot >"$T/snap2"
is "$(diff "$T/snap1" "$T/snap2" && wc -l <"$T/snap2")" 16 \
	"the second pass changes no state and no match of the 16 series"
# --- the same commits on next, then next rewritten without them ---
also() { jq_py "$(show "$@")" 'sorted(a["branch"] for m in d["series"][0]["stages"]["upstream"]["patches"].values() for a in m.get("also", []))'; }
git -C "$T/maint" push -q -f origin master:refs/heads/next
ok "the run that reads next" run
is "$(also T) $(also W 3)" '["next"] ["next", "next"]' "the commits are seen on next too"
git -C "$T/maint" push -q -f origin "$(git -C "$T/maint" rev-list --max-parents=0 master):refs/heads/next"
ok "the run after next's rewrite" run
like "$(cat "$T/run.out")" "upstream-rewritten: next" "the rewrite is noticed" ||
	diag "$(cat "$T/run.out")"
is "$(state T) $(matches T) $(also T)" 'merged [["patch-id", "merged"]] []' \
	"T: still matched on master, no longer on next"
is "$(matches W 3) $(also W 3)" '[["patch-id", "merged"], ["patch-id", "merged"]] []' \
	"W v3: the same"
done_testing
