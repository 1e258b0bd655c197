/* cmd-ingest.c - patchgate ingest [--json] [--format F] PATH... */
#include "cli/cli.h"
#include "threading/threading.h"

#include <string.h>
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
	double rate = secs > 0 ? (double)s->read / secs : 0;
	double frac = total > 0 ? (double)done / (double)total : 0;
	double eta = frac > 0.001 ? secs / frac - secs : 0;

	if (!p->tty)
		return;
	fprintf(stderr, "\r\033[Kingest: %" G_GUINT64_FORMAT " messages, "
		"%.1f MB, %.0f msg/s, %3.0f%%, ETA %.0fs",
		s->read, (double)s->bytes / 1e6, rate, frac * 100, eta);
	fflush(stderr);
}

/* A maildir entry that is no message, one line each (the store is not
 * told: the summary counts them). */
static void
warn_skipped(const char *path, const GError *why, gpointer payload)
{
	Progress *p = payload;
	/* the name is the deliverer's: no control characters on stderr */
	g_autofree char *shown = g_strescape(why->message, NULL);

	fprintf(stderr, "%spatchgate: ingest: skipped: %s\n",
		p->tty ? "\r\033[K" : "", shown);
}

static json_t *
stats_json(const PgateIngestStats *s, double secs, const char *threading)
{
	json_t *kinds = json_object();

	for (int k = 0; k <= PGATE_MSG_KIND_REJECTED; k++)
		json_object_set_new(kinds, pgate_msg_kind_to_string(k),
				    json_integer((json_int_t)s->by_kind[k]));
	return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:f,s:f,s:s}",
			 "format_version", 1,
			 "read", (json_int_t)s->read,
			 "bytes", (json_int_t)s->bytes,
			 "stored", (json_int_t)s->stored,
			 "duplicates", (json_int_t)s->duplicates,
			 "conflicts", (json_int_t)s->conflicts,
			 "rejected", (json_int_t)s->rejected,
			 "quarantined", (json_int_t)s->quarantined,
			 "skipped", (json_int_t)s->skipped,
			 "kinds", kinds, "seconds", secs,
			 "writer_cpu_seconds", s->writer_cpu,
			 "threading", threading);
}

/* "patch" or "patches": the word for @n of them */
#define PL(n, one, many) ((n) == 1 ? (one) : (many))

int
cmd_ingest(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, no_thread = FALSE;
	g_autofree char *format = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "print the summary as JSON", NULL },
		{ "no-thread", 0, 0, G_OPTION_ARG_NONE, &no_thread,
		  "store only; leave threading to a later 'rethread'", NULL },
		{ "format", 0, 0, G_OPTION_ARG_STRING, &format,
		  "mbox flavour: mboxrd (default) or mboxo", "F" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	PgateIngestStats stats = { 0 };
	PgateMboxFormat fmt = PGATE_MBOX_MBOXRD;
	Progress prog = { g_get_monotonic_time(), isatty(2) };
	double secs;
	g_autoptr(PgateThreading) thr = pgate_threading_new();
	PgateIngestHooks hooks;
	PgateIngestOptions opts = cli->ingest_opts;

	if (!pgate_cli_parse("PATH...",
			     "Import every message of mbox files and maildirs "
			     "into the store.\n\nA PATH that is a directory "
			     "must be a maildir (cur/ and new/); it is only "
			     "read, and only its regular files: symlinks, "
			     "FIFOs and directories in it are skipped with a "
			     "warning.\nMessages already stored (same "
			     "Message-ID and content) are counted as "
			     "duplicates.",
			     entries, &argc, &argv, error))
		return 0;
	if (argc < 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no PATH given; see 'patchgate ingest --help'");
		return 0;
	}
	if (format != NULL) {
		if (strcmp(format, "mboxo") == 0) {
			fmt = PGATE_MBOX_MBOXO;
		} else if (strcmp(format, "mboxrd") != 0) {
			g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
				    "--format must be mboxrd or mboxo, not '%s'",
				    format);
			return 0;
		}
	}
	/* --no-thread: the hooks only mark the series stale */
	pgate_cli_thread_hooks(thr, &hooks);
	pgate_threading_set_deferred(thr, no_thread);
	opts.hooks = &hooks;
	opts.skipped_entry = warn_skipped;
	opts.skipped_entry_payload = &prog;
	for (int i = 1; i < argc; i++) {
		if (!pgate_ingest_path(cli->store, cli->state_dir, argv[i], fmt,
				       &opts, &stats,
				       show_progress, &prog, error)) {
			if (prog.tty)
				fputc('\n', stderr);
			g_prefix_error(error, "%s: ", argv[i]);
			return 0;
		}
	}
	if (prog.tty)
		fputs("\r\033[K", stderr);
	secs = (double)(g_get_monotonic_time() - prog.start) / G_USEC_PER_SEC;
	if (json) {
		pgate_cli_json_print(stats_json(
			&stats, secs, pgate_cli_thread_state(thr, no_thread)));
	} else {
		const guint64 *k = stats.by_kind;

		printf("read %" G_GUINT64_FORMAT " messages (%.1f MB) in %.2fs: "
		       "%" G_GUINT64_FORMAT " stored, %" G_GUINT64_FORMAT
		       " duplicates, %" G_GUINT64_FORMAT " Message-ID conflicts, %"
		       G_GUINT64_FORMAT " rejected (%" G_GUINT64_FORMAT
		       " oversized); %" G_GUINT64_FORMAT " maildir entries "
		       "skipped\n", stats.read, (double)stats.bytes / 1e6,
		       secs, stats.stored, stats.duplicates, stats.conflicts,
		       stats.rejected, stats.quarantined, stats.skipped);
		printf("kinds: %" G_GUINT64_FORMAT " %s, %" G_GUINT64_FORMAT
		       " %s, %" G_GUINT64_FORMAT " %s, %" G_GUINT64_FORMAT
		       " %s, %" G_GUINT64_FORMAT " other\n",
		       k[PGATE_MSG_KIND_PATCH],
		       PL(k[PGATE_MSG_KIND_PATCH], "patch", "patches"),
		       k[PGATE_MSG_KIND_COVER],
		       PL(k[PGATE_MSG_KIND_COVER], "cover", "covers"),
		       k[PGATE_MSG_KIND_REPLY],
		       PL(k[PGATE_MSG_KIND_REPLY], "reply", "replies"),
		       k[PGATE_MSG_KIND_PULL],
		       PL(k[PGATE_MSG_KIND_PULL], "pull request",
			  "pull requests"),
		       k[PGATE_MSG_KIND_OTHER]);
	}
	if (!no_thread)
		pgate_cli_thread_warn(thr, "ingest",
				      stats.stored > 0 || stats.deleted > 0);
	pgate_cli_thread_keep(g_steal_pointer(&thr));
	return EX_OK;
}
