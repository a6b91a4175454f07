#include "metrics/quantile.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Bucket i of a sign holds magnitudes in (gamma^(i-1), gamma^i], gamma =
 * (1 + a) / (1 - a); magnitude 1 is bucket 0 and 2^63 about bucket 21834. */
#define BUCKETS 21900

static double log_gamma(void)
{
    return log((1.0 + TT_QUANTILE_REL_ERROR) / (1.0 - TT_QUANTILE_REL_ERROR));
}

/* The bucket of a magnitude, computed: rounded up by hand and divided by
 * multiplying (ceil is a call, and a division slow, without SSE4.1). A
 * magnitude within a rounding error of a bucket's edge may land in the
 * bucket beside it, whose value is still within the relative error. */
static size_t bucket_computed(double mag)
{
    const double per_log = 1.0 / log_gamma();
    double x = log(mag) * per_log;
    if (!(x > 0)) return 0;
    if (x >= BUCKETS - 1) return BUCKETS - 1;
    size_t i = (size_t)x;
    return (double)i < x ? i + 1 : i;
}

/* bucket_computed, looked up: one is asked for every inter-token gap, and
 * its log() was most of a sample's cost. The magnitudes whose doubles share
 * an exponent and their CELL_BITS first mantissa bits make a cell, less
 * wide (a factor 1 + 2^-10) than a bucket (1.002), so a cell holds at most
 * two buckets: the one of its least double, and the next from `split` on
 * (the first double that bucket_computed puts there; the two found once,
 * when the cell is first asked, by bisecting the cell's doubles, which
 * order like their bits). Threads fill cells alike, so a cell is written
 * with atomics and read once marked ready. Magnitudes are below 2^64,
 * whose doubles may round up to 2^64: exponents 0 to 64. */
#define CELL_BITS 10
#define CELL_SHIFT (52 - CELL_BITS)
#define CELLS (65u << CELL_BITS)
#define CELL_READY 0x80000000u

static struct bucket_cell {
    _Atomic uint32_t first; /* its bucket | CELL_READY; 0 until filled */
    _Atomic uint64_t split; /* the bits of the first double of bucket first + 1; UINT64_MAX: none */
} bucket_cells[CELLS];

