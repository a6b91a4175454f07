/* conn_http.c - one connection's HTTP messages and framed events, turned
 * into filed requests (conn_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/conn_internal.h"
#include "timeline/request_fields.h"

#define EVENTS_HINT_MAX 4096u /* tt_tracker.events_hint's bound (448 KiB of events) */

/* ---- event types ---- */

uint16_t tt_conn_intern_type(tt_tracker *t, const char *s, size_t len)
{
    if (!s) return 0;
    if (t->last_type && t->type_lens[t->last_type] == len && memcmp(t->type_names[t->last_type], s, len) == 0)
        return t->last_type;
    for (uint16_t i = 1; i < t->n_types; i++)
        if (t->type_lens[i] == len && memcmp(t->type_names[i], s, len) == 0) return t->last_type = i;
    if (t->n_types >= MAX_EVENT_TYPES) return MAX_EVENT_TYPES - 1;
    char *name = strndup(s, len > MAX_TYPE_NAME ? MAX_TYPE_NAME : len);
    if (!name) return 0; /* out of memory: the event keeps no type */
    t->type_names[t->n_types] = name;
    t->type_lens[t->n_types] = (uint8_t)strlen(name);
    return t->last_type = t->n_types++;
}

const char *tt_tracker_type_name(const tt_tracker *t, uint16_t type_id)
{
    if (type_id == 0 || type_id >= t->n_types) return "";
    return t->type_names[type_id];
}

/* ---- requests ---- */

static void copy_header(const tt_http_head *h, const char *name, char *dst, size_t cap)
{
    const tt_http_header *v = tt_http_find_header(h, name);
    if (v) tt_conn_copy_value(v->value, v->value_len, dst, cap);
}

/* At TT_TRACKER_MAX_IN_FLIGHT requests waiting on one connection (a client
 * pipelining without end, a response direction never seen): the oldest
 * one not being parsed is filed at once, incomplete (evicted). */
static void bound_in_flight(conn_state *c)
{
    if (c->queue_len < TT_TRACKER_MAX_IN_FLIGHT) return;
    for (size_t i = 0; i < c->queue_len; i++) {
        pending *old = c->queue[i];
        if (old == c->parsing_request || old == c->parsing_response) continue;
        old->req.incomplete |= TT_INC_EVICTED;
        memmove(c->queue + i, c->queue + i + 1, (c->queue_len - i - 1) * sizeof *c->queue);
        c->queue_len--;
        c->t->evicted_requests++;
        tt_conn_file_request(c, old);
        return;
    }
}

pending *tt_conn_pending_new(conn_state *c)
{
    bound_in_flight(c);
    pending *p = calloc(1, sizeof *p);
    if (!p) abort();
    tt_request *r = &p->req;
    r->conn_id = c->conn_id;
    r->client = c->client;
    r->server = c->server;
    r->ordinal = c->next_ordinal++;
    tt_request_fields_init(&r->fields);
    r->req_first_ns = r->req_last_ns = r->resp_first_ns = r->resp_headers_ns = TT_NS_NONE;
    r->first_event_ns = r->first_token_ns = r->last_token_ns = r->terminal_ns = TT_NS_NONE;
    r->req_ready_ns = r->first_token_ready_ns = r->last_token_ready_ns = TT_NS_NONE;
    r->resp_last_ns = TT_NS_NONE;
    r->first_comment_off = r->first_comment_ns = TT_NS_NONE;
    r->h2_first_stall_ns = TT_NS_NONE;
    r->usage_completion_tokens = r->usage_prompt_tokens = -1;
    r->grpc_status = -1;
    c->queue = tt_conn_grow(c->queue, &c->queue_cap, c->queue_len + 1, sizeof *c->queue);
    c->queue[c->queue_len++] = p;
    c->t->in_flight++;
    return p;
}

static void count_shared_chunks(tt_request *r)
{
    for (uint32_t i = 0; i < r->n_events; i++) {
        tt_event_rec *e = &r->events[i];
        uint32_t shared = 0;
        for (uint32_t j = i; j-- > 0 && r->events[j].last_chunk >= e->first_chunk;) shared++;
        for (uint32_t j = i + 1; j < r->n_events && r->events[j].first_chunk <= e->last_chunk; j++) shared++;
        e->shared_chunk = shared > 0xffff ? 0xffff : (uint16_t)shared;
    }
}

