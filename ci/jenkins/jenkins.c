/* jenkins.c - the Jenkins CI backend: its request engine, the trigger.
 *
 * (track.c holds poll and cancel, which run on this engine.)
 *
 * Every call (submit, poll, poll_many, cancel) runs a set of operations on
 * the backend's curl multi handle until they are all done or the request
 * timeout has passed, whichever comes first: no call blocks for longer.
 * An operation is a short chain of requests (a poll reads the queue item,
 * then the build once the item names it, then the test report and, for a
 * failed build, the end of its console log); each request gets its own
 * easy handle, at most max_connections run at once, and each is retried
 * with a doubling pause on a 5xx reply or a network error, a few times
 * and only while time is left.  What is still failing then is a transient
 * error (PGATE_ERROR_IO): the caller polls again later.
 *
 * The server's behaviour followed here is that of the real Jenkins
 * (../shared/docs, section 1): triggers are POSTed and never follow
 * redirects (201 new queue item, 303 merged into a queued one, 302 refused);
 * the queue item number is taken from Location and the URL rebuilt on our
 * configured base, since Jenkins builds Location from the request's host;
 * a left queue item may show "executable": null for a moment, and is
 * forgotten 5 minutes after it left, which is why a poll that learns the
 * build number hands back an upgraded handle at once, and why a poll or a
 * cancel that finds the item gone looks for its build (by the trigger id,
 * or the queueId, among the job's last builds) before it calls the job
 * lost; a repeated trigger (its first answer was lost) looks for it too,
 * and a 303 is told apart: the repeat joined its own earlier attempt, or
 * a job that lacks the trigger parameter merged two submissions; a build
 * is finished when "inProgress" (not "building") is false.  With a
 * password instead of an API token every POST carries a crumb from
 * /crumbIssuer, which Jenkins binds to the session cookie; the cookie jar
 * is shared by the backend's requests, and a 403 "No valid crumb" (the
 * session expired, Jenkins restarted) fetches a new crumb once.
 *
 * Secrets go to libcurl only (CURLOPT_PASSWORD); no URL, log line or error
 * message holds one.
 */
#include "ci/jenkins/jenkins-private.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define JK_ERROR_BODY_MAX (16 * 1024)  /* an error page we read */
#define JK_FIND_BUILDS 100             /* builds searched for a lost item */

static void op_get_crumb(JkOp *op);
static void on_trigger(JkOp *op);
static void after_find_submit(JkOp *op);

/* -- requests -- */

static void
req_clear(JkReq *r)
{
	g_free(r->url);
	g_free(r->body);
	if (r->reply)
		g_byte_array_unref(r->reply);
	g_free(r->location);
	memset(r, 0, sizeof *r);
}

/* Frees what an operation holds once it is over (its easy handle is gone
 * with pgate_ci_jenkins__run); what the caller wants is stolen from it
 * first. */
void
pgate_ci_jenkins__op_clear(JkOp *op)
{
	pgate_ci_result_free(op->result);
	op->result = NULL;
	g_clear_pointer(&op->handle_out, g_free);
	g_clear_pointer(&op->post_rel, g_free);
	g_clear_pointer(&op->post_body, g_free);
	g_clear_pointer(&op->commit, g_free);
	req_clear(&op->req);
	req_clear(&op->saved);
	g_clear_pointer(&op->headers, curl_slist_free_all);
	pgate_ci_jenkins__handle_clear(&op->h);
	g_clear_error(&op->error);
}

static void
req_reset_reply(JkReq *r)
{
	r->status = 0;
	if (r->reply)
		g_byte_array_set_size(r->reply, 0);
	else
		r->reply = g_byte_array_new();
	r->received = 0;
	r->overflow = FALSE;
	g_clear_pointer(&r->location, g_free);
	r->text_size = -1;
	r->errbuf[0] = '\0';
}

/* The URL below our base: @rel starts without a slash. */
static char *
jk_url(JkBackend *jb, const char *rel)
{
	return g_strconcat(jb->cfg.base, "/", rel, NULL);
}

static void
op_request(JkOp *op, gboolean post, char *url, char *body, gsize max,
	   JkHandler handler)
{
	req_clear(&op->req);
	op->req.post = post;
	op->req.url = url;
	op->req.body = post ? (body ? body : g_strdup("")) : NULL;
	if (!post)
		g_free(body);
	op->req.max = max;
	op->req.handler = handler;
	req_reset_reply(&op->req);
	op->attempt = 0;
	op->not_before = 0;
	op->pending = TRUE;
}

void
pgate_ci_jenkins__op_get(JkOp *op, const char *rel, gsize max,
			 JkHandler handler)
{
	op_request(op, FALSE, jk_url(op->jb, rel), NULL, max, handler);
}

void
pgate_ci_jenkins__op_post(JkOp *op, const char *rel, char *body,
			  JkHandler handler)
{
	op_request(op, TRUE, jk_url(op->jb, rel), body, JK_ERROR_BODY_MAX,
		   handler);
}

