#!/bin/bash
# t0630-store - issue #25, findings 6 and 7: a damaged store, and the
# standard descriptors; against the real binary, once as root and once as
# an unprivileged user (tests/lib/unpriv.sh).
#
# Finding 6: a few damaged bytes in data.mdb killed every command with a
# signal (SIGSEGV in mdb_dbi_open, SIGBUS, SIGABRT: exit 139, 135, 134),
# deliver included, whose contract is 75 on any failure so that the MTA
# keeps the mail.  Now, for seven damages (a meta page, a file cut short,
# the main database's leaf, the messages branch page and a leaf of it,
# the branch page's type, the series branch page's node offsets: see
# DAMAGES below), no command dies of a signal; every command that reads
# the damage exits 65 with one line "patchgate: COMMAND: ..." that calls
# the store damaged and names 'patchgate store verify'; deliver exits 75
# with one line, and once the store is repaired (restored) the retried
# delivery goes in.  Three of the damages kill the old code whatever the
# environment (tail: series list, status and deliver, SIGBUS; flags:
# deliver, SIGABRT; pointers: series list and status, SIGBUS), and the
# last two still kill this code with its signal guard off: the exit
# codes asserted here are what fails there.  `store verify` says "sound"
# and exits 0 on a good store, and on each damaged one exits 65 and names
# the damaged database first (the pages that crash it included: it reads
# them in a process of its own, and says so), as it names a record that
# does not decode (series, messages); --json carries format_version 1.
# Finding 7: `deliver <&-` exited 0 and stored an empty message
# (write.lock had become descriptor 0); `msg list >&-` wrote the listing
# into write.lock, `deliver 2>&-` its error line.  Now a closed
# descriptor is /dev/null: deliver with a closed or empty stdin exits 66
# and stores nothing (not even a store), and nothing patchgate prints
# lands in the store's files.  On a read-only state directory (a
# read-only bind mount for root, chmod -R a-w for the user, a store owned
# by root for the user) msg list, series list, status and store verify
# work and say what they say on a writable one; a reader that cannot
# write lock.mdb waits for a writer holding write.lock (LMDB's MDB_NOLOCK
# contract), and one that can does not.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"
. "$SRCDIR/tests/lib/store-corrupt.sh"

command -v mdb_load >/dev/null || skip_all "needs mdb_load (lmdb-utils)"
command -v flock >/dev/null || skip_all "needs flock (util-linux)"
T=$TAP_TMP

mounted=
TAP_CLEANUP='[ -z "$mounted" ] || umount "$mounted" 2>/dev/null'

# the store every attack copies: a generated list, ingested
gen_list 60 3 "$T/list" >/dev/null || bail "gen-list.py failed"
pg --state "$T/template" ingest "$T/list/list.mbox" >/dev/null 2>&1 ||
	bail "ingest of the generated list failed"

mail() {   # ID
	printf 'From: Ann <ann@example.org>\nTo: list@example.org\n'
	printf 'Subject: [PATCH] store %s\nDate: Mon, 2 Jan 2023 10:00:00 +0000\n' "$1"
	printf 'Message-ID: <%s@example.org>\n\nhello\n' "$1"
}

