/* llm_frames.c - request bodies and streamed frames per dialect (llm_frames.h). */
#include "llm_frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

const char *const llm_dialect_names[7] = {"openai-chat", "openai-completions", "responses", "anthropic",
                                          "tgi", "llamacpp", "ollama"};

/* ---- deterministic randomness ---- */

uint64_t llm_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* JSON-escaped token texts, none empty once unescaped. */
static const char *const vocab[] = {
    " the", " model", " streams", " token", " by", " token", ",", ".", " and", " a", " quick", " brown",
    " fox", " jumps", " over", " lazy", " dogs", " \\\"quoted\\\"", "\\n", " caf\\u00e9", " 42", " time",
    " of", " is", "ing", " tap", " wire", " \\u2014", " it", " works", "!", " \\\\path",
};
#define VOCAB_N (sizeof vocab / sizeof vocab[0])

/* ---- per-dialect frames ---- */

unsigned llm_pre_frames(dialect d)
{
    switch (d) {
    case D_OPENAI_CHAT: return 1;  /* role chunk */
    case D_RESPONSES: return 4;    /* created, in_progress, output_item.added, content_part.added */
    case D_ANTHROPIC: return 3;    /* message_start, content_block_start, ping */
    default: return 0;
    }
}

unsigned llm_post_frames(const llm_opts *o)
{
    switch (o->dialect) {
    case D_OPENAI_CHAT:
    case D_OPENAI_COMPLETIONS: return o->usage_with_choices ? 2 : 3; /* finish, [usage], [DONE] */
    case D_RESPONSES: return 4;  /* output_text.done, content_part.done, output_item.done, completed */
    case D_ANTHROPIC: return 3;  /* content_block_stop, message_delta, message_stop */
    case D_TGI: return 0;        /* the last token frame carries details */
    case D_LLAMACPP: return 1;   /* stop:true */
    case D_OLLAMA: return 1;     /* done:true */
    }
    return 0;
}

static const char *sep(const llm_opts *o)
{
    return o->crlf ? "\r\n" : "\n";
}

/* "event: NAME" line (when name) and "data: " prefix. */
static void sse_open(tt_strbuf *ev, const llm_opts *o, const char *name)
{
    if (name) tt_sb_printf(ev, "event: %s%s", name, sep(o));
    tt_sb_printf(ev, "data: ");
}

static void sse_close(tt_strbuf *ev, const llm_opts *o)
{
    tt_sb_printf(ev, "%s%s", sep(o), sep(o));
}

static void usage_json(tt_strbuf *ev, const llm_opts *o, const llm_stream *s)
{
    tt_sb_printf(ev, "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u}", s->prompt_tokens,
                 s->prompt_tokens + o->tokens, o->tokens);
}

static void chat_head(tt_strbuf *ev, const llm_opts *o, const llm_stream *s, uint64_t created)
{
    tt_sb_printf(ev, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%" PRIu64 ",\"model\":\"%s\",\"choices\":[",
                 s->id, o->dialect == D_OPENAI_CHAT ? "chat.completion.chunk" : "text_completion", created,
                 o->model);
}

