/* tsc_clock.c - TSC ticks to CLOCK_MONOTONIC (tsc_clock.h). */
#include "clocks/tsc_clock.h"

#include "core/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { PAIRS_KEPT = 8192, SAMPLE_TRIES = 5 };

/* Beyond the pairs, ticks are converted along the slope of this much of
 * the pairs nearest (or all of them when they span less): long enough for
 * their jitter to weigh little, short enough to follow NTP's slewing. */
#define EXTRAPOLATION_SPAN_NS 1000000000ull

typedef struct tsc_pair {
    uint64_t tsc, mono;
} tsc_pair;

/* The pairs kept, oldest first, at least `spacing` ns apart but for the
 * last, which is always the newest pair added (a new pair too close to the
 * one before the last replaces the last). Full, every other pair is
 * forgotten and the spacing doubles: a run of any length keeps pairs
 * evenly over its whole span (one to two minutes apart after a week), so
 * a record held in a ring for long is still converted between two pairs. */
struct tt_tsc_clock {
    tsc_pair pairs[PAIRS_KEPT];
    unsigned count;
    uint64_t spacing;
};

/* Whether the space-separated word appears in line. */
static bool has_word(const char *line, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(line, word); p; p = strstr(p + 1, word))
        if ((p == line || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
            return true;
    return false;
}

bool tt_tsc_usable(void)
{
#if defined(__x86_64__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool invariant = false;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            invariant = has_word(line, "constant_tsc") && has_word(line, "nonstop_tsc");
            break;
        }
    fclose(f);
    if (!invariant) return false;
    f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return false;
    char source[64] = "";
    bool read = fgets(source, sizeof source, f) != NULL;
    fclose(f);
    if (!read) return false;
    source[strcspn(source, "\n")] = 0;
    return !strcmp(source, "tsc") || !strcmp(source, "kvm-clock") || !strcmp(source, "hyperv_clocksource_tsc_page");
#else
    return false;
#endif
}

void tt_tsc_clock_add(tt_tsc_clock *c, uint64_t tsc, uint64_t mono_ns)
{
    if (c->count) {
        const tsc_pair *last = &c->pairs[c->count - 1];
        if (tsc <= last->tsc || mono_ns <= last->mono) return;
    }
    if (c->count >= 2 && mono_ns - c->pairs[c->count - 2].mono < c->spacing) {
        c->pairs[c->count - 1] = (tsc_pair){tsc, mono_ns};
        return;
    }
    if (c->count == PAIRS_KEPT) {
        unsigned kept = 0;
        for (unsigned i = 0; i < PAIRS_KEPT - 1; i += 2) c->pairs[kept++] = c->pairs[i];
        c->pairs[kept++] = c->pairs[PAIRS_KEPT - 1];
        c->count = kept;
        uint64_t even = 2 * (c->pairs[kept - 1].mono - c->pairs[0].mono) / (kept - 1);
        c->spacing = even > 2 * c->spacing ? even : 2 * c->spacing;
    }
    c->pairs[c->count++] = (tsc_pair){tsc, mono_ns};
}

#if defined(__x86_64__)
/* One pair: CLOCK_MONOTONIC between two fenced TSC reads, stamped with
 * their middle; of SAMPLE_TRIES, the one whose reads were closest (the
 * least disturbed by an interrupt or the hypervisor). */
static bool take_pair(tsc_pair *out)
{
    uint64_t best_window = UINT64_MAX;
    for (int i = 0; i < SAMPLE_TRIES; i++) {
        struct timespec ts;
        _mm_lfence();
        uint64_t before = __rdtsc();
        _mm_lfence();
        int rc = clock_gettime(CLOCK_MONOTONIC, &ts);
        _mm_lfence();
        uint64_t after = __rdtsc();
        _mm_lfence();
        if (rc != 0 || after < before) continue;
        if (after - before < best_window) {
            best_window = after - before;
            out->tsc = before + (after - before) / 2;
            out->mono = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        }
    }
    return best_window != UINT64_MAX;
}
#endif

