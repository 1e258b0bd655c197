#!/usr/bin/python3
"""t0108-layers - the modules' include graph runs one way (README.md,
"Layout"): common <- store <- the stages (ingest, threading, apply, ci,
report) <- pipeline <- cli.  Every #include "DIR/..." of every .c and .h
of a module must name the module itself or one it may use, and a stage
never includes another stage, so that stages talk only through the
store.  Also: no .c file of cli/ is over 400 lines (cli/ is commands
only), no other .c file over 1,500, and no function over 120 lines
(from the "{" that opens it at the start of a line to the "}" that
closes it).  And pipeline/'s public header gives the fields of no
struct but a call's options, counts, result or target (PgatePipelineOptions,
PgatePipelineStats, ...): its configuration, projects, routes and plans
are opaque outside pipeline/ (pipeline-private.h holds them), so that a
caller hands over the key file and never reads or fills pipeline's
configuration itself.  TAP output; argv[1] is the source tree.
"""
import os
import re
import sys
import tempfile

# what each module may include, besides itself
ALLOWED = {
    "common": set(),
    "store": {"common"},
    "ingest": {"common", "store"},
    "threading": {"common", "store"},
    "apply": {"common", "store"},
    "ci": {"common", "store"},
    "report": {"common", "store"},
    "upstream": {"common", "store"},
    "pipeline": {"common", "store", "ingest", "threading", "apply", "ci",
                 "report", "upstream"},
    "cli": {"common", "store", "ingest", "threading", "apply", "ci",
            "report", "upstream", "pipeline"},
}
CLI_MAX_LINES = 400
FILE_MAX_LINES = 1500
FUNC_MAX_LINES = 120
PUBLIC_STRUCT_OK = re.compile(r'(Options|Stats|Result|Target)$')
FUNC_NAME = re.compile(r'^([A-Za-z_][A-Za-z_0-9]*)\s*\(')
SAME_MEANING = {"config.c", "config-check.c", "error.c", "explain.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/')
PRIVATE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/(?:[a-z]+/)*([a-z-]+-private\.h)"')

n = 0
failed = 0


def result(ok, what):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))


