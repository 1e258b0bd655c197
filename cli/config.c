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
 * use it to force the map to grow).  A group or key that is not in
 * common/config-keys.c's table is an error, whatever the command: a typo
 * is not a default.
 */
#include "cli/cli.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* The most of a secret file read here; the modules bound it tighter. */
#define SECRET_FILE_MAX 4096

/* A regular file of at most SECRET_FILE_MAX bytes; never blocks. */
static void
register_secret_file(const char *path)
{
	char buf[SECRET_FILE_MAX + 1];
	struct stat st;
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= SECRET_FILE_MAX)
		n = read(fd, buf, SECRET_FILE_MAX);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		pgate_secret_add(g_strstrip(buf));
	}
	explicit_bzero(buf, sizeof buf);
}

/*
 * Every secret the configuration names, in any group, is registered
 * (common/secret.c) whatever the command: a `test` that never loads the
 * Patchwork client must still redact its token from a step's log.  The
 * keys are the modules' own: *token_file, *password_file (a file) and
 * *token_env, *password_env (a variable).  What cannot be read here is
 * left to the module that needs it, which says why; the modules register
 * what they read too (their exact value, for library callers).
 */
static void
register_secrets(GKeyFile *kf)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);

	for (guint g = 0; groups[g]; g++) {
		g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[g], NULL,
							 NULL);

		for (guint k = 0; keys && keys[k]; k++) {
			const char *key = keys[k];
			gboolean file = g_str_has_suffix(key, "token_file") ||
					g_str_has_suffix(key, "password_file");
			gboolean env = g_str_has_suffix(key, "token_env") ||
				       g_str_has_suffix(key, "password_env");
			g_autofree char *v = NULL;

			if (!file && !env)
				continue;
			v = g_key_file_get_string(kf, groups[g], key, NULL);
			if (v == NULL || *g_strstrip(v) == '\0')
				continue;
			if (env) {
				g_autofree char *val =
					g_strdup(g_getenv(v));

				if (val)
					pgate_secret_add(g_strstrip(val));
				continue;
			}
			pgate_secret_add_path(v);
			register_secret_file(v);
		}
	}
}

/* A problem found while reading: appended to @problems and the reading
 * goes on, or, without @problems, the error.  Returns: whether to go on. */
static gboolean
noted(GPtrArray *problems, GError **error, GError *e)
{
	if (problems == NULL) {
		g_propagate_error(error, e);
		return FALSE;
	}
	g_ptr_array_add(problems, e);
	return TRUE;
}

gboolean
pgate_cli_config_read(PgateCli *cli, GPtrArray *problems, GError **error)
{
	PgateStoreOptions so = PGATE_STORE_OPTIONS_INIT;
	PgateIngestOptions io = PGATE_INGEST_OPTIONS_INIT;
	guint64 v;
	const char *env;

	/* what a CI step must never see (common/secret.c): the state
	 * directory, the configuration file and its directory (unless that
	 * is / or /etc, of which the sandbox binds chosen files only) */
	pgate_secret_add_path(cli->state_dir);
	if (cli->config_path != NULL) {
		g_autofree char *abs = g_canonicalize_filename(cli->config_path,
							       NULL);
		g_autofree char *dir = g_path_get_dirname(abs);

		pgate_secret_add_path(abs);
		if (strcmp(dir, "/") != 0 && strcmp(dir, "/etc") != 0)
			pgate_secret_add_path(dir);
	}
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
	register_secrets(cli->config);
	/* a key nothing reads is a typo, or a setting in the wrong group
	 * (common/config-keys.c) */
	if (problems != NULL)
		pgate_config_validate(cli->config, PGATE_CLI_ERROR, problems,
				      NULL);
	else if (!pgate_config_validate(cli->config, PGATE_CLI_ERROR, NULL,
					error))
		return FALSE;

#define U64(group, key, field, max) do { \
		GError *e = NULL; \
		gint64 n; \
		if (pgate_config_int(cli->config, group, key, \
				     (gint64)(field), 0, \
				     (gint64)MIN((guint64)(max), \
						 (guint64)G_MAXINT64), \
				     FALSE, &n, PGATE_CLI_ERROR, &e)) \
			(field) = (guint64)n; \
		else if (!noted(problems, error, e)) \
			return FALSE; \
	} while (0)

	U64("store", "map_size", so.map_size, G_MAXSIZE);
	U64("store", "max_map_size", so.max_map_size, G_MAXSIZE);
	U64("store", "lock_timeout_ms", so.lock_timeout_ms, G_MAXUINT);
	U64("store", "zdict_train_after", so.zdict_train_after, G_MAXUINT);
	U64("ingest", "max_message_size", io.max_message_size, 1u << 30);
	U64("ingest", "max_references", io.max_references, 100000);
	U64("ingest", "max_recipients", io.max_recipients, 100000);
	U64("ingest", "max_trailers", io.max_trailers, 100000);
	U64("ingest", "batch_messages", io.batch_messages, 1000000);
	U64("ingest", "batch_bytes", io.batch_bytes, 1u << 30);
#undef U64

	env = g_getenv("PATCHGATE_STORE_MAP_SIZE");
	if (env != NULL && *env != '\0') {
		if (g_ascii_string_to_unsigned(env, 10, 4096, G_MAXSIZE, &v,
					       NULL))
			so.map_size = v;
		else if (!noted(problems, error, g_error_new(
				   PGATE_CLI_ERROR, PGATE_ERROR_CONFIG,
				   "PATCHGATE_STORE_MAP_SIZE: '%s' is not a "
				   "size in bytes", env)))
			return FALSE;
	}
	cli->store_opts = so;
	cli->ingest_opts = io;
	return TRUE;
}

gboolean
pgate_cli_config_load(PgateCli *cli, GError **error)
{
	return pgate_cli_config_read(cli, NULL, error);
}
