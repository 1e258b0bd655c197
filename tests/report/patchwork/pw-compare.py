#!/usr/bin/python3
"""pw-compare.py - the fake Patchwork against a real one, request by request.

    pw-compare.py seed REAL SEED-OUT       writes a seed for the fake
                                          (tests/fakes/patchwork.py) of
                                          what REAL holds: users (with
                                          the tokens of TOKENS), projects,
                                          series, patches, checks, ids kept
    pw-compare.py compare REAL FAKE        the same requests to both: the
                                          status, the Content-Type, the
                                          Link header's relations and
                                          pages, and the answer's shape
                                          (the keys, the types) or, for
                                          an error, its body

TOKENS (environment): "user=token,user=token"; the first is a maintainer
of the first project, the second maintains nothing.  Prints one line per
difference and exits 1 when there is one.  What the real server shows
only because it runs Django's development settings (DEBUG on) is not
compared: the fake models a production instance.
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request


def tokens():
    return [t.split("=", 1) for t in os.environ["TOKENS"].split(",")]


def req(base, method, path, token=None, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(base + path, data=data, method=method)
    if token:
        r.add_header("Authorization", "Token " + token)
    if data is not None:
        r.add_header("Content-Type", "application/json")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        resp = opener.open(r, timeout=20)
        status, headers, raw = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, e.headers, e.read()
    try:
        j = json.loads(raw) if raw else None
    except ValueError:
        j = "<not JSON>"
    return status, headers, j


def get_all(base, path, token=None):
    out = []
    url = path + ("&" if "?" in path else "?") + "per_page=250"
    while url:
        _, h, j = req(base, "GET", url, token)
        out += j
        m = re.search(r'<([^>]*)>; rel="next"', h.get("Link") or "")
        url = m.group(1)[len(base):] if m else None
    return out


def seed(real, out):
    toks = tokens()
    users = [{"username": u, "token": t, "email": u + "@example.org"} for u, t in toks]
    ci_tok = toks[0][1]
    projects = []
    for p in get_all(real, "/api/1.3/projects/"):
        maint = [m["username"] for m in p["maintainers"]]
        projects.append({"id": p["id"], "linkname": p["link_name"], "name": p["name"],
                         "listid": p["list_id"], "listemail": p["list_email"],
                         "maintainers": maint})
    series, patches, checks = [], [], []
    for s in get_all(real, "/api/1.3/series/"):
        series.append({"id": s["id"], "project": s["project"]["link_name"], "name": s["name"],
                       "version": s["version"], "total": s["total"], "date": s["date"],
                       "submitter": s["submitter"]["email"]})
    people = {}
    covers = []
    for c in get_all(real, "/api/1.3/covers/"):
        covers.append({"id": c["id"], "project": c["project"]["link_name"], "msgid": c["msgid"],
                       "name": c["name"], "date": c["date"], "submitter": c["submitter"]["email"],
                       "series": c["series"][0]["id"] if c["series"] else None})
    for p in get_all(real, "/api/1.3/patches/") + get_all(real, "/api/1.3/covers/"):
        people[p["submitter"]["email"]] = {"id": p["submitter"]["id"],
                                           "name": p["submitter"]["name"],
                                           "email": p["submitter"]["email"]}
    for p in get_all(real, "/api/1.3/patches/"):
        _, _, full = req(real, "GET", "/api/1.3/patches/%d/" % p["id"])
        patches.append({"id": p["id"], "project": p["project"]["link_name"], "msgid": p["msgid"],
                        "name": p["name"], "date": p["date"], "submitter": p["submitter"]["email"],
                        "state": p["state"], "series": p["series"][0]["id"] if p["series"] else None,
                        "number": None, "hash": full["hash"], "content": full["content"],
                        "diff": full["diff"], "headers": full["headers"]})
        for c in get_all(real, "/api/1.3/patches/%d/checks/" % p["id"]):
            checks.append({"id": c["id"], "patch": p["id"], "user": c["user"]["username"],
                           "state": c["state"], "context": c["context"],
                           "target_url": c["target_url"], "description": c["description"],
                           "date": c["date"]})
    events = []
    for e in get_all(real, "/api/1.3/events/?category=patch-state-changed"):
        events.append({"id": e["id"], "category": e["category"],
                       "patch": e["payload"]["patch"]["id"],
                       "actor": e["actor"]["username"] if e["actor"] else None,
                       "previous_state": e["payload"]["previous_state"],
                       "current_state": e["payload"]["current_state"], "date": e["date"]})
    # the patches' numbers, as the series list them
    for s in get_all(real, "/api/1.3/series/"):
        for n, sp in enumerate(s["patches"], 1):
            for p in patches:
                if p["id"] == sp["id"]:
                    p["number"] = n
    json.dump({"users": users, "people": list(people.values()), "projects": projects, "series": series, "covers": covers,
               "patches": patches, "checks": checks, "events": events}, open(out, "w"), indent=1)
    del ci_tok


def shape(j):
    if isinstance(j, dict):
        return {k: shape(v) for k, v in sorted(j.items())}
    if isinstance(j, list):
        # a list's shape: its first element's (lists of objects), or []
        return [shape(j[0])] if j else []
    if j is None:
        return None
    return type(j).__name__


def shape_diff(a, b, path=""):
    """The paths where two shapes differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append("%s.%s only in the fake" % (path, k))
            elif k not in b:
                out.append("%s.%s missing in the fake" % (path, k))
            else:
                out += shape_diff(a[k], b[k], path + "." + k)
        return out
    if isinstance(a, list) and isinstance(b, list) and a and b:
        return shape_diff(a[0], b[0], path + "[]")
    return [] if a == b else ["%s: real %s, fake %s" % (path or ".", json.dumps(a)[:80],
                                                        json.dumps(b)[:80])]


