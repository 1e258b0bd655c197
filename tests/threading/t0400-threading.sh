#!/bin/bash
# t0400-threading - threading against the generated list's ground truth.
#
# fixtures/gen-list.py writes, with the list, a manifest of every series
# version (its cover and patches by Message-ID), which version supersedes
# which and by what rules, and the pairs that no rule may link (two
# authors with one subject, a v2 of a similar subject whose v1 never
# came).  Ingest the list with threading on and compare:
#  - every series version of the manifest is one of our series, with
#    exactly its members (cover and patches);
#  - every supersedes link of the manifest is ours, with a compatible
#    rule (manifest -> ours: change-id -> change-id, in-reply-to ->
#    in-reply-to, partial-reroll -> in-reply-to (and the series flagged
#    partial_reroll), resend -> resend, subject-author -> subject);
#  - we make no other link, and none between a not_linked pair;
#  - rethread gives the same series.
# Recall and precision are printed as diagnostics; both must be 100%
# (no exception is argued: there is none to argue on these lists).

. "${SRCDIR:?}/tests/lib/tap.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
command -v git >/dev/null || skip_all "needs git"
tap_tmpdir
export HOME=$TAP_TMP TMPDIR=$TAP_TMP LC_ALL=C TZ=UTC
T=$TAP_TMP
pg() { "${PATCHGATE:?}" --state "$T/state" "$@"; }

ok "gen-list.py --messages 400 --seed 7" \
	"$PY" "$SRCDIR/fixtures/gen-list.py" --quiet --messages 400 --seed 7 \
	--out "$T/list.mbox" --manifest "$T/m.json" --repo "$T/repo.git" ||
	bail "gen-list.py failed"
ok "ingest with threading" pg ingest --json "$T/list.mbox" || bail "ingest failed"
pg series list --all --json >"$T/series.json"

"$PY" - "$T/m.json" "$T/series.json" >"$T/check.out" 2>&1 <<'EOF'
import json, sys

man = json.load(open(sys.argv[1]))
ours = json.load(open(sys.argv[2]))["series"]
byid = {s["id"]: s for s in ours}
of_msg = {}
for s in ours:
    for p in s["patches"]:
        of_msg[p["msgid"]] = s["id"]
    if s["cover"]:
        of_msg[s["cover"]] = s["id"]

def members(s):
    return {p["msgid"] for p in s["patches"]} | ({s["cover"]} if s["cover"] else set())

# series versions and their members
key2id, bad = {}, []
for v in man["series"]:
    want = {m for m in v["patches"] if m} | ({v["cover"]} if v["cover"] else set())
    sids = {of_msg.get(m) for m in want}
    if len(sids) != 1 or None in sids:
        bad.append("%s: spread over %s" % (v["key"], sorted(map(str, sids))))
        continue
    sid = sids.pop()
    if members(byid[sid]) != want:
        bad.append("%s: members differ: %s" % (v["key"], sorted(members(byid[sid]) ^ want)))
        continue
    key2id[v["key"]] = sid
id2key = {i: k for k, i in key2id.items()}
print("series %d/%d with exactly the manifest's members" % (len(key2id), len(man["series"])))
for b in bad:
    print("  wrong: " + b)

# links: recall over the manifest's, precision over ours
ours_rule = {"change-id": "change-id", "in-reply-to": "in-reply-to",
             "partial-reroll": "in-reply-to", "resend": "resend",
             "subject-author": "subject"}
want = {}
for v in man["series"]:
    if v["supersedes"]:
        want[(v["key"], v["supersedes"])] = v
found = 0
for (k, old), v in sorted(want.items()):
    s = byid.get(key2id.get(k))
    why = None
    if s is None or s["supersedes"] is None or s["supersedes"] != key2id.get(old):
        why = "not linked (ours: %s)" % (s and s["supersedes"],)
    elif s["version_link_reason"] not in {ours_rule[r] for r in v["supersede_rules"]}:
        why = "rule %s, manifest %s" % (s["version_link_reason"], v["supersede_rules"])
    elif v["partial"] and not s["partial_reroll"]:
        why = "not flagged partial_reroll"
    elif v["partial"] and (not s["reroll"] or s["reroll"]["of"] != s["supersedes"]):
        why = "reroll.of is %r, not the series it supersedes" % (s["reroll"],)
    elif v["partial"] and (
            [p["number"] for p in s["reroll"]["patches"]] !=
            [p["number"] for p in byid[s["supersedes"]]["patches"]] or
            {p["msgid"] for p in s["reroll"]["patches"] if p["series"] == s["id"]} !=
            {p["msgid"] for p in s["patches"]}):
        why = "reroll.patches is not the old series with this one's patches swapped in"
    elif byid[s["supersedes"]]["superseded_by"] != s["id"]:
        why = "superseded_by of %s is not %s" % (old, k)
    if why:
        print("  missed %s -> %s: %s" % (k, old, why))
    else:
        found += 1
