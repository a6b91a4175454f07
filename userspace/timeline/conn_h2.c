/* conn_h2.c - an HTTP/2 connection (h2c with prior knowledge or
 * upgraded, h2 plaintext from a TLS vantage, or joined mid-stream; which
 * protocol a connection speaks is conn_proto.c's choice): every stream is
 * one request, but Triton's gRPC calls (conn_grpc.c).
 *
 * HTTP/2 runs one tt_http2 parser (proto/http2.h) for the connection and
 * one context per stream: the pending request (created at the request
 * HEADERS), the request body (its fields read at END_STREAM, as HTTP/1.1
 * does), and the response body's own framer, fed each DATA payload with
 * its body offset and the instant of the chunk that completed the frame.
 * A stream is filed when both its halves ended (END_STREAM, RST_STREAM,
 * GOAWAY, lost bytes, end of connection); a response cut short is filed
 * incomplete with the reason in http_error.
 *
 * Joined mid-stream (conn_proto.c found frames, not the preface): the
 * parser runs in midstream mode and each direction is fed from its own
 * first frame boundary (the bytes before it skipped; the other direction
 * is held until its boundary is found, or given up after HELD_MAX bytes). A stream whose request was
 * not seen is filed TT_INC_REQUEST_NOT_SEEN, its response framed from the
 * first DATA seen (content-type when its HEADERS were seen, else sniffed:
 * SSE text, or gRPC when the payload is whole length-prefixed messages).
 * Header fields HPACK could not decode (entries from before the capture)
 * are left empty and said once per direction in a connection note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2.h"
#include "timeline/conn_internal.h"
#include "timeline/request_fields.h"

typedef struct h2_stream {
    uint32_t id;
    conn_state *c;
    pending *p;               /* the stream's request; NULL when calls has them */
    tt_grpc_calls *calls;     /* a stream of many requests (conn_grpc.c) */
    tt_framer *framer;
    bool sniff;               /* decide the framing on the first body bytes */
    bool head_unseen;         /* joined mid-stream: the response began before its HEADERS were seen */
    bool req_ended, resp_ended;
    uint64_t window_closed_ns; /* the server's send window on the stream ran out then (0: open) */
    uint64_t data_end_off;    /* stream offset just past the response DATA being framed (0: none) */
    char *body;               /* request body */
    size_t body_len, body_cap;
    bool body_overflow;
} h2_stream;

/* A direction of a connection joined mid-stream, until its first frame
 * boundary is found: its chunks are held (q) and searched. */
struct h2_sync {
    bool synced, dead;
    struct held_chunk *q;
    size_t n, cap, bytes, from;
};

struct conn_h2 {
    uint64_t conn_window_closed_ns; /* the server's connection send window ran out then (0: open) */
    /* the stream offset of the parser's offset 0, per direction (the
     * parser counts from its first byte, the source from the connection's) */
    uint64_t parser_base[2];
    bool based[2];
    tt_http2_conn *parser;
    conn_state *c;
    h2_stream **s;
    size_t n, cap;
    bool midstream;
    struct h2_sync sync[2];
    bool hpack_noted[2];
};

/* ---- streams ---- */

static h2_stream *stream_find(struct conn_h2 *h, uint32_t id)
{
    for (size_t i = h->n; i-- > 0;)
        if (h->s[i]->id == id) return h->s[i];
    return NULL;
}

static void stream_drop(struct conn_h2 *h, h2_stream *s)
{
    for (size_t i = 0; i < h->n; i++) {
        if (h->s[i] != s) continue;
        memmove(h->s + i, h->s + i + 1, (h->n - i - 1) * sizeof *h->s);
        h->n--;
        break;
    }
    if (s->framer) tt_framer_free(s->framer);
    tt_grpc_calls_free(s->calls);
    free(s->body);
    free(s);
}

static void close_framer(h2_stream *s, uint64_t mono_ns)
{
    if (!s->framer) return;
    tt_framer_finish(s->framer, mono_ns);
    tt_framer_free(s->framer);
    s->framer = NULL;
}

