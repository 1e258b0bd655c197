/* upstream.h - merge detection: which stored patches an upstream tree
 * took, and by which commit (docs/pipeline.md, "Merged upstream").
 *
 * A stage like apply or ci: it reads [upstream], fetches the configured
 * repositories with libgit2, reads every commit of the configured
 * branches that it has not read before (on the first run those of the
 * last window_days), and matches each against the stored patches, in
 * this order:
 *
 *   link      a Link: or Message-Id: trailer naming a stored patch's
 *             Message-ID (lore.kernel.org/r/, /all/, /LIST/,
 *             patch.msgid.link/, [upstream] link_patterns);
 *   patch-id  the commit's `git patch-id --stable` is a stored patch's;
 *   subject   the same author (address) and the same normalised subject:
 *             the maintainer edited the patch ("applied with changes").
 *
 * The store's indexes answer each question (msgid_index, patchid_index,
 * author_index); nothing is scanned.  What a commit offers is also kept
 * (the store's upstream database) so that a patch stored after the
 * commit was read finds it: pgate_upstream_series_check().
 *
 * What matched is kept per series in the stage table, SERIES/upstream:
 *
 *   {"patches": {"MSGID": {"commit": "...", "repo": "/srv/linux.git",
 *                          "branch": "master", "rule": "link",
 *                          "changes": false, "at": 1733212345,
 *                          "also": [{"commit": ..., "branch": ...}]}}}
 *
 * which the pipeline reads (pgate_upstream_series_read()) to call a
 * series merged or partially merged.  A branch whose history was
 * rewritten (its last commit read is no longer in it) loses the matches
 * of the commits that left it, and its new commits are read.
 *
 * Errors: domain PGATE_UPSTREAM_ERROR, codes of PgateErrorCode; libgit2's
 * are translated here.  Nothing is printed.
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"
#include "store/store.h"

G_BEGIN_DECLS

#define PGATE_UPSTREAM_ERROR (pgate_upstream_error_quark())
GQuark pgate_upstream_error_quark(void);

/* [upstream] */
typedef struct {
	gboolean enabled;        /* the group exists */
	char **repos;            /* local repositories (bare or not) */
	char **branches;         /* read in each: NAME (refs/heads/NAME, else
				  * refs/remotes/NAME) or a full ref */
	gboolean fetch;          /* fetch @remote of each repository first */
	char *remote;            /* "origin" */
	gint64 window_days;      /* a branch's first read goes this far back */
	gint64 subject_days;     /* rule 3: a patch dated this far before the
				  * commit's author date (or a day after) */
	char **link_patterns;    /* (nullable): more archive URL prefixes;
				  * the path component after one is a
				  * Message-ID */
} PgateUpstreamConfig;

gboolean pgate_upstream_config_load(GKeyFile *kf, PgateUpstreamConfig *c,
				    GError **error);
void pgate_upstream_config_clear(PgateUpstreamConfig *c);

typedef enum {
	PGATE_UPSTREAM_RULE_LINK = 0,
	PGATE_UPSTREAM_RULE_PATCH_ID,
	PGATE_UPSTREAM_RULE_SUBJECT,
} PgateUpstreamRule;

/* "link", "patch-id", "subject" */
const char *pgate_upstream_rule_to_string(PgateUpstreamRule rule);

/* What a scan did; zero-initialise, clear with
 * pgate_upstream_stats_clear(). */
typedef struct {
	guint branches;          /* read */
	guint commits;           /* new commits read */
	guint matched;           /* patches matched by them */
	guint rewritten;         /* branches whose history was rewritten */
	guint dropped;           /* matches lost to a rewrite */
	GHashTable *series;      /* (nullable): ids of the series whose
				  * matches changed */
} PgateUpstreamStats;

void pgate_upstream_stats_clear(PgateUpstreamStats *st);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PgateUpstreamStats, pgate_upstream_stats_clear)

/* Told of each branch read: @what is "read", "rewritten", "fetch-failed",
 * "missing". */
typedef void (*PgateUpstreamLog)(gpointer data, const char *branch,
				 const char *what, const char *detail);

/**
 * pgate_upstream_scan:
 * @now: the time of the pass (the first read's window ends here)
 * @log: (nullable)
 *
 * Fetches (with fetch), then reads every branch of every repository:
 * its new commits are matched and remembered, its matches kept in each
 * series' SERIES/upstream, and the branch's last commit read moved, all
 * in one transaction a branch.  A fetch that fails is logged and the
 * branch read as the repository has it.  Returns %FALSE on an error of
 * the store or of a repository that cannot be opened.
 */
gboolean pgate_upstream_scan(PgateStore *store, const PgateUpstreamConfig *c,
			     gint64 now, PgateUpstreamLog log, gpointer log_data,
			     PgateUpstreamStats *stats, GError **error);

/**
 * pgate_upstream_series_check:
 * @out_matched: (out): how many of its patches are matched now
 *
 * The other direction: each patch of @rec not matched yet is looked up
 * among the commits read before (a commit read before its patch was
 * stored), and what is found is added to SERIES/upstream.
 */
gboolean pgate_upstream_series_check(PgateStore *store,
				     const PgateUpstreamConfig *c,
				     const PgateSeriesRec *rec,
				     guint *out_matched, GError **error);

/* One patch's match, as SERIES/upstream holds it. */
typedef struct {
	char *msgid;
	char *commit;
	char *repo;
	char *branch;
	PgateUpstreamRule rule;
	gboolean changes;        /* applied with changes (rule subject) */
	gint64 at;               /* when it was found */
} PgateUpstreamMatch;

void pgate_upstream_match_free(PgateUpstreamMatch *m);

/**
 * pgate_upstream_series_read:
 * Returns: (transfer full) (element-type PgateUpstreamMatch): the matches
 *   of @rec's patches, in the series' order (a patch without one is left
 *   out); %NULL on error.
 */
GPtrArray *pgate_upstream_series_read(PgateStoreTxn *txn,
				      const PgateSeriesRec *rec,
				      GError **error);

/* The subject as the subject rule compares it: Re: and [...] prefixes
 * off, lower case, blanks collapsed, no final period.  (transfer full) */
char *pgate_upstream_subject_normalize(const char *subject);

/* The Message-ID a Link: or Message-Id: trailer value names, or %NULL:
 * "<ID>", or an archive URL (lore.kernel.org/LIST/ID, patch.msgid.link/ID,
 * one of @patterns (nullable) followed by ID), percent-decoded.
 * (transfer full) */
char *pgate_upstream_link_msgid(const char *value, char *const *patterns);

G_END_DECLS
