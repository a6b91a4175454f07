/* ready_marks.c - readable instants of one stream direction (ready_marks.h). */
#include "timeline/ready_marks.h"

#include <stdlib.h>

void tt_ready_marks_add(tt_ready_marks *m, uint64_t from, uint64_t end, uint64_t ns)
{
    if (end <= from) return;
    if (!m->ring) {
        m->ring = malloc(TT_READY_MARKS_MAX * sizeof *m->ring);
        if (!m->ring) abort();
    }
    if (m->n == TT_READY_MARKS_MAX) {
        m->head = (m->head + 1) % TT_READY_MARKS_MAX;
        m->n--;
        m->dropped++;
    }
    m->ring[(m->head + m->n) % TT_READY_MARKS_MAX] = (tt_ready_span){.from = from, .end = end, .ns = ns};
    m->n++;
}

uint64_t tt_ready_marks_at(tt_ready_marks *m, uint64_t off)
{
    while (m->n && m->ring[m->head].end <= off) {
        m->head = (m->head + 1) % TT_READY_MARKS_MAX;
        m->n--;
    }
    if (!m->n || m->ring[m->head].from > off) return UINT64_MAX;
    return m->ring[m->head].ns;
}

void tt_ready_marks_free(tt_ready_marks *m)
{
    free(m->ring);
    m->ring = NULL;
    m->head = m->n = 0;
}

/* ---- a request's ready instants ---- */

/* A request's first and last token events' ready instants, from its
 * events: each found from its end of the array, so that a late mark on a
 * long stream (one per TLS record) costs the few events before its first
 * token and after its last, not the whole stream. */
void tt_request_token_ready_instants(tt_request *r)
{
    r->first_token_ready_ns = r->last_token_ready_ns = TT_NS_NONE;
    if (!r->token_events) return; /* else a walk of every event at each late mark */
    uint32_t first = 0;
    while (first < r->n_events && r->events[first].kind != TT_EV_TOKEN) first++;
    if (first == r->n_events) return;
    uint32_t last = r->n_events - 1;
    while (r->events[last].kind != TT_EV_TOKEN) last--;
    r->first_token_ready_ns = r->events[first].ready_ns;
    r->last_token_ready_ns = r->events[last].ready_ns;
}

/* A READY mark that came after the bytes it covers were parsed (another
 * source's ring polled later, or a record committed late): the request's
 * first byte (C2S) or the events (S2C) of r that end inside [from, end)
 * and have no ready instant yet get ns. */
void tt_request_ready_fill_late(tt_request *r, tt_direction dir, uint64_t from, uint64_t end, uint64_t ns)
{
    if (dir == TT_DIR_C2S) {
        if (r->req_ready_ns == TT_NS_NONE && r->req_first_ns != TT_NS_NONE && r->req_first_off >= from &&
            r->req_first_off < end)
            r->req_ready_ns = ns;
        return;
    }
    bool changed = false;
    for (uint32_t i = r->n_events; i-- > 0;) {
        tt_event_rec *e = &r->events[i];
        if (e->dispatch_stream_off == TT_NS_NONE || e->dispatch_stream_off >= end) continue;
        if (e->dispatch_stream_off < from) break;
        if (e->ready_ns == TT_NS_NONE) {
            e->ready_ns = ns;
            changed = true;
        }
    }
    if (changed) tt_request_token_ready_instants(r);
}
