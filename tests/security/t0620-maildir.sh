#!/bin/bash
# t0620-maildir - issue #25, findings 5 and 9: what a maildir holds is
# named by whoever delivers into it, and oversized mail is quarantined;
# against the real binary, once as root and once as an unprivileged user
# (tests/lib/unpriv.sh).
#
# Finding 5: a FIFO in new/ hung `ingest` (and the daemon, which SIGTERM
# did not stop); a subdirectory, or a symlink to one, aborted the whole
# ingest; a symlink was followed (to /etc/shadow, as root).  Now `ingest`
# of a maildir holding two messages and, beside them, a FIFO, a
# subdirectory, a symlink to a directory, a symlink to a root-only file
# with a secret in it and a symlink to a readable message outside the
# maildir, stores the two messages, skips the five others with a
# warning each and counts them (`--json` "skipped", the summary line),
# in bounded time (timeout: the old hang is a failure here, not a hung
# test); the secret is nowhere in the store (not in `msg show`, not in
# the LMDB file).  Each kind of entry is tried alone, then all at once.
# The daemon watching such a maildir stores the messages delivered beside
# a symlink to the secret, a directory and a symlink to one, and a FIFO,
# says each skipped entry once (not at every rescan), never stores the
# secret, and stops on SIGTERM within 5 seconds; a configured maildir
# that is a FIFO is not opened.  A FIFO given to `ingest` by name is
# still read: that one is the user's choice.
# Finding 9: the same oversized message delivered three times left three
# quarantine files; raw_ref was relative to the working directory, so
# with a relative --state the body could not be read from anywhere else.
# Now one file, raw_ref "quarantine/NAME" relative to the state
# directory, and `msg show` reads the body from another directory, and
# after the state directory moved.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

command -v timeout >/dev/null || skip_all "needs timeout (coreutils)"
T=$TAP_TMP

# a root-only file that no ingest may read, whoever runs it (read as a
# message, the secret would show in its subject and body)
printf 'Subject: SECRET-MARKER-t0620\n\nroot:SECRET-MARKER-t0620:19000:0:99999:7:::\n' >"$T/shadow"
chmod 600 "$T/shadow"

msg() {   # ID [BODY]
	printf 'From: Ann <ann@example.org>\nTo: list@example.org\n'
	printf 'Subject: message %s\nDate: Mon, 2 Jan 2023 10:00:00 +0000\n' "$1"
	printf 'Message-ID: <%s@example.org>\n\n%s\n' "$1" "${2:-hello}"
}

daemon_pid=
TAP_CLEANUP='[ -z "$daemon_pid" ] || kill -KILL "$daemon_pid" 2>/dev/null'

# ingest_md WHO DIR KIND: a maildir DIR with two messages and, for KIND,
# the hostile entries beside them (all: every one); sets N to how many
ingest_md() {
	local who=$1 md=$2 kind=$3
	mkdir -p "$md/new" "$md/cur" "$md/tmp"
	msg "$who-$kind-1" >"$md/new/1.host"
	msg "$who-$kind-2" >"$md/cur/9.host:2,S"
	N=0
	case $kind in fifo|all) mkfifo "$md/new/2.fifo"; N=$((N + 1)) ;; esac
	case $kind in subdir|all) mkdir "$md/new/3.subdir"; N=$((N + 1)) ;; esac
	case $kind in dirlink|all) ln -s / "$md/new/4.dirlink"; N=$((N + 1)) ;; esac
	case $kind in shadow|all) ln -s "$T/shadow" "$md/new/5.shadow"; N=$((N + 1)) ;; esac
	case $kind in msglink|all) ln -s "$T/$who/outside.eml" "$md/new/6.msglink"; N=$((N + 1)) ;; esac
}

# waits (15 s at most) until the daemon's store $1 holds Message-ID $2
wait_stored() {
	for _ in $(seq 150); do
		P --state "$1" msg list 2>/dev/null | grep -q "<$2>" && return 0
		sleep 0.1
	done
	return 1
}

# stops the daemon $daemon_pid with SIGTERM; TAP: within 5 s, exit 0
stop_daemon() {
	local rc
	kill -TERM "$daemon_pid"
	for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$daemon_pid" 2>/dev/null; then
		fail "$1" "still running after 5 s; killed"
		kill -KILL "$daemon_pid"
	else
		pass "$1"
	fi
	wait "$daemon_job"
	rc=$?
	is "$rc" 0 "$2"
	daemon_pid=
}

# starts the daemon as $who on state $1, config $2, log $3
start_daemon() {
	local pid_file=$d/daemon.pid
	rm -f "$pid_file"
	"${run[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$pid_file" "$PATCHGATE" \
		--state "$1" --config "$2" daemon 2>"$3" &
	daemon_job=$!
	for _ in $(seq 50); do [ -s "$pid_file" ] && break; sleep 0.1; done
	daemon_pid=$(cat "$pid_file")
}

