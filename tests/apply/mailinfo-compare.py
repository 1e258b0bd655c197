#!/usr/bin/python3
# mailinfo-compare.py TOOL WORKDIR < CASES - pgate_mailinfo_parse() against
# what `git am` makes of the same mail: git mailsplit (CRLF -> LF unless
# --keep-cr), git mailinfo, and its message through git stripspace.
#
# CASES has one case per line: NAME TAB MAIL [TAB --keep-cr].  Each result
# is one line, "ok TAB NAME" or "not ok TAB NAME [TAB DIAG]...", for the
# calling test to report.  Python spawns the four processes a mail needs
# (with vfork); the shell version spent most of its time forking itself
# for the greps, seds and cmps around them.
import os
import subprocess
import sys

tool, work = sys.argv[1], sys.argv[2]


def run(argv, stdin=None, stdout=None):
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as i, \
         open(stdout, "wb") if stdout else open(os.devnull, "wb") as o:
        return subprocess.run(argv, stdin=i, stdout=o,
                              stderr=subprocess.DEVNULL).returncode


def lines(path):
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


def without(path, drop):
    """The file's lines minus those that are exactly one of drop, as grep
    -v writes them (a last line gains its newline)."""
    out = []
    for line in lines(path):
        if line.rstrip(b"\n") in drop:
            continue
        out.append(line if line.endswith(b"\n") else line + b"\n")
    return b"".join(out)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def case(name, mail, keep):
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "split"), exist_ok=True)
    j = lambda f: os.path.join(d, f)
    grc = run(["git", "mailsplit", "-b"] + keep + ["-o" + j("split"), mail])
    if grc == 0:
        grc = run(["git", "mailinfo", j("gmsg"), j("gpatch")],
                  stdin=j("split/0001"), stdout=j("ginfo"))
    prc = run([tool, "mailinfo"] + keep + [j("pmsg"), j("ppatch")],
              stdin=mail, stdout=j("pinfo"))
    if grc != 0 or not any(l.startswith(b"Email: ") and len(l.rstrip(b"\n")) > 7
                           for l in lines(j("ginfo"))):
        # git mailinfo failed (or git am would: no address)
        if prc == 2:
            return ["ok", name + ": refused like git"]
        return ["not ok", name + ": refused like git",
                "     got: '%d'" % prc, "expected: '2'"]
    subject = b"".join(l[len(b"Subject: "):] for l in lines(j("ginfo"))
                       if l.startswith(b"Subject: "))
    if subject and not subject.endswith(b"\n"):
        subject += b"\n"
    gam = subprocess.run(["git", "stripspace"],
                         input=subject + b"\n" + read(j("gmsg")),
                         stdout=subprocess.PIPE, check=True).stdout
    if prc != 0:
        return ["not ok", name, "pgate refused: " +
                read(j("pinfo")).decode("utf-8", "replace")]
    pinfo = without(j("pinfo"), (b"Subject: ", b"Author: "))
    ginfo = without(j("ginfo"), (b"Subject: ",))
    bad = []
    if ginfo != pinfo:
        bad.append("info differs: git %r, pgate %r" % (ginfo[:300], pinfo[:300]))
    if gam != read(j("pmsg")):
        bad.append("message differs: git %r, pgate %r"
                   % (gam[:300], read(j("pmsg"))[:300]))
    if read(j("gpatch")) != read(j("ppatch")):
        bad.append("patch differs")
    return ["ok", name] if not bad else ["not ok", name] + bad


for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    r = case(f[0], f[1], f[2:])
    print("\t".join(x.replace("\t", " ").replace("\n", "\\n") for x in r),
          flush=True)
