/* conn_internal.h - the connection tracker's state, shared by its parts:
 * conn_tracker.c (connections: the table, chunks in, eviction, what is
 * kept), conn_http.c (one connection's HTTP/1.1 messages and framed events,
 * turned into filed requests), conn_proto.c (HTTP/1.1 or HTTP/2, chosen on
 * the first bytes), conn_h2.c (HTTP/2: each stream one request, through
 * conn_http.c's event handling), conn_grpc.c (a Triton gRPC stream's many
 * requests) and conn_h2c.c (an h2c upgrade from HTTP/1.1: when each
 * direction turns HTTP/2). Internal to timeline/. */
#ifndef TT_CONN_INTERNAL_H
#define TT_CONN_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "proto/event_frame.h"
#include "proto/framer.h"
#include "proto/http1.h"
#include "proto/http2.h"
#include "timeline/conn_tracker.h"
#include "timeline/ready_marks.h"

#define MAX_REQUEST_BODY (1u << 20)
#define HELD_MAX (64u << 10) /* bytes held per connection (per direction mid-stream) before deciding anyway */
#define MAX_EVENT_TYPES 1024
#define MAX_TYPE_NAME 80 /* bytes of an event type kept */
#define TEXT_SCRATCH (64u << 10)

typedef struct conn_state conn_state;
typedef struct tt_grpc_calls tt_grpc_calls;

/* A chunk kept (with a copy of its bytes) until the protocol is chosen. */
struct held_chunk {
    tt_chunk ch;
    uint8_t *data;
};

/* A request the tracker is still building. */
typedef struct pending {
    tt_request req;
    bool request_done, response_done, response_started;
    tt_classify_memo *memo; /* its events' classifier memo (dialect.h), NULL until one */
} pending;

struct conn_state {
    tt_tracker *t;
    uint64_t conn_id;
    conn_state *newer, *older; /* the tracker's activity order (most recent first) */
    tt_endpoint client, server;
    conn_state *next_in_bucket;

    tt_http1_parser *request_parser, *response_parser;
    pending **queue; /* in request order; front entries leave as they finish */
    size_t queue_len, queue_cap;
    pending *parsing_request;  /* request whose head was seen, end not yet */
    pending *parsing_response; /* request whose response is being read */
    uint32_t next_ordinal;

    char *body;
    size_t body_len, body_cap;
    bool body_overflow;

    tt_framer *framer; /* the current response body's, when it is an event stream */
    /* Decoded body bytes of the current source chunk, fed to the framer as
     * one piece: a chunk (segment, syscall) is the unit of "split across"
     * and "shared with", however many HTTP chunks it carried. */
    uint8_t *body_piece;
    size_t body_piece_len, body_piece_cap;
    uint64_t body_piece_off, body_piece_ns;
    /* While the piece is one slice of the chunk being parsed (the usual
     * case), it is borrowed from there, not copied: body_piece_ref points
     * at it; NULL when the piece is in body_piece. */
    const uint8_t *body_piece_ref;
    /* Readable instants (TT_CHUNK_READY) per direction, and where the
     * response body bytes of the DATA chunk being parsed sit in the stream:
     * an event's instant of readability is that of its last byte. */
    tt_ready_marks ready[2];
    uint64_t parsed_end[2]; /* stream offset past the last DATA or GAP parsed, per direction */
    const uint8_t *feed_data; /* the DATA chunk being parsed (NULL between chunks) */
    size_t feed_len;
    uint64_t feed_off;
    struct body_slice { uint64_t body_off, stream_off, len; } *slices;
    size_t n_slices, slices_cap;
    bool c2s_seq_known; /* the request direction's TCP sequence numbers (tt_conn_info.seq_base) */
    uint32_t c2s_seq_base;
    bool sniff_framing; /* decide SSE/NDJSON/none on the first body bytes */
    bool tunneled; /* upgraded or CONNECTed: no longer HTTP in either direction */
    /* Lost bytes cut the framing of a direction, so whole messages may be
     * missing from it: from then on a response is paired by its instant
     * (response_owner), not by its place in the queue. */
    bool messages_lost;
    uint64_t response_lost_ns; /* instant of the last loss in the response direction (TT_NS_NONE: none) */
    char http_error[96];
    bool any_message;

