/* serve_native.c - frames of the responses, anthropic, tgi, llamacpp and
 * ollama profiles; see serve_native.h and docs/serve.md (which names the
 * real servers and versions each one follows). Token texts are plain ASCII
 * words, so they go into JSON strings unescaped. */
#include "serve/serve_native.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>


static bool ended_by_length(const tt_serve_request *req) { return !strcmp(req->finish_reason, "length"); }

static void put_all_text(tt_sbuf *out, const tt_serve_request *req)
{
    for (uint32_t k = 0; k < req->n_tokens; k++) tt_sbuf_puts(out, tt_serve_token_text(k));
}

/* Tokens [from, to) as one quoted JSON string. */
static void put_quoted_range(tt_sbuf *out, uint32_t from, uint32_t to)
{
    tt_sbuf_puts(out, "\"");
    for (uint32_t k = from; k < to; k++) tt_sbuf_puts(out, tt_serve_token_text(k));
    tt_sbuf_puts(out, "\"");
}

/* The answer: the tokens after the reasoning phase. */
static void put_quoted_answer(tt_sbuf *out, const tt_serve_request *req)
{
    put_quoted_range(out, req->reasoning_tokens, req->n_tokens);
}

static void put_quoted_text(tt_sbuf *out, const tt_serve_request *req)
{
    tt_sbuf_puts(out, "\"");
    put_all_text(out, req);
    tt_sbuf_puts(out, "\"");
}

static double ms_of(uint64_t ns) { return (double)ns / 1e6; }

/* ---- OpenAI Responses, as vLLM's serving_responses streams it ---- */

static void resp_output_part(tt_sbuf *out, const tt_serve_request *req, bool with_text)
{
    tt_sbuf_puts(out, "{\"annotations\":[],\"text\":");
    if (with_text) put_quoted_answer(out, req);
    else tt_sbuf_puts(out, "\"\"");
    tt_sbuf_puts(out, with_text ? ",\"type\":\"output_text\",\"logprobs\":null}" : ",\"type\":\"output_text\",\"logprobs\":[]}");
}

/* The reasoning item's id: "rs_" and the message item's hex digits. */
static void resp_reasoning_id(char *buf, size_t len, const tt_serve_request *req)
{
    snprintf(buf, len, "rs_%s", req->item_id + 4);
}

static void resp_reasoning_item(tt_sbuf *out, const tt_serve_request *req, bool done)
{
    char id[64];
    resp_reasoning_id(id, sizeof id, req);
    tt_sbuf_printf(out, "{\"id\":\"%s\",\"summary\":[],\"type\":\"reasoning\",\"content\":[", id);
    if (done) {
        tt_sbuf_puts(out, "{\"text\":");
        put_quoted_range(out, 0, req->reasoning_tokens);
        tt_sbuf_puts(out, ",\"type\":\"reasoning_text\"}");
    }
    tt_sbuf_printf(out, "],\"encrypted_content\":null,\"status\":\"%s\"}", done ? "completed" : "in_progress");
}

static void resp_output_item(tt_sbuf *out, const tt_serve_request *req, bool done)
{
    tt_sbuf_printf(out, "{\"id\":\"%s\",\"content\":[", req->item_id);
    if (done) resp_output_part(out, req, true);
    tt_sbuf_printf(out, "],\"role\":\"assistant\",\"status\":\"%s\",\"type\":\"message\"}",
                   done ? "completed" : "in_progress");
}

static void resp_usage(tt_sbuf *out, const tt_serve_request *req)
{
    uint64_t p = req->prompt_tokens, c = req->n_tokens;
    tt_sbuf_printf(out, "{\"input_tokens\":%" PRIu64 ",\"input_tokens_details\":{\"cached_tokens\":0},"
                        "\"output_tokens\":%" PRIu64 ",\"output_tokens_details\":{\"reasoning_tokens\":%u},"
                        "\"total_tokens\":%" PRIu64 "}", p, c, req->reasoning_tokens, p + c);
}

/* The response object (abridged to the fields clients read). */
static void resp_object(tt_sbuf *out, const tt_serve_request *req, bool final)
{
    bool incomplete = final && ended_by_length(req);
    tt_sbuf_printf(out, "{\"id\":\"%s\",\"created_at\":%lld,\"incomplete_details\":%s,\"model\":\"%s\","
                        "\"object\":\"response\",\"output\":[",
                   req->id, (long long)req->created,
                   incomplete ? "{\"reason\":\"max_output_tokens\"}" : "null", req->model);
    if (final && req->reasoning_tokens) {
        resp_reasoning_item(out, req, true);
        tt_sbuf_puts(out, ",");
    }
    if (final) resp_output_item(out, req, true);
    tt_sbuf_printf(out, "],\"status\":\"%s\",\"usage\":",
                   !final ? "in_progress" : incomplete ? "incomplete" : "completed");
    if (final) resp_usage(out, req);
    else tt_sbuf_puts(out, "null");
    tt_sbuf_puts(out, "}");
}

