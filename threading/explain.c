/* explain.c - why a series supersedes what it does (series show).
 *
 * Read-only and after the fact: from the stored series, the records of
 * its messages (their link_lines say how each archive link was read)
 * and the series those links and replies lead to.  It re-decides
 * nothing; it says which rule gave the stored link, which line of which
 * mail it read, and why each other series pointed at is not the
 * predecessor. */
#include "threading/threading.h"
#include "threading/threading-private.h"

#include <string.h>

#define EXPLAIN_MAX_MSGS 512	/* members read for their lines */

/* (transfer full) (nullable): the first stored record of @msgid. */
static PgateMessageRec *
message_of(PgateStoreTxn *txn, const char *msgid, GError **error)
{
	g_autoptr(GArray) nums = pgate_store_message_lookup(txn, msgid, error);

	if (nums == NULL || nums->len == 0)
		return NULL;
	return pgate_store_message_get(txn, g_array_index(nums, guint64, 0),
				       error);
}

static gboolean
is_member(const PgateSeriesRec *s, const char *msgid)
{
	if (msgid == NULL)
		return FALSE;
	if (s->cover != NULL && strcmp(s->cover, msgid) == 0)
		return TRUE;
	for (guint i = 0; i < s->patches->len; i++)
		if (strcmp(((PgateSeriesPatch *)s->patches->pdata[i])->msgid,
			   msgid) == 0)
			return TRUE;
	return FALSE;
}

typedef struct {
	PgateStoreTxn *txn;
	const PgateSeriesRec *r;
	PgateSeriesRec *pred;     /* (nullable) */
	json_t *evidence, *links, *rejected;
	GHashTable *seen;         /* series ids rejected once */
} Explain;

static void
evidence_add(Explain *x, const char *text, const char *msgid)
{
	json_array_append_new(x->evidence, json_pack(
		"{s:s,s:o}", "text", text,
		"msgid", msgid ? json_string(msgid) : json_null()));
}

static gboolean
reject(Explain *x, const char *sid, const char *reason, const char *text,
       GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(PgateSeriesRec) q = NULL;

	if (sid == NULL || strcmp(sid, x->r->id) == 0 ||
	    (x->pred != NULL && strcmp(sid, x->pred->id) == 0) ||
	    g_hash_table_contains(x->seen, sid))
		return TRUE;
	q = pgate_store_series_get(x->txn, sid, &local);
	if (q == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
					  PGATE_ERROR_NOT_FOUND)) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	g_hash_table_add(x->seen, g_strdup(sid));
	json_array_append_new(x->rejected, json_pack(
		"{s:s,s:i,s:s,s:o}", "series", sid,
		"version", q ? (int)q->version : 0, "reason", reason,
		"text", text ? json_string(text) : json_null()));
	return TRUE;
}

/* Why a link that names a version @q (nullable) is not the predecessor. */
static const char *
version_verdict(const Explain *x, const PgateSeriesRec *q)
{
	if (q != NULL && q->version >= x->r->version)
		return "named as a version, but not an older one";
	if (x->pred != NULL && q != NULL && x->pred->version == q->version)
		return "named as a version; a later send of that version was "
		       "taken (a chain is a line)";
	if (x->pred != NULL && x->pred->version > (q ? q->version : 0))
		return "named as a version; a closer one in its chain was "
		       "taken (a chain is a line)";
	return "named as a version; a stronger rule gave another predecessor";
}

/* The link_lines of @m ("KIND ID LINE"): each named series is listed,
 * the predecessor's line is evidence, the others are rejected. */
