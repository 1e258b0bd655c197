#!/usr/bin/python3
"""A fake Patchwork REST server (Patchwork 3.1.3, API 1.0-1.3) for tests.

It is meant to be exactly as strict as the real server described in
../shared/docs/patchwork.md part 1b, never kinder:

  * /api/ is the latest version (1.3); /api/1.0/ ... /api/1.3/ pin one.
    Any other version, and any path outside the API, is an HTML 404.
  * Django's APPEND_SLASH: a path that only matches with a trailing slash
    gets a 301 to it, whatever the method (DEBUG is off), so a POST
    without the slash is never processed.
  * Authentication (DRF Session, Basic, Token), run on every request, GETs
    included: a bad "Authorization: Token ..." is 403 {"detail":"Invalid
    token."}, never 401, and no WWW-Authenticate header is ever sent.
  * /users/ and /users/ID/ need authentication (anonymous: 403
    "Authentication credentials were not provided.").  /users/ID/ adds
    "settings" (API 1.2+) when ID is the authenticated user, and only then:
    Patchwork has no "who am I" request, this is how a client finds the
    token's user.
  * Checks may be posted only by a user who passes Patch.is_editable: the
    submitter's user, the delegate or a maintainer of the patch's project
    (a superuser is not enough); anyone else gets 403 "You do not have
    permission to perform this action.".  Order: authentication, unknown
    patch (404), permission (403), body parsing and validation (400).
  * Check fields are validated like DRF's serializer: state
    (pending/success/warning/fail exactly, or 0-3), context (a slug of at
    most 255 characters, default "default"), target_url (a URL of at most
    200 characters, or null), description (free text or null); whitespace
    is trimmed; the 400 body maps each field to its list of messages.
  * Lists are bare JSON arrays, 30 per page by default, per_page clamped to
    250, a Link header (next, prev, first, last), 404 "Invalid page." past
    the end; invalid filter values give 200 [] (not 400).  first and last
    always name their page (page=1, page=N), prev on page 2 none.
  * ?msgid= takes the Message-ID without brackets and matches "<value>"
    exactly; on /api/1.0/ and /api/1.1/ it is silently ignored for patches.

  * PATCH /patches/ID/ (Patchwork's PatchworkPermission): anonymous is 403
    "Authentication credentials were not provided.", a user who fails
    Patch.is_editable 403 "You do not have permission to perform this
    action." (after the 404 of an unknown patch).  Writable: state (a
    slug of Patchwork's default states, matched after lowercasing and
    slugifying: "Under Review" and "under-review" are the same; an
    unknown one is 400 {"state": ["Invalid state NAME. Expected one of:
    new, under-review, ..."]}, a non-string one a 500), commit_ref and
    pull_url (at most 255 characters, null allowed), archived (a
    boolean); read-only fields are ignored, as DRF does.  The answer is
    200 with the patch's detail.  A change of state records a
    patch-state-changed event whose actor is the authenticated user.
    The answer to a PATCH lacks "related" (Patchwork 3.1.3 drops it there,
    observed against the real server).
  * GET /events/: newest first (by date, then id), paginated like every
    list, filters project, category, series, patch, cover, actor (1.2+),
    since and before (invalid values give []); each event is {id,
    category, project, date, actor (1.2+; a user or null), payload}, a
    patch-state-changed payload {patch (embedded), previous_state,
    current_state} with states as slugs.  Only patch-state-changed events
    are recorded by the fake (none for creations, checks, delegations).

Endpoints the fake does not implement (bundles, comments, PUT of patches,
PATCH of delegate or related, PATCH and PUT of projects and users,
OPTIONS) answer 501 with a body saying so, so that a test relying on them
fails instead of passing by accident.

Test control, outside the API (never behind --prefix):

  GET  /_fake/checks[?patch=ID]  every check posted, with "patch", the
                                 username in "user", and in "shown" the
                                 name the patch's page shows for it:
                                 "USER/CONTEXT" (the account's name is
                                 the brand: "netdev/build")
  GET  /_fake/events[?patch=ID]  every event, oldest first, with the
                                 actor's username in "actor" (or null)
  GET  /_fake/requests           the request log: method, path, query,
                                 auth scheme ("token", "basic", "none";
                                 never the credentials) and status
  POST /_fake/requests/clear     empties the log
  POST /_fake/seed               adds objects (the seed file's format);
                                 answers the ids given to them
  POST /_fake/reset              back to the seed file, no faults, empty log
  POST /_fake/fault              queues a fault, see below
  DELETE /_fake/fault            removes every fault and leaves down mode
  GET  /_fake/state              everything, as JSON

A fault is {"kind": K, "count": N (default 1), "method": M (optional),
"path": REGEX (optional, searched in the API path after the prefix, with
"?QUERY" appended when there is one)}:

  status      answer "status" (default 500) with an HTML body (and a
              Retry-After header when "retry_after" is given) instead of
              handling the request
  drop        close the connection without answering
  drop_after  handle the request (a POST is stored), then close the
              connection without answering: the client cannot know
  stall       sleep "seconds" (default 5), then handle the request
  down        every API request is dropped until {"kind": "up"} or, with
              "seconds", until that much time has passed (count unused)

Seed file (JSON; every key optional, ids assigned when missing):

  {"users": [{"id", "username", "email", "first_name", "last_name",
              "token", "password", "is_superuser"}],
   "people": [{"id", "name", "email", "user": USERNAME}],
   "projects": [{"id", "linkname", "name", "listid", "listemail",
                 "maintainers": [USERNAME...], "web_url", "scm_url",
                 "webscm_url", "list_archive_url",
                 "list_archive_url_format", "commit_url_format",
                 "subject_match"}],
   "series": [{"id", "project": LINKNAME, "name", "version", "total",
               "date", "submitter": EMAIL}],
   "covers": [{"id", "project", "msgid", "name", "date", "submitter",
               "series": ID}],
   "patches": [{"id", "project", "msgid", "name", "date", "submitter",
                "delegate": USERNAME, "state", "archived", "hash",
                "commit_ref", "pull_url", "series": ID, "number",
                "content", "diff", "headers"}],
   "checks": [{"id", "patch": ID, "user": USERNAME, "state", "context",
               "target_url", "description", "date"}],
   "events": [{"id", "category", "patch": ID, "actor": USERNAME,
               "previous_state", "current_state", "date"}]}

A Message-ID is stored as Patchwork's parser stores it: the first <...>
token (brackets included), else the stripped value, cut to 255 characters.
A submitter email with no person creates one.

Usage: patchwork.py [--seed FILE] [--state FILE] [--host H] [--port N]
                    [--prefix /PATH] [--verbose] [--exit-on-eof]
Prints the port it listens on (one line) to stdout once it accepts
connections.  With --state, the data is loaded from FILE when it exists
(instead of the seed) and written back after every change, so that a
killed and restarted fake keeps what was posted.
"""

