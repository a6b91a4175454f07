#include "test_rng.h"
/* ttclockfit - the cost of putting a recording on another's clock
 * (userspace/clocks/): N requests between two hosts with a known offset
 * and skew, K token events each (K + 2 bounds a request, as
 * clock_bounds.c takes them), then the fit and the uncertainty at every
 * request's instant (what analyze DIR DIR computes for its report).
 * Prints one JSON line: bounds, seconds to add them, to fit, to query,
 * whether the truth was inside every interval.
 *
 * usage: ttclockfit N_REQUESTS TOKENS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clocks/clock_align.h"
#include "test_rng.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static double uniform(double a, double b)
{
    return a + (b - a) * (double)(tt_xorshift64(&rng) >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ttclockfit N_REQUESTS TOKENS\n");
        return 2;
    }
    long n = atol(argv[1]), k = atol(argv[2]);
    const double d0 = -7e9, skew = 30e-6; /* R = S + d0 + skew (S - t0) */
    const int64_t t0 = 1000000000000LL;
    tt_clock_align *ca = tt_clock_align_new(t0);
    if (!ca || n <= 0 || k <= 0) return 1;
    double t_add = now();
    int64_t *at = malloc((size_t)n * sizeof *at);
    if (!at) return 1;
    for (long i = 0; i < n; i++) {
        int64_t s_send = t0 + (int64_t)i * 36000000LL; /* an hour over 100,000 requests */
        at[i] = s_send;
        double r = (double)s_send + d0 + skew * (double)(s_send - t0);
        int rc = tt_clock_align_s_to_r(ca, s_send, (int64_t)ceil(r + uniform(20e3, 400e3)));
        rc |= tt_clock_align_s_to_r(ca, s_send + 1000, (int64_t)ceil(r + 1000 + uniform(20e3, 400e3)));
        for (long e = 0; e < k; e++) {
            double r_send = r + 20e6 + (double)e * 5e6;
            double s_recv = (r_send + uniform(20e3, 400e3) - d0 + skew * (double)t0) / (1 + skew);
            rc |= tt_clock_align_r_to_s(ca, (int64_t)floor(r_send), (int64_t)ceil(s_recv));
        }
        if (rc) return 1;
    }
    t_add = now() - t_add;
    double t_fit = now();
    tt_clock_fit f;
    if (tt_clock_align_fit(ca, &f) < 0 || f.status != TT_CLOCK_FIT_OK) return 1;
    t_fit = now() - t_fit;
    double t_query = now(), worst = 0;
    long outside = 0;
    for (long i = 0; i < n; i++) {
        double lo, hi;
        tt_clock_align_offset_at(ca, &f, at[i], &lo, &hi);
        double truth = d0 + skew * (double)(at[i] - t0);
        if (truth < lo - 2 || truth > hi + 2) outside++;
        if (hi - lo > worst) worst = hi - lo;
    }
    t_query = now() - t_query;
    printf("{\"requests\": %ld, \"bounds\": %zu, \"add_s\": %.3f, \"fit_s\": %.3f, \"query_s\": %.3f, "
           "\"truth_outside\": %ld, \"widest_interval_us\": %.1f, \"skew_ppm\": %.3f, \"offset_error_us\": %.3f}\n",
           n, f.n_lower + f.n_upper, t_add, t_fit, t_query, outside, worst / 1e3, f.skew_ppm,
           (f.offset_ns - d0) / 1e3);
    free(at);
    tt_clock_align_free(ca);
    return outside ? 1 : 0;
}
