/* harness.c - the pipeline tests' store, repository, mail and fake CI
 * backend (harness.h). */
#include "harness.h"
#include "ingest/ingest.h"
#include "threading/threading.h"
#include "testutil.h"

#include <glib/gstdio.h>

#include <fcntl.h>
#include <git2.h>
#include <string.h>
#include <unistd.h>

/* ---- the repository ---- */

#define GIT_OK(x) g_assert_cmpint((x), ==, 0)

static void
commit_files(const char *repo_path, const char *const *files,
	     const char *message, gint64 when, char **out_hex)
{
	git_repository *repo = NULL;
	git_treebuilder *tb = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_reference *head = NULL;
	git_commit *parent = NULL;
	git_oid blob, tree_id, commit;
	char hex[GIT_OID_HEXSZ + 1];

	GIT_OK(git_repository_open(&repo, repo_path));
	if (git_reference_lookup(&head, repo, "refs/heads/master") == 0)
		GIT_OK(git_commit_lookup(&parent, repo,
					 git_reference_target(head)));
	GIT_OK(git_treebuilder_new(&tb, repo, NULL));
	for (guint i = 0; files[i] != NULL; i += 2) {
		GIT_OK(git_blob_create_from_buffer(&blob, repo, files[i + 1],
						   strlen(files[i + 1])));
		GIT_OK(git_treebuilder_insert(NULL, tb, files[i], &blob,
					      GIT_FILEMODE_BLOB));
	}
	GIT_OK(git_treebuilder_write(&tree_id, tb));
	GIT_OK(git_tree_lookup(&tree, repo, &tree_id));
	GIT_OK(git_signature_new(&sig, "Ann Dev", "ann@example.org", when, 0));
	GIT_OK(git_commit_create_v(&commit, repo, "refs/heads/master", sig, sig,
				   NULL, message, tree, parent ? 1 : 0, parent));
	git_oid_tostr(hex, sizeof hex, &commit);
	if (out_hex != NULL)
		*out_hex = g_strdup(hex);
	git_reference_free(head);
	git_commit_free(parent);
	git_signature_free(sig);
	git_tree_free(tree);
	git_treebuilder_free(tb);
	git_repository_free(repo);
}

void
pt_env_open(PtEnv *e)
{
	static const char *const files[] = {
		"a.c", "a 1\n", "b.c", "b 1\n", "c.c", "c 1\n", "d.c", "d 1\n",
		NULL,
	};
	g_autoptr(GError) error = NULL;
	git_repository *repo = NULL;

	memset(e, 0, sizeof *e);
	e->dir = g_dir_make_tmp("pgate-pipe-XXXXXX", NULL);
	g_assert_nonnull(e->dir);
	e->state_dir = g_build_filename(e->dir, "state", NULL);
	g_assert_cmpint(g_mkdir(e->state_dir, 0700), ==, 0);
	e->store = pgate_store_open(e->state_dir,
				    PGATE_STORE_RW | PGATE_STORE_CREATE, NULL,
				    &error);
	g_assert_no_error(error);
	git_libgit2_init();
	e->repo = g_build_filename(e->dir, "repo.git", NULL);
	GIT_OK(git_repository_init(&repo, e->repo, 1));
	GIT_OK(git_repository_set_head(repo, "refs/heads/master"));
	git_repository_free(repo);
	commit_files(e->repo, files, "init\n", 1733212800, &e->base);
}

void
pt_env_close(PtEnv *e)
{
	pgate_store_free(e->store);
	git_libgit2_shutdown();
	pgate_test_rm_rf(e->dir);
	g_free(e->dir);
	g_free(e->state_dir);
	g_free(e->repo);
	g_free(e->base);
}

void
pt_bare_repo(const char *path)
{
	git_repository *repo = NULL;

	GIT_OK(git_repository_init(&repo, path, 1));
	git_repository_free(repo);
}

void
pt_repo_add_upstream_change(PtEnv *e)
{
	static const char *const files[] = {
		"a.c", "a 1\n", "b.c", "b 1\n", "c.c", "c 2\n", "d.c", "d 1\n",
		NULL,
	};

	commit_files(e->repo, files, "c: two\n", 1733212900, NULL);
}

/* ---- mail ---- */

