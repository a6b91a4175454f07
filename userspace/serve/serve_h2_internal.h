/* serve_h2_internal.h - what serve_h2.c (the HTTP/2 connection and its
 * streams) shares with serve_grpc.c (gRPC calls on those streams). Not for
 * other files. */
#ifndef TT_SERVE_H2_INTERNAL_H
#define TT_SERVE_H2_INTERNAL_H

#include <nghttp2/nghttp2.h>

#include "serve/serve_internal.h"

struct tt_serve_grpc;

typedef struct h2_stream {
    struct h2_stream *prev, *next;
    struct tt_serve_h2 *hc;
    int32_t id;
    serve_conn *sc;        /* the stream's connection; NULL once its response ended */
    serve_req *req;        /* the request being received; NULL once handed over */
    tt_sbuf pending;       /* response body bytes not yet in a DATA frame */
    bool submitted, eof, rst;
    bool grpc_ct;          /* content-type application/grpc... */
    struct tt_serve_grpc *grpc; /* a gRPC call stream (serve_grpc.c), else NULL */
} h2_stream;

struct tt_serve_h2 {
    serve_conn *c;
    nghttp2_session *session;
    h2_stream *streams;
    tt_sbuf out;           /* frames not yet taken by the socket */
    uint64_t recv_ns;      /* instant of the read being processed */
    bool busy;             /* inside nghttp2 (recv or send): no sending now */
    bool closing;
};

/* Take nghttp2's pending frames and write them to the socket (not while
 * inside nghttp2; the caller's later send takes them then). */
void tt_serve_h2_send(struct tt_serve_h2 *h);

/* ---- serve_grpc.c ---- */
/* The request HEADERS of a gRPC stream are whole: answer an unknown method
 * at once (grpc-status 12), else open the call (response HEADERS). -1 when
 * out of memory. */
int tt_serve_grpc_begin(struct tt_serve_h2 *h, h2_stream *st, const char *path);
/* Request DATA bytes of a gRPC stream: each whole message starts a request. */
void tt_serve_grpc_data(h2_stream *st, const uint8_t *data, size_t len);
/* The client half-closed the stream: trailers once every request is answered. */
void tt_serve_grpc_half_close(h2_stream *st);
/* The stream closed or its connection is going: stop its requests. */
void tt_serve_grpc_stop(h2_stream *st);
/* Free the stream's gRPC state (after tt_serve_grpc_stop). */
void tt_serve_grpc_free(h2_stream *st);

#endif
