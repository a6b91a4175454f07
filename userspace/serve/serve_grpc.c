/* serve_grpc.c - gRPC calls for tokentap serve --http2 --profile triton-grpc:
 * /inference.GRPCInferenceService/ModelStreamInfer answered as a decoupled
 * Triton model does (docs/serve.md, "triton-grpc").
 *
 * The call is one HTTP/2 stream (serve_h2.c) whose request DATA carries
 * gRPC length-prefixed messages (1 byte compressed flag, 4-byte big-endian
 * length, a ModelInferRequest). Each whole message becomes a request of its
 * own: a serve_conn (grpc set, no socket) answered by serve_respond.c on its
 * own schedule (TTFT from the read that carried the message's last byte),
 * whose writes are ModelStreamInferResponse messages (serve_triton.c). The
 * requests of one call run concurrently and their writes interleave on the
 * stream; every write is one DATA frame (the data provider stops at each
 * write's end). The call's response HEADERS go out when its request HEADERS
 * arrive; after the client half-closes and every request is answered, the
 * trailers (grpc-status 0). An unknown method is answered trailers-only
 * (grpc-status 12); a message that cannot be read ends the call with
 * grpc-status 3 (8 when over the body limit) and stops its requests. */
#include "serve/serve_h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_profile.h"

#define GRPC_STATUS_OK 0
#define GRPC_STATUS_INVALID_ARGUMENT 3
#define GRPC_STATUS_RESOURCE_EXHAUSTED 8
#define GRPC_STATUS_UNIMPLEMENTED 12
#define MAX_CALL_REQUESTS 256  /* requests answered at once on one call */

struct tt_serve_grpc {
    struct tt_serve_h2 *h;
    h2_stream *st;
    char path[256];
    tt_sbuf in;            /* request bytes not yet a whole message */
    serve_conn *requests;  /* live requests of the call */
    size_t n_requests;
    tt_sbuf pending;       /* response bytes not yet in DATA frames */
    uint32_t *writes;      /* byte counts of the writes in pending, oldest first */
    size_t w_head, w_n, w_cap;
    uint64_t handed;       /* response bytes handed over so far */
    bool half_closed;      /* the client's END_STREAM came */
    bool ended;            /* the trailers are due once pending is sent */
    bool reset;            /* --close-after: RST_STREAM instead of trailers */
    uint32_t messages;     /* request messages read */
    int status;
    char message[200];     /* grpc-message, percent-encoded */
};

/* grpc-message: percent-encode what is not printable ASCII, and '%'. */
static void set_message(struct tt_serve_grpc *g, const char *msg)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 4 < sizeof g->message; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') g->message[o++] = (char)*p;
        else o += (size_t)snprintf(g->message + o, sizeof g->message - o, "%%%02X", *p);
    }
    g->message[o] = 0;
}

static void push_write(struct tt_serve_grpc *g, uint32_t n)
{
    if (g->w_head + g->w_n == g->w_cap) {
        if (g->w_head) {
            memmove(g->writes, g->writes + g->w_head, g->w_n * sizeof *g->writes);
            g->w_head = 0;
        } else {
            size_t cap = g->w_cap ? g->w_cap * 2 : 16;
            uint32_t *p = realloc(g->writes, cap * sizeof *p);
            if (!p) { g->pending.oom = true; return; }
            g->writes = p;
            g->w_cap = cap;
        }
    }
    g->writes[g->w_head + g->w_n++] = n;
}

static ssize_t grpc_data_read(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length,
                              uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)user_data;
    struct tt_serve_grpc *g = source->ptr;
    if (g->w_n) {
        /* one write per DATA frame: stop at the end of the oldest write */
        uint32_t *w = &g->writes[g->w_head];
        size_t n = *w < length ? *w : length;
        memcpy(buf, g->pending.p, n);
        tt_sbuf_consume(&g->pending, n);
        *w -= (uint32_t)n;
        if (*w == 0) {
            g->w_head++;
            if (--g->w_n == 0) g->w_head = 0;
        }
        return (ssize_t)n;
    }
    if (g->reset) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM INTERNAL_ERROR */
    if (!g->ended) return NGHTTP2_ERR_DEFERRED;
    char status[12];
    snprintf(status, sizeof status, "%d", g->status);
    nghttp2_nv nv[2] = {
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"grpc-message", (uint8_t *)g->message, 12, strlen(g->message), NGHTTP2_NV_FLAG_NONE},
    };
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(session, id, nv, g->message[0] ? 2 : 1) != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static void kick(struct tt_serve_grpc *g)
{
    nghttp2_session_resume_data(g->h->session, g->st->id);
    tt_serve_h2_send(g->h);
}

