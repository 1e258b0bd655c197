#!/usr/bin/python3
"""gen-repo.py REPO [--files N] [--seed S] [--bench-series] - a generated
project and its history, for the apply tests and bench/apply.sh.

The base commit (tag "base") holds N files (300 by default) spread like a
small C project: src/ and include/ (C code), docs/ (prose), tests/
(executable shell scripts), data/ (binary files), win/ (CRLF text),
misc/ (files without a final newline, a file whose name and content are
Latin-1, an empty file), edge/ (a symlink, a file and a directory that
change kind).  Then, each a branch from base:

  topic   the main series, one commit per case: multi-hunk edits, new
          files in a new directory, deletions, a pure rename, a rename
          with changes, mode changes (+x, -x, with content), binary files
          added, changed (a delta) and deleted, final newlines added and
          removed, a Latin-1 file, a patch touching 60 files, empty files,
          a new executable, authors and subjects outside ASCII, a message
          with its own "---" line, "[RFC]" in a subject
  crlf    a new CRLF file, then a change to a CRLF file
  edge    a file that becomes a directory and the reverse, a copy with a
          change, a symlink that becomes a file, a rename with a mode
          change and a content change, names with spaces, a quote and a
          tab (mailed with -C -C)
  links   a new symlink, then a new target (needs allow_symlinks)
  v2      five small commits (sent as [PATCH v2 n/5])
  moved   base plus unrelated commits that shift the lines of files the
          topic series changes (the series then applies at offsets)
  copymod a file changed and copied in the same commit (mailed with
          -C -C: a diff of the file, then a copy from it), three times:
          the copy's hunk next to the change (its context is the
          original line), far from it, and once more for t0500 to turn
          into a rename of the changed file ("rename from", which git
          diff never writes for a file that stays); git copies and
          renames from the file as it was before the patch
  bench   (--bench-series) ten commits, each changing a few files

Everything is deterministic: fixed seed, fixed dates, fixed identities.
"""
import argparse
import os
import random
import subprocess

WORDS = ("alpha beta gamma delta parse buffer length index node tree list "
         "value result error state flags count table entry offset cache "
         "stream header record token symbol module config option").split()