/* Keep a pair taken now (none where there is no TSC to read). */
static void add_pair_now(tt_tsc_clock *c)
{
#if defined(__x86_64__)
    tsc_pair p;
    if (take_pair(&p)) tt_tsc_clock_add(c, p.tsc, p.mono);
#else
    (void)c;
#endif
}

void tt_tsc_clock_sample(tt_tsc_clock *c)
{
    if (c->count && tt_clock_ns(CLOCK_MONOTONIC) - c->pairs[c->count - 1].mono < TT_TSC_MIN_SPACING_NS) return;
    add_pair_now(c);
}

void tt_tsc_clock_cover(tt_tsc_clock *c, uint64_t tsc)
{
    if (c->count && c->pairs[c->count - 1].tsc >= tsc) return;
    add_pair_now(c);
}

tt_tsc_clock *tt_tsc_clock_new(bool calibrate)
{
#if !defined(__x86_64__)
    if (calibrate) return NULL;
#endif
    tt_tsc_clock *c = calloc(1, sizeof *c);
    if (!c || !calibrate) return c;
    add_pair_now(c);
    struct timespec gap = {0, 2000000};
    while (nanosleep(&gap, &gap) != 0) {}
    add_pair_now(c);
    return c;
}

void tt_tsc_clock_free(tt_tsc_clock *c)
{
    free(c);
}

/* mono + (ticks * dm / dt), clamped to [0, UINT64_MAX]; ticks beyond
 * 2^62 either way (no real record's: a century of ticks) count as 2^62. */
static uint64_t along(uint64_t mono, int64_t ticks, uint64_t dm, uint64_t dt)
{
    const int64_t far = (int64_t)1 << 62;
    if (ticks > far) ticks = far;
    if (ticks < -far) ticks = -far;
    __int128 ns = (__int128)ticks * (__int128)dm / (__int128)dt + (__int128)mono;
    if (ns < 0) return 0;
    if (ns > (__int128)UINT64_MAX) return UINT64_MAX;
    return (uint64_t)ns;
}

/* later - earlier as a signed count, at most INT64_MAX. */
static int64_t ticks_between(uint64_t earlier, uint64_t later)
{
    uint64_t d = later - earlier;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* The last pair at or before tsc (tsc within the pairs' span). */
static unsigned pair_before(const tt_tsc_clock *c, uint64_t tsc)
{
    unsigned lo = 0, hi = c->count - 1;
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (c->pairs[mid].tsc <= tsc) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The first pair at or after mono ns; count when there is none. */
static unsigned pair_from(const tt_tsc_clock *c, uint64_t mono)
{
    unsigned lo = 0, hi = c->count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (c->pairs[mid].mono < mono) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

uint64_t tt_tsc_clock_to_mono(const tt_tsc_clock *c, uint64_t tsc)
{
    if (c->count < 2) return 0;
    const tsc_pair *oldest = &c->pairs[0], *newest = &c->pairs[c->count - 1];
    if (tsc < oldest->tsc) { /* along the slope of the first EXTRAPOLATION_SPAN_NS */
        unsigned j = pair_from(c, oldest->mono + EXTRAPOLATION_SPAN_NS);
        const tsc_pair *b = &c->pairs[j < c->count ? j : c->count - 1];
        return along(oldest->mono, -ticks_between(tsc, oldest->tsc), b->mono - oldest->mono, b->tsc - oldest->tsc);
    }
    if (tsc >= newest->tsc) { /* along the slope of the last EXTRAPOLATION_SPAN_NS */
        unsigned k = newest->mono > EXTRAPOLATION_SPAN_NS ? pair_from(c, newest->mono - EXTRAPOLATION_SPAN_NS + 1) : 0;
        const tsc_pair *a = &c->pairs[k ? k - 1 : 0];
        return along(newest->mono, ticks_between(newest->tsc, tsc), newest->mono - a->mono, newest->tsc - a->tsc);
    }
    unsigned i = pair_before(c, tsc);
    const tsc_pair *a = &c->pairs[i], *b = &c->pairs[i + 1];
    return along(a->mono, (int64_t)(tsc - a->tsc), b->mono - a->mono, b->tsc - a->tsc);
}
