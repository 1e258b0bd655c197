#!/bin/bash
# t0500-apply-am - pgate_apply_series() against `git am`, the correctness
# bar: for every series git am applies, the same trees and the same commits
# (same author, date, message and committer give the same commit OID); for
# every patch git am refuses, a refusal at the same patch.  And
# pgate_mailinfo_parse() against `git mailinfo` on the same mails.
#
# gen-repo.py builds a project of a few hundred files with a history that
# covers what a patch can do (see its header); `git format-patch --binary`
# turns its branches into mails, remail.py sends them again encoded other
# ways (quoted-printable, base64, an attachment, a forwarded patch with an
# in-body From:, CRLF line ends, a Latin-1 message).  Each series goes
# through `git am` in a fresh clone at the base (fixed committer and date)
# and through pgate-apply-tool with the same committer and date.
#
#   a  mailinfo: every mail of the corpus, hand-written oddities and 300
#      mails in random forms (gen-mails.py) give what git mailsplit + git
#      mailinfo give (info, message, patch), or fail where they do
#   b  the topic series (20 patches) and its encoded forms
#   c  [PATCH v2 n/5], a CRLF series with and without --keep-cr, a
#      base64 CRLF series, files that change kind and copies (edge), new
#      symlinks (allowed, and refused by default), a file changed and
#      copied, or renamed with more changes, in the same patch (copymod:
#      git copies and renames from the file as it was before the patch)
#   d  the topic series onto a branch that moved (hunks at offsets)

. "${SRCDIR:?}/tests/lib/tap.sh"

command -v git >/dev/null || skip_all "needs git"
command -v /usr/bin/python3 >/dev/null || skip_all "needs python3"
TOOL=${PGATE_APPLY_TOOL:?}
HERE=$SRCDIR/tests/apply

tap_tmpdir
T=$TAP_TMP
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
mkdir -p "$HOME"
CNAME="Commit Ter"
CMAIL="committer@example.org"
CDATE="1700000000 +0000"

/usr/bin/python3 "$HERE/gen-repo.py" "$T/r" || bail "gen-repo.py failed"
git clone -q --bare "$T/r" "$T/pg.git" || bail "clone failed"

fp() {	# fp DIR BRANCH [OPTIONS]: format-patch base..BRANCH into DIR
	local dir=$1 br=$2
	shift 2
	git -C "$T/r" format-patch -q --binary -o "$dir" "$@" "base..$br" ||
		bail "format-patch $br failed"
}
fp "$T/topic" topic
fp "$T/crlf" crlf
fp "$T/edge" edge -C -C
fp "$T/links" links
fp "$T/copymod" copymod -C -C
mkdir -p "$T/copymod-odd"
# git diff never renames a file that stays: the last copy becomes a
# rename, which git am applies from the file as it was and keeps the
# changed file
sed -i 's/^copy from /rename from /; s/^copy to /rename to /' \
	"$T"/copymod/0003-*.patch
# and two that git diff never writes, made from the first: the same, then
# the changed file renamed away (git keeps it changed: a rename after a
# change removes nothing it wrote); the change made a rename, then the
# copy (of the file as it was, renamed or not)
/usr/bin/python3 - "$T"/copymod/0001-*.patch "$T/copymod-odd" <<'PY' ||
import re, sys
src, out = sys.argv[1], sys.argv[2]
text = open(src, "rb").read()
head, sep, tail = text.partition(b"\n-- \n")
name = re.search(rb"^diff --git a/(\S+) b/\1$", head, re.M).group(1)
ren = (b"diff --git a/%s b/%s.old\nsimilarity index 100%%\n"
       b"rename from %s\nrename to %s.old\n" % (name, name, name, name))
open(out + "/1-rename-after.patch", "wb").write(head + b"\n" + ren.rstrip(b"\n") + sep + tail)
first = re.search(rb"^diff --git a/(\S+) b/\1\n", head, re.M)
moved = (b"diff --git a/%s b/%s.new\nsimilarity index 99%%\nrename from %s\n"
         b"rename to %s.new\n" % (name, name, name, name))
head2 = head[:first.start()] + moved + head[first.end():]
head2 = head2.replace(b"+++ b/%s\n" % name, b"+++ b/%s.new\n" % name, 1)
open(out + "/2-rename-then-copy.patch", "wb").write(head2 + sep + tail)
PY
	bail "copymod-odd failed"
