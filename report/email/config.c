/* config.c - the email settings, the recipient policy and the rate limit.
 *
 * Every key is documented in docs/report-email.md.  Values are checked
 * strictly: a wrong value is PGATE_ERROR_CONFIG naming the group and key,
 * never a silent default.  Secrets: the SMTP password is read once, here,
 * from a file or the environment; it never appears in an error message
 * (and never in a URL: smtp_url with a user or password is refused).
 */
#include "report/email/email-private.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

PGATE_DEFINE_AUTOPTR(CURLU, curl_url_cleanup)
#define PG_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

/* ---- addresses -------------------------------------------------------- */

static gboolean
is_atext(char c)
{
	return g_ascii_isalnum(c) || strchr("!#$%&'*+/=?^_`{|}~-", c) != NULL;
}

/* A plain ASCII local@domain: no quoting, no comments, no whitespace or
 * control characters, no <>, not starting with '-' (it goes into a
 * sendmail argv after "--", but no chances are taken). */
gboolean
pgate_email__address_ok(const char *addr)
{
	const char *at;
	gsize len, llen;

	if (addr == NULL)
		return FALSE;
	len = strlen(addr);
	if (len < 3 || len > PGATE_EMAIL_MAX_ADDRESS)
		return FALSE;
	at = strrchr(addr, '@');
	if (at == NULL || at == addr || at[1] == '\0')
		return FALSE;
	llen = (gsize)(at - addr);
	if (llen > 64 || addr[0] == '-' || addr[0] == '.' || at[-1] == '.')
		return FALSE;
	for (const char *p = addr; p < at; p++) {
		if (*p == '.') {
			if (p[1] == '.')
				return FALSE;
		} else if (!is_atext(*p)) {
			return FALSE;
		}
	}
	/* domain: dot-separated labels of letters, digits and '-' */
	const char *label = at + 1;
	for (const char *p = at + 1;; p++) {
		if (*p == '.' || *p == '\0') {
			gsize l = (gsize)(p - label);

			if (l == 0 || l > 63 || label[0] == '-' || p[-1] == '-')
				return FALSE;
			if (*p == '\0')
				break;
			label = p + 1;
		} else if (!g_ascii_isalnum(*p) && *p != '-') {
			return FALSE;
		}
	}
	return TRUE;
}

char *
pgate_email__address_domain(const char *addr)
{
	const char *at = addr ? strrchr(addr, '@') : NULL;

	return at ? g_ascii_strdown(at + 1, -1) : NULL;
}

/* ---- key readers ------------------------------------------------------ */

/* "[GROUP] KEY: what" (pgate_config_error) */
#define config_error(error, group, key, ...) \
	pgate_config_error(error, PGATE_REPORT_ERROR, group, key, __VA_ARGS__)

/* The getters of common/config.c in this group's domain. */
static char *
get_str(GKeyFile *kf, const char *group, const char *key)
{
	char *v = NULL;

	pgate_config_string(kf, group, key, &v, PGATE_REPORT_ERROR, NULL);
	return v;
}

static gboolean
get_bool(GKeyFile *kf, const char *group, const char *key, gboolean dflt,
	 gboolean *out, GError **error)
{
	return pgate_config_bool(kf, group, key, dflt, out, PGATE_REPORT_ERROR,
				 error);
}

static gboolean
get_uint(GKeyFile *kf, const char *group, const char *key, guint dflt,
	 guint min, guint max, guint *out, GError **error)
{
	gint64 v;

	if (!pgate_config_int(kf, group, key, dflt, min, max, FALSE, &v,
			      PGATE_REPORT_ERROR, error))
		return FALSE;
	*out = (guint)v;
	return TRUE;
}

/* Seconds, or a number with the suffix s, m, h or d: 1 s to 366 d. */
static gboolean
get_duration(GKeyFile *kf, const char *group, const char *key, gint64 dflt,
	     gint64 *out, GError **error)
{
	return pgate_config_duration(kf, group, key, dflt, 1, 366 * 86400, out,
				     PGATE_REPORT_ERROR, error);
}

/* ---- the secret ------------------------------------------------------- */

static void
wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		g_free(s);
	}
}

/* ---- the transport ---------------------------------------------------- */

