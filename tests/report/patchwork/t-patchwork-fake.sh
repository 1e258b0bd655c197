#!/bin/bash
# t-patchwork-fake.sh - the fake Patchwork server (tests/fakes/patchwork.py)
# answers as ../shared/docs/patchwork.md part 1b says Patchwork 3.1.3 does:
# status codes, bodies, Link pagination, the msgid filter, permissions,
# trailing slashes, users and whose a token is.  Plus its test controls:
# faults, --state, and checks as the patch's page shows them.
. "$SRCDIR/tests/lib/tap.sh"

PY=${PGATE_PYTHON:-/usr/bin/python3}
FAKE=${PGATE_PW_FAKE:-$SRCDIR/tests/fakes/patchwork.py}
[ -x "$PY" ] || skip_all "needs $PY"
command -v curl >/dev/null || skip_all "needs the curl program"

tap_tmpdir
export no_proxy='*' NO_PROXY='*'
T_CI=0123456789abcdef0123456789abcdef01234567
T_OUT=fedcba9876543210fedcba9876543210fedcba98
T_BAD=baadf00dbaadf00dbaadf00dbaadf00dbaadf00d

# The seed: 260 patches in "demo" (more than one page even at 250), one in
# "other" with the same Message-ID as demo's first.
"$PY" - "$TAP_TMP/seed.json" <<EOF
import json, sys
patches = [{"id": i, "project": "demo", "msgid": "<bulk-%d@example.org>" % i,
            "series": 1, "number": i} for i in range(1, 261)]
patches[1]["msgid"] = "<odd+id/=&x@example.org>"
patches.append({"id": 900, "project": "other", "msgid": "<bulk-1@example.org>"})
json.dump({
  "users": [{"username": "ci", "token": "$T_CI"},
            {"username": "outsider", "token": "$T_OUT"}],
  "projects": [{"id": 1, "linkname": "demo", "maintainers": ["ci"]},
               {"id": 2, "linkname": "other", "maintainers": ["outsider"]}],
  "series": [{"id": 1, "project": "demo", "name": "bulk", "total": 260}],
  "patches": patches}, open(sys.argv[1], "w"))
EOF

FAKE_PID=
start_fake() {
	: >"$TAP_TMP/port"
	"$PY" "$FAKE" --seed "$TAP_TMP/seed.json" --state "$TAP_TMP/state.json" \
		>"$TAP_TMP/port" 2>>"$TAP_TMP/fake.err" &
	FAKE_PID=$!
	for _ in $(seq 100); do
		[ -s "$TAP_TMP/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$TAP_TMP/port")
	[ -n "$PORT" ] || bail "the fake did not start: $(cat "$TAP_TMP/fake.err")"
	B=http://127.0.0.1:$PORT
}
stop_fake() {
	[ -z "$FAKE_PID" ] || { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }
	FAKE_PID=
}
TAP_CLEANUP=stop_fake

# req METHOD PATH [CURL-ARGS...]: sets CODE, BODY (file) and HDRS (file)
BODY=$TAP_TMP/body HDRS=$TAP_TMP/headers
req() {
	local m=$1 p=$2
	shift 2
	CODE=$(curl -s -o "$BODY" -D "$HDRS" -w '%{http_code}' -X "$m" "$@" "$B$p")
}
post_json() {  # post_json PATH JSON [CURL-ARGS...]
	local p=$1 j=$2
	shift 2
	req POST "$p" -H 'Content-Type: application/json' --data-binary "$j" "$@"
}
js() {  # js EXPR: EXPR on the JSON body d
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(v if isinstance(v,str) else json.dumps(v))' "$BODY" "$1"
}
hdr() {  # hdr NAME: the header's value
	grep -i "^$1:" "$HDRS" | head -1 | sed 's/^[^:]*: *//; s/\r$//'
}
AUTH_CI=(-H "Authorization: Token $T_CI")
C=/api/1.3/patches/1/checks/

start_fake

