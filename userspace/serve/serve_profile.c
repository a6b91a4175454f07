/* serve_profile.c - request parsing and response bytes per profile; see
 * serve_profile.h and docs/serve.md for the real servers each profile copies. */
#include "serve/serve_profile.h"

#include "serve/serve_native.h"
#include "serve/serve_triton.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define API_BIT(a) (1u << (a))
#define SSE_TYPE "text/event-stream; charset=utf-8"

static const tt_serve_profile profiles[] = {
    {.name = "vllm", .id = TT_PROFILE_VLLM, .separator = "\n\n", .honours_ignore_eos = true,
     .echoes_model = true, .extra_headers = "", .stream_content_type = SSE_TYPE,
     .apis = API_BIT(TT_API_CHAT) | API_BIT(TT_API_COMPLETIONS)},
    {.name = "tabby", .id = TT_PROFILE_TABBY, .separator = "\r\n\r\n", .honours_ignore_eos = false,
     .echoes_model = false,
     .extra_headers = "cache-control: no-store\r\nconnection: keep-alive\r\nx-accel-buffering: no\r\n",
     .stream_content_type = SSE_TYPE, .apis = API_BIT(TT_API_CHAT) | API_BIT(TT_API_COMPLETIONS)},
    {.name = "responses", .id = TT_PROFILE_RESPONSES, .separator = "\n\n", .honours_ignore_eos = true,
     .echoes_model = true, .extra_headers = "", .stream_content_type = SSE_TYPE,
     .apis = API_BIT(TT_API_RESPONSES)},
    {.name = "anthropic", .id = TT_PROFILE_ANTHROPIC, .separator = "\n\n", .honours_ignore_eos = false,
     .echoes_model = true, .extra_headers = "cache-control: no-cache\r\n",
     .stream_content_type = SSE_TYPE, .apis = API_BIT(TT_API_MESSAGES)},
    {.name = "tgi", .id = TT_PROFILE_TGI, .separator = "\n\n", .honours_ignore_eos = false,
     .echoes_model = false, .extra_headers = "cache-control: no-cache\r\n",
     .stream_content_type = "text/event-stream",
     .apis = API_BIT(TT_API_TGI_STREAM) | API_BIT(TT_API_TGI_GENERATE)},
    {.name = "llamacpp", .id = TT_PROFILE_LLAMACPP, .separator = "\n\n", .honours_ignore_eos = true,
     .echoes_model = false, .extra_headers = "", .stream_content_type = "text/event-stream",
     .apis = API_BIT(TT_API_LLAMACPP)},
    {.name = "ollama", .id = TT_PROFILE_OLLAMA, .separator = "\n", .honours_ignore_eos = false,
     .echoes_model = true, .extra_headers = "", .stream_content_type = "application/x-ndjson",
     .apis = API_BIT(TT_API_OLLAMA_GENERATE) | API_BIT(TT_API_OLLAMA_CHAT)},
    {.name = "triton-grpc", .id = TT_PROFILE_TRITON_GRPC, .separator = "", .honours_ignore_eos = true,
     .echoes_model = true, .extra_headers = "", .stream_content_type = "application/grpc",
     .apis = API_BIT(TT_API_TRITON_STREAM)},
};

static const char *const api_paths[TT_API_COUNT] = {
    [TT_API_CHAT] = "/v1/chat/completions", [TT_API_COMPLETIONS] = "/v1/completions",
    [TT_API_RESPONSES] = "/v1/responses",    [TT_API_MESSAGES] = "/v1/messages",
    [TT_API_TGI_STREAM] = "/generate_stream", [TT_API_TGI_GENERATE] = "/generate",
    [TT_API_LLAMACPP] = "/completion",        [TT_API_OLLAMA_GENERATE] = "/api/generate",
    [TT_API_OLLAMA_CHAT] = "/api/chat",
    [TT_API_TRITON_STREAM] = "/inference.GRPCInferenceService/ModelStreamInfer",
};

