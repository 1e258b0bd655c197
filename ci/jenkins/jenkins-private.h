/* jenkins-private.h - what the files of the Jenkins backend share.
 *
 * config.c reads and checks the [ci.jenkins]-style group (JkConfig),
 * handle.c encodes the handles the backend gives out, and jenkins.c talks
 * to the server: one curl multi handle per backend drives every request,
 * each a step of a small state machine per job (JkOp), so that many jobs
 * are polled at once without blocking.  docs/ci-jenkins.md describes the
 * behaviour for users.
 */
#pragma once

#include "ci/ci.h"
#include "ci/ci-private.h"

/* The build parameters the backend sends, in this order. */
typedef enum {
	JK_P_REPO_URL = 0,
	JK_P_REF,
	JK_P_COMMIT,
	JK_P_BASE_COMMIT,
	JK_P_SERIES,
	JK_P_VERSION,
	JK_P_BRANCH,
	JK_P_MSGID,
	JK_P_TRIGGER,
	JK_P_N,
} JkParam;

typedef enum {
	JK_AUTH_TOKEN = 0,   /* basic auth with an API token: no crumb */
	JK_AUTH_PASSWORD,    /* basic auth with a password: crumb + cookie */
} JkAuth;

/* The most bytes a secret (token or password) may have. */
#define JK_SECRET_MAX 4096
/* The most bytes a job path, a parameter value, a handle may have. */
#define JK_JOB_PATH_MAX 1024
#define JK_VALUE_MAX 4096
#define JK_HANDLE_MAX 2048
/* The most bytes a trigger id may have (it is kept in the handle). */
#define JK_TRIGGER_MAX 256

typedef struct {
	char *base;          /* scheme://host[:port][/prefix], no trailing / */
	char *link_base;     /* base of the links in results (public_url) */
	char *job;           /* "folder/sub/job" */
	char *job_url_path;  /* "job/folder/job/sub/job/job/", each escaped */
	char *user;
	char *secret;        /* token or password; wiped when freed */
	JkAuth auth;
	char *ca_file;       /* (nullable) */
	char *ca_path;       /* (nullable) */
	guint request_timeout;   /* seconds: the most one call blocks */
	guint retries;           /* extra attempts on 5xx or network errors */
	guint retry_backoff_ms;  /* first pause; doubles per attempt */
	guint max_connections;   /* concurrent requests */
	guint64 queue_timeout;   /* seconds an item may stay queued */
	guint64 build_timeout;   /* seconds a build may run */
	gint64 delay;            /* quiet period in seconds, -1: the job's */
	char *param[JK_P_N];     /* names; NULL: not sent */
} JkConfig;

/* What every request to Jenkins carries (jenkins.c, and online.c's
 * checks): the user agent, basic authentication with the user and its
 * token, the CA. */
void pgate_ci_jenkins__easy_auth(CURL *e, const JkConfig *cfg);

/* config.c */
gboolean pgate_ci_jenkins__config_load(JkConfig *cfg, GKeyFile *kf,
				       const char *group, GError **error);
void pgate_ci_jenkins__config_clear(JkConfig *cfg);
/* Escapes @path ("a/b") into "job/a/job/b/"; NULL if a segment is empty,
 * "." or "..", or holds a control character. */
char *pgate_ci_jenkins__job_url_path(const char *path);

/* What a handle names: a queue item, upgraded to its build once known. */
typedef struct {
	char *job;           /* the job path the trigger went to */
	guint64 queue_id;    /* 0: unknown */
	guint64 build;       /* 0: not known yet */
	gint64 since;        /* when it was submitted, seconds since epoch */
	char *trigger;       /* (nullable) the trigger id it was sent with */
	gboolean merged;     /* Jenkins merged the trigger into an item that
			      * another submission queued */
} JkHandle;

/* handle.c */
char *pgate_ci_jenkins__handle_encode(const JkHandle *h);
gboolean pgate_ci_jenkins__handle_decode(JkHandle *h, const char *text,
					 GError **error);
void pgate_ci_jenkins__handle_clear(JkHandle *h);
/* The queue item number in a Location header ("http://h/ctx/queue/item/
 * 17/"), or 0 when it names none. */
guint64 pgate_ci_jenkins__location_queue_id(const char *location);
/* A one-line, printable, bounded (@max bytes) excerpt of a server's reply
 * or of a queue item's "why", HTML tags removed. */
char *pgate_ci_jenkins__excerpt(const char *text, gsize len, gsize max);
/* The last (at most) @max bytes of a console log, starting at a line,
 * valid UTF-8, without control characters other than newline and tab. */
char *pgate_ci_jenkins__console_tail(const char *text, gsize len, gsize max,
				     gboolean cut_first_line);
