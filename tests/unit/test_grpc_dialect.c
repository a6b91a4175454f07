/* test_grpc_dialect.c - the protobuf wire reader and the gRPC message
 * classifier (userspace/dialect/protobuf_wire.h, dialect_grpc.h).
 *
 * Ground truth: the messages under tests/golden/grpc_dialect/ were encoded
 * by protoc from the .txtpb sources there (regen.sh), not by tokentap; the
 * expectations below are read off those text-format sources. Malformed
 * inputs are small byte strings written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect_grpc.h"
#include "dialect/protobuf_wire.h"

#define GOLDEN_DIR "tests/golden/grpc_dialect"

static uint8_t *load(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN_DIR "/%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (run tests from the repository root)", path);
    uint8_t *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

/* FNV-1a 64, written out here so the hash is checked independently. */
static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

typedef struct expect {
    const char *name;
    tt_grpc_api api;
    tt_event_kind kind;
    uint32_t has_set;   /* flags that must be set */
    uint32_t has_clear; /* flags that must not be */
    const char *text;
    const char *id;
    const char *error;
    const char *finish;
    int64_t prompt, completion;
    uint32_t token_ids;
} expect;

#define T TT_HAS_TEXT
#define TERM TT_HAS_TERMINAL
#define ERR TT_HAS_ERROR
#define FIN TT_HAS_FINISH
#define USE TT_HAS_USAGE
#define BAD TT_HAS_MALFORMED

static const expect cases[] = {
    {"triton_text", TT_GRPC_TRITON, TT_EV_TOKEN, T, TERM | ERR | BAD, "Hello", "req-7", "", "", -1, -1, 0},
    {"triton_final", TT_GRPC_TRITON, TT_EV_TERMINAL, TERM, T | ERR | BAD, "", "req-7", "", "", -1, -1, 0},
    {"triton_text_final", TT_GRPC_TRITON, TT_EV_TOKEN, T | TERM, ERR | BAD, " end", "req-8", "", "", -1, -1, 0},
    {"triton_not_final", TT_GRPC_TRITON, TT_EV_TOKEN, T, TERM | ERR | BAD, "abc", "req-8", "", "", -1, -1, 0},
    {"triton_error", TT_GRPC_TRITON, TT_EV_ERROR, ERR, T | TERM,
     "", "", "in ensemble 'ensemble', request rejected: model not ready", "", -1, -1, 0},
    {"triton_multi", TT_GRPC_TRITON, TT_EV_TOKEN, T, TERM | ERR | BAD, " world!", "42", "", "", -1, -1, 0},
    {"triton_contents", TT_GRPC_TRITON, TT_EV_TOKEN, T, TERM | ERR | BAD, "foo bar", "c1", "", "", -1, -1, 0},
    {"triton_no_text_output", TT_GRPC_TRITON, TT_EV_META, 0, T | TERM | ERR | BAD, "", "n1", "", "", -1, -1, 0},
    {"sglang_chunk", TT_GRPC_SGLANG, TT_EV_TOKEN, USE, T | TERM | ERR | BAD, "", "sg-1", "", "", 5, 1, 1},
    {"sglang_chunk_multi", TT_GRPC_SGLANG, TT_EV_TOKEN, USE, T | TERM | ERR | BAD, "", "sg-1", "", "", -1, 4, 3},
    {"sglang_complete", TT_GRPC_SGLANG, TT_EV_TERMINAL, TERM | FIN | USE, T | ERR | BAD,
     "", "sg-1", "", "length", 5, 4, 0},
    {"sglang_complete_bare", TT_GRPC_SGLANG, TT_EV_TERMINAL, TERM, T | ERR | BAD | FIN | USE,
     "", "sg-2", "", "", -1, -1, 0},
    {"sglang_error", TT_GRPC_SGLANG, TT_EV_ERROR, ERR, T | TERM | BAD, "", "sg-3", "scheduler overloaded", "", -1, -1, 0},
    {"sglang_error_details", TT_GRPC_SGLANG, TT_EV_ERROR, ERR, T | TERM | BAD, "", "sg-4", "prompt too long", "", -1, -1, 0},
    {"vllm_chunk", TT_GRPC_VLLM, TT_EV_TOKEN, USE, T | TERM | ERR | BAD, "", "", "", "", 4, 3, 3},
    {"vllm_complete", TT_GRPC_VLLM, TT_EV_TERMINAL, TERM | FIN | USE, T | ERR | BAD, "", "", "", "length", 4, 3, 0},
    {"vllm_empty_chunk", TT_GRPC_VLLM, TT_EV_META, 0, T | TERM | ERR | BAD | USE, "", "", "", "", -1, -1, 0},
};