import argparse
import base64
import copy
import datetime
import email.parser
import json
import math
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LATEST = "1.3"
VERSIONS = ("1.0", "1.1", "1.2", "1.3")
PAGE_SIZE = 30
MAX_PAGE_SIZE = 250
MAX_BODY = 16 * 1024 * 1024  # what the fake reads of a chunked body
STATES = ("pending", "success", "warning", "fail")
# Patchwork's default patch states (its initial data), as slugs, by ordering
PATCH_STATES = ("new", "under-review", "accepted", "rejected", "rfc",
                "not-applicable", "changes-requested", "awaiting-upstream",
                "superseded", "deferred")
SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")

MSG_NOT_FOUND = "Not found."
MSG_NO_PERMISSION = "You do not have permission to perform this action."
MSG_NOT_AUTHENTICATED = "Authentication credentials were not provided."
MSG_INVALID_TOKEN = "Invalid token."
MSG_INVALID_PAGE = "Invalid page."

HTML_404 = (b"<!doctype html>\n<html lang=\"en\">\n<head>\n"
            b"  <title>Not Found</title>\n</head>\n<body>\n"
            b"  <h1>Not Found</h1><p>The requested resource was not found "
            b"on this server.</p>\n</body>\n</html>\n")
HTML_500 = (b"<!doctype html>\n<html lang=\"en\">\n<head>\n"
            b"  <title>Server Error (500)</title>\n</head>\n<body>\n"
            b"  <h1>Server Error (500)</h1><p></p>\n</body>\n</html>\n")


def html_status(status):
    if status == 500:
        return HTML_500
    reason = {502: "Bad Gateway", 503: "Service Temporarily Unavailable",
              504: "Gateway Time-out", 429: "Too Many Requests"}.get(
                  status, "Error")
    return ("<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n"
            "<center><h1>%d %s</h1></center>\r\n<hr><center>nginx</center>"
            "\r\n</body>\r\n</html>\r\n" % (status, reason, status, reason)
            ).encode()


def now_naive(micro=False):
    d = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if micro:
        return d.strftime("%Y-%m-%dT%H:%M:%S.%f")
    return d.strftime("%Y-%m-%dT%H:%M:%S")


def find_message_id(raw):
    """Patchwork's find_message_id: the first <...> token, else the
    stripped value; cut to 255 characters."""
    raw = str(raw)
    m = re.search(r"<[^>]*>", raw)
    value = m.group(0) if m else raw.strip()
    return value[:255]


