/* fuzz_dialect.c - the dialect classifier on arbitrary data, hints, SSE
 * types and text buffer sizes, plus its JSON parser checked against cJSON.
 *
 * Input: byte 0 picks the hint (one past the last is an invalid hint),
 * byte 1 the SSE type (or a type cut from the data), byte 2 the text_cap,
 * byte 3 where to cut the data short (the classifier sees whole events,
 * so "splitting" here means a prefix must also be handled, from a copy that
 * ends exactly where the data ends); the rest is the event data.
 *
 * Golden files make good seeds (tests/fuzz/fuzz_dialect.seeds): when the
 * input holds "=== input", that section is unescaped the way golden.h
 * describes and each "data:" line in it is classified as one event too, so
 * mutations start from realistic frames of every dialect. Every event is
 * also classified through a memo (tt_dialect_classify_memo), with the
 * inside of each of its first strings replaced by input bytes, and must be
 * classified as alone. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"
#include "dialect/dialect_internal.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

static const char *const sse_types[] = {
    NULL, "message", "error", "ping", "response.output_text.delta", "response.completed",
    "content_block_delta", "message_start", "message_stop", "response.failed",
};

static void check_result(const tt_classified *c, const char *text, size_t cap)
{
    CHECK((unsigned)c->kind < TT_EV_COUNT);
    CHECK((unsigned)c->dialect < TT_DIALECT_COUNT);
    CHECK(c->reasoning_bytes <= c->text_bytes);
    CHECK((c->text_bytes > 0) == ((c->has & TT_HAS_TEXT) != 0));
    if (c->text_bytes == 0) CHECK(c->text_hash == 0);
    CHECK(strnlen(c->finish_reason, sizeof c->finish_reason) < sizeof c->finish_reason);
    CHECK(strnlen(c->response_id, sizeof c->response_id) < sizeof c->response_id);
    CHECK(strnlen(c->error_message, sizeof c->error_message) < sizeof c->error_message);
    CHECK(((c->has & TT_HAS_ERROR) != 0) == (c->error_message[0] != 0));
    /* a token without text: TGI's (special or empty), SGLang's and vLLM's gRPC chunks (token ids only) */
    if (c->kind == TT_EV_TOKEN)
        CHECK((c->has & TT_HAS_TEXT) || c->dialect == TT_DIALECT_TGI || c->dialect == TT_DIALECT_SGLANG_GRPC ||
              c->dialect == TT_DIALECT_VLLM_GRPC);
    if (c->kind == TT_EV_ERROR) CHECK(c->has & TT_HAS_ERROR);
    if (c->usage_completion_tokens >= 0 || c->usage_prompt_tokens >= 0) CHECK(c->has & TT_HAS_USAGE);
    if (text && cap) {
        size_t want = c->text_bytes < cap - 1 ? c->text_bytes : cap - 1;
        CHECK(strlen(text) == want);
    }
}

static int same_tree(const cJSON *a, const cJSON *b)
{
    if (!a || !b) return a == b;
    if ((a->type & 0xff) != (b->type & 0xff)) return 0;
    if ((a->string == NULL) != (b->string == NULL)) return 0;
    if (a->string && strcmp(a->string, b->string) != 0) return 0;
    if (cJSON_IsString(a) && strcmp(a->valuestring, b->valuestring) != 0) return 0;
    const cJSON *ca = a->child, *cb = b->child;
    for (; ca && cb; ca = ca->next, cb = cb->next)
        if (!same_tree(ca, cb)) return 0;
    return ca == NULL && cb == NULL;
}

/* dj_parse_known's tree is dj_parse's without the members whose names no
 * reader knows (kept whole inside an "arguments" member); every member's
 * key is the key of its name. */
