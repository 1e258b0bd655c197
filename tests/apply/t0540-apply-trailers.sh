#!/bin/bash
# t0540-apply-trailers - b4 am's trailers in the commits patchgate makes
# ([apply] add_trailers, link_pattern, signoff) and `patchgate series
# mbox`, on gen-trailers.sh's series (two patches, a cover, three review
# replies):
#
#  - the commit messages are exactly data/t0540/commits.txt, written by
#    b4's rules (the patch's own trailers, its follow-ups not already
#    there, then the cover's, then Link:, then the applier's
#    Signed-off-by last, moved there when it was already in the chain);
#  - where Debian's b4 (0.12) runs offline, `b4 am -l -s -t` of the same
#    mbox, applied by git am, gives the same messages; and b4's own
#    fix_trailers, run in Python on ten edge cases (trailers-b4.py),
#    gives what pgate_apply_add_trailers() gives (trailers-tool);
#  - series mbox --trailers is exactly data/t0540/series-trailers.mbox,
#    and git am applies it to the same messages and trees; without
#    --trailers and the cover, plain git am gives the mails' own
#    messages;
#  - a link_pattern without {msgid}, or a signoff that is no
#    "Name <email>", is a configuration error; --version of a version
#    the chain lacks is "not found".

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
G=$SRCDIR/tests/apply/data/t0540
export GIT_COMMITTER_NAME="Maint Ainer" GIT_COMMITTER_EMAIL=maint@example.org
bash "$SRCDIR/tests/apply/gen-trailers.sh" "$T/g" || bail "gen-trailers.sh failed"
cat >"$T/conf" <<EOF
[apply]
repo = $T/g/repo.git
committer_date = author
add_trailers = true
link_pattern = https://patch.msgid.link/{msgid}
signoff = Maint Ainer <maint@example.org>
EOF
P() { pg --state "$T/s" --config "$T/conf" "$@"; }
P ingest "$T/g/list.mbox" >/dev/null || bail "ingest failed"
SID=$(P series list --json | jq_py /dev/stdin 'd["series"][0]["id"]')
like "$(P apply "$SID")" "^master: ok, 2 commits" "the series applies"
REF=refs/heads/patchgate/$SID/v2/master
msgs() {	# msgs GIT_DIR RANGE: each commit message, newest first
	git -C "$1" log --format='%B---END' "$2"
}
is "$(msgs "$T/g/repo.git" "master..$REF")" "$(cat "$G/commits.txt")" \
	"the commit messages carry the trailers as b4 am puts them"

# the oracle: Debian's b4, offline, on the same mbox
if command -v b4 >/dev/null; then
	(
		export HOME=$T/b4home GIT_CONFIG_NOSYSTEM=1
		mkdir -p "$HOME"
		git config --global user.name "Maint Ainer"
		git config --global user.email maint@example.org
		git config --global b4.linkmask 'https://patch.msgid.link/%s'
		git config --global b4.midmask 'http://127.0.0.1:9/%s'
		git config --global b4.searchmask 'http://127.0.0.1:9/?q=%s'
		b4 --offline-mode am -m - -o - -l -s -t v2-0.foo@example.org \
			<"$T/g/list.mbox" >"$T/b4.mbx" 2>"$T/b4.err"
	)
	git clone -q "$T/g/repo.git" "$T/b4c"
	if [ -s "$T/b4.mbx" ] && git -C "$T/b4c" am -q "$T/b4.mbx"; then
		is "$(msgs "$T/b4c" origin/master..HEAD)" "$(cat "$G/commits.txt")" \
			"b4 am -l -s -t gives the same messages"
	else
		fail "b4 am -l -s -t gives the same messages" "$(cat "$T/b4.err")"
	fi
else
	skip "b4 am -l -s -t gives the same messages" "no b4"
