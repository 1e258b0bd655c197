# unpriv.sh - running patchgate as an unprivileged user, the way the
# systemd unit (contrib/patchgate.service, User=patchgate) runs it.
# Source after pgate.sh.
#
#   unpriv_init          as root: makes sure the system user pgate-test
#                        exists (creating it), sets UNPRIV_USER, and makes
#                        TAP_TMP reachable by it; returns 1 when not root
#                        (the caller skips the unprivileged half)
#   as_unpriv CMD...     runs CMD as UNPRIV_USER (setpriv: real and
#                        effective ids, its groups, no_new_privs), with
#                        the environment kept (HOME, TMPDIR: TAP_TMP)
#   unpriv_own PATH...   chowns PATH (recursively) to UNPRIV_USER
#
# Tests that attack patchgate run each attack twice: as root (CI runs as
# root) and as this user, as a real deployment does.

UNPRIV_USER=pgate-test

unpriv_init() {
	[ "$(id -u)" -eq 0 ] || return 1
	command -v setpriv >/dev/null || return 1
	local i
	# tests run in parallel: another one may be adding the user now
	for i in 1 2 3 4 5 6 7 8 9 10; do
		id -u "$UNPRIV_USER" >/dev/null 2>&1 && break
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$UNPRIV_USER" 2>/dev/null && break
		sleep 0.3
	done
	id -u "$UNPRIV_USER" >/dev/null 2>&1 || return 1
	chmod 0755 "$TAP_TMP"
	return 0
}

as_unpriv() {
	setpriv --reuid="$UNPRIV_USER" --regid="$UNPRIV_USER" --init-groups \
		--no-new-privs -- "$@"
}

unpriv_own() {
	chown -R "$UNPRIV_USER:" "$@"
}
