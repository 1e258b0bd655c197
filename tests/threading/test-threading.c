/* test-threading.c - series formation against Patchwork's fixtures, order
 * independence (shuffled arrival, one by one and in batches, and
 * rethread: Patchwork's fixtures, linux-i3c, a generated list), and the
 * cost of incremental threading. */
#include "ingest/ingest.h"
#include "threading/threading.h"
#include "threading/threading-private.h"
#include "testutil.h"

#include <glib/gstdio.h>

#include <fcntl.h>
#include <lmdb.h>
#include <string.h>
#include <unistd.h>

static const char *
corpus(void)
{
	return g_getenv("PGATE_TEST_CORPUS");
}

/* The raw messages of an mbox, in file order. */
static GPtrArray *
read_mbox(const char *path)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	int fd = open(path, O_RDONLY);
	g_autoptr(PgateMboxReader) r = NULL;
	GBytes *raw;
	gboolean trunc;

	g_assert_cmpint(fd, >=, 0);
	r = pgate_mbox_reader_new(fd, PGATE_MBOX_MBOXRD, 64u << 20);
	while (pgate_mbox_reader_next(r, &raw, &trunc, NULL))
		g_ptr_array_add(out, raw);
	close(fd);
	return out;
}

typedef struct {
	GPtrArray *raws;   /* GBytes* */
	guint from, to;    /* the slice to add */
	PgateThreading *thr;
	gboolean thread;
	gboolean del;      /* then delete raws[del_at], in the same
			    * transaction (a replay batch holding a message
			    * and the "d" commit that purges it) */
	guint del_at;
} AddCtx;

static gboolean
add_slice(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	AddCtx *c = payload;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;

	/* the threading hooks borrow the records until the commit */
	g_autoptr(GPtrArray) mails = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_mail_free);

	pgate_ingest_options_resolve(&o);
	if (c->thread && !pgate_threading_hook_begin(txn, c->thr, error))
		return FALSE;
	for (guint i = c->from; i < c->to; i++) {
		gsize len;
		const char *d = g_bytes_get_data(c->raws->pdata[i], &len);
		PgateMail *m = pgate_mail_parse(d, len, &o);
		PgateStoreAddResult res;

		g_ptr_array_add(mails, m);

		if (!pgate_store_message_add(txn, m->rec, c->raws->pdata[i], &res,
					     error))
			return FALSE;
		if (c->thread && res != PGATE_STORE_DUPLICATE &&
		    !pgate_threading_hook_added(txn, m->rec, c->thr, error))
			return FALSE;
	}
	if (c->del) {
		const PgateMail *gone = mails->pdata[c->del_at - c->from];
		g_autoptr(PgateMessageRec) old = pgate_store_message_get(
			txn, gone->rec->num, error);

		if (old == NULL ||
		    !pgate_store_message_delete(txn, old->msgid,
						old->content_hash, NULL, error) ||
		    !pgate_threading_hook_deleted(txn, old, c->thr, error))
			return FALSE;
	}
	return !c->thread || pgate_threading_hook_commit(txn, c->thr, error);
}

typedef struct {
	char *dir;
	PgateStore *store;
	PgateThreading *thr;
} Env;

static void
env_open(Env *e)
{
	g_autoptr(GError) error = NULL;

	e->dir = g_dir_make_tmp("pgate-thr-XXXXXX", NULL);
	e->store = pgate_store_open(e->dir, PGATE_STORE_RW | PGATE_STORE_CREATE,
				    NULL, &error);
	g_assert_no_error(error);
	e->thr = pgate_threading_new();
}

static void
env_close(Env *e)
{
	pgate_threading_free(e->thr);
	pgate_store_free(e->store);
	pgate_test_rm_rf(e->dir);
	g_free(e->dir);
}

/* Adds raws[order[i]] in slices of @batch (1: one per transaction). */
static void
env_add(Env *e, GPtrArray *raws, guint batch)
{
	for (guint i = 0; i < raws->len; i += batch) {
		g_autoptr(GError) error = NULL;
		AddCtx c = { raws, i, MIN(i + batch, raws->len), e->thr, TRUE,
			     FALSE, 0 };

		g_assert_true(pgate_store_write(e->store, add_slice, &c, &error));
		g_assert_no_error(error);
	}
}

static gint
str_cmp_p(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A PgateStoreNameFunc: "name DATE ID HASHES\n". */
static gboolean
name_entry_dump(gint64 date, const char *id, gsize idlen, const guint8 *val,
		gsize len, gpointer data, GError **error)
{
	GString *out = data;

	g_string_append_printf(out, "name %" G_GINT64_FORMAT " %.*s ", date,
			       (int)idlen, id);
	for (gsize i = 0; i < len; i++)
		g_string_append_printf(out, "%02x", val[i]);
	g_string_append_c(out, '\n');
	return TRUE;
}

/* The series (pgate_threading_dump), then the name_keys entries of their
 * senders: what arrived in any order, or was deleted, must leave no
 * entry behind and miss none. */
static char *
env_dump(Env *e)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	g_autoptr(GHashTable) senders = g_hash_table_new_full(
		g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GPtrArray) list = NULL;
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	GHashTableIter hi;
	gpointer k;
	GString *out;
	char *d;
	guint with_sender = 0, entries = 0;

	g_assert_no_error(error);
	d = pgate_threading_dump(txn, &error);
	g_assert_no_error(error);
	out = g_string_new(d);
	g_free(d);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		if (s->submitter_email != NULL && s->submitter_email[0] != '\0') {
			g_hash_table_add(senders, g_strdup(s->submitter_email));
			with_sender++;
		}
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	list = g_ptr_array_new();
	g_hash_table_iter_init(&hi, senders);
	while (g_hash_table_iter_next(&hi, &k, NULL))
		g_ptr_array_add(list, k);
	g_ptr_array_sort(list, str_cmp_p);
	for (guint i = 0; i < list->len; i++) {
		g_string_append_printf(out, "sender %s\n",
				       (const char *)list->pdata[i]);
		g_assert_true(pgate_store_name_range(txn, list->pdata[i],
						     G_MININT64, G_MAXINT64,
						     name_entry_dump, out,
						     &error));
		g_assert_no_error(error);
	}
	/* one entry a series with a sender, none for another */
	for (const char *p = out->str; (p = strstr(p, "\nname ")) != NULL; p++)
		entries++;
	g_assert_cmpuint(entries, ==, with_sender);
	/* and every derived index, entry by entry: what arrived in any order,
	 * or was deleted, or was formed again, leaves no entry behind */
	d = pgate_store_derived_dump(txn, &error);
	g_assert_no_error(error);
	g_string_append(out, "derived:\n");
	g_string_append(out, d);
	g_free(d);
	return g_string_free(out, FALSE);
}

/* (transfer full): the dump of a new store after adding @raws in slices
 * of @batch. */
static char *
dump_of(GPtrArray *raws, guint batch)
{
	Env e;
	char *d;

	env_open(&e);
	env_add(&e, raws, batch);
	d = env_dump(&e);
	env_close(&e);
	return d;
}

/* "v1 2/2 C cover | ..." sorted by date, as the table of patchwork.md */
static char *
summary(Env *e)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_rec_free);
	GString *out = g_string_new(NULL);

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error))
		g_ptr_array_add(list, s);
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	for (guint i = 0; i < list->len; i++)
		for (guint j = i + 1; j < list->len; j++) {
			PgateSeriesRec *a = list->pdata[i], *b = list->pdata[j];

			if (b->date < a->date ||
			    (b->date == a->date && strcmp(b->id, a->id) < 0)) {
				list->pdata[i] = b;
				list->pdata[j] = a;
			}
		}
	for (guint i = 0; i < list->len; i++) {
		PgateSeriesRec *r = list->pdata[i];

		if (i > 0)
			g_string_append(out, " | ");
		g_string_append_printf(out, "v%u %u/%u %s%s", r->version, r->total,
				       r->patches->len,
				       (r->flags & PGATE_SERIES_FLAG_COMPLETE) ? "C" : "x",
				       r->cover ? " cover" : "");
		if (r->supersedes)
			g_string_append_printf(out, " <-%s", r->link_reason);
	}
	return g_string_free(out, FALSE);
}

/* Patchwork 3.1.3's outcomes (patchwork.md Part 1c: version, total /
 * received, complete, cover), plus our version links, which Patchwork
 * does not make ("<-rule": this series supersedes the one before).
 * Better answers argued:
 *  - bugs-spamming: the three identical [PATCH v2 1/4] stay three series
 *    as in Patchwork, but we see they are the same patch (same patch-id)
 *    sent again: each later copy is linked "resend" to the one before, so
 *    only the newest is listed by default.
 *  - revision-unlabeled-noreferences: the same two patches an hour later
 *    (the ±20 min window splits them, as in Patchwork) are a resend.
 *  - bugs-nocover-noversion: the second, unversioned 1/2 2/2 threaded
 *    into the first is the same work sent again: linked by in-reply-to.
 *  - bugs-unnumbered: the orphan patch replies into the series but is
 *    different work (another name): not linked. */
static const struct {
	const char *name;
	const char *expect;
} pw_table[] = {
	{ "base-cover-letter", "v1 2/2 C cover" },
	{ "base-deep-threaded", "v1 2/2 C cover" },
	{ "base-different-versions", "v3 4/4 C cover" },
	{ "base-extra-patches", "v1 2/3 C cover" },
	{ "base-incomplete", "v1 2/1 x cover" },
	{ "base-no-cover-letter", "v1 2/2 C" },
	{ "base-no-references-no-cover", "v1 2/2 C cover" },
	{ "base-no-references", "v2 2/2 C" },
	{ "base-out-of-order", "v1 2/2 C cover" },
	{ "base-single-patch", "v1 1/1 C" },
	{ "bugs-mixed-versions", "v1 2/1 x | v2 2/1 x" },
	{ "bugs-multiple-content-types", "v1 1/1 C" },
	{ "bugs-multiple-references", "v2 4/4 C cover" },
	{ "bugs-nocover-noversion", "v1 2/2 C | v1 2/2 C <-in-reply-to" },
	{ "bugs-nocover", "v1 2/2 C | v2 2/2 C <-in-reply-to" },
	{ "bugs-spamming", "v2 4/1 x | v2 4/1 x <-resend | v2 4/1 x <-resend" },
	{ "bugs-unnumbered", "v1 2/1 x cover | v1 1/1 C" },
	{ "mercurial-cover-letter", "v1 2/2 C cover" },
	{ "mercurial-no-cover-letter", "v1 2/2 C" },
	{ "revision-basic", "v1 2/2 C cover | v2 2/2 C cover <-subject" },
	{ "revision-no-cover-letter", "v1 2/2 C cover | v2 2/2 C <-subject" },
	{ "revision-out-of-order", "v1 2/2 C cover | v2 2/2 C cover <-in-reply-to" },
	{ "revision-threaded-to-cover", "v1 2/2 C cover | v2 2/2 C cover <-in-reply-to" },
	{ "revision-threaded-to-patch", "v1 2/2 C cover | v2 2/2 C cover <-in-reply-to" },
	{ "revision-threaded-to-single-patch", "v1 1/1 C | v2 1/1 C <-in-reply-to" },
	{ "revision-unlabeled-noreferences", "v2 2/2 C | v2 2/2 C <-resend" },
	{ "revision-unlabeled", "v1 2/2 C cover | v1 2/2 C cover <-unlabeled" },
};

/* ---- the "link" rule ---- */

static GBytes *
mail(const char *from, const char *id, const char *subject, int day,
     const char *body, gboolean diff)
{
	GString *m = g_string_new(NULL);

	g_string_append_printf(m, "From: %s\nMessage-ID: <%s>\nSubject: %s\n"
			       "Date: Mon, %d Jan 2024 10:00:00 +0000\n"
			       "List-Id: <widgets.example.org>\n\n%s",
			       from, id, subject, day, body);
	if (diff)
		g_string_append_printf(m, "---\n a.c | 1 +\n\ndiff --git a/a.c b/a.c\n"
				       "--- a/a.c\n+++ b/a.c\n@@ -1 +1,2 @@\n x\n+%s\n",
				       id);
	return g_string_free_to_bytes(m);
}

/* v1 -> v2 (renamed, not threaded, not similar: only its cover's "v1:"
 * URL joins them) -> v3 (another sender took the work over and says so
 * with a b4 "Link to v2:").  A Link: trailer in an unrelated patch's
 * commit message names v1's cover too, and must not link it.  Both
 * arrival orders give the same series (the reverse order needs the
 * link_index: v1 arrives after the series that name it). */
static void
test_link_rule(void)
{
	const char *A = "Alice <alice@example.org>", *B = "Bob <bob@example.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(GPtrArray) rev = g_ptr_array_new();
	g_autofree char *fwd_dump = NULL, *rev_dump = NULL, *sum = NULL;
	Env e;

	g_ptr_array_add(raws, mail(A, "c1@x", "[PATCH 0/2] Frob the widget", 1,
				   "Frobbing.\n", FALSE));
	g_ptr_array_add(raws, mail(A, "p11@x", "[PATCH 1/2] widget: frob one", 1,
				   "One.\n\nSigned-off-by: Alice <alice@example.org>\n", TRUE));
	g_ptr_array_add(raws, mail(A, "p12@x", "[PATCH 2/2] widget: frob two", 1,
				   "Two.\n\nSigned-off-by: Alice <alice@example.org>\n", TRUE));
	g_ptr_array_add(raws, mail(A, "c2@x", "[PATCH v2 0/1] Rework gadget handling", 8,
				   "Reworked.\n\nv1: https://lore.kernel.org/r/c1@x/\n", FALSE));
	g_ptr_array_add(raws, mail(A, "p21@x", "[PATCH v2 1/1] gadget: new scheme", 8,
				   "New.\n\nSigned-off-by: Alice <alice@example.org>\n", TRUE));
	g_ptr_array_add(raws, mail(B, "c3@x", "[PATCH v3 0/1] Gadget handling, again", 15,
				   "Taking this over.\n\n---\n"
				   "- Link to v2: https://patch.msgid.link/c2%40x\n", FALSE));
	g_ptr_array_add(raws, mail(B, "p31@x", "[PATCH v3 1/1] gadget: newer scheme", 15,
				   "Newer.\n\nSigned-off-by: Bob <bob@example.org>\n", TRUE));
	g_ptr_array_add(raws, mail("Carol <carol@example.org>", "q@x",
				   "[PATCH v2] doc: mention frobbing", 20,
				   "Docs.\n\nLink: https://lore.kernel.org/r/c1@x\n"
				   "Signed-off-by: Carol <carol@example.org>\n", TRUE));

	env_open(&e);
	env_add(&e, raws, 1);
	fwd_dump = env_dump(&e);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 2/2 C cover | v2 1/1 C cover <-link | "
			"v3 1/1 C cover <-link | v2 1/1 C");
	env_close(&e);

	for (guint i = raws->len; i-- > 0;)
		g_ptr_array_add(rev, raws->pdata[i]);
	rev_dump = dump_of(rev, 1);
	g_assert_cmpstr(rev_dump, ==, fwd_dump);
}

/* The subject rule's patch names count every patch: v1's first patch is
 * a CVS-style diff without a patch-id, and the covers' names have nothing
 * in common, so only the patch names (3 of 3 equal) join v2 to v1.  The
 * first version stopped collecting patch names at the first patch
 * without a patch-id, and missed this link. */
