/* conn_grpc.c - an HTTP/2 stream that carries many requests: Triton's
 * ModelStreamInfer, a bidirectional gRPC stream on which each client
 * message is one inference request, answered by one or more response
 * messages, the last flagged triton_final_response (tritonclient's
 * start_stream and perf_analyzer, which genai-perf runs, keep one stream
 * open for many requests).
 *
 * Each client message is a request (a "call"): its instants are those of
 * the message's first and last bytes, its id the message's id (else the
 * stream's x-request-id), its model the message's model_name. A response
 * message goes to the open call whose id it carries, else to the oldest
 * open call; one with the final flag or an error ends its call, which is
 * filed at once. A response begins at the call's first response message.
 * When the stream's response half ends, calls still open are filed cut:
 * their final response never came. The stream's method, path, status and
 * content-type are every call's; its grpc-status only that of the calls
 * still open when the trailers came. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect_grpc.h"
#include "proto/grpc.h"
#include "timeline/conn_internal.h"

struct tt_grpc_calls {
    conn_state *c;
    tt_request stream;        /* what every call takes from the stream's request and response heads */
    bool response_head_seen;
    tt_grpc_parser *requests; /* the client's messages; NULL once that half ended */
    pending **open;           /* calls sent and not yet answered in full, oldest first */
    size_t n_open, cap_open;
};

static void request_message(void *ud, const tt_event_frame *ev);
static const tt_frame_callbacks request_cb = {.on_event = request_message};

tt_grpc_calls *tt_grpc_calls_new(conn_state *c, const tt_request *stream)
{
    tt_grpc_calls *g = calloc(1, sizeof *g);
    if (!g) abort();
    g->c = c;
    g->stream = *stream;
    g->requests = tt_grpc_new(&request_cb, g);
    if (!g->requests) abort();
    return g;
}

void tt_grpc_calls_free(tt_grpc_calls *g)
{
    if (!g) return;
    if (g->requests) tt_grpc_free(g->requests);
    free(g->open); /* the calls themselves stay in the connection's queue */
    free(g);
}

static void drop_open(tt_grpc_calls *g, size_t i)
{
    memmove(g->open + i, g->open + i + 1, (g->n_open - i - 1) * sizeof *g->open);
    g->n_open--;
}

/* The response head's fields, once both the head and the call exist. */
static void start_response(tt_grpc_calls *g, pending *p, uint64_t first_ns)
{
    if (p->response_started) return;
    p->response_started = true;
    tt_request *r = &p->req;
    r->status = g->stream.status;
    memcpy(r->content_type, g->stream.content_type, sizeof r->content_type);
    r->coding = g->stream.coding;
    r->framing = g->stream.framing;
    r->resp_first_ns = r->resp_headers_ns = first_ns;
}

/* A new call at the back of the connection's queue, its request fields
 * from the stream's. */
static pending *call_new(tt_grpc_calls *g)
{
    tt_conn_h2_make_room(g->c, g);
    pending *p = tt_conn_pending_new(g->c);
    tt_request *r = &p->req;
    const tt_request *s = &g->stream;
    memcpy(r->method, s->method, sizeof r->method);
    memcpy(r->path, s->path, sizeof r->path);
    memcpy(r->request_id, s->request_id, sizeof r->request_id);
    memcpy(r->correlation_id, s->correlation_id, sizeof r->correlation_id);
    r->stream_id = s->stream_id;
    r->dialect = s->dialect;
    g->open = tt_conn_grow(g->open, &g->cap_open, g->n_open + 1, sizeof *g->open);
    g->open[g->n_open++] = p;
    return p;
}

static void request_message(void *ud, const tt_event_frame *ev)
{
    tt_grpc_calls *g = ud;
    if (ev->flags & (TT_FRAME_UNTERMINATED | TT_FRAME_BAD_PREFIX)) return; /* no whole request */
    pending *p = call_new(g);
    tt_request *r = &p->req;
    r->req_first_ns = ev->first_ns;
    r->req_last_ns = ev->dispatch_ns;
    if (!(ev->flags & TT_FRAME_COMPRESSED)) {
        char id[sizeof r->request_id];
        tt_grpc_triton_request((const uint8_t *)ev->data, ev->data_len, id, sizeof id, r->fields.model,
                               sizeof r->fields.model);
        if (id[0]) memcpy(r->request_id, id, sizeof id);
    }
    p->request_done = true;
}

void tt_grpc_calls_request_data(tt_grpc_calls *g, const uint8_t *data, size_t len, uint64_t body_off,
                                uint64_t mono_ns)
{
    if (g->requests) tt_grpc_feed(g->requests, data, len, body_off, mono_ns);
}

void tt_grpc_calls_request_end(tt_grpc_calls *g, uint64_t mono_ns)
{
    if (!g->requests) return;
    tt_grpc_finish(g->requests, mono_ns);
    tt_grpc_free(g->requests);
    g->requests = NULL;
}