static gboolean
read_lines(Explain *x, const PgateMessageRec *m, GError **error)
{
	gboolean by_link = g_strcmp0(x->r->link_reason, "link") == 0;

	for (guint i = 0; i < m->link_lines->len; i++) {
		g_auto(GStrv) f = g_strsplit(m->link_lines->pdata[i], " ", 3);
		g_autofree char *sid = NULL;
		g_autoptr(PgateSeriesRec) q = NULL;
		const char *line, *why;

		if (g_strv_length(f) < 2)
			continue;
		line = f[2] ? f[2] : "";
		sid = pgate_threading__series_of_msgid(x->txn, f[1], error);
		if (sid == NULL && error && *error)
			return FALSE;
		json_array_append_new(x->links, json_pack(
			"{s:s,s:s,s:s,s:s,s:o}", "msgid", f[1], "kind", f[0],
			"line", line, "from", m->msgid,
			"series", sid ? json_string(sid) : json_null()));
		if (sid == NULL)
			continue;
		if (strcmp(f[0], "version") == 0 && x->pred != NULL &&
		    strcmp(sid, x->pred->id) == 0) {
			if (by_link)
				evidence_add(x, line, m->msgid);
			continue;
		}
		if (strcmp(f[0], "reference") == 0) {
			why = "link is a reference: no version wording";
		} else if (strcmp(f[0], "depends") == 0) {
			why = "link is a dependency, not a version";
		} else {
			q = pgate_store_series_get(x->txn, sid, NULL);
			why = version_verdict(x, q);
		}
		if (!reject(x, sid, why, line, error))
			return FALSE;
	}
	return TRUE;
}

/* What the rule of the stored link read, besides link lines. */
static void
rule_evidence(Explain *x, const PgateMessageRec *m)
{
	const char *rule = x->r->link_reason;

	if (rule == NULL || x->pred == NULL)
		return;
	if (strcmp(rule, "in-reply-to") == 0 && m->in_reply_to != NULL &&
	    is_member(x->pred, m->in_reply_to)) {
		g_autofree char *t = g_strdup_printf("In-Reply-To: <%s>",
						     m->in_reply_to);

		evidence_add(x, t, m->msgid);
	}
}

static void
summary_evidence(Explain *x)
{
	const PgateSeriesRec *r = x->r, *p = x->pred;
	const char *rule = r->link_reason;
	g_autofree char *t = NULL;

	if (rule == NULL || p == NULL)
		return;
	if (strcmp(rule, "change-id") == 0 && r->change_id != NULL)
		t = g_strdup_printf("change-id: %s", r->change_id);
	else if (strcmp(rule, "resend") == 0)
		t = g_strdup_printf("the same patches (patch-ids) as v%u, "
				    "sent again", p->version);
	else if (strcmp(rule, "subject") == 0)
		t = g_strdup_printf("same person, a similar name: \"%s\" after "
				    "\"%s\" (v%u)", r->name, p->name,
				    p->version);
	else if (strcmp(rule, "unlabeled") == 0)
		t = g_strdup_printf("same person, the same name and version, "
				    "sent later: \"%s\"", r->name);
	else if (strcmp(rule, "late") == 0)
		t = g_strdup_printf("same person, the same work sent again after "
				    "v%u, under a lower label: \"%s\" after \"%s\"",
				    p->version, r->name, p->name);
	else if (strcmp(rule, "chain") == 0)
		t = g_strdup_printf("the closest earlier version of the same "
				    "work (the same person's, sharing patches or "
				    "name words) in the line of versions the "
				    "evidence pointed at: \"%s\" (v%u)", p->name,
				    p->version);
	if (t != NULL)
		evidence_add(x, t, NULL);
}

/* The series @r's messages reply into that are not its predecessor. */
static gboolean
reject_replies(Explain *x, GError **error)
{
	for (guint i = 0; i < x->r->replies_into->len; i++) {
		const char *sid = x->r->replies_into->pdata[i];
		g_autoptr(PgateSeriesRec) q = NULL;
		g_autofree char *a = NULL, *b = NULL;
		const char *why;

		if (strcmp(sid, x->r->id) == 0 ||
		    (x->pred && strcmp(sid, x->pred->id) == 0))
			continue;
		q = pgate_store_series_get(x->txn, sid, NULL);
		if (q == NULL)
			continue;
		a = pgate_threading__name_norm(x->r->name);
		b = pgate_threading__name_norm(q->name);
		if (!pgate_threading__same_person(x->r, q) && strcmp(a, b) != 0)
			why = "replies into another person's series under "
			      "another series name: a reply alone is no evidence";
		else if (g_ascii_strcasecmp(x->r->submitter_email,
					    q->submitter_email) == 0 &&
			 ABS(x->r->date - q->date) <=
			 PGATE_THREADING_MAILING_GAP)
			why = "another series of the same mailing: sent with "
			      "it, not a version of it";
		else if (q->version > x->r->version ||
			 (q->version == x->r->version && q->date >= x->r->date))
			why = "replies into a newer series";
		else if (x->pred != NULL)
			why = "replies into an earlier version; the latest "
			      "earlier one in the chain was taken";
		else
			why = "replies into it, but no rule holds (another "
			      "work of the same version)";
		if (!reject(x, sid, why, NULL, error))
			return FALSE;
	}
	return TRUE;
}

