/* test-address.c - what the trust decision reads strictly (ingest/address.c):
 * header fields, one mailbox, Authentication-Results, a reply's own text.
 *
 * Tables: every form an attacker used against the lenient reading
 * (issue #25) must be refused, every form mail clients write must be
 * read as its address.
 */
#include "ingest/ingest.h"

#include <string.h>

/* ---- pgate_mail_address_strict ---------------------------------------- */

typedef struct {
	const char *value;
	const char *addr;       /* NULL: refused */
} AddrCase;

static const AddrCase addr_cases[] = {
	/* what clients write */
	{ "a@b.c", "a@b.c" },
	{ " a@b.c ", "a@b.c" },
	{ "Name <a@b.c>", "a@b.c" },
	{ "<a@b.c>", "a@b.c" },
	{ "\"Quoted, Name\" <a@b.c>", "a@b.c" },
	{ "\"Quoted \\\"Nick\\\" Name\" <a@b.c>", "a@b.c" },
	{ "a@b.c (comment)", "a@b.c" },
	{ "a@b.c (a (nested) comment)", "a@b.c" },
	{ "(before) a@b.c", "a@b.c" },
	{ "Name (comment) <a@b.c> (after)", "a@b.c" },
	{ "=?UTF-8?q?J=C3=B6rg=20M=C3=BCller?= <joerg@example.org>",
	  "joerg@example.org" },
	{ "=?utf-8?b?5p2O6Zu3?= <lilei@example.cn>", "lilei@example.cn" },
	{ "=?UTF-8?Q?Zo=C3=AB?=  =?UTF-8?Q?_=C3=98deg=C3=A5rd?= <zoe@x.org>",
	  "zoe@x.org" },
	{ "J. Random Hacker <jrh@hacker.example.net>", "jrh@hacker.example.net" },
	{ "Liam O'Connor <liam@x.org>", "liam@x.org" },
	{ "J\xc3\xb6rg M\xc3\xbcller <joerg@x.org>", "joerg@x.org" },
	{ "first.last+tag@Sub.Example.ORG", "first.last+tag@sub.example.org" },
	{ "Name\t<a@b.c>", "a@b.c" },
	{ "Name <A.B@B.C>", "A.B@b.c" },
	{ "a@localhost", "a@localhost" },
	/* issue #25: the forms GMime read as the inner address */
	{ "maintainer@demo.example.org@untrusted.example.net", NULL },
	{ "Maint <maintainer@demo.example.org@untrusted.example.net>", NULL },
	{ "alice@demo.example.org@untrusted.example.net", NULL },
	{ "undisclosed:; x@kernel.org", NULL },
	{ "undisclosed-recipients:;", NULL },
	{ "group: x@kernel.org;", NULL },
	{ "<maint@kernel.org>x@evil.org", NULL },
	{ "<maint@kernel.org> x@evil.org", NULL },
	{ "Name <maint@kernel.org> <x@evil.org>", NULL },
	/* other ways to say two things */
	{ "a@b.c, d@e.f", NULL },
	{ "Name <a@b.c>, d@e.f", NULL },
	{ "Smith, John <a@b.c>", NULL },
	{ "maint@kernel.org <x@evil.org>", NULL },
	{ "\"<x@evil.org>\" <maint@kernel.org>", NULL },
	{ "\"maint@kernel.org\" <x@evil.org>", NULL },
	{ "maint@kernel.org (<x@evil.org>)", NULL },
	{ "(x@evil.org) maint@kernel.org", NULL },
	{ "\"a@b\"@evil.org", NULL },
	{ "a@[127.0.0.1]", NULL },
	{ "<@relay.org:a@b.c>", NULL },
	{ "< a@b.c >", NULL },
	{ "<a@b.c", NULL },
	{ "a @b.c", NULL },
	{ "a@ b.c", NULL },
	{ "a(x)@b.c", NULL },
	{ "a@b.c.", NULL },
	{ "a..b@c.d", NULL },
	{ ".a@c.d", NULL },
	{ "@b.c", NULL },
	{ "a@", NULL },
	{ "a", NULL },
	{ "", NULL },
	{ "   ", NULL },
	{ "(only a comment)", NULL },
	{ "a@b_c.d", NULL },
	{ "a@-b.c", NULL },
	{ "a@b.c (comment not closed", NULL },
	{ "\"quote not closed <a@b.c>", NULL },
	{ "Name\r <a@b.c>", NULL },
	{ "a@b.c\r", NULL },
	{ "N\x01me <a@b.c>", NULL },
	{ "a@b.c ((((((((((deep))))))))))", NULL },
	{ "r\xc3\xa9sum\xc3\xa9@b.c", NULL },
	{ "a@b\xc3\xa9.c", NULL },
};

