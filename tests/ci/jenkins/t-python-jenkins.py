#!/usr/bin/python3
"""t-python-jenkins.py - drives tests/fakes/jenkins.py with Debian's
python3-jenkins (1.4.0), an independent Jenkins client, as a check that the
fake speaks the protocol the way clients written against the real server
expect.  Prints TAP; skips everything when python3-jenkins is missing."""

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "..", "..", "fakes", "jenkins.py")
if len(sys.argv) > 1:
    FAKE = sys.argv[1]

try:
    import jenkins
except ImportError:
    print("1..0 # SKIP python3-jenkins is not installed "
          "(apt-get install python3-jenkins)")
    sys.exit(0)

TOKEN = "1122334455667788990011aabbccddeeff"
PARAMS = {"PATCHGATE_COMMIT": "", "PATCHGATE_TRIGGER": ""}
CONFIG = {
    "users": {"alice": {"token": TOKEN, "password": "s3cret"}},
    "quiet": 0.3, "left_expiry": 1.5, "start_delay": 0.2, "executors": 2,
    "jobs": {
        "ci/sub/check": {"params": PARAMS, "result": "UNSTABLE",
                         "duration": 0.3, "post": 0.2,
                         "tests": {"pass": 5, "fail": 1, "skip": 2}},
        "slow": {"params": PARAMS, "duration": 30, "quiet": 0.1},
        "waiting": {"params": PARAMS, "quiet": 60},
    },
}

n = 0
failed = 0


def ok(cond, desc, diag=None):
    global n, failed
    n += 1
    if cond:
        print("ok %d - %s" % (n, desc))
    else:
        failed += 1
        print("not ok %d - %s" % (n, desc))
        if diag is not None:
            for line in str(diag).splitlines():
                print("# " + line)
    sys.stdout.flush()


def until(fn, timeout=10.0):
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.05)


def main():
    cfg = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                       "pgate-pyjenkins-%d.json" % os.getpid())
    with open(cfg, "w") as f:
        json.dump(CONFIG, f)
    proc = subprocess.Popen([sys.executable, FAKE, "--config", cfg,
                             "--prefix", "/jenkins", "--exit-on-eof"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        port = int(proc.stdout.readline())
        run("http://127.0.0.1:%d/jenkins/" % port)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        os.unlink(cfg)
    print("1..%d" % n)
    return 1 if failed else 0


def run(url):
    srv = jenkins.Jenkins(url, username="alice", password=TOKEN, timeout=10)
    # Like the real server with anonymous read off, the fake answers 403 to
    # the unauthenticated request get_version() makes before anything
    # resolved the client's authentication.
    try:
        srv.get_version()
        ok(False, "anonymous get_version refused")
    except jenkins.JenkinsException:
        ok(True, "anonymous get_version refused (403)")
    me = srv.get_whoami()
    ok(me.get("id") == "alice", "get_whoami: alice", me)
    ok(srv.get_version() == "2.426.3", "then get_version reads X-Jenkins")

    # token auth: trigger, follow the queue item to its build
    q = srv.build_job("ci/sub/check", {"PATCHGATE_COMMIT": "abc",
                                       "PATCHGATE_TRIGGER": "t1"})
    ok(isinstance(q, int) and q > 0, "build_job returns a queue item id")
    item = srv.get_queue_item(q)
    ok(item["_class"] == "hudson.model.Queue$WaitingItem" and
       item["why"].startswith("In the quiet period"),
       "a new item waits for the quiet period", item)
    seen = []

    def executable():
        it = srv.get_queue_item(q)
        seen.append(it["_class"].split("$")[-1] +
                    (":null" if it.get("executable", 1) is None else ""))
        return it.get("executable")
    exe = until(executable)
    ok(exe and exe["number"] == 1, "the item leaves with executable #1",
       seen)
    ok("LeftItem:null" in seen, "executable:null seen between", seen)
    info = until(lambda: (lambda b: b if not b["inProgress"] else None)(
        srv.get_build_info("ci/sub/check", exe["number"])))
    ok(info and info["result"] == "UNSTABLE" and not info["building"],
       "get_build_info: finished UNSTABLE", info)
    ok(info and "/job/ci/job/sub/job/check/1/" in info["url"],
       "build url under the folders", info and info["url"])
    params = [a for a in info["actions"]
              if a.get("_class") == "hudson.model.ParametersAction"]
    ok(params and {p["name"]: p["value"] for p in params[0]["parameters"]}
       == {"PATCHGATE_COMMIT": "abc", "PATCHGATE_TRIGGER": "t1"},
       "the build carries the parameters", params)
    rep = srv.get_build_test_report("ci/sub/check", 1)
    ok(rep and (rep["passCount"], rep["failCount"], rep["skipCount"]) ==
       (5, 1, 2), "get_build_test_report counts", rep)
    out = srv.get_build_console_output("ci/sub/check", 1)
    ok("Finished: UNSTABLE" in out and "\x1b[8m" not in out,
       "console output without hidden notes", out)

    # password auth: python-jenkins fetches a crumb with a session cookie
    pw = jenkins.Jenkins(url, username="alice", password="s3cret",
                         timeout=10)
    q2 = pw.build_job("ci/sub/check", {"PATCHGATE_COMMIT": "def",
                                       "PATCHGATE_TRIGGER": "t2"})
    ok(q2 == q + 1, "password auth: crumb + cookie accepted", q2)
    bad = jenkins.Jenkins(url, username="alice", password="wrong",
                          timeout=10)
    try:
        bad.build_job("ci/sub/check", {"PATCHGATE_COMMIT": "x"})
        ok(False, "wrong password refused")
    except jenkins.JenkinsException as e:
        ok("401" in str(e), "wrong password refused with 401", e)

    # cancel a waiting item
    q3 = srv.build_job("waiting", {"PATCHGATE_TRIGGER": "t3"})
    srv.cancel_queue(q3)
    it = srv.get_queue_item(q3)
    ok(it["_class"].endswith("$LeftItem") and it["cancelled"] and
       it["executable"] is None, "cancel_queue: item left, cancelled", it)

    # stop a running build
    q4 = srv.build_job("slow", {"PATCHGATE_TRIGGER": "t4"})
    exe = until(lambda: srv.get_queue_item(q4).get("executable"))
    ok(exe is not None, "slow build started")
    if exe:
        srv.stop_build("slow", exe["number"])
        info = until(lambda: (lambda b: b if not b["inProgress"] else None)(
            srv.get_build_info("slow", exe["number"])))
        ok(info and info["result"] == "ABORTED", "stop_build: ABORTED",
           info)
    else:
        ok(False, "stop_build: ABORTED")

    # a left item expires
    gone = until(lambda: _missing(srv, q), timeout=5)
    ok(gone, "a left item expires (get_queue_item raises)")

    # GET on a trigger is refused, as on the real server
    req = urllib.request.Request(url + "job/slow/buildWithParameters")
    req.add_header("Authorization", "Basic " + base64.b64encode(
        ("alice:" + TOKEN).encode()).decode())
    try:
        urllib.request.urlopen(req, timeout=10)
        ok(False, "GET buildWithParameters refused")
    except urllib.error.HTTPError as e:
        ok(e.code == 405 and e.headers.get("Allow") == "POST",
           "GET buildWithParameters: 405, Allow: POST", e.code)


def _missing(srv, q):
    try:
        srv.get_queue_item(q)
        return False
    except jenkins.JenkinsException:
        return True


if __name__ == "__main__":
    sys.exit(main())
