/* The connection tracker on gRPC over HTTP/2: a Triton ModelStreamInfer
 * stream carrying four inference requests (one client message each, two
 * of them in one write, answered interleaved and routed by the id they
 * echo; one failed by an error response; one still open when the trailers
 * end the stream with grpc-status 1) and a unary call answered
 * trailers-only with grpc-status 12. Protobuf messages are encoded field
 * by field (tests/support/triton_msg.h); the
 * exchange is fed whole, split in two at every byte of every write, and
 * byte by byte, and must always give the same five requests. And an
 * SGLang Generate stream (token ids, no text) read as one request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "h2_script.h"
#include "triton_msg.h"
#include "proto/http2.h"
#include "timeline/conn_tracker.h"
#include "request_find.h"

#define MS 1000000ull
#define STREAM_INFER "/inference.GRPCInferenceService/ModelStreamInfer"

/* The exchange's messages (triton_msg.h), model "llm". */
static triton_msg infer_request(const char *id) { return triton_infer_request("llm", id); }
static triton_msg infer_response(const char *id, const char *text, bool final)
{
    return triton_stream_response("llm", id, text, final);
}
static void grpc_data(h2_write *w, uint32_t sid, uint8_t flags, triton_msg m) { triton_grpc_data(w, sid, flags, &m); }

/* ---- the exchange ---- */

static void build(h2_script *s)
{
    h2_script_init(s);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 1 * MS), TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, 2 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    const char *const req[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8001", ":path",
                               STREAM_INFER, "content-type", "application/grpc", "te", "trailers", NULL};
    h2_headers(s, w, 1, 0, req);
    grpc_data(w, 1, 0, infer_request("r1"));
    const char *const resp[] = {":status", "200", "content-type", "application/grpc", NULL};
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 3 * MS), 1, 0, resp);
    grpc_data(h2_write_at(s, TT_DIR_S2C, 5 * MS), 1, 0, infer_response("r1", "a", false));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 6 * MS), 1, 0, infer_response("r1", "b", false));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 7 * MS), 1, 0, infer_response("r1", "", true));
    w = h2_write_at(s, TT_DIR_C2S, 10 * MS);
    grpc_data(w, 1, 0, infer_request("r2"));
    grpc_data(w, 1, 0, infer_request("r3"));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 12 * MS), 1, 0, infer_response("r3", "x", false));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 13 * MS), 1, 0, infer_response("r2", "y", false));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 14 * MS), 1, 0, infer_response("r2", "z", true));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 15 * MS), 1, 0, triton_stream_error("boom"));
    grpc_data(h2_write_at(s, TT_DIR_C2S, 16 * MS), 1, 0, infer_request("r4"));
    grpc_data(h2_write_at(s, TT_DIR_S2C, 17 * MS), 1, 0, infer_response("r4", "q", false));
    h2_frame(h2_write_at(s, TT_DIR_C2S, 18 * MS), TT_H2_DATA, TT_H2_FLAG_END_STREAM, 1, NULL, 0);
    const char *const trailers[] = {"grpc-status", "1", "grpc-message", "cancelled%20by%20test", NULL};
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 20 * MS), 1, TT_H2_FLAG_END_STREAM, trailers);

    /* a unary call of a method the server does not have: trailers-only */
    w = h2_write_at(s, TT_DIR_C2S, 21 * MS);
    const char *const unary[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8001", ":path",
                                 "/inference.GRPCInferenceService/ModelInfer", "content-type", "application/grpc",
                                 "x-request-id", "u1", NULL};
    h2_headers(s, w, 3, 0, unary);
    grpc_data(w, 3, TT_H2_FLAG_END_STREAM, infer_request("u1"));
    const char *const only[] = {":status", "200", "content-type", "application/grpc", "grpc-status", "12",
                                "grpc-message", "no such method", NULL};
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 22 * MS), 3, TT_H2_FLAG_END_STREAM, only);
}

