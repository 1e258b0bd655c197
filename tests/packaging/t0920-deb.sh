#!/bin/bash
# t0920-deb - the Debian package (debian/, docs/install.md): built from a
# copy of the tree with dpkg-buildpackage (nocheck, parallel=2: the suite
# has just run the tests on this code), checked by lintian (an error
# fails), then installed with dpkg -i into a throwaway root: an overlay
# of / whose writes go to a directory of this test, in a mount namespace
# of its own, chrooted into (deb-inside.sh checks --version, man, the
# unit, the user and the state directory, a delivery through procmail as
# patchgate, and purge).  Last, the overlay's upper directory is what the
# install-to-purge cycle left behind: it must hold nothing but dpkg's
# records and logs, and no file of the system may have been removed.
#
# Needs root, dpkg-buildpackage, debhelper, and the build dependencies
# (scripts/install-deps); skips otherwise, and in a sanitized build.  Without overlayfs it installs
# on the machine itself (only when patchgate is not installed there) and
# purges afterwards.

. "${SRCDIR:?}/tests/lib/tap.sh"

# the package is built from the sources, whatever this build's options:
# once per suite run is enough, and the plain build's run does it
[ "${PGATE_TEST_SANITIZED:-0}" = 0 ] ||
	skip_all "a sanitized build (the plain build's suite builds the package)"
[ "$(id -u)" = 0 ] || skip_all "not root (dpkg -i needs it)"
for t in dpkg-buildpackage dh dpkg-checkbuilddeps unshare chroot runuser procmail man groff; do
	command -v "$t" >/dev/null || skip_all "no $t (scripts/install-deps installs it)"
done
(cd "$SRCDIR" && dpkg-checkbuilddeps -B) >/dev/null 2>&1 ||
	skip_all "build dependencies missing: $(cd "$SRCDIR" && dpkg-checkbuilddeps -B 2>&1)"
tap_tmpdir
T=$TAP_TMP

# --- a copy of the tree: what git tracks or would (built dirs aside);
# dpkg-buildpackage writes in the tree it builds
mkdir "$T/src"
if git -C "$SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$SRCDIR" && git ls-files -co --exclude-standard -z |
		tar -cf - --null -T - 2>/dev/null) | tar -xf - -C "$T/src"
else
	(cd "$SRCDIR" && tar -cf - --exclude='./build*' --exclude=./debian/build .) |
		tar -xf - -C "$T/src"
fi
ok "a copy of the tree" test -x "$T/src/debian/rules"
# a repository of the copy, kept outside it (so that the build's `git
# describe` finds none): what the build leaves must be ignored by git
G=(git --git-dir="$T/git" --work-tree="$T/src" -c user.name=t -c user.email=t@t)
have_git=
if command -v git >/dev/null && "${G[@]}" init -q && "${G[@]}" add -A &&
	"${G[@]}" commit -q -m copy; then
	have_git=1
fi

