/* jobfile.c - the files of the local backend, as JSON (jansson; its errors
 * are translated here).  Every file is written whole to a temporary name,
 * fsync'd and renamed (pgate_file_write_atomic): a reader sees the old
 * content or the new one, never a part.
 *
 * STATE_DIR/ci/local/
 *   <handle>/            one job; <handle> is 16 lowercase hex digits
 *     job.json           what to test (written once, by submit)
 *       {"format": 1, "job": "build", "repo_path": "/srv/repo.git",
 *        "commits": ["<hex>", ...], "base_commit": "<hex>" | null,
 *        "series_id": "...", "version": 2, "branch": "main", "mode":
 *        "series" | "patch", "msgid", "repo_url", "ref", "trigger_id"}
 *     state.json         where the job is while it has no result
 *       {"format": 1, "state": "queued" | "running" | "lost",
 *        "pid": 123, "pid_start": 456, "boot_id": "...",
 *        "started": 1700000000, "reason": "..." (lost only)}
 *       pid, pid_start (/proc/PID/stat field 22) and boot_id name the
 *       process whose thread runs the job: when it is gone, so is the job.
 *     cancel             present: cancel was asked (by any process)
 *     log                the steps' output with "== " header lines
 *     result.json        the outcome; once it exists the job is done
 *       {"format": 1, "verdict": "success" | "warning" | "fail" |
 *        "error", "reason": "...", "summary": "...",
 *        "warnings_added": -1, "started": t, "finished": t,
 *        "commits": [{"commit": "<hex>", "verdict": "...",
 *                     "reason": "..."}]}
 *   baseline/<digest>.json   a base commit's run, per step set
 *       {"format": 1, "commit": "<hex>", "warnings": 1,
 *        "steps": [{"name": "build", "status": "passed", "exit_code": 0,
 *                   "signal": 0, "warnings": 1, "seconds": 0.5,
 *                   "detail": null}]}
 *       <digest> is SHA-256 of the base commit and of
 *       pgate_ci_local__config_digest() (the steps and the warning regex).
 * Unknown members are ignored; a "format" other than 1 is refused.
 */
#include "ci/local/local-private.h"
#include "common/json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#define FORMAT 1

PGATE_DEFINE_AUTOPTR(json_t, json_decref)
#define PG_AUTO(T) __attribute__((cleanup(pgate_autoptr_cleanup_##T))) T *

static char *
dup_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? g_strdup(s) : NULL;
}

static gint64
get_int(json_t *o, const char *key, gint64 def)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (gint64)json_integer_value(v) : def;
}

static gboolean
write_json(const char *path, json_t *doc, GError **error)
{
	g_autofree char *text = NULL;
	char *dumped;

	if (doc == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "%s: a string is not valid UTF-8", path);
		return FALSE;
	}
	dumped = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (dumped == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_IO,
			    "%s: cannot encode JSON", path);
		return FALSE;
	}
	text = g_strconcat(dumped, "\n", NULL);
	free(dumped);
	return pgate_file_write_atomic(path, text, strlen(text),
				       PGATE_CI_ERROR, error);
}

/* Reads @path, at most PGATE_CI_LOCAL_MAX_JSON bytes, as a JSON object of
 * our format.  A missing file is NOT_FOUND. */
static json_t *
read_json(const char *path, GError **error)
{
	g_autoptr(GBytes) bytes = NULL;
	gboolean over = FALSE;
	json_error_t jerr;
	json_t *doc;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int errsv = errno;

		g_set_error(error, PGATE_CI_ERROR, pgate_error_errno_code(errsv),
			    "open %s: %s", path, g_strerror(errsv));
		return NULL;
	}
	bytes = pgate_fd_read_bounded(fd, PGATE_CI_LOCAL_MAX_JSON, &over,
				      PGATE_CI_ERROR, error);
	close(fd);
	if (bytes == NULL)
		return NULL;
	if (over) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_TOO_LARGE,
			    "%s: larger than %d bytes", path,
			    PGATE_CI_LOCAL_MAX_JSON);
		return NULL;
	}
	doc = json_loadb(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes),
			 JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "%s:%d: %s", path, jerr.line, jerr.text);
		return NULL;
	}
	if (!json_is_object(doc) || get_int(doc, "format", -1) != FORMAT) {
		json_decref(doc);
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_SCHEMA,
			    "%s: not a format %d file", path, FORMAT);
		return NULL;
	}
	return doc;
}

