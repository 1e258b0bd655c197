#!/usr/bin/python3
"""bench/chains.py - version-chain figures for bench/chains.sh.

    chains.py SERIES.json MBOX [MANIFEST.json]

SERIES.json is `patchgate series list --all --json`; MBOX the archive that
was ingested (read for the covers' text: b4's "Link to vN:" lines); with
MANIFEST (fixtures/gen-list.py --manifest) also the precision and recall of
the links against it.  Prints one "name value" line a figure, then a sample
line for each fan-out and cross-person link (the series, its rule), so that
a person can judge them.  The definitions are issue #49's:

  links           series with a supersedes link
  links_backport  of those, links to or from a stable backport (a
                  subject naming a tree: "AUTOSEL 5.10", "6.1", "5.15.y")
  change_id       series with a b4 change-id (not Gerrit's) whose change-id has an earlier
                  series (by date) of a version not above its own, and how
                  many supersede the latest such series
  b4_link         series whose cover (else its first patch) has b4's
                  "- Link to vN: URL" naming a stored series with N below
                  its own version, and how many supersede the one of the
                  highest such N, or a closer predecessor by the same person
                  sent no earlier than it (a version in between, or a
                  resend: one whose chain leads to the named one)
  b4_link_exact   the same, counting only the named series itself (past
                  resends of the series' own version)
  fan_out         series that successors of two or more different versions
                  claim as their predecessor (a v1 split into two v2 series
                  is not one; v1 -> {v2, v3} is)
  cross_person    links between two submitters who share neither a name
                  (without " via B4 Relay", accents, case), nor an address
                  (b4's relay devnull+USER.DOMAIN@kernel.org is USER@DOMAIN),
                  nor a change-id, nor the series name
  cross_person_explicit  of those, the ones whose successor's text names
                  the predecessor by b4's "Link to vN:" (an announced
                  handover: strong evidence)
  precision, recall (with MANIFEST): of the links, by series key

With CHAINS_VERBOSE=1 in the environment, the series behind each b4_link
and change_id miss go to stderr too.
"""

import email
import email.policy
import json
import os
import re
import sys
import unicodedata

VERBOSE = os.environ.get('CHAINS_VERBOSE') == '1'


def describe(s):
    return '%s v%d %r <%s> %s' % (s['id'], s['version'], s['name'][:70],
                                  s['submitter']['email'],
                                  s.get('version_link_reason'))


def show(what, *ss):
    if VERBOSE:
        print(what, ' | '.join(describe(s) for s in ss), file=sys.stderr)


B4_CHANGE_ID = re.compile(r'^\d{8}-.*-[0-9a-f]{12}$')
LINK_RE = re.compile(r'^[-*\s]*Link to v(\d+):\s*(\S+)', re.M | re.I)


def msgid_of_url(url):
    """The Message-ID an archive URL names: a path part holding an @."""
    from urllib.parse import unquote
    url = url.split('#')[0].split('?')[0].rstrip('>).,')
    for part in reversed(url.split('/')):
        part = unquote(part)
        if '@' in part:
            return part.strip('<>')
    return None


def mbox_bodies(path, wanted):
    """Text bodies of the messages whose Message-ID is in wanted."""
    out = {}
    with open(path, 'rb') as f:
        data = f.read()
    starts = [m.start() + 1 for m in re.finditer(rb'\nFrom ', data)]
    if data.startswith(b'From '):
        starts.insert(0, 0)
    starts.append(len(data))
    for a, b in zip(starts, starts[1:]):
        chunk = data[a:b]
        hend = chunk.find(b'\n\n')
        head = chunk[:hend if hend >= 0 else len(chunk)]
        m = re.search(rb'^message-id:\s*<?([^>\s]+)>?', head, re.M | re.I)
        if not m:
            continue
        mid = m.group(1).decode('utf-8', 'replace')
        if mid not in wanted or mid in out:
            continue
        nl = chunk.find(b'\n')
        msg = email.message_from_bytes(chunk[nl + 1:],
                                       policy=email.policy.compat32)
        text = []
        for part in msg.walk():
            if part.get_content_maintype() != 'text':
                continue
            pl = part.get_payload(decode=True) or b''
            text.append(pl.decode('utf-8', 'replace'))
        out[mid] = '\n'.join(text)
    return out


