/* json.h - small jansson helpers every JSON writer of patchgate uses.
 *
 * Header only: common itself does not link jansson; include it where
 * jansson is used.
 */
#pragma once

#include <glib.h>
#include <jansson.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_t, json_decref)

/* (transfer full): @s as a JSON string, or null when @s is NULL. */
static inline json_t *
pgate_json_str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}