static double double_of(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static size_t bucket_of(uint64_t mag)
{
    double d = (double)mag;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint64_t cell_index = (bits >> CELL_SHIFT) - ((uint64_t)1023 << CELL_BITS); /* mag >= 1: exponent >= 1023 */
    struct bucket_cell *cell = &bucket_cells[cell_index];
    uint32_t first = atomic_load_explicit(&cell->first, memory_order_acquire);
    if (first & CELL_READY) {
        uint64_t split = atomic_load_explicit(&cell->split, memory_order_relaxed);
        return (first & ~CELL_READY) + (bits >= split);
    }
    uint64_t lo = (bits >> CELL_SHIFT) << CELL_SHIFT, hi = lo | (((uint64_t)1 << CELL_SHIFT) - 1);
    size_t b_lo = bucket_computed(double_of(lo));
    uint64_t split = UINT64_MAX;
    if (bucket_computed(double_of(hi)) != b_lo) {
        while (lo < hi) { /* the least bits in (lo, hi] whose bucket is past b_lo */
            uint64_t mid = lo + (hi - lo) / 2;
            if (bucket_computed(double_of(mid)) != b_lo) hi = mid;
            else lo = mid + 1;
        }
        split = lo;
    }
    atomic_store_explicit(&cell->split, split, memory_order_relaxed);
    atomic_store_explicit(&cell->first, (uint32_t)b_lo | CELL_READY, memory_order_release);
    return b_lo + (bits >= split);
}

size_t tt_quantile_bucket_of(uint64_t mag)
{
    return mag ? bucket_of(mag) : 0;
}

size_t tt_quantile_bucket_computed(uint64_t mag)
{
    return mag ? bucket_computed((double)mag) : 0;
}

/* The value that stands for bucket i: within TT_QUANTILE_REL_ERROR of every
 * magnitude the bucket holds. */
static double bucket_value(size_t i)
{
    double g = exp(log_gamma());
    return 2.0 * exp((double)i * log_gamma()) / (g + 1.0);
}

void tt_quantile_init(tt_quantile *q)
{
    memset(q, 0, sizeof *q);
}

void tt_quantile_free(tt_quantile *q)
{
    free(q->values);
    free(q->pos);
    free(q->neg);
    memset(q, 0, sizeof *q);
}

bool tt_quantile_is_sketch(const tt_quantile *q)
{
    return q->pos != NULL;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* Count v in the buckets (sketch mode; neg exists when v < 0). */
static void bucket_add(tt_quantile *q, int64_t v, uint64_t count)
{
    if (v == 0) q->zeros += count;
    else if (v > 0) q->pos[bucket_of(magnitude(v))] += count;
    else q->neg[bucket_of(magnitude(v))] += count;
}

static int ensure_neg(tt_quantile *q)
{
    if (!q->neg) q->neg = calloc(BUCKETS, sizeof *q->neg);
    return q->neg ? 0 : -1;
}

/* Move the exact values into buckets. */
static int to_sketch(tt_quantile *q)
{
    if (q->pos) return 0;
    q->pos = calloc(BUCKETS, sizeof *q->pos);
    if (!q->pos) return -1;
    for (size_t i = 0; i < q->n; i++) {
        if (q->values[i] < 0 && ensure_neg(q) < 0) return -1;
        bucket_add(q, q->values[i], 1);
    }
    free(q->values);
    q->values = NULL;
    q->cap = 0;
    return 0;
}

/* The exact parts every mode keeps: count, min, max, sums. */
static void account(tt_quantile *q, size_t n, int64_t min, int64_t max, __int128 sum, unsigned __int128 sq_lo,
                    uint64_t sq_hi)
{
    if (!n) return;
    if (!q->n || min < q->min) q->min = min;
    if (!q->n || max > q->max) q->max = max;
    q->n += n;
    q->sum += sum;
    q->sumsq_lo += sq_lo;
    q->sumsq_hi += sq_hi + (q->sumsq_lo < sq_lo);
}

int tt_quantile_add(tt_quantile *q, int64_t v)
{
    if (!q->pos && q->n + 1 > TT_QUANTILE_EXACT_MAX && to_sketch(q) < 0) return -1;
    if (q->pos) {
        if (v < 0 && ensure_neg(q) < 0) return -1;
        bucket_add(q, v, 1);
    } else {
        if (q->n == q->cap) {
            size_t cap = q->cap ? q->cap * 2 : 256;
            int64_t *nv = realloc(q->values, cap * sizeof *nv);
            if (!nv) return -1;
            q->values = nv;
            q->cap = cap;
        }
        q->values[q->n] = v;
    }
    uint64_t m = magnitude(v);
    account(q, 1, v, v, v, (unsigned __int128)m * m, 0);
    return 0;
}

int tt_quantile_merge(tt_quantile *dst, const tt_quantile *src)
{
    if (!src->n) return 0;
    if (!dst->pos && !src->pos && dst->n + src->n <= TT_QUANTILE_EXACT_MAX) {
        if (dst->n + src->n > dst->cap) {
            size_t cap = dst->n + src->n;
            int64_t *nv = realloc(dst->values, cap * sizeof *nv);
            if (!nv) return -1;
            dst->values = nv;
            dst->cap = cap;
        }
        memcpy(dst->values + dst->n, src->values, src->n * sizeof *src->values);
    } else {
        if (to_sketch(dst) < 0) return -1;
        if ((src->neg || (!src->pos && src->min < 0)) && ensure_neg(dst) < 0) return -1;
        if (src->pos) {
            dst->zeros += src->zeros;
            for (size_t i = 0; i < BUCKETS; i++) dst->pos[i] += src->pos[i];
            if (src->neg)
                for (size_t i = 0; i < BUCKETS; i++) dst->neg[i] += src->neg[i];
        } else {
            for (size_t i = 0; i < src->n; i++) bucket_add(dst, src->values[i], 1);
        }
    }
    account(dst, src->n, src->min, src->max, src->sum, src->sumsq_lo, src->sumsq_hi);
    return 0;
}

/* The k-th smallest sample (0-based) as the sketch knows it. */
static double sketch_rank(const tt_quantile *q, size_t k)
{
    if (k == 0) return (double)q->min;
    if (k >= q->n - 1) return (double)q->max;
    double v = 0;
    size_t seen = 0;
    bool found = false;
    if (q->neg)
        for (size_t i = BUCKETS; i-- > 0 && !found;) {
            seen += q->neg[i];
            if (seen > k) v = -bucket_value(i), found = true;
        }
    if (!found) {
        seen += q->zeros;
        if (seen > k) v = 0, found = true;
    }
    for (size_t i = 0; i < BUCKETS && !found; i++) {
        seen += q->pos[i];
        if (seen > k) v = bucket_value(i), found = true;
    }
    if (v < (double)q->min) v = (double)q->min;
    if (v > (double)q->max) v = (double)q->max;
    return v;
}

/* tt_percentile_sorted's interpolation over the sketch's ranks. */
static double sketch_percentile(const tt_quantile *q, double p)
{
    if (p <= 0) return (double)q->min;
    if (p >= 100) return (double)q->max;
    double rank = p / 100.0 * (double)(q->n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    double vlo = sketch_rank(q, lo), vhi = hi == lo ? vlo : sketch_rank(q, hi);
    return vlo + (vhi - vlo) * (rank - (double)lo);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void tt_quantile_distribution(tt_quantile *q, const double *pct, size_t n_pct, tt_distribution *d)
{
    memset(d, 0, sizeof *d);
    if (n_pct > TT_MAX_PERCENTILES) n_pct = TT_MAX_PERCENTILES;
    if (!q->n) return;
    if (!q->pos) {
        qsort(q->values, q->n, sizeof *q->values, cmp_i64);
        double *v = malloc(q->n * sizeof *v);
        if (!v) abort();
        for (size_t i = 0; i < q->n; i++) v[i] = (double)q->values[i];
        tt_distribution_of_sorted(v, q->n, pct, n_pct, d);
        free(v);
        return;
    }
    d->n = q->n;
    long double n = (long double)q->n, s1 = (long double)q->sum;
    long double s2 = (long double)q->sumsq_hi * 0x1p128L + (long double)q->sumsq_lo;
    long double var = (s2 - s1 * s1 / n) / n;
    d->mean = (double)(s1 / n);
    d->stddev = var > 0 ? (double)sqrtl(var) : 0;
    d->min = (double)q->min;
    d->max = (double)q->max;
    d->median = sketch_percentile(q, 50);
    for (size_t i = 0; i < n_pct; i++) d->pct[i] = sketch_percentile(q, pct[i]);
}
