/* test_dialect.c - the dialect classifier: golden streams of every API,
 * plus the edges (not JSON, truncated, deep, huge, wrong types, paths).
 * The JSON reader itself against cJSON is test_dialect_json.c's.
 *
 * Golden files (tests/golden/dialect/NAME.golden): meta hint=<dialect name>,
 * optional framing=ndjson (each line one event, no type) and detect=same
 * (classifying with hint unknown must give the same trace, dialect column
 * aside). Input otherwise: events separated by a blank line, each with an
 * optional "event: TYPE" line and "data: ..." lines (joined with \n). The
 * trace: one line per event,
 *   KIND dialect has=FLAG|.. bytes=N reasoning=N usage=P/C finish=".." id=".." text=".."
 * plus error=".." when TT_HAS_ERROR and json=no when the data was not JSON.
 *
 * Every golden event is also classified (a) from a copy that ends at a
 * PROT_NONE page, (b) cut short at every byte, which must never parse, and
 * (c) with every text_cap from 1 up, which must give prefixes of the text.
 * TT_DIALECT_DUMP=1 prints the traces instead of comparing them (to draft
 * a new case; check every line by hand before pasting it in). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"
#include "dialect/dialect_grpc.h"
#include "dialect/dialect_internal.h"
#include "golden.h"

#define GOLDEN_DIR "tests/golden/dialect"

typedef struct golden_event {
    const char *type;
    size_t type_len;
    char *data;
    size_t data_len;
} golden_event;

static void append_flags(tt_strbuf *b, uint32_t has)
{
    static const struct { uint32_t bit; const char *name; } flags[] = {
        { TT_HAS_TEXT, "TEXT" },         { TT_HAS_REASONING, "REASONING" },
        { TT_HAS_TOOL_ARGS, "TOOL_ARGS" }, { TT_HAS_USAGE, "USAGE" },
        { TT_HAS_FINISH, "FINISH" },     { TT_HAS_TERMINAL, "TERMINAL" },
        { TT_HAS_CHOICES, "CHOICES" },   { TT_HAS_ROLE, "ROLE" },
        { TT_HAS_ERROR, "ERROR" },       { TT_HAS_SPECIAL, "SPECIAL" },
        { TT_HAS_MALFORMED, "MALFORMED" },
    };
    const char *sep = "";
    tt_sb_printf(b, "has=");
    if (!has) tt_sb_printf(b, "-");
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (has & flags[i].bit) {
            tt_sb_printf(b, "%s%s", sep, flags[i].name);
            sep = "|";
        }
}

static void append_trace(tt_strbuf *b, const tt_classified *c, const char *text, bool with_dialect)
{
    tt_sb_printf(b, "%s", tt_event_kind_name(c->kind));
    if (with_dialect) tt_sb_printf(b, " %s", tt_dialect_name(c->dialect));
    tt_sb_printf(b, " ");
    append_flags(b, c->has);
    tt_sb_printf(b, " bytes=%u reasoning=%u usage=%lld/%lld finish=\"", c->text_bytes,
                 c->reasoning_bytes, (long long)c->usage_prompt_tokens,
                 (long long)c->usage_completion_tokens);
    tt_sb_escaped(b, c->finish_reason, strlen(c->finish_reason));
    tt_sb_printf(b, "\" id=\"");
    tt_sb_escaped(b, c->response_id, strlen(c->response_id));
    tt_sb_printf(b, "\" text=\"");
    tt_sb_escaped(b, text, strlen(text));
    tt_sb_printf(b, "\"");
    if (c->has & TT_HAS_ERROR) {
        tt_sb_printf(b, " error=\"");
        tt_sb_escaped(b, c->error_message, strlen(c->error_message));
        tt_sb_printf(b, "\"");
    }
    if (!c->json_ok) tt_sb_printf(b, " json=no");
    tt_sb_printf(b, "\n");
}

static tt_dialect dialect_by_name(const char *name)
{
    for (int d = 0; d < TT_DIALECT_COUNT; d++)
        if (!strcmp(tt_dialect_name((tt_dialect)d), name)) return (tt_dialect)d;
    fail_msg("unknown dialect name %s", name);
    return TT_DIALECT_UNKNOWN;
}

/* Split golden input into events (see the top comment). */
static size_t split_events(const tt_golden *g, bool ndjson, golden_event *ev, size_t max)
{
    const char *p = (const char *)g->input, *end = p + g->input_len;
    size_t n = 0;
    golden_event cur = { 0 };
    bool open = false;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        size_t len = (size_t)(eol - p);
        if (ndjson) {
            if (len) {
                assert_true(n < max);
                ev[n].type = NULL, ev[n].type_len = 0;
                ev[n].data = malloc(len + 1);
                memcpy(ev[n].data, p, len);
                ev[n].data_len = len;
                n++;
            }
        } else if (len == 0) {
            if (open) {
                assert_true(n < max);
                ev[n++] = cur;
                memset(&cur, 0, sizeof cur);
                open = false;
            }
        } else if (len >= 6 && !memcmp(p, "event:", 6)) {
            size_t skip = (len > 6 && p[6] == ' ') ? 7 : 6;
            cur.type = p + skip, cur.type_len = len - skip, open = true;
        } else if (len >= 5 && !memcmp(p, "data:", 5)) {
            size_t skip = (len > 5 && p[5] == ' ') ? 6 : 5;
            size_t add = len - skip;
            size_t sep = cur.data ? 1 : 0;
            cur.data = realloc(cur.data, cur.data_len + sep + add + 1);
            if (sep) cur.data[cur.data_len++] = '\n';
            memcpy(cur.data + cur.data_len, p + skip, add);
            cur.data_len += add;
            open = true;
        } else {
            fail_msg("%s: unexpected input line %.*s", g->path, (int)len, p);
        }
        p = eol + 1;
    }
    if (open) {
        assert_true(n < max);
        ev[n++] = cur;
    }
    return n;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static void classify_guarded(tt_dialect hint, const golden_event *e, size_t len, tt_classified *c,
                             char *text, size_t cap)
{
    uint8_t *copy = tt_guard_copy(e->data, len);
    assert_non_null(copy);
    tt_dialect_classify(hint, e->type, e->type_len, (const char *)copy, len, c, text, cap);
    tt_guard_free(copy, len);
}