void llm_frame_pre(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created)
{
    const char *m = o->model;
    switch (o->dialect) {
    case D_OPENAI_CHAT:
        sse_open(ev, o, NULL);
        chat_head(ev, o, s, created);
        tt_sb_printf(ev, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                             "\"finish_reason\":null}]}");
        sse_close(ev, o);
        break;
    case D_RESPONSES: {
        static const char *const names[] = {"response.created", "response.in_progress", "response.output_item.added",
                                            "response.content_part.added"};
        sse_open(ev, o, names[k]);
        if (k < 2)
            tt_sb_printf(ev,
                         "{\"type\":\"%s\",\"sequence_number\":%u,\"response\":{\"id\":\"resp_%s\",\"object\":"
                         "\"response\",\"created_at\":%" PRIu64 ",\"status\":\"in_progress\",\"model\":\"%s\","
                         "\"output\":[],\"usage\":null}}",
                         names[k], k, s->id, created, m);
        else if (k == 2)
            tt_sb_printf(ev,
                         "{\"type\":\"%s\",\"sequence_number\":%u,\"output_index\":0,\"item\":{\"id\":\"msg_%s\","
                         "\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}",
                         names[k], k, s->id);
        else
            tt_sb_printf(ev,
                         "{\"type\":\"%s\",\"sequence_number\":%u,\"item_id\":\"msg_%s\",\"output_index\":0,"
                         "\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}",
                         names[k], k, s->id);
        sse_close(ev, o);
        break;
    }
    case D_ANTHROPIC:
        if (k == 0) {
            sse_open(ev, o, "message_start");
            tt_sb_printf(ev,
                         "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_%s\",\"type\":\"message\",\"role\":"
                         "\"assistant\",\"model\":\"%s\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                         "\"usage\":{\"input_tokens\":%u,\"output_tokens\":1}}}",
                         s->id, m, s->prompt_tokens);
        } else if (k == 1) {
            sse_open(ev, o, "content_block_start");
            tt_sb_printf(ev, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
                                 "\"text\":\"\"}}");
        } else {
            sse_open(ev, o, "ping");
            tt_sb_printf(ev, "{\"type\": \"ping\"}");
        }
        sse_close(ev, o);
        break;
    default:
        break;
    }
}

void llm_frame_token(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created)
{
    const char *tok = vocab[llm_splitmix(s->rng) % VOCAB_N];
    if (o->dialect == D_RESPONSES || o->dialect == D_TGI) tt_sb_printf(s->text, "%s", tok);
    switch (o->dialect) {
    case D_OPENAI_CHAT:
        sse_open(ev, o, NULL);
        chat_head(ev, o, s, created);
        tt_sb_printf(ev, "{\"index\":0,\"delta\":{\"content\":\"%s\"},\"logprobs\":null,\"finish_reason\":null}]}",
                     tok);
        sse_close(ev, o);
        break;
    case D_OPENAI_COMPLETIONS:
        sse_open(ev, o, NULL);
        chat_head(ev, o, s, created);
        tt_sb_printf(ev, "{\"index\":0,\"text\":\"%s\",\"logprobs\":null,\"finish_reason\":null,"
                             "\"stop_reason\":null}]}", tok);
        sse_close(ev, o);
        break;
    case D_RESPONSES:
        sse_open(ev, o, "response.output_text.delta");
        tt_sb_printf(ev,
                     "{\"type\":\"response.output_text.delta\",\"sequence_number\":%u,\"item_id\":\"msg_%s\","
                     "\"output_index\":0,\"content_index\":0,\"delta\":\"%s\",\"logprobs\":[]}",
                     4 + k, s->id, tok);
        sse_close(ev, o);
        break;
    case D_ANTHROPIC:
        sse_open(ev, o, "content_block_delta");
        tt_sb_printf(ev, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
                             "\"text\":\"%s\"}}", tok);
        sse_close(ev, o);
        break;
    case D_TGI: {
        bool last = k + 1 == o->tokens;
        tt_sb_printf(ev, "data:{\"index\":%u,\"token\":{\"id\":%u,\"text\":\"%s\",\"logprob\":-0.%03u,"
                             "\"special\":false},\"generated_text\":",
                     k + 1, (unsigned)(llm_splitmix(s->rng) % 32000), tok, (unsigned)(llm_splitmix(s->rng) % 1000));
        if (last)
            tt_sb_printf(ev, "\"%s\",\"details\":{\"finish_reason\":\"length\",\"generated_tokens\":%u,"
                                 "\"input_length\":%u,\"seed\":null}}",
                         s->text->s, o->tokens, s->prompt_tokens);
        else
            tt_sb_printf(ev, "null,\"details\":null}");
        tt_sb_printf(ev, "%s%s", sep(o), sep(o));
        break;
    }
    case D_LLAMACPP:
        sse_open(ev, o, NULL);
        tt_sb_printf(ev, "{\"index\":0,\"content\":\"%s\",\"tokens\":[],\"stop\":false,\"id_slot\":0,"
                             "\"tokens_predicted\":%u,\"tokens_evaluated\":%u}",
                     tok, k + 1, s->prompt_tokens);
        sse_close(ev, o);
        break;
    case D_OLLAMA: {
        time_t secs = (time_t)(created);
        struct tm tm;
        gmtime_r(&secs, &tm);
        tt_sb_printf(ev, "{\"model\":\"%s\",\"created_at\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06uZ\",\"response\":"
                             "\"%s\",\"done\":false}\n",
                     o->model, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     k % 1000000, tok);
        break;
    }
    }
}

