/* test_import.c - benchmark result importers: each fixture under
 * tests/data/import (written in the exact format its tool writes) loads to
 * the exact expected values; auto-detection picks the right tool; every
 * broken file fails with a one-line reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "golden.h"
#include "import/bench_import.h"

#define DATA "tests/data/import/"

static tt_bench_result load_ok(const char *name, tt_bench_format fmt)
{
    char path[256], err[256] = "";
    snprintf(path, sizeof path, DATA "%s", name);
    tt_bench_result r;
    int rc = tt_bench_load(path, fmt, &r, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s: %s\n", name, err);
    assert_int_equal(rc, 0);
    assert_string_equal(r.path, path);
    return r;
}

static void assert_itl(const tt_bench_request *q, const int64_t *want, size_t n)
{
    assert_int_equal(q->n_itl, n);
    if (n == 0) {
        assert_null(q->itl_ns);
        return;
    }
    for (size_t i = 0; i < n; i++) assert_int_equal(q->itl_ns[i], want[i]);
}

static void test_vllm_detailed(void **state)
{
    tt_bench_result r = load_ok("vllm_detailed.json", TT_BENCH_VLLM);
    assert_int_equal(r.format, TT_BENCH_VLLM);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_int_equal(q[0].index, 0);
    assert_null(q[0].request_id);
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_MONO);
    assert_int_equal(q[0].start_ns, 81234567891234LL);
    assert_int_equal(q[0].ttft_ns, 52341987);
    assert_int_equal(q[0].e2el_ns, 85641986);
    assert_itl(&q[0], (const int64_t[]){11000201, 12500000, 9799798}, 3);
    assert_int_equal(q[0].output_tokens, 4);
    assert_int_equal(q[0].input_tokens, 128);
    assert_true(q[0].success);
    assert_null(q[0].error);
    assert_int_equal(q[0].text_len, 19);
    assert_true(q[0].text_hash == 0xcae4c7344e14590dull);

    assert_int_equal(q[1].start_ns, 81234601234567LL);
    assert_int_equal(q[1].ttft_ns, 61002003);
    assert_int_equal(q[1].e2el_ns, 84402004);
    assert_itl(&q[1], (const int64_t[]){10100001, 13300000}, 2);
    assert_int_equal(q[1].text_len, 7);
    assert_true(q[1].text_hash == 0xa81ac1664fa41d9bull);

    assert_int_equal(q[2].index, 2);
    assert_int_equal(q[2].start_ns, 81234650000001LL);
    assert_false(q[2].success);
    assert_non_null(q[2].error);
    assert_non_null(strstr(q[2].error, "ServerDisconnectedError"));
    assert_true(q[2].ttft_ns == TT_BENCH_NONE);
    assert_true(q[2].e2el_ns == TT_BENCH_NONE);
    assert_itl(&q[2], NULL, 0);
    assert_int_equal(q[2].output_tokens, 0);
    assert_int_equal(q[2].text_len, 0);
    assert_true(q[2].text_hash == 0);

    assert_int_equal(tt_bench_set_id_prefix(&r, "bench-1a2b3c4d-"), 0);
    assert_string_equal(r.reqs[0].request_id, "bench-1a2b3c4d-0");
    assert_string_equal(r.reqs[2].request_id, "bench-1a2b3c4d-2");
    tt_bench_result_free(&r);
    assert_int_equal(r.n_reqs, 0);
    assert_null(r.reqs);
}

static void test_vllm_older_version(void **state)
{
    /* no start_times, no latencies; --metadata request_id_prefix=... */
    tt_bench_result r = load_ok("vllm_v0.json", TT_BENCH_VLLM);
    assert_int_equal(r.n_reqs, 2);
    const tt_bench_request *q = r.reqs;
    assert_string_equal(q[0].request_id, "bench-3f2a9c1d-0");
    assert_string_equal(q[1].request_id, "bench-3f2a9c1d-1");
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_NONE);
    assert_true(q[0].start_ns == TT_BENCH_NONE);
    assert_true(q[0].e2el_ns == TT_BENCH_NONE);
    assert_int_equal(q[0].ttft_ns, 250000000);
    assert_int_equal(q[1].ttft_ns, 125000000);
    assert_itl(&q[1], (const int64_t[]){31250000, 31250000}, 2);
    assert_int_equal(q[1].output_tokens, 3);
    assert_int_equal(q[1].input_tokens, 32);
    assert_true(q[1].success);
    assert_true(q[0].text_hash == 0x89c4407b545986aull);
    assert_true(q[1].text_hash == 0xbff4aa198026f420ull);
    tt_bench_result_free(&r);
}

