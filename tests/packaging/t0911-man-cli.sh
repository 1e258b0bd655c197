#!/bin/bash
# t0911-man-cli - the man pages render without a warning (groff -ww -z),
# and patchgate(1) names every command, subcommand and option that
# patchgate's --help does (completion/cli-surface.py, built beside), and
# no option that it does not (tests/packaging/man-check.py).  Then the
# check on a page with an option taken out and one made up, to show that
# it can fail.

. "${SRCDIR:?}/tests/lib/tap.sh"

PY=/usr/bin/python3
CHECK=$SRCDIR/tests/packaging/man-check.py
[ -n "${PGATE_MAN_patchgate_1:-}" ] ||
	skip_all "no man pages in this build (-Dman=disabled, or no scdoc)"
[ -n "${PGATE_CLI_SURFACE:-}" ] || skip_all "no cli-surface.json (-Dbash_completion=false)"
command -v groff >/dev/null || skip_all "no groff"
tap_tmpdir
T=$TAP_TMP

for page in "$PGATE_MAN_patchgate_1" "$PGATE_MAN_patchgate_conf_5" \
	"$PGATE_MAN_patchgate_deliver_8"; do
	name=${page##*/}
	groff -ww -z -man "$page" >"$T/warn" 2>&1
	is "$?:$(cat "$T/warn")" "0:" "$name: groff -ww -z says nothing"
	# as man renders it, with a UTF-8 terminal
	out=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null)
	is "$out" "" "$name: man -l says nothing on stderr"
done

"$PY" "$CHECK" cli "$PGATE_MAN_patchgate_1" "$PGATE_CLI_SURFACE" >"$T/out"
is "$?" 0 "man-check cli: patchgate(1) and --help agree"
diag <"$T/out"

# the check can fail: an option taken out, one made up, a command renamed
sed -e '/^\.SS series list$/,/^\.SS/{/--project/d}' \
	-e 's/^\\fB--no-wait\\fR/\\fB--never-wait\\fR/' \
	"$PGATE_MAN_patchgate_1" >"$T/broken.1"
"$PY" "$CHECK" cli "$T/broken.1" "$PGATE_CLI_SURFACE" >"$T/out"
is "$?" 1 "a broken page: man-check exits 1"
like "$(cat "$T/out")" "option: series list --project: --help lists it" \
	"an option missing from the page"
like "$(cat "$T/out")" "stale: test --never-wait: in the man page, not in --help" \
	"an option --help does not have"
like "$(cat "$T/out")" "option: test --no-wait" "the renamed one is missing"
done_testing
