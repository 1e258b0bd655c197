/* patchwork.h - a client for Patchwork's REST API (part of report.h).
 *
 * Patchwork (v3.1.3 and later, API 1.2 or newer) tracks the patches of a
 * mailing list; CI systems post "checks" on its patches.  This client does
 * the four things the report stage needs: find a patch (and its series) by
 * Message-ID, read a patch's checks, post a check, and decide whether a
 * check must be posted at all.  It keeps no state on disk: exactly-once
 * delivery is the caller's (the outbox's) business, made easy by
 * pgate_patchwork_check_decide(): before every post, list the patch's
 * checks and decide; a post the server accepted before a crash is then
 * found and not repeated.
 *
 * Configuration comes from one group of a GKeyFile (docs/report-patchwork.md
 * lists the keys).  The API token is read from a file or an environment
 * variable, never from the configuration itself or a command line; it is
 * sent only with the requests that need it (POSTs, and the token test of
 * pgate_patchwork_verify()) and appears in no error message and no log
 * line.
 *
 * Every request is synchronous, bounded by the configured timeout, and
 * uses one libcurl handle per #PgatePatchwork: use one #PgatePatchwork per
 * thread.  GETs reuse connections; every POST opens a fresh one, because
 * curl re-sends a request by itself when a reused connection dies before
 * the answer, and a check sent twice is a double post.  Redirects are not followed (a POST
 * redirected by Django's APPEND_SLASH would silently become a GET).
 *
 * Errors are in domain PGATE_REPORT_ERROR:
 *   PGATE_ERROR_IO         transient: timeout, connection refused or
 *                          dropped, DNS failure, HTTP 408, 429 and 5xx.
 *                          Retry later.
 *   PGATE_ERROR_CONFIG     permanent until someone fixes the setup: bad
 *                          configuration, no token, a token Patchwork
 *                          does not know (403 "Invalid token." or 401), a
 *                          user who may not post checks on the patch (403:
 *                          not a maintainer, delegate or submitter), a URL
 *                          that is no Patchwork API (an HTML 404, a
 *                          redirect), a TLS certificate that does not
 *                          verify.
 *   PGATE_ERROR_NOT_FOUND  the patch, series or project does not exist
 *                          (404 {"detail":"Not found."}), or no patch has
 *                          this Message-ID (yet).
 *   PGATE_ERROR_INVALID    the server refused the request's fields (400;
 *                          the message lists each field's errors), or the
 *                          caller passed a bad argument (a context that is
 *                          not a slug, an empty Message-ID).
 *   PGATE_ERROR_TOO_LARGE  a response over the size bound (16 MiB).
 *   PGATE_ERROR_FAILED     anything else (a response that is not the JSON
 *                          it should be, 405, another 4xx).
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"

G_BEGIN_DECLS

typedef struct PgatePatchwork PgatePatchwork;

/* A check's state.  The values are the integers Patchwork stores. */
typedef enum {
	PGATE_PATCHWORK_STATE_PENDING = 0,
	PGATE_PATCHWORK_STATE_SUCCESS = 1,
	PGATE_PATCHWORK_STATE_WARNING = 2,
	PGATE_PATCHWORK_STATE_FAIL = 3,
} PgatePatchworkState;

/**
 * pgate_patchwork_state_to_string:
 * Returns: "pending", "success", "warning" or "fail" (what the API takes).
 */
const char *pgate_patchwork_state_to_string(PgatePatchworkState state);

/**
 * pgate_patchwork_state_from_string:
 * @out: (out): the state, set only on success
 *
 * Returns: %TRUE when @s is one of the four names, exactly (lowercase).
 */
gboolean pgate_patchwork_state_from_string(const char *s,
					   PgatePatchworkState *out);

/*
 * A check, either one to post (only state, context, target_url and
 * description matter) or one read from Patchwork.  Strings are owned by
 * the struct; every nullable one is %NULL when Patchwork has null.
 */
