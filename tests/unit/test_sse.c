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

#include "golden.h"
#include "proto/sse.h"

#define GOLDEN_DIR "tests/golden/sse"
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
    tt_sse_parser *p = tt_sse_new(&callbacks, c);
    assert_non_null(p);
    for (size_t i = 0; i < c->n_seg; i++) {
        size_t n = starts[i + 1] - starts[i];
        uint8_t *g = tt_guard_copy(in + starts[i], n);
        tt_sse_feed(p, g, n, starts[i], (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, n);
    }
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
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
    tt_sse_parser *p = tt_sse_new(&callbacks, &c);
    for (size_t i = 0; i < n; i++) {
        uint8_t *b = tt_guard_copy(g->input + i, 1);
        tt_sse_feed(p, b, 1, i, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(b, 1);
    }
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
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
    assert_true(n >= 20);
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

/* Feed the pieces in order from guard copies, body offsets continuing. */
static void feed_pieces(tt_sse_parser *p, const char *const *pieces, size_t n, uint64_t *off)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        uint8_t *g = tt_guard_copy(pieces[i], len);
        tt_sse_feed(p, g, len, *off, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, len);
        *off += len;
    }
}

static void test_event_split_over_three_feeds(void **state)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    tt_sse_parser *p = tt_sse_new(&callbacks, &c);
    const char *pieces[] = { "data: {\"a\"", ":1}\n", "\ndata: x\n\ndata: y\n\n" };
    uint64_t off = 0;
    feed_pieces(p, pieces, 3, &off);
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
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
    tt_sse_parser *p = tt_sse_new(&callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "data: a\r", "\ndata: b\r\n\r" };
    feed_pieces(p, pieces, 2, &off);
    /* dispatching CR ended the feed: held until the next byte decides CR/CRLF */
    assert_int_equal(c.n_events, 0);
    const char *rest[] = { "\n: after\r\n" };
    feed_pieces(p, rest, 1, &off);
    assert_int_equal(c.n_events, 1);
    const tt_event_frame *e = &c.events[0];
    assert_int_equal(e->data_len, 3);
    assert_memory_equal(e->data, "a\nb", 3);
    assert_int_equal(e->lines, 2);
    assert_int_equal(e->terminators, TT_TERM_CRLF);
    assert_int_equal(e->dispatch_off, 19); /* just past the CR at offset 18 */
    assert_int_equal(e->last_chunk, 1);
    assert_int_equal(e->dispatch_ns, 2000);
    tt_sse_finish(p, FINISH_NS);
    assert_int_equal(c.n_events, 1); /* the comment alone is not reported */
    tt_sse_free(p);
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
    tt_sse_parser *p = tt_sse_new(&callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "data: a\r\r", "data: b\r", "\r" };
    feed_pieces(p, pieces, 3, &off);
    assert_int_equal(c.n_events, 1);
    assert_int_equal(c.events[0].terminators, TT_TERM_CR);
    assert_int_equal(c.events[0].dispatch_off, 9);
    tt_sse_finish(p, FINISH_NS); /* the pending CR resolves as CR at finish */
    assert_int_equal(c.n_events, 2);
    assert_int_equal(c.events[1].terminators, TT_TERM_CR);
    assert_int_equal(c.events[1].dispatch_off, 18);
    assert_int_equal(c.events[1].flags, 0);
    assert_int_equal(c.events[1].last_chunk, 2);
    tt_sse_free(p);
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

static void feed_in_pieces(tt_sse_parser *p, const uint8_t *b, size_t len, size_t piece)
{
    for (size_t at = 0, i = 0; at < len; at += piece, i++) {
        size_t n = len - at < piece ? len - at : piece;
        tt_sse_feed(p, b + at, n, at, (uint64_t)(i + 1) * NS_PER_FEED);
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
        tt_sse_parser *p = tt_sse_new(&callbacks, &c);
        feed_in_pieces(p, b, len, pieces[k]);
        tt_sse_finish(p, FINISH_NS);
        tt_sse_free(p);
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
        tt_sse_parser *p = tt_sse_new(&cb, NULL);
        feed_in_pieces(p, b, len, pieces[k]);
        tt_sse_feed(p, (const uint8_t *)"data: next\n\n", 12, len, 5);
        tt_sse_finish(p, FINISH_NS);
        tt_sse_free(p);
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
    tt_sse_parser *p = tt_sse_new(&cb, NULL);
    feed_in_pieces(p, m, mlen, 4096);
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
    assert_int_equal(seen_events, 1);
    assert_true(seen_flags & TT_FRAME_TRUNCATED);
    assert_true(seen_len <= TT_SSE_MAX_EVENT);
    assert_true(seen_len >= TT_SSE_MAX_EVENT - 1);
    free(m);

    /* a single line over the bound arriving whole, its terminator later */
    seen_events = 0;
    p = tt_sse_new(&cb, NULL);
    tt_sse_feed(p, b, len - 2, 0, 1);
    tt_sse_feed(p, (const uint8_t *)"\n\n", 2, len - 2, 2);
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
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
            tt_sse_parser *p = tt_sse_new(&cb, &digests[i]);
            feed_in_pieces(p, b, len, pieces[i]);
            tt_sse_finish(p, FINISH_NS);
            tt_sse_free(p);
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
    tt_sse_parser *p = tt_sse_new(&callbacks, &c);
    uint64_t off = 0;
    const char *pieces[] = { "id: 7\ndata: a\n\ndata: b\n\n" };
    feed_pieces(p, pieces, 1, &off);
    tt_sse_finish(p, FINISH_NS);
    assert_int_equal(c.n_events, 2);
    assert_true(c.events[0].has_id);
    assert_false(c.events[1].has_id);
    assert_int_equal(c.events[1].id_len, 1);
    /* a second body on the same parser starts afresh */
    const char *again[] = { "\xEF\xBB\xBF" "data: c\n\n" };
    off = 0;
    feed_pieces(p, again, 1, &off);
    tt_sse_finish(p, FINISH_NS);
    tt_sse_free(p);
    assert_int_equal(c.n_events, 3);
    assert_null(c.events[2].id);
    assert_int_equal(c.events[2].flags, TT_FRAME_BOM);
    assert_int_equal(c.events[2].first_off, 3);
    assert_int_equal(c.events[2].first_chunk, 0);
    tt_sb_free(&c.trace);
}

static void test_null_callbacks_and_empty_feeds(void **state)
{
    tt_sse_parser *p = tt_sse_new(NULL, NULL);
    assert_non_null(p);
    tt_sse_feed(p, NULL, 0, 0, 1);
    tt_sse_feed(p, (const uint8_t *)": x\ndata: y\n\nda", 16, 0, 2);
    tt_sse_finish(p, 3);
    tt_sse_free(p);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
