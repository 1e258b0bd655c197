# bench/lib.sh - helpers shared by the benchmark scripts (sourced).
# timed needs $tmp (a scratch directory), $runs, and $bench_name for
# messages; cached_list needs $src, $cache and $PY.

# cached_list N SEED [maildir]: the list fixtures/gen-list.py makes of N
# messages with SEED, generated once into $cache (the generator's hash and
# git's version in its name); sets list (its directory) and mbox.  With
# "maildir", the list is also written as the maildir $list/md (kept apart
# from the lists without one: deliver-*).
cached_list() {
	local key prefix=list
	local -a extra=()

	[ "${3:-}" = maildir ] && prefix=deliver
	key=$1-$2-$(sha1sum <"$src/fixtures/gen-list.py" | cut -c1-12)-$(git --version | tr -dc '0-9.')
	list=$cache/$prefix-$key
	mbox=$list/list.mbox
	if [ "$prefix" = deliver ]; then
		extra=(--maildir "$list/md")
		[ -d "$list/md/cur" ] && return
	else
		[ -s "$mbox" ] && return
	fi
	echo "generating $1 messages (seed $2) into $list ..."
	rm -rf "$list"
	mkdir -p "$list"
	"$PY" "$src/fixtures/gen-list.py" --messages "$1" --seed "$2" --out "$mbox" \
		--manifest "$list/list.json" --repo "$list/repo.git" "${extra[@]}"
}

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
