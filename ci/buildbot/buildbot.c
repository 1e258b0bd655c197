/* buildbot.c - the Buildbot CI backend: trigger, track, cancel.
 *
 * Everything goes through the master's REST API, /api/v2 (Buildbot 3.7
 * as Debian 12 ships it; docs/ci-buildbot.md):
 *
 *  - submit: POST /api/v2/forceschedulers/SCHED, JSON-RPC "force" with
 *    builderNames [BUILDER], the codebase's repository, branch (the
 *    pushed ref) and revision (the commit), and the properties
 *    PREFIX{repo_url,ref,commit,base_commit,series,version,branch,msgid,
 *    trigger}.  The answer is [bsid, {builderid: brid}]: the handle names
 *    the build request, which the master keeps in its database across
 *    restarts.
 *  - poll: GET /api/v2/buildrequests/BRID and its builds.  A request may
 *    have several builds: a worker lost mid-build ends that build RETRY
 *    and the master starts another from the same request, so the request
 *    (complete, results) is what counts, and its newest build what is
 *    shown.  When it is complete, the build's steps and, for a failed
 *    step, the end of its stdio log make the summary and the log file.
 *  - cancel: POST /api/v2/buildrequests/BRID "cancel" (a request still
 *    waiting is completed CANCELLED; the master stops the builds of one
 *    already claimed), then "stop" on any build of it still running:
 *    the master's own cancel misses a build that is being started.
 *
 * Buildbot merges nothing: every force is a new buildset.  So a force
 * whose answer was lost is never simply sent again: the build requests
 * that carry its trigger id property are looked for first
 * (GET /api/v2/buildrequests?property=PREFIXtrigger), before each retry
 * and when the pipeline repeats a submission whose answer never came.
 * POSTs always take a fresh connection, so that libcurl itself never
 * resends one over a reused connection that died.
 *
 * A master with www auth is logged in to once (GET /auth/login with the
 * user's password in basic auth; its answer sets the TWISTED_SESSION
 * cookie, which every further request carries): Buildbot ignores basic
 * auth on /api.  A 403 logs in again, once.  The password goes to libcurl
 * only, for that one request; no URL, log line or error message holds it.
 *
 * Each call (submit, poll, cancel) ends within request_timeout, retries
 * included; what still fails then is transient (PGATE_ERROR_IO).
 */
#include "ci/buildbot/buildbot-private.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

PGATE_DEFINE_AUTOPTR(json_t, json_decref)
#define BB_AUTO_JSON \
	__attribute__((cleanup(pgate_autoptr_cleanup_json_t))) json_t *

#define BB_REPLY_MAX (4 * 1024 * 1024)  /* a reply kept */
#define BB_SUMMARY_MAX 4096             /* a result's summary */
#define BB_TAIL_LINES 40                /* log lines of a failed step */
#define BB_FIND_REQUESTS 200            /* requests searched for a trigger */
#define BB_FIELD_MAX 300                /* a state_string kept */

typedef struct {
	PgateCiBackend parent;
	BbConfig cfg;
	char *group;
	char *log_dir;          /* STATE/buildbot, or NULL */
	CURL *easy;             /* reused: connections, the session cookie */
	gboolean logged_in;
	gboolean checked;       /* the scheduler was read and fits */
	gint64 deadline;        /* monotonic µs: the running call's end */
} BbBackend;

typedef struct {
	long status;
	GByteArray *body;
	gboolean overflow;
	char *location;
} BbReply;

typedef enum {
	BB_ONCE = 1 << 0,       /* never resent once it may have arrived */
	BB_LOGIN = 1 << 1,      /* the login request itself */
} BbFlags;

/* -- handles -- */

char *
pgate_ci_buildbot__handle_encode(const BbHandle *h)
{
	BB_AUTO_JSON o = json_object();
	char *s, *out;

	json_object_set_new(o, "buildbot", json_integer(1));
	json_object_set_new(o, "builder", json_string(h->builder));
	json_object_set_new(o, "bsid", json_integer((json_int_t)h->bsid));
	json_object_set_new(o, "brid", json_integer((json_int_t)h->brid));
	json_object_set_new(o, "since", json_integer(h->since));
	if (h->trigger)
		json_object_set_new(o, "trigger", json_string(h->trigger));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	out = g_strdup(s);
	free(s);
	return out;
}

void
pgate_ci_buildbot__handle_clear(BbHandle *h)
{
	g_free(h->builder);
	g_free(h->trigger);
	memset(h, 0, sizeof *h);
}

static gboolean
get_id(json_t *o, const char *key, guint64 *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return FALSE;
	*out = (guint64)json_integer_value(v);
	return TRUE;
}

gboolean
pgate_ci_buildbot__handle_decode(BbHandle *h, const char *text,
				 GError **error)
{
	BB_AUTO_JSON o = NULL;
	json_t *v;

	memset(h, 0, sizeof *h);
	if (text != NULL && strlen(text) < 4096)
		o = json_loads(text, 0, NULL);
	if (!json_is_object(o) ||
	    json_integer_value(json_object_get(o, "buildbot")) != 1 ||
	    !json_is_string(json_object_get(o, "builder")) ||
	    !get_id(o, "brid", &h->brid) || h->brid == 0) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "buildbot: not a handle of this backend");
		return FALSE;
	}
	h->builder = g_strdup(json_string_value(json_object_get(o,
								"builder")));
	get_id(o, "bsid", &h->bsid);
	v = json_object_get(o, "since");
	h->since = json_is_integer(v) ? json_integer_value(v) : 0;
	v = json_object_get(o, "trigger");
	if (json_is_string(v))
		h->trigger = g_strdup(json_string_value(v));
	return TRUE;
}

/* -- results -- */

PgateVerdict
pgate_ci_buildbot__verdict(gint64 results)
{
	switch (results) {
	case 0: return PGATE_VERDICT_SUCCESS;   /* SUCCESS */
	case 1: return PGATE_VERDICT_WARNING;   /* WARNINGS */
	case 2: return PGATE_VERDICT_FAIL;      /* FAILURE */
	case 3: return PGATE_VERDICT_WARNING;   /* SKIPPED: nothing ran */
	default: return PGATE_VERDICT_ERROR;    /* EXCEPTION, RETRY,
						    * CANCELLED (a master
						    * shutdown cancels the
						    * builds it runs) */
	}
}

