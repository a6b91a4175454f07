/* probe_hold.h - records of the probe's rings held in memory for a later
 * delivery (tt_probe_source_defer): a deferring collector copies what it
 * drains here and hands it on in the order held, a block at a time, once
 * the hold passes its cap or the source finishes; so that `tokentap run`
 * can drain a ring quickly while the traced program runs and parse later.
 *
 * Blocks are mapped 2 MiB at a time (more for a larger record) and asked
 * to be huge pages: one page fault each, not 512 (a fault costs
 * microseconds in a VM, and the collector takes them while the traced
 * program runs); delivered blocks are kept as spares for the next ones. */
#ifndef TT_PROBE_HOLD_H
#define TT_PROBE_HOLD_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_probe_hold_block tt_probe_hold_block;

/* Where held records go: ctx, the ring's pid, the record and its length. */
typedef void (*tt_probe_hold_fn)(void *ctx, uint32_t pid, const void *rec, size_t len);

typedef struct tt_probe_hold {
    size_t max_bytes;    /* most bytes held before the oldest block is delivered (0: nothing held) */
    size_t held_bytes;
    tt_probe_hold_block *first, *last;
    tt_probe_hold_block *spare;  /* delivered blocks of the usual size, kept for the next ones held */
    size_t blocks_mapped;        /* blocks of the usual size mapped: held or spare */
    tt_probe_hold_fn deliver;
    void *ctx;
} tt_probe_hold;

/* An empty hold that delivers to fn(ctx, ...) and holds nothing until
 * max_bytes is set. */
void tt_probe_hold_init(tt_probe_hold *h, tt_probe_hold_fn fn, void *ctx);

/* Hold a copy of record rec (size bytes) of ring pid. Over max_bytes the
 * oldest blocks are delivered first; when memory runs out everything held
 * and then rec are delivered at once: nothing is lost. */
void tt_probe_hold_put(tt_probe_hold *h, uint32_t pid, const void *rec, uint32_t size);

/* Deliver every held record in the order held; how many. */
size_t tt_probe_hold_release(tt_probe_hold *h);

/* One more spare block made ahead, its pages touched now, while fewer
 * than the cap's worth (and one) are mapped: a flood later finds its
 * blocks zeroed instead of waiting for them (about 5 ms each in a VM
 * here). The caller calls it when no ring is pressing. */
void tt_probe_hold_spare_ahead(tt_probe_hold *h);

/* Deliver what is held and unmap every block. */
void tt_probe_hold_free(tt_probe_hold *h);

#endif
