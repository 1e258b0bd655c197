#!/bin/bash
# t0110-patchid - pgate_patch_id_stable() against `git patch-id --stable`.
#
# Builds a repository whose commits cover what a diff can hold (several
# hunks and files, new, deleted, renamed, copied and binary files, mode
# changes, missing newlines at the end, lines that look like diff headers,
# quoted names, CRLF content), formats each commit as a mail in several
# ways and checks, for each mail, that
#   - the patch-id of the mail's bytes,
#   - the patch_id of the parsed mail (the extracted diff),
# both equal the first id `git patch-id --stable` prints for the mail.
# The Patchwork fixtures with a diff are checked the same way.
#
# Needs PGATE_PARSE_DUMP (tests/ingest/pgate-parse-dump) and git.

set -u

dump=${PGATE_PARSE_DUMP:?PGATE_PARSE_DUMP is not set}
corpus=${PGATE_TEST_CORPUS:-}

if ! command -v git >/dev/null; then
	echo "1..0 # SKIP git is not installed"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t0110.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
export GIT_AUTHOR_NAME='A U Thor' GIT_AUTHOR_EMAIL=author@example.org
export GIT_COMMITTER_NAME='C O Mitter' GIT_COMMITTER_EMAIL=c@example.org
export GIT_AUTHOR_DATE='2024-01-02 03:04:05 +0000'
export GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE

n=0
failed=0
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for line in "$@"; do
		echo "# $line"
	done
}

repo=$tmp/repo
git init -q "$repo"
cd "$repo" || exit 1

commit() {
	git add -A && git commit -q -m "$1" -m "Body of $1." \
		-m "Signed-off-by: A U Thor <author@example.org>"
}

# 1: a new text file, then edits in several hunks
seq 1 200 >numbers.txt
printf 'hello\n' >one-line.txt
commit "add files"
sed -i -e 's/^10$/ten/' -e 's/^150$/one hundred and fifty/' numbers.txt
commit "two hunks"
sed -i -e 's/^20$/twenty/' numbers.txt
printf 'bye\n' >one-line.txt
commit "two files, one-line file"

# whitespace-only change: stable patch-id ignores whitespace
sed -i -e 's/^30$/  30/' numbers.txt
commit "whitespace"

# missing newline at the end, added and then removed
printf 'no newline' >nonl.txt
commit "file without newline"
printf 'no newline\nnow one\n' >nonl.txt
commit "newline added"
printf 'no newline' >nonl.txt
commit "newline removed again"

# lines that look like diff headers inside a hunk
printf -- '-- \n--- a\n+++ b\n@@ -1 +1 @@\ndiff --git\nindex 1..2\n' >tricky.txt
commit "tricky content"
printf -- '--- x\n+++ y\nplain\n' >tricky.txt
commit "tricky content changed"

# a line starting with 40 hex digits in the log message
git commit -q --allow-empty -m "hex in message" \
	-m "0123456789012345678901234567890123456789 is a commit id"
printf 'after hex\n' >>one-line.txt
git commit -q -a -m "hex in message" \
	-m "0123456789abcdef0123456789abcdef01234567 starts this line"

# new, deleted, renamed, copied, mode changes
printf 'fresh\n' >new.txt
commit "new file"
: >empty.txt
commit "empty file"
git rm -q new.txt
commit "delete file"
git mv numbers.txt renamed.txt
commit "pure rename"
git mv renamed.txt numbers.txt
sed -i -e 's/^40$/forty/' numbers.txt
commit "rename with edit"
chmod +x one-line.txt
commit "mode change only"
chmod -x one-line.txt
printf 'mode and content\n' >>one-line.txt
commit "mode change and edit"
cp numbers.txt copied.txt
printf 'x\n' >>copied.txt
commit "copy"
mkdir -p 'dir with space'
printf 'spaces\n' >'dir with space/file name.txt'
printf 'caf\303\251\n' >"caf$(printf '\303\251').txt"
commit "names with spaces and UTF-8"
printf 'crlf\r\nline\r\n' >crlf.txt
commit "CRLF content"

# text that is no UTF-8: the diff is hashed as sent, not converted
printf 'caf\351 cr\350me br\373l\351e\n' >latin1.txt
commit "ISO-8859-1 content"
printf 'caf\351 au lait\n' >latin1.txt
commit "ISO-8859-1 content changed"
# every byte but NUL, so git still calls it text
all_bytes() {
	local i
	for i in $(seq "$1" "$2"); do
		printf "\\$(printf %03o "$i")"
	done
}
{ all_bytes 1 255; printf '\n'; } >bytes.txt
commit "all bytes as text"
{ all_bytes 1 127; printf '\n'; all_bytes 128 255; printf '\n'; } >bytes.txt
commit "all bytes as text, split"