static void test_aiperf(void **state)
{
    tt_bench_result r = load_ok("aiperf_profile_export.jsonl", TT_BENCH_AIPERF);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_string_equal(q[0].request_id, "7609a2e7-aa53-4ab1-98f4-f35ecafefd25");
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_WALL);
    assert_int_equal(q[0].start_ns, 1759813207532900363LL);
    assert_int_equal(q[0].ttft_ns, 255886568);
    assert_int_equal(q[0].e2el_ns, 297525228);
    assert_itl(&q[0], (const int64_t[]){4898437, 5316006, 4801489}, 3);
    assert_int_equal(q[0].output_tokens, 4);
    assert_int_equal(q[0].input_tokens, 550);
    assert_true(q[0].success);
    assert_int_equal(q[0].text_len, -1);

    assert_string_equal(q[1].request_id, "c35e4b1b-6775-4750-b875-94cd68e5ec15");
    assert_int_equal(q[1].start_ns, 1759813207533114522LL);
    assert_false(q[1].success);
    assert_string_equal(q[1].error,
                        "RequestCancellationError: Request was cancelled after 0.000 seconds");
    assert_true(q[1].ttft_ns == TT_BENCH_NONE);
    assert_int_equal(q[1].input_tokens, 550);
    assert_int_equal(q[1].output_tokens, -1);

    assert_int_equal(q[2].start_ns, 1759813207540000001LL);
    assert_int_equal(q[2].ttft_ns, 120000500); /* "us" */
    assert_int_equal(q[2].e2el_ns, 160000000); /* "ns" */
    assert_itl(&q[2], (const int64_t[]){40000000}, 1);
    assert_int_equal(q[2].output_tokens, 5); /* output_sequence_length: 2 output + 3 reasoning */
    tt_bench_result_free(&r);
    /* older aiperf wrote inter_chunk_latency as the mean: not the gaps */
    const char *mean = "{\"metadata\":{\"request_start_ns\":1759813207532900363},\"metrics\":{"
                       "\"ttft\":{\"value\":2.5,\"unit\":\"ms\"},\"inter_chunk_latency\":{\"value\":5.25,"
                       "\"unit\":\"ms\"},\"output_token_count\":{\"value\":7,\"unit\":\"tokens\"}},\"error\":null}";
    char err[256] = "";
    assert_int_equal(tt_bench_load_mem(mean, strlen(mean), TT_BENCH_AIPERF, &r, err, sizeof err), 0);
    assert_int_equal(r.reqs[0].ttft_ns, 2500000);
    assert_itl(&r.reqs[0], NULL, 0);
    assert_int_equal(r.reqs[0].output_tokens, 7);
    tt_bench_result_free(&r);
}

