/* email.h - opt-in result replies to patch submitters.
 *
 * Part of report.h (include that, not this file).  This part composes a
 * plain-text reply to a patch series with GMime and hands it to an SMTP
 * server (libcurl: smtp://, smtps://, STARTTLS) or to a local sendmail.
 * It decides nothing about what was already sent: the caller (the store's
 * outbox) keeps the composed message until pgate_email_send() returns
 * %TRUE, and keeps the per-recipient history that the rate limit reads.
 *
 * The intended sequence, for one finished series:
 *
 *   cfg = pgate_email_config_new(kf, "report.email", &err);
 *   if (pgate_email_is_automated(cfg, raw_cover, &why))    -> never answer
 *   rcpts = pgate_email_recipients(cfg, submitter, failed, list, &skip);
 *   if (rcpts->len == 0)                                   -> skip (why)
 *   if (!pgate_email_rate_allows(cfg, history, n, now))    -> skip
 *   msg = pgate_email_compose(cfg, report, &err);          -> outbox entry
 *   pgate_email_send(cfg, msg, NULL, rcpts, &err);         -> then remove
 *
 * Exactly once: the Message-ID of a composed reply is a hash of
 * report->idempotency_key and the domain of the From address, so the same
 * report always gets the same Message-ID, however often it is composed.
 * A crash between a successful send and the removal of the outbox entry
 * makes the caller send the same message (same Message-ID) again; mail
 * readers, list archives and Patchwork all collapse duplicates by
 * Message-ID, so the result is at most one visible reply.
 *
 * Errors are in domain PGATE_REPORT_ERROR.  PGATE_ERROR_IO means "try
 * again later" (SMTP 4xx, connection refused, timeout, sendmail exit 75);
 * PGATE_ERROR_FAILED is a permanent refusal (SMTP 5xx, with the server's
 * reply in the message); PGATE_ERROR_CONFIG a configuration that cannot
 * work; PGATE_ERROR_INVALID a bad argument (a malformed address).  No
 * error message ever contains the SMTP password.  Nothing here prints.
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"

G_BEGIN_DECLS

/* The header every reply carries; its presence on a mail means that mail
 * came from a patchgate and must never be answered. */
#define PGATE_EMAIL_MARKER_HEADER "X-Patchgate"

/* ---- configuration ---------------------------------------------------- */

typedef struct PgateEmailConfig PgateEmailConfig;

/* The layout of a reply: `[email] format` (docs/report-email.md,
 * "Formats"). */
typedef enum {
	PGATE_EMAIL_FORMAT_DEFAULT = 0,  /* the note to the submitter */
	PGATE_EMAIL_FORMAT_DPDK,         /* a report to DPDK's test-report
					  * list (dpdk-ci's
					  * send-patch-report.sh) */
	PGATE_EMAIL_FORMAT_0DAY,         /* the kernel test robot's failure
					  * mail */
} PgateEmailFormat;

/**
 * pgate_email_config_new:
 * @kf: the configuration file
 * @group: the group to read, e.g. "report.email"; a missing group is a
 *     disabled configuration
 *
 * Reads and validates the email settings (every key is in
 * docs/report-email.md).  Email is off unless `enabled = true`; a
 * disabled configuration is not validated further and makes
 * pgate_email_recipients() return no one.  When enabled, exactly one
 * transport (`smtp_url` or `sendmail`) and a `from_address` are needed.
 * The SMTP password is read here, from `password_file` (which must not be
 * readable by everyone) or from the environment variable named by
 * `password_env`; a `password` key is refused.
 *
 * Returns: (transfer full) (nullable): the configuration, or %NULL with
 * PGATE_ERROR_CONFIG.
 */
PgateEmailConfig *pgate_email_config_new(GKeyFile *kf, const char *group,
					 GError **error);
/* Wipes the password from memory and frees @cfg. */
void pgate_email_config_free(PgateEmailConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateEmailConfig, pgate_email_config_free)

