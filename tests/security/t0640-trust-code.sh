#!/bin/bash
# t0640-trust-code - issue #41: trust is a property of the code that runs,
# and an administrator's mistake is never the submitter's fault.  Each
# attack runs against `patchgate run` with a real configuration ([trust]
# trusted and approvers, the local CI backend), once as root and once as
# an unprivileged user (tests/lib/unpriv.sh), as the systemd unit runs it.
# Mallory (mallory@untrusted.example.net) is not trusted; Alice
# (alice@demo.example.org) is; maint@demo.example.org approves.
#
#  1. relay      B4 Relay mail ("Mallory via B4 Relay <devnull+...@kernel.org>")
#                with trusted = *@kernel.org: trusted only as the relay's
#                user, never by the relay's address; a list's DMARC rewrite
#                ("Alice via list <list@...>") grants nothing
#  2. repo       [apply] repo names no repository: no apply-failed, no
#                check, no mail; `run` exits 78 and the series stays new
#  5. depends    Alice's patch with Depends-on: Mallory's series waits
#  6. hijack     Mallory's copy of Alice's patch (same patch-id) never
#                becomes the prerequisite Alice's next patch names
#  7. borrowed   Mallory's [PATCH 3/2] in Alice's v1 is not applied by
#                Alice's partial re-roll v2 1/2
#  8. late       a patch added after the approval is not covered, with or
#                without Mallory's own Recheck-request: rebase=master
#  9. reused     an approval of Bob's <X> does not approve Mallory's mail
#                that reuses Message-ID <X>
# 10. attached   a maintainer's reply that attaches the original (message/
#                rfc822, or a text attachment) holding "patchgate: approve"
#                does not approve
# 11. quoted     an approval quoted below an Outlook, Thunderbird, Gmail or
#                Apple Mail quote block in German, French, Spanish, Italian,
#                Portuguese, Dutch, Chinese or Japanese does not approve
# 13. huge       a 5,000-patch series is skipped at once ([pipeline]
#                max_patches), final, not visited again
#
# The controls, each showing the test can fail: with the attacker
# trusted (or the bound off), the same mail runs the attacker's patch,
# which the outcome checks then see.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

command -v bwrap >/dev/null || skip_all "needs bwrap (bubblewrap)"
export GIT_AUTHOR_NAME=Maintainer GIT_AUTHOR_EMAIL=maint@demo.example.org
export GIT_COMMITTER_NAME=Maintainer GIT_COMMITTER_EMAIL=maint@demo.example.org

# the CI job runs as an unprivileged user: everything it reaches is open
B=$(mktemp -d /tmp/pgate-t0640.XXXXXX) || bail "mktemp"
chmod 755 "$B"
TAP_CLEANUP='rm -rf "$B"'

ALICE='Alice <alice@demo.example.org>'
BOB='Bob <bob@elsewhere.example.com>'
MAINT='Maintainer <maint@demo.example.org>'
MALLORY='Mallory <mallory@untrusted.example.net>'
MAIL=$SRCDIR/tests/security/mail.py

m() { "$PY" "$MAIL" "$@"; }

# setup DIR [TRUSTED]: a project, its bare repository and configuration
setup() {
	local d=$1 trusted=${2:-*@demo.example.org}
	rm -rf "$d"
	mkdir -p "$d/work" "$d/in"
	chmod 755 "$d" "$d/work"
	git init -q -b master "$d/src" &&
	echo hello >"$d/src/README" &&
	mkdir "$d/src/files" && echo keep >"$d/src/files/README" &&
	git -C "$d/src" add . && git -C "$d/src" commit -q -m init &&
	git clone -q --bare "$d/src" "$d/repo.git" || bail "making the project failed"
	cat >"$d/patchgate.conf" <<EOF
[apply]
repo = $d/repo.git
branches = master
committer_name = CI
committer_email = ci@demo.example.org
[trust]
trusted = $trusted
approvers = maint@demo.example.org
[pipeline]
wait_complete = 0
[ci]
backend = local
job = build
[ci.local]
commands = build: sh -c 'test -f README'
timeout = 60
work_root = $d/work
EOF
	chmod 644 "$d/patchgate.conf"
}

# as WHO (root or unpriv), in deployment DIR: patchgate ARG...
p() {
	local who=$1 d=$2
	shift 2
	if [ "$who" = unpriv ]; then
		as_unpriv "$PATCHGATE" --state "$d/state" --config "$d/patchgate.conf" "$@"
	else
		"$PATCHGATE" --state "$d/state" --config "$d/patchgate.conf" "$@"
	fi
}

