#!/usr/bin/python3
"""jenkins.py - a fake Jenkins server for patchgate's tests.

No real Jenkins can be installed on a Debian machine, so the CI backend is
tested against this small server, which behaves like the real one as
../shared/docs/jenkins-smtp-sandbox.md (section 1) describes it: it must
never be kinder than Jenkins.  What it models:

  * authentication: HTTP basic with user + API token (no crumb needed, an
    extra crumb is ignored) or user + password (then every POST needs a
    crumb from /crumbIssuer bound to the user and to the session named by
    the JSESSIONID.<8 hex> cookie, else 403 "No valid crumb was included in
    the request"); bad credentials give 401 with WWW-Authenticate, anonymous
    users 403, a user without Job/Build 403, a job the user cannot see 404;
  * /crumbIssuer/api/json and /crumbIssuer/api/xml?xpath=concat(...), or
    404 when the crumb issuer is off (then no POST needs a crumb);
  * jobs in nested folders (/job/a/job/b/...), each with declared
    parameters and defaults; unknown parameters are dropped, a name given
    twice is a 500, buildWithParameters on a job without parameters is a
    400, a disabled job a 409, a GET on a trigger a 405 (Allow: POST) except
    GET /build of a parameterized job, which shows the form (200);
  * the queue: waiting for the quiet period (`delay` parsed as Jenkins does:
    "10sec"/"10secs" seconds, a bare number milliseconds), blocked (the
    job's previous build is still running and concurrent builds are off),
    buildable (no free executor, or the job's label is offline: then stuck),
    left with "executable": null for a moment, then left with {number,url};
    left items expire (404) `left_expiry` seconds after leaving (300, as
    in Jenkins, unless configured otherwise) while their builds stay, with
    "queueId" and the parameters in the build's JSON; identical
    parameter sets merge into the queued item (303 on buildWithParameters,
    201 on build) keeping the earlier due time; a refusing job answers 302
    to its page; POST /queue/cancelItem?id=N gives 204, 404 or 422;
  * builds numbered per job: building -> post-production (building false,
    inProgress true, result set) -> completed; all five results, optionally
    set mid-build; POST .../stop always answers 302 and the build ends
    ABORTED; testReport (404 until recorded), consoleText, logText/
    progressiveText (X-Text-Size counts raw bytes including hidden console
    notes, so it differs from what is sent; a start past the end restarts
    from 0; X-More-Data while the build runs), artifact/...;
  * tree= pruning (malformed: 500) and `_class` always kept; a tree
    reaches into a job's builds as Jenkins' does (builds[number,queueId,
    actions[parameters[name,value]]]{0,100});
  * X-Jenkins on every response, 503 while "starting up".

Its clock (every quiet period, queue state, build phase, expiry and
timestamp) runs `speed` times as fast as the real one, and POST
/fake/advance moves it on at once: a test makes the 5 minutes after which
Jenkins forgets a left queue item pass without waiting for them.

Test control (not Jenkins; no authentication) lives under /fake/:
  POST /fake/config   {"jobs": {...}, "users": {...}, settings...}: merged
  POST /fake/inject   {"mode": "status"|"drop"|"slow"|"lose", "count": N,
                       "status": 503, "seconds": 2, "match": "/queue/",
                       "method": "POST"}: the next N matching requests fail;
                       "lose" carries the request out (a trigger is
                       queued) and then drops the connection unanswered;
                       {"clear": true} drops every injection left
  POST /fake/restart  {"down": seconds, "queue": false}: left items and
                       sessions are lost, the session cookie gets a new
                       name, 503 meanwhile; with "queue": true the queued
                       items too (a crash before queue.xml was saved)
  POST /fake/advance  {"seconds": S}: the fake's clock jumps S seconds on
  GET  /fake/state    the queue, the builds and a log of the requests

Usage: jenkins.py [--config FILE] [--prefix /jenkins] [--port 0] [--down S]
The chosen port is printed on stdout as one line, then the server runs until
it is killed or its stdin closes (with --exit-on-eof).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JENKINS_VERSION = "2.426.3"
CRUMB_FIELD = "Jenkins-Crumb"
PERMS = ("read", "build", "cancel")


class Clock:
    """The fake's time: the real monotonic clock, `speed` times as fast,
    plus whatever /fake/advance added."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.speed = 1.0
        self.skew = 0.0

    def mono(self):
        return self.t0 + (time.monotonic() - self.t0) * self.speed + \
            self.skew

    def wall_ms(self):
        return int((time.time() + self.mono() - time.monotonic()) * 1000)

    def set_speed(self, speed):
        now = self.mono()
        self.t0 = time.monotonic()
        self.skew = now - self.t0
        self.speed = float(speed)

    def advance(self, seconds):
        self.skew += float(seconds)


CLOCK = Clock()


def now_ms():
    return CLOCK.wall_ms()


class TreeError(Exception):
    pass


