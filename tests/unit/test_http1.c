/* test_http1.c - the incremental HTTP/1.1 parser: golden cases (whole,
 * split at every byte, byte by byte, from guard-page copies; http1_run.h),
 * and its bounds: head size, chunk size lines and trailers, many chunks,
 * header lookup, a failed direction staying failed, the instants of heads
 * and ends, header lists. Coded bodies are test_http1_coding.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "golden.h"
#include "http1_run.h"
#include "proto/content_decode.h"
#include "proto/http1.h"
#include "test_bytes.h"

static void opts_from_meta(const tt_golden *g, run_opts *o)
{
    char buf[64];
    memset(o, 0, sizeof *o);
    const char *role = tt_golden_meta(g, "role", buf, sizeof buf);
    o->role = role && strcmp(role, "response") == 0 ? TT_HTTP_RESPONSE : TT_HTTP_REQUEST;
    const char *eof = tt_golden_meta(g, "eof", buf, sizeof buf);
    if (eof) {
        o->eof = true;
        o->eof_clean = strcmp(eof, "clean") == 0;
    }
    const char *gap = tt_golden_meta(g, "gap", buf, sizeof buf);
    if (gap) {
        unsigned long long at, len;
        assert_int_equal(sscanf(gap, "%llu:%llu", &at, &len), 2);
        o->has_gap = true;
        o->gap_at = (size_t)at;
        o->gap_len = len;
    }
    const char *ex = tt_golden_meta(g, "expect", buf, sizeof buf);
    if (ex) snprintf(o->expect, sizeof o->expect, "%s", ex);
}

/* Developer aid (HTTP1_UPDATE=1): write the whole-run trace as the
 * expectation; review the diff before keeping it. */
static void rewrite_expect(tt_golden *g, const run_opts *o)
{
    FILE *f = fopen(g->path, "r+");
    assert_non_null(f);
    char *text = NULL;
    size_t cap = 0;
    ssize_t got = getdelim(&text, &cap, 0, f);
    assert_true(got > 0);
    char *mark = strstr(text, "=== expect\n");
    assert_non_null(mark);
    char *trace_text = http1_run_cuts(g->input, g->input_len, o, NULL, 0);
    rewind(f);
    fwrite(text, 1, (size_t)(mark - text) + strlen("=== expect\n"), f);
    fputs(trace_text, f);
    fflush(f);
    assert_int_equal(ftruncate(fileno(f), ftell(f)), 0);
    fclose(f);
    free(g->expect);
    g->expect = trace_text;
    free(text);
}

static void test_golden_cases(void **state)
{
    size_t n = 0;
    char **files = tt_golden_list("tests/golden/http1", &n);
    assert_true(n >= 25);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        tt_golden g;
        assert_int_equal(tt_golden_load(files[i], &g), 0);
        run_opts o;
        opts_from_meta(&g, &o);
        if (getenv("HTTP1_UPDATE")) rewrite_expect(&g, &o);
        bad += http1_check_all_cuts(g.input, g.input_len, &o, g.expect, g.path);
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(bad, 0);
}

/* ---- bounds ---- */

/* Large inputs: whole, byte by byte, and split at every 509th byte. */
static int check_sampled_cuts(const uint8_t *in, size_t n, const run_opts *o, const char *expect, const char *name)
{
    int bad = 0;
    size_t *all = malloc((n + 1) * sizeof *all);
    for (size_t k = 0; k < n; k++) all[k] = k + 1;
    for (size_t k = 0; k <= n; k += 509) {
        char *s = k == 0 ? http1_run_cuts(in, n, o, all, n) : http1_run_cuts(in, n, o, &k, 1);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (cut %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k, expect, s);
            bad++;
        }
        free(s);
    }
    char *s = http1_run_cuts(in, n, o, NULL, 0);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (whole): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    free(all);
    return bad;
}

/* A request head of exactly `total` bytes (one long header). */
static bytes head_of_size(size_t total)
{
    bytes m = { 0 };
    puts_(&m, "GET / HTTP/1.1\r\nX: ");
    size_t fill = total - m.n - 4;
    uint8_t *a = malloc(fill);
    memset(a, 'a', fill);
    put(&m, a, fill);
    free(a);
    puts_(&m, "\r\n\r\n");
    assert_int_equal(m.n, total);
    return m;
}

static void test_head_size_limit(void **state)
{
    run_opts o = { .role = TT_HTTP_REQUEST };
    bytes m = head_of_size(TT_HTTP1_MAX_HEAD);
    char expect[256];
    snprintf(expect, sizeof expect,
             "head request \"GET\" \"/\" 1.1 cl=-1 chunked=0 coding=identity keep_alive=1 interim=0 off=0..%u\n",
             TT_HTTP1_MAX_HEAD);
    char *whole = http1_run_cuts(m.p, m.n, &o, NULL, 0);
    assert_true(strncmp(whole, expect, strlen(expect)) == 0);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, whole, "head at the limit"), 0);
    free(whole);
    free(m.p);

    m = head_of_size(TT_HTTP1_MAX_HEAD + 1);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, "error TOO_LARGE \"head larger than 64 KiB\" off=0\n",
                                        "head over the limit"), 0);
    free(m.p);

    /* no line end at all */
    m.n = 0;
    m.p = NULL;
    m.cap = 0;
    puts_(&m, "GET /");
    uint8_t *a = malloc(100000);
    memset(a, 'x', 100000);
    put(&m, a, 100000);
    free(a);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, "error TOO_LARGE \"head larger than 64 KiB\" off=0\n",
                                        "endless request line"), 0);
    free(m.p);
}

