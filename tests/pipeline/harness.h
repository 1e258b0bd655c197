/* harness.h - what the pipeline's tests build on (harness.c): a store in a
 * temporary directory fed with mail as `patchgate deliver` feeds it, a
 * bare repository to apply to, and a fake CI backend behind ci.h's
 * backend vtable.  Nothing here uses the pipeline's own API, so that the
 * same harness can drive any version of it. */
#pragma once

#include <glib.h>

#include "ci/ci.h"
#include "store/store.h"

/* The scratch of one test. */
typedef struct {
	char *dir;           /* temporary, removed by pt_env_close() */
	char *state_dir;     /* dir/state: the store */
	char *repo;          /* dir/repo.git: bare, master = a.c b.c c.c d.c */
	char *base;          /* master's first commit (hex) */
	PgateStore *store;
} PtEnv;

void pt_env_open(PtEnv *e);
void pt_env_close(PtEnv *e);

/* Creates an empty bare repository at @path (somewhere to push to). */
void pt_bare_repo(const char *path);

/* Adds "c.c: two" (c 1 -> c 2) on top of master, so that a patch making
 * the same change is already applied there. */
void pt_repo_add_upstream_change(PtEnv *e);

/* A mail.  @date: seconds since the epoch; @in_reply_to: (nullable);
 * @file: (nullable): with a patch of that file of the repository, from
 * "F 1" to @new_line ("a 2"); @extra_body: (nullable) lines before the
 * patch (trailers, "base-commit: ...", a pull request). */
char *pt_mail(const char *from, const char *msgid, const char *in_reply_to,
	      const char *subject, gint64 date, const char *extra_body,
	      const char *file, const char *new_line);

/* Delivers @text as `patchgate deliver` does, threaded. */
void pt_deliver(PtEnv *e, const char *text);

/* (transfer full): the ID of the series that has message @msgid (a patch
 * or the cover), or NULL. */
char *pt_series_of(PtEnv *e, const char *msgid);
/* (transfer full): every series ID, in key order. */
GPtrArray *pt_series_ids(PtEnv *e);

/* ---- the fake CI backend ----
 *
 * Jobs get the handles "fake-1", "fake-2", ... in submission order; each
 * is QUEUED until the test says otherwise (pt_ci_set()).  Every call is
 * logged ("submit fake-1 master", "poll fake-1", "cancel fake-1"). */
typedef struct {
	PgateCiBackend parent;
	guint next;
	GHashTable *jobs;        /* handle -> PtCiJob */
	GPtrArray *calls;        /* strings, as above */
	guint fail_submits;      /* so many next submits fail (transient) */
	gboolean per_patch;      /* DONE results carry a verdict per commit */
} PtCi;

PtCi *pt_ci_new(void);
/* The job's next polls answer @state/@verdict/@reason; DONE results carry
 * a url, log path, summary and test counts. */
void pt_ci_set(PtCi *ci, const char *handle, PgateJobState state,
	       PgateVerdict verdict, const char *reason);
/* Every known job DONE with @verdict. */
void pt_ci_finish_all(PtCi *ci, PgateVerdict verdict, const char *reason);
/* The next poll of @handle answers a new handle @renamed (Jenkins: the
 * queue item became a build). */
void pt_ci_rename(PtCi *ci, const char *handle, const char *renamed);
/* How many calls start with @prefix ("submit", "cancel fake-1"). */
guint pt_ci_count(PtCi *ci, const char *prefix);
