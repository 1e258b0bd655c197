#!/bin/bash
# t0550-daemon-kill - reliability: the daemon is killed with SIGKILL at
# random moments, 50 times, while the demo list is being delivered into
# its maildir one message per round and its series are applied, tested
# (local runner) and reported (fake Patchwork).  A last daemon then runs
# until everything is settled.  Nothing may be lost or doubled: every
# message stored once, every series in its final state, every tested
# patch with its checks, no check posted twice, the outbox empty.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0550.XXXXXX) && chmod 755 "$W"
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp" "$T/queue"

# the messages to deliver, one file each; and Patchwork's view of them
"$PY" - "$T/d/list.mbox" "$T/queue" "$T/seed.json" <<'PY'
import json, mailbox, sys
seed = {"users": [{"username": "ci", "email": "ci@demo.example.org", "token": "tok-ci-55"}],
        "projects": [{"linkname": "calc", "name": "calc", "listid": "calc.lists.demo.example.org",
                      "listemail": "calc@lists.demo.example.org", "maintainers": ["ci"]}],
        "patches": []}
for i, m in enumerate(mailbox.mbox(sys.argv[1])):
    open("%s/%02d" % (sys.argv[2], i), "wb").write(m.as_bytes())
    subj = str(m["Subject"])
    if "[PATCH" in subj and " 0/" not in subj and not subj.startswith("Re:"):
        seed["patches"].append({"project": "calc", "msgid": m["Message-ID"].strip(),
                                "name": subj, "submitter": "someone@demo.example.org"})
json.dump(seed, open(sys.argv[3], "w"))
PY
fake_start pw patchwork.py --seed "$T/seed.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null; pkill -KILL -f 'patchgate-full --state $T/s' 2>/dev/null; rm -rf '$W'"
PW=$fake_url
printf 'tok-ci-55\n' >"$T/token" && chmod 600 "$T/token"

cat >"$T/conf" <<EOF
[daemon]
maildirs = $T/md
interval = 1
[apply]
repo = $T/d/repo.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 600
[ci.local]
commands = build: make; check: make check
timeout = 60
work_root = $W
[patchwork]
url = $PW/
project = calc
token_file = $T/token
user = ci
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }

queue=("$T"/queue/*)
next=0
RANDOM=550
for round in $(seq 50); do
	"$PATCHGATE" --state "$T/s" --config "$T/conf" daemon 2>>"$T/daemon.log" &
	dpid=$!
	if [ $next -lt ${#queue[@]} ]; then
		f=${queue[$next]}; next=$((next + 1))
		cp "$f" "$T/md/tmp/$(basename "$f")" && mv "$T/md/tmp/$(basename "$f")" "$T/md/new/"
	fi
	sleep "0.$(printf '%03d' $((RANDOM % 400)))"
	kill -KILL $dpid 2>/dev/null
	wait $dpid 2>/dev/null
done
pass "50 rounds of deliver and SIGKILL ($(grep -c 'daemon: started' "$T/daemon.log") daemon starts)"

# the last daemon settles everything
starts=$(grep -c 'daemon: started' "$T/daemon.log")
"$PATCHGATE" --state "$T/s" --config "$T/conf" daemon 2>>"$T/daemon.log" &
dpid=$!
# (its SIGTERM handler is set up by then)
for _ in $(seq 100); do
	[ "$(grep -c 'daemon: started' "$T/daemon.log")" -gt "$starts" ] && break
	sleep 0.1
done
# The multiplication series comes in three versions, each complete three
# deliveries before the next one's cover: v1 and v2 end "superseded", or
# "done" when their test ended before the next version came (a slow
# round, a loaded machine: a finished series stays done).  The rest is
# fixed: v3 and two single patches done, one that does not apply, one
# from an untrusted sender.
states() { P status --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in sorted(d["states"].items())))'; }
settled() {
	"$PY" -c '
import sys
st = dict(kv.split("=") for kv in sys.argv[1].split())
st = {k: int(v) for k, v in st.items()}
ok = (st.pop("apply-failed", 0) == 1 and st.pop("awaiting-approval", 0) == 1
      and st.get("done", 0) >= 3 and st.get("superseded", 0) <= 2
      and st.pop("done", 0) + st.pop("superseded", 0) == 5 and not st)
sys.exit(0 if ok else 1)' "$1"
}
for _ in $(seq 300); do
	settled "$(states)" && [ "$(P outbox --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["outbox"]))')" = 0 ] && break
	sleep 0.2
done
kill -TERM $dpid; wait $dpid
is "$?" 0 "the last daemon stops cleanly"
is "$(P msg list | wc -l)" 14 "every message stored, once"
final=$(states)
settled "$final" && pass "every series in its final state ($final)" ||
	fail "every series in its final state: $final"
is "$(P outbox --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["outbox"]))')" 0 "the outbox is empty"
curl -s "$PW/_fake/checks" >"$T/checks.json"
"$PY" - "$T/checks.json" >"$T/checks.out" <<'PY'
import collections, json, sys
c = json.load(open(sys.argv[1]))
n = collections.Counter((x["patch"], x["context"], x["state"]) for x in c)
dups = {str(k): v for k, v in n.items() if v > 1}
final = {(x["patch"], x["context"]) for x in c if x["state"] != "pending"}
print(json.dumps(dups), len(final))
PY
like "$(cat "$T/checks.out")" '^\{\} [0-9]+$' "no check posted twice"
# every patch of a tested series has its final apply and build checks,
# every patch of the series that did not apply its apply failure
P series list --all --json >"$T/list.json"
# whatever the timing, the versions are linked: v1 -> v2 -> v3
is "$(jq_py "$T/list.json" '" ".join("v%d:%s" % (s["version"], "superseded" if s["superseded_by"] else "head") for s in sorted(d["series"], key=lambda s: s["version"]) if s["name"] == "calc: multiplication")')" \
	"v1:superseded v2:superseded v3:head" "the three versions are linked"
for id in $(jq_py "$T/list.json" '" ".join(s["id"] for s in d["series"])'); do
	P series show --json "$id"
done >"$T/shows.jsonl"
curl -s "$PW/_fake/state" >"$T/pwstate.json"
"$PY" - "$T/shows.jsonl" "$T/pwstate.json" "$T/checks.json" >"$T/need.out" <<'PY'
import json, sys
ids = {p["msgid"].strip("<>"): p["id"] for p in json.load(open(sys.argv[2]))["patches"]}
have = {(c["patch"], c["context"], c["state"]) for c in json.load(open(sys.argv[3]))}
missing = []
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    st = s["stages"].get("pipeline", {}).get("state")
    for p in s["patches"]:
        pid = ids[p["msgid"]]
        need = []
        if st == "done":
            need = [("apply", "success"), ("build", None)]
        elif st == "apply-failed":
            need = [("apply", "fail")]
        for ctx, state in need:
            if not any(c[0] == pid and c[1] == ctx and (state is None and c[2] != "pending" or c[2] == state) for c in have):
                missing.append((s["name"], p["number"], ctx))
print(json.dumps(missing))
PY
is "$(cat "$T/need.out")" "[]" "every report arrived"
done_testing