const char *
pgate_ci_buildbot__results_word(gint64 results)
{
	static const char *const words[] = {
		"success", "warnings", "failure", "skipped", "exception",
		"retry", "cancelled",
	};

	return results >= 0 && results < (gint64)G_N_ELEMENTS(words)
		? words[results] : "unknown";
}

/* The word of a step in the log, as the local runner writes it
 * ("== step NAME: WORD in S s"): what report/site-page.c reads. */
static const char *
step_word(gint64 results)
{
	switch (results) {
	case 0: case 1: return "passed";
	case 2: return "failed";
	case 3: return "not-run";
	case 6: return "cancelled";
	default: return "error";
	}
}

/* One line, printable, at most @max bytes, valid UTF-8. */
static char *
clean_line(const char *s, gsize max)
{
	g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
	GString *out = g_string_new(NULL);

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
			c = ' ';
		if (out->len + 6 > max)
			break;
		g_string_append_unichar(out, c);
	}
	return g_string_free(out, FALSE);
}

/* -- requests -- */

static gint64
left_ms(BbBackend *bb)
{
	return (bb->deadline - g_get_monotonic_time()) / 1000;
}

static size_t
on_write(char *ptr, size_t size, size_t nmemb, void *data)
{
	BbReply *r = data;
	gsize n = size * nmemb;

	if (r->body->len + n > BB_REPLY_MAX) {
		r->overflow = TRUE;
		return 0;
	}
	g_byte_array_append(r->body, (const guint8 *)ptr, (guint)n);
	return n;
}

static size_t
on_header(char *line, size_t size, size_t nitems, void *data)
{
	BbReply *r = data;
	gsize n = size * nitems;

	if (n > 9 && g_ascii_strncasecmp(line, "Location:", 9) == 0) {
		g_free(r->location);
		r->location = g_strstrip(g_strndup(line + 9, n - 9));
	}
	return n;
}

static void
reply_clear(BbReply *r)
{
	if (r->body)
		g_byte_array_unref(r->body);
	g_free(r->location);
	memset(r, 0, sizeof *r);
}

/* One attempt; the CURLcode, and @r filled when it is CURLE_OK. */
static CURLcode
perform(BbBackend *bb, const char *rel, const char *post, guint flags,
	BbReply *r, char *errbuf)
{
	CURL *e = bb->easy;
	g_autofree char *url = g_strconcat(bb->cfg.base, "/", rel, NULL);
	struct curl_slist *hdr = NULL;
	gint64 ms = MAX(left_ms(bb), 1);
	CURLcode cc;

	reply_clear(r);
	r->body = g_byte_array_new();
	/* the handle is not reset (CURLOPT_COOKIEFILE, set once, would be
	 * set again and leak): every option that differs between requests
	 * is set here */
	pgate_curl_setup(e, "http,https", errbuf);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "patchgate/0.1");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	if (bb->cfg.ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, bb->cfg.ca_file);
	if (bb->cfg.ca_path)
		curl_easy_setopt(e, CURLOPT_CAPATH, bb->cfg.ca_path);
	hdr = curl_slist_append(hdr, "Accept: application/json");
	if (post != NULL) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, post);
		/* never over a reused connection: libcurl resends a request
		 * by itself when one dies before the answer */
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 0L);
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 0L);
	}
	/* the password on the login request only */
	curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)((flags & BB_LOGIN)
						     ? CURLAUTH_BASIC
						     : CURLAUTH_NONE));
	curl_easy_setopt(e, CURLOPT_USERNAME,
			 (flags & BB_LOGIN) ? bb->cfg.user : NULL);
	curl_easy_setopt(e, CURLOPT_PASSWORD,
			 (flags & BB_LOGIN) ? bb->cfg.secret : NULL);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
	pgate_curl_timeouts(e, ms, MIN(ms, 10000));
	cc = curl_easy_perform(e);
	if (cc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
	if (cc == CURLE_WRITE_ERROR && r->overflow)
		r->status = -1;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	g_debug("buildbot: %s /%s -> %ld%s", post ? "POST" : "GET", rel,
		r->status, cc == CURLE_OK ? "" : " (no answer)");
	return cc;
}

/* A transfer that may have reached the master before it broke: its
 * answer was lost, not its request. */
static gboolean
maybe_arrived(CURLcode cc)
{
	return cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR ||
	       cc == CURLE_SEND_ERROR || cc == CURLE_PARTIAL_FILE ||
	       cc == CURLE_OPERATION_TIMEDOUT;
}

/* The JSON-RPC error of an answer: "MESSAGE (code N)", or NULL. */
static char *
rpc_error(json_t *j)
{
	json_t *err = json_object_get(j, "error");

	if (json_is_object(err)) {
		g_autofree char *msg = clean_line(json_string_value(
			json_object_get(err, "message")), 300);

		return g_strdup_printf("%s (code %" JSON_INTEGER_FORMAT ")",
				       msg, json_integer_value(
					       json_object_get(err, "code")));
	}
	if (json_is_string(err))	/* a data API error: {"error": "..."} */
		return clean_line(json_string_value(err), 300);
	return NULL;
}

static gboolean login(BbBackend *bb, GError **error);

/* @rel below the base, GET or (@post, a JSON text) POST.  Retries 5xx
 * replies that are no answer of the master's (a proxy's 502, a 503 while
 * it starts), 408, 429 and network errors with a doubling pause, within
 * the call's deadline.  Returns %FALSE with an error (IO: transient) when
 * no answer came; *@lost is set when a BB_ONCE request may have arrived.
 * Else *@status and *@out (the JSON, or NULL when the body is none). */
