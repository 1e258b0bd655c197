/* trust.c - whose code runs (docs/pipeline.md, "Trust").
 *
 * Untrusted code never runs unapproved.  Trust is a property of the code
 * that runs: every patch an apply would apply (plan.c: the series' own,
 * a partial re-roll's borrowed ones, its prerequisites') must come from a
 * trusted sender, or be one of the messages an approval saw.
 *
 * Who sent a message is read strictly (issue #25): a record's
 * from_email is GMime's lenient reading of From (it takes
 * "a@trusted.org@evil.net" as a@trusted.org, where the MTA's SPF, DKIM
 * and DMARC checks saw evil.net), and stores written by older versions
 * keep nothing else.  So trust is decided on the raw messages, read
 * again from the store each time a decision is made
 * (pgate_ingest_load_raw()): whatever an older patchgate stored, the
 * decision is today's rule.  A message grants trust or approves only
 * when its header holds exactly one From field, that field exactly one
 * plain mailbox (pgate_mail_address_strict()), and, with [trust]
 * require_authentication, the topmost Authentication-Results field is
 * the local MTA's and says dkim=pass or dmarc=pass for that address's
 * domain.  A relay's address stands for the user the relay vouches for,
 * or for nobody (pgate_mail_relayed_sender(), issue #41).  Sender and
 * Reply-To never grant anything.
 *
 * An approval covers what it saw (issue #41): the records of the store
 * (not Message-ID strings, which anybody can reuse) that made up the
 * series and its plan when it was given.  It is kept as the store's last
 * message number at that moment (approved_upto), and the first pass that
 * acts on it fixes the list of records (approved_messages).  A patch
 * that came later, or that a change of the plan brought in, needs a new
 * approval; a recheck applies what was approved, or waits.
 */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"

#include <git2.h>
#include <string.h>

#define TRUST_MAX_FROM 4096             /* bytes of one From field */
#define TRUST_MAX_AUTH_RESULTS 16384    /* of one Authentication-Results */
#define TRUST_MAX_REPLY (1u << 20)      /* larger replies are not read */
#define TRUST_MAX_REPLY_LINES 2000
#define TRUST_MAX_RAW (64u << 20)       /* a member read from a file */

gboolean
pgate_pipeline__glob_match(char **globs, const char *email)
{
	g_autofree char *e = g_ascii_strdown(email ? email : "", -1);

	for (guint i = 0; globs && globs[i]; i++)
		if (*globs[i] && g_pattern_match_simple(globs[i], e))
			return TRUE;
	return FALSE;
}

/* The authors of the last commits of the [apply] branches: people the
 * project already took code from.  Read once per pipeline. */
#define COMMITTERS_DEPTH 20000

static GHashTable *
committers(PgatePipeline *p)
{
	git_repository *repo = NULL;
	git_revwalk *walk = NULL;
	git_oid oid;
	guint n = 0;

	if (p->committers != NULL)
		return p->committers;
	p->committers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					      NULL);
	if (!p->apply.enabled)
		return p->committers;
	git_libgit2_init();
	if (git_repository_open_ext(&repo, p->apply.repo, 0, NULL) != 0 ||
	    git_revwalk_new(&walk, repo) != 0) {
		if (p->log)
			p->log(p->log_data, "-", "trust",
			       "cannot read the committers of [apply] repo");
		goto out;
	}
	for (guint i = 0; p->apply.branches[i]; i++) {
		git_object *o = NULL;

		if (git_revparse_single(&o, repo, p->apply.branches[i]) == 0) {
			git_revwalk_push(walk, git_object_id(o));
			git_object_free(o);
		}
	}
	while (n++ < COMMITTERS_DEPTH && git_revwalk_next(&oid, walk) == 0) {
		git_commit *c = NULL;

		if (git_commit_lookup(&c, repo, &oid) != 0)
			continue;
		g_hash_table_add(p->committers,
				 g_ascii_strdown(git_commit_author(c)->email, -1));
		git_commit_free(c);
	}
out:
	git_revwalk_free(walk);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return p->committers;
}

gboolean
pgate_pipeline_trusted(const PgatePipelineConfig *c, const char *email)
{
	return c->trust_everyone || pgate_pipeline__glob_match(c->trusted, email);
}

gboolean
pgate_pipeline__sender_trusted(PgatePipeline *p, const char *email)
{
	g_autofree char *e = g_ascii_strdown(email ? email : "", -1);

	if (pgate_pipeline_trusted(&p->cfg, email))
		return TRUE;
	return p->cfg.trust_committers && *e &&
	       g_hash_table_contains(committers(p), e);
}

