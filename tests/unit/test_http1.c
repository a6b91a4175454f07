/* test_http1.c - the incremental HTTP/1.1 parser: golden cases (whole, split
 * at every byte, byte by byte, from guard-page copies), coded bodies built
 * here with zlib, instants of body bytes, decompression bounds. */
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
#include "proto/content_decode.h"
#include "proto/http1.h"

/* ---- trace: one line per callback, consecutive body pieces coalesced ---- */

typedef struct trace {
    tt_strbuf out;
    tt_strbuf body;       /* pending coalesced body bytes */
    bool body_pending;
    uint64_t body_start, body_next;
} trace;

static const char *coding_str(tt_content_coding c)
{
    switch (c) {
    case TT_CODING_IDENTITY: return "identity";
    case TT_CODING_GZIP: return "gzip";
    case TT_CODING_DEFLATE: return "deflate";
    default: return "other";
    }
}

static const char *end_str(tt_http_end e)
{
    switch (e) {
    case TT_HTTP_END_COMPLETE: return "COMPLETE";
    case TT_HTTP_END_EOF: return "EOF";
    case TT_HTTP_END_TRUNCATED: return "TRUNCATED";
    case TT_HTTP_END_GAP: return "GAP";
    default: return "ERROR";
    }
}

static const char *error_str(tt_http_error e)
{
    switch (e) {
    case TT_HTTP_ERR_MALFORMED: return "MALFORMED";
    case TT_HTTP_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case TT_HTTP_ERR_TOO_LARGE: return "TOO_LARGE";
    case TT_HTTP_ERR_DECODE: return "DECODE";
    case TT_HTTP_ERR_GAP: return "GAP";
    default: return "NONE";
    }
}

static void flush_body(trace *t)
{
    if (!t->body_pending) return;
    tt_sb_printf(&t->out, "body off=%llu \"", (unsigned long long)t->body_start);
    if (t->body.len) tt_sb_escaped(&t->out, t->body.s, t->body.len);
    tt_sb_printf(&t->out, "\"\n");
    t->body.len = 0;
    t->body_pending = false;
}

static void on_head(void *ud, const tt_http_head *h)
{
    trace *t = ud;
    flush_body(t);
    tt_strbuf *o = &t->out;
    if (h->role == TT_HTTP_REQUEST) {
        tt_sb_printf(o, "head request \"");
        tt_sb_escaped(o, h->method, h->method_len);
        tt_sb_printf(o, "\" \"");
        tt_sb_escaped(o, h->target, h->target_len);
        tt_sb_printf(o, "\"");
    } else {
        tt_sb_printf(o, "head response %d \"", h->status);
        tt_sb_escaped(o, h->reason, h->reason_len);
        tt_sb_printf(o, "\"");
    }
    tt_sb_printf(o, " 1.%d cl=%lld chunked=%d coding=%s keep_alive=%d interim=%d off=%llu..%llu\n",
                 h->version_minor, (long long)h->content_length, h->chunked, coding_str(h->coding),
                 h->keep_alive, h->interim, (unsigned long long)h->first_off,
                 (unsigned long long)h->head_end_off);
    for (size_t i = 0; i < h->n_headers; i++) {
        tt_sb_printf(o, "  header \"");
        tt_sb_escaped(o, h->headers[i].name, h->headers[i].name_len);
        tt_sb_printf(o, "\" \"");
        tt_sb_escaped(o, h->headers[i].value, h->headers[i].value_len);
        tt_sb_printf(o, "\"\n");
    }
}

static void on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t ns)
{
    trace *t = ud;
    assert_true(len > 0);
    if (t->body_pending && body_off != t->body_next) flush_body(t);
    if (!t->body_pending) {
        t->body_pending = true;
        t->body_start = body_off;
        if (!t->body.s) tt_sb_printf(&t->body, "%s", "");
    }
    size_t need = t->body.len + len + 1;
    if (need > t->body.cap) {
        size_t cap = t->body.cap ? t->body.cap : 256;
        while (cap < need) cap *= 2;
        t->body.s = realloc(t->body.s, cap);
        t->body.cap = cap;
    }
    memcpy(t->body.s + t->body.len, data, len);
    t->body.len += len;
    t->body_next = body_off + len;
}