# deliver WHO DIR FILE...: each file as one delivery, in order
deliver() {
	local who=$1 d=$2 f
	shift 2
	for f in "$@"; do
		p "$who" "$d" deliver <"$f" >/dev/null || return 1
	done
}

# run_idle WHO DIR: run until nothing is testing; the last exit code in
# $d/run.rc, every run's output in $d/run.log
run_idle() {
	local who=$1 d=$2 i
	for i in $(seq 30); do
		p "$who" "$d" run >>"$d/run.log" 2>&1
		echo $? >"$d/run.rc"
		p "$who" "$d" status --json >"$d/status.json" || return 1
		[ "$(jq_py "$d/status.json" 'str(d["states"].get("testing", 0))')" = 0 ] && break
		sleep 0.5
	done
	return 0
}

own() { [ "$1" = unpriv ] && unpriv_own "$2"; return 0; }

# info WHO DIR MSGID: "STATE|REASON|APPLIED MSGIDS|PREREQUISITES|CI VERDICTS"
# of the series MSGID is in
info() {
	local who=$1 d=$2 id=$3 sid
	sid=$(p "$who" "$d" msg show --json "$id" | "$PY" -c '
import json, sys
m = json.load(sys.stdin)
print(m.get("series") or "")') || return 1
	[ -n "$sid" ] || { echo "no-series"; return 0; }
	p "$who" "$d" series show --json "$sid" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)["series"][0]
st = s["stages"]
pl = st.get("pipeline", {})
applied, pre = [], []
for k, v in sorted(st.items()):
    if k.startswith("apply/"):
        applied += [x["msgid"] for x in v.get("patches", []) if x.get("state") == "applied"]
        pre += v.get("prerequisites") or []
ci = sorted(v.get("verdict") or v.get("state") or "?" for k, v in st.items() if k.startswith("ci/"))
print("%s|%s|%s|%s|%s" % (pl.get("state"), pl.get("reason") or "", " ".join(applied),
                          " ".join(pre), ",".join(ci)))'
}
state_of() { info "$@" | cut -d'|' -f1; }
reason_of() { info "$@" | cut -d'|' -f2; }
applied_of() { info "$@" | cut -d'|' -f3; }
prereq_of() { info "$@" | cut -d'|' -f4; }
verdicts_of() { info "$@" | cut -d'|' -f5; }
series_of() {
	p "$1" "$2" msg show --json "$3" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("series") or "")'
}

# ---- 1. relay ---------------------------------------------------------

B4_MALLORY='Mallory via B4 Relay <devnull+mallory.untrusted.example.net@kernel.org>'
B4_HDR=(--header 'X-Endpoint-Received: by B4 Relay for mallory@untrusted.example.net/20240101 with auth_id=7'
	--header 'X-Original-From: Mallory <mallory@untrusted.example.net>'
	--header 'Reply-To: <mallory@untrusted.example.net>')
relay() {
	local who=$1 d=$B/$1-relay trusted=${2:-*@kernel.org}
	setup "$d" "$trusted"
	m patch --from "$B4_MALLORY" --id relay-1@b4 --subject '[PATCH] files: relayed' \
		--file relayed "${B4_HDR[@]}" --body 'From: Mallory <mallory@untrusted.example.net>' \
		--body '' >"$d/in/1"
	m patch --from 'Alice via Linux-demo <list@demo.example.org>' --id munged-1@x \
		--subject '[PATCH] files: munged' --file munged \
		--header 'List-Post: <mailto:list@demo.example.org>' \
		--header 'Reply-To: Alice <alice@demo.example.org>' >"$d/in/2"
	m patch --from 'Linus <torvalds@kernel.org>' --id direct-1@kernel.org \
		--subject '[PATCH] files: direct' --file direct >"$d/in/3"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" "$d/in/2" "$d/in/3" || { fail "$who: relay: delivered"; return; }
	run_idle "$who" "$d"
}

# ---- 2. the repository that is not there -----------------------------

repo() {
	local who=$1 d=$B/$1-repo
	setup "$d"
	sed -i "s|^repo = .*|repo = $d/no-such.git|" "$d/patchgate.conf"
	m patch --from "$ALICE" --id repo-1@demo.example.org --subject '[PATCH] files: repo' \
		--file repo >"$d/in/1"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" || { fail "$who: repo: delivered"; return; }
	p "$who" "$d" run >"$d/run.log" 2>&1
	echo $? >"$d/run.rc"
	p "$who" "$d" run >>"$d/run.log" 2>&1
	echo $? >>"$d/run.rc"
	p "$who" "$d" outbox list --json >"$d/outbox.json" 2>/dev/null
	p "$who" "$d" apply repo-1@demo.example.org >"$d/apply.log" 2>&1
	echo $? >"$d/apply.rc"
}