static void
test_patch_names(void)
{
	static const char cvs[] =
		"From: Alice <alice@example.org>\nMessage-ID: <p11@x>\n"
		"Subject: [PATCH 1/3] widget: split the frobber\n"
		"Date: Mon, 1 Jan 2024 10:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\nSplit.\n---\nIndex: a.c\n"
		"===================================================================\n"
		"--- a.c\n+++ a.c\n@@ -1 +1 @@\n-x\n+y\n";
	const char *A = "Alice <alice@example.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	g_ptr_array_add(raws, mail(A, "c1@x", "[PATCH 0/3] Alpha widget rework", 1,
				   "Cover.\n", FALSE));
	g_ptr_array_add(raws, g_bytes_new_static(cvs, strlen(cvs)));
	g_ptr_array_add(raws, mail(A, "p12@x", "[PATCH 2/3] widget: frob faster", 1,
				   "Two.\n", TRUE));
	g_ptr_array_add(raws, mail(A, "p13@x", "[PATCH 3/3] widget: document frobbing", 1,
				   "Three.\n", TRUE));
	g_ptr_array_add(raws, mail(A, "c2@x", "[PATCH v2 0/3] Gadget cleanups for 6.9", 9,
				   "Cover.\n", FALSE));
	g_ptr_array_add(raws, mail(A, "p21@x", "[PATCH v2 1/3] widget: split the frobber", 9,
				   "One.\n", TRUE));
	g_ptr_array_add(raws, mail(A, "p22@x", "[PATCH v2 2/3] widget: frob faster", 9,
				   "Two.\n", TRUE));
	g_ptr_array_add(raws, mail(A, "p23@x", "[PATCH v2 3/3] widget: document frobbing", 9,
				   "Three.\n", TRUE));
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 3/3 C cover | v2 3/3 C cover <-subject");
	env_close(&e);
}

/* "v3<-v2 v2<-v1": each series's version and the version of the one it
 * supersedes (versions are distinct in the tests that use it). */
static char *
chain_summary(Env *e)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_series_rec_free);
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error))
		g_ptr_array_add(list, s);
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	for (guint i = 0; i < list->len; i++) {
		PgateSeriesRec *r = list->pdata[i];
		guint pv = 0;

		for (guint j = 0; j < list->len; j++)
			if (g_strcmp0(r->supersedes,
				      ((PgateSeriesRec *)list->pdata[j])->id) == 0)
				pv = ((PgateSeriesRec *)list->pdata[j])->version;
		g_ptr_array_add(items, pv ? g_strdup_printf("v%u<-v%u", r->version, pv)
					  : g_strdup_printf("v%u", r->version));
	}
	g_ptr_array_sort(items, str_cmp_p);
	g_ptr_array_add(items, NULL);
	return g_strjoinv(" ", (char **)items->pdata);
}

static void check_shuffles(GPtrArray *raws, guint runs, guint32 seed);
static json_t *explain_of(Env *e, const char *msgid);
static char *rejected_of(json_t *ex, int version);

/* git send-email's single patch, in reply to @irt (nullable), with
 * @notes (nullable) below the "---" */
static GBytes *
reply_patch(const char *id, const char *irt, const char *subject, int day,
	    const char *body, const char *notes)
{
	GString *m = g_string_new(NULL);

	g_string_append_printf(m, "From: Martin Kaiser <martin@kaiser.cx>\n"
			       "To: Alessandro Zummo <a.zummo@towertech.it>\n"
			       "Cc: linux-rtc@vger.kernel.org\n"
			       "Subject: %s\nDate: Tue, %d May 2021 18:30:09 +0200\n"
			       "Message-Id: <%s>\n", subject, day, id);
	if (irt != NULL)
		g_string_append_printf(m, "In-Reply-To: <%s>\nReferences: <%s>\n",
				       irt, irt);
	g_string_append_printf(m, "List-Id: <linux-rtc.vger.kernel.org>\n"
			       "MIME-Version: 1.0\n\n%s\n"
			       "Signed-off-by: Martin Kaiser <martin@kaiser.cx>\n---\n"
			       "%s\n drivers/rtc/rtc-imxdi.c | 1 +\n 1 file changed\n\n"
			       "diff --git a/drivers/rtc/rtc-imxdi.c b/drivers/rtc/rtc-imxdi.c\n"
			       "--- a/drivers/rtc/rtc-imxdi.c\n+++ b/drivers/rtc/rtc-imxdi.c\n"
			       "@@ -1 +1,2 @@\n x\n+%s\n-- \n2.20.1\n\n", body,
			       notes ? notes : "", id);
	return g_string_free_to_bytes(m);
}

/* A chain is a line (linux-rtc, "rtc: imxdi: add wakeup support"): v2
 * and v3 were both sent in reply to v1, so the in-reply-to rule proposes
 * v1 for both; v3 supersedes v2, the latest earlier version in v1's
 * chain.  A v4 whose b4 trailer names only v1 supersedes v3 likewise.
 * Every arrival order gives the same links. */
static void
test_chain_line(void)
{
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	g_ptr_array_add(raws, reply_patch("20210430093210.7034-1-martin@kaiser.cx", NULL,
					  "[PATCH] rtc: imxdi: add wakeup support", 4,
					  "The DryIce-based RTC supports alarms that trigger an\n"
					  "interrupt.  Configure this interrupt as a wakeup source.",
					  NULL));
	g_ptr_array_add(raws, reply_patch("20210505163009.14252-1-martin@kaiser.cx",
					  "20210430093210.7034-1-martin@kaiser.cx",
					  "[PATCH v2] rtc: imxdi: add wakeup support", 5,
					  "The DryIce-based RTC supports alarms that trigger an\n"
					  "interrupt.  Add an option to configure this interrupt\n"
					  "as a wakeup source.", "changes in v2: make it optional\n"));
	g_ptr_array_add(raws, reply_patch("20210511161244.16111-1-martin@kaiser.cx",
					  "20210430093210.7034-1-martin@kaiser.cx",
					  "[PATCH v3] rtc: imxdi: add wakeup support", 11,
					  "The DryIce-based RTC supports alarms that trigger an\n"
					  "interrupt.  Mark the device as wakeup capable.",
					  "changes in v3: always wakeup capable\n"));
	g_ptr_array_add(raws, reply_patch("20210520100000.1-1-martin@kaiser.cx", NULL,
					  "[PATCH v4] rtc: imxdi: add wakeup support", 20,
					  "The DryIce-based RTC supports alarms that trigger an\n"
					  "interrupt.  Mark the device as wakeup capable.",
					  "Changes in v4:\n- rebased\n"
					  "- Link to v1: https://lore.kernel.org/r/"
					  "20210430093210.7034-1-martin@kaiser.cx\n"));
	env_open(&e);
	env_add(&e, raws, 1);
	sum = chain_summary(&e);
	g_assert_cmpstr(sum, ==, "v1 v2<-v1 v3<-v2 v4<-v3");
	env_close(&e);
	check_shuffles(raws, 12, 27);
}

/* A cover of @total patches from @from, in reply to @irt (nullable),
 * and its patches threaded to it. */
static void
add_series(GPtrArray *raws, const char *from, const char *id, const char *irt,
	   const char *prefix, const char *name, guint total, int day)
{
	for (guint k = 0; k <= total; k++) {
		GString *m = g_string_new(NULL);

		g_string_append_printf(m, "From: %s\nSubject: [%s %u/%u] %s\n"
				       "Date: Fri, %d Dec 2020 22:56:11 +0100\n"
				       "Message-Id: <%u-%s>\n", from, prefix, k, total,
				       k == 0 ? name : "rtc: pcf2127: a step", day, k, id);
		if (k > 0)
			g_string_append_printf(m, "In-Reply-To: <0-%s>\n"
					       "References: <0-%s>\n", id, id);
		else if (irt != NULL)
			g_string_append_printf(m, "In-Reply-To: <%s>\n"
					       "References: <%s>\n", irt, irt);
		g_string_append(m, "List-Id: <linux-rtc.vger.kernel.org>\n\n");
		if (k == 0)
			g_string_append(m, "This series makes the pcf2127 driver only\n"
					"register a watchdog when asked to.\n");
		else
			g_string_append_printf(m, "Step %u.\n\nSigned-off-by: %s\n---\n"
					       " drivers/rtc/rtc-pcf2127.c | 1 +\n\n"
					       "diff --git a/drivers/rtc/rtc-pcf2127.c "
					       "b/drivers/rtc/rtc-pcf2127.c\n"
					       "--- a/drivers/rtc/rtc-pcf2127.c\n"
					       "+++ b/drivers/rtc/rtc-pcf2127.c\n"
					       "@@ -1 +1,2 @@\n x\n+%u-%s\n", k, from, k, id);
		g_ptr_array_add(raws, g_string_free_to_bytes(m));
	}
}

/* Another person's series is superseded only on strong evidence
 * (linux-rtc): Rasmus Villemoes's "[PATCH v2 0/3] add reset-source RTC
 * binding, update pcf2127 driver" replies to Uwe Kleine-König's "[PATCH
 * 0/2] rtc: pcf2127: only use watchdog when explicitly available": other
 * person, other series name, so not a version of it.  The same person
 * through b4's relay (same name, devnull+ address) replying into their
 * own v1 under a new name still is. */
static void
test_cross_person(void)
{
	const char *U = "Uwe =?UTF-8?Q?Kleine-K=C3=B6nig?= <u.kleine-koenig@pengutronix.de>";
	const char *R = "Rasmus Villemoes <rasmus.villemoes@prevas.dk>";
	const char *UR = "Uwe =?UTF-8?Q?Kleine-K=C3=B6nig?= via B4 Relay "
			 "<devnull+u.kleine-koenig.pengutronix.de@kernel.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	add_series(raws, U, "20200924105256.18162@pengutronix.de", NULL, "PATCH",
		   "rtc: pcf2127: only use watchdog when explicitly available", 2, 4);
	add_series(raws, R, "20201211215611.24392@prevas.dk",
		   "0-20200924105256.18162@pengutronix.de", "PATCH v2",
		   "add reset-source RTC binding, update pcf2127 driver", 3, 11);
	add_series(raws, UR, "20201218101054.25416@pengutronix.de",
		   "0-20200924105256.18162@pengutronix.de", "PATCH v3",
		   "rtc: pcf2127: watchdog only when wanted", 2, 18);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = chain_summary(&e);
	g_assert_cmpstr(sum, ==, "v1 v2 v3<-v1");
	{
		json_t *x = explain_of(&e, "0-20201211215611.24392@prevas.dk");
		g_autofree char *why = rejected_of(x, 1);

		g_assert_cmpstr(why, ==, "replies into another person's series "
				"under another series name: a reply alone is no "
				"evidence | ");
		json_decref(x);
		x = explain_of(&e, "0-20201218101054.25416@pengutronix.de");
		g_assert_cmpstr(json_string_value(json_object_get(json_array_get(
			json_object_get(x, "evidence"), 0), "text")), ==,
			"In-Reply-To: <0-20200924105256.18162@pengutronix.de>");
		json_decref(x);
	}
	env_close(&e);
	check_shuffles(raws, 6, 4);
}

/* A cover (@body) and @total patches named "@name: part K", threaded
 * to it, from @from on day @day of May 2022. */
static void
add_cover_series(GPtrArray *raws, const char *from, const char *id,
		 const char *prefix, const char *name, guint total, int day,
		 const char *body)
{
	for (guint k = 0; k <= total; k++) {
		GString *m = g_string_new(NULL);

		g_string_append_printf(m, "From: %s\nDate: Wed, %d May 2022 08:58:27 +0100\n"
				       "Message-ID: <%u-%s>\n", from, day, k, id);
		if (k == 0)
			g_string_append_printf(m, "Subject: [%s 0/%u] %s\n", prefix,
					       total, name);
		else
			g_string_append_printf(m, "Subject: [%s %u/%u] %s: part %u\n"
					       "In-Reply-To: <0-%s>\nReferences: <0-%s>\n",
					       prefix, k, total, id, k, id, id);
		g_string_append(m, "List-ID: <linux-rtc.vger.kernel.org>\n\n");
		if (k == 0)
			g_string_append(m, body);
		else
			g_string_append_printf(m, "Part %u.\n\nSigned-off-by: %s\n---\n"
					       " drivers/rtc/rtc-mpfs.c | 1 +\n\n"
					       "diff --git a/drivers/rtc/rtc-mpfs.c "
					       "b/drivers/rtc/rtc-mpfs.c\n"
					       "--- a/drivers/rtc/rtc-mpfs.c\n"
					       "+++ b/drivers/rtc/rtc-mpfs.c\n"
					       "@@ -1 +1,2 @@\n x\n+%u-%s\n", k, from, k, id);
		g_ptr_array_add(raws, g_string_free_to_bytes(m));
	}
}

/* The series whose cover is @cover, as JSON (transfer full). */
static json_t *
series_json_of(Env *e, const char *cover)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	json_t *out = NULL;

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		if (out == NULL && g_strcmp0(s->cover, cover) == 0)
			out = pgate_threading_series_json(txn, s);
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	g_assert_nonnull(out);
	return out;
}

/* pgate_threading_series_explain() of the series whose cover (else
 * first patch) is @msgid (transfer full). */
static json_t *
explain_of(Env *e, const char *msgid)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	json_t *out = NULL;

	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		const char *first = s->cover ? s->cover :
			((PgateSeriesPatch *)s->patches->pdata[0])->msgid;

		if (out == NULL && g_strcmp0(first, msgid) == 0) {
			out = pgate_threading_series_explain(txn, s, &error);
			g_assert_no_error(error);
		}
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	g_assert_nonnull(out);
	return out;
}

/* The reason the explanation @ex gives for not taking a series of
 * version @version, and the line it read ("" for none). */
static char *
rejected_of(json_t *ex, int version)
{
	json_t *a = json_object_get(ex, "rejected"), *v;
	gsize i;

	json_array_foreach(a, i, v) {
		if (json_integer_value(json_object_get(v, "version")) == version)
			return g_strdup_printf("%s | %s",
				json_string_value(json_object_get(v, "reason")),
				json_string_value(json_object_get(v, "text"))
					? json_string_value(json_object_get(v, "text"))
					: "");
	}
	return g_strdup("(none)");
}

/* A link is a version link only when the text says so (linux-rtc).
 * Conor Dooley's "More PolarFire SoC Fixes for 5.18" v2 and v3 name his
 * "Add rtc refclk support for PolarFire SoC" v1 by a footnote cited as
 * "merged the rtc reference changes [1]": a reference, so neither
 * supersedes it (before, both did, a fan-out), and v3 supersedes v2.
 * Daire's "rtc: microchip: Add driver for PolarFire SoC" v4 says it
 * "depends on [0]" (the refclk v1): a dependency, resolved.  Conor's v5
 * of Daire's driver says "This is technically a v5 of [0]" naming v4: a
 * version link, which joins two people.  Every arrival order gives the
 * same links. */
