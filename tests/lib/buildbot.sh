# buildbot.sh - a real Buildbot master and two real workers on loopback,
# for the tests of the buildbot backend.  Source after pgate.sh.
#
#   bb_setup DIR          buildbot create-master DIR/master (with the
#                         master.cfg below), buildbot-worker
#                         create-worker DIR/w1 and DIR/w2; picks free
#                         ports: sets BB_URL (the REST API's base),
#                         BB_WWW_PORT, BB_PB_PORT
#   bb_start_master       starts it (the www shim of contrib/buildbot on
#                         PYTHONPATH: Debian has no buildbot-www) and
#                         waits until /api/v2 answers
#   bb_stop_master        buildbot stop (the running builds are cancelled:
#                         "cancelled (Master Shutdown)")
#   bb_start_worker N     starts worker wN and waits until it is connected
#   bb_kill_worker N      SIGKILLs worker wN
#   bb_api PATH           GET $BB_URL/api/v2/PATH
#   bb_py PATH EXPR       EXPR evaluated by Python on the JSON of
#                         bb_api PATH, as d
#
# The master has the force scheduler "patchgate" taking every property
# the backend sends, for the builders calc (fetch, build: make, check:
# make check), quick (fetch, then true: bench/buildbot.sh), slow (calc's
# steps after a 5 s sleep) and held (on a worker w3 that never connects:
# its requests stay queued); and the force scheduler
# "bare" (no properties) for calc.  With DIR/master/password present the
# master asks for a login: user ci with that password, who alone may
# force, cancel and stop.  Every process is stopped on exit.

command -v buildbot >/dev/null && command -v buildbot-worker >/dev/null ||
	skip_all "needs buildbot and buildbot-worker (Debian's packages)"

bb_free_port() {
	"$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bb_setup() {
	BB=$1
	mkdir -p "$BB"
	BB_WWW_PORT=$(bb_free_port)
	BB_PB_PORT=$(bb_free_port)
	BB_URL=http://127.0.0.1:$BB_WWW_PORT
	export PYTHONPATH=$SRCDIR/contrib/buildbot/www-shim${PYTHONPATH:+:$PYTHONPATH}
	buildbot create-master -q "$BB/master" >"$BB/create.log" 2>&1 ||
		bail "buildbot create-master failed: $(tail -3 "$BB/create.log")"
	cat >"$BB/master/master.cfg" <<EOF
# written by tests/lib/buildbot.sh
import os
from buildbot.plugins import schedulers, steps, util, worker

c = BuildmasterConfig = {}
c['workers'] = [worker.Worker(n, 'pw-' + n, max_builds=1) for n in ('w1', 'w2', 'w3')]
c['protocols'] = {'pb': {'port': 'tcp:$BB_PB_PORT:interface=127.0.0.1'}}
c['change_source'] = []
NAMES = ['repo_url', 'ref', 'commit', 'base_commit', 'series', 'version',
         'branch', 'msgid', 'trigger']
c['schedulers'] = [
    schedulers.ForceScheduler(
        name='patchgate', builderNames=['calc', 'quick', 'slow', 'held'],
        properties=[util.StringParameter(name='patchgate_' + n, default='')
                    for n in NAMES]),
    schedulers.ForceScheduler(name='bare', builderNames=['calc']),
]
# the values come from e-mail: environment variables, never the shell's
# command line
ENV = {'PATCHGATE_' + n.upper(): util.Property('patchgate_' + n) for n in NAMES}
FETCH = ('git init -q . && git fetch -q "\$PATCHGATE_REPO_URL" "\$PATCHGATE_REF" && '
         'git checkout -q --detach "\$PATCHGATE_COMMIT"')

def factory(sleep=0):
    f = util.BuildFactory()
    f.addStep(steps.RemoveDirectory(name='clean', dir='build'))
    if sleep:
        f.addStep(steps.ShellCommand(name='wait', command=['sleep', str(sleep)]))
    f.addStep(steps.ShellCommand(name='fetch', command=['sh', '-c', FETCH], env=ENV,
                                 haltOnFailure=True))
    f.addStep(steps.ShellCommand(name='build', command=['make'], haltOnFailure=True))
    f.addStep(steps.ShellCommand(name='check', command=['make', 'check'],
                                 haltOnFailure=True))
    return f

def quick():
    f = util.BuildFactory()
    f.addStep(steps.RemoveDirectory(name='clean', dir='build'))
    f.addStep(steps.ShellCommand(name='fetch', command=['sh', '-c', FETCH], env=ENV,
                                 haltOnFailure=True))
    f.addStep(steps.ShellCommand(name='check', command=['true']))
    return f

c['builders'] = [
    util.BuilderConfig(name='calc', workernames=['w1', 'w2'], factory=factory()),
    util.BuilderConfig(name='quick', workernames=['w1', 'w2'], factory=quick()),
    util.BuilderConfig(name='slow', workernames=['w1', 'w2'], factory=factory(5)),
    util.BuilderConfig(name='held', workernames=['w3'], factory=factory()),
]
c['title'] = 'patchgate tests'
c['buildbotURL'] = '$BB_URL/'
c['www'] = {'port': 'tcp:$BB_WWW_PORT:interface=127.0.0.1', 'plugins': {}}
if os.path.exists('password'):
    c['www']['auth'] = util.UserPasswordAuth({'ci': open('password').read().strip()})
    c['www']['authz'] = util.Authz(
        allowRules=[util.AnyControlEndpointMatcher(role='admins')],
        roleMatchers=[util.RolesFromUsername(roles=['admins'], usernames=['ci'])])
c['db'] = {'db_url': 'sqlite:///state.sqlite'}
c['buildbotNetUsageData'] = None
EOF
	for n in 1 2; do
		buildbot-worker create-worker -q "$BB/w$n" "127.0.0.1:$BB_PB_PORT" \
			"w$n" "pw-w$n" >>"$BB/create.log" 2>&1 ||
			bail "buildbot-worker create-worker failed"
	done
	TAP_CLEANUP="${TAP_CLEANUP:+$TAP_CLEANUP; }bb_cleanup"
}

