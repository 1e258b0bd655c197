#!/bin/bash
# t0062-raw-zdict - raw mail compressed with a zstd dictionary trained on
# the store's own mail (issue #34, schema 6), through the patchgate binary:
#  - a bulk ingest trains one once the store holds [store]
#    zdict_train_after messages, mid-ingest: the raw database then holds
#    frames without a dictionary and frames naming it; store info shows it;
#  - store train --json trains another (its ID, size, sample, ratio), and
#    what is ingested next names that one;
#  - msg show gives the messages' bodies and diffs (parsed again from
#    the raw mail) as a store without a dictionary does, for messages
#    from before the first dictionary, with the first, with the second;
#    store verify (zstd's checksum of every message) is clean;
#  - store recompress writes the older frames again with the newest
#    dictionary, in batches; a second run has nothing to do;
#  - a store of schema 5 opens as it is and is marked 6 by its first
#    dictionary.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
n=$(scaled 300 150)
gen_list "$n" 3 "$T/g" >/dev/null || bail "gen-list.py failed"

# the archive in two halves, and each message alone
"$PY" - "$T/g/list.mbox" "$T/one.mbox" "$T/two.mbox" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
msgs = data.split(b'\nFrom ')
msgs = [msgs[0]] + [b'From ' + m for m in msgs[1:]]
half = len(msgs) // 2
open(sys.argv[2], 'wb').write(b'\n'.join(msgs[:half]) + b'\n')
open(sys.argv[3], 'wb').write(b'\n'.join(msgs[half:]))
PY
mkdir -p "$T/split"
git mailsplit --mboxrd -o"$T/split" "$T/g/list.mbox" >/dev/null ||
	bail "git mailsplit failed"

after=$(( n / 8 ))
printf '[store]\nzdict_train_after = %d\n[ingest]\nbatch_messages = %d\n' \
	"$after" $(( after / 2 )) >"$T/auto.conf"
printf '[store]\nzdict_train_after = 0\n' >"$T/never.conf"

# The IDs the frames of STORE's raw database name, counted: "ID COUNT"
# lines, 0 for none.
frame_dicts() {
	mdb_dump -s raw "$1" | "$PY" -c '
import collections, sys
lines = sys.stdin.read().split("HEADER=END\n", 1)[1].split("\n")
count = collections.Counter()
for val in lines[1::2]:
    val = val.strip()
    if not val or val == "DATA=END":
        continue
    b = bytes.fromhex(val)
    if b[:4] != b"\x28\xb5\x2f\xfd":
        count["plain"] += 1
        continue
    flag = b[4] & 3
    size = {0: 0, 1: 1, 2: 2, 3: 4}[flag]
    off = 5 + (0 if b[4] & 0x20 else 1)
    count[int.from_bytes(b[off:off + size], "little") if size else 0] += 1
for k in sorted(count, key=str):
    print(k, count[k])
'
}

# Every STEP-th message of split/ (two processes each): msg show --json
# of STATE gives the body, diff and size that a store without any
# dictionary ($T/ref) gives, parsed again from the raw message; zstd's
# checksum of each whole message is store verify's.  Prints how many
# were compared.
step=$(scaled 10 30)
pg --config "$T/never.conf" --state "$T/ref" ingest "$T/g/list.mbox" >/dev/null 2>&1 ||
	bail "ingest of the reference store failed"
bodies_same() {
	"$PY" - "$PATCHGATE" "$1" "$T/ref" "$T/split" "$step" <<'PY'
import email, json, os, subprocess, sys
pg, state, ref, split, step = sys.argv[1:6]
def show(st, mid):
    out = subprocess.run([pg, '--state', st, 'msg', 'show', '--json', mid],
                         capture_output=True, check=True).stdout
    d = json.loads(out)
    return d['body'], d['diff'], d['raw']
same = 0
for name in sorted(os.listdir(split))[::int(step)]:
    msg = email.message_from_bytes(open(os.path.join(split, name), 'rb').read())
    mid = msg['Message-ID'].strip().strip('<>')
    a, b = show(state, mid), show(ref, mid)
    if a != b or a[2]['size'] < 500 or a[2]['location'] != 'inline':
        print('# differs: <%s>: %s' % (mid, a[2]))
        sys.exit(1)
    same += 1
print(same)
PY
}