static gboolean
call(BbBackend *bb, const char *rel, const char *post, guint flags,
     long *status, json_t **out, gboolean *lost, GError **error)
{
	BbReply r = { 0 };
	char errbuf[CURL_ERROR_SIZE];
	guint attempt = 0;
	gboolean relogged = FALSE;
	g_autofree char *why = NULL;
	const char *method = post ? "POST" : "GET";

	*out = NULL;
	if (lost)
		*lost = FALSE;
	for (;;) {
		CURLcode cc;
		gint64 pause;

		if (bb->cfg.secret && !bb->logged_in && !(flags & BB_LOGIN) &&
		    !login(bb, error))
			goto fail_quiet;
		if (left_ms(bb) <= 0) {
			if (why == NULL)
				why = g_strdup("no time left");
			break;
		}
		cc = perform(bb, rel, post, flags, &r, errbuf);
		if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && r.overflow)) {
			PgateErrorCode code = pgate_curl_error_code(cc);

			g_free(why);
			why = g_strdup(pgate_curl_message(cc, errbuf));
			if (code != PGATE_ERROR_IO) {
				g_set_error(error, PGATE_CI_ERROR, code,
					    "buildbot: %s /%s: %s", method,
					    rel, why);
				goto fail_quiet;
			}
			if ((flags & BB_ONCE) && maybe_arrived(cc)) {
				if (lost)
					*lost = TRUE;
				break;
			}
		} else if (r.overflow) {
			g_set_error(error, PGATE_CI_ERROR,
				    PGATE_ERROR_TOO_LARGE, "buildbot: %s /%s: "
				    "the answer is over %d bytes", method,
				    rel, BB_REPLY_MAX);
			goto fail_quiet;
		} else {
			json_t *j = r.body->len
				? json_loadb((const char *)r.body->data,
					     r.body->len, 0, NULL)
				: NULL;

			if (r.status == 403 && bb->cfg.secret && !relogged &&
			    !(flags & BB_LOGIN)) {
				/* the session expired, or the master
				 * forgot it: once more, logged in anew */
				json_decref(j);
				relogged = TRUE;
				bb->logged_in = FALSE;
				continue;
			}
			if ((r.status >= 500 && (j == NULL || !json_is_object(
				json_object_get(j, "error")))) ||
			    r.status == 408 || r.status == 429) {
				json_decref(j);
				g_free(why);
				why = g_strdup_printf("HTTP %ld", r.status);
				/* a proxy's 502 or 504 may come after the
				 * master took the request */
				if ((flags & BB_ONCE) && r.status >= 500) {
					if (lost)
						*lost = TRUE;
					break;
				}
			} else {
				*status = r.status;
				*out = j;
				reply_clear(&r);
				return TRUE;
			}
		}
		if (attempt >= bb->cfg.retries)
			break;
		pause = (gint64)bb->cfg.retry_backoff_ms << MIN(attempt, 20u);
		if (pause >= left_ms(bb))
			break;
		attempt++;
		g_usleep((gulong)pause * 1000);
	}
	g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
		    "buildbot: %s /%s: %s%s", method, rel,
		    why ? why : "no answer",
		    lost && *lost ? " (the request may have arrived)" : "");
fail_quiet:
	reply_clear(&r);
	return FALSE;
}

static gboolean
login(BbBackend *bb, GError **error)
{
	long status = 0;
	BB_AUTO_JSON j = NULL;

	if (!call(bb, "auth/login", NULL, BB_LOGIN, &status, &j, NULL, error))
		return FALSE;
	if (status == 401)
		return pgate_config_error(error, PGATE_CI_ERROR, bb->group,
					  NULL, "Buildbot refused user %s's "
					  "password (GET /auth/login: 401)",
					  bb->cfg.user);
	if (status >= 400)
		return pgate_config_error(error, PGATE_CI_ERROR, bb->group,
					  NULL, "GET /auth/login: HTTP %ld: "
					  "does the master have www auth?",
					  status);
	bb->logged_in = TRUE;
	return TRUE;
}

/* What a definite answer other than the expected one says. */
static void
answer_error(BbBackend *bb, GError **error, const char *what, long status,
	     json_t *j)
{
	g_autofree char *msg = rpc_error(j);

	if (status == 403)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
			    "buildbot: %s: the master refused it (403: %s): %s",
			    what, msg ? msg : "forbidden",
			    bb->cfg.user ? "give user the role its authz rules "
					   "ask for"
					 : "set user and password_file in the "
					   "configuration");
	else if (status == 404)
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_NOT_FOUND,
			    "buildbot: %s: not found (404%s%s)", what,
			    msg ? ": " : "", msg ? msg : "");
	else
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_FAILED,
			    "buildbot: %s: HTTP %ld%s%s", what, status,
			    msg ? ": " : "", msg ? msg : "");
}

static void
begin(BbBackend *bb)
{
	bb->deadline = g_get_monotonic_time() +
		       (gint64)bb->cfg.request_timeout * G_USEC_PER_SEC;
}

/* The data API's collection @key of @j: its array, or NULL. */
static json_t *
collection(json_t *j, const char *key)
{
	json_t *a = json_object_get(j, key);

	return json_is_array(a) ? a : NULL;
}

static const char *
str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static gint64
int_of(json_t *o, const char *key, gint64 def)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

/* A property's value in a data API "properties" object: [value, source] */
static const char *
prop_of(json_t *o, const char *name)
{
	json_t *p = json_object_get(json_object_get(o, "properties"), name);

	return json_is_array(p) && json_is_string(json_array_get(p, 0))
		? json_string_value(json_array_get(p, 0)) : NULL;
}

/* -- the scheduler -- */

/* Collects the fullNames of a force scheduler's fields (nested). */
static void
collect_fields(json_t *fields, GHashTable *names)
{
	size_t i;
	json_t *f;

	json_array_foreach(fields, i, f) {
		json_t *sub = json_object_get(f, "fields");

		if (json_is_array(sub) && json_array_size(sub) > 0)
			collect_fields(sub, names);
		else if (str_of(f, "fullName") && *str_of(f, "fullName"))
			g_hash_table_add(names, g_strdup(str_of(f, "fullName")));
	}
}

/* Reads the force scheduler: it exists, builds on our builder and takes
 * the properties the backend needs (the trigger id, the commit).  A
 * ForceScheduler drops fields it does not declare without a word.
 * @missing: (out) (optional): the other properties it lacks. */
