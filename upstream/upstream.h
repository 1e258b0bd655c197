/* upstream.h - merge detection: which stored patches an upstream tree
 * took, and by which commit (docs/pipeline.md, "Merged upstream").
 *
 * A stage like apply or ci: it reads [upstream], fetches the configured
 * repositories with libgit2, reads every commit of the configured
 * branches that it has not read before (on the first run those of the
 * last window_days), and decides for each commit which stored patch it
 * is: at most one per project.  Candidates come from the store's indexes
 * (nothing is scanned): the patches a Link: or Message-Id: trailer
 * names, those with the commit's `git patch-id --stable`, and the
 * author's patches with its subject (or the same subject but for a
 * subsystem prefix, case and punctuation) dated up to possible_days
 * before it.  Then:
 *
 *   - a patch the trailer names wins outright;
 *   - else, in each chain of versions, the newest version not newer
 *     than the commit's author date (ties: the identical one, then the
 *     latest sent); across chains the strongest evidence, then the
 *     commit's author, then the latest sent;
 *   - the evidence has a rank: "merged" (the trailer, or the chosen
 *     version's exact patch-id), "applied with changes" (the same author
 *     and subject, or an edited prefix with most changed lines the same,
 *     dated within subject_days and no trailer naming another message),
 *     else "possibly merged", which is shown and changes nothing.
 *
 * The losers are kept with the winner ("lost", and why) and, outside its
 * chain, as "possibly merged" hints on their own series.  What a commit
 * offers is kept too (the store's upstream database), so that a patch
 * stored after the commit was read makes the commit decide again
 * (pgate_upstream_series_check()): the result is the same in any order.
 *
 * What matched is kept per series in the stage table, SERIES/upstream:
 *
 *   {"patches": {"MSGID": {"commit": "...", "repo": "/srv/linux.git",
 *                          "branch": "master", "rule": "link",
 *                          "rank": "merged", "changes": false,
 *                          "at": 1733212345, "evidence": "...",
 *                          "lost": [{"msgid": ..., "series": ...,
 *                                    "version": 2, "why": ...}],
 *                          "also": [{"commit": ..., "branch": ...}]}},
 *    "possible": {"MSGID": [{"commit": ..., "repo": ..., "branch": ...,
 *                            "rule": ..., "evidence": ..., "why": ...}]}}
 *
 * which the pipeline reads (pgate_upstream_series_read(): the matches,
 * never the hints) to call a series merged or partially merged.  A
 * branch whose history was rewritten (its last commit read is no longer
 * in it) loses the matches of the commits that left it, and its new
 * commits are read.
 *
 * Errors: domain PGATE_UPSTREAM_ERROR, codes of PgateErrorCode; libgit2's
 * are translated here.  Nothing is printed.
 *
 * Two archives: upstream-explain (explain.c: names, subjects, trailers,
 * reading SERIES/upstream and explaining it), which needs no libgit2 and
 * which the lean patchgate binary links for `series show`; and the rest.
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
	gint64 subject_days;     /* "applied with changes": a patch dated this
				  * far before the commit's author date (or a
				  * day after) */
	gint64 possible_days;    /* the author's patches with the commit's
				  * subject are looked at this far back
				  * ("possibly merged" beyond subject_days) */
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
	PGATE_UPSTREAM_RULE_EDITED_SUBJECT,  /* the same but for a prefix,
					      * case, punctuation */
} PgateUpstreamRule;

/* "link", "patch-id", "subject", "edited-subject" */
const char *pgate_upstream_rule_to_string(PgateUpstreamRule rule);

/* What the evidence of a match is worth, strongest first. */
typedef enum {
	PGATE_UPSTREAM_RANK_MERGED = 0,      /* trailer, exact patch-id */
	PGATE_UPSTREAM_RANK_APPLIED,         /* applied with changes */
	PGATE_UPSTREAM_RANK_POSSIBLE,        /* shown, changes nothing */
} PgateUpstreamRank;

/* "merged", "applied-with-changes", "possibly-merged" */
const char *pgate_upstream_rank_to_string(PgateUpstreamRank rank);

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
 * The other direction: for each patch of @rec not matched yet, the
 * commits read before that may be it (a commit read before its patch was
 * stored: the same Message-ID, patch-id, or author and subject) decide
 * again, as a scan would now, with @rec among their candidates; what
 * changes is written to the SERIES/upstream of every series concerned.
 * A commit that looked at the patch already is not asked again.
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
	PgateUpstreamRank rank;  /* merged or applied with changes */
	gboolean changes;        /* applied with changes */
	gint64 at;               /* when it was found */
} PgateUpstreamMatch;

void pgate_upstream_match_free(PgateUpstreamMatch *m);

/**
 * pgate_upstream_series_read:
 * Returns: (transfer full) (element-type PgateUpstreamMatch): the matches
 *   of @rec's patches, in the series' order (a patch without one is left
 *   out, and so are "possibly merged" hints); %NULL on error.  A document
 *   written before ranks existed reads as it was meant: "subject" is
 *   applied with changes, the other rules merged.
 */
GPtrArray *pgate_upstream_series_read(PgateStoreTxn *txn,
				      const PgateSeriesRec *rec,
				      GError **error);

/**
 * pgate_upstream_explain:
 * Returns: (transfer full) (element-type utf8): what SERIES/upstream says
 *   of @rec, a line a fact, in the series' order: "1/3 merged as
 *   1a2b3c4d5e6f on master, by link: ...", "  not s0123456789ab v2
 *   <ID>: an older version in its chain", "2/3 possibly merged as
 *   9f8e7d6c5b4a on next (patch-id: ...): the commit went to ..."; empty
 *   when nothing matched; %NULL on error.
 */
GPtrArray *pgate_upstream_explain(PgateStoreTxn *txn, const PgateSeriesRec *rec,
				  GError **error);

/* The subject as the subject rule compares it: Re: and [...] prefixes
 * off, lower case, blanks collapsed, no final period.  (transfer full) */
char *pgate_upstream_subject_normalize(const char *subject);

/* The subject as the edited-subject rule compares it: normalised, then
 * without its subsystem prefixes ("watchdog: ", "dt-bindings: leds: "),
 * every character but letters and digits a blank, blanks collapsed.
 * (transfer full) */
char *pgate_upstream_subject_core(const char *subject);

/* The Message-ID a Link: or Message-Id: trailer value names, or %NULL:
 * "<ID>", or an archive URL (lore.kernel.org/LIST/ID, patch.msgid.link/ID,
 * one of @patterns (nullable) followed by ID), percent-decoded.
 * (transfer full) */
char *pgate_upstream_link_msgid(const char *value, char *const *patterns);

/* Told of each commit pgate_upstream_patch_ids() reads: its id and its
 * patch-id (40 hex each). */
typedef void (*PgateUpstreamPatchIdFunc)(gpointer data, const char *commit,
					 const char *patch_id);

/**
 * pgate_upstream_patch_ids:
 * @rev: a revision of @repo ("master", "HEAD~3", an id)
 * @max: at most this many commits (0: no bound)
 *
 * The patch-id merge detection computes for each commit reachable from
 * @rev, newest first, as `git log -p REV | git patch-id --stable` prints
 * them (git's diff defaults: the indent heuristic, renames; merges and
 * commits without a diff have none and are skipped).
 */
gboolean pgate_upstream_patch_ids(const char *repo, const char *rev, guint max,
				  PgateUpstreamPatchIdFunc fn, gpointer data,
				  GError **error);

G_END_DECLS