class Http(Exception):
    """An HTTP answer raised from deep inside a handler."""

    def __init__(self, status, body, content_type="application/json",
                 headers=None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers or {}


def detail(status, text):
    return Http(status, {"detail": text})


def html404():
    return Http(404, HTML_404, "text/html; charset=utf-8")


# ---- the data ---------------------------------------------------------

class Data:
    KINDS = ("users", "people", "projects", "series", "covers", "patches",
             "checks", "events")

    def __init__(self):
        self.t = {k: {} for k in self.KINDS}

    def next_id(self, kind):
        return max(self.t[kind].keys(), default=0) + 1

    def dump(self):
        return {k: [self.t[k][i] for i in sorted(self.t[k])]
                for k in self.KINDS}

    @classmethod
    def load_dump(cls, d):
        data = cls()
        for k in cls.KINDS:
            for o in d.get(k, []):
                data.t[k][o["id"]] = o
        return data

    # lookups by natural keys
    def user_by_name(self, name):
        if name is None:
            return None
        for u in self.t["users"].values():
            if u["username"] == name:
                return u
        raise ValueError("unknown user %r" % name)

    def project_by_ref(self, ref):
        for p in self.t["projects"].values():
            if str(p["id"]) == str(ref) or p["linkname"] == ref:
                return p
        raise ValueError("unknown project %r" % ref)

    def person_for(self, email_addr, name=None):
        if email_addr is None:
            return None
        for p in self.t["people"].values():
            if p["email"].lower() == email_addr.lower():
                return p
        pid = self.next_id("people")
        p = {"id": pid, "name": name, "email": email_addr, "user": None}
        self.t["people"][pid] = p
        return p

    def add_seed(self, seed):
        """Adds the objects of a seed document; returns their ids."""
        out = {k: [] for k in self.KINDS}
        for u in seed.get("users", []):
            uid = u.get("id") or self.next_id("users")
            self.t["users"][uid] = {
                "id": uid, "username": u["username"],
                "email": u.get("email", u["username"] + "@example.org"),
                "first_name": u.get("first_name", ""),
                "last_name": u.get("last_name", ""),
                "token": u.get("token"), "password": u.get("password"),
                "is_superuser": bool(u.get("is_superuser")),
                "is_active": u.get("is_active", True)}
            out["users"].append(uid)
        for p in seed.get("people", []):
            pid = p.get("id") or self.next_id("people")
            user = self.user_by_name(p.get("user"))
            self.t["people"][pid] = {"id": pid, "name": p.get("name"),
                                     "email": p["email"],
                                     "user": user["id"] if user else None}
            out["people"].append(pid)
        for p in seed.get("projects", []):
            pid = p.get("id") or self.next_id("projects")
            link = p["linkname"]
            self.t["projects"][pid] = {
                "id": pid, "linkname": link, "name": p.get("name", link),
                "listid": p.get("listid", link + ".example.org"),
                "listemail": p.get("listemail", link + "@example.org"),
                "web_url": p.get("web_url", ""),
                "scm_url": p.get("scm_url", ""),
                "webscm_url": p.get("webscm_url", ""),
                "list_archive_url": p.get("list_archive_url", ""),
                "list_archive_url_format": p.get(
                    "list_archive_url_format", ""),
                "commit_url_format": p.get("commit_url_format", ""),
                "subject_match": p.get("subject_match", ""),
                "maintainers": [self.user_by_name(n)["id"]
                                for n in p.get("maintainers", [])]}
            out["projects"].append(pid)
        for s in seed.get("series", []):
            sid = s.get("id") or self.next_id("series")
            sub = self.person_for(s.get("submitter", "submitter@example.org"))
            self.t["series"][sid] = {
                "id": sid, "project": self.project_by_ref(s["project"])["id"],
                "name": s.get("name"), "version": s.get("version", 1),
                "total": s.get("total", 1),
                "date": s.get("date", now_naive()), "submitter": sub["id"]}
            out["series"].append(sid)
        for c in seed.get("covers", []):
            cid = c.get("id") or self.next_id("covers")
            sub = self.person_for(c.get("submitter", "submitter@example.org"))
            self.t["covers"][cid] = {
                "id": cid, "project": self.project_by_ref(c["project"])["id"],
                "msgid": find_message_id(c["msgid"]), "name": c.get("name"),
                "date": c.get("date", now_naive()), "submitter": sub["id"],
                "series": c.get("series"), "content": c.get("content", ""),
                "headers": c.get("headers", {})}
            out["covers"].append(cid)
        for p in seed.get("patches", []):
            pid = p.get("id") or self.next_id("patches")
            proj = self.project_by_ref(p["project"])
            sub = self.person_for(p.get("submitter", "submitter@example.org"))
            delegate = self.user_by_name(p.get("delegate"))
            msgid = find_message_id(p["msgid"])
            for other in self.t["patches"].values():
                if other["project"] == proj["id"] and other["msgid"] == msgid:
                    raise ValueError("duplicate msgid %r in project %s"
                                     % (msgid, proj["linkname"]))
            if p.get("series") is not None and \
                    p["series"] not in self.t["series"]:
                raise ValueError("unknown series %r" % p["series"])
            self.t["patches"][pid] = {
                "id": pid, "project": proj["id"], "msgid": msgid,
                "name": p.get("name", "patch %d" % pid),
                "date": p.get("date", now_naive()), "submitter": sub["id"],
                "delegate": delegate["id"] if delegate else None,
                "state": p.get("state", "new"),
                "archived": bool(p.get("archived", False)),
                "hash": p.get("hash"), "commit_ref": p.get("commit_ref"),
                "pull_url": p.get("pull_url"), "series": p.get("series"),
                "number": p.get("number", 1),
                "content": p.get("content", ""), "diff": p.get("diff", ""),
                "headers": p.get("headers", {})}
            out["patches"].append(pid)
        for c in seed.get("checks", []):
            cid = c.get("id") or self.next_id("checks")
            user = self.user_by_name(c["user"])
            state = c["state"]
            self.t["checks"][cid] = {
                "id": cid, "patch": c["patch"], "user": user["id"],
                "date": c.get("date", now_naive(True)),
                "state": STATES.index(state) if isinstance(state, str)
                else int(state),
                "target_url": c.get("target_url"),
                "context": c.get("context", "default"),
                "description": c.get("description")}
            out["checks"].append(cid)
        for e in seed.get("events", []):
            eid = e.get("id") or self.next_id("events")
            patch = self.t["patches"][e["patch"]]
            actor = self.user_by_name(e.get("actor"))
            self.t["events"][eid] = {
                "id": eid, "category": e.get("category",
                                             "patch-state-changed"),
                "project": patch["project"], "patch": patch["id"],
                "series": patch["series"],
                "actor": actor["id"] if actor else None,
                "previous_state": e.get("previous_state"),
                "current_state": e.get("current_state"),
                "date": e.get("date", now_naive(True))}
            out["events"].append(eid)
        return out


# ---- the server state shared by the handler threads ----------------------

class Fake:
    def __init__(self, seed_path, state_path, prefix, verbose):
        self.lock = threading.Lock()
        self.seed_path = seed_path
        self.state_path = state_path
        self.prefix = prefix
        self.verbose = verbose
        self.faults = []
        self.down_until = None  # None: up; float("inf") or a deadline
        self.log = []
        if state_path and os.path.exists(state_path):
            with open(state_path, encoding="utf-8") as f:
                self.data = Data.load_dump(json.load(f))
        else:
            self.data = self.fresh()
            self.save()

    def fresh(self):
        data = Data()
        if self.seed_path:
            with open(self.seed_path, encoding="utf-8") as f:
                data.add_seed(json.load(f))
        return data

    def save(self):
        """Writes the data to --state (temp file, fsync, rename)."""
        if not self.state_path:
            return
        tmp = self.state_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data.dump(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_path)

    def take_fault(self, method, path):
        """The fault for this request, or None; called under the lock."""
        if self.down_until is not None:
            if time.monotonic() < self.down_until:
                return {"kind": "drop"}
            self.down_until = None
        for f in self.faults:
            if f.get("method") and f["method"].upper() != method:
                continue
            if f.get("path") and not re.search(f["path"], path):
                continue
            f["count"] -= 1
            if f["count"] <= 0:
                self.faults.remove(f)
            return f
        return None


FAKE = None


# ---- rendering ------------------------------------------------------------

class Ctx:
    """One API request: its version, absolute base and authenticated user."""

    def __init__(self, handler, version, user):
        self.h = handler
        self.version = version  # None: unversioned /api/
        self.user = user
        host = handler.headers.get("Host") or "%s:%d" % \
            handler.server.server_address[:2]
        self.origin = "http://" + host
        self.api = self.origin + FAKE.prefix + "/api/" + \
            (version + "/" if version else "")

    def has_version(self, v):
        have = self.version or LATEST
        return tuple(map(int, have.split("."))) >= tuple(map(int, v.split(".")))


def user_json(ctx, u):
    return {"id": u["id"], "url": ctx.api + "users/%d/" % u["id"],
            "username": u["username"], "first_name": u["first_name"],
            "last_name": u["last_name"], "email": u["email"]}


def person_json(ctx, p):
    return {"id": p["id"], "url": ctx.api + "people/%d/" % p["id"],
            "name": p["name"], "email": p["email"]}


def project_json(ctx, p, embedded=False):
    d = {"id": p["id"], "url": ctx.api + "projects/%d/" % p["id"],
         "name": p["name"], "link_name": p["linkname"],
         "list_id": p["listid"], "list_email": p["listemail"],
         "web_url": p["web_url"], "scm_url": p["scm_url"],
         "webscm_url": p["webscm_url"]}
    if ctx.has_version("1.2"):
        d["list_archive_url"] = p["list_archive_url"]
        d["list_archive_url_format"] = p["list_archive_url_format"]
        d["commit_url_format"] = p["commit_url_format"]
    if not embedded:
        users = FAKE.data.t["users"]
        d["maintainers"] = [user_json(ctx, users[i])
                            for i in p["maintainers"]]
        if ctx.has_version("1.1"):
            d["subject_match"] = p["subject_match"]
    return d


def bare_msgid(msgid):
    return msgid[1:-1] if msgid.startswith("<") and msgid.endswith(">") \
        else msgid


def web_url(ctx, kind, obj):
    proj = FAKE.data.t["projects"][obj["project"]]
    return "%s%s/project/%s/%s/%s/" % (
        ctx.origin, FAKE.prefix, proj["linkname"], kind,
        urllib.parse.quote(bare_msgid(obj["msgid"]), safe="@"))


def embedded_msg(ctx, kind, obj):
    """A patch or cover as embedded in a series."""
    path = "patches" if kind == "patch" else "covers"
    d = {"id": obj["id"], "url": ctx.api + "%s/%d/" % (path, obj["id"])}
    if ctx.has_version("1.1"):
        d["web_url"] = web_url(ctx, kind, obj)
    d["msgid"] = obj["msgid"]
    if ctx.has_version("1.2"):
        d["list_archive_url"] = None
    d["date"] = obj["date"]
    d["name"] = obj["name"]
    d["mbox"] = web_url(ctx, kind, obj) + "mbox/"
    return d


def embedded_series(ctx, s):
    d = {"id": s["id"], "url": ctx.api + "series/%d/" % s["id"]}
    if ctx.has_version("1.1"):
        d["web_url"] = "%s%s/project/%s/list/?series=%d" % (
            ctx.origin, FAKE.prefix,
            FAKE.data.t["projects"][s["project"]]["linkname"], s["id"])
    d.update({"date": s["date"], "name": s["name"], "version": s["version"],
              "mbox": "%s%s/series/%d/mbox/" % (ctx.origin, FAKE.prefix,
                                                 s["id"])})
    return d


def combined_check(patch_id):
    newest = {}
    for c in sorted(FAKE.data.t["checks"].values(), key=lambda c: c["id"]):
        if c["patch"] == patch_id:
            newest[(c["user"], c["context"])] = c["state"]
    states = set(newest.values())
    if 3 in states:
        return "fail"
    if 2 in states:
        return "warning"
    if 0 in states or not states:
        return "pending"
    return "success"


def patch_json(ctx, p, detail_view=False):
    data = FAKE.data.t
    d = {"id": p["id"], "url": ctx.api + "patches/%d/" % p["id"]}
    if ctx.has_version("1.1"):
        d["web_url"] = web_url(ctx, "patch", p)
    d["project"] = project_json(ctx, data["projects"][p["project"]], True)
    d["msgid"] = p["msgid"]
    if ctx.has_version("1.2"):
        d["list_archive_url"] = None
    d.update({
        "date": p["date"], "name": p["name"], "commit_ref": p["commit_ref"],
        "pull_url": p["pull_url"], "state": p["state"],
        "archived": p["archived"], "hash": p["hash"],
        "submitter": person_json(ctx, data["people"][p["submitter"]]),
        "delegate": user_json(ctx, data["users"][p["delegate"]])
        if p["delegate"] else None,
        "mbox": web_url(ctx, "patch", p) + "mbox/",
        "series": [embedded_series(ctx, data["series"][p["series"]])]
        if p["series"] else []})
    if ctx.has_version("1.1"):
        d["comments"] = ctx.api + "patches/%d/comments/" % p["id"]
    d["check"] = combined_check(p["id"])
    d["checks"] = ctx.api + "patches/%d/checks/" % p["id"]
    d["tags"] = {}
    if ctx.has_version("1.2"):
        d["related"] = []
    if detail_view:
        d["headers"] = p["headers"]
        d["content"] = p["content"]
        d["diff"] = p["diff"]
        d["prefixes"] = re.findall(r"[^\[\],\s]+",
                                   p["name"].split("]")[0]) \
            if p["name"].startswith("[") else []
    return d


def cover_json(ctx, c, detail_view=False):
    data = FAKE.data.t
    d = embedded_msg(ctx, "cover", c)
    d["project"] = project_json(ctx, data["projects"][c["project"]], True)
    d["submitter"] = person_json(ctx, data["people"][c["submitter"]])
    d["series"] = [embedded_series(ctx, data["series"][c["series"]])] \
        if c["series"] else []
    if ctx.has_version("1.1"):
        d["comments"] = ctx.api + "covers/%d/comments/" % c["id"]
    if detail_view:
        d["headers"] = c["headers"]
        d["content"] = c["content"]
    return d


def series_json(ctx, s):
    data = FAKE.data.t
    patches = sorted((p for p in data["patches"].values()
                      if p["series"] == s["id"]), key=lambda p: p["number"])
    cover = next((c for c in data["covers"].values()
                  if c["series"] == s["id"]), None)
    d = embedded_series(ctx, s)
    d["project"] = project_json(ctx, data["projects"][s["project"]], True)
    d["submitter"] = person_json(ctx, data["people"][s["submitter"]])
    d["total"] = s["total"]
    d["received_total"] = len(patches)
    d["received_all"] = s["total"] <= len(patches)
    d["cover_letter"] = embedded_msg(ctx, "cover", cover) if cover else None
    d["patches"] = [embedded_msg(ctx, "patch", p) for p in patches]
    return d


def check_json(ctx, c):
    return {"id": c["id"],
            "url": ctx.api + "patches/%d/checks/%d/" % (c["patch"], c["id"]),
            "user": user_json(ctx, FAKE.data.t["users"][c["user"]]),
            "date": c["date"], "state": STATES[c["state"]],
            "target_url": c["target_url"], "context": c["context"],
            "description": c["description"]}


# ---- filters, pagination ----------------------------------------------------

class NoMatch(Exception):
    """An invalid filter value: Patchwork answers 200 []."""


def model_choice(values, objects, alternate=None):
    """ModelMultipleChoiceField: each value an id (or, if not an integer,
    the alternate key, case-insensitive); all must exist.  The set of
    matching ids."""
    ids = set()
    for v in values:
        found = None
        try:
            key = int(v)
            found = objects.get(key)
        except ValueError:
            if alternate:
                for o in objects.values():
                    if str(o.get(alternate, "")).lower() == v.lower():
                        found = o
                        break
        if found is None:
            raise NoMatch()
        ids.add(found["id"])
    return ids


def values_of(query, name):
    """The non-empty values of a repeatable filter, Django-form-stripped."""
    return [v.strip() for v in query.get(name, []) if v.strip() != ""]


def last_value(query, name):
    vals = query.get(name)
    return vals[-1] if vals else None


def parse_iso(v):
    try:
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise NoMatch()


def date_filters(query, items):
    for name, keep in (("since", lambda d, x: d >= x),
                       ("before", lambda d, x: d < x)):
        v = last_value(query, name)
        if v is None or v.strip() == "":
            continue
        x = parse_iso(v.strip()).replace(tzinfo=None)
        items = [o for o in items
                 if keep(datetime.datetime.fromisoformat(o["date"]), x)]
    return items


def drf_replace(url, key, val):
    parts = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    if val is None:
        q.pop(key, None)
    else:
        q[key] = [str(val)]
    query = urllib.parse.urlencode(sorted(q.items()), doseq=True)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path,
                                    query, parts.fragment))


