/* config.c - the local backend's settings, read from one GKeyFile group and
 * validated: a wrong value is PGATE_ERROR_CONFIG naming the key, an
 * unknown key is ignored (as everywhere in patchgate).  docs/ci-local.md
 * lists every key. */
#include "ci/local/local-private.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT 1800
#define DEFAULT_MAX_OUTPUT (1024 * 1024)
#define DEFAULT_MEMORY (4ULL << 30)
#define DEFAULT_PIDS 512
#define DEFAULT_CPU 3600
#define DEFAULT_NOFILE 1024
#define DEFAULT_FSIZE (4ULL << 30)
#define DEFAULT_DISK (8ULL << 30)

/* "[GROUP] KEY: what" (pgate_config_error) */
#define config_error(error, group, key, ...) \
	pgate_config_error(error, PGATE_CI_ERROR, group, key, __VA_ARGS__)

static void
step_free(gpointer p)
{
	PgateCiLocalStep *s = p;

	g_free(s->name);
	g_strfreev(s->argv);
	g_free(s);
}

void
pgate_ci_local__config_free(PgateCiLocalConfig *cfg)
{
	if (!cfg)
		return;
	g_ptr_array_unref(cfg->steps);
	g_free(cfg->bwrap);
	g_free(cfg->work_root);
	g_ptr_array_unref(cfg->ro_binds);
	if (cfg->warning_regex)
		g_regex_unref(cfg->warning_regex);
	g_free(cfg->warning_regex_src);
	g_free(cfg->log_url);
	g_free(cfg->user);
	g_array_unref(cfg->groups);
	g_free(cfg);
}

/* ---- log_url: where a job's log is published ---------------------- */

#define LOG_URL_MAX 1024

static const char *const log_url_names[] = {
	"series", "version", "job", "handle", "commit", NULL,
};

/* The placeholder at @p ("{name}..."): its index, and its length in @len;
 * -1 when it is none. */
static int
log_url_placeholder(const char *p, gsize *len)
{
	for (int i = 0; log_url_names[i] != NULL; i++) {
		gsize n = strlen(log_url_names[i]);

		if (strncmp(p + 1, log_url_names[i], n) == 0 && p[n + 1] == '}') {
			*len = n + 2;
			return i;
		}
	}
	return -1;
}

static gboolean
log_url_check(const char *tmpl, const char *group, GError **error)
{
	if (!g_str_has_prefix(tmpl, "https://") &&
	    !g_str_has_prefix(tmpl, "http://")) {
		config_error(error, group, "log_url", "\"%s\" is not an http "
			     "or https URL", tmpl);
		return FALSE;
	}
	if (strlen(tmpl) > LOG_URL_MAX) {
		config_error(error, group, "log_url", "longer than %d bytes",
			     LOG_URL_MAX);
		return FALSE;
	}
	for (const char *p = tmpl; *p; p++) {
		gsize len;

		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '"' ||
		    *p == '<' || *p == '>' || *p == '\\') {
			config_error(error, group, "log_url", "a URL holds no "
				     "space, control character, quote, angle "
				     "bracket or backslash");
			return FALSE;
		}
		if (*p == '}') {
			config_error(error, group, "log_url", "a } without {");
			return FALSE;
		}
		if (*p != '{')
			continue;
		if (log_url_placeholder(p, &len) < 0) {
			config_error(error, group, "log_url", "unknown "
				     "placeholder at \"%.20s\": the known "
				     "ones are {series}, {version}, {job}, "
				     "{handle} and {commit}", p);
			return FALSE;
		}
		p += len - 1;
	}
	return TRUE;
}

char *
pgate_ci_local__log_url(const char *tmpl, const PgateCiJob *job,
			const char *handle)
{
	GString *out = g_string_new(NULL);

	for (const char *p = tmpl; *p; p++) {
		g_autofree char *num = NULL;
		g_autofree char *esc = NULL;
		const char *v = NULL;
		gsize len;
		int i = *p == '{' ? log_url_placeholder(p, &len) : -1;

		if (i < 0) {
			g_string_append_c(out, *p);
			continue;
		}
		switch (i) {
		case 0: v = job->series_id; break;
		case 1: v = num = g_strdup_printf("%u", job->version); break;
		case 2: v = job->job; break;
		case 3: v = handle; break;
		case 4:
			v = job->commits && job->commits->len
				? job->commits->pdata[job->commits->len - 1]
				: NULL;
			break;
		}
		esc = g_uri_escape_string(v ? v : "", NULL, FALSE);
		g_string_append(out, esc);
		p += len - 1;
	}
	return g_string_free(out, FALSE);
}

