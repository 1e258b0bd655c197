/* bwrap.c - the sandbox's file system and bwrap's command line.
 *
 * The step sees an allow-list (docs/ci-local.md): /usr and the top-level
 * links into it, a few files of /etc, a private /dev, /dev/shm, /proc and
 * /tmp, the ro_binds, and its work directory on PGATE_CI_LOCAL_WORK_MOUNT;
 * the root itself is an empty tmpfs made read-only at the end.  What
 * patchgate must keep from the step (the state directory, the
 * configuration, the secrets' files) is masked where a bound tree holds
 * it.  The step's argv follows bwrap's, under "timeout -s KILL" as a
 * backstop; nothing of the job is ever interpolated into a command line.
 */
#include "ci/local/local-private.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The top-level links (or, on a system without merged /usr, directories)
 * that lead into /usr. */
static const char *const root_entries[] = {
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

/* What of /etc a build needs: the dynamic linker's cache, the
 * alternatives (cc, c++, awk...), the users and groups (id, whoami, ls
 * -l), name service, hosts (localhost), time zone, the system's name. */
static const char *const etc_entries[] = {
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
	"/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf",
	"/etc/localtime", "/etc/timezone", "/etc/os-release",
	"/etc/debian_version", "/etc/protocols", "/etc/services",
};

/* /dev/shm: POSIX shared memory and semaphores, in memory: bounded */
#define SHM_SIZE (64u << 20)

typedef struct {
	char *src;       /* on the host, symlinks resolved */
	char *dest;      /* in the sandbox */
	gboolean user;   /* from ro_binds */
} Bind;

static void
bind_free(gpointer p)
{
	Bind *b = p;

	g_free(b->src);
	g_free(b->dest);
	g_free(b);
}

/* Whether @path is @dir or below it (both absolute and canonical). */
static gboolean
path_within(const char *path, const char *dir)
{
	gsize n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return TRUE;
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

static void
add_bind(GPtrArray *binds, const char *src, const char *dest,
	 gboolean user)
{
	char real[PATH_MAX];
	Bind *b;

	if (realpath(src, real) == NULL)
		return;  /* bwrap says so (user binds) or it is optional */
	b = g_new0(Bind, 1);
	b->src = g_strdup(real);
	b->dest = g_strdup(dest);
	b->user = user;
	g_ptr_array_add(binds, b);
}

/*
 * What patchgate must keep from the step (common/secret.c: the state
 * directory, the configuration file, every secret's file): the
 * allow-list binds none of them, but a bound tree may hold one (a
 * configuration under /usr/local/etc, an ro_binds directory holding the
 * state): each is hidden under an empty tmpfs (a directory) or /dev/null
 * (a file).  An ro_binds source that lies inside one of them would hand
 * the step what it holds: refused.
 */
static gboolean
add_masks(GPtrArray *a, const GPtrArray *binds, GError **error)
{
	g_auto(GStrv) protect = pgate_secret_paths();

	for (guint i = 0; protect[i]; i++) {
		char real[PATH_MAX];
		struct stat st;

		if (realpath(protect[i], real) == NULL ||
		    stat(real, &st) < 0)
			continue;  /* not there: nothing to see */
		for (guint j = 0; j < binds->len; j++) {
			const Bind *b = binds->pdata[j];
			g_autofree char *dest = NULL;

			if (b->user && path_within(b->src, real)) {
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_CONFIG,
					    "ro_binds %s would show the step "
					    "%s (the state directory, the "
					    "configuration or a secret)",
					    b->src, protect[i]);
				return FALSE;
			}
			if (!path_within(real, b->src))
				continue;
			dest = g_build_filename(b->dest,
						real + strlen(b->src), NULL);
			if (S_ISDIR(st.st_mode)) {
				g_ptr_array_add(a, g_strdup("--tmpfs"));
			} else {
				g_ptr_array_add(a, g_strdup("--ro-bind"));
				g_ptr_array_add(a, g_strdup("/dev/null"));
			}
			g_ptr_array_add(a, g_steal_pointer(&dest));
		}
	}
	return TRUE;
}

GPtrArray *
pgate_ci_local__bwrap_argv(const PgateCiLocalStepContext *ctx,
			   const PgateCiLocalStep *step, const char *bwrap,
			   GError **error)
{
	const PgateCiLocalConfig *cfg = ctx->cfg;
	g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) binds = g_ptr_array_new_with_free_func(bind_free);

#define ADD(s) g_ptr_array_add(a, g_strdup(s))
	ADD(bwrap);
	ADD("--unshare-all");
	ADD("--unshare-user");
	ADD("--disable-userns");
	ADD("--die-with-parent");
	ADD("--new-session");
	/* the root is an empty tmpfs, made read-only at the end: what is
	 * not bound below does not exist */
	ADD("--ro-bind"); ADD("/usr"); ADD("/usr");
	add_bind(binds, "/usr", "/usr", FALSE);
	for (gsize i = 0; i < G_N_ELEMENTS(root_entries); i++) {
		const char *e = root_entries[i];
		g_autofree char *target = g_file_read_link(e, NULL);
		struct stat st;

		if (target) {
			ADD("--symlink"); ADD(target); ADD(e);
		} else if (lstat(e, &st) == 0 && S_ISDIR(st.st_mode)) {
			ADD("--ro-bind"); ADD(e); ADD(e);
			add_bind(binds, e, e, FALSE);
		}
	}
	for (gsize i = 0; i < G_N_ELEMENTS(etc_entries); i++) {
		ADD("--ro-bind-try"); ADD(etc_entries[i]); ADD(etc_entries[i]);
		add_bind(binds, etc_entries[i], etc_entries[i], FALSE);
	}
	ADD("--dev"); ADD("/dev");
	g_ptr_array_add(a, g_strdup("--size"));
	g_ptr_array_add(a, g_strdup_printf("%u", SHM_SIZE));
	ADD("--tmpfs"); ADD("/dev/shm");
	ADD("--proc"); ADD("/proc");
	ADD("--bind"); ADD(ctx->tmpdir); ADD("/tmp");
	for (guint i = 0; i + 1 < cfg->ro_binds->len; i += 2) {
		ADD("--ro-bind");
		ADD(cfg->ro_binds->pdata[i]);
		ADD(cfg->ro_binds->pdata[i + 1]);
		add_bind(binds, cfg->ro_binds->pdata[i],
			 cfg->ro_binds->pdata[i + 1], TRUE);
	}
	if (ctx->git_objects != NULL) {
		/* nipa: the checkout's .git borrows them (alternates) */
		ADD("--ro-bind"); ADD(ctx->git_objects);
		ADD(PGATE_CI_LOCAL_OBJECTS_MOUNT);
		add_bind(binds, ctx->git_objects, PGATE_CI_LOCAL_OBJECTS_MOUNT,
			 TRUE);
	}
	ADD("--bind"); ADD(ctx->workdir); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	add_bind(binds, ctx->workdir, PGATE_CI_LOCAL_WORK_MOUNT, FALSE);
	add_bind(binds, ctx->tmpdir, "/tmp", FALSE);
	if (!add_masks(a, binds, error))
		return NULL;
	ADD("--remount-ro"); ADD("/dev");
	ADD("--remount-ro"); ADD("/");
	ADD("--chdir"); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	ADD("--json-status-fd"); ADD("3");
	ADD("--clearenv");
	ADD("--setenv"); ADD("HOME"); ADD(PGATE_CI_LOCAL_WORK_MOUNT);
	for (guint i = 0; ctx->env && ctx->env[i]; i++) {
		const char *eq = strchr(ctx->env[i], '=');

		if (eq == NULL)
			continue;
		ADD("--setenv");
		g_ptr_array_add(a, g_strndup(ctx->env[i],
					     (gsize)(eq - ctx->env[i])));
		ADD(eq + 1);
	}
	ADD("--");
	/* A backstop: bwrap's --die-with-parent has a window during its
	 * setup in which the death of this process leaves the sandbox
	 * running; coreutils' timeout bounds its life anyway. */
	ADD("timeout");
	ADD("-s");
	ADD("KILL");
	g_ptr_array_add(a, g_strdup_printf("%u", cfg->timeout_s +
					   PGATE_CI_LOCAL_BACKSTOP_S));
	for (guint i = 0; step->argv[i]; i++)
		ADD(step->argv[i]);
#undef ADD
	g_ptr_array_add(a, NULL);
	return g_steal_pointer(&a);
}