json_t *
pgate_threading_series_explain(PgateStoreTxn *txn, const PgateSeriesRec *r,
			       GError **error)
{
	g_autoptr(PgateSeriesRec) pred = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash,
							   g_str_equal,
							   g_free, NULL);
	g_autoptr(GPtrArray) ids = g_ptr_array_new();
	Explain x = { txn, r, NULL, json_array(), json_array(), json_array(),
		      seen };
	g_autoptr(GError) local = NULL;
	json_t *out;

	if (r->supersedes != NULL) {
		pred = pgate_store_series_get(txn, r->supersedes, &local);
		if (pred == NULL && !g_error_matches(local, PGATE_STORE_ERROR,
						     PGATE_ERROR_NOT_FOUND))
			goto fail;
		g_clear_error(&local);
	}
	x.pred = pred;
	if (r->cover != NULL)
		g_ptr_array_add(ids, r->cover);
	for (guint i = 0; i < r->patches->len && ids->len < EXPLAIN_MAX_MSGS; i++)
		g_ptr_array_add(ids, ((PgateSeriesPatch *)r->patches->pdata[i])->msgid);
	summary_evidence(&x);
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(PgateMessageRec) m = message_of(txn, ids->pdata[i],
							  &local);

		if (m == NULL) {
			if (local != NULL &&
			    !g_error_matches(local, PGATE_STORE_ERROR,
					     PGATE_ERROR_NOT_FOUND))
				goto fail;
			g_clear_error(&local);
			continue;
		}
		rule_evidence(&x, m);
		if (!read_lines(&x, m, &local))
			goto fail;
	}
	if (!reject_replies(&x, &local))
		goto fail;
	out = json_pack("{s:o,s:o,s:i,s:o,s:o,s:o}",
			"rule", r->link_reason ? json_string(r->link_reason)
					       : json_null(),
			"predecessor", r->supersedes ? json_string(r->supersedes)
						     : json_null(),
			"predecessor_version", pred ? (int)pred->version : 0,
			"evidence", x.evidence, "links", x.links,
			"rejected", x.rejected);
	return out;
fail:
	json_decref(x.evidence);
	json_decref(x.links);
	json_decref(x.rejected);
	g_propagate_error(error, g_steal_pointer(&local));
	return NULL;
}

char *
pgate_threading_explain_text(const json_t *ex)
{
	GString *s = g_string_new(NULL);
	const char *pred = json_string_value(json_object_get(ex, "predecessor"));
	const json_t *a;
	gsize i;
	json_t *v;

	if (pred != NULL)
		g_string_append_printf(s, "supersedes %s (v%d) — rule %s\n", pred,
			(int)json_integer_value(json_object_get(
				ex, "predecessor_version")),
			json_string_value(json_object_get(ex, "rule")));
	a = json_object_get(ex, "evidence");
	json_array_foreach(a, i, v) {
		const char *m = json_string_value(json_object_get(v, "msgid"));

		g_string_append_printf(s, "  read: %s", json_string_value(
					       json_object_get(v, "text")));
		if (m != NULL)
			g_string_append_printf(s, " (in <%s>)", m);
		g_string_append_c(s, '\n');
	}
	a = json_object_get(ex, "links");
	json_array_foreach(a, i, v)
		g_string_append_printf(s, "  link %s <%s>: %s\n",
			json_string_value(json_object_get(v, "kind")),
			json_string_value(json_object_get(v, "msgid")),
			json_string_value(json_object_get(v, "line")));
	a = json_object_get(ex, "rejected");
	json_array_foreach(a, i, v) {
		const char *t = json_string_value(json_object_get(v, "text"));

		g_string_append_printf(s, "  not %s (v%d): %s",
			json_string_value(json_object_get(v, "series")),
			(int)json_integer_value(json_object_get(v, "version")),
			json_string_value(json_object_get(v, "reason")));
		if (t != NULL)
			g_string_append_printf(s, ": \"%s\"", t);
		g_string_append_c(s, '\n');
	}
	return g_string_free(s, FALSE);
}
