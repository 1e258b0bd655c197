#!/usr/bin/python3
"""trailers-b4.py TOOL - pgate_apply_add_trailers() (through trailers-tool)
against Debian's b4 itself: for each case below, b4's own
LoreMessage.fix_trailers(extras=[Link], addmysob=True) is run in this
process (b4 0.12's module, the applier taken from git config user.name
and user.email: run with a HOME that sets them), and the two commit
messages must be the same once `git stripspace` has cleaned them, as git
am does before committing.  Prints one TAP line per case.

Cases where b4 0.12 and b4 today differ on purpose are left out: 0.12
keeps a trailer's value as written, today's b4 (and patchgate) rewrite a
person's "\\"Name\\" <addr>" as "Name <addr>".
"""
import email
import json
import subprocess
import sys

import b4

ME = 'Maint Ainer <maint@example.org>'
BASEMENT = ('---\n a | 1 +\n\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n'
            '@@ -1 +1,2 @@\n a\n+b\n')
CASES = [
    ('signed-off, a review, link, signoff',
     'Body.\n\nSigned-off-by: Alice Developer <alice@example.org>',
     ['Reviewed-by: Bob Reviewer <bob@example.org>'], 'https://l.example/1@x'),
    ('the applier inside the chain moves last',
     'Body.\n\nSigned-off-by: Maint Ainer <maint@example.org>\n'
     'Signed-off-by: Alice Developer <alice@example.org>',
     ['Tested-by: T Ester <t@example.org>'], None),
    ('a follow-up already there, other case',
     'Body.\n\nAcked-by: X Y <x@y.org>\nSigned-off-by: A B <a@b.org>',
     ['acked-by: x y <X@Y.org>', 'Reviewed-by: R <r@r.org>'], None),
    ('text, Phone:, [extinfo] and # extinfo in the last paragraph',
     'Para one.\n\nText line\nAcked-by: X Y <x@y.org> # v1\n'
     'Signed-off-by: A B <a@b.org>\nPhone: 123\n[for the foo bits]',
     ['Reviewed-by: R <r@r.org>'], 'https://l.example/2@x'),
    ('no body at all', '', ['Reviewed-by: R <r@r.org>'], None),
    ('one paragraph of trailers only',
     'Signed-off-by: A B <a@b.org>', ['Acked-by: C <c@c.org>'], None),
    ('a follow-up that is the applier\'s sign-off',
     'Body.\n\nSigned-off-by: A B <a@b.org>',
     ['Signed-off-by: Maint Ainer <maint@example.org>',
      'Reviewed-by: R <r@r.org>'], None),
    ('only the sign-off, already last',
     'Body.\n\nSigned-off-by: Maint Ainer <maint@example.org>', [], None),
    ('no trailers in the body, blank-line paragraphs',
     'One.\n\nTwo\nlines.\n\nThree.', ['Reviewed-by: R <r@r.org>'],
     'https://l.example/3@x'),
    ('a Fixes: and a Link: of the author',
     'Body.\n\nFixes: 0123456789ab ("old")\nLink: https://bugs.example/1\n'
     'Signed-off-by: A B <a@b.org>',
     ['Reviewed-by: R <r@r.org>'], 'https://l.example/4@x'),
]


def b4_message(body, fups, link):
    raw = ('From: Alice Developer <alice@example.org>\n'
           'Subject: [PATCH] foo: bar\nMessage-Id: <1@x>\n'
           'Date: Tue, 3 Dec 2024 10:00:00 +0000\n\n' + body + '\n' + BASEMENT)
    lmsg = b4.LoreMessage(email.message_from_string(raw))
    lmsg.followup_trailers = [b4.LoreTrailer(name=f.split(': ', 1)[0],
                                             value=f.split(': ', 1)[1])
                              for f in fups]
    extras = [b4.LoreTrailer(name='Link', value=link)] if link else None
    lmsg.fix_trailers(extras=extras, addmysob=True)
    return stripspace(lmsg.message)


def stripspace(text):
    return subprocess.run(['git', 'stripspace'], input=text,
                          capture_output=True, text=True, check=True).stdout


def main():
    lines = []
    for _, body, fups, link in CASES:
        msg = 'foo: bar\n\n' + (body + '\n' if body else '')
        lines.append(json.dumps({'message': msg, 'followups': fups,
                                 'link': link, 'signoff': ME}))
    out = subprocess.run([sys.argv[1]], input='\n'.join(lines) + '\n',
                         capture_output=True, text=True, check=True).stdout
    got = [json.loads(l)['message'] for l in out.splitlines()]
    for n, ((name, body, fups, link), mine) in enumerate(zip(CASES, got), 1):
        want = b4_message(body, fups, link)
        if mine == want and stripspace(mine) == mine:
            print('ok - b4 0.12: %s' % name)
        else:
            print('not ok - b4 0.12: %s' % name)
            print('# b4:        %r\n# patchgate: %r' % (want, mine))


main()
