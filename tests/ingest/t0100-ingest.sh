#!/bin/bash
# t0100-ingest - `patchgate ingest` of a generated list archive, checked
# against gen-list.py's manifest: counts and kinds, mbox against maildir,
# re-ingesting (all duplicates), mboxrd and mboxo unescaping, and growth of
# a deliberately small LMDB map.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
G=$T/gen
man=$G/list.json

ok "gen-list.py makes a 300-message list" gen_list 300 100 "$G" || bail "cannot generate the list"

want() {	# want EXPR: EXPR over the manifest
	jq_py "$man" "$1"
}

# -- the mbox
pg --state "$T/s1" ingest --json "$G/list.mbox" >"$T/ingest1.json" 2>"$T/ingest1.err"
is "$?" 0 "ingest of the mbox exits 0"
diag "$(cat "$T/ingest1.json" "$T/ingest1.err")"
got() {		# got FILE EXPR
	jq_py "$1" "$2"
}
is "$(got "$T/ingest1.json" 'd["read"]')" "$(want 'd["counts"]["messages"]')" "read: every mbox entry"
is "$(got "$T/ingest1.json" 'd["bytes"]')" "$(want 'd["counts"]["bytes"]')" "bytes: the messages' sizes"
is "$(got "$T/ingest1.json" 'd["stored"]')" "$(want 'd["counts"]["stored"]')" \
	"stored: every distinct message (the reused Message-ID counts twice)"
is "$(got "$T/ingest1.json" 'd["duplicates"]')" 1 "duplicates: the one duplicate delivery"
is "$(got "$T/ingest1.json" 'd["conflicts"]')" 1 "conflicts: the one reused Message-ID"
is "$(got "$T/ingest1.json" '[d["rejected"], d["quarantined"]]')" "[0, 0]" "nothing rejected or quarantined"
is "$(got "$T/ingest1.json" '0 < d["writer_cpu_seconds"] < d["seconds"] + 1')" true \
	"writer_cpu_seconds: the writer thread's CPU time, measured"
is "$(got "$T/ingest1.json" 'd["kinds"]')" "$(want 'dict(d["counts"]["kinds"], rejected=0)')" \
	"kinds: patch/cover/reply/pull/other as the manifest says"
is "$(pg --state "$T/s1" store info --json | jq_py /dev/stdin 'd["messages"]')" \
	"$(want 'd["counts"]["stored"]')" "store info counts the stored messages"

manifest_msgids "$man" >"$T/want.ids"
store_msgids "$T/s1" >"$T/s1.ids"
is "$(cat "$T/s1.ids")" "$(cat "$T/want.ids")" "msg list holds every Message-ID of the manifest, a reused one twice"

# per message: the kind the manifest gives (ambiguous reused IDs aside)
pg --state "$T/s1" msg list --json >"$T/s1.list"
is "$("$PY" - "$man" "$T/s1.list" <<'EOF'
import json, sys
man = json.load(open(sys.argv[1]))
kinds = {}
for e in man["messages"]:
    if e.get("duplicate_of") is None:
        kinds.setdefault(e["msgid"], set()).add(e["kind"])
for m in json.load(open(sys.argv[2]))["messages"]:
    want = kinds.get(m["msgid"], {"?"})
    if m["kind"] not in want:
        print("%s: %s, manifest %s: %s" % (m["msgid"], m["kind"], "/".join(sorted(want)), m["subject"]))
EOF
)" "" "each message has the manifest's kind"
# the flag means "another message has this ID": both carry it, nothing else does
is "$(jq_py "$T/s1.list" '[m["msgid"] for m in d["messages"] if "id-conflict" in m["flags"]]')" \
	"$(want '[d["special"]["conflict"]] * 2')" "both messages with the reused Message-ID are flagged id-conflict"