/* The getters of common/config.c in this group's domain. */
static char *
get_string(GKeyFile *kf, const char *group, const char *key)
{
	char *v = NULL;

	pgate_config_string(kf, group, key, &v, PGATE_CI_ERROR, NULL);
	return v;
}

static gboolean
get_size(GKeyFile *kf, const char *group, const char *key, guint64 def,
	 guint64 min, guint64 max, gboolean zero_ok, guint64 *out,
	 GError **error)
{
	return pgate_config_size(kf, group, key, def, min, max, zero_ok, out,
				 PGATE_CI_ERROR, error);
}

static gboolean
get_uint(GKeyFile *kf, const char *group, const char *key, guint def,
	 guint min, guint max, gboolean zero_ok, guint *out, GError **error)
{
	gint64 v;

	if (!pgate_config_int(kf, group, key, def, min, max, zero_ok, &v,
			      PGATE_CI_ERROR, error))
		return FALSE;
	*out = (guint)v;
	return TRUE;
}

static gboolean
get_bool(GKeyFile *kf, const char *group, const char *key, gboolean def,
	 gboolean *out, GError **error)
{
	return pgate_config_bool(kf, group, key, def, out, PGATE_CI_ERROR,
				 error);
}

static gboolean
valid_step_name(const char *s, gsize len)
{
	if (len == 0 || len > 64)
		return FALSE;
	for (gsize i = 0; i < len; i++)
		if (!g_ascii_isalnum(s[i]) && !strchr("_.-", s[i]))
			return FALSE;
	return TRUE;
}

static gboolean
check_argv(const char *group, const char *key, char **argv, GError **error)
{
	guint n = g_strv_length(argv);

	if (n == 0 || argv[0][0] == '\0')
		return config_error(error, group, key, "an empty command");
	if (n > PGATE_CI_LOCAL_MAX_ARGS)
		return config_error(error, group, key,
				    "more than %d arguments",
				    PGATE_CI_LOCAL_MAX_ARGS);
	for (guint i = 0; i < n; i++)
		if (strlen(argv[i]) > PGATE_CI_LOCAL_MAX_ARG_LEN)
			return config_error(error, group, key,
					    "an argument longer than %d bytes",
					    PGATE_CI_LOCAL_MAX_ARG_LEN);
	return TRUE;
}

static gboolean
add_step(PgateCiLocalConfig *cfg, const char *group, const char *key,
	 char *name, char **argv, GError **error)
{
	g_autofree char *owned_name = name;
	g_auto(GStrv) owned_argv = argv;
	PgateCiLocalStep *s;

	if (!check_argv(group, key, argv, error))
		return FALSE;
	if (cfg->steps->len >= PGATE_CI_LOCAL_MAX_STEPS)
		return config_error(error, group, key, "more than %d steps",
				    PGATE_CI_LOCAL_MAX_STEPS);
	for (guint i = 0; i < cfg->steps->len; i++) {
		const PgateCiLocalStep *o = cfg->steps->pdata[i];

		if (g_str_equal(o->name, name))
			return config_error(error, group, key,
					    "two steps are named \"%s\"", name);
	}
	s = g_new0(PgateCiLocalStep, 1);
	s->name = g_steal_pointer(&owned_name);
	s->argv = g_steal_pointer(&owned_argv);
	g_ptr_array_add(cfg->steps, s);
	return TRUE;
}

/* The default name of an unnamed step: its program's base name made
 * valid, numbered when taken. */
