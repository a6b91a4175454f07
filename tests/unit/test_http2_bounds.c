/* test_http2_bounds.c - the passive HTTP/2 framing parser's instants
 * (each callback's, from the feed that completed it), flow-control windows
 * as seen inside on_data, and its bounds: DATA frames of any size, header
 * blocks at and past their limits, the streams it follows at once, and an
 * error state that sticks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "golden.h"
#include "h2_gen.h"
#include "proto/http2.h"

/* ---- instants ---- */

typedef struct timed {
    uint64_t data_ns[16];
    size_t data_len[16];
    int ndata;
    uint64_t h_first, h_last, end_ns;
    int heads;
} timed;

static void ti_headers(void *ud, const tt_h2_headers *h)
{
    timed *t = ud;
    if (h->dir != TT_DIR_S2C) return;
    t->h_first = h->first_ns;
    t->h_last = h->last_ns;
    t->heads++;
}

static void ti_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    timed *t = ud;
    assert_true(t->ndata < 16);
    t->data_ns[t->ndata] = ns;
    t->data_len[t->ndata++] = n;
}

static void ti_end(void *ud, const tt_h2_stream_end *e)
{
    if (e->dir == TT_DIR_S2C) ((timed *)ud)->end_ns = e->mono_ns;
}

static void test_instants(void **state)
{
    gen g;
    g_init(&g, "instants", "", MODE_PRIOR);
    g_open(&g);
    g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    gen r;
    g_init(&r, "r", "", MODE_PRIOR);
    bytes hb = g_hpack(&r, TT_DIR_S2C, H2_RESP_SSE);
    bytes s2c = { 0 };
    h2_frame_head(&s2c, hb.n, TT_H2_HEADERS, TT_H2_FLAG_END_HEADERS, 1);
    put(&s2c, hb.p, hb.n);
    size_t h_end = s2c.n;
    for (int i = 0; i < 3; i++) {
        h2_frame_head(&s2c, strlen(H2_EV[i]), TT_H2_DATA, i == 2 ? TT_H2_FLAG_END_STREAM : 0, 1);
        put(&s2c, H2_EV[i], strlen(H2_EV[i]));
    }
    size_t f1 = h_end + 9 + strlen(H2_EV[0]), f2 = f1 + 9 + strlen(H2_EV[1]);
    timed t = { 0 };
    static const tt_http2_callbacks cb = { .on_headers = ti_headers, .on_data = ti_data, .on_stream_end = ti_end, .on_error = h2_fail_on_error };
    tt_http2_conn *c = tt_http2_new(&cb, &t);
    uint64_t ns = 1;
    h2_feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
    static const uint32_t none[] = { TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS, 1 };
    (void)none;
    uint8_t settings[9] = { 0, 0, 0, TT_H2_SETTINGS, 0, 0, 0, 0, 0 };
    assert_int_equal(tt_http2_feed(c, TT_DIR_S2C, settings, 9, 100), 0);
    /* the HEADERS in two feeds; the first DATA in three; the second completes
     * with the first bytes of the third frame; the third frame's last byte alone */
    size_t pts[] = { 4, h_end, h_end + 5, h_end + 20, f1 + 3, f2 + 2, s2c.n - 1, s2c.n };
    uint64_t at_ns[] = { 200, 210, 300, 310, 320, 400, 500, 600 };
    size_t at = 0;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(tt_http2_feed(c, TT_DIR_S2C, s2c.p + at, pts[i] - at, at_ns[i]), 0);
        at = pts[i];
    }
    tt_http2_free(c);
    assert_int_equal(t.heads, 1);
    assert_int_equal(t.h_first, 200);
    assert_int_equal(t.h_last, 210);
    assert_int_equal(t.ndata, 3);
    assert_int_equal(t.data_ns[0], 320); /* the feed that completed the frame */
    assert_int_equal(t.data_ns[1], 400);
    assert_int_equal(t.data_ns[2], 600);
    assert_int_equal(t.data_len[0], strlen(H2_EV[0]));
    assert_int_equal(t.end_ns, 600);
    free(s2c.p);
    free(hb.p);
    g_free(&r);
    g_free(&g);
}