static gboolean
host_is_loopback(const char *host)
{
	return g_ascii_strcasecmp(host, "localhost") == 0 ||
	       g_str_has_prefix(host, "127.") || strcmp(host, "[::1]") == 0;
}

static gboolean
parse_smtp_url(PgateEmailConfig *cfg, const char *group, const char *url,
	       GError **error)
{
	PG_AUTO(CURLU) u = curl_url();
	g_autofree char *domain = pgate_email__address_domain(cfg->from_address);
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char *user = NULL, *pass = NULL, *query = NULL, *frag = NULL;
	gboolean ok = FALSE;

	if (u == NULL)
		return config_error(error, group, "smtp_url", "out of memory");
	if (strpbrk(url, " \t\r\n") != NULL ||
	    curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		/* the URL is not repeated: it may hold a password */
		return config_error(error, group, "smtp_url",
				    "not a valid smtp:// or smtps:// URL");
	}
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_USER, &user, 0);
	curl_url_get(u, CURLUPART_PASSWORD, &pass, 0);
	curl_url_get(u, CURLUPART_HOST, &host, 0);
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);

	if (user != NULL || pass != NULL) {
		config_error(error, group, "smtp_url",
			     "must not hold a user or password: use the keys "
			     "user and password_file or password_env");
		goto out;
	}
	if (scheme == NULL || (strcmp(scheme, "smtp") != 0 &&
			       strcmp(scheme, "smtps") != 0)) {
		config_error(error, group, "smtp_url",
			     "the scheme must be smtp or smtps");
		goto out;
	}
	if (host == NULL || *host == '\0' || query != NULL || frag != NULL) {
		config_error(error, group, "smtp_url",
			     "needs a host and no query or fragment");
		goto out;
	}
	/* the path is the name given in EHLO; default: the From domain */
	const char *ehlo = (path != NULL && path[0] == '/') ? path + 1 : "";
	if (*ehlo == '\0')
		ehlo = domain;
	for (const char *p = ehlo; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '.' && *p != '-') {
			config_error(error, group, "smtp_url",
				     "the path (the EHLO name) must be a host "
				     "name");
			goto out;
		}
	}
	cfg->smtps = strcmp(scheme, "smtps") == 0;
	cfg->smtp_url = port ? g_strdup_printf("%s://%s:%s/%s", scheme, host,
					       port, ehlo)
			     : g_strdup_printf("%s://%s/%s", scheme, host, ehlo);
	ok = TRUE;
	if (cfg->user != NULL && !cfg->smtps &&
	    cfg->tls != PGATE_EMAIL_TLS_REQUIRED && !host_is_loopback(host)) {
		config_error(error, group, "starttls",
			     "must be required when a user is set: the "
			     "password would cross the network unencrypted");
		ok = FALSE;
	}
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(user);
	if (pass != NULL) {
		explicit_bzero(pass, strlen(pass));
		curl_free(pass);
	}
	curl_free(query);
	curl_free(frag);
	return ok;
}

