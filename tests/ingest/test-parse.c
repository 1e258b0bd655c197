/* test-parse.c - the mail model: pgate_mail_parse() and its helpers.
 *
 * Corpus tests read PGATE_TEST_CORPUS (the shared corpus: Patchwork's
 * test mails and fuzz files, a linux-i3c archive) and skip when it is
 * not there.  Expected values come from Patchwork's own tests (the table
 * in ../shared/docs/patchwork.md, Part 1c) and from `git patch-id --stable`.
 */
#include "ingest/ingest-private.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* What the linux-i3c archive (516 messages) holds; see test_i3c_archive */
#define I3C_PATCHES 149     /* RFCs and a bot's "Applied" mail included */
#define I3C_COVERS 32
#define I3C_REPLIES 327
#define I3C_PULLS 7         /* "[GIT PULL] i3c: Changes for 5.2" ... 5.8 */
#define I3C_OTHER 1         /* "I3C Mastership RFC" */
#define I3C_WITH_TRAILERS 179

/* ---- helpers ---------------------------------------------------------- */

static PgateMail *
parse_str(const char *text)
{
	return pgate_mail_parse(text, strlen(text), NULL);
}

static PgateMail *
parse_with(const char *text, const PgateIngestOptions *o)
{
	return pgate_mail_parse(text, strlen(text), o);
}

static guint
count_of(const char *hay, const char *needle)
{
	guint n = 0;

	for (const char *p = strstr(hay, needle); p != NULL;
	     p = strstr(p + 1, needle))
		n++;
	return n;
}

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

static char *
joined_trailers(GPtrArray *a)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < a->len; i++) {
		PgateTrailer *t = g_ptr_array_index(a, i);

		if (i > 0)
			g_string_append_c(s, '|');
		g_string_append_printf(s, "%s=%s", t->name, t->value);
	}
	return g_string_free(s, FALSE);
}

#define assert_list(arr, expected) G_STMT_START { \
	g_autofree char *got_ = joined(arr); \
	g_assert_cmpstr(got_, ==, (expected)); \
} G_STMT_END

#define assert_trailers(arr, expected) G_STMT_START { \
	g_autofree char *got_ = joined_trailers(arr); \
	g_assert_cmpstr(got_, ==, (expected)); \
} G_STMT_END

static const char *
corpus_dir(void)
{
	const char *dir = g_getenv("PGATE_TEST_CORPUS");

	if (dir == NULL || !g_file_test(dir, G_FILE_TEST_IS_DIR))
		return NULL;
	return dir;
}

/* Reads a corpus file and parses it, without its mbox "From " line.
 * Returns NULL (and marks the test skipped) without a corpus. */
static PgateMail *
parse_corpus(const char *rel)
{
	const char *dir = corpus_dir();
	g_autofree char *path = NULL;
	g_autofree char *data = NULL;
	g_autoptr(GError) error = NULL;
	const char *msg;
	gsize len;

	if (dir == NULL) {
		g_test_skip("no corpus: set PGATE_TEST_CORPUS to ../shared/corpus");
		return NULL;
	}
	path = g_build_filename(dir, rel, NULL);
	g_file_get_contents(path, &data, &len, &error);
	g_assert_no_error(error);
	msg = data;
	if (len > 5 && memcmp(data, "From ", 5) == 0) {
		const char *nl = memchr(data, '\n', len);

		g_assert_nonnull(nl);
		len -= (gsize)(nl + 1 - data);
		msg = nl + 1;
	}
	return pgate_mail_parse(msg, len, NULL);
}

static gboolean
hash_is_zero(const guint8 *h)
{
	for (int i = 0; i < 32; i++)
		if (h[i] != 0)
			return FALSE;
	return TRUE;
}

/* Everything a record says, for comparing two parses. */
static char *
rec_digest(const PgateMail *mail)
{
	const PgateMessageRec *r = mail->rec;
	GString *s = g_string_new(NULL);
	g_autofree char *refs = joined(r->references);
	g_autofree char *pre = joined(r->prefixes);
	g_autofree char *to = joined(r->to);
	g_autofree char *cc = joined(r->cc);
	g_autofree char *tr = joined_trailers(r->trailers);
	g_autofree char *files = joined(r->diff_files);
	g_autofree char *pp = joined(r->prereq_patch_ids);
	g_autofree char *pc = joined(r->prereq_change_ids);
	g_autofree char *pm = joined(r->prereq_message_ids);
	g_autofree char *dep = joined(r->depends_on);
	g_autofree char *based = joined(r->based_on);

	g_string_append_printf(s, "%s\n%d\n%u\n%s\n%s\n%s\n%s\n%s\n%u %u %u\n",
			       r->msgid, r->kind, r->flags,
			       r->in_reply_to ? r->in_reply_to : "-", refs,
			       r->subject ? r->subject : "-",
			       r->name ? r->name : "-", pre, r->version,
			       r->number, r->total);
	g_string_append_printf(s, "%s\n%s\n%" G_GINT64_FORMAT " %d\n%s\n%s\n%s\n",
			       r->from_name ? r->from_name : "-",
			       r->from_email, r->date, r->tz_minutes,
			       r->list_id ? r->list_id : "-", to, cc);
	g_string_append_printf(s, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n",
			       r->pull_url ? r->pull_url : "-",
			       r->patch_id ? r->patch_id : "-", tr,
			       r->base_commit ? r->base_commit : "-",
			       r->change_id ? r->change_id : "-", pp, pc, pm,
			       dep, based, files);
	g_string_append_printf(s, "%s\n", r->reject_reason ? r->reject_reason : "-");
	for (int i = 0; i < 32; i++)
		g_string_append_printf(s, "%02x", r->content_hash[i]);
	g_string_append_printf(s, "\n%s\n%s\n", mail->body,
			       mail->diff ? mail->diff : "-");
	return g_string_free(s, FALSE);
}

/* ---- subjects ---------------------------------------------------------- */

/* The subject cases give Patchwork's name, "[tok1,tok2,...] rest": it
 * must come out of our prefixes and name, which is the rest alone. */
static char *
patchwork_name(const PgateMessageRec *rec)
{
	g_autoptr(GString) s = g_string_new(NULL);

	if (rec->prefixes->len == 0)
		return g_strdup(rec->name);
	g_string_append_c(s, '[');
	for (guint i = 0; i < rec->prefixes->len; i++)
		g_string_append_printf(s, "%s%s", i ? "," : "",
				       (char *)g_ptr_array_index(rec->prefixes, i));
	g_string_append_c(s, ']');
	if (rec->name[0] != '\0')
		g_string_append_printf(s, " %s", rec->name);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

typedef struct {
	const char *subject;
	const char *name;       /* Patchwork's */
	const char *prefixes;
	guint32 version, number, total;
	PgateMsgFlags flags;   /* RFC, RESEND */
	gboolean reply;
} SubjectCase;

static const SubjectCase subject_cases[] = {
	/* Patchwork's clean_subject examples (../shared/docs/patchwork.md, 4.) */
	{ "[PATCH RFC 1/2] meep", "[RFC,1/2] meep", "RFC|1/2", 1, 1, 2,
	  PGATE_MSG_FLAG_SUBJECT_RFC, FALSE },
	{ "[PATCH] [RFC] [1/2] meep", "[RFC,1/2] meep", "RFC|1/2", 1, 1, 2,
	  PGATE_MSG_FLAG_SUBJECT_RFC, FALSE },
	{ "[PATCH v2 3/7] x", "[v2,3/7] x", "v2|3/7", 2, 3, 7, 0, FALSE },
	{ "[PATCH] rewrite [a-z] regexes", "rewrite [a-z] regexes", "",
	  1, 0, 0, 0, FALSE },
	{ "[PATCH1/8] x", "[PATCH1/8] x", "PATCH1/8", 1, 1, 8, 0, FALSE },
	{ "[PATCH100/123] x", "[PATCH100/123] x", "PATCH100/123", 1, 100, 123,
	  0, FALSE },
	{ "[v2PATCH12/15] x", "[v2PATCH12/15] x", "v2PATCH12/15", 1, 12, 15,
	  0, FALSE },
	{ "[PATCH 0 of 2] hg cover", "[0 of 2] hg cover", "0 of 2", 1, 0, 2,
	  0, FALSE },
	{ "[PATCH 2 of 2] hg", "[2 of 2] hg", "2 of 2", 1, 2, 2, 0, FALSE },
	{ "[PATCH 3/2] extra", "[3/2] extra", "3/2", 1, 3, 2, 0, FALSE },
	{ "[PATCH V2] x", "[V2] x", "V2", 2, 0, 0, 0, FALSE },
	{ "[PATCH version2] x", "[version2] x", "version2", 1, 0, 0, 0, FALSE },
	{ "[PATCH v2.1] x", "[v2.1] x", "v2.1", 1, 0, 0, 0, FALSE },
	{ "[PATCH v2-next] x", "[v2-next] x", "v2-next", 1, 0, 0, 0, FALSE },
	{ "[PATCH] foo (v3)", "foo (v3)", "", 3, 0, 0, 0, FALSE },
	{ "[PATCH net-next v3 0/4] foo (v2)", "[net-next,v3,0/4] foo (v2)",
	  "net-next|v3|0/4", 3, 0, 4, 0, FALSE },
	{ "[net,v2,1/2] net: x", "[net,v2,1/2] net: x", "net|v2|1/2", 2, 1, 2,
	  0, FALSE },
	{ "[PATCH 01/11] x", "[01/11] x", "01/11", 1, 1, 11, 0, FALSE },
	{ "[Buildroot] [PATCH 01/11] pkg: x", "[Buildroot,01/11] pkg: x",
	  "Buildroot|01/11", 1, 1, 11, 0, FALSE },
	{ "[Patch]: Fix ld", ": Fix ld", "", 1, 0, 0, 0, FALSE },
	{ "[PATCH -next] foo", "[-next] foo", "-next", 1, 0, 0, 0, FALSE },
	/* replies and forwards */
	{ "Re: [PATCH] foo", "foo", "", 1, 0, 0, 0, TRUE },
	{ "RE: [PATCH v2 2/3] foo", "[v2,2/3] foo", "v2|2/3", 2, 2, 3, 0, TRUE },
	{ "Re foo", "foo", "", 1, 0, 0, 0, TRUE },
	{ "re:[PATCH] foo", "foo", "", 1, 0, 0, 0, TRUE },
	{ "Re: Re: [PATCH v2 1/3] foo", "[v2,1/3] foo", "v2|1/3", 2, 1, 3, 0,
	  TRUE },
	{ "Fwd: [PATCH] foo", "foo", "", 1, 0, 0, 0, FALSE },
	{ "Fw: foo", "foo", "", 1, 0, 0, 0, FALSE },
	{ "Remove the foo", "Remove the foo", "", 1, 0, 0, 0, FALSE },
	{ "Reply: x", "Reply: x", "", 1, 0, 0, 0, FALSE },
	{ "AW: [PATCH v2 1/2] x", "[v2,1/2] x", "v2|1/2", 2, 1, 2, 0, TRUE },
	{ "Aw: AW: Re: x", "x", "", 1, 0, 0, 0, TRUE },
	{ "Aw shucks", "Aw shucks", "", 1, 0, 0, 0, FALSE },
	{ "SV: [PATCH] x", "SV: [PATCH] x", "", 1, 0, 0, 0, FALSE },
	/* b4's forms */
	{ "[PATCHv3 1/2] x", "[v3,1/2] x", "v3|1/2", 3, 1, 2, 0, FALSE },
	{ "[PATCHv3] x", "[v3] x", "v3", 3, 0, 0, 0, FALSE },
	{ "[RFCv2 PATCH] x", "[RFC,v2] x", "RFC|v2", 2, 0, 0,
	  PGATE_MSG_FLAG_SUBJECT_RFC, FALSE },
	{ "[RFC PATCH net-next v2 3/5] x", "[RFC,net-next,v2,3/5] x",
	  "RFC|net-next|v2|3/5", 2, 3, 5, PGATE_MSG_FLAG_SUBJECT_RFC, FALSE },
	{ "[PATCH RESEND v4 2/2] x", "[RESEND,v4,2/2] x", "RESEND|v4|2/2",
	  4, 2, 2, PGATE_MSG_FLAG_SUBJECT_RESEND, FALSE },
	{ "[RESEND PATCH] x", "[RESEND] x", "RESEND", 1, 0, 0,
	  PGATE_MSG_FLAG_SUBJECT_RESEND, FALSE },
	{ "[RFC][RESEND] x", "[RFC,RESEND] x", "RFC|RESEND", 1, 0, 0,
	  PGATE_MSG_FLAG_SUBJECT_RFC | PGATE_MSG_FLAG_SUBJECT_RESEND, FALSE },
	{ "[PATCH [net] v2] nested", "[net,v2] nested", "net|v2", 2, 0, 0, 0,
	  FALSE },
	{ "[patch 1 OF 3] x", "[1 of 3] x", "1 of 3", 1, 1, 3, 0, FALSE },
	/* odd ones */
	{ "", "", "", 1, 0, 0, 0, FALSE },
	{ "[PATCH foo", "[PATCH foo", "", 1, 0, 0, 0, FALSE },
	{ "[PATCH 1/2]", "[1/2]", "1/2", 1, 1, 2, 0, FALSE },
	{ "[] x", "x", "", 1, 0, 0, 0, FALSE },
	{ "[PATCH 1234567890/2] big", "[1234567890/2] big", "1234567890/2",
	  1, 0, 0, 0, FALSE },
	{ "[PATCH v0] zero", "[v0] zero", "v0", 0, 0, 0, 0, FALSE },
};

static void
test_subject_cases(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(subject_cases); i++) {
		const SubjectCase *c = &subject_cases[i];
		g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

		g_test_message("subject: %s", c->subject);
		g_autofree char *pw = NULL;

		pgate_ingest__subject_parse(c->subject, rec);
		pw = patchwork_name(rec);
		g_assert_cmpstr(pw, ==, c->name);
		/* our name never starts with what was parsed as a prefix */
		if (rec->prefixes->len > 0)
			g_assert_false(g_str_has_prefix(rec->name, "["));
		assert_list(rec->prefixes, c->prefixes);
		g_assert_cmpuint(rec->version, ==, c->version);
		g_assert_cmpuint(rec->number, ==, c->number);
		g_assert_cmpuint(rec->total, ==, c->total);
		g_assert_cmpuint(rec->flags, ==, c->flags);
		g_assert_cmpint(pgate_ingest__subject_is_reply(c->subject), ==,
				c->reply);
	}
}

/* A whole mail: the subject comes decoded and with whitespace collapsed. */
static void
test_subject_in_mail(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: a@example.org\n"
		"Subject: =?utf-8?q?=5BPATCH_v2_1/2=5D_caf=C3=A9?=\n"
		"  \t is   folded\n"
		"Message-ID: <s@x>\n\nbody\n");

	g_assert_cmpstr(m->rec->subject, ==, "[PATCH v2 1/2] café is folded");
	g_assert_cmpstr(m->rec->name, ==, "café is folded");
	g_assert_cmpuint(m->rec->version, ==, 2);
	g_assert_cmpuint(m->rec->number, ==, 1);
	g_assert_cmpuint(m->rec->total, ==, 2);
	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_OTHER);
}

/* ---- Message-IDs and threading ------------------------------------------ */

