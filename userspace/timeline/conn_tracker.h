/* conn_tracker.h - chunks in, finished requests out.
 *
 * Consumes tt_chunk records of one vantage (give tt_tracker_chunk as the
 * source's tt_chunk_fn), runs an HTTP/1.1 parser per direction, SSE or
 * NDJSON framing on each response body, the dialect classifier on each
 * event, and files one tt_request per exchange. Requests are kept in the
 * order their responses (or connections) ended; tt_tracker_sort orders them
 * by request start. */
#ifndef TT_CONN_TRACKER_H
#define TT_CONN_TRACKER_H

#include "timeline/request.h"

/* A connection that could not be read as HTTP/1.1. */
typedef struct tt_conn_note {
    tt_endpoint client, server;
    uint64_t conn_id;
    char reason[96];
} tt_conn_note;

typedef struct tt_tracker tt_tracker;

typedef struct tt_tracker_options {
    bool keep_text;        /* keep generated text per request (--text) */
    bool keep_body;        /* keep each decoded response body (tt_request.body), up to
                              TT_TRACKER_BODY_MAX bytes per request, for lint excerpts */
} tt_tracker_options;

#define TT_TRACKER_BODY_MAX (16u << 20)

tt_tracker *tt_tracker_new(const tt_tracker_options *opt);
void tt_tracker_free(tt_tracker *t);

/* tt_chunk_fn: ctx is the tt_tracker. */
void tt_tracker_chunk(void *ctx, const tt_chunk *chunk);

/* Finished requests; valid until tt_tracker_free. */
tt_request *tt_tracker_requests(tt_tracker *t, size_t *n);
void tt_tracker_sort(tt_tracker *t);

const tt_conn_note *tt_tracker_notes(const tt_tracker *t, size_t *n);
uint64_t tt_tracker_connections(const tt_tracker *t);

/* Name of an interned SSE event type (type_id of tt_event_rec); "" for 0. */
const char *tt_tracker_type_name(const tt_tracker *t, uint16_t type_id);

#endif