/* a and b are the same result, their texts (cap bytes) the same. */
static void assert_same_result(const tt_classified *a, const char *ta, const tt_classified *b, const char *tb,
                               const char *path, size_t index)
{
    if (!tt_classified_same(a, b) || strcmp(ta, tb))
        fail_msg("%s: event %zu classified through the memo differs from its own classification", path, index);
}

static bool type_named(const golden_event *e, const char *name)
{
    return e->type && e->type_len == strlen(name) && !memcmp(e->type, name, e->type_len);
}

/* Cut-short data never parses; every text_cap gives a prefix of the text. */
static void check_event_edges(tt_dialect hint, const golden_event *e, const tt_classified *whole,
                              const char *text, const char *path)
{
    size_t trimmed = e->data_len;
    while (trimmed && strchr(" \t\r\n", e->data[trimmed - 1])) trimmed--;
    if (!type_named(e, "error") && !type_named(e, "ping")) {
        for (size_t k = 0; k < trimmed; k++) {
            tt_classified c;
            classify_guarded(hint, e, k, &c, NULL, 0);
            if (c.json_ok || c.kind != TT_EV_OTHER)
                fail_msg("%s: data cut to %zu bytes classified %s json_ok=%d", path, k,
                         tt_event_kind_name(c.kind), c.json_ok);
        }
    }
    size_t tl = strlen(text);
    assert_int_equal(tl, whole->text_bytes);
    assert_true(whole->text_hash == (tl ? fnv1a(text, tl) : 0));
    for (size_t cap = 1; cap <= tl + 1; cap++) {
        char small[cap];
        tt_classified c;
        classify_guarded(hint, e, e->data_len, &c, small, cap);
        assert_int_equal(strlen(small), cap - 1);
        assert_memory_equal(small, text, cap - 1);
        assert_true(c.text_hash == whole->text_hash);
    }
}

