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

#include "golden.h"
#include "proto/ndjson.h"

#define GOLDEN_DIR "tests/golden/ndjson"
#define NS_PER_FEED 1000u
#define FINISH_NS 999999u

/* One run: the feeds it used, so that chunk-dependent fields can be checked. */
typedef struct run_ctx {
    tt_strbuf trace;
    const size_t *seg_start; /* body offset where feed i starts; n_seg + 1 entries */
    size_t n_seg;
    int chunk_errors;
    /* last event seen, for the dedicated tests */
    tt_event_frame events[64];
    size_t n_events;
} run_ctx;

static void put_flags(tt_strbuf *b, const char *key, uint32_t v, const char *const *names, size_t n)
{
    tt_sb_printf(b, " %s=", key);
    if (!v) {
        tt_sb_printf(b, "-");
        return;
    }
    const char *sep = "";
    for (size_t i = 0; i < n; i++) {
        if (v & (1u << i)) {
            tt_sb_printf(b, "%s%s", sep, names[i]);
            sep = "|";
        }
    }
}

static void trace_event(tt_strbuf *b, const tt_event_frame *ev)
{
    static const char *const terms[] = { "LF", "CR", "CRLF" };
    static const char *const fields[] = { "data", "event", "id", "retry", "other" };
    static const char *const flags[] = { "no_space", "bom", "empty_data", "raw_sep", "unterminated", "truncated" };
    tt_sb_printf(b, "%s type=", (ev->flags & TT_FRAME_UNTERMINATED) ? "unterminated" : "event");
    if (ev->type) {
        tt_sb_printf(b, "\"");
        tt_sb_escaped(b, ev->type, ev->type_len);
        tt_sb_printf(b, "\"");
    } else {
        tt_sb_printf(b, "-");
    }
    tt_sb_printf(b, " data=\"");
    tt_sb_escaped(b, ev->data, ev->data_len);
    tt_sb_printf(b, "\" id=");
    if (ev->has_id || ev->id) {
        tt_sb_printf(b, ev->has_id ? "\"" : "-(last=\"");
        tt_sb_escaped(b, ev->id, ev->id_len);
        tt_sb_printf(b, ev->has_id ? "\"" : "\")");
    } else {
        tt_sb_printf(b, "-");
    }
    if (ev->retry_ms >= 0) tt_sb_printf(b, " retry=%lld", (long long)ev->retry_ms);
    else tt_sb_printf(b, " retry=-");
    tt_sb_printf(b, " first=%llu dispatch=%llu", (unsigned long long)ev->first_off,
                 (unsigned long long)ev->dispatch_off);
    put_flags(b, "term", ev->terminators, terms, 3);
    put_flags(b, "fields", ev->fields, fields, 5);
    put_flags(b, "flags", ev->flags, flags, 6);
    tt_sb_printf(b, " lines=%u comments=%u datalines=%u\n", ev->lines, ev->comment_lines, ev->data_lines);
}

/* Index of the non-empty feed holding body offset off, or -1. */
static long feed_of(const run_ctx *c, uint64_t off)
{
    for (size_t i = 0; i < c->n_seg; i++)
        if (c->seg_start[i] <= off && off < c->seg_start[i + 1]) return (long)i;
    return -1;
}

static void on_event(void *ud, const tt_event_frame *ev)
{
    run_ctx *c = ud;
    trace_event(&c->trace, ev);
    if (c->n_events < sizeof c->events / sizeof c->events[0]) c->events[c->n_events++] = *ev;
    if (!c->seg_start) return;
    long ff = feed_of(c, ev->first_off);
    bool unterminated = ev->flags & TT_FRAME_UNTERMINATED;
    long lf = unterminated ? feed_of(c, c->seg_start[c->n_seg] - 1) : feed_of(c, ev->dispatch_off - 1);
    uint64_t want_dispatch_ns = unterminated ? FINISH_NS : (uint64_t)(lf + 1) * NS_PER_FEED;
    if (ff < 0 || lf < 0 || ev->first_chunk != (uint32_t)ff || ev->last_chunk != (uint32_t)lf ||
        ev->first_ns != (uint64_t)(ff + 1) * NS_PER_FEED || ev->dispatch_ns != want_dispatch_ns) {
        c->chunk_errors++;
        tt_sb_printf(&c->trace, "CHUNK MISMATCH first_chunk=%u (want %ld) last_chunk=%u (want %ld) first_ns=%llu dispatch_ns=%llu\n",
                     ev->first_chunk, ff, ev->last_chunk, lf, (unsigned long long)ev->first_ns,
                     (unsigned long long)ev->dispatch_ns);
    }
}

static void on_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    run_ctx *c = ud;
    tt_sb_printf(&c->trace, "comment text=\"");
    tt_sb_escaped(&c->trace, text, len);
    tt_sb_printf(&c->trace, "\" off=%llu\n", (unsigned long long)off);
    if (c->seg_start) {
        long f = feed_of(c, off);
        if (f < 0 || mono_ns != (uint64_t)(f + 1) * NS_PER_FEED) {
            c->chunk_errors++;
            tt_sb_printf(&c->trace, "COMMENT NS MISMATCH\n");
        }
    }
}

static const tt_frame_callbacks callbacks = { on_event, on_comment };

