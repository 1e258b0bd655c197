#!/usr/bin/python3
"""seeds.py - sorts generated mail into the seed corpora of the fuzz
targets and adds the hand-written edge cases.  Run by seeds.sh, which makes
the inputs (a gen-list.py maildir and mbox, the gen-demo.sh list, git
format-patch output).

Every seed is written here, from those inputs or from the functions
below; nothing is copied into the source tree.  Standard library only.
"""

import argparse
import email
import email.policy
import os
import random
import re
import sys

MAX_SEED = 1 << 20          # the targets skip larger inputs
TARGETS = ('fuzz-mail', 'fuzz-subject', 'fuzz-mbox', 'fuzz-patch', 'fuzz-store-keys')
FROM_LINE = re.compile(rb'^From \S+ .*\d\d:\d\d(:\d\d)? .*\d{4}\s*$')


class Corpora:
    def __init__(self, out):
        self.out = out
        self.count = {t: 0 for t in TARGETS}
        self.seen = {t: set() for t in TARGETS}
        for t in TARGETS:
            os.makedirs(os.path.join(out, t), exist_ok=True)

    def add(self, target, name, data):
        if len(data) > MAX_SEED or data in self.seen[target]:
            return
        self.seen[target].add(data)
        name = re.sub(r'[^A-Za-z0-9._-]+', '-', name)[:80]
        with open(os.path.join(self.out, target, name), 'wb') as f:
            f.write(data)
        self.count[target] += 1


# ---- reading what seeds.sh made ------------------------------------------

def split_mbox(data, mboxrd=True):
    """Messages of an mbox: a separator is a From line at the start or
    after a blank line (as git mailsplit and ingest/mbox.c see it)."""
    msgs, cur, prev_blank = [], None, True
    for line in data.splitlines(keepends=True):
        if prev_blank and FROM_LINE.match(line.rstrip(b'\r\n')):
            if cur is not None:
                msgs.append(b''.join(cur))
            cur = []
            prev_blank = False
            continue
        prev_blank = line in (b'\n', b'\r\n')
        if cur is None:
            cur = []
        m = re.match(rb'^(>+)From ', line)
        if m and (mboxrd or len(m.group(1)) == 1):
            line = line[1:]
        cur.append(line)
    if cur:
        msgs.append(b''.join(cur))
    # the blank line before a separator belongs to the mbox
    return [m[:-1] if m.endswith(b'\n\n') else m for m in msgs]


def mbox_slices(data):
    """Byte ranges of the file, one per message, separator included."""
    starts, pos, prev_blank = [], 0, True
    for line in data.splitlines(keepends=True):
        if prev_blank and FROM_LINE.match(line.rstrip(b'\r\n')):
            starts.append(pos)
        prev_blank = line in (b'\n', b'\r\n')
        pos += len(line)
    starts.append(len(data))
    return starts


def read_dir(path):
    out = []
    for root, _dirs, files in os.walk(path):
        for f in sorted(files):
            with open(os.path.join(root, f), 'rb') as fh:
                out.append((f, fh.read()))
    return sorted(out)


