/* cmd-msg.c - patchgate msg list|show */
#include "cli/cli.h"

#include <string.h>
#include <sysexits.h>

static char *
strip_brackets(const char *id)
{
	gsize n = strlen(id);

	if (n >= 2 && id[0] == '<' && id[n - 1] == '>')
		return g_strndup(id + 1, n - 2);
	return g_strdup(id);
}

/* msg show's plain text: the fields of @o as "key: value" lines, then
 * @mail's body and diff (or, with no @mail, why the raw message could not
 * be read: @raw_error). */
static void
msg_print_text(json_t *o, const PgateMail *mail, const GError *raw_error)
{
	const char *key;
	json_t *val;

	json_object_foreach(o, key, val) {
		g_autofree char *s = NULL;

		if (strcmp(key, "body") == 0 || strcmp(key, "diff") == 0)
			continue;
		if (json_is_string(val))
			s = g_strdup(json_string_value(val));
		else
			s = json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT);
		printf("%s: %s\n", key, s ? s : "");
	}
	if (mail != NULL) {
		const char *body = mail->body ? mail->body : "";
		gsize n = strlen(body);

		/* the body as parsed may end without its newline (the
		 * diffstat's last line): the diff starts on a line of its
		 * own, as in the mail */
		printf("\n%s%s%s", body,
		       n > 0 && body[n - 1] != '\n' && mail->diff ? "\n" : "",
		       mail->diff ? mail->diff : "");
	}
	else if (raw_error != NULL)
		printf("\n(%s)\n", raw_error->message);
}

static int
msg_show(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	gint64 want = 0;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ "num", 0, 0, G_OPTION_ARG_INT64, &want,
		  "which of several messages with this ID", "N" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GArray) nums = NULL;
	g_autoptr(PgateMessageRec) rec = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(PgateMail) mail = NULL;
	g_autoptr(GError) raw_error = NULL;
	g_autofree char *id = NULL, *sid = NULL;
	guint64 num = 0;
	json_t *o, *others;

	if (!pgate_cli_parse("MSGID", "Show every parsed field of a stored "
			     "message (angle brackets optional) and the series "
			     "it belongs to.", entries,
			     &argc, &argv, error))
		return 0;
	if (argc != 2) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "msg show takes one MSGID");
		return 0;
	}
	id = strip_brackets(argv[1]);
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	nums = pgate_store_message_lookup(txn, id, error);
	if (nums == NULL)
		return 0;
	if (nums->len == 0) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_NOT_FOUND,
			    "no message <%s>", id);
		return 0;
	}
	others = json_array();
	for (guint i = 0; i < nums->len; i++) {
		guint64 n = g_array_index(nums, guint64, i);

		if ((want == 0 && i == 0) || (guint64)want == n)
			num = n;
		else
			json_array_append_new(others, json_integer((json_int_t)n));
	}
	if (num == 0) {
		json_decref(others);
		g_set_error(error, PGATE_CLI_ERROR, PGATE_ERROR_NOT_FOUND,
			    "message %" G_GINT64_FORMAT " does not have ID <%s>",
			    want, id);
		return 0;
	}
	rec = pgate_store_message_get(txn, num, error);
	if (rec == NULL || !pgate_store_msg_series_get(txn, num, &sid, error)) {
		json_decref(others);
		return 0;
	}
	raw = pgate_ingest_load_raw(txn, cli->state_dir, rec,
				    cli->ingest_opts.max_message_size
				    ? cli->ingest_opts.max_message_size : 64u << 20,
				    &raw_error);
	if (raw != NULL) {
		gsize len;
		const char *data = g_bytes_get_data(raw, &len);

		pgate_ingest_init();
		mail = pgate_mail_parse(data, len, &cli->ingest_opts);
	}
	o = pgate_cli_json_rec(rec);
	json_object_set_new(o, "format_version", json_integer(1));
	json_object_set_new(o, "body", mail && mail->body ?
			    json_string(mail->body) : json_null());
	/* the diff is kept as sent, which may not be UTF-8 (a Latin-1
	 * source file): JSON gets U+FFFD for the bad bytes, and says so */
	if (mail && mail->diff && !g_utf8_validate(mail->diff, -1, NULL)) {
		g_autofree char *valid = g_utf8_make_valid(mail->diff, -1);

		json_object_set_new(o, "diff", json_string(valid));
		json_object_set_new(o, "diff_lossy", json_true());
	} else {
		json_object_set_new(o, "diff", mail && mail->diff ?
				    json_string(mail->diff) : json_null());
		json_object_set_new(o, "diff_lossy", json_false());
	}
	json_object_set_new(o, "same_msgid", others);
	/* the series it is a patch or the cover letter of */
	json_object_set_new(o, "series", sid ? json_string(sid) : json_null());
	if (json) {
		pgate_cli_json_print(o);
		return EX_OK;
	}
	/* plain text: "key: value" lines, then the body */
	msg_print_text(o, mail, raw_error);
	json_decref(o);
	return EX_OK;
}

