/* sbuf.c - growable byte buffer; see sbuf.h. */
#include "core/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    tt_sbuf_put(b, tmp + i, sizeof tmp - i);
}

void tt_sbuf_json_str(tt_sbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (!tt_sbuf_reserve(b, len + 2)) return;
    b->p[b->len++] = '"';
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        tt_sbuf_put(b, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            n = 6;
        }
        tt_sbuf_put(b, esc, n);
    }
    tt_sbuf_put(b, s + run, len - run);
    tt_sbuf_put(b, "\"", 1);
}

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