typedef struct {
	gint64 id;                 /* Patchwork's id; 0 for one not posted */
	PgatePatchworkState state;
	char *context;             /* a slug: [A-Za-z0-9_-]{1,255} */
	char *target_url;          /* (nullable) where the details are */
	char *description;         /* (nullable) one line or a few */
	gint64 user_id;            /* who posted it; 0 when not known */
	char *user;                /* (nullable) that user's username */
	char *date;                /* (nullable) as Patchwork wrote it: UTC
				    * without a zone, "2024-05-01T12:00:00.123456" */
} PgatePatchworkCheck;

/**
 * pgate_patchwork_check_new:
 * @context: the check's context, see pgate_patchwork_context_is_valid()
 * @target_url: (nullable)
 * @description: (nullable)
 *
 * Returns: (transfer full): a check to post; the strings are copied.
 */
PgatePatchworkCheck *pgate_patchwork_check_new(PgatePatchworkState state,
					       const char *context,
					       const char *target_url,
					       const char *description);
PgatePatchworkCheck *pgate_patchwork_check_copy(const PgatePatchworkCheck *check);
void pgate_patchwork_check_free(PgatePatchworkCheck *check);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePatchworkCheck, pgate_patchwork_check_free)

/**
 * pgate_patchwork_context_is_valid:
 *
 * Returns: %TRUE when Patchwork accepts @context: 1 to 255 characters, each
 * an ASCII letter, digit, '_' or '-' (a Django "slug").  Note that
 * "patchgate/apply" is not one: use "patchgate-apply".
 */
gboolean pgate_patchwork_context_is_valid(const char *context);

/**
 * pgate_patchwork_context_from_name:
 * @prefix: (nullable): e.g. "patchgate"; joined to @name with '-'
 * @name: a job's name, any text
 *
 * Makes a valid context out of arbitrary text: every run of characters
 * that a slug may not contain becomes one '-', leading and trailing '-'
 * are dropped, the result is cut to 255 characters; an empty result is
 * "default".  "build / arm64" with prefix "patchgate" gives
 * "patchgate-build-arm64".
 *
 * Returns: (transfer full): the context.
 */
char *pgate_patchwork_context_from_name(const char *prefix, const char *name);

/**
 * pgate_patchwork_check_normalize:
 * @check: a check to post
 * @max_description: the most characters kept of the description (at
 *   least 16)
 *
 * What pgate_patchwork_post_check() sends, and what Patchwork will then
 * store, for @check:
 *   - the description: NUL and other control characters but newline and
 *     tab removed, invalid UTF-8 replaced, leading and trailing white space
 *     trimmed (as Patchwork does), cut at a character boundary to
 *     @max_description characters ending in "..."; an empty one becomes
 *     %NULL.  Patchwork itself has no limit: the bound is ours.
 *   - the target_url: trimmed; dropped (%NULL) rather than cut when it is
 *     longer than Patchwork's 200 characters, since a cut URL would be
 *     wrong or refused, and dropped too when Patchwork (Django's
 *     URLValidator) would refuse it: not an absolute http, https, ftp or
 *     ftps URL of printable ASCII, or a host that is not localhost, an IP
 *     address or a domain with a TLD ("http://jenkins:8080/" is refused).
 *     A dropped URL is logged (g_info) without the URL's query.
 *   - state and context are kept; an invalid context is kept too (the post
 *     refuses it).
 *
 * Returns: (transfer full): the normalised copy.
 */
PgatePatchworkCheck *pgate_patchwork_check_normalize(const PgatePatchworkCheck *check,
						     guint max_description);

typedef enum {
	PGATE_PATCHWORK_POST = 0,        /* post it */
	PGATE_PATCHWORK_SKIP_SAME,       /* the newest check of this context
					  * by our user says the same already */
	PGATE_PATCHWORK_SKIP_DOWNGRADE,  /* ours is pending but the newest
					  * check of the context is final */
} PgatePatchworkDecision;

const char *pgate_patchwork_decision_to_string(PgatePatchworkDecision d);

