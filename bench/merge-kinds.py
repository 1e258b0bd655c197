#!/usr/bin/python3
"""merge-kinds.py - the shapes of issue #43's kernel run, generated.

    merge-kinds.py gen DIR          make DIR/up.git, DIR/list.mbox,
                                    DIR/truth.json
    merge-kinds.py score DIR STATE PATCHGATE [--save F] [--compare F]
                                    compare `patchgate series show --json`
                                    of every series in STATE with the
                                    truth; prints the figures as JSON
                                    (--save: what was seen, to F;
                                    --compare: how many series changed
                                    since F was saved)

The kernel run (180 watchdog, pwm and leds series applied onto a 6.1
tree, 70 of them merged onto master and next by a maintainer) cannot be
repeated here: no network, no archive.  This makes its shapes instead,
in a real git tree, seeded (the same tree every time):

  - 180 chains of versions by 40 authors in three subsystems; 70 land,
    each as one kind: a Link: trailer (b4), a Message-Id: trailer
    (git am -m), none (plain git am), only in part, only on next, once
    cherry-picked onto next, and edited by the maintainer (subject
    reworded; diff edited; a subsystem prefix and a comment line added;
    subject and diff both);
  - the landed chains have 114 older versions never merged: some
    identical to the version merged, the others with one patch changed
    under the same subjects, three of them long chains whose first
    versions are months older than the merge (v12 in November, v18 in
    May);
  - two diffs that git makes with the indent heuristic (one in a series
    without a trailer, one reworded);
  - look-alikes: another person's identical copy of a landed patch, a v6
    identical to a landed v7 under another name (no chain between them),
    and an author's unmerged patch of the same subject as a later commit
    of theirs, 200 days before it;
  - one more landed series on the branch "incr" (master and it), for the
    incremental pass.

Every mail's Date is its commit's author date, as format-patch writes
it; the maintainer applies with git am, which keeps it.
"""
import email.utils
import json
import os
import random
import re
import shutil
import subprocess
import sys

T0 = 1672531200          # 2023-01-01
DAY = 86400
SUBSYS = ["watchdog", "pwm", "leds"]
WORDS = ["alpha", "bravo", "coral", "delta", "ember", "flint", "grove",
         "haven", "ivory", "jolt", "karma", "lumen", "maple", "nexus",
         "onyx", "prism", "quill", "raven", "sable", "tidal"]


