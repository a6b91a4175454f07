/* test_ndjson.c - NDJSON framing: golden traces run whole, split at every
 * byte, byte by byte and (small inputs) split in three everywhere; chunk
 * ordinals and instants checked against the split that produced them; long
 * and oversize lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frame_harness.h"
#include "proto/ndjson.h"

static void test_golden_files(void **state)
{
    tt_harness_golden_suite(TT_FRAMING_NDJSON, "tests/golden/ndjson", 5);
}

static void test_line_split_over_three_feeds(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_NDJSON, &tt_harness_callbacks, &c);
    const char *pieces[] = { "{\"response\":", "\"Hi\",\"done\":false}\r", "\n{\"a\":1}\n{\"b\":2}\n" };
    uint64_t off = 0;
    tt_harness_feed_pieces(p, pieces, 3, &off);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(c.n_events, 3);
    const tt_event_frame *e = &c.events[0];
    assert_int_equal(e->last_chunk - e->first_chunk + 1, 3);
    assert_int_equal(e->first_ns, 1000);
    assert_int_equal(e->dispatch_ns, 3000);
    assert_int_equal(e->terminators, TT_TERM_CRLF);
    assert_int_equal(e->data_len, 30);
    assert_int_equal(e->dispatch_off, 32);
    assert_null(e->type);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(c.events[i].first_chunk, 2);
        assert_int_equal(c.events[i].last_chunk, 2);
        assert_int_equal(c.events[i].first_ns, 3000);
    }
    tt_sb_free(&c.trace);
}

static int n_seen;
static size_t first_len, last_len;
static uint32_t first_flags, last_flags;
static void keep_event(void *ud, const tt_event_frame *ev)
{
    if (n_seen++ == 0) {
        first_len = ev->data_len;
        first_flags = ev->flags;
    }
    last_len = ev->data_len;
    last_flags = ev->flags;
}

static void test_long_and_oversize_lines(void **state)
{
    tt_frame_callbacks cb = { keep_event, NULL };
    size_t sizes[] = { 1u << 20, TT_SSE_MAX_EVENT + 777 };
    for (size_t s = 0; s < 2; s++) {
        size_t n = sizes[s], len = n + 2;
        uint8_t *b = malloc(len + 6);
        memset(b, 'x', n);
        memcpy(b + n, "\r\n{}\r\n", 6);
        len += 4;
        size_t pieces[] = { len, 1460, 3 };
        for (size_t k = 0; k < 3; k++) {
            n_seen = 0;
            tt_framer *p = tt_framer_new(TT_FRAMING_NDJSON, &cb, NULL);
            for (size_t at = 0, i = 0; at < len; at += pieces[k], i++)
                tt_framer_feed(p, b + at, len - at < pieces[k] ? len - at : pieces[k], at, i);
            tt_framer_finish(p, FINISH_NS);
            tt_framer_free(p);
            assert_int_equal(n_seen, 2);
            bool over = n > TT_SSE_MAX_EVENT;
            assert_int_equal(first_len, over ? TT_SSE_MAX_EVENT : n);
            assert_int_equal(first_flags, over ? TT_FRAME_TRUNCATED : 0);
            assert_int_equal(last_len, 2);
            assert_int_equal(last_flags, 0);
        }
        free(b);
    }
}

static void test_reuse_after_finish_and_null_callbacks(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_framer *p = tt_framer_new(TT_FRAMING_NDJSON, &tt_harness_callbacks, &c);
    uint64_t off = 0;
    const char *one[] = { "{\"a\":1}\n{\"b\"" };
    tt_harness_feed_pieces(p, one, 1, &off);
    tt_framer_finish(p, FINISH_NS);
    off = 0;
    const char *two[] = { "{\"c\":3}\n" };
    tt_harness_feed_pieces(p, two, 1, &off);
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    assert_int_equal(c.n_events, 3);
    assert_int_equal(c.events[1].flags, TT_FRAME_UNTERMINATED);
    assert_int_equal(c.events[2].first_off, 0);
    assert_int_equal(c.events[2].first_chunk, 0);
    tt_sb_free(&c.trace);

    tt_ndjson_parser *q = tt_ndjson_new(NULL, NULL);
    tt_ndjson_feed(q, NULL, 0, 0, 1);
    tt_ndjson_feed(q, (const uint8_t *)"{}\n{", 4, 0, 2);
    tt_ndjson_finish(q, 3);
    tt_ndjson_free(q);
    tt_ndjson_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_files),
        cmocka_unit_test(test_line_split_over_three_feeds),
        cmocka_unit_test(test_long_and_oversize_lines),
        cmocka_unit_test(test_reuse_after_finish_and_null_callbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
