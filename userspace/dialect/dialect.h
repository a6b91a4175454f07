/* dialect.h - what one framed event means, per streaming API.
 *
 * Each event's data is parsed with cJSON and classified. One event can carry
 * several things at once (vLLM's last chunk may hold text and a finish
 * reason; TabbyAPI's usage frame still carries choices), so besides the
 * primary kind an event has a bitmask of everything it carries. An unknown
 * JSON shape is TT_EV_OTHER; data that is not JSON is TT_EV_OTHER with
 * json_ok false. Never crashes on any input. */
#ifndef TT_DIALECT_H
#define TT_DIALECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tt_dialect {
    TT_DIALECT_UNKNOWN = 0,
    TT_DIALECT_OPENAI_COMPLETIONS, /* /v1/completions: choices[].text */
    TT_DIALECT_OPENAI_CHAT,        /* /v1/chat/completions: choices[].delta */
    TT_DIALECT_OPENAI_RESPONSES,   /* /v1/responses: typed events */
    TT_DIALECT_ANTHROPIC,          /* /v1/messages */
    TT_DIALECT_TGI,                /* /generate_stream */
    TT_DIALECT_LLAMACPP,           /* /completion */
    TT_DIALECT_OLLAMA,             /* /api/generate, /api/chat (NDJSON) */
    TT_DIALECT_TRITON,             /* Triton /v2/models/M/generate_stream: text_output */
    /* gRPC messages (protobuf, dialect_grpc.h), never JSON */
    TT_DIALECT_TRITON_GRPC,        /* /inference.GRPCInferenceService/ModelStreamInfer */
    TT_DIALECT_SGLANG_GRPC,        /* /sglang.grpc.scheduler.SglangScheduler/Generate */
    TT_DIALECT_VLLM_GRPC,          /* /vllm.grpc.engine.VllmEngine/Generate */
    TT_DIALECT_COUNT
} tt_dialect;

typedef enum tt_event_kind {
    TT_EV_TOKEN = 0, /* carries generated text (content, reasoning, tool args, refusal, ...) */
    TT_EV_ROLE,      /* choices present, no text (role-only or empty delta) */
    TT_EV_USAGE,     /* usage and nothing else that counts */
    TT_EV_FINISH,    /* a finish reason without text */
    TT_EV_TERMINAL,  /* the stream's end marker: [DONE], response.completed, message_stop, done:true, stop:true, TGI details */
    TT_EV_KEEPALIVE, /* ping events */
    TT_EV_META,      /* lifecycle events without text (response.created, message_start, content_block_start ...) */
    TT_EV_ERROR,     /* an error event or error object */
    TT_EV_OTHER,     /* unknown shape or not JSON */
    TT_EV_COUNT
} tt_event_kind;

/* Everything an event carries (bitmask). */
enum {
    TT_HAS_TEXT = 1u << 0,
    TT_HAS_REASONING = 1u << 1, /* some of the text is reasoning/thinking */
    TT_HAS_TOOL_ARGS = 1u << 2,
    TT_HAS_USAGE = 1u << 3,
    TT_HAS_FINISH = 1u << 4,
    TT_HAS_TERMINAL = 1u << 5,
    TT_HAS_CHOICES = 1u << 6,   /* a non-empty choices array (OpenAI) */
    TT_HAS_ROLE = 1u << 7,      /* delta.role present */
    TT_HAS_ERROR = 1u << 8,
    TT_HAS_SPECIAL = 1u << 9,   /* a token the server marked special (TGI): a TOKEN, its text not counted */
    TT_HAS_MALFORMED = 1u << 10, /* a known field had an unexpected JSON type; it was ignored */
    TT_HAS_EMPTY_CHOICES = 1u << 11, /* a choices array with no element (OpenAI: vLLM's include_usage frame) */
};

typedef struct tt_classified {
    tt_event_kind kind;
    uint32_t has;                  /* TT_HAS_* */
    bool json_ok;                  /* data parsed as JSON (or was a known literal such as [DONE]) */
    tt_dialect dialect;            /* the dialect this event was read as */
    uint32_t text_bytes;           /* bytes of generated text, all pieces */
    uint32_t reasoning_bytes;      /* of which reasoning/thinking */
    uint64_t text_hash;            /* FNV-1a 64 of the text pieces in order; 0 when none */
    int64_t usage_prompt_tokens;   /* -1 when absent */
    int64_t usage_completion_tokens;
    char finish_reason[32];        /* "" when none */
    char response_id[96];          /* id of the response/message when the event names one, else "" */
    char error_message[128];       /* when TT_HAS_ERROR is set (TT_EV_ERROR, response.failed), else "" */
} tt_classified;

