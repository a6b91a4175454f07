/* serve_h2.c - tokentap serve --http2: HTTP/2 through nghttp2's server
 * session, over cleartext (h2c) with prior knowledge or upgraded from
 * HTTP/1.1 (RFC 7540 3.2), or over TLS when ALPN chose h2 (--tls: the
 * frames go through the connection's SSL session).
 *
 * A cleartext connection begins undecided: the client's first bytes are
 * matched against the preface. The preface whole: the session starts.
 * Anything else: HTTP/1.1 (serve_conn.c), where a first request with
 * Upgrade: h2c and a valid HTTP2-Settings is answered 101 Switching
 * Protocols once whole, and then over HTTP/2 as stream 1
 * (nghttp2_session_upgrade2); other HTTP/1.1 requests are answered as
 * without --http2.
 *
 * The socket's connection (serve_conn with h2 set) owns the nghttp2 session
 * and writes its frames. Each request stream gets a connection of its own
 * (serve_conn with stream_id set: no socket, not in the worker's list) that
 * answers its one request exactly as the HTTP/1.1 path does, on the same
 * schedule and through the same code (serve_conn.c), with HTTP/1.0-style
 * framing (no chunks). What that connection "writes" is handed here: its
 * head becomes the response HEADERS, every later write one DATA frame sent
 * at once (the data provider answers NGHTTP2_ERR_DEFERRED until bytes are
 * pending; the write resumes it). The stream's connection logs the write.
 * Under --profile triton-grpc a stream whose content-type is
 * application/grpc is a gRPC call instead: serve_grpc.c takes its DATA
 * (each message a request of its own) and answers it. */
#include "serve/serve_h2_internal.h"

#include <ctype.h>
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define H2_MAX_HEADERS 24
#define H2_OUT_HIGH (256u * 1024u)


static void req_drop(serve_req *r)
{
    if (!r) return;
    free(r->request_id);
    free(r->h2c_settings);
    tt_sbuf_free(&r->body);
    free(r);
}

static void stream_free(struct tt_serve_h2 *h, h2_stream *st)
{
    if (st->prev) st->prev->next = st->next;
    else h->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    req_drop(st->req);
    tt_sbuf_free(&st->pending);
    tt_serve_grpc_free(st);
    free(st);
}

static void set_out(serve_conn *c, bool want)
{
    if (c->dead || c->want_out == want) return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(c->srv->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
        tt_serve_conn_kill(c);
        return;
    }
    c->want_out = want;
}

void tt_serve_h2_send(struct tt_serve_h2 *h)
{
    serve_conn *c = h->c;
    if (c->dead || h->busy) return;
    for (;;) {
        h->busy = true;
        while (h->out.len < H2_OUT_HIGH) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(h->session, &data);
            if (n < 0) {
                h->busy = false;
                tt_serve_conn_kill(c);
                return;
            }
            if (n == 0) break;
            tt_sbuf_put(&h->out, data, (size_t)n);
        }
        h->busy = false;
        if (c->dead) return;
        if (h->out.oom) { tt_serve_conn_kill(c); return; }
        if (h->out.len == 0 || c->want_out) break;
        ssize_t n;
        if (c->tls) {
            n = tt_serve_tls_write(c->tls, h->out.p, h->out.len);
            if (n == TT_SERVE_TLS_WANT_WRITE) { set_out(c, true); return; }
            if (n == TT_SERVE_TLS_WANT_READ) return; /* the next read goes on (readable calls h2_send) */
            if (n <= 0) { tt_serve_conn_kill(c); return; }
        } else {
            n = send(c->fd, h->out.p, h->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) set_out(c, true);
                else tt_serve_conn_kill(c);
                return;
            }
        }
        tt_sbuf_consume(&h->out, (size_t)n);
        if (h->out.len) { set_out(c, true); return; }
    }
    if (!c->dead && h->out.len == 0 && !nghttp2_session_want_read(h->session) &&
        !nghttp2_session_want_write(h->session))
        tt_serve_conn_kill(c);
}

static ssize_t data_read(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)session; (void)id; (void)user_data;
    h2_stream *st = source->ptr;
    if (st->pending.len) {
        size_t n = st->pending.len < length ? st->pending.len : length;
        memcpy(buf, st->pending.p, n);
        tt_sbuf_consume(&st->pending, n);
        if (!st->pending.len && st->eof && !st->rst) *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
    }
    if (st->rst) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM INTERNAL_ERROR */
    if (st->eof) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    return NGHTTP2_ERR_DEFERRED;
}

