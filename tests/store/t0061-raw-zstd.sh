#!/bin/bash
# t0061-raw-zstd - raw mail kept zstd-compressed in the store (issue #34,
# schema 5), through the patchgate binary:
#  - a delivered message's body is shown byte for byte, and the store is marked
#    schema 6 (5 before the dictionaries of t0062), its raw database
#    smaller than the mail;
#  - store verify decompresses every raw message: clean, then, with one
#    of them damaged, exit 65 naming the message;
#  - msg show of the damaged message says so and does not crash.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/store-corrupt.sh"

T=$TAP_TMP
S=$T/state

# a patch-sized mail: lines that repeat, as diffs do
{
	printf 'From: A U Thor <a@example.org>\nTo: l@example.org\n'
	printf 'Subject: [PATCH] foo: bar\nDate: Sat, 1 Jan 2050 00:00:00 +0000\n'
	printf 'Message-ID: <zstd-1@example.org>\n\n'
	for i in $(seq 1 300); do
		printf '+\tfoo_bar(%d, "line of the patch");\n' $((i % 17))
	done
} >"$T/one.eml"
size=$(stat -c %s "$T/one.eml")

pg --state "$S" deliver <"$T/one.eml"
is "$?" 0 "deliver exits 0"
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["schema_version"]')" 6 \
	"the store is at schema 6 (an older patchgate refuses it)"
pg --state "$S" msg show zstd-1@example.org >"$T/show" 2>"$T/show.err"
is "$?" 0 "msg show exits 0"
# msg show prints the record's fields, then the body parsed again from
# the raw message
"$PY" - "$T/one.eml" "$T/show" <<'PY'
import sys
one, show = (open(p, 'rb').read() for p in sys.argv[1:3])
sys.exit(0 if one.split(b'\n\n', 1)[1].rstrip(b'\n') in show else 1)
PY
is "$?" 0 "and its body, byte for byte"
"$PY" - "$S/store" "$size" <<'PY'
import subprocess, sys
out = subprocess.run(['mdb_dump', '-s', 'raw', sys.argv[1]], capture_output=True, text=True).stdout
# data lines: key, value (hex), after HEADER=END
lines = out.split('HEADER=END\n', 1)[1].split('\n')
val = bytes.fromhex(lines[1].strip())
print('# raw value %d bytes for a mail of %s' % (len(val), sys.argv[2]))
sys.exit(0 if val[:4] == b'\x28\xb5\x2f\xfd' and len(val) * 4 < int(sys.argv[2]) else 1)
PY
is "$?" 0 "the raw database holds a zstd frame, under a quarter of the mail"

out=$(pg --state "$S" store verify 2>&1)
is "$?" 0 "store verify: clean"

corrupt_record "$S/store" raw '\00\00\00\00\00\00\00\01' || bail "mdb_load failed"
out=$(pg --state "$S" store verify 2>/dev/null)
is "$?" 65 "a damaged compressed message: store verify exits 65"
like "$out" "^messages 1: its raw message is not a zstd frame" \
	"and names the message"
pg --state "$S" msg show zstd-1@example.org >"$T/show" 2>"$T/show.err"
rc=$?
like "$rc" '^(0|65)$' "msg show of it exits 0 or 65, no signal ($rc)"
like "$(cat "$T/show" "$T/show.err")" "is not a zstd frame" "and says why the mail is not shown"

done_testing