void tt_conn_file_request(conn_state *c, pending *p)
{
    tt_tracker *t = c->t;
    tt_request *r = &p->req;
    if (!p->request_done && !(r->incomplete & TT_INC_REQUEST_NOT_SEEN)) r->incomplete |= TT_INC_REQUEST_CUT;
    if (!p->response_started) r->incomplete |= TT_INC_NO_RESPONSE;
    else if (!p->response_done) r->incomplete |= TT_INC_RESPONSE_CUT;
    count_shared_chunks(r);
    r->prev_filed = c->last_filed;
    t->events_hint = r->n_events < EVENTS_HINT_MAX ? r->n_events : EVENTS_HINT_MAX;
    r->filed_at = t->forgotten + t->n_reqs + 1;
    t->reqs = tt_conn_grow(t->reqs, &t->cap_reqs, t->n_reqs + 1, sizeof *t->reqs);
    t->reqs[t->n_reqs++] = *r;
    c->last_filed = r->filed_at;
    t->in_flight--;
    tt_classify_memo_free(p->memo);
    free(p);
    if (t->opt.on_file) t->opt.on_file(t->opt.on_file_ctx, &t->reqs[t->n_reqs - 1]);
}

void tt_conn_file_pending(conn_state *c, pending *p)
{
    for (size_t i = 0; i < c->queue_len; i++) {
        if (c->queue[i] != p) continue;
        memmove(c->queue + i, c->queue + i + 1, (c->queue_len - i - 1) * sizeof *c->queue);
        c->queue_len--;
        break;
    }
    tt_conn_file_request(c, p);
}

/* File finished requests from the front of the queue, in order. */
static void file_finished(conn_state *c)
{
    size_t k = 0;
    while (k < c->queue_len && c->queue[k]->request_done && c->queue[k]->response_done) {
        tt_conn_file_request(c, c->queue[k]);
        k++;
    }
    if (k) {
        memmove(c->queue, c->queue + k, (c->queue_len - k) * sizeof *c->queue);
        c->queue_len -= k;
    }
}

/* ---- framed events ---- */

static void append_text(tt_request *r, const char *s, size_t n)
{
    if (!n) return;
    r->text = tt_conn_grow(r->text, &r->text_cap, r->text_len + n + 1, 1);
    memcpy(r->text + r->text_len, s, n);
    r->text_len += n;
    r->text[r->text_len] = 0;
}

/* The stream offset of response body byte body_off, found through the
 * slices of the DATA chunk being parsed (a byte decoded from a compressed
 * body has no place of its own in the stream: TT_NS_NONE). */
static uint64_t body_byte_stream_off(const conn_state *c, uint64_t body_off)
{
    for (size_t i = c->n_slices; i-- > 0;) {
        const struct body_slice *sl = &c->slices[i];
        if (body_off >= sl->body_off && body_off - sl->body_off < sl->len)
            return sl->stream_off + (body_off - sl->body_off);
    }
    return TT_NS_NONE;
}

#define LATE_READY_FILED_SCAN 1024 /* filed requests looked at for a late mark */

/* Whether r's response events all end before stream offset `from` in
 * direction dir, and so those of every request filed before it on its
 * connection (filed as they end, in the order of their last bytes): only
 * said of the response direction (HTTP/2 requests may start out of the
 * order they end in). */
static bool filed_all_before(const tt_request *r, tt_direction dir, uint64_t from)
{
    if (dir != TT_DIR_S2C || r->n_events == 0) return false;
    uint64_t last = r->events[r->n_events - 1].dispatch_stream_off;
    return last != TT_NS_NONE && last < from;
}

