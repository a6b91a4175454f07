/* h2_exchange.h - the HTTP/2 exchange the tracker tests share
 * (test_tracker_h2.c, test_tracker_h2_mid.c): writes of both directions
 * built from frames (header blocks from nghttp2's HPACK deflater), each at
 * an instant chosen here, and how they are fed to the connection tracker
 * as chunks of one connection. */
#ifndef TT_TEST_H2_EXCHANGE_H
#define TT_TEST_H2_EXCHANGE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "proto/http2.h"
#include "timeline/conn_tracker.h"

/* ---- a script of writes ---- */

typedef struct wr {
    tt_direction dir;
    uint8_t *p;
    size_t n, cap;
    uint64_t ns;
} wr;

typedef struct script {
    wr w[64];
    size_t n;
    nghttp2_hd_deflater *def[2];
} script;

static inline void put(wr *w, const void *d, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->p = realloc(w->p, w->cap);
        assert_non_null(w->p);
    }
    if (n) memcpy(w->p + w->n, d, n); /* an empty frame payload comes as NULL */
    w->n += n;
}

/* A new write of dir at instant ns. */
static inline wr *write_at(script *s, tt_direction dir, uint64_t ns)
{
    assert_true(s->n < 64);
    wr *w = &s->w[s->n++];
    memset(w, 0, sizeof *w);
    w->dir = dir;
    w->ns = ns;
    return w;
}

static inline void frame(wr *w, uint8_t type, uint8_t flags, uint32_t sid, const void *pl, size_t n)
{
    uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                    (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    put(w, h, 9);
    put(w, pl, n);
}

static inline void headers(script *s, wr *w, uint32_t sid, uint8_t flags, const char *const *nv)
{
    nghttp2_nv v[16];
    size_t k = 0;
    for (size_t i = 0; nv[i]; i += 2, k++)
        v[k] = (nghttp2_nv){(uint8_t *)(uintptr_t)nv[i], (uint8_t *)(uintptr_t)nv[i + 1], strlen(nv[i]),
                            strlen(nv[i + 1]), NGHTTP2_NV_FLAG_NONE};
    nghttp2_hd_deflater *d = s->def[w->dir];
    size_t bound = nghttp2_hd_deflate_bound(d, v, k);
    uint8_t *b = malloc(bound);
    assert_non_null(b);
    ssize_t r = nghttp2_hd_deflate_hd(d, b, bound, v, k);
    assert_true(r >= 0);
    frame(w, TT_H2_HEADERS, flags | TT_H2_FLAG_END_HEADERS, sid, b, (size_t)r);
    free(b);
}

static inline void data(wr *w, uint32_t sid, uint8_t flags, const char *str)
{
    frame(w, TT_H2_DATA, flags, sid, str, strlen(str));
}

static inline void script_free(script *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->w[i].p);
    for (int i = 0; i < 2; i++)
        if (s->def[i]) nghttp2_hd_deflate_del(s->def[i]);
}

/* ---- feeding ---- */

typedef struct feed {
    tt_tracker *t;
    tt_conn_info conn;
    uint64_t off[2];
} feed;

static inline void chunk(feed *f, tt_direction dir, tt_chunk_kind kind, const uint8_t *d, size_t n, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = d, .len = n};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA) f->off[dir] += n;
}

/* Feed the script: write `cut_w` split at byte cut_at (0: not split), or
 * every write byte by byte; then FIN both ways and release. */
static inline tt_tracker *run(const script *s, size_t cut_w, size_t cut_at, bool bytewise)
{
    feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 7;
    f.conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f.conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    uint64_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        const wr *w = &s->w[i];
        if (bytewise) {
            for (size_t k = 0; k < w->n; k++) chunk(&f, w->dir, TT_CHUNK_DATA, w->p + k, 1, w->ns);
        } else if (i == cut_w && cut_at > 0 && cut_at < w->n) {
            chunk(&f, w->dir, TT_CHUNK_DATA, w->p, cut_at, w->ns);
            chunk(&f, w->dir, TT_CHUNK_DATA, w->p + cut_at, w->n - cut_at, w->ns);
        } else {
            chunk(&f, w->dir, TT_CHUNK_DATA, w->p, w->n, w->ns);
        }
        last = w->ns;
    }
    chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, last + 1000);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, last + 1000);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, last + 2000);
    tt_tracker_sort(f.t);
    return f.t;
}

/* ---- the exchange ---- */