def check(top):
    """(failures, lines of explanation) of the tree at @top"""
    out = []
    for mod in sorted(ALLOWED):
        bad = []
        for root, _, files in os.walk(os.path.join(top, mod)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m is None:
                            continue
                        dep = m.group(1)
                        if dep != mod and dep in ALLOWED and \
                                dep not in ALLOWED[mod]:
                            bad.append("%s:%d includes %s/" % (
                                os.path.relpath(path, top), lineno, dep))
        out.append((not bad, "%s/ includes only %s" % (
            mod, ", ".join(sorted(ALLOWED[mod])) or "itself"), bad))
    # a module's private headers (*-private.h) are its own: the pipeline
    # object is opaque to cli/ (pipeline-private.h holds it)
    bad = []
    for mod in sorted(ALLOWED):
        for root, _, files in os.walk(os.path.join(top, mod)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = PRIVATE.match(line)
                        if m and m.group(1) != mod:
                            bad.append("%s:%d includes %s/%s" % (
                                os.path.relpath(path, top), lineno,
                                m.group(1), m.group(2)))
    out.append((not bad, "no module includes another's private header",
                bad))
    # names say what a file holds: two source files of one name outside
    # tests/ mean the same thing in their folders (a part's configuration,
    # its `config check`, a module's error domain, why a module linked
    # what it did)
    seen = {}
    for mod in sorted(ALLOWED):
        for root, _, files in os.walk(os.path.join(top, mod)):
            for f in files:
                if f.endswith(".c") and f not in SAME_MEANING:
                    seen.setdefault(f, []).append(
                        os.path.relpath(os.path.join(root, f), top))
    bad = ["%s: %s" % (f, ", ".join(sorted(p))) for f, p in sorted(seen.items())
           if len(p) > 1]
    out.append((not bad, "no two source files share a name but %s"
                % ", ".join(sorted(SAME_MEANING)), bad))
    # long files and long functions: the house stays readable
    long_files, long_funcs = [], []
    for mod in sorted(ALLOWED):
        for root, _, files in os.walk(os.path.join(top, mod)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, top)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().split("\n")
                if len(lines) - 1 > FILE_MAX_LINES:
                    long_files.append("%s: %d lines" % (rel, len(lines) - 1))
                start, name = None, "?"
                for i, line in enumerate(lines):
                    if line == "{":
                        start, name = i, "?"
                        for j in range(i - 1, max(i - 8, -1), -1):
                            m = FUNC_NAME.match(lines[j])
                            if m:
                                name = m.group(1)
                                break
                    elif line == "}" and start is not None:
                        if i - start + 1 > FUNC_MAX_LINES:
                            long_funcs.append("%s: %s, %d lines" % (
                                rel, name, i - start + 1))
                        start = None
    out.append((not long_files, "no .c file is over %d lines"
                % FILE_MAX_LINES, long_files))
    out.append((not long_funcs, "no function is over %d lines"
                % FUNC_MAX_LINES, long_funcs))
    # pipeline.h: the structs whose fields it gives
    bad = []
    hdr = os.path.join(top, "pipeline", "pipeline.h")
    if os.path.exists(hdr):
        with open(hdr, encoding="utf-8") as fh:
            text = fh.read()
        for m in re.finditer(r'^typedef struct(?: \w+)? \{\n.*?^\} (\w+);',
                             text, re.S | re.M):
            if not PUBLIC_STRUCT_OK.search(m.group(1)):
                bad.append("pipeline/pipeline.h: %s has public fields"
                           % m.group(1))
    out.append((not bad, "pipeline/pipeline.h gives the fields of a call's "
                "options, counts, result and target only", bad))
    cli = os.path.join(top, "cli")
    for f in sorted(os.listdir(cli)) if os.path.isdir(cli) else []:
        if not f.endswith(".c"):
            continue
        with open(os.path.join(cli, f), encoding="utf-8") as fh:
            lines = sum(1 for _ in fh)
        out.append((lines <= CLI_MAX_LINES, "cli/%s: %d lines (at most %d)"
                    % (f, lines, CLI_MAX_LINES), []))
    return out


for ok, what, bad in check(sys.argv[1]):
    result(ok, what)
    for b in bad:
        print("#   " + b)

# the check itself fails on a tree that breaks each rule
with tempfile.TemporaryDirectory() as t:
    for d in ("pipeline", "ingest", "cli"):
        os.mkdir(os.path.join(t, d))
    with open(os.path.join(t, "pipeline", "p.c"), "w") as fh:
        fh.write('#include "cli/cli.h"\n')
    with open(os.path.join(t, "pipeline", "pipeline.h"), "w") as fh:
        fh.write("typedef struct {\n\tint n;\n} PgateRunOptions;\n"
                 "typedef struct {\n\tchar *repo;\n} PgateApplyConfig;\n")
    with open(os.path.join(t, "ingest", "i.h"), "w") as fh:
        fh.write('#  include "apply/apply.h"\n')
    for d in ("ingest", "cli"):
        with open(os.path.join(t, d, "site.c"), "w") as fh:
            fh.write("\n")
    with open(os.path.join(t, "cli", "big.c"), "w") as fh:
        fh.write('#include "pipeline/pipeline-private.h"\n' +
                 "\n" * (CLI_MAX_LINES + 1))
    with open(os.path.join(t, "ingest", "long.c"), "w") as fh:
        fh.write("static int\nlong_one(void)\n{\n" +
                 "\t;\n" * (FUNC_MAX_LINES - 1) + "}\n" +
                 "\n" * FILE_MAX_LINES)
    bad = [what for ok, what, _ in check(t) if not ok]
    result(bad == ["ingest/ includes only common, store",
                   "pipeline/ includes only apply, ci, common, ingest, "
                   "report, store, threading, upstream",
                   "no module includes another's private header",
                   "no two source files share a name but config-check.c, "
                   "config.c, error.c, explain.c",
                   "no .c file is over %d lines" % FILE_MAX_LINES,
                   "no function is over %d lines" % FUNC_MAX_LINES,
                   "pipeline/pipeline.h gives the fields of a call's "
                   "options, counts, result and target only",
                   "cli/big.c: %d lines (at most %d)" % (CLI_MAX_LINES + 2,
                                                          CLI_MAX_LINES)],
           "the check catches a stage including another, pipeline/ "
           "including cli/, cli/ including pipeline's private header, two "
           "site.c, a long file, a %d-line function, a configuration with public "
           "fields, a long cli/ file: %s"
           % (FUNC_MAX_LINES + 1, bad))

print("1..%d" % n)
sys.exit(1 if failed else 0)
