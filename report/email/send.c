/* send.c - handing a reply to SMTP (libcurl) or to a local sendmail.
 *
 * SMTP: one easy handle per message.  libcurl's error is translated once,
 * here, together with the last reply of the server, which the header
 * callback collects (for SMTP libcurl passes every server response line
 * through it).  The class of that reply decides: 4xx is transient, 5xx
 * permanent; without a reply the CURLcode decides (refused, timed out:
 * transient; TLS and URL problems: configuration).  CURLOPT_VERBOSE is
 * never set: libcurl would write the AUTH exchange to stderr.  What the
 * client sends is never collected, and every message is scrubbed of the
 * password before it leaves this file.
 *
 * sendmail: argv only, no shell: SENDMAIL -i -f FROM -- RCPT...  The
 * message goes to its standard input through a socketpair, written with
 * MSG_NOSIGNAL so that a sendmail that exits early cannot kill us with
 * SIGPIPE (a library must not change the process's signal handling).  Its
 * output is read, bounded, for the error message, and it is killed when
 * it runs past the timeout.
 */
#include "report/email/email-private.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

PGATE_DEFINE_AUTOPTR(CURL, curl_easy_cleanup)
#define PG_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

#define MAX_REPLY 512          /* bytes of a server reply kept */
#define MAX_CHILD_OUTPUT 2048  /* bytes of sendmail's output kept */

/* Replaces every occurrence of @secret in @s. */
static char *
scrub(const char *s, const char *secret)
{
	GString *out;
	const char *p, *hit;
	gsize n;

	if (secret == NULL || *secret == '\0')
		return g_strdup(s);
	n = strlen(secret);
	out = g_string_new(NULL);
	for (p = s; (hit = strstr(p, secret)) != NULL; p = hit + n) {
		g_string_append_len(out, p, hit - p);
		g_string_append(out, "********");
	}
	g_string_append(out, p);
	return g_string_free(out, FALSE);
}

