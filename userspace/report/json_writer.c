#include "report/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/json_escape.h"
#include "core/util.h"

void tt_jw_init(tt_jw *w, FILE *out, bool pretty)
{
    w->out = out;
    w->depth = 0;
    memset(w->need_comma, 0, sizeof w->need_comma);
    w->used = 0;
    w->pretty = pretty;
}

void tt_jw_flush(tt_jw *w)
{
    if (w->used) fwrite(w->buf, 1, w->used, w->out);
    w->used = 0;
}

/* n bytes of s onto the buffer; a block larger than the buffer goes
 * straight to the FILE. */
static void put(tt_jw *w, const char *s, size_t n)
{
    if (n > sizeof w->buf - w->used) {
        tt_jw_flush(w);
        if (n >= sizeof w->buf) {
            fwrite(s, 1, n, w->out);
            return;
        }
    }
    memcpy(w->buf + w->used, s, n);
    w->used += n;
}

static void put_char(tt_jw *w, char c)
{
    if (w->used == sizeof w->buf) tt_jw_flush(w);
    w->buf[w->used++] = c;
}

static void put_cstr(tt_jw *w, const char *s) { put(w, s, strlen(s)); }

/* s[0..n) as a JSON string, quoted, escaped by core/json_escape.h's
 * rule: each run that needs no escape goes on in one piece. */
static void write_escaped(tt_jw *w, const char *s, size_t n)
{
    put_char(w, '"');
    for (;;) {
        size_t run = tt_json_plain_run(s, n);
        put(w, s, run);
        if (run == n) break;
        char esc[6];
        put(w, esc, tt_json_escape_byte((unsigned char)s[run], esc));
        s += run + 1;
        n -= run + 1;
    }
    put_char(w, '"');
}

/* Two spaces per level of depth. */
static void indent(tt_jw *w, int depth)
{
    static const char spaces[] = "                                                                ";
    size_t n = (size_t)depth * 2;
    while (n > sizeof spaces - 1) {
        put(w, spaces, sizeof spaces - 1);
        n -= sizeof spaces - 1;
    }
    put(w, spaces, n);
}

/* v in decimal, as "%" PRIu64 writes it. */
static void put_u64(tt_jw *w, uint64_t v)
{
    char digits[20];
    put(w, digits, tt_u64_decimal(v, digits));
}

static void prefix(tt_jw *w, const char *key)
{
    if (w->depth > 0) {
        if (w->need_comma[w->depth]) put_char(w, ',');
        w->need_comma[w->depth] = true;
        if (w->pretty) {
            put_char(w, '\n');
            indent(w, w->depth);
        }
    }
    if (key) {
        write_escaped(w, key, strlen(key));
        if (w->pretty) put(w, ": ", 2);
        else put_char(w, ':');
    }
}

static void open_scope(tt_jw *w, const char *key, char c)
{
    prefix(w, key);
    put_char(w, c);
    if (w->depth + 1 < TT_JW_MAX_DEPTH) w->depth++;
    w->need_comma[w->depth] = false;
}

/* The outermost value closed hands the document to the FILE. */
static void close_scope(tt_jw *w, char c)
{
    bool had = w->need_comma[w->depth];
    if (w->depth > 0) w->depth--;
    if (w->pretty && had) {
        put_char(w, '\n');
        indent(w, w->depth);
    }
    put_char(w, c);
    if (w->depth == 0) tt_jw_flush(w);
}

void tt_jw_object_begin(tt_jw *w, const char *key) { open_scope(w, key, '{'); }
void tt_jw_object_end(tt_jw *w) { close_scope(w, '}'); }
void tt_jw_array_begin(tt_jw *w, const char *key) { open_scope(w, key, '['); }
void tt_jw_array_end(tt_jw *w) { close_scope(w, ']'); }

void tt_jw_strn(tt_jw *w, const char *key, const char *s, size_t n)
{
    prefix(w, key);
    write_escaped(w, s, n);
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
    if (v < 0) put_char(w, '-');
    put_u64(w, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
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
    put_u64(w, v);
}

void tt_jw_double(tt_jw *w, const char *key, double v)
{
    prefix(w, key);
    if (isfinite(v)) {
        char b[40];
        int n = snprintf(b, sizeof b, "%.17g", v);
        put(w, b, n > 0 && (size_t)n < sizeof b ? (size_t)n : 0);
    } else {
        put(w, "null", 4);
    }
}

void tt_jw_bool(tt_jw *w, const char *key, bool v)
{
    prefix(w, key);
    put_cstr(w, v ? "true" : "false");
}

void tt_jw_null(tt_jw *w, const char *key)
{
    prefix(w, key);
    put(w, "null", 4);
}

void tt_jw_raw(tt_jw *w, const char *key, const char *json, size_t n)
{
    prefix(w, key);
    put(w, json, n);
}

void tt_jw_end(tt_jw *w)
{
    put_char(w, '\n');
    tt_jw_flush(w);
}
