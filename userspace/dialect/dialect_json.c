/* dialect_json.c - a strict JSON (RFC 8259) parser that builds cJSON-shaped
 * nodes in a caller-provided arena.
 *
 * cJSON_Parse costs one malloc per value and per string and checks every
 * literal with strncmp and every number with strtod; for a 200-byte chunk
 * that is most of the classifier's time. This parser writes the same node
 * structs (so the readers use cJSON's accessors) into an arena the caller
 * resets per event, and needs no process-wide cJSON hooks. Trees it makes
 * must never be passed to cJSON_Delete.
 *
 * It reads a copy of the data (in the arena, NUL-padded: no bounds checks
 * while scanning) and decodes strings in place, so no string is copied
 * twice. Every member is tagged with its name's dj_key; known names point
 * at static text. dj_parse_known, the classifier's parse, also leaves out
 * members no reader knows ("created", "index", "logprobs",
 * "system_fingerprint", ...): they are checked, never built.
 *
 * Strictness: exactly one value plus surrounding whitespace; no BOM; no raw
 * control characters in strings; \u escapes must pair surrogates; nesting
 * deeper than DJ_MAX_DEPTH fails. Checked-only values obey the same rules.
 * Numbers: integers of up to 15 digits are exact; others are converted
 * without strtod (so without locale) and may be off in the last bits, which
 * does not matter for the counts read here. */
#include "dialect/dialect_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { DJ_MAX_DEPTH = 1000, DJ_BLOCK_MIN = 64 * 1024 };

static const unsigned char json_space[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

typedef struct dj_block {
    struct dj_block *next;
    _Alignas(16) unsigned char data[];
} dj_block;

void dj_arena_init(dj_arena *a, void *buf, size_t cap)
{
    a->cur = buf;
    a->left = cap;
    a->blocks = NULL;
    a->last_copy = NULL;
}

void dj_arena_free(dj_arena *a)
{
    while (a->blocks) {
        dj_block *next = a->blocks->next;
        free(a->blocks);
        a->blocks = next;
    }
    a->left = 0;
}

/* Room for n bytes (n already a multiple of 16) in a new block. */
static __attribute__((noinline)) void *arena_grow(dj_arena *a, size_t n)
{
    size_t cap = n > DJ_BLOCK_MIN ? n : DJ_BLOCK_MIN;
    if (cap > SIZE_MAX - sizeof(dj_block)) return NULL;
    dj_block *b = malloc(sizeof(dj_block) + cap);
    if (!b) return NULL;
    b->next = a->blocks;
    a->blocks = b;
    a->cur = b->data + n;
    a->left = cap - n;
    return b->data;
}

/* n bytes, 16-byte aligned, rounded up to a multiple of 16; NULL when
 * memory ran out. */
static inline void *arena_alloc(dj_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > a->left) return arena_grow(a, n);
    void *p = a->cur;
    a->cur += n;
    a->left -= n;
    return p;
}

const char *const dj_key_names[DJ_KEY_COUNT] = {
    [DJ_KEY_OTHER] = "",
#define DJ_KEY_NAME(name) [DJ_KEY_##name] = #name,
    DJ_TOP_KEYS(DJ_KEY_NAME) DJ_NESTED_KEYS(DJ_KEY_NAME)
#undef DJ_KEY_NAME
};