char *
pt_mail(const char *from, const char *msgid, const char *in_reply_to,
	const char *subject, gint64 date, const char *extra_body,
	const char *file, const char *new_line)
{
	g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(date);
	g_autofree char *ds = g_date_time_format(dt, "%a, %d %b %Y %H:%M:%S +0000");
	GString *m = g_string_new(NULL);

	g_string_append_printf(m, "From: %s\nTo: list@example.org\n"
			       "Message-ID: <%s>\nSubject: %s\nDate: %s\n",
			       from, msgid, subject, ds);
	if (in_reply_to != NULL)
		g_string_append_printf(m, "In-Reply-To: <%s>\nReferences: <%s>\n",
				       in_reply_to, in_reply_to);
	g_string_append(m, "MIME-Version: 1.0\n"
			"Content-Type: text/plain; charset=utf-8\n\n");
	g_string_append_printf(m, "The change %s.\n\n", msgid);
	if (extra_body != NULL)
		g_string_append(m, extra_body);
	if (file != NULL) {
		g_string_append_printf(m, "Signed-off-by: %s\n---\n"
				       " %s | 2 +-\n 1 file changed, 1 insertion(+), "
				       "1 deletion(-)\n\n", from, file);
		g_string_append_printf(m, "diff --git a/%s b/%s\n--- a/%s\n"
				       "+++ b/%s\n@@ -1 +1 @@\n-%c 1\n+%s\n",
				       file, file, file, file, file[0], new_line);
		g_string_append(m, "-- \n2.45.0\n");
	}
	return g_string_free(m, FALSE);
}

void
pt_deliver(PtEnv *e, const char *text)
{
	g_autoptr(PgateThreading) t = pgate_threading_new();
	g_autofree char *path = g_build_filename(e->dir, "mail.eml", NULL);
	g_autoptr(GError) error = NULL;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	PgateIngestHooks h = { pgate_threading_hook_begin,
			       pgate_threading_hook_added,
			       pgate_threading_hook_deleted,
			       pgate_threading_hook_commit,
			       pgate_threading_hook_skipped, NULL };
	PgateStoreAddResult res;
	int fd;

	h.payload = t;
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	fd = open(path, O_RDONLY);
	g_assert_cmpint(fd, >=, 0);
	o.hooks = &h;
	g_assert_true(pgate_ingest_deliver(e->store, e->state_dir, fd, &o, &res,
					   NULL, &error));
	g_assert_no_error(error);
	close(fd);
	g_assert_null(pgate_threading_skipped(t));
}

GPtrArray *
pt_series_ids(PtEnv *e)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;

	g_assert_no_error(error);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		g_ptr_array_add(out, g_strdup(s->id));
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	return out;
}

char *
pt_series_of(PtEnv *e, const char *msgid)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	char *found = NULL;

	g_assert_no_error(error);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		gboolean mine = g_strcmp0(s->cover, msgid) == 0;

		for (guint i = 0; !mine && i < s->patches->len; i++)
			mine = strcmp(((PgateSeriesPatch *)s->patches->pdata[i])
				      ->msgid, msgid) == 0;
		if (mine && found == NULL)
			found = g_strdup(s->id);
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	return found;
}

/* ---- the fake CI backend ---- */

typedef struct {
	char *branch;
	GPtrArray *commits;
	PgateJobState state;
	PgateVerdict verdict;
	char *reason;
	char *renamed;           /* (nullable): the handle the next poll gives */
} PtCiJob;

static void
pt_ci_job_free(PtCiJob *j)
{
	g_free(j->branch);
	g_ptr_array_unref(j->commits);
	g_free(j->reason);
	g_free(j->renamed);
	g_free(j);
}

static char *
fake_submit(PgateCiBackend *b, const PgateCiJob *job, GError **error)
{
	PtCi *ci = (PtCi *)b;
	PtCiJob *j;
	char *h;

	if (ci->fail_submits > 0) {
		ci->fail_submits--;
		g_ptr_array_add(ci->calls, g_strdup_printf("submit-failed %s",
							   job->branch));
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
			    "fake: the server is away");
		return NULL;
	}
	h = g_strdup_printf("fake-%u", ++ci->next);
	j = g_new0(PtCiJob, 1);
	j->branch = g_strdup(job->branch);
	j->commits = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < job->commits->len; i++)
		g_ptr_array_add(j->commits, g_strdup(job->commits->pdata[i]));
	j->state = PGATE_JOB_QUEUED;
	g_hash_table_insert(ci->jobs, g_strdup(h), j);
	g_ptr_array_add(ci->calls, g_strdup_printf("submit %s %s", h,
						   job->branch));
	return h;
}

