/* state.c - patch states: read a patch's state and its state changes,
 * change it, and decide whether we may ([patchwork] set_state, issue 28).
 *
 * Patchwork's states are per patch and belong to its maintainers.  We
 * move one only from "new" or "under-review", and only when no other user
 * ever changed it: the patch-state-changed events (API 1.2+ name their
 * actor) say who did.  A change we made ourselves is no obstacle, and a
 * patch that has the target state already is done: that is what makes a
 * retry after a crash between the server's 200 and the outbox's removal
 * harmless.  Patchwork has no conditional update (no ETag, no If-Match):
 * a human's change made between our GETs and our PATCH is overwritten.
 * That window is one round trip; docs/report-patchwork.md says so.
 */
#include "report/patchwork/patchwork-private.h"

#include <string.h>

#define PW_MAX_STATE 100u

void
pgate_patchwork_state_event_free(PgatePatchworkStateEvent *ev)
{
	if (ev == NULL)
		return;
	g_free(ev->date);
	g_free(ev->actor);
	g_free(ev->previous_state);
	g_free(ev->current_state);
	g_free(ev);
}

gboolean
pgate_patchwork_patch_state_is_valid(const char *state)
{
	gsize n = 0;

	if (state == NULL || *state == '\0')
		return FALSE;
	for (const char *p = state; *p; p++, n++)
		if (n >= PW_MAX_STATE ||
		    !(g_ascii_islower(*p) || g_ascii_isdigit(*p) || *p == '-'))
			return FALSE;
	return TRUE;
}

const char *
pgate_patchwork_state_decision_to_string(PgatePatchworkStateDecision d)
{
	switch (d) {
	case PGATE_PATCHWORK_STATE_SET:
		return "set";
	case PGATE_PATCHWORK_STATE_SKIP_SAME:
		return "skip-same";
	case PGATE_PATCHWORK_STATE_SKIP_HUMAN:
		return "skip-human";
	}
	return "invalid";
}

gboolean
pgate_patchwork_get_patch_state(PgatePatchwork *pw, gint64 patch_id,
				char **out_state, char **out_commit_ref,
				GError **error)
{
	g_autofree char *url = NULL, *subject = NULL, *state = NULL;
	PW_AUTO(json_t) j = NULL;
	PwResponse r = { 0 };
	gboolean ok = FALSE;

	g_return_val_if_fail(pw != NULL && out_state != NULL, FALSE);
	url = g_strdup_printf("%spatches/%" G_GINT64_FORMAT "/", pw->api,
			      patch_id);
	subject = g_strdup_printf("patch %" G_GINT64_FORMAT, patch_id);
	if (!pgate_patchwork__request(pw, "GET", url, NULL, FALSE, &r, error) ||
	    !pgate_patchwork__check_status(pw, &r, PW_REQ_READ, "GET", url,
					   subject, error))
		goto out;
	j = pgate_patchwork__parse_json(&r, "GET", url, error);
	if (j == NULL)
		goto out;
	state = json_is_object(j) ? pgate_patchwork__json_str(j, "state") : NULL;
	if (state == NULL || !pgate_patchwork_patch_state_is_valid(state)) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: GET %s: the answer has no valid \"state\"", url);
		goto out;
	}
	*out_state = g_steal_pointer(&state);
	if (out_commit_ref)
		*out_commit_ref = pgate_patchwork__json_str(j, "commit_ref");
	ok = TRUE;
out:
	pgate_patchwork__response_clear(&r);
	return ok;
}