void tt_conn_ready_mark(conn_state *c, const tt_chunk *ch)
{
    uint64_t from = ch->offset, end = ch->offset + ch->len;
    tt_ready_marks_add(&c->ready[ch->dir], from, end, ch->mono_ns);
    if (from >= c->parsed_end[ch->dir]) return; /* the usual case: its bytes are still to come */
    for (size_t i = 0; i < c->queue_len; i++) tt_request_ready_fill_late(&c->queue[i]->req, ch->dir, from, end, ch->mono_ns);
    tt_tracker *t = c->t;
    /* the connection's own filed requests, newest first (a link to a
     * request let go, tt_tracker_forget, ends the walk) */
    uint64_t at = c->last_filed;
    for (size_t k = 0; at > t->forgotten && k < LATE_READY_FILED_SCAN; k++) {
        tt_request *r = &t->reqs[at - 1 - t->forgotten];
        tt_request_ready_fill_late(r, ch->dir, from, end, ch->mono_ns);
        if (filed_all_before(r, ch->dir, from)) break;
        at = r->prev_filed;
    }
}

void tt_conn_classify_event(const conn_state *c, const tt_request *r, tt_classify_memo **memo, const tt_event_frame *ev,
                            tt_classified *cl)
{
    char *text = c->t->opt.keep_text ? c->t->text_scratch : NULL;
    if (ev->flags & (TT_FRAME_COMPRESSED | TT_FRAME_BAD_PREFIX)) {
        /* a compressed gRPC message is not decoded here: OTHER, not read */
        tt_dialect_classify(TT_DIALECT_UNKNOWN, NULL, 0, NULL, 0, cl, text, text ? TEXT_SCRATCH : 0);
        cl->json_ok = false;
        return;
    }
    tt_dialect_classify_memo(memo, r->dialect, ev->type, ev->type_len, ev->data, ev->data_len, cl, text,
                             text ? TEXT_SCRATCH : 0);
}

void tt_conn_take_event(conn_state *c, pending *p, const tt_event_frame *ev, uint64_t stream_off)
{
    tt_request *r = &p->req;
    if (ev->flags & TT_FRAME_UNTERMINATED) {
        /* not dispatched: the stream ended inside it */
        r->incomplete |= TT_INC_RESPONSE_CUT;
        if (!r->cut_event) {
            r->cut_event = true;
            r->cut_event_off = ev->first_off;
            r->cut_event_end = ev->dispatch_off;
            r->cut_event_ns = ev->first_ns;
        }
        return;
    }
    tt_classified cl;
    tt_conn_classify_event(c, r, &p->memo, ev, &cl);
    tt_conn_record_event(c, p, ev, stream_off, &cl);
}