static void
test_address_table(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(addr_cases); i++) {
		const AddrCase *c = &addr_cases[i];
		g_autoptr(GError) error = NULL;
		g_autofree char *got = pgate_mail_address_strict(c->value, &error);

		if (g_strcmp0(got, c->addr) != 0)
			g_error("case %u: '%s': got '%s', want '%s' (%s)", i,
				c->value, got ? got : "(refused)",
				c->addr ? c->addr : "(refused)",
				error ? error->message : "no error");
		if (got == NULL)
			g_assert_error(error, PGATE_INGEST_ERROR,
				       PGATE_ERROR_INVALID);
		else
			g_assert_no_error(error);
	}
}

/* Long values are refused by length, never cut into something valid. */
static void
test_address_bounds(void)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	char *got;

	for (int i = 0; i < 65; i++)
		g_string_append_c(s, 'a');
	g_string_append(s, "@b.c");
	got = pgate_mail_address_strict(s->str, &error);
	g_assert_null(got);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);

	g_string_assign(s, "a@");
	for (int i = 0; i < 64; i++)
		g_string_append_c(s, 'b');
	g_string_append(s, ".c");
	got = pgate_mail_address_strict(s->str, &error);
	g_assert_null(got);
	g_clear_error(&error);

	g_string_assign(s, "a@");
	for (int i = 0; i < 60; i++)
		g_string_append(s, "bbbb.");
	g_string_append(s, "c");
	got = pgate_mail_address_strict(s->str, &error);
	g_assert_null(got);
	g_clear_error(&error);
}

/* ---- pgate_mail_header_values ----------------------------------------- */

static char *
joined(GPtrArray *a)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < a->len; i++) {
		if (i > 0)
			g_string_append_c(s, '|');
		g_string_append(s, g_ptr_array_index(a, i));
	}
	return g_string_free(s, FALSE);
}

typedef struct {
	const char *raw;
	const char *name;
	guint max;
	const char *want;       /* the values joined by '|' */
} HdrCase;

static const HdrCase hdr_cases[] = {
	{ "From: a@b.c\nSubject: x\n\nbody\n", "From", 2, " a@b.c" },
	{ "from:a@b.c\n\n", "From", 2, "a@b.c" },
	{ "FROM : a@b.c\n\n", "From", 2, " a@b.c" },
	{ "From: Name\n <a@b.c>\n\n", "From", 2, " Name <a@b.c>" },
	{ "From: Name\r\n\t<a@b.c>\r\nTo: x\r\n\r\nFrom: body@x\r\n", "From", 2,
	  " Name\t<a@b.c>" },
	{ "From: a@b.c\nTo: x\nFrom: d@e.f\n\n", "From", 2, " a@b.c| d@e.f" },
	{ "From: a@b.c\nFrom: d@e.f\nFrom: g@h.i\n\n", "From", 2,
	  " a@b.c| d@e.f" },
	{ "Subject: x\n\nFrom: a@b.c\n", "From", 2, "" },
	{ "Sender: a@b.c\nReply-To: a@b.c\n\n", "From", 2, "" },
	{ "From a@b.c Mon Jan  1 00:00:00 2024\nFrom: d@e.f\n\n", "From", 2,
	  " d@e.f" },
	{ "X-From: a@b.c\nFromx: a@b.c\n\n", "From", 2, "" },
	{ "From: a@b.c", "From", 2, " a@b.c" },
	/* a blank-only line is a continuation, not the end */
	{ "Subject: x\n \nFrom: a@b.c\n\n", "From", 2, " a@b.c" },
	{ "Authentication-Results: mx; dkim=pass\nAuthentication-Results: "
	  "evil; dkim=pass\n\n", "Authentication-Results", 1,
	  " mx; dkim=pass" },
};

