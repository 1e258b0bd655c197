/* patchwork-private.h - what the Patchwork client's files share.
 *
 * http.c is the only file that talks to libcurl; it turns every transfer
 * into a PwResponse (status, bounded body, the headers we use) or a
 * transport error, and every unwanted status into one GError.  jansson
 * errors are translated where JSON is parsed (pgate_patchwork__parse_json).
 */
#pragma once

#include "report/report.h"

#include <curl/curl.h>
#include <jansson.h>

/* Bounds on what a server may make us keep. */
#define PW_MAX_BODY (16u * 1024 * 1024)
#define PW_MAX_HEADER_VALUE (64u * 1024)
#define PW_MAX_PAGES 10000u
/* Server text quoted in an error message is cut to this many bytes. */
#define PW_MAX_QUOTE 400u
/* Patchwork's limits (part 1b of the doc). */
#define PW_MAX_TARGET_URL 200u
#define PW_MAX_CONTEXT 255u
#define PW_MAX_MSGID 255u
/* The most maintainers asked "are you the token's user?" (one GET each). */
#define PW_MAX_PROBES 100u

PGATE_DEFINE_AUTOPTR(json_t, json_decref)
PGATE_DEFINE_AUTOPTR(CURL, curl_easy_cleanup)
#define PW_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

struct PgatePatchwork {
	char *group;          /* the configuration group, for messages */
	char *origin;         /* "https://host:port", no path */
	char *base;           /* origin + path prefix + "/": the configured
			       * Patchwork, normalised */
	char *host;           /* lowercase, for pagination links */
	char *api;            /* origin + path prefix + "/api/1.3/" */
	char *project;        /* linkname or id */
	char *api_version;
	char *token;          /* (nullable) the secret; wiped on free */
	char *user;           /* (nullable) configured username */
	char *learned_user;   /* (nullable) from our last post */
	char *token_user;     /* (nullable) the token's user, found by
			       * pgate_patchwork_verify() */
	gboolean verified;    /* pgate_patchwork_verify() succeeded */
	char *ca_file;        /* (nullable) */
	guint timeout;        /* seconds, whole request */
	guint connect_timeout;
	guint per_page;       /* 0: the server's default */
	guint max_description;
	guint retry_min, retry_max, give_up;
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
};

typedef struct {
	long status;
	GByteArray *body;
	GString *link;         /* every Link header value, joined by ", " */
	char *content_type;    /* (nullable) */
	char *location;        /* (nullable) */
	gboolean header_overflow;
} PwResponse;

void pgate_patchwork__response_clear(PwResponse *r);

/* One transfer.  @body (nullable) is POSTed as JSON; @auth adds the token.
 * Returns %FALSE only for a transport failure (no HTTP answer); any HTTP
 * status is %TRUE with @resp filled. */
gboolean pgate_patchwork__request(PgatePatchwork *pw, const char *method,
				  const char *url, const char *body,
				  gboolean auth, PwResponse *resp,
				  GError **error);

/* Which request a status belongs to, so that its error can say what went
 * wrong in words. */
typedef enum {
	PW_REQ_READ = 0,      /* a GET of public data */
	PW_REQ_POST_CHECK,    /* POST .../checks/ */
	PW_REQ_AUTH_CHECK,    /* GET /users/[ID/] with the token */
	PW_REQ_PATCH_STATE,   /* PATCH /patches/ID/ (state, commit_ref) */
} PwRequestKind;

/* %TRUE for a 2xx answer, else the error for the status.  @subject names
 * the object for 404s ("patch 12"); @method and @url start the message. */
gboolean pgate_patchwork__check_status(PgatePatchwork *pw,
				       const PwResponse *r,
				       PwRequestKind kind,
				       const char *method, const char *url,
				       const char *subject, GError **error);

/* The JSON body (transfer full), or %NULL with PGATE_ERROR_FAILED. */
json_t *pgate_patchwork__parse_json(const PwResponse *r, const char *method,
				    const char *url, GError **error);

/* (transfer full) (nullable): the string member @key of @obj, NULL when
 * absent or not a string. */
char *pgate_patchwork__json_str(json_t *obj, const char *key);

/* The URL of rel="next" in a Link header value (transfer full), or %NULL. */
char *pgate_patchwork__link_next(const char *link);

/* The next page's URL to request: the path and query of @next on our own
 * origin.  %NULL with PGATE_ERROR_FAILED when @next is on another host. */
char *pgate_patchwork__rebase_url(PgatePatchwork *pw, const char *next,
				  GError **error);

/* Sets @error like g_set_error, but never lets the token through. */
void pgate_patchwork__set_error(PgatePatchwork *pw, GError **error, int code,
				const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Server text made fit for a message: control characters replaced,
 * invalid UTF-8 repaired, cut to PW_MAX_QUOTE bytes.  (transfer full) */
char *pgate_patchwork__quote(const char *text, gssize len);

/* patchwork.c: GET @url and every next page (Link rel="next"), calling
 * @fn on each item of each JSON list. */
typedef gboolean (*PwItemFunc)(PgatePatchwork *pw, json_t *item,
			       gpointer payload, GError **error);
gboolean pgate_patchwork__get_list(PgatePatchwork *pw, const char *url,
				   const char *subject, PwItemFunc fn,
				   gpointer payload, GError **error);
/* "?per_page=N" / "&per_page=N" or "" (transfer full) */
char *pgate_patchwork__per_page_arg(PgatePatchwork *pw, char sep);

/* check.c */
PgatePatchworkCheck *pgate_patchwork__check_from_json(json_t *obj,
						      GError **error);