# pages DATA.MDB: "META N" (the meta page LMDB reads: the higher
# transaction id), then "PGNO KIND DB" for every page of the trees
# (LMDB 0.9, 64-bit: the layout store/verify.c describes)
pages() {
	"$PY" - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
ps = struct.unpack_from('<I', d, 40)[0]
metas = [(struct.unpack_from('<Q', d, i * ps + 144)[0], i) for i in (0, 1)]
txn, meta = max(metas)
print('META', meta)
def nodes(pg):
    lower = struct.unpack_from('<H', d, pg * ps + 12)[0]
    for i in range((lower - 16) // 2):
        yield pg * ps + struct.unpack_from('<H', d, pg * ps + 16 + 2 * i)[0]
def walk(pg, db):
    flags = struct.unpack_from('<H', d, pg * ps + 10)[0]
    if flags & 1:
        print(pg, 'branch', db)
        for n in nodes(pg):
            lo, hi, fl = struct.unpack_from('<HHH', d, n)
            walk(lo | hi << 16 | fl << 32, db)
    elif flags & 2:
        print(pg, 'leaf', db)
        if flags & 0x20:
            return
        for n in nodes(pg):
            lo, hi, fl, ks = struct.unpack_from('<HHHH', d, n)
            if db == 'main' and fl & 2:
                root = struct.unpack_from('<Q', d, n + 8 + ks + 40)[0]
                if root != 2 ** 64 - 1:
                    walk(root, d[n + 8:n + 8 + ks].decode())
walk(struct.unpack_from('<Q', d, meta * ps + 128)[0], 'main')
PY
}

# flip FILE OFFSET: inverts the 8 bytes there
flip() {
	"$PY" - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(8)
    f.seek(int(sys.argv[2])); f.write(bytes(x ^ 0xff for x in b))
PY
}

pages "$T/template/store/data.mdb" >"$T/pages" || bail "cannot read the template's pages"
PS=$("$PY" -c 'import struct,sys; print(struct.unpack_from("<I", open(sys.argv[1],"rb").read(64), 40)[0])' \
	"$T/template/store/data.mdb")
META=$(awk '$1 == "META" { print $2 }' "$T/pages")
MAIN_LEAF=$(awk '$2 == "leaf" && $3 == "main" { print $1; exit }' "$T/pages")
MSG_BRANCH=$(awk '$2 == "branch" && $3 == "messages" { print $1; exit }' "$T/pages")
MSG_LEAF=$(awk '$2 == "leaf" && $3 == "messages" { print $1; exit }' "$T/pages")
[ -n "$META" ] && [ -n "$MAIN_LEAF" ] && [ -n "$MSG_BRANCH" ] && [ -n "$MSG_LEAF" ] ||
	bail "the template store has not the pages this test damages: $(tr '\n' ' ' <"$T/pages")"
diag "page size $PS; meta page $META, main leaf $MAIN_LEAF, messages branch $MSG_BRANCH, first messages leaf $MSG_LEAF"
SERIES_ID=$(pg --state "$T/template" series list --json | jq_py /dev/stdin 'd["series"][0]["id"]')

SERIES_ROOT=$(awk '$2 == "branch" && $3 == "series" { print $1; exit }' "$T/pages")
SIZE=$(stat -c %s "$T/template/store/data.mdb")
[ -n "$SERIES_ROOT" ] && [ $((SERIES_ROOT * PS + 65528 + 8)) -gt "$SIZE" ] ||
	bail "the series branch page (${SERIES_ROOT:-none}) is not within 64 KiB of the end of data.mdb"

# pointers FILE PAGE: points every node of PAGE at 0xfff8 bytes into it,
# which is past the end of the file: reading a node there is a SIGBUS
pointers() {
	"$PY" - "$1" "$2" "$PS" <<'PY'
import struct, sys
page, ps = int(sys.argv[2]), int(sys.argv[3])
with open(sys.argv[1], 'r+b') as f:
    f.seek(page * ps + 12); lower = struct.unpack('<H', f.read(2))[0]
    f.seek(page * ps + 16); f.write(struct.pack('<H', 0xfff8) * ((lower - 16) // 2))
PY
}

# The damages, in STORE/data.mdb:
#   meta      8 bytes flipped at 136 in the meta page LMDB reads: its last
#             page number
#   tail      the last 8 pages cut off (a copy that stopped short)
#   main      8 bytes flipped at 16 in the main database's leaf, where the
#             databases are named: node offsets
#   branch    the same in the messages database's branch page
#   leaf      8 bytes flipped at 20 in the first messages leaf
#   flags     8 bytes flipped at 8 in the messages branch page: its type
#             and bounds
#   pointers  every node offset of the series branch page pointing past
#             the end of the file
# tail, flags and pointers kill the old code by a signal, whatever the
# environment: tail and pointers every command that reads series (SIGBUS),
# flags deliver (LMDB's assertion: SIGABRT).  The others did too in other
# environments (main: deliver, SIGSEGV; branch: msg list, SIGBUS; leaf:
# msg list, SIGSEGV), depending on what the damaged offsets lead LMDB to.
DAMAGES="meta tail main branch leaf flags pointers"

damage() {   # NAME STORE
	local f=$2/data.mdb
	case $1 in
	meta) flip "$f" $((META * PS + 136)) ;;
	tail) truncate -s $(($(stat -c %s "$f") - 8 * PS)) "$f" ;;
	main) flip "$f" $((MAIN_LEAF * PS + 16)) ;;
	branch) flip "$f" $((MSG_BRANCH * PS + 16)) ;;
	leaf) flip "$f" $((MSG_LEAF * PS + 20)) ;;
	flags) flip "$f" $((MSG_BRANCH * PS + 8)) ;;
	pointers) pointers "$f" "$SERIES_ROOT" ;;
	esac
}

