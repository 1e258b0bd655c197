/* test-route.c - pipeline/route.c and common/config.c's projects: which
 * keys a project sees (inheritance), which mail it takes, and the
 * routing rules in their order (docs/config.md "Projects",
 * docs/pipeline.md "Routing"). */
#include <glib.h>
#include <string.h>

#include "pipeline/pipeline-private.h"
#include "testutil.h"

#define DOMAIN (g_quark_from_static_string("pgate-test-error-quark"))

static GKeyFile *
kf_new(const char *text)
{
	GKeyFile *kf = g_key_file_new();

	g_assert_true(g_key_file_load_from_data(kf, text, (gsize)-1,
						G_KEY_FILE_NONE, NULL));
	return kf;
}

static const char multi[] =
	"[apply]\n"
	"repo = /srv/linux\n"
	"branches = master\n"
	"[ci]\n"
	"job = build\n"
	"[ci.local]\n"
	"[trust]\n"
	"everyone = true\n"
	"[patchwork]\n"
	"url = https://pw.example.org\n"
	"project = netdevbpf\n"
	"[project net]\n"
	"lists = netdev.vger.kernel.org; *.netdev.example.org\n"
	"addresses = netdev@vger.kernel.org\n"
	"apply.branches = net-next; net\n"
	"apply.tags = net:net; net-next:net-next\n"
	"ci.local.step.build = make\n"
	"[project rtc]\n"
	"lists = linux-rtc.vger.kernel.org\n"
	"apply.repo = /srv/rtc\n"
	"patchwork.project = linux-rtc\n"
	"trust.everyone = false\n";

/* A project sees the defaults and its own keys over them; the others'
 * keys and the project groups are not there. */
static void
test_inherit(void)
{
	g_autoptr(GKeyFile) kf = kf_new(multi);
	g_autoptr(GKeyFile) net = NULL, rtc = NULL;
	g_auto(GStrv) names = pgate_config_projects(kf);
	g_autoptr(GError) error = NULL;
	g_autofree char *v = NULL;
	gboolean b = TRUE;

	g_assert_cmpuint(g_strv_length(names), ==, 2);
	g_assert_cmpstr(names[0], ==, "net");
	g_assert_cmpstr(names[1], ==, "rtc");
	g_assert_true(pgate_config_validate(kf, DOMAIN, NULL, &error));
	g_assert_no_error(error);

	net = pgate_config_project_keyfile(kf, "net", DOMAIN, &error);
	g_assert_no_error(error);
	rtc = pgate_config_project_keyfile(kf, "rtc", DOMAIN, &error);
	g_assert_no_error(error);
	/* inherited */
	v = g_key_file_get_value(net, "apply", "repo", NULL);
	g_assert_cmpstr(v, ==, "/srv/linux");
	g_clear_pointer(&v, g_free);
	v = g_key_file_get_value(net, "patchwork", "project", NULL);
	g_assert_cmpstr(v, ==, "netdevbpf");
	g_clear_pointer(&v, g_free);
	/* overridden */
	v = g_key_file_get_value(net, "apply", "branches", NULL);
	g_assert_cmpstr(v, ==, "net-next; net");
	g_clear_pointer(&v, g_free);
	v = g_key_file_get_value(net, "ci.local", "step.build", NULL);
	g_assert_cmpstr(v, ==, "make");
	g_clear_pointer(&v, g_free);
	v = g_key_file_get_value(rtc, "apply", "repo", NULL);
	g_assert_cmpstr(v, ==, "/srv/rtc");
	g_clear_pointer(&v, g_free);
	v = g_key_file_get_value(rtc, "patchwork", "project", NULL);
	g_assert_cmpstr(v, ==, "linux-rtc");
	g_clear_pointer(&v, g_free);
	g_assert_true(pgate_config_bool(rtc, "trust", "everyone", TRUE, &b,
					DOMAIN, NULL));
	g_assert_false(b);
	/* one project's keys are not the other's; an empty group stays */
	g_assert_false(g_key_file_has_key(rtc, "ci.local", "step.build", NULL));
	g_assert_true(g_key_file_has_group(rtc, "ci.local"));
	g_assert_false(g_key_file_has_group(net, "project net"));
	g_assert_false(g_key_file_has_group(net, "project rtc"));
	/* the validator accepts what a project's file holds */
	g_assert_true(pgate_config_validate(net, DOMAIN, NULL, NULL));

	g_assert_null(pgate_config_project_keyfile(kf, "nope", DOMAIN, &error));
	g_assert_error(error, DOMAIN, PGATE_ERROR_CONFIG);
}

