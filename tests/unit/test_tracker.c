/* The connection tracker end to end, from hand-made chunks: HTTP/1.1 ->
 * SSE/NDJSON -> dialect -> request timeline. Instants are chosen per chunk,
 * so every expected instant is known without tokentap computing it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "proto/event_frame.h"
#include "timeline/conn_tracker.h"
#include "timeline/ready_marks.h"
#include "request_find.h"

typedef struct feeder {
    tt_tracker *t;
    tt_conn_info conn;
    uint64_t off[2];
} feeder;

static void feeder_init(feeder *f, uint64_t conn_id)
{
    memset(f, 0, sizeof *f);
    f->t = tt_tracker_new(NULL);
    f->conn.conn_id = conn_id;
    f->conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f->conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
}

static void chunk(feeder *f, tt_direction dir, tt_chunk_kind kind, const char *data, size_t len, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = (const uint8_t *)data, .len = len};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA || kind == TT_CHUNK_GAP) f->off[dir] += len;
}

static void send_str(feeder *f, tt_direction dir, const char *s, uint64_t ns)
{
    chunk(f, dir, TT_CHUNK_DATA, s, strlen(s), ns);
}

static void finish(feeder *f, uint64_t ns)
{
    chunk(f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, ns);
    chunk(f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, ns);
    chunk(f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, ns);
    tt_tracker_sort(f->t);
}

#define CHAT_REQ_BODY "{\"model\":\"m\",\"stream\":true,\"max_tokens\":3,\"stream_options\":{\"include_usage\":true}}"

static char *chat_request(const char *id)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             id, strlen(CHAT_REQ_BODY), CHAT_REQ_BODY);
    return buf;
}

static const char *const chat_events[] = {
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"length\"}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
};
#define N_CHAT (sizeof chat_events / sizeof *chat_events)

static const char *resp_head_cl(size_t body_len)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %zu\r\n\r\n",
             body_len);
    return buf;
}

static size_t chat_body_len(void)
{
    size_t n = 0;
    for (size_t i = 0; i < N_CHAT; i++) n += strlen(chat_events[i]);
    return n;
}

static void test_chat_stream_instants(void **state)
{
    feeder f;
    feeder_init(&f, 1);
    send_str(&f, TT_DIR_C2S, chat_request("r-1"), 1000);
    send_str(&f, TT_DIR_S2C, resp_head_cl(chat_body_len()), 2000);
    for (size_t i = 0; i < N_CHAT; i++) send_str(&f, TT_DIR_S2C, chat_events[i], 3000 + 1000 * i);
    finish(&f, 10000);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(tt_request_complete(r));
    assert_string_equal(r->request_id, "r-1");
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->path, "/v1/chat/completions");
    assert_int_equal(r->status, 200);
    assert_int_equal(r->dialect, TT_DIALECT_OPENAI_CHAT);
    assert_int_equal(r->fields.max_tokens, 3);
    assert_int_equal(r->fields.include_usage, TT_TRUE);
    assert_int_equal(r->n_events, N_CHAT);
    assert_int_equal(r->token_events, 3);
    assert_int_equal(r->req_first_ns, 1000);
    assert_int_equal(r->resp_first_ns, 2000);
    assert_int_equal(r->first_event_ns, 3000);
    assert_int_equal(r->first_token_ns, 4000); /* the role chunk is not a token */
    assert_int_equal(r->last_token_ns, 6000);
    assert_int_equal(r->terminal_ns, 8000);
    assert_int_equal(r->usage_completion_tokens, 3);
    assert_int_equal(r->usage_prompt_tokens, 4);
    assert_true(r->terminal_seen);
    assert_string_equal(r->response_id, "c1");
    tt_req_metrics m;
    tt_req_metrics_compute(r, &m);
    assert_int_equal(m.ttft_ns, 3000);
    assert_int_equal(m.e2el_ns, 5000);
    assert_int_equal(m.n_itl, 2);
    tt_req_metrics_free(&m);
    tt_tracker_free(f.t);
}

/* Split the response body at every byte: each event's dispatch instant is
 * the instant of the chunk that carried its last byte. */