# ---- 5. Depends-on an untrusted series ----------------------------------

depends() {
	local who=$1 d=$B/$1-depends trusted=${2:-}
	setup "$d" "*@demo.example.org${trusted:+;$trusted}"
	m patch --from "$MALLORY" --id mal-dep@x --subject '[PATCH] files: helper' \
		--file helper >"$d/in/1"
	m patch --from "$ALICE" --id alice-dep@demo.example.org \
		--subject '[PATCH] files: user' --file user --body 'Depends-on: <mal-dep@x>' \
		--body '' >"$d/in/2"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" "$d/in/2" || { fail "$who: depends: delivered"; return; }
	run_idle "$who" "$d"
}

# ---- 6. the prerequisite-patch-id hijack -------------------------------

hijack() {
	local who=$1 d=$B/$1-hijack only_copy=${2:-} pid
	setup "$d"
	# Alice's P, then Mallory's copy of P (same patch-id) with her own 2/2
	m patch --from "$ALICE" --id alice-p@demo.example.org --subject '[PATCH] files: base' \
		--file base --date 'Mon, 2 Dec 2024 10:00:00 +0000' >"$d/in/1"
	m reply --from "$MALLORY" --id mal-c@x --subject '[PATCH 0/2] files: base again' \
		--text 'My take.' --date 'Tue, 3 Dec 2024 10:00:00 +0000' >"$d/in/2"
	m patch --from "$MALLORY" --id mal-p1@x --reply mal-c@x --subject '[PATCH 1/2] files: base' \
		--file base --date 'Tue, 3 Dec 2024 10:00:00 +0000' >"$d/in/3"
	m patch --from "$MALLORY" --id mal-p2@x --reply mal-c@x --subject '[PATCH 2/2] files: evil' \
		--file evil --date 'Tue, 3 Dec 2024 10:00:01 +0000' >"$d/in/4"
	pid=$(printf '%s' "$(sed -n '/^diff --git/,/^-- $/p' "$d/in/1" | sed '$d')" | git patch-id --stable | cut -d' ' -f1)
	m patch --from "$ALICE" --id alice-next@demo.example.org --subject '[PATCH] files: next' \
		--file next --date 'Wed, 4 Dec 2024 10:00:00 +0000' \
		--body "prerequisite-patch-id: $pid" --body '' >"$d/in/5"
	own "$who" "$d"
	if [ -n "$only_copy" ]; then
		deliver "$who" "$d" "$d/in/2" "$d/in/3" "$d/in/4" "$d/in/5"
	else
		deliver "$who" "$d" "$d/in/1" "$d/in/2" "$d/in/3" "$d/in/4" "$d/in/5"
	fi || { fail "$who: hijack: delivered"; return; }
	run_idle "$who" "$d"
}

# ---- 7. a re-roll borrowing another sender's patch --------------------

borrowed() {
	local who=$1 d=$B/$1-borrowed trusted=${2:-}
	setup "$d" "*@demo.example.org${trusted:+;$trusted}"
	m reply --from "$ALICE" --id a-c@demo.example.org --subject '[PATCH 0/2] files: pair' \
		--text 'Two files.' >"$d/in/1"
	m patch --from "$ALICE" --id a-p1@demo.example.org --reply a-c@demo.example.org \
		--subject '[PATCH 1/2] files: one' --file one >"$d/in/2"
	m patch --from "$ALICE" --id a-p2@demo.example.org --reply a-c@demo.example.org \
		--subject '[PATCH 2/2] files: two' --file two >"$d/in/3"
	m patch --from "$MALLORY" --id m-p3@x --reply a-c@demo.example.org \
		--subject '[PATCH 3/2] files: three' --file three \
		--date 'Mon, 2 Dec 2024 11:00:00 +0000' >"$d/in/4"
	m patch --from "$ALICE" --id a-v2p1@demo.example.org --reply a-p1@demo.example.org \
		--subject '[PATCH v2 1/2] files: one' --file one --content 'one, better' \
		--date 'Tue, 3 Dec 2024 10:00:00 +0000' >"$d/in/5"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" "$d/in/2" "$d/in/3" "$d/in/4" "$d/in/5" ||
		{ fail "$who: borrowed: delivered"; return; }
	run_idle "$who" "$d"
}

