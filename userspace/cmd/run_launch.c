/* run_launch.c - how `tokentap run` starts CMD (run_launch.h). */
#include "cmd/run_launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"
#include "cmd/commands.h"

/* The length of the directory part of an absolute path's first len bytes
 * (all before its last slash; 0 for a name in "/"). */
static size_t directory_length(const char *path, size_t len)
{
    while (len > 0 && path[len - 1] != '/') len--;
    return len > 0 ? len - 1 : 0;
}

/* The places looked in, in order (the contract is in commands.h):
 * $TOKENTAP_PROBE alone when it is set; else beside the binary (the build
 * tree), then in lib/tokentap/ beside the binary's directory (the layout
 * of `make install`: PREFIX/bin/tokentap, PREFIX/lib/tokentap/). */
int tt_probe_library_path(char *out, size_t cap)
{
    const char *env = getenv("TOKENTAP_PROBE");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(out, cap, "libtokentap-probe.so (/proc/self/exe unreadable)");
        return -1;
    }
    /* /proc/self/exe is absolute, without symbolic links or "..", so the
     * binary's directory and that directory's parent are plain prefixes */
    int bin_len = (int)directory_length(self, (size_t)n);
    int prefix_len = (int)directory_length(self, (size_t)bin_len);
    char beside[4200], installed[4200];
    snprintf(beside, sizeof beside, "%.*s/libtokentap-probe.so", bin_len, self);
    snprintf(installed, sizeof installed, "%.*s/lib/tokentap/libtokentap-probe.so", prefix_len, self);
    const char *found = access(beside, R_OK) == 0 ? beside : access(installed, R_OK) == 0 ? installed : NULL;
    if (found && (size_t)snprintf(out, cap, "%s", found) < cap) return 0;
    snprintf(out, cap, "%s or %s", beside, installed);
    return -1;
}

char *tt_run_preload_value(const char *probe)
{
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(probe) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(n);
    if (!v) return NULL;
    if (old && *old) snprintf(v, n, "%s:%s", probe, old);
    else snprintf(v, n, "%s", probe);
    return v;
}

void tt_run_print_command(FILE *out, char **argv)
{
    for (int i = 0; argv[i]; i++) fprintf(out, "%s%s", i ? " " : "", argv[i]);
}

void tt_run_exec(char **cmd_argv, const char *preload, const char *ring_dir, uint32_t ring_kb, bool stamp_tsc)
{
    char kb[32];
    snprintf(kb, sizeof kb, "%u", ring_kb);
    if (setenv("LD_PRELOAD", preload, 1) < 0 || setenv(TT_PROBE_DIR_ENV, ring_dir, 1) < 0 ||
        (ring_kb && setenv(TT_PROBE_RING_ENV, kb, 1) < 0) ||
        (stamp_tsc ? setenv(TT_PROBE_CLOCK_ENV, "tsc", 1) : unsetenv(TT_PROBE_CLOCK_ENV)) < 0) {
        fprintf(stderr, "tokentap run: cannot set the environment: %s\n", strerror(errno));
        _exit(126);
    }
    execvp(cmd_argv[0], cmd_argv);
    int e = errno;
    fprintf(stderr, "tokentap run: cannot run %s: %s\n", cmd_argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}
