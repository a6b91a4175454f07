/* serve_sched.h - when tokentap serve emits: delay distributions drawn from a
 * seeded generator (so a run is repeatable with --seed), and a min-heap of
 * connections ordered by their next due instant. */
#ifndef TT_SERVE_SCHED_H
#define TT_SERVE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64: small, fast, and good enough for jitter. */
typedef struct tt_prng { uint64_t state; } tt_prng;

/* Seed a generator for one stream from the run's seed and a stream number. */
void tt_prng_seed(tt_prng *r, uint64_t seed, uint64_t stream);
uint64_t tt_prng_next(tt_prng *r);
/* Uniform in [0, 1). */
double tt_prng_unit(tt_prng *r);

typedef enum tt_dist_kind { TT_DIST_FIXED = 0, TT_DIST_UNIFORM, TT_DIST_NORMAL, TT_DIST_REPLAY } tt_dist_kind;

typedef struct tt_dist {
    tt_dist_kind kind;
    uint64_t a_ns, b_ns; /* FIXED: a; UNIFORM: [a, b]; NORMAL: mean a, standard deviation b */
    uint64_t *values;    /* REPLAY: the file's delays (owned; tt_dist_free) */
    size_t n_values;
} tt_dist;

/* Parse "X" (fixed milliseconds, fractions allowed), "uniform:A:B"
 * (milliseconds, A <= B), "normal:MEAN:SD" (milliseconds; draws below 0 are
 * redrawn: the normal truncated at 0; at most one hour) or "replay:FILE" (one
 * delay in milliseconds per line; blank lines and lines starting '#' are
 * skipped; at least one, at most 10,000,000 values). Values must be finite,
 * >= 0 and at most one hour. Returns 0, or -1 with a reason in err. */
int tt_dist_parse(const char *text, tt_dist *out, char *err, size_t errlen);
/* Free what tt_dist_parse allocated (REPLAY's values); d becomes FIXED 0. */
void tt_dist_free(tt_dist *d);
/* Draw one delay in nanoseconds. FIXED and REPLAY draw nothing from r;
 * REPLAY gives values[*cursor % n_values] and advances *cursor (a NULL
 * cursor reads the first value), so the caller decides what one cycle spans. */
uint64_t tt_dist_draw(const tt_dist *d, tt_prng *r, uint64_t *cursor);
/* tt_dist_draw without a cursor. */
uint64_t tt_dist_sample(const tt_dist *d, tt_prng *r);
/* Write the distribution as text ("20ms", "uniform:5:10ms", "normal:20:3ms",
 * "replay:12 values") into buf. */
const char *tt_dist_format(const tt_dist *d, char *buf, size_t buflen);

/* --split-at: the cut points of one event of frame_len bytes. offsets are
 * byte offsets into the event (any order, repeats allowed); those not
 * strictly inside (0, frame_len) are dropped. Writes the sorted, distinct
 * cuts to cuts (room for n_offsets) and returns how many; the event then
 * goes out in (returned + 1) parts. */
size_t tt_split_cuts(const uint32_t *offsets, size_t n_offsets, size_t frame_len, uint32_t *cuts);

/* --coalesce N: whether the events held so far (held >= 1, the newest
 * included) go out now: when N are held, or at the stream's last event.
 * N <= 1 means one write per event. */
bool tt_coalesce_due(uint32_t n, size_t held, bool last_event);

/* Min-heap of items keyed by a due instant. Each item remembers its slot
 * (*slot_of(item)), SIZE_MAX when not in the heap, so it can be removed or
 * re-keyed in O(log n). */
typedef struct tt_heap_item {
    uint64_t due_ns;
    size_t slot;
} tt_heap_item;

typedef struct tt_heap {
    tt_heap_item **items;
    size_t n, cap;
} tt_heap;

/* Insert, or move when already present, item with key due_ns. -1 on OOM. */
int tt_heap_set(tt_heap *h, tt_heap_item *item, uint64_t due_ns);
void tt_heap_remove(tt_heap *h, tt_heap_item *item);
/* The earliest item, NULL when empty. */
tt_heap_item *tt_heap_top(const tt_heap *h);
void tt_heap_free(tt_heap *h);

#endif
