/* dialect_openai.c - OpenAI-style streams: /v1/completions and
 * /v1/chat/completions chunks (choices[]), and /v1/responses typed events.
 *
 * Chat deltas are read member by member in document order: content,
 * refusal, reasoning_content (TabbyAPI, DeepSeek), reasoning (vLLM) and the
 * tool-call argument fragments are text; role marks TT_HAS_ROLE. vLLM may
 * send the same reasoning under both reasoning_content and reasoning; then
 * only reasoning_content counts. */
#include "dialect/dialect_internal.h"

#include <string.h>

static void read_tool_calls(tt_classified *out, text_sink *sink, const cJSON *calls)
{
    calls = dj_array(out, calls);
    if (!calls) return;
    for (const cJSON *call = calls->child; call; call = call->next) {
        const cJSON *fn = dj_object(out, dj_member(call, DJ_KEY_function));
        const char *args = dj_string(out, dj_member(fn, DJ_KEY_arguments));
        if (args) sink_add(sink, args, strlen(args), TT_HAS_TOOL_ARGS);
    }
}

static void read_delta(tt_classified *out, text_sink *sink, const cJSON *delta)
{
    for (const cJSON *m = delta->child; m; m = m->next) {
        switch (dj_key_of(m)) {
        case DJ_KEY_content:
        case DJ_KEY_refusal: {
            const char *s = dj_string(out, m);
            if (s) sink_add(sink, s, strlen(s), 0);
            break;
        }
        case DJ_KEY_reasoning_content: {
            const char *s = dj_string(out, m);
            if (s) sink_add(sink, s, strlen(s), TT_HAS_REASONING);
            break;
        }
        case DJ_KEY_reasoning: {
            const cJSON *twin = dj_member(delta, DJ_KEY_reasoning_content);
            if (dj_is_string(twin) && twin->valuestring[0]) break;
            const char *s = dj_string(out, m);
            if (s) sink_add(sink, s, strlen(s), TT_HAS_REASONING);
            break;
        }
        case DJ_KEY_tool_calls:
            read_tool_calls(out, sink, m);
            break;
        case DJ_KEY_function_call: {
            const char *args = dj_string(out, dj_member(dj_object(out, m), DJ_KEY_arguments));
            if (args) sink_add(sink, args, strlen(args), TT_HAS_TOOL_ARGS);
            break;
        }
        case DJ_KEY_role:
            if (dj_string(out, m)) out->has |= TT_HAS_ROLE;
            break;
        default:
            break;
        }
    }
}

int dialect_read_openai(const dialect_top *top, tt_classified *out, text_sink *sink)
{
    const cJSON *choices = dj_array(out, top->choices);
    bool usage_object = dj_is_object(top->usage);
    if (!choices && !usage_object) return 0;

    bool saw_delta = false, saw_text = false;
    if (choices) {
        if (!choices->child) out->has |= TT_HAS_EMPTY_CHOICES;
        for (const cJSON *ch = choices->child; ch; ch = ch->next) {
            if (!dj_is_object(ch)) {
                out->has |= TT_HAS_MALFORMED;
                continue;
            }
            out->has |= TT_HAS_CHOICES;
            for (const cJSON *m = ch->child; m; m = m->next) {
                dj_key key = dj_key_of(m);
                if (key == DJ_KEY_delta) {
                    const cJSON *delta = dj_object(out, m);
                    if (delta) read_delta(out, sink, delta), saw_delta = true;
                } else if (key == DJ_KEY_text) {
                    const char *s = dj_string(out, m);
                    saw_text = true;
                    if (s) sink_add(sink, s, strlen(s), 0);
                } else if (key == DJ_KEY_finish_reason) {
                    dj_finish(out, dj_string(out, m));
                }
            }
        }
    }
    if (top->usage) dj_usage(out, top->usage);
    const char *id = dj_string(out, top->id);
    if (id) dj_copy(out->response_id, sizeof out->response_id, id);
    if (saw_delta && !saw_text) out->dialect = TT_DIALECT_OPENAI_CHAT;
    else if (saw_text && !saw_delta) out->dialect = TT_DIALECT_OPENAI_COMPLETIONS;
    else if (out->dialect == TT_DIALECT_UNKNOWN) out->dialect = TT_DIALECT_OPENAI_CHAT;
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return 1;
}

/* ---- /v1/responses ---- */

typedef enum response_event {
    RESP_META = 0,
    RESP_TEXT,
    RESP_REASONING,
    RESP_TOOL_ARGS,
    RESP_COMPLETED,
    RESP_INCOMPLETE,
    RESP_FAILED,
} response_event;

static const struct {
    const char *name;
    response_event what;
} response_events[] = {
    { "response.output_text.delta", RESP_TEXT },
    { "response.refusal.delta", RESP_TEXT },
    { "response.reasoning_text.delta", RESP_REASONING },
    { "response.reasoning_summary_text.delta", RESP_REASONING },
    { "response.reasoning.delta", RESP_REASONING },
    { "response.function_call_arguments.delta", RESP_TOOL_ARGS },
    { "response.mcp_call_arguments.delta", RESP_TOOL_ARGS },
    { "response.custom_tool_call_input.delta", RESP_TOOL_ARGS },
    { "response.completed", RESP_COMPLETED },
    { "response.incomplete", RESP_INCOMPLETE },
    { "response.failed", RESP_FAILED },
};

int dialect_read_responses(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink)
{
    if (!type || type_len <= 9 || memcmp(type, "response.", 9) != 0) return 0;
    response_event what = RESP_META;
    for (size_t i = 0; i < sizeof response_events / sizeof response_events[0]; i++) {
        const char *n = response_events[i].name;
        if (strlen(n) == type_len && memcmp(n, type, type_len) == 0) {
            what = response_events[i].what;
            break;
        }
    }
    out->dialect = TT_DIALECT_OPENAI_RESPONSES;
    const cJSON *resp = dj_object(out, top->response);
    const char *id = dj_string(out, dj_member(resp, DJ_KEY_id));
    if (id) dj_copy(out->response_id, sizeof out->response_id, id);

    switch (what) {
    case RESP_TEXT:
    case RESP_REASONING:
    case RESP_TOOL_ARGS: {
        const char *delta = dj_string(out, top->delta);
        uint32_t flags = what == RESP_REASONING ? TT_HAS_REASONING
                         : what == RESP_TOOL_ARGS ? TT_HAS_TOOL_ARGS
                                                  : 0;
        if (delta) sink_add(sink, delta, strlen(delta), flags);
        break;
    }
    case RESP_COMPLETED:
    case RESP_INCOMPLETE:
    case RESP_FAILED:
        out->has |= TT_HAS_TERMINAL;
        if (resp) dj_usage(out, dj_member(resp, DJ_KEY_usage));
        if (what == RESP_COMPLETED) {
            dj_finish(out, "completed");
        } else if (what == RESP_INCOMPLETE) {
            const cJSON *details = dj_object(out, dj_member(resp, DJ_KEY_incomplete_details));
            const char *reason = dj_string(out, dj_member(details, DJ_KEY_reason));
            dj_finish(out, reason && *reason ? reason : "incomplete");
        } else {
            dj_finish(out, "failed");
            const cJSON *err = dj_object(out, dj_member(resp, DJ_KEY_error));
            const char *msg = dj_string(out, dj_member(err, DJ_KEY_message));
            if (!msg || !*msg) msg = "failed";
            out->has |= TT_HAS_ERROR;
            dj_copy(out->error_message, sizeof out->error_message, msg);
        }
        break;
    case RESP_META:
        break;
    }
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return 1;
}