static void
test_header_table(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(hdr_cases); i++) {
		const HdrCase *c = &hdr_cases[i];
		g_autoptr(GError) error = NULL;
		g_autoptr(GPtrArray) got = pgate_mail_header_values(
			c->raw, strlen(c->raw), c->name, c->max, 4096, &error);
		g_autofree char *j = NULL;

		g_assert_no_error(error);
		j = joined(got);
		if (strcmp(j, c->want) != 0)
			g_error("case %u: got '%s', want '%s'", i, j, c->want);
	}
}

/* A NUL byte in a kept field: refused (a C reader would stop at it). */
static void
test_header_nul(void)
{
	static const char raw[] = "To: x\0y\nFrom: a\0@evil.org\n\n";
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) got = NULL;

	got = pgate_mail_header_values(raw, sizeof raw - 1, "From", 2, 4096,
				       &error);
	g_assert_null(got);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	got = pgate_mail_header_values(raw, sizeof raw - 1, "Subject", 2, 4096,
				       &error);
	g_assert_no_error(error);
	g_assert_cmpuint(got->len, ==, 0);
}

static void
test_header_bounds(void)
{
	g_autoptr(GString) m = g_string_new("From: ");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) got = NULL;

	/* a kept value over max_len: refused, not cut */
	g_string_append(m, "a@b.c");
	for (int i = 0; i < 100; i++)
		g_string_append(m, "\n (xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx)");
	g_string_append(m, "\n\n");
	got = pgate_mail_header_values(m->str, m->len, "From", 2, 1024, &error);
	g_assert_null(got);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_TOO_LARGE);
	g_clear_error(&error);
	/* ... but a long field that is not kept is no error */
	got = pgate_mail_header_values(m->str, m->len, "Subject", 2, 1024,
				       &error);
	g_assert_no_error(error);
	g_assert_cmpuint(got->len, ==, 0);
	g_clear_pointer(&got, g_ptr_array_unref);

	/* a header block over 1 MiB */
	g_string_assign(m, "Subject: x\n");
	while (m->len < (1u << 20) + 100)
		g_string_append(m, "X-Filler: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n");
	g_string_append(m, "From: a@b.c\n\n");
	got = pgate_mail_header_values(m->str, m->len, "From", 2, 1024, &error);
	g_assert_null(got);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_TOO_LARGE);
}

/* ---- pgate_mail_auth_results_pass ------------------------------------- */

typedef struct {
	const char *value;
	const char *domain;
	gboolean pass;
} ArCase;

