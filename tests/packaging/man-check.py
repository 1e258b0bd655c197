#!/usr/bin/python3
"""man-check.py - the man pages against what patchgate says of itself.

    man-check.py cli PATCHGATE.1 SURFACE.json
    man-check.py conf PATCHGATE.CONF.5 KEYS.json

Renders the page with groff (-man -Tascii, no overstriking) and prints
one line per disagreement, exiting 1 when there is one:

cli (SURFACE.json: completion/cli-surface.py's, from --help):
  command      a command of `patchgate --help` that COMMANDS does not name
  subcommand   a subcommand ("msg show") COMMANDS does not name
  options      a command or subcommand with options but no subsection of
               COMMAND OPTIONS
  option       an option --help lists that its subsection lacks
  stale        an option of a subsection that --help does not list
  global       a global option that GLOBAL OPTIONS lacks

conf (KEYS.json: `patchgate config keys --json`):
  group        a group of the table without its "[group]" subsection
  key          a key of the table missing from its group's subsection
  unknown      a key in the page the table does not have
  default      a key whose default in the page is not the table's
"""
import json
import re
import subprocess
import sys

mode, page, data = sys.argv[1:4]
text = subprocess.run(["groff", "-man", "-Tascii", "-rHY=0", "-rLL=250n",
                       "-P-c", "-P-b", "-P-u",
                       page], check=True, capture_output=True,
                      text=True).stdout
problems = []


def sections():
    """{SECTION: {subsection or "": [lines]}}"""
    out = {}
    sec = sub = None
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Z ]+$", line):
            sec, sub = line.strip(), ""
            out[sec] = {"": []}
        elif sec and re.match(r"^   \S", line):
            sub = line.strip()
            out[sec][sub] = []
        elif sec:
            out[sec][sub].append(line)
    return out


secs = sections()

if mode == "cli":
    with open(data) as f:
        surface = json.load(f)
    cmds_text = "\n".join(l for ls in secs.get("COMMANDS", {}).values()
                          for l in ls)
    heads = [l.strip() for l in cmds_text.splitlines()
             if re.match(r"^       \S", l)]
    named = set()
    for h in heads:
        # "msg list, msg show MSGID", "approve, reject SERIES"
        for part in h.split(","):
            words = part.split()
            if words:
                named.add(words[0])
                if len(words) > 1:
                    named.add(" ".join(words[:2]))
    opts_secs = secs.get("COMMAND OPTIONS", {})

    def options_in(lines):
        out = set()
        for l in lines:
            m = re.match(r"^       (-.*)$", l)
            if m:
                out.update(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)",
                                      m.group(1)))
        return out

    for c in surface["commands"]:
        if c["name"] not in named:
            problems.append(f"command: {c['name']}: not in COMMANDS")
        units = []
        if c["options"]:
            units.append((c["name"], c["options"]))
        for s in c["subcommands"]:
            full = f"{c['name']} {s['name']}"
            if full not in named:
                problems.append(f"subcommand: {full}: not in COMMANDS")
            if s["options"]:
                units.append((full, s["options"]))
        for name, opts in units:
            if name == c["name"] and c["subcommands"] and name not in opts_secs:
                # a command whose options its subcommands parse ("report
                # --json html" is "report html --json"): theirs will do
                subs = [opts_secs.get(f"{name} {s['name']}", [])
                        for s in c["subcommands"]]
                have = options_in(l for ls in subs for l in ls)
                for o in sorted({o.rstrip("=") for o in opts} - have):
                    problems.append(f"option: {name} {o}: --help lists it, "
                                    "the man page does not")
                continue
            if name not in opts_secs:
                problems.append(f"options: {name}: no subsection in "
                                "COMMAND OPTIONS")
                continue
            have = options_in(opts_secs[name])
            want = {o.rstrip("=") for o in opts}
            for o in sorted(want - have):
                problems.append(f"option: {name} {o}: --help lists it, "
                                "the man page does not")
            for o in sorted(have - want):
                problems.append(f"stale: {name} {o}: in the man page, "
                                "not in --help")
    gl = options_in(l for ls in secs.get("GLOBAL OPTIONS", {}).values()
                    for l in ls)
    for o in surface["global"]:
        if o.rstrip("=") not in gl:
            problems.append(f"global: {o.rstrip('=')}: not in GLOBAL OPTIONS")
elif mode == "conf":
    with open(data) as f:
        table = json.load(f)["keys"]
    keys = secs.get("KEYS", {})
    for g in dict.fromkeys(k["group"] for k in table):
        if f"[{g}]" not in keys:
            problems.append(f"group: [{g}]: no subsection in KEYS")
    page_keys = {}
    for sub, lines in keys.items():
        m = re.match(r"^\[([a-z.]+(?: [A-Z]+)?)\]$", sub)
        if not m:
            continue
        # "       key (type; default: SHOWN)", maybe wrapped (at the
        # same indent)
        head = None
        for l in lines + [""]:
            if re.match(r"^       \S", l):
                head = l.strip() if head is None else head + " " + l.strip()
                k = re.match(r"^([\w.]+) \((.*)\)$", head)
                if k:
                    page_keys[(m.group(1), k.group(1))] = k.group(2)
                    head = None
            else:
                head = None
    for k in table:
        where = (k["group"], k["key"])
        if where not in page_keys:
            problems.append(f"key: [{k['group']}] {k['key']}: not in the page")
            continue
        what = page_keys.pop(where)
        if not k["required"] and f"default: {k['shown']}" not in what:
            problems.append(f"default: [{k['group']}] {k['key']}: the page "
                            f"says '{what}', the table '{k['shown']}'")
    for g, key in sorted(page_keys):
        problems.append(f"unknown: [{g}] {key}: in the page, not in the table")
else:
    sys.exit(f"man-check: no mode {mode}")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
