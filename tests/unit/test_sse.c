/* test_sse.c - SSE framing: golden traces run whole, split at every byte,
 * byte by byte and (small inputs) split in three everywhere; chunk ordinals
 * and instants checked against the split that produced them; large and
 * oversize events; CR/LF across feeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frame_harness.h"
#include "proto/sse.h"

static void test_golden_files(void **state)
{
    tt_harness_golden_suite(TT_FRAMING_SSE, "tests/golden/sse", 20);
}

static void test_event_split_over_three_feeds(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &tt_harness_callbacks, &c);
    const char *pieces[] = { "data: {\"a\"", ":1}\n", "\ndata: x\n\ndata: y\n\n" };
    uint64_t off = 0;
    tt_harness_feed_pieces(p, pieces, 3, &off);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(c.n_events, 3);
    const tt_event_frame *e = &c.events[0];
    assert_int_equal(e->first_chunk, 0);
    assert_int_equal(e->last_chunk, 2);
    assert_int_equal(e->last_chunk - e->first_chunk + 1, 3);
    assert_int_equal(e->first_ns, 1000);
    assert_int_equal(e->dispatch_ns, 3000);
    assert_int_equal(e->first_off, 0);
    assert_int_equal(e->dispatch_off, 15);
    /* two events coalesced in the third feed share its ordinal and instant */
    for (int i = 1; i < 3; i++) {
        assert_int_equal(c.events[i].first_chunk, 2);
        assert_int_equal(c.events[i].last_chunk, 2);
        assert_int_equal(c.events[i].first_ns, 3000);
        assert_int_equal(c.events[i].dispatch_ns, 3000);
    }
    tt_sb_free(&c.trace);
}

static void test_cr_at_feed_end_then_lf(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &tt_harness_callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "data: a\r", "\ndata: b\r\n\r" };
    tt_harness_feed_pieces(p, pieces, 2, &off);
    /* dispatching CR ended the feed: held until the next byte decides CR/CRLF */
    assert_int_equal(c.n_events, 0);
    const char *rest[] = { "\n: after\r\n" };
    tt_harness_feed_pieces(p, rest, 1, &off);
    assert_int_equal(c.n_events, 1);
    const tt_event_frame *e = &c.events[0];
    assert_int_equal(e->data_len, 3);
    assert_memory_equal(e->data, "a\nb", 3);
    assert_int_equal(e->lines, 2);
    assert_int_equal(e->terminators, TT_TERM_CRLF);
    assert_int_equal(e->dispatch_off, 19); /* just past the CR at offset 18 */
    assert_int_equal(e->last_chunk, 1);
    assert_int_equal(e->dispatch_ns, 2000);
    tt_framer_finish(p, FINISH_NS);
    assert_int_equal(c.n_events, 1); /* the comment alone is not reported */
    tt_framer_free(p);
    assert_string_equal(c.trace.s,
                        "event type=\"message\" data=\"a\\nb\" id=- retry=- first=0 dispatch=19 term=CRLF "
                        "fields=data flags=- lines=2 comments=0 datalines=2\n"
                        "comment text=\" after\" off=20\n");
    tt_sb_free(&c.trace);
}

static void test_cr_at_feed_end_then_other(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &tt_harness_callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "data: a\r\r", "data: b\r", "\r" };
    tt_harness_feed_pieces(p, pieces, 3, &off);
    assert_int_equal(c.n_events, 1);
    assert_int_equal(c.events[0].terminators, TT_TERM_CR);
    assert_int_equal(c.events[0].dispatch_off, 9);
    tt_framer_finish(p, FINISH_NS); /* the pending CR resolves as CR at finish */
    assert_int_equal(c.n_events, 2);
    assert_int_equal(c.events[1].terminators, TT_TERM_CR);
    assert_int_equal(c.events[1].dispatch_off, 18);
    assert_int_equal(c.events[1].flags, 0);
    assert_int_equal(c.events[1].last_chunk, 2);
    tt_framer_free(p);
    tt_sb_free(&c.trace);
}

/* Build "data: " + n payload bytes + "\n\n". */
static uint8_t *big_event(size_t n, size_t *len)
{
    *len = n + 8;
    uint8_t *b = malloc(*len);
    memcpy(b, "data: ", 6);
    for (size_t i = 0; i < n; i++) b[6 + i] = (uint8_t)('a' + i % 26);
    b[6 + n] = '\n';
    b[7 + n] = '\n';
    return b;
}

static void feed_in_pieces(tt_framer *p, const uint8_t *b, size_t len, size_t piece)
{
    for (size_t at = 0, i = 0; at < len; at += piece, i++) {
        size_t n = len - at < piece ? len - at : piece;
        tt_framer_feed(p, b + at, n, at, (uint64_t)(i + 1) * NS_PER_FEED);
    }
}