char *
pgate_pipeline__sender(PgatePipeline *p, GBytes *raw, GError **error)
{
	gsize len;
	const char *d = g_bytes_get_data(raw, &len);
	g_autoptr(GPtrArray) from = pgate_mail_header_values(
		d, len, "From", 2, TRUST_MAX_FROM, error);
	g_autoptr(GPtrArray) ar = NULL;
	g_autofree char *addr = NULL;

	if (from == NULL)
		return NULL;
	if (from->len != 1) {
		g_set_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_INVALID,
			    from->len == 0 ? "no From field"
					   : "more than one From field");
		return NULL;
	}
	addr = pgate_mail_address_strict(from->pdata[0], error);
	if (addr == NULL)
		return NULL;
	if (p->cfg.require_authentication != NULL) {
		/* only the topmost field: the one the local MTA added above
		 * whatever the sender wrote (docs/pipeline.md) */
		ar = pgate_mail_header_values(d, len, "Authentication-Results",
					      1, TRUST_MAX_AUTH_RESULTS, error);
		if (ar == NULL)
			return NULL;
		if (ar->len == 0) {
			g_set_error(error, PGATE_PIPELINE_ERROR,
				    PGATE_ERROR_INVALID,
				    "no Authentication-Results field");
			return NULL;
		}
		if (!pgate_mail_auth_results_pass(ar->pdata[0],
						  p->cfg.require_authentication,
						  strchr(addr, '@') + 1, error))
			return NULL;
	}
	/* the relay's domain is authenticated; the relay vouches for its
	 * user, or for nobody */
	return pgate_mail_relayed_sender(d, len, addr, NULL, error);
}

/* (transfer full) (nullable): the sender of message @num as trust sees
 * it; %NULL with the reason (PGATE_ERROR_INVALID, or a transient error). */
static char *
sender_of_num(PgatePipeline *p, PgateStoreTxn *txn, guint64 num,
	      char **out_msgid, GError **error)
{
	g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, num, error);
	g_autoptr(GBytes) raw = NULL;

	if (out_msgid != NULL)
		*out_msgid = m != NULL ? g_strdup(m->msgid) : NULL;
	if (m == NULL)
		return NULL;
	raw = pgate_ingest_load_raw(txn, p->state_dir, m, TRUST_MAX_RAW, error);
	if (raw == NULL)
		return NULL;
	return pgate_pipeline__sender(p, raw, error);
}

char *
pgate_pipeline__submitter(PgatePipeline *p, PgateStoreTxn *txn,
			  const PgateSeriesRec *rec)
{
	guint64 num = rec->cover != NULL ? rec->cover_num
		: rec->patches->len > 0
			? ((PgateSeriesPatch *)rec->patches->pdata[0])->num : 0;
	char *who = num != 0 ? sender_of_num(p, txn, num, NULL, NULL) : NULL;

	return who != NULL ? who : g_strdup(rec->submitter_email);
}

/* ---- the gate ---- */

static gboolean
plan_trusts(const PgateSeriesRec *candidate, gpointer data)
{
	return pgate_pipeline__sender_trusted(data, candidate->submitter_email);
}

/* One message the gate judges. */
typedef struct {
	guint64 num;
	const PgatePlanItem *item;   /* (nullable): NULL for the cover */
} Judged;

static gboolean
covered(const PgateSeriesDoc *doc, guint64 num)
{
	for (guint i = 0; doc->approved && doc->approved_msgs != NULL &&
	     i < doc->approved_msgs->len; i++)
		if (g_array_index(doc->approved_msgs, guint64, i) == num)
			return TRUE;
	return FALSE;
}

/* An approval not fixed yet covers the records of @list that had
 * arrived when it was given (approved_upto): fixed now, in @doc. */
static void
fix_approval(PgateSeriesDoc *doc, GArray *list)
{
	if (!doc->approved || doc->approved_msgs != NULL ||
	    !(doc->has & PGATE_SERIES_DOC_APPROVED_UPTO))
		return;
	doc->approved_msgs = g_array_new(FALSE, FALSE, sizeof(guint64));
	for (guint i = 0; i < list->len; i++) {
		guint64 n = g_array_index(list, Judged, i).num;

		if (n <= (guint64)doc->approved_upto)
			g_array_append_val(doc->approved_msgs, n);
	}
}

/* Why @j, from @who (nullable: unreadable, @unreadable says why), does
 * not run; @submitter names the series. */