/**
 * pgate_patchwork_check_decide:
 * @existing: (element-type PgatePatchworkCheck): the patch's checks, as
 *   pgate_patchwork_list_checks() returns them
 * @ours: the check we want Patchwork to show, already normalised
 *   (pgate_patchwork_check_normalize(); pgate_patchwork_post_check_decided()
 *   does it)
 * @our_user: (nullable): our Patchwork username; %NULL counts the checks
 *   of every user
 *
 * Looks at the newest check (highest id) of @ours->context posted by
 * @our_user, the one Patchwork counts:
 *   - none: POST;
 *   - it has the same state, target_url and description (a %NULL and an
 *     empty string are the same): SKIP_SAME, which is what makes a retry
 *     after a crash between the server's 201 and the outbox's removal
 *     harmless;
 *   - @ours is pending and it is final (success, warning, fail):
 *     SKIP_DOWNGRADE, a final state is never downgraded to pending;
 *   - else POST (a changed final state, or a final state after pending).
 */
PgatePatchworkDecision pgate_patchwork_check_decide(const GPtrArray *existing,
						    const PgatePatchworkCheck *ours,
						    const char *our_user);

/**
 * pgate_patchwork_new:
 * @kf: the configuration
 * @group: the group to read, e.g. "patchwork" or "patchwork:linux-arm"
 *
 * Reads and checks the configuration; makes no request.  Keys: url
 * (required), project (required), api_version, token_file or token_env,
 * user, timeout, connect_timeout, ca_file, per_page, max_description,
 * lookup_retry_min, lookup_retry_max, lookup_give_up; see
 * docs/report-patchwork.md.  A token file that everyone may read or write
 * (o+r, o+w) is refused, and so is a "token" key: secrets stay out of
 * configuration.
 *
 * Returns: (transfer full) (nullable): the client, or %NULL with @error set
 * (PGATE_ERROR_CONFIG, naming the key, never showing the token).
 */
PgatePatchwork *pgate_patchwork_new(GKeyFile *kf, const char *group,
				    GError **error);
void pgate_patchwork_free(PgatePatchwork *pw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePatchwork, pgate_patchwork_free)

/**
 * pgate_patchwork_get_project:
 * Returns: (transfer none): the configured project (linkname or id).
 */
const char *pgate_patchwork_get_project(PgatePatchwork *pw);

/**
 * pgate_patchwork_get_url:
 * Returns: (transfer none): the configured Patchwork, normalised: scheme,
 * host, port and path prefix, ending in '/' ("https://pw.example.org/";
 * no "/api/...").  With pgate_patchwork_get_project() it names where
 * Patchwork's ids are valid.
 */
const char *pgate_patchwork_get_url(PgatePatchwork *pw);

/**
 * pgate_patchwork_get_user:
 * Returns: (transfer none) (nullable): our username: the configured "user",
 * else the token's user as pgate_patchwork_verify() found it, else the one
 * Patchwork named in the answer to our last successful post, else %NULL.
 */
const char *pgate_patchwork_get_user(PgatePatchwork *pw);

/**
 * pgate_patchwork_has_token:
 * Returns: %TRUE when a token was configured (posting is possible).
 */
gboolean pgate_patchwork_has_token(PgatePatchwork *pw);

/**
 * pgate_patchwork_verify:
 *
 * Checks the setup with the server before anything is posted (the
 * outbox does it once per client, before its first check): each failure
 * is one PGATE_ERROR_CONFIG that says exactly what is wrong.
 *   - The project exists (GET /projects/P/).
 *   - With a token: Patchwork accepts it (GET /users/ with it), and its
 *     user is a maintainer of the project.  Patchwork has no "who am I"
 *     request; GET /users/ID/ shows the "settings" of user ID to that
 *     user only, so each maintainer is asked in turn (at most 100; only
 *     the configured "user" when there is one) until the token's user is
 *     found.  It is what pgate_patchwork_get_user() returns from then on,
 *     so that checks of other users never count as ours.  With "user"
 *     configured, the token must be that user's.
 *   - Without a token, the configured "user" (if any) is a maintainer.
 * Without a maintainer's token, checks could be posted only on patches
 * the user submitted or is delegate of.  Network trouble is
 * PGATE_ERROR_IO as usual.  Once it succeeded, later calls return %TRUE
 * at once.
 */
gboolean pgate_patchwork_verify(PgatePatchwork *pw, GError **error);

