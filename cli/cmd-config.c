/* cmd-config.c - patchgate config check [--json] [--online] [--config
 * FILE]; patchgate config keys [--json].
 *
 * check loads the file as every command does (an unknown group or key is
 * an error: common/config-keys.c), then has pipeline/config-check.c hand
 * it to each module's own reader, the ones `run` and `daemon` use (the
 * [daemon] reader is this folder's: check_daemon()), and look at what
 * the values name (paths, repositories and branches,
 * secrets' files, templates) and, with --online, ask the servers; it
 * reports every problem found.  Nothing is written: the state directory,
 * the store and the repositories are not touched (the CI backend's
 * settings are read by pgate_ci_config_check(), not by creating the
 * backend).  The exit code: 78 when a problem is the configuration's,
 * else 69 when a server answered in a way no setting explains, else 75
 * when the network or a server failed for now (docs/config.md).  keys
 * prints the table of every key (tests/cli/t0106 holds the documentation
 * to it).
 */
#include "cli/cli.h"
#include "pipeline/pipeline.h"

#include <string.h>
#include <sysexits.h>

/* Appends *@e (when set) to @problems. */
static void
note(GPtrArray *problems, GError **e)
{
	if (*e != NULL)
		g_ptr_array_add(problems, g_steal_pointer(e));
}

/* --values-only: what the values name is not looked at */
static gboolean values_only;

/* [daemon], the command line's own group, read as the daemon reads it
 * (pgate_pipeline_config_check()'s @own) */
static void
check_daemon(GKeyFile *kf, GPtrArray *problems)
{
	PgateCliDaemonConfig dc;
	GError *e = NULL;

	if (pgate_cli_daemon_config_load(kf, &dc, &e))
		pgate_cli_daemon_config_clear(&dc);
	note(problems, &e);
}

/* 78 when a problem is the configuration's (every offline one), else 69
 * when a server answered as no setting explains, else 75 when only the
 * network or a server's being unavailable for now stood in the way. */
static int
check_exit_code(const GPtrArray *problems, const GPtrArray *online)
{
	gboolean unavailable = FALSE;

	if (problems->len > 0)
		return EX_CONFIG;
	for (guint i = 0; i < online->len; i++) {
		const GError *e = online->pdata[i];

		if (e->code == PGATE_ERROR_CONFIG ||
		    e->code == PGATE_ERROR_NOT_FOUND)
			return EX_CONFIG;
		if (!pgate_error_is_transient(e))
			unavailable = TRUE;
	}
	if (unavailable)
		return EX_UNAVAILABLE;
	return online->len > 0 ? EX_TEMPFAIL : EX_OK;
}

static const char *
problem_kind(const GError *e, gboolean is_online)
{
	if (!is_online || e->code == PGATE_ERROR_CONFIG ||
	    e->code == PGATE_ERROR_NOT_FOUND)
		return "config";
	return pgate_error_is_transient(e) ? "transient" : "unavailable";
}

/* Prints the problems: --json's document on stdout, else a line each
 * on stderr ("ok" on stdout when there is none). */
static void
check_print(const PgateCli *cli, const GPtrArray *problems,
	    const GPtrArray *online, gboolean json, gboolean asked_online)
{
	const GPtrArray *parts[] = { problems, online };

	if (json) {
		json_t *o = json_pack("{s:i,s:b,s:s,s:b}", "format_version", 1,
				      "ok", problems->len + online->len == 0,
				      "config", cli->config_path, "online",
				      asked_online);
		json_t *errs = json_array(), *kinds = json_array();

		for (gsize p = 0; p < G_N_ELEMENTS(parts); p++)
			for (guint i = 0; i < parts[p]->len; i++) {
				const GError *e = parts[p]->pdata[i];

				json_array_append_new(errs,
						      json_string(e->message));
				json_array_append_new(kinds, json_pack(
					"{s:s,s:s}", "message", e->message,
					"kind", problem_kind(e, p == 1)));
			}
		json_object_set_new(o, "errors", errs);
		json_object_set_new(o, "problems", kinds);
		pgate_cli_json_print(o);
		return;
	}
	if (problems->len + online->len == 0)
		printf("ok\n");
	for (gsize p = 0; p < G_N_ELEMENTS(parts); p++)
		for (guint i = 0; i < parts[p]->len; i++)
			fprintf(stderr, "patchgate: config: %s\n",
				((GError *)parts[p]->pdata[i])->message);
}

