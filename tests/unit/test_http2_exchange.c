/* test_http2_exchange.c - the passive HTTP/2 framing parser against
 * nghttp2 itself: a real exchange between an nghttp2 client session and
 * server session in memory, checked against what the sessions themselves
 * received; HPACK against the deflater with random header sets, from the
 * start and from the middle (nothing ever decoded wrong). */
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

/* ---- a real exchange: nghttp2 client and server sessions in memory ---- */

#define MAX_TS 32

typedef struct view_stream {
    uint32_t id;
    tt_strbuf hdr[2];  /* "name: value\n" for every field of every block */
    bytes data[2];
    int end[2];        /* 1 END_STREAM seen */
    uint32_t close_code;
    bool closed;
    unsigned max_frames; /* most frames in one header block (parser's view) */
} view_stream;

typedef struct view {
    view_stream s[MAX_TS];
    int n;
} view;

static view_stream *vs(view *v, uint32_t id)
{
    for (int i = 0; i < v->n; i++)
        if (v->s[i].id == id) return &v->s[i];
    assert_true(v->n < MAX_TS);
    view_stream *s = &v->s[v->n++];
    memset(s, 0, sizeof *s);
    s->id = id;
    for (int d = 0; d < 2; d++) tt_sb_printf(&s->hdr[d], "%s", "");
    return s;
}

static void view_free(view *v)
{
    for (int i = 0; i < v->n; i++)
        for (int d = 0; d < 2; d++) {
            tt_sb_free(&v->s[i].hdr[d]);
            free(v->s[i].data[d].p);
        }
}

typedef struct world {
    nghttp2_session *cli, *srv;
    gen g;
    view truth;
    uint32_t cancel_id;
    bool cancelled;
    int events[MAX_TS * 2];
    size_t event_off[MAX_TS * 2];
} world;

static const char *const SSE_EVENTS[] = {
    "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"The\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\" quick\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\" brown fox jumps over the lazy dog, again and again "
    "and again, so that the body needs more than one flow-control window\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":12}}\n\n",
    "data: [DONE]\n\n",
};
#define N_SSE_EVENTS 6
#define SSE_ROUNDS 12

static ssize_t srv_read(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *ud)
{
    world *w = ud;
    int *k = &w->events[sid];          /* events sent whole */
    size_t *at = &w->event_off[sid];   /* bytes of the next one already sent */
    const char *ev = SSE_EVENTS[*k % N_SSE_EVENTS];
    size_t n = strlen(ev) - *at;
    if (n > len) n = len;              /* the flow-control window cuts it */
    memcpy(buf, ev + *at, n);
    *at += n;
    if (*at == strlen(ev)) {
        *at = 0;
        if (++*k == N_SSE_EVENTS * SSE_ROUNDS) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            if (sid == 7) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM; /* trailers follow */
        }
    }
    return (ssize_t)n;
}

static ssize_t cli_read(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *ud)
{
    size_t n = strlen(H2_BODY);
    memcpy(buf, H2_BODY, n);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static nghttp2_nv mknv(const char *n, const char *v)
{
    return (nghttp2_nv){ (uint8_t *)(uintptr_t)n, (uint8_t *)(uintptr_t)v, strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE };
}

static int on_header_cb(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                        const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    world *w = ud;
    bool server = s == w->srv;
    tt_direction dir = server ? TT_DIR_C2S : TT_DIR_S2C;
    view_stream *v = vs(&w->truth, (uint32_t)f->hd.stream_id);
    tt_sb_printf(&v->hdr[dir], "%.*s: %.*s\n", (int)nl, name, (int)vl, value);
    return 0;
}

static int on_chunk_cb(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *d, size_t n, void *ud)
{
    world *w = ud;
    bool server = s == w->srv;
    view_stream *v = vs(&w->truth, (uint32_t)sid);
    put(&v->data[server ? TT_DIR_C2S : TT_DIR_S2C], d, n);
    if (!server && (uint32_t)sid == w->cancel_id && !w->cancelled) {
        w->cancelled = true;
        assert_int_equal(nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL), 0);
    }
    return 0;
}

