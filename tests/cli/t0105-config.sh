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
#
# A group or key nothing reads is an error too, whatever the command, with
# the closest valid name suggested (common/config-keys.c); before, a typo
# was silently a default.  `config check` reports every problem of a file,
# the modules' own readers' included, and touches nothing.

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

# a group or key nothing reads is an error for every command, naming the
# closest valid one (common/config-keys.c); it used to be ignored
check_bad $'[ci.locl]\ntimeout = 5' "\\[ci\\.locl\\]: no such group \\(did you mean \\[ci\\.local\\]\\?\\)" status
check_bad "$APPLY"$'\nbrances = next' "\\[apply\\] brances: no such key \\(did you mean branches\\?\\)" status
check_bad $'[store]\nMap_Size = 1' "\\[store\\] Map_Size: no such key \\(did you mean map_size\\?\\)" store info
check_bad $'[trust]\ncolour = red' "\\[trust\\] colour: no such key$" series list
check_bad $'[patchwork]\ntoken = hunter2' "\\[patchwork\\] token: a secret is never written in the configuration" status
unlike "$err" hunter2 "the refused secret is not quoted"
# deliver keeps the mail: 75, the MTA retries once the file is fixed
with_conf $'[daemon]\nintervall = 5' deliver </dev/null
is "$rc" 75 "deliver with an unknown key: exit 75"
like "$err" "\\[daemon\\] intervall: no such key \\(did you mean interval\\?\\)" "deliver: named"

# config check: the names, then every module's own reader; runs nothing
# (and since issue #41, what the values name: the repository is there,
# with its branch; t0107 checks that part)
mkdir -p "$T/work"
git init -q -b master "$T/repo" &&
	git -C "$T/repo" -c user.name=t -c user.email=t@t.invalid \
		commit -q --allow-empty -m base || bail "git init failed"
GOOD=$'[store]\nmap_size = 1048576\n[daemon]\ninterval = 5\n[trust]\neveryone = yes\n'"$APPLY"$'\n[ci.local]\nstep.build = make\nwork_root = '"$T/work"$'\n[email]\nenabled = false'
CS=$T/check-state
check() {	# check CONF [ARGS]: config check of CONF; sets rc, out, err
	printf '%s\n' "$1" >"$T/conf"
	shift
	"$PATCHGATE" --state "$CS" config check --config "$T/conf" "$@" \
		>"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}
check "$GOOD"
is "$rc" 0 "config check: a valid file exits 0"
is "$out" ok "config check: prints ok"
check "$GOOD" --json
is "$rc" 0 "config check --json: exit 0"
is "$(jq_py "$T/out" '[d["format_version"], d["ok"], d["errors"]]')" '[1, true, []]' \
	"config check --json: {ok: true, errors: []}"
check $'[ci.locl]\ntimeout = 5\n[apply]\nrepo = /r\nbrances = a\nmax_files = 10k\n[store]\nlock_timeout_ms = soon\n[daemon]\ninterval = 0\n[ci.local]\nstep.build = make\ntimeout = forever'
is "$rc" 78 "config check: problems exit 78"
is "$out" "" "config check: nothing on stdout"
is "$(printf '%s\n' "$err" | wc -l)" 6 "config check: one line per problem"
like "$err" "^patchgate: config: \\[ci\\.locl\\]: no such group \\(did you mean \\[ci\\.local\\]\\?\\)" "config check: the unknown group"
like "$err" "patchgate: config: \\[apply\\] brances: no such key \\(did you mean branches\\?\\)" "config check: the unknown key"
like "$err" "patchgate: config: \\[store\\] lock_timeout_ms: 'soon' is not a whole number" "config check: [store]"
like "$err" "patchgate: config: \\[daemon\\] interval: 0 is out of range \\(1 to 86400\\)" "config check: [daemon]"
like "$err" "patchgate: config: \\[apply\\] max_files: '10k' is not a whole number" "config check: [apply] (the pipeline's reader)"
like "$err" "patchgate: config: \\[ci\\.local\\] timeout: 'forever' is not a whole number" "config check: [ci.local] (the backend's reader)"
check $'[apply]\nbrances = a\n[ci]\nbackend = travis' --json
is "$rc" 78 "config check --json: problems exit 78"
is "$(jq_py "$T/out" '[d["ok"], d["errors"]]')" \
	"[false, [\"[apply] brances: no such key (did you mean branches?)\", \"[apply] repo: the repository to apply to is not set\", \"[ci] backend: 'travis' is none of local, jenkins and buildbot\"]]" \
	"config check --json: {ok: false, errors: [...]}"
is "$err" "" "config check --json: nothing on stderr"
check $'[patchwork]\nurl = https://pw.example.org/\nproject = p\ntoken_file = '"$T/nonexistent"$'\n[email]\nenabled = true\nfrom_address = ci@example.org\nto = everyone\nsendmail = /nonexistent/sendmail'
is "$rc" 78 "config check: [patchwork] and [email] are read"
like "$err" "\\[patchwork\\] token_file: cannot open" "config check: the Patchwork token file"
like "$err" "\\[email\\] sendmail: /nonexistent/sendmail is not an executable" "config check: the email transport"
ok "config check made no state directory" test ! -e "$CS"
"$PATCHGATE" --state "$CS" config check --config "$T/missing.conf" >/dev/null 2>"$T/err"
is "$?" 78 "config check: a missing file exits 78"
like "$(cat "$T/err")" "patchgate: config: config .*missing\\.conf: " "config check: the missing file named"
printf '[store\n' >"$T/conf"
"$PATCHGATE" config check --config "$T/conf" --json >"$T/out" 2>/dev/null
is "$?" 78 "config check: a file that does not parse exits 78"
is "$(jq_py "$T/out" 'd["ok"]')" false "config check --json: the parse error too"
"$PATCHGATE" --state "$CS" config check >/dev/null 2>&1
is "$?" 64 "config check without a file: usage error"
# the global --config is the default, and is not refused before check runs
printf '[apply]\nbrances = a\n' >"$T/conf"
"$PATCHGATE" --state "$CS" --config "$T/conf" config check --json >"$T/out" 2>/dev/null
is "$?" 78 "config check of the global --config: exit 78"
is "$(jq_py "$T/out" 'd["ok"]')" false "config check of the global --config: reported as JSON"
ok "config --help" "$PATCHGATE" config --help
ok "config check --help" "$PATCHGATE" config check --help

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
printf '[daemon]\nmaildirs = %s\nintervall = 1\n' "$T/md" >"$T/conf"
kill -HUP "$pid"
for i in $(seq 100); do grep -q "intervall" "$T/daemon.log" && break; sleep 0.1; done
like "$(cat "$T/daemon.log")" "reload failed, keeping the old configuration: \\[daemon\\] intervall: no such key \\(did you mean interval\\?\\)" "SIGHUP with an unknown key: the old configuration stays"
ok "the daemon still runs" kill -0 "$pid"
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "it stops cleanly (exit 0)"

done_testing