/* Run input cut at the given points (ascending, each in [0,len]); each
 * segment is fed from its own guard-page copy, feed i at instant (i+1)*1000. */
static void run_split(const uint8_t *in, size_t len, const size_t *cuts, size_t n_cuts, run_ctx *c)
{
    size_t starts[16];
    assert_true(n_cuts + 2 <= sizeof starts / sizeof starts[0]);
    starts[0] = 0;
    for (size_t i = 0; i < n_cuts; i++) starts[i + 1] = cuts[i];
    starts[n_cuts + 1] = len;
    memset(c, 0, sizeof *c);
    c->seg_start = starts;
    c->n_seg = n_cuts + 1;
    tt_ndjson_parser *p = tt_ndjson_new(&callbacks, c);
    assert_non_null(p);
    for (size_t i = 0; i < c->n_seg; i++) {
        size_t n = starts[i + 1] - starts[i];
        uint8_t *g = tt_guard_copy(in + starts[i], n);
        tt_ndjson_feed(p, g, n, starts[i], (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, n);
    }
    tt_ndjson_finish(p, FINISH_NS);
    tt_ndjson_free(p);
    c->seg_start = NULL;
}

static char *trace_of(run_ctx *c)
{
    char *s = c->trace.s ? c->trace.s : strdup("");
    c->trace.s = NULL;
    tt_sb_free(&c->trace);
    return s;
}

static int check_run(const tt_golden *g, const size_t *cuts, size_t n_cuts, const char *label)
{
    run_ctx c;
    run_split(g->input, g->input_len, cuts, n_cuts, &c);
    char *t = trace_of(&c);
    int rc = tt_golden_compare(g, t, label);
    free(t);
    return rc;
}

static int check_bytewise(const tt_golden *g)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    size_t n = g->input_len;
    size_t *starts = malloc((n + 1) * sizeof *starts);
    for (size_t i = 0; i <= n; i++) starts[i] = i;
    c.seg_start = starts;
    c.n_seg = n;
    tt_ndjson_parser *p = tt_ndjson_new(&callbacks, &c);
    for (size_t i = 0; i < n; i++) {
        uint8_t *b = tt_guard_copy(g->input + i, 1);
        tt_ndjson_feed(p, b, 1, i, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(b, 1);
    }
    tt_ndjson_finish(p, FINISH_NS);
    tt_ndjson_free(p);
    char *t = trace_of(&c);
    int rc = tt_golden_compare(g, t, "byte by byte");
    free(t);
    free(starts);
    return rc;
}

static void test_golden_files(void **state)
{
    size_t n = 0;
    char **files = tt_golden_list(GOLDEN_DIR, &n);
    assert_true(n >= 5);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        tt_golden g;
        if (tt_golden_load(files[i], &g) < 0) {
            failures++;
            continue;
        }
        int bad = check_run(&g, NULL, 0, "whole") < 0;
        for (size_t k = 0; k <= g.input_len && !bad; k++) {
            char label[64];
            snprintf(label, sizeof label, "split at %zu", k);
            bad = check_run(&g, &k, 1, label) < 0;
        }
        if (!bad) bad = check_bytewise(&g) < 0;
        if (g.input_len <= 80) {
            for (size_t a = 1; a < g.input_len && !bad; a++) {
                for (size_t b = a + 1; b < g.input_len && !bad; b++) {
                    size_t cuts[2] = { a, b };
                    char label[64];
                    snprintf(label, sizeof label, "split at %zu and %zu", a, b);
                    bad = check_run(&g, cuts, 2, label) < 0;
                }
            }
        }
        failures += bad;
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(failures, 0);
}

static void feed_pieces(tt_ndjson_parser *p, const char *const *pieces, size_t n, uint64_t *off)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        uint8_t *g = tt_guard_copy(pieces[i], len);
        tt_ndjson_feed(p, g, len, *off, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, len);
        *off += len;
    }
}

static void test_line_split_over_three_feeds(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_ndjson_parser *p = tt_ndjson_new(&callbacks, &c);
    const char *pieces[] = { "{\"response\":", "\"Hi\",\"done\":false}\r", "\n{\"a\":1}\n{\"b\":2}\n" };
    uint64_t off = 0;
    feed_pieces(p, pieces, 3, &off);
    tt_ndjson_finish(p, FINISH_NS);
    tt_ndjson_free(p);
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
            tt_ndjson_parser *p = tt_ndjson_new(&cb, NULL);
            for (size_t at = 0, i = 0; at < len; at += pieces[k], i++)
                tt_ndjson_feed(p, b + at, len - at < pieces[k] ? len - at : pieces[k], at, i);
            tt_ndjson_finish(p, FINISH_NS);
            tt_ndjson_free(p);
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
    tt_ndjson_parser *p = tt_ndjson_new(&callbacks, &c);
    uint64_t off = 0;
    const char *one[] = { "{\"a\":1}\n{\"b\"" };
    feed_pieces(p, one, 1, &off);
    tt_ndjson_finish(p, FINISH_NS);
    off = 0;
    const char *two[] = { "{\"c\":3}\n" };
    feed_pieces(p, two, 1, &off);
    tt_ndjson_finish(p, FINISH_NS);
    tt_ndjson_free(p);
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
