/* Metrics: definitions of docs/metrics.md on hand-built requests, the
 * E2EL - TTFT == sum(ITL) identity, percentiles against numpy's values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

static tt_request make_request(uint64_t req_first, const uint64_t *token_ns, size_t n, int64_t usage)
{
    tt_request r;
    memset(&r, 0, sizeof r);
    r.req_first_ns = req_first;
    r.first_token_ns = r.last_token_ns = TT_NS_NONE;
    r.usage_completion_tokens = usage;
    r.events = calloc(n + 2, sizeof *r.events);
    /* a role event first, then the tokens, then a usage event */
    r.events[r.n_events++] = (tt_event_rec){.kind = TT_EV_ROLE, .dispatch_ns = req_first + 1};
    for (size_t i = 0; i < n; i++) {
        r.events[r.n_events++] = (tt_event_rec){.kind = TT_EV_TOKEN, .dispatch_ns = token_ns[i]};
        if (r.first_token_ns == TT_NS_NONE) r.first_token_ns = token_ns[i];
        r.last_token_ns = token_ns[i];
        r.token_events++;
    }
    r.events[r.n_events++] = (tt_event_rec){.kind = TT_EV_USAGE, .dispatch_ns = token_ns[n - 1] + 999};
    return r;
}

static void test_definitions(void **state)
{
    const uint64_t t[] = {1000500, 1001700, 1001900, 1004000};
    tt_request r = make_request(1000000, t, 4, -1);
    tt_req_metrics m;
    assert_int_equal(tt_req_metrics_compute(&r, &m), 0);
    assert_true(m.has_ttft && m.has_e2el && m.has_tpot);
    assert_int_equal(m.ttft_ns, 500);
    assert_int_equal(m.e2el_ns, 4000);
    assert_int_equal(m.n_itl, 3);
    assert_int_equal(m.itl_ns[0], 1200);
    assert_int_equal(m.itl_ns[1], 200);
    assert_int_equal(m.itl_ns[2], 2100);
    assert_int_equal(m.output_tokens, 4);
    assert_true(fabs(m.tpot_ns - 3500.0 / 3.0) < 1e-9);
    int64_t sum = 0;
    for (uint32_t i = 0; i < m.n_itl; i++) sum += m.itl_ns[i];
    assert_int_equal(m.e2el_ns - m.ttft_ns, sum);
    tt_req_metrics_free(&m);
    free(r.events);
}

static void test_usage_overrides_count(void **state)
{
    const uint64_t t[] = {10, 20, 30};
    tt_request r = make_request(0, t, 3, 7); /* 7 tokens in 3 events */
    tt_req_metrics m;
    tt_req_metrics_compute(&r, &m);
    assert_int_equal(m.output_tokens, 7);
    assert_int_equal(m.token_events, 3);
    assert_int_equal(m.usage_completion_tokens, 7);
    assert_true(fabs(m.tpot_ns - 20.0 / 6.0) < 1e-9);
    tt_req_metrics_free(&m);
    free(r.events);
}

static void test_single_token_has_no_tpot(void **state)
{
    const uint64_t t[] = {50};
    tt_request r = make_request(0, t, 1, -1);
    tt_req_metrics m;
    tt_req_metrics_compute(&r, &m);
    assert_true(m.has_ttft && m.has_e2el);
    assert_false(m.has_tpot);
    assert_int_equal(m.n_itl, 0);
    assert_int_equal(m.e2el_ns, m.ttft_ns);
    tt_req_metrics_free(&m);
    free(r.events);
}

static void test_incomplete_is_not_measured(void **state)
{
    const uint64_t t[] = {10, 20, 30};
    tt_request r = make_request(0, t, 3, -1);
    r.incomplete = TT_INC_GAP | TT_INC_RESPONSE_CUT;
    tt_req_metrics m;
    tt_req_metrics_compute(&r, &m);
    assert_true(m.has_ttft); /* the first token came before the loss */
    assert_false(m.has_e2el);
    assert_false(m.has_tpot);
    assert_null(m.itl_ns);
    r.incomplete = TT_INC_REQUEST_NOT_SEEN;
    tt_req_metrics_compute(&r, &m);
    assert_false(m.has_ttft);
    free(r.events);
}

static void test_percentiles_match_numpy(void **state)
{
    /* numpy.percentile([1,2,3,4,10], [0,25,50,90,99,100]) */
    const double v[] = {1, 2, 3, 4, 10};
    assert_true(fabs(tt_percentile_sorted(v, 5, 0) - 1.0) < 1e-12);
    assert_true(fabs(tt_percentile_sorted(v, 5, 25) - 2.0) < 1e-12);
    assert_true(fabs(tt_percentile_sorted(v, 5, 50) - 3.0) < 1e-12);
    assert_true(fabs(tt_percentile_sorted(v, 5, 90) - 7.6) < 1e-12);
    assert_true(fabs(tt_percentile_sorted(v, 5, 99) - 9.76) < 1e-12);
    assert_true(fabs(tt_percentile_sorted(v, 5, 100) - 10.0) < 1e-12);
    const double one[] = {42};
    assert_true(fabs(tt_percentile_sorted(one, 1, 99) - 42) < 1e-12);
    assert_true(isnan(tt_percentile_sorted(one, 0, 50)));
}