/* ---- windows, through the getter inside on_data ---- */

typedef struct win_seen {
    tt_http2_conn *c;
    int64_t conn[8], stream[8];
    int n;
} win_seen;

static void win_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    win_seen *w = ud;
    if (dir != TT_DIR_S2C) return;
    assert_true(tt_http2_send_window(w->c, dir, sid, &w->conn[w->n], &w->stream[w->n]));
    w->n++;
}

static void test_windows(void **state)
{
    gen g;
    g_init(&g, "win", "", MODE_PRIOR);
    g_preface(&g);
    static const uint32_t cs[] = { TT_H2_SETTINGS_INITIAL_WINDOW_SIZE, 1000 };
    g_settings(&g, TT_DIR_C2S, cs, 1);
    g_settings(&g, TT_DIR_S2C, H2_S_SETTINGS, 2);
    g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(&g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(&g, TT_DIR_S2C, 1, 0, H2_EV[0]);               /* before the ACK: 65535 */
    g_ack(&g, TT_DIR_S2C);                                   /* now 1000 - 49 */
    g_dataframe(&g, TT_DIR_S2C, 1, 0, H2_EV[1]);
    g_u32_frame(&g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 500);
    g_u32_frame(&g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 0, 7);
    g_padded_data(&g, TT_DIR_S2C, 1, 0, H2_EV[2], 10);
    win_seen w = { 0 };
    static const tt_http2_callbacks cb = { .on_data = win_data, .on_error = h2_fail_on_error };
    w.c = tt_http2_new(&cb, &w);
    uint64_t ns = 1;
    h2_feed_script(w.c, g.sc.p, g.sc.n, 0, false, &ns);
    assert_int_equal(w.n, 3);
    int64_t l0 = (int64_t)strlen(H2_EV[0]), l1 = (int64_t)strlen(H2_EV[1]), l2 = (int64_t)strlen(H2_EV[2]) + 11;
    assert_int_equal(w.stream[0], 65535 - l0);
    assert_int_equal(w.conn[0], 65535 - l0);
    assert_int_equal(w.stream[1], 1000 - l0 - l1);
    assert_int_equal(w.stream[2], 1000 - l0 - l1 + 500 - l2);
    assert_int_equal(w.conn[2], 65535 - l0 - l1 - l2 + 7);
    const tt_h2_dir_stats *st = tt_http2_stats(w.c, TT_DIR_C2S);
    assert_int_equal(st->conn_window_updates, 1);
    assert_int_equal(st->conn_window_credit, 7);
    assert_int_equal(st->stream_window_updates, 1);
    assert_int_equal(st->stream_window_credit, 500);
    assert_int_equal(tt_http2_stats(w.c, TT_DIR_S2C)->pad_bytes, 10);
    tt_http2_free(w.c);
    /* midstream: not known */
    tt_http2_conn *m = tt_http2_new_midstream(NULL, NULL);
    int64_t a, b;
    assert_false(tt_http2_send_window(m, TT_DIR_S2C, 0, &a, &b));
    tt_http2_free(m);
    g_free(&g);
}

/* ---- bounds ---- */

typedef struct piece_seen {
    size_t len[8];
    uint64_t ns[8], off[8];
    int n, errors, ends;
    tt_h2_end how[8];
    tt_h2_headers last;
    size_t last_unknown;
    bool last_skipped, last_truncated;
    size_t last_n;
    char last_value[64];
} piece_seen;

static void ps_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    piece_seen *p = ud;
    assert_true(p->n < 8);
    p->len[p->n] = n;
    p->ns[p->n] = ns;
    p->off[p->n++] = off;
}

