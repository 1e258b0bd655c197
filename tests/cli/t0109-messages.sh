#!/bin/bash
# t0109-messages - what the commands say of an unknown series, of a store
# this user may not use, and of a command group without its subcommand
# (issue #41, finding 4; docs/man/patchgate.1.scd, "EXIT STATUS").
#
#   - An unknown series ID was "series ID: MDB_NOTFOUND: No matching
#     key/data pair found"; every command that takes one now says "no
#     series ID", exit 66 (EX_NOINPUT: what was asked for is not there,
#     as msg show of an unknown Message-ID).
#   - A user who may not enter the state directory (or read the store's
#     files) was told "no store at ..." (66), or got "Permission denied"
#     with exit 70; now "permission denied: user U may not ...", exit 77
#     (EX_NOPERM); deliver keeps its 75, so that the MTA retries.
#   - `patchgate series` (msg, report) without a subcommand opened the
#     store first and said "no store"; now its usage, exit 64, with no
#     store opened.  `outbox` alone is `outbox list`, as documented;
#     `outbox WORD` listed the outbox (and made a store): now a usage
#     error.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.invalid \
	GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t.invalid
T=$TAP_TMP
S=$T/s

# run ARG...: sets rc and err (stdout dropped)
run() {
	"$PATCHGATE" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	err=$(cat "$T/err")
}

# ---- an unknown series ------------------------------------------------------

ok "a store" pg --state "$S" ingest /dev/null
git init -q -b master "$T/repo" && git -C "$T/repo" commit -q --allow-empty -m base ||
	bail "git init failed"
printf '[apply]\nrepo = %s\n[ci.local]\ncommands = build: true\nwork_root = %s\n' \
	"$T/repo" "$T" >"$T/conf"
ID=sdeadbeef0000
for cmd in "series show" "series mbox" approve reject recheck apply test; do
	for conf in "" "--config=$T/conf"; do
		# shellcheck disable=SC2086
		run --state "$S" $conf $cmd $ID
		is "$rc" 66 "$cmd $ID${conf:+ (configured)}: exit 66"
		is "$err" "patchgate: ${cmd%% *}: no series $ID" \
			"$cmd $ID${conf:+ (configured)}: no series $ID"
	done
done
run --state "$S" series show --json $ID
unlike "$err" "MDB_" "no LMDB words"

# ---- a command group without its subcommand ---------------------------------

N=$T/none	# no state directory at all
for cmd in series msg report; do
	run --state "$N" $cmd
	is "$rc" 64 "$cmd alone: exit 64"
	like "$err" "^patchgate: $cmd: usage: patchgate $cmd " "$cmd alone: its usage"
	run --state "$N" $cmd bogus
	is "$rc" 64 "$cmd bogus: exit 64"
	like "$err" "^patchgate: $cmd: usage: " "$cmd bogus: its usage, not 'no store'"
done
for cmd in store config; do
	run --state "$N" $cmd
	is "$rc" 64 "$cmd alone: exit 64"
	like "$err" "^patchgate: $cmd: usage: patchgate $cmd " "$cmd alone: its usage"
done
run --state "$N" outbox bogus
is "$rc" 64 "outbox bogus: exit 64"
is "$err" "patchgate: outbox: unknown subcommand 'bogus' (list|send); see 'patchgate outbox --help'" \
	"outbox bogus: a usage error, not the outbox listed"
ok "none of them made a state directory" test ! -e "$N"
run --state "$S" outbox
is "$rc/$(cat "$T/out")" "0/the outbox is empty" "outbox alone is outbox list"
run --state "$N" series show $ID
is "$err/$rc" "patchgate: series: no store at $N/store/66" "a store that is not there: no store, 66"

# ---- a store this user may not use ------------------------------------------

if ! unpriv_init; then
	skip "permission denied" "not root, or no setpriv"
	done_testing
	exit
fi
U=$UNPRIV_USER
urun() {	# urun ARG...: as the unprivileged user; sets rc and err
	as_unpriv "$PATCHGATE" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	err=$(cat "$T/err")
}
chmod 700 "$S"
for cmd in "series list" "msg list" status "store info" "store verify" \
	"report html $T/site" "series show $ID" "ingest /dev/null" outbox \
	"approve $ID" "route x@y"; do
	# shellcheck disable=SC2086
	urun --state "$S" $cmd
	is "$rc" 77 "$cmd, state directory closed: exit 77"
	like "$err" "^patchgate: ${cmd%% *}: permission denied: user $U may not enter .*s \\(the store is .*s/store\\)$" \
		"$cmd: permission denied, not 'no store'"
done
printf 'From: a@b\nMessage-ID: <m@b>\nSubject: x\n\nx\n' >"$T/mail"
as_unpriv "$PATCHGATE" --state "$S" deliver <"$T/mail" 2>"$T/err"
is "$?" 75 "deliver, state directory closed: 75 still (the MTA keeps the mail)"
like "$(cat "$T/err")" "permission denied: user $U may not enter" "... saying why"
chmod 755 "$S" "$S/store"
urun --state "$S" series list
is "$rc" 77 "data.mdb this user may not read: exit 77"
like "$err" "permission denied: user $U may not read .*s/store/data\\.mdb" \
	"... naming the file"
urun --state "$S" ingest /dev/null
like "$err/$rc" "permission denied: user $U may not write .*s/store/data\\.mdb.*/77$" \
	"a writer that may not write data.mdb: 77"
chmod 644 "$S/store/data.mdb" "$S/store/write.lock"
urun --state "$S" series list
is "$rc" 0 "a user who may read the store reads it (no lock.mdb of its own)"
mkdir -m 755 "$T/ro"
urun --state "$T/ro/new" ingest /dev/null
like "$err/$rc" "permission denied: user $U may not create .*ro/new in .*ro .*/77$" \
	"a new store where this user may not make it: 77"

done_testing