/* ---- job.json -------------------------------------------------------- */

gboolean
pgate_ci_local__job_write(const char *path, const PgateCiJob *job,
			  PgateCiLocalMode mode, GError **error)
{
	PG_AUTO(json_t) doc = json_object();
	json_t *commits = json_array();

	for (guint i = 0; i < job->commits->len; i++)
		json_array_append_new(commits,
				      json_string(job->commits->pdata[i]));
	json_object_set_new(doc, "format", json_integer(FORMAT));
	json_object_set_new(doc, "commits", commits);
	json_object_set_new(doc, "job", pgate_json_str_or_null(job->job));
	json_object_set_new(doc, "repo_path", pgate_json_str_or_null(job->repo_path));
	json_object_set_new(doc, "repo_url", pgate_json_str_or_null(job->repo_url));
	json_object_set_new(doc, "ref", pgate_json_str_or_null(job->ref));
	json_object_set_new(doc, "base_commit", pgate_json_str_or_null(job->base_commit));
	json_object_set_new(doc, "series_id", pgate_json_str_or_null(job->series_id));
	json_object_set_new(doc, "version", json_integer(job->version));
	json_object_set_new(doc, "branch", pgate_json_str_or_null(job->branch));
	json_object_set_new(doc, "msgid", pgate_json_str_or_null(job->msgid));
	json_object_set_new(doc, "trigger_id", pgate_json_str_or_null(job->trigger_id));
	json_object_set_new(doc, "mode", json_string(
		mode == PGATE_CI_LOCAL_MODE_PATCH ? "patch" : "series"));
	/* json_string() is NULL for invalid UTF-8: every member must exist */
	if (json_object_size(doc) != 13) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "the job has a string that is not valid UTF-8");
		return FALSE;
	}
	return write_json(path, doc, error);
}

PgateCiJob *
pgate_ci_local__job_read(const char *path, GError **error)
{
	PG_AUTO(json_t) doc = read_json(path, error);
	g_autoptr(PgateCiJob) job = NULL;
	json_t *commits, *c;
	size_t i;

	if (doc == NULL)
		return NULL;
	job = pgate_ci_job_new();
	job->job = dup_str(doc, "job");
	job->repo_path = dup_str(doc, "repo_path");
	job->repo_url = dup_str(doc, "repo_url");
	job->ref = dup_str(doc, "ref");
	job->base_commit = dup_str(doc, "base_commit");
	job->series_id = dup_str(doc, "series_id");
	job->version = (guint32)CLAMP(get_int(doc, "version", 1), 0,
				      G_MAXUINT32);
	job->branch = dup_str(doc, "branch");
	job->msgid = dup_str(doc, "msgid");
	job->trigger_id = dup_str(doc, "trigger_id");
	commits = json_object_get(doc, "commits");
	json_array_foreach(commits, i, c)
		if (json_is_string(c))
			g_ptr_array_add(job->commits,
					g_strdup(json_string_value(c)));
	return g_steal_pointer(&job);
}

/* ---- state.json ------------------------------------------------------ */

void
pgate_ci_local__state_clear(PgateCiLocalState *st)
{
	g_clear_pointer(&st->boot_id, g_free);
	g_clear_pointer(&st->reason, g_free);
}

static const char *
state_name(PgateJobState s)
{
	return s == PGATE_JOB_LOST ? "lost" : pgate_job_state_name(s);
}

gboolean
pgate_ci_local__state_write(const char *path, const PgateCiLocalState *st,
			    GError **error)
{
	PG_AUTO(json_t) doc = json_object();

	json_object_set_new(doc, "format", json_integer(FORMAT));
	json_object_set_new(doc, "state", json_string(state_name(st->state)));
	json_object_set_new(doc, "pid", json_integer(st->pid));
	json_object_set_new(doc, "pid_start",
			    json_integer((json_int_t)st->pid_start));
	json_object_set_new(doc, "boot_id", pgate_json_str_or_null(st->boot_id));
	json_object_set_new(doc, "started", json_integer(st->started));
	json_object_set_new(doc, "reason", pgate_json_str_or_null(st->reason));
	return write_json(path, doc, error);
}