static char *
default_step_name(const PgateCiLocalConfig *cfg, const char *argv0)
{
	g_autofree char *base = g_path_get_basename(argv0);
	GString *s = g_string_new(NULL);
	g_autofree char *cand = NULL;

	for (const char *p = base; *p && s->len < 48; p++)
		g_string_append_c(s, g_ascii_isalnum(*p) || strchr("_.-", *p)
					     ? *p : '_');
	if (s->len == 0)
		g_string_append(s, "step");
	for (guint n = 1;; n++) {
		gboolean taken = FALSE;

		g_free(cand);
		cand = n == 1 ? g_strdup(s->str)
			      : g_strdup_printf("%s-%u", s->str, n);
		for (guint i = 0; i < cfg->steps->len && !taken; i++)
			taken = g_str_equal(((PgateCiLocalStep *)
					     cfg->steps->pdata[i])->name, cand);
		if (!taken)
			break;
	}
	g_string_free(s, TRUE);
	return g_steal_pointer(&cand);
}

/* commands = NAME: ARGV ; NAME: ARGV ...  (each ARGV split by the rules
 * of g_shell_parse_argv: quotes and backslashes, nothing expanded). */
static gboolean
load_commands(PgateCiLocalConfig *cfg, GKeyFile *kf, const char *group,
	      GError **error)
{
	g_auto(GStrv) list = g_key_file_get_string_list(kf, group, "commands",
							 NULL, NULL);

	for (guint i = 0; list && list[i]; i++) {
		const char *item = list[i], *colon, *rest = item;
		g_autofree char *name = NULL;
		g_autoptr(GError) local = NULL;
		char **argv = NULL;

		while (g_ascii_isspace(*item))
			item++;
		if (*item == '\0')
			continue;
		colon = strchr(item, ':');
		if (colon && valid_step_name(item, (gsize)(colon - item)) &&
		    (colon[1] == '\0' || g_ascii_isspace(colon[1]))) {
			name = g_strndup(item, (gsize)(colon - item));
			rest = colon + 1;
		} else {
			rest = item;
		}
		if (!g_shell_parse_argv(rest, NULL, &argv, &local))
			return config_error(error, group, "commands",
					    "command %u (\"%s\"): %s", i + 1,
					    item, local->message);
		if (name == NULL)
			name = default_step_name(cfg, argv[0]);
		if (!add_step(cfg, group, "commands", g_steal_pointer(&name),
			      argv, error))
			return FALSE;
	}
	return TRUE;
}

/* step.NAME = ARG0;ARG1;...  (a GKeyFile list: exactly the argv). */
static gboolean
load_step_keys(PgateCiLocalConfig *cfg, GKeyFile *kf, const char *group,
	       GError **error)
{
	g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);

	for (guint i = 0; keys && keys[i]; i++) {
		const char *name;
		char **argv;

		if (!g_str_has_prefix(keys[i], "step."))
			continue;
		name = keys[i] + 5;
		if (!valid_step_name(name, strlen(name)))
			return config_error(error, group, keys[i],
					    "a step name is 1 to 64 letters, "
					    "digits, '_', '.' or '-'");
		argv = g_key_file_get_string_list(kf, group, keys[i], NULL,
						  NULL);
		if (argv == NULL)
			argv = g_new0(char *, 1);
		if (!add_step(cfg, group, keys[i], g_strdup(name), argv,
			      error))
			return FALSE;
	}
	return TRUE;
}

static gboolean
has_dotdot(const char *path)
{
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);

	for (guint i = 0; parts[i]; i++)
		if (g_str_equal(parts[i], "..") || g_str_equal(parts[i], "."))
			return TRUE;
	return FALSE;
}

