#!/bin/bash
# t0912-man-conf - patchgate.conf(5) has every group and key of the key
# table (`patchgate config keys --json`, common/config-keys.c) with the
# table's default, and no other key (tests/packaging/man-check.py).  The
# page is generated from the table at build time (docs/man/gen-conf-man.py),
# so this holds the generator, and a page left over from an older build.
# Then the check on a page with a key taken out, a default changed and a
# key made up, to show that it can fail.

. "${SRCDIR:?}/tests/lib/tap.sh"

PY=/usr/bin/python3
CHECK=$SRCDIR/tests/packaging/man-check.py
PAGE=${PGATE_MAN_patchgate_conf_5:-}
[ -n "$PAGE" ] || skip_all "no man pages in this build (-Dman=disabled, or no scdoc)"
command -v groff >/dev/null || skip_all "no groff"
tap_tmpdir
T=$TAP_TMP

"${PATCHGATE_FULL:?}" config keys --json >"$T/keys.json"
ok "config keys --json" test -s "$T/keys.json"
n=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["keys"]))' "$T/keys.json")
"$PY" "$CHECK" conf "$PAGE" "$T/keys.json" >"$T/out"
is "$?" 0 "man-check conf: the page has the $n keys of the table"
diag <"$T/out"
like "$(MANWIDTH=100 man -l "$PAGE" 2>/dev/null)" \
	"lock_timeout_ms \\(int; default: 30000\\)" "a key as man shows it"

# the check can fail
awk '
	/^\\fBinterval\\fR \(int; default: 60\)/ { sub(/60/, "30") }
	/^\\fBkeep_days\\fR/ { next }
	{ print }
	/^\.SS \[ci\.jenkins\]$/ { print ".P"; print "\\fBbogus_key\\fR (int; default: 1)" }
' "$PAGE" >"$T/broken.5"
"$PY" "$CHECK" conf "$T/broken.5" "$T/keys.json" >"$T/out"
is "$?" 1 "a broken page: man-check exits 1"
like "$(cat "$T/out")" "default: \\[daemon\\] interval: the page says 'int; default: 30', the table '60'" \
	"a wrong default"
like "$(cat "$T/out")" "key: \\[apply\\] keep_days: not in the page" "a missing key"
like "$(cat "$T/out")" "unknown: \\[ci.jenkins\\] bogus_key: in the page, not in the table" \
	"a key the table lacks"

# the documents it names are where an installed system has them
# (debian/patchgate.docs), not paths of the source tree
is "$(sed 's/\\&//g' "$PAGE" | grep -c 'docs/[a-z0-9-]*\.md')" 0 "no docs/NAME.md path of the source tree"
like "$(sed 's/\\&//g' "$PAGE")" '/usr/share/doc/patchgate/config\.md' "the installed documents' paths instead"
done_testing
