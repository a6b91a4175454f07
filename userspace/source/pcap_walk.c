/* pcap_walk.c - one walk of a capture file for the readers of its shares
 * (pcap_walk.h). */
#include "pcap_walk.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "source/packet_parse.h"

/* Chunks walked and not yet gone through by every reader: a reader may
 * fall this many chunks behind the walk before the walker waits for it. */
#define WALK_SLOTS 16
/* How many chunks past the one it needs a walker walks while it holds
 * the walk: the other readers then seldom find the chunk they need being
 * walked. */
#define WALK_AHEAD 4
#define WALK_CHUNK (256u << 10)

typedef struct walk_list {
    tt_walk_record *recs;
    size_t n, cap;
} walk_list;

typedef struct walk_slot {
    atomic_uint readers_left; /* readers yet to go through it; 0: free to walk again */
    uint8_t *buf;             /* file bytes [start, start + len) */
    size_t cap, len;
    uint64_t start, end; /* end: the offset past its last record */
    uint64_t first_index;
    bool last;
    bool own_buf;    /* buf is its own allocation, not its part of the walk's block */
    bool read_short; /* a read came up short or failed (read_errno; 0: the file got shorter) */
    int read_errno;
    walk_list *lists; /* one per share */
} walk_slot;

struct tt_pcap_walk {
    int fd;
    uint64_t size;
    unsigned shares;
    size_t chunk_bytes;
    tt_walk_format format;
    const tt_capture_clock *clock; /* the caller's, read as the walk goes */
    /* The front of the walk: written only by the reader holding `walking`. */
    atomic_flag walking;
    _Atomic uint64_t walked; /* chunks walked and published */
    bool ended;              /* the last chunk is walked */
    uint64_t pos;            /* the next record's (block's) file offset */
    tt_pcapng_map ng;
    tt_walk_totals totals;
    walk_slot slots[WALK_SLOTS];
    /* The slots' buffers, chunk_bytes each, in one block: on huge pages
     * where the system gives them (a fault per 2 MiB, not per 4 KiB: the
     * walk writes the whole ring in its first lap). NULL: each slot
     * allocates its own. */
    uint8_t *block;
    size_t block_len;
    bool block_mapped; /* mmap'd (munmap), else malloc'd */
};

#define HUGE_PAGE (2u << 20)

/* The slots' block of len bytes: mapped on a 2 MiB boundary and marked
 * for huge pages when it spans one, else from malloc; NULL when memory
 * runs out. */
static uint8_t *block_new(size_t len, bool *mapped)
{
    *mapped = false;
    if (len >= HUGE_PAGE) {
        size_t span = len + HUGE_PAGE;
        uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            uintptr_t start = ((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
            size_t head = start - (uintptr_t)m, tail = span - head - len;
            if (head) munmap(m, head);
            if (tail) munmap((uint8_t *)start + len, tail);
            (void)madvise((void *)start, len, MADV_HUGEPAGE); /* a hint: small pages where refused */
            *mapped = true;
            return (uint8_t *)start;
        }
    }
    return malloc(len);
}

/* Slot k's buffer back to its part of the block (its own let go). */
static void slot_use_block(tt_pcap_walk *w, unsigned k)
{
    walk_slot *slot = &w->slots[k];
    if (slot->own_buf) free(slot->buf);
    slot->own_buf = !w->block;
    slot->buf = w->block ? w->block + (size_t)k * w->chunk_bytes : NULL;
    slot->cap = w->block ? w->chunk_bytes : 0;
}

tt_pcap_walk *tt_pcap_walk_new(int fd, uint64_t file_size, const tt_walk_format *format, uint64_t data_start,
                               const tt_capture_clock *clock, unsigned shares, size_t chunk_bytes)
{
    if (shares < 2 || (format->pcapng && !format->ng)) return NULL;
    tt_pcap_walk *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->shares = shares;
    for (unsigned k = 0; k < WALK_SLOTS; k++) {
        w->slots[k].lists = calloc(shares, sizeof *w->slots[k].lists);
        if (!w->slots[k].lists) {
            tt_pcap_walk_free(w);
            return NULL;
        }
    }
    w->fd = fd;
    w->size = file_size;
    w->chunk_bytes = chunk_bytes ? chunk_bytes : WALK_CHUNK;
    if (w->chunk_bytes <= SIZE_MAX / WALK_SLOTS) {
        w->block_len = WALK_SLOTS * w->chunk_bytes;
        w->block = block_new(w->block_len, &w->block_mapped);
    }
    for (unsigned k = 0; k < WALK_SLOTS; k++) slot_use_block(w, k);
    w->format = *format;
    w->format.ng = NULL;
    if (format->pcapng) w->ng = *format->ng;
    w->clock = clock;
    atomic_flag_clear(&w->walking);
    atomic_init(&w->walked, 0);
    w->pos = data_start;
    return w;
}

/* Room for one more record in l: false when memory runs out. */
static __attribute__((noinline)) bool list_grow(walk_list *l)
{
    size_t cap = l->cap ? 2 * l->cap : 1024;
    tt_walk_record *recs = realloc(l->recs, cap * sizeof *recs);
    if (!recs) return false;
    l->recs = recs;
    l->cap = cap;
    return true;
}

/* Append rec to l (inline: once a record; the lists keep their room from
 * chunk to chunk, so they seldom grow). */
static inline bool list_push(walk_list *l, const tt_walk_record *rec)
{
    if (l->n == l->cap && !list_grow(l)) return false;
    l->recs[l->n++] = *rec;
    return true;
}

/* The walk stops at this slot: err holds why, or is set here from why. */
static void walk_fail(tt_pcap_walk *w, walk_slot *slot, const char *why)
{
    w->totals.failed = slot->last = true;
    if (why) snprintf(w->totals.err, sizeof w->totals.err, "%s", why);
}

/* Make the slot hold the file's bytes [slot->start, slot->start + want)
 * (it holds the first slot->len of them). False when memory runs out (the
 * walk failed) or a read fails or comes up short (slot->read_short set:
 * the records read whole are still walked, then slot_read_failed). */
static bool slot_read(tt_pcap_walk *w, walk_slot *slot, size_t want)
{
    if (want > slot->cap) { /* a record larger than a chunk: a buffer of its own */
        uint8_t *buf = slot->own_buf ? realloc(slot->buf, want) : malloc(want);
        if (!buf) {
            walk_fail(w, slot, "out of memory");
            return false;
        }
        if (!slot->own_buf && slot->len) memcpy(buf, slot->buf, slot->len);
        slot->buf = buf;
        slot->cap = want;
        slot->own_buf = true;
    }
    while (slot->len < want) {
        ssize_t n = pread(w->fd, slot->buf + slot->len, want - slot->len, (off_t)(slot->start + slot->len));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            slot->read_short = true;
            slot->read_errno = n < 0 ? errno : 0;
            return false;
        }
        slot->len += (size_t)n;
    }
    return true;
}