bb_cleanup() {
	for d in "$BB/w1" "$BB/w2" "$BB/master"; do
		[ -s "$d/twistd.pid" ] && kill -9 "$(cat "$d/twistd.pid")" 2>/dev/null
	done
	return 0
}

bb_api() {
	curl -s --max-time 10 "$BB_URL/api/v2/$1"
}

bb_py() {
	bb_api "$1" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$2"
}

bb_start_master() {
	buildbot start "$BB/master" >"$BB/start.log" 2>&1 ||
		bail "the buildbot master did not start: $(tail -5 "$BB/master/twistd.log")"
	for _ in $(seq 300); do
		curl -s -o /dev/null --max-time 2 "$BB_URL/api/v2/builders" && return 0
		sleep 0.1
	done
	bail "the buildbot master's REST API does not answer"
}

bb_stop_master() {
	buildbot stop "$BB/master" >/dev/null 2>&1
}

# bb_start_worker N: until the master lists it as connected
bb_start_worker() {
	buildbot-worker start "$BB/w$1" >/dev/null 2>&1 ||
		bail "worker w$1 did not start"
	bb_wait_worker "$1"
}

# bb_wait_worker N: until worker wN is connected. A worker whose master
# went away retries with Twisted's backoff (1.5^n s, up to 60 s), so
# after a slow master restart on a loaded machine its next attempt can be
# half a minute off: when it has not connected within 15 s it is
# restarted, which connects at once, and waited for up to 60 s more.
bb_wait_worker() {
	_bb_connected "$1" 150 && return 0
	buildbot-worker restart "$BB/w$1" >>"$BB/restart.log" 2>&1
	_bb_connected "$1" 600 && return 0
	tail -5 "$BB/w$1/twistd.log" 2>/dev/null | sed 's/^/# w'"$1"': /' >&2
	bail "worker w$1 did not connect"
}

_bb_connected() {	# _bb_connected N TENTHS
	for _ in $(seq "$2"); do
		[ "$(bb_py "workers?name=w$1" 'str(bool(d["workers"] and d["workers"][0]["connected_to"]))' 2>/dev/null)" = True ] &&
			return 0
		sleep 0.1
	done
	return 1
}

bb_kill_worker() {
	kill -9 "$(cat "$BB/w$1/twistd.pid")" 2>/dev/null
	rm -f "$BB/w$1/twistd.pid"
}
