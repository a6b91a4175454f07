/* tsc_clock.h - the x86 time-stamp counter read as CLOCK_MONOTONIC.
 *
 * Under `tokentap run` the probe stamps its records with the TSC (one
 * rdtsc instead of a vDSO clock_gettime, whose pages cost a TLB walk each
 * after every system call on a machine without PCID: docs/probe.md). The
 * collector turns the ticks into its own CLOCK_MONOTONIC nanoseconds with
 * (TSC, CLOCK_MONOTONIC) pairs it samples itself as it polls: between two
 * pairs by interpolation along them, before the first or after the last
 * along the slope of all the pairs kept (the run's whole span, so the
 * pairs' own jitter of tens of ns weighs little). One converter serves every process: the TSC is one clock
 * for the whole machine where tt_tsc_usable says so. */
#ifndef TT_TSC_CLOCK_H
#define TT_TSC_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tt_tsc_clock tt_tsc_clock;

/* Pairs closer than this to the last one kept are not taken by
 * tt_tsc_clock_sample (tt_tsc_clock_add keeps them). */
#define TT_TSC_MIN_SPACING_NS 5000000ull

/* Whether this machine's TSC can stand in for CLOCK_MONOTONIC: x86-64, an
 * invariant TSC (constant_tsc and nonstop_tsc in /proc/cpuinfo), and a
 * kernel clocksource read from it (tsc, kvm-clock or Hyper-V's TSC page:
 * a kernel that found its TSCs unsynchronized has switched away). */
bool tt_tsc_usable(void);

/* A converter. With calibrate, it takes two pairs about 2 ms apart now
 * (the slope for the first records); without, it has none (tests add
 * their own). NULL when out of memory, or calibrate on a machine without
 * a TSC to read (not x86-64). */
tt_tsc_clock *tt_tsc_clock_new(bool calibrate);
void tt_tsc_clock_free(tt_tsc_clock *c);

/* Take a pair now, unless the last one kept is less than
 * TT_TSC_MIN_SPACING_NS old: the reading with the narrowest TSC window
 * around clock_gettime of a few tries. */
void tt_tsc_clock_sample(tt_tsc_clock *c);

/* A tick read before now: unless a pair at or after it is kept, take one
 * now (whatever the spacing), so that it converts between two pairs, not
 * along a slope beyond the newest. The collector calls it before
 * converting a record's ticks: a record read from a ring was stamped
 * before it was read. */
void tt_tsc_clock_cover(tt_tsc_clock *c, uint64_t tsc);

/* Keep the pair (tsc ticks at mono_ns). A pair that does not come after
 * the last one in both clocks is ignored. Beyond a few thousand pairs,
 * every other one is forgotten: the pairs span the whole run, thinner
 * as it grows. */
void tt_tsc_clock_add(tt_tsc_clock *c, uint64_t tsc, uint64_t mono_ns);

/* tsc as CLOCK_MONOTONIC ns (0 below zero); 0 with fewer than two pairs. */
uint64_t tt_tsc_clock_to_mono(const tt_tsc_clock *c, uint64_t tsc);

#endif
