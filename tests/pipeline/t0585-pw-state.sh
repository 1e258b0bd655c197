#!/bin/bash
# t0585-pw-state - Patchwork patch states from what became of a series
# ([patchwork] set_state, issue #28, docs/pipeline.md "Patchwork states"),
# against tests/fakes/patchwork.py and a real git upstream built here:
#
#   A  two patches, git am + Link: trailers       accepted, commit_ref = the
#                                                 commit of each, exactly once
#                                                 (the answer to one PATCH is
#                                                 lost: the retry sees it done)
#   H  two patches a human touched first: one     merged, but left alone
#      set to changes-requested, one moved
#      new -> under-review -> new
#   G  v1 and v2 arrive together                  v1 superseded
#   D  v1 tested (skipped) before v2 comes        v1 stays skipped in the
#                                                 pipeline, its patches
#                                                 superseded, once
#   K  Ann's patch, and Bob's identical copy      Ann's accepted, Bob's
#                                                 left new (possibly merged)
#   Z  Zed's patch, mailed after a commit of his  left new (possibly merged:
#      with its subject 200 days later was read   outside subject_days)
#
# and with set_state off, the same runs send no PATCH at all; a 503 is
# retried, a 403 said once and dropped.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
. "$SRCDIR/tests/pipeline/lib-upstream.sh"

mkseries A 2
mkseries H 2
mkseries G 2
git -C "$T/src" checkout -q G && git -C "$T/src" checkout -q -B G2 G &&
	echo "G 2 better" >"$T/src/G-2.txt" && git -C "$T/src" commit -q -a --amend --no-edit &&
	git -C "$T/src" format-patch -q --cover-letter --thread -2 -o "$T/G2" \
		--subject-prefix="PATCH v2" >/dev/null &&
	git -C "$T/src" checkout -q master && unique G2 G
mkseries D 2
git -C "$T/src" checkout -q D && git -C "$T/src" checkout -q -B D2 D &&
	echo "D 2 better" >"$T/src/D-2.txt" && git -C "$T/src" commit -q -a --amend --no-edit &&
	git -C "$T/src" format-patch -q --cover-letter --thread -2 -o "$T/D2" \
		--subject-prefix="PATCH v2" >/dev/null &&
	git -C "$T/src" checkout -q master && unique D2 D

day() { echo "$((1733212800 + $1 * 86400)) +0000"; }
GIT_AUTHOR_DATE=$(day 20) mkpatch K "K: fix the frobnicator" frob.c "int frob = 1;"
GIT_AUTHOR_NAME="Bob Other" GIT_AUTHOR_EMAIL=bob@example.org GIT_AUTHOR_DATE=$(day 21) \
	mkpatch K-bob "frob: fix it too" frob.c "int frob = 1;"
GIT_AUTHOR_NAME=Zed GIT_AUTHOR_EMAIL=zed@example.org GIT_AUTHOR_DATE=$(day 30) \
	mkpatch Z "Z: tune the widget" widget.c "int widget = 3;"

# Patchwork has every patch; "ci" (patchgate) and "human" maintain it
"$PY" - "$T/seed.json" "$T"/{A,H,G,G2,D,D2,K,K-bob,Z}/000[1-9]-*.patch <<'PY' || bail "seed"
import json, re, sys
seed = {"users": [{"username": "ci", "token": "tok-ci-0123"},
                  {"username": "human", "token": "tok-human-4567"}],
        "projects": [{"linkname": "proj", "maintainers": ["ci", "human"]}],
        "patches": []}
for f in sys.argv[2:]:
    text = open(f, encoding="utf-8").read()
    mid = re.search(r"^Message-I[dD]: (<[^>]+>)$", text, re.M).group(1)
    subj = re.search(r"^Subject: (.*)$", text, re.M).group(1)
    seed["patches"].append({"project": "proj", "msgid": mid, "name": subj,
                            "submitter": "ann@example.org"})
json.dump(seed, open(sys.argv[1], "w"))
PY
fake_start pw patchwork.py --seed "$T/seed.json" --state "$T/pw-state.json"
PW_PID=$fake_pid PW=$fake_url
TAP_CLEANUP='kill $PW_PID 2>/dev/null; wait 2>/dev/null'
printf 'tok-ci-0123\n' >"$T/token" && chmod 600 "$T/token"