/**
 * pgate_patchwork_lookup_msgid:
 * @msgid: a Message-ID, with or without its angle brackets
 * @out_patch_id: (out) (optional): the patch's id
 * @out_series_id: (out) (optional): its series' id, 0 if it has none
 *
 * GET /api/VERSION/patches/?project=P&msgid=ID, the ID without brackets and
 * percent-encoded, following Link pagination; only a patch whose msgid is
 * exactly "<ID>" counts (a server that ignored the filter does no harm).
 * Patchwork stores Message-IDs cut to 255 characters, so an ID longer than
 * 253 characters cannot be found: PGATE_ERROR_INVALID, as for an empty one.
 *
 * Returns: %TRUE when found; PGATE_ERROR_NOT_FOUND when Patchwork has no
 * such patch in the project, which usually means it has not parsed the
 * mail yet: retry later (pgate_patchwork_lookup_retry_at()).
 */
gboolean pgate_patchwork_lookup_msgid(PgatePatchwork *pw, const char *msgid,
				      gint64 *out_patch_id,
				      gint64 *out_series_id, GError **error);

/* A patch as a series lists it. */
typedef struct {
	gint64 id;
	char *msgid;   /* with angle brackets, as Patchwork stores it */
	char *name;    /* (nullable) the cleaned subject, "[v2,1/3] foo" */
} PgatePatchworkPatchRef;

typedef struct {
	gint64 id;
	gint64 project_id;
	char *name;              /* (nullable) */
	guint version;
	guint total;             /* from the subjects' N */
	guint received_total;    /* patches Patchwork has */
	gboolean received_all;
	char *cover_msgid;       /* (nullable) with brackets */
	GPtrArray *patches;      /* (element-type PgatePatchworkPatchRef):
				  * in the server's order (by number) */
} PgatePatchworkSeries;

void pgate_patchwork_series_free(PgatePatchworkSeries *series);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePatchworkSeries, pgate_patchwork_series_free)

/**
 * pgate_patchwork_series_get:
 * @series_id: from pgate_patchwork_lookup_msgid()
 *
 * GET /api/VERSION/series/ID/: one request that maps every patch of the
 * series Patchwork has to its id, by Message-ID, instead of one lookup per
 * patch.  Patchwork's series and ours may differ (its heuristics, §7 of
 * the doc): look up the patches it does not list one by one.
 *
 * Returns: (transfer full) (nullable): the series, or %NULL with @error set
 * (PGATE_ERROR_NOT_FOUND for an unknown id, PGATE_ERROR_INVALID when the
 * series belongs to another project).
 */
PgatePatchworkSeries *pgate_patchwork_series_get(PgatePatchwork *pw,
						 gint64 series_id,
						 GError **error);

/**
 * pgate_patchwork_series_find_patch:
 * @msgid: with or without brackets
 *
 * Returns: the id of the patch of @series with this Message-ID, or 0.
 */
gint64 pgate_patchwork_series_find_patch(const PgatePatchworkSeries *series,
					 const char *msgid);

/**
 * pgate_patchwork_list_checks:
 *
 * GET /api/VERSION/patches/ID/checks/, every page.
 *
 * Returns: (transfer full) (element-type PgatePatchworkCheck) (nullable):
 * all checks of the patch in Patchwork's order (by id), or %NULL with
 * @error set (PGATE_ERROR_NOT_FOUND for an unknown patch).
 */
GPtrArray *pgate_patchwork_list_checks(PgatePatchwork *pw, gint64 patch_id,
				       GError **error);

/**
 * pgate_patchwork_post_check:
 * @check: the check; normalised first (pgate_patchwork_check_normalize())
 * @out_posted: (out) (optional) (transfer full): the check as Patchwork
 *   stored it (id, user, date)
 *
 * POST /api/VERSION/patches/ID/checks/ with Token authentication and a
 * JSON body.  The context is checked first (PGATE_ERROR_INVALID, nothing
 * sent).  When this returns %FALSE with a transient error the server may
 * or may not have stored the check (a dropped answer): list and decide
 * before posting again.
 *
 * Returns: %TRUE when Patchwork answered 201 Created.
 */