static void test_genai_perf(void **state)
{
    /* genai-perf times only the responses that carry generated text (after
     * merging split events and splitting merged ones): role-only chunks,
     * comments and [DONE] do not count */
    tt_bench_result r = load_ok("genai_perf_profile_export.json", TT_BENCH_GENAI_PERF);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_null(q[0].request_id);
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_WALL);
    assert_int_equal(q[0].start_ns, 1718000000123456789LL);
    assert_int_equal(q[0].ttft_ns, 60000000); /* "Hello", not the role chunk at 50 ms */
    assert_int_equal(q[0].e2el_ns, 72000000); /* " there", not [DONE] */
    assert_itl(&q[0], (const int64_t[]){12000000}, 1);
    assert_true(q[0].success);
    assert_int_equal(q[0].output_tokens, -1); /* genai-perf's tokenizer count is not in the file */
    assert_int_equal(q[0].text_len, 11);
    assert_true(q[0].text_hash == 0x98d9979147cf66f9ull);
    assert_false(q[1].success);
    assert_true(q[1].ttft_ns == TT_BENCH_NONE);
    assert_int_equal(q[1].text_len, -1);
    /* two events in one response (A, B) count once; the event split over
     * two responses (C) is timed at its first part */
    assert_int_equal(q[2].index, 2);
    assert_int_equal(q[2].ttft_ns, 40000000);
    assert_int_equal(q[2].e2el_ns, 45000000);
    assert_itl(&q[2], (const int64_t[]){5000000}, 1);
    assert_int_equal(q[2].text_len, 3);
    assert_true(q[2].text_hash == 0xfa2fe219a07442ebull);
    tt_bench_result_free(&r);
}