static void test_every_split_point(void **state)
{
    char body[4096] = "";
    size_t ends[N_CHAT], len = 0;
    for (size_t i = 0; i < N_CHAT; i++) {
        strcat(body, chat_events[i]);
        len += strlen(chat_events[i]);
        ends[i] = len; /* body offset just past event i */
    }
    for (size_t k = 1; k < len; k++) {
        feeder f;
        feeder_init(&f, 7);
        send_str(&f, TT_DIR_C2S, chat_request("s"), 100);
        send_str(&f, TT_DIR_S2C, resp_head_cl(len), 200);
        chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, body, k, 300);
        chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, body + k, len - k, 400);
        finish(&f, 500);
        size_t n;
        tt_request *r = tt_tracker_requests(f.t, &n);
        assert_int_equal(n, 1);
        assert_int_equal(r->n_events, N_CHAT);
        for (size_t i = 0; i < N_CHAT; i++) {
            uint64_t want = ends[i] <= k ? 300 : 400;
            if (r->events[i].dispatch_ns != want) fail_msg("split %zu event %zu: dispatch %lu want %lu", k, i,
                                                           (unsigned long)r->events[i].dispatch_ns,
                                                           (unsigned long)want);
            assert_int_equal(r->events[i].dispatch_off, ends[i]);
        }
        assert_true(tt_request_complete(r));
        assert_int_equal(r->token_events, 3);
        tt_tracker_free(f.t);
    }
}

static void test_keepalive_two_requests(void **state)
{
    feeder f;
    feeder_init(&f, 2);
    for (int round = 0; round < 2; round++) {
        uint64_t t0 = 100000 * (uint64_t)(round + 1);
        send_str(&f, TT_DIR_C2S, chat_request(round ? "second" : "first"), t0);
        send_str(&f, TT_DIR_S2C, resp_head_cl(chat_body_len()), t0 + 10);
        for (size_t i = 0; i < N_CHAT; i++) send_str(&f, TT_DIR_S2C, chat_events[i], t0 + 100 + 10 * i);
    }
    finish(&f, 900000);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].request_id, "first");
    assert_string_equal(r[1].request_id, "second");
    assert_int_equal(r[0].ordinal, 0);
    assert_int_equal(r[1].ordinal, 1);
    assert_int_equal(r[1].first_token_ns, 200000 + 110);
    assert_true(tt_request_complete(&r[0]) && tt_request_complete(&r[1]));
    tt_tracker_free(f.t);
}

static void test_chunked_crlf_usage_with_choices(void **state)
{
    /* TabbyAPI-style: CRLF separators, usage inside a frame with one choice */
    const char *events[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
        "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    };
    feeder f;
    feeder_init(&f, 3);
    send_str(&f, TT_DIR_C2S, chat_request("tabby"), 10);
    send_str(&f, TT_DIR_S2C, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                             "transfer-encoding: chunked\r\n\r\n", 20);
    for (size_t i = 0; i < 4; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%zx\r\n%s\r\n", strlen(events[i]), events[i]);
        send_str(&f, TT_DIR_S2C, buf, 30 + 10 * i);
    }
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 80);
    finish(&f, 90);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(tt_request_complete(r));
    assert_int_equal(r->token_events, 2);
    assert_int_equal(r->usage_completion_tokens, 2);
    assert_int_equal(r->reasoning_bytes, 5);
    assert_int_equal(r->first_token_ns, 30);
    assert_int_equal(r->terminal_ns, 60);
    assert_int_equal(r->events[0].terminators, TT_TERM_CRLF);
    tt_tracker_free(f.t);
}

static void test_gap_marks_incomplete(void **state)
{
    feeder f;
    feeder_init(&f, 4);
    send_str(&f, TT_DIR_C2S, chat_request("gap"), 10);
    send_str(&f, TT_DIR_S2C, resp_head_cl(chat_body_len()), 20);
    send_str(&f, TT_DIR_S2C, chat_events[0], 30);
    send_str(&f, TT_DIR_S2C, chat_events[1], 40);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_GAP, NULL, strlen(chat_events[2]), 50);
    for (size_t i = 3; i < N_CHAT; i++) send_str(&f, TT_DIR_S2C, chat_events[i], 60 + i);
    finish(&f, 100);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_false(tt_request_complete(r));
    assert_true(r->incomplete & TT_INC_GAP);
    assert_int_equal(r->gap_bytes, strlen(chat_events[2]));
    tt_req_metrics m;
    tt_req_metrics_compute(r, &m);
    assert_true(m.has_ttft); /* first token came before the gap */
    assert_false(m.has_e2el);
    tt_req_metrics_free(&m);
    tt_tracker_free(f.t);
}

/* What a keep-alive round loses to a capture gap. */
enum round_loss { LOSE_NOTHING, LOSE_BODY_CHUNK, LOSE_REQUEST, LOSE_RESPONSE };

/* One request and its chunked SSE response at t0.., each event its own
 * HTTP chunk at t0 + 100 + 10 i; what `loss` names becomes a GAP chunk. */