void llm_frame_post(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created)
{
    switch (o->dialect) {
    case D_OPENAI_CHAT:
    case D_OPENAI_COMPLETIONS:
        sse_open(ev, o, NULL);
        if (k == 0) {
            chat_head(ev, o, s, created);
            if (o->dialect == D_OPENAI_CHAT)
                tt_sb_printf(ev, "{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":null,"
                                     "\"finish_reason\":\"length\",\"stop_reason\":null}]");
            else
                tt_sb_printf(ev, "{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\","
                                     "\"stop_reason\":null}]");
            if (o->usage_with_choices) {
                tt_sb_printf(ev, ",\"usage\":");
                usage_json(ev, o, s);
            }
            tt_sb_printf(ev, "}");
        } else if (k == 1 && !o->usage_with_choices) {
            chat_head(ev, o, s, created);
            tt_sb_printf(ev, "],\"usage\":");
            usage_json(ev, o, s);
            tt_sb_printf(ev, "}");
        } else {
            tt_sb_printf(ev, "[DONE]");
        }
        sse_close(ev, o);
        break;
    case D_RESPONSES: {
        unsigned seq = 4 + o->tokens + k;
        static const char *const names[] = {"response.output_text.done", "response.content_part.done",
                                            "response.output_item.done", "response.completed"};
        sse_open(ev, o, names[k]);
        const char *text = s->text->s ? s->text->s : "";
        if (k == 0)
            tt_sb_printf(ev, "{\"type\":\"%s\",\"sequence_number\":%u,\"item_id\":\"msg_%s\",\"output_index\":0,"
                                 "\"content_index\":0,\"text\":\"%s\",\"logprobs\":[]}",
                         names[k], seq, s->id, text);
        else if (k == 1)
            tt_sb_printf(ev, "{\"type\":\"%s\",\"sequence_number\":%u,\"item_id\":\"msg_%s\",\"output_index\":0,"
                                 "\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],"
                                 "\"text\":\"%s\"}}",
                         names[k], seq, s->id, text);
        else if (k == 2)
            tt_sb_printf(ev, "{\"type\":\"%s\",\"sequence_number\":%u,\"output_index\":0,\"item\":{\"id\":"
                                 "\"msg_%s\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\","
                                 "\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"%s\"}]}}",
                         names[k], seq, s->id, text);
        else
            tt_sb_printf(ev, "{\"type\":\"%s\",\"sequence_number\":%u,\"response\":{\"id\":\"resp_%s\","
                                 "\"object\":\"response\",\"created_at\":%" PRIu64 ",\"status\":\"completed\","
                                 "\"model\":\"%s\",\"output\":[{\"id\":\"msg_%s\",\"type\":\"message\",\"status\":"
                                 "\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
                                 "\"annotations\":[],\"text\":\"%s\"}]}],\"usage\":{\"input_tokens\":%u,"
                                 "\"output_tokens\":%u,\"total_tokens\":%u}}}",
                         names[k], seq, s->id, created, o->model, s->id, text, s->prompt_tokens, o->tokens,
                         s->prompt_tokens + o->tokens);
        sse_close(ev, o);
        break;
    }
    case D_ANTHROPIC:
        if (k == 0) {
            sse_open(ev, o, "content_block_stop");
            tt_sb_printf(ev, "{\"type\":\"content_block_stop\",\"index\":0}");
        } else if (k == 1) {
            sse_open(ev, o, "message_delta");
            tt_sb_printf(ev, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\","
                                 "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%u}}", o->tokens);
        } else {
            sse_open(ev, o, "message_stop");
            tt_sb_printf(ev, "{\"type\":\"message_stop\"}");
        }
        sse_close(ev, o);
        break;
    case D_LLAMACPP:
        sse_open(ev, o, NULL);
        tt_sb_printf(ev, "{\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":"
                             "\"%s\",\"tokens_predicted\":%u,\"tokens_evaluated\":%u,\"stop_type\":\"limit\","
                             "\"stopping_word\":\"\",\"tokens_cached\":0,\"truncated\":false,\"timings\":{"
                             "\"prompt_n\":%u,\"predicted_n\":%u}}",
                     o->model, o->tokens, s->prompt_tokens, s->prompt_tokens, o->tokens);
        sse_close(ev, o);
        break;
    case D_OLLAMA:
        tt_sb_printf(ev, "{\"model\":\"%s\",\"created_at\":\"2023-11-14T22:13:20.000000Z\",\"response\":\"\","
                             "\"done\":true,\"done_reason\":\"length\",\"context\":[1,2,3],\"total_duration\":%" PRIu64
                             ",\"load_duration\":1000,\"prompt_eval_count\":%u,\"prompt_eval_duration\":%" PRIu64
                             ",\"eval_count\":%u,\"eval_duration\":%" PRIu64 "}\n",
                     o->model, s->duration_ns, s->prompt_tokens, o->ttft_ns, o->tokens,
                     o->itl_ns * o->tokens);
        break;
    case D_TGI:
        break;
    }
}