/* File the oldest stream at once, evicted (its calls too); keep's stream
 * is spared, but its oldest call goes when it is the only stream. False
 * when there was nothing to evict. */
static bool evict_oldest(struct conn_h2 *h, const tt_grpc_calls *keep)
{
    h2_stream *old = NULL;
    for (size_t i = 0; i < h->n && !old; i++)
        if (!keep || h->s[i]->calls != keep) old = h->s[i];
    if (!old) {
        for (size_t i = 0; i < h->n; i++)
            if (h->s[i]->calls == keep) return tt_grpc_calls_evict_oldest(h->s[i]->calls);
        return false;
    }
    close_framer(old, TT_NS_NONE);
    if (old->calls) tt_grpc_calls_evict_all(old->calls);
    if (old->p) {
        old->p->req.incomplete |= TT_INC_EVICTED;
        h->c->t->evicted_requests++;
        tt_conn_file_pending(h->c, old->p);
    }
    stream_drop(h, old);
    return true;
}

void tt_conn_h2_make_room(conn_state *c, const tt_grpc_calls *keep)
{
    while (c->h2 && c->queue_len >= TT_TRACKER_MAX_IN_FLIGHT && evict_oldest(c->h2, keep)) {
    }
}

/* A stream's context, with a new request unless its requests are calls. */
static h2_stream *stream_new(struct conn_h2 *h, uint32_t id, bool with_request)
{
    conn_state *c = h->c;
    h2_stream *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->id = id;
    s->c = c;
    if (with_request) {
        tt_conn_h2_make_room(c, NULL);
        s->p = tt_conn_pending_new(c);
        s->p->req.stream_id = id;
    }
    h->s = tt_conn_grow(h->s, &h->cap, h->n + 1, sizeof *h->s);
    h->s[h->n++] = s;
    return s;
}

static void maybe_file(struct conn_h2 *h, h2_stream *s)
{
    if (!s->req_ended || !s->resp_ended) return;
    if (s->p) tt_conn_file_pending(h->c, s->p);
    stream_drop(h, s);
}

/* ---- the response body's framer ---- */

static void frame_event(void *ud, const tt_event_frame *ev)
{
    h2_stream *s = ud;
    /* readable when the DATA frame completing it is: its last byte */
    uint64_t stream_off = s->data_end_off ? s->data_end_off - 1 : TT_NS_NONE;
    if (s->calls) tt_grpc_calls_response_event(s->calls, ev, stream_off);
    else tt_conn_take_event(s->c, s->p, ev, stream_off);
}

static void frame_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    h2_stream *s = ud;
    if (s->p) tt_conn_take_comment(&s->p->req, off, mono_ns);
}

static const tt_frame_callbacks stream_frame_cb = {.on_event = frame_event, .on_comment = frame_comment};

/* ---- parser callbacks ---- */

static void copy_value(const tt_h2_headers *hd, const char *name, char *dst, size_t cap)
{
    const tt_h2_header *v = tt_http2_find_header(hd, name);
    if (v) tt_conn_copy_value(v->value, v->value_len, dst, cap);
}

/* Header fields HPACK could not decode (dynamic-table entries inserted
 * before the capture began): said once per direction. */
static void note_unknown_fields(struct conn_h2 *h, const tt_h2_headers *hd)
{
    if (!hd->n_unknown || h->hpack_noted[hd->dir]) return;
    h->hpack_noted[hd->dir] = true;
    char why[96];
    snprintf(why, sizeof why, "HTTP/2 %s headers reference HPACK entries not captured: those fields unknown",
             hd->dir == TT_DIR_C2S ? "request" : "response");
    tt_conn_add_info(h->c, why);
}