static int
config_check(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE, ask = FALSE;
	g_autofree char *file = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON",
		  NULL },
		{ "online", 0, 0, G_OPTION_ARG_NONE, &ask,
		  "also ask the servers: the Patchwork project and token, "
		  "Jenkins and the job, the SMTP server and login", NULL },
		{ "values-only", 0, 0, G_OPTION_ARG_NONE, &values_only,
		  "check the names and values only, not what they name on "
		  "this machine (a file written for another one)", NULL },
		{ "config", 0, 0, G_OPTION_ARG_FILENAME, &file,
		  "the file to check (default: the global --config, else "
		  "$PATCHGATE_CONFIG)", "FILE" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GPtrArray) problems =
		g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
	g_autoptr(GPtrArray) online =
		g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
	GError *e = NULL;

	if (!pgate_cli_parse("", "Check a configuration file: every group "
			     "and key known, every value valid, and what "
			     "the values name there and usable (paths, "
			     "repositories and branches, secrets' files and "
			     "modes, templates); with --online, the servers "
			     "too.  Writes nothing, touches not the state "
			     "directory.  Exit 0 when all is well, 78 for a "
			     "configuration problem, 69 for a server "
			     "unusable otherwise, 75 when only the network "
			     "failed for now.", entries, &argc, &argv, error))
		return 0;
	if (argc > 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "unexpected argument '%s'", argv[1]);
		return 0;
	}
	if (file != NULL) {
		g_free(cli->config_path);
		cli->config_path = g_steal_pointer(&file);
	}
	if (cli->config_path == NULL) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "no configuration file: give --config FILE");
		return 0;
	}
	if (pgate_cli_config_read(cli, problems, &e)) {
		PgateCliDaemonConfig dc;
		/* (a [daemon] that does not read is said by check_daemon()) */
		gboolean read = !values_only &&
			pgate_cli_daemon_config_load(cli->config, &dc, NULL);

		pgate_pipeline_config_check(cli->config, values_only,
					    check_daemon,
					    read ? dc.maildirs : NULL,
					    read ? dc.inboxes : NULL, problems,
					    ask ? online : NULL);
		if (read)
			pgate_cli_daemon_config_clear(&dc);
	}
	note(problems, &e);
	check_print(cli, problems, online, json, ask);
	return check_exit_code(problems, online);
}

static int
config_keys(int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON",
		  NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	json_t *arr = json_array();
	const PgateConfigKey *keys;
	gsize n;

	if (!pgate_cli_parse("", "List every key of the configuration file: "
			     "group, key, type and default (docs/config.md).",
			     entries, &argc, &argv, error)) {
		json_decref(arr);
		return 0;
	}
	keys = pgate_config_keys(&n);
	for (gsize i = 0; i < n; i++) {
		const PgateConfigKey *k = &keys[i];

		if (!json) {
			printf("[%s] %s (%s): %s\n", k->group, k->key,
			       pgate_config_type_to_string(k->type),
			       pgate_config_key_shown(k));
			continue;
		}
		json_array_append_new(arr, json_pack(
			"{s:s,s:s,s:s,s:b,s:b,s:o,s:s,s:o,s:s}",
			"group", k->group, "key", k->key,
			"type", pgate_config_type_to_string(k->type),
			"required", (k->flags & PGATE_CONFIG_KEY_REQUIRED) != 0,
			"pattern", (k->flags & PGATE_CONFIG_KEY_PATTERN) != 0,
			"default", pgate_json_str_or_null(k->value),
			"shown", pgate_config_key_shown(k),
			"choices", pgate_json_str_or_null(k->choices),
			"doc", k->doc));
	}
	if (json)
		pgate_cli_json_print(json_pack("{s:i,s:o}", "format_version", 1,
					       "keys", arr));
	else
		json_decref(arr);
	return EX_OK;
}

int
cmd_config(PgateCli *cli, int argc, char **argv, GError **error)
{
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return config_check(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "keys") == 0)
		return config_keys(argc - 1, argv + 1, error);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		printf("usage: patchgate config check [--json] [--online] "
		       "[--values-only] [--config FILE]\n"
		       "       patchgate config keys [--json]\n\n"
		       "check: load a configuration file as every command "
		       "does, have every\nmodule read its groups and look at "
		       "what they name (--online: the servers\ntoo); say "
		       "what is wrong (exit 78, 69 or 75) or \"ok\".  Writes "
		       "nothing.\n"
		       "keys: every key, its type and its default "
		       "(docs/config.md).\n");
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "usage: patchgate config check|keys; see "
		    "'patchgate config --help'");
	return 0;
}
