#!/bin/bash
# t-patchwork-real.sh - the pipeline's Patchwork reports against a real
# Patchwork 3.1.3 (../shared/servers/patchwork-3.1.3.tar.xz, extracted
# here at test time and run on loopback with Debian's Django 3.2, Django
# REST framework and django-filter, SQLite: ../shared/servers/README.md),
# started once for the whole script.  The fake (tests/fakes/patchwork.py)
# stays for what a real server cannot be made to do (lost answers, 5xx);
# this is the same contract checked against the real thing:
#
#  - the demo list goes in through Patchwork's own parsearchive, one
#    series held back (not parsed yet): run exits 75, and its reports
#    arrive once parsemail has it;
#  - every tested patch gets exactly one apply check and a build check
#    pending then final, per context, posted by the maintainer's token;
#  - a second run posts nothing; a fresh state directory posts nothing;
#  - a token whose user maintains no project: 403, said once (exit 78);
#  - set_state: v1 and v2 superseded by v3, each change an event by our
#    user; a patch a human moved first is left alone;
#  - per_page = 1: every list (checks, events, maintainers) over several
#    pages;
#  - several projects: the same mail in a second project gets nothing;
#  - and the fake, seeded with what the real server then holds, answers
#    the same requests alike (pw-compare.py).

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

TARBALL=$SRCDIR/../shared/servers/patchwork-3.1.3.tar.xz
[ -r "$TARBALL" ] ||
	skip_all "no $TARBALL (../shared is absent): the real Patchwork is not tested"
"$PY" -c 'import django, rest_framework, django_filters' 2>/dev/null ||
	skip_all "needs python3-django, python3-djangorestframework and python3-django-filters"
command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
command -v make >/dev/null && command -v cc >/dev/null || skip_all "needs make and cc"

T=$TAP_TMP
bash "$SRCDIR/fixtures/gen-demo.sh" "$T/d" >/dev/null || bail "gen-demo.sh failed"
LISTID=calc.lists.demo.example.org

# --- Patchwork 3.1.3, as ../shared/servers/README.md runs it -----------
mkdir "$T/pw" && tar -xJf "$TARBALL" -C "$T/pw" || bail "cannot extract $TARBALL"
export DJANGO_SETTINGS_MODULE=patchwork.settings.dev DATABASE_TYPE=sqlite3 \
	DATABASE_NAME=$T/pw.sqlite
PWPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PW=http://127.0.0.1:$PWPORT
manage() { (cd "$T/pw" && "$PY" manage.py "$@"); }
manage migrate --noinput >"$T/pw-setup.log" 2>&1 &&
	manage loaddata default_tags default_states >>"$T/pw-setup.log" 2>&1 ||
	bail "Patchwork's migrate failed: $(tail -5 "$T/pw-setup.log")"
TOK_CI=0123456789abcdef0123456789abcdef01234567
TOK_OUT=fedcba9876543210fedcba9876543210fedcba98
TOK_HUMAN=1111111111222222222233333333334444444444
manage shell -c "
from django.contrib.auth.models import User
from django.contrib.sites.models import Site
from rest_framework.authtoken.models import Token
from patchwork.models import Project
site = Site.objects.get(pk=1)
site.domain = site.name = '127.0.0.1:$PWPORT'
site.save()
calc = Project.objects.create(linkname='calc', name='calc', listid='$LISTID',
                              listemail='calc@lists.demo.example.org')
other = Project.objects.create(linkname='other', name='other', listid='other.lists.example.org',
                               listemail='other@lists.example.org')
for name, tok, projects in (('ci', '$TOK_CI', [calc, other]), ('outsider', '$TOK_OUT', []),
                            ('human', '$TOK_HUMAN', [calc])):
    u = User.objects.create_user(name, name + '@example.org', 'pw-' + name)
    Token.objects.create(user=u, key=tok)
    for p in projects:
        u.profile.maintainer_projects.add(p)
    u.profile.save()
" >>"$T/pw-setup.log" 2>&1 || bail "Patchwork's users and projects: $(tail -5 "$T/pw-setup.log")"
(cd "$T/pw" && exec "$PY" manage.py runserver "127.0.0.1:$PWPORT" --noreload) \
	>"$T/pw-server.log" 2>&1 &