static void
test_msgid_forms(void)
{
	static const struct {
		const char *header;
		const char *msgid;   /* NULL: synthetic */
	} cases[] = {
		{ "Message-ID: <a@b>\n", "a@b" },
		{ "Message-Id:   <a@b>  (comment)\n", "a@b" },
		{ "Message-ID: abc@def\n", "abc@def" },
		{ "Message-ID: <a@b> <c@d>\n", "a@b" },
		{ "Message-ID: <first@x>\nMessage-ID: <second@x>\n", "first@x" },
		{ "Message-ID: <\n folded@x>\n", "folded@x" },
		{ "Message-ID: <a b@c>\n", "ab@c" },
		{ "Message-ID: <>\n", NULL },
		{ "Message-ID: two words\n", NULL },
		{ "Message-ID: 2>\n", NULL },
		{ "Message-ID: <caf\xc3\xa9@x>\n", NULL },
		{ "Message-ID:\nMessage-ID: <late@x>\n", "late@x" },
		{ "", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: a@example.org\nSubject: s\n%s\nbody\n",
			cases[i].header);
		g_autoptr(PgateMail) m = parse_str(text);

		g_test_message("case %u: %s", i, cases[i].header);
		if (cases[i].msgid != NULL) {
			g_assert_cmpstr(m->rec->msgid, ==, cases[i].msgid);
			g_assert_false(m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
		} else {
			g_assert_true(g_str_has_prefix(m->rec->msgid, "pgate-"));
			g_assert_true(g_str_has_suffix(m->rec->msgid,
						       "@synthetic.invalid"));
			g_assert_true(m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
		}
	}
}

static void
test_msgid_synthetic(void)
{
	const char *text = "From: a@example.org\nSubject: s\n\nbody\n";
	g_autoptr(PgateMail) a = parse_str(text);
	g_autoptr(PgateMail) b = parse_str(text);
	g_autoptr(PgateMail) c = parse_str(
		"From: a@example.org\nSubject: s\n\nother body\n");
	GString *want = g_string_new("pgate-");

	/* the first 16 bytes of the content hash, in hex */
	for (int i = 0; i < 16; i++)
		g_string_append_printf(want, "%02x", a->rec->content_hash[i]);
	g_string_append(want, "@synthetic.invalid");
	g_assert_cmpstr(a->rec->msgid, ==, want->str);
	g_assert_cmpuint(strlen(a->rec->msgid), ==, 6 + 32 + 18);
	g_assert_cmpstr(a->rec->msgid, ==, b->rec->msgid);
	g_assert_cmpstr(a->rec->msgid, !=, c->rec->msgid);
	g_string_free(want, TRUE);
}

static void
test_msgid_length(void)
{
	g_autofree char *id995 = g_strnfill(995 - 2, 'x');
	g_autofree char *id996 = g_strnfill(996 - 2, 'y');
	g_autofree char *t1 = g_strdup_printf(
		"From: a@b\nMessage-ID: <%s@h>\n\nx\n", id995);
	g_autofree char *t2 = g_strdup_printf(
		"From: a@b\nMessage-ID: <%s@h>\n\nx\n", id996);
	g_autoptr(PgateMail) m1 = parse_str(t1);
	g_autoptr(PgateMail) m2 = parse_str(t2);

	g_assert_cmpuint(strlen(m1->rec->msgid), ==, 995);
	g_assert_false(m1->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
	g_assert_true(m2->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
	g_assert_true(g_str_has_prefix(m2->rec->msgid, "pgate-"));
}

static void
test_references(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: Ann <ann@example.org>\n"
		"To: bob@example.org\n"
		"Subject: Re: x\n"
		"Message-ID: <self@x>\n"
		"In-Reply-To: <ann@example.org>'s message of yesterday\n"
		"References: <r1@x> <r2@x>\n"
		"\t<self@x> <r1@x> <bob@example.org>\n"
		"References: <r3@x>\n"
		"In-Reply-To: <r4@x> <r2@x>\n"
		"\nx\n");

	/* the address token is dropped, so In-Reply-To is the next one */
	g_assert_cmpstr(m->rec->in_reply_to, ==, "r4@x");
	assert_list(m->rec->references, "r1@x|r2@x|r3@x|r4@x");
}

static void
test_in_reply_to_bare(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: a@b\nSubject: Re: x\nMessage-ID: <m@x>\n"
		"In-Reply-To: parent@host\n\nx\n");
	g_autoptr(PgateMail) y = parse_str(
		"From: a@b\nSubject: Re: x\nMessage-ID: <m@x>\n"
		"In-Reply-To: y\n\nx\n");

	g_assert_cmpstr(m->rec->in_reply_to, ==, "parent@host");
	assert_list(m->rec->references, "parent@host");
	/* git send-email's old "y" answer is no ID */
	g_assert_null(y->rec->in_reply_to);
	g_assert_cmpuint(y->rec->references->len, ==, 0);
}

static void
test_references_bounded(void)
{
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	GString *text = g_string_new("From: a@b\nSubject: x\nMessage-ID: <m@x>\n"
				     "References:");
	g_autoptr(PgateMail) m = NULL;
	g_autoptr(PgateMail) d = NULL;

	for (int i = 0; i < 200; i++)
		g_string_append_printf(text, " <r%d@x>\n", i);
	g_string_append(text, "\nx\n");
	o.max_references = 10;
	m = parse_with(text->str, &o);
	assert_list(m->rec->references, "r0@x|r191@x|r192@x|r193@x|r194@x|"
		    "r195@x|r196@x|r197@x|r198@x|r199@x");
	o.max_references = 1;
	g_clear_pointer(&m, pgate_mail_free);
	m = parse_with(text->str, &o);
	assert_list(m->rec->references, "r199@x");
	/* the default is 128 */
	d = parse_str(text->str);
	g_assert_cmpuint(d->rec->references->len, ==, 128);
	g_assert_cmpstr(g_ptr_array_index(d->rec->references, 0), ==, "r0@x");
	g_assert_cmpstr(g_ptr_array_index(d->rec->references, 1), ==, "r73@x");
	g_string_free(text, TRUE);
}

/* ---- other headers ---------------------------------------------------------- */

static void
test_addresses(void)
{
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	const char *text =
		"From: \"Doe, J.\" <John.Doe@Example.ORG>\n"
		"To: a@b.c, \"B\" <b@EX.com>, grp: c@d.e, f@g.h;\n"
		"Cc: =?utf-8?q?Ren=C3=A9?= <r@x.y>, broken\n"
		"Subject: s\nMessage-ID: <a@x>\n\nx\n";
	g_autoptr(PgateMail) m = parse_str(text);
	g_autoptr(PgateMail) b = NULL;

	g_assert_cmpstr(m->rec->from_name, ==, "Doe, J.");
	g_assert_cmpstr(m->rec->from_email, ==, "John.Doe@example.org");
	assert_list(m->rec->to, "a@b.c|B <b@ex.com>|c@d.e|f@g.h");
	assert_list(m->rec->cc, "René <r@x.y>|broken");
	o.max_recipients = 3;
	b = parse_with(text, &o);
	assert_list(b->rec->to, "a@b.c|B <b@ex.com>|c@d.e");
	g_assert_cmpuint(b->rec->cc->len, ==, 0);
}

static void
test_from_missing(void)
{
	g_autoptr(PgateMail) m = parse_str("Subject: s\n\nx\n");
	g_autoptr(PgateMail) g = parse_str("From: (nobody)\nSubject: s\n\nx\n");

	g_assert_cmpstr(m->rec->from_email, ==, "");
	g_assert_null(m->rec->from_name);
	g_assert_cmpstr(g->rec->from_email, ==, "");
	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_OTHER);
}

static void
test_date(void)
{
	static const struct {
		const char *date;
		gint64 when;
		gint32 tz;
		gboolean bad;
	} cases[] = {
		{ "Date: Tue, 5 Dec 2023 10:00:00 +0530\n", 1701750600, 330, FALSE },
		{ "Date: Fri, 22 Oct 2010 14:51:02 +1100\n", 1287719462, 660, FALSE },
		{ "Date: Mon, 1 Jan 2001 00:00:00 -0800\n", 978336000, -480, FALSE },
		{ "Date: 1 Jan 2001 00:00:00 GMT\n", 978307200, 0, FALSE },
		{ "Date: no date at all\n", 0, 0, TRUE },
		{ "Date: Wed, 4 Jun 1960 17:50:46 +0000\n", 0, 0, TRUE },
		{ "", 0, 0, TRUE },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: a@b\nSubject: s\n%sMessage-ID: <d@x>\n\nx\n",
			cases[i].date);
		g_autoptr(PgateMail) m = parse_str(text);

		g_test_message("date %u: %s", i, cases[i].date);
		g_assert_cmpint(m->rec->date, ==, cases[i].when);
		g_assert_cmpint(m->rec->tz_minutes, ==, cases[i].tz);
		g_assert_cmpint(!!(m->rec->flags & PGATE_MSG_FLAG_BAD_DATE), ==,
				cases[i].bad);
	}
}

static void
test_list_id(void)
{
	static const struct {
		const char *headers;
		const char *list_id;
	} cases[] = {
		{ "List-Id: Some text <demo.example.org>\n", "demo.example.org" },
		{ "List-Id: demo.example.org\n", "demo.example.org" },
		{ "List-Id: two words\n", NULL },
		{ "List-Id: two words\nX-Mailing-List: <x.example.org>\n",
		  "x.example.org" },
		{ "X-Mailing-List: linux-mips\n", "linux-mips" },
		{ "X-list: xl.example.org\n", "xl.example.org" },
		{ "", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: a@b\nSubject: s\n%sMessage-ID: <l@x>\n\nx\n",
			cases[i].headers);
		g_autoptr(PgateMail) m = parse_str(text);

		g_assert_cmpstr(m->rec->list_id, ==, cases[i].list_id);
	}
}

static void
test_automated(void)
{
	static const struct {
		const char *headers;
		gboolean automated;
	} cases[] = {
		{ "Auto-Submitted: auto-generated\n", TRUE },
		{ "Auto-Submitted: auto-replied; foo=bar\n", TRUE },
		{ "Auto-Submitted: no\n", FALSE },
		{ "Auto-Submitted: No (a person)\n", FALSE },
		/* list servers add these to every message they relay */
		{ "Precedence: bulk\n", FALSE },
		{ "Precedence: list\n", FALSE },
		{ "Precedence: JUNK\n", TRUE },
		{ "Precedence: first-class\n", FALSE },
		{ "X-Patchwork-Hint: IGNORE\n", TRUE },
		{ "X-Patchwork-Hint: comment\n", FALSE },
		{ "", FALSE },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: a@b\nSubject: s\n%sMessage-ID: <a@x>\n\nx\n",
			cases[i].headers);
		g_autoptr(PgateMail) m = parse_str(text);

		g_assert_cmpint(!!(m->rec->flags & PGATE_MSG_FLAG_AUTOMATED), ==,
				cases[i].automated);
	}
}

/* ---- content hash ------------------------------------------------------------ */

static void
test_content_hash(void)
{
	const char *base =
		"From: A <a@b>\nSubject: [PATCH] x\nDate: Tue, 5 Dec 2023 "
		"10:00:00 +0000\nMessage-ID: <h@x>\nTo: t@x\n\nbody\nline\n";
	g_autoptr(PgateMail) a = parse_str(base);
	g_autoptr(PgateMail) relayed = parse_str(
		"Received: from somewhere by elsewhere\n"
		"Delivered-To: list@x\nReturn-Path: <bounce@x>\n"
		"From: A <a@b>\nSubject: [PATCH]\n x\nX-Junk: 1\n"
		"Date: Tue, 5 Dec 2023 10:00:00 +0000\nMessage-ID: <h@x>\n"
		"To:   t@x\nList-Id: <l.x>\n\nbody\nline\n");
	g_autoptr(PgateMail) crlf = parse_str(
		"From: A <a@b>\r\nSubject: [PATCH] x\r\nDate: Tue, 5 Dec 2023 "
		"10:00:00 +0000\r\nMessage-ID: <h@x>\r\nTo: t@x\r\n\r\n"
		"body\r\nline\r\n");
	g_autoptr(PgateMail) body = parse_str(
		"From: A <a@b>\nSubject: [PATCH] x\nDate: Tue, 5 Dec 2023 "
		"10:00:00 +0000\nMessage-ID: <h@x>\nTo: t@x\n\nbody\nline!\n");
	g_autoptr(PgateMail) cc = parse_str(
		"From: A <a@b>\nSubject: [PATCH] x\nDate: Tue, 5 Dec 2023 "
		"10:00:00 +0000\nMessage-ID: <h@x>\nTo: t@x\nCc: c@x\n\n"
		"body\nline\n");
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	guint8 want[32];
	gsize len = 32;
	const char *spec =
		"from:A <a@b>\nsubject:[PATCH] x\ndate:Tue, 5 Dec 2023 "
		"10:00:00 +0000\nmessage-id:<h@x>\nto:t@x\n\nbody\nline\n";

	g_assert_false(hash_is_zero(a->rec->content_hash));
	/* the definition in parse.c, spelled out */
	g_checksum_update(sum, (const guchar *)spec, -1);
	g_checksum_get_digest(sum, want, &len);
	g_assert_cmpmem(a->rec->content_hash, 32, want, 32);
	g_assert_cmpmem(a->rec->content_hash, 32, relayed->rec->content_hash, 32);
	g_assert_cmpmem(a->rec->content_hash, 32, crlf->rec->content_hash, 32);
	g_assert_true(memcmp(a->rec->content_hash, body->rec->content_hash,
			     32) != 0);
	g_assert_true(memcmp(a->rec->content_hash, cc->rec->content_hash,
			     32) != 0);
}

static void
test_sha256(void)
{
	g_autofree guint8 *data = g_malloc(70000);
	static const gsize sizes[] = { 0, 1, 55, 56, 63, 64, 65, 119, 120,
				       127, 128, 1000, 4096, 65537, 70000 };

	for (gsize i = 0; i < 70000; i++)
		data[i] = (guint8)(i * 131 + (i >> 8));
	for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
		g_autofree char *want = g_compute_checksum_for_data(
			G_CHECKSUM_SHA256, data, sizes[i]);
		PgateSha256 s;
		guint8 out[32];
		char hex[65];

		/* in pieces of varying size */
		pgate_sha256_init(&s);
		for (gsize done = 0, step = 1; done < sizes[i]; step = step * 3 + 1) {
			gsize n = MIN(step % 150, sizes[i] - done);

			pgate_sha256_update(&s, data + done, n);
			done += n;
		}
		pgate_sha256_finish(&s, out);
		for (int k = 0; k < 32; k++)
			g_snprintf(hex + 2 * k, 3, "%02x", out[k]);
		g_assert_cmpstr(hex, ==, want);
	}
}

/* ---- bodies: charsets, parts, signatures ---------------------------------- */

static PgateMail *
parse_part(const char *content_type, const char *cte, const char *body)
{
	g_autofree char *text = g_strdup_printf(
		"From: a@b\nSubject: s\nMessage-ID: <c@x>\nMIME-Version: 1.0\n"
		"%s%s%s%s\n%s", content_type ? "Content-Type: " : "",
		content_type ? content_type : "", content_type ? "\n" : "",
		cte ? cte : "", body);

	return parse_str(text);
}

static void
test_charsets(void)
{
	static const struct {
		const char *content_type;
		const char *cte;
		const char *body;
		const char *text;
	} cases[] = {
		{ "text/plain; charset=utf-8", NULL, "caf\xc3\xa9\n", "café" },
		{ "text/plain; charset=iso-8859-1", NULL, "caf\xe9\n", "café" },
		{ "text/plain; charset=latin1", NULL, "\xa4\n", "¤" },
		{ "text/plain; charset=iso-8859-15", NULL, "\xa4\n", "€" },
		{ "text/plain; charset=windows-1252", NULL, "\x80 \x93q\x94\n",
		  "€ “q”" },
		/* undefined in windows-1252: ISO-8859-1 */
		{ "text/plain; charset=windows-1252", NULL, "\x81\xe9\n",
		  "\xc2\x81\xc3\xa9" },
		{ "text/plain; charset=koi8-r", NULL, "\xf0\xd2\xc9\xd7\xc5\xd4\n",
		  "Привет" },
		/* unknown or missing: UTF-8, else windows-1252, else 8859-1 */
		{ "text/plain; charset=x-unknown", NULL, "caf\xc3\xa9\n", "café" },
		{ "text/plain; charset=x-unknown", NULL, "caf\xe9 \x80\n",
		  "café €" },
		{ "text/plain", NULL, "caf\xe9\n", "café" },
		{ NULL, NULL, "caf\xc3\xa9\n", "café" },
		/* declared wrongly: the same fallbacks */
		{ "text/plain; charset=us-ascii", NULL, "caf\xc3\xa9\n", "café" },
		{ "text/plain; charset=utf-8", NULL, "caf\xe9\n", "café" },
		{ "text/plain; charset=\"shift_jis\"", NULL, "\x82\xa0\n", "あ" },
		/* transfer encodings */
		{ "text/plain; charset=utf-8", "Content-Transfer-Encoding: base64\n",
		  "Y2Fmw6kKc2Vjb25kIGxpbmUK\n", "café\nsecond line" },
		{ "text/plain; charset=iso-8859-1",
		  "Content-Transfer-Encoding: quoted-printable\n",
		  "caf=E9 soft=\n break\n", "café soft break" },
		/* CRLF and NUL bytes */
		{ "text/plain", NULL, "a\r\nb\r\n", "a\nb" },
		{ "text/plain", "Content-Transfer-Encoding: base64\n",
		  "YQ1iDQpjAGQK\n", "a\rb\ncd" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMail) m = parse_part(cases[i].content_type,
						    cases[i].cte, cases[i].body);

		g_test_message("charset case %u", i);
		g_assert_cmpstr(m->body, ==, cases[i].text);
		g_assert_true(g_utf8_validate(m->body, -1, NULL));
	}
}

