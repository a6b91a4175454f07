#include "report/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void tt_jw_init(tt_jw *w, FILE *out, bool pretty)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->pretty = pretty;
}

static void write_escaped(FILE *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    putc('"', out);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
            run++;
            continue;
        }
        if (run) fwrite(s + i - run, 1, run, out);
        run = 0;
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            fputs("\\u00", out);
            putc(hex[c >> 4], out);
            putc(hex[c & 15], out);
        }
    }
    if (run) fwrite(s + n - run, 1, run, out);
    putc('"', out);
}

/* Two spaces per level of depth, in one write. */
static void indent(FILE *out, int depth)
{
    static const char spaces[] = "                                                                ";
    size_t n = (size_t)depth * 2;
    while (n > sizeof spaces - 1) {
        fwrite(spaces, 1, sizeof spaces - 1, out);
        n -= sizeof spaces - 1;
    }
    fwrite(spaces, 1, n, out);
}

/* v in decimal, as "%" PRIu64 writes it (without printf's parsing: the
 * JSON document prints every ITL). */
static void put_u64(FILE *out, uint64_t v)
{
    char b[24];
    size_t i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    fwrite(b + i, 1, sizeof b - i, out);
}

static void prefix(tt_jw *w, const char *key)
{
    if (w->depth > 0) {
        if (w->need_comma[w->depth]) putc(',', w->out);
        w->need_comma[w->depth] = true;
        if (w->pretty) {
            putc('\n', w->out);
            indent(w->out, w->depth);
        }
    }
    if (key) {
        write_escaped(w->out, key, strlen(key));
        fputs(w->pretty ? ": " : ":", w->out);
    }
}

static void open_scope(tt_jw *w, const char *key, char c)
{
    prefix(w, key);
    putc(c, w->out);
    if (w->depth + 1 < TT_JW_MAX_DEPTH) w->depth++;
    w->need_comma[w->depth] = false;
}

static void close_scope(tt_jw *w, char c)
{
    bool had = w->need_comma[w->depth];
    if (w->depth > 0) w->depth--;
    if (w->pretty && had) {
        putc('\n', w->out);
        indent(w->out, w->depth);
    }
    putc(c, w->out);
}

void tt_jw_object_begin(tt_jw *w, const char *key) { open_scope(w, key, '{'); }
void tt_jw_object_end(tt_jw *w) { close_scope(w, '}'); }
void tt_jw_array_begin(tt_jw *w, const char *key) { open_scope(w, key, '['); }
void tt_jw_array_end(tt_jw *w) { close_scope(w, ']'); }

void tt_jw_strn(tt_jw *w, const char *key, const char *s, size_t n)
{
    prefix(w, key);
    write_escaped(w->out, s, n);
}

void tt_jw_str(tt_jw *w, const char *key, const char *s) { tt_jw_strn(w, key, s, strlen(s)); }

void tt_jw_str_or_null(tt_jw *w, const char *key, const char *s)
{
    if (s && *s) tt_jw_str(w, key, s);
    else tt_jw_null(w, key);
}

void tt_jw_int(tt_jw *w, const char *key, int64_t v)
{
    prefix(w, key);
    if (v < 0) putc('-', w->out);
    put_u64(w->out, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

void tt_jw_int_or_null(tt_jw *w, const char *key, bool has, int64_t v)
{
    if (has) tt_jw_int(w, key, v);
    else tt_jw_null(w, key);
}

void tt_jw_instant(tt_jw *w, const char *key, uint64_t ns)
{
    if (ns != UINT64_MAX) tt_jw_uint(w, key, ns);
    else tt_jw_null(w, key);
}

void tt_jw_uint(tt_jw *w, const char *key, uint64_t v)
{
    prefix(w, key);
    put_u64(w->out, v);
}

void tt_jw_double(tt_jw *w, const char *key, double v)
{
    prefix(w, key);
    if (isfinite(v)) fprintf(w->out, "%.17g", v);
    else fputs("null", w->out);
}

void tt_jw_bool(tt_jw *w, const char *key, bool v)
{
    prefix(w, key);
    fputs(v ? "true" : "false", w->out);
}

void tt_jw_null(tt_jw *w, const char *key)
{
    prefix(w, key);
    fputs("null", w->out);
}

void tt_jw_end(tt_jw *w) { putc('\n', w->out); }