void tt_conn_record_event(conn_state *c, pending *p, const tt_event_frame *ev, uint64_t stream_off,
                          const tt_classified *cl)
{
    tt_request *r = &p->req;
    tt_tracker *t = c->t;
    char *text = t->opt.keep_text ? t->text_scratch : NULL;
    if (r->dialect == TT_DIALECT_UNKNOWN && cl->dialect != TT_DIALECT_UNKNOWN) r->dialect = cl->dialect;

    size_t want = r->cap_events || r->n_events >= t->events_hint ? r->n_events + 1 : t->events_hint;
    r->events = tt_conn_grow(r->events, &r->cap_events, want, sizeof *r->events);
    tt_event_rec *e = &r->events[r->n_events++];
    memset(e, 0, sizeof *e);
    e->first_ns = ev->first_ns;
    e->dispatch_ns = ev->dispatch_ns;
    e->dispatch_stream_off = stream_off;
    e->ready_ns = e->dispatch_stream_off != TT_NS_NONE
                      ? tt_ready_marks_at(&c->ready[TT_DIR_S2C], e->dispatch_stream_off)
                      : TT_NS_NONE;
    e->first_off = ev->first_off;
    e->dispatch_off = ev->dispatch_off;
    e->text_hash = cl->text_hash;
    e->text_bytes = cl->text_bytes;
    e->reasoning_bytes = cl->reasoning_bytes;
    e->has = cl->has;
    e->frame_flags = ev->flags;
    e->first_chunk = ev->first_chunk;
    e->last_chunk = ev->last_chunk;
    e->data_len = ev->data_len > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->data_len;
    e->type_id = ev->type ? tt_conn_intern_type(t, ev->type, ev->type_len) : 0;
    e->kind = (uint8_t)cl->kind;
    e->terminators = (uint8_t)ev->terminators;
    e->fields = (uint8_t)ev->fields;
    e->json_ok = cl->json_ok;
    e->lines = ev->lines;
    e->comment_lines = ev->comment_lines;
    e->usage_completion_tokens = cl->usage_completion_tokens > INT32_MAX ? INT32_MAX
                                                                        : (int32_t)cl->usage_completion_tokens;
    if (ev->terminators & (TT_TERM_CR | TT_TERM_CRLF)) {
        uint64_t rel = ev->cr_off >= ev->first_off ? ev->cr_off - ev->first_off : 0;
        e->cr_rel = rel > UINT32_MAX ? UINT32_MAX : (uint32_t)rel;
    }

    if (r->first_event_ns == TT_NS_NONE) r->first_event_ns = ev->dispatch_ns;
    if (r->terminal_seen) r->data_after_terminal = true;
    r->kind_counts[cl->kind]++;
    if (cl->kind == TT_EV_TOKEN) {
        r->token_events++;
        if (r->first_token_ns == TT_NS_NONE) {
            r->first_token_ns = ev->dispatch_ns;
            r->first_token_ready_ns = e->ready_ns;
        }
        r->last_token_ns = ev->dispatch_ns;
        r->last_token_ready_ns = e->ready_ns;
        r->text_bytes += cl->text_bytes;
        r->reasoning_bytes += cl->reasoning_bytes;
        if (text) {
            e->text_off = (uint32_t)r->text_len;
            append_text(r, text, strnlen(text, TEXT_SCRATCH));
        }
    }
    if (cl->has & TT_HAS_USAGE) {
        if (cl->usage_completion_tokens >= 0) r->usage_completion_tokens = cl->usage_completion_tokens;
        if (cl->usage_prompt_tokens >= 0) r->usage_prompt_tokens = cl->usage_prompt_tokens;
    }
    if (cl->finish_reason[0]) snprintf(r->finish_reason, sizeof r->finish_reason, "%s", cl->finish_reason);
    if (cl->response_id[0] && !r->response_id[0])
        snprintf(r->response_id, sizeof r->response_id, "%s", cl->response_id);
    if (cl->kind == TT_EV_ERROR && !r->error_message[0])
        snprintf(r->error_message, sizeof r->error_message, "%s", cl->error_message[0] ? cl->error_message : "error");
    if ((cl->has & TT_HAS_TERMINAL) && !r->terminal_seen) {
        r->terminal_seen = true;
        r->terminal_ns = ev->dispatch_ns;
    }
}

void tt_conn_take_comment(tt_request *r, uint64_t off, uint64_t mono_ns)
{
    if (r->comments++ == 0) {
        r->first_comment_off = off;
        r->first_comment_ns = mono_ns;
    }
}

/* HTTP/1: one response body at a time, the one being parsed. */
static void on_frame(void *ud, const tt_event_frame *ev)
{
    conn_state *c = ud;
    if (!c->parsing_response) return;
    tt_conn_take_event(c, c->parsing_response, ev,
                       ev->dispatch_off ? body_byte_stream_off(c, ev->dispatch_off - 1) : TT_NS_NONE);
}

static void on_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    conn_state *c = ud;
    if (c->parsing_response) tt_conn_take_comment(&c->parsing_response->req, off, mono_ns);
}

static const tt_frame_callbacks frame_cb = {.on_event = on_frame, .on_comment = on_comment};

void tt_conn_flush_body_piece(conn_state *c)
{
    if (c->body_piece_len && c->framer)
        tt_framer_feed(c->framer, c->body_piece_ref ? c->body_piece_ref : c->body_piece, c->body_piece_len,
                       c->body_piece_off, c->body_piece_ns);
    c->body_piece_len = 0;
    c->body_piece_ref = NULL;
}

void tt_conn_close_framer(conn_state *c, uint64_t mono_ns)
{
    tt_conn_flush_body_piece(c);
    if (!c->framer) return;
    tt_framer_finish(c->framer, mono_ns);
    tt_framer_free(c->framer);
    c->framer = NULL;
}

static void start_framer(conn_state *c, tt_request *r)
{
    c->framer = tt_framer_new(r->framing, &frame_cb, c);
}

static bool starts_with(const uint8_t *d, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(d, lit, l) == 0;
}

