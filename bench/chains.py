#!/usr/bin/python3
"""bench/chains.py - version-chain figures for bench/chains.sh.

    chains.py SERIES.json MBOX [MANIFEST.json]

SERIES.json is `patchgate series list --all --json`; MBOX the archive that
was ingested (read for the covers' text: b4's "Link to vN:" lines); with
MANIFEST (fixtures/gen-list.py --manifest) also the precision and recall of
the links against it.  Prints one "name value" line a figure:

  links           series with a supersedes link
  change_id       series whose change-id has an earlier version, and how
                  many of them supersede the expected one: the highest
                  lower version with that change-id, latest date (a resend:
                  the previous send of the same version)
  b4_link         series whose cover (else a patch) has b4's
                  "Link to vN: URL" naming a stored series with N below its
                  own version, and how many supersede the one of the
                  highest such N (past resends of their own version), or
                  a closer send by the same person whose chain leads to
                  it (a resend, a version between: issue #27's
                  definition, since a chain is a line)
  b4_link_exact   the same, counting only the named version itself
  fan_out         series superseded by successors of more than one version
  cross_person    links whose two submitters differ in name and address,
                  with no shared change-id and different series names
  cross_person_explicit  of those, the ones whose successor's text names
                  the predecessor by b4's "Link to vN:" (strong evidence)
  precision, recall (with MANIFEST): of the links, by series key

With CHAINS_VERBOSE=1 in the environment, the series behind each b4_link
miss, fan-out and cross-person link go to stderr.
"""

import email
import email.policy
import json
import os
import re
import sys

VERBOSE = os.environ.get('CHAINS_VERBOSE') == '1'


def show(what, *ss):
    if VERBOSE:
        print(what, ' | '.join('%s v%d %r <%s> %s' % (
            s['id'], s['version'], s['name'], s['submitter']['email'],
            s.get('version_link_reason')) for s in ss), file=sys.stderr)

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

    # change-id: expected predecessor
    cid = {}
    for s in series:
        if s['change_id']:
            cid.setdefault(s['change_id'], []).append(s)
    tot = ok = 0
    for group in cid.values():
        for s in group:
            lower = [p for p in group if p is not s and
                     (p['version'], p['date'], p['id']) <
                     (s['version'], s['date'], s['id'])]
            if not lower:
                continue
            tot += 1
            exp = max(lower, key=lambda p: (p['version'], p['date'], p['id']))
            ok += s['supersedes'] == exp['id']
    print('change_id', '%d/%d' % (ok, tot))

    # b4 "Link to vN:"
    anchor = {}
    for s in series:
        for a in ([s['cover']] if s['cover'] else
                  [p['msgid'] for p in s['patches']]):
            anchor.setdefault(a, s['id'])
    texts = mbox_bodies(sys.argv[2], set(anchor))
    bodies = {}
    for mid, body in texts.items():
        bodies.setdefault(anchor[mid], []).append(body)

    def same_person(a, b):
        def nm(x):
            x = (x or '').strip().lower()
            return x[:-len(' via b4 relay')].strip() \
                if x.endswith(' via b4 relay') else x
        ea, eb = a['submitter']['email'], b['submitter']['email']
        na, nb = nm(a['submitter']['name']), nm(b['submitter']['name'])
        return (ea and ea.lower() == (eb or '').lower()) or \
            (na and na == nb)

    def reaches(p, target):
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
        # a resend of the same version sits between: walk past it
        p = d.get(s['supersedes'])
        while p is not None and p['version'] == s['version']:
            p = d.get(p['supersedes'])
        exact += p is not None and p['id'] == best[1]
        good = p is not None and (p['id'] == best[1] or (
            same_person(p, s) and p['version'] >= d[best[1]]['version'] and
            reaches(p, best[1])))
        ok += good
        if not good:
            show('b4_link miss: expected', s, d[best[1]],
                 *([p] if p is not None else []))
    print('b4_link', '%d/%d' % (ok, tot))
    print('b4_link_exact', '%d/%d' % (exact, tot))

    succ = {}
    for s in links:
        succ.setdefault(s['supersedes'], set()).add(s['version'])
    print('fan_out', sum(len(v) > 1 for v in succ.values()))
    for k, v in succ.items():
        if len(v) > 1:
            show('fan_out:', d[k], *[x for x in links if x['supersedes'] == k])

    def norm(x):
        return (x or '').strip().lower()
    def names_by_b4(s, p):
        """Whether s's text has b4's "Link to vN:" naming one of p's."""
        pm = set([p['cover']] + [x['msgid'] for x in p['patches']])
        for m in LINK_RE.finditer('\n'.join(bodies.get(s['id'], []))):
            if msgid_of_url(m.group(2)) in pm:
                return True
        return False
    cross = explicit = 0
    for s in links:
        p = d[s['supersedes']]
        a, b = s['submitter'], p['submitter']
        if (norm(a['email']) != norm(b['email']) and
                norm(a['name']) != norm(b['name']) and
                not (s['change_id'] and s['change_id'] == p['change_id']) and
                norm(s['name']) != norm(p['name'])):
            cross += 1
            explicit += names_by_b4(s, p)
            show('cross_person:', s, p)
    print('cross_person', cross)
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


if __name__ == '__main__':
    main()
