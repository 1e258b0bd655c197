"""An aiosmtpd handler that refuses some recipients, for the email tests.

    PYTHONPATH=DIR /usr/bin/python3 -m aiosmtpd -n -l 127.0.0.1:PORT \
        -c reject_handler.RejectingMailbox MAILDIR

Like aiosmtpd.handlers.Mailbox (it stores accepted mail in MAILDIR), but
RCPT TO a local part starting with "reject550" gets a permanent 550 and one
starting with "defer451" a temporary 451, with the texts Postfix uses.
"""
from aiosmtpd.handlers import Mailbox


class RejectingMailbox(Mailbox):
    async def handle_RCPT(self, server, session, envelope, address,
                          rcpt_options):
        local = address.split("@", 1)[0].lower()
        if local.startswith("reject550"):
            return ("550 5.1.1 <%s>: Recipient address rejected: "
                    "User unknown in local recipient table" % address)
        if local.startswith("defer451"):
            return ("451 4.3.0 <%s>: Temporary lookup failure; "
                    "try again later" % address)
        envelope.rcpt_tos.append(address)
        return "250 OK"
