/* tmp_dir.h - one temporary directory for a test program's files, made
 * before its tests and removed after them. */
#ifndef TT_TEST_TMP_DIR_H
#define TT_TEST_TMP_DIR_H

/* Make /tmp/NAME.XXXXXX; 0, or -1 (a cmocka group setup's result). */
int tt_tmp_dir_make(const char *name);

/* Remove it and all it holds; 0, or -1. */
int tt_tmp_dir_remove(void);

/* The directory's path. */
const char *tt_tmp_dir(void);

/* The path of file `file` in it, in a buffer the next call overwrites. */
const char *tt_tmp_path(const char *file);

#endif
