# bench/lib.sh - helpers shared by the benchmark scripts (sourced).
# Needs: $tmp (a scratch directory), $runs, and $bench_name for messages.

# timed OUT LABEL CMD...: runs CMD $runs times (OUT emptied each time)
# under /usr/bin/time -v; sets wall (s, median) and rss (KiB, max)
timed() {
	local out=$1 label=$2 run
	shift 2
	: >"$tmp/walls"
	rss=0
	for run in $(seq "$runs"); do
		: "run $run"
		rm -rf "$out"
		mkdir -p "$out"
		sync
		/usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || {
			echo "$bench_name: $label failed:" >&2
			cat "$tmp/stderr" >&2
			exit 1
		}
		awk -F': ' '/Elapsed \(wall clock\)/ {
			n = split($2, p, ":"); s = 0
			for (i = 1; i <= n; i++) s = s * 60 + p[i]
			print s }' "$tmp/time" >>"$tmp/walls"
		r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp/time")
		[ "$r" -gt "$rss" ] && rss=$r
	done
	wall=$(sort -n "$tmp/walls" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
}

calc() {	# calc EXPR: floating point, by awk (1 or 0 for a comparison)
	awk "BEGIN { print ($*) }"
}

verdict() {	# verdict CONDITION
	if [ "$(calc "$1")" = 1 ]; then echo "ok"; else echo "MISSED"; fi
}