static gboolean
read_transport(PgateEmailConfig *cfg, GKeyFile *kf, const char *group,
	       GError **error)
{
	g_autofree char *url = get_str(kf, group, "smtp_url");
	g_autofree char *sendmail = get_str(kf, group, "sendmail");
	g_autofree char *tls = get_str(kf, group, "starttls");
	g_autofree char *pw_file = get_str(kf, group, "password_file");
	g_autofree char *pw_env = get_str(kf, group, "password_env");

	if (g_key_file_has_key(kf, group, "password", NULL))
		return config_error(error, group, "password",
				    "a password is never written in the "
				    "configuration: use password_file or "
				    "password_env");
	if ((url == NULL) == (sendmail == NULL))
		return config_error(error, group, "smtp_url",
				    "set exactly one of smtp_url and sendmail");

	cfg->user = get_str(kf, group, "user");
	cfg->ca_file = get_str(kf, group, "ca_file");
	if (pw_file != NULL && pw_env != NULL)
		return config_error(error, group, "password_file",
				    "set only one of password_file and "
				    "password_env");
	if ((cfg->user != NULL) != (pw_file != NULL || pw_env != NULL))
		return config_error(error, group, "user",
				    "a user needs password_file or "
				    "password_env, and they need a user");

	if (sendmail != NULL) {
		if (cfg->user != NULL || tls != NULL || cfg->ca_file != NULL)
			return config_error(error, group, "sendmail",
					    "user, starttls and ca_file are "
					    "for smtp_url only");
		if (!g_path_is_absolute(sendmail) ||
		    !g_file_test(sendmail, G_FILE_TEST_IS_EXECUTABLE) ||
		    g_file_test(sendmail, G_FILE_TEST_IS_DIR))
			return config_error(error, group, "sendmail",
					    "%s is not an executable file "
					    "(an absolute path)", sendmail);
		cfg->transport = PGATE_EMAIL_TRANSPORT_SENDMAIL;
		cfg->sendmail = g_steal_pointer(&sendmail);
		return TRUE;
	}

	cfg->transport = PGATE_EMAIL_TRANSPORT_SMTP;
	if (tls == NULL || strcmp(tls, "required") == 0)
		cfg->tls = PGATE_EMAIL_TLS_REQUIRED;
	else if (strcmp(tls, "optional") == 0)
		cfg->tls = PGATE_EMAIL_TLS_OPTIONAL;
	else if (strcmp(tls, "no") == 0)
		cfg->tls = PGATE_EMAIL_TLS_NONE;
	else
		return config_error(error, group, "starttls",
				    "\"%s\" is not required, optional or no",
				    tls);
	if (g_str_has_prefix(url, "smtps:") && tls != NULL &&
	    cfg->tls != PGATE_EMAIL_TLS_REQUIRED)
		return config_error(error, group, "starttls",
				    "smtps:// is always encrypted; starttls "
				    "only applies to smtp://");
	if (cfg->ca_file != NULL &&
	    !g_file_test(cfg->ca_file, G_FILE_TEST_IS_REGULAR))
		return config_error(error, group, "ca_file",
				    "%s is not a file", cfg->ca_file);
	if (pw_file != NULL)
		cfg->password = pgate_config_secret_file(
			group, "password_file", pw_file,
			PGATE_EMAIL_MAX_PASSWORD, PGATE_REPORT_ERROR, error);
	else if (pw_env != NULL)
		cfg->password = pgate_config_secret_env(
			group, "password_env", pw_env,
			PGATE_EMAIL_MAX_PASSWORD, PGATE_REPORT_ERROR, error);
	if (cfg->user != NULL && cfg->password == NULL)
		return FALSE;
	if (cfg->user != NULL && strpbrk(cfg->user, "\r\n") != NULL)
		return config_error(error, group, "user", "must be one line");
	return parse_smtp_url(cfg, group, url, error);
}

/* ---- the whole group -------------------------------------------------- */

static gboolean
optin_entry_ok(const char *glob)
{
	gsize len = strlen(glob);

	if (len == 0 || len > PGATE_EMAIL_MAX_ADDRESS)
		return FALSE;
	for (const char *p = glob; *p; p++)
		if (!is_atext(*p) && *p != '.' && *p != '@' && *p != '*' &&
		    *p != '?')
			return FALSE;
	return TRUE;
}

/* format, report_to, dpdk_label; and [report] archive_url, the pattern
 * the site links the archive with, for the links in the replies. */
