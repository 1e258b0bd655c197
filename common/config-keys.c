/* config-keys.c - the one table of the configuration file's keys.
 *
 * Every key some module reads is a row here: its group, its name, what
 * its value is, its default (as a value, and as its documentation shows
 * it) and the file that documents it.  The modules still read their own
 * groups (common/config.c's getters); the table is what lets the CLI
 * refuse a key nothing reads (a typo used to be silently ignored), say
 * which name was meant, and what holds docs/ and contrib/ to the code
 * (tests/cli/t0106-config-docs.sh, through `patchgate config keys
 * --json`; it also checks that every key a reader names in a getter's
 * call is a row, and every row is named by a reader).  A new key is a new
 * row, a doc row and a line of contrib/patchgate.conf.example.
 */
#include "common/pgate-common.h"

#include <string.h>

#define D_CONFIG "docs/config.md"
#define D_PIPELINE "docs/pipeline.md"
#define D_LOCAL "docs/ci-local.md"
#define D_JENKINS "docs/ci-jenkins.md"
#define D_BUILDBOT "docs/ci-buildbot.md"
#define D_PATCHWORK "docs/report-patchwork.md"
#define D_EMAIL "docs/report-email.md"

#define T(x) PGATE_CONFIG_TYPE_##x
#define REQ PGATE_CONFIG_KEY_REQUIRED
#define PAT PGATE_CONFIG_KEY_PATTERN