/* Returns: %TRUE when @cfg (nullable) is enabled. */
gboolean pgate_email_config_enabled(const PgateEmailConfig *cfg);
/* Returns: the format of @cfg's replies (DEFAULT when disabled). */
PgateEmailFormat pgate_email_config_format(const PgateEmailConfig *cfg);
/* Returns: whether replies wait for the day's digest (`digest`). */
gboolean pgate_email_config_digest(const PgateEmailConfig *cfg);
/* Returns: `max_per_day`, the replies per list a day sent at once
 * before the rest wait for the digest; 0: no limit (or disabled). */
guint pgate_email_config_max_per_day(const PgateEmailConfig *cfg);
/* Returns: (transfer none) (nullable): the From address, lowercased
 * ("ci@example.org"); %NULL when disabled. */
const char *pgate_email_config_from(const PgateEmailConfig *cfg);
/* Returns: (transfer none) (nullable): the SMTP envelope sender (MAIL
 * FROM, sendmail -f): `envelope_from`, else the From address; %NULL when
 * disabled. */
const char *pgate_email_config_envelope_from(const PgateEmailConfig *cfg);

/* ---- who gets a reply ------------------------------------------------- */

/**
 * pgate_email_is_automated:
 * @cfg: (nullable): the configuration, for our own From address and
 *     Message-ID domain
 * @raw_original: the mail that would be answered, as received
 * @out_why: (out) (optional) (transfer none): a static string naming the
 *     header that decided, e.g. "Auto-Submitted: auto-generated"
 *
 * Tells whether @raw_original is itself automated, so that answering it
 * could start a mail loop: Auto-Submitted other than "no" (RFC 3834);
 * Precedence junk, or bulk/list on a mail that did not come through a
 * list (lists add those to everything they relay, so on list mail they
 * say nothing about the sender); X-Patchwork-Hint: ignore (what CI bots
 * put on their reports); X-Auto-Response-Suppress All or AutoReply; our
 * own marker header or Message-ID or From address; a bounce (empty
 * Return-Path, From MAILER-DAEMON or postmaster, multipart/report).
 * Headers that cannot be found within 256 KiB, or cannot be parsed,
 * count as automated: unreadable mail is never answered.
 */
gboolean pgate_email_is_automated(const PgateEmailConfig *cfg,
				  GBytes *raw_original, const char **out_why);

typedef enum {
	PGATE_EMAIL_SEND = 0,          /* someone gets a reply */
	PGATE_EMAIL_SKIP_DISABLED,     /* email is off for this project */
	PGATE_EMAIL_SKIP_NOT_OPTED_IN, /* to = submitter-optin, not listed */
	PGATE_EMAIL_SKIP_SUCCESS,      /* when = failure and nothing failed */
	PGATE_EMAIL_SKIP_BAD_ADDRESS,  /* the submitter's address is unusable */
} PgateEmailDecision;

/* Returns: a static description, e.g. "submitter has not opted in". */
const char *pgate_email_decision_to_string(PgateEmailDecision d);

/**
 * pgate_email_recipients:
 * @submitter_email: the patch author's address (From of the cover)
 * @failed: whether the report is a failure (pgate_email_report_failed())
 * @list_address: (nullable): the list the series was posted to
 * @out_decision: (out) (optional): why the array is empty, or
 *     %PGATE_EMAIL_SEND
 *
 * Applies the recipient policy: `enabled`, `to` with the `optin` list
 * (addresses or globs such as "*@example.org", compared case-
 * insensitively), `when`, and `cc_list`.  The list only ever gets a copy
 * of a reply to the submitter.  Addresses are lowercased and checked to be
 * plain ASCII local@domain that cannot smuggle SMTP or argv syntax.
 *
 * Returns: (transfer full) (element-type utf8): the envelope recipients,
 * submitter first, then the list when `cc_list` is set; empty when no
 * reply is to be sent.  Never %NULL.
 */
GPtrArray *pgate_email_recipients(const PgateEmailConfig *cfg,
				  const char *submitter_email, gboolean failed,
				  const char *list_address,
				  PgateEmailDecision *out_decision);

