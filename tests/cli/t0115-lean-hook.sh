#!/bin/bash
# t0115-lean-hook - the lean `patchgate` (the delivery hook) parses as
# patchgate-full does.
#
# With meson's static_hook on (the default where Debian's archives are
# there), the lean binary carries its own GLib, GMime, gpgme, libidn2,
# libunistring, jansson and LMDB, and cli/lean-stubs.c stands in for
# libmount and libselinux.  Checked here:
#  - it loads the C runtime and nothing else (PGATE_LEAN_STATIC=1;
#    skipped else);
#  - mails that exercise what the static libraries do (RFC 2047 words in
#    UTF-8 and Latin-1, an IDNA domain decoded by libidn2/libunistring,
#    quoted-printable Latin-1 through glibc's iconv, a base64 text/x-patch
#    attachment, a date with a zone name, garbage) delivered through the lean
#    binary give the same `msg show --json` as the same mails ingested by
#    patchgate-full, and the same `series list --json`.

. "${SRCDIR:?}/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/pgate.sh"

T=$TAP_TMP
FULL=$(dirname "$PATCHGATE")/patchgate-full
[ -x "$FULL" ] || skip_all "no patchgate-full beside $PATCHGATE"

if [ "${PGATE_LEAN_STATIC:-0}" = 1 ]; then
	# the C runtime and nothing else (a sanitizer or clang build adds its
	# runtimes, libm and libgcc_s)
	needed=$(LC_ALL=C readelf -d "$PATCHGATE" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
		grep -Ev '^(libc|libm|libgcc_s|lib(a|ub|l|t)san)\.so' | tr '\n' ' ')
	is "$needed" "" "the lean binary needs no library but the C runtime"
	# the same through the loader: what is mapped at run time
	ldd "$PATCHGATE" >"$T/ldd" 2>&1
	ok "no libmount, libselinux, GLib, GMime, LMDB, jansson or libunistring is loaded" \
		bash -c '! grep -E "lib(mount|selinux|glib|gmime|lmdb|jansson|unistring)" "$1"' - "$T/ldd"
else
	skip "the lean binary needs no library but the C runtime" "static_hook is off in this build"
	skip "no libmount, libselinux, GLib, GMime, LMDB, jansson or libunistring is loaded" "static_hook is off in this build"
fi

mkdir -p "$T/mails"
"$PY" - "$T/mails" <<'PY'
import base64, os, sys
out = sys.argv[1]
patch = ("---\n f.c | 1 +\ndiff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n"
         "--- a/f.c\n+++ b/f.c\n@@ -1,1 +1,2 @@\n int x;\n+int y;\n")
mails = {
"01-rfc2047.eml":
  "From: =?UTF-8?B?SsO8cmdlbiBNw7xsbGVy?= <juergen@example.org>\n"
  "To: tinyproj@lists.example.org\n"
  "Subject: [PATCH 1/2] =?ISO-8859-1?Q?f=FCr_die_Z=E4hler?= =?UTF-8?Q?_=E2=80=94_fix?=\n"
  "Date: Mon, 2 Jan 2023 10:00:00 CET\n"
  "Message-ID: <lean-1@example.org>\n\nFix the counter.\n\nSigned-off-by: J\u00fcrgen <juergen@example.org>\n"
  + patch,
"02-idn.eml":
  "From: Anna <anna@xn--bcher-kva.example>\n"
  "To: tinyproj@lists.example.org\n"
  "Subject: [PATCH 2/2] idn: a patch from an IDNA domain\n"
  "Date: Mon, 2 Jan 2023 10:01:00 +0100\n"
  "In-Reply-To: <lean-1@example.org>\nReferences: <lean-1@example.org>\n"
  "Message-ID: <lean-2@example.org>\n\nSecond.\n" + patch,
"03-qp-latin1.eml":
  "From: Ren\u00e9 <rene@example.org>\n".encode("latin-1").decode("latin-1") +
  "To: tinyproj@lists.example.org\n"
  "Subject: [PATCH] qp: Latin-1 body\n"
  "Date: Tue, 3 Jan 2023 09:00:00 +0000\n"
  "Message-ID: <lean-3@example.org>\nMIME-Version: 1.0\n"
  "Content-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: quoted-printable\n\n"
  "Gr=FC=DFe aus M=FCnchen.\n\nSigned-off-by: Ren=E9 <rene@example.org>\n" + patch,
"04-attachment.eml":
  "From: Bob <bob@example.org>\nTo: tinyproj@lists.example.org\n"
  "Subject: [PATCH] attach: the patch as an attachment\n"
  "Date: Wed, 4 Jan 2023 09:00:00 -0500\nMessage-ID: <lean-4@example.org>\nMIME-Version: 1.0\n"
  "Content-Type: multipart/mixed; boundary=\"b0\"\n\n--b0\nContent-Type: text/plain\n\nSee attached.\n"
  "--b0\nContent-Type: text/x-patch; name=\"0001.patch\"\nContent-Disposition: attachment\n"
  "Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(patch.encode()).decode() + "--b0--\n",
"05-garbage.eml": "\x00\x01 not a mail at all\n\n\xff\n",
}
for name, text in mails.items():
    data = text.encode("latin-1") if name.startswith("03") else text.encode("utf-8", "surrogateescape")
    if name.startswith("05"):
        data = b"\x00\x01 not a mail at all\n\n\xff\n"
    open(os.path.join(out, name), "wb").write(data)