links = [(s["id"], s["supersedes"]) for s in ours if s["supersedes"]]
right = 0
for a, b in links:
    if (id2key.get(a), id2key.get(b)) in want:
        right += 1
    else:
        print("  extra %s -> %s (%s): %r | %r" % (id2key.get(a, a), id2key.get(b, b),
              byid[a]["version_link_reason"], byid[a]["name"], byid[b]["name"]))
bad_nl = 0
for a, b in man["not_linked"]:
    ia, ib = key2id.get(a), key2id.get(b)
    if ia and ib and ib in (byid[ia]["supersedes"], byid[ia]["superseded_by"]):
        print("  not_linked pair linked: %s %s" % (a, b))
        bad_nl += 1
print("recall %d/%d = %.1f%%" % (found, len(want), 100.0 * found / max(len(want), 1)))
print("precision %d/%d = %.1f%%" % (right, len(links), 100.0 * right / max(len(links), 1)))
print("not_linked pairs linked: %d of %d" % (bad_nl, len(man["not_linked"])))
sys.exit(0 if not bad and found == len(want) and right == len(links) and
         bad_nl == 0 and len(want) > 0 and man["not_linked"] else 1)
EOF
rc=$?
diag <"$T/check.out"
if [ $rc -eq 0 ]; then
	pass "series, members and version links as in the manifest"
else
	fail "series, members and version links as in the manifest"
fi

pg series list --all --json >"$T/before.json"
ok "rethread" pg rethread
pg series list --all --json >"$T/after.json"
ok "rethread gives the same series" cmp "$T/before.json" "$T/after.json"