/* The request head's fields into r. */
static void request_from_head(conn_state *c, const tt_h2_headers *hd, tt_request *r)
{
    r->stream_id = hd->stream_id;
    copy_value(hd, ":method", r->method, sizeof r->method);
    copy_value(hd, ":path", r->path, sizeof r->path);
    copy_value(hd, "x-request-id", r->request_id, sizeof r->request_id);
    copy_value(hd, "x-correlation-id", r->correlation_id, sizeof r->correlation_id);
    uint64_t off = c->h2->parser_base[TT_DIR_C2S] + hd->first_off; /* not 0 after an h2c upgrade */
    r->req_first_ns = hd->first_ns;
    r->req_first_off = off;
    r->req_seq_known = c->c2s_seq_known;
    r->req_seq = c->c2s_seq_base + (uint32_t)off;
    r->req_ready_ns = tt_ready_marks_at(&c->ready[TT_DIR_C2S], off);
    r->dialect = tt_dialect_from_path(r->path, strlen(r->path));
}

/* A stream whose request was not seen (lost client bytes, or begun
 * before the capture). */
static h2_stream *stream_not_seen(struct conn_h2 *h, uint32_t id)
{
    h2_stream *s = stream_new(h, id, true);
    s->p->req.incomplete |= TT_INC_REQUEST_NOT_SEEN;
    s->p->request_done = true;
    s->req_ended = true;
    return s;
}

static void request_head(struct conn_h2 *h, const tt_h2_headers *hd)
{
    conn_state *c = h->c;
    if (stream_find(h, hd->stream_id)) return; /* a second head: not a new request */
    tt_request head;
    memset(&head, 0, sizeof head);
    request_from_head(c, hd, &head);
    if (tt_grpc_calls_wanted(&head)) {
        h2_stream *s = stream_new(h, hd->stream_id, false);
        s->calls = tt_grpc_calls_new(c, &head);
        return;
    }
    h2_stream *s = stream_new(h, hd->stream_id, true);
    request_from_head(c, hd, &s->p->req);
}

/* The gRPC status of a trailers block (or a trailers-only response), -1
 * when it has none; its grpc-message percent-decoded into msg. */