# ---- URLs, versions, trailing slashes --------------------------------------
req GET /api/1.3/
is "$CODE $(js 'd["patches"]')" "200 $B/api/1.3/patches/" "API root lists the endpoints"
req GET /api/patches/1/
is "$CODE $(js 'd["url"]')" "200 $B/api/patches/1/" "/api/ is the latest version, URLs without a version"
req GET /api/1.4/patches/
like "$CODE $(hdr Content-Type)" '^404 text/html' "an unknown API version is Django's HTML 404"
req GET /patches/
like "$CODE $(hdr Content-Type)" '^404 text/html' "outside the API: HTML 404"
req GET '/api/1.3/patches?project=demo'
is "$CODE $(hdr Location)" "301 /api/1.3/patches/?project=demo" "APPEND_SLASH: GET without the slash is redirected, query kept"
post_json /api/1.3/patches/1/checks '{"state":"success"}' "${AUTH_CI[@]}"
c1="$CODE $(hdr Location)"
req GET /_fake/checks
is "$c1 $(js 'len(d)')" "301 /api/1.3/patches/1/checks/ 0" "a POST without the slash is redirected (301) and not stored"

# ---- pagination ------------------------------------------------------------
req GET /api/1.3/patches/
is "$CODE $(js 'len(d)') $(js 'd[0]["id"]')" "200 30 1" "30 per page by default, bare JSON array"
is "$(hdr Link)" "<$B/api/1.3/patches/?page=2>; rel=\"next\", <$B/api/1.3/patches/?page=1>; rel=\"first\", <$B/api/1.3/patches/?page=9>; rel=\"last\"" "Link on page 1: next, first (page=1, as Patchwork), last"
req GET '/api/1.3/patches/?page=2&project=demo'
is "$(hdr Link)" "<$B/api/1.3/patches/?page=3&project=demo>; rel=\"next\", <$B/api/1.3/patches/?project=demo>; rel=\"prev\", <$B/api/1.3/patches/?page=1&project=demo>; rel=\"first\", <$B/api/1.3/patches/?page=9&project=demo>; rel=\"last\"" "the prev link to page 1 drops page; other parameters kept, sorted"
req GET '/api/1.3/patches/?page=9'
is "$CODE $(js 'len(d)') $(js 'd[-1]["id"]')" "200 21 900" "the last page holds the rest"
like "$(hdr Link)" 'rel="prev"' "the last page links back"
if hdr Link | grep -q 'rel="next"'; then fail "no next link on the last page"; else pass "no next link on the last page"; fi
req GET '/api/1.3/patches/?page=10'
is "$CODE $(cat "$BODY")" '404 {"detail":"Invalid page."}' "a page past the end is 404 Invalid page."
req GET '/api/1.3/patches/?page=abc'
is "$CODE" 404 "a page that is no number is 404"
req GET '/api/1.3/patches/?per_page=1000'
is "$CODE $(js 'len(d)')" "200 250" "per_page is clamped to 250"
req GET '/api/1.3/patches/?per_page=0'
is "$(js 'len(d)')" 30 "per_page=0 is the default"
req GET '/api/1.3/patches/?per_page=7&project=demo'
is "$(js 'len(d)') $(hdr Link | sed 's/,.*//')" "7 <$B/api/1.3/patches/?page=2&per_page=7&project=demo>; rel=\"next\"" "per_page is kept in the links"

