/* sbuf.c - growable byte buffer; see sbuf.h. */
#include "core/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_escape.h"
#include "core/util.h"

bool tt_sbuf_reserve(tt_sbuf *b, size_t extra)
{
    if (b->oom) return false;
    if (extra <= b->cap - b->len) return true;
    size_t want = b->len + extra;
    if (want < b->len) { b->oom = true; return false; }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < want) {
        if (cap > SIZE_MAX / 2) { cap = want; break; }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = true; return false; }
    b->p = p;
    b->cap = cap;
    return true;
}

void tt_sbuf_put_growing(tt_sbuf *b, const void *data, size_t len)
{
    if (!len || !tt_sbuf_reserve(b, len)) return;
    memcpy(b->p + b->len, data, len);
    b->len += len;
}

void tt_sbuf_puts(tt_sbuf *b, const char *s) { tt_sbuf_put(b, s, strlen(s)); }

void tt_sbuf_printf(tt_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !tt_sbuf_reserve(b, (size_t)n + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tt_sbuf_u64(tt_sbuf *b, uint64_t v)
{
    char digits[20];
    tt_sbuf_put(b, digits, tt_u64_decimal(v, digits));
}

void tt_sbuf_quoted(tt_sbuf *b, const char *s, size_t len, size_t (*escape)(unsigned char c, char out[6]))
{
    if (!tt_sbuf_reserve(b, len + 2)) return;
    b->p[b->len++] = '"';
    for (;;) {
        size_t run = tt_json_plain_run(s, len);
        tt_sbuf_put(b, s, run);
        if (run == len) break;
        char esc[6];
        tt_sbuf_put(b, esc, escape((unsigned char)s[run], esc));
        s += run + 1;
        len -= run + 1;
    }
    tt_sbuf_put(b, "\"", 1);
}

void tt_sbuf_json_str(tt_sbuf *b, const char *s, size_t len) { tt_sbuf_quoted(b, s, len, tt_json_escape_byte); }

void tt_sbuf_consume(tt_sbuf *b, size_t n)
{
    if (n >= b->len) { b->len = 0; return; }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

void tt_sbuf_reset(tt_sbuf *b) { b->len = 0; }

void tt_sbuf_free(tt_sbuf *b)
{
    free(b->p);
    *b = (tt_sbuf){0};
}