static void on_end(void *ud, const tt_http_msg_end *e)
{
    trace *t = ud;
    flush_body(t);
    tt_sb_printf(&t->out, "end %s last_off=%llu body=%llu wire=%llu gap=%llu\n", end_str(e->how),
                 (unsigned long long)e->last_off, (unsigned long long)e->body_bytes,
                 (unsigned long long)e->wire_body_bytes, (unsigned long long)e->gap_bytes);
}

static void on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    trace *t = ud;
    flush_body(t);
    tt_sb_printf(&t->out, "error %s \"%s\" off=%llu\n", error_str(code), msg, (unsigned long long)off);
}

static const tt_http_callbacks trace_callbacks = { on_head, on_body, on_end, on_error };

/* ---- running one case under one way of cutting it ---- */

typedef struct run_opts {
    tt_http_role role;
    bool eof, eof_clean;
    bool has_gap;
    size_t gap_at;
    uint64_t gap_len;
    char expect[64]; /* queued responses: h = HEAD, b = with body, c = CONNECT */
} run_opts;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Feed in pieces ending at the given cut positions; returns the trace (caller frees). */
static char *run_cuts(const uint8_t *in, size_t n, const run_opts *o, const size_t *cuts, size_t ncuts)
{
    size_t *pts = malloc((ncuts + 3) * sizeof *pts);
    size_t np = 0;
    for (size_t i = 0; i < ncuts; i++) pts[np++] = cuts[i];
    if (o->has_gap) pts[np++] = o->gap_at;
    pts[np++] = n;
    qsort(pts, np, sizeof *pts, cmp_size);

    trace t = { 0 };
    tt_sb_printf(&t.out, "%s", "");
    tt_http1_parser *p = tt_http1_new(o->role, &trace_callbacks, &t);
    assert_non_null(p);
    for (const char *e = o->expect; *e; e++) {
        if (*e == 'c') tt_http1_expect_connect(p);
        else tt_http1_expect_response(p, *e == 'h');
    }
    size_t at = 0;
    uint64_t ns = 1000;
    bool gap_done = !o->has_gap;
    for (size_t i = 0; i < np; i++) {
        if (!gap_done && o->gap_at == at) {
            tt_http1_gap(p, o->gap_len, ns++);
            gap_done = true;
        }
        size_t end = pts[i];
        if (end <= at) continue;
        uint8_t *g = tt_guard_copy(in + at, end - at);
        assert_non_null(g);
        tt_http1_feed(p, g, end - at, ns++);
        tt_guard_free(g, end - at);
        at = end;
    }
    if (!gap_done) tt_http1_gap(p, o->gap_len, ns++);
    if (o->eof) tt_http1_eof(p, o->eof_clean, ns++);
    tt_http1_free(p);
    free(pts);
    flush_body(&t);
    tt_sb_free(&t.body);
    return t.out.s;
}

/* Whole, split at every k, byte by byte: every trace must equal expect. */
static int check_all_cuts(const uint8_t *in, size_t n, const run_opts *o, const char *expect, const char *name)
{
    int bad = 0;
    char *whole = run_cuts(in, n, o, NULL, 0);
    if (getenv("HTTP1_PRINT")) fprintf(stderr, "=== %s\n%s", name, whole);
    if (strcmp(whole, expect) != 0) {
        fprintf(stderr, "%s (whole): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, whole);
        bad++;
    }
    free(whole);
    for (size_t k = 1; k < n && bad < 3; k++) {
        char *s = run_cuts(in, n, o, &k, 1);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (split at %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k,
                    expect, s);
            bad++;
        }
        free(s);
    }
    size_t *all = malloc((n + 1) * sizeof *all);
    for (size_t k = 0; k < n; k++) all[k] = k + 1;
    char *s = run_cuts(in, n, o, all, n);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (byte by byte): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    free(all);
    return bad;
}

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
    char *trace_text = run_cuts(g->input, g->input_len, o, NULL, 0);
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
        bad += check_all_cuts(g.input, g.input_len, &o, g.expect, g.path);
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(bad, 0);
}