# ---- filters ---------------------------------------------------------------
req GET '/api/1.3/patches/?project=demo&msgid=bulk-1@example.org'
is "$(js '[p["id"] for p in d]')" "[1]" "msgid without brackets matches, project filters the cross-post"
req GET '/api/1.3/patches/?msgid=bulk-1@example.org'
is "$(js '[p["id"] for p in d]')" "[1, 900]" "msgid alone is not unique across projects"
req GET '/api/1.3/patches/?project=demo&msgid=%3Cbulk-1@example.org%3E'
is "$CODE $(cat "$BODY")" "200 []" "msgid with brackets matches nothing"
req GET '/api/1.3/patches/?project=demo&msgid=odd%2Bid%2F%3D%26x%40example.org'
is "$(js '[p["msgid"] for p in d]')" '["<odd+id/=&x@example.org>"]' "msgid percent-encoded matches"
req GET '/api/1.3/patches/?project=demo&msgid=odd+id/=&x@example.org'
is "$(js 'len(d)')" 0 "msgid not encoded ('+' is a space) matches nothing"
req GET '/api/1.1/patches/?project=demo&msgid=bulk-1@example.org'
is "$(js 'len(d)')" 30 "API 1.1 ignores msgid: the unfiltered list"
req GET '/api/1.2/patches/?project=DEMO&msgid=bulk-1@example.org'
is "$(js '[p["id"] for p in d]')" "[1]" "API 1.2 filters by msgid; project linkname is case-insensitive"
req GET '/api/1.3/patches/?project=nosuch'
is "$CODE $(cat "$BODY")" "200 []" "an invalid filter value is 200 [], not 400"
req GET '/api/1.3/series/1/'
is "$(js 'd["received_total"]') $(js 'd["patches"][1]["msgid"]')" "260 <odd+id/=&x@example.org>" "a series lists its patches with msgids"

# ---- posting checks: authentication and permission -------------------------
post_json $C '{"state":"success"}'
is "$CODE $(cat "$BODY")" '403 {"detail":"You do not have permission to perform this action."}' "no credentials: 403"
if grep -qi '^WWW-Authenticate' "$HDRS"; then fail "never a WWW-Authenticate header"; else pass "never a WWW-Authenticate header"; fi
post_json $C '{"state":"success"}' -H "Authorization: Token $T_BAD"
is "$CODE $(cat "$BODY")" '403 {"detail":"Invalid token."}' "bad token: 403 Invalid token., not 401"
req GET /api/1.3/patches/1/ -H "Authorization: Token $T_BAD"
is "$CODE $(cat "$BODY")" '403 {"detail":"Invalid token."}' "a bad token fails a GET too"
post_json $C '{"state":"success"}' -H "Authorization: Token $T_OUT"
is "$CODE $(cat "$BODY")" '403 {"detail":"You do not have permission to perform this action."}' "a valid token of a non-maintainer: 403"
post_json /api/1.3/patches/9999/checks/ '{"state":"success"}' -H "Authorization: Token $T_OUT"
is "$CODE $(cat "$BODY")" '404 {"detail":"Not found."}' "unknown patch: 404 before the permission check"
post_json $C '{"state":"success","context":"ci-build","target_url":"https://ci.example.org/1","description":" ok "}' "${AUTH_CI[@]}"
is "$CODE $(js '[d["state"], d["context"], d["target_url"], d["description"], d["user"]["username"]]')" \
	'201 ["success", "ci-build", "https://ci.example.org/1", "ok", "ci"]' "a maintainer's check: 201, fields stored (trimmed)"
is "$(hdr Location)" "$(js 'd["url"]')" "Location is the new check's URL"
like "$(js 'd["date"]')" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}$' "a check's date is naive UTC with microseconds"

# ---- posting checks: validation --------------------------------------------
post_json $C '{"context":"x"}' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"state":["A check must have a state."]}' "missing state"
post_json $C '{"state":"SUCCESS"}' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"state":["\"SUCCESS\" is not a valid choice."]}' "states are lowercase"
post_json $C '{"state":"passed","context":"a/b","target_url":"not a url"}' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"state":["\"passed\" is not a valid choice."],"target_url":["Enter a valid URL."],"context":["Enter a valid \"slug\" consisting of letters, numbers, underscores or hyphens."]}' "field errors together, per field"
long=$(printf 'c%.0s' $(seq 256))
post_json $C "{\"state\":\"success\",\"context\":\"$long\"}" "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"context":["Ensure this field has no more than 255 characters."]}' "context: at most 255"
url201="https://ci.example.org/$(printf 'u%.0s' $(seq 178))"
is "${#url201}" 201 "(a 201-character URL)"
post_json $C "{\"state\":\"success\",\"target_url\":\"$url201\"}" "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"target_url":["Ensure this field has no more than 200 characters."]}' "target_url: at most 200"
post_json $C '{"state":"success","target_url":"http://jenkins:8080/job/1/"}' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"target_url":["Enter a valid URL."]}' "a host without a TLD is no valid URL"
post_json $C '{"state":' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"detail":"JSON parse error - Expecting value: line 1 column 10 (char 9)"}' "malformed JSON"
post_json $C '{"state":3,"target_url":null,"description":null}' "${AUTH_CI[@]}"
is "$CODE $(js '[d["state"], d["context"], d["target_url"]]')" '201 ["fail", "default", null]' "integer states; context defaults to 'default'"
req POST $C -d 'state=warning&context=form' "${AUTH_CI[@]}"
is "$CODE $(js 'd["state"]')" "201 warning" "form-encoded bodies are accepted"
req POST $C --data-binary '{"state":"success"}' -H 'Content-Type:' "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '400 {"state":["A check must have a state."]}' "a body without a content type is not parsed"
req PUT /api/1.3/patches/1/checks/1/ "${AUTH_CI[@]}"
is "$CODE $(cat "$BODY")" '405 {"detail":"Method \"PUT\" not allowed."}' "checks are immutable: 405"