/* Wrong project keys are refused by name. */
static void
test_validate(void)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "[project net]\nlist = x\n", "[project net] list: no such key "
		  "(did you mean lists?" },
		{ "[project net]\napply.brances = x\n", "[project net] "
		  "apply.brances: no such key (did you mean apply.branches?)" },
		{ "[project net]\nstore.map_size = 1\n", "[project net] "
		  "store.map_size: [store] is the whole instance's" },
		{ "[project net]\nfoo.bar = 1\n", "[project net] foo.bar: no "
		  "such key (GROUP.KEY" },
		{ "[project net]\npatchwork.token = x\n", "[project net] "
		  "patchwork.token: a secret is never written" },
		{ "[project a b]\nlists = x\n", "[project a b]: 'a b' is no "
		  "project name" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GKeyFile) kf = kf_new(cases[i].text);
		g_autoptr(GError) error = NULL;

		g_assert_false(pgate_config_validate(kf, DOMAIN, NULL, &error));
		g_assert_error(error, DOMAIN, PGATE_ERROR_CONFIG);
		g_test_message("%s", error->message);
		g_assert_true(g_str_has_prefix(error->message, cases[i].says));
	}
	{
		g_autoptr(GKeyFile) kf = kf_new("[project x]\napply.repo = /r\n");
		g_autoptr(GError) error = NULL;

		g_assert_null(pgate_projects_load(kf, &error));
		g_assert_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG);
		g_assert_nonnull(strstr(error->message, "selects no mail"));
	}
}

/* Without [project] groups: one implicit project that sees the file as
 * it is and takes every message. */
static void
test_implicit(void)
{
	g_autoptr(GKeyFile) kf = kf_new("[apply]\nrepo = /r\n");
	g_autoptr(GPtrArray) projects = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateMessageRec) m = pgate_message_rec_new();
	g_autofree char *why = NULL, *id = NULL;
	const PgateProject *pr;

	projects = pgate_projects_load(kf, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(projects->len, ==, 1);
	pr = projects->pdata[0];
	g_assert_null(pr->name);
	g_assert_true(pr->kf == kf);
	g_assert_cmpstr(pgate_project_label(pr), ==, "-");
	why = pgate_project_match_message(pr, m);
	g_assert_nonnull(why);
	id = pgate_project_state_id(pr, "s0123456789ab");
	g_assert_cmpstr(id, ==, "s0123456789ab");
}

/* Mail is a project's by List-Id, else by To/Cc; the state ID says
 * which project. */
static void
test_select(void)
{
	g_autoptr(GKeyFile) kf = kf_new(multi);
	g_autoptr(GPtrArray) projects = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateMessageRec) m = pgate_message_rec_new();
	const PgateProject *net, *rtc;
	g_autofree char *why = NULL, *id = NULL, *sid = NULL;
	const char *proj = NULL;

	projects = pgate_projects_load(kf, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(projects->len, ==, 2);
	net = projects->pdata[0];
	rtc = projects->pdata[1];

	m->list_id = g_strdup("Linux-RTC.vger.kernel.org");
	g_ptr_array_add(m->cc, g_strdup("NetDev@vger.kernel.org"));
	why = pgate_project_match_message(rtc, m);
	g_assert_cmpstr(why, ==, "List-Id <Linux-RTC.vger.kernel.org> matches "
			"linux-rtc.vger.kernel.org");
	g_clear_pointer(&why, g_free);
	why = pgate_project_match_message(net, m);
	g_assert_cmpstr(why, ==, "Cc NetDev@vger.kernel.org matches "
			"netdev@vger.kernel.org");
	g_clear_pointer(&why, g_free);
	g_free(m->list_id);
	m->list_id = g_strdup("bpf.netdev.example.org");
	g_ptr_array_set_size(m->cc, 0);
	why = pgate_project_match_message(net, m);
	g_assert_cmpstr(why, ==, "List-Id <bpf.netdev.example.org> matches "
			"*.netdev.example.org");
	g_clear_pointer(&why, g_free);
	g_assert_null(pgate_project_match_message(rtc, m));

	id = pgate_project_state_id(net, "s0123456789ab");
	g_assert_cmpstr(id, ==, "s0123456789ab@net");
	sid = pgate_project_split_state_id(id, &proj);
	g_assert_cmpstr(sid, ==, "s0123456789ab");
	g_assert_cmpstr(proj, ==, "net");
	g_clear_pointer(&sid, g_free);
	sid = pgate_project_split_state_id("s0123456789ab", &proj);
	g_assert_cmpstr(sid, ==, "s0123456789ab");
	g_assert_null(proj);
}