static void
test_link_kinds(void)
{
	const char *C = "Conor Dooley <conor.dooley@microchip.com>";
	const char *D = "Daire McNamara <daire.mcnamara@microchip.com>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	json_t *j;
	Env e;

	add_cover_series(raws, C, "20220411072340.740981@microchip.com", "PATCH v1",
			 "Add rtc refclk support for PolarFire SoC", 2, 4,
			 "The reference clock for the rtc was missing.\n");
	add_cover_series(raws, C, "20220412075835.3354193@microchip.com", "PATCH v2",
			 "More PolarFire SoC Fixes for 5.18", 3, 12,
			 "Hey all,\n\nChanges since v1:\nAfter speaking with Krzysztof, "
			 "I have merged the rtc reference changes\n[1] with these fixes "
			 "for 5.18.\n\n[1] https://lore.kernel.org/linux-riscv/"
			 "0-20220411072340.740981@microchip.com\n");
	add_cover_series(raws, C, "20220413075835.3354193@microchip.com", "PATCH v3",
			 "More PolarFire SoC Fixes for 5.18", 3, 13,
			 "Hey all,\n\nChanges since v1:\nAfter speaking with Krzysztof, "
			 "I have merged the rtc reference changes\n[1] with these fixes "
			 "for 5.18.\n\nChanges since v2:\n- Wrapped text at 80 cols\n\n"
			 "[1] https://lore.kernel.org/linux-riscv/"
			 "0-20220411072340.740981@microchip.com\n");
	add_cover_series(raws, D, "20220420111133.1650740@microchip.com", "PATCH v4",
			 "rtc: microchip: Add driver for PolarFire SoC", 2, 20,
			 "This driver depends on [0], for the reference clock.\n\n"
			 "[0] https://lore.kernel.org/linux-rtc/"
			 "0-20220411072340.740981@microchip.com/\n");
	add_cover_series(raws, C, "20220601123320.2861043@microchip.com", "PATCH v5",
			 "rtc: microchip: Add driver for PolarFire SoC", 2, 28,
			 "Hey all,\nThis is technically a v5 of [0], although a fair "
			 "bit of time has\npassed since then.\n\n"
			 "[0] https://lore.kernel.org/linux-rtc/"
			 "0-20220420111133.1650740@microchip.com/\n");
	env_open(&e);
	env_add(&e, raws, 1);
	sum = chain_summary(&e);
	g_assert_cmpstr(sum, ==, "v1 v2 v3<-v2 v4 v5<-v4");
	j = series_json_of(&e, "0-20220412075835.3354193@microchip.com");
	g_assert_cmpuint(json_array_size(json_object_get(j, "references")), ==, 1);
	g_assert_cmpstr(json_string_value(json_array_get(json_object_get(j, "references"), 0)),
			==, "0-20220411072340.740981@microchip.com");
	g_assert_cmpuint(json_array_size(json_object_get(j, "linked_msgids")), ==, 0);
	json_decref(j);
	j = series_json_of(&e, "0-20220420111133.1650740@microchip.com");
	g_assert_cmpstr(json_string_value(json_object_get(json_array_get(
		json_object_get(j, "depends_on"), 0), "value")), ==,
		"0-20220411072340.740981@microchip.com");
	g_assert_nonnull(json_string_value(json_object_get(json_array_get(
		json_object_get(j, "depends_on"), 0), "series")));
	json_decref(j);
	/* series show's explanations: the rule, the line read, and why
	 * the other series named are not the predecessor */
	{
		g_autofree char *r3 = NULL, *r4 = NULL, *text = NULL;
		json_t *x3 = explain_of(&e, "0-20220413075835.3354193@microchip.com");
		json_t *x4 = explain_of(&e, "0-20220420111133.1650740@microchip.com");
		json_t *x5 = explain_of(&e, "0-20220601123320.2861043@microchip.com");

		g_assert_cmpstr(json_string_value(json_object_get(x3, "rule")), ==,
				"subject");
		r3 = rejected_of(x3, 1);
		g_assert_cmpstr(r3, ==, "link is a reference: no version wording | "
				"[1] with these fixes for 5.18.");
		r4 = rejected_of(x4, 1);
		g_assert_cmpstr(r4, ==, "link is a dependency, not a version | "
				"This driver depends on [0], for the reference clock.");
		g_assert_cmpstr(json_string_value(json_object_get(x5, "rule")), ==,
				"link");
		g_assert_cmpstr(json_string_value(json_object_get(json_array_get(
			json_object_get(x5, "evidence"), 0), "text")), ==,
			"This is technically a v5 of [0], although a fair bit of "
			"time has");
		text = pgate_threading_explain_text(x5);
		g_assert_true(g_str_has_prefix(text, "supersedes s"));
		g_assert_nonnull(strstr(text, "(v4) — rule link\n  read: This is "
					"technically a v5 of [0]"));
		json_decref(x3);
		json_decref(x4);
		json_decref(x5);
	}
	env_close(&e);
	check_shuffles(raws, 8, 5);
}

/* Patchew's "Supersedes: <ID>" is a version link, whoever sent it and
 * whatever the name; QEMU's "Based-on: <ID>" a dependency. */
static void
test_supersedes_trailer(void)
{
	const char *A = "Alice <alice@redhat.com>", *B = "Bob <bob@linaro.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	json_t *j;
	Env e;

	add_cover_series(raws, B, "20200401101010.1234@linaro.org", "PATCH",
			 "target/arm: base work", 2, 1, "Base.\n");
	add_cover_series(raws, A, "20200402101010.1@redhat.com", "PATCH",
			 "hw/rtc: add goldfish rtc", 2, 2, "Adds it.\n");
	add_cover_series(raws, A, "20200409101010.2@redhat.com", "PATCH v2",
			 "goldfish: an RTC device model", 2, 9,
			 "Reworked.\n\nBased-on: <0-20200401101010.1234@linaro.org>\n"
			 "Supersedes: <0-20200402101010.1@redhat.com>\n");
	env_open(&e);
	env_add(&e, raws, 1);
	sum = chain_summary(&e);
	g_assert_cmpstr(sum, ==, "v1 v1 v2<-v1");
	j = series_json_of(&e, "0-20200409101010.2@redhat.com");
	g_assert_cmpstr(json_string_value(json_object_get(j, "version_link_reason")),
			==, "link");
	g_assert_cmpstr(json_string_value(json_object_get(json_array_get(
		json_object_get(j, "depends_on"), 0), "kind")), ==, "based-on");
	g_assert_nonnull(json_string_value(json_object_get(json_array_get(
		json_object_get(j, "depends_on"), 0), "series")));
	json_decref(j);
	env_close(&e);
	check_shuffles(raws, 4, 6);
}

/* A patch of Matti Vaittinen's "Support ROHM BD72720 PMIC" from @from,
 * whose diff adds @line (the same line, the same patch-id). */
static GBytes *
rohm_patch(const char *from, const char *id, const char *subject, int day,
	   const char *line)
{
	char *m = g_strdup_printf(
		"From: %s\nMessage-ID: <%s>\nSubject: %s\n"
		"Date: Mon, %d Oct 2025 10:00:00 +0300\n"
		"List-Id: <linux-rtc.vger.kernel.org>\n\n"
		"The BD72720 is a power management IC.\n\n"
		"Signed-off-by: Matti Vaittinen <mazziesaccount@gmail.com>\n---\n"
		" drivers/mfd/rohm-bd72720.c | 1 +\n\n"
		"diff --git a/drivers/mfd/rohm-bd72720.c b/drivers/mfd/rohm-bd72720.c\n"
		"--- a/drivers/mfd/rohm-bd72720.c\n+++ b/drivers/mfd/rohm-bd72720.c\n"
		"@@ -1 +1,2 @@\n x\n+%s\n", from, id, subject, day, line);

	return g_bytes_new_take(m, strlen(m));
}

/* One person, several addresses (linux-rtc): Matti Vaittinen sent
 * "Support ROHM BD72720 PMIC" v2 from gmail and v3 from linux.dev, not
 * threaded; v3 changed only the commit messages, so the patch-ids find
 * the pair, and the same name makes them one person: v3 supersedes v2
 * by `subject`.  A resend of v3 through b4's relay ("Matti Vaittinen
 * via B4 Relay <devnull+...>") is `resend`.  Another person's v4 with
 * the same name and patches is not joined (subject similarity and
 * equal patches alone never join two people). */
static void
test_person_addresses(void)
{
	const char *G = "Matti Vaittinen <mazziesaccount@gmail.com>";
	const char *L = "Matti Vaittinen <matti.vaittinen@linux.dev>";
	const char *R = "Matti Vaittinen via B4 Relay "
			"<devnull+matti.vaittinen.linux.dev@kernel.org>";
	const char *O = "Other Person <other@example.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	g_ptr_array_add(raws, rohm_patch(G, "v2-1@gmail.com",
		"[PATCH v2 1/2] mfd: bd72720: add the PMIC", 1, "pmic"));
	g_ptr_array_add(raws, rohm_patch(G, "v2-2@gmail.com",
		"[PATCH v2 2/2] rtc: bd70528: support BD72720", 1, "rtc same"));
	g_ptr_array_add(raws, rohm_patch(L, "v3-1@linux.dev",
		"[PATCH v3 1/2] mfd: bd72720: add the PMIC", 9, "pmic"));
	g_ptr_array_add(raws, rohm_patch(L, "v3-2@linux.dev",
		"[PATCH v3 2/2] rtc: bd70528: support BD72720", 9, "rtc same"));
	g_ptr_array_add(raws, rohm_patch(R, "v3r-1@kernel.org",
		"[PATCH v3 RESEND 1/2] mfd: bd72720: add the PMIC", 16, "pmic"));
	g_ptr_array_add(raws, rohm_patch(R, "v3r-2@kernel.org",
		"[PATCH v3 RESEND 2/2] rtc: bd70528: support BD72720", 16,
		"rtc same"));
	g_ptr_array_add(raws, rohm_patch(O, "o4-1@example.org",
		"[PATCH v4 1/2] mfd: bd72720: add the PMIC", 20, "pmic"));
	g_ptr_array_add(raws, rohm_patch(O, "o4-2@example.org",
		"[PATCH v4 2/2] rtc: bd70528: support BD72720", 20, "rtc same"));
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v2 2/2 C | v3 2/2 C <-subject | "
			"v3 2/2 C <-resend | v4 2/2 C");
	env_close(&e);
	check_shuffles(raws, 8, 7);
}

/* prerequisite-change-id "ID:vN" names version N of that work, not
 * whichever series has the change-id; without ":vN" the newest. */
static void
test_prereq_change_version(void)
{
	const char *A = "Alice <alice@example.org>", *B = "Bob <bob@example.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autofree char *v1 = NULL, *v2 = NULL;
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	Env e;

	g_ptr_array_add(raws, mail(A, "a1@x", "[PATCH] dep: the work", 1,
				   "One.\n\nchange-id: 20240101-work-0123\n", TRUE));
	g_ptr_array_add(raws, mail(A, "a2@x", "[PATCH v2] dep: the work", 5,
				   "Two.\n\nchange-id: 20240101-work-0123\n", TRUE));
	g_ptr_array_add(raws, mail(B, "b1@x", "[PATCH] user: needs v1", 6,
				   "Uses it.\n---\n"
				   "prerequisite-change-id: 20240101-work-0123:v1\n", TRUE));
	g_ptr_array_add(raws, mail(B, "b2@x", "[PATCH] user: needs the newest", 7,
				   "Uses it.\n---\n"
				   "prerequisite-change-id: 20240101-work-0123\n", TRUE));
	env_open(&e);
	env_add(&e, raws, 1);
	txn = pgate_store_begin_read(e.store, &error);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		if (g_strcmp0(s->patches->len ? ((PgateSeriesPatch *)s->patches->pdata[0])->msgid : "", "a1@x") == 0)
			v1 = g_strdup(s->id);
		if (g_strcmp0(s->patches->len ? ((PgateSeriesPatch *)s->patches->pdata[0])->msgid : "", "a2@x") == 0)
			v2 = g_strdup(s->id);
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_nonnull(v1);
	g_assert_nonnull(v2);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		const char *first = ((PgateSeriesPatch *)s->patches->pdata[0])->msgid;
		json_t *j = pgate_threading_series_json(txn, s);
		json_t *deps = json_object_get(j, "depends_on");
		const char *sid = json_string_value(
			json_object_get(json_array_get(deps, 0), "series"));

		if (strcmp(first, "b1@x") == 0)
			g_assert_cmpstr(sid, ==, v1);
		if (strcmp(first, "b2@x") == 0)
			g_assert_cmpstr(sid, ==, v2);
		json_decref(j);
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	g_clear_pointer(&txn, pgate_store_txn_free);
	env_close(&e);
}

static char *
fixture_path(const char *name)
{
	g_autofree char *f = g_strconcat(name, ".mbox", NULL);

	return g_build_filename(corpus(), "patchwork", "series", f, NULL);
}

static gboolean
have_corpus(void)
{
	g_autofree char *p = NULL;

	if (corpus() == NULL) {
		g_test_skip("PGATE_TEST_CORPUS not set");
		return FALSE;
	}
	p = fixture_path("base-single-patch");
	if (!g_file_test(p, G_FILE_TEST_EXISTS)) {
		g_test_skip("no Patchwork series fixtures in the corpus");
		return FALSE;
	}
	return TRUE;
}

static void
test_patchwork(gconstpointer data)
{
	guint i = GPOINTER_TO_UINT(data);
	g_autofree char *path = NULL, *got = NULL;
	g_autoptr(GPtrArray) raws = NULL;
	Env e = { 0 };

	if (!have_corpus())
		return;
	path = fixture_path(pw_table[i].name);
	raws = read_mbox(path);
	env_open(&e);
	env_add(&e, raws, 1);	/* file order, one by one, as parsemail */
	got = summary(&e);
	g_assert_cmpstr(got, ==, pw_table[i].expect);
	env_close(&e);
}

/* The dump after adding @raws in @order, in transactions of @batch. */
static char *
dump_in_order(GPtrArray *raws, const guint *order, guint batch,
	      gboolean rethread, char **out_rethread)
{
	g_autoptr(GPtrArray) perm = g_ptr_array_new();
	Env e = { 0 };
	char *d;

	for (guint i = 0; i < raws->len; i++)
		g_ptr_array_add(perm, raws->pdata[order[i]]);
	env_open(&e);
	env_add(&e, perm, batch);
	d = env_dump(&e);
	if (rethread) {
		g_autoptr(GError) error = NULL;

		g_assert_true(pgate_threading_rethread(e.store, NULL, &error));
		g_assert_no_error(error);
		*out_rethread = env_dump(&e);
	}
	env_close(&e);
	return d;
}

static void
check_shuffles(GPtrArray *raws, guint runs, guint32 seed)
{
	g_autofree guint *order = g_new(guint, raws->len);
	g_autofree char *ref = NULL, *re = NULL;
	g_autoptr(GRand) rand = g_rand_new_with_seed(seed);

	for (guint i = 0; i < raws->len; i++)
		order[i] = i;
	/* the reference: file order in one batch, then rethread */
	ref = dump_in_order(raws, order, raws->len, TRUE, &re);
	g_assert_cmpstr(re, ==, ref);
	g_assert_cmpuint(strlen(ref), >, 0);
	for (guint r = 0; r < runs; r++) {
		g_autofree char *d = NULL;
		guint batch;

		for (guint i = raws->len; i > 1; i--) {
			guint j = (guint)g_rand_int_range(rand, 0, (gint32)i);
			guint t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		/* deliver-style one by one, or batches of various sizes */
		batch = r % 3 == 0 ? 1 : (guint)g_rand_int_range(rand, 2, 64);
		d = dump_in_order(raws, order, batch, FALSE, NULL);
		if (strcmp(d, ref) != 0) {
			g_test_message("run %u (batch %u) differs", r, batch);
			g_assert_cmpstr(d, ==, ref);
		}
	}
}

static void
test_order_patchwork(void)
{
	if (!have_corpus())
		return;
	for (gsize i = 0; i < G_N_ELEMENTS(pw_table); i++) {
		g_autofree char *path = fixture_path(pw_table[i].name);
		g_autoptr(GPtrArray) raws = read_mbox(path);

		check_shuffles(raws, 50, 1000 + (guint32)i);
	}
}

typedef struct {
	GPtrArray *raws;
	guint from, to;
	PgateThreading *thr;
} DelCtx;

/* Deletes raws[from..to) as public-inbox's "d" commits do: the stored
 * record goes to the hook. */
static gboolean
delete_slice(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	DelCtx *c = payload;
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;

	pgate_ingest_options_resolve(&o);
	if (!pgate_threading_hook_begin(txn, c->thr, error))
		return FALSE;
	for (guint i = c->from; i < c->to; i++) {
		gsize len;
		const char *d = g_bytes_get_data(c->raws->pdata[i], &len);
		g_autoptr(PgateMail) m = pgate_mail_parse(d, len, &o);
		g_autoptr(GArray) nums = pgate_store_message_lookup(
			txn, m->rec->msgid, error);
		g_autoptr(PgateMessageRec) old = NULL;

		if (nums == NULL)
			return FALSE;
		for (guint k = 0; k < nums->len && old == NULL; k++) {
			PgateMessageRec *r = pgate_store_message_get(
				txn, g_array_index(nums, guint64, k), error);

			if (r == NULL)
				return FALSE;
			if (memcmp(r->content_hash, m->rec->content_hash, 32) == 0)
				old = r;
			else
				pgate_message_rec_free(r);
		}
		g_assert_nonnull(old);
		if (!pgate_store_message_delete(txn, old->msgid, old->content_hash,
						NULL, error) ||
		    !pgate_threading_hook_deleted(txn, old, c->thr, error))
			return FALSE;
	}
	return pgate_threading_hook_commit(txn, c->thr, error);
}

/* Shows the series lines only in @a or only in @b. */
static void
diff_dumps(const char *a, const char *b)
{
	g_auto(GStrv) la = g_strsplit(a, "\n", -1);
	g_auto(GStrv) lb = g_strsplit(b, "\n", -1);

	for (guint i = 0; la[i]; i++)
		if (!g_strv_contains((const char *const *)lb, la[i]))
			g_test_message("only after deleting: %s", la[i]);
	for (guint i = 0; lb[i]; i++)
		if (!g_strv_contains((const char *const *)la, lb[i]))
			g_test_message("only without ingesting: %s", lb[i]);
}

/* Deleting messages (public-inbox purge, a "d" commit) leaves what
 * ingesting only the rest gives: 60 random messages of linux-i3c deleted
 * one by one and in batches, three times. */
static void
test_delete_i3c(void)
{
	g_autofree char *path = NULL;
	g_autoptr(GPtrArray) raws = NULL;
	g_autoptr(GRand) rand = g_rand_new_with_seed(77);

	if (corpus() == NULL) {
		g_test_skip("PGATE_TEST_CORPUS not set");
		return;
	}
	path = g_build_filename(corpus(), "linux-i3c.mbox", NULL);
	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_test_skip("no linux-i3c.mbox in the corpus");
		return;
	}
	raws = read_mbox(path);
	for (guint run = 0; run < 3; run++) {
		g_autoptr(GPtrArray) order = g_ptr_array_new();
		g_autoptr(GPtrArray) kept = g_ptr_array_new();
		g_autoptr(GPtrArray) gone = g_ptr_array_new();
		g_autofree char *after = NULL, *fresh = NULL;
		Env e;

		for (guint i = 0; i < raws->len; i++)
			g_ptr_array_add(order, raws->pdata[i]);
		for (guint i = order->len; i > 1; i--) {
			guint j = (guint)g_rand_int_range(rand, 0, (gint32)i);
			gpointer t = order->pdata[i - 1];

			order->pdata[i - 1] = order->pdata[j];
			order->pdata[j] = t;
		}
		for (guint i = 0; i < order->len; i++)
			g_ptr_array_add(i < 60 ? gone : kept, order->pdata[i]);

		env_open(&e);
		env_add(&e, raws, raws->len);
		for (guint i = 0; i < gone->len;) {
			g_autoptr(GError) error = NULL;
			guint n = run == 0 ? 1 : (guint)g_rand_int_range(rand, 1, 20);
			DelCtx c = { gone, i, MIN(i + n, gone->len), e.thr };

			g_assert_true(pgate_store_write(e.store, delete_slice, &c,
							&error));
			g_assert_no_error(error);
			i = c.to;
		}
		after = env_dump(&e);
		env_close(&e);

		fresh = dump_of(kept, kept->len);
		if (strcmp(after, fresh) != 0) {
			diff_dumps(after, fresh);
			g_test_fail_printf("run %u: deleting differs from not ingesting",
					   run);
			return;
		}
	}
}

