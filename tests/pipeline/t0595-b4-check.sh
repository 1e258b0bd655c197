#!/bin/bash
# t0595-b4-check - `patchgate check` as b4's review check command
# (b4.review-perpatch-check-cmd / b4.review-series-check-cmd): the demo
# (fixtures/gen-demo.sh) through one pass, then its mails fed to the
# command by b4-check-driver.py exactly as b4 0.15+ feeds a check command
# (Debian 12's b4 0.12 has no `b4 review`), and b4's reading of the output
# compared with golden files (data/t0595/): a series that passed, a patch
# whose build failed, a patch that does not apply, a patch patchgate never
# saw, --series with a cover letter, hostile input, --run on a series the
# pipeline never looked at.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
T=$TAP_TMP
G=$SRCDIR/tests/pipeline/data/t0595
DRV=$SRCDIR/tests/pipeline/b4-check-driver.py
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0595.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="rm -rf '$W'"
conf() {
	cat <<EOF
[apply]
repo = $T/d/repo.git
committer_date = author
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
commands = build: make; check: make check
timeout = 120
work_root = $W
[report]
public_url = https://ci.example.org/pg/
archive_url = https://lore.example.org/calc/{msgid}/
EOF
}
conf >"$T/conf"
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
P ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"
ok "run" P run -q
mkdir "$T/m" && git mailsplit -o"$T/m" "$T/d/list.mbox" >/dev/null
# 0007 v3 cover, 0008 v3 1/2, 0009 v3 2/2, 0011 speed up addition (its
# make check fails), 0012 modulo (does not apply), 0013 docs

# the command b4 would run: from the repository's top (a work tree of the
# demo's repository), its message on stdin
git clone -q "$T/d/repo.git" "$T/top"
CMD="$PATCHGATE --state $T/s --config $T/conf check"
b4run() {	# b4run MESSAGE [check options]: what b4 keeps of the output
	local m=$1
	shift
	"$PY" "$DRV" --topdir "$T/top" "$CMD $*" <"$m"
}
golden() {	# golden NAME MESSAGE [options]
	local name=$1
	shift
	is "$(b4run "$@")" "$(cat "$G/$name.json")" "$name: b4 reads what $name.json says"
}
golden passed-patch "$T/m/0008"
golden passed-series "$T/m/0007" --series
golden failed-build "$T/m/0011"
golden not-applying "$T/m/0012"
# b4 files the --series result of a series without a cover in patch 1's
# row: its tool names are its own, so neither overwrites the other
b4run "$T/m/0008" >"$T/perpatch.out"
b4run "$T/m/0008" --series >"$T/series.out"
is "$("$PY" - "$T/perpatch.out" "$T/series.out" <<'PY'
import json, re, sys
def tools(p):
    return {e["tool"] for e in json.load(open(p))} if open(p).read().strip().startswith("[") else set()
a, b = tools(sys.argv[1]), tools(sys.argv[2])
print(len(a) > 0, len(b) > 0, sorted(a & b), all(t.startswith("patchgate-series-") for t in b))
PY
)" "True True [] True" "--series and the per-patch check of one patch use distinct tool names"

# a patch patchgate never saw: one warning that says so
cat >"$T/unknown" <<'EOF'
From: Eve <eve@example.org>
To: calc@lists.demo.example.org
Subject: [PATCH] calc: something new
Message-ID: <never-seen.1@example.org>
Date: Tue, 3 Dec 2024 12:00:00 +0000

Signed-off-by: Eve <eve@example.org>
---
 calc.c | 1 +
 1 file changed, 1 insertion(+)
EOF
golden never-seen "$T/unknown"

# b4's own reading rules, checked on the driver itself: not JSON, and an
# exit without output, are failures
like "$("$PY" "$DRV" --topdir "$T/top" "sh -c 'echo not json'" <"$T/m/0008")" \
	'"summary": "invalid JSON output: ' "driver: non-JSON stdout is a failure, as in b4"
like "$("$PY" "$DRV" --topdir "$T/top" "sh -c 'echo oops >&2; exit 3'" <"$T/m/0008")" \
	'"summary": "exited with error code 3"' "driver: exit 3 without output is a failure, as in b4"