static gboolean
set_error(GError **error, const PgateEmailConfig *cfg, PgateErrorCode code,
	  const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean
set_error(GError **error, const PgateEmailConfig *cfg, PgateErrorCode code,
	  const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;
	g_autofree char *clean = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	clean = scrub(msg, cfg->password);
	g_set_error_literal(error, PGATE_REPORT_ERROR, code, clean);
	return FALSE;
}

/* Printable ASCII of @s, one line, at most @max bytes. */
static char *
printable(const char *s, gsize len, gsize max)
{
	GString *out = g_string_new(NULL);

	for (gsize i = 0; i < len && out->len < max; i++) {
		guchar c = (guchar)s[i];

		if (c == '\n' || c == '\r') {
			if (out->len > 0 && out->str[out->len - 1] != ' ' &&
			    i + 1 < len)
				g_string_append(out, " / ");
		} else {
			g_string_append_c(out, c >= 0x20 && c < 0x7f ? (char)c
								     : '?');
		}
	}
	while (out->len > 0 && (out->str[out->len - 1] == ' ' ||
				out->str[out->len - 1] == '/'))
		g_string_truncate(out, out->len - 1);
	return g_string_free(out, FALSE);
}

/* ---- SMTP ------------------------------------------------------------- */

typedef struct {
	const guint8 *data;
	gsize len, pos;
	GPtrArray *replies; /* the last complete server replies */
	GString *partial;   /* lines of a multi-line reply so far */
} Transfer;

#define MAX_REPLIES 16

static size_t
read_cb(char *buf, size_t size, size_t nitems, void *payload)
{
	Transfer *t = payload;
	size_t n = MIN(size * nitems, t->len - t->pos);

	memcpy(buf, t->data + t->pos, n);
	t->pos += n;
	return n;
}

/* Server responses, one line per call: "250-..." continues a reply,
 * "250 ..." ends it. */
static size_t
header_cb(char *buf, size_t size, size_t nitems, void *payload)
{
	Transfer *t = payload;
	size_t n = size * nitems;
	g_autofree char *line = printable(buf, n, MAX_REPLY);

	if (t->partial->len < MAX_REPLY) {
		if (t->partial->len > 0)
			g_string_append(t->partial, " / ");
		g_string_append(t->partial, line);
	}
	if (n >= 4 && g_ascii_isdigit(buf[0]) && buf[3] != '-') {
		if (t->replies->len == MAX_REPLIES)
			g_ptr_array_remove_index(t->replies, 0);
		g_ptr_array_add(t->replies, g_strdup(t->partial->str));
		g_string_truncate(t->partial, 0);
	}
	return n;
}

/* The reply that failed the transfer: the newest with the code libcurl
 * reports (the last reply is usually "221 Bye", to QUIT). */
static const char *
failing_reply(const Transfer *t, long code)
{
	char want[8];

	g_snprintf(want, sizeof want, "%03ld", code);
	for (guint i = t->replies->len; code > 0 && i > 0; i--)
		if (g_str_has_prefix(t->replies->pdata[i - 1], want))
			return t->replies->pdata[i - 1];
	return NULL;
}

/* The message with CRLF line ends, ending in one. */
static GByteArray *
to_crlf(const guint8 *data, gsize len)
{
	GByteArray *out = g_byte_array_sized_new((guint)(len + len / 32 + 2));

	for (gsize i = 0; i < len; i++) {
		if (data[i] == '\n' && (i == 0 || data[i - 1] != '\r'))
			g_byte_array_append(out, (const guint8 *)"\r", 1);
		g_byte_array_append(out, &data[i], 1);
	}
	if (out->len < 2 || out->data[out->len - 1] != '\n')
		g_byte_array_append(out, (const guint8 *)"\r\n", 2);
	return out;
}

static PgateErrorCode
classify(CURLcode rc, long reply)
{
	if (reply >= 400 && reply < 500)
		return PGATE_ERROR_IO;
	if (reply >= 500 && reply < 600)
		return rc == CURLE_LOGIN_DENIED ? PGATE_ERROR_CONFIG
						: PGATE_ERROR_FAILED;
	return pgate_curl_error_code(rc);
}


/* The connection to [email] smtp_url as a send makes it: TLS as asked,
 * the CA, the login (the one place; `config check --online` makes the
 * same). */
static void
smtp_connection(CURL *curl, const PgateEmailConfig *cfg, char *errbuf)
{
	pgate_curl_setup(curl, "smtp,smtps", errbuf);
	curl_easy_setopt(curl, CURLOPT_URL, cfg->smtp_url);
	pgate_curl_timeouts(curl, (gint64)cfg->timeout * 1000,
			    (gint64)cfg->connect_timeout * 1000);
	curl_easy_setopt(curl, CURLOPT_USE_SSL,
			 cfg->smtps || cfg->tls == PGATE_EMAIL_TLS_REQUIRED
				 ? (long)CURLUSESSL_ALL
			 : cfg->tls == PGATE_EMAIL_TLS_OPTIONAL
				 ? (long)CURLUSESSL_TRY
				 : (long)CURLUSESSL_NONE);
	if (cfg->ca_file != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, cfg->ca_file);
	if (cfg->user != NULL) {
		curl_easy_setopt(curl, CURLOPT_USERNAME, cfg->user);
		curl_easy_setopt(curl, CURLOPT_PASSWORD, cfg->password);
	}
}

static gboolean
send_smtp(const PgateEmailConfig *cfg, const guint8 *data, gsize len,
	  const char *from, GPtrArray *rcpts, GError **error)
{
	PG_AUTO(CURL) curl = NULL;
	g_autoptr(GByteArray) wire = to_crlf(data, len);
	g_autofree char *mail_from = g_strdup_printf("<%s>", from);
	struct curl_slist *list = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	Transfer t = { wire->data, wire->len, 0,
		       g_ptr_array_new_with_free_func(g_free),
		       g_string_new(NULL) };
	const char *said;
	g_autofree char *what = NULL;
	long reply = 0;
	CURLcode rc;
	gboolean ok;

	pgate_curl_init();
	curl = curl_easy_init();
	if (curl == NULL) {
		ok = set_error(error, cfg, PGATE_ERROR_IO,
			       "SMTP: libcurl could not make a handle");
		goto out;
	}
	for (guint i = 0; i < rcpts->len; i++) {
		g_autofree char *r = g_strdup_printf("<%s>",
						     (char *)rcpts->pdata[i]);
		struct curl_slist *l = curl_slist_append(list, r);

		if (l == NULL) {
			ok = set_error(error, cfg, PGATE_ERROR_IO,
				       "SMTP: out of memory");
			goto out;
		}
		list = l;
	}

	smtp_connection(curl, cfg, errbuf);
	curl_easy_setopt(curl, CURLOPT_MAIL_FROM, mail_from);
	curl_easy_setopt(curl, CURLOPT_MAIL_RCPT, list);
	curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_cb);
	curl_easy_setopt(curl, CURLOPT_READDATA, &t);
	curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
			 (curl_off_t)wire->len);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);

	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply);
	if (rc == CURLE_OK) {
		ok = TRUE;
		goto out;
	}
	what = printable(errbuf, strlen(errbuf), 256);
	said = failing_reply(&t, reply);
	ok = set_error(error, cfg, classify(rc, reply), "SMTP %s: %s%s%s%s",
		       cfg->smtp_url, *what ? what : curl_easy_strerror(rc),
		       said ? " (the server said: " : "", said ? said : "",
		       said ? ")" : "");