# A series record that no longer decodes: a review of one of its patches is
# stored anyway (exit 0, one line on stderr), later mail waits for the
# rethread, which repairs the series and takes the review's trailer in.
if command -v mdb_load >/dev/null; then
	. "$SRCDIR/tests/lib/store-corrupt.sh"
	read -r sid pmid < <(first_patched "$T/after.json")
	corrupt_record "$T/state/store" series "$sid"
	review() { review_of "$pmid" "$1"; }
	review skip-1@example.org | pg deliver --json >"$T/d1.json" 2>"$T/d1.err"
	is "$?" 0 "corrupt series record: deliver still stores the review (exit 0)"
	like "$(cat "$T/d1.json")" '"threading": *"skipped"' "deliver --json says threading was skipped"
	is "$(grep -c '' "$T/d1.err")" 1 "one line on stderr"
	like "$(cat "$T/d1.err")" "^patchgate: deliver: stored without threading \(.*\); run 'patchgate rethread'" "it says why and what to run"
	review skip-2@example.org | pg deliver --json >"$T/d2.json" 2>"$T/d2.err"
	is "$?" 0 "the next delivery is stored"
	like "$(cat "$T/d2.json")" '"threading": *"stale"' "and waits for the rethread"
	like "$(cat "$T/d2.err")" "^patchgate: deliver: the series are out of date; run 'patchgate rethread'$" "which stderr says"
	review skip-2@example.org | pg deliver >/dev/null 2>"$T/d2b.err"
	is "$(cat "$T/d2b.err")" "" "a duplicate stores nothing and says nothing"
	pg series list >/dev/null 2>"$T/list.err"
	like "$(cat "$T/list.err")" "run 'patchgate rethread'" "series list warns"
	ok "rethread repairs it" pg rethread
	pg series show "$sid" --json >"$T/show.json"
	like "$(cat "$T/show.json")" 'rita@example.org' "the series has the review's trailer"
	review skip-3@example.org | pg deliver --json >"$T/d3.json" 2>"$T/d3.err"
	like "$(cat "$T/d3.json")" '"threading": *"done"' "threading goes on after the rethread"
	is "$(cat "$T/d3.err")" "" "and says nothing"

	# A message record that no longer decodes (a patch of another series):
	# a review of it is threaded at once, and the rethread leaves it out
	# and says so, instead of failing.
	read -r _ pmid < <(first_patched "$T/after.json" "$sid")
	num=$(pg msg list --json | "$PY" -c '
import json, sys
print([m["num"] for m in json.load(sys.stdin)["messages"] if m["msgid"] == sys.argv[1]][0])' "$pmid")
	corrupt_record "$T/state/store" messages "$("$PY" -c '
import sys
print("".join("\\%02x" % b for b in int(sys.argv[1]).to_bytes(8, "big")))' "$num")"
	review skip-4@example.org | pg deliver --json >"$T/d4.json" 2>"$T/d4.err"
	is "$?" 0 "corrupt message record: a review of it is stored (exit 0)"
	like "$(cat "$T/d4.json")" '"threading": *"done"' "and threaded"
	is "$(cat "$T/d4.err")" "" "with nothing on stderr"
	pg rethread --json >"$T/rt.json" 2>"$T/rt.err"
	is "$?" 0 "rethread leaves the record out (exit 0)"
	like "$(cat "$T/rt.json")" '"unreadable": *1' "rethread --json counts it"
	is "$(cat "$T/rt.err")" "patchgate: rethread: 1 message record does not decode and was left out (message $num)" "and stderr names it"
	pg msg list --json >"$T/ml.json" 2>"$T/ml.err"
	is "$?" 0 "msg list goes on past it"
	like "$(cat "$T/ml.json")" "\"unreadable\": *\\[$num\\]" "msg list --json names it"
	is "$(cat "$T/ml.err")" "patchgate: msg list: message $num: message record has an unknown format" "msg list says so on stderr"
	pg series list >/dev/null 2>"$T/list2.err"
	is "$(cat "$T/list2.err")" "" "series list has nothing to warn of"
else
	skip "a corrupt series record" "needs mdb_load (lmdb-utils)"
fi

# series show explains its link: the rule, the line read, and why the
# series a reference link names is not the predecessor (docs/threading.md,
# "What series show says"; the PolarFire covers of linux-rtc).
pf() {	# pf ID SUBJECT DAY BODY
	printf 'From conor Mon Jan  1 00:00:00 2024\nFrom: Conor Dooley <conor.dooley@microchip.com>\nMessage-ID: <%s>\nSubject: %s\nDate: Wed, %s Apr 2022 08:58:27 +0100\nList-ID: <linux-rtc.vger.kernel.org>\n\n%b\n\n' "$@"
}
{
	pf refclk-1@microchip.com "[PATCH 1/1] clk: microchip: add the rtc reference clock" 4 \
		"Add it.\n\nSigned-off-by: Conor Dooley <conor.dooley@microchip.com>\n---\n clk.c | 1 +\n\ndiff --git a/clk.c b/clk.c\n--- a/clk.c\n+++ b/clk.c\n@@ -1 +1,2 @@\n x\n+refclk"
	pf fixes-2@microchip.com "[PATCH v2 1/1] More PolarFire SoC Fixes for 5.18" 12 \
		"Fix the fic clocks.\n\nSigned-off-by: Conor Dooley <conor.dooley@microchip.com>\n---\nChanges since v1:\nI have merged the rtc reference changes\n[1] with these fixes for 5.18.\n\n[1] https://lore.kernel.org/linux-riscv/refclk-1@microchip.com\n\n clk.c | 1 +\n\ndiff --git a/clk.c b/clk.c\n--- a/clk.c\n+++ b/clk.c\n@@ -1 +1,2 @@\n x\n+fic"
} >"$T/pf.mbox"
pgf() { "${PATCHGATE:?}" --state "$T/pf" "$@"; }
ok "ingest the PolarFire covers" pgf ingest "$T/pf.mbox"
fsid=$(pgf series list --all --json | "$PY" -c '
import json, sys
print([s["id"] for s in json.load(sys.stdin)["series"] if s["version"] == 2][0])')
pgf series show "$fsid" >"$T/pf-show.txt"
like "$(cat "$T/pf-show.txt")" 'link reference <refclk-1@microchip.com>: \[1\] with these fixes for 5.18.' "series show: the link and the line read"
like "$(cat "$T/pf-show.txt")" 'not s[0-9a-f]* \(v1\): link is a reference: no version wording: "\[1\] with these fixes' "series show: why the v1 it names is not its predecessor"
unlike "$(cat "$T/pf-show.txt")" '^supersedes' "and it supersedes nothing"
pgf series show "$fsid" --json >"$T/pf-show.json"
is "$("$PY" -c '
import json, sys
s = json.load(open(sys.argv[1]))["series"][0]
print(s["explain"]["rejected"][0]["reason"], s["references"])' "$T/pf-show.json")" \
	"link is a reference: no version wording ['refclk-1@microchip.com']" "series show --json: the same, and the references"

done_testing