static void run_golden(const char *path)
{
    tt_golden g;
    assert_int_equal(tt_golden_load(path, &g), 0);
    char buf[64];
    tt_dialect hint = dialect_by_name(tt_golden_meta(&g, "hint", buf, sizeof buf) ? buf : "unknown");
    bool ndjson = tt_golden_meta(&g, "framing", buf, sizeof buf) && !strcmp(buf, "ndjson");
    bool detect_same = tt_golden_meta(&g, "detect", buf, sizeof buf) && !strcmp(buf, "same");

    golden_event ev[256];
    size_t n = split_events(&g, ndjson, ev, 256);
    tt_strbuf trace = { 0 }, bare = { 0 }, detected = { 0 };
    static char text[1 << 16], memo_text[1 << 16];
    tt_classify_memo *memo = NULL; /* the stream's events in order through one memo: the same results */
    for (size_t i = 0; i < n; i++) {
        tt_classified c, m;
        classify_guarded(hint, &ev[i], ev[i].data_len, &c, text, sizeof text);
        uint8_t *copy = tt_guard_copy(ev[i].data, ev[i].data_len);
        tt_dialect_classify_memo(&memo, hint, ev[i].type, ev[i].type_len, (const char *)copy, ev[i].data_len, &m,
                                 memo_text, sizeof memo_text);
        tt_guard_free(copy, ev[i].data_len);
        assert_same_result(&m, memo_text, &c, text, path, i);
        append_trace(&trace, &c, text, true);
        append_trace(&bare, &c, text, false);
        check_event_edges(hint, &ev[i], &c, text, path);
        if (detect_same) {
            classify_guarded(TT_DIALECT_UNKNOWN, &ev[i], ev[i].data_len, &c, text, sizeof text);
            append_trace(&detected, &c, text, false);
        }
    }
    tt_classify_memo_free(memo);
    tt_sb_printf(&trace, "%s", "");
    if (getenv("TT_DIALECT_DUMP")) printf("##### %s\n%s", path, trace.s ? trace.s : "");
    else assert_int_equal(tt_golden_compare(&g, trace.s ? trace.s : "", "whole"), 0);
    if (detect_same) {
        tt_sb_printf(&bare, "%s", "");
        tt_sb_printf(&detected, "%s", "");
        if (strcmp(bare.s, detected.s) != 0)
            fail_msg("%s: hint unknown differs:\n%s---\n%s", path, bare.s, detected.s);
    }
    for (size_t i = 0; i < n; i++) free(ev[i].data);
    tt_sb_free(&trace);
    tt_sb_free(&bare);
    tt_sb_free(&detected);
    tt_golden_free(&g);
}

static void test_golden_files(void **state)
{
    size_t n;
    char **list = tt_golden_list(GOLDEN_DIR, &n);
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) run_golden(list[i]);
    tt_golden_list_free(list, n);
}

/* ---- edges ---- */

static tt_classified classify(tt_dialect hint, const char *type, const char *data)
{
    tt_classified c;
    size_t len = strlen(data);
    uint8_t *copy = tt_guard_copy(data, len);
    tt_dialect_classify(hint, type, type ? strlen(type) : 0, (const char *)copy, len, &c, NULL, 0);
    tt_guard_free(copy, len);
    return c;
}

static void assert_other(tt_classified c, bool json_ok)
{
    assert_int_equal(c.kind, TT_EV_OTHER);
    assert_int_equal(c.json_ok, json_ok);
    assert_int_equal(c.text_bytes, 0);
    assert_true(c.text_hash == 0);
    assert_int_equal(c.usage_completion_tokens, -1);
    assert_int_equal(c.usage_prompt_tokens, -1);
}

static void test_not_json(void **state)
{
    for (int d = 0; d < TT_DIALECT_COUNT; d++) {
        if (tt_grpc_api_of((tt_dialect)d) != TT_GRPC_API_COUNT) continue; /* protobuf: test_grpc_hint */
        assert_other(classify((tt_dialect)d, NULL, ""), false);
        assert_other(classify((tt_dialect)d, NULL, "hello"), false);
        assert_other(classify((tt_dialect)d, NULL, "[DONE"), false);
        assert_other(classify((tt_dialect)d, NULL, " [DONE]"), false);
        assert_other(classify((tt_dialect)d, NULL, "{\"choices\":[]}{\"choices\":[]}"), false);
        assert_other(classify((tt_dialect)d, NULL, "{\"a\":1} x"), false);
        assert_other(classify((tt_dialect)d, NULL, "{'a':1}"), false);
        assert_other(classify((tt_dialect)d, NULL, "{\"a\":1,}"), false);
        tt_classified done = classify((tt_dialect)d, NULL, "[DONE]");
        assert_int_equal(done.kind, TT_EV_TERMINAL);
        assert_int_equal(done.has, TT_HAS_TERMINAL);
        assert_true(done.json_ok);
    }
    tt_classified c;
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, NULL, 5, &c, NULL, 0);
    assert_other(c, false);
    tt_dialect_classify((tt_dialect)99, NULL, 0, "{}", 2, &c, NULL, 0);
    assert_other(c, true);
    assert_int_equal(c.dialect, TT_DIALECT_UNKNOWN);
    assert_other(classify(TT_DIALECT_UNKNOWN, NULL, "{\"a\":1} \r\n"), true);
    assert_other(classify(TT_DIALECT_UNKNOWN, NULL, "42"), true);
    assert_other(classify(TT_DIALECT_UNKNOWN, NULL, "\"text\""), true);
    assert_other(classify(TT_DIALECT_UNKNOWN, NULL, "[1,2]"), true);
    assert_other(classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"usage\":null}"), true);
    char with_nul[] = "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\0";
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, with_nul, sizeof with_nul - 1, &c, NULL, 0);
    assert_other(c, false);
}

