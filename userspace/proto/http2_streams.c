/* http2_streams.c - an HTTP/2 connection's streams: the table, each
 * half's end, the errors that end a direction, and the stream a HEADERS or
 * DATA frame names (http2_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2_internal.h"

/* ---- the stream table ---- */

static size_t stream_pos(const tt_http2_conn *c, uint32_t id)
{
    size_t lo = 0, hi = c->nstreams;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->streams[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

h2_stream *stream_find(const tt_http2_conn *c, uint32_t id)
{
    size_t i = stream_pos(c, id);
    return i < c->nstreams && c->streams[i]->id == id ? c->streams[i] : NULL;
}

bool recently_closed(const tt_http2_conn *c, uint32_t id)
{
    for (size_t i = 0; i < c->closed_n; i++)
        if (c->closed_ring[i] == id) return true;
    return false;
}

void stream_remove(tt_http2_conn *c, uint32_t id)
{
    size_t i = stream_pos(c, id);
    if (i >= c->nstreams || c->streams[i]->id != id) return;
    free(c->streams[i]);
    memmove(c->streams + i, c->streams + i + 1, (c->nstreams - i - 1) * sizeof *c->streams);
    c->nstreams--;
    c->closed_ring[c->closed_pos] = id;
    c->closed_pos = (c->closed_pos + 1) % TT_HTTP2_CLOSED_RING;
    if (c->closed_n < TT_HTTP2_CLOSED_RING) c->closed_n++;
}

/* End one half; returns true when the stream is then forgotten. */
bool end_half(tt_http2_conn *c, h2_stream *s, tt_direction dir, tt_h2_end how, uint32_t code,
                     tt_direction by, uint64_t off, uint64_t ns)
{
    half *h = &s->h[dir];
    if (!h->ended) {
        h->ended = true;
        if (!h->no_report) {
            tt_h2_stream_end e = {
                .stream_id = s->id, .dir = dir, .how = how, .error_code = code, .by = by,
                .off = off, .mono_ns = ns, .last_ns = h->last_ns, .body_bytes = h->body_off,
                .data_frames = h->data_frames, .pad_bytes = h->pad_bytes, .header_blocks = h->header_blocks,
                .window_updates = h->wu_count, .window_credit = h->wu_credit,
            };
            c->cb.on_stream_end(c->ud, &e);
        }
    }
    if (s->h[0].ended && s->h[1].ended) {
        stream_remove(c, s->id);
        return true;
    }
    return false;
}

/* End both halves still open; returns true (the stream is forgotten). */
void end_stream_both(tt_http2_conn *c, h2_stream *s, tt_h2_end how, uint32_t code, tt_direction by,
                            uint64_t off, uint64_t ns)
{
    uint32_t id = s->id;
    if (end_half(c, s, TT_DIR_C2S, how, code, by, off, ns)) return;
    s = stream_find(c, id);
    if (s) end_half(c, s, TT_DIR_S2C, how, code, by, off, ns);
}

h2_stream *stream_create(tt_http2_conn *c, uint32_t id, tt_direction by, uint64_t off, uint64_t ns)
{
    if (c->nstreams >= TT_HTTP2_MAX_STREAMS) /* evict the lowest id */
        end_stream_both(c, c->streams[0], TT_H2_END_LIMIT, 0, by, off, ns);
    if (c->nstreams == c->streams_cap) {
        size_t cap = c->streams_cap ? c->streams_cap * 2 : 16;
        h2_stream **n = realloc(c->streams, cap * sizeof *n);
        if (!n) return NULL;
        c->streams = n;
        c->streams_cap = cap;
    }
    h2_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    for (int i = 0; i < 2; i++) s->h[i].window = c->d[i].init_window;
    size_t pos = stream_pos(c, id);
    memmove(c->streams + pos + 1, c->streams + pos, (c->nstreams - pos) * sizeof *c->streams);
    c->streams[pos] = s;
    c->nstreams++;
    int initiator = (id & 1) ? 0 : 1;
    if (id > c->highest[initiator]) c->highest[initiator] = id;
    return s;
}

/* A stream created while a direction is abandoned or ended: its half in
 * that direction ends at once. */
void settle_new_stream(tt_http2_conn *c, uint32_t id)
{
    for (int i = 0; i < 2; i++) {
        h2_stream *s = stream_find(c, id);
        if (!s) return;
        h2_dir *d = &c->d[i];
        if (!alive(d) && !s->h[i].ended)
            end_half(c, s, (tt_direction)i, d->dead_how, 0, (tt_direction)i, d->dead_off, d->dead_ns);
    }
}

/* ---- errors ---- */

void fail(tt_http2_conn *c, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    if (!alive(d)) return;
    d->state = D_DEAD;
    d->dead_how = code == TT_H2_ERR_GAP ? TT_H2_END_GAP : TT_H2_END_ERROR;
    d->dead_off = off;
    d->dead_ns = ns;
    d->in_block = false;
    c->cb.on_error(c->ud, dir, code, msg, off);
    for (size_t i = 0; i < c->nstreams;) {
        h2_stream *s = c->streams[i];
        if (!s->h[dir].ended && end_half(c, s, dir, d->dead_how, 0, dir, off, ns)) continue;
        i++;
    }
}

void failf(tt_http2_conn *c, tt_direction dir, tt_h2_error code, uint64_t off, uint64_t ns,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    fail(c, dir, code, c->msg, off, ns);
}

/* ---- resolving the stream a HEADERS or DATA frame names ---- */

enum resolve_result resolve(tt_http2_conn *c, tt_direction dir, uint32_t id, bool headers, h2_stream **out,
                                   bool *created, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    h2_stream *s = stream_find(c, id);
    *created = false;
    if (s) {
        *out = s;
        return s->h[dir].ended ? R_LATE : R_OK;
    }
    if (recently_closed(c, id)) return R_LATE;
    int initiator = (id & 1) ? 0 : 1;
    tt_direction opener = (id & 1) ? TT_DIR_C2S : TT_DIR_S2C;
    bool opens = headers && dir == TT_DIR_C2S && (id & 1);
    bool tolerant = c->midstream || !alive(&c->d[opener]);
    if (!opens && !tolerant) {
        if (id <= c->highest[initiator]) return R_LATE;
        failf(c, dir, TT_H2_ERR_PROTOCOL, d->frame_off, ns, "%s on idle stream %u",
              headers ? "HEADERS" : "DATA", id);
        return R_ERROR;
    }
    if (opens && !c->midstream && id <= c->highest[initiator]) return R_LATE; /* ids only grow */
    s = stream_create(c, id, dir, d->frame_off, ns);
    if (!s) return R_LATE;
    *created = true;
    *out = s;
    return R_OK;
}