void
pgate_ci_jenkins__op_finish(JkOp *op)
{
	op->done = TRUE;
	op->pending = FALSE;
}

void
pgate_ci_jenkins__op_fail(JkOp *op, PgateErrorCode code, const char *fmt,
			  ...)
{
	va_list ap;
	g_autofree char *msg = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_clear_error(&op->error);
	g_set_error(&op->error, PGATE_CI_ERROR, code, "Jenkins %s: %s",
		    op->jb->cfg.base, msg);
	pgate_ci_jenkins__op_finish(op);
	if (op->jb->crumb_state == CRUMB_FETCHING &&
	    op->jb->crumb_owner == op) {
		op->jb->crumb_state = CRUMB_UNKNOWN;
		op->jb->crumb_owner = NULL;
	}
}

/* The request's path below the base, for messages. */
static const char *
req_path(JkOp *op)
{
	gsize n = strlen(op->jb->cfg.base);

	if (op->req.url && strncmp(op->req.url, op->jb->cfg.base, n) == 0)
		return op->req.url + n;
	return "?";
}

static gboolean
reply_says(JkReq *r, const char *what)
{
	return r->reply && r->reply->len > 0 &&
	       memmem(r->reply->data, r->reply->len, what, strlen(what));
}

static char *
reply_excerpt(JkReq *r)
{
	if (r->reply == NULL || r->reply->len == 0)
		return g_strdup("");
	return pgate_ci_jenkins__excerpt((const char *)r->reply->data,
					 r->reply->len, JK_WHY_MAX);
}

/* The errors every request may meet, with a clear message.  @what says
 * what was being done ("trigger job ci/x"), @missing what a 404 means. */
void
pgate_ci_jenkins__op_http_error(JkOp *op, const char *what,
				const char *missing)
{
	JkConfig *cfg = &op->jb->cfg;
	long st = op->req.status;
	g_autofree char *ex = reply_excerpt(&op->req);

	switch (st) {
	case 400:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_INVALID,
			"%s: the request was rejected (400): %s", what, ex);
		break;
	case 401:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_CONFIG,
			"Jenkins refused the credentials for user %s (401)",
			cfg->user);
		break;
	case 403:
		if (reply_says(&op->req, "No valid crumb")) {
			pgate_ci_jenkins__op_fail(op, PGATE_ERROR_CONFIG,
				"%s: Jenkins refused the "
				"crumb for user %s (403 No valid crumb; does a "
				"proxy drop the session cookie?)", what,
				cfg->user);
			break;
		}
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_CONFIG,
			"%s: user %s lacks the permission (403): %s", what,
			cfg->user, ex);
		break;
	case 404:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_NOT_FOUND,
			"%s: %s (404)", what, missing);
		break;
	case 405:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
			"%s: method not allowed (405)", what);
		break;
	case 409:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
			"%s: the job is disabled (409)", what);
		break;
	default:
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
			"%s: unexpected reply HTTP %ld to %s %s", what, st,
			op->req.post ? "POST" : "GET", req_path(op));
		break;
	}
}

json_t *
pgate_ci_jenkins__op_reply_json(JkOp *op, const char *what)
{
	json_error_t jerr;
	json_t *o = json_loadb((const char *)op->req.reply->data,
			       op->req.reply->len, 0, &jerr);

	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		/* a proxy's page, a reply cut short: may pass */
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
			"%s: the reply to GET %s is not a JSON object (%s)",
			what, req_path(op), o ? "not an object" : jerr.text);
		return NULL;
	}
	return o;
}

/* -- libcurl callbacks -- */

static size_t
on_write(char *ptr, size_t size, size_t nmemb, void *data)
{
	JkReq *r = data;
	gsize n = size * nmemb;

	r->received += n;
	if (r->tail) {
		g_byte_array_append(r->reply, (const guint8 *)ptr, (guint)n);
		if (r->reply->len > r->max) {
			g_byte_array_remove_range(r->reply, 0,
						  r->reply->len - (guint)r->max);
			r->overflow = TRUE;
		}
		if (r->received > r->cap) {
			r->overflow = TRUE;
			return 0;
		}
		return n;
	}
	if (r->reply->len + n > r->max) {
		g_byte_array_append(r->reply, (const guint8 *)ptr,
				    (guint)(r->max - r->reply->len));
		r->overflow = TRUE;
		return 0;
	}
	g_byte_array_append(r->reply, (const guint8 *)ptr, (guint)n);
	return n;
}

static char *
header_value(const char *line, gsize len, const char *name)
{
	gsize n = strlen(name);
	const char *v, *end;

	if (len <= n || g_ascii_strncasecmp(line, name, n) != 0 ||
	    line[n] != ':')
		return NULL;
	v = line + n + 1;
	end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return g_strndup(v, (gsize)(end - v));
}