static int grpc_status_of(const tt_h2_headers *hd, char *msg, size_t cap)
{
    msg[0] = 0;
    const tt_h2_header *st = tt_http2_find_header(hd, "grpc-status");
    if (!st || !st->value_len || st->value_len > 9) return -1;
    int code = 0;
    for (size_t i = 0; i < st->value_len; i++) {
        if (st->value[i] < '0' || st->value[i] > '9') return -1;
        code = code * 10 + (st->value[i] - '0');
    }
    const tt_h2_header *m = tt_http2_find_header(hd, "grpc-message");
    size_t n = 0;
    for (size_t i = 0; m && i < m->value_len && n + 1 < cap; i++) {
        unsigned hi, lo;
        if (m->value[i] == '%' && i + 2 < m->value_len && sscanf(m->value + i + 1, "%1x%1x", &hi, &lo) == 2) {
            msg[n++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            msg[n++] = m->value[i];
        }
    }
    msg[n] = 0;
    return code;
}

/* The response head's fields into r: status, content-type, coding, and
 * the framing the content-type names (none under an unknown coding: not
 * decoded here). */
static void response_from_head(const tt_h2_headers *hd, tt_request *r)
{
    r->status = hd->status > 0 ? hd->status : 0;
    copy_value(hd, "content-type", r->content_type, sizeof r->content_type);
    const tt_h2_header *enc = tt_http2_find_header(hd, "content-encoding");
    if (enc && !(enc->value_len == 8 && !memcmp(enc->value, "identity", 8))) r->coding = TT_CODING_OTHER;
    if (strstr(r->content_type, "text/event-stream")) r->framing = TT_FRAMING_SSE;
    else if (strstr(r->content_type, "ndjson") || strstr(r->content_type, "jsonl")) r->framing = TT_FRAMING_NDJSON;
    else if (!strncmp(r->content_type, "application/grpc", 16)) r->framing = TT_FRAMING_GRPC;
    if (r->coding == TT_CODING_OTHER) r->framing = TT_FRAMING_NONE; /* not decoded here */
}

static void response_head(struct conn_h2 *h, const tt_h2_headers *hd)
{
    h2_stream *s = stream_find(h, hd->stream_id);
    if (!s) s = stream_not_seen(h, hd->stream_id);
    tt_request head;
    memset(&head, 0, sizeof head);
    response_from_head(hd, &head);
    char grpc_message[sizeof head.grpc_message];
    int grpc_status = grpc_status_of(hd, grpc_message, sizeof grpc_message);
    if (s->calls) {
        if (s->framer) return; /* a second head */
        tt_grpc_calls_response_head(s->calls, &head);
        if (grpc_status >= 0) tt_grpc_calls_trailers(s->calls, grpc_status, grpc_message);
        if (head.framing != TT_FRAMING_NONE) s->framer = tt_framer_new(head.framing, &stream_frame_cb, s);
        return;
    }
    pending *p = s->p;
    if (p->response_started) return;
    p->response_started = true;
    tt_request *r = &p->req;
    r->status = head.status;
    memcpy(r->content_type, head.content_type, sizeof r->content_type);
    r->coding = head.coding;
    r->framing = head.framing;
    r->grpc_status = grpc_status;
    memcpy(r->grpc_message, grpc_message, sizeof r->grpc_message);
    r->resp_first_ns = hd->first_ns;
    r->resp_headers_ns = hd->last_ns;
    s->sniff = r->framing == TT_FRAMING_NONE && r->coding != TT_CODING_OTHER;
    if (r->framing != TT_FRAMING_NONE) s->framer = tt_framer_new(r->framing, &stream_frame_cb, s);
}

/* The response's trailers: its gRPC status. */
static void response_trailers(struct conn_h2 *h, const tt_h2_headers *hd)
{
    h2_stream *s = stream_find(h, hd->stream_id);
    if (!s) return;
    char grpc_message[sizeof s->p->req.grpc_message];
    int grpc_status = grpc_status_of(hd, grpc_message, sizeof grpc_message);
    if (grpc_status < 0) return;
    if (s->calls) {
        tt_grpc_calls_trailers(s->calls, grpc_status, grpc_message);
    } else {
        s->p->req.grpc_status = grpc_status;
        memcpy(s->p->req.grpc_message, grpc_message, sizeof grpc_message);
    }
}

static void h2_on_headers(void *ud, const tt_h2_headers *hd)
{
    struct conn_h2 *h = ud;
    h->c->any_message = true;
    /* pushed streams (even ids) answer no request of the client: not followed */
    if (hd->promise || hd->interim || hd->skipped || hd->stream_id % 2 == 0) return;
    note_unknown_fields(h, hd);
    if (hd->trailers) {
        if (hd->dir == TT_DIR_S2C) response_trailers(h, hd);
        return;
    }
    if (hd->dir == TT_DIR_C2S) request_head(h, hd);
    else response_head(h, hd);
}

/* Whether a DATA payload is whole gRPC messages (RFC-less but fixed: a
 * flag byte 0 or 1, a 4-byte big-endian length, the message), at least
 * one, ending exactly at its end: how a body met mid-stream is told to be
 * gRPC when its HEADERS were not seen. */
static bool grpc_whole(const uint8_t *d, size_t n)
{
    size_t at = 0;
    while (at < n) {
        if (n - at < 5 || d[at] > 1) return false;
        uint64_t m = (uint64_t)d[at + 1] << 24 | (uint64_t)d[at + 2] << 16 | (uint64_t)d[at + 3] << 8 | d[at + 4];
        if (m > n - at - 5) return false;
        at += 5 + m;
    }
    return n > 0;
}

static void note_window(struct conn_h2 *h, h2_stream *s, uint64_t mono_ns);

static void h2_on_data(void *ud, uint32_t stream_id, tt_direction dir, const uint8_t *data, size_t len,
                       uint64_t body_off, uint64_t mono_ns)
{
    struct conn_h2 *h = ud;
    h2_stream *s = stream_find(h, stream_id);
    if (h->midstream && dir == TT_DIR_S2C && len && stream_id % 2 == 1 && (!s || (s->p && !s->p->response_started))) {
        /* a response whose HEADERS were not seen (before the capture, or
         * before its direction's first frame boundary): framed from here,
         * by its body */
        if (!s) s = stream_not_seen(h, stream_id);
        s->p->response_started = true;
        s->head_unseen = s->sniff = true;
    }
    if (!s || !len) return;
    if (dir == TT_DIR_S2C) s->data_end_off = h->parser_base[dir] + tt_http2_offset(h->parser, dir);
    if (s->calls) {
        if (dir == TT_DIR_C2S) tt_grpc_calls_request_data(s->calls, data, len, body_off, mono_ns);
        else if (s->framer) tt_framer_feed(s->framer, data, len, body_off, mono_ns);
        return;
    }
    if (dir == TT_DIR_C2S) {
        if (s->body_overflow) return;
        if (s->body_len + len > MAX_REQUEST_BODY) {
            s->body_overflow = true;
            return;
        }
        s->body = tt_conn_grow(s->body, &s->body_cap, s->body_len + len, 1);
        memcpy(s->body + s->body_len, data, len);
        s->body_len += len;
        return;
    }
    pending *p = s->p;
    if (!p->response_started) return;
    if (h->c->t->opt.keep_body) tt_conn_keep_body(&p->req, data, len, body_off);
    if (s->sniff) {
        s->sniff = false;
        p->req.framing = tt_conn_sniff_framing(data, len, p->req.dialect);
        if (p->req.framing == TT_FRAMING_NONE && s->head_unseen) {
            /* no head seen: the body may have been met inside an event;
             * the next DATA is looked at again */
            if (grpc_whole(data, len)) p->req.framing = TT_FRAMING_GRPC;
            else s->sniff = true;
        }
        if (p->req.framing != TT_FRAMING_NONE) s->framer = tt_framer_new(p->req.framing, &stream_frame_cb, s);
    }
    if (s->framer) tt_framer_feed(s->framer, data, len, body_off, mono_ns);
    note_window(h, s, mono_ns);
}

/* ---- flow control: the server waiting for the client's credit ---- */

/* After a response DATA frame: the server's send windows it left closed. */
static void note_window(struct conn_h2 *h, h2_stream *s, uint64_t mono_ns)
{
    int64_t conn_window, stream_window;
    if (!tt_http2_send_window(h->parser, TT_DIR_S2C, s->id, &conn_window, &stream_window)) return;
    if (stream_window <= 0 && !s->window_closed_ns) s->window_closed_ns = mono_ns;
    if (conn_window <= 0 && !h->conn_window_closed_ns) h->conn_window_closed_ns = mono_ns;
}

/* The window that closed at closed_ns opened at open_ns: a stall of s's
 * request, when its response was still open. */
static void stall(h2_stream *s, uint64_t closed_ns, uint64_t open_ns)
{
    if (!s->p || s->resp_ended) return;
    tt_request *r = &s->p->req;
    if (r->h2_window_stalls++ == 0) r->h2_first_stall_ns = closed_ns;
    r->h2_window_closed_ns += open_ns > closed_ns ? open_ns - closed_ns : 0;
}

static void h2_on_window_update(void *ud, const tt_h2_window_update *w)
{
    struct conn_h2 *h = ud;
    if (w->dir != TT_DIR_C2S || !w->window_known || w->window <= 0) return;
    if (w->stream_id == 0) {
        if (!h->conn_window_closed_ns) return;
        for (size_t i = 0; i < h->n; i++) stall(h->s[i], h->conn_window_closed_ns, w->mono_ns);
        h->conn_window_closed_ns = 0;
        return;
    }
    h2_stream *s = stream_find(h, w->stream_id);
    if (!s || !s->window_closed_ns) return;
    stall(s, s->window_closed_ns, w->mono_ns);
    s->window_closed_ns = 0;
}

void tt_conn_h2_end_reason(const tt_h2_stream_end *e, tt_request *r)
{
    if (r->http_error[0] || e->how == TT_H2_END_STREAM) return;
    if (e->how == TT_H2_END_RST || e->how == TT_H2_END_GOAWAY)
        snprintf(r->http_error, sizeof r->http_error, "HTTP/2 %s (error code %u) from the %s",
                 e->how == TT_H2_END_RST ? "RST_STREAM" : "GOAWAY", (unsigned)e->error_code,
                 e->by == TT_DIR_C2S ? "client" : "server");
    else
        snprintf(r->http_error, sizeof r->http_error, "HTTP/2 %s half ended: %s",
                 e->dir == TT_DIR_C2S ? "request" : "response", tt_http2_end_name(e->how));
}

/* A half of a stream of calls ended. */
static void calls_stream_end(struct conn_h2 *h, h2_stream *s, const tt_h2_stream_end *e)
{
    if (e->dir == TT_DIR_C2S) {
        if (s->req_ended) return;
        s->req_ended = true;
        tt_grpc_calls_request_end(s->calls, e->mono_ns);
    } else {
        if (s->resp_ended) return;
        s->resp_ended = true;
        close_framer(s, e->mono_ns);
        tt_grpc_calls_response_end(s->calls, e);
    }
    maybe_file(h, s);
}

static void h2_on_stream_end(void *ud, const tt_h2_stream_end *e)
{
    struct conn_h2 *h = ud;
    h2_stream *s = stream_find(h, e->stream_id);
    if (!s) return;
    if (s->calls) {
        calls_stream_end(h, s, e);
        return;
    }
    pending *p = s->p;
    tt_request *r = &p->req;
    tt_conn_h2_end_reason(e, r);
    if (e->how == TT_H2_END_RST && !r->h2_reset_by) {
        r->h2_reset_by = e->by == TT_DIR_C2S ? 1 : 2;
        r->h2_reset_code = e->error_code;
    }
    if (e->how == TT_H2_END_GAP) r->incomplete |= TT_INC_GAP;
    if (e->how == TT_H2_END_ERROR) r->incomplete |= TT_INC_HTTP_ERROR;
    if (e->dir == TT_DIR_C2S) {
        if (s->req_ended) return;
        s->req_ended = true;
        r->req_last_ns = e->how == TT_H2_END_STREAM || !e->last_ns ? e->mono_ns : e->last_ns;
        if (e->how == TT_H2_END_STREAM) {
            if (!s->body_overflow && s->body_len) tt_request_fields_parse(&r->fields, s->body, s->body_len);
        } else {
            r->incomplete |= TT_INC_REQUEST_CUT;
        }
        p->request_done = true;
    } else {
        if (s->resp_ended) return;
        s->resp_ended = true;
        close_framer(s, e->mono_ns);
        r->resp_last_ns = e->how == TT_H2_END_STREAM ? e->mono_ns : (e->last_ns ? e->last_ns : TT_NS_NONE);
        if (e->how == TT_H2_END_STREAM) {
            r->response_end = TT_HTTP_END_COMPLETE;
            p->response_done = true;
        } else {
            r->response_end = e->how == TT_H2_END_GAP     ? TT_HTTP_END_GAP
                              : e->how == TT_H2_END_ERROR ? TT_HTTP_END_ERROR
                                                          : TT_HTTP_END_TRUNCATED;
            if (p->response_started) r->incomplete |= TT_INC_RESPONSE_CUT;
            p->response_done = p->response_started; /* no head: filed as no-response */
        }
    }
    maybe_file(h, s);
}

static void h2_on_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t stream_off)
{
    struct conn_h2 *h = ud;
    conn_state *c = h->c;
    char why[96];
    snprintf(why, sizeof why, "%s: HTTP/2 %s: %s", dir == TT_DIR_C2S ? "request" : "response",
             tt_http2_error_name(code), msg ? msg : "");
    if (!c->http_error[0]) snprintf(c->http_error, sizeof c->http_error, "%s", why);
    if (code == TT_H2_ERR_GAP) {
        c->messages_lost = true;
        return;
    }
    if (!c->any_message) tt_conn_add_note(c, why);
    for (size_t i = 0; i < h->n; i++) {
        if (h->s[i]->calls) {
            tt_grpc_calls_error(h->s[i]->calls, why);
            continue;
        }
        tt_request *r = &h->s[i]->p->req;
        if (!r->http_error[0]) snprintf(r->http_error, sizeof r->http_error, "%s", why);
    }
}

