/* testutil.h - what the C tests share (tests/lib/testutil.c). */
#pragma once

#include <glib.h>

/* Removes @path and everything below it, as rm -rf does: a symbolic link
 * is removed, never followed.  Errors are ignored (a test's scratch). */
void pgate_test_rm_rf(const char *path);