static size_t
on_header(char *line, size_t size, size_t nitems, void *data)
{
	JkReq *r = data;
	gsize len = size * nitems;
	char *v;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after 100 Continue): forget the last one */
		g_clear_pointer(&r->location, g_free);
		r->text_size = -1;
	} else if ((v = header_value(line, len, "Location")) != NULL) {
		g_free(r->location);
		r->location = v;
	} else if ((v = header_value(line, len, "X-Text-Size")) != NULL) {
		guint64 n;

		if (g_ascii_string_to_unsigned(v, 10, 0, G_MAXINT64, &n, NULL))
			r->text_size = (gint64)n;
		g_free(v);
	}
	return len;
}

/* -- the engine -- */

void
pgate_ci_jenkins__easy_auth(CURL *e, const JkConfig *cfg)
{
	curl_easy_setopt(e, CURLOPT_USERAGENT, "patchgate/" "0.1");
	curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	curl_easy_setopt(e, CURLOPT_USERNAME, cfg->user);
	curl_easy_setopt(e, CURLOPT_PASSWORD, cfg->secret);
	if (cfg->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_file);
	if (cfg->ca_path)
		curl_easy_setopt(e, CURLOPT_CAPATH, cfg->ca_path);
}

static gboolean
op_start(JkOp *op)
{
	JkBackend *jb = op->jb;
	JkConfig *cfg = &jb->cfg;
	JkReq *r = &op->req;
	gint64 left_ms = (jb->deadline - g_get_monotonic_time()) / 1000;
	CURL *e;

	if (r->post && cfg->auth == JK_AUTH_PASSWORD && !r->is_crumb) {
		if (jb->crumb_state == CRUMB_FETCHING)
			return FALSE;  /* another operation is getting it */
		if (jb->crumb_state == CRUMB_UNKNOWN) {
			op_get_crumb(op);
			jb->crumb_state = CRUMB_FETCHING;
			jb->crumb_owner = op;
		}
	}
	e = curl_easy_init();
	if (e == NULL) {
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
			"cannot create a curl handle");
		return TRUE;
	}
	req_reset_reply(r);
	pgate_curl_setup(e, "http,https", r->errbuf);
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, op);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	pgate_ci_jenkins__easy_auth(e, cfg);
	pgate_curl_timeouts(e, left_ms, left_ms);
	if (cfg->auth == JK_AUTH_PASSWORD) {
		curl_easy_setopt(e, CURLOPT_SHARE, jb->share);
		curl_easy_setopt(e, CURLOPT_COOKIEFILE, "");
		if (r->is_crumb && jb->clear_cookies) {
			curl_easy_setopt(e, CURLOPT_COOKIELIST, "ALL");
			jb->clear_cookies = FALSE;
		}
	}
	curl_slist_free_all(op->headers);
	op->headers = curl_slist_append(NULL, "Expect:");
	if (r->post) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(r->body));
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		if (jb->crumb_state == CRUMB_HAVE && !r->is_crumb)
			op->headers = curl_slist_append(op->headers,
							jb->crumb_header);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, op->headers);
	if (curl_multi_add_handle(jb->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
			"cannot start a request");
		return TRUE;
	}
	op->easy = e;
	op->active = TRUE;
	op->pending = FALSE;
	return TRUE;
}

/* Schedules the request again, or fails, after a 5xx or network error. */
static void
op_retry_or_fail(JkOp *op, const char *why)
{
	JkBackend *jb = op->jb;
	guint64 pause = (guint64)jb->cfg.retry_backoff_ms * 1000
			<< MIN(op->attempt, 16u);
	gint64 at = g_get_monotonic_time() + (gint64)pause;

	if (op->attempt < jb->cfg.retries && at < jb->deadline) {
		op->attempt++;
		op->not_before = at;
		op->pending = TRUE;
		if (op->req.handler == on_trigger)
			op->resent = TRUE;
		g_debug("jenkins: %s %s: %s; retry %u", op->req.post ? "POST"
			: "GET", req_path(op), why, op->attempt);
		return;
	}
	pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
		"%s %s: %s (%u attempt%s)", op->req.post ? "POST" : "GET",
		req_path(op), why, op->attempt + 1, op->attempt ? "s" : "");
}

/* Whether a request that failed with @cc may have reached the server and
 * lost only its reply (every error after the connection was made). */
static gboolean
reply_maybe_lost(CURLcode cc)
{
	return cc != CURLE_COULDNT_RESOLVE_PROXY &&
	       cc != CURLE_COULDNT_RESOLVE_HOST &&
	       cc != CURLE_COULDNT_CONNECT && cc != CURLE_SSL_CONNECT_ERROR;
}

/* A trigger whose reply was lost may have been queued, and the item may
 * already have left the queue (a short quiet period): before it is sent
 * again, its build is looked for (find_build), so that a retry never
 * makes a second build.  Counted apart from op->attempt, which every new
 * request resets. */