mkconf() {
	cat <<EOF
[trust]
everyone = true
[pipeline]
wait_complete = 3600
[upstream]
repos = $T/mirror.git
branches = master
window_days = 36500
[patchwork]
url = $PW/
project = proj
token_file = $T/token
user = ci
$1
EOF
}
mkconf "set_state = true" >"$T/conf"
mkconf "" >"$T/conf-off"
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }
deliver() { for f in "$@"; do P deliver <"$f" >/dev/null || fail "deliver $f"; done; }
sid() {
	P series list --all --json |
	jq_py /dev/stdin "[s['id'] for s in d['series'] if s['name'] == '$1: the series' and s['version'] == ${2:-1}][0]"
}
state() { P series show --json "$(sid "$@")" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]'; }
# pw FILE FIELD: the fake's FIELD of the patch mailed as FILE
pw() {
	curl -sf "$PW/_fake/state" |
	jq_py /dev/stdin "[p['$2'] for p in d['patches'] if p['msgid'] == '<$(msgid "$1")>'][0]"
}
pwid() { pw "$1" id; }
# npatch [FILE]: successful PATCH requests (of FILE's patch)
npatch() {
	local path=${1:+/api/1.3/patches/$(pwid "$1")/}
	curl -sf "$PW/_fake/requests" |
	jq_py /dev/stdin "len([r for r in d if r['method'] == 'PATCH' and r['status'] == 200 and ('$path' == '' or r['path'] == '$path')])"
}
human() {
	curl -sf -X PATCH -H 'Authorization: Token tok-human-4567' \
		-H 'Content-Type: application/json' --data "{\"state\": \"$2\"}" \
		"$PW/api/1.3/patches/$(pwid "$1")/" >/dev/null
}

