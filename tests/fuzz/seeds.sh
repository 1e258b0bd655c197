#!/bin/bash
# seeds.sh DIR - make the seed corpora of the fuzz targets.
#
# Writes DIR/fuzz-mail, DIR/fuzz-subject, DIR/fuzz-mbox, DIR/fuzz-patch and
# DIR/fuzz-store-keys, a few dozen files each, all generated here (nothing
# is copied into the project):
#
#  - a small list archive from fixtures/gen-list.py (as a maildir: one
#    message per file) and the demo list from fixtures/gen-demo.sh;
#  - patches `git format-patch -M -C --binary` makes in a scratch
#    repository for the cases the apply stage cares about: a GIT binary
#    patch (literal and delta), a rename, a copy, a mode change, a
#    symlink, a gitlink, a deletion, names with spaces and non-ASCII
#    bytes, CRLF content, no newline at the end of a file;
#  - hand-written edge cases (tests/fuzz/seeds.py): empty input, binary
#    junk, a huge header line, nested multipart, a "From " line inside a
#    body, ".." and .git paths, corrupt binary patches, mbox quoting ...;
#  - when ../shared/corpus/patchwork/mail is there (or PGATE_CORPUS names
#    a corpus), its mails, read from there.
#
# Deterministic: the same files every time for a given git version.
# Needs git and /usr/bin/python3.
set -eu

out=${1:?usage: seeds.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PY=/usr/bin/python3
corpus=${PGATE_CORPUS:-$top/../shared/corpus}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pgate-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT

# git: a private configuration and fixed identities and dates
export HOME=$work GIT_CONFIG_NOSYSTEM=1 TZ=UTC LC_ALL=C
export GIT_AUTHOR_NAME="Fuzz Seed" GIT_AUTHOR_EMAIL="seed@fuzz.example.org"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
git config --global init.defaultBranch master
git config --global core.quotePath true
t=1700000000
tick() { t=$((t + 60)); export GIT_AUTHOR_DATE="$t +0000" GIT_COMMITTER_DATE="$t +0000"; }

# 1. the generated lists
"$PY" "$top/fixtures/gen-list.py" --quiet --messages 30 --seed 8 \
	--out "$work/list.mbox" --maildir "$work/list-md" --repo "$work/list.git"
bash "$top/fixtures/gen-demo.sh" "$work/demo" >/dev/null 2>&1

# 2. the patches git makes for the interesting cases
src=$work/src
git init -q "$src"
(
	cd "$src"
	printf 'one\ntwo\nthree\n' >text.txt
	printf 'no newline at the end' >nonl.txt
	printf 'dos\r\nline\r\n' >crlf.txt
	printf '#!/bin/sh\necho hi\n' >run.sh
	seq 1 200 >numbers.txt
	"$PY" -c 'import random,sys; r=random.Random(1); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(3000)))' >blob.bin
	tick; git add -A; git commit -qm "base: the files"

	"$PY" -c 'import random,sys; r=random.Random(2); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(1500)))' >new.bin
	tick; git add new.bin; git commit -qm "binary: add a file (literal)"
	"$PY" -c 'import sys; d=bytearray(open("blob.bin","rb").read()); d[100:110]=b"0123456789"; sys.stdout.buffer.write(d)' >blob.bin.tmp
	mv blob.bin.tmp blob.bin
	tick; git commit -qam "binary: change a file (delta)"
	git mv numbers.txt counted.txt
	sed -i 's/^100$/one hundred/' counted.txt
	tick; git commit -qam "rename: numbers.txt with a change"
	cp counted.txt copied.txt
	tick; git add copied.txt; git commit -qm "copy: counted.txt"
	chmod +x run.sh
	tick; git commit -qam "mode: make run.sh executable"
	ln -s text.txt link
	tick; git add link; git commit -qm "symlink: add one"
	git update-index --add --cacheinfo "160000,$(git rev-parse HEAD),sub"
	tick; git commit -qm "gitlink: add a submodule"
	git rm -q nonl.txt
	tick; git commit -qm "delete: nonl.txt"
	printf 'spaces\n' >"name with spaces.txt"
	printf 'latin\n' >"$(printf 'caf\351.txt')"
	printf 'dos\r\nline\r\nmore\r\n' >crlf.txt
	printf 'one\ntwo\nthree\nfour' >text.txt
	tick; git add -A; git commit -qm "names: spaces, a Latin-1 byte; CRLF; no newline"
	git format-patch -q -M -C --binary --root -o "$work/patches" \
		--subject-prefix="PATCH v2" --cover-letter HEAD >/dev/null
)

# 3. sort them out, add the hand-written cases
args=(--out "$out" --maildir "$work/list-md" --demo "$work/demo/list.mbox"
      --mbox "$work/list.mbox" --patches "$work/patches")
if [ -d "$corpus/patchwork/mail" ]; then
	args+=(--corpus "$corpus/patchwork/mail")
fi
"$PY" "$here/seeds.py" "${args[@]}"
