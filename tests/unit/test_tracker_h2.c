/* The connection tracker on HTTP/2 with prior knowledge: an exchange of
 * four streams on one connection (header blocks from nghttp2's HPACK
 * deflater, frames built here), each written at an instant chosen here,
 * fed as whole writes, split in two at every byte of every write, and
 * byte by byte. Every stream must come out as one request with its
 * fields, status, framing, event counts and instants (an event's instant:
 * the write that completed the DATA frame completing it); a stream reset
 * mid-response comes out incomplete with the reason; an HTTP/1.1
 * connection whose first byte looks like the preface is still HTTP/1.1.
 * (The same exchange entered mid-connection: test_tracker_h2_mid.c.) */
#include "h2_exchange.h"
#include "request_find.h"

/* 0 when the tracker's requests are the exchange's; else a message. */
static const char *check_exchange(tt_tracker *t, void *ctx)
{
    (void)ctx;
    size_t n;
    const tt_request *rs = tt_tracker_requests(t, &n);
    if (n != 4) return "not 4 requests";
    static const struct {
        const char *id, *model, *path;
        uint64_t req_ns, resp_ns;
        uint32_t tokens;
        uint64_t first, last;
        tt_framing framing;
        uint32_t ordinal;
    } want[] = {
        {"r1", "m-r1", "/v1/chat/completions", 2 * MS, 10 * MS, 2, 20 * MS, 31 * MS, TT_FRAMING_SSE, 0},
        {"r3", "m-r3", "/v1/chat/completions", 4 * MS, 10 * MS, 2, 21 * MS, 31 * MS, TT_FRAMING_SSE, 1},
        {"r5", "m-r5", "/api/generate", 5 * MS, 22 * MS, 2, 23 * MS, 23 * MS, TT_FRAMING_NDJSON, 2},
        {"r7", "m-r7", "/v1/chat/completions", 6 * MS, 32 * MS, 1, 33 * MS, 33 * MS, TT_FRAMING_SSE, 3},
    };
    for (size_t i = 0; i < 4; i++) {
        const tt_request *r = tt_test_request_by_id(rs, n, want[i].id);
        if (!r) return "a request id missing";
        if (r != &rs[i]) return "not sorted by request start";
        if (strcmp(r->method, "POST") || strcmp(r->path, want[i].path)) return "method or path";
        if (strcmp(r->fields.model, want[i].model)) return "model from the request body";
        if (r->status != 200 || r->framing != want[i].framing) return "status or framing";
        if (r->ordinal != want[i].ordinal) return "ordinal";
        if (r->req_first_ns != want[i].req_ns || r->resp_first_ns != want[i].resp_ns) return "request/response instants";
        if (r->token_events != want[i].tokens) return "token event count";
        if (r->first_token_ns != want[i].first || r->last_token_ns != want[i].last) return "token instants";
        if (i < 3) {
            if (r->incomplete || !r->terminal_seen || r->http_error[0]) return "a whole stream filed incomplete";
            if (r->n_events != want[i].tokens + 1) return "event count";
        } else {
            if (!(r->incomplete & TT_INC_RESPONSE_CUT) || r->terminal_seen) return "reset stream not cut";
            if (!strstr(r->http_error, "RST_STREAM") || !strstr(r->http_error, "client")) return "reset reason";
            if (r->resp_last_ns != 33 * MS) return "reset stream's last response byte";
        }
    }
    const tt_request *r1 = tt_test_request_by_id(rs, n, "r1");
    if (r1->events[1].first_ns != 30 * MS || r1->events[1].dispatch_ns != 31 * MS) return "split event's instants";
    if (r1->resp_last_ns != 40 * MS || r1->req_last_ns != 2 * MS) return "r1 end instants";
    size_t nn;
    tt_tracker_notes(t, &nn);
    if (nn) return "a connection note";
    return NULL;
}

static void test_h2_streams_as_requests(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    char why[256];
    size_t runs = h2_script_each_feed(&s, 1, check_exchange, NULL, why, sizeof why);
    if (why[0]) fail_msg("%s", why);
    assert_true(runs > 500);
    h2_script_free(&s);
}

/* The client's bytes lost after its first write (stream 1's request): the
 * client direction is abandoned, the responses still stream. Stream 1 is
 * whole; streams 3, 5 and 7 come out request-not-seen with their events;
 * stream 7 (its RST lost) is cut at the end of the connection. */
static void test_h2_client_gap(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    h2_feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 8;
    bool lost = false;
    for (size_t i = 0; i < s.n; i++) {
        const h2_write *w = &s.w[i];
        if (w->dir == TT_DIR_C2S && w->ns > 2 * MS) {
            if (!lost) h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_GAP, NULL, 100, w->ns);
            f.off[TT_DIR_C2S] += 100;
            lost = true;
            continue;
        }
        h2_feed_chunk(&f, w->dir, TT_CHUNK_DATA, w->p, w->n, w->ns);
    }
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 50 * MS);
    h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 50 * MS);
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 51 * MS);
    tt_tracker_sort(f.t);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 4);
    assert_string_equal(r[0].request_id, "r1");
    assert_int_equal(r[0].incomplete, 0);
    assert_int_equal(r[0].token_events, 2);
    assert_int_equal(r[0].last_token_ns, 31 * MS);
    uint32_t tokens[] = {0, 2, 2, 1};
    for (size_t i = 1; i < 4; i++) {
        assert_true(r[i].incomplete & TT_INC_REQUEST_NOT_SEEN);
        assert_int_equal(r[i].status, 200);
        assert_int_equal(r[i].token_events, tokens[i]);
    }
    assert_true(r[3].incomplete & TT_INC_RESPONSE_CUT);
    assert_false(r[1].incomplete & TT_INC_RESPONSE_CUT);
    tt_tracker_free(f.t);
    h2_script_free(&s);
}

/* An HTTP/1.1 connection that starts "PRI" but is no preface, and one
 * whose response arrives before its request (midstream): HTTP/1.1 as before. */
static void test_h1_not_preface(void **state)
{
    (void)state;
    static const char req[] = "PRIX /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    h2_feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 9;
    for (size_t k = 0; k < sizeof req - 1; k++) h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_DATA, (const uint8_t *)req + k, 1, 100 + k);
    h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, (const uint8_t *)resp, sizeof resp - 1, 500);
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r->method, "PRIX");
    assert_int_equal(r->req_first_ns, 100);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->incomplete, 0);
    tt_tracker_free(f.t);

    /* released with only a preface prefix held: replayed to HTTP/1.1 (a
     * head never finished: no request, as before) */
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 10;
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_DATA, (const uint8_t *)"PRI * HTTP/2", 12, 100);
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
    tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 0);
    tt_tracker_free(f.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_streams_as_requests),
        cmocka_unit_test(test_h2_client_gap),
        cmocka_unit_test(test_h1_not_preface),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
