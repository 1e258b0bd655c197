#!/bin/bash
# t0590-projects - many lists, trees and Patchwork projects in one
# instance ([project NAME], docs/config.md "Projects"; routing,
# docs/pipeline.md "Routing"), end to end on real public-inbox archives
# (public-inbox-init -V2, public-inbox-mda) of three lists:
#
#   netdev and bpf cross-post; both are project "net" (one repository,
#   branches net and net-next chosen by the subject's tag, Patchwork
#   project netdev); linux-rtc is project "rtc" (another repository,
#   Patchwork project linux-rtc, its checks' contexts prefixed "rtc").
#
#   S1 [PATCH net]       netdev + bpf     net: applied on net, once
#   S2 [PATCH net-next]  netdev           net: on net-next (needs a file
#                                         only net-next has)
#   S3 [PATCH]           linux-rtc        rtc
#   S4 [PATCH net-next]  netdev + linux-rtc  both projects, each once
#   S5 [PATCH wireless]  netdev           net: "no tree for tag wireless"
#
# Each message is stored once however many archives hold it; each
# series is tested and reported once per project it is in, to that
# project's Patchwork project only.  Also: `route`, `series show`, and
# `config check` of contrib/multi-project.conf.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

for t in public-inbox-init public-inbox-mda bwrap curl; do
	command -v $t >/dev/null || skip_all "needs $t"
done

T=$TAP_TMP
PI=$T/pi
mkdir -p "$PI" "$T/bin"
export PI_CONFIG=$PI/config PI_EMERGENCY=$PI/emergency
printf '#!/bin/sh\nexec cat\n' >"$T/bin/spamc"
chmod +x "$T/bin/spamc"
export PATH=$T/bin:$PATH
export GIT_AUTHOR_NAME=Dev GIT_AUTHOR_EMAIL=dev@example.org \
	GIT_COMMITTER_NAME=Dev GIT_COMMITTER_EMAIL=dev@example.org \
	GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
	GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
S=$T/state
P() { pg --state "$S" --config "$T/conf" "$@"; }

# ---- the repositories and the patches --------------------------------------

