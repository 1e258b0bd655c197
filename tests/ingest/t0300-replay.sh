#!/bin/bash
# t0300-replay - `patchgate replay` of public-inbox archives made by Debian's
# public-inbox (1.9) tools, checked against what the archive holds.
#
# The ground truth is read from git, not from the input: truth.py walks the
# epochs oldest first and lists the Message-ID (the first valid one, as
# patchgate takes it) of every message still live: v2, each non-empty "m"
# blob not removed by a later "d" with the same blob; v1, the blobs the
# history leaves in the tree.  public-inbox itself decides what the archive
# keeps (it drops an exact duplicate delivery, and appends a generated
# Message-ID to a message that reuses one with other content, which
# patchgate must then store as an id-conflict).
#
#   a  v2 inbox (public-inbox-init -V2, public-inbox-mda --no-precheck):
#      replay, replay again (nothing new), more mail, replay (only it)
#   b  public-inbox-learn rm: the "d" commit deletes the message
#   c  --limit, then the rest; --since (a future date, a date in between)
#   d  a bare epoch given directly (git clone --mirror of git/0.git)
#   e  v1 inbox (public-inbox-init -V1): replay, one more message, a removal
#      (public-inbox-learn --all rm), a rewound branch (purge takes no v1)
#   f  eleven epochs (0 copied from a, others by git fast-import in v2
#      conventions, 3..9 empty): read in numeric epoch order
#   g  rewritten history: public-inbox-purge (old commits pruned, an empty
#      "m" left), and a branch rewound past the "d" of b with new commits
#      (old commits still there): what the new history no longer holds is
#      deleted from the store, what it holds again is added back
#   h  replay SIGKILLed 12 times at short delays, then a full replay
#   i  ../shared/corpus/linux-i3c.mbox imported into a v2 inbox, replayed
#
# Public-inbox-mda takes ~0.3 s per message (perl and public-inbox's
# modules loaded each time), so the first 12 mails of a and e and the big
# archives (h, i) are imported by pi-bulk.pl, which runs the code of
# public-inbox-mda (PublicInbox::Filter::Base, MDA's list headers,
# InboxWritable->importer->add) for all messages in one process and one
# inbox.lock hold, then ->done: the commits it makes are the ones a
# public-inbox-mda per message makes (the same trees and commit ids, v1
# and v2); every later delivery to a, e and g is public-inbox-mda's.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

for t in public-inbox-init public-inbox-mda public-inbox-learn public-inbox-purge perl; do
	command -v $t >/dev/null || skip_all "needs $t (Debian package public-inbox)"
done

T=$TAP_TMP
PI=$T/pi
mkdir -p "$PI" "$T/bin"
export PI_CONFIG=$PI/config PI_EMERGENCY=$PI/emergency
# public-inbox-learn runs spamc whatever publicinboxmda.spamcheck says
printf '#!/bin/sh\nexec cat\n' >"$T/bin/spamc"
chmod +x "$T/bin/spamc"
export PATH=$T/bin:$PATH
LIST=tinyproj@lists.example.org     # gen-list.py's list address

# ---- helpers ---------------------------------------------------------------

cat >"$T/truth.py" <<'EOF'
# truth.py REPO... - the Message-IDs of the live messages of the given
# epochs (or one v1 repository), oldest first, one per line.
import subprocess, sys

EMPTY = 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391'

def git(repo, *args, data=None):
    return subprocess.run(['git', '-C', repo] + list(args), input=data,
                          stdout=subprocess.PIPE, check=True).stdout

def valid(i):
    return 0 < len(i) <= 995 and all(32 < ord(c) < 127 and c not in '<>' for c in i)

def msgid(raw):
    """patchgate's rule (parse.c find_msgid): the first Message-ID header
    holding an ID: its first valid <...> token (innermost '<', blanks
    removed), else the bare value when it has no '<'."""
    text = raw.decode('utf-8', 'replace').replace('\r\n', '\n')
    head = text.split('\n\n', 1)[0]
    vals, cur = [], None
    for line in head.split('\n'):
        if line[:1] in (' ', '\t') and cur is not None:
            vals[-1][1] += line
            continue
        name, sep, val = line.partition(':')
        vals.append([name.strip().lower(), val] if sep else ['', ''])
        cur = 1
    for name, val in vals:
        if name != 'message-id':
            continue
        p = 0
        while True:
            a = val.find('<', p)
            if a < 0:
                break
            b = val.find('>', a + 1)
            if b < 0:
                break
            inner = val[val.rfind('<', a, b) + 1:b]
            tok = ''.join(inner.split())
            p = b + 1
            if valid(tok):
                return tok
        if '<' not in val and valid(val.strip()):
            return val.strip()
    return None

