/* tt_quantile (metrics/quantile.h): exact mode reports what the sorted
 * values do (tt_distribution_of_sorted, numpy's interpolation); sketch mode
 * within TT_QUANTILE_REL_ERROR of the sorted truth; the same bits whatever
 * the order of adding and merging; edge cases (empty, one value, equal
 * values, zeros, extremes, the threshold). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/quantile.h"

static const double PCT[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100};
#define N_PCT (sizeof PCT / sizeof *PCT)

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 11;
}

/* ITL-like values: mostly 5..40 ms with a tail to seconds, some zeros and
 * some negatives (a capture's clock stepping back). */
static int64_t sample(void)
{
    uint64_t r = rng();
    if (r % 97 == 0) return 0;
    if (r % 89 == 0) return -(int64_t)(r % 5000000);
    if (r % 31 == 0) return (int64_t)(r % 3000000000ull);
    return 5000000 + (int64_t)(r % 35000000);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The truth: tt_distribution_of_sorted over the sorted values. */
static void truth(const int64_t *v, size_t n, tt_distribution *d)
{
    double *s = malloc((n + 1) * sizeof *s);
    for (size_t i = 0; i < n; i++) s[i] = (double)v[i];
    qsort(s, n, sizeof *s, cmp_double);
    tt_distribution_of_sorted(s, n, PCT, N_PCT, d);
    free(s);
}

static void fill(tt_quantile *q, const int64_t *v, size_t n)
{
    tt_quantile_init(q);
    for (size_t i = 0; i < n; i++) assert_int_equal(tt_quantile_add(q, v[i]), 0);
}

static void test_exact_matches_sorted(void **state)
{
    static const size_t sizes[] = {1, 2, 3, 10, 1000, TT_QUANTILE_EXACT_MAX};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        int64_t *v = malloc(n * sizeof *v);
        rng_state = n;
        for (size_t i = 0; i < n; i++) v[i] = sample();
        tt_quantile q;
        fill(&q, v, n);
        assert_false(tt_quantile_is_sketch(&q));
        tt_distribution got, want;
        tt_quantile_distribution(&q, PCT, N_PCT, &got);
        truth(v, n, &want);
        assert_memory_equal(&got, &want, sizeof got);
        tt_quantile_free(&q);
        free(v);
    }
}

/* Each percentile within the stated relative error of the true one. */
static void test_sketch_error_bound(void **state)
{
    enum { N = 300000 };
    int64_t *v = malloc(N * sizeof *v);
    rng_state = 99;
    for (size_t i = 0; i < N; i++) v[i] = sample();
    tt_quantile q;
    fill(&q, v, N);
    assert_true(tt_quantile_is_sketch(&q));
    tt_distribution got, want;
    tt_quantile_distribution(&q, PCT, N_PCT, &got);
    truth(v, N, &want);
    assert_int_equal(got.n, N);
    assert_true(got.min == want.min);
    assert_true(got.max == want.max);
    double bound = TT_QUANTILE_REL_ERROR * (1 + 1e-9);
    for (size_t i = 0; i < N_PCT; i++) {
        double err = fabs(got.pct[i] - want.pct[i]);
        if (err > bound * fabs(want.pct[i]) + 1e-6) fail_msg("p%g: %f vs %f", PCT[i], got.pct[i], want.pct[i]);
    }
    assert_true(fabs(got.median - want.median) <= bound * fabs(want.median));
    /* mean and stddev come from exact sums */
    assert_true(fabs(got.mean - want.mean) <= 1e-9 * fabs(want.mean));
    assert_true(fabs(got.stddev - want.stddev) <= 1e-6 * want.stddev);
    tt_quantile_free(&q);
    free(v);
}

/* Merging parts in any order, or adding every value in any order, gives
 * the same distribution bit for bit: exact and sketch totals. */
static void test_merge_order(void **state)
{
    static const size_t totals[] = {5000, 300000};
    for (size_t t = 0; t < 2; t++) {
        size_t n = totals[t];
        int64_t *v = malloc(n * sizeof *v);
        rng_state = 7 + t;
        for (size_t i = 0; i < n; i++) v[i] = sample();
        /* 7 uneven parts */
        size_t cut[8] = {0, n / 50, n / 9, n / 3, n / 2, n / 2 + 1, 4 * n / 5, n};
        tt_quantile part[7];
        for (int p = 0; p < 7; p++) fill(&part[p], v + cut[p], cut[p + 1] - cut[p]);
        tt_quantile fwd, rev, tree, left, right, shuffled;
        tt_quantile_init(&fwd);
        tt_quantile_init(&rev);
        for (int p = 0; p < 7; p++) assert_int_equal(tt_quantile_merge(&fwd, &part[p]), 0);
        for (int p = 6; p >= 0; p--) assert_int_equal(tt_quantile_merge(&rev, &part[p]), 0);
        tt_quantile_init(&left);
        tt_quantile_init(&right);
        for (int p = 0; p < 7; p += 2) assert_int_equal(tt_quantile_merge(&left, &part[p]), 0);
        for (int p = 1; p < 7; p += 2) assert_int_equal(tt_quantile_merge(&right, &part[p]), 0);
        tt_quantile_init(&tree);
        assert_int_equal(tt_quantile_merge(&tree, &right), 0);
        assert_int_equal(tt_quantile_merge(&tree, &left), 0);
        /* every value added one by one, in a shuffled order */
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rng() % (i + 1);
            int64_t x = v[i];
            v[i] = v[j];
            v[j] = x;
        }
        fill(&shuffled, v, n);
        assert_int_equal(tt_quantile_is_sketch(&fwd), n > TT_QUANTILE_EXACT_MAX);
        tt_distribution a, b, c, d;
        tt_quantile_distribution(&fwd, PCT, N_PCT, &a);
        tt_quantile_distribution(&rev, PCT, N_PCT, &b);
        tt_quantile_distribution(&tree, PCT, N_PCT, &c);
        tt_quantile_distribution(&shuffled, PCT, N_PCT, &d);
        assert_int_equal(a.n, n);
        assert_memory_equal(&a, &b, sizeof a);
        assert_memory_equal(&a, &c, sizeof a);
        assert_memory_equal(&a, &d, sizeof a);
        for (int p = 0; p < 7; p++) tt_quantile_free(&part[p]);
        tt_quantile_free(&fwd);
        tt_quantile_free(&rev);
        tt_quantile_free(&tree);
        tt_quantile_free(&left);
        tt_quantile_free(&right);
        tt_quantile_free(&shuffled);
        free(v);
    }
}