typedef struct {
	PgateMessageRec *rec;
	PgateStoreAddResult result;
} AddCtx;

static gboolean
add_fn(PgateStoreTxn *txn, gpointer payload, GError **error)
{
	AddCtx *c = payload;
	g_autoptr(GBytes) raw = g_bytes_new_static("x", 1);

	c->rec->num = 0;
	return pgate_store_message_add(txn, c->rec, raw, &c->result, error);
}

/* Stores a copy of message "m@example.org" (same content each time) that
 * came through @list_id; returns what the store made of it. */
static PgateStoreAddResult
add_copy(PgateStore *s, const char *list_id)
{
	g_autoptr(PgateMessageRec) m = pgate_message_rec_new();
	g_autoptr(GError) error = NULL;
	AddCtx c = { m, 0 };

	m->msgid = g_strdup("m@example.org");
	m->kind = PGATE_MSG_KIND_PATCH;
	m->list_id = g_strdup(list_id);
	memset(m->content_hash, 0x5a, sizeof m->content_hash);
	m->raw_location = PGATE_RAW_INLINE;
	g_assert_true(pgate_store_write(s, add_fn, &c, &error));
	g_assert_no_error(error);
	return c.result;
}

/* A message stored once keeps the List-Id of every copy (bounded), and a
 * project's `lists` match any of them. */