/* The HTTP/1.x head the stream's connection built, as HEADERS. */
static int submit_head(struct tt_serve_h2 *h, h2_stream *st, const char *p, size_t len)
{
    char *head = strndup(p, len);
    if (!head) return -1;
    nghttp2_nv nv[H2_MAX_HEADERS];
    size_t n = 0;
    char status[4] = "500";
    if (len >= 12 && !strncmp(head, "HTTP/1.", 7)) memcpy(status, head + 9, 3);
    nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
    char *line = strstr(head, "\r\n");
    while (line && n < H2_MAX_HEADERS) {
        line += 2;
        char *eol = strstr(line, "\r\n");
        if (!eol || eol == line) break;
        *eol = 0;
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = 0;
            char *v = colon + 1;
            while (*v == ' ') v++;
            for (char *k = line; *k; k++) *k = (char)tolower((unsigned char)*k);
            /* connection-specific fields are not allowed in HTTP/2 */
            if (strcmp(line, "connection") && strcmp(line, "transfer-encoding") && strcmp(line, "keep-alive"))
                nv[n++] = (nghttp2_nv){(uint8_t *)line, (uint8_t *)v, strlen(line), strlen(v), NGHTTP2_NV_FLAG_NONE};
        }
        line = eol;
    }
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = data_read};
    int rv = nghttp2_submit_response(h->session, st->id, nv, n, &prd); /* copies nv */
    free(head);
    if (rv != 0) return -1;
    st->submitted = true;
    return 0;
}

int tt_serve_h2_write(serve_conn *sc)
{
    h2_stream *st = sc->h2st;
    if (!st) return -1;
    struct tt_serve_h2 *h = st->hc;
    const char *p = sc->out.p;
    size_t len = sc->out.len, skip = 0;
    if (!st->submitted) {
        const char *end = memmem(p, len, "\r\n\r\n", 4);
        if (!end) return -1;
        skip = (size_t)(end + 4 - p);
        if (submit_head(h, st, p, skip) != 0) return -1;
    }
    if (len > skip) {
        tt_sbuf_put(&st->pending, p + skip, len - skip);
        if (st->pending.oom) return -1;
        nghttp2_session_resume_data(h->session, st->id);
    }
    tt_serve_h2_send(h);
    return 0;
}

void tt_serve_h2_stream_end(serve_conn *sc)
{
    h2_stream *st = sc->h2st;
    if (!st) return;
    struct tt_serve_h2 *h = st->hc;
    sc->h2st = NULL;
    st->sc = NULL;
    st->eof = true;
    if (h->c->dead) return;
    if (!st->submitted) {
        nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    } else {
        if (sc->abort_at_end) st->rst = true; /* --close-after: the stream is cut, not ended */
        nghttp2_session_resume_data(h->session, st->id);
    }
    tt_serve_h2_send(h);
}

/* ---- request callbacks ---- */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct tt_serve_h2 *h = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    h2_stream *st = calloc(1, sizeof *st);
    serve_req *r = st ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        free(st);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    r->ordinal = ++h->c->next_ordinal;
    r->keep_alive = false;
    r->version_minor = 0; /* no chunked framing: DATA frames carry the bytes */
    snprintf(r->method, sizeof r->method, "-");
    snprintf(r->path, sizeof r->path, "-");
    st->hc = h;
    st->id = frame->hd.stream_id;
    st->req = r;
    st->next = h->streams;
    if (h->streams) h->streams->prev = st;
    h->streams = st;
    nghttp2_session_set_stream_user_data(session, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data)
{
    (void)flags; (void)user_data;
    h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st || !st->req) return 0;
    serve_req *r = st->req;
    if (namelen == 7 && !memcmp(name, ":method", 7)) {
        size_t n = valuelen < sizeof r->method ? valuelen : sizeof r->method - 1;
        memcpy(r->method, value, n);
        r->method[n] = 0;
    } else if (namelen == 5 && !memcmp(name, ":path", 5)) {
        size_t n = valuelen;
        const uint8_t *q = memchr(value, '?', n);
        if (q) n = (size_t)(q - value);
        if (n >= sizeof r->path) {
            r->path_too_long = true;
            n = sizeof r->path - 1;
        }
        memcpy(r->path, value, n);
        r->path[n] = 0;
    } else if (namelen == 12 && !memcmp(name, "x-request-id", 12) && !r->request_id) {
        r->request_id = strndup((const char *)value, valuelen);
    } else if (namelen == 12 && !memcmp(name, "content-type", 12)) {
        st->grpc_ct = valuelen >= 16 && !memcmp(value, "application/grpc", 16);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                         void *user_data)
{
    (void)flags;
    struct tt_serve_h2 *h = user_data;
    h2_stream *st = nghttp2_session_get_stream_user_data(session, id);
    if (st && st->grpc) {
        tt_serve_grpc_data(st, data, len);
        return 0;
    }
    if (!st || !st->req || st->req->body_too_large) return 0;
    serve_req *r = st->req;
    if (r->body.len + len > h->c->srv->cfg.max_body) {
        r->body_too_large = true;
        tt_sbuf_free(&r->body);
        return 0;
    }
    tt_sbuf_put(&r->body, data, len);
    if (r->body.oom) {
        r->body_too_large = true;
        tt_sbuf_free(&r->body);
    }
    return 0;
}

