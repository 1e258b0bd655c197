/* plan.c - what applying a series would apply, patch by patch.
 *
 * The one list that both the trust decision and the apply stage read
 * (issue #41): trust is a property of the code that runs, so what trust
 * judged must be exactly what is applied.  In order: the patches of each
 * prerequisite series (depends_on entries resolved to a series: one
 * level, in the order the series names them), then the series' own, or,
 * for a partial re-roll, the older version's with the re-rolled ones
 * swapped in (pgate_threading_effective_patches()).  Each item says
 * where it comes from, so that a refusal can name the patch and why it
 * is included.
 *
 * A dependency may mean several series (a patch-id two series share, a
 * Message-ID stored twice): the submitter's own series first, then one
 * whose submitter the caller trusts, then threading's choice
 * (pgate_threading_dep_candidates()).  A look-alike of somebody else's
 * patch never wins over the real one because it came later.
 */
#include "pipeline/pipeline-private.h"
#include "threading/threading.h"

#include <string.h>

static void
item_free(PgatePlanItem *it)
{
	if (it == NULL)
		return;
	pgate_series_patch_free(it->patch);
	g_free(it->series);
	g_free(it->why);
	g_free(it);
}

void
pgate_pipeline_plan_free(PgatePipelinePlan *plan)
{
	if (plan == NULL)
		return;
	pgate_series_rec_free(plan->rec);
	g_ptr_array_unref(plan->items);
	g_ptr_array_unref(plan->prereqs);
	g_free(plan->reroll_of);
	g_free(plan);
}

/* Appends the patches an apply of @r applies (its effective ones) with
 * @role (own ones become PGATE_PLAN_BORROWED when a re-roll takes them
 * from the older version).  *@out_base: the re-rolled series. */
static gboolean
add_series(PgateStoreTxn *txn, PgatePipelinePlan *plan,
	   const PgateSeriesRec *r, PgatePlanRole role, const char *why,
	   char **out_base, GError **error)
{
	g_autofree char *base = NULL;
	g_autoptr(GPtrArray) eff = pgate_threading_effective_patches(
		txn, r, &base, error);

	if (eff == NULL)
		return FALSE;
	for (guint i = 0; i < eff->len; i++) {
		PgateSeriesPatch *p = eff->pdata[i];
		PgatePlanItem *it = g_new0(PgatePlanItem, 1);
		gboolean own = base == NULL;

		for (guint j = 0; !own && j < r->patches->len; j++)
			own = ((PgateSeriesPatch *)r->patches->pdata[j])->num ==
			      p->num;
		it->patch = p;
		eff->pdata[i] = NULL;	/* taken */
		it->series = g_strdup(own ? r->id : base);
		it->role = role == PGATE_PLAN_OWN && !own ? PGATE_PLAN_BORROWED
							  : role;
		it->why = g_strdup(why);
		g_ptr_array_add(plan->items, it);
	}
	if (out_base != NULL)
		*out_base = g_steal_pointer(&base);
	return TRUE;
}

/* *@out: the series dependency @d of @rec resolves to (%NULL: none).
 * %FALSE on a store error. */
static gboolean
pick(PgateStoreTxn *txn, const PgateSeriesRec *rec, const PgateSeriesDep *d,
     PgatePlanTrustFunc trusted, gpointer data, char **out, GError **error)
{
	g_autoptr(GPtrArray) c = pgate_threading_dep_candidates(txn, rec, d,
								error);

	*out = NULL;
	if (c == NULL)
		return FALSE;
	for (guint i = 0; trusted != NULL && i < c->len; i++) {
		g_autoptr(PgateSeriesRec) r = pgate_store_series_get(
			txn, c->pdata[i], NULL);

		/* the submitter's own comes first when there is one */
		if (r != NULL &&
		    (g_ascii_strcasecmp(r->submitter_email,
					rec->submitter_email) == 0 ||
		     trusted(r, data))) {
			*out = g_strdup(c->pdata[i]);
			return TRUE;
		}
	}
	if (c->len > 0)
		*out = g_strdup(c->pdata[0]);
	return TRUE;
}

PgatePipelinePlan *
pgate_pipeline_plan_read(PgateStoreTxn *txn, const char *sid,
			 PgatePlanTrustFunc trusted, gpointer data,
			 GError **error)
{
	g_autoptr(PgatePipelinePlan) plan = g_new0(PgatePipelinePlan, 1);
	g_autoptr(GError) local = NULL;
	const char *project = NULL;
	/* a project's state ID (SID@NAME): the series is SID's */
	g_autofree char *own = pgate_project_split_state_id(sid, &project);

	plan->items = g_ptr_array_new_with_free_func((GDestroyNotify)item_free);
	plan->prereqs = g_ptr_array_new_with_free_func(g_free);
	plan->rec = pgate_store_series_get(txn, own, &local);
	if (plan->rec == NULL) {
		/* the store's message names LMDB's code: say it plainly */
		if (g_error_matches(local, PGATE_STORE_ERROR,
				    PGATE_ERROR_NOT_FOUND))
			g_set_error(error, PGATE_PIPELINE_ERROR,
				    PGATE_ERROR_NOT_FOUND, "no series %s", sid);
		else
			g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	for (guint i = 0; i < plan->rec->deps->len; i++) {
		const PgateSeriesDep *d = plan->rec->deps->pdata[i];
		g_autofree char *dep = NULL, *why = NULL;
		g_autoptr(PgateSeriesRec) pr = NULL;
		gboolean seen = FALSE;

		if (!pick(txn, plan->rec, d, trusted, data, &dep, error))
			return NULL;
		if (dep == NULL)
			continue;
		for (guint k = 0; k < plan->prereqs->len; k++)
			seen |= strcmp(plan->prereqs->pdata[k], dep) == 0;
		if (seen || strcmp(dep, plan->rec->id) == 0)
			continue;
		pr = pgate_store_series_get(txn, dep, NULL);
		if (pr == NULL)
			continue;
		why = g_strdup_printf("%s: %s", d->kind, d->value);
		if (!add_series(txn, plan, pr, PGATE_PLAN_PREREQ, why, NULL,
				error))
			return NULL;
		g_ptr_array_add(plan->prereqs, g_steal_pointer(&dep));
	}
	plan->n_prereq = plan->items->len;
	if (!add_series(txn, plan, plan->rec, PGATE_PLAN_OWN, NULL,
			&plan->reroll_of, error))
		return NULL;
	return g_steal_pointer(&plan);
}
