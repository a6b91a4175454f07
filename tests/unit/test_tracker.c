/* The connection tracker end to end, from hand-made chunks: HTTP/1.1 ->
 * SSE/NDJSON -> dialect -> request timeline. Instants are chosen per chunk,
 * so every expected instant is known without tokentap computing it. The
 * kernel's readable instants (READY marks) are test_tracker_ready.c's. */
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
#include "tracker_feeder.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_stream_instants),
        cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_keepalive_two_requests),
        cmocka_unit_test(test_chunked_crlf_usage_with_choices),
        cmocka_unit_test(test_gap_marks_incomplete),
        cmocka_unit_test(test_gap_costs_only_its_request),
        cmocka_unit_test(test_eviction_and_forget),
        cmocka_unit_test(test_in_flight_bounded),
        cmocka_unit_test(test_truncated_stream),
        cmocka_unit_test(test_request_body_cut_short),
        cmocka_unit_test(test_not_http),
        cmocka_unit_test(test_garbage_in_stream),
        cmocka_unit_test(test_orphan_response),
        cmocka_unit_test(test_ollama_ndjson),
        cmocka_unit_test(test_shared_and_split_chunks),
        cmocka_unit_test(test_http_chunks_in_one_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