static void test_golden(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const expect *e = &cases[i];
        size_t len;
        uint8_t *msg = load(e->name, &len);
        tt_classified c;
        tt_grpc_detail d;
        char text[256];
        print_message("case %s\n", e->name);
        assert_true(tt_grpc_classify(e->api, msg, len, &c, text, sizeof text, &d));
        assert_true(c.json_ok);
        assert_int_equal(c.kind, e->kind);
        assert_int_equal(c.has & e->has_set, e->has_set);
        assert_int_equal(c.has & e->has_clear, 0);
        assert_string_equal(text, e->text);
        assert_int_equal(c.text_bytes, strlen(e->text));
        assert_true(c.text_hash == (e->text[0] ? fnv(e->text) : 0));
        assert_string_equal(c.response_id, e->id);
        assert_string_equal(c.error_message, e->error);
        assert_string_equal(c.finish_reason, e->finish);
        assert_int_equal(c.usage_prompt_tokens, e->prompt);
        assert_int_equal(c.usage_completion_tokens, e->completion);
        assert_int_equal(d.token_ids, e->token_ids);
        assert_int_equal(c.dialect, TT_DIALECT_UNKNOWN);
        free(msg);
    }
}

static void test_triton_detail(void **state)
{
    (void)state;
    size_t len;
    tt_classified c;
    tt_grpc_detail d;
    uint8_t *msg = load("triton_multi", &len);
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, msg, len, &c, NULL, 0, &d));
    assert_string_equal(d.model_name, "tensorrt_llm_bls");
    assert_int_equal(d.outputs, 3);
    assert_int_equal(d.text_output_index, 1);
    assert_true(d.text_from_raw);
    assert_false(d.final_flag);
    assert_int_equal(c.text_bytes, 7); /* two BYTES elements: " world" and "!" */
    free(msg);

    msg = load("triton_text", &len);
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, msg, len, &c, NULL, 0, &d));
    assert_string_equal(d.model_name, "ensemble");
    assert_string_equal(d.model_version, "1");
    free(msg);

    msg = load("triton_contents", &len);
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, msg, len, &c, NULL, 0, &d));
    assert_false(d.text_from_raw);
    assert_int_equal(d.text_output_index, 1);
    free(msg);

    msg = load("triton_final", &len);
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, msg, len, &c, NULL, 0, &d));
    assert_true(d.final_flag);
    free(msg);
}

/* Every prefix of every golden message: no crash, and any text reported is
 * the whole message's text (all of it sits in one top-level field, so a
 * cut either drops it or leaves it whole). A small text buffer too. */
static void test_prefixes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const expect *e = &cases[i];
        size_t len;
        uint8_t *msg = load(e->name, &len);
        for (size_t n = 0; n < len; n++) {
            uint8_t *cut = malloc(n ? n : 1); /* exact size: ASan sees any overread */
            memcpy(cut, msg, n);
            tt_classified c;
            char text[256];
            bool ok = tt_grpc_classify(e->api, cut, n, &c, text, sizeof text, NULL);
            assert_int_equal(ok, c.json_ok);
            if (!ok) {
                assert_int_equal(c.kind, TT_EV_OTHER);
                assert_int_equal(c.has, 0);
            }
            if (c.text_bytes) assert_string_equal(text, e->text);
            else assert_string_equal(text, "");
            assert_true(c.kind != TT_EV_TOKEN || c.has & TT_HAS_TEXT || e->api != TT_GRPC_TRITON);
            char small[3];
            tt_grpc_classify(e->api, cut, n, &c, small, sizeof small, NULL);
            assert_true(strlen(small) <= 2);
            free(cut);
        }
        free(msg);
    }
}

static void check_bad(tt_grpc_api api, const uint8_t *m, size_t n)
{
    tt_classified c;
    char text[64];
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, m, n);
    assert_false(tt_grpc_classify(api, copy, n, &c, text, sizeof text, NULL));
    assert_false(c.json_ok);
    assert_int_equal(c.kind, TT_EV_OTHER);
    assert_int_equal(c.text_bytes, 0);
    assert_string_equal(text, "");
    free(copy);
}