out:
	curl_slist_free_all(list);
	g_ptr_array_unref(t.replies);
	g_string_free(t.partial, TRUE);
	return ok;
}

/* ---- sendmail --------------------------------------------------------- */

static gint64
now_ms(void)
{
	return g_get_monotonic_time() / 1000;
}

/* The message with LF line ends: a local sendmail wants local text. */
static GByteArray *
to_lf(const guint8 *data, gsize len)
{
	GByteArray *out = g_byte_array_sized_new((guint)len + 1);

	for (gsize i = 0; i < len; i++) {
		if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
			continue;
		g_byte_array_append(out, &data[i], 1);
	}
	if (out->len == 0 || out->data[out->len - 1] != '\n')
		g_byte_array_append(out, (const guint8 *)"\n", 1);
	return out;
}

static PgateErrorCode
spawn_error_code(const GError *e)
{
	if (e->domain != G_SPAWN_ERROR)
		return PGATE_ERROR_IO;
	switch (e->code) {
	case G_SPAWN_ERROR_NOENT:
	case G_SPAWN_ERROR_ACCES:
	case G_SPAWN_ERROR_PERM:
	case G_SPAWN_ERROR_NOEXEC:
	case G_SPAWN_ERROR_ISDIR:
	case G_SPAWN_ERROR_INVAL:
	case G_SPAWN_ERROR_LIBBAD:
	case G_SPAWN_ERROR_NAMETOOLONG:
		return PGATE_ERROR_CONFIG;
	default:
		return PGATE_ERROR_IO;
	}
}

/* Feeds @text to the child's stdin (@in_fd, closed and set to -1 when
 * done) and drains its output (@out_fd) into @output, until both are
 * done or time is up at @deadline: then returns %TRUE. */
