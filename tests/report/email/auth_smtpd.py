"""An SMTP sink with AUTH and TLS, for the email tests (aiosmtpd).

    /usr/bin/python3 auth_smtpd.py --port P --maildir DIR \
        --user U --password-file F [--cert C --key K [--smtps]]

Stores accepted mail in the maildir DIR like aiosmtpd.handlers.Mailbox.
AUTH (PLAIN, LOGIN) is required before MAIL; a wrong password gets aiosmtpd's
"535 5.7.8 Authentication credentials invalid".  Without --cert, AUTH is
allowed on the plain connection (the client only does that to loopback).
With --cert and --key: STARTTLS is offered and required before AUTH; with
--smtps as well, the listening socket speaks TLS from the first byte.
"""
import argparse
import asyncio
import ssl

from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--maildir", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password-file", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--smtps", action="store_true")
    args = ap.parse_args()
    with open(args.password_file, "rb") as f:
        password = f.read().rstrip(b"\n")
    user = args.user.encode()

    def authenticator(server, session, envelope, mechanism, data):
        ok = (isinstance(data, LoginPassword) and data.login == user
              and data.password == password)
        # handled=False: aiosmtpd itself answers 235 or 535
        return AuthResult(success=ok, handled=False)

    tls = None
    if args.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.cert, args.key)
    handler = Mailbox(args.maildir)

    def factory():
        return SMTP(handler, hostname="sink.test",
                    tls_context=None if args.smtps else tls,
                    require_starttls=bool(tls) and not args.smtps,
                    auth_required=True,
                    auth_require_tls=bool(tls) and not args.smtps,
                    authenticator=authenticator)

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(loop.create_server(
        factory, host="127.0.0.1", port=args.port,
        ssl=tls if args.smtps else None))
    try:
        loop.run_forever()
    finally:
        server.close()


if __name__ == "__main__":
    main()
