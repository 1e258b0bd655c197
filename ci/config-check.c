/* config-check.c - a backend's settings checked, and nothing else done: no
 * directory made, no thread started, no connection (patchgate config
 * check). */
#include "ci/ci-private.h"

#ifdef PGATE_CI_HAVE_LOCAL
#include "ci/local/local-private.h"
#endif
#ifdef PGATE_CI_HAVE_JENKINS
#include "ci/jenkins/jenkins-private.h"
#endif
#ifdef PGATE_CI_HAVE_BUILDBOT
#include "ci/buildbot/buildbot-private.h"
#endif

gboolean
pgate_ci_config_check(const char *kind, GKeyFile *kf, const char *group,
		      GError **error)
{
	g_return_val_if_fail(kind != NULL && kf != NULL && group != NULL,
			     FALSE);
#ifdef PGATE_CI_HAVE_LOCAL
	if (g_str_equal(kind, "local")) {
		g_autoptr(PgateCiLocalConfig) cfg =
			pgate_ci_local__config_load(kf, group, error);

		return cfg != NULL;
	}
#endif
#ifdef PGATE_CI_HAVE_JENKINS
	if (g_str_equal(kind, "jenkins")) {
		JkConfig cfg;
		gboolean ok = pgate_ci_jenkins__config_load(&cfg, kf, group,
							    error);

		pgate_ci_jenkins__config_clear(&cfg);
		return ok;
	}
#endif
#ifdef PGATE_CI_HAVE_BUILDBOT
	if (g_str_equal(kind, "buildbot")) {
		BbConfig cfg;
		gboolean ok = pgate_ci_buildbot__config_load(&cfg, kf, group,
							     error);

		pgate_ci_buildbot__config_clear(&cfg);
		return ok;
	}
#endif
	g_set_error(error, PGATE_CI_ERROR, PGATE_ERROR_CONFIG,
		    "unknown CI backend \"%s\"", kind);
	return FALSE;
}
