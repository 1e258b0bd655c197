#!/bin/bash
# t0610-trust - issue #25, findings 3 and 4: forged trust and forged
# approval, against `patchgate run` with a real configuration ([trust]
# trusted and approvers globs, the local CI backend), once as root and
# once as an unprivileged user (tests/lib/unpriv.sh).
#
# Finding 3: GMime reads `alice@demo.example.org@untrusted.example.net`,
# `undisclosed:; alice@...` and `<alice@...>x@untrusted...` as
# alice@demo.example.org, where the MTA's SPF/DKIM/DMARC checks saw
# untrusted.example.net.  Each form, on a patch, must leave the series
# awaiting approval (not applied, not tested) and, on a maintainer's
# reply, must not approve.  So must two From fields, and a trusted Sender
# or Reply-To.  Replies are ordered by arrival: an older reply dated 2030
# loses to a newer one.
# Finding 4: a reply that quotes the sender's "patchgate: approve" below
# -----Original Message-----, an "On ... wrote:" line (one or two lines)
# or an Outlook From:/Sent: block does not approve.
# [trust] require_authentication: a reply approves, and a trusted sender's
# series runs, only with the local MTA's Authentication-Results on top
# saying pass for the From domain; a forged one below it, one of another
# authserv-id, or none, is refused.
#
# The controls: the record's lenient from_email of every forged form is
# the trusted address (what the old decision trusted), a real trusted
# sender's series runs, a real approver's reply approves, and with
# require_authentication the good header does.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
export GIT_AUTHOR_NAME=Maintainer GIT_AUTHOR_EMAIL=maint@demo.example.org
export GIT_COMMITTER_NAME=Maintainer GIT_COMMITTER_EMAIL=maint@demo.example.org

# the CI job runs as an unprivileged user (nobody as root, the user
# itself otherwise): everything it reaches must be open to it
B=$(mktemp -d /tmp/pgate-t0610.XXXXXX) || bail "mktemp"
chmod 755 "$B"
TAP_CLEANUP='rm -rf "$B"'

ALICE='Alice <alice@demo.example.org>'
MAINT='Maintainer <maint@demo.example.org>'
MALLORY='Mallory <mallory@untrusted.example.net>'
MTA=mx.demo.example.org

# ---- mail ------------------------------------------------------------

# patch FROM-LINES MSGID NAME: a one-patch series adding files/NAME.txt;
# FROM-LINES are the header lines before To: (the From field and more)
patch() {
	local from=$1 id=$2 name=$3 blob
	blob=$(printf '%s\n' "$name" | git hash-object --stdin | cut -c1-7)
	printf 'From mboxrd@z Thu Jan  1 00:00:00 1970\n'
	printf '%s\n' "$from"
	printf 'To: list@demo.example.org\nSubject: [PATCH] files: %s\n' "$name"
	printf 'Date: Mon, 2 Dec 2024 10:00:00 +0000\nMessage-ID: <%s>\n\n' "$id"
	printf 'Add %s.\n\nSigned-off-by: A U Thor <a@demo.example.org>\n---\n' "$name"
	printf ' files/%s.txt | 1 +\n 1 file changed, 1 insertion(+)\n' "$name"
	printf ' create mode 100644 files/%s.txt\n\n' "$name"
	printf 'diff --git a/files/%s.txt b/files/%s.txt\n' "$name" "$name"
	printf 'new file mode 100644\nindex 0000000..%s\n--- /dev/null\n' "$blob"
	printf '+++ b/files/%s.txt\n@@ -0,0 +1 @@\n+%s\n-- \n2.39.5\n\n' "$name" "$name"
}

# reply FROM-LINES MSGID PARENT DATE BODY: the next reply to arrive, a
# file of its own in $d/replies (delivered in name order)
reply() {
	local f
	f=$d/replies/$(printf '%03d' $(($(ls "$d/replies" | wc -l) + 1))).eml
	reply_text "$@" >"$f"
}
reply_text() {
	printf '%s\n' "$1"
	printf 'To: list@demo.example.org\nSubject: Re: [PATCH] files\n'
	printf 'Date: %s\nMessage-ID: <%s>\nIn-Reply-To: <%s>\nReferences: <%s>\n\n' \
		"$4" "$2" "$3" "$3"
	printf '%s\n' "$5"
}

D1='Wed, 4 Dec 2024 10:00:00 +0000'
D2='Thu, 5 Dec 2024 10:00:00 +0000'
D2030='Mon, 2 Dec 2030 10:00:00 +0000'
AR_GOOD="Authentication-Results: $MTA; dkim=pass (2048-bit key)
 header.d=demo.example.org header.i=@demo.example.org header.b=Xy/9+a=;
 spf=pass smtp.mailfrom=demo.example.org"