static const tt_http2_callbacks h2_cb = {
    .on_headers = h2_on_headers, .on_data = h2_on_data, .on_stream_end = h2_on_stream_end, .on_error = h2_on_error,
    .on_window_update = h2_on_window_update};

/* ---- joined mid-stream: each direction's first frame boundary ---- */

static void sync_drop(struct h2_sync *y)
{
    for (size_t i = 0; i < y->n; i++) free(y->q[i].data);
    free(y->q);
    y->q = NULL;
    y->n = y->cap = y->bytes = y->from = 0;
}

/* what: a format with %s (the direction) and %llu (a byte count). */
static void sync_note(conn_state *c, tt_direction dir, const char *what, uint64_t n)
{
    char why[160];
    snprintf(why, sizeof why, what, dir == TT_DIR_C2S ? "client" : "server", (unsigned long long)n);
    tt_conn_add_info(c, why);
}

/* A DATA chunk of a direction not yet synchronised: held, then the held
 * bytes searched; from a boundary on, they go to the parser. */
static void sync_data(struct conn_h2 *h, const tt_chunk *ch)
{
    struct h2_sync *y = &h->sync[ch->dir];
    if (y->dead || !ch->len) return;
    y->q = tt_conn_grow(y->q, &y->cap, y->n + 1, sizeof *y->q);
    struct held_chunk *hc = &y->q[y->n++];
    hc->ch = *ch;
    hc->ch.conn = NULL;
    hc->data = malloc(ch->len);
    if (!hc->data) abort();
    memcpy(hc->data, ch->data, ch->len);
    y->bytes += ch->len;
    size_t len;
    uint8_t *all = tt_conn_held_concat(y->q, y->n, -1, &len);
    long at = tt_http2_find_sync(all, len, ch->dir, &y->from);
    free(all);
    if (at < 0) {
        if (y->bytes > HELD_MAX) {
            sync_note(h->c, ch->dir, "HTTP/2 joined mid-stream: no frames found in the %s's first %llu bytes", y->bytes);
            y->dead = true;
            sync_drop(y);
            tt_http2_eof(h->parser, ch->dir, false, ch->mono_ns);
        }
        return;
    }
    y->synced = true;
    h->based[ch->dir] = true;
    h->parser_base[ch->dir] = y->q[0].ch.offset + (uint64_t)at - tt_http2_offset(h->parser, ch->dir);
    if (at > 0) sync_note(h->c, ch->dir, "HTTP/2 joined mid-stream: the %s's first frame after %llu bytes skipped", (uint64_t)at);
    size_t skip = (size_t)at;
    for (size_t i = 0; i < y->n; i++) {
        size_t n = y->q[i].ch.len, k = skip < n ? skip : n;
        skip -= k;
        if (k < n) tt_http2_feed(h->parser, ch->dir, y->q[i].data + k, n - k, y->q[i].ch.mono_ns);
    }
    sync_drop(y);
}