def paginate(ctx, query, items):
    """DRF's PageNumberPagination with Patchwork's Link header."""
    size = PAGE_SIZE
    try:
        n = int(query["per_page"][-1])
        if n > 0:
            size = min(n, MAX_PAGE_SIZE)
    except (KeyError, ValueError):
        pass
    pages = max(1, math.ceil(len(items) / size))
    raw = last_value(query, "page")
    if raw is None:
        page = 1
    elif raw == "last":
        page = pages
    else:
        try:
            page = int(raw)
        except ValueError:
            raise detail(404, MSG_INVALID_PAGE)
        if page < 1 or page > pages:
            raise detail(404, MSG_INVALID_PAGE)
    url = ctx.origin + ctx.h.path
    links = []
    if page < pages:
        links.append('<%s>; rel="next"' % drf_replace(url, "page", page + 1))
    if page > 1:
        links.append('<%s>; rel="prev"' % drf_replace(
            url, "page", None if page == 2 else page - 1))
    # Patchwork's LinkHeaderPagination (patchwork/api/base.py) replaces
    # the page in both, 1 included: first is page=1, last page=N even
    # when there is one page (only DRF's prev drops page=1)
    links.append('<%s>; rel="first"' % drf_replace(url, "page", 1))
    links.append('<%s>; rel="last"' % drf_replace(url, "page", pages))
    return items[(page - 1) * size:page * size], {"Link": ", ".join(links)}


