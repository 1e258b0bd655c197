#!/bin/bash
# t0106-config-docs - the documentation and the examples say what the code
# reads.
#
# common/config-keys.c is the one table of every key (`patchgate config
# keys --json`).  config-docs.py holds to it the key tables of docs/*.md
# (every key in the file the table names, with the table's default; no row
# for a key the table lacks) and contrib/*.conf.example (no group or key
# the table lacks; patchgate.conf.example has every key, with its
# default), and the modules' readers: every key a getter's call names is
# in the table, and every key of the table is named by one.  Then the same
# check on a copy of the tree with a doc row, an example line and a
# reader broken, to show that it can fail; and the complete example passes
# `config check`.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
CHECK=$SRCDIR/tests/cli/config-docs.py

pg config keys --json >"$T/keys.json"
ok "config keys --json" test -s "$T/keys.json"
is "$(jq_py "$T/keys.json" 'd["format_version"]')" 1 "format_version 1"
like "$(pg config keys)" "^\\[store\\] map_size \\(int\\): 268435456 \\(256 MiB\\)" \
	"config keys: one line per key"

"$PY" "$CHECK" "$SRCDIR" "$T/keys.json" >"$T/out"
rc=$?
for check in doc-row doc-known doc-default example-row example-known \
	code-key code-unread; do
	is "$(grep "^$check:" "$T/out")" "" "$check: none"
done
is "$rc" 0 "config-docs.py finds nothing"

# the check can fail: a copy of the docs and examples, broken
mkdir -p "$T/src"
cp -r "$SRCDIR/docs" "$SRCDIR/contrib" "$SRCDIR/cli" "$SRCDIR/pipeline" \
	"$SRCDIR/ci" "$SRCDIR/report" "$SRCDIR/upstream" "$T/src/"
sed -i 's/^| `interval` | 60 |/| `interval` | 30 |/' "$T/src/docs/config.md"
sed -i 's/^| `keep_days` |.*$//' "$T/src/docs/pipeline.md"
printf '| key | default | meaning |\n|---|---|---|\n| `bogus_key` | 1 | x |\n' \
	>>"$T/src/docs/ci-jenkins.md"
sed -i 's/^#jobs = 1$/#jobs = 2/' "$T/src/contrib/patchgate.conf.example"
sed -i 's/^#lookup_give_up = .*$//' "$T/src/contrib/patchgate.conf.example"
printf '#typo_key = 1\n' >>"$T/src/contrib/report-email.conf.example"
# (a key of ci/jenkins alone: "retries" is ci/buildbot's too)
sed -i 's/get_uint(kf, group, "max_connections"/get_uint(kf, group, "max_conns"/' \
	"$T/src/ci/jenkins/config.c"
"$PY" "$CHECK" "$T/src" "$T/keys.json" >"$T/out"
is "$?" 1 "a broken copy: config-docs.py exits 1"
like "$(cat "$T/out")" "doc-default: docs/config.md: \\[daemon\\] interval: the doc says '30', the table '60'" \
	"a wrong default in a doc"
like "$(cat "$T/out")" "doc-row: docs/pipeline.md: no \\| .keep_days. \\| row" \
	"a key missing from its doc"
like "$(cat "$T/out")" "doc-known: docs/ci-jenkins.md: .bogus_key. is documented" \
	"a doc row for no key"
like "$(cat "$T/out")" "example-row: contrib/patchgate.conf.example: \\[ci.local\\] jobs shows '2', the default is '1'" \
	"a wrong default in the example"
like "$(cat "$T/out")" "example-row: contrib/patchgate.conf.example: \\[patchwork\\] lookup_give_up is missing" \
	"a key missing from the example"
like "$(cat "$T/out")" "example-known: contrib/report-email.conf.example: \\[email\\] typo_key is no key" \
	"a key of no module in an example"
like "$(cat "$T/out")" "code-key: ci/jenkins/config.c: reads \"max_conns\", which is no key" \
	"a key the code reads and the table lacks"
like "$(cat "$T/out")" "code-unread: \\[ci.jenkins\\] max_connections: no reader names it" \
	"a key of the table no code reads"

# the complete example is a valid configuration, as it is
is "$(pg --state "$T/s" config check --config "$SRCDIR/contrib/patchgate.conf.example")" ok \
	"config check: contrib/patchgate.conf.example is valid"
ok "config check touched no state directory" test ! -e "$T/s"

done_testing