live = []            # [blob, msgid] in the order added
for repo in sys.argv[1:]:
    if subprocess.run(['git', '-C', repo, 'rev-parse', '-q', '--verify', 'HEAD'],
                      stdout=subprocess.DEVNULL).returncode != 0:
        continue     # an empty epoch
    log = git(repo, 'log', '--reverse', '--topo-order', '--root', '--raw',
              '--no-abbrev', '--no-renames', '--format=commit %H').decode()
    ops = []         # (op, path, blob)
    for line in log.split('\n'):
        if not line.startswith(':'):
            continue
        meta, path = line.split('\t', 1)
        f = meta.split()
        ops.append((f[4], path, f[3] if f[4] != 'D' else f[2]))
    blobs = sorted({b for _, _, b in ops if b != EMPTY})
    ids = {}
    if blobs:
        out = git(repo, 'cat-file', '--batch', data=''.join(b + '\n' for b in blobs).encode())
        pos = 0
        while pos < len(out):
            nl = out.index(b'\n', pos)
            oid, _, size = out[pos:nl].decode().split()
            body = out[nl + 1:nl + 1 + int(size)]
            pos = nl + 1 + int(size) + 1
            ids[oid] = msgid(body)
    v2 = any(p in ('m', 'd') for _, p, _ in ops)
    state = {}       # v1: path -> entry in live
    for op, path, blob in ops:
        if v2:
            if path == 'm' and op in 'AM' and blob != EMPTY:
                live.append([blob, ids[blob]])
            elif path == 'd' and op in 'AM':
                for e in reversed(live):
                    if e[0] == blob:
                        live.remove(e)
                        break
        else:
            if op in 'MD' and path in state:
                live.remove(state.pop(path))
            if op in 'AM':
                state[path] = [blob, ids[blob]]
                live.append(state[path])
for blob, mid in live:
    print(mid)
EOF

cat >"$T/fi.py" <<'EOF'
# fi.py REPO NAME ADDRESS FILE... - appends one commit per message FILE to
# the bare v2 epoch REPO (made if missing) with git fast-import, following
# public-inbox's Import.pm: the blob is the message (no mbox From_ line),
# the tree holds only "m", author = From (name, address) at the Date:,
# committer = "NAME <ADDRESS>" at the newest Received: (else the Date:),
# message = the decoded Subject.
import email, email.header, email.utils, os, subprocess, sys

repo, name, addr = sys.argv[1:4]
if not os.path.isdir(repo):
    subprocess.run(['git', 'init', '-q', '--bare', '-b', 'master', repo], check=True)
has_tip = subprocess.run(['git', '-C', repo, 'rev-parse', '-q', '--verify', 'refs/heads/master'],
                         stdout=subprocess.DEVNULL).returncode == 0

