#!/bin/bash
# t0060-listing - the listings that must stay cheap on a large store
# (issue #34):
#  - series list --limit N pages through the list with --after and the
#    JSON's "next" cursor: the pages, joined, are the whole list, in the
#    same order, and the last page's "next" is null;
#  - --since DATE keeps the series dated DATE or later;
#  - bad --limit, --since and --after values are usage errors (64);
#  - store info reports the bytes used and the map's ceiling, and warns
#    on stderr from 80% of [store] max_map_size (not below).

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
S=$T/state
gen_list 120 60 "$T/g" >/dev/null || bail "gen-list.py failed"
ok "ingest" pg --state "$S" ingest "$T/g/list.mbox"

pg --state "$S" series list --all --json >"$T/all.json" || bail "series list failed"
n=$(jq_py "$T/all.json" 'len(d["series"])')
[ "$n" -gt 12 ] || bail "too few series ($n)"
is "$(jq_py "$T/all.json" 'd["next"]')" "null" "without --limit, next is null"

# page through, 5 at a time
: >"$T/paged"
cur=
pages=0
while :; do
	pg --state "$S" series list --all --json --limit 5 ${cur:+--after "$cur"} >"$T/page.json" ||
		bail "series list --limit 5 failed"
	jq_py "$T/page.json" '"\n".join(s["id"] for s in d["series"])' | sed '/^$/d' >>"$T/paged"
	pages=$((pages + 1))
	cur=$(jq_py "$T/page.json" 'd["next"] or ""')
	[ -n "$cur" ] || break
	[ "$pages" -lt 100 ] || bail "paging does not end"
done
jq_py "$T/all.json" '"\n".join(s["id"] for s in d["series"])' >"$T/whole"
is "$(cat "$T/paged")" "$(cat "$T/whole")" "the pages joined are the whole list, in order"
is "$pages" "$(((n + 4) / 5))" "ceil($n / 5) pages"
like "$(jq_py "$T/all.json" 'd["series"][4]["date"]'):$(jq_py "$T/all.json" 'd["series"][4]["id"]')" \
	"^[0-9]+:s[0-9a-f]{12}$" "a cursor is DATE:ID"
is "$(pg --state "$S" series list --all --json --limit 5 | jq_py /dev/stdin 'd["next"]')" \
	"$(jq_py "$T/all.json" '"%d:%s" % (d["series"][4]["date"], d["series"][4]["id"])')" \
	"next names the last series of the page"

# the text listing: the same first lines, and what comes after on stderr
is "$(pg --state "$S" series list --all --limit 3 2>/dev/null | cut -d' ' -f1)" \
	"$(head -n 3 "$T/whole")" "text: --limit 3 prints the first three"
like "$(pg --state "$S" series list --all --limit 3 2>&1 >/dev/null)" "more after --after [0-9]+:s" \
	"text: the cursor of the next page on stderr"

# --since: the date of the middle series
mid=$(jq_py "$T/all.json" 'd["series"][len(d["series"]) // 2]["date"]')
since=$(date -u -d "@$mid" +%Y-%m-%dT%H:%M:%S)
is "$(pg --state "$S" series list --all --json --since "$since" |
	jq_py /dev/stdin '[s["id"] for s in d["series"]]')" \
	"$(jq_py "$T/all.json" "[s['id'] for s in d['series'] if s['date'] >= $mid]")" \
	"--since keeps the series dated then or later"
is "$(pg --state "$S" series list --all --json --since "$mid" | jq_py /dev/stdin 'len(d["series"])')" \
	"$(jq_py "$T/all.json" "len([s for s in d['series'] if s['date'] >= $mid])")" \
	"--since takes seconds since the epoch too"
is "$(pg --state "$S" series list --all --json --since 2100-01-01 | jq_py /dev/stdin 'd["series"]')" \
	"[]" "--since in the future: nothing"

for bad in "--limit -1" "--since yesterday-ish" "--after nocolon" "--after :s1" "--after x:s1"; do
	# shellcheck disable=SC2086
	pg --state "$S" series list $bad >/dev/null 2>&1
	is "$?" 64 "series list $bad: usage error"
done

# store info: used bytes and the ceiling; the warning from 80%
pg --state "$S" store info --json >"$T/info.json"
used=$(jq_py "$T/info.json" 'd["used_bytes"]')
like "$used" '^[1-9][0-9]*$' "store info: used_bytes"
is "$(jq_py "$T/info.json" 'd["max_map_size"]')" 1099511627776 "store info: the default ceiling"
unlike "$(pg --state "$S" store info 2>&1)" "warning" "no warning far below the ceiling"
# a ceiling at 125% of what is used: 80% exactly, a warning; at 130%, none
printf '[store]\nmap_size = %d\nmax_map_size = %d\n' $((used * 5 / 4)) $((used * 5 / 4)) >"$T/at80"
printf '[store]\nmap_size = %d\nmax_map_size = %d\n' $((used * 13 / 10)) $((used * 13 / 10)) >"$T/below80"
err=$(pg --state "$S" --config "$T/at80" store info 2>&1 >/dev/null)
like "$err" "^patchgate: store info: warning: the store uses (79|80)% of \[store\] max_map_size" \
	"a warning at 80% of max_map_size"
is "$(pg --state "$S" --config "$T/below80" store info 2>&1 >/dev/null)" "" "none at 77%"

done_testing