static gboolean
load_binds(PgateCiLocalConfig *cfg, GKeyFile *kf, const char *group,
	   GError **error)
{
	static const char *const reserved[] = {
		"/", PGATE_CI_LOCAL_WORK_MOUNT, "/proc", "/dev", "/tmp",
	};
	g_auto(GStrv) list = g_key_file_get_string_list(kf, group, "ro_binds",
							 NULL, NULL);

	for (guint i = 0; list && list[i]; i++) {
		g_auto(GStrv) sd = NULL;
		const char *src, *dest;

		g_strstrip(list[i]);
		if (list[i][0] == '\0')
			continue;
		sd = g_strsplit(list[i], ":", 3);
		if (g_strv_length(sd) > 2)
			return config_error(error, group, "ro_binds",
					    "\"%s\" is not SRC or SRC:DEST",
					    list[i]);
		src = sd[0];
		dest = sd[1] ? sd[1] : sd[0];
		if (!g_path_is_absolute(src) || !g_path_is_absolute(dest) ||
		    has_dotdot(src) || has_dotdot(dest))
			return config_error(error, group, "ro_binds",
					    "\"%s\": paths must be absolute, "
					    "without . or ..", list[i]);
		for (gsize r = 0; r < G_N_ELEMENTS(reserved); r++) {
			g_autofree char *canon = g_canonicalize_filename(dest,
									 "/");
			if (g_str_equal(canon, reserved[r]) ||
			    (r == 1 && g_str_has_prefix(canon,
					PGATE_CI_LOCAL_WORK_MOUNT "/")))
				return config_error(error, group, "ro_binds",
						    "\"%s\": %s is the "
						    "sandbox's own", list[i],
						    reserved[r]);
		}
		if (cfg->ro_binds->len / 2 >= PGATE_CI_LOCAL_MAX_BINDS)
			return config_error(error, group, "ro_binds",
					    "more than %d binds",
					    PGATE_CI_LOCAL_MAX_BINDS);
		g_ptr_array_add(cfg->ro_binds, g_strdup(src));
		g_ptr_array_add(cfg->ro_binds, g_strdup(dest));
	}
	return TRUE;
}

/* "NAME", "UID" or "UID:GID" -> the ids to drop to, and the user's
 * supplementary groups (none for bare numeric ids). */
static gboolean
resolve_user(PgateCiLocalConfig *cfg, const char *group, const char *user,
	     GError **error)
{
	struct passwd pw, *res = NULL;
	g_autofree char *buf = NULL;
	gsize buflen = 16384;
	guint64 uid, gid;
	g_auto(GStrv) ug = g_strsplit(user, ":", 3);
	int rc;

	buf = g_malloc(buflen);
	if (g_ascii_isdigit(user[0])) {
		if (g_strv_length(ug) > 2 ||
		    !g_ascii_string_to_unsigned(ug[0], 10, 0, G_MAXUINT32 - 1,
						&uid, NULL) ||
		    (ug[1] && !g_ascii_string_to_unsigned(ug[1], 10, 0,
							  G_MAXUINT32 - 1,
							  &gid, NULL)))
			return config_error(error, group, "user",
					    "\"%s\" is not UID or UID:GID",
					    user);
		rc = getpwuid_r((uid_t)uid, &pw, buf, buflen, &res);
		if (ug[1] == NULL)
			gid = res ? pw.pw_gid : uid;
		cfg->uid = (uid_t)uid;
		cfg->gid = (gid_t)gid;
		(void)rc;
	} else {
		rc = getpwnam_r(user, &pw, buf, buflen, &res);
		if (res == NULL)
			return config_error(error, group, "user",
					    "no user \"%s\"%s%s", user,
					    rc ? ": " : "",
					    rc ? g_strerror(rc) : "");
		cfg->uid = pw.pw_uid;
		cfg->gid = pw.pw_gid;
		{
			int ngroups = 64;
			gid_t *gl = g_new(gid_t, (gsize)ngroups);

			if (getgrouplist(user, pw.pw_gid, gl, &ngroups) < 0) {
				gl = g_renew(gid_t, gl, (gsize)ngroups);
				if (getgrouplist(user, pw.pw_gid, gl,
						 &ngroups) < 0)
					ngroups = 0;
			}
			for (int i = 0; i < ngroups; i++)
				g_array_append_val(cfg->groups, gl[i]);
			g_free(gl);
		}
	}
	if (cfg->uid == 0 || cfg->gid == 0)
		return config_error(error, group, "user",
				    "\"%s\" is root (uid or gid 0): steps never "
				    "run as root", user);
	for (guint i = 0; i < cfg->groups->len; i++)
		if (g_array_index(cfg->groups, gid_t, i) == 0)
			return config_error(error, group, "user",
					    "\"%s\" is in group 0 (root): "
					    "steps never run as root", user);
	if (cfg->groups->len == 0)
		g_array_append_val(cfg->groups, cfg->gid);
	return TRUE;
}

/* The steps: from commands or from step.NAME keys (never both), at
 * least one; the group must be there. */