    /* HTTP/1.1 or HTTP/2 (conn_proto.c): decided on the first bytes;
     * until then both directions' chunks are held. */
    bool proto_decided;
    struct conn_h2 *h2; /* NULL: HTTP/1.1 */
    struct held_chunk *held;
    size_t n_held, held_cap, held_c2s_len;
    /* A request asked Upgrade: h2c; until both directions are switched
     * (or the watch ends) chunks go through conn_h2c.c. */
    struct conn_h2c *h2c;
    /* Stream offset of each HTTP/1.1 parser's first byte (its offsets
     * count from there: not 0 on a connection picked up midstream). */
    uint64_t http1_base[2];
    bool http1_began[2];
    /* No SYN seen and no preface: looking for HTTP/2 frames in the held
     * bytes of each direction (tt_http2_find_sync's resume points). */
    bool h2_mid_scan, h2_mid_found;
    size_t h2_mid_from[2];
    /* The source guessed the client wrong (its HTTP/2 frames told): client
     * and server swapped here, every chunk's direction turned over. */
    bool flipped;
    /* Its newest filed request, for late ready marks (tt_conn_ready_mark):
     * the tracker's absolute index of it plus one (t->forgotten + its place
     * in t->reqs + 1; 0: none). Each filed request links to the one before
     * it on the connection (tt_request.prev_filed), in the order they were
     * filed; tt_tracker_sort moves the links with the requests. */
    uint64_t last_filed;
};

struct tt_tracker {
    tt_tracker_options opt;
    conn_state **buckets;
    size_t n_buckets, n_live;
    uint64_t connections;

    tt_request *reqs;
    size_t n_reqs, cap_reqs;

    tt_conn_note *notes;
    size_t n_notes, cap_notes;
    uint64_t notes_over;

    conn_state *most_recent, *least_recent; /* activity order */
    uint64_t evicted_connections, evicted_requests, forgotten;
    size_t in_flight; /* requests begun (pending_new) and not yet filed */
    /* Events of the request filed last (at most EVENTS_HINT_MAX): a new
     * request's event array starts that big, so that a run of like
     * requests does not grow each one by copies. */
    uint32_t events_hint;
    /* Ids of connections evicted lately (0: empty slot), so that their later
     * bytes are read as after a loss; a fixed table, overwritten on collision. */
    uint64_t *evicted_ids;

    uint64_t order_key; /* of the chunk being taken (tt_conn_info.order_key), for notes */

    char *type_names[MAX_EVENT_TYPES];
    uint8_t type_lens[MAX_EVENT_TYPES]; /* strlen of each name (at most MAX_TYPE_NAME) */
    uint16_t n_types;
    uint16_t last_type;

    char *text_scratch;
};

/* Grow *p (cap elements of elem bytes) to hold at least need; aborts when
 * memory is exhausted. */
static inline void *tt_conn_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (tt_grow(&p, cap, need, elem, 8) < 0) abort();
    return p;
}

/* conn_tracker.c */
/* One chunk to the connection's HTTP/1.1 parsers. */
void tt_conn_dispatch_http1(conn_state *c, const tt_chunk *ch);
/* A DATA chunk reached a parser: the request direction's TCP sequence
 * base when the source knows it, and how far the direction is parsed. */
void tt_conn_note_data_chunk(conn_state *c, const tt_chunk *ch);
/* A header value, or nothing when value is NULL, into dst (cut to cap - 1
 * bytes, NUL-terminated). */
static inline void tt_conn_copy_value(const char *value, size_t len, char *dst, size_t cap)
{
    if (!value) return;
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(dst, value, n);
    dst[n] = 0;
}

/* conn_http.c */
/* The id of event type name s[0..len) in t's names, added when new (the
 * last id once MAX_EVENT_TYPES are taken); 0 for NULL. */
uint16_t tt_conn_intern_type(tt_tracker *t, const char *s, size_t len);
/* A new request at the back of the connection's queue. */
pending *tt_conn_pending_new(conn_state *c);
/* One framed event of p's response body; stream_off: the stream offset of
 * its last byte (TT_NS_NONE: unknown). An event cut by the end of the body
 * (TT_FRAME_UNTERMINATED) marks p cut; any other is classified and
 * recorded (the two steps below). */
