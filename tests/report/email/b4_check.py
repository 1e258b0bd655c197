"""Runs b4's own parsers over a reply body, for the email tests.

    /usr/bin/python3 b4_check.py BODY-FILE

Prints one line per thing b4 would take from the body: a trailer it would
credit to the patch ("trailer NAME: VALUE"), a diff ("diff") or a diffstat
("diffstat", which makes b4 take a mail for a cover letter).  Exits 0 when
it printed nothing, 1 otherwise, 77 when b4 is not installed.
"""
import sys

try:
    import b4
except ImportError:
    sys.exit(77)

body = open(sys.argv[1], encoding="utf-8").read()
found = []
trailers, _ = b4.LoreMessage.find_trailers(body, followup=True)
for t in trailers:
    found.append("trailer %s: %s" % (t.name, t.value))
if b4.DIFF_RE.search(body):
    found.append("diff")
if b4.DIFFSTAT_RE.search(body):
    found.append("diffstat")
for f in found:
    print(f)
sys.exit(1 if found else 0)