static void respond(world *w, int32_t sid)
{
    nghttp2_nv nv[] = { mknv(":status", "200"), mknv("content-type", "text/event-stream"),
                        mknv("cache-control", "no-cache"), mknv("x-request-id", sid % 4 == 1 ? "r-a" : "r-b") };
    nghttp2_data_provider dp = { .read_callback = srv_read };
    assert_int_equal(nghttp2_submit_response(w->srv, sid, nv, 4, &dp), 0);
    if (sid == 7) {
        nghttp2_nv tr[] = { mknv("grpc-status", "0"), mknv("x-usage-tokens", "17") };
        assert_int_equal(nghttp2_submit_trailer(w->srv, sid, tr, 2), 0);
    }
}

static int on_frame_recv_cb(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    world *w = ud;
    bool server = s == w->srv;
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        vs(&w->truth, (uint32_t)f->hd.stream_id)->end[server ? TT_DIR_C2S : TT_DIR_S2C] = 1;
        if (server) respond(w, f->hd.stream_id);
    }
    return 0;
}

static int on_close_cb(nghttp2_session *s, int32_t sid, uint32_t code, void *ud)
{
    world *w = ud;
    if (s == w->cli && code) {
        view_stream *v = vs(&w->truth, (uint32_t)sid);
        v->closed = true;
        v->close_code = code;
    }
    return 0;
}

static ssize_t pad_cb(nghttp2_session *s, const nghttp2_frame *f, size_t max, void *ud)
{
    size_t want = f->hd.length + (f->hd.stream_id % 3) * 5;
    return (ssize_t)(want < max ? want : max);
}

static void exchange(world *w)
{
    for (int round = 0; round < 10000; round++) {
        bool progress = false;
        for (int side = 0; side < 2; side++) {
            nghttp2_session *from = side == 0 ? w->cli : w->srv, *to = side == 0 ? w->srv : w->cli;
            const uint8_t *p;
            ssize_t n;
            while ((n = nghttp2_session_mem_send(from, &p)) > 0) {
                g_data(&w->g, side == 0 ? TT_DIR_C2S : TT_DIR_S2C, p, (size_t)n);
                assert_int_equal(nghttp2_session_mem_recv(to, p, (size_t)n), n);
                progress = true;
            }
            assert_true(n == 0);
        }
        if (!progress) return;
    }
    fail();
}

static int32_t request(world *w, const char *path, bool body, bool big)
{
    static char bigval[20001];
    memset(bigval, 'v', 20000);
    nghttp2_nv nv[] = { mknv(":method", body ? "POST" : "GET"), mknv(":scheme", "http"),
                        mknv(":authority", "localhost:8000"), mknv(":path", path),
                        mknv("content-type", "application/json"), mknv("user-agent", "nghttp2-test"),
                        mknv("x-big", bigval) };
    nghttp2_data_provider dp = { .read_callback = cli_read };
    int32_t sid = nghttp2_submit_request(w->cli, NULL, nv, big ? 7 : 6, body ? &dp : NULL, NULL);
    assert_true(sid > 0);
    return sid;
}

/* the parser's view */
static void pv_headers(void *ud, const tt_h2_headers *h)
{
    view_stream *v = vs(ud, h->stream_id);
    assert_int_equal(h->n_unknown, 0);
    assert_false(h->truncated || h->skipped);
    for (size_t i = 0; i < h->n_headers; i++)
        tt_sb_printf(&v->hdr[h->dir], "%.*s: %.*s\n", (int)h->headers[i].name_len, h->headers[i].name,
                     (int)h->headers[i].value_len, h->headers[i].value);
    if (h->frames > v->max_frames) v->max_frames = h->frames;
}

