/* cmd-store.c - patchgate store info|verify|upgrade|train|recompress
 * (verify: store-verify.c) */
#include "cli/cli.h"

#include <string.h>
#include <sysexits.h>

static PgateStore *
open_store(PgateCli *cli, PgateStoreFlags flags, GError **error)
{
	return pgate_cli_store_open(cli, flags, error);
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
	PgateStoreZdict zdict;
	guint zdicts;

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
	if (!pgate_store_zdict_list(txn, &zdict, &zdicts, error))
		return 0;
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:i,s:I,s:I,s:I,s:I,s:o,s:i}", "format_version", 1,
			"schema_version", pgate_store_schema_version(store),
			"messages", (json_int_t)count,
			"map_size", (json_int_t)pgate_store_map_size(store),
			"used_bytes", (json_int_t)used,
			"max_map_size", (json_int_t)max,
			"zdict", zdict.id == 0 ? json_null() : json_pack(
				"{s:I,s:I}", "id", (json_int_t)zdict.id,
				"bytes", (json_int_t)zdict.size),
			"zdicts", (int)zdicts));
	else {
		printf("schema: %u\nmessages: %" G_GUINT64_FORMAT
		       "\nmap size: %" G_GUINT64_FORMAT " bytes\n"
		       "used: %" G_GUINT64_FORMAT " bytes of at most %"
		       G_GUINT64_FORMAT "\n",
		       pgate_store_schema_version(store), count,
		       pgate_store_map_size(store), used, max);
		if (zdict.id != 0)
			printf("zstd dictionary: %u (%zu bytes; %u kept)\n",
			       zdict.id, zdict.size, zdicts);
		else
			printf("zstd dictionary: none\n");
	}
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

static int
store_train(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	int samples = 0;
	GOptionEntry entries[] = {
		{ "samples", 0, 0, G_OPTION_ARG_INT, &samples,
		  "train on at most N messages (default 4000)", "N" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStore) store = NULL;
	PgateStoreZdictTrained d;
	double ratio, plain;

	if (!pgate_cli_parse("", "Train a zstd dictionary on a sample of the "
			     "store's raw mail; raw mail\nwritten from now on "
			     "is compressed with it (older messages keep "
			     "theirs).", entries, &argc, &argv, error))
		return 0;
	if (samples < 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--samples: a number of messages, not %d",
			    samples);
		return 0;
	}
	store = open_store(cli, PGATE_STORE_RW, error);
	if (store == NULL ||
	    !pgate_store_zdict_train(store, (guint)samples, &d, error))
		return 0;
	ratio = d.sample_bytes ? (double)d.compressed / (double)d.sample_bytes : 0;
	plain = d.sample_bytes ? (double)d.compressed_plain /
				 (double)d.sample_bytes : 0;
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:I,s:I,s:i,s:I,s:I,s:I,s:f,s:f,s:f}",
			"format_version", 1, "id", (json_int_t)d.id,
			"bytes", (json_int_t)d.size, "samples", (int)d.samples,
			"sample_bytes", (json_int_t)d.sample_bytes,
			"compressed_bytes", (json_int_t)d.compressed,
			"compressed_plain_bytes",
			(json_int_t)d.compressed_plain, "ratio", ratio,
			"ratio_plain", plain, "seconds", d.seconds));
	else
		printf("zstd dictionary %u: %zu bytes, trained on %u messages "
		       "(%" G_GUINT64_FORMAT " bytes) in %.2f s\n"
		       "the sample compresses to %.3f of its size with it, "
		       "%.3f without\n", d.id, d.size, d.samples,
		       d.sample_bytes, d.seconds, ratio, plain);
	return EX_OK;
}

static int
store_recompress(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	int batch = 500;
	GOptionEntry entries[] = {
		{ "batch", 0, 0, G_OPTION_ARG_INT, &batch,
		  "rewrite at most N messages a transaction (default 500)",
		  "N" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStore) store = NULL;
	PgateStoreRecompressed total = { 0 }, r = { 0 };
	guint batches = 0;
	gint64 start = g_get_monotonic_time();
	double secs;

	if (!pgate_cli_parse("", "Compress again, with the store's current "
			     "zstd dictionary, the raw mail\nwritten before it "
			     "(in batches, one transaction each: deliveries "
			     "go on\nbetween them; run again to go on after "
			     "an interruption).", entries, &argc, &argv,
			     error))
		return 0;
	if (batch <= 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "--batch: a number of messages, not %d", batch);
		return 0;
	}
	store = open_store(cli, PGATE_STORE_RW, error);
	if (store == NULL)
		return 0;
	for (r.next = 1; !r.done; batches++) {
		if (!pgate_store_recompress(store, r.next, (guint)batch, &r,
					    error))
			return 0;
		total.examined += r.examined;
		total.rewritten += r.rewritten;
		total.unreadable += r.unreadable;
		total.bytes_before += r.bytes_before;
		total.bytes_after += r.bytes_after;
	}
	secs = (double)(g_get_monotonic_time() - start) / 1e6;
	if (json)
		pgate_cli_json_print(json_pack(
			"{s:i,s:I,s:I,s:I,s:I,s:I,s:i,s:f}", "format_version", 1,
			"examined", (json_int_t)total.examined,
			"rewritten", (json_int_t)total.rewritten,
			"unreadable", (json_int_t)total.unreadable,
			"bytes_before", (json_int_t)total.bytes_before,
			"bytes_after", (json_int_t)total.bytes_after,
			"batches", (int)batches, "seconds", secs));
	else
		printf("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " raw "
		       "messages compressed again (%" G_GUINT64_FORMAT
		       " bytes, now %" G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT
		       " unreadable left as they are, in %u transactions, "
		       "%.2f s\n", total.rewritten, total.examined,
		       total.bytes_before, total.bytes_after,
		       total.unreadable, batches, secs);
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
	if (argc >= 2 && strcmp(argv[1], "train") == 0)
		return store_train(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "recompress") == 0)
		return store_recompress(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		printf("usage: patchgate store info [--json]\n"
		       "       patchgate store verify [--json]\n"
		       "       patchgate store upgrade\n"
		       "       patchgate store train [--samples N] [--json]\n"
		       "       patchgate store recompress [--batch N] [--json]\n\n"
		       "Look after the LMDB store in STATE/store: show its "
		       "schema and size, say\nwhat is damaged in it, "
		       "convert an older one, train the zstd dictionary\n"
		       "its raw mail is compressed with, compress older mail "
		       "again with it.\n");
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "usage: patchgate store info|verify|upgrade|train|"
		    "recompress; see "
		    "'patchgate store --help'");
	return 0;
}