/* ---- the connection ---- */

void tt_conn_h2_chunk(conn_state *c, const tt_chunk *ch)
{
    struct conn_h2 *h = c->h2;
    struct h2_sync *y = &h->sync[ch->dir];
    bool unsynced = h->midstream && !y->synced;
    if ((ch->kind == TT_CHUNK_DATA || ch->kind == TT_CHUNK_GAP) && !h->based[ch->dir] && !unsynced) {
        h->based[ch->dir] = true;
        h->parser_base[ch->dir] = ch->offset - tt_http2_offset(h->parser, ch->dir);
    }
    switch (ch->kind) {
    case TT_CHUNK_DATA:
        tt_conn_note_data_chunk(c, ch);
        if (unsynced) sync_data(h, ch);
        else tt_http2_feed(h->parser, ch->dir, ch->data, ch->len, ch->mono_ns);
        break;
    case TT_CHUNK_GAP:
        c->parsed_end[ch->dir] = ch->offset + ch->len;
        if (ch->dir == TT_DIR_S2C) c->response_lost_ns = ch->mono_ns;
        if (unsynced) sync_drop(y); /* held bytes end at the hole: look again after it */
        else tt_http2_gap(h->parser, ch->dir, ch->len, ch->mono_ns);
        break;
    case TT_CHUNK_FIN:
        if (unsynced) sync_drop(y);
        tt_http2_eof(h->parser, ch->dir, true, ch->mono_ns);
        break;
    case TT_CHUNK_RST:
    case TT_CHUNK_END:
        if (unsynced) sync_drop(y);
        tt_http2_eof(h->parser, ch->dir, false, ch->mono_ns);
        break;
    case TT_CHUNK_READY:
        tt_conn_ready_mark(c, ch);
        break;
    case TT_CHUNK_RELEASE:
        break;
    }
}

