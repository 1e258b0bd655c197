#!/bin/bash
# t0530-apply-cli - `patchgate apply` and the commands around it, on a
# generated list (fixtures/gen-list.py) and its repository:
#
#  - [apply] committer_date: "author" gives git am
#    --committer-date-is-author-date's commits, a fixed date (git's own
#    form, RFC 2822, ISO 8601) those of git am with GIT_COMMITTER_DATE set
#    to it: the same commit ids; a date it cannot read is a configuration
#    error (78);
#  - a series is named by its id or the Message-ID of any of its mails;
#    "no series X" (66) for neither;
#  - msg show names the series of a message; series --help helps;
#  - a failure reads as one: "failed at patch 2 of N", the commits made
#    before it said to be unpublished, the file not named twice.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

isnt() {
	if [ "$1" != "$2" ]; then pass "$3"; else fail "$3" "both: '$1'"; fi
}

T=$TAP_TMP
gen_list 60 3 "$T/g" || bail "gen-list.py failed"
S=$T/state
pg --state "$S" ingest "$T/g/list.mbox" >/dev/null || bail "ingest failed"
pg --state "$S" series list --json >"$T/series.json"

# a complete series of two patches or more with a base-commit, whose
# patch 2 changes a file of the base that patch 1 does not touch
read -r SID FILE2 <<EOF
$("$PY" - "$T/series.json" "$T/g/list.mbox" "$T/g/repo.git" <<'PY'
import json, mailbox, re, subprocess, sys
ss = json.load(open(sys.argv[1]))["series"]
box = {m["Message-ID"].strip().strip("<>"): m for m in mailbox.mbox(sys.argv[2])}
def files(mid):
    text = box[mid].get_payload(decode=True).decode("utf-8", "replace")
    return re.findall(r"^--- a/(\S+)$", text, re.M), re.findall(r"^\+\+\+ b/(\S+)$", text, re.M)
for s in ss:
    if not (s["complete"] and s["kind"] == "patches" and s["total"] >= 2
            and s.get("base_commit")):
        continue
    old1, new1 = files(s["patches"][0]["msgid"])
    old2, _ = files(s["patches"][1]["msgid"])
    cand = [f for f in old2 if f not in old1 + new1]
    if cand:
        print(s["id"], cand[0])
        break
PY
)
EOF
[ -n "$SID" ] || bail "no series fits"
BASE=$(jq_py "$T/series.json" "[s for s in d['series'] if s['id'] == '$SID'][0]['base_commit']")
N=$(jq_py "$T/series.json" "[s for s in d['series'] if s['id'] == '$SID'][0]['total']")
mapfile -t MIDS < <(jq_py "$T/series.json" "'\\n'.join(p['msgid'] for s in d['series'] if s['id'] == '$SID' for p in s['patches'])")
diag "series $SID ($N patches, base $BASE); patch 2 changes $FILE2"
"$PY" - "$T/g/list.mbox" "$T/am.mbox" "${MIDS[@]}" <<'PY'
import mailbox, sys
by = {m["Message-ID"].strip().strip("<>"): m for m in mailbox.mbox(sys.argv[1])}
with open(sys.argv[2], "wb") as f:
    for mid in sys.argv[3:]:
        f.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + by[mid].as_bytes() + b"\n")
PY

