/* report.c - what the report stage's parts share. */
#include "report/report.h"

#include <string.h>

G_DEFINE_QUARK(pgate-report-error-quark, pgate_report_error)

char *
pgate_report_archive_url(const char *pattern, const char *msgid)
{
	const char *tpl = pattern ? pattern : PGATE_REPORT_ARCHIVE_URL;
	const char *at = strstr(tpl, "{msgid}");
	g_autofree char *id = NULL;
	g_autofree char *enc = NULL;
	gsize len;

	if (msgid == NULL)
		return NULL;
	id = g_strstrip(g_strdup(msgid));
	len = strlen(id);
	if (len >= 2 && id[0] == '<' && id[len - 1] == '>') {
		memmove(id, id + 1, len - 2);
		id[len - 2] = '\0';
	}
	if (*id == '\0')
		return NULL;
	/* RFC 3986 pchar: what a path segment may hold as it is */
	enc = g_uri_escape_string(id, "@!$&'()*+,;=:", FALSE);
	return at ? g_strdup_printf("%.*s%s%s", (int)(at - tpl), tpl, enc,
				    at + 7)
		  : g_strconcat(tpl, enc, NULL);
}