/* 0 when the tracker's requests are the exchange's; else a message. */
static const char *check_exchange(tt_tracker *t, void *ctx)
{
    (void)ctx;
    size_t n;
    const tt_request *rs = tt_tracker_requests(t, &n);
    if (n != 5) return "not 5 requests";
    static const struct {
        const char *id;
        uint32_t ordinal;
        uint64_t req_ns, resp_ns;
        uint32_t tokens;
        uint64_t first, last, end;
        bool terminal, cut;
        int grpc_status;
    } want[] = {
        {"r1", 0, 2 * MS, 5 * MS, 2, 5 * MS, 6 * MS, 7 * MS, true, false, -1},
        {"r2", 1, 10 * MS, 13 * MS, 2, 13 * MS, 14 * MS, 14 * MS, true, false, -1},
        {"r3", 2, 10 * MS, 12 * MS, 1, 12 * MS, 12 * MS, 15 * MS, false, false, -1},
        {"r4", 3, 16 * MS, 17 * MS, 1, 17 * MS, 17 * MS, 17 * MS, false, true, 1},
    };
    for (size_t i = 0; i < 4; i++) {
        const tt_request *r = tt_test_request_by_id(rs, n, want[i].id);
        if (!r) return "a call's id missing";
        if (r->stream_id != 1 || r->ordinal != want[i].ordinal) return "stream id or ordinal";
        if (strcmp(r->method, "POST") || strcmp(r->path, STREAM_INFER)) return "method or path";
        if (strcmp(r->fields.model, "llm")) return "model from the request message";
        if (r->status != 200 || r->framing != TT_FRAMING_GRPC || r->dialect != TT_DIALECT_TRITON_GRPC)
            return "status, framing or dialect";
        if (r->req_first_ns != want[i].req_ns || r->req_last_ns != want[i].req_ns) return "request instants";
        if (r->resp_first_ns != want[i].resp_ns) return "response start";
        if (r->token_events != want[i].tokens) return "token event count";
        if (r->first_token_ns != want[i].first || r->last_token_ns != want[i].last) return "token instants";
        if (r->resp_last_ns != want[i].end) return "response end";
        if (r->terminal_seen != want[i].terminal) return "terminal";
        if (r->grpc_status != want[i].grpc_status) return "grpc-status";
        if (want[i].cut != !!(r->incomplete & TT_INC_RESPONSE_CUT)) return "cut";
        if (!want[i].cut && r->incomplete) return "a whole call filed incomplete";
    }
    const tt_request *r3 = tt_test_request_by_id(rs, n, "r3");
    if (strcmp(r3->error_message, "boom") || r3->kind_counts[TT_EV_ERROR] != 1) return "r3's error response";
    const tt_request *r4 = tt_test_request_by_id(rs, n, "r4");
    if (strcmp(r4->grpc_message, "cancelled by test")) return "grpc-message not percent-decoded";
    if (!strstr(r4->http_error, "final response")) return "r4's reason";
    const tt_request *r2 = tt_test_request_by_id(rs, n, "r2");
    if (r2->text_bytes != 2 || tt_test_request_by_id(rs, n, "r1")->text_bytes != 2) return "text bytes";
    const tt_request *u1 = tt_test_request_by_id(rs, n, "u1");
    if (!u1) return "the unary call missing";
    if (u1->stream_id != 3 || u1->grpc_status != 12 || strcmp(u1->grpc_message, "no such method")) return "trailers-only";
    if (u1->status != 200 || u1->incomplete || u1->n_events || u1->dialect != TT_DIALECT_UNKNOWN) return "unary call";
    size_t nn;
    tt_tracker_notes(t, &nn);
    if (nn) return "a connection note";
    return NULL;
}

static void test_grpc_calls(void **state)
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

/* At the client vantage every server write's bytes became readable 300 us
 * before the read: each call's first and last token are readable then
 * (the DATA frame's last byte), and no instant is taken from elsewhere. */