start=$SECONDS
(cd "$T/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1
rc=$?
is "$rc" 0 "dpkg-buildpackage -us -uc -b ($((SECONDS - start)) s)"
if [ "$rc" != 0 ]; then
	tail -30 "$T/build.log" | diag
	done_testing
fi
if [ -n "$have_git" ]; then
	is "$("${G[@]}" status --porcelain)" "" \
		"the build leaves nothing git sees in the tree (debian/.gitignore)"
	(cd "$T/src" && debian/rules clean) >"$T/clean.log" 2>&1
	is "$("${G[@]}" status --porcelain --ignored)" "" \
		"debian/rules clean removes everything the build wrote"
else
	skip "the tree after the build" "no git"
fi
deb=$(echo "$T"/patchgate_*_*.deb)
ok "the .deb is there" test -f "$deb"
changes=$(echo "$T"/patchgate_*.changes)

if command -v lintian >/dev/null; then
	start=$SECONDS
	lintian --fail-on error "$changes" >"$T/lintian" 2>&1
	is "$?" 0 "lintian: no error ($((SECONDS - start)) s)"
	grep -v 'running with root privileges' "$T/lintian" | diag
else
	skip "lintian" "lintian is not installed (scripts/install-deps installs it)"
fi

# --- the throwaway root
R=$T/root
mkdir -p "$R/up/pgtest" "$R/work" "$R/mnt"
cp "$deb" "$SRCDIR/tests/packaging/deb-inside.sh" "$R/up/pgtest/"
chmod 0755 "$R/up/pgtest"
inside_deb=/pgtest/${deb##*/}
inside() {
	unshare --mount --propagation private bash -c '
		R=$1; shift
		mount -t overlay overlay \
			-o "lowerdir=/,upperdir=$R/up,workdir=$R/work" "$R/mnt" || exit 90
		mount -t proc proc "$R/mnt/proc" &&
		mount --rbind /dev "$R/mnt/dev" &&
		mount -t tmpfs tmpfs "$R/mnt/run" &&
		mount -t tmpfs tmpfs "$R/mnt/tmp" || exit 91
		exec chroot "$R/mnt" "$@"
	' inside "$R" "$@"
}
if inside true 2>"$T/ov.err"; then
	inside bash /pgtest/deb-inside.sh "$_tap_n" "$inside_deb" /tmp >"$T/inside.tap" 2>&1
	rc=$?
	where="the throwaway root"
else
	diag "no overlay of / here ($(cat "$T/ov.err")): installing on the machine itself"
	if dpkg-query -W patchgate >/dev/null 2>&1 || getent passwd patchgate >/dev/null; then
		skip "install, use and purge" "patchgate is installed on this machine already"
		done_testing
	fi
	mkdir -p "$T/scratch"
	bash "$SRCDIR/tests/packaging/deb-inside.sh" "$_tap_n" "$deb" "$T/scratch" \
		>"$T/inside.tap" 2>&1
	rc=$?
	# whatever happened, the machine is left as it was
	dpkg --purge patchgate >/dev/null 2>&1
	where="this machine"
fi
# the inside's TAP lines are ours; its count goes on from ours
grep -v '^# count ' "$T/inside.tap"
n=$(sed -n 's/^# count //p' "$T/inside.tap")
if [ -n "$n" ]; then
	_tap_failed=$((_tap_failed + $(grep -c '^not ok' "$T/inside.tap")))
	_tap_n=$n
else
	fail "deb-inside.sh ran to its end in $where (exit $rc)"
fi

# --- what the install-to-purge cycle left in the overlay
if [ "$where" = "the throwaway root" ]; then
	/usr/bin/python3 - "$R/up" >"$T/left" <<'PY'
import os, stat, sys, filecmp
up = sys.argv[1]
# dpkg's records and logs, the man-db cache, and the files passwd and
# group's tools rewrite (their content is compared, their backups not)
ALLOWED = ("pgtest", "var/lib/dpkg/", "var/log/", "var/cache/",
           "etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-",
           "etc/.pwd.lock", "var/lib/systemd/deb-systemd-helper-enabled/",
           "var/lib/systemd/deb-systemd-helper-masked/", "run", "tmp")
for dirpath, dirs, files in os.walk(up):
    for name in dirs + files:
        p = os.path.join(dirpath, name)
        rel = os.path.relpath(p, up)
        if rel.startswith(ALLOWED) or rel in ("var/lib/dpkg", "var/log",
                                               "var/cache"):
            continue
        st = os.lstat(p)
        host = "/" + rel
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
            print(f"removed: {host}")
        elif stat.S_ISDIR(st.st_mode):
            if not os.path.isdir(host):
                print(f"left: {host}/")
        elif not os.path.lexists(host):
            print(f"left: {host}")
        elif stat.S_ISREG(st.st_mode) and not filecmp.cmp(p, host, shallow=False):
            print(f"changed: {host}")
PY
	is "$(cat "$T/left")" "" "after purge, nothing of the package is left and nothing else was touched"
fi
done_testing