/* The diff stays as sent (git applies and hashes bytes); the comment is
 * converted. */
static void
test_diff_as_sent(void)
{
	g_autoptr(PgateMail) m = parse_part(
		"text/plain; charset=iso-8859-1", NULL,
		"Caf\xe9 fix.\n---\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-caf\xe9\n"
		"+th\xe9\n");
	g_autoptr(PgateMail) u = parse_part(
		"text/plain; charset=utf-8", NULL,
		"Fix.\n---\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-caf\xe9\n+th\xe9\n");
	g_autoptr(PgateMail) wide = NULL;
	/* "Fix.\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+\u00e9\n" in UTF-16LE,
	 * base64 */
	wide = parse_part("text/plain; charset=utf-16le",
			  "Content-Transfer-Encoding: base64\n",
			  "RgBpAHgALgAKAC0ALQAtACAAYQAvAGYACgArACsAKwAgAGIALwBmAAoAQABA"
			  "ACAALQAxACAAKwAxACAAQABAAAoALQB4AAoAKwDpAAoA\n");

	g_assert_cmpstr(m->body, ==, "Café fix.\n---");
	g_assert_cmpstr(m->diff, ==,
			"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-caf\xe9\n+th\xe9\n");
	g_assert_cmpstr(u->body, ==, "Fix.\n---");
	g_assert_cmpstr(u->diff, ==, m->diff);
	g_assert_cmpstr(wide->body, ==, "Fix.");
	g_assert_cmpstr(wide->diff, ==,
			"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+\xc3\xa9\n");
	assert_list(wide->rec->diff_files, "f");
}

static void
test_multipart(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: a@b\nSubject: [PATCH] x\nMessage-ID: <mp@x>\n"
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n"
		"preamble\n--B\nContent-Type: multipart/alternative; boundary=C\n\n"
		"--C\nContent-Type: text/plain\n\nThe comment.\n"
		"--C\nContent-Type: text/html\n\n<div>html</div>\n--C--\n"
		"--B\nContent-Type: text/x-patch; name=a.patch\n"
		"Content-Disposition: attachment\n\n"
		"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n"
		"--B\nContent-Type: text/x-diff\n\n"
		"diff --git a/c b/c\n--- a/c\n+++ b/c\n@@ -1 +1 @@\n-c\n+d\n"
		"--B\nContent-Type: text/plain\n\nA later plain part.\n"
		"--B\nContent-Type: application/octet-stream\n\nbinary\n--B--\n");

	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
	/* the last x-patch or x-diff part wins */
	g_assert_cmpstr(m->diff, ==,
			"diff --git a/c b/c\n--- a/c\n+++ b/c\n@@ -1 +1 @@\n-c\n+d\n");
	g_assert_cmpstr(m->body, ==, "The comment.\nA later plain part.");
	assert_list(m->rec->diff_files, "c");
}

static void
test_parts_bounded(void)
{
	GString *text = g_string_new(
		"From: a@b\nSubject: s\nMessage-ID: <many@x>\nMIME-Version: 1.0\n"
		"Content-Type: multipart/mixed; boundary=B\n\n");
	g_autoptr(PgateMail) m = NULL;

	for (int i = 0; i < 400; i++)
		g_string_append_printf(text, "--B\nContent-Type: text/plain\n\n"
				       "p%d\n", i);
	g_string_append(text, "--B--\n");
	m = parse_str(text->str);
	/* the multipart itself is one of the 256 parts walked */
	g_assert_cmpuint(count_of(m->body, "\n") + 1, ==,
			 PGATE_INGEST_MAX_PARTS - 1);
	g_assert_true(g_str_has_suffix(m->body, "\np254"));
	g_string_free(text, TRUE);
}

static void
test_nesting_bounded(void)
{
	GString *text = g_string_new("From: a@b\nSubject: s\nMessage-ID: <deep@x>\n"
				     "MIME-Version: 1.0\n");
	g_autoptr(PgateMail) m = NULL;

	for (int i = 0; i < 40; i++)
		g_string_append_printf(text, "Content-Type: multipart/mixed; "
				       "boundary=B%d\n\n--B%d\n", i, i);
	g_string_append(text, "Content-Type: text/plain\n\ndeep text\n");
	for (int i = 39; i >= 0; i--)
		g_string_append_printf(text, "--B%d--\n", i);
	m = parse_str(text->str);
	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_OTHER);
	/* past PGATE_INGEST_MAX_DEPTH levels nothing is read */
	g_assert_cmpstr(m->body, ==, "");
	g_string_free(text, TRUE);
}

static void
test_clean_content(void)
{
	g_autoptr(PgateMail) sig = parse_str(
		"From: a@b\nSubject: s\nMessage-ID: <s@x>\n\n\n  text\n\n-- \nsig\n");
	g_autoptr(PgateMail) footer = parse_str(
		"From: a@b\nSubject: s\nMessage-ID: <s@x>\n\ntext\n"
		"______________\nlist footer\n");
	g_autoptr(PgateMail) near = parse_str(
		"From: a@b\nSubject: s\nMessage-ID: <s@x>\n\ntext\n--\n"
		"--  \n_x_\nend\n");

	g_assert_cmpstr(sig->body, ==, "text");
	g_assert_cmpstr(footer->body, ==, "text");
	g_assert_cmpstr(near->body, ==, "text\n--\n--  \n_x_\nend");
}

/* ---- classification -------------------------------------------------------- */

#define SIMPLE_DIFF \
	"diff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n" \
	"--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"

static void
test_classify(void)
{
	static const struct {
		const char *subject;
		const char *body;
		PgateMsgKind kind;
		gboolean diff;
	} cases[] = {
		{ "[PATCH 1/2] x", "Text.\n---\n" SIMPLE_DIFF, PGATE_MSG_KIND_PATCH,
		  TRUE },
		{ "x", SIMPLE_DIFF, PGATE_MSG_KIND_PATCH, TRUE },
		{ "[PATCH 0/3] cover", "The series.\n", PGATE_MSG_KIND_COVER,
		  FALSE },
		{ "[PATCH 0 of 3] cover", "The series.\n", PGATE_MSG_KIND_COVER,
		  FALSE },
		{ "[PATCH 0/0] nothing", "x\n", PGATE_MSG_KIND_OTHER, FALSE },
		{ "[PATCH 0/3] cover with diff", SIMPLE_DIFF,
		  PGATE_MSG_KIND_PATCH, TRUE },
		/* git format-patch --interdiff: the diff of two versions in
		 * a cover is no patch (issue #49) */
		{ "[PATCH v2 0/3] cover with an interdiff",
		  "The series.\n\n a | 1 +\n\nInterdiff against v1:\n" SIMPLE_DIFF,
		  PGATE_MSG_KIND_COVER, TRUE },
		{ "[PATCH v2 0/3] cover, --interdiff without a version",
		  "The series.\n\nInterdiff:\n" SIMPLE_DIFF,
		  PGATE_MSG_KIND_COVER, TRUE },
		{ "[PATCH v2 2/3] a patch's interdiff",
		  "Text.\n---\nInterdiff against v1:\n" SIMPLE_DIFF,
		  PGATE_MSG_KIND_PATCH, TRUE },
		{ "ping", "Any news?\n", PGATE_MSG_KIND_OTHER, FALSE },
		{ "Re: [PATCH 1/2] x", "> quoted\n\n" SIMPLE_DIFF,
		  PGATE_MSG_KIND_REPLY, FALSE },
		{ "Re: [PATCH 0/3] cover", "Nice.\n", PGATE_MSG_KIND_REPLY, FALSE },
		{ "Fwd: [PATCH] x", SIMPLE_DIFF, PGATE_MSG_KIND_PATCH, TRUE },
		{ "[GIT PULL] x", "The following changes since commit abc:\n\n"
		  "are available in the Git repository at:\n\n"
		  "  git://host/repo.git tag\n", PGATE_MSG_KIND_PULL, FALSE },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(
			"From: a@b\nSubject: %s\nMessage-ID: <k%u@x>\n\n%s",
			cases[i].subject, i, cases[i].body);
		g_autoptr(PgateMail) m = parse_str(text);

		g_test_message("classify %u: %s", i, cases[i].subject);
		g_assert_cmpint(m->rec->kind, ==, cases[i].kind);
		g_assert_cmpint(m->diff != NULL, ==, cases[i].diff);
		g_assert_cmpint(m->rec->patch_id != NULL, ==,
				cases[i].diff &&
				cases[i].kind != PGATE_MSG_KIND_COVER);
	}
}

static void
test_reply_keeps_diff_in_body(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: a@b\nSubject: Re: [PATCH] x\nMessage-ID: <r@x>\n\n"
		"Try this:\n\n" SIMPLE_DIFF);

	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_REPLY);
	g_assert_null(m->diff);
	g_assert_null(m->rec->patch_id);
	g_assert_cmpuint(m->rec->diff_files->len, ==, 0);
	/* everything is comment, the outer whitespace stripped */
	g_assert_cmpuint(strlen(m->body), ==,
			 strlen("Try this:\n\n" SIMPLE_DIFF) - 1);
	g_assert_true(strncmp(m->body, "Try this:\n\n" SIMPLE_DIFF,
			      strlen(m->body)) == 0);
}

static void
test_patch_fields(void)
{
	g_autoptr(PgateMail) m = parse_str(
		"From: A <a@b>\nSubject: [PATCH v2 1/2] f: x\nMessage-ID: <p@x>\n\n"
		"The change.\n\nSigned-off-by: A <a@b>\n---\n f.c | 2 +-\n\n"
		SIMPLE_DIFF "-- \n2.39.5\n");

	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
	g_assert_cmpstr(m->diff, ==, SIMPLE_DIFF);
	g_assert_cmpstr(m->body, ==,
			"The change.\n\nSigned-off-by: A <a@b>\n---\n f.c | 2 +-");
	/* git patch-id --stable of SIMPLE_DIFF */
	g_assert_cmpstr(m->rec->patch_id, ==,
			"73a2a2abadaebccff58fc69398ad1b05c9a356c8");
	assert_list(m->rec->diff_files, "f.c");
	assert_trailers(m->rec->trailers, "Signed-off-by=A <a@b>");
	g_assert_false(m->rec->flags & PGATE_MSG_FLAG_BINARY_PATCH);
	/* the sketch of its two changed lines, as a commit's is made */
	{
		guint32 want[PGATE_DIFF_SKETCH_MAX];
		guint n = pgate_diff_sketch(SIMPLE_DIFF, strlen(SIMPLE_DIFF),
					    want);

		g_assert_cmpuint(n, ==, 2);
		g_assert_cmpuint(m->rec->diff_sketch_len, ==, 2);
		g_assert_cmpmem(m->rec->diff_sketch, 8, want, 8);
	}
}

/* ---- rejection ------------------------------------------------------------- */

static void
test_rejected(void)
{
	static const struct {
		const char *text;
		gsize len;
		const char *reason;
	} cases[] = {
		{ "", 0, "empty message" },
		{ " \n\r\n\t\n", 6, "empty message" },
		{ "hello world\nmore\n", 17,
		  "not a mail: the first line is not a header field" },
		{ ": no name\n\nx\n", 13,
		  "not a mail: the first line is not a header field" },
		{ "\n\nFrom: a@b\n", 12,
		  "not a mail: the first line is not a header field" },
		{ "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16,
		  "not a mail: the first line is not a header field" },
		{ "X: \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\n\nbody\n", 27,
		  "not a mail: binary data in the header block (17 NUL bytes)" },
		{ "From: a@b\nX: \0\0\0\0\n\nbody\n", 23,
		  "not a mail: binary data in the header block (4 NUL bytes)" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMail) m = pgate_mail_parse(cases[i].text,
							  cases[i].len, NULL);

		g_test_message("reject case %u", i);
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_REJECTED);
		g_assert_cmpstr(m->rec->reject_reason, ==, cases[i].reason);
		g_assert_true(g_str_has_prefix(m->rec->msgid, "pgate-"));
		g_assert_true(m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
		g_assert_true(m->rec->flags & PGATE_MSG_FLAG_BAD_DATE);
		g_assert_false(hash_is_zero(m->rec->content_hash));
		g_assert_cmpstr(m->body, ==, "");
		g_assert_null(m->diff);
		g_assert_cmpstr(m->rec->from_email, ==, "");
	}
}

static void
test_odd_but_mail(void)
{
	/* a few NULs, headers only, an mbox line, obsolete "Name :" */
	static const struct {
		const char *text;
		gsize len;
		const char *subject;
	} cases[] = {
		{ "Subject: a\0b\nFrom: x@y\n\nbody\n", 26, "a" },
		{ "Subject: only headers\n", 22, "only headers" },
		{ "Subject: no newline", 19, "no newline" },
		{ "From foo@bar Mon Sep 17 00:00:00 2001\nSubject: mbox\n\nx\n",
		  53, "mbox" },
		{ "Subject : spaced\n\nx\n", 20, "spaced" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMail) m = pgate_mail_parse(cases[i].text,
							  cases[i].len, NULL);

		g_test_message("odd case %u", i);
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_OTHER);
		g_assert_null(m->rec->reject_reason);
		g_assert_cmpstr(m->rec->subject, ==, cases[i].subject);
	}
}

/* Every prefix and many mutations of a patch mail parse without harm. */
static void
test_truncated_and_mutated(void)
{
	const char *mail =
		"From: A <a@b>\nSubject: [PATCH v2 1/2] f: x\nMessage-ID: <p@x>\n"
		"References: <r1@x> <r2@x>\nMIME-Version: 1.0\n"
		"Content-Type: multipart/mixed; boundary=B\n\n--B\n"
		"Content-Type: text/plain; charset=utf-8\n"
		"Content-Transfer-Encoding: quoted-printable\n\n"
		"The change=C3=A9.\n\nSigned-off-by: A <a@b>\n---\n" SIMPLE_DIFF
		"GIT binary patch\nliteral 5\nEcmZ?r%Kt0B\n\n--B\n"
		"Content-Type: text/x-patch\nContent-Transfer-Encoding: base64\n\n"
		"ZGlmZiAtLWdpdCBhL3ggYi94Cg==\n--B--\n";
	gsize len = strlen(mail);
	g_autoptr(GRand) rand = g_rand_new_with_seed(20240102);
	g_autofree char *buf = g_malloc(len + 1);

	for (gsize n = 0; n <= len; n++) {
		PgateMail *m = pgate_mail_parse(mail, n, NULL);

		g_assert_nonnull(m->rec->msgid);
		g_assert_true(m->rec->kind != PGATE_MSG_KIND_REJECTED ||
			      m->rec->reject_reason != NULL);
		pgate_mail_free(m);
	}
	for (int round = 0; round < 2000; round++) {
		PgateMail *m;

		memcpy(buf, mail, len);
		for (int k = g_rand_int_range(rand, 1, 8); k > 0; k--)
			buf[g_rand_int_range(rand, 0, (gint32)len)] =
				(char)g_rand_int_range(rand, 0, 256);
		m = pgate_mail_parse(buf, len, NULL);
		g_assert_nonnull(m->rec->msgid);
		g_assert_true(m->rec->kind != PGATE_MSG_KIND_REJECTED ||
			      m->rec->reject_reason != NULL);
		g_assert_true(g_utf8_validate(m->body, -1, NULL));
		pgate_mail_free(m);
	}
}

/* ---- comment and diff ---------------------------------------------------- */

typedef struct {
	const char *text;
	const char *diff;      /* NULL: none */
	const char *comment;   /* NULL: none */
} SplitCase;

