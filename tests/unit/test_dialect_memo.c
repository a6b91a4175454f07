/* test_dialect_memo.c - tt_dialect_classify_memo gives what
 * tt_dialect_classify gives, event for event, while reading most token
 * chunks of a stream from its memo.
 *
 * The golden streams of every dialect go through a memo in test_dialect.c.
 * Here: a template event of each dialect followed by the same event with
 * the inside of its text string replaced, by hand-picked insides (escapes,
 * surrogates, NULs, quotes, control bytes, a trailing backslash, empty,
 * too long) and by random ones from an alphabet of the bytes that matter
 * to a JSON string; events that differ elsewhere (type, hint, spacing,
 * another member); and the memo's hit count, so that a memo never used
 * fails too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"

typedef struct template_event {
    const char *name;
    tt_dialect hint;
    const char *type;
    const char *before, *after; /* the data is before + inside + after */
} template_event;

static const template_event templates[] = {
    {"vllm chat", TT_DIALECT_OPENAI_CHAT, NULL,
     "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
     "\"delta\":{\"content\":\"",
     "\"},\"logprobs\":null,\"finish_reason\":null}]}"},
    {"chat, hint unknown", TT_DIALECT_UNKNOWN, NULL, "{\"choices\":[{\"delta\":{\"content\":\"", "\"}}]}"},
    {"chat reasoning_content with its twin", TT_DIALECT_OPENAI_CHAT, NULL,
     "{\"choices\":[{\"delta\":{\"reasoning_content\":\"", "\",\"reasoning\":\"twin\"}}]}"},
    {"chat reasoning after an empty twin", TT_DIALECT_OPENAI_CHAT, NULL,
     "{\"choices\":[{\"delta\":{\"reasoning_content\":\"\",\"reasoning\":\"", "\"}}]}"},
    {"chat with a finish reason", TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[{\"delta\":{\"content\":\"",
     "\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}"},
    {"tool arguments", TT_DIALECT_OPENAI_CHAT, NULL,
     "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"", "\"}}]}}]}"},
    {"completions", TT_DIALECT_OPENAI_COMPLETIONS, NULL, "{\"id\":\"cmpl-2\",\"choices\":[{\"text\":\"",
     "\",\"index\":0,\"finish_reason\":null}]}"},
    {"responses", TT_DIALECT_OPENAI_RESPONSES, "response.output_text.delta",
     "{\"type\":\"response.output_text.delta\",\"item_id\":\"x\",\"delta\":\"", "\"}"},
    {"anthropic", TT_DIALECT_ANTHROPIC, "content_block_delta",
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"", "\"}}"},
    {"anthropic thinking", TT_DIALECT_ANTHROPIC, "content_block_delta",
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"", "\"}}"},
    {"tgi", TT_DIALECT_TGI, NULL, "{\"index\":3,\"token\":{\"id\":7,\"text\":\"",
     "\",\"logprob\":-0.5,\"special\":false},\"generated_text\":null,\"details\":null}"},
    {"llama.cpp", TT_DIALECT_LLAMACPP, NULL, "{\"content\":\"", "\",\"stop\":false,\"id_slot\":0}"},
    {"ollama chat", TT_DIALECT_OLLAMA, NULL,
     "{\"model\":\"m\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"", "\"},\"done\":false}"},
    {"triton", TT_DIALECT_TRITON, NULL, "{\"model_name\":\"m\",\"model_version\":\"1\",\"text_output\":\"", "\"}"},
    {"an error's message", TT_DIALECT_OPENAI_CHAT, NULL, "{\"error\":{\"message\":\"", "\"}}"},
};
#define N_TEMPLATES (sizeof templates / sizeof templates[0])

static char *event_data(const template_event *t, const char *inside, size_t inside_len, size_t *len)
{
    size_t a = strlen(t->before), b = strlen(t->after);
    *len = a + inside_len + b;
    char *d = malloc(*len + 1);
    memcpy(d, t->before, a);
    memcpy(d + a, inside, inside_len);
    memcpy(d + a + inside_len, t->after, b);
    d[*len] = 0;
    return d;
}

static void assert_same(const tt_classified *a, const char *ta, const tt_classified *b, const char *tb,
                        const char *what)
{
    if (!tt_classified_same(a, b) || strcmp(ta, tb))
        fail_msg("%s: through the memo %s/%u bytes/\"%s\", alone %s/%u bytes/\"%s\"", what,
                 tt_event_kind_name(a->kind), a->text_bytes, ta, tt_event_kind_name(b->kind), b->text_bytes, tb);
}

/* Classify data through *memo and alone (text_cap cap), and require the same. */
static void check_one(tt_classify_memo **memo, tt_dialect hint, const char *type, const char *data, size_t len,
                      size_t cap, const char *what)
{
    char mt[cap ? cap : 1], at[cap ? cap : 1];
    mt[0] = at[0] = 0;
    tt_classified m, a;
    size_t type_len = type ? strlen(type) : 0;
    tt_dialect_classify_memo(memo, hint, type, type_len, data, len, &m, cap ? mt : NULL, cap);
    tt_dialect_classify(hint, type, type_len, data, len, &a, cap ? at : NULL, cap);
    assert_same(&m, mt, &a, at, what);
}

/* The template with inside "tok", then with each inside: the same results
 * as alone. Returns the memo's hits. */
static uint64_t run_insides(const template_event *t, const char *const *insides, size_t n)
{
    tt_classify_memo *memo = NULL;
    char what[256];
    size_t len;
    char *first = event_data(t, "tok", 3, &len);
    snprintf(what, sizeof what, "%s, the template", t->name);
    check_one(&memo, t->hint, t->type, first, len, 64, what);
    free(first);
    for (size_t i = 0; i < n; i++) {
        char *d = event_data(t, insides[i], strlen(insides[i]), &len);
        snprintf(what, sizeof what, "%s, inside \"%s\"", t->name, insides[i]);
        check_one(&memo, t->hint, t->type, d, len, 64, what);
        check_one(&memo, t->hint, t->type, d, len, 3, what); /* a text cut short */
        check_one(&memo, t->hint, t->type, d, len, 0, what);
        free(d);
    }
    uint64_t hits = tt_classify_memo_hits(memo);
    tt_classify_memo_free(memo);
    return hits;
}

static void test_hand_picked_insides(void **state)
{
    static const char *const insides[] = {
        "a", " the", "\\n\\n", "caf\\u00e9", "\\ud83d\\ude00", "\\\"quoted\\\"", "back\\\\slash", "tab\\tx",
        "\\/", "x\\u0000y", "\\u0000", "", "\\", "a\\", "ab\\q", "\\u12", "\\u12g4", "\\ud83d", "\\ude00",
        "\\ud83dx", "a\"b", "\",\"x\":\"y", "\x01", "a\nb", "\x7f\xff\xfe", "tok", "\\b\\f\\r",
        "\"}}]}{\"choices\":[{\"delta\":{\"content\":\"x",
    };
    for (size_t t = 0; t < N_TEMPLATES; t++) {
        uint64_t hits = run_insides(&templates[t], insides, sizeof insides / sizeof insides[0]);
        /* the valid non-empty insides (13 of them, 3 caps each) come from
         * the memo, unless the template's text is not counted as text */
        if (strcmp(templates[t].name, "an error's message") != 0 && hits < 13 * 3)
            fail_msg("%s: %llu events from the memo", templates[t].name, (unsigned long long)hits);
        if (strcmp(templates[t].name, "an error's message") == 0) assert_int_equal(hits, 0);
    }
}

static void test_too_long_inside(void **state)
{
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    const char *const insides[] = {big};
    /* longer than the memo reads: parsed, the same result */
    assert_int_equal(run_insides(&templates[0], insides, 1), 0);
}

/* Events that differ from the template outside its text string. */
static void test_other_differences(void **state)
{
    const template_event *t = &templates[0];
    tt_classify_memo *memo = NULL;
    size_t len;
    char *d = event_data(t, "tok", 3, &len);
    check_one(&memo, t->hint, NULL, d, len, 64, "template");
    check_one(&memo, t->hint, NULL, d, len, 64, "the same again");
    assert_int_equal(tt_classify_memo_hits(memo), 1);
    check_one(&memo, t->hint, "message", d, len, 64, "type message (none)");
    assert_int_equal(tt_classify_memo_hits(memo), 2);
    check_one(&memo, t->hint, "error", d, len, 64, "type error");
    check_one(&memo, t->hint, "ping", d, len, 64, "type ping");
    check_one(&memo, TT_DIALECT_UNKNOWN, NULL, d, len, 64, "hint unknown");
    check_one(&memo, TT_DIALECT_OPENAI_CHAT, NULL, d, len, 64, "hint back");
    check_one(&memo, TT_DIALECT_VLLM_GRPC, NULL, d, len, 64, "a gRPC hint");
    check_one(&memo, t->hint, NULL, "[DONE]", 6, 64, "[DONE]");
    check_one(&memo, t->hint, NULL, d, len - 1, 64, "the last byte cut");
    check_one(&memo, t->hint, NULL, d + 1, len - 1, 64, "the first byte cut");
    check_one(&memo, t->hint, NULL, NULL, 0, 64, "no data");
    static const char *const others[] = {
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"content\":\"x\"},\"logprobs\":null,\"finish_reason\":\"stop\"}]}",
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"content\":\"x\"},\"logprobs\":null,\"finish_reason\":null}]} ",
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}",
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"content\":\"x\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        check_one(&memo, t->hint, NULL, others[i], strlen(others[i]), 64, others[i]);
    /* after all that, a token chunk of the template's shape is read from a memo again */
    uint64_t before = tt_classify_memo_hits(memo);
    check_one(&memo, t->hint, NULL, d, len, 64, "the template once more");
    check_one(&memo, t->hint, NULL, d, len, 64, "and again");
    assert_true(tt_classify_memo_hits(memo) > before);
    free(d);
    tt_classify_memo_free(memo);
    tt_classify_memo_free(NULL);
    assert_int_equal(tt_classify_memo_hits(NULL), 0);
    /* no memo pointer: plain classification */
    tt_classified c;
    tt_dialect_classify_memo(NULL, TT_DIALECT_OPENAI_CHAT, NULL, 0, "[DONE]", 6, &c, NULL, 0);
    assert_int_equal(c.kind, TT_EV_TERMINAL);
}

/* Random insides from the bytes that decide a JSON string: each classified
 * through the memo and alone. */
static void test_random_insides(void **state)
{
    static const char alphabet[] = "ab \"\\\\\\unU0123456789dDeEfF\x01\x1f\x7f\xc3\xa9/btnr{}[],:";
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t t = 0; t < N_TEMPLATES; t++) {
        tt_classify_memo *memo = NULL;
        size_t len;
        char *first = event_data(&templates[t], "tok", 3, &len);
        check_one(&memo, templates[t].hint, templates[t].type, first, len, 16, templates[t].name);
        free(first);
        for (int round = 0; round < 3000; round++) {
            char inside[24];
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t n = seed % sizeof inside;
            for (size_t i = 0; i < n; i++) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                inside[i] = alphabet[seed % (sizeof alphabet - 1)];
            }
            char *d = event_data(&templates[t], inside, n, &len);
            check_one(&memo, templates[t].hint, templates[t].type, d, len, 16, templates[t].name);
            free(d);
            /* every few rounds the template again, so that the memo is its shape */
            if (round % 4 == 0) {
                d = event_data(&templates[t], "tok", 3, &len);
                check_one(&memo, templates[t].hint, templates[t].type, d, len, 16, templates[t].name);
                free(d);
            }
        }
        if (strcmp(templates[t].name, "an error's message") != 0) assert_true(tt_classify_memo_hits(memo) > 500);
        tt_classify_memo_free(memo);
    }
}