tt_framing tt_conn_sniff_framing(const uint8_t *d, size_t n, tt_dialect dialect)
{
    if (n >= 3 && d[0] == 0xEF && d[1] == 0xBB && d[2] == 0xBF) return TT_FRAMING_SSE;
    if (starts_with(d, n, "data:") || starts_with(d, n, "event:") || starts_with(d, n, ":") ||
        starts_with(d, n, "id:") || starts_with(d, n, "retry:"))
        return TT_FRAMING_SSE;
    if (n && d[0] == '{' && dialect == TT_DIALECT_OLLAMA) return TT_FRAMING_NDJSON;
    return TT_FRAMING_NONE;
}

/* ---- HTTP callbacks: requests ---- */

static void req_on_head(void *ud, const tt_http_head *h)
{
    conn_state *c = ud;
    c->any_message = true;
    pending *p = tt_conn_pending_new(c);
    tt_request *r = &p->req;
    size_t n = h->method_len < sizeof r->method - 1 ? h->method_len : sizeof r->method - 1;
    memcpy(r->method, h->method, n);
    n = h->target_len < sizeof r->path - 1 ? h->target_len : sizeof r->path - 1;
    memcpy(r->path, h->target, n);
    copy_header(h, "x-request-id", r->request_id, sizeof r->request_id);
    copy_header(h, "x-correlation-id", r->correlation_id, sizeof r->correlation_id);
    r->req_first_ns = h->first_ns;
    r->req_first_off = h->first_off;
    r->req_seq_known = c->c2s_seq_known;
    r->req_seq = c->c2s_seq_base + (uint32_t)h->first_off;
    r->req_ready_ns = tt_ready_marks_at(&c->ready[TT_DIR_C2S], h->first_off);
    r->dialect = tt_dialect_from_path(h->target, h->target_len);
    tt_conn_h2c_request_head(c, p, h);
    c->parsing_request = p;
    c->body_len = 0;
    c->body_overflow = false;
    if (h->method_len == 7 && !memcmp(h->method, "CONNECT", 7)) tt_http1_expect_connect(c->response_parser);
    else tt_http1_expect_response(c->response_parser, h->method_len == 4 && !memcmp(h->method, "HEAD", 4));
}

static void req_on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    conn_state *c = ud;
    if (!c->parsing_request || c->body_overflow) return;
    if (c->body_len + len > MAX_REQUEST_BODY) {
        c->body_overflow = true;
        return;
    }
    c->body = tt_conn_grow(c->body, &c->body_cap, c->body_len + len, 1);
    memcpy(c->body + c->body_len, data, len);
    c->body_len += len;
}

static void req_on_end(void *ud, const tt_http_msg_end *end)
{
    conn_state *c = ud;
    pending *p = c->parsing_request;
    if (!p) return;
    tt_request *r = &p->req;
    r->req_last_ns = end->last_ns;
    if (end->how == TT_HTTP_END_COMPLETE || end->how == TT_HTTP_END_EOF) {
        if (!c->body_overflow && c->body_len) tt_request_fields_parse(&r->fields, c->body, c->body_len);
        p->request_done = true;
    } else {
        r->incomplete |= TT_INC_REQUEST_CUT;
        if (end->how == TT_HTTP_END_GAP) r->incomplete |= TT_INC_GAP;
        r->gap_bytes += end->gap_bytes;
        p->request_done = true; /* nothing more will come for it */
    }
    c->parsing_request = NULL;
    if (tt_conn_h2c_request_end(c, p, end)) return;
    file_finished(c);
}

static void add_note(conn_state *c, const char *reason, bool analysed)
{
    tt_tracker *t = c->t;
    if (t->n_notes >= TT_TRACKER_NOTES_MAX) {
        t->notes_over++;
        return;
    }
    t->notes = tt_conn_grow(t->notes, &t->cap_notes, t->n_notes + 1, sizeof *t->notes);
    tt_conn_note *nt = &t->notes[t->n_notes++];
    nt->client = c->client;
    nt->server = c->server;
    nt->conn_id = c->conn_id;
    nt->analysed = analysed;
    nt->order_key = t->order_key;
    snprintf(nt->reason, sizeof nt->reason, "%s", reason);
}

