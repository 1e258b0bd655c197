#!/usr/bin/python3
"""mutate.py OUTDIR N SEED MAIL... - N broken variants of patch mails.

Each variant is one of the MAILs with one to three random edits of its
body (the headers are kept): a line
deleted, duplicated or swapped with the next, a byte flipped, a number in
a hunk header or a mode changed, a path given "../", ".git/" or "/" in
front, a base85 line of binary data damaged, garbage inserted, the mail cut
short.  For the apply fuzz test: whatever comes in, the library must
answer (a status or an error), never crash, leak or write a broken object.
"""
import os
import random
import re
import sys


def mutate(rng, data):
    # the header block stays as it is: the mail, not the patch, is what
    # differs there (dates are parsed otherwise, see docs/apply.md; a
    # second "From " line would make git am split the mail in two)
    head, sep, body = data.partition(b"\n\n")
    lines = body.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        if len(lines) < 3:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(10)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2 and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == 3 and lines[i]:
            b = bytearray(lines[i])
            b[rng.randrange(len(b))] = rng.randrange(256)
            lines[i] = bytes(b)
        elif op == 4:
            hunks = [k for k, l in enumerate(lines) if l.startswith(b"@@ ")]
            if hunks:
                k = rng.choice(hunks)
                lines[k] = re.sub(rb"\d+", lambda m: str(rng.choice(
                    [0, 1, int(m.group()) + rng.randint(-3, 3), 99999999999])).encode(),
                    lines[k], count=rng.randint(1, 4))
        elif op == 5:
            modes = [k for k, l in enumerate(lines) if b"mode " in l]
            if modes:
                k = rng.choice(modes)
                lines[k] = re.sub(rb"[0-7]{6}", rng.choice(
                    [b"120000", b"160000", b"100755", b"040000", b"777777"]), lines[k])
        elif op == 6:
            heads = [k for k, l in enumerate(lines)
                     if l.startswith((b"diff --git ", b"+++ ", b"--- ", b"rename "))]
            if heads:
                k = rng.choice(heads)
                lines[k] = lines[k].replace(b"a/", b"a/" + rng.choice(
                    [b"../", b".git/", b"/", b"x/../../"]), 1).replace(
                    b"b/", b"b/" + rng.choice([b"../", b".GIT/", b"/"]), 1)
        elif op == 7:
            b85 = [k for k, l in enumerate(lines) if re.match(rb"^[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]{4,}$", l)]
            if b85:
                k = rng.choice(b85)
                lines[k] = lines[k][:-5] + b"zzzzz"
        elif op == 8:
            lines.insert(i, rng.choice([b"@@ -1,2 +1,2 @@", b"GIT binary patch",
                                        b"literal 99999999", b"diff --git a/x b/x",
                                        b"\\ No newline at end of file", b"+",
                                        b"Binary files a/x and b/x differ"]))
        else:
            lines = lines[:i]
    return head + sep + b"\n".join(lines)


def main():
    out, n, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    mails = [open(m, "rb").read() for m in sys.argv[4:]]
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    for k in range(n):
        with open(os.path.join(out, "%04d.eml" % (k + 1)), "wb") as f:
            f.write(mutate(rng, rng.choice(mails)))


if __name__ == "__main__":
    main()
