/* store-open.c - what main() and the commands that open the store
 * themselves share: whether a command line needs the store at all (a
 * command group without its subcommand says its usage, and must not say
 * "no store" first), and the store opened with a failure that was this
 * user's permissions said as such (exit 77, EX_NOPERM).
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether @word is one of the '|'-separated @subs. */
static gboolean
sub_known(const char *subs, const char *word)
{
	gsize n = strlen(word);

	for (const char *p = subs; *p;) {
		const char *bar = strchr(p, '|');
		gsize len = bar ? (gsize)(bar - p) : strlen(p);

		if (len == n && strncmp(p, word, n) == 0)
			return TRUE;
		if (bar == NULL)
			break;
		p = bar + 1;
	}
	return FALSE;
}

/* The command groups that open the store before they run (main.c's
 * flags), with their subcommands; store and config open none. */
static const struct {
	const char *command;
	const char *subs;
	gboolean bare_ok;	/* the bare command is one of them */
} groups[] = {
	{ "series", "list|show|mbox", FALSE },
	{ "msg", "list|show", FALSE },
	{ "report", "html", FALSE },
	{ "outbox", "list|send", TRUE },
};

gboolean
pgate_cli_sub_needs_store(const char *command, int argc, char **argv,
			  gboolean *out_store, GError **error)
{
	const char *sub = argc >= 2 ? argv[1] : NULL;
	const char *subs = NULL;
	gboolean bare_ok = FALSE;

	*out_store = TRUE;
	for (gsize i = 0; i < G_N_ELEMENTS(groups); i++)
		if (strcmp(groups[i].command, command) == 0) {
			subs = groups[i].subs;
			bare_ok = groups[i].bare_ok;
		}
	if (subs == NULL)
		return TRUE;
	if (sub == NULL) {
		*out_store = bare_ok;
		return TRUE;
	}
	/* an option first (report --series ID html): the command parses
	 * it, with the store as ever */
	if (sub[0] == '-' || sub_known(subs, sub))
		return TRUE;
	*out_store = FALSE;
	if (!bare_ok)
		return TRUE;	/* the command says its usage */
	/* a command whose bare form is a subcommand would take the word
	 * for an argument of that one (outbox bogus listed the outbox) */
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
		    "unknown subcommand '%s' (%s); see 'patchgate %s --help'",
		    sub, subs, command);
	return FALSE;
}

/* The path's nearest ancestor that exists (transfer full). */
static char *
existing_ancestor(const char *path)
{
	char *p = g_strdup(path);
	struct stat st;

	while (stat(p, &st) < 0 && errno == ENOENT) {
		char *up = g_path_get_dirname(p);

		if (strcmp(up, p) == 0) {
			g_free(up);
			break;
		}
		g_free(p);
		p = up;
	}
	return p;
}

/* Whether this user may @mode (access(2) bits) @path; a path that is
 * not there denies nothing (it is made, or it is not the cause). */
static gboolean
denied(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS) < 0 &&
	       errno == EACCES;
}

/* What the store at @dir needs of this user that it may not do, in
 * words ("read s/store/data.mdb"), or %NULL.  Asked after an open
 * failed only: a reader that may not write lock.mdb reads write.lock
 * instead (docs/store-format.md), so neither is needed alone. */
static char *
store_denial(const char *state_dir, const char *dir, gboolean writable)
{
	g_autofree char *data = g_build_filename(dir, "data.mdb", NULL);
	g_autofree char *lockdb = g_build_filename(dir, "lock.mdb", NULL);
	g_autofree char *wlock = g_build_filename(dir, "write.lock", NULL);
	const char *dirs[] = { state_dir, dir };
	struct stat st;

	for (gsize i = 0; i < G_N_ELEMENTS(dirs); i++) {
		if (stat(dirs[i], &st) < 0 && errno == ENOENT) {
			g_autofree char *up = existing_ancestor(dirs[i]);

			/* a writer makes it: in a directory it may write */
			if (writable && denied(up, W_OK | X_OK))
				return g_strdup_printf("create %s in %s",
						       dirs[i], up);
			return NULL;
		}
		if (denied(dirs[i], X_OK))
			return g_strdup_printf("enter %s", dirs[i]);
	}
	if (denied(data, writable ? R_OK | W_OK : R_OK))
		return g_strdup_printf("%s %s", writable ? "write" : "read",
				       data);
	if (writable) {
		if (denied(dir, W_OK))
			return g_strdup_printf("write in %s", dir);
		if (denied(wlock, R_OK | W_OK))
			return g_strdup_printf("write %s", wlock);
		if (denied(lockdb, R_OK | W_OK))
			return g_strdup_printf("write %s", lockdb);
	} else if (denied(lockdb, R_OK | W_OK) && denied(wlock, R_OK)) {
		return g_strdup_printf("read %s", wlock);
	}
	return NULL;
}

gboolean
pgate_cli_store_denied(const char *state_dir, gboolean writable,
		       GError **error)
{
	g_autofree char *dir = g_build_filename(state_dir, PGATE_STATE_STORE,
						NULL);
	g_autofree char *what = store_denial(state_dir, dir, writable);

	if (what == NULL)
		return FALSE;
	g_clear_error(error);
	g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_NO_PERM,
		    "permission denied: user %s may not %s (the store is %s)",
		    g_get_user_name(), what, dir);
	return TRUE;
}

PgateStore *
pgate_cli_store_open(PgateCli *cli, PgateStoreFlags flags, GError **error)
{
	g_autofree char *dir = g_build_filename(cli->state_dir,
						PGATE_STATE_STORE, NULL);
	PgateStore *store = pgate_store_open(dir, flags, &cli->store_opts,
					     error);

	if (store == NULL)
		pgate_cli_store_denied(cli->state_dir,
				       (flags & (PGATE_STORE_RW |
						 PGATE_STORE_CREATE)) != 0,
				       error);
	return store;
}