AR_DMARC="Authentication-Results: $MTA;
 dmarc=pass (p=reject dis=none) header.from=demo.example.org"
AR_NONE="Authentication-Results: $MTA; dkim=none; spf=softfail smtp.mailfrom=untrusted.example.net"
AR_OTHER="Authentication-Results: mx.untrusted.example.net; dkim=pass header.d=demo.example.org"

# The series of the first configuration (no require_authentication):
# NAME (the file it adds), its From lines, and what must become of it.
write_list() {
	local d=$1
	{
		patch "From: $ALICE" p-real@demo.example.org real
		patch "From: alice@demo.example.org@untrusted.example.net" p-atat@x atat
		patch "From: Alice <alice@demo.example.org@untrusted.example.net>" p-atat2@x atattwo
		patch "From: undisclosed:; alice@demo.example.org" p-group@x group
		patch "From: <alice@demo.example.org>x@untrusted.example.net" p-angle@x angle
		patch "From: $ALICE
From: $MALLORY" p-twofrom@x twofrom
		patch "From: $MALLORY
Sender: $ALICE
Reply-To: $ALICE" p-sender@x sender
		# untrusted series, each to be answered by mail
		patch "From: $MALLORY" a-real@x approved
		patch "From: $MALLORY" a-atat@x replyatat
		patch "From: $MALLORY" a-group@x replygroup
		patch "From: $MALLORY" a-angle@x replyangle
		patch "From: $MALLORY" a-date@x dated
		patch "From: $MALLORY" a-orig@x original
		patch "From: $MALLORY" a-wrote@x wrote
		patch "From: $MALLORY" a-wrote2@x wrotetwo
		patch "From: $MALLORY" a-outlook@x outlook
	} >"$d/list.mbox"
	# the replies, in the order they arrive
	reply "From: $MAINT" r-real@demo.example.org a-real@x "$D1" \
		"Looks fine.

  Patchgate: Approve  "
	reply "From: maint@demo.example.org@untrusted.example.net" r-atat@x a-atat@x "$D1" \
		"patchgate: approve"
	reply "From: undisclosed:; maint@demo.example.org" r-group@x a-group@x "$D1" \
		"patchgate: approve"
	reply "From: <maint@demo.example.org>x@untrusted.example.net" r-angle@x a-angle@x "$D1" \
		"patchgate: approve"
	# the maintainer approved first (a clock in 2030), then took it back
	reply "From: $MAINT" r-date1@demo.example.org a-date@x "$D2030" \
		"patchgate: approve"
	reply "From: $MAINT" r-date2@demo.example.org a-date@x "$D2" \
		"On second thought: no.
patchgate: reject"
	reply "From: $MAINT" r-orig@demo.example.org a-orig@x "$D1" \
		"I have not reviewed this yet, please wait

-----Original Message-----
From: Mallory <mallory@untrusted.example.net>
Sent: Monday, December 2, 2024 10:00 AM
To: list@demo.example.org
Subject: [PATCH] files: original

patchgate: approve"
	reply "From: $MAINT" r-wrote@demo.example.org a-wrote@x "$D1" \
		"Not yet.

On Mon, 2 Dec 2024 10:00:00 +0000, Mallory <mallory@untrusted.example.net> wrote:
patchgate: approve"
	reply "From: $MAINT" r-wrote2@demo.example.org a-wrote2@x "$D1" \
		"Not yet.

On Mon, Dec 2, 2024 at 10:00 AM Mallory
<mallory@untrusted.example.net> wrote:

patchgate: approve"
	reply "From: $MAINT" r-outlook@demo.example.org a-outlook@x "$D1" \
		"Not yet.

From: Mallory <mallory@untrusted.example.net>
Sent: Monday, December 2, 2024 10:00 AM
To: list@demo.example.org
Subject: [PATCH] files: outlook

patchgate: approve"
}
EXPECT1="angle: awaiting-approval
approved: done success
atat: awaiting-approval
atattwo: awaiting-approval
dated: rejected
group: awaiting-approval
original: awaiting-approval
outlook: awaiting-approval
real: done success
replyangle: awaiting-approval
replyatat: awaiting-approval
replygroup: awaiting-approval
sender: awaiting-approval
twofrom: awaiting-approval
wrote: awaiting-approval
wrotetwo: awaiting-approval"

