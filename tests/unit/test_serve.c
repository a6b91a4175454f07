/* test_serve.c - tokentap serve's pure parts: request parsing and output
 * length rules per profile, the event plan, exact frame bytes, delay
 * distributions, the due-instant heap and JSON string escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "golden.h"
#include "core/sbuf.h"
#include "serve/serve_metrics.h"
#include "serve/serve_profile.h"
#include "serve/serve_sched.h"

static const tt_serve_gen_opts opts = {.default_tokens = 16, .tokens_max = 100, .eos_after = 0,
                                       .model = "served", .created = 1700000000};

static int parse(const char *prof, tt_serve_api api, const char *json, const tt_serve_gen_opts *o,
                 tt_serve_request *req, char *err)
{
    uint8_t *g = tt_guard_copy(json, strlen(json));
    int rc = tt_serve_request_parse(tt_serve_profile_find(prof), api, (const char *)g, strlen(json), o,
                                    "rid", 0x1234, 5, req, err, 200);
    tt_guard_free(g, strlen(json));
    return rc;
}

static void test_parse_lengths(void **state)
{
    tt_serve_request r;
    char err[200];
    assert_int_equal(parse("vllm", TT_API_CHAT, "{\"messages\":[]}", &opts, &r, err), 0);
    assert_int_equal(r.n_tokens, 16);
    assert_false(r.stream);
    assert_int_equal(parse("vllm", TT_API_CHAT, "{\"messages\":[],\"max_tokens\":5,\"max_completion_tokens\":7}", &opts, &r, err), 0);
    assert_int_equal(r.n_tokens, 7);
    assert_int_equal(parse("vllm", TT_API_COMPLETIONS, "{\"prompt\":\"abcdefgh\",\"max_tokens\":500}", &opts, &r, err), 0);
    assert_int_equal(r.n_tokens, 100); /* capped by tokens_max */
    assert_int_equal(r.prompt_tokens, 2);
    assert_string_equal(r.id, "cmpl-rid");
    assert_string_equal(r.finish_reason, "length");

    tt_serve_gen_opts eos = opts;
    eos.eos_after = 4;
    const char *body = "{\"messages\":[],\"max_tokens\":10,\"ignore_eos\":true}";
    assert_int_equal(parse("vllm", TT_API_CHAT, body, &eos, &r, err), 0);
    assert_int_equal(r.n_tokens, 10); /* vLLM honours ignore_eos */
    assert_int_equal(parse("tabby", TT_API_CHAT, body, &eos, &r, err), 0);
    assert_int_equal(r.n_tokens, 4); /* TabbyAPI drops it */
    assert_string_equal(r.finish_reason, "stop");
    assert_int_equal(parse("tabby", TT_API_CHAT, "{\"messages\":[],\"max_tokens\":10,\"ignore_eos\":true,\"min_tokens\":6}", &eos, &r, err), 0);
    assert_int_equal(r.n_tokens, 6); /* ... but honours min_tokens */
}

static void test_parse_errors(void **state)
{
    tt_serve_request r;
    char err[200];
    static const char *const bad[] = {
        "", "{", "[]", "{\"messages\":[]} x", "{\"messages\":{}}", "{}", "{\"messages\":[],\"stream\":1}",
        "{\"messages\":[],\"max_tokens\":0}", "{\"messages\":[],\"max_tokens\":1.5}",
        "{\"messages\":[],\"stream_options\":3}", "{\"messages\":[1]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse("vllm", TT_API_CHAT, bad[i], &opts, &r, err), -1);
        assert_true(err[0] != 0);
    }
    assert_int_equal(parse("vllm", TT_API_COMPLETIONS, "{\"messages\":[]}", &opts, &r, err), -1);
}

static tt_sbuf render(const char *prof, tt_serve_api api, const char *json)
{
    tt_serve_request r;
    char err[200];
    assert_int_equal(parse(prof, api, json, &opts, &r, err), 0);
    tt_serve_event plan[32];
    assert_true(tt_serve_plan_cap(&r) <= 32);
    size_t n = tt_serve_plan(tt_serve_profile_find(prof), &r, plan);
    tt_sbuf out = {0};
    for (size_t i = 0; i < n; i++) tt_serve_frame(tt_serve_profile_find(prof), &r, &plan[i], &out);
    tt_sbuf_put(&out, "", 1);
    return out;
}