# -- the same messages as a maildir
pg --state "$T/s2" ingest --json "$G/md" >"$T/ingest2.json" 2>"$T/ingest2.err"
is "$?" 0 "ingest of the maildir exits 0"
counts='[d["read"], d["stored"], d["duplicates"], d["conflicts"], d["rejected"], d["kinds"]]'
is "$(got "$T/ingest2.json" "$counts")" "$(got "$T/ingest1.json" "$counts")" "the maildir gives the mbox's counts"
is "$(store_msgids "$T/s2")" "$(cat "$T/s1.ids")" "the maildir gives the mbox's Message-IDs"
is "$(find "$G/md" -type f | wc -l)" "$(want 'd["counts"]["messages"]')" "the maildir is left as it was"

# -- again: all duplicates
pg --state "$T/s1" ingest --json "$G/list.mbox" >"$T/ingest3.json" 2>"$T/ingest3.err"
is "$?" 0 "a second ingest exits 0"
is "$(got "$T/ingest3.json" '[d["read"], d["stored"], d["duplicates"], d["conflicts"]]')" \
	"$(want '[d["counts"]["messages"], 0, d["counts"]["messages"], 0]')" "a second ingest stores nothing: all duplicates"
is "$(pg --state "$T/s1" store info --json | jq_py /dev/stdin 'd["messages"]')" \
	"$(want 'd["counts"]["stored"]')" "the store still holds each message once"

# -- mboxrd: body lines ">From", ">>From", ">>>From" lose one ">"
probe=$(want 'd["special"]["probe"]')
pg --state "$T/s1" msg show "$probe" --json >"$T/probe.json"
is "$(jq_py "$T/probe.json" '"\n".join(l for l in d["body"].split("\n") if "From " in l)')" \
	"$(want '"\n".join(d["special"]["probe_lines"])')" "mboxrd: escaped From lines come back unescaped by one level"

# -- mboxo: only ">From " is unescaped
cat >"$T/mboxo.mbox" <<'EOF'
From alice@example.org Mon Jan  2 10:00:00 2023
From: Alice Carter <alice@example.org>
To: tinyproj@lists.example.org
Subject: mboxo probe
Date: Mon, 2 Jan 2023 10:00:00 +0000
Message-ID: <mboxo-1@example.org>

first line
>From x, escaped once by the mboxo writer
>>From y, a quoted line mboxo leaves alone

From bob@example.org Mon Jan  2 11:00:00 2023
From: Bob Nguyen <bob@example.org>
To: tinyproj@lists.example.org
Subject: Re: mboxo probe
Date: Mon, 2 Jan 2023 11:00:00 +0000
Message-ID: <mboxo-2@example.org>
In-Reply-To: <mboxo-1@example.org>

second message
EOF
pg --state "$T/s3" ingest --json --format mboxo "$T/mboxo.mbox" >"$T/mboxo.json"
is "$?" 0 "ingest --format mboxo exits 0"
is "$(got "$T/mboxo.json" '[d["read"], d["stored"]]')" "[2, 2]" "mboxo: two messages"
pg --state "$T/s3" msg show mboxo-1@example.org --json >"$T/mboxo1.json"
is "$(jq_py "$T/mboxo1.json" '"\n".join(l for l in d["body"].split("\n") if l)')" \
	"first line
From x, escaped once by the mboxo writer
>>From y, a quoted line mboxo leaves alone" "mboxo: >From unescaped, >>From kept"
pg --state "$T/s4" ingest --json "$T/mboxo.mbox" >/dev/null
pg --state "$T/s4" msg show mboxo-1@example.org --json >"$T/mboxrd1.json"
is "$(jq_py "$T/mboxrd1.json" '"\n".join(l for l in d["body"].split("\n") if l)')" \
	"first line
From x, escaped once by the mboxo writer
>From y, a quoted line mboxo leaves alone" "the same file read as mboxrd (the default) unescapes both"