static gboolean
read_format(PgateEmailConfig *cfg, GKeyFile *kf, const char *group,
	    GError **error)
{
	g_autofree char *format = get_str(kf, group, "format");
	g_autofree char *to = get_str(kf, group, "report_to");
	g_autofree char *label = get_str(kf, group, "dpdk_label");
	g_autofree char *archive = get_str(kf, "report", "archive_url");

	if (format == NULL || strcmp(format, "default") == 0)
		cfg->format = PGATE_EMAIL_FORMAT_DEFAULT;
	else if (strcmp(format, "dpdk") == 0)
		cfg->format = PGATE_EMAIL_FORMAT_DPDK;
	else if (strcmp(format, "0day") == 0)
		cfg->format = PGATE_EMAIL_FORMAT_0DAY;
	else
		return config_error(error, group, "format",
				    "\"%s\" is not default, dpdk or 0day",
				    format);
	if (to != NULL && !pgate_email__address_ok(to))
		return config_error(error, group, "report_to",
				    "\"%s\" is not a plain address", to);
	if (cfg->format == PGATE_EMAIL_FORMAT_DPDK && to == NULL)
		return config_error(error, group, "report_to",
				    "format = dpdk needs the test-report "
				    "address, e.g. test-report@dpdk.org");
	cfg->report_to = to ? g_ascii_strdown(to, -1) : NULL;
	/* dpdk-ci's send-patch-report.sh: a slug, each run of blanks made
	 * one '-' (sed 's,[[:space:]]\+,-,g') */
	if (label == NULL)
		label = g_strdup("patchgate");
	g_strstrip(label);
	{
		char *w = label;
		gboolean blank = FALSE;

		for (const char *p = label; *p; p++) {
			if (g_ascii_isspace(*p)) {
				if (!blank)
					*w++ = '-';
				blank = TRUE;
				continue;
			}
			blank = FALSE;
			if ((guchar)*p < 0x21 || (guchar)*p > 0x7e)
				return config_error(error, group, "dpdk_label",
						    "must be printable ASCII");
			*w++ = *p;
		}
		*w = '\0';
	}
	if (*label == '\0' || strlen(label) > 64)
		return config_error(error, group, "dpdk_label",
				    "must be 1 to 64 characters");
	cfg->dpdk_label = g_steal_pointer(&label);
	if (archive != NULL && strstr(archive, "{msgid}") == NULL)
		return config_error(error, "report", "archive_url",
				    "no {msgid} in '%s'", archive);
	/* unset: each list's known archive (pgate_report_archive_known()) */
	cfg->archive_url = g_steal_pointer(&archive);
	return TRUE;
}

/* maintainers and optin: who mail may go to, as @cfg->to says. */
static gboolean
read_addresses(PgateEmailConfig *cfg, GKeyFile *kf, const char *group,
	       GError **error)
{
	g_auto(GStrv) optin = NULL;
	gsize n_optin = 0;

	{
		g_auto(GStrv) m = g_key_file_get_string_list(kf, group,
							      "maintainers",
							      NULL, NULL);

		for (guint i = 0; m != NULL && m[i] != NULL; i++) {
			g_autofree char *e = g_ascii_strdown(g_strstrip(m[i]),
							     -1);

			if (*e == '\0')
				continue;
			if (!pgate_email__address_ok(e))
				return config_error(error, group, "maintainers",
						    "\"%s\" is not a plain "
						    "address", e);
			if (cfg->maintainers->len >= 64)
				return config_error(error, group, "maintainers",
						    "at most 64 addresses");
			g_ptr_array_add(cfg->maintainers, g_steal_pointer(&e));
		}
	}
	if (cfg->to == PGATE_EMAIL_TO_MAINTAINERS &&
	    cfg->maintainers->len == 0)
		return config_error(error, group, "maintainers",
				    "to = maintainers needs at least one "
				    "address");

	optin = g_key_file_get_string_list(kf, group, "optin", &n_optin, NULL);
	for (gsize i = 0; optin != NULL && i < n_optin; i++) {
		g_autofree char *e = g_ascii_strdown(g_strstrip(optin[i]), -1);

		if (*e == '\0')
			continue;
		if (!optin_entry_ok(e))
			return config_error(error, group, "optin",
					    "\"%s\" is not an address or a glob "
					    "such as *@example.org", e);
		g_ptr_array_add(cfg->optin, g_steal_pointer(&e));
	}
	if (cfg->to == PGATE_EMAIL_TO_OPTIN && cfg->optin->len == 0)
		return config_error(error, group, "optin",
				    "to = submitter-optin needs at least one "
				    "address or glob");
	return TRUE;
}

/* from_address, from_name and envelope_from: whom the mails come from;
 * contact: whom they ask to be told when a result looks wrong. */
