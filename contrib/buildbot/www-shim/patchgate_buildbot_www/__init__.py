# The REST API of a Buildbot master without its web UI.
#
# Debian 12 packages buildbot 3.7 but not buildbot-www, and without it the
# master refuses to start its web server ("could not find buildbot-www; is
# it installed?"), which also serves /api/v2, the API patchgate's buildbot
# backend uses.  This package stands in for buildbot-www's "base" plugin:
# put this directory (www-shim/) on the master's PYTHONPATH.  The pages it
# serves are one static placeholder; /api/v2, /auth and /change_hook are
# the master's own.  With the real buildbot-www installed (pip install
# buildbot-www==3.7.0), leave it out.
from buildbot.www.plugin import Application

ep = Application(__name__, "patchgate: Buildbot's REST API without the web UI")
