#!/usr/bin/python3
"""mail.py - the mails of the attack tests (tests/security), as git
format-patch and mail clients write them, one mbox entry on stdout.

  mail.py patch --from F --id ID --subject S --file NAME [--content C]
          [--reply PARENT] [--header 'Name: value']... [--body LINE]...
          [--date D]
  mail.py reply --from F --id ID --reply PARENT --subject S --text T
          [--header ...] [--date D]
  mail.py mime ... (as reply) [--html H] [--attach-original MBOX]
          [--attach-text T]

A patch adds files/NAME.txt holding C (default: NAME), so that two
patches of the same NAME and C have the same patch-id; --body lines go
above the Signed-off-by (Depends-on:, prerequisite-patch-id: ...).
"""
import argparse
import hashlib
import sys


def blob(content):
    data = content.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:7]


def head(a, extra=()):
    out = ["From mboxrd@z Thu Jan  1 00:00:00 1970"]
    out += list(a.header or [])
    out.append("From: " + a.from_)
    out.append("To: list@demo.example.org")
    out.append("Subject: " + a.subject)
    out.append("Date: " + (a.date or "Mon, 2 Dec 2024 10:00:00 +0000"))
    out.append("Message-ID: <%s>" % a.id)
    if a.reply:
        out.append("In-Reply-To: <%s>" % a.reply)
        out.append("References: <%s>" % a.reply)
    out += list(extra)
    return out


def patch(a):
    content = (a.content if a.content is not None else a.file) + "\n"
    lines = head(a)
    lines.append("")
    lines.append("Add %s." % a.file)
    lines.append("")
    lines += list(a.body or [])
    lines.append("Signed-off-by: A U Thor <a@demo.example.org>")
    lines.append("---")
    lines.append(" files/%s.txt | 1 +" % a.file)
    lines.append(" 1 file changed, 1 insertion(+)")
    lines.append(" create mode 100644 files/%s.txt" % a.file)
    lines.append("")
    lines.append("diff --git a/files/%s.txt b/files/%s.txt" % (a.file, a.file))
    lines.append("new file mode 100644")
    lines.append("index 0000000..%s" % blob(content))
    lines.append("--- /dev/null")
    lines.append("+++ b/files/%s.txt" % a.file)
    lines.append("@@ -0,0 +1 @@")
    lines.append("+" + content.rstrip("\n"))
    lines.append("-- ")
    lines.append("2.39.5")
    lines.append("")
    return lines


def reply(a):
    lines = head(a)
    lines.append("")
    lines += a.text.split("\n")
    lines.append("")
    return lines


def mime(a):
    """A reply with MIME parts: its own text (--text, or --html for an
    HTML-only reply), then --attach-original (a message/rfc822 part of
    that mbox entry) or --attach-text (a text/plain attachment)."""
    from email.message import EmailMessage
    from email import message_from_string, policy
    msg = EmailMessage(policy=policy.SMTP.clone(linesep="\n"))
    for h in head(a)[1:]:
        k, v = h.split(": ", 1)
        msg[k] = v
    if a.html:
        msg.set_content(a.html, subtype="html")
    else:
        msg.set_content(a.text)
    if a.attach_original:
        text = open(a.attach_original).read().split("\n", 1)[1]
        msg.add_attachment(message_from_string(text, policy=policy.default),
                           filename="original.eml")
    if a.attach_text:
        msg.add_attachment(a.attach_text, filename="notes.txt")
    return [head(a)[0]] + msg.as_string().split("\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["patch", "reply", "mime"])
    p.add_argument("--from", dest="from_", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--subject", required=True)
    p.add_argument("--reply")
    p.add_argument("--file")
    p.add_argument("--content")
    p.add_argument("--text", default="")
    p.add_argument("--date")
    p.add_argument("--header", action="append")
    p.add_argument("--body", action="append")
    p.add_argument("--html")
    p.add_argument("--attach-original")
    p.add_argument("--attach-text")
    a = p.parse_args()
    lines = {"patch": patch, "reply": reply, "mime": mime}[a.kind](a)
    # mboxrd: ">From " quoted one more level
    out = [lines[0]] + [(">" + l) if l.lstrip(">").startswith("From ") else l
                        for l in lines[1:]]
    sys.stdout.write("\n".join(out) + "\n")


main()