static gboolean
read_sender(PgateEmailConfig *cfg, GKeyFile *kf, const char *group,
	    GError **error)
{
	g_autofree char *from = get_str(kf, group, "from_address");

	if (from == NULL)
		return config_error(error, group, "from_address",
				    "is needed when enabled");
	if (!pgate_email__address_ok(from))
		return config_error(error, group, "from_address",
				    "\"%s\" is not a plain address", from);
	cfg->from_address = g_ascii_strdown(from, -1);
	cfg->from_name = get_str(kf, group, "from_name");
	if (cfg->from_name == NULL)
		cfg->from_name = g_strdup("patchgate");
	if (!g_utf8_validate(cfg->from_name, -1, NULL) ||
	    g_utf8_strlen(cfg->from_name, -1) > 64)
		return config_error(error, group, "from_name",
				    "must be UTF-8 of at most 64 characters");
	g_autofree char *env_from = get_str(kf, group, "envelope_from");
	if (env_from != NULL && !pgate_email__address_ok(env_from))
		return config_error(error, group, "envelope_from",
				    "\"%s\" is not a plain address", env_from);
	cfg->envelope_from = env_from ? g_ascii_strdown(env_from, -1)
				      : g_strdup(cfg->from_address);
	cfg->contact = get_str(kf, group, "contact");
	if (cfg->contact != NULL &&
	    (!g_utf8_validate(cfg->contact, -1, NULL) ||
	     strlen(cfg->contact) > 200))
		return config_error(error, group, "contact",
				    "must be UTF-8 of at most 200 bytes");
	return TRUE;
}

static gboolean
config_read(PgateEmailConfig *cfg, GKeyFile *kf, const char *group,
	    GError **error)
{
	g_autofree char *to = NULL, *when = NULL;

	if (!get_bool(kf, group, "enabled", FALSE, &cfg->enabled, error))
		return FALSE;
	if (!cfg->enabled)
		return TRUE;

	to = get_str(kf, group, "to");
	if (to == NULL || strcmp(to, "submitter-optin") == 0)
		cfg->to = PGATE_EMAIL_TO_OPTIN;
	else if (strcmp(to, "everyone") == 0 || strcmp(to, "author") == 0 ||
		 strcmp(to, "author+list") == 0)
		cfg->to = PGATE_EMAIL_TO_EVERYONE;
	else if (strcmp(to, "maintainers") == 0)
		cfg->to = PGATE_EMAIL_TO_MAINTAINERS;
	else
		return config_error(error, group, "to",
				    "\"%s\" is not submitter-optin, everyone, "
				    "author, author+list or maintainers", to);
	if (!read_addresses(cfg, kf, group, error))
		return FALSE;

	when = get_str(kf, group, "when");
	if (when == NULL || strcmp(when, "failure") == 0 ||
	    strcmp(when, "failures") == 0)
		cfg->when = PGATE_EMAIL_WHEN_FAILURE;
	else if (strcmp(when, "always") == 0 || strcmp(when, "all") == 0)
		cfg->when = PGATE_EMAIL_WHEN_ALWAYS;
	else
		return config_error(error, group, "when",
				    "\"%s\" is not failure(s), always or all",
				    when);
	if (!get_bool(kf, group, "cc_list", FALSE, &cfg->cc_list, error))
		return FALSE;
	/* author+list: the author, the list copied */
	if (to != NULL && strcmp(to, "author+list") == 0)
		cfg->cc_list = TRUE;
	if (cfg->to == PGATE_EMAIL_TO_MAINTAINERS)
		cfg->cc_list = FALSE;
	if (!get_bool(kf, group, "digest", FALSE, &cfg->digest, error))
		return FALSE;
	{
		g_autofree char *v = get_str(kf, group, "max_per_day");
		guint64 n = 0;

		if (v != NULL &&
		    (!g_ascii_string_to_unsigned(v, 10, 0, 100000, &n, NULL)))
			return config_error(error, group, "max_per_day",
					    "\"%s\" is not a number from 0 to "
					    "100000", v);
		cfg->max_per_day = (guint)n;
	}

	if (!read_sender(cfg, kf, group, error))
		return FALSE;

	if (!get_uint(kf, group, "rate_max", 10, 0, 100000, &cfg->rate_max,
		      error) ||
	    !get_duration(kf, group, "rate_period", 86400, &cfg->rate_period,
			  error) ||
	    !get_uint(kf, group, "connect_timeout", 30, 1, 3600,
		      &cfg->connect_timeout, error) ||
	    !get_uint(kf, group, "timeout", 120, 1, 86400, &cfg->timeout,
		      error) ||
	    !get_uint(kf, group, "log_lines", 40, 0, PGATE_EMAIL_MAX_LOG_LINES,
		      &cfg->log_lines, error) ||
	    !get_uint(kf, group, "log_bytes", 4096, 0,
		      PGATE_EMAIL_MAX_LOG_BYTES, &cfg->log_bytes, error))
		return FALSE;

	if (!read_format(cfg, kf, group, error))
		return FALSE;
	return read_transport(cfg, kf, group, error);
}

