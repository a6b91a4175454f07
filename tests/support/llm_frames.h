/* llm_frames.h - the bytes LLM servers stream, per dialect, for ttpcapgen:
 * request bodies, and each SSE/NDJSON event of a streamed completion
 * (preamble frames, one frame per token, closing frames), written as the
 * servers write them. Deterministic: token texts and numbers come from the
 * caller's splitmix state. */
#ifndef TT_LLM_FRAMES_H
#define TT_LLM_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "golden.h"

typedef enum dialect {
    D_OPENAI_CHAT,
    D_OPENAI_COMPLETIONS,
    D_RESPONSES,
    D_ANTHROPIC,
    D_TGI,
    D_LLAMACPP,
    D_OLLAMA
} dialect;

/* The dialects' names, by dialect (as ttpcapgen's --dialect spells them). */
extern const char *const llm_dialect_names[7];

/* What every stream of a capture shares. */
typedef struct llm_opts {
    dialect dialect;
    const char *model;  /* no '"' or '\\' */
    unsigned tokens;    /* token events per stream */
    uint64_t ttft_ns, itl_ns;
    bool crlf;          /* CRLF line ends in SSE events */
    bool usage_with_choices; /* OpenAI: usage on the finish chunk, no usage-only frame */
} llm_opts;

/* One stream's state, owned by the caller. */
typedef struct llm_stream {
    const char *id;         /* the response's id */
    unsigned prompt_tokens;
    uint64_t *rng;          /* splitmix state: token texts and numbers */
    tt_strbuf *text;        /* the text so far (responses and tgi repeat it) */
    uint64_t duration_ns;   /* ollama's total_duration */
} llm_stream;

/* splitmix64: advance *state and return the next value. */
uint64_t llm_splitmix(uint64_t *state);
/* Frames a stream of dialect d sends before its first token. */
unsigned llm_pre_frames(dialect d);
/* Frames after the last token (finish, usage, terminal). */
unsigned llm_post_frames(const llm_opts *o);
/* Append the k-th preamble frame, token frame (drawing the token from
 * s->rng) or closing frame to ev; created is the completion's creation
 * instant in seconds. A closing frame may be empty (tgi). */
void llm_frame_pre(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created);
void llm_frame_token(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created);
void llm_frame_post(tt_strbuf *ev, const llm_opts *o, llm_stream *s, unsigned k, uint64_t created);
/* Append the dialect's streaming request body to body; returns its path. */
const char *llm_request_body(const llm_opts *o, tt_strbuf *body);

#endif
