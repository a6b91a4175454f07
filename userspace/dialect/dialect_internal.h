/* dialect_internal.h - what the per-API readers of dialect/ share.
 *
 * dialect.c parses the event once (dialect_json.c), picks the top-level members any dialect
 * cares about into a dialect_top in one pass, and hands it to the reader of
 * the dialect in question. Readers fill a tt_classified through the helpers
 * below and return whether the event had a shape they know. */
#ifndef TT_DIALECT_INTERNAL_H
#define TT_DIALECT_INTERNAL_H

#include <cjson/cJSON.h>
#include <string.h>

#include "dialect/dialect.h"

/* The top-level members of an event object (first occurrence of each). */
typedef struct dialect_top {
    const cJSON *id, *object, *type, *model, *error, *error_type, *message;
    const cJSON *choices, *usage;                              /* OpenAI */
    const cJSON *response, *delta, *content_block;             /* Responses, Anthropic */
    const cJSON *token, *generated_text, *details;             /* TGI */
    const cJSON *content, *stop, *stop_type, *stopped_eos, *stopped_limit,
        *stopped_word, *tokens_predicted, *tokens_evaluated, *timings; /* llama.cpp */
    const cJSON *done, *done_reason, *thinking, *eval_count,
        *prompt_eval_count, *created_at;                       /* Ollama */
} dialect_top;

/* Where the pieces of generated text go while an event is read. */
typedef struct text_sink {
    tt_classified *out;
    char *text_out;
    size_t text_cap;
    size_t text_len;
    uint64_t hash;
} text_sink;

/* Count one piece of generated text; flags adds TT_HAS_REASONING or
 * TT_HAS_TOOL_ARGS. An empty piece counts for nothing. */
void sink_add(text_sink *sink, const char *piece, size_t len, uint32_t flags);

/* The string value of node, or NULL. A node that is present, not null and
 * not a string marks the event TT_HAS_MALFORMED. */
const char *dj_string(tt_classified *out, const cJSON *node);

/* A non-negative integer count, or -1 (absent, null, or malformed: the
 * latter marks TT_HAS_MALFORMED). */
int64_t dj_count(tt_classified *out, const cJSON *node);

/* The object/array node, or NULL (malformed when present with another type). */
const cJSON *dj_object(tt_classified *out, const cJSON *node);
const cJSON *dj_array(tt_classified *out, const cJSON *node);

/* k equals the literal name (the first byte is tested inline: most keys
 * differ there). */
static inline int dj_key_is(const char *k, const char *name)
{
    return k[0] == name[0] && strcmp(k, name) == 0;
}

/* Member of an object by exact name; NULL when absent or obj is no object. */
const cJSON *dj_member(const cJSON *obj, const char *name);

/* True when node is JSON true (false for anything else). */
int dj_true(const cJSON *node);

/* Copy s (NUL-terminated) into a fixed field, truncating. */
void dj_copy(char *dst, size_t cap, const char *s);

/* Record usage from an object with prompt_tokens/input_tokens and
 * completion_tokens/output_tokens; sets TT_HAS_USAGE when it is an object. */
void dj_usage(tt_classified *out, const cJSON *usage);

/* Record a finish reason (ignored when NULL or empty, or one is already set). */
void dj_finish(tt_classified *out, const char *reason);

/* The primary kind from out->has (see dialect.h); token_frame makes a frame
 * TOKEN without text (TGI); fallback is used when nothing else decides. */
tt_event_kind dj_derive_kind(const tt_classified *out, int token_frame, tt_event_kind fallback);

/* A bump arena for one event's parse tree: first a caller buffer (often
 * on the stack), then malloc'd blocks, all released by dj_arena_free. */
typedef struct dj_arena {
    unsigned char *cur;
    size_t left;
    struct dj_block *blocks;
} dj_arena;

void dj_arena_init(dj_arena *a, void *buf, size_t cap); /* buf 16-byte aligned */
void dj_arena_free(dj_arena *a);

/* Parse data[0..len) as exactly one JSON value (whitespace around it
 * allowed) into cJSON-shaped nodes inside arena; NULL when it is not JSON
 * (or nests deeper than 1000, or memory ran out). The tree lives until the
 * arena is freed; never pass it to cJSON_Delete. */
cJSON *dj_parse(dj_arena *arena, const char *data, size_t len);

/* Readers: true when the event had a shape of that dialect. */
int dialect_read_openai(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_responses(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink);
int dialect_read_anthropic(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink);
int dialect_read_tgi(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_llamacpp(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_ollama(const dialect_top *top, tt_classified *out, text_sink *sink);

#endif
