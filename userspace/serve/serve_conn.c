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
    tt_sbuf_free(&r->body);
    free(r);
}

static void free_req_list(serve_req *r)
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
        tt_serve_h2_stream_end(c);
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
    free_req_list(c->q_head);
    free_req_list(c->retired);
    free(c->plan);
    free(c->segs);
    tt_sbuf_free(&c->out);
    tt_sbuf_free(&c->part_frame);
    free(c);
}

/* Tell epoll what the connection waits for: input while still reading,
 * output while bytes are pending a full socket buffer. */
static void conn_update_events(serve_conn *c, bool reading, bool want_out)
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

static void set_want_out(serve_conn *c, bool want) { conn_update_events(c, c->reading, want); }

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
static void conn_flush_at(serve_conn *c, uint64_t t)
{
    if (c->dead || c->out.len == 0 || c->want_out) return;
    ssize_t n;
    if (c->stream_id) {
        if (tt_serve_h2_write(c) != 0) {
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
    free_req_list(c->retired);
    c->retired = NULL;
}

static void conn_flush(serve_conn *c) { conn_flush_at(c, tt_serve_mono_ns()); }

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
    conn_flush(c);
}

/* Queue bytes: pre framing, body, post framing as one segment. */
static void conn_append(serve_conn *c, const serve_req *req, int32_t index, const char *kind,
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

static const char *status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 413: return "Payload Too Large";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Error";
    }
}

static void log_request(serve_conn *c, const serve_req *r, int status, bool stream,
                        const tt_serve_request *params, size_t n_events)
{
    tt_sbuf *b = tt_serve_log_begin(c->srv->log);
    if (!b) return;
    tt_sbuf_puts(b, "{\"type\":\"request\",\"request_read_ns\":");
    tt_sbuf_u64(b, r->read_ns);
    tt_sbuf_puts(b, ",\"peer\":");
    tt_sbuf_json_str(b, c->peer, strlen(c->peer));
    tt_sbuf_puts(b, ",\"ordinal\":");
    tt_sbuf_u64(b, r->ordinal);
    tt_sbuf_puts(b, ",\"request_id\":");
    if (r->request_id) tt_sbuf_json_str(b, r->request_id, strlen(r->request_id));
    else tt_sbuf_puts(b, "null");
    if (c->stream_id) tt_sbuf_printf(b, ",\"stream_id\":%d", (int)c->stream_id);
    tt_sbuf_puts(b, ",\"method\":");
    tt_sbuf_json_str(b, r->method, strlen(r->method));
    tt_sbuf_puts(b, ",\"path\":");
    tt_sbuf_json_str(b, r->path, strlen(r->path));
    tt_sbuf_printf(b, ",\"status\":%d,\"stream\":%s", status, stream ? "true" : "false");
    if (params)
        tt_sbuf_printf(b, ",\"tokens\":%u,\"prompt_tokens\":%u,\"finish_reason\":\"%s\"",
                       params->n_tokens, params->prompt_tokens, params->finish_reason);
    if (stream) tt_sbuf_printf(b, ",\"events\":%zu", n_events);
    if (stream && c->srv->cfg.faults.error_after >= 0 && params &&
        (uint64_t)c->srv->cfg.faults.error_after < params->n_tokens)
        tt_sbuf_puts(b, ",\"fault\":\"error-after\"");
    else if (stream && c->abort_at_end)
        tt_sbuf_puts(b, ",\"fault\":\"close-after\"");
    tt_sbuf_puts(b, "}\n");
    tt_serve_log_commit(c->srv->log);
}

/* The active response is complete: retire its request. */
static void finish_response(serve_conn *c)
{
    serve_req *r = c->q_head;
    c->active = false;
    free(c->plan);
    c->plan = NULL;
    c->plan_n = c->plan_next = 0;
    c->part_active = false;
    c->held = 0;
    tt_heap_remove(&c->srv->heap, &c->timer);
    if (r) {
        c->q_head = r->next;
        if (!c->q_head) c->q_tail = NULL;
        c->q_len--;
        if (!r->keep_alive) c->close_when_drained = true;
        tt_sbuf_free(&r->body);
        r->next = c->retired;
        c->retired = r;
    }
    (void)tt_serve_log_flush(c->srv->log);
    if (c->out.len == 0) {
        free_req_list(c->retired);
        c->retired = NULL;
    }
}

