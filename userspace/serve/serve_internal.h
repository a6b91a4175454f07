/* serve_internal.h - what the two halves of tokentap serve's event loops
 * share: serve_conn.c (a connection: reading requests, answering them,
 * writing the bytes) and serve_loop.c (the workers: threads, accept, the
 * hand-over between workers, timers). Not for other files. */
#ifndef TT_SERVE_INTERNAL_H
#define TT_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/http1.h"
#include "serve/serve.h"
#include "serve/serve_metrics.h"
#include "serve/serve_tls.h"

#define MAX_QUEUED_REQUESTS 64
#define READ_CHUNK (64u * 1024u)
#define SEG_KEEPALIVE (-2)

typedef struct serve_req {
    struct serve_req *next;
    uint32_t ordinal;
    char method[16];
    char path[256];
    bool path_too_long;
    char *request_id;      /* x-request-id, NULL when absent */
    char *h2c_settings;    /* --http2: HTTP2-Settings of a request asking Upgrade: h2c, else NULL */
    bool keep_alive;
    int version_minor;
    tt_sbuf body;
    bool body_too_large;
    uint64_t read_ns;      /* instant of the read() carrying the last byte */
} serve_req;

/* The bytes of one event (or head, or whole body) in the output stream
 * that are not yet all written. */
typedef struct out_seg {
    uint64_t wire_start;
    uint32_t pre, post;    /* framing around the body bytes (HTTP head, chunk lines) */
    uint32_t body_len;
    uint64_t body_off;
    int32_t index;         /* event index in its response; -1 for a head, SEG_KEEPALIVE */
    bool pre_is_head;      /* pre holds HTTP head bytes (else chunk framing) */
    bool partial;          /* a part of an event that is not its last (--split-at) */
    const char *kind;
    const serve_req *req;
} out_seg;

struct tt_serve_h2;
struct h2_stream;
struct tt_serve_grpc;

typedef struct serve_conn {
    tt_heap_item timer;    /* keyed by the next due instant of the active stream */
    struct serve_worker *srv;
    int fd;
    tt_serve_tls_conn *tls; /* --tls: the session on fd (its reads and writes go through it) */
    bool tls_read_wants_write; /* a TLS read (the handshake) waits for the socket to take bytes */
    bool tls_alpn_pending; /* --http2 --tls: the handshake (and so ALPN) is not complete yet */
    char peer[64];
    struct tt_serve_h2 *h2; /* --http2: the connection's nghttp2 session (serve_h2.c) */
    struct h2_stream *h2st; /* an HTTP/2 stream's own connection: its stream (NULL once ended) */
    int32_t stream_id;     /* > 0: this is one HTTP/2 stream (no socket, not in the list) */
    struct tt_serve_grpc *grpc; /* one gRPC request (message) on stream stream_id: its call
                                   (serve_grpc.c); NULL once the call is gone */
    struct serve_conn *gprev, *gnext; /* the call's other requests */
    uint64_t grpc_off;     /* gRPC: offset in the stream's response bytes where the last write began */
    bool h2_sniff;         /* --http2, nothing decided: the client preface or HTTP/1.1? */
    size_t sniff_have;     /* bytes of the preface matched so far (held: they are the preface's) */
    uint64_t fed;          /* bytes given to the HTTP/1.1 parser */
    serve_req *upgrade;    /* an h2c upgrade request, whole: answered 101, then as stream 1 */
    uint64_t upgrade_off;  /* the parser's offset just past it: HTTP/2 begins there */
    tt_http1_parser *parser;
    serve_req *parsing;    /* head seen, body still coming */
    serve_req *q_head, *q_tail; /* complete requests; q_head is answered first */
    size_t q_len;
    serve_req *retired;    /* answered; freed when their bytes are all written */
    uint32_t next_ordinal;

    bool active, chunked;
    tt_serve_request params;
    tt_serve_event *plan;
    size_t plan_n, plan_next;
    uint64_t token_due;    /* due instant of the next token */
    tt_prng rng;
    uint64_t body_off;
    uint64_t first_token_at, last_token_at; /* instants of the stream's token writes (0: none yet) */
    uint64_t itl_cursor;   /* replayed ITLs: position in the file */
    uint64_t generation_number; /* the server-wide number of the active generation request (1-based) */
    bool abort_at_end;     /* --close-after: the plan was cut; close without the body's end */

    /* The event being written (every event passes here; --split-at gives it parts). */
    bool part_active;
    tt_serve_event part_ev;
    size_t part_index;     /* its index in the plan */
    tt_sbuf part_frame;
    uint32_t part_cuts[TT_SERVE_MAX_SPLITS];
    size_t part_n_cuts, part_next;
    uint64_t part_due;     /* when the next part goes (after --split-pause-ms) */
    size_t held, held_from; /* --coalesce: events appended but not yet sent, from plan index held_from */
    uint64_t keepalive_due;

    tt_sbuf out;
    uint64_t wire_appended, wire_written;
    out_seg *segs;
    size_t seg_head, seg_n, seg_cap;

    bool want_out, reading, read_eof, parse_failed, error_sent, close_when_drained, dead;
    struct serve_conn *next_dead;
    struct serve_conn *prev, *next; /* every live connection of the server */
} serve_conn;

/* A connection accepted by worker 0 for another worker. */
typedef struct handoff {
    int fd;
    struct sockaddr_storage peer;
} handoff;