const char *tt_serve_api_path(tt_serve_api api) { return api < TT_API_COUNT ? api_paths[api] : "?"; }

int tt_serve_route(const tt_serve_profile *prof, const char *path, tt_serve_api *api)
{
    for (int a = 0; a < TT_API_COUNT; a++) {
        if (strcmp(path, api_paths[a])) continue;
        *api = (tt_serve_api)a;
        return prof->apis & API_BIT(a) ? 1 : -1;
    }
    return 0;
}

const tt_serve_profile *tt_serve_profile_find(const char *name)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (!strcmp(profiles[i].name, name)) return &profiles[i];
    return NULL;
}

const char *tt_serve_profile_names(void) { return "vllm, tabby, responses, anthropic, tgi, llamacpp, ollama, triton-grpc"; }

static const char *const words[16] = {
    " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy",
    " dog", " and", " runs", " far", " into", " green", " hills", " again",
};

const char *tt_serve_token_text(uint32_t k) { return words[k % 16]; }

const char *tt_serve_event_kind_name(tt_serve_event_kind kind)
{
    switch (kind) {
    case TT_SEV_ROLE: return "role";
    case TT_SEV_TOKEN: return "token";
    case TT_SEV_USAGE: return "usage";
    case TT_SEV_DONE: return "done";
    case TT_SEV_META: return "meta";
    case TT_SEV_ERROR: return "error";
    }
    return "?";
}

/* A JSON number that is a whole count in [lo, hi]; null counts as absent. */
static int get_count(const cJSON *obj, const char *key, uint32_t lo, uint32_t hi, bool *present,
                     uint32_t *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *present = false;
    if (!v || cJSON_IsNull(v)) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < lo || d > hi) {
        snprintf(err, errlen, "'%s' must be an integer in [%u, %u]", key, lo, hi);
        return -1;
    }
    *present = true;
    *out = (uint32_t)d;
    return 0;
}

static int get_bool(const cJSON *obj, const char *key, bool *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) {
        snprintf(err, errlen, "'%s' must be a boolean", key);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

static size_t text_bytes(const cJSON *v)
{
    if (cJSON_IsString(v)) return strlen(v->valuestring);
    size_t n = 0;
    if (cJSON_IsArray(v)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
            if (cJSON_IsString(it)) n += strlen(it->valuestring);
            else if (cJSON_IsObject(it)) n += text_bytes(cJSON_GetObjectItemCaseSensitive(it, "text"));
        }
    }
    return n;
}

static int messages_bytes(const cJSON *root, size_t *out, char *err, size_t errlen)
{
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs)) {
        snprintf(err, errlen, "'messages' must be an array");
        return -1;
    }
    size_t n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (!cJSON_IsObject(m)) {
            snprintf(err, errlen, "each of 'messages' must be an object");
            return -1;
        }
        n += text_bytes(cJSON_GetObjectItemCaseSensitive(m, "content"));
    }
    *out = n;
    return 0;
}

/* A string-or-array prompt field; absent is allowed only when optional. */
static int prompt_field(const cJSON *root, const char *key, bool optional, size_t *out, char *err,
                        size_t errlen)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, key);
    if (optional && (!p || cJSON_IsNull(p))) {
        *out = 0;
        return 0;
    }
    if (!cJSON_IsString(p) && !cJSON_IsArray(p)) {
        snprintf(err, errlen, "'%s' must be a string or an array", key);
        return -1;
    }
    if (cJSON_IsArray(p)) {
        size_t n = 0; /* strings, or items ({"content": ...} / {"text": ...}) */
        const cJSON *it;
        cJSON_ArrayForEach(it, p) {
            if (cJSON_IsString(it))
                n += strlen(it->valuestring);
            else if (cJSON_IsObject(it))
                n += text_bytes(cJSON_GetObjectItemCaseSensitive(it, "content")) +
                     text_bytes(cJSON_GetObjectItemCaseSensitive(it, "text"));
        }
        *out = n;
        return 0;
    }
    *out = text_bytes(p);
    return 0;
}

