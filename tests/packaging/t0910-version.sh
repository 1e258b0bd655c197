#!/bin/bash
# t0910-version - `patchgate --version`: the version (git describe of the
# tree, else the project's version), then one line per library: gmime,
# libgit2, lmdb, curl, jansson, glib (cli/version.c).  The lean hook says
# which two it only knows from patchgate-full's headers.

. "${SRCDIR:?}/tests/lib/tap.sh"

FULL=${PATCHGATE_FULL:?}
LEAN=${PATCHGATE:?}

# what vcs_tag may have said: `git describe --tags`, else the project's
# version and a commit of this repository, else (not a checkout) the
# project's version; "+" when the tree had changes.  (HEAD may move
# between the build and this test: the commit need only be one of ours.)
version_ok() {
	local v=${1%+} h
	[ "$v" = "${PGATE_PROJECT_VERSION:?}" ] && return 0
	if [ -n "$tagged" ]; then
		[ "$v" = "${tagged%+}" ] && return 0
	fi
	case $v in
	"$PGATE_PROJECT_VERSION"-g*) h=${v#"$PGATE_PROJECT_VERSION"-g} ;;
	*) return 1 ;;
	esac
	git -C "$SRCDIR" cat-file -e "$h^{commit}" 2>/dev/null
}
tagged=$(git -C "$SRCDIR" describe --tags --dirty=+ 2>/dev/null)
tap_tmpdir
cd "$TAP_TMP" || bail "cd"

for bin in "$FULL" "$LEAN"; do
	name=${bin##*/}
	out=$("$bin" --version)
	is "$?" 0 "$name --version exits 0"
	first=${out%%$'\n'*}
	ok "$name: the version line ('$first')" version_ok "${first#patchgate }"
	for lib in gmime libgit2 lmdb curl jansson glib; do
		ok "$name: $lib's version" grep -Eq "^$lib [0-9]+\\.[0-9]+" <<<"$out"
	done
	is "$(printf '%s\n' "$out" | wc -l)" 7 "$name: seven lines"
done

full=$("$FULL" --version)
unlike "$full" "compiled against" "patchgate-full: every version asked at run time"
lean=$("$LEAN" --version)
like "$lean" $'libgit2 [0-9.]+ \\(patchgate-full, compiled against\\)' \
	"the lean hook: libgit2 is patchgate-full's"
# the libraries both load are the same ones, unless the hook is static
if [ "${PGATE_LEAN_STATIC:-0}" = 0 ]; then
	is "$(grep -E '^(gmime|lmdb|jansson|glib) ' <<<"$lean")" \
		"$(grep -E '^(gmime|lmdb|jansson|glib) ' <<<"$full")" \
		"the lean hook and patchgate-full load the same gmime, lmdb, jansson, glib"
else
	like "$lean" $'\ngmime [0-9.]+ \\(static\\)' "the static hook says so"
fi
if command -v dpkg-parsechangelog >/dev/null; then
	is "$(dpkg-parsechangelog -l "$SRCDIR/debian/changelog" -S Version)" \
		"$PGATE_PROJECT_VERSION" \
		"debian/changelog's version is meson's project version"
else
	skip "debian/changelog's version" "no dpkg-parsechangelog"
fi
ok "--version needs no state directory" test ! -e "$TAP_TMP/patchgate-state"
done_testing
