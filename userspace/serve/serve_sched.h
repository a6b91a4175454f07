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

typedef enum tt_dist_kind { TT_DIST_FIXED = 0, TT_DIST_UNIFORM } tt_dist_kind;

typedef struct tt_dist {
    tt_dist_kind kind;
    uint64_t a_ns, b_ns; /* FIXED: a; UNIFORM: [a, b] */
} tt_dist;

/* Parse "X" (fixed milliseconds, fractions allowed) or "uniform:A:B"
 * (milliseconds, A <= B). Values must be finite, >= 0 and at most one hour.
 * Returns 0, or -1 with a reason in err. */
int tt_dist_parse(const char *text, tt_dist *out, char *err, size_t errlen);
/* Draw one delay in nanoseconds. FIXED draws nothing from r. */
uint64_t tt_dist_sample(const tt_dist *d, tt_prng *r);
/* Write the distribution as text ("20ms", "uniform:5:10ms") into buf. */
const char *tt_dist_format(const tt_dist *d, char *buf, size_t buflen);

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