static void
op_retry_trigger(JkOp *op, const char *why)
{
	JkBackend *jb = op->jb;
	guint64 pause = (guint64)jb->cfg.retry_backoff_ms * 1000
			<< MIN(op->trigger_tries, 16u);
	gint64 at = g_get_monotonic_time() + (gint64)pause;
	g_autofree char *path = g_strdup(req_path(op));

	if (op->trigger_tries < jb->cfg.retries && at < jb->deadline) {
		op->trigger_tries++;
		op->resent = TRUE;
		g_debug("jenkins: POST %s: %s; looking for its build before "
			"retry %u", path, why, op->trigger_tries);
		g_free(op->post_rel);
		g_free(op->post_body);
		op->post_rel = g_strdup(path + 1);
		op->post_body = g_strdup(op->req.body);
		pgate_ci_jenkins__op_find_build(op, after_find_submit);
		op->not_before = at;
		return;
	}
	pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
		"POST %s: %s (%u attempt%s)", path, why, op->trigger_tries + 1,
		op->trigger_tries ? "s" : "");
}

static void
op_complete(JkOp *op, CURLcode cc)
{
	JkBackend *jb = op->jb;
	JkReq *r = &op->req;

	op->active = FALSE;
	curl_easy_getinfo(op->easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_multi_remove_handle(jb->multi, op->easy);
	curl_easy_cleanup(op->easy);
	op->easy = NULL;

	if (cc == CURLE_WRITE_ERROR && r->overflow && r->may_cut)
		cc = CURLE_OK;
	if (cc == CURLE_WRITE_ERROR && r->overflow) {
		if (r->is_crumb)
			jb->crumb_state = CRUMB_UNKNOWN;
		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_TOO_LARGE,
			"GET %s: the reply is larger than %" G_GSIZE_FORMAT
			" bytes", req_path(op), r->max);
		return;
	}
	if (cc != CURLE_OK) {
		const char *msg = pgate_curl_message(cc, r->errbuf);
		PgateErrorCode code = pgate_curl_error_code(cc);

		if (code == PGATE_ERROR_CONFIG) {
			if (r->is_crumb)
				jb->crumb_state = CRUMB_UNKNOWN;
			pgate_ci_jenkins__op_fail(op, PGATE_ERROR_CONFIG, "%s",
				msg);
		} else if (code == PGATE_ERROR_IO && r->handler == on_trigger &&
			   reply_maybe_lost(cc)) {
			op_retry_trigger(op, msg);
		} else if (code == PGATE_ERROR_IO) {
			op_retry_or_fail(op, msg);
		} else {
			if (r->is_crumb)
				jb->crumb_state = CRUMB_UNKNOWN;
			pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
				"%s %s: %s", r->post ? "POST" : "GET",
				req_path(op), msg);
		}
		return;
	}
	g_debug("jenkins: %s %s -> %ld", r->post ? "POST" : "GET",
		req_path(op), r->status);
	if (r->status >= 500) {
		g_autofree char *why = g_strdup_printf("HTTP %ld", r->status);

		op_retry_or_fail(op, why);
		return;
	}
	if (r->status == 403 && r->post && !r->is_crumb &&
	    jb->cfg.auth == JK_AUTH_PASSWORD &&
	    reply_says(r, "No valid crumb") && !op->crumb_retried) {
		/* the session is gone (expired, Jenkins restarted): new one */
		op->crumb_retried = TRUE;
		if (jb->crumb_state != CRUMB_FETCHING) {
			jb->crumb_state = CRUMB_UNKNOWN;
			jb->clear_cookies = TRUE;
			g_clear_pointer(&jb->crumb_header, g_free);
		}
		req_reset_reply(r);
		op->pending = TRUE;
		return;
	}
	r->handler(op);
	if (r->is_crumb && jb->crumb_state == CRUMB_FETCHING)
		jb->crumb_state = CRUMB_UNKNOWN;  /* it failed */
}

