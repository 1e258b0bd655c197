/* ingest.h - reading list mail into the store.
 *
 * Three layers:
 *  - the mail model: pgate_mail_parse() turns one raw RFC 822 message into
 *    a PgateMail (a store record plus the decoded body and the diff);
 *  - sources: an mbox reader (mboxo/mboxrd) and a maildir reader that
 *    hand out one raw message at a time in bounded memory;
 *  - the ingest loop: pgate_ingest_path() and pgate_ingest_deliver() parse
 *    and store, in batches for files and in one fsync'd transaction for a
 *    single delivered message.
 *
 * Mail is hostile: every size is bounded by PgateIngestOptions, and a
 * message that cannot be parsed is stored as PGATE_MSG_KIND_REJECTED with a
 * reason, never dropped.
 */
#pragma once

#include <glib.h>

#include "common/pgate-common.h"
#include "store/store.h"

G_BEGIN_DECLS

#define PGATE_INGEST_ERROR (pgate_ingest_error_quark())
GQuark pgate_ingest_error_quark(void);

/*
 * Hooks for a later stage (threading) to update its derived state in the
 * same write transaction as the messages, without ingest knowing it.
 * Every function is optional.  A write transaction may be run again from
 * scratch (after the map grew), so: begin() is called at the start of
 * every attempt and must forget what the previous attempt recorded;
 * after_add() after each message stored (not for duplicates);
 * after_delete() after a public-inbox deletion, with the record the
 * message had; before_commit() once, after the last message.  The record
 * after_add() is given stays valid and unchanged until before_commit()
 * returns (or the next begin()), so a hook may keep a pointer to it
 * meanwhile (threading does).
 */
typedef gboolean (*PgateIngestTxnHook)(PgateStoreTxn *txn, gpointer payload,
				       GError **error);
typedef gboolean (*PgateIngestAfterAdd)(PgateStoreTxn *txn,
					const PgateMessageRec *rec,
					gpointer payload, GError **error);
typedef gboolean (*PgateIngestSkipped)(PgateStoreTxn *txn, const GError *why,
				       gpointer payload, GError **error);

/*
 * The messages come first: when a hook fails for a reason that trying
 * again will not clear (not pgate_error_is_transient(): a corrupt derived
 * record, say), and skipped() is set, the transaction is run again
 * without the other hooks, and skipped() is called in it, after the
 * messages, with what the hook said (@why); the owner of the derived
 * state marks it stale there.  A delivery then stores the message
 * instead of failing until someone repairs the derived state, and a bulk
 * import goes on.  A transient failure fails the write as before.
 */
typedef struct {
	PgateIngestTxnHook begin;
	PgateIngestAfterAdd after_add;
	PgateIngestAfterAdd after_delete;
	PgateIngestTxnHook before_commit;
	PgateIngestSkipped skipped;
	gpointer payload;
} PgateIngestHooks;

/* Told of a maildir entry that pgate_ingest_path() skips; @why says what
 * it is. */
typedef void (*PgateIngestSkippedEntryFunc)(const char *path,
					    const GError *why,
					    gpointer payload);

typedef struct {
	gsize max_message_size;   /* bytes; larger mail is quarantined. 0: 64 MiB */
	guint max_references;     /* References kept (first + newest). 0: 128 */
	guint max_recipients;     /* To + Cc addresses kept. 0: 256 */
	guint max_trailers;       /* trailers kept per message. 0: 256 */
	guint batch_messages;     /* messages per write transaction. 0: 2000 */
	gsize batch_bytes;        /* bytes per write transaction. 0: 64 MiB */
	const PgateIngestHooks *hooks; /* (nullable) (transfer none) */
	/* (nullable): told of the maildir entries skipped; else a g_warning()
	 * each */
	PgateIngestSkippedEntryFunc skipped_entry;
	gpointer skipped_entry_payload;
} PgateIngestOptions;

#define PGATE_INGEST_OPTIONS_INIT { 0, 0, 0, 0, 0, 0, NULL, NULL, NULL }

