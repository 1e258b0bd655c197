/* ci-private.h - what ci.c needs from the backends in ci/local/,
 * ci/jenkins/ and ci/buildbot/.  Each backend part defines its constructor; the table in
 * backends.c lists them (each under the PGATE_CI_HAVE_* its part's
 * meson.build defines). */
#pragma once

#include "ci/ci.h"

typedef struct {
	const char *name;
	PgateCiBackend *(*create)(GKeyFile *kf, const char *group,
				  const char *state_dir, GError **error);
} PgateCiBackendEntry;

/* Terminated by an entry whose name is NULL. */
extern const PgateCiBackendEntry pgate_ci_backends[];

PgateCiBackend *pgate_ci_local_create(GKeyFile *kf, const char *group,
				      const char *state_dir, GError **error);
PgateCiBackend *pgate_ci_jenkins_create(GKeyFile *kf, const char *group,
					const char *state_dir, GError **error);

PgateCiBackend *pgate_ci_buildbot_create(GKeyFile *kf, const char *group,
					 const char *state_dir, GError **error);

/* Replaces every secret (common/secret.c) in @r's texts: what a backend
 * reports passes through it before it is kept or handed on. */
void pgate_ci__result_redact(PgateCiResult *r);