/* Chunk-size lines and trailers are bounded too. */
static void test_chunk_line_and_trailer_limits(void **state)
{
    run_opts o = { .role = TT_HTTP_RESPONSE };
    const char *head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    size_t hl = strlen(head);
    bytes m = { 0 };
    puts_(&m, head);
    puts_(&m, "1;");
    uint8_t *a = malloc(70000);
    memset(a, 'e', 70000);
    put(&m, a, 5000);
    char expect[512];
    snprintf(expect, sizeof expect,
             "head response 200 \"OK\" 1.1 cl=-1 chunked=1 coding=identity keep_alive=1 interim=0 off=0..%zu\n"
             "  header \"Transfer-Encoding\" \"chunked\"\n"
             "error TOO_LARGE \"chunk extensions too long\" off=%zu\n"
             "end ERROR last_off=%zu body=0 wire=4096 gap=0\n",
             hl, hl + 4096, hl + 4096);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, expect, "long chunk extension"), 0);

    m.n = 0;
    puts_(&m, head);
    memset(a, '0', 5000);
    put(&m, a, 5000);
    snprintf(expect, sizeof expect,
             "head response 200 \"OK\" 1.1 cl=-1 chunked=1 coding=identity keep_alive=1 interim=0 off=0..%zu\n"
             "  header \"Transfer-Encoding\" \"chunked\"\n"
             "error TOO_LARGE \"chunk size line too long\" off=%zu\n"
             "end ERROR last_off=%zu body=0 wire=4096 gap=0\n",
             hl, hl + 4096, hl + 4096);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, expect, "long chunk size"), 0);

    m.n = 0;
    puts_(&m, head);
    puts_(&m, "0\r\nX-Trailer: ");
    memset(a, 't', 70000);
    put(&m, a, 70000);
    snprintf(expect, sizeof expect,
             "head response 200 \"OK\" 1.1 cl=-1 chunked=1 coding=identity keep_alive=1 interim=0 off=0..%zu\n"
             "  header \"Transfer-Encoding\" \"chunked\"\n"
             "error TOO_LARGE \"trailers larger than 64 KiB\" off=%zu\n"
             "end ERROR last_off=%zu body=0 wire=%u gap=0\n",
             hl, hl + 3 + TT_HTTP1_MAX_HEAD, hl + 3 + TT_HTTP1_MAX_HEAD, 3 + TT_HTTP1_MAX_HEAD);
    assert_int_equal(check_sampled_cuts(m.p, m.n, &o, expect, "huge trailer"), 0);
    free(a);
    free(m.p);
}