L=$T/linux
{
	git init -q -b master "$L" &&
	mkdir -p "$L/net" "$L/drivers/rtc" &&
	printf 'core\n' >"$L/net/core.c" &&
	printf 'rtc\n' >"$L/drivers/rtc/class.c" &&
	git -C "$L" add -A && git -C "$L" commit -qm base &&
	git -C "$L" branch net &&
	git -C "$L" checkout -qb net-next &&
	printf 'next\n' >"$L/net/next.c" &&
	git -C "$L" add -A && git -C "$L" commit -qm next &&
	git clone -q --bare "$L" "$T/rtc.git" &&
	# the patches: each on a scratch branch, formatted with its tag
	pt() {	# pt BASE NAME TAG FILE TEXT [FILE TEXT]...
		local base=$1 name=$2 tag=$3
		shift 3
		git -C "$L" checkout -q -b "w-$name" "$base" || return 1
		while [ $# -gt 0 ]; do
			printf '%s\n' "$2" >>"$L/$1" &&
			git -C "$L" add -A && git -C "$L" commit -qm "$name: $1" || return 1
			shift 2
		done
		mkdir -p "$T/p/$name" &&
		git -C "$L" format-patch -q --thread --subject-prefix="$tag" \
			-o "$T/p/$name" "$base..w-$name"
	}
	pt net s1 'PATCH net' net/core.c fix1 &&
	pt net-next s2 'PATCH net-next' net/next.c a net/next.c b &&
	pt master s3 PATCH drivers/rtc/class.c rtcfix &&
	pt master s4 'PATCH net-next' drivers/rtc/class.c both &&
	pt master s5 'PATCH wireless' net/core.c wifi &&
	git -C "$L" checkout -q master
} || bail "making the repository and patches failed"

# addressed as sent: To the first list, Cc the others
address() {	# address DIR TO [CC]
	local f
	for f in "$1"/*.patch; do
		sed -i "0,/^Subject:/s//To: $2${3:+\nCc: $3}\nSubject:/" "$f"
	done
}
address "$T/p/s1" netdev@vger.kernel.org bpf@vger.kernel.org
address "$T/p/s2" netdev@vger.kernel.org
address "$T/p/s3" linux-rtc@vger.kernel.org
address "$T/p/s4" netdev@vger.kernel.org linux-rtc@vger.kernel.org
address "$T/p/s5" netdev@vger.kernel.org

# ---- the archives ---------------------------------------------------------

pi_init() {	# pi_init NAME ADDRESS
	public-inbox-init -V2 -L basic "$1" "$PI/$1" "http://localhost/$1" "$2" &&
	git config -f "$PI_CONFIG" publicinboxmda.spamcheck none
}
mda() {	# mda ADDRESS FILE...
	local to=$1 f
	shift
	for f; do
		ORIGINAL_RECIPIENT=$to public-inbox-mda --no-precheck <"$f" || return 1
	done
}
{
	pi_init netdev netdev@vger.kernel.org &&
	pi_init bpf bpf@vger.kernel.org &&
	pi_init rtc linux-rtc@vger.kernel.org &&
	mda netdev@vger.kernel.org "$T"/p/s1/* "$T"/p/s2/* "$T"/p/s4/* "$T"/p/s5/* &&
	mda bpf@vger.kernel.org "$T"/p/s1/* &&
	mda linux-rtc@vger.kernel.org "$T"/p/s3/* "$T"/p/s4/*
} >"$T/pi.log" 2>&1 || { diag <"$T/pi.log"; bail "public-inbox failed"; }

# ---- Patchwork: two projects, each with its lists' patches -----------------

"$PY" - "$T/p" "$T/seed.json" <<'PY' || bail "seed failed"
import email, glob, json, os, sys
top, out = sys.argv[1], sys.argv[2]
lists = {"s1": ["netdev"], "s2": ["netdev"], "s3": ["linux-rtc"],
         "s4": ["netdev", "linux-rtc"], "s5": ["netdev"]}
seed = {"users": [{"username": "ci", "email": "ci@example.org",
                   "token": "tok-ci-0123"}],
        "projects": [{"linkname": "netdev", "name": "netdev",
                      "listid": "netdev.vger.kernel.org",
                      "listemail": "netdev@vger.kernel.org",
                      "maintainers": ["ci"]},
                     {"linkname": "linux-rtc", "name": "linux-rtc",
                      "listid": "linux-rtc.vger.kernel.org",
                      "listemail": "linux-rtc@vger.kernel.org",
                      "maintainers": ["ci"]}],
        "series": [], "patches": []}
n = 0
for name in sorted(lists):
    files = sorted(glob.glob(os.path.join(top, name, "*.patch")))
    for proj in lists[name]:
        n += 1
        seed["series"].append({"id": n, "project": proj, "name": name,
                               "version": 1, "total": len(files),
                               "submitter": "dev@example.org"})
        for k, f in enumerate(files, 1):
            m = email.message_from_binary_file(open(f, "rb"))
            seed["patches"].append({"project": proj,
                                    "msgid": m["Message-ID"].strip(),
                                    "name": m["Subject"],
                                    "submitter": "dev@example.org",
                                    "series": n, "number": k})
json.dump(seed, open(out, "w"))
PY
fake_start pw patchwork.py --seed "$T/seed.json" --state "$T/pw-state.json"
PW_PID=$fake_pid PW=$fake_url
W=$(mktemp -d /tmp/pgate-t0590.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP='kill $PW_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$W"'
printf 'tok-ci-0123\n' >"$T/token" && chmod 600 "$T/token"

cat >"$T/conf" <<EOF
# the defaults every project inherits
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci.local]
commands = build: true
timeout = 60
work_root = $W
[patchwork]
url = $PW/
token_file = $T/token
user = ci
lookup_retry_min = 1
lookup_retry_max = 1

[project net]
lists = netdev.vger.kernel.org; bpf.vger.kernel.org
addresses = netdev@vger.kernel.org; bpf@vger.kernel.org
apply.repo = $L
apply.branches = net-next
apply.tags = net:net; net-next:net-next
patchwork.project = netdev

[project rtc]
lists = linux-rtc.vger.kernel.org
addresses = linux-rtc@vger.kernel.org
apply.repo = $T/rtc.git
apply.branches = master
patchwork.project = linux-rtc
patchwork.context_prefix = rtc
EOF

P config check >"$T/check.out" 2>&1
is "$?" 0 "config check accepts the projects" || diag <"$T/check.out"
PATCHGATE_PW_TOKEN=x PATCHGATE_PW_RTC_TOKEN=y \
	pg config check --values-only --config "$SRCDIR/contrib/multi-project.conf" >"$T/c.out" 2>&1
is "$?" 0 "config check accepts contrib/multi-project.conf" || diag <"$T/c.out"
printf '[project net]\napply.brances = x\nstore.map_size = 1\n' >"$T/bad.conf"
pg config check --config "$T/bad.conf" >"$T/c.out" 2>&1
is "$?" 78 "config check refuses a project's wrong keys"
like "$(cat "$T/c.out")" "apply.brances: no such key .did you mean apply.branches" \
	"naming the key meant"
like "$(cat "$T/c.out")" "store.map_size: \\[store\\] is the whole instance's" \
	"and a group no project may set"

# ---- one store: every message once ----------------------------------------

pg --state "$S" replay --json "$PI/netdev" "$PI/bpf" "$PI/rtc" >"$T/replay.json" 2>"$T/replay.err"
is "$?" 0 "replay of the three archives" || diag <"$T/replay.err"
pg --state "$S" msg list --json >"$T/msgs.json"
is "$(jq_py "$T/msgs.json" 'str(len(d["messages"]))')" 6 \
	"6 messages stored once each (8 copies in the archives)"
pg --state "$S" series list --all --json >"$T/series.json"
sid() {	# sid NAME: the series whose name starts "NAME:"
	jq_py "$T/series.json" "[s['id'] for s in d['series'] if s['name'].startswith('$1:')][0]"
}
S1=$(sid s1) S2=$(sid s2) S3=$(sid s3) S4=$(sid s4) S5=$(sid s5)
diag "series: s1 $S1 s2 $S2 s3 $S3 s4 $S4 s5 $S5"

# ---- route: which projects, which branches, why ----------------------------

P route --json "$(jq_py "$T/msgs.json" "[m['msgid'] for m in d['messages'] if m['subject'].startswith('[PATCH net-next] s4')][0]")" >"$T/route4.json"
is "$(jq_py "$T/route4.json" '" ".join("%s:%s:%s" % (p["project"], t["target"], t["rule"]) for p in d["projects"] for t in p["targets"])')" \
	"net:net-next:tag rtc:master:branches" "route: s4 goes to net (net-next, by its tag) and rtc (master)"
like "$(jq_py "$T/route4.json" 'd["projects"][1]["why"]')" "^List-Id <linux-rtc.vger.kernel.org> matches|^Cc linux-rtc@vger.kernel.org" \
	"route says why rtc takes it"
P route --file "$T"/p/s5/*.patch >"$T/route5.out"
like "$(cat "$T/route5.out")" "not applied: no tree for tag wireless" "route --file: s5's tag names no tree"
like "$(cat "$T/route5.out")" "not project rtc" "and it is not rtc's"
P route --file "$T"/p/s1/*.patch >"$T/route1.out"
like "$(cat "$T/route1.out")" "target net \\(tag: \\[net\\] matches net\\)" "route --file: s1 to net by its tag"

# ---- one pass: each series once per project ---------------------------------

P run -q 2>"$T/run.err"
is "$?" 0 "run: every report sent" || diag <"$T/run.err"
curl -sf "$PW/_fake/checks" >"$T/checks.json"
curl -sf "$PW/api/1.3/patches/?per_page=100" >"$T/patches.json"
"$PY" - "$T/checks.json" "$T/patches.json" "$T/seed.json" >"$T/checks.out" 2>&1 <<'PY'
import collections, json, sys
checks = json.load(open(sys.argv[1]))
patches = {p["id"]: p for p in json.load(open(sys.argv[2]))}
by = collections.defaultdict(list)
for c in checks:
    p = patches[c["patch"]]
    by[(p["project"]["link_name"], p["name"].split(":")[0].split()[-1],
        c["context"], p["id"])].append(c["state"])
for k in sorted(by):
    print(" ".join(k[:3]), ",".join(by[k]))
PY
is "$(cat "$T/checks.out")" "linux-rtc s3 rtc-apply success
linux-rtc s3 rtc-build pending,success
linux-rtc s4 rtc-apply success
linux-rtc s4 rtc-build pending,success
netdev s1 apply success
netdev s1 build pending,success
netdev s2 apply success
netdev s2 apply success
netdev s2 build pending,success
netdev s2 build pending,success
netdev s4 apply success
netdev s4 build pending,success" \
	"each series checked once per project, in its own Patchwork project only (nothing for s5)"

P series show "$S4" >"$T/show4.txt"
P run -q 2>"$T/run2.err"
curl -sf "$PW/_fake/checks" >"$T/checks2.json"
is "$(jq_py "$T/checks2.json" 'str(len(d))')" "$(jq_py "$T/checks.json" 'str(len(d))')" \
	"a second run posts nothing"

# ---- what each project made of each series ---------------------------------

for n in 1 2 3 4 5; do
	eval "P series show --json \$S$n" >"$T/show$n.json"
done
# one line a series and project: "sN PROJECT STATE[ REASON] | TARGET:STATUS:RULE..."
"$PY" - "$T" >"$T/made.out" <<'PY'
import json, sys
for n in range(1, 6):
    s = json.load(open("%s/show%d.json" % (sys.argv[1], n)))["series"][0]
    for p in s.get("projects", []):
        st = p["stages"].get("pipeline", {})
        line = "s%d %s %s" % (n, p["project"], st.get("state", "-"))
        if st.get("reason"):
            line += " " + st["reason"]
        line += " | " + " ".join(
            "%s:%s:%s" % (k.split("/", 1)[1], v["status"], v.get("route", "-"))
            for k, v in sorted(p["stages"].items()) if k.startswith("apply/"))
        print(line)
PY
made() { grep "^$1 $2 " "$T/made.out" | cut -d' ' -f3-; }
state() { made "$@" | sed 's/ | .*//'; }
targets() { made "$@" | sed 's/.* | //'; }
like "$(state s1 net)" "^done build on net: success" "s1 (netdev + bpf): done in net"
is "$(targets s1 net)" "net:ok:tag" "s1 applied on net, chosen by its tag"
is "$(cut -d' ' -f1,2 "$T/made.out" | tr '\n' ' ')" "s1 net s2 net s3 rtc s4 net s4 rtc s5 net " \
	"each series in its projects only (s1 is not rtc's)"
is "$(targets s2 net)" "net-next:ok:tag" "s2 applied on net-next, by its tag"
is "$(targets s3 rtc)" "master:ok:branches" "s3 applied on rtc's master"
is "$(targets s4 net) / $(targets s4 rtc)" "net-next:ok:tag / master:ok:branches" \
	"s4 applied once in each project, each its own way"
is "$(state s5 net)" "skipped no tree for tag wireless" \
	"s5: a clear state, no failed apply"
is "$(jq_py "$T/show4.json" "' | '.join(p['project'] + ': ' + p['why'] for p in d['series'][0]['projects'])")" \
	"net: List-Id <netdev.vger.kernel.org> matches netdev.vger.kernel.org | rtc: List-Id <linux-rtc.vger.kernel.org> matches linux-rtc.vger.kernel.org" \
	"series show --json: its projects, and why (each copy's List-Id)"
like "$(cat "$T/show4.txt")" "project rtc: List-Id <linux-rtc.vger.kernel.org>" "series show: the same as text"
like "$(cat "$T/show4.txt")" "target chosen by rule tag: \\[net-next\\] matches net-next" \
	"series show: the rule of each target"
P status --json --project rtc >"$T/status-rtc.json"
is "$(jq_py "$T/status-rtc.json" 'str(d["series"]) + " " + json.dumps(d["states"], sort_keys=True)')" \
	'2 {"done": 2}' "status --project rtc: its two series"
P status --json --project net >"$T/status-net.json"
is "$(jq_py "$T/status-net.json" 'str(d["series"]) + " " + json.dumps(d["states"], sort_keys=True)')" \
	'4 {"done": 3, "skipped": 1}' "status --project net: its four"
P series list --project rtc >"$T/list-rtc.out"
is "$(cut -d' ' -f1 "$T/list-rtc.out" | sort | tr '\n' ' ')" \
	"$(printf '%s\n' "$S3" "$S4" | sort | tr '\n' ' ')" "series list --project rtc"
P series list --project bpf.vger.kernel.org >"$T/list-bpf.out"
is "$(cut -d' ' -f1 "$T/list-bpf.out" | tr '\n' ' ')" "" \
	"series list --project LIST-ID as before (the series' first List-Id)"

# ---- the static site: each project's state of a series ----------------------

P report html "$T/site" >/dev/null 2>"$T/site.err"
is "$?" 0 "report html" || diag <"$T/site.err"
is "$(sed -n 's/^<li>\(\(net\|rtc\): .*\)<\/li>$/\1/p' "$T/site/series/$S4.html" | tr '\n' '|')" \
	"net: done - build on net-next: success - 1 step(s) passed|rtc: done - build on master: success - 1 step(s) passed|" \
	"the series page: each project's state of s4"
is "$(sed -n 's/^<li>\(net: .*\)<\/li>$/\1/p' "$T/site/series/$S5.html")" \
	"net: skipped - no tree for tag wireless" "and of s5, in net only"

# ---- projects that set only `lists`: every copy's List-Id counts ----------
# s4 came through netdev first (its copy kept), then linux-rtc; s1 through
# netdev, then bpf: the store keeps each copy's List-Id.

{
	sed -n '1,/^\[project net\]/p' "$T/conf" | sed '$d'
	printf '[project net]\nlists = netdev.vger.kernel.org\napply.repo = %s\n' "$L"
	printf 'apply.branches = net-next\npatchwork.project = netdev\n'
	printf '[project bpf]\nlists = bpf.vger.kernel.org\napply.repo = %s\n' "$L"
	printf 'apply.branches = net\npatchwork.project = netdev\n'
	printf '[project rtc]\nlists = linux-rtc.vger.kernel.org\n'
	printf 'apply.repo = %s\napply.branches = master\n' "$T/rtc.git"
	printf 'patchwork.project = linux-rtc\n'
} >"$T/lists.conf"
PL() { pg --state "$S" --config "$T/lists.conf" "$@"; }
PL series list --project rtc >"$T/l-rtc.out"
is "$(cut -d' ' -f1 "$T/l-rtc.out" | sort | tr '\n' ' ')" \
	"$(printf '%s\n' "$S3" "$S4" | sort | tr '\n' ' ')" \
	"lists only: rtc has s3 and s4 (s4's linux-rtc copy came second)"
PL series list --project bpf >"$T/l-bpf.out"
is "$(cut -d' ' -f1 "$T/l-bpf.out" | tr '\n' ' ')" "$S1 " \
	"lists only: bpf has s1 (its bpf copy came second)"
PL series show --json "$S4" >"$T/l-show4.json"
is "$(jq_py "$T/l-show4.json" "' | '.join(p['project'] + ': ' + p['why'] for p in d['series'][0]['projects'])")" \
	"net: List-Id <netdev.vger.kernel.org> matches netdev.vger.kernel.org | rtc: List-Id <linux-rtc.vger.kernel.org> matches linux-rtc.vger.kernel.org" \
	"series show: s4 is net's and rtc's, each by its own List-Id"
PL route --json "$(jq_py "$T/msgs.json" "[m['msgid'] for m in d['messages'] if m['subject'].startswith('[PATCH net-next] s4')][0]")" >"$T/l-route4.json"
is "$(jq_py "$T/l-route4.json" '" ".join(p["project"] for p in d["projects"])')" "net rtc" \
	"route MSGID: s4 to net and rtc"
pg --state "$S" replay "$PI/rtc" "$PI/bpf" >/dev/null 2>&1
pg --state "$S" msg list --json >"$T/msgs2.json"
is "$(jq_py "$T/msgs2.json" 'str(len(d["messages"]))')" 6 "a second replay stores nothing"
pg --state "$S" store verify >"$T/verify.out" 2>&1
is "$?" 0 "store verify accepts the records with more List-Ids" || diag <"$T/verify.out"

# ---- without [project] groups: one implicit project, as before -----------

F=$T/flat
pg --state "$F" replay "$PI/netdev" "$PI/bpf" "$PI/rtc" >/dev/null 2>&1
cat >"$T/flat.conf" <<EOF
[apply]
repo = $L
branches = net-next; net
[trust]
everyone = true
[pipeline]
wait_complete = 0
[ci.local]
commands = build: true
timeout = 60
work_root = $W
EOF
pg --state "$F" --config "$T/flat.conf" run -q 2>"$T/flat.err"
is "$?" 0 "flat configuration: run" || diag <"$T/flat.err"
pg --state "$F" --config "$T/flat.conf" series show --json "$S5" >"$T/flat5.json"
is "$(jq_py "$T/flat5.json" "d['series'][0]['stages']['pipeline']['state'] + ' ' + ' '.join(sorted(d['series'][0]['stages'])) + ' ' + str('projects' in d['series'][0])")" \
	"done apply/net-next ci/net-next/build pipeline False" \
	"the implicit project: documents under SERIES/, no route, tags mean nothing"
pg --state "$F" --config "$T/flat.conf" route --json "$(jq_py "$T/msgs.json" "d['messages'][0]['msgid']")" >"$T/flat-route.json"
is "$(jq_py "$T/flat-route.json" "str([p['project'] for p in d['projects']]) + ' ' + ' '.join(t['target'] + ':' + t['rule'] for t in d['projects'][0]['targets'])")" \
	"[None] net-next:branches net:branches" "route: the only project, the branches in order"

done_testing
