#!/bin/bash
# t0090-gen-list - the list generator itself (fixtures/gen-list.py).
#
# Its manifest is the oracle of the other tests, so check it: every
# message parses with Python's email package and agrees with the manifest;
# the maildir holds the mbox's messages; patch-ids of the decoded mails are
# git's; `git am` applies every special series and a sample of the others
# onto their base and gives the tip's tree; a sample of series is
# byte-for-byte `git format-patch` output; the average size is realistic;
# the same seed gives the same bytes.  No patchgate involved.

. "${SRCDIR:?}/tests/lib/tap.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
command -v git >/dev/null || skip_all "needs git"
tap_tmpdir
export HOME=$TAP_TMP TMPDIR=$TAP_TMP LC_ALL=C TZ=UTC

T=$TAP_TMP
gen() {		# gen DIR SEED N
	"$PY" "$SRCDIR/fixtures/gen-list.py" --quiet --messages "$3" --seed "$2" \
		--out "$1/list.mbox" --manifest "$1/list.json" --maildir "$1/md" --repo "$1/repo.git"
}
check() {	# check WHAT [ARGS]: one test per check-list.py check
	local what=$1
	shift
	ok "check-list.py $what$([ $# -eq 0 ] || printf ' %s' "$@")" \
		"$PY" "$SRCDIR/fixtures/check-list.py" "$what" --mbox "$T/a/list.mbox" \
		--manifest "$T/a/list.json" --maildir "$T/a/md" "$@"
}

mkdir -p "$T/a" "$T/b"
ok "gen-list.py --messages 400 --seed 90" gen "$T/a" 90 400 || bail "gen-list.py failed"
check parse
check maildir
check patch-id
check am --sample 25
check format-patch --sample 40
check sizes

ok "the same seed again, elsewhere" gen "$T/b" 90 400
ok "the same mbox" cmp "$T/a/list.mbox" "$T/b/list.mbox"
is "$(grep -v '"repo":' "$T/a/list.json" | md5sum)" "$(grep -v '"repo":' "$T/b/list.json" | md5sum)" \
	"the same manifest (but for the repository's path)"
is "$(git -C "$T/a/repo.git" for-each-ref --format='%(objectname) %(refname)' | md5sum)" \
	"$(git -C "$T/b/repo.git" for-each-ref --format='%(objectname) %(refname)' | md5sum)" "the same commits"
ok "the same maildir" diff -r "$T/a/md" "$T/b/md"
mkdir "$T/c"
gen "$T/c" 91 400
ok "another seed, another list" test "$(md5sum <"$T/a/list.mbox")" != "$(md5sum <"$T/c/list.mbox")"

done_testing