static tt_bench_result load_text_ok(const char *text, tt_bench_format fmt)
{
    char err[256] = "";
    tt_bench_result r;
    int rc = tt_bench_load_mem(text, strlen(text), fmt, &r, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    return r;
}

/* service_kind triton (perf_analyzer -i grpc --streaming, vLLM backend):
 * file order is each client thread's requests in completion order, not
 * start order; every response counts, the empty null response that ends
 * each decoupled request too (genai-perf's E2EL ends there). */
static void test_genai_perf_triton(void **state)
{
    tt_bench_result r = load_ok("genai_perf_triton_export.json", TT_BENCH_GENAI_PERF);
    assert_int_equal(r.n_reqs, 3);
    assert_true(r.ids_not_indices);
    assert_non_null(r.id_note);
    assert_non_null(strstr(r.id_note, "does not record it"));
    static const struct {
        int64_t start, ttft, e2el, itl[3];
        int64_t text_len;
        uint64_t hash;
    } want[] = {
        {1765000000100000000LL, 50000000, 76000000, {10000000, 15000000, 1000000}, 12, 0x9e527e14572072d2ull},
        {1765000000300000000LL, 40000000, 62000000, {12000000, 9000000, 1000000}, 13, 0x3e70540958adfbbfull},
        {1765000000105000000LL, 65000000, 86000000, {11000000, 9000000, 1000000}, 16, 0x259cb55b36e00ed0ull},
    };
    for (size_t i = 0; i < 3; i++) {
        const tt_bench_request *q = &r.reqs[i];
        assert_int_equal(q->index, i);
        assert_null(q->request_id); /* perf_analyzer's message id is not in the file */
        assert_int_equal(q->start_clock, TT_BENCH_CLOCK_WALL);
        assert_int_equal(q->start_ns, want[i].start);
        assert_int_equal(q->ttft_ns, want[i].ttft);
        assert_int_equal(q->e2el_ns, want[i].e2el);
        assert_itl(q, want[i].itl, 3);
        assert_true(q->success);
        assert_null(q->error);
        assert_int_equal(q->output_tokens, -1); /* genai-perf tokenizes text_output: not in the file */
        assert_int_equal(q->input_tokens, -1);
        assert_int_equal(q->text_len, want[i].text_len);
        assert_true(q->text_hash == want[i].hash);
    }
    tt_bench_result_free(&r);
}

/* TensorRT-LLM backend: other outputs of the model (empty ones written as
 * "") are ignored; a response without a text_output string, or a request
 * without response_outputs, fails the load as it fails genai-perf; a
 * request with no response is failed. */
static void test_genai_perf_triton_edges(void **state)
{
    tt_bench_result r;
    const char *trt = "{\"experiments\":[{\"experiment\":{\"mode\":\"request_rate\",\"value\":2.0},\"requests\":["
                      "{\"timestamp\":1000,\"request_inputs\":{\"text_input\":\"hi\",\"max_tokens\":3,"
                      "\"stream\":true},\"response_timestamps\":[1500,1700,1800],\"response_outputs\":["
                      "{\"text_output\":\"a\",\"cum_log_probs\":\"\"},{\"cum_log_probs\":0.5,\"text_output\":\"bc\"},"
                      "{\"text_output\":\"\",\"output_log_probs\":[0.1,0.2]}]},"
                      "{\"timestamp\":2000,\"request_inputs\":{\"text_input\":\"x\"},\"response_timestamps\":[],"
                      "\"response_outputs\":[]}],\"window_boundaries\":[]}],"
                      "\"version\":\"\",\"service_kind\":\"triton\",\"endpoint\":\"\"}";
    r = load_text_ok(trt, TT_BENCH_AUTO);
    assert_int_equal(r.format, TT_BENCH_GENAI_PERF);
    assert_int_equal(r.n_reqs, 2);
    assert_int_equal(r.reqs[0].ttft_ns, 500);
    assert_int_equal(r.reqs[0].e2el_ns, 800);
    assert_itl(&r.reqs[0], (const int64_t[]){200, 100}, 2);
    assert_int_equal(r.reqs[0].text_len, 3);
    assert_true(r.reqs[0].text_hash == 0xe71fa2190541574bull); /* "abc" */
    assert_false(r.reqs[1].success);
    assert_string_equal(r.reqs[1].error, "no response");
    tt_bench_result_free(&r);
    char err[256] = "";
    const char *no_text = "{\"service_kind\":\"triton\",\"endpoint\":\"\",\"experiments\":[{\"requests\":["
                          "{\"timestamp\":1,\"response_timestamps\":[2,3],"
                          "\"response_outputs\":[{\"text_output\":\"a\"},{\"output_ids\":[4]}]}]}]}";
    assert_int_equal(tt_bench_load_mem(no_text, strlen(no_text), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "requests[0].response_outputs[1]: no \"text_output\" string"));
    const char *not_string = "{\"service_kind\":\"triton\",\"endpoint\":\"\",\"experiments\":[{\"requests\":["
                             "{\"timestamp\":1,\"response_timestamps\":[2],\"response_outputs\":[{\"text_output\":7}]}]}]}";
    assert_int_equal(tt_bench_load_mem(not_string, strlen(not_string), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no \"text_output\" string"));
    const char *no_outs = "{\"service_kind\":\"triton\",\"endpoint\":\"\",\"experiments\":[{\"requests\":["
                          "{\"timestamp\":1,\"response_timestamps\":[2]}]}]}";
    assert_int_equal(tt_bench_load_mem(no_outs, strlen(no_outs), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no response_outputs (genai-perf reads them for service_kind triton)"));
}

static void test_genai_perf_response_kinds(void **state)
{
    /* only role and empty content: genai-perf leaves the request out */
    tt_bench_result r = load_text_ok(
        "{\"service_kind\":\"openai\",\"endpoint\":\"v1/chat/completions\",\"experiments\":[{"
        "\"requests\":[{\"timestamp\":1000,\"response_timestamps\":[2000,3000],"
        "\"response_outputs\":[{\"response\":\"data: {\\\"object\\\":\\\"chat.completion.chunk\\\","
        "\\\"choices\\\":[{\\\"delta\\\":{\\\"content\\\":\\\"\\\"}}]}\\n\\n\"},"
        "{\"response\":\"data: [DONE]\\n\\n\"}]}]}]}",
        TT_BENCH_AUTO);
    assert_int_equal(r.n_reqs, 1);
    assert_false(r.reqs[0].success);
    assert_non_null(strstr(r.reqs[0].error, "genai-perf leaves it out"));
    assert_true(r.reqs[0].ttft_ns == TT_BENCH_NONE);
    tt_bench_result_free(&r);
    /* completions (text, no "object" as older vLLM sends) and a non-streamed chat body */
    r = load_text_ok(
        "{\"service_kind\":\"openai\",\"endpoint\":\"v1/completions\",\"experiments\":[{"
        "\"requests\":[{\"timestamp\":1000,\"response_timestamps\":[2000,3500],"
        "\"response_outputs\":[{\"response\":\"data:{\\\"choices\\\":[{\\\"text\\\":\\\"x\\\"}]}\"},"
        "{\"response\":\"data: {\\\"object\\\":\\\"text_completion\\\",\\\"choices\\\":[{\\\"text\\\":\\\"y\\\"}]}\"}]},"
        "{\"timestamp\":5000,\"response_timestamps\":[9000],\"response_outputs\":[{\"response\":"
        "\"{\\\"object\\\":\\\"chat.completion\\\",\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":\\\"xy\\\"}}]}\"}]}]}]}",
        TT_BENCH_GENAI_PERF);
    assert_int_equal(r.n_reqs, 2);
    assert_int_equal(r.reqs[0].ttft_ns, 1000);
    assert_int_equal(r.reqs[0].e2el_ns, 2500);
    assert_itl(&r.reqs[0], (const int64_t[]){1500}, 1);
    assert_true(r.reqs[0].text_hash == 0x8f14f07b58deb1aull); /* "xy" */
    assert_int_equal(r.reqs[1].ttft_ns, 4000);
    assert_true(r.reqs[1].text_hash == 0x8f14f07b58deb1aull);
    tt_bench_result_free(&r);
    /* an error body fails the request; Triton's responses all count */
    r = load_text_ok(
        "{\"service_kind\":\"openai\",\"endpoint\":\"v1/chat/completions\",\"experiments\":[{"
        "\"requests\":[{\"timestamp\":1000,\"response_timestamps\":[2000],"
        "\"response_outputs\":[{\"response\":\"data: {\\\"error\\\":{\\\"message\\\":\\\"overloaded\\\"}}\"}]}]}]}",
        TT_BENCH_GENAI_PERF);
    assert_false(r.reqs[0].success);
    assert_non_null(strstr(r.reqs[0].error, "overloaded"));
    tt_bench_result_free(&r);
    r = load_text_ok(
        "{\"service_kind\":\"triton_c_api\",\"endpoint\":\"\",\"experiments\":[{"
        "\"requests\":[{\"timestamp\":1000,\"response_timestamps\":[2000,2100,2300],"
        "\"response_outputs\":[{\"output_ids\":[5,6]},{\"output_ids\":7},{\"output_ids\":null}]}]}]}",
        TT_BENCH_GENAI_PERF);
    assert_int_equal(r.reqs[0].ttft_ns, 1000);
    assert_int_equal(r.reqs[0].e2el_ns, 1300);
    assert_itl(&r.reqs[0], (const int64_t[]){100, 200}, 2);
    assert_int_equal(r.reqs[0].output_tokens, 4);
    tt_bench_result_free(&r);
    char err[256] = "";
    const char *nojson = "{\"service_kind\":\"openai\",\"endpoint\":\"v1/completions\",\"experiments\":[{"
                         "\"requests\":[{\"timestamp\":1,\"response_timestamps\":[2],"
                         "\"response_outputs\":[{\"response\":\"data: {oops\"}]}]}]}";
    assert_int_equal(tt_bench_load_mem(nojson, strlen(nojson), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "response_outputs[0]: data is not JSON"));
    /* two CRLF-separated events in one response: genai-perf splits on "\n\n" only */
    const char *crlf = "{\"service_kind\":\"openai\",\"endpoint\":\"v1/completions\",\"experiments\":[{"
                       "\"requests\":[{\"timestamp\":1,\"response_timestamps\":[2],\"response_outputs\":[{"
                       "\"response\":\"data: {\\\"choices\\\":[{\\\"text\\\":\\\"a\\\"}]}\\r\\n\\r\\n"
                       "data: {\\\"choices\\\":[{\\\"text\\\":\\\"b\\\"}]}\\r\\n\\r\\n\"}]}]}]}";
    assert_int_equal(tt_bench_load_mem(crlf, strlen(crlf), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "data is not JSON"));
    const char *nokind = "{\"experiments\":[{\"requests\":[{\"timestamp\":1,\"response_timestamps\":[]}]}]}";
    assert_int_equal(tt_bench_load_mem(nokind, strlen(nokind), TT_BENCH_GENAI_PERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "service_kind"));
}

static void test_sglang(void **state)
{
    tt_bench_result r = load_ok("sglang_output_details.jsonl", TT_BENCH_SGLANG);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_int_equal(q[0].ttft_ns, 30125000);
    assert_itl(&q[0], (const int64_t[]){10000000, 10500000, 9500000}, 3);
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_NONE);
    assert_true(q[0].text_hash == 0xfc179f83ee0724ddull);
    assert_false(q[1].success);
    assert_string_equal(q[1].error, "Traceback: ClientConnectorError");
    assert_int_equal(q[2].index, 2);
    assert_int_equal(q[2].ttft_ns, 40500000);
    assert_int_equal(q[2].output_tokens, 2);
    assert_true(q[2].text_hash == 0x8f14f07b58deb1aull);
    tt_bench_result_free(&r);
}

static void test_guidellm(void **state)
{
    tt_bench_result r = load_ok("guidellm_benchmarks.json", TT_BENCH_GUIDELLM);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_string_equal(q[0].request_id, "5a1e0c0a-1111-4d2e-9c3b-000000000001");
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_WALL);
    assert_int_equal(q[0].start_ns, 1749651753250000000LL);
    assert_int_equal(q[0].ttft_ns, 52500000);
    assert_int_equal(q[0].e2el_ns, 312500000);
    assert_int_equal(q[0].output_tokens, 16);
    assert_int_equal(q[0].input_tokens, 256);
    assert_true(q[0].text_hash == 0x2374316b9b449782ull);
    assert_int_equal(q[1].start_ns, 1749651753500000000LL);
    assert_false(q[2].success);
    assert_non_null(strstr(q[2].error, "503"));
    assert_int_equal(q[2].start_ns, 1749651753750000000LL);
    assert_true(q[2].ttft_ns == TT_BENCH_NONE);
    assert_int_equal(q[2].text_len, -1);
    tt_bench_result_free(&r);
}

static void test_llmperf(void **state)
{
    tt_bench_result r = load_ok("llmperf_individual_responses.json", TT_BENCH_LLMPERF);
    assert_int_equal(r.n_reqs, 3);
    const tt_bench_request *q = r.reqs;
    assert_int_equal(q[0].ttft_ns, 605515584);
    assert_int_equal(q[0].e2el_ns, 7453143953LL);
    assert_int_equal(q[0].output_tokens, 160);
    assert_int_equal(q[0].input_tokens, 550);
    assert_int_equal(q[0].start_clock, TT_BENCH_CLOCK_NONE);
    assert_int_equal(q[0].n_itl, 0);
    assert_int_equal(q[1].e2el_ns, 7442206754LL);
    assert_false(q[2].success);
    assert_string_equal(q[2].error, "500: Internal Server Error");
    assert_true(q[2].ttft_ns == TT_BENCH_NONE);
    tt_bench_result_free(&r);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 4096 > cap) {
            cap = cap * 2 + 4096;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t n = fread(buf + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0) break;
    }
    fclose(f);
    return buf;
}