/* The request is whole: its own connection answers it. */
static int start_request(struct tt_serve_h2 *h, h2_stream *st)
{
    serve_conn *c = h->c;
    serve_conn *sc = calloc(1, sizeof *sc);
    if (!sc) return -1;
    sc->srv = c->srv;
    sc->fd = -1;
    sc->timer.slot = SIZE_MAX;
    memcpy(sc->peer, c->peer, sizeof sc->peer);
    sc->stream_id = st->id;
    sc->h2st = st;
    st->sc = sc;
    serve_req *r = st->req;
    st->req = NULL;
    r->read_ns = h->recv_ns;
    sc->q_head = sc->q_tail = r;
    sc->q_len = 1;
    tt_serve_conn_pump(sc);
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct tt_serve_h2 *h = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && st->req && st->grpc_ct &&
        h->c->srv->cfg.profile->id == TT_PROFILE_TRITON_GRPC) {
        /* a gRPC call: its messages are requests of their own (serve_grpc.c) */
        int rv = tt_serve_grpc_begin(h, st, st->req->path);
        req_drop(st->req);
        st->req = NULL;
        if (rv != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    if (st->grpc) {
        tt_serve_grpc_half_close(st);
        return 0;
    }
    if (!st->req) return 0;
    if (start_request(h, st) != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *user_data)
{
    (void)error_code;
    struct tt_serve_h2 *h = user_data;
    if (h->closing) return 0;
    h2_stream *st = nghttp2_session_get_stream_user_data(session, id);
    if (!st) return 0;
    nghttp2_session_set_stream_user_data(session, id, NULL);
    if (st->grpc) tt_serve_grpc_stop(st);
    if (st->sc) {
        /* reset by the client: its response stops */
        serve_conn *sc = st->sc;
        st->sc = NULL;
        sc->h2st = NULL;
        tt_serve_conn_kill(sc);
    }
    stream_free(h, st);
    return 0;
}

/* ---- the connection ---- */

int tt_serve_h2_attach(serve_conn *c)
{
    struct tt_serve_h2 *h = calloc(1, sizeof *h);
    if (!h) return -1;
    h->c = c;
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        free(h);
        return -1;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    int rv = nghttp2_session_server_new(&h->session, cb, h);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) {
        free(h);
        return -1;
    }
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_QUEUED_REQUESTS * 2}};
    if (nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0) {
        nghttp2_session_del(h->session);
        free(h);
        return -1;
    }
    c->h2 = h;
    return 0;
}

void tt_serve_h2_readable(serve_conn *c)
{
    struct tt_serve_h2 *h = c->h2;
    uint8_t *buf = c->srv->read_buf;
    for (;;) {
        ssize_t n = c->tls ? tt_serve_tls_read(c->tls, buf, READ_CHUNK) : recv(c->fd, buf, READ_CHUNK, MSG_DONTWAIT);
        if (n > 0) {
            h->recv_ns = tt_serve_mono_ns();
            h->busy = true;
            ssize_t rv = nghttp2_session_mem_recv(h->session, buf, (size_t)n);
            h->busy = false;
            if (c->dead) return;
            if (rv < 0) {
                tt_serve_conn_kill(c);
                return;
            }
            continue;
        }
        if (n == 0) {
            tt_serve_conn_kill(c);
            return;
        }
        if (c->tls) {
            if (n == TT_SERVE_TLS_WANT_READ) break;
            if (n == TT_SERVE_TLS_WANT_WRITE) {
                c->tls_read_wants_write = true;
                set_out(c, true);
                break;
            }
            tt_serve_conn_kill(c);
            return;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            tt_serve_conn_kill(c);
            return;
        }
        break;
    }
    tt_serve_h2_send(h);
}

void tt_serve_h2_writable(serve_conn *c)
{
    set_out(c, false);
    if (c->tls_read_wants_write) {
        /* a TLS read could not send its bytes: go on reading (it sends too) */
        c->tls_read_wants_write = false;
        tt_serve_h2_readable(c);
        return;
    }
    if (!c->dead) tt_serve_h2_send(c->h2);
}

void tt_serve_h2_pump(serve_conn *c)
{
    if (!c->dead) tt_serve_h2_send(c->h2);
}