/**
 * pgate_email_rate_allows:
 * @sent_times: (array length=n) (nullable): when replies were sent to one
 *     recipient, in seconds since the epoch, in any order
 * @now: the current time, in seconds since the epoch
 *
 * A pure function over the history the caller keeps: %TRUE when fewer
 * than `rate_max` of @sent_times fall in the last `rate_period` seconds
 * (times in the future count as recent).  `rate_max = 0` means no limit.
 */
gboolean pgate_email_rate_allows(const PgateEmailConfig *cfg,
				 const gint64 *sent_times, guint n, gint64 now);

/* ---- what a reply says ------------------------------------------------ */

typedef enum {
	PGATE_EMAIL_VERDICT_PASS = 0,
	PGATE_EMAIL_VERDICT_WARNING,  /* passed with new warnings */
	PGATE_EMAIL_VERDICT_FAIL,     /* the series broke something */
	PGATE_EMAIL_VERDICT_ERROR,    /* the job could not run: not the
				       * series' fault */
	PGATE_EMAIL_VERDICT_SKIPPED,
} PgateEmailVerdict;

/* Returns: "PASS", "WARNING", "FAIL", "ERROR" or "SKIPPED". */
const char *pgate_email_verdict_to_string(PgateEmailVerdict v);

/* One CI job's result.  Every string is owned by the struct and may be
 * anything (it comes from mail and from build logs): composition bounds
 * and cleans it. */
typedef struct {
	char *name;           /* the job, e.g. "build-x86_64" */
	PgateEmailVerdict verdict;
	guint patch;          /* per-patch runs: the patch number (1-based);
			       * 0: the job tested the whole series */
	char *reason;         /* (nullable) one line: "exit status 2" */
	char *failed_step;    /* (nullable) e.g. "make" */
	char *log_excerpt;    /* (nullable) the end of the failing step's
			       * log; only its last `log_lines` lines and
			       * `log_bytes` bytes are shown */
	char *url;            /* (nullable) the job's page, http(s) only */
} PgateEmailJob;

PgateEmailJob *pgate_email_job_new(const char *name, PgateEmailVerdict v);
void pgate_email_job_free(PgateEmailJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateEmailJob, pgate_email_job_free)

/* A patch that did not apply. */
typedef struct {
	guint patch;          /* 1-based */
	char *file;           /* (nullable) the file that failed */
	char *reason;         /* (nullable) one line */
} PgateEmailApplyFailure;

PgateEmailApplyFailure *pgate_email_apply_failure_new(guint patch,
						      const char *file,
						      const char *reason);
void pgate_email_apply_failure_free(PgateEmailApplyFailure *f);

/* A link at the end of the reply: "patchwork" https://... */
typedef struct {
	char *label;
	char *url;            /* http(s) only; others are left out */
} PgateEmailLink;

PgateEmailLink *pgate_email_link_new(const char *label, const char *url);
void pgate_email_link_free(PgateEmailLink *l);

/* An earlier version this series supersedes. */
typedef struct {
	guint32 version;
	char *series_id;
} PgateEmailPrevious;

PgateEmailPrevious *pgate_email_previous_new(guint32 version,
					     const char *series_id);
void pgate_email_previous_free(PgateEmailPrevious *p);

/* Everything a reply says.  Strings are owned by the struct; the arrays
 * are made by pgate_email_report_new() with their free functions. */