static const struct {
    const char *file;
    tt_bench_format fmt;
    size_t n;
} good[] = {
    {"vllm_detailed.json", TT_BENCH_VLLM, 3},
    {"vllm_v0.json", TT_BENCH_VLLM, 2},
    {"aiperf_profile_export.jsonl", TT_BENCH_AIPERF, 3},
    {"genai_perf_profile_export.json", TT_BENCH_GENAI_PERF, 3},
    {"genai_perf_triton_export.json", TT_BENCH_GENAI_PERF, 3},
    {"sglang_output_details.jsonl", TT_BENCH_SGLANG, 3},
    {"guidellm_benchmarks.json", TT_BENCH_GUIDELLM, 3},
    {"llmperf_individual_responses.json", TT_BENCH_LLMPERF, 3},
};

static void test_autodetect(void **state)
{
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        tt_bench_result r = load_ok(good[i].file, TT_BENCH_AUTO);
        assert_int_equal(r.format, good[i].fmt);
        assert_int_equal(r.n_reqs, good[i].n);
        tt_bench_result_free(&r);
        char path[256], err[256] = "";
        snprintf(path, sizeof path, DATA "%s", good[i].file);
        size_t len;
        char *data = read_all(path, &len);
        assert_int_equal(tt_bench_detect_mem(data, len, err, sizeof err), good[i].fmt);
        free(data);
    }
}