static void keepalive_round(feeder *f, const char *id, uint64_t t0, enum round_loss loss)
{
    const char *req = chat_request(id);
    if (loss == LOSE_REQUEST) chunk(f, TT_DIR_C2S, TT_CHUNK_GAP, NULL, strlen(req), t0);
    else send_str(f, TT_DIR_C2S, req, t0);
    static const char head[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    size_t lost = 0;
    if (loss == LOSE_RESPONSE) lost += strlen(head);
    else send_str(f, TT_DIR_S2C, head, t0 + 10);
    for (size_t i = 0; i < N_CHAT; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%zx\r\n%s\r\n", strlen(chat_events[i]), chat_events[i]);
        if (loss == LOSE_RESPONSE || (loss == LOSE_BODY_CHUNK && i == 2)) {
            if (loss == LOSE_BODY_CHUNK) chunk(f, TT_DIR_S2C, TT_CHUNK_GAP, NULL, strlen(buf), t0 + 100 + 10 * i);
            else lost += strlen(buf);
            continue;
        }
        send_str(f, TT_DIR_S2C, buf, t0 + 100 + 10 * i);
    }
    if (loss == LOSE_RESPONSE) chunk(f, TT_DIR_S2C, TT_CHUNK_GAP, NULL, lost + 5, t0 + 200);
    else send_str(f, TT_DIR_S2C, "0\r\n\r\n", t0 + 200);
}

/* A gap costs only the request it falls in: the parser resynchronises at the
 * next message and responses are paired by their instants after a loss, so
 * a wholly lost request or response never shifts the pairs after it. */
static void test_gap_costs_only_its_request(void **state)
{
    static const struct { const char *id; enum round_loss loss; } rounds[] = {
        {"k1", LOSE_NOTHING}, {"k2", LOSE_BODY_CHUNK}, {"k3", LOSE_NOTHING}, {"k4", LOSE_REQUEST},
        {"k5", LOSE_NOTHING}, {"k6", LOSE_RESPONSE},   {"k7", LOSE_NOTHING},
    };
    feeder f;
    feeder_init(&f, 40);
    for (size_t k = 0; k < sizeof rounds / sizeof rounds[0]; k++)
        keepalive_round(&f, rounds[k].id, 1000 * (k + 1), rounds[k].loss);
    finish(&f, 99000);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 7); /* six requests seen, and the response of the lost one */
    for (size_t k = 0; k < sizeof rounds / sizeof rounds[0]; k++) {
        const tt_request *q = tt_test_request_by_id(r, n, rounds[k].id);
        uint64_t t0 = 1000 * (k + 1);
        if (rounds[k].loss == LOSE_REQUEST) {
            assert_null(q);
            continue;
        }
        assert_non_null(q);
        assert_int_equal(q->req_first_ns, t0);
        if (rounds[k].loss == LOSE_NOTHING) {
            assert_true(tt_request_complete(q));
            assert_int_equal(q->token_events, 3);
            assert_int_equal(q->first_token_ns, t0 + 110);
            assert_int_equal(q->terminal_ns, t0 + 150);
        } else if (rounds[k].loss == LOSE_BODY_CHUNK) {
            assert_true(q->incomplete & TT_INC_GAP);
            assert_true(q->incomplete & TT_INC_RESPONSE_CUT);
            assert_int_equal(q->first_token_ns, t0 + 110);
        } else {
            assert_true(q->incomplete & TT_INC_NO_RESPONSE);
            assert_true(q->incomplete & TT_INC_GAP);
        }
    }
    const tt_request *orphan = NULL;
    for (size_t i = 0; i < n; i++)
        if (r[i].incomplete & TT_INC_REQUEST_NOT_SEEN) orphan = &r[i];
    assert_non_null(orphan);
    assert_true(orphan->incomplete & TT_INC_GAP);
    assert_int_equal(orphan->resp_first_ns, 4000 + 10);
    assert_int_equal(orphan->first_token_ns, 4000 + 110);
    tt_tracker_free(f.t);
}

/* max_connections: opening a third connection evicts the least recently
 * active one; what it had begun is filed incomplete (evicted); its later
 * bytes are picked up again at the next request. forget lets go of filed
 * requests. */
