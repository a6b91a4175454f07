/* test_serve.c - tokentap serve's pure parts: request parsing and output
 * length rules per profile, the event plan, exact frame bytes, delay
 * distributions, the due-instant heap and JSON string escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "golden.h"
#include "serve/serve_buf.h"
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
    tt_serve_event plan[16];
    assert_true(tt_serve_plan_cap(&r) <= 16);
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
        cmocka_unit_test(test_json_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