/* Runs @ops until all are done or the request timeout passed. */
void
pgate_ci_jenkins__run(JkBackend *jb, JkOp **ops, guint n)
{
	JkConfig *cfg = &jb->cfg;

	jb->deadline = g_get_monotonic_time() +
		       (gint64)cfg->request_timeout * G_USEC_PER_SEC;
	for (;;) {
		gint64 now = g_get_monotonic_time();
		gint64 wake = jb->deadline;
		guint active = 0, left = 0;
		int running = 0;
		CURLMsg *msg;
		int queued;

		for (guint i = 0; i < n; i++) {
			if (ops[i]->active)
				active++;
			if (!ops[i]->done)
				left++;
		}
		if (left == 0)
			break;
		if (now >= jb->deadline) {
			for (guint i = 0; i < n; i++) {
				JkOp *op = ops[i];

				if (op->done)
					continue;
				if (op->active) {
					curl_multi_remove_handle(jb->multi,
								 op->easy);
					curl_easy_cleanup(op->easy);
					op->easy = NULL;
					op->active = FALSE;
					if (op->req.is_crumb)
						jb->crumb_state = CRUMB_UNKNOWN;
				}
				pgate_ci_jenkins__op_fail(op, PGATE_ERROR_IO,
					"no answer within "
					"the request timeout (%u s)",
					cfg->request_timeout);
			}
			break;
		}
		for (guint i = 0; i < n && active < cfg->max_connections; i++) {
			JkOp *op = ops[i];

			if (!op->pending || op->active || op->done)
				continue;
			if (op->not_before > now) {
				wake = MIN(wake, op->not_before);
				continue;
			}
			if (op_start(op) && op->active)
				active++;
		}
		if (active == 0) {
			/* only pauses (retry backoff, a crumb being fetched
			 * by an operation already done) are left */
			gint64 pause = MIN(wake - now, 50 * 1000);
			gboolean startable = FALSE;

			for (guint i = 0; i < n; i++)
				if (!ops[i]->done && ops[i]->pending &&
				    ops[i]->not_before <= now)
					startable = TRUE;
			if (startable && jb->crumb_state == CRUMB_FETCHING &&
			    (jb->crumb_owner == NULL || jb->crumb_owner->done))
				jb->crumb_state = CRUMB_UNKNOWN;
			if (!startable && pause > 0)
				g_usleep((gulong)pause);
			continue;
		}
		curl_multi_poll(jb->multi, NULL, 0,
				(int)MAX(1, MIN((wake - now) / 1000, 1000)),
				NULL);
		curl_multi_perform(jb->multi, &running);
		while ((msg = curl_multi_info_read(jb->multi, &queued))) {
			char *priv = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  &priv);
			op_complete((JkOp *)priv, msg->data.result);
		}
	}
	/* the operations go away with this call */
	if (jb->crumb_state == CRUMB_FETCHING)
		jb->crumb_state = CRUMB_UNKNOWN;
	jb->crumb_owner = NULL;
}

/* -- the crumb -- */

static void
on_crumb(JkOp *op)
{
	JkBackend *jb = op->jb;
	JK_AUTO_JSON o = NULL;
	const char *field, *crumb;

	if (op->req.status == 404) {
		/* CSRF protection switched off: no POST needs a crumb */
		jb->crumb_state = CRUMB_NOT_NEEDED;
	} else if (op->req.status == 200) {
		o = pgate_ci_jenkins__op_reply_json(op, "get a crumb");
		if (o == NULL)
			return;
		field = json_string_value(json_object_get(o,
							  "crumbRequestField"));
		crumb = json_string_value(json_object_get(o, "crumb"));
		if (field == NULL || crumb == NULL || strlen(field) > 64 ||
		    strlen(crumb) > 256 ||
		    strcspn(field, ":\r\n \t") != strlen(field) ||
		    strcspn(crumb, "\r\n") != strlen(crumb)) {
			pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
				"get a crumb: "
				"crumbIssuer's reply has no usable crumb");
			return;
		}
		g_free(jb->crumb_header);
		jb->crumb_header = g_strdup_printf("%s: %s", field, crumb);
		jb->crumb_state = CRUMB_HAVE;
	} else {
		pgate_ci_jenkins__op_http_error(op, "get a crumb",
			"no crumb issuer");
		return;
	}
	jb->crumb_owner = NULL;
	/* now the POST that was waiting for it */
	req_clear(&op->req);
	op->req = op->saved;
	memset(&op->saved, 0, sizeof op->saved);
	op->has_saved = FALSE;
	op->attempt = 0;
	op->not_before = 0;
	op->pending = TRUE;
}

/* Puts the crumb request before the POST in op->req. */
static void
op_get_crumb(JkOp *op)
{
	op->saved = op->req;
	op->has_saved = TRUE;
	memset(&op->req, 0, sizeof op->req);
	op->req.url = jk_url(op->jb, "crumbIssuer/api/json");
	op->req.max = JK_ERROR_BODY_MAX;
	op->req.is_crumb = TRUE;
	op->req.handler = on_crumb;
}

/* -- finding a build again --
 *
 * Jenkins forgets a queue item 5 minutes after it left the queue, and at
 * a restart, while the build it became stays.  A handle that names only
 * the item (its poller was away for longer: passes of patchgate run from
 * cron) and a repeated trigger whose first answer was lost find that
 * build among the job's last JK_FIND_BUILDS builds: the one whose trigger
 * parameter is the handle's trigger id, or, for a build without that
 * parameter (a job that does not declare it) or a handle without a
 * trigger id, the one whose queueId is the handle's queue item. */

/* The value of parameter @name in the ParametersAction of a build's or a
 * queue item's "actions" (transfer none), or %NULL. */
static const char *
actions_param(json_t *o, const char *name)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(o, "actions"), i, a) {
		json_t *p;
		size_t k;

		json_array_foreach(json_object_get(a, "parameters"), k, p) {
			const char *n = json_string_value(json_object_get(p,
									  "name"));

			if (n != NULL && g_str_equal(n, name))
				return json_string_value(json_object_get(
					p, "value"));
		}
	}
	return NULL;
}

