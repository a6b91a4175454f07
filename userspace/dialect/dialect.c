/* dialect.c - parse one event's data, find its dialect, hand it to the
 * reader of that dialect (dialect_openai.c, dialect_anthropic.c,
 * dialect_native.c), and settle what it means.
 *
 * The data is parsed by dialect_json.c into cJSON-shaped nodes in an arena
 * that starts on this function's stack, so a typical event costs no malloc
 * and leaves cJSON's process-wide hooks alone. */
#include "dialect/dialect_grpc.h"
#include "dialect/dialect_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { STACK_ARENA_BYTES = 8 * 1024 };

/* ---- helpers shared by the readers ---- */

void sink_add(text_sink *sink, const char *piece, size_t len, uint32_t flags)
{
    if (!piece || len == 0) return;
    if (sink->pieces++ == 0) {
        sink->first_piece = piece;
        sink->first_flags = flags;
    }
    tt_classified *out = sink->out;
    out->has |= TT_HAS_TEXT | flags;
    uint64_t total = (uint64_t)out->text_bytes + len;
    out->text_bytes = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
    if (flags & TT_HAS_REASONING) {
        uint64_t r = (uint64_t)out->reasoning_bytes + len;
        out->reasoning_bytes = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    }
    sink->hash = dj_fnv_add(sink->hash, piece, len);
    if (sink->text_out && sink->text_len + 1 < sink->text_cap) {
        size_t room = sink->text_cap - 1 - sink->text_len;
        size_t n = len < room ? len : room;
        memcpy(sink->text_out + sink->text_len, piece, n);
        sink->text_len += n;
        sink->text_out[sink->text_len] = 0;
    }
}

const char *dj_string(tt_classified *out, const cJSON *node)
{
    if (!node || dj_is_null(node)) return NULL;
    if (dj_is_string(node) && node->valuestring) return node->valuestring;
    out->has |= TT_HAS_MALFORMED;
    return NULL;
}

int64_t dj_count(tt_classified *out, const cJSON *node)
{
    if (!node || dj_is_null(node)) return -1;
    if (dj_is_number(node)) {
        double d = node->valuedouble;
        if (d >= 0 && d < 9.0e18 && (double)(int64_t)d == d) return (int64_t)d;
    }
    out->has |= TT_HAS_MALFORMED;
    return -1;
}

const cJSON *dj_object(tt_classified *out, const cJSON *node)
{
    if (!node || dj_is_null(node)) return NULL;
    if (dj_is_object(node)) return node;
    out->has |= TT_HAS_MALFORMED;
    return NULL;
}

const cJSON *dj_array(tt_classified *out, const cJSON *node)
{
    if (!node || dj_is_null(node)) return NULL;
    if (dj_is_array(node)) return node;
    out->has |= TT_HAS_MALFORMED;
    return NULL;
}

const cJSON *dj_member(const cJSON *obj, dj_key key)
{
    if (!obj || !dj_is_object(obj)) return NULL;
    for (const cJSON *c = obj->child; c; c = c->next)
        if (dj_key_of(c) == key) return c;
    return NULL;
}

int dj_true(const cJSON *node)
{
    return node && dj_is_true(node);
}

