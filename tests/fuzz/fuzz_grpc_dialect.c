/* fuzz_grpc_dialect.c - the protobuf wire reader and the gRPC message
 * classifier on arbitrary bytes.
 *
 * Input: byte 0 picks the API (one past the last is an invalid API),
 * byte 1 the text buffer size; the rest is the message, copied into a
 * buffer of exactly its size so any overread is caught. Seeds: the
 * protoc-encoded messages of tests/golden/grpc_dialect (fuzz_grpc_dialect.seeds),
 * which start with a tag byte, so the first two bytes of a seed are used as
 * API and size and the rest still parses as fields often enough. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect_grpc.h"
#include "dialect/protobuf_wire.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

/* Walk every field, descending into LEN fields that parse, to a bounded depth. */
static void walk(const uint8_t *p, size_t n, int depth)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, p, n);
    size_t seen = 0;
    while (pb_next_field(&r, &f)) {
        CHECK(f.number >= 1 && f.number <= PB_MAX_FIELD_NUMBER);
        CHECK(f.type == PB_WT_VARINT || f.type == PB_WT_I64 || f.type == PB_WT_LEN || f.type == PB_WT_I32);
        if (f.type == PB_WT_LEN) {
            CHECK(f.data >= p && f.data + f.len <= p + n);
            long c = pb_packed_varint_count(f.data, f.len);
            CHECK(c >= -1 && (c < 0 || (size_t)c <= f.len));
            if (depth < 8) walk(f.data, f.len, depth + 1);
        }
        CHECK(r.p <= p + n);
        seen++;
        CHECK(seen <= n);
    }
    CHECK(r.p <= p + n);
}

static void check(const tt_classified *c, bool ok, const char *text, size_t cap)
{
    CHECK(ok == c->json_ok);
    CHECK((unsigned)c->kind < TT_EV_COUNT);
    CHECK(c->dialect == TT_DIALECT_UNKNOWN);
    CHECK((c->text_bytes > 0) == ((c->has & TT_HAS_TEXT) != 0));
    if (c->text_bytes == 0) CHECK(c->text_hash == 0);
    CHECK(strnlen(c->finish_reason, sizeof c->finish_reason) < sizeof c->finish_reason);
    CHECK(strnlen(c->response_id, sizeof c->response_id) < sizeof c->response_id);
    CHECK(strnlen(c->error_message, sizeof c->error_message) < sizeof c->error_message);
    CHECK(((c->has & TT_HAS_ERROR) != 0) == (c->error_message[0] != 0));
    if (c->kind == TT_EV_ERROR) CHECK(c->has & TT_HAS_ERROR);
    if (c->usage_completion_tokens >= 0 || c->usage_prompt_tokens >= 0) CHECK(c->has & TT_HAS_USAGE);
    if (!ok) CHECK(c->kind == TT_EV_OTHER && c->has == 0 && c->text_bytes == 0);
    if (text && cap) {
        size_t want = c->text_bytes < cap - 1 ? c->text_bytes : cap - 1;
        CHECK(strlen(text) == want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    tt_grpc_api api = (tt_grpc_api)(data[0] % (TT_GRPC_API_COUNT + 1));
    size_t cap = data[1] % 64;
    size_t n = size - 2;
    uint8_t *msg = malloc(n ? n : 1);
    if (!msg) return 0;
    memcpy(msg, data + 2, n);
    walk(msg, n, 0);
    char *text = cap ? malloc(cap) : NULL;
    tt_classified c;
    tt_grpc_detail d;
    bool ok = tt_grpc_classify(api, msg, n, &c, text, cap, &d);
    check(&c, ok, text, cap);
    CHECK(strnlen(d.model_name, sizeof d.model_name) < sizeof d.model_name);
    CHECK(d.text_output_index >= -1);
    /* the same message as each of the three APIs, without a text buffer */
    for (int a = 0; a < TT_GRPC_API_COUNT; a++) {
        ok = tt_grpc_classify((tt_grpc_api)a, msg, n, &c, NULL, 0, NULL);
        check(&c, ok, NULL, 0);
    }
    free(text);
    free(msg);
    return 0;
}
