#!/usr/bin/python3
"""b4-check-driver.py - run a check command the way b4 review runs it.

Debian 12's b4 (0.12) predates `b4 review`'s external checks, so this
driver does what b4 0.15+ does (src/b4/review/checks.py,
_run_external_cmd and its callers; src/b4/__init__.py, _run_command and
LoreMessage.get_msg_as_bytes), as closely as a test needs:

  - the message is parsed with Python's email package (policy: utf-8,
    8bit, no line length limit) and written out again as b4 writes it:
    every header as "Name: value" (To/Cc/From as their addresses
    re-formatted; lines over 75 characters wrapped at blanks, as
    textwrap does), a blank line, then the *decoded* payload, each line
    stripped of its CR/LF and ended with "\\n";
  - the command line is split like a POSIX shell (shlex, whitespace
    split), never run through a shell;
  - it runs with stdin, stdout and stderr as pipes, in the repository's
    top directory (b4 chdir()s there), with b4's environment plus
    B4_TRACKING_FILE when a tracking file is given;
  - stdout is read as b4 reads it: empty (blank) stdout is [] after exit
    0, and one "fail" entry "exited with error code N" (details: stderr)
    otherwise; output that is not JSON is one "fail" entry "invalid JSON
    output: ..."; a lone object is a list of one; entries that are not
    objects are dropped; "tool" defaults to the command's basename,
    "status" to "fail", and a status other than pass/warn/fail is
    "fail"; summary, url and details default to "".

Usage: b4-check-driver.py [--topdir DIR] [--tracking FILE] [--show-input]
                          'CMD ARGS' < MESSAGE
Prints the results b4 would keep, as JSON (indent 2), on stdout.
"""
import argparse
import email
import email.policy
import email.utils
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

POLICY = email.policy.EmailPolicy(utf8=True, cte_type='8bit',
                                  max_line_length=None)


def addr_line(name, value, width=75):
    """To/Cc/From: the addresses re-formatted, wrapped between them."""
    parts = ['%s: ' % name]
    first = True
    for pair in email.utils.getaddresses([value]):
        pair = list(pair)
        if pair[0] == pair[1]:
            pair[0] = ''
        text = email.utils.formataddr(tuple(pair))
        if first:
            parts[-1] += text
            first = False
        elif len(parts[-1] + ', ' + text) > width:
            parts[-1] += ', '
            parts.append(text)
        else:
            parts[-1] += ', ' + text
    return '\n '.join(parts)


def header_line(name, value, width=75):
    if name.lower() in ('to', 'cc', 'from', 'x-original-from'):
        return addr_line(name, value, width)
    line = '%s: %s' % (name, value)
    if len(line) <= width:
        return line
    # b4's trick: the first word stays with the header name
    line = line.replace(': ', ':_', 1)
    wrapped = textwrap.wrap(line, break_long_words=False,
                            break_on_hyphens=False, subsequent_indent=' ',
                            width=width)
    return '\n'.join(wrapped).replace(':_', ': ', 1)


def msg_as_bytes(msg):
    out = b''
    for name, value in msg.items():
        out += header_line(name, str(value)).encode() + b'\n'
    out += b'\n'
    payload = msg.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = str(msg.get_payload() or '').encode('utf-8', 'replace')
    for line in payload.split(b'\n'):
        out += re.sub(rb'[\r\n]*$', b'', line) + b'\n'
    return out


def parse_output(cmdargs, ecode, out, err):
    tool = os.path.basename(cmdargs[0])
    if not out or not out.strip():
        if ecode:
            return [{'tool': tool, 'status': 'fail',
                     'summary': 'exited with error code %d' % ecode,
                     'details': err.strip().decode(errors='replace')}]
        return []
    try:
        data = json.loads(out)
    except json.JSONDecodeError as ex:
        return [{'tool': tool, 'status': 'fail',
                 'summary': 'invalid JSON output: %s' % ex,
                 'details': out.decode(errors='replace')}]
    if not isinstance(data, list):
        data = [data]
    results = []
    for entry in data:
        if not isinstance(entry, dict):
            continue
        status = entry.get('status', 'fail')
        if status not in ('pass', 'warn', 'fail'):
            status = 'fail'
        results.append({'tool': entry.get('tool', tool), 'status': status,
                        'summary': entry.get('summary', ''),
                        'url': entry.get('url', ''),
                        'details': entry.get('details', '')})
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--topdir', default=os.getcwd())
    ap.add_argument('--tracking')
    ap.add_argument('--show-input', action='store_true',
                    help='print the bytes fed to the command instead')
    ap.add_argument('cmd')
    a = ap.parse_args()
    msg = email.message_from_bytes(sys.stdin.buffer.read(), policy=POLICY)
    data = msg_as_bytes(msg)
    if a.show_input:
        sys.stdout.buffer.write(data)
        return 0
    sp = shlex.shlex(a.cmd, posix=True)
    sp.whitespace_split = True
    cmdargs = list(sp)
    env = dict(os.environ)
    if a.tracking:
        env['B4_TRACKING_FILE'] = a.tracking
    proc = subprocess.Popen(cmdargs, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=a.topdir, env=env)
    out, err = proc.communicate(input=data)
    json.dump(parse_output(cmdargs, proc.returncode, out, err), sys.stdout,
              indent=2)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