static void
on_find_build(JkOp *op)
{
	const char *pname = op->jb->cfg.param[JK_P_TRIGGER];
	JK_AUTO_JSON o = NULL;
	guint64 found = 0, found_qid = 0;
	json_t *b;
	size_t i;

	if (op->req.status == 404) {
		/* the job is gone (or hidden): so are its builds */
		op->after_find(op);
		return;
	}
	if (op->req.status != 200) {
		g_autofree char *what = g_strdup_printf(
			"look for the build of trigger %s in job %s",
			op->h.trigger ? op->h.trigger : "?", op->h.job);

		pgate_ci_jenkins__op_http_error(op, what, "no such job");
		return;
	}
	o = pgate_ci_jenkins__op_reply_json(op, "read the job's builds");
	if (o == NULL)
		return;
	/* the build of both the trigger and the queue item, else the first
	 * (the builds come newest first: the last) of either */
	json_array_foreach(json_object_get(o, "builds"), i, b) {
		json_int_t num = json_integer_value(json_object_get(b,
								    "number"));
		json_int_t qid = json_integer_value(json_object_get(b,
								    "queueId"));
		const char *trig = actions_param(b, pname);
		gboolean same_item, match;

		if (num <= 0 || num > (json_int_t)1 << 53)
			continue;
		if (qid < 0 || qid > (json_int_t)1 << 53)
			qid = 0;
		same_item = op->h.queue_id != 0 && (guint64)qid == op->h.queue_id;
		if (trig != NULL && op->h.trigger != NULL)
			match = g_str_equal(trig, op->h.trigger);
		else
			match = same_item;
		if (!match)
			continue;
		found = (guint64)num;
		found_qid = (guint64)qid;
		if (same_item)
			break;
	}
	op->h.build = found;
	if (found != 0 && found_qid != 0)
		op->h.queue_id = found_qid;
	op->after_find(op);
}

/* Looks for the build of op->h (its trigger, else its queue item), then
 * calls @after with op->h.build set, 0 when there is none. */
void
pgate_ci_jenkins__op_find_build(JkOp *op, JkHandler after)
{
	g_autofree char *job = pgate_ci_jenkins__job_url_path(op->h.job);
	g_autofree char *rel = g_strdup_printf(
		"%sapi/json?tree=builds%%5Bnumber,queueId,actions%%5B"
		"parameters%%5Bname,value%%5D%%5D%%5D%%7B0,%d%%7D", job,
		JK_FIND_BUILDS);

	op->h.build = 0;
	op->after_find = after;
	pgate_ci_jenkins__op_get(op, rel, JK_JSON_MAX, on_find_build);
}

/* -- submit -- */

/* After a 303: whether the item Jenkins merged the trigger into is this
 * very trigger, queued by an earlier attempt whose answer was lost (then
 * nothing was merged with anyone), or another submission's (the job does
 * not declare the trigger parameter, so every trigger looks the same). */
static void
on_merged_item(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	JK_AUTO_JSON o = NULL;
	const char *trig = NULL;
	gboolean own;

	if (op->req.status == 200)
		o = json_loadb((const char *)op->req.reply->data,
			       op->req.reply->len, 0, NULL);
	if (json_is_object(o))
		trig = actions_param(o, cfg->param[JK_P_TRIGGER]);
	if (trig != NULL)
		own = g_strcmp0(trig, op->h.trigger) == 0;
	else if (json_is_object(o))
		own = FALSE;    /* the item has no trigger parameter */
	else
		own = op->resent;   /* the item could not be read */
	op->h.merged = !own;
	if (own)
		g_info("jenkins: job=%s trigger %s was queued already, as "
		       "item %" G_GUINT64_FORMAT ": the repeat joined it (303)",
		       cfg->job, op->h.trigger, op->h.queue_id);
	else
		g_message("jenkins: job=%s trigger merged into queue item %"
			  G_GUINT64_FORMAT " (303): does the job declare the "
			  "parameter %s?", cfg->job, op->h.queue_id,
			  cfg->param[JK_P_TRIGGER]);
	op->handle_out = pgate_ci_jenkins__handle_encode(&op->h);
	pgate_ci_jenkins__op_finish(op);
}

static void
on_trigger(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	long st = op->req.status;
	g_autofree char *what = g_strdup_printf("trigger job %s", cfg->job);
	g_autofree char *missing = g_strdup_printf("job %s not found (or "
						   "user %s may not see it)",
						   cfg->job, cfg->user);

	if (st == 201 || st == 303) {
		guint64 id = pgate_ci_jenkins__location_queue_id(
			op->req.location);

		if (id == 0) {
			pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
				"%s: HTTP %ld without a queue item in Location",
				what, st);
			return;
		}
		op->h.queue_id = id;
		op->h.merged = FALSE;
		if (st == 303) {
			/* merged into a queued item: whose? */
			g_autofree char *rel = g_strdup_printf(
				"queue/item/%" G_GUINT64_FORMAT "/api/json?"
				"tree=actions%%5Bparameters%%5Bname,value%%5D"
				"%%5D", id);

			op->resent |= op->repeat || op->attempt > 0;
			pgate_ci_jenkins__op_get(op, rel, JK_JSON_MAX,
				on_merged_item);
			return;
		}
		g_info("jenkins: job=%s trigger %s queued as item %"
		       G_GUINT64_FORMAT, cfg->job, op->h.trigger, id);
		op->handle_out = pgate_ci_jenkins__handle_encode(&op->h);
		pgate_ci_jenkins__op_finish(op);
		return;
	}
	if (st == 302) {
		g_autofree char *loc = pgate_ci_jenkins__excerpt(
			op->req.location ? op->req.location : "",
			op->req.location ? strlen(op->req.location) : 0,
			JK_WHY_MAX);

		pgate_ci_jenkins__op_fail(op, PGATE_ERROR_FAILED,
			"%s: Jenkins refused to queue a build (302 to %s)",
			what, *loc ? loc : "nowhere");
		return;
	}
	pgate_ci_jenkins__op_http_error(op, what, missing);
}