static int same_known_tree(const cJSON *full, const cJSON *known, int keep_all)
{
    if ((full->type & 0xff) != (known->type & 0xff)) return 0;
    if (dj_key_of(full) != dj_key_of(known)) return 0;
    if ((full->string == NULL) != (known->string == NULL)) return 0;
    if (full->string && strcmp(full->string, known->string) != 0) return 0;
    if (full->string && dj_key_of(full) != dj_key_lookup(full->string, strlen(full->string))) return 0;
    if (cJSON_IsString(full) && strcmp(full->valuestring, known->valuestring) != 0) return 0;
    if (cJSON_IsNumber(full) && full->valuedouble != known->valuedouble) return 0;
    const cJSON *k = known->child;
    for (const cJSON *f = full->child; f; f = f->next) {
        if (cJSON_IsObject(full) && !keep_all && dj_key_of(f) == DJ_KEY_OTHER) continue;
        if (!k || !same_known_tree(f, k, keep_all || dj_key_of(f) == DJ_KEY_arguments)) return 0;
        k = k->next;
    }
    return k == NULL;
}

static void check_known_parser(const char *data, size_t len, const cJSON *full)
{
    _Alignas(16) unsigned char buf[512];
    dj_arena arena;
    dj_arena_init(&arena, buf, sizeof buf);
    cJSON *known = dj_parse_known(&arena, data, len);
    CHECK((known != NULL) == (full != NULL));
    if (full) CHECK(same_known_tree(full, known, 0));
    dj_arena_free(&arena);
}

/* Whatever our parser accepts, cJSON accepts too, as the same tree
 * (cJSON is the more lenient: raw control characters, "1.", a BOM). Numbers
 * longer than cJSON's 63-byte buffer are the one known exception. */
static void check_parser(const char *data, size_t len)
{
    _Alignas(16) unsigned char buf[1024];
    dj_arena arena;
    dj_arena_init(&arena, buf, sizeof buf);
    cJSON *ours = dj_parse(&arena, data, len);
    check_known_parser(data, len, ours);
    if (ours) {
        size_t run = 0, longest = 0;
        for (size_t i = 0; i < len; i++) {
            run = strchr("0123456789+-.eE", data[i]) && data[i] ? run + 1 : 0;
            if (run > longest) longest = run;
        }
        if (longest < 60) {
            cJSON *ref = cJSON_ParseWithLength(data, len);
            CHECK(ref != NULL);
            CHECK(same_tree(ours, ref));
            cJSON_Delete(ref);
        }
    }
    dj_arena_free(&arena);
}

static void check_same(const tt_classified *a, const char *ta, const tt_classified *b, const char *tb)
{
    CHECK(tt_classified_same(a, b));
    if (ta) CHECK(!strcmp(ta, tb));
}

/* data through *memo gives what it gives alone. */
static void check_memo_one(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                           const char *data, size_t n, size_t cap)
{
    char mt[40], at[40];
    tt_classified m, a;
    tt_dialect_classify_memo(memo, hint, type, type_len, data, n, &m, cap ? mt : NULL, cap);
    tt_dialect_classify(hint, type, type_len, data, n, &a, cap ? at : NULL, cap);
    check_same(&m, cap ? mt : NULL, &a, cap ? at : NULL);
}

/* data through a memo, then data with what follows each of its first
 * quotes (up to the next quote) replaced by junk, and data again: each
 * the same as alone. A string's inside so replaced is what the memo reads
 * without parsing. */
static void check_memo(tt_dialect hint, const char *type, size_t type_len, const char *data, size_t n,
                       const uint8_t *junk, size_t junk_len, size_t cap)
{
    tt_classify_memo *memo = NULL;
    check_memo_one(&memo, hint, type, type_len, data, n, cap);
    if (junk_len > 64) junk_len = 64;
    char *variant = malloc(n + junk_len + 1);
    int quotes = 0;
    for (size_t q = 0; q < n && quotes < 8; q++) {
        if (data[q] != '"') continue;
        quotes++;
        const char *next = memchr(data + q + 1, '"', n - q - 1);
        size_t rest = next ? (size_t)(data + n - next) : 0;
        memcpy(variant, data, q + 1);
        memcpy(variant + q + 1, junk, junk_len);
        if (rest) memcpy(variant + q + 1 + junk_len, next, rest);
        check_memo_one(&memo, hint, type, type_len, variant, q + 1 + junk_len + rest, cap);
        check_memo_one(&memo, hint, type, type_len, data, n, cap);
    }
    free(variant);
    tt_classify_memo_free(memo);
}