static void test_edges(void **state)
{
    tt_quantile q;
    tt_distribution d, zero;
    memset(&zero, 0, sizeof zero);
    /* empty */
    tt_quantile_init(&q);
    tt_quantile_distribution(&q, PCT, N_PCT, &d);
    assert_memory_equal(&d, &zero, sizeof d);
    /* merging an empty one changes nothing */
    tt_quantile e;
    tt_quantile_init(&e);
    assert_int_equal(tt_quantile_merge(&q, &e), 0);
    assert_int_equal(q.n, 0);
    /* one value */
    assert_int_equal(tt_quantile_add(&q, 42), 0);
    tt_quantile_distribution(&q, PCT, N_PCT, &d);
    assert_int_equal(d.n, 1);
    for (size_t i = 0; i < N_PCT; i++) assert_true(d.pct[i] == 42);
    assert_true(d.mean == 42 && d.stddev == 0 && d.min == 42 && d.max == 42 && d.median == 42);
    tt_quantile_free(&q);
    /* equal values and zeros past the threshold: every percentile exact */
    static const int64_t same[] = {12345, 0, -7};
    for (size_t k = 0; k < 3; k++) {
        tt_quantile_init(&q);
        for (int i = 0; i < 100000; i++) assert_int_equal(tt_quantile_add(&q, same[k]), 0);
        assert_true(tt_quantile_is_sketch(&q));
        tt_quantile_distribution(&q, PCT, N_PCT, &d);
        for (size_t i = 0; i < N_PCT; i++) assert_true(d.pct[i] == (double)same[k]);
        assert_true(d.mean == (double)same[k] && d.stddev == 0 && d.median == (double)same[k]);
        tt_quantile_free(&q);
    }
    /* the threshold: exact through TT_QUANTILE_EXACT_MAX, a sketch past it */
    tt_quantile_init(&q);
    for (int i = 0; i < TT_QUANTILE_EXACT_MAX; i++) assert_int_equal(tt_quantile_add(&q, i), 0);
    assert_false(tt_quantile_is_sketch(&q));
    assert_int_equal(tt_quantile_add(&q, 1), 0);
    assert_true(tt_quantile_is_sketch(&q));
    tt_quantile_free(&q);
    /* extremes: no overflow of the sums, min and max exact */
    tt_quantile_init(&q);
    for (int i = 0; i < 70000; i++)
        assert_int_equal(tt_quantile_add(&q, i % 2 ? INT64_MAX : INT64_MIN), 0);
    tt_quantile_distribution(&q, PCT, N_PCT, &d);
    assert_true(d.min == (double)INT64_MIN && d.max == (double)INT64_MAX);
    assert_true(fabs(d.mean) < 1e15);
    assert_true(fabs(d.stddev - 9.223372036854775807e18) <= 1e-6 * 9.2e18);
    tt_quantile_free(&q);
}

/* The bucket a sample is counted in (a table of cells filled as asked)
 * is the one computed from its log: at every bucket's edge (a few
 * magnitudes either side), at every power of two and beside it, and at
 * random magnitudes of every size. */
static void test_bucket_table_matches_log(void **state)
{
    const double lg = log((1.0 + TT_QUANTILE_REL_ERROR) / (1.0 - TT_QUANTILE_REL_ERROR));
    for (int i = 0;; i++) {
        double edge = exp(i * lg);
        if (edge > 1.8e19) break;
        uint64_t m = (uint64_t)edge;
        for (uint64_t k = m > 3 ? m - 3 : 1; k <= m + 3; k++)
            if (tt_quantile_bucket_of(k) != tt_quantile_bucket_computed(k))
                fail_msg("magnitude %llu: %zu, computed %zu", (unsigned long long)k, tt_quantile_bucket_of(k),
                         tt_quantile_bucket_computed(k));
    }
    for (int e = 0; e < 64; e++) {
        uint64_t p = (uint64_t)1 << e;
        for (uint64_t k = p > 2 ? p - 2 : 1; k <= p + 2 && k >= p - 2; k++)
            assert_int_equal(tt_quantile_bucket_of(k), tt_quantile_bucket_computed(k));
    }
    assert_int_equal(tt_quantile_bucket_of(UINT64_MAX), tt_quantile_bucket_computed(UINT64_MAX));
    rng_state = 7;
    for (int i = 0; i < 200000; i++) {
        uint64_t k = (rng() | rng() << 53) >> (rng() % 64);
        if (k == 0) continue;
        assert_int_equal(tt_quantile_bucket_of(k), tt_quantile_bucket_computed(k));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_matches_sorted),
        cmocka_unit_test(test_sketch_error_bound),
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_bucket_table_matches_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