/* A gRPC dialect hint reads the data as that API's protobuf message: the
 * path names the dialect, JSON and [DONE] mean nothing there, and a
 * Triton response with text is a TOKEN read as triton-grpc. */
static void test_grpc_hint(void **state)
{
    static const struct {
        const char *path;
        tt_dialect d;
    } paths[] = {{"/inference.GRPCInferenceService/ModelStreamInfer", TT_DIALECT_TRITON_GRPC},
                 {"/sglang.grpc.scheduler.SglangScheduler/Generate", TT_DIALECT_SGLANG_GRPC},
                 {"/vllm.grpc.engine.VllmEngine/Generate", TT_DIALECT_VLLM_GRPC},
                 {"/inference.GRPCInferenceService/ModelInfer", TT_DIALECT_UNKNOWN}};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        assert_int_equal(tt_dialect_from_path(paths[i].path, strlen(paths[i].path)), paths[i].d);
    assert_string_equal(tt_dialect_name(TT_DIALECT_TRITON_GRPC), "triton-grpc");
    tt_classified c = classify(TT_DIALECT_TRITON_GRPC, NULL, "[DONE]");
    assert_int_not_equal(c.kind, TT_EV_TERMINAL);
    assert_false(c.json_ok);
    assert_int_equal(c.dialect, TT_DIALECT_TRITON_GRPC);
    /* ModelStreamInferResponse {infer_response {outputs [text_output],
     * raw_output_contents ["\x02\0\0\0hi"]}} */
    static const char msg[] = "\x12\x1b\x2a\x0d\x0a\x0btext_output\x32\x06\x02\x00\x00\x00hi\x1a\x02id";
    char text[16];
    tt_dialect_classify(TT_DIALECT_TRITON_GRPC, NULL, 0, msg, sizeof msg - 1, &c, text, sizeof text);
    assert_true(c.json_ok);
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, 2);
    assert_string_equal(text, "hi");
    assert_string_equal(c.response_id, "id");
    assert_int_equal(c.dialect, TT_DIALECT_TRITON_GRPC);
}

static void test_truncated(void **state)
{
    const char *full = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi \\u00e9\\ud83d\\ude00\"},"
                       "\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}";
    size_t n = strlen(full);
    for (size_t k = 0; k < n; k++) {
        tt_classified c;
        uint8_t *copy = tt_guard_copy(full, k);
        tt_dialect_classify(TT_DIALECT_UNKNOWN, NULL, 0, (const char *)copy, k, &c, NULL, 0);
        tt_guard_free(copy, k);
        assert_other(c, false);
    }
    tt_classified c = classify(TT_DIALECT_UNKNOWN, NULL, full);
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, 3 + 2 + 4);
}

static void test_deep_nesting(void **state)
{
    size_t depth = 10000;
    char *s = malloc(2 * depth + 64);
    memset(s, '[', depth);
    memset(s + depth, ']', depth);
    tt_classified c;
    tt_dialect_classify(TT_DIALECT_UNKNOWN, NULL, 0, s, 2 * depth, &c, NULL, 0);
    assert_other(c, false);
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, s, depth, &c, NULL, 0);
    assert_other(c, false);
    size_t k = 0;
    for (size_t i = 0; i < depth / 8; i++) k += (size_t)sprintf(s + k, "{\"a\":");
    tt_dialect_classify(TT_DIALECT_ANTHROPIC, NULL, 0, s, k, &c, NULL, 0);
    assert_other(c, false);
    free(s);
    /* within cJSON's limit: parses, but is no known shape */
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[[[[[[[[[[1]]]]]]]]]]}");
    assert_int_equal(c.kind, TT_EV_META);
    assert_true(c.has & TT_HAS_MALFORMED);
}

