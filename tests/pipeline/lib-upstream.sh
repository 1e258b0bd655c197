# lib-upstream.sh - what the upstream tests (t0580, t0585) share: a
# project in $T/src, its upstream $T/up.git with a maintainer's clone
# $T/maint and the mirror patchgate reads ($T/mirror.git), and series
# mailed from it.  Source it after tap.sh and pgate.sh, with $T set.
export GIT_AUTHOR_NAME="Ann Dev" GIT_AUTHOR_EMAIL=ann@example.org
export GIT_COMMITTER_NAME="Ann Dev" GIT_COMMITTER_EMAIL=ann@example.org
export GIT_AUTHOR_DATE="1733212800 +0000"

git init -q -b master "$T/src"
echo base >"$T/src/README"
git -C "$T/src" add . && git -C "$T/src" commit -q -m init
git init -q --bare -b master "$T/up.git"
git -C "$T/src" push -q "$T/up.git" master
git clone -q "$T/up.git" "$T/maint"
git -C "$T/maint" config user.name "Mai Ntainer"
git -C "$T/maint" config user.email mai@example.org
git clone -q --mirror "$T/up.git" "$T/mirror.git" 2>/dev/null ||
	bail "cannot mirror"
# a mirror's fetch refspec is refs/*:refs/*: branches read as master
n=0
# mkseries NAME COUNT [PREFIX]: a series of COUNT patches with a cover,
# each adding NAME-i, mailed into $T/NAME/
mkseries() {
	local name=$1 count=$2 prefix=${3:-PATCH} i
	git -C "$T/src" checkout -q -B "$name" master
	for i in $(seq "$count"); do
		n=$((n + 1))
		# a date of its own: one sender's patches of the same minute
		# could be taken for one series
		export GIT_AUTHOR_DATE="$((1733212800 + n * 3600)) +0000"
		echo "$name $i" >"$T/src/$name-$i.txt"
		git -C "$T/src" add . &&
		git -C "$T/src" commit -q -m "$name: add part $i" \
			-m "Part $i of $name." -m "Signed-off-by: Ann Dev <ann@example.org>"
	done
	rm -rf "${T:?}/$name"
	git -C "$T/src" format-patch -q --cover-letter --thread -"$count" \
		-o "$T/$name" --subject-prefix="$prefix" >/dev/null
	git -C "$T/src" checkout -q master
	unique "$name"
}
# format-patch's Message-IDs hold the second it ran: two series made in
# the same second would share their cover's; and every cover its subject
unique() {
	sed -i -E "s/\.[0-9]+\.git\.ann@/.$1.git.ann@/; s/\*\*\* SUBJECT HERE \*\*\*/${2:-$1}: the series/" "$T/$1"/*.patch
}
msgid() { sed -n 's/^Message-I[dD]: <\(.*\)>$/\1/p' "$1"; }
patch_n() { ls "$T/$1"/000"$2"-*.patch; }
# am_link FILE: git am in the maintainer's tree, then b4's Link: trailer
am_link() {
	git -C "$T/maint" am -q "$1" >/dev/null &&
	git -C "$T/maint" commit -q --amend --no-edit \
		--trailer "Link: https://lore.kernel.org/r/$(msgid "$1")"
}
push() { git -C "$T/maint" push -q -f origin "${1:-master}"; }
# mkpatch NAME SUBJECT FILE TEXT [PREFIX]: one patch (no cover) writing
# TEXT and a newline to FILE, with the author and date of the
# environment, mailed into $T/NAME/
mkpatch() {
	local name=$1 subject=$2 file=$3 text=$4 prefix=${5:-PATCH}
	git -C "$T/src" checkout -q -B "$name" master
	printf '%s\n' "$text" >"$T/src/$file"
	git -C "$T/src" add . &&
	git -C "$T/src" commit -q -m "$subject" \
		-m "Signed-off-by: $GIT_AUTHOR_NAME <$GIT_AUTHOR_EMAIL>"
	rm -rf "${T:?}/$name"
	git -C "$T/src" format-patch -q --thread -1 -o "$T/$name" \
		--subject-prefix="$prefix" >/dev/null
	git -C "$T/src" checkout -q master
	unique "$name"
}
