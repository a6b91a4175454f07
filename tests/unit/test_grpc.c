/* test_grpc.c - gRPC Length-Prefixed-Message framing (proto/grpc.h).
 *
 * Each case builds a body from a list of parts (messages with their flag and
 * payload, a bad flag byte with trailing bytes, a prefix or message the body
 * end cuts) and, from the same list and without the parser, the events the
 * contract promises: data, offsets, flags, lines. The body is then parsed
 * whole, split at every byte, byte by byte and (short bodies) split in
 * three everywhere, each feed from a guard-page copy, and every run must
 * report exactly those events; chunk ordinals and instants are checked
 * against the feeds that carried first_off and the dispatching byte.
 * Feed i carries instant (i+1)*NS_PER_FEED; finish gets FINISH_NS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "golden.h"
#include "proto/framer.h"
#include "proto/grpc.h"

#define NS_PER_FEED 1000u
#define FINISH_NS 999999u
#define MAX_EVENTS 64

/* ---- the expected side, built from the parts ---- */

typedef struct want_event {
    const uint8_t *data; /* into the body: the message bytes that must come back */
    size_t data_len;
    uint64_t first_off, dispatch_off;
    uint32_t flags;
    uint16_t lines;
} want_event;

typedef struct body {
    uint8_t *b;
    size_t len, cap;
    want_event want[MAX_EVENTS];
    size_t n_want;
    uint64_t ignored; /* bytes the parser must report ignored */
    bool lost;        /* a bad flag byte went in: nothing after it frames */
} body;

static void put(body *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->b = realloc(b->b, cap);
        assert_non_null(b->b);
        b->cap = cap;
    }
    memcpy(b->b + b->len, src, n);
    b->len += n;
}

static void put_prefix(body *b, uint8_t flag, uint32_t n)
{
    uint8_t p[5] = { flag, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n };
    put(b, p, 5);
}

/* Payload bytes that vary and include NULs. */
static void put_payload(body *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
        put(b, &c, 1);
    }
}

static want_event *push_want(body *b)
{
    assert_true(b->n_want < MAX_EVENTS);
    return &b->want[b->n_want++];
}

/* One whole message; its payload has n bytes. */
static void add_msg(body *b, uint8_t flag, size_t n, unsigned seed)
{
    assert_false(b->lost);
    uint64_t at = b->len;
    put_prefix(b, flag, (uint32_t)n);
    put_payload(b, n, seed);
    want_event *w = push_want(b);
    /* set after put: the buffer may have moved, so data is fixed up in finish_body */
    w->data = (const uint8_t *)(uintptr_t)(at + 5);
    w->data_len = n > TT_SSE_MAX_EVENT ? TT_SSE_MAX_EVENT : n;
    w->first_off = at;
    w->dispatch_off = b->len;
    w->flags = (flag == 1 ? TT_FRAME_COMPRESSED : 0u) | (n > TT_SSE_MAX_EVENT ? TT_FRAME_TRUNCATED : 0u);
    w->lines = 1;
}

/* A flag byte that is neither 0 nor 1, then trailing bytes (which may look
 * like good prefixes): one BAD_PREFIX event, everything from it ignored. */
static void add_bad(body *b, uint8_t flag, size_t trailing)
{
    assert_false(b->lost);
    uint64_t at = b->len;
    put(b, &flag, 1);
    for (size_t i = 0; i < trailing; i++) put(b, "", 1); /* zeros: they would frame as empty messages */
    want_event *w = push_want(b);
    w->data = NULL;
    w->data_len = 0;
    w->first_off = at;
    w->dispatch_off = at + 1;
    w->flags = TT_FRAME_BAD_PREFIX;
    w->lines = 0;
    b->lost = true;
    b->ignored = b->len - at;
}

/* The body ends inside a prefix (got < 5 prefix bytes, got >= 1). */
static void add_cut_prefix(body *b, uint8_t flag, size_t got)
{
    uint64_t at = b->len;
    uint8_t p[5] = { flag, 0, 0, 1, 0 };
    put(b, p, got);
    want_event *w = push_want(b);
    w->data = NULL;
    w->data_len = 0;
    w->first_off = at;
    w->dispatch_off = b->len;
    w->flags = TT_FRAME_UNTERMINATED | (flag == 1 ? TT_FRAME_COMPRESSED : 0u);
    w->lines = 0;
}