/* Many chunks, each with an extension: per-line limits reset every line. */
static void test_many_chunks(void **state)
{
    bytes m = { 0 };
    puts_(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    size_t hl = m.n;
    for (int i = 0; i < 5000; i++) puts_(&m, "1;ext=some-extension-value\r\nx\r\n");
    puts_(&m, "0\r\nA: b\r\n\r\n");
    tt_strbuf body = { 0 };
    for (int i = 0; i < 5000; i++) tt_sb_printf(&body, "x");
    tt_strbuf expect = { 0 };
    tt_sb_printf(&expect,
                 "head response 200 \"OK\" 1.1 cl=-1 chunked=1 coding=identity keep_alive=1 interim=0 off=0..%zu\n"
                 "  header \"Transfer-Encoding\" \"chunked\"\n"
                 "body off=0 \"%s\"\n"
                 "end COMPLETE last_off=%zu body=5000 wire=%zu gap=0\n",
                 hl, body.s, m.n, m.n - hl);
    run_opts o = { .role = TT_HTTP_RESPONSE };
    char *whole = http1_run_cuts(m.p, m.n, &o, NULL, 0);
    assert_string_equal(whole, expect.s);
    free(whole);
    size_t cuts[] = { 100, 1000, 50000, 100000 };
    whole = http1_run_cuts(m.p, m.n, &o, cuts, 4);
    assert_string_equal(whole, expect.s);
    free(whole);
    tt_sb_free(&body);
    tt_sb_free(&expect);
    free(m.p);
}

static void test_find_header_case_insensitive(void **state)
{
    tt_http_header hs[] = {
        { "Content-Type", 12, "text/plain", 10 },
        { "X-Request-ID", 12, "abc", 3 },
    };
    tt_http_head h = { .headers = hs, .n_headers = 2 };
    const tt_http_header *f = tt_http_find_header(&h, "x-request-id");
    assert_non_null(f);
    assert_int_equal(f->value_len, 3);
    assert_ptr_equal(tt_http_find_header(&h, "CONTENT-TYPE"), &hs[0]);
    assert_null(tt_http_find_header(&h, "content-typ"));
    assert_null(tt_http_find_header(&h, "content-length"));
}

/* After an error further input is ignored and feed keeps returning -1. */
static void test_error_state_sticks(void **state)
{
    trace t = { 0 };
    tt_http1_parser *p = tt_http1_new(TT_HTTP_REQUEST, &http1_trace_callbacks, &t);
    const char bad[] = "\x01\x02garbage\r\n\r\n";
    assert_int_equal(tt_http1_feed(p, (const uint8_t *)bad, sizeof bad - 1, 1), -1);
    const char good[] = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(tt_http1_feed(p, (const uint8_t *)good, sizeof good - 1, 2), -1);
    tt_http1_gap(p, 10, 3);
    tt_http1_eof(p, true, 4);
    tt_http1_free(p);
    assert_string_equal(t.out.s, "error MALFORMED \"not an HTTP/1.x request\" off=0\n");
    tt_sb_free(&t.out);
    tt_sb_free(&t.body);
}

/* The instants reported for heads and ends. */
typedef struct seen_instants { uint64_t first_ns, head_end_ns, last_ns, last_off; int heads, ends; } seen_instants;

static void instants_on_head(void *ud, const tt_http_head *h)
{
    seen_instants *s = ud;
    s->first_ns = h->first_ns;
    s->head_end_ns = h->head_end_ns;
    s->heads++;
}

static void instants_on_end(void *ud, const tt_http_msg_end *e)
{
    seen_instants *s = ud;
    s->last_ns = e->last_ns;
    s->last_off = e->last_off;
    s->ends++;
}

static void test_head_and_end_instants(void **state)
{
    const char *parts[] = { "\r\nHTTP/1.1 200 OK\r\nCont", "ent-Length: 3\r\n", "\r\nab", "c", "HTTP/1.1 200 OK\r\n\r\nxy" };
    trace t = { 0 };
    tt_http1_parser *p = tt_http1_new(TT_HTTP_RESPONSE, &http1_trace_callbacks, &t);
    for (int i = 0; i < 4; i++) tt_http1_feed(p, (const uint8_t *)parts[i], strlen(parts[i]), 10 * (i + 1));
    tt_http1_free(p);
    assert_string_equal(t.out.s,
                        "head response 200 \"OK\" 1.1 cl=3 chunked=0 coding=identity keep_alive=1 interim=0 off=2..40\n"
                        "  header \"Content-Length\" \"3\"\n"
                        "body off=0 \"abc\"\n"
                        "end COMPLETE last_off=43 body=3 wire=3 gap=0\n");
    tt_sb_free(&t.out);
    tt_sb_free(&t.body);

    static const tt_http_callbacks cb = { instants_on_head, NULL, instants_on_end, NULL };
    seen_instants s = { 0 };
    p = tt_http1_new(TT_HTTP_RESPONSE, &cb, &s);
    for (int i = 0; i < 4; i++) tt_http1_feed(p, (const uint8_t *)parts[i], strlen(parts[i]), 10 * (i + 1));
    assert_int_equal(s.first_ns, 10);
    assert_int_equal(s.head_end_ns, 30);
    assert_int_equal(s.last_ns, 40);
    assert_int_equal(s.last_off, 43);
    /* a close-delimited body: EOF keeps the instant of the last byte, not of the FIN */
    tt_http1_feed(p, (const uint8_t *)parts[4], strlen(parts[4]), 50);
    tt_http1_eof(p, true, 60);
    tt_http1_free(p);
    assert_int_equal(s.heads, 2);
    assert_int_equal(s.ends, 2);
    assert_int_equal(s.first_ns, 50);
    assert_int_equal(s.last_ns, 50);
    assert_int_equal(s.last_off, 43 + strlen(parts[4]));
}

/* A comma-separated header value names a token: case, blanks and empty
 * items aside, a whole item only. */
static void test_header_lists(void **state)
{
    static const struct {
        const char *value, *token;
        bool want;
    } cases[] = {
        {"h2c", "h2c", true},          {"websocket, H2C", "h2c", true}, {" ,h2c\t,", "h2c", true},
        {"h2c-14", "h2c", false},      {"h2", "h2c", false},           {"", "h2c", false},
        {"keep-alive, Upgrade", "upgrade", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_http_header h = {"upgrade", 7, cases[i].value, strlen(cases[i].value)};
        if (tt_http_header_lists(&h, cases[i].token) != cases[i].want)
            fail_msg("\"%s\" lists %s: want %d", cases[i].value, cases[i].token, cases[i].want);
    }
    assert_false(tt_http_header_lists(NULL, "h2c"));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),
        cmocka_unit_test(test_head_size_limit),
        cmocka_unit_test(test_chunk_line_and_trailer_limits),
        cmocka_unit_test(test_many_chunks),
        cmocka_unit_test(test_find_header_case_insensitive),
        cmocka_unit_test(test_header_lists),
        cmocka_unit_test(test_error_state_sticks),
        cmocka_unit_test(test_head_and_end_instants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
