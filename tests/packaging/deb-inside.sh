#!/bin/bash
# deb-inside.sh - run by t0920-deb.sh as root in the throwaway root (an
# overlay of / in a mount namespace of its own, chrooted into), or on the
# machine itself when that cannot be had: installs the package, checks
# what it installed, delivers a message through procmail as the patchgate
# user, and purges.  TAP on stdout, numbered from $1 (the test's count so
# far); the last line "# count N" gives the count back.
#
#   deb-inside.sh N DEB DIR     (DIR: a scratch directory)

_tap_n=${1:?}
DEB=${2:?}
W=${3:?}
failed=0
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 MANWIDTH=100
unset PATCHGATE_STATE PATCHGATE_CONFIG

pass() { _tap_n=$((_tap_n + 1)); printf 'ok %d - %s\n' "$_tap_n" "$1"; }
fail() {
	_tap_n=$((_tap_n + 1)); failed=1
	printf 'not ok %d - %s\n' "$_tap_n" "$1"
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/# /'
}
ok() {
	local d=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$d"; else fail "$d" "$out"; fi
}
is() {
	if [ "$1" = "$2" ]; then pass "$3"
	else fail "$3" "     got: '$1'" "expected: '$2'"; fi
}
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then pass "$3"
	else fail "$3" "     got: '$1'" "expected to match: $2"; fi
}
finish() { printf '# count %d\n' "$_tap_n"; exit "$failed"; }

if getent passwd patchgate >/dev/null || dpkg-query -W patchgate >/dev/null 2>&1; then
	fail "a clean system: no patchgate user or package yet" \
		"$(getent passwd patchgate; dpkg-query -W patchgate 2>&1)"
	finish
fi

out=$(dpkg -i "$DEB" 2>&1)
rc=$?
is "$rc" 0 "dpkg -i the package"
[ "$rc" = 0 ] || { printf '%s\n' "$out" | sed 's/^/# /'; finish; }

# --- the binaries
v=$(patchgate --version 2>&1)
like "$v" '^patchgate [0-9]+\.[0-9]+' "patchgate --version: the version"
for lib in gmime libgit2 lmdb curl jansson; do
	like "$v" "^$lib [0-9]+\\.[0-9]+" "patchgate --version: $lib"
done
vf=$(/usr/libexec/patchgate/patchgate-full --version 2>&1)
is "${vf%%$'\n'*}" "${v%%$'\n'*}" "patchgate-full, in /usr/libexec/patchgate, the same version"
like "$(patchgate config keys 2>&1)" '^\[store\] map_size' \
	"patchgate runs patchgate-full from LIBEXECDIR (config keys)"

# --- the man pages, the completion
is "$(man -w patchgate 2>&1)" /usr/share/man/man1/patchgate.1.gz "man -w patchgate"
is "$(man -w 5 patchgate.conf 2>&1)" /usr/share/man/man5/patchgate.conf.5.gz \
	"man -w 5 patchgate.conf"
is "$(man -w 8 patchgate-deliver 2>&1)" /usr/share/man/man8/patchgate-deliver.8.gz \
	"man -w 8 patchgate-deliver"
for p in man1/patchgate.1 man5/patchgate.conf.5 man8/patchgate-deliver.8; do
	is "$(zcat "/usr/share/man/$p.gz" | groff -ww -z -man 2>&1)" "" \
		"$p renders without a warning (groff -ww -z)"
done
conf5=$(man 5 patchgate.conf 2>/dev/null)
like "$conf5" '^ +map_size \(int; default: 268435456 \(256 MiB\)\)' \
	"man 5 patchgate.conf renders, with the keys"
like "$(man 1 patchgate 2>/dev/null)" '^EXIT STATUS' "man patchgate renders"
ok "the bash completion is in bash-completion's directory, and parses" \
	bash -n /usr/share/bash-completion/completions/patchgate

# --- configuration, unit, user, state directory
is "$(dpkg-query -W -f='${Conffiles}' patchgate | awk '{print $1}')" \
	/etc/patchgate/patchgate.conf "/etc/patchgate/patchgate.conf is a conffile"
is "$(patchgate config check --config /etc/patchgate/patchgate.conf 2>&1)" ok \
	"the installed configuration passes config check"
like "$(grep -c '^#[a-z]' /etc/patchgate/patchgate.conf)" '^[0-9]{2,}$' \
	"the configuration is commented: every key commented out"