# ---- 8. a patch after the approval ----------------------------------

late() {
	local who=$1 d=$B/$1-late with_late=${2:-yes}
	setup "$d"
	m reply --from "$MALLORY" --id l-c@x --subject '[PATCH 0/1] files: small' \
		--text 'A small change.' >"$d/in/1"
	m patch --from "$MALLORY" --id l-p1@x --reply l-c@x --subject '[PATCH 1/1] files: small' \
		--file small >"$d/in/2"
	m patch --from "$MALLORY" --id l-p2@x --reply l-c@x --subject '[PATCH 2/1] files: late' \
		--file late --date 'Mon, 2 Dec 2024 12:00:00 +0000' >"$d/in/3"
	m patch --from "$MALLORY" --id l-p3@x --reply l-c@x --subject '[PATCH 3/1] files: later' \
		--file later --date 'Wed, 4 Dec 2024 12:00:00 +0000' >"$d/in/4"
	m reply --from "$MALLORY" --id l-rr@x --reply l-c@x --subject 'Re: [PATCH 0/1] files: small' \
		--text 'Recheck-request: rebase=master, build' \
		--date 'Wed, 4 Dec 2024 12:01:00 +0000' >"$d/in/5"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" "$d/in/2" || { fail "$who: late: delivered"; return; }
	run_idle "$who" "$d"
	echo "$(state_of "$who" "$d" l-p1@x)" >"$d/before"
	p "$who" "$d" approve "$(series_of "$who" "$d" l-p1@x)" >/dev/null
	[ "$with_late" = yes ] && deliver "$who" "$d" "$d/in/3"
	run_idle "$who" "$d"
	info "$who" "$d" l-p1@x >"$d/after-approval"
	# approved again (what is there now), tested; then a later patch and
	# Mallory's own recheck with a rebase
	if [ "$(state_of "$who" "$d" l-p1@x)" = awaiting-approval ]; then
		p "$who" "$d" approve "$(series_of "$who" "$d" l-p1@x)" >/dev/null
		run_idle "$who" "$d"
	fi
	info "$who" "$d" l-p1@x >"$d/tested"
	[ "$with_late" = yes ] && deliver "$who" "$d" "$d/in/4"
	deliver "$who" "$d" "$d/in/5"
	run_idle "$who" "$d"
	info "$who" "$d" l-p1@x >"$d/after-recheck"
}

# ---- 9. a reused Message-ID --------------------------------------------

reused() {
	local who=$1 d=$B/$1-reused
	setup "$d"
	m patch --from "$BOB" --id x-reused@elsewhere.example.com --subject '[PATCH] files: bob' \
		--file bob >"$d/in/1"
	m reply --from "$MAINT" --id r-bob@demo.example.org --reply x-reused@elsewhere.example.com \
		--subject 'Re: [PATCH] files: bob' --text 'patchgate: approve' \
		--date 'Tue, 3 Dec 2024 10:00:00 +0000' >"$d/in/2"
	m patch --from "$MALLORY" --id x-reused@elsewhere.example.com --subject '[PATCH] files: mallory' \
		--file mallory --date 'Wed, 4 Dec 2024 10:00:00 +0000' >"$d/in/3"
	own "$who" "$d"
	deliver "$who" "$d" "$d/in/1" "$d/in/2" || { fail "$who: reused: delivered"; return; }
	run_idle "$who" "$d"
	info "$who" "$d" r-bob@demo.example.org >/dev/null
	p "$who" "$d" series list --all --json >"$d/list1.json"
	deliver "$who" "$d" "$d/in/3" || { fail "$who: reused: delivered"; return; }
	run_idle "$who" "$d"
	p "$who" "$d" series list --all --json >"$d/list2.json"
}

# STATE|APPLIED of the series named NAME in list JSON FILE, via show
by_name() {
	local who=$1 d=$2 name=$3 sid
	sid=$(jq_py "$d/list2.json" "' '.join(s['id'] for s in d['series'] if s['name'].endswith('$name'))")
	[ -n "$sid" ] || { echo "none"; return; }
	p "$who" "$d" series show --json "$sid" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)["series"][0]
st = s["stages"]
ap = [x["msgid"] for k, v in st.items() if k.startswith("apply/") for x in v.get("patches", [])]
print("%s|%s" % (st.get("pipeline", {}).get("state"), " ".join(ap)))'
}

# ---- 10 and 11: what a reply's own text is ----------------------------

