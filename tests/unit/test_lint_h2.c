/* Lint findings only HTTP/2 and gRPC show, from an exchange written frame
 * by frame (h2_script.h) through the connection tracker:
 *  - stream 1 (SSE): two events in one DATA frame (h2-coalesced-events),
 *    one event across two DATA frames (h2-split-event), and a response
 *    that fills the 64-byte window the client's SETTINGS gave it, the
 *    client's WINDOW_UPDATE coming 4 ms later (h2-flow-control-stall);
 *  - stream 3: reset by the server mid-response (h2-stream-reset);
 *  - stream 5: a gRPC call answered trailers-only with grpc-status 14
 *    (grpc-status-error);
 *  - stream 7: the same SSE events one per frame, the window never closed,
 *    ended cleanly: none of these findings.
 * The segment findings (split-event, coalesced-events) never appear for
 * HTTP/2 streams: their chunks are DATA frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "h2_script.h"
#include "lint/lint.h"
#include "proto/http2.h"

#define MS 1000000ull

static const char *const SSE[] = {":status", "200", "content-type", "text/event-stream", NULL};

static void chat(h2_script *s, h2_write *w, uint32_t sid, const char *id)
{
    const char *const nv[] = {":method", "POST", ":scheme", "http", ":authority", "x", ":path",
                              "/v1/chat/completions", "content-type", "application/json", "x-request-id", id, NULL};
    h2_headers(s, w, sid, 0, nv);
    h2_data(w, sid, TT_H2_FLAG_END_STREAM, "{\"model\":\"m\",\"stream\":true}");
}

static void build(h2_script *s)
{
    h2_script_init(s);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 1 * MS), TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, 2 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    static const uint8_t window64[6] = {0, 4, 0, 0, 0, 64}; /* SETTINGS_INITIAL_WINDOW_SIZE 64 */
    h2_frame(w, TT_H2_SETTINGS, 0, 0, window64, sizeof window64);
    chat(s, w, 1, "s1");
    chat(s, w, 3, "s3");
    const char *const grpc[] = {":method", "POST", ":scheme", "http", ":authority", "x", ":path",
                                "/inference.GRPCInferenceService/ModelInfer", "content-type", "application/grpc",
                                "x-request-id", "s5", NULL};
    h2_headers(s, w, 5, 0, grpc);
    static const uint8_t empty_message[5] = {0};
    h2_frame(w, TT_H2_DATA, TT_H2_FLAG_END_STREAM, 5, empty_message, sizeof empty_message);
    chat(s, w, 7, "s7");
    h2_frame(h2_write_at(s, TT_DIR_S2C, 2 * MS), TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);

    w = h2_write_at(s, TT_DIR_S2C, 3 * MS);
    h2_headers(s, w, 1, 0, SSE);
    h2_data(w, 1, 0, "data: a\n\ndata: b\n\n");                   /* 18 bytes, two events */
    h2_data(h2_write_at(s, TT_DIR_S2C, 4 * MS), 1, 0, "data: c");   /* 7 */
    h2_data(h2_write_at(s, TT_DIR_S2C, 5 * MS), 1, 0, "\n\n");      /* 2: c split across frames */
    /* 37 bytes: the stream's window of 64 is spent at 6 ms */
    h2_data(h2_write_at(s, TT_DIR_S2C, 6 * MS), 1, 0, ": keep-alive keep-alive keep-alive!!\n");
    static const uint8_t credit[4] = {0, 0, 0x10, 0};
    h2_frame(h2_write_at(s, TT_DIR_C2S, 10 * MS), TT_H2_WINDOW_UPDATE, 0, 1, credit, sizeof credit);
    h2_data(h2_write_at(s, TT_DIR_S2C, 11 * MS), 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");

    w = h2_write_at(s, TT_DIR_S2C, 12 * MS);
    h2_headers(s, w, 3, 0, SSE);
    h2_data(w, 3, 0, "data: z\n\n");
    static const uint8_t internal_error[4] = {0, 0, 0, 2};
    h2_frame(h2_write_at(s, TT_DIR_S2C, 13 * MS), TT_H2_RST_STREAM, 0, 3, internal_error, sizeof internal_error);

    const char *const unavailable[] = {":status", "200", "content-type", "application/grpc", "grpc-status", "14",
                                       "grpc-message", "overloaded", NULL};
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 14 * MS), 5, TT_H2_FLAG_END_STREAM, unavailable);

    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 15 * MS), 7, 0, SSE);
    h2_data(h2_write_at(s, TT_DIR_S2C, 16 * MS), 7, 0, "data: a\n\n");
    h2_data(h2_write_at(s, TT_DIR_S2C, 17 * MS), 7, 0, "data: b\n\n");
    h2_data(h2_write_at(s, TT_DIR_S2C, 18 * MS), 7, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
}