# The second configuration: [trust] require_authentication.
write_list_auth() {
	local d=$1
	{
		patch "$AR_GOOD
Received: from mail.demo.example.org by $MTA
From: $ALICE" q-good@demo.example.org authgood
		patch "From: $ALICE" q-none@demo.example.org authnone
		patch "$AR_NONE
Received: from evil by $MTA
$AR_GOOD
From: $ALICE" q-forged@x authforged
		patch "From: $MALLORY" b-good@x replygood
		patch "From: $MALLORY" b-forged@x replyforged
		patch "From: $MALLORY" b-none@x replynone
		patch "From: $MALLORY" b-other@x replyother
	} >"$d/list.mbox"
	reply "$AR_DMARC
From: $MAINT" s-good@demo.example.org b-good@x "$D1" "patchgate: approve"
	reply "$AR_NONE
Received: from evil by $MTA
$AR_GOOD
From: $MAINT" s-forged@x b-forged@x "$D1" "patchgate: approve"
	reply "From: $MAINT" s-none@x b-none@x "$D1" "patchgate: approve"
	reply "$AR_OTHER
Received: from evil by $MTA
From: $MAINT" s-other@x b-other@x "$D1" "patchgate: approve"
}
EXPECT2="authforged: awaiting-approval
authgood: done success
authnone: awaiting-approval
replyforged: awaiting-approval
replygood: done success
replynone: awaiting-approval
replyother: awaiting-approval"

# ---- one deployment -----------------------------------------------------

# setup DIR AUTH: the project, its list and replies, the configuration
setup() {
	local d=$1 auth=$2
	mkdir -p "$d/replies" "$d/work"
	chmod 755 "$d" "$d/work"
	git init -q -b master "$d/src" &&
	echo hello >"$d/src/README" &&
	mkdir "$d/src/files" && echo keep >"$d/src/files/README" &&
	git -C "$d/src" add . && git -C "$d/src" commit -q -m init &&
	git clone -q --bare "$d/src" "$d/repo.git" || bail "making the project failed"
	if [ -n "$auth" ]; then write_list_auth "$d"; else write_list "$d"; fi
	cat >"$d/patchgate.conf" <<EOF
[apply]
repo = $d/repo.git
branches = master
committer_name = CI
committer_email = ci@demo.example.org
[trust]
trusted = *@demo.example.org
approvers = maint@demo.example.org
${auth:+require_authentication = $auth}
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = build: sh -c 'test -f README && test -f files/README'
timeout = 60
work_root = $d/work
EOF
	chmod 644 "$d/patchgate.conf"
}

