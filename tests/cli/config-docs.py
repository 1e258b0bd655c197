#!/usr/bin/python3
"""config-docs.py - the documentation and the examples against the key table.

    config-docs.py SRCDIR KEYS.json

KEYS.json is `patchgate config keys --json` (common/config-keys.c).  Prints
one line per disagreement, "CHECK: what", and exits 1 when there is one:

  doc-row      a key of the table has no `| \\`key\\` |` row in the file the
               table names
  doc-known    a doc's key table has a row for a key the table does not
               have (for that file)
  doc-default  a doc row's default is not the table's ("shown")
  example-row  contrib/patchgate.conf.example lacks a key of the table in
               its group, or shows another default than the table's
  example-known
               a contrib/*.conf.example has a group or key the table does
               not have
  code-key     a reader (READERS below) names a key, in a call of a getter,
               that the table does not have
  code-unread  a key of the table that no reader names

A doc key table is one whose header row starts "| key | default |"; a row's
first cell names one or more keys in backticks, its second the default
(backticks dropped).  In the examples a key line is "key = value" or, commented
out, "#key = value" (prose comments start with "# "), below "[group]" or
"#[group]".
"""
import json
import os
import re
import sys

DOCS = ["docs/config.md", "docs/pipeline.md", "docs/ci-local.md",
        "docs/ci-jenkins.md", "docs/ci-buildbot.md", "docs/report-patchwork.md",
        "docs/report-email.md"]

src, keys_json = sys.argv[1], sys.argv[2]
with open(keys_json) as f:
    table = json.load(f)["keys"]
problems = []


def say(check, msg):
    problems.append(f"{check}: {msg}")


def matches(row, key):
    """Whether the table row @row names @key (a pattern: its family)."""
    if row["pattern"]:
        prefix = row["key"][:row["key"].rindex(".") + 1]
        return key == row["key"] or (key.startswith(prefix)
                                     and len(key) > len(prefix))
    return key == row["key"]


def doc_rows(path):
    """[(heading group or None, key, default)] of the key tables."""
    out = []
    in_table = False
    group = None
    with open(os.path.join(src, path)) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                m = re.search(r"`\[([a-z.]+)\]`|\[([a-z.]+)\]", line)
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
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2:
                continue
            default = cells[1].replace("`", "").strip()
            for key in re.findall(r"`([^`]+)`", cells[0]):
                out.append((group, key, default))
    return out


# the docs
documented = {}   # (doc, group, key) -> default
for doc in DOCS:
    for heading, key, default in doc_rows(doc):
        cands = [r for r in table if r["doc"] == doc and matches(r, key)]
        if len(cands) > 1 and heading:
            cands = [r for r in cands if r["group"] == heading]
        if not cands:
            say("doc-known", f"{doc}: `{key}` is documented but is no key "
                f"of the table documented there")
            continue
        if len(cands) > 1:
            say("doc-known", f"{doc}: `{key}` is ambiguous: put its group "
                f"in the heading above its table")
            continue
        r = cands[0]
        documented[(doc, r["group"], r["key"])] = default
        if default != r["shown"]:
            say("doc-default", f"{doc}: [{r['group']}] {key}: the doc says "
                f"'{default}', the table '{r['shown']}'")
for r in table:
    if r["type"] == "refused":
        continue
    if (r["doc"], r["group"], r["key"]) not in documented:
        say("doc-row", f"{r['doc']}: no | `{r['key']}` | row for "
            f"[{r['group']}] {r['key']}")


def example_keys(path):
    """{group: {key: value}} of an example file."""
    out = {}
    group = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = re.match(r"^#?\[([^\]]+)\]\s*$", line)
            if m:
                group = m.group(1)
                out.setdefault(group, {})
                continue
            m = re.match(r"^#?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s?(.*)$", line)
            if m:
                if group is None:
                    say("example-known", f"{path}:{n}: a key before any "
                        f"group")
                    continue
                out[group][m.group(1)] = m.group(2).strip()
    return out


contrib = os.path.join(src, "contrib")
groups = {r["group"] for r in table}
for name in sorted(os.listdir(contrib)):
    if not name.endswith(".conf.example"):
        continue
    rel = f"contrib/{name}"
    ex = example_keys(os.path.join(contrib, name))
    for g, kv in ex.items():
        if g not in groups:
            say("example-known", f"{rel}: [{g}] is no group of the table")
            continue
        for k in kv:
            if not any(r["group"] == g and matches(r, k)
                       and r["type"] != "refused" for r in table):
                say("example-known", f"{rel}: [{g}] {k} is no key of the "
                    f"table")
    if name != "patchgate.conf.example":
        continue
    for r in table:
        if r["type"] == "refused":
            continue
        kv = ex.get(r["group"], {})
        found = [k for k in kv if matches(r, k)]
        if not found:
            say("example-row", f"{rel}: [{r['group']}] {r['key']} is "
                f"missing")
        elif r["default"] is not None and kv[found[0]] != r["default"]:
            say("example-row", f"{rel}: [{r['group']}] {r['key']} shows "
                f"'{kv[found[0]]}', the default is '{r['default']}'")

# the code: every literal key in a getter's call is in the table, and every
# key of the table is named by some reader
READERS = ["cli/config.c", "cli/cmd-daemon.c", "pipeline/pipeline.c",
           "pipeline/stage-apply.c", "pipeline/stage-ci.c",
           "upstream/upstream.c",
           "ci/local/config.c", "ci/jenkins/config.c", "ci/buildbot/config.c",
           "report/patchwork/patchwork.c", "report/email/config.c",
           "pipeline/site-data.c", "pipeline/pw-state.c", "pipeline/route.c"]
CALL = re.compile(r"\b(?:get_\w+\s*\(\s*kf\s*,|(?:pgate_config_(?:string|"
                  r"bool|int|size|duration|list)|g_key_file_(?:get_\w+|"
                  r"has_key)|U64|LIMIT|address_globs)\s*\()")
code = ""
for path in READERS:
    try:
        with open(os.path.join(src, path)) as f:
            text = f.read()
    except OSError as e:
        say("code-key", f"{path}: {e.strerror}: update READERS")
        continue
    code += text
    for m in CALL.finditer(text):
        depth, i = 1, m.end()  # to the call's closing parenthesis
        while i < len(text) and depth > 0:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        for lit in re.findall(r'"([a-z_][a-z0-9_.]*)"', text[m.end():i]):
            if lit in groups:
                continue
            if not any(matches(r, lit) for r in table):
                say("code-key", f"{path}: reads \"{lit}\", which is no "
                    f"key of the table")
for r in table:
    if not r["pattern"] and f'"{r["key"]}"' not in code:
        say("code-unread", f"[{r['group']}] {r['key']}: no reader names it")

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
