/* fuzz_text.h - a growing text the fuzz harnesses write their traces
 * into (one cut against another must give the same text); header-only. */
#ifndef TT_FUZZ_TEXT_H
#define TT_FUZZ_TEXT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz_text { char *s; size_t len, cap; } fz_text;

static void fz_add(fz_text *t, const void *d, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + n + 1) cap *= 2;
        t->s = realloc(t->s, cap);
        if (!t->s) abort();
        t->cap = cap;
    }
    memcpy(t->s + t->len, d, n);
    t->len += n;
    t->s[t->len] = 0;
}

static void fz_printf(fz_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fz_printf(fz_text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) fz_add(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

#endif