dj_key dj_key_lookup(const char *s, size_t len)
{
    /* By length, then the names of that length (likeliest first); each
     * memcmp has a constant size, so it compiles to a few loads. */
#define TRY(name)                                                                                  \
    if (memcmp(s, #name, sizeof #name - 1) == 0) return DJ_KEY_##name;
    switch (len) {
    case 2: TRY(id) break;
    case 4: TRY(role) TRY(text) TRY(type) TRY(stop) TRY(done) break;
    case 5: TRY(delta) TRY(model) TRY(usage) TRY(error) TRY(token) break;
    case 6: TRY(object) TRY(reason) break;
    case 7: TRY(content) TRY(choices) TRY(message) TRY(details) TRY(timings) TRY(refusal) TRY(special) break;
    case 8: TRY(response) TRY(thinking) TRY(function) TRY(prompt_n) break;
    case 9: TRY(reasoning) TRY(arguments) TRY(stop_type) break;
    case 10: TRY(tool_calls) TRY(created_at) TRY(eval_count) TRY(error_type) TRY(model_name) break;
    case 11: TRY(stop_reason) TRY(done_reason) TRY(stopped_eos) TRY(predicted_n) TRY(text_output) break;
    case 12: TRY(input_tokens) TRY(partial_json) TRY(stopped_word) TRY(input_length) break;
    case 13:
        TRY(finish_reason) TRY(prompt_tokens) TRY(output_tokens) TRY(content_block) TRY(function_call)
        TRY(stopped_limit) break;
    case 14: TRY(generated_text) break;
    case 16: TRY(tokens_predicted) TRY(tokens_evaluated) TRY(generated_tokens) break;
    case 17: TRY(completion_tokens) TRY(reasoning_content) TRY(prompt_eval_count) break;
    case 18: TRY(incomplete_details) break;
    default: break;
    }
#undef TRY
    return DJ_KEY_OTHER;
}

/* The reader functions take the position to read at and return the one
 * after what they read, NULL when the data is not JSON (or memory ran out). */
/* The parser reads a copy of the data in the arena, followed by a NUL
 * and PAD_BYTES more NULs. A NUL is never valid JSON outside a string and
 * ends a string as a raw control character would (an error), so the
 * copy's end stops every scan without a bounds check, and 16-byte loads
 * from any position up to the end stay inside the copy. Strings are
 * decoded in place in the copy (decoded text is never longer) and
 * NUL-terminated there, at their closing quote at the latest. */
enum { PAD_BYTES = 16 };

/* The reader functions take the position to read at and return the one
 * after what they read, NULL when the data is not JSON (or memory ran out). */
typedef struct json_reader {
    const unsigned char *end; /* the copy's end: the first NUL after the data */
    dj_arena *arena;
    int depth;
    bool keep_all; /* build members of every name (dj_parse, or inside "arguments") */
} json_reader;

static inline unsigned char *skip_space(unsigned char *p)
{
    while (json_space[*p]) p++;
    return p;
}

static inline cJSON *new_node(json_reader *r, int type)
{
    dj_node *n = arena_alloc(r->arena, sizeof(dj_node));
    if (!n) return NULL;
    n->json = (cJSON){ .type = type };
    n->key = DJ_KEY_OTHER;
    return &n->json;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

#ifndef __SSE2__
/* Bytes that end the plain run of a string: quote, backslash, controls. */
static const unsigned char string_stop[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1,
    [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1,
    [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1,
    [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1,
    ['"'] = 1, ['\\'] = 1,
};
#endif

/* The first quote, backslash or control character at or after q (the
 * NUL at the copy's end is one). Sixteen bytes at a time where SSE2 exists. */
static inline unsigned char *scan_string(unsigned char *q)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i below_space = _mm_set1_epi8(0x1f);
    for (;;) {
        __m128i v = _mm_loadu_si128((const __m128i *)q);
        /* unsigned v <= 0x1f  <=>  max(v, 0x1f) == 0x1f */
        __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, below_space), below_space);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), ctl);
        int mask = _mm_movemask_epi8(hit);
        if (mask) return q + __builtin_ctz((unsigned)mask);
        q += 16;
    }
#else
    while (!string_stop[*q]) q++;
    return q;
#endif
}

/* A string in the copy: [start, close) between its quotes, escapes still
 * in; escaped tells whether any backslash occurs. */
typedef struct raw_string {
    unsigned char *start, *close;
    bool escaped;
} raw_string;

/* At the opening quote: find the closing one (an escape's second byte is
 * never taken for it). NULL when the data ends first or a raw control
 * character comes; escapes are checked by string_text. */
static inline unsigned char *scan_raw_string(json_reader *r, unsigned char *p, raw_string *raw)
{
    unsigned char *q = p + 1;
    raw->start = q;
    raw->escaped = false;
    for (;;) {
        q = scan_string(q);
        if (*q == '"') break;
        if (*q < 0x20 || q + 1 >= r->end) return NULL;
        raw->escaped = true;
        q += 2;
    }
    raw->close = q;
    return q + 1;
}

/* Decode the escapes of [s, close) to out (at most s: output never
 * overtakes input), NUL-terminated; false on a bad escape or an unpaired
 * surrogate. text_len (when not NULL): the decoded length up to the first
 * NUL (a \u0000 escape), what strlen(out) would say. */
static bool unescape(const unsigned char *s, const unsigned char *close, unsigned char *out, size_t *text_len)
{
    size_t k = 0, first_nul = SIZE_MAX;
    while (s < close) {
        if (*s != '\\') {
            out[k++] = *s++;
            continue;
        }
        s++;
        switch (*s++) {
        case '"': out[k++] = '"'; break;
        case '\\': out[k++] = '\\'; break;
        case '/': out[k++] = '/'; break;
        case 'b': out[k++] = '\b'; break;
        case 'f': out[k++] = '\f'; break;
        case 'n': out[k++] = '\n'; break;
        case 'r': out[k++] = '\r'; break;
        case 't': out[k++] = '\t'; break;
        case 'u': {
            if (close - s < 4) return false;
            int hi = hex4(s);
            if (hi < 0) return false;
            s += 4;
            unsigned cp = (unsigned)hi;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (close - s < 6 || s[0] != '\\' || s[1] != 'u') return false;
                int lo = hex4(s + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return false;
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
            }
            if (cp == 0 && first_nul == SIZE_MAX) first_nul = k;
            k += put_utf8(out + k, cp);
            break;
        }
        default:
            return false;
        }
    }
    out[k] = 0;
    if (text_len) *text_len = first_nul != SIZE_MAX ? first_nul : k;
    return true;
}

/* The string's decoded NUL-terminated text, in place; NULL on a bad escape. */
static inline char *string_text(const raw_string *raw)
{
    if (raw->escaped) return unescape(raw->start, raw->close, raw->start, NULL) ? (char *)raw->start : NULL;
    *raw->close = 0;
    return (char *)raw->start;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static double scale10(double v, int exp)
{
    static const double small[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
    if (exp > 400) exp = 400;
    if (exp < -400) exp = -400;
    while (exp >= 16) v *= 1e16, exp -= 16;
    while (exp <= -16) v /= 1e16, exp += 16;
    return exp >= 0 ? v * small[exp] : v / small[-exp];
}

/* The end of the JSON number that starts at p; NULL when none starts there. */
static unsigned char *number_end(unsigned char *p)
{
    if (*p == '-') p++;
    if (!is_digit(*p)) return NULL;
    if (*p == '0') p++;
    else
        while (is_digit(*p)) p++;
    if (*p == '.') {
        p++;
        if (!is_digit(*p)) return NULL;
        while (is_digit(*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!is_digit(*p)) return NULL;
        while (is_digit(*p)) p++;
    }
    return p;
}

/* The value of [p, stop), a number number_end accepted. */
static double number_value(const unsigned char *p, const unsigned char *stop)
{
    bool negative = *p == '-';
    if (negative) p++;
    uint64_t mantissa = 0;
    int digits = 0, exp10 = 0;
    if (*p == '0') {
        p++;
    } else {
        for (; p < stop && is_digit(*p); p++) {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0'), digits++;
            else exp10++;
        }
    }
    if (p < stop && *p == '.')
        for (p++; p < stop && is_digit(*p); p++)
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0'), digits++, exp10--;
    if (p < stop) { /* the exponent */
        p++;
        bool exp_negative = *p == '-';
        if (*p == '+' || *p == '-') p++;
        int e = 0;
        for (; p < stop; p++)
            if (e < 100000) e = e * 10 + (*p - '0');
        exp10 += exp_negative ? -e : e;
    }
    double v = (double)mantissa;
    if (exp10 && mantissa) v = scale10(v, exp10);
    return negative ? -v : v;
}

/* At 't', 'f' or 'n': the node type of the literal there ("true", "false",
 * "null") and in *len its length; cJSON_Invalid when it is not there. */
static int read_literal(const unsigned char *p, size_t *len)
{
    if (memcmp(p, "true", 4) == 0) return *len = 4, cJSON_True;
    if (memcmp(p, "null", 4) == 0) return *len = 4, cJSON_NULL;
    if (memcmp(p, "false", 5) == 0) return *len = 5, cJSON_False;
    return cJSON_Invalid;
}

static unsigned char *read_value(json_reader *r, unsigned char *p, cJSON **out);

/* Link a child after *last (the cJSON layout: parent->child is the first,
 * the first's prev is the last, the last's next is NULL). */
static void append_child(cJSON *parent, cJSON **last, cJSON *item)
{
    if (!*last) {
        parent->child = item;
    } else {
        (*last)->next = item;
        item->prev = *last;
    }
    *last = item;
    parent->child->prev = item;
}

/* At '[': read the items into arr, or only check them when arr is NULL. */
static unsigned char *read_array(json_reader *r, unsigned char *p, cJSON *arr)
{
    cJSON *last = NULL;
    p = skip_space(p + 1);
    if (*p == ']') return p + 1;
    for (;;) {
        cJSON *item = NULL;
        p = read_value(r, p, arr ? &item : NULL);
        if (!p) return NULL;
        if (arr) append_child(arr, &last, item);
        p = skip_space(p);
        if (*p == ']') return p + 1;
        if (*p++ != ',') return NULL;
    }
}

/* At a member name's opening quote: its key, and in *name the text the
 * member gets when kept (NULL when it will not be). */
static unsigned char *read_member_name(json_reader *r, unsigned char *p, dj_key *key, char **name)
{
    raw_string raw;
    p = scan_raw_string(r, p, &raw);
    if (!p) return NULL;
    if (!raw.escaped) {
        *key = dj_key_lookup((const char *)raw.start, (size_t)(raw.close - raw.start));
        if (*key != DJ_KEY_OTHER) *name = (char *)dj_key_names[*key];
        else *name = r->keep_all ? string_text(&raw) : NULL;
        return p;
    }
    char *text = string_text(&raw); /* also checks the escapes */
    if (!text) return NULL;
    *key = dj_key_lookup(text, strlen(text));
    *name = *key != DJ_KEY_OTHER ? (char *)dj_key_names[*key] : r->keep_all ? text : NULL;
    return p;
}

/* At '{': read the members into obj, or only check them when obj is NULL.
 * Members of unknown names are only checked unless r->keep_all. */
static unsigned char *read_object(json_reader *r, unsigned char *p, cJSON *obj)
{
    cJSON *last = NULL;
    p = skip_space(p + 1);
    if (*p == '}') return p + 1;
    for (;;) {
        p = skip_space(p);
        if (*p != '"') return NULL;
        dj_key key = DJ_KEY_OTHER;
        char *name = NULL;
        if (obj) {
            p = read_member_name(r, p, &key, &name);
        } else {
            raw_string raw;
            p = scan_raw_string(r, p, &raw);
            if (p && raw.escaped && !string_text(&raw)) return NULL;
        }
        if (!p) return NULL;
        p = skip_space(p);
        if (*p != ':') return NULL;
        p++;
        if (name) {
            bool was_keep_all = r->keep_all;
            if (key == DJ_KEY_arguments) r->keep_all = true;
            cJSON *item;
            p = read_value(r, p, &item);
            r->keep_all = was_keep_all;
            if (!p) return NULL;
            item->string = name;
            ((dj_node *)item)->key = key;
            append_child(obj, &last, item);
        } else if (!(p = read_value(r, p, NULL))) {
            return NULL;
        }
        p = skip_space(p);
        if (*p == '}') return p + 1;
        if (*p++ != ',') return NULL;
    }
}

/* At a value (after optional whitespace): read it into a new node in
 * *out, or, when out is NULL, only check it. */
static unsigned char *read_value(json_reader *r, unsigned char *p, cJSON **out)
{
    p = skip_space(p);
    cJSON *n = NULL;
    switch (*p) {
    case '{':
    case '[':
        if (out && !(n = new_node(r, *p == '{' ? cJSON_Object : cJSON_Array))) return NULL;
        if (++r->depth > DJ_MAX_DEPTH) return NULL;
        p = *p == '{' ? read_object(r, p, n) : read_array(r, p, n);
        r->depth--;
        break;
    case '"': {
        raw_string raw;
        char *text = NULL;
        if (!(p = scan_raw_string(r, p, &raw))) return NULL;
        if ((out || raw.escaped) && !(text = string_text(&raw))) return NULL;
        if (out && (n = new_node(r, cJSON_String))) n->valuestring = text;
        break;
    }
    case 't':
    case 'f':
    case 'n': {
        size_t len;
        int type = read_literal(p, &len);
        if (type == cJSON_Invalid) return NULL;
        p += len;
        if (out && (n = new_node(r, type))) n->valueint = type == cJSON_True;
        break;
    }
    default: {
        unsigned char *stop = number_end(p);
        if (!stop) return NULL;
        if (out && (n = new_node(r, cJSON_Number))) {
            double v = number_value(p, stop);
            n->valuedouble = v;
            n->valueint = v >= (double)INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
        }
        p = stop;
        break;
    }
    }
    if (!out) return p;
    *out = n;
    return n ? p : NULL;
}

static cJSON *parse(dj_arena *arena, const char *data, size_t len, bool keep_all)
{
    if (!data || len == 0 || len > SIZE_MAX - 1 - PAD_BYTES) return NULL;
    unsigned char *copy = arena_alloc(arena, len + 1 + PAD_BYTES);
    if (!copy) return NULL;
    memcpy(copy, data, len);
    memset(copy + len, 0, 1 + PAD_BYTES);
    arena->last_copy = copy;
    json_reader r = { copy + len, arena, 0, keep_all };
    cJSON *root;
    unsigned char *p = read_value(&r, copy, &root);
    return p && skip_space(p) == r.end ? root : NULL;
}

cJSON *dj_parse(dj_arena *arena, const char *data, size_t len)
{
    return parse(arena, data, len, true);
}

cJSON *dj_parse_known(dj_arena *arena, const char *data, size_t len)
{
    return parse(arena, data, len, false);
}

bool dj_decode_string_body(const unsigned char *s, size_t len, unsigned char *out, size_t *out_len)
{
    /* what scan_raw_string checks while finding the closing quote ... */
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 0x20 || s[i] == '"') return false;
        if (s[i] == '\\' && ++i == len) return false; /* the escaped byte is checked by unescape */
    }
    /* ... then what string_text checks while decoding */
    return unescape(s, s + len, out, out_len);
}