static gboolean
check_scheduler(BbBackend *bb, char **missing, GError **error)
{
	g_autofree char *rel = g_strdup_printf("api/v2/forceschedulers/%s",
					       bb->cfg.scheduler);
	long status = 0;
	BB_AUTO_JSON j = NULL;
	json_t *s, *names;
	g_autoptr(GHashTable) fields = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	gboolean builds_ours = FALSE;
	g_autoptr(GString) other = g_string_new(NULL);
	size_t i;
	json_t *n;

	if (!call(bb, rel, NULL, 0, &status, &j, NULL, error))
		return FALSE;
	if (status == 404)
		return pgate_config_error(error, PGATE_CI_ERROR, bb->group,
					  "scheduler", "the master has no "
					  "force scheduler %s (GET /%s: 404)",
					  bb->cfg.scheduler, rel);
	s = json_array_get(collection(j, "forceschedulers"), 0);
	if (status != 200 || !json_is_object(s)) {
		answer_error(bb, error, rel, status, j);
		return FALSE;
	}
	names = json_object_get(s, "builder_names");
	json_array_foreach(names, i, n)
		if (json_is_string(n) &&
		    g_str_equal(json_string_value(n), bb->cfg.builder))
			builds_ours = TRUE;
	if (!builds_ours)
		return pgate_config_error(error, PGATE_CI_ERROR, bb->group,
					  "builder", "force scheduler %s does "
					  "not build on builder %s (its "
					  "builderNames)", bb->cfg.scheduler,
					  bb->cfg.builder);
	collect_fields(json_object_get(s, "all_fields"), fields);
	for (int p = 0; p < BB_P_N; p++) {
		if (g_hash_table_contains(fields, bb->cfg.prop[p]))
			continue;
		if (p == BB_P_TRIGGER || p == BB_P_COMMIT)
			return pgate_config_error(
				error, PGATE_CI_ERROR, bb->group, "scheduler",
				"force scheduler %s does not take the property "
				"%s (add util.StringParameter(name='%s') to "
				"its properties): without it %s",
				bb->cfg.scheduler, bb->cfg.prop[p],
				bb->cfg.prop[p], p == BB_P_TRIGGER
				? "a build whose trigger's answer was lost is "
				  "never found again"
				: "the build does not know what to test");
		g_string_append_printf(other, "%s%s", other->len ? ", " : "",
				       bb->cfg.prop[p]);
	}
	if (missing)
		*missing = other->len ? g_strdup(other->str) : NULL;
	return TRUE;
}

/* -- finding a trigger's build request -- */

typedef struct {
	guint64 brid, bsid;
	char *commit;        /* the commit property it was sent with */
	gboolean started;    /* claimed or complete: a build may exist */
} Found;

static void
found_clear(Found *f)
{
	g_free(f->commit);
	memset(f, 0, sizeof *f);
}

/* The newest build request whose trigger property is @trigger, among
 * the master's last BB_FIND_REQUESTS.  *@found->brid 0: none. */
static gboolean
find_trigger(BbBackend *bb, const char *trigger, Found *found,
	     GError **error)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/buildrequests?property=%s&property=%s"
		"&order=-buildrequestid&limit=%d", bb->cfg.prop[BB_P_TRIGGER],
		bb->cfg.prop[BB_P_COMMIT], BB_FIND_REQUESTS);
	long status = 0;
	BB_AUTO_JSON j = NULL;
	json_t *a, *br;
	size_t i;

	memset(found, 0, sizeof *found);
	if (!call(bb, rel, NULL, 0, &status, &j, NULL, error))
		return FALSE;
	a = collection(j, "buildrequests");
	if (status != 200 || a == NULL) {
		answer_error(bb, error, "GET /api/v2/buildrequests", status, j);
		return FALSE;
	}
	json_array_foreach(a, i, br) {
		const char *t = prop_of(br, bb->cfg.prop[BB_P_TRIGGER]);

		if (t == NULL || strcmp(t, trigger) != 0)
			continue;
		get_id(br, "buildrequestid", &found->brid);
		get_id(br, "buildsetid", &found->bsid);
		found->commit = g_strdup(prop_of(br, bb->cfg.prop[BB_P_COMMIT]));
		found->started = json_is_true(json_object_get(br, "claimed")) ||
				 json_is_true(json_object_get(br, "complete"));
		break;
	}
	return TRUE;
}

static gboolean cancel_request(BbBackend *bb, guint64 brid, const char *why,
			       GError **error);

/* -- submit -- */

static char *
handle_for(BbBackend *bb, guint64 bsid, guint64 brid, const char *trigger)
{
	BbHandle h = {
		.builder = bb->cfg.builder, .bsid = bsid, .brid = brid,
		.since = g_get_real_time() / G_USEC_PER_SEC,
		.trigger = (char *)trigger,
	};

	return pgate_ci_buildbot__handle_encode(&h);
}

static void
set_prop(json_t *params, const char *name, const char *value)
{
	json_object_set_new(params, name, json_string(value ? value : ""));
}

static gboolean
value_ok(const char *what, const char *v, GError **error)
{
	if (v != NULL && (strlen(v) > BB_VALUE_MAX ||
			  !g_utf8_validate(v, -1, NULL))) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "buildbot: the %s is not UTF-8 or over %d bytes",
			    what, BB_VALUE_MAX);
		return FALSE;
	}
	return TRUE;
}

/* POSTs the force @body to @rel: the build request's handle, or NULL.  A
 * force whose answer was lost is looked for by its trigger id before it
 * is sent again (at most retries times, while time is left). */
static char *
post_force(BbBackend *bb, const char *rel, const char *body,
	   const PgateCiJob *job, GError **error)
{
	const BbConfig *cfg = &bb->cfg;
	guint tries = 0;

	for (;;) {
		long status = 0;
		BB_AUTO_JSON j = NULL;
		gboolean lost = FALSE;
		g_autoptr(GError) e = NULL;
		json_t *res, *brids;
		guint64 bsid = 0, brid = 0;
		const char *key;
		json_t *v;

		if (!call(bb, rel, body, BB_ONCE, &status, &j, &lost, &e)) {
			Found f;

			if (!lost || tries >= cfg->retries || left_ms(bb) <= 0) {
				g_propagate_prefixed_error(error,
					g_steal_pointer(&e), "%s", lost
					? "buildbot: the answer to the force was "
					  "lost; the next submission looks for "
					  "its build request: " : "");
				return NULL;
			}
			/* it may be queued: look before forcing again */
			if (!find_trigger(bb, job->trigger_id, &f, error))
				return NULL;
			if (f.brid != 0) {
				char *h = handle_for(bb, f.bsid, f.brid,
						     job->trigger_id);

				g_info("buildbot: trigger %s: the answer was "
				       "lost, build request %" G_GUINT64_FORMAT
				       " found by its trigger id",
				       job->trigger_id, f.brid);
				found_clear(&f);
				return h;
			}
			tries++;
			continue;
		}
		res = json_object_get(j, "result");
		if (status == 200 && json_is_array(res) &&
		    json_is_integer(json_array_get(res, 0)) &&
		    json_is_object(brids = json_array_get(res, 1))) {
			bsid = (guint64)json_integer_value(json_array_get(res, 0));
			json_object_foreach(brids, key, v)
				if (json_is_integer(v))
					brid = (guint64)json_integer_value(v);
		}
		if (brid != 0) {
			g_info("buildbot: trigger %s forced as buildset %"
			       G_GUINT64_FORMAT ", build request %"
			       G_GUINT64_FORMAT, job->trigger_id, bsid, brid);
			return handle_for(bb, bsid, brid, job->trigger_id);
		}
		{
			g_autofree char *msg = rpc_error(j);
			json_t *err = json_object_get(j, "error");
			gint64 code = int_of(err, "code", 0);

			if (status == 200 || code == -32602)
				/* the fields' validation: the values */
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_INVALID,
					    "buildbot: force scheduler %s "
					    "refused the build: %s",
					    cfg->scheduler,
					    msg ? msg : "no buildset in its "
							"answer");
			else if (status >= 500)
				g_set_error(error, PGATE_CI_ERROR,
					    PGATE_ERROR_FAILED,
					    "buildbot: force scheduler %s could "
					    "not build on %s: %s (check "
					    "[%s] scheduler and builder)",
					    cfg->scheduler, cfg->builder,
					    msg ? msg : "HTTP 500", bb->group);
			else
				answer_error(bb, error, "POST /api/v2/"
					     "forceschedulers", status, j);
		}
		return NULL;
	}
}

