/* frame_fuzz.h - the libFuzzer body shared by fuzz_sse.c and fuzz_ndjson.c.
 * The first input byte seeds the split points; the rest is the body. The
 * body is parsed whole, cut at those points, and (when short) byte by byte;
 * every run must report the same events and comments, chunk-dependent
 * fields aside, and the chunk fields must name the feeds that carried the
 * bytes. Traps on a mismatch. Include once, then call frame_fuzz_one. */
#ifndef TT_FRAME_FUZZ_H
#define TT_FRAME_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/framer.h"

#define MAX_CUTS 8

typedef struct record {
    uint8_t *buf;
    size_t len, cap;
    const size_t *starts; /* body offset where feed i starts; n_feeds + 1 entries */
    size_t n_feeds;
} record;

static void put(record *r, const void *src, size_t n)
{
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + n) cap *= 2;
        r->buf = realloc(r->buf, cap);
        if (!r->buf) __builtin_trap();
        r->cap = cap;
    }
    if (n) memcpy(r->buf + r->len, src, n);
    r->len += n;
}

static void put_u64(record *r, uint64_t v)
{
    put(r, &v, sizeof v);
}

static long feed_of(const record *r, uint64_t off)
{
    for (size_t i = 0; i < r->n_feeds; i++)
        if (r->starts[i] <= off && off < r->starts[i + 1]) return (long)i;
    return -1;
}

static void on_event(void *ud, const tt_event_frame *ev)
{
    record *r = ud;
    put_u64(r, 'E');
    put_u64(r, ev->type_len);
    put(r, ev->type, ev->type_len);
    put_u64(r, ev->data_len);
    put(r, ev->data, ev->data_len);
    put_u64(r, ev->has_id);
    put_u64(r, ev->id ? ev->id_len + 1 : 0);
    if (ev->id) put(r, ev->id, ev->id_len);
    put_u64(r, (uint64_t)ev->retry_ms);
    put_u64(r, ev->first_off);
    put_u64(r, ev->dispatch_off);
    put_u64(r, ev->terminators);
    put_u64(r, ev->fields);
    put_u64(r, ev->flags);
    put_u64(r, ev->lines);
    put_u64(r, ev->comment_lines);
    put_u64(r, ev->data_lines);
    if (ev->data_len > TT_SSE_MAX_EVENT || ev->first_off > ev->dispatch_off) __builtin_trap();
    bool unterminated = ev->flags & TT_FRAME_UNTERMINATED;
    long ff = feed_of(r, ev->first_off);
    long lf = feed_of(r, unterminated ? r->starts[r->n_feeds] - 1 : ev->dispatch_off - 1);
    if (ff < 0 || lf < 0 || ev->first_chunk != (uint32_t)ff || ev->last_chunk != (uint32_t)lf ||
        ev->first_ns != (uint64_t)ff + 1 || (!unterminated && ev->dispatch_ns != (uint64_t)lf + 1))
        __builtin_trap();
}

static void on_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    record *r = ud;
    put_u64(r, 'C');
    put_u64(r, len);
    put(r, text, len);
    put_u64(r, off);
    if (mono_ns != (uint64_t)feed_of(r, off) + 1) __builtin_trap();
}

/* Parse body cut at starts[1..n_feeds-1], each feed from its own heap copy
 * (so ASan sees any read past a feed), feed i at instant i + 1. */
static void run(tt_framing kind, const uint8_t *body, size_t len, const size_t *starts, size_t n_feeds, record *r)
{
    static const tt_frame_callbacks cb = { on_event, on_comment };
    memset(r, 0, sizeof *r);
    r->starts = starts;
    r->n_feeds = n_feeds;
    tt_framer *p = tt_framer_new(kind, &cb, r);
    if (!p) __builtin_trap();
    for (size_t i = 0; i < n_feeds; i++) {
        size_t n = starts[i + 1] - starts[i];
        uint8_t *copy = malloc(n ? n : 1);
        if (n) memcpy(copy, body + starts[i], n);
        tt_framer_feed(p, copy, n, starts[i], i + 1);
        free(copy);
    }
    tt_framer_finish(p, 0);
    tt_framer_free(p);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* One fuzz input against one framing; traps on any disagreement. */
static int frame_fuzz_one(tt_framing kind, const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    uint8_t ctrl = data[0];
    const uint8_t *body = data + 1;
    size_t len = size - 1;

    size_t whole_starts[2] = { 0, len };
    record whole;
    run(kind, body, len, whole_starts, 1, &whole);

    size_t starts[MAX_CUTS + 2];
    size_t n_cuts = 1 + ctrl % MAX_CUTS;
    uint32_t x = 0x9E3779B9u ^ ctrl;
    starts[0] = 0;
    for (size_t i = 1; i <= n_cuts; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        starts[i] = len ? x % (len + 1) : 0;
    }
    qsort(starts + 1, n_cuts, sizeof starts[0], cmp_size);
    starts[n_cuts + 1] = len;
    record split;
    run(kind, body, len, starts, n_cuts + 1, &split);
    if (split.len != whole.len || (whole.len && memcmp(split.buf, whole.buf, whole.len) != 0)) __builtin_trap();
    free(split.buf);

    if (len <= 4096) {
        size_t *bytewise = malloc((len + 1) * sizeof *bytewise);
        for (size_t i = 0; i <= len; i++) bytewise[i] = i;
        record bytes;
        run(kind, body, len, bytewise, len, &bytes);
        if (bytes.len != whole.len || (whole.len && memcmp(bytes.buf, whole.buf, whole.len) != 0))
            __builtin_trap();
        free(bytes.buf);
        free(bytewise);
    }
    free(whole.buf);
    return 0;
}

#endif
