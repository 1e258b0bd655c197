/* store-verify.c - patchgate store verify [--json]: the store's
 * pgate_store_verify() read in a child process of its own. */
#include "cli/cli.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

/* ---- store verify ----
 *
 * pgate_store_verify() runs in a child process: a damaged page can make
 * LMDB fault or abort, and the verifier must say so rather than die of
 * it.  The child tells the parent what it reads and finds, a line each,
 * tab-separated (no field holds a tab or a line end):
 *
 *   begin DB          about to read database DB
 *   problem DB KEY PROBLEM
 *   end DB ENTRIES
 *   error CODE MESSAGE  the store could not be read (a PgateErrorCode)
 *   done              all read
 *   crash SIGNAME     written by the signal guard, in place of the rest
 *
 * The parent keeps the first MAX_SHOWN problems of each database (and
 * counts them all): one damaged page can make thousands.  A child that
 * did not say "done" crashed in the database it began last: that is a
 * problem too.
 */

#define MAX_SHOWN 100

typedef struct {
	char *database;
	char *key;       /* nullable */
	char *problem;
} VerifyProblem;

static void
verify_problem_free(VerifyProblem *p)
{
	g_free(p->database);
	g_free(p->key);
	g_free(p->problem);
	g_free(p);
}

typedef struct {
	GPtrArray *problems;   /* (element-type VerifyProblem): those shown */
	GHashTable *shown;     /* database -> how many of its are shown */
	guint64 total;         /* every problem */
	json_t *databases;     /* [{name, entries}] */
	guint64 entries;
	char *current;         /* the database begun last */
	char *crash;           /* the signal the guard caught */
	GError *error;         /* the child's */
	gboolean done;
} VerifyResult;

static void
verify_result_clear(VerifyResult *r)
{
	g_ptr_array_unref(r->problems);
	g_hash_table_unref(r->shown);
	json_decref(r->databases);
	g_free(r->current);
	g_free(r->crash);
	g_clear_error(&r->error);
}

static void
add_problem(VerifyResult *r, const char *db, const char *key,
	    const char *problem)
{
	VerifyProblem *p;
	guint n = GPOINTER_TO_UINT(g_hash_table_lookup(r->shown, db));

	r->total++;
	if (n >= MAX_SHOWN)
		return;
	g_hash_table_insert(r->shown, g_strdup(db), GUINT_TO_POINTER(n + 1));
	p = g_new0(VerifyProblem, 1);
	p->database = g_strdup(db);
	p->key = key && *key ? g_strdup(key) : NULL;
	p->problem = g_strdup(problem);
	g_ptr_array_add(r->problems, p);
}

/* ---- the child ---- */

static void
write_all(int fd, const char *p, gsize len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(EX_IOERR);	/* the parent is gone */
		p += n;
		len -= (gsize)n;
	}
}

/* @s as one field: control characters (tabs, line ends) become '?' */
static void
append_field(GString *line, const char *s)
{
	g_string_append_c(line, '\t');
	for (; s != NULL && *s; s++)
		g_string_append_c(line, (guchar)*s < 0x20 ? '?' : *s);
}

static void
child_report(const PgateStoreVerifyReport *r, gpointer data)
{
	int fd = *(int *)data;
	g_autoptr(GString) line = g_string_new(NULL);

	switch (r->event) {
	case PGATE_STORE_VERIFY_BEGIN:
		g_string_append(line, "begin");
		append_field(line, r->database);
		break;
	case PGATE_STORE_VERIFY_PROBLEM:
		g_string_append(line, "problem");
		append_field(line, r->database);
		append_field(line, r->key);
		append_field(line, r->problem);
		break;
	case PGATE_STORE_VERIFY_END:
		g_string_append(line, "end");
		append_field(line, r->database);
		g_string_append_printf(line, "\t%" G_GUINT64_FORMAT, r->entries);
		break;
	}
	g_string_append_c(line, '\n');
	write_all(fd, line->str, line->len);
}

static G_GNUC_NORETURN void
verify_child(PgateCli *cli, const char *dir, int fd)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) line = g_string_new(NULL);

	pgate_cli_guard_arm(fd, "crash\t", "\n", EX_SOFTWARE);
	if (pgate_store_verify(dir, &cli->store_opts, child_report, &fd, NULL,
			       &error)) {
		g_string_append(line, "done\n");
	} else {
		g_string_append_printf(line, "error\t%d", error->code);
		append_field(line, error->message);
		g_string_append_c(line, '\n');
	}
	write_all(fd, line->str, line->len);
	_exit(EX_OK);
}

/* ---- the parent ---- */

static void
parse_line(VerifyResult *r, char *line)
{
	g_auto(GStrv) f = g_strsplit(line, "\t", 5);
	guint n = g_strv_length(f);

	if (n == 2 && strcmp(f[0], "begin") == 0) {
		g_free(r->current);
		r->current = g_strdup(f[1]);
	} else if (n == 4 && strcmp(f[0], "problem") == 0) {
		add_problem(r, f[1], f[2], f[3]);
	} else if (n == 3 && strcmp(f[0], "end") == 0) {
		guint64 entries = g_ascii_strtoull(f[2], NULL, 10);

		g_clear_pointer(&r->current, g_free);
		r->entries += entries;
		if (strcmp(f[1], "data.mdb") != 0)
			json_array_append_new(r->databases, json_pack(
				"{s:s,s:I}", "name", f[1], "entries",
				(json_int_t)entries));
	} else if (n == 3 && strcmp(f[0], "error") == 0) {
		g_clear_error(&r->error);
		r->error = g_error_new_literal(PGATE_STORE_ERROR,
					       (gint)g_ascii_strtoll(f[1], NULL,
								     10), f[2]);
	} else if (n == 1 && strcmp(f[0], "done") == 0) {
		r->done = TRUE;
	} else if (n == 2 && strcmp(f[0], "crash") == 0) {
		g_free(r->crash);
		r->crash = g_strdup(f[1]);
	}
}