typedef struct {
	char *idempotency_key;    /* unique per report, stable across
				   * retries (e.g. "SERIES/v3/final") */
	/* the mail answered: the cover letter, or the only patch */
	char *subject;            /* decoded, as sent ("[PATCH v3 0/4] x") */
	char *msgid;              /* its Message-ID, with or without <> */
	GPtrArray *references;    /* (element-type utf8) its References,
				   * oldest first; kept bounded */
	char *submitter_name;     /* (nullable) */
	char *submitter_email;
	char *list_address;       /* (nullable) Cc'd when cc_list is set */
	char *list_id;            /* (nullable) the List-Id: its archive is
				   * the links' default ([report]
				   * archive_url unset) */
	/* the series */
	char *series_name;        /* (nullable) */
	char *series_id;          /* (nullable) "s0123456789ab" */
	guint32 version;          /* 0: unknown */
	guint patch_count;        /* 0: unknown */
	GPtrArray *previous;      /* (element-type PgateEmailPrevious):
				   * earlier versions, newest first */
	/* what was tested */
	char *tree;               /* (nullable) e.g. "net-next" */
	char *base_branch;        /* (nullable) */
	char *base_commit;        /* (nullable) hex */
	char *head_commit;        /* (nullable) hex, the last patch applied */
	GPtrArray *jobs;          /* (element-type PgateEmailJob) */
	GPtrArray *apply_failures;/* (element-type PgateEmailApplyFailure) */
	GPtrArray *links;         /* (element-type PgateEmailLink) */
	gint64 date;              /* the Date header, seconds since the epoch;
				   * 0: now */
	char *compared;           /* (nullable) the results against the
				   * version before: "v3: build fixed since
				   * v2" (docs/report-site.md) */
	/* format = dpdk: the answered mail is a patch */
	gint64 patchwork_id;      /* its Patchwork id; 0: unknown ("pw?") */
	char *patch_url;          /* (nullable) its Patchwork page */
} PgateEmailReport;

PgateEmailReport *pgate_email_report_new(void);
void pgate_email_report_free(PgateEmailReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateEmailReport, pgate_email_report_free)

/**
 * pgate_email_report_failed:
 * Returns: %TRUE when a patch did not apply or a job's verdict is FAIL.
 * ERROR (the job could not run) and WARNING are not failures of the
 * series, so `when = failure` does not mail them.
 */
gboolean pgate_email_report_failed(const PgateEmailReport *r);

/**
 * pgate_email_report_recipients:
 *
 * pgate_email_recipients() for @r in @cfg's format.  format = 0day mails
 * failures only (as the kernel test robot does), whatever `when` says.
 * format = dpdk sends to `report_to`, the test-report list, and copies
 * the submitter (when opted in) unless the result is SUCCESS, as DPDK's
 * send-patch-report.sh does; `cc_list` is not used.
 *
 * Returns: (transfer full) (element-type utf8): the envelope recipients;
 * empty when no reply is to be sent.  Never %NULL.
 */
GPtrArray *pgate_email_report_recipients(const PgateEmailConfig *cfg,
					 const PgateEmailReport *r,
					 PgateEmailDecision *out_decision);

/**
 * pgate_email_message_id:
 * @idempotency_key: non-empty
 * @from_address: the From address; its domain ends the Message-ID
 *
 * Returns: (transfer full): "patchgate.<32 hex>@<domain>" without angle
 * brackets, the hex a SHA-256 prefix of the key: the same inputs always
 * give the same Message-ID.
 */
char *pgate_email_message_id(const char *idempotency_key,
			     const char *from_address);

/**
 * pgate_email_compose:
 *
 * Composes the reply to @report's mail: From (from_name, from_address),
 * To (the submitter), Cc (the list, when cc_list and a list address),
 * Date, "Subject: Re: <subject>" (never "Re: Re:"), Message-ID (see
 * pgate_email_message_id()), In-Reply-To the answered mail and References
 * its References (at most the first and the last 10) plus itself,
 * Auto-Submitted: auto-replied, X-Auto-Response-Suppress: All,
 * X-Patchwork-Hint: ignore, X-Patchgate: <version>, and a UTF-8
 * text/plain body (quoted-printable when not 7-bit clean) described in
 * docs/report-email.md.  Names and the subject are RFC 2047-encoded when
 * needed.
 *
 * The body is built so that nothing in it is mistaken for part of the
 * thread by Patchwork, b4 or git am: text from the report never starts a
 * line; log lines are quoted as "    | ..."; no line looks like a trailer
 * ("Signed-off-by: ...") or a diff ("---", "diff --git", "+++ ", "@@").
 *
 * That is `format = default`.  `format = dpdk` writes dpdk-ci's
 * send-patch-report.sh layout instead (Subject "|STATUS| pwID SUBJECT",
 * To report_to, Cc the submitter unless SUCCESS, In-Reply-To and
 * References the answered patch only, a body starting "Test-Label:");
 * `format = 0day` the kernel test robot's failure mail; every format
 * carries the same loop-prevention headers and links the archive copy of
 * the answered mail ([report] archive_url).  docs/report-email.md,
 * "Formats".
 *
 * The message uses LF line ends; pgate_email_send() converts to CRLF for
 * SMTP.  Returns: (transfer full) (nullable): the message, or %NULL with
 * PGATE_ERROR_INVALID (no idempotency key, message-id or submitter
 * address) or PGATE_ERROR_CONFIG (disabled configuration).
 */