# -- a 1 MiB map must grow to take the whole list
PATCHGATE_STORE_MAP_SIZE=1048576 pg --state "$T/s5" ingest --json "$G/list.mbox" >"$T/ingest5.json" 2>"$T/ingest5.err"
rc=$?
is "$rc" 0 "ingest with PATCHGATE_STORE_MAP_SIZE=1048576 exits 0"
[ $rc -eq 0 ] || diag "$(cat "$T/ingest5.err")"
is "$(got "$T/ingest5.json" 'd["stored"]')" "$(want 'd["counts"]["stored"]')" "a small map stores every message"
PATCHGATE_STORE_MAP_SIZE=1048576 pg --state "$T/s5" store info --json >"$T/info5.json"
is "$(got "$T/info5.json" '[d["messages"], d["map_size"] > 1048576]')" "[$(want 'd["counts"]["stored"]'), true]" \
	"store info: every message, and the map grew past 1 MiB"
is "$(store_msgids "$T/s5")" "$(cat "$T/s1.ids")" "the grown store lists the same Message-IDs"

# -- messages over max_message_size: stored as rejected, their first 64 KiB
# kept, the reason naming the file that still holds all of it
printf '[ingest]\nmax_message_size = 6000\n' >"$T/small-msg.conf"
pg --state "$T/s6" --config "$T/small-msg.conf" ingest --json "$G/list.mbox" >"$T/ingest6.json"
is "$?" 0 "ingest with max_message_size = 6000 exits 0"
over=$("$PY" - "$G/list.mbox" <<'PY'
import sys
# count mbox messages over 6000 bytes, as the reader sees them: no From_
# line, mboxrd-unescaped, without the blank separator line
data = open(sys.argv[1], 'rb').read().split(b'\n')
msgs, cur = [], None
for i, l in enumerate(data):
    if l.startswith(b'From ') and (i == 0 or data[i - 1] == b''):
        if cur is not None:
            msgs.append(cur)
        cur = []
        continue
    if cur is not None:
        cur.append(l[1:] if l.lstrip(b'>').startswith(b'From ') and l.startswith(b'>') else l)
if cur is not None:
    msgs.append(cur)
over = set()    # the list's duplicate delivery is stored once
for m in msgs:
    while m and m[-1] == b'':
        m.pop()
    raw = b'\n'.join(m) + b'\n'
    if len(raw) > 6000:
        over.add(raw)
print(len(over))
PY
)
is "$(got "$T/ingest6.json" '[d["quarantined"] > 0, d["quarantined"], d["read"]]')" \
	"[true, $over, $(want 'd["counts"]["messages"]')]" \
	"every distinct message over 6000 bytes is stored as oversized ($over), none is lost"
pg --state "$T/s6" msg list --json >"$T/s6.list"
is "$(jq_py "$T/s6.list" 'sum(1 for m in d["messages"] if m["kind"] == "rejected")')" "$over" \
	"the oversized messages are stored as rejected"
first=$(jq_py "$T/s6.list" '[m["msgid"] for m in d["messages"] if m["kind"] == "rejected"][0]')
pg --state "$T/s6" msg show "$first" --json >"$T/over.json"
like "$(jq_py "$T/over.json" 'd["reject_reason"]')" "^larger than max_message_size \(6000 bytes\); the whole message is in mbox:.*list\.mbox$" \
	"its reason names the mbox that holds the whole message"

# msg show's text: the diff starts on a line of its own after the body's
# last line (the diffstat's "N insertions(+)"), as in the mail
cat >"$T/stat.mbox" <<'EOF'
From x@y Thu Jan  1 00:00:00 1970
From: A <a@example.org>
Subject: [PATCH] a: add b
Message-ID: <stat-1@example.org>
Date: Thu, 1 Jan 2026 00:00:00 +0000

Adds b.

Signed-off-by: A <a@example.org>
---
 a.c | 1 +
 1 file changed, 1 insertion(+)
diff --git a/a.c b/a.c
--- a/a.c
+++ b/a.c
@@ -1 +1,2 @@
 a
+b
EOF
pg --state "$T/s7" ingest "$T/stat.mbox" >/dev/null 2>&1
pg --state "$T/s7" msg show stat-1@example.org >"$T/stat.out"
is "$(grep -A1 'insertion(+)' "$T/stat.out")" " 1 file changed, 1 insertion(+)
diff --git a/a.c b/a.c" "msg show: the diff begins a line of its own after the diffstat"

done_testing
