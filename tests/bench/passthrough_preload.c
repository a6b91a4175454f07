/* passthrough_preload.c - the least any LD_PRELOAD recorder costs: a
 * library whose read and write only call the next ones (bound once, at
 * load), preloaded into build/tools/ttprobe_bench by tests/bench/probe.sh.
 * Its added cost per call is the floor under the probe's on the machine
 * the bench runs on: the call through the library and back, and whatever
 * touching the library's code and data after each system call costs
 * there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

static ssize_t (*next_read)(int, void *, size_t);
static ssize_t (*next_write)(int, const void *, size_t);

__attribute__((constructor)) static void bind_next(void)
{
    next_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    next_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
}

ssize_t read(int fd, void *buf, size_t n)
{
    return next_read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    return next_write(fd, buf, n);
}