static void ps_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off)
{
    ((piece_seen *)ud)->errors++;
}

static void ps_headers(void *ud, const tt_h2_headers *h)
{
    piece_seen *p = ud;
    p->last_unknown = h->n_unknown;
    p->last_skipped = h->skipped;
    p->last_truncated = h->truncated;
    p->last_n = h->n_headers;
    p->last_value[0] = 0;
    if (h->n_headers && !(h->headers[h->n_headers - 1].flags & TT_H2_HDR_VALUE_UNKNOWN))
        snprintf(p->last_value, sizeof p->last_value, "%.*s", (int)h->headers[h->n_headers - 1].value_len,
                 h->headers[h->n_headers - 1].value);
}

static void ps_end(void *ud, const tt_h2_stream_end *e)
{
    piece_seen *p = ud;
    if (p->ends < 8) p->how[p->ends] = e->how;
    p->ends++;
}

static void test_big_data_frame(void **state)
{
    const size_t big = 150000;
    for (int raised = 0; raised < 3; raised++) {
        gen g;
        g_init(&g, "big", "", MODE_PRIOR);
        g_preface(&g);
        static const uint32_t cs[] = { TT_H2_SETTINGS_MAX_FRAME_SIZE, 200000 };
        g_settings(&g, TT_DIR_C2S, cs, raised ? 1 : 0);
        g_settings(&g, TT_DIR_S2C, H2_S_SETTINGS, 1);
        if (raised == 1) g_ack(&g, TT_DIR_S2C); /* raised == 2: not yet acknowledged, still taken */
        g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
        g_headers(&g, TT_DIR_S2C, 1, 0, H2_RESP_JSON);
        piece_seen p = { 0 };
        static const tt_http2_callbacks cb = { .on_data = ps_data, .on_stream_end = ps_end, .on_error = ps_error };
        tt_http2_conn *c = tt_http2_new(&cb, &p);
        uint64_t ns = 1;
        h2_feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
        bytes f = { 0 };
        h2_frame_head(&f, big, TT_H2_DATA, TT_H2_FLAG_END_STREAM, 1);
        uint8_t *pl = calloc(1, big);
        put(&f, pl, big);
        free(pl);
        for (size_t at = 0; at < f.n; at += 1000) {
            size_t n = f.n - at < 1000 ? f.n - at : 1000;
            tt_http2_feed(c, TT_DIR_S2C, f.p + at, n, 10000 + at / 1000);
        }
        if (!raised) {
            assert_int_equal(p.errors, 1);
            assert_int_equal(p.n, 0);
        } else {
            assert_int_equal(p.errors, 0);
            assert_int_equal(p.n, 3);
            assert_int_equal(p.len[0], TT_HTTP2_DATA_PIECE);
            assert_int_equal(p.len[1], TT_HTTP2_DATA_PIECE);
            assert_int_equal(p.len[2], big - 2 * TT_HTTP2_DATA_PIECE);
            assert_int_equal(p.off[1], TT_HTTP2_DATA_PIECE);
            assert_int_equal(p.ns[0], 10000 + (9 + TT_HTTP2_DATA_PIECE) / 1000);
            assert_int_equal(p.ns[2], 10000 + (f.n - 1) / 1000);
        }
        tt_http2_free(c);
        free(f.p);
        g_free(&g);
    }
}

static void hp_lit(bytes *b, uint8_t first, int prefix, uint32_t idx, const char *name, const char *value,
                   size_t vlen)
{
    uint8_t o[8];
    uint32_t max = (1u << prefix) - 1;
    size_t n = 0;
    if (idx < max) o[n++] = (uint8_t)(first | idx);
    else {
        o[n++] = (uint8_t)(first | max);
        uint32_t v = idx - max;
        while (v >= 128) {
            o[n++] = (uint8_t)(0x80 | (v & 0x7f));
            v >>= 7;
        }
        o[n++] = (uint8_t)v;
    }
    put(b, o, n);
    if (name) {
        put8(b, (uint8_t)strlen(name));
        put(b, name, strlen(name));
    }
    if (value) {
        n = 0;
        if (vlen < 127) o[n++] = (uint8_t)vlen;
        else {
            o[n++] = 127;
            size_t v = vlen - 127;
            while (v >= 128) {
                o[n++] = (uint8_t)(0x80 | (v & 0x7f));
                v >>= 7;
            }
            o[n++] = (uint8_t)v;
        }
        put(b, o, n);
        put(b, value, vlen);
    }
}