/* The walk stops where a read of the slot failed, after the packets
 * walked: as the reader of a whole file says it. */
static void slot_read_failed(tt_pcap_walk *w, walk_slot *slot)
{
    snprintf(w->totals.err, sizeof w->totals.err, "cannot read the capture after %llu packets: %s",
             (unsigned long long)w->totals.packets,
             slot->read_errno ? strerror(slot->read_errno) : "it got shorter while read");
    walk_fail(w, slot, NULL);
}

/* Count the frame at slot->buf + off into the totals and list it for its
 * owner. False when memory ran out (the walk failed). */
static inline __attribute__((always_inline)) bool walk_take(tt_pcap_walk *w, walk_slot *slot, size_t off,
                                                            uint64_t wall_ns, uint32_t caplen, uint32_t len)
{
    tt_walk_totals *t = &w->totals;
    uint64_t ts = tt_capture_instant(w->clock, wall_ns);
    t->packets++;
    t->bytes += len;
    t->snapped += caplen < len;
    if (t->packets == 1 || ts < t->first_ns) t->first_ns = ts;
    if (ts > t->last_ns) t->last_ns = ts;
    tt_tcp_segment seg;
    int parsed;
    unsigned owner =
        tt_packet_owner(w->format.linktype, slot->buf + off, caplen, len, t->packets, w->shares, &seg, &parsed);
    tt_walk_record rec = {.ts_ns = ts,
                          .data_off = (uint32_t)off,
                          .caplen = caplen,
                          .len = len,
                          .index = (uint32_t)(t->packets - slot->first_index)};
    if (list_push(&slot->lists[owner], &rec)) return true;
    walk_fail(w, slot, "out of memory");
    return false;
}

/* The classic pcap records whole in the slot's bytes from *off on (in
 * the file, then, and no larger than it) whose owner tt_packet_quick_owner
 * reads and whose list has room, counted into the totals and listed; *off
 * is left at the first record that is not one of those, for walk_take. No
 * call on the way (a call in the loop would take the registers its values
 * live in: a load and a store each, every record of the file; the totals'
 * fields are locals here too); swapped and mapped (the clock maps another
 * host's) are constants where the caller passes them so. */