static void resp_reasoning_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    uint32_t r = req->reasoning_tokens;
    char id[64];
    resp_reasoning_id(id, sizeof id, req);
    if (ev->kind == TT_SEV_TOKEN) {
        tt_sbuf_printf(out, "event: response.reasoning_text.delta\ndata: {\"content_index\":0,\"delta\":\"%s\","
                            "\"item_id\":\"%s\",\"output_index\":0,\"sequence_number\":%u,"
                            "\"type\":\"response.reasoning_text.delta\"}",
                       tt_serve_token_text(ev->token), id, 4 + ev->token);
        return;
    }
    switch (ev->token) {
    case TT_RESP_RS_ITEM_ADDED:
    case TT_RESP_RS_ITEM_DONE: {
        bool done = ev->token == TT_RESP_RS_ITEM_DONE;
        const char *type = done ? "response.output_item.done" : "response.output_item.added";
        tt_sbuf_printf(out, "event: %s\ndata: {\"item\":", type);
        resp_reasoning_item(out, req, done);
        tt_sbuf_printf(out, ",\"output_index\":0,\"sequence_number\":%u,\"type\":\"%s\"}", done ? 6 + r : 2u, type);
        return;
    }
    case TT_RESP_RS_PART_ADDED:
    case TT_RESP_RS_PART_DONE: {
        bool done = ev->token == TT_RESP_RS_PART_DONE;
        const char *type = done ? "response.reasoning_part.done" : "response.reasoning_part.added";
        tt_sbuf_printf(out, "event: %s\ndata: {\"content_index\":0,\"item_id\":\"%s\",\"output_index\":0,"
                            "\"part\":{\"text\":", type, id);
        if (done) put_quoted_range(out, 0, r);
        else tt_sbuf_puts(out, "\"\"");
        tt_sbuf_printf(out, ",\"type\":\"reasoning_text\"},\"sequence_number\":%u,\"type\":\"%s\"}", done ? 5 + r : 3u, type);
        return;
    }
    default: /* TT_RESP_RS_TEXT_DONE */
        tt_sbuf_printf(out, "event: response.reasoning_text.done\ndata: {\"content_index\":0,\"item_id\":\"%s\","
                            "\"output_index\":0,\"sequence_number\":%u,\"text\":", id, 4 + r);
        put_quoted_range(out, 0, r);
        tt_sbuf_puts(out, ",\"type\":\"response.reasoning_text.done\"}");
        return;
    }
}

/* Sequence numbers count every event; with a reasoning phase the message
 * item comes second (output_index 1) and five reasoning lifecycle events
 * come before it. */
