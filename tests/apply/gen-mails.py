#!/usr/bin/python3
"""gen-mails.py DIR N [SEED] - N patch mails in the many forms mailers and
people give them, for comparing pgate_mailinfo_parse() with git mailinfo.

Each mail draws, with a fixed seed: a From: form (quoted names, comments,
RFC 2047 words in UTF-8 or Latin-1, Q or B, bare addresses, folded), a
subject (Re:/Fwd:/[PATCH v3 2/7]/[RFC] prefixes, colons, tabs, encoded
words split in several, folded, now and then a broken encoded word), a Date: or none, a transfer encoding
(none, 8bit, quoted-printable, base64) and a charset (some that cannot be
converted: unknown, or us-ascii holding 8-bit text), in-body headers
(From:, Subject:, Date:, folded, after blank lines), a "[PATCH] x" line,
message lines with trailing blanks, runs of blank lines and near-misses of
the patch break ("---- x", "-- ", "--x"), a diff or none, sometimes as a
multipart attachment, sometimes with CRLF line ends.  Mails are written
as DIR/0001.eml ...
"""
import base64
import os
import quopri
import random
import sys

NAMES = ["A U Thor", "J\u00f6rg M\u00fcller", "Zo\u00eb", "Al", "O'Neil, Pat",
         "\u5f20\u4f1f", "Ren\u00e9e \"Rae\" Smith", "x", "Very Long Name " * 5,
         "Dr. No-Reply (bot)", ""]
WORDS = "fix parser leak in the token loop add support for tests docs".split()


def ew(rng, text, charset=None):
    """an RFC 2047 encoded word (or several)"""
    charset = charset or rng.choice(["UTF-8", "utf-8", "ISO-8859-1"])
    try:
        raw = text.encode("latin-1" if charset.upper() == "ISO-8859-1" else "utf-8")
    except UnicodeEncodeError:
        charset, raw = "UTF-8", text.encode("utf-8")
    if rng.random() < 0.5:
        return "=?%s?B?%s?=" % (charset, base64.b64encode(raw).decode())
    q = "".join(c if (c.isalnum() and ord(c) < 128) else
                ("_" if c == " " else "".join("=%02X" % b for b in c.encode("latin-1", "replace") if True))
                for c in raw.decode("latin-1"))
    return "=?%s?%s?%s?=" % (charset, rng.choice("Qq"), q)


def from_header(rng):
    name = rng.choice(NAMES)
    addr = rng.choice(["a@example.org", "first.last@sub.example.com", "x+tag@example.net"])
    forms = [
        lambda: "%s <%s>" % (name, addr),
        lambda: '"%s" <%s>' % (name.replace('"', '\\"'), addr),
        lambda: "%s (%s)" % (addr, name),
        lambda: "%s <%s>" % (ew(rng, name or "n"), addr),
        lambda: addr,
        lambda: "<%s>" % addr,
        lambda: "%s <%s> (comment (nested))" % (name, addr),
        lambda: "%s\n <%s>" % (name, addr),
        lambda: "%s<%s>" % (name, addr),
        lambda: "%s <%s>" % (name, addr.replace("@", " at ")),
    ]
    return rng.choice(forms)()


def subject(rng):
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    pre = "".join(rng.choice(["Re: ", "RE:", "re: ", "Fwd: ", "[PATCH] ", "[PATCH v3 2/7] ",
                              "[RFC PATCH 0/1]", ":", "\t", " ", "[x]", "Re:Re: "])
                  for _ in range(rng.randint(0, 3)))
    s = pre + words
    if rng.random() < 0.3:
        s = s + " " + ew(rng, "caf\u00e9 na\u00efve") + " " + ew(rng, "tail")
    if rng.random() < 0.2:
        s = s.replace(" ", "\n ", 1)
    if rng.random() < 0.03:
        s += " =?utf-8?q?unterminated"
    return s


def date(rng):
    zone = rng.choice(["+0000", "-0500", "+0530", "+1400", "-0000", "GMT", "+0100 (CET)"])
    return "%s, %d %s %d %02d:%02d:%02d %s" % (
        rng.choice(["Mon", "Tue", "Wed"]), rng.randint(1, 28),
        rng.choice(["Jan", "Feb", "Nov"]), rng.choice([1999, 2023, 2024]),
        rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), zone)


