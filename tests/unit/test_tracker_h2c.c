/* The connection tracker on h2c upgraded from HTTP/1.1 (RFC 7540 3.2):
 * a POST asking Upgrade: h2c, the server's 101 with its SETTINGS and
 * stream 1's response HEADERS in the same write, then stream 1's events
 * over HTTP/2 and a second request on stream 3. Three orders of the same
 * exchange: as on the wire; the client's preface seen before the 101 (a
 * capture whose order is not the wire's); the 101 before the request's
 * body, whose last write also carries the preface. Each is fed as whole
 * writes, split in two at every byte of every write, and byte by byte:
 * the upgrade request must come out as one request (its fields from the
 * HTTP/1.1 request, its response and events from stream 1) and stream 3
 * as another, with their instants; no note (also when the capture began
 * later in the connection). A request asking h2c that
 * the server answers over HTTP/1.1 stays HTTP/1.1, as does the next. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "h2_script.h"
#include "proto/http2.h"
#include "timeline/conn_tracker.h"

/* ---- the exchange ---- */

#define MS 1000000ull
#define BODY "{\"model\":\"m-u1\",\"stream\":true,\"max_tokens\":2}"
#define UPGRADE_HEAD                                                                                          \
    "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:8000\r\nConnection: Upgrade, HTTP2-Settings\r\n" \
    "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nx-request-id: u1\r\n"                      \
    "Content-Type: application/json\r\nContent-Length: 45\r\n\r\n"
#define SWITCH "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"

static const char *const RESP_SSE[] = {":status", "200", "content-type", "text/event-stream", NULL};

static const char *tok(const char *word)
{
    static char buf[8][160];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 160, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", word);
    return b;
}

enum order { WIRE, PREFACE_FIRST, SWITCH_BEFORE_BODY };