/* Unescape a golden input section (\\n \\r \\t \\\\ \\0 \\xHH; raw newlines
 * dropped) and classify the payload of every data: line. */
static void classify_golden_lines(tt_dialect hint, const uint8_t *in, size_t n)
{
    const char *start = memmem(in, n, "=== input\n", 10);
    if (!start) return;
    const char *p = start + 10, *end = (const char *)in + n;
    const char *stop = memmem(p, (size_t)(end - p), "=== expect", 10);
    if (stop) end = stop;
    char *buf = malloc((size_t)(end - p) + 1);
    size_t k = 0;
    for (; p < end; p++) {
        if (*p == '\n') continue;
        if (*p != '\\' || p + 1 >= end) {
            buf[k++] = *p;
            continue;
        }
        char e = *++p;
        buf[k++] = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e == '0' ? 0 : e;
    }
    tt_classify_memo *memo = NULL; /* the lines in order through one memo */
    for (size_t i = 0; i < k;) {
        char *eol = memchr(buf + i, '\n', k - i);
        size_t len = eol ? (size_t)(eol - (buf + i)) : k - i;
        if (len >= 5 && memcmp(buf + i, "data:", 5) == 0) {
            size_t skip = len > 5 && buf[i + 5] == ' ' ? 6 : 5;
            char *data = malloc(len - skip + 1);
            memcpy(data, buf + i + skip, len - skip);
            tt_classified c;
            char text[16];
            tt_dialect_classify(hint, NULL, 0, data, len - skip, &c, text, sizeof text);
            check_result(&c, text, sizeof text);
            check_parser(data, len - skip);
            check_memo_one(&memo, hint, NULL, 0, data, len - skip, sizeof text);
            free(data);
        }
        i += len + 1;
    }
    tt_classify_memo_free(memo);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    if (size < 4) return 0;
    tt_dialect hint = (tt_dialect)(input[0] % (TT_DIALECT_COUNT + 1));
    size_t ntypes = sizeof sse_types / sizeof sse_types[0];
    size_t cap = input[2] % 40;
    const uint8_t *rest = input + 4;
    size_t n = size - 4;

    const char *type = NULL;
    size_t type_len = 0;
    if (input[1] < 0xe0) {
        type = sse_types[input[1] % ntypes];
        type_len = type ? strlen(type) : 0;
    } else {
        type_len = (size_t)(input[1] - 0xe0);
        if (type_len > n) type_len = n;
        type = (const char *)rest, rest += type_len, n -= type_len;
    }

    char *data = malloc(n ? n : 1);
    if (n) memcpy(data, rest, n);
    char *text = cap ? malloc(cap) : NULL;
    tt_classified c;
    tt_dialect_classify(hint, type, type_len, data, n, &c, text, cap);
    check_result(&c, text, cap);

    size_t cut = n ? (size_t)input[3] * n / 255 : 0;
    char *prefix = malloc(cut ? cut : 1);
    if (cut) memcpy(prefix, data, cut);
    tt_dialect_classify(hint, type, type_len, prefix, cut, &c, text, cap);
    check_result(&c, text, cap);
    tt_dialect_from_path(prefix, cut);
    free(prefix);

    check_parser(data, n);
    check_memo(hint, type, type_len, data, n, (const uint8_t *)data + n / 2, n - n / 2, cap);
    classify_golden_lines(hint, input, size);
    free(text);
    free(data);
    return 0;
}
