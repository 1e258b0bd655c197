/* report.c - what the report stage's parts share. */
#include "report/report.h"

#include <string.h>

G_DEFINE_QUARK(pgate-report-error-quark, pgate_report_error)

#define LORE "https://lore.kernel.org/r/{msgid}"

/* Lists whose archive is known by their List-Id alone: a name that ends
 * in ".DOMAIN" is every list of DOMAIN.  Only archives that take a
 * Message-ID in their URL (public-inbox's), and only lists known to be
 * archived there: a link to an archive without the list is worse than
 * none (issue #44). */
static const struct {
	const char *list;
	const char *pattern;
} known_archives[] = {
	/* every list of vger.kernel.org and lists.linux.dev is on lore */
	{ ".vger.kernel.org", LORE },
	{ ".lists.linux.dev", LORE },
	/* the kernel's lists of lists.infradead.org that lore mirrors */
	{ "linux-arm-kernel.lists.infradead.org", LORE },
	{ "linux-i3c.lists.infradead.org", LORE },
	{ "linux-mtd.lists.infradead.org", LORE },
	{ "linux-nvme.lists.infradead.org", LORE },
	{ "linux-riscv.lists.infradead.org", LORE },
	{ "linux-rockchip.lists.infradead.org", LORE },
	{ "linux-amlogic.lists.infradead.org", LORE },
	{ "linux-mediatek.lists.infradead.org", LORE },
	{ "linux-um.lists.infradead.org", LORE },
	{ "kexec.lists.infradead.org", LORE },
	{ "ath10k.lists.infradead.org", LORE },
	{ "ath11k.lists.infradead.org", LORE },
	{ "qemu-devel.nongnu.org", "https://lore.kernel.org/qemu-devel/{msgid}/" },
	{ "u-boot.lists.denx.de", "https://lore.kernel.org/u-boot/{msgid}/" },
	{ "dev.dpdk.org", "https://inbox.dpdk.org/dev/{msgid}/" },
	{ "stable.dpdk.org", "https://inbox.dpdk.org/stable/{msgid}/" },
	{ "users.dpdk.org", "https://inbox.dpdk.org/users/{msgid}/" },
};

const char *
pgate_report_archive_known(const char *list_id)
{
	gsize len = list_id ? strlen(list_id) : 0;

	for (guint i = 0; len > 0 && i < G_N_ELEMENTS(known_archives); i++) {
		const char *l = known_archives[i].list;
		gsize n = strlen(l);

		if (l[0] == '.' ? len > n &&
		    g_ascii_strcasecmp(list_id + len - n, l) == 0
				: g_ascii_strcasecmp(list_id, l) == 0)
			return known_archives[i].pattern;
	}
	return NULL;
}

char *
pgate_report_archive_url(const char *pattern, const char *list_id,
			 const char *msgid)
{
	const char *tpl = pattern ? pattern
				  : pgate_report_archive_known(list_id);
	const char *at;
	g_autofree char *id = NULL;
	g_autofree char *enc = NULL;
	gsize len;

	if (msgid == NULL || tpl == NULL || *tpl == '\0')
		return NULL;
	at = strstr(tpl, "{msgid}");
	id = g_strstrip(g_strdup(msgid));
	len = strlen(id);
	if (len >= 2 && id[0] == '<' && id[len - 1] == '>') {
		memmove(id, id + 1, len - 2);
		id[len - 2] = '\0';
	}
	if (*id == '\0')
		return NULL;
	/* RFC 3986 pchar: what a path segment may hold as it is, but ',
	 * which the link must not carry raw into HTML or mail (the site
	 * refuses a URL with one); archives decode %27 as they decode any */
	enc = g_uri_escape_string(id, "@!$&()*+,;=:", FALSE);
	return at ? g_strdup_printf("%.*s%s%s", (int)(at - tpl), tpl, enc,
				    at + 7)
		  : g_strconcat(tpl, enc, NULL);
}

/* ---- checking: `patchgate config check` ------------------------------ */

gboolean
pgate_report_check_template(const char *tpl, const char *const *names,
			    GError **error)
{
	for (const char *p = tpl; *p; p++) {
		const char *close;
		gboolean known = FALSE;

		if (*p == '}') {
			g_set_error(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_CONFIG,
				    "a } without { in '%s'", tpl);
			return FALSE;
		}
		if (*p != '{')
			continue;
		close = strchr(p, '}');
		if (close == NULL) {
			g_set_error(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_CONFIG,
				    "a { without } in '%s'", tpl);
			return FALSE;
		}
		for (guint i = 0; names[i] != NULL && !known; i++)
			known = strlen(names[i]) == (gsize)(close - p - 1) &&
				strncmp(p + 1, names[i], close - p - 1) == 0;
		if (!known) {
			g_autofree char *list = g_strjoinv("}, {",
							   (char **)names);

			/* the expansion would keep it as it is, which no
			 * reader of the result means */
			g_set_error(error, PGATE_REPORT_ERROR,
				    PGATE_ERROR_CONFIG,
				    "unknown placeholder %.*s in '%s' (known: "
				    "{%s})", (int)(close - p + 1), p, tpl,
				    list);
			return FALSE;
		}
		p = close;
	}
	return TRUE;
}

char *
pgate_report_site_job_url(const char *public_url, const char *ci_key)
{
	g_autofree char *rel = NULL;
	gsize n;

	if (public_url == NULL || ci_key == NULL)
		return NULL;
	rel = pgate_report_site_log_path(ci_key);
	n = strlen(public_url);
	return g_strdup_printf("%s%s%s", public_url,
			       n && public_url[n - 1] == '/' ? "" : "/", rel);
}