static gboolean
load_steps(PgateCiLocalConfig *cfg, GKeyFile *kf, const char *group,
	   GError **error)
{
	if (!g_key_file_has_group(kf, group)) {
		config_error(error, group, "commands",
			     "the group is missing: no steps to run");
		return FALSE;
	}
	if (g_key_file_has_key(kf, group, "commands", NULL)) {
		if (!load_commands(cfg, kf, group, error))
			return FALSE;
		if (cfg->steps->len > 0) {
			g_auto(GStrv) keys = g_key_file_get_keys(kf, group,
								 NULL, NULL);

			for (guint i = 0; keys && keys[i]; i++)
				if (g_str_has_prefix(keys[i], "step.")) {
					config_error(error, group, keys[i],
						     "use either commands or "
						     "step.NAME keys, not "
						     "both");
					return FALSE;
				}
		}
	} else if (!load_step_keys(cfg, kf, group, error)) {
		return FALSE;
	}
	if (cfg->steps->len == 0) {
		config_error(error, group, "commands", "no steps to run");
		return FALSE;
	}
	return TRUE;
}

/* The numeric limits (timeout, max_output, jobs, memory, pids, cpu,
 * nofile, fsize, disk) and the switches sandbox, nipa, differential. */
static gboolean
load_limits(PgateCiLocalConfig *cfg, GKeyFile *kf, const char *group,
	    GError **error)
{
	guint64 max_output;

	if (!get_uint(kf, group, "timeout", DEFAULT_TIMEOUT, 1, 7 * 86400,
		      FALSE, &cfg->timeout_s, error) ||
	    !get_size(kf, group, "max_output", DEFAULT_MAX_OUTPUT, 1024,
		      256ULL << 20, FALSE, &max_output, error) ||
	    !get_uint(kf, group, "jobs", 1, 1, 64, FALSE, &cfg->jobs, error) ||
	    !get_size(kf, group, "memory", DEFAULT_MEMORY, 16ULL << 20,
		      1ULL << 50, TRUE, &cfg->memory, error) ||
	    !get_uint(kf, group, "pids", DEFAULT_PIDS, 8, 4194304, TRUE,
		      &cfg->pids, error) ||
	    !get_uint(kf, group, "cpu", DEFAULT_CPU, 1, 30 * 86400, TRUE,
		      &cfg->cpu_s, error) ||
	    !get_uint(kf, group, "nofile", DEFAULT_NOFILE, 16, 1048576,
		      FALSE, &cfg->nofile, error) ||
	    !get_size(kf, group, "fsize", DEFAULT_FSIZE, 1ULL << 20,
		      1ULL << 50, TRUE, &cfg->fsize, error) ||
	    !get_size(kf, group, "disk", DEFAULT_DISK, 1ULL << 20,
		      1ULL << 50, TRUE, &cfg->disk, error) ||
	    !get_bool(kf, group, "sandbox", TRUE, &cfg->sandbox, error) ||
	    !get_bool(kf, group, "nipa", FALSE, &cfg->nipa, error) ||
	    !get_bool(kf, group, "differential", FALSE, &cfg->differential,
		      error))
		return FALSE;
	cfg->max_output = (gsize)max_output;
	return TRUE;
}

