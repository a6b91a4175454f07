/* test_join_triton.c - genai-perf's profile_export.json for service_kind
 * triton joined to the requests the tracker made of perf_analyzer's
 * Triton ModelStreamInfer streams (one request per client message,
 * request_id the message's id). perf_analyzer ids each message
 * (thread << 48 | a counter) but does not write the id into the file, and
 * the file keeps only the requests that ended inside a measurement window,
 * each thread's in completion order: records must meet their requests by
 * start instant, never by reading the ids as record indices.
 *
 * The exchanges are written frame by frame (tests/support/h2_script.h,
 * triton_msg.h):
 * each request message leaves 200 us after the instant perf_analyzer
 * recorded, each response message arrives 100 us before the instant it
 * recorded, so every joined pair must show a start delta of +200 us and a
 * captured TTFT 300 us shorter than the record's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "h2_script.h"
#include "import/bench_import.h"
#include "join/join.h"
#include "proto/http2.h"
#include "report/report.h"
#include "triton_msg.h"

#define US 1000ull
#define MS 1000000ull
#define EPOCH 1765000000000000000LL /* the records' wall clock minus the capture's monotonic clock */
#define STREAM_INFER "/inference.GRPCInferenceService/ModelStreamInfer"
#define SEND_LAG (200 * US)
#define RECV_LEAD (100 * US)
#define THREAD1 "281474976710656" /* perf_analyzer's first id on client thread 1: 1 << 48 */

/* ---- perf_analyzer's calls, on the records' instants ---- */

#define MAX_RESP 4

typedef struct call {
    uint32_t sid;        /* the client thread's stream */
    const char *id;      /* the message id perf_analyzer set */
    uint64_t start_ms;   /* the record's timestamp, ms after EPOCH */
    uint64_t resp_ms[MAX_RESP];
    const char *text[MAX_RESP]; /* the last response is the empty final one */
} call;

typedef struct event {
    uint64_t ns;
    size_t call, resp; /* resp == MAX_RESP: the request message */
} event;

static int by_instant(const void *pa, const void *pb_)
{
    const event *a = pa, *b = pb_;
    if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
    return a->call < b->call ? -1 : a->call > b->call;
}

/* One connection carrying the calls' messages at their wire instants;
 * each stream opened by its first request and ended (grpc-status 0) after
 * the last event. */
