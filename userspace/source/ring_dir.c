/* ring_dir.c - the probe's ring directory for `tokentap run` (ring_dir.h). */
#include "source/ring_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"

/* A spare's first bytes allocated and zeroed when it is made: its header
 * and the first 2 MiB page; the collector does the rest ahead of the
 * producers as they go (probe_source.c). */
#define SPARE_ALLOCATED (2u << 20)

/* Mount a private tmpfs with huge pages on the fresh directory dir, unless
 * the user said TOKENTAP_HUGE_RINGS=0. within_size: a file gets 2 MiB
 * pages only where its size covers them (a ring is sized before it is
 * mapped; the small files beside it stay small). The mount's root takes
 * the directory's place: mode 0700, owned by this process's user, like
 * mkdtemp's. */
static bool mount_huge(const char *dir)
{
    const char *v = getenv(TT_HUGE_RINGS_ENV);
    if (v && strcmp(v, "0") == 0) return false;
    return mount("tokentap", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,huge=within_size") == 0;
}

int tt_ring_dir_make(tt_ring_dir *d)
{
    const char *base = "/dev/shm";
    if (access(base, W_OK | X_OK) != 0) {
        base = getenv("TMPDIR");
        if (!base || !*base) base = "/tmp";
    }
    d->huge = false;
    if ((size_t)snprintf(d->path, sizeof d->path, "%s/tokentap-run.XXXXXX", base) >= sizeof d->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!mkdtemp(d->path)) return -1;
    d->huge = mount_huge(d->path);
    char marker[sizeof d->path + 64];
    snprintf(marker, sizeof marker, "%s/%s", d->path, TT_PROBE_MARKER);
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        if (d->huge) umount2(d->path, MNT_DETACH);
        rmdir(d->path);
        errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

/* Make spare number k (path spare) through a temporary name. */
static int make_spare(const tt_ring_dir *d, const char *spare, unsigned k, uint64_t ring_bytes)
{
    char made[sizeof d->path + 64];
    snprintf(made, sizeof made, "%s/%s%u.new", d->path, TT_PROBE_SPARE_PREFIX, k);
    int fd = open(made, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    off_t len = (off_t)(TT_PROBE_HEADER_SIZE + ring_bytes);
    off_t allocated = len < (off_t)SPARE_ALLOCATED ? len : (off_t)SPARE_ALLOCATED;
    /* fallocate only reserves a tmpfs page; a write zeroes the whole (huge)
     * page around the byte written, here rather than at the producer's
     * first fault */
    static const char zero;
    int rc = ftruncate(fd, len) == 0 && fallocate(fd, 0, 0, allocated) == 0 && pwrite(fd, &zero, 1, 0) == 1 &&
                     rename(made, spare) == 0
                 ? 0
                 : -1;
    int e = errno;
    close(fd);
    if (rc < 0) {
        unlink(made);
        errno = e;
    }
    return rc;
}

int tt_ring_dir_keep_spare(tt_ring_dir *d, uint64_t ring_bytes)
{
    if (!d->huge) return 0;
    int rc = 0;
    for (unsigned k = 0; k < TT_PROBE_SPARES; k++) {
        char spare[sizeof d->path + 64];
        snprintf(spare, sizeof spare, "%s/%s%u", d->path, TT_PROBE_SPARE_PREFIX, k);
        if (access(spare, F_OK) != 0 && make_spare(d, spare, k, ring_bytes) < 0) rc = -1;
    }
    return rc;
}

void tt_ring_dir_remove(tt_ring_dir *d)
{
    DIR *dir = opendir(d->path);
    if (dir) {
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            unlinkat(dirfd(dir), e->d_name, 0);
        }
        closedir(dir);
    }
    /* Detached: a ring still mapped by a process CMD left behind keeps its
     * memory until that process unmaps it, and the mount goes then. */
    if (d->huge) umount2(d->path, MNT_DETACH);
    d->huge = false;
    rmdir(d->path);
}
