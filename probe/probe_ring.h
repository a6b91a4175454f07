/* probe_ring.h - the producer's side of a probe ring (probe_abi.h): space
 * reservation, commit, and the drop counters, apart from the hooks so that
 * a test can drive exact interleavings on a ring of its own
 * (tests/unit/test_probe_rings.c). Header-only: the preloaded library
 * (the probe/ C files) must not depend on anything but libc.
 *
 * Any thread, or a signal handler interrupting one, may call these at any
 * moment; none waits. Only the clock, atomics and plain stores are used. */
#ifndef TT_PROBE_RING_H
#define TT_PROBE_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "probe_abi.h"

enum tt_producer_state {
    TT_PRODUCER_NONE = 0, /* no ring yet: the next record makes it */
    TT_PRODUCER_CREATING, /* a thread (or an interrupted one) is making it */
    TT_PRODUCER_READY,    /* records go in */
    TT_PRODUCER_FAILED    /* it could not be made: records are lost, uncounted */
};

/* One process's view of its ring. Zero-initialised = no ring. */
typedef struct tt_probe_producer {
    struct tt_probe_ring *head;
    uint8_t *data;
    uint64_t capacity, mask;
    uint64_t seen_consumed; /* the collector's consumed_pos as last read: stale is merely conservative */
    uint64_t reserved;      /* bytes reserved so far (the header's published_pos follows it lazily) */
    uint64_t commit_key;    /* the ring's commit_key */
    int state;              /* enum tt_producer_state */
    /* records dropped while the ring was not ready (being made by another
     * thread), moved into the ring's counters once it is */
    uint64_t early_drop_records, early_drop_bytes;
} tt_probe_producer;

#define TT_PRODUCER_RESERVE_TRIES 64


/* The ring size in bytes a probe takes from TOKENTAP_PROBE_RING_KB's text
 * (NULL, empty or not a positive number: the default), clamped to
 * [TT_PROBE_MIN_RING, TT_PROBE_MAX_RING] and rounded up to a power of two.
 * The probe sizes its ring with it, and `tokentap run` learns from it the
 * size its processes' rings get. */
static inline uint64_t tt_probe_ring_bytes(const char *kb)
{
    uint64_t bytes = TT_PROBE_DEFAULT_RING;
    if (kb && *kb) {
        char *end;
        unsigned long long v = strtoull(kb, &end, 10);
        if (!*end && v) bytes = (uint64_t)v << 10;
    }
    if (bytes < TT_PROBE_MIN_RING) bytes = TT_PROBE_MIN_RING;
    if (bytes > TT_PROBE_MAX_RING) bytes = TT_PROBE_MAX_RING;
    uint64_t pow2 = TT_PROBE_MIN_RING;
    while (pow2 < bytes) pow2 <<= 1;
    return pow2;
}
/* The ring (header mapped at head, `capacity` bytes at data, a power of
 * two) is the producer's; state is not changed (see tt_producer_publish). */
static inline void tt_producer_attach(tt_probe_producer *p, struct tt_probe_ring *head, uint8_t *data,
                                      uint64_t capacity)
{
    p->head = head;
    p->data = data;
    p->capacity = capacity;
    p->mask = capacity - 1;
    p->seen_consumed = __atomic_load_n(&head->consumed_pos, __ATOMIC_ACQUIRE);
    p->reserved = __atomic_load_n(&head->published_pos, __ATOMIC_ACQUIRE);
    p->commit_key = head->commit_key;
}

/* Raise the header's published_pos to at least `pos` (a position every
 * reservation below which was made); never lowers it, whatever the order
 * in which threads get here. */
static inline void tt_producer_publish_pos(tt_probe_producer *p, uint64_t pos)
{
    uint64_t seen = __atomic_load_n(&p->head->published_pos, __ATOMIC_RELAXED);
    while (seen < pos && !__atomic_compare_exchange_n(&p->head->published_pos, &seen, pos, true, __ATOMIC_RELEASE,
                                                      __ATOMIC_RELAXED)) {
    }
}

/* The exact position for readers: everything this process reserved (its
 * exit handler calls it; a reader then knows where the records end). */
static inline void tt_producer_publish_all(tt_probe_producer *p)
{
    tt_producer_publish_pos(p, __atomic_load_n(&p->reserved, __ATOMIC_ACQUIRE));
}

/* Move the drops counted while no ring was ready into the ring's counters. */
static inline void tt_producer_flush_early(tt_probe_producer *p)
{
    uint64_t recs = __atomic_exchange_n(&p->early_drop_records, 0, __ATOMIC_SEQ_CST);
    uint64_t bytes = __atomic_exchange_n(&p->early_drop_bytes, 0, __ATOMIC_SEQ_CST);
    if (recs) __atomic_fetch_add(&p->head->drop_records, recs, __ATOMIC_RELAXED);
    if (bytes) __atomic_fetch_add(&p->head->drop_bytes, bytes, __ATOMIC_RELAXED);
}

/* The attached ring is ready: records go in from now on, and every drop
 * noted before is counted in it. */