fp "$T/v2" v2 -v2 -n --cover-letter
rm -f "$T"/v2/*0000-cover-letter.patch
# remail MODE DIR MAIL...: each MAIL sent as MODE into DIR (one python)
remail() {
	local mode=$1 dir=$2 m pairs=()
	shift 2
	mkdir -p "$dir"
	for m; do pairs+=("$m" "$dir/${m##*/}"); done
	/usr/bin/python3 "$HERE/remail.py" "$mode" "${pairs[@]}"
}
for mode in qp base64 attach inbody crlf; do
	remail "$mode" "$T/topic-$mode" "$T"/topic/*.patch || bail "remail $mode failed"
done
remail base64 "$T/crlf-base64" "$T"/crlf/*.patch
remail latin1 "$T/topic-latin1" "$T"/topic/0001-*.patch "$T"/topic/0003-*.patch

# ---- a: mailinfo ------------------------------------------------------------

mkdir -p "$T/odd"
w() { printf '%b' "$2" >"$T/odd/$1"; }
DIFF='---\n f | 1 +\n\ndiff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n'
w nospace 'From: A U Thor <a@example.org>\nSubject:no space\nDate:Tue, 14 Nov 2023 22:13:20 +0100\n\nbody\n'"$DIFF"
w folded 'From: A U Thor\n <a@example.org>\nSubject: [PATCH 1/2]\n\t[RFC]   folded\n   subject\n\nbody\n'"$DIFF"
w re 'From: a@example.org\nSubject: Re: [PATCH] Re: re: [x] y [PATCH] z\n\nbody\n'"$DIFF"
w quoted 'From: "Doe, John \\"JD\\"" <jd@example.org>\nSubject: [PATCH] quoted\n\nbody\n'"$DIFF"
w comment 'From: jd@example.org (John (the) Doe)\nSubject: [PATCH] comment\n\nbody\n'"$DIFF"
w shortname 'From: Al <al@example.org>\nSubject: [PATCH] short\n\nbody\n'"$DIFF"
w longname 'From: A Very Very Very Long Name That Goes On And On For Too Long <l@example.org>\nSubject: long\n\nb\n'"$DIFF"
w bogus 'From: John Doe <johndoe>\nSubject: bogus\n\nb\n'"$DIFF"
w latin1word 'From: =?ISO-8859-1?Q?J=F6rg_M=FCller?= <jm@example.org>\nSubject: =?iso-8859-1?b?Q2Fm6Q==?= =?utf-8?q?_cr=C3=A8me?=\n\nb\n'"$DIFF"
w inbody 'From: Sender <s@example.org>\nSubject: [PATCH] outer\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n\n\nFrom: Real Author\n <real@example.org>\nSubject: inner\n  subject\nDate: Tue, 2 Jan 2024 10:00:00 -0500\n\nbody\n'"$DIFF"
w inbody-nopatch 'From: Sender <s@example.org>\nSubject: outer\n\nFrom: Real <real@example.org>\n\nno patch here\n'
w patchline 'From: a@example.org\nSubject: outer\n\n[PATCH] from the body\nmore\n'"$DIFF"
w gtfrom 'From: a@example.org\nSubject: outer\n\n>From 0123456789012345678901234567890123456789 Mon Sep 17 00:00:00 2001\nFrom: Real <r@example.org>\n\nbody\n'"$DIFF"
w qpsoft 'From: a@example.org\nSubject: qp\nContent-Transfer-Encoding: quoted-printable\n\nsoft=\n break and =3D sign=20\nx=3\n'"$DIFF"
w b64noeol 'From: a@example.org\nSubject: b64\nContent-Transfer-Encoding: base64\n\nYm9keSB3aXRob3V0IGVvbAp0YWls\n'
w charset 'From: a@example.org\nSubject: charset\nContent-Type: text/plain; charset=iso-8859-1\n\ncaf\xe9 body\n'"$DIFF"
w badcharset 'From: a@example.org\nSubject: bad charset\nContent-Type: text/plain; charset=us-ascii\n\ncaf\xe9 body\n'"$DIFF"
w badword 'From: a@example.org\nSubject: broken =?utf-8?q?word\n\nb\n'"$DIFF"
w flowed 'From: a@example.org\nSubject: flowed\nContent-Type: text/plain; format=flowed; delsp=yes\n\nthis is a long \nflowed line\n  stuffed\n-- \nsig\n'"$DIFF"
w nested 'From: a@example.org\nSubject: nested\nContent-Type: multipart/mixed; boundary=out\n\npreamble\n--out\nContent-Type: multipart/alternative; boundary="in"\n\n--in\nContent-Type: text/plain\n\ninner text\n--in--\nafter inner\n--out\nContent-Type: text/x-diff\n\n'"$DIFF"'--out--\nepilogue\n'
w noheaderpart 'From: a@example.org\nSubject: part\nContent-Type: multipart/mixed; boundary=b\n\n--b\nfirst line eaten\nsecond\n--b--\n'
w nosubject 'From: a@example.org\n\njust a body\n'"$DIFF"
w crlfmail 'From: a@example.org\r\nSubject: crlf\r\n\r\nbody\r\n---\r\n'
w dashes 'From: a@example.org\nSubject: dashes\n\nbody\n---- not a break\n--- \t \nafter\n'
w diffdash 'From: a@example.org\nSubject: diffdash\n\nbody\ndiff -u a b\nrest\n'
w emptyfrom 'From: \nSubject: no author\n\nbody\n'"$DIFF"

# 300 mails in random forms (fixed seed; 100 in a sanitized build):
# gen-mails.py
/usr/bin/python3 "$HERE/gen-mails.py" "$T/gen" "$(scaled 300 100)" || bail "gen-mails.py failed"
# each case: NAME TAB MAIL [TAB --keep-cr], compared by mailinfo-compare.py
{
	for m in "$T"/odd/*; do
		printf 'odd/%s\t%s\n' "${m##*/}" "$m"
	done
	printf 'odd/crlfmail --keep-cr\t%s\t--keep-cr\n' "$T/odd/crlfmail"
	for m in "$T"/gen/*.eml; do
		printf 'gen/%s\t%s\n' "${m##*/}" "$m"
	done
	for dir in topic topic-qp topic-base64 topic-attach topic-inbody \
		   topic-crlf topic-latin1 crlf crlf-base64 edge links v2 copymod; do
		for m in "$T/$dir"/*.patch; do
			printf '%s/%s\t%s\n' "$dir" "${m##*/}" "$m"
		done
	done
} >"$T/mailinfo.cases"
results=0
while IFS=$'\t' read -r res name rest; do
	results=$((results + 1))
	if [ "$res" = ok ]; then
		pass "mailinfo $name"
	else
		IFS=$'\t' read -ra why <<<"$rest"
		fail "mailinfo $name" "${why[@]}"
	fi