static char *
refusal(const PgateSeriesDoc *doc, const Judged *j, gboolean first,
	const char *msgid, const char *who, const char *unreadable,
	const char *submitter)
{
	const PgatePlanItem *it = j->item;
	g_autofree char *what = NULL, *after = NULL;

	if (who == NULL)
		return g_strdup_printf("%s: message %s: %s", submitter, msgid,
				       unreadable);
	if (doc->approved)
		after = g_strdup_printf(
			"; the approval by %s does not cover it (%s)",
			doc->approved_by ? doc->approved_by : "?",
			doc->approved_msgs == NULL
			? "an older patchgate did not record what it saw: "
			  "approve again"
			: "it was not part of the series when the approval "
			  "was given");
	if (first)
		return g_strdup_printf("%s: not a trusted sender%s", who,
				       after ? after : "");
	if (it == NULL || it->role == PGATE_PLAN_OWN)
		what = g_strdup_printf("message %s", msgid);
	else if (it->role == PGATE_PLAN_BORROWED)
		what = g_strdup_printf("patch %s, borrowed from %s (the version "
				       "this one re-rolls),", msgid, it->series);
	else
		what = g_strdup_printf("patch %s of prerequisite series %s "
				       "(%s)", msgid, it->series,
				       it->why ? it->why : "?");
	return g_strdup_printf("%s: %s is from %s, not a trusted sender%s",
			       submitter, what, who, after ? after : "");
}

int
pgate_pipeline__trust_gate(PgatePipeline *p, const PgateSeriesRec *rec,
			   PgateSeriesDoc *doc, PgatePipelinePlan **out_plan,
			   char **out_why, GError **error)
{
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(PgatePipelinePlan) plan = NULL;
	g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(Judged));
	g_autofree char *submitter = NULL;

	*out_why = NULL;
	*out_plan = NULL;
	txn = pgate_store_begin_read(p->store, error);
	if (txn == NULL)
		return -1;
	plan = pgate_pipeline_plan_read(txn, rec->id, plan_trusts, p, error);
	if (plan == NULL)
		return -1;
	/* the cover and the series' own first: the first names it */
	if (rec->cover != NULL) {
		Judged j = { rec->cover_num, NULL };

		g_array_append_val(list, j);
	}
	for (guint pass = 0; pass < 2; pass++)
		for (guint i = 0; i < plan->items->len; i++) {
			const PgatePlanItem *it = plan->items->pdata[i];
			Judged j = { it->patch->num, it };

			if ((it->role == PGATE_PLAN_PREREQ) == (pass == 1))
				g_array_append_val(list, j);
		}
	fix_approval(doc, list);
	if (p->cfg.trust_everyone) {
		*out_plan = g_steal_pointer(&plan);
		return 1;
	}
	if (list->len == 0) {
		*out_why = g_strdup_printf("%s: no message to check",
					   rec->submitter_email);
		return 0;
	}
	for (guint i = 0; i < list->len; i++) {
		const Judged *j = &g_array_index(list, Judged, i);
		g_autoptr(GError) local = NULL;
		g_autofree char *who = NULL, *msgid = NULL;

		if (covered(doc, j->num))
			continue;
		who = sender_of_num(p, txn, j->num, &msgid, &local);
		if (who == NULL && pgate_error_is_transient(local)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return -1;
		}
		if (submitter == NULL)
			submitter = g_strdup(who != NULL ? who
					     : rec->submitter_email);
		if (who != NULL && pgate_pipeline__sender_trusted(p, who))
			continue;
		*out_why = refusal(doc, j, i == 0, msgid ? msgid : "(missing)",
				   who, local ? local->message : "unreadable",
				   submitter);
		return 0;
	}
	*out_plan = g_steal_pointer(&plan);
	return 1;
}

/* ---- replies ---- */

/* 1 when a line of @own is the approve keyword, -1 the reject keyword,
 * 0 neither; the first such line counts. */
static int
keyword_in(const PgatePipelineConfig *c, const char *own)
{
	g_auto(GStrv) lines = g_strsplit(own, "\n", -1);

	for (guint k = 0; lines[k]; k++) {
		if (g_ascii_strcasecmp(lines[k], c->approve_keyword) == 0)
			return 1;
		if (g_ascii_strcasecmp(lines[k], c->reject_keyword) == 0)
			return -1;
	}
	return 0;
}