static const ArCase ar_cases[] = {
	{ " mx.example.org; dkim=pass header.d=kernel.org header.i=@kernel.org",
	  "kernel.org", TRUE },
	{ " mx.example.org;\tdkim=pass (2048-bit key; unprotected) "
	  "header.d=kernel.org header.i=@kernel.org header.b=\"ab/c+d=\"",
	  "kernel.org", TRUE },
	{ " mx.example.org; dkim=pass header.d=kernel.org header.b=ab/c+d=;"
	  " spf=pass smtp.mailfrom=kernel.org", "kernel.org", TRUE },
	{ " MX.Example.Org 1; dmarc=pass (p=none dis=none) "
	  "header.from=Kernel.ORG", "kernel.org", TRUE },
	{ " mx.example.org; spf=pass smtp.mailfrom=kernel.org; dkim=fail "
	  "header.d=kernel.org; dmarc=pass header.from=kernel.org",
	  "kernel.org", TRUE },
	{ " mx.example.org; dkim/1=pass header.d=kernel.org", "kernel.org",
	  TRUE },
	{ " \"mx.example.org\"; dkim=pass header.d=kernel.org", "kernel.org",
	  TRUE },
	{ " mx.example.org; dkim = pass header.d = kernel.org", "kernel.org",
	  TRUE },
	{ " mx.example.org;\t dkim=neutral header.d=evil.org;"
	  " dkim=pass header.d=kernel.org", "kernel.org", TRUE },
	/* not a pass for this domain */
	{ " mx.example.org; dkim=fail header.d=kernel.org", "kernel.org", FALSE },
	{ " mx.example.org; dkim=pass header.d=evil.org", "kernel.org", FALSE },
	{ " mx.example.org; dkim=pass header.d=sub.kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org; dkim=pass header.d=kernel.org.evil.org",
	  "kernel.org", FALSE },
	{ " mx.example.org; dkim=pass header.i=@kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org; dmarc=pass header.d=kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org; dmarc=fail header.from=kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org; spf=pass smtp.mailfrom=kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org; dkim=pass (header.d=kernel.org) header.d=evil.org",
	  "kernel.org", FALSE },
	{ " mx.example.org; none", "kernel.org", FALSE },
	{ " mx.example.org", "kernel.org", FALSE },
	/* not the local MTA's */
	{ " evil.example.net; dkim=pass header.d=kernel.org", "kernel.org",
	  FALSE },
	{ " mx.example.org.evil.net; dkim=pass header.d=kernel.org",
	  "kernel.org", FALSE },
	{ " (mx.example.org) evil; dkim=pass header.d=kernel.org", "kernel.org",
	  FALSE },
	{ "", "kernel.org", FALSE },
	/* unreadable: a "no" */
	{ " mx.example.org; dkim=pass header.d=kernel.org \"", "kernel.org",
	  FALSE },
	{ " mx.example.org dkim=pass header.d=kernel.org", "kernel.org", FALSE },
	{ " mx.example.org; =pass header.d=kernel.org", "kernel.org", FALSE },
};

static void
test_auth_results_table(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(ar_cases); i++) {
		const ArCase *c = &ar_cases[i];
		g_autoptr(GError) error = NULL;
		gboolean got = pgate_mail_auth_results_pass(c->value,
							    "mx.example.org",
							    c->domain, &error);

		if (got != c->pass)
			g_error("case %u: '%s': got %s (%s)", i, c->value,
				got ? "pass" : "no pass",
				error ? error->message : "no error");
		if (!got)
			g_assert_error(error, PGATE_INGEST_ERROR,
				       PGATE_ERROR_INVALID);
	}
}

/* ---- pgate_mail_body_own_text ----------------------------------------- */

typedef struct {
	const char *body;
	const char *own;
} OwnCase;