PW_PID=$!
W=$(mktemp -d /tmp/pgate-pwreal.XXXXXX) && chmod 755 "$W"
TAP_CLEANUP="kill $PW_PID 2>/dev/null; wait 2>/dev/null; rm -rf '$W'"
for _ in $(seq 200); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$PW/api/")" = 200 ] && break
	sleep 0.1
done
is "$(curl -s -o /dev/null -w '%{http_code}' "$PW/api/")" 200 "Patchwork 3.1.3 answers on loopback"

# the list, as Patchwork's MTA hook feeds it: all but the docs series now
"$PY" - "$T/d/list.mbox" "$T/now.mbox" "$T/late.mbox" <<'PY'
import mailbox, sys
now, late = open(sys.argv[2], "wb"), open(sys.argv[3], "wb")
for m in mailbox.mbox(sys.argv[1]):
    out = late if "docs: describe the command line" in str(m["Subject"]) else now
    out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
PY
manage parsearchive --list-id "$LISTID" "$T/now.mbox" >"$T/parse1.log" 2>&1 ||
	bail "parsearchive: $(tail -3 "$T/parse1.log")"
# the docs series goes to the second project too (cross-posted)
manage parsearchive --list-id other.lists.example.org "$T/late.mbox" >"$T/parse2.log" 2>&1 ||
	bail "parsearchive: $(tail -3 "$T/parse2.log")"

# v2's first patch: a human maintainer moves it to changes-requested
api() {	# api PATH [CURL-ARGS...]: GET (or with -X ...) on /api/1.3/
	local p=$1
	shift
	curl -s "$@" "$PW/api/1.3/$p"
}
pid_of() {	# pid_of PROJECT SUBJECT-PART: the ids of its patches
	api "patches/?project=$1&per_page=250" | "$PY" -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if sys.argv[1] in p["name"]))' "$2"
}
V2=$(pid_of calc "v2,1/2")
[ -n "$V2" ] || bail "Patchwork did not parse v2"
is "$(api "patches/$V2/" -X PATCH -H "Authorization: Token $TOK_HUMAN" \
	-H 'Content-Type: application/json' --data '{"state": "changes-requested"}' |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])')" changes-requested \
	"a human sets v2's first patch to changes-requested"

printf '%s\n' "$TOK_CI" >"$T/token" && chmod 600 "$T/token"
printf '%s\n' "$TOK_OUT" >"$T/token-out" && chmod 600 "$T/token-out"
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
[patchwork]
url = $PW/
project = calc
token_file = $T/token
per_page = 1
set_state = true
lookup_retry_min = 1
lookup_retry_max = 1
EOF
S=$T/s
P() { pg --state "$S" --config "$T/conf" "$@"; }
# checks_of PROJECT: every check on the project's patches, one line each:
# "PATCH-NAME|USER|CONTEXT|STATE", in the order Patchwork stored them
checks_of() {
	"$PY" - "$PW" "$1" <<'PY'
import json, sys, urllib.request
base, project = sys.argv[1], sys.argv[2]
def get(url):
    out = []
    while url:
        r = urllib.request.urlopen(url)
        out += json.load(r)
        link = r.headers.get("Link") or ""
        url = None
        for part in link.split(","):
            if 'rel="next"' in part:
                url = part.split(";")[0].strip()[1:-1]
    return out
for p in get(base + "/api/1.3/patches/?project=%s&per_page=250" % project):
    for c in get(base + "/api/1.3/patches/%d/checks/?per_page=250" % p["id"]):
        print("%s|%s|%s|%s" % (p["name"], c["user"]["username"], c["context"], c["state"]))
PY
}

ok "ingest" P ingest "$T/d/list.mbox"
P run -q 2>"$T/run1.err"
is "$?" 75 "run exits 75: the docs series' reports wait for Patchwork to parse it"
like "$(P outbox --json)" 'no patch with msgid' "the outbox says why"
checks_of calc >"$T/checks1"
"$PY" - "$T/checks1" >"$T/c1.out" 2>&1 <<'PY'
import collections, sys
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    name, user, ctx, state = l.rstrip("\n").split("|")
    by[(name, user, ctx)].append(state)
bad = [(k, v) for k, v in by.items()
       if k[1] != "ci" or (k[2] == "apply" and v != ["success"]) or
          (k[2] == "build" and (len(v) != 2 or v[0] != "pending"))]