static int prompt_bytes(tt_serve_api api, const cJSON *root, size_t *out, char *err, size_t errlen)
{
    switch (api) {
    case TT_API_CHAT:
    case TT_API_OLLAMA_CHAT:
        return messages_bytes(root, out, err, errlen);
    case TT_API_MESSAGES: {
        if (messages_bytes(root, out, err, errlen)) return -1;
        *out += text_bytes(cJSON_GetObjectItemCaseSensitive(root, "system"));
        return 0;
    }
    case TT_API_RESPONSES: return prompt_field(root, "input", false, out, err, errlen);
    case TT_API_TGI_STREAM:
    case TT_API_TGI_GENERATE: {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "inputs");
        if (!cJSON_IsString(in)) {
            snprintf(err, errlen, "'inputs' must be a string");
            return -1;
        }
        *out = strlen(in->valuestring);
        return 0;
    }
    case TT_API_OLLAMA_GENERATE: return prompt_field(root, "prompt", true, out, err, errlen);
    default: return prompt_field(root, "prompt", false, out, err, errlen);
    }
}

/* An optional member that must be an object when present (null: absent). */
static int get_object(const cJSON *root, const char *key, const cJSON **out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsObject(v)) {
        snprintf(err, errlen, "'%s' must be an object", key);
        return -1;
    }
    *out = v;
    return 0;
}

/* llama.cpp n_predict and Ollama num_predict: an integer, where a negative
 * value (-1: no limit; Ollama's -2: fill the context) means none given. */
static int get_predict(const cJSON *obj, const char *key, bool *present, uint32_t *out, char *err,
                       size_t errlen)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    *present = false;
    if (!v || cJSON_IsNull(v)) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < -2 || d > UINT32_MAX) {
        snprintf(err, errlen, "'%s' must be an integer in [-2, %u]", key, UINT32_MAX);
        return -1;
    }
    if (d <= 0) return 0;
    *present = true;
    *out = (uint32_t)d;
    return 0;
}

/* The output length the request names, per API. */
static int requested_length(tt_serve_api api, const cJSON *root, bool *have, uint32_t *n, bool *want_details,
                            char *err, size_t errlen)
{
    const cJSON *sub = NULL;
    *have = false;
    switch (api) {
    case TT_API_CHAT:
        if (get_count(root, "max_completion_tokens", 1, UINT32_MAX, have, n, err, errlen)) return -1;
        if (*have) return 0;
        return get_count(root, "max_tokens", 1, UINT32_MAX, have, n, err, errlen);
    case TT_API_COMPLETIONS: return get_count(root, "max_tokens", 1, UINT32_MAX, have, n, err, errlen);
    case TT_API_RESPONSES: return get_count(root, "max_output_tokens", 1, UINT32_MAX, have, n, err, errlen);
    case TT_API_MESSAGES:
        if (get_count(root, "max_tokens", 1, UINT32_MAX, have, n, err, errlen)) return -1;
        if (!*have) {
            snprintf(err, errlen, "'max_tokens' is required");
            return -1;
        }
        return 0;
    case TT_API_TGI_STREAM:
    case TT_API_TGI_GENERATE:
        if (get_object(root, "parameters", &sub, err, errlen)) return -1;
        if (!sub) return 0;
        if (get_bool(sub, "details", want_details, err, errlen)) return -1;
        return get_count(sub, "max_new_tokens", 1, UINT32_MAX, have, n, err, errlen);
    case TT_API_LLAMACPP: return get_predict(root, "n_predict", have, n, err, errlen);
    case TT_API_OLLAMA_GENERATE:
    case TT_API_OLLAMA_CHAT:
        if (get_object(root, "options", &sub, err, errlen)) return -1;
        return get_predict(sub, "num_predict", have, n, err, errlen);
    default: return 0;
    }
}

static void hex_id(char *buf, size_t len, const char *prefix, uint64_t random_id)
{
    snprintf(buf, len, "%s%016llx%016llx", prefix, (unsigned long long)random_id,
             (unsigned long long)(random_id * 0x9e3779b97f4a7c15ull ^ 0x5851f42d4c957f2dull));
}