/* POSTs the trigger kept in the operation. */
static void
op_trigger(JkOp *op)
{
	g_autofree char *rel = g_steal_pointer(&op->post_rel);

	pgate_ci_jenkins__op_post(op, rel, g_steal_pointer(&op->post_body),
		on_trigger);
}

static void
on_stale_cancelled(JkOp *op)
{
	/* whatever it says (204; 404 or 422: it left meanwhile), the trigger
	 * goes out now */
	op_trigger(op);
}

/* A repeat whose first attempt is still queued: Jenkins merges the repeat
 * into it when their parameters are equal.  They differ when the series
 * was applied again meanwhile (new commit ids, the ref moved on): that
 * item would build a commit its ref no longer holds, so it is cancelled
 * and the trigger queued anew. */
static void
on_queue_scan(JkOp *op)
{
	JkConfig *cfg = &op->jb->cfg;
	JK_AUTO_JSON o = NULL;
	guint64 stale = 0;
	json_t *it;
	size_t i;

	if (op->req.status == 200)
		o = json_loadb((const char *)op->req.reply->data,
			       op->req.reply->len, 0, NULL);
	/* (could not look: the trigger goes out anyway) */
	json_array_foreach(json_object_get(o, "items"), i, it) {
		const char *trig = actions_param(it, cfg->param[JK_P_TRIGGER]);
		const char *commit = actions_param(it, cfg->param[JK_P_COMMIT]);
		json_int_t id = json_integer_value(json_object_get(it, "id"));

		if (trig != NULL && g_str_equal(trig, op->h.trigger) &&
		    g_strcmp0(commit, op->commit) != 0 && id > 0 &&
		    id <= (json_int_t)1 << 53)
			stale = (guint64)id;
	}
	if (stale != 0) {
		g_autofree char *rel = g_strdup_printf(
			"queue/cancelItem?id=%" G_GUINT64_FORMAT, stale);

		g_info("jenkins: job=%s trigger %s: queue item %"
		       G_GUINT64_FORMAT " waits for an older commit: cancelled",
		       cfg->job, op->h.trigger, stale);
		pgate_ci_jenkins__op_post(op, rel, NULL, on_stale_cancelled);
		return;
	}
	op_trigger(op);
}

static void
after_find_submit(JkOp *op)
{
	if (op->h.build == 0 && op->repeat && !op->queue_scanned) {
		op->queue_scanned = TRUE;
		pgate_ci_jenkins__op_get(op,
			"queue/api/json?tree=items%5Bid,actions%5B"
			"parameters%5Bname,value%5D%5D%5D", JK_JSON_MAX,
			on_queue_scan);
		return;
	}
	if (op->h.build == 0) {
		op_trigger(op);
		return;
	}
	g_info("jenkins: job=%s trigger %s was queued already: it is build #%"
	       G_GUINT64_FORMAT, op->h.job, op->h.trigger, op->h.build);
	op->handle_out = pgate_ci_jenkins__handle_encode(&op->h);
	pgate_ci_jenkins__op_finish(op);
}

static gboolean
form_add(GString *form, const char *name, const char *value, GError **error)
{
	char *esc;

	if (name == NULL)
		return TRUE;
	if (value == NULL)
		value = "";
	if (strlen(value) > JK_VALUE_MAX) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_TOO_LARGE,
			    "Jenkins: the value of %s is longer than %d bytes",
			    name, JK_VALUE_MAX);
		return FALSE;
	}
	esc = curl_easy_escape(NULL, value, (int)strlen(value));
	if (form->len)
		g_string_append_c(form, '&');
	g_string_append_printf(form, "%s=%s", name, esc);
	curl_free(esc);
	return TRUE;
}