# failing NAME: the commands that read the damage NAME (and must fail)
failing() {
	case $1 in
	meta|tail|main) echo "msg series store status deliver" ;;
	branch|leaf) echo msg ;;
	flags) echo deliver ;;
	pointers) echo series ;;
	esac
}

# verified NAME: the database store verify names first for NAME
verified() {
	case $1 in
	meta|tail|main) echo data.mdb ;;
	pointers) echo series ;;
	*) echo messages ;;
	esac
}

P() { "${run[@]}" "$PATCHGATE" "$@"; }

# fresh NAME: a copy of the template at $d/NAME, owned by who runs
fresh() {
	rm -rf "${d:?}/$1"
	cp -a "$T/template" "$d/$1"
	if [ "$who" = unpriv ]; then unpriv_own "$d/$1"; fi
}

# one_error FILE DESC CMD: FILE is one line "patchgate: CMD: ..." that
# calls the store damaged and names 'patchgate store verify'
one_error() {
	is "$(grep -c '' "$1")" 1 "$2: one line on stderr" || diag "$(cat "$1")"
	like "$(head -1 "$1")" "^patchgate: $3: .*damaged.*'patchgate store verify'" \
		"$2: it says the store is damaged and to run 'patchgate store verify'"
}

# no_signal RC DESC
no_signal() {
	if [ "$1" -gt 128 ]; then
		fail "$2: not killed by a signal" "exit $1: signal $(($1 - 128))"
	else
		pass "$2: not killed by a signal (exit $1)"
	fi
}

