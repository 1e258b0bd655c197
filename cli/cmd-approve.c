/* cmd-approve.c - patchgate approve|reject SERIES: a maintainer's word on
 * a series from an untrusted sender (docs/pipeline.md, trust). */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

typedef struct {
	const char *sid;
	gboolean approve;
	const char *who;
	const char *why;
} DecideCtx;

static gboolean
decide_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DecideCtx *c = payload;
	g_autoptr(PgateSeriesRec) rec = pgate_store_series_get(txn, c->sid, error);
	g_autoptr(PgateSeriesDoc) doc = NULL;
	g_autoptr(GError) local = NULL;

	if (rec == NULL)
		return FALSE;
	doc = pgate_series_doc_get(txn, c->sid, &local);
	if (doc == NULL) {
		if (local != NULL) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		doc = pgate_series_doc_new(PGATE_SERIES_NEW);
	}
	if (doc->state != PGATE_SERIES_AWAITING_APPROVAL &&
	    doc->state != PGATE_SERIES_NEW &&
	    doc->state != PGATE_SERIES_WAITING) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_INVALID,
			    "series %s is %s, not awaiting approval", c->sid,
			    pgate_series_state_name(doc->state));
		return FALSE;
	}
	if (c->approve) {
		/* it covers what the store holds now, and nothing that comes
		 * later (docs/pipeline.md, "What an approval covers") */
		pgate_series_doc_approve(
			doc, c->who, (gint64)pgate_store_message_last_num(txn));
	} else {
		doc->rejected = TRUE;
		g_free(doc->rejected_by);
		doc->rejected_by = g_strdup(c->who);
		doc->has |= PGATE_SERIES_DOC_REJECTED_BY;
	}
	if (c->why) {
		g_free(doc->decision_note);
		doc->decision_note = g_strdup(c->why);
	}
	doc->decided = g_get_real_time() / G_USEC_PER_SEC;
	doc->has |= PGATE_SERIES_DOC_DECIDED;
	return pgate_series_doc_put(txn, c->sid, doc, error);
}

static int
decide(PgateCli *cli, int argc, char **argv, gboolean approve, GError **error)
{
	g_autofree char *note = NULL;
	GOptionEntry entries[] = {
		{ "note", 0, 0, G_OPTION_ARG_STRING, &note, "why, for the record",
		  "TEXT" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autofree char *who = NULL;
	DecideCtx c = { NULL, approve, NULL, NULL };

	if (!pgate_cli_parse("SERIES", approve
			     ? "Let a series from an untrusted sender be applied "
			       "and tested by the next 'patchgate run'."
			     : "Refuse to test a series from an untrusted sender.",
			     entries, &argc, &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "give one series id");
		return 0;
	}
	who = g_strdup_printf("%s (command line)", g_get_user_name());
	c.sid = argv[1];
	c.who = who;
	c.why = note;
	if (!pgate_store_write(cli->store, decide_fn, &c, error))
		return 0;
	printf("%s: %s by %s\n", c.sid, approve ? "approved" : "rejected", who);
	return EX_OK;
}

int
cmd_approve(PgateCli *cli, int argc, char **argv, GError **error)
{
	return decide(cli, argc, argv, TRUE, error);
}

int
cmd_reject(PgateCli *cli, int argc, char **argv, GError **error)
{
	return decide(cli, argc, argv, FALSE, error);
}