static bool plain_id_text(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 80) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') return false;
    }
    return true;
}

static void fill_model(tt_serve_request *out, const char *name)
{
    tt_sbuf b = {0};
    tt_sbuf_json_str(&b, name, strlen(name));
    if (b.oom || b.len < 2 || b.len - 2 >= sizeof out->model) {
        snprintf(out->model, sizeof out->model, "model");
    } else {
        memcpy(out->model, b.p + 1, b.len - 2);
        out->model[b.len - 2] = 0;
    }
    tt_sbuf_free(&b);
}

int tt_serve_request_parse(const tt_serve_profile *prof, tt_serve_api api, const char *body,
                           size_t len, const tt_serve_gen_opts *opts, const char *request_id_hdr,
                           uint64_t random_id, int64_t now_unix, tt_serve_request *out,
                           char *err, size_t errlen)
{
    *out = (tt_serve_request){.api = api, .finish_reason = "length"};
    if (api == TT_API_TRITON_STREAM)
        return tt_serve_triton_parse(prof, (const uint8_t *)body, len, opts, out, err, errlen);
    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &parse_end, false);
    if (!root) {
        size_t at = parse_end && parse_end >= body ? (size_t)(parse_end - body) : 0;
        snprintf(err, errlen, "malformed JSON body near byte %zu", at);
        return -1;
    }
    int rc = -1;
    for (size_t at = parse_end ? (size_t)(parse_end - body) : len; at < len; at++) {
        if (body[at] != ' ' && body[at] != '\t' && body[at] != '\r' && body[at] != '\n') {
            snprintf(err, errlen, "malformed JSON body: data after the value at byte %zu", at);
            goto done;
        }
    }
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "the body must be a JSON object");
        goto done;
    }
    bool ignore_eos = false, have_max = false, have_min = false;
    uint32_t max_tokens = 0, min_tokens = 0;
    out->stream = api == TT_API_OLLAMA_GENERATE || api == TT_API_OLLAMA_CHAT; /* Ollama streams by default */
    if (get_bool(root, "stream", &out->stream, err, errlen)) goto done;
    if (api == TT_API_TGI_STREAM) out->stream = true;
    if (api == TT_API_TGI_GENERATE) out->stream = false;
    if (get_bool(root, "ignore_eos", &ignore_eos, err, errlen)) goto done;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) {
            snprintf(err, errlen, "'stream_options' must be an object");
            goto done;
        }
        if (get_bool(so, "include_usage", &out->include_usage, err, errlen)) goto done;
    }
    if (api != TT_API_CHAT && api != TT_API_COMPLETIONS) out->include_usage = false;
    if (requested_length(api, root, &have_max, &max_tokens, &out->want_details, err, errlen)) goto done;
    if (get_count(root, "min_tokens", 0, UINT32_MAX, &have_min, &min_tokens, err, errlen)) goto done;
    size_t pbytes = 0;
    if (prompt_bytes(api, root, &pbytes, err, errlen)) goto done;
    out->prompt_tokens = (uint32_t)(pbytes / 4 > 0 ? (pbytes / 4 > UINT32_MAX ? UINT32_MAX : pbytes / 4) : 1);

    uint32_t n = have_max ? max_tokens : opts->default_tokens;
    if (n > opts->tokens_max) n = opts->tokens_max;
    if (opts->eos_after > 0 && !(prof->honours_ignore_eos && ignore_eos)) {
        uint32_t natural = opts->eos_after;
        if (have_min && min_tokens > natural) natural = min_tokens;
        if (natural < n) {
            n = natural;
            out->finish_reason = "stop";
        }
    }
    out->n_tokens = n;
    out->reasoning_tokens = opts->reasoning_tokens < n ? opts->reasoning_tokens : n;

    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    fill_model(out, prof->echoes_model && cJSON_IsString(model) ? model->valuestring : opts->model);
    out->created = opts->created >= 0 ? opts->created : now_unix;
    time_t t = (time_t)out->created;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out->created_at, sizeof out->created_at, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out->created_at, sizeof out->created_at, "1970-01-01T00:00:00Z");

    const char *prefix = api == TT_API_CHAT ? "chatcmpl-" : api == TT_API_RESPONSES ? "resp_"
                       : api == TT_API_MESSAGES ? "msg_" : "cmpl-";
    if (prof->id == TT_PROFILE_VLLM && request_id_hdr && plain_id_text(request_id_hdr))
        snprintf(out->id, sizeof out->id, "%s%s", prefix, request_id_hdr);
    else
        hex_id(out->id, sizeof out->id, prefix, random_id);
    hex_id(out->item_id, sizeof out->item_id, "msg_", random_id ^ 0xa5a5a5a5a5a5a5a5ull);
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

