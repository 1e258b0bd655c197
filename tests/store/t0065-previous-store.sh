#!/bin/bash
# t0065-previous-store - a store written by the previous release opens in
# this build and upgrades without loss.  The previous release's patchgate
# is built from the commit tests/store/previous-release names (git
# archive of this tree's own history, cached in build-previous/ beside the
# builds), and runs the demo list through the whole pipeline on the
# embedded defaults; this build runs the same on a store of its own.
# This build then reads both stores: every series, stage result, message
# and count is the same (times, durations, commits and the runner's
# scratch and log paths masked), `store verify` passes, a pass on the old
# store changes nothing and tests nothing again, and the site written
# from it has every page, the CI log pages included.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"
prev=$(sed -n 's/^commit \([0-9a-f]\{40\}\)$/\1/p' "$SRCDIR/tests/store/previous-release")
[ -n "$prev" ] || bail "tests/store/previous-release names no commit"
git -C "$SRCDIR" cat-file -e "$prev^{commit}" 2>/dev/null ||
	skip_all "the source tree has no git history with $prev (the previous release)"
T=$TAP_TMP

# --- the previous release's binary, built once --------------------------
cache=${PGATE_PREVIOUS_BUILD:-$SRCDIR/build-previous}/$prev
mkdir -p "$cache" || bail "cannot make $cache"
(
	flock 9
	[ -x "$cache/b/cli/patchgate" ] && exit 0
	rm -rf "$cache/src" "$cache/b" && mkdir "$cache/src" &&
	git -C "$SRCDIR" archive "$prev" | tar -x -C "$cache/src" &&
	cd "$cache/src" &&
	env -u CFLAGS -u LDFLAGS meson setup "$cache/b" -Dtests=false \
		-Dman=disabled -Dbash_completion=false >"$cache/setup.log" 2>&1 &&
	ninja -C "$cache/b" cli/patchgate >"$cache/build.log" 2>&1
) 9>"$cache.lock" ||
	bail "the previous release ($prev) did not build: $(tail -5 "$cache/build.log" "$cache/setup.log" 2>/dev/null)"
OLD=$cache/b/cli/patchgate
like "$("$OLD" --version)" '^patchgate ' "the previous release's patchgate is built"

ok "gen-demo.sh" bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" || bail "gen-demo.sh failed"
W=$(mktemp -d /tmp/pgate-t0065.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="rm -rf '$W'"
cat >"$T/conf" <<EOF
[apply]
repo = $T/d/repo.git
[trust]
trusted = *@demo.example.org
[pipeline]
wait_complete = 0
[ci.local]
commands = build: make; check: make check
timeout = 120
work_root = $W
EOF
ok "the previous release ingests the demo" "$OLD" --state "$T/old" --config "$T/conf" ingest "$T/d/list.mbox"
ok "and runs it" "$OLD" --state "$T/old" --config "$T/conf" run -q
ok "this build does the same on a store of its own" pg --state "$T/new" --config "$T/conf" ingest "$T/d/list.mbox"
ok "and runs it" pg --state "$T/new" --config "$T/conf" run -q

# --- this build reads the old store -------------------------------------
pg --state "$T/old" store upgrade >"$T/upgrade.out" 2>&1
is "$?" 0 "store upgrade on the old store: 0"
like "$(cat "$T/upgrade.out")" '^store is at schema [0-9]+ already$|^upgraded' \
	"and it says what it did: $(head -1 "$T/upgrade.out")"
ok "store verify passes on the old store" pg --state "$T/old" store verify

# snapshot STATE: what this build says of the store, one JSON document
# per line, with what differs from run to run by nature masked: times,
# durations, commits (their committer date is the time), job handles,
# trigger ids, the runner's scratch and log paths
snapshot() {
	{
		pg --state "$1" status --json
		pg --state "$1" series list --all --json
		for id in $(pg --state "$1" series list --all --json | "$PY" -c '
import json, sys
print(" ".join(s["id"] for s in json.load(sys.stdin)["series"]))'); do
			pg --state "$1" series show --json "$id"
		done
		pg --state "$1" msg list --json
	} | "$PY" -c '
import json, re, sys
TIMES = {"at", "since", "started", "finished", "updated", "created", "queued_at",
         "time", "duration_ms", "elapsed", "submitted", "ended"}
MASK = {"handle", "log_path", "trigger_id"}
HEX = re.compile(r"\b[0-9a-f]{40}\b")
def norm(v, key=None):
    if isinstance(v, dict):
        return {k: norm(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x, key) for x in v]
    if key in TIMES and isinstance(v, (int, float)):
        return "N"
    if key in MASK and v is not None:
        return "MASKED"
    if isinstance(v, str):
        v = v.replace(sys.argv[1], "STATE").replace(sys.argv[2], "WORK")
        v = HEX.sub("COMMIT", v)
        v = re.sub(r"\b[0-9]+(\.[0-9]+)? ?(ms|s)\b", "DUR", v)
        v = re.sub(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z", "TIME", v)
    return v
for line in sys.stdin:
    print(json.dumps(norm(json.loads(line)), sort_keys=True))
' "$1" "$W"
}
snapshot "$T/new" >"$T/new.snap"
snapshot "$T/old" >"$T/old.snap"
is "$(wc -l <"$T/old.snap")" "$(wc -l <"$T/new.snap")" \
	"as many documents from both stores ($(wc -l <"$T/new.snap"))"
diff -u "$T/new.snap" "$T/old.snap" >"$T/snap.diff"
is "$?" 0 "every series, stage result, message and count of the old store is as this build makes them"
sed 's/^/# /' "$T/snap.diff" | head -40
like "$(grep -c '"state": "done"' "$T/old.snap")" '^[1-9]' "(the old store has series tested to the end)"

# --- a pass on the old store: nothing to do ----------------------------
ls "$W" >"$T/work.before"
ok "a pass of this build on the old store" pg --state "$T/old" --config "$T/conf" run -q
snapshot "$T/old" >"$T/old2.snap"
ok "changes nothing" cmp "$T/old.snap" "$T/old2.snap"
ls "$W" >"$T/work.after"
ok "and tests nothing again (no new job directory)" cmp "$T/work.before" "$T/work.after"

# --- the site from the old store ---------------------------------------
ok "report html from the old store" pg --state "$T/old" report html "$T/site-old"
ok "and from the new one" pg --state "$T/new" report html "$T/site-new"
(cd "$T/site-old" && find . -type f | sort) >"$T/site-old.files"
(cd "$T/site-new" && find . -type f | sort) >"$T/site-new.files"
diff -u "$T/site-new.files" "$T/site-old.files" >"$T/site.diff"
is "$?" 0 "the same pages, the CI logs' included ($(wc -l <"$T/site-new.files") files)"
sed 's/^/# /' "$T/site.diff" | head -20
like "$(grep -c '/log' "$T/site-old.files")" '^[1-9]' "the old store's site has log pages"
done_testing
