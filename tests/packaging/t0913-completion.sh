#!/bin/bash
# t0913-completion - the bash completion (completion/patchgate, generated
# from --help) offers every command, the subcommands and options of each,
# and the words of an option's value, as bash-completion would call it.

. "${SRCDIR:?}/tests/lib/tap.sh"

COMP=${PGATE_BASH_COMPLETION:-}
[ -n "$COMP" ] || skip_all "no completion in this build (-Dbash_completion=false)"
BC=/usr/share/bash-completion/bash_completion
[ -r "$BC" ] || skip_all "bash-completion is not installed"

ok "bash -n: it parses" bash -n "$COMP"

# one completion, as readline would ask for it: the words so far, the
# last one being completed
complete_words() {
	bash -c '
		. "$1" >/dev/null 2>&1; . "$2"
		shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		compopt() { :; }   # not inside a real completion
		COMPREPLY=()
		_patchgate patchgate "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
	' sh "$BC" "$COMP" "$@"
}

cmds=$("${PATCHGATE:?}" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' |
	sort | tr '\n' ' ')
is "$(complete_words patchgate '')" "$cmds" "every command of --help"
is "$(complete_words patchgate --st)" "--state= " "a global option"
is "$(complete_words patchgate --state /x --config /y s)" "series status store " \
	"commands after the global options and their values"
is "$(complete_words patchgate msg '')" "list show " "msg's subcommands"
is "$(complete_words patchgate series sh)" "show " "series show"
is "$(complete_words patchgate msg show --)" "--json --num= " "msg show's options"
is "$(complete_words patchgate ingest --format '')" "mboxo mboxrd " "--format's values"
is "$(complete_words patchgate ingest --format=mboxr)" "mboxrd " "--format=VALUE"
is "$(complete_words patchgate test --backend j)" "jenkins " "--backend's values"
is "$(complete_words patchgate test --branch next --)" \
	"$(printf '%s\n' --backend= --branch= --json --no-wait --retry-for= | sort | tr '\n' ' ')" \
	"an option's value is not taken for a subcommand"
is "$(complete_words patchgate config check --c)" "--config= " "config check --config"
tap_tmpdir
mkdir "$TAP_TMP/dir1" && : >"$TAP_TMP/file1"
is "$(cd "$TAP_TMP" && complete_words patchgate --state '')" "dir1 " \
	"--state: directories"
is "$(cd "$TAP_TMP" && complete_words patchgate ingest '')" "dir1 file1 " \
	"ingest: files"
done_testing
