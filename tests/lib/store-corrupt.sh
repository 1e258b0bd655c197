# store-corrupt.sh - damage a store on purpose, for the tests of what
# patchgate does with records that no longer decode.  Source after tap.sh;
# needs mdb_load (lmdb-utils) and $PY.
#
#   corrupt_record STORE DB KEY  puts "garbage" under KEY in database DB
#                                of the store directory STORE (KEY in
#                                mdb_load's print form: \xx for a byte)
#   first_patched SERIES_JSON [NOT_ID]
#                                prints "ID MSGID": the first series of
#                                `series list --json` (but NOT_ID) that has
#                                patches, and its first patch
#   review_of MSGID NEWID        prints a reply to MSGID, with Reviewed-by

corrupt_record() {
	printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n %s\n garbage\nDATA=END\n' "$3" |
		mdb_load -s "$2" "$1"
}

first_patched() {
	"$PY" -c '
import json, sys
s = [s for s in json.load(open(sys.argv[1]))["series"]
     if s["patches"] and s["id"] != sys.argv[2]][0]
print(s["id"], s["patches"][0]["msgid"])' "$1" "${2:-}"
}

review_of() {
	printf 'From: Rita Reviewer <rita@example.org>\nTo: l@example.org\n'
	printf 'Subject: Re: the patch\nDate: Sat, 1 Jan 2050 00:00:00 +0000\n'
	printf 'Message-ID: <%s>\nIn-Reply-To: <%s>\nReferences: <%s>\n\n' "$2" "$1" "$1"
	printf 'Reviewed-by: Rita Reviewer <rita@example.org>\n'
}