# ---- authentication ----------------------------------------------------------

def authenticate(handler):
    """(user or None, scheme) after DRF's Session, Basic and Token
    authentication; raises 403 for bad credentials."""
    header = handler.headers.get("Authorization")
    if header is None:
        return None, "none"
    parts = header.encode("latin-1", "replace").split()
    if not parts:
        return None, "none"
    scheme = parts[0].lower()
    users = FAKE.data.t["users"].values()
    if scheme == b"basic":
        if len(parts) == 1:
            raise detail(403, "Invalid basic header. No credentials "
                         "provided.")
        if len(parts) > 2:
            raise detail(403, "Invalid basic header. Credentials string "
                         "should not contain spaces.")
        try:
            userid, _, password = base64.b64decode(parts[1]).decode(
                "utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            raise detail(403, "Invalid basic header. Credentials not "
                         "correctly base64 encoded.")
        for u in users:
            if u["username"] == userid and u["password"] is not None and \
                    u["password"] == password:
                if not u["is_active"]:
                    raise detail(403, "User inactive or deleted.")
                return u, "basic"
        raise detail(403, "Invalid username/password.")
    if scheme == b"token":
        if len(parts) == 1:
            raise detail(403, "Invalid token header. No credentials "
                         "provided.")
        if len(parts) > 2:
            raise detail(403, "Invalid token header. Token string should "
                         "not contain spaces.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise detail(403, "Invalid token header. Token string should "
                         "not contain invalid characters.")
        for u in users:
            if u["token"] is not None and u["token"] == key:
                if not u["is_active"]:
                    raise detail(403, "User inactive or deleted.")
                return u, "token"
        raise detail(403, MSG_INVALID_TOKEN)
    return None, "other"


def patch_is_editable(patch, user):
    if user is None:
        return False
    data = FAKE.data.t
    sub = data["people"].get(patch["submitter"])
    if sub and sub["user"] == user["id"]:
        return True
    if patch["delegate"] == user["id"]:
        return True
    return user["id"] in data["projects"][patch["project"]]["maintainers"]


# ---- request bodies and check validation -------------------------------------

def parse_body(handler, raw):
    """request.data: a dict (JSON object or form), or another JSON value."""
    ctype = handler.headers.get("Content-Type", "")
    mime = ctype.split(";")[0].strip().lower()
    if raw == b"":
        return {}
    if mime == "application/json":
        try:
            def bad_constant(c):
                raise ValueError("Out of range float values are not JSON "
                                 "compliant: %r" % c)
            return json.loads(raw.decode("utf-8"),
                              parse_constant=bad_constant)
        except (ValueError, UnicodeDecodeError) as e:
            raise detail(400, "JSON parse error - %s" % e)
    if mime == "application/x-www-form-urlencoded":
        q = urllib.parse.parse_qs(raw.decode("utf-8", "replace"),
                                  keep_blank_values=True)
        return {k: v[-1] for k, v in q.items()}
    if mime == "multipart/form-data":
        msg = email.parser.BytesParser().parsebytes(
            b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + raw)
        out = {}
        for part in msg.walk():
            name = part.get_param("name", header="content-disposition")
            if name and not part.is_multipart():
                out[name] = part.get_payload(decode=True).decode(
                    "utf-8", "replace")
        return out
    if mime == "":
        return {}
    raise Http(415, {"detail": "Unsupported media type \"%s\" in request."
                     % ctype})


def drf_string(value, errors, name, allow_null, allow_blank, max_length,
               validators):
    """A DRF CharField's run_validation; the cleaned value or None."""
    if value is None:
        if not allow_null:
            errors[name] = ["This field may not be null."]
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        errors[name] = ["Not a valid string."]
        return None
    value = str(value).strip()
    if value == "":
        if not allow_blank:
            errors[name] = ["This field may not be blank."]
        return ""
    msgs = []
    if max_length is not None and len(value) > max_length:
        msgs.append("Ensure this field has no more than %d characters."
                    % max_length)
    if "\x00" in value:
        msgs.append("Null characters are not allowed.")
    for v in validators:
        m = v(value)
        if m:
            msgs.append(m)
    if msgs:
        errors[name] = msgs
    return value


HOST_RE = re.compile(
    r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]|"
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+"
    r"(?:[a-zA-Z]{2,63}|xn--[a-zA-Z0-9]{1,59})\.?)$")


def url_message(value):
    """Django's URLValidator (schemes http, https, ftp, ftps), in short."""
    bad = "Enter a valid URL."
    if len(value) > 2048 or re.search(r"\s", value):
        return bad
    m = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://([^/?#]*)([/?#].*)?$", value)
    if not m or m.group(1).lower() not in ("http", "https", "ftp", "ftps"):
        return bad
    netloc = m.group(2).rpartition("@")[2]
    hostport = re.match(r"^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$", netloc)
    if not hostport or not HOST_RE.match(hostport.group(1)):
        return bad
    host = hostport.group(1)
    if re.match(r"^\d+(\.\d+){3}$", host) and \
            any(int(x) > 255 for x in host.split(".")):
        return bad
    return None


def slug_message(value):
    if not SLUG_RE.match(value):
        return ("Enter a valid \"slug\" consisting of letters, numbers, "
                "underscores or hyphens.")
    return None


def validate_check(data):
    """CheckSerializer.run_validation: the new check's fields, or a 400."""
    if not isinstance(data, dict):
        # DRF tests "'state' not in data" first: a list or a string without
        # it is a 400, anything else a TypeError, i.e. a 500
        if isinstance(data, (list, str)) and "state" not in data:
            raise Http(400, {"state": ["A check must have a state."]})
        raise Http(500, HTML_500, "text/html; charset=utf-8")
    if "state" not in data or data["state"] == "":
        raise Http(400, {"state": ["A check must have a state."]})
    errors = {}
    state = data["state"]
    if isinstance(state, str) and state in STATES:
        state = STATES.index(state)
    if state is None:
        errors["state"] = ["This field may not be null."]
    elif str(state) in ("0", "1", "2", "3"):
        state = int(str(state))
    else:
        errors["state"] = ["\"%s\" is not a valid choice." % (state,)]
    target_url = None
    if "target_url" in data:
        target_url = drf_string(data["target_url"], errors, "target_url",
                                True, True, 200, [url_message])
    context = "default"
    if "context" in data:
        context = drf_string(data["context"], errors, "context", False,
                             False, 255, [slug_message])
    description = None
    if "description" in data:
        description = drf_string(data["description"], errors, "description",
                                 True, True, None, [])
    if errors:
        raise Http(400, errors)
    return {"state": state, "target_url": target_url, "context": context,
            "description": description}


