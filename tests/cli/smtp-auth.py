#!/usr/bin/python3
"""smtp-auth.py - an aiosmtpd sink that wants a login, for t0107.

`python3 -m aiosmtpd` (tests/lib/pgate.sh, smtp_start) takes no
authenticator, and aiosmtpd offers AUTH only over TLS unless told
otherwise; this one offers PLAIN and LOGIN on the plain connection
(auth_require_tls=False), accepts USER with PASSWORD only, and logs each
login and each message to LOG, one line each ("auth USER ok", "auth USER
refused", "mail FROM"), so that a test sees that a check logged in and
sent nothing.

Usage: smtp-auth.py PORT USER PASSWORD LOG
Prints "ready" once it accepts connections, then serves until killed.
"""

import sys
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def main():
    port, user, password, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], \
        sys.argv[4]

    def note(line):
        with open(log, "a") as f:
            f.write(line + "\n")

    def authenticator(server, session, envelope, mechanism, auth_data):
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        who = auth_data.login.decode("utf-8", "replace")
        ok = who == user and auth_data.password.decode(
            "utf-8", "replace") == password
        note("auth %s %s" % (who, "ok" if ok else "refused"))
        return AuthResult(success=ok, handled=False)

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            note("mail %s" % envelope.mail_from)
            return "250 OK"

    ctl = Controller(Handler(), hostname="127.0.0.1", port=port,
                     authenticator=authenticator, auth_required=True,
                     auth_require_tls=False)
    ctl.start()
    print("ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        ctl.stop()


if __name__ == "__main__":
    main()