/* Fills in the defaults of every field left 0. */
void pgate_ingest_options_resolve(PgateIngestOptions *opts);

/* ---- the mail model -------------------------------------------------- */

typedef struct {
	PgateMessageRec *rec;   /* the fields the store keeps */
	char *body;             /* decoded text without the diff (UTF-8) */
	char *diff;             /* (nullable): the patch part, as sent */
} PgateMail;

void pgate_ingest_init(void);   /* g_mime_init(); safe to call twice */

/**
 * pgate_mail_parse:
 * @raw: one message, without an mbox "From " line
 * @len: its length
 *
 * Never fails on bad mail: what cannot be parsed comes back as a record of
 * kind PGATE_MSG_KIND_REJECTED with rec->reject_reason set and a
 * deterministic synthetic Message-ID.  rec->content_hash is always set.
 *
 * Returns: (transfer full): the parsed mail.
 */
PgateMail *pgate_mail_parse(const char *raw, gsize len,
			    const PgateIngestOptions *opts);
void pgate_mail_free(PgateMail *mail);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateMail, pgate_mail_free)

/**
 * pgate_patch_id_stable:
 * @diff: a diff as sent in mail (may start with text before "diff ")
 *
 * Returns: (transfer full) (nullable): the 40-hex `git patch-id --stable`
 *   of @diff, or %NULL when it holds no diff.
 */
char *pgate_patch_id_stable(const char *diff, gsize len);

/*
 * What a trust decision reads, strictly, from the raw message rather than
 * from GMime's lenient reading (address.c; docs/pipeline.md, trust).
 */

/**
 * pgate_mail_header_values:
 * @raw: a raw message (its header block is read, at most 1 MiB of it)
 * @name: a field name, any case ("From")
 * @max_values: keep the first this many fields of that name
 * @max_len: the most bytes one kept value may have
 *
 * Returns: (transfer full) (element-type utf8): the raw values of the
 *   fields named @name, top to bottom, unfolded (line ends removed, the
 *   blanks that folded kept); %NULL with PGATE_ERROR_TOO_LARGE when a kept
 *   value is over @max_len or the block over 1 MiB, PGATE_ERROR_INVALID
 *   when a kept value holds a NUL byte.
 */
GPtrArray *pgate_mail_header_values(const char *raw, gsize len,
				    const char *name, guint max_values,
				    gsize max_len, GError **error);

/**
 * pgate_mail_address_strict:
 * @value: a From field's raw value, unfolded
 *
 * Reads exactly one mailbox: `addr-spec`, or `[name] <addr-spec>`, with
 * comments and blanks only around it; the addr-spec is a dot-atom local
 * part, one '@' and a domain of letters, digits and '-' labels.  Groups,
 * lists, quoted local parts, domain literals, anything after the '>',
 * and '@', '<' or '>' in a name or comment are refused.
 *
 * Returns: (transfer full) (nullable): the addr-spec, its domain
 *   lowercased; %NULL with PGATE_ERROR_INVALID saying what is wrong.
 */
char *pgate_mail_address_strict(const char *value, GError **error);

/**
 * pgate_mail_relayed_sender:
 * @raw: the raw message
 * @from_addr: the address of its one From field (pgate_mail_address_strict())
 * @out_relay: (out) (optional) (transfer full) (nullable): "B4 Relay" when
 *   a relay sent it for its user
 *
 * Whom the message speaks for (relay.c): @from_addr for mail sent
 * directly; for B4 Relay mail (From devnull+LOCAL.DOMAIN@kernel.org) the
 * relay's confirmed user, its X-Original-From address, which must be
 * LOCAL@DOMAIN (and X-Endpoint-Received's "for ADDR" when present).
 *
 * Returns: (transfer full) (nullable): that address; %NULL with
 *   PGATE_ERROR_INVALID for B4 Relay mail whose fields disagree, and for
 *   mail whose From is the list's own address (List-Post, List-Id: a list
 *   that rewrote From, whose original sender nobody vouches for).
 */
char *pgate_mail_relayed_sender(const char *raw, gsize len,
				const char *from_addr, char **out_relay,
				GError **error);

