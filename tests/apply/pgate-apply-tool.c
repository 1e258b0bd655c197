/* pgate-apply-tool - the apply library from the command line, for the
 * TAP scripts and bench/apply.sh (not installed).
 *
 *   mailinfo [--keep-cr] MSG PATCH < MAIL
 *       like `git mailinfo MSG PATCH`: the info lines on stdout, the diff in
 *       PATCH; MSG gets the commit message git am makes (not mailinfo's raw
 *       message), so a test compares it with subject + msg, stripspace'd
 *   apply [OPTIONS] REPO BASE MAIL...
 *       --committer "NAME <EMAIL>" --date DATE (pgate_apply_parse_date's
 *       forms) --committer-date-is-author-date --keep-cr
 *       --allow-symlinks --allow-submodules --max-patch-bytes N
 *       --max-files N --max-binary-bytes N --depth N --repeat N
 *   update-ref REPO REF COMMIT
 *   push REPO URL [--password-file F] [--password-env V] [--user U] REFSPEC...
 *   prune REPO PREFIX MAX_AGE NOW
 *   base-commit MAIL...
 *
 * Exit status: 0 done (whatever the apply status), 2 on a GError (printed
 * as "error: CODE MESSAGE"), 1 on bad usage.
 */
#include "apply/apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail(GError *err)
{
	printf("error: %d %s\n", err->code, err->message);
	g_error_free(err);
	return 2;
}

static GBytes *
read_file(const char *path)
{
	g_autoptr(GError) err = NULL;
	char *data;
	gsize len;

	if (!g_file_get_contents(path, &data, &len, &err)) {
		fprintf(stderr, "%s\n", err->message);
		exit(1);
	}
	return g_bytes_new_take(data, len);
}

static int
cmd_mailinfo(int argc, char **argv)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(PgateMailinfo) mi = NULL;
	g_autoptr(GByteArray) in = g_byte_array_new();
	g_autoptr(GBytes) raw = NULL;
	gboolean keep_cr = FALSE;
	guint8 buf[65536];
	size_t n;
	gsize len;
	const char *diff;

	if (argc > 1 && strcmp(argv[1], "--keep-cr") == 0) {
		keep_cr = TRUE;
		argc--;
		argv++;
	}
	if (argc != 3)
		return 1;
	while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
		g_byte_array_append(in, buf, n);
	raw = g_byte_array_free_to_bytes(g_steal_pointer(&in));
	mi = pgate_mailinfo_parse(raw, keep_cr, &err);
	if (mi == NULL)
		return fail(g_steal_pointer(&err));
	printf("Author: %s\nEmail: %s\nSubject: %s\n", mi->author_name,
	       mi->author_email, mi->subject);
	if (mi->date)
		printf("Date: %s\n", mi->date);
	printf("\n");
	diff = g_bytes_get_data(mi->diff, &len);
	if (!g_file_set_contents(argv[1], mi->message, -1, &err) ||
	    !g_file_set_contents(argv[2], diff ? diff : "", len, &err))
		return fail(g_steal_pointer(&err));
	return 0;
}

static const char *
state_name(PgateApplyPatchState s)
{
	switch (s) {
	case PGATE_APPLY_PATCH_NOT_TRIED: return "not-tried";
	case PGATE_APPLY_PATCH_APPLIED: return "applied";
	case PGATE_APPLY_PATCH_ALREADY_APPLIED: return "already-applied";
	case PGATE_APPLY_PATCH_FAILED: return "failed";
	case PGATE_APPLY_PATCH_REJECTED: return "rejected";
	}
	return "?";
}