# the quote blocks: NAME and the lines above the quoted approval
QUOTES=(
	"de-outlook|-----Ursprüngliche Nachricht-----
Von: Mallory <mallory@untrusted.example.net>
Gesendet: Montag, 2. Dezember 2024 10:00
An: list@demo.example.org
Betreff: [PATCH] files: q"
	"de-outlook-block|Von: Mallory <mallory@untrusted.example.net>
Gesendet: Montag, 2. Dezember 2024 10:00
An: list@demo.example.org"
	"fr-outlook|-----Message d'origine-----
De : Mallory <mallory@untrusted.example.net>
Envoyé : lundi 2 décembre 2024 10:00"
	"de-thunderbird|Am 02.12.24 um 10:00 schrieb Mallory:"
	"fr-thunderbird|Le 02/12/2024 à 10:00, Mallory a écrit :"
	"es-gmail|El lun, 2 dic 2024 a las 10:00, Mallory (<mallory@untrusted.example.net>) escribió:"
	"it-gmail|Il giorno lun 2 dic 2024 alle ore 10:00 Mallory <mallory@untrusted.example.net> ha scritto:"
	"pt-gmail|Em seg., 2 de dez. de 2024 às 10:00, Mallory <mallory@untrusted.example.net> escreveu:"
	"nl-thunderbird|Op 02-12-2024 om 10:00 schreef Mallory:"
	"zh-gmail|Mallory <mallory@untrusted.example.net> 于2024年12月2日周一 10:00写道："
	"ja-gmail|2024年12月2日(月) 10:00 Mallory <mallory@untrusted.example.net>:"
	"es-outlook|-----Mensaje original-----
De: Mallory <mallory@untrusted.example.net>
Enviado: lunes, 2 de diciembre de 2024 10:00"
)

replies() {
	local who=$1 d=$B/$1-replies q name text i=0 n
	setup "$d"
	for q in "${QUOTES[@]}" attached attached-text control html; do
		i=$((i + 1))
		name=${q%%|*}
		# Mallory's patch carries the keyword, for a careless quote
		m patch --from "$MALLORY" --id "q$i@x" --subject "[PATCH] files: $name" \
			--file "q$i" --body 'patchgate: approve' --body '' >"$d/in/p$i"
		case $name in
		attached)
			m mime --from "$MAINT" --id "r$i@demo.example.org" --reply "q$i@x" \
				--subject "Re: [PATCH] files: $name" --date 'Tue, 3 Dec 2024 10:00:00 +0000' \
				--text 'This is not approved yet; see the attached mail.' \
				--attach-original "$d/in/p$i" >"$d/in/r$i" ;;
		attached-text)
			m mime --from "$MAINT" --id "r$i@demo.example.org" --reply "q$i@x" \
				--subject "Re: [PATCH] files: $name" --date 'Tue, 3 Dec 2024 10:00:00 +0000' \
				--text 'Notes attached.' --attach-text 'patchgate: approve' >"$d/in/r$i" ;;
		control)
			m reply --from "$MAINT" --id "r$i@demo.example.org" --reply "q$i@x" \
				--subject "Re: [PATCH] files: $name" --date 'Tue, 3 Dec 2024 10:00:00 +0000' \
				--text 'patchgate: approve' >"$d/in/r$i" ;;
		html)
			m mime --from "$MAINT" --id "r$i@demo.example.org" --reply "q$i@x" \
				--subject "Re: [PATCH] files: $name" --date 'Tue, 3 Dec 2024 10:00:00 +0000' \
				--html '<div>patchgate: approve</div><blockquote>patchgate: reject</blockquote>' >"$d/in/r$i" ;;
		*)
			text="Not yet, sorry.

${q#*|}

patchgate: approve"
			m reply --from "$MAINT" --id "r$i@demo.example.org" --reply "q$i@x" \
				--subject "Re: [PATCH] files: $name" --date 'Tue, 3 Dec 2024 10:00:00 +0000' \
				--text "$text" >"$d/in/r$i" ;;
		esac
	done
	n=$i
	own "$who" "$d"
	for i in $(seq "$n"); do
		deliver "$who" "$d" "$d/in/p$i" || { fail "$who: replies: delivered"; return; }
	done
	for i in $(seq "$n"); do
		deliver "$who" "$d" "$d/in/r$i" || { fail "$who: replies: delivered"; return; }
	done
	run_idle "$who" "$d"
	for i in $(seq "$n"); do
		printf '%s ' "$(state_of "$who" "$d" "q$i@x")"
	done >"$d/states"
}

