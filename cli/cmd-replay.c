/* cmd-replay.c - patchgate replay [--json] [--since DATE] [--limit N] DIR... */
#include "cli/cli.h"
#include "threading/threading.h"

#include <signal.h>
#include <sysexits.h>
#include <unistd.h>

typedef struct {
	gint64 start;
	gboolean tty;
} Progress;

static void
show_progress(const PgateIngestStats *s, guint64 done, guint64 total,
	      gpointer payload)
{
	Progress *p = payload;
	double secs = (double)(g_get_monotonic_time() - p->start) / G_USEC_PER_SEC;
	double rate = secs > 0 ? (double)done / secs : 0;
	double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;

	if (!p->tty)
		return;
	fprintf(stderr, "\r\033[Kreplay: %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
		" commits, %" G_GUINT64_FORMAT " messages, %.0f/s, ETA %.0fs",
		done, total, s->read, rate, eta);
	fflush(stderr);
}

/* "2024-05-01", "2024-05-01T12:00:00Z" or seconds since the epoch */
static gboolean
parse_since(const char *s, gint64 *out)
{
	g_autoptr(GDateTime) dt = NULL;
	g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
	guint64 secs;

	if (g_ascii_string_to_unsigned(s, 10, 0, G_MAXINT64, &secs, NULL)) {
		*out = (gint64)secs;
		return TRUE;
	}
	dt = g_date_time_new_from_iso8601(s, utc);
	if (dt == NULL) {
		g_autofree char *full = g_strconcat(s, "T00:00:00", NULL);

		dt = g_date_time_new_from_iso8601(full, utc);
	}
	if (dt == NULL)
		return FALSE;
	*out = g_date_time_to_unix(dt);
	return TRUE;
}

int
cmd_replay(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	g_autofree char *since = NULL;
	gint64 limit = 0;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "print the summary as JSON", NULL },
		{ "since", 0, 0, G_OPTION_ARG_STRING, &since,
		  "skip mail archived before DATE (YYYY-MM-DD[THH:MM:SS], UTC)",
		  "DATE" },
		{ "limit", 0, 0, G_OPTION_ARG_INT64, &limit,
		  "stop after N messages; the next replay goes on from there",
		  "N" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgateReplayOptions ro = PGATE_REPLAY_OPTIONS_INIT;
	PgateReplayStats rs = { 0 };
	PgateIngestStats st = { 0 };
	Progress prog = { g_get_monotonic_time(), isatty(2) };
	double secs;
	g_autoptr(PgateThreading) thr = pgate_threading_new();
	PgateIngestHooks hooks;
	PgateIngestOptions opts = cli->ingest_opts;

	if (!pgate_cli_parse("DIR...",
			     "Import public-inbox archives: a v2 inbox "
			     "(DIR/git/N.git), one epoch (a bare clone of\n"
			     "https://lore.kernel.org/LIST/N) or a v1 inbox.  "
			     "Only commits not read by an earlier replay are\n"
			     "read; an interrupted replay resumes where it "
			     "stopped.  Messages are stored by reference to\n"
			     "their git blob, so the archive must stay where it "
			     "is.", entries, &argc, &argv, error))
		return 0;
	if (argc < 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no DIR given; see 'patchgate replay --help'");
		return 0;
	}
	if (since != NULL && !parse_since(since, &ro.since)) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--since: '%s' is not a date (YYYY-MM-DD)", since);
		return 0;
	}
	if (limit < 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--limit must not be negative");
		return 0;
	}
	ro.limit = (guint64)limit;
	pgate_cli_thread_hooks(thr, &hooks);
	opts.hooks = &hooks;
	for (int i = 1; i < argc && !rs.limited; i++) {
		guint64 before = st.read;

		if (limit > 0 && ro.limit == 0) {
			/* the limit was used up by the DIRs before */
			rs.limited = TRUE;
			break;
		}
		if (!pgate_ingest_replay(cli->store, argv[i], &opts,
					 &ro, &st, &rs, show_progress, &prog,
					 error)) {
			if (prog.tty)
				fputc('\n', stderr);
			g_prefix_error(error, "%s: ", argv[i]);
			return 0;
		}
		if (limit > 0)
			ro.limit -= MIN(ro.limit, st.read - before);
	}
	if (prog.tty)
		fputs("\r\033[K", stderr);
	secs = (double)(g_get_monotonic_time() - prog.start) / G_USEC_PER_SEC;
	if (json) {
		pgate_cli_json_print(json_pack(
			"{s:i,s:I,s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:s}",
			"format_version", 1,
			"epochs", (json_int_t)rs.epochs,
			"commits", (json_int_t)rs.commits,
			"skipped", (json_int_t)rs.skipped,
			"limited", rs.limited,
			"rewritten", (json_int_t)rs.rewritten,
			"read", (json_int_t)st.read,
			"stored", (json_int_t)st.stored,
			"duplicates", (json_int_t)st.duplicates,
			"conflicts", (json_int_t)st.conflicts,
			"rejected", (json_int_t)st.rejected,
			"deleted", (json_int_t)st.deleted, "seconds", secs,
			"writer_cpu_seconds", st.writer_cpu,
			"threading", pgate_cli_thread_state(thr, FALSE)));
	} else {
		printf("replayed %" G_GUINT64_FORMAT " new commits in %"
		       G_GUINT64_FORMAT " epochs in %.2fs: %" G_GUINT64_FORMAT
		       " messages read, %" G_GUINT64_FORMAT " stored, %"
		       G_GUINT64_FORMAT " duplicates, %" G_GUINT64_FORMAT
		       " deleted%s\n", rs.commits, rs.epochs, secs, st.read,
		       st.stored, st.duplicates, st.deleted,
		       rs.limited ? " (stopped at --limit; run again for more)"
				  : "");
		if (rs.rewritten > 0)
			printf("%" G_GUINT64_FORMAT " epoch(s) had rewritten "
			       "history and were read again from the merge "
			       "base\n", rs.rewritten);
	}
	pgate_cli_thread_warn(thr, "replay", st.stored > 0 || st.deleted > 0);
	pgate_cli_thread_keep(g_steal_pointer(&thr));
	return EX_OK;
}