def parse_tree(spec):
    """Parses tree= ("a,b[c,d]{0,10},e") into {name: (subtree, range)}."""
    pos = 0

    def parse_list():
        nonlocal pos
        out = {}
        while True:
            m = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*").match(spec, pos)
            if not m:
                raise TreeError("bad tree at %d" % pos)
            name = m.group(0)
            pos = m.end()
            sub = None
            rng = None
            if pos < len(spec) and spec[pos] == "[":
                pos += 1
                sub = parse_list()
                if pos >= len(spec) or spec[pos] != "]":
                    raise TreeError("unclosed [")
                pos += 1
            if pos < len(spec) and spec[pos] == "{":
                m2 = re.compile(r"\{(\d*)(?:,(\d*))?\}").match(spec, pos)
                if not m2:
                    raise TreeError("bad range")
                a = int(m2.group(1)) if m2.group(1) else 0
                if m2.group(2) is None:
                    b = a + 1 if m2.group(1) else None
                else:
                    b = int(m2.group(2)) if m2.group(2) else None
                rng = (a, b)
                pos = m2.end()
            out[name] = (sub, rng)
            if pos < len(spec) and spec[pos] == ",":
                pos += 1
                continue
            return out

    tree = parse_list()
    if pos != len(spec):
        raise TreeError("trailing garbage in tree")
    return tree


