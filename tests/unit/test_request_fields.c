/* Request-body fields: every max-tokens spelling, nested TGI/Ollama
 * objects, flags, and bodies that are not JSON objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "timeline/request_fields.h"

static tt_request_fields parse(const char *body)
{
    tt_request_fields f;
    tt_request_fields_init(&f);
    tt_request_fields_parse(&f, body, strlen(body));
    return f;
}

static void test_openai_chat(void **state)
{
    tt_request_fields f = parse("{\"model\":\"qwen\",\"stream\":true,\"max_completion_tokens\":128,"
                                "\"min_tokens\":128,\"ignore_eos\":true,\"stream_options\":{\"include_usage\":true}}");
    assert_true(f.body_json_ok);
    assert_string_equal(f.model, "qwen");
    assert_int_equal(f.stream, TT_TRUE);
    assert_int_equal(f.max_tokens, 128);
    assert_string_equal(f.max_tokens_field, "max_completion_tokens");
    assert_int_equal(f.min_tokens, 128);
    assert_int_equal(f.ignore_eos, TT_TRUE);
    assert_int_equal(f.include_usage, TT_TRUE);
}

static void test_spellings(void **state)
{
    static const char *const names[] = {"max_tokens", "max_completion_tokens", "max_output_tokens",
                                        "max_new_tokens", "num_predict", "n_predict"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"%s\": 77}", names[i]);
        tt_request_fields f = parse(body);
        assert_int_equal(f.max_tokens, 77);
        assert_string_equal(f.max_tokens_field, names[i]);
    }
}

static void test_nested(void **state)
{
    tt_request_fields tgi = parse("{\"inputs\":\"hi\",\"parameters\":{\"max_new_tokens\":20}}");
    assert_int_equal(tgi.max_tokens, 20);
    tt_request_fields ollama = parse("{\"model\":\"llama3\",\"prompt\":\"hi\",\"options\":{\"num_predict\":9}}");
    assert_int_equal(ollama.max_tokens, 9);
    assert_int_equal(ollama.stream, TT_UNKNOWN); /* Ollama streams by default; the body did not say */
}

static void test_stream_without_options(void **state)
{
    tt_request_fields f = parse("{\"stream\":true}");
    assert_int_equal(f.include_usage, TT_FALSE);
    tt_request_fields g = parse("{\"stream\":false}");
    assert_int_equal(g.include_usage, TT_UNKNOWN);
}

static void test_not_json(void **state)
{
    const char *bad[] = {"", "not json", "[1,2]", "{\"max_tokens\": 5", "\"str\"", "{\"max_tokens\": -3}",
                         "{\"max_tokens\": \"12\"}", "{\"stream\": 1}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tt_request_fields f = parse(bad[i]);
        assert_int_equal(f.max_tokens, -1);
        assert_int_equal(f.stream, TT_UNKNOWN);
    }
    assert_false(parse("{\"max_tokens\": 5").body_json_ok);
    assert_true(parse("{\"stream\": 1}").body_json_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_chat), cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_nested),      cmocka_unit_test(test_stream_without_options),
        cmocka_unit_test(test_not_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
