/* cmd-route.c - patchgate route MSGID | --file MAIL [--json]: which
 * projects a message goes to, why (its List-Id, or a To/Cc address), and
 * the branches each would apply its series to, by which rule
 * (pipeline/route.c; docs/config.md "Projects", docs/pipeline.md
 * "Routing").  Nothing is stored nor run.
 */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

static void
print_text(json_t *j)
{
	json_t *projects = json_object_get(j, "projects");
	json_t *not = json_object_get(j, "not_projects");
	const char *sid = pgate_state_str(j, "series");
	json_t *pj, *t;
	gsize i, k;

	printf("message <%s>%s%s\n", pgate_state_str(j, "msgid"),
	       sid ? ", series " : "", sid ? sid : "");
	json_array_foreach(projects, i, pj) {
		const char *name = pgate_state_str(pj, "project");
		const char *skip = pgate_state_str(pj, "skip");

		printf("project %s: %s\n", name ? name : "(the only one)",
		       pgate_state_str(pj, "why"));
		if (skip != NULL)
			printf("  not applied: %s\n", skip);
		json_array_foreach(json_object_get(pj, "targets"), k, t)
			printf("  target %s (%s: %s)\n",
			       pgate_state_str(t, "target"),
			       pgate_state_str(t, "rule"),
			       pgate_state_str(t, "why"));
	}
	if (json_array_size(projects) == 0)
		printf("no project takes it\n");
	json_array_foreach(not, i, pj)
		printf("not project %s\n", json_string_value(pj));
}

int
cmd_route(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	g_autofree char *file = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "file", 0, 0, G_OPTION_ARG_FILENAME, &file,
		  "a message in a file (RFC 822), not a stored one", "MAIL" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateMessageRec) rec = NULL;
	g_autofree char *sid = NULL;
	json_t *out;

	if (!pgate_cli_parse("[MSGID]", "Explain which projects a message "
			     "goes to, and why (its List-Id, a To or Cc "
			     "address), and the branches each would apply its "
			     "series to, by which routing rule.  A stored "
			     "message (angle brackets optional) is routed with "
			     "its series; --file routes one message alone.",
			     entries, &argc, &argv, error))
		return 0;
	if ((file == NULL) == (argc != 2) || argc > 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "route takes one MSGID, or --file MAIL");
		return 0;
	}
	if (file != NULL) {
		g_autofree char *data = NULL;
		gsize len = 0;
		g_autoptr(PgateMail) mail = NULL;

		if (!g_file_get_contents(file, &data, &len, error))
			return 0;
		if (len > cli->ingest_opts.max_message_size &&
		    cli->ingest_opts.max_message_size > 0) {
			g_set_error(error, PGATE_CLI_ERROR,
				    PGATE_ERROR_TOO_LARGE,
				    "%s is larger than [ingest] "
				    "max_message_size", file);
			return 0;
		}
		mail = pgate_mail_parse(data, len, &cli->ingest_opts);
		rec = g_steal_pointer(&mail->rec);
	} else {
		const char *id = argv[1];
		gsize n = strlen(id);
		g_autofree char *bare = n >= 2 && id[0] == '<' &&
			id[n - 1] == '>' ? g_strndup(id + 1, n - 2)
					 : g_strdup(id);
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(cli->store, error);
		g_autoptr(GArray) nums = NULL;
		guint64 num;

		if (txn == NULL)
			return 0;
		nums = pgate_store_message_lookup(txn, bare, error);
		if (nums == NULL)
			return 0;
		if (nums->len == 0) {
			g_set_error(error, PGATE_CLI_ERROR,
				    PGATE_ERROR_NOT_FOUND, "no message <%s>",
				    bare);
			return 0;
		}
		num = g_array_index(nums, guint64, 0);
		rec = pgate_store_message_get(txn, num, error);
		if (rec == NULL ||
		    !pgate_store_msg_series_get(txn, num, &sid, error))
			return 0;
	}
	out = pgate_pipeline_route_explain(cli->store, cli->config, rec, sid,
					   error);
	if (out == NULL)
		return 0;
	if (json) {
		json_object_set_new(out, "format_version", json_integer(1));
		pgate_cli_json_print(out);
	} else {
		print_text(out);
		json_decref(out);
	}
	return EX_OK;
}
