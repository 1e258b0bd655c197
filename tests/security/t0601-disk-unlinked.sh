#!/bin/bash
# t0601-disk-unlinked - issue #41, finding 12: a patch's CI step writes
# 70 MiB into files it unlinks while keeping them open, under
# `[ci.local] disk = 16M`, with `patchgate run` on a real configuration,
# once as root (the steps run as nobody) and once as an unprivileged user
# (the steps run as that user, as with the shipped systemd unit's
# User=patchgate).
#
# Before, the disk limit was a walk of the work area's directories, which
# a file without a name escapes: the step succeeded.  Now the files the
# step's processes hold are counted too (ci/local/diskuse.c), and the
# step ends with the disk limit.  The control: the same series with
# `disk = 1G` succeeds, having held the same files the same way, so the
# attack is real and the limit is what stops it.
#
# As root, a step that puts 160 MiB in memfd files instead, under
# `memory = 96M`: memory, not disk (docs/ci-local.md), which the step's
# memory cgroup stops.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"

# Outside /tmp, as a deployment's /var/lib/patchgate is.
B=$(mktemp -d /var/tmp/pgate-t0601.XXXXXX) || bail "mktemp in /var/tmp"
chmod 755 "$B"
TAP_CLEANUP='rm -rf "$B"'

# The attacker's series: tests/run.sh holds 70 MiB in files without a
# name, through four descriptors of two processes, for a few seconds
# (the watchdog measures once a second), and says so before and after.
make_project() {
	local dir=$1
	export GIT_AUTHOR_NAME="Eve Attacker" GIT_AUTHOR_EMAIL=eve@example.net
	export GIT_COMMITTER_NAME="Eve Attacker" GIT_COMMITTER_EMAIL=eve@example.net
	git init -q -b master "$dir/src"
	mkdir -p "$dir/src/tests"
	printf '#!/bin/sh\necho tests pass\n' >"$dir/src/tests/run.sh"
	git -C "$dir/src" add . && git -C "$dir/src" commit -q -m "init"
	git clone -q --bare "$dir/src" "$dir/repo.git"
	cat >"$dir/src/tests/run.sh" <<'EOF'
#!/bin/sh
exec 3>a 4>b 5>/tmp/c
rm a b /tmp/c
dd if=/dev/zero bs=1M count=20 >&3 2>/dev/null
dd if=/dev/zero bs=1M count=20 >&4 2>/dev/null
dd if=/dev/zero bs=1M count=20 >&5 2>/dev/null
(exec 6>/tmp/d; rm /tmp/d; dd if=/dev/zero bs=1M count=10 >&6 2>/dev/null; sleep 4) &
sleep 0.5
echo "holding 70 MiB"
ls -a . /tmp
sleep 4
wait
echo "held 70 MiB to the end"
EOF
	git -C "$dir/src" commit -q -am "tests: a bigger scratch area" \
		-m "Signed-off-by: Eve <eve@example.net>"
	git -C "$dir/src" format-patch -q -1 --stdout \
		--add-header="Message-ID: <unlinked-1@example.net>" >"$dir/unlinked.mbox"
	# the same in memfd files, on the same base
	git -C "$dir/src" checkout -q -b memfd master~1
	cat >"$dir/src/tests/run.sh" <<'EOF'
#!/bin/sh
exec /usr/bin/python3 - <<'PY'
import os, time
fds = [os.memfd_create("scratch%d" % i) for i in range(8)]
for fd in fds:
    for _ in range(20):
        os.write(fd, b"\1" * (1 << 20))
print("holding 160 MiB in memfd", flush=True)
time.sleep(4)
print("held 160 MiB to the end")
PY
EOF
	git -C "$dir/src" commit -q -am "tests: scratch in memory" \
		-m "Signed-off-by: Eve <eve@example.net>"
	git -C "$dir/src" format-patch -q -1 --stdout \
		--add-header="Message-ID: <memfd-1@example.net>" >"$dir/memfd.mbox"
}