static void test_parse_percentiles(void **state)
{
    double p[TT_MAX_PERCENTILES];
    char err[128];
    assert_int_equal(tt_parse_percentiles("50,90,99", p, TT_MAX_PERCENTILES, err, sizeof err), 3);
    assert_true(p[0] == 50 && p[1] == 90 && p[2] == 99);
    assert_int_equal(tt_parse_percentiles("99.9", p, TT_MAX_PERCENTILES, err, sizeof err), 1);
    assert_int_equal(tt_parse_percentiles("50,,90", p, TT_MAX_PERCENTILES, err, sizeof err), -1);
    assert_int_equal(tt_parse_percentiles("101", p, TT_MAX_PERCENTILES, err, sizeof err), -1);
    assert_int_equal(tt_parse_percentiles("x", p, TT_MAX_PERCENTILES, err, sizeof err), -1);
    assert_int_equal(tt_parse_percentiles("", p, TT_MAX_PERCENTILES, err, sizeof err), -1);
    assert_int_equal(tt_parse_percentiles("50,", p, TT_MAX_PERCENTILES, err, sizeof err), 1);
}

static void test_summary(void **state)
{
    const uint64_t a[] = {100, 200, 300}, b[] = {1100, 1500};
    tt_request reqs[3] = {make_request(0, a, 3, -1), make_request(1000, b, 2, -1), make_request(0, a, 3, -1)};
    reqs[2].incomplete = TT_INC_GAP;
    reqs[1].resp_last_ns = 2000;
    tt_req_metrics m[3];
    for (int i = 0; i < 3; i++) tt_req_metrics_compute(&reqs[i], &m[i]);
    const double pct[] = {50, 99};
    tt_summary s;
    tt_summary_compute(reqs, m, 3, pct, 2, &s);
    assert_int_equal(s.requests, 3);
    assert_int_equal(s.complete, 2);
    assert_int_equal(s.incomplete, 1);
    assert_int_equal(s.ttft.n, 3); /* the incomplete one still has a true TTFT */
    assert_int_equal(s.e2el.n, 2);
    assert_int_equal(s.itl.n, 3);  /* 2 + 1 gaps, pooled */
    assert_true(fabs(s.itl.mean - (100 + 100 + 400) / 3.0) < 1e-9);
    assert_true(fabs(s.e2el.median - 400) < 1e-9);
    assert_int_equal(s.output_tokens, 5);
    assert_true(fabs(s.duration_s - 2000e-9) < 1e-15);
    for (int i = 0; i < 3; i++) {
        tt_req_metrics_free(&m[i]);
        free(reqs[i].events);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The summary's sort against qsort on mixed signs, ties, zeros and large
 * values, for n values (the TTFTs of n requests). */
static void check_distribution_sort(size_t n)
{
    double *w = malloc(n * sizeof *w);
    tt_request *reqs = calloc(n, sizeof *reqs);
    tt_req_metrics *m = calloc(n, sizeof *m);
    assert_non_null(w);
    assert_non_null(reqs);
    assert_non_null(m);
    unsigned seed = 12345;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t x = (int64_t)(seed >> 8) * ((seed & 1) ? 1 : -1);
        if (i % 7 == 0) x = 0;
        if (i % 11 == 0) x = 1000000000000000000ll + (int64_t)i;
        if (i % 13 == 0) x = 25;
        m[i].has_ttft = true;
        m[i].ttft_ns = x;
        w[i] = (double)x;
    }
    qsort(w, n, sizeof *w, cmp_double);
    const double pct[] = {0, 10, 90, 100};
    tt_summary s;
    tt_summary_compute(reqs, m, n, pct, 4, &s); /* the sort is internal: reach it through the TTFTs */
    const tt_distribution d = s.ttft;
    assert_int_equal(d.n, n);
    assert_true(d.min == w[0]);
    assert_true(d.max == w[n - 1]);
    assert_true(d.median == tt_percentile_sorted(w, n, 50));
    assert_true(d.pct[1] == tt_percentile_sorted(w, n, 10));
    assert_true(d.pct[2] == tt_percentile_sorted(w, n, 90));
    free(m);
    free(reqs);
    free(w);
}

/* Both ways the summary sorts: qsort below RADIX_SORT_MIN (16384), radix above. */
static void test_distribution_sort(void **state)
{
    check_distribution_sort(5000);
    check_distribution_sort(20000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_definitions),        cmocka_unit_test(test_usage_overrides_count),
        cmocka_unit_test(test_single_token_has_no_tpot), cmocka_unit_test(test_incomplete_is_not_measured),
        cmocka_unit_test(test_percentiles_match_numpy),  cmocka_unit_test(test_parse_percentiles),
        cmocka_unit_test(test_summary),            cmocka_unit_test(test_distribution_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