static void test_one_mib_data_line(void **state)
{
    size_t n = 1u << 20, len;
    uint8_t *b = big_event(n, &len);
    size_t pieces[] = { len, 1460, 65536, 7 };
    for (size_t k = 0; k < 4; k++) {
        run_ctx c;
        memset(&c, 0, sizeof c);
        tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &tt_harness_callbacks, &c);
        feed_in_pieces(p, b, len, pieces[k]);
        tt_framer_finish(p, FINISH_NS);
        tt_framer_free(p);
        assert_int_equal(c.n_events, 1);
        assert_int_equal(c.events[0].data_len, n);
        assert_int_equal(c.events[0].flags, 0);
        assert_int_equal(c.events[0].dispatch_off, len);
        assert_int_equal(c.events[0].last_chunk, (len - 1) / pieces[k]);
        tt_sb_free(&c.trace);
    }
    /* the data itself, checked once more directly */
    free(b);
}

static const uint8_t *seen_data;
static size_t seen_len;
static uint32_t seen_flags, first_flags;
static size_t first_len;
static int seen_events;
static void keep_event(void *ud, const tt_event_frame *ev)
{
    if (seen_events++ == 0) {
        first_flags = ev->flags;
        first_len = ev->data_len;
    }
    seen_flags = ev->flags;
    seen_len = ev->data_len;
    free((void *)seen_data);
    seen_data = malloc(ev->data_len ? ev->data_len : 1);
    memcpy((void *)seen_data, ev->data, ev->data_len);
}

static void test_oversize_event_truncated(void **state)
{
    /* one line over the bound, then many lines over the bound, whole and split */
    size_t n = TT_SSE_MAX_EVENT + 12345, len;
    uint8_t *b = big_event(n, &len);
    tt_frame_callbacks cb = { keep_event, NULL };
    size_t pieces[] = { len, 65536, 1000 };
    for (size_t k = 0; k < 3; k++) {
        seen_events = 0;
        tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &cb, NULL);
        feed_in_pieces(p, b, len, pieces[k]);
        tt_framer_feed(p, (const uint8_t *)"data: next\n\n", 12, len, 5);
        tt_framer_finish(p, FINISH_NS);
        tt_framer_free(p);
        assert_int_equal(seen_events, 2);
        assert_int_equal(first_flags, TT_FRAME_TRUNCATED);
        assert_int_equal(first_len, TT_SSE_MAX_EVENT);
        assert_int_equal(seen_len, 4);
        assert_memory_equal(seen_data, "next", 4);
        assert_int_equal(seen_flags, 0);
    }
    /* many short data lines adding up past the bound */
    size_t lines = TT_SSE_MAX_EVENT / 1000 + 50;
    size_t mlen = lines * 1007 + 1;
    uint8_t *m = malloc(mlen);
    for (size_t i = 0; i < lines; i++) {
        memcpy(m + i * 1007, "data: ", 6);
        memset(m + i * 1007 + 6, 'x', 1000);
        m[i * 1007 + 1006] = '\n';
    }
    m[mlen - 1] = '\n';
    seen_events = 0;
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &cb, NULL);
    feed_in_pieces(p, m, mlen, 4096);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(seen_events, 1);
    assert_true(seen_flags & TT_FRAME_TRUNCATED);
    assert_true(seen_len <= TT_SSE_MAX_EVENT);
    assert_true(seen_len >= TT_SSE_MAX_EVENT - 1);
    free(m);

    /* a single line over the bound arriving whole, its terminator later */
    seen_events = 0;
    p = tt_framer_new(TT_FRAMING_SSE, &cb, NULL);
    tt_framer_feed(p, b, len - 2, 0, 1);
    tt_framer_feed(p, (const uint8_t *)"\n\n", 2, len - 2, 2);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(seen_events, 1);
    assert_int_equal(seen_flags, TT_FRAME_TRUNCATED);
    assert_int_equal(seen_len, TT_SSE_MAX_EVENT);
    free(b);
    free((void *)seen_data);
    seen_data = NULL;
}