static int
cmd_apply(int argc, char **argv)
{
	PgateApplyOptions o = PGATE_APPLY_OPTIONS_INIT;
	g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_bytes_unref);
	g_autoptr(PgateApplyResult) r = NULL;
	g_autofree char *cname = NULL, *cemail = NULL;
	const char *repo, *base;
	guint repeat = 1;
	int i = 1;

	for (; i < argc && g_str_has_prefix(argv[i], "--"); i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--keep-cr") == 0) {
			o.keep_cr = TRUE;
			continue;
		}
		if (strcmp(a, "--allow-symlinks") == 0) {
			o.allow_symlinks = TRUE;
			continue;
		}
		if (strcmp(a, "--allow-submodules") == 0) {
			o.allow_submodules = TRUE;
			continue;
		}
		if (strcmp(a, "--committer-date-is-author-date") == 0) {
			o.committer_date_is_author_date = TRUE;
			continue;
		}
		if (v == NULL)
			return 1;
		i++;
		if (strcmp(a, "--committer") == 0) {
			const char *lt = strchr(v, '<'), *gt = strchr(v, '>');

			if (!lt || !gt || gt < lt)
				return 1;
			cname = g_strstrip(g_strndup(v, lt - v));
			cemail = g_strndup(lt + 1, gt - lt - 1);
			o.committer_name = cname;
			o.committer_email = cemail;
		} else if (strcmp(a, "--date") == 0) {
			if (!pgate_apply_parse_date(v, &o.committer_time,
						    &o.committer_tz, NULL))
				return 1;
		} else if (strcmp(a, "--max-patch-bytes") == 0) {
			o.max_patch_bytes = g_ascii_strtoull(v, NULL, 10);
		} else if (strcmp(a, "--max-files") == 0) {
			o.max_files = g_ascii_strtoull(v, NULL, 10);
		} else if (strcmp(a, "--max-binary-bytes") == 0) {
			o.max_binary_bytes = g_ascii_strtoull(v, NULL, 10);
		} else if (strcmp(a, "--depth") == 0) {
			o.already_applied_depth = g_ascii_strtoull(v, NULL, 10);
		} else if (strcmp(a, "--repeat") == 0) {
			repeat = g_ascii_strtoull(v, NULL, 10);
		} else {
			return 1;
		}
	}
	if (argc - i < 2)
		return 1;
	repo = argv[i++];
	base = argv[i++];
	for (; i < argc; i++)
		g_ptr_array_add(raws, read_file(argv[i]));
	for (guint k = 0; k < repeat; k++) {
		g_autoptr(GError) err = NULL;

		g_clear_pointer(&r, pgate_apply_result_free);
		r = pgate_apply_series(repo, base, raws, &o, &err);
		if (r == NULL)
			return fail(g_steal_pointer(&err));
	}
	printf("status: %s\nbase: %s\n", pgate_apply_status_name(r->status),
	       r->base);
	for (guint k = 0; k < r->patches->len; k++) {
		PgateApplyPatchResult *p = r->patches->pdata[k];

		printf("patch %u: %s", k + 1, state_name(p->state));
		if (p->commit)
			printf(" %s %s", p->commit, p->tree);
		if (p->upstream)
			printf(" %s", p->upstream);
		printf("\n");
	}
	if (r->head)
		printf("head: %s\n", r->head);
	printf("tree: %s\n", r->tree);
	if (r->failed_index)
		printf("failed: %u %u %s\n", r->failed_index, r->failed_hunk,
		       r->failed_path ? r->failed_path : "-");
	if (r->reason)
		printf("reason: %s\n", r->reason);
	return 0;
}

static int
cmd_push(int argc, char **argv)
{
	PgateApplyCredentials c = { 0 };
	g_autoptr(GPtrArray) specs = g_ptr_array_new();
	g_autoptr(GError) err = NULL;

	if (argc < 3)
		return 1;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--password-file") == 0 && i + 1 < argc)
			c.password_file = argv[++i];
		else if (strcmp(argv[i], "--password-env") == 0 && i + 1 < argc)
			c.password_env = argv[++i];
		else if (strcmp(argv[i], "--user") == 0 && i + 1 < argc)
			c.username = argv[++i];
		else
			g_ptr_array_add(specs, argv[i]);
	}
	if (!pgate_apply_push(argv[1], argv[2], (const char *const *)specs->pdata,
			      specs->len, &c, &err))
		return fail(g_steal_pointer(&err));
	printf("pushed %u\n", specs->len);
	return 0;
}

int
main(int argc, char **argv)
{
	g_autoptr(GError) err = NULL;

	if (argc < 2)
		return 1;
	if (strcmp(argv[1], "mailinfo") == 0)
		return cmd_mailinfo(argc - 1, argv + 1);
	if (strcmp(argv[1], "apply") == 0)
		return cmd_apply(argc - 1, argv + 1);
	if (strcmp(argv[1], "update-ref") == 0 && argc == 5) {
		if (!pgate_apply_update_ref(argv[2], argv[3], argv[4],
					    "patchgate: apply", &err))
			return fail(g_steal_pointer(&err));
		return 0;
	}
	if (strcmp(argv[1], "push") == 0)
		return cmd_push(argc - 1, argv + 1);
	if (strcmp(argv[1], "prune") == 0 && argc == 6) {
		g_autoptr(GPtrArray) del = NULL;

		if (!pgate_apply_prune_refs(argv[2], argv[3],
					    g_ascii_strtoll(argv[4], NULL, 10),
					    g_ascii_strtoll(argv[5], NULL, 10),
					    &del, &err))
			return fail(g_steal_pointer(&err));
		for (guint i = 0; i < del->len; i++)
			printf("deleted %s\n", (char *)del->pdata[i]);
		return 0;
	}
	if (strcmp(argv[1], "base-commit") == 0) {
		g_autoptr(GPtrArray) raws = g_ptr_array_new_with_free_func(
			(GDestroyNotify)g_bytes_unref);
		g_autofree char *b = NULL;

		for (int i = 2; i < argc; i++)
			g_ptr_array_add(raws, read_file(argv[i]));
		b = pgate_apply_find_base_commit(raws);
		printf("%s\n", b ? b : "-");
		return 0;
	}
	return 1;
}
