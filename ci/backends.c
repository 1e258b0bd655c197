/* backends.c - the table of CI backends built into this patchgate. */
#include "ci/ci-private.h"

const PgateCiBackendEntry pgate_ci_backends[] = {
#ifdef PGATE_CI_HAVE_LOCAL
	{ "local", pgate_ci_local_create },
#endif
#ifdef PGATE_CI_HAVE_JENKINS
	{ "jenkins", pgate_ci_jenkins_create },
#endif
#ifdef PGATE_CI_HAVE_BUILDBOT
	{ "buildbot", pgate_ci_buildbot_create },
#endif
	{ NULL, NULL },
};