static void test_eviction_and_forget(void **state)
{
    tt_tracker_options opt = {.max_connections = 2};
    feeder f[3];
    for (int i = 0; i < 3; i++) {
        feeder_init(&f[i], 100 + (uint64_t)i);
        tt_tracker_free(f[i].t);
        f[i].t = NULL;
    }
    tt_tracker *t = tt_tracker_new(&opt);
    for (int i = 0; i < 3; i++) f[i].t = t;
    send_str(&f[0], TT_DIR_C2S, chat_request("a1"), 10); /* a: least recently active after b's chunk */
    send_str(&f[1], TT_DIR_C2S, chat_request("b1"), 20);
    send_str(&f[1], TT_DIR_S2C, resp_head_cl(chat_body_len()), 30);
    tt_tracker_stats st;
    tt_tracker_stats_get(t, &st);
    assert_int_equal(st.live_connections, 2);
    assert_int_equal(st.in_flight, 2);
    send_str(&f[2], TT_DIR_C2S, chat_request("c1"), 40); /* evicts a */
    tt_tracker_stats_get(t, &st);
    assert_int_equal(st.live_connections, 2);
    assert_int_equal(st.evicted_connections, 1);
    assert_int_equal(st.evicted_requests, 1);
    size_t n;
    tt_request *r = tt_tracker_requests(t, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].request_id, "a1");
    assert_true(r[0].incomplete & TT_INC_EVICTED);
    /* a's response to a1 arrives after the eviction (its head is lost with
     * the state), then a2 on the same connection: a2 is measured */
    for (size_t i = 0; i < N_CHAT; i++) send_str(&f[0], TT_DIR_S2C, chat_events[i], 50 + i);
    send_str(&f[0], TT_DIR_C2S, chat_request("a2"), 1000);
    send_str(&f[0], TT_DIR_S2C, resp_head_cl(chat_body_len()), 1010);
    for (size_t i = 0; i < N_CHAT; i++) send_str(&f[0], TT_DIR_S2C, chat_events[i], 1100 + 10 * i);
    r = tt_tracker_requests(t, &n);
    const tt_request *a2 = tt_test_request_by_id(r, n, "a2");
    assert_non_null(a2);
    assert_true(tt_request_complete(a2));
    assert_int_equal(a2->first_token_ns, 1110);
    tt_tracker_stats_get(t, &st);
    assert_int_equal(st.evicted_connections, 2); /* reopening a evicted b, the least recent then */
    size_t before = n;
    tt_tracker_forget(t, 1);
    r = tt_tracker_requests(t, &n);
    assert_int_equal(n, before - 1);
    assert_non_null(tt_test_request_by_id(r, n, "a2"));
    assert_null(tt_test_request_by_id(r, n, "a1"));
    tt_tracker_stats_get(t, &st);
    assert_int_equal(st.forgotten, 1);
    tt_tracker_free(t);
    /* a tracker that never filed a request has nothing to let go */
    tt_tracker *empty = tt_tracker_new(NULL);
    tt_tracker_forget(empty, 0);
    tt_tracker_forget(empty, 3);
    tt_tracker_stats_get(empty, &st);
    assert_int_equal(st.forgotten, 0);
    tt_tracker_free(empty);
}

/* A client that pipelines without end (no response ever seen): at most
 * TT_TRACKER_MAX_IN_FLIGHT requests wait; older ones are filed, evicted. */
static void test_in_flight_bounded(void **state)
{
    feeder f;
    feeder_init(&f, 200);
    size_t sent = TT_TRACKER_MAX_IN_FLIGHT + 6;
    for (size_t i = 0; i < sent; i++) send_str(&f, TT_DIR_C2S, chat_request("p"), 10 + i);
    tt_tracker_stats st;
    tt_tracker_stats_get(f.t, &st);
    assert_int_equal(st.in_flight, TT_TRACKER_MAX_IN_FLIGHT);
    assert_int_equal(st.evicted_requests, 6);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_true(r[i].incomplete & TT_INC_EVICTED);
        assert_int_equal(r[i].req_first_ns, 10 + i); /* the oldest went first */
    }
    finish(&f, 99999);
    tt_tracker_free(f.t);
}

static void test_truncated_stream(void **state)
{
    feeder f;
    feeder_init(&f, 5);
    send_str(&f, TT_DIR_C2S, chat_request("cut"), 10);
    send_str(&f, TT_DIR_S2C, resp_head_cl(chat_body_len()), 20);
    send_str(&f, TT_DIR_S2C, chat_events[0], 30);
    send_str(&f, TT_DIR_S2C, chat_events[1], 40);
    send_str(&f, TT_DIR_S2C, "data: {\"choices\":[{\"ind", 50); /* cut mid-event */
    chunk(&f, TT_DIR_S2C, TT_CHUNK_RST, NULL, 0, 60);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RST, NULL, 0, 60);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 60);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_false(tt_request_complete(r));
    assert_true(r->incomplete & TT_INC_RESPONSE_CUT);
    assert_int_equal(r->token_events, 1);
    assert_false(r->terminal_seen);
    tt_tracker_free(f.t);
}

