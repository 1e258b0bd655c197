#!/bin/bash
# t-fuzz-short - a short fuzzing run for CI (meson test --suite fuzz in a
# -Dfuzzing=true build; see docs/fuzzing.md).
#
#  1. tests/fuzz/seeds.sh makes the seed corpora.
#  2. Every saved crasher (tests/fuzz/crashers/TARGET-NAME) is run once
#     through its target: one test each, passing when it no longer
#     crashes.  A crasher whose bug is known and not fixed yet has a note
#     NAME.todo beside it: its test is then a TODO (expected to fail) and
#     the crash's signature (fuzz_signature) is remembered.
#  3. Each target fuzzes for FUZZ_SECONDS (10) from the seeds with a fixed
#     -seed (FUZZ_JOBS targets at a time, default one per CPU), in -fork=1
#     mode so that a known bug does not end the run: one test per target,
#     "ok N - fuzz-mail: 123456 runs, cov C, ft F, no crash".  Every
#     artifact is replayed for its signature: one that is not a known
#     crasher's (of the same target) fails the test; known ones only make
#     it a TODO, as in 2.  Artifacts are kept in FUZZ_ARTIFACTS/short/.
#
# Environment: SRCDIR, FUZZ_BUILDDIR (where the fuzz-* executables are),
# FUZZ_ARTIFACTS (default FUZZ_BUILDDIR/fuzz-artifacts), FUZZ_SECONDS,
# FUZZ_JOBS.
# Needs git and /usr/bin/python3 for the seeds.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/fuzz/fuzz-lib.sh"

B=${FUZZ_BUILDDIR:?}
SECS=${FUZZ_SECONDS:-10}
for t in "${FUZZ_TARGETS[@]}"; do
	[ -x "$B/$t" ] || bail "$t is not built in $B"
done
command -v git >/dev/null || skip_all "needs git (for the seeds)"
[ -x /usr/bin/python3 ] || skip_all "needs /usr/bin/python3 (for the seeds)"
tap_tmpdir
T=$TAP_TMP
ART=${FUZZ_ARTIFACTS:-$B/fuzz-artifacts}/short
mkdir -p "$ART" || bail "cannot make $ART"
fuzz_sanitizer_env "$SRCDIR"

todo() {	# todo ok|not-ok DESC REASON: a TAP TODO line
	_tap_n=$((_tap_n + 1))
	printf '%s %d - %s # TODO %s\n' "${1/-/ }" "$_tap_n" "$2" "$3"
}

ok "seeds.sh makes the seed corpora" bash "$SRCDIR/tests/fuzz/seeds.sh" "$T/seeds" ||
	bail "no seeds"

# known, unfixed bugs: "TARGET<tab>SIGNATURE" lines
: >"$T/known"
for f in "$SRCDIR"/tests/fuzz/crashers/*; do
	[ -f "$f" ] || continue
	case $f in *.todo | *.md) continue ;; esac
	name=${f##*/}
	if ! t=$(fuzz_target_of "$name"); then
		fail "crasher $name: its name does not start with a target"
		continue
	fi
	fuzz_replay "$B/$t" "$f" "$T/replay.log"
	rc=$?
	if [ -f "$f.todo" ]; then
		if [ $rc -ne 0 ]; then
			sig=$(fuzz_signature "$T/replay.log")
			printf '%s\t%s\n' "$t" "$sig" >>"$T/known"
			todo not-ok "crasher $name: $sig" "unfixed, see $name.todo"
		else
			todo ok "crasher $name: no crash" "fixed: delete $name.todo"
		fi
	elif [ $rc -eq 0 ]; then
		pass "crasher $name: no crash"
	else
		fail "crasher $name: crashes again: $(fuzz_signature "$T/replay.log")"
		grep -E 'ERROR|SUMMARY|runtime error|invariant|^ +#[0-9]+ ' "$T/replay.log" | head -n 20 | diag
	fi
done

# the targets fuzz JOBS at a time (default: one per CPU), each on a CPU of
# its own for its FUZZ_SECONDS, as one after another would: the run is as
# long, the wall time shorter; then each is judged, in order
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
for t in "${FUZZ_TARGETS[@]}"; do
	while [ "$(jobs -pr | wc -l)" -ge "$JOBS" ]; do wait -n; done
	mkdir -p "$T/corpus/$t"
	rm -f "$ART/$t"-*
	# -fork=1: a known bug found early does not end the run
	(cd "$T" && TMPDIR=$T "$B/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
		-ignore_ooms=1 -seed=1 -max_total_time="$SECS" -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$ART/$t-" \
		"$T/corpus/$t" "$T/seeds/$t" >"$T/$t.log" 2>&1
	 echo $? >"$T/$t.rc") &
done
wait
for t in "${FUZZ_TARGETS[@]}"; do
	rc=$(cat "$T/$t.rc" 2>/dev/null || echo 255)
	read -r runs cov ft < <(fuzz_stats "$T/$t.log")
	known_sigs='' new_sigs=''
	for a in "$ART/$t"-*; do
		[ -f "$a" ] || continue
		if fuzz_replay "$B/$t" "$a" "$T/replay.log"; then
			sig="does not reproduce alone"
		else
			sig=$(fuzz_signature "$T/replay.log")
		fi
		if grep -qxF "$(printf '%s\t%s' "$t" "$sig")" "$T/known"; then
			case "; $known_sigs; " in
			*"; $sig; "*) ;;
			*) known_sigs="$known_sigs${known_sigs:+; }$sig" ;;
			esac
		else
			new_sigs="$new_sigs${new_sigs:+; }${a##*/}: $sig"
			grep -E 'ERROR|SUMMARY|runtime error|invariant|^ +#[0-9]+ ' "$T/replay.log" |
				head -n 30 >"$T/$t.diag"
		fi
	done
	if [ -n "$new_sigs" ]; then
		fail "$t: $runs runs, cov $cov, ft $ft, CRASH: $new_sigs" "artifacts in $ART"
		diag <"$T/$t.diag"
	elif [ "$rc" -ne 0 ]; then
		fail "$t: libFuzzer exited $rc after $runs runs"
		tail -n 20 "$T/$t.log" | diag
	elif [ -n "$known_sigs" ]; then
		todo not-ok "$t: $runs runs, cov $cov, ft $ft, only known bugs: $known_sigs" \
			"unfixed (tests/fuzz/crashers)"
	else
		pass "$t: $runs runs, cov $cov, ft $ft, no crash"
	fi
done
done_testing
