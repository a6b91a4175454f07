/* dialect_internal.h - what the per-API readers of dialect/ share.
 *
 * dialect.c parses the event once (dialect_json.c, keeping only members
 * whose names some reader knows), picks the top-level members any dialect
 * cares about into a dialect_top in one pass, and hands it to the reader of
 * the dialect in question. Readers fill a tt_classified through the helpers
 * below and return whether the event had a shape they know. */
#ifndef TT_DIALECT_INTERNAL_H
#define TT_DIALECT_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <string.h>

#include "dialect/dialect.h"

/* Every member name any reader looks at. The parser tags each member with
 * its name's dj_key (DJ_KEY_OTHER for the rest), so readers compare small
 * integers instead of strings. DJ_TOP_KEYS are the top-level members picked
 * into a dialect_top (in its field order); DJ_NESTED_KEYS the names only
 * looked up below the top. A reader that needs a new name adds it here and
 * to dj_key_lookup (dialect_json.c); the unit test checks both agree. */
#define DJ_TOP_KEYS(X)                                                                             \
    X(id) X(object) X(type) X(model) X(error) X(error_type) X(message)                             \
    X(choices) X(usage)                                    /* OpenAI */                            \
    X(response) X(delta) X(content_block)                  /* Responses, Anthropic */              \
    X(token) X(generated_text) X(details)                  /* TGI */                               \
    X(content) X(stop) X(stop_type) X(stopped_eos) X(stopped_limit) X(stopped_word)                \
    X(tokens_predicted) X(tokens_evaluated) X(timings)     /* llama.cpp */                         \
    X(done) X(done_reason) X(thinking) X(eval_count) X(prompt_eval_count) X(created_at) /* Ollama */   \
    X(text_output) X(model_name)                           /* Triton */
#define DJ_NESTED_KEYS(X)                                                                          \
    X(text) X(finish_reason) X(refusal) X(reasoning_content) X(reasoning) X(tool_calls)            \
    X(function_call) X(role) X(function) X(arguments) X(prompt_tokens) X(input_tokens)             \
    X(completion_tokens) X(output_tokens) X(incomplete_details) X(reason) X(stop_reason)           \
    X(special) X(generated_tokens) X(input_length) X(predicted_n) X(prompt_n) X(partial_json)

typedef enum dj_key {
    DJ_KEY_OTHER = 0, /* a name no reader asks about */
#define DJ_KEY_ENUM(name) DJ_KEY_##name,
    DJ_TOP_KEYS(DJ_KEY_ENUM) DJ_NESTED_KEYS(DJ_KEY_ENUM)
#undef DJ_KEY_ENUM
    DJ_KEY_COUNT
} dj_key;

#define DJ_KEY_PLUS_ONE(name) +1
enum { DJ_TOP_COUNT = 0 DJ_TOP_KEYS(DJ_KEY_PLUS_ONE) }; /* top keys are 1..DJ_TOP_COUNT */
#undef DJ_KEY_PLUS_ONE

/* The name of each key ("" for DJ_KEY_OTHER). */
extern const char *const dj_key_names[DJ_KEY_COUNT];

/* The key named by s[0..len), DJ_KEY_OTHER when no reader knows it. */
dj_key dj_key_lookup(const char *s, size_t len);

/* The nodes dj_parse makes: a cJSON node plus its member name's key. Only
 * nodes of those trees may be passed to dj_key_of and the dj_ helpers. */
typedef struct dj_node {
    cJSON json;
    dj_key key; /* DJ_KEY_OTHER for array items and the root */
} dj_node;

static inline dj_key dj_key_of(const cJSON *node)
{
    return ((const dj_node *)node)->key;
}

/* cJSON_IsString and friends, inline (the library's are calls, and the
 * readers ask often): false for NULL. */
static inline int dj_type(const cJSON *node)
{
    return node ? node->type & 0xFF : cJSON_Invalid;
}
static inline bool dj_is_string(const cJSON *node) { return dj_type(node) == cJSON_String; }
static inline bool dj_is_number(const cJSON *node) { return dj_type(node) == cJSON_Number; }
static inline bool dj_is_object(const cJSON *node) { return dj_type(node) == cJSON_Object; }
static inline bool dj_is_array(const cJSON *node) { return dj_type(node) == cJSON_Array; }
static inline bool dj_is_null(const cJSON *node) { return dj_type(node) == cJSON_NULL; }
static inline bool dj_is_true(const cJSON *node) { return dj_type(node) == cJSON_True; }
static inline bool dj_is_false(const cJSON *node) { return dj_type(node) == cJSON_False; }
static inline bool dj_is_bool(const cJSON *node)
{
    return dj_type(node) == cJSON_True || dj_type(node) == cJSON_False;
}

