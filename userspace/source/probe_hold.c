/* probe_hold.c - the probe records held for a later delivery (probe_hold.h). */
#include "source/probe_hold.h"

#include <string.h>
#include <sys/mman.h>

#define HOLD_BLOCK (2u << 20)

/* Each entry a held_rec, then the record's bytes (size: a multiple of 8,
 * so that entries stay 8-byte aligned). */
typedef struct held_rec {
    uint32_t pid, size;
} held_rec;

struct tt_probe_hold_block {
    tt_probe_hold_block *next;
    size_t used, cap, map_len;
    _Alignas(8) uint8_t data[];
};

static tt_probe_hold_block *block_map(size_t *blocks_mapped, size_t need)
{
    size_t len = (sizeof(tt_probe_hold_block) + need + HOLD_BLOCK - 1) / HOLD_BLOCK * HOLD_BLOCK;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (len == HOLD_BLOCK) ++*blocks_mapped;
    madvise(m, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages where refused */
    tt_probe_hold_block *b = m;
    b->next = NULL;
    b->used = 0;
    b->cap = len - sizeof *b;
    b->map_len = len;
    return b;
}

/* A block with room for need bytes: a spare one when it fits, else a new
 * mapping. Spares matter in a VM: a new block's first touch zeroes 2 MiB
 * the host may first have to back, ~5 ms here (2026-12-06), during which
 * no ring is drained. */
static tt_probe_hold_block *block_new(tt_probe_hold *h, size_t need)
{
    tt_probe_hold_block *b = h->spare;
    if (b && b->cap >= need) {
        h->spare = b->next;
        b->next = NULL;
        b->used = 0;
        return b;
    }
    return block_map(&h->blocks_mapped, need);
}

/* b's records were delivered: kept as a spare when of the usual size. */
static void block_done(tt_probe_hold *h, tt_probe_hold_block *b)
{
    if (b->map_len != HOLD_BLOCK) {
        munmap(b, b->map_len);
        return;
    }
    b->next = h->spare;
    h->spare = b;
}

/* Deliver the records of the oldest held block, in the order held, and
 * let it go. */
static size_t release_oldest(tt_probe_hold *h)
{
    tt_probe_hold_block *b = h->first;
    if (!b) return 0;
    h->first = b->next;
    if (!h->first) h->last = NULL;
    h->held_bytes -= b->used;
    size_t n = 0;
    for (size_t at = 0; at < b->used; n++) {
        held_rec r;
        memcpy(&r, b->data + at, sizeof r);
        h->deliver(h->ctx, r.pid, b->data + at + sizeof r, r.size);
        at += sizeof r + r.size;
    }
    block_done(h, b);
    return n;
}

void tt_probe_hold_init(tt_probe_hold *h, tt_probe_hold_fn fn, void *ctx)
{
    memset(h, 0, sizeof *h);
    h->deliver = fn;
    h->ctx = ctx;
}

size_t tt_probe_hold_release(tt_probe_hold *h)
{
    size_t n = 0;
    while (h->first) n += release_oldest(h);
    return n;
}

void tt_probe_hold_put(tt_probe_hold *h, uint32_t pid, const void *rec, uint32_t size)
{
    size_t need = sizeof(held_rec) + size;
    /* over the cap: the oldest block goes out, not all of them, so that
     * the rings are drained again after a block's delivery, not after
     * the whole hold's (a flood fills a 16 MiB ring in tens of ms) */
    while (h->first && h->held_bytes + need > h->max_bytes) release_oldest(h);
    tt_probe_hold_block *b = h->last;
    if (!b || b->cap - b->used < need) {
        b = block_new(h, need);
        if (!b) {
            tt_probe_hold_release(h);
            h->deliver(h->ctx, pid, rec, size);
            return;
        }
        if (h->last) h->last->next = b;
        else h->first = b;
        h->last = b;
    }
    held_rec r = {pid, size};
    memcpy(b->data + b->used, &r, sizeof r);
    memcpy(b->data + b->used + sizeof r, rec, size);
    b->used += need;
    h->held_bytes += need;
}

void tt_probe_hold_spare_ahead(tt_probe_hold *h)
{
    if (!h->max_bytes || h->blocks_mapped > h->max_bytes / HOLD_BLOCK) return;
    tt_probe_hold_block *b = block_map(&h->blocks_mapped, HOLD_BLOCK - sizeof *b);
    if (!b) return;
    for (size_t at = 0; at < b->cap; at += 4096) ((volatile uint8_t *)b->data)[at] = 0;
    block_done(h, b);
}

void tt_probe_hold_free(tt_probe_hold *h)
{
    tt_probe_hold_release(h);
    while (h->spare) {
        tt_probe_hold_block *next = h->spare->next;
        munmap(h->spare, h->spare->map_len);
        h->blocks_mapped--;
        h->spare = next;
    }
}
