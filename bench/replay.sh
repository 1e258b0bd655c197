#!/bin/bash
# bench/replay.sh - public-inbox replay speed: `patchgate replay` of a v2
# epoch holding a generated list, against `patchgate ingest` of the same
# list as an mbox, and against git reading the epoch.
#
#   bench/replay.sh [PATCHGATE]
#
# PATCHGATE defaults to $PATCHGATE, else build/cli/patchgate.  Environment:
#   BENCH_MESSAGES  messages to generate (default 20000)
#   BENCH_SEED      gen-list.py seed (default bench)
#   BENCH_RUNS      timed runs of each command; the median is shown (default 3)
#   BENCH_CACHE     where the list and the archive are kept (default bench/.cache)
#   BENCH_TMP       where the state directories go (default $TMPDIR)
#
# The archive is NOT made by public-inbox (its -mda costs ~0.3 s a message):
# it is written with git fast-import following public-inbox's v2 layout and
# Import.pm's conventions: one commit per message on refs/heads/master of
# git/0.git, a tree holding one file "m" (the message without its mbox From_
# line, mboxrd unescaped), author = From: at the Date:, committer = the
# inbox ("bench <LIST ADDRESS>") at the newest Received:, message = the
# decoded Subject; an exact duplicate delivery is dropped, as public-inbox
# drops it.  tests/ingest/t0300-replay.sh checks replay against archives
# that public-inbox itself made.  See bench/README.md.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
pg=${1:-${PATCHGATE:-$src/build/cli/patchgate}}
n=${BENCH_MESSAGES:-20000}
seed=${BENCH_SEED:-bench}
runs=${BENCH_RUNS:-3}
cache=${BENCH_CACHE:-$here/.cache}
PY=/usr/bin/python3