static void test_huge_string(void **state)
{
    size_t big = 3u << 20;
    const char *head = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
    const char *tail = "\"},\"finish_reason\":null}]}";
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(hl + big + tl);
    memcpy(s, head, hl);
    memset(s + hl, 'x', big);
    memcpy(s + hl + big, tail, tl);
    char text[16];
    tt_classified c;
    uint8_t *copy = tt_guard_copy(s, hl + big + tl);
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, (const char *)copy, hl + big + tl, &c, text,
                        sizeof text);
    tt_guard_free(copy, hl + big + tl);
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, big);
    assert_string_equal(text, "xxxxxxxxxxxxxxx");
    assert_true(c.text_hash == fnv1a(s + hl, big));
    /* a huge id and error message are cut to their fields */
    memcpy(s, "{\"error\":\"", 10);
    memset(s + 10, 'e', big);
    memcpy(s + 10 + big, "\",\"id\":\"i\"}", 11);
    tt_dialect_classify(TT_DIALECT_TGI, NULL, 0, s, 10 + big + 11, &c, NULL, 0);
    assert_int_equal(c.kind, TT_EV_ERROR);
    assert_int_equal(strlen(c.error_message), sizeof c.error_message - 1);
    free(s);
}

static void test_wrong_types(void **state)
{
    tt_classified c = classify(TT_DIALECT_OPENAI_CHAT, NULL,
                               "{\"choices\":[{\"index\":0,\"delta\":{\"content\":42},\"finish_reason\":null}]}");
    assert_int_equal(c.kind, TT_EV_ROLE);
    assert_int_equal(c.text_bytes, 0);
    assert_true(c.has & TT_HAS_MALFORMED);

    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":{\"delta\":{\"content\":\"x\"}}}");
    assert_other(c, true);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":\"x\",\"usage\":{\"completion_tokens\":\"5\"}}");
    assert_int_equal(c.kind, TT_EV_USAGE);
    assert_int_equal(c.usage_completion_tokens, -1);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"choices\":\"x\",\"usage\":{\"completion_tokens\":5}}");
    assert_other(c, true); /* usage alone names no dialect */
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL,
                 "{\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":7}],"
                 "\"usage\":{\"completion_tokens\":-3,\"prompt_tokens\":1.5}}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.usage_completion_tokens, -1);
    assert_int_equal(c.usage_prompt_tokens, -1);
    assert_string_equal(c.finish_reason, "");
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":{\"completion_tokens\":1e300}}");
    assert_int_equal(c.usage_completion_tokens, -1);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[1,null,\"a\"]}");
    assert_int_equal(c.kind, TT_EV_META);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[{\"delta\":[\"content\"]}]}");
    assert_int_equal(c.kind, TT_EV_ROLE);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL,
                 "{\"choices\":[{\"delta\":{\"tool_calls\":{\"function\":1}}}]}");
    assert_int_equal(c.kind, TT_EV_ROLE);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_OPENAI_RESPONSES, "response.output_text.delta",
                 "{\"type\":\"response.output_text.delta\",\"delta\":{\"text\":\"x\"}}");
    assert_int_equal(c.kind, TT_EV_META);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_ANTHROPIC, NULL, "{\"type\":\"content_block_delta\",\"delta\":\"x\"}");
    assert_int_equal(c.kind, TT_EV_META);
    c = classify(TT_DIALECT_ANTHROPIC, NULL, "{\"type\":7}");
    assert_other(c, true);
    c = classify(TT_DIALECT_TGI, NULL, "{\"token\":{\"text\":5,\"special\":false},\"generated_text\":null}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, 0);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_LLAMACPP, NULL, "{\"content\":1,\"stop\":false}");
    assert_other(c, true);
    c = classify(TT_DIALECT_LLAMACPP, NULL, "{\"content\":\"\",\"stop\":true,\"tokens_predicted\":\"9\"}");
    assert_int_equal(c.kind, TT_EV_TERMINAL);
    assert_int_equal(c.usage_completion_tokens, -1);
    c = classify(TT_DIALECT_OLLAMA, NULL, "{\"model\":\"m\",\"done\":\"yes\",\"response\":\"x\"}");
    assert_other(c, true);
    c = classify(TT_DIALECT_OLLAMA, NULL, "{\"model\":\"m\",\"done\":false,\"message\":{\"content\":[1]}}");
    assert_int_equal(c.kind, TT_EV_META);
    assert_true(c.has & TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"error\":null,\"choices\":[{\"text\":\"a\"}]}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.dialect, TT_DIALECT_OPENAI_COMPLETIONS);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"error\":{\"code\":5}}");
    assert_int_equal(c.kind, TT_EV_ERROR);
    assert_string_equal(c.error_message, "error");
}