static void test_garbage(void **state)
{
    (void)state;
    /* a group (wire type 3), wire types 6 and 7, field number 0, a length
     * past the end, an 11-byte varint, a tag above 32 bits */
    static const uint8_t group[] = {0x0b, 0x0c};
    static const uint8_t wt6[] = {0x0e, 0x00};
    static const uint8_t wt7[] = {0x0f, 0x00};
    static const uint8_t field0[] = {0x02, 0x00};
    static const uint8_t overlong[] = {0x0a, 0x05, 'a', 'b'};
    static const uint8_t varint11[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t bigtag[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00};
    /* infer_response holding a truncated outputs field */
    static const uint8_t nested[] = {0x12, 0x03, 0x2a, 0x05, 0x0a};
    for (int api = 0; api < TT_GRPC_API_COUNT; api++) {
        check_bad(api, group, sizeof group);
        check_bad(api, wt6, sizeof wt6);
        check_bad(api, wt7, sizeof wt7);
        check_bad(api, field0, sizeof field0);
        check_bad(api, overlong, sizeof overlong);
        check_bad(api, varint11, sizeof varint11);
        check_bad(api, bigtag, sizeof bigtag);
    }
    check_bad(TT_GRPC_TRITON, nested, sizeof nested);

    /* an out-of-range api, a NULL buffer with a length */
    tt_classified c;
    assert_false(tt_grpc_classify(TT_GRPC_API_COUNT, (const uint8_t *)"", 0, &c, NULL, 0, NULL));
    assert_false(tt_grpc_classify(TT_GRPC_TRITON, NULL, 5, &c, NULL, 0, NULL));
    /* the empty message is a valid (empty) message */
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, NULL, 0, &c, NULL, 0, NULL));
    assert_int_equal(c.kind, TT_EV_META);

    /* random bytes: no crash, and whatever decodes keeps the invariants */
    srand(15);
    for (int round = 0; round < 20000; round++) {
        uint8_t buf[48];
        size_t n = (size_t)(rand() % (int)sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rand();
        char text[16];
        bool ok = tt_grpc_classify((tt_grpc_api)(round % 3), buf, n, &c, text, sizeof text, NULL);
        assert_int_equal(ok, c.json_ok);
        assert_true((c.text_bytes > 0) == ((c.has & TT_HAS_TEXT) != 0));
        assert_true(((c.has & TT_HAS_ERROR) != 0) == (c.error_message[0] != 0));
    }
}

/* A text_output whose raw BYTES element claims more than it holds: no
 * text, flagged malformed; a non-BYTES text_output likewise. Built by hand:
 * 12 len: infer_response { 2a len: outputs { 0a 0b "text_output" }
 * 32 len: raw_output_contents }. */
static void test_raw_malformed(void **state)
{
    (void)state;
    uint8_t m[64];
    size_t n = 0;
    m[n++] = 0x12;
    m[n++] = 0; /* infer_response length, filled below */
    m[n++] = 0x2a;
    m[n++] = 13;
    m[n++] = 0x0a;
    m[n++] = 11;
    memcpy(m + n, "text_output", 11);
    n += 11;
    m[n++] = 0x32;
    m[n++] = 6;
    static const uint8_t raw[] = {9, 0, 0, 0, 'a', 'b'};
    memcpy(m + n, raw, sizeof raw);
    n += sizeof raw;
    m[1] = (uint8_t)(n - 2);
    tt_classified c;
    char text[16];
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, m, n, &c, text, sizeof text, NULL));
    assert_int_equal(c.text_bytes, 0);
    assert_true(c.has & TT_HAS_MALFORMED);
    assert_string_equal(text, "");
    assert_int_equal(c.kind, TT_EV_META);
}

/* vLLM token ids not packed (one VARINT field per id), written by hand:
 * 0a 06 { 08 65 08 66 10 04 }: chunk { token_ids 101, token_ids 102,
 * prompt_tokens 4 }. */
static void test_vllm_unpacked(void **state)
{
    (void)state;
    static const uint8_t m[] = {0x0a, 0x06, 0x08, 0x65, 0x08, 0x66, 0x10, 0x04};
    tt_classified c;
    tt_grpc_detail d;
    assert_true(tt_grpc_classify(TT_GRPC_VLLM, m, sizeof m, &c, NULL, 0, &d));
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(d.token_ids, 2);
    assert_int_equal(c.usage_prompt_tokens, 4);
}

/* A chunk of SGLang's earlier layout (one token_id, then a text), written
 * by hand: 12 06 { 08 05 12 02 "hi" }: a token, its text not counted, and
 * the unexpected wire type of field 2 flagged. */
static void test_sglang_old_chunk(void **state)
{
    (void)state;
    static const uint8_t m[] = {0x12, 0x06, 0x08, 0x05, 0x12, 0x02, 'h', 'i'};
    tt_classified c;
    assert_true(tt_grpc_classify(TT_GRPC_SGLANG, m, sizeof m, &c, NULL, 0, NULL));
    assert_int_equal(c.kind, TT_EV_TOKEN);
    assert_int_equal(c.text_bytes, 0);
    assert_true(c.has & TT_HAS_MALFORMED);
}