done < <(/usr/bin/python3 "$HERE/mailinfo-compare.py" "$TOOL" "$T/mi" <"$T/mailinfo.cases")
is "$results" "$(wc -l <"$T/mailinfo.cases")" "mailinfo: one result per case"

# ---- b, c, d: series ----------------------------------------------------------

# series NAME BASE [--keep-cr] [--allow-symlinks] MAIL...: git am vs
# pgate, patch by patch
series() {
	local name=$1 base=$2 keep= allow= am=$T/am-$1 n k rc out amn ac at line
	shift 2
	if [ "$1" = --keep-cr ]; then keep=--keep-cr; shift; fi
	if [ "$1" = --allow-symlinks ]; then allow=$1; shift; fi
	n=$#
	rm -rf "$am"
	base=$(git -C "$T/r" rev-parse "$base")
	git clone -q "$T/r" "$am" && git -C "$am" checkout -q --detach "$base" ||
		bail "clone for $name failed"
	GIT_COMMITTER_NAME=$CNAME GIT_COMMITTER_EMAIL=$CMAIL \
		GIT_COMMITTER_DATE=$CDATE git -C "$am" am -q $keep "$@" \
		>"$T/am-$name.log" 2>&1
	out=$("$TOOL" apply --committer "$CNAME <$CMAIL>" --date "$CDATE" \
	      $keep $allow "$T/pg.git" "$base" "$@")
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: pgate-apply-tool ran" "$out"
		return
	fi
	printf '%s\n' "$out" >"$T/pg-$name.log"
	# git am's commits and trees, and pgate's "patch K: STATE COMMIT TREE"
	# lines, read without a process per patch
	local -a amc amt pline
	local status=
	while read -r ac at; do
		amc+=("$ac") amt+=("$at")
	done < <(git -C "$am" log --reverse --format='%H %T' "$base..HEAD")
	amn=${#amc[@]}
	while read -r line; do
		case $line in
		"patch "*:*)
			k=${line#patch }
			k=${k%%:*}
			pline[$k]=${line#patch "$k": } ;;
		"status: "*)
			status=${line#status: } ;;
		esac
	done <<<"$out"
	for ((k = 1; k <= n; k++)); do
		local pstate pc pt
		line=${pline[$k]:-}
		read -r pstate pc pt <<<"$line"
		if [ "$k" -gt "$amn" ]; then
			if [ "$k" -eq $((amn + 1)) ]; then
				is "$pstate" failed "$name $k: fails where git am fails" ||
					diag "$(tail -n 3 "$T/am-$name.log")"
			fi
			continue
		fi
		ac=${amc[$((k - 1))]}
		at=${amt[$((k - 1))]}
		if [ "$pstate" != applied ]; then
			fail "$name $k: applied as by git am" "$line" \
				"$(printf '%s\n' "$out" | grep -E '^(failed|reason):')"
			continue
		fi
		if [ "$pt" = "$at" ]; then
			pass "$name $k: tree $at"
		else
			fail "$name $k: tree" "git am $at, pgate $pt" \
				"$(git -C "$T/pg.git" diff --stat "$at" "$pt" 2>&1 | tail -n 5)"
		fi
		if [ "$pc" = "$ac" ]; then
			pass "$name $k: commit $ac"
		else
			fail "$name $k: commit" "git am $ac, pgate $pc" \
				"$(diff <(git -C "$am" cat-file commit "$ac") \
					<(git -C "$T/pg.git" cat-file commit "$pc") |
				   sed -n 's/^\([<>]\) \(tree\|parent\|author\|committer\|encoding\)\b.*/\1 \2 differs: &/p;/^[<>] [^a-z]/p' |
				   head -n 8)"
		fi
	done
	is "$status" \
	   "$([ "$amn" -eq "$n" ] && echo ok || echo failed)" "$name: status"
}

series topic base "$T"/topic/*.patch
for mode in qp base64 attach inbody crlf; do
	series "topic-$mode" base "$T/topic-$mode"/*.patch
done
series topic-latin1 base "$T"/topic-latin1/*.patch
series v2 base "$T"/v2/*.patch
series crlf base "$T"/crlf/*.patch
series crlf-keep-cr base --keep-cr "$T"/crlf/*.patch
series crlf-base64 base "$T"/crlf-base64/*.patch
series edge base "$T"/edge/*.patch
series copymod base "$T"/copymod/*.patch
for m in "$T"/copymod-odd/*.patch; do
	k=${m##*/}
	series "copymod-odd-${k%.patch}" base "$m"