static void test_frames_vllm(void **state)
{
    tt_sbuf s = render("vllm", TT_API_CHAT, "{\"model\":\"m\",\"stream\":true,\"max_tokens\":1,\"messages\":[],"
                                            "\"stream_options\":{\"include_usage\":true}}");
    assert_string_equal(s.p,
        "data: {\"id\":\"chatcmpl-rid\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        "data: {\"id\":\"chatcmpl-rid\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n"
        "data: {\"id\":\"chatcmpl-rid\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"total_tokens\":2,\"completion_tokens\":1}}\n\n"
        "data: [DONE]\n\n");
    tt_sbuf_free(&s);
}

static void test_frames_tabby(void **state)
{
    tt_sbuf s = render("tabby", TT_API_CHAT, "{\"model\":\"m\",\"stream\":true,\"max_tokens\":2,\"messages\":[],"
                                             "\"stream_options\":{\"include_usage\":true}}");
    assert_string_equal(s.p,
        "data: {\"id\": \"chatcmpl-00000000000012345182308c5b4fd169\", \"object\": \"chat.completion.chunk\", \"created\": 1700000000, \"choices\": [{\"index\": 0, \"delta\": {\"content\": \" the\"}, \"finish_reason\": null}], \"model\": \"served\"}\r\n\r\n"
        "data: {\"id\": \"chatcmpl-00000000000012345182308c5b4fd169\", \"object\": \"chat.completion.chunk\", \"created\": 1700000000, \"choices\": [{\"index\": 0, \"delta\": {\"content\": \" quick\"}, \"finish_reason\": null}], \"model\": \"served\"}\r\n\r\n"
        "data: {\"id\": \"chatcmpl-00000000000012345182308c5b4fd169\", \"object\": \"chat.completion.chunk\", \"created\": 1700000000, \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"length\"}], \"usage\": {\"prompt_tokens\": 1, \"completion_tokens\": 2, \"total_tokens\": 3}, \"model\": \"served\"}\r\n\r\n"
        "data: [DONE]\r\n\r\n");
    tt_sbuf_free(&s);
    /* without include_usage the last token carries the finish reason */
    s = render("tabby", TT_API_CHAT, "{\"stream\":true,\"max_tokens\":1,\"messages\":[]}");
    assert_non_null(strstr(s.p, "{\"content\": \" the\"}, \"finish_reason\": \"length\"}]"));
    assert_null(strstr(s.p, "usage"));
    tt_sbuf_free(&s);
}

#define RESP_ID "resp_00000000000012345182308c5b4fd169"
#define ITEM_ID "msg_a5a5a5a5a5a5b79180dfefbe96f935c8"

static void test_frames_responses(void **state)
{
    tt_sbuf s = render("responses", TT_API_RESPONSES, "{\"model\":\"m\",\"stream\":true,\"max_output_tokens\":2,\"input\":\"hello\"}");
    assert_string_equal(s.p,
        "event: response.created\ndata: {\"response\":{\"id\":\"" RESP_ID "\",\"created_at\":1700000000,\"incomplete_details\":null,\"model\":\"m\",\"object\":\"response\",\"output\":[],\"status\":\"in_progress\",\"usage\":null},\"sequence_number\":0,\"type\":\"response.created\"}\n\n"
        "event: response.in_progress\ndata: {\"response\":{\"id\":\"" RESP_ID "\",\"created_at\":1700000000,\"incomplete_details\":null,\"model\":\"m\",\"object\":\"response\",\"output\":[],\"status\":\"in_progress\",\"usage\":null},\"sequence_number\":1,\"type\":\"response.in_progress\"}\n\n"
        "event: response.output_item.added\ndata: {\"item\":{\"id\":\"" ITEM_ID "\",\"content\":[],\"role\":\"assistant\",\"status\":\"in_progress\",\"type\":\"message\"},\"output_index\":0,\"sequence_number\":2,\"type\":\"response.output_item.added\"}\n\n"
        "event: response.content_part.added\ndata: {\"content_index\":0,\"item_id\":\"" ITEM_ID "\",\"output_index\":0,\"part\":{\"annotations\":[],\"text\":\"\",\"type\":\"output_text\",\"logprobs\":[]},\"sequence_number\":3,\"type\":\"response.content_part.added\"}\n\n"
        "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\" the\",\"item_id\":\"" ITEM_ID "\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":4,\"type\":\"response.output_text.delta\"}\n\n"
        "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\" quick\",\"item_id\":\"" ITEM_ID "\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":5,\"type\":\"response.output_text.delta\"}\n\n"
        "event: response.output_text.done\ndata: {\"content_index\":0,\"item_id\":\"" ITEM_ID "\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":6,\"text\":\" the quick\",\"type\":\"response.output_text.done\"}\n\n"
        "event: response.content_part.done\ndata: {\"content_index\":0,\"item_id\":\"" ITEM_ID "\",\"output_index\":0,\"part\":{\"annotations\":[],\"text\":\" the quick\",\"type\":\"output_text\",\"logprobs\":null},\"sequence_number\":7,\"type\":\"response.content_part.done\"}\n\n"
        "event: response.output_item.done\ndata: {\"item\":{\"id\":\"" ITEM_ID "\",\"content\":[{\"annotations\":[],\"text\":\" the quick\",\"type\":\"output_text\",\"logprobs\":null}],\"role\":\"assistant\",\"status\":\"completed\",\"type\":\"message\"},\"output_index\":0,\"sequence_number\":8,\"type\":\"response.output_item.done\"}\n\n"
        "event: response.completed\ndata: {\"response\":{\"id\":\"" RESP_ID "\",\"created_at\":1700000000,\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"model\":\"m\",\"object\":\"response\",\"output\":[{\"id\":\"" ITEM_ID "\",\"content\":[{\"annotations\":[],\"text\":\" the quick\",\"type\":\"output_text\",\"logprobs\":null}],\"role\":\"assistant\",\"status\":\"completed\",\"type\":\"message\"}],\"status\":\"incomplete\",\"usage\":{\"input_tokens\":1,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":3}},\"sequence_number\":9,\"type\":\"response.completed\"}\n\n");
    tt_sbuf_free(&s);
    /* ended by the model itself: completed, no incomplete_details */
    tt_serve_gen_opts eos = opts;
    eos.eos_after = 1;
    tt_serve_request r;
    char err[200];
    assert_int_equal(parse("responses", TT_API_RESPONSES, "{\"input\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}],\"max_output_tokens\":5}", &eos, &r, err), 0);
    assert_int_equal(r.n_tokens, 1);
    assert_int_equal(r.prompt_tokens, 2);
    tt_serve_event done = {TT_SEV_DONE, 0};
    s = (tt_sbuf){0};
    tt_serve_frame(tt_serve_profile_find("responses"), &r, &done, &s);
    tt_sbuf_put(&s, "", 1);
    assert_non_null(strstr(s.p, "\"incomplete_details\":null"));
    assert_non_null(strstr(s.p, "\"status\":\"completed\""));
    assert_non_null(strstr(s.p, "\"sequence_number\":8,"));
    tt_sbuf_free(&s);
}