S=$T/state
pg --config "$T/auto.conf" --state "$S" ingest "$T/one.mbox" >/dev/null 2>&1
is "$?" 0 "ingest of the first half exits 0"
info=$(pg --state "$S" store info --json)
is "$(jq_py /dev/stdin 'd["schema_version"]' <<<"$info")" 6 "the store is at schema 6"
id1=$(jq_py /dev/stdin 'd["zdict"]["id"]' <<<"$info")
like "$id1" '^[0-9]+$' "ingest trained a dictionary once $after messages were stored ($id1)"
like "$(jq_py /dev/stdin 'd["zdict"]["bytes"]' <<<"$info")" '^[0-9]+$' "store info gives its size"
dicts=$(frame_dicts "$S/store")
like "$dicts" "(^|$'\n')0 [0-9]+" "frames written before it name none"
like "$dicts" "(^|$'\n')$id1 [0-9]+" "frames written after it name it"

train=$(pg --state "$S" store train --json)
is "$?" 0 "store train exits 0"
"$PY" - "$id1" <<PY
import json, sys
d = json.loads('''$train''')
print('# %s' % d)
ok = (d['id'] != int(sys.argv[1]) and 0 < d['bytes'] <= 112640 and
      d['samples'] > 0 and d['sample_bytes'] > 0 and
      0 < d['ratio'] < d['ratio_plain'] < 1)
sys.exit(0 if ok else 1)
PY
is "$?" 0 "it prints the new dictionary: ID, size, sample, ratio with and without"
id2=$(jq_py /dev/stdin 'd["id"]' <<<"$train")
pg --config "$T/auto.conf" --state "$S" ingest "$T/two.mbox" >/dev/null 2>&1
is "$?" 0 "ingest of the second half exits 0"
like "$(frame_dicts "$S/store")" "(^|$'\n')$id2 [0-9]+" "what it wrote names the new dictionary"
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["zdicts"]')" 2 \
	"the store keeps both"
same=$(bodies_same "$S")
is "$?" 0 "msg show: body and diff as without a dictionary ($same compared)"
out=$(pg --state "$S" store verify 2>&1)
is "$?" 0 "store verify is clean"

# the older frames compressed again with the newest dictionary
rec=$(pg --state "$S" store recompress --batch 20 --json)
is "$?" 0 "store recompress exits 0"
diag "$rec"
"$PY" - "$n" <<PY
import json, sys
d = json.loads('''$rec''')
sys.exit(0 if d['rewritten'] > int(sys.argv[1]) // 3 and d['batches'] > 3
         and d['bytes_after'] < d['bytes_before'] else 1)
PY
is "$?" 0 "it rewrote the older frames, smaller, in batches"
dicts=$(frame_dicts "$S/store")
diag "$dicts"
unlike "$dicts" "(^|$'\n')0 [0-9]+" "no frame is left without a dictionary"
is "$(pg --state "$S" store recompress --json | jq_py /dev/stdin 'd["rewritten"]')" 0 \
	"run again, it has nothing left to do"
same=$(bodies_same "$S")
is "$?" 0 "msg show: body and diff as before ($same compared)"
out=$(pg --state "$S" store verify 2>&1)
is "$?" 0 "store verify is clean"

# a store of schema 5, without a dictionary
S5=$T/state5
pg --config "$T/never.conf" --state "$S5" ingest "$T/one.mbox" >/dev/null 2>&1
is "$(pg --state "$S5" store info --json | jq_py /dev/stdin 'd["zdict"]')" null \
	"zdict_train_after = 0: no dictionary"
printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n schema_version\n \\00\\00\\00\\05\nDATA=END\n' |
	mdb_load -s meta "$S5/store" || bail "mdb_load failed"
is "$(pg --state "$S5" store info --json | jq_py /dev/stdin 'd["schema_version"]')" 5 \
	"a store of schema 5 opens as it is"
pg --state "$S5" store train >"$T/train.out"
like "$(cat "$T/train.out")" "^zstd dictionary [0-9]+: [0-9]+ bytes, trained on [0-9]+ messages" \
	"store train trains one"
is "$(pg --state "$S5" store info --json | jq_py /dev/stdin 'd["schema_version"]')" 6 \
	"and marks the store 6"
pg --config "$T/never.conf" --state "$S5" ingest "$T/two.mbox" >/dev/null 2>&1
same=$(bodies_same "$S5")
is "$?" 0 "msg show: body and diff as without a dictionary ($same compared)"
out=$(pg --state "$S5" store verify 2>&1)
is "$?" 0 "store verify is clean"

done_testing