/* msg list's PgateStoreUnreadableFunc: stderr, and @data (nullable: a
 * JSON array) */
static void
say_unreadable(guint64 num, const GError *why, gpointer data)
{
	fprintf(stderr, "patchgate: msg list: %s\n", why->message);
	if (data != NULL)
		json_array_append_new(data, json_integer((json_int_t)num));
}

static int
msg_list(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(PgateStoreTxn) txn = NULL;
	PgateStoreMessageIter it;
	PgateMessageRec *r;
	json_t *arr = NULL, *unreadable = NULL;
	g_autoptr(GError) local = NULL;

	if (!pgate_cli_parse("", "List every stored message in storage order: "
			     "number, kind, Message-ID, subject.", entries,
			     &argc, &argv, error))
		return 0;
	txn = pgate_store_begin_read(cli->store, error);
	if (txn == NULL)
		return 0;
	if (json) {
		arr = json_array();
		unreadable = json_array();
	}
	pgate_store_message_iter_init(&it, txn);
	/* a record that does not decode is named, and the listing goes on */
	while (pgate_store_message_iter_next_readable(&it, &r, say_unreadable,
						      unreadable, &local)) {
		g_autoptr(PgateMessageRec) rec = r;

		if (json) {
			json_t *full = pgate_cli_json_rec(rec);

			json_array_append_new(arr, json_pack(
				"{s:I,s:s,s:s,s:O,s:O}", "num", (json_int_t)rec->num,
				"msgid", rec->msgid,
				"kind", pgate_msg_kind_to_string(rec->kind),
				"subject", json_object_get(full, "subject"),
				"flags", json_object_get(full, "flags")));
			json_decref(full);
		} else {
			printf("%" G_GUINT64_FORMAT "\t%s\t<%s>\t%s\n", rec->num,
			       pgate_msg_kind_to_string(rec->kind), rec->msgid,
			       rec->subject ? rec->subject : "");
		}
	}
	if (local != NULL) {
		json_decref(arr);
		json_decref(unreadable);
		g_propagate_error(error, g_steal_pointer(&local));
		return 0;
	}
	if (json)
		pgate_cli_json_print(json_pack("{s:i,s:o,s:o}", "format_version",
					       1, "messages", arr, "unreadable",
					       unreadable));
	return EX_OK;
}

int
cmd_msg(PgateCli *cli, int argc, char **argv, GError **error)
{
	if (argc >= 2 && strcmp(argv[1], "show") == 0)
		return msg_show(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && strcmp(argv[1], "list") == 0)
		return msg_list(cli, argc - 1, argv + 1, error);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		printf("usage: patchgate msg list [--json]\n"
		       "       patchgate msg show MSGID [--json] [--num N]\n\n"
		       "Look at the messages in the store.\n");
		return EX_OK;
	}
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "usage: patchgate msg list|show; see 'patchgate msg --help'");
	return 0;
}