# ---- the API views ---------------------------------------------------------------

ROUTES = [
    (r"", "index"),
    (r"projects/", "projects"),
    (r"projects/(?P<pk>[^/]+)/", "project"),
    (r"patches/", "patches"),
    (r"patches/(?P<pk>[0-9]+)/", "patch"),
    (r"patches/(?P<pk>[0-9]+)/checks/", "checks"),
    (r"patches/(?P<pk>[0-9]+)/checks/(?P<check>[0-9]+)/", "check"),
    (r"patches/(?P<pk>[0-9]+)/comments/", "unimplemented"),
    (r"covers/", "covers"),
    (r"covers/(?P<pk>[0-9]+)/", "cover"),
    (r"covers/(?P<pk>[0-9]+)/comments/", "unimplemented"),
    (r"series/", "serieslist"),
    (r"series/(?P<pk>[0-9]+)/", "series"),
    (r"people/", "people"),
    (r"people/(?P<pk>[0-9]+)/", "person"),
    (r"users/", "users"),
    (r"users/(?P<pk>[0-9]+)/", "user"),
    (r"events/", "events"),
    (r"bundles/", "unimplemented"),
    (r"bundles/(?P<pk>[0-9]+)/", "unimplemented"),
]
ROUTES = [(re.compile("^" + r + "$"), v) for r, v in ROUTES]
API_RE = re.compile(r"^/api/(?:(?P<version>[0-9]+\.[0-9]+)/)?(?P<rest>.*)$")

ALLOWED = {"checks": ("GET", "POST"), "project": ("GET", "PATCH", "PUT"),
           "patch": ("GET", "PATCH", "PUT"), "user": ("GET", "PATCH", "PUT")}


def resolve(path):
    """(version, view, kwargs) for an API path, None when nothing matches."""
    m = API_RE.match(path)
    if not m:
        return None
    version = m.group("version")
    if version is not None and version not in VERSIONS:
        return None
    for rx, view in ROUTES:
        mm = rx.match(m.group("rest"))
        if mm:
            return version, view, mm.groupdict()
    return None


def not_allowed(method):
    return detail(405, "Method \"%s\" not allowed." % method)


def view_list(ctx, method, query, objects):
    if method not in ("GET", "HEAD"):
        raise not_allowed(method)
    page, headers = paginate(ctx, query, objects)
    return 200, page, headers


def filtered(query, items, spec):
    """Applies filters: spec maps a query name to (table, alternate, field);
    any invalid value gives []."""
    data = FAKE.data.t
    try:
        for name, (table, alternate, field) in spec.items():
            vals = values_of(query, name)
            if not vals:
                continue
            ids = model_choice(vals, data[table], alternate)
            items = [o for o in items if o[field] in ids]
        return date_filters(query, items)
    except NoMatch:
        return []


def handle_api(ctx, method, view, kw, query, raw_body):
    data = FAKE.data.t
    if view == "unimplemented" or method == "OPTIONS" or \
            (method in ("PATCH", "PUT") and view in ("project", "user")) or \
            (method == "PUT" and view == "patch"):
        return 501, {"detail": "not implemented by the fake Patchwork "
                     "server (tests/fakes/patchwork.py)"}, {}
    if view == "index":
        if method not in ("GET", "HEAD"):
            raise not_allowed(method)
        return 200, {k: ctx.api + k + "/" for k in (
            "bundles", "covers", "events", "patches", "people", "projects",
            "series", "users")}, {}
    if view in ALLOWED and method not in ALLOWED[view] + ("HEAD",):
        raise not_allowed(method)
    if view not in ALLOWED and method not in ("GET", "HEAD"):
        raise not_allowed(method)

    if view == "projects":
        items = sorted(data["projects"].values(), key=lambda p: p["id"])
        page, headers = paginate(ctx, query, items)
        return 200, [project_json(ctx, p) for p in page], headers
    if view == "project":
        pk = kw["pk"]
        for p in data["projects"].values():
            if str(p["id"]) == pk or p["linkname"] == pk:
                return 200, project_json(ctx, p), {}
        raise detail(404, MSG_NOT_FOUND)
    if view == "patches":
        items = sorted(data["patches"].values(), key=lambda p: p["id"])
        items = filtered(query, items, {
            "project": ("projects", "linkname", "project"),
            "series": ("series", None, "series"),
            "submitter": ("people", "email", "submitter"),
            "delegate": ("users", "username", "delegate")})
        state = values_of(query, "state")
        if state:
            names = [s.replace("-", " ").lower() for s in state]
            items = [p for p in items if p["state"].replace("-", " ").lower()
                     in names]
        archived = last_value(query, "archived")
        if archived is not None and archived.strip() != "":
            a = archived.strip().lower()
            if a in ("true", "1", "yes"):
                items = [p for p in items if p["archived"]]
            elif a in ("false", "0", "no"):
                items = [p for p in items if not p["archived"]]
        if ctx.has_version("1.2"):
            for name in ("msgid", "hash"):
                v = last_value(query, name)
                if v is None or v.strip() == "":
                    continue
                v = v.strip()
                if name == "msgid":
                    items = [p for p in items if p["msgid"] == "<" + v + ">"]
                else:
                    items = [p for p in items
                             if (p["hash"] or "").lower() == v.lower()]
        page, headers = paginate(ctx, query, items)
        return 200, [patch_json(ctx, p) for p in page], headers
    if view == "events":
        return list_events(ctx, query)
    if view in ("patch", "checks", "check"):
        patch = data["patches"].get(int(kw["pk"]))
        if patch is None:
            raise detail(404, MSG_NOT_FOUND)
        if view == "patch" and method == "PATCH":
            return patch_patch(ctx, patch, raw_body)
        if view == "patch":
            return 200, patch_json(ctx, patch, True), {}
        if view == "check":
            c = data["checks"].get(int(kw["check"]))
            if c is None or c["patch"] != patch["id"]:
                raise detail(404, MSG_NOT_FOUND)
            return 200, check_json(ctx, c), {}
        if method == "POST":
            return post_check(ctx, patch, raw_body)
        items = sorted((c for c in data["checks"].values()
                        if c["patch"] == patch["id"]), key=lambda c: c["id"])
        items = filtered(query, items,
                         {"user": ("users", "username", "user")})
        ctxs = values_of(query, "context")
        if ctxs:
            items = [c for c in items if c["context"] in ctxs]
        states = values_of(query, "state")
        if states:
            if any(s not in ("0", "1", "2", "3") for s in states):
                items = []
            else:
                items = [c for c in items if str(c["state"]) in states]
        page, headers = paginate(ctx, query, items)
        return 200, [check_json(ctx, c) for c in page], headers
    if view == "covers":
        items = sorted(data["covers"].values(), key=lambda c: c["id"])
        items = filtered(query, items, {
            "project": ("projects", "linkname", "project"),
            "series": ("series", None, "series"),
            "submitter": ("people", "email", "submitter")})
        v = last_value(query, "msgid")
        if v is not None and v.strip() != "":
            items = [c for c in items if c["msgid"] == "<" + v.strip() + ">"]
        page, headers = paginate(ctx, query, items)
        return 200, [cover_json(ctx, c) for c in page], headers
    if view == "cover":
        c = data["covers"].get(int(kw["pk"]))
        if c is None:
            raise detail(404, MSG_NOT_FOUND)
        return 200, cover_json(ctx, c, True), {}
    if view == "serieslist":
        items = sorted(data["series"].values(), key=lambda s: s["id"])
        items = filtered(query, items, {
            "project": ("projects", "linkname", "project"),
            "submitter": ("people", "email", "submitter")})
        page, headers = paginate(ctx, query, items)
        return 200, [series_json(ctx, s) for s in page], headers
    if view == "series":
        s = data["series"].get(int(kw["pk"]))
        if s is None:
            raise detail(404, MSG_NOT_FOUND)
        return 200, series_json(ctx, s), {}
    if view == "people":
        items = sorted(data["people"].values(), key=lambda p: p["id"])
        page, headers = paginate(ctx, query, items)
        return 200, [person_json(ctx, p) for p in page], headers
    if view == "person":
        p = data["people"].get(int(kw["pk"]))
        if p is None:
            raise detail(404, MSG_NOT_FOUND)
        return 200, person_json(ctx, p), {}
    if view in ("users", "user"):
        if ctx.user is None:
            raise detail(403, MSG_NOT_AUTHENTICATED)
        if view == "users":
            items = sorted(data["users"].values(), key=lambda u: u["id"])
            page, headers = paginate(ctx, query, items)
            return 200, [user_json(ctx, u) for u in page], headers
        u = data["users"].get(int(kw["pk"]))
        if u is None:
            raise detail(404, MSG_NOT_FOUND)
        d = user_json(ctx, u)
        # UserDetailSerializer: "settings" (API 1.2+) for one's own user
        # only; the one way the API tells a token whose it is
        if ctx.has_version("1.2") and u["id"] == ctx.user["id"]:
            d["settings"] = {"send_email": False, "items_per_page": 100,
                             "show_ids": False}
        return 200, d, {}
    raise html404()