static const OwnCase own_cases[] = {
	{ "patchgate: approve\n", "patchgate: approve\n" },
	{ "  Patchgate: Approve  \r\nthanks\n", "Patchgate: Approve\nthanks\n" },
	{ "> quoted: patchgate: approve\n\npatchgate: approve\n",
	  "\npatchgate: approve\n" },
	{ ">patchgate: approve\n > patchgate: approve\n", "" },
	/* issue #25: quoted without '>' */
	{ "I have not reviewed this yet, please wait\n\n"
	  "-----Original Message-----\nFrom: Mallory <m@evil.org>\n"
	  "Sent: Monday, December 2, 2024 10:00 AM\nTo: list\n"
	  "Subject: [PATCH] x\n\npatchgate: approve\n",
	  "I have not reviewed this yet, please wait\n\n" },
	{ "wait\n----- Original Message -----\npatchgate: approve\n",
	  "wait\n" },
	{ "wait\n---------- Forwarded message ---------\npatchgate: approve\n",
	  "wait\n" },
	{ "wait\nBegin forwarded message:\n\npatchgate: approve\n", "wait\n" },
	{ "Not yet.\n\nOn Mon, 2 Dec 2024 at 10:00, Mallory <m@evil.org> wrote:\n"
	  "patchgate: approve\n", "Not yet.\n\n" },
	{ "Not yet.\nOn Mon, Dec 2, 2024 at 10:00 AM Mallory Evil\n"
	  "<m@evil.org> wrote:\npatchgate: approve\n", "Not yet.\n" },
	{ "Not yet.\nOn Mon, Dec 2, 2024 at 10:00 AM x\npatchgate: approve\n"
	  "<m@evil.org> wrote:\n", "Not yet.\n" },
	{ "Not yet.\nMallory <m@evil.org> wrote:\npatchgate: approve\n",
	  "Not yet.\n" },
	{ "Not yet.\nMallory writes:\n> x\n", "Not yet.\nMallory writes:\n" },
	/* Outlook's rule above its header block is a quote by itself */
	{ "Not yet.\n________________________________\nFrom: Mallory <m@evil.org>\n"
	  "Sent: Monday, December 2, 2024 10:00 AM\nTo: list\n"
	  "Subject: RE: [PATCH] x\n\npatchgate: approve\n",
	  "Not yet.\n" },
	{ "Not yet.\n*From:* Mallory <m@evil.org>\n*Sent:* Monday\n"
	  "*To:* list\n*Subject:* x\npatchgate: approve\n", "Not yet.\n" },
	{ "Not yet.\nFrom: Mallory <m@evil.org>\nTo: list\nCc: y\n"
	  "Date: Mon, 2 Dec 2024\nSubject: x\n\npatchgate: approve\n",
	  "Not yet.\n" },
	/* a "From:" line alone is the reply's own */
	{ "From: the datasheet, it is fine\npatchgate: approve\n",
	  "From: the datasheet, it is fine\npatchgate: approve\n" },
	{ "On second thought, yes.\npatchgate: approve\n\nthanks\n",
	  "On second thought, yes.\npatchgate: approve\n\nthanks\n" },
	/* the openers of other languages alone are the reply's own too */
	{ "Le patch est bon.\nAm besten so.\nEl código compila.\n"
	  "patchgate: approve\n",
	  "Le patch est bon.\nAm besten so.\nEl código compila.\n"
	  "patchgate: approve\n" },
	/* a Date line without a From line near it, a word inside another */
	{ "Date: next week is fine\nI rewrote it:\npatchgate: approve\n",
	  "Date: next week is fine\nI rewrote it:\npatchgate: approve\n" },
	/* Japanese quoting with the full-width '>' */
	{ "\xef\xbc\x9e patchgate: approve\nok\n", "ok\n" },
	{ "", "" },
};

/*
 * Every marker of every language (issue #41, finding 11): a quoted
 * approval below it does not count, one above it does.  Each is written
 * as the client named writes it (ingest/address.c has the sources).
 */
typedef struct {
	const char *lang;
	const char *client;
	const char *marker;     /* one or more lines, without the last '\n' */
} MarkerCase;

