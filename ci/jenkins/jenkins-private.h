/* jenkins-private.h - what the files of the Jenkins backend share.
 *
 * config.c reads and checks the [ci.jenkins]-style group (JkConfig),
 * handle.c encodes the handles the backend gives out, and jenkins.c talks
 * to the server: one curl multi handle per backend drives every request,
 * each a step of a small state machine per job (JkOp), so that many jobs
 * are polled at once without blocking.  jenkins.c submits; track.c polls
 * and cancels, on jenkins.c's engine.  docs/ci-jenkins.md describes the
 * behaviour for users.
 */
#pragma once

#include "ci/ci.h"
#include "ci/ci-private.h"

#include <curl/curl.h>
#include <jansson.h>

PGATE_DEFINE_AUTOPTR(json_t, json_decref)
#define JK_AUTO_JSON \
	__attribute__((cleanup(pgate_autoptr_cleanup_json_t))) json_t *

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

/* -- the engine (jenkins.c), which track.c's operations run on -- */

#define JK_JSON_MAX (1024 * 1024)      /* a JSON reply */
#define JK_WHY_MAX 200

typedef enum {
	CRUMB_UNKNOWN = 0,
	CRUMB_FETCHING,
	CRUMB_HAVE,
	CRUMB_NOT_NEEDED,   /* /crumbIssuer gave 404: CSRF protection off */
} CrumbState;

typedef struct {
	PgateCiBackend parent;
	JkConfig cfg;
	CURLM *multi;
	CURLSH *share;          /* the cookie jar (password auth) */
	CrumbState crumb_state;
	struct JkOp *crumb_owner; /* the operation fetching it (FETCHING) */
	char *crumb_header;     /* "Jenkins-Crumb: <crumb>" */
	gboolean clear_cookies; /* before the next crumb request */
	gint64 deadline;        /* monotonic µs: the running call's end */
} JkBackend;

typedef enum { OP_SUBMIT, OP_POLL, OP_CANCEL } OpKind;

typedef struct JkOp JkOp;
typedef void (*JkHandler)(JkOp *op);

/* One HTTP request and its reply. */
typedef struct {
	gboolean post;
	char *url;
	char *body;          /* POST: the form, maybe "" */
	gsize max;           /* reply bytes kept */
	gboolean tail;       /* keep the last @max bytes, not the first */
	gsize cap;           /* tail: stop the transfer after this many */
	gboolean may_cut;    /* stopping at max/cap is not an error */
	gboolean is_crumb;   /* the crumb request itself */
	JkHandler handler;
	/* the reply */
	long status;
	GByteArray *reply;
	gsize received;
	gboolean overflow;
	char *location;
	gint64 text_size;    /* X-Text-Size, or -1 */
	char errbuf[CURL_ERROR_SIZE];
} JkReq;

struct JkOp {
	JkBackend *jb;
	OpKind kind;
	JkHandle h;
	JkReq req;
	JkReq saved;         /* a POST waiting for the crumb request */
	gboolean has_saved;
	gboolean pending;    /* req is to be started */
	gboolean active;     /* req is in the multi handle */
	gboolean done;
	guint attempt;       /* retries of req so far */
	gint64 not_before;   /* monotonic µs */
	gboolean crumb_retried;
	guint cancel_polls;
	CURL *easy;
	struct curl_slist *headers;
	/* what it gives back */
	GError *error;
	PgateCiResult *result;   /* poll */
	char *handle_out;        /* submit: the handle; poll: the upgrade */
	gboolean cancelled;      /* cancel */
	/* poll: the console window's start */
	gint64 console_start;
	/* find_build: what to do next, h.build set (0: nothing matched) */
	JkHandler after_find;
	/* submit: the trigger, kept while a repeated one looks for its
	 * build first */
	char *post_rel;
	char *post_body;
	char *commit;            /* the commit it asks to build */
	gboolean repeat;         /* the job's repeat */
	gboolean queue_scanned;  /* repeat: the queue was looked at */
	gboolean resent;         /* the trigger may have been queued before */
	guint trigger_tries;     /* retries of a trigger whose reply was lost */
};

/* Frees what an operation holds once it is over. */
void pgate_ci_jenkins__op_clear(JkOp *op);
/* Sets op->req to a GET (POST) of @rel below the base, whose reply goes
 * to @handler; @body is taken. */
void pgate_ci_jenkins__op_get(JkOp *op, const char *rel, gsize max,
			      JkHandler handler);
void pgate_ci_jenkins__op_post(JkOp *op, const char *rel, char *body,
			       JkHandler handler);
/* Marks the operation done; _fail with op->error set as well. */
void pgate_ci_jenkins__op_finish(JkOp *op);
void pgate_ci_jenkins__op_fail(JkOp *op, PgateErrorCode code,
			       const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Fails the operation with the message for op->req's HTTP status. */
void pgate_ci_jenkins__op_http_error(JkOp *op, const char *what,
				     const char *missing);
/* op->req's reply as a JSON object, or NULL with the operation failed. */
json_t *pgate_ci_jenkins__op_reply_json(JkOp *op, const char *what);
/* Runs @ops until all are done or the request timeout passed. */
void pgate_ci_jenkins__run(JkBackend *jb, JkOp **ops, guint n);
/* Looks for the build of op->h, then calls @after with op->h.build set
 * (0: none). */
void pgate_ci_jenkins__op_find_build(JkOp *op, JkHandler after);

/* track.c: the backend's poll, poll_many and cancel. */
PgateCiResult *pgate_ci_jenkins__poll(PgateCiBackend *b, const char *handle,
				      GError **error);
void pgate_ci_jenkins__poll_many(PgateCiBackend *b,
				 const char *const *handles, guint n,
				 PgateCiResult **out_results,
				 GError **out_errors);
gboolean pgate_ci_jenkins__cancel(PgateCiBackend *b, const char *handle,
				  GError **error);
