#!/bin/bash
# t0240-tempfail - transient failures exit 75 (EX_TEMPFAIL), with one line.
#
#  - the writer lock (STATE/store/write.lock, flock) held past
#    [store] lock_timeout_ms: deliver exits 75; readers are not blocked;
#    once the lock is free the same message goes in;
#  - the map full at [store] max_map_size: 75, and the store stays usable;
#  - the disk full (a 2 MiB tmpfs, when we may mount one): 75, and the
#    message goes in once there is room again.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
S=$T/state

# mail ID SIZE: a patch mail of about SIZE bytes
mail() {
	"$PY" - "$1" "$2" <<'PY'
import sys
mid, size = sys.argv[1], int(sys.argv[2])
sys.stdout.write("From: Alice Carter <alice.carter@example.org>\nTo: tinyproj@lists.example.org\n"
                 "Subject: [PATCH] tempfail: %s\nDate: Mon, 2 Jan 2023 10:00:00 +0000\n"
                 "Message-ID: <%s>\n\nA patch.\n---\ndiff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n"
                 "@@ -1,1 +1,%d @@\n" % (mid, mid, size // 64))
# random text, as incompressible as text goes: the store compresses mail
# (zstd), and these must fill its map
import random
r = random.Random(mid)
alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-"
for i in range(size // 64):
    sys.stdout.write("+\t/* %s */\n" % "".join(r.choice(alphabet) for _ in range(56)))
PY
}

# one_line FILE DESC: FILE is one line starting "patchgate: deliver: "
one_line() {
	is "$(grep -c '' "$1")" 1 "$2: one line on stderr"
	like "$(cat "$1")" '^patchgate: deliver: ' "$2: it starts 'patchgate: deliver: '"
}

mail first@example.org 2000 >"$T/first.eml"
pg --state "$S" deliver <"$T/first.eml"
is "$?" 0 "a first delivery creates the store"

# -- the writer lock
printf '[store]\nlock_timeout_ms = 200\n' >"$T/lock.conf"
mail locked@example.org 2000 >"$T/locked.eml"
exec 9>"$S/store/write.lock"
flock -x 9
start=$(date +%s%N)
pg --config "$T/lock.conf" --state "$S" deliver <"$T/locked.eml" 2>"$T/locked.err" 9>&-
st=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "$st" 75 "writer lock held: deliver exits 75"
one_line "$T/locked.err" "writer lock held"
is "$([ "$ms" -ge 190 ] && [ "$ms" -lt 5000 ] && echo yes)" yes "it waited about lock_timeout_ms (200 ms) before giving up"
diag "gave up after $ms ms: $(cat "$T/locked.err")"
pg --state "$S" msg list --json >/dev/null 9>&-
is "$?" 0 "msg list works while a writer holds the lock"
exec 9>&-
pg --state "$S" msg show locked@example.org >/dev/null 2>&1
is "$?" 66 "the refused message is not in the store (msg show exits 66)"
pg --config "$T/lock.conf" --state "$S" deliver <"$T/locked.eml"
is "$?" 0 "after the lock is released, deliver exits 0"
pg --state "$S" msg show locked@example.org >/dev/null
is "$?" 0 "and the message is stored"

# -- the map full: 1 MiB that may not grow
S2=$T/state-full
printf '[store]\nmap_size = 1048576\nmax_map_size = 1048576\n' >"$T/full.conf"
n=0
st=0
while [ $n -lt 40 ]; do
	mail "full-$n@example.org" 100000 >"$T/full.eml"
	pg --config "$T/full.conf" --state "$S2" deliver <"$T/full.eml" 2>"$T/full.err"
	st=$?
	[ $st -eq 0 ] || break
	n=$((n + 1))
done
is "$st" 75 "map full at max_map_size: deliver exits 75 (after $n deliveries of 100 KB)"
one_line "$T/full.err" "map full"
diag "$(cat "$T/full.err")"
is "$(pg --config "$T/full.conf" --state "$S2" store info --json | jq_py /dev/stdin 'd["messages"]')" "$n" \
	"the full store still opens and holds the $n messages that went in"
printf '[store]\nmax_map_size = 67108864\n' >"$T/roomy.conf"
pg --config "$T/roomy.conf" --state "$S2" deliver <"$T/full.eml"
is "$?" 0 "with a larger max_map_size the same message goes in"

# -- the map full during a bulk ingest: batches are written by a second
# thread while the next is parsed; the failure must still come out as 75,
# whole batches only, and a rerun completes the import
S4=$T/state-bulk
printf '[store]\nmap_size = 1048576\nmax_map_size = 1048576\n[ingest]\nbatch_messages = 5\n' >"$T/bulk.conf"
: >"$T/bulk.mbox"
for i in $(seq 0 29); do
	{ echo "From bulk@example.org Thu Jan  1 00:00:00 2024"
	  mail "bulk-$i@example.org" 100000
	  echo; } >>"$T/bulk.mbox"
done
pg --config "$T/bulk.conf" --state "$S4" ingest "$T/bulk.mbox" >/dev/null 2>"$T/bulk.err"
is "$?" 75 "map full during ingest: exit 75"
like "$(cat "$T/bulk.err")" "^patchgate: ingest: .*full" "ingest: one line saying the store is full"
got=$(pg --state "$S4" store info --json | jq_py /dev/stdin 'd["messages"]')
is "$(( got % 5 )):$([ "$got" -lt 30 ] && echo partial)" "0:partial" \
	"only whole batches were committed ($got of 30)"
printf '[store]\nmax_map_size = 67108864\n[ingest]\nbatch_messages = 5\n' >"$T/bulk2.conf"
pg --config "$T/bulk2.conf" --state "$S4" ingest --json "$T/bulk.mbox" >"$T/bulk.json"
is "$?" 0 "with room, the same ingest completes"
is "$(jq_py "$T/bulk.json" 'str(d["stored"]) + "+" + str(d["duplicates"])')" "$((30 - got))+$got" \
	"the rerun stores the rest and counts the committed ones as duplicates"

# -- the disk full
D=$T/small
mkdir "$D"
if ! mount -t tmpfs -o size=2m tmpfs "$D" 2>"$T/mount.err"; then
	why="cannot mount a tmpfs: $(head -n 1 "$T/mount.err")"
	for d in "disk full: setup" "disk full: deliver exits 75" "disk full: one line on stderr" \
		 "disk full: it starts 'patchgate: deliver: '" "disk full: the store still reads" \
		 "disk full: the message goes in once there is room"; do
		skip "$d" "$why"
	done
	done_testing
fi
TAP_CLEANUP='umount "$D" 2>/dev/null'
S3=$D/state
pg --state "$S3" deliver <"$T/first.eml" &&
	dd if=/dev/zero of="$D/filler" bs=4k 2>/dev/null
avail=$(df -k --output=avail "$D" | tail -n 1 | tr -d ' ')
is "$avail" 0 "disk full: setup (a store, then the tmpfs filled up)"
mail disk@example.org 300000 >"$T/disk.eml"
pg --state "$S3" deliver <"$T/disk.eml" 2>"$T/disk.err"
is "$?" 75 "disk full: deliver exits 75"
one_line "$T/disk.err" "disk full"
diag "$(cat "$T/disk.err")"
is "$(pg --state "$S3" store info --json | jq_py /dev/stdin 'd["messages"]')" 1 "disk full: the store still reads"
rm -f "$D/filler"
pg --state "$S3" deliver <"$T/disk.eml" && pg --state "$S3" msg show disk@example.org >/dev/null
is "$?" 0 "disk full: the message goes in once there is room"
umount "$D"
TAP_CLEANUP=

done_testing