/* A raw header block on stream sid, in HEADERS + CONTINUATION frames of at most 16384. */
static void feed_block(tt_http2_conn *c, uint32_t sid, const bytes *blk, uint64_t ns)
{
    bytes f = { 0 };
    size_t at = 0;
    do {
        size_t take = blk->n - at < 16384 ? blk->n - at : 16384;
        uint8_t fl = at + take == blk->n ? TT_H2_FLAG_END_HEADERS : 0;
        if (at == 0) fl |= TT_H2_FLAG_END_STREAM;
        h2_frame_head(&f, take, at == 0 ? TT_H2_HEADERS : TT_H2_CONTINUATION, fl, sid);
        put(&f, blk->p + at, take);
        at += take;
    } while (at < blk->n);
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, f.p, f.n, ns), 0);
    free(f.p);
}

static tt_http2_conn *opened(const tt_http2_callbacks *cb, void *ud)
{
    tt_http2_conn *c = tt_http2_new(cb, ud);
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, (const uint8_t *)TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN, 1), 0);
    uint8_t settings[9] = { 0, 0, 0, TT_H2_SETTINGS, 0, 0, 0, 0, 0 };
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, settings, 9, 1), 0);
    return c;
}

static void test_header_block_bounds(void **state)
{
    piece_seen p = { 0 };
    static const tt_http2_callbacks cb = { .on_headers = ps_headers, .on_stream_end = ps_end, .on_error = ps_error };
    tt_http2_conn *c = opened(&cb, &p);
    bytes b = { 0 };
    hp_lit(&b, 0x40, 6, 0, "x-a", "one", 3); /* inserted: index 62 */
    feed_block(c, 1, &b, 2);
    assert_string_equal(p.last_value, "one");
    b.n = 0;
    put8(&b, 0xbe);                          /* 62 */
    feed_block(c, 3, &b, 3);
    assert_string_equal(p.last_value, "one");
    assert_int_equal(p.last_unknown, 0);

    /* a block over the cap: skipped, the table reset */
    b.n = 0;
    char *v = malloc(70000);
    memset(v, 'z', 70000);
    hp_lit(&b, 0x40, 6, 0, "x-big", v, 70000);
    feed_block(c, 5, &b, 4);
    assert_true(p.last_skipped);
    assert_int_equal(p.last_n, 0);
    assert_int_equal(tt_http2_stats(c, TT_DIR_C2S)->hpack_resets, 1);
    b.n = 0;
    put8(&b, 0xbe); /* 62: from before the reset, unknown now */
    feed_block(c, 7, &b, 5);
    assert_false(p.last_skipped);
    assert_int_equal(p.last_unknown, 1);
    b.n = 0;
    hp_lit(&b, 0x40, 6, 0, "x-b", "two", 3);
    put8(&b, 0xbe); /* the entry just inserted */
    feed_block(c, 9, &b, 6);
    assert_int_equal(p.last_unknown, 0);
    assert_string_equal(p.last_value, "two");

    /* more fields than TT_HTTP2_MAX_HEADERS: the list cut, the block decoded */
    b.n = 0;
    for (int i = 0; i < 600; i++) put8(&b, 0x82);
    feed_block(c, 11, &b, 7);
    assert_true(p.last_truncated);
    assert_int_equal(p.last_n, TT_HTTP2_MAX_HEADERS);
    /* decoded bytes bounded: a 4000-byte entry referenced 100 times */
    b.n = 0;
    hp_lit(&b, 0x40, 6, 0, "b", v, 4000);
    for (int i = 0; i < 100; i++) put8(&b, 0xbe);
    hp_lit(&b, 0x40, 6, 0, "x-after", "ok", 2);
    feed_block(c, 13, &b, 8);
    assert_true(p.last_truncated);
    assert_true(p.last_n < 70);
    b.n = 0;
    put8(&b, 0xbe); /* x-after went in: the table is in step */
    feed_block(c, 15, &b, 9);
    assert_false(p.last_truncated);
    assert_string_equal(p.last_value, "ok");
    assert_int_equal(p.errors, 0);
    tt_http2_free(c);
    free(v);
    free(b.p);
}