size_t tt_serve_plan_cap(const tt_serve_request *req) { return (size_t)req->n_tokens + 16; }

size_t tt_serve_plan_cut_at_token(const tt_serve_event *plan, size_t n, uint32_t k)
{
    for (size_t i = 0; i < n; i++)
        if (plan[i].kind == TT_SEV_TOKEN && plan[i].token == k) return i;
    return n;
}

size_t tt_serve_plan_error_after(const tt_serve_profile *prof, tt_serve_event *plan, size_t n, uint32_t k)
{
    size_t at = tt_serve_plan_cut_at_token(plan, n, k);
    if (at == n) return n;
    plan[at++] = (tt_serve_event){TT_SEV_ERROR, k};
    if (prof->id == TT_PROFILE_VLLM) plan[at++] = (tt_serve_event){TT_SEV_DONE, 0};
    return at;
}


size_t tt_serve_plan(const tt_serve_profile *prof, const tt_serve_request *req, tt_serve_event *plan)
{
    size_t n = 0;
    switch (prof->id) {
    case TT_PROFILE_RESPONSES: {
        uint32_t r = req->reasoning_tokens;
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_CREATED};
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_IN_PROGRESS};
        if (r) {
            plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_RS_ITEM_ADDED};
            plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_RS_PART_ADDED};
            for (uint32_t k = 0; k < r; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
            for (uint32_t s = TT_RESP_RS_TEXT_DONE; s <= TT_RESP_RS_ITEM_DONE; s++)
                plan[n++] = (tt_serve_event){TT_SEV_META, s};
        }
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_ITEM_ADDED};
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_RESP_PART_ADDED};
        for (uint32_t k = r; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
        for (uint32_t s = TT_RESP_TEXT_DONE; s <= TT_RESP_ITEM_DONE; s++) plan[n++] = (tt_serve_event){TT_SEV_META, s};
        plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
        return n;
    }
    case TT_PROFILE_ANTHROPIC: {
        uint32_t r = req->reasoning_tokens;
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_MESSAGE_START};
        plan[n++] = (tt_serve_event){TT_SEV_META, r ? TT_ANTH_THINK_START : TT_ANTH_BLOCK_START};
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_PING};
        for (uint32_t k = 0; k < r; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
        if (r) {
            plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_SIGNATURE};
            plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_THINK_STOP};
            plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_BLOCK_START};
        }
        for (uint32_t k = r; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
        plan[n++] = (tt_serve_event){TT_SEV_META, TT_ANTH_BLOCK_STOP};
        plan[n++] = (tt_serve_event){TT_SEV_USAGE, 0};
        plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
        return n;
    }
    case TT_PROFILE_TGI: /* the last token's frame ends the stream */
        for (uint32_t k = 0; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
        if (n == 0) plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
        return n;
    case TT_PROFILE_TRITON_GRPC:
        return tt_serve_triton_plan(req, plan);
    case TT_PROFILE_LLAMACPP:
    case TT_PROFILE_OLLAMA:
        for (uint32_t k = 0; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
        plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
        return n;
    default:
        break;
    }
    if (prof->id == TT_PROFILE_VLLM && req->api == TT_API_CHAT) plan[n++] = (tt_serve_event){TT_SEV_ROLE, 0};
    for (uint32_t k = 0; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
    if (req->include_usage) plan[n++] = (tt_serve_event){TT_SEV_USAGE, 0};
    plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
    return n;
}

static void put_usage(tt_sbuf *out, const tt_serve_request *req, bool spaced, bool total_before)
{
    uint64_t p = req->prompt_tokens, c = req->n_tokens;
    const char *sep = spaced ? ", " : ",";
    const char *col = spaced ? ": " : ":";
    tt_sbuf_printf(out, "{\"prompt_tokens\"%s%llu%s", col, (unsigned long long)p, sep);
    if (total_before)
        tt_sbuf_printf(out, "\"total_tokens\"%s%llu%s\"completion_tokens\"%s%llu}", col,
                       (unsigned long long)(p + c), sep, col, (unsigned long long)c);
    else
        tt_sbuf_printf(out, "\"completion_tokens\"%s%llu%s\"total_tokens\"%s%llu}", col,
                       (unsigned long long)c, sep, col, (unsigned long long)(p + c));
}

/* vLLM: pydantic model_dump_json, compact; chat chunks exclude unset fields,
 * completion chunks do not (hence "usage":null on every chunk). */
static void vllm_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    bool chat = req->api == TT_API_CHAT;
    bool last = ev->kind == TT_SEV_TOKEN && ev->token + 1 == req->n_tokens;
    tt_sbuf_printf(out, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":\"%s\",\"choices\":[",
                   req->id, chat ? "chat.completion.chunk" : "text_completion",
                   (long long)req->created, req->model);
    if (ev->kind == TT_SEV_USAGE) {
        tt_sbuf_puts(out, "],\"usage\":");
        put_usage(out, req, false, true);
        tt_sbuf_puts(out, "}");
        return;
    }
    const char *text = ev->kind == TT_SEV_TOKEN ? tt_serve_token_text(ev->token) : "";
    bool reasoning = ev->kind == TT_SEV_TOKEN && ev->token < req->reasoning_tokens;
    if (chat && ev->kind == TT_SEV_ROLE)
        tt_sbuf_puts(out, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},");
    else if (chat && reasoning)
        tt_sbuf_printf(out, "{\"index\":0,\"delta\":{\"reasoning_content\":\"%s\"},", text);
    else if (chat)
        tt_sbuf_printf(out, "{\"index\":0,\"delta\":{\"content\":\"%s\"},", text);
    else
        tt_sbuf_printf(out, "{\"index\":0,\"text\":\"%s\",", text);
    if (last)
        tt_sbuf_printf(out, "\"logprobs\":null,\"finish_reason\":\"%s\",\"stop_reason\":null}]",
                       req->finish_reason);
    else if (chat)
        tt_sbuf_puts(out, "\"logprobs\":null,\"finish_reason\":null}]");
    else
        tt_sbuf_puts(out, "\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]");
    tt_sbuf_puts(out, chat ? "}" : ",\"usage\":null}");
}