static void test_multiple_choices(void **state)
{
    char text[64];
    tt_classified c;
    const char *chat = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"},\"finish_reason\":null},"
                       "{\"index\":1,\"delta\":{\"reasoning_content\":\"cd\"},\"finish_reason\":null},"
                       "{\"index\":2,\"delta\":{},\"finish_reason\":\"length\"}]}";
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, chat, strlen(chat), &c, text, sizeof text);
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, 4);
    assert_int_equal(c.reasoning_bytes, 2);
    assert_string_equal(text, "abcd");
    assert_string_equal(c.finish_reason, "length");
    assert_int_equal(c.has, TT_HAS_TEXT | TT_HAS_REASONING | TT_HAS_FINISH | TT_HAS_CHOICES);
    assert_true(c.text_hash == fnv1a("abcd", 4));
    const char *cmpl = "{\"object\":\"text_completion\",\"choices\":[{\"index\":1,\"text\":\"B\",\"finish_reason\":\"stop\"},"
                       "{\"index\":0,\"text\":\"A\",\"finish_reason\":\"length\"}]}";
    tt_dialect_classify(TT_DIALECT_UNKNOWN, NULL, 0, cmpl, strlen(cmpl), &c, text, sizeof text);
    assert_int_equal(c.dialect, TT_DIALECT_OPENAI_COMPLETIONS);
    assert_string_equal(text, "BA");
    assert_string_equal(c.finish_reason, "stop");
}

/* TT_HAS_EMPTY_CHOICES marks a choices array with no element, and only that:
 * vLLM's include_usage frame has it; a one-choice usage frame, a frame
 * without choices and a choices array of non-objects do not. */
static void test_empty_choices(void **state)
{
    tt_classified c = classify(TT_DIALECT_OPENAI_CHAT, NULL,
                               "{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
                               "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}");
    assert_int_equal(c.kind, TT_EV_USAGE);
    assert_int_equal(c.has, TT_HAS_USAGE | TT_HAS_EMPTY_CHOICES);
    assert_int_equal(c.usage_completion_tokens, 2);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"object\":\"text_completion\",\"choices\":[],\"usage\":{}}");
    assert_int_equal(c.dialect, TT_DIALECT_OPENAI_COMPLETIONS);
    assert_int_equal(c.has, TT_HAS_USAGE | TT_HAS_EMPTY_CHOICES);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[]}");
    assert_int_equal(c.kind, TT_EV_META);
    assert_int_equal(c.has, TT_HAS_EMPTY_CHOICES);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL,
                 "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],"
                 "\"usage\":{\"completion_tokens\":2}}");
    assert_int_equal(c.has, TT_HAS_USAGE | TT_HAS_FINISH | TT_HAS_CHOICES);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"usage\":{\"completion_tokens\":2}}");
    assert_int_equal(c.has, TT_HAS_USAGE);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":[1],\"usage\":{}}");
    assert_int_equal(c.has, TT_HAS_USAGE | TT_HAS_MALFORMED);
    c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"choices\":{},\"usage\":{}}");
    assert_false(c.has & TT_HAS_EMPTY_CHOICES);
}

static void test_text_hash_and_caps(void **state)
{
    const char *a = "{\"choices\":[{\"text\":\"a\"}]}";
    tt_classified c;
    char tiny[1] = { 'z' };
    tt_dialect_classify(TT_DIALECT_OPENAI_COMPLETIONS, NULL, 0, a, strlen(a), &c, tiny, 1);
    assert_true(c.text_hash == 0xaf63dc4c8601ec8cull); /* FNV-1a 64 of "a" */
    assert_int_equal(tiny[0], 0);
    tiny[0] = 'z';
    tt_dialect_classify(TT_DIALECT_OPENAI_COMPLETIONS, NULL, 0, a, strlen(a), &c, tiny, 0);
    assert_int_equal(tiny[0], 'z');
    char text[8] = "junk";
    tt_dialect_classify(TT_DIALECT_OPENAI_CHAT, NULL, 0, "{}", 2, &c, text, sizeof text);
    assert_string_equal(text, "");
}

