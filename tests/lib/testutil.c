/* testutil.c - what the C tests share. */
#include "testutil.h"

#include <glib/gstdio.h>

void
pgate_test_rm_rf(const char *path)
{
	g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
	const char *name;

	while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
		g_autofree char *p = g_build_filename(path, name, NULL);

		if (g_file_test(p, G_FILE_TEST_IS_DIR) &&
		    !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
			pgate_test_rm_rf(p);
		else
			g_unlink(p);
	}
	g_rmdir(path);
}