/* The body ends after got of a declared message's bytes (got < declared). */
static void add_cut_msg(body *b, uint8_t flag, uint32_t declared, size_t got, unsigned seed)
{
    uint64_t at = b->len;
    put_prefix(b, flag, declared);
    put_payload(b, got, seed);
    want_event *w = push_want(b);
    w->data = (const uint8_t *)(uintptr_t)(at + 5);
    w->data_len = got > TT_SSE_MAX_EVENT ? TT_SSE_MAX_EVENT : got;
    w->first_off = at;
    w->dispatch_off = b->len;
    w->flags = TT_FRAME_UNTERMINATED | (flag == 1 ? TT_FRAME_COMPRESSED : 0u) |
               (got > TT_SSE_MAX_EVENT ? TT_FRAME_TRUNCATED : 0u);
    w->lines = 1;
}

/* Turn the offsets stored in want[].data into pointers into the final body. */
static void finish_body(body *b)
{
    for (size_t i = 0; i < b->n_want; i++)
        if (b->want[i].lines) b->want[i].data = b->b + (uintptr_t)b->want[i].data;
}

static void free_body(body *b)
{
    free(b->b);
    memset(b, 0, sizeof *b);
}

/* ---- the observed side ---- */

typedef struct got_event {
    tt_event_frame f; /* pointers cleared; data kept below */
    uint8_t *data;
    bool type_null, id_null;
} got_event;

typedef struct rec {
    got_event ev[MAX_EVENTS];
    size_t n;
    bool overflow;
} rec;

static void on_event(void *ud, const tt_event_frame *ev)
{
    rec *r = ud;
    if (r->n == MAX_EVENTS) {
        r->overflow = true;
        return;
    }
    got_event *g = &r->ev[r->n++];
    g->f = *ev;
    g->type_null = ev->type == NULL;
    g->id_null = ev->id == NULL;
    g->data = malloc(ev->data_len ? ev->data_len : 1);
    assert_non_null(g->data);
    assert_non_null(ev->data);
    if (ev->data_len) memcpy(g->data, ev->data, ev->data_len);
    g->f.data = NULL;
}

static void on_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    fail_msg("gRPC framing called on_comment");
}

static void rec_free(rec *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->ev[i].data);
    r->n = 0;
}

/* Index of the non-empty feed holding body offset off, or -1. */
static long feed_of(const size_t *starts, size_t n_feeds, uint64_t off)
{
    for (size_t i = 0; i < n_feeds; i++)
        if (starts[i] <= off && off < starts[i + 1]) return (long)i;
    return -1;
}

static int mismatch(const char *label, size_t i, const char *what, unsigned long long got, unsigned long long want)
{
    fprintf(stderr, "grpc [%s] event %zu: %s is %llu, want %llu\n", label, i, what, got, want);
    return -1;
}