attack() {
	who=$1 d=$T/$1 run=()
	local name rc out fails db

	mkdir -p "$d"
	chmod 755 "$d"
	if [ "$who" = unpriv ]; then
		run=(as_unpriv)
	fi

	# ---- store verify on a sound store ---------------------------------
	fresh good
	out=$(P --state "$d/good" store verify 2>"$d/verify-good.err")
	is "$?" 0 "$who: store verify of a sound store exits 0"
	like "$out" "^store .* is sound: 14 databases, [0-9]+ entries$" "$who: and says it is sound"
	out=$(P --state "$d/good" store verify --json)
	is "$(printf '%s' "$out" | jq_py /dev/stdin '[d["format_version"], d["clean"], d["problems"], len(d["databases"])]')" \
		'[1, true, [], 14]' "$who: store verify --json: format_version 1, clean, no problems, 14 databases"

	# ---- finding 6: damaged pages --------------------------------------
	for name in $DAMAGES; do
		fresh "$name"
		damage "$name" "$d/$name/store"
		cp -a "$d/$name" "$d/$name.orig"
		fails=" $(failing "$name") "

		# every command: never a signal; one line when it fails, and
		# those that read the damage fail
		for cmd in "msg list" "series list" "store info" "status"; do
			# shellcheck disable=SC2086
			P --state "$d/$name" $cmd >/dev/null 2>"$d/$name.err"
			rc=$?
			no_signal "$rc" "$who: $name damage: $cmd"
			case $fails in
			*" ${cmd%% *} "*)
				is "$rc" 65 "$who: $name damage: $cmd exits 65" ;;
			esac
			if [ "$rc" -ne 0 ]; then
				one_error "$d/$name.err" "$who: $name damage: $cmd" "${cmd%% *}"
			fi
		done
		mail "$who-$name" >"$d/$name.eml"
		P --state "$d/$name" deliver <"$d/$name.eml" 2>"$d/$name.deliver.err"
		rc=$?
		no_signal "$rc" "$who: $name damage: deliver"
		case $fails in
		*" deliver "*)
			is "$rc" 75 "$who: $name damage: deliver exits 75 (EX_TEMPFAIL: the MTA keeps the mail)"
			one_error "$d/$name.deliver.err" "$who: $name damage: deliver" deliver
			# the MTA's retry, once the store is repaired (restored)
			fresh "$name"
			P --state "$d/$name" deliver <"$d/$name.eml"
			is "$?" 0 "$who: $name damage: after the repair, the retried delivery exits 0"
			like "$(P --state "$d/$name" msg show "$who-$name@example.org" 2>&1)" \
				"^subject: \\[PATCH\\] store $who-$name$" \
				"$who: $name damage: and the message is stored"
			;;
		*)
			# it reads none of the damage: it may store the mail
			like "$rc" '^(0|75)$' "$who: $name damage: deliver exits 0 or 75"
			if [ "$rc" -ne 0 ]; then
				one_error "$d/$name.deliver.err" "$who: $name damage: deliver" deliver
			fi
			;;
		esac

		db=$(verified "$name")
		out=$(P --state "$d/$name.orig" store verify 2>"$d/$name.verify.err")
		rc=$?
		no_signal "$rc" "$who: $name damage: store verify"
		is "$rc" 65 "$who: $name damage: store verify exits 65"
		like "$out" "^$db( [^:]*)?: " "$who: $name damage: store verify names $db"
		diag "$who: $name damage: $(printf '%s\n' "$out" | head -1)"
		like "$(cat "$d/$name.verify.err")" "^patchgate: store: store .* is damaged: [0-9]+ problems? found$" \
			"$who: $name damage: and says the store is damaged, on stderr"
		out=$(P --state "$d/$name.orig" store verify --json 2>/dev/null)
		is "$(printf '%s' "$out" | jq_py /dev/stdin "[d['format_version'], d['clean'], d['problems'][0]['database']]")" \
			"[1, false, \"$db\"]" "$who: $name damage: store verify --json says so"
	done
	# verify reads the pages that crash it in a process of its own
	like "$(P --state "$d/pointers.orig" store verify 2>/dev/null)" \
		'^series: reading it crashed the verifier \(SIGBUS\)' \
		"$who: pointers damage: store verify says reading series crashed it (SIGBUS)"

	# ---- finding 6: records that do not decode --------------------------
	fresh records
	corrupt_record "$d/records/store" series "$SERIES_ID" ||
		bail "mdb_load failed"
	corrupt_record "$d/records/store" messages '\00\00\00\00\00\00\00\01' ||
		bail "mdb_load failed"
	if [ "$who" = unpriv ]; then unpriv_own "$d/records"; fi
	out=$(P --state "$d/records" store verify 2>/dev/null)
	is "$?" 65 "$who: records that do not decode: store verify exits 65"
	like "$out" "^series $SERIES_ID: does not decode: " "$who: it names the series record"
	like "$out" "^messages 1: does not decode: " "$who: and the message record"

	# ---- finding 7: closed and empty standard input --------------------
	P --state "$d/none" deliver <&- 2>"$d/closed.err"
	is "$?" 66 "$who: deliver <&- exits 66 (EX_NOINPUT)"
	is "$(ls -A "$d" | grep -c '^none$')" 0 "$who: and creates nothing (no state directory)"
	like "$(cat "$d/closed.err")" '^patchgate: deliver: no message on standard input' \
		"$who: and says there was no message"
	fresh std
	before=$(P --state "$d/std" store info --json | jq_py /dev/stdin 'd["messages"]')
	P --state "$d/std" deliver <&- 2>/dev/null
	is "$?" 66 "$who: deliver <&- into a store exits 66"
	P --state "$d/std" deliver </dev/null 2>/dev/null
	is "$?" 66 "$who: deliver </dev/null exits 66"
	printf '' | P --state "$d/std" deliver 2>/dev/null
	is "$?" 66 "$who: deliver from an empty pipe exits 66"
	: >"$d/empty.eml"
	P --state "$d/std" deliver <"$d/empty.eml" 2>/dev/null
	is "$?" 66 "$who: deliver from an empty file exits 66"
	is "$(P --state "$d/std" store info --json | jq_py /dev/stdin 'd["messages"]')" "$before" \
		"$who: and none of them stored anything"
	mail "$who-slow" | { sleep 0.3; cat; } | P --state "$d/std" deliver
	is "$?" 0 "$who: a message that comes late on the pipe is delivered (exit 0)"

	# ---- finding 7: closed stdout and stderr ---------------------------
	P --state "$d/std" msg list >&-
	is "$?" 0 "$who: msg list >&- exits 0"
	printf '[store]\nlock_timeout_ms = 200\n' >"$d/lock.conf"
	mail "$who-locked" >"$d/locked.eml"
	exec 9>>"$d/std/store/write.lock"
	flock -x 9
	P --config "$d/lock.conf" --state "$d/std" deliver <"$d/locked.eml" 2>&- 9>&-
	is "$?" 75 "$who: deliver 2>&- with the writer lock held exits 75"
	exec 9>&-
	P --state "$d/meta.orig" deliver <"$d/locked.eml" 2>&-
	is "$?" 75 "$who: deliver 2>&- into a damaged store exits 75"
	P --state "$d/meta.orig" msg list >&- 2>&-
	is "$?" 65 "$who: msg list >&- 2>&- of a damaged store exits 65"
	# (data.mdb holds Message-IDs: only the error lines are looked for)
	out=$( (grep -l -e 'patchgate: ' -e 'example\.' "$d/std/store/write.lock" \
		"$d/std/store/lock.mdb" "$d/meta.orig/store/write.lock" \
		"$d/meta.orig/store/lock.mdb"
		grep -l 'patchgate: ' "$d/std/store/data.mdb" "$d/meta.orig/store/data.mdb") 2>&1)
	is "$out" "" "$who: nothing printed landed in write.lock, lock.mdb or data.mdb"

	# ---- finding 7: a read-only state directory ------------------------
	fresh ro
	P --state "$d/ro" msg list >"$d/rw-msgs" 2>&1
	P --state "$d/ro" series list >"$d/rw-series" 2>&1
	if [ "$who" = unpriv ]; then
		chmod -R a-w "$d/ro"
		ro=$d/ro how="chmod -R a-w"
	elif [ "$(id -u)" -eq 0 ] && mkdir -p "$d/ro-mnt" &&
	     mount --bind "$d/ro" "$d/ro-mnt" 2>/dev/null; then
		mounted=$d/ro-mnt
		if mount -o remount,ro,bind "$d/ro-mnt" 2>/dev/null; then
			ro=$d/ro-mnt how="a read-only bind mount"
		else
			ro= how=
		fi
	else
		ro= how=
	fi
	if [ -n "$ro" ]; then
		out=$(P --state "$ro" msg list 2>&1)
		is "$?" 0 "$who: msg list on $how exits 0"
		is "$out" "$(cat "$d/rw-msgs")" "$who: and lists what it lists on a writable one"
		out=$(P --state "$ro" series list 2>&1)
		is "$?" 0 "$who: series list on $how exits 0"
		is "$out" "$(cat "$d/rw-series")" "$who: and lists the same series"
		out=$(P --state "$ro" status 2>&1)
		is "$?" 0 "$who: status on $how exits 0"
		out=$(P --state "$ro" store verify 2>&1)
		is "$?" 0 "$who: store verify on $how exits 0" || diag "$out"
		P --state "$ro" deliver <"$d/locked.eml" 2>/dev/null
		is "$?" 75 "$who: deliver into $how exits 75"
	else
		skip "$who: a read-only state directory" "cannot mount a read-only bind mount here"
	fi
	if [ -n "$mounted" ]; then
		umount "$mounted"
		mounted=
	fi
	chmod -R u+w "$d/ro"

	# the store of another user (root), readable, lock.mdb not writable
	if [ "$who" = unpriv ]; then
		rm -rf "$d/rootowned"
		cp -a "$T/template" "$d/rootowned"
		chmod 755 "$d/rootowned" "$d/rootowned/store"
		chmod 644 "$d/rootowned/store/data.mdb" "$d/rootowned/store/write.lock"
		chmod 600 "$d/rootowned/store/lock.mdb"
		out=$(P --state "$d/rootowned" msg list 2>&1)
		is "$?" 0 "$who: msg list of a store root owns (lock.mdb 0600) exits 0"
		is "$out" "$(pg --state "$T/template" msg list 2>&1)" "$who: and lists its messages"
		out=$(P --state "$d/rootowned" series list 2>&1)
		is "$?" 0 "$who: series list of it exits 0"
		out=$(P --state "$d/rootowned" status 2>&1)
		is "$?" 0 "$who: status of it exits 0"
		# without lock.mdb the reader is fenced from writers by write.lock
		exec 9>>"$d/rootowned/store/write.lock"
		flock -x 9
		P --config "$d/lock.conf" --state "$d/rootowned" msg list >/dev/null 2>"$d/fenced.err" 9>&-
		is "$?" 75 "$who: while a writer holds write.lock, such a reader waits, then exits 75"
		like "$(cat "$d/fenced.err")" '^patchgate: msg: store .* is locked by a writer' \
			"$who: saying a writer holds the store"
		pg --config "$d/lock.conf" --state "$d/rootowned" msg list >/dev/null 9>&-
		is "$?" 0 "$who: a reader with lock.mdb (root) does not wait"
		exec 9>&-
	fi
}

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