PgateEmailConfig *
pgate_email_config_new(GKeyFile *kf, const char *group, GError **error)
{
	g_autoptr(PgateEmailConfig) cfg = g_new0(PgateEmailConfig, 1);

	g_return_val_if_fail(kf != NULL && group != NULL, NULL);
	cfg->optin = g_ptr_array_new_with_free_func(g_free);
	cfg->maintainers = g_ptr_array_new_with_free_func(g_free);
	cfg->rate_max = 10;
	cfg->rate_period = 86400;
	cfg->connect_timeout = 30;
	cfg->timeout = 120;
	cfg->log_lines = 40;
	cfg->log_bytes = 4096;
	if (!config_read(cfg, kf, group, error))
		return NULL;
	return g_steal_pointer(&cfg);
}

void
pgate_email_config_free(PgateEmailConfig *cfg)
{
	if (cfg == NULL)
		return;
	g_ptr_array_unref(cfg->optin);
	if (cfg->maintainers != NULL)
		g_ptr_array_unref(cfg->maintainers);
	g_free(cfg->from_address);
	g_free(cfg->from_name);
	g_free(cfg->envelope_from);
	g_free(cfg->contact);
	g_free(cfg->smtp_url);
	g_free(cfg->ca_file);
	g_free(cfg->user);
	wipe_free(cfg->password);
	g_free(cfg->sendmail);
	g_free(cfg->report_to);
	g_free(cfg->dpdk_label);
	g_free(cfg->archive_url);
	g_free(cfg);
}

gboolean
pgate_email_config_enabled(const PgateEmailConfig *cfg)
{
	return cfg != NULL && cfg->enabled;
}

gboolean
pgate_email_config_digest(const PgateEmailConfig *cfg)
{
	return cfg != NULL && cfg->enabled && cfg->digest;
}

guint
pgate_email_config_max_per_day(const PgateEmailConfig *cfg)
{
	return cfg != NULL && cfg->enabled ? cfg->max_per_day : 0;
}

PgateEmailFormat
pgate_email_config_format(const PgateEmailConfig *cfg)
{
	return cfg != NULL && cfg->enabled ? cfg->format
					   : PGATE_EMAIL_FORMAT_DEFAULT;
}

const char *
pgate_email_config_from(const PgateEmailConfig *cfg)
{
	return cfg->from_address;
}

const char *
pgate_email_config_envelope_from(const PgateEmailConfig *cfg)
{
	return cfg->envelope_from;
}

/* ---- policy ----------------------------------------------------------- */

const char *
pgate_email_decision_to_string(PgateEmailDecision d)
{
	switch (d) {
	case PGATE_EMAIL_SEND: return "send";
	case PGATE_EMAIL_SKIP_DISABLED: return "email reports are disabled";
	case PGATE_EMAIL_SKIP_NOT_OPTED_IN:
		return "submitter has not opted in";
	case PGATE_EMAIL_SKIP_SUCCESS:
		return "nothing failed and when = failure";
	case PGATE_EMAIL_SKIP_BAD_ADDRESS:
		return "submitter address unusable";
	}
	return "unknown";
}

static gboolean
opted_in(const PgateEmailConfig *cfg, const char *addr)
{
	if (cfg->to == PGATE_EMAIL_TO_EVERYONE ||
	    cfg->to == PGATE_EMAIL_TO_MAINTAINERS)
		return TRUE;
	for (guint i = 0; i < cfg->optin->len; i++)
		if (g_pattern_match_simple(cfg->optin->pdata[i], addr))
			return TRUE;
	return FALSE;
}

