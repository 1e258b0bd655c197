# store-corrupt.sh - damage a store on purpose, for the tests of what
# patchgate does with records that no longer decode.  Source after tap.sh;
# needs mdb_load (lmdb-utils) and $PY.
#
#   corrupt_record STORE DB KEY  puts "garbage" under KEY in database DB
#                                of the store directory STORE (KEY in
#                                mdb_load's print form: \xx for a byte),
#                                the live generation's DB (live_db)
#   first_patched SERIES_JSON [NOT_ID]
#                                prints "ID MSGID": the first series of
#                                `series list --json` (but NOT_ID) that has
#                                patches, and its first patch
#   review_of MSGID NEWID        prints a reply to MSGID, with Reviewed-by

corrupt_record() {
	printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n %s\n garbage\nDATA=END\n' "$3" |
		mdb_load -s "$(live_db "$1" "$2")" "$1"
}

# live_db STORE DB: the name DB has in the store's live generation: the
# threading databases live under "DB@1" while meta derived_gen is 1 (after
# an odd number of rethreads; docs/store-format.md, "Generations")
live_db() {
	case $2 in
	refs_index|author_index|series|msg_series|change_index|patchid_index|name_keys|link_index|series_dates)
		if mdb_dump -p -s meta "$1" 2>/dev/null | grep -A1 -x ' derived_gen' | tail -n 1 | grep -qx ' \\01'; then
			echo "$2@1"
			return
		fi ;;
	esac
	echo "$2"
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