static void test_request_body_cut_short(void **state)
{
    feeder f;
    feeder_init(&f, 6);
    const char *head = "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"model\":\"m\",\"max_tok";
    send_str(&f, TT_DIR_C2S, head, 10);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 20);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 20);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 20);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_false(tt_request_complete(r));
    assert_true(r->incomplete & TT_INC_REQUEST_CUT);
    assert_true(r->incomplete & TT_INC_NO_RESPONSE);
    assert_int_equal(r->fields.max_tokens, -1);
    tt_tracker_free(f.t);
}

static void test_not_http(void **state)
{
    feeder f;
    feeder_init(&f, 8);
    send_str(&f, TT_DIR_C2S, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 10);
    send_str(&f, TT_DIR_S2C, "\x16\x03\x03\x00\x7a\x02", 20);
    finish(&f, 30);
    size_t n, nn;
    tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 0);
    const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
    assert_true(nn >= 1);
    assert_non_null(strstr(notes[0].reason, "TLS"));
    tt_tracker_free(f.t);
}

static void test_garbage_in_stream(void **state)
{
    feeder f;
    feeder_init(&f, 9);
    const char *body = "data: {not json at all\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
                       "\x01\x02garbage\xff\n\ndata: [DONE]\n\n";
    send_str(&f, TT_DIR_C2S, chat_request("garbage"), 10);
    send_str(&f, TT_DIR_S2C, resp_head_cl(strlen(body)), 20);
    send_str(&f, TT_DIR_S2C, body, 30);
    finish(&f, 40);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(tt_request_complete(r));
    assert_int_equal(r->token_events, 1);
    assert_int_equal(r->kind_counts[TT_EV_OTHER], 1);
    assert_true(r->terminal_seen);
    tt_tracker_free(f.t);
}

static void test_orphan_response(void **state)
{
    /* the capture starts after the request went out */
    feeder f;
    feeder_init(&f, 10);
    send_str(&f, TT_DIR_S2C, resp_head_cl(chat_body_len()), 20);
    for (size_t i = 0; i < N_CHAT; i++) send_str(&f, TT_DIR_S2C, chat_events[i], 30 + i);
    finish(&f, 100);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(r->incomplete & TT_INC_REQUEST_NOT_SEEN);
    assert_int_equal(r->dialect, TT_DIALECT_OPENAI_CHAT); /* learnt from the events */
    tt_req_metrics m;
    tt_req_metrics_compute(r, &m);
    assert_false(m.has_ttft);
    tt_tracker_free(f.t);
}

static void test_ollama_ndjson(void **state)
{
    const char *lines = "{\"model\":\"l\",\"response\":\"He\",\"done\":false}\n"
                        "{\"model\":\"l\",\"response\":\"y\",\"done\":false}\n"
                        "{\"model\":\"l\",\"response\":\"\",\"done\":true,\"done_reason\":\"stop\",\"eval_count\":2}\n";
    feeder f;
    feeder_init(&f, 11);
    send_str(&f, TT_DIR_C2S, "POST /api/generate HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 10);
    char head[256];
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %zu\r\n\r\n",
             strlen(lines));
    send_str(&f, TT_DIR_S2C, head, 20);
    send_str(&f, TT_DIR_S2C, lines, 30);
    finish(&f, 40);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->framing, TT_FRAMING_NDJSON);
    assert_int_equal(r->dialect, TT_DIALECT_OLLAMA);
    assert_int_equal(r->token_events, 2);
    assert_int_equal(r->usage_completion_tokens, 2);
    assert_true(r->terminal_seen);
    assert_true(tt_request_complete(r));
    tt_tracker_free(f.t);
}

/* Several events in one chunk share it; an event split over chunks counts them. */
static void test_shared_and_split_chunks(void **state)
{
    feeder f;
    feeder_init(&f, 12);
    char body[4096] = "";
    for (size_t i = 0; i < N_CHAT; i++) strcat(body, chat_events[i]);
    size_t len = strlen(body), first = strlen(chat_events[0]) + strlen(chat_events[1]) + strlen(chat_events[2]);
    send_str(&f, TT_DIR_C2S, chat_request("shared"), 10);
    send_str(&f, TT_DIR_S2C, resp_head_cl(len), 20);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, body, first, 30);               /* events 0,1,2 whole */
    chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, body + first, 10, 40);          /* event 3 begins */
    chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, body + first + 10, len - first - 10, 50); /* 3 ends, 4, 5 */
    finish(&f, 60);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->n_events, N_CHAT);
    assert_int_equal(r->events[0].shared_chunk, 2);
    assert_int_equal(r->events[2].shared_chunk, 2);
    assert_int_equal(r->events[3].last_chunk - r->events[3].first_chunk + 1, 2);
    assert_int_equal(r->events[3].shared_chunk, 2); /* events 4 and 5 share its second chunk */
    assert_int_equal(r->events[4].shared_chunk, 2);
    assert_int_equal(r->events[3].dispatch_ns, 50);
    assert_int_equal(r->events[3].first_ns, 40);
    tt_tracker_free(f.t);
}