void tt_serve_h2_kill(serve_conn *c)
{
    struct tt_serve_h2 *h = c->h2;
    for (h2_stream *st = h->streams; st; st = st->next) {
        if (st->grpc) tt_serve_grpc_stop(st);
        if (!st->sc) continue;
        serve_conn *sc = st->sc;
        st->sc = NULL;
        sc->h2st = NULL;
        tt_serve_conn_kill(sc);
    }
}

void tt_serve_h2_free(serve_conn *c)
{
    struct tt_serve_h2 *h = c->h2;
    h->closing = true;
    nghttp2_session_del(h->session);
    while (h->streams) stream_free(h, h->streams);
    tt_sbuf_free(&h->out);
    free(h);
    c->h2 = NULL;
}

/* ---- the client preface, or HTTP/1.1 with an h2c upgrade ---- */

static const char client_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof client_preface - 1)

/* Bytes the session takes while it is being started: as a read. */
static int h2_recv(struct tt_serve_h2 *h, const uint8_t *p, size_t n)
{
    if (!n) return 0;
    h->busy = true;
    ssize_t rv = nghttp2_session_mem_recv(h->session, p, n);
    h->busy = false;
    return rv < 0 || h->c->dead ? -1 : 0;
}

int tt_serve_h2_sniff(serve_conn *c, const uint8_t *buf, size_t n, uint64_t now)
{
    size_t have = c->sniff_have, m = n < PREFACE_LEN - have ? n : PREFACE_LEN - have;
    if (memcmp(buf, client_preface + have, m) != 0) {
        c->h2_sniff = false;
        tt_http1_feed(c->parser, (const uint8_t *)client_preface, have, now);
        c->fed += have;
        return -1;
    }
    c->sniff_have += m;
    if (c->sniff_have < PREFACE_LEN) return 0;
    c->h2_sniff = false;
    if (tt_serve_h2_attach(c) != 0) {
        tt_serve_conn_kill(c);
        return 1;
    }
    c->h2->recv_ns = now;
    if (h2_recv(c->h2, (const uint8_t *)client_preface, have) != 0 || h2_recv(c->h2, buf, n) != 0)
        tt_serve_conn_kill(c);
    return 1;
}

static int b64url_val(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '-') return 62;
    if (ch == '_') return 63;
    return -1;
}

/* base64url (RFC 4648 5, no padding per RFC 7540 3.2.1; '=' tolerated) into
 * out; the length, or -1 when not base64url or over cap. */
static ssize_t b64url_decode(const char *s, uint8_t *out, size_t cap)
{
    size_t len = strlen(s), n = 0;
    while (len && s[len - 1] == '=') len--;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_val(s[i]);
        if (v < 0) return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n >= cap) return -1;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    return (ssize_t)n;
}

#define H2C_SETTINGS_MAX 256 /* bytes of SETTINGS payload accepted in HTTP2-Settings */

bool tt_serve_h2_settings_ok(const char *b64)
{
    uint8_t buf[H2C_SETTINGS_MAX];
    ssize_t n = b64url_decode(b64, buf, sizeof buf);
    return n >= 0 && n % 6 == 0;
}

int tt_serve_h2_upgrade(serve_conn *c, const uint8_t *rest, size_t len)
{
    serve_req *r = c->upgrade;
    uint8_t settings[H2C_SETTINGS_MAX];
    ssize_t sn = b64url_decode(r->h2c_settings, settings, sizeof settings);
    if (sn < 0 || tt_serve_h2_attach(c) != 0) return -1;
    struct tt_serve_h2 *h = c->h2;
    static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    tt_sbuf_put(&h->out, sw, sizeof sw - 1); /* before the server's SETTINGS */
    h2_stream *st = calloc(1, sizeof *st);
    if (!st) return -1;
    c->upgrade = NULL;
    st->hc = h;
    st->id = 1;
    st->req = r;
    st->next = h->streams;
    if (h->streams) h->streams->prev = st;
    h->streams = st;
    r->keep_alive = false;
    r->version_minor = 0; /* no chunked framing: DATA frames carry the bytes */
    int head = !strcmp(r->method, "HEAD");
    if (nghttp2_session_upgrade2(h->session, settings, (size_t)sn, head, st) != 0) return -1;
    nghttp2_session_set_stream_user_data(h->session, 1, st);
    h->recv_ns = r->read_ns;
    if (start_request(h, st) != 0) return -1;
    if (c->dead) return 0;
    h->recv_ns = tt_serve_mono_ns();
    if (h2_recv(h, rest, len) != 0) return -1;
    tt_serve_h2_send(h);
    return 0;
}