static gboolean
event_item(PgatePatchwork *pw, json_t *item, gpointer payload, GError **error)
{
	g_autoptr(PgatePatchworkStateEvent) ev = NULL;
	json_t *id = json_object_get(item, "id");
	json_t *actor, *p;

	(void)pw;
	if (!json_is_object(item) || !json_is_integer(id)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_FAILED,
			    "patchwork: an event without an integer id");
		return FALSE;
	}
	/* the filter is the server's; a server that ignored it does no harm */
	if (g_strcmp0(json_string_value(json_object_get(item, "category")),
		      "patch-state-changed") != 0)
		return TRUE;
	ev = g_new0(PgatePatchworkStateEvent, 1);
	ev->id = json_integer_value(id);
	ev->date = pgate_patchwork__json_str(item, "date");
	actor = json_object_get(item, "actor");
	ev->has_actor = actor != NULL;
	if (json_is_object(actor))
		ev->actor = pgate_patchwork__json_str(actor, "username");
	p = json_object_get(item, "payload");
	ev->previous_state = pgate_patchwork__json_str(p, "previous_state");
	ev->current_state = pgate_patchwork__json_str(p, "current_state");
	g_ptr_array_add(payload, g_steal_pointer(&ev));
	return TRUE;
}

GPtrArray *
pgate_patchwork_list_state_events(PgatePatchwork *pw, gint64 patch_id,
				  GError **error)
{
	g_autoptr(GPtrArray) out = NULL;
	g_autofree char *url = NULL, *subject = NULL, *pp = NULL;

	g_return_val_if_fail(pw != NULL, NULL);
	out = g_ptr_array_new_with_free_func(
		(GDestroyNotify)pgate_patchwork_state_event_free);
	pp = pgate_patchwork__per_page_arg(pw, '&');
	url = g_strdup_printf("%sevents/?patch=%" G_GINT64_FORMAT
			      "&category=patch-state-changed%s", pw->api,
			      patch_id, pp);
	subject = g_strdup_printf("events of patch %" G_GINT64_FORMAT, patch_id);
	if (!pgate_patchwork__get_list(pw, url, subject, event_item, out, error))
		return NULL;
	return g_steal_pointer(&out);
}

gboolean
pgate_patchwork_set_patch_state(PgatePatchwork *pw, gint64 patch_id,
				const char *state, const char *commit_ref,
				GError **error)
{
	g_autofree char *url = NULL, *subject = NULL, *body = NULL;
	PW_AUTO(json_t) req = NULL;
	PwResponse r = { 0 };
	gboolean ok = FALSE;

	g_return_val_if_fail(pw != NULL, FALSE);
	if (!pgate_patchwork_patch_state_is_valid(state)) {
		g_autofree char *q = pgate_patchwork__quote(state ? state : "", -1);

		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: patch state '%s' is not a state slug "
			    "(lowercase letters, digits, '-')", q);
		return FALSE;
	}
	if (commit_ref != NULL &&
	    (*commit_ref == '\0' || strlen(commit_ref) > 255 ||
	     !g_utf8_validate(commit_ref, -1, NULL))) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: commit_ref must be 1 to 255 characters");
		return FALSE;
	}
	if (pw->token == NULL) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_CONFIG,
			    "patchwork: [%s]: no token configured (token_file or "
			    "token_env): cannot change patch states", pw->group);
		return FALSE;
	}
	req = json_pack("{s:s}", "state", state);
	if (commit_ref)
		json_object_set_new(req, "commit_ref", json_string(commit_ref));
	body = json_dumps(req, JSON_COMPACT);
	url = g_strdup_printf("%spatches/%" G_GINT64_FORMAT "/", pw->api,
			      patch_id);
	subject = g_strdup_printf("patch %" G_GINT64_FORMAT, patch_id);
	if (!pgate_patchwork__request(pw, "PATCH", url, body, TRUE, &r, error) ||
	    !pgate_patchwork__check_status(pw, &r, PW_REQ_PATCH_STATE, "PATCH",
					   url, subject, error))
		goto out;
	if (r.status != 200) {
		pgate_patchwork__set_error(pw, error, PGATE_ERROR_FAILED,
			"patchwork: PATCH %s: HTTP %ld instead of 200", url,
			r.status);
		goto out;
	}
	ok = TRUE;
	g_debug("patchwork: patch=%" G_GINT64_FORMAT " state=%s set", patch_id,
		state);