static void test_guard_page_and_wrong_format(void **state)
{
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char path[256], err[256] = "";
        snprintf(path, sizeof path, DATA "%s", good[i].file);
        size_t len;
        char *data = read_all(path, &len);
        uint8_t *g = tt_guard_copy(data, len);
        tt_bench_result r;
        assert_int_equal(tt_bench_load_mem((const char *)g, len, TT_BENCH_AUTO, &r, err, sizeof err), 0);
        assert_int_equal(r.n_reqs, good[i].n);
        assert_null(r.path);
        tt_bench_result_free(&r);
        for (size_t k = 1; k < len; k += 7) { /* truncated copies never overrun */
            if (tt_bench_load_mem((const char *)g + len - k, k, TT_BENCH_AUTO, &r, err, sizeof err) == 0)
                tt_bench_result_free(&r);
        }
        /* read as another tool's file: a clear error, never a result */
        for (int f = TT_BENCH_VLLM; f < TT_BENCH_FORMAT_COUNT; f++) {
            if (f == (int)good[i].fmt) continue;
            int rc = tt_bench_load_mem((const char *)g, len, (tt_bench_format)f, &r, err, sizeof err);
            if (rc == 0) {
                fprintf(stderr, "%s loaded as %s\n", good[i].file, tt_bench_format_name(f));
                tt_bench_result_free(&r);
            }
            assert_int_equal(rc, -1);
            assert_true(err[0] != '\0');
        }
        tt_guard_free(g, len);
        free(data);
    }
}

