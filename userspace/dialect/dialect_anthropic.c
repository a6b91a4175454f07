/* dialect_anthropic.c - Anthropic Messages streams (/v1/messages).
 *
 * message_start (META: message id, input token count), content_block_start
 * / content_block_stop (META), content_block_delta (text_delta, thinking_delta
 * and input_json_delta are text; signature_delta and citations_delta META),
 * message_delta (stop reason and output token count: FINISH or USAGE),
 * message_stop (TERMINAL), ping (KEEPALIVE). Errors are read in dialect.c. */
#include "dialect/dialect_internal.h"

#include <string.h>

static bool named(const char *type, size_t len, const char *name)
{
    return strlen(name) == len && memcmp(type, name, len) == 0;
}

static void read_block_delta(tt_classified *out, text_sink *sink, const cJSON *delta)
{
    const char *kind = dj_string(out, dj_member(delta, DJ_KEY_type));
    if (!kind) return;
    dj_key field = DJ_KEY_OTHER;
    uint32_t flags = 0;
    if (!strcmp(kind, "text_delta")) {
        field = DJ_KEY_text;
    } else if (!strcmp(kind, "thinking_delta")) {
        field = DJ_KEY_thinking, flags = TT_HAS_REASONING;
    } else if (!strcmp(kind, "input_json_delta")) {
        field = DJ_KEY_partial_json, flags = TT_HAS_TOOL_ARGS;
    }
    if (field == DJ_KEY_OTHER) return;
    const char *s = dj_string(out, dj_member(delta, field));
    if (s) sink_add(sink, s, strlen(s), flags);
}

/* A content block may open with text already in it (normally ""). */
static void read_block_start(tt_classified *out, text_sink *sink, const cJSON *block)
{
    const char *kind = dj_string(out, dj_member(block, DJ_KEY_type));
    if (!kind) return;
    const char *s = NULL;
    uint32_t flags = 0;
    if (!strcmp(kind, "text")) {
        s = dj_string(out, dj_member(block, DJ_KEY_text));
    } else if (!strcmp(kind, "thinking")) {
        s = dj_string(out, dj_member(block, DJ_KEY_thinking)), flags = TT_HAS_REASONING;
    }
    if (s) sink_add(sink, s, strlen(s), flags);
}

int dialect_read_anthropic(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink)
{
    if (!type) return 0;
    tt_event_kind fallback = TT_EV_META;
    if (named(type, type_len, "message_start")) {
        const cJSON *msg = dj_object(out, top->message);
        const char *id = dj_string(out, dj_member(msg, DJ_KEY_id));
        if (id) dj_copy(out->response_id, sizeof out->response_id, id);
        const cJSON *usage = dj_object(out, dj_member(msg, DJ_KEY_usage));
        if (usage) {
            out->has |= TT_HAS_USAGE;
            out->usage_prompt_tokens = dj_count(out, dj_member(usage, DJ_KEY_input_tokens));
        }
        out->dialect = TT_DIALECT_ANTHROPIC;
        out->kind = TT_EV_META;
        return 1;
    } else if (named(type, type_len, "content_block_start")) {
        const cJSON *block = dj_object(out, top->content_block);
        if (block) read_block_start(out, sink, block);
    } else if (named(type, type_len, "content_block_delta")) {
        const cJSON *delta = dj_object(out, top->delta);
        if (delta) read_block_delta(out, sink, delta);
    } else if (named(type, type_len, "message_delta")) {
        const cJSON *delta = dj_object(out, top->delta);
        dj_finish(out, dj_string(out, dj_member(delta, DJ_KEY_stop_reason)));
        if (top->usage) dj_usage(out, top->usage);
    } else if (named(type, type_len, "message_stop")) {
        out->has |= TT_HAS_TERMINAL;
    } else if (named(type, type_len, "ping")) {
        fallback = TT_EV_KEEPALIVE;
    } else if (!named(type, type_len, "content_block_stop")) {
        return 0;
    }
    out->dialect = TT_DIALECT_ANTHROPIC;
    out->kind = dj_derive_kind(out, 0, fallback);
    return 1;
}
