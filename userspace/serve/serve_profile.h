/* serve_profile.h - what tokentap serve says: request parsing and the exact
 * bytes of each response, per profile (a real server's framing).
 *
 * A streamed response is a plan: a list of events (role, meta, token, usage,
 * done), each written by one write(). Token events are timed by the schedule;
 * role and meta events before the first token go right before token 0, and
 * every event after a token follows it at once. */
#ifndef TT_SERVE_PROFILE_H
#define TT_SERVE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sbuf.h"

typedef enum tt_serve_profile_id {
    TT_PROFILE_VLLM = 0,
    TT_PROFILE_TABBY,
    TT_PROFILE_RESPONSES, /* vLLM's /v1/responses (OpenAI Responses API) */
    TT_PROFILE_ANTHROPIC, /* Anthropic Messages API */
    TT_PROFILE_TGI,       /* Hugging Face text-generation-inference */
    TT_PROFILE_LLAMACPP,  /* llama.cpp llama-server, native /completion */
    TT_PROFILE_OLLAMA,    /* Ollama /api/generate and /api/chat (NDJSON) */
    TT_PROFILE_TRITON_GRPC /* Triton's gRPC ModelStreamInfer, a decoupled model (--http2 only) */
} tt_serve_profile_id;

typedef struct tt_serve_profile {
    const char *name;
    tt_serve_profile_id id;
    const char *separator;    /* what ends an SSE event: "\n\n" or "\r\n\r\n" */
    bool honours_ignore_eos;  /* vLLM yes; TabbyAPI drops the field */
    bool echoes_model;        /* answer with the request's "model" (vLLM) or the served one */
    const char *extra_headers; /* CRLF-terminated header lines added to streamed heads */
    const char *stream_content_type; /* content-type of a streamed answer */
    uint32_t apis;            /* bit (1u << tt_serve_api) for each API the profile answers */
} tt_serve_profile;

/* The profile called name, NULL when unknown. */
const tt_serve_profile *tt_serve_profile_find(const char *name);
/* "vllm, tabby, ...": for error messages and --help. */
const char *tt_serve_profile_names(void);

typedef enum tt_serve_api {
    TT_API_CHAT = 0,        /* POST /v1/chat/completions */
    TT_API_COMPLETIONS,     /* POST /v1/completions */
    TT_API_RESPONSES,       /* POST /v1/responses */
    TT_API_MESSAGES,        /* POST /v1/messages (Anthropic) */
    TT_API_TGI_STREAM,      /* POST /generate_stream (always streamed) */
    TT_API_TGI_GENERATE,    /* POST /generate (never streamed) */
    TT_API_LLAMACPP,        /* POST /completion */
    TT_API_OLLAMA_GENERATE, /* POST /api/generate (streamed unless stream:false) */
    TT_API_OLLAMA_CHAT,     /* POST /api/chat (streamed unless stream:false) */
    TT_API_TRITON_STREAM,   /* gRPC /inference.GRPCInferenceService/ModelStreamInfer (always streamed) */
    TT_API_COUNT
} tt_serve_api;

/* Where a request path leads under prof: 1 with *api set when the profile
 * answers it, 0 when no profile knows the path, -1 when the path belongs to
 * another profile (the caller answers 404 naming the profile). */
int tt_serve_route(const tt_serve_profile *prof, const char *path, tt_serve_api *api);
/* The path of api ("/v1/messages"). */
const char *tt_serve_api_path(tt_serve_api api);

/* Server-wide generation settings from the command line. */
typedef struct tt_serve_gen_opts {
    uint32_t default_tokens; /* output length when the request names none */
    uint32_t tokens_max;     /* cap on any output length */
    uint32_t eos_after;      /* the synthetic model "emits EOS" after this many tokens; 0 never */
    const char *model;       /* served model name */
    int64_t created;         /* "created" value; < 0 means the clock at the request */
    uint32_t reasoning_tokens; /* the first this many output tokens are reasoning (docs/serve.md) */
    bool triton_empty_final; /* triton-grpc: the final flag comes alone (empty final response), not
                                with the last token (--triton-final empty) */
} tt_serve_gen_opts;