GPtrArray *
pgate_pipeline__reply_parents(PgatePipeline *p, PgateStoreTxn *txn,
			      const PgateSeriesRec *rec, GError **error)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new();
	g_autoptr(GPtrArray) out = g_ptr_array_new();

	if (rec->cover)
		g_ptr_array_add(ids, rec->cover);
	for (guint i = 0; i < rec->patches->len; i++)
		g_ptr_array_add(ids, ((PgateSeriesPatch *)rec->patches->pdata[i])->msgid);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(GArray) nums = pgate_store_message_lookup(
			txn, ids->pdata[i], error);

		if (nums == NULL)
			return NULL;
		/* a Message-ID two messages carry (an id-conflict: a resend
		 * that was changed, or somebody reusing it) is answered by
		 * nobody knows which: its replies decide nothing, and a
		 * copy never inherits the original's (issue #41) */
		if (nums->len != 1) {
			if (p->log && nums->len > 1) {
				g_autofree char *why = g_strdup_printf(
					"replies to %s decide nothing: %u "
					"messages have that Message-ID",
					(char *)ids->pdata[i], nums->len);

				p->log(p->log_data, rec->id, "reply-ignored",
				       why);
			}
			continue;
		}
		g_ptr_array_add(out, ids->pdata[i]);
	}
	return g_steal_pointer(&out);
}

char *
pgate_pipeline__reply_own_text(PgatePipeline *p, PgateStoreTxn *txn,
			       guint64 num, const char *parent,
			       char **from_globs, PgateMessageRec **out_m,
			       GBytes **out_raw)
{
	g_autoptr(PgateMessageRec) m = pgate_store_message_get(txn, num, NULL);
	g_autoptr(GBytes) raw = NULL;
	const char *d;
	gsize len;
	char *own;

	if (m == NULL || g_strcmp0(m->in_reply_to, parent) != 0 ||
	    (from_globs != NULL &&
	     !pgate_pipeline__glob_match(from_globs, m->from_email)) ||
	    (m->flags & PGATE_MSG_FLAG_AUTOMATED) ||
	    m->raw_size > TRUST_MAX_REPLY)
		return NULL;
	raw = pgate_ingest_load_raw(txn, p->state_dir, m, TRUST_MAX_REPLY,
				    NULL);
	if (raw == NULL)
		return NULL;
	d = g_bytes_get_data(raw, &len);
	if (len > TRUST_MAX_REPLY)
		return NULL;
	/* the reply's own text part only: no attachment, no attached
	 * message, nothing below a quote marker (ingest/parse.c) */
	own = pgate_mail_reply_own_text(d, len, NULL, TRUST_MAX_REPLY_LINES,
					NULL);
	if (own == NULL)
		return NULL;
	*out_m = g_steal_pointer(&m);
	*out_raw = g_steal_pointer(&raw);
	return own;
}

int
pgate_pipeline__reply_decision(PgatePipeline *p, const PgateSeriesRec *rec,
			       char **out_who, guint64 *out_num,
			       GError **error)
{
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(GPtrArray) ids = NULL;
	guint64 best_num = 0;
	int best = 0;

	*out_who = NULL;
	*out_num = 0;
	if (p->cfg.approvers == NULL || p->cfg.approvers[0] == NULL)
		return 0;
	txn = pgate_store_begin_read(p->store, error);
	if (txn == NULL)
		return 0;
	ids = pgate_pipeline__reply_parents(p, txn, rec, error);
	if (ids == NULL)
		return 0;
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(GArray) nums = pgate_store_refs_lookup(txn, ids->pdata[i],
								 NULL);

		for (guint j = 0; nums && j < nums->len; j++) {
			guint64 num = g_array_index(nums, guint64, j);
			g_autoptr(PgateMessageRec) m = NULL;
			g_autoptr(GBytes) raw = NULL;
			g_autoptr(GError) local = NULL;
			g_autofree char *own = NULL, *addr = NULL;
			int said;

			if (best != 0 && num <= best_num)
				continue;       /* a newer answer is known */
			own = pgate_pipeline__reply_own_text(
				p, txn, num, ids->pdata[i], p->cfg.approvers,
				&m, &raw);
			if (own == NULL)
				continue;
			said = keyword_in(&p->cfg, own);
			if (said == 0)
				continue;
			addr = pgate_pipeline__sender(p, raw, &local);
			if (addr == NULL ||
			    !pgate_pipeline__glob_match(p->cfg.approvers, addr)) {
				if (p->log) {
					g_autofree char *why = g_strdup_printf(
						"reply %s: %s", m->msgid, addr == NULL
						? local->message
						: "its From is not an approver");

					p->log(p->log_data, rec->id,
					       "reply-ignored", why);
				}
				continue;
			}
			best = said;
			best_num = num;
			g_free(*out_who);
			*out_who = g_strdup_printf("%s (reply %s)", addr, m->msgid);
		}
	}
	*out_num = best_num;
	return best;
}