def prune(value, tree):
    if isinstance(value, list):
        return [prune(v, tree) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    if "_class" in value:
        out["_class"] = value["_class"]
    for name, (sub, rng) in tree.items():
        if name not in value:
            continue
        v = value[name]
        if rng is not None and isinstance(v, list):
            a, b = rng
            v = v[a:b]
        out[name] = prune(v, sub) if sub is not None else v
    return out


def strip_notes(raw):
    """What Jenkins' plain-text console writers do: drop hidden notes."""
    return re.sub(rb"\x1b\[8mha:[^\x1b]*\x1b\[0m", b"", raw)


def folder_url(path):
    return "".join("job/%s/" % urllib.parse.quote(seg, safe="")
                   for seg in path.split("/"))


DEFAULT_JOB = {
    "params": None,        # {name: default} in declaration order, or None
    "quiet": None,         # seconds; None: the global quiet period
    "duration": 0.3,       # seconds of "building"
    "post": 0.1,           # seconds of post-production
    "result": "SUCCESS",
    "result_early": False,  # result set while building is still true
    "concurrent": False,
    "disabled": False,
    "refuse": False,       # a queue decision handler vetoes: 302
    "label_offline": False,
    "visible_to": None,    # None: everyone with read; else [user, ...]
    "tests": None,         # {"pass": P, "fail": F, "skip": S}
    "console": "Building on the built-in node\n+ make check\n",
    "console_filler": 0,   # extra lines of output, to make logs long
    "artifacts": {},
    # a real job: argv run when the build starts, with the build's
    # parameters in its environment; its exit status decides the result
    # (0: SUCCESS, else FAILURE) and its output is the console
    "command": None,
}


class Job:
    def __init__(self, path, cfg):
        self.path = path
        self.cfg = dict(DEFAULT_JOB)
        self.cfg.update(cfg)
        self.next_number = 1
        self.builds = {}

    @property
    def name(self):
        return self.path.split("/")[-1]


class Item:
    def __init__(self, qid, job, params, due, user):
        self.id = qid
        self.job = job
        self.params = params       # list of (name, value) or None
        self.due = due             # monotonic
        self.in_queue_since = now_ms()
        self.user = user
        self.state = "waiting"     # waiting|blocked|buildable|left
        self.cancelled = False
        self.left_at = None
        self.start_at = None
        self.build = None
        self.causes = 1


class Build:
    def __init__(self, job, number, item):
        self.job = job
        self.number = number
        self.item = item
        self.start = CLOCK.mono()
        self.timestamp = now_ms()
        self.phase = "building"    # building|post|done
        self.result = None
        self.aborted = False
        self.post_end = None
        self.duration_ms = 0
        self.raw = b""
        self.tests_recorded = False


class State:
    def __init__(self):
        self.lock = threading.RLock()
        self.jobs = {}
        self.users = {}
        self.anonymous = []
        self.executors = 2
        self.quiet = 5.0
        self.left_expiry = 300.0
        self.start_delay = 0.2
        self.stuck_after = 86400.0
        self.crumb_issuer = True
        self.location_host = None
        self.root_url = None
        self.next_qid = 1
        self.items = {}
        self.cookie_name = "JSESSIONID." + secrets.token_hex(4)
        self.sessions = {}
        self.salt = secrets.token_hex(16)
        self.down_until = 0.0
        self.injections = []
        self.log = []
        self.busy = 0

    def configure(self, cfg):
        for key in ("executors", "quiet", "left_expiry", "start_delay",
                    "stuck_after", "crumb_issuer", "location_host",
                    "root_url", "anonymous"):
            if key in cfg:
                setattr(self, key, cfg[key])
        if "speed" in cfg:
            CLOCK.set_speed(cfg["speed"])
        for name, u in cfg.get("users", {}).items():
            u = dict(u)
            u.setdefault("permissions", list(PERMS))
            self.users[name] = u
        for path, j in cfg.get("jobs", {}).items():
            if path in self.jobs:
                self.jobs[path].cfg.update(j)
            else:
                self.jobs[path] = Job(path, j)

    # -- the clock ------------------------------------------------------
    def tick(self):
        now = CLOCK.mono()
        for job in self.jobs.values():
            for b in job.builds.values():
                self.advance_build(b, now)
        for item in sorted(self.items.values(), key=lambda i: i.id):
            if item.state == "left":
                if (item.build is None and not item.cancelled
                        and now >= item.start_at):
                    self.start_build(item)
                continue
            if item.state == "waiting" and now >= item.due:
                item.state = "buildable"
            if item.state in ("blocked", "buildable"):
                if self.job_running(item.job) and \
                        not item.job.cfg["concurrent"]:
                    item.state = "blocked"
                    continue
                item.state = "buildable"
                if item.job.cfg["label_offline"]:
                    continue
                if self.busy < self.executors:
                    self.busy += 1
                    item.state = "left"
                    item.left_at = now
                    item.start_at = now + self.start_delay
                    if self.start_delay <= 0:
                        self.start_build(item)
        for qid in [i.id for i in self.items.values()
                    if i.state == "left"
                    and now >= i.left_at + self.left_expiry]:
            del self.items[qid]

    def job_running(self, job):
        if any(b.phase != "done" for b in job.builds.values()):
            return True
        return any(i.job is job and i.state == "left" and i.build is None
                   and not i.cancelled for i in self.items.values())

    def start_build(self, item):
        job = item.job
        b = Build(job, job.next_number, item)
        job.next_number += 1
        job.builds[b.number] = b
        item.build = b
        b.raw = self.console_start(b)
        b.proc = None
        if job.cfg["command"]:
            import subprocess
            import tempfile
            env = dict(os.environ)
            env.update({k: v for k, v in (item.params or [])})
            b.out = tempfile.TemporaryFile()
            b.proc = subprocess.Popen(job.cfg["command"], env=env,
                                      stdout=b.out, stderr=subprocess.STDOUT)

    def console_start(self, b):
        note = b"\x1b[8mha:////" + base64.b64encode(os.urandom(48)) + \
            b"\x1b[0m"
        who = b.item.user or "anonymous"
        return (note + ("Started by user %s\n" % who).encode() +
                b.job.cfg["console"].encode())

    def advance_build(self, b, now):
        cfg = b.job.cfg
        if b.phase == "building" and getattr(b, "proc", None) is not None:
            if b.aborted:
                b.proc.kill()
            if b.proc.poll() is None:
                return
            b.out.seek(0)
            b.raw += b.out.read()
            b.out.close()
            if not b.aborted:
                b.result = "SUCCESS" if b.proc.returncode == 0 else "FAILURE"
            b.start = min(b.start, now - cfg["duration"])
        if b.phase == "building":
            if b.aborted:
                b.result = "ABORTED"
            elif cfg["result_early"] and now >= b.start + cfg["duration"] / 2:
                b.result = cfg["result"]
            if b.aborted or now >= b.start + cfg["duration"]:
                if b.result is None:
                    b.result = cfg["result"]
                filler = "".join("line %06d of the build's output\n" % n
                                 for n in range(cfg["console_filler"]))
                note = b"\x1b[8mha:////" + \
                    base64.b64encode(os.urandom(60)) + b"\x1b[0m"
                b.raw += filler.encode()
                if b.aborted:
                    b.raw += b"Build was aborted\n"
                b.phase = "post"
                b.post_end = now + cfg["post"]
                b.tests_recorded = cfg["tests"] is not None
                b.raw += note + b"Recording test results\n"
        if b.phase == "post" and now >= b.post_end:
            b.phase = "done"
            b.duration_ms = int((now - b.start) * 1000)
            b.raw += ("Finished: %s\n" % b.result).encode()
            self.busy -= 1


STATE = State()


def crumb_for(user, session):
    return hashlib.sha256(
        ("%s%s;%s" % (STATE.salt, user or "anonymous", session))
        .encode()).hexdigest()


class Reply(Exception):
    def __init__(self, status, body=b"", ctype="text/html;charset=utf-8",
                 headers=None):
        super().__init__(status)
        self.status = status
        self.body = body if isinstance(body, bytes) else body.encode()
        self.ctype = ctype
        self.headers = headers or []


def error_page(status, message):
    """Jenkins' HTML error pages carry the message in the body."""
    body = ("<html><head><title>Error %d %s</title></head><body>"
            "<h2>HTTP ERROR %d %s</h2></body></html>\n"
            % (status, message, status, message))
    return Reply(status, body)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "Jetty(10.0.18)"
    sys_version = ""
    prefix = ""

    def log_message(self, fmt, *args):
        pass

    # -- plumbing -------------------------------------------------------
    def send(self, rep):
        self.send_response(rep.status)
        self.send_header("X-Jenkins", JENKINS_VERSION)
        self.send_header("Content-Type", rep.ctype)
        self.send_header("Content-Length", str(len(rep.body)))
        for k, v in rep.headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(rep.body)

    def json_reply(self, obj, query):
        tree = query.get("tree")
        if tree is not None:
            try:
                obj = prune(obj, parse_tree(tree[0]))
            except TreeError as e:
                raise error_page(500, "Malformed tree expression: %s" % e)
        return Reply(200, json.dumps(obj), "application/json;charset=utf-8")

    def root(self):
        if STATE.root_url:
            return STATE.root_url.rstrip("/") + "/"
        host = self.headers.get("Host", "127.0.0.1")
        return "http://%s%s/" % (host, self.prefix)

    def request_root(self):
        """The root built from the request, as Location headers are."""
        host = STATE.location_host or self.headers.get("Host", "127.0.0.1")
        return "http://%s%s/" % (host, self.prefix)

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length > 0 else b""
        if path.startswith("/fake/"):
            try:
                rep = self.control(path, self.body)
            except Reply as r:
                rep = r
            self.send(rep)
            return
        injected = self.inject(url.path)
        if injected == "drop":
            with STATE.lock:
                STATE.log.append({"method": self.command, "path": url.path,
                                  "query": url.query, "status": None,
                                  "injected": True})
            self.close_connection = True
            return
        entry = {"method": self.command, "path": url.path,
                 "query": url.query}
        try:
            rep = self.dispatch(url, entry)
        except Reply as r:
            rep = r
        entry["status"] = rep.status
        if injected == "lose":
            # carried out (a trigger queued), but the reply never arrives
            entry["lost"] = True
        with STATE.lock:
            STATE.log.append(entry)
        if injected == "lose":
            self.close_connection = True
            return
        self.send(rep)

    def inject(self, path):
        rule = None
        with STATE.lock:
            for r in STATE.injections:
                if r["count"] <= 0:
                    continue
                if r.get("match") and r["match"] not in path:
                    continue
                if r.get("method") and r["method"] != self.command:
                    continue
                r["count"] -= 1
                rule = dict(r)
                break
            STATE.injections = [r for r in STATE.injections if r["count"] > 0]
        if rule is None:
            return None
        if rule["mode"] in ("drop", "lose"):
            return rule["mode"]
        if rule["mode"] == "slow":
            time.sleep(rule.get("seconds", 1.0))
            return None
        status = rule.get("status", 500)
        with STATE.lock:
            STATE.log.append({"method": self.command, "path": path,
                              "query": urllib.parse.urlsplit(self.path).query,
                              "status": status, "injected": True})
        self.send(error_page(status, "Injected failure"))
        raise _Handled()

    def control(self, path, body):
        data = json.loads(body or b"{}")
        with STATE.lock:
            if path == "/fake/config":
                STATE.configure(data)
            elif path == "/fake/inject":
                if data.get("clear"):
                    STATE.injections = []
                else:
                    data.setdefault("count", 1)
                    STATE.injections.append(data)
            elif path == "/fake/advance":
                CLOCK.advance(data.get("seconds", 0))
                STATE.tick()
            elif path == "/fake/restart":
                lose_queue = data.get("queue", False)
                STATE.items = {k: v for k, v in STATE.items.items()
                               if v.state != "left" and not lose_queue}
                STATE.sessions = {}
                STATE.cookie_name = "JSESSIONID." + secrets.token_hex(4)
                STATE.down_until = time.monotonic() + data.get("down", 0)
            elif path == "/fake/state":
                STATE.tick()
                return Reply(200, json.dumps(self.dump()),
                             "application/json")
            else:
                raise Reply(404, "no such control")
        return Reply(200, "{}", "application/json")

    def dump(self):
        return {
            "items": [{"id": i.id, "job": i.job.path, "state": i.state,
                       "cancelled": i.cancelled, "causes": i.causes,
                       "params": dict(i.params or []),
                       "build": i.build.number if i.build else None}
                      for i in STATE.items.values()],
            "builds": [{"job": j.path, "number": b.number,
                        "phase": b.phase, "result": b.result,
                        "params": dict(b.item.params or [])}
                       for j in STATE.jobs.values()
                       for b in j.builds.values()],
            "log": STATE.log,
            "cookie": STATE.cookie_name,
            "injections": STATE.injections,
        }

    # -- authentication -------------------------------------------------
    def session_id(self):
        cookies = self.headers.get_all("Cookie") or []
        for line in cookies:
            for part in line.split(";"):
                k, _, v = part.strip().partition("=")
                if k == STATE.cookie_name and v in STATE.sessions:
                    return v
        return None

    def authenticate(self, entry):
        """Returns (user, kind); kind is "token", "password" or None."""
        h = self.headers.get("Authorization")
        if not h:
            entry["auth"] = "anonymous"
            return None, None
        try:
            scheme, _, b64 = h.partition(" ")
            if scheme.lower() != "basic":
                raise ValueError
            user, _, secret = base64.b64decode(b64).decode().partition(":")
        except Exception:
            raise self.unauthorized()
        u = STATE.users.get(user)
        if u is None:
            raise self.unauthorized()
        if u.get("token") and secrets.compare_digest(secret, u["token"]):
            entry["auth"] = "token"
            entry["user"] = user
            return user, "token"
        if u.get("password") and secrets.compare_digest(secret,
                                                         u["password"]):
            entry["auth"] = "password"
            entry["user"] = user
            return user, "password"
        raise self.unauthorized()

    def unauthorized(self):
        return Reply(401, "<html><body>Unauthorized</body></html>",
                     headers=[("WWW-Authenticate", 'Basic realm="Jenkins"')])

    def perms(self, user):
        if user is None:
            return set(STATE.anonymous)
        return set(STATE.users[user]["permissions"])

    def check_crumb(self, user, kind, form, query, entry):
        entry["crumb"] = bool(self.headers.get(CRUMB_FIELD) or
                              form.get(CRUMB_FIELD) or query.get(CRUMB_FIELD))
        entry["cookie"] = bool(self.headers.get("Cookie"))
        if kind == "token" or not STATE.crumb_issuer:
            return
        given = self.headers.get(CRUMB_FIELD)
        if not given:
            vals = form.get(CRUMB_FIELD) or query.get(CRUMB_FIELD)
            given = vals[0] if vals else None
        sid = self.session_id()
        if given and sid and secrets.compare_digest(given,
                                                    crumb_for(user, sid)):
            return
        raise Reply(403, "<html><body><h2>HTTP ERROR 403 No valid crumb was "
                    "included in the request</h2></body></html>\n")

    # -- routing --------------------------------------------------------
    def dispatch(self, url, entry):
        with STATE.lock:
            if time.monotonic() < STATE.down_until:
                raise Reply(503, "<html><body>Please wait while Jenkins is "
                            "getting ready to work...</body></html>\n")
            STATE.tick()
            path = urllib.parse.unquote(url.path)
            if self.prefix:
                if not (path == self.prefix or
                        path.startswith(self.prefix + "/")):
                    raise error_page(404, "Not Found")
                path = path[len(self.prefix):]
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            form = {}
            ctype = self.headers.get("Content-Type", "")
            if self.command == "POST" and \
                    ctype.startswith("application/x-www-form-urlencoded"):
                form = urllib.parse.parse_qs(self.body.decode("utf-8",
                                                              "replace"),
                                             keep_blank_values=True)
            user, kind = self.authenticate(entry)
            perms = self.perms(user)
            segs = [s for s in url.path[len(self.prefix):].split("/")]
            segs = [urllib.parse.unquote(s) for s in segs if s != ""]
            if segs[:1] == ["crumbIssuer"]:
                return self.crumb_issuer(user, perms, segs, query)
            if "read" not in perms:
                if user is None:
                    raise Reply(403, "<html><body>Authentication required"
                                "</body></html>\n")
                raise error_page(403, "%s is missing the Overall/Read "
                                 "permission" % user)
            if self.command == "POST":
                self.check_crumb(user, kind, form, query, entry)
            if segs in ([], ["api", "json"]):
                return self.json_reply(self.root_json(), query)
            if segs == ["me", "api", "json"]:
                return self.json_reply({
                    "_class": "hudson.model.User", "id": user or "anonymous",
                    "fullName": user or "anonymous",
                    "absoluteUrl": self.root() + "user/%s" % user},
                    query)
            if segs[0] == "queue":
                return self.queue(user, perms, segs[1:], query)
            if segs[0] == "job":
                return self.job(user, perms, segs, query, form, entry)
            raise error_page(404, "Not Found")

    def crumb_issuer(self, user, perms, segs, query):
        if not STATE.crumb_issuer:
            raise error_page(404, "Not Found")
        if "read" not in perms:
            raise Reply(403, "<html><body>Authentication required"
                        "</body></html>\n")
        headers = []
        sid = self.session_id()
        if sid is None:
            sid = secrets.token_urlsafe(18)
            STATE.sessions[sid] = user
            path = (self.prefix or "") + "/"
            headers.append(("Set-Cookie", "%s=%s; Path=%s; HttpOnly"
                            % (STATE.cookie_name, sid, path)))
        crumb = crumb_for(user, sid)
        if segs[1:] == ["api", "json"]:
            rep = self.json_reply({
                "_class": "hudson.security.csrf.DefaultCrumbIssuer",
                "crumb": crumb, "crumbRequestField": CRUMB_FIELD}, query)
        elif segs[1:] == ["api", "xml"]:
            xpath = query.get("xpath", [""])[0]
            if xpath == 'concat(//crumbRequestField,":",//crumb)':
                rep = Reply(200, "%s:%s" % (CRUMB_FIELD, crumb),
                            "text/plain;charset=utf-8")
            else:
                rep = Reply(200, '<defaultCrumbIssuer _class="hudson.'
                            'security.csrf.DefaultCrumbIssuer"><crumb>%s'
                            '</crumb><crumbRequestField>%s</crumbRequest'
                            'Field></defaultCrumbIssuer>'
                            % (crumb, CRUMB_FIELD), "application/xml")
        else:
            raise error_page(404, "Not Found")
        rep.headers.extend(headers)
        return rep

    def root_json(self):
        return {"_class": "hudson.model.Hudson", "mode": "NORMAL",
                "nodeDescription": "the Jenkins controller's built-in node",
                "numExecutors": STATE.executors, "useCrumbs": True,
                "useSecurity": True, "views": [],
                "jobs": [self.job_ref(j) for p, j in STATE.jobs.items()
                         if "/" not in p]}

    def job_ref(self, job):
        return {"_class": "hudson.model.FreeStyleProject", "name": job.name,
                "url": self.root() + folder_url(job.path),
                "color": "blue"}

    # -- the queue ------------------------------------------------------
    def find_item(self, qid, user):
        item = STATE.items.get(qid)
        if item is None or not self.visible(item.job, user):
            return None
        return item

    def queue(self, user, perms, segs, query):
        if segs == ["api", "json"]:
            return self.json_reply({
                "_class": "hudson.model.Queue", "discoverableItems": [],
                "items": [self.item_json(i) for i in STATE.items.values()
                          if i.state != "left"
                          and self.visible(i.job, user)]}, query)
        if segs == ["cancelItem"]:
            if self.command != "POST":
                raise Reply(405, "", headers=[("Allow", "POST")])
            try:
                qid = int(query.get("id", [""])[0])
            except ValueError:
                raise error_page(400, "Bad id")
            item = self.find_item(qid, user)
            if item is None:
                raise error_page(404, "Provided id (%d) not found" % qid)
            if "cancel" not in perms:
                raise error_page(403, "%s is missing the Job/Cancel "
                                 "permission" % user)
            if item.state == "left":
                raise error_page(422, "Item for id (%d) is not cancellable"
                                 % qid)
            item.state = "left"
            item.cancelled = True
            item.left_at = CLOCK.mono()
            return Reply(204, b"")
        if len(segs) >= 2 and segs[0] == "item" and segs[1].isdigit():
            item = self.find_item(int(segs[1]), user)
            if item is None:
                raise error_page(404, "Not Found")
            rest = segs[2:]
            if rest == ["api", "json"]:
                return self.json_reply(self.item_json(item), query)
            if rest == []:
                return Reply(200, "<html><body>Queue item %d: %s</body>"
                             "</html>\n" % (item.id, self.why(item) or ""))
        raise error_page(404, "Not Found")

    def why(self, item):
        if item.state == "waiting":
            left = max(0.0, item.due - CLOCK.mono())
            return "In the quiet period. Expires in %.1f sec" % left
        if item.state == "blocked":
            running = [b for b in item.job.builds.values()
                       if b.phase != "done"]
            n = running[-1].number if running else item.job.next_number
            return "Build #%d is already in progress (ETA: %d sec)" % (
                n, int(item.job.cfg["duration"]) + 1)
        if item.state == "buildable":
            if item.job.cfg["label_offline"]:
                return "There are no nodes with the label \u2018ci\u2019"
            return "Waiting for next available executor"
        return None

    def params_action(self, params):
        return {"_class": "hudson.model.ParametersAction",
                "parameters": [{"_class": "hudson.model.StringParameterValue",
                                "name": n, "value": v}
                               for n, v in (params or [])]}

    def item_json(self, item):
        cls = {"waiting": "WaitingItem", "blocked": "BlockedItem",
               "buildable": "BuildableItem", "left": "LeftItem"}[item.state]
        actions = []
        if item.params is not None:
            actions.append(self.params_action(item.params))
        actions.append({"_class": "hudson.model.CauseAction", "causes": [
            {"_class": "hudson.model.Cause$UserIdCause",
             "shortDescription": "Started by user %s"
             % (item.user or "anonymous"),
             "userId": item.user, "userName": item.user or "anonymous"}]})
        actions.append({})
        stuck = item.state == "buildable" and (
            item.job.cfg["label_offline"] or
            CLOCK.mono() - item.due > STATE.stuck_after)
        d = {"_class": "hudson.model.Queue$" + cls,
             "actions": actions,
             "blocked": item.state == "blocked",
             "buildable": item.state == "buildable",
             "id": item.id,
             "inQueueSince": item.in_queue_since,
             "params": "".join("\n%s=%s" % p for p in (item.params or [])),
             "stuck": stuck,
             "task": self.job_ref(item.job),
             "url": "queue/item/%d/" % item.id,
             "why": self.why(item)}
        if item.state == "waiting":
            d["timestamp"] = item.in_queue_since + int(
                (item.due - CLOCK.mono()) * 1000)
        if item.state == "buildable":
            d["pending"] = False
        if item.state == "left":
            d["cancelled"] = item.cancelled
            d["executable"] = None
            if item.build is not None:
                d["executable"] = {"_class": "hudson.model.FreeStyleBuild",
                                   "number": item.build.number,
                                   "url": self.build_url(item.build)}
        return d

    # -- jobs -----------------------------------------------------------
    def visible(self, job, user):
        vis = job.cfg["visible_to"]
        return vis is None or user in vis

    def job(self, user, perms, segs, query, form, entry):
        names = []
        while len(segs) >= 2 and segs[0] == "job":
            names.append(segs[1])
            segs = segs[2:]
            path = "/".join(names)
            if path in STATE.jobs:
                break
            if not any(p.startswith(path + "/") for p in STATE.jobs):
                raise error_page(404, "Not Found")
        path = "/".join(names)
        job = STATE.jobs.get(path)
        if job is None:
            if segs in ([], ["api", "json"]) and names:
                return self.json_reply(self.folder_json(path), query)
            raise error_page(404, "Not Found")
        if not self.visible(job, user):
            raise error_page(404, "Not Found")
        if segs in ([], ["api", "json"]):
            # a tree reaches into the builds (depth is for the rest)
            return self.json_reply(self.job_json(job, "tree" in query),
                                   query)
        if segs[0] in ("build", "buildWithParameters") and len(segs) == 1:
            return self.trigger(job, segs[0], user, perms, query, form,
                                entry)
        aliases = {"lastBuild": lambda b: True,
                   "lastCompletedBuild": lambda b: b.phase == "done",
                   "lastSuccessfulBuild":
                   lambda b: b.phase == "done" and b.result == "SUCCESS",
                   "lastFailedBuild":
                   lambda b: b.phase == "done" and b.result == "FAILURE"}
        if segs[0] in aliases:
            ok = [b for b in job.builds.values() if aliases[segs[0]](b)]
            if not ok:
                raise error_page(404, "Not Found")
            build = ok[-1]
        elif segs[0].isdigit() and int(segs[0]) in job.builds:
            build = job.builds[int(segs[0])]
        else:
            raise error_page(404, "Not Found")
        return self.build(build, user, perms, segs[1:], query)

    def folder_json(self, path):
        kids = {}
        for p, j in STATE.jobs.items():
            if p.startswith(path + "/"):
                rest = p[len(path) + 1:]
                kids.setdefault(rest.split("/")[0], (p, "/" in rest))
        return {"_class": "com.cloudbees.hudson.plugins.folder.Folder",
                "name": path.split("/")[-1], "fullName": path,
                "url": self.root() + folder_url(path),
                "jobs": [{"_class": "com.cloudbees.hudson.plugins.folder."
                          "Folder" if sub else "hudson.model.FreeStyleProject",
                          "name": n,
                          "url": self.root() + folder_url(path + "/" + n)}
                         for n, (p, sub) in kids.items()]}

    def job_json(self, job, deep=False):
        builds = sorted(job.builds.values(), key=lambda b: -b.number)
        queued = [i for i in STATE.items.values()
                  if i.job is job and i.state != "left"]
        prop = []
        if job.cfg["params"] is not None:
            prop.append({
                "_class": "hudson.model.ParametersDefinitionProperty",
                "parameterDefinitions": [
                    {"_class": "hudson.model.StringParameterDefinition",
                     "name": n, "type": "StringParameterDefinition",
                     "defaultParameterValue": {
                         "_class": "hudson.model.StringParameterValue",
                         "name": n, "value": v}}
                    for n, v in job.cfg["params"].items()]})
        ref = lambda b: {"_class": "hudson.model.FreeStyleBuild",  # noqa
                         "number": b.number, "url": self.build_url(b)}
        return {"_class": "hudson.model.FreeStyleProject",
                "name": job.name, "fullName": job.path,
                "url": self.root() + folder_url(job.path),
                "buildable": not job.cfg["disabled"],
                "color": "disabled" if job.cfg["disabled"] else "blue",
                "concurrentBuild": job.cfg["concurrent"],
                # Jenkins lists the newest 100 ("allBuilds": every one)
                "builds": [self.build_json(b) if deep else ref(b)
                           for b in builds[:100]],
                "lastBuild": ref(builds[0]) if builds else None,
                "nextBuildNumber": job.next_number,
                "inQueue": bool(queued),
                "queueItem": self.item_json(queued[0]) if queued else None,
                "property": prop}

    def trigger(self, job, verb, user, perms, query, form, entry):
        params_cfg = job.cfg["params"]
        if self.command != "POST":
            if verb == "build" and params_cfg is not None:
                return Reply(200, "<html><body><form method='post' "
                             "action='build'>parameters</form></body>"
                             "</html>\n")
            raise Reply(405, error_page(405, "Method Not Allowed").body,
                        headers=[("Allow", "POST")])
        if "build" not in perms:
            raise error_page(403, "%s is missing the Job/Build permission"
                             % user)
        if job.cfg["disabled"]:
            raise error_page(409, "%s is not buildable" % job.name)
        if self.headers.get("Content-Type", "").startswith("multipart/"):
            raise error_page(400, "multipart requests are not modelled")
        if verb == "buildWithParameters" and params_cfg is None:
            raise error_page(400, "%s is not parameterized" % job.name)
        if verb == "build" and params_cfg is not None:
            if "json" not in form:
                raise error_page(400, "Nothing is submitted")
        delay = (query.get("delay") or form.get("delay") or [None])[0]
        quiet = job.cfg["quiet"] if job.cfg["quiet"] is not None \
            else STATE.quiet
        if delay is not None:
            m = re.fullmatch(r"\s*(\d+)\s*(secs?)?\s*", delay)
            if not m:
                raise error_page(400, "Invalid delay: %s" % delay)
            quiet = int(m.group(1)) / (1 if m.group(2) else 1000)
        params = None
        if params_cfg is not None:
            given = {}
            if verb == "build":
                try:
                    js = json.loads(form["json"][0])
                    pl = js.get("parameter", [])
                    if isinstance(pl, dict):
                        pl = [pl]
                    pairs = [(p["name"], p.get("value", "")) for p in pl]
                except Exception:
                    raise error_page(400, "Malformed json")
            else:
                pairs = [(k, v) for src in (query, form)
                         for k, vs in src.items() for v in vs]
            for name, value in pairs:
                if name not in params_cfg:
                    continue        # undeclared: silently dropped
                if name in given:
                    raise error_page(500, "java.lang.IllegalArgumentException"
                                     ": duplicate parameter %s" % name)
                given[name] = value
            params = [(n, given.get(n, d)) for n, d in params_cfg.items()]
            entry["params"] = dict(params)
        if job.cfg["refuse"]:
            raise Reply(302, b"", headers=[
                ("Location", self.request_root() + folder_url(job.path))])
        now = CLOCK.mono()
        for item in sorted(STATE.items.values(), key=lambda i: i.id):
            if item.job is job and item.state != "left" and \
                    item.params == params:
                item.due = min(item.due, now + quiet)
                item.causes += 1
                loc = self.request_root() + "queue/item/%d/" % item.id
                status = 303 if verb == "buildWithParameters" else 201
                entry["merged"] = item.id
                return Reply(status, b"", headers=[("Location", loc)])
        qid = STATE.next_qid
        STATE.next_qid += 1
        STATE.items[qid] = Item(qid, job, params, now + quiet, user)
        STATE.tick()
        entry["queued"] = qid
        return Reply(201, b"", headers=[
            ("Location", self.request_root() + "queue/item/%d/" % qid)])

    # -- builds ---------------------------------------------------------
    def build_url(self, b):
        return self.root() + folder_url(b.job.path) + "%d/" % b.number

    def build_json(self, b):
        actions = []
        if b.item.params is not None:
            actions.append(self.params_action(b.item.params))
        actions.append({"_class": "hudson.model.CauseAction", "causes": [
            {"_class": "hudson.model.Cause$UserIdCause",
             "shortDescription": "Started by user %s"
             % (b.item.user or "anonymous")}]})
        actions.append({})
        if b.tests_recorded:
            t = b.job.cfg["tests"]
            actions.append({"_class": "hudson.tasks.junit.TestResultAction",
                            "failCount": t.get("fail", 0),
                            "skipCount": t.get("skip", 0),
                            "totalCount": t.get("pass", 0) + t.get("fail", 0)
                            + t.get("skip", 0),
                            "urlName": "testReport"})
        actions.append({"_class": "org.example.UnknownAction",
                        "whatever": [1, 2, 3]})
        est = int((b.job.cfg["duration"] + b.job.cfg["post"]) * 1000)
        return {"_class": "hudson.model.FreeStyleBuild",
                "actions": actions, "artifacts": [
                    {"displayPath": p.split("/")[-1], "fileName":
                     p.split("/")[-1], "relativePath": p}
                    for p in b.job.cfg["artifacts"]],
                "building": b.phase == "building",
                "description": None,
                "displayName": "#%d" % b.number,
                "duration": b.duration_ms,
                "estimatedDuration": est,
                "executor": {} if b.phase != "done" else None,
                "fullDisplayName": "%s #%d" % (" \u00bb ".join(
                    b.job.path.split("/")), b.number),
                "id": str(b.number),
                "keepLog": False,
                "number": b.number,
                "queueId": b.item.id,
                "result": b.result,
                "timestamp": b.timestamp,
                "url": self.build_url(b),
                "builtOn": "",
                "changeSet": {"_class": "hudson.scm.EmptyChangeLogSet",
                              "items": [], "kind": None},
                "culprits": [],
                "inProgress": b.phase != "done"}

    def test_report(self, b):
        t = b.job.cfg["tests"]
        cases = []
        for status, n in (("PASSED", t.get("pass", 0)),
                          ("FAILED", t.get("fail", 0)),
                          ("SKIPPED", t.get("skip", 0))):
            for k in range(n):
                cases.append({"_class": "hudson.tasks.junit.CaseResult",
                              "className": "t.Suite", "name": "%s_%d"
                              % (status.lower(), k), "status": status,
                              "duration": 0.01,
                              "errorDetails": "boom" if status == "FAILED"
                              else None, "errorStackTrace": None})
        return {"_class": "hudson.tasks.junit.TestResult",
                "testActions": [], "duration": 0.5, "empty": not cases,
                "failCount": t.get("fail", 0), "passCount": t.get("pass", 0),
                "skipCount": t.get("skip", 0),
                "suites": [{"cases": cases, "duration": 0.5, "id": None,
                            "name": "t.Suite", "stderr": None,
                            "stdout": "x" * 10000, "timestamp": None}]}

    def build(self, b, user, perms, segs, query):
        if segs in ([], ["api", "json"]):
            if segs == []:
                return Reply(200, "<html><body>%s #%d</body></html>\n"
                             % (b.job.path, b.number))
            return self.json_reply(self.build_json(b), query)
        if segs == ["stop"]:
            if self.command != "POST":
                raise Reply(405, error_page(405, "Method Not Allowed").body,
                            headers=[("Allow", "POST")])
            if "cancel" not in perms:
                raise error_page(403, "%s is missing the Job/Cancel "
                                 "permission" % user)
            if b.phase == "building":
                b.aborted = True
            return Reply(302, b"", headers=[
                ("Location", self.request_root() + folder_url(b.job.path) +
                 "%d/" % b.number)])
        if segs == ["testReport", "api", "json"]:
            if not b.tests_recorded:
                raise error_page(404, "Not Found")
            return self.json_reply(self.test_report(b), query)
        if segs == ["consoleText"]:
            return Reply(200, strip_notes(b.raw), "text/plain;charset=utf-8")
        if segs == ["logText", "progressiveText"]:
            try:
                start = int(query.get("start", ["0"])[0])
            except ValueError:
                start = 0
            if start > len(b.raw) or start < 0:
                start = 0
            headers = [("X-Text-Size", str(len(b.raw)))]
            if b.phase != "done":
                headers.append(("X-More-Data", "true"))
            return Reply(200, strip_notes(b.raw[start:]),
                         "text/plain;charset=utf-8", headers)
        if segs[:1] == ["artifact"]:
            rel = "/".join(segs[1:])
            if rel in b.job.cfg["artifacts"]:
                return Reply(200, b.job.cfg["artifacts"][rel],
                             "application/octet-stream")
        raise error_page(404, "Not Found")


class _Handled(Exception):
    pass


def _wrap(handler_cls):
    orig = handler_cls.handle_any

    def handle_any(self):
        try:
            orig(self)
        except _Handled:
            pass
    handler_cls.handle_any = handle_any


_wrap(Handler)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", help="JSON file: jobs, users, settings")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefix", default="",
                    help="context path, e.g. /jenkins")
    ap.add_argument("--down", type=float, default=0.0,
                    help="answer 503 for this many seconds, as Jenkins "
                    "does while it starts")
    ap.add_argument("--exit-on-eof", action="store_true",
                    help="stop when stdin reaches end of file")
    args = ap.parse_args()
    if args.config:
        with open(args.config) as f:
            STATE.configure(json.load(f))
    Handler.prefix = args.prefix.rstrip("/")
    STATE.down_until = time.monotonic() + args.down
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True

    def ticker():
        while True:
            time.sleep(0.02)
            with STATE.lock:
                STATE.tick()
    threading.Thread(target=ticker, daemon=True).start()
    print(srv.server_address[1], flush=True)
    if args.exit_on_eof:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        sys.stdin.read()
        srv.shutdown()
    else:
        srv.serve_forever()


if __name__ == "__main__":
    main()
