/* upstream-private.h - what the files of upstream/ share (upstream.h).
 *
 *   explain.c  names, subjects, trailers; SERIES/upstream read and told
 *              (no libgit2: the lean binary links it)
 *   commit.c   a commit read with libgit2: author, subjects, trailers,
 *              patch-id (git's diff defaults), the sketch of its diff
 *   match.c    which stored patch a commit is: candidates, chains, ranks
 *   record.c   the store side: SERIES/upstream documents, the commits'
 *              records and sightings, a decision written down
 *   upstream.c [upstream], fetching and reading branches, the two
 *              directions (scan, series check)
 */
#pragma once

#include <jansson.h>

#include "common/json.h"
#include "upstream/upstream.h"

#define DAY (24 * 3600)
#define SIGHTINGS_MAX 16    /* commits kept under one key */
#define ALSO_MAX 8          /* other commits or branches kept with a match */
#define LINKS_MAX 8         /* Message-IDs a commit's trailers name */
#define BRANCHES_MAX 16     /* branches a commit is remembered on */
#define CANDS_MAX 64        /* candidate patches of one commit */
#define LOST_MAX 8          /* losers named with a match */
#define HINTS_MAX 4         /* "possibly merged" hints kept a patch */
#define SERIES_MAX 64       /* series a commit's record names */
#define CHAIN_MAX 64        /* versions followed in a chain */

/* One commit as matching reads it, and as its x record keeps it. */
typedef struct {
	char oid[41];
	char *email;        /* lowercased */
	gint64 when;        /* the author's date */
	char *subject;      /* pgate_upstream_subject_normalize() */
	char *core;         /* pgate_upstream_subject_core() */
	GPtrArray *links;   /* (element-type utf8): Message-IDs named */
	char *patch_id;     /* (nullable): none for a merge or empty diff */
	guint sketch_len;
	guint32 sketch[PGATE_DIFF_SKETCH_MAX];
} UCommit;

UCommit *pgate_upstream__commit_new(void);
void pgate_upstream__commit_free(UCommit *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(UCommit, pgate_upstream__commit_free)

/* The rule and rank names back (explain.c); unknown: link / merged. */
PgateUpstreamRule pgate_upstream__rule_from_string(const char *s);
PgateUpstreamRank pgate_upstream__rank_from_string(const char *s,
						   PgateUpstreamRule rule);

/* ---- commit.c (libgit2) ---- */

typedef struct git_repository git_repository;
typedef struct git_commit git_commit;

UCommit *pgate_upstream__commit_read(git_repository *repo, git_commit *c,
				     char *const *patterns);
gboolean pgate_upstream__git_fail(GError **error, int rc, const char *what);

/* ---- record.c: the store side ---- */

/* What one write transaction of matching keeps: the series documents it
 * changes, and what the decisions read (series, the authors' patches),
 * read once a transaction. */
typedef struct {
	PgateStoreTxn *txn;
	const PgateUpstreamConfig *cfg;
	GHashTable *docs;      /* sid -> json_t (owned) */
	GHashTable *dirty;     /* sids (the docs' keys) */
	GHashTable *series;    /* sid -> PgateSeriesRec (owned), or none */
	GHashTable *chains;    /* sid -> Chain (match.c) */
	GHashTable *names;     /* message number -> Name (match.c) */
	GHashTable *authors;   /* email -> Author: their patches by subject,
				* read once a transaction (match.c) */
	GHashTable *spans;     /* (nullable): email -> the first and last
				* author date of the transaction's commits */
	gint64 now;
	guint matched;         /* patches that got a match */
	guint lost;            /* patches that lost theirs */
} UCtx;

void pgate_upstream__ctx_init(UCtx *x, PgateStoreTxn *txn,
			      const PgateUpstreamConfig *cfg, gint64 now);
void pgate_upstream__ctx_clear(UCtx *x);
/* (transfer none): @sid's SERIES/upstream, loaded once (empty when none) */
json_t *pgate_upstream__doc_get(UCtx *x, const char *sid, GError **error);
/* Writes the changed documents; their ids into @changed (nullable). */
gboolean pgate_upstream__docs_write(UCtx *x, GHashTable *changed,
				    GError **error);
/* (transfer none): series @sid from the transaction's cache; %NULL when
 * there is none (or on error, with @error set). */
const PgateSeriesRec *pgate_upstream__series(UCtx *x, const char *sid,
					     GError **error);

char *pgate_upstream__key(char kind, const char *a, const char *b);
json_t *pgate_upstream__get(PgateStoreTxn *txn, const char *key,
			    GError **error);
gboolean pgate_upstream__put(PgateStoreTxn *txn, const char *key, json_t *v,
			     GError **error);

/* The commit @oid's x record as a commit (%NULL: a record of an older
 * version, which kept no commit). */
UCommit *pgate_upstream__commit_from_x(const char *oid, json_t *x);

/* Commit @c is on @repo @branch (forward scan): decided, written to the
 * documents, remembered under its keys. */
gboolean pgate_upstream__commit_seen(UCtx *x, const UCommit *c,
				     const char *repo, const char *branch,
				     GError **error);
/* Commit @oid left @repo @branch (a rewrite): it decides again on the
 * branches it is still on, or is forgotten. */
gboolean pgate_upstream__commit_left(UCtx *x, const char *oid,
				     const char *repo, const char *branch,
				     GError **error);
/* Commit @oid decides again, as it is known (reverse direction). */
gboolean pgate_upstream__commit_redecide(UCtx *x, const char *oid,
					 GError **error);

/* ---- match.c: the decision ---- */

typedef enum {
	FATE_NONE = 0,   /* a candidate that lost and says nothing */
	FATE_WIN,        /* the commit is this patch */
	FATE_CHAIN,      /* an older (or newer) version of the winner */
	FATE_HINT,       /* "possibly merged as COMMIT" */
} UFate;

/* One candidate patch of a commit, and what became of it. */
typedef struct UCand {
	PgateMessageRec *msg;          /* owned */
	const PgateSeriesRec *series;  /* the transaction's cache */
	const char *chain;             /* its chain's first version's id */
	guint pos;                     /* versions before it in the chain */
	guint32 number;                /* N of [N/M] */
	guint ev;                      /* evidence bits (match.c) */
	double similar;                /* of the changed lines; -1: unknown */
	PgateUpstreamRule rule;
	PgateUpstreamRank rank;
	char *evidence;                /* what holds */
	char *weak;                    /* (nullable): why not more */
	UFate fate;
	struct UCand *by;              /* (nullable): the winner it lost to */
	char *why;                     /* (nullable): why it lost */
	gboolean chosen;               /* its chain's choice */
	gboolean ignored;              /* looked at, and no candidate: an
					* edited subject over other lines */
} UCand;

/* The transaction will decide a commit of @email dated @when: its
 * author's patches are then read once for all of them. */
void pgate_upstream__ctx_span(UCtx *x, const char *email, gint64 when);

/* (transfer full) (element-type UCand): every candidate of @c, by
 * Message-ID, each with its fate (and the patches looked at and turned
 * down, ignored); %NULL on error. */
GPtrArray *pgate_upstream__decide(UCtx *x, const UCommit *c, GError **error);