U=/lib/systemd/system/patchgate.service
is "$(systemd-analyze verify "$U" 2>&1)" "" "systemd-analyze verify patchgate.service"
for want in 'ExecStart=/usr/bin/patchgate --state /var/lib/patchgate --config /etc/patchgate/patchgate.conf daemon' \
	'ProtectSystem=strict' 'ReadWritePaths=/var/lib/patchgate' \
	'NoNewPrivileges=yes' 'User=patchgate' 'StateDirectoryMode=0750'; do
	ok "the unit: $want" grep -qxF "$want" "$U"
done
is "$(systemctl is-enabled patchgate 2>/dev/null)" disabled \
	"the unit is not enabled by the install"
pw=$(getent passwd patchgate)
like "$pw" '^patchgate:x:[0-9]+:[0-9]+:[^:]*:/var/lib/patchgate:/usr/sbin/nologin$' \
	"the patchgate system user: home /var/lib/patchgate, no login shell"
uid=$(id -u patchgate)
if [ "$uid" -lt 1000 ]; then pass "a system uid ($uid)"; else fail "a system uid ($uid)"; fi
is "$(id -gn patchgate)" patchgate "its group, patchgate"
is "$(stat -c '%U:%G %a' /var/lib/patchgate)" "patchgate:patchgate 750" \
	"/var/lib/patchgate: patchgate's, mode 0750"

# --- a delivery through procmail, as the patchgate user
S=/var/lib/patchgate
cat >"$S/.procmailrc" <<'RC'
PATH=/usr/bin:/bin
SHELL=/bin/sh
LOGFILE=$HOME/procmail.log

:0 w
* ^List-Id:.*<test-list\.example\.org>
| patchgate --state /var/lib/patchgate deliver
RC
chown patchgate:patchgate "$S/.procmailrc" && chmod 0600 "$S/.procmailrc"
cat >"$W/mail" <<'MAIL'
From alice@example.org Sat Dec  5 10:00:00 2026
From: Alice <alice@example.org>
To: test-list@example.org
List-Id: Test list <test-list.example.org>
Subject: [PATCH] fix the frobnicator
Date: Sat, 05 Dec 2026 10:00:00 +0000
Message-ID: <pkg-test-1@example.org>

The frobnicator frobbed twice.

Signed-off-by: Alice <alice@example.org>
---
 frob.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/frob.c b/frob.c
--- a/frob.c
+++ b/frob.c
@@ -1 +1 @@
-frob(); frob();
+frob();
--
2.43.0
MAIL
chmod 0644 "$W/mail"
out=$(cd / && runuser -u patchgate -- env HOME="$S" procmail <"$W/mail" 2>&1)
is "$?" 0 "procmail, run as patchgate, delivers (exit 0)"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'
list=$(cd / && runuser -u patchgate -- patchgate --state "$S" msg list 2>&1)
like "$list" 'pkg-test-1@example\.org' "the message is in the installed state directory's store"
like "$list" 'patch' "stored as a patch"
is "$(stat -c %U "$S/store")" patchgate "the store is patchgate's"
is "$(find "$S" ! -user patchgate | head -3)" "" "everything in the state directory is patchgate's"
out=$(cd / && runuser -u nobody -- ls "$S" 2>&1)
is "$?" 2 "another user cannot list the state directory (0750)"

# procmail, run by hand, made the user's system mailbox: the test's doing,
# not the package's (adduser makes none)
rm -f /var/mail/patchgate

# --- purge: what the package made goes, the rest stays
echo secret >/etc/patchgate/patchwork-token
mkdir -p /srv/pgtest-repo && chown patchgate: /srv/pgtest-repo
out=$(dpkg --purge patchgate 2>&1)
is "$?" 0 "dpkg --purge patchgate"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'
ok "the binary is gone" test ! -e /usr/bin/patchgate
ok "the configuration is gone" test ! -e /etc/patchgate/patchgate.conf
ok "the state directory is gone" test ! -e /var/lib/patchgate
ok "the user is gone" bash -c '! getent passwd patchgate'
ok "the group is gone" bash -c '! getent group patchgate'
ok "the man page is gone" test ! -e /usr/share/man/man1/patchgate.1.gz
ok "an admin's file in /etc/patchgate stays" test -f /etc/patchgate/patchwork-token
ok "a directory patchgate owned elsewhere stays" test -d /srv/pgtest-repo
rm -rf /etc/patchgate /srv/pgtest-repo
finish