PgateCiLocalConfig *
pgate_ci_local__config_load(GKeyFile *kf, const char *group, GError **error)
{
	g_autoptr(PgateCiLocalConfig) cfg = g_new0(PgateCiLocalConfig, 1);
	g_autofree char *mode = NULL, *user = NULL, *regex = NULL;
	g_autofree char *cgroup = NULL;
	struct stat st;

	cfg->steps = g_ptr_array_new_with_free_func(step_free);
	cfg->ro_binds = g_ptr_array_new_with_free_func(g_free);
	cfg->groups = g_array_new(FALSE, FALSE, sizeof(gid_t));

	if (!load_steps(cfg, kf, group, error))
		return NULL;

	mode = get_string(kf, group, "mode");
	if (mode == NULL || g_str_equal(mode, "series"))
		cfg->mode = PGATE_CI_LOCAL_MODE_SERIES;
	else if (g_str_equal(mode, "patch"))
		cfg->mode = PGATE_CI_LOCAL_MODE_PATCH;
	else {
		config_error(error, group, "mode",
			     "\"%s\" is neither series nor patch", mode);
		return NULL;
	}

	if (!load_limits(cfg, kf, group, error))
		return NULL;

	cgroup = get_string(kf, group, "cgroup");
	if (cgroup == NULL || g_str_equal(cgroup, "auto"))
		cfg->cgroup = TRUE;
	else if (g_str_equal(cgroup, "off"))
		cfg->cgroup = FALSE;
	else {
		config_error(error, group, "cgroup",
			     "\"%s\" is neither auto nor off", cgroup);
		return NULL;
	}

	cfg->bwrap = get_string(kf, group, "bwrap");
	if (cfg->bwrap == NULL || cfg->bwrap[0] == '\0') {
		g_free(cfg->bwrap);
		cfg->bwrap = g_strdup("bwrap");
	}

	cfg->work_root = get_string(kf, group, "work_root");
	if (cfg->work_root == NULL || cfg->work_root[0] == '\0') {
		g_free(cfg->work_root);
		cfg->work_root = g_strdup(g_get_tmp_dir());
	}
	if (!g_path_is_absolute(cfg->work_root) ||
	    stat(cfg->work_root, &st) < 0 || !S_ISDIR(st.st_mode)) {
		config_error(error, group, "work_root",
			     "\"%s\" is not an existing directory given by "
			     "its absolute path", cfg->work_root);
		return NULL;
	}

	if (!load_binds(cfg, kf, group, error))
		return NULL;

	regex = get_string(kf, group, "warning_regex");
	if (regex && regex[0]) {
		g_autoptr(GError) local = NULL;

		/* RAW: output is bytes, not necessarily UTF-8 */
		cfg->warning_regex = g_regex_new(regex,
						 G_REGEX_RAW | G_REGEX_OPTIMIZE,
						 0, &local);
		if (cfg->warning_regex == NULL) {
			config_error(error, group, "warning_regex", "%s",
				     local->message);
			return NULL;
		}
		cfg->warning_regex_src = g_steal_pointer(&regex);
	}

	cfg->log_url = get_string(kf, group, "log_url");
	if (cfg->log_url != NULL && cfg->log_url[0] == '\0')
		g_clear_pointer(&cfg->log_url, g_free);
	if (cfg->log_url != NULL && !log_url_check(cfg->log_url, group, error))
		return NULL;

	user = get_string(kf, group, "user");
	cfg->user = g_strdup(user && user[0] ? user : "nobody");
	cfg->drop = geteuid() == 0;
	if (cfg->drop && !resolve_user(cfg, group, cfg->user, error))
		return NULL;
	return g_steal_pointer(&cfg);
}

char *
pgate_ci_local__config_digest(const PgateCiLocalConfig *cfg)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);

	/* a length before every string: no two step sets hash alike */
	g_checksum_update(sum, (const guchar *)"pgate-ci-local-baseline-1", -1);
	for (guint i = 0; i < cfg->steps->len; i++) {
		const PgateCiLocalStep *s = cfg->steps->pdata[i];
		g_autofree char *hdr = g_strdup_printf(
			"\nstep %zu:%s %u\n", strlen(s->name), s->name,
			g_strv_length(s->argv));

		g_checksum_update(sum, (const guchar *)hdr, -1);
		for (guint a = 0; s->argv[a]; a++) {
			g_autofree char *len = g_strdup_printf(
				"%zu:", strlen(s->argv[a]));

			g_checksum_update(sum, (const guchar *)len, -1);
			g_checksum_update(sum, (const guchar *)s->argv[a], -1);
		}
	}
	if (cfg->warning_regex_src) {
		g_autofree char *hdr = g_strdup_printf(
			"\nregex %zu:", strlen(cfg->warning_regex_src));

		g_checksum_update(sum, (const guchar *)hdr, -1);
		g_checksum_update(sum, (const guchar *)cfg->warning_regex_src,
				  -1);
	}
	/* exit 250 and 111 pass with nipa = on: another outcome (only then
	 * hashed: the digests of the other configurations stay) */
	if (cfg->nipa)
		g_checksum_update(sum, (const guchar *)"\nnipa", -1);
	return g_strdup(g_checksum_get_string(sum));
}
