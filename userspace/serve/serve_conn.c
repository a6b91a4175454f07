/* serve_conn.c - one connection of tokentap serve: its requests read and
 * parsed, each answered by its profile (a stream on the schedule, faults on
 * demand), the bytes written with every write logged (serve_internal.h). */
#include "serve/serve_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "proto/http1.h"
#include "serve/serve_metrics.h"

uint64_t tt_serve_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tt_serve_format_addr(const struct sockaddr *sa, char *buf, size_t buflen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(buf, buflen, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(buf, buflen, "[%s]:%u", host, port);
    } else {
        snprintf(buf, buflen, "?");
    }
}

/* ---- connections ---- */

static void req_free(serve_req *r)
{
    if (!r) return;
    free(r->request_id);
    free(r->h2c_settings);
    tt_sbuf_free(&r->body);
    free(r);
}

void tt_serve_free_reqs(serve_req *r)
{
    while (r) {
        serve_req *next = r->next;
        req_free(r);
        r = next;
    }
}

void tt_serve_conn_kill(serve_conn *c)
{
    if (c->dead) return;
    serve_worker *s = c->srv;
    c->dead = true;
    if (c->stream_id) {
        /* an HTTP/2 stream: no socket of its own */
        tt_heap_remove(&s->heap, &c->timer);
        if (c->grpc) tt_serve_grpc_request_end(c);
        else tt_serve_h2_stream_end(c);
        c->next_dead = s->dead;
        s->dead = c;
        return;
    }
    if (c->h2) tt_serve_h2_kill(c);
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    tt_heap_remove(&s->heap, &c->timer);
    epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    tt_serve_tls_close_notify(c->tls);
    close(c->fd);
    c->fd = -1;
    c->next_dead = s->dead;
    s->dead = c;
    tt_serve_resume_accept(s);
}

void tt_serve_conn_free(serve_conn *c)
{
    if (c->h2) tt_serve_h2_free(c);
    tt_serve_tls_conn_free(c->tls);
    tt_http1_free(c->parser);
    req_free(c->parsing);
    req_free(c->upgrade);
    tt_serve_free_reqs(c->q_head);
    tt_serve_free_reqs(c->retired);
    free(c->plan);
    free(c->segs);
    tt_sbuf_free(&c->out);
    tt_sbuf_free(&c->part_frame);
    free(c);
}

/* Tell epoll what the connection waits for: input while still reading,
 * output while bytes are pending a full socket buffer. */
