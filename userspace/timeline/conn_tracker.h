/* conn_tracker.h - chunks in, finished requests out.
 *
 * Consumes tt_chunk records of one vantage (give tt_tracker_chunk as the
 * source's tt_chunk_fn), runs an HTTP/1.1 parser per direction (or, when
 * the client's first bytes are the HTTP/2 preface, one HTTP/2 parser for
 * the connection, each stream one exchange), SSE or NDJSON framing on each
 * response body, the dialect classifier on each event, and files one
 * tt_request per exchange. Requests are kept in the
 * order their responses (or connections) ended; tt_tracker_sort orders them
 * by request start. */
#ifndef TT_CONN_TRACKER_H
#define TT_CONN_TRACKER_H

#include "timeline/request.h"

/* A connection that could not be read (analysed false), or one that was,
 * in a way worth saying (analysed true: joined mid-stream, HPACK fields
 * unknown, ...). */
typedef struct tt_conn_note {
    tt_endpoint client, server;
    uint64_t conn_id;
    bool analysed;
    char reason[96];
    uint64_t order_key; /* the chunk's tt_conn_info.order_key when it was noted (merge order) */
} tt_conn_note;

typedef struct tt_tracker tt_tracker;

typedef struct tt_tracker_options {
    bool keep_text;        /* keep generated text per request (--text) */
    bool keep_body;        /* keep each decoded response body (tt_request.body), up to
                              TT_TRACKER_BODY_MAX bytes per request, for lint excerpts */
    size_t max_connections; /* connections followed at once (0: no limit); opening one
                               more evicts the least recently active */
    /* Called with each request as it is filed, its events final (NULL:
     * none). It may set r->consumer_tag and release r's events
     * (tt_request_release_events) once it has taken what it needs from
     * them; later kernel-readable marks may still set r's instants. */
    void (*on_file)(void *ctx, tt_request *r);
    void *on_file_ctx;
} tt_tracker_options;

/* What the tracker holds and has let go of. */
typedef struct tt_tracker_stats {
    uint64_t connections;     /* opened since the start */
    size_t live_connections;  /* followed now */
    size_t in_flight;         /* requests begun and not yet filed */
    uint64_t evicted_connections, evicted_requests; /* evicted (its requests filed, incomplete: evicted) */
    uint64_t forgotten;       /* filed requests let go by tt_tracker_forget */
    uint64_t notes_over;      /* connection notes past TT_TRACKER_NOTES_MAX, counted only */
} tt_tracker_stats;

#define TT_TRACKER_BODY_MAX (16u << 20)
#define TT_TRACKER_NOTES_MAX 4096
/* Requests begun and not finished on one connection, at most. */
#define TT_TRACKER_MAX_IN_FLIGHT 1024

tt_tracker *tt_tracker_new(const tt_tracker_options *opt);
void tt_tracker_free(tt_tracker *t);

/* tt_chunk_fn: ctx is the tt_tracker. */
void tt_tracker_chunk(void *ctx, const tt_chunk *chunk);

/* Finished requests; valid until tt_tracker_free. */
tt_request *tt_tracker_requests(tt_tracker *t, size_t *n);
void tt_tracker_sort(tt_tracker *t);

const tt_conn_note *tt_tracker_notes(const tt_tracker *t, size_t *n);
uint64_t tt_tracker_connections(const tt_tracker *t);
void tt_tracker_stats_get(const tt_tracker *t, tt_tracker_stats *st);

/* Let go of the first n filed requests (their events, text and body): a
 * long-running consumer that has taken them keeps memory bounded. Later
 * requests move to the front; the index of every request drops by n. */
void tt_tracker_forget(tt_tracker *t, size_t n);

/* Evict up to n connections, least recently active first: what they have
 * begun is filed at once, incomplete (evicted), and bytes that come for
 * them later are read as after lost bytes (the next message is found
 * again). Returns how many were evicted. */
size_t tt_tracker_evict(tt_tracker *t, size_t n, uint64_t mono_ns);

/* Move what src filed into dst, as if one tracker had read both inputs'
 * connections: its requests (event type ids renumbered into dst's names),
 * connection notes, and its counters added to dst's. src must have no live
 * connection (its source finished); it keeps nothing filed afterwards.
 * Call tt_tracker_order_notes once every part is in. Used to merge the
 * trackers of several readers of one capture (analyze --jobs). */
void tt_tracker_absorb(tt_tracker *dst, tt_tracker *src);

/* Grow t's request array to hold n requests, without touching the new
 * room: a later tt_tracker_absorb into t then does not move the array.
 * Returns the first free slot, with *room set to the free slots (0 and
 * NULL when out of memory: nothing changed). The caller may write zeroes
 * there, to take the room's page faults ahead of the merge. */
tt_request *tt_tracker_reserve_requests(tt_tracker *t, size_t n, size_t *room);

/* Put the notes in order_key order (stable: notes of one key keep their
 * order), keeping the first TT_TRACKER_NOTES_MAX and counting the rest in
 * notes_over: the order and the cut one tracker reading the whole input in
 * that order would have made. Returns 0, or -1 when out of memory (nothing
 * changed). */
int tt_tracker_order_notes(tt_tracker *t);

/* Free r's events, text and body (keeping every count and instant of the
 * request) and mark it events_released. */
void tt_request_release_events(tt_request *r);

/* Name of an interned SSE event type (type_id of tt_event_rec); "" for 0. */
const char *tt_tracker_type_name(const tt_tracker *t, uint16_t type_id);

#endif
