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
 * Strictness: exactly one value plus surrounding whitespace; no BOM; no raw
 * control characters in strings; \u escapes must pair surrogates; nesting
 * deeper than DJ_MAX_DEPTH fails. Numbers: integers of up to 15 digits are
 * exact; others are converted without strtod (so without locale) and may be
 * off in the last bits, which does not matter for the counts read here. */
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

static void *arena_alloc(dj_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > a->left) {
        size_t cap = n > DJ_BLOCK_MIN ? n : DJ_BLOCK_MIN;
        if (cap > SIZE_MAX - sizeof(dj_block)) return NULL;
        dj_block *b = malloc(sizeof(dj_block) + cap);
        if (!b) return NULL;
        b->next = a->blocks;
        a->blocks = b;
        a->cur = b->data;
        a->left = cap;
    }
    void *p = a->cur;
    a->cur += n;
    a->left -= n;
    return p;
}

typedef struct json_reader {
    const unsigned char *p, *end;
    dj_arena *arena;
    int depth;
} json_reader;

static void skip_space(json_reader *r)
{
    while (r->p < r->end && json_space[*r->p]) r->p++;
}

static cJSON *new_node(json_reader *r, int type)
{
    cJSON *n = arena_alloc(r->arena, sizeof(cJSON));
    if (n) {
        memset(n, 0, sizeof *n);
        n->type = type;
    }
    return n;
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

/* Bytes that end the plain run of a string: quote, backslash, controls. */
static const unsigned char string_stop[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1,
    [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1,
    [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1,
    [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1,
    ['"'] = 1, ['\\'] = 1,
};

/* At the opening quote; returns the decoded NUL-terminated string. Decoded
 * text is never longer than its escaped form, so the raw span is enough. */
/* First byte in [q, end) that is a quote, a backslash or a control
 * character; end when none. Sixteen bytes at a time where SSE2 exists. */
static const unsigned char *scan_string(const unsigned char *q, const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i below_space = _mm_set1_epi8(0x1f);
    while (end - q >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)q);
        /* unsigned v <= 0x1f  <=>  max(v, 0x1f) == 0x1f */
        __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, below_space), below_space);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), ctl);
        int mask = _mm_movemask_epi8(hit);
        if (mask) return q + __builtin_ctz((unsigned)mask);
        q += 16;
    }
#endif
    while (q < end && !string_stop[*q]) q++;
    return q;
}

static char *read_string(json_reader *r)
{
    const unsigned char *start = ++r->p, *q = start, *end = r->end;
    bool escaped = false;
    for (;;) {
        q = scan_string(q, end);
        if (q >= end || *q < 0x20) return NULL;
        if (*q == '"') break;
        if (end - q < 2) return NULL;
        escaped = true;
        q += 2;
    }
    size_t raw = (size_t)(q - start);
    unsigned char *out = arena_alloc(r->arena, raw + 1);
    if (!out) return NULL;
    r->p = q + 1;
    if (!escaped) {
        memcpy(out, start, raw);
        out[raw] = 0;
        return (char *)out;
    }
    size_t k = 0;
    for (const unsigned char *s = start; s < q;) {
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
            if (q - s < 4) return NULL;
            int hi = hex4(s);
            if (hi < 0) return NULL;
            s += 4;
            unsigned cp = (unsigned)hi;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (q - s < 6 || s[0] != '\\' || s[1] != 'u') return NULL;
                int lo = hex4(s + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return NULL;
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
            }
            k += put_utf8(out + k, cp);
            break;
        }
        default:
            return NULL;
        }
    }
    out[k] = 0;
    return (char *)out;
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

