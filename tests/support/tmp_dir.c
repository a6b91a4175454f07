/* tmp_dir.c - a test program's temporary directory (see tmp_dir.h). */
#include "tmp_dir.h"

#include <stdio.h>
#include <stdlib.h>

static char dir[128];

int tt_tmp_dir_make(const char *name)
{
    snprintf(dir, sizeof dir, "/tmp/%s.XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

int tt_tmp_dir_remove(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

const char *tt_tmp_dir(void)
{
    return dir;
}

const char *tt_tmp_path(const char *file)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return path;
}