GPtrArray *
pgate_email_recipients(const PgateEmailConfig *cfg,
		       const char *submitter_email, gboolean failed,
		       const char *list_address,
		       PgateEmailDecision *out_decision)
{
	g_autoptr(GPtrArray) rcpts = g_ptr_array_new_with_free_func(g_free);
	PgateEmailDecision d = PGATE_EMAIL_SEND;
	g_autofree char *addr = NULL;

	if (cfg == NULL || !cfg->enabled) {
		d = PGATE_EMAIL_SKIP_DISABLED;
		goto out;
	}
	if (!pgate_email__address_ok(submitter_email)) {
		d = PGATE_EMAIL_SKIP_BAD_ADDRESS;
		goto out;
	}
	addr = g_ascii_strdown(submitter_email, -1);
	if (!opted_in(cfg, addr)) {
		d = PGATE_EMAIL_SKIP_NOT_OPTED_IN;
		goto out;
	}
	if (!failed && cfg->when == PGATE_EMAIL_WHEN_FAILURE) {
		d = PGATE_EMAIL_SKIP_SUCCESS;
		goto out;
	}
	if (cfg->to == PGATE_EMAIL_TO_MAINTAINERS) {
		/* the maintainers only, never the author */
		for (guint i = 0; i < cfg->maintainers->len; i++)
			g_ptr_array_add(rcpts,
					g_strdup(cfg->maintainers->pdata[i]));
		goto out;
	}
	g_ptr_array_add(rcpts, g_steal_pointer(&addr));
	if (cfg->cc_list && pgate_email__address_ok(list_address)) {
		char *l = g_ascii_strdown(list_address, -1);

		if (strcmp(l, rcpts->pdata[0]) != 0)
			g_ptr_array_add(rcpts, l);
		else
			g_free(l);
	}
out:
	if (out_decision != NULL)
		*out_decision = d;
	return g_steal_pointer(&rcpts);
}

GPtrArray *
pgate_email_report_recipients(const PgateEmailConfig *cfg,
			      const PgateEmailReport *r,
			      PgateEmailDecision *out_decision)
{
	GPtrArray *rcpts;
	PgateEmailDecision d = PGATE_EMAIL_SEND;
	gboolean failed = pgate_email_report_failed(r);

	if (cfg == NULL || !cfg->enabled ||
	    cfg->format != PGATE_EMAIL_FORMAT_DPDK) {
		/* the robot mails failures only, whatever `when` says */
		if (cfg != NULL && cfg->enabled &&
		    cfg->format == PGATE_EMAIL_FORMAT_0DAY && !failed) {
			if (out_decision != NULL)
				*out_decision = PGATE_EMAIL_SKIP_SUCCESS;
			return g_ptr_array_new_with_free_func(g_free);
		}
		return pgate_email_recipients(cfg, r->submitter_email, failed,
					      r->list_address, out_decision);
	}
	/* dpdk: the report goes to the test-report list; the submitter is
	 * copied unless it is a SUCCESS (send-patch-report.sh), when opted
	 * in */
	rcpts = g_ptr_array_new_with_free_func(g_free);
	if (!failed && cfg->when == PGATE_EMAIL_WHEN_FAILURE) {
		d = PGATE_EMAIL_SKIP_SUCCESS;
		goto out;
	}
	g_ptr_array_add(rcpts, g_strdup(cfg->report_to));
	if (pgate_email__dpdk_cc_submitter(cfg, r))
		g_ptr_array_add(rcpts, g_ascii_strdown(r->submitter_email, -1));
out:
	if (out_decision != NULL)
		*out_decision = d;
	return rcpts;
}

gboolean
pgate_email__dpdk_cc_submitter(const PgateEmailConfig *cfg,
			       const PgateEmailReport *r)
{
	g_autofree char *addr = NULL;

	if (strcmp(pgate_email__dpdk_status(r), "SUCCESS") == 0 ||
	    !pgate_email__address_ok(r->submitter_email))
		return FALSE;
	addr = g_ascii_strdown(r->submitter_email, -1);
	return opted_in(cfg, addr) && strcmp(addr, cfg->report_to) != 0;
}

gboolean
pgate_email_rate_allows(const PgateEmailConfig *cfg, const gint64 *sent_times,
			guint n, gint64 now)
{
	guint recent = 0;

	g_return_val_if_fail(cfg != NULL, FALSE);
	if (cfg->rate_max == 0)
		return TRUE;
	for (guint i = 0; sent_times != NULL && i < n; i++)
		if (sent_times[i] > now - cfg->rate_period)
			recent++;
	return recent < cfg->rate_max;
}