static char *
jk_submit(PgateCiBackend *b, const PgateCiJob *job, GError **error)
{
	JkBackend *jb = (JkBackend *)b;
	JkConfig *cfg = &jb->cfg;
	g_autoptr(GString) form = g_string_new(NULL);
	g_autofree char *version = NULL;
	g_autofree char *rel = NULL;
	const char *commit;
	JkOp op = { 0 };
	JkOp *ops[1] = { &op };
	char *out;

	g_return_val_if_fail(job != NULL, NULL);
	if (job->commits == NULL || job->commits->len == 0 ||
	    job->repo_url == NULL || job->trigger_id == NULL ||
	    *job->trigger_id == '\0') {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "Jenkins: a job needs a repository URL, commits "
			    "and a trigger id");
		return NULL;
	}
	if (strlen(job->trigger_id) > JK_TRIGGER_MAX ||
	    !g_utf8_validate(job->trigger_id, -1, NULL)) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "Jenkins: a trigger id is UTF-8 of at most %d "
			    "bytes", JK_TRIGGER_MAX);
		return NULL;
	}
	commit = g_ptr_array_index(job->commits, job->commits->len - 1);
	version = g_strdup_printf("%u", job->version);
	if (!form_add(form, cfg->param[JK_P_REPO_URL], job->repo_url, error) ||
	    !form_add(form, cfg->param[JK_P_REF], job->ref, error) ||
	    !form_add(form, cfg->param[JK_P_COMMIT], commit, error) ||
	    !form_add(form, cfg->param[JK_P_BASE_COMMIT], job->base_commit,
		      error) ||
	    !form_add(form, cfg->param[JK_P_SERIES], job->series_id, error) ||
	    !form_add(form, cfg->param[JK_P_VERSION], version, error) ||
	    !form_add(form, cfg->param[JK_P_BRANCH], job->branch, error) ||
	    !form_add(form, cfg->param[JK_P_MSGID], job->msgid, error) ||
	    !form_add(form, cfg->param[JK_P_TRIGGER], job->trigger_id, error))
		return NULL;

	op.jb = jb;
	op.kind = OP_SUBMIT;
	op.h.job = g_strdup(cfg->job);
	op.h.since = g_get_real_time() / G_USEC_PER_SEC;
	op.h.trigger = g_strdup(job->trigger_id);
	op.repeat = job->repeat;
	op.resent = job->repeat;
	op.commit = g_strdup(commit);
	if (cfg->delay >= 0)
		rel = g_strdup_printf("%sbuildWithParameters?delay=%"
				      G_GINT64_FORMAT "sec", cfg->job_url_path,
				      cfg->delay);
	else
		rel = g_strdup_printf("%sbuildWithParameters",
				      cfg->job_url_path);
	op.post_rel = g_steal_pointer(&rel);
	op.post_body = g_string_free(g_steal_pointer(&form), FALSE);
	if (op.repeat)
		/* did the first time start a build? (if it is still
		 * queued, the trigger below joins it: 303) */
		pgate_ci_jenkins__op_find_build(&op, after_find_submit);
	else
		op_trigger(&op);
	pgate_ci_jenkins__run(jb, ops, 1);

	out = g_steal_pointer(&op.handle_out);
	if (out == NULL)
		g_propagate_error(error, g_steal_pointer(&op.error));
	pgate_ci_jenkins__op_clear(&op);
	return out;
}

/* -- the backend -- */

static void
jk_free(PgateCiBackend *b)
{
	JkBackend *jb = (JkBackend *)b;

	if (jb->multi)
		curl_multi_cleanup(jb->multi);
	if (jb->share)
		curl_share_cleanup(jb->share);
	if (jb->crumb_header) {
		explicit_bzero(jb->crumb_header, strlen(jb->crumb_header));
		g_free(jb->crumb_header);
	}
	pgate_ci_jenkins__config_clear(&jb->cfg);
	g_free(jb);
}

static const PgateCiBackendClass jenkins_class = {
	.name = "jenkins",
	.submit = jk_submit,
	.poll = pgate_ci_jenkins__poll,
	.poll_many = pgate_ci_jenkins__poll_many,
	.cancel = pgate_ci_jenkins__cancel,
	.free = jk_free,
};

PgateCiBackend *
pgate_ci_jenkins_create(GKeyFile *kf, const char *group, const char *state_dir,
			GError **error)
{
	JkBackend *jb = g_new0(JkBackend, 1);

	jb->parent.klass = &jenkins_class;
	pgate_curl_init();
	if (!pgate_ci_jenkins__config_load(&jb->cfg, kf, group, error)) {
		jk_free(&jb->parent);
		return NULL;
	}
	jb->multi = curl_multi_init();
	jb->share = curl_share_init();
	if (jb->multi == NULL || jb->share == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
			    "Jenkins: cannot set up libcurl");
		jk_free(&jb->parent);
		return NULL;
	}
	if (g_str_has_prefix(jb->cfg.base, "http://") &&
	    !g_str_has_prefix(jb->cfg.base, "http://127.") &&
	    !g_str_has_prefix(jb->cfg.base, "http://localhost") &&
	    !g_str_has_prefix(jb->cfg.base, "http://[::1]"))
		g_warning("jenkins: [%s] url is plain http: the %s for user "
			  "%s crosses the network unencrypted", group,
			  jb->cfg.auth == JK_AUTH_TOKEN ? "API token"
							: "password",
			  jb->cfg.user);
	curl_share_setopt(jb->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
	curl_multi_setopt(jb->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)jb->cfg.max_connections);
	return &jb->parent;
}