static uint64_t mask_of(const tt_lint_result *res, uint32_t request)
{
    uint64_t m = 0;
    for (size_t i = 0; i < res->n; i++)
        if (res->findings[i].request == request) m |= 1ull << res->findings[i].id;
    return m;
}

static const tt_lint_finding *find(const tt_lint_result *res, uint32_t request, tt_lint_id id)
{
    for (size_t i = 0; i < res->n; i++)
        if (res->findings[i].request == request && res->findings[i].id == id) return &res->findings[i];
    return NULL;
}

#define BIT(id) (1ull << (TT_LINT_##id))
static const uint64_t H2_IDS = BIT(H2_SPLIT_EVENT) | BIT(H2_COALESCED_EVENTS) | BIT(H2_FLOW_CONTROL_STALL) |
                               BIT(H2_STREAM_RESET) | BIT(GRPC_STATUS_ERROR) | BIT(SPLIT_EVENT) |
                               BIT(COALESCED_EVENTS);

static void test_h2_findings(void **state)
{
    h2_script s;
    build(&s);
    tt_tracker *t = h2_script_run(&s, 0, 0, false);
    size_t n;
    const tt_request *r = tt_tracker_requests(t, &n);
    assert_int_equal(n, 4);
    tt_lint_result res;
    assert_int_equal(tt_lint_run(r, n, &res), 0);
    static const struct {
        const char *id;
        uint64_t h2_ids;
    } want[] = {
        {"s1", BIT(H2_SPLIT_EVENT) | BIT(H2_COALESCED_EVENTS) | BIT(H2_FLOW_CONTROL_STALL)},
        {"s3", BIT(H2_STREAM_RESET)},
        {"s5", BIT(GRPC_STATUS_ERROR)},
        {"s7", 0},
    };
    for (uint32_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < 4 && strcmp(r[i].request_id, want[k].id)) k++;
        assert_true(k < 4);
        uint64_t got = mask_of(&res, i) & H2_IDS;
        if (got != want[k].h2_ids) fail_msg("%s: HTTP/2 findings %#llx, want %#llx", want[k].id,
                                            (unsigned long long)got, (unsigned long long)want[k].h2_ids);
        if (!strcmp(want[k].id, "s1")) {
            assert_int_equal(r[i].h2_window_stalls, 1);
            assert_int_equal(r[i].h2_window_closed_ns, 4 * MS);
            const tt_lint_finding *f = find(&res, i, TT_LINT_H2_FLOW_CONTROL_STALL);
            assert_int_equal(f->mono_ns, 6 * MS);
            assert_non_null(strstr(f->detail, "4.000 ms"));
            f = find(&res, i, TT_LINT_H2_COALESCED_EVENTS);
            assert_int_equal(f->event, 0);
            assert_int_equal(find(&res, i, TT_LINT_H2_SPLIT_EVENT)->event, 2);
        }
        if (!strcmp(want[k].id, "s3"))
            assert_non_null(strstr(find(&res, i, TT_LINT_H2_STREAM_RESET)->detail, "code 2 from the server"));
        if (!strcmp(want[k].id, "s5"))
            assert_string_equal(find(&res, i, TT_LINT_GRPC_STATUS_ERROR)->detail, "grpc-status 14: overloaded");
    }
    tt_lint_result_free(&res);
    tt_tracker_free(t);
    h2_script_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_findings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
