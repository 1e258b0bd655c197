#!/bin/bash
# t0570-pipeline-order - the pipeline when mail arrives in an awkward
# order between two passes (issue #26, item 7):
#
#  - a cover that comes after its patches gives the series another ID
#    (the cover's): the pipeline state of the ID that is gone is dropped,
#    so that status counts every series once;
#  - a partial re-roll ([PATCH v2 2/3] alone) judged before v1 is in the
#    store is incomplete; once v1 comes and the re-roll is linked to it,
#    the next pass tests it as the whole new version instead of leaving
#    it incomplete for ever.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
T=$TAP_TMP
export GIT_AUTHOR_NAME="Ann Dev" GIT_AUTHOR_EMAIL=ann@example.org
export GIT_COMMITTER_NAME="Ann Dev" GIT_COMMITTER_EMAIL=ann@example.org
export GIT_AUTHOR_DATE="1733212800 +0000" GIT_COMMITTER_DATE="1733212800 +0000"

git init -q -b master "$T/src"
for f in a b c; do echo "$f 1" >"$T/src/$f"; done
git -C "$T/src" add . && git -C "$T/src" commit -q -m init
git clone -q --bare "$T/src" "$T/repo.git"
# v1: three patches with a cover
for f in a b c; do
	echo "$f 2" >"$T/src/$f"
	git -C "$T/src" commit -q -am "$f: two"
done
git -C "$T/src" format-patch -q --cover-letter --thread -3 -o "$T/v1" \
	--subject-prefix=PATCH >/dev/null
# v2 of the second patch alone, in reply to nothing
git -C "$T/src" checkout -q HEAD~1
echo "b 3" >"$T/src/b"
git -C "$T/src" commit -q --amend -am "b: two"
# sent in reply to v1's patch 2, as a re-roll of one patch is
parent=$(sed -n 's/^Message-I[dD]: <\(.*\)>$/\1/p' "$T"/v1/0002-*.patch)
git -C "$T/src" format-patch -q -1 -o "$T/v2" --subject-prefix="PATCH v2" \
	--start-number 2 --add-header="Message-ID: <v2-2.b@example.org>" \
	--in-reply-to="$parent" >/dev/null
f2=$(ls "$T/v2"/*.patch)
sed -i 's/^Subject: \[PATCH v2 2\/2\]/Subject: [PATCH v2 2\/3]/; s/^Subject: \[PATCH v2\]/Subject: [PATCH v2 2\/3]/' "$f2"

W=$(mktemp -d /tmp/pgate-t0570.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="rm -rf '$W'"
cat >"$T/conf" <<EOF
[apply]
repo = $T/repo.git
branches = master
committer_name = CI
committer_email = ci@example.org
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = true
timeout = 60
work_root = $W
EOF
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }
run_until_done() {
	for _ in $(seq 30); do
		P run -q >/dev/null 2>&1
		[ "$(P status --json | jq_py /dev/stdin 'str(d["states"].get("testing", 0))')" = 0 ] && return
		sleep 0.5
	done
}
states() { P status --json | jq_py /dev/stdin 'sum(d["states"].values())'; }
nseries() { P status --json | jq_py /dev/stdin 'd["series"]'; }

# the late cover: patch 1/3 alone first
set -- "$T"/v1/*.patch
cover=$1 p1=$2 p2=$3 p3=$4
ok "deliver 1/3" P deliver <"$p1"
run_until_done
old=$(P series list --all --json | jq_py /dev/stdin 'd["series"][0]["id"]')
is "$(P series show --json "$old" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]')" \
	incomplete "alone, 1/3 is incomplete"
for f in "$cover" "$p2" "$p3"; do P deliver <"$f" >/dev/null || fail "deliver $f"; done
run_until_done
P series list --all --json >"$T/list.json"
is "$(jq_py "$T/list.json" 'str(len(d["series"]))')" 1 "cover and patches are one series"
new=$(jq_py "$T/list.json" 'd["series"][0]["id"]')
unlike "$new" "$old" "with its cover the series has the cover's ID"
is "$(states)" "$(nseries)" "status counts each series once: the old ID's state is gone"
is "$(P series show --json "$new" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]')" \
	done "the series under its new ID is tested"

# the partial re-roll judged before v1 existed
S=$T/state2
ok "deliver v2 2/3 alone" P deliver <"$f2"
run_until_done
v2=$(P series list --all --json | jq_py /dev/stdin 'd["series"][0]["id"]')
is "$(P series show --json "$v2" | jq_py /dev/stdin 'd["series"][0]["stages"]["pipeline"]["state"]')" \
	incomplete "alone, v2 2/3 is incomplete"
for f in "$cover" "$p1" "$p2" "$p3"; do P deliver <"$f" >/dev/null || fail "deliver $f"; done
run_until_done
P series show --json "$v2" >"$T/v2.json"
is "$(jq_py "$T/v2.json" 'str(d["series"][0]["partial_reroll"])')" True \
	"v1 there, v2 2/3 is a partial re-roll"
is "$(jq_py "$T/v2.json" 'd["series"][0]["stages"]["pipeline"]["state"]')" done \
	"and the next pass tests it, not left incomplete" || diag "$(cat "$T/v2.json")"
is "$(states)" "$(nseries)" "status counts each series once"
done_testing
