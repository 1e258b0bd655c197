#!/bin/bash
# t0510-apply-push - pgate_apply_push's credentials and error classes,
# through pgate-apply-tool push:
#
#   a  https-style auth against fake-git-http.py (a smart-HTTP server that
#      refuses every credential, as a real one does for a wrong token): the
#      token is read from the file or the variable named and sent as Basic
#      auth; the failure is CONFIG (permanent) and its message never holds
#      the token
#   b  a password file that cannot be read: CONFIG, naming the file
#   c  nothing listening: IO (transient)
#   d  file://: a push, then a refused non-fast-forward (FAILED)
#
# Error codes are PgateErrorCode: FAILED 0, CONFIG 6, IO 9.

. "${SRCDIR:?}/tests/lib/tap.sh"

command -v git >/dev/null || skip_all "needs git"
command -v /usr/bin/python3 >/dev/null || skip_all "needs python3"
TOOL=${PGATE_APPLY_TOOL:?}
HERE=$SRCDIR/tests/apply

tap_tmpdir
T=$TAP_TMP
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git init -q -b master "$T/r"
echo one >"$T/r/f"
git -C "$T/r" add f
GIT_COMMITTER_DATE="1600000000 +0000" GIT_AUTHOR_DATE="1600000000 +0000" \
	git -C "$T/r" -c user.name=A -c user.email=a@example.org commit -q -m one
TOKEN=tok-$RANDOM-s3cr3t-$$
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"

/usr/bin/python3 "$HERE/fake-git-http.py" "$T/port" "$T/auth.log" &
SERVER=$!
TAP_CLEANUP='kill $SERVER 2>/dev/null'
for i in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")
URL=http://127.0.0.1:$PORT/repo.git
SPEC=+refs/heads/master:refs/heads/patchgate/1/v1/master

# ---- a ----------------------------------------------------------------------
out=$("$TOOL" push "$T/r" "$URL" --user bot --password-file "$T/token" "$SPEC")
rc=$?
is "$rc" 2 "a: a refused token fails the push"
like "$out" '^error: 6 .*authentication failed' "a: as a configuration error (permanent)"
case $out in
*"$TOKEN"*) fail "a: the token is not in the message" "$out" ;;
*) pass "a: the token is not in the message" ;;
esac
want="Basic $(printf 'bot:%s' "$TOKEN" | base64 -w0)"
like "$(grep -c -F -x "$want" "$T/auth.log")" '^[1-9]' "a: the file's token was sent as Basic auth"
: >"$T/auth.log"
out=$(PGATE_T_TOKEN=env-$TOKEN "$TOOL" push "$T/r" "$URL" --user bot \
      --password-env PGATE_T_TOKEN "$SPEC")
like "$out" '^error: 6 ' "a: the variable's token, refused likewise"
want="Basic $(printf 'bot:env-%s' "$TOKEN" | base64 -w0)"
like "$(grep -c -F -x "$want" "$T/auth.log")" '^[1-9]' "a: the variable's token was sent"

# ---- b ----------------------------------------------------------------------
out=$("$TOOL" push "$T/r" "$URL" --user bot --password-file "$T/nope" "$SPEC")
like "$out" '^error: 6 .*nope' "b: an unreadable password file is named"
out=$("$TOOL" push "$T/r" "$URL" --user bot --password-env PGATE_T_UNSET "$SPEC")
like "$out" '^error: 6 .*PGATE_T_UNSET' "b: an unset variable is named"

# ---- c ----------------------------------------------------------------------
kill $SERVER 2>/dev/null
wait $SERVER 2>/dev/null
out=$("$TOOL" push "$T/r" "$URL" --user bot --password-file "$T/token" "$SPEC")
like "$out" '^error: 9 ' "c: nothing listening is an I/O error (transient)"

# ---- d ----------------------------------------------------------------------
git init -q --bare "$T/remote.git"
out=$("$TOOL" push "$T/r" "file://$T/remote.git" "$SPEC")
is "$out" "pushed 1" "d: file:// push"
is "$(git -C "$T/remote.git" rev-parse refs/heads/patchgate/1/v1/master)" \
   "$(git -C "$T/r" rev-parse master)" "d: the remote has the ref"
echo two >"$T/r/f"
git -C "$T/r" -c user.name=A -c user.email=a@example.org commit -q --amend -am two
out=$("$TOOL" push "$T/r" "file://$T/remote.git" refs/heads/master:refs/heads/patchgate/1/v1/master)
like "$out" '^error: 0 ' "d: a non-fast-forward without + is refused"
out=$("$TOOL" push "$T/r" "file://$T/remote.git" "$SPEC")
is "$out" "pushed 1" "d: with + it is forced"
out=$("$TOOL" push "$T/r" "file://$T/remote.git" :refs/heads/patchgate/1/v1/master)
is "$(git -C "$T/remote.git" for-each-ref | wc -l)" 0 "d: :ref deletes it"
done_testing