static cJSON *read_number(json_reader *r)
{
    const unsigned char *p = r->p, *end = r->end;
    bool negative = false;
    if (*p == '-') negative = true, p++;
    if (p >= end || !is_digit(*p)) return NULL;
    uint64_t mantissa = 0;
    int digits = 0, exp10 = 0;
    if (*p == '0') {
        p++;
    } else {
        for (; p < end && is_digit(*p); p++) {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0'), digits++;
            else exp10++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) return NULL;
        for (; p < end && is_digit(*p); p++)
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0'), digits++, exp10--;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool exp_negative = false;
        if (p < end && (*p == '+' || *p == '-')) exp_negative = *p == '-', p++;
        if (p >= end || !is_digit(*p)) return NULL;
        int e = 0;
        for (; p < end && is_digit(*p); p++)
            if (e < 100000) e = e * 10 + (*p - '0');
        exp10 += exp_negative ? -e : e;
    }
    cJSON *n = new_node(r, cJSON_Number);
    if (!n) return NULL;
    double v = (double)mantissa;
    if (exp10 && mantissa) v = scale10(v, exp10);
    if (negative) v = -v;
    n->valuedouble = v;
    n->valueint = v >= (double)INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
    r->p = p;
    return n;
}

static bool read_literal(json_reader *r, const char *lit, size_t len)
{
    if ((size_t)(r->end - r->p) < len || memcmp(r->p, lit, len) != 0) return false;
    r->p += len;
    return true;
}

static cJSON *read_value(json_reader *r);

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

static cJSON *read_array(json_reader *r)
{
    cJSON *arr = new_node(r, cJSON_Array), *last = NULL;
    if (!arr) return NULL;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return arr;
    }
    for (;;) {
        cJSON *item = read_value(r);
        if (!item) return NULL;
        append_child(arr, &last, item);
        skip_space(r);
        if (r->p >= r->end) return NULL;
        if (*r->p == ']') {
            r->p++;
            return arr;
        }
        if (*r->p != ',') return NULL;
        r->p++;
    }
}

static cJSON *read_object(json_reader *r)
{
    cJSON *obj = new_node(r, cJSON_Object), *last = NULL;
    if (!obj) return NULL;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return obj;
    }
    for (;;) {
        skip_space(r);
        if (r->p >= r->end || *r->p != '"') return NULL;
        char *key = read_string(r);
        if (!key) return NULL;
        skip_space(r);
        if (r->p >= r->end || *r->p != ':') return NULL;
        r->p++;
        cJSON *item = read_value(r);
        if (!item) return NULL;
        item->string = key;
        append_child(obj, &last, item);
        skip_space(r);
        if (r->p >= r->end) return NULL;
        if (*r->p == '}') {
            r->p++;
            return obj;
        }
        if (*r->p != ',') return NULL;
        r->p++;
    }
}

static cJSON *read_value(json_reader *r)
{
    skip_space(r);
    if (r->p >= r->end) return NULL;
    cJSON *n = NULL;
    switch (*r->p) {
    case '{':
    case '[':
        if (++r->depth > DJ_MAX_DEPTH) return NULL;
        n = *r->p == '{' ? read_object(r) : read_array(r);
        r->depth--;
        return n;
    case '"': {
        char *s = read_string(r);
        if (!s || !(n = new_node(r, cJSON_String))) return NULL;
        n->valuestring = s;
        return n;
    }
    case 't':
        if (!read_literal(r, "true", 4) || !(n = new_node(r, cJSON_True))) return NULL;
        n->valueint = 1;
        return n;
    case 'f':
        return read_literal(r, "false", 5) ? new_node(r, cJSON_False) : NULL;
    case 'n':
        return read_literal(r, "null", 4) ? new_node(r, cJSON_NULL) : NULL;
    default:
        return read_number(r);
    }
}

cJSON *dj_parse(dj_arena *arena, const char *data, size_t len)
{
    if (!data || len == 0) return NULL;
    json_reader r = { (const unsigned char *)data, (const unsigned char *)data + len, arena, 0 };
    cJSON *root = read_value(&r);
    if (!root) return NULL;
    skip_space(&r);
    return r.p == r.end ? root : NULL;
}