[ -x "$pg" ] || { echo "bench/replay.sh: no patchgate binary at $pg (build first, or pass its path)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench/replay.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

# the list, generated once per (messages, seed, generator, git)
. "$here/lib.sh"
cached_list "$n" "$seed"

# the v2 archive, built once per list (and per version of this script)
inbox=$cache/inbox-${list##*/list-}-$(sha1sum <"$0" | cut -c1-8)
epoch=$inbox/git/0.git
if ! git -C "$epoch" rev-parse -q --verify refs/heads/master >/dev/null 2>&1; then
	echo "building a v2 archive with git fast-import (public-inbox's v2 conventions) in $inbox ..."
	rm -rf "$inbox"
	mkdir -p "$inbox/git"
	git init -q --bare -b master "$epoch"
	"$PY" - "$mbox" "$list/list.json" <<'EOF' | git -C "$epoch" fast-import --quiet --date-format=raw
import email, email.header, email.policy, email.utils, hashlib, json, re, sys

mbox, manifest = sys.argv[1:3]
addr = json.load(open(manifest))['list_address']
out = sys.stdout.buffer

def stamp(date):
    t = email.utils.parsedate_tz(date) if date else None
    if t is None:
        return '0 +0000'
    off = t[9] or 0
    sign = '-' if off < 0 else '+'
    off = abs(off)
    return '%d %s%02d%02d' % (email.utils.mktime_tz(t), sign, off // 3600, off % 3600 // 60)

def decoded(v):
    try:
        return str(email.header.make_header(email.header.decode_header(v or '')))
    except Exception:
        return v or ''

def messages(path):
    """mboxrd: From_ lines split (as git mailsplit: "From " + a time),
    ">From " unescaped by one '>'."""
    sep = re.compile(rb'^From \S+ .*\d\d:\d\d:\d\d')
    cur = None
    with open(path, 'rb') as f:
        for line in f:
            if sep.match(line):
                if cur is not None:
                    yield b''.join(cur)
                cur = []
                continue
            if cur is None:
                continue
            if re.match(rb'^>+From ', line):
                line = line[1:]
            cur.append(line)
    if cur is not None:
        yield b''.join(cur)

seen = set()
mark = 0
for raw in messages(mbox):
    # the mbox writer ends each message with a blank line before the next From_
    if raw.endswith(b'\n\n'):
        raw = raw[:-1]
    h = hashlib.sha1(raw).digest()
    if h in seen:
        continue            # public-inbox keeps one copy of an exact duplicate
    seen.add(h)
    head = email.message_from_bytes(raw.split(b'\n\n', 1)[0] + b'\n\n')
    name, mail = email.utils.parseaddr(decoded(head.get('From')))
    subj = ' '.join(decoded(head.get('Subject', '(no subject)')).split()).encode()
    recv = head.get_all('Received') or []
    ct = stamp(recv[0].rsplit(';', 1)[-1].strip()) if recv else stamp(head.get('Date'))
    author = ('%s <%s>' % (name.replace('<', '').replace('>', ''), mail.replace('<', '').replace('>', ''))).encode()
    mark += 1
    out.write(b'blob\nmark :%d\ndata %d\n' % (mark, len(raw)) + raw + b'\n')
    out.write(b'commit refs/heads/master\n')
    out.write(b'author ' + author + b' ' + stamp(head.get('Date')).encode() + b'\n')
    out.write(('committer bench <%s> %s\n' % (addr, ct)).encode())
    out.write(b'data %d\n' % (len(subj) + 1) + subj + b'\n\n')
    out.write(b'deleteall\nM 100644 :%d m\n\n' % mark)
EOF
	git -C "$epoch" gc -q --prune=now
fi
commits=$(git -C "$epoch" rev-list --count refs/heads/master)
cat "$mbox" >/dev/null
git -C "$epoch" cat-file --batch-all-objects --batch >/dev/null	# page-cache the pack

tmp=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/bench-replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

msgs=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["counts"]["messages"])' "$list/list.json")
bytes=$(stat -c %s "$mbox")

bench_name=bench/replay.sh

json() {	# json KEY: from the last command's stdout
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/stdout" "$1"
}

printf 'list:       %d messages, %.1f MB (%s)\n' "$msgs" "$(calc "$bytes / 1000000")" "$mbox"
printf 'archive:    %d commits in %s, %.1f MB packed\n' "$commits" "$epoch" \
	"$(calc "$(du -sk "$epoch" | cut -f1) / 1024")"
printf '            built by git fast-import in public-inbox v2 conventions, not by public-inbox\n'
printf 'patchgate:  %s\n' "$("$pg" --version 2>/dev/null || echo "$pg")"
printf 'runs:       %d of each; median wall time, largest peak RSS; state in %s\n\n' "$runs" \
	"$(df --output=fstype "$tmp" | tail -n 1)"

# floors: listing the commits, and reading every object of the epoch
timed "$tmp/out" "git log" sh -c 'git -C "$1" log --format=%H refs/heads/master | wc -l' sh "$epoch"
gl_wall=$wall
printf 'git log --format=%%H | wc -l:        %6.2f s  %8.0f commits/s  peak RSS %5.1f MB\n' \
	"$wall" "$(calc "$commits / $wall")" "$(calc "$rss / 1024")"
timed "$tmp/out" "git cat-file" sh -c 'git -C "$1" cat-file --batch-all-objects --batch >/dev/null' sh "$epoch"
cf_wall=$wall
printf 'git cat-file --batch-all-objects:   %6.2f s  %8.0f commits/s  peak RSS %5.1f MB\n' \
	"$wall" "$(calc "$commits / $wall")" "$(calc "$rss / 1024")"

timed "$tmp/out" "patchgate replay" "$pg" --state "$tmp/out/state" replay --json "$inbox"
rp_wall=$wall rp_rss=$rss
rp_stored=$(json stored) rp_read=$(json read)
printf 'patchgate replay:                   %6.2f s  %8.0f msgs/s    peak RSS %5.1f MB  (%d read, %d stored)\n' \
	"$rp_wall" "$(calc "$rp_read / $rp_wall")" "$(calc "$rp_rss / 1024")" "$rp_read" "$rp_stored"

timed "$tmp/out" "patchgate ingest" "$pg" --state "$tmp/out/state" ingest --json "$mbox"
in_wall=$wall in_rss=$rss
in_stored=$(json stored) in_read=$(json read)
printf 'patchgate ingest (the mbox):        %6.2f s  %8.0f msgs/s    peak RSS %5.1f MB  (%d read, %d stored)\n' \
	"$in_wall" "$(calc "$in_read / $in_wall")" "$(calc "$in_rss / 1024")" "$in_read" "$in_stored"

# an up-to-date archive: what a cron job pays when nothing came
"$pg" --state "$tmp/noop" replay "$inbox" >/dev/null 2>&1
timed "$tmp/out2" "patchgate replay, nothing new" "$pg" --state "$tmp/noop" replay --json "$inbox"
printf 'patchgate replay, nothing new:      %6.3f s\n' "$wall"

echo
printf 'replay / ingest: %.2fx the time, %.2fx the peak RSS\n' \
	"$(calc "$rp_wall / $in_wall")" "$(calc "$rp_rss / $in_rss")"
printf '  target: replay not slower than ingest [%s]\n' "$(verdict "$rp_wall <= $in_wall")"
printf 'replay / git log: %.1fx, replay / git cat-file: %.1fx\n' \
	"$(calc "$rp_wall / ($gl_wall + 0.0001)")" "$(calc "$rp_wall / ($cf_wall + 0.0001)")"