done
series links base --allow-symlinks "$T"/links/*.patch
out=$("$TOOL" apply "$T/pg.git" base "$T"/links/*.patch)
like "$out" 'status: rejected' "links: refused without allow_symlinks"
series topic-on-moved moved "$T"/topic/*.patch

# the cases the corpus must hold, or the comparisons above prove little
for what in "rename from" "similarity index 100%" "new mode 100755" \
	    "old mode 100755" "GIT binary patch" "deleted file mode" \
	    "new file mode 100755" '\ No newline at end of file' \
	    'caf\351' "60 files changed" "=?UTF-8?q?"; do
	if grep -q -F -- "$what" "$T"/topic/*.patch; then
		pass "corpus has: $what"
	else
		fail "corpus has: $what"
	fi
done
like "$(grep -l '^delta ' "$T"/topic/*.patch | wc -l)" '^[1-9]' "corpus has a binary delta"
like "$(grep -l '^copy from ' "$T"/copymod/*.patch | wc -l)" '^2$' \
	"corpus has a file changed and copied in one patch, twice"
like "$(grep -c '^rename from \|^diff --git' "$T"/copymod/0003-*.patch)" '^3$' \
	"corpus has a file changed and renamed in one patch"
like "$(grep -c '^rename from \|^copy from \|^diff --git' "$T"/copymod-odd/*.patch | tr '\n' ' ')" \
	"1-rename-after.patch:5 .*2-rename-then-copy.patch:4" \
	"corpus has a change, a copy and a rename of one file in one patch"
like "$(grep -c '^@@' "$T"/topic/0001-*.patch)" '^[4-9]' "corpus has a multi-hunk patch"
# the moved branch really makes git apply use offsets
like "$(git -C "$T/am-topic-on-moved" apply --check -v -R --cached \
	"$T"/topic/0001-*.patch 2>&1 | grep -c 'offset')" '^[1-9]' \
	"the moved branch puts hunks at offsets"
done_testing