static void
test_order_i3c(void)
{
	g_autofree char *path = NULL;
	g_autoptr(GPtrArray) raws = NULL;

	if (corpus() == NULL) {
		g_test_skip("PGATE_TEST_CORPUS not set");
		return;
	}
	path = g_build_filename(corpus(), "linux-i3c.mbox", NULL);
	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_test_skip("no linux-i3c.mbox in the corpus");
		return;
	}
	raws = read_mbox(path);
	g_assert_cmpuint(raws->len, >, 500);
	/* 50 orders; 15 in a sanitized build, where each costs 4 times as
	 * much (tests/meson.build, PGATE_TEST_SANITIZED) */
	check_shuffles(raws, g_test_slow() ? 200
		       : g_strcmp0(g_getenv("PGATE_TEST_SANITIZED"), "1") == 0
		       ? 15 : 50, 42);
}

/* A generated list (fixtures/gen-list.py, 200 messages): every kind of
 * re-roll the generator knows (change-id, in-reply-to, partial re-roll,
 * resend, subject only, unthreaded series, a reused Message-ID, a
 * duplicate), shuffled. */
static GPtrArray *
genlist_raws(const char *messages, const char *seed)
{
	const char *py = "/usr/bin/python3";
	g_autofree char *dir = NULL, *gen = NULL, *mbox = NULL, *repo = NULL;
	g_autofree char *err = NULL, *git = g_find_program_in_path("git");
	g_autoptr(GError) error = NULL;
	GPtrArray *raws;
	const char *src = g_getenv("PGATE_SRCDIR");
	gint status = 0;

	if (src == NULL || !g_file_test(py, G_FILE_TEST_IS_EXECUTABLE) ||
	    git == NULL) {
		g_test_skip("needs PGATE_SRCDIR, /usr/bin/python3 and git");
		return NULL;
	}
	dir = g_dir_make_tmp("pgate-thr-gen-XXXXXX", &error);
	g_assert_no_error(error);
	gen = g_build_filename(src, "fixtures", "gen-list.py", NULL);
	mbox = g_build_filename(dir, "list.mbox", NULL);
	repo = g_build_filename(dir, "repo.git", NULL);
	{
		const char *argv[] = { py, gen, "--quiet", "--messages",
				       messages, "--seed", seed, "--out", mbox,
				       "--repo", repo, NULL };

		g_assert_true(g_spawn_sync(dir, (char **)argv, NULL,
					   G_SPAWN_DEFAULT, NULL, NULL, NULL,
					   &err, &status, &error));
		g_assert_no_error(error);
		if (!g_spawn_check_wait_status(status, NULL))
			g_error("gen-list.py failed: %s", err);
	}
	raws = read_mbox(mbox);
	pgate_test_rm_rf(dir);
	return raws;
}

static void
test_order_genlist(void)
{
	g_autoptr(GPtrArray) raws = genlist_raws("200", "11");

	if (raws == NULL)
		return;
	g_assert_cmpuint(raws->len, >, 200);
	check_shuffles(raws, g_test_slow() ? 100 : 24, 7);
}

static char *series_dump(Env *e);

/* The rethread in batches, with what happens between them: deliveries
 * (threaded into the live generation), readers (who see the old series
 * until the switch), a deletion of a message the new generation holds
 * already (which starts it again), and a stop (after which the next
 * rethread goes on).  The end is what threading the same messages at
 * once gives. */
typedef struct {
	Env *e;
	GPtrArray *raws;
	guint calls;
	guint late;          /* raws[late..] are delivered during it */
	char *before;        /* series_dump before the rethread */
	guint64 deleted;     /* the number of the message deleted */
	guint stop_at;       /* the call that stops it (0: none) */
	guint64 last;        /* where the call before got to */
	gboolean restarted;
} BatchCtx;

static gboolean
delete_num(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	BatchCtx *c = payload;
	g_autoptr(PgateMessageRec) old = pgate_store_message_get(
		txn, c->deleted, error);

	return old != NULL &&
	       pgate_threading_hook_begin(txn, c->e->thr, error) &&
	       pgate_store_message_delete(txn, old->msgid, old->content_hash,
					  NULL, error) &&
	       pgate_threading_hook_deleted(txn, old, c->e->thr, error) &&
	       pgate_threading_hook_commit(txn, c->e->thr, error);
}

static gboolean
batch_progress(guint64 messages, guint64 last, gpointer data)
{
	BatchCtx *c = data;
	g_autoptr(GError) error = NULL;

	c->calls++;
	if (c->calls == 1) {
		/* a reader: the old series, in the old generation */
		g_autofree char *now = series_dump(c->e);
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(c->e->store, &error);

		g_assert_cmpstr(now, ==, c->before);
		g_assert_cmpuint(pgate_store_derived_generation(txn), ==, 0);
	}
	if (c->calls == 2) {
		/* deliveries, threaded into the live generation */
		AddCtx a = { c->raws, c->late, c->late + 5, c->e->thr, TRUE,
			     FALSE, 0 };

		g_assert_true(pgate_store_write(c->e->store, add_slice, &a,
						&error));
		g_assert_no_error(error);
	}
	if (c->calls == 4) {
		/* message 3, threaded into the new generation already */
		g_assert_cmpuint(last, >, c->deleted);
		g_assert_true(pgate_store_write(c->e->store, delete_num, c,
						&error));
		g_assert_no_error(error);
	}
	if (c->calls == 5)
		c->restarted = last < c->last;
	c->last = last;
	return c->calls != c->stop_at;
}

static void
test_rethread_batched(void)
{
	g_autoptr(GPtrArray) raws = genlist_raws("120", "12");
	g_autoptr(GPtrArray) kept = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *want = NULL, *got = NULL, *again = NULL;
	PgateThreadingStats st;
	Env e, ref;
	BatchCtx c = { &e, NULL, 0, 0, NULL, 3, 9, 0, FALSE };

	if (raws == NULL)
		return;
	g_assert_cmpuint(raws->len, >, 100);
	c.raws = raws;
	c.late = raws->len - 10;
	env_open(&e);
	/* all but the last ten, then a rethread of 7 messages a batch */
	{
		g_autoptr(GPtrArray) head = g_ptr_array_new();

		for (guint i = 0; i < c.late; i++)
			g_ptr_array_add(head, raws->pdata[i]);
		env_add(&e, head, 40);
	}
	c.before = series_dump(&e);
	g_assert_false(pgate_threading_rethread_batched(
		e.store, 7, batch_progress, &c, &st, &error));
	g_assert_error(error, PGATE_STORE_ERROR, PGATE_ERROR_FAILED);
	g_clear_error(&error);
	g_assert_cmpuint(c.calls, ==, c.stop_at);
	g_assert_true(c.restarted);
	/* stopped: the store is as threading left it, the old generation */
	{
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(e.store, &error);
		g_autoptr(GBytes) p = pgate_store_meta_get(
			txn, "rethread_progress", &error);

		g_assert_no_error(error);
		g_assert_cmpuint(pgate_store_derived_generation(txn), ==, 0);
		g_assert_nonnull(p);
		/* where it stopped: five batches of 7 since the restart
		 * (calls 5 to 9), over numbers 1 to 36 less the deleted 3 */
		g_assert_cmpuint(pgate_threading_rethread_at(txn), ==, 5 * 7 + 1);
	}
	/* the next one goes on; the last five delivered after it */
	c.stop_at = 0;
	g_assert_true(pgate_threading_rethread_batched(e.store, 7, NULL, NULL,
						       &st, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(st.messages, <, raws->len - 10);
	{
		AddCtx a = { raws, c.late + 5, raws->len, e.thr, TRUE, FALSE,
			     0 };

		g_assert_true(pgate_store_write(e.store, add_slice, &a, &error));
		g_assert_no_error(error);
	}
	{
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(e.store, &error);
		g_autoptr(GBytes) p = pgate_store_meta_get(
			txn, "rethread_progress", NULL);
		g_autoptr(GBytes) schema = pgate_store_meta_get(
			txn, "schema_version", &error);

		g_assert_no_error(error);
		g_assert_cmpuint(pgate_store_derived_generation(txn), ==, 1);
		g_assert_null(p);
		g_assert_cmpuint(g_bytes_get_size(schema), ==, 4);
		g_assert_cmpuint(((const guint8 *)g_bytes_get_data(schema,
				  NULL))[3], ==, PGATE_STORE_SCHEMA_VERSION);
	}
	got = env_dump(&e);
	/* the reference: the same messages (all but message 3), at once */
	kept = g_ptr_array_new();
	for (guint i = 0; i < raws->len; i++)
		if (i != c.deleted - 1)
			g_ptr_array_add(kept, raws->pdata[i]);
	env_open(&ref);
	env_add(&ref, kept, kept->len);
	want = env_dump(&ref);
	g_assert_cmpstr(got, ==, want);
	/* and back to generation 0, one message a batch */
	g_assert_true(pgate_threading_rethread_batched(e.store, 1, NULL, NULL,
						       &st, &error));
	g_assert_no_error(error);
	again = env_dump(&e);
	g_assert_cmpstr(again, ==, want);
	{
		g_autoptr(PgateStoreTxn) txn =
			pgate_store_begin_read(e.store, &error);

		/* every stored message (gen-list repeats one: not stored) */
		g_assert_cmpuint(st.messages, ==,
				 pgate_store_message_count(txn));
		g_assert_cmpuint(st.messages, >=, kept->len - 1);
		g_assert_cmpuint(pgate_store_derived_generation(txn), ==, 0);
	}
	g_free(c.before);
	env_close(&ref);
	env_close(&e);
}

/* One more message in a store of many unrelated threads reads only its
 * own unit. */
static void
test_incremental(void)
{
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(GPtrArray) last = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	static const char reply[] =
		"From: r@example.org\nSubject: Re: [PATCH] change 7\n"
		"Message-ID: <r7@example.org>\nIn-Reply-To: <p7@example.org>\n"
		"References: <p7@example.org>\n"
		"Date: Tue, 2 Jan 2024 00:00:00 +0000\n\n"
		"Reviewed-by: R <r@example.org>\n";
	Env e = { 0 };
	guint64 before;

	for (guint i = 0; i < 200; i++) {
		char *m = g_strdup_printf(
			"From: a%u@example.org\nSubject: [PATCH] change %u\n"
			"Message-ID: <p%u@example.org>\n"
			"Date: Mon, 1 Jan 2024 %02u:%02u:00 +0000\n\n"
			"text\n---\ndiff --git a/f%u b/f%u\n--- a/f%u\n+++ b/f%u\n"
			"@@ -1 +1 @@\n-a\n+b\n", i % 7, i, i, (i / 60) % 24,
			i % 60, i, i, i, i);

		g_ptr_array_add(raws, g_bytes_new_take(m, strlen(m)));
	}
	env_open(&e);
	env_add(&e, raws, 50);
	before = pgate_threading_recomputed(e.thr);
	g_assert_cmpuint(before, ==, 200);
	/* a reply to p7: its unit is p7 and the reply */
	g_ptr_array_add(last, g_bytes_new_static(reply, sizeof reply - 1));
	env_add(&e, last, 1);
	g_assert_cmpuint(pgate_threading_recomputed(e.thr) - before, ==, 2);
	{
		g_autofree char *d = env_dump(&e);

		g_assert_nonnull(strstr(d, "\"Reviewed-by\""));
	}
	env_close(&e);
}

/* A message added and deleted in one transaction leaves what never adding
 * it gives, whichever of a series's messages it is: the threading hooks
 * hold the transaction's added messages by number until the commit, and
 * the deleted one must not be among them. */
static void
test_delete_same_txn(void)
{
	const char *A = "Alice <alice@example.org>";
	static const char *const subj[] = {
		"[PATCH 0/2] widget: knobs", "[PATCH 1/2] widget: frob",
		"[PATCH 2/2] widget: twiddle",
	};
	static const char *const ids[] = { "c@x", "p1@x", "p2@x" };
	static const char review[] =
		"From: Bob <bob@example.org>\nMessage-ID: <r@x>\n"
		"In-Reply-To: <p2@x>\nReferences: <c@x> <p2@x>\n"
		"Subject: Re: [PATCH 2/2] widget: twiddle\n"
		"Date: Tue, 2 Jan 2024 10:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\n"
		"Reviewed-by: Bob <bob@example.org>\n";

	for (guint del = 0; del < 4; del++) {
		g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
			(GDestroyNotify)g_bytes_unref);
		g_autoptr(GPtrArray) kept = g_ptr_array_new();
		g_autoptr(GError) error = NULL;
		g_autofree char *after = NULL, *without = NULL;
		AddCtx c;
		Env e;

		for (guint i = 0; i < 3; i++) {
			g_autoptr(GString) m = g_string_new(NULL);

			g_string_append_printf(m, "From: %s\nMessage-ID: <%s>\n"
					       "Subject: %s\n"
					       "Date: Mon, 1 Jan 2024 10:00:0%u +0000\n"
					       "List-Id: <widgets.example.org>\n",
					       A, ids[i], subj[i], i);
			if (i > 0)
				g_string_append(m, "In-Reply-To: <c@x>\n"
						   "References: <c@x>\n");
			g_string_append_printf(m, "\nChange %u.\n", i);
			if (i > 0)
				g_string_append_printf(
					m, "---\ndiff --git a/a.c b/a.c\n"
					"--- a/a.c\n+++ b/a.c\n@@ -1 +1,2 @@\n"
					" x\n+%u\n", i);
			g_ptr_array_add(raws, g_string_free_to_bytes(
				g_steal_pointer(&m)));
		}
		g_ptr_array_add(raws, g_bytes_new_static(review,
							 sizeof review - 1));
		for (guint i = 0; i < raws->len; i++)
			if (i != del)
				g_ptr_array_add(kept, raws->pdata[i]);

		env_open(&e);
		c = (AddCtx){ raws, 0, raws->len, e.thr, TRUE, TRUE, del };
		g_assert_true(pgate_store_write(e.store, add_slice, &c, &error));
		g_assert_no_error(error);
		after = env_dump(&e);
		env_close(&e);

		without = dump_of(kept, kept->len);
		g_assert_cmpstr(after, ==, without);
		/* the review stays but for its own deletion: without the
		 * patch it answers, it reaches the cover through References */
		g_assert_true((strstr(after, "\"Reviewed-by\"") != NULL) ==
			      (del != 3));
	}
}

/* Two writers on one store, as a bulk ingest and a delivery hook: each
 * threading instance keeps the series its link passes read from one of
 * its transactions to the next, and must not trust them after the other
 * wrote.  A reviews v1 (written by the second instance); the first then
 * links v2 to v1, which sets v1's superseded_by: from a stale copy of v1
 * that would drop the review.  The result must be what a rethread
 * gives. */
static void
test_two_writers(void)
{
	static const char review[] =
		"From: Bob <bob@example.org>\nMessage-ID: <r@x>\n"
		"In-Reply-To: <v1@x>\nReferences: <v1@x>\n"
		"Subject: Re: [PATCH] widget: frob the knob\n"
		"Date: Tue, 2 Jan 2024 10:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\n"
		"Reviewed-by: Bob <bob@example.org>\n";
	const char *A = "Alice <alice@example.org>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *d = NULL, *re = NULL;
	PgateThreading *other = pgate_threading_new();
	PgateThreading *writer[3];
	Env e;

	g_ptr_array_add(raws, mail(A, "v1@x", "[PATCH] widget: frob the knob",
				   1, "Frob.\n\nSigned-off-by: Alice "
				   "<alice@example.org>\n", TRUE));
	g_ptr_array_add(raws, g_bytes_new_static(review, sizeof review - 1));
	g_ptr_array_add(raws, mail(A, "v2@x",
				   "[PATCH v2] widget: frob the knob", 3,
				   "Frob better.\n\nSigned-off-by: Alice "
				   "<alice@example.org>\n", TRUE));
	env_open(&e);
	writer[0] = e.thr;
	writer[1] = other;
	writer[2] = e.thr;
	for (guint i = 0; i < raws->len; i++) {
		g_autoptr(GError) error = NULL;
		AddCtx c = { raws, i, i + 1, writer[i], TRUE, FALSE, 0 };

		g_assert_true(pgate_store_write(e.store, add_slice, &c,
						&error));
		g_assert_no_error(error);
	}
	d = env_dump(&e);
	g_assert_nonnull(strstr(d, "\"Reviewed-by\""));
	{
		g_autoptr(GError) error = NULL;

		g_assert_true(pgate_threading_rethread(e.store, NULL, &error));
		g_assert_no_error(error);
	}
	re = env_dump(&e);
	g_assert_cmpstr(d, ==, re);
	g_assert_nonnull(strstr(d, "\"v2@x\""));
	pgate_threading_free(other);
	env_close(&e);
}

/* Series ids are stored and shown: they must not change with how the
 * hash is computed.  Against GLib's SHA-256, with and without a salt,
 * and for an anchor longer than a SHA-256 block. */
static void
test_series_id(void)
{
	const char *anchors[] = {
		"20230405020806.604036-0-npetrov@example.net",
		"x@y",
		("a-message-id-longer-than-one-sha256-block-of-64-bytes-"
		 "0123456789abcdef@example.org"),
	};

	for (gsize i = 0; i < G_N_ELEMENTS(anchors); i++)
		for (guint salt = 0; salt < 3; salt++) {
			g_autofree char *in = salt
				? g_strdup_printf("%s\n#%u", anchors[i], salt)
				: g_strdup(anchors[i]);
			g_autofree char *sum = g_compute_checksum_for_string(
				G_CHECKSUM_SHA256, in, -1);
			g_autofree char *want = g_strdup_printf("s%.12s", sum);
			g_autofree char *got =
				pgate_threading__series_id(anchors[i], salt);

			g_assert_cmpstr(got, ==, want);
		}
}

/* The Message-ID maps the units use: filled past several resizes,
 * emptied either way (a few entries in a big table: the slots filled
 * are cleared one by one; many: all at once), and filled again: nothing
 * from before shows through, and every value is found. */
static void
test_idmap(void)
{
	PgateThrIdMap m = { 0 };
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	const guint sizes[] = { 1000, 3, 1000, 40, 0, 7 };
	guint round;

	for (guint i = 0; i < 2000; i++)
		g_ptr_array_add(ids, g_strdup_printf("m%u@example.org", i));
	g_assert_null(pgate_threading__idmap_get(&m, "m0@example.org"));
	for (round = 0; round < G_N_ELEMENTS(sizes); round++) {
		/* each round its own IDs: half new, half the last round's */
		guint from = round * 150;

		for (guint i = 0; i < sizes[round]; i++) {
			const char *id = ids->pdata[from + i];

			g_assert_true(pgate_threading__idmap_set(
				&m, id, GUINT_TO_POINTER(i + 1)));
		}
		/* a second set replaces the value, and says so */
		if (sizes[round] > 0)
			g_assert_false(pgate_threading__idmap_set(
				&m, ids->pdata[from], GUINT_TO_POINTER(1)));
		/* an add of a mapped ID keeps the first value, and says so */
		if (sizes[round] > 1)
			g_assert_false(pgate_threading__idmap_add(
				&m, ids->pdata[from + 1], GUINT_TO_POINTER(99)));
		g_assert_cmpuint(m.len, ==, sizes[round]);
		for (guint i = 0; i < ids->len; i++) {
			gpointer v = pgate_threading__idmap_get(&m,
								ids->pdata[i]);
			gboolean in = i >= from && i < from + sizes[round];

			if (in)
				g_assert_cmpuint(GPOINTER_TO_UINT(v), ==,
						 i - from + 1);
			else
				g_assert_null(v);
		}
		pgate_threading__idmap_clear(&m);
		g_assert_cmpuint(m.len, ==, 0);
		for (guint i = 0; i < ids->len; i++)
			g_assert_null(pgate_threading__idmap_get(
				&m, ids->pdata[i]));
	}
	pgate_threading__idmap_free(&m);
}

/* The number of trailers on the patches of the series whose first patch
 * is Message-ID @msgid. */
static guint
trailers_of(Env *e, const char *msgid)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, &error);
	PgateStoreSeriesIter it;
	PgateSeriesRec *s;
	guint n = G_MAXUINT;

	g_assert_no_error(error);
	pgate_store_series_iter_init(&it, txn);
	while (pgate_store_series_iter_next(&it, &s, &error)) {
		PgateSeriesPatch *p = s->patches->len > 0
			? s->patches->pdata[0] : NULL;

		if (p != NULL && strcmp(p->msgid, msgid) == 0) {
			n = 0;
			for (guint i = 0; i < s->patches->len; i++)
				n += ((PgateSeriesPatch *)s->patches->pdata[i])
					->trailers->len;
		}
		pgate_series_rec_free(s);
	}
	pgate_store_series_iter_clear(&it);
	g_assert_no_error(error);
	return n;
}