out:
	pgate_patchwork__response_clear(&r);
	return ok;
}

static gboolean
state_is_open(const char *s)
{
	return g_strcmp0(s, "new") == 0 || g_strcmp0(s, "under-review") == 0;
}

/* The first state change by someone else than @our_user, or %NULL. */
static const PgatePatchworkStateEvent *
foreign_change(const GPtrArray *events, const char *our_user)
{
	for (guint i = 0; events && i < events->len; i++) {
		const PgatePatchworkStateEvent *ev = events->pdata[i];

		if (our_user == NULL || ev->actor == NULL ||
		    strcmp(ev->actor, our_user) != 0)
			return ev;
	}
	return NULL;
}

PgatePatchworkStateDecision
pgate_patchwork_patch_state_decide(const char *current,
				   const GPtrArray *events,
				   const char *target, const char *our_user)
{
	if (g_strcmp0(current, target) == 0)
		return PGATE_PATCHWORK_STATE_SKIP_SAME;
	if (!state_is_open(current))
		return PGATE_PATCHWORK_STATE_SKIP_HUMAN;
	if (foreign_change(events, our_user) != NULL)
		return PGATE_PATCHWORK_STATE_SKIP_HUMAN;
	return PGATE_PATCHWORK_STATE_SET;
}

gboolean
pgate_patchwork_set_patch_state_decided(PgatePatchwork *pw, gint64 patch_id,
					const char *state,
					const char *commit_ref,
					PgatePatchworkStateDecision *out_decision,
					char **out_why, GError **error)
{
	g_autofree char *current = NULL;
	g_autoptr(GPtrArray) events = NULL;
	const char *us = pgate_patchwork_get_user(pw);
	const PgatePatchworkStateEvent *foreign;
	PgatePatchworkStateDecision d;

	g_return_val_if_fail(pw != NULL, FALSE);
	if (!pgate_patchwork_patch_state_is_valid(state)) {
		g_set_error(error, PGATE_REPORT_ERROR, PGATE_ERROR_INVALID,
			    "patchwork: patch state is not a state slug");
		return FALSE;
	}
	if (!pgate_patchwork_get_patch_state(pw, patch_id, &current, NULL, error))
		return FALSE;
	/* the events matter only when the state is one we may move */
	if (strcmp(current, state) != 0 && state_is_open(current)) {
		events = pgate_patchwork_list_state_events(pw, patch_id, error);
		if (events == NULL)
			return FALSE;
	}
	d = pgate_patchwork_patch_state_decide(current, events, state, us);
	if (out_decision)
		*out_decision = d;
	if (d == PGATE_PATCHWORK_STATE_SKIP_HUMAN && out_why) {
		/* server text, quoted: made fit for a log line */
		foreign = foreign_change(events, us);
		if (foreign == NULL) {
			g_autofree char *q = pgate_patchwork__quote(current, -1);

			*out_why = g_strdup_printf("its state is %s, not new or "
						   "under-review", q);
		} else {
			g_autofree char *who = pgate_patchwork__quote(
				foreign->actor ? foreign->actor : "someone", -1);
			g_autofree char *from = pgate_patchwork__quote(
				foreign->previous_state ? foreign->previous_state
							: "?", -1);
			g_autofree char *to = pgate_patchwork__quote(
				foreign->current_state ? foreign->current_state
						       : "?", -1);
			g_autofree char *when = pgate_patchwork__quote(
				foreign->date ? foreign->date : "no date", -1);

			*out_why = g_strdup_printf("%s changed its state (%s to "
						   "%s, %s)", who, from, to, when);
		}
	}
	if (d != PGATE_PATCHWORK_STATE_SET) {
		g_debug("patchwork: patch=%" G_GINT64_FORMAT " state=%s: %s (is %s)",
			patch_id, state, pgate_patchwork_state_decision_to_string(d),
			current);
		return TRUE;
	}
	return pgate_patchwork_set_patch_state(pw, patch_id, state, commit_ref,
					       error);
}
