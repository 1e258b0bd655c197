#!/bin/bash
# t0120-fuzz - `patchgate deliver` never loses hostile mail.
#
# Every file of Patchwork's fuzz/ and mail/ fixtures (../shared/corpus, as
# PGATE_CORPUS) is delivered as one message: each delivery exits 0 and the
# message is in the store, parsed or rejected with a reason.  Then garbage:
# an empty message, 4 KiB of (seeded) random bytes, and a 70 MB message
# over the 64 MiB bound, which must be kept whole in STATE/quarantine.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

corpus=${PGATE_CORPUS:-}
if ! [ -d "$corpus/patchwork/fuzz" ] || ! [ -d "$corpus/patchwork/mail" ]; then
	skip_all "no Patchwork corpus at PGATE_CORPUS='$corpus'"
fi

T=$TAP_TMP
S=$T/state

# check DL_JSON SHOW_JSON: "KIND TAB PROBLEMS" (PROBLEMS empty when none)
check() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
try:
    dl = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("deliver --json printed no JSON: %s" % e)
try:
    sh = json.load(open(sys.argv[2]))
except ValueError as e:
    sys.exit("msg show --json printed no JSON: %s" % e)
errs = []
if dl.get("result") not in ("added", "duplicate", "conflict"):
    errs.append("result %r" % dl.get("result"))
if sh.get("msgid") != dl.get("msgid"):
    errs.append("msg show gives msgid %r, deliver said %r" % (sh.get("msgid"), dl.get("msgid")))
if sh.get("kind") != dl.get("kind"):
    errs.append("msg show gives kind %r, deliver said %r" % (sh.get("kind"), dl.get("kind")))
if sh.get("kind") == "rejected":
    if not sh.get("reject_reason"):
        errs.append("rejected without a reason")
elif sh.get("kind") not in ("patch", "cover", "reply", "pull", "other"):
    errs.append("kind %r" % sh.get("kind"))
if sh.get("num") != dl.get("num"):
    errs.insert(0, "msg show --num=%s shows message %s" % (dl.get("num"), sh.get("num")))
print("%s\t%s" % (sh.get("kind"), "; ".join(errs)))
EOF
}

# deliver FILE NAME: one test
deliver() {
	local f=$1 name=$2 rc msgid num problem
	pg --state "$S" deliver --json <"$f" >"$T/dl.json" 2>"$T/dl.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: deliver exits 0 and stores it" "exit $rc: $(cat "$T/dl.err")"
		return
	fi
	read -r msgid num result < <(jq_py "$T/dl.json" \
		'" ".join(str(d[k]) for k in ("msgid", "num", "result"))' 2>/dev/null)
	# the fixtures reuse Message-IDs: --num picks the one just stored
	pg --state "$S" msg show "$msgid" --num="$num" --json >"$T/show.json" 2>"$T/show.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: deliver exits 0 and stores it" "msg show '$msgid' exits $rc: $(cat "$T/show.err")"
		return
	fi
	IFS=$'\t' read -r kind problem < <(check "$T/dl.json" "$T/show.json" 2>&1)
	if [ -n "$problem" ]; then
		fail "$name: deliver exits 0 and stores it" "$problem"
	else
		pass "$name: deliver exits 0 and stores it ($kind)"
	fi
	printf '%s\t%s\n' "$result" "$msgid" >>"$T/results"
}

: >"$T/results"
n=0
for f in "$corpus"/patchwork/fuzz/* "$corpus"/patchwork/mail/*; do
	[ -f "$f" ] || continue
	deliver "$f" "${f#"$corpus"/patchwork/}"
	n=$((n + 1))
done

stored=$(grep -cv '^duplicate' "$T/results")
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["messages"]')" "$stored" \
	"store info counts every added message ($n files)"
is "$(store_msgids "$S" | sort -u)" "$(cut -f2 "$T/results" | sort -u)" "msg list shows every delivered Message-ID"

# the corpus again: nothing new
: >"$T/results2"
for f in "$corpus"/patchwork/fuzz/* "$corpus"/patchwork/mail/*; do
	[ -f "$f" ] || continue
	pg --state "$S" deliver --json <"$f" >>"$T/results2" 2>&1
done
# one line of JSON per delivery, or whatever it printed instead
is "$("$PY" -c '
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    try:
        c[json.loads(line)["result"]] += 1
    except (ValueError, KeyError):
        c["not JSON: " + line.strip()] += 1
print("\n".join("%d %s" % (v, k) for k, v in sorted(c.items())))
' "$T/results2")" "$n duplicate" "delivered again, every file is a duplicate"

# -- garbage
# nothing at all is no message: 66 (EX_NOINPUT), nothing stored (#25)
before=$(pg --state "$S" msg list --json | jq_py /dev/stdin 'len(d["messages"])')
pg --state "$S" deliver </dev/null 2>"$T/dl.err"
is "$?" 66 "an empty input exits 66 (EX_NOINPUT)"
is "$(pg --state "$S" msg list --json | jq_py /dev/stdin 'len(d["messages"])')" "$before" \
	"and stores nothing"

"$PY" -c 'import random, sys; sys.stdout.buffer.write(random.Random(4242).randbytes(4096))' >"$T/random.bin"
deliver "$T/random.bin" "4 KiB of random bytes"
is "$(jq_py "$T/show.json" 'd["kind"]')" rejected "random bytes are stored as rejected"

# 70 MB: a well-formed message, too large to parse; kept whole in quarantine
"$PY" - "$T/huge.eml" <<'EOF'
import sys
with open(sys.argv[1], "wb") as f:
    f.write(b"From: Alice Carter <alice@example.org>\nTo: tinyproj@lists.example.org\n"
            b"Subject: [PATCH] a very large patch\nDate: Mon, 2 Jan 2023 10:00:00 +0000\n"
            b"Message-ID: <huge-1@example.org>\n\nA large patch.\n---\n")
    line = b"+" + b"0123456789abcdef" * 4 + b"\n"
    f.write(line * (70 * 1000 * 1000 // len(line)))
EOF
pg --state "$S" deliver --json <"$T/huge.eml" >"$T/dl.json" 2>"$T/dl.err"
is "$?" 0 "a 70 MB message: deliver exits 0"
pg --state "$S" msg show "$(jq_py "$T/dl.json" 'd["msgid"]' 2>/dev/null)" --json >"$T/show.json" 2>"$T/show.err"
is "$?" 0 "a 70 MB message: msg show finds it"
is "$(jq_py "$T/show.json" '[d["kind"], bool(d["reject_reason"]), d["raw"]["location"], d["raw"]["size"]]' 2>&1)" \
	"[\"rejected\", true, \"file\", $(stat -c %s "$T/huge.eml")]" "a 70 MB message is rejected, its raw message in a file of its size"
qfile=$(jq_py "$T/show.json" 'd["raw"]["ref"]' 2>/dev/null)
case $qfile in
/*) ;;
*) qfile=$S/$qfile ;;
esac
ok "the quarantined file holds the whole message" cmp "$T/huge.eml" "$qfile"
is "$(dirname "$qfile")" "$S/quarantine" "it is in STATE/quarantine"
rm -f "$T/huge.eml"

done_testing