gboolean
pgate_ci_local__state_read(const char *path, PgateCiLocalState *out,
			   GError **error)
{
	PG_AUTO(json_t) doc = read_json(path, error);
	const char *s;

	memset(out, 0, sizeof *out);
	if (doc == NULL)
		return FALSE;
	s = json_string_value(json_object_get(doc, "state"));
	if (g_strcmp0(s, "queued") == 0)
		out->state = PGATE_JOB_QUEUED;
	else if (g_strcmp0(s, "running") == 0)
		out->state = PGATE_JOB_RUNNING;
	else
		out->state = PGATE_JOB_LOST;
	out->pid = get_int(doc, "pid", 0);
	out->pid_start = (guint64)MAX(get_int(doc, "pid_start", 0), 0);
	out->boot_id = dup_str(doc, "boot_id");
	out->started = get_int(doc, "started", 0);
	out->reason = dup_str(doc, "reason");
	return TRUE;
}

/* ---- result.json ----------------------------------------------------- */

static gboolean
verdict_from_string(const char *s, PgateVerdict *out)
{
	for (int v = PGATE_VERDICT_NONE; v <= PGATE_VERDICT_ERROR; v++)
		if (g_strcmp0(s, pgate_verdict_name(v)) == 0) {
			*out = (PgateVerdict)v;
			return TRUE;
		}
	return FALSE;
}

gboolean
pgate_ci_local__result_write(const char *path, const PgateCiResult *r,
			     GError **error)
{
	PG_AUTO(json_t) doc = json_object();
	json_t *commits = json_array();

	for (guint i = 0; i < r->commits->len; i++) {
		const PgateCiCommitResult *c = r->commits->pdata[i];

		json_array_append_new(commits, json_pack(
			"{s:s,s:s,s:o}", "commit", c->commit, "verdict",
			pgate_verdict_name(c->verdict), "reason",
			pgate_json_str_or_null(c->reason)));
	}
	json_object_set_new(doc, "format", json_integer(FORMAT));
	json_object_set_new(doc, "verdict",
			    json_string(pgate_verdict_name(r->verdict)));
	json_object_set_new(doc, "reason", pgate_json_str_or_null(r->reason));
	json_object_set_new(doc, "summary", pgate_json_str_or_null(r->summary));
	json_object_set_new(doc, "warnings_added",
			    json_integer(r->warnings_added));
	json_object_set_new(doc, "started", json_integer(r->started));
	json_object_set_new(doc, "finished", json_integer(r->finished));
	json_object_set_new(doc, "commits", commits);
	return write_json(path, doc, error);
}

PgateCiResult *
pgate_ci_local__result_read(const char *path, GError **error)
{
	PG_AUTO(json_t) doc = read_json(path, error);
	g_autoptr(PgateCiResult) r = NULL;
	json_t *commits, *c;
	size_t i;

	if (doc == NULL)
		return NULL;
	r = pgate_ci_result_new();
	r->state = PGATE_JOB_DONE;
	if (!verdict_from_string(json_string_value(json_object_get(doc,
								   "verdict")),
				 &r->verdict) ||
	    r->verdict == PGATE_VERDICT_NONE) {
		g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_INVALID,
			    "%s: no verdict", path);
		return NULL;
	}
	r->reason = dup_str(doc, "reason");
	r->summary = dup_str(doc, "summary");
	r->warnings_added = (gint)CLAMP(get_int(doc, "warnings_added", -1), -1,
					G_MAXINT);
	r->started = get_int(doc, "started", 0);
	r->finished = get_int(doc, "finished", 0);
	commits = json_object_get(doc, "commits");
	json_array_foreach(commits, i, c) {
		PgateCiCommitResult *cr;

		if (!json_is_string(json_object_get(c, "commit")))
			continue;
		cr = pgate_ci_commit_result_new(json_string_value(
			json_object_get(c, "commit")));
		verdict_from_string(json_string_value(json_object_get(
					    c, "verdict")), &cr->verdict);
		cr->reason = dup_str(c, "reason");
		g_ptr_array_add(r->commits, cr);
	}
	return g_steal_pointer(&r);
}