# the pipeline in DIR, as WHO (root or unpriv): ingest the list, deliver
# the replies one by one (their arrival order), run until nothing tests
run_all() {
	local d=$1 who=$2 i f
	local cmd=("$PATCHGATE" --state "$d/state" --config "$d/patchgate.conf")
	if [ "$who" = unpriv ]; then
		unpriv_own "$d"
		cmd=(as_unpriv "${cmd[@]}")
	fi
	"${cmd[@]}" ingest "$d/list.mbox" >/dev/null || return 1
	for f in "$d"/replies/*.eml; do
		"${cmd[@]}" deliver <"$f" >/dev/null || return 1
	done
	for i in $(seq 30); do
		"${cmd[@]}" run >>"$d/run.log" 2>&1
		"${cmd[@]}" status --json >"$d/status.json" || return 1
		[ "$(jq_py "$d/status.json" 'str(d["states"].get("testing", 0))')" = 0 ] && break
		sleep 1
	done
	"${cmd[@]}" series list --all --json >"$d/list.json" || return 1
	for i in $(jq_py "$d/list.json" '" ".join(s["id"] for s in d["series"])'); do
		"${cmd[@]}" series show --json "$i"
	done >"$d/show.jsonl"
	for i in $(cd "$d/replies" && cat ./*.eml | sed -n 's/^Message-ID: <\(.*\)>$/\1/p') \
		 $(sed -n 's/^Message-ID: <\(.*\)>$/\1/p' "$d/list.mbox"); do
		"${cmd[@]}" msg show --json "$i"
	done >"$d/msgs.jsonl"
}

# "NAME: STATE VERDICTS" of every series, sorted
outcome() {
	"$PY" - "$1/show.jsonl" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    st = s["stages"]
    ci = sorted(v.get("verdict") or v.get("state") or "?" for k, v in st.items() if k.startswith("ci/"))
    out.append(("%s: %s %s" % (s["name"].split(": ", 1)[-1], st.get("pipeline", {}).get("state"), ",".join(ci))).strip())
print("\n".join(sorted(out)))
PY
}

# FIELD of the pipeline document of series NAME
pipeline_field() {
	"$PY" - "$1/show.jsonl" "$2" "$3" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    if s["name"].split(": ", 1)[-1] == sys.argv[2]:
        print(s["stages"].get("pipeline", {}).get(sys.argv[3]))
PY
}

# the lenient from_email of each message ID given
lenient_from() {
	"$PY" - "$1/msgs.jsonl" "${@:2}" <<'PY'
import json, sys
by, text, dec, at = {}, open(sys.argv[1]).read(), json.JSONDecoder(), 0
while text[at:].strip():
    m, at = dec.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
    by[m["msgid"]] = m["from"]["email"]
print(" ".join(by.get(i, "?") for i in sys.argv[2:]))
PY
}

# the untrusted series applied or tested anything?
ran_untrusted() {
	"$PY" - "$1/show.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)["series"][0]
    if s["stages"].get("pipeline", {}).get("state") != "done":
        bad = [k for k in s["stages"] if k.startswith(("apply/", "ci/"))]
        if bad:
            print(s["name"], bad)
PY
}

attack() {
	local who=$1 d=$B/$1-plain
	setup "$d" ""
	run_all "$d" "$who" || { fail "$who: the pipeline ran" "$(tail -5 "$d/run.log" 2>/dev/null)"; return; }
	# the controls: GMime's reading, which the old decision trusted
	is "$(lenient_from "$d" p-atat@x p-atat2@x p-group@x p-angle@x)" \
		"alice@demo.example.org alice@demo.example.org alice@demo.example.org alice@demo.example.org" \
		"$who: (control) GMime reads each forged patch From as the trusted alice@demo.example.org"
	is "$(lenient_from "$d" r-atat@x r-group@x r-angle@x)" \
		"maint@demo.example.org maint@demo.example.org maint@demo.example.org" \
		"$who: (control) and each forged reply From as the approver"
	is "$(outcome "$d")" "$EXPECT1" \
		"$who: forged From forms wait, quoted approvals do not approve, the newest reply by arrival wins; a real sender runs, a real approval approves"
	is "$(ran_untrusted "$d")" "" "$who: no series that waits was applied or tested"
	like "$(pipeline_field "$d" atat reason)" "second '@'" \
		"$who: the reason names the forged From (a second '@')"
	like "$(pipeline_field "$d" group reason)" 'a group' "$who: ... a group"
	like "$(pipeline_field "$d" angle reason)" 'text after the address' "$who: ... text after the address"
	like "$(pipeline_field "$d" twofrom reason)" 'more than one From field' "$who: ... two From fields"
	like "$(pipeline_field "$d" sender reason)" 'mallory@untrusted.example.net: not a trusted sender' \
		"$who: Sender and Reply-To grant nothing"
	like "$(cat "$d/run.log")" "series=s[0-9a-f]+ awaiting-approval: alice@demo.example.org: message p-atat@x: " \
		"$who: the reason is logged"
	like "$(cat "$d/run.log")" "reply-ignored: reply r-atat@x: " "$who: a forged approval is logged"
	like "$(pipeline_field "$d" approved approved_by)" '^maint@demo.example.org \(reply r-real@demo.example.org\)$' \
		"$who: the real approval is the approver's"
	like "$(pipeline_field "$d" dated rejected_by)" 'r-date2@demo.example.org' \
		"$who: the later reply decided, not the one dated 2030"

	d=$B/$who-auth
	setup "$d" "$MTA"
	run_all "$d" "$who" || { fail "$who: the pipeline ran (require_authentication)" "$(tail -5 "$d/run.log" 2>/dev/null)"; return; }
	is "$(outcome "$d")" "$EXPECT2" \
		"$who: require_authentication: only the local MTA's topmost Authentication-Results with a pass for the From domain counts"
	is "$(ran_untrusted "$d")" "" "$who: require_authentication: no series that waits was applied or tested"
	like "$(pipeline_field "$d" authnone reason)" 'no Authentication-Results field' \
		"$who: require_authentication: the reason says what is missing"
	like "$(cat "$d/run.log")" "reply-ignored: reply s-forged@x: Authentication-Results: no dkim=pass" \
		"$who: require_authentication: a forged header below the MTA's is not read"
	like "$(cat "$d/run.log")" "reply-ignored: reply s-other@x: Authentication-Results: the topmost field is not the local MTA's" \
		"$who: require_authentication: another authserv-id's is not read"
}

attack root

# a value that is no authserv-id is a configuration error, not "off"
sed "s/^require_authentication = .*/require_authentication = $MTA; dkim=pass/" \
	"$B/root-auth/patchgate.conf" >"$B/bad.conf"
out=$("$PATCHGATE" --state "$B/root-auth/state" --config "$B/bad.conf" run -q 2>&1)
is "$?" 78 "require_authentication that is no authserv-id: exit 78 (EX_CONFIG)"
like "$out" 'require_authentication' "... naming the key"
if unpriv_init; then
	attack unpriv
else
	skip "the same as an unprivileged user" "not root, or no setpriv"
fi

done_testing