static void test_grpc_ready_instants(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    tt_tracker *t = h2_script_run_ready(&s, 300000);
    size_t n;
    const tt_request *rs = tt_tracker_requests(t, &n);
    assert_int_equal(n, 5);
    static const struct {
        const char *id;
        uint64_t first, last;
    } want[] = {{"r1", 5 * MS, 6 * MS}, {"r2", 13 * MS, 14 * MS}, {"r3", 12 * MS, 12 * MS}, {"r4", 17 * MS, 17 * MS}};
    for (size_t i = 0; i < 4; i++) {
        const tt_request *r = tt_test_request_by_id(rs, n, want[i].id);
        assert_non_null(r);
        assert_int_equal(r->first_token_ns, want[i].first);
        assert_int_equal(r->first_token_ready_ns, want[i].first - 300000);
        assert_int_equal(r->last_token_ready_ns, want[i].last - 300000);
    }
    tt_tracker_free(t);
    h2_script_free(&s);
}

/* SGLang's Generate: one request message, a server stream of chunks
 * (token ids, no text) and a complete message, then trailers. The
 * messages are tests/golden/grpc_dialect/sglang_chunk.bin and
 * sglang_complete.bin (protoc-encoded from their .txtpb). */
static void build_sglang(h2_script *s)
{
    static const uint8_t chunk[] = {0, 0, 0, 0, 18, 0x0a, 0x04, 's', 'g', '-', '1', 0x12, 0x0a, 0x0a, 0x02,
                                    0x9c, 0x0e, 0x10, 0x05, 0x18, 0x01, 0x20, 0x02};
    static const uint8_t complete[] = {0,    0,    0,    0,    27,   0x0a, 0x04, 's',  'g',  '-',
                                       '1',  0x1a, 0x13, 0x0a, 0x05, 0x9c, 0x0e, 0x09, 0x00, 0x4d,
                                       0x12, 0x06, 'l',  'e',  'n',  'g',  't',  'h',  0x18, 0x05,
                                       0x20, 0x04};
    static const uint8_t request[] = {0, 0, 0, 0, 0};
    h2_script_init(s);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 1 * MS), TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, 2 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    const char *const req[] = {":method", "POST", ":scheme", "http", ":authority", "x", ":path",
                               "/sglang.grpc.scheduler.SglangScheduler/Generate", "content-type", "application/grpc",
                               "x-request-id", "sg-1", NULL};
    h2_headers(s, w, 1, 0, req);
    h2_frame(w, TT_H2_DATA, TT_H2_FLAG_END_STREAM, 1, request, sizeof request);
    w = h2_write_at(s, TT_DIR_S2C, 5 * MS);
    const char *const resp[] = {":status", "200", "content-type", "application/grpc", NULL};
    h2_headers(s, w, 1, 0, resp);
    h2_frame(w, TT_H2_DATA, 0, 1, chunk, sizeof chunk);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 6 * MS), TT_H2_DATA, 0, 1, chunk, sizeof chunk);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 7 * MS), TT_H2_DATA, 0, 1, complete, sizeof complete);
    const char *const trailers[] = {"grpc-status", "0", NULL};
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 8 * MS), 1, TT_H2_FLAG_END_STREAM, trailers);
}

static const char *check_sglang(tt_tracker *t, void *ctx)
{
    (void)ctx;
    size_t n;
    const tt_request *r = tt_tracker_requests(t, &n);
    if (n != 1) return "not one request";
    if (r->dialect != TT_DIALECT_SGLANG_GRPC || r->framing != TT_FRAMING_GRPC) return "dialect or framing";
    if (r->incomplete || r->grpc_status != 0) return "not whole, or grpc-status not 0";
    if (r->token_events != 2 || r->first_token_ns != 5 * MS || r->last_token_ns != 6 * MS) return "tokens";
    if (r->text_bytes) return "text from token ids";
    if (!r->terminal_seen || r->terminal_ns != 7 * MS) return "the complete message as the end";
    if (strcmp(r->finish_reason, "length") || r->usage_completion_tokens != 4) return "finish reason or usage";
    return NULL;
}

static void test_sglang_generate(void **state)
{
    (void)state;
    h2_script s;
    build_sglang(&s);
    char why[256];
    size_t runs = h2_script_each_feed(&s, 1, check_sglang, NULL, why, sizeof why);
    if (why[0]) fail_msg("%s", why);
    assert_true(runs > 100);
    h2_script_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grpc_calls),
        cmocka_unit_test(test_grpc_ready_instants),
        cmocka_unit_test(test_sglang_generate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