# D v1 is judged (skipped: no [apply]) before its v2 comes
deliver "$T/D"/*.patch
P run >"$T/run0.out" 2>&1
is "$(state D 1)" skipped "D v1: finished before v2 came" || diag "$(cat "$T/run0.out")"

for s in A H G G2 D2; do deliver "$T/$s"/*.patch; done

P run >"$T/run1.out" 2>&1
is "$(state D 1)" skipped "D v1: still skipped in the pipeline"
is "$(pw "$(patch_n D 1)" state) $(pw "$(patch_n D 2)" state)" "superseded superseded" \
	"but its patches are superseded in Patchwork" || diag "$(cat "$T/run1.out")"
is "$(state G 1)" superseded "G v1: superseded" || diag "$(cat "$T/run1.out")"
is "$(pw "$(patch_n G 1)" state) $(pw "$(patch_n G 2)" state)" "superseded superseded" \
	"G v1's patches are superseded in Patchwork"
is "$(curl -sf "$PW/_fake/events?patch=$(pwid "$(patch_n G 1)")" | jq_py /dev/stdin '[(e["actor"], e["previous_state"], e["current_state"]) for e in d]')" \
	'[["ci", "new", "superseded"]]' "one state change, by patchgate's user"
is "$(pw "$(patch_n G2 1)" state) $(pw "$(patch_n A 1)" state)" "new new" \
	"G v2 and A are left as they are"
is "$(P outbox --json | jq_py /dev/stdin '[e["key"] for e in d["outbox"] if e["key"].startswith("pwstate/")]')" \
	"[]" "no state change left in the outbox"

# a human decides about H first
human "$(patch_n H 1)" changes-requested || fail "human PATCH"
human "$(patch_n H 2)" under-review && human "$(patch_n H 2)" new || fail "human PATCH"

# the maintainer applies A and H
for s in A H; do for i in 1 2; do am_link "$(patch_n $s $i)" || fail "am $s $i"; done; done
git -C "$T/maint" push -q origin master
a1=$(git -C "$T/maint" log --format=%H --grep='^A: add part 1' master)
a2=$(git -C "$T/maint" log --format=%H --grep='^A: add part 2' master)

# the answer to A 1's PATCH is lost: Patchwork has it, patchgate cannot know
curl -sf -X POST -H 'Content-Type: application/json' --data \
	"{\"kind\": \"drop_after\", \"method\": \"PATCH\", \"path\": \"patches/$(pwid "$(patch_n A 1)")/\"}" \
	"$PW/_fake/fault" >/dev/null
curl -sf -X POST "$PW/_fake/requests/clear" >/dev/null
P run >"$T/run2.out" 2>&1
is "$(state A) $(state H)" "merged merged" "A and H: merged" || diag "$(cat "$T/run2.out")"
like "$(P outbox)" "pwstate/$(sid A)" "the change whose answer was lost waits in the outbox"
ok "outbox send --all" P outbox send --all
is "$(P outbox --json | jq_py /dev/stdin '[e["key"] for e in d["outbox"] if e["key"].startswith("pwstate/")]')" \
	"[]" "and is sent"
is "$(pw "$(patch_n A 1)" state) $(pw "$(patch_n A 2)" state)" "accepted accepted" \
	"A's patches are accepted"
is "$(pw "$(patch_n A 1)" commit_ref) $(pw "$(patch_n A 2)" commit_ref)" "$a1 $a2" \
	"each with the upstream commit that matched it as commit_ref"
is "$(npatch "$(patch_n A 1)") $(npatch "$(patch_n A 2)")" "1 1" \
	"one PATCH each: the retry after the lost answer found it done"
is "$(pw "$(patch_n H 1)" state) $(pw "$(patch_n H 2)" state)" "changes-requested new" \
	"H: a human's states are left alone"
is "$(pw "$(patch_n H 1)" commit_ref)" "null" "H: no commit_ref either"
is "$(npatch "$(patch_n H 1)") $(npatch "$(patch_n H 2)")" "0 0" "no PATCH for H"
like "$(cat "$T/run2.out")" "left.*changes-requested" "the run says why H was left alone" ||
	diag "$(cat "$T/run2.out")"

curl -sf -X POST "$PW/_fake/requests/clear" >/dev/null
P run >"$T/run3.out" 2>&1
is "$(npatch)" 0 "exactly once: a later run changes nothing"
is "$(curl -sf "$PW/_fake/events?patch=$(pwid "$(patch_n D 1)")" | jq_py /dev/stdin 'len(d)')" 1 \
	"D v1: one state change in all these runs"

# look-alikes: Bob's copy of Ann's K, and Zed's patch under the subject
# of a commit of his 200 days later, mailed after that commit was read
deliver "$T"/K/*.patch "$T"/K-bob/*.patch
git -C "$T/maint" am -q "$T"/K/0001-*.patch || fail "am K"
echo "int widget = 4;" >"$T/maint/widget.c" && git -C "$T/maint" add . &&
	GIT_AUTHOR_NAME=Zed GIT_AUTHOR_EMAIL=zed@example.org GIT_AUTHOR_DATE=$(day 230) \
	git -C "$T/maint" commit -q -m "Z: tune the widget" || fail "Zed's commit"
git -C "$T/maint" push -q origin master
P run >"$T/run4.out" 2>&1
deliver "$T"/Z/*.patch
curl -sf -X POST "$PW/_fake/requests/clear" >/dev/null
P run >"$T/run5.out" 2>&1
is "$(pw "$T"/K/0001-*.patch state)" accepted "K: Ann's patch accepted" ||
	diag "$(cat "$T/run4.out")"
is "$(pw "$T"/K-bob/0001-*.patch state) $(pw "$T"/Z/0001-*.patch state)" "new new" \
	"Bob's identical copy and Zed's look-alike: possibly merged, left new" ||
	diag "$(cat "$T/run5.out")"
is "$(npatch "$T"/K-bob/0001-*.patch) $(npatch "$T"/Z/0001-*.patch)" "0 0" \
	"no PATCH for either"

# set_state off: the same history sends no PATCH
curl -sf -X POST "$PW/_fake/reset" >/dev/null
S2=$T/state-off
for f in "$T"/{A,H,G,G2}/*.patch; do
	pg --state "$S2" --config "$T/conf-off" deliver <"$f" >/dev/null || fail "deliver $f"
done
pg --state "$S2" --config "$T/conf-off" run >"$T/run-off.out" 2>&1
is "$(pg --state "$S2" --config "$T/conf-off" series show --json "$(sid A)" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]')" \
	merged "set_state off: A is merged all the same"
is "$(npatch)" 0 "set_state off: no PATCH at all"
is "$(pw "$(patch_n A 1)" state) $(pw "$(patch_n G 1)" state)" "new new" \
	"set_state off: the states are Patchwork's as they were"

# errors: a 5xx is retried; a permanent refusal (403) is said once and the
# change dropped, never held in the outbox
curl -sf -X POST "$PW/_fake/reset" >/dev/null
S3=$T/state-err
P3() { pg --state "$S3" --config "$T/conf" "$@"; }
for f in "$T"/{G,G2}/*.patch; do P3 deliver <"$f" >/dev/null || fail "deliver $f"; done
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "status", "status": 503, "method": "PATCH"}' "$PW/_fake/fault" >/dev/null
P3 run >"$T/run-err1.out" 2>&1
is "$(P3 outbox --json | jq_py /dev/stdin '[(e["key"][:8], e["attempts"], "503" in e.get("last_error", "")) for e in d["outbox"] if e["key"].startswith("pwstate/")]')" \
	'[["pwstate/", 1, true]]' "a 503: the change waits in the outbox for a retry"
curl -sf -X POST -H 'Content-Type: application/json' \
	--data '{"kind": "status", "status": 403, "method": "PATCH", "count": 5}' "$PW/_fake/fault" >/dev/null
P3 outbox send --all >"$T/send-err.out" 2>&1
like "$(cat "$T/send-err.out")" "pwstate/.*failed.*403" "a 403: said once..." || diag "$(cat "$T/send-err.out")"
is "$(P3 outbox --json | jq_py /dev/stdin '[e["key"] for e in d["outbox"] if e["key"].startswith("pwstate/")]')" \
	"[]" "...and dropped"
is "$(pw "$(patch_n G 1)" state)" new "nothing was changed"

done_testing
