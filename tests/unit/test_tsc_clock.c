/* tsc_clock: TSC ticks to CLOCK_MONOTONIC. Synthetic clocks first, whose
 * truth is a formula the converter never sees: pairs taken from it with
 * jitter, then every tick converted must land within the jitter of the
 * formula, between pairs and beyond them, through a rate change (NTP
 * slewing) and through the thinning of a full table; then the machine's
 * own TSC against clock_gettime read around it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clocks/tsc_clock.h"
#include "core/util.h"
#include "test_rng.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* A synthetic machine: ticks at `hz` from mono `origin`, CLOCK_MONOTONIC
 * running `ppm_after` faster from tick `bend` on (0 ppm before). */
typedef struct synth {
    double hz;
    uint64_t origin;
    uint64_t bend;
    double ppm_after;
} synth;

static uint64_t truth(const synth *m, uint64_t tsc)
{
    double ns = (double)tsc / m->hz * 1e9;
    if (tsc > m->bend) ns += ((double)(tsc - m->bend) / m->hz * 1e9) * m->ppm_after * 1e-6;
    return m->origin + (uint64_t)ns;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    return tt_xorshift64(&rng);
}

/* Pairs every `every_ns` over [0, span_ns], each with mono jitter of at most `jitter_ns`. */
static void add_pairs(tt_tsc_clock *c, const synth *m, uint64_t span_ns, uint64_t every_ns, unsigned jitter_ns)
{
    for (uint64_t t = 0; t <= span_ns; t += every_ns) {
        uint64_t tsc = (uint64_t)((double)t * m->hz / 1e9);
        uint64_t j = jitter_ns ? next_rand() % (2 * jitter_ns + 1) : jitter_ns;
        tt_tsc_clock_add(c, tsc, truth(m, tsc) + j - jitter_ns);
    }
}

static long long error_at(const tt_tsc_clock *c, const synth *m, uint64_t tsc)
{
    return (long long)tt_tsc_clock_to_mono(c, tsc) - (long long)truth(m, tsc);
}

static void test_fewer_than_two_pairs(void **state)
{
    (void)state;
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    assert_non_null(c);
    assert_int_equal(tt_tsc_clock_to_mono(c, 12345), 0);
    tt_tsc_clock_add(c, 1000, 5000);
    assert_int_equal(tt_tsc_clock_to_mono(c, 1000), 0);
    /* out of order in either clock: ignored */
    tt_tsc_clock_add(c, 900, 6000);
    tt_tsc_clock_add(c, 1100, 5000);
    assert_int_equal(tt_tsc_clock_to_mono(c, 1000), 0);
    tt_tsc_clock_add(c, 2000, 6000);
    assert_int_equal(tt_tsc_clock_to_mono(c, 1500), 5500);
    assert_int_equal(tt_tsc_clock_to_mono(c, 2500), 6500); /* beyond: along the slope */
    assert_int_equal(tt_tsc_clock_to_mono(c, 500), 4500);
    assert_int_equal(tt_tsc_clock_to_mono(c, 0), 4000);
    tt_tsc_clock_free(c);
}

static void test_exact_pairs_interpolate_exactly(void **state)
{
    (void)state;
    synth m = {.hz = 2.1e9, .origin = 7000000000ull, .bend = UINT64_MAX};
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    add_pairs(c, &m, 10000000000ull, 5000000, 0);
    for (int i = 0; i < 100000; i++) {
        uint64_t tsc = next_rand() % (uint64_t)(10 * m.hz);
        long long e = error_at(c, &m, tsc);
        assert_true(e >= -2 && e <= 2);
    }
    tt_tsc_clock_free(c);
}

/* Jittered pairs: between pairs within the jitter; beyond the last pair
 * by 50 ms (a record read after the last sample) and before the first by
 * 1 s, within the jitter plus the slope's error over that distance. */
static void test_jittered_pairs(void **state)
{
    (void)state;
    synth m = {.hz = 2.4e9, .origin = 123456789000ull, .bend = UINT64_MAX};
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    add_pairs(c, &m, 20000000000ull, 5000000, 30);
    long long worst = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t tsc = next_rand() % (uint64_t)(20 * m.hz);
        long long e = llabs(error_at(c, &m, tsc));
        if (e > worst) worst = e;
    }
    assert_true(worst <= 31);
    uint64_t last = (uint64_t)(20 * m.hz);
    assert_true(llabs(error_at(c, &m, last + (uint64_t)(0.05 * m.hz))) <= 40);
    tt_tsc_clock_free(c);
    /* pairs from 1 s on: a tick 1 s before the first */
    c = tt_tsc_clock_new(false);
    for (uint64_t t = 1000000000ull; t <= 20000000000ull; t += 5000000) {
        uint64_t tsc = (uint64_t)((double)t * m.hz / 1e9);
        tt_tsc_clock_add(c, tsc, truth(&m, tsc) + next_rand() % 61 - 30);
    }
    assert_true(llabs(error_at(c, &m, 0)) <= 200);
    tt_tsc_clock_free(c);
}