static void send_simple(serve_conn *c, serve_req *r, int status, const char *ctype,
                        const char *body, size_t body_len, bool close_after,
                        const tt_serve_request *params)
{
    if (close_after) r->keep_alive = false;
    tt_sbuf head = {0};
    tt_sbuf_printf(&head, "HTTP/1.1 %d %s\r\nserver: tokentap-serve\r\n", status, status_text(status));
    if (ctype) tt_sbuf_printf(&head, "content-type: %s\r\n", ctype);
    tt_sbuf_printf(&head, "content-length: %zu\r\n", body_len);
    if (!r->keep_alive) tt_sbuf_puts(&head, "connection: close\r\n");
    tt_sbuf_puts(&head, "\r\n");
    if (head.oom) { tt_serve_conn_kill(c); tt_sbuf_free(&head); return; }
    c->body_off = 0;
    conn_append(c, r, 0, "body", true, head.p, head.len, body, body_len, NULL, 0);
    tt_sbuf_free(&head);
    log_request(c, r, status, false, params, 0);
    conn_flush(c);
    c->active = true;
    finish_response(c);
}

static void send_error(serve_conn *c, serve_req *r, int status, const char *type, const char *msg,
                       bool close_after)
{
    tt_sbuf body = {0};
    tt_sbuf_puts(&body, "{\"error\":{\"message\":");
    tt_sbuf_json_str(&body, msg, strlen(msg));
    tt_sbuf_printf(&body, ",\"type\":\"%s\",\"code\":%d}}", type, status);
    send_simple(c, r, status, "application/json", body.p, body.len, close_after, NULL);
    tt_sbuf_free(&body);
}

void tt_serve_emit_due(serve_conn *c, uint64_t now);

static void start_stream(serve_conn *c, serve_req *r)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    size_t cap = tt_serve_plan_cap(&c->params);
    c->plan = malloc(cap * sizeof *c->plan);
    if (!c->plan) { tt_serve_conn_kill(c); return; }
    c->plan_n = tt_serve_plan(s->cfg.profile, &c->params, c->plan);
    c->plan_next = 0;
    c->abort_at_end = false;
    if (f->error_after >= 0 && (uint64_t)f->error_after < c->params.n_tokens) {
        c->plan_n = tt_serve_plan_error_after(s->cfg.profile, c->plan, c->plan_n, (uint32_t)f->error_after);
    } else if (f->close_after >= 0 && (uint64_t)f->close_after < c->params.n_tokens) {
        c->plan_n = tt_serve_plan_cut_at_token(c->plan, c->plan_n, (uint32_t)f->close_after);
        c->abort_at_end = true;
    }
    c->chunked = r->version_minor >= 1;
    if (!c->chunked) r->keep_alive = false;
    c->active = true;
    c->part_active = false;
    c->held = 0;
    c->itl_cursor = 0;
    tt_sbuf head = {0};
    tt_sbuf_printf(&head, "HTTP/1.1 200 OK\r\nserver: tokentap-serve\r\n"
                          "content-type: %s\r\n%s%s%s\r\n",
                   s->cfg.profile->stream_content_type, s->cfg.profile->extra_headers,
                   c->chunked ? "transfer-encoding: chunked\r\n" : "",
                   r->keep_alive ? "" : "connection: close\r\n");
    c->body_off = 0;
    conn_append(c, r, -1, "head", true, head.p, head.len, NULL, 0, NULL, 0);
    tt_sbuf_free(&head);
    log_request(c, r, 200, true, &c->params, c->plan_n);
    conn_flush(c);
    c->first_token_at = c->last_token_at = 0;
    uint64_t ttft_cursor = c->generation_number ? c->generation_number - 1 : 0;
    c->token_due = r->read_ns + tt_dist_draw(&s->cfg.ttft, &c->rng, &ttft_cursor);
    uint64_t now = tt_serve_mono_ns();
    c->keepalive_due = now + f->keepalive_ns;
    tt_serve_emit_due(c, now);
}