def git(repo, *args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    subprocess.run(["git", "-C", repo] + list(args), check=True, env=e,
                   stdout=subprocess.DEVNULL)


class Repo:
    def __init__(self, path, seed):
        self.path = path
        self.rng = random.Random(seed)
        self.when = 1600000000
        os.makedirs(path, exist_ok=True)
        git(path, "init", "-q", "-b", "master")
        git(path, "config", "core.autocrlf", "false")

    def p(self, name):
        return os.path.join(os.fsencode(self.path), os.fsencode(name)
                            if isinstance(name, str) else name)

    def write(self, name, data, mode=None):
        path = self.p(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        with open(path, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(path, mode)

    def read(self, name):
        with open(self.p(name), "rb") as f:
            return f.read()

    def commit(self, msg, author=("A U Thor", "author@example.org")):
        self.when += 3600
        date = "%d +0100" % self.when
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", msg, env={
            "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
            "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_NAME": "Maint Ainer",
            "GIT_COMMITTER_EMAIL": "maint@example.org",
            "GIT_COMMITTER_DATE": date})

    def words(self, n):
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def c_source(self, name, funcs):
        out = ["/* %s - %s */" % (name, self.words(6)), "#include \"common.h\"", ""]
        for i in range(funcs):
            fn = "%s_%s_%d" % (self.rng.choice(WORDS), self.rng.choice(WORDS), i)
            out.append("int")
            out.append("%s(struct %s *p, int n)" % (fn, self.rng.choice(WORDS)))
            out.append("{")
            for j in range(self.rng.randint(4, 12)):
                out.append("\tp->%s[%d] = n * %d; /* %s */" % (
                    self.rng.choice(WORDS), j, self.rng.randint(1, 99), self.words(3)))
            out.append("\treturn %d;" % i)
            out.append("}")
            out.append("")
        return "\n".join(out) + "\n"

    def prose(self, paras):
        out = []
        for _ in range(paras):
            for _ in range(self.rng.randint(2, 6)):
                out.append(self.words(self.rng.randint(6, 12)).capitalize() + ".")
            out.append("")
        return "\n".join(out)


def edit_lines(data, rng, edits):
    """Changes @edits lines spread over the file (multi-hunk)."""
    lines = data.split(b"\n")
    step = max(1, len(lines) // (edits + 1))
    for k in range(1, edits + 1):
        i = min(len(lines) - 2, k * step)
        lines[i] = lines[i] + b" /* changed %d */" % k
    return b"\n".join(lines)


def base(r, nfiles):
    n = 0
    r.write("README", r.prose(4))
    r.write("Makefile", "all:\n\tcc -o prog src/*.c\n")
    n += 2
    big = []
    for i in range(nfiles):
        kind = i % 10
        if kind in (0, 1, 2, 3):
            name = "src/%s/%s_%d.c" % (r.rng.choice(WORDS[:6]), r.rng.choice(WORDS), i)
            r.write(name, r.c_source(name, r.rng.randint(3, 12)))
            big.append(name)
        elif kind == 4:
            r.write("include/%s_%d.h" % (r.rng.choice(WORDS), i), "#pragma once\nint f%d(void);\n" % i)
        elif kind in (5, 6):
            r.write("docs/%s/%s_%d.md" % (r.rng.choice(WORDS[:4]), r.rng.choice(WORDS), i), r.prose(r.rng.randint(1, 5)))
        elif kind == 7:
            r.write("tests/t%04d-%s.sh" % (i, r.rng.choice(WORDS)), "#!/bin/sh\necho %s\n" % r.words(4), 0o755)
        elif kind == 8:
            r.write("data/blob%d.bin" % i, bytes(r.rng.randrange(256) for _ in range(r.rng.randint(64, 2048))))
        else:
            r.write("win/crlf%d.txt" % i, r.prose(2).replace("\n", "\r\n"))
        n += 1
    # the cases
    r.write("src/parser.c", r.c_source("src/parser.c", 40))
    r.write("src/util.c", r.c_source("src/util.c", 8))
    r.write("src/core.c", r.c_source("src/core.c", 10))
    r.write("tools/gen.py", "print('gen')\n" * 5)
    r.write("scripts/a.sh", "#!/bin/sh\necho a\n")
    r.write("scripts/b.sh", "#!/bin/sh\necho b\n")
    r.write("scripts/c.sh", "#!/bin/sh\necho c\n", 0o755)
    r.write("data/logo.png", bytes(r.rng.randrange(256) for _ in range(3000)))
    r.write("data/old.bin", bytes(range(256)) * 4)
    r.write("misc/noeol.txt", "first\nsecond\nlast line")
    r.write("misc/noeol2.txt", "alpha\nomega")
    r.write("misc/eol.txt", "one\ntwo\n")
    r.write(b"misc/caf\xe9.txt", "caf\xe9 cr\xe8me\nna\xefve\n".encode("latin-1"))
    r.write("misc/empty", "")
    r.write("tests/old1.sh", "#!/bin/sh\nexit 0\n", 0o755)
    r.write("tests/old2.sh", "#!/bin/sh\nexit 1\n", 0o755)
    r.write("win/dos.txt", "line one\r\nline two\r\nline three\r\n")
    r.write("moved/shift.c", r.c_source("moved/shift.c", 6))
    r.write("edge/a", "".join("%d\n" % i for i in range(50)))
    r.write("edge/keep", r.prose(3))
    r.write("edge/dir/z", "z\n")
    os.symlink("keep", r.p("edge/lnk"))
    r.write("edge/my file.txt", "a\nb\n")
    r.write('edge/q"uote\tand tab', "q\n")
    r.commit("Initial import\n\nThe generated project.")
    git(r.path, "tag", "base")
    return big


def topic(r, big):
    git(r.path, "checkout", "-q", "-b", "topic", "base")
    jd = ("J\u00f6rg D\u00f8e-M\u00fcller", "joerg@example.org")
    r.write("src/parser.c", edit_lines(r.read("src/parser.c"), r.rng, 4))
    r.write(big[0], edit_lines(r.read(big[0]), r.rng, 1))
    r.commit("parser: rework the token loop\n\nThree hunks far apart, and one in another file.\n\n"
             "Signed-off-by: A U Thor <author@example.org>")
    for i in range(3):
        r.write("docs/guide/part%d.md" % i, r.prose(2))
    r.commit("docs: add a guide", author=jd)
    os.unlink(r.p("tests/old1.sh"))
    os.unlink(r.p("tests/old2.sh"))
    r.commit("tests: drop obsolete scripts")
    os.makedirs(r.p("src/lib"), exist_ok=True)
    git(r.path, "mv", "src/util.c", "src/lib/util.c")
    r.commit("util: move to lib/")
    git(r.path, "mv", "src/core.c", "src/lib/core2.c")
    r.write("src/lib/core2.c", edit_lines(r.read("src/lib/core2.c"), r.rng, 2))
    r.commit("core: rename and adjust")
    os.chmod(r.p("scripts/a.sh"), 0o755)
    os.chmod(r.p("scripts/b.sh"), 0o755)
    os.chmod(r.p("scripts/c.sh"), 0o644)
    r.commit("scripts: fix modes")
    os.chmod(r.p("tools/gen.py"), 0o755)
    r.write("tools/gen.py", "#!/usr/bin/python3\n" + r.read("tools/gen.py").decode())
    r.commit("tools: make gen.py a script")
    r.write("data/new.bin", bytes(r.rng.randrange(256) for _ in range(5000)))
    r.commit("data: add new.bin")
    logo = bytearray(r.read("data/logo.png"))
    logo[100:110] = b"0123456789"
    r.write("data/logo.png", bytes(logo) + b"tail")
    r.commit("data: update the logo")
    os.unlink(r.p("data/old.bin"))
    r.commit("data: remove old.bin")
    r.write("misc/noeol.txt", "first\nsecond\nlast line, changed")
    r.write("misc/noeol2.txt", "alpha\nomega\n")
    r.write("misc/eol.txt", "one\ntwo")
    r.commit("misc: final newlines")
    r.write(b"misc/caf\xe9.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e\nna\xefve\n".encode("latin-1"))
    r.commit("misc: Latin-1 file")
    for name in big[1:61]:
        d = r.read(name)
        r.write(name, d.replace(b"return", b"return /* tree-wide */", 1))
    r.commit("tree-wide: annotate returns in 60 files")
    r.write("misc/new-empty", "")
    os.unlink(r.p("misc/empty"))
    r.commit("misc: swap the empty files")
    r.write("scripts/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n", 0o755)
    r.commit("scripts: add run.sh")
    r.write("README", r.read("README") + b"\nCaf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9.\n")
    r.commit("README: \u00e9l\u00e8ve na\u00efve r\u00e9sum\u00e9", author=jd)
    r.write("Makefile", r.read("Makefile") + b"clean:\n\trm -f prog\n")
    r.commit("build: add clean\n\nThe message has its own separator below, and git am\n"
             "stops the message there.\n\n--- \nAnything after it is not in the commit.\n")
    r.write("src/parser.c", r.read("src/parser.c").replace(b"return 3;", b"return 3; /* rfc */", 1))
    r.commit("[RFC] parser: a bracketed tag in the subject\n\n  Indented   \n\n\n\ntrailing blanks   \nand runs of blank lines.")
    r.write("docs/long.md", r.prose(1))
    r.commit("docs: a subject long enough that format-patch folds the Subject header over two lines")


def crlf(r):
    git(r.path, "checkout", "-q", "-b", "crlf", "base")
    r.write("win/new.txt", "new one\r\nnew two\r\n")
    r.commit("win: add a CRLF file")
    r.write("win/dos.txt", "line one\r\nline 2\r\nline three\r\n")
    r.commit("win: change a CRLF file")


def edge(r):
    git(r.path, "checkout", "-q", "-b", "edge", "base")
    git(r.path, "rm", "-q", "edge/a")
    r.write("edge/a/b", "inner\n")
    r.commit("edge: a file becomes a directory")
    r.write("edge/keep2", r.read("edge/keep") + b"one more line\n")
    r.commit("edge: a copy with a change")
    git(r.path, "rm", "-q", "-r", "edge/dir")
    r.write("edge/dir", "now a file\n")
    r.commit("edge: a directory becomes a file")
    os.unlink(r.p("edge/lnk"))
    r.write("edge/lnk", "was a link\n")
    r.commit("edge: a symlink becomes a file")
    git(r.path, "mv", "edge/keep", "edge/kept")
    os.chmod(r.p("edge/kept"), 0o755)
    r.write("edge/kept", r.read("edge/kept") + b"appended\n")
    r.commit("edge: rename, mode and content at once")
    git(r.path, "mv", "edge/my file.txt", "edge/your file.txt")
    r.write("edge/your file.txt", "a\nb\nc\n")
    r.write('edge/q"uote\tand tab', "q\nr\n")
    r.write("edge/sp ace/new file", "new\n")
    r.commit("edge: names with spaces, a quote and a tab")


def links(r):
    git(r.path, "checkout", "-q", "-b", "links", "base")
    os.symlink("keep", r.p("edge/newlink"))
    r.commit("links: add a symlink")
    os.unlink(r.p("edge/newlink"))
    os.symlink("dir/z", r.p("edge/newlink"))
    r.commit("links: retarget it")


def v2(r):
    git(r.path, "checkout", "-q", "-b", "v2", "base")
    for i in range(5):
        r.write("docs/v2-%d.md" % i, r.prose(1))
        r.commit("docs: v2 part %d\n\nPart %d of five." % (i + 1, i + 1))


def moved(r):
    git(r.path, "checkout", "-q", "-b", "moved", "base")
    r.write("src/parser.c", b"/* a new header comment\n * of three lines\n */\n" + r.read("src/parser.c"))
    r.write("misc/noeol2.txt", "zero\nalpha\nomega")
    r.commit("parser: a header comment")
    r.write("docs/unrelated.md", r.prose(1))
    r.commit("docs: unrelated")


def copymod(r, big):
    git(r.path, "checkout", "-q", "-b", "copymod", "base")
    for n, (name, near) in enumerate(((big[-1], True), (big[-2], False),
                                      (big[-3], True))):
        old = r.read(name).split(b"\n")
        i = len(old) // 2
        mine, copy = list(old), list(old)
        mine[i] += b" /* changed here */"
        j = i + 1 if near else len(old) - 3
        copy[j] += b" /* changed in the copy */"
        # the copy sorts after the file: the diff changes it first
        r.write(name, b"\n".join(mine))
        r.write(name[:-2] + "_copy.c", b"\n".join(copy))
        r.commit("copymod: change a file and copy it (%d)\n\nThe copy is made "
                 "from the file as it was." % (n + 1))


def bench(r, big):
    git(r.path, "checkout", "-q", "-b", "bench", "base")
    for i in range(10):
        for name in big[i * 3:i * 3 + 3]:
            r.write(name, edit_lines(r.read(name), r.rng, 2))
        r.write("docs/bench-%d.md" % i, r.prose(2))
        r.commit("bench: change %d" % (i + 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--seed", default="pgate-apply")
    ap.add_argument("--bench-series", action="store_true")
    a = ap.parse_args()
    r = Repo(a.repo, a.seed)
    big = base(r, a.files)
    if a.bench_series:
        bench(r, big)
    else:
        topic(r, big)
        crlf(r)
        edge(r)
        links(r)
        v2(r)
        moved(r)
        copymod(r, big)
    git(r.path, "checkout", "-q", "master")


if __name__ == "__main__":
    main()
