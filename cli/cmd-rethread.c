/* cmd-rethread.c - patchgate rethread [--json] [--batch N] */
#include "cli/cli.h"
#include "threading/threading.h"

#include <sysexits.h>
#include <unistd.h>

typedef struct {
	gint64 start;
	gboolean shown;
} RethreadProgress;

/* On a terminal: the messages threaded so far, a line rewritten. */
static gboolean
rethread_progress(guint64 messages, guint64 last, gpointer data)
{
	RethreadProgress *p = data;
	double secs = (double)(g_get_monotonic_time() - p->start) /
		      G_USEC_PER_SEC;

	fprintf(stderr, "\r\033[Krethread: %" G_GUINT64_FORMAT " messages "
		"(up to number %" G_GUINT64_FORMAT "), %.0f msg/s", messages,
		last, secs > 0 ? (double)messages / secs : 0);
	fflush(stderr);
	p->shown = TRUE;
	return TRUE;
}

int
cmd_rethread(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	gint batch = PGATE_THREADING_RETHREAD_BATCH;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "batch", 0, 0, G_OPTION_ARG_INT, &batch,
		  "messages a transaction (2000): deliveries wait for one at "
		  "most", "N" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgateThreadingStats st = { 0 };
	gint64 start = g_get_monotonic_time();
	RethreadProgress prog = { start, FALSE };
	gboolean ok;
	double secs;

	if (!pgate_cli_parse("", "Forget all threads and series and compute "
			     "them again from the stored messages, in batches "
			     "between which deliveries go on; readers see the "
			     "old series until the new ones are complete.  A "
			     "rethread that was stopped goes on where it got "
			     "to.", entries, &argc, &argv, error))
		return 0;
	if (batch < 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--batch: at least 1 message");
		return 0;
	}
	ok = pgate_threading_rethread_batched(
		cli->store, (guint)batch, isatty(STDERR_FILENO) ? rethread_progress : NULL,
		&prog, &st, error);
	if (prog.shown)
		fputs("\r\033[K", stderr);
	if (!ok)
		return 0;
	secs = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
	pgate_cli_rethread_warn(st.unreadable, st.first_unreadable);
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:I,s:I,s:I,s:I,s:I,s:f}", "format_version", 1,
			"messages", (json_int_t)st.messages,
			"series", (json_int_t)st.series,
			"complete", (json_int_t)st.complete,
			"superseded", (json_int_t)st.superseded,
			"unreadable", (json_int_t)st.unreadable, "seconds", secs));
	else
		printf("rethreaded %" G_GUINT64_FORMAT " messages in %.2fs: %"
		       G_GUINT64_FORMAT " series, %" G_GUINT64_FORMAT
		       " complete, %" G_GUINT64_FORMAT " superseded\n",
		       st.messages, secs, st.series, st.complete, st.superseded);
	return EX_OK;
}
