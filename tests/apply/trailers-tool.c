/* trailers-tool.c - pgate_apply_add_trailers() on the command line, for
 * t0540-apply-trailers: one JSON object per input line, {"message": TEXT,
 * "followups": ["Name: value", ...], "link": URL|null, "signoff":
 * "Name <email>"|null}; one line out per case, {"message": RESULT}. */
#include "apply/apply.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

int
main(void)
{
	char *line = NULL;
	size_t cap = 0;

	while (getline(&line, &cap, stdin) > 0) {
		json_error_t jerr;
		json_t *c = json_loads(line, 0, &jerr), *f, *out;
		g_autoptr(GPtrArray) fups = g_ptr_array_new();
		g_autofree char *res = NULL;
		char *s;
		size_t i;

		if (c == NULL) {
			fprintf(stderr, "trailers-tool: %s\n", jerr.text);
			return 2;
		}
		json_array_foreach(json_object_get(c, "followups"), i, f)
			g_ptr_array_add(fups, (gpointer)json_string_value(f));
		res = pgate_apply_add_trailers(
			json_string_value(json_object_get(c, "message")), fups,
			json_string_value(json_object_get(c, "link")),
			json_string_value(json_object_get(c, "signoff")));
		out = json_pack("{s:s}", "message", res);
		s = json_dumps(out, JSON_COMPACT);
		printf("%s\n", s);
		free(s);
		json_decref(out);
		json_decref(c);
	}
	free(line);
	return 0;
}
