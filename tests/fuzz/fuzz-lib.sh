# shellcheck shell=bash
# fuzz-lib.sh - shared by scripts/fuzz and tests/fuzz/t-fuzz-short.sh
# (sourced, bash).
#
#   FUZZ_TARGETS               the targets, in the order they run
#   fuzz_sanitizer_env TOP     exports ASAN/UBSAN/LSAN_OPTIONS and
#                              G_SLICE (kept when already set): leaks
#                              detected, also of what GLib's slice
#                              allocator hands out (always-malloc), UBSan
#                              fatal with a stack, tests/lsan.supp
#   fuzz_replay EXE INPUT LOG  runs one input once, output to LOG, with
#                              full stacks for leaks (slow: only for
#                              replays); the exit status is the target's
#   fuzz_target_of NAME        the target a crasher file is for, from its
#                              name (fuzz-patch-octal-escape -> fuzz-patch)
#   fuzz_signature LOG         one line naming a crash by its kind and the
#                              first frame in patchgate's code, e.g.
#                              "undefined-behavior header_path check.c:106"
#                              (else the first named frame of a library:
#                              "leak git_diff_from_buffer"); the same bug
#                              gives the same line, when LOG is from
#                              fuzz_replay
#   fuzz_stats LOG             "RUNS COV FT" from a libFuzzer log (plain
#                              or -fork mode); "0 0 0" when it has none

FUZZ_TARGETS=(fuzz-mail fuzz-subject fuzz-mbox fuzz-patch fuzz-store-keys)

fuzz_sanitizer_env() {
	local top=$1
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}
	export G_SLICE=${G_SLICE:-always-malloc}
}

fuzz_replay() {
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0 \
		"$1" -runs=1 -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
		"$2" >"$3" 2>&1
}

fuzz_target_of() {
	local t
	for t in "${FUZZ_TARGETS[@]}"; do
		case $1 in "$t"-*) echo "$t"; return 0 ;; esac
	done
	return 1
}

fuzz_signature() {
	local log=$1 kind frame
	frame=$(grep -m1 -oE 'invariant failed at [^ :]+:[0-9]+' "$log")
	if [ -n "$frame" ]; then
		echo "invariant ${frame##*/}"
		return
	fi
	kind=$(sed -nE 's/^SUMMARY: [A-Za-z]+: //p' "$log" | head -n 1)
	case $kind in
	*leaked*) kind=leak ;;
	*) kind=${kind%% *} ;;
	esac
	# the first stack frame in patchgate's own code
	frame=$(grep -m1 -oE '^ +#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_0-9]+ [^ ]*/(common|store|ingest|threading|apply|ci|report)/[^ /]+\.c:[0-9]+' "$log" |
		sed -E 's/.* in ([^ ]+) .*\/([^/]+)$/\1 \2/')
	if [ -z "$frame" ]; then
		frame=$(grep -m1 -oE '[^ /]+\.c:[0-9]+:[0-9]+: runtime error' "$log" |
			sed -E 's/:[0-9]+: runtime error$//')
	fi
	if [ -z "$frame" ]; then
		# else the first named frame that is not the allocator, the
		# sanitizers' or GLib's memory functions (a library's own bug)
		frame=$(sed -nE 's/^ +#[0-9]+ 0x[0-9a-f]+ in ([A-Za-z_][A-Za-z_0-9]*) .*/\1/p' "$log" |
			grep -vE '^(__|_start|malloc|calloc|realloc|free|strdup|strndup|g_(malloc|malloc0|realloc|try_|slice_|mem|strdup|strndup|new))' |
			head -n 1)
	fi
	echo "${kind:-crash} ${frame:-(no frame)}"
}

fuzz_stats() {
	local log=$1 runs cov ft line
	# plain mode: "stat::number_of_executed_units: N" (-print_final_stats)
	# and "#N DONE cov: C ft: F ..."; -fork mode: "#N: cov: C ft: F ..."
	runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)
	line=$(grep -E '^#[0-9]+:?[[:space:]].*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
	cov=$(printf '%s\n' "$line" | sed -nE 's/.*cov: ([0-9]+).*/\1/p')
	ft=$(printf '%s\n' "$line" | sed -nE 's/.*ft: ([0-9]+).*/\1/p')
	[ -n "$runs" ] || runs=$(printf '%s\n' "$line" | sed -nE 's/^#([0-9]+).*/\1/p')
	echo "${runs:-0} ${cov:-0} ${ft:-0}"
}
