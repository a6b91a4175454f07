/* test_http1_coding.c - the incremental HTTP/1.1 parser's coded bodies:
 * gzip and deflate (zlib-wrapped and raw) bodies built here with zlib,
 * chunked and by Content-Length, corrupt ones, the instants of body bytes,
 * and decompression bounded however much the body expands. */
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

/* ---- coded bodies built here ---- */

/* Compress `parts` with window_bits (31 gzip, 15 zlib, -15 raw), a sync
 * flush after each part; *bounds gets the compressed end of each part. */
static bytes compress_parts(const char *const *parts, size_t nparts, int window_bits, size_t *bounds)
{
    z_stream zs = { 0 };
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    bytes out = { 0 };
    uint8_t buf[4096];
    for (size_t i = 0; i < nparts; i++) {
        zs.next_in = (Bytef *)(uintptr_t)parts[i];
        zs.avail_in = (uInt)strlen(parts[i]);
        int flush = i + 1 == nparts ? Z_FINISH : Z_SYNC_FLUSH;
        int rc;
        do {
            zs.next_out = buf;
            zs.avail_out = sizeof buf;
            rc = deflate(&zs, flush);
            put(&out, buf, sizeof buf - zs.avail_out);
        } while (zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
        if (bounds) bounds[i] = out.n;
    }
    deflateEnd(&zs);
    return out;
}

static void put_chunk(bytes *b, const uint8_t *d, size_t n)
{
    char line[32];
    snprintf(line, sizeof line, "%zx\r\n", n);
    puts_(b, line);
    put(b, d, n);
    puts_(b, "\r\n");
}

static const char *const sse_parts[] = {
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
    "data: [DONE]\n\n",
};
#define SSE_TEXT                                                                                      \
    "data: {\\\"choices\\\":[{\\\"delta\\\":{\\\"content\\\":\\\"Hel\\\"}}]}\\n\\n"                   \
    "data: {\\\"choices\\\":[{\\\"delta\\\":{\\\"content\\\":\\\"lo\\\"}}]}\\n\\ndata: [DONE]\\n\\n"

static bytes gzip_chunked_response(int window_bits, const char *coding_header)
{
    size_t bounds[3];
    bytes z = compress_parts(sse_parts, 3, window_bits, bounds);
    bytes m = { 0 };
    puts_(&m, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: ");
    puts_(&m, coding_header);
    puts_(&m, "\r\nTransfer-Encoding: chunked\r\n\r\n");
    size_t prev = 0;
    for (size_t i = 0; i < 3; i++) {
        put_chunk(&m, z.p + prev, bounds[i] - prev);
        prev = bounds[i];
    }
    puts_(&m, "0\r\n\r\n");
    free(z.p);
    return m;
}

static void expect_coded(bytes *m, const char *coding, size_t head_len, const char *name)
{
    char expect[2048];
    snprintf(expect, sizeof expect,
             "head response 200 \"OK\" 1.1 cl=-1 chunked=1 coding=%s keep_alive=1 interim=0 off=0..%zu\n"
             "  header \"Content-Type\" \"text/event-stream\"\n"
             "  header \"Content-Encoding\" \"%s\"\n"
             "  header \"Transfer-Encoding\" \"chunked\"\n"
             "body off=0 \"" SSE_TEXT "\"\n"
             "end COMPLETE last_off=%zu body=%zu wire=%zu gap=0\n",
             coding, head_len, coding, m->n,
             strlen(sse_parts[0]) + strlen(sse_parts[1]) + strlen(sse_parts[2]), m->n - head_len);
    run_opts o = { .role = TT_HTTP_RESPONSE };
    assert_int_equal(http1_check_all_cuts(m->p, m->n, &o, expect, name), 0);
}

static size_t head_length(const bytes *m)
{
    const uint8_t *e = memmem(m->p, m->n, "\r\n\r\n", 4);
    assert_non_null(e);
    return (size_t)(e - m->p) + 4;
}

static void test_gzip_chunked(void **state)
{
    bytes m = gzip_chunked_response(16 + 15, "gzip");
    expect_coded(&m, "gzip", head_length(&m), "gzip chunked");
    free(m.p);
}

static void test_deflate_zlib_wrapped(void **state)
{
    bytes m = gzip_chunked_response(15, "deflate");
    expect_coded(&m, "deflate", head_length(&m), "deflate zlib-wrapped");
    free(m.p);
}

static void test_deflate_raw(void **state)
{
    bytes m = gzip_chunked_response(-15, "deflate");
    expect_coded(&m, "deflate", head_length(&m), "deflate raw");
    free(m.p);
}

static void test_gzip_content_length(void **state)
{
    bytes z = compress_parts(sse_parts, 3, 31, NULL);
    bytes m = { 0 };
    char head[128];
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: x-gzip\r\nContent-Length: %zu\r\n\r\n", z.n);
    puts_(&m, head);
    put(&m, z.p, z.n);
    puts_(&m, "HTTP/1.1 204 No Content\r\n\r\n");
    size_t hl = strlen(head);
    char expect[2048];
    snprintf(expect, sizeof expect,
             "head response 200 \"OK\" 1.1 cl=%zu chunked=0 coding=gzip keep_alive=1 interim=0 off=0..%zu\n"
             "  header \"Content-Encoding\" \"x-gzip\"\n"
             "  header \"Content-Length\" \"%zu\"\n"
             "body off=0 \"" SSE_TEXT "\"\n"
             "end COMPLETE last_off=%zu body=%zu wire=%zu gap=0\n"
             "head response 204 \"No Content\" 1.1 cl=-1 chunked=0 coding=identity keep_alive=1 interim=0 "
             "off=%zu..%zu\n"
             "end COMPLETE last_off=%zu body=0 wire=0 gap=0\n",
             z.n, hl, z.n, hl + z.n, strlen(sse_parts[0]) + strlen(sse_parts[1]) + strlen(sse_parts[2]), z.n,
             hl + z.n, m.n, m.n);
    run_opts o = { .role = TT_HTTP_RESPONSE };
    assert_int_equal(http1_check_all_cuts(m.p, m.n, &o, expect, "gzip content-length"), 0);
    free(z.p);
    free(m.p);
}

/* Corrupt gzip: what was decoded before the damage, then DECODE / ERROR,
 * the same however the stream is cut. */
static void test_gzip_corrupt(void **state)
{
    bytes z = compress_parts(sse_parts, 3, 31, NULL);
    bytes m = { 0 };
    char head[128];
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", z.n);
    puts_(&m, head);
    size_t hl = m.n;
    put(&m, z.p, z.n);
    m.p[m.n - 6] ^= 0x55; /* inside the CRC-32 trailer */
    run_opts o = { .role = TT_HTTP_RESPONSE };
    char *whole = http1_run_cuts(m.p, m.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: incorrect data check\""));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_null(strstr(whole, "COMPLETE"));
    assert_int_equal(http1_check_all_cuts(m.p, m.n, &o, whole, "gzip bad crc"), 0);
    free(whole);

    /* damage at the first deflate block header */
    memcpy(m.p + hl, z.p, z.n);
    m.p[hl + 10] = 0xff;
    whole = http1_run_cuts(m.p, m.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: "));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_int_equal(http1_check_all_cuts(m.p, m.n, &o, whole, "gzip bad block"), 0);
    free(whole);

    /* not gzip at all */
    bytes bad = { 0 };
    puts_(&bad, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello");
    whole = http1_run_cuts(bad.p, bad.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: incorrect header check\""));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_int_equal(http1_check_all_cuts(bad.p, bad.n, &o, whole, "not gzip"), 0);
    free(whole);

    /* a gzip body cut short though its Content-Length said it was whole */
    bad.n = 0;
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", z.n - 4);
    puts_(&bad, head);
    put(&bad, z.p, z.n - 4);
    whole = http1_run_cuts(bad.p, bad.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"compressed body ends inside its stream\""));
    assert_int_equal(http1_check_all_cuts(bad.p, bad.n, &o, whole, "gzip short"), 0);
    free(whole);
    free(bad.p);
    free(z.p);
    free(m.p);
}

/* ---- instants ---- */

typedef struct timed_body {
    uint8_t data[4096];
    uint64_t ns[4096];
    size_t n;
    int ends;
} timed_body;

static void timed_on_body(void *ud, const uint8_t *d, size_t len, uint64_t off, uint64_t ns)
{
    timed_body *t = ud;
    assert_int_equal(off, t->n);
    assert_true(t->n + len <= sizeof t->data);
    for (size_t i = 0; i < len; i++) {
        t->data[t->n] = d[i];
        t->ns[t->n++] = ns;
    }
}

static void timed_on_end(void *ud, const tt_http_msg_end *e)
{
    timed_body *t = ud;
    assert_int_equal(e->how, TT_HTTP_END_COMPLETE);
    t->ends++;
}

/* Feed `m` cut at `cuts` (ascending), feed i at instant 100*(i+1); check every
 * decoded byte of sse_parts[j] carries instant expected_ns[j]. */
static void check_instants(const bytes *m, const size_t *cuts, size_t ncuts, const uint64_t *expected_ns)
{
    static const tt_http_callbacks cb = { NULL, timed_on_body, timed_on_end, NULL };
    timed_body *t = calloc(1, sizeof *t);
    tt_http1_parser *p = tt_http1_new(TT_HTTP_RESPONSE, &cb, t);
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : m->n;
        uint8_t *g = tt_guard_copy(m->p + at, end - at);
        assert_int_equal(tt_http1_feed(p, g, end - at, 100 * (i + 1)), 0);
        tt_guard_free(g, end - at);
        at = end;
    }
    tt_http1_free(p);
    assert_int_equal(t->ends, 1);
    size_t k = 0;
    for (size_t j = 0; j < 3; j++) {
        size_t len = strlen(sse_parts[j]);
        assert_true(k + len <= t->n);
        assert_memory_equal(t->data + k, sse_parts[j], len);
        for (size_t i = 0; i < len; i++) assert_int_equal(t->ns[k + i], expected_ns[j]);
        k += len;
    }
    assert_int_equal(k, t->n);
    free(t);
}

