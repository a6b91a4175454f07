/* clock_set.c - the clocks of several recordings on one timeline (clock_set.h). */
#include <math.h>
#include <stdlib.h>

#include "clocks/clock_set.h"

void tt_clock_set_free(tt_clock_set *cs)
{
    for (size_t i = 0; i < cs->n; i++) tt_clock_align_free(cs->e[i].ca);
    cs->n = 0;
}

const char *tt_clock_method_name(tt_clock_method m)
{
    switch (m) {
    case TT_CLOCK_METHOD_REFERENCE: return "reference";
    case TT_CLOCK_METHOD_TRAFFIC: return "traffic";
    case TT_CLOCK_METHOD_WALL_CLOCK: return "wall-clock";
    case TT_CLOCK_METHOD_SAME_HOST: return "same-host";
    }
    return "?";
}

/* The half-width of recording k's offset at t_ns (the timeline's clock). */
static double half_width(const tt_clock_entry *e, int64_t t_ns)
{
    switch (e->method) {
    case TT_CLOCK_METHOD_REFERENCE:
    case TT_CLOCK_METHOD_SAME_HOST: return 0;
    case TT_CLOCK_METHOD_WALL_CLOCK: return NAN;
    case TT_CLOCK_METHOD_TRAFFIC: break;
    }
    /* the instant on the recording's own clock, near enough for its interval */
    int64_t own = t_ns - (int64_t)llround(e->offset_ns);
    double lo, hi;
    tt_clock_align_offset_at(e->ca, &e->fit, own, &lo, &hi);
    return (hi - lo) / 2;
}

double tt_clock_set_uncertainty(const tt_clock_set *cs, tt_vantage a, tt_vantage b, int64_t t_ns)
{
    int ra = cs->recording_of[a], rb = cs->recording_of[b];
    if (ra < 0 || rb < 0 || ra == rb) return 0;
    double u = 0;
    if (ra > 0) u += half_width(&cs->e[ra], t_ns);
    if (rb > 0) u += half_width(&cs->e[rb], t_ns);
    return u;
}

/* "requests_matched": how many of a pair's requests each key matched. */
static void matched_json(tt_jw *w, const tt_clock_pair *p)
{
    tt_jw_object_begin(w, "requests_matched");
    tt_jw_uint(w, "id", p->by_id);
    tt_jw_uint(w, "sequence", p->by_sequence);
    tt_jw_uint(w, "connection", p->by_connection);
    tt_jw_object_end(w);
}

void tt_clock_set_json(tt_jw *w, const tt_clock_set *cs)
{
    tt_jw_array_begin(w, "clocks");
    for (size_t i = 0; i < cs->n; i++) {
        const tt_clock_entry *e = &cs->e[i];
        tt_jw_object_begin(w, NULL);
        tt_jw_str(w, "recording", e->recording);
        tt_jw_str(w, "method", tt_clock_method_name(e->method));
        tt_jw_int(w, "offset_ns", (int64_t)llround(e->offset_ns));
        tt_jw_double(w, "skew_ppm", e->skew_ppm);
        if (isfinite(e->uncertainty_ns)) tt_jw_int(w, "uncertainty_ns", (int64_t)ceil(e->uncertainty_ns));
        else tt_jw_null(w, "uncertainty_ns");
        tt_jw_int(w, "wall_clock_offset_ns", (int64_t)llround(e->wall_offset_ns));
        tt_jw_uint(w, "bounds", e->match.bounds);
        const tt_clock_pair none = {0};
        matched_json(w, e->match.n_pairs ? &e->match.pairs[e->match.best] : &none);
        tt_jw_array_begin(w, "vantage_pairs");
        for (size_t k = 0; k < e->match.n_pairs; k++) {
            const tt_clock_pair *p = &e->match.pairs[k];
            tt_jw_object_begin(w, NULL);
            tt_jw_str(w, "client_side", tt_vantage_name(p->client_side));
            tt_jw_str(w, "client_side_recording", p->client_in_s ? e->recording : cs->e[0].recording);
            tt_jw_str(w, "server_side", tt_vantage_name(p->server_side));
            tt_jw_str(w, "server_side_recording", p->client_in_s ? cs->e[0].recording : e->recording);
            matched_json(w, p);
            tt_jw_uint(w, "bounds", p->bounds);
            tt_jw_object_end(w);
        }
        tt_jw_array_end(w);
        tt_jw_object_end(w);
    }
    tt_jw_array_end(w);
}

void tt_clock_set_text(FILE *out, const tt_clock_set *cs)
{
    fprintf(out, "clocks (onto %s's):\n", cs->n ? cs->e[0].recording : "?");
    for (size_t i = 1; i < cs->n; i++) {
        const tt_clock_entry *e = &cs->e[i];
        fprintf(out, "  %s: %s, offset %+.6f s", e->recording, tt_clock_method_name(e->method), e->offset_ns / 1e9);
        if (isfinite(e->uncertainty_ns)) fprintf(out, " +- %.1f us", e->uncertainty_ns / 1e3);
        if (e->method == TT_CLOCK_METHOD_TRAFFIC)
            fprintf(out, ", skew %+.2f ppm, %zu bounds", e->skew_ppm, e->match.bounds);
        fprintf(out, "; wall clocks say %+.6f s\n", e->wall_offset_ns / 1e9);
        for (size_t k = 0; k < e->match.n_pairs; k++) {
            const tt_clock_pair *p = &e->match.pairs[k];
            fprintf(out, "    %s (%s) with %s (%s): %zu requests by x-request-id, %zu by TCP sequence number, %zu by "
                         "connection and ordinal; %zu bounds\n",
                    tt_vantage_name(p->client_side), p->client_in_s ? e->recording : cs->e[0].recording,
                    tt_vantage_name(p->server_side), p->client_in_s ? cs->e[0].recording : e->recording, p->by_id,
                    p->by_sequence, p->by_connection, p->bounds);
        }
    }
}