/* One generation request, as the profile understood it. */
typedef struct tt_serve_request {
    tt_serve_api api;
    bool stream;
    bool include_usage;
    uint32_t n_tokens;       /* completion tokens this response carries */
    uint32_t reasoning_tokens; /* of which the first this many are reasoning (<= n_tokens) */
    uint32_t prompt_tokens;  /* estimate: prompt text bytes / 4, at least 1 */
    const char *finish_reason; /* "length" or "stop" */
    int64_t created;
    char id[96];             /* the response id ("chatcmpl-...", "cmpl-..."; triton-grpc: the
                                request's id, raw bytes) */
    char model[128];         /* already JSON-escaped, without quotes (triton-grpc: raw bytes) */
    char model_version[32];  /* triton-grpc: the request's model_version, else "1" */
    bool grpc_final_alone;   /* triton-grpc: the last token does not carry the final flag
                                (--triton-final empty) */
    bool grpc_empty_final;   /* triton-grpc: an empty final response ends the request (final
                                alone and the request's triton_enable_empty_final_response, or
                                no token at all) */
    char item_id[48];        /* Responses: the output message's id ("msg_...") */
    char created_at[40];     /* Ollama: `created` as RFC 3339 UTC ("2023-11-14T22:13:20Z") */
    bool want_details;       /* TGI: parameters.details (the final frame carries details) */
    /* Set by the server before each frame is built (0 in tests): time since
     * the request's last byte was read, and when the first token went out. */
    uint64_t elapsed_ns, first_token_ns;
} tt_serve_request;

/* Parse a JSON request body for api. `request_id_hdr` (may be NULL) is the
 * x-request-id header, used for the response id where the real server does;
 * `random_id` fills the id otherwise. Returns 0, or -1 with a one-line reason
 * in err (the body is not a JSON object, a field has the wrong type ...). */
int tt_serve_request_parse(const tt_serve_profile *prof, tt_serve_api api, const char *body,
                           size_t len, const tt_serve_gen_opts *opts, const char *request_id_hdr,
                           uint64_t random_id, int64_t now_unix, tt_serve_request *out,
                           char *err, size_t errlen);

typedef enum tt_serve_event_kind {
    TT_SEV_ROLE = 0, /* chat: the assistant role chunk, no text */
    TT_SEV_TOKEN,    /* one output token */
    TT_SEV_USAGE,    /* the usage frame */
    TT_SEV_DONE,     /* the stream's end: data: [DONE], response.completed, message_stop,
                        Ollama done:true, llama.cpp stop:true (ends the body) */
    TT_SEV_META,     /* a lifecycle event with no text (response.created, message_start,
                        content_block_start, ping, content_block_stop, output_text.done ...) */
    TT_SEV_ERROR     /* --error-after: an error event in the stream (token = tokens sent before it) */
} tt_serve_event_kind;

typedef struct tt_serve_event {
    tt_serve_event_kind kind;
    uint32_t token; /* TOKEN: 0-based token index; META: the profile's lifecycle step */
} tt_serve_event;

/* Events a streamed response may have at most: n_tokens + 16. The last
 * event of a plan ends the body (TGI's last token frame is that event). */
size_t tt_serve_plan_cap(const tt_serve_request *req);
/* Fill plan (room for tt_serve_plan_cap) and return its length. */
size_t tt_serve_plan(const tt_serve_profile *prof, const tt_serve_request *req, tt_serve_event *plan);
/* --error-after K: cut plan (length n) at its token K (K < n_tokens) and put
 * the error event there, followed by the profile's end marker where the real
 * server sends one after an error (vLLM: data: [DONE]). Returns the new
 * length; n unchanged when the plan has no token K. */
size_t tt_serve_plan_error_after(const tt_serve_profile *prof, tt_serve_event *plan, size_t n, uint32_t k);
/* --close-after K: the plan's length when it stops right before its token K
 * (meta/role events before token 0 stay); n when it has no token K. */
size_t tt_serve_plan_cut_at_token(const tt_serve_event *plan, size_t n, uint32_t k);
/* Append the bytes of one event (SSE separator or NDJSON newline included). */
void tt_serve_frame(const tt_serve_profile *prof, const tt_serve_request *req,
                    const tt_serve_event *ev, tt_sbuf *out);
/* Append the JSON body of a non-streamed response. */
void tt_serve_full_body(const tt_serve_profile *prof, const tt_serve_request *req, tt_sbuf *out);

/* The text of token k (a word with a leading space; plain ASCII). */
const char *tt_serve_token_text(uint32_t k);
const char *tt_serve_event_kind_name(tt_serve_event_kind kind);

#endif