def person_name(s):
    """A display name as a person: no " via B4 Relay", no accents, case."""
    x = (s['submitter']['name'] or '').strip()
    if x.lower().endswith(' via b4 relay'):
        x = x[:-len(' via b4 relay')].strip()
    x = unicodedata.normalize('NFKD', x)
    x = ''.join(c for c in x if not unicodedata.combining(c))
    return x.casefold()


def relay_matches(relay, addr):
    """Whether relay is b4's devnull+USER.DOMAIN@kernel.org for addr."""
    if not relay.startswith('devnull+') or not relay.endswith('@kernel.org'):
        return False
    user, _, domain = addr.partition('@')
    return relay[len('devnull+'):-len('@kernel.org')] == user + '.' + domain


TREE_RE = re.compile(r'^(autosel|stable.*|\d+(\.\d+)+(\.y)?|\d+\.y)$', re.I)


def backport(s):
    """Whether the series' first patch names a stable tree."""
    if not s['patches']:
        return False
    m = re.match(r'^((?:\s*\[[^\]]*\])+)', s['patches'][0]['subject'])
    return bool(m) and any(TREE_RE.match(t) for t in
                           re.split(r'[\s,\[\]]+', m.group(1)) if t)


def same_person(a, b):
    ea = (a['submitter']['email'] or '').lower()
    eb = (b['submitter']['email'] or '').lower()
    if ea and (ea == eb or relay_matches(ea, eb) or relay_matches(eb, ea)):
        return True
    na, nb = person_name(a), person_name(b)
    return bool(na) and na == nb