def git(repo, *args, env=None, inp=None, check=True):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(["git", "-C", repo] + list(args), env=e,
                       input=inp, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit("git %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def ident(name, email, when):
    d = "%d +0000" % when
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": d, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": d}


def func(n, v):
    return ("int f%d(void)\n{\n\tif (x) {\n\t\treturn %d;\n\t}\n\n"
            "\treturn 0;\n}\n\n" % (n, v))


def heuristic_base():
    return func(0, 0) + func(1, 1) + func(2, 2)


def heuristic_new():
    # the shape tests/pipeline/t0582 checks: git's diff slides it
    return (func(0, 0) + func(1, 1) + "int f2(void)\n{\n}\n\nint g(void)\n"
            + func(2, 2)[len("int f2(void)\n"):])


class Gen:
    def __init__(self, out):
        self.out = out
        self.rng = random.Random(43)
        self.src = os.path.join(out, "src")
        self.maint = os.path.join(out, "maint")
        self.up = os.path.join(out, "up.git")
        self.mails = []       # (date, text)
        self.truth = []       # one entry a series (a version)
        self.authors = [("Dev %02d" % i, "dev%02d@example.org" % i)
                        for i in range(40)]

    def base(self, heuristic_files):
        os.makedirs(self.src)
        git(self.src, "init", "-q", "-b", "master")
        for s in SUBSYS:
            os.makedirs(os.path.join(self.src, "drivers", s))
            with open(os.path.join(self.src, "drivers", s, "core.c"),
                      "w") as f:
                f.write("int %s_core;\n" % s)
        for path in heuristic_files:
            with open(os.path.join(self.src, path), "w") as f:
                f.write(heuristic_base())
        git(self.src, "add", ".")
        git(self.src, "commit", "-q", "-m", "Linux 6.1",
            env=ident("Linus", "torvalds@example.org", T0 - 30 * DAY))
        git(self.out, "clone", "-q", "--bare", self.src, "up.git")
        git(self.out, "clone", "-q", "up.git", "maint")
        git(self.maint, "checkout", "-q", "-b", "next")
        git(self.maint, "checkout", "-q", "master")

    # ---- the mails of one version ----

    def version(self, ch, v, date, contents, author=None, name=None,
                subjects=None, what="v"):
        """Mails version @v of chain @ch (patches: @contents, a list of
        (path, text)); returns the Message-IDs of its patches."""
        an, ae = author or ch["author"]
        name = name or ch["name"]
        subjects = subjects or ch["subjects"]
        branch = "c%d-%s%d-%s" % (ch["id"], what, v, ae.split("@")[0])
        git(self.src, "checkout", "-q", "-B", branch, "master")
        for j, (path, text) in enumerate(contents):
            full = os.path.join(self.src, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            git(self.src, "add", path)
            git(self.src, "commit", "-q", "-m", subjects[j], "-m",
                "Signed-off-by: %s <%s>" % (an, ae),
                env=ident(an, ae, date + j * 60))
        n = len(contents)
        prefix = "PATCH" if v == 1 else "PATCH v%d" % v
        args = ["format-patch", "--stdout", "--thread", "-%d" % n,
                "--subject-prefix=" + prefix]
        if n > 1:
            args.append("--cover-letter")
        text = git(self.src, *args,
                   env={"GIT_COMMITTER_NAME": an, "GIT_COMMITTER_EMAIL": ae})
        git(self.src, "checkout", "-q", "master")
        tag = "c%d.%s%d.%s" % (ch["id"], what, v, ae.split("@")[0])
        mails = re.split(r"(?m)^(?=From [0-9a-f]{40} )", text)
        mails = [m for m in mails if m.strip()]
        ids = {}
        for k, m in enumerate(mails):
            old = re.search(r"(?mi)^Message-ID: <([^>]+)>", m).group(1)
            ids[old] = "%s.%d@example.org" % (tag, k if n > 1 else 1)
        out = []
        for m in mails:
            for old, new in ids.items():
                m = m.replace(old, new)
            m = m.replace("*** SUBJECT HERE ***", name)
            out.append(m)
            self.mails.append(m)
        return [re.search(r"(?mi)^Message-ID: <([^>]+)>", m).group(1)
                for m in out if "*** BLURB HERE ***" not in m]

    # ---- the maintainer ----

    def am(self, mails, trailer=None, branch="master"):
        """git am each of @mails (texts) on @branch; returns the commits."""
        git(self.maint, "checkout", "-q", branch)
        commits = []
        for m in mails:
            msgid = re.search(r"(?mi)^Message-ID: <([^>]+)>", m).group(1)
            args = ["am", "-q"] + (["-m"] if trailer == "msgid" else [])
            git(self.maint, *args, inp=m,
                env={"GIT_COMMITTER_NAME": "Mai Ntainer",
                     "GIT_COMMITTER_EMAIL": "mai@example.org"})
            if trailer == "link":
                git(self.maint, "commit", "-q", "--amend", "--no-edit",
                    "--trailer",
                    "Link: https://lore.kernel.org/r/" + msgid)
            commits.append(git(self.maint, "rev-parse", "HEAD").strip())
        return commits

    def amend(self, message=None, append=None):
        if append is not None:
            path, line = append
            with open(os.path.join(self.maint, path), "a") as f:
                f.write(line)
            git(self.maint, "add", path)
        args = ["commit", "-q", "--amend"]
        args += ["-m", message] if message else ["--no-edit"]
        git(self.maint, *args)

    def mail_of(self, msgid):
        for m in self.mails:
            if "Message-ID: <%s>" % msgid in m or \
               "Message-Id: <%s>" % msgid in m:
                return m
        sys.exit("no mail " + msgid)


KINDS = (["trailer-link"] * 20 + ["trailer-msgid"] * 14 + ["none"] * 12 +
         ["partial-link"] * 5 + ["partial-none"] * 5 + ["next-only"] * 3 +
         ["cherry-pick"] * 1 + ["edited-reword"] * 3 +
         ["edited-diff"] * 3 + ["edited-prefix"] * 3 + ["edited-both"] * 1)


def plan(g):
    """The chains: which land and how, their versions' dates."""
    rng = g.rng
    chains = []
    kinds = list(KINDS)
    rng.shuffle(kinds)
    # 114 older versions over the 70 landed chains, three of them long
    older = [1] * 70
    for i in range(3):
        older[i] = 7
    while sum(older) < 114:
        older[rng.randrange(3, 70)] += 1
    for i in range(181):
        s = SUBSYS[i % 3]
        w = rng.sample(WORDS, 2)
        landed = i < 70
        kind = kinds[i] if landed else ("incr" if i == 180 else None)
        n = rng.randint(2, 4) if kind and kind.startswith("partial") \
            else rng.randint(1, 3)
        prefix = "" if kind == "edited-prefix" else s + ": "
        subjects = ["%s%s %s part %d of c%d" % (
            prefix, "add" if prefix else "Add", w[0], j + 1, i)
            for j in range(n)]
        nv = 1 + (older[i] if landed else rng.randint(0, 1))
        start = T0 + rng.randint(0, 200) * DAY
        gap = 60 * DAY if landed and i < 3 else 10 * DAY
        chains.append({"id": i, "subsys": s, "kind": kind,
                       "author": g.authors[rng.randrange(40)],
                       "name": "%s: %s %s support (c%d)" % (s, w[0], w[1], i),
                       "subjects": subjects, "n": n,
                       "dates": [start + k * gap for k in range(nv)],
                       # the version before the last one has the same
                       # diff, in about half the chains
                       "same": rng.random() < 0.5,
                       "heuristic": None})
    # the indent heuristic: one series without a trailer, one reworded
    for kind in ("none", "edited-reword"):
        c = next(c for c in chains if c["kind"] == kind)
        c["n"], c["subjects"] = 1, c["subjects"][:1]
        c["heuristic"] = "drivers/%s/h%d.c" % (c["subsys"], c["id"])
    return chains


def contents(ch, v, last):
    """(path, text) of each patch of version @v (@last: the merged one)."""
    out = []
    for j in range(ch["n"]):
        if ch["heuristic"]:
            out.append((ch["heuristic"], heuristic_new() if v == last
                        else heuristic_new().replace("int g", "int g_v%d" % v)))
            continue
        # patch 1 changes between versions, the others do not; in a
        # chain marked "same" the version before the last has its diff
        same = v == last or (ch["same"] and v == last - 1)
        gen = last if j > 0 or same else v
        body = "".join("int c%d_p%d_%d(void) { return %d; }\n" % (
            ch["id"], j, k, k + gen) for k in range(6))
        out.append((patch_path(ch, j), body))
    return out


def patch_path(ch, j):
    return ch["heuristic"] or "drivers/%s/c%d-p%d.c" % (ch["subsys"],
                                                        ch["id"], j)


def land(g, ch, mails):
    """The maintainer applies the mails of @ch's last version."""
    kind = ch["kind"]
    trailer = {"trailer-link": "link", "trailer-msgid": "msgid",
               "partial-link": "link", "next-only": "link"}.get(kind)
    if kind.startswith("partial"):
        mails = mails[:-1]
    if kind == "next-only":
        g.am(mails, trailer, branch="next")
        return
    commits = g.am(mails, trailer)
    if kind == "cherry-pick":
        git(g.maint, "checkout", "-q", "next")
        for c in commits:
            git(g.maint, "cherry-pick", "-x", c,
                env={"GIT_COMMITTER_NAME": "Mai Ntainer",
                     "GIT_COMMITTER_EMAIL": "mai@example.org"})
        git(g.maint, "checkout", "-q", "master")
    elif kind == "edited-reword":
        g.amend(message="%s: reworded by the maintainer (c%d)" % (
            ch["subsys"], ch["id"]))
    elif kind == "edited-diff":
        g.amend(append=(patch_path(ch, ch["n"] - 1), "/* fixed up */\n"))
    elif kind == "edited-prefix":
        subj = git(g.maint, "log", "-1", "--format=%s").strip()
        g.amend(append=(patch_path(ch, ch["n"] - 1), "/* a comment */\n"))
        g.amend(message="%s: %s" % (ch["subsys"], subj))
    elif kind == "edited-both":
        g.amend(append=(patch_path(ch, ch["n"] - 1), "/* fixed up */\n"))
        g.amend(message="%s: reworded and fixed (c%d)" % (
            ch["subsys"], ch["id"]))


def truth_entry(g, ch, v, msgids, landed, extra=None):
    e = {"chain": ch["id"], "version": v, "kind": ch["kind"],
         "msgids": msgids, "landed": landed, "final": False}
    e.update(extra or {})
    g.truth.append(e)
    return e


def generate(out):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    g = Gen(out)
    chains = plan(g)
    g.base([c["heuristic"] for c in chains if c["heuristic"]])
    lookalikes = []
    for ch in sorted(chains, key=lambda c: c["dates"][-1]):
        last = len(ch["dates"])
        final = None
        for k, date in enumerate(ch["dates"]):
            v = k + 1
            ids = g.version(ch, v, date, contents(ch, v, last))
            e = truth_entry(g, ch, v, ids, [])
            if v == last:
                final = (e, ids)
        e, ids = final
        if ch["kind"] is None or ch["kind"] == "incr":
            continue
        e["final"] = True
        mails = [g.mail_of(m) for m in ids]
        e["landed"] = ids[:-1] if ch["kind"].startswith("partial") else ids
        land(g, ch, mails)
        lookalikes.append(ch)
    # look-alikes of landed patches, none of them merged
    plain = [c for c in lookalikes if c["kind"] == "none" and
             not c["heuristic"]]
    for ch in plain[:2]:
        # another person's identical copy, sent a day later
        other = g.authors[(g.authors.index(ch["author"]) + 1) % 40]
        ids = g.version(ch, 1, ch["dates"][-1] + DAY,
                        contents(ch, len(ch["dates"]), len(ch["dates"]))[:1],
                        author=other, name="copy of c%d" % ch["id"],
                        subjects=["%s: the same fix, by another (c%d)" % (
                            ch["subsys"], ch["id"])], what="copy")
        truth_entry(g, ch, 1, ids, [], {"kind": "copy"})
    for ch in plain[2:4]:
        # a v6 identical to the landed patch, in no chain with it
        ids = g.version(ch, 6, ch["dates"][-1] - 3 * DAY,
                        contents(ch, len(ch["dates"]), len(ch["dates"]))[:1],
                        name="an old try at c%d" % ch["id"],
                        subjects=["%s: an old try at c%d" % (ch["subsys"],
                                                             ch["id"])],
                        what="try")
        truth_entry(g, ch, 6, ids, [], {"kind": "unchained-identical"})
    for ch in [c for c in lookalikes if c["kind"] == "trailer-link"][:2]:
        # the same author and subject, 200 days before, another diff,
        # in a series of another name (no chain with the merged one)
        ids = g.version(ch, 1, ch["dates"][0] - 200 * DAY,
                        [("drivers/%s/old%d-%d.c" % (ch["subsys"], ch["id"],
                                                    k),
                          "int old%d_%d;\n" % (ch["id"], k))
                         for k in range(2)],
                        name="%s: an old attempt (c%d)" % (ch["subsys"],
                                                           ch["id"]),
                        subjects=ch["subjects"][:1] + [
                            "%s: something else (old c%d)" % (ch["subsys"],
                                                              ch["id"])],
                        what="old")
        truth_entry(g, ch, 1, ids, [], {"kind": "old-lookalike"})
    git(g.maint, "push", "-q", "origin", "master", "next")
    # the incremental pass: one more series, on "incr"
    ch = chains[180]
    ids = [m for e in g.truth if e["chain"] == 180 and
           e["version"] == len(ch["dates"]) for m in e["msgids"]]
    inc = next(e for e in g.truth if e["chain"] == 180 and
               e["version"] == len(ch["dates"]))
    inc.update({"final": True, "kind": "incr", "landed": ids})
    git(g.maint, "checkout", "-q", "-b", "incr", "master")
    g.am([g.mail_of(m) for m in ids], "link", branch="incr")
    git(g.maint, "push", "-q", "origin", "incr")
    with open(os.path.join(out, "list.mbox"), "w") as f:
        for m in g.mails:
            f.write(m if m.endswith("\n") else m + "\n")
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump({"series": g.truth}, f, indent=1)
    shutil.rmtree(g.src)
    shutil.rmtree(g.maint)


# ---- scoring ----

def pg_json(pg, state, *args):
    r = subprocess.run([pg, "--state", state] + list(args),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def observed(pg, state):
    """msgid of a series' first patch -> (state, {msgid: rule}, hints)"""
    out = {}
    for s in pg_json(pg, state, "series", "list", "--all",
                     "--json")["series"]:
        d = pg_json(pg, state, "series", "show", "--json",
                    s["id"])["series"][0]
        st = d.get("stages", {})
        up = st.get("upstream", {})
        pats = [p["msgid"] for p in d.get("patches", [])]
        if not pats:
            continue
        out[pats[0]] = {
            "id": s["id"],
            "state": st.get("pipeline", {}).get("state"),
            "matched": {k: m.get("rule") for k, m in
                        up.get("patches", {}).items()
                        if m.get("rank", "") != "possibly-merged"},
            "hints": sum(len(v) for v in up.get("possible", {}).values()),
        }
    return out


def score(truth, obs):
    f = {"kinds": {}, "false_patches": 0, "false_series": 0,
         "false_by_rule": {}, "wrongly_merged": 0, "older": 0,
         "older_sbm": 0, "older_of_merged": 0, "hints": {}, "missing": 0,
         "notrailer_by_patch_id": [0, 0], "merged": 0}
    complete_chains = {e["chain"] for e in truth if e["final"] and
                       e["kind"] in KINDS and
                       len(e["landed"]) == len(e["msgids"]) and
                       e["kind"] != "edited-both"}
    for e in truth:
        o = obs.get(e["msgids"][0])
        if o is None:
            f["missing"] += 1
            continue
        if o["hints"]:
            k = e["kind"] if e["final"] or e["kind"] not in KINDS \
                else "older"
            f["hints"][k or "unlanded"] = f["hints"].get(k or "unlanded",
                                                        0) + o["hints"]
        f["merged"] += o["state"] == "merged"
        landed = set(e["landed"])
        false = [r for m, r in o["matched"].items() if m not in landed]
        if false:
            f["false_series"] += 1
            f["false_patches"] += len(false)
            for r in false:
                f["false_by_rule"][r] = f["false_by_rule"].get(r, 0) + 1
        complete = e["final"] and len(landed) == len(e["msgids"])
        if o["state"] == "merged" and not complete:
            f["wrongly_merged"] += 1
        if not e["final"] and e["kind"] in KINDS:
            f["older"] += 1
            f["older_sbm"] += o["state"] == "superseded-by-merge"
            f["older_of_merged"] += e["chain"] in complete_chains
        if not e["final"]:
            continue
        k = e["kind"]
        if k.startswith("partial"):
            ok = o["state"] != "merged" and \
                set(o["matched"]) == landed
        else:
            ok = o["state"] == "merged"
        got, n = f["kinds"].get(k, [0, 0])
        f["kinds"][k] = [got + ok, n + 1]
        if k == "none":
            f["notrailer_by_patch_id"][0] += sum(
                1 for r in o["matched"].values() if r == "patch-id")
            f["notrailer_by_patch_id"][1] += len(e["msgids"])
    return f


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "gen":
        generate(sys.argv[2])
        return
    if len(sys.argv) >= 5 and sys.argv[1] == "score":
        truth = json.load(open(os.path.join(sys.argv[2], "truth.json")))
        obs = observed(sys.argv[4], sys.argv[3])
        f = score(truth["series"], obs)
        opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
        if "--compare" in opts:
            prev = json.load(open(opts["--compare"]))
            f["changed"] = sum(1 for k, o in obs.items()
                               if prev.get(k) != o)
            f["merged_delta"] = f["merged"] - sum(
                1 for o in prev.values() if o["state"] == "merged")
        if "--save" in opts:
            json.dump(obs, open(opts["--save"], "w"))
        print(json.dumps(f, sort_keys=True))
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