static void test_broken_files(void **state)
{
    static const struct {
        const char *file;
        tt_bench_format fmt;
        const char *reason;
    } bad[] = {
        {"vllm_bad_notjson.json", TT_BENCH_VLLM, "not a JSON document"},
        {"vllm_bad_type.json", TT_BENCH_VLLM, "ttfts[1]: not a number"},
        {"vllm_bad_lengths.json", TT_BENCH_VLLM, "arrays of different lengths"},
        {"vllm_bad_negative.json", TT_BENCH_VLLM, "ttfts[1]: negative"},
        {"vllm_bad_nodetail.json", TT_BENCH_VLLM, "--save-detailed"},
        {"aiperf_bad_unit.jsonl", TT_BENCH_AIPERF, "no time unit"},
        {"aiperf_bad_nostart.jsonl", TT_BENCH_AIPERF, "request_start_ns"},
        {"genai_perf_bad_order.json", TT_BENCH_GENAI_PERF, "earlier than the one before"},
        {"genai_perf_bad_splinter.json", TT_BENCH_GENAI_PERF, "split SSE event"},
        {"sglang_bad_lengths.jsonl", TT_BENCH_SGLANG, "different lengths"},
        {"guidellm_bad_type.json", TT_BENCH_GUIDELLM, "request_latency[1]: not a number"},
        {"llmperf_bad_type.json", TT_BENCH_LLMPERF, "ttft_s[1]: not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, DATA "%s", bad[i].file);
        for (int pass = 0; pass < 2; pass++) {
            tt_bench_format fmt = pass == 0 ? bad[i].fmt : TT_BENCH_AUTO;
            char err[256] = "";
            tt_bench_result r;
            memset(&r, 0x5a, sizeof r);
            int rc = tt_bench_load(path, fmt, &r, err, sizeof err);
            if (rc == 0) tt_bench_result_free(&r);
            assert_int_equal(rc, -1);
            assert_int_equal(r.n_reqs, 0);
            assert_null(r.reqs);
            assert_null(strchr(err, '\n'));
            assert_non_null(strstr(err, bad[i].file));
            if (pass == 0 && !strstr(err, bad[i].reason)) {
                fprintf(stderr, "%s: got \"%s\", want \"%s\"\n", bad[i].file, err, bad[i].reason);
                fail();
            }
        }
    }
    char err[256] = "";
    tt_bench_result r;
    assert_int_equal(tt_bench_load(DATA "no_such_file.json", TT_BENCH_AUTO, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(tt_bench_load_mem("", 0, TT_BENCH_AUTO, &r, err, sizeof err), -1);
    assert_int_equal(tt_bench_load_mem("[]", 2, TT_BENCH_LLMPERF, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(tt_bench_load_mem("{\"ttfts\": [0.1]} x", 18, TT_BENCH_VLLM, &r, err, sizeof err), -1);
    /* Python's json.dumps writes NaN: a summary field may be NaN, a
     * per-request one may not */
    const char *nan_summary = "{\"date\": \"x\", \"std_ttft_ms\": NaN, \"ttfts\": [0.5], \"errors\": [\"\"]}";
    assert_int_equal(tt_bench_load_mem(nan_summary, strlen(nan_summary), TT_BENCH_AUTO, &r, err, sizeof err), 0);
    assert_int_equal(r.reqs[0].ttft_ns, 500000000);
    tt_bench_result_free(&r);
    const char *nan_ttft = "{\"date\": \"x\", \"ttfts\": [NaN], \"errors\": [\"\"]}";
    assert_int_equal(tt_bench_load_mem(nan_ttft, strlen(nan_ttft), TT_BENCH_VLLM, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "ttfts[0]: not a number"));
    /* an integer too long for a double stays exact; one past int64 is refused */
    const char *huge = "{\"metadata\":{\"request_start_ns\":99999999999999999999},\"error\":null}";
    assert_int_equal(tt_bench_load_mem(huge, strlen(huge), TT_BENCH_AUTO, &r, err, sizeof err), -1);
}

static void test_names(void **state)
{
    for (int f = 0; f < TT_BENCH_FORMAT_COUNT; f++)
        assert_int_equal(tt_bench_format_parse(tt_bench_format_name((tt_bench_format)f)), f);
    assert_string_equal(tt_bench_format_name(TT_BENCH_GENAI_PERF), "genai-perf");
    assert_int_equal(tt_bench_format_parse("vLLM"), -1);
    assert_int_equal(tt_bench_format_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_detailed),
        cmocka_unit_test(test_vllm_older_version),
        cmocka_unit_test(test_aiperf),
        cmocka_unit_test(test_genai_perf),
        cmocka_unit_test(test_genai_perf_triton),
        cmocka_unit_test(test_genai_perf_triton_edges),
        cmocka_unit_test(test_genai_perf_response_kinds),
        cmocka_unit_test(test_sglang),
        cmocka_unit_test(test_guidellm),
        cmocka_unit_test(test_llmperf),
        cmocka_unit_test(test_autodetect),
        cmocka_unit_test(test_guard_page_and_wrong_format),
        cmocka_unit_test(test_broken_files),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