/* ---- requests ---- */

/* The dialect's request body into body; returns its path. */
const char *llm_request_body(const llm_opts *o, tt_strbuf *body)
{
    const char *path = "/v1/chat/completions";
    const char *prompt = "Write a story about a packet that learned to count tokens.";
    switch (o->dialect) {
    case D_OPENAI_CHAT:
        tt_sb_printf(body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"stream\":true,"
                           "\"max_tokens\":%u,\"stream_options\":{\"include_usage\":true}}",
                     o->model, prompt, o->tokens);
        break;
    case D_OPENAI_COMPLETIONS:
        path = "/v1/completions";
        tt_sb_printf(body, "{\"model\":\"%s\",\"prompt\":\"%s\",\"stream\":true,\"max_tokens\":%u,"
                           "\"stream_options\":{\"include_usage\":true}}",
                     o->model, prompt, o->tokens);
        break;
    case D_RESPONSES:
        path = "/v1/responses";
        tt_sb_printf(body, "{\"model\":\"%s\",\"input\":\"%s\",\"stream\":true,\"max_output_tokens\":%u}", o->model,
                     prompt, o->tokens);
        break;
    case D_ANTHROPIC:
        path = "/v1/messages";
        tt_sb_printf(body, "{\"model\":\"%s\",\"max_tokens\":%u,\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],"
                           "\"stream\":true}",
                     o->model, o->tokens, prompt);
        break;
    case D_TGI:
        path = "/generate_stream";
        tt_sb_printf(body, "{\"inputs\":\"%s\",\"parameters\":{\"max_new_tokens\":%u,\"details\":true}}", prompt,
                     o->tokens);
        break;
    case D_LLAMACPP:
        path = "/completion";
        tt_sb_printf(body, "{\"prompt\":\"%s\",\"n_predict\":%u,\"stream\":true}", prompt, o->tokens);
        break;
    case D_OLLAMA:
        path = "/api/generate";
        tt_sb_printf(body, "{\"model\":\"%s\",\"prompt\":\"%s\",\"stream\":true,\"options\":{\"num_predict\":%u}}",
                     o->model, prompt, o->tokens);
        break;
    }
    return path;
}
