#!/usr/bin/python3
"""merge-gen.py - the input of bench/merge.sh.

    merge-gen.py DIR COMMITS PATCHES

Makes DIR/upstream.git, a repository whose master has COMMITS commits on
top of a base (git fast-import), and DIR/list.mbox, PATCHES patch mails:

  - a quarter of the commits are mailed as `git format-patch` wrote them,
    and their commits carry a b4-style Link: trailer (the link rule);
  - another quarter are mailed the same way, without a trailer in the
    commit (the patch-id rule);
  - a twentieth are mailed with another diff, same author and subject
    (the subject rule);
  - the rest of the mails are other patches by the same authors (a store
    where most patches were never merged, as on a real list).

Seeded by the numbers only: the same arguments give the same mails.
"""
import os
import subprocess
import sys
import time

out, ncommits, npatches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
repo = os.path.join(out, "upstream.git")
subprocess.run(["git", "init", "-q", "--bare", "-b", "master", repo], check=True)
now = int(time.time())
AUTHORS = 500


def author(i):
    return "Dev %d" % (i % AUTHORS), "dev%d@example.org" % (i % AUTHORS)


def link(i):
    return i % 4 == 0


def content(i):
    return "".join("int f%d_%d(void) { return %d; }\n" % (i, k, k)
                   for k in range(4))


# files in 100 directories of about a hundred each, as in a real tree (a
# tree diff walks the directory it changes)


fi = []
fi.append("commit refs/heads/master\nmark :1\n"
          "committer Base <base@example.org> %d +0000\ndata 5\nbase\n"
          "M 100644 inline README\ndata 5\nbase\n\n" % (now - ncommits - 10))
for i in range(ncommits):
    name, email = author(i)
    msg = "sub%d: add f%d\n\nAdds f%d.\n\nSigned-off-by: %s <%s>\n" % (
        i % 97, i, i, name, email)
    if link(i):
        msg += "Link: https://lore.kernel.org/r/bench-%d@example.org\n" % i
    t = now - ncommits + i
    c = content(i)
    fi.append("commit refs/heads/master\nmark :%d\n"
              "author %s <%s> %d +0000\n"
              "committer Mai Ntainer <mai@example.org> %d +0000\n"
              "data %d\n%s\nfrom :%d\n"
              "M 100644 inline src/d%02d/f%d.c\ndata %d\n%s\n"
              % (i + 2, name, email, t, t, len(msg.encode()), msg, i + 1,
                 i % 100, i, len(c.encode()), c))
subprocess.run(["git", "-C", repo, "fast-import", "--quiet"],
               input="".join(fi).encode(), check=True)

# the mails of the commits, as format-patch writes them
fp = subprocess.run(["git", "-C", repo, "format-patch", "--stdout",
                     "--no-signature", "--reverse" if False else "-k",
                     "master~%d..master" % ncommits],
                    check=True, stdout=subprocess.PIPE).stdout.decode()
mails = fp.split("\nFrom ")
mails = [m if k == 0 else "From " + m for k, m in enumerate(mails)]
# format-patch lists oldest first: mail k is commit k
written = 0
with open(os.path.join(out, "list.mbox"), "w") as mb:
    for i, m in enumerate(mails):
        if i % 2 == 0 and written < npatches:
            pass    # link (i % 4 == 0) and patch-id (i % 4 == 2)
        elif i % 20 == 1 and written < npatches:
            # the subject rule: another diff
            m = m.replace("return 3;", "return 33;")
        else:
            continue
        head, _, rest = m.partition("\n")
        m = head + "\nMessage-ID: <bench-%d@example.org>\n" % i + rest
        m = m.replace("Subject: sub", "Subject: [PATCH] sub", 1)
        if not m.endswith("\n"):
            m += "\n"
        mb.write(m + "\n")
        written += 1
    k = 0
    while written < npatches:
        name, email = author(k)
        # spread over the last 100 days, the commits' among them: the
        # subject rule reads each author's patches of its window
        date = time.strftime("%a, %d %b %Y %H:%M:%S +0000",
                             time.gmtime(now - 86400 * 100 +
                                         k * 86400 * 100 // npatches))
        c = content(1000000 + k)
        body = ("Other change %d.\n\nSigned-off-by: %s <%s>\n---\n"
                " other/o%d.c | 4 ++++\n 1 file changed, 4 insertions(+)\n"
                " create mode 100644 other/o%d.c\n\n"
                "diff --git a/other/o%d.c b/other/o%d.c\n"
                "new file mode 100644\nindex 0000000..1111111\n"
                "--- /dev/null\n+++ b/other/o%d.c\n@@ -0,0 +1,4 @@\n"
                % (k, name, email, k, k, k, k, k))
        body += "".join("+" + line + "\n" for line in c.splitlines())
        mb.write("From other-%d Mon Sep 17 00:00:00 2001\n"
                 "From: %s <%s>\nDate: %s\n"
                 "Subject: [PATCH] other%d: change %d\n"
                 "Message-ID: <other-%d@example.org>\n\n%s\n"
                 % (k, name, email, date, k % 97, k, k, body))
        written += 1
        k += 1
