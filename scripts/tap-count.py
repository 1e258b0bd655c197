#!/usr/bin/python3
"""Counts TAP results in meson's testlog.json files.

Prints "PASSED FAILED SKIPPED": every "ok" line is a pass ("ok ... # SKIP"
a skip), every "not ok" a failure ("# TODO" lines are expected failures and
count as passes), and a test that meson judged failed (crash, timeout, bad
exit code) without any "not ok" line counts as one more failure.
"""
import json
import re
import sys

ok_re = re.compile(r'^ok\b(.*)$')
notok_re = re.compile(r'^not ok\b(.*)$')
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path, encoding='utf-8', errors='replace').read().splitlines()
    except OSError:
        failed += 1
        continue
    for line in lines:
        t = json.loads(line)
        out = t.get('stdout') or ''
        n_fail = 0
        for l in out.splitlines():
            m = ok_re.match(l)
            if m:
                if re.search(r'#\s*skip', m.group(1), re.I):
                    skipped += 1
                else:
                    passed += 1
                continue
            m = notok_re.match(l)
            if m:
                if re.search(r'#\s*todo', m.group(1), re.I):
                    passed += 1
                else:
                    n_fail += 1
        failed += n_fail
        if t.get('result') not in ('OK', 'SKIP', 'EXPECTEDFAIL') and n_fail == 0:
            failed += 1
        if t.get('result') == 'SKIP' and not re.search(r'^(not )?ok\b', out, re.M):
            skipped += 1
print(passed, failed, skipped)