def slugify(value):
    """django.utils.text.slugify, for ASCII."""
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def patch_patch(ctx, patch, raw_body):
    """PatchDetail's partial update (PATCH)."""
    if ctx.user is None:
        raise detail(403, MSG_NOT_AUTHENTICATED)
    if not patch_is_editable(patch, ctx.user):
        raise detail(403, MSG_NO_PERMISSION)
    data = parse_body(ctx.h, raw_body)
    if not isinstance(data, dict):
        raise Http(400, {"non_field_errors": [
            "Invalid data. Expected a dictionary, but got %s."
            % type(data).__name__]})
    if "delegate" in data or "related" in data:
        return 501, {"detail": "PATCH of delegate or related: not "
                     "implemented by the fake Patchwork server "
                     "(tests/fakes/patchwork.py)"}, {}
    errors = {}
    changes = {}
    if "state" in data:
        v = data["state"]
        if v is None:
            errors["state"] = ["This field may not be null."]
        elif not isinstance(v, str):
            # StateField calls data.lower(): an AttributeError, a 500
            raise Http(500, HTML_500, "text/html; charset=utf-8")
        elif slugify(v) not in PATCH_STATES:
            errors["state"] = ["Invalid state %s. Expected one of: %s."
                               % (slugify(v), ", ".join(PATCH_STATES))]
        else:
            changes["state"] = slugify(v)
    for name in ("commit_ref", "pull_url"):
        if name in data:
            v = drf_string(data[name], errors, name, True, True, 255, [])
            if name not in errors:
                changes[name] = v
    if "archived" in data:
        v = data["archived"]
        truthy = (True, 1, "1", "true", "True", "TRUE", "yes", "on", "y")
        falsy = (False, 0, "0", "false", "False", "FALSE", "no", "off", "n")
        if v in truthy and not isinstance(v, float):
            changes["archived"] = True
        elif v in falsy and not isinstance(v, float):
            changes["archived"] = False
        else:
            errors["archived"] = ["Must be a valid boolean."]
    if errors:
        raise Http(400, errors)
    previous = patch["state"]
    patch.update(changes)
    if patch["state"] != previous:
        eid = FAKE.data.next_id("events")
        FAKE.data.t["events"][eid] = {
            "id": eid, "category": "patch-state-changed",
            "project": patch["project"], "patch": patch["id"],
            "series": patch["series"], "actor": ctx.user["id"],
            "previous_state": previous, "current_state": patch["state"],
            "date": now_naive(True)}
    FAKE.save()
    answer = patch_json(ctx, patch, True)
    # observed on Patchwork 3.1.3: the answer to a PATCH (without
    # "related") has no "related" member; a GET of the patch has it
    answer.pop("related", None)
    return 200, answer, {}


def event_json(ctx, e):
    data = FAKE.data.t
    d = {"id": e["id"], "category": e["category"],
         "project": project_json(ctx, data["projects"][e["project"]], True),
         "date": e["date"]}
    if ctx.has_version("1.2"):
        d["actor"] = user_json(ctx, data["users"][e["actor"]]) \
            if e["actor"] is not None else None
    payload = {}
    if e.get("patch") is not None:
        payload["patch"] = embedded_msg(ctx, "patch",
                                        data["patches"][e["patch"]])
    if e["category"] == "patch-state-changed":
        payload["previous_state"] = e["previous_state"]
        payload["current_state"] = e["current_state"]
    d["payload"] = payload
    return d


def list_events(ctx, query):
    data = FAKE.data.t
    items = sorted(data["events"].values(),
                   key=lambda e: (e["date"], e["id"]), reverse=True)
    spec = {"project": ("projects", "linkname", "project"),
            "series": ("series", None, "series"),
            "patch": ("patches", None, "patch"),
            "cover": ("covers", None, "cover")}
    if ctx.has_version("1.2"):
        spec["actor"] = ("users", "username", "actor")
    items = filtered(query, [dict(e, cover=e.get("cover")) for e in items],
                     spec)
    cats = values_of(query, "category")
    if cats:
        items = [e for e in items if e["category"] in cats]
    page, headers = paginate(ctx, query, items)
    return 200, [event_json(ctx, e) for e in page], headers


