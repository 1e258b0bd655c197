/* output.c - JSON output and exit codes shared by the commands. */
#include "cli/cli.h"
#include "common/json.h"
#include "threading/threading.h"

#include <sysexits.h>

void
pgate_cli_json_print(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII |
			     JSON_REAL_PRECISION(6));

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	json_decref(j);
}

json_t *
pgate_cli_json_strv(const GPtrArray *a)
{
	json_t *arr = json_array();

	for (guint i = 0; a != NULL && i < a->len; i++)
		json_array_append_new(arr, json_string(g_ptr_array_index(a, i)));
	return arr;
}

static const struct {
	PgateMsgFlags flag;
	const char *name;
} flag_names[] = {
	{ PGATE_MSG_FLAG_SYNTHETIC_ID, "synthetic-id" },
	{ PGATE_MSG_FLAG_ID_CONFLICT, "id-conflict" },
	{ PGATE_MSG_FLAG_BAD_DATE, "bad-date" },
	{ PGATE_MSG_FLAG_SUBJECT_RFC, "rfc" },
	{ PGATE_MSG_FLAG_SUBJECT_RESEND, "resend" },
	{ PGATE_MSG_FLAG_BINARY_PATCH, "binary-patch" },
	{ PGATE_MSG_FLAG_AUTOMATED, "automated" },
};

static json_t *
json_flags(PgateMsgFlags flags)
{
	json_t *a = json_array();

	for (gsize i = 0; i < G_N_ELEMENTS(flag_names); i++)
		if (flags & flag_names[i].flag)
			json_array_append_new(a, json_string(flag_names[i].name));
	return a;
}

static json_t *
json_date(gint64 t, gint32 tz_minutes)
{
	g_autoptr(GDateTime) utc = g_date_time_new_from_unix_utc(t);
	g_autoptr(GTimeZone) tz = g_time_zone_new_offset(tz_minutes * 60);
	g_autoptr(GDateTime) local = NULL;
	g_autofree char *s = NULL;

	if (utc == NULL || tz == NULL)
		return json_null();
	local = g_date_time_to_timezone(utc, tz);
	if (local == NULL)
		return json_null();
	s = g_date_time_format(local, "%Y-%m-%dT%H:%M:%S%:z");
	return pgate_json_str_or_null(s);
}

static const char *
raw_location_name(PgateRawLocation l)
{
	switch (l) {
	case PGATE_RAW_INLINE: return "inline";
	case PGATE_RAW_FILE: return "file";
	case PGATE_RAW_GIT_BLOB: return "git-blob";
	}
	return "unknown";
}

json_t *
pgate_cli_json_rec(const PgateMessageRec *r)
{
	json_t *o = json_object();
	json_t *trailers = json_array();
	g_autofree char *hash = NULL;
	GString *h = g_string_sized_new(64);

	for (gsize i = 0; i < sizeof r->content_hash; i++)
		g_string_append_printf(h, "%02x", r->content_hash[i]);
	hash = g_string_free(h, FALSE);
	for (guint i = 0; i < r->trailers->len; i++) {
		const PgateTrailer *t = g_ptr_array_index(r->trailers, i);

		json_array_append_new(trailers, json_pack("{s:s,s:s}", "name",
							  t->name, "value",
							  t->value));
	}
	json_object_set_new(o, "num", json_integer((json_int_t)r->num));
	json_object_set_new(o, "msgid", json_string(r->msgid));
	json_object_set_new(o, "kind", json_string(pgate_msg_kind_to_string(r->kind)));
	json_object_set_new(o, "flags", json_flags(r->flags));
	json_object_set_new(o, "subject", pgate_json_str_or_null(r->subject));
	json_object_set_new(o, "name", pgate_json_str_or_null(r->name));
	json_object_set_new(o, "prefixes", pgate_cli_json_strv(r->prefixes));
	json_object_set_new(o, "version", json_integer(r->version));
	json_object_set_new(o, "number", json_integer(r->number));
	json_object_set_new(o, "total", json_integer(r->total));
	json_object_set_new(o, "from", json_pack("{s:o,s:s}", "name",
						 pgate_json_str_or_null(r->from_name),
						 "email", r->from_email ? r->from_email : ""));
	json_object_set_new(o, "date", (r->flags & PGATE_MSG_FLAG_BAD_DATE)
			    ? json_null() : json_date(r->date, r->tz_minutes));
	json_object_set_new(o, "received", json_date(r->received, 0));
	json_object_set_new(o, "in_reply_to", pgate_json_str_or_null(r->in_reply_to));
	json_object_set_new(o, "references", pgate_cli_json_strv(r->references));
	json_object_set_new(o, "list_id", pgate_json_str_or_null(r->list_id));
	json_object_set_new(o, "to", pgate_cli_json_strv(r->to));
	json_object_set_new(o, "cc", pgate_cli_json_strv(r->cc));
	json_object_set_new(o, "pull_url", pgate_json_str_or_null(r->pull_url));
	json_object_set_new(o, "patch_id", pgate_json_str_or_null(r->patch_id));
	json_object_set_new(o, "diff_files", pgate_cli_json_strv(r->diff_files));
	json_object_set_new(o, "trailers", trailers);
	json_object_set_new(o, "base_commit", pgate_json_str_or_null(r->base_commit));
	json_object_set_new(o, "change_id", pgate_json_str_or_null(r->change_id));
	json_object_set_new(o, "prerequisite_patch_ids",
			    pgate_cli_json_strv(r->prereq_patch_ids));
	json_object_set_new(o, "prerequisite_change_ids",
			    pgate_cli_json_strv(r->prereq_change_ids));
	json_object_set_new(o, "prerequisite_message_ids",
			    pgate_cli_json_strv(r->prereq_message_ids));
	json_object_set_new(o, "depends_on", pgate_cli_json_strv(r->depends_on));
	json_object_set_new(o, "based_on", pgate_cli_json_strv(r->based_on));
	json_object_set_new(o, "linked_msgids",
			    pgate_cli_json_strv(r->linked_msgids));
	json_object_set_new(o, "reject_reason", pgate_json_str_or_null(r->reject_reason));
	json_object_set_new(o, "source", pgate_json_str_or_null(r->source));
	json_object_set_new(o, "raw", json_pack("{s:s,s:o,s:I}", "location",
						raw_location_name(r->raw_location),
						"ref", pgate_json_str_or_null(r->raw_ref),
						"size", (json_int_t)r->raw_size));
	json_object_set_new(o, "content_hash", json_string(hash));
	return o;
}