# one deployment in $B/$1 with [ci.local] $2 (newline-separated keys)
setup() {
	local d=$B/$1
	rm -rf "$d"
	mkdir -p "$d/etc" "$d/work"
	chmod 755 "$d" "$d/work"
	make_project "$d" >/dev/null 2>&1 || bail "making the project failed"
	cat >"$d/etc/patchgate.conf" <<EOF
[apply]
repo = $d/repo.git
branches = master
committer_name = CI
committer_email = ci@example.org
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = sh tests/run.sh
timeout = 60
work_root = $d/work
$2
EOF
	chmod 644 "$d/etc/patchgate.conf"
}

# runs the pipeline on the mboxes $3... in $B/$1 as $2 (root or unpriv)
# until nothing is being tested; `series show --json` of every series
# into $B/$1/show.json
run_pipeline() {
	local d=$B/$1 who=$2 i id mboxes=()
	local cmd=("$PATCHGATE" --state "$d/state" --config "$d/etc/patchgate.conf")
	shift 2
	for i in "$@"; do mboxes+=("$d/$i.mbox"); done
	if [ "$who" = unpriv ]; then
		unpriv_own "$d"
		cmd=(as_unpriv "${cmd[@]}")
	fi
	"${cmd[@]}" ingest "${mboxes[@]}" >/dev/null || return 1
	for i in $(seq 60); do
		"${cmd[@]}" run -q >/dev/null 2>&1
		"${cmd[@]}" status --json >"$d/status.json" || return 1
		[ "$(jq_py "$d/status.json" 'str(d["states"].get("testing", 0))')" = 0 ] &&
			[ "$(jq_py "$d/status.json" 'str(sum(d["states"].values()))')" != 0 ] && break
		sleep 1
	done
	"${cmd[@]}" series list --all --json >"$d/series.json" || return 1
	for id in $(jq_py "$d/series.json" '" ".join(s["id"] for s in d["series"])'); do
		"${cmd[@]}" series show --json "$id"
	done >"$d/show.json"
}

# the job log of the deployment in $1 (one job)
job_log() {
	find "$B/$1/state" -path '*/ci/local/*' -name log -exec cat {} + 2>/dev/null
}

attack() {
	local who=$1 name=$1-16m d=$B/$1-16m log
	setup "$name" "disk = 16M"
	run_pipeline "$name" "$who" unlinked ||
		{ fail "$name: the pipeline ran" "$(cat "$d/status.json" 2>/dev/null)"; return; }
	log=$(job_log "$name")
	like "$(cat "$d/show.json")" 'disk limit 16 MiB reached' \
		"$who: 70 MiB in unlinked open files under disk = 16M: the disk limit"
	like "$log" '== disk: limit 16 MiB: .* in [0-9]+ file\(s\) deleted but still open or mapped' \
		"$who: the log says what was counted"
	unlike "$log" 'held 70 MiB to the end' "$who: the step was stopped while it held them"
}

control() {
	local who=$1 name=$1-1g d=$B/$1-1g log
	setup "$name" "disk = 1G"
	run_pipeline "$name" "$who" unlinked || { fail "$name: the pipeline ran"; return; }
	log=$(job_log "$name")
	like "$log" 'held 70 MiB to the end' \
		"$who (control, disk = 1G): the step held its 70 MiB to the end"
	unlike "$(cat "$d/show.json")" 'disk limit' \
		"$who (control, disk = 1G): no disk limit"
	like "$log" '== step sh: passed \(exit 0\)' "$who (control, disk = 1G): the step passed"
}

memfd() {
	local name=root-memfd d=$B/root-memfd log
	setup "$name" "disk = 16M
memory = 96M"
	run_pipeline "$name" root memfd || { fail "$name: the pipeline ran"; return; }
	log=$(job_log "$name")
	like "$(cat "$d/show.json")" 'memory limit reached' \
		"root: 160 MiB in memfd files under memory = 96M: the memory cgroup stops them"
	unlike "$(cat "$d/show.json")" 'disk limit' "root: memfd files are not disk"
	unlike "$log" 'held 160 MiB to the end' "root: the memfd step was stopped"
}

if [ "$(id -u)" -eq 0 ]; then
	attack root
	control root
	memfd
else
	skip "as root" "not running as root"
fi
if unpriv_init; then
	attack unpriv
	control unpriv
else
	skip "as an unprivileged user" "needs root to make the user"
fi
done_testing