static char *
bb_submit(PgateCiBackend *b, const PgateCiJob *job, GError **error)
{
	BbBackend *bb = (BbBackend *)b;
	const BbConfig *cfg = &bb->cfg;
	const char *head = job->commits && job->commits->len
		? job->commits->pdata[job->commits->len - 1] : NULL;
	g_autofree char *version = g_strdup_printf("%u", job->version);
	g_autofree char *rel = g_strdup_printf("api/v2/forceschedulers/%s",
					       cfg->scheduler);
	g_autofree char *reason = NULL, *body = NULL;
	BB_AUTO_JSON rpc = json_object();
	json_t *params = json_object();
	const char *values[BB_P_N];

	if (head == NULL || job->trigger_id == NULL ||
	    *job->trigger_id == '\0' ||
	    strlen(job->trigger_id) > BB_TRIGGER_MAX) {
		json_decref(params);
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "buildbot: a job needs a commit and a trigger id "
			    "(at most %d bytes)", BB_TRIGGER_MAX);
		return NULL;
	}
	values[BB_P_REPO_URL] = job->repo_url;
	values[BB_P_REF] = job->ref;
	values[BB_P_COMMIT] = head;
	values[BB_P_BASE_COMMIT] = job->base_commit;
	values[BB_P_SERIES] = job->series_id;
	values[BB_P_VERSION] = version;
	values[BB_P_BRANCH] = job->branch;
	values[BB_P_MSGID] = job->msgid;
	values[BB_P_TRIGGER] = job->trigger_id;
	for (int p = 0; p < BB_P_N; p++)
		if (!value_ok(cfg->prop[p], values[p], error)) {
			json_decref(params);
			return NULL;
		}
	begin(bb);
	if (!bb->checked) {
		g_autofree char *missing = NULL;

		if (!check_scheduler(bb, &missing, error)) {
			json_decref(params);
			return NULL;
		}
		if (missing)
			g_info("buildbot: force scheduler %s does not take %s: "
			       "the builds will not see them", cfg->scheduler,
			       missing);
		bb->checked = TRUE;
	}
	if (job->repeat) {
		Found f;

		if (!find_trigger(bb, job->trigger_id, &f, error)) {
			json_decref(params);
			return NULL;
		}
		if (f.brid != 0 && (f.started || g_strcmp0(f.commit, head) == 0)) {
			char *h = handle_for(bb, f.bsid, f.brid,
					     job->trigger_id);

			g_info("buildbot: trigger %s: build request %"
			       G_GUINT64_FORMAT " of its first submission "
			       "found", job->trigger_id, f.brid);
			found_clear(&f);
			json_decref(params);
			return h;
		}
		/* still waiting, for a commit its ref no longer holds */
		if (f.brid != 0 &&
		    !cancel_request(bb, f.brid, "patchgate: the series was "
				    "applied again", error)) {
			found_clear(&f);
			json_decref(params);
			return NULL;
		}
		found_clear(&f);
	}

	json_object_set_new(params, "builderNames", json_pack("[s]",
							      cfg->builder));
	reason = g_strdup_printf("patchgate: series %s v%u",
				 job->series_id ? job->series_id : "?",
				 job->version);
	json_object_set_new(params, "reason", json_string(reason));
	/* the default codebase: what a Git step checks out */
	set_prop(params, "repository", job->repo_url);
	set_prop(params, "branch", job->ref);
	set_prop(params, "revision", head);
	for (int p = 0; p < BB_P_N; p++)
		set_prop(params, cfg->prop[p], values[p]);
	json_object_set_new(rpc, "jsonrpc", json_string("2.0"));
	json_object_set_new(rpc, "method", json_string("force"));
	json_object_set_new(rpc, "id", json_integer(1));
	json_object_set_new(rpc, "params", params);
	{
		char *s = json_dumps(rpc, JSON_COMPACT);

		body = g_strdup(s);
		free(s);
	}

	return post_force(bb, rel, body, job, error);
}

/* -- poll -- */

static gboolean
get_json(BbBackend *bb, const char *rel, long *status, json_t **j,
	 GError **error)
{
	return call(bb, rel, NULL, 0, status, j, NULL, error);
}

/* The build request (NULL: the master does not know it). */
static gboolean
request_get(BbBackend *bb, guint64 brid, json_t **br, GError **error)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/buildrequests/%" G_GUINT64_FORMAT, brid);
	long status = 0;
	BB_AUTO_JSON j = NULL;

	*br = NULL;
	if (!get_json(bb, rel, &status, &j, error))
		return FALSE;
	if (status == 404)
		return TRUE;
	if (status != 200 || collection(j, "buildrequests") == NULL) {
		answer_error(bb, error, rel, status, j);
		return FALSE;
	}
	*br = json_incref(json_array_get(collection(j, "buildrequests"), 0));
	return TRUE;
}

/* Its builds; the newest (NULL: none yet) and how many. */
static gboolean
request_builds(BbBackend *bb, guint64 brid, json_t **latest, guint *n,
	       json_t **all, GError **error)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/buildrequests/%" G_GUINT64_FORMAT "/builds", brid);
	long status = 0;
	BB_AUTO_JSON j = NULL;
	json_t *a, *bld;
	size_t i;
	gint64 best = -1;

	*latest = NULL;
	*n = 0;
	if (!get_json(bb, rel, &status, &j, error))
		return FALSE;
	a = collection(j, "builds");
	if (status != 200 || a == NULL) {
		answer_error(bb, error, rel, status, j);
		return FALSE;
	}
	json_array_foreach(a, i, bld) {
		gint64 id = int_of(bld, "buildid", -1);

		if (id > best) {
			best = id;
			*latest = bld;
		}
	}
	*n = (guint)json_array_size(a);
	if (*latest)
		json_incref(*latest);
	if (all)
		*all = json_incref(a);
	return TRUE;
}