static void pv_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    view_stream *v = vs(ud, sid);
    assert_int_equal(off, v->data[dir].n);
    put(&v->data[dir], d, n);
}

static void pv_end(void *ud, const tt_h2_stream_end *e)
{
    view_stream *v = vs(ud, e->stream_id);
    assert_int_equal(v->end[e->dir], 0);
    v->end[e->dir] = e->how == TT_H2_END_STREAM ? 1 : e->how == TT_H2_END_RST ? 2 : 3;
    if (e->how == TT_H2_END_RST) {
        v->closed = true;
        v->close_code = e->error_code;
    }
}

static void compare_view(const view *truth, const view *seen, uint32_t cancel_id)
{
    for (int i = 0; i < truth->n; i++) {
        const view_stream *t = &truth->s[i];
        const view_stream *p = NULL;
        for (int j = 0; j < seen->n; j++)
            if (seen->s[j].id == t->id) p = &seen->s[j];
        assert_non_null(p);
        for (int d = 0; d < 2; d++) {
            assert_string_equal(p->hdr[d].s, t->hdr[d].s);
            if (t->id == cancel_id && d == TT_DIR_S2C) {
                /* the client stops reading once it resolved to cancel; the
                 * wire carries what the server sent until the RST reached it */
                assert_true(p->data[d].n >= t->data[d].n);
                assert_memory_equal(p->data[d].p, t->data[d].p, t->data[d].n);
                continue;
            }
            if (p->data[d].n != t->data[d].n) fprintf(stderr, "stream %u %s\n", t->id, dir_str((tt_direction)d));
            assert_int_equal(p->data[d].n, t->data[d].n);
            if (t->data[d].n) assert_memory_equal(p->data[d].p, t->data[d].p, t->data[d].n);
            if (t->end[d]) assert_int_equal(p->end[d], 1);
        }
        if (t->id == cancel_id) {
            assert_true(t->closed && p->closed);
            assert_int_equal(p->close_code, t->close_code);
            assert_int_equal(p->end[TT_DIR_S2C], 2);
        }
    }
    assert_int_equal(seen->n, truth->n);
}