void tt_conn_take_event(conn_state *c, pending *p, const tt_event_frame *ev, uint64_t stream_off);
/* What ev means in r's dialect (a compressed gRPC message: OTHER, not
 * decoded); the text, when the tracker keeps it, in its scratch buffer.
 * memo: the stream's classifier memo (tt_dialect_classify_memo), or NULL. */
void tt_conn_classify_event(const conn_state *c, const tt_request *r, tt_classify_memo **memo, const tt_event_frame *ev,
                            tt_classified *cl);
/* Record ev, classified as cl by the call just before, among p's events. */
void tt_conn_record_event(conn_state *c, pending *p, const tt_event_frame *ev, uint64_t stream_off,
                          const tt_classified *cl);
/* An SSE comment line of r's response body. */
void tt_conn_take_comment(tt_request *r, uint64_t off, uint64_t mono_ns);
/* Keep response body bytes in r->body (tracker option keep_body). */
void tt_conn_keep_body(tt_request *r, const uint8_t *data, size_t len, uint64_t body_off);
/* The framing of a body without a telling content-type, from its first bytes. */
tt_framing tt_conn_sniff_framing(const uint8_t *d, size_t n, tt_dialect dialect);
/* A note on the connection (tt_tracker_notes): it could not be read. */
void tt_conn_add_note(conn_state *c, const char *reason);
/* A note on how the connection was read (tt_conn_note.analysed). */
void tt_conn_add_info(conn_state *c, const char *what);

extern const tt_http_callbacks tt_conn_request_cb, tt_conn_response_cb; /* ud: the conn_state */
/* File p (finished or not), a request of c, among the tracker's requests
 * and free it. */
void tt_conn_file_request(conn_state *c, pending *p);
/* Take p out of c's queue, wherever it is, and file it. */
void tt_conn_file_pending(conn_state *c, pending *p);
/* Hand the framer the body bytes the current chunk carried. */
void tt_conn_flush_body_piece(conn_state *c);
/* End the response body's framer (the connection ends). */
void tt_conn_close_framer(conn_state *c, uint64_t mono_ns);
/* A READY chunk: the readable instants of a direction's bytes. */
void tt_conn_ready_mark(conn_state *c, const tt_chunk *ch);

/* conn_proto.c */
/* While the protocol is undecided: look at ch (DATA of either direction,
 * or an end); true when it was held or fed (the caller does nothing more
 * with it). Decides HTTP/2 on the client preface; on a connection whose
 * start was not seen (orientation guessed, or back after an eviction),
 * HTTP/2 joined mid-stream on a confirmed chain of frames in either
 * direction; HTTP/1.1 on anything else, replaying what was held to the
 * chosen parser. */
bool tt_conn_h2_sniff(conn_state *c, const tt_chunk *ch);
/* The connection ends undecided: what was held goes to the protocol its
 * bytes showed, then is freed. */
void tt_conn_proto_release(conn_state *c);
/* The bytes of the held chunks q[0..n) of direction dir (all when dir <
 * 0), in order, in a new buffer (the caller frees it); *len their count. */
uint8_t *tt_conn_held_concat(const struct held_chunk *q, size_t n, int dir, size_t *len);

/* conn_h2.c */
/* Make c HTTP/2: its parser, from the preface or (midstream) from the
 * frame boundaries tt_conn_h2_chunk finds (noted on the connection). */
void tt_conn_h2_open(conn_state *c, bool midstream);
/* One chunk to the connection's HTTP/2 parser (c->h2 set). */
void tt_conn_h2_chunk(conn_state *c, const tt_chunk *ch);
/* h2c upgrade accepted (the 101 seen): c's HTTP/2 parser starts in upgrade
 * mode with settings (the HTTP2-Settings value); p (the upgrade request,
 * in c->queue) is stream 1, whose request half ends at
 * tt_conn_h2_upgrade_request_end. Each direction's first chunk given to
 * tt_conn_h2_chunk then must begin where its HTTP/2 bytes begin. */
