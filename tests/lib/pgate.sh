# pgate.sh - what patchgate's integration tests share.  Source after tap.sh:
#
#   . "$SRCDIR/tests/lib/tap.sh"
#   . "$SRCDIR/tests/lib/pgate.sh"
#
# Needs PATCHGATE (the binary) and SRCDIR (the source tree) in the
# environment, as tests/integration/meson.build sets them.  Makes TAP_TMP,
# a fresh directory removed on exit, and points HOME and TMPDIR there.
#
#   pg ARG...                   runs $PATCHGATE (no implicit --state)
#   gen_list N SEED DIR         generates a list archive with
#                               fixtures/gen-list.py: DIR/list.mbox (mboxrd),
#                               DIR/list.json (manifest), DIR/md (maildir),
#                               DIR/repo.git
#   jq_py FILE EXPR             prints EXPR evaluated by Python with d = the
#                               JSON in FILE (strings bare, the rest as JSON)
#   manifest_msgids MANIFEST    the Message-IDs the store must hold: one per
#                               stored message (duplicates once, a reused
#                               ID twice), sorted
#   store_msgids STATE          the same, from `patchgate msg list --json`

: "${PATCHGATE:?PATCHGATE must name the patchgate binary}"
: "${SRCDIR:?SRCDIR must name the source tree}"
[ -x "$PATCHGATE" ] || bail "PATCHGATE=$PATCHGATE is not executable"

PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
command -v git >/dev/null || skip_all "needs git"

tap_tmpdir
export HOME=$TAP_TMP TMPDIR=$TAP_TMP LC_ALL=C TZ=UTC
unset PATCHGATE_STATE PATCHGATE_CONFIG PATCHGATE_STORE_MAP_SIZE

pg() {
	"$PATCHGATE" "$@"
}

gen_list() {
	mkdir -p "$3" &&
	"$PY" "$SRCDIR/fixtures/gen-list.py" --quiet --messages "$1" --seed "$2" \
		--out "$3/list.mbox" --manifest "$3/list.json" --maildir "$3/md" \
		--repo "$3/repo.git"
}

jq_py() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$1" "$2"
}

manifest_msgids() {
	"$PY" -c '
import json, sys
for e in json.load(open(sys.argv[1]))["messages"]:
    if e.get("duplicate_of") is None:
        print(e["msgid"])
' "$1" | sort
}

store_msgids() {
	"$PATCHGATE" --state "$1" msg list --json |
	"$PY" -c '
import json, sys
for m in json.load(sys.stdin)["messages"]:
    print(m["msgid"])
' | sort
}