# ---- 13. a series of 5,000 patches -------------------------------------

huge() {
	local who=$1 d=$B/$1-huge n=${2:-5000} bound=${3:-}
	setup "$d"
	[ -n "$bound" ] && sed -i "s/^\[pipeline\]\$/[pipeline]\nmax_patches = $bound/" "$d/patchgate.conf"
	"$PY" - "$n" "$MALLORY" >"$d/in/huge.mbox" <<'PY'
import hashlib, sys
n, frm = int(sys.argv[1]), sys.argv[2]
for i in range(1, n + 1):
    c = ("h%d\n" % i).encode()
    b = hashlib.sha1(b"blob %d\0" % len(c) + c).hexdigest()[:7]
    print("From mboxrd@z Thu Jan  1 00:00:00 1970\nFrom: Alice <alice@demo.example.org>\n"
          "To: list@demo.example.org\nSubject: [PATCH %d/%d] files: h%d\n"
          "Date: Mon, 2 Dec 2024 10:00:00 +0000\nMessage-ID: <h%d@demo.example.org>\n"
          "In-Reply-To: <h1@demo.example.org>\n\nAdd h%d.\n\nSigned-off-by: A <a@demo.example.org>\n---\n"
          "diff --git a/files/h%d b/files/h%d\nnew file mode 100644\nindex 0000000..%s\n"
          "--- /dev/null\n+++ b/files/h%d\n@@ -0,0 +1 @@\n+h%d\n-- \n2.39.5\n"
          % (i, n, i, i, i, i, i, b, i, i))
PY
	own "$who" "$d"
	p "$who" "$d" ingest "$d/in/huge.mbox" >/dev/null || { fail "$who: huge: ingested"; return; }
	if [ "$who" = unpriv ]; then
		/usr/bin/time -f '%e %M' -o "$d/time1" setpriv --reuid="$UNPRIV_USER" --regid="$UNPRIV_USER" \
			--init-groups --no-new-privs -- "$PATCHGATE" --state "$d/state" \
			--config "$d/patchgate.conf" run >"$d/run.log" 2>&1
	else
		/usr/bin/time -f '%e %M' -o "$d/time1" "$PATCHGATE" --state "$d/state" \
			--config "$d/patchgate.conf" run >"$d/run.log" 2>&1
	fi
	echo $? >"$d/run.rc"
	run_idle "$who" "$d"
	p "$who" "$d" run --json >"$d/run2.json" 2>/dev/null
}

# ---- the attacks, as WHO ---------------------------------------------