static void responses_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    uint32_t n = req->n_tokens, r = req->reasoning_tokens;
    uint32_t off = r ? 5 : 0, oi = r ? 1 : 0;
    const char *item = req->item_id;
    if ((ev->kind == TT_SEV_TOKEN && ev->token < r) || (ev->kind == TT_SEV_META && ev->token >= TT_RESP_RS_ITEM_ADDED)) {
        resp_reasoning_frame(req, ev, out);
        return;
    }
    switch (ev->kind) {
    case TT_SEV_TOKEN:
        tt_sbuf_printf(out, "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\"%s\","
                            "\"item_id\":\"%s\",\"logprobs\":[],\"output_index\":%u,\"sequence_number\":%u,"
                            "\"type\":\"response.output_text.delta\"}",
                       tt_serve_token_text(ev->token), item, oi, 4 + off + ev->token);
        return;
    case TT_SEV_ERROR: /* OpenAI's ResponseErrorEvent */
        tt_sbuf_printf(out, "event: error\ndata: {\"code\":\"server_error\",\"message\":\"synthetic error after %u tokens\","
                            "\"param\":null,\"sequence_number\":%u,\"type\":\"error\"}",
                       ev->token, 4 + ev->token + (ev->token >= r ? off : 0));
        return;
    case TT_SEV_DONE:
        tt_sbuf_puts(out, "event: response.completed\ndata: {\"response\":");
        resp_object(out, req, true);
        tt_sbuf_printf(out, ",\"sequence_number\":%u,\"type\":\"response.completed\"}", n + 7 + off);
        return;
    default:
        break;
    }
    switch (ev->token) {
    case TT_RESP_CREATED:
    case TT_RESP_IN_PROGRESS: {
        const char *type = ev->token == TT_RESP_CREATED ? "response.created" : "response.in_progress";
        tt_sbuf_printf(out, "event: %s\ndata: {\"response\":", type);
        resp_object(out, req, false);
        tt_sbuf_printf(out, ",\"sequence_number\":%u,\"type\":\"%s\"}", ev->token, type);
        return;
    }
    case TT_RESP_ITEM_ADDED:
    case TT_RESP_ITEM_DONE: {
        bool done = ev->token == TT_RESP_ITEM_DONE;
        const char *type = done ? "response.output_item.done" : "response.output_item.added";
        tt_sbuf_printf(out, "event: %s\ndata: {\"item\":", type);
        resp_output_item(out, req, done);
        tt_sbuf_printf(out, ",\"output_index\":%u,\"sequence_number\":%u,\"type\":\"%s\"}",
                       oi, done ? n + 6 + off : 2u + off + r, type);
        return;
    }
    case TT_RESP_PART_ADDED:
    case TT_RESP_PART_DONE: {
        bool done = ev->token == TT_RESP_PART_DONE;
        const char *type = done ? "response.content_part.done" : "response.content_part.added";
        tt_sbuf_printf(out, "event: %s\ndata: {\"content_index\":0,\"item_id\":\"%s\",\"output_index\":%u,\"part\":",
                       type, item, oi);
        resp_output_part(out, req, done);
        tt_sbuf_printf(out, ",\"sequence_number\":%u,\"type\":\"%s\"}", done ? n + 5 + off : 3u + off + r, type);
        return;
    }
    default: /* TT_RESP_TEXT_DONE */
        tt_sbuf_printf(out, "event: response.output_text.done\ndata: {\"content_index\":0,\"item_id\":\"%s\","
                            "\"logprobs\":[],\"output_index\":%u,\"sequence_number\":%u,\"text\":",
                       item, oi, n + 4 + off);
        put_quoted_answer(out, req);
        tt_sbuf_puts(out, ",\"type\":\"response.output_text.done\"}");
        return;
    }
}

/* ---- Anthropic Messages ---- */

static const char *anthropic_stop_reason(const tt_serve_request *req)
{
    return ended_by_length(req) ? "max_tokens" : "end_turn";
}

static void anthropic_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    unsigned text_block = req->reasoning_tokens ? 1 : 0;
    switch (ev->kind) {
    case TT_SEV_TOKEN:
        if (ev->token < req->reasoning_tokens)
            tt_sbuf_printf(out, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                                "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"%s\"}}",
                           tt_serve_token_text(ev->token));
        else
            tt_sbuf_printf(out, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%u,"
                                "\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}",
                           text_block, tt_serve_token_text(ev->token));
        return;
    case TT_SEV_ERROR: /* the Messages API's mid-stream error event */
        tt_sbuf_puts(out, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                          "\"message\":\"Overloaded\"}}");
        return;
    case TT_SEV_USAGE:
        tt_sbuf_printf(out, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
                            "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%u}}",
                       anthropic_stop_reason(req), req->n_tokens);
        return;
    case TT_SEV_DONE:
        tt_sbuf_puts(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}");
        return;
    default:
        break;
    }
    switch (ev->token) {
    case TT_ANTH_MESSAGE_START:
        tt_sbuf_printf(out, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"%s\","
                            "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"%s\",\"content\":[],"
                            "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":%u,"
                            "\"output_tokens\":1}}}",
                       req->id, req->model, req->prompt_tokens);
        return;
    case TT_ANTH_BLOCK_START:
        tt_sbuf_printf(out, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%u,"
                            "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}", text_block);
        return;
    case TT_ANTH_THINK_START:
        tt_sbuf_puts(out, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                          "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}");
        return;
    case TT_ANTH_SIGNATURE:
        tt_sbuf_puts(out, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                          "\"delta\":{\"type\":\"signature_delta\",\"signature\":\"dG9rZW50YXAtc3ludGhldGlj\"}}");
        return;
    case TT_ANTH_THINK_STOP:
        tt_sbuf_puts(out, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}");
        return;
    case TT_ANTH_PING:
        tt_sbuf_puts(out, "event: ping\ndata: {\"type\": \"ping\"}");
        return;
    default: /* TT_ANTH_BLOCK_STOP */
        tt_sbuf_printf(out, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%u}",
                       text_block);
        return;
    }
}

/* ---- TGI: axum's Sse writes "data:" with no space ---- */