static void build(h2_script *s, const call *calls, size_t n)
{
    event ev[32];
    size_t ne = 0;
    uint64_t last = 0;
    for (size_t c = 0; c < n; c++) {
        assert_true(ne < 32);
        ev[ne++] = (event){calls[c].start_ms * MS + SEND_LAG, c, MAX_RESP};
        for (size_t k = 0; k < MAX_RESP; k++) {
            assert_true(ne < 32);
            ev[ne++] = (event){calls[c].resp_ms[k] * MS - RECV_LEAD, c, k};
            if (calls[c].resp_ms[k] * MS > last) last = calls[c].resp_ms[k] * MS;
        }
    }
    qsort(ev, ne, sizeof *ev, by_instant);
    h2_script_init(s);
    h2_frame(h2_write_at(s, TT_DIR_S2C, 1 * MS), TT_H2_SETTINGS, 0, 0, NULL, 0);
    h2_write *w = h2_write_at(s, TT_DIR_C2S, 2 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    const char *const req[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8001", ":path",
                               STREAM_INFER, "content-type", "application/grpc", "te", "trailers", NULL};
    const char *const resp[] = {":status", "200", "content-type", "application/grpc", NULL};
    bool opened[8] = {false}, answered[8] = {false};
    for (size_t e = 0; e < ne; e++) {
        const call *c = &calls[ev[e].call];
        assert_true(c->sid < 8);
        if (ev[e].resp == MAX_RESP) {
            w = h2_write_at(s, TT_DIR_C2S, ev[e].ns);
            if (!opened[c->sid]) h2_headers(s, w, c->sid, 0, req);
            opened[c->sid] = true;
            triton_msg m = triton_infer_request("vllm_model", c->id);
            triton_grpc_data(w, c->sid, 0, &m);
        } else {
            w = h2_write_at(s, TT_DIR_S2C, ev[e].ns);
            if (!answered[c->sid]) h2_headers(s, w, c->sid, 0, resp);
            answered[c->sid] = true;
            triton_msg m = triton_stream_response("vllm_model", c->id, c->text[ev[e].resp], ev[e].resp == MAX_RESP - 1);
            triton_grpc_data(w, c->sid, 0, &m);
        }
    }
    const char *const trailers[] = {"grpc-status", "0", NULL};
    for (uint32_t sid = 1; sid < 8; sid += 2) {
        if (!opened[sid]) continue;
        h2_frame(h2_write_at(s, TT_DIR_C2S, last + 10 * MS), TT_H2_DATA, TT_H2_FLAG_END_STREAM, sid, NULL, 0);
        h2_headers(s, h2_write_at(s, TT_DIR_S2C, last + 11 * MS), sid, TT_H2_FLAG_END_STREAM, trailers);
    }
}

/* The client-vantage analysis of the script. */
static tt_tracker *analyse(const h2_script *s, tt_analysis *a)
{
    static const double pct[] = {50, 99};
    tt_tracker *t = h2_script_run(s, 0, 0, false);
    memset(a, 0, sizeof *a);
    a->vantage = TT_VANTAGE_CLIENT;
    a->clock = TT_CLOCK_MONOTONIC;
    assert_int_equal(tt_analysis_fill(a, t, pct, 2), 0);
    return t;
}

static const tt_joined *group_of_record(const tt_join *j, size_t rec)
{
    for (size_t g = 0; g < j->n; g++)
        if (j->reqs[g].bench == rec) return &j->reqs[g];
    return NULL;
}

/* Record rec met the request with message id want, by start instant, and
 * the two agree on when it started and on its first response. */
static void assert_joined(const tt_join *j, const tt_bench_result *b, size_t rec, const char *want)
{
    const tt_joined *g = group_of_record(j, rec);
    if (!g) fail_msg("record %zu met no request", rec);
    const tt_request *r = tt_join_request(j, g, TT_VANTAGE_CLIENT);
    assert_non_null(r);
    if (strcmp(r->request_id, want)) fail_msg("record %zu met request %s, not %s", rec, r->request_id, want);
    assert_int_equal(r->dialect, TT_DIALECT_TRITON_GRPC);
    assert_int_equal(g->bench_how, TT_JOIN_ORDER_START);
    assert_string_equal(tt_join_key_name(g->bench_how), "order+start");
    assert_int_equal(g->bench_start_delta_ns, (int64_t)SEND_LAG);
    assert_int_equal((int64_t)(r->first_token_ns - r->req_first_ns),
                     b->reqs[rec].ttft_ns - (int64_t)(SEND_LAG + RECV_LEAD));
}

static const tt_join_options on_capture_clock = {
    .clock_is_mono = true, .has_wall_to_mono = true, .wall_to_mono_ns = EPOCH};

/* The fixture of test_import (concurrency 2: thread 0 sent A then C on
 * stream 1, thread 1 sent B on stream 3; the file lists A, C, B). */
static void test_fixture_two_threads(void **state)
{
    (void)state;
    static const call calls[] = {
        {1, "0", 100, {150, 160, 175, 176}, {"Hello", " world", "!", ""}},
        {3, THREAD1, 105, {170, 181, 190, 191}, {"The", " answer", " is 42", ""}},
        {1, "1", 300, {340, 352, 361, 362}, {"Sure", ",", " why not", ""}},
    };
    tt_bench_result b;
    char err[256] = "";
    int rc = tt_bench_load("tests/data/import/genai_perf_triton_export.json", TT_BENCH_AUTO, &b, err, sizeof err);
    if (rc) fail_msg("%s", err);
    h2_script s;
    build(&s, calls, 3);
    tt_analysis a;
    tt_tracker *t = analyse(&s, &a);
    assert_int_equal(a.n_reqs, 3);
    const tt_analysis *as[] = {&a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &b, &on_capture_clock), 0);
    assert_joined(&j, &b, 0, "0");
    assert_joined(&j, &b, 1, "1");
    assert_joined(&j, &b, 2, THREAD1);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER_START], 3);
    assert_int_equal(j.bench_by_key[TT_JOIN_ID], 0);
    assert_int_equal(j.bench_unmatched, 0);
    assert_ptr_equal(j.bench_note, b.id_note); /* why not by id */
    tt_join_free(&j);

    /* no wall-to-monotonic offset: by order alone (file order is not start
     * order here, which the note owns up to) */
    tt_join_options mono_only = {.clock_is_mono = true};
    assert_int_equal(tt_join_build(&j, as, 1, &b, &mono_only), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER], 3);
    assert_non_null(strstr(j.bench_note, "no wall-to-monotonic offset"));
    tt_join_free(&j);
    tt_analysis_release(&a);
    tt_tracker_free(t);
    h2_script_free(&s);
    tt_bench_result_free(&b);
}

