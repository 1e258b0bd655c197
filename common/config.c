/* config.c - reading the configuration file's values, once for every
 * module.
 *
 * Each module reads its own group of the INI file (GKeyFile) with these
 * getters, so that every key of every group is read, bounded and worded
 * alike: "[GROUP] KEY: what is wrong" (PGATE_ERROR_CONFIG in the caller's
 * domain).  Values are stripped of surrounding blanks; an absent key, an
 * absent group and an empty value all mean "not set": the default.
 * Secrets come from files or the environment only, and are registered
 * with common/secret.c as they are read.
 */
#include "common/pgate-common.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gboolean
pgate_config_string(GKeyFile *kf, const char *group, const char *key,
		    char **out, GQuark domain, GError **error)
{
	g_autoptr(GError) local = NULL;
	char *v = g_key_file_get_string(kf, group, key, &local);

	*out = NULL;
	if (v == NULL) {
		if (g_error_matches(local, G_KEY_FILE_ERROR,
				    G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
		    g_error_matches(local, G_KEY_FILE_ERROR,
				    G_KEY_FILE_ERROR_GROUP_NOT_FOUND))
			return TRUE;
		return pgate_config_error(error, domain, group, key, "%s",
					  local->message);
	}
	g_strstrip(v);
	if (*v == '\0')
		g_free(v);
	else
		*out = v;
	return TRUE;
}

gboolean
pgate_config_bool(GKeyFile *kf, const char *group, const char *key,
		  gboolean def, gboolean *out, GQuark domain, GError **error)
{
	g_autofree char *v = NULL;

	*out = def;
	if (!pgate_config_string(kf, group, key, &v, domain, error))
		return FALSE;
	if (v == NULL || pgate_config_bool_word(v, out))
		return TRUE;
	return pgate_config_error(error, domain, group, key,
				  "'%s' is not true or false", v);
}

static gboolean
in_range(gint64 v, gint64 min, gint64 max, gboolean zero_off, const char *text,
	 const char *group, const char *key, GQuark domain, GError **error)
{
	if ((v == 0 && zero_off) || (v >= min && v <= max))
		return TRUE;
	return pgate_config_error(error, domain, group, key,
				  "%s is out of range (%" G_GINT64_FORMAT
				  " to %" G_GINT64_FORMAT "%s)", text, min, max,
				  zero_off ? ", or 0 for no limit" : "");
}

gboolean
pgate_config_int(GKeyFile *kf, const char *group, const char *key,
		 gint64 def, gint64 min, gint64 max, gboolean zero_off,
		 gint64 *out, GQuark domain, GError **error)
{
	g_autofree char *v = NULL;
	gint64 n;

	*out = def;
	if (!pgate_config_string(kf, group, key, &v, domain, error))
		return FALSE;
	if (v == NULL)
		return TRUE;
	if (!g_ascii_string_to_signed(v, 10, G_MININT64, G_MAXINT64, &n, NULL))
		return pgate_config_error(error, domain, group, key,
					  "'%s' is not a whole number", v);
	if (!in_range(n, min, max, zero_off, v, group, key, domain, error))
		return FALSE;
	*out = n;
	return TRUE;
}

gboolean
pgate_config_parse_size(const char *s, guint64 *out)
{
	guint64 v, mul = 1;
	char *end;

	if (!g_ascii_isdigit(*s))
		return FALSE;
	errno = 0;
	v = g_ascii_strtoull(s, &end, 10);
	if (errno != 0)
		return FALSE;
	switch (g_ascii_toupper(*end)) {
	case '\0': break;
	case 'K': mul = 1ULL << 10; end++; break;
	case 'M': mul = 1ULL << 20; end++; break;
	case 'G': mul = 1ULL << 30; end++; break;
	case 'T': mul = 1ULL << 40; end++; break;
	default: return FALSE;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || (v != 0 && mul > G_MAXUINT64 / v))
		return FALSE;
	*out = v * mul;
	return TRUE;
}

gboolean
pgate_config_size(GKeyFile *kf, const char *group, const char *key,
		  guint64 def, guint64 min, guint64 max, gboolean zero_off,
		  guint64 *out, GQuark domain, GError **error)
{
	g_autofree char *v = NULL;
	guint64 n;

	*out = def;
	if (!pgate_config_string(kf, group, key, &v, domain, error))
		return FALSE;
	if (v == NULL)
		return TRUE;
	if (!pgate_config_parse_size(v, &n))
		return pgate_config_error(error, domain, group, key,
					  "'%s' is not a size (a number, "
					  "optionally followed by K, M, G "
					  "or T)", v);
	if ((n != 0 || !zero_off) && (n < min || n > max))
		return pgate_config_error(error, domain, group, key,
					  "%s is out of range (%"
					  G_GUINT64_FORMAT " to %"
					  G_GUINT64_FORMAT "%s)", v, min, max,
					  zero_off ? ", or 0 for no limit"
						   : "");
	*out = n;
	return TRUE;
}

gboolean
pgate_config_duration(GKeyFile *kf, const char *group, const char *key,
		      gint64 def, gint64 min, gint64 max, gint64 *out,
		      GQuark domain, GError **error)
{
	g_autofree char *v = NULL;
	gint64 n, mult = 1;
	gsize len;

	*out = def;
	if (!pgate_config_string(kf, group, key, &v, domain, error))
		return FALSE;
	if (v == NULL)
		return TRUE;
	len = strlen(v);
	switch (v[len - 1]) {
	case 's': mult = 1; break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	case 'd': mult = 86400; break;
	default: len++; break;
	}
	{
		g_autofree char *num = g_strndup(v, len - 1);

		if (*num == '\0' ||
		    !g_ascii_string_to_signed(num, 10, 0, G_MAXINT64 / 86400,
					      &n, NULL))
			return pgate_config_error(
				error, domain, group, key,
				"'%s' is not a duration (seconds, or a "
				"number with s, m, h or d)", v);
	}
	n *= mult;
	if (n < min || n > max)
		return pgate_config_error(error, domain, group, key,
					  "%s is out of range (%" G_GINT64_FORMAT
					  " s to %" G_GINT64_FORMAT " s)", v,
					  min, max);
	*out = n;
	return TRUE;
}

gboolean
pgate_config_list(GKeyFile *kf, const char *group, const char *key,
		  char ***out, GQuark domain, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_auto(GStrv) list = g_key_file_get_string_list(kf, group, key, NULL,
							&local);
	GStrvBuilder *b;

	*out = NULL;
	if (list == NULL) {
		if (g_error_matches(local, G_KEY_FILE_ERROR,
				    G_KEY_FILE_ERROR_KEY_NOT_FOUND) ||
		    g_error_matches(local, G_KEY_FILE_ERROR,
				    G_KEY_FILE_ERROR_GROUP_NOT_FOUND))
			return TRUE;
		return pgate_config_error(error, domain, group, key, "%s",
					  local->message);
	}
	b = g_strv_builder_new();
	for (guint i = 0; list[i]; i++)
		if (*g_strstrip(list[i]) != '\0')
			g_strv_builder_add(b, list[i]);
	*out = g_strv_builder_end(b);
	g_strv_builder_unref(b);
	if ((*out)[0] == NULL)
		g_clear_pointer(out, g_strfreev);
	return TRUE;
}

/* One line of printable bytes (no control character, not empty). */
static gboolean
one_line(const char *s)
{
	if (*s == '\0')
		return FALSE;
	for (; *s; s++)
		if ((guchar)*s < 0x20 || *s == 0x7f)
			return FALSE;
	return TRUE;
}

char *
pgate_config_secret_file(const char *group, const char *key,
			 const char *path, gsize max, GQuark domain,
			 GError **error)
{
	g_autofree char *buf = g_malloc(max + 2);
	struct stat st;
	gsize len = 0;
	ssize_t n;
	int fd;

	pgate_secret_add_path(path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		pgate_config_error(error, domain, group, key,
				   "cannot open %s: %s", path, g_strerror(e));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		pgate_config_error(error, domain, group, key,
				   "%s is not a regular file", path);
		return NULL;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		close(fd);
		pgate_config_error(error, domain, group, key,
				   "%s may be read or written by everyone: "
				   "chmod o-rw it (and make a new secret, the "
				   "old one may be known)", path);
		return NULL;
	}
	while (len <= max && (n = read(fd, buf + len, max + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			explicit_bzero(buf, max + 2);
			pgate_config_error(error, domain, group, key,
					   "cannot read %s: %s", path,
					   g_strerror(e));
			return NULL;
		}
		len += (gsize)n;
	}
	close(fd);
	buf[len] = '\0';
	/* the file's line end is not the secret's */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	if (len > max || !one_line(buf)) {
		explicit_bzero(buf, max + 2);
		pgate_config_error(error, domain, group, key,
				   "%s does not hold one line of at most %"
				   G_GSIZE_FORMAT " bytes", path, max);
		return NULL;
	}
	pgate_secret_add(buf);
	{
		char *secret = g_strdup(buf);

		explicit_bzero(buf, max + 2);
		return secret;
	}
}

char *
pgate_config_secret_env(const char *group, const char *key, const char *name,
			gsize max, GQuark domain, GError **error)
{
	const char *v = g_getenv(name);

	if (v == NULL || *v == '\0') {
		pgate_config_error(error, domain, group, key,
				   "the environment variable %s is not set",
				   name);
		return NULL;
	}
	if (strlen(v) > max || !one_line(v)) {
		pgate_config_error(error, domain, group, key,
				   "$%s does not hold one line of at most %"
				   G_GSIZE_FORMAT " bytes", name, max);
		return NULL;
	}
	pgate_secret_add(v);
	return g_strdup(v);
}

/* ---- projects ---- */

#define PROJECT_PREFIX "project "

/* The groups a project may set keys of: what one project's pipeline
 * reads.  The store, ingest, the daemon, the site and upstream are the
 * instance's. */
static const char *const overridable[] = {
	"apply", "ci", "ci.local", "ci.jenkins", "ci.buildbot", "trust",
	"pipeline",
	"patchwork", "email", NULL,
};

const char *
pgate_config_project_name(const char *group)
{
	if (!g_str_has_prefix(group, PROJECT_PREFIX))
		return NULL;
	return group + strlen(PROJECT_PREFIX);
}

gboolean
pgate_config_project_name_valid(const char *name)
{
	gsize n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
		return FALSE;
	for (const char *s = name; *s; s++)
		if (!g_ascii_isalnum(*s) && *s != '_' && *s != '-' &&
		    *s != '.')
			return FALSE;
	return TRUE;
}

gboolean
pgate_config_project_group_overridable(const char *group)
{
	return g_strv_contains(overridable, group);
}

char *
pgate_config_project_key_split(const char *dotted, const char **key_out)
{
	gsize best = 0;

	*key_out = NULL;
	for (const char *dot = strchr(dotted, '.'); dot != NULL;
	     dot = strchr(dot + 1, '.')) {
		g_autofree char *g = g_strndup(dotted, (gsize)(dot - dotted));

		if (dot[1] != '\0' && pgate_config_group_known(g))
			best = (gsize)(dot - dotted);
	}
	if (best == 0)
		return NULL;
	*key_out = dotted + best + 1;
	return g_strndup(dotted, best);
}

char **
pgate_config_projects(GKeyFile *kf)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
	GStrvBuilder *b = g_strv_builder_new();
	char **out;

	for (guint i = 0; groups && groups[i]; i++) {
		const char *name = pgate_config_project_name(groups[i]);

		if (name != NULL)
			g_strv_builder_add(b, name);
	}
	out = g_strv_builder_end(b);
	g_strv_builder_unref(b);
	return out;
}

GKeyFile *
pgate_config_project_keyfile(GKeyFile *kf, const char *name, GQuark domain,
			     GError **error)
{
	g_autofree char *pgroup = g_strconcat(PROJECT_PREFIX, name, NULL);
	g_autoptr(GKeyFile) out = g_key_file_new();
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
	g_auto(GStrv) keys = NULL;

	if (!g_key_file_has_group(kf, pgroup)) {
		g_set_error(error, domain, PGATE_ERROR_CONFIG,
			    "no project %s (no [%s] group)", name, pgroup);
		return NULL;
	}
	/* the defaults: every group but the projects', as written */
	for (guint g = 0; groups[g]; g++) {
		g_auto(GStrv) names = NULL;

		if (pgate_config_project_name(groups[g]) != NULL)
			continue;
		names = g_key_file_get_keys(kf, groups[g], NULL, NULL);
		for (guint i = 0; names && names[i]; i++) {
			g_autofree char *v = g_key_file_get_value(
				kf, groups[g], names[i], NULL);

			if (v != NULL)
				g_key_file_set_value(out, groups[g], names[i],
						     v);
		}
		if (names == NULL || names[0] == NULL) {
			/* an empty group still says "enabled" ([ci.local]
			 * with its defaults): GKeyFile keeps a group whose
			 * last key is removed */
			g_key_file_set_value(out, groups[g], "_", "");
			g_key_file_remove_key(out, groups[g], "_", NULL);
		}
	}
	/* the project's own */
	keys = g_key_file_get_keys(kf, pgroup, NULL, NULL);
	for (guint i = 0; keys && keys[i]; i++) {
		const char *key = NULL;
		g_autofree char *group = NULL, *v = NULL;

		if (strchr(keys[i], '.') == NULL)
			continue;	/* lists, addresses: the project's */
		group = pgate_config_project_key_split(keys[i], &key);
		if (group == NULL ||
		    !pgate_config_project_group_overridable(group)) {
			pgate_config_error(error, domain, pgroup, keys[i],
					   "a project sets GROUP.KEY of "
					   "[apply], [ci], [ci.local], "
					   "[ci.jenkins], [ci.buildbot], "
					   "[trust], [pipeline], "
					   "[patchwork] or [email] only");
			return NULL;
		}
		v = g_key_file_get_value(kf, pgroup, keys[i], NULL);
		if (v != NULL)
			g_key_file_set_value(out, group, key, v);
	}
	return g_steal_pointer(&out);
}
