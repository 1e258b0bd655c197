/* state.c - the later stages' per-series state as JSON documents in the
 * store's stage table (docs/pipeline.md lists them):
 *
 *   SERIES/pipeline            where the series is in the pipeline
 *   SERIES/apply/TARGET        one apply attempt (TARGET: a branch, or
 *                              "base-commit")
 *   SERIES/ci/TARGET/JOB       one CI job on an applied target
 *
 * Stages never call each other: the pipeline (pipeline.c) reads what one
 * stage wrote here and hands it to the next.
 */
#include "pipeline/pipeline.h"
#include "common/json.h"

#include <string.h>

/* the module's error domain lives here, with the part every binary
 * links (pipeline/meson.build) */
G_DEFINE_QUARK(pgate-pipeline-error-quark, pgate_pipeline_error)

char *
pgate_state_key(const char *series_id, const char *stage, const char *sub)
{
	if (sub == NULL)
		return g_strdup_printf("%s/%s", series_id, stage);
	return g_strdup_printf("%s/%s/%s", series_id, stage, sub);
}

json_t *
pgate_state_decode(GBytes *val, json_error_t *jerr)
{
	gsize len;
	const char *d = g_bytes_get_data(val, &len);
	json_t *j = json_loadb(d, len, 0, jerr);

	if (j != NULL && !json_is_object(j))
		g_clear_pointer(&j, json_decref);
	return j;
}

json_t *
pgate_state_get(PgateStoreTxn *txn, const char *key, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GBytes) b = pgate_store_table_get(txn, PGATE_STORE_TABLE_STAGE,
						    key, &local);
	json_error_t jerr = { 0 };
	json_t *j;

	if (b == NULL) {
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			return NULL;
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	j = pgate_state_decode(b, &jerr);
	if (j == NULL) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    "stage state %s is not a JSON object: %s", key,
			    jerr.text);
		return NULL;
	}
	return j;
}

gboolean
pgate_state_put(PgateStoreTxn *txn, const char *key, json_t *doc,
		GError **error)
{
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	gboolean ok;

	if (text == NULL) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_FAILED,
			    "cannot encode stage state %s", key);
		return FALSE;
	}
	ok = pgate_store_table_put(txn, PGATE_STORE_TABLE_STAGE, key, text,
				   strlen(text), error);
	free(text);
	return ok;
}

json_t *
pgate_state_scan(PgateStoreTxn *txn, const char *prefix, GError **error)
{
	g_autoptr(GPtrArray) v = pgate_store_table_scan(
		txn, PGATE_STORE_TABLE_STAGE, prefix, error);
	json_t *out;

	if (v == NULL)
		return NULL;
	out = json_object();
	for (guint i = 0; i < v->len; i++) {
		PgateStoreEntry *e = v->pdata[i];
		json_t *j = pgate_state_decode(e->val, NULL);

		if (j != NULL)
			json_object_set_new(out, e->key + strlen(prefix), j);
	}
	return out;
}

const char *
pgate_state_str(json_t *doc, const char *field)
{
	json_t *v = doc ? json_object_get(doc, field) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

void
pgate_state_set_str(json_t *doc, const char *field, const char *value)
{
	json_object_set_new(doc, field, pgate_json_str_or_null(value));
}

GPtrArray *
pgate_state_entries(PgateStore *store, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(store, error);

	if (txn == NULL)
		return NULL;
	return pgate_store_table_scan(txn, PGATE_STORE_TABLE_STAGE, NULL,
				      error);
}