/* ---- coded bodies built here ---- */

typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;

static void put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void puts_(bytes *b, const char *s) { put(b, s, strlen(s)); }

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
    assert_int_equal(check_all_cuts(m->p, m->n, &o, expect, name), 0);
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
    assert_int_equal(check_all_cuts(m.p, m.n, &o, expect, "gzip content-length"), 0);
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
    char *whole = run_cuts(m.p, m.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: incorrect data check\""));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_null(strstr(whole, "COMPLETE"));
    assert_int_equal(check_all_cuts(m.p, m.n, &o, whole, "gzip bad crc"), 0);
    free(whole);

    /* damage at the first deflate block header */
    memcpy(m.p + hl, z.p, z.n);
    m.p[hl + 10] = 0xff;
    whole = run_cuts(m.p, m.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: "));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_int_equal(check_all_cuts(m.p, m.n, &o, whole, "gzip bad block"), 0);
    free(whole);

    /* not gzip at all */
    bytes bad = { 0 };
    puts_(&bad, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello");
    whole = run_cuts(bad.p, bad.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"corrupt gzip body: incorrect header check\""));
    assert_non_null(strstr(whole, "\nend ERROR "));
    assert_int_equal(check_all_cuts(bad.p, bad.n, &o, whole, "not gzip"), 0);
    free(whole);

    /* a gzip body cut short though its Content-Length said it was whole */
    bad.n = 0;
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", z.n - 4);
    puts_(&bad, head);
    put(&bad, z.p, z.n - 4);
    whole = run_cuts(bad.p, bad.n, &o, NULL, 0);
    assert_non_null(strstr(whole, "error DECODE \"compressed body ends inside its stream\""));
    assert_int_equal(check_all_cuts(bad.p, bad.n, &o, whole, "gzip short"), 0);
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

/* Large inputs: whole, byte by byte, and split at every 509th byte. */
static int check_sampled_cuts(const uint8_t *in, size_t n, const run_opts *o, const char *expect, const char *name)
{
    int bad = 0;
    size_t *all = malloc((n + 1) * sizeof *all);
    for (size_t k = 0; k < n; k++) all[k] = k + 1;
    for (size_t k = 0; k <= n; k += 509) {
        char *s = k == 0 ? run_cuts(in, n, o, all, n) : run_cuts(in, n, o, &k, 1);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (cut %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k, expect, s);
            bad++;
        }
        free(s);
    }
    char *s = run_cuts(in, n, o, NULL, 0);
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
    char *whole = run_cuts(m.p, m.n, &o, NULL, 0);
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
    char *whole = run_cuts(m.p, m.n, &o, NULL, 0);
    assert_string_equal(whole, expect.s);
    free(whole);
    size_t cuts[] = { 100, 1000, 50000, 100000 };
    whole = run_cuts(m.p, m.n, &o, cuts, 4);
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
    tt_http1_parser *p = tt_http1_new(TT_HTTP_REQUEST, &trace_callbacks, &t);
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
    tt_http1_parser *p = tt_http1_new(TT_HTTP_RESPONSE, &trace_callbacks, &t);
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
        cmocka_unit_test(test_gzip_chunked),
        cmocka_unit_test(test_deflate_zlib_wrapped),
        cmocka_unit_test(test_deflate_raw),
        cmocka_unit_test(test_gzip_content_length),
        cmocka_unit_test(test_gzip_corrupt),
        cmocka_unit_test(test_body_instants),
        cmocka_unit_test(test_decompression_bomb_bounded),
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