attack() {
	who=$1 d=$T/$1 run=()
	local out rc kind

	mkdir -p "$d"
	if [ "$who" = unpriv ]; then
		run=(as_unpriv env "TMPDIR=$d")
	fi
	msg "$who-outside" >"$d/outside.eml"

	# ---- finding 5: ingest, one kind of entry at a time, then all ---
	for kind in fifo subdir dirlink shadow msglink all; do
		ingest_md "$who" "$d/md-$kind" "$kind"
		[ "$who" = unpriv ] && unpriv_own "$d"
		out=$("${run[@]}" timeout 30 "$PATCHGATE" --state "$d/s-$kind" ingest --json \
			"$d/md-$kind" 2>"$d/ingest-$kind.err")
		rc=$?
		is "$rc" 0 "$who: ingest of a maildir with a $kind entry exits 0, in time"
		is "$(printf '%s' "$out" | jq_py /dev/stdin '[d["read"], d["stored"], d["skipped"]]' 2>&1)" \
			"[2, 2, $N]" "$who, $kind: both messages stored, the $N other entries skipped and counted"
		is "$(store_msgids "$d/s-$kind" 2>&1)" \
			"$(printf '%s@example.org\n' "$who-$kind-1" "$who-$kind-2")" \
			"$who, $kind: the store holds the two messages and nothing else"
		is "$(grep -c 'skipped: .*/new/[2-6]\.[a-z]* is ' "$d/ingest-$kind.err")" "$N" \
			"$who, $kind: a warning for each entry skipped"
	done
	for f in 2.fifo:'a FIFO' 3.subdir:'a directory' 4.dirlink:'a symbolic link' \
		 5.shadow:'a symbolic link' 6.msglink:'a symbolic link'; do
		like "$(cat "$d/ingest-all.err")" "skipped: $d/md-all/new/${f%%:*} is ${f#*:}" \
			"$who: the warning says ${f%%:*} is ${f#*:}"
	done
	for kind in shadow all; do
		out=$(P --state "$d/s-$kind" msg list --json 2>&1)
		for id in $(store_msgids "$d/s-$kind"); do
			out+=$(P --state "$d/s-$kind" msg show "$id" --json 2>&1)
		done
		unlike "$out$(cat "$d/ingest-$kind.err")" 'SECRET' \
			"$who, $kind: no secret in msg list, msg show of every message, or the warnings"
		ok "$who, $kind: the secret is nowhere in the LMDB file" \
			bash -c '! grep -aq SECRET-MARKER "$1"' - "$d/s-$kind/store/data.mdb"
	done
	out=$("${run[@]}" timeout 30 "$PATCHGATE" --state "$d/s-all" ingest "$d/md-all" 2>/dev/null)
	like "$out" ' 2 duplicates, .*; 5 maildir entries skipped$' \
		"$who: the summary line counts the skipped entries"

	# a FIFO named on the command line is the user's choice: read it
	msg "$who-fifo" >"$d/named.mbox"
	mkfifo "$d/named.fifo"
	[ "$who" = unpriv ] && unpriv_own "$d/named.fifo"
	timeout 30 sh -c 'cat "$1" >"$2"' - "$d/named.mbox" "$d/named.fifo" &
	out=$("${run[@]}" timeout 30 "$PATCHGATE" --state "$d/s-named" ingest --json \
		"$d/named.fifo" 2>&1)
	is "$(printf '%s' "$out" | jq_py /dev/stdin 'd["stored"]' 2>&1)" 1 \
		"$who: an mbox FIFO given by name is still read"
	wait

	# ---- finding 5: the daemon --------------------------------------
	# delivered as an MTA does: tmp/, then a rename into new/
	deliver_md() {
		msg "$1" >"$d/dmd/tmp/$2"
		[ "$who" = unpriv ] && unpriv_own "$d/dmd"
		mv "$d/dmd/tmp/$2" "$d/dmd/new/$2"
	}
	mkdir -p "$d/dmd/new" "$d/dmd/cur" "$d/dmd/tmp"
	msg "$who-d1" >"$d/dmd/new/1.host"
	printf '[daemon]\nmaildirs = %s\ninterval = 1\n' "$d/dmd" >"$d/daemon.conf"
	[ "$who" = unpriv ] && unpriv_own "$d"
	start_daemon "$d/ds" "$d/daemon.conf" "$d/daemon.log"
	wait_stored "$d/ds" "$who-d1@example.org"
	is "$?" 0 "$who: daemon: a message in the maildir is stored"
	# a symlink to the secret (alone: a directory made the old scan
	# give up before it stored what it had read)
	ln -s "$T/shadow" "$d/dmd/new/2.shadow"
	deliver_md "$who-d2" 3.host
	wait_stored "$d/ds" "$who-d2@example.org"
	is "$?" 0 "$who: daemon: a message delivered beside a symlink to a secret is stored"
	sleep 2   # two more rescans
	is "$(P --state "$d/ds" msg list 2>&1 | wc -l)" 2 "$who: daemon: nothing else is stored"
	ok "$who: daemon: the secret is nowhere in the LMDB file" \
		bash -c '! grep -aq SECRET-MARKER "$1"' - "$d/ds/store/data.mdb"
	# a symlink to a directory and a subdirectory
	ln -s / "$d/dmd/new/4.dirlink"
	mkdir "$d/dmd/new/5.subdir"
	deliver_md "$who-d3" 6.host
	wait_stored "$d/ds" "$who-d3@example.org"
	is "$?" 0 "$who: daemon: a message delivered beside a directory and a symlink to one is stored"
	# a FIFO
	mkfifo "$d/dmd/new/7.fifo"
	deliver_md "$who-d4" 8.host
	wait_stored "$d/ds" "$who-d4@example.org"
	is "$?" 0 "$who: daemon: a message delivered beside a FIFO is stored"
	sleep 3   # three more rescans
	msg "$who-d5" >"$d/dmd/cur/9.host:2,S"
	[ "$who" = unpriv ] && unpriv_own "$d/dmd"
	wait_stored "$d/ds" "$who-d5@example.org"
	is "$?" 0 "$who: daemon: and after three rescans it still stores new mail"
	is "$(grep -c 'skipped: .*/new/7\.fifo is a FIFO' "$d/daemon.log")" 1 \
		"$who: daemon: the FIFO is said to be skipped once, not at every rescan"
	is "$(grep -c 'skipped: .*/new/[245]\.[a-z]* is ' "$d/daemon.log")" 3 \
		"$who: daemon: and each symlink and the directory once"
	unlike "$(cat "$d/daemon.log")" 'SECRET' "$who: daemon: the secret is not in its log"
	stop_daemon "$who: daemon: SIGTERM stops it within 5 seconds" \
		"$who: daemon: and it exits 0"

	# a configured maildir that is a FIFO is not opened either
	mkfifo "$d/fifo-md"
	printf '[daemon]\nmaildirs = %s\ninterval = 1\n' "$d/fifo-md" >"$d/daemon2.conf"
	[ "$who" = unpriv ] && unpriv_own "$d"
	start_daemon "$d/ds2" "$d/daemon2.conf" "$d/daemon2.log"
	for _ in $(seq 50); do grep -q 'not a directory' "$d/daemon2.log" && break; sleep 0.1; done
	like "$(cat "$d/daemon2.log")" 'fifo-md: not a directory' \
		"$who: daemon: a configured maildir that is a FIFO is said not to be one"
	stop_daemon "$who: daemon: and SIGTERM stops it within 5 seconds" \
		"$who: daemon: and it exits 0 again"

	# ---- finding 9: the quarantine ----------------------------------
	printf '[ingest]\nmax_message_size = 4096\n' >"$d/q.conf"
	"$PY" -c 'import sys; sys.stdout.write("".join("line %05d of a large message\n" % i for i in range(1000)))' >"$d/body"
	msg "$who-big" "$(cat "$d/body")" >"$d/big.eml"
	mkdir -p "$d/work" "$d/elsewhere"
	[ "$who" = unpriv ] && unpriv_own "$d"
	out=""
	for _ in 1 2 3; do
		out+=$(cd "$d/work" && "${run[@]}" "$PATCHGATE" --state qs --config ../q.conf \
			deliver --json <"$d/big.eml" | jq_py /dev/stdin 'd["result"]' 2>&1)" "
	done
	is "$out" "added duplicate duplicate " "$who: an oversized message delivered three times is stored once"
	is "$(ls -A "$d/work/qs/quarantine" | wc -l)" 1 "$who: and leaves exactly one quarantine file"
	out=$(cd "$d/work" && P --state qs msg show "$who-big@example.org" --json 2>&1)
	like "$(printf '%s' "$out" | jq_py /dev/stdin 'd["raw"]["ref"]' 2>&1)" '^quarantine/[0-9a-f]{64}\.eml$' \
		"$who: raw_ref is relative to the state directory"
	ok "$who: the quarantine file holds the whole message" \
		cmp "$d/big.eml" "$d/work/qs/$(printf '%s' "$out" | jq_py /dev/stdin 'd["raw"]["ref"]')"
	out=$(cd "$d/elsewhere" && P --state ../work/qs msg show "$who-big@example.org" --json 2>&1)
	like "$(printf '%s' "$out" | jq_py /dev/stdin 'd["body"]' 2>&1)" 'line 00999 of a large message' \
		"$who: msg show from another directory reads its body"
	mv "$d/work/qs" "$d/moved-qs"
	out=$(cd "$d/elsewhere" && P --state ../moved-qs msg show "$who-big@example.org" --json 2>&1)
	like "$(printf '%s' "$out" | jq_py /dev/stdin 'd["body"]' 2>&1)" 'line 00999 of a large message' \
		"$who: and after the state directory moved"
}

P() { "${run[@]}" "$PATCHGATE" "$@"; }

if [ "$(id -u)" -eq 0 ]; then
	attack root
else
	attack user
fi
if unpriv_init; then
	attack unpriv
else
	skip "the same as an unprivileged user" "not root, or no setpriv"
fi

done_testing