static PgateCiResult *
fake_poll(PgateCiBackend *b, const char *handle, GError **error)
{
	PtCi *ci = (PtCi *)b;
	PtCiJob *j = g_hash_table_lookup(ci->jobs, handle);
	PgateCiResult *r;

	g_ptr_array_add(ci->calls, g_strdup_printf("poll %s", handle));
	if (j == NULL) {
		r = pgate_ci_result_new();
		r->state = PGATE_JOB_LOST;
		r->reason = g_strdup("fake: no such job");
		return r;
	}
	(void)error;
	r = pgate_ci_result_new();
	r->state = j->state;
	r->reason = g_strdup(j->reason);
	if (j->state == PGATE_JOB_RUNNING)
		r->url = g_strdup_printf("https://ci.example.org/%s", handle);
	if (j->state == PGATE_JOB_DONE) {
		r->verdict = j->verdict;
		r->url = g_strdup_printf("https://ci.example.org/%s", handle);
		r->log_path = g_strdup_printf("/var/lib/patchgate/logs/%s.log",
					      handle);
		r->summary = g_strdup("step make\nlast line of the log");
		r->has_tests = TRUE;
		r->tests_total = 10;
		r->tests_failed = j->verdict == PGATE_VERDICT_FAIL;
		r->tests_skipped = 2;
		r->warnings_added = 0;
		for (guint i = 0; ci->per_patch && i < j->commits->len; i++) {
			PgateCiCommitResult *c = pgate_ci_commit_result_new(
				j->commits->pdata[i]);

			c->verdict = i + 1 < j->commits->len
				? PGATE_VERDICT_SUCCESS : j->verdict;
			c->reason = i + 1 < j->commits->len
				? NULL : g_strdup(j->reason);
			g_ptr_array_add(r->commits, c);
		}
	}
	if (j->renamed != NULL) {
		/* the job goes on under its new name only */
		g_autofree char *old = NULL;

		r->handle = g_steal_pointer(&j->renamed);
		g_hash_table_steal_extended(ci->jobs, handle, (gpointer *)&old,
					    NULL);
		g_hash_table_insert(ci->jobs, g_strdup(r->handle), j);
	}
	return r;
}

static gboolean
fake_cancel(PgateCiBackend *b, const char *handle, GError **error)
{
	PtCi *ci = (PtCi *)b;
	PtCiJob *j = g_hash_table_lookup(ci->jobs, handle);

	(void)error;
	g_ptr_array_add(ci->calls, g_strdup_printf("cancel %s", handle));
	if (j != NULL && j->state != PGATE_JOB_DONE) {
		j->state = PGATE_JOB_DONE;
		j->verdict = PGATE_VERDICT_FAIL;
		g_free(j->reason);
		j->reason = g_strdup("aborted");
	}
	return TRUE;
}

static void
fake_free(PgateCiBackend *b)
{
	PtCi *ci = (PtCi *)b;

	g_hash_table_unref(ci->jobs);
	g_ptr_array_unref(ci->calls);
	g_free(ci);
}

static const PgateCiBackendClass fake_class = {
	"fake", fake_submit, fake_poll, NULL, fake_cancel, fake_free,
};

PtCi *
pt_ci_new(void)
{
	PtCi *ci = g_new0(PtCi, 1);

	ci->parent.klass = &fake_class;
	ci->jobs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					 (GDestroyNotify)pt_ci_job_free);
	ci->calls = g_ptr_array_new_with_free_func(g_free);
	return ci;
}

void
pt_ci_set(PtCi *ci, const char *handle, PgateJobState state,
	  PgateVerdict verdict, const char *reason)
{
	PtCiJob *j = g_hash_table_lookup(ci->jobs, handle);

	g_assert_nonnull(j);
	j->state = state;
	j->verdict = verdict;
	g_free(j->reason);
	j->reason = g_strdup(reason);
}

void
pt_ci_finish_all(PtCi *ci, PgateVerdict verdict, const char *reason)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, ci->jobs);
	while (g_hash_table_iter_next(&it, &k, &v))
		pt_ci_set(ci, k, PGATE_JOB_DONE, verdict, reason);
}

void
pt_ci_rename(PtCi *ci, const char *handle, const char *renamed)
{
	PtCiJob *j = g_hash_table_lookup(ci->jobs, handle);

	g_assert_nonnull(j);
	g_free(j->renamed);
	j->renamed = g_strdup(renamed);
}

guint
pt_ci_count(PtCi *ci, const char *prefix)
{
	guint n = 0;

	for (guint i = 0; i < ci->calls->len; i++)
		n += g_str_has_prefix(ci->calls->pdata[i], prefix);
	return n;
}