/* The server's own view of the stream, as vLLM's frontend keeps it. */
static void note_emission(serve_conn *c, const tt_serve_event *ev, uint64_t t, bool last)
{
    tt_serve_metrics *m = &c->srv->metrics;
    uint64_t read_ns = c->q_head ? c->q_head->read_ns : t;
    pthread_mutex_lock(&c->srv->metrics_lock);
    if (ev->kind == TT_SEV_TOKEN) {
        if (!c->first_token_at) {
            c->first_token_at = t;
            tt_serve_hist_observe(&m->ttft, t > read_ns ? t - read_ns : 0);
        } else {
            tt_serve_hist_observe(&m->itl, t > c->last_token_at ? t - c->last_token_at : 0);
        }
        c->last_token_at = t;
    }
    if (last && !c->abort_at_end) {
        tt_serve_hist_observe(&m->e2e, t > read_ns ? t - read_ns : 0);
        m->requests_finished++;
    }
    pthread_mutex_unlock(&c->srv->metrics_lock);
}

/* Begin writing plan event `index`: build its bytes and its cut points. */
static void start_event(serve_conn *c, size_t index)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    uint64_t read_ns = c->q_head ? c->q_head->read_ns : 0, now = tt_serve_mono_ns();
    c->params.elapsed_ns = now > read_ns ? now - read_ns : 0;
    c->params.first_token_ns = c->first_token_at > read_ns ? c->first_token_at - read_ns : 0;
    tt_sbuf_reset(&c->part_frame);
    tt_serve_frame(s->cfg.profile, &c->params, &c->plan[index], &c->part_frame);
    if (c->part_frame.oom) { tt_serve_conn_kill(c); return; }
    c->part_ev = c->plan[index];
    c->part_index = index;
    c->part_n_cuts = tt_split_cuts(f->split_at, f->n_split, c->part_frame.len, c->part_cuts);
    c->part_next = 0;
    c->part_due = 0;
    c->part_active = true;
    if (c->held == 0) c->held_from = index;
}

/* Write the next part of the current event (the whole event when it is not
 * split); with --coalesce, hold whole events until N are ready. */
static void send_part(serve_conn *c)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    size_t k = c->part_next, nparts = c->part_n_cuts + 1;
    size_t from = k ? c->part_cuts[k - 1] : 0, to = k + 1 < nparts ? c->part_cuts[k] : c->part_frame.len;
    bool first = k == 0, final = k + 1 == nparts;
    bool last_event = c->part_index + 1 == c->plan_n;
    char pre[24];
    size_t pre_len = 0;
    const char *post = "";
    if (c->chunked) {
        if (first) pre_len = (size_t)snprintf(pre, sizeof pre, "%zx\r\n", c->part_frame.len);
        if (final) post = last_event && !c->abort_at_end ? "\r\n0\r\n\r\n" : "\r\n";
    }
    conn_append(c, c->q_head, (int32_t)c->part_index, tt_serve_event_kind_name(c->part_ev.kind), false, pre,
                pre_len, c->part_frame.p + from, to - from, post, strlen(post));
    if (c->out.oom) { tt_serve_conn_kill(c); return; }
    if (!final) c->segs[c->seg_n - 1].partial = true;
    c->part_next++;
    if (!final) {
        uint64_t t = tt_serve_mono_ns();
        conn_flush_at(c, t);
        c->part_due = t + f->split_pause_ns;
        return;
    }
    c->part_active = false;
    c->held++;
    if (!tt_coalesce_due(f->coalesce, c->held, last_event)) return;
    uint64_t t = tt_serve_mono_ns();
    conn_flush_at(c, t);
    for (size_t i = c->held_from; i < c->held_from + c->held && i < c->plan_n; i++)
        note_emission(c, &c->plan[i], t, i + 1 == c->plan_n);
    c->held = 0;
}