/* Three HTTP chunks in one segment are one source chunk: the events share it. */
static void test_http_chunks_in_one_segment(void **state)
{
    feeder f;
    feeder_init(&f, 13);
    send_str(&f, TT_DIR_C2S, chat_request("coalesced"), 10);
    send_str(&f, TT_DIR_S2C, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n", 20);
    char seg[4096] = "";
    for (size_t i = 1; i <= 3; i++) {
        char piece[512];
        snprintf(piece, sizeof piece, "%zx\r\n%s\r\n", strlen(chat_events[i]), chat_events[i]);
        strcat(seg, piece);
    }
    send_str(&f, TT_DIR_S2C, seg, 30);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40);
    finish(&f, 50);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->n_events, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(r->events[i].shared_chunk, 2);
        assert_int_equal(r->events[i].last_chunk - r->events[i].first_chunk + 1, 1);
        assert_int_equal(r->events[i].dispatch_ns, 30);
    }
    assert_true(tt_request_complete(r));
    tt_tracker_free(f.t);
}

static void ready(feeder *f, tt_direction dir, uint64_t from, uint64_t end, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_CLIENT, .dir = dir, .kind = TT_CHUNK_READY,
                  .mono_ns = ns, .offset = from, .len = end - from};
    tt_tracker_chunk(f->t, &c);
}

/* READY marks give each event the instant its last byte became readable,
 * byte by byte through the chunked framing, though one read delivered all
 * three; a byte no mark starts at or before is unknown, not the next mark's;
 * marks that come after their bytes were parsed still land. */
static void test_ready_instants(void **state)
{
    feeder f;
    feeder_init(&f, 14);
    const char *req = chat_request("ready");
    ready(&f, TT_DIR_C2S, 0, strlen(req), 5);
    send_str(&f, TT_DIR_C2S, req, 10);
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char piece[3][512], seg[4096] = "";
    size_t at[4];
    at[0] = strlen(head);
    for (size_t i = 0; i < 3; i++) {
        snprintf(piece[i], sizeof piece[i], "%zx\r\n%s\r\n", strlen(chat_events[i + 1]), chat_events[i + 1]);
        strcat(seg, piece[i]);
        at[i + 1] = at[i] + strlen(piece[i]);
    }
    ready(&f, TT_DIR_S2C, 0, at[1], 22);               /* the head and the first event */
    ready(&f, TT_DIR_S2C, at[1], at[2], 25);           /* the second */
    ready(&f, TT_DIR_S2C, at[3] - 2, at[3] + 5, 28);   /* the third's bytes never marked */
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40);
    finish(&f, 50);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->n_events, 3);
    assert_int_equal(r->req_ready_ns, 5);
    assert_int_equal(r->events[0].ready_ns, 22);
    assert_int_equal(r->events[1].ready_ns, 25);
    assert_true(r->events[2].ready_ns == TT_NS_NONE);
    for (uint32_t i = 0; i < 3; i++) assert_int_equal(r->events[i].dispatch_ns, 30);
    assert_int_equal(r->first_token_ready_ns, 22);
    assert_true(r->last_token_ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);

    /* the same marks arriving late, after the bytes were parsed (another
     * ring polled later): they still land, on the filed request too */
    feeder_init(&f, 16);
    send_str(&f, TT_DIR_C2S, req, 10);
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    ready(&f, TT_DIR_C2S, 0, strlen(req), 5);
    ready(&f, TT_DIR_S2C, 0, at[1], 22);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40); /* the request is filed here */
    ready(&f, TT_DIR_S2C, at[1], at[2], 25);
    ready(&f, TT_DIR_S2C, at[3] - 2, at[3] + 5, 28);
    finish(&f, 50);
    r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->req_ready_ns, 5);
    assert_int_equal(r->events[0].ready_ns, 22);
    assert_int_equal(r->events[1].ready_ns, 25);
    assert_true(r->events[2].ready_ns == TT_NS_NONE);
    assert_int_equal(r->first_token_ready_ns, 22);
    assert_true(r->last_token_ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);

    /* no marks at all (the wire, the probe): every ready instant unknown */
    feeder_init(&f, 15);
    send_str(&f, TT_DIR_C2S, chat_request("none"), 10);
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40);
    finish(&f, 50);
    r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(r->req_ready_ns == TT_NS_NONE && r->first_token_ready_ns == TT_NS_NONE);
    for (uint32_t i = 0; i < r->n_events; i++) assert_true(r->events[i].ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);
}