/* Compare one run's events with the body's expectation. */
static int check(const body *b, const rec *r, const size_t *starts, size_t n_feeds, const char *label)
{
    if (r->overflow || r->n != b->n_want) return mismatch(label, 0, "event count", r->n, b->n_want);
    for (size_t i = 0; i < r->n; i++) {
        const tt_event_frame *f = &r->ev[i].f;
        const want_event *w = &b->want[i];
        bool unterminated = w->flags & TT_FRAME_UNTERMINATED;
        if (f->data_len != w->data_len) return mismatch(label, i, "data_len", f->data_len, w->data_len);
        if (w->data_len && memcmp(r->ev[i].data, w->data, w->data_len) != 0)
            return mismatch(label, i, "data bytes", 1, 0);
        if (f->first_off != w->first_off) return mismatch(label, i, "first_off", f->first_off, w->first_off);
        if (f->dispatch_off != w->dispatch_off)
            return mismatch(label, i, "dispatch_off", f->dispatch_off, w->dispatch_off);
        if (f->flags != w->flags) return mismatch(label, i, "flags", f->flags, w->flags);
        if (f->lines != w->lines || f->data_lines != w->lines) return mismatch(label, i, "lines", f->lines, w->lines);
        if (!r->ev[i].type_null || !r->ev[i].id_null || f->type_len || f->id_len || f->has_id || f->retry_ms != -1 ||
            f->fields || f->terminators || f->comment_lines || f->cr_off)
            return mismatch(label, i, "SSE-only fields set", 1, 0);
        long ff = feed_of(starts, n_feeds, w->first_off);
        long lf = feed_of(starts, n_feeds, unterminated ? b->len - 1 : w->dispatch_off - 1);
        if (ff < 0 || lf < 0) return mismatch(label, i, "feed lookup", 0, 1);
        if (f->first_chunk != (uint32_t)ff) return mismatch(label, i, "first_chunk", f->first_chunk, (unsigned long long)ff);
        if (f->last_chunk != (uint32_t)lf) return mismatch(label, i, "last_chunk", f->last_chunk, (unsigned long long)lf);
        if (f->first_ns != (uint64_t)(ff + 1) * NS_PER_FEED)
            return mismatch(label, i, "first_ns", f->first_ns, (unsigned long long)(ff + 1) * NS_PER_FEED);
        uint64_t want_ns = unterminated ? FINISH_NS : (uint64_t)(lf + 1) * NS_PER_FEED;
        if (f->dispatch_ns != want_ns) return mismatch(label, i, "dispatch_ns", f->dispatch_ns, want_ns);
    }
    return 0;
}

/* Parse b in the feeds starts[0..n_feeds] (empty feeds allowed) with p,
 * then finish; guard: each feed from its own guard-page copy. */
static void parse(tt_grpc_parser *p, const body *b, const size_t *starts, size_t n_feeds, bool guard)
{
    for (size_t i = 0; i < n_feeds; i++) {
        size_t n = starts[i + 1] - starts[i];
        const uint8_t *src = b->b + starts[i];
        uint8_t *copy = guard ? tt_guard_copy(src, n) : NULL;
        tt_grpc_feed(p, guard ? copy : src, n, starts[i], (uint64_t)(i + 1) * NS_PER_FEED);
        if (guard) tt_guard_free(copy, n);
    }
    tt_grpc_finish(p, FINISH_NS);
}

static int run_one(const body *b, const size_t *starts, size_t n_feeds, bool guard, const char *label)
{
    static const tt_frame_callbacks cb = { on_event, on_comment };
    rec r;
    memset(&r, 0, sizeof r);
    tt_grpc_parser *p = tt_grpc_new(&cb, &r);
    assert_non_null(p);
    parse(p, b, starts, n_feeds, guard);
    int rc = check(b, &r, starts, n_feeds, label);
    if (rc == 0 && tt_grpc_ignored_bytes(p) != b->ignored)
        rc = mismatch(label, 0, "ignored bytes", tt_grpc_ignored_bytes(p), b->ignored);
    tt_grpc_free(p);
    rec_free(&r);
    return rc;
}

/* Whole, split at every byte, byte by byte, and split in three everywhere
 * when short. Bodies over 64 KiB: whole, byte by byte, MSS-sized feeds and
 * splits at a few points around each event's edges (no guard pages). */
static void run_all(body *b)
{
    finish_body(b);
    size_t n = b->len;
    bool small = n <= 64u << 10;
    size_t whole[2] = { 0, n };
    assert_int_equal(run_one(b, whole, 1, small, "whole"), 0);

    size_t *starts = malloc((n + 1) * sizeof *starts);
    assert_non_null(starts);
    for (size_t i = 0; i <= n; i++) starts[i] = i;
    assert_int_equal(run_one(b, starts, n, small && n <= 4096, "byte by byte"), 0);

    char label[96];
    if (small) {
        for (size_t k = 0; k <= n; k++) {
            size_t s[3] = { 0, k, n };
            snprintf(label, sizeof label, "split at %zu", k);
            assert_int_equal(run_one(b, s, 2, true, label), 0);
        }
        for (size_t a = 1; n <= 96 && a < n; a++) {
            for (size_t c = a + 1; c < n; c++) {
                size_t s[4] = { 0, a, c, n };
                snprintf(label, sizeof label, "split at %zu and %zu", a, c);
                assert_int_equal(run_one(b, s, 3, true, label), 0);
            }
        }
    } else {
        size_t m = 0;
        for (size_t at = 0; at < n; at += 1460) starts[m++] = at;
        starts[m] = n;
        assert_int_equal(run_one(b, starts, m, false, "1460-byte feeds"), 0);
        for (size_t i = 0; i < b->n_want; i++) {
            uint64_t edges[] = { b->want[i].first_off, b->want[i].first_off + 5,
                                 b->want[i].first_off + 5 + TT_SSE_MAX_EVENT, b->want[i].dispatch_off };
            for (size_t e = 0; e < 4; e++) {
                for (int d = -2; d <= 2; d++) {
                    int64_t k = (int64_t)edges[e] + d;
                    if (k < 0 || (uint64_t)k > n) continue;
                    size_t s[3] = { 0, (size_t)k, n };
                    snprintf(label, sizeof label, "split at %lld", (long long)k);
                    assert_int_equal(run_one(b, s, 2, false, label), 0);
                }
            }
        }
    }
    free(starts);
    free_body(b);
}