def stamp(date):
    t = email.utils.parsedate_tz(date) if date else None
    if t is None:
        return '0 +0000'
    off = t[9] or 0
    sign = '-' if off < 0 else '+'
    off = abs(off)
    return '%d %s%02d%02d' % (email.utils.mktime_tz(t), sign, off // 3600, off % 3600 // 60)

def decoded(v):
    return str(email.header.make_header(email.header.decode_header(v or '')))

out = []
for i, f in enumerate(sys.argv[4:]):
    raw = open(f, 'rb').read()
    if raw.startswith(b'From '):
        raw = raw.split(b'\n', 1)[1]
    m = email.message_from_bytes(raw)
    aname, aaddr = email.utils.parseaddr(decoded(m.get('From')))
    subj = ' '.join(decoded(m.get('Subject', '(no subject)')).split()).encode()
    recv = m.get_all('Received') or []
    ct = stamp(recv[0].rsplit(';', 1)[-1].strip()) if recv else stamp(m.get('Date'))
    author = ('%s <%s>' % (aname.replace('<', '').replace('>', ''), aaddr)).encode()
    out.append(b'blob\nmark :%d\ndata %d\n' % (2 * i + 1, len(raw)) + raw + b'\n')
    out.append(b'commit refs/heads/master\nmark :%d\n' % (2 * i + 2))
    out.append(b'author ' + author + b' ' + stamp(m.get('Date')).encode() + b'\n')
    out.append(('committer %s <%s> %s\n' % (name, addr, ct)).encode())
    out.append(b'data %d\n' % (len(subj) + 1) + subj + b'\n\n')
    if i == 0 and has_tip:
        out.append(b'from refs/heads/master^0\n')
    out.append(b'deleteall\nM 100644 :%d m\n\n' % (2 * i + 1))
subprocess.run(['git', '-C', repo, 'fast-import', '--quiet', '--date-format=raw'],
               input=b''.join(out), check=True)
EOF

cat >"$T/pi-bulk.pl" <<'EOF'
# pi-bulk.pl ADDRESS FILE... - what `public-inbox-mda --no-precheck` does
# for each FILE (filter, list headers, importer->add), in one process.
use strict;
use warnings;
use PublicInbox::Eml;
use PublicInbox::MDA;
use PublicInbox::Config;
use PublicInbox::InboxWritable;
use PublicInbox::Filter::Base;
my $addr = shift;
my $ibx = PublicInbox::Config->new->lookup($addr) or die "no inbox for $addr\n";
$ibx = PublicInbox::InboxWritable->new($ibx);
$ibx->{filter} ||= 'PublicInbox::Filter::Base';
my $filter = $ibx->filter;
my $im = $ibx->importer(0);
my ($added, $dropped) = (0, 0);
for my $f (@ARGV) {
	open my $fh, '<', $f or die "$f: $!\n";
	my $str = do { local $/; <$fh> };
	$str =~ s/\A[\r\n]*From [^\r\n]*\r?\n//s;
	my $eml = PublicInbox::Eml->new($str);
	my $ret = $filter->delivery($eml);
	if (ref $ret) {
		$eml = $ret;
	} else {
		warn "$f: filtered out ($ret)\n";
		$dropped++;
		next;
	}
	PublicInbox::MDA->set_list_headers($eml, $ibx);
	if (defined $im->add($eml)) { $added++ } else { $dropped++ }
}
$im->done;
print "added $added, not added $dropped\n";
EOF

# pi_init -V2|-V1 NAME ADDRESS: a new inbox $PI/NAME
pi_init() {
	public-inbox-init "$1" -L basic "$2" "$PI/$2" "http://localhost/$2" "$3" &&
	git config -f "$PI_CONFIG" publicinboxmda.spamcheck none
}

# bulk ADDRESS FILE...: all in one pi-bulk.pl, each must be added
bulk() {
	perl "$T/pi-bulk.pl" "$@" >"$T/bulk.out" &&
	grep -qx "added $(($# - 1)), not added 0" "$T/bulk.out"
}

# mda ADDRESS FILE...: one public-inbox-mda per message
mda() {
	local to=$1 f
	shift
	for f; do
		ORIGINAL_RECIPIENT=$to public-inbox-mda --no-precheck <"$f" || return 1
	done
}

truth() {
	"$PY" "$T/truth.py" "$@"
}

# replay STATE ARG...: the JSON summary in $T/r.json, stderr in $T/r.err
replay() {
	local s=$1
	shift
	pg --state "$s" replay --json "$@" >"$T/r.json" 2>"$T/r.err"
}

# summ: the counters of $T/r.json, "key=value ..."
summ() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%s" % (k, json.dumps(d[k])) for k in
      ["epochs", "commits", "skipped", "limited", "rewritten", "read",
       "stored", "duplicates", "conflicts", "rejected", "deleted"]))
' "$T/r.json"
}

# expect KEY=VALUE...: summ's line with these values, the rest 0 (epochs 1)
expect() {
	"$PY" -c '
import sys
d = dict(epochs=1, commits=0, skipped=0, limited="false", rewritten=0, read=0,
         stored=0, duplicates=0, conflicts=0, rejected=0, deleted=0)
for a in sys.argv[1:]:
    k, v = a.split("=")
    assert k in d, k
    d[k] = v
print(" ".join("%s=%s" % kv for kv in d.items()))
' "$@"
}

# list_nums STATE: the stored Message-IDs in storage order (of num)
list_nums() {
	pg --state "$1" msg list --json | "$PY" -c '
import json, sys
for m in sorted(json.load(sys.stdin)["messages"], key=lambda m: m["num"]):
    print(m["msgid"])
'
}

# flagged STATE: the Message-IDs flagged id-conflict, sorted
flagged() {
	pg --state "$1" msg list --json | "$PY" -c '
import json, sys
for m in json.load(sys.stdin)["messages"]:
    if "id-conflict" in m["flags"]:
        print(m["msgid"])
' | sort
}

# reused: of the Message-IDs on stdin, those given more than once, each
# as often as it is given (what flagged must print)
reused() {
	sort | uniq -D
}

count_store() {
	pg --state "$1" store info --json | jq_py /dev/stdin 'd["messages"]'
}

# ---- the list ---------------------------------------------------------------

ok "gen-list.py makes a list" gen_list 30 300 "$T/gen" || bail "cannot generate the list"
mkdir -p "$T/msgs"
git mailsplit --mboxrd -o"$T/msgs" "$T/gen/list.mbox" >/dev/null || bail "git mailsplit failed"
msg() {		# msg INDEX: the file of the message with this manifest index
	printf '%s/msgs/%04d' "$T" $(($1 + 1))
}
# the two special cases: a duplicate delivery and a reused Message-ID
read -r dup dup_of conf conf_of < <(jq_py "$T/gen/list.json" '" ".join(str(x) for x in [
	[m["index"] for m in d["messages"] if m.get("duplicate_of") is not None][0],
	[m["duplicate_of"] for m in d["messages"] if m.get("duplicate_of") is not None][0],
	[m["index"] for m in d["messages"] if m.get("id_conflict")][0],
	[m["conflicts_with"] for m in d["messages"] if m.get("id_conflict")][0]])')