void tt_serve_conn_update_events(serve_conn *c, bool reading, bool want_out)
{
    if (c->dead || (c->reading == reading && c->want_out == want_out)) return;
    struct epoll_event ev = {.events = (reading ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(c->srv->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
        tt_serve_conn_kill(c);
        return;
    }
    c->reading = reading;
    c->want_out = want_out;
}

static void set_want_out(serve_conn *c, bool want) { tt_serve_conn_update_events(c, c->reading, want); }

/* Describe one send() of n bytes begun at t in the log, and drop the
 * segments it completed. */
static void log_write(serve_conn *c, uint64_t t, size_t n)
{
    uint64_t w0 = c->wire_written, w1 = w0 + n;
    tt_sbuf *b = tt_serve_log_begin(c->srv->log);
    const serve_req *req = c->seg_n > c->seg_head ? c->segs[c->seg_head].req : NULL;
    uint64_t head_len = 0, body_len = 0, body_off = 0;
    bool have_body = false;
    size_t n_keepalive = 0;
    int32_t partial = -1; /* the event this write starts or continues without completing it */
    size_t first = c->seg_head, i = first;
    for (; i < c->seg_n; i++) {
        const out_seg *sg = &c->segs[i];
        if (sg->wire_start >= w1) break;
        uint64_t bs = sg->wire_start + sg->pre, be = bs + sg->body_len;
        uint64_t lo = w0 > sg->wire_start ? w0 : sg->wire_start;
        uint64_t hi = w1 < bs ? w1 : bs;
        if (sg->pre_is_head && hi > lo) head_len += hi - lo;
        lo = w0 > bs ? w0 : bs;
        hi = w1 < be ? w1 : be;
        if (hi > lo) {
            if (!have_body) body_off = sg->body_off + (lo - bs);
            have_body = true;
            body_len += hi - lo;
        }
        if (be + sg->post > w1) {
            if (sg->index >= 0) partial = sg->index;
            break;
        }
        if (sg->index == SEG_KEEPALIVE) n_keepalive++;
        partial = sg->index >= 0 && sg->partial ? sg->index : -1;
    }
    size_t done_to = i; /* segments [first, done_to) are complete */
    if (b) {
        tt_sbuf_puts(b, "{\"type\":\"write\",\"mono_ns\":");
        tt_sbuf_u64(b, t);
        tt_sbuf_puts(b, ",\"peer\":");
        tt_sbuf_json_str(b, c->peer, strlen(c->peer));
        tt_sbuf_puts(b, ",\"ordinal\":");
        tt_sbuf_u64(b, req ? req->ordinal : 0);
        tt_sbuf_puts(b, ",\"request_id\":");
        if (req && req->request_id) tt_sbuf_json_str(b, req->request_id, strlen(req->request_id));
        else tt_sbuf_puts(b, "null");
        if (c->stream_id) tt_sbuf_printf(b, ",\"stream_id\":%d", (int)c->stream_id);
        if (c->grpc) tt_sbuf_printf(b, ",\"stream_off\":%llu", (unsigned long long)c->grpc_off);
        tt_sbuf_puts(b, ",\"wire_len\":");
        tt_sbuf_u64(b, n);
        tt_sbuf_puts(b, ",\"head_len\":");
        tt_sbuf_u64(b, head_len);
        tt_sbuf_puts(b, ",\"body_off\":");
        tt_sbuf_u64(b, body_off);
        tt_sbuf_puts(b, ",\"len\":");
        tt_sbuf_u64(b, body_len);
        tt_sbuf_puts(b, ",\"events\":[");
        bool comma = false;
        for (size_t k = first; k < done_to; k++) {
            if (c->segs[k].index < 0 || c->segs[k].partial) continue;
            tt_sbuf_printf(b, "%s[%d,\"%s\"]", comma ? "," : "", c->segs[k].index, c->segs[k].kind);
            comma = true;
        }
        tt_sbuf_puts(b, "]");
        if (partial >= 0) tt_sbuf_printf(b, ",\"partial\":[%d]", partial);
        if (n_keepalive) tt_sbuf_printf(b, ",\"keepalive\":%zu", n_keepalive);
        tt_sbuf_puts(b, "}\n");
        tt_serve_log_commit(c->srv->log);
    }
    c->seg_head = done_to;
    if (c->seg_head == c->seg_n) c->seg_head = c->seg_n = 0;
    c->wire_written = w1;
}

/* One send() of everything pending; t is the instant logged for it. */
void tt_serve_conn_flush_at(serve_conn *c, uint64_t t)
{
    if (c->dead || c->out.len == 0 || c->want_out) return;
    ssize_t n;
    if (c->stream_id) {
        if ((c->grpc ? tt_serve_grpc_write(c) : tt_serve_h2_write(c)) != 0) {
            tt_serve_conn_kill(c);
            return;
        }
        n = (ssize_t)c->out.len;
    } else if (c->tls) {
        n = tt_serve_tls_write(c->tls, c->out.p, c->out.len);
        if (n == TT_SERVE_TLS_WANT_WRITE || n == TT_SERVE_TLS_WANT_READ) {
            set_want_out(c, true);
            return;
        }
        if (n <= 0) {
            tt_serve_conn_kill(c);
            return;
        }
    } else {
        n = send(c->fd, c->out.p, c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) set_want_out(c, true);
            else tt_serve_conn_kill(c);
            return;
        }
    }
    log_write(c, t, (size_t)n);
    tt_sbuf_consume(&c->out, (size_t)n);
    if (c->out.len) {
        set_want_out(c, true);
        return;
    }
    tt_serve_free_reqs(c->retired);
    c->retired = NULL;
}

void tt_serve_conn_flush(serve_conn *c) { tt_serve_conn_flush_at(c, tt_serve_mono_ns()); }

void tt_serve_conn_readable(serve_conn *c);

void tt_serve_conn_writable(serve_conn *c)
{
    if (c->h2) { tt_serve_h2_writable(c); return; }
    set_want_out(c, false);
    if (c->tls_read_wants_write) {
        /* the handshake's bytes could not all go: go on reading */
        c->tls_read_wants_write = false;
        tt_serve_conn_readable(c);
        if (c->dead) return;
    }
    tt_serve_conn_flush(c);
}

/* Queue bytes: pre framing, body, post framing as one segment. */
void tt_serve_conn_append(serve_conn *c, const serve_req *req, int32_t index, const char *kind,
                        bool pre_is_head, const void *pre, size_t pre_len, const void *body, size_t body_len,
                        const void *post, size_t post_len)
{
    if (c->seg_n == c->seg_cap) {
        size_t cap = c->seg_cap ? c->seg_cap * 2 : 16;
        out_seg *p = realloc(c->segs, cap * sizeof *p);
        if (!p) { c->out.oom = true; return; }
        c->segs = p;
        c->seg_cap = cap;
    }
    c->segs[c->seg_n++] = (out_seg){
        .wire_start = c->wire_appended, .pre = (uint32_t)pre_len, .post = (uint32_t)post_len,
        .body_len = (uint32_t)body_len, .body_off = c->body_off, .index = index, .pre_is_head = pre_is_head, .kind = kind, .req = req};
    tt_sbuf_put(&c->out, pre, pre_len);
    tt_sbuf_put(&c->out, body, body_len);
    tt_sbuf_put(&c->out, post, post_len);
    c->wire_appended += pre_len + body_len + post_len;
    c->body_off += body_len;
}

/* ---- HTTP request callbacks ---- */

static void on_head(void *ud, const tt_http_head *head)
{
    serve_conn *c = ud;
    serve_req *r = calloc(1, sizeof *r);
    if (!r) { c->parse_failed = true; return; }
    r->ordinal = ++c->next_ordinal;
    size_t ml = head->method_len < sizeof r->method ? head->method_len : sizeof r->method - 1;
    memcpy(r->method, head->method, ml);
    size_t tl = head->target_len;
    const char *q = memchr(head->target, '?', tl);
    if (q) tl = (size_t)(q - head->target);
    if (tl >= sizeof r->path) {
        r->path_too_long = true;
        tl = sizeof r->path - 1;
    }
    memcpy(r->path, head->target, tl);
    r->keep_alive = head->keep_alive;
    r->version_minor = head->version_minor;
    const tt_http_header *h = tt_http_find_header(head, "x-request-id");
    if (h) r->request_id = strndup(h->value, h->value_len);
    if (c->srv->cfg.http2 && !c->tls && tt_http_header_lists(tt_http_find_header(head, "upgrade"), "h2c")) {
        const tt_http_header *hs = tt_http_find_header(head, "http2-settings");
        if (hs) r->h2c_settings = strndup(hs->value, hs->value_len);
    }
    req_free(c->parsing);
    c->parsing = r;
    const tt_http_header *ex = tt_http_find_header(head, "expect");
    if (ex && ex->value_len == 12 && !strncasecmp(ex->value, "100-continue", 12) &&
        head->version_minor >= 1 && !c->active && !c->q_head && c->out.len == 0) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        tt_serve_conn_append(c, NULL, -1, "interim", true, cont, sizeof cont - 1, NULL, 0, NULL, 0);
        tt_serve_conn_flush(c);
    }
}