static void
test_copies(void)
{
	g_autoptr(GKeyFile) kf = kf_new(multi);
	g_autoptr(GPtrArray) projects = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *dir = g_dir_make_tmp("test-route-XXXXXX", &error);
	g_autofree char *why = NULL;
	g_autoptr(PgateStore) s = NULL;
	g_autoptr(PgateStoreTxn) txn = NULL;
	g_autoptr(PgateMessageRec) m = NULL;

	g_assert_no_error(error);
	projects = pgate_projects_load(kf, &error);
	g_assert_no_error(error);
	s = pgate_store_open(dir, PGATE_STORE_RW | PGATE_STORE_CREATE, NULL,
			     &error);
	g_assert_no_error(error);
	g_assert_cmpint(add_copy(s, "netdev.vger.kernel.org"), ==,
			PGATE_STORE_ADDED);
	g_assert_cmpint(add_copy(s, "linux-rtc.vger.kernel.org"), ==,
			PGATE_STORE_DUPLICATE);
	g_assert_cmpint(add_copy(s, "Linux-RTC.vger.kernel.org"), ==,
			PGATE_STORE_DUPLICATE);	/* the same list */
	g_assert_cmpint(add_copy(s, "netdev.vger.kernel.org"), ==,
			PGATE_STORE_DUPLICATE);
	g_assert_cmpint(add_copy(s, NULL), ==, PGATE_STORE_DUPLICATE);
	for (guint i = 0; i < 40; i++) {
		g_autofree char *l = g_strdup_printf("l%u.example.org", i);

		g_assert_cmpint(add_copy(s, l), ==, PGATE_STORE_DUPLICATE);
	}

	txn = pgate_store_begin_read(s, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(pgate_store_message_count(txn), ==, 1);
	m = pgate_store_message_get(txn, 1, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(m->list_id, ==, "netdev.vger.kernel.org");
	g_assert_cmpuint(m->more_list_ids->len, ==, PGATE_MSG_MAX_LIST_IDS - 1);
	g_assert_cmpstr(m->more_list_ids->pdata[0], ==,
			"linux-rtc.vger.kernel.org");
	g_assert_cmpstr(m->more_list_ids->pdata[1], ==, "l0.example.org");
	why = pgate_project_match_message(projects->pdata[1], m);
	g_assert_cmpstr(why, ==, "List-Id <linux-rtc.vger.kernel.org> matches "
			"linux-rtc.vger.kernel.org");
	g_clear_pointer(&why, g_free);
	why = pgate_project_match_message(projects->pdata[0], m);
	g_assert_cmpstr(why, ==, "List-Id <netdev.vger.kernel.org> matches "
			"netdev.vger.kernel.org");

	g_clear_pointer(&txn, pgate_store_txn_free);
	g_clear_pointer(&s, pgate_store_free);
	pgate_test_rm_rf(dir);
}

/* A project's reply policy ([email] to/when/maintainers/digest/
 * max_per_day, set as email.KEY): who gets a reply. */
static char *
rcpts_of(const char *conf, const char *project, gboolean failed)
{
	g_autoptr(GKeyFile) kf = kf_new(conf);
	g_autoptr(GPtrArray) projects = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PgateEmailConfig) cfg = NULL;
	g_autoptr(GPtrArray) r = NULL;
	GString *out = g_string_new(NULL);
	PgateEmailDecision d;

	projects = pgate_projects_load(kf, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < projects->len; i++) {
		const PgateProject *pr = projects->pdata[i];

		if (g_strcmp0(pr->name, project) == 0)
			cfg = pgate_email_config_new(pr->kf, "email", &error);
	}
	g_assert_no_error(error);
	g_assert_nonnull(cfg);
	r = pgate_email_recipients(cfg, "Dev@Example.org", failed,
				   "alpha@example.org", &d);
	for (guint i = 0; i < r->len; i++)
		g_string_append_printf(out, "%s%s", i ? " " : "",
				       (char *)r->pdata[i]);
	if (r->len == 0)
		g_string_append(out, pgate_email_decision_to_string(d));
	g_string_append_printf(out, " digest=%d max=%u",
			       pgate_email_config_digest(cfg),
			       pgate_email_config_max_per_day(cfg));
	return g_string_free(out, FALSE);
}

static void
test_email_policy(void)
{
	static const char conf[] =
		"[email]\n"
		"enabled = true\n"
		"smtp_url = smtp://127.0.0.1:25\n"
		"starttls = no\n"
		"from_address = ci@example.org\n"
		"to = author\n"
		"[project a]\n"
		"lists = a.example.org\n"
		"email.to = author+list\n"
		"email.when = all\n"
		"email.max_per_day = 3\n"
		"[project m]\n"
		"lists = m.example.org\n"
		"email.to = maintainers\n"
		"email.maintainers = M1@example.org; m2@example.org\n"
		"email.cc_list = true\n"
		"email.digest = true\n"
		"[project f]\n"
		"lists = f.example.org\n"
		"email.when = failures\n";
	struct { const char *project; gboolean failed; const char *want; }
	cases[] = {
		{ "a", FALSE, "dev@example.org alpha@example.org digest=0 max=3" },
		{ "m", TRUE, "m1@example.org m2@example.org digest=1 max=0" },
		{ "f", TRUE, "dev@example.org digest=0 max=0" },
		{ "f", FALSE, "nothing failed and when = failure digest=0 max=0" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = rcpts_of(conf, cases[i].project,
						cases[i].failed);

		g_assert_cmpstr(got, ==, cases[i].want);
	}
}

static GPtrArray *
strs(const char *first, ...)
{
	GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
	va_list ap;

	va_start(ap, first);
	for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
		g_ptr_array_add(a, g_strdup(s));
	va_end(ap);
	return a;
}

/* "branch:rule branch:rule", or "skip: why". */
static char *
route_text(const char *conf, const char *base, GPtrArray *prefixes,
	   GPtrArray *files, char **maint)
{
	g_autoptr(GKeyFile) kf = kf_new(conf);
	PgateRouteConfig rc;
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) branches = NULL;
	g_autoptr(PgateRoute) r = NULL;
	GString *out = g_string_new(NULL);

	g_assert_true(pgate_config_list(kf, "apply", "branches", &branches,
					DOMAIN, NULL));

	g_assert_true(pgate_route_config_load(kf, &rc, &error));
	g_assert_no_error(error);
	r = pgate_route_decide(&rc, branches, base, prefixes, files, maint);
	pgate_route_config_clear(&rc);
	if (r->skip != NULL)
		g_string_printf(out, "skip: %s", r->skip);
	for (guint i = 0; r->skip == NULL && i < r->targets->len; i++) {
		const PgateRouteTarget *t = r->targets->pdata[i];

		g_string_append_printf(out, "%s%s:%s", i ? " " : "", t->branch,
				       pgate_route_rule_to_string(t->rule));
	}
	g_ptr_array_unref(prefixes);
	g_ptr_array_unref(files);
	return g_string_free(out, FALSE);
}

static void
test_rules(void)
{
	static const char tags[] =
		"[apply]\nbranches = main; stable\n"
		"tags = net:net; net-next:net-next; bpf*:bpf-next\n";
	static const char tags_default[] =
		"[apply]\nbranches = main\n"
		"tags = net:net; net-next:net-next\ntag_default = net-next\n";
	static const char paths[] =
		"[apply]\nbranches = main; stable\n"
		"paths = drivers/rtc/:rtc-next; Documentation/*\n";
	char *t;

	/* (4) no routing keys: the branches in order, base-commit first */
	t = route_text("[apply]\nbranches = a; b\n", "abc123",
		       strs("net-next", "v2", "3/5", NULL), strs(NULL), NULL);
	g_assert_cmpstr(t, ==, "base-commit:base-commit a:branches b:branches");
	g_free(t);
	/* (2) subject tags */
	t = route_text(tags, NULL, strs("net-next", "v2", "3/5", NULL),
		       strs(NULL), NULL);
	g_assert_cmpstr(t, ==, "net-next:tag");
	g_free(t);
	t = route_text(tags, "abc", strs("RFC", "NET", NULL), strs(NULL),
		       NULL);
	g_assert_cmpstr(t, ==, "base-commit:base-commit net:tag");
	g_free(t);
	t = route_text(tags, NULL, strs("bpf-next", "PATCHv3", NULL),
		       strs(NULL), NULL);
	g_assert_cmpstr(t, ==, "bpf-next:tag");
	g_free(t);
	t = route_text(tags, NULL, strs("iwl-next", NULL), strs(NULL), NULL);
	g_assert_cmpstr(t, ==, "skip: no tree for tag iwl-next");
	g_free(t);
	/* no tag, no default: on to the branches */
	t = route_text(tags, NULL, strs("v2", "1/2", NULL), strs(NULL), NULL);
	g_assert_cmpstr(t, ==, "main:branches stable:branches");
	g_free(t);
	t = route_text(tags_default, NULL, strs("RESEND", NULL), strs(NULL),
		       NULL);
	g_assert_cmpstr(t, ==, "net-next:tag-default");
	g_free(t);
	t = route_text(tags_default, NULL, strs("wireless", NULL), strs(NULL),
		       NULL);
	g_assert_cmpstr(t, ==, "skip: no tree for tag wireless");
	g_free(t);
	/* (3) paths: a branch, a claim only, nothing of the project's */
	t = route_text(paths, NULL, strs(NULL),
		       strs("drivers/rtc/rtc-foo.c", NULL), NULL);
	g_assert_cmpstr(t, ==, "rtc-next:paths");
	g_free(t);
	t = route_text(paths, NULL, strs(NULL),
		       strs("Documentation/rtc.txt", NULL), NULL);
	g_assert_cmpstr(t, ==, "main:branches stable:branches");
	g_free(t);
	t = route_text(paths, NULL, strs(NULL), strs("fs/ext4/inode.c", NULL),
		       NULL);
	g_assert_cmpstr(t, ==, "skip: touches no path of the project's");
	g_free(t);
	/* MAINTAINERS globs claim files too */
	{
		static const char maint[] =
			"Descriptions of section entries\n"
			"\tF: this is not one\n"
			"\n"
			"EXT4 FILE SYSTEM\n"
			"M:\tTed <t@example.org>\n"
			"F:\tfs/ext4/\n"
			"\n"
			"REAL TIME CLOCK (RTC) SUBSYSTEM\n"
			"M:\tA <a@example.org>\n"
			"F:\tdrivers/rtc/\n"
			"F:\tinclude/linux/rtc.h\n"
			"F:\tinclude/linux/rtc/*\n";
		g_auto(GStrv) all = pgate_route_maintainers_parse(
			maint, strlen(maint), NULL);
		char *sec[] = { "real time clock*", NULL };
		g_auto(GStrv) rtc = pgate_route_maintainers_parse(
			maint, strlen(maint), sec);

		g_assert_cmpuint(g_strv_length(all), ==, 4);
		g_assert_cmpuint(g_strv_length(rtc), ==, 3);
		g_assert_cmpstr(rtc[0], ==, "drivers/rtc/");
		t = route_text("[apply]\nbranches = rtc-next\n"
			       "maintainers = MAINTAINERS\n", NULL, strs(NULL),
			       strs("include/linux/rtc.h", NULL), rtc);
		g_assert_cmpstr(t, ==, "rtc-next:branches");
		g_free(t);
		t = route_text("[apply]\nbranches = rtc-next\n"
			       "maintainers = MAINTAINERS\n", NULL, strs(NULL),
			       strs("fs/ext4/inode.c", NULL), rtc);
		g_assert_cmpstr(t, ==, "skip: touches no path of the "
				"project's");
		g_free(t);
	}
	g_assert_true(pgate_route_path_match("drivers/rtc", "drivers/rtc/a.c"));
	g_assert_false(pgate_route_path_match("drivers/rtc", "drivers/rtcx.c"));
	g_assert_true(pgate_route_path_match("*.h", "include/x.h"));
}

static void
test_tree_tag(void)
{
	static const struct {
		const char *const prefixes[4];
		const char *tag;
	} cases[] = {
		{ { "net-next", "v2", "3/5", NULL }, "net-next" },
		{ { "v2", "net", NULL }, "net" },
		{ { "RFC", "PATCHv2", "Bpf-Next", NULL }, "bpf-next" },
		{ { "RESEND", "v10", "10/12", NULL }, NULL },
		{ { "RFCv2", NULL }, NULL },
		{ { NULL }, NULL },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GPtrArray) p = g_ptr_array_new();
		g_autofree char *tag = NULL;

		for (guint k = 0; cases[i].prefixes[k]; k++)
			g_ptr_array_add(p, (gpointer)cases[i].prefixes[k]);
		tag = pgate_route_tree_tag(p);
		g_assert_cmpstr(tag, ==, cases[i].tag);
	}
}

static void
test_bad_config(void)
{
	static const char *const bad[] = {
		"[apply]\ntags = net\n",
		"[apply]\ntags = :net\n",
		"[apply]\npaths = drivers/:\n",
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GKeyFile) kf = kf_new(bad[i]);
		g_autoptr(GError) error = NULL;
		PgateRouteConfig rc;

		g_assert_false(pgate_route_config_load(kf, &rc, &error));
		g_assert_error(error, PGATE_PIPELINE_ERROR, PGATE_ERROR_CONFIG);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/route/config/inherit", test_inherit);
	g_test_add_func("/route/config/validate", test_validate);
	g_test_add_func("/route/config/implicit", test_implicit);
	g_test_add_func("/route/config/bad", test_bad_config);
	g_test_add_func("/route/select", test_select);
	g_test_add_func("/route/select/copies", test_copies);
	g_test_add_func("/route/email-policy", test_email_policy);
	g_test_add_func("/route/rules", test_rules);
	g_test_add_func("/route/tree-tag", test_tree_tag);
	return g_test_run();
}