/* ---- cases ---- */

static void test_several_messages(void **state)
{
    body b = { 0 };
    add_msg(&b, 0, 3, 1);
    add_msg(&b, 0, 11, 2);
    add_msg(&b, 0, 1, 3);
    add_msg(&b, 0, 7, 4);
    run_all(&b);
}

static void test_zero_length_messages(void **state)
{
    body b = { 0 };
    add_msg(&b, 0, 0, 0);
    add_msg(&b, 0, 4, 5);
    add_msg(&b, 0, 0, 0);
    add_msg(&b, 1, 0, 0);
    add_msg(&b, 0, 0, 0);
    run_all(&b);
}

static void test_compressed_flag(void **state)
{
    body b = { 0 };
    add_msg(&b, 1, 9, 6);
    add_msg(&b, 0, 5, 7);
    add_msg(&b, 1, 2, 8);
    run_all(&b);
}

static void test_larger_messages(void **state)
{
    body b = { 0 };
    add_msg(&b, 0, 300, 9);
    add_msg(&b, 1, 70000, 10); /* longer than 64 KiB: the big-body path */
    add_msg(&b, 0, 255, 11);
    run_all(&b);

    body c = { 0 };
    add_msg(&c, 0, 1000, 12);
    add_msg(&c, 0, 257, 13);
    run_all(&c);
}

static void test_bad_flag_byte(void **state)
{
    uint8_t bad[] = { 2, 0x80, 0xFF, '{' };
    for (size_t i = 0; i < sizeof bad; i++) {
        body b = { 0 };
        add_msg(&b, 0, 4, 14);
        add_bad(&b, bad[i], 12);
        run_all(&b);
    }
    body first = { 0 };
    add_bad(&first, 7, 0); /* the first byte, nothing after */
    run_all(&first);
}

static void test_oversize_message_resyncs(void **state)
{
    body b = { 0 };
    add_msg(&b, 0, 5, 15);
    add_msg(&b, 0, TT_SSE_MAX_EVENT + 1000, 16);
    add_msg(&b, 1, 6, 17);
    add_msg(&b, 0, TT_SSE_MAX_EVENT, 18); /* exactly the bound: not cut */
    add_msg(&b, 0, 0, 0);
    run_all(&b);
}

static void test_unterminated_at_finish(void **state)
{
    for (size_t got = 1; got < 5; got++) {
        body b = { 0 };
        add_msg(&b, 0, 2, 19);
        add_cut_prefix(&b, got & 1 ? 1 : 0, got);
        run_all(&b);
    }
    body m = { 0 };
    add_msg(&m, 1, 3, 20);
    add_cut_msg(&m, 0, 40, 17, 21);
    run_all(&m);

    body none = { 0 };
    add_cut_msg(&none, 1, 8, 0, 0); /* a whole prefix, no message byte */
    run_all(&none);

    body big = { 0 };
    add_cut_msg(&big, 0, TT_SSE_MAX_EVENT + 50, TT_SSE_MAX_EVENT + 20, 22);
    run_all(&big);
}

static void test_empty_body(void **state)
{
    body b = { 0 };
    run_all(&b);
}