# ---- reading checks, users -------------------------------------------------
req GET "$C?state=success"
is "$CODE $(cat "$BODY")" "200 []" "the checks' state filter wants the integer"
req GET "$C?state=1"
is "$(js '[c["context"] for c in d]')" '["ci-build"]' "state=1 is success"
req GET "$C?user=ci&context=form"
is "$(js '[c["state"] for c in d]')" '["warning"]' "user and context filters"
req GET /api/1.3/users/
is "$CODE $(cat "$BODY")" '403 {"detail":"Authentication credentials were not provided."}' "users need authentication"
req GET /api/1.3/users/ "${AUTH_CI[@]}"
is "$CODE" 200 "users with a valid token: 200"
req GET /api/1.3/users/1/
is "$CODE" 403 "a user's detail needs authentication too"
req GET /api/1.3/users/1/ "${AUTH_CI[@]}"
is "$CODE $(js 'd["username"]') $(js 'sorted(d.get("settings", {}))')" \
	'200 ci ["items_per_page", "send_email", "show_ids"]' \
	"one's own user has settings: how a token's user is found"
req GET /api/1.3/users/2/ "${AUTH_CI[@]}"
is "$CODE $(js 'd["username"]') $(js '"settings" in d')" "200 outsider false" \
	"another user's detail has no settings"
req GET /api/1.1/users/1/ "${AUTH_CI[@]}"
is "$CODE $(js '"settings" in d')" "200 false" "nor has one's own before API 1.2"
req GET /api/1.3/users/1/ -H "Authorization: Token $T_BAD"
is "$CODE $(cat "$BODY")" '403 {"detail":"Invalid token."}' "a bad token: 403 Invalid token."
req GET /_fake/checks
is "$(js 'd[0]["shown"]')" "ci/ci-build" "the fake shows a check as USER/CONTEXT, as the patch's page does"
req GET /_fake/requests
is "$(grep -c "$T_CI" "$BODY")" 0 "the request log names the auth scheme, never the token"

# ---- patch states: PATCH /patches/ID/ and the events it records ------------
patch_json() {  # patch_json PATH JSON [CURL-ARGS...]
	local p=$1 j=$2
	shift 2
	req PATCH "$p" -H 'Content-Type: application/json' --data-binary "$j" "$@"
}
patch_json /api/1.3/patches/3/ '{"state":"accepted"}'
is "$CODE $(cat "$BODY")" '403 {"detail":"Authentication credentials were not provided."}' \
	"PATCH anonymous: 403 not authenticated"
patch_json /api/1.3/patches/3/ '{"state":"accepted"}' -H "Authorization: Token $T_OUT"
is "$CODE $(cat "$BODY")" '403 {"detail":"You do not have permission to perform this action."}' \
	"PATCH by a user who is no maintainer, delegate or submitter: 403"
