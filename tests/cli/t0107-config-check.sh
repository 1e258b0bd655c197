#!/bin/bash
# t0107-config-check - `config check` looks at what the values name
# (issue #41, finding 3; docs/config.md, "Checking a file").
#
# Before, a file whose [apply] repo did not exist was "ok", exit 0: only
# the names and the values' forms were checked.  Now, without the
# network: the paths are there and are what they should be (the [apply]
# repository, [upstream]'s, [daemon] maildirs and inboxes, [ci.local]
# work_root, bwrap and ro_binds, the site's directory, CA files), the
# branches are in the repository ([apply] branches and the routing
# rules', each project's), the secrets' files may be read by this user
# and not by their group or others (which is said), the templates parse
# (ref_format, link_pattern, archive_url).  With --online: the Patchwork
# project and token (tests/fakes/patchwork.py), Jenkins and its job
# (tests/fakes/jenkins.py), the SMTP server and its login (aiosmtpd with
# AUTH: smtp-auth.py).  Each problem is a line naming the group and key;
# 78 for a configuration problem, 69 for a server that answers as no
# setting explains, 75 when only the network failed for now.  Nothing is
# written: no state directory, no change in a repository.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"
. "$SRCDIR/tests/lib/unpriv.sh"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.invalid \
	GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t.invalid
T=$TAP_TMP
CS=$T/state	# never made: config check touches no state directory