static const MarkerCase marker_cases[] = {
	/* en */
	{ "en", "Gmail", "On Mon, 2 Dec 2024 at 10:00, Mallory <m@evil.org> wrote:" },
	{ "en", "Thunderbird", "On 12/2/24 10:00, Mallory wrote:" },
	{ "en", "Thunderbird", "Mallory wrote:" },
	{ "en", "Outlook", "-----Original Message-----" },
	{ "en", "Gmail", "---------- Forwarded message ---------" },
	{ "en", "Thunderbird", "-------- Forwarded Message --------" },
	{ "en", "Apple Mail", "Begin forwarded message:" },
	{ "en", "Outlook", "From: Mallory <m@evil.org>\n"
	  "Sent: Monday, December 2, 2024 10:00 AM" },
	{ "en", "Outlook", "________________________________" },
	/* de */
	{ "de", "Outlook", "-----Ursprüngliche Nachricht-----\n"
	  "Von: Mallory <m@evil.org>\nGesendet: Montag, 2. Dezember 2024 10:00" },
	{ "de", "Outlook", "Von: Mallory <m@evil.org>\n"
	  "Gesendet: Montag, 2. Dezember 2024 10:00\nAn: list\nBetreff: x" },
	{ "de", "Thunderbird", "Am 02.12.24 um 10:00 schrieb Mallory:" },
	{ "de", "Thunderbird", "Mallory schrieb am 02.12.24 um 10:00:" },
	{ "de", "Gmail", "Am Mo., 2. Dez. 2024 um 10:00 Uhr schrieb Mallory "
	  "<m@evil.org>:" },
	{ "de", "Gmail", "Am Mo., 2. Dez. 2024 um 10:00 Uhr schrieb Mallory Evil <\n"
	  "m@evil.org>:" },
	{ "de", "Thunderbird", "-------- Original-Nachricht --------" },
	{ "de", "Thunderbird", "-------- Weitergeleitete Nachricht --------\n"
	  "Betreff: x\nDatum: Mon, 2 Dec 2024 10:00:00 +0000\n"
	  "Von: Mallory <m@evil.org>" },
	{ "de", "Thunderbird", "Betreff: x\nDatum: Mon, 2 Dec 2024 10:00:00 +0000\n"
	  "Von: Mallory <m@evil.org>" },
	{ "de", "Apple Mail", "Anfang der weitergeleiteten Nachricht:" },
	/* fr */
	{ "fr", "Outlook", "-----Message d'origine-----\nDe : Mallory <m@evil.org>\n"
	  "Envoyé : lundi 2 décembre 2024 10:00" },
	{ "fr", "Outlook", "De\xc2\xa0: Mallory <m@evil.org>\n"
	  "Envoyé\xc2\xa0: lundi 2 décembre 2024 10:00\nÀ\xc2\xa0: list" },
	{ "fr", "Outlook", "-----Message d\xe2\x80\x99origine-----" },
	{ "fr", "Thunderbird", "Le 02/12/2024 à 10:00, Mallory a écrit :" },
	{ "fr", "Thunderbird", "Le 02/12/2024 à 10:00, Mallory a\xc2\xa0écrit\xc2\xa0:" },
	{ "fr", "Gmail", "Le lun. 2 déc. 2024 à 10:00, Mallory <m@evil.org> a écrit :" },
	{ "fr", "Thunderbird", "-------- Message transféré --------" },
	{ "fr", "Apple Mail", "Début du message réexpédié :" },
	/* es */
	{ "es", "Thunderbird", "El 2/12/24 a las 10:00, Mallory escribió:" },
	{ "es", "Gmail", "El lun, 2 dic 2024 a las 10:00, Mallory (<m@evil.org>) "
	  "escribió:" },
	{ "es", "Outlook", "-----Mensaje original-----\nDe: Mallory <m@evil.org>\n"
	  "Enviado el: lunes, 2 de diciembre de 2024 10:00" },
	{ "es", "Outlook", "De: Mallory <m@evil.org>\n"
	  "Enviado: lunes, 2 de diciembre de 2024 10:00\nPara: list" },
	{ "es", "Thunderbird", "-------- Mensaje reenviado --------" },
	{ "es", "Apple Mail", "Inicio del mensaje reenviado:" },
	/* it */
	{ "it", "Thunderbird", "Il 02/12/24 10:00, Mallory ha scritto:" },
	{ "it", "Gmail", "Il giorno lun 2 dic 2024 alle ore 10:00 Mallory "
	  "<m@evil.org> ha scritto:" },
	{ "it", "Outlook", "-----Messaggio originale-----\nDa: Mallory <m@evil.org>\n"
	  "Inviato: lunedì 2 dicembre 2024 10:00" },
	{ "it", "Thunderbird", "-------- Messaggio Inoltrato --------" },
	{ "it", "Apple Mail", "Inizio messaggio inoltrato:" },
	/* pt */
	{ "pt", "Thunderbird (pt-BR)", "Em 02/12/2024 10:00, Mallory escreveu:" },
	{ "pt", "Thunderbird (pt-PT)", "Às 10:00 de 02/12/2024, Mallory escreveu:" },
	{ "pt", "Gmail", "Em seg., 2 de dez. de 2024 às 10:00, Mallory "
	  "<m@evil.org> escreveu:" },
	{ "pt", "Outlook", "-----Mensagem original-----\nDe: Mallory <m@evil.org>\n"
	  "Enviada em: segunda-feira, 2 de dezembro de 2024 10:00" },
	{ "pt", "Thunderbird", "-------- Mensagem encaminhada --------" },
	{ "pt", "Apple Mail", "Início da mensagem encaminhada:" },
	/* nl */
	{ "nl", "Thunderbird", "Op 02-12-2024 om 10:00 schreef Mallory:" },
	{ "nl", "Gmail", "Op ma 2 dec 2024 om 10:00 schreef Mallory <m@evil.org>:" },
	{ "nl", "Outlook", "Op 2 dec. 2024 om 10:00 heeft Mallory <m@evil.org> "
	  "het volgende geschreven:" },
	{ "nl", "Outlook", "-----Oorspronkelijk bericht-----\nVan: Mallory <m@evil.org>\n"
	  "Verzonden: maandag 2 december 2024 10:00" },
	{ "nl", "Thunderbird", "-------- Doorgestuurd bericht --------" },
	{ "nl", "Apple Mail", "Begin doorgestuurd bericht:" },
	/* zh */
	{ "zh", "Thunderbird (zh-CN)", "在 2024/12/2 10:00, Mallory 写道:" },
	{ "zh", "Gmail", "Mallory <m@evil.org> 于2024年12月2日周一 10:00写道\xef\xbc\x9a" },
	{ "zh", "Gmail, no address", "Mallory 于2024年12月2日周一 10:00写道\xef\xbc\x9a" },
	{ "zh", "Thunderbird (zh-TW)", "Mallory 於 2024/12/2 10:00 寫道:" },
	{ "zh", "Coremail", "-----原始邮件-----\n发件人: \"Mallory\" <m@evil.org>\n"
	  "发送时间: 2024-12-02 10:00:00 (星期一)" },
	{ "zh", "Outlook", "发件人: Mallory <m@evil.org>\n发送时间: 2024年12月2日 10:00\n"
	  "收件人: list" },
	{ "zh", "Thunderbird", "-------- 转发的消息 --------" },
	{ "zh", "Apple Mail", "以下是转发的邮件\xef\xbc\x9a" },
	/* ja */
	{ "ja", "Gmail", "2024年12月2日(月) 10:00 Mallory <m@evil.org>:" },
	{ "ja", "Gmail", "2024年12月2日(月) 10:00 Mallory Evil <\nm@evil.org>:" },
	{ "ja", "Gmail, no address", "2024年12月2日(月) 10:00 Mallory:" },
	{ "ja", "Apple Mail", "2024/12/02 10:00、Mallory <m@evil.org> のメッセージ:" },
	{ "ja", "Apple Mail", "2024/12/02 10:00、Mallory のメール\xef\xbc\x9a" },
	{ "ja", "Outlook", "-----Original Message-----\n差出人: Mallory <m@evil.org>\n"
	  "送信日時: 2024年12月2日 10:00" },
	{ "ja", "Outlook", "差出人: Mallory <m@evil.org>\n送信日時: 2024年12月2日 10:00\n"
	  "宛先: list\n件名: x" },
	{ "ja", "Outlook", "-----元のメッセージ-----" },
	{ "ja", "Apple Mail", "転送されたメッセージ:" },
	/* any other: a line ending in ':' that names an address [TAL] */
	{ "any", "talon's example", "2014-10-17 11:28 GMT+03:00 Mallory <m@evil.org>:" },
	{ "any", "no-break space before ':'", "Mallory <m@evil.org>\xc2\xa0:" },
	{ "sv", "Outlook", "Den 2 dec. 2024 kl. 10:00 skrev Mallory <m@evil.org>:" },
};