static char *
build_url(BbBackend *bb, json_t *bld)
{
	return g_strdup_printf("%s/#/builders/%" G_GINT64_FORMAT "/builds/%"
			       G_GINT64_FORMAT, bb->cfg.link_base,
			       int_of(bld, "builderid", 0),
			       int_of(bld, "number", 0));
}

static char *
state_of(json_t *bld)
{
	return clean_line(str_of(bld, "state_string"), BB_FIELD_MAX);
}

/* The last lines of a step's stdio log ('o', 'e', 'h' channel prefix
 * removed), or NULL. */
static char *
step_tail(BbBackend *bb, gint64 stepid)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/steps/%" G_GINT64_FORMAT "/logs", stepid);
	long status = 0;
	BB_AUTO_JSON j = NULL;
	BB_AUTO_JSON c = NULL;
	json_t *logs, *lg, *use = NULL;
	size_t i;
	gint64 lines, first;
	GString *out;

	if (!get_json(bb, rel, &status, &j, NULL) || status != 200 ||
	    (logs = collection(j, "logs")) == NULL)
		return NULL;
	json_array_foreach(logs, i, lg) {
		if (g_strcmp0(str_of(lg, "slug"), "stdio") == 0) {
			use = lg;
			break;
		}
		if (use == NULL)
			use = lg;
	}
	if (use == NULL)
		return NULL;
	lines = int_of(use, "num_lines", 0);
	first = MAX(0, lines - BB_TAIL_LINES);
	g_free(rel);
	rel = g_strdup_printf("api/v2/logs/%" G_GINT64_FORMAT "/contents"
			      "?offset=%" G_GINT64_FORMAT "&limit=%d",
			      int_of(use, "logid", 0), first, BB_TAIL_LINES);
	if (!get_json(bb, rel, &status, &c, NULL) || status != 200)
		return NULL;
	out = g_string_new(NULL);
	json_array_foreach(collection(c, "logchunks"), i, lg) {
		g_auto(GStrv) ls = g_strsplit(str_of(lg, "content")
					      ? str_of(lg, "content") : "",
					      "\n", -1);
		gboolean stdio = g_strcmp0(str_of(use, "type"), "s") == 0;

		for (guint k = 0; ls[k]; k++) {
			const char *l = ls[k];
			g_autofree char *clean = NULL;

			if (*l == '\0' && ls[k + 1] == NULL)
				break;
			if (stdio && *l) {
				if (*l == 'h')	/* the worker's headers */
					continue;
				l++;
			}
			clean = clean_line(l, 200);
			g_string_append_printf(out, "%s\n", clean);
		}
	}
	return g_string_free(out, FALSE);
}

static char *
worker_name(BbBackend *bb, gint64 workerid)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/workers/%" G_GINT64_FORMAT "?field=name", workerid);
	long status = 0;
	BB_AUTO_JSON j = NULL;

	if (!get_json(bb, rel, &status, &j, NULL) || status != 200)
		return NULL;
	return clean_line(str_of(json_array_get(collection(j, "workers"), 0),
				 "name"), 100);
}

/* The steps of a finished build into the result: a line each in the
 * summary and the log file ("== step NAME: WORD in S s", as the local
 * runner writes them), the end of the first failed step's log after
 * them. */
static void
finish_result(BbBackend *bb, const BbHandle *h, json_t *bld, guint nbuilds,
	      PgateCiResult *r)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/builds/%" G_GINT64_FORMAT "/steps",
		int_of(bld, "buildid", 0));
	long status = 0;
	BB_AUTO_JSON j = NULL;
	json_t *steps = NULL, *st;
	size_t i;
	g_autoptr(GString) lines = g_string_new(NULL);
	g_autoptr(GString) log = g_string_new(NULL);
	g_autofree char *tail = NULL, *bad = NULL, *worker = NULL;
	gsize budget;

	worker = worker_name(bb, int_of(bld, "workerid", 0));
	g_string_append_printf(log, "== buildbot: build #%" G_GINT64_FORMAT
			       " of builder %s (build request %"
			       G_GUINT64_FORMAT ", %u build%s) on worker %s: "
			       "%s\n", int_of(bld, "number", 0), h->builder,
			       h->brid, nbuilds, nbuilds == 1 ? "" : "s",
			       worker ? worker : "?", r->url);
	if (get_json(bb, rel, &status, &j, NULL) && status == 200)
		steps = collection(j, "steps");
	json_array_foreach(steps, i, st) {
		g_autofree char *name = clean_line(str_of(st, "name"), 100);
		gint64 res = int_of(st, "results", -1);
		gint64 t0 = int_of(st, "started_at", 0);
		gint64 t1 = int_of(st, "complete_at", 0);
		g_autofree char *line = NULL;

		if (!json_is_true(json_object_get(st, "complete")) || res < 0)
			line = g_strdup_printf("== step %s: not-run in 0.00 s\n",
					       name);
		else
			line = g_strdup_printf("== step %s: %s in %.2f s%s\n",
					       name, step_word(res),
					       t0 && t1 >= t0
					       ? (double)(t1 - t0) : 0.0,
					       res == 1 ? ", warnings" : "");
		g_string_append(lines, line);
		g_string_append(log, line);
		if (bad == NULL && (res == 2 || res == 4)) {
			bad = g_strdup(name);
			tail = step_tail(bb, int_of(st, "stepid", 0));
		}
	}
	if (tail && *tail)
		g_string_append_printf(log, "--- last lines of step %s ---\n%s",
				       bad, tail);
	g_string_append_printf(log, "== verdict: %s: %s\n",
			       pgate_verdict_name(r->verdict),
			       r->reason ? r->reason : "");

	/* the summary: the reason, the steps, the failed step's end */
	{
		GString *s = g_string_new(r->reason ? r->reason : "passed");

		g_string_append_c(s, '\n');
		g_string_append(s, lines->str);
		if (tail && *tail) {
			g_auto(GStrv) tl = g_strsplit(tail, "\n", -1);
			guint n = g_strv_length(tl), k;
			gsize used = 0;

			g_string_append_printf(s, "--- last lines of step %s "
					       "---\n", bad);
			budget = BB_SUMMARY_MAX > s->len
				? BB_SUMMARY_MAX - s->len : 0;
			/* the last lines that fit */
			for (k = n; k > 0; k--) {
				if (used + strlen(tl[k - 1]) + 1 > budget)
					break;
				used += strlen(tl[k - 1]) + 1;
			}
			for (; k < n; k++)
				if (*tl[k] || k + 1 < n)
					g_string_append_printf(s, "%s\n", tl[k]);
		}
		if (s->len > BB_SUMMARY_MAX) {
			gsize cut = BB_SUMMARY_MAX;

			while (cut > 0 && (s->str[cut] & 0xc0) == 0x80)
				cut--;
			g_string_truncate(s, cut);
		}
		r->summary = g_string_free(s, FALSE);
	}
	if (bb->log_dir != NULL) {
		g_autofree char *path = g_strdup_printf(
			"%s/%" G_GUINT64_FORMAT ".log", bb->log_dir, h->brid);
		g_autofree char *text = pgate_secret_redact(log->str);

		if (g_mkdir_with_parents(bb->log_dir, 0750) == 0 &&
		    pgate_file_replace(path, text, strlen(text), 0640,
				       PGATE_CI_ERROR, NULL))
			/* relative to the state directory (ci.h) */
			r->log_path = g_strdup_printf(
				"buildbot/%" G_GUINT64_FORMAT ".log", h->brid);
	}
}