/* The filed request of a connection with the given id, or NULL. */
static const tt_request *filed_with_id(tt_tracker *t, const char *id)
{
    size_t n;
    const tt_request *r = tt_tracker_requests(t, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].request_id, id)) return &r[i];
    return NULL;
}

/* A late mark (its bytes parsed, its request filed) finds the request on
 * its own connection however many requests other connections filed since:
 * each connection links its filed requests (conn_state.last_filed), where
 * the tracker's newest 1024 of any connection would have missed it; the
 * links follow the requests when they are sorted (an interval's report),
 * so a request filed before the sort is still found behind those its
 * connection filed after. */
static void test_late_mark_behind_other_connections(void **state)
{
    feeder a, b;
    feeder_init(&a, 31);
    feeder_init(&b, 32);
    tt_tracker_free(b.t);
    b.t = a.t;
    b.conn.client.port = 40001;
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char piece[512];
    snprintf(piece, sizeof piece, "%zx\r\n%s\r\n", strlen(chat_events[1]), chat_events[1]);
    send_str(&a, TT_DIR_C2S, chat_request("a-1"), 10);
    send_str(&a, TT_DIR_S2C, head, 20);
    send_str(&a, TT_DIR_S2C, piece, 30);
    send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 40); /* a-1 filed; the connection stays open */
    char id[32];
    for (int i = 0; i < 1100; i++) {
        snprintf(id, sizeof id, "b-%d", i);
        send_str(&b, TT_DIR_C2S, chat_request(id), 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, head, 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, piece, 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, "0\r\n\r\n", 50 + (uint64_t)i);
    }
    size_t n;
    tt_tracker_requests(a.t, &n);
    assert_int_equal(n, 1101);
    uint64_t event_end = strlen(head) + strlen(piece) - 2; /* the event's last byte, before the chunk's CRLF */
    ready(&a, TT_DIR_S2C, strlen(head), event_end, 35);
    const tt_request *r = filed_with_id(a.t, "a-1");
    assert_non_null(r);
    assert_int_equal(r->n_events, 1);
    assert_int_equal(r->events[0].ready_ns, 35);
    assert_int_equal(r->first_token_ready_ns, 35);
    /* sorted: each connection's links moved with its requests */
    tt_tracker_sort(a.t);
    uint64_t b_last = b.off[TT_DIR_S2C] - strlen("0\r\n\r\n") - strlen(piece);
    ready(&b, TT_DIR_S2C, b_last, b_last + strlen(piece) - 2, 2000);
    r = filed_with_id(a.t, "b-1099");
    assert_non_null(r);
    assert_int_equal(r->events[0].ready_ns, 2000);
    /* a-1, filed before the sort, still behind the requests its connection
     * filed after it: a late mark on its request's bytes finds it */
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "a-after-%d", i);
        send_str(&a, TT_DIR_C2S, chat_request(id), 2100);
        send_str(&a, TT_DIR_S2C, head, 2100);
        send_str(&a, TT_DIR_S2C, piece, 2100);
        send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 2100);
    }
    ready(&a, TT_DIR_C2S, 0, strlen(chat_request("a-1")), 5);
    r = filed_with_id(a.t, "a-1");
    assert_non_null(r);
    assert_int_equal(r->req_ready_ns, 5);
    /* and B's next request links its own */
    send_str(&b, TT_DIR_C2S, chat_request("b-next"), 3000);
    send_str(&b, TT_DIR_S2C, head, 3000);
    send_str(&b, TT_DIR_S2C, piece, 3000);
    send_str(&b, TT_DIR_S2C, "0\r\n\r\n", 3000);
    for (int i = 0; i < 1100; i++) { /* a-1's connection files many more */
        snprintf(id, sizeof id, "a-more-%d", i);
        send_str(&a, TT_DIR_C2S, chat_request(id), 3100);
        send_str(&a, TT_DIR_S2C, head, 3100);
        send_str(&a, TT_DIR_S2C, piece, 3100);
        send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 3100);
    }
    b_last = b.off[TT_DIR_S2C] - strlen("0\r\n\r\n") - strlen(piece);
    ready(&b, TT_DIR_S2C, b_last, b_last + strlen(piece) - 2, 4000);
    r = filed_with_id(a.t, "b-next");
    assert_non_null(r);
    assert_int_equal(r->events[0].ready_ns, 4000);
    tt_tracker_free(a.t);
}