/* Concurrency 1: the ids are 0, 1, 2, 3 and look like record indices. The
 * file holds the requests 1..4 (request 0 ended before the measurement
 * window, 4 after the capture stopped): id k is not record k. */
static void test_ids_are_not_indices(void **state)
{
    (void)state;
    call calls[4];
    const char *ids[] = {"0", "1", "2", "3"};
    for (size_t c = 0; c < 4; c++) {
        uint64_t t0 = 10 + 100 * c;
        calls[c] = (call){1, ids[c], t0, {t0 + 40, t0 + 50, t0 + 60, t0 + 61}, {"x", "y", "z", ""}};
    }
    char doc[4096];
    size_t len = (size_t)snprintf(doc, sizeof doc, "{\"experiments\":[{\"experiment\":{\"mode\":\"concurrency\","
                                                   "\"value\":1},\"requests\":[");
    for (size_t r = 0; r < 4; r++) {
        long long t0 = EPOCH + (long long)(110 + 100 * r) * (long long)MS;
        len += (size_t)snprintf(doc + len, sizeof doc - len,
                                "%s{\"timestamp\":%lld,\"request_inputs\":{\"text_input\":\"q\",\"stream\":true},"
                                "\"response_timestamps\":[%lld,%lld,%lld,%lld],\"response_outputs\":[{\"text_output\":"
                                "\"x\"},{\"text_output\":\"y\"},{\"text_output\":\"z\"},{\"text_output\":\"\"}]}",
                                r ? "," : "", t0, t0 + 40 * (long long)MS, t0 + 50 * (long long)MS,
                                t0 + 60 * (long long)MS, t0 + 61 * (long long)MS);
    }
    len += (size_t)snprintf(doc + len, sizeof doc - len,
                            "],\"window_boundaries\":[]}],\"version\":\"\",\"service_kind\":\"triton\","
                            "\"endpoint\":\"\"}");
    assert_true(len < sizeof doc);
    tt_bench_result b;
    char err[256] = "";
    int rc = tt_bench_load_mem(doc, len, TT_BENCH_GENAI_PERF, &b, err, sizeof err);
    if (rc) fail_msg("%s", err);
    h2_script s;
    build(&s, calls, 4);
    tt_analysis a;
    tt_tracker *t = analyse(&s, &a);
    assert_int_equal(a.n_reqs, 4);
    const tt_analysis *as[] = {&a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &b, &on_capture_clock), 0);
    assert_joined(&j, &b, 0, "1");
    assert_joined(&j, &b, 1, "2");
    assert_joined(&j, &b, 2, "3");
    assert_null(group_of_record(&j, 3));
    assert_int_equal(j.bench_by_key[TT_JOIN_ID], 0);
    assert_int_equal(j.bench_unmatched, 1);
    assert_non_null(strstr(j.bench_note, "met no request"));
    tt_join_free(&j);
    tt_analysis_release(&a);
    tt_tracker_free(t);
    h2_script_free(&s);
    tt_bench_result_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_two_threads),
        cmocka_unit_test(test_ids_are_not_indices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