/* Stop every request of the call (their writes end here). */
static void stop_requests(struct tt_serve_grpc *g)
{
    while (g->requests) {
        serve_conn *sc = g->requests;
        g->requests = sc->gnext;
        g->n_requests--;
        sc->gprev = sc->gnext = NULL;
        sc->grpc = NULL;
        tt_serve_conn_kill(sc);
    }
}

/* End the call now with status (its requests stopped). */
static void fail(struct tt_serve_grpc *g, int status, const char *msg)
{
    if (g->ended) return;
    stop_requests(g);
    g->ended = true;
    g->status = status;
    set_message(g, msg);
    tt_sbuf_free(&g->in);
    kick(g);
}

static void maybe_finish(struct tt_serve_grpc *g)
{
    if (g->ended || !g->half_closed || g->requests) return;
    g->ended = true;
    g->status = GRPC_STATUS_OK;
    kick(g);
}

int tt_serve_grpc_begin(struct tt_serve_h2 *h, h2_stream *st, const char *path)
{
    struct tt_serve_grpc *g = calloc(1, sizeof *g);
    if (!g) return -1;
    g->h = h;
    g->st = st;
    snprintf(g->path, sizeof g->path, "%s", path);
    st->grpc = g;
    st->submitted = true;
    tt_serve_api api;
    bool known = tt_serve_route(h->c->srv->cfg.profile, path, &api) > 0 && api == TT_API_TRITON_STREAM;
    if (!known) {
        /* trailers-only: one HEADERS frame with END_STREAM */
        char msg[300];
        snprintf(msg, sizeof msg, "unknown method %.250s", path);
        set_message(g, msg);
        g->ended = true;
        g->status = GRPC_STATUS_UNIMPLEMENTED;
        nghttp2_nv nv[] = {
            {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
            {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
            {(uint8_t *)"grpc-status", (uint8_t *)"12", 11, 2, NGHTTP2_NV_FLAG_NONE},
            {(uint8_t *)"grpc-message", (uint8_t *)g->message, 12, strlen(g->message), NGHTTP2_NV_FLAG_NONE},
        };
        return nghttp2_submit_response(h->session, st->id, nv, 4, NULL) == 0 ? 0 : -1;
    }
    nghttp2_nv nv[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider prd = {.source.ptr = g, .read_callback = grpc_data_read};
    return nghttp2_submit_response(h->session, st->id, nv, 2, &prd) == 0 ? 0 : -1;
}

/* One whole ModelInferRequest: check it, then answer it as a request of its own. */
static void start_request(struct tt_serve_grpc *g, const uint8_t *msg, size_t len)
{
    serve_conn *c = g->h->c;
    serve_worker *s = c->srv;
    tt_serve_request probe;
    char err[200];
    if (g->n_requests == MAX_CALL_REQUESTS) {
        snprintf(err, sizeof err, "more than %d requests at once on one call", MAX_CALL_REQUESTS);
        fail(g, GRPC_STATUS_RESOURCE_EXHAUSTED, err);
        return;
    }
    if (tt_serve_request_parse(s->cfg.profile, TT_API_TRITON_STREAM, (const char *)msg, len, &s->cfg.gen, NULL, 0, 0,
                               &probe, err, sizeof err) != 0) {
        fail(g, GRPC_STATUS_INVALID_ARGUMENT, err);
        return;
    }
    serve_req *r = calloc(1, sizeof *r);
    serve_conn *sc = r ? calloc(1, sizeof *sc) : NULL;
    if (!sc || (probe.id[0] && !(r->request_id = strdup(probe.id)))) {
        if (r) free(r->request_id);
        free(r);
        free(sc);
        fail(g, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    r->ordinal = ++g->messages; /* the message's number on its call */
    snprintf(r->method, sizeof r->method, "POST");
    snprintf(r->path, sizeof r->path, "%s", g->path);
    r->read_ns = g->h->recv_ns;
    tt_sbuf_put(&r->body, msg, len);
    if (r->body.oom) {
        tt_serve_free_reqs(r);
        free(sc);
        fail(g, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sc->srv = s;
    sc->fd = -1;
    sc->timer.slot = SIZE_MAX;
    memcpy(sc->peer, c->peer, sizeof sc->peer);
    sc->stream_id = g->st->id;
    sc->grpc = g;
    sc->gnext = g->requests;
    if (g->requests) g->requests->gprev = sc;
    g->requests = sc;
    g->n_requests++;
    sc->q_head = sc->q_tail = r;
    sc->q_len = 1;
    tt_serve_conn_pump(sc);
}

void tt_serve_grpc_data(h2_stream *st, const uint8_t *data, size_t len)
{
    struct tt_serve_grpc *g = st->grpc;
    if (g->ended) return;
    tt_sbuf_put(&g->in, data, len);
    size_t off = 0;
    while (!g->ended && !g->in.oom && g->in.len - off >= 5) {
        const uint8_t *p = (const uint8_t *)g->in.p + off;
        uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        if (p[0] != 0) {
            fail(g, GRPC_STATUS_INVALID_ARGUMENT,
                 p[0] == 1 ? "compressed messages are not supported" : "bad gRPC message prefix");
            return;
        }
        if (n > g->h->c->srv->cfg.max_body) {
            char msg[80];
            snprintf(msg, sizeof msg, "message of %u bytes over the limit of %zu", n, g->h->c->srv->cfg.max_body);
            fail(g, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
            return;
        }
        if (g->in.len - off - 5 < n) break;
        start_request(g, p + 5, n);
        off += 5 + (size_t)n;
    }
    if (g->ended) return;
    if (g->in.oom) {
        fail(g, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    tt_sbuf_consume(&g->in, off);
}

void tt_serve_grpc_half_close(h2_stream *st)
{
    struct tt_serve_grpc *g = st->grpc;
    g->half_closed = true;
    if (!g->ended && g->in.len) {
        fail(g, GRPC_STATUS_INVALID_ARGUMENT, "the stream ended inside a message");
        return;
    }
    maybe_finish(g);
}

int tt_serve_grpc_write(serve_conn *sc)
{
    struct tt_serve_grpc *g = sc->grpc;
    if (!g || g->ended) return -1;
    sc->grpc_off = g->handed;
    if (sc->out.len > UINT32_MAX) return -1;
    tt_sbuf_put(&g->pending, sc->out.p, sc->out.len);
    push_write(g, (uint32_t)sc->out.len);
    if (g->pending.oom) return -1;
    g->handed += sc->out.len;
    kick(g);
    return 0;
}

void tt_serve_grpc_request_end(serve_conn *sc)
{
    struct tt_serve_grpc *g = sc->grpc;
    if (!g) return;
    if (sc->gprev) sc->gprev->gnext = sc->gnext;
    else g->requests = sc->gnext;
    if (sc->gnext) sc->gnext->gprev = sc->gprev;
    g->n_requests--;
    sc->gprev = sc->gnext = NULL;
    sc->grpc = NULL;
    if (g->h->c->dead) return;
    if (sc->abort_at_end && !g->ended) {
        /* --close-after: the call is cut, as a connection would be */
        stop_requests(g);
        g->ended = g->reset = true;
        kick(g);
        return;
    }
    maybe_finish(g);
}

void tt_serve_grpc_stop(h2_stream *st)
{
    struct tt_serve_grpc *g = st->grpc;
    if (!g) return;
    g->ended = true;
    stop_requests(g);
}

void tt_serve_grpc_free(h2_stream *st)
{
    struct tt_serve_grpc *g = st->grpc;
    if (!g) return;
    stop_requests(g);
    tt_sbuf_free(&g->in);
    tt_sbuf_free(&g->pending);
    free(g->writes);
    free(g);
    st->grpc = NULL;
}