conf() {	# conf [committer_date]: the configuration, in $T/conf
	{
		printf '[apply]\nrepo = %s\nbranches = master\n' "$T/g/repo.git"
		printf 'committer_name = C I\ncommitter_email = ci@example.org\n'
		[ $# -gt 0 ] && printf 'committer_date = %s\n' "$1"
	} >"$T/conf"
}
P() { pg --state "$S" --config "$T/conf" "$@"; }
# pgate_commits: the commits of the base-commit attempt, one a line
pg_commits() {
	P apply --json "$SID" >"$T/apply.json" &&
	jq_py "$T/apply.json" "'\\n'.join(d['apply']['base-commit']['commits'])"
}
# am_commits [GIT AM OPTION]: git am's, with the environment given
am_commits() {
	rm -rf "$T/am"
	git clone -q "$T/g/repo.git" "$T/am" && git -C "$T/am" checkout -q "$BASE" &&
	GIT_COMMITTER_NAME="C I" GIT_COMMITTER_EMAIL=ci@example.org \
		git -C "$T/am" am -q "$@" "$T/am.mbox" >/dev/null 2>&1 &&
	git -C "$T/am" rev-list --reverse "$BASE..HEAD"
}

# ---- committer_date ----------------------------------------------------------

conf author
want=$(am_commits --committer-date-is-author-date)
is "$(printf '%s\n' "$want" | wc -l)" "$N" "git am applies the series"
is "$(pg_commits)" "$want" "committer_date = author: git am --committer-date-is-author-date's commits"

want=$(GIT_COMMITTER_DATE="1700000000 +0100" am_commits)
for date in "1700000000 +0100" "@1700000000 +0100" \
	    "Tue, 14 Nov 2023 23:13:20 +0100" "2023-11-14 23:13:20 +0100" \
	    "2023-11-14T23:13:20+01:00"; do
	conf "$date"
	is "$(pg_commits)" "$want" "committer_date = $date: git am's with GIT_COMMITTER_DATE=\"1700000000 +0100\""
done
conf "2023-11-14T22:13:20Z"
got=$(pg_commits)
isnt "$got" "$want" "the same instant in another zone: other commits"
is "$got" "$(GIT_COMMITTER_DATE="2023-11-14T22:13:20Z" am_commits)" \
	"committer_date = 2023-11-14T22:13:20Z: git am's with GIT_COMMITTER_DATE set so"
conf now
isnt "$(pg_commits)" "$want" "committer_date = now: the time of the run"
conf yesterday
out=$(P apply "$SID" 2>&1)
is "$?" 78 "committer_date = yesterday: a configuration error (78)"
like "$out" "committer_date: 'yesterday' is not a date" "and it says why"
conf "2023-11-14 22:13:20"
like "$(P apply "$SID" 2>&1)" "committer_date: .* is not a date with a zone" \
	"a date without a zone is refused"

# ---- naming the series -------------------------------------------------------

conf author
P apply --json "<${MIDS[1]}>" >"$T/bymsg.json"
is "$?" 0 "apply by the Message-ID of patch 2"
is "$(jq_py "$T/bymsg.json" 'd["series"]')" "$SID" "it applies that patch's series"
is "$(P apply --json "${MIDS[0]}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"])')" \
	"$SID" "or patch 1's, without angle brackets"
out=$(P apply nosuch 2>&1)
is "$?" 66 "apply nosuch: exit 66"
is "$out" "patchgate: apply: no series nosuch" "apply nosuch: no series nosuch"
like "$(pg --state "$S" msg show "${MIDS[0]}")" "^series: $SID\$" "msg show names the series"
is "$(pg --state "$S" msg show --json "${MIDS[1]}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"])')" \
	"$SID" "msg show --json: series"
out=$(pg --state "$S" series --help)
is "$?" 0 "series --help exits 0"
like "$out" "^usage: patchgate series list" "series --help prints the usage"

# ---- a failure ---------------------------------------------------------------

# a branch without the file patch 2 changes
rm -rf "$T/wt"
git clone -q "$T/g/repo.git" "$T/wt" && git -C "$T/wt" checkout -q -b nofile "$BASE" &&
git -C "$T/wt" rm -q "$FILE2" &&
git -C "$T/wt" -c user.name=X -c user.email=x@example.org commit -q -m "drop $FILE2" &&
git -C "$T/wt" push -q origin nofile || bail "cannot make the branch"
sed -i 's/^branches = .*/branches = nofile/' "$T/conf"
out=$(P apply --branch nofile "$SID")
is "$?" 65 "a series that does not apply: exit 65 (EX_DATAERR)"
is "$(printf '%s\n' "$out" | head -1)" \
	"nofile: failed at patch 2 of $N (1 commit made before it, not published)" \
	"the status line says where it failed, and that nothing was published"
is "$(printf '%s\n' "$out" | sed -n 2p)" "  patch 2: $FILE2: does not exist in the tree" \
	"the failure line names the file once"
done_testing
