#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# nipa-checkpatch.sh - checkpatch-style checks of the commit under test,
# written as a NIPA test script (netdev/nipa, tests/patch/*/: core/test.py
# runs the script in the tree, hands it $DESC_FD, and reads the exit
# status: 0 success, 250 warning, anything else failure).  patchgate's
# local CI runs it unchanged with `nipa = on` (docs/ci-local.md, "NIPA
# test scripts"); exit 111 says "nothing to check here" (skipped).
#
#   [ci.local]
#   nipa = on
#   ro_binds = /srv/patchgate/contrib:/opt/nipa    (a copy of contrib/)
#   commands = checkpatch: /opt/nipa/nipa-checkpatch.sh
#
# When the tree has the kernel's scripts/checkpatch.pl, that is what runs
# (as NIPA's checkpatch test runs it: on the commit, --strict), and its
# "total: N errors, M warnings, K checks" line is the description.
# Otherwise a few checks of the same kind, in POSIX sh and awk:
#   error:   no Signed-off-by: in the commit message
#   warning: a line added with trailing whitespace
#   warning: a line added longer than 100 columns
# Only POSIX sh, git, awk and grep are needed; nothing is fetched.

desc() {
	# NIPA's description: one line on $DESC_FD; without one (run by hand)
	# on standard output
	if [ -n "$DESC_FD" ]; then
		echo "$*" >&"$DESC_FD"
	else
		echo "desc: $*"
	fi
}

if ! git rev-parse -q --verify HEAD~1 >/dev/null 2>&1; then
	desc "no parent commit: nothing to check"
	exit 111
fi

if [ -x scripts/checkpatch.pl ]; then
	out=$(mktemp)
	git format-patch --stdout -1 HEAD |
		./scripts/checkpatch.pl --strict --no-tree - >"$out" 2>&1
	cat "$out"
	total=$(grep -m1 '^total:' "$out")
	rm -f "$out"
	[ -n "$total" ] || { desc "checkpatch.pl said nothing"; exit 1; }
	desc "$total"
	case "$total" in
	"total: 0 errors, 0 warnings, 0 checks"*) exit 0 ;;
	"total: 0 errors,"*) exit 250 ;;
	*) exit 1 ;;
	esac
fi

errors=0
warnings=0

if ! git log -1 --format=%B HEAD | grep -q '^Signed-off-by: '; then
	echo "ERROR: Missing Signed-off-by: line(s)"
	errors=$((errors + 1))
fi

# the added lines, each as FILE:LINE:TEXT
added=$(git diff --no-color --unified=0 HEAD~1 HEAD | awk '
	/^\+\+\+ b\// { file = substr($0, 7); next }
	/^@@/ {
		split($3, a, ",")
		line = substr(a[1], 2) + 0
		next
	}
	/^\+/ { print file ":" line ":" substr($0, 2); line++ }')

ws=$(printf '%s\n' "$added" | grep -c '[[:space:]]$')
long=$(printf '%s\n' "$added" | awk -F: '{
	t = $0; sub(/^[^:]*:[^:]*:/, "", t)
	if (length(t) > 100) n++ } END { print n + 0 }')
if [ "$ws" -gt 0 ]; then
	printf '%s\n' "$added" | grep '[[:space:]]$' |
		sed 's/^\([^:]*:[0-9]*\):.*/WARNING: trailing whitespace at \1/'
	warnings=$((warnings + ws))
fi
if [ "$long" -gt 0 ]; then
	echo "WARNING: $long added line(s) longer than 100 columns"
	warnings=$((warnings + long))
fi

desc "total: $errors errors, $warnings warnings"
[ "$errors" -eq 0 ] || exit 1
[ "$warnings" -eq 0 ] || exit 250
exit 0