static gboolean
feed_and_drain(int *in_fd, int out_fd, const GByteArray *text, gsize *written,
	       gboolean *write_failed, GString *output, gint64 deadline)
{
	gboolean out_open = TRUE;

	while (*in_fd >= 0 || out_open) {
		struct pollfd fds[2];
		nfds_t n = 0;
		gint64 left = deadline - now_ms();
		int in_idx = -1, out_idx = -1;

		if (left <= 0)
			return TRUE;
		if (*in_fd >= 0) {
			fds[n] = (struct pollfd){ *in_fd, POLLOUT, 0 };
			in_idx = (int)n++;
		}
		if (out_open) {
			fds[n] = (struct pollfd){ out_fd, POLLIN, 0 };
			out_idx = (int)n++;
		}
		if (poll(fds, n, (int)MIN(left, 1000)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (in_idx >= 0 && fds[in_idx].revents) {
			ssize_t w = send(*in_fd, text->data + *written,
					 text->len - *written,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0)
				*written += (gsize)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				*write_failed = TRUE;
			if (*written == text->len || *write_failed) {
				close(*in_fd);
				*in_fd = -1;
			}
		}
		if (out_idx >= 0 && fds[out_idx].revents) {
			char buf[4096];
			ssize_t r = read(out_fd, buf, sizeof buf);

			if (r > 0 && output->len < MAX_CHILD_OUTPUT)
				g_string_append_len(
					output, buf,
					MIN((gsize)r,
					    MAX_CHILD_OUTPUT - output->len));
			else if (r == 0 || (r < 0 && errno != EINTR &&
					    errno != EAGAIN))
				out_open = FALSE;
		}
	}
	return FALSE;
}

static gboolean
send_sendmail(const PgateEmailConfig *cfg, const guint8 *data, gsize len,
	      const char *from, GPtrArray *rcpts, GError **error)
{
	g_autoptr(GByteArray) text = to_lf(data, len);
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GString) output = g_string_new(NULL);
	g_autoptr(GError) spawn_err = NULL;
	int sv[2] = { -1, -1 }, outp[2] = { -1, -1 };
	gsize written = 0;
	gboolean write_failed = FALSE, timed_out = FALSE;
	gint64 deadline = now_ms() + (gint64)cfg->timeout * 1000;
	GPid pid = 0;
	int status = 0;

	g_ptr_array_add(argv, cfg->sendmail);
	g_ptr_array_add(argv, "-i");
	g_ptr_array_add(argv, "-f");
	g_ptr_array_add(argv, (gpointer)from);
	g_ptr_array_add(argv, "--");
	for (guint i = 0; i < rcpts->len; i++)
		g_ptr_array_add(argv, rcpts->pdata[i]);
	g_ptr_array_add(argv, NULL);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(outp, O_CLOEXEC) < 0) {
		int errsv = errno;

		if (sv[0] >= 0) {
			close(sv[0]);
			close(sv[1]);
		}
		return set_error(error, cfg, PGATE_ERROR_IO,
				 "sendmail: cannot make pipes: %s",
				 g_strerror(errsv));
	}
	if (!g_spawn_async_with_pipes_and_fds(
		    "/", (const char *const *)argv->pdata, NULL,
		    G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, sv[1], outp[1],
		    outp[1], NULL, NULL, 0, &pid, NULL, NULL, NULL,
		    &spawn_err)) {
		close(sv[0]);
		close(sv[1]);
		close(outp[0]);
		close(outp[1]);
		return set_error(error, cfg, spawn_error_code(spawn_err),
				 "sendmail %s: %s", cfg->sendmail,
				 spawn_err->message);
	}
	close(sv[1]);
	close(outp[1]);
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);

	/* feed stdin, drain the output, until both are done or time is up */
	timed_out = feed_and_drain(&sv[0], outp[0], text, &written,
				   &write_failed, output, deadline);
	if (sv[0] >= 0)
		close(sv[0]);
	close(outp[0]);

	/* reap it; kill it when it does not end in time */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = -1;
			break;
		}
		if (timed_out || now_ms() >= deadline) {
			timed_out = TRUE;
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		g_usleep(5000);
	}
	g_spawn_close_pid(pid);

	g_autofree char *said = printable(output->str, output->len, 300);
	if (timed_out)
		return set_error(error, cfg, PGATE_ERROR_IO,
				 "sendmail %s did not finish within %u s and "
				 "was killed", cfg->sendmail, cfg->timeout);
	if (status == -1 || WIFSIGNALED(status))
		return set_error(error, cfg, PGATE_ERROR_IO,
				 "sendmail %s was killed by signal %d",
				 cfg->sendmail,
				 status == -1 ? 0 : WTERMSIG(status));
	if (WEXITSTATUS(status) == 75)
		return set_error(error, cfg, PGATE_ERROR_IO,
				 "sendmail %s: temporary failure (exit 75)%s%s",
				 cfg->sendmail, *said ? ": " : "", said);
	if (WEXITSTATUS(status) != 0)
		return set_error(error, cfg, PGATE_ERROR_FAILED,
				 "sendmail %s failed (exit %d)%s%s",
				 cfg->sendmail, WEXITSTATUS(status),
				 *said ? ": " : "", said);
	if (write_failed || written < text->len)
		return set_error(error, cfg, PGATE_ERROR_IO,
				 "sendmail %s exited before reading the whole "
				 "message", cfg->sendmail);
	return TRUE;
}

/* ---- the entry point -------------------------------------------------- */