/* group, key, type, flags, value, shown, choices, doc */
static const PgateConfigKey keys[] = {
	/* cli/config.c */
	{ "store", "map_size", T(INT), 0, "268435456", "268435456 (256 MiB)",
	  NULL, D_CONFIG },
	{ "store", "max_map_size", T(INT), 0, "1099511627776",
	  "1099511627776 (1 TiB)", NULL, D_CONFIG },
	{ "store", "lock_timeout_ms", T(INT), 0, "30000", NULL, NULL,
	  D_CONFIG },
	{ "store", "zdict_train_after", T(INT), 0, "2000", NULL, NULL,
	  D_CONFIG },
	{ "ingest", "max_message_size", T(INT), 0, "67108864",
	  "67108864 (64 MiB)", NULL, D_CONFIG },
	{ "ingest", "max_references", T(INT), 0, "128", NULL, NULL, D_CONFIG },
	{ "ingest", "max_recipients", T(INT), 0, "256", NULL, NULL, D_CONFIG },
	{ "ingest", "max_trailers", T(INT), 0, "256", NULL, NULL, D_CONFIG },
	{ "ingest", "batch_messages", T(INT), 0, "2000", NULL, NULL, D_CONFIG },
	{ "ingest", "batch_bytes", T(INT), 0, "33554432", "33554432 (32 MiB)",
	  NULL, D_CONFIG },
	/* cli/cmd-daemon.c */
	{ "daemon", "maildirs", T(LIST), 0, NULL, NULL, NULL, D_CONFIG },
	{ "daemon", "inboxes", T(LIST), 0, NULL, NULL, NULL, D_CONFIG },
	{ "daemon", "fetch", T(BOOL), 0, "false", NULL, NULL, D_CONFIG },
	{ "daemon", "interval", T(INT), 0, "60", NULL, NULL, D_CONFIG },
	{ "daemon", "rethread", T(BOOL), 0, "true", NULL, NULL, D_CONFIG },
	/* pipeline/pipeline.c */
	{ "pipeline", "wait_complete", T(INT), 0, "3600", NULL, NULL,
	  D_PIPELINE },
	{ "pipeline", "recheck_limit", T(INT), 0, "3", NULL, NULL,
	  D_PIPELINE },
	{ "pipeline", "max_patches", T(INT), 0, "500", NULL, NULL,
	  D_PIPELINE },
	{ "trust", "trusted", T(LIST), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "trust", "everyone", T(BOOL), 0, "false", NULL, NULL, D_PIPELINE },
	{ "trust", "committers", T(BOOL), 0, "false", NULL, NULL, D_PIPELINE },
	{ "trust", "approvers", T(LIST), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "trust", "approve_keyword", T(STRING), 0, "patchgate: approve", NULL,
	  NULL, D_PIPELINE },
	{ "trust", "reject_keyword", T(STRING), 0, "patchgate: reject", NULL,
	  NULL, D_PIPELINE },
	{ "trust", "require_authentication", T(STRING), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	/* pipeline/stage-apply.c (the limits: apply/apply.h) */
	{ "apply", "repo", T(PATH), REQ, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "branches", T(LIST), 0, "master", NULL, NULL, D_PIPELINE },
	{ "apply", "all_branches", T(BOOL), 0, "false", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "push_url", T(URL), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "ref_format", T(STRING), 0,
	  "refs/heads/patchgate/{series}/v{version}/{target}", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "keep_days", T(INT), 0, "30", NULL, NULL, D_PIPELINE },
	{ "apply", "committer_name", T(STRING), 0, "patchgate", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "committer_email", T(STRING), 0, "patchgate@localhost",
	  NULL, NULL, D_PIPELINE },
	{ "apply", "committer_date", T(STRING), 0, "now", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "allow_symlinks", T(BOOL), 0, "false", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "allow_submodules", T(BOOL), 0, "false", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "max_patch_bytes", T(INT), 0, "8388608", "8388608 (8 MiB)",
	  NULL, D_PIPELINE },
	{ "apply", "max_files", T(INT), 0, "1000", NULL, NULL, D_PIPELINE },
	{ "apply", "max_binary_bytes", T(INT), 0, "16777216",
	  "16777216 (16 MiB)", NULL, D_PIPELINE },
	{ "apply", "already_applied_depth", T(INT), 0, "1000", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "push_user", T(STRING), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "push_password_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	{ "apply", "push_password_env", T(ENV), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	{ "apply", "push_ssh_key", T(PATH), 0, NULL, NULL, NULL, D_PIPELINE },
	/* pipeline/stage-apply.c, pipeline/series-mbox.c: b4 am's trailers
	 * (docs/ecosystem.md) */
	{ "apply", "add_trailers", T(BOOL), 0, "false", NULL, NULL,
	  D_PIPELINE },
	{ "apply", "link_pattern", T(STRING), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	{ "apply", "signoff", T(STRING), 0, NULL, NULL, NULL, D_PIPELINE },
	/* pipeline/route.c: routing within a project (docs/pipeline.md) */
	{ "apply", "tags", T(LIST), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "tag_default", T(STRING), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	{ "apply", "paths", T(LIST), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "maintainers", T(STRING), 0, NULL, NULL, NULL, D_PIPELINE },
	{ "apply", "maintainers_sections", T(LIST), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	/* pipeline/route.c: [project NAME] (docs/config.md) */
	{ "project NAME", "lists", T(LIST), 0, NULL, NULL, NULL, D_CONFIG },
	{ "project NAME", "addresses", T(LIST), 0, NULL, NULL, NULL,
	  D_CONFIG },
	/* upstream/upstream.c */
	{ "upstream", "repos", T(LIST), REQ, NULL, NULL, NULL, D_PIPELINE },
	{ "upstream", "branches", T(LIST), 0, "master", NULL, NULL,
	  D_PIPELINE },
	{ "upstream", "fetch", T(BOOL), 0, "true", NULL, NULL, D_PIPELINE },
	{ "upstream", "remote", T(STRING), 0, "origin", NULL, NULL,
	  D_PIPELINE },
	{ "upstream", "window_days", T(INT), 0, "180", NULL, NULL,
	  D_PIPELINE },
	{ "upstream", "subject_days", T(INT), 0, "14", NULL, NULL,
	  D_PIPELINE },
	{ "upstream", "possible_days", T(INT), 0, "365", NULL, NULL,
	  D_PIPELINE },
	{ "upstream", "link_patterns", T(LIST), 0, NULL, NULL, NULL,
	  D_PIPELINE },
	/* pipeline/stage-ci.c */
	{ "ci", "backend", T(CHOICE), 0, "local", NULL, "local|jenkins|buildbot",
	  D_PIPELINE },
	{ "ci", "job", T(STRING), 0, "build", NULL, NULL, D_PIPELINE },
	{ "ci", "error_retries", T(INT), 0, "2", NULL, NULL, D_PIPELINE },
	/* ci/local/config.c */
	{ "ci.local", "commands", T(LIST), 0, NULL,
	  "(required, or step.NAME)", NULL, D_LOCAL },
	{ "ci.local", "step.NAME", T(LIST), PAT, NULL, NULL, NULL, D_LOCAL },
	{ "ci.local", "mode", T(CHOICE), 0, "series", NULL, "series|patch",
	  D_LOCAL },
	{ "ci.local", "timeout", T(INT), 0, "1800", NULL, NULL, D_LOCAL },
	{ "ci.local", "max_output", T(SIZE), 0, "1M", NULL, NULL, D_LOCAL },
	{ "ci.local", "jobs", T(INT), 0, "1", NULL, NULL, D_LOCAL },
	{ "ci.local", "memory", T(SIZE), 0, "4G", NULL, NULL, D_LOCAL },
	{ "ci.local", "pids", T(INT), 0, "512", NULL, NULL, D_LOCAL },
	{ "ci.local", "cpu", T(INT), 0, "3600", NULL, NULL, D_LOCAL },
	{ "ci.local", "nofile", T(INT), 0, "1024", NULL, NULL, D_LOCAL },
	{ "ci.local", "fsize", T(SIZE), 0, "4G", NULL, NULL, D_LOCAL },
	{ "ci.local", "disk", T(SIZE), 0, "8G", NULL, NULL, D_LOCAL },
	{ "ci.local", "user", T(STRING), 0, "nobody", NULL, NULL, D_LOCAL },
	{ "ci.local", "sandbox", T(BOOL), 0, "on", NULL, NULL, D_LOCAL },
	{ "ci.local", "bwrap", T(PATH), 0, "bwrap", NULL, NULL, D_LOCAL },
	{ "ci.local", "ro_binds", T(LIST), 0, NULL, NULL, NULL, D_LOCAL },
	{ "ci.local", "cgroup", T(CHOICE), 0, "auto", NULL, "auto|off",
	  D_LOCAL },
	{ "ci.local", "work_root", T(PATH), 0, NULL, "$TMPDIR or /tmp", NULL,
	  D_LOCAL },
	{ "ci.local", "differential", T(BOOL), 0, "off", NULL, NULL, D_LOCAL },
	{ "ci.local", "nipa", T(BOOL), 0, "off", NULL, NULL, D_LOCAL },
	{ "ci.local", "warning_regex", T(STRING), 0, NULL, NULL, NULL,
	  D_LOCAL },
	{ "ci.local", "log_url", T(STRING), 0, NULL, NULL, NULL, D_LOCAL },
	/* ci/jenkins/config.c (one of token_file, token_env, password_file,
	 * password_env is required) */
	{ "ci.jenkins", "url", T(URL), REQ, NULL, NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "public_url", T(URL), 0, NULL, "url", NULL,
	  D_JENKINS },
	{ "ci.jenkins", "job", T(STRING), REQ, NULL, NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "user", T(STRING), REQ, NULL, NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "token_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "token_env", T(ENV), 0, NULL, NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "password_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "password_env", T(ENV), 0, NULL, NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "request_timeout", T(INT), 0, "30", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "retries", T(INT), 0, "2", NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "retry_backoff_ms", T(INT), 0, "500", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "max_connections", T(INT), 0, "8", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "queue_timeout", T(INT), 0, "86400", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "build_timeout", T(INT), 0, "21600", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "delay", T(INT), 0, NULL, "(the job's)", NULL,
	  D_JENKINS },
	{ "ci.jenkins", "ca_file", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_JENKINS },
	{ "ci.jenkins", "ca_path", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_JENKINS },
	{ "ci.jenkins", "param_repo_url", T(STRING), 0, "PATCHGATE_REPO_URL",
	  NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "param_ref", T(STRING), 0, "PATCHGATE_REF", NULL, NULL,
	  D_JENKINS },
	{ "ci.jenkins", "param_commit", T(STRING), 0, "PATCHGATE_COMMIT", NULL,
	  NULL, D_JENKINS },
	{ "ci.jenkins", "param_base_commit", T(STRING), 0,
	  "PATCHGATE_BASE_COMMIT", NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "param_series", T(STRING), 0, "PATCHGATE_SERIES", NULL,
	  NULL, D_JENKINS },
	{ "ci.jenkins", "param_version", T(STRING), 0, "PATCHGATE_VERSION",
	  NULL, NULL, D_JENKINS },
	{ "ci.jenkins", "param_branch", T(STRING), 0, "PATCHGATE_BRANCH", NULL,
	  NULL, D_JENKINS },
	{ "ci.jenkins", "param_msgid", T(STRING), 0, "PATCHGATE_MSGID", NULL,
	  NULL, D_JENKINS },
	{ "ci.jenkins", "param_trigger", T(STRING), 0, "PATCHGATE_TRIGGER",
	  NULL, NULL, D_JENKINS },
	/* ci/buildbot/config.c (password_file or password_env with user) */
	{ "ci.buildbot", "url", T(URL), REQ, NULL, NULL, NULL, D_BUILDBOT },
	{ "ci.buildbot", "public_url", T(URL), 0, NULL, "url", NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "scheduler", T(STRING), REQ, NULL, NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "builder", T(STRING), REQ, NULL, NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "property_prefix", T(STRING), 0, "patchgate_", NULL,
	  NULL, D_BUILDBOT },
	{ "ci.buildbot", "user", T(STRING), 0, NULL, "(no login)", NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "password_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "password_env", T(ENV), 0, NULL, NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "request_timeout", T(INT), 0, "30", NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "retries", T(INT), 0, "2", NULL, NULL, D_BUILDBOT },
	{ "ci.buildbot", "retry_backoff_ms", T(INT), 0, "500", NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "queue_timeout", T(INT), 0, "86400", NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "build_timeout", T(INT), 0, "21600", NULL, NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "ca_file", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_BUILDBOT },
	{ "ci.buildbot", "ca_path", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_BUILDBOT },
	/* pipeline/site-data.c: the static site (docs/report-site.md) */
	{ "report", "html_dir", T(PATH), 0, NULL, NULL, NULL, D_CONFIG },
	{ "report", "archive_url", T(STRING), 0, NULL,
	  "(the list's, when known)", NULL, D_CONFIG },
	{ "report", "public_url", T(URL), 0, NULL, NULL, NULL, D_CONFIG },
	{ "report", "page_size", T(INT), 0, "100", NULL, NULL, D_CONFIG },
	/* report/patchwork/patchwork.c */
	{ "patchwork", "url", T(URL), REQ, NULL, NULL, NULL, D_PATCHWORK },
	{ "patchwork", "project", T(STRING), REQ, NULL, NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "api_version", T(STRING), 0, "1.3", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "token_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "token_env", T(ENV), 0, NULL, NULL, NULL, D_PATCHWORK },
	{ "patchwork", "token", T(REFUSED), 0, NULL, NULL, NULL, D_PATCHWORK },
	{ "patchwork", "user", T(STRING), 0, NULL, NULL, NULL, D_PATCHWORK },
	/* (read by pipeline/pipeline.c) */
	{ "patchwork", "context_prefix", T(STRING), 0, NULL, NULL, NULL,
	  D_PATCHWORK },
	/* (read by pipeline/pw-state.c) */
	{ "patchwork", "set_state", T(BOOL), 0, "false", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "timeout", T(INT), 0, "30", NULL, NULL, D_PATCHWORK },
	{ "patchwork", "connect_timeout", T(INT), 0, "10", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "ca_file", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_PATCHWORK },
	{ "patchwork", "per_page", T(INT), 0, "100", NULL, NULL, D_PATCHWORK },
	{ "patchwork", "max_description", T(INT), 0, "1000", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "lookup_retry_min", T(INT), 0, "60", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "lookup_retry_max", T(INT), 0, "3600", NULL, NULL,
	  D_PATCHWORK },
	{ "patchwork", "lookup_give_up", T(INT), 0, "172800",
	  "172800 (2 days)", NULL, D_PATCHWORK },
	/* report/email/config.c (exactly one of smtp_url and sendmail is
	 * required when enabled) */
	{ "email", "enabled", T(BOOL), 0, "false", NULL, NULL, D_EMAIL },
	{ "email", "to", T(CHOICE), 0, "submitter-optin", NULL,
	  "submitter-optin|everyone|author|author+list|maintainers",
	  D_EMAIL },
	{ "email", "maintainers", T(LIST), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "digest", T(BOOL), 0, "false", NULL, NULL, D_EMAIL },
	{ "email", "max_per_day", T(INT), 0, "0", NULL, NULL, D_EMAIL },
	{ "email", "optin", T(LIST), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "when", T(CHOICE), 0, "failure", NULL,
	  "failure|always|failures|all", D_EMAIL },
	{ "email", "cc_list", T(BOOL), 0, "false", NULL, NULL, D_EMAIL },
	{ "email", "from_address", T(STRING), REQ, NULL, NULL, NULL, D_EMAIL },
	{ "email", "from_name", T(STRING), 0, "patchgate", NULL, NULL,
	  D_EMAIL },
	{ "email", "envelope_from", T(STRING), 0, NULL, "from_address", NULL,
	  D_EMAIL },
	{ "email", "contact", T(STRING), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "smtp_url", T(URL), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "starttls", T(CHOICE), 0, "required", NULL,
	  "required|optional|no", D_EMAIL },
	{ "email", "ca_file", T(PATH), 0, NULL, "(the system's)", NULL,
	  D_EMAIL },
	{ "email", "user", T(STRING), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "password_file", T(SECRET_FILE), 0, NULL, NULL, NULL,
	  D_EMAIL },
	{ "email", "password_env", T(ENV), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "password", T(REFUSED), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "sendmail", T(PATH), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "connect_timeout", T(INT), 0, "30", NULL, NULL, D_EMAIL },
	{ "email", "timeout", T(INT), 0, "120", NULL, NULL, D_EMAIL },
	{ "email", "rate_max", T(INT), 0, "10", NULL, NULL, D_EMAIL },
	{ "email", "rate_period", T(DURATION), 0, "86400", NULL, NULL,
	  D_EMAIL },
	{ "email", "log_lines", T(INT), 0, "40", NULL, NULL, D_EMAIL },
	{ "email", "log_bytes", T(INT), 0, "4096", NULL, NULL, D_EMAIL },
	{ "email", "format", T(CHOICE), 0, "default", NULL,
	  "default|dpdk|0day", D_EMAIL },
	{ "email", "report_to", T(STRING), 0, NULL, NULL, NULL, D_EMAIL },
	{ "email", "dpdk_label", T(STRING), 0, "patchgate", NULL, NULL,
	  D_EMAIL },
};

#undef T
#undef REQ
#undef PAT

const PgateConfigKey *
pgate_config_keys(gsize *n_out)
{
	*n_out = G_N_ELEMENTS(keys);
	return keys;
}

const char *
pgate_config_type_to_string(PgateConfigType type)
{
	switch (type) {
	case PGATE_CONFIG_TYPE_STRING: return "string";
	case PGATE_CONFIG_TYPE_BOOL: return "bool";
	case PGATE_CONFIG_TYPE_INT: return "int";
	case PGATE_CONFIG_TYPE_SIZE: return "size";
	case PGATE_CONFIG_TYPE_DURATION: return "duration";
	case PGATE_CONFIG_TYPE_LIST: return "list";
	case PGATE_CONFIG_TYPE_CHOICE: return "choice";
	case PGATE_CONFIG_TYPE_PATH: return "path";
	case PGATE_CONFIG_TYPE_URL: return "url";
	case PGATE_CONFIG_TYPE_SECRET_FILE: return "secret-file";
	case PGATE_CONFIG_TYPE_ENV: return "env";
	case PGATE_CONFIG_TYPE_REFUSED: return "refused";
	}
	return "unknown";
}

const char *
pgate_config_key_shown(const PgateConfigKey *k)
{
	if (k->shown != NULL)
		return k->shown;
	if (k->value != NULL)
		return k->value;
	return (k->flags & PGATE_CONFIG_KEY_REQUIRED) ? "(required)"
						      : "(none)";
}

/* "step.NAME" -> 5, the length of "step."; 0 for a plain key. */
static gsize
pattern_prefix(const PgateConfigKey *k)
{
	const char *dot;

	if (!(k->flags & PGATE_CONFIG_KEY_PATTERN))
		return 0;
	dot = strrchr(k->key, '.');
	g_assert(dot != NULL);
	return (gsize)(dot - k->key) + 1;
}

const PgateConfigKey *
pgate_config_key_lookup(const char *group, const char *key)
{
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		const PgateConfigKey *k = &keys[i];
		gsize pre = pattern_prefix(k);

		if (strcmp(k->group, group) != 0)
			continue;
		if (pre == 0 ? strcmp(k->key, key) == 0
			     : strncmp(k->key, key, pre) == 0 &&
				       key[pre] != '\0')
			return k;
	}
	return NULL;
}

gboolean
pgate_config_group_known(const char *group)
{
	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
		if (strcmp(keys[i].group, group) == 0)
			return TRUE;
	return FALSE;
}

/* The optimal string alignment distance, case aside: insertions,
 * deletions, substitutions and transpositions of neighbours cost 1.
 * Names are short; a longer one is as far as can be. */
static guint
distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	guint d[MAX + 1][MAX + 1];
	gsize la = strlen(a), lb = strlen(b);

	if (la > MAX || lb > MAX)
		return G_MAXUINT;
	for (gsize i = 0; i <= la; i++)
		d[i][0] = (guint)i;
	for (gsize j = 0; j <= lb; j++)
		d[0][j] = (guint)j;
	for (gsize i = 1; i <= la; i++) {
		for (gsize j = 1; j <= lb; j++) {
			guint cost = g_ascii_tolower(a[i - 1]) !=
				     g_ascii_tolower(b[j - 1]);
			guint v = MIN(d[i - 1][j] + 1, d[i][j - 1] + 1);

			v = MIN(v, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 &&
			    g_ascii_tolower(a[i - 1]) ==
				    g_ascii_tolower(b[j - 2]) &&
			    g_ascii_tolower(a[i - 2]) ==
				    g_ascii_tolower(b[j - 1]))
				v = MIN(v, d[i - 2][j - 2] + 1);
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/* How far a typo may be from what was meant: a third of the name, at
 * least 1, at most 3. */
static guint
typo_limit(const char *word)
{
	gsize n = strlen(word);

	return (guint)CLAMP(n / 3, 1, 3);
}

char *
pgate_config_suggest_group(const char *group)
{
	const char *best = NULL;
	guint best_d = G_MAXUINT;

	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		guint d = distance(group, keys[i].group);

		if (d < best_d) {
			best_d = d;
			best = keys[i].group;
		}
	}
	if (best == NULL || best_d > typo_limit(group))
		return NULL;
	return g_strdup(best);
}

char *
pgate_config_suggest_key(const char *group, const char *key)
{
	g_autofree char *best = NULL;
	guint best_d = G_MAXUINT;
	const char *dot = strchr(key, '.');

	for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
		const PgateConfigKey *k = &keys[i];
		gsize pre = pattern_prefix(k);
		g_autofree char *cand = NULL;
		guint d;

		if (strcmp(k->group, group) != 0 ||
		    k->type == PGATE_CONFIG_TYPE_REFUSED)
			continue;
		/* a pattern: its prefix with the name given, if one was */
		if (pre > 0 && dot != NULL && dot[1] != '\0')
			cand = g_strdup_printf("%.*s%s", (int)pre, k->key,
					       dot + 1);
		else
			cand = g_strdup(k->key);
		d = distance(key, cand);
		if (d < best_d) {
			best_d = d;
			g_free(best);
			best = g_steal_pointer(&cand);
		}
	}
	if (best == NULL || best_d > typo_limit(key))
		return NULL;
	return g_steal_pointer(&best);
}

static void
add_problem(GPtrArray *problems, GError **error, GError *e)
{
	if (error != NULL && *error == NULL)
		*error = g_error_copy(e);
	if (problems != NULL)
		g_ptr_array_add(problems, e);
	else
		g_error_free(e);
}

/* The keys of [project NAME]: its own (no '.'), and GROUP.KEY of the
 * groups a project may override. */
static gboolean
validate_project(GKeyFile *kf, const char *group, const char *name,
		 GQuark domain, GPtrArray *problems, GError **error)
{
	g_auto(GStrv) names = NULL;
	gboolean ok = TRUE;

	if (!pgate_config_project_name_valid(name)) {
		add_problem(problems, error, g_error_new(
			domain, PGATE_ERROR_CONFIG,
			"[%s]: '%s' is no project name (1 to 64 letters, "
			"digits, '_', '-' and '.')", group, name));
		return FALSE;
	}
	names = g_key_file_get_keys(kf, group, NULL, NULL);
	for (guint i = 0; names && names[i]; i++) {
		const char *key = names[i], *sub = NULL;
		g_autofree char *g = NULL;
		const PgateConfigKey *k;
		GError *e = NULL;

		if (strchr(key, '.') == NULL) {
			k = pgate_config_key_lookup(PGATE_CONFIG_PROJECT_GROUP,
						    key);
			if (k == NULL) {
				g_autofree char *near = pgate_config_suggest_key(
					PGATE_CONFIG_PROJECT_GROUP, key);

				pgate_config_error(
					&e, domain, group, key,
					"no such key (%s%s%sa project's own "
					"keys are lists and addresses; it sets "
					"the others as GROUP.KEY)",
					near ? "did you mean " : "",
					near ? near : "", near ? "? " : "");
			}
		} else if ((g = pgate_config_project_key_split(key, &sub)) ==
			   NULL) {
			pgate_config_error(&e, domain, group, key,
					   "no such key (GROUP.KEY, with GROUP "
					   "one of apply, ci, ci.local, "
					   "ci.jenkins, ci.buildbot, trust, "
					   "pipeline, "
					   "patchwork, email)");
		} else if (!pgate_config_project_group_overridable(g)) {
			pgate_config_error(&e, domain, group, key,
					   "[%s] is the whole instance's: a "
					   "project cannot set it", g);
		} else if ((k = pgate_config_key_lookup(g, sub)) == NULL) {
			g_autofree char *near =
				pgate_config_suggest_key(g, sub);

			if (near != NULL)
				pgate_config_error(&e, domain, group, key,
						   "no such key (did you mean "
						   "%s.%s?)", g, near);
			else
				pgate_config_error(&e, domain, group, key,
						   "no such key");
		} else if (k->type == PGATE_CONFIG_TYPE_REFUSED) {
			pgate_config_error(
				&e, domain, group, key,
				"a secret is never written in the "
				"configuration: put it in a file named by "
				"%s.%s_file, or in an environment variable "
				"named by %s.%s_env", g, sub, g, sub);
		}
		if (e != NULL) {
			add_problem(problems, error, e);
			ok = FALSE;
		}
	}
	return ok;
}

gboolean
pgate_config_validate(GKeyFile *kf, GQuark domain, GPtrArray *problems,
		      GError **error)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
	gboolean ok = TRUE;

	for (guint g = 0; groups[g]; g++) {
		const char *group = groups[g];
		g_auto(GStrv) names = NULL;
		const char *project = pgate_config_project_name(group);

		if (project != NULL) {
			if (!validate_project(kf, group, project, domain,
					      problems, error))
				ok = FALSE;
			continue;
		}
		if (!pgate_config_group_known(group)) {
			g_autofree char *near =
				pgate_config_suggest_group(group);

			add_problem(problems, error, g_error_new(
				domain, PGATE_ERROR_CONFIG,
				"[%s]: no such group%s%s%s", group,
				near ? " (did you mean [" : "",
				near ? near : "", near ? "]?)" : ""));
			ok = FALSE;
			continue;
		}
		names = g_key_file_get_keys(kf, group, NULL, NULL);
		for (guint i = 0; names && names[i]; i++) {
			const char *key = names[i];
			const PgateConfigKey *k =
				pgate_config_key_lookup(group, key);
			GError *e = NULL;

			if (k == NULL) {
				g_autofree char *near =
					pgate_config_suggest_key(group, key);

				if (near != NULL)
					pgate_config_error(
						&e, domain, group, key,
						"no such key (did you mean "
						"%s?)", near);
				else
					pgate_config_error(&e, domain, group,
							   key, "no such key");
			} else if (k->type == PGATE_CONFIG_TYPE_REFUSED) {
				pgate_config_error(
					&e, domain, group, key,
					"a secret is never written in the "
					"configuration: put it in a file "
					"named by %s_file, or in an "
					"environment variable named by "
					"%s_env", key, key);
			}
			if (e != NULL) {
				add_problem(problems, error, e);
				ok = FALSE;
			}
		}
	}
	return ok;
}
