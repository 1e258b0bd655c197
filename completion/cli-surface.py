#!/usr/bin/python3
"""cli-surface.py - patchgate's commands, subcommands and options, as its
--help says them, in JSON.

    cli-surface.py PATCHGATE-FULL

prints {"global": [OPTION...], "commands": [{"name", "summary", "options",
"subcommands": [{"name", "options"}]}]}.  An option is "--name" or
"--name=" (it takes a value), short ones beside ("-q").

The bash completion (gen-bash-completion.py) is generated from it at build
time, and tests/packaging/t0911-man-cli.sh holds the man page to it: what
--help says is the truth, since the option tables are what parse.

Where it looks: `patchgate --help` lists the commands ("  NAME  summary"
under "Commands:"); `patchgate CMD --help` is either GLib's option help
("Usage:\n  CMD [OPTION…] ARGS" and the options) or, for a command with
subcommands, "usage: patchgate CMD SUB ..." lines; GLib's usage line may
name them too ("[list|send]", "html DIR").
"""
import json
import os
import re
import subprocess
import sys
import tempfile

exe = os.path.abspath(sys.argv[1])
# --help opens no store and reads no file; an empty environment of ours
# makes sure of it
env = {k: v for k, v in os.environ.items()
       if not k.startswith("PATCHGATE_")}
tmp = tempfile.mkdtemp(prefix="pgate-surface-")
env["PATCHGATE_STATE"] = os.path.join(tmp, "state")


def help_of(*args):
    r = subprocess.run([exe, *args, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env, cwd=tmp,
                       text=True)
    return r.stdout


def options(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s+((?:-\w, )?--[\w-]+(?:[= ][A-Z]+)?)\s", line + " ")
        if not m:
            continue
        for part in m.group(1).split(", "):
            if part in ("-h", "--help"):
                continue
            name = re.match(r"--?[\w-]+", part).group(0)
            out.append(name + ("=" if re.search(r"[= ][A-Z]+$", part)
                               else ""))
    return out


def subcommands(cmd, text):
    subs = []
    for line in text.splitlines():
        m = re.match(r"^\s*(?:usage:)?\s*patchgate " + re.escape(cmd) +
                     r" ([a-z][a-z-]*)", line)
        if m:
            # "series list [--json] | show ID": both
            for w in [m.group(1)] + re.findall(r"\| ([a-z][a-z-]*)", line):
                if w not in subs:
                    subs.append(w)
        m = re.match(r"^\s+" + re.escape(cmd) + r" \[OPTION…\] (.*)$", line)
        if m:
            for word in re.findall(r"\[?([a-z][a-z|-]*)\]?",
                                   m.group(1).split(" ")[0]):
                for w in word.split("|"):
                    if w and w not in subs:
                        subs.append(w)
    return subs


top = help_of()
glob = []
commands = []
section = None
for line in top.splitlines():
    if line.endswith(":") and not line.startswith(" "):
        section = line[:-1]
        continue
    if section == "Global options":
        m = re.match(r"^\s+(?:-\w, )?(--[\w-]+)( [A-Z]+)?", line)
        if m:
            glob.append(m.group(1) + ("=" if m.group(2) else ""))
            if line.strip().startswith("-h,"):
                glob.append("-h")
    elif section == "Commands":
        m = re.match(r"^  (\S+)\s+(.*)$", line)
        if m:
            commands.append({"name": m.group(1), "summary": m.group(2)})
if not commands:
    sys.exit(f"cli-surface: no commands in {exe} --help")
for c in commands:
    text = help_of(c["name"])
    c["options"] = options(text)
    c["subcommands"] = []
    for s in subcommands(c["name"], text):
        c["subcommands"].append({"name": s,
                                 "options": options(help_of(c["name"], s))})
json.dump({"global": glob, "commands": commands}, sys.stdout, indent=1)
print()