gboolean pgate_patchwork_post_check(PgatePatchwork *pw, gint64 patch_id,
				    const PgatePatchworkCheck *check,
				    PgatePatchworkCheck **out_posted,
				    GError **error);

/**
 * pgate_patchwork_post_check_decided:
 * @out_decision: (out) (optional): what was decided
 *
 * The exactly-once step the outbox needs: normalises @check, lists the
 * patch's checks, decides (with pgate_patchwork_get_user()) and posts only
 * when the decision is POST.  Returns %TRUE when Patchwork shows @check
 * now: posted, SKIP_SAME or SKIP_DOWNGRADE; the report is then done.
 */
gboolean pgate_patchwork_post_check_decided(PgatePatchwork *pw,
					    gint64 patch_id,
					    const PgatePatchworkCheck *check,
					    PgatePatchworkDecision *out_decision,
					    GError **error);

/**
 * pgate_patchwork_lookup_retry_at:
 * @first_try: when the first lookup of this Message-ID failed with
 *   NOT_FOUND (seconds, any clock, the same as @now)
 * @attempts: how many lookups failed so far (at least 1)
 * @out_next: (out): when to try again
 *
 * The backoff for Message-IDs Patchwork has not parsed yet: the delay
 * doubles from lookup_retry_min up to lookup_retry_max after each failed
 * attempt.  Once lookup_give_up seconds have passed since @first_try,
 * returns %FALSE: give up, and say so (the message of
 * pgate_patchwork_lookup_give_up_message()).
 *
 * Returns: %TRUE with *@out_next set while it is worth trying.
 */
gboolean pgate_patchwork_lookup_retry_at(PgatePatchwork *pw, gint64 first_try,
					 gint64 now, guint attempts,
					 gint64 *out_next);

/**
 * pgate_patchwork_lookup_give_up_message:
 * Returns: (transfer full): the one log line for a Message-ID given up on,
 * e.g. "patchwork: msgid=<a@b> not found in project demo at
 * https://pw.example.org/ after 12 lookups over 86400 s: giving up".
 */
char *pgate_patchwork_lookup_give_up_message(PgatePatchwork *pw,
					     const char *msgid,
					     guint attempts, gint64 elapsed);

/* ---- patch states (issue 28: [patchwork] set_state) ---------------------- */

/* One patch-state-changed event (GET /api/VERSION/events/). */
typedef struct {
	gint64 id;
	char *date;            /* (nullable) as Patchwork wrote it */
	char *actor;           /* (nullable) the username of who changed the
				* state; %NULL when Patchwork did not say
				* (API 1.0 and 1.1 have no actor) */
	gboolean has_actor;    /* the event carried an "actor" member (API
				* 1.2+); null there means a change made
				* without a user (the parser, a script) */
	char *previous_state;  /* (nullable) slug, "under-review" */
	char *current_state;   /* (nullable) slug */
} PgatePatchworkStateEvent;

void pgate_patchwork_state_event_free(PgatePatchworkStateEvent *ev);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgatePatchworkStateEvent,
			      pgate_patchwork_state_event_free)

/**
 * pgate_patchwork_patch_state_is_valid:
 *
 * Returns: %TRUE when @state is a state slug as Patchwork writes them:
 * 1 to 100 lowercase ASCII letters, digits and '-' ("under-review").
 * Which states exist is the server's business (400 for an unknown one).
 */
gboolean pgate_patchwork_patch_state_is_valid(const char *state);

/**
 * pgate_patchwork_get_patch_state:
 * @out_state: (out) (transfer full): the state's slug, "new"
 * @out_commit_ref: (out) (optional) (transfer full) (nullable): the
 *   patch's commit_ref
 *
 * GET /api/VERSION/patches/ID/ (anonymous).
 *
 * Returns: %TRUE with the state; PGATE_ERROR_NOT_FOUND for an unknown
 * patch.
 */
gboolean pgate_patchwork_get_patch_state(PgatePatchwork *pw, gint64 patch_id,
					 char **out_state, char **out_commit_ref,
					 GError **error);

