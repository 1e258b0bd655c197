/* buildbot-private.h - what the files of the Buildbot backend share.
 *
 * config.c reads and checks the [ci.buildbot]-style group (BbConfig),
 * buildbot.c talks to the master's REST API (/api/v2): a force scheduler
 * is asked to build (JSON-RPC "force"), the build request it answers with
 * is followed to its builds, a lost answer is found again by the trigger
 * id property, and a superseded series cancels its build request and
 * stops its build.  online.c is `patchgate config check --online`.
 * docs/ci-buildbot.md describes the behaviour for users.
 */
#pragma once

#include "ci/ci.h"
#include "ci/ci-private.h"

/* The properties the backend sends, in this order; each is the
 * configured prefix ("patchgate_") and this name. */
typedef enum {
	BB_P_REPO_URL = 0,
	BB_P_REF,
	BB_P_COMMIT,
	BB_P_BASE_COMMIT,
	BB_P_SERIES,
	BB_P_VERSION,
	BB_P_BRANCH,
	BB_P_MSGID,
	BB_P_TRIGGER,
	BB_P_N,
} BbProp;

extern const char *const pgate_ci_buildbot__prop_names[BB_P_N];

#define BB_SECRET_MAX 4096
#define BB_NAME_MAX 256      /* scheduler, builder, property prefix */
#define BB_VALUE_MAX 4096    /* a property's value */
#define BB_TRIGGER_MAX 256

typedef struct {
	char *base;          /* scheme://host[:port][/prefix], no trailing / */
	char *link_base;     /* base of the build pages (public_url) */
	char *scheduler;     /* the force scheduler's name */
	char *builder;       /* the builder it is asked to build on */
	char *prefix;        /* the properties' prefix, "patchgate_" */
	char *prop[BB_P_N];  /* prefix + name */
	char *user;          /* (nullable) no login when NULL */
	char *secret;        /* (nullable) the password; wiped when freed */
	char *ca_file;       /* (nullable) */
	char *ca_path;       /* (nullable) */
	guint request_timeout;   /* seconds: the most one call blocks */
	guint retries;           /* extra attempts on 5xx or network errors */
	guint retry_backoff_ms;  /* first pause; doubles per attempt */
	guint64 queue_timeout;   /* seconds a request may wait for a worker */
	guint64 build_timeout;   /* seconds a build may run */
} BbConfig;

/* config.c */
gboolean pgate_ci_buildbot__config_load(BbConfig *cfg, GKeyFile *kf,
					const char *group, GError **error);
void pgate_ci_buildbot__config_clear(BbConfig *cfg);

/* What a handle names: the build request the force scheduler made. */
typedef struct {
	char *builder;       /* the builder it was asked for */
	guint64 bsid;        /* the buildset */
	guint64 brid;        /* the build request */
	gint64 since;        /* when it was submitted, seconds since epoch */
	char *trigger;       /* the trigger id property it was sent with */
} BbHandle;

/* buildbot.c */
char *pgate_ci_buildbot__handle_encode(const BbHandle *h);
gboolean pgate_ci_buildbot__handle_decode(BbHandle *h, const char *text,
					  GError **error);
void pgate_ci_buildbot__handle_clear(BbHandle *h);
/* Buildbot's results code (0 SUCCESS ... 6 CANCELLED) as a verdict and
 * a word ("success", "warnings", ...). */
PgateVerdict pgate_ci_buildbot__verdict(gint64 results);
const char *pgate_ci_buildbot__results_word(gint64 results);
