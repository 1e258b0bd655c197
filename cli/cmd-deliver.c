/* cmd-deliver.c - patchgate deliver: the procmail/maildrop hook.
 *
 * Exit 0 only when the message is durably stored (or was already).  Every
 * other failure exits 75 (EX_TEMPFAIL), whatever its cause, so that the MTA
 * keeps the message and tries again: a delivery hook must never lose mail,
 * and a bounce would lose it for us.  That includes a store so damaged
 * that reading it faults: main()'s signal guard exits 75 then.  Only a
 * usage error exits 64, and an empty standard input (closed, /dev/null,
 * an empty file or pipe) 66, EX_NOINPUT: there is no mail to keep, and
 * nothing is stored; the store is not even opened.
 * Threading that fails for good (a corrupt series record) is not such a
 * failure: the message is stored without it, the series are marked stale
 * and stderr says to run 'patchgate rethread'; otherwise every delivery
 * would fail until someone did, and the MTA would bounce at last.
 */
#include "cli/cli.h"
#include "threading/threading.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

static const char *const result_names[] = {
	[PGATE_STORE_ADDED] = "added",
	[PGATE_STORE_DUPLICATE] = "duplicate",
	[PGATE_STORE_ADDED_CONFLICT] = "conflict",
};

/* Whether @fd is known to hold nothing, without reading from it: the
 * message must stay there for ingest to read.  A pipe is asked with
 * tee(2), which duplicates without consuming and returns 0 only when the
 * pipe is empty and its writers are gone; a socket with a peek; a file by
 * its size and offset; /dev/null is empty.  Anything else (a terminal) is
 * not known to be empty. */
static gboolean
input_is_empty(int fd)
{
	struct stat st, null;
	int p[2];
	gboolean empty = FALSE;

	if (fstat(fd, &st) < 0)
		return FALSE;
	if (S_ISREG(st.st_mode)) {
		off_t at = lseek(fd, 0, SEEK_CUR);

		return at >= 0 && at >= st.st_size;
	}
	if (S_ISFIFO(st.st_mode)) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return FALSE;
		for (;;) {
			ssize_t n = tee(fd, p[1], 1, 0);

			if (n < 0 && errno == EINTR)
				continue;
			empty = n == 0;
			break;
		}
		close(p[0]);
		close(p[1]);
		return empty;
	}
	if (S_ISSOCK(st.st_mode)) {
		char c;

		for (;;) {
			ssize_t n = recv(fd, &c, 1, MSG_PEEK);

			if (n < 0 && errno == EINTR)
				continue;
			return n == 0;
		}
	}
	return S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 &&
	       S_ISCHR(null.st_mode) && st.st_rdev == null.st_rdev;
}

int
cmd_deliver(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "print what was stored as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateMessageRec) rec = NULL;
	PgateStoreAddResult result;
	g_autoptr(PgateThreading) thr = pgate_threading_new();
	PgateIngestHooks hooks;
	PgateIngestOptions opts = cli->ingest_opts;

	if (!pgate_cli_parse("< MESSAGE",
			     "Store one message read from standard input, for "
			     "procmail or maildrop.\n\nExits 0 once the message "
			     "is on disk (fsync'd), 75 (EX_TEMPFAIL) on any "
			     "failure so that the MTA retries (a damaged store "
			     "included), 66 when standard input is empty.\n"
			     "A leading mbox "
			     "\"From \" line is allowed.  Mail that cannot be "
			     "parsed is stored as rejected, with a reason.",
			     entries, &argc, &argv, error))
		return 0;
	if (argc > 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "deliver takes no arguments (the message comes on "
			    "stdin)");
		return 0;
	}
	if (input_is_empty(STDIN_FILENO)) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_NO_INPUT,
			    "no message on standard input; nothing stored");
		return 0;
	}
	/* any failure exits 75: main() knows from CMD_TEMPFAIL */
	cli->store = pgate_cli_store_open(cli, PGATE_STORE_RW |
					  PGATE_STORE_CREATE, error);
	if (cli->store == NULL)
		return 0;
	/* the message and its threading commit in one transaction */
	pgate_cli_thread_hooks(thr, &hooks);
	opts.hooks = &hooks;
	if (!pgate_ingest_deliver(cli->store, cli->state_dir, 0,
				  &opts, &result, &rec, error))
		return 0;
	/* stored: threading that failed for good does not hold the mail
	 * back (ingest.h, PgateIngestHooks) */
	pgate_cli_thread_warn(thr, "deliver", result != PGATE_STORE_DUPLICATE);
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:s,s:I,s:s,s:s,s:s}", "result", result_names[result],
			"num", (json_int_t)rec->num, "msgid", rec->msgid,
			"kind", pgate_msg_kind_to_string(rec->kind),
			"threading", pgate_cli_thread_state(thr, FALSE)));
	return EX_OK;
}