static gboolean
run_verify(PgateCli *cli, const char *dir, VerifyResult *r, GError **error)
{
	g_autoptr(GString) buf = g_string_new(NULL);
	int p[2], status;
	pid_t pid;

	if (pipe(p) < 0) {
		g_set_error(error, PGATE_CLI_ERROR, pgate_error_errno_code(errno),
			    "pipe: %s", g_strerror(errno));
		return FALSE;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		g_set_error(error, PGATE_CLI_ERROR, pgate_error_errno_code(errno),
			    "fork: %s", g_strerror(errno));
		close(p[0]);
		close(p[1]);
		return FALSE;
	}
	if (pid == 0) {
		close(p[0]);
		verify_child(cli, dir, p[1]);
	}
	close(p[1]);
	for (;;) {
		char chunk[65536], *nl;
		ssize_t n = read(p[0], chunk, sizeof chunk);
		gsize at = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;

		g_string_append_len(buf, chunk, n);
		while ((nl = memchr(buf->str + at, '\n', buf->len - at))) {
			*nl = '\0';
			parse_line(r, buf->str + at);
			at = (gsize)(nl - buf->str) + 1;
		}
		g_string_erase(buf, 0, (gssize)at);
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r->done || r->error != NULL)
		return TRUE;
	/* it died reading the database it had begun */
	{
		g_autofree char *how = NULL;
		g_autofree char *what = NULL;

		if (r->crash != NULL)
			how = g_strdup(r->crash);
		else if (WIFSIGNALED(status))
			how = g_strdup(g_strsignal(WTERMSIG(status)));
		else
			how = g_strdup_printf("exit %d", WEXITSTATUS(status));
		what = g_strdup_printf("reading it crashed the verifier (%s): "
				       "its pages are damaged", how);
		add_problem(r, r->current ? r->current : "data.mdb", NULL, what);
	}
	return TRUE;
}

int
pgate_cli_store_verify(PgateCli *cli, int argc, char **argv, GError **error)
{
	gboolean json = FALSE;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "print as JSON", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autofree char *dir = g_build_filename(cli->state_dir, PGATE_STATE_STORE, NULL);
	VerifyResult r = { 0 };
	int rc = EX_OK;

	if (!pgate_cli_parse("", "Read every record and index of the store "
			     "and say what is damaged.\n\nExits 0 when the "
			     "store is sound, 65 when something is damaged "
			     "(each problem a line: DATABASE [KEY]: PROBLEM).\n"
			     "Reading a damaged store can crash; this runs "
			     "in a process of its own, and a crash is "
			     "reported as damage of the database being read.",
			     entries, &argc, &argv, error))
		return 0;
	if (argc > 1) {
		g_set_error(error, PGATE_CLI_ERROR, PGATE_CLI_USAGE,
			    "store verify takes no arguments");
		return 0;
	}
	r.problems = g_ptr_array_new_with_free_func(
		(GDestroyNotify)verify_problem_free);
	r.shown = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	r.databases = json_array();
	if (!run_verify(cli, dir, &r, error)) {
		verify_result_clear(&r);
		return 0;
	}
	if (r.error != NULL) {
		g_propagate_error(error, g_steal_pointer(&r.error));
		/* (damage is said as such; a store this user may not read
		 * is not damaged) */
		if (!g_error_matches(*error, PGATE_STORE_ERROR,
				     PGATE_ERROR_CORRUPT))
			pgate_cli_store_denied(cli->state_dir, FALSE, error);
		verify_result_clear(&r);
		return 0;
	}
	if (json) {
		json_t *a = json_array();

		for (guint i = 0; i < r.problems->len; i++) {
			VerifyProblem *p = r.problems->pdata[i];

			json_array_append_new(a, json_pack(
				"{s:s,s:s?,s:s}", "database", p->database,
				"key", p->key, "problem", p->problem));
		}
		pgate_cli_json_print(json_pack(
			"{s:i,s:s,s:b,s:I,s:o,s:O,s:I}", "format_version", 1,
			"store", dir, "clean", r.total == 0, "problems_total",
			(json_int_t)r.total, "problems", a, "databases",
			r.databases, "entries", (json_int_t)r.entries));
	} else {
		for (guint i = 0; i < r.problems->len; i++) {
			VerifyProblem *p = r.problems->pdata[i];

			printf("%s%s%s: %s\n", p->database, p->key ? " " : "",
			       p->key ? p->key : "", p->problem);
		}
		if (r.total > r.problems->len)
			printf("... and %" G_GUINT64_FORMAT " more (at most %d "
			       "are shown for a database)\n",
			       r.total - r.problems->len, MAX_SHOWN);
		if (r.total == 0)
			printf("store %s is sound: %zu databases, %"
			       G_GUINT64_FORMAT " entries\n", dir,
			       json_array_size(r.databases), r.entries);
	}
	if (r.total > 0) {
		g_set_error(error, PGATE_STORE_ERROR, PGATE_ERROR_CORRUPT,
			    "store %s is damaged: %" G_GUINT64_FORMAT
			    " problem%s found", dir, r.total,
			    r.total == 1 ? "" : "s");
		rc = 0;
	}
	verify_result_clear(&r);
	return rc;
}