/**
 * pgate_patchwork_list_state_events:
 *
 * GET /api/VERSION/events/?patch=ID&category=patch-state-changed, every
 * page (anonymous).  An unknown patch is no error: Patchwork answers an
 * empty list for an invalid filter value.
 *
 * Returns: (transfer full) (element-type PgatePatchworkStateEvent): the
 * events, newest first as Patchwork orders them.
 */
GPtrArray *pgate_patchwork_list_state_events(PgatePatchwork *pw,
					     gint64 patch_id, GError **error);

/**
 * pgate_patchwork_set_patch_state:
 * @state: a state slug, e.g. "accepted"
 * @commit_ref: (nullable): sent as commit_ref when given
 *
 * PATCH /api/VERSION/patches/ID/ with Token authentication and the JSON
 * body {"state": STATE[, "commit_ref": REF]}, on a fresh connection (no
 * silent resend).  403 is PGATE_ERROR_CONFIG (no token's user, or one who
 * may not change the patch: not a maintainer, delegate or submitter), 400
 * PGATE_ERROR_INVALID (a state this Patchwork does not have).
 *
 * Returns: %TRUE when Patchwork answered 200.
 */
gboolean pgate_patchwork_set_patch_state(PgatePatchwork *pw, gint64 patch_id,
					 const char *state,
					 const char *commit_ref,
					 GError **error);

typedef enum {
	PGATE_PATCHWORK_STATE_SET = 0,      /* changed it */
	PGATE_PATCHWORK_STATE_SKIP_SAME,    /* it has the target state already
					     * (a retry after a crash) */
	PGATE_PATCHWORK_STATE_SKIP_HUMAN,   /* a human's: its state is not
					     * new or under-review, or a state
					     * change was made by another user */
} PgatePatchworkStateDecision;

const char *pgate_patchwork_state_decision_to_string(PgatePatchworkStateDecision d);

/**
 * pgate_patchwork_patch_state_decide:
 * @current: the patch's state now
 * @events: (element-type PgatePatchworkStateEvent): its state changes
 * @target: the state we want
 * @our_user: (nullable): our username; %NULL counts every change as
 *   another user's
 *
 * No I/O.  SKIP_SAME when @current is @target; SKIP_HUMAN when @current
 * is neither "new" nor "under-review", or when any event was made by
 * another user than @our_user (or by an unknown one: API 1.0/1.1 events
 * have no actor); else SET.
 */
PgatePatchworkStateDecision
pgate_patchwork_patch_state_decide(const char *current,
				   const GPtrArray *events,
				   const char *target, const char *our_user);

/**
 * pgate_patchwork_set_patch_state_decided:
 * @out_decision: (out) (optional)
 * @out_why: (out) (optional) (transfer full): for SKIP_HUMAN, in words
 *
 * The outbox's exactly-once step: reads the patch and its state-change
 * events, decides (pgate_patchwork_patch_state_decide() with
 * pgate_patchwork_get_user()) and sends the PATCH only for SET.  Patchwork
 * has no conditional update (no ETag/If-Match): a human's change between
 * our read and our PATCH is overwritten, a window of one round trip.
 *
 * Returns: %TRUE when nothing is left to do (set, already so, or left to
 * the human).
 */
gboolean pgate_patchwork_set_patch_state_decided(PgatePatchwork *pw,
						 gint64 patch_id,
						 const char *state,
						 const char *commit_ref,
						 PgatePatchworkStateDecision *out_decision,
						 char **out_why,
						 GError **error);

/**
 * pgate_patchwork_check_online:
 * @token_key: (nullable): the key the token came from ("token_file" or
 *   "token_env"), for the messages
 *
 * `patchgate config check --online`: the project exists (an anonymous
 * GET, 404 when not), the token is accepted (a GET that needs it: 403
 * when not) and the rest of pgate_patchwork_verify().  Only GETs: nothing
 * is posted.  Each failure is one line "[GROUP] KEY: ..." naming the key
 * to fix (url for a server that cannot be reached or is no Patchwork),
 * with the code of the request's failure: PGATE_ERROR_IO transient,
 * PGATE_ERROR_CONFIG the setup.
 */
gboolean pgate_patchwork_check_online(PgatePatchwork *pw,
				      const char *token_key, GError **error);

G_END_DECLS