/* CLOCK_MONOTONIC slews 200 ppm faster from 10 s on: converted along the
 * pairs, ticks stay within a few ns of it on both sides of the bend, and
 * 20 ms past the last pair the recent slope (not the run's average) is used. */
static void test_rate_change(void **state)
{
    (void)state;
    synth m = {.hz = 3.0e9, .origin = 5000000000ull, .bend = (uint64_t)(10 * 3.0e9), .ppm_after = 200};
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    add_pairs(c, &m, 20000000000ull, 5000000, 0);
    for (int i = 0; i < 100000; i++) {
        uint64_t tsc = next_rand() % (uint64_t)(20 * m.hz);
        assert_true(llabs(error_at(c, &m, tsc)) <= 260); /* the chord across the bend: 200 ppm of 5 ms / 4 */
    }
    uint64_t beyond = (uint64_t)(20.02 * m.hz);
    assert_true(llabs(error_at(c, &m, beyond)) <= 5);
    tt_tsc_clock_free(c);
}

/* A run long enough to fill the table many times over: pairs every 5 ms
 * for 4 hours (2.9 million). The table thins itself: its first and last
 * pairs stay, and a tick anywhere in the run converts within the jitter
 * of a pair plus the chord's error of a now wide interval. */
static void test_thinning_keeps_the_whole_run(void **state)
{
    (void)state;
    synth m = {.hz = 2.0e9, .origin = 9000000000ull, .bend = (uint64_t)(3600 * 2.0e9), .ppm_after = 3};
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    add_pairs(c, &m, 4ull * 3600 * 1000000000ull, 5000000, 20);
    assert_true(llabs(error_at(c, &m, 1)) <= 21);
    for (int i = 0; i < 100000; i++) {
        uint64_t tsc = next_rand() % (uint64_t)(4 * 3600 * m.hz);
        /* pairs now ~3.5 s apart: a 3 ppm bend inside one costs < 3 us */
        assert_true(llabs(error_at(c, &m, tsc)) <= 3000);
    }
    tt_tsc_clock_free(c);
}

/* Ticks far outside any real span: clamped, never wrapped. */
static void test_extremes(void **state)
{
    (void)state;
    tt_tsc_clock *c = tt_tsc_clock_new(false);
    tt_tsc_clock_add(c, 1000000, 1000); /* a microsecond a tick */
    tt_tsc_clock_add(c, 2000000, 1000001000);
    assert_int_equal(tt_tsc_clock_to_mono(c, 0), 0);
    assert_int_equal(tt_tsc_clock_to_mono(c, UINT64_MAX), UINT64_MAX);
    tt_tsc_clock_free(c);
}

/* The machine's own TSC: a tick read between two clock_gettime calls
 * converts to an instant between them (a few us of slack for the pairs'
 * jitter and for being preempted), once covered by a pair taken after it:
 * over the converter's first 50 ms, and after 300 ms without a pair (the
 * 2 ms of the first two pairs make a slope too rough to reach that far). */
static void test_this_machine(void **state)
{
    (void)state;
#if defined(__x86_64__)
    if (!tt_tsc_usable()) skip();
    tt_tsc_clock *c = tt_tsc_clock_new(true);
    assert_non_null(c);
    int outside = 0;
    for (int i = 0; i < 51; i++) {
        struct timespec gap = {0, i < 50 ? 1000000 : 300000000};
        nanosleep(&gap, NULL);
        uint64_t lo = tt_clock_ns(CLOCK_MONOTONIC), tsc = __rdtsc(), hi = tt_clock_ns(CLOCK_MONOTONIC);
        tt_tsc_clock_cover(c, tsc);
        uint64_t got = tt_tsc_clock_to_mono(c, tsc);
        if (got + 5000 < lo || got > hi + 5000) outside++;
    }
    assert_true(outside <= 2); /* a preempted read now and then, on a loaded machine */
    /* covered: a pair at or after the tick, not one per call */
    uint64_t tsc = __rdtsc();
    tt_tsc_clock_cover(c, tsc);
    uint64_t once = tt_tsc_clock_to_mono(c, tsc);
    tt_tsc_clock_cover(c, tsc);
    assert_int_equal(tt_tsc_clock_to_mono(c, tsc), once);
    tt_tsc_clock_free(c);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fewer_than_two_pairs),
        cmocka_unit_test(test_exact_pairs_interpolate_exactly),
        cmocka_unit_test(test_jittered_pairs),
        cmocka_unit_test(test_rate_change),
        cmocka_unit_test(test_thinning_keeps_the_whole_run),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