/* The result of a complete build request (its results are final): the
 * verdict, the reason, and the summary and log of its newest build @bld. */
static void
complete_result(BbBackend *bb, const BbHandle *h, json_t *br, json_t *bld,
		guint nbuilds, gint64 number, gint64 now, PgateCiResult *r)
{
	gint64 res = int_of(br, "results", -1);
	g_autofree char *state = bld ? state_of(bld) : NULL;

	r->state = PGATE_JOB_DONE;
	r->verdict = pgate_ci_buildbot__verdict(res);
	r->finished = bld ? int_of(bld, "complete_at", now)
			  : int_of(br, "complete_at", now);
	if (bld == NULL)
		r->reason = g_strdup_printf(
			"build request %" G_GUINT64_FORMAT " ended %s "
			"before a build started", h->brid,
			pgate_ci_buildbot__results_word(res));
	else if (res == 0)
		r->reason = NULL;
	else if (res == 2)
		r->reason = g_strdup_printf("build #%" G_GINT64_FORMAT
					    " failed: %s", number,
					    state);
	else if (res == 3)
		r->reason = g_strdup_printf("build #%" G_GINT64_FORMAT
					    " skipped, nothing was "
					    "tested: %s", number,
					    state);
	else if (res == 1)
		r->reason = g_strdup_printf("build #%" G_GINT64_FORMAT
					    " passed with warnings: %s",
					    number, state);
	else
		/* EXCEPTION, RETRY, CANCELLED: the master's or a
		 * worker's trouble, or a person's; never the
		 * patch's */
		r->reason = g_strdup_printf("build #%" G_GINT64_FORMAT
					    " ended %s: %s", number,
					    pgate_ci_buildbot__results_word(
						    res), state);
	if (bld)
		finish_result(bb, h, bld, nbuilds, r);
	else
		r->summary = g_strdup(r->reason);
}

static gboolean stop_build(BbBackend *bb, gint64 buildid, const char *why,
			   GError **error);

static PgateCiResult *
bb_poll(PgateCiBackend *b, const char *handle, GError **error)
{
	BbBackend *bb = (BbBackend *)b;
	BbHandle h;
	BB_AUTO_JSON br = NULL;
	BB_AUTO_JSON bld = NULL;
	g_autoptr(PgateCiResult) r = pgate_ci_result_new();
	guint nbuilds = 0;
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	gint64 number;

	if (!pgate_ci_buildbot__handle_decode(&h, handle, error))
		return NULL;
	begin(bb);
	if (!request_get(bb, h.brid, &br, error) ||
	    (br != NULL && !request_builds(bb, h.brid, &bld, &nbuilds, NULL,
					   error))) {
		pgate_ci_buildbot__handle_clear(&h);
		return NULL;
	}
	if (br == NULL) {
		r->state = PGATE_JOB_LOST;
		r->reason = g_strdup_printf("build request %" G_GUINT64_FORMAT
					    " is gone (the master's database "
					    "was reset?)", h.brid);
		pgate_ci_buildbot__handle_clear(&h);
		return g_steal_pointer(&r);
	}
	number = bld ? int_of(bld, "number", 0) : 0;
	if (bld) {
		r->url = build_url(bb, bld);
		r->started = int_of(bld, "started_at", 0);
	}
	if (!json_is_true(json_object_get(br, "complete"))) {
		g_autofree char *state = bld ? state_of(bld) : NULL;

		if (bld && !json_is_true(json_object_get(bld, "complete"))) {
			r->state = PGATE_JOB_RUNNING;
			r->reason = g_strdup_printf("build #%" G_GINT64_FORMAT
						    ": %s", number, state);
			if (r->started > 0 &&
			    now - r->started > (gint64)bb->cfg.build_timeout) {
				if (!stop_build(bb, int_of(bld, "buildid", 0),
						"patchgate: build_timeout",
						error)) {
					pgate_ci_buildbot__handle_clear(&h);
					return NULL;
				}
				r->state = PGATE_JOB_DONE;
				r->verdict = PGATE_VERDICT_FAIL;
				g_free(r->reason);
				r->reason = g_strdup_printf(
					"build #%" G_GINT64_FORMAT " timed out "
					"after %" G_GINT64_FORMAT " s (stopped)",
					number, now - r->started);
				r->summary = g_strdup(r->reason);
				r->finished = now;
			}
		} else {
			gint64 since = h.since ? h.since
					       : int_of(br, "submitted_at", now);

			r->state = PGATE_JOB_QUEUED;
			r->reason = bld
				? g_strdup_printf("build #%" G_GINT64_FORMAT
						  " ended %s (%s): waiting to "
						  "be built again", number,
						  pgate_ci_buildbot__results_word(
							  int_of(bld, "results",
								 -1)), state)
				: g_strdup("waiting for a worker");
			if (now - since > (gint64)bb->cfg.queue_timeout) {
				if (!cancel_request(bb, h.brid, "patchgate: "
						    "queue_timeout", error)) {
					pgate_ci_buildbot__handle_clear(&h);
					return NULL;
				}
				r->state = PGATE_JOB_DONE;
				r->verdict = PGATE_VERDICT_ERROR;
				g_free(r->reason);
				r->reason = g_strdup_printf(
					"still queued after %" G_GINT64_FORMAT
					" s, cancelled: no worker took it",
					now - since);
				r->summary = g_strdup(r->reason);
				r->finished = now;
			}
		}
		pgate_ci_buildbot__handle_clear(&h);
		return g_steal_pointer(&r);
	}

	/* complete: the request's results are final */
	complete_result(bb, &h, br, bld, nbuilds, number, now, r);
	pgate_ci_buildbot__handle_clear(&h);
	return g_steal_pointer(&r);
}