static void on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    serve_conn *c = ud;
    serve_req *r = c->parsing;
    if (!r || r->body_too_large) return;
    if (r->body.len + len > c->srv->cfg.max_body) {
        r->body_too_large = true;
        tt_sbuf_free(&r->body);
        return;
    }
    tt_sbuf_put(&r->body, data, len);
    if (r->body.oom) {
        r->body_too_large = true;
        tt_sbuf_free(&r->body);
    }
}

static void on_end(void *ud, const tt_http_msg_end *end)
{
    serve_conn *c = ud;
    serve_req *r = c->parsing;
    c->parsing = NULL;
    if (!r) return;
    if (end->how != TT_HTTP_END_COMPLETE || c->q_len >= MAX_QUEUED_REQUESTS) {
        c->parse_failed = true;
        req_free(r);
        return;
    }
    r->read_ns = end->last_ns;
    if (r->h2c_settings && !c->upgrade && !c->q_head && !c->active && c->out.len == 0 &&
        tt_serve_h2_settings_ok(r->h2c_settings)) {
        /* the first request asks h2c: switch after this read (the server
         * may also ignore Upgrade, RFC 9110 7.8: busy, or bad settings) */
        c->upgrade = r;
        c->upgrade_off = end->last_off;
        return;
    }
    if (c->q_tail) c->q_tail->next = r;
    else c->q_head = r;
    c->q_tail = r;
    c->q_len++;
}