static inline __attribute__((always_inline)) void walk_classic_whole(tt_pcap_walk *w, walk_slot *slot, size_t *off,
                                                                     bool swapped, bool mapped)
{
    tt_walk_totals *t = &w->totals;
    const bool nano = w->format.nano;
    const uint8_t *buf = slot->buf;
    const size_t len = slot->len;
    walk_list *const lists = slot->lists;
    const unsigned shares = w->shares;
    const int linktype = w->format.linktype;
    const tt_capture_clock *clock = w->clock;
    const uint64_t offset_ns = clock->has_offset ? (uint64_t)clock->offset_ns : 0;
    /* the packet's index in the chunk (the file's packets before the chunk's first: before) */
    const uint64_t before = slot->first_index;
    uint32_t index = (uint32_t)(t->packets - before);
    uint64_t bytes = t->bytes, snapped = t->snapped, first_ns = t->first_ns, last_ns = t->last_ns;
    size_t at = *off;
    while (at + TT_RECORD_HEADER <= len) {
        tt_classic_record rec = tt_classic_record_read(buf + at, swapped, nano);
        size_t past = at + TT_RECORD_HEADER + rec.caplen;
        if (past > len || rec.caplen > TT_CLASSIC_MAX_RECORD) break;
        unsigned owner = 0; /* set by the quick owner that returned true (-O1 cannot tell) */
        const uint8_t *frame = buf + at + TT_RECORD_HEADER;
        if (!tt_packet_quick_owner(linktype, frame, rec.caplen, shares, &owner)) break;
        walk_list *l = &lists[owner];
        if (l->n == l->cap) break;
        uint64_t ts = mapped ? tt_capture_instant(clock, rec.wall_ns) : rec.wall_ns - offset_ns;
        index++;
        bytes += rec.len;
        snapped += rec.caplen < rec.len;
        if (before + index == 1 || ts < first_ns) first_ns = ts;
        if (ts > last_ns) last_ns = ts;
        l->recs[l->n++] = (tt_walk_record){.ts_ns = ts,
                                           .data_off = (uint32_t)(at + TT_RECORD_HEADER),
                                           .caplen = rec.caplen,
                                           .len = rec.len,
                                           .index = index};
        at = past;
    }
    t->packets = before + index;
    t->bytes = bytes;
    t->snapped = snapped;
    t->first_ns = first_ns;
    t->last_ns = last_ns;
    *off = at;
}

/* walk_classic_whole for the slot's format and clock, the common case
 * (native byte order, no clock map) compiled apart. */
static __attribute__((noinline)) void walk_classic_fast(tt_pcap_walk *w, walk_slot *slot, size_t *off)
{
    bool swapped = w->format.swapped, mapped = w->clock->has_map;
    if (!swapped && !mapped)
        walk_classic_whole(w, slot, off, false, false);
    else
        walk_classic_whole(w, slot, off, swapped, mapped);
}

/* The classic pcap records that start in the slot's chunk: the first
 * whole (however large), then those that fit. */
static void walk_classic(tt_pcap_walk *w, walk_slot *slot)
{
    tt_walk_totals *t = &w->totals;
    size_t off = 0;
    for (;;) {
        walk_classic_fast(w, slot, &off);
        /* one record as the fast loop cannot take it: the file's end,
         * damage, a record past the chunk, an owner that takes a parse, a
         * list to grow */
        uint64_t pos = slot->start + off;
        if (pos >= w->size) {
            slot->last = true;
            break;
        }
        if (tt_classic_header_cut(w->size, pos, t->packets, t->err, sizeof t->err)) {
            walk_fail(w, slot, NULL);
            break;
        }
        if (off + TT_RECORD_HEADER > slot->len) {
            if (off || !slot_read(w, slot, TT_RECORD_HEADER)) break;
        }
        tt_classic_record rec = tt_classic_record_read(slot->buf + off, w->format.swapped, w->format.nano);
        if (tt_classic_record_cut(w->size, pos, rec.caplen, t->packets, t->err, sizeof t->err)) {
            walk_fail(w, slot, NULL);
            break;
        }
        size_t past = off + TT_RECORD_HEADER + rec.caplen;
        if (past > slot->len) {
            if (off || !slot_read(w, slot, past)) break;
        }
        if (!walk_take(w, slot, off + TT_RECORD_HEADER, rec.wall_ns, rec.caplen, rec.len)) break;
        off = past;
    }
    slot->end = slot->start + off;
}

/* The pcapng packets whose blocks start in the slot's chunk (the reader
 * keeps its sections and interfaces from chunk to chunk). */
