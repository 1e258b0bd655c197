#!/bin/bash
# t0740-site-truth - the site says what is true, run as a new user runs
# it (issue 44, "Broken"):
#  - from the working directory, with a relative --state (the default
#    is ./patchgate-state): the CI logs are still found, their pages
#    written and linked ("full log");
#  - a version that a newer one replaced is marked superseded, in the
#    index and on its page ("Superseded by vN"), also when every version
#    came before any pass (a replayed archive), and never listed "new";
#  - the interdiff and range-diff between versions that all came before
#    any pass, so that only the newest was applied (a replayed archive);
#  - a legal Message-ID with ' and & gets a working archive link,
#    percent-encoded and HTML-escaped, never href="#";
#  - a failed job's log page marks and lists the lines that say what
#    failed;
#  - a series page has the cover letter's text, each patch's diff
#    (folded), and the author git am records (the in-body From of mail
#    that B4 Relay sent).
. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/report/site/lib-site.sh"

demo_setup t0740
# the demo's list is in no archive patchgate knows (no link by default:
# t0700); the archive links checked here are lore's by configuration
printf '[report]\narchive_url = https://lore.kernel.org/r/{msgid}\n' >>"$T/conf"
# a one-patch series from a trusted sender whose Message-ID is legal
# (RFC 5322 dot-atom-text allows ' and &) and awkward in a URL
cat >>"$T/d/list.mbox" <<'EOF'
From mboxrd@z Thu Jan  1 00:00:00 1970
From: Pat O'Brien <pat@demo.example.org>
To: calc@lists.demo.example.org
List-Id: <calc.lists.demo.example.org>
Subject: [PATCH] README: a word on signs
Date: Mon, 1 Jan 2024 12:00:00 +0000
Message-ID: <o'brien&co.1@demo.example.org>

Signed-off-by: Pat O'Brien <pat@demo.example.org>
---
 README | 2 ++
 1 file changed, 2 insertions(+)

diff --git a/README b/README
--- a/README
+++ b/README
@@ -3,3 +3,5 @@ calc
 A tiny calculator for integers.
 
 Build with make, test with make check.
+
+Negative numbers work too.
--
2.39.2

EOF

# the same author's next patch, sent through B4 Relay: the From is the
# relay's, the in-body From the author's (what git am records)
cat >>"$T/d/list.mbox" <<'EOF'
From mboxrd@z Thu Jan  1 00:00:00 1970
From: Pat O'Brien via B4 Relay <devnull+pat.demo.example.org@kernel.org>
X-Original-From: Pat O'Brien <pat@demo.example.org>
Reply-To: pat@demo.example.org
To: calc@lists.demo.example.org
List-Id: <calc.lists.demo.example.org>
Subject: [PATCH] README: a word on zero
Date: Mon, 1 Jan 2024 13:00:00 +0000
Message-ID: <20240101-zero-v1-1@kernel.org>

From: Pat O'Brien <pat@demo.example.org>

Signed-off-by: Pat O'Brien <pat@demo.example.org>
---
 README | 2 ++
 1 file changed, 2 insertions(+)

diff --git a/README b/README
--- a/README
+++ b/README
@@ -3,3 +3,5 @@ calc
 A tiny calculator for integers.
 
 Build with make, test with make check.
+
+Dividing by zero is refused.
--
2.39.2

EOF

mkdir "$T/rel"
cd "$T/rel" || bail "no $T/rel"
R() { pg --state patchgate-state --config "$T/conf" "$@"; }
R ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"
R series list --all --json >"$T/all.json"
sid_of() {	# sid_of NAME VERSION
	jq_py "$T/all.json" "[s['id'] for s in d['series'] if s['name'] == '$1' and s['version'] == $2][0]"
}
V1=$(sid_of "calc: multiplication" 1)
V2=$(sid_of "calc: multiplication" 2)
V3=$(sid_of "calc: multiplication" 3)
OB=$(sid_of "README: a word on signs" 1)
ZERO=$(sid_of "README: a word on zero" 1)
ok "the three versions and the O'Brien series are there" \
	test -n "$V1" -a -n "$V2" -a -n "$V3" -a -n "$OB" -a -n "$ZERO"

# every version arrived before any pass: what a replay of lore gives
ok "report html before any pass" R report html html
row() {	# row SID: the index row of series SID, its state column as
	# "state=STATE"
	"$PY" - html/index.html "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
for tr in re.findall(r'<tr class="r-.*?</tr>', t, re.S):
    if 'series/%s.html' % sys.argv[2] in tr:
        cells = re.findall(r'<td[^>]*>(.*?)</td>', tr, re.S)
        print("state=" + re.sub(r'<[^>]+>', '', cells[1]).strip())
PY
}
is "$(row "$V1")" 'state=superseded' "before any pass, v1 is listed superseded"
unlike "$(row "$V1")" 'state=new' "and not new"
is "$(row "$V2")" 'state=superseded' "so is v2"
is "$(row "$V3")" 'state=new' "v3, the newest, is new"
p1=$(cat "html/series/$V1.html")
like "$p1" "<p class=\"superseded\">Superseded by <a href=\"$V2.html\">v2</a>; the newest is <a href=\"$V3.html\">v3</a>." \
	"v1's page names v2 and the newest, v3"
like "$(cat "html/series/$V2.html")" "Superseded by <a href=\"$V3.html\">v3</a>\\.<" \
	"v2's page names v3"
unlike "$(cat "html/series/$V3.html")" 'class="superseded"' "v3's page has no such notice"

