#!/bin/bash
# gen-trailers.sh DIR - a small series with review replies, for
# t0540-apply-trailers: DIR/repo.git (the base on master), DIR/list.mbox
# (mboxrd: the v2 cover, patches 1/2 and 2/2 made by git format-patch,
# then replies carrying Reviewed-by, Acked-by and Tested-by).
#
#   patch 1: own trailers: Signed-off-by Alice
#   patch 2: own trailers: Reviewed-by Carol, Signed-off-by Maint Ainer
#            (the applier: moved last), Signed-off-by Alice
#   replies: Bob reviews 1/2; Dave acks the cover (every patch); Carol
#            reviews 2/2 again (already there) and tests it
# Deterministic: fixed names, dates and Message-IDs.
set -eu
out=${1:?usage: gen-trailers.sh DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME=$work TZ=UTC LC_ALL=C
git config --global init.defaultBranch master
git config --global format.signOff false
t=1733212800
tick() { t=$((t + 3600)); export GIT_AUTHOR_DATE="$t +0000" GIT_COMMITTER_DATE="$t +0000"; }
as() { export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2"; }

git init -q "$work/src"
cd "$work/src"
as "Maint Ainer" "maint@example.org"
printf 'one\ntwo\nthree\n' >a.txt
printf 'alpha\nbeta\n' >b.txt
tick; git add -A; git commit -qm "base"
git clone -q --bare . "$out/repo.git"
as "Alice Developer" "alice@example.org"
printf 'one\ntwo\nthree\nfour\n' >a.txt
tick; git commit -qam "foo: add four

Four comes after three.

Signed-off-by: Alice Developer <alice@example.org>"
printf 'alpha\nbeta\ngamma\n' >b.txt
tick; git commit -qam "foo: add gamma

Gamma comes after beta;
the list was short.

Reviewed-by: Carol Reviewer <carol@example.org>
Signed-off-by: Maint Ainer <maint@example.org>
Signed-off-by: Alice Developer <alice@example.org>"
git format-patch -q -v2 --cover-letter --thread=shallow -o "$work/p" HEAD~2
# fixed Message-IDs, and a cover with words in it
n=0
for f in "$work"/p/*.patch; do
	sed -i -e "s/^Message-Id: <.*>/Message-Id: <v2-$n.foo@example.org>/" \
	    -e "s/^\(In-Reply-To\|References\): <.*>/\1: <v2-0.foo@example.org>/" \
	    -e 's/\*\*\* SUBJECT HERE \*\*\*/foo: two more lines/' \
	    -e 's/\*\*\* BLURB HERE \*\*\*/Two small additions./' "$f"
	n=$((n + 1))
done
reply() {	# reply N FROM DATE PARENT SUBJECT BODY
	cat <<EOF
From: $2
To: list@example.org
Subject: Re: $5
Date: $3
Message-Id: <reply-$1.foo@example.org>
In-Reply-To: <$4>
References: <v2-0.foo@example.org> <$4>

$6
EOF
}
subj() { sed -n 's/^Subject: //p' "$1" | head -1; }
p=("$work"/p/*.patch)
reply 1 "Bob Reviewer <bob@example.org>" "Tue, 03 Dec 2024 12:00:00 +0000" \
	v2-1.foo@example.org "$(subj "${p[1]}")" "Looks good.

Reviewed-by: Bob Reviewer <bob@example.org>" >"$work/r1"
reply 2 "Dave Acker <dave@example.org>" "Tue, 03 Dec 2024 12:10:00 +0000" \
	v2-0.foo@example.org "$(subj "${p[0]}")" "For the series:

Acked-by: Dave Acker <dave@example.org>" >"$work/r2"
reply 3 "Carol Reviewer <carol@example.org>" "Tue, 03 Dec 2024 12:20:00 +0000" \
	v2-2.foo@example.org "$(subj "${p[2]}")" "Still fine, and it works here.

Reviewed-by: Carol Reviewer <carol@example.org>
Tested-by: Carol Reviewer <carol@example.org>" >"$work/r3"
: >"$out/list.mbox"
for f in "${p[@]}" "$work"/r1 "$work"/r2 "$work"/r3; do
	{
		printf 'From mboxrd@z Thu Jan  1 00:00:00 1970\n'
		sed -e '1{/^From [0-9a-f]\{40\} /d}' -e 's/^\(>*From \)/>\1/' "$f"
		printf '\n'
	} >>"$out/list.mbox"
done
