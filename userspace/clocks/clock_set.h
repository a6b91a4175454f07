/* clock_set.h - the clocks of several recordings analysed as one timeline
 * (`tokentap analyze DIR DIR...`, docs/clocks.md): per recording how its
 * instants were put on the first recording's clock, and the uncertainty
 * each part of a request's decomposition carries when its two ends come
 * from different recordings. */
#ifndef TT_CLOCK_SET_H
#define TT_CLOCK_SET_H

#include <stdio.h>

#include "clocks/clock_align.h"
#include "clocks/clock_bounds.h"
#include "core/tt_types.h"
#include "report/json_writer.h"

#define TT_CLOCK_MAX_RECORDINGS 8

typedef enum tt_clock_method {
    TT_CLOCK_METHOD_REFERENCE = 0, /* the first recording: its clock is the timeline's */
    TT_CLOCK_METHOD_TRAFFIC,       /* fitted to the bytes the two recordings share */
    TT_CLOCK_METHOD_WALL_CLOCK,    /* the manifests' wall-to-monotonic offsets (NTP/PTP) */
    TT_CLOCK_METHOD_SAME_HOST,     /* the same boot and time namespace: offset 0 */
} tt_clock_method;

typedef struct tt_clock_entry {
    const char *recording;
    tt_clock_method method;
    double offset_ns;        /* added to its instants at its start (t0) */
    double skew_ppm;
    int64_t t0_ns;           /* on its own clock */
    double uncertainty_ns;   /* half-width at t0; NAN when unknown (wall-clock) */
    double wall_offset_ns;   /* what the manifests' wall clocks say the offset is */
    tt_clock_match match;
    tt_clock_align *ca;      /* owned; the bounds, for the uncertainty at any instant (traffic) */
    tt_clock_fit fit;
} tt_clock_entry;

typedef struct tt_clock_set {
    tt_clock_entry e[TT_CLOCK_MAX_RECORDINGS];
    size_t n;
    int recording_of[TT_VANTAGE_COUNT]; /* which recording each joined vantage came from, -1 none */
} tt_clock_set;

void tt_clock_set_free(tt_clock_set *cs);

/* "reference", "traffic", "wall-clock", "same-host" */
const char *tt_clock_method_name(tt_clock_method m);

/* The uncertainty of a part running from vantage a to vantage b at instant
 * t_ns (the timeline's clock): 0 when both come from one recording, the
 * sum of the half-widths of the recordings not the reference otherwise,
 * NAN when a recording's is unknown. */
double tt_clock_set_uncertainty(const tt_clock_set *cs, tt_vantage a, tt_vantage b, int64_t t_ns);

/* `clocks: [...]` (docs/formats.md) and the text lines of the clocks. */
void tt_clock_set_json(tt_jw *w, const tt_clock_set *cs);
void tt_clock_set_text(FILE *out, const tt_clock_set *cs);

#endif