static void test_sse_types(void **state)
{
    tt_classified c = classify(TT_DIALECT_OPENAI_CHAT, "error", "Internal Server Error");
    assert_int_equal(c.kind, TT_EV_ERROR);
    assert_false(c.json_ok);
    assert_string_equal(c.error_message, "Internal Server Error");
    c = classify(TT_DIALECT_TGI, "error", "");
    assert_int_equal(c.kind, TT_EV_ERROR);
    assert_string_equal(c.error_message, "error");
    c = classify(TT_DIALECT_ANTHROPIC, "error", "{\"type\":\"error\",\"error\":{\"type\":\"x\",\"message\":\"m\"}}");
    assert_int_equal(c.kind, TT_EV_ERROR);
    assert_true(c.json_ok);
    assert_string_equal(c.error_message, "m");
    c = classify(TT_DIALECT_ANTHROPIC, "ping", "");
    assert_int_equal(c.kind, TT_EV_KEEPALIVE);
    assert_false(c.json_ok);
    c = classify(TT_DIALECT_UNKNOWN, "ping", "{}");
    assert_int_equal(c.kind, TT_EV_KEEPALIVE);
    assert_true(c.json_ok);
    /* "message" is the SSE default type: the same as none */
    c = classify(TT_DIALECT_UNKNOWN, "message", "{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}");
    assert_int_equal(c.kind, TT_EV_ROLE);
    assert_int_equal(c.has, TT_HAS_ROLE | TT_HAS_CHOICES);
    /* the SSE type names a Responses event whose JSON lacks "type" */
    c = classify(TT_DIALECT_UNKNOWN, "response.output_text.delta", "{\"delta\":\"x\"}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.dialect, TT_DIALECT_OPENAI_RESPONSES);
    /* the JSON type wins over the SSE type */
    c = classify(TT_DIALECT_ANTHROPIC, "content_block_stop", "{\"type\":\"message_stop\"}");
    assert_int_equal(c.kind, TT_EV_TERMINAL);
}

static void test_hint_fallback(void **state)
{
    /* the hint's rules find nothing: the shape decides, and says so */
    tt_classified c = classify(TT_DIALECT_OPENAI_CHAT, NULL, "{\"content\":\"x\",\"stop\":false}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.dialect, TT_DIALECT_LLAMACPP);
    c = classify(TT_DIALECT_LLAMACPP, NULL, "{\"choices\":[{\"index\":0,\"text\":\"x\"}]}");
    assert_int_equal(c.dialect, TT_DIALECT_OPENAI_COMPLETIONS);
    c = classify(TT_DIALECT_TGI, NULL, "{\"model\":\"m\",\"created_at\":\"t\",\"response\":\"y\",\"done\":false}");
    assert_int_equal(c.dialect, TT_DIALECT_OLLAMA);
    assert_int_equal(c.text_bytes, 1);
    /* unknown shape keeps the hint */
    c = classify(TT_DIALECT_TGI, NULL, "{\"hello\":1}");
    assert_int_equal(c.dialect, TT_DIALECT_TGI);
    assert_other(c, true);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"type\":\"something.else\"}");
    assert_other(c, true);
    c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"type\":\"response.\"}");
    assert_other(c, true);
}

