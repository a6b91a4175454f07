/* clock_align.h - the offset between two hosts' clocks, from the traffic
 * between them (issue 12; docs/clocks.md once the multi-recording analysis
 * uses it).
 *
 * Recording R (the reference) and recording S each stamp bytes on their
 * own CLOCK_MONOTONIC. The offset d(t) = d0 + skew * (t - t0), t on S's
 * clock, puts an instant of S on R's clock (t + d(t)). A byte cannot arrive
 * before it left:
 *   - a byte R sent at r_send and S received at s_recv: s_recv + d >= r_send,
 *     a lower bound d >= r_send - s_recv at t = s_recv;
 *   - a byte S sent at s_send and R received at r_recv: s_send + d <= r_recv,
 *     an upper bound d <= r_recv - s_send at t = s_send.
 * Every pair of bounds cuts the plane (d0, skew); what is left is every
 * offset and skew the traffic allows. The fit is the skew that leaves the
 * widest band between the bounds (the one most consistent with all of
 * them), and the middle of that band; the uncertainty at an instant is how
 * far the offset could be from the fit there, over everything allowed. No
 * room at all means the bounds contradict each other (a middlebox, a wrong
 * match, a clock stepped during the recording): said, never averaged away. */
#ifndef TT_CLOCK_ALIGN_H
#define TT_CLOCK_ALIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Skews searched: clocks of real hosts drift by tens of ppm. */
#define TT_CLOCK_MAX_SKEW_PPM 1000.0

typedef enum tt_clock_fit_status {
    TT_CLOCK_FIT_OK = 0,        /* bounds from both directions, consistent */
    TT_CLOCK_FIT_ONE_SIDED,     /* bounds from one direction only: no interval */
    TT_CLOCK_FIT_NONE,          /* no bound at all */
    TT_CLOCK_FIT_CONTRADICTION, /* no offset and skew satisfy every bound */
} tt_clock_fit_status;

typedef struct tt_clock_fit {
    tt_clock_fit_status status;
    int64_t t0_ns;              /* the instant (S's clock) d0 is given at */
    double offset_ns;           /* d0: add to an instant of S at t0 to put it on R's clock */
    double skew_ppm;            /* the fit's skew, parts per million (d grows by skew*1e-6 ns per ns) */
    double skew_lo_ppm, skew_hi_ppm; /* the skews the bounds allow */
    double lo_ns, hi_ns;        /* the offsets at t0 the bounds allow */
    double uncertainty_ns;      /* the farthest of lo_ns, hi_ns from offset_ns */
    double worst_violation_ns;  /* CONTRADICTION: how far the best fit still breaks a bound */
    size_t n_lower, n_upper;    /* bounds used, each direction */
} tt_clock_fit;

typedef struct tt_clock_align tt_clock_align;

/* An empty set of bounds, offsets given at t0 (S's clock); NULL when out of memory. */
tt_clock_align *tt_clock_align_new(int64_t t0_ns);
void tt_clock_align_free(tt_clock_align *ca);

/* A byte the reference sent at r_send_ns and S received at s_recv_ns. -1 when out of memory. */
int tt_clock_align_r_to_s(tt_clock_align *ca, int64_t r_send_ns, int64_t s_recv_ns);
/* A byte S sent at s_send_ns and the reference received at r_recv_ns. -1 when out of memory. */
int tt_clock_align_s_to_r(tt_clock_align *ca, int64_t s_send_ns, int64_t r_recv_ns);

/* Fit the offset and skew to the bounds added so far. 0, or -1 when out of
 * memory (fit then says nothing). O(bounds log bounds). */
int tt_clock_align_fit(tt_clock_align *ca, tt_clock_fit *fit);

/* The fit's offset at t_ns (S's clock), and the interval of offsets the
 * bounds allow there (lo, hi; both NULL-able). fit must come from ca's
 * tt_clock_align_fit with status OK. */
double tt_clock_align_offset_at(const tt_clock_align *ca, const tt_clock_fit *fit, int64_t t_ns, double *lo_ns,
                                double *hi_ns);

#endif