/* TabbyAPI: json.dumps of a dict, so ", " and ": " separators, model last.
 * With include_usage the finish reason moves from the last token's chunk to
 * the usage frame, which keeps a one-element choices list. */
static void tabby_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    bool chat = req->api == TT_API_CHAT;
    bool last = ev->kind == TT_SEV_TOKEN && ev->token + 1 == req->n_tokens;
    tt_sbuf_printf(out, "{\"id\": \"%s\", \"object\": \"%s\", \"created\": %lld, \"choices\": [",
                   req->id, chat ? "chat.completion.chunk" : "text_completion", (long long)req->created);
    bool finish_here = ev->kind == TT_SEV_USAGE || (last && !req->include_usage);
    if (ev->kind == TT_SEV_USAGE)
        tt_sbuf_puts(out, chat ? "{\"index\": 0, \"delta\": {}, " : "{\"index\": 0, \"text\": \"\", ");
    else if (chat)
        tt_sbuf_printf(out, "{\"index\": 0, \"delta\": {\"%s\": \"%s\"}, ",
                       ev->token < req->reasoning_tokens ? "reasoning_content" : "content",
                       tt_serve_token_text(ev->token));
    else
        tt_sbuf_printf(out, "{\"index\": 0, \"text\": \"%s\", ", tt_serve_token_text(ev->token));
    if (finish_here)
        tt_sbuf_printf(out, "\"finish_reason\": \"%s\"}]", req->finish_reason);
    else
        tt_sbuf_puts(out, "\"finish_reason\": null}]");
    if (ev->kind == TT_SEV_USAGE) {
        tt_sbuf_puts(out, ", \"usage\": ");
        put_usage(out, req, true, false);
    }
    tt_sbuf_printf(out, ", \"model\": \"%s\"}", req->model);
}

