/* test_bytes.h - a growing byte buffer for tests that build inputs (HTTP
 * messages, HTTP/2 scripts) piece by piece. Aborts on want of memory. */
#ifndef TT_TEST_BYTES_H
#define TT_TEST_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;

static inline void put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static inline void put8(bytes *b, uint8_t v) { put(b, &v, 1); }

static inline void put32(bytes *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
    put(b, x, 4);
}

static inline void puts_(bytes *b, const char *s) { put(b, s, strlen(s)); }

#endif
