#!/bin/bash
# t0700-site - `patchgate report html`: the static site of the demo list
# and a hostile series (docs/report-site.md).  Every page parses with
# html5lib without an error; no local link is broken; the JSON beside the
# pages is what `series show --json` says; Message-IDs lead to their
# series; mail-derived text is escaped; a second build writes nothing,
# and one after a change rewrites only what changed.
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

"$PY" -c 'import html5lib' 2>/dev/null ||
	skip_all "needs python3-html5lib (scripts/install-deps)"
site_demo
H=$T/html

ok "index, filters, find, index.json, site.css" test -s "$H/index.html" -a \
	-s "$H/filters.html" -a -s "$H/find.html" -a -s "$H/index.json" -a -s "$H/site.css"
n=$(jq_py "$T/all.json" 'len(d["series"])')
is "$(jq_py "$H/index.json" 'len(d["series"])')" "$n" "index.json lists every series"
is "$(jq_py "$H/index.json" '[s["outcome"] for s in d["series"] if s["id"] == "'"$FAILED"'"][0]')" \
	fail "a failed build is a failure in index.json, whatever the state"
is "$("$PY" "$CHECK" parse "$H")" "" "html5lib: no parse error in any page"
is "$("$PY" "$CHECK" links "$H")" "" "no local link is broken"

P series show --json "$FAILED" >"$T/show.json"
ok "series/ID.json is the document of series show --json" cmp "$T/show.json" "$H/series/$FAILED.json"

# the failing step, anchored, in an escaped, line-numbered log
log=$(ls "$H"/log/"$FAILED"-*.html)
ok "a log page for the failed job" test -s "$log"
like "$(cat "$log")" 'id="failed"' "the failing step is anchored"
like "$(cat "$log")" 'id="L1" href="#L1"' "lines are numbered"
like "$(cat "$H/series/$FAILED.html")" 'check failed' "the series page says which step failed"
like "$(cat "$H/series/$FAILED.html")" 'o-fail' "in red"

# hostile text is text
# (series/ID.json is series show --json's bytes: JSON, served as such)
for f in "$H/index.html" "$H/series/$HOSTILE.html" "$log" "$H/index.json"; do
	unlike "$(cat "$f")" '<script>alert|<img src=x|<b onmouseover|href="javascript' \
		"nothing from mail or a log is markup: ${f#"$H"/}"
done
like "$(cat "$H/series/$HOSTILE.html")" '&lt;script&gt;alert\(2\)&lt;/script&gt;' \
	"the hostile subject is shown, escaped"
like "$(cat "$log")" '&lt;script&gt;alert\(9\)' "and the log's lines"

# Message-ID lookup
mid=$(jq_py "$T/show.json" 'd["series"][0]["patches"][0]["msgid"]')
h=$("$PY" -c 'import sys
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$mid")
like "$(cat "$H/msgid/$h.html")" "url=../series/$FAILED.html" "msgid/HASH.html leads to the series"
is "$(jq_py "$H/msgid/${h:0:2}.json" 'd["'"$mid"'"]')" "$FAILED" "msgid/XX.json maps it"

# the demo's list (calc.lists.demo.example.org) is in no archive patchgate
# knows: without [report] archive_url its pages link none, and never lore
unlike "$(cat "$H/series/$FAILED.html")" 'lore\.kernel\.org' \
	"no archive link to lore for a list that is not there (no archive_url)"
like "$(cat "$H/series/$FAILED.html")" '<td class="links"><code class="msgid">[^<]*@demo\.example\.org</code>' \
	"each patch's Message-ID is shown instead, as text"

# a local job has no page of its own: its checks link to its log page
P outbox list --json >"$T/outbox.json"
like "$(cat "$T/outbox.json")" "https://ci.example.org/log/$FAILED-[0-9a-f]{16}\.html" \
	"[report] public_url: the check's target_url is the job's log page"
ok "which the site has" test -f "$H/$(grep -o "log/$FAILED-[0-9a-f]*\.html" "$T/outbox.json" | head -1)"

# incremental; a full build removes the pages nothing puts any more (a
# job's log, a Message-ID, a series gone), and only those
for f in log/sgone-0123456789abcdef.html msgid/0123456789abcdef.html series/sgone.html series/sgone.json; do
	echo stale >"$H/$f"
done
P report html --json "$H" >"$T/again.json"
is "$(jq_py "$T/again.json" '[d["written"], d["removed"]]')" "[0, 4]" \
	"a second build writes nothing, and removes the 4 stale pages"
ok "they are gone" test ! -e "$H/log/sgone-0123456789abcdef.html" -a ! -e "$H/msgid/0123456789abcdef.html" -a ! -e "$H/series/sgone.json"
P report html --json --series "$FAILED" "$H" >"$T/one.json"
is "$(jq_py "$T/one.json" '[d["put"], d["written"]]')" "[1, 0]" \
	"--series ID renders that series only, and nothing changed"
P reject "$HOSTILE" >/dev/null
P run -q >/dev/null 2>&1
P report html --json --series "$HOSTILE" "$H" >"$T/one.json"
w=$(jq_py "$T/one.json" 'd["written"]')
ok "a change rewrites its pages and the listings, not the site ($w files)" \
	test "$w" -gt 0 -a "$w" -lt 20
like "$(cat "$H/index.html")" "series/$HOSTILE.html.*rejected" "the index shows the change"
is "$("$PY" "$CHECK" links "$H")" "" "still no broken link"

done_testing
