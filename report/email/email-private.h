/* email-private.h - what the email part's files share. */
#pragma once

#include "report/report.h"

#include <gmime/gmime.h>

#include "common/autocleanups.h"

/* Hard bounds, whatever the configuration says. */
#define PGATE_EMAIL_MAX_ADDRESS 254        /* RFC 5321 path limit */
#define PGATE_EMAIL_MAX_MESSAGE (16u << 20)
#define PGATE_EMAIL_MAX_LOG_LINES 200
#define PGATE_EMAIL_MAX_LOG_BYTES 16384
#define PGATE_EMAIL_MAX_PASSWORD 1024

typedef enum {
	PGATE_EMAIL_TO_OPTIN = 0,
	PGATE_EMAIL_TO_EVERYONE,
	PGATE_EMAIL_TO_MAINTAINERS,   /* the `maintainers` addresses only */
} PgateEmailTo;

typedef enum {
	PGATE_EMAIL_WHEN_FAILURE = 0,
	PGATE_EMAIL_WHEN_ALWAYS,
} PgateEmailWhen;

typedef enum {
	PGATE_EMAIL_TRANSPORT_SMTP = 0,
	PGATE_EMAIL_TRANSPORT_SENDMAIL,
} PgateEmailTransport;

typedef enum {
	PGATE_EMAIL_TLS_REQUIRED = 0,  /* STARTTLS or fail */
	PGATE_EMAIL_TLS_OPTIONAL,      /* STARTTLS when offered */
	PGATE_EMAIL_TLS_NONE,          /* never (a local relay) */
} PgateEmailTls;

struct PgateEmailConfig {
	gboolean enabled;
	PgateEmailTo to;
	GPtrArray *optin;           /* (element-type utf8) lowercased globs */
	PgateEmailWhen when;
	gboolean cc_list;
	char *from_address;
	char *from_name;
	char *envelope_from;
	char *contact;              /* (nullable) shown in the footer */

	PgateEmailTransport transport;
	char *smtp_url;             /* normalised, with the EHLO path */
	gboolean smtps;
	PgateEmailTls tls;
	char *ca_file;              /* (nullable) */
	char *user;                 /* (nullable) */
	char *password;             /* (nullable) wiped on free */
	char *sendmail;

	guint rate_max;             /* 0: no limit */
	gint64 rate_period;         /* seconds */
	guint connect_timeout;      /* seconds */
	guint timeout;              /* seconds */
	guint log_lines;
	guint log_bytes;

	/* the layout of a reply (docs/report-email.md, "Formats") */
	PgateEmailFormat format;
	char *report_to;            /* (nullable) dpdk: the test-report list */
	char *dpdk_label;           /* dpdk: Test-Label, a slug */
	char *archive_url;          /* [report] archive_url, with {msgid} */

	/* reply policy (docs/report-email.md, "Digest and noise budget") */
	GPtrArray *maintainers;     /* (element-type utf8) lowercased */
	gboolean digest;            /* replies wait for the day's digest */
	guint max_per_day;          /* per list a day; 0: no limit */
};

/* config.c */
gboolean pgate_email__address_ok(const char *addr);
/* dpdk: whether the submitter is copied (not a SUCCESS, opted in). */
gboolean pgate_email__dpdk_cc_submitter(const PgateEmailConfig *cfg,
					const PgateEmailReport *r);
char *pgate_email__address_domain(const char *addr);

/* compose.c */
void pgate_email__init(void);
/* dpdk: "SUCCESS", "WARNING" or "FAILURE" (static). */
const char *pgate_email__dpdk_status(const PgateEmailReport *r);
/* compose.c: @body (redacted of secrets) as @msg's text part, and @msg
 * written out, bounded; @what names the mail in errors. */
GBytes *pgate_email__write(GMimeMessage *msg, const char *body,
			   const char *what, GError **error);
/* (transfer full) (nullable): @cfg's archive_url (unset: the known
 * archive of list @list_id) with @msgid (no <>) put in, percent-encoded
 * as the site does it (report/report.c); %NULL without an archive. */
char *pgate_email__archive_link(const PgateEmailConfig *cfg,
				const char *list_id, const char *msgid);