static gboolean
has_keyword_line(const char *own)
{
	g_auto(GStrv) lines = g_strsplit(own, "\n", -1);

	for (guint i = 0; lines[i] != NULL; i++)
		if (g_ascii_strcasecmp(lines[i], "patchgate: approve") == 0)
			return TRUE;
	return FALSE;
}

static void
test_own_text_markers(void)
{
	guint failed = 0;

	for (guint i = 0; i < G_N_ELEMENTS(marker_cases); i++) {
		const MarkerCase *c = &marker_cases[i];
		g_autofree char *below = g_strdup_printf(
			"Not approved yet, sorry.\n\n%s\n\npatchgate: approve\n",
			c->marker);
		g_autofree char *above = g_strdup_printf(
			"Looks good.\npatchgate: approve\n\n%s\n> x\n",
			c->marker);
		g_autofree char *own_below = pgate_mail_body_own_text(below, 2000);
		g_autofree char *own_above = pgate_mail_body_own_text(above, 2000);

		if (has_keyword_line(own_below)) {
			g_test_message("%s (%s): '%s': the quoted approval counts",
				       c->lang, c->client, c->marker);
			failed++;
		}
		if (!has_keyword_line(own_above)) {
			g_test_message("%s (%s): '%s': the approval above is lost",
				       c->lang, c->client, c->marker);
			failed++;
		}
	}
	g_assert_cmpuint(failed, ==, 0);
}