static const SplitCase split_cases[] = {
	{ "Hello\n", NULL, "Hello\n" },
	{ "", NULL, NULL },
	{ "Text\n" SIMPLE_DIFF "-- \n2.1\n", SIMPLE_DIFF, "Text\n-- \n2.1\n" },
	/* no newline at the end */
	{ SIMPLE_DIFF "-- \nsig", SIMPLE_DIFF, "-- \nsig\n" },
	/* prose starting with "diff" before the real diff */
	{ "diff between v1 and v2: none\n\n" SIMPLE_DIFF, SIMPLE_DIFF,
	  "diff between v1 and v2: none\n\n" },
	{ "diff for you\ndiff --git a/f.c b/f.c\nindex 1..2 100644\n"
	  "--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-b\n+c\n",
	  "diff --git a/f.c b/f.c\nindex 1..2 100644\n"
	  "--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-b\n+c\n", "diff for you\n" },
	/* a ---/+++ pair without a hunk stays comment */
	{ "--- a\n+++ b\nno hunk\n", NULL, "--- a\n+++ b\nno hunk\n" },
	/* hunk lines that look like headers are counted, not parsed */
	{ "--- a/t\n+++ b/t\n@@ -1,3 +1,3 @@\n--- x\n+++ y\n \n",
	  "--- a/t\n+++ b/t\n@@ -1,3 +1,3 @@\n--- x\n+++ y\n \n", NULL },
	/* an empty line in a hunk is a context line whose space was lost */
	{ "--- a/t\n+++ b/t\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\ntrailing\n",
	  "--- a/t\n+++ b/t\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", "trailing\n" },
	/* "\ No newline" inside and after hunks, in any language */
	{ "--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n"
	  "+b\n\\ Kein Zeilenumbruch am Dateiende.\nafter\n",
	  "--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n"
	  "+b\n\\ Kein Zeilenumbruch am Dateiende.\n", "after\n" },
	/* CVS */
	{ "Index: f.c\n=====\nRCS file: /cvs/f.c,v\nretrieving revision 1.1\n"
	  "diff -u -r1.1 f.c\n--- f.c\t1 Jan 2001\n+++ f.c\t2 Jan 2001\n"
	  "@@ -1 +1 @@\n-a\n+b\n",
	  "Index: f.c\n=====\nRCS file: /cvs/f.c,v\nretrieving revision 1.1\n"
	  "diff -u -r1.1 f.c\n--- f.c\t1 Jan 2001\n+++ f.c\t2 Jan 2001\n"
	  "@@ -1 +1 @@\n-a\n+b\n", NULL },
	/* pure rename, then text */
	{ "diff --git a/x b/y\nsimilarity index 100%\nrename from x\n"
	  "rename to y\n\nThanks\n",
	  "diff --git a/x b/y\nsimilarity index 100%\nrename from x\n"
	  "rename to y\n", "\nThanks\n" },
	/* mode change, then the next file */
	{ "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n" SIMPLE_DIFF,
	  "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n" SIMPLE_DIFF,
	  NULL },
	/* an empty new file with one extended header line */
	{ "diff --git a/e b/e\nnew file mode 100644\n-- \n2.1\n",
	  "diff --git a/e b/e\nnew file mode 100644\n", "-- \n2.1\n" },
	/* binary: the blank line ends a hunk; text after goes back */
	{ "diff --git a/b b/b\nindex 1..2 100644\nGIT binary patch\n"
	  "literal 5\nEcmZ?r%Kt0B\n\nliteral 0\nHcmV?d00001\n\n-- \n2.1\n",
	  "diff --git a/b b/b\nindex 1..2 100644\nGIT binary patch\n"
	  "literal 5\nEcmZ?r%Kt0B\n\nliteral 0\nHcmV?d00001\n\n", "-- \n2.1\n" },
	{ "diff --git a/b b/b\nindex 1..2 100644\nGIT binary patch\n"
	  "delta 5\nEcmZ?r%Kt0B\n\n" SIMPLE_DIFF,
	  "diff --git a/b b/b\nindex 1..2 100644\nGIT binary patch\n"
	  "delta 5\nEcmZ?r%Kt0B\n\n" SIMPLE_DIFF, NULL },
	{ "diff --git a/b b/b\nindex 1..2 100644\n"
	  "Binary files a/b and b/b differ\nThanks\n",
	  "diff --git a/b b/b\nindex 1..2 100644\n"
	  "Binary files a/b and b/b differ\n", "Thanks\n" },
	/* a hunk of zero lines takes none */
	{ "--- a/t\n+++ b/t\n@@ -0,0 +0,0 @@\nafter\n",
	  "--- a/t\n+++ b/t\n@@ -0,0 +0,0 @@\n", "after\n" },
	/* a diff cut short */
	{ "--- a/t\n+++ b/t\n@@ -1,5 +1,5 @@\n a\n",
	  "--- a/t\n+++ b/t\n@@ -1,5 +1,5 @@\n a\n", NULL },
};

static void
test_split_patch(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(split_cases); i++) {
		const SplitCase *c = &split_cases[i];
		g_autofree char *diff = NULL;
		g_autofree char *comment = NULL;

		g_test_message("split case %u", i);
		pgate_ingest__split_patch(c->text, strlen(c->text), &diff,
					  &comment);
		g_assert_cmpstr(diff, ==, c->diff);
		g_assert_cmpstr(comment, ==, c->comment);
	}
}

static void
test_diff_scan(void)
{
	static const struct {
		const char *diff;
		const char *files;
		gboolean binary;
	} cases[] = {
		{ SIMPLE_DIFF, "f.c", FALSE },
		{ "diff --git a/new b/new\nnew file mode 100644\n--- /dev/null\n"
		  "+++ b/new\n@@ -0,0 +1 @@\n+x\n"
		  "diff --git a/old b/old\ndeleted file mode 100644\n--- a/old\n"
		  "+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "new|old", FALSE },
		{ "diff --git a/dir with space/f b/dir with space/f\n"
		  "--- a/dir with space/f\t\n+++ b/dir with space/f\t\n"
		  "@@ -1 +1 @@\n-a\n+b\n", "dir with space/f", FALSE },
		{ "diff --git \"a/caf\\303\\251\\tx\" \"b/caf\\303\\251\\tx\"\n"
		  "--- \"a/caf\\303\\251\\tx\"\n+++ \"b/caf\\303\\251\\tx\"\n"
		  "@@ -1 +1 @@\n-a\n+b\n", "café\tx", FALSE },
		{ "diff --git a/x b/y\nsimilarity index 90%\nrename from x\n"
		  "rename to y\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n",
		  "x|y", FALSE },
		{ "diff --git pixel.bmp pixel.bmp\nGIT binary patch\nliteral 0\n"
		  "HcmV?d00001\n\n", "pixel.bmp", TRUE },
		{ "diff --git a/b b/b\nindex 1..2 100644\n"
		  "Binary files a/b and b/b differ\n", "b", TRUE },
		/* -p1 for non-git diffs, as patch does */
		{ "--- linux.orig/drivers/x.c\n+++ linux/drivers/x.c\n"
		  "@@ -1 +1 @@\n-a\n+b\n", "drivers/x.c", FALSE },
		{ "Index: f.c\n--- f.c\t1 Jan\n+++ f.c\t2 Jan\n@@ -1 +1 @@\n-a\n+b\n",
		  "f.c", FALSE },
		/* a hunk removing "-- x" is no file header */
		{ "--- a/t\n+++ b/t\n@@ -1,2 +1 @@\n--- x\n-+++ y\n+z\n", "t",
		  FALSE },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
		gboolean binary;

		g_test_message("scan case %u", i);
		binary = pgate_ingest__diff_scan(cases[i].diff,
						 strlen(cases[i].diff), files,
						 PGATE_INGEST_MAX_DIFF_FILES);
		assert_list(files, cases[i].files);
		g_assert_cmpint(binary, ==, cases[i].binary);
	}
}

static void
test_diff_scan_bounded(void)
{
	GString *diff = g_string_new(NULL);
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);

	for (int i = 0; i < 50; i++)
		g_string_append_printf(diff, "diff --git a/f%d b/f%d\n"
				       "--- a/f%d\n+++ b/f%d\n@@ -1 +1 @@\n-a\n+b\n",
				       i % 30, i % 30, i % 30, i % 30);
	pgate_ingest__diff_scan(diff->str, diff->len, files, 20);
	g_assert_cmpuint(files->len, ==, 20);
	g_assert_cmpstr(g_ptr_array_index(files, 19), ==, "f19");
	g_ptr_array_set_size(files, 0);
	pgate_ingest__diff_scan(diff->str, diff->len, files, 100);
	g_assert_cmpuint(files->len, ==, 30);
	g_string_free(diff, TRUE);
}

/* ---- patch-id ----------------------------------------------------------- */

static void
test_patch_id(void)
{
	static const struct {
		const char *diff;
		const char *id;   /* `git patch-id --stable`, git 2.39 */
	} cases[] = {
		{ SIMPLE_DIFF, "73a2a2abadaebccff58fc69398ad1b05c9a356c8" },
		/* whitespace does not count */
		{ "diff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n"
		  "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n  a\n-\tb\n+c \n d\n",
		  "73a2a2abadaebccff58fc69398ad1b05c9a356c8" },
		/* text before the diff and after it does not count */
		{ "Subject: x\n\nText\n---\n" SIMPLE_DIFF "-- \n2.39.5\n\n",
		  "73a2a2abadaebccff58fc69398ad1b05c9a356c8" },
		/* two files: the per-file hashes are summed, order-free */
		{ SIMPLE_DIFF "diff --git a/g.c b/g.c\nindex 3..4 100644\n"
		  "--- a/g.c\n+++ b/g.c\n@@ -1 +1 @@\n-x\n+y\n",
		  "fe5aa70e7582a7ad68ac14f1487907387599a5b4" },
		{ "diff --git a/g.c b/g.c\nindex 3..4 100644\n"
		  "--- a/g.c\n+++ b/g.c\n@@ -1 +1 @@\n-x\n+y\n" SIMPLE_DIFF,
		  "fe5aa70e7582a7ad68ac14f1487907387599a5b4" },
		/* a binary file counts by its object names */
		{ "diff --git a/b b/b\nindex 1234567..89abcde 100644\n"
		  "GIT binary patch\nliteral 5\nEcmZ?r%Kt0B\n\nliteral 0\nHcmV?d00001\n\n",
		  "ed2de8f87fe396544f8982d75ca7dff81799ccd3" },
		/* a line of 40 hex digits starts the next patch */
		{ "0123456789012345678901234567890123456789\n" SIMPLE_DIFF
		  "From 0123456789012345678901234567890123456789 Mon\n"
		  "diff --git a/g.c b/g.c\n--- a/g.c\n+++ b/g.c\n@@ -1 +1 @@\n-x\n+y\n",
		  "73a2a2abadaebccff58fc69398ad1b05c9a356c8" },
		{ "no diff here\n", NULL },
		{ "", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *id = pgate_patch_id_stable(
			cases[i].diff, strlen(cases[i].diff));

		g_test_message("patch-id case %u", i);
		g_assert_cmpstr(id, ==, cases[i].id);
	}
}

/* ---- pull requests ---------------------------------------------------------- */

static void
test_pull_url(void)
{
	static const struct {
		const char *text;
		const char *url;
	} cases[] = {
		{ "The following changes since commit abc:\n\n  x (2020)\n\n"
		  "are available in the git repository at:\n\n"
		  "  git://host/repo.git master\n\nfor you to fetch\n",
		  "git://host/repo.git master" },
		{ "The following changes since commit abc:\n"
		  "are available in the Git repository at:\n"
		  "  git@github.com:me/repo.git for-linus\n",
		  "git@github.com:me/repo.git for-linus" },
		{ "The following changes since commit abc:\n"
		  "are available in the Git repository at:\n"
		  "  https://host/r.git/\ntags/v1\n\nfor you\n",
		  "https://host/r.git/ tags/v1" },
		/* git 2.14.3's blank-padded lines: the branch is on the
		 * line after the blank one, so only the URL matches */
		{ "The following changes since commit abc:\n"
		  "are available in the Git repository at:\n\n"
		  "  git://host/net \n\nfor you to fetch changes up to x:\n",
		  "git://host/net" },
		/* the last "are available" line that matches wins */
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at:\n"
		  "  git://one/r.git a\n"
		  "are available in the git repository at:\n"
		  "  git://two/r.git b\n", "git://two/r.git b" },
		/* schemes a CI must not fetch */
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at:\n"
		  "  file:///etc/r.git master\n", NULL },
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at:\n"
		  "  ftp://host/r.git master\n", NULL },
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at:\n"
		  "  me@host master\n", NULL },
		/* needs both lines, in order, at line starts */
		{ "are available in the git repository at:\n"
		  "  git://host/r.git master\n", NULL },
		{ "The following changes since commit abc:\n"
		  "  are available in the git repository at:\n"
		  "  git://host/r.git master\n", NULL },
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at: git://host/r.git x\n",
		  NULL },
		/* more text on the URL line: no match */
		{ "The following changes since commit abc:\n"
		  "are available in the git repository at:\n"
		  "  git://host/r.git master (please pull)\n", NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *url = pgate_ingest__pull_url(cases[i].text);

		g_test_message("pull case %u", i);
		g_assert_cmpstr(url, ==, cases[i].url);
	}
}

/* ---- trailers and b4 lines ------------------------------------------------------ */