/* tt_classified_same, which every comparison here rests on, sees each field. */
static void test_same_sees_each_field(void **state)
{
    const char *data = "{\"id\":\"r\",\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}],"
                       "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3}}";
    tt_classified a, b;
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, data, strlen(data), &a, NULL, 0);
    b = a;
    assert_true(tt_classified_same(&a, &b));
    for (int field = 0; field < 12; field++) {
        b = a;
        switch (field) {
        case 0: b.kind = TT_EV_ROLE; break;
        case 1: b.has ^= TT_HAS_ROLE; break;
        case 2: b.json_ok = !b.json_ok; break;
        case 3: b.dialect = TT_DIALECT_TGI; break;
        case 4: b.text_bytes++; break;
        case 5: b.reasoning_bytes++; break;
        case 6: b.text_hash ^= 1; break;
        case 7: b.usage_prompt_tokens++; break;
        case 8: b.usage_completion_tokens++; break;
        case 9: b.finish_reason[0] = 'x'; break;
        case 10: b.response_id[0] = 'x'; break;
        case 11: strcpy(b.error_message, "x"); break;
        }
        if (tt_classified_same(&a, &b)) fail_msg("field %d changed, still the same", field);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_sees_each_field),
        cmocka_unit_test(test_hand_picked_insides),
        cmocka_unit_test(test_too_long_inside),
        cmocka_unit_test(test_other_differences),
        cmocka_unit_test(test_random_insides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