static void put_text(tt_sbuf *out, const tt_serve_request *req)
{
    tt_sbuf_puts(out, "\"");
    for (uint32_t k = 0; k < req->n_tokens; k++) tt_sbuf_puts(out, tt_serve_token_text(k));
    tt_sbuf_puts(out, "\"");
}

void tt_serve_frame(const tt_serve_profile *prof, const tt_serve_request *req,
                    const tt_serve_event *ev, tt_sbuf *out)
{
    switch (prof->id) {
    case TT_PROFILE_VLLM:
    case TT_PROFILE_TABBY:
        tt_sbuf_puts(out, "data: ");
        if (ev->kind == TT_SEV_DONE)
            tt_sbuf_puts(out, "[DONE]");
        else if (ev->kind == TT_SEV_ERROR) /* vLLM's create_streaming_error_response: json.dumps */
            tt_sbuf_printf(out, "{\"error\": {\"object\": \"error\", \"message\": \"synthetic error after %u tokens\", "
                                "\"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}", ev->token);
        else if (prof->id == TT_PROFILE_VLLM)
            vllm_frame(req, ev, out);
        else
            tabby_frame(req, ev, out);
        break;
    case TT_PROFILE_TRITON_GRPC:
        tt_serve_triton_frame(req, ev, out);
        break;
    default:
        tt_serve_native_frame(prof, req, ev, out);
        break;
    }
    tt_sbuf_puts(out, prof->separator);
}

void tt_serve_full_body(const tt_serve_profile *prof, const tt_serve_request *req, tt_sbuf *out)
{
    bool chat = req->api == TT_API_CHAT;
    if (tt_serve_native_full_body(prof, req, out)) return;
    if (prof->id == TT_PROFILE_VLLM) {
        tt_sbuf_printf(out, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":\"%s\",\"choices\":[{\"index\":0,",
                       req->id, chat ? "chat.completion" : "text_completion", (long long)req->created,
                       req->model);
        tt_sbuf_puts(out, chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":");
        put_text(out, req);
        tt_sbuf_printf(out, "%s,\"logprobs\":null,\"finish_reason\":\"%s\",\"stop_reason\":null}],\"usage\":",
                       chat ? "}" : "", req->finish_reason);
        put_usage(out, req, false, true);
        tt_sbuf_puts(out, "}");
        return;
    }
    tt_sbuf_printf(out, "{\"id\": \"%s\", \"choices\": [{\"index\": 0, \"finish_reason\": \"%s\", ",
                   req->id, req->finish_reason);
    tt_sbuf_puts(out, chat ? "\"message\": {\"role\": \"assistant\", \"content\": " : "\"text\": ");
    put_text(out, req);
    tt_sbuf_printf(out, "%s}], \"created\": %lld, \"model\": \"%s\", \"object\": \"%s\", \"usage\": ",
                   chat ? "}" : "", (long long)req->created, req->model,
                   chat ? "chat.completion" : "text_completion");
    put_usage(out, req, true, false);
    tt_sbuf_puts(out, "}");
}
