/* quantile.h - a mergeable summary of integer samples (ns) whose size does
 * not grow with their number: exact up to TT_QUANTILE_EXACT_MAX samples,
 * then a log-bucketed histogram (DDSketch-like) whose percentiles are within
 * TT_QUANTILE_REL_ERROR of the true ones (docs/metrics.md).
 *
 * Exact mode keeps every value and reports what tt_distribution of the
 * sorted values would (numpy's linear interpolation, tt_percentile_sorted;
 * mean summed in ascending order). Sketch mode keeps a zero bucket and one
 * log-bucketed histogram per sign; min, max and count stay exact, mean and
 * stddev come from exact integer sums. Whichever order samples are added
 * or summaries merged in, the result is the same, bit for bit: the mode
 * depends only on the total count, the buckets only on the values. */
#ifndef TT_QUANTILE_H
#define TT_QUANTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics/metrics.h"

#define TT_QUANTILE_EXACT_MAX 65536
#define TT_QUANTILE_REL_ERROR 0.001 /* relative error of a sketch-mode percentile */

typedef struct tt_quantile {
    size_t n;
    int64_t min, max;
    __int128 sum;                        /* of the values */
    unsigned __int128 sumsq_lo;          /* of their squares: a 192-bit sum, */
    uint64_t sumsq_hi;                   /* sumsq_hi * 2^128 + sumsq_lo */
    int64_t *values;                     /* exact mode: the values (n of cap) */
    size_t cap;
    uint64_t *pos, *neg;                 /* sketch mode: counts per bucket of v > 0, of -v for v < 0 */
    uint64_t zeros;                      /* sketch mode: values equal to 0 */
} tt_quantile;

/* An empty summary. Release with tt_quantile_free. */
void tt_quantile_init(tt_quantile *q);
void tt_quantile_free(tt_quantile *q);

/* Add one value. Returns 0, or -1 when out of memory (q unchanged). */
int tt_quantile_add(tt_quantile *q, int64_t v);
/* Add every sample of src to dst (src unchanged). Returns 0, or -1 when out
 * of memory (dst then undefined but safe to free). */
int tt_quantile_merge(tt_quantile *dst, const tt_quantile *src);

/* True once q has passed TT_QUANTILE_EXACT_MAX samples (percentiles approximate). */
bool tt_quantile_is_sketch(const tt_quantile *q);

/* The distribution of q's values (ns) at the percentiles pct[0..n_pct) into d:
 * n, mean, stddev, min, max, median, pct[]. n 0 gives a zeroed d. In exact
 * mode q's values are sorted in place. */
void tt_quantile_distribution(tt_quantile *q, const double *pct, size_t n_pct, tt_distribution *d);

/* For tests: the sketch bucket of a magnitude (>= 1) as samples are
 * counted (a table of cells), and as computed from its log; the same. */
size_t tt_quantile_bucket_of(uint64_t mag);
size_t tt_quantile_bucket_computed(uint64_t mag);

#endif
