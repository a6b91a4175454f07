/* ready_marks.h - when each byte of one direction of a connection became
 * readable at a socket (TT_CHUNK_READY marks, tt_types.h), asked byte by
 * byte in increasing stream order.
 *
 * The marks of a direction arrive in increasing offset; the instant of a
 * byte is the one of the first mark that ends past it, provided that mark
 * also starts at or before it. Otherwise the byte's instant is unknown (a
 * mark was lost, dropped, or never emitted): unknown, never the instant of
 * a later mark. Bounded: past TT_READY_MARKS_MAX marks the oldest is
 * dropped, which by the rule above only makes its bytes unknown. */
#ifndef TT_READY_MARKS_H
#define TT_READY_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "timeline/request.h"

#define TT_READY_MARKS_MAX 512

typedef struct tt_ready_span {
    uint64_t from, end, ns;
} tt_ready_span;

typedef struct tt_ready_marks {
    tt_ready_span *ring; /* capacity TT_READY_MARKS_MAX once the first mark comes */
    size_t head, n;
    uint64_t dropped;    /* marks dropped for the bound */
} tt_ready_marks;

/* A mark: bytes [from, end) readable at ns. Empty marks are ignored. */
void tt_ready_marks_add(tt_ready_marks *m, uint64_t from, uint64_t end, uint64_t ns);

/* The instant byte `off` became readable, or UINT64_MAX when unknown.
 * Marks that end at or before off are forgotten: ask in increasing order. */
uint64_t tt_ready_marks_at(tt_ready_marks *m, uint64_t off);

void tt_ready_marks_free(tt_ready_marks *m);

/* r's first_token_ready_ns and last_token_ready_ns from its events' ready_ns;
 * r->token_events counts its TOKEN events (conn_http.c files every event).
 * Costs the events from each end to the nearest TOKEN one. */
void tt_request_token_ready_instants(tt_request *r);

/* A mark of dir that came after the bytes [from, end) it covers were
 * parsed (another source's ring polled later, a record committed late):
 * the request's first byte (C2S) or the events (S2C) of r that lie in it
 * and have no ready instant yet get ns. */
void tt_request_ready_fill_late(tt_request *r, tt_direction dir, uint64_t from, uint64_t end, uint64_t ns);

#endif