typedef struct serve_worker {
    struct tt_server *server;
    unsigned index;
    tt_serve_config cfg;
    tt_serve_log *log;     /* worker 0: the caller's; others: own_log, same file */
    tt_serve_log own_log;
    int listen_fd;         /* worker 0 only; -1 elsewhere */
    int epoll_fd, timer_fd;
    int inbox_fd;          /* eventfd: handed-over connections, or stop */
    pthread_mutex_t inbox_lock;
    handoff *inbox;
    size_t inbox_n, inbox_cap;
    atomic_bool stop;
    tt_heap heap;
    uint64_t armed_ns;
    serve_conn *dead;
    serve_conn *conns;
    bool warned_accept;
    pthread_mutex_t metrics_lock; /* /metrics on any worker reads every worker's histograms */
    tt_serve_metrics metrics;
    pthread_t thread;
    bool thread_started;
    int rc;
    uint8_t listen_tag, timer_tag, stop_tag, inbox_tag, halt_tag; /* addresses used as epoll tags */
    uint8_t read_buf[READ_CHUNK];
} serve_worker;

struct tt_server {
    char address[80];
    atomic_uint_fast64_t request_counter; /* generation requests begun, all workers */
    serve_worker **workers;
    unsigned n_workers;
    unsigned next_worker;  /* round-robin turn; worker 0's thread only */
    int halt_fd;           /* eventfd: a worker failed, worker 0 stops all */
    atomic_bool accept_paused; /* out of descriptors: worker 0 stopped accepting */
    tt_serve_tls *tls;     /* --tls, or NULL */
};

/* "a.b.c.d:port" or "[v6]:port" of sa into buf. */
void tt_serve_format_addr(const struct sockaddr *sa, char *buf, size_t buflen);

/* Take over an accepted socket as a connection of worker s (closed when
 * it cannot be). */
void tt_serve_conn_adopt(serve_worker *s, int fd, const struct sockaddr_storage *ss);

/* Close c now: out of the worker's list and epoll, onto its dead list. */
void tt_serve_conn_kill(serve_conn *c);

/* Free a connection from the dead list. */
void tt_serve_conn_free(serve_conn *c);

/* epoll said c is readable / writable. */
void tt_serve_conn_readable(serve_conn *c);
void tt_serve_conn_writable(serve_conn *c);

/* serve_conn.c, the connection side the answers (serve_respond.c) use. */
/* Queue bytes as one logged segment: pre framing (the head when
 * pre_is_head), body bytes (counted in the response body's offsets), post
 * framing; index is the event's (-1: none) and kind names the write in the log. */
void tt_serve_conn_append(serve_conn *c, const serve_req *req, int32_t index, const char *kind,
                          bool pre_is_head, const void *pre, size_t pre_len, const void *body, size_t body_len,
                          const void *post, size_t post_len);
/* Write what is queued now, each write logged at instant t (or now). */
void tt_serve_conn_flush_at(serve_conn *c, uint64_t t);
void tt_serve_conn_flush(serve_conn *c);
/* What epoll waits for on c: input while reading, output while bytes wait. */
void tt_serve_conn_update_events(serve_conn *c, bool reading, bool want_out);
/* Free a list of requests (linked by next). */
void tt_serve_free_reqs(serve_req *r);

/* serve_respond.c */
/* Answer what c can answer now (the next queued request, the stream's due events). */
void tt_serve_conn_pump(serve_conn *c);

/* The active stream's events due by now, written. */
void tt_serve_emit_due(serve_conn *c, uint64_t now);

/* A descriptor was freed: let worker 0 accept again if it had stopped. */
void tt_serve_resume_accept(serve_worker *s);

/* ---- serve_h2.c (--http2) ---- */
/* Give c (just accepted, or over TLS just after ALPN chose h2) an HTTP/2
 * server session. -1 when impossible. */
int tt_serve_h2_attach(serve_conn *c);
/* --http2, c->h2_sniff: the next n bytes read. 1: they complete the client
 * preface, c now has its HTTP/2 session and was given them (the caller
 * goes on with tt_serve_h2_readable); 0: still a prefix of the preface,
 * held; -1: HTTP/1.1 (the held prefix was fed to c->parser; the caller
 * feeds buf). */
int tt_serve_h2_sniff(serve_conn *c, const uint8_t *buf, size_t n, uint64_t now);
/* The HTTP2-Settings value decodes to a SETTINGS payload (base64url). */
bool tt_serve_h2_settings_ok(const char *b64);
/* h2c upgrade (RFC 7540 3.2): c->upgrade is whole. Write 101 Switching
 * Protocols, start the HTTP/2 session with it as stream 1 (answered over
 * HTTP/2), then give the session rest (bytes read after the request). -1:
 * c must be killed. */
int tt_serve_h2_upgrade(serve_conn *c, const uint8_t *rest, size_t len);
/* The HTTP/2 connection c is readable / writable / may have output. */
void tt_serve_h2_readable(serve_conn *c);
void tt_serve_h2_writable(serve_conn *c);
void tt_serve_h2_pump(serve_conn *c);
/* c (an HTTP/2 connection) is closing: kill its streams' connections. */
void tt_serve_h2_kill(serve_conn *c);
void tt_serve_h2_free(serve_conn *c);
/* A stream's connection hands its pending bytes (c->out, all taken) to its
 * stream: the head becomes HEADERS, the rest DATA. -1 on failure. */
int tt_serve_h2_write(serve_conn *c);
/* A stream's connection was killed: end its stream (END_STREAM, or
 * RST_STREAM when cut by --close-after or before any head). */
void tt_serve_h2_stream_end(serve_conn *c);

/* ---- serve_grpc.c (--profile triton-grpc) ---- */
/* A gRPC request's connection hands its pending bytes (c->out, all taken)
 * to the call's stream as one DATA frame; -1 when the call is gone. */
int tt_serve_grpc_write(serve_conn *c);
/* A gRPC request's connection was killed: it leaves its call (the call's
 * trailers go once the client half-closed and no request is left; a
 * --close-after cut resets the stream). */
void tt_serve_grpc_request_end(serve_conn *c);

#endif
