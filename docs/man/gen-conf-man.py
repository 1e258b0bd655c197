#!/usr/bin/python3
"""gen-conf-man.py - patchgate.conf(5) in scdoc, from the key table.

    gen-conf-man.py KEYS.json SRCDIR TEMPLATE.scd > patchgate.conf.5.scd

KEYS.json is `patchgate config keys --json` (common/config-keys.c, the one
table of every key).  The template's line "@KEYS@" becomes one section
per group: every key of the table, with its type, its default as the
documentation shows it, its choices, and its meaning, taken from the
row of the key's table in the file the key table names (docs/*.md: the
"| key | default | meaning |" tables that tests/cli/t0106-config-docs.sh
holds to the key table).  A key is never written by hand here, so the
page cannot lack one; tests/packaging/t0912-man-conf.sh checks the
rendered page against `config keys --json` all the same.
"""
import json
import os
import re
import sys

keys_json, src, template = sys.argv[1:4]
with open(keys_json) as f:
    table = json.load(f)["keys"]


# ASCII for groff without preconv (the test runs groff -ww -z)
ASCII = {"\u2013": "-", "\u2014": "--", "\u2026": "...", "\u2019": "'",
         "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2192": "->",
         "\u00a0": " ", "\u00d7": "x"}


def esc(text):
    """Plain text for scdoc: its markup characters escaped."""
    for u, a in ASCII.items():
        text = text.replace(u, a)
    return (text.replace("\\", "\\\\").replace("*", "\\*")
            .replace("_", "\\_"))


def inline(md):
    """One line of the docs' Markdown in scdoc: `code` and **bold** bold,
    [text](link) its text."""
    md = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", md)
    out = []
    for part in re.split(r"(`[^`]*`|\*\*[^*]+\*\*)", md):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append("*" + esc(part[1:-1]) + "*")
        elif part.startswith("**") and part.endswith("**"):
            out.append("*" + esc(part[2:-2]) + "*")
        else:
            out.append(esc(part))
    return "".join(out)


_rows = {}


def doc_rows(path):
    """[(heading group or None, [keys], default, meaning)] of the key
    tables of the doc @path."""
    if path in _rows:
        return _rows[path]
    rows = []
    group = None
    in_table = False
    full = os.path.join(src, path)
    if os.path.exists(full):
        with open(full) as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("#"):
                    m = re.search(r"`\[([a-z.]+(?: [A-Z]+)?)\]`|\[([a-z.]+(?: [A-Z]+)?)\]", line)
                    group = (m.group(1) or m.group(2)) if m else None
                    in_table = False
                    continue
                if re.match(r"^\|\s*key\s*\|\s*default\s*\|", line):
                    in_table = True
                    continue
                if not line.startswith("|"):
                    in_table = False
                    continue
                if not in_table or re.match(r"^\|[\s:|-]*$", line):
                    continue
                # a "|" inside backticks is not a cell separator
                cells = re.split(r"\|(?=(?:[^`]*`[^`]*`)*[^`]*$)",
                                 line.strip().strip("|"))
                cells = [c.strip() for c in cells]
                if len(cells) < 2:
                    continue
                names = re.findall(r"`([^`]+)`", cells[0])
                meaning = cells[2] if len(cells) > 2 else ""
                rows.append((group, names, cells[1], meaning))
    _rows[path] = rows
    return rows


def meaning_of(k):
    best = None
    for group, names, _, meaning in doc_rows(k["doc"]):
        if k["key"] in names:
            if group == k["group"]:
                return meaning
            if best is None:
                best = meaning
    return best or ""


def section(group, keys):
    doc = sorted({k["doc"] for k in keys})
    lines = [f"## [{group}]", ""]
    lines.append("Described in " + ", ".join(
        "*" + esc(d) + "*" for d in doc) + ".")
    lines.append("")
    for k in keys:
        what = [k["type"]]
        if k["choices"]:
            what.append("one of " + esc(k["choices"].replace("|", ", ")))
        if k["required"]:
            what.append("required")
        else:
            what.append("default: " + esc(k["shown"]))
        lines.append(f"*{esc(k['key'])}* ({'; '.join(what)})")
        m = meaning_of(k)
        if m:
            # a sentence, whatever case the table's cell starts in
            m = m.lstrip(".\u2026 ")
            m = m[0].upper() + m[1:]
            lines.append("\t" + inline(m))
        lines.append("")
    return "\n".join(lines)


groups = []
for k in table:
    if k["group"] not in groups:
        groups.append(k["group"])
body = "\n".join(section(g, [k for k in table if k["group"] == g])
                 for g in groups)
with open(template) as f:
    text = f.read()
if "@KEYS@" not in text:
    sys.exit("gen-conf-man: the template has no @KEYS@ line")
# the documents as an installed system has them: the Debian package puts
# docs/*.md in /usr/share/doc/patchgate/ (debian/patchgate.docs)
body = re.sub(r"\bdocs/([a-z0-9-]+\.md)", r"/usr/share/doc/patchgate/\1", body)
sys.stdout.write(text.replace("@KEYS@", body))
