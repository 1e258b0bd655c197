/* projects.c - what `series list --project` and `series show` say of
 * projects ([project NAME], docs/config.md "Projects"): which projects a
 * series is in, why, and each one's documents (SERIES@NAME/...).  In the
 * lean binary too: pipeline/route.c needs only the store. */
#include "cli/projects.h"

#include <string.h>

gboolean
pgate_cli_project_find(PgateCli *cli, const char *name, GPtrArray **projects,
		       const PgateProject **out, GError **error)
{
	g_autofree char *group = g_strdup_printf("project %s", name);

	*out = NULL;
	*projects = NULL;
	if (!g_key_file_has_group(cli->config, group))
		return TRUE;
	*projects = pgate_projects_load(cli->config, error);
	if (*projects == NULL)
		return FALSE;
	for (guint i = 0; i < (*projects)->len; i++) {
		const PgateProject *pr = (*projects)->pdata[i];

		if (g_strcmp0(pgate_project_name(pr), name) == 0)
			*out = pr;
	}
	return TRUE;
}

gboolean
pgate_cli_in_project(PgateStoreTxn *txn, const PgateProject *pr,
		     const char *id, GError **error)
{
	g_autoptr(PgateSeriesRec) r = NULL;
	g_autofree char *why = NULL;

	if (pr == NULL)
		return TRUE;
	r = pgate_store_series_get(txn, id, error);
	return r != NULL &&
	       pgate_project_match_series(txn, pr, r, &why, error) &&
	       why != NULL;
}

gboolean
pgate_cli_series_projects(PgateCli *cli, PgateStoreTxn *txn,
			  const PgateSeriesRec *r, json_t *into,
			  PgateCliPrintStages print, GError **error)
{
	g_auto(GStrv) names = pgate_config_projects(cli->config);
	g_autoptr(GPtrArray) projects = NULL;
	g_autoptr(json_t) out = NULL;

	if (names[0] == NULL)
		return TRUE;
	projects = pgate_projects_load(cli->config, error);
	if (projects == NULL)
		return FALSE;
	out = json_array();
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];
		g_autofree char *why = NULL, *sid = NULL, *prefix = NULL;
		g_autoptr(GPtrArray) v = NULL;
		json_t *docs;

		if (!pgate_project_match_series(txn, pr, r, &why, error))
			return FALSE;
		sid = pgate_project_state_id(pr, r->id);
		prefix = g_strdup_printf("%s/", sid);
		v = pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, prefix,
					   error);
		if (v == NULL)
			return FALSE;
		if (why == NULL && v->len == 0)
			continue;	/* not its series, never was */
		docs = json_object();
		for (guint k = 0; k < v->len; k++) {
			const PgateStoreEntry *e = v->pdata[k];
			json_t *doc = pgate_state_decode(e->val, NULL);

			if (doc != NULL)
				json_object_set_new(docs, e->key + strlen(prefix),
						    doc);
		}
		json_array_append_new(out, json_pack(
			"{s:s,s:s,s:o,s:o}", "project", pgate_project_name(pr), "state_id",
			sid, "why", why ? json_string(why) : json_null(),
			"stages", docs));
		if (print != NULL) {
			printf("project %s: %s\n", pgate_project_name(pr),
			       why ? why : "no longer its series");
			print(v, strlen(prefix));
		}
	}
	if (into != NULL)
		json_object_set(into, "projects", out);
	return TRUE;
}