static void
test_trailers(void)
{
	static const struct {
		const char *body;
		const char *trailers;
	} cases[] = {
		{ "Change.\n\nSigned-off-by: A <a@b>\nReviewed-by: B <b@c>\n"
		  "---\n f | 1 +\n", "Signed-off-by=A <a@b>|Reviewed-by=B <b@c>" },
		/* the body's first paragraph can be trailers: git has the
		 * title before it */
		{ "Signed-off-by: A <a@b>", "Signed-off-by=A <a@b>" },
		{ "Text\n\nFixes: 0123456789ab (\"foo: bar\")\nCc: stable@x # 5.4\n"
		  "Link: https://lore.kernel.org/r/x@y\nCloses: https://b/1\n"
		  "Co-developed-by: C <c@d>\nSigned-off-by: C <c@d>\n",
		  "Fixes=0123456789ab (\"foo: bar\")|Cc=stable@x # 5.4|"
		  "Link=https://lore.kernel.org/r/x@y|Closes=https://b/1|"
		  "Co-developed-by=C <c@d>|Signed-off-by=C <c@d>" },
		/* any token in an all-trailer paragraph, continuation lines */
		{ "Text\n\nMy-Own-Tag: some\n  continued value\nAcked-by: D <d@e>\n",
		  "My-Own-Tag=some continued value|Acked-by=D <d@e>" },
		/* 25% rule: a git trailer and enough trailer lines */
		{ "Text\n\nsome prose line\nBug-Id: 42\nSigned-off-by: A <a@b>\n",
		  "Bug-Id=42|Signed-off-by=A <a@b>" },
		/* no git trailer: not a trailer block */
		{ "Text\n\nsome prose line\nmore prose\nBug-Id: 42\n", "" },
		/* the last paragraph only, but well-known ones anywhere */
		{ "Reported-by: R <r@s>\n\nNote: not a trailer\n\nThanks", 
		  "Reported-by=R <r@s>" },
		/* a reply: trailers between quotes, quotes ignored */
		{ "> Reviewed-by: Q <q@q>\n> code\n\nReviewed-by: R <r@r>\n"
		  "Tested-by: T <t@t>\n\n> more\n\nThanks,\nR",
		  "Reviewed-by=R <r@r>|Tested-by=T <t@t>" },
		/* empty values, "Token :" with a blank, comments */
		{ "Text\n\nAcked-by:\nTested-by : T <t@t>\n# comment\n",
		  "Tested-by=T <t@t>" },
		/* a URL is no trailer in prose, and "Key Word:" never */
		{ "Text\n\nsee https://x.y/z for this\nTwo Words: x\n", "" },
		{ "", "" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

		g_test_message("trailer case %u", i);
		pgate_ingest__body_fields(cases[i].body, 256, rec);
		assert_trailers(rec->trailers, cases[i].trailers);
	}
}

static void
test_trailers_bounded(void)
{
	GString *body = g_string_new("Text\n\n");
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

	for (int i = 0; i < 300; i++)
		g_string_append_printf(body, "Acked-by: P%d <p%d@x>\n", i, i);
	pgate_ingest__body_fields(body->str, 256, rec);
	g_assert_cmpuint(rec->trailers->len, ==, 256);
	g_assert_cmpstr(((PgateTrailer *)g_ptr_array_index(rec->trailers, 255))
			->value, ==, "P255 <p255@x>");
	g_string_free(body, TRUE);
}

static void
test_b4_lines(void)
{
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

	pgate_ingest__body_fields(
		"Cover text.\n\n---\nA (2):\n  x\n\n"
		"base-commit: 0123456789ABCDEF0123456789abcdef01234567\n"
		"base-commit: ffffffffffffffffffffffffffffffffffffffff\n"
		"change-id: 20240102-topic-1a2b3c4d5e6f\n"
		"change-id: 20240102-other\n"
		"prerequisite-patch-id: 1111111111111111111111111111111111111111\n"
		"prerequisite-patch-id: 2222222222222222222222222222222222222222\n"
		"prerequisite-patch-id: 1111111111111111111111111111111111111111\n"
		"prerequisite-change-id: 20231201-dep-abc:v3\n"
		"prerequisite-message-id: <20231201-dep-v3-0-abc@x.org>\n"
		"Depends-on: <dep@x>\n"
		"depends-on: https://patchwork.example/project/x/list/?series=7\n"
		"Based-on: <based@x>\n"
		"Based-on: 20200101.1@host more words\n"
		"> base-commit: quoted\n"
		"prerequisite-patch-id: \n"
		"\nBest regards,\n", 256, rec);
	g_assert_cmpstr(rec->base_commit, ==,
			"0123456789abcdef0123456789abcdef01234567");
	g_assert_cmpstr(rec->change_id, ==, "20240102-topic-1a2b3c4d5e6f");
	assert_list(rec->prereq_patch_ids,
		    "1111111111111111111111111111111111111111|"
		    "2222222222222222222222222222222222222222");
	assert_list(rec->prereq_change_ids, "20231201-dep-abc:v3");
	assert_list(rec->prereq_message_ids, "20231201-dep-v3-0-abc@x.org");
	assert_list(rec->depends_on, "dep@x|"
		    "https://patchwork.example/project/x/list/?series=7");
	assert_list(rec->based_on, "based@x|20200101.1@host");
	g_assert_cmpuint(rec->trailers->len, ==, 0);
}

static void
test_b4_base_commit_not_hex(void)
{
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

	pgate_ingest__body_fields("base-commit: not-hex\nbase-commit: abc\n"
				  "base-commit: cafe1234\n", 256, rec);
	g_assert_cmpstr(rec->base_commit, ==, "cafe1234");
}

static void
test_body_links(void)
{
	static const struct {
		const char *body;
		gboolean patch;
		const char *ids;
	} cases[] = {
		/* a cover: every URL with an "@" component, decoded */
		{ "Changes in v2:\n- fixed it\n\n"
		  "v1: https://lore.kernel.org/r/20240101-x-v1-0-abc@kernel.org\n"
		  "- Link to v1: https://lore.kernel.org/linux-i3c/"
		  "20231201.123-1-a%40b.org/T/#u.\n"
		  "(https://patch.msgid.link/p%2Fq@x.y)\n"
		  "See <http://lkml.kernel.org/r/old@host>, and "
		  "https://lore.kernel.org/all/?q=foo@bar\n"
		  "> v0: https://lore.kernel.org/r/quoted@x\n"
		  "https://lore.kernel.org/r/20240101-x-v1-0-abc@kernel.org/\n"
		  "no scheme: lore.kernel.org/r/nope@x and ftp://h/ftp@x\n",
		  FALSE,
		  "20240101-x-v1-0-abc@kernel.org|20231201.123-1-a@b.org|"
		  "p/q@x.y|old@host" },
		/* a patch: the commit message's Link: trailers name bug
		 * reports and discussions, not versions; the notes count */
		{ "Fix a thing.\n\n"
		  "Link: https://lore.kernel.org/r/bug-report@x\n"
		  "Signed-off-by: A <a@x>\n---\n"
		  "v2: https://lore.kernel.org/r/v1-patch@x\n"
		  " drivers/x.c | 2 +-\n", TRUE, "v1-patch@x" },
		{ "No URLs at all.\n", FALSE, "" },
		{ "https://\nhttps://lore.kernel.org/\nhttp://@/\n", FALSE, "" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

		g_test_message("links case %u", i);
		pgate_ingest__body_links(cases[i].body, cases[i].patch, 256, rec);
		/* which URL names which Message-ID; their kinds are
		 * /parse/body/link-kinds' */
		for (guint k = 0; k < rec->ref_msgids->len; k++)
			g_ptr_array_add(rec->linked_msgids,
					g_strdup(rec->ref_msgids->pdata[k]));
		assert_list(rec->linked_msgids, cases[i].ids);
	}
}

/* Which links are versions, dependencies, references (issue #27): one
 * case a rule, shaped like the linux-rtc covers that needed it. */
static void
test_link_kinds(void)
{
	static const struct {
		const char *what;
		const char *body;
		gboolean patch;
		const char *versions, *depends, *refs;
	} cases[] = {
		{ "footnotes cited without version words are references "
		  "(\"More PolarFire SoC Fixes for 5.18\" v3)",
		  "I kept series separate from [0] since that's tied to the "
		  "CONFIG_PM stuff\n& fixes a specific problem.\n\n"
		  "Changes since v1:\nAfter speaking with Krzysztof, I have "
		  "merged the rtc reference changes\n[1] with these fixes for "
		  "5.18. This was done since the relevant drivers\n\n"
		  "Changes since v2:\n- Wrapped text in dt-binding changes at 80 "
		  "cols\n\n"
		  "[0] https://lore.kernel.org/linux-riscv/20220408143646.3693104-"
		  "1-conor.dooley@microchip.com\n"
		  "[1] https://lore.kernel.org/linux-riscv/20220411072340.740981-"
		  "1-conor.dooley@microchip.com\n", FALSE, "", "",
		  "20220408143646.3693104-1-conor.dooley@microchip.com|"
		  "20220411072340.740981-1-conor.dooley@microchip.com" },
		{ "a footnote cited with a version word is a version "
		  "(\"rtc: microchip: Add driver for PolarFire SoC\" v5)",
		  "Hey all,\nThis is technically a v5 of [0], although a fair bit "
		  "of time has\npassed since then.\n\n"
		  "[0] https://lore.kernel.org/linux-rtc/20210512111133.1650740-"
		  "1-daire.mcnamara@microchip.com/\n", FALSE,
		  "20210512111133.1650740-1-daire.mcnamara@microchip.com", "", "" },
		{ "a URL alone reads the line above, past the list "
		  "(\"Turris Omnia MCU driver\" v11)",
		  "Links to previous cover letters (v1 to v10):\n"
		  "  https://patchwork.kernel.org/project/linux-soc/cover/"
		  "20230823161012.6986-1-kabel@kernel.org/\n"
		  "  https://patchwork.kernel.org/project/linux-soc/cover/"
		  "20230919103815.16818-1-kabel@kernel.org/\n", FALSE,
		  "20230823161012.6986-1-kabel@kernel.org|"
		  "20230919103815.16818-1-kabel@kernel.org", "", "" },
		{ "\"version N\" names a version (\"spacemit: introduce P1 "
		  "PMIC support\" v3)",
		  "Here is version 2 of this series:\n  https://lore.kernel.org/"
		  "lkml/20250613210150.1468845-1-elder@riscstar.com/\n", FALSE,
		  "20250613210150.1468845-1-elder@riscstar.com", "", "" },
		{ "b4's footer is a version; \"Depends on\" a dependency",
		  "Depends on https://lore.kernel.org/r/20240101-dep-v2-0-1@x.org\n\n"
		  "---\nChanges in v2:\n- EDITME: describe what is new.\n"
		  "- Link to v1: https://lore.kernel.org/r/20231201-topic-v1-0-"
		  "2@x.org\n\n---\nA (2):\n", FALSE,
		  "20231201-topic-v1-0-2@x.org", "20240101-dep-v2-0-1@x.org", "" },
		{ "dependency wording on the line above",
		  "This should be applied on top of other patch series:\n"
		  "https://lore.kernel.org/all/20230101.1-1-a@b.c/\n\n"
		  "Previous version:\nhttps://lore.kernel.org/all/20230201.1-1-a@b.c/\n",
		  FALSE, "20230201.1-1-a@b.c", "20230101.1-1-a@b.c", "" },
		{ "a URL in the changelog section is a version; after it, "
		  "a reference",
		  "v2:\n - dropped the DT part\n - https://lore.kernel.org/r/"
		  "old-1@x.org\n\nSee also the discussion in\n"
		  "https://lore.kernel.org/r/disc-1@x.org\n", FALSE,
		  "old-1@x.org", "", "disc-1@x.org" },
		{ "a URL ending a sentence of a changelog item is a reference "
		  "(\"Add RTC support for the Renesas RZ/V2H SoC\" v3)",
		  "Best regards,\nOvidiu\n\nv3:\n- Dropped all changes related "
		  "to \"max_user_freq\", as it was removed from\n  all drivers "
		  "by:\n  https://lore.kernel.org/all/20251101-max_user_freq-v1-"
		  "0-c9a274fd6883@bootlin.com/\n\nv2:\n- Updated bindings.\n\n"
		  "Ovidiu Panait (4):\n", FALSE, "", "",
		  "20251101-max_user_freq-v1-0-c9a274fd6883@bootlin.com" },
		{ "\"- link: URL\" in a changelog has no version wording "
		  "(\"rtc-pm8xxx: fix rtc alarm ...\" v4, patch 2)",
		  "Fix it.\n\nSigned-off-by: j <j@x>\n---\nChanges in v2:\n"
		  "- Switch to using regmap_update_bits().\n"
		  "- link: https://lore.kernel.org/lkml/20230202155448.6715-4-"
		  "johan+linaro@kernel.org/\n---\n drivers/rtc/rtc-pm8xxx.c | 2 +-\n",
		  TRUE, "", "", "20230202155448.6715-4-johan+linaro@kernel.org" },
		{ "b4's words in a patch's commit message are read, nothing "
		  "else there (\"rtc: rtc-pm8xxx: Retrigger RTC alarm\" v2)",
		  "If the alarm is triggered before the driver gets probed.\n\n"
		  "Changes in v2:\n*Adapt the V1 patch\n\nChanges in v1:\n"
		  "*During driver probe\nLink to v1:https://lore.kernel.org/"
		  "linux-rtc/20220321090514.4523-1-quic_jianbinz@quicinc.com/\n"
		  "v0: https://lore.kernel.org/r/not-read@x\n\n"
		  "Link: https://lore.kernel.org/r/bug@x\n"
		  "Signed-off-by: jianbinz <quic_jianbinz@quicinc.com>\n---\n"
		  " drivers/rtc/rtc-pm8xxx.c | 57 ++++\n", TRUE,
		  "20220321090514.4523-1-quic_jianbinz@quicinc.com", "", "" },
		{ "\"previous\" then a series word, a few words on; "
		  "\"revisits a series\" (\"Add virtio_rtc module\" v4, "
		  "\"ARM: PXA multiplatform support\" v2)",
		  "Important changes compared to the previous driver series [3] "
		  "are:\n- none\n\n"
		  "[3] https://lore.kernel.org/all/20231218073849.35294-1-peter."
		  "hilber@opensynergy.com/\n\n"
		  "This revisits a series I sent a few years ago:\n\n"
		  "https://lore.kernel.org/lkml/20191018154052.1276506-1-arnd@"
		  "arndb.de/\n\n"
		  "The previous maintainer did not like the driver, see\n"
		  "https://lore.kernel.org/r/nack-1@x.org\n", FALSE,
		  "20231218073849.35294-1-peter.hilber@opensynergy.com|"
		  "20191018154052.1276506-1-arnd@arndb.de", "", "nack-1@x.org" },
		{ "a kernel version is no series version",
		  "Fixes for v5.18: https://lore.kernel.org/r/fix-1@x.org\n"
		  "Seen on v6.1-rc1: https://lore.kernel.org/r/rep-1@x.org\n",
		  FALSE, "", "", "fix-1@x.org|rep-1@x.org" },
		{ "Patchew's Supersedes: <ID>; one ID keeps its first kind",
		  "Supersedes: <20200101120000.1-1-a@qemu.org>\n"
		  "See https://lore.kernel.org/r/20200101120000.1-1-a@qemu.org\n",
		  FALSE, "20200101120000.1-1-a@qemu.org", "", "" },
		{ "a patch: only the notes; \"vN:\" there is a version",
		  "Fix a thing.\n\nLink: https://lore.kernel.org/r/bug@x\n"
		  "Signed-off-by: A <a@x>\n---\n"
		  "v2: https://lore.kernel.org/r/v1-patch@x\n"
		  "Based on https://lore.kernel.org/r/base-1@x\n"
		  " drivers/x.c | 2 +-\n", TRUE, "v1-patch@x", "base-1@x", "" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

		g_test_message("link kinds: %s", cases[i].what);
		pgate_ingest__body_links(cases[i].body, cases[i].patch, 256, rec);
		assert_list(rec->linked_msgids, cases[i].versions);
		assert_list(rec->depends_on, cases[i].depends);
		assert_list(rec->ref_msgids, cases[i].refs);
	}
}

/* link_lines say which line decided, and are bounded */
static void
test_link_lines(void)
{
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();
	g_autoptr(GString) body = g_string_new(
		"I kept series separate from [0] since that's tied to PM\n\n"
		"[0] https://lore.kernel.org/r/a-1@x.org\n");

	pgate_ingest__body_links(body->str, FALSE, 256, rec);
	assert_list(rec->link_lines, "reference a-1@x.org I kept series "
		    "separate from [0] since that's tied to PM");
	g_ptr_array_set_size(rec->link_lines, 0);
	g_ptr_array_set_size(rec->ref_msgids, 0);
	/* a long line is cut at 200 bytes, on a character */
	g_string_assign(body, "v1: https://lore.kernel.org/r/b-1@x.org ");
	for (guint i = 0; i < 150; i++)
		g_string_append(body, "\xc3\xa9");
	pgate_ingest__body_links(body->str, FALSE, 256, rec);
	g_assert_cmpuint(rec->link_lines->len, ==, 1);
	g_assert_cmpuint(strlen(rec->link_lines->pdata[0]), <=,
			 200 + strlen("version b-1@x.org "));
	g_assert_true(g_utf8_validate(rec->link_lines->pdata[0], -1, NULL));
	/* and there are at most max_items of them */
	g_string_truncate(body, 0);
	for (guint i = 0; i < 20; i++)
		g_string_append_printf(body, "v1: https://lore.kernel.org/r/c-%u@x\n", i);
	g_ptr_array_set_size(rec->link_lines, 0);
	g_ptr_array_set_size(rec->linked_msgids, 0);
	pgate_ingest__body_links(body->str, FALSE, 5, rec);
	g_assert_cmpuint(rec->link_lines->len, ==, 5);
	g_assert_cmpuint(rec->linked_msgids->len, ==, 5);
}

/* More dependency syntaxes: QEMU's Based-on: <ID>, DPDK's Depends-on:
 * series-N ("title") and patch-N, kept as written (unresolved unless a
 * message or series answers to them). */
static void
test_dep_syntaxes(void)
{
	g_autoptr(PgateMessageRec) rec = pgate_message_rec_new();

	pgate_ingest__body_fields(
		"This series adds the x86 bits.\n\n"
		"Based-on: <20200401101010.1234-1-someone@redhat.com>\n"
		"Depends-on: series-31234 (\"net/mlx5: fix Rx queue\")\n"
		"Depends-on: patch-123456\n\n"
		"Alice (2):\n", 256, rec);
	assert_list(rec->based_on, "20200401101010.1234-1-someone@redhat.com");
	assert_list(rec->depends_on, "series-31234|patch-123456");
}

/* ---- the shared corpus: Patchwork's test mails ------------------------------ */

static void
test_pw_pull_requests(void)
{
	static const struct {
		const char *file;
		const char *url;
		gboolean diff;
	} cases[] = {
		{ "0001-git-pull-request.mbox",
		  "git://git.kernel.org/pub/scm/linux/kernel/git/benh/powerpc.git next",
		  FALSE },
		{ "0002-git-pull-request-wrapped.mbox",
		  "git://git.kernel.org/pub/scm/linux/kernel/git/benh/powerpc.git next",
		  FALSE },
		{ "0003-git-pull-request-with-diff.mbox",
		  "git://git.kernel.org/pub/scm/linux/kernel/git/tip/"
		  "linux-2.6-tip.git x86-fixes-for-linus", TRUE },
		{ "0004-git-pull-request-git+ssh.mbox",
		  "git+ssh://git.kernel.org/pub/scm/linux/kernel/git/benh/"
		  "powerpc.git next", FALSE },
		{ "0005-git-pull-request-ssh.mbox",
		  "ssh://git.kernel.org/pub/scm/linux/kernel/git/benh/powerpc.git next",
		  FALSE },
		{ "0006-git-pull-request-http.mbox",
		  "http://git.kernel.org/pub/scm/linux/kernel/git/benh/powerpc.git next",
		  FALSE },
		{ "0017-git-pull-request-git-2-14-3.mbox",
		  "git://git.kernel.org/pub/scm/linux/kernel/git/davem/net", FALSE },
		{ "0023-git-pull-request-newline-in-url.mbox",
		  "https://git.kernel.org/pub/scm/linux/kernel/git/matthias.bgg/"
		  "linux.git/ tags/v5.4-next-soc", FALSE },
		{ "0024-git-pull-request-trailing-space.mbox",
		  "git://git.kernel.org/pub/scm/linux/kernel/git/nsekhar/"
		  "linux-davinci.git tags/davinci-for-v5.6/soc", FALSE },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *rel = g_build_filename("patchwork", "mail",
							cases[i].file, NULL);
		g_autoptr(PgateMail) m = parse_corpus(rel);

		if (m == NULL)
			return;
		g_test_message("%s", cases[i].file);
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PULL);
		g_assert_cmpstr(m->rec->pull_url, ==, cases[i].url);
		g_assert_cmpint(m->diff != NULL, ==, cases[i].diff);
		g_assert_cmpuint(strlen(m->body), >, 200);
	}
}

static void
test_pw_0001_fields(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0001-git-pull-request.mbox");

	if (m == NULL)
		return;
	g_assert_cmpstr(m->rec->msgid, ==, "1287719462.2198.37.camel@pasglop");
	g_assert_cmpstr(m->rec->subject, ==,
			"[git pull] Please pull powerpc.git next branch");
	g_assert_cmpstr(m->rec->name, ==,
			"Please pull powerpc.git next branch");
	g_assert_cmpstr(m->rec->from_name, ==, "Benjamin Herrenschmidt");
	g_assert_cmpstr(m->rec->from_email, ==, "benh@kernel.crashing.org");
	g_assert_cmpint(m->rec->date, ==, 1287719462);
	g_assert_cmpint(m->rec->tz_minutes, ==, 660);
	g_assert_cmpstr(m->rec->list_id, ==, "cbe-oss-dev.ozlabs.org");
	assert_list(m->rec->to, "Linus Torvalds <torvalds@linux-foundation.org>");
	assert_list(m->rec->cc, "linuxppc-dev list <linuxppc-dev@ozlabs.org>|"
		    "Andrew Morton <akpm@linux-foundation.org>|"
		    "Linux Kernel list <linux-kernel@vger.kernel.org>");
	/* Mailman's "Precedence: list" does not make it automated */
	g_assert_cmpuint(m->rec->flags, ==, 0);
	g_assert_true(g_str_has_prefix(m->body, "Hi Linus !\n\nHere's powerpc's"));
}

static void
test_pw_0003_diff(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0003-git-pull-request-with-diff.mbox");

	if (m == NULL)
		return;
	g_assert_true(g_str_has_prefix(m->diff,
				       "diff --git a/arch/x86/include/asm/smp.h"));
	g_assert_cmpstr(m->rec->patch_id, ==,
			"40c98ae3a2ac887309e1dd50f8740f8d60980ffb");
	assert_list(m->rec->diff_files, "arch/x86/include/asm/smp.h|"
		    "arch/x86/kernel/acpi/sleep.c|arch/x86/kernel/cpu/mtrr/main.c");
}

static void
test_pw_renames(void)
{
	static const char *const files[] = {
		"0008-git-rename.mbox", "0009-git-rename-with-diff.mbox",
		"0016-no-subject.mbox",
	};

	for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *rel = g_build_filename("patchwork", "mail",
							files[i], NULL);
		g_autoptr(PgateMail) m = parse_corpus(rel);

		if (m == NULL)
			return;
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
		g_assert_cmpuint(count_of(m->diff, "rename from"), ==, 2);
		g_assert_cmpuint(count_of(m->diff, "rename to"), ==, 2);
		g_assert_cmpuint(count_of(m->diff, "\n@@ "), ==, (i == 1 ? 1 : 0));
		g_assert_cmpuint(strlen(m->body), >, 0);
		/* the same diff but for 0009's hunk, where git ends its
		 * first patch-id (a hunk without ---/+++) */
		g_assert_cmpstr(m->rec->patch_id, ==, i == 1 ?
				"c6d15a7c95b26b4a1bc4bd17e9c237756f8a7e47" :
				"c21c4c7396ce25c3ecf7cc6f1d7a7e96d577c4e4");
		g_assert_cmpuint(m->rec->diff_files->len, ==, 4);
		assert_trailers(m->rec->trailers,
				"Signed-off-by=\"Yann E. MORIN\" "
				"<yann.morin.1998@free.fr>");
	}
}

static void
test_pw_0009_hunk(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0009-git-rename-with-diff.mbox");

	if (m == NULL)
		return;
	g_assert_nonnull(strstr(m->diff, "\n-a\n+b\n"));
	g_assert_true(m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
	g_assert_cmpuint(m->rec->number, ==, 1);
	g_assert_cmpuint(m->rec->total, ==, 11);
	g_assert_cmpstr(m->rec->name, ==,
			"package/rpi-userland: rename patches");
}

static void
test_pw_0016_no_subject(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0016-no-subject.mbox");

	if (m == NULL)
		return;
	g_assert_cmpstr(m->rec->subject, ==, "");
	g_assert_cmpstr(m->rec->name, ==, "");
	g_assert_cmpstr(m->rec->msgid, ==, "ABC@DEF");
	g_assert_nonnull(m->diff);
	g_assert_cmpuint(strlen(m->body), >, 0);
}

static void
test_pw_0007_cvs(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0007-cvs-format-diff.mbox");

	if (m == NULL)
		return;
	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
	g_assert_true(g_str_has_prefix(m->diff, "Index"));
	g_assert_cmpuint(count_of(m->diff, "Index: "), ==, 3);
	assert_list(m->rec->diff_files, "elf-bfd.h|elflink.c|elfxx-mips.c");
	g_assert_cmpstr(m->rec->patch_id, ==,
			"cea6aeeb31b360ee706be6a261b4dc4b3a19a72b");
	g_assert_cmpstr(m->rec->list_id, ==, "linux-mips");
}

static void
test_pw_0010_charset(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0010-invalid-charset.mbox");

	if (m == NULL)
		return;
	g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
	g_assert_nonnull(m->diff);
	g_assert_true(g_str_has_prefix(m->body, "This patch, relative to a tree with\n"));
	g_assert_true(g_utf8_validate(m->body, -1, NULL));
	g_assert_cmpstr(m->rec->patch_id, ==,
			"d746249e3c3cdb889061aac7901825ec4c4ec800");
}

static void
test_pw_0011_no_newline(void)
{
	g_autoptr(PgateMail) m = parse_corpus(
		"patchwork/mail/0011-no-newline-at-end-of-file.mbox");

	if (m == NULL)
		return;
	g_assert_true(g_str_has_prefix(m->diff,
		"diff --git a/tools/testing/selftests/powerpc/Makefile"));
	g_assert_true(g_str_has_suffix(m->diff,
				       "\\ No newline at end of file\n"));
	g_assert_cmpuint(count_of(m->diff, "\\ No newline at end of file"),
			 ==, 2);
	g_assert_null(strstr(m->body, "\\ No newline"));
	g_assert_cmpstr(m->rec->patch_id, ==,
			"7dfa3e1959583f9afb5d9265b10db66c82058d91");
	g_assert_cmpuint(m->rec->version, ==, 3);
	g_assert_cmpuint(m->rec->number, ==, 5);
	g_assert_cmpuint(m->rec->total, ==, 5);
}

static void
test_pw_headers_utf8(void)
{
	static const struct {
		const char *file;
		const char *subject;
	} cases[] = {
		{ "0012-invalid-header-char.mbox",
		  "[dpdk-dev] [PATCH] kni: fix compilation error when debug enabled" },
		{ "0013-with-utf8-body.mbox",
		  "MAINTAINERS: Update entry for BCM5301X ARM" },
		{ "0014-with-unencoded-utf8-headers.mbox",
		  "MAINTAINERS: Update entry for BCM5301X ARM to include "
		  "Rafał Miłecki" },
		{ "0015-with-invalid-utf8-headers.mbox",
		  "MAINTAINERS: Update entry for BCM5301X ARM" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *rel = g_build_filename("patchwork", "mail",
							cases[i].file, NULL);
		g_autoptr(PgateMail) m = parse_corpus(rel);

		if (m == NULL)
			return;
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
		g_assert_cmpstr(m->rec->subject, ==, cases[i].subject);
		g_assert_nonnull(m->rec->patch_id);
		if (i > 0)
			g_assert_cmpstr(m->rec->from_name, ==, "Rafał Miłecki");
	}
}

static void
test_pw_multipart(void)
{
	g_autoptr(PgateMail) p = parse_corpus(
		"patchwork/mail/0019-multipart-patch.mbox");
	g_autoptr(PgateMail) c = parse_corpus(
		"patchwork/mail/0020-multipart-comment.mbox");

	if (p == NULL || c == NULL)
		return;
	g_assert_cmpint(p->rec->kind, ==, PGATE_MSG_KIND_PATCH);
	g_assert_nonnull(p->diff);
	g_assert_cmpuint(strlen(p->body), >, 0);
	g_assert_null(strstr(p->diff, "<div"));
	g_assert_null(strstr(p->body, "<div"));
	g_assert_cmpint(c->rec->kind, ==, PGATE_MSG_KIND_REPLY);
	g_assert_null(c->diff);
	g_assert_null(strstr(c->body, "<div"));
	g_assert_cmpstr(c->body, ==,
			"Yup, this looks sensible to me. Replying from Outlook's "
			"awful HTML editor to get\na sample comment to test with."
			"\n\nStephen");
	g_assert_cmpstr(c->rec->in_reply_to, ==,
			"20180620122142.9917-1-yuri.volchkov@gmail.com");
}

static void
test_pw_extended_headers_only(void)
{
	g_autoptr(PgateMail) e = parse_corpus(
		"patchwork/mail/0021-git-empty-new-file.mbox");
	g_autoptr(PgateMail) mode = parse_corpus(
		"patchwork/mail/0022-git-mode-change.mbox");

	if (e == NULL || mode == NULL)
		return;
	g_assert_cmpstr(e->diff, ==, "diff --git a/banana b/banana\n"
			"new file mode 100644\nindex 000000000000..e69de29bb2d1\n");
	g_assert_cmpuint(strlen(e->body), >, 0);
	g_assert_cmpstr(mode->diff, ==,
			"diff --git a/scripts/kconfig/nconf-cfg.sh "
			"b/scripts/kconfig/nconf-cfg.sh\n"
			"old mode 100644\nnew mode 100755\n");
	g_assert_cmpuint(strlen(mode->body), >, 0);
	g_assert_cmpstr(mode->rec->patch_id, ==,
			"cbdd0fe9b3dc09034acb8607ecb5bf1b56fc5bd5");
}

static void
test_pw_binary(void)
{
	static const struct {
		const char *file;
		const char *patch_id;
		const char *files;
	} cases[] = {
		{ "0025-git-add-binary-file.mbox",
		  "ce456b0f503b28d8750fb8a2ff613d351b069be3", "pixel.bmp" },
		{ "0026-git-add-mixed-binary-text-files.mbox",
		  "a5059ff0edfbc00a9ff007a8f15cbb8e6848d129", "pixel.bmp|quit.sh" },
		{ "0027-git-modify-binary-file.mbox",
		  "72023c34c7340567443b9a1da0c3b6629446b575", "pixel.bmp" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *rel = g_build_filename("patchwork", "mail",
							cases[i].file, NULL);
		g_autoptr(PgateMail) m = parse_corpus(rel);

		if (m == NULL)
			return;
		g_assert_cmpint(m->rec->kind, ==, PGATE_MSG_KIND_PATCH);
		g_assert_true(m->rec->flags & PGATE_MSG_FLAG_BINARY_PATCH);
		g_assert_true(g_str_has_prefix(m->diff,
					       "diff --git pixel.bmp pixel.bmp"));
		g_assert_nonnull(strstr(m->diff, "GIT binary patch"));
		g_assert_nonnull(strstr(m->diff, "\nliteral 142\n"));
		g_assert_nonnull(strstr(m->diff, "\nliteral 0\n"));
		g_assert_null(strstr(m->diff, "\n-- \n"));
		g_assert_cmpstr(m->rec->patch_id, ==, cases[i].patch_id);
		assert_list(m->rec->diff_files, cases[i].files);
		if (i == 1) {
			g_assert_nonnull(strstr(m->diff,
				"diff --git quit.sh quit.sh\nnew file mode 100644\n"
				"index 0000000..f5f929a\n--- /dev/null\n"));
			g_assert_true(g_str_has_suffix(m->diff, "+exit 1\n"));
		}
	}
}

/* ---- the shared corpus: Patchwork's fuzz files -------------------------------- */

static void
test_pw_fuzz(void)
{
	static const struct {
		const char *file;
		PgateMsgKind kind;
		PgateMsgFlags flags;   /* checked bits: SYNTHETIC_ID, BAD_DATE */
	} cases[] = {
		{ "base64err.mbox", PGATE_MSG_KIND_PATCH, 0 },
		{ "charset.mbox", PGATE_MSG_KIND_PATCH, 0 },
		{ "codec-null.mbox", PGATE_MSG_KIND_PATCH, 0 },
		{ "date-oserror.mbox", PGATE_MSG_KIND_PATCH,
		  PGATE_MSG_FLAG_SYNTHETIC_ID | PGATE_MSG_FLAG_BAD_DATE },
		{ "date-too-long.mbox", PGATE_MSG_KIND_OTHER, 0 },
		{ "date.mbox", PGATE_MSG_KIND_OTHER, 0 },
		{ "dateheader.mbox", PGATE_MSG_KIND_OTHER,
		  PGATE_MSG_FLAG_SYNTHETIC_ID },
		{ "email-len.mbox", PGATE_MSG_KIND_PATCH,
		  PGATE_MSG_FLAG_SYNTHETIC_ID | PGATE_MSG_FLAG_BAD_DATE },
		{ "msgid-len.mbox", PGATE_MSG_KIND_PATCH, 0 },
		{ "msgid-len2.mbox", PGATE_MSG_KIND_PATCH,
		  PGATE_MSG_FLAG_SYNTHETIC_ID },
		{ "msgidheader.mbox", PGATE_MSG_KIND_PATCH, 0 },
		{ "name-len.mbox", PGATE_MSG_KIND_OTHER,
		  PGATE_MSG_FLAG_SYNTHETIC_ID },
		{ "refshdr.mbox", PGATE_MSG_KIND_OTHER, PGATE_MSG_FLAG_SYNTHETIC_ID },
		{ "unknown-encoding.mbox", PGATE_MSG_KIND_OTHER, 0 },
		{ "value2.mbox", PGATE_MSG_KIND_REJECTED,
		  PGATE_MSG_FLAG_SYNTHETIC_ID | PGATE_MSG_FLAG_BAD_DATE },
		{ "x-face.mbox", PGATE_MSG_KIND_OTHER, 0 },
		{ "year-out-of-range.mbox", PGATE_MSG_KIND_PATCH,
		  PGATE_MSG_FLAG_SYNTHETIC_ID | PGATE_MSG_FLAG_BAD_DATE },
	};
	const PgateMsgFlags checked = PGATE_MSG_FLAG_SYNTHETIC_ID |
				      PGATE_MSG_FLAG_BAD_DATE;

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *rel = g_build_filename("patchwork", "fuzz",
							cases[i].file, NULL);
		g_autoptr(PgateMail) m = parse_corpus(rel);
		g_autoptr(PgateMail) again = NULL;
		g_autofree char *d1 = NULL;
		g_autofree char *d2 = NULL;

		if (m == NULL)
			return;
		g_test_message("%s", cases[i].file);
		g_assert_cmpint(m->rec->kind, ==, cases[i].kind);
		g_assert_cmpuint(m->rec->flags & checked, ==, cases[i].flags);
		g_assert_nonnull(m->rec->msgid);
		g_assert_cmpuint(strlen(m->rec->msgid), <=, PGATE_INGEST_MAX_MSGID);
		g_assert_false(hash_is_zero(m->rec->content_hash));
		g_assert_true(g_utf8_validate(m->body, -1, NULL));
		if (m->rec->kind == PGATE_MSG_KIND_REJECTED)
			g_assert_cmpstr(m->rec->reject_reason, ==,
					"not a mail: binary data in the header "
					"block (31 NUL bytes)");
		else
			g_assert_null(m->rec->reject_reason);
		if (m->rec->from_name != NULL)
			g_assert_cmpuint(strlen(m->rec->from_name), <=,
					 PGATE_INGEST_MAX_ADDRESS);
		/* the same bytes give the same record */
		again = parse_corpus(rel);
		d1 = rec_digest(m);
		d2 = rec_digest(again);
		g_assert_cmpstr(d1, ==, d2);
	}
}

/* ---- the shared corpus: Patchwork's series fixtures ---------------------------- */

/* Each message as kind (two letters), version, number/total.  With a
 * fresh database per file Patchwork finds the same covers and patches
 * (../shared/docs/patchwork.md, Part 1c: [covers, patches, other] per fixture). */
static const struct {
	const char *file;
	const char *messages;
} series_cases[] = {
		{ "base-cover-letter.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2" },
		{ "base-deep-threaded.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2" },
		{ "base-different-versions.mbox",
		  "co3:0/4 pa1:1/4 pa1:2/4 pa1:3/4 pa1:4/4" },
		{ "base-extra-patches.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 pa1:3/2" },
		{ "base-incomplete.mbox",
		  "co1:0/2 pa1:1/2" },
		{ "base-no-cover-letter.mbox",
		  "pa1:1/2 pa1:2/2" },
		{ "base-no-references-no-cover.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2" },
		{ "base-no-references.mbox",
		  "pa2:1/2 pa2:2/2" },
		{ "base-out-of-order.mbox",
		  "pa1:2/2 pa1:1/2 co1:0/2" },
		{ "base-single-patch.mbox",
		  "pa1:0/0" },
		{ "bugs-mixed-versions.mbox",
		  "pa1:1/2 pa2:2/2" },
		{ "bugs-multiple-content-types.mbox",
		  "pa1:0/0 re1:0/0" },
		{ "bugs-multiple-references.mbox",
		  "co2:0/4 pa2:1/4 pa2:2/4 pa2:3/4 pa2:4/4" },
		{ "bugs-nocover-noversion.mbox",
		  "pa1:1/2 pa1:2/2 pa1:1/2 pa1:2/2" },
		{ "bugs-nocover.mbox",
		  "pa1:1/2 pa1:2/2 pa2:1/2 pa2:2/2" },
		{ "bugs-spamming.mbox",
		  "pa2:1/4 pa2:1/4 pa2:1/4" },
		{ "bugs-unnumbered.mbox",
		  "co1:0/2 pa1:1/2 pa1:0/0" },
		{ "mercurial-cover-letter.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2" },
		{ "mercurial-no-cover-letter.mbox",
		  "pa1:1/2 pa1:2/2" },
		{ "revision-basic.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 co2:0/2 pa2:1/2 pa2:2/2" },
		{ "revision-no-cover-letter.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 pa2:1/2 pa2:2/2" },
		{ "revision-out-of-order.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 pa2:2/2 pa2:1/2 co2:0/2" },
		{ "revision-threaded-to-cover.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 co2:0/2 pa2:1/2 pa2:2/2" },
		{ "revision-threaded-to-patch.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 co2:0/2 pa2:2/2 pa2:1/2" },
		{ "revision-threaded-to-single-patch.mbox",
		  "pa1:0/0 pa2:0/0" },
		{ "revision-unlabeled-noreferences.mbox",
		  "pa2:1/2 pa2:2/2 pa2:1/2 pa2:2/2" },
		{ "revision-unlabeled.mbox",
		  "co1:0/2 pa1:1/2 pa1:2/2 co1:0/2 pa1:2/2 pa1:1/2" },};

static GPtrArray *
read_corpus_mbox(const char *rel)
{
	g_autofree char *path = g_build_filename(corpus_dir(), rel, NULL);
	g_autoptr(PgateMboxReader) r = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *msgs;
	gboolean truncated;
	GBytes *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	g_assert_cmpint(fd, >=, 0);
	r = pgate_mbox_reader_new(fd, PGATE_MBOX_MBOXRD, 64u << 20);
	msgs = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	while (pgate_mbox_reader_next(r, &b, &truncated, &error))
		g_ptr_array_add(msgs, b);
	g_assert_no_error(error);
	close(fd);
	return msgs;
}

static void
test_pw_series(void)
{
	if (corpus_dir() == NULL) {
		g_test_skip("no corpus: set PGATE_TEST_CORPUS to ../shared/corpus");
		return;
	}
	for (guint i = 0; i < G_N_ELEMENTS(series_cases); i++) {
		g_autofree char *rel = g_build_filename(
			"patchwork", "series", series_cases[i].file, NULL);
		g_autoptr(GPtrArray) msgs = read_corpus_mbox(rel);
		g_autoptr(GString) got = g_string_new(NULL);

		for (guint k = 0; k < msgs->len; k++) {
			gsize len;
			const char *d = g_bytes_get_data(
				g_ptr_array_index(msgs, k), &len);
			g_autoptr(PgateMail) m = pgate_mail_parse(d, len, NULL);

			g_string_append_printf(
				got, "%s%.2s%u:%u/%u", k > 0 ? " " : "",
				pgate_msg_kind_to_string(m->rec->kind),
				m->rec->version, m->rec->number,
				m->rec->total);
		}
		g_assert_cmpstr(got->str, ==, series_cases[i].messages);
	}
}

/* ---- the shared corpus: a real list archive ---------------------------------- */

static void
test_i3c_archive(void)
{
	g_autoptr(GPtrArray) msgs = NULL;
	guint kinds[PGATE_MSG_KIND_REJECTED + 1] = { 0 };
	guint synthetic = 0, bad_date = 0, with_trailers = 0, base = 0;

	if (corpus_dir() == NULL) {
		g_test_skip("no corpus: set PGATE_TEST_CORPUS to ../shared/corpus");
		return;
	}
	msgs = read_corpus_mbox("linux-i3c.mbox");
	g_assert_cmpuint(msgs->len, ==, 516);
	for (guint i = 0; i < msgs->len; i++) {
		gsize len;
		const char *d = g_bytes_get_data(g_ptr_array_index(msgs, i), &len);
		g_autoptr(PgateMail) m = pgate_mail_parse(d, len, NULL);
		g_autoptr(PgateMail) again = pgate_mail_parse(d, len, NULL);
		g_autofree char *d1 = rec_digest(m);
		g_autofree char *d2 = rec_digest(again);

		g_assert_cmpstr(d1, ==, d2);
		kinds[m->rec->kind]++;
		synthetic += !!(m->rec->flags & PGATE_MSG_FLAG_SYNTHETIC_ID);
		bad_date += !!(m->rec->flags & PGATE_MSG_FLAG_BAD_DATE);
		with_trailers += m->rec->trailers->len > 0;
		base += m->rec->base_commit != NULL;
		if (m->rec->kind == PGATE_MSG_KIND_PATCH) {
			g_assert_nonnull(m->rec->patch_id);
			g_assert_cmpuint(m->rec->diff_files->len, >, 0);
		}
	}
	g_test_message("other %u patch %u cover %u reply %u pull %u rejected %u "
		       "synthetic %u bad-date %u trailers %u base %u",
		       kinds[0], kinds[1], kinds[2], kinds[3], kinds[4],
		       kinds[5], synthetic, bad_date, with_trailers, base);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_REJECTED], ==, 0);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_PATCH], ==, I3C_PATCHES);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_COVER], ==, I3C_COVERS);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_REPLY], ==, I3C_REPLIES);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_OTHER], ==, I3C_OTHER);
	g_assert_cmpuint(kinds[PGATE_MSG_KIND_PULL], ==, I3C_PULLS);
	g_assert_cmpuint(synthetic, ==, 0);
	g_assert_cmpuint(bad_date, ==, 0);
	g_assert_cmpuint(with_trailers, ==, I3C_WITH_TRAILERS);
}