void tt_conn_h2_begin_upgrade(conn_state *c, pending *p, const char *settings, size_t len, uint64_t mono_ns);
/* The upgrade request ended: stream 1 is filed once its response ended too. */
void tt_conn_h2_upgrade_request_end(conn_state *c);
/* Free the HTTP/2 state and held chunks; open streams' framers are
 * finished; their requests stay in c->queue (filed by the caller). */
void tt_conn_h2_release(conn_state *c, uint64_t mono_ns);
/* Room for one more request on c (TT_TRACKER_MAX_IN_FLIGHT): the oldest
 * stream other than keep's is filed, evicted, or else keep's oldest call. */
void tt_conn_h2_make_room(conn_state *c, const tt_grpc_calls *keep);
/* Why a half ended, into r->http_error (kept when already set; nothing
 * for a clean END_STREAM). */
void tt_conn_h2_end_reason(const tt_h2_stream_end *e, tt_request *r);

/* conn_grpc.c: a stream that carries many requests (Triton
 * ModelStreamInfer), each client message one call. */
/* True when a stream with this request head carries many calls. */
bool tt_grpc_calls_wanted(const tt_request *stream);
/* The calls of one stream; stream holds the request head's fields. */
tt_grpc_calls *tt_grpc_calls_new(conn_state *c, const tt_request *stream);
/* Free g; its calls stay in the connection's queue. */
void tt_grpc_calls_free(tt_grpc_calls *g);
/* Client DATA on the stream (each whole message a new call), and its end. */
void tt_grpc_calls_request_data(tt_grpc_calls *g, const uint8_t *data, size_t len, uint64_t body_off,
                                uint64_t mono_ns);
void tt_grpc_calls_request_end(tt_grpc_calls *g, uint64_t mono_ns);
/* The response head (status, content-type, coding, framing of head). */
void tt_grpc_calls_response_head(tt_grpc_calls *g, const tt_request *head);
/* One framed response message (stream_off: the stream offset of its last
 * byte, TT_NS_NONE: unknown): to its call; a final or error one files it. */
void tt_grpc_calls_response_event(tt_grpc_calls *g, const tt_event_frame *ev, uint64_t stream_off);
/* The trailers' grpc-status and grpc-message, for the calls still open. */
void tt_grpc_calls_trailers(tt_grpc_calls *g, int grpc_status, const char *grpc_message);
/* The response half ended: every open call is filed, cut. */
void tt_grpc_calls_response_end(tt_grpc_calls *g, const tt_h2_stream_end *e);
/* A connection-level error: its reason on the open calls. */
void tt_grpc_calls_error(tt_grpc_calls *g, const char *why);
/* File the oldest open call evicted (false: none open), or all of them. */
bool tt_grpc_calls_evict_oldest(tt_grpc_calls *g);
void tt_grpc_calls_evict_all(tt_grpc_calls *g);

/* conn_h2c.c (h2c upgrade from HTTP/1.1, RFC 7540 3.2) */
/* A request head: watch it when it asks Upgrade: h2c. */
void tt_conn_h2c_request_head(conn_state *c, pending *p, const tt_http_head *h);
/* A request ended; true when it is the upgrade request and the server
 * already switched (it is HTTP/2's stream 1: not filed by HTTP/1.1). */
bool tt_conn_h2c_request_end(conn_state *c, pending *p, const tt_http_msg_end *end);
/* A response head answering owner; true when it is the 101 to h2c (not
 * the request's response: that comes over HTTP/2). */
bool tt_conn_h2c_response_head(conn_state *c, pending *owner, const tt_http_head *h);
/* An HTTP/1.1 parser's error that the upgrade explains (the 101 leaving
 * HTTP/1.1, the client preface after the upgrade request): not reported. */
bool tt_conn_h2c_quiet_error(const conn_state *c, tt_direction dir, tt_http_error code);
/* One chunk while c->h2c is set: to HTTP/1.1 or HTTP/2, cut at the switch. */
void tt_conn_h2c_chunk(conn_state *c, const tt_chunk *ch);
void tt_conn_h2c_release(conn_state *c);

#endif