/* Some clients put addresses in References.  A reference equal to the
 * From, a To or a Cc address of its own message, in any case, is not a
 * reference, even when a message has that string as its Message-ID (the
 * parser drops it, and threading relies on PgateMessageRec saying so): the
 * review replies below do not thread under the patches whose IDs look
 * like their senders' and Cc's addresses, so their trailers land
 * nowhere; the control reply, whose reference is no address of its own,
 * does thread, and its trailer lands. */
static void
test_ref_addresses(void)
{
	static const char *const raw[] = {
		"From: Alice <alice@example.org>\nMessage-ID: <bob@example.org>\n"
		"Subject: [PATCH] widget: frob\nDate: Mon, 1 Jan 2024 10:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\nFrob.\n---\n"
		"diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1 +1,2 @@\n x\n+y\n",
		"From: Alice <alice@example.org>\nMessage-ID: <dave@example.org>\n"
		"Subject: [PATCH] gadget: frob\nDate: Mon, 1 Jan 2024 11:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\nFrob.\n---\n"
		"diff --git a/b.c b/b.c\n--- a/b.c\n+++ b/b.c\n@@ -1 +1,2 @@\n x\n+z\n",
		"From: Alice <alice@example.org>\nMessage-ID: <p3@example.org>\n"
		"Subject: [PATCH] doohickey: frob\nDate: Mon, 1 Jan 2024 12:00:00 +0000\n"
		"List-Id: <widgets.example.org>\n\nFrob.\n---\n"
		"diff --git a/c.c b/c.c\n--- a/c.c\n+++ b/c.c\n@@ -1 +1,2 @@\n x\n+w\n",
		/* its sender's address, another case */
		"From: Bob <Bob@Example.ORG>\nMessage-ID: <r1@example.net>\n"
		"Subject: Re: [PATCH] widget: frob\nDate: Tue, 2 Jan 2024 10:00:00 +0000\n"
		"References: <BOB@example.org>\nIn-Reply-To: <bob@example.org>\n"
		"List-Id: <widgets.example.org>\n\n"
		"Reviewed-by: Bob <bob@example.org>\n",
		/* a Cc's address */
		"From: Carol <carol@example.org>\nMessage-ID: <r2@example.net>\n"
		"Cc: Widgets <widgets@example.org>, Dave <Dave@example.org>\n"
		"Subject: Re: [PATCH] gadget: frob\nDate: Tue, 2 Jan 2024 11:00:00 +0000\n"
		"In-Reply-To: <dave@example.org>\n"
		"List-Id: <widgets.example.org>\n\n"
		"Acked-by: Carol <carol@example.org>\n",
		/* control; a Reported-by is collected too (b4 does), an
		 * Fixes is not */
		"From: Carol <carol@example.org>\nMessage-ID: <r3@example.net>\n"
		"Cc: Widgets <widgets@example.org>\n"
		"Subject: Re: [PATCH] doohickey: frob\nDate: Tue, 2 Jan 2024 12:00:00 +0000\n"
		"In-Reply-To: <p3@example.org>\n"
		"List-Id: <widgets.example.org>\n\n"
		"Acked-by: Carol <carol@example.org>\n"
		"Reported-by: Erin <erin@example.org>\n"
		"Fixes: 0123456789ab (\"doohickey: add\")\n",
	};
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	Env e;

	for (gsize i = 0; i < G_N_ELEMENTS(raw); i++)
		g_ptr_array_add(raws, g_bytes_new_static(raw[i],
							  strlen(raw[i])));
	env_open(&e);
	env_add(&e, raws, 1);
	g_assert_cmpuint(trailers_of(&e, "bob@example.org"), ==, 0);
	g_assert_cmpuint(trailers_of(&e, "dave@example.org"), ==, 0);
	g_assert_cmpuint(trailers_of(&e, "p3@example.org"), ==, 2);
	env_close(&e);
}

/* ---- a threading failure does not hold the mail back ---- */

/* p1 and p2 are a series, r1 a review of p1, p3 a series of its own */
static const char *const skip_mails[][2] = {
	{ "p1@x", "Subject: [PATCH 1/2] foo: one\nDate: Mon, 2 Jan 2023 10:00:00 +0000\n" },
	{ "p2@x", "Subject: [PATCH 2/2] foo: two\nDate: Mon, 2 Jan 2023 10:00:01 +0000\n"
		  "In-Reply-To: <p1@x>\nReferences: <p1@x>\n" },
	{ "r1@x", "Subject: Re: [PATCH 1/2] foo: one\nDate: Mon, 2 Jan 2023 12:00:00 +0000\n"
		  "In-Reply-To: <p1@x>\nReferences: <p1@x>\n" },
	{ "p3@x", "Subject: [PATCH] bar: three\nDate: Tue, 3 Jan 2023 10:00:00 +0000\n" },
};

static char *
skip_mail(guint i)
{
	gboolean reply = g_str_has_prefix(skip_mails[i][1], "Subject: Re:");

	return g_strdup_printf(
		"From: Alice Carter <alice@example.org>\nTo: l@example.org\n"
		"Message-ID: <%s>\n%s\n%s", skip_mails[i][0], skip_mails[i][1],
		reply ? "Reviewed-by: Bob Dole <bob@example.org>\n"
		      : "A patch.\n---\ndiff --git a/f.c b/f.c\n--- a/f.c\n"
			"+++ b/f.c\n@@ -1 +1 @@\n-a\n+b\n");
}

static void
thread_hooks(PgateThreading *t, PgateIngestHooks *h)
{
	*h = (PgateIngestHooks){ pgate_threading_hook_begin,
				 pgate_threading_hook_added,
				 pgate_threading_hook_deleted,
				 pgate_threading_hook_commit,
				 pgate_threading_hook_skipped, t };
}

/* Delivers @text as `patchgate deliver` does; the outcome of
 * pgate_ingest_deliver(), its error in @error. */
static gboolean
deliver_text(Env *e, const char *text, const PgateIngestHooks *h,
	     PgateStoreAddResult *res, GError **error)
{
	g_autofree char *path = g_build_filename(e->dir, "mail.eml", NULL);
	PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
	gboolean ok;
	int fd;

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	fd = open(path, O_RDONLY);
	g_assert_cmpint(fd, >=, 0);
	o.hooks = h;
	ok = pgate_ingest_deliver(e->store, e->dir, fd, &o, res, NULL, error);
	close(fd);
	return ok;
}

/* Delivers skip_mails[i] with threading's hooks and a new
 * PgateThreading (@deferred: as ingest --no-thread); returns its
 * pgate_threading_skipped() (or "") and, in *@stale, its
 * pgate_threading_stale(). */
static char *
deliver_threaded_as(Env *e, guint i, gboolean deferred, gboolean *stale)
{
	g_autoptr(PgateThreading) t = pgate_threading_new();
	g_autofree char *text = skip_mail(i);
	g_autoptr(GError) error = NULL;
	PgateStoreAddResult res;
	PgateIngestHooks h;

	thread_hooks(t, &h);
	pgate_threading_set_deferred(t, deferred);
	g_assert_true(deliver_text(e, text, &h, &res, &error));
	g_assert_no_error(error);
	*stale = pgate_threading_stale(t);
	return g_strdup(pgate_threading_skipped(t) ? pgate_threading_skipped(t)
						   : "");
}

static char *
deliver_threaded(Env *e, guint i, gboolean *stale)
{
	return deliver_threaded_as(e, i, FALSE, stale);
}

/* The meta flag "rethread_needed", or "" */
static char *
rethread_flag(PgateStore *s)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, NULL);
	g_autoptr(GBytes) b = pgate_store_meta_get(txn, "rethread_needed", NULL);

	return b ? g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b))
		 : g_strdup("");
}

static void
assert_flag(PgateStore *s, const char *want)
{
	g_autofree char *got = rethread_flag(s);

	g_assert_cmpstr(got, ==, want);
}

/* pgate_store_threading_failed() */
static void
assert_failed(PgateStore *s, const char *want)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, NULL);
	g_autofree char *got = pgate_store_threading_failed(txn);

	g_assert_cmpstr(got, ==, want);
}

/* The store closed, LMDB itself writes garbage under @key in database
 * @db: a record that no longer decodes. */
static void
corrupt_record(Env *e, const char *db, const void *key, gsize klen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { klen, (void *)key }, v = { 7, (void *)"garbage" };

	pgate_store_free(e->store);
	g_assert_cmpint(mdb_env_create(&env), ==, 0);
	g_assert_cmpint(mdb_env_set_maxdbs(env, 32), ==, 0);
	g_assert_cmpint(mdb_env_open(env, e->dir, MDB_NOTLS, 0600), ==, 0);
	g_assert_cmpint(mdb_txn_begin(env, NULL, 0, &txn), ==, 0);
	g_assert_cmpint(mdb_dbi_open(txn, db, 0, &dbi), ==, 0);
	g_assert_cmpint(mdb_put(txn, dbi, &k, &v, 0), ==, 0);
	g_assert_cmpint(mdb_txn_commit(txn), ==, 0);
	mdb_env_close(env);
	e->store = pgate_store_open(e->dir, PGATE_STORE_RW, NULL, NULL);
	g_assert_nonnull(e->store);
}

/* The series record of message 1 no longer decodes. */
static void
corrupt_series_of_first(Env *e)
{
	g_autofree char *sid = NULL;

	{
		g_autoptr(PgateStoreTxn) r = pgate_store_begin_read(e->store,
								     NULL);

		g_assert_true(pgate_store_msg_series_get(r, 1, &sid, NULL));
		g_assert_nonnull(sid);
	}
	corrupt_record(e, "series", sid, strlen(sid));
}

