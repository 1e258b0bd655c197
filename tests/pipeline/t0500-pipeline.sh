#!/bin/bash
# t0500-pipeline - patchgate run end to end on the embedded defaults: a
# generated list and its repository, the libgit2 apply stage, the local
# runner under bubblewrap, the trust policy, and the store's state.
#
#  - every complete series from a trusted sender is applied and tested;
#    superseded ones stop, the pull request is skipped;
#  - the sandboxed job sees which series it tests: the one made to fail
#    fails, the others pass;
#  - an untrusted sender's series waits for approval; approve and reject
#    do what they say on the next run;
#  - the commits equal git am's for one series (tree and commit ids);
#  - a second run changes nothing and looks only at the series in
#    progress; an incomplete series waits, then is marked incomplete.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
T=$TAP_TMP
gen_list 120 3 "$T/g" || bail "gen-list.py failed"
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }

ok "ingest" pg --state "$S" ingest --json "$T/g/list.mbox" || bail "ingest failed"
pg --state "$S" series list --all --json >"$T/series.json"

# the untrusted sender: the one with the most series, so that one can be
# approved and another rejected; the failing series: a trusted sender's
# complete series that supersedes nothing
read -r UNTRUSTED FAILSID TRUSTED <<EOF
$("$PY" - "$T/series.json" <<'PY'
import collections, json, sys
ss = json.load(open(sys.argv[1]))["series"]
live = [s for s in ss if s["superseded_by"] is None and s["complete"]
        and s["kind"] == "patches"]
by = collections.Counter(s["submitter"]["email"] for s in live)
untrusted = by.most_common(1)[0][0]
fail = [s for s in live if s["submitter"]["email"] != untrusted
        and s["supersedes"] is None][0]
others = sorted({s["submitter"]["email"] for s in ss} - {untrusted})
print(untrusted, fail["id"], ";".join(others))
PY
)
EOF
diag "untrusted sender $UNTRUSTED, failing series $FAILSID"

