#!/usr/bin/python3
"""remail.py MODE IN OUT [IN OUT]... - `git format-patch` mails sent
another way, each IN written to its OUT (several in one process: a python
started per mail was most of the time it took).

MODE:
  qp        the body quoted-printable (Content-Transfer-Encoding)
  base64    the body in base64
  attach    multipart/mixed: the message in a text/plain part, the patch
            (from its "---" line) in a base64 text/x-patch attachment
  inbody    forwarded: From:/Date: of the mail are the sender's, the
            author's From: and Date: open the body (git am takes those)
  crlf      every line ending CRLF (what a mail stored from SMTP has)
  latin1    the message re-encoded to ISO-8859-1 (charset=ISO-8859-1),
            the diff left as it is

The bytes of the patch itself are never changed (only encoded), so git am
must make the same commit from every form.
"""
import base64
import quopri
import sys


def split(raw):
    head, body = raw.split(b"\n\n", 1)
    lines = head.split(b"\n")
    # unfold, keeping the folded form for re-use
    hdrs = []
    for line in lines:
        if line[:1] in (b" ", b"\t") and hdrs:
            hdrs[-1] += b"\n" + line
        else:
            hdrs.append(line)
    return hdrs, body


def without(hdrs, *names):
    out = []
    for h in hdrs:
        name = h.split(b":", 1)[0].lower()
        if name in names:
            continue
        out.append(h)
    return out


def get(hdrs, name):
    for h in hdrs:
        if h.split(b":", 1)[0].lower() == name:
            return h
    return None


def remail(mode, src, dst):
    raw = open(src, "rb").read()
    hdrs, body = split(raw)
    base = without(hdrs, b"content-type", b"content-transfer-encoding",
                   b"mime-version")
    mime = [b"MIME-Version: 1.0"]
    if mode == "qp":
        out = base + mime + [b"Content-Type: text/plain; charset=UTF-8",
                             b"Content-Transfer-Encoding: quoted-printable"]
        data = b"\n".join(out) + b"\n\n" + quopri.encodestring(body)
    elif mode == "base64":
        out = base + mime + [b"Content-Type: text/plain; charset=UTF-8",
                             b"Content-Transfer-Encoding: base64"]
        data = b"\n".join(out) + b"\n\n" + base64.encodebytes(body)
    elif mode == "attach":
        i = body.find(b"\n---\n")
        msg, patch = (body[:i + 1], body[i + 1:]) if i >= 0 else (body, b"")
        b = b"----------pgate-boundary-0123"
        out = base + mime + [b'Content-Type: multipart/mixed; boundary="' + b[2:] + b'"']
        parts = [b"This is a multi-part message in MIME format.",
                 b, b"Content-Type: text/plain; charset=UTF-8",
                 b"Content-Transfer-Encoding: 8bit", b"", msg,
                 b, b'Content-Type: text/x-patch; charset=UTF-8; name="x.patch"',
                 b"Content-Transfer-Encoding: base64",
                 b'Content-Disposition: attachment; filename="x.patch"', b"",
                 base64.encodebytes(patch), b + b"--", b""]
        data = b"\n".join(out) + b"\n\n" + b"\n".join(parts)
    elif mode == "inbody":
        frm = get(hdrs, b"from")
        date = get(hdrs, b"date")
        out = without(hdrs, b"from", b"date")
        out.insert(1, b"From: Patch Sender <sender@example.net>")
        out.append(b"Date: Mon, 1 Jan 2024 00:00:00 +0000")
        data = b"\n".join(out) + b"\n\n" + frm + b"\n" + date + b"\n\n" + body
    elif mode == "crlf":
        data = raw.replace(b"\n", b"\r\n")
    elif mode == "latin1":
        i = body.find(b"\n---\n")
        msg, patch = body[:i + 1], body[i + 1:]
        out = base + mime + [b"Content-Type: text/plain; charset=ISO-8859-1",
                             b"Content-Transfer-Encoding: 8bit"]
        data = (b"\n".join(out) + b"\n\n" +
                msg.decode("utf-8").encode("latin-1") + patch)
    else:
        sys.exit("unknown mode " + mode)
    open(dst, "wb").write(data)


def main():
    args = sys.argv[2:]
    if len(sys.argv) < 4 or len(args) % 2:
        sys.exit("usage: remail.py MODE IN OUT [IN OUT]...")
    for i in range(0, len(args), 2):
        remail(sys.argv[1], args[i], args[i + 1])


if __name__ == "__main__":
    main()