static void test_wire_varint(void **state)
{
    (void)state;
    struct {
        uint8_t b[12];
        size_t n;
        bool ok;
        uint64_t v;
    } v[] = {
        {{0x00}, 1, true, 0},
        {{0x96, 0x01}, 2, true, 150},
        {{0xac, 0x02}, 2, true, 300},
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, true, UINT64_MAX},
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10, false, 0},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 11, false, 0},
        {{0x80}, 1, false, 0},
        {{0}, 0, false, 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const uint8_t *p = v[i].b;
        uint64_t out = 7;
        assert_int_equal(pb_read_varint(&p, v[i].b + v[i].n, &out), v[i].ok);
        if (v[i].ok) {
            assert_true(out == v[i].v);
            assert_ptr_equal(p, v[i].b + v[i].n);
        } else {
            assert_ptr_equal(p, v[i].b);
        }
    }
}

static void test_wire_fields(void **state)
{
    (void)state;
    /* 1: varint 150; 2: "hi"; 3: fixed64; 4: fixed32; 5: packed [3, 270] */
    static const uint8_t m[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h', 'i',
                                0x19, 1, 0, 0, 0, 0, 0, 0, 0x80,
                                0x25, 0x78, 0x56, 0x34, 0x12,
                                0x2a, 0x03, 0x03, 0x8e, 0x02};
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, m, sizeof m);
    assert_true(pb_next_field(&r, &f));
    assert_int_equal(f.number, 1);
    assert_int_equal(f.type, PB_WT_VARINT);
    assert_int_equal(f.value, 150);
    assert_true(pb_next_field(&r, &f));
    assert_int_equal(f.type, PB_WT_LEN);
    assert_int_equal(f.len, 2);
    assert_memory_equal(f.data, "hi", 2);
    assert_true(pb_next_field(&r, &f));
    assert_int_equal(f.type, PB_WT_I64);
    assert_true(f.value == 0x8000000000000001ull);
    assert_true(pb_next_field(&r, &f));
    assert_int_equal(f.type, PB_WT_I32);
    assert_int_equal(f.value, 0x12345678);
    assert_true(pb_next_field(&r, &f));
    assert_int_equal(f.number, 5);
    assert_int_equal(pb_packed_varint_count(f.data, f.len), 2);
    size_t pos = 0;
    uint64_t x;
    assert_true(pb_packed_varint_next(f.data, f.len, &pos, &x, NULL));
    assert_int_equal(x, 3);
    assert_true(pb_packed_varint_next(f.data, f.len, &pos, &x, NULL));
    assert_int_equal(x, 270);
    assert_false(pb_packed_varint_next(f.data, f.len, &pos, &x, NULL));
    assert_false(pb_next_field(&r, &f));
    assert_false(r.error);
    /* a packed slice ending inside a varint */
    static const uint8_t bad[] = {0x01, 0x80};
    assert_int_equal(pb_packed_varint_count(bad, sizeof bad), -1);
    /* a truncated fixed64: error, and it stays an error */
    pb_reader_init(&r, m + 7, 5);
    assert_false(pb_next_field(&r, &f));
    assert_true(r.error);
    assert_false(pb_next_field(&r, &f));
}

static void test_api_names(void **state)
{
    (void)state;
    const char *p = "/inference.GRPCInferenceService/ModelStreamInfer";
    assert_int_equal(tt_grpc_api_from_path(p, strlen(p)), TT_GRPC_TRITON);
    p = "/sglang.grpc.scheduler.SglangScheduler/Generate";
    assert_int_equal(tt_grpc_api_from_path(p, strlen(p)), TT_GRPC_SGLANG);
    p = "/vllm.grpc.engine.VllmEngine/Generate";
    assert_int_equal(tt_grpc_api_from_path(p, strlen(p)), TT_GRPC_VLLM);
    p = "/inference.GRPCInferenceService/ModelInfer";
    assert_int_equal(tt_grpc_api_from_path(p, strlen(p)), TT_GRPC_API_COUNT);
    assert_string_equal(tt_grpc_api_name(TT_GRPC_TRITON), "triton-grpc");
    assert_string_equal(tt_grpc_api_name(TT_GRPC_API_COUNT), "invalid");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),         cmocka_unit_test(test_triton_detail),
        cmocka_unit_test(test_prefixes),       cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_raw_malformed),  cmocka_unit_test(test_vllm_unpacked),
        cmocka_unit_test(test_sglang_old_chunk),
        cmocka_unit_test(test_wire_varint),    cmocka_unit_test(test_wire_fields),
        cmocka_unit_test(test_api_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