# the archive link of a Message-ID with ' and &
page=$(cat "html/series/$OB.html")
like "$page" "href=\"https://lore.kernel.org/r/o%27brien&amp;co.1@demo.example.org\"" \
	"the O'Brien patch links to its archive copy, ' encoded, & escaped"
unlike "$page" 'href="#"' "no link of that page is refused"

# what a series page shows of the mail itself
like "$page" '<details class="diff" id="diff-1"><summary>diff of patch 1: \[PATCH\] README: a word on signs</summary><pre class="diff"> README \| 2 \+\+' \
	"each patch's diff, folded, from its diffstat"
like "$page" 'diff --git a/README b/README' "with the diff"
like "$page" '\+Negative numbers work too\.' "the whole diff"
author() {	# author PAGE: the author cells of its patches table
	"$PY" - "$1" <<'PY'
import html, re, sys
t = open(sys.argv[1]).read()
for tr in re.findall(r'<tr id="patch-\d+">(.*?)</tr>', t, re.S):
    print(html.unescape(re.findall(r'<td[^>]*>(.*?)</td>', tr, re.S)[2]))
PY
}
is "$(author "html/series/$ZERO.html")" "Pat O'Brien <pat@demo.example.org>" \
	"the author is the one git am records: the in-body From, not the relay"
like "$(cat "html/series/$V3.html")" '<h2 id="h-cover">Cover letter</h2>
<pre class="cover">v3: builds again; no undefined behaviour on overflow\.' \
	"the cover letter's text, its notes on the version"

R run -q >/dev/null 2>&1
ok "report html after a pass" R report html html
is "$(row "$V1")" 'state=superseded' "after the pass, v1 is still superseded"
# v1 and v2 were superseded before their turn: never applied by the
# pipeline, yet the pages show what changed (their patches applied
# in-process, onto the base v3 went onto)
R series show --json "$V2" >"$T/v2.json"
is "$(jq_py "$T/v2.json" '" ".join(k for k in d["series"][0]["stages"] if k.startswith("apply/"))')" "" \
	"v2 was never applied by the pipeline"
p3=$(cat "html/series/$V3.html")
like "$p3" 'Interdiff of the applied' "v3's page has the interdiff against v2 all the same"
like "$p3" 'diff --git a/calc.c b/calc.c' "a diff of the code"
like "$p3" '[0-9]+: [0-9a-f]{7} [=!] [0-9]+: [0-9a-f]{7} ' "and the patches paired, range-diff style"
like "$p3" '<span class="d[SC]">[0-9]+: [0-9a-f]{7} [=!] [0-9]+: [0-9a-f]{7} ' \
	"the pairs coloured as git range-diff colours them (same, changed)"
like "$p3" '<span class="dD">-	return a \* b;</span>' "the interdiff's deleted lines red"
like "$p3" '<span class="dA">\+	return \(long\)\(\(unsigned long\)a \* \(unsigned long\)b\);</span>' \
	"and its added lines green"
like "$(cat "html/series/$V2.html")" 'Interdiff of the applied' \
	"v2's page has its interdiff against v1, neither ever applied"
is "$(git -C "$T/d/repo.git" for-each-ref | grep -c "$V2")" 0 "and no ref names v2"
R report html --json html >"$T/again.json"
is "$(jq_py "$T/again.json" 'd["written"]')" 0 \
	"a second build writes nothing: the in-process commits are the same each time"
# the jobs' logs, with the state directory relative to the working one
R series show --json "$V3" >"$T/v3.json"
rel=$(jq_py "$T/v3.json" '[v["log_path"] for k, v in d["series"][0]["stages"].items() if k.startswith("ci/")][0]')
like "$rel" '^ci/local/[0-9a-f]+/log$' "the log path is relative to the state directory ($rel)"
ok "and the log is there" test -f "patchgate-state/$rel"
n=$(find html/log -name '*.html' 2>/dev/null | wc -l)
ok "log pages are written ($n)" test "$n" -gt 0
p3=$(cat "html/series/$V3.html")
like "$p3" 'href="\.\./log/[^"]+\.html[^"]*"' "v3's page links its job's log page"
ok "the linked log page is there" test -f "html/$(printf '%s' "$p3" | grep -o 'href="\.\./log/[^"#]*' | head -1 | sed 's|href="\.\./||')"
# a failed job's log page: the lines that say what failed are marked
# and listed above the log
FAILED=$(sid_of "calc: speed up addition" 1)
flog=$(ls html/log/"$FAILED"-*.html 2>/dev/null | head -1)
ok "the failed series has a log page" test -n "$flog"
like "$(cat "$flog")" '<mark class="bad">FAIL: 40 \+ 2 = 43, want 42</mark>' \
	"the failing test's line is marked"
like "$(cat "$flog")" '<mark class="bad">make: \*\*\* \[Makefile:[0-9]+: check\] Error 1</mark>' \
	"and make's"
like "$(cat "$flog")" '<p>Failing lines: <a href="#L[0-9]+">[0-9]+</a> <a href="#L[0-9]+">[0-9]+</a></p>' \
	"both listed, linked, above the log"
unlike "$(cat "$flog")" '<mark class="bad">== step' "a step's own lines are not marked"
# from another working directory, with the absolute state directory
cd / && ok "report html from elsewhere" pg --state "$T/rel/patchgate-state" --config "$T/conf" report html "$T/abs"
n2=$(find "$T/abs/log" -name '*.html' 2>/dev/null | wc -l)
is "$n2" "$n" "the same log pages from another working directory"
is "$("$PY" "$SRCDIR/tests/report/site/site-check.py" links "$T/rel/html")" "" "no broken link"

done_testing
