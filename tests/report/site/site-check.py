#!/usr/bin/python3
"""site-check.py - checks of the static site (docs/report-site.md).

    site-check.py parse DIR        every .html parses with html5lib's strict
                                   parser: one line per error
    site-check.py links DIR        every local link (href, src) of every page
                                   leads to a file, and its #fragment to an
                                   id there: one line per broken link
    site-check.py dom FILE KIND    a DOM that chromium --dump-dom printed:
                                   prints what the tests assert on, one
                                   "name: value" line each
    site-check.py png FILE         "WIDTH HEIGHT BYTES" of a PNG
"""
import os
import struct
import sys
import urllib.parse
from html.parser import HTMLParser


def pages(top):
    for root, _, files in os.walk(top):
        for f in sorted(files):
            if f.endswith(".html"):
                yield os.path.join(root, f)


def parse(top):
    import html5lib
    bad = 0
    for path in pages(top):
        with open(path, "rb") as fh:
            data = fh.read()
        p = html5lib.HTMLParser(strict=False,
                                tree=html5lib.getTreeBuilder("etree"))
        p.parse(data, transport_encoding="utf-8")
        for pos, code, args in p.errors:
            bad += 1
            print("%s:%s: %s %s" % (os.path.relpath(path, top), pos, code,
                                    args))
    return bad


class Collect(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.ids, self.scripts = [], set(), 0
        self.tags = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("href", "src"):
            if k in a and a[k] is not None:
                self.links.append(a[k])
        if tag == "script":
            self.scripts += 1


def collect(path):
    c = Collect()
    with open(path, encoding="utf-8") as fh:
        c.feed(fh.read())
    return c


def links(top):
    cache = {}
    bad = 0

    def get(path):
        if path not in cache:
            cache[path] = collect(path)
        return cache[path]

    for path in pages(top):
        for link in get(path).links:
            u = urllib.parse.urlsplit(link)
            if u.scheme in ("http", "https") or link.startswith("//"):
                continue
            if u.scheme:
                bad += 1
                print("%s: a %s: link: %s" % (os.path.relpath(path, top),
                                              u.scheme, link))
                continue
            target = os.path.normpath(os.path.join(
                os.path.dirname(path), urllib.parse.unquote(u.path))) \
                if u.path else path
            if not os.path.realpath(target).startswith(
                    os.path.realpath(top)) or not os.path.isfile(target):
                bad += 1
                print("%s: broken: %s" % (os.path.relpath(path, top), link))
                continue
            if u.fragment and target.endswith(".html") and \
                    u.fragment not in get(target).ids:
                bad += 1
                print("%s: no #%s in %s" % (os.path.relpath(path, top),
                                            u.fragment, link))
    return bad


def dom(path, kind):
    c = collect(path)
    rows = [a for t, a in c.tags if t == "tr" and "data-outcome" in a]
    print("scripts: %d" % c.scripts)
    print("rows: %d" % len(rows))
    print("outcomes: %s" % ",".join(sorted(a["data-outcome"] for a in rows)))
    print("javascript-links: %d" % sum(
        1 for l in c.links if l.strip().lower().startswith("javascript:")))
    handlers = [(t, k) for t, a in c.tags for k in a if k.startswith("on")]
    print("event-handlers: %d" % len(handlers))
    print("series-links: %d" % sum(1 for l in c.links if "series/" in l))
    print("log-links: %d" % sum(1 for l in c.links if "log/" in l))
    print("line-anchors: %d" % sum(1 for i in c.ids if i.startswith("L")))
    print("failed-anchor: %s" % ("failed" in c.ids))
    print("badges: %s" % ",".join(sorted(set(
        a.get("class", "") for t, a in c.tags
        if t == "span" and a.get("class", "").startswith("b ")))))
    return 0


def png(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    w, h = struct.unpack(">II", head[16:24])
    print(w, h, os.path.getsize(path))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "parse":
        sys.exit(1 if parse(sys.argv[2]) else 0)
    if cmd == "links":
        sys.exit(1 if links(sys.argv[2]) else 0)
    if cmd == "dom":
        sys.exit(dom(sys.argv[2], sys.argv[3]))
    if cmd == "png":
        sys.exit(png(sys.argv[2]))
    sys.exit(64)
