#!/bin/bash
# t0210-maildrop - patchgate as a maildrop delivery hook.
#
# Every message of a generated list (as maildir files: maildrop takes no
# mbox From_ line) goes through `maildrop FILTER`, a mailfilter (mode 600,
# ours) whose `to "| patchgate deliver"` is the final delivery: maildrop's
# exit code is the pipe's.  Afterwards the store holds every message once.
# Then EX_TEMPFAIL end to end: with the store's writer lock held, deliver
# gives up after lock_timeout_ms, exits 75, and maildrop exits 75 so that
# the MTA would retry; after the lock is released the same message goes in.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v maildrop >/dev/null || skip_all "maildrop is not installed (Debian package maildrop)"

T=$TAP_TMP
G=$T/gen
S=$T/state
filter=$HOME/.mailfilter

N=$(scaled 200 60)
ok "gen-list.py makes a $N-message list" gen_list "$N" 210 "$G" || bail "cannot generate the list"

printf '[store]\nlock_timeout_ms = 200\n' >"$T/patchgate.conf"
cat >"$filter" <<FILTER
DEFAULT="$T/fallback"
to "| $PATCHGATE --config $T/patchgate.conf --state $S deliver"
FILTER
chmod 600 "$filter"

fails=0
n=0
for f in "$G"/md/cur/* "$G"/md/new/*; do
	n=$((n + 1))
	maildrop "$filter" <"$f" >>"$T/maildrop.out" 2>&1
	st=$?
	if [ $st -ne 0 ]; then
		fails=$((fails + 1))
		diag "maildrop $f: exit $st"
	fi
done
is "$fails" 0 "maildrop FILTER < message exits 0 for each of the $n messages"
ok "nothing was delivered to maildrop's default mailbox" test ! -e "$T/fallback"
is "$(store_msgids "$S")" "$(manifest_msgids "$G/list.json")" \
	"the store holds every message exactly once (a reused Message-ID twice)"

# -- EX_TEMPFAIL through maildrop
lock=$S/store/write.lock
ok "the store has its writer lock file" test -f "$lock"
msg=$T/new.eml
cat >"$msg" <<'MSG'
From: Alice Carter <alice.carter@example.org>
To: tinyproj@lists.example.org
Subject: [PATCH] lock: a message that waits for the writer lock
Date: Mon, 2 Jan 2023 10:00:00 +0000
Message-ID: <tempfail-1@example.org>

Nothing to see.
MSG
exec 9>"$lock"
flock -x 9
start=$(date +%s%N)
maildrop "$filter" <"$msg" >"$T/locked.out" 2>&1 9>&-
st=$?
ms=$((($(date +%s%N) - start) / 1000000))
exec 9>&-
is "$st" 75 "with the writer lock held, maildrop exits 75 (EX_TEMPFAIL)"
diag "maildrop gave up after $ms ms (lock_timeout_ms = 200)"
is "$(grep -c "" "$T/locked.out")" 1 "patchgate said why on one line"
like "$(cat "$T/locked.out")" '^patchgate: deliver: ' "which starts 'patchgate: deliver: '"
pg --state "$S" msg show tempfail-1@example.org >/dev/null 2>&1
is "$?" 66 "the message was not stored (msg show exits 66)"
maildrop "$filter" <"$msg" >"$T/unlocked.out" 2>&1
is "$?" 0 "once the lock is released, maildrop exits 0"
pg --state "$S" msg show tempfail-1@example.org >/dev/null 2>&1
is "$?" 0 "and the message is stored"

done_testing
