/* clock_align: two clocks with a known offset and skew, bytes crossing
 * between them with random transit delays; the fit must hold the truth
 * inside its interval every time, its interval must be no wider than the
 * tightest round trip near the instant asked, and contradictory or
 * one-sided bounds must be said. The truth is generated here, not by
 * tokentap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "clocks/clock_align.h"

static uint64_t rng_state;

static double uniform(double a, double b)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return a + (b - a) * (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct truth {
    int64_t t0;
    double d0, skew; /* R = S + d0 + skew (S - t0) */
} truth;

static double offset_true(const truth *tr, int64_t s_t)
{
    return tr->d0 + tr->skew * (double)(s_t - tr->t0);
}

/* n exchanges over span_ns of S's clock starting at t0: a request byte
 * S -> R and its answer R -> S, each with a transit delay in [dmin, dmax];
 * returns the smallest round trip (both delays) among them. */
static double exchanges(tt_clock_align *ca, const truth *tr, int n, double span_ns, double dmin, double dmax,
                        double *rtt_first)
{
    double min_rtt = INFINITY;
    for (int i = 0; i < n; i++) {
        int64_t s_send = tr->t0 + (int64_t)(span_ns * i / (n > 1 ? n - 1 : 1));
        double up = uniform(dmin, dmax), down = uniform(dmin, dmax), think = uniform(0, 2e6);
        /* on R's clock: the request arrives, R answers after `think` */
        double r_recv = (double)s_send + offset_true(tr, s_send) + up;
        double r_send = r_recv + think;
        /* the answer reaches S: solve s + d(s) = r_send + down for s */
        double target = r_send + down;
        double s_recv = (target - tr->d0 + tr->skew * (double)tr->t0) / (1 + tr->skew);
        assert_int_equal(tt_clock_align_s_to_r(ca, s_send, (int64_t)floor(r_recv) + 1), 0);
        assert_int_equal(tt_clock_align_r_to_s(ca, (int64_t)floor(r_send), (int64_t)ceil(s_recv) + 1), 0);
        if (up + down < min_rtt) min_rtt = up + down;
        if (i == 0 && rtt_first) *rtt_first = up + down;
    }
    return min_rtt;
}

/* No skew, one host 3.7 s ahead: the interval holds the truth and is no
 * wider than the smallest round trip (plus the rounding to whole ns). */
static void test_offset_no_skew(void **state)
{
    (void)state;
    rng_state = 1;
    truth tr = {.t0 = 5000000000LL, .d0 = 3.7e9, .skew = 0};
    tt_clock_align *ca = tt_clock_align_new(tr.t0);
    double min_rtt = exchanges(ca, &tr, 200, 10e9, 20e3, 300e3, NULL);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    assert_true(f.lo_ns <= tr.d0 && tr.d0 <= f.hi_ns);
    assert_true(f.hi_ns - f.lo_ns <= min_rtt + 4);
    assert_true(f.uncertainty_ns <= min_rtt + 4);
    assert_true(f.skew_lo_ppm <= 0 && 0 <= f.skew_hi_ppm);
    assert_int_equal(f.n_lower, 200);
    assert_int_equal(f.n_upper, 200);
    tt_clock_align_free(ca);
}

/* Random offsets, skews of tens of ppm, delays from tens of us to ms: the
 * truth lies inside the interval at t0 and at instants across the span,
 * every time; the skew's interval holds the true skew. */
static void test_random_offsets_and_skews(void **state)
{
    (void)state;
    for (int trial = 0; trial < 200; trial++) {
        rng_state = 1000 + (uint64_t)trial;
        truth tr = {.t0 = (int64_t)uniform(1e9, 1e13), .d0 = uniform(-1e12, 1e12), .skew = uniform(-80e-6, 80e-6)};
        tt_clock_align *ca = tt_clock_align_new(tr.t0);
        double span = uniform(1e9, 3600e9), dmin = uniform(5e3, 50e3), dmax = dmin + uniform(10e3, 3e6);
        double rtt_first = 0;
        exchanges(ca, &tr, 50 + trial % 200, span, dmin, dmax, &rtt_first);
        tt_clock_fit f;
        tt_clock_align_fit(ca, &f);
        assert_int_equal(f.status, TT_CLOCK_FIT_OK);
        assert_true(f.lo_ns - 2 <= tr.d0 && tr.d0 <= f.hi_ns + 2);
        /* the interval at t0 is no wider than the round trip made there */
        assert_true(f.hi_ns - f.lo_ns <= rtt_first + 4);
        assert_true(f.skew_lo_ppm - 1e-3 <= tr.skew * 1e6 && tr.skew * 1e6 <= f.skew_hi_ppm + 1e-3);
        for (int k = 1; k <= 4; k++) {
            int64_t t = tr.t0 + (int64_t)(span * k / 4);
            double lo, hi, d = tt_clock_align_offset_at(ca, &f, t, &lo, &hi);
            double want = offset_true(&tr, t);
            assert_true(lo - 2 <= want && want <= hi + 2);
            assert_true(lo - 2 <= d && d <= hi + 2);
        }
        tt_clock_align_free(ca);
    }
}

/* A long recording with skew: a fit without skew would be off by
 * skew * span at the end; this one tracks it. */
static void test_skew_tracked(void **state)
{
    (void)state;
    rng_state = 7;
    truth tr = {.t0 = 1000000000LL, .d0 = -2.5e6, .skew = 40e-6};
    tt_clock_align *ca = tt_clock_align_new(tr.t0);
    exchanges(ca, &tr, 500, 3600e9, 30e3, 120e3, NULL); /* an hour: 144 ms of drift */
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    assert_true(fabs(f.skew_ppm - 40) < 0.2);
    int64_t end = tr.t0 + (int64_t)3600e9;
    double lo, hi, d = tt_clock_align_offset_at(ca, &f, end, &lo, &hi);
    assert_true(fabs(d - offset_true(&tr, end)) < 300e3);
    assert_true(hi - lo < 300e3);
    tt_clock_align_free(ca);
}

/* A byte that arrives before it left (a wrong match, a middlebox): said. */
static void test_contradiction(void **state)
{
    (void)state;
    rng_state = 3;
    truth tr = {.t0 = 1000000000LL, .d0 = 1e6, .skew = 0};
    tt_clock_align *ca = tt_clock_align_new(tr.t0);
    exchanges(ca, &tr, 50, 1e9, 20e3, 100e3, NULL);
    /* R received a byte 5 ms before S sent it, on the true offset */
    int64_t s_send = tr.t0 + 500000000LL;
    assert_int_equal(tt_clock_align_s_to_r(ca, s_send, s_send + (int64_t)tr.d0 - 5000000), 0);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_CONTRADICTION);
    assert_true(f.worst_violation_ns > 1e6);
    tt_clock_align_free(ca);
}

/* Bounds from one direction, or none: no interval. */
static void test_one_sided_and_none(void **state)
{
    (void)state;
    tt_clock_align *ca = tt_clock_align_new(0);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_NONE);
    assert_int_equal(tt_clock_align_r_to_s(ca, 1000, 500), 0);
    assert_int_equal(tt_clock_align_r_to_s(ca, 3000, 2000), 0);
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_ONE_SIDED);
    assert_true(f.offset_ns == 1000 && f.lo_ns == 1000 && isinf(f.hi_ns) && isinf(f.uncertainty_ns));
    tt_clock_align_free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_no_skew),
        cmocka_unit_test(test_random_offsets_and_skews),
        cmocka_unit_test(test_skew_tracked),
        cmocka_unit_test(test_contradiction),
        cmocka_unit_test(test_one_sided_and_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