static void test_reuse_after_finish(void **state)
{
    static const tt_frame_callbacks cb = { on_event, NULL };
    body one = { 0 };
    add_msg(&one, 0, 3, 23);
    add_bad(&one, 9, 10);
    finish_body(&one);
    body two = { 0 };
    add_msg(&two, 1, 4, 24);
    add_cut_prefix(&two, 0, 3);
    finish_body(&two);
    body three = { 0 };
    add_msg(&three, 0, 2, 25);
    finish_body(&three);

    rec r;
    memset(&r, 0, sizeof r);
    tt_grpc_parser *p = tt_grpc_new(&cb, &r);
    size_t s1[3] = { 0, 4, one.len };
    parse(p, &one, s1, 2, true);
    assert_int_equal(check(&one, &r, s1, 2, "first body"), 0);
    assert_int_equal(tt_grpc_ignored_bytes(p), one.ignored);
    rec_free(&r);

    /* the second body starts at offset 0, chunk 0, in sync: an empty first
     * feed (chunk 0, which also clears the ignored count), then two */
    size_t s2[4] = { 0, 0, 6, two.len };
    tt_grpc_feed(p, two.b, 0, 0, NS_PER_FEED);
    assert_int_equal(tt_grpc_ignored_bytes(p), 0);
    tt_grpc_feed(p, two.b, 6, 0, 2 * NS_PER_FEED);
    tt_grpc_feed(p, two.b + 6, two.len - 6, 6, 3 * NS_PER_FEED);
    tt_grpc_finish(p, FINISH_NS);
    assert_int_equal(check(&two, &r, s2, 3, "second body"), 0);
    assert_int_equal(r.ev[0].f.first_chunk, 1);
    rec_free(&r);

    size_t s4[2] = { 0, three.len };
    parse(p, &three, s4, 1, true);
    assert_int_equal(check(&three, &r, s4, 1, "third body"), 0);
    assert_int_equal(r.ev[0].f.first_off, 0);
    assert_int_equal(r.ev[0].f.first_chunk, 0);
    rec_free(&r);
    tt_grpc_free(p);
    free_body(&one);
    free_body(&two);
    free_body(&three);
}

static void test_framer_and_null_arguments(void **state)
{
    assert_string_equal(tt_framing_name(TT_FRAMING_GRPC), "grpc");
    assert_string_equal(tt_framing_name(TT_FRAMING_NDJSON), "ndjson");
    assert_string_equal(tt_framing_name(TT_FRAMING_NONE), "none");

    static const tt_frame_callbacks cb = { on_event, on_comment };
    rec r;
    memset(&r, 0, sizeof r);
    tt_framer *f = tt_framer_new(TT_FRAMING_GRPC, &cb, &r);
    assert_non_null(f);
    const uint8_t msg[] = { 0, 0, 0, 0, 2, 'h', 'i', 1, 0 };
    tt_framer_feed(f, msg, sizeof msg, 0, 5);
    tt_framer_finish(f, 6);
    tt_framer_free(f);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.ev[0].f.data_len, 2);
    assert_memory_equal(r.ev[0].data, "hi", 2);
    assert_int_equal(r.ev[1].f.flags, TT_FRAME_UNTERMINATED | TT_FRAME_COMPRESSED);
    assert_int_equal(r.ev[1].f.dispatch_ns, 6);
    rec_free(&r);

    tt_grpc_parser *q = tt_grpc_new(NULL, NULL);
    assert_non_null(q);
    tt_grpc_feed(q, NULL, 5, 0, 1);
    tt_grpc_feed(q, msg, sizeof msg, 0, 2);
    tt_grpc_finish(q, 3);
    tt_grpc_free(q);
    tt_grpc_feed(NULL, msg, 1, 0, 1);
    tt_grpc_finish(NULL, 1);
    assert_int_equal(tt_grpc_ignored_bytes(NULL), 0);
    tt_grpc_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_several_messages),
        cmocka_unit_test(test_zero_length_messages),
        cmocka_unit_test(test_compressed_flag),
        cmocka_unit_test(test_larger_messages),
        cmocka_unit_test(test_bad_flag_byte),
        cmocka_unit_test(test_oversize_message_resyncs),
        cmocka_unit_test(test_unterminated_at_finish),
        cmocka_unit_test(test_empty_body),
        cmocka_unit_test(test_reuse_after_finish),
        cmocka_unit_test(test_framer_and_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