/* ---- pgate_mail_reply_own_text (issue #41, finding 10) ----------------
 *
 * The command must stand in the approver's own text part: the first
 * text/plain part that is no attachment and not in an attached message,
 * else the first text/html one rendered to text; never a later part.
 */

#define REPLY_HDR \
	"From: Maintainer <maint@example.org>\n" \
	"To: list@example.org\n" \
	"Subject: Re: [PATCH] x\n" \
	"Date: Wed, 4 Dec 2024 10:00:00 +0000\n" \
	"Message-ID: <reply@example.org>\n" \
	"In-Reply-To: <patch@example.net>\n" \
	"MIME-Version: 1.0\n"

/* The original that the maintainer attaches or forwards. */
#define ORIGINAL \
	"From: Mallory <mallory@example.net>\n" \
	"Subject: [PATCH] x\n" \
	"Message-ID: <patch@example.net>\n" \
	"\n" \
	"patchgate: approve\n"

static char *
reply_own(const char *raw)
{
	g_autoptr(GError) error = NULL;
	char *own = pgate_mail_reply_own_text(raw, strlen(raw), NULL, 2000,
					      &error);

	g_assert_no_error(error);
	g_assert_nonnull(own);
	return own;
}

/* Whether the reply's own text holds the keyword line, as the pipeline's
 * keyword_in() reads it. */