/**
 * pgate_mail_auth_results_pass:
 * @value: an Authentication-Results field's raw value (RFC 8601), unfolded
 * @authserv_id: the local MTA's authserv-id
 * @domain: the From address's domain
 *
 * Returns: %TRUE when the field is @authserv_id's and says dkim=pass with
 *   header.d=@domain, or dmarc=pass with header.from=@domain (any case);
 *   otherwise %FALSE with PGATE_ERROR_INVALID saying why.
 */
gboolean pgate_mail_auth_results_pass(const char *value,
				      const char *authserv_id,
				      const char *domain, GError **error);

/**
 * pgate_mail_body_own_text:
 * @body: a reply's decoded text (UTF-8)
 * @max_lines: read at most this many lines
 *
 * The lines its sender wrote, trimmed: those before the first sign of a
 * quoted message, less the lines quoted with '>' (or the full-width
 * '＞').  The signs, in English, German, French, Spanish, Italian,
 * Portuguese, Dutch, Chinese and Japanese (and a few more) as the common
 * clients write them (address.c has the tables and their sources;
 * docs/pipeline.md, "Which replies count"): an attribution (a line ending
 * in ':' with "wrote", "schrieb", "a écrit", "escribió", "ha scritto",
 * "escreveu", "schreef", "写道" ... in it, or with an e-mail address in
 * it, or a Japanese date "2024年12月2日"; also from an "On", "Am", "Le"
 * ... line when one of the next two is such an attribution), a
 * separator ("-----Original Message-----", "-----Ursprüngliche
 * Nachricht-----", "---------- Forwarded message ---------", any
 * spacing), Apple Mail's "Begin forwarded message:", a line of 10 or
 * more underscores, a quoted header block (a From line, "From:",
 * "Von:", "De :", "发件人:", "差出人:" ..., with a Sent or Date line,
 * "Sent:", "Gesendet:", "Envoyé :", "发送时间:", "送信日時:" ..., within
 * three lines, either first).  No-break spaces and the full-width colon
 * count as their ASCII forms.  A line wrongly taken for a sign only
 * drops what follows it (fails closed).
 *
 * Returns: (transfer full): those lines, each ended by '\n'.
 */
char *pgate_mail_body_own_text(const char *body, guint max_lines);

/**
 * pgate_mail_reply_own_text:
 * @raw: one raw reply, as pgate_mail_parse() takes it
 * @len: its length
 * @opts: (nullable): its max_message_size bounds @len (0 or %NULL: the
 *   default)
 * @max_lines: read at most this many lines of its text
 *
 * What a trust decision reads a command in (`patchgate: approve`,
 * `Recheck-request:`): the text the replier wrote.  That is one MIME part
 * only (parse.c, "a reply's own text"): the first text/plain or
 * text/html part that is no attachment (a Content-Disposition other than
 * inline, or a file name) and not inside a message/rfc822 part, of a
 * multipart/alternative its text/plain alternative; never a later part,
 * an attachment or an attached message.  An HTML part is rendered to
 * text first (tags removed, references decoded, <br> and block elements
 * as line breaks, <blockquote> and the quote containers of Gmail,
 * Thunderbird, Outlook and Yahoo dropped).  Of that text, the signature
 * ("-- ") and what follows it go, and pgate_mail_body_own_text() keeps
 * the lines above the first quote.
 *
 * Returns: (transfer full) (nullable): the own text, lines each ended by
 *   '\n', "" when the reply has no such part; %NULL with
 *   PGATE_ERROR_TOO_LARGE when @len is over the bound, PGATE_ERROR_INVALID
 *   when the bytes are no mail (as pgate_mail_parse() rejects them) or
 *   GMime cannot read them.
 */
char *pgate_mail_reply_own_text(const char *raw, gsize len,
				const PgateIngestOptions *opts,
				guint max_lines, GError **error);

/* ---- sources --------------------------------------------------------- */

typedef enum {
	PGATE_MBOX_MBOXRD = 0,  /* unescape ">+From " by one '>' (default) */
	PGATE_MBOX_MBOXO,       /* unescape ">From " only */
} PgateMboxFormat;