static inline void tt_producer_publish(tt_probe_producer *p)
{
    __atomic_store_n(&p->state, TT_PRODUCER_READY, __ATOMIC_SEQ_CST);
    tt_producer_flush_early(p);
}

/* A drop seen while the ring was not ready: noted aside, then the state
 * read again. Whichever way this races with tt_producer_publish, the
 * count reaches the ring's header: either the publisher's flush comes
 * after the note, or this read sees READY and flushes (all four steps
 * sequentially consistent). Part of tt_producer_drop, apart for tests. */
static inline void tt_producer_drop_early(tt_probe_producer *p, uint64_t data_bytes)
{
    __atomic_fetch_add(&p->early_drop_records, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&p->early_drop_bytes, data_bytes, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->state, __ATOMIC_SEQ_CST) == TT_PRODUCER_READY) tt_producer_flush_early(p);
}

/* A record of `data_bytes` did not go in (ring full, or not ready yet
 * because another thread is making it): count it in the ring's header,
 * at once or once the ring is ready. */
static inline void tt_producer_drop(tt_probe_producer *p, uint64_t data_bytes)
{
    if (__builtin_expect(__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == TT_PRODUCER_READY, 1)) {
        __atomic_fetch_add(&p->head->drop_records, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&p->head->drop_bytes, data_bytes, __ATOMIC_RELAXED);
        return;
    }
    tt_producer_drop_early(p, data_bytes);
}

/* Reserve `need` bytes (a multiple of 8, at least TT_PROBE_REC_MIN, at most
 * half the ring) in a READY ring. Returns the record's absolute position and
 * its head in *out, or UINT64_MAX when it does not fit now (the caller
 * counts the drop). A tail too short for the record is skipped: a PAD
 * record fills it when a head fits there, else it is skipped implicitly
 * (the reader knows the rule). */
static inline uint64_t tt_producer_reserve(tt_probe_producer *p, uint32_t need, struct tt_probe_rec **out)
{
    struct tt_probe_ring *h = p->head;
    uint64_t cap = p->capacity;
    uint64_t pos = __atomic_load_n(&p->reserved, __ATOMIC_RELAXED);
    uint64_t tail = __atomic_load_n(&p->seen_consumed, __ATOMIC_RELAXED);
    for (int tries = 0; tries < TT_PRODUCER_RESERVE_TRIES; tries++) {
        uint64_t off = pos & p->mask;
        uint64_t room_to_end = cap - off;
        uint64_t skip = room_to_end < need ? room_to_end : 0;
        if (__builtin_expect(pos + skip + need - tail > cap, 0)) {
            uint64_t fresh = __atomic_load_n(&h->consumed_pos, __ATOMIC_ACQUIRE);
            if (fresh == tail) return UINT64_MAX;
            tail = fresh;
            __atomic_store_n(&p->seen_consumed, fresh, __ATOMIC_RELAXED);
            continue;
        }
        uint64_t end = pos + skip + need;
        if (__atomic_compare_exchange_n(&p->reserved, &pos, end, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            /* the header's line only once in TT_PROBE_PUBLISH_BYTES: the
             * common path stays off its page */
            if (__builtin_expect((end ^ pos) >= TT_PROBE_PUBLISH_BYTES, 0)) tt_producer_publish_pos(p, end);
            if (skip >= TT_PROBE_REC_MIN) {
                struct tt_probe_rec *pad = (struct tt_probe_rec *)(p->data + off);
                pad->size = (uint32_t)skip;
                pad->kind = TT_PROBE_KIND_PAD;
                pad->len = 0;
                pad->total_len = 0;
                __atomic_store_n(&pad->commit, (pos + 1) ^ p->commit_key, __ATOMIC_RELEASE);
            }
            *out = (struct tt_probe_rec *)(p->data + ((pos + skip) & p->mask));
            return pos + skip;
        }
    }
    return UINT64_MAX;
}

/* The record at pos (filled) is complete: the collector may read it. */
static inline void tt_producer_commit(const tt_probe_producer *p, struct tt_probe_rec *r, uint64_t pos)
{
    __atomic_store_n(&r->commit, (pos + 1) ^ p->commit_key, __ATOMIC_RELEASE);
}

#define TT_PRODUCER_PREFETCH_BYTES 256u

/* Ask the cache for the ring lines the next record will most likely be
 * written to (those after `end`, the position just past the record made),
 * in a state fit for writing: the next call then stores into lines already
 * fetched from the collector's cache instead of waiting for them. A hint
 * only: it changes nothing the collector sees. */
static inline void tt_producer_prefetch(const tt_probe_producer *p, uint64_t end)
{
    uint64_t off = end & p->mask & ~63ull;
    for (uint32_t b = 0; b < TT_PRODUCER_PREFETCH_BYTES && off + b < p->capacity; b += 64) {
#if defined(__x86_64__)
        /* prefetchw (a no-op on the few x86-64 without it); the compiler
         * drops a write prefetch it was not told the CPU has */
        __asm__ volatile("prefetchw %0" : : "m"(p->data[off + b]));
#else
        __builtin_prefetch(p->data + off + b, 1, 3);
#endif
    }
}

#endif