/* A corrupt series record fails threading for good: the review is
 * stored anyway, the store is marked stale, later deliveries store
 * without threading until the rethread, which gives what threading all
 * four would have given. */
static void
test_skip_corrupt(void)
{
	Env e, ref;
	g_autofree char *want = NULL, *got = NULL;
	gboolean stale;

	env_open(&e);
	env_open(&ref);
	for (guint i = 0; i < 2; i++) {
		g_autofree char *why = deliver_threaded(&e, i, &stale);

		g_assert_cmpstr(why, ==, "");
		g_assert_false(stale);
	}
	assert_flag(e.store, "");
	corrupt_series_of_first(&e);
	{
		/* r1 joins p1's unit, whose old series no longer decodes */
		g_autofree char *why = deliver_threaded(&e, 2, &stale);

		g_assert_cmpstr(why, ==, "series record has an unknown format");
	}
	assert_flag(e.store, "1");
	assert_failed(e.store, "series record has an unknown format");
	{
		/* threading waits for the rethread; p3 is stored */
		g_autofree char *why = deliver_threaded(&e, 3, &stale);

		g_assert_cmpstr(why, ==, "");
		g_assert_true(stale);
	}
	assert_flag(e.store, "1");
	g_assert_true(pgate_threading_rethread(e.store, NULL, NULL));
	assert_flag(e.store, "0");
	assert_failed(e.store, NULL);
	for (guint i = 0; i < G_N_ELEMENTS(skip_mails); i++) {
		g_free(deliver_threaded(&ref, i, &stale));
		g_assert_false(stale);
	}
	want = env_dump(&ref);
	got = env_dump(&e);
	g_assert_cmpstr(got, ==, want);
	g_assert_nonnull(strstr(want, "Reviewed-by"));
	/* and threading goes on (a duplicate: nothing to do) */
	g_free(deliver_threaded(&e, 2, &stale));
	g_assert_false(stale);
	env_close(&ref);
	env_close(&e);
}

/* Delivers @text with threading's hooks, which must thread it. */
static void
deliver_text_threaded(Env *e, const char *text)
{
	g_autoptr(PgateThreading) t = pgate_threading_new();
	g_autoptr(GError) error = NULL;
	PgateStoreAddResult res;
	PgateIngestHooks h;

	thread_hooks(t, &h);
	g_assert_true(deliver_text(e, text, &h, &res, &error));
	g_assert_no_error(error);
	g_assert_null(pgate_threading_skipped(t));
	g_assert_false(pgate_threading_stale(t));
}

/* pgate_threading_dump(): the series alone */
static char *
series_dump(Env *e)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e->store, NULL);
	char *d = pgate_threading_dump(txn, &error);

	g_assert_no_error(error);
	return d;
}

/* A message record that no longer decodes is left out, by incremental
 * threading as by the rethread, and holds nothing else back: a review of
 * the patch after it is threaded at once (the series were out of reach
 * until a rethread, and the rethread failed), and the rethread gives
 * what threading the other messages alone gives. */
static void
test_corrupt_message(void)
{
	static const char review[] =
		"From: Bob Dole <bob@example.org>\nTo: l@example.org\n"
		"Message-ID: <r2@x>\nSubject: Re: [PATCH 2/2] foo: two\n"
		"Date: Mon, 2 Jan 2023 13:00:00 +0000\n"
		"In-Reply-To: <p2@x>\nReferences: <p1@x> <p2@x>\n\n"
		"Reviewed-by: Bob Dole <bob@example.org>\n";
	Env e, ref;
	guint8 key[8];
	gboolean stale;
	PgateThreadingStats st;
	g_autoptr(GError) error = NULL;
	g_autofree char *before = NULL, *after = NULL, *want = NULL;
	g_autofree char *got = NULL;

	env_open(&e);
	env_open(&ref);
	for (guint i = 0; i < 3; i++) {
		g_autofree char *why = deliver_threaded(&e, i, &stale);

		g_assert_cmpstr(why, ==, "");
	}
	for (guint i = 0; i < 8; i++)	/* message 2, p2@x: big-endian */
		key[i] = i == 7 ? 2 : 0;
	corrupt_record(&e, "messages", key, sizeof key);
	deliver_text_threaded(&e, review);
	assert_flag(e.store, "");
	before = series_dump(&e);
	g_assert_true(pgate_threading_rethread(e.store, &st, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(st.messages, ==, 3);
	g_assert_cmpuint(st.unreadable, ==, 1);
	g_assert_cmpuint(st.first_unreadable, ==, 2);
	after = series_dump(&e);
	g_assert_cmpstr(after, ==, before);
	/* p1, r1 and the review, without p2 */
	for (guint i = 0; i < 3; i += 2)
		g_free(deliver_threaded(&ref, i, &stale));
	deliver_text_threaded(&ref, review);
	want = env_dump(&ref);
	got = env_dump(&e);
	g_assert_cmpstr(got, ==, want);
	g_assert_nonnull(strstr(want, "Reviewed-by"));
	env_close(&ref);
	env_close(&e);
}

typedef struct {
	GQuark domain;
	gint code;
	guint skipped;         /* skipped() calls */
	char *why;
	guint commits;         /* before_commit() calls */
} FailHooks;

/* after_add: fails for "p2@x" with the error of the FailHooks */
static gboolean
fail_added(PgateStoreTxn *txn, const PgateMessageRec *rec, gpointer data,
	   GError **error)
{
	FailHooks *f = data;

	if (strcmp(rec->msgid, "p2@x") != 0)
		return TRUE;
	g_set_error(error, f->domain, f->code, "hook failed on %s", rec->msgid);
	return FALSE;
}

static gboolean
fail_commit(PgateStoreTxn *txn, gpointer data, GError **error)
{
	((FailHooks *)data)->commits++;
	return TRUE;
}

static gboolean
fail_skipped(PgateStoreTxn *txn, const GError *why, gpointer data,
	     GError **error)
{
	FailHooks *f = data;

	f->skipped++;
	g_free(f->why);
	f->why = g_strdup(why->message);
	return TRUE;
}

static guint
stored_count(PgateStore *s)
{
	g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(s, NULL);
	PgateStoreMessageIter it;
	PgateMessageRec *r;
	guint n = 0;

	pgate_store_message_iter_init(&it, txn);
	while (pgate_store_message_iter_next(&it, &r, NULL)) {
		pgate_message_rec_free(r);
		n++;
	}
	return n;
}

/* Ingest's side: a transient hook failure fails the write (the MTA tries
 * again); a lasting one stores the messages without the hooks when there
 * is skipped(), and fails the write when there is not; in a bulk import
 * only the failing batch goes without them. */
static void
test_skip_policy(void)
{
	static const struct {
		gint code;
		gboolean with_skipped, stored;
	} cases[] = {
		{ PGATE_ERROR_BUSY, TRUE, FALSE },
		{ PGATE_ERROR_IO, TRUE, FALSE },
		{ PGATE_ERROR_FAILED, FALSE, FALSE },
		{ PGATE_ERROR_FAILED, TRUE, TRUE },
		{ PGATE_ERROR_INVALID, TRUE, TRUE },
	};

	for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
		Env e;
		FailHooks f = { PGATE_STORE_ERROR, cases[c].code, 0, NULL, 0 };
		PgateIngestHooks h = { NULL, fail_added, NULL, fail_commit,
				       cases[c].with_skipped ? fail_skipped
							     : NULL, &f };
		g_autofree char *text = skip_mail(1);
		g_autoptr(GError) error = NULL;
		PgateStoreAddResult res;
		gboolean ok;

		env_open(&e);
		ok = deliver_text(&e, text, &h, &res, &error);
		g_assert_cmpint(ok, ==, cases[c].stored);
		g_assert_cmpuint(stored_count(e.store), ==, cases[c].stored);
		if (ok) {
			g_assert_no_error(error);
			g_assert_cmpuint(f.skipped, ==, 1);
			g_assert_cmpstr(f.why, ==, "hook failed on p2@x");
			g_assert_cmpuint(f.commits, ==, 0);
		} else {
			g_assert_error(error, PGATE_STORE_ERROR, cases[c].code);
			g_assert_cmpuint(f.skipped, ==, 0);
		}
		g_free(f.why);
		env_close(&e);
	}

	/* bulk: batches of two; only the one with p2 skips the hooks */
	{
		Env e;
		FailHooks f = { PGATE_STORE_ERROR, PGATE_ERROR_FAILED, 0, NULL,
				0 };
		PgateIngestHooks h = { NULL, fail_added, NULL, fail_commit,
				       fail_skipped, &f };
		PgateIngestOptions o = PGATE_INGEST_OPTIONS_INIT;
		PgateIngestStats st = { 0 };
		g_autoptr(GString) mbox = g_string_new(NULL);
		g_autofree char *path = NULL;
		g_autoptr(GError) error = NULL;

		env_open(&e);
		for (guint i = 0; i < G_N_ELEMENTS(skip_mails); i++) {
			g_autofree char *text = skip_mail(i);

			g_string_append_printf(mbox, "From x Mon Jan  2 10:00:00 2023\n%s\n",
					       text);
		}
		path = g_build_filename(e.dir, "list.mbox", NULL);
		g_assert_true(g_file_set_contents(path, mbox->str, -1, NULL));
		o.hooks = &h;
		o.batch_messages = 2;
		g_assert_true(pgate_ingest_path(e.store, e.dir, path,
						PGATE_MBOX_MBOXRD, &o, &st,
						NULL, NULL, &error));
		g_assert_no_error(error);
		g_assert_cmpuint(st.stored, ==, 4);
		g_assert_cmpuint(f.skipped, ==, 1);
		g_assert_cmpuint(f.commits, ==, 1);
		g_free(f.why);
		env_close(&e);
	}
}

/* ingest --no-thread: the hooks thread nothing and mark the store stale
 * when a message went in, not when all were duplicates. */
static void
test_deferred(void)
{
	Env e;
	gboolean stale;

	env_open(&e);
	g_free(deliver_threaded(&e, 0, &stale));
	g_assert_false(stale);
	for (guint i = 0; i < 2; i++) {
		/* p1 again (a duplicate), then p2 */
		g_free(deliver_threaded_as(&e, i, TRUE, &stale));
		g_assert_true(stale);
		assert_flag(e.store, i == 0 ? "" : "1");
		/* asked for, not failed */
		assert_failed(e.store, NULL);
	}
	/* p2 is not in a series until the rethread */
	g_free(deliver_threaded(&e, 3, &stale));
	g_assert_true(stale);
	{
		g_autofree char *d = env_dump(&e);

		g_assert_null(strstr(d, "p2@x"));
	}
	g_assert_true(pgate_threading_rethread(e.store, NULL, NULL));
	{
		g_autofree char *d = env_dump(&e);

		g_assert_nonnull(strstr(d, "p2@x"));
	}
	env_close(&e);
}

/* ---- issue #49: one mailing is one series, each version follows the
 * closest one ---- */

/* A git send-email mailing as linux-spi and linux-hwmon receive it: the
 * cover (@cover, a whole subject, or NULL) as "<0-@id>", In-Reply-To
 * @cover_irt (nullable), then each of @patches (whole subjects,
 * NULL-terminated) as "<K-@id>", In-Reply-To the cover (else the first
 * patch), a second apart from @sec seconds past 14:00 on @day.
 * @cover_body (nullable) is the cover's text; each patch adds one line
 * "+TAG-K" to a file of its own (@tag: @id when NULL), so that equal tags
 * give equal patch-ids. */
static void
send_mailing(GPtrArray *raws, const char *from, const char *id, int day,
	     guint sec, const char *cover, const char *cover_irt,
	     const char *cover_body, const char *const *patches,
	     const char *tag)
{
	guint n = 0;

	while (patches[n] != NULL)
		n++;
	for (guint k = cover ? 0 : 1; k <= n; k++) {
		GString *m = g_string_new(NULL);
		const char *subject = k == 0 ? cover : patches[k - 1];
		guint root = cover ? 0 : 1, t = sec + k;

		g_string_append_printf(m, "From: %s\nTo: linux-spi@vger.kernel.org\n"
				       "Subject: %s\nDate: Thu, %d Mar 2024 14:%02u:%02u +0000\n"
				       "Message-ID: <%u-%s>\n", from, subject, day,
				       t / 60, t % 60, k, id);
		if (k != root)
			g_string_append_printf(m, "In-Reply-To: <%u-%s>\n"
					       "References: <%u-%s>\n", root, id,
					       root, id);
		else if (k == 0 && cover_irt != NULL)
			g_string_append_printf(m, "In-Reply-To: <%s>\n"
					       "References: <%s>\n", cover_irt,
					       cover_irt);
		g_string_append(m, "List-Id: <linux-spi.vger.kernel.org>\n"
				"MIME-Version: 1.0\n\n");
		if (k == 0) {
			g_string_append(m, cover_body ? cover_body :
					"This series does the work.\n");
		} else {
			g_autofree char *file = g_strdup_printf("drivers/spi/p%u.c", k);

			g_string_append_printf(m, "The change.\n\nSigned-off-by: %s\n---\n"
					       " %s | 1 +\n\ndiff --git a/%s b/%s\n"
					       "--- a/%s\n+++ b/%s\n@@ -1 +1,2 @@\n x\n"
					       "+%s-%u\n-- \n2.39.5\n\n", from, file, file,
					       file, file, file, tag ? tag : id, k);
		}
		g_ptr_array_add(raws, g_string_free_to_bytes(m));
	}
}

/* Pattern A, a mailing split by its version labels (linux-spi, Charles
 * Keepax's "Add bridged amplifiers to cs42l43": a cover "[PATCH 0/3]"
 * over "[PATCH v2 1/3]" .. sent four times, each cover a v1 of no patch
 * and each set of patches its next version; Denis Pauk's and Sergei
 * Shtylyov's covers a version behind their patches).  Each mailing is
 * one series, whose version its cover's label gives, else most of its
 * patches; the next mailing supersedes the whole of it. */
static void
test_mailing_labels(void)
{
	const char *K = "Charles Keepax <ckeepax@opensource.cirrus.com>";
	static const char *const v2[] = {
		"[PATCH v2 1/3] gpio: swnode: Add ability to specify native chip selects for SPI",
		"[PATCH v2 2/3] spi: Add a mechanism to use the fwnode name for the SPI device",
		"[PATCH v2 3/3] spi: cs42l43: Add bridged cs35l56 amplifiers", NULL };
	static const char *const v3[] = {
		"[PATCH v3 1/3] gpio: swnode: Add ability to specify native chip selects for SPI",
		"[PATCH v3 2/3] spi: Add a mechanism to use the fwnode name for the SPI device",
		"[PATCH v3 3/3] spi: cs42l43: Add bridged cs35l56 amplifiers", NULL };
	static const char *const v6[] = {
		"[PATCH v6 1/2] dt-bindings: memory: document Renesas RPC-IF bindings",
		"[PATCH v6 2/2] memory: add Renesas RPC-IF driver", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, K, "20240328140119.1784350@opensource.cirrus.com",
		     28, 76, "[PATCH 0/3] Add bridged amplifiers to cs42l43", NULL,
		     NULL, v2, NULL);
	send_mailing(raws, K, "20240329114730.360313@opensource.cirrus.com",
		     29, 76, "[PATCH 0/3] Add bridged amplifiers to cs42l43", NULL,
		     NULL, v3, NULL);
	/* a cover a version behind its patches: the cover's label */
	send_mailing(raws, "Sergei Shtylyov <sergei.shtylyov@cogentembedded.com>",
		     "721e5306-6dc5-4a3a@cogentembedded.com", 13, 0,
		     "[PATCH v5 0/2] Add Renesas RPC-IF support", NULL, NULL, v6,
		     NULL);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v5 2/2 C cover | v2 3/3 C cover | "
			"v3 3/3 C cover <-subject");
	env_close(&e);
	check_shuffles(raws, 6, 49);
}