def post_check(ctx, patch, raw_body):
    if not patch_is_editable(patch, ctx.user):
        raise detail(403, MSG_NO_PERMISSION)
    fields = validate_check(parse_body(ctx.h, raw_body))
    data = FAKE.data.t
    cid = FAKE.data.next_id("checks")
    c = dict(fields, id=cid, patch=patch["id"], user=ctx.user["id"],
             date=now_naive(True))
    data["checks"][cid] = c
    FAKE.save()
    body = check_json(ctx, c)
    return 201, body, {"Location": body["url"]}


# ---- the HTTP layer --------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-patchwork/3.1.3"

    def log_message(self, fmt, *args):
        if FAKE.verbose:
            super().log_message(fmt, *args)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    return out
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def send(self, status, body, content_type="application/json",
             headers=None):
        if isinstance(body, (bytes, bytearray)):
            payload = bytes(body)
        else:
            payload = json.dumps(body, separators=(",", ":"),
                                 ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            if content_type == "application/json":
                self.send_header("Vary", "Accept, Cookie")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # the client gave up (a stall longer than its timeout)
            self.close_connection = True

    def drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def do_any(self):
        split = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(split.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        raw = self.read_body()
        if path.startswith("/_fake/"):
            with FAKE.lock:
                status, body = self.control(path, query, raw)
            self.send(status, body)
            return
        if not path.startswith(FAKE.prefix + "/"):
            self.log_request_entry(path, split.query, "none", 404)
            self.send(404, HTML_404, "text/html; charset=utf-8")
            return
        path = path[len(FAKE.prefix):]
        with FAKE.lock:
            fault = FAKE.take_fault(self.command, path + (
                "?" + split.query if split.query else ""))
        if fault and fault["kind"] == "stall":
            time.sleep(float(fault.get("seconds", 5)))
        elif fault and fault["kind"] == "drop":
            self.log_request_entry(path, split.query, "?", "dropped")
            self.drop()
            return
        elif fault and fault["kind"] == "status":
            status = int(fault.get("status", 500))
            hdrs = {}
            if "retry_after" in fault:
                hdrs["Retry-After"] = str(fault["retry_after"])
            self.log_request_entry(path, split.query, "?", status)
            self.send(status, html_status(status),
                      "text/html; charset=utf-8", hdrs)
            return
        with FAKE.lock:
            status, body, ctype, headers, scheme = self.api(
                path, split.query, query, raw)
            self.log_request_entry(path, split.query, scheme, status)
        if fault and fault["kind"] == "drop_after":
            self.drop()
            return
        self.send(status, body, ctype, headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = \
        do_OPTIONS = do_any

    def api(self, path, raw_query, query, raw_body):
        scheme = "none"
        try:
            found = resolve(path)
            if found is None and not path.endswith("/") and \
                    resolve(path + "/") is not None:
                loc = FAKE.prefix + urllib.parse.quote(path + "/")
                if raw_query:
                    loc += "?" + raw_query
                return 301, b"", "text/html; charset=utf-8", \
                    {"Location": loc}, scheme
            if found is None:
                raise html404()
            version, view, kw = found
            user, scheme = authenticate(self)
            ctx = Ctx(self, version, user)
            status, body, headers = handle_api(ctx, self.command, view, kw,
                                               query, raw_body)
            return status, body, "application/json", headers, scheme
        except Http as e:
            return e.status, e.body, e.content_type, e.headers, scheme

    def log_request_entry(self, path, query, scheme, status):
        if scheme == "?":
            header = self.headers.get("Authorization", "")
            scheme = header.split()[0].lower() if header.split() else "none"
        FAKE.log.append({"method": self.command, "path": path,
                         "query": query, "auth": scheme, "status": status})

    def control(self, path, query, raw):
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError as e:
            return 400, {"error": "bad JSON: %s" % e}
        m = self.command
        if path == "/_fake/checks" and m == "GET":
            out = []
            want = query.get("patch", [None])[-1]
            for c in sorted(FAKE.data.t["checks"].values(),
                            key=lambda c: c["id"]):
                if want is not None and str(c["patch"]) != want:
                    continue
                user = FAKE.data.t["users"][c["user"]]["username"]
                out.append(dict(c, state=STATES[c["state"]], user=user,
                                shown=user + "/" + c["context"]))
            return 200, out
        if path == "/_fake/events" and m == "GET":
            out = []
            want = query.get("patch", [None])[-1]
            for e in sorted(FAKE.data.t["events"].values(),
                            key=lambda e: e["id"]):
                if want is not None and str(e["patch"]) != want:
                    continue
                actor = FAKE.data.t["users"][e["actor"]]["username"] \
                    if e["actor"] is not None else None
                out.append(dict(e, actor=actor))
            return 200, out
        if path == "/_fake/requests" and m == "GET":
            return 200, FAKE.log
        if path == "/_fake/requests/clear" and m == "POST":
            FAKE.log = []
            return 200, {}
        if path == "/_fake/seed" and m == "POST":
            try:
                ids = FAKE.data.add_seed(body)
            except (KeyError, ValueError) as e:
                return 400, {"error": str(e)}
            FAKE.save()
            return 200, ids
        if path == "/_fake/reset" and m == "POST":
            FAKE.data = FAKE.fresh()
            FAKE.faults = []
            FAKE.down_until = None
            FAKE.log = []
            FAKE.save()
            return 200, {}
        if path == "/_fake/fault" and m == "POST":
            kind = body.get("kind")
            if kind == "down":
                secs = body.get("seconds")
                FAKE.down_until = time.monotonic() + float(secs) \
                    if secs is not None else float("inf")
                return 200, {}
            if kind == "up":
                FAKE.down_until = None
                return 200, {}
            if kind not in ("status", "drop", "drop_after", "stall"):
                return 400, {"error": "unknown fault kind %r" % kind}
            f = dict(body)
            f["count"] = int(body.get("count", 1))
            FAKE.faults.append(f)
            return 200, {}
        if path == "/_fake/fault" and m == "DELETE":
            FAKE.faults = []
            FAKE.down_until = None
            return 200, {}
        if path == "/_fake/state" and m == "GET":
            d = FAKE.data.dump()
            return 200, copy.deepcopy(d)
        return 404, {"error": "no such control endpoint"}


def main():
    global FAKE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed")
    ap.add_argument("--state")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--exit-on-eof", action="store_true",
                    help="exit when stdin reaches end of file (when the "
                    "test that started the fake dies)")
    args = ap.parse_args()
    prefix = args.prefix.rstrip("/")
    if prefix and not prefix.startswith("/"):
        ap.error("--prefix must start with /")
    FAKE = Fake(args.seed, args.state, prefix, args.verbose)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(server.server_address[1], flush=True)
    if args.exit_on_eof:
        def watch():
            sys.stdin.buffer.read()
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