fi
if "$PY" -c 'import b4' 2>/dev/null && [ -x "${PGATE_TRAILERS_TOOL:-}" ]; then
	HOME=$T/b4home "$PY" "$SRCDIR/tests/apply/trailers-b4.py" \
		"$PGATE_TRAILERS_TOOL" >"$T/b4cases" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "${line#ok - }" ;;
		"not ok - "*) fail "${line#not ok - }" ;;
		*) diag "$line" ;;
		esac
	done <"$T/b4cases"
	is "$(grep -c '^ok - ' "$T/b4cases")" 10 "b4 0.12's fix_trailers: ten cases compared"
else
	skip "b4 0.12's fix_trailers on the edge cases" "no b4 module or no trailers-tool"
fi

# series mbox --trailers: exact bytes, and git am takes it
P series mbox "$SID" --trailers --cover -o "$T/t.mbox"
is "$(cat "$T/t.mbox")" "$(cat "$G/series-trailers.mbox")" \
	"series mbox --trailers --cover: the bytes of series-trailers.mbox"
is "$(P series mbox "$SID" --trailers --cover --version 2 | cmp - "$T/t.mbox" && echo same)" same \
	"--version 2 is the same series"
git clone -q "$T/g/repo.git" "$T/c1"
ok "git am --patch-format=mboxrd --empty=drop applies it (the cover dropped)" \
	git -C "$T/c1" am -q --patch-format=mboxrd --empty=drop "$T/t.mbox"
is "$(msgs "$T/c1" origin/master..HEAD)" "$(cat "$G/commits.txt")" \
	"git am of the mbox: the same messages"
is "$(git -C "$T/c1" rev-parse 'HEAD^{tree}')" \
	"$(git -C "$T/g/repo.git" rev-parse "$REF^{tree}")" "git am of the mbox: the same tree"

# without trailers, and without the cover (the default, as b4 am: git am
# stops on a cover with "Patch is empty"): the mails' own messages
P series mbox "$SID" >"$T/plain.mbox"
is "$(grep -c '^From mboxrd@z' "$T/plain.mbox")" 2 "no cover by default: the two patches only"
is "$(P series mbox "$SID" --no-cover | cmp - "$T/plain.mbox" && echo same)" same \
	"--no-cover (kept for scripts) is the default"
like "$(P series mbox "$SID" --cover --no-cover 2>&1)" "exclude each other" "--cover with --no-cover is refused"
git clone -q "$T/g/repo.git" "$T/c2"
ok "plain git am applies the default mbox" git -C "$T/c2" am -q "$T/plain.mbox"
is "$(git -C "$T/c2" log --format=%B -1 HEAD~1)" "foo: add four

Four comes after three.

Signed-off-by: Alice Developer <alice@example.org>" "without --trailers: the message as mailed"

# errors
like "$(P series mbox "$SID" --version 1 2>&1)" "has no version 1" "--version 1: none in the chain"
P series mbox "$SID" --version 1 >/dev/null 2>&1
is "$?" 66 "--version 1: exit 66"
like "$(P series mbox sffffffffffff 2>&1)" "patchgate: series: " "an unknown series is an error"
sed 's|^link_pattern = .*|link_pattern = https://x.example/|' "$T/conf" >"$T/bad1"
like "$(pg --state "$T/s" --config "$T/bad1" apply "$SID" 2>&1)" "link_pattern: no \{msgid\}" \
	"a link_pattern without {msgid} is refused"
sed 's|^signoff = .*|signoff = Maint Ainer|' "$T/conf" >"$T/bad2"
pg --state "$T/s" --config "$T/bad2" apply "$SID" >/dev/null 2>&1
is "$?" 78 "a signoff that is no 'Name <email>' is a configuration error (78)"

# off by default: the mails' own messages, as git am makes them
printf '[apply]\nrepo = %s\ncommitter_date = author\n' "$T/g/repo.git" >"$T/plainconf"
pg --state "$T/s" --config "$T/plainconf" apply "$SID" >/dev/null
is "$(msgs "$T/g/repo.git" "master..$REF" | grep -c '^Link:\|^Acked-by:')" 0 \
	"without the keys nothing is added"

done_testing
