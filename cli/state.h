/* state.h - per-series stage state as JSON in the store (cli/ only). */
#pragma once

#include "cli/cli.h"

/* "SERIES/STAGE" or "SERIES/STAGE/SUB" */
char *pgate_state_key(const char *series_id, const char *stage,
		      const char *sub);
/* (transfer full) (nullable): the document, NULL without error when there
 * is none. */
/* (transfer full) (nullable): a stored value as a JSON object, NULL when
 * it is none (@jerr says why when not NULL). */
json_t *pgate_state_decode(GBytes *val, json_error_t *jerr);
json_t *pgate_state_get(PgateStoreTxn *txn, const char *key, GError **error);
gboolean pgate_state_put(PgateStoreTxn *txn, const char *key, json_t *doc,
			 GError **error);
/* (transfer full): {"REST-OF-KEY": doc, ...} of every key under @prefix
 * (which should end with "/"), NULL on error. */
json_t *pgate_state_scan(PgateStoreTxn *txn, const char *prefix,
			 GError **error);
const char *pgate_state_str(json_t *doc, const char *field);
void pgate_state_set_str(json_t *doc, const char *field, const char *value);