static void test_frames_anthropic(void **state)
{
    tt_sbuf s = render("anthropic", TT_API_MESSAGES, "{\"model\":\"m\",\"stream\":true,\"max_tokens\":2,\"system\":\"abcd\",\"messages\":[{\"role\":\"user\",\"content\":\"efgh\"}]}");
    assert_string_equal(s.p,
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_00000000000012345182308c5b4fd169\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":2,\"output_tokens\":1}}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: ping\ndata: {\"type\": \"ping\"}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" quick\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    tt_sbuf_free(&s);
}

static void test_frames_tgi(void **state)
{
    tt_sbuf s = render("tgi", TT_API_TGI_STREAM, "{\"inputs\":\"abcdefgh\",\"parameters\":{\"max_new_tokens\":2,\"details\":true}}");
    assert_string_equal(s.p,
        "data:{\"index\":0,\"token\":{\"id\":1000,\"text\":\" the\",\"logprob\":-0.25,\"special\":false},\"generated_text\":null,\"details\":null}\n\n"
        "data:{\"index\":1,\"token\":{\"id\":1001,\"text\":\" quick\",\"logprob\":-0.25,\"special\":false},\"generated_text\":\" the quick\",\"details\":{\"finish_reason\":\"length\",\"generated_tokens\":2,\"seed\":null,\"input_length\":2}}\n\n");
    tt_sbuf_free(&s);
    s = render("tgi", TT_API_TGI_STREAM, "{\"inputs\":\"x\",\"parameters\":{\"max_new_tokens\":1}}");
    assert_string_equal(s.p, "data:{\"index\":0,\"token\":{\"id\":1000,\"text\":\" the\",\"logprob\":-0.25,\"special\":false},\"generated_text\":\" the\",\"details\":null}\n\n");
    tt_sbuf_free(&s);
}

static void test_frames_llamacpp(void **state)
{
    tt_sbuf s = render("llamacpp", TT_API_LLAMACPP, "{\"prompt\":\"abcdefgh\",\"n_predict\":2,\"stream\":true}");
    assert_string_equal(s.p,
        "data: {\"index\":0,\"content\":\" the\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":1,\"tokens_evaluated\":2}\n\n"
        "data: {\"index\":0,\"content\":\" quick\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":2,\"tokens_evaluated\":2}\n\n"
        "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":\"served\",\"tokens_predicted\":2,\"tokens_evaluated\":2,\"prompt\":\"\",\"has_new_line\":false,\"truncated\":false,\"stop_type\":\"limit\",\"stopping_word\":\"\",\"tokens_cached\":4,"
        "\"timings\":{\"prompt_n\":2,\"prompt_ms\":0.000,\"prompt_per_token_ms\":0.000,\"prompt_per_second\":0.000,\"predicted_n\":2,\"predicted_ms\":0.000,\"predicted_per_token_ms\":0.000,\"predicted_per_second\":0.000}}\n\n");
    tt_sbuf_free(&s);
}

static void test_frames_ollama(void **state)
{
    tt_sbuf s = render("ollama", TT_API_OLLAMA_GENERATE, "{\"model\":\"m\",\"prompt\":\"abcdefgh\",\"options\":{\"num_predict\":2}}");
    assert_string_equal(s.p,
        "{\"model\":\"m\",\"created_at\":\"2023-11-14T22:13:20Z\",\"response\":\" the\",\"done\":false}\n"
        "{\"model\":\"m\",\"created_at\":\"2023-11-14T22:13:20Z\",\"response\":\" quick\",\"done\":false}\n"
        "{\"model\":\"m\",\"created_at\":\"2023-11-14T22:13:20Z\",\"response\":\"\",\"done\":true,\"done_reason\":\"length\",\"prompt_eval_count\":2,\"eval_count\":2}\n");
    tt_sbuf_free(&s);
    /* chat; durations appear once the server has set them */
    tt_serve_request r;
    char err[200];
    assert_int_equal(parse("ollama", TT_API_OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[],\"options\":{\"num_predict\":1}}", &opts, &r, err), 0);
    assert_true(r.stream); /* Ollama streams unless told not to */
    r.first_token_ns = 5000;
    r.elapsed_ns = 9000;
    tt_serve_event ev[2] = {{TT_SEV_TOKEN, 0}, {TT_SEV_DONE, 0}};
    s = (tt_sbuf){0};
    for (int i = 0; i < 2; i++) tt_serve_frame(tt_serve_profile_find("ollama"), &r, &ev[i], &s);
    tt_sbuf_put(&s, "", 1);
    assert_string_equal(s.p,
        "{\"model\":\"m\",\"created_at\":\"2023-11-14T22:13:20Z\",\"message\":{\"role\":\"assistant\",\"content\":\" the\"},\"done\":false}\n"
        "{\"model\":\"m\",\"created_at\":\"2023-11-14T22:13:20Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"length\",\"done\":true,\"total_duration\":9000,\"prompt_eval_count\":1,\"prompt_eval_duration\":5000,\"eval_count\":1,\"eval_duration\":4000}\n");
    tt_sbuf_free(&s);
}

static void test_native_parse(void **state)
{
    tt_serve_request r;
    char err[200];
    assert_int_equal(parse("tgi", TT_API_TGI_STREAM, "{\"inputs\":\"x\",\"stream\":false}", &opts, &r, err), 0);
    assert_true(r.stream); /* /generate_stream always streams */
    assert_int_equal(r.n_tokens, 16);
    assert_int_equal(parse("tgi", TT_API_TGI_GENERATE, "{\"inputs\":\"x\",\"stream\":true}", &opts, &r, err), 0);
    assert_false(r.stream);
    assert_int_equal(parse("llamacpp", TT_API_LLAMACPP, "{\"prompt\":\"x\",\"n_predict\":-1}", &opts, &r, err), 0);
    assert_int_equal(r.n_tokens, 16); /* -1: no limit of its own */
    assert_false(r.stream);
    assert_int_equal(parse("ollama", TT_API_OLLAMA_GENERATE, "{\"model\":\"m\",\"stream\":false}", &opts, &r, err), 0);
    assert_false(r.stream);
    tt_serve_gen_opts eos = opts;
    eos.eos_after = 3;
    assert_int_equal(parse("llamacpp", TT_API_LLAMACPP, "{\"prompt\":\"x\",\"n_predict\":9,\"ignore_eos\":true}", &eos, &r, err), 0);
    assert_int_equal(r.n_tokens, 9); /* llama.cpp honours ignore_eos */
    static const struct { const char *prof; tt_serve_api api; const char *body; } bad[] = {
        {"anthropic", TT_API_MESSAGES, "{\"messages\":[]}"}, /* max_tokens is required */
        {"anthropic", TT_API_MESSAGES, "{\"max_tokens\":3}"},
        {"responses", TT_API_RESPONSES, "{\"input\":3}"},
        {"tgi", TT_API_TGI_STREAM, "{\"parameters\":{}}"},
        {"tgi", TT_API_TGI_STREAM, "{\"inputs\":\"x\",\"parameters\":[]}"},
        {"tgi", TT_API_TGI_STREAM, "{\"inputs\":\"x\",\"parameters\":{\"max_new_tokens\":0}}"},
        {"llamacpp", TT_API_LLAMACPP, "{\"prompt\":\"x\",\"n_predict\":-3}"},
        {"llamacpp", TT_API_LLAMACPP, "{\"n_predict\":3}"},
        {"ollama", TT_API_OLLAMA_CHAT, "{\"messages\":[],\"options\":{\"num_predict\":\"3\"}}"},
        {"ollama", TT_API_OLLAMA_GENERATE, "{\"options\":4}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse(bad[i].prof, bad[i].api, bad[i].body, &opts, &r, err), -1);
        assert_true(err[0] != 0);
    }
}

static void test_route(void **state)
{
    tt_serve_api api;
    const tt_serve_profile *tgi = tt_serve_profile_find("tgi"), *vllm = tt_serve_profile_find("vllm");
    assert_int_equal(tt_serve_route(tgi, "/generate_stream", &api), 1);
    assert_int_equal(api, TT_API_TGI_STREAM);
    assert_int_equal(tt_serve_route(tgi, "/generate", &api), 1);
    assert_int_equal(api, TT_API_TGI_GENERATE);
    assert_int_equal(tt_serve_route(tgi, "/v1/chat/completions", &api), -1);
    assert_int_equal(tt_serve_route(vllm, "/v1/chat/completions", &api), 1);
    assert_int_equal(tt_serve_route(vllm, "/api/chat", &api), -1);
    assert_int_equal(tt_serve_route(vllm, "/nope", &api), 0);
    for (int a = 0; a < TT_API_COUNT; a++) {
        int served = 0;
        static const char *const names[] = {"vllm", "tabby", "responses", "anthropic", "tgi", "llamacpp", "ollama",
                                            "triton-grpc"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            served += tt_serve_route(tt_serve_profile_find(names[i]), tt_serve_api_path((tt_serve_api)a), &api) == 1;
        assert_true(served >= 1); /* every endpoint has a profile */
    }
}

static void test_metrics_text(void **state)
{
    tt_serve_metrics m;
    tt_serve_metrics_init(&m);
    tt_serve_hist_observe(&m.ttft, 3000000);   /* 3 ms: le 0.005 */
    tt_serve_hist_observe(&m.ttft, 50000000);  /* 50 ms: le 0.06 */
    tt_serve_hist_observe(&m.ttft, 3000000000000ull); /* beyond every bound: +Inf only */
    tt_sbuf s = {0};
    tt_serve_metrics_render(&m, "a\"b", &s);
    tt_sbuf_put(&s, "", 1);
    assert_non_null(strstr(s.p, "# TYPE vllm:time_to_first_token_seconds histogram\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"a\\\"b\"} 0\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_bucket{le=\"0.005\",model_name=\"a\\\"b\"} 1\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_bucket{le=\"0.06\",model_name=\"a\\\"b\"} 2\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_bucket{le=\"2560\",model_name=\"a\\\"b\"} 2\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"a\\\"b\"} 3\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_count{model_name=\"a\\\"b\"} 3\n"));
    assert_non_null(strstr(s.p, "vllm:time_to_first_token_seconds_sum{model_name=\"a\\\"b\"} 3000.053000000\n"));
    assert_non_null(strstr(s.p, "vllm:inter_token_latency_seconds_count{model_name=\"a\\\"b\"} 0\n"));
    tt_sbuf_free(&s);
}

static void test_dist(void **state)
{
    tt_dist d;
    char err[128];
    assert_int_equal(tt_dist_parse("12.5", &d, err, sizeof err), 0);
    assert_int_equal(d.kind, TT_DIST_FIXED);
    assert_int_equal(d.a_ns, 12500000);
    assert_int_equal(tt_dist_parse("uniform:2:4", &d, err, sizeof err), 0);
    tt_prng r, r2;
    tt_prng_seed(&r, 9, 1);
    tt_prng_seed(&r2, 9, 1);
    for (int i = 0; i < 1000; i++) {
        uint64_t v = tt_dist_sample(&d, &r);
        assert_true(v >= 2000000 && v <= 4000000);
        assert_int_equal(v, tt_dist_sample(&d, &r2)); /* same seed, same draws */
    }
    static const char *const bad[] = {"", "-1", "x", "1e9", "nan", "uniform:3:2", "uniform:1", "uniform:a:2", "5ms"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tt_dist_parse(bad[i], &d, err, sizeof err), -1);
}

static void test_dist_normal(void **state)
{
    tt_dist d;
    char err[160];
    assert_int_equal(tt_dist_parse("normal:20:3", &d, err, sizeof err), 0);
    assert_int_equal(d.kind, TT_DIST_NORMAL);
    assert_int_equal(d.a_ns, 20000000);
    assert_int_equal(d.b_ns, 3000000);
    tt_prng r, r2;
    tt_prng_seed(&r, 7, 3);
    tt_prng_seed(&r2, 7, 3);
    enum { N = 200000 };
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        uint64_t v = tt_dist_sample(&d, &r);
        assert_int_equal(v, tt_dist_sample(&d, &r2)); /* same seed, same draws */
        sum += (double)v;
        sq += (double)v * (double)v;
    }
    double mean = sum / N, sd = sqrt(sq / N - mean * mean);
    assert_true(fabs(mean - 20e6) < 0.05e6);  /* standard error ~ 0.007 ms */
    assert_true(fabs(sd - 3e6) < 0.05e6);
    /* truncated at 0: a mean of 0 never gives a negative (wrapped) delay */
    assert_int_equal(tt_dist_parse("normal:0:5", &d, err, sizeof err), 0);
    sum = 0;
    for (int i = 0; i < N; i++) {
        uint64_t v = tt_dist_sample(&d, &r);
        assert_true(v <= 3600000000000ull);
        sum += (double)v;
    }
    assert_true(fabs(sum / N - 5e6 * 0.7979) < 0.1e6); /* half-normal mean: sd * sqrt(2/pi) */
    /* a different seed gives different draws */
    tt_prng_seed(&r, 8, 3);
    tt_prng_seed(&r2, 7, 3);
    assert_int_equal(tt_dist_parse("normal:20:3", &d, err, sizeof err), 0);
    int same = 0;
    for (int i = 0; i < 100; i++) same += tt_dist_sample(&d, &r) == tt_dist_sample(&d, &r2);
    assert_true(same < 5);
    assert_int_equal(tt_dist_parse("normal:5:0", &d, err, sizeof err), 0);
    assert_int_equal(tt_dist_sample(&d, &r), 5000000);
    static const char *const bad[] = {"normal:", "normal:1", "normal:-1:2", "normal:1:-2", "normal:a:1", "normal:1:1e9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tt_dist_parse(bad[i], &d, err, sizeof err), -1);
    char buf[64];
    assert_int_equal(tt_dist_parse("normal:20:3", &d, err, sizeof err), 0);
    assert_string_equal(tt_dist_format(&d, buf, sizeof buf), "normal:20:3ms");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_dist_replay(void **state)
{
    char path[] = "/tmp/tt_replay_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "# recorded ITLs\n10\n\n  2.5 \r\n7\n");
    char text[64], err[256];
    snprintf(text, sizeof text, "replay:%s", path);
    tt_dist d;
    assert_int_equal(tt_dist_parse(text, &d, err, sizeof err), 0);
    assert_int_equal(d.kind, TT_DIST_REPLAY);
    assert_int_equal(d.n_values, 3);
    tt_prng r;
    tt_prng_seed(&r, 1, 1);
    uint64_t cursor = 0, want[] = {10000000, 2500000, 7000000};
    for (int i = 0; i < 10; i++) assert_int_equal(tt_dist_draw(&d, &r, &cursor), want[i % 3]); /* cycled */
    assert_int_equal(cursor, 10);
    cursor = 4;
    assert_int_equal(tt_dist_draw(&d, &r, &cursor), want[1]);
    assert_int_equal(tt_dist_sample(&d, &r), want[0]);
    char buf[64];
    assert_string_equal(tt_dist_format(&d, buf, sizeof buf), "replay:3 values");
    tt_dist_free(&d);
    assert_int_equal(d.kind, TT_DIST_FIXED);
    assert_null(d.values);

    write_file(path, "5\nfast\n");
    assert_int_equal(tt_dist_parse(text, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    write_file(path, "# nothing\n\n");
    assert_int_equal(tt_dist_parse(text, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "no delays"));
    write_file(path, "-3\n");
    assert_int_equal(tt_dist_parse(text, &d, err, sizeof err), -1);
    unlink(path);
    assert_int_equal(tt_dist_parse(text, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_int_equal(tt_dist_parse("replay:", &d, err, sizeof err), -1);
}

static void test_split_cuts(void **state)
{
    uint32_t cuts[8];
    static const uint32_t offs[] = {20, 5, 5, 0, 100, 3};
    assert_int_equal(tt_split_cuts(offs, 6, 50, cuts), 3);
    assert_int_equal(cuts[0], 3);
    assert_int_equal(cuts[1], 5);
    assert_int_equal(cuts[2], 20);
    /* offsets at or past the event's end are dropped: a short event stays whole */
    assert_int_equal(tt_split_cuts(offs, 6, 5, cuts), 1);
    assert_int_equal(cuts[0], 3);
    assert_int_equal(tt_split_cuts(offs, 6, 3, cuts), 0);
    assert_int_equal(tt_split_cuts(offs, 0, 50, cuts), 0);
    static const uint32_t one[] = {1};
    assert_int_equal(tt_split_cuts(one, 1, 2, cuts), 1);
    assert_int_equal(tt_split_cuts(one, 1, 1, cuts), 0);
}

static void test_coalesce_due(void **state)
{
    /* N = 3 over 7 events: writes after events 3, 6 and 7 (the last) */
    size_t held = 0, writes = 0, sizes[8] = {0};
    for (int i = 0; i < 7; i++) {
        held++;
        if (tt_coalesce_due(3, held, i == 6)) {
            sizes[writes++] = held;
            held = 0;
        }
    }
    assert_int_equal(writes, 3);
    assert_int_equal(sizes[0], 3);
    assert_int_equal(sizes[1], 3);
    assert_int_equal(sizes[2], 1);
    assert_true(tt_coalesce_due(0, 1, false));
    assert_true(tt_coalesce_due(1, 1, false));
    assert_false(tt_coalesce_due(2, 1, false));
    assert_true(tt_coalesce_due(2, 1, true));
}

static void test_fault_plans(void **state)
{
    tt_serve_request r;
    char err[200];
    tt_serve_event plan[40];
    const tt_serve_profile *vllm = tt_serve_profile_find("vllm"), *anth = tt_serve_profile_find("anthropic");
    assert_int_equal(parse("vllm", TT_API_CHAT, "{\"stream\":true,\"max_tokens\":4,\"messages\":[]}", &opts, &r, err), 0);
    size_t n = tt_serve_plan(vllm, &r, plan); /* role, 4 tokens, done */
    assert_int_equal(n, 6);
    assert_int_equal(tt_serve_plan_cut_at_token(plan, n, 2), 3);
    assert_int_equal(tt_serve_plan_cut_at_token(plan, n, 0), 1);
    assert_int_equal(tt_serve_plan_cut_at_token(plan, n, 4), n);
    size_t m = tt_serve_plan_error_after(vllm, plan, n, 2); /* role, t0, t1, error, [DONE] */
    assert_int_equal(m, 5);
    assert_int_equal(plan[3].kind, TT_SEV_ERROR);
    assert_int_equal(plan[3].token, 2);
    assert_int_equal(plan[4].kind, TT_SEV_DONE);
    tt_sbuf out = {0};
    tt_serve_frame(vllm, &r, &plan[3], &out);
    tt_sbuf_put(&out, "", 1);
    assert_string_equal(out.p, "data: {\"error\": {\"object\": \"error\", \"message\": \"synthetic error after 2 tokens\", "
                               "\"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n");
    tt_sbuf_free(&out);

    assert_int_equal(parse("anthropic", TT_API_MESSAGES, "{\"stream\":true,\"max_tokens\":3,\"messages\":[]}", &opts, &r, err), 0);
    n = tt_serve_plan(anth, &r, plan);
    m = tt_serve_plan_error_after(anth, plan, n, 0); /* message_start, block_start, ping, error */
    assert_int_equal(m, 4);
    tt_serve_frame(anth, &r, &plan[3], &out);
    tt_sbuf_put(&out, "", 1);
    assert_string_equal(out.p, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
    tt_sbuf_free(&out);
    assert_string_equal(tt_serve_event_kind_name(TT_SEV_ERROR), "error");
}

static void test_reasoning_frames(void **state)
{
    tt_serve_gen_opts o = opts;
    o.reasoning_tokens = 1;
    tt_serve_request r;
    char err[200];
    tt_serve_event plan[40];
    const tt_serve_profile *tabby = tt_serve_profile_find("tabby"), *anth = tt_serve_profile_find("anthropic");
    assert_int_equal(parse("tabby", TT_API_CHAT, "{\"stream\":true,\"max_tokens\":2,\"messages\":[]}", &o, &r, err), 0);
    assert_int_equal(r.reasoning_tokens, 1);
    size_t n = tt_serve_plan(tabby, &r, plan);
    tt_sbuf out = {0};
    tt_serve_frame(tabby, &r, &plan[0], &out);
    tt_sbuf_put(&out, "", 1);
    assert_non_null(strstr(out.p, "\"delta\": {\"reasoning_content\": \" the\"}"));
    tt_sbuf_free(&out);
    tt_serve_frame(tabby, &r, &plan[1], &out);
    tt_sbuf_put(&out, "", 1);
    assert_non_null(strstr(out.p, "\"delta\": {\"content\": \" quick\"}"));
    tt_sbuf_free(&out);
    (void)n;

    o.reasoning_tokens = 5; /* more than the output: every token is reasoning */
    assert_int_equal(parse("anthropic", TT_API_MESSAGES, "{\"stream\":true,\"max_tokens\":2,\"messages\":[]}", &o, &r, err), 0);
    assert_int_equal(r.reasoning_tokens, 2);
    o.reasoning_tokens = 1;
    assert_int_equal(parse("anthropic", TT_API_MESSAGES, "{\"stream\":true,\"max_tokens\":2,\"messages\":[]}", &o, &r, err), 0);
    n = tt_serve_plan(anth, &r, plan);
    assert_true(n <= tt_serve_plan_cap(&r));
    for (size_t i = 0; i < n; i++) tt_serve_frame(anth, &r, &plan[i], &out);
    tt_sbuf_put(&out, "", 1);
    const char *want[] = {
        "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}",
        "\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" the\"}",
        "\"delta\":{\"type\":\"signature_delta\"",
        "{\"type\":\"content_block_stop\",\"index\":0}",
        "\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}",
        "\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" quick\"}",
        "{\"type\":\"content_block_stop\",\"index\":1}",
        "\"output_tokens\":2",
        "message_stop",
    };
    const char *at = out.p;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *hit = strstr(at, want[i]);
        assert_non_null(hit); /* in this order */
        at = hit + 1;
    }
    tt_sbuf_free(&out);
}

static void test_heap(void **state)
{
    enum { N = 200 };
    tt_heap h = {0};
    tt_heap_item items[N];
    tt_prng r;
    tt_prng_seed(&r, 1, 2);
    for (int i = 0; i < N; i++) {
        items[i].slot = SIZE_MAX;
        assert_int_equal(tt_heap_set(&h, &items[i], tt_prng_next(&r) % 1000 + 1), 0);
    }
    for (int i = 0; i < N; i += 3) assert_int_equal(tt_heap_set(&h, &items[i], tt_prng_next(&r) % 1000 + 1), 0);
    for (int i = 1; i < N; i += 7) tt_heap_remove(&h, &items[i]);
    uint64_t last = 0;
    size_t popped = 0;
    tt_heap_item *top;
    while ((top = tt_heap_top(&h))) {
        assert_true(top->due_ns >= last);
        last = top->due_ns;
        tt_heap_remove(&h, top);
        assert_int_equal(top->slot, SIZE_MAX);
        popped++;
    }
    assert_int_equal(popped, N - (N + 5) / 7);
    tt_heap_free(&h);
}

static void test_json_str(void **state)
{
    tt_sbuf b = {0};
    tt_sbuf_json_str(&b, "a\"b\\c\n\x01\xc3\xa9", 9);
    tt_sbuf_put(&b, "", 1);
    assert_string_equal(b.p, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    tt_sbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lengths), cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_frames_vllm),   cmocka_unit_test(test_frames_tabby),
        cmocka_unit_test(test_dist),          cmocka_unit_test(test_heap),
        cmocka_unit_test(test_json_str),      cmocka_unit_test(test_frames_responses),
        cmocka_unit_test(test_frames_anthropic), cmocka_unit_test(test_frames_tgi),
        cmocka_unit_test(test_frames_llamacpp), cmocka_unit_test(test_frames_ollama),
        cmocka_unit_test(test_native_parse),  cmocka_unit_test(test_route),
        cmocka_unit_test(test_metrics_text),  cmocka_unit_test(test_dist_normal),
        cmocka_unit_test(test_dist_replay),   cmocka_unit_test(test_split_cuts),
        cmocka_unit_test(test_coalesce_due),  cmocka_unit_test(test_fault_plans),
        cmocka_unit_test(test_reasoning_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
