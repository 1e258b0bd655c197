/* version.c - patchgate --version: our version and our libraries'.
 *
 *   patchgate 0.1.0-12-g4c8710a
 *   gmime 3.2.13
 *   libgit2 1.5.1
 *   lmdb 0.9.24
 *   curl 7.88.1
 *   jansson 2.14
 *   glib 2.74.6
 *
 * The version is `git describe --tags` of the source tree, or, without
 * a tag, the project version with the commit ("0.1.0-g4c8710a"), "+" when
 * the tree had changes; outside git, meson's project version
 * (cli/meson.build, vcs_tag).
 *
 * A library's version is the one loaded at run time, asked of the
 * library itself.  The lean binary (the delivery hook) links neither
 * libgit2 nor curl, and its start-up is what `patchgate --version`
 * measures (bench/), so it does not exec patchgate-full: for those two it
 * prints the versions patchgate-full was compiled against, saying so.  A
 * statically linked hook says "static" after the libraries it carries.
 */
#include "cli/cli.h"
#include "cli/version.h"

#include <git2/version.h>
#include <curl/curlver.h>
#include <gmime/gmime.h>
#include <jansson.h>
#include <lmdb.h>
#ifdef PGATE_FULL
#include <curl/curl.h>
#include <git2.h>
#endif

const char *
pgate_cli_version(void)
{
	return PGATE_VERSION_DESCRIBED;
}

void
pgate_cli_version_print(FILE *out)
{
	int lmaj = 0, lmin = 0, lpat = 0;
#ifdef PGATE_FULL
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	int gmaj = 0, gmin = 0, grev = 0;
	const char *linked = "";

	git_libgit2_version(&gmaj, &gmin, &grev);
#else
#ifdef PGATE_LEAN_STATIC
	const char *linked = " (static)";
#else
	const char *linked = "";
#endif
#endif
	fprintf(out, "patchgate %s\n", pgate_cli_version());
	fprintf(out, "gmime %u.%u.%u%s\n", gmime_major_version,
		gmime_minor_version, gmime_micro_version, linked);
#ifdef PGATE_FULL
	fprintf(out, "libgit2 %d.%d.%d\n", gmaj, gmin, grev);
#else
	fprintf(out, "libgit2 %s (patchgate-full, compiled against)\n",
		LIBGIT2_VERSION);
#endif
	mdb_version(&lmaj, &lmin, &lpat);
	fprintf(out, "lmdb %d.%d.%d%s\n", lmaj, lmin, lpat, linked);
#ifdef PGATE_FULL
	fprintf(out, "curl %s\n", cv->version);
#else
	fprintf(out, "curl %s (patchgate-full, compiled against)\n",
		LIBCURL_VERSION);
#endif
	fprintf(out, "jansson %s%s\n", jansson_version_str(), linked);
	fprintf(out, "glib %u.%u.%u%s\n", glib_major_version,
		glib_minor_version, glib_micro_version, linked);
}