finals = sorted(v[-1] for k, v in by.items() if k[2] == "build")
print(finals, bad)
sys.exit(1 if bad or finals != ["fail", "success", "success", "success"] else 0)
PY
ok "each tested patch: one apply check, build pending then final, by ci" cat "$T/c1.out"
like "$(grep -c '' "$T/checks1")" '^1[0-9]$' "($(grep -c '' "$T/checks1") checks, over pages of one)"

# the docs series parsed: the next send posts its checks
manage parsearchive --list-id "$LISTID" "$T/late.mbox" >>"$T/parse1.log" 2>&1
sleep 1.1
ok "outbox send, once Patchwork has the mail" P outbox send
is "$(P outbox --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["outbox"]))')" 0 \
	"the outbox is empty"
checks_of calc >"$T/checks2"
is "$(grep '^docs' "$T/checks2" | cut -d'|' -f2- | tr '\n' ' ')" "ci|apply|success ci|build|success " \
	"the docs patch got its checks, final at once (its pending one was outdated in the outbox)"
n2=$(grep -c '' "$T/checks2")
is "$(checks_of other | grep -c '')" 0 "the same mail in project other got none"

ok "a second run" P run -q
is "$(checks_of calc | grep -c '')" "$n2" "posts nothing"
S2=$T/s2
pg --state "$S2" ingest "$T/d/list.mbox" >/dev/null
ok "a fresh state directory: run" pg --state "$S2" --config "$T/conf" run -q
is "$(checks_of calc | grep -c '')" "$n2" "posts nothing either (the newest check of each context is ours)"

# set_state: the superseded versions, each change an event by ci; the
# human's patch left alone
states() {
	api "patches/?project=calc&per_page=250" | "$PY" -c '
import json, sys
print(" ".join("%s=%s" % (p["name"].split("]")[0] + "]", p["state"]) for p in
               sorted(json.load(sys.stdin), key=lambda p: p["name"]) if "multiplication" in p["name"]))'
}
is "$(states)" "[1/2]=superseded [2/2]=superseded [v2,1/2]=changes-requested [v2,2/2]=superseded [v3,1/2]=new [v3,2/2]=new" \
	"v1 and v2 superseded by v3; the patch a human moved left alone"
api "events/?project=calc&category=patch-state-changed&per_page=250" >"$T/events.json"
is "$("$PY" -c '
import json, sys
ev = json.load(open(sys.argv[1]))
print(sorted("%s:%s->%s" % (e["actor"]["username"], e["payload"]["previous_state"], e["payload"]["current_state"]) for e in ev))' "$T/events.json")" \
	"['ci:new->superseded', 'ci:new->superseded', 'ci:new->superseded', 'human:new->changes-requested']" \
	"each change is an event; ours by ci, once"

# a token whose user maintains nothing: Patchwork's 403, said once
sed "s|^token_file = .*|token_file = $T/token-out|" "$T/conf" >"$T/conf-out"
S3=$T/s3
pg --state "$S3" ingest "$T/late.mbox" >/dev/null
pg --state "$S3" --config "$T/conf-out" run -q 2>"$T/out.err"
is "$?" 78 "a non-maintainer's token: run exits 78"
like "$(cat "$T/out.err")" "not a maintainer of project calc" "and says so"
is "$(api "patches/$(pid_of calc 'docs')/checks/" -H "Authorization: Token $TOK_OUT" -X POST \
	-H 'Content-Type: application/json' --data '{"state": "success", "context": "build"}' \
	-o /dev/null -w '%{http_code}')" 403 "(Patchwork itself: 403 to that user's check)"
is "$(checks_of calc | grep -c '')" "$n2" "nothing was posted with it"

# the fake against the real server: seeded with what the real one holds
# now, the same 28 requests (lists and pages, msgid lookups, checks
# posted well and badly, permissions, states, events) answer alike
export TOKENS="ci=$TOK_CI,outsider=$TOK_OUT"
"$PY" "$SRCDIR/tests/report/patchwork/pw-compare.py" seed "$PW" "$T/fake-seed.json" ||
	bail "pw-compare.py seed failed"
fake_start pwfake patchwork.py --seed "$T/fake-seed.json"
TAP_CLEANUP="kill $fake_pid 2>/dev/null; $TAP_CLEANUP"
"$PY" "$SRCDIR/tests/report/patchwork/pw-compare.py" compare "$PW" "$fake_url" >"$T/compare.out" 2>&1
ok "the fake answers as Patchwork 3.1.3 does" cat "$T/compare.out"
done_testing