def links(h, base):
    out = {}
    for part in (h.get("Link") or "").split(","):
        m = re.search(r'<([^>]*)>; rel="([a-z]+)"', part)
        if m:
            q = dict(kv.split("=", 1) for kv in m.group(1).split("?", 1)[1].split("&")) \
                if "?" in m.group(1) else {}
            out[m.group(2)] = (m.group(1).startswith(base), q.get("page"), q.get("per_page"))
    return out


def compare(real, fake):
    (ci, tok), (out, tok_out) = tokens()[:2]
    patches = get_all(real, "/api/1.3/patches/")
    pid = patches[0]["id"]
    msgid = patches[0]["msgid"][1:-1]
    project = patches[0]["project"]["link_name"]
    sid = patches[0]["series"][0]["id"]
    probes = [
        ("GET", "/api/1.3/", None, None),
        ("GET", "/api/1.3/projects/%s/" % project, None, None),
        ("GET", "/api/1.3/projects/nope/", None, None),
        ("GET", "/api/1.3/patches/?project=%s&per_page=1" % project, None, None),
        ("GET", "/api/1.3/patches/?project=%s&per_page=1&page=2" % project, None, None),
        ("GET", "/api/1.3/patches/?project=%s&per_page=1&page=999" % project, None, None),
        ("GET", "/api/1.3/patches/?project=%s&per_page=1000" % project, None, None),
        ("GET", "/api/1.3/patches/?project=%s&msgid=%s" % (project, urllib.request.quote(msgid, safe="")), None, None),
        ("GET", "/api/1.3/patches/?project=nope", None, None),
        ("GET", "/api/1.3/patches/%d/" % pid, None, None),
        ("GET", "/api/1.3/patches/999999/", None, None),
        ("GET", "/api/1.3/series/%d/" % sid, None, None),
        ("GET", "/api/1.3/patches/%d/checks/" % pid, None, None),
        ("GET", "/api/1.3/patches/%d/checks/?per_page=1" % pid, None, None),
        ("GET", "/api/1.3/users/", None, None),
        ("GET", "/api/1.3/users/", tok, None),
        ("GET", "/api/1.3/users/", "0" * 40, None),
        ("POST", "/api/1.3/patches/%d/checks/" % pid, None, {"state": "success", "context": "cmp"}),
        ("POST", "/api/1.3/patches/%d/checks/" % pid, tok_out, {"state": "success", "context": "cmp"}),
        ("POST", "/api/1.3/patches/%d/checks/" % pid, tok, {"state": "passed", "context": "a/b"}),
        ("POST", "/api/1.3/patches/%d/checks/" % pid, tok, {"state": "success", "context": "cmp",
                                                             "target_url": "http://jenkins:8080/x"}),
        ("POST", "/api/1.3/patches/999999/checks/", tok, {"state": "success", "context": "cmp"}),
        ("POST", "/api/1.3/patches/%d/checks/" % pid, tok, {"state": "success", "context": "cmp",
                                                             "target_url": "http://127.0.0.1/x",
                                                             "description": "  d  "}),
        ("GET", "/api/1.3/events/?patch=%d&category=patch-state-changed" % pid, None, None),
        ("PATCH", "/api/1.3/patches/%d/" % pid, tok_out, {"state": "accepted"}),
        ("PATCH", "/api/1.3/patches/%d/" % pid, tok, {"state": "nonsense"}),
        ("PATCH", "/api/1.3/patches/%d/" % pid, tok, {"state": "under-review", "commit_ref": None}),
        ("GET", "/api/1.3/events/?patch=%d&category=patch-state-changed" % pid, None, None),
    ]
    diffs = 0
    for method, path, token, body in probes:
        a = req(real, method, path, token, body)
        b = req(fake, method, path, token, body)
        what = "%s %s%s" % (method, path, " (token)" if token else "")
        if a[0] != b[0]:
            print("%s: status real %s, fake %s" % (what, a[0], b[0]))
            diffs += 1
            continue
        ca = (a[1].get("Content-Type") or "").split(";")[0]
        cb = (b[1].get("Content-Type") or "").split(";")[0]
        if ca != cb:
            print("%s: Content-Type real %s, fake %s" % (what, ca, cb))
            diffs += 1
        la, lb = links(a[1], real), links(b[1], fake)
        if la != lb:
            print("%s: Link real %s, fake %s" % (what, la, lb))
            diffs += 1
        if a[0] >= 400:
            if a[2] != b[2]:
                print("%s: body real %s, fake %s" % (what, json.dumps(a[2])[:300],
                                                    json.dumps(b[2])[:300]))
                diffs += 1
        else:
            for d in shape_diff(shape(a[2]), shape(b[2])):
                print("%s: %s" % (what, d))
                diffs += 1
    print("%d requests, %d differences" % (len(probes), diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        seed(sys.argv[2], sys.argv[3])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