typedef struct PgateMboxReader PgateMboxReader;

/**
 * pgate_mbox_reader_new:
 * @fd: an open mbox (not closed by the reader)
 *
 * A message starts at a line "From " that looks like an mbox separator
 * (a sender and a time of day, as git mailsplit checks).
 */
PgateMboxReader *pgate_mbox_reader_new(int fd, PgateMboxFormat format,
				       gsize max_message_size);
void pgate_mbox_reader_free(PgateMboxReader *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PgateMboxReader, pgate_mbox_reader_free)

/**
 * pgate_mbox_reader_next:
 * @out: (out) (transfer full): the next message, "From " line removed and
 *   ">From " unescaped; when the message is over max_message_size, the
 *   first max_message_size bytes and *@out_truncated set
 * @out_truncated: (out): see above
 *
 * Returns: %FALSE at the end (*@out %NULL) or on a read error.
 */
gboolean pgate_mbox_reader_next(PgateMboxReader *r, GBytes **out,
				gboolean *out_truncated, GError **error);

/* Bytes consumed so far, for progress. */
guint64 pgate_mbox_reader_offset(PgateMboxReader *r);

/* ---- ingest ---------------------------------------------------------- */

typedef struct {
	guint64 read;        /* messages read from the source */
	guint64 bytes;       /* their size */
	guint64 stored;      /* new messages stored */
	guint64 duplicates;  /* same Message-ID and content as one stored */
	guint64 conflicts;   /* same Message-ID, other content: stored, flagged */
	guint64 rejected;    /* stored as rejected */
	guint64 quarantined; /* over the size bound: kept as a file */
	guint64 deleted;     /* removed by a public-inbox "d" commit */
	guint64 skipped;     /* maildir entries not read: no regular file
			      * (a FIFO, a directory, a symlink) or one
			      * that cannot be opened; each with a warning */
	guint64 by_kind[PGATE_MSG_KIND_REJECTED + 1];
	double writer_cpu;   /* CPU seconds of the writer thread: the write
			      * transactions, the hooks' work (threading's)
			      * included; parsing runs on the other threads */
} PgateIngestStats;

typedef void (*PgateIngestProgressFunc)(const PgateIngestStats *stats,
					guint64 bytes_done, guint64 bytes_total,
					gpointer payload);

/**
 * pgate_ingest_path:
 * @state_dir: the state directory (its quarantine/ keeps oversized mail)
 * @path: an mbox file or a maildir (a directory with cur/ and new/)
 * @stats: (inout): counts are added here
 * @progress: (nullable): called now and then
 *
 * Reads every message of @path and stores it, many per transaction.
 * Maildirs are only read, never changed.  An entry of a maildir is read
 * only when it is a regular file: a symlink is not followed, a FIFO is
 * not waited on, and such entries (and those that cannot be opened) are
 * skipped, counted in @stats->skipped and told to @opts->skipped_entry
 * (else each is a g_warning()).  A @path that is not a directory is read
 * as an mbox, whatever it is (a FIFO blocks until written to): it is the
 * caller's choice.
 */
gboolean pgate_ingest_path(PgateStore *store, const char *state_dir,
			   const char *path, PgateMboxFormat format,
			   const PgateIngestOptions *opts,
			   PgateIngestStats *stats,
			   PgateIngestProgressFunc progress, gpointer payload,
			   GError **error);

/**
 * pgate_ingest_deliver:
 * @fd: one message (an mbox "From " line first is allowed)
 * @out_result: (out): added, duplicate or added-with-conflict
 * @out_rec: (out) (transfer full) (optional): the stored record
 *
 * Stores one message in one fsync'd transaction.  Returns %TRUE only when
 * the message is durably stored (or was already); every failure is
 * reported so that the caller can make the MTA retry.  A message over
 * max_message_size is kept whole in @state_dir's quarantine/, one file
 * per stored record (a duplicate finds it there), and the record's
 * raw_ref names that file relative to @state_dir.
 */
