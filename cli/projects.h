/* projects.h - cli/projects.c: [project NAME] (docs/config.md,
 * "Projects") in `series list --project` and `series show`. */
#pragma once

#include "cli/cli.h"
#include "pipeline/pipeline.h"

/* *@out: the project named @name, %NULL (and *@projects %NULL) when the
 * configuration has no [project NAME]; *@projects owns it. */
gboolean pgate_cli_project_find(PgateCli *cli, const char *name,
				GPtrArray **projects, const PgateProject **out,
				GError **error);
/* Whether series @id is @pr's (always when @pr is %NULL); %FALSE with
 * @error set on a read error. */
gboolean pgate_cli_in_project(PgateStoreTxn *txn, const PgateProject *pr,
			      const char *id, GError **error);
/* How series show prints a project's documents (@prefix: the length of
 * "SERIES@NAME/"). */
typedef void (*PgateCliPrintStages)(GPtrArray *v, gsize prefix);
/* With [project NAME] groups, the projects series @r is in (or has
 * documents of), why, and their documents: set as "projects" ([{"project",
 * "state_id", "why", "stages"}]) in @into (nullable), printed with @print
 * (nullable).  Nothing without projects.  %FALSE with @error set. */
gboolean pgate_cli_series_projects(PgateCli *cli, PgateStoreTxn *txn,
				   const PgateSeriesRec *r, json_t *into,
				   PgateCliPrintStages print, GError **error);