static void test_nghttp2_sessions(void **state)
{
    world *w = calloc(1, sizeof *w);
    g_init(&w->g, "sessions", "", MODE_PRIOR);
    nghttp2_session_callbacks *cbs;
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_chunk_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close_cb);
    assert_int_equal(nghttp2_session_client_new(&w->cli, cbs, w), 0);
    nghttp2_session_callbacks_set_select_padding_callback(cbs, pad_cb);
    assert_int_equal(nghttp2_session_server_new(&w->srv, cbs, w), 0);
    nghttp2_session_callbacks_del(cbs);

    /* a small window: the server waits for the client's WINDOW_UPDATEs */
    nghttp2_settings_entry cs[] = { { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                                    { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 4096 } };
    assert_int_equal(nghttp2_submit_settings(w->cli, NGHTTP2_FLAG_NONE, cs, 2), 0);
    nghttp2_settings_entry ss[] = { { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 } };
    assert_int_equal(nghttp2_submit_settings(w->srv, NGHTTP2_FLAG_NONE, ss, 1), 0);
    request(w, "/v1/chat/completions", true, false); /* 1 */
    request(w, "/v1/models", false, true);           /* 3: CONTINUATION */
    w->cancel_id = (uint32_t)request(w, "/v1/chat/completions", true, false); /* 5: cancelled */
    request(w, "/v1/completions", true, false);      /* 7: trailers */
    exchange(w);
    /* the client shrinks the server's encoder table, then grows it */
    nghttp2_settings_entry t1[] = { { NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 256 } };
    assert_int_equal(nghttp2_submit_settings(w->cli, NGHTTP2_FLAG_NONE, t1, 1), 0);
    request(w, "/v1/chat/completions", true, false);
    request(w, "/v1/chat/completions", false, false);
    exchange(w);
    nghttp2_settings_entry t2[] = { { NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 8192 } };
    assert_int_equal(nghttp2_submit_settings(w->cli, NGHTTP2_FLAG_NONE, t2, 1), 0);
    assert_int_equal(nghttp2_submit_ping(w->cli, NGHTTP2_FLAG_NONE, (const uint8_t *)"12345678"), 0);
    request(w, "/v1/chat/completions", true, false);
    exchange(w);
    assert_int_equal(nghttp2_session_terminate_session(w->srv, NGHTTP2_NO_ERROR), 0);
    exchange(w);
    g_eof(&w->g, TT_DIR_C2S);
    g_eof(&w->g, TT_DIR_S2C);
    assert_true(w->cancelled);
    assert_true(w->truth.n >= 7);

    run_cfg cfg = { .mode = MODE_PRIOR };
    static const tt_http2_callbacks cb = { .on_headers = pv_headers, .on_data = pv_data, .on_stream_end = pv_end, .on_error = h2_fail_on_error };
    size_t total = h2_script_data_len(w->g.sc.p, w->g.sc.n);
    size_t cuts[] = { 0, 1, 24, 33, total / 3, total / 2, total - 1, SIZE_MAX };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        view *seen = calloc(1, sizeof *seen);
        tt_http2_conn *c = h2_open_conn(&cfg, &cb, seen);
        uint64_t ns = 1;
        h2_feed_script(c, w->g.sc.p, w->g.sc.n, cuts[k] == SIZE_MAX ? 0 : cuts[k], cuts[k] == SIZE_MAX, &ns);
        const tt_h2_dir_stats *sc = tt_http2_stats(c, TT_DIR_C2S), *sv = tt_http2_stats(c, TT_DIR_S2C);
        assert_true(sc->frames_by_type[TT_H2_CONTINUATION] > 0);
        assert_true(sc->conn_window_updates > 0 && sc->stream_window_updates > 0);
        assert_true(sv->pad_bytes > 0);
        assert_int_equal(sv->frames_by_type[TT_H2_GOAWAY], 1);
        assert_int_equal(sc->frames_by_type[TT_H2_PING], 1);
        assert_int_equal(sv->frames_by_type[TT_H2_PING], 1);
        tt_http2_free(c);
        compare_view(&w->truth, seen, w->cancel_id);
        for (int i = 0; i < seen->n; i++)
            if (seen->s[i].id == 3) assert_true(seen->s[i].max_frames > 1);
        view_free(seen);
        free(seen);
    }
    nghttp2_session_del(w->cli);
    nghttp2_session_del(w->srv);
    view_free(&w->truth);
    g_free(&w->g);
    free(w);
}

/* ---- HPACK against the deflater: random header sets ---- */

typedef struct hp_seen {
    size_t blocks;
    tt_h2_header *fields[400];
    size_t nfields[400];
    tt_strbuf text[400];
    uint8_t flags[400][32];
    size_t unknown, known;
} hp_seen;

static void hp_on_headers(void *ud, const tt_h2_headers *h)
{
    hp_seen *s = ud;
    size_t b = (h->stream_id - 1) / 2;
    assert_true(b < 400);
    s->nfields[b] = h->n_headers;
    tt_sb_printf(&s->text[b], "%s", "");
    for (size_t i = 0; i < h->n_headers && i < 32; i++) {
        const tt_h2_header *f = &h->headers[i];
        s->flags[b][i] = f->flags;
        tt_sb_printf(&s->text[b], "%.*s\x01%.*s\x02", (int)f->name_len, f->name, (int)f->value_len, f->value);
        if (f->flags & (TT_H2_HDR_NAME_UNKNOWN | TT_H2_HDR_VALUE_UNKNOWN)) s->unknown++;
        else s->known++;
    }
}