void dj_copy(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

void dj_usage(tt_classified *out, const cJSON *usage)
{
    usage = dj_object(out, usage);
    if (!usage) return;
    out->has |= TT_HAS_USAGE;
    for (const cJSON *c = usage->child; c; c = c->next) {
        dj_key key = dj_key_of(c);
        if (key == DJ_KEY_prompt_tokens || key == DJ_KEY_input_tokens)
            out->usage_prompt_tokens = dj_count(out, c);
        else if (key == DJ_KEY_completion_tokens || key == DJ_KEY_output_tokens)
            out->usage_completion_tokens = dj_count(out, c);
    }
}

void dj_finish(tt_classified *out, const char *reason)
{
    if (!reason || !*reason || (out->has & TT_HAS_FINISH)) return;
    out->has |= TT_HAS_FINISH;
    dj_copy(out->finish_reason, sizeof out->finish_reason, reason);
}

tt_event_kind dj_derive_kind(const tt_classified *out, int token_frame, tt_event_kind fallback)
{
    uint32_t has = out->has;
    if ((has & TT_HAS_ERROR) && !(has & TT_HAS_TERMINAL)) return TT_EV_ERROR;
    if ((has & TT_HAS_TEXT) || token_frame) return TT_EV_TOKEN;
    if (has & TT_HAS_TERMINAL) return TT_EV_TERMINAL;
    if (has & TT_HAS_FINISH) return TT_EV_FINISH;
    if (has & TT_HAS_USAGE) return TT_EV_USAGE;
    if (has & TT_HAS_CHOICES) return TT_EV_ROLE;
    return fallback;
}

/* ---- one event ---- */

static void pick_top(const cJSON *root, dialect_top *top)
{
    memset(top, 0, sizeof *top);
    for (const cJSON *c = root->child; c; c = c->next) {
        unsigned slot = (unsigned)dj_key_of(c) - 1; /* DJ_KEY_OTHER wraps past the end */
        if (slot < DJ_TOP_COUNT && !top->slot[slot]) top->slot[slot] = c;
    }
}

/* Inlined, so that a literal name's length is a constant: this runs for
 * every event, and most have no type at all. */
static inline __attribute__((always_inline)) bool type_is(const char *type, size_t len, const char *name)
{
    if (!type) return false;
    size_t n = strlen(name);
    return len == n && memcmp(type, name, n) == 0;
}

static bool is_anthropic_type(const char *type, size_t len)
{
    static const char *const names[] = { "message_start", "message_delta", "message_stop",
                                         "content_block_start", "content_block_delta",
                                         "content_block_stop", "ping" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (type_is(type, len, names[i])) return true;
    return false;
}

/* The dialect an object's shape says, UNKNOWN when it says none. */
static tt_dialect shape_dialect(const dialect_top *top, const char *type, size_t type_len)
{
    if (top->choices && dj_is_array(top->choices)) {
        for (const cJSON *ch = top->choices->child; ch; ch = ch->next) {
            if (dj_member(ch, DJ_KEY_delta)) return TT_DIALECT_OPENAI_CHAT;
            if (dj_member(ch, DJ_KEY_text)) return TT_DIALECT_OPENAI_COMPLETIONS;
        }
        const char *obj = dj_is_string(top->object) ? top->object->valuestring : "";
        if (!strcmp(obj, "text_completion")) return TT_DIALECT_OPENAI_COMPLETIONS;
        return TT_DIALECT_OPENAI_CHAT;
    }
    if (type && type_len > 9 && memcmp(type, "response.", 9) == 0) return TT_DIALECT_OPENAI_RESPONSES;
    if (is_anthropic_type(type, type_len)) return TT_DIALECT_ANTHROPIC;
    if (dj_is_object(top->token) || (dj_is_string(top->generated_text) && top->details))
        return TT_DIALECT_TGI;
    if (dj_is_string(top->content) && dj_is_bool(top->stop)) return TT_DIALECT_LLAMACPP;
    if (dj_is_string(top->text_output) && dj_is_string(top->model_name)) return TT_DIALECT_TRITON;
    if (dj_is_bool(top->done) && (top->model || top->created_at || top->response || top->message))
        return TT_DIALECT_OLLAMA;
    return TT_DIALECT_UNKNOWN;
}

static int read_as(tt_dialect d, const dialect_top *top, const char *type, size_t type_len,
                   tt_classified *out, text_sink *sink)
{
    switch (d) {
    case TT_DIALECT_OPENAI_COMPLETIONS:
    case TT_DIALECT_OPENAI_CHAT:
        return dialect_read_openai(top, out, sink);
    case TT_DIALECT_OPENAI_RESPONSES:
        return dialect_read_responses(top, type, type_len, out, sink);
    case TT_DIALECT_ANTHROPIC:
        return dialect_read_anthropic(top, type, type_len, out, sink);
    case TT_DIALECT_TGI:
        return dialect_read_tgi(top, out, sink);
    case TT_DIALECT_LLAMACPP:
        return dialect_read_llamacpp(top, out, sink);
    case TT_DIALECT_OLLAMA:
        return dialect_read_ollama(top, out, sink);
    case TT_DIALECT_TRITON:
        return dialect_read_triton(top, out, sink);
    default:
        return 0;
    }
}

/* An empty result. The text fields are cleared by their first byte only:
 * they are C strings, and this runs once or more per event. */
static void reset_result(tt_classified *out, text_sink *sink, tt_dialect d)
{
    out->kind = TT_EV_OTHER;
    out->has = 0;
    out->json_ok = false;
    out->dialect = d;
    out->text_bytes = 0;
    out->reasoning_bytes = 0;
    out->text_hash = 0;
    out->usage_prompt_tokens = -1;
    out->usage_completion_tokens = -1;
    out->finish_reason[0] = 0;
    out->response_id[0] = 0;
    out->error_message[0] = 0;
    sink->out = out;
    sink->text_len = 0;
    sink->hash = DJ_FNV_OFFSET;
    sink->pieces = 0;
    sink->first_piece = NULL;
    if (sink->text_out && sink->text_cap) sink->text_out[0] = 0;
}

static void set_error(tt_classified *out, const char *msg, size_t len)
{
    len = strnlen(msg, len);
    if (len == 0) msg = "error", len = 5;
    out->has |= TT_HAS_ERROR;
    size_t n = len < sizeof out->error_message - 1 ? len : sizeof out->error_message - 1;
    memcpy(out->error_message, msg, n);
    out->error_message[n] = 0;
}

/* An error object in any dialect: {"error": ...} (OpenAI, vLLM, TGI,
 * llama.cpp, Ollama, Anthropic), {"type":"error",...} (Responses),
 * {"object":"error",...} (older vLLM). */
static bool read_error(const dialect_top *top, tt_classified *out)
{
    const cJSON *err = top->error;
    bool typed = (dj_is_string(top->type) && !strcmp(top->type->valuestring, "error")) ||
                 (dj_is_string(top->object) && !strcmp(top->object->valuestring, "error"));
    if ((!err || dj_is_null(err) || dj_is_false(err)) && !typed) return false;
    const char *msg = NULL;
    if (dj_is_string(err)) msg = err->valuestring;
    if (!msg) {
        const cJSON *m = dj_member(err, DJ_KEY_message);
        if (dj_is_string(m)) msg = m->valuestring;
    }
    if (!msg && dj_is_string(top->message)) msg = top->message->valuestring;
    if (!msg) {
        const cJSON *t = dj_member(err, DJ_KEY_type);
        if (dj_is_string(t)) msg = t->valuestring;
    }
    if (!msg || !*msg) msg = "error";
    set_error(out, msg, strlen(msg));
    return true;
}

static void classify_json(tt_dialect hint, const cJSON *root, const char *sse_type, size_t sse_type_len,
                          tt_classified *out, text_sink *sink)
{
    if (!dj_is_object(root)) return;
    dialect_top top;
    pick_top(root, &top);
    if (read_error(&top, out)) {
        out->kind = TT_EV_ERROR;
        return;
    }
    const char *type = sse_type;
    size_t type_len = sse_type_len;
    if (dj_is_string(top.type)) {
        type = top.type->valuestring;
        type_len = strlen(type);
    }
    if (hint != TT_DIALECT_UNKNOWN && read_as(hint, &top, type, type_len, out, sink)) return;
    tt_dialect shape = shape_dialect(&top, type, type_len);
    if (shape == TT_DIALECT_UNKNOWN || shape == hint) {
        reset_result(out, sink, hint);
        out->json_ok = true;
        return;
    }
    reset_result(out, sink, shape);
    out->json_ok = true;
    if (!read_as(shape, &top, type, type_len, out, sink)) {
        reset_result(out, sink, hint);
        out->json_ok = true;
    }
}

/* Classify a JSON (non-gRPC) event: type already normalized, data_len 0
 * when data is NULL; fills *piece when piece is not NULL. */
static void classify_json_event(tt_dialect hint, const char *type, size_t type_len, const char *data, size_t data_len,
                                tt_classified *out, char *text_out, size_t text_cap, dialect_piece *piece)
{
    text_sink sink = { .text_out = text_out, .text_cap = text_cap };
    reset_result(out, &sink, hint);
    if (piece) piece->offset = SIZE_MAX;
    bool sse_error = type_is(type, type_len, "error");

    if (!sse_error && data_len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        out->kind = TT_EV_TERMINAL;
        out->has = TT_HAS_TERMINAL;
        out->json_ok = true;
        return;
    }
    _Alignas(16) unsigned char stack_arena[STACK_ARENA_BYTES];
    dj_arena arena;
    dj_arena_init(&arena, stack_arena, sizeof stack_arena);
    const cJSON *root = dj_parse_known(&arena, data, data_len);
    out->json_ok = root != NULL;
    if (sse_error) {
        if (dj_is_object(root)) {
            dialect_top top;
            pick_top(root, &top);
            read_error(&top, out);
        }
        if (!(out->has & TT_HAS_ERROR)) set_error(out, data ? data : "", data_len);
        out->kind = TT_EV_ERROR;
    } else if (type_is(type, type_len, "ping")) {
        out->kind = TT_EV_KEEPALIVE;
    } else if (root) {
        classify_json(hint, root, type, type_len, out, &sink);
        /* the one piece of text, when it is a string value of the data */
        const unsigned char *copy = arena.last_copy, *at = (const unsigned char *)sink.first_piece;
        if (piece && sink.pieces == 1 && copy && at > copy && at < copy + data_len) {
            piece->offset = (size_t)(at - copy);
            piece->flags = sink.first_flags;
        }
    }
    dj_arena_free(&arena);
    if (out->text_bytes) out->text_hash = sink.hash;
}

void tt_dialect_classify_memo(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                              const char *data, size_t data_len, tt_classified *out, char *text_out,
                              size_t text_cap)
{
    if ((unsigned)hint >= TT_DIALECT_COUNT) hint = TT_DIALECT_UNKNOWN;
    tt_grpc_api api = tt_grpc_api_of(hint);
    if (api != TT_GRPC_API_COUNT) { /* a gRPC message: no memo */
        tt_grpc_classify(api, (const uint8_t *)data, data ? data_len : 0, out, text_out, text_cap, NULL);
        out->dialect = hint;
        return;
    }
    if (!data) data_len = 0;
    if (!type) type_len = 0;
    if (type_is(type, type_len, "message")) type = NULL, type_len = 0; /* the SSE default is none */
    if (memo && *memo && dialect_memo_classify(*memo, hint, type, type_len, data, data_len, out, text_out, text_cap))
        return;
    dialect_piece piece;
    classify_json_event(hint, type, type_len, data, data_len, out, text_out, text_cap, memo ? &piece : NULL);
    if (memo) dialect_memo_remember(memo, hint, type, type_len, data, data_len, out, &piece);
}

void tt_dialect_classify(tt_dialect hint, const char *type, size_t type_len, const char *data,
                         size_t data_len, tt_classified *out, char *text_out, size_t text_cap)
{
    tt_dialect_classify_memo(NULL, hint, type, type_len, data, data_len, out, text_out, text_cap);
}

bool tt_classified_same(const tt_classified *a, const tt_classified *b)
{
    return a->kind == b->kind && a->has == b->has && a->json_ok == b->json_ok && a->dialect == b->dialect &&
           a->text_bytes == b->text_bytes && a->reasoning_bytes == b->reasoning_bytes &&
           a->text_hash == b->text_hash && a->usage_prompt_tokens == b->usage_prompt_tokens &&
           a->usage_completion_tokens == b->usage_completion_tokens && !strcmp(a->finish_reason, b->finish_reason) &&
           !strcmp(a->response_id, b->response_id) && !strcmp(a->error_message, b->error_message);
}

/* ---- paths and names ---- */

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static bool equals(const char *s, size_t len, const char *lit)
{
    return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

tt_dialect tt_dialect_from_path(const char *path, size_t len)
{
    if (!path) return TT_DIALECT_UNKNOWN;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '?' || path[i] == '#' || path[i] == 0) {
            len = i;
            break;
        }
    tt_dialect grpc = tt_grpc_dialect(tt_grpc_api_from_path(path, len));
    if (grpc != TT_DIALECT_UNKNOWN) return grpc;
    if (len > 1 && path[len - 1] == '/') len--;
    if (ends_with(path, len, "/chat/completions")) return TT_DIALECT_OPENAI_CHAT;
    if (equals(path, len, "/completions") || equals(path, len, "/completion") ||
        ends_with(path, len, "/completion"))
        return TT_DIALECT_LLAMACPP;
    if (ends_with(path, len, "/completions")) return TT_DIALECT_OPENAI_COMPLETIONS;
    if (ends_with(path, len, "/responses")) return TT_DIALECT_OPENAI_RESPONSES;
    if (ends_with(path, len, "/messages")) return TT_DIALECT_ANTHROPIC;
    if (ends_with(path, len, "/api/generate") || ends_with(path, len, "/api/chat"))
        return TT_DIALECT_OLLAMA;
    bool generate = ends_with(path, len, "/generate_stream") || ends_with(path, len, "/generate");
    if (generate && len > 11 && memcmp(path, "/v2/models/", 11) == 0) return TT_DIALECT_TRITON;
    if (generate) return TT_DIALECT_TGI;
    return TT_DIALECT_UNKNOWN;
}

const char *tt_dialect_name(tt_dialect d)
{
    static const char *const names[TT_DIALECT_COUNT] = {
        [TT_DIALECT_UNKNOWN] = "unknown",
        [TT_DIALECT_OPENAI_COMPLETIONS] = "openai-completions",
        [TT_DIALECT_OPENAI_CHAT] = "openai-chat",
        [TT_DIALECT_OPENAI_RESPONSES] = "openai-responses",
        [TT_DIALECT_ANTHROPIC] = "anthropic",
        [TT_DIALECT_TGI] = "tgi",
        [TT_DIALECT_LLAMACPP] = "llamacpp",
        [TT_DIALECT_OLLAMA] = "ollama",
        [TT_DIALECT_TRITON] = "triton",
        [TT_DIALECT_TRITON_GRPC] = "triton-grpc",
        [TT_DIALECT_SGLANG_GRPC] = "sglang-grpc",
        [TT_DIALECT_VLLM_GRPC] = "vllm-grpc",
    };
    return (unsigned)d < TT_DIALECT_COUNT ? names[d] : "invalid";
}

const char *tt_event_kind_name(tt_event_kind k)
{
    static const char *const names[TT_EV_COUNT] = {
        [TT_EV_TOKEN] = "TOKEN",         [TT_EV_ROLE] = "ROLE",   [TT_EV_USAGE] = "USAGE",
        [TT_EV_FINISH] = "FINISH",       [TT_EV_TERMINAL] = "TERMINAL",
        [TT_EV_KEEPALIVE] = "KEEPALIVE", [TT_EV_META] = "META",   [TT_EV_ERROR] = "ERROR",
        [TT_EV_OTHER] = "OTHER",
    };
    return (unsigned)k < TT_EV_COUNT ? names[k] : "INVALID";
}