/* Kinds and flags, in short (per dialect: the comment atop each dialect_*.c):
 * - The primary kind: an error (not also terminal) -> ERROR; generated text,
 *   or a TGI token frame -> TOKEN; else terminal -> TERMINAL; else finish ->
 *   FINISH; else usage -> USAGE; else non-empty choices -> ROLE; else the
 *   lifecycle kind (META, KEEPALIVE) or OTHER. So a frame that ends the
 *   stream AND carries the last text (TGI's last token, a llama.cpp or
 *   Ollama final frame with text) is TOKEN with TT_HAS_TERMINAL: consumers
 *   that look for the end must test the TT_HAS_TERMINAL bit, not the kind.
 * - Text is counted after JSON unescaping (UTF-8 bytes, up to a NUL).
 * - A TGI token with special:true is a TOKEN (it was generated) whose text
 *   is not counted (TGI leaves it out of generated_text); TT_HAS_SPECIAL.
 * - An SSE event named "error" is ERROR and one named "ping" KEEPALIVE,
 *   whatever the data; "[DONE]" is TERMINAL under every hint.
 * - With a hint, the hint's rules are tried first; when they find nothing
 *   the shape decides, and out->dialect tells which dialect read it.
 * - Anthropic message_start sets usage_prompt_tokens only: its output_tokens
 *   is a placeholder, so usage_completion_tokens stays -1 there.
 * - JSON is read strictly (RFC 8259, dialect_json.c): a BOM, bytes after
 *   the value, raw control characters in strings, lone surrogates, or
 *   nesting deeper than 1000 make the data "not JSON" (OTHER, json_ok
 *   false). A known member of the wrong type is ignored and flagged
 *   TT_HAS_MALFORMED. Counts must be non-negative integers. */

/* The dialect a request path implies ("/v1/chat/completions?x" -> CHAT);
 * UNKNOWN when the path says nothing. */
tt_dialect tt_dialect_from_path(const char *path, size_t len);

/* Classify one event. `hint` is the dialect the request path implied (or
 * UNKNOWN: then the shape decides). A gRPC hint reads data as one gRPC
 * message of that API (tt_grpc_classify, dialect_grpc.h): kinds and flags
 * as there, json_ok meaning "decoded", out->dialect the hint. `type` is the SSE event type (NULL for
 * NDJSON; "message", the SSE default, counts as none). When text_out is
 * non-NULL and text_cap > 0, up to text_cap-1 bytes of the generated text
 * are copied there, NUL-terminated ("" when none). Keeps no state between
 * calls; safe to call from several threads; a typical event costs no malloc. */
void tt_dialect_classify(tt_dialect hint, const char *type, size_t type_len,
                         const char *data, size_t data_len, tt_classified *out,
                         char *text_out, size_t text_cap);

/* What one stream's events looked like, for tt_dialect_classify_memo:
 * the bytes around the text string of an earlier event, and what that
 * event was. Owned by the caller (one per stream), NULL until the first
 * event that makes one; free with tt_classify_memo_free. */
typedef struct tt_classify_memo tt_classify_memo;

/* tt_dialect_classify, for the events of one stream in order: the same
 * result for every input. An event whose bytes are those of the memo's
 * event except for the inside of its one text string (a token chunk after
 * a token chunk: the same id, model, choice and nulls, another piece of
 * text) is classified from the memo, without parsing it again; any other
 * is parsed, and when its text is one string value of it, *memo is made
 * from it (allocated the first time; left NULL when memory is short). */
void tt_dialect_classify_memo(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                              const char *data, size_t data_len, tt_classified *out, char *text_out,
                              size_t text_cap);

void tt_classify_memo_free(tt_classify_memo *memo);

/* Whether a and b say the same: every field, the strings up to their NUL. */
bool tt_classified_same(const tt_classified *a, const tt_classified *b);

/* The events classified from memo so far (0 for NULL): for tests. */
uint64_t tt_classify_memo_hits(const tt_classify_memo *memo);

const char *tt_dialect_name(tt_dialect d);      /* "openai-chat", "anthropic", ... */
const char *tt_event_kind_name(tt_event_kind k); /* "TOKEN", "ROLE", ... */

#endif