/* ---- h2c upgrade from HTTP/1.1 (conn_h2c.c decides when) ---- */

void tt_conn_h2_begin_upgrade(conn_state *c, pending *p, const char *settings, size_t len, uint64_t mono_ns)
{
    struct conn_h2 *h = calloc(1, sizeof *h);
    if (!h) abort();
    h->c = c;
    h->parser = tt_http2_new(&h2_cb, h);
    if (!h->parser) abort();
    if (tt_http2_start_upgrade(h->parser, settings, len, mono_ns) != 0)
        tt_conn_add_note(c, "h2c upgrade: HTTP2-Settings is not a base64url SETTINGS payload (defaults assumed)");
    c->h2 = h;
    c->proto_decided = true;
    h2_stream *s = calloc(1, sizeof *s); /* stream 1: the upgrade request, already queued */
    if (!s) abort();
    s->id = 1;
    s->c = c;
    s->p = p;
    p->req.stream_id = 1;
    h->s = tt_conn_grow(h->s, &h->cap, h->n + 1, sizeof *h->s);
    h->s[h->n++] = s;
}

void tt_conn_h2_upgrade_request_end(conn_state *c)
{
    struct conn_h2 *h = c->h2;
    if (!h) return;
    h2_stream *s = stream_find(h, 1);
    if (!s || s->req_ended) return;
    s->req_ended = true;
    maybe_file(h, s);
}

void tt_conn_h2_open(conn_state *c, bool midstream)
{
    c->h2 = calloc(1, sizeof *c->h2);
    if (!c->h2) abort();
    c->h2->c = c;
    c->h2->midstream = midstream;
    c->h2->parser = midstream ? tt_http2_new_midstream(&h2_cb, c->h2) : tt_http2_new(&h2_cb, c->h2);
    if (!c->h2->parser) abort();
    if (midstream) tt_conn_add_info(c, "read as HTTP/2 joined mid-stream (its start not seen: frames found in its bytes)");
}

void tt_conn_h2_release(conn_state *c, uint64_t mono_ns)
{
    tt_conn_proto_release(c);
    struct conn_h2 *h = c->h2;
    if (!h) return;
    for (size_t i = 0; i < h->n; i++) {
        h2_stream *s = h->s[i];
        close_framer(s, mono_ns);
        if (s->calls) tt_grpc_calls_request_end(s->calls, mono_ns);
        tt_grpc_calls_free(s->calls);
        free(s->body);
        free(s);
    }
    free(h->s);
    sync_drop(&h->sync[0]);
    sync_drop(&h->sync[1]);
    tt_http2_free(h->parser);
    free(h);
    c->h2 = NULL;
}