static gboolean
reply_approves(const char *raw)
{
	g_autofree char *own = reply_own(raw);
	g_auto(GStrv) lines = g_strsplit(own, "\n", -1);

	for (guint i = 0; lines[i] != NULL; i++)
		if (g_ascii_strcasecmp(lines[i], "patchgate: approve") == 0)
			return TRUE;
	return FALSE;
}

/* A multipart/mixed reply of @parts (each with its header). */
static char *
mixed(const char *type, const char *parts)
{
	return g_strdup_printf(REPLY_HDR
			       "Content-Type: multipart/%s; boundary=\"b1\"\n"
			       "\n"
			       "preamble: patchgate: approve\n"
			       "%s"
			       "--b1--\n", type, parts);
}

static void
test_reply_own_attached_original(void)
{
	g_autofree char *attached = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n"
		"--b1\nContent-Type: message/rfc822\n"
		"Content-Disposition: attachment; filename=\"original.eml\"\n\n"
		ORIGINAL);
	/* forwarded inline as a MIME part: still another message */
	g_autofree char *inline_msg = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n"
		"--b1\nContent-Type: message/rfc822\n"
		"Content-Disposition: inline\n\n" ORIGINAL);
	/* the attached message first, the reply's text after it */
	g_autofree char *first = mixed("mixed",
		"--b1\nContent-Type: message/rfc822\n\n" ORIGINAL
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n");
	/* the approval in the reply's own text, the original attached */
	g_autofree char *own = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n"
		"--b1\nContent-Type: message/rfc822\n\n" ORIGINAL);
	g_autoptr(PgateMail) mail = parse_str(attached);

	/* the body pgate_mail_parse() makes has the original's words: what
	 * the trust decision read before */
	g_assert_nonnull(strstr(mail->body, "patchgate: approve"));
	g_assert_false(reply_approves(attached));
	g_assert_false(reply_approves(inline_msg));
	g_assert_false(reply_approves(first));
	g_assert_true(reply_approves(own));
}

static void
test_reply_own_text_attachment(void)
{
	g_autofree char *attached = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n"
		"--b1\nContent-Type: text/plain; charset=utf-8\n"
		"Content-Disposition: attachment; filename=\"original.txt\"\n\n"
		"patchgate: approve\n");
	/* Apple Mail marks attachments it can show inline, with a name */
	g_autofree char *named = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n"
		"--b1\nContent-Type: text/plain; name=\"original.txt\"\n"
		"Content-Disposition: inline; filename=\"original.txt\"\n\n"
		"patchgate: approve\n");
	/* the attachment first: the text after it is the reply's */
	g_autofree char *before = mixed("mixed",
		"--b1\nContent-Type: text/plain\n"
		"Content-Disposition: attachment\n\npatchgate: approve\n"
		"--b1\nContent-Type: text/plain\n\nThis is not approved.\n");
	/* an unknown disposition is an attachment (RFC 2183 2.8) */
	g_autofree char *odd = mixed("mixed",
		"--b1\nContent-Type: text/plain\n"
		"Content-Disposition: x-unknown\n\npatchgate: approve\n");
	/* the reply's own, above an attachment */
	g_autofree char *own = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nThanks!\npatchgate: approve\n"
		"--b1\nContent-Type: text/plain\n"
		"Content-Disposition: attachment; filename=\"log.txt\"\n\n"
		"not approved\n");
	/* a whole message that is an attachment has no own text */
	static const char whole[] = REPLY_HDR
		"Content-Type: text/plain\n"
		"Content-Disposition: attachment; filename=\"a.txt\"\n\n"
		"patchgate: approve\n";

	g_assert_false(reply_approves(attached));
	g_assert_false(reply_approves(named));
	g_assert_false(reply_approves(before));
	g_assert_false(reply_approves(odd));
	g_assert_true(reply_approves(own));
	g_assert_false(reply_approves(whole));
	g_free(reply_own(before));
}

/* Apple Mail: text, an inline picture, more text, each a part of its
 * own.  Only the first text part counts. */
