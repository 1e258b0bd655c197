/* autocleanups.h - g_autoptr() for the GMime types patchgate uses.
 *
 * GMime 3.2 defines none.  Header only: include it where GMime is used
 * (ingest, report/email and their tests); common itself does not link
 * GMime.
 */
#pragma once

#include <gmime/gmime.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeMessage, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeParser, g_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GMimeStream, g_object_unref)