static void on_error(void *ud, tt_http_error code, const char *msg, uint64_t stream_off)
{
    serve_conn *c = ud;
    if (c->upgrade) return; /* the client preface after an h2c upgrade request: HTTP/2's */
    c->parse_failed = true;
}

static const tt_http_callbacks request_callbacks = {on_head, on_body, on_end, on_error};

/* --http2 --tls: one handshake step; once ALPN is known, an h2 connection
 * gets its nghttp2 session. False while the handshake waits (or c died). */
static bool finish_alpn(serve_conn *c)
{
    int r = tt_serve_tls_handshake(c->tls);
    if (r == TT_SERVE_TLS_WANT_READ) return false;
    if (r == TT_SERVE_TLS_WANT_WRITE) {
        c->tls_read_wants_write = true;
        set_want_out(c, true);
        return false;
    }
    if (r != 1) {
        tt_serve_conn_kill(c);
        return false;
    }
    c->tls_alpn_pending = false;
    if (tt_serve_tls_is_h2(c->tls) && tt_serve_h2_attach(c) != 0) {
        tt_serve_conn_kill(c);
        return false;
    }
    return true;
}

void tt_serve_conn_readable(serve_conn *c)
{
    if (c->tls_alpn_pending && !finish_alpn(c)) return;
    if (c->h2) { tt_serve_h2_readable(c); return; }
    uint8_t *buf = c->srv->read_buf; /* the worker's; bytes are consumed at once */
    for (;;) {
        if (c->parse_failed) {
            /* Stop reading; answer what was whole, then 400 and close. */
            tt_serve_conn_update_events(c, false, c->want_out);
            break;
        }
        ssize_t n = c->tls ? tt_serve_tls_read(c->tls, buf, READ_CHUNK) : recv(c->fd, buf, READ_CHUNK, MSG_DONTWAIT);
        uint64_t now = tt_serve_mono_ns();
        if (n > 0) {
            if (c->h2_sniff) {
                int d = tt_serve_h2_sniff(c, buf, (size_t)n, now);
                if (d > 0) {
                    if (!c->dead) tt_serve_h2_readable(c);
                    return;
                }
                if (d == 0) continue;
            }
            uint64_t before = c->fed;
            tt_http1_feed(c->parser, buf, (size_t)n, now);
            c->fed += (uint64_t)n;
            if (c->upgrade) {
                size_t k = c->upgrade_off > before ? (size_t)(c->upgrade_off - before) : 0;
                if (k > (size_t)n) k = (size_t)n;
                if (tt_serve_h2_upgrade(c, buf + k, (size_t)n - k) != 0) {
                    tt_serve_conn_kill(c);
                    return;
                }
                if (!c->dead) tt_serve_h2_readable(c);
                return;
            }
            continue;
        }
        if (n == 0) {
            c->read_eof = true;
            tt_serve_conn_update_events(c, false, c->want_out);
            break;
        }
        if (c->tls) {
            if (n == TT_SERVE_TLS_WANT_READ) break;
            if (n == TT_SERVE_TLS_WANT_WRITE) {
                c->tls_read_wants_write = true;
                set_want_out(c, true);
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
    tt_serve_conn_pump(c);
}

/* Take over an accepted socket: a connection of worker s. */
void tt_serve_conn_adopt(serve_worker *s, int fd, const struct sockaddr_storage *ss)
{
    serve_conn *c = calloc(1, sizeof *c);
    if (c) c->parser = tt_http1_new(TT_HTTP_REQUEST, &request_callbacks, c);
    if (!c || !c->parser) {
        free(c);
        close(fd);
        return;
    }
    c->srv = s;
    c->fd = fd;
    c->reading = true;
    if (s->server->tls && !(c->tls = tt_serve_tls_conn_new(s->server->tls, fd))) {
        close(fd);
        tt_http1_free(c->parser);
        free(c);
        return;
    }
    c->timer.slot = SIZE_MAX;
    /* over TLS the protocol is ALPN's: decided when the handshake ends (readable);
     * in cleartext on the client's first bytes: the preface, or HTTP/1.1
     * (where an h2c upgrade may start the session) */
    if (c->tls && s->cfg.http2) c->tls_alpn_pending = true;
    else c->h2_sniff = s->cfg.http2;
    tt_serve_format_addr((const struct sockaddr *)ss, c->peer, sizeof c->peer);
    if (s->cfg.nodelay) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (c->h2) tt_serve_h2_free(c);
        close(fd);
        tt_http1_free(c->parser);
        free(c);
        return;
    }
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
}