# the job runs as an unprivileged user when this runs as root: its work
# directory must be reachable for it, and TAP_TMP is 0700
W=$(mktemp -d /tmp/pgate-t0500.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="rm -rf '$W'"

cat >"$T/conf" <<EOF
[apply]
repo = $T/g/repo.git
branches = master
committer_name = CI
committer_email = ci@example.org
[trust]
trusted = $TRUSTED
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = build: sh -c 'test -f Makefile && test "\$PATCHGATE_SERIES" != $FAILSID'
timeout = 60
jobs = 2
work_root = $W
EOF
ok "run" P run --json
# an old result ref (its commit is years old): the next run prunes it
old=$(git -C "$T/g/repo.git" rev-list --max-parents=0 master | head -1)
git -C "$T/g/repo.git" update-ref refs/heads/patchgate/s000000000000/v1/master "$old"
nrefs=$(git -C "$T/g/repo.git" for-each-ref refs/heads/patchgate/ | wc -l)
P run --json >"$T/run2.json"
is "$(git -C "$T/g/repo.git" for-each-ref refs/heads/patchgate/s000000000000/ | wc -l)" 0 \
	"a result ref older than keep_days is pruned"
is "$(git -C "$T/g/repo.git" for-each-ref refs/heads/patchgate/ | wc -l)" "$((nrefs - 1))" \
	"the fresh ones stay"
P status --json >"$T/status.json"
P series list --all --json >"$T/series.json"
# every series' pipeline document
: >"$T/stages.jsonl"
for id in $("$PY" -c 'import json,sys; print(" ".join(s["id"] for s in json.load(open(sys.argv[1]))["series"]))' "$T/series.json"); do
	P series show --json "$id" >>"$T/stages.jsonl"
done

check() {
	"$PY" - "$T/stages.jsonl" "$UNTRUSTED" "$FAILSID" "$1" <<'PY'
import json, sys
rows = [json.loads(l)["series"][0] for l in open(sys.argv[1])]
untrusted, failsid, what = sys.argv[2], sys.argv[3], sys.argv[4]
byid = {s["id"]: s for s in rows}
bad = []
def st(s): return s["stages"].get("pipeline", {}).get("state")
for s in rows:
    state = st(s)
    if what == "superseded":
        if s["superseded_by"] and state != "superseded":
            bad.append((s["id"], state))
    elif what == "pull":
        if s["kind"] == "pull" and state != "skipped":
            bad.append((s["id"], state))
    elif what == "untrusted":
        if (s["submitter"]["email"] == untrusted and not s["superseded_by"]
                and s["complete"] and s["kind"] == "patches" and state != "awaiting-approval"):
            bad.append((s["id"], state))
    elif what == "tested":
        if (s["submitter"]["email"] != untrusted and not s["superseded_by"]
                and (s["complete"] or s["partial_reroll"]) and s["kind"] == "patches"):
            # a prerequisite of the untrusted sender's is part of what
            # would run: the series waits, naming it (issue #41)
            if any(byid.get(d["series"], {}).get("submitter", {}).get("email") == untrusted
                   for d in s["depends_on"] if d["series"]):
                if state != "awaiting-approval" or "of prerequisite series" not in \
                        (s["stages"].get("pipeline", {}).get("reason") or ""):
                    bad.append((s["id"], state, "prerequisite"))
                continue
            ci = [v for k, v in s["stages"].items() if k.startswith("ci/")]
            want = "fail" if s["id"] == failsid else "success"
            if state != "done" or not ci or any(c.get("verdict") != want for c in ci):
                bad.append((s["id"], state, [c.get("verdict") for c in ci]))
    elif what == "reroll":
        if s["partial_reroll"] and not s["superseded_by"]:
            ap = [v for k, v in s["stages"].items() if k.startswith("apply/")]
            if not ap or not all(a.get("reroll_of") == s["reroll"]["of"] for a in ap):
                bad.append((s["id"], [a.get("reroll_of") for a in ap]))
print(json.dumps(bad))
sys.exit(1 if bad else 0)
PY
}
ok "superseded series stop" check superseded
ok "the pull request is skipped" check pull
ok "an untrusted sender's series wait for approval" check untrusted
ok "every trusted complete series is tested: the chosen one fails, the rest pass" check tested
ok "a partial re-roll is applied onto the version it re-rolls" check reroll
is "$(jq_py "$T/status.json" 'sorted(d["states"])')" \
	'["awaiting-approval", "done", "skipped", "superseded"]' "states after one run"
is "$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["series"], d["errors"])' "$T/run2.json")" \
	"$(jq_py "$T/status.json" 'sum(n for k, n in d["states"].items() if k in ("new", "waiting", "testing"))') 0" \
	"a second run looks only at the series in progress (not those finished or awaiting approval), without errors"

# the failing job's summary names the step
fs=$(P series show "$FAILSID")
like "$fs" 'ci/master/build: done fail|ci/base-commit/build: done fail' "the failing series' job failed"

# git am makes the same commits (the tested series' ref)
read -r REF BASE <<EOF
$(jq_py <(P series show --json "$FAILSID") '[v for k, v in d["series"][0]["stages"].items() if k.startswith("apply/")][0]["ref"] + " " + [v for k, v in d["series"][0]["stages"].items() if k.startswith("apply/")][0]["base_commit"]')
EOF
git clone -q "$T/g/repo.git" "$T/am" && git -C "$T/am" checkout -q "$BASE" &&
"$PY" - "$T/g/list.mbox" "$FAILSID" "$T/am.mbox" <<PY
import json, mailbox, subprocess, sys
box = mailbox.mbox(sys.argv[1])
show = json.loads(subprocess.run(["$PATCHGATE", "--state", "$S", "series", "show", "--json", sys.argv[2]],
                                 capture_output=True, check=True).stdout)["series"][0]
want = [p["msgid"] for p in show["patches"]]
by = {m["Message-ID"].strip().strip("<>"): m for m in box}
with open(sys.argv[3], "wb") as f:
    for mid in want:
        f.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + by[mid].as_bytes() + b"\n")
PY
committed=$(git -C "$T/g/repo.git" log -1 --format=%cd --date=raw "$REF")
(cd "$T/am" && GIT_COMMITTER_NAME=CI GIT_COMMITTER_EMAIL=ci@example.org \
	GIT_COMMITTER_DATE="$committed" git am -q "$T/am.mbox") >/dev/null 2>&1