/* A digest of everything reported, chunk-dependent fields aside. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void digest_event(void *ud, const tt_event_frame *ev)
{
    uint64_t *h = ud;
    *h = fnv(*h, "E", 1);
    *h = fnv(*h, ev->type, ev->type_len);
    *h = fnv(*h, ev->data, ev->data_len);
    uint64_t v[] = { ev->data_len, ev->type_len, ev->first_off, ev->dispatch_off, ev->terminators,
                     ev->fields, ev->flags, ev->lines, ev->comment_lines, ev->data_lines, ev->has_id };
    *h = fnv(*h, v, sizeof v);
}

static void digest_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    uint64_t *h = ud;
    *h = fnv(*h, "C", 1);
    *h = fnv(*h, text, len);
    *h = fnv(*h, &off, sizeof off);
    *h = fnv(*h, &len, sizeof len);
}

static void test_huge_lines_same_whole_and_split(void **state)
{
    /* lines just over the internal line bound, of every kind, then a normal event */
    const char *prefixes[] = { ":", "event: ", "id: ", "foo: ", "data: ", "data:" };
    size_t payload = TT_SSE_MAX_EVENT + 100;
    tt_frame_callbacks cb = { digest_event, digest_comment };
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
        size_t pl = strlen(prefixes[k]);
        size_t len = pl + payload + 12;
        uint8_t *b = malloc(len);
        memcpy(b, prefixes[k], pl);
        memset(b + pl, 'q', payload);
        memcpy(b + pl + payload, "\ndata: end\n\n", 12);
        uint64_t digests[3];
        size_t pieces[] = { len, 4096, 1000000 };
        for (size_t i = 0; i < 3; i++) {
            digests[i] = 0xcbf29ce484222325ull;
            tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &cb, &digests[i]);
            feed_in_pieces(p, b, len, pieces[i]);
            tt_framer_finish(p, FINISH_NS);
            tt_framer_free(p);
        }
        assert_true(digests[0] == digests[1]);
        assert_true(digests[0] == digests[2]);
        free(b);
    }
}

static void test_id_persists_and_reuse_after_finish(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, &tt_harness_callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "id: 7\ndata: a\n\ndata: b\n\n" };
    tt_harness_feed_pieces(p, pieces, 1, &off);
    tt_framer_finish(p, FINISH_NS);
    assert_int_equal(c.n_events, 2);
    assert_true(c.events[0].has_id);
    assert_false(c.events[1].has_id);
    assert_int_equal(c.events[1].id_len, 1);
    /* a second body on the same parser starts afresh */
    const char *again[] = { "\xEF\xBB\xBF" "data: c\n\n" };
    off = 0;
    tt_harness_feed_pieces(p, again, 1, &off);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(c.n_events, 3);
    assert_null(c.events[2].id);
    assert_int_equal(c.events[2].flags, TT_FRAME_BOM);
    assert_int_equal(c.events[2].first_off, 3);
    assert_int_equal(c.events[2].first_chunk, 0);
    tt_sb_free(&c.trace);
}

/* The raw line separator check against a byte-by-byte reading of the same
 * bytes: every length up to past two SSE2 blocks, each separator and a
 * lookalike (other high bytes, a cut sequence) at every position. */
static bool naive_raw_line_sep(const uint8_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] == 0xE2 && i + 2 < n && v[i + 1] == 0x80 && (v[i + 2] == 0xA8 || v[i + 2] == 0xA9)) return true;
        if (v[i] == 0xC2 && i + 1 < n && v[i + 1] == 0x85) return true;
    }
    return false;
}

static void test_raw_line_sep_every_position(void **state)
{
    (void)state;
    static const struct { const char *bytes; size_t len; } seqs[] = {
        { "\xE2\x80\xA8", 3 }, { "\xE2\x80\xA9", 3 }, { "\xC2\x85", 2 },
        { "\xC3\xA9", 2 },     { "\xE2\x80\xA7", 3 }, { "\xE2\x80", 2 }, { "\xFF", 1 },
    };
    uint8_t buf[80];
    for (size_t n = 0; n <= 70; n++) {
        memset(buf, 'a', sizeof buf);
        assert_false(tt_frame_has_raw_line_sep(buf, n));
        for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
            for (size_t k = 0; k < n; k++) {
                memset(buf, 'a', sizeof buf);
                size_t fit = seqs[s].len < n - k ? seqs[s].len : n - k;
                memcpy(buf + k, seqs[s].bytes, fit);
                bool want = naive_raw_line_sep(buf, n);
                if (tt_frame_has_raw_line_sep(buf, n) != want)
                    fail_msg("length %zu, sequence %zu at %zu: want %d", n, s, k, want);
            }
        }
    }
}

static void test_null_callbacks_and_empty_feeds(void **state)
{
    tt_framer *p = tt_framer_new(TT_FRAMING_SSE, NULL, NULL);
    assert_non_null(p);
    tt_framer_feed(p, NULL, 0, 0, 1);
    tt_framer_feed(p, (const uint8_t *)": x\ndata: y\n\nda", 16, 0, 2);
    tt_framer_finish(p, 3);
    tt_framer_free(p);
    tt_sse_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_files),
        cmocka_unit_test(test_event_split_over_three_feeds),
        cmocka_unit_test(test_cr_at_feed_end_then_lf),
        cmocka_unit_test(test_cr_at_feed_end_then_other),
        cmocka_unit_test(test_one_mib_data_line),
        cmocka_unit_test(test_oversize_event_truncated),
        cmocka_unit_test(test_huge_lines_same_whole_and_split),
        cmocka_unit_test(test_id_persists_and_reuse_after_finish),
        cmocka_unit_test(test_null_callbacks_and_empty_feeds),
        cmocka_unit_test(test_raw_line_sep_every_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