/* The marks' bound: past it the oldest go, and their bytes become unknown
 * (never the instant of a later mark); asked in order, older marks are
 * forgotten. */
static void test_ready_marks_bound(void **state)
{
    tt_ready_marks m = {0};
    for (uint64_t k = 0; k < TT_READY_MARKS_MAX + 10; k++) tt_ready_marks_add(&m, k * 10, k * 10 + 10, 1000 + k);
    tt_ready_marks_add(&m, 99999, 99999, 1); /* empty: ignored */
    assert_int_equal(m.dropped, 10);
    assert_true(tt_ready_marks_at(&m, 5) == UINT64_MAX);   /* its mark was dropped */
    assert_true(tt_ready_marks_at(&m, 105) == 1010);        /* the first kept */
    assert_true(tt_ready_marks_at(&m, 109) == 1010);
    assert_true(tt_ready_marks_at(&m, 110) == 1011);
    assert_true(tt_ready_marks_at(&m, 100000) == UINT64_MAX); /* past every mark */
    assert_int_equal(m.n, 0);
    tt_ready_marks_free(&m);
}

/* Late marks on a long stream, one per event as the TLS vantage sends
 * them: every event gets its own instant, and the request's first and
 * last token ready instants are those of its first and last TOKEN events
 * (a ROLE before them, a FINISH and a TERMINAL after, none without
 * tokens). The bench's TLS flood (tests/bench/tls.sh) is what shows that
 * a mark costs the events near the ends, not the whole stream. */
static void test_late_marks_long_stream(void **state)
{
    enum { N = 20000 };
    tt_request r = {0};
    r.events = calloc(N, sizeof *r.events);
    r.n_events = N;
    r.first_token_ready_ns = r.last_token_ready_ns = TT_NS_NONE;
    for (uint32_t i = 0; i < N; i++) {
        r.events[i].kind = i == 0 ? TT_EV_ROLE : i == N - 2 ? TT_EV_FINISH : i == N - 1 ? TT_EV_TERMINAL : TT_EV_TOKEN;
        r.events[i].dispatch_stream_off = 100 * (uint64_t)i + 99;
        r.events[i].ready_ns = TT_NS_NONE;
    }
    r.token_events = N - 3;
    for (uint32_t i = 0; i < N; i++) {
        tt_request_ready_fill_late(&r, TT_DIR_S2C, 100 * (uint64_t)i, 100 * (uint64_t)i + 100, 5000 + i);
        assert_int_equal(r.events[i].ready_ns, 5000 + i);
        assert_int_equal(r.first_token_ready_ns, i >= 1 ? 5001 : TT_NS_NONE);
        assert_int_equal(r.last_token_ready_ns, i >= N - 3 ? 5000 + N - 3 : TT_NS_NONE); /* its last TOKEN's */
    }
    /* a mark again on marked bytes changes nothing */
    tt_request_ready_fill_late(&r, TT_DIR_S2C, 0, 100 * (uint64_t)N, 1);
    assert_int_equal(r.events[7].ready_ns, 5007);
    /* no token events: no token ready instants */
    for (uint32_t i = 0; i < N; i++) r.events[i].kind = TT_EV_ROLE, r.events[i].ready_ns = TT_NS_NONE;
    r.token_events = 0;
    tt_request_ready_fill_late(&r, TT_DIR_S2C, 0, 100, 9);
    assert_int_equal(r.events[0].ready_ns, 9);
    assert_true(r.first_token_ready_ns == TT_NS_NONE && r.last_token_ready_ns == TT_NS_NONE);
    free(r.events);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_marks_bound),
        cmocka_unit_test(test_late_marks_long_stream),
        cmocka_unit_test(test_late_mark_behind_other_connections),
        cmocka_unit_test(test_ready_instants),
        cmocka_unit_test(test_chat_stream_instants),  cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_keepalive_two_requests), cmocka_unit_test(test_chunked_crlf_usage_with_choices),
        cmocka_unit_test(test_gap_marks_incomplete), cmocka_unit_test(test_gap_costs_only_its_request), cmocka_unit_test(test_eviction_and_forget), cmocka_unit_test(test_in_flight_bounded),   cmocka_unit_test(test_truncated_stream),
        cmocka_unit_test(test_request_body_cut_short), cmocka_unit_test(test_not_http),
        cmocka_unit_test(test_garbage_in_stream),      cmocka_unit_test(test_orphan_response),
        cmocka_unit_test(test_ollama_ndjson),          cmocka_unit_test(test_shared_and_split_chunks),
        cmocka_unit_test(test_http_chunks_in_one_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