/* Pattern A, what one mailing holds besides one series: git's template
 * cover "*** SUBJECT HERE ***" over v5 patches (a v5, named after its
 * first patch); a stale "[PATCH v10 3/3]" sent along with "[PATCH 1/3]"
 * .. "[PATCH 3/3]" (linux-spi, Jon Lin's rockchip series: the mailing
 * keeps its own 3/3, and the stale patch is no version of it); two
 * series sent in one mailing, the second threaded under the first's
 * cover (linux-spi, William Qiu's "Add SPI module for StarFive JH7110
 * SoC" v1 and "Add initialization of clock for StarFive JH7110 SoC" v4:
 * not one the version of the other); a single "[PATCH]" under its
 * "[PATCH 0/1]" cover (linux-hwmon, the SHTC3 sensor: one series). */
static void
test_mailing_parts(void)
{
	static const char *const mp[] = {
		"[PATCH v5 1/2] hwmon: (pmbus/mp2975) add page 2 support",
		"[PATCH v5 2/2] hwmon: (pmbus/mp2975) add the MP2973", NULL };
	static const char *const rk[] = {
		"[PATCH 1/3] spi: rockchip: Stop spi slave dma receiver when cs inactive",
		"[PATCH 2/3] spi: rockchip: Preset cs-high and clk polarity in setup progress",
		"[PATCH v10 3/3] spi: rockchip: Support cs-gpio",
		"[PATCH 3/3] spi: rockchip: Fix error in getting num-cs property", NULL };
	static const char *const sf1[] = {
		"[PATCH v1 1/2] dt-binding: spi: constrain minItems of clocks and clock-names",
		"[PATCH v1 2/2] riscv: dts: starfive: Add spi node for JH7110 SoC", NULL };
	static const char *const sf4[] = {
		"[PATCH v4 1/3] dt-bindings: qspi: cdns,qspi-nor: Add clocks for StarFive JH7110 SoC",
		"[PATCH v4 2/3] spi: cadence-quadspi: Add clock configuration for StarFive JH7110 QSPI",
		"[PATCH v4 3/3] riscv: dts: starfive: Add QSPI controller node for StarFive JH7110 SoC",
		NULL };
	static const char *const sh[] = {
		"[PATCH] hwmon: (shtc1) add support for the SHTC3 sensor", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	json_t *j;
	Env e;

	send_mailing(raws, "Kai Chen <kchen@example.com>", "mp2975@example.com", 4,
		     0, "[PATCH 0/2] *** SUBJECT HERE ***", NULL,
		     "*** BLURB HERE ***\n", mp, NULL);
	send_mailing(raws, "Jon Lin <jon.lin@rock-chips.com>",
		     "20220211034344.4130@rock-chips.com", 11, 0, NULL, NULL, NULL,
		     rk, NULL);
	send_mailing(raws, "William Qiu <william.qiu@starfivetech.com>",
		     "20230704091948.85247@starfivetech.com", 20, 0,
		     "[PATCH v1 0/2] Add SPI module for StarFive JH7110 SoC", NULL,
		     NULL, sf1, NULL);
	/* the second series of the same send, its cover under the first's */
	send_mailing(raws, "William Qiu <william.qiu@starfivetech.com>",
		     "20230704091948.85248@starfivetech.com", 20, 3,
		     "[PATCH v4 0/3] Add initialization of clock for StarFive JH7110 SoC",
		     "0-20230704091948.85247@starfivetech.com", NULL, sf4, NULL);
	send_mailing(raws, "Dan Robertson <dan@dlrobertson.com>",
		     "20190905010130.15019@dlrobertson.com", 25, 0,
		     "[PATCH 0/1] hwmon: (shtc1) add support for the SHTC3 sensor",
		     NULL, NULL, sh, NULL);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v5 2/2 C cover | v1 3/3 C | v10 3/1 x | "
			"v1 2/2 C cover | v4 3/3 C cover | v1 1/1 C cover");
	j = series_json_of(&e, "0-mp2975@example.com");
	g_assert_cmpstr(json_string_value(json_object_get(j, "name")), ==,
			"hwmon: (pmbus/mp2975) add page 2 support");
	json_decref(j);
	env_close(&e);
	check_shuffles(raws, 6, 50);
}

/* A copy of @raw with @header first (a second delivery of the same mail
 * by another path: another Message-ID's content, the same Message-ID). */
static GBytes *
delivered_again(GBytes *raw, const char *header)
{
	gsize len;
	const char *d = g_bytes_get_data(raw, &len);
	GString *m = g_string_new(header);

	g_string_append_len(m, d, (gssize)len);
	return g_string_free_to_bytes(m);
}

/* Pattern B, a resend that reuses the Message-IDs (linux-spi, Ryan
 * Wanner's "Add support for SAMA7D65" v6 sent again two months later
 * with the same Message-IDs; on one day of linux-hwmon many mails came
 * twice at once, with other headers).  The later copies are one series,
 * a resend of the first send; a copy delivered again at once is no part
 * of its own.  Before, each copy found its slot taken and started a
 * series of one patch. */
static void
test_resend_same_ids(void)
{
	const char *R = "Ryan Wanner <Ryan.Wanner@microchip.com>";
	static const char *const v6[] = {
		"[PATCH v6 1/3] dt-bindings: mfd: atmel,sama5d2-flexcom: add microchip,sama7d65-flexcom",
		"[PATCH v6 2/3] dt-bindings: serial: atmel,at91-usart: add microchip,sama7d65-usart",
		"[PATCH v6 3/3] dt-bindings: pinctrl: at91-pio4: add microchip,sama7d65-pinctrl",
		NULL };
	static const char *const again[] = {
		"[PATCH RESEND v6 1/3] dt-bindings: mfd: atmel,sama5d2-flexcom: add microchip,sama7d65-flexcom",
		"[PATCH RESEND v6 2/3] dt-bindings: serial: atmel,at91-usart: add microchip,sama7d65-usart",
		"[PATCH RESEND v6 3/3] dt-bindings: pinctrl: at91-pio4: add microchip,sama7d65-pinctrl",
		NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	json_t *first, *resend;
	Env e;

	send_mailing(raws, R, "cover.1736522006.git.Ryan.Wanner@microchip.com", 4,
		     0, "[PATCH v6 0/3] Add support for SAMA7D65", NULL, NULL, v6,
		     "sama7d65");
	/* patch 2 delivered twice, with another header */
	g_ptr_array_add(raws, delivered_again(raws->pdata[2],
					      "X-Original-To: lists@example.org\n"));
	send_mailing(raws, R, "cover.1736522006.git.Ryan.Wanner@microchip.com", 12,
		     0, "[PATCH RESEND v6 0/3] Add support for SAMA7D65", NULL,
		     NULL, again, "sama7d65");
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v6 3/3 C cover | v6 3/3 C cover <-resend");
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e.store, &error);
		PgateStoreSeriesIter it;
		PgateSeriesRec *s;

		first = resend = NULL;
		pgate_store_series_iter_init(&it, txn);
		while (pgate_store_series_iter_next(&it, &s, &error)) {
			json_t *j = pgate_threading_series_json(txn, s);

			if (json_is_null(json_object_get(j, "supersedes")))
				first = j;
			else
				resend = j;
			pgate_series_rec_free(s);
		}
		pgate_store_series_iter_clear(&it);
		g_assert_no_error(error);
	}
	g_assert_nonnull(first);
	g_assert_nonnull(resend);
	g_assert_cmpstr(json_string_value(json_object_get(resend, "resend_of")), ==,
			json_string_value(json_object_get(first, "id")));
	json_decref(first);
	json_decref(resend);
	env_close(&e);
	check_shuffles(raws, 6, 51);
}

/* Pattern C, an intermediate version skipped: S took the closest version
 * of the same work in the line of the one the rules proposed only one
 * hop away.  linux-spi, Miquel Raynal's "External ECC engines & Macronix
 * support": v5 renamed "Pipelined ...", v6 back to "External ..." with
 * more patches, so v6 is similar() to v4 only, and v5 was skipped (a
 * fan-out at v4); linux-hwmon, Hao Yu's AHT20 series: v3 renamed every
 * patch and replied to v1, and v2 was skipped.  v6 supersedes v5 (they
 * share patches), v3 supersedes v2 (the only later version of v1's
 * line). */
static void
test_line_transitive(void)
{
	const char *M = "Miquel Raynal <miquel.raynal@bootlin.com>";
	const char *H = "Hao Yu <haoyufine@gmail.com>";
	static const char *const v4[] = {
		"[PATCH v4 1/4] mtd: nand: ecc: Add infrastructure to support hardware engines",
		"[PATCH v4 2/4] mtd: nand: Add a new helper to retrieve the ECC context",
		"[PATCH v4 3/4] mtd: nand: mxic-ecc: Add Macronix external ECC engine support",
		"[PATCH v4 4/4] spi: mxic: Add support for pipelined ECC operations", NULL };
	static const char *const v5[] = {
		"[PATCH v5 1/5] mtd: nand: ecc: Add infrastructure to support hardware engines",
		"[PATCH v5 2/5] mtd: nand: Add a new helper to retrieve the ECC context",
		"[PATCH v5 3/5] mtd: nand: mxic-ecc: Add Macronix external ECC engine support",
		"[PATCH v5 4/5] spi: mxic: Add support for pipelined ECC operations",
		"[PATCH v5 5/5] mtd: spinand: Add support for pipelined ECC engines", NULL };
	static const char *const v6[] = {
		"[PATCH v6 1/9] mtd: nand: ecc: Add infrastructure to support hardware engines",
		"[PATCH v6 2/9] mtd: nand: Add a new helper to retrieve the ECC context",
		"[PATCH v6 3/9] mtd: nand: mxic-ecc: Add Macronix external ECC engine support",
		"[PATCH v6 4/9] spi: mxic: Add support for pipelined ECC operations",
		"[PATCH v6 5/9] mtd: spinand: Add support for pipelined ECC engines",
		"[PATCH v6 6/9] dt-bindings: mtd: Describe Macronix NAND ECC engine",
		"[PATCH v6 7/9] dt-bindings: vendor-prefixes: Clarify Macronix prefix",
		"[PATCH v6 8/9] spi: mxic: Fix the transmit path",
		"[PATCH v6 9/9] spi: mxic: Use spi_mem_supports_op()", NULL };
	static const char *const a1[] = {
		"[PATCH 1/2] dt-bindings: hwmon: add aosong,aht10 family",
		"[PATCH 2/2] hwmon: (aht10) Fix initialization commands and add DT support", NULL };
	static const char *const a2[] = {
		"[PATCH v2 1/3] dt-bindings: hwmon: add aosong,aht10 family",
		"[PATCH v2 2/3] hwmon: (aht10) Fix initialization commands for AHT20",
		"[PATCH v2 3/3] hwmon: (aht10) Add Device Tree support", NULL };
	static const char *const a3[] = {
		"[PATCH v3 1/2] dt-bindings: hwmon: add Aosong AHT10/AHT20/DHT20 to trivial devices",
		"[PATCH v3 2/2] hwmon: (aht10) add device tree ID matching", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, M, "20211209174046.535229@bootlin.com", 9, 0,
		     "[PATCH v4 0/4] External ECC engines & Macronix support", NULL,
		     NULL, v4, NULL);
	send_mailing(raws, M, "20211214114140.54629@bootlin.com", 14, 0,
		     "[PATCH v5 0/5] Pipelined ECC engines & Macronix support", NULL,
		     NULL, v5, NULL);
	send_mailing(raws, M, "20211216111654.238086@bootlin.com", 16, 0,
		     "[PATCH v6 0/9] External ECC engines & Macronix support", NULL,
		     NULL, v6, NULL);
	send_mailing(raws, H, "20260222105831.7360@gmail.com", 2, 0,
		     "[PATCH 0/2] Add AHT20 sensor bindings and fix driver initialization",
		     NULL, NULL, a1, NULL);
	send_mailing(raws, H, "20260222170332.1616@gmail.com", 3, 0,
		     "[PATCH v2 0/3] Add AHT20 sensor bindings and fix driver initialization",
		     NULL, NULL, a2, NULL);
	send_mailing(raws, H, "20260223173853.30617@gmail.com", 5, 0,
		     "[PATCH v3 0/2] hwmon: aht10: add Device Tree support",
		     "0-20260222105831.7360@gmail.com", NULL, a3, NULL);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 2/2 C cover | v2 3/3 C cover <-subject | "
			"v3 2/2 C cover <-chain | v4 4/4 C cover | "
			"v5 5/5 C cover <-subject | v6 9/9 C cover <-chain");
	env_close(&e);
	check_shuffles(raws, 6, 52);
}

/* Pattern D, a link names an ancestor, not always the parent.  A
 * changelog inherited from the previous submitter: Bob took Alice's
 * driver over under a name of his own (v10, no link), and his v11 still
 * carries Alice's "Link to v8:" and "Link to v9:" (before, v11
 * superseded Alice's v9, another person's, and skipped his own v10).  A
 * cover that links only v1 and v2 while v3 and v4, renamed by steps,
 * exist (before, v5 took v3, the one hop from v2 it is similar to).  A
 * changelog that names one's own v1 and another person's series the
 * work took a patch from (linux-rtc, jianbinz's "rtc: rtc-pm8xxx: clear
 * the interrupt in probe" v3 and Johan Hovold's v2): one's own line
 * first. */
static void
test_link_ancestor(void)
{
	const char *A = "Alice Frob <alice@example.org>";
	const char *B = "Bob Frob <bob@example.com>";
	const char *C = "Carol Widget <carol@example.net>";
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	static const char *const frob[] = {
		"[PATCH v8 1/1] rtc: frob: add the driver", NULL };
	const char *const frob9[] = {
		"[PATCH v9 1/1] rtc: frob: add the driver", NULL };
	const char *const frob10[] = {
		"[PATCH v10 1/1] rtc: frob: a driver for the Frob RTC", NULL };
	const char *const frob11[] = {
		"[PATCH v11 1/1] rtc: frob: a driver for the Frob RTC", NULL };
	const char *const w[][2] = {
		{ "[PATCH 1/1] clk: widget: add the controller driver", NULL },
		{ "[PATCH v2 1/1] clk: widget: add the controller driver", NULL },
		{ "[PATCH v3 1/1] clk: widget: rework the controller driver", NULL },
		{ "[PATCH v4 1/1] clk: widget: rework the controller driver again", NULL },
		{ "[PATCH v5 1/1] clk: widget: rework the controller driver again", NULL },
	};
	/* names renamed by steps: v3 is similar() to v2, v4 to v3 only */
	const char *const wc[] = {
		"[PATCH 0/1] widget clock controller driver support",
		"[PATCH v2 0/1] widget clock controller driver support",
		"[PATCH v3 0/1] widget clock controller driver support rework",
		"[PATCH v4 0/1] widget clock controller driver support rework again",
		"[PATCH v5 0/1] widget clock controller driver support rework again" };
	Env e;

	send_mailing(raws, A, "frob-v8@example.org", 1, 0,
		     "[PATCH v8 0/1] Frob RTC driver", NULL, NULL, frob, NULL);
	send_mailing(raws, A, "frob-v9@example.org", 5, 0,
		     "[PATCH v9 0/1] Frob RTC driver", NULL,
		     "Changes in v9:\n- rebased\n"
		     "- Link to v8: https://lore.kernel.org/r/0-frob-v8@example.org\n",
		     frob9, NULL);
	send_mailing(raws, B, "frob-v10@example.com", 12, 0,
		     "[PATCH v10 0/1] Driver for the Frob RTC", NULL,
		     "Taking the Frob RTC driver over.\n", frob10, NULL);
	send_mailing(raws, B, "frob-v11@example.com", 19, 0,
		     "[PATCH v11 0/1] Driver for the Frob RTC", NULL,
		     "Changes in v11:\n- fixed the alarm\n\nChanges in v9:\n"
		     "- rebased\n"
		     "- Link to v8: https://lore.kernel.org/r/0-frob-v8@example.org\n"
		     "- Link to v9: https://lore.kernel.org/r/0-frob-v9@example.org\n",
		     frob11, NULL);
	for (guint v = 1; v <= 5; v++) {
		g_autofree char *id = g_strdup_printf("widget-v%u@example.net", v);

		send_mailing(raws, C, id, (int)(2 * v), 30, wc[v - 1], NULL,
			     v < 5 ? NULL :
			     "Changes since v2: the clock tree\n\n"
			     "v1: https://lore.kernel.org/r/0-widget-v1@example.net\n"
			     "v2: https://lore.kernel.org/r/0-widget-v2@example.net\n",
			     w[v - 1], NULL);
	}
	env_open(&e);
	env_add(&e, raws, 1);
	sum = chain_summary(&e);
	g_assert_cmpstr(sum, ==, "v1 v10 v11<-v10 v2<-v1 v3<-v2 v4<-v3 v5<-v4 "
			"v8 v9<-v8");
	env_close(&e);
	check_shuffles(raws, 6, 53);
}

