/* config.c - the configuration file (GKeyFile INI; see docs/config.md).
 *
 *   [store]
 *   map_size = 268435456        initial LMDB map size, bytes
 *   max_map_size = 1099511627776
 *   lock_timeout_ms = 30000     writer lock wait before EX_TEMPFAIL
 *   [ingest]
 *   max_message_size = 67108864
 *   max_references = 128
 *   batch_messages = 2000
 *
 * PATCHGATE_STORE_MAP_SIZE in the environment overrides map_size (tests
 * use it to force the map to grow).
 */
#include "cli/cli.h"


/* Whether @e says the key or its group is not there. */
static gboolean
absent(const GError *e)
{
	return g_error_matches(e, G_KEY_FILE_ERROR,
			       G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
	       g_error_matches(e, G_KEY_FILE_ERROR,
			       G_KEY_FILE_ERROR_GROUP_NOT_FOUND);
}

/* *@out: [@group] @key's value, stripped, or NULL when it is absent. */
static gboolean
raw_value(GKeyFile *kf, const char *group, const char *key, char **out,
	  GError **error)
{
	g_autoptr(GError) local = NULL;

	*out = g_key_file_get_value(kf, group, key, &local);
	if (*out != NULL) {
		g_strstrip(*out);
		return TRUE;
	}
	if (absent(local))
		return TRUE;
	g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG, "[%s] %s: %s",
		    group, key, local->message);
	return FALSE;
}

gboolean
pgate_cli_config_bool(GKeyFile *kf, const char *group, const char *key,
		      gboolean *out, GError **error)
{
	g_autofree char *v = NULL;

	if (!raw_value(kf, group, key, &v, error))
		return FALSE;
	if (v == NULL || pgate_config_bool_word(v, out))
		return TRUE;
	return pgate_config_error(error, PGATE_CLI_ERROR, group, key,
				  "'%s' is not true or false", v);
}

gboolean
pgate_cli_config_int(GKeyFile *kf, const char *group, const char *key,
		     gint64 min, gint64 max, gint64 *out, GError **error)
{
	g_autofree char *raw = NULL;
	gint64 v;

	if (!raw_value(kf, group, key, &raw, error))
		return FALSE;
	if (raw == NULL)
		return TRUE;
	if (!g_ascii_string_to_signed(raw, 10, G_MININT64, G_MAXINT64, &v,
				      NULL))
		return pgate_config_error(error, PGATE_CLI_ERROR, group, key,
					  "'%s' is not a whole number", raw);
	if (v < min || v > max)
		return pgate_config_error(error, PGATE_CLI_ERROR, group, key,
					  "%" G_GINT64_FORMAT " is out of range"
					  " (%" G_GINT64_FORMAT " to %"
					  G_GINT64_FORMAT ")", v, min, max);
	*out = v;
	return TRUE;
}

gboolean
pgate_cli_config_load(PgateCli *cli, GError **error)
{
	PgateStoreOptions so = PGATE_STORE_OPTIONS_INIT;
	PgateIngestOptions io = PGATE_INGEST_OPTIONS_INIT;
	guint64 v;
	const char *env;

	cli->config = g_key_file_new();
	if (cli->config_path != NULL) {
		g_autoptr(GError) local = NULL;

		if (!g_key_file_load_from_file(cli->config, cli->config_path,
					       G_KEY_FILE_NONE, &local)) {
			g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
				    "config %s: %s", cli->config_path,
				    local->message);
			return FALSE;
		}
	}

#define U64(group, key, field, max) do { \
		gint64 n = (gint64)(field); \
		if (!pgate_cli_config_int(cli->config, group, key, 0, \
					  (gint64)MIN((guint64)(max), \
						      (guint64)G_MAXINT64), \
					  &n, error)) \
			return FALSE; \
		(field) = (guint64)n; \
	} while (0)

	U64("store", "map_size", so.map_size, G_MAXSIZE);
	U64("store", "max_map_size", so.max_map_size, G_MAXSIZE);
	U64("store", "lock_timeout_ms", so.lock_timeout_ms, G_MAXUINT);
	U64("ingest", "max_message_size", io.max_message_size, 1u << 30);
	U64("ingest", "max_references", io.max_references, 100000);
	U64("ingest", "max_recipients", io.max_recipients, 100000);
	U64("ingest", "max_trailers", io.max_trailers, 100000);
	U64("ingest", "batch_messages", io.batch_messages, 1000000);
	U64("ingest", "batch_bytes", io.batch_bytes, 1u << 30);
#undef U64

	env = g_getenv("PATCHGATE_STORE_MAP_SIZE");
	if (env != NULL && *env != '\0') {
		if (!g_ascii_string_to_unsigned(env, 10, 4096, G_MAXSIZE, &v,
						NULL)) {
			g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
				    "PATCHGATE_STORE_MAP_SIZE: '%s' is not a "
				    "size in bytes", env);
			return FALSE;
		}
		so.map_size = v;
	}
	cli->store_opts = so;
	cli->ingest_opts = io;
	return TRUE;
}