is "$("$PY" "$DRV" --topdir "$T/top" "sh -c 'pwd; cat >/dev/null'" <"$T/m/0008" | "$PY" -c '
import json, sys; print(json.load(sys.stdin)[0]["details"].strip())')" "$(cd "$T/top" && pwd -P)" \
	"driver: the command runs in the repository's top directory"

# what the command receives: b4's re-written message, whose Message-ID
# patchgate finds (a base64 body arrives decoded, headers as they were)
"$PY" - "$T/m/0013" "$T/b64" <<'PY'
import base64, sys
raw = open(sys.argv[1], "rb").read()
head, body = raw.split(b"\n\n", 1)
head = head.replace(b"Content-Transfer-Encoding: 8bit", b"Content-Transfer-Encoding: base64")
if b"Content-Transfer-Encoding" not in head:
    head += b"\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: base64"
open(sys.argv[2], "wb").write(head + b"\n\n" + base64.encodebytes(body))
PY
like "$("$PY" "$DRV" --show-input x <"$T/b64")" '^diff --git' "driver: a base64 body is fed decoded, as b4 does"
like "$(b4run "$T/b64")" '"status": "pass"' "a base64-encoded patch is found all the same"

# hostile input: every answer is valid JSON, one warning, exit 0
hostile() {	# hostile DESC: stdin is the message
	local out rc
	out=$(P check 2>"$T/err")
	rc=$?
	is "$rc" 0 "hostile: $1: exit 0"
	is "$(printf '%s' "$out" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert isinstance(d, list) and len(d) == 1, d
e = d[0]
assert set(e) <= {"tool", "status", "summary", "url", "details"}, e
print(e["tool"], e["status"], e["summary"])' 2>&1)" "$2" "hostile: $1: $2"
}
hostile "empty stdin" "patchgate warn no message on stdin" </dev/null
head -c 4096 /dev/urandom | tr -d '\n' >"$T/garbage"
hostile "binary garbage" "patchgate warn the message has no valid Message-ID" <"$T/garbage"
printf 'Subject: x\n\nno id\n' >"$T/h1"
hostile "no Message-ID" "patchgate warn the message has no valid Message-ID" <"$T/h1"
printf 'Message-ID: <"q\\"\\\\x\xff\xfe</script>@evil>\nSubject: x\n\nbody\n' >"$T/h2"
hostile "quotes, backslashes and bad UTF-8 in the Message-ID" \
	"$(cat "$G/hostile-msgid.txt")" <"$T/h2"
printf 'Message-ID: <%s@x>\n\n' "$(head -c 100000 /dev/zero | tr '\0' a)" >"$T/h3"
hostile "a 100 kB Message-ID" "patchgate warn the message has no valid Message-ID" <"$T/h3"
like "$(P check --bogus </dev/null 2>&1)" "Unknown option --bogus" "an unknown option is a usage error"
# run from a source tree with no store: an answer, and no store made
(cd "$T/top" && pg check <"$T/m/0008" >"$T/nostore.json")
is "$?:$(jq_py "$T/nostore.json" 'd[0]["status"] + " " + d[0]["summary"]')" \
	"0:warn no patchgate store in patchgate-state" "no store: a warning, exit 0"
is "$(ls "$T/top" | grep -c patchgate-state)" 0 "no store: none created in the source tree"

# --run: a new state where the pipeline never ran: check applies and tests
# the docs series first, then answers
P2() { pg --state "$T/s2" --config "$T/conf" "$@"; }
P2 ingest "$T/d/list.mbox" >/dev/null
like "$(P2 check <"$T/m/0013")" '"summary": "not applied: new"' "before --run: not applied"
out=$(P2 check --run <"$T/m/0013")
is "$(printf '%s' "$out" | "$PY" -c '
import json, sys
print(" ".join("%s:%s" % (e["tool"], e["status"]) for e in json.load(sys.stdin)))')" \
	"patchgate-apply:pass patchgate-build:pass" "--run applies and tests, then answers"

done_testing
