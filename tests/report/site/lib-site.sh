# lib-site.sh - what the site's tests share: the demo list
# (fixtures/gen-demo.sh) and the configuration that runs it through the
# pipeline; for t0700 and t0710, a hostile series added, and its site in
# $T/html, with a hostile line added to the log of the failed job.
# Source after tap.sh and pgate.sh.
#
#   demo_setup NAME     sets T, W (the steps' work root, under /tmp where
#                       the sandbox's user can reach it, removed on exit)
#                       and P(); the demo in $T/d; $T/conf runs it (append
#                       groups to it)
#   site_demo           demo_setup, then sets HOSTILE (the hostile
#                       series' id) and FAILED (the series whose make
#                       check fails)
#   browser ARGS...     headless $CHROMIUM with ARGS, as this machine
#                       needs it (a fresh profile; stderr to
#                       $T/chromium.log)
#   layout PAGE WIDTH [QUERY]
#                       what tests/report/site/layout.js measures of
#                       $H/PAGE (?QUERY) in a frame WIDTH px wide (JSON)
#   lf JSON KEY         a field of that JSON (a list: space-separated)

CHECK=$SRCDIR/tests/report/site/site-check.py

demo_setup() {
	command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
	command -v make >/dev/null && command -v cc >/dev/null ||
		skip_all "needs make and cc"
	T=$TAP_TMP
	bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null 2>&1 ||
		bail "gen-demo.sh failed"
	W=$(mktemp -d "/tmp/pgate-$1.XXXXXX") && chmod 755 "$W"
	TAP_CLEANUP="rm -rf '$W'"
	{
		echo "[apply]"
		echo "repo = $T/d/repo.git"
		echo "[trust]"
		echo "trusted = *@demo.example.org"
		echo "[pipeline]"
		echo "wait_complete = 0"
		echo "[ci.local]"
		echo "commands = build: make; check: make check"
		echo "timeout = 120"
		echo "work_root = $W"
	} >"$T/conf"
	P() { pg --state "$T/s" --config "$T/conf" "$@"; }
}

site_demo() {
	demo_setup site
	# a series whose every field a browser could run
	cat "$SRCDIR/tests/report/site/hostile.mbox" >>"$T/d/list.mbox"
	{
		echo "[report]"
		echo "public_url = https://ci.example.org/"
		# checks are queued (and never sent: nothing listens there)
		echo "[patchwork]"
		echo "url = http://127.0.0.1:9/"
		echo "project = calc"
	} >>"$T/conf"
	P ingest "$T/d/list.mbox" >/dev/null || bail "ingest failed"
	P run -q >/dev/null 2>&1
	P series list --all --json >"$T/all.json"
	HOSTILE=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if "alert(2)" in s["name"]][0]')
	FAILED=$(jq_py "$T/all.json" '[s["id"] for s in d["series"] if s["name"] == "calc: speed up addition"][0]')
	# a hostile log: what a build prints is as hostile as mail
	P series show --json "$FAILED" >"$T/failed.json"
	LOG=$(jq_py "$T/failed.json" '[v["log_path"] for k, v in d["series"][0]["stages"].items() if k.startswith("ci/")][0]')
	case $LOG in /*) ;; *) LOG=$T/s/$LOG ;; esac	# relative to the state directory
	[ -f "$LOG" ] || bail "no log at '$LOG'"
	printf '%s\n' '<script>alert(9)</script>' \
		'<a href="javascript:alert(10)">click</a> </pre><b onmouseover=alert(11)>' \
		"$(printf 'bad\001bytes\377\376 here')" >>"$LOG"
	P report html "$T/html" >/dev/null || bail "report html failed"
}

# what this machine's chromium needs: no sandbox (root), no GPU, and no
# background connections (the network is closed); a fresh profile each time
browser() {
	local prof
	prof=$(mktemp -d "$T/chrome.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$prof" "$@" 2>>"$T/chromium.log"
}

# layout: a copy of the page beside it, with tests/report/site/layout.js,
# which measures what is wider than the window
layout() {  # PAGE WIDTH [QUERY]: the JSON layout.js writes, the page in
	# a frame WIDTH wide (chromium's headless window is at least 500 px wide)
	local copy=${1%.html}.layout-test.html
	local harness=${1%.html}.layout-frame.html
	sed 's|</body>|<script src="file://'"$SRCDIR"'/tests/report/site/layout.js"></script></body>|' \
		"$H/$1" >"$H/$copy"
	printf '%s\n' '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">' \
		"<iframe src=\"$(basename "$copy")${3:+?$3}\" style=\"width:${2}px;height:900px;border:0\"></iframe>" \
		'<script>addEventListener("message", function (e) { document.body.setAttribute("data-layout", e.data); });</script>' \
		'</body></html>' >"$H/$harness"
	browser --window-size="$(( $2 < 500 ? 500 : $2 + 20 )),960" --virtual-time-budget=5000 \
		--dump-dom "file://$H/$harness" |
		"$PY" -c 'import html, re, sys
m = re.search(r"<body[^>]*data-layout=\"([^\"]*)\"", sys.stdin.read())
print(html.unescape(m.group(1)) if m else "none")'
	rm -f "$H/$copy" "$H/$harness"
}
lf() { "$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print(" ".join(map(str, d[sys.argv[2]])) if isinstance(d[sys.argv[2]], list) else d[sys.argv[2]])' "$1" "$2"; }