attack() {
	local who=$1 d

	# 1. relay
	relay "$who"
	d=$B/$who-relay
	is "$(state_of "$who" "$d" relay-1@b4)" awaiting-approval \
		"$who: relay: B4 Relay mail of an untrusted user waits, although *@kernel.org is trusted"
	like "$(reason_of "$who" "$d" relay-1@b4)" '^mallory@untrusted.example.net: not a trusted sender' \
		"$who: relay: ... judged as the relay's user"
	is "$(p "$who" "$d" msg show --json relay-1@b4 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["from"]["email"])')" \
		devnull+mallory.untrusted.example.net@kernel.org \
		"$who: relay: (control) the message's From address matches trusted = *@kernel.org"
	is "$(state_of "$who" "$d" munged-1@x)" awaiting-approval \
		"$who: relay: a list's From rewrite grants nothing"
	like "$(reason_of "$who" "$d" munged-1@x)" "the list's own address" \
		"$who: relay: ... and says why"
	is "$(state_of "$who" "$d" direct-1@kernel.org)" done \
		"$who: relay: (control) direct mail from a kernel.org address runs"
	relay "$who" '*@kernel.org;mallory@untrusted.example.net'
	d=$B/$who-relay
	is "$(verdicts_of "$who" "$d" relay-1@b4)" success \
		"$who: relay: (control) with the relay's user trusted, the relayed series runs"

	# 2. the missing repository
	repo "$who"
	d=$B/$who-repo
	is "$(tr '\n' ' ' <"$d/run.rc")" "78 78 " \
		"$who: repo: run exits 78 (EX_CONFIG), pass after pass"
	like "$(cat "$d/run.log")" "cannot open $d/no-such.git" "$who: repo: ... naming the repository"
	is "$(state_of "$who" "$d" repo-1@demo.example.org)" None \
		"$who: repo: the series is not judged (no state: retried when the configuration is fixed)"
	is "$(jq_py "$d/outbox.json" 'str(len(d.get("entries", d.get("outbox", []))))' 2>/dev/null)" 0 \
		"$who: repo: nothing queued for Patchwork or the submitter"
	is "$(cat "$d/apply.rc")" 78 "$who: repo: patchgate apply exits 78 too"
	sed -i "s|^repo = .*|repo = $d/repo.git|" "$d/patchgate.conf"
	run_idle "$who" "$d"
	is "$(state_of "$who" "$d" repo-1@demo.example.org)|$(verdicts_of "$who" "$d" repo-1@demo.example.org)" \
		"done|success" "$who: repo: (control) fixed, the series applies and passes"

	# 5. Depends-on
	depends "$who"
	d=$B/$who-depends
	is "$(state_of "$who" "$d" alice-dep@demo.example.org)" awaiting-approval \
		"$who: depends: Alice's series that depends on Mallory's waits"
	like "$(reason_of "$who" "$d" alice-dep@demo.example.org)" \
		'patch mal-dep@x of prerequisite series s[0-9a-f]+ \(depends-on: mal-dep@x\) is from mallory@untrusted.example.net, not a trusted sender' \
		"$who: depends: ... naming Mallory's patch and why it is included"
	is "$(applied_of "$who" "$d" alice-dep@demo.example.org)" "" \
		"$who: depends: nothing of it was applied"
	# by hand: patchgate test and b4's check --run ask the same
	p "$who" "$d" test "$(series_of "$who" "$d" alice-dep@demo.example.org)" \
		>"$d/test.out" 2>"$d/test.err"
	is "$?" 77 "$who: depends: patchgate test refuses it (77, EX_NOPERM)"
	like "$(cat "$d/test.err")" 'may not run before a maintainer approves it .*of prerequisite series' \
		"$who: depends: ... saying why"
	p "$who" "$d" check --run <"$d/in/2" >"$d/check.out" 2>"$d/check.err"
	is "$?" 77 "$who: depends: check --run refuses it too"
	is "$(verdicts_of "$who" "$d" alice-dep@demo.example.org)|$(applied_of "$who" "$d" alice-dep@demo.example.org)" "|" \
		"$who: depends: ... and nothing was applied or tested by hand"
	depends "$who" 'mallory@untrusted.example.net'
	d=$B/$who-depends
	is "$(applied_of "$who" "$d" alice-dep@demo.example.org)" "mal-dep@x alice-dep@demo.example.org" \
		"$who: depends: (control) with Mallory trusted, Alice's job applies Mallory's patch first"
	p "$who" "$d" test "$(series_of "$who" "$d" alice-dep@demo.example.org)" >/dev/null 2>&1
	is "$?" 0 "$who: depends: (control) ... and patchgate test runs it"

	# 6. the prerequisite hijack
	hijack "$who"
	d=$B/$who-hijack
	is "$(prereq_of "$who" "$d" alice-next@demo.example.org)" "$(series_of "$who" "$d" alice-p@demo.example.org)" \
		"$who: hijack: the prerequisite is Alice's own series, not Mallory's newer copy"
	is "$(applied_of "$who" "$d" alice-next@demo.example.org)" "alice-p@demo.example.org alice-next@demo.example.org" \
		"$who: hijack: ... and nothing of Mallory's is applied"
	is "$(p "$who" "$d" series show --json "$(series_of "$who" "$d" alice-next@demo.example.org)" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["series"][0]["depends_on"][0]["series"])')" \
		"$(series_of "$who" "$d" alice-p@demo.example.org)" \
		"$who: hijack: series show resolves it the same way"
	hijack "$who" only-copy
	d=$B/$who-hijack
	is "$(state_of "$who" "$d" alice-next@demo.example.org)" awaiting-approval \
		"$who: hijack: (control) when only Mallory's copy is there, it is the prerequisite and the series waits"
	like "$(reason_of "$who" "$d" alice-next@demo.example.org)" 'of prerequisite series .*prerequisite-patch-id' \
		"$who: hijack: ... naming it"

	# 7. the borrowed patch
	borrowed "$who"
	d=$B/$who-borrowed
	is "$(state_of "$who" "$d" a-v2p1@demo.example.org)" awaiting-approval \
		"$who: borrowed: Alice's partial re-roll waits: it would apply Mallory's 3/2"
	like "$(reason_of "$who" "$d" a-v2p1@demo.example.org)" \
		'patch m-p3@x, borrowed from s[0-9a-f]+ \(the version this one re-rolls\), is from mallory@untrusted.example.net' \
		"$who: borrowed: ... naming the borrowed patch"
	borrowed "$who" 'mallory@untrusted.example.net'
	d=$B/$who-borrowed
	like "$(applied_of "$who" "$d" a-v2p1@demo.example.org)" 'm-p3@x' \
		"$who: borrowed: (control) with Mallory trusted, the re-roll applies her 3/2"

	# 8. the late patch
	late "$who"
	d=$B/$who-late
	is "$(cat "$d/before")" awaiting-approval "$who: late: Mallory's series waits"
	like "$(cat "$d/after-approval")" \
		'^awaiting-approval\|.*message l-p2@x is from mallory@untrusted.example.net, not a trusted sender; the approval by .* does not cover it' \
		"$who: late: a patch that came after the approval is not covered by it"
	like "$(cat "$d/tested")" '^done\|.*\|l-p1@x l-p2@x\|\|success$' \
		"$who: late: approved again, what it saw is tested"
	like "$(cat "$d/after-recheck")" '^awaiting-approval\|.*message l-p3@x .* does not cover it' \
		"$who: late: Mallory's own Recheck-request with a rebase does not apply her later patch"
	is "$(cut -d'|' -f3 "$d/after-recheck")" "l-p1@x l-p2@x" \
		"$who: late: ... what ran is still only what was approved"
	late "$who" no
	d=$B/$who-late
	like "$(cat "$d/after-approval")" '^done\|.*\|l-p1@x\|\|success$' \
		"$who: late: (control) without a late patch the approval runs the series"
	like "$(cat "$d/after-recheck")" '^done\|.*\|l-p1@x\|\|success$' \
		"$who: late: (control) and Mallory's recheck with a rebase applies it again"
	like "$(cat "$d/run.log")" 'recheck: recheck requested by mallory@untrusted.example.net, rebased on master' \
		"$who: late: (control) ... as the log says"

	# 9. the reused Message-ID
	reused "$who"
	d=$B/$who-reused
	is "$(jq_py "$d/list1.json" "str(len(d['series']))")" 1 "$who: reused: (control) one series before"
	is "$(by_name "$who" "$d" 'files: bob')" "done|x-reused@elsewhere.example.com" \
		"$who: reused: (control) the maintainer's reply approved Bob's series"
	is "$(by_name "$who" "$d" 'files: mallory' | cut -d'|' -f1)" awaiting-approval \
		"$who: reused: Mallory's mail under Bob's Message-ID is not approved by the reply to Bob's"
	like "$(cat "$d/run.log")" 'reply-ignored: replies to x-reused@elsewhere.example.com decide nothing: 2 messages have that Message-ID' \
		"$who: reused: ... and the reason is logged"

	# 10 and 11. attachments and quote blocks
	replies "$who"
	d=$B/$who-replies
	local want="" q
	for q in "${QUOTES[@]}" attached attached-text; do want="${want}awaiting-approval "; done
	is "$(cat "$d/states")" "${want}done done " \
		"$who: replies: no quote block of ${#QUOTES[@]} (8 languages) nor an attachment approves; (control) a plain and an HTML-only approval do"

	# 13. 5,000 patches
	huge "$who"
	d=$B/$who-huge
	is "$(cat "$d/run.rc")" 0 "$who: huge: run exits 0"
	like "$(cat "$d/run.log")" 'skipped: 5000 patches: over \[pipeline\] max_patches \(500\)' \
		"$who: huge: the 5,000-patch series is skipped, with the reason"
	is "$(state_of "$who" "$d" h1@demo.example.org)" skipped "$who: huge: ... a final state"
	is "$(jq_py "$d/run2.json" 'str(d["series"])')" 0 "$who: huge: the next pass does not visit it"
	diag "$who: huge: first run took $(cut -d' ' -f1 "$d/time1") s, $(($(cut -d' ' -f2 "$d/time1") / 1024)) MB"
	huge "$who" 12 10
	d=$B/$who-huge
	is "$(state_of "$who" "$d" h1@demo.example.org)" skipped "$who: huge: 12 patches over max_patches = 10 are skipped"
	huge "$who" 12 0
	d=$B/$who-huge
	is "$(state_of "$who" "$d" h1@demo.example.org)|$(verdicts_of "$who" "$d" h1@demo.example.org)" \
		"done|success" "$who: huge: (control) with max_patches = 0 the same series is applied and tested"
}

attack root
if unpriv_init; then
	attack unpriv
else
	skip "the same as an unprivileged user" "not root, or no setpriv"
fi

done_testing