GBytes *pgate_email_compose(const PgateEmailConfig *cfg,
			    const PgateEmailReport *report, GError **error);

/* ---- sending ---------------------------------------------------------- */

/**
 * pgate_email_send:
 * @message: a message as pgate_email_compose() makes it (LF or CRLF line
 *     ends), at most 16 MiB
 * @envelope_from: (nullable): the SMTP sender; %NULL for
 *     pgate_email_config_envelope_from()
 * @rcpts: (element-type utf8): the envelope recipients, e.g. from
 *     pgate_email_recipients()
 *
 * Hands @message to the configured transport and returns once it was
 * accepted for delivery to every recipient (one refused recipient fails
 * the whole message and nothing is sent).
 *
 * SMTP: one connection per call, `starttls` as configured, AUTH when a
 * user is set.  A reply 4xx, a refused or dropped connection or a timeout
 * is PGATE_ERROR_IO; a 5xx reply is PGATE_ERROR_FAILED and the message
 * quotes the server's reply; TLS or URL problems are PGATE_ERROR_CONFIG.
 *
 * sendmail: runs `SENDMAIL -i -f FROM -- RCPT...` (no shell) with the
 * message on standard input.  Exit 0 is success, 75 (EX_TEMPFAIL), a
 * signal or running past `timeout` is PGATE_ERROR_IO, any other status
 * PGATE_ERROR_FAILED with the start of its standard error; a sendmail
 * that cannot be run is PGATE_ERROR_CONFIG.
 */
gboolean pgate_email_send(const PgateEmailConfig *cfg, GBytes *message,
			  const char *envelope_from, GPtrArray *rcpts,
			  GError **error);

/* digest.c (docs/report-email.md, "Digest and noise budget") */

/* Returns: (transfer full): the digest's line for @r, UTF-8 without
 * controls: "SUBJECT: SUMMARY" (at most 300 characters). */
char *pgate_email_digest_line(const PgateEmailReport *r);
/* Composes one digest mail to @rcpt of @lines (element-type utf8: lines
 * of pgate_email_digest_line()), held on @day ("YYYY-MM-DD"); its
 * Message-ID comes from @idempotency_key as a reply's does.
 * Returns: (transfer full) (nullable): the message. */
GBytes *pgate_email_compose_digest(const PgateEmailConfig *cfg,
				   const char *rcpt, const char *day,
				   GPtrArray *lines, const char *idempotency_key,
				   gint64 date, GError **error);

/**
 * pgate_email_check_online:
 * @group: the group @cfg was read from, for the messages
 * @password_key: (nullable): the key the password came from
 *   ("password_file" or "password_env")
 *
 * `patchgate config check --online`: with an SMTP transport, connects as
 * pgate_email_send() would (TLS as configured), logs in when a user is
 * configured, says NOOP and QUIT: no MAIL FROM, nothing is sent.  A
 * disabled configuration, or sendmail, is not checked.  The failure is
 * one line "[GROUP] KEY: ..." naming smtp_url, or the password's key when
 * the login was refused, with pgate_email_send()'s codes (PGATE_ERROR_IO
 * transient, PGATE_ERROR_CONFIG the login or TLS).
 */
gboolean pgate_email_check_online(const PgateEmailConfig *cfg,
				  const char *group, const char *password_key,
				  GError **error);

G_END_DECLS