def spread(items, n):
    """n items spread evenly over the list."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def strip_from_line(raw):
    if raw.startswith(b'From '):
        return raw.split(b'\n', 1)[1] if b'\n' in raw else b''
    return raw


def subject_and_body(raw):
    """A fuzz-subject input from a mail: its decoded subject, a newline,
    its first text/plain part as text."""
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        subject = str(msg.get('subject', '') or '')
        body = ''
        for part in msg.walk():
            if part.get_content_type() == 'text/plain':
                body = part.get_content()
                break
    except Exception:  # hostile mail: email may give up, and that is fine
        return None
    return (subject.replace('\n', ' ') + '\n' + body).encode('utf-8', 'surrogateescape')


# ---- hand-written edge cases ---------------------------------------------

def mail(headers, body, eol=b'\n'):
    head = b''.join(h.encode('latin-1') + eol if isinstance(h, str) else h + eol
                    for h in headers)
    return head + eol + body


BASE_HEADERS = [
    'From: Ada Lovelace <ada@example.org>',
    'To: list@lists.example.org',
    'Date: Mon, 2 Jan 2023 10:00:00 +0100',
    'Message-ID: <edge@example.org>',
]

DIFF = b'''diff --git a/file.c b/file.c
index 3b18e51..a042389 100644
--- a/file.c
+++ b/file.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int c;
 int d;
'''


def patch_mail(subject, body, diff=DIFF):
    return mail(BASE_HEADERS + ['Subject: ' + subject],
                body + b'\n---\n file.c | 2 +-\n\n' + diff + b'-- \n2.39.2\n')


def mail_edge_cases():
    r = random.Random(7)
    junk = bytes(r.randrange(256) for _ in range(2048))
    nested = b''
    depth = 20
    for i in range(depth):
        nested += (b'--b%d\nContent-Type: multipart/mixed; boundary="b%d"\n\n'
                   % (i, i + 1))
    nested += b'--b%d\nContent-Type: text/plain\n\n' % depth + DIFF
    for i in range(depth, -1, -1):
        nested += b'--b%d--\n' % i
    yield 'empty', b''
    yield 'junk', junk
    yield 'junk-nul', b'\0' * 64 + junk[:256]
    yield 'only-headers', mail(BASE_HEADERS + ['Subject: [PATCH] x'], b'')
    yield 'no-blank-line', b'Subject: [PATCH] x\nFrom: a@b\n' + DIFF
    yield 'header-no-colon', b'Subject [PATCH] x\nnot a header\n\n' + DIFF
    yield 'huge-header-line', mail(BASE_HEADERS + ['Subject: [PATCH] ' + 'x' * 100000], b'body\n')
    yield 'huge-folded-header', mail(BASE_HEADERS + ['Subject: [PATCH]' + '\n x' * 20000], b'body\n')
    yield 'many-references', mail(
        BASE_HEADERS + ['Subject: Re: [PATCH] x',
                        'References: ' + ' '.join('<r%d@example.org>' % i for i in range(300)),
                        'In-Reply-To: <r299@example.org> <other@example.org>'],
        b'> quoted\nreply\n')
    yield 'many-recipients', mail(
        BASE_HEADERS + ['Subject: [PATCH] x',
                        'Cc: ' + ', '.join('P%d <p%d@example.org>' % (i, i) for i in range(400))],
        b'text\n')
    yield 'nested-multipart', mail(
        BASE_HEADERS + ['Subject: [PATCH 1/2] nested', 'MIME-Version: 1.0',
                        'Content-Type: multipart/mixed; boundary="b0"'], nested)
    yield 'from-line-in-body', patch_mail(
        '[PATCH] from', b'Text\n\nFrom here on the body says From\nFrom me Mon Jan  2 10:00:00 2023\n>From quoted\n')
    yield 'base64-body', mail(
        BASE_HEADERS + ['Subject: [PATCH v3 2/7] b64', 'MIME-Version: 1.0',
                        'Content-Type: text/plain; charset=utf-8',
                        'Content-Transfer-Encoding: base64'],
        __import__('base64').encodebytes(b'Body\n---\n' + DIFF))
    yield 'qp-body', mail(
        BASE_HEADERS + ['Subject: [PATCH] qp', 'MIME-Version: 1.0',
                        'Content-Type: text/plain; charset=iso-8859-1',
                        'Content-Transfer-Encoding: quoted-printable'],
        b'Caf=E9 is=\n closed=3D\n---\n' + DIFF.replace(b'int c', b'int =E9'))
    yield 'rfc2047', mail(
        BASE_HEADERS[1:] + ['From: =?utf-8?B?w4Fkw6E=?= <ada@example.org>',
                            'Subject: =?iso-8859-1?Q?[PATCH]_caf=E9?= =?utf-8?q?_na=C3=AFve?='],
        b'x\n---\n' + DIFF)
    yield 'rfc2047-broken', mail(
        BASE_HEADERS[1:] + ['From: =?utf-8?B?####?= <ada@example.org>',
                            'Subject: =?bogus-charset?Q?=ZZ?= =?utf-8?B?', ], b'x\n')
    yield 'latin1-8bit', mail(BASE_HEADERS + [b'Subject: [PATCH] caf\xe9'],
                              b'R\xe9sum\xe9 without a charset\n---\n' + DIFF)
    yield 'crlf', mail(BASE_HEADERS + ['Subject: [PATCH] crlf'],
                       (b'Body\n---\n' + DIFF).replace(b'\n', b'\r\n'), eol=b'\r\n')
    yield 'alternative-html', mail(
        BASE_HEADERS + ['Subject: [PATCH] html', 'MIME-Version: 1.0',
                        'Content-Type: multipart/alternative; boundary="alt"'],
        b'--alt\nContent-Type: text/html\n\n<p>no</p>\n--alt\n'
        b'Content-Type: text/plain; format=flowed; delsp=yes\n\nflowed \nline\n---\n' + DIFF +
        b'--alt--\n')
    yield 'attached-patch', mail(
        BASE_HEADERS + ['Subject: [PATCH] attached', 'MIME-Version: 1.0',
                        'Content-Type: multipart/mixed; boundary="m"'],
        b'--m\nContent-Type: text/plain\n\nSee attached.\n--m\n'
        b'Content-Type: text/x-patch; name="x.patch"\n'
        b'Content-Disposition: attachment; filename="x.patch"\n\n' + DIFF + b'--m--\n')
    yield 'rfc822-inside', mail(
        BASE_HEADERS + ['Subject: Fwd: [PATCH] inner', 'MIME-Version: 1.0',
                        'Content-Type: multipart/mixed; boundary="f"'],
        b'--f\nContent-Type: message/rfc822\n\n' + patch_mail('[PATCH] inner', b'inner') +
        b'--f--\n')
    yield 'reply-with-diff', mail(
        BASE_HEADERS + ['Subject: Re: [PATCH 2/3] x', 'In-Reply-To: <p@example.org>'],
        b'On Mon, Ada wrote:\n> ' + DIFF.replace(b'\n', b'\n> ') + b'\nLooks fine.\n'
        b'Reviewed-by: Bob <bob@example.org>\n')
    yield 'pull-request', mail(
        BASE_HEADERS + ['Subject: [GIT PULL] fixes for 6.1'],
        b'The following changes since commit 1234567890abcdef1234567890abcdef12345678:\n\n'
        b'  x (2023-01-01)\n\nare available in the git repository at:\n\n'
        b'  git://git.example.org/pub/scm/x.git tags/fixes-6.1\n\nfor you to fetch\n')
    yield 'b4-fields', patch_mail(
        '[PATCH v2 0/3] b4',
        b'Cover.\n\nLink: https://lore.kernel.org/r/20230101.abc@example.org\n'
        b'v1: https://patch.msgid.link/v1%40example.org\n\n'
        b'Signed-off-by: Ada <ada@example.org>\nAcked-by: B <b@example.org>\n'
        b'\nbase-commit: 1234567890abcdef1234567890abcdef12345678\n'
        b'change-id: 20230101-topic-abcdef\n'
        b'prerequisite-patch-id: 0123456789012345678901234567890123456789\n'
        b'prerequisite-change-id: 20221201-old-123456:v2\n'
        b'prerequisite-message-id: <pre@example.org>\n'
        b'Depends-on: <dep@example.org>\nBased-on: <based@example.org>\n')
    yield 'bad-msgid', mail(['From: x', 'Message-ID: <<>>', 'Message-ID: <a b@c>',
                             'Date: not a date', 'Subject: [PATCH 99999999999/0] x'], b'x\n')
    yield 'nul-in-header', mail(BASE_HEADERS + [b'Subject: [PATCH] a\0b'], b'x\n---\n' + DIFF)


def subject_edge_cases():
    subjects = [
        '', ' ', '[', ']', '[]', '[[PATCH]]', 'Re:', 'Re: Re: RE:re: x', 'Re x', 'Aw: x',
        'Fwd: [PATCH] x', '[PATCH] x', '[PATCH v2] x', '[PATCH V3 2/7] x',
        '[RFC PATCH v2 03/10] x', '[RESEND PATCH 1/2] x', '[PATCH 0/5] cover',
        '[PATCH 1/3 v2] x', '[PATCH] [v2] x', '[PATCH] x (v4)', '[PATCH v0] x',
        '[PATCH v99999999999] x', '[PATCH 4294967296/4294967297] x', '[PATCH 3 of 5] x',
        '[PATCH 3/] x', '[PATCH /5] x', '[net-next,v2,1/2] x', '[PATCH -next] x',
        'Re: [PATCH 2/3] Re: [RFC] x', '[PATCH\t2/3]\tx', '[PATCH] ' + 'x' * 3000,
        '[' * 500 + 'PATCH', '[PATCH 1/2] ' + '[a] ' * 200, '[PATCH] café naïve 日本',
    ]
    for i, s in enumerate(subjects):
        yield 'subject-%02d' % i, (s + '\n').encode()
    yield 'trailers', ('[PATCH] x\n\nBody.\n\nSigned-off-by: A <a@example.org>\n'
                       'Reviewed-by: B <b@example.org>\n(cherry picked from commit x)\n'
                       'Cc: c@example.org\nLink: https://x\n---\nnotes\n').encode()
    yield 'trailer-many', ('[PATCH] x\n\n' + ''.join('Tested-by: T%d <t%d@e.org>\n' % (i, i)
                                                     for i in range(300))).encode()
    yield 'links', ('[PATCH] x\n\nfix\n---\nv1: https://lore.kernel.org/all/a%40b.org/\n'
                    '> https://lore.kernel.org/r/quoted@x\n'
                    'https://lkml.kernel.org/r/123.456@host\n'
                    'http://patch.msgid.link/%3Cenc%40x%3E\n'
                    'https://public-inbox.org/git/x@y/T/#u\n').encode()
    yield 'pull-ssh', ('[GIT PULL] x\nThe following changes since commit abc:\n'
                       'are available in the git repository at:\n'
                       '  user@host:path/repo.git branch\n'
                       'are available in the git repository at:\n'
                       '  ssh://host/x.git \\\n  next\n').encode()
    yield 'b4-only', ('x\nbase-commit: ' + 'a' * 40 + '\nchange-id: ' + 'c' * 2000 + '\n'
                      + 'prerequisite-message-id: <m@x>\n' * 20).encode()


def mbox_edge_cases(patch_mails):
    sep = b'From mboxrd@z Thu Jan  1 00:00:00 1970\n'
    m1 = patch_mail('[PATCH 1/2] one', b'one')
    m2 = patch_mail('[PATCH 2/2] two', b'two\n>From quoted\n>>From twice\n>>>From thrice\n')
    yield 'empty', b''
    yield 'no-separator', m1
    yield 'blank-lines-first', b'\n\n\n' + sep + m1
    yield 'two', sep + m1 + b'\n' + sep + m2
    yield 'no-blank-before-sep', sep + m1 + sep + m2
    yield 'no-final-newline', sep + m1 + b'\n' + sep + m2.rstrip(b'\n')
    yield 'crlf', (sep + m1 + b'\n' + sep + m2).replace(b'\n', b'\r\n')
    yield 'fake-separators', (sep + b'Subject: x\n\nFrom me to you\n\nFrom a b 12:00 x\n\n'
                              b'From a Mon Jan  1 12:00:00 1970\nreal one\n')
    yield 'only-separators', sep * 10
    yield 'whitespace-messages', sep + b'   \n\t\n' + b'\n' + sep + b'\n\n' + sep + b'x\n'
    yield 'quoting', sep + b'a\n>From 1\n>>From 2\n>>>From 3\n> From 4\n>From\n>>From\n'
    yield 'long-line', sep + b'Subject: x\n\n' + b'y' * 100000 + b'\n' + sep + b'z\n'
    yield 'format-patch-stream', b''.join(patch_mails)


def patch_edge_cases():
    def diff_mail(name, diff, subject=None):
        return name, patch_mail(subject or '[PATCH] ' + name, b'Edge case.', diff)

    yield diff_mail('dotdot', b'diff --git a/../x b/../x\nnew file mode 100644\n'
                    b'index 0000000..e69de29\n--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n')
    yield diff_mail('dotdot-rename', b'diff --git a/a b/b\nsimilarity index 90%\n'
                    b'rename from a\nrename to sub/../../etc/passwd\n')
    yield diff_mail('dotgit', b'diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n'
                    b'new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n'
                    b'@@ -0,0 +1 @@\n+#!/bin/sh\n')
    yield diff_mail('dotgit-case', b'diff --git a/.GIT~1/config b/.GIT~1/config\n'
                    b'--- a/.GIT~1/config\n+++ b/.GIT~1/config\n@@ -1 +1 @@\n-a\n+b\n')
    yield diff_mail('absolute', b'--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n')
    yield diff_mail('gitlink', b'diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..'
                    b'1234567\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n'
                    b'+Subproject commit 1234567890123456789012345678901234567890\n')
    yield diff_mail('dir-mode', b'diff --git a/d b/d\nold mode 100644\nnew mode 040000\n')
    yield diff_mail('symlink-gitmodules', b'diff --git a/.gitmodules b/.gitmodules\n'
                    b'new file mode 120000\n--- /dev/null\n+++ b/.gitmodules\n@@ -0,0 +1 @@\n'
                    b'+/etc/passwd\n\\ No newline at end of file\n')
    yield diff_mail('binary-corrupt', b'diff --git a/b.bin b/b.bin\nnew file mode 100644\n'
                    b'index 0000000..1111111\nGIT binary patch\nliteral 99999999\n'
                    b'zcmZ?wbhPl@$D\n\nliteral 0\nHcmV?d00001\n\n')
    yield diff_mail('binary-bomb', b'diff --git a/z b/z\nnew file mode 100644\n'
                    b'GIT binary patch\nliteral 4294967295\n'
                    b'zcmeIu0Sy2E0K-6z0RR91\n\nliteral 0\nHcmV?d00001\n\n')
    yield diff_mail('binary-differ', b'diff --git a/i.png b/i.png\nindex 1..2 100644\n'
                    b'Binary files a/i.png and b/i.png differ\n')
    yield diff_mail('hunk-overflow', b'--- a/f\n+++ b/f\n@@ -99999999999999999999,1 '
                    b'+18446744073709551615,2 @@\n-a\n+b\n+c\n')
    yield diff_mail('hunk-short', b'--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n-a\n+b\n')
    yield diff_mail('spaces-unquoted', b'diff --git a/x y b/x y\nindex 1..2 100644\n'
                    b'--- a/x y\n+++ b/x y\n@@ -1 +1 @@\n-a\n+b\n')
    yield diff_mail('spaces-rename', b'diff --git a/a b c b/d e f\nsimilarity index 100%\n'
                    b'rename from a b c\nrename to d e f\n')
    yield diff_mail('quoted-escapes', b'diff --git "a/t\\303\\251\\t\\"q\\"" "b/t\\303\\251\\t\\"q\\""\n'
                    b'new file mode 100644\n--- /dev/null\n+++ "b/t\\303\\251\\t\\"q\\""\n'
                    b'@@ -0,0 +1 @@\n+x\n')
    yield diff_mail('copy', b'diff --git a/a b/b\nsimilarity index 100%\ncopy from a\ncopy to b\n')
    yield diff_mail('index-style', b'Index: f.c\n===================================================================\n'
                    b'--- f.c\t(revision 1)\n+++ f.c\t(working copy)\n@@ -1 +1 @@\n-a\n+b\n')
    yield diff_mail('many-files', b''.join(
        b'diff --git a/f%d b/f%d\nnew file mode 100644\n--- /dev/null\n+++ b/f%d\n@@ -0,0 +1 @@\n+x\n'
        % (i, i, i) for i in range(1100)))
    yield diff_mail('mode-only', b'diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n')
    yield diff_mail('no-newline', b'--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n'
                    b'\\ No newline at end of file\n')
    yield 'scissors', mail(BASE_HEADERS + ['Subject: Re: x'],
                           b'talk\n-- >8 --\nSubject: [PATCH] real\nFrom: Other <o@example.org>\n\n'
                           b'msg\n---\n' + DIFF)
    yield 'inbody-headers', mail(BASE_HEADERS + ['Subject: [PATCH] outer'],
                                 b'From: Inner <inner@example.org>\nDate: Tue, 3 Jan 2023 00:00:00 -0800\n'
                                 b'Subject: [PATCH v9 9/9] inner\n\nmsg\n---\n' + DIFF)
    yield 'no-author', b'Subject: [PATCH] x\n\nmsg\n---\n' + DIFF
    yield 'multipart-boundaries', mail(
        BASE_HEADERS + ['Subject: [PATCH] mp', 'Content-Type: multipart/mixed; boundary=a'],
        b'--a\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: multipart/mixed; '
        b'boundary=c\n\n--c\nContent-Type: multipart/mixed; boundary=d\n\n--d\n'
        b'Content-Type: multipart/mixed; boundary=e\n\n--e\nContent-Transfer-Encoding: base64\n\n'
        b'bXNnCi0tLQo=\n--e--\n--d--\n--c--\n--b--\n' + DIFF + b'--a--\n')


# ---- main -------------------------------------------------------------------

def store_key_seeds():
    """fuzz-store-keys inputs: an 8-byte date, then sender, key, series id
    and value, a line each; at and around the lengths where the store
    switches to a hashed key (400 for senders, 480 for keys)."""
    def seed(date, sender, key, sid=b's0123456789ab', val=b'v1'):
        return (date & (1 << 64) - 1).to_bytes(8, 'big') + b'\n'.join(
            (sender, key, sid, val))
    yield 'plain', seed(1672653600, b'alice@example.org', b'20230102.1@example.org')
    yield 'empty', seed(0, b'', b'', b'', b'')
    yield 'negative-date', seed(-86400, b'bob@example.org', b'x@y')
    yield 'extreme-dates', seed(-(1 << 63), b'carol@example.org', b'a@b')
    yield 'max-date', seed((1 << 63) - 1, b'carol@example.org', b'a@b')
    for n in (399, 400, 401, 450, 480, 481, 512, 1000):
        local = b'a' * (n - len(b'@example.org'))
        yield 'sender-%d' % n, seed(1, local + b'@example.org', b'k@x')
        yield 'key-%d' % n, seed(2, b'd@example.org', b'k' * n)
    yield 'long-id-and-value', seed(3, b'e@example.org', b'k@x', b'i' * 100, b'w' * 600)
    yield 'nul-and-8bit', seed(4, b'f\xc3\xa9@ex\x00ample.org', b'\xff\xfe@x', b's\x00', b'\x00')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', required=True)
    ap.add_argument('--maildir', required=True)
    ap.add_argument('--mbox', required=True, help="gen-list.py's mbox")
    ap.add_argument('--demo', required=True, help="gen-demo.sh's list.mbox")
    ap.add_argument('--patches', required=True, help='git format-patch output')
    ap.add_argument('--corpus', help="Patchwork's test mails (read only)")
    args = ap.parse_args()
    c = Corpora(args.out)

    listed = [('list-' + n, d) for n, d in spread(read_dir(args.maildir), 24)]
    with open(args.demo, 'rb') as f:
        demo_mbox = f.read()
    demo = [('demo-%02d' % i, m) for i, m in enumerate(split_mbox(demo_mbox))]
    patches = [(n, d) for n, d in read_dir(args.patches)]
    corpus = read_dir(args.corpus) if args.corpus else []

    mails = (listed + demo +
             [('git-' + n, strip_from_line(d)) for n, d in patches] +
             [('pw-' + n, d) for n, d in corpus])
    for name, data in mails:
        c.add('fuzz-mail', name, data)
    for name, data in mail_edge_cases():
        c.add('fuzz-mail', 'edge-' + name, data)

    for name, data in mails:
        sb = subject_and_body(data)
        if sb is not None:
            c.add('fuzz-subject', name, sb)
    for name, data in subject_edge_cases():
        c.add('fuzz-subject', 'edge-' + name, data)

    c.add('fuzz-mbox', 'demo', demo_mbox)
    with open(args.mbox, 'rb') as f:
        big = f.read()
    starts = mbox_slices(big)
    r = random.Random(3)
    for i in range(12):
        a = r.randrange(len(starts) - 1)
        b = min(a + 1 + r.randrange(4), len(starts) - 1)
        c.add('fuzz-mbox', 'list-slice-%02d' % i, big[starts[a]:starts[b]])
    for name, data in mbox_edge_cases([d for _, d in patches]):
        c.add('fuzz-mbox', 'edge-' + name, data)
    for name, data in corpus[:8]:
        c.add('fuzz-mbox', 'pw-' + name, data)

    for name, data in store_key_seeds():
        c.add('fuzz-store-keys', name, data)

    for name, data in patches:
        c.add('fuzz-patch', 'git-' + name, data)
    for name, data in listed + demo:
        if b'\ndiff --git ' in data or name.endswith('-00'):
            c.add('fuzz-patch', name, data)
    for name, data in patch_edge_cases():
        c.add('fuzz-patch', 'edge-' + name, data)
    for name, data in mail_edge_cases():
        if name in ('empty', 'junk', 'crlf', 'base64-body', 'qp-body', 'rfc2047',
                    'rfc2047-broken', 'latin1-8bit', 'nested-multipart', 'nul-in-header',
                    'from-line-in-body', 'huge-header-line'):
            c.add('fuzz-patch', 'edge-' + name, data)
    for name, data in corpus:
        c.add('fuzz-patch', 'pw-' + name, data)

    for t in TARGETS:
        print('%s: %d seeds' % (t, c.count[t]))
        if c.count[t] < 12:
            sys.exit('seeds.py: too few seeds for %s' % t)


if __name__ == '__main__':
    main()