def main():
    series = json.load(open(sys.argv[1]))['series']
    d = {s['id']: s for s in series}
    by_msg = {}
    for s in series:
        if s['cover']:
            by_msg[s['cover']] = s['id']
        for p in s['patches']:
            by_msg.setdefault(p['msgid'], s['id'])
    links = [s for s in series if s['supersedes'] in d]
    print('links', len(links))
    # stable backports ("[PATCH AUTOSEL 5.10 ...]", "[PATCH 6.1 12/80]")
    # at either end: not versions (issue #49), so counted apart
    print('links_backport', sum(backport(s) or backport(d[s['supersedes']])
                                for s in links))

    # change-id: the latest earlier series with the same change-id and a
    # version not above its own
    cid = {}
    for s in series:
        # b4's ("20250812-ltc4283-support-27c8c4e69c6b"), not Gerrit's
        # "Change-Id: I..." trailers, which backports of a commit share
        if s['change_id'] and B4_CHANGE_ID.match(s['change_id']):
            cid.setdefault(s['change_id'], []).append(s)
    tot = ok = 0
    for group in cid.values():
        for s in group:
            lower = [p for p in group if p is not s and
                     (p['date'], p['id']) < (s['date'], s['id']) and
                     p['version'] <= s['version']]
            if not lower:
                continue
            tot += 1
            exp = max(lower, key=lambda p: (p['date'], p['id']))
            ok += s['supersedes'] == exp['id']
            if s['supersedes'] != exp['id']:
                show('change_id miss: expected', s, exp,
                     *([d[s['supersedes']]] if s['supersedes'] in d else []))
    print('change_id', '%d/%d' % (ok, tot))

    # b4 "Link to vN:" of each cover, else of each first patch
    anchor = {}
    for s in series:
        a = s['cover'] or (s['patches'][0]['msgid'] if s['patches'] else None)
        if a:
            anchor.setdefault(a, s['id'])
    member = {}
    for s in series:
        for mid in [s['cover']] + [p['msgid'] for p in s['patches']]:
            if mid:
                member.setdefault(mid, s['id'])
    texts = mbox_bodies(sys.argv[2], set(member))
    bodies = {}    # the anchor's text, for b4_link
    alltext = {}   # every member's, for cross_person_explicit
    for mid, body in texts.items():
        if mid in anchor:
            bodies.setdefault(anchor[mid], []).append(body)
        alltext.setdefault(member[mid], []).append(body)

    def reaches(p, target):
        """Whether p's chain leads to target (p is a resend of it, under
        any label: a send after a higher version follows it)."""
        seen = set()
        while p is not None and p['id'] not in seen:
            if p['id'] == target:
                return True
            seen.add(p['id'])
            p = d.get(p['supersedes'])
        return False

    tot = ok = exact = 0
    for sid, body in bodies.items():
        s = d[sid]
        best = None
        for m in LINK_RE.finditer('\n'.join(body)):
            n = int(m.group(1))
            t = by_msg.get(msgid_of_url(m.group(2)) or '')
            if t is None or t == s['id'] or n >= s['version']:
                continue
            if best is None or n > best[0]:
                best = (n, t)
        if best is None:
            continue
        tot += 1
        named = d[best[1]]
        p = d.get(s['supersedes'])
        # past resends of its own version
        q = p
        while q is not None and q['version'] == s['version']:
            q = d.get(q['supersedes'])
        exact += q is not None and q['id'] == named['id']
        good = p is not None and (p['id'] == named['id'] or (
            q is not None and q['id'] == named['id']) or (
            same_person(p, s) and p['date'] >= named['date'] and
            (p['version'] >= named['version'] or reaches(p, named['id']))))
        ok += good
        if not good:
            show('b4_link miss: expected', s, named,
                 *([p] if p is not None else []))
    print('b4_link', '%d/%d (%.1f%%)' % (ok, tot, 100.0 * ok / max(tot, 1)))
    print('b4_link_exact', '%d/%d' % (exact, tot))

    succ = {}
    for s in links:
        succ.setdefault(s['supersedes'], set()).add(s['version'])
    fans = [k for k, v in succ.items() if len(v) > 1]
    print('fan_out', len(fans))

    def names_by_b4(s, p):
        """Whether s's text has b4's "Link to vN:" naming one of p's."""
        pm = set([p['cover']] + [x['msgid'] for x in p['patches']])
        for m in LINK_RE.finditer('\n'.join(alltext.get(s['id'], []))):
            if msgid_of_url(m.group(2)) in pm:
                return True
        return False

    def norm(x):
        return ' '.join((x or '').split()).lower()
    cross = []
    explicit = 0
    for s in links:
        p = d[s['supersedes']]
        if (not same_person(s, p) and
                not (s['change_id'] and s['change_id'] == p['change_id']) and
                norm(s['name']) != norm(p['name'])):
            cross.append(s)
            explicit += names_by_b4(s, p)
    print('cross_person', len(cross))
    print('cross_person_explicit', explicit)

    if len(sys.argv) > 3:
        key_of = {}
        expected = set()
        for e in json.load(open(sys.argv[3]))['series']:
            for mid in [e['cover']] + list(e['patches']):
                if mid:
                    key_of[mid] = e['key']
            if e.get('supersedes'):
                expected.add((e['key'], e['supersedes']))
        found = set()
        for s in links:
            a = key_of.get(s['cover'] or s['patches'][0]['msgid'])
            p = d[s['supersedes']]
            b = key_of.get(p['cover'] or p['patches'][0]['msgid'])
            found.add((a, b))
        hit = len(found & expected)
        print('precision', '%.2f%% (%d/%d)' % (
            100.0 * hit / max(len(found), 1), hit, len(found)))
        print('recall', '%.2f%% (%d/%d)' % (
            100.0 * hit / max(len(expected), 1), hit, len(expected)))

    # the samples: each fan-out with its successors and their rules, each
    # cross-person link
    for k in fans:
        print('  fan-out   ', describe(d[k]))
        for x in sorted((x for x in links if x['supersedes'] == k),
                        key=lambda x: (x['version'], x['date'])):
            print('       <-   ', describe(x))
    for s in cross:
        print('  cross     ', describe(s), '->', describe(d[s['supersedes']]),
              '(b4 Link to)' if names_by_b4(s, d[s['supersedes']]) else '')


if __name__ == '__main__':
    main()
