/* dialect_native.c - the servers' own streaming APIs: TGI /generate_stream,
 * llama.cpp /completion, Ollama /api/generate and /api/chat (NDJSON),
 * Triton's generate extension (/v2/models/M/generate_stream).
 *
 * TGI: every frame is one generated token, so a frame with a token object
 * is TOKEN even when its text is empty or the token is special (a special
 * token's text is not counted: TGI leaves it out of generated_text). The
 * last frame adds generated_text and, when asked for, details: it stays
 * TOKEN and carries TT_HAS_TERMINAL, plus finish and usage from details.
 *
 * llama.cpp: {"content","stop"}; stop:true ends the stream, with the counts
 * (tokens_predicted, else timings.predicted_n) and stop_type (older servers:
 * stopped_eos / stopped_limit / stopped_word).
 *
 * Ollama: "response" (generate) or message.content (chat) is text,
 * "thinking" / message.thinking reasoning, message.tool_calls arguments tool
 * arguments (an object there, counted as its compact JSON); done:true ends
 * the stream with eval_count, prompt_eval_count and done_reason.
 *
 * Triton: every SSE event is one response of the model, its text the
 * "text_output" string (model_name and model_version beside it, plus
 * whatever other outputs the model has); there is no end marker (the body
 * ends after the final response), so no event is TERMINAL; an event with
 * "error" is an error (dialect.c reads that first). */
#include "dialect/dialect_internal.h"

#include <string.h>

int dialect_read_tgi(const dialect_top *top, tt_classified *out, text_sink *sink)
{
    const cJSON *token = dj_is_object(top->token) ? top->token : NULL;
    bool final = dj_is_string(top->generated_text) || dj_is_object(top->details);
    if (!token && !final) return 0;
    if (token) {
        if (dj_true(dj_member(token, DJ_KEY_special))) {
            out->has |= TT_HAS_SPECIAL;
        } else {
            const char *s = dj_string(out, dj_member(token, DJ_KEY_text));
            if (s) sink_add(sink, s, strlen(s), 0);
        }
    }
    if (final) {
        out->has |= TT_HAS_TERMINAL;
        const cJSON *details = dj_object(out, top->details);
        if (details) {
            dj_finish(out, dj_string(out, dj_member(details, DJ_KEY_finish_reason)));
            int64_t generated = dj_count(out, dj_member(details, DJ_KEY_generated_tokens));
            int64_t input = dj_count(out, dj_member(details, DJ_KEY_input_length));
            if (generated >= 0 || input >= 0) out->has |= TT_HAS_USAGE;
            out->usage_completion_tokens = generated;
            out->usage_prompt_tokens = input;
        }
    }
    out->dialect = TT_DIALECT_TGI;
    out->kind = dj_derive_kind(out, token != NULL, TT_EV_META);
    return 1;
}

static int64_t first_count(tt_classified *out, const cJSON *a, const cJSON *b)
{
    int64_t v = dj_count(out, a);
    return v >= 0 ? v : dj_count(out, b);
}

int dialect_read_llamacpp(const dialect_top *top, tt_classified *out, text_sink *sink)
{
    if (!dj_is_string(top->content) || !dj_is_bool(top->stop)) return 0;
    const char *s = top->content->valuestring;
    sink_add(sink, s, strlen(s), 0);
    if (dj_is_true(top->stop)) {
        out->has |= TT_HAS_TERMINAL;
        const cJSON *timings = dj_object(out, top->timings);
        int64_t predicted = first_count(out, top->tokens_predicted, dj_member(timings, DJ_KEY_predicted_n));
        int64_t evaluated = first_count(out, top->tokens_evaluated, dj_member(timings, DJ_KEY_prompt_n));
        if (predicted >= 0 || evaluated >= 0) out->has |= TT_HAS_USAGE;
        out->usage_completion_tokens = predicted;
        out->usage_prompt_tokens = evaluated;
        const char *reason = dj_string(out, top->stop_type);
        if (!reason) {
            if (dj_true(top->stopped_eos)) reason = "eos";
            else if (dj_true(top->stopped_limit)) reason = "limit";
            else if (dj_true(top->stopped_word)) reason = "word";
        }
        dj_finish(out, reason);
    }
    out->dialect = TT_DIALECT_LLAMACPP;
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return 1;
}

static void add_string(tt_classified *out, text_sink *sink, const cJSON *node, uint32_t flags)
{
    const char *s = dj_string(out, node);
    if (s) sink_add(sink, s, strlen(s), flags);
}

static void read_ollama_tool_calls(tt_classified *out, text_sink *sink, const cJSON *calls)
{
    calls = dj_array(out, calls);
    if (!calls) return;
    for (const cJSON *call = calls->child; call; call = call->next) {
        const cJSON *args = dj_member(dj_object(out, dj_member(call, DJ_KEY_function)), DJ_KEY_arguments);
        if (dj_is_string(args)) {
            add_string(out, sink, args, TT_HAS_TOOL_ARGS);
        } else if (dj_is_object(args)) {
            char *json = cJSON_PrintUnformatted(args);
            if (json) sink_add(sink, json, strlen(json), TT_HAS_TOOL_ARGS);
            cJSON_free(json);
        } else if (args && !dj_is_null(args)) {
            out->has |= TT_HAS_MALFORMED;
        }
    }
}

int dialect_read_ollama(const dialect_top *top, tt_classified *out, text_sink *sink)
{
    if (!dj_is_bool(top->done)) return 0;
    add_string(out, sink, top->thinking, TT_HAS_REASONING);
    add_string(out, sink, top->response, 0);
    const cJSON *msg = dj_object(out, top->message);
    if (msg) {
        for (const cJSON *m = msg->child; m; m = m->next) {
            dj_key key = dj_key_of(m);
            if (key == DJ_KEY_content) add_string(out, sink, m, 0);
            else if (key == DJ_KEY_thinking) add_string(out, sink, m, TT_HAS_REASONING);
            else if (key == DJ_KEY_tool_calls) read_ollama_tool_calls(out, sink, m);
        }
    }
    if (dj_is_true(top->done)) {
        out->has |= TT_HAS_TERMINAL;
        int64_t generated = dj_count(out, top->eval_count);
        int64_t prompt = dj_count(out, top->prompt_eval_count);
        if (generated >= 0 || prompt >= 0) out->has |= TT_HAS_USAGE;
        out->usage_completion_tokens = generated;
        out->usage_prompt_tokens = prompt;
        dj_finish(out, dj_string(out, top->done_reason));
    }
    out->dialect = TT_DIALECT_OLLAMA;
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return 1;
}

int dialect_read_triton(const dialect_top *top, tt_classified *out, text_sink *sink)
{
    if (!dj_is_string(top->text_output)) return 0;
    add_string(out, sink, top->text_output, 0);
    out->dialect = TT_DIALECT_TRITON;
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return 1;
}