/* A keep-alive: sse-starlette's ping comment, or Anthropic's ping event. */
static void send_keepalive(serve_conn *c)
{
    serve_worker *s = c->srv;
    tt_sbuf frame = {0};
    if (s->cfg.profile->id == TT_PROFILE_ANTHROPIC) {
        tt_sbuf_puts(&frame, "event: ping\ndata: {\"type\": \"ping\"}");
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        time_t secs = ts.tv_sec;
        struct tm tm;
        char when[40] = "1970-01-01 00:00:00";
        if (gmtime_r(&secs, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        tt_sbuf_printf(&frame, ": ping - %s.%06ld+00:00", when, ts.tv_nsec / 1000);
    }
    tt_sbuf_puts(&frame, s->cfg.profile->separator);
    char pre[24];
    size_t pre_len = 0;
    if (c->chunked) pre_len = (size_t)snprintf(pre, sizeof pre, "%zx\r\n", frame.len);
    if (frame.oom) { tt_sbuf_free(&frame); tt_serve_conn_kill(c); return; }
    conn_append(c, c->q_head, SEG_KEEPALIVE, "keepalive", false, pre, pre_len, frame.p, frame.len,
                c->chunked ? "\r\n" : "", c->chunked ? 2 : 0);
    tt_sbuf_free(&frame);
    if (c->out.oom) { tt_serve_conn_kill(c); return; }
    conn_flush(c);
}

static bool is_due(uint64_t due, uint64_t *now)
{
    if (due <= *now) return true;
    *now = tt_serve_mono_ns();
    return due <= *now;
}

static void wake_at(serve_conn *c, uint64_t due)
{
    if (tt_heap_set(&c->srv->heap, &c->timer, due) != 0) tt_serve_conn_kill(c);
}

/* Emit every event (part, keep-alive) of the active stream due by now; re-arm for the next. */
void tt_serve_emit_due(serve_conn *c, uint64_t now)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    while (c->active && !c->dead) {
        if (c->part_active) {
            if (!is_due(c->part_due, &now)) { wake_at(c, c->part_due); return; }
            send_part(c);
            continue;
        }
        if (c->plan_next == c->plan_n) break;
        if (f->keepalive_ns && is_due(c->keepalive_due, &now)) {
            send_keepalive(c);
            while (c->keepalive_due <= now) c->keepalive_due += f->keepalive_ns;
            continue;
        }
        const tt_serve_event *ev = &c->plan[c->plan_next];
        bool before_first = ev->kind == TT_SEV_ROLE || (ev->kind == TT_SEV_META && !c->first_token_at);
        bool timed = before_first || ev->kind == TT_SEV_TOKEN || ev->kind == TT_SEV_ERROR;
        if (timed && !is_due(c->token_due, &now)) {
            uint64_t due = c->token_due;
            if (f->keepalive_ns && c->keepalive_due < due) due = c->keepalive_due;
            wake_at(c, due);
            return;
        }
        start_event(c, c->plan_next);
        if (c->dead) return;
        c->plan_next++;
        if (ev->kind == TT_SEV_TOKEN) c->token_due += tt_dist_draw(&s->cfg.itl, &c->rng, &c->itl_cursor);
    }
    if (!c->active || c->dead || c->plan_next != c->plan_n || c->part_active) return;
    bool abort = c->abort_at_end;
    if (abort) {
        tt_sbuf *b = tt_serve_log_begin(s->log);
        if (b) {
            tt_sbuf_puts(b, "{\"type\":\"close\",\"mono_ns\":");
            tt_sbuf_u64(b, tt_serve_mono_ns());
            tt_sbuf_puts(b, ",\"peer\":");
            tt_sbuf_json_str(b, c->peer, strlen(c->peer));
            tt_sbuf_printf(b, ",\"ordinal\":%u,\"reason\":\"close-after\",\"tokens\":%lld}\n",
                           c->q_head ? c->q_head->ordinal : 0, (long long)f->close_after);
            tt_serve_log_commit(s->log);
        }
    }
    finish_response(c);
    if (abort) {
        c->close_when_drained = true;
        conn_update_events(c, false, c->want_out);
    }
}

/* --status: every generation answered with this error, in the profile's error shape. */
static void send_fault_status(serve_conn *c, serve_req *r, int status)
{
    tt_serve_profile_id id = c->srv->cfg.profile->id;
    const char *type = status == 429 ? "rate_limit_error" : status == 529 || status == 503 ? "overloaded_error"
                     : status >= 500 ? "api_error" : "invalid_request_error";
    char msg[64];
    snprintf(msg, sizeof msg, "synthetic error status %d", status);
    tt_sbuf body = {0};
    if (id == TT_PROFILE_ANTHROPIC)
        tt_sbuf_printf(&body, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"%s\"}}", type, msg);
    else if (id == TT_PROFILE_TGI)
        tt_sbuf_printf(&body, "{\"error\":\"%s\",\"error_type\":\"%s\"}", msg, status == 429 ? "overloaded" : "generation");
    else if (id == TT_PROFILE_OLLAMA)
        tt_sbuf_printf(&body, "{\"error\":\"%s\"}", msg);
    else
        tt_sbuf_printf(&body, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,\"code\":%d}}", msg, type, status);
    if (body.oom) { tt_sbuf_free(&body); tt_serve_conn_kill(c); return; }
    send_simple(c, r, status, "application/json", body.p, body.len, false, NULL);
    tt_sbuf_free(&body);
}

static void start_response(serve_conn *c, serve_req *r)
{
    serve_worker *s = c->srv;
    bool is_post = !strcmp(r->method, "POST"), is_get = !strcmp(r->method, "GET");
    char msg[256];
    c->active = false;
    if (r->path_too_long) {
        send_error(c, r, 404, "not_found_error", "no such path", false);
        return;
    }
    tt_serve_api api = TT_API_CHAT;
    int route = tt_serve_route(s->cfg.profile, r->path, &api);
    if (route < 0) {
        snprintf(msg, sizeof msg, "profile %s does not serve %.200s", s->cfg.profile->name, r->path);
        send_error(c, r, 404, "not_found_error", msg, false);
        return;
    }
    if (route > 0) {
        if (!is_post) {
            send_error(c, r, 405, "invalid_request_error", "use POST", false);
            return;
        }
        if (r->body_too_large) {
            snprintf(msg, sizeof msg, "request body over %zu bytes", s->cfg.max_body);
            send_error(c, r, 413, "invalid_request_error", msg, false);
            return;
        }
        if (s->cfg.faults.status) {
            send_fault_status(c, r, s->cfg.faults.status);
            return;
        }
        uint64_t ord = (uint64_t)atomic_fetch_add(&s->server->request_counter, 1) + 1;
        c->generation_number = ord;
        tt_prng_seed(&c->rng, s->cfg.seed, ord);
        uint64_t rid = tt_prng_next(&c->rng);
        if (tt_serve_request_parse(s->cfg.profile, api,
                                   r->body.p ? r->body.p : "", r->body.len, &s->cfg.gen,
                                   r->request_id, rid, (int64_t)time(NULL), &c->params, msg,
                                   sizeof msg) != 0) {
            send_error(c, r, 400, "invalid_request_error", msg, false);
            return;
        }
        if (c->params.stream) {
            start_stream(c, r);
            return;
        }
        tt_sbuf body = {0};
        tt_serve_full_body(s->cfg.profile, &c->params, &body);
        if (body.oom) { tt_sbuf_free(&body); tt_serve_conn_kill(c); return; }
        send_simple(c, r, 200, "application/json", body.p, body.len, false, &c->params);
        tt_sbuf_free(&body);
        return;
    }
    if (!strcmp(r->path, "/v1/models") || !strcmp(r->path, "/health") || !strcmp(r->path, "/metrics")) {
        if (!is_get) {
            send_error(c, r, 405, "invalid_request_error", "use GET", false);
            return;
        }
        if (r->path[1] == 'h') {
            send_simple(c, r, 200, NULL, "", 0, false, NULL);
            return;
        }
        if (r->path[1] == 'm') {
            tt_sbuf text = {0};
            tt_serve_metrics all;
            tt_serve_metrics_init(&all);
            for (unsigned w = 0; w < s->server->n_workers; w++) {
                serve_worker *sw = s->server->workers[w];
                pthread_mutex_lock(&sw->metrics_lock);
                tt_serve_metrics_add(&all, &sw->metrics);
                pthread_mutex_unlock(&sw->metrics_lock);
            }
            tt_serve_metrics_render(&all, s->cfg.gen.model, &text);
            if (text.oom) { tt_sbuf_free(&text); tt_serve_conn_kill(c); return; }
            send_simple(c, r, 200, "text/plain; version=0.0.4; charset=utf-8", text.p, text.len, false, NULL);
            tt_sbuf_free(&text);
            return;
        }
        tt_sbuf body = {0};
        tt_sbuf_puts(&body, "{\"object\":\"list\",\"data\":[{\"id\":");
        tt_sbuf_json_str(&body, s->cfg.gen.model, strlen(s->cfg.gen.model));
        tt_sbuf_puts(&body, ",\"object\":\"model\",\"owned_by\":\"tokentap\"}]}");
        send_simple(c, r, 200, "application/json", body.p, body.len, false, NULL);
        tt_sbuf_free(&body);
        return;
    }
    snprintf(msg, sizeof msg, "no route for %s %.200s", r->method, r->path);
    send_error(c, r, 404, "not_found_error", msg, false);
}

/* Answer queued requests in order while none is streaming. */
void tt_serve_conn_pump(serve_conn *c)
{
    if (c->h2) { tt_serve_h2_pump(c); return; }
    while (!c->dead && !c->active && c->q_head && !c->close_when_drained) start_response(c, c->q_head);
    if (c->dead) return;
    if (!c->active && !c->q_head && c->parse_failed && !c->error_sent && !c->close_when_drained) {
        c->error_sent = true;
        serve_req *r = calloc(1, sizeof *r);
        if (!r) { tt_serve_conn_kill(c); return; }
        r->ordinal = ++c->next_ordinal;
        snprintf(r->method, sizeof r->method, "-");
        snprintf(r->path, sizeof r->path, "-");
        r->read_ns = tt_serve_mono_ns();
        c->q_head = c->q_tail = r;
        c->q_len = 1;
        send_error(c, r, 400, "invalid_request_error", "malformed HTTP request", true);
    }
    if (!c->active && !c->q_head && c->read_eof) c->close_when_drained = true;
    if (c->close_when_drained && !c->active && c->out.len == 0) tt_serve_conn_kill(c);
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
    req_free(c->parsing);
    c->parsing = r;
    const tt_http_header *ex = tt_http_find_header(head, "expect");
    if (ex && ex->value_len == 12 && !strncasecmp(ex->value, "100-continue", 12) &&
        head->version_minor >= 1 && !c->active && !c->q_head && c->out.len == 0) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        conn_append(c, NULL, -1, "interim", true, cont, sizeof cont - 1, NULL, 0, NULL, 0);
        conn_flush(c);
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
    if (c->q_tail) c->q_tail->next = r;
    else c->q_head = r;
    c->q_tail = r;
    c->q_len++;
}

static void on_error(void *ud, tt_http_error code, const char *msg, uint64_t stream_off)
{
    serve_conn *c = ud;
    c->parse_failed = true;
}

static const tt_http_callbacks request_callbacks = {on_head, on_body, on_end, on_error};

void tt_serve_conn_readable(serve_conn *c)
{
    if (c->h2) { tt_serve_h2_readable(c); return; }
    uint8_t *buf = c->srv->read_buf; /* the worker's; bytes are consumed at once */
    for (;;) {
        if (c->parse_failed) {
            /* Stop reading; answer what was whole, then 400 and close. */
            conn_update_events(c, false, c->want_out);
            break;
        }
        ssize_t n = c->tls ? tt_serve_tls_read(c->tls, buf, READ_CHUNK) : recv(c->fd, buf, READ_CHUNK, MSG_DONTWAIT);
        uint64_t now = tt_serve_mono_ns();
        if (n > 0) {
            tt_http1_feed(c->parser, buf, (size_t)n, now);
            continue;
        }
        if (n == 0) {
            c->read_eof = true;
            conn_update_events(c, false, c->want_out);
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
    if (s->cfg.http2 && tt_serve_h2_attach(c) != 0) {
        close(fd);
        tt_http1_free(c->parser);
        free(c);
        return;
    }
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