void tt_conn_add_note(conn_state *c, const char *reason) { add_note(c, reason, false); }

void tt_conn_add_info(conn_state *c, const char *what) { add_note(c, what, true); }

/* cut: the request whose message that direction was reading, if any. */
static void on_http_error(conn_state *c, const char *side, pending *cut, tt_http_error code, const char *msg)
{
    char why[96];
    snprintf(why, sizeof why, "%s: %s", side, msg ? msg : "unparseable");
    if (!c->http_error[0]) snprintf(c->http_error, sizeof c->http_error, "%s", why);
    if (code == TT_HTTP_ERR_GAP) {
        /* the parser goes on at the next message: only the one cut is touched */
        c->messages_lost = true;
        if (cut && !cut->req.http_error[0]) snprintf(cut->req.http_error, sizeof cut->req.http_error, "%s", why);
        return;
    }
    if (!c->any_message || code == TT_HTTP_ERR_UNSUPPORTED) tt_conn_add_note(c, why);
    for (size_t i = 0; i < c->queue_len; i++) {
        tt_request *r = &c->queue[i]->req;
        if (code != TT_HTTP_ERR_GAP) r->incomplete |= TT_INC_HTTP_ERROR;
        if (!r->http_error[0]) snprintf(r->http_error, sizeof r->http_error, "%s", why);
    }
}

static void req_on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    conn_state *c = ud;
    if (tt_conn_h2c_quiet_error(c, TT_DIR_C2S, code)) return;
    on_http_error(c, "request", c->parsing_request, code, msg);
}

/* ---- HTTP callbacks: responses ---- */

/* Append body bytes to r->body while they continue it and fit the limit. */
void tt_conn_keep_body(tt_request *r, const uint8_t *data, size_t len, uint64_t body_off)
{
    if (r->body_cut) return;
    if (body_off != r->body_len || len > TT_TRACKER_BODY_MAX - r->body_len) {
        r->body_cut = true;
        return;
    }
    r->body = tt_conn_grow(r->body, &r->body_cap, r->body_len + len, 1);
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
}

/* The queued request a response whose head began at head_ns answers, or
 * NULL for none. In order while nothing was lost. After a loss the
 * response answers the latest unanswered request that began before it
 * (HTTP/1.1 clients do not pipeline in practice): requests before that one
 * lost their responses (no-response, gap), and a response no queued request
 * began before answers a request that was lost. */
static pending *response_owner(conn_state *c, uint64_t head_ns)
{
    if (!c->messages_lost) {
        for (size_t i = 0; i < c->queue_len; i++)
            if (!c->queue[i]->response_started) return c->queue[i];
        return NULL;
    }
    size_t owner = c->queue_len;
    for (size_t i = 0; i < c->queue_len; i++) {
        const tt_request *r = &c->queue[i]->req;
        if (!c->queue[i]->response_started && r->req_first_ns != TT_NS_NONE && r->req_first_ns <= head_ns) owner = i;
    }
    if (owner == c->queue_len) return NULL;
    for (size_t i = 0; i < owner; i++) {
        pending *skipped = c->queue[i];
        if (skipped->response_started) continue;
        skipped->req.incomplete |= TT_INC_GAP;
        skipped->response_done = true; /* filed as no-response */
    }
    return c->queue[owner];
}

static void resp_on_head(void *ud, const tt_http_head *h)
{
    conn_state *c = ud;
    c->any_message = true;
    if (h->interim) return;
    pending *p = response_owner(c, h->first_ns);
    if (tt_conn_h2c_response_head(c, p, h)) return;
    if (!p) {
        p = tt_conn_pending_new(c);
        p->req.incomplete |= TT_INC_REQUEST_NOT_SEEN | (c->messages_lost ? TT_INC_GAP : 0);
        p->request_done = true;
    }
    p->response_started = true;
    tt_request *r = &p->req;
    r->status = h->status;
    r->coding = h->coding;
    r->resp_first_ns = h->first_ns;
    r->resp_headers_ns = h->head_end_ns;
    copy_header(h, "content-type", r->content_type, sizeof r->content_type);
    if (strstr(r->content_type, "text/event-stream")) r->framing = TT_FRAMING_SSE;
    else if (strstr(r->content_type, "ndjson") || strstr(r->content_type, "jsonl")) r->framing = TT_FRAMING_NDJSON;
    c->parsing_response = p;
    c->sniff_framing = r->framing == TT_FRAMING_NONE && r->coding != TT_CODING_OTHER;
    start_framer(c, r);
}