void tt_grpc_calls_response_head(tt_grpc_calls *g, const tt_request *head)
{
    g->response_head_seen = true;
    g->stream.status = head->status;
    memcpy(g->stream.content_type, head->content_type, sizeof g->stream.content_type);
    g->stream.coding = head->coding;
    g->stream.framing = head->framing;
}

/* The open call a response names (Triton echoes the request's id), else
 * the oldest; -1 when none is open. */
static long route(const tt_grpc_calls *g, const char *response_id)
{
    if (!g->n_open) return -1;
    if (response_id[0])
        for (size_t i = 0; i < g->n_open; i++)
            if (!strcmp(g->open[i]->req.request_id, response_id)) return (long)i;
    return 0;
}

static void file_call(tt_grpc_calls *g, size_t i)
{
    pending *p = g->open[i];
    drop_open(g, i);
    tt_conn_file_pending(g->c, p);
}

void tt_grpc_calls_response_event(tt_grpc_calls *g, const tt_event_frame *ev, uint64_t stream_off)
{
    tt_classified cl;
    memset(&cl, 0, sizeof cl);
    bool cut = ev->flags & TT_FRAME_UNTERMINATED;
    if (!cut) tt_conn_classify_event(g->c, &g->stream, NULL, ev, &cl);
    long i = route(g, cut ? "" : cl.response_id);
    if (i < 0) {
        /* an answer to no request seen (lost client bytes, or a capture
         * that began after it): a call of its own */
        pending *p = call_new(g);
        p->req.incomplete |= TT_INC_REQUEST_NOT_SEEN;
        p->request_done = true;
        if (!cut && cl.response_id[0])
            snprintf(p->req.request_id, sizeof p->req.request_id, "%s", cl.response_id);
        i = (long)g->n_open - 1;
    }
    pending *p = g->open[i];
    start_response(g, p, ev->first_ns);
    if (cut) {
        tt_conn_take_event(g->c, p, ev, stream_off);
        return;
    }
    tt_conn_record_event(g->c, p, ev, stream_off, &cl);
    if (cl.has & (TT_HAS_TERMINAL | TT_HAS_ERROR)) {
        p->req.resp_last_ns = ev->dispatch_ns;
        p->req.response_end = TT_HTTP_END_COMPLETE;
        p->response_done = true;
        file_call(g, (size_t)i);
    }
}

void tt_grpc_calls_trailers(tt_grpc_calls *g, int grpc_status, const char *grpc_message)
{
    for (size_t i = 0; i < g->n_open; i++) {
        tt_request *r = &g->open[i]->req;
        r->grpc_status = grpc_status;
        snprintf(r->grpc_message, sizeof r->grpc_message, "%s", grpc_message);
    }
}

void tt_grpc_calls_response_end(tt_grpc_calls *g, const tt_h2_stream_end *e)
{
    while (g->n_open) {
        pending *p = g->open[0];
        tt_request *r = &p->req;
        tt_conn_h2_end_reason(e, r);
        if (e->how == TT_H2_END_RST && !r->h2_reset_by) {
            r->h2_reset_by = e->by == TT_DIR_C2S ? 1 : 2;
            r->h2_reset_code = e->error_code;
        }
        if (!r->http_error[0])
            snprintf(r->http_error, sizeof r->http_error, "gRPC stream ended before the request's final response");
        if (e->how == TT_H2_END_GAP) r->incomplete |= TT_INC_GAP;
        if (e->how == TT_H2_END_ERROR) r->incomplete |= TT_INC_HTTP_ERROR;
        r->response_end = e->how == TT_H2_END_GAP     ? TT_HTTP_END_GAP
                          : e->how == TT_H2_END_ERROR ? TT_HTTP_END_ERROR
                                                      : TT_HTTP_END_TRUNCATED;
        if (p->response_started && r->n_events) r->resp_last_ns = r->events[r->n_events - 1].dispatch_ns;
        file_call(g, 0); /* filed cut, or without a response */
    }
}

bool tt_grpc_calls_evict_oldest(tt_grpc_calls *g)
{
    if (!g->n_open) return false;
    g->open[0]->req.incomplete |= TT_INC_EVICTED;
    g->c->t->evicted_requests++;
    file_call(g, 0);
    return true;
}

void tt_grpc_calls_evict_all(tt_grpc_calls *g)
{
    while (tt_grpc_calls_evict_oldest(g)) {
    }
}

void tt_grpc_calls_error(tt_grpc_calls *g, const char *why)
{
    for (size_t i = 0; i < g->n_open; i++) {
        tt_request *r = &g->open[i]->req;
        if (!r->http_error[0]) snprintf(r->http_error, sizeof r->http_error, "%s", why);
    }
}

bool tt_grpc_calls_wanted(const tt_request *stream)
{
    return stream->dialect == TT_DIALECT_TRITON_GRPC;
}