static void test_stream_limit(void **state)
{
    piece_seen p = { 0 };
    static const tt_http2_callbacks cb = { .on_stream_end = ps_end, .on_error = ps_error };
    tt_http2_conn *c = tt_http2_new_midstream(&cb, &p);
    bytes f = { 0 };
    for (uint32_t i = 0; i <= TT_HTTP2_MAX_STREAMS; i++) {
        f.n = 0;
        h2_frame_head(&f, 1, TT_H2_DATA, 0, 2 * i + 1);
        put8(&f, 'x');
        assert_int_equal(tt_http2_feed(c, TT_DIR_S2C, f.p, f.n, i), 0);
    }
    assert_int_equal(p.ends, 2);
    assert_int_equal(p.how[0], TT_H2_END_LIMIT);
    assert_int_equal(p.how[1], TT_H2_END_LIMIT);
    tt_http2_eof(c, TT_DIR_S2C, true, 99999);
    assert_int_equal(p.ends, 2 + TT_HTTP2_MAX_STREAMS);
    tt_http2_eof(c, TT_DIR_C2S, true, 99999);
    assert_int_equal(p.ends, 2 + 2 * TT_HTTP2_MAX_STREAMS);
    assert_int_equal(p.errors, 0);
    tt_http2_free(c);
    free(f.p);
}

static void test_error_state_sticks(void **state)
{
    trace t = { 0 };
    tt_sb_printf(&t.out, "%s", "");
    tt_http2_conn *c = tt_http2_new(&h2_trace_cb, &t);
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, (const uint8_t *)"PRI * HTTP/1.1", 14, 1), -1);
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, (const uint8_t *)TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN, 2), -1);
    tt_http2_gap(c, TT_DIR_C2S, 10, 3);
    tt_http2_eof(c, TT_DIR_C2S, true, 4);
    tt_http2_eof(c, TT_DIR_S2C, true, 5);
    assert_int_equal(tt_http2_feed(c, TT_DIR_S2C, (const uint8_t *)"x", 1, 6), -1);
    tt_http2_free(c);
    assert_string_equal(t.out.s, "error c2s PREFACE \"not the HTTP/2 client preface\" off=0\n");
    tt_sb_free(&t.out);
    /* a bad HTTP2-Settings value: -1, the parser usable */
    c = tt_http2_new(NULL, NULL);
    assert_int_equal(tt_http2_start_upgrade(c, "AAE!", 4, 1), -1);
    assert_int_equal(tt_http2_feed(c, TT_DIR_C2S, (const uint8_t *)TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN, 2), 0);
    tt_http2_free(c);
    c = tt_http2_new(NULL, NULL);
    assert_int_equal(tt_http2_start_upgrade(c, "AAMAAABkAAQAoAAAAAIAAAAA", 24, 1), 0); /* curl's */
    assert_int_equal(tt_http2_start_upgrade(c, NULL, 0, 1), 0);
    tt_http2_free(c);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instants),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_big_data_frame),
        cmocka_unit_test(test_header_block_bounds),
        cmocka_unit_test(test_stream_limit),
        cmocka_unit_test(test_error_state_sticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