/*
 * The general rule fails closed: a line of the replier's own that looks
 * like an attribution ends the own text (documented in docs/pipeline.md).
 */
static void
test_own_text_fail_closed(void)
{
	g_autofree char *own = pgate_mail_body_own_text(
		"Ask alice@example.org:\npatchgate: approve\n", 2000);

	g_assert_cmpstr(own, ==, "");
	g_free(own);
	/* an address in a line that does not end in ':' is text */
	own = pgate_mail_body_own_text(
		"Reviewed-by: Alice <alice@example.org>\npatchgate: approve\n",
		2000);
	g_assert_true(has_keyword_line(own));
}

static void
test_own_text_table(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(own_cases); i++) {
		g_autofree char *got = pgate_mail_body_own_text(
			own_cases[i].body, 2000);

		if (strcmp(got, own_cases[i].own) != 0)
			g_error("case %u: got '%s', want '%s'", i, got,
				own_cases[i].own);
	}
}

static void
test_own_text_bounds(void)
{
	g_autoptr(GString) b = g_string_new(NULL);
	g_autofree char *got = NULL;

	for (int i = 0; i < 10; i++)
		g_string_append(b, "line\n");
	g_string_append(b, "patchgate: approve\n");
	got = pgate_mail_body_own_text(b->str, 10);
	g_assert_null(strstr(got, "approve"));
	g_free(got);
	got = pgate_mail_body_own_text(b->str, 11);
	g_assert_nonnull(strstr(got, "approve"));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/address/strict/table", test_address_table);
	g_test_add_func("/address/strict/bounds", test_address_bounds);
	g_test_add_func("/address/header/table", test_header_table);
	g_test_add_func("/address/header/nul", test_header_nul);
	g_test_add_func("/address/header/bounds", test_header_bounds);
	g_test_add_func("/address/auth-results/table", test_auth_results_table);
	g_test_add_func("/address/own-text/table", test_own_text_table);
	g_test_add_func("/address/own-text/bounds", test_own_text_bounds);
	g_test_add_func("/address/own-text/markers", test_own_text_markers);
	g_test_add_func("/address/own-text/fail-closed",
			test_own_text_fail_closed);
	return g_test_run();
}