patch_json /api/1.3/patches/99999/ '{"state":"accepted"}' -H "Authorization: Token $T_OUT"
is "$CODE" 404 "PATCH of an unknown patch: 404 before the permission check"
patch_json /api/1.3/patches/3/ '{"state":"merged"}' "${AUTH_CI[@]}"
is "$CODE $(js 'd["state"][0]')" "400 Invalid state merged. Expected one of: new, under-review, accepted, rejected, rfc, not-applicable, changes-requested, awaiting-upstream, superseded, deferred." \
	"an unknown state: 400 with the states there are"
patch_json /api/1.3/patches/3/ '{"state":2}' "${AUTH_CI[@]}"
is "$CODE" 500 "a state that is no string: 500, as StateField's data.lower()"
patch_json /api/1.3/patches/3/ '{"state":"Under Review","commit_ref":"  abc  ","name":"ignored"}' "${AUTH_CI[@]}"
is "$CODE $(js 'd["state"]') $(js 'd["commit_ref"]') $(js 'd["name"]')" "200 under-review abc patch 3" \
	"PATCH: the name slugified, commit_ref trimmed, read-only fields ignored"
patch_json /api/1.3/patches/3/ '{"state":"accepted"}' "${AUTH_CI[@]}"
patch_json /api/1.3/patches/3/ '{"commit_ref":"def"}' "${AUTH_CI[@]}"
patch_json /api/1.3/patches/4/ '{"state":"rfc"}' "${AUTH_CI[@]}"
patch_json /api/1.3/patches/3/ '{"delegate":1}' "${AUTH_CI[@]}"
is "$CODE" 501 "PATCH of the delegate: not implemented, says so"
req GET '/api/1.3/events/?patch=3&category=patch-state-changed'
is "$CODE $(js '[(e["category"], e["actor"]["username"], e["payload"]["previous_state"], e["payload"]["current_state"], e["payload"]["patch"]["id"]) for e in d]')" \
	'200 [["patch-state-changed", "ci", "under-review", "accepted", 3], ["patch-state-changed", "ci", "new", "under-review", 3]]' \
	"events: one per change of state (not of commit_ref), newest first, with the actor"
is "$(js 'sorted(d[0].keys())')" '["actor", "category", "date", "id", "payload", "project"]' "an event's fields"
req GET '/api/1.3/events/?per_page=1'
is "$(js 'len(d)') $(js 'd[0]["payload"]["patch"]["id"]')" "1 4" "events are paginated, newest first over every patch"
like "$(hdr Link)" 'rel="next"' "with a next link"
req GET '/api/1.1/events/?patch=3'
is "$(js '"actor" in d[0]') $(js 'len(d)')" "false 2" "API 1.1: events have no actor"
req GET '/api/1.3/events/?patch=nosuch'
is "$CODE $(cat "$BODY")" "200 []" "an invalid filter value: 200 []"
req GET '/api/1.3/events/?actor=outsider'
is "$(cat "$BODY")" "[]" "filter by actor"
req GET /_fake/events?patch=3
is "$(js '[(e["actor"], e["current_state"]) for e in d]')" '[["ci", "under-review"], ["ci", "accepted"]]' \
	"/_fake/events: the events, oldest first, with the actor's name"

# ---- faults ------------------------------------------------------------------
post_json /_fake/fault '{"kind":"status","status":503,"retry_after":7}'
req GET /api/1.3/patches/1/
is "$CODE $(hdr Retry-After)" "503 7" "fault: the next request gets 503"
req GET /api/1.3/patches/1/
is "$CODE" 200 "and the one after is served"
post_json /_fake/fault '{"kind":"drop"}'
curl -s -o /dev/null "$B/api/1.3/patches/1/"
is "$?" 52 "fault: a dropped connection (curl: empty reply)"
post_json /_fake/fault '{"kind":"down","seconds":1}'
curl -s -o /dev/null "$B/api/1.3/patches/1/"
r1=$?
sleep 1.2
req GET /api/1.3/patches/1/
is "$r1 $CODE" "52 200" "fault: down for a second, then up again"

# ---- --state: a killed fake keeps what was posted ----------------------------
req GET /_fake/checks
before=$(js 'len(d)')
stop_fake
start_fake
req GET /_fake/checks
is "$(js 'len(d)')" "$before" "after a restart with --state the $before checks are still there"

done_testing
