/* cmd-store.c - patchgate store info|verify|upgrade (verify: store-verify.c) */
#include "cli/cli.h"

#include <string.h>
#include <sysexits.h>

static PgateStore *
open_store(PgateCli *cli, PgateStoreFlags flags, GError **error)
{
	g_autofree char *dir = g_build_filename(cli->state_dir, PGATE_STATE_STORE, NULL);

	return pgate_store_open(dir, flags, &cli->store_opts, error);
}

static int
store_info(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStore) store = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	guint64 count, used, max;

	if (!pgate_cli_parse("", "Show the store's schema, size and counts "
			     "(a warning past 80% of max_map_size).",
			     entries, &argc, &argv, error))
		return 0;
	store = open_store(cli, PGATE_STORE_RDONLY, error);
	if (store == NULL)
		return 0;
	txn = pgate_store_begin_read(store, error);
	if (txn == NULL)
		return 0;
	count = pgate_store_message_count(txn);
	used = pgate_store_used_size(store);
	max = pgate_store_max_map_size(store);
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:i,s:I,s:I,s:I,s:I}", "format_version", 1,
			"schema_version", pgate_store_schema_version(store),
			"messages", (json_int_t)count,
			"map_size", (json_int_t)pgate_store_map_size(store),
			"used_bytes", (json_int_t)used,
			"max_map_size", (json_int_t)max));
	else
		printf("schema: %u\nmessages: %" G_GUINT64_FORMAT
		       "\nmap size: %" G_GUINT64_FORMAT " bytes\n"
		       "used: %" G_GUINT64_FORMAT " bytes of at most %"
		       G_GUINT64_FORMAT "\n",
		       pgate_store_schema_version(store), count,
		       pgate_store_map_size(store), used, max);
	/* docs/store-format.md, "Sizes": writes fail (75) once the map
	 * cannot grow; warn while there is time to raise the ceiling */
	if (max > 0 && used >= max / 5 * 4)
		fprintf(stderr, "patchgate: store info: warning: the store "
			"uses %.0f%% of [store] max_map_size (%" G_GUINT64_FORMAT
			" of %" G_GUINT64_FORMAT " bytes); raise it before "
			"writes fail\n", 100.0 * (double)used / (double)max,
			used, max);
	return EX_OK;
}

static int
store_upgrade(PgateCli *cli, int argc, char **argv, GError **error)
{
	g_autoptr(PgateStore) store = NULL;
	guint from;

	if (!pgate_cli_parse("", "Convert a store written by an older "
			     "patchgate to this version's schema.", NULL,
			     &argc, &argv, error))
		return 0;
	store = open_store(cli, PGATE_STORE_RW | PGATE_STORE_NO_UPGRADE_CHECK,
			   error);
	if (store == NULL || !pgate_store_upgrade(store, &from, error))
		return 0;
	if (from == PGATE_STORE_SCHEMA_VERSION)
		printf("store is at schema %u already\n", from);
	else
		printf("store upgraded from schema %u to %u\n", from,
		       PGATE_STORE_SCHEMA_VERSION);
	return EX_OK;
}

int
cmd_store(PgateCli *cli, int argc, char **argv, GError **error)
{
	if (argc >= 2 && strcmp(argv[1], "info") == 0)
		return store_info(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return pgate_cli_store_verify(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "upgrade") == 0)
		return store_upgrade(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		printf("usage: patchgate store info [--json]\n"
		       "       patchgate store verify [--json]\n"
		       "       patchgate store upgrade\n\n"
		       "Look after the LMDB store in STATE/store: show its "
		       "schema and size, say\nwhat is damaged in it, "
		       "convert an older one.\n");
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "usage: patchgate store info|verify|upgrade; see "
		    "'patchgate store --help'");
	return 0;
}