is "$(git -C "$T/am" rev-parse HEAD^{tree})" "$(git -C "$T/g/repo.git" rev-parse "$REF^{tree}")" \
	"the tested tree is git am's"

# approve one of the waiting series, reject another
mapfile -t waiting < <("$PY" - "$T/stages.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    if s["stages"].get("pipeline", {}).get("state") == "awaiting-approval":
        print(s["id"])
PY
)
if [ "${#waiting[@]}" -ge 2 ]; then
	ok "approve ${waiting[0]}" P approve "${waiting[0]}"
	ok "reject ${waiting[1]}" P reject --note "not now" "${waiting[1]}"
	ok "run again" P run -q
	like "$(P series show "${waiting[0]}")" 'pipeline: (done|apply-failed)' "the approved series was applied"
	like "$(P series show "${waiting[1]}")" 'pipeline: rejected' "the rejected one is rejected"
	like "$(P approve "${waiting[1]}" 2>&1)" 'not awaiting approval' "a decided series cannot be approved again"
else
	fail "two series await approval" "${waiting[@]}"
fi

# [trust] committers: senders with commits on the branches are trusted
S3=$T/state3
# the branch's history: the first 20 commits, a few of the senders
git -C "$T/g/repo.git" branch -f trust-base "$(git -C "$T/g/repo.git" rev-list --reverse master | sed -n 20p)"
sed -e 's/^trusted = .*$/committers = true/' -e 's/^branches = master$/branches = trust-base/' \
	"$T/conf" >"$T/conf3"
pg --state "$S3" ingest "$T/g/list.mbox" >/dev/null
pg --state "$S3" --config "$T/conf3" run -q
pg --state "$S3" series list --all --json >"$T/series3.json"
: >"$T/stages3.jsonl"
for id in $(jq_py "$T/series3.json" '" ".join(s["id"] for s in d["series"])'); do
	pg --state "$S3" series show --json "$id" >>"$T/stages3.jsonl"
done
authors=$(git -C "$T/g/repo.git" log --format=%ae trust-base | tr 'A-Z' 'a-z' | sort -u | tr '\n' ' ')
is "$("$PY" - "$T/stages3.jsonl" "$authors" <<'PY'
import json, sys
authors = set(sys.argv[2].split())
bad, waiting, trusted = [], 0, 0
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    st = s["stages"].get("pipeline", {}).get("state")
    if s["superseded_by"] or s["kind"] != "patches" or not (s["complete"] or s["partial_reroll"]):
        continue
    committer = s["submitter"]["email"].lower() in authors
    if committer == (st == "awaiting-approval"):
        bad.append((s["id"], st, committer))
    waiting += st == "awaiting-approval"
    trusted += committer
print(bad, waiting > 0, trusted > 0)
PY
)" "[] True True" "with committers = true, exactly the senders with commits on the branch are trusted"

# an incomplete series waits, then is reported incomplete
S2=$T/state2
sed 's/^wait_complete = 0$/wait_complete = 100000000000/' "$T/conf" >"$T/conf2"
# the second patch of a complete multi-patch series is left out
part_sid=$("$PY" - "$T/g/list.mbox" "$T/series.json" "$T/part.mbox" <<'PY'
import json, mailbox, sys
ss = json.load(open(sys.argv[2]))["series"]
s = [x for x in ss if x["total"] >= 3 and x["complete"] and not x["superseded_by"]][0]
drop = s["patches"][1]["msgid"]
out = open(sys.argv[3], "wb")
for m in mailbox.mbox(sys.argv[1]):
    if m["Message-ID"].strip().strip("<>") != drop:
        out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
print(s["id"])
PY
)
diag "series $part_sid without its patch 2"
pg --state "$S2" --config "$T/conf2" ingest "$T/part.mbox" >/dev/null
pg --state "$S2" --config "$T/conf2" run -q
like "$(pg --state "$S2" --config "$T/conf2" status)" 'waiting +[1-9]' "an incomplete series waits"
pg --state "$S2" --config "$T/conf" run -q
like "$(pg --state "$S2" --config "$T/conf" status)" 'incomplete +[1-9]' "past wait_complete it is incomplete"

done_testing