gboolean pgate_ingest_deliver(PgateStore *store, const char *state_dir, int fd,
			      const PgateIngestOptions *opts,
			      PgateStoreAddResult *out_result,
			      PgateMessageRec **out_rec, GError **error);

/**
 * pgate_ingest_maildir_file:
 * @path: a file in a maildir's new/ or cur/
 *
 * pgate_ingest_deliver() of one maildir file, opened as
 * pgate_ingest_path() opens them, without blocking: anything but a regular
 * file (a symlink, not followed; a FIFO, a directory) fails with
 * PGATE_ERROR_INVALID and is not read; an entry that is gone (moved from
 * new/ to cur/ meanwhile) fails with PGATE_ERROR_NOT_FOUND.
 */
gboolean pgate_ingest_maildir_file(PgateStore *store, const char *state_dir,
				   const char *path,
				   const PgateIngestOptions *opts,
				   PgateStoreAddResult *out_result,
				   PgateMessageRec **out_rec, GError **error);

/* ---- public-inbox archives ------------------------------------------ */

typedef struct {
	gint64 since;     /* skip commits made (imported) before; 0: none */
	guint64 limit;    /* stop after this many messages; 0: no limit */
} PgateReplayOptions;

#define PGATE_REPLAY_OPTIONS_INIT { 0, 0 }

typedef struct {
	guint64 epochs;      /* repositories read */
	guint64 commits;     /* new commits walked */
	guint64 skipped;     /* commits before --since */
	guint64 rewritten;   /* epochs whose history was rewritten */
	gboolean limited;    /* stopped by the limit; a rerun continues */
} PgateReplayStats;

/**
 * pgate_ingest_replay:
 * @path: a v2 inbox (PATH/git/N.git), one epoch repository (a bare mirror
 *   of https://lore.kernel.org/LIST/N), or a v1 inbox repository
 *
 * Reads every commit not read before, oldest first, with libgit2: each
 * "m" blob is a message, stored by reference (PGATE_RAW_GIT_BLOB); each
 * "d" blob removes the message it holds.  The last commit read of each
 * epoch is kept in the store's meta database, in the same transaction as
 * the messages, so a replay resumes exactly where the last one stopped.
 * When that commit is no longer in the history (rewritten by
 * public-inbox-purge or -edit), the stored messages of the epoch that the
 * new history no longer holds are removed, and reading restarts from the
 * merge base, adding what is not stored yet.
 * Progress counts commits.
 */
gboolean pgate_ingest_replay(PgateStore *store, const char *path,
			     const PgateIngestOptions *opts,
			     const PgateReplayOptions *ropts,
			     PgateIngestStats *stats, PgateReplayStats *rstats,
			     PgateIngestProgressFunc progress,
			     gpointer payload, GError **error);

/**
 * pgate_ingest_fetch:
 * @path: an inbox as pgate_ingest_replay() takes it
 *
 * `git fetch origin` (every branch, forced) in each epoch repository of
 * @path that is a mirror (has remote.origin.url), with libgit2; the others
 * are left alone.  Every epoch is tried; the first failure is returned
 * (PGATE_ERROR_IO: the network may be back later).
 */
gboolean pgate_ingest_fetch(const char *path, GError **error);

/**
 * pgate_ingest_load_raw:
 * @state_dir: (nullable): the state directory, which a quarantined
 *   message's raw_ref is relative to; %NULL only where no such message
 *   can come (a relative raw_ref is then read from the working directory)
 * @max: read at most this many bytes of a message kept in a file
 *
 * Returns: (transfer full) (nullable): the raw bytes of a stored message,
 *   wherever its record says they are (store, quarantine file, git blob).
 *   A quarantine file named by an older record (an absolute path, or one
 *   relative to the working directory of its delivery) is read there
 *   when it is there, else from @state_dir's quarantine/.
 */
GBytes *pgate_ingest_load_raw(PgateStoreTxn *txn, const char *state_dir,
			      const PgateMessageRec *rec, gsize max,
			      GError **error);

G_END_DECLS
