/* ring_dir.h - the directory `tokentap run` gives the LD_PRELOAD probe for
 * its rings (probe/probe_abi.h: TOKENTAP_PROBE_DIR and the marker file).
 *
 * A fresh mode-0700 directory in /dev/shm (else $TMPDIR, else /tmp).
 * Where the process may mount (root), a private tmpfs is mounted on it
 * with huge pages (huge=within_size), unless TOKENTAP_HUGE_RINGS=0: a
 * 16 MiB ring is then eight 2 MiB pages, and the traced program takes a
 * handful of page faults in its ring's first lap instead of one per 4 KiB
 * (each a trap to the hypervisor on a VM). The first of those pages would
 * be allocated and zeroed in the program's first TCP socket() (milliseconds
 * on a fresh machine, on its first request), so on the tmpfs the collector
 * keeps spare rings made ahead (tt_ring_dir_keep_spare), one of which a
 * probe takes instead of making its own. When the mount is refused (not root, a
 * container without the capability, a kernel without tmpfs huge pages),
 * the plain directory is used, without a spare: there the collector
 * allocates a ring's pages ahead of its producers anyway. */
#ifndef TT_RING_DIR_H
#define TT_RING_DIR_H

#include <stdbool.h>
#include <stdint.h>

#define TT_HUGE_RINGS_ENV "TOKENTAP_HUGE_RINGS"

typedef struct tt_ring_dir {
    char path[4096];
    bool huge; /* a tmpfs with huge pages is mounted on path */
} tt_ring_dir;

/* Make the directory and its marker file. 0 on success; -1 with errno set
 * (path then names what could not be made). */
int tt_ring_dir_make(tt_ring_dir *d);

/* On a huge-page tmpfs: make sure the TT_PROBE_SPARES spare ring files
 * for rings of ring_bytes (probe_abi.h) are there, making those probes
 * have taken (each with its header and first 2 MiB page allocated and
 * zeroed here). Does nothing on a plain directory. 0, or -1 with errno
 * when one could not be made (probes then make their own). */
int tt_ring_dir_keep_spare(tt_ring_dir *d, uint64_t ring_bytes);

/* Delete every file in the directory, unmount its tmpfs (when mounted) and
 * remove it. Safe to call once after a successful tt_ring_dir_make. */
void tt_ring_dir_remove(tt_ring_dir *d);

#endif