static uint32_t rnd(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

static void hpack_random_run(uint32_t seed, bool midstream, size_t start)
{
    static const char *const names[] = { "content-type", "x-request-id", "authorization", "user-agent", "accept",
                                         "x-trace", "openai-model", "x-ratelimit-remaining-tokens", "server",
                                         "date", "x-long", "cookie" };
    enum { NB = 300 };
    char vals[NB][24][80];
    const char *nm[NB][24];
    size_t cnt[NB];
    gen g;
    g_init(&g, "hpack", "", midstream ? MODE_MIDSTREAM : MODE_PRIOR);
    uint32_t x = seed;
    if (!midstream) {
        g_preface(&g);
        g_settings(&g, TT_DIR_C2S, H2_C_SETTINGS, 3);
    }
    for (size_t b = 0; b < NB; b++) {
        if (rnd(&x) % 17 == 0) {
            static const size_t sizes[] = { 0, 256, 1024, 2048, 4096 };
            assert_int_equal(nghttp2_hd_deflate_change_table_size(g.def[TT_DIR_C2S], sizes[rnd(&x) % 5]), 0);
        }
        const char *nv[2 * 24 + 1];
        size_t k = 0, n = 1 + rnd(&x) % 20;
        for (size_t i = 0; i < n; i++) {
            size_t ni = rnd(&x) % 12;
            nm[b][i] = names[ni];
            if (ni == 10) {
                int len = 20 + (int)(rnd(&x) % 50);
                memset(vals[b][i], 'a' + (int)(rnd(&x) % 3), (size_t)len);
                vals[b][i][len] = 0;
            } else {
                snprintf(vals[b][i], 80, "v%u", rnd(&x) % (ni == 1 ? 50 : 4));
            }
            nv[k++] = ni == 2 && (b & 1) ? "!authorization" : names[ni];
            nv[k++] = vals[b][i];
        }
        nv[k] = NULL;
        cnt[b] = n;
        bytes blk = g_hpack(&g, TT_DIR_C2S, nv);
        if (b >= start) g_frame(&g, TT_DIR_C2S, TT_H2_HEADERS, TT_H2_FLAG_END_HEADERS | TT_H2_FLAG_END_STREAM,
                                (uint32_t)(2 * b + 1), blk.p, blk.n);
        free(blk.p);
    }
    hp_seen *s = calloc(1, sizeof *s);
    static const tt_http2_callbacks cb = { .on_headers = hp_on_headers, .on_error = h2_fail_on_error };
    tt_http2_conn *c = h2_open_conn(&g.cfg, &cb, s);
    uint64_t ns = 1;
    h2_feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
    tt_http2_free(c);
    for (size_t b = start; b < NB; b++) {
        assert_int_equal(s->nfields[b], cnt[b]);
        const char *p = s->text[b].s;
        for (size_t i = 0; i < cnt[b]; i++) {
            const char *sep = strchr(p, '\x01'), *end = strchr(sep, '\x02');
            if (!(s->flags[b][i] & TT_H2_HDR_NAME_UNKNOWN)) {
                assert_int_equal((size_t)(sep - p), strlen(nm[b][i]));
                assert_memory_equal(p, nm[b][i], strlen(nm[b][i]));
            }
            if (!(s->flags[b][i] & TT_H2_HDR_VALUE_UNKNOWN)) {
                assert_int_equal((size_t)(end - sep - 1), strlen(vals[b][i]));
                assert_memory_equal(sep + 1, vals[b][i], strlen(vals[b][i]));
            }
            p = end + 1;
        }
    }
    if (!midstream) assert_int_equal(s->unknown, 0);
    else assert_true(s->known > s->unknown);
    for (size_t b = 0; b < 400; b++) tt_sb_free(&s->text[b]);
    free(s);
    g_free(&g);
}

static void test_hpack_random(void **state)
{
    for (uint32_t seed = 1; seed <= 6; seed++) {
        hpack_random_run(seed, false, 0);
        hpack_random_run(seed, true, 1 + seed * 7);
        hpack_random_run(seed, true, 150);
    }
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nghttp2_sessions),
        cmocka_unit_test(test_hpack_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
