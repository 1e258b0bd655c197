/* cmd-deliver.c - patchgate deliver: the procmail/maildrop hook.
 *
 * Exit 0 only when the message is durably stored (or was already).  Every
 * other failure exits 75 (EX_TEMPFAIL), whatever its cause, so that the MTA
 * keeps the message and tries again: a delivery hook must never lose mail,
 * and a bounce would lose it for us.  Only a usage error exits 64.
 * Threading that fails for good (a corrupt series record) is not such a
 * failure: the message is stored without it, the series are marked stale
 * and stderr says to run 'patchgate rethread'; otherwise every delivery
 * would fail until someone did, and the MTA would bounce at last.
 */
#include "cli/cli.h"
#include "threading/threading.h"

#include <sysexits.h>
#include <unistd.h>

static const char *const result_names[] = {
	[PGATE_STORE_ADDED] = "added",
	[PGATE_STORE_DUPLICATE] = "duplicate",
	[PGATE_STORE_ADDED_CONFLICT] = "conflict",
};

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
			     "failure so that the MTA retries.\nA leading mbox "
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
	/* any failure exits 75: main() knows from CMD_TEMPFAIL */
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