#define MS 1000000ull
#define CHAT_BODY "{\"model\":\"m-%s\",\"stream\":true,\"max_tokens\":2}"

static const char *const RESP_SSE[] = {":status", "200", "content-type", "text/event-stream", NULL};
static const char *const RESP_NDJSON[] = {":status", "200", "content-type", "application/x-ndjson", NULL};

static inline void chat_request(script *s, wr *w, uint32_t sid, const char *path, const char *id)
{
    const char *nv[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path", path,
                        "content-type", "application/json", "x-request-id", id, NULL};
    headers(s, w, sid, 0, nv);
    char body[128];
    snprintf(body, sizeof body, CHAT_BODY, id);
    data(w, sid, TT_H2_FLAG_END_STREAM, body);
}

static const char *tok(const char *word)
{
    static char buf[8][160];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 160, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", word);
    return b;
}

/* Instants (ms): the server's SETTINGS comes before the client's preface;
 * streams 1 and 3 (chat, SSE) interleave; stream 1's second token spans
 * two DATA frames written 1 ms apart; stream 5 (ollama, NDJSON) has two
 * lines in one frame; stream 7 is reset by the client mid-response. */
static inline void build(script *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 2; i++) assert_int_equal(nghttp2_hd_deflate_new(&s->def[i], 4096), 0);
    wr *w = write_at(s, TT_DIR_S2C, 1 * MS);
    frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    w = write_at(s, TT_DIR_C2S, 2 * MS);
    put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    chat_request(s, w, 1, "/v1/chat/completions", "r1");
    w = write_at(s, TT_DIR_S2C, 3 * MS);
    frame(w, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
    w = write_at(s, TT_DIR_C2S, 4 * MS);
    frame(w, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
    chat_request(s, w, 3, "/v1/chat/completions", "r3");
    w = write_at(s, TT_DIR_C2S, 5 * MS);
    {
        const char *nv[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path",
                            "/api/generate", "x-request-id", "r5", NULL};
        headers(s, w, 5, 0, nv);
        data(w, 5, TT_H2_FLAG_END_STREAM, "{\"model\":\"m-r5\",\"prompt\":\"x\"}");
    }
    chat_request(s, write_at(s, TT_DIR_C2S, 6 * MS), 7, "/v1/chat/completions", "r7");

    w = write_at(s, TT_DIR_S2C, 10 * MS);
    headers(s, w, 1, 0, RESP_SSE);
    headers(s, w, 3, 0, RESP_SSE);
    data(write_at(s, TT_DIR_S2C, 20 * MS), 1, 0, tok("a"));   /* r1 token 1 at 20 */
    data(write_at(s, TT_DIR_S2C, 21 * MS), 3, 0, tok("b"));   /* r3 token 1 at 21 */
    headers(s, write_at(s, TT_DIR_S2C, 22 * MS), 5, 0, RESP_NDJSON);
    data(write_at(s, TT_DIR_S2C, 23 * MS), 5, 0,
         "{\"model\":\"m\",\"response\":\"x\",\"done\":false}\n{\"model\":\"m\",\"response\":\"y\",\"done\":false}\n");
    const char *t2 = tok("c");
    char half[160];
    size_t h = strlen(t2) / 2;
    memcpy(half, t2, h);
    half[h] = 0;
    data(write_at(s, TT_DIR_S2C, 30 * MS), 1, 0, half);     /* r1 token 2 begins at 30 */
    w = write_at(s, TT_DIR_S2C, 31 * MS);
    data(w, 1, 0, t2 + h);                                  /* ... and is whole at 31 */
    data(w, 3, 0, tok("d"));                                /* r3 token 2 at 31 */
    headers(s, write_at(s, TT_DIR_S2C, 32 * MS), 7, 0, RESP_SSE);
    data(write_at(s, TT_DIR_S2C, 33 * MS), 7, 0, tok("e"));   /* r7 token 1 at 33 */
    data(write_at(s, TT_DIR_S2C, 40 * MS), 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    data(write_at(s, TT_DIR_S2C, 41 * MS), 3, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    data(write_at(s, TT_DIR_S2C, 42 * MS), 5, TT_H2_FLAG_END_STREAM,
         "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"eval_count\":2}\n");
    uint8_t cancel[4] = {0, 0, 0, 8};
    frame(write_at(s, TT_DIR_C2S, 43 * MS), TT_H2_RST_STREAM, 0, 7, cancel, 4);
}


#endif
