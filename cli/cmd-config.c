/* cmd-config.c - patchgate config check [--json] [--config FILE];
 * patchgate config keys [--json].
 *
 * check loads the file as every command does (an unknown group or key is
 * an error: common/config-keys.c), then hands it to each module's own
 * reader, the ones `run` and `daemon` use, and reports every problem
 * found.  Nothing else is done: the state directory, the store, the
 * repositories and the network are not touched (the CI backend's settings
 * are read by pgate_ci_config_check(), not by creating the backend).
 * keys prints the table of every key (tests/cli/t0106 holds the
 * documentation to it).
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

/* Every module's reader of its groups, as `run` would call them. */
static void
check_modules(GKeyFile *kf, GPtrArray *problems)
{
	PgatePipelineConfig pc;
	PgateApplyConfig ac;
	PgateCiConfig cc;
	PgateCliDaemonConfig dc;
	GError *e = NULL;

	if (pgate_cli_daemon_config_load(kf, &dc, &e))
		pgate_cli_daemon_config_clear(&dc);
	note(problems, &e);
	if (pgate_pipeline_config_load(kf, &pc, &e))
		pgate_pipeline_config_clear(&pc);
	note(problems, &e);
	pgate_pipeline_apply_config_load(kf, &ac, &e);
	pgate_pipeline_apply_config_clear(&ac);
	note(problems, &e);
	if (pgate_pipeline_ci_config_load(kf, &cc, &e) && cc.enabled)
		pgate_ci_config_check(cc.backend, kf, cc.group, &e);
	pgate_pipeline_ci_config_clear(&cc);
	note(problems, &e);
	if (g_key_file_has_group(kf, "patchwork")) {
		g_autoptr(PgatePatchwork) pw =
			pgate_patchwork_new(kf, "patchwork", &e);

		if (pw == NULL)
			note(problems, &e);
	}
	if (g_key_file_has_group(kf, "email")) {
		g_autoptr(PgateEmailConfig) ec =
			pgate_email_config_new(kf, "email", &e);

		if (ec == NULL)
			note(problems, &e);
	}
}

/* With [project NAME] groups: each project's modules, as its pipeline
 * reads them (its problems named "project NAME: ..."), and the routing
 * keys.  Returns: %FALSE when there is no project (the file is one). */
static gboolean
check_projects(GKeyFile *kf, GPtrArray *problems)
{
	g_auto(GStrv) names = pgate_config_projects(kf);
	g_autoptr(GPtrArray) projects = NULL;
	GError *e = NULL;
	PgateRouteConfig rc;

	if (names[0] == NULL) {
		if (pgate_route_config_load(kf, &rc, &e))
			pgate_route_config_clear(&rc);
		note(problems, &e);
		return FALSE;
	}
	projects = pgate_projects_load(kf, &e);
	if (projects == NULL) {
		note(problems, &e);
		return TRUE;
	}
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		g_autoptr(GPtrArray) own = g_ptr_array_new_with_free_func(
			(GDestroyNotify)g_error_free);

		check_modules(pr->kf, own);
		if (pgate_route_config_load(pr->kf, &rc, &e))
			pgate_route_config_clear(&rc);
		note(own, &e);
		for (guint k = 0; k < own->len; k++) {
			GError *o = own->pdata[k];

			g_ptr_array_add(problems, g_error_new(
				o->domain, o->code, "project %s: %s", pr->name,
				o->message));
		}
	}
	return TRUE;
}

static int
config_check(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	g_autofree char *file = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON",
		  NULL },
		{ "config", 0, 0, G_OPTION_ARG_FILENAME, &file,
		  "the file to check (default: the global --config, else "
		  "$PATCHGATE_CONFIG)", "FILE" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GPtrArray) problems =
		g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
	GError *e = NULL;

	if (!pgate_cli_parse("", "Check a configuration file: every group "
			     "and key known, every value valid.  Runs "
			     "nothing, touches neither the state directory "
			     "nor the network.  Exit 0 when valid, 78 "
			     "otherwise.", entries, &argc, &argv, error))
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
	if (pgate_cli_config_read(cli, problems, &e) &&
	    !check_projects(cli->config, problems))
		check_modules(cli->config, problems);
	note(problems, &e);

	if (json) {
		json_t *o = json_pack("{s:i,s:b,s:s}", "format_version", 1,
				      "ok", problems->len == 0, "config",
				      cli->config_path);
		json_t *errs = json_array();

		for (guint i = 0; i < problems->len; i++)
			json_array_append_new(errs, json_string(
				((GError *)problems->pdata[i])->message));
		json_object_set_new(o, "errors", errs);
		pgate_cli_json_print(o);
	} else if (problems->len == 0) {
		printf("ok\n");
	}
	if (problems->len == 0)
		return EX_OK;
	if (!json)
		for (guint i = 0; i < problems->len; i++)
			fprintf(stderr, "patchgate: config: %s\n",
				((GError *)problems->pdata[i])->message);
	return EX_CONFIG;
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
		printf("usage: patchgate config check [--json] "
		       "[--config FILE]\n"
		       "       patchgate config keys [--json]\n\n"
		       "check: load a configuration file as every command "
		       "does and have every\nmodule read its groups; say "
		       "what is wrong (exit 78) or \"ok\".  Runs nothing.\n"
		       "keys: every key, its type and its default "
		       "(docs/config.md).\n");
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "usage: patchgate config check|keys; see "
		    "'patchgate config --help'");
	return 0;
}