static void walk_pcapng(tt_pcap_walk *w, walk_slot *slot)
{
    tt_pcapng_map *m = &w->ng;
    m->b = slot->buf;
    m->len = slot->len;
    m->pos = 0;
    m->more = w->size - (slot->start + slot->len);
    tt_pcapng_packet pkt;
    for (;;) {
        int rc = tt_pcapng_map_next(m, &pkt, w->totals.err, sizeof w->totals.err);
        if (rc == 0) {
            slot->last = true;
            break;
        }
        if (rc < 0) {
            walk_fail(w, slot, NULL);
            break;
        }
        if (rc == 2) { /* a block past the chunk: the next chunk's, unless it is the first */
            if (m->pos) break;
            if (m->need > w->size - slot->start) { /* the file ends first: the reader says how */
                m->more = 0;
                continue;
            }
            if (!slot_read(w, slot, m->need)) break;
            m->b = slot->buf;
            m->len = slot->len;
            m->more = w->size - (slot->start + slot->len);
            continue;
        }
        if (!walk_take(w, slot, (size_t)(pkt.data - slot->buf), pkt.ts_ns, pkt.caplen, pkt.len)) break;
    }
    slot->end = slot->start + m->pos;
}

/* Walk chunks from the front up to number `until`, while their slots are
 * free. The caller holds w->walking. */
static void walk_front(tt_pcap_walk *w, uint64_t until)
{
    for (uint64_t next = atomic_load_explicit(&w->walked, memory_order_relaxed); next <= until && !w->ended;
         next++) {
        walk_slot *slot = &w->slots[next % WALK_SLOTS];
        if (atomic_load_explicit(&slot->readers_left, memory_order_acquire) != 0) return; /* a reader is behind */
        for (unsigned k = 0; k < w->shares; k++) slot->lists[k].n = 0;
        slot->start = w->pos;
        slot->first_index = w->totals.packets;
        slot->last = false;
        slot->len = 0;
        slot->end = slot->start;
        if (slot->own_buf && (w->block || slot->cap > 2 * w->chunk_bytes)) /* grown for a record larger than a chunk */
            slot_use_block(w, (unsigned)(next % WALK_SLOTS));
        slot->read_short = false;
        uint64_t left = w->size > w->pos ? w->size - w->pos : 0;
        (void)slot_read(w, slot, left < w->chunk_bytes ? (size_t)left : w->chunk_bytes);
        if (!w->totals.failed) {
            if (w->format.pcapng)
                walk_pcapng(w, slot);
            else
                walk_classic(w, slot);
        }
        if (slot->read_short && !w->totals.failed) slot_read_failed(w, slot);
        w->pos = slot->end;
        w->ended = slot->last;
        atomic_store_explicit(&slot->readers_left, w->shares, memory_order_relaxed);
        atomic_store_explicit(&w->walked, next + 1, memory_order_release);
    }
}

/* Wait a little for another thread: spin first, then give up the CPU
 * (more readers than cores), then sleep (one descheduled for long). */
static void wait_a_little(unsigned round)
{
    if (round < 256) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (round < 4096) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

void tt_pcap_walk_get(tt_pcap_walk *w, unsigned share, uint64_t seq, tt_walk_view *view)
{
    for (unsigned round = 0; atomic_load_explicit(&w->walked, memory_order_acquire) <= seq; round++) {
        if (!atomic_flag_test_and_set_explicit(&w->walking, memory_order_acquire)) {
            uint64_t before = atomic_load_explicit(&w->walked, memory_order_relaxed);
            walk_front(w, seq + WALK_AHEAD);
            bool moved = atomic_load_explicit(&w->walked, memory_order_relaxed) != before;
            atomic_flag_clear_explicit(&w->walking, memory_order_release);
            if (moved) {
                round = 0;
                continue;
            }
            /* the next chunk's slot is still read by a reader far behind: wait
             * for it as for a walker (at once again, the loop spun on one core
             * until the scheduler took the CPU, twice the CPU of one reader) */
        }
        wait_a_little(round);
    }
    const walk_slot *slot = &w->slots[seq % WALK_SLOTS];
    *view = (tt_walk_view){.chunk = slot->buf,
                           .recs = slot->lists[share].recs,
                           .n = slot->lists[share].n,
                           .first_index = slot->first_index,
                           .end_off = slot->end,
                           .last = slot->last};
}

void tt_pcap_walk_put(tt_pcap_walk *w, uint64_t seq)
{
    atomic_fetch_sub_explicit(&w->slots[seq % WALK_SLOTS].readers_left, 1, memory_order_release);
}

const tt_walk_totals *tt_pcap_walk_totals(const tt_pcap_walk *w)
{
    return &w->totals;
}

void tt_pcap_walk_free(tt_pcap_walk *w)
{
    if (!w) return;
    for (unsigned k = 0; k < WALK_SLOTS; k++) {
        if (!w->slots[k].lists) continue;
        for (unsigned s = 0; s < w->shares; s++) free(w->slots[k].lists[s].recs);
        free(w->slots[k].lists);
        if (w->slots[k].own_buf) free(w->slots[k].buf);
    }
    if (w->block_mapped) munmap(w->block, w->block_len);
    else free(w->block);
    free(w);
}