diag "duplicate: $dup (of $dup_of), reused Message-ID: $conf (of $conf_of)"
[ "$dup_of" -ge 12 ] && [ "$conf_of" -ge 12 ] || bail "the special cases are among the first 12 messages"

# ---- a: a v2 inbox ----------------------------------------------------------

A=$PI/a
EA=$A/git/0.git
ok "public-inbox-init -V2" pi_init -V2 a "$LIST" || bail "public-inbox-init failed"
S=$T/sa
# an inbox that has no message yet
replay "$S" "$A"
is "$?" 0 "replay of an empty v2 inbox exits 0"
is "$(summ)" "$(expect epochs="$(ls -d "$A"/git/*.git 2>/dev/null | wc -l)")" "an empty inbox: nothing read"
rm -rf "$S"
replay "$S" "$T/gen"
is "$?" 65 "replay of a directory that is no archive fails (EX_DATAERR)"
like "$(cat "$T/r.err")" "is not a public-inbox archive" "and says so"
rm -rf "$S"

first=()
for i in $(seq 0 11); do first+=("$(msg "$i")"); done
ok "pi-bulk.pl delivers 12 messages" bulk "$LIST" "${first[@]}"
is "$(git -C "$EA" rev-list --count HEAD)" 12 "the epoch has 12 commits"
truth "$EA" >"$T/a.ids"
is "$(wc -l <"$T/a.ids")" 12 "the archive holds 12 messages"

# replayed by a relative path: the references must not depend on the cwd
(cd "$PI" && pg --state "$S" replay --json a >"$T/r.json" 2>"$T/r.err")
is "$?" 0 "replay (relative path) exits 0"
is "$(summ)" "$(expect commits=12 read=12 stored=12)" "first replay: 12 commits, 12 messages stored"
is "$(store_msgids "$S")" "$(sort "$T/a.ids")" "the store holds exactly the archive's Message-IDs"
is "$(list_nums "$S")" "$(cat "$T/a.ids")" "in archive order"
is "$(count_store "$S")" 12 "store info: 12 messages"

# one message in full, shown from another directory
c5=$(git -C "$EA" rev-list --reverse HEAD | sed -n 5p)
blob=$(git -C "$EA" rev-parse "$c5:m")
id5=$(sed -n 5p "$T/a.ids")
(cd / && pg --state "$S" msg show "<$id5>" --json) >"$T/show.json"
is "$?" 0 "msg show of the fifth message"
is "$(jq_py "$T/show.json" 'd["raw"]["location"]')" git-blob "its raw bytes are a git blob"
is "$(jq_py "$T/show.json" 'd["raw"]["ref"]')" "$(realpath "$EA")
$blob" "its reference: the epoch's absolute path and the blob"
is "$(jq_py "$T/show.json" 'd["raw"]["size"]')" "$(git -C "$EA" cat-file -s "$blob")" "its size: the blob's"
is "$(jq_py "$T/show.json" 'd["body"] is not None and len(d["body"]) > 0')" true \
	"the body is read back from the blob (from another working directory)"
is "$(jq_py "$T/show.json" 'd["source"]')" "public-inbox:$(realpath "$EA")" "source: the epoch"

replay "$S" "$A"
is "$(summ)" "$(expect)" "replay again: no new commit, nothing read"

# more mail: two ordinary messages, the first copy of the duplicate and the
# duplicate itself (public-inbox keeps one), the first message with the
# reused ID and the message reusing it (public-inbox appends a generated
# Message-ID to it; patchgate takes the first and flags both)
more=("$(msg 12)" "$(msg 13)" "$(msg "$dup_of")" "$(msg "$dup")" "$(msg "$conf_of")" "$(msg "$conf")")
ok "public-inbox-mda delivers 6 more" mda "$LIST" "${more[@]}"
is "$(git -C "$EA" rev-list --count HEAD)" 17 "public-inbox made 5 commits: it drops the exact duplicate"
truth "$EA" >"$T/a.ids"
replay "$S" "$A"
is "$(summ)" "$(expect commits=5 read=5 stored=5 conflicts=1)" \
	"replay reads only the 5 new commits; the reused ID is a conflict"
is "$(store_msgids "$S")" "$(sort "$T/a.ids")" "the store holds exactly the archive's Message-IDs (17)"
is "$(flagged "$S")" "$(reused <"$T/a.ids")" "the two messages with the reused ID are flagged id-conflict"
is "$(count_store "$S")" 17 "store info: 17 messages"

# ---- b: public-inbox-learn rm -----------------------------------------------

gone=$(sed -n 3p "$T/a.ids")
public-inbox-learn rm <"$(msg 2)" >"$T/learn.out" 2>&1
is "$?" 0 "public-inbox-learn rm exits 0"
is "$(git -C "$EA" ls-tree --name-only HEAD)" d "it made a 'd' commit"
truth "$EA" >"$T/a.ids"
is "$(wc -l <"$T/a.ids")" 16 "the archive holds 16 messages"
replay "$S" "$A"
is "$(summ)" "$(expect commits=1 deleted=1)" "replay: one commit, one message deleted"
is "$(store_msgids "$S")" "$(sort "$T/a.ids")" "the store holds exactly the archive's Message-IDs (16)"
is "$(store_msgids "$S" | grep -cxF -- "$gone")" 0 "the removed Message-ID is gone from msg list"
ok "msg show of the removed message fails" eval '! pg --state "$S" msg show "$gone"'

# ---- c: --limit and --since --------------------------------------------------

S=$T/sc
replay "$S" --limit 5 "$A"
is "$(summ)" "$(expect commits=5 limited=true read=5 stored=5)" "--limit 5: 5 messages, limited"
replay "$S" --limit 5 "$A"
is "$(summ)" "$(expect commits=5 limited=true read=5 stored=5)" "--limit 5 again: the next 5"
replay "$S" "$A"
# 18 commits: 17 messages and the 'd'; 10 read, the 'd' removes one of them
is "$(summ)" "$(expect commits=8 read=7 stored=7 conflicts=1 deleted=1)" "then the rest: 8 commits"
is "$(store_msgids "$S")" "$(sort "$T/a.ids")" "the store holds exactly the archive's Message-IDs"
is "$(count_store "$S")" 16 "16 messages: 5 + 5 + 7 stored, 1 deleted, none twice"
replay "$S" --limit 5 "$A"
is "$(summ)" "$(expect)" "--limit on an up-to-date store: nothing, not limited"

S=$T/sc2
replay "$S" --since 2099-01-01 "$A"
is "$(summ)" "$(expect commits=18 skipped=18)" "--since a future date: every commit skipped"
is "$(count_store "$S")" 0 "nothing stored"
replay "$S" "$A"
is "$(summ)" "$(expect)" "the skipped commits count as read: a later replay starts after them"
# a date in between: the commit time is public-inbox's (the newest Received:)
S=$T/sc3
mid=$(git -C "$EA" log --reverse --format=%ct | sort -n | sed -n 9p)
n_skip=$(git -C "$EA" log --format=%ct | awk -v t="$mid" '$1 < t' | wc -l)
n_read=$(git -C "$EA" log --format='%ct %s' | awk -v t="$mid" '$1 >= t && $2 != "rm"' | wc -l)
replay "$S" --since "$mid" "$A"
is "$(jq_py "$T/r.json" '[d["commits"], d["skipped"], d["read"]]')" "[18, $n_skip, $n_read]" \
	"--since $mid (seconds): the $n_skip commits made before are skipped, $n_read messages read"
replay "$S" --since 2020-13-45 "$A"
is "$?" 64 "--since with a bad date is a usage error (EX_USAGE)"

# ---- d: one bare epoch given directly ---------------------------------------

git clone -q --mirror "$EA" "$T/clone.git" || bail "git clone --mirror failed"
replay "$T/sd" "$T/clone.git"
is "$(summ)" "$(expect commits=18 read=17 stored=17 conflicts=1 deleted=1)" \
	"a mirror clone of the epoch: every commit read"
is "$(store_msgids "$T/sd")" "$(sort "$T/a.ids")" "the store holds the same Message-IDs as from the inbox"
replay "$T/sd" "$T/clone.git"
is "$(summ)" "$(expect)" "and nothing more the second time"

# ---- e: a v1 inbox ----------------------------------------------------------

V1=$PI/v1
ok "public-inbox-init -V1" pi_init -V1 v1 v1@lists.example.org
v1msgs=()
for i in $(seq 20 31); do v1msgs+=("$(msg "$i")"); done
ok "pi-bulk.pl delivers 12 messages to it" bulk v1@lists.example.org "${v1msgs[@]}"
truth "$V1" >"$T/v1.ids"
is "$(wc -l <"$T/v1.ids")" 12 "the v1 archive holds 12 messages"
replay "$T/se" "$V1"
is "$(summ)" "$(expect commits=12 read=12 stored=12)" "replay of the v1 inbox: 12 stored"
is "$(store_msgids "$T/se")" "$(sort "$T/v1.ids")" "exactly the archive's Message-IDs"
ok "one more message" mda v1@lists.example.org "$(msg 32)"
truth "$V1" >"$T/v1.ids"
replay "$T/se" "$V1"
is "$(summ)" "$(expect commits=1 read=1 stored=1)" "replay: only the new one"
is "$(store_msgids "$T/se")" "$(sort "$T/v1.ids")" "exactly the archive's Message-IDs (13)"
public-inbox-learn --all rm <"$(msg 25)" >"$T/learn.out" 2>&1
is "$?" 0 "public-inbox-learn --all rm of one message"
truth "$V1" >"$T/v1.ids"
is "$(wc -l <"$T/v1.ids")" 12 "the v1 archive holds 12 messages"
replay "$T/se" "$V1"
is "$(summ)" "$(expect commits=1 deleted=1)" "replay: the commit removing its blob deletes it"
is "$(store_msgids "$T/se")" "$(sort "$T/v1.ids")" "exactly the archive's Message-IDs (12)"
# a rewritten v1 history (public-inbox-purge does not take v1): the branch
# rewound by one commit, dropping the removal, and another message delivered
git -C "$V1" update-ref refs/heads/master HEAD~1
ok "one message delivered on HEAD~1" mda v1@lists.example.org "$(msg 33)"
truth "$V1" >"$T/v1.ids"
is "$(wc -l <"$T/v1.ids")" 14 "the v1 archive holds 14 messages: the removed one is back"
replay "$T/se" "$V1"
is "$(summ)" "$(expect commits=1 rewritten=1 read=2 stored=2)" \
	"replay: rewritten; the new message and the one no longer removed are added"
like "$(cat "$T/r.err")" "history was rewritten" "with a warning"
is "$(store_msgids "$T/se")" "$(sort "$T/v1.ids")" "exactly the archive's Message-IDs (14)"

# ---- f: many epochs ---------------------------------------------------------

F=$PI/f
mkdir -p "$F/git"
git clone -q --mirror "$EA" "$F/git/0.git"
fi_add() {	# fi_add EPOCH INDEX...
	local e=$1 i files=()
	shift
	for i; do files+=("$(msg "$i")"); done
	"$PY" "$T/fi.py" "$F/git/$e.git" f f@lists.example.org "${files[@]}"
}
ok "epoch 1: 5 messages by git fast-import" fi_add 1 40 41 42 43 44
ok "epoch 2: 4 messages" fi_add 2 45 46 47 48
for e in 3 4 5 6 7 8 9; do git init -q --bare "$F/git/$e.git"; done
ok "epoch 10: 3 messages (epochs 3..9 empty)" fi_add 10 49 50 51
is "$(git -C "$F/git/1.git" ls-tree --name-only HEAD)" m "a fast-import commit's tree holds 'm' only"
is "$(git -C "$F/git/1.git" log -1 --format='%cn <%ce>|%s' HEAD~4)" \
	"f <f@lists.example.org>|$(jq_py "$T/gen/list.json" 'd["messages"][40]["subject"]')" \
	"committer: the inbox; message: the subject"
epochs=()
for e in 0 1 2 3 4 5 6 7 8 9 10; do epochs+=("$F/git/$e.git"); done
truth "${epochs[@]}" >"$T/f.ids"
is "$(wc -l <"$T/f.ids")" 28 "the archive holds 16 + 5 + 4 + 3 messages"
replay "$T/sf" "$F"
is "$(summ)" "$(expect epochs=11 commits=30 read=29 stored=29 conflicts=1 deleted=1)" \
	"replay of 11 epochs: 30 commits"
is "$(list_nums "$T/sf")" "$(cat "$T/f.ids")" "messages stored in epoch order (0, 1, 2, 10), each in commit order"
ok "epoch 10 gets one more" fi_add 10 52
truth "${epochs[@]}" >"$T/f.ids"
replay "$T/sf" "$F"
is "$(summ)" "$(expect epochs=11 commits=1 read=1 stored=1)" "replay: only the new commit of epoch 10"
is "$(list_nums "$T/sf")" "$(cat "$T/f.ids")" "exactly the archive's messages, in order"

# ---- g: rewritten history ---------------------------------------------------

# g1: public-inbox-purge rewrites the epoch and prunes the old commits
G1=$PI/g1
cp -a "$A" "$G1"
git config -f "$PI_CONFIG" publicinbox.g1.inboxdir "$G1"
git config -f "$PI_CONFIG" publicinbox.g1.address g1@lists.example.org
EG=$G1/git/0.git
replay "$T/sg" "$G1"
is "$(summ)" "$(expect commits=18 read=17 stored=17 conflicts=1 deleted=1)" "replay of a copy of inbox a"
old_tip=$(git -C "$EG" rev-parse HEAD)
purged=$(sed -n 6p "$T/a.ids")
public-inbox-purge "$G1" <"$(msg 6)" >"$T/purge.out" 2>&1
is "$?" 0 "public-inbox-purge of the seventh message"
is "$(git -C "$EG" cat-file -t "$old_tip" 2>/dev/null || echo gone)" gone "the old tip is gone from the epoch"
is "$(git -C "$EG" log --format=%s | grep -c '^purged ')" 1 "a 'purged' commit holds an empty 'm'"
truth "$EG" >"$T/g.ids"
is "$(wc -l <"$T/g.ids")" 15 "the archive holds 15 messages"
replay "$T/sg" "$G1"
is "$(summ)" "$(expect commits=18 rewritten=1 deleted=1)" \
	"replay: rewritten, every commit read again, the purged message deleted, nothing added"
like "$(cat "$T/r.err")" "history was rewritten" "a warning says that the history was rewritten"
is "$(store_msgids "$T/sg")" "$(sort "$T/g.ids")" "the store holds exactly the new history's Message-IDs"
is "$(store_msgids "$T/sg" | grep -cxF -- "$purged")" 0 "the purged message is gone"
replay "$T/sg" "$G1"
is "$(summ)" "$(expect)" "replay again: nothing"
replay "$T/sg2" "$G1"
is "$(summ)" "$(expect commits=18 read=16 stored=16 conflicts=1 deleted=1)" \
	"a new store from the purged archive: the empty 'm' is no message"
is "$(store_msgids "$T/sg2")" "$(sort "$T/g.ids")" "exactly the archive's Message-IDs"

# g2: the branch rewound by two commits and two other messages delivered:
# the old commits are still in the repository (the merge base is found)
G2=$PI/g2
cp -a "$A" "$G2"
git config -f "$PI_CONFIG" publicinbox.g2.inboxdir "$G2"
git config -f "$PI_CONFIG" publicinbox.g2.address g2@lists.example.org
EG=$G2/git/0.git
replay "$T/sg3" "$G2"
git -C "$EG" log -3 --format=%s >"$T/g2.log"
base=$(git -C "$EG" rev-parse HEAD~2)
git -C "$EG" update-ref refs/heads/master "$base"
ok "two other messages delivered on HEAD~2" mda g2@lists.example.org "$(msg 60)" "$(msg 61)"
truth "$EG" >"$T/g.ids"
# 16 of the 17 messages (the 'd' dropped, the message it removed is back), 2 new
is "$(wc -l <"$T/g.ids")" 18 "the archive holds 18 messages"
replay "$T/sg3" "$G2"
# the two commits dropped: the message reusing an ID (now in no history:
# deleted) and the 'd' of (b) (its message is live again: added back)
is "$(summ)" "$(expect commits=2 rewritten=1 read=3 stored=3 deleted=1)" \
	"replay from the merge base: 2 new messages, the one the dropped 'd' deleted added back, the dropped one deleted"
like "$(cat "$T/r.err")" "rewritten since the last replay; reading again from merge base $base" \
	"the warning names the merge base"
is "$(store_msgids "$T/sg3")" "$(sort "$T/g.ids")" "the store holds exactly the new history's Message-IDs"

# ---- h: interrupted replays -------------------------------------------------

H=$PI/h
# 1200 messages: a dozen batches of 97, so that kills land between them
# (a third of that in the sanitized build, whose every step is slower:
# the same dozen batches, of 33)
nh=$(scaled 1200 400)
ok "gen-list.py makes a $nh-message list" gen_list "$nh" 301 "$T/genh" || bail "cannot generate the list"
mkdir -p "$T/hmsgs"
git mailsplit --mboxrd -o"$T/hmsgs" "$T/genh/list.mbox" >/dev/null
ok "public-inbox-init -V2" pi_init -V2 h h@lists.example.org
perl "$T/pi-bulk.pl" h@lists.example.org "$T"/hmsgs/* >"$T/bulk.out" 2>"$T/bulk.err"
is "$?" 0 "pi-bulk.pl imports them: $(cat "$T/bulk.out")"
truth "$H/git/0.git" >"$T/h.ids"
n_h=$(wc -l <"$T/h.ids")
is "$n_h" "$(git -C "$H/git/0.git" rev-list --count HEAD)" "the archive holds $n_h messages, one per commit"
printf '[ingest]\nbatch_messages = %s\n' "$(scaled 97 33)" >"$T/h.conf"
# the kill delays follow this machine's (and this build's) speed: a replay
# of one message (the fixed cost: store, walk) and a full one are timed
now() { date +%s%N; }
t0=$(now); "$PATCHGATE" --state "$T/sh0" --config "$T/h.conf" replay --limit 1 "$H" >/dev/null 2>&1
t1=$(now); rm -rf "$T/sh0"
t2=$(now); "$PATCHGATE" --state "$T/sh0" --config "$T/h.conf" replay "$H" >/dev/null 2>&1
t3=$(now); rm -rf "$T/sh0"
# each run gets the fixed cost plus 0-8 % of the rest of a full replay
"$PY" -c '
import random, sys
fixed, full = int(sys.argv[1]) / 1e9, int(sys.argv[2]) / 1e9
r = random.Random(300)
for _ in range(12):
    print("%.3f" % (fixed + r.uniform(0, 0.08) * max(full - fixed, 0.05)))
' $((t1 - t0)) $((t3 - t2)) >"$T/delays"
diag "a full replay took $(((t3 - t2) / 1000000)) ms, one of one message $(((t1 - t0) / 1000000)) ms"
last=0
bad=
extra=0		# ms added after a kill that came before anything was stored
midway=0	# kills that landed after a batch was stored, before the end
for d in $(cat "$T/delays"); do
	d=$(awk -v d="$d" -v e="$extra" 'BEGIN { printf "%.3f", d + e / 1000 }')
	timeout --foreground -s KILL "$d" "$PATCHGATE" --state "$T/sh" --config "$T/h.conf" replay "$H" >/dev/null 2>&1
	rc=$?
	n=0
	[ ! -e "$T/sh" ] || n=$(count_store "$T/sh" 2>/dev/null)
	[ -n "$n" ] && [ "$n" -ge "$last" ] && [ "$n" -le "$n_h" ] || bad="$bad $d:$n"
	diag "killed after ${d}s (exit $rc): $n stored"
	if [ "$n" = "$last" ]; then extra=$((extra + 25)); else extra=0; fi
	[ "$rc" -eq 137 ] && [ "$n" -gt "$last" ] && [ "$n" -lt "$n_h" ] && midway=$((midway + 1))
	last=$n
done
is "$bad" "" "after each SIGKILL the store opens and holds no fewer messages than before"
like "$midway" '^([1-9]|1[0-2])$' "some replays ($midway of 12) were killed after storing a part of the archive"
pg --state "$T/sh" --config "$T/h.conf" replay --json "$H" >"$T/r.json" 2>"$T/r.err"
is "$(jq_py "$T/r.json" '[d["stored"], d["duplicates"], d["read"] - d["stored"] - d["duplicates"]]')" \
	"[$((n_h - last)), 0, 0]" "the final replay stores the $((n_h - last)) messages left, none read twice"
is "$(store_msgids "$T/sh")" "$(sort "$T/h.ids")" "the store holds exactly the archive's $n_h Message-IDs"
is "$(flagged "$T/sh")" "$(reused <"$T/h.ids")" "only the archive's reused ID is flagged id-conflict"
replay "$T/sh" "$H"
is "$(summ)" "$(expect)" "and a replay after that reads nothing"

# ---- i: the linux-i3c corpus ------------------------------------------------

CORPUS=${PGATE_CORPUS:-}/linux-i3c.mbox
if [ -z "${PGATE_CORPUS:-}" ] || [ ! -f "$CORPUS" ]; then
	skip "the linux-i3c corpus" "no ${CORPUS}"
elif [ "${PGATE_TEST_SANITIZED:-0}" = 1 ]; then
	# the archive's 516 messages through the same replay code as a-h:
	# the plain build checks them; here public-inbox's import is the cost
	skip "the linux-i3c corpus" "checked by the plain build"
else
	I=$PI/i3c
	mkdir -p "$T/imsgs"
	n_mbox=$(git mailsplit --mboxrd -o"$T/imsgs" "$CORPUS")
	ok "public-inbox-init -V2" pi_init -V2 i3c linux-i3c@lists.infradead.org
	perl "$T/pi-bulk.pl" linux-i3c@lists.infradead.org "$T"/imsgs/* >"$T/bulk.out" 2>"$T/bulk.err"
	is "$?" 0 "pi-bulk.pl imports the corpus: $(cat "$T/bulk.out")"
	[ -s "$T/bulk.err" ] && diag <"$T/bulk.err"
	EI=$I/git/0.git
	truth "$EI" >"$T/i.ids"
	n_i=$(wc -l <"$T/i.ids")
	n_m=$(git -C "$EI" log --format=%H -- | wc -l)
	is "$n_i" "$n_m" "the archive holds $n_i messages ($n_mbox in the mbox), one per commit, no 'd'"
	is "$(sort -u "$T/i.ids" | wc -l)" "$n_mbox" "and every Message-ID of the mbox, once (public-inbox dropped no distinct message)"
	replay "$T/si" "$I"
	is "$(summ)" "$(expect commits="$n_m" read="$n_i" stored="$n_i")" "replay: every commit read, every message stored"
	is "$(store_msgids "$T/si")" "$(sort "$T/i.ids")" "the store holds exactly the archive's Message-IDs"
	is "$(jq_py "$T/r.json" 'd["rejected"]')" 0 "none rejected"
fi

done_testing