int
pgate_cli_exit_code(const GError *error)
{
	if (error == NULL)
		return EX_OK;
	if (error->domain == PGATE_CLI_ERROR && error->code == PGATE_CLI_USAGE)
		return EX_USAGE;
	if (pgate_error_is_transient(error))
		return EX_TEMPFAIL;
	if (error->domain == G_FILE_ERROR)
		return error->code == G_FILE_ERROR_NOENT ? EX_NOINPUT : EX_IOERR;
	switch ((PgateErrorCode)error->code) {
	case PGATE_ERROR_NOT_FOUND:
		return EX_NOINPUT;
	case PGATE_ERROR_INVALID:
	case PGATE_ERROR_TOO_LARGE:
	case PGATE_ERROR_CORRUPT:
		return EX_DATAERR;
	case PGATE_ERROR_SCHEMA:
	case PGATE_ERROR_CONFIG:
		return EX_CONFIG;
	case PGATE_ERROR_EXISTS:
		return EX_CANTCREAT;
	case PGATE_ERROR_NOT_ALLOWED:
		return EX_NOPERM;
	default:
		return EX_SOFTWARE;
	}
}

/* series list (issue #34): "2024-05-01", "2024-05-01T12:00:00Z" or
 * seconds since the epoch, as replay --since takes them */
gboolean
pgate_cli_parse_date(const char *s, gint64 *out)
{
	g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
	g_autoptr(GDateTime) dt = NULL;
	g_autofree char *full = NULL;
	gint64 secs;

	if (g_ascii_string_to_signed(s, 10, 0, G_MAXINT64, &secs, NULL)) {
		*out = secs;
		return TRUE;
	}
	dt = g_date_time_new_from_iso8601(s, utc);
	if (dt == NULL) {
		full = g_strconcat(s, "T00:00:00", NULL);
		dt = g_date_time_new_from_iso8601(full, utc);
	}
	if (dt == NULL)
		return FALSE;
	*out = g_date_time_to_unix(dt);
	return TRUE;
}

/* series list's page: each series read and printed in turn (the JSON is
 * streamed, never held whole), then "next", the cursor of the next page
 * (on stderr for the text listing). */
gboolean
pgate_cli_series_page_print(PgateStoreTxn *txn, const GPtrArray *ids,
			    const char *next, gboolean json, GError **error)
{
	if (json)
		fputs("{\"format_version\":1,\"series\":[", stdout);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(PgateSeriesRec) r = pgate_store_series_get(
			txn, ids->pdata[i], error);
		json_t *j;

		if (r == NULL) {
			if (json)
				fputs("]}\n", stdout);
			return FALSE;
		}
		if (!json) {
			printf("%s v%u %u/%u%s %s%s <%s>\n", r->id, r->version,
			       r->patches->len, r->total,
			       (r->flags & PGATE_SERIES_FLAG_COMPLETE)
			       ? " complete" : "",
			       r->kind == PGATE_SERIES_KIND_PULL ? "[pull] " : "",
			       r->name, r->submitter_email);
			continue;
		}
		j = pgate_threading_series_json(txn, r);
		if (i > 0)
			fputc(',', stdout);
		json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII |
			   JSON_REAL_PRECISION(6));
		json_decref(j);
	}
	if (json) {
		json_t *n = next != NULL ? json_string(next) : json_null();

		fputs("],\"next\":", stdout);
		json_dumpf(n, stdout, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
		json_decref(n);
		fputs("}\n", stdout);
	} else if (next != NULL) {
		fprintf(stderr, "patchgate: series list: more after --after "
			"%s\n", next);
	}
	return TRUE;
}