gboolean
pgate_email_send(const PgateEmailConfig *cfg, GBytes *message,
		 const char *envelope_from, GPtrArray *rcpts, GError **error)
{
	gsize len = 0;
	const guint8 *data;

	g_return_val_if_fail(cfg != NULL && message != NULL && rcpts != NULL,
			     FALSE);
	if (!cfg->enabled)
		return set_error(error, cfg, PGATE_ERROR_CONFIG,
				 "email reports are disabled");
	if (envelope_from == NULL)
		envelope_from = cfg->envelope_from;
	if (!pgate_email__address_ok(envelope_from))
		return set_error(error, cfg, PGATE_ERROR_INVALID,
				 "the envelope sender is not a plain address");
	if (rcpts->len == 0)
		return set_error(error, cfg, PGATE_ERROR_INVALID,
				 "no recipients");
	for (guint i = 0; i < rcpts->len; i++) {
		if (!pgate_email__address_ok(rcpts->pdata[i])) {
			g_autofree char *shown = printable(
				rcpts->pdata[i], strlen(rcpts->pdata[i]), 100);

			return set_error(error, cfg, PGATE_ERROR_INVALID,
					 "recipient \"%s\" is not a plain "
					 "address", shown);
		}
	}
	data = g_bytes_get_data(message, &len);
	if (len == 0 || len > PGATE_EMAIL_MAX_MESSAGE)
		return set_error(error, cfg, PGATE_ERROR_TOO_LARGE,
				 "the message is %zu bytes (1 to %u allowed)",
				 len, PGATE_EMAIL_MAX_MESSAGE);
	if (cfg->transport == PGATE_EMAIL_TRANSPORT_SENDMAIL)
		return send_sendmail(cfg, data, len, envelope_from, rcpts,
				     error);
	return send_smtp(cfg, data, len, envelope_from, rcpts, error);
}

/* ---- checking: `patchgate config check --online` ---------------------- */

/* The server's replies are read and dropped (a NOOP's). */
static size_t
discard_cb(char *buf, size_t size, size_t nitems, void *payload)
{
	(void)buf;
	(void)payload;
	return size * nitems;
}

gboolean
pgate_email_check_online(const PgateEmailConfig *cfg, const char *group,
			 const char *password_key, GError **error)
{
	PG_AUTO(CURL) curl = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	Transfer t = { NULL, 0, 0, g_ptr_array_new_with_free_func(g_free),
		       g_string_new(NULL) };
	g_autofree char *what = NULL;
	const char *said, *key;
	long reply = 0;
	CURLcode rc;
	gboolean ok = TRUE;

	if (!cfg->enabled || cfg->transport != PGATE_EMAIL_TRANSPORT_SMTP)
		goto out;	/* nothing to reach: sendmail is local */
	pgate_curl_init();
	curl = curl_easy_init();
	if (curl == NULL) {
		ok = set_error(error, cfg, PGATE_ERROR_IO,
			       "[%s] smtp_url: libcurl could not make a "
			       "handle", group);
		goto out;
	}
	/* as send_smtp() connects, then a NOOP in place of MAIL FROM:
	 * greeting, EHLO, STARTTLS and AUTH are the ones a send makes,
	 * and nothing can be sent */
	smtp_connection(curl, cfg, errbuf);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "NOOP");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_cb);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);

	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply);
	if (rc == CURLE_OK)
		goto out;
	what = printable(errbuf, strlen(errbuf), 256);
	said = failing_reply(&t, reply);
	/* the key to fix: the login's, or where the server is */
	key = rc == CURLE_LOGIN_DENIED
		? (password_key ? password_key : "user") : "smtp_url";
	ok = set_error(error, cfg, classify(rc, reply),
		       "[%s] %s: SMTP %s%s%s: %s%s%s%s", group, key,
		       cfg->smtp_url, cfg->user ? " as " : "",
		       cfg->user ? cfg->user : "",
		       *what ? what : curl_easy_strerror(rc),
		       said ? " (the server said: " : "", said ? said : "",
		       said ? ")" : "");
out:
	g_ptr_array_unref(t.replies);
	g_string_free(t.partial, TRUE);
	return ok;
}