static void resp_on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    conn_state *c = ud;
    pending *p = c->parsing_response;
    if (!p || !len) return;
    bool in_feed = c->feed_data && data >= c->feed_data && (size_t)(data - c->feed_data) + len <= c->feed_len;
    if (in_feed) {
        /* undecoded bytes: a slice of the chunk being parsed */
        c->slices = tt_conn_grow(c->slices, &c->slices_cap, c->n_slices + 1, sizeof *c->slices);
        c->slices[c->n_slices++] = (struct body_slice){
            .body_off = body_off, .stream_off = c->feed_off + (uint64_t)(data - c->feed_data), .len = len};
    }
    if (c->t->opt.keep_body) tt_conn_keep_body(&p->req, data, len, body_off);
    if (c->sniff_framing) {
        c->sniff_framing = false;
        p->req.framing = tt_conn_sniff_framing(data, len, p->req.dialect);
        start_framer(c, &p->req);
    }
    if (!c->framer) return;
    if (c->body_piece_len && (body_off != c->body_piece_off + c->body_piece_len || mono_ns != c->body_piece_ns))
        tt_conn_flush_body_piece(c); /* bytes were lost in between: never join across a hole */
    if (!c->body_piece_len) {
        c->body_piece_off = body_off;
        c->body_piece_ns = mono_ns;
        if (in_feed) { /* valid until the chunk's flush, which comes before the feed returns */
            c->body_piece_ref = data;
            c->body_piece_len = len;
            return;
        }
    } else if (c->body_piece_ref) { /* a second piece: join them in body_piece */
        c->body_piece = tt_conn_grow(c->body_piece, &c->body_piece_cap, c->body_piece_len, 1);
        memcpy(c->body_piece, c->body_piece_ref, c->body_piece_len);
        c->body_piece_ref = NULL;
    }
    c->body_piece = tt_conn_grow(c->body_piece, &c->body_piece_cap, c->body_piece_len + len, 1);
    memcpy(c->body_piece + c->body_piece_len, data, len);
    c->body_piece_len += len;
}

static void resp_on_end(void *ud, const tt_http_msg_end *end)
{
    conn_state *c = ud;
    pending *p = c->parsing_response;
    if (!p) return;
    tt_request *r = &p->req;
    tt_conn_close_framer(c, end->last_ns);
    r->resp_last_ns = end->last_ns;
    r->response_end = end->how;
    r->gap_bytes += end->gap_bytes;
    if (end->how == TT_HTTP_END_COMPLETE || end->how == TT_HTTP_END_EOF) {
        p->response_done = true;
    } else {
        r->incomplete |= TT_INC_RESPONSE_CUT;
        if (end->how == TT_HTTP_END_GAP) r->incomplete |= TT_INC_GAP;
        if (end->how == TT_HTTP_END_ERROR) r->incomplete |= TT_INC_HTTP_ERROR;
        p->response_done = true;
        p->response_started = true;
    }
    c->parsing_response = NULL;
    file_finished(c);
}

static void resp_on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    conn_state *c = ud;
    if (tt_conn_h2c_quiet_error(c, TT_DIR_S2C, code)) return;
    if (code == TT_HTTP_ERR_UNSUPPORTED && c->any_message) {
        /* 101 Switching Protocols or a CONNECT tunnel: what follows is not HTTP */
        c->tunneled = true;
        tt_conn_add_note(c, msg ? msg : "left HTTP");
        return;
    }
    on_http_error(c, "response", c->parsing_response, code, msg);
}

const tt_http_callbacks tt_conn_request_cb = {
    .on_head = req_on_head, .on_body = req_on_body, .on_end = req_on_end, .on_error = req_on_error};
const tt_http_callbacks tt_conn_response_cb = {
    .on_head = resp_on_head, .on_body = resp_on_body, .on_end = resp_on_end, .on_error = resp_on_error};
