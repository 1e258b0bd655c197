#!/bin/bash
# t0520-apply-fuzz - damaged patches (mutate.py: lines dropped, doubled,
# swapped, bytes flipped, hunk numbers and modes changed, hostile paths,
# binary data broken, mails cut short; fixed seed) through
# pgate_apply_series and through `git am`:
#
#   - pgate-apply-tool always answers with a status (under the sanitizers:
#     no crash, no leak, no undefined behaviour), and the object database
#     it writes stays valid (git fsck)
#   - a patch pgate applies, git am applies to the same commit
#   - a patch git am applies, pgate applies too, unless libgit2's parser
#     refuses it as corrupt (libgit2 is stricter than git about damaged
#     header and hunk lines; counted, shown as a diagnostic)
#   - a patch pgate rejects as unsafe is left out of the comparison (git
#     am would apply a gitlink, for one)
# PGATE_FUZZ_MAILS (200, 60 in a sanitized build) and PGATE_FUZZ_SEED
# (pgate-fuzz) change the set.

. "${SRCDIR:?}/tests/lib/tap.sh"

command -v git >/dev/null || skip_all "needs git"
command -v /usr/bin/python3 >/dev/null || skip_all "needs python3"
TOOL=${PGATE_APPLY_TOOL:?}
HERE=$SRCDIR/tests/apply
N=${PGATE_FUZZ_MAILS:-$(scaled 200 60)}
SEED=${PGATE_FUZZ_SEED:-pgate-fuzz}

tap_tmpdir
T=$TAP_TMP
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
mkdir -p "$HOME"
export GIT_COMMITTER_NAME="Commit Ter" GIT_COMMITTER_EMAIL=committer@example.org
export GIT_COMMITTER_DATE="1700000000 +0000"

/usr/bin/python3 "$HERE/gen-repo.py" "$T/r" || bail "gen-repo.py failed"
git -C "$T/r" format-patch -q --binary -o "$T/p" base..topic
git -C "$T/r" format-patch -q -C -C -o "$T/p" --start-number 100 base..edge
git clone -q --bare "$T/r" "$T/pg.git"
/usr/bin/python3 "$HERE/mutate.py" "$T/m" "$N" "$SEED" "$T"/p/*.patch ||
	bail "mutate.py failed"

# the worktree git am runs in, back at base (a fresh clone when git itself
# died on a damaged patch and left it unusable)
reset_wt() {
	if [ -d "$T/wt" ]; then
		rm -f "$T/wt/.git/index.lock"
		if [ -d "$T/wt/.git/rebase-apply" ]; then
			git -C "$T/wt" am --abort >/dev/null 2>&1
			rm -rf "$T/wt/.git/rebase-apply"
		fi
		git -C "$T/wt" checkout -q -f --detach base 2>/dev/null &&
			git -C "$T/wt" clean -qfdx && return
	fi
	rm -rf "$T/wt"
	git clone -q --shared "$T/r" "$T/wt" && git -C "$T/wt" checkout -q --detach base
}

crash= applied_refused= differ= refused_other= stricter=0 agree=0 rejected=0
for m in "$T"/m/*.eml; do
	out=$("$TOOL" apply --allow-symlinks \
	      --committer "$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>" \
	      --date "$GIT_COMMITTER_DATE" "$T/pg.git" base "$m" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		crash="$crash ${m##*/}(exit $rc)"
		continue
	fi
	# the "status: " and "head: " lines, without a process for each
	status= pg= reason=
	while read -r line; do
		case $line in
		"status: "*) status=${line#status: } ;;
		"head: "*) pg=${line#head: } ;;
		"reason: "*) reason=${reason:+$reason; }${line#reason: } ;;
		esac
	done <<<"$out"
	if [ "$status" = rejected ]; then
		rejected=$((rejected + 1))
		continue
	fi
	reset_wt
	if git -C "$T/wt" am -q "$m" >/dev/null 2>&1; then
		am=$(git -C "$T/wt" rev-parse HEAD)
	else
		am=
	fi
	if [ "$pg" = "$am" ]; then
		agree=$((agree + 1))
	elif [ -n "$pg" ] && [ -z "$am" ]; then
		applied_refused="$applied_refused ${m##*/}"
	elif [ -n "$pg" ]; then
		differ="$differ ${m##*/}"
	elif [[ $out == *$'\nreason: corrupt patch'* || $out == 'reason: corrupt patch'* ]]; then
		stricter=$((stricter + 1))
	else
		refused_other="$refused_other ${m##*/}:$reason"
	fi
done

is "$crash" "" "every damaged mail got an answer ($N mails)"
is "$applied_refused" "" "nothing applied that git am refuses"
is "$differ" "" "what both apply, they apply alike"
is "$refused_other" "" "git am's patches refused only as corrupt by libgit2"
like "$agree" '^[0-9]{2,}$' "a meaningful number agree"
diag "agree $agree, refused as unsafe $rejected, libgit2 stricter $stricter"
ok "the object database is valid" git -C "$T/pg.git" fsck --no-dangling
done_testing
