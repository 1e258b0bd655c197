/* error.c - classifying errors as transient or permanent */
#include "common/pgate-common.h"

#include <errno.h>
#include <gio/gio.h>

PgateErrorCode
pgate_error_errno_code(int errsv)
{
	switch (errsv) {
	case ENOSPC:
	case EDQUOT:
		return PGATE_ERROR_FULL;
	case EAGAIN:
	case EINTR:
	case EBUSY:
	case ETIMEDOUT:
		return PGATE_ERROR_BUSY;
	case EIO:
	case ENOMEM:
	case EMFILE:
	case ENFILE:
		return PGATE_ERROR_IO;
	case ENOENT:
		return PGATE_ERROR_NOT_FOUND;
	case EEXIST:
		return PGATE_ERROR_EXISTS;
	default:
		return PGATE_ERROR_FAILED;
	}
}

static gboolean
is_pgate_domain(GQuark domain)
{
	const char *name = g_quark_to_string(domain);

	return name != NULL && g_str_has_prefix(name, "pgate-");
}

gboolean
pgate_config_verror(GError **error, GQuark domain, const char *group,
		    const char *key, const char *fmt, va_list ap)
{
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);

	if (key != NULL)
		g_set_error(error, domain, PGATE_ERROR_CONFIG, "[%s] %s: %s",
			    group, key, msg);
	else
		g_set_error(error, domain, PGATE_ERROR_CONFIG, "[%s] %s",
			    group, msg);
	return FALSE;
}

gboolean
pgate_config_error(GError **error, GQuark domain, const char *group,
		   const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pgate_config_verror(error, domain, group, key, fmt, ap);
	va_end(ap);
	return FALSE;
}

gboolean
pgate_config_bool_word(const char *v, gboolean *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (gsize i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (g_ascii_strcasecmp(v, yes[i]) == 0) {
			*out = TRUE;
			return TRUE;
		}
		if (g_ascii_strcasecmp(v, no[i]) == 0) {
			*out = FALSE;
			return TRUE;
		}
	}
	return FALSE;
}

gboolean
pgate_error_is_transient(const GError *error)
{
	if (error == NULL)
		return FALSE;
	if (is_pgate_domain(error->domain))
		return error->code == PGATE_ERROR_FULL ||
		       error->code == PGATE_ERROR_BUSY ||
		       error->code == PGATE_ERROR_IO;
	if (error->domain == G_FILE_ERROR)
		return error->code == G_FILE_ERROR_NOSPC ||
		       error->code == G_FILE_ERROR_AGAIN ||
		       error->code == G_FILE_ERROR_INTR ||
		       error->code == G_FILE_ERROR_IO ||
		       error->code == G_FILE_ERROR_NOMEM ||
		       error->code == G_FILE_ERROR_MFILE ||
		       error->code == G_FILE_ERROR_NFILE;
	if (error->domain == G_IO_ERROR)
		return error->code == G_IO_ERROR_NO_SPACE ||
		       error->code == G_IO_ERROR_BUSY ||
		       error->code == G_IO_ERROR_WOULD_BLOCK ||
		       error->code == G_IO_ERROR_TIMED_OUT ||
		       error->code == G_IO_ERROR_TOO_MANY_OPEN_FILES;
	return FALSE;
}
