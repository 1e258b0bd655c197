#!/bin/bash
# t0105-config - a value the configuration cannot mean is an error.
#
# docs/config.md: a value that is not a whole number, or is out of
# range, is an error (exit 78, EX_CONFIG); so is a boolean that is not
# one of true/yes/on/1, false/no/off/0 (the words [ci.local] and
# [report.email] take).  Before, `[daemon]`, `[pipeline]`, `[trust]` and
# `[apply]` read theirs with GKeyFile and took a bad one as the default
# (or, for `[daemon] rethread`, as true): `max_files = 10k` left patches
# unlimited without a word, `everyone = yes` was false.  A daemon that
# is sent SIGHUP with such a file keeps the configuration it had.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
S=$T/s
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp"

# $1: the file's text; the rest: the command.  Sets $rc and $err.
with_conf() {
	printf '%s\n' "$1" >"$T/conf"
	shift
	# (a daemon that took the file would run on: 124 after 10 s)
	timeout 10 "$PATCHGATE" --state "$S" --config "$T/conf" "$@" \
		>/dev/null 2>"$T/err"
	rc=$?
	err=$(cat "$T/err")
}

# each: the file, the command, what stderr must name
check_bad() {
	with_conf "$1" "${@:3}"
	is "$rc" 78 "$2: exit 78"
	like "$err" "$2" "$2: named"
}

check_bad $'[daemon]\nrethread = maybe' "\\[daemon\\] rethread: 'maybe' is not true or false" daemon
check_bad $'[daemon]\nfetch = enabled' "\\[daemon\\] fetch: 'enabled' is not true or false" daemon
check_bad $'[daemon]\ninterval = 5m' "\\[daemon\\] interval: '5m' is not a whole number" daemon
check_bad $'[daemon]\ninterval = 0' "\\[daemon\\] interval: 0 is out of range \\(1 to 86400\\)" daemon
# [store] and [ingest], read before any command
check_bad $'[store]\nlock_timeout_ms = soon' "\\[store\\] lock_timeout_ms: 'soon' is not a whole number" status
check_bad $'[ingest]\nbatch_messages = 2000000' "\\[ingest\\] batch_messages: 2000000 is out of range \\(0 to 1000000\\)" status
check_bad $'[ingest]\nmax_message_size = -1' "\\[ingest\\] max_message_size: -1 is out of range" status
check_bad $'[pipeline]\nwait_complete = -1' "\\[pipeline\\] wait_complete: -1 is out of range" run -q
check_bad $'[trust]\neveryone = yess' "\\[trust\\] everyone: 'yess' is not true or false" run -q
check_bad $'[trust]\ncommitters = maybe' "\\[trust\\] committers: 'maybe' is not true or false" run -q
APPLY=$'[apply]\nrepo = '"$T/repo"
check_bad "$APPLY"$'\nmax_files = 10k' "\\[apply\\] max_files: '10k' is not a whole number" run -q
check_bad "$APPLY"$'\nmax_patch_bytes = -5' "\\[apply\\] max_patch_bytes: -5 is out of range" run -q
check_bad "$APPLY"$'\nkeep_days = soon' "\\[apply\\] keep_days: 'soon' is not a whole number" run -q
check_bad "$APPLY"$'\nallow_symlinks = y' "\\[apply\\] allow_symlinks: 'y' is not true or false" run -q
check_bad "$APPLY"$'\nall_branches = 2' "\\[apply\\] all_branches: '2' is not true or false" run -q

# what the keys can be is taken, in the words the other sections take
with_conf $'[trust]\neveryone = No\ncommitters = off\n[pipeline]\nwait_complete = 0' run -q
is "$rc" 0 "valid [trust] and [pipeline] values: run exits 0"
like "$(pg --state "$S" --config "$T/conf" status)" "threading: ok" "status reads the same file"

# SIGHUP with a bad file: the daemon says so and keeps the old one
printf '[daemon]\nmaildirs = %s\ninterval = 1\nrethread = YES\nfetch = Off\n' "$T/md" >"$T/conf"
"$PATCHGATE" --state "$S" --config "$T/conf" daemon 2>"$T/daemon.log" &
pid=$!
TAP_CLEANUP="kill $pid 2>/dev/null"
for i in $(seq 100); do grep -q "daemon: started" "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" "every 1 s" "the daemon starts (interval = 1, rethread = YES, fetch = Off)"
printf '[daemon]\nmaildirs = %s\ninterval = 1\nrethread = maybe\n' "$T/md" >"$T/conf"
kill -HUP "$pid"
for i in $(seq 100); do grep -q "reload failed" "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" "reload failed, keeping the old configuration: \\[daemon\\] rethread: 'maybe'" "SIGHUP with a bad value: the old configuration stays"
ok "the daemon still runs" kill -0 "$pid"
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "it stops cleanly (exit 0)"

done_testing