/* The top-level members of an event object (first occurrence of each);
 * slot[k - 1] is the member of top key k. */
typedef struct dialect_top {
    union {
        struct {
#define DJ_TOP_FIELD(name) const cJSON *name;
            DJ_TOP_KEYS(DJ_TOP_FIELD)
#undef DJ_TOP_FIELD
        };
        const cJSON *slot[DJ_TOP_COUNT];
    };
} dialect_top;

/* Where the pieces of generated text go while an event is read. */
typedef struct text_sink {
    tt_classified *out;
    char *text_out;
    size_t text_cap;
    size_t text_len;
    uint64_t hash;
    /* the pieces added (non-empty), and the first one's text and flags:
     * what tt_dialect_classify_memo needs to make a template */
    unsigned pieces;
    const char *first_piece;
    uint32_t first_flags;
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

/* The first member of obj with that key; NULL when absent or obj is no
 * object (or NULL). */
const cJSON *dj_member(const cJSON *obj, dj_key key);

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
    /* the copy of the data the last parse read (strings are decoded in
     * place there, so a string value's text starts at its offset in the
     * data plus one); NULL before any */
    const unsigned char *last_copy;
} dj_arena;

void dj_arena_init(dj_arena *a, void *buf, size_t cap); /* buf 16-byte aligned */
void dj_arena_free(dj_arena *a);

/* Parse data[0..len) as exactly one JSON value (whitespace around it
 * allowed) into dj_nodes inside arena; NULL when it is not JSON (or nests
 * deeper than 1000, or memory ran out). Member names are NUL-terminated
 * (a name holding an escaped NUL is cut there, as cJSON does); a known
 * name points into dj_key_names. The tree lives until the arena is freed;
 * never pass it to cJSON_Delete. */
cJSON *dj_parse(dj_arena *arena, const char *data, size_t len);

/* dj_parse for the classifier: accepts and rejects exactly the same data,
 * but a member whose key is DJ_KEY_OTHER is checked and left out of the
 * tree (nothing allocated, nothing copied), except inside an "arguments"
 * member, which is kept whole (Ollama tool arguments are printed back). So
 * the tree is dj_parse's minus members no reader can ask for. */
cJSON *dj_parse_known(dj_arena *arena, const char *data, size_t len);

/* Whether [s, s + len) is the inside of a JSON string (between its
 * quotes) by the parser's rules: no raw quote or control character, every
 * escape valid, surrogates paired. When it is, its decoded text (never
 * longer) is written to out, which has room for len + 1 bytes, NUL-
 * terminated, and to *out_len the length the readers count: up to the
 * first NUL (an escaped \u0000 ends it, as strlen does). */
bool dj_decode_string_body(const unsigned char *s, size_t len, unsigned char *out, size_t *out_len);

/* FNV-1a 64 of the text pieces (text_hash), continued over [p, p + len). */
enum { DJ_FNV_OFFSET = 0xcbf29ce484222325ull, DJ_FNV_PRIME = 0x100000001b3ull };
static inline uint64_t dj_fnv_add(uint64_t h, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= DJ_FNV_PRIME;
    }
    return h;
}

/* Where the one piece of an event's text came from: the offset in the
 * data of its string's first byte (after the opening quote; SIZE_MAX when
 * the text was not exactly one non-empty string value of the data), and
 * the TT_HAS_* flags it was added with. */
typedef struct dialect_piece {
    size_t offset;
    uint32_t flags;
} dialect_piece;

/* The memo's side of tt_dialect_classify_memo (dialect_memo.c); the
 * type is normalized ("message" is none, NULL has length 0) and data_len is
 * 0 when data is NULL. dialect_memo_classify classifies data from memo when
 * it is memo's event with another text string, and counts the hit; false
 * when it is not (then nothing was written). dialect_memo_remember makes
 * *memo from a fully classified event whose one text string starts at
 * piece->offset (allocating it the first time; nothing when there is no
 * such string or it does not fit). */
bool dialect_memo_classify(tt_classify_memo *memo, tt_dialect hint, const char *type, size_t type_len,
                           const char *data, size_t data_len, tt_classified *out, char *text_out,
                           size_t text_cap);
void dialect_memo_remember(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                           const char *data, size_t data_len, const tt_classified *out,
                           const dialect_piece *piece);

/* Readers: true when the event had a shape of that dialect. */
int dialect_read_openai(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_responses(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink);
int dialect_read_anthropic(const dialect_top *top, const char *type, size_t type_len,
                           tt_classified *out, text_sink *sink);
int dialect_read_tgi(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_llamacpp(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_ollama(const dialect_top *top, tt_classified *out, text_sink *sink);
int dialect_read_triton(const dialect_top *top, tt_classified *out, text_sink *sink);

#endif