# check CONF [ARGS]: config check of CONF; sets rc, out, err
check() {
	printf '%s\n' "$1" >"$T/conf"
	shift
	"$PATCHGATE" --state "$CS" config check --config "$T/conf" "$@" \
		>"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}
# bad CONF ERE DESC [ARGS]: exit 78, the one problem named
bad() {
	local conf=$1 want=$2 desc=$3 code=${CODE:-78}
	shift 3
	check "$conf" "$@"
	is "$rc" "$code" "$desc: exit $code" || diag "$err"
	like "$err" "^patchgate: config: $want" "$desc: named"
}
# good CONF DESC [ARGS]: ok, exit 0
good() {
	local conf=$1 desc=$2
	shift 2
	check "$conf" "$@"
	is "$rc/$out" "0/ok" "$desc: ok" || diag "$err"
}

# ---- what the checks look at ------------------------------------------------

R=$T/repo
{
	git init -q -b master "$R" &&
	printf 'F:\tdrivers/rtc/\n' >"$R/MAINTAINERS" &&
	git -C "$R" add -A && git -C "$R" commit -qm base &&
	git -C "$R" branch next &&
	git init -q --bare "$T/push.git" &&
	git init -q --bare "$T/up.git" &&
	git -C "$T/up.git" remote add origin "$R" &&
	git -C "$T/up.git" fetch -q origin "+refs/heads/*:refs/heads/*"
} || bail "making the repositories failed"
mkdir -p "$T/md/new" "$T/md/cur" "$T/md/tmp" "$T/md2/new" "$T/md2/cur" \
	"$T/notmd" "$T/plain" "$T/work" "$T/site-parent" "$T/inbox2/git"
git init -q --bare "$T/inbox2/git/0.git"
git init -q --bare "$T/inbox1.git"
: >"$T/afile"
for f in secret pw key ca; do printf '%s-value\n' "$f" >"$T/$f"; done
chmod 600 "$T/secret" "$T/pw" "$T/key"
tree_state() {	# what a check must leave as it is
	(cd "$T" && find repo push.git up.git inbox1.git inbox2 md -printf '%p %s %T@\n' | sort)
}
before=$(tree_state)

A=$'[apply]\nrepo = '"$R"
CI=$'\n[ci.local]\nstep.build = make\nwork_root = '"$T/work"
good "$A$CI" "a repository with its default branch"

bad $'[apply]\nrepo = /srv/git/linux.git' \
	"\\[apply\\] repo: /srv/git/linux\\.git does not exist$" \
	"[apply] repo that does not exist"
bad $'[apply]\nrepo = '"$T/afile" "\\[apply\\] repo: .*afile is not a directory" \
	"[apply] repo that is a file"
bad $'[apply]\nrepo = '"$T/plain" "\\[apply\\] repo: .*plain is not a git repository" \
	"[apply] repo that is no repository"
is "$(printf '%s\n' "$err" | wc -l)" 1 "one line for the one problem"

bad "$A"$'\nbranches = master; nope' "\\[apply\\] branches: no branch nope in .*repo$" \
	"[apply] branches: one missing"
good "$A"$'\nbranches = master; next' "[apply] branches that are there"
check "$A"$'\nbranches = gone1; gone2'
is "$(printf '%s\n' "$err" | grep -c '\[apply\] branches: no branch')" 2 \
	"each missing branch is a line"

# the branches the routing rules name
bad "$A"$'\ntags = net:next; fixes:nope' \
	"\\[apply\\] tags: no branch nope in .*repo \\(fixes:nope\\)" "[apply] tags' branch"
bad "$A"$'\ntag_default = nope' "\\[apply\\] tag_default: no branch nope" \
	"[apply] tag_default"
bad "$A"$'\npaths = drivers/*:nope; fs/*' "\\[apply\\] paths: no branch nope in .*\\(drivers/\\*:nope\\)" \
	"[apply] paths' branch"
good "$A"$'\ntags = net:next\ntag_default = master\npaths = drivers/*:next; fs/*' \
	"routing rules whose branches are there"
bad "$A"$'\nmaintainers = MAINTAINERS.missing' \
	"\\[apply\\] maintainers: no MAINTAINERS\\.missing on any of \\[apply\\] branches" \
	"[apply] maintainers that no branch has"
good "$A"$'\nmaintainers = MAINTAINERS' "[apply] maintainers on the branch"

# templates
bad "$A"$'\nref_format = refs/heads/pg/{serie}/{target}' \
	"\\[apply\\] ref_format: unknown placeholder \\{serie\\} in .* \\(known: \\{series\\}, \\{version\\}, \\{target\\}\\)" \
	"[apply] ref_format with an unknown placeholder"
bad "$A"$'\nref_format = refs/heads/a..b/{series}' \
	"\\[apply\\] ref_format: 'refs/heads/a\\.\\.b/s0123456789ab' is not a valid ref name" \
	"[apply] ref_format that makes no ref name"
bad "$A"$'\nlink_pattern = https://lore.kernel.org/r/{msgid}/{id}' \
	"\\[apply\\] link_pattern: unknown placeholder \\{id\\}" "[apply] link_pattern"
bad "$A"$'\nref_format = refs/heads/pg/{series/{target}' \
	"\\[apply\\] ref_format: a \\{ without \\}|\\[apply\\] ref_format: unknown placeholder" \
	"[apply] ref_format with a brace left open"
good "$A"$'\nref_format = refs/heads/pg/{series}/v{version}/{target}\nlink_pattern = https://lore.kernel.org/r/{msgid}' \
	"templates that parse"

# secrets' files: this user reads them, their group and others do not
P=$'\npush_url = file://'"$T/push.git"$'\npush_password_file = '"$T/pw"
good "$A$P" "a push password file of mode 0600, a local push_url"
chmod 640 "$T/pw"
bad "$A$P" "\\[apply\\] push_password_file: .*pw may be read by its group \\(mode 0640\\)" \
	"[apply] push_password_file its group may read"
chmod 620 "$T/pw"
bad "$A$P" "\\[apply\\] push_password_file: .*pw may be written by its group \\(mode 0620\\)" \
	"... or write"
chmod 606 "$T/pw"
bad "$A$P" "\\[apply\\] push_password_file: .*pw may be read by others, written by others \\(mode 0606\\)" \
	"... others too, each said"
chmod 600 "$T/pw"
bad "$A"$'\npush_password_file = '"$T/nope" "\\[apply\\] push_password_file: .*nope does not exist" \
	"[apply] push_password_file that does not exist"
chmod 644 "$T/key"
bad "$A"$'\npush_ssh_key = '"$T/key" "\\[apply\\] push_ssh_key: .*key may be read by its group, read by others \\(mode 0644\\)" \
	"[apply] push_ssh_key readable by all"
chmod 600 "$T/key"
good "$A"$'\npush_ssh_key = '"$T/key" "[apply] push_ssh_key of mode 0600"
unset PGATE_T0107_PUSH
bad "$A"$'\npush_password_env = PGATE_T0107_PUSH' \
	"\\[apply\\] push_password_env: the environment variable PGATE_T0107_PUSH is not set" \
	"[apply] push_password_env not set"
PGATE_T0107_PUSH=x good "$A"$'\npush_password_env = PGATE_T0107_PUSH' "... set"
bad "$A"$'\npush_url = file://'"$T/gone.git" "\\[apply\\] push_url: .*gone\\.git does not exist" \
	"[apply] push_url: a local repository that is not there"
chmod 640 "$T/secret"
PW_OFF=$'[patchwork]\nurl = http://127.0.0.1:9/\nproject = p\ntoken_file = '"$T/secret"
bad "$PW_OFF" "\\[patchwork\\] token_file: .*secret may be read by its group \\(mode 0640\\)" \
	"[patchwork] token_file its group may read"
bad $'[ci]\nbackend = jenkins\n[ci.jenkins]\nurl = http://127.0.0.1:9/\njob = j\nuser = ci\ntoken_file = '"$T/secret" \
	"\\[ci\\.jenkins\\] token_file: .*secret may be read by its group" "[ci.jenkins] token_file"
EM=$'[email]\nenabled = true\nto = everyone\nfrom_address = ci@example.org\nsmtp_url = smtp://127.0.0.1:9\nstarttls = no\nuser = ci\npassword_file = '"$T/secret"
bad "$EM" "\\[email\\] password_file: .*secret may be read by its group" "[email] password_file"
chmod 600 "$T/secret"
good "$PW_OFF" "[patchwork] token_file of mode 0600 (no network without --online)"
good "$EM" "[email] password_file of mode 0600"
bad "$PW_OFF"$'\nca_file = '"$T/nope.pem" "patchwork: \\[patchwork\\] ca_file: .*nope\\.pem is not a file" \
	"[patchwork] ca_file: the reader's one line"
is "$(printf '%s\n' "$err" | wc -l)" 1 "... and no second line for it"
bad "$EM"$'\nca_file = '"$T/nope.pem" "\\[email\\] ca_file: .*nope\\.pem is not a file" \
	"[email] ca_file: the reader's"
is "$(printf '%s\n' "$err" | wc -l)" 1 "... one line"


# [ci.local]
bad "$A$CI"$'\nbwrap = /nonexistent/bwrap' "\\[ci\\.local\\] bwrap: /nonexistent/bwrap is not a program" \
	"[ci.local] bwrap that is not there"
good "$A$CI"$'\nbwrap = /nonexistent/bwrap\nsandbox = off' "... not needed with sandbox = off"
bad "$A$CI"$'\nro_binds = /usr; '"$T/gone"':/opt/gone' "\\[ci\\.local\\] ro_binds: .*gone: No such file" \
	"[ci.local] ro_binds whose source is missing"
good "$A$CI"$'\nro_binds = /usr' "[ci.local] ro_binds that are there"

# the instance's: [daemon], [upstream], [report]
bad $'[daemon]\nmaildirs = '"$T/md; $T/nomd" "\\[daemon\\] maildirs: .*nomd does not exist" \
	"[daemon] maildirs: one missing"
bad $'[daemon]\nmaildirs = '"$T/notmd" "\\[daemon\\] maildirs: .*notmd is not a maildir \\(no new/\\)" \
	"[daemon] maildirs: a directory that is no maildir"
good $'[daemon]\nmaildirs = '"$T/md; $T/md2" "[daemon] maildirs, listed with blanks"
bad $'[daemon]\ninboxes = '"$T/plain" "\\[daemon\\] inboxes: .*plain is not a public-inbox archive" \
	"[daemon] inboxes: a directory that is none"
good $'[daemon]\ninboxes = '"$T/inbox2; $T/inbox1.git" "[daemon] inboxes: v2 (git/N.git) and v1"
U=$'[upstream]\nrepos = '"$T/up.git"
bad $'[upstream]\nrepos = '"$T/gone.git" "\\[upstream\\] repos: .*gone\\.git does not exist" \
	"[upstream] repos that do not exist"
good "$U" "[upstream] repos with its remote (fetch on)"
bad "$U"$'\nremote = elsewhere' "\\[upstream\\] remote: .*up\\.git has no remote elsewhere" \
	"[upstream] remote missing"
bad "$U"$'\nfetch = false\nbranches = master; nope' "\\[upstream\\] branches: no branch nope in .*up\\.git \\(and fetch is off\\)" \
	"[upstream] branches missing without fetch"
good "$U"$'\nfetch = false\nbranches = master; next' "[upstream] branches there without fetch"
bad $'[upstream]\nfetch = maybe\nrepos = '"$T/up.git" "\\[upstream\\] fetch: 'maybe' is not true or false" \
	"[upstream]'s own reader"
bad $'[report]\nhtml_dir = '"$T/afile" "\\[report\\] html_dir: .*afile is not a directory" \
	"[report] html_dir that is a file"
bad $'[report]\narchive_url = https://lore.kernel.org/{list}/{msgid}' \
	"\\[report\\] archive_url: unknown placeholder \\{list\\}" "[report] archive_url"
bad $'[report]\narchive_url = https://lore.kernel.org/' \
	"\\[report\\] archive_url: no \\{msgid\\}" "[report]'s own reader"
good $'[report]\nhtml_dir = '"$T/site-parent/site/html" "[report] html_dir to be made in a directory there"

# projects: each one's repository and branches
PR=$'[project net]\nlists = netdev.vger.kernel.org\napply.repo = '"$R"$'\napply.branches = next\n[project rtc]\nlists = linux-rtc.vger.kernel.org\napply.repo = '"$T/rtc.git"
bad "$PR" "project rtc: \\[apply\\] repo: .*rtc\\.git does not exist" "a project's repository"
good "${PR/rtc.git/repo}" "each project's repository there"
bad "${PR/rtc.git/repo}"$'\napply.branches = rtc-next' "project rtc: \\[apply\\] branches: no branch rtc-next" \
	"a project's branches"

# --values-only: the names and values only (a file for another machine)
check $'[apply]\nrepo = /srv/git/linux.git\n[daemon]\nmaildirs = /srv/mail/x' --values-only
is "$rc/$out" "0/ok" "--values-only: paths of another machine are not looked at"
bad $'[apply]\nrepo = /srv/git/linux.git\nmax_files = 10k' "\\[apply\\] max_files: '10k' is not a whole number" \
	"--values-only: the values are" --values-only
bad $'[upstream]\nfetch = maybe\nrepos = /srv/up.git' "\\[upstream\\] fetch: 'maybe'" \
	"--values-only: [upstream]'s reader too" --values-only
bad $'[report]\narchive_url = https://x/' "\\[report\\] archive_url: no \\{msgid\\}" \
	"--values-only: [report]'s reader too" --values-only

# --json lists them
check $'[apply]\nrepo = '"$T/gone"$'\n[daemon]\nmaildirs = '"$T/notmd" --json
is "$rc" 78 "--json: exit 78"
is "$(jq_py "$T/out" '[d["ok"], d["online"], [p["kind"] for p in d["problems"]], len(d["errors"])]')" \
	'[false, false, ["config", "config"], 2]' "--json: ok false, each problem with its kind"

ok "nothing made in the state directory" test ! -e "$CS"
is "$(tree_state)" "$before" "the repositories, inboxes and maildirs are as they were"

# ---- as a user who may not read or write ----------------------------------

if unpriv_init; then
	UC() {	# UC CONF: config check as the unprivileged user
		printf '%s\n' "$1" >"$T/conf"
		chmod 644 "$T/conf"
		as_unpriv "$PATCHGATE" --state "$CS" config check --config "$T/conf" \
			>"$T/out" 2>"$T/err"
		rc=$?
		err=$(cat "$T/err")
	}
	UC "$A$P"
	is "$rc" 78 "unprivileged: exit 78"
	like "$err" "\\[apply\\] push_password_file: user $UNPRIV_USER may not read .*pw \\(Permission denied\\)" \
		"a secret this user may not read: said so"
	like "$err" "\\[apply\\] repo: .*repo is owned by uid 0, not by user $UNPRIV_USER" \
		"a repository of another owner (which libgit2 refuses, as git does)"
	mkdir -p "$T/rootonly" && chmod 755 "$T/rootonly"
	UC $'[ci.local]\nstep.build = make\nsandbox = off\nwork_root = '"$T/rootonly"
	like "$err" "\\[ci\\.local\\] work_root: user $UNPRIV_USER may not write in .*rootonly" \
		"a work_root this user may not write in"
	UC $'[report]\nhtml_dir = '"$T/rootonly/site"
	like "$err" "\\[report\\] html_dir: .*rootonly/site does not exist, and user $UNPRIV_USER may not make it in .*rootonly" \
		"a site this user may not make"
	chmod 600 "$T/ca"
	UC "$EM"$'\nca_file = '"$T/ca"
	like "$err" "\\[email\\] ca_file: user $UNPRIV_USER may not read .*ca$" \
		"a CA file this user may not read"
	chmod 700 "$R"
	UC "$A"
	like "$err" "\\[apply\\] repo: .*repo: Permission denied \\(user $UNPRIV_USER may not read it\\)" \
		"a repository this user may not read"
	chmod 755 "$R"
else
	skip "unprivileged checks" "not root, or no setpriv"
fi

# ---- --online ---------------------------------------------------------------

cat >"$T/pw-seed.json" <<'EOF'
{"users": [{"username": "ci", "email": "ci@example.org", "token": "tok-ci"},
           {"username": "other", "email": "o@example.org", "token": "tok-other"}],
 "projects": [{"linkname": "p", "name": "p", "listid": "p.example.org",
               "listemail": "p@example.org", "maintainers": ["ci"]}],
 "series": [], "patches": []}
EOF
fake_start pw patchwork.py --seed "$T/pw-seed.json" --state "$T/pw-state.json"
PW_PID=$fake_pid PW=$fake_url
cat >"$T/jk.json" <<'EOF'
{"users": {"ci": {"token": "tok-jk"}, "pwuser": {"password": "pw-jk"},
           "blind": {"token": "tok-blind", "permissions": []}},
 "jobs": {"calc": {}, "off": {"disabled": true}, "folder/inner": {}}}
EOF
fake_start jk jenkins.py --config "$T/jk.json"
JK_PID=$fake_pid JK=$fake_url
SMTP_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" "$SRCDIR/tests/cli/smtp-auth.py" "$SMTP_PORT" ci smtp-pw "$T/smtp.log" >"$T/smtp.ready" 2>"$T/smtp.err" &
SMTP_PID=$!
smtp_start "$T/plain.mbox"
PLAIN_PORT=$smtp_port PLAIN_PID=$smtp_pid
TAP_CLEANUP='kill $PW_PID $JK_PID $SMTP_PID $PLAIN_PID 2>/dev/null; wait 2>/dev/null'
for _ in $(seq 100); do [ -s "$T/smtp.ready" ] && break; sleep 0.05; done
[ -s "$T/smtp.ready" ] || bail "smtp-auth.py did not start: $(cat "$T/smtp.err")"
DEAD=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Patchwork: the project (404), the token (403), told apart
printf 'tok-ci\n' >"$T/pw-token" && printf 'tok-bad\n' >"$T/pw-bad" &&
printf 'tok-other\n' >"$T/pw-other" && chmod 600 "$T/pw-token" "$T/pw-bad" "$T/pw-other"
PWC() { printf '[patchwork]\nurl = %s/\nproject = %s\ntoken_file = %s\n' "$1" "$2" "$3"; }
good "$(PWC "$PW" p "$T/pw-token")" "--online: Patchwork project and token" --online
bad "$(PWC "$PW" nope "$T/pw-token")" "\\[patchwork\\] project: no project nope at .* \\(404" \
	"--online: a Patchwork project that does not exist" --online
bad "$(PWC "$PW" p "$T/pw-bad")" "\\[patchwork\\] token_file: GET .*/users/.*: Patchwork does not accept our API token \\(403 \"Invalid token\\.\"\\)" \
	"--online: a token Patchwork refuses (403)" --online
bad "$(PWC "$PW" p "$T/pw-other")" "\\[patchwork\\] token_file: the token's user is not a maintainer of project p" \
	"--online: a token of a user who is no maintainer" --online
good "$(PWC "$PW" p "$T/pw-bad")" "without --online the server is not asked"
CODE=75 bad "$(PWC "http://127.0.0.1:$DEAD" p "$T/pw-token")" "\\[patchwork\\] url: GET .*: (Failed to connect|Couldn't connect)" \
	"--online: Patchwork unreachable: 75" --online
# a server that answers 200, but not Patchwork's JSON: 69
mkdir -p "$T/www/api/1.3/projects/p" && printf '<html>hello</html>\n' >"$T/www/api/1.3/projects/p/index.html"
WWW_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" -m http.server -b 127.0.0.1 -d "$T/www" "$WWW_PORT" >/dev/null 2>&1 &
WWW_PID=$!
TAP_CLEANUP='kill $PW_PID $JK_PID $SMTP_PID $PLAIN_PID $WWW_PID 2>/dev/null; wait 2>/dev/null'
for _ in $(seq 100); do "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$WWW_PORT" 2>/dev/null && break; sleep 0.05; done
CODE=69 bad "$(PWC "http://127.0.0.1:$WWW_PORT" p "$T/pw-token")" "\\[patchwork\\] url: GET .*is not JSON" \
	"--online: a server that is no Patchwork: 69" --online
check "$(PWC "http://127.0.0.1:$DEAD" p "$T/pw-token")" --online --json
is "$(jq_py "$T/out" '[d["ok"], d["online"], [p["kind"] for p in d["problems"]]]')" \
	'[false, true, ["transient"]]' "--online --json: the kind of each problem"
check "$(PWC "http://127.0.0.1:$DEAD" p "$T/pw-token")"$'\n[apply]\nrepo = '"$T/gone" --online
is "$rc" 78 "--online: a configuration problem with a transient one: 78"

# Jenkins: the server, the credentials, the job, a crumb
printf 'tok-jk\n' >"$T/jk-token" && printf 'pw-jk\n' >"$T/jk-pw" &&
printf 'wrong\n' >"$T/jk-wrong" && printf 'tok-blind\n' >"$T/jk-blind" &&
chmod 600 "$T/jk-token" "$T/jk-pw" "$T/jk-wrong" "$T/jk-blind"
JKC() { printf '[ci]\nbackend = jenkins\n[ci.jenkins]\nurl = %s\njob = %s\nuser = %s\n%s = %s\nrequest_timeout = 5\n' "$1" "$2" "$3" "${5:-token_file}" "$4"; }
good "$(JKC "$JK" calc ci "$T/jk-token")" "--online: Jenkins, its job, an API token" --online
good "$(JKC "$JK" calc pwuser "$T/jk-pw" password_file)" "--online: a password login, with its crumb" --online
bad "$(JKC "$JK" calc ci "$T/jk-wrong")" "\\[ci\\.jenkins\\] token_file: Jenkins refused user ci's credentials \\(GET /api/json: 401\\)" \
	"--online: credentials Jenkins refuses (401)" --online
bad "$(JKC "$JK" calc blind "$T/jk-blind")" "\\[ci\\.jenkins\\] user: blind may not read /api/json \\(403" \
	"--online: a user without Overall/Read (403)" --online
bad "$(JKC "$JK" nope ci "$T/jk-token")" "\\[ci\\.jenkins\\] job: no job nope \\(GET /job/nope/api/json: 404" \
	"--online: a job that does not exist (404)" --online
bad "$(JKC "$JK" off ci "$T/jk-token")" "\\[ci\\.jenkins\\] job: off is disabled" \
	"--online: a disabled job" --online
bad "$(JKC "$JK" folder ci "$T/jk-token")" "\\[ci\\.jenkins\\] job: folder is a folder, not a job" \
	"--online: a folder" --online
good "$(JKC "$JK" folder/inner ci "$T/jk-token")" "--online: a job in a folder" --online
CODE=75 bad "$(JKC "http://127.0.0.1:$DEAD" calc ci "$T/jk-token")" "\\[ci\\.jenkins\\] url: GET /api/json\\?tree=mode: " \
	"--online: Jenkins unreachable: 75" --online
unlike "$err" "tok-jk" "the token is in no message"
curl -s -X POST -d '{"crumb_issuer": false}' "$JK/fake/config" >/dev/null
good "$(JKC "$JK" calc pwuser "$T/jk-pw" password_file)" "--online: a password login where CSRF protection is off (crumbIssuer 404)" --online
curl -s -X POST -d '{"down": 30}' "$JK/fake/restart" >/dev/null
CODE=75 bad "$(JKC "$JK" calc ci "$T/jk-token")" "\\[ci\\.jenkins\\] url: GET /api/json: HTTP 503" \
	"--online: Jenkins starting up (503): 75" --online

# SMTP: connect, and log in when a user is configured; nothing is sent
EMC() { printf '[email]\nenabled = true\nto = everyone\nfrom_address = ci@example.org\nsmtp_url = smtp://127.0.0.1:%s\nstarttls = no\n%s' "$1" "$2"; }
printf 'smtp-pw\n' >"$T/smtp-pw" && printf 'nope\n' >"$T/smtp-bad" && chmod 600 "$T/smtp-pw" "$T/smtp-bad"
good "$(EMC "$SMTP_PORT" "user = ci"$'\n'"password_file = $T/smtp-pw")" "--online: SMTP login accepted" --online
like "$(cat "$T/smtp.log")" "^auth ci ok$" "... the server saw the login"
bad "$(EMC "$SMTP_PORT" "user = ci"$'\n'"password_file = $T/smtp-bad")" \
	"\\[email\\] password_file: SMTP smtp://127\\.0\\.0\\.1:$SMTP_PORT.* as ci: .*\\(the server said: 535" \
	"--online: SMTP login refused (535)" --online
like "$(cat "$T/smtp.log")" "^auth ci refused$" "... refused by the server"
unlike "$err" "nope" "the password is in no message"
unlike "$(cat "$T/smtp.log")" "^mail" "no mail was sent by the checks"
good "$(EMC "$PLAIN_PORT" "")" "--online: SMTP without a login (python3 -m aiosmtpd): connect" --online
CODE=75 bad "$(EMC "$DEAD" "")" "\\[email\\] smtp_url: SMTP smtp://127\\.0\\.0\\.1:$DEAD.*" \
	"--online: SMTP server unreachable: 75" --online
is "$(find "$T/plain.mbox" -type f 2>/dev/null | wc -l)" 0 "no mail reached the plain sink"
ok "still nothing made in the state directory" test ! -e "$CS"

done_testing
