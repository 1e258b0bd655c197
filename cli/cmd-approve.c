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
	json_t *doc;            /* out */
} DecideCtx;

static gboolean
decide_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DecideCtx *c = payload;
	g_autofree char *key = pgate_state_key(c->sid, "pipeline", NULL);
	g_autoptr(PgateSeriesRec) rec = pgate_store_series_get(txn, c->sid, error);
	json_t *doc;
	const char *state;

	if (rec == NULL)
		return FALSE;
	doc = pgate_state_get(txn, key, error);
	if (doc == NULL) {
		if (error && *error)
			return FALSE;
		doc = json_pack("{s:s}", "state", "new");
	}
	state = pgate_state_str(doc, "state");
	if (g_strcmp0(state, "awaiting-approval") != 0 &&
	    g_strcmp0(state, "new") != 0 && g_strcmp0(state, "waiting") != 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_INVALID,
			    "series %s is %s, not awaiting approval", c->sid,
			    state ? state : "unknown");
		json_decref(doc);
		return FALSE;
	}
	json_object_set_new(doc, c->approve ? "approved" : "rejected", json_true());
	pgate_state_set_str(doc, c->approve ? "approved_by" : "rejected_by", c->who);
	if (c->why)
		pgate_state_set_str(doc, "decision_note", c->why);
	json_object_set_new(doc, "decided", json_integer(
		g_get_real_time() / G_USEC_PER_SEC));
	if (!pgate_state_put(txn, key, doc, error)) {
		json_decref(doc);
		return FALSE;
	}
	c->doc = doc;
	return TRUE;
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
	DecideCtx c = { NULL, approve, NULL, NULL, NULL };

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
	json_decref(c.doc);
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