/* ---- baseline/<digest>.json ------------------------------------------ */

gboolean
pgate_ci_local__baseline_write(const char *path, const PgateCiLocalRun *run,
			       GError **error)
{
	PG_AUTO(json_t) doc = json_object();
	json_t *steps = json_array();

	for (guint i = 0; i < run->steps->len; i++) {
		const PgateCiLocalStepResult *s = run->steps->pdata[i];

		json_array_append_new(steps, json_pack(
			"{s:s,s:s,s:i,s:i,s:I,s:f,s:o}", "name", s->name,
			"status", pgate_ci_local__step_status_to_string(s->status),
			"exit_code", s->exit_code, "signal", s->signal,
			"warnings", (json_int_t)s->warnings, "seconds",
			s->seconds, "detail", pgate_json_str_or_null(s->detail)));
	}
	json_object_set_new(doc, "format", json_integer(FORMAT));
	json_object_set_new(doc, "commit", json_string(run->commit));
	json_object_set_new(doc, "warnings", json_integer(run->warnings));
	json_object_set_new(doc, "steps", steps);
	return write_json(path, doc, error);
}

PgateCiLocalRun *
pgate_ci_local__baseline_read(const char *path, GError **error)
{
	PG_AUTO(json_t) doc = read_json(path, error);
	g_autoptr(PgateCiLocalRun) run = NULL;
	json_t *steps, *s;
	size_t i;

	if (doc == NULL)
		return NULL;
	run = pgate_ci_local__run_new(json_string_value(json_object_get(
		doc, "commit")));
	run->warnings = (guint)CLAMP(get_int(doc, "warnings", 0), 0,
				     G_MAXUINT);
	steps = json_object_get(doc, "steps");
	json_array_foreach(steps, i, s) {
		PgateCiLocalStepResult *sr;
		const char *name = json_string_value(json_object_get(s, "name"));

		if (name == NULL)
			continue;
		sr = pgate_ci_local__step_result_new(name);
		if (!pgate_ci_local__step_status_from_string(
			    json_string_value(json_object_get(s, "status")),
			    &sr->status))
			sr->status = PGATE_CI_LOCAL_STEP_NOT_RUN;
		sr->exit_code = (int)CLAMP(get_int(s, "exit_code", -1), -1,
					   255);
		sr->signal = (int)CLAMP(get_int(s, "signal", 0), 0, 255);
		sr->warnings = (guint)CLAMP(get_int(s, "warnings", 0), 0,
					    G_MAXUINT);
		sr->seconds = json_number_value(json_object_get(s, "seconds"));
		sr->detail = dup_str(s, "detail");
		g_ptr_array_add(run->steps, sr);
	}
	return g_steal_pointer(&run);
}

/* ---- who runs a job -------------------------------------------------- */

guint64
pgate_ci_local__proc_start_time(gint64 pid)
{
	g_autofree char *path = NULL, *text = NULL;
	g_auto(GStrv) fields = NULL;
	const char *p;

	if (pid <= 0 || pid > G_MAXINT)
		return 0;
	path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/stat", pid);
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	/* "pid (comm) state ppid ..." where comm may hold anything */
	p = strrchr(text, ')');
	if (p == NULL)
		return 0;
	fields = g_strsplit(p + 1, " ", -1);
	/* fields[0] is empty, [1] the state (field 3): starttime (field
	 * 22) is fields[20]; a zombie has none left to run */
	if (g_strv_length(fields) < 21 || g_str_equal(fields[1], "Z"))
		return 0;
	return g_ascii_strtoull(fields[20], NULL, 10);
}

char *
pgate_ci_local__boot_id(void)
{
	g_autofree char *text = NULL;

	if (!g_file_get_contents("/proc/sys/kernel/random/boot_id", &text,
				 NULL, NULL))
		return g_strdup("");
	return g_strdup(g_strstrip(text));
}
