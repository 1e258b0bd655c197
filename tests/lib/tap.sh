# tap.sh - a tiny TAP producer for the shell tests (after mblaze's t/lib.sh).
#
#   . "$SRCDIR/tests/lib/tap.sh"
#   plan 4                      # or no plan: done_testing prints it at the end
#   ok "store opens" patchgate store info
#   is "$(patchgate msg list | wc -l)" 12 "twelve messages"
#   like "$err" '^patchgate: deliver: ' "one error line"
#   skip "disk full" "mount failed: not root"
#   done_testing
#
#   ok DESC CMD [ARG...]    passes when CMD exits 0; its output is shown
#                           (as diagnostics) only when it fails
#   is GOT EXPECTED DESC    string equality; a diff when they differ
#   like GOT ERE DESC       GOT matches the extended regular expression
#   unlike GOT ERE DESC     GOT does not match it
#   pass DESC / fail DESC [DIAG...]
#   skip DESC REASON        "ok N - DESC # SKIP REASON"
#   skip_all REASON         the whole script: "1..0 # SKIP REASON", exit 0
#   bail REASON             "Bail out! REASON", exit 255
#   diag [TEXT...]          "# " before every line of TEXT (or of stdin)
#   tap_tmpdir              sets TAP_TMP to a new directory, removed on exit
#   TAP_CLEANUP=CMD         run (eval'd) on exit before TAP_TMP is removed,
#                           e.g. to unmount something mounted inside it
#   scaled N SMALL          N, or SMALL in a sanitized build
#                           (PGATE_TEST_SANITIZED=1), where a process
#                           costs several times as much: the volume tests
#                           check concurrency and durability at full size
#                           in the plain build, and memory errors on the
#                           same paths at a smaller size in both
#   done_testing            prints a missing plan; the exit status is 0 only
#                           when every test passed and the plan was met
#
# A script that exits without done_testing fails.  Output goes to stdout,
# where meson's TAP parser reads it.

_tap_n=0
_tap_failed=0
_tap_plan=
_tap_done=
TAP_TMP=
TAP_CLEANUP=

plan() {
	_tap_plan=$1
	printf '1..%d\n' "$1"
}

diag() {
	if [ $# -eq 0 ]; then
		sed 's/^/# /'
	else
		printf '%s\n' "$@" | sed 's/^/# /'
	fi
}

pass() {
	_tap_n=$((_tap_n + 1))
	printf 'ok %d - %s\n' "$_tap_n" "$1"
}

fail() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	printf 'not ok %d - %s\n' "$_tap_n" "$1"
	shift
	[ $# -eq 0 ] || diag "$@"
	return 0
}

ok() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		pass "$desc"
	else
		fail "$desc" "command failed (exit $rc): $*"
		[ -z "$out" ] || printf '%s\n' "$out" | tail -n 20 | diag
	fi
	return $rc
}

is() {
	if [ "$1" = "$2" ]; then
		pass "$3"
		return 0
	fi
	fail "$3"
	case $1$2 in
	*'
'*)
		diag "got (-) and expected (+) differ:"
		diff -u <(printf '%s\n' "$1") <(printf '%s\n' "$2") | tail -n +3 | head -n 40 | diag
		;;
	*)
		diag "     got: '$1'" "expected: '$2'"
		;;
	esac
	return 1
}

like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		pass "$3"
		return 0
	fi
	fail "$3" "     got: '$1'" "expected to match: $2"
	return 1
}

unlike() {
	if ! printf '%s\n' "$1" | grep -Eq -- "$2"; then
		pass "$3"
		return 0
	fi
	fail "$3" "     got: '$1'" "expected not to match: $2"
	return 1
}

scaled() {
	if [ "${PGATE_TEST_SANITIZED:-0}" = 1 ]; then
		echo "$2"
	else
		echo "$1"
	fi
}

skip() {
	_tap_n=$((_tap_n + 1))
	printf 'ok %d - %s # SKIP %s\n' "$_tap_n" "$1" "$2"
}

skip_all() {
	printf '1..0 # SKIP %s\n' "$1"
	_tap_done=skip
	exit 0
}

bail() {
	printf 'Bail out! %s\n' "$1"
	_tap_done=bail
	exit 255
}

tap_tmpdir() {
	TAP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/${0##*/}.XXXXXX") || bail "mktemp -d failed"
}

done_testing() {
	_tap_done=yes
	[ -n "$_tap_plan" ] || printf '1..%d\n' "$_tap_n"
	if [ -n "$_tap_plan" ] && [ "$_tap_plan" -ne "$_tap_n" ]; then
		diag "planned $_tap_plan tests but ran $_tap_n"
		exit 1
	fi
	if [ $_tap_failed -gt 0 ]; then
		diag "failed $_tap_failed of $_tap_n tests"
		exit 1
	fi
	exit 0
}

_tap_exit() {
	local rc=$?
	[ -z "$TAP_CLEANUP" ] || eval "$TAP_CLEANUP"
	[ -z "$TAP_TMP" ] || rm -rf "$TAP_TMP"
	if [ -z "$_tap_done" ]; then
		diag "the script exited (status $rc) before done_testing, after $_tap_n tests"
		exit 255
	fi
	exit $rc
}
trap _tap_exit EXIT