DIFF = ("diff --git a/f.c b/f.c\nindex 1234567..89abcde 100644\n--- a/f.c\n+++ b/f.c\n"
        "@@ -1,3 +1,3 @@\n int a;\n-int b;\n+int c;  \n int d;\n")


def body(rng):
    lines = []
    if rng.random() < 0.4:
        lines += [""] * rng.randint(0, 2)
        for h in rng.sample(["From: " + from_header(rng), "Subject: " + subject(rng),
                             "Date: " + date(rng)], rng.randint(1, 3)):
            lines.append(h)
        if rng.random() < 0.3:
            lines.append("\tcontinued")
        lines.append("")
    elif rng.random() < 0.1:
        lines.append("[PATCH] from the body")
    for _ in range(rng.randint(0, 8)):
        lines.append(rng.choice([
            "Some text about the change.", "trailing blanks   ", "", "", "\t",
            "---- not a break", "-- ", "--x", "Signed-off-by: A <a@example.org>",
            "caf\u00e9 cr\u00e8me", "> quoted", "From here on", "Subject: not a header now"]))
    text = "\n".join(lines) + "\n"
    if rng.random() < 0.8:
        text += "---\n f.c | 2 +-\n 1 file changed\n\n" + DIFF
        if rng.random() < 0.5:
            text += "-- \n2.39.5\n"
    return text


def encode(rng, text, cte, charset):
    try:
        raw = text.encode(charset, "replace") if charset else text.encode("utf-8")
    except LookupError:
        raw = text.encode("utf-8")
    if cte == "base64":
        return base64.encodebytes(raw)
    if cte == "quoted-printable":
        return quopri.encodestring(raw)
    return raw


def mail(rng):
    hdrs = ["From: " + from_header(rng), "Subject: " + subject(rng)]
    if rng.random() < 0.9:
        hdrs.append("Date: " + date(rng))
    rng.shuffle(hdrs)
    if rng.random() < 0.1:
        hdrs.append("Subject: " + subject(rng))       # a second one wins
    b = body(rng)
    cte = rng.choice([None, "8bit", "quoted-printable", "base64"])
    charset = rng.choice([None, "utf-8", "UTF-8", "iso-8859-1", "utf8",
                          "windows-1252", "us-ascii", "x-unknown"])
    if rng.random() < 0.25 and "\n---\n" in b:
        msg, patch = b.split("\n---\n", 1)
        bd = rng.choice(["b1", "=_boundary_42", "----------2.39"])
        q = rng.random() < 0.5
        hdrs.append("MIME-Version: 1.0")
        hdrs.append('Content-Type: multipart/mixed; boundary=%s' % ('"%s"' % bd if q else bd))
        pcte = rng.choice(["base64", "quoted-printable", "8bit"])
        parts = (b"This is a multi-part message in MIME format.\n--" + bd.encode() + b"\n" +
                 b"Content-Type: text/plain; charset=utf-8\n\n" + (msg + "\n").encode() +
                 b"--" + bd.encode() + b"\n" +
                 b"Content-Type: text/x-patch; name=p.diff\n" +
                 ("Content-Transfer-Encoding: %s\n\n" % pcte).encode() +
                 encode(rng, "---\n" + patch, pcte, None) +
                 b"--" + bd.encode() + b"--\n")
        data = "\n".join(hdrs).encode("utf-8") + b"\n\n" + parts
    else:
        if cte or charset:
            hdrs.append("MIME-Version: 1.0")
            hdrs.append("Content-Type: text/plain%s" % ("; charset=" + charset if charset else ""))
            if cte:
                hdrs.append("Content-Transfer-Encoding: " + cte)
        data = "\n".join(hdrs).encode("utf-8") + b"\n\n" + encode(rng, b, cte, charset)
    if rng.random() < 0.15:
        data = data.replace(b"\n", b"\r\n")
    if rng.random() < 0.3:
        data = b"From 1234567890123456789012345678901234567890 Mon Sep 17 00:00:00 2001\n" + data
    return data


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    rng = random.Random(sys.argv[3] if len(sys.argv) > 3 else "pgate-mails")
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        with open(os.path.join(out, "%04d.eml" % (i + 1)), "wb") as f:
            f.write(mail(rng))


if __name__ == "__main__":
    main()