static void preface(h2_write *w)
{
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_frame(w, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
}

static void switch_101(h2_script *s, h2_write *w)
{
    h2_put(w, SWITCH, strlen(SWITCH));
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_headers(s, w, 1, 0, RESP_SSE);
}

/* The request's first byte at 1 ms; the 101 (with the server's SETTINGS
 * and stream 1's HEADERS) at 2 ms; the preface at 3 ms (PREFACE_FIRST: seen
 * at 1.5 ms, before the 101); SWITCH_BEFORE_BODY: the body and the preface
 * in one write at 3 ms. Then stream 1's tokens at 10 and 20 ms, stream 3's
 * request at 11 ms and its token at 12 ms. */
static size_t build(h2_script *s, enum order o)
{
    h2_script_init(s);
    assert_int_equal(strlen(BODY), 45);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, 1 * MS);
    h2_put(w, UPGRADE_HEAD, strlen(UPGRADE_HEAD));
    if (o == SWITCH_BEFORE_BODY) {
        switch_101(s, h2_write_at(s, TT_DIR_S2C, 2 * MS));
        w = h2_write_at(s, TT_DIR_C2S, 3 * MS);
        h2_put(w, BODY, strlen(BODY));
        preface(w);
    } else {
        h2_put(w, BODY, strlen(BODY));
        if (o == PREFACE_FIRST) preface(h2_write_at(s, TT_DIR_C2S, 3 * MS / 2));
        switch_101(s, h2_write_at(s, TT_DIR_S2C, 2 * MS));
        if (o == WIRE) preface(h2_write_at(s, TT_DIR_C2S, 3 * MS));
    }
    h2_frame(h2_write_at(s, TT_DIR_S2C, 4 * MS), TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
    h2_data(h2_write_at(s, TT_DIR_S2C, 10 * MS), 1, 0, tok("a"));
    size_t c2s_before = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->w[i].dir == TT_DIR_C2S) c2s_before += s->w[i].n;
    w = h2_write_at(s, TT_DIR_C2S, 11 * MS);
    const char *nv[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path",
                        "/v1/chat/completions", "x-request-id", "r3", NULL};
    h2_headers(s, w, 3, 0, nv);
    h2_data(w, 3, TT_H2_FLAG_END_STREAM, "{\"model\":\"m-r3\",\"stream\":true}");
    w = h2_write_at(s, TT_DIR_S2C, 12 * MS);
    h2_headers(s, w, 3, 0, RESP_SSE);
    h2_data(w, 3, 0, tok("b"));
    w = h2_write_at(s, TT_DIR_S2C, 20 * MS);
    h2_data(w, 1, 0, tok("c"));
    h2_data(w, 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    h2_data(h2_write_at(s, TT_DIR_S2C, 21 * MS), 3, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    return c2s_before; /* stream offset of stream 3's HEADERS */
}

/* 0 when the tracker's requests are the exchange's; else a message. */
static const char *check(tt_tracker *t, enum order o, size_t r3_off)
{
    size_t n;
    const tt_request *rs = tt_tracker_requests(t, &n);
    if (n != 2) return "not 2 requests";
    const tt_request *u = &rs[0], *r3 = &rs[1];
    if (strcmp(u->request_id, "u1") || strcmp(r3->request_id, "r3")) return "request ids or order";
    if (strcmp(u->method, "POST") || strcmp(u->path, "/v1/chat/completions")) return "upgrade request's method/path";
    if (strcmp(u->fields.model, "m-u1") || strcmp(r3->fields.model, "m-r3")) return "model from the request body";
    if (u->ordinal != 0 || r3->ordinal != 1) return "ordinal";
    if (u->stream_id != 1 || r3->stream_id != 3) return "stream ids";
    if (u->status != 200 || r3->status != 200) return "status (the 101 is not the answer)";
    if (u->framing != TT_FRAMING_SSE || r3->framing != TT_FRAMING_SSE) return "framing";
    if (u->incomplete || r3->incomplete || u->http_error[0] || r3->http_error[0]) return "filed incomplete";
    if (!u->terminal_seen || !r3->terminal_seen) return "terminal";
    if (u->req_first_ns != 1 * MS || u->resp_first_ns != 2 * MS) return "upgrade request's instants";
    if (u->req_last_ns != (o == SWITCH_BEFORE_BODY ? 3 : 1) * MS) return "upgrade request's last byte";
    if (u->token_events != 2 || u->first_token_ns != 10 * MS || u->last_token_ns != 20 * MS) return "stream 1 tokens";
    if (u->resp_last_ns != 20 * MS) return "stream 1's end";
    if (r3->req_first_ns != 11 * MS || r3->resp_first_ns != 12 * MS) return "stream 3 instants";
    if (r3->req_first_off != r3_off) return "stream 3's request offset (HTTP/2 after the upgrade request)";
    if (r3->token_events != 1 || r3->first_token_ns != 12 * MS || r3->resp_last_ns != 21 * MS) return "stream 3 tokens";
    size_t nn;
    tt_tracker_notes(t, &nn);
    if (nn) return "a connection note";
    return NULL;
}

struct upgrade_case {
    enum order order;
    size_t r3_off; /* stream offset of stream 3's HEADERS */
};

static const char *check_case(tt_tracker *t, void *ctx)
{
    const struct upgrade_case *c = ctx;
    return check(t, c->order, c->r3_off);
}

static void test_h2c_upgrade(void **state)
{
    (void)state;
    static const char *const names[] = {"wire order", "preface before the 101", "101 before the body"};
    for (int o = WIRE; o <= SWITCH_BEFORE_BODY; o++) {
        h2_script s;
        struct upgrade_case c = {(enum order)o, build(&s, (enum order)o)};
        char why[256];
        size_t runs = h2_script_each_feed(&s, 1, check_case, &c, why, sizeof why);
        if (why[0]) fail_msg("%s, %s", names[o], why);
        assert_true(runs > 500);
        h2_script_free(&s);
    }
}

/* The capture began after the connection's first exchange (both
 * directions' first bytes at stream offset 5000, an upgrade request
 * first): the switch points are found all the same. */
static void test_h2c_upgrade_late_start(void **state)
{
    (void)state;
    h2_script s;
    struct upgrade_case c = {WIRE, build(&s, WIRE)};
    s.start_off = 5000;
    c.r3_off += s.start_off;
    char why[256];
    h2_script_each_feed(&s, 7, check_case, &c, why, sizeof why);
    if (why[0]) fail_msg("%s", why);
    h2_script_free(&s);
}

/* The server answers the upgrade request over HTTP/1.1 (it ignores
 * Upgrade): the response is the request's; the next request, on the same
 * connection, is HTTP/1.1 too. A 101 to another protocol still leaves HTTP. */
static void test_h2c_refused(void **state)
{
    (void)state;
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 14\r\n\r\n"
                               "data: [DONE]\n\n";
    static const char req2[] = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
    static const char resp2[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    h2_script s;
    h2_script_init(&s);
    h2_write *w = h2_write_at(&s, TT_DIR_C2S, 1 * MS);
    h2_put(w, UPGRADE_HEAD, strlen(UPGRADE_HEAD));
    h2_put(w, BODY, strlen(BODY));
    h2_put(h2_write_at(&s, TT_DIR_S2C, 2 * MS), resp, strlen(resp));
    h2_put(h2_write_at(&s, TT_DIR_C2S, 3 * MS), req2, strlen(req2));
    h2_put(h2_write_at(&s, TT_DIR_S2C, 4 * MS), resp2, strlen(resp2));
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        tt_tracker *t = h2_script_run(&s, 0, 0, bytewise);
        size_t n;
        const tt_request *r = tt_tracker_requests(t, &n);
        assert_int_equal(n, 2);
        assert_string_equal(r[0].request_id, "u1");
        assert_int_equal(r[0].status, 200);
        assert_int_equal(r[0].incomplete, 0);
        assert_true(r[0].terminal_seen);
        assert_int_equal(r[0].resp_first_ns, 2 * MS);
        assert_int_equal(r[0].stream_id, 0);
        assert_string_equal(r[1].path, "/v1/models");
        assert_int_equal(r[1].status, 200);
        assert_int_equal(r[1].incomplete, 0);
        assert_int_equal(r[1].req_first_ns, 3 * MS);
        tt_tracker_notes(t, &n);
        assert_int_equal(n, 0);
        tt_tracker_free(t);
    }
    h2_script_free(&s);

    static const char ws[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                             "\x81\x02hi";
    memset(&s, 0, sizeof s);
    w = h2_write_at(&s, TT_DIR_C2S, 1 * MS);
    h2_put(w, UPGRADE_HEAD, strlen(UPGRADE_HEAD));
    h2_put(w, BODY, strlen(BODY));
    h2_put(h2_write_at(&s, TT_DIR_S2C, 2 * MS), ws, sizeof ws - 1);
    tt_tracker *t = h2_script_run(&s, 0, 0, false);
    size_t n;
    const tt_request *r = tt_tracker_requests(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].status, 101);
    const tt_conn_note *notes = tt_tracker_notes(t, &n);
    assert_int_equal(n, 1);
    assert_non_null(strstr(notes[0].reason, "websocket"));
    tt_tracker_free(t);
    h2_script_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2c_upgrade),
        cmocka_unit_test(test_h2c_upgrade_late_start),
        cmocka_unit_test(test_h2c_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