static const char *tgi_finish_reason(const tt_serve_request *req)
{
    return ended_by_length(req) ? "length" : "eos_token";
}

static void tgi_details(tt_sbuf *out, const tt_serve_request *req)
{
    tt_sbuf_printf(out, "{\"finish_reason\":\"%s\",\"generated_tokens\":%u,\"seed\":null,\"input_length\":%u}",
                   tgi_finish_reason(req), req->n_tokens, req->prompt_tokens);
}

static void tgi_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    if (ev->kind == TT_SEV_ERROR) { /* TGI's ErrorResponse {error, error_type} */
        tt_sbuf_printf(out, "data:{\"error\":\"synthetic error after %u tokens\",\"error_type\":\"generation\"}",
                       ev->token);
        return;
    }
    uint32_t k = ev->kind == TT_SEV_TOKEN ? ev->token : 0;
    bool last = ev->kind != TT_SEV_TOKEN || k + 1 >= req->n_tokens;
    tt_sbuf_printf(out, "data:{\"index\":%u,\"token\":{\"id\":%u,\"text\":\"%s\",\"logprob\":-0.25,\"special\":false},"
                        "\"generated_text\":",
                   k, 1000 + k % 16, ev->kind == TT_SEV_TOKEN ? tt_serve_token_text(k) : "");
    if (!last) {
        tt_sbuf_puts(out, "null,\"details\":null}");
        return;
    }
    put_quoted_text(out, req);
    tt_sbuf_puts(out, ",\"details\":");
    if (req->want_details) tgi_details(out, req);
    else tt_sbuf_puts(out, "null");
    tt_sbuf_puts(out, "}");
}

/* ---- llama.cpp llama-server /completion ---- */

static void llamacpp_final(tt_sbuf *out, const tt_serve_request *req, bool streamed)
{
    uint64_t ttft = req->first_token_ns, total = req->elapsed_ns;
    uint64_t gen = total > ttft ? total - ttft : 0;
    double prompt_ms = ms_of(ttft), predicted_ms = ms_of(gen);
    uint32_t p = req->prompt_tokens, n = req->n_tokens;
    tt_sbuf_puts(out, "{\"index\":0,\"content\":");
    if (streamed) tt_sbuf_puts(out, "\"\"");
    else put_quoted_text(out, req);
    tt_sbuf_printf(out, ",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":\"%s\",\"tokens_predicted\":%u,"
                        "\"tokens_evaluated\":%u,\"prompt\":\"\",\"has_new_line\":false,\"truncated\":false,"
                        "\"stop_type\":\"%s\",\"stopping_word\":\"\",\"tokens_cached\":%u,",
                   req->model, n, p, ended_by_length(req) ? "limit" : "eos", p + n);
    tt_sbuf_printf(out, "\"timings\":{\"prompt_n\":%u,\"prompt_ms\":%.3f,\"prompt_per_token_ms\":%.3f,"
                        "\"prompt_per_second\":%.3f,\"predicted_n\":%u,\"predicted_ms\":%.3f,"
                        "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}}",
                   p, prompt_ms, p ? prompt_ms / p : 0.0, prompt_ms > 0 ? p * 1e3 / prompt_ms : 0.0, n,
                   predicted_ms, n ? predicted_ms / n : 0.0, predicted_ms > 0 ? n * 1e3 / predicted_ms : 0.0);
}

static void llamacpp_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    tt_sbuf_puts(out, "data: ");
    if (ev->kind == TT_SEV_ERROR) {
        tt_sbuf_printf(out, "{\"error\":{\"code\":500,\"message\":\"synthetic error after %u tokens\","
                            "\"type\":\"server_error\"}}", ev->token);
        return;
    }
    if (ev->kind != TT_SEV_TOKEN) {
        llamacpp_final(out, req, true);
        return;
    }
    tt_sbuf_printf(out, "{\"index\":0,\"content\":\"%s\",\"tokens\":[],\"stop\":false,\"id_slot\":0,"
                        "\"tokens_predicted\":%u,\"tokens_evaluated\":%u}",
                   tt_serve_token_text(ev->token), ev->token + 1, req->prompt_tokens);
}

/* ---- Ollama: Go structs marshalled by encoding/json, one per line ---- */

/* Go's omitempty: a zero duration is left out. */
static void ollama_duration(tt_sbuf *out, const char *key, uint64_t ns)
{
    if (ns) tt_sbuf_printf(out, ",\"%s\":%" PRIu64, key, ns);
}

