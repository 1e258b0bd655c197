#!/bin/bash
# t0710-site-browser - the static site in a real browser: Debian's
# chromium, headless, on the demo list and a hostile series.  The DOM
# chromium builds (--dump-dom) of the index, a series page and a log page
# has the rows, states and links it should, and nothing from mail or a
# log became a script, a handler or a javascript: link; screenshots at a
# phone's and a desktop's width are kept as artifacts
# ($PGATE_ARTIFACTS) and their sizes held to a golden range (a blank or
# broken page is far smaller; a page without its style sheet far
# taller; chromium's headless window is never narrower than 500 px, so
# the "phone" shots are 500 px wide).  The layout at a phone's width is
# measured in a frame 390 px wide (layout.js): no page is wider, nothing
# sticks out or is cut off in a scrolling box (code blocks aside), and
# at 1280 px no word of a table cell is broken.  Skipped without chromium (scripts/install-deps installs it).
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

# the pages are the same in every build: the sanitized one's C code runs
# in t0700, without a browser's minute
[ "${PGATE_TEST_SANITIZED:-0}" = 1 ] && skip_all "a sanitized build (t0700 runs its code)"
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$CHROMIUM" ] || skip_all "needs chromium (scripts/install-deps installs it)"
site_demo
H=$T/html
A=${PGATE_ARTIFACTS:-$T/artifacts}
mkdir -p "$A"

dom() {  # FILE NAME: the rendered DOM of $H/FILE, and its summary
	browser --dump-dom "file://$H/$1" >"$T/$2.dom" &&
		"$PY" "$CHECK" dom "$T/$2.dom" "$2" >"$T/$2.sum"
}
field() { sed -n "s/^$2: //p" "$T/$1.sum"; }

n=$(jq_py "$T/all.json" 'len(d["series"])')
ok "chromium renders the index" dom index.html index ||
	diag <"$T/chromium.log"
is "$(field index rows)" "$n" "the index has a row per series"
like "$(field index outcomes)" "fail.*fail" "two failures: a failed build, and a series that did not apply"
like "$(field index outcomes)" "pass" "and passes"
is "$(field index series-links)" "$((n + 0))" "each row links to its series page" ||
	diag "$(grep -c 'series/' "$T/index.dom")"
like "$(grep -o '<tr class="r-fail"[^>]*><td><a href="series/'"$FAILED"'.html' "$T/index.dom")" . \
	"the failed build's row is red (r-fail), not green"
like "$(cat "$T/index.dom")" '<svg role="img"' "the chart is in the DOM"
like "$(cat "$T/index.dom")" 'check failed' "with a word beside the colour"

ok "chromium renders the failed series' page" dom "series/$FAILED.html" series
like "$(cat "$T/series.dom")" 'o-fail[^<]*<span[^>]*>[^<]*</span> check failed' "its verdict: check failed, in red"
is "$(field series log-links)" 3 "links to the full log: the job, and each of its two steps"
log=$(ls "$H"/log/"$FAILED"-*.html) && log=${log#"$H"/}
ok "chromium renders its log page" dom "$log" log
is "$(field log failed-anchor)" True "the failing step is anchored"
ok "every line is numbered" test "$(field log line-anchors)" -gt 10

ok "chromium renders the hostile series' page" dom "series/$HOSTILE.html" hostile
for page in index series log hostile; do
	is "$(field $page scripts) $(field $page event-handlers) $(field $page javascript-links)" \
		"0 0 0" "$page: no script, no handler, no javascript: link in the DOM"
done
like "$(cat "$T/hostile.dom")" '&lt;script&gt;alert\(2\)&lt;/script&gt;' "the hostile subject is text"
like "$(cat "$T/log.dom")" '&lt;script&gt;alert\(9\)&lt;/script&gt;' "the hostile log line is text"

# screenshots: kept, and their sizes in a golden range
shot() {  # NAME WIDTH HEIGHT PAGE
	browser --window-size="$2,$3" --hide-scrollbars \
		--screenshot="$A/$1.png" "file://$H/$4" >/dev/null &&
		"$PY" "$CHECK" png "$A/$1.png"
}
range() {  # "W H BYTES" MIN MAX: BYTES within
	set -- $1 "$2" "$3"
	test "$3" -ge "$4" -a "$3" -le "$5"
}
s=$(shot index-phone 390 844 index.html)
ok "index at a phone's width: $s" range "$s" 20000 400000
s=$(shot index-desktop 1280 1000 index.html)
ok "index at a desktop's width: $s" range "$s" 30000 600000
s=$(shot series-phone 390 844 "series/$FAILED.html")
ok "a series page at a phone's width: $s" range "$s" 20000 400000
s=$(shot series-desktop 1280 1000 "series/$FAILED.html")
ok "a series page at a desktop's width: $s" range "$s" 30000 600000
diag "screenshots in $A"

# layout: layout() (lib-site.sh): what layout.js measures of each page
msgpage=$(cd "$H" && ls msgid/*.html | head -1)
for page in index.html "series/$FAILED.html" "series/$HOSTILE.html" "$log" find.html "$msgpage"; do
	l=$(layout "$page" 390)
	[ "$l" = none ] && { ok "$page at 390 px: measured" false; continue; }
	is "$(lf "$l" scroll)" "$(lf "$l" width)" "$page at 390 px: no wider than the window"
	is "$(lf "$l" out)" "" "$page at 390 px: nothing sticks out"
	is "$(lf "$l" hidden)" "" "$page at 390 px: nothing cut off in a scrolling box (but code)"
done
for page in index.html "series/$FAILED.html"; do
	l=$(layout "$page" 1280)
	is "$(lf "$l" broken)" "" "$page at 1280 px: no word of a cell broken"
done

done_testing