PY

rc=0
for m in "$T"/mails/*.eml; do
	pg --state "$T/lean" deliver <"$m" || rc=$?
done
is "$rc" 0 "the lean binary delivers every mail (garbage is stored as rejected)"
mkdir -p "$T/md/cur" "$T/md/new" "$T/md/tmp"
for m in "$T"/mails/*.eml; do
	cp "$m" "$T/md/cur/$(basename "$m" .eml):2,S"
done
"$FULL" --state "$T/full" ingest --json "$T/md" >"$T/ingest.json" 2>"$T/ingest.err"
is "$?" 0 "patchgate-full ingests the same mails (as a maildir)" || diag <"$T/ingest.err"

"$FULL" --state "$T/lean" msg list --json >"$T/lean-list.json"
"$FULL" --state "$T/full" msg list --json >"$T/full-list.json"
n=$(jq_py "$T/lean-list.json" 'len(d["messages"])')
is "$n" 5 "five messages in the store the hook wrote"

parsed() {
	"$PY" -c '
import json, sys
d = json.load(sys.stdin)
del d["source"], d["received"]
print(json.dumps(d, indent=1, sort_keys=True))'
}

same=0
for id in lean-1@example.org lean-2@example.org lean-3@example.org lean-4@example.org; do
	# all but where and when the message came in
	"$FULL" --state "$T/lean" msg show --json "$id" | parsed >"$T/a.json"
	"$FULL" --state "$T/full" msg show --json "$id" | parsed >"$T/b.json"
	if cmp -s "$T/a.json" "$T/b.json"; then
		same=$((same + 1))
	else
		diag "$id differs (hook -, ingest +):"
		diff -u "$T/a.json" "$T/b.json" | tail -n +3 | head -n 30 | diag
	fi
done
is "$same" 4 "msg show --json is the same for the four mails, hook or ingest"

like "$(jq_py "$T/a.json" 'd["subject"]')" "attach" "(the comparison reads real output)"
"$FULL" --state "$T/lean" msg show --json lean-1@example.org >"$T/m1.json"
is "$(jq_py "$T/m1.json" 'd["from"]["name"]')" "Jürgen Müller" "RFC 2047 UTF-8 name decoded"
like "$(jq_py "$T/m1.json" 'd["subject"]')" "für die Zähler — fix" "RFC 2047 Latin-1 and UTF-8 words decoded"
"$FULL" --state "$T/lean" msg show --json lean-2@example.org >"$T/m2.json"
is "$(jq_py "$T/m2.json" 'd["from"]["email"]')" "anna@bücher.example" "the IDNA domain decoded (libidn2, libunistring)"
"$FULL" --state "$T/lean" msg show --json lean-3@example.org >"$T/m3.json"
like "$(jq_py "$T/m3.json" 'd["body"]')" "Grüße aus München" "the Latin-1 quoted-printable body decoded (iconv)"

pg --state "$T/lean" series list --json >"$T/sa.json"
"$FULL" --state "$T/full" series list --json >"$T/sb.json"
ok "series list --json: the lean binary prints what patchgate-full prints" cmp "$T/sa.json" "$T/sb.json"
is "$(jq_py "$T/sa.json" 'len(d["series"])')" 3 "three series (1-2/2, qp, attach)"

done_testing