static void ollama_metrics(tt_sbuf *out, const tt_serve_request *req)
{
    uint64_t ttft = req->first_token_ns, total = req->elapsed_ns;
    ollama_duration(out, "total_duration", total);
    tt_sbuf_printf(out, ",\"prompt_eval_count\":%u", req->prompt_tokens);
    ollama_duration(out, "prompt_eval_duration", ttft);
    tt_sbuf_printf(out, ",\"eval_count\":%u", req->n_tokens);
    ollama_duration(out, "eval_duration", total > ttft ? total - ttft : 0);
}

/* text NULL: the whole text (non-streamed body). */
static void ollama_object(tt_sbuf *out, const tt_serve_request *req, const char *text, bool done)
{
    bool chat = req->api == TT_API_OLLAMA_CHAT;
    tt_sbuf_printf(out, "{\"model\":\"%s\",\"created_at\":\"%s\",", req->model, req->created_at);
    tt_sbuf_puts(out, chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"response\":");
    if (text) tt_sbuf_printf(out, "\"%s\"", text);
    else put_quoted_text(out, req);
    if (chat) tt_sbuf_puts(out, "}");
    const char *reason = ended_by_length(req) ? "length" : "stop";
    if (!done)
        tt_sbuf_puts(out, ",\"done\":false}");
    else if (chat)
        tt_sbuf_printf(out, ",\"done_reason\":\"%s\",\"done\":true", reason);
    else
        tt_sbuf_printf(out, ",\"done\":true,\"done_reason\":\"%s\"", reason);
    if (!done) return;
    ollama_metrics(out, req);
    tt_sbuf_puts(out, "}");
}

static void ollama_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    if (ev->kind == TT_SEV_ERROR) { /* Ollama streams {"error": ...} and stops */
        tt_sbuf_printf(out, "{\"error\":\"synthetic error after %u tokens\"}", ev->token);
        return;
    }
    if (ev->kind == TT_SEV_TOKEN && ev->token < req->reasoning_tokens) { /* Message.Thinking / GenerateResponse.Thinking */
        bool chat = req->api == TT_API_OLLAMA_CHAT;
        tt_sbuf_printf(out, "{\"model\":\"%s\",\"created_at\":\"%s\",", req->model, req->created_at);
        if (chat)
            tt_sbuf_printf(out, "\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"%s\"},\"done\":false}",
                           tt_serve_token_text(ev->token));
        else
            tt_sbuf_printf(out, "\"response\":\"\",\"thinking\":\"%s\",\"done\":false}", tt_serve_token_text(ev->token));
        return;
    }
    if (ev->kind == TT_SEV_TOKEN) ollama_object(out, req, tt_serve_token_text(ev->token), false);
    else ollama_object(out, req, "", true);
}

void tt_serve_native_frame(const tt_serve_profile *prof, const tt_serve_request *req,
                           const tt_serve_event *ev, tt_sbuf *out)
{
    switch (prof->id) {
    case TT_PROFILE_RESPONSES: responses_frame(req, ev, out); break;
    case TT_PROFILE_ANTHROPIC: anthropic_frame(req, ev, out); break;
    case TT_PROFILE_TGI: tgi_frame(req, ev, out); break;
    case TT_PROFILE_LLAMACPP: llamacpp_frame(req, ev, out); break;
    case TT_PROFILE_OLLAMA: ollama_frame(req, ev, out); break;
    default: break;
    }
}

bool tt_serve_native_full_body(const tt_serve_profile *prof, const tt_serve_request *req, tt_sbuf *out)
{
    switch (prof->id) {
    case TT_PROFILE_RESPONSES:
        resp_object(out, req, true);
        return true;
    case TT_PROFILE_ANTHROPIC:
        tt_sbuf_printf(out, "{\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"%s\","
                            "\"content\":[{\"type\":\"text\",\"text\":",
                       req->id, req->model);
        put_quoted_answer(out, req);
        tt_sbuf_printf(out, "}],\"stop_reason\":\"%s\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":%u,"
                            "\"output_tokens\":%u}}",
                       anthropic_stop_reason(req), req->prompt_tokens, req->n_tokens);
        return true;
    case TT_PROFILE_TGI:
        tt_sbuf_puts(out, "{\"generated_text\":");
        put_quoted_text(out, req);
        if (req->want_details) {
            tt_sbuf_puts(out, ",\"details\":");
            tgi_details(out, req);
        }
        tt_sbuf_puts(out, "}");
        return true;
    case TT_PROFILE_LLAMACPP:
        llamacpp_final(out, req, false);
        return true;
    case TT_PROFILE_OLLAMA:
        ollama_object(out, req, NULL, true);
        return true;
    default:
        return false;
    }
}