/* Pattern E, one person, two addresses (linux-rtc: Matti Vaittinen's
 * "Support ROHM BD72720 PMIC" v2 from gmail, v3 from linux.dev, not
 * threaded, every patch changed): the name candidates were drawn by
 * address only, so v3 found no predecessor; a person's series are name
 * candidates under the person too. */
static void
test_person_name_keys(void)
{
	static const char *const v2[] = {
		"[PATCH v2 1/2] mfd: bd72720: add the PMIC",
		"[PATCH v2 2/2] rtc: bd70528: support BD72720", NULL };
	static const char *const v3[] = {
		"[PATCH v3 1/2] mfd: bd72720: add the PMIC",
		"[PATCH v3 2/2] rtc: bd70528: support BD72720", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, "Matti Vaittinen <mazziesaccount@gmail.com>",
		     "bd72720-v2@gmail.com", 3, 0,
		     "[PATCH v2 0/2] Support ROHM BD72720 PMIC", NULL, NULL, v2, NULL);
	send_mailing(raws, "Matti Vaittinen <matti.vaittinen@linux.dev>",
		     "bd72720-v3@linux.dev", 17, 0,
		     "[PATCH v3 0/2] Support ROHM BD72720 PMIC", NULL, NULL, v3, NULL);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v2 2/2 C cover | v3 2/2 C cover <-subject");
	env_close(&e);
	check_shuffles(raws, 4, 54);
}

/* Stable backports are not versions: Sasha Levin's "[PATCH AUTOSEL 6.1
 * 07/20]" and "[PATCH AUTOSEL 5.15 05/12]" of one commit, Greg's "[PATCH
 * 5.10 012/080]" review mail of it and the mainline patch are four
 * series, none the version of another (before: resends and unlabeled
 * re-sends of each other); a "[PATCH 5.10 v2]" is still the next version
 * of the "[PATCH 5.10]" backport (a tree tag is not a version). */
static void
test_stable_backports(void)
{
	const char *S = "Sasha Levin <sashal@kernel.org>";
	const char *G = "Greg Kroah-Hartman <gregkh@linuxfoundation.org>";
	const char *P = "Pat Dev <pat@example.org>";
	static const char *const main1[] = {
		"[PATCH] hwmon: (k10temp) Add thermal support for Family 1Ah", NULL };
	static const char *const as61[] = {
		"[PATCH AUTOSEL 6.1 07/20] hwmon: (k10temp) Add thermal support for Family 1Ah", NULL };
	static const char *const as515[] = {
		"[PATCH AUTOSEL 5.15 05/12] hwmon: (k10temp) Add thermal support for Family 1Ah", NULL };
	static const char *const g510[] = {
		"[PATCH 5.10 012/080] hwmon: (k10temp) Add thermal support for Family 1Ah", NULL };
	static const char *const b1[] = {
		"[PATCH 5.10] hwmon: (k10temp) backport the Family 1Ah support", NULL };
	static const char *const b2[] = {
		"[PATCH 5.10 v2] hwmon: (k10temp) backport the Family 1Ah support", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, P, "k10-main@example.org", 1, 0, NULL, NULL, NULL, main1,
		     "k10temp");
	send_mailing(raws, S, "20240305-autosel-61@kernel.org", 5, 0, NULL, NULL,
		     NULL, as61, "k10temp");
	send_mailing(raws, S, "20240305-autosel-515@kernel.org", 5, 600, NULL, NULL,
		     NULL, as515, "k10temp");
	send_mailing(raws, G, "20240311-510-review@linuxfoundation.org", 11, 0,
		     NULL, NULL, NULL, g510, "k10temp");
	send_mailing(raws, P, "k10-510@example.org", 20, 0, NULL, NULL, NULL, b1,
		     "k10temp-510");
	send_mailing(raws, P, "k10-510v2@example.org", 27, 0, NULL, NULL, NULL, b2,
		     "k10temp-510v2");
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 1/1 C | v1 20/1 x | v1 12/1 x | v1 80/1 x | "
			"v1 1/1 C | v2 1/1 C <-subject");
	env_close(&e);
	check_shuffles(raws, 4, 55);
}

/* A version sent later is no predecessor, and a send after a higher
 * version follows it (linux-hwmon: Billy Tsai's "Support pwm driver for
 * aspeed ast26xx" v13 of 2021 superseded his "Support pwm/tach driver
 * for aspeed ast26xx" v3, sent eleven months later, by similar names;
 * Amy Shih's nct7904 "[PATCH]" sent again after its v2, then a v3).
 * Versions order the candidates, but a link goes back in time: v13 has
 * no predecessor here (nor is v3 its send again: a similar name is not
 * the same work enough for that); the "[PATCH]" sent again follows v2
 * ("late"), and v3 follows it, so that v2 is no fan-out. */
static void
test_sent_after(void)
{
	const char *B = "Billy Tsai <billy_tsai@aspeedtech.com>";
	const char *Y = "Amy Shih <amy.shih@advantech.com.tw>";
	static const char *const p13[] = {
		"[PATCH v13 1/2] dt-bindings: Add bindings for aspeed pwm",
		"[PATCH v13 2/2] pwm: Add Aspeed ast2600 PWM support", NULL };
	static const char *const p3[] = {
		"[PATCH v3 1/2] dt-bindings: hwmon: Add bindings for aspeed tach",
		"[PATCH v3 2/2] hwmon: Add Aspeed ast2600 TACH support", NULL };
	static const char *const n1[] = {
		"[PATCH] hwmon: (nct7904) Add extra sysfs support for fan, voltage and temperature.", NULL };
	static const char *const n2[] = {
		"[PATCH v2] hwmon: (nct7904) Add extra sysfs support for fan, voltage and temperature.", NULL };
	static const char *const n3[] = {
		"[PATCH v3] hwmon: (nct7904) Add extra sysfs support for fan, voltage and temperature.", NULL };
	static const char *const n4[] = {
		"[PATCH v4] hwmon: (nct7904) Add extra sysfs support for fan, voltage and temperature sensors.", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, B, "20211129064329.27006@aspeedtech.com", 1, 0,
		     "[PATCH v13 0/2] Support the pwm driver of the aspeed ast26xx "
		     "family of server SoCs", NULL,
		     NULL, p13, NULL);
	/* eleven months later (the same day of March, as the helper dates) */
	send_mailing(raws, B, "20221102083601.10456@aspeedtech.com", 30, 0,
		     "[PATCH v3 0/2] Support the pwm/tach driver of the aspeed "
		     "ast26xx family of server SoCs",
		     NULL, NULL, p3, NULL);
	send_mailing(raws, Y, "20190606-1@advantech.com.tw", 6, 0, NULL, NULL, NULL,
		     n1, "nct-1");
	send_mailing(raws, Y, "20190608-1@advantech.com.tw", 8, 0, NULL, NULL, NULL,
		     n2, "nct-2");
	send_mailing(raws, Y, "20190610-1@advantech.com.tw", 10, 0, NULL, NULL,
		     NULL, n1, "nct-3");
	send_mailing(raws, Y, "20190617-1@advantech.com.tw", 17, 0, NULL, NULL,
		     NULL, n3, "nct-4");
	/* a v4 renamed, then the first name sent again: it follows v4, the
	 * line's last, not v3, the last of its name (linux-hwmon, Sergio
	 * Melas's yogafan v12 and the "[PATCH v1]" after it) */
	send_mailing(raws, Y, "20190624-1@advantech.com.tw", 24, 0, NULL, NULL,
		     NULL, n4, "nct-5");
	send_mailing(raws, Y, "20190628-1@advantech.com.tw", 28, 0, NULL, NULL,
		     NULL, n1, "nct-6");
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v13 2/2 C cover | v1 1/1 C | v2 1/1 C <-subject | "
			"v1 1/1 C <-late | v3 1/1 C <-subject | v4 1/1 C <-subject | "
			"v1 1/1 C <-chain | v3 2/2 C cover");
	env_close(&e);
	check_shuffles(raws, 6, 56);
}

/* A cover letter with git format-patch's interdiff ("Interdiff against
 * v1:" and a diff) is a cover, not a patch 0 of its series (linux-spi:
 * the series had a patch 0 and no cover).  The series' JSON says which
 * series its messages reply into (it always said []). */
static void
test_interdiff_cover(void)
{
	const char *A = "Alice <alice@example.org>";
	static const char *const p1[] = {
		"[PATCH 1/2] spi: frob: add the driver",
		"[PATCH 2/2] spi: frob: document it", NULL };
	static const char *const p2[] = {
		"[PATCH v2 1/2] spi: frob: add the driver",
		"[PATCH v2 2/2] spi: frob: document it", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autofree char *sum = NULL, *v1 = NULL;
	json_t *j;
	Env e;

	send_mailing(raws, A, "frob-v1@example.org", 4, 0,
		     "[PATCH 0/2] spi: a driver for the Frob controller", NULL, NULL,
		     p1, NULL);
	send_mailing(raws, A, "frob-v2@example.org", 11, 0,
		     "[PATCH v2 0/2] spi: a driver for the Frob controller",
		     "0-frob-v1@example.org",
		     "The driver, with its documentation.\n\n"
		     "Alice (2):\n  spi: frob: add the driver\n  spi: frob: document it\n\n"
		     " drivers/spi/p1.c | 1 +\n drivers/spi/p2.c | 1 +\n"
		     " 2 files changed, 2 insertions(+)\n\n"
		     "Interdiff against v1:\n"
		     "diff --git a/drivers/spi/p1.c b/drivers/spi/p1.c\n"
		     "--- a/drivers/spi/p1.c\n+++ b/drivers/spi/p1.c\n"
		     "@@ -1,2 +1,2 @@\n x\n-frob-v1@example.org-1\n"
		     "+frob-v2@example.org-1\n-- \n2.39.5\n", p2, NULL);
	env_open(&e);
	env_add(&e, raws, 1);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 2/2 C cover | v2 2/2 C cover <-in-reply-to");
	j = series_json_of(&e, "0-frob-v1@example.org");
	v1 = g_strdup(json_string_value(json_object_get(j, "id")));
	json_decref(j);
	j = series_json_of(&e, "0-frob-v2@example.org");
	g_assert_cmpuint(json_array_size(json_object_get(j, "patches")), ==, 2);
	g_assert_cmpuint(json_array_size(json_object_get(j, "replies_into")), ==, 1);
	g_assert_cmpstr(json_string_value(json_array_get(
		json_object_get(j, "replies_into"), 0)), ==, v1);
	json_decref(j);
	env_close(&e);
}

static gboolean
meta_drop_rules(PgateStoreTxn *txn, gpointer data, GError **error)
{
	(void)data;
	return pgate_store_meta_delete(txn, "threading_rules", error);
}

/* A store threaded by older rules (meta "threading_rules" absent, as in
 * every store before issue #49) is marked for a rethread by the first
 * write transaction, as a store upgrade marks it, and threads nothing
 * until then: series of two sets of rules side by side would be what
 * neither gives.  The rethread clears the mark and notes the rules. */
static void
test_rules_version(void)
{
	static const char *const p1[] = { "[PATCH 1/1] spi: frob: add it", NULL };
	static const char *const p2[] = { "[PATCH v2 1/1] spi: frob: add it", NULL };
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(GError) error = NULL;
	g_autofree char *sum = NULL;
	Env e;

	send_mailing(raws, "Alice <alice@example.org>", "r1@example.org", 4, 0,
		     NULL, NULL, NULL, p1, NULL);
	send_mailing(raws, "Alice <alice@example.org>", "r2@example.org", 9, 0,
		     NULL, NULL, NULL, p2, NULL);
	env_open(&e);
	{
		g_autoptr(GPtrArray) one = g_ptr_array_new();

		g_ptr_array_add(one, raws->pdata[0]);
		env_add(&e, one, 1);
	}
	g_assert_true(pgate_store_write(e.store, meta_drop_rules, NULL, &error));
	g_assert_no_error(error);
	{
		g_autoptr(GPtrArray) two = g_ptr_array_new();
		g_autoptr(PgateStoreTxn) txn = NULL;

		g_ptr_array_add(two, raws->pdata[1]);
		env_add(&e, two, 1);
		txn = pgate_store_begin_read(e.store, &error);
		g_assert_no_error(error);
		g_assert_true(pgate_store_rethread_needed(txn));
	}
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 1/1 C");
	g_clear_pointer(&sum, g_free);
	g_assert_true(pgate_threading_rethread(e.store, NULL, &error));
	g_assert_no_error(error);
	sum = summary(&e);
	g_assert_cmpstr(sum, ==, "v1 1/1 C | v2 1/1 C <-subject");
	{
		g_autoptr(PgateStoreTxn) txn = pgate_store_begin_read(e.store, &error);
		g_autoptr(GBytes) b = pgate_store_meta_get(txn, "threading_rules",
							   &error);

		g_assert_no_error(error);
		g_assert_false(pgate_store_rethread_needed(txn));
		g_assert_cmpuint(g_bytes_get_size(b), ==, 4);
	}
	env_close(&e);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	pgate_ingest_init();
	for (gsize i = 0; i < G_N_ELEMENTS(pw_table); i++) {
		g_autofree char *n = g_strconcat("/threading/patchwork/",
						 pw_table[i].name, NULL);

		g_test_add_data_func(n, GUINT_TO_POINTER((guint)i),
				     test_patchwork);
	}
	g_test_add_func("/threading/order/patchwork", test_order_patchwork);
	g_test_add_func("/threading/order/i3c", test_order_i3c);
	g_test_add_func("/threading/order/genlist", test_order_genlist);
	g_test_add_func("/threading/rethread/batched", test_rethread_batched);
	g_test_add_func("/threading/incremental", test_incremental);
	g_test_add_func("/threading/link-rule", test_link_rule);
	g_test_add_func("/threading/patch-names", test_patch_names);
	g_test_add_func("/threading/chain-line", test_chain_line);
	g_test_add_func("/threading/cross-person", test_cross_person);
	g_test_add_func("/threading/link-kinds", test_link_kinds);
	g_test_add_func("/threading/person-addresses", test_person_addresses);
	g_test_add_func("/threading/supersedes-trailer", test_supersedes_trailer);
	g_test_add_func("/threading/prereq-change-version",
			test_prereq_change_version);
	g_test_add_func("/threading/delete/i3c", test_delete_i3c);
	g_test_add_func("/threading/delete/same-transaction",
			test_delete_same_txn);
	g_test_add_func("/threading/two-writers", test_two_writers);
	g_test_add_func("/threading/series-id", test_series_id);
	g_test_add_func("/threading/idmap", test_idmap);
	g_test_add_func("/threading/ref-addresses", test_ref_addresses);
	g_test_add_func("/threading/skip/corrupt", test_skip_corrupt);
	g_test_add_func("/threading/corrupt-message", test_corrupt_message);
	g_test_add_func("/threading/skip/policy", test_skip_policy);
	g_test_add_func("/threading/skip/deferred", test_deferred);
	g_test_add_func("/threading/mailing/labels", test_mailing_labels);
	g_test_add_func("/threading/mailing/parts", test_mailing_parts);
	g_test_add_func("/threading/mailing/resend-same-ids",
			test_resend_same_ids);
	g_test_add_func("/threading/line/transitive", test_line_transitive);
	g_test_add_func("/threading/line/link-ancestor", test_link_ancestor);
	g_test_add_func("/threading/line/person-name-keys",
			test_person_name_keys);
	g_test_add_func("/threading/line/stable-backports",
			test_stable_backports);
	g_test_add_func("/threading/line/sent-after", test_sent_after);
	g_test_add_func("/threading/interdiff-cover", test_interdiff_cover);
	g_test_add_func("/threading/rules-version", test_rules_version);
	return g_test_run();
}
