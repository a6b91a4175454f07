/* ring_dir.h - the directory `tokentap run` gives the LD_PRELOAD probe for
 * its rings (probe/probe_abi.h: TOKENTAP_PROBE_DIR and the marker file).
 *
 * A fresh mode-0700 directory in /dev/shm (else $TMPDIR, else /tmp). With
 * TOKENTAP_HUGE_RINGS=1, where the process may mount (root), a private
 * tmpfs is mounted on it with huge pages (huge=within_size): a 16 MiB ring
 * is then eight 2 MiB pages, and the traced program takes a handful of
 * page faults in its ring's first lap instead of one per 4 KiB, but the
 * first of them, in its first TCP socket(), allocates and zeroes 2 MiB:
 * milliseconds on a fresh machine, on the program's first request, so it
 * is not the default (docs/probe.md, "Cost"). When the mount is refused
 * (not root, a container without the capability, a kernel without tmpfs
 * huge pages), the plain directory is used. */
#ifndef TT_RING_DIR_H
#define TT_RING_DIR_H

#include <stdbool.h>

#define TT_HUGE_RINGS_ENV "TOKENTAP_HUGE_RINGS"

typedef struct tt_ring_dir {
    char path[4096];
    bool huge; /* a tmpfs with huge pages is mounted on path */
} tt_ring_dir;

/* Make the directory and its marker file. 0 on success; -1 with errno set
 * (path then names what could not be made). */
int tt_ring_dir_make(tt_ring_dir *d);

/* Delete every file in the directory, unmount its tmpfs (when mounted) and
 * remove it. Safe to call once after a successful tt_ring_dir_make. */
void tt_ring_dir_remove(tt_ring_dir *d);

#endif