/* Position just past the n-th occurrence of "\r\n" after `from`. */
static size_t after_crlf(const bytes *m, size_t from, int nth)
{
    for (size_t i = from; i + 1 < m->n; i++)
        if (m->p[i] == '\r' && m->p[i + 1] == '\n' && --nth == 0) return i + 2;
    fail();
    return 0;
}

static void test_body_instants(void **state)
{
    /* identity chunked: each feed carries one chunk (and the next size line) */
    bytes m = { 0 };
    puts_(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (size_t i = 0; i < 3; i++) put_chunk(&m, (const uint8_t *)sse_parts[i], strlen(sse_parts[i]));
    puts_(&m, "0\r\n\r\n");
    size_t hl = head_length(&m);
    size_t c1 = after_crlf(&m, hl, 2), c2 = after_crlf(&m, c1, 2);
    size_t cuts[] = { hl, c1, c2 };
    uint64_t want[] = { 200, 300, 400 };
    check_instants(&m, cuts, 3, want);

    /* a chunk split across feeds: its bytes carry each feed's instant */
    {
        static const tt_http_callbacks cb = { NULL, timed_on_body, timed_on_end, NULL };
        timed_body *t = calloc(1, sizeof *t);
        tt_http1_parser *p = tt_http1_new(TT_HTTP_RESPONSE, &cb, t);
        size_t mid = hl + 4 + 10;
        assert_int_equal(tt_http1_feed(p, m.p, mid, 7), 0);
        assert_int_equal(tt_http1_feed(p, m.p + mid, m.n - mid, 9), 0);
        assert_int_equal(t->ns[0], 7);
        assert_int_equal(t->ns[9], 7);
        assert_int_equal(t->ns[10], 9);
        tt_http1_free(p);
        free(t);
    }
    free(m.p);

    /* gzip: decoded bytes carry the instant of the compressed bytes' feed */
    const int windows[] = { 31, 15, -15 };
    const char *names[] = { "gzip", "deflate", "deflate" };
    for (int w = 0; w < 3; w++) {
        bytes g = gzip_chunked_response(windows[w], names[w]);
        hl = head_length(&g);
        c1 = after_crlf(&g, hl, 2);
        c2 = after_crlf(&g, c1, 2);
        size_t gcuts[] = { hl, c1, c2 };
        check_instants(&g, gcuts, 3, want);
        free(g.p);
    }
}

/* ---- bounds ---- */

typedef struct bomb_sink { uint64_t total; size_t largest; int ends; tt_http_end how; } bomb_sink;

static void bomb_on_body(void *ud, const uint8_t *d, size_t len, uint64_t off, uint64_t ns)
{
    bomb_sink *b = ud;
    assert_int_equal(off, b->total);
    b->total += len;
    if (len > b->largest) b->largest = len;
}

static void bomb_on_end(void *ud, const tt_http_msg_end *e)
{
    bomb_sink *b = ud;
    b->ends++;
    b->how = e->how;
}

static void test_decompression_bomb_bounded(void **state)
{
    const size_t plain = 32u << 20;
    char *zeros = calloc(1, plain + 1);
    memset(zeros, 'A', plain);
    const char *parts[] = { zeros };
    bytes z = compress_parts(parts, 1, 31, NULL);
    free(zeros);
    assert_true(z.n < plain / 500);
    bytes m = { 0 };
    char head[128];
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", z.n);
    puts_(&m, head);
    put(&m, z.p, z.n);
    bomb_sink b = { 0 };
    static const tt_http_callbacks cb = { NULL, bomb_on_body, bomb_on_end, NULL };
    tt_http1_parser *p = tt_http1_new(TT_HTTP_RESPONSE, &cb, &b);
    assert_int_equal(tt_http1_feed(p, m.p, m.n, 1), 0);
    tt_http1_free(p);
    assert_int_equal(b.total, plain);
    assert_true(b.largest <= TT_DECODE_PIECE);
    assert_int_equal(b.ends, 1);
    assert_int_equal(b.how, TT_HTTP_END_COMPLETE);
    free(z.p);
    free(m.p);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gzip_chunked),
        cmocka_unit_test(test_deflate_zlib_wrapped),
        cmocka_unit_test(test_deflate_raw),
        cmocka_unit_test(test_gzip_content_length),
        cmocka_unit_test(test_gzip_corrupt),
        cmocka_unit_test(test_body_instants),
        cmocka_unit_test(test_decompression_bomb_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