# binary: new, modified, deleted, with text and a rename
all_bytes 0 255 >blob.bin
commit "binary new"
printf '\000more' >>blob.bin
commit "binary modified"
git mv blob.bin blob2.bin
printf '\000again' >>blob2.bin
printf 'text too\n' >>one-line.txt
commit "binary renamed and changed, with text"
git rm -q blob2.bin
commit "binary deleted"

# many files, many hunks
for i in $(seq 1 12); do seq 1 100 >"f$i.txt"; done
commit "twelve files"
for i in $(seq 1 12); do
	sed -i -e "s/^$((i * 7))\$/changed $i/" -e 's/^90$/ninety/' "f$i.txt"
done
commit "twelve files, two hunks each"

count=$(git rev-list --count HEAD)
# each commit's number and subject, by commit id
declare -A num subj
k=0
while read -r rev subject; do
	k=$((k + 1))
	num[$rev]=$k
	subj[$rev]=$subject
done < <(git log --reverse --format='%H %s')

# one format-patch, one git patch-id and one pgate-parse-dump per form
# (a process per mail made this test slow: fork and exec cost more than
# the work on this VM)
for mode in default nobinary U0 U1 noprefix fullindex M C; do
	case $mode in
	default) opts=() ;;
	nobinary) opts=(--no-binary) ;;
	U0) opts=(-U0) ;;
	U1) opts=(-U1) ;;
	noprefix) opts=(--no-prefix) ;;
	fullindex) opts=(--full-index) ;;
	M) opts=(-M) ;;
	C) opts=(-C -C) ;;
	esac
	dir=$tmp/$mode
	want=()
	# format-patch leaves out the empty commit
	git format-patch -q -o "$dir" --root "${opts[@]}" HEAD 2>/dev/null ||
		{ not_ok "format-patch $mode"; continue; }
	# git's ids in the order of the mails: git patch-id starts a commit at
	# any line of 40 hex digits, the body's too, so the ids are matched
	# by position, not by commit id
	mapfile -t want < <(cat "$dir"/*.patch | git patch-id --stable |
		cut -d' ' -f1)
	i=0
	while read -r raw parsed mail; do
		[ -s "$mail" ] || continue   # the empty commit: an empty file
		read -r _ rev _ <"$mail"
		what="${num[$rev]}/$count ${subj[$rev]} ($mode)"
		w=${want[$i]:-}
		i=$((i + 1))
		if [ -z "$w" ]; then
			not_ok "$what: git found no diff" "mail: $mail"
		elif [ "$raw" = "$w" ] && [ "$parsed" = "$w" ]; then
			ok "$what"
		else
			not_ok "$what" "git:    $w" "raw:    $raw" "parsed: $parsed"
		fi
	done < <("$dump" --ids "$dir"/*.patch)
	[ "$i" -eq "${#want[@]}" ] ||
		not_ok "$mode: $i mails, ${#want[@]} ids from git"
done

# a mail whose diff comes as a text/x-patch attachment
{
	printf 'From: A <a@example.org>\nSubject: [PATCH] attached\n'
	printf 'Message-ID: <att@example.org>\nMIME-Version: 1.0\n'
	printf 'Content-Type: multipart/mixed; boundary="b"\n\n--b\n'
	printf 'Content-Type: text/plain\n\nSee the attachment.\n--b\n'
	printf 'Content-Type: text/x-patch; name="x.patch"\n'
	printf 'Content-Transfer-Encoding: base64\n\n'
	git format-patch -q -1 --stdout HEAD | sed -n '/^diff /,$p' | base64
	printf -- '--b--\n'
} >"$tmp/attached.mbox"
want=$(git format-patch -q -1 --stdout HEAD | git patch-id --stable | cut -d' ' -f1)
got=$("$dump" "$tmp/attached.mbox" | sed -n 's/^patch_id: //p')
if [ "$got" = "$want" ]; then
	ok "text/x-patch attachment"
else
	not_ok "text/x-patch attachment" "git: $want" "ours: $got"
fi

# the Patchwork fixtures that hold a diff (their diffs as extracted: git
# itself stops at the first CVS file of 0007, so compare with that)
if [ -n "$corpus" ] && [ -d "$corpus/patchwork/mail" ]; then
	for f in "$corpus"/patchwork/mail/*.mbox; do
		diff_text=$("$dump" --diff-only "$f")
		[ -n "$diff_text" ] || continue
		want=$(printf '%s\n' "$diff_text" | git patch-id --stable |
			head -n 1 | cut -d' ' -f1)
		got=$("$dump" "$f" | sed -n 's/^patch_id: //p')
		if [ "$got" = "$want" ]; then
			ok "fixture $(basename "$f")"
		else
			not_ok "fixture $(basename "$f")" "git: $want" "ours: $got"
		fi
	done
fi

echo "1..$n"
[ "$failed" -eq 0 ]