static void
test_reply_own_second_part(void)
{
	g_autofree char *apple = mixed("mixed",
		"--b1\nContent-Type: text/plain; charset=us-ascii\n\n"
		"See the picture.\n"
		"--b1\nContent-Type: image/png; name=\"x.png\"\n"
		"Content-Disposition: inline; filename=\"x.png\"\n"
		"Content-Transfer-Encoding: base64\n\niVBORw0KGgo=\n"
		"--b1\nContent-Type: text/plain; charset=us-ascii\n\n"
		"patchgate: approve\n");
	g_autofree char *second = mixed("mixed",
		"--b1\nContent-Type: text/plain\n\nNot yet.\n"
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n");
	g_autofree char *html_then_plain = mixed("mixed",
		"--b1\nContent-Type: text/html\n\n<p>Not yet.</p>\n"
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n");
	/* parts that are no text before the first text part are passed */
	g_autofree char *picture_first = mixed("related",
		"--b1\nContent-Type: image/png\n"
		"Content-Transfer-Encoding: base64\n\niVBORw0KGgo=\n"
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n");

	g_assert_false(reply_approves(apple));
	g_assert_false(reply_approves(second));
	g_assert_false(reply_approves(html_then_plain));
	g_assert_true(reply_approves(picture_first));
}

static void
test_reply_own_alternative(void)
{
	g_autofree char *plain_no = mixed("alternative",
		"--b1\nContent-Type: text/plain\n\nNot yet.\n"
		"--b1\nContent-Type: text/html\n\n"
		"<p>Not yet.</p><p>patchgate: approve</p>\n");
	/* the plain alternative is read wherever it stands */
	g_autofree char *plain_second = mixed("alternative",
		"--b1\nContent-Type: text/html\n\n<p>Not yet.</p>\n"
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n");
	/* an alternative inside mixed, an attachment after it */
	g_autofree char *nested = mixed("mixed",
		"--b1\nContent-Type: multipart/alternative; boundary=\"b2\"\n\n"
		"--b2\nContent-Type: text/plain\n\nThanks.\npatchgate: approve\n"
		"--b2\nContent-Type: text/html\n\n<p>Thanks.</p>\n"
		"--b2--\n"
		"--b1\nContent-Type: message/rfc822\n\n" ORIGINAL);
	/* HTML only inside an alternative: read rendered */
	g_autofree char *html_only = mixed("alternative",
		"--b1\nContent-Type: application/rtf\n\n{\\rtf1 patchgate: approve}\n"
		"--b1\nContent-Type: text/html\n\n"
		"<div>Thanks.</div><div>patchgate: approve</div>\n");

	g_assert_false(reply_approves(plain_no));
	g_assert_true(reply_approves(plain_second));
	g_assert_true(reply_approves(nested));
	g_assert_true(reply_approves(html_only));
}

static void
test_reply_own_signed(void)
{
	g_autofree char *signed_ok = mixed("signed; micalg=pgp-sha256; "
					   "protocol=\"application/pgp-signature\"",
		"--b1\nContent-Type: text/plain\n\npatchgate: approve\n"
		"--b1\nContent-Type: application/pgp-signature; name=\"signature.asc\"\n\n"
		"-----BEGIN PGP SIGNATURE-----\nxx\n-----END PGP SIGNATURE-----\n");
	/* a signed reply that attaches the original */
	g_autofree char *signed_attached = mixed("signed; micalg=pgp-sha256; "
						 "protocol=\"application/pgp-signature\"",
		"--b1\nContent-Type: multipart/mixed; boundary=\"b2\"\n\n"
		"--b2\nContent-Type: text/plain\n\nThis is not approved.\n"
		"--b2\nContent-Type: message/rfc822\n\n" ORIGINAL
		"--b2--\n"
		"--b1\nContent-Type: application/pgp-signature\n\nxx\n");
	/* inline PGP: the armour lines are no quote */
	static const char inline_pgp[] = REPLY_HDR
		"Content-Type: text/plain\n\n"
		"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n"
		"patchgate: approve\n"
		"-----BEGIN PGP SIGNATURE-----\nxx\n-----END PGP SIGNATURE-----\n";
	/* encrypted: nothing to read */
	g_autofree char *encrypted = mixed("encrypted; "
					   "protocol=\"application/pgp-encrypted\"",
		"--b1\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n"
		"--b1\nContent-Type: application/octet-stream\n\n"
		"patchgate: approve\n");

	g_assert_true(reply_approves(signed_ok));
	g_assert_false(reply_approves(signed_attached));
	g_assert_true(reply_approves(inline_pgp));
	g_assert_false(reply_approves(encrypted));
}

/* An HTML-only reply: @body as its one text/html part. */
static gboolean
html_approves(const char *body)
{
	g_autofree char *raw = g_strdup_printf(
		REPLY_HDR "Content-Type: text/html; charset=utf-8\n\n%s\n", body);

	return reply_approves(raw);
}

static void
test_reply_own_html(void)
{
	/* the keyword quoted, in a <blockquote>: Apple Mail, Thunderbird */
	g_assert_false(html_approves(
		"<html><body><div>Not yet.</div>"
		"<blockquote type=\"cite\"><div>patchgate: approve</div>"
		"</blockquote></body></html>"));
	g_assert_false(html_approves(
		"<blockquote><blockquote>x</blockquote><br>patchgate: approve"
		"</blockquote>"));
	/* a blockquote that is never closed: nothing after it counts */
	g_assert_false(html_approves(
		"Not yet.<blockquote>quoted<br>patchgate: approve<br>"));
	/* the keyword in its own text, above the quote */
	g_assert_true(html_approves(
		"<html><body><div>Looks good.</div><div>patchgate: approve</div>"
		"<blockquote type=\"cite\">Not yet</blockquote></body></html>"));
	g_assert_true(html_approves(
		"<p>x</p><blockquote>quoted</blockquote><p>patchgate: approve</p>"));
	/* Gmail's quote container, without a blockquote */
	g_assert_false(html_approves(
		"<div dir=\"ltr\">Not yet.</div><br><div class=\"gmail_quote\">"
		"<div class=\"gmail_attr\">Mallory said<br></div>"
		"<div>patchgate: approve</div></div>"));
	/* Thunderbird's attribution, Outlook's From/Sent block */
	g_assert_false(html_approves(
		"<p>Not yet.</p><div class=\"moz-cite-prefix\">x<br></div>"
		"<div>patchgate: approve</div>"));
	g_assert_false(html_approves(
		"<div>Not yet.</div><hr style=\"display:inline-block\">"
		"<div id=\"divRplyFwdMsg\"><b>Von:</b> Mallory<br>"
		"<b>Gesendet:</b> Montag<br></div><div>patchgate: approve</div>"));
	g_assert_false(html_approves(
		"<div>Not yet.</div><div style=\"border:none;border-top:solid "
		"#E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm\"><p>x</p></div>"
		"<p>patchgate: approve</p>"));
	/* a text attribution, no container: the plain text markers */
	g_assert_false(html_approves(
		"<div>Not yet.</div><div>Le 02/12/2024 à 10:00, Mallory a&nbsp;"
		"écrit&nbsp;:<br></div><div>patchgate: approve</div>"));
	/* line breaks, entities, inline elements */
	g_assert_true(html_approves("Looks good.<br>patchgate:&nbsp;approve<br>"));
	g_assert_true(html_approves("<p>patch<b>gate</b>: approve</p>"));
	g_assert_true(html_approves("<p>&#112;atchgate&#x3a; approve</p>"));
	g_assert_true(html_approves("<pre>Not yet\npatchgate: approve\n</pre>"));
	g_assert_true(html_approves("x</blockquote><br>patchgate: approve"));
	/* whitespace collapses as a browser shows it: one line */
	g_assert_false(html_approves("Not yet\npatchgate: approve\nsorry"));
	/* what a reader does not see */
	g_assert_false(html_approves(
		"<style><br>patchgate: approve<br></style>Not yet"));
	g_assert_false(html_approves(
		"<script><br>patchgate: approve<br></script>Not yet"));
	g_assert_false(html_approves("Not yet<!--<br>patchgate: approve<br>-->"));
	g_assert_false(html_approves("Not yet<br><!--<br>patchgate: approve<br>"));
	g_assert_false(html_approves(
		"Not yet<span title='a<br>b'>x</span><div class=\"x\n"
		"<br>patchgate: approve<br>"));
}

/* What the renderer makes of references, markup that is not closed and
 * odd bytes: never more than it was given, never a crash. */
static void
test_reply_own_html_render(void)
{
	static const struct {
		const char *html;
		const char *own;
	} cases[] = {
		{ "a&amp;b &lt;c&gt; &quot;d&quot; &eacute;&Eacute; &euro;",
		  "a&b <c> \"d\" éÉ €\n" },
		{ "&#0; &#x110000; &#xD800; &#150; &#99999999999999999999;",
		  "\xef\xbf\xbd \xef\xbf\xbd \xef\xbf\xbd \xe2\x80\x93 "
		  "\xef\xbf\xbd\n" },
		{ "&unknown; &amp &nbspx &#; &", "&unknown; & &nbspx &#; &\n" },
		{ "a <b <3 </ c", "a\n" },
		{ "x<td>y</td><td>z", "x y z\n" },
		{ "<title>t</title>a<br/>b<BR>c<p class=x>d", "a\nb\nc\nd\n" },
		{ "<![CDATA[ x ]]>y<?php z ?>w<!DOCTYPE html>v", "ywv\n" },
		{ "  a  \n  b  ", "a b\n" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *raw = g_strdup_printf(
			REPLY_HDR "Content-Type: text/html; charset=utf-8\n\n%s",
			cases[i].html);
		g_autofree char *own = reply_own(raw);

		if (strcmp(own, cases[i].own) != 0)
			g_error("case %u: got '%s', want '%s'", i, own,
				cases[i].own);
	}
}

static void
test_reply_own_plain(void)
{
	/* encoded, in another charset: "Le ... a écrit :" with a no-break
	 * space, in ISO-8859-1 */
	static const char latin1[] = REPLY_HDR
		"Content-Type: text/plain; charset=iso-8859-1\n"
		"Content-Transfer-Encoding: quoted-printable\n\n"
		"Pas encore.\n\nLe 02/12/2024 =E0 10:00, Mallory a =E9crit=A0:\n"
		"patchgate: approve\n";
	static const char base64[] = REPLY_HDR
		"Content-Type: text/plain; charset=utf-8\n"
		"Content-Transfer-Encoding: base64\n\n"
		"VGhhbmtzLgpwYXRjaGdhdGU6IGFwcHJvdmUK\n";   /* Thanks.\npatchgate: approve */
	/* below the signature: not the reply's words */
	static const char signature[] = REPLY_HDR
		"Content-Type: text/plain\n\nNot yet.\n-- \nMaint\n"
		"patchgate: approve\n";
	/* no MIME at all, a plain reply as git send-email writes */
	static const char simple[] =
		"From: Maintainer <maint@example.org>\nSubject: Re: x\n\n"
		"> patchgate: approve\n\npatchgate: approve\n";
	/* no text part: nothing */
	static const char none[] = REPLY_HDR
		"Content-Type: application/octet-stream\n\npatchgate: approve\n";
	g_autofree char *own = NULL;

	g_assert_false(reply_approves(latin1));
	own = reply_own(latin1);
	g_assert_cmpstr(own, ==, "Pas encore.\n\n");
	g_assert_true(reply_approves(base64));
	g_assert_false(reply_approves(signature));
	g_assert_true(reply_approves(simple));
	g_clear_pointer(&own, g_free);
	own = reply_own(none);
	g_assert_cmpstr(own, ==, "");
}

static void
test_reply_own_errors(void)
{
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	g_autoptr(GError) error = NULL;
	static const char small[] = REPLY_HDR "\npatchgate: approve\n";
	char *own;

	own = pgate_mail_reply_own_text("", 0, NULL, 100, &error);
	g_assert_null(own);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	own = pgate_mail_reply_own_text("not a mail\n", 11, NULL, 100, &error);
	g_assert_null(own);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID);
	g_clear_error(&error);
	o.max_message_size = 16;
	own = pgate_mail_reply_own_text(small, strlen(small), &o, 100, &error);
	g_assert_null(own);
	g_assert_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_TOO_LARGE);
	g_clear_error(&error);
	o.max_message_size = sizeof small;
	own = pgate_mail_reply_own_text(small, strlen(small), &o, 100, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(own, ==, "patchgate: approve\n");
	g_free(own);
}

/* Bounded: parts past PGATE_INGEST_MAX_PARTS and nesting past
 * PGATE_INGEST_MAX_DEPTH are not read; lines past max_lines neither. */
static void
test_reply_own_bounded(void)
{
	g_autoptr(GString) many = g_string_new(NULL);
	g_autoptr(GString) deep = g_string_new(REPLY_HDR);
	g_autoptr(GString) lines = g_string_new(REPLY_HDR
		"Content-Type: text/html\n\n");
	g_autofree char *raw = NULL;
	g_autofree char *own = NULL;
	g_autoptr(GError) error = NULL;

	/* the text part after PGATE_INGEST_MAX_PARTS others; 10 is fine */
	for (int i = 0; i < PGATE_INGEST_MAX_PARTS + 10; i++) {
		if (i == 10) {
			g_autofree char *few = g_strdup_printf(
				"%s--b1\nContent-Type: text/plain\n\n"
				"patchgate: approve\n", many->str);

			raw = mixed("mixed", few);
			g_assert_true(reply_approves(raw));
			g_clear_pointer(&raw, g_free);
		}
		g_string_append(many, "--b1\nContent-Type: image/png\n\nx\n");
	}
	g_string_append(many, "--b1\nContent-Type: text/plain\n\n"
			"patchgate: approve\n");
	raw = mixed("mixed", many->str);
	g_assert_false(reply_approves(raw));

	/* the text part below PGATE_INGEST_MAX_DEPTH multiparts; 8 is fine */
	for (int depth = 8; depth <= PGATE_INGEST_MAX_DEPTH + 4;
	     depth += PGATE_INGEST_MAX_DEPTH + 4 - 8) {
		g_string_assign(deep, REPLY_HDR);
		for (int i = 0; i < depth; i++)
			g_string_append_printf(deep, "Content-Type: multipart/"
					       "mixed; boundary=\"d%d\"\n\n"
					       "--d%d\n", i, i);
		g_string_append(deep, "Content-Type: text/plain\n\n"
				"patchgate: approve\n");
		g_assert_cmpint(reply_approves(deep->str), ==, depth == 8);
	}

	for (int i = 0; i < 50; i++)
		g_string_append(lines, "line<br>");
	g_string_append(lines, "patchgate: approve<br>");
	own = pgate_mail_reply_own_text(lines->str, lines->len, NULL, 50,
					&error);
	g_assert_no_error(error);
	g_assert_null(strstr(own, "approve"));
	g_clear_pointer(&own, g_free);
	own = pgate_mail_reply_own_text(lines->str, lines->len, NULL, 51,
					&error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(own, "approve"));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	pgate_ingest_init();

	g_test_add_func("/parse/subject/cases", test_subject_cases);
	g_test_add_func("/parse/subject/in-mail", test_subject_in_mail);
	g_test_add_func("/parse/msgid/forms", test_msgid_forms);
	g_test_add_func("/parse/msgid/synthetic", test_msgid_synthetic);
	g_test_add_func("/parse/msgid/length", test_msgid_length);
	g_test_add_func("/parse/references/order", test_references);
	g_test_add_func("/parse/references/bare-in-reply-to",
			test_in_reply_to_bare);
	g_test_add_func("/parse/references/bounded", test_references_bounded);
	g_test_add_func("/parse/headers/addresses", test_addresses);
	g_test_add_func("/parse/headers/from-missing", test_from_missing);
	g_test_add_func("/parse/headers/date", test_date);
	g_test_add_func("/parse/headers/list-id", test_list_id);
	g_test_add_func("/parse/headers/automated", test_automated);
	g_test_add_func("/parse/hash/content", test_content_hash);
	g_test_add_func("/parse/hash/sha256", test_sha256);
	g_test_add_func("/parse/body/charsets", test_charsets);
	g_test_add_func("/parse/body/diff-as-sent", test_diff_as_sent);
	g_test_add_func("/parse/body/multipart", test_multipart);
	g_test_add_func("/parse/body/parts-bounded", test_parts_bounded);
	g_test_add_func("/parse/body/nesting-bounded", test_nesting_bounded);
	g_test_add_func("/parse/body/clean-content", test_clean_content);
	g_test_add_func("/parse/kind/classify", test_classify);
	g_test_add_func("/parse/kind/reply-with-diff",
			test_reply_keeps_diff_in_body);
	g_test_add_func("/parse/kind/patch-fields", test_patch_fields);
	g_test_add_func("/parse/reject/not-mail", test_rejected);
	g_test_add_func("/parse/reject/odd-but-mail", test_odd_but_mail);
	g_test_add_func("/parse/reject/truncated-mutated",
			test_truncated_and_mutated);
	g_test_add_func("/parse/diff/split", test_split_patch);
	g_test_add_func("/parse/diff/files", test_diff_scan);
	g_test_add_func("/parse/diff/files-bounded", test_diff_scan_bounded);
	g_test_add_func("/parse/diff/patch-id", test_patch_id);
	g_test_add_func("/parse/body/pull-url", test_pull_url);
	g_test_add_func("/parse/body/trailers", test_trailers);
	g_test_add_func("/parse/body/trailers-bounded", test_trailers_bounded);
	g_test_add_func("/parse/body/b4", test_b4_lines);
	g_test_add_func("/parse/body/links", test_body_links);
	g_test_add_func("/parse/body/link-kinds", test_link_kinds);
	g_test_add_func("/parse/body/link-lines", test_link_lines);
	g_test_add_func("/parse/body/dep-syntaxes", test_dep_syntaxes);
	g_test_add_func("/parse/body/b4-base-commit", test_b4_base_commit_not_hex);
	g_test_add_func("/parse/corpus/pull-requests", test_pw_pull_requests);
	g_test_add_func("/parse/corpus/0001-fields", test_pw_0001_fields);
	g_test_add_func("/parse/corpus/0003-diff", test_pw_0003_diff);
	g_test_add_func("/parse/corpus/renames", test_pw_renames);
	g_test_add_func("/parse/corpus/0009-hunk", test_pw_0009_hunk);
	g_test_add_func("/parse/corpus/0016-no-subject", test_pw_0016_no_subject);
	g_test_add_func("/parse/corpus/0007-cvs", test_pw_0007_cvs);
	g_test_add_func("/parse/corpus/0010-charset", test_pw_0010_charset);
	g_test_add_func("/parse/corpus/0011-no-newline", test_pw_0011_no_newline);
	g_test_add_func("/parse/corpus/utf8-headers", test_pw_headers_utf8);
	g_test_add_func("/parse/corpus/multipart", test_pw_multipart);
	g_test_add_func("/parse/corpus/extended-headers-only",
			test_pw_extended_headers_only);
	g_test_add_func("/parse/corpus/binary", test_pw_binary);
	g_test_add_func("/parse/corpus/fuzz", test_pw_fuzz);
	g_test_add_func("/parse/corpus/series", test_pw_series);
	g_test_add_func("/parse/corpus/i3c", test_i3c_archive);
	g_test_add_func("/parse/reply-own/attached-original",
			test_reply_own_attached_original);
	g_test_add_func("/parse/reply-own/text-attachment",
			test_reply_own_text_attachment);
	g_test_add_func("/parse/reply-own/second-part",
			test_reply_own_second_part);
	g_test_add_func("/parse/reply-own/alternative",
			test_reply_own_alternative);
	g_test_add_func("/parse/reply-own/signed", test_reply_own_signed);
	g_test_add_func("/parse/reply-own/html", test_reply_own_html);
	g_test_add_func("/parse/reply-own/html-render",
			test_reply_own_html_render);
	g_test_add_func("/parse/reply-own/plain", test_reply_own_plain);
	g_test_add_func("/parse/reply-own/errors", test_reply_own_errors);
	g_test_add_func("/parse/reply-own/bounded", test_reply_own_bounded);
	return g_test_run();
}