/* -- cancel -- */

static gboolean
control(BbBackend *bb, const char *rel, const char *method, const char *why,
	GError **error)
{
	BB_AUTO_JSON rpc = json_pack("{s:s, s:s, s:i, s:{s:s}}", "jsonrpc",
				     "2.0", "method", method, "id", 1,
				     "params", "reason", why);
	char *s = json_dumps(rpc, JSON_COMPACT);
	g_autofree char *body = g_strdup(s);
	long status = 0;
	BB_AUTO_JSON j = NULL;

	free(s);
	if (!call(bb, rel, body, 0, &status, &j, NULL, error))
		return FALSE;
	if (status == 200 || status == 404)
		return TRUE;
	answer_error(bb, error, rel, status, j);
	return FALSE;
}

static gboolean
stop_build(BbBackend *bb, gint64 buildid, const char *why, GError **error)
{
	g_autofree char *rel = g_strdup_printf("api/v2/builds/%"
					       G_GINT64_FORMAT, buildid);

	return control(bb, rel, "stop", why, error);
}

/* Cancels the request, then stops what of it still runs. */
static gboolean
cancel_request(BbBackend *bb, guint64 brid, const char *why, GError **error)
{
	g_autofree char *rel = g_strdup_printf(
		"api/v2/buildrequests/%" G_GUINT64_FORMAT, brid);
	BB_AUTO_JSON latest = NULL;
	BB_AUTO_JSON all = NULL;
	guint n = 0;
	size_t i;
	json_t *bld;

	if (!control(bb, rel, "cancel", why, error) ||
	    !request_builds(bb, brid, &latest, &n, &all, error))
		return FALSE;
	json_array_foreach(all, i, bld)
		if (!json_is_true(json_object_get(bld, "complete")) &&
		    !stop_build(bb, int_of(bld, "buildid", 0), why, error))
			return FALSE;
	return TRUE;
}

static gboolean
bb_cancel(PgateCiBackend *b, const char *handle, GError **error)
{
	BbBackend *bb = (BbBackend *)b;
	BbHandle h;
	BB_AUTO_JSON br = NULL;
	gboolean ok;

	if (!pgate_ci_buildbot__handle_decode(&h, handle, error))
		return FALSE;
	begin(bb);
	ok = request_get(bb, h.brid, &br, error);
	if (ok && br != NULL && !json_is_true(json_object_get(br, "complete")))
		ok = cancel_request(bb, h.brid, "patchgate: superseded",
				    error);
	if (ok)
		g_info("buildbot: build request %" G_GUINT64_FORMAT
		       " cancelled", h.brid);
	pgate_ci_buildbot__handle_clear(&h);
	return ok;
}

/* -- the backend -- */

static void
bb_free(PgateCiBackend *b)
{
	BbBackend *bb = (BbBackend *)b;

	if (bb->easy)
		curl_easy_cleanup(bb->easy);
	pgate_ci_buildbot__config_clear(&bb->cfg);
	g_free(bb->group);
	g_free(bb->log_dir);
	g_free(bb);
}

static const PgateCiBackendClass buildbot_class = {
	.name = "buildbot",
	.submit = bb_submit,
	.poll = bb_poll,
	.poll_many = NULL,	/* one at a time: ci.c's loop */
	.cancel = bb_cancel,
	.free = bb_free,
};

PgateCiBackend *
pgate_ci_buildbot_create(GKeyFile *kf, const char *group,
			 const char *state_dir, GError **error)
{
	BbBackend *bb = g_new0(BbBackend, 1);

	bb->parent.klass = &buildbot_class;
	bb->group = g_strdup(group);
	pgate_curl_init();
	if (!pgate_ci_buildbot__config_load(&bb->cfg, kf, group, error)) {
		bb_free(&bb->parent);
		return NULL;
	}
	bb->easy = curl_easy_init();
	if (bb->easy != NULL)	/* the session cookie of a login */
		curl_easy_setopt(bb->easy, CURLOPT_COOKIEFILE, "");
	if (bb->easy == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
			    "buildbot: cannot set up libcurl");
		bb_free(&bb->parent);
		return NULL;
	}
	if (state_dir != NULL)
		bb->log_dir = g_build_filename(state_dir, "buildbot", NULL);
	if (bb->cfg.secret != NULL &&
	    g_str_has_prefix(bb->cfg.base, "http://") &&
	    !g_str_has_prefix(bb->cfg.base, "http://127.") &&
	    !g_str_has_prefix(bb->cfg.base, "http://localhost") &&
	    !g_str_has_prefix(bb->cfg.base, "http://[::1]"))
		g_warning("buildbot: [%s] url is plain http: the password for "
			  "user %s crosses the network unencrypted", group,
			  bb->cfg.user);
	return &bb->parent;
}

/* -- config check --online -- */

gboolean
pgate_ci_buildbot_check_online(GKeyFile *kf, const char *group,
			       GError **error)
{
	g_autoptr(GError) e = NULL;
	PgateCiBackend *b = pgate_ci_buildbot_create(kf, group, NULL, error);
	BbBackend *bb = (BbBackend *)b;
	gboolean ok;

	if (b == NULL)
		return FALSE;
	begin(bb);
	/* the master, and our login on it: the scheduler's page */
	ok = check_scheduler(bb, NULL, &e);
	if (!ok) {
		if (e->code == PGATE_ERROR_IO)
			g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
				    "[%s] url: the master cannot be reached: "
				    "%s", group, e->message);
		else if (g_str_has_prefix(e->message, "["))
			g_propagate_error(error, g_steal_pointer(&e));
		else
			g_set_error(error, PGATE_CI_ERROR, e->code,
				    "[%s] url: %s", group, e->message);
	}
	bb_free(b);
	return ok;
}
