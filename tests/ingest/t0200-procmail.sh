#!/bin/bash
# t0200-procmail - patchgate as a procmail delivery hook.
#
# A generated list archive goes through `formail -s procmail -m RCFILE`,
# one procmail per message, whose only recipe pipes to `patchgate deliver`
# with the `w` flag (procmail waits and checks the exit code, falling back to
# DEFAULT on failure).  Afterwards the store holds every message exactly
# once and nothing reached the fallback mailbox.  procmail runs as whoever
# runs the test (root in CI): with -m and an rcfile outside /etc/procmailrcs
# it keeps that identity.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

if ! command -v procmail >/dev/null || ! command -v formail >/dev/null; then
	skip_all "procmail and formail are not installed (Debian package procmail)"
fi

T=$TAP_TMP
G=$T/gen
S=$T/state
rc=$HOME/.procmailrc

N=$(scaled 200 60)
ok "gen-list.py makes a $N-message list" gen_list "$N" 200 "$G" || bail "cannot generate the list"

# procmail wants the rcfile owned by us and not writable by others
cat >"$rc" <<RC
SHELL=/bin/sh
LOGFILE=$T/procmail.log
DEFAULT=$T/fallback.mbox
:0 w
| $PATCHGATE --state $S deliver
RC
chmod 600 "$rc"

formail -s procmail -m "$rc" <"$G/list.mbox" >"$T/formail.out" 2>&1
is "$?" 0 "formail -s procmail -m RCFILE < list.mbox exits 0"
ok "nothing landed in procmail's fallback mailbox" test ! -e "$T/fallback.mbox"
is "$(grep -c 'Program failure' "$T/procmail.log")" 0 "procmail saw no failing delivery"
is "$(grep -c '^  Folder: ' "$T/procmail.log")" "$(jq_py "$G/list.json" 'd["counts"]["messages"]')" \
	"procmail delivered every message of the mbox to the pipe"
is "$(store_msgids "$S")" "$(manifest_msgids "$G/list.json")" \
	"the store holds every message exactly once (a reused Message-ID twice)"
is "$(pg --state "$S" store info --json | jq_py /dev/stdin 'd["messages"]')" \
	"$(jq_py "$G/list.json" 'd["counts"]["stored"]')" "store info: the duplicate delivery was stored once"

done_testing