static void test_from_path(void **state)
{
    static const struct { const char *path; tt_dialect d; } cases[] = {
        { "/v1/chat/completions", TT_DIALECT_OPENAI_CHAT },
        { "/v1/chat/completions?stream=true", TT_DIALECT_OPENAI_CHAT },
        { "/openai/v1/chat/completions", TT_DIALECT_OPENAI_CHAT },
        { "/openai/deployments/gpt4/chat/completions?api-version=2024-02-01", TT_DIALECT_OPENAI_CHAT },
        { "/v1/chat/completions/", TT_DIALECT_OPENAI_CHAT },
        { "/v1/completions", TT_DIALECT_OPENAI_COMPLETIONS },
        { "/proxy/v1/completions#frag", TT_DIALECT_OPENAI_COMPLETIONS },
        { "/completion", TT_DIALECT_LLAMACPP },
        { "/completions", TT_DIALECT_LLAMACPP },
        { "/completion?x=1", TT_DIALECT_LLAMACPP },
        { "/v1/responses", TT_DIALECT_OPENAI_RESPONSES },
        { "/v1/messages", TT_DIALECT_ANTHROPIC },
        { "/anthropic/v1/messages?beta=true", TT_DIALECT_ANTHROPIC },
        { "/generate_stream", TT_DIALECT_TGI },
        { "/generate", TT_DIALECT_TGI },
        { "/api/generate", TT_DIALECT_OLLAMA },
        { "/api/chat", TT_DIALECT_OLLAMA },
        { "/api/chat?", TT_DIALECT_OLLAMA },
        { "/v1/models", TT_DIALECT_UNKNOWN },
        { "/", TT_DIALECT_UNKNOWN },
        { "", TT_DIALECT_UNKNOWN },
        { "?/v1/chat/completions", TT_DIALECT_UNKNOWN },
        { "/v1/chat/completionsX", TT_DIALECT_UNKNOWN },
        { "/health", TT_DIALECT_UNKNOWN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].path);
        uint8_t *copy = tt_guard_copy(cases[i].path, len);
        tt_dialect got = tt_dialect_from_path((const char *)copy, len);
        tt_guard_free(copy, len);
        if (got != cases[i].d)
            fail_msg("%s: got %s, want %s", cases[i].path, tt_dialect_name(got), tt_dialect_name(cases[i].d));
    }
    assert_int_equal(tt_dialect_from_path(NULL, 5), TT_DIALECT_UNKNOWN);
    assert_int_equal(tt_dialect_from_path("/v1/messagesXYZ", 12), TT_DIALECT_ANTHROPIC);
}

static void test_names(void **state)
{
    assert_string_equal(tt_dialect_name(TT_DIALECT_OPENAI_CHAT), "openai-chat");
    assert_string_equal(tt_dialect_name(TT_DIALECT_COUNT), "invalid");
    assert_string_equal(tt_event_kind_name(TT_EV_KEEPALIVE), "KEEPALIVE");
    assert_string_equal(tt_event_kind_name((tt_event_kind)-1), "INVALID");
    for (int k = 0; k < TT_EV_COUNT; k++) assert_non_null(tt_event_kind_name((tt_event_kind)k));
}

/* Classification keeps no state between calls and leaves cJSON's global
 * hooks alone: threads classifying side by side with plain cJSON users. */
static void *classify_loop(void *arg)
{
    const char *chat = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hey\"},\"finish_reason\":null}]}";
    for (int i = 0; i < 20000; i++) {
        tt_classified c;
        tt_dialect_classify(TT_DIALECT_UNKNOWN, NULL, 0, chat, strlen(chat), &c, NULL, 0);
        if (c.kind != TT_EV_TOKEN || c.text_bytes != 3) return (void *)1;
    }
    return NULL;
}

static void *foreign_cjson_loop(void *arg)
{
    for (int i = 0; i < 5000; i++) {
        cJSON *keep = cJSON_Parse("{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\"}]}");
        char *printed = cJSON_PrintUnformatted(keep);
        bool ok = printed && strstr(printed, "\"stream\":true");
        cJSON_free(printed);
        cJSON_Delete(keep);
        if (!ok) return (void *)1;
    }
    return NULL;
}

static void test_threads_and_foreign_cjson(void **state)
{
    cJSON *before = cJSON_Parse("{\"kept\":[1,2,3]}");
    tt_classified c = classify(TT_DIALECT_UNKNOWN, NULL, "{\"choices\":[{\"text\":\"a\"}]}");
    assert_int_equal(c.kind, TT_EV_TOKEN);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, i % 2 ? foreign_cjson_loop : classify_loop, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(before, "kept")), 3);
    cJSON_Delete(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_files),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_grpc_hint),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_huge_string),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_multiple_choices),
        cmocka_unit_test(test_text_hash_and_caps),
        cmocka_unit_test(test_sse_types),
        cmocka_unit_test(test_hint_fallback),
        cmocka_unit_test(test_from_path),
        cmocka_unit_test(test_empty_choices),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_threads_and_foreign_cjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
