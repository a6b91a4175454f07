/* The connection tracker on HTTP/2 with prior knowledge: an exchange of
 * four streams on one connection (header blocks from nghttp2's HPACK
 * deflater, frames built here), each written at an instant chosen here,
 * fed as whole writes, split in two at every byte of every write, and
 * byte by byte. Every stream must come out as one request with its
 * fields, status, framing, event counts and instants (an event's instant:
 * the write that completed the DATA frame completing it); a stream reset
 * mid-response comes out incomplete with the reason; an HTTP/1.1
 * connection whose first byte looks like the preface is still HTTP/1.1.
 * Then the same exchange entered mid-connection: frame boundaries found
 * from every offset, DATA as the whole parse gives it, tokens timed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "golden.h"
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

static void put(wr *w, const void *d, size_t n)
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
static wr *write_at(script *s, tt_direction dir, uint64_t ns)
{
    assert_true(s->n < 64);
    wr *w = &s->w[s->n++];
    memset(w, 0, sizeof *w);
    w->dir = dir;
    w->ns = ns;
    return w;
}

static void frame(wr *w, uint8_t type, uint8_t flags, uint32_t sid, const void *pl, size_t n)
{
    uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                    (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    put(w, h, 9);
    put(w, pl, n);
}

static void headers(script *s, wr *w, uint32_t sid, uint8_t flags, const char *const *nv)
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

static void data(wr *w, uint32_t sid, uint8_t flags, const char *str)
{
    frame(w, TT_H2_DATA, flags, sid, str, strlen(str));
}

static void script_free(script *s)
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

static void chunk(feed *f, tt_direction dir, tt_chunk_kind kind, const uint8_t *d, size_t n, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = d, .len = n};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA) f->off[dir] += n;
}

/* Feed the script: write `cut_w` split at byte cut_at (0: not split), or
 * every write byte by byte; then FIN both ways and release. */
static tt_tracker *run(const script *s, size_t cut_w, size_t cut_at, bool bytewise)
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

static void chat_request(script *s, wr *w, uint32_t sid, const char *path, const char *id)
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
static void build(script *s)
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

static const tt_request *by_id(const tt_request *r, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].request_id, id)) return &r[i];
    return NULL;
}

/* 0 when the tracker's requests are the exchange's; else a message. */
static const char *check(tt_tracker *t)
{
    size_t n;
    const tt_request *rs = tt_tracker_requests(t, &n);
    if (n != 4) return "not 4 requests";
    static const struct {
        const char *id, *model, *path;
        uint64_t req_ns, resp_ns;
        uint32_t tokens;
        uint64_t first, last;
        tt_framing framing;
        uint32_t ordinal;
    } want[] = {
        {"r1", "m-r1", "/v1/chat/completions", 2 * MS, 10 * MS, 2, 20 * MS, 31 * MS, TT_FRAMING_SSE, 0},
        {"r3", "m-r3", "/v1/chat/completions", 4 * MS, 10 * MS, 2, 21 * MS, 31 * MS, TT_FRAMING_SSE, 1},
        {"r5", "m-r5", "/api/generate", 5 * MS, 22 * MS, 2, 23 * MS, 23 * MS, TT_FRAMING_NDJSON, 2},
        {"r7", "m-r7", "/v1/chat/completions", 6 * MS, 32 * MS, 1, 33 * MS, 33 * MS, TT_FRAMING_SSE, 3},
    };
    for (size_t i = 0; i < 4; i++) {
        const tt_request *r = by_id(rs, n, want[i].id);
        if (!r) return "a request id missing";
        if (r != &rs[i]) return "not sorted by request start";
        if (strcmp(r->method, "POST") || strcmp(r->path, want[i].path)) return "method or path";
        if (strcmp(r->fields.model, want[i].model)) return "model from the request body";
        if (r->status != 200 || r->framing != want[i].framing) return "status or framing";
        if (r->ordinal != want[i].ordinal) return "ordinal";
        if (r->req_first_ns != want[i].req_ns || r->resp_first_ns != want[i].resp_ns) return "request/response instants";
        if (r->token_events != want[i].tokens) return "token event count";
        if (r->first_token_ns != want[i].first || r->last_token_ns != want[i].last) return "token instants";
        if (i < 3) {
            if (r->incomplete || !r->terminal_seen || r->http_error[0]) return "a whole stream filed incomplete";
            if (r->n_events != want[i].tokens + 1) return "event count";
        } else {
            if (!(r->incomplete & TT_INC_RESPONSE_CUT) || r->terminal_seen) return "reset stream not cut";
            if (!strstr(r->http_error, "RST_STREAM") || !strstr(r->http_error, "client")) return "reset reason";
            if (r->resp_last_ns != 33 * MS) return "reset stream's last response byte";
        }
    }
    const tt_request *r1 = by_id(rs, n, "r1");
    if (r1->events[1].first_ns != 30 * MS || r1->events[1].dispatch_ns != 31 * MS) return "split event's instants";
    if (r1->resp_last_ns != 40 * MS || r1->req_last_ns != 2 * MS) return "r1 end instants";
    size_t nn;
    tt_tracker_notes(t, &nn);
    if (nn) return "a connection note";
    return NULL;
}

static void test_h2_streams_as_requests(void **state)
{
    (void)state;
    script s;
    build(&s);
    tt_tracker *t = run(&s, 0, 0, false);
    const char *why = check(t);
    if (why) fail_msg("whole writes: %s", why);
    tt_tracker_free(t);
    t = run(&s, 0, 0, true);
    why = check(t);
    if (why) fail_msg("byte by byte: %s", why);
    tt_tracker_free(t);
    size_t runs = 0;
    for (size_t i = 0; i < s.n; i++) {
        for (size_t k = 1; k < s.w[i].n; k++, runs++) {
            t = run(&s, i, k, false);
            why = check(t);
            if (why) fail_msg("write %zu split at %zu: %s", i, k, why);
            tt_tracker_free(t);
        }
    }
    assert_true(runs > 500);
    script_free(&s);
}

/* The client's bytes lost after its first write (stream 1's request): the
 * client direction is abandoned, the responses still stream. Stream 1 is
 * whole; streams 3, 5 and 7 come out request-not-seen with their events;
 * stream 7 (its RST lost) is cut at the end of the connection. */
static void test_h2_client_gap(void **state)
{
    (void)state;
    script s;
    build(&s);
    feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 8;
    bool lost = false;
    for (size_t i = 0; i < s.n; i++) {
        const wr *w = &s.w[i];
        if (w->dir == TT_DIR_C2S && w->ns > 2 * MS) {
            if (!lost) chunk(&f, TT_DIR_C2S, TT_CHUNK_GAP, NULL, 100, w->ns);
            f.off[TT_DIR_C2S] += 100;
            lost = true;
            continue;
        }
        chunk(&f, w->dir, TT_CHUNK_DATA, w->p, w->n, w->ns);
    }
    chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 50 * MS);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 50 * MS);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 51 * MS);
    tt_tracker_sort(f.t);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 4);
    assert_string_equal(r[0].request_id, "r1");
    assert_int_equal(r[0].incomplete, 0);
    assert_int_equal(r[0].token_events, 2);
    assert_int_equal(r[0].last_token_ns, 31 * MS);
    uint32_t tokens[] = {0, 2, 2, 1};
    for (size_t i = 1; i < 4; i++) {
        assert_true(r[i].incomplete & TT_INC_REQUEST_NOT_SEEN);
        assert_int_equal(r[i].status, 200);
        assert_int_equal(r[i].token_events, tokens[i]);
    }
    assert_true(r[3].incomplete & TT_INC_RESPONSE_CUT);
    assert_false(r[1].incomplete & TT_INC_RESPONSE_CUT);
    tt_tracker_free(f.t);
    script_free(&s);
}

/* An HTTP/1.1 connection that starts "PRI" but is no preface, and one
 * whose response arrives before its request (midstream): HTTP/1.1 as before. */
static void test_h1_not_preface(void **state)
{
    (void)state;
    static const char req[] = "PRIX /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 9;
    for (size_t k = 0; k < sizeof req - 1; k++) chunk(&f, TT_DIR_C2S, TT_CHUNK_DATA, (const uint8_t *)req + k, 1, 100 + k);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, (const uint8_t *)resp, sizeof resp - 1, 500);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r->method, "PRIX");
    assert_int_equal(r->req_first_ns, 100);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->incomplete, 0);
    tt_tracker_free(f.t);

    /* released with only a preface prefix held: replayed to HTTP/1.1 (a
     * head never finished: no request, as before) */
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 10;
    chunk(&f, TT_DIR_C2S, TT_CHUNK_DATA, (const uint8_t *)"PRI * HTTP/2", 12, 100);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
    tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 0);
    tt_tracker_free(f.t);
}

/* ---- joined mid-stream ---- */

/* One direction's bytes of the script, and where each write and each
 * frame begins in them. */
typedef struct flat {
    uint8_t *p;
    size_t n;
    size_t frame_at[128], n_frames;
} flat;

static void flatten(const script *s, tt_direction dir, flat *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < s->n; i++) {
        if (s->w[i].dir != dir) continue;
        f->p = realloc(f->p, f->n + s->w[i].n);
        assert_non_null(f->p);
        memcpy(f->p + f->n, s->w[i].p, s->w[i].n);
        f->n += s->w[i].n;
    }
    size_t at = dir == TT_DIR_C2S ? TT_HTTP2_PREFACE_LEN : 0;
    while (at + 9 <= f->n) {
        assert_true(f->n_frames < 128);
        f->frame_at[f->n_frames++] = at;
        at += 9 + ((size_t)f->p[at] << 16 | (size_t)f->p[at + 1] << 8 | f->p[at + 2]);
    }
    assert_int_equal(at, f->n);
}

/* DATA payloads as the parser hands them over, with the stream offset of
 * their frame. */
typedef struct got_data {
    uint32_t sid[128];
    uint64_t frame_off[128];
    char bytes[128][200];
    size_t len[128];
    size_t n;
    uint64_t base, cur_frame;
    unsigned errors;
} got_data;

static void gd_frame(void *ud, const tt_h2_frame *fr)
{
    got_data *g = ud;
    g->cur_frame = fr->off + g->base;
}

static void gd_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t body_off,
                    uint64_t ns)
{
    got_data *g = ud;
    assert_true(g->n < 128 && n < 200);
    g->sid[g->n] = sid;
    g->frame_off[g->n] = g->cur_frame;
    memcpy(g->bytes[g->n], d, n);
    g->len[g->n++] = n;
}

static void gd_error(void *ud, tt_direction d, tt_h2_error c, const char *m, uint64_t o)
{
    got_data *g = ud;
    if (getenv("DBG")) fprintf(stderr, "dir %d error %s: %s\n", d, tt_http2_error_name(c), m);
    g->errors++;
}

static const tt_http2_callbacks gd_cb = {.on_data = gd_data, .on_frame = gd_frame, .on_error = gd_error};

/* The server's bytes entered at every offset: tt_http2_find_sync finds the
 * first frame boundary followed by a confirming chain (never a false one),
 * and the midstream parser fed from there, whole or byte by byte, hands
 * over exactly the DATA payloads the whole-stream parse gives for the
 * frames from there on, with no error. The client's bytes likewise find
 * their boundaries; HTTP/1.1 text never syncs. */
static void test_h2_find_sync_every_offset(void **state)
{
    (void)state;
    script s;
    build(&s);
    for (int dir = 0; dir < 2; dir++) {
        flat f;
        flatten(&s, (tt_direction)dir, &f);
        got_data whole = {0};
        /* the reference: the client's bytes from their start; the server's
         * alone from their first byte, a frame boundary (midstream: the
         * requests that open its streams are not fed) */
        tt_http2_conn *c = dir == TT_DIR_C2S ? tt_http2_new(&gd_cb, &whole) : tt_http2_new_midstream(&gd_cb, &whole);
        tt_http2_feed(c, (tt_direction)dir, f.p, f.n, 1);
        tt_http2_free(c);
        assert_int_equal(whole.errors, 0);
        for (size_t o = 0; o <= f.n; o++) {
            size_t from = 0;
            long at = tt_http2_find_sync(f.p + o, f.n - o, (tt_direction)dir, &from);
            /* the first boundary at or after o that has a chain behind it */
            size_t k = 0;
            while (k < f.n_frames && f.frame_at[k] < o) k++;
            /* found when TT_HTTP2_SYNC_FRAMES frames follow; with fewer (a
             * chain ending at the end) it may wait on a false candidate */
            long want = -1;
            bool strong = false;
            if (k < f.n_frames) {
                size_t left = f.n_frames - k;
                strong = left >= TT_HTTP2_SYNC_FRAMES;
                if (strong || left >= (f.frame_at[k] == o ? 1u : 2u)) want = (long)(f.frame_at[k] - o);
            }
            if (!strong && at == -1) want = -1;
            if (at != want) fail_msg("dir %d offset %zu: sync at %ld, want %ld", dir, o, at, want);
            if (at < 0) continue;
            for (int bytewise = 0; bytewise < 2; bytewise++) {
                got_data mid = {.base = o + (size_t)at};
                tt_http2_conn *m = tt_http2_new_midstream(&gd_cb, &mid);
                const uint8_t *p = f.p + o + at;
                size_t n = f.n - o - (size_t)at;
                if (bytewise)
                    for (size_t i = 0; i < n; i++) tt_http2_feed(m, (tt_direction)dir, p + i, 1, 2);
                else
                    tt_http2_feed(m, (tt_direction)dir, p, n, 2);
                tt_http2_free(m);
                if (mid.errors) fail_msg("dir %d offset %zu: %u errors", dir, o, mid.errors);
                size_t j = 0;
                while (j < whole.n && whole.frame_off[j] < mid.base) j++;
                if (whole.n - j != mid.n) fail_msg("dir %d offset %zu: %zu payloads, want %zu", dir, o, mid.n, whole.n - j);
                for (size_t i = 0; i < mid.n; i++, j++)
                    if (mid.sid[i] != whole.sid[j] || mid.frame_off[i] != whole.frame_off[j] ||
                        mid.len[i] != whole.len[j] || memcmp(mid.bytes[i], whole.bytes[j], mid.len[i]))
                        fail_msg("dir %d offset %zu: payload %zu differs", dir, o, i);
            }
        }
        free(f.p);
    }
    static const char *const text[] = {
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"choices\":[]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"\\u0000\"}}]}\r\n\r\n",
    };
    for (size_t i = 0; i < 3; i++)
        for (int dir = 0; dir < 2; dir++)
            for (size_t o = 0; o < strlen(text[i]); o++) {
                size_t from = 0;
                assert_int_equal(tt_http2_find_sync((const uint8_t *)text[i] + o, strlen(text[i]) - o,
                                                    (tt_direction)dir, &from), -1);
            }
    script_free(&s);
}

/* Tokens of the exchange: the instant of the write where their first byte
 * is, and of the write completing them (SSE streams only: NDJSON is not
 * told from a body without its head). */
static const struct { uint64_t first, done; } SSE_TOKENS[] = {
    {20 * MS, 20 * MS}, {21 * MS, 21 * MS}, {30 * MS, 31 * MS}, {31 * MS, 31 * MS}, {33 * MS, 33 * MS}};

/* The tracker on the exchange entered at every byte of every write (the
 * writes before dropped, the connection's orientation guessed, offsets
 * from 0), whole and byte by byte: read as HTTP/2 joined mid-stream (a
 * note), no crash; every token it times is one of the whole exchange's at
 * the same instant, and every SSE token whose bytes all come after the
 * cut is there; the same with the source's guess of the client wrong:
 * the frames set it right. */
static void test_h2_midstream_tracker(void **state)
{
    (void)state;
    script s;
    build(&s);
    size_t runs = 0;
    for (size_t cw = 1; cw < s.n; cw++) {
        for (size_t ck = 0; ck < s.w[cw].n; ck++) {
            /* (write 1 whole is the client's preface: read as prior knowledge,
             * the server's SETTINGS before it lost: not a mid-stream entry) */
            if (cw == 1 && ck == 0) continue;
            for (int mode = 0; mode < 3; mode++, runs++) {
                bool bytewise = mode == 1, swapped = mode == 2;
                if (bytewise && ck % 7) continue; /* byte by byte at every 7th cut: enough, and quick */
                feed f;
                memset(&f, 0, sizeof f);
                f.t = tt_tracker_new(NULL);
                f.conn.conn_id = 11;
                f.conn.orientation_guessed = true;
                tt_endpoint cl = {.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
                tt_endpoint sv = {.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
                /* swapped: the source guessed the server to be the client */
                f.conn.client = swapped ? sv : cl;
                f.conn.server = swapped ? cl : sv;
                for (size_t i = cw; i < s.n; i++) {
                    const wr *w = &s.w[i];
                    size_t k0 = i == cw ? ck : 0;
                    tt_direction d = (tt_direction)(w->dir ^ swapped);
                    if (bytewise)
                        for (size_t k = k0; k < w->n; k++) chunk(&f, d, TT_CHUNK_DATA, w->p + k, 1, w->ns);
                    else
                        chunk(&f, d, TT_CHUNK_DATA, w->p + k0, w->n - k0, w->ns);
                }
                chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 50 * MS);
                chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 50 * MS);
                chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 51 * MS);
                tt_tracker_sort(f.t);
                size_t n, nn;
                const tt_request *r = tt_tracker_requests(f.t, &n);
                const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
                bool joined = false;
                for (size_t i = 0; i < nn; i++) joined |= notes[i].analysed && strstr(notes[i].reason, "joined mid-stream") != NULL;
                uint64_t cut_ns = s.w[cw].ns;
                size_t want = 0, have = 0;
                for (size_t t = 0; t < sizeof SSE_TOKENS / sizeof SSE_TOKENS[0]; t++) {
                    if (SSE_TOKENS[t].first <= cut_ns) continue;
                    want++;
                    bool found = false;
                    for (size_t i = 0; i < n && !found; i++)
                        for (uint32_t e = 0; e < r[i].n_events; e++)
                            found |= r[i].events[e].kind == TT_EV_TOKEN &&
                                     r[i].events[e].dispatch_ns == SSE_TOKENS[t].done;
                    if (!found) fail_msg("cut at write %zu byte %zu mode %d: token at %llu ms missing", cw, ck, mode,
                                         (unsigned long long)(SSE_TOKENS[t].done / MS));
                }
                for (size_t i = 0; i < n; i++) {
                    for (uint32_t e = 0; e < r[i].n_events; e++) {
                        if (r[i].events[e].kind != TT_EV_TOKEN) continue;
                        have++;
                        uint64_t ns = r[i].events[e].dispatch_ns;
                        bool known = ns == 20 * MS || ns == 21 * MS || ns == 23 * MS || ns == 31 * MS || ns == 33 * MS;
                        if (!known) fail_msg("cut at write %zu byte %zu: a token at %llu ns", cw, ck,
                                             (unsigned long long)ns);
                    }
                    if (r[i].incomplete & TT_INC_REQUEST_NOT_SEEN) continue;
                    /* a request seen whole: after the cut */
                    if (r[i].req_first_ns < cut_ns)
                        fail_msg("cut at write %zu byte %zu: request at %llu seen", cw, ck,
                                 (unsigned long long)r[i].req_first_ns);
                }
                if (have < want) fail_msg("cut at write %zu byte %zu: %zu tokens < %zu", cw, ck, have, want);
                for (size_t i = 0; i < n; i++)
                    if (r[i].token_events && r[i].client.port != 40000)
                        fail_msg("cut at write %zu byte %zu mode %d: client and server the wrong way", cw, ck, mode);
                if (want && !joined) fail_msg("cut at write %zu byte %zu: no mid-stream note", cw, ck);
                if (cw == 3 && ck == 0) {
                    /* stream 3's request refers to HPACK entries stream 1's made */
                    bool hpack = false;
                    for (size_t i = 0; i < nn; i++) hpack |= strstr(notes[i].reason, "HPACK entries not captured") != NULL;
                    const tt_request *r3 = NULL;
                    for (size_t i = 0; i < n; i++)
                        if (!(r[i].incomplete & TT_INC_REQUEST_NOT_SEEN) && r[i].req_first_ns == 4 * MS) r3 = &r[i];
                    if (!hpack || !r3) fail_msg("mode %d: stream 3's request or the HPACK note missing", mode);
                    if (strcmp(r3->method, "POST") || r3->status != 200 || strcmp(r3->fields.model, "m-r3"))
                        fail_msg("mode %d: stream 3's known fields lost", mode);
                    /* x-request-id's name is stream 1's table entry: unknown, so empty, never wrong */
                    if (r3->request_id[0]) fail_msg("mode %d: an unknown field given a value", mode);
                }
                tt_tracker_free(f.t);
            }
        }
    }
    assert_true(runs > 500);
    script_free(&s);
}

/* Joined where the client's bytes start at a frame (its request seen
 * whole) but the server's inside its response HEADERS: the response is
 * framed from its DATA (sniffed SSE), filed with the request. */
static void test_h2_midstream_head_unseen(void **state)
{
    (void)state;
    script s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 2; i++) assert_int_equal(nghttp2_hd_deflate_new(&s.def[i], 4096), 0);
    wr *w = write_at(&s, TT_DIR_C2S, 1 * MS);
    frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    chat_request(&s, w, 1, "/v1/chat/completions", "r1");
    w = write_at(&s, TT_DIR_S2C, 2 * MS);
    headers(&s, w, 1, 0, RESP_SSE);
    data(write_at(&s, TT_DIR_S2C, 3 * MS), 1, 0, tok("a"));
    data(write_at(&s, TT_DIR_S2C, 4 * MS), 1, 0, tok("b"));
    data(write_at(&s, TT_DIR_S2C, 5 * MS), 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 13;
    f.conn.orientation_guessed = true;
    f.conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f.conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    for (size_t i = 0; i < s.n; i++) {
        size_t k0 = i == 1 ? 4 : 0; /* the server's bytes begin inside the HEADERS frame */
        chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p + k0, s.w[i].n - k0, s.w[i].ns);
    }
    chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 9 * MS);
    chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 9 * MS);
    chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 10 * MS);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r->request_id, "r1");
    assert_string_equal(r->path, "/v1/chat/completions");
    assert_false(r->incomplete & TT_INC_REQUEST_NOT_SEEN);
    assert_int_equal(r->framing, TT_FRAMING_SSE);
    assert_int_equal(r->token_events, 2);
    assert_int_equal(r->first_token_ns, 3 * MS);
    assert_int_equal(r->last_token_ns, 4 * MS);
    assert_true(r->terminal_seen);
    tt_tracker_free(f.t);
    script_free(&s);
}

/* Joined inside a gRPC response (its HEADERS and the request before the
 * capture): the DATA payloads, each whole length-prefixed messages, are
 * framed as gRPC, each message an event at its frame's instant. */
static void test_h2_midstream_grpc(void **state)
{
    (void)state;
    script s;
    memset(&s, 0, sizeof s);
    static const uint8_t msg[] = {0, 0, 0, 0, 4, 0x0a, 0x02, 'h', 'i'};
    static const uint8_t two[] = {0, 0, 0, 0, 4, 0x0a, 0x02, 'a', 'b', 0, 0, 0, 0, 2, 0x08, 0x01};
    wr *w = write_at(&s, TT_DIR_S2C, 1 * MS);
    put(w, "\x17\x42\x99", 3); /* the end of a frame begun before the capture */
    frame(w, TT_H2_DATA, 0, 1, msg, sizeof msg);
    frame(write_at(&s, TT_DIR_S2C, 2 * MS), TT_H2_DATA, 0, 1, msg, sizeof msg);
    frame(write_at(&s, TT_DIR_S2C, 3 * MS), TT_H2_DATA, 0, 1, two, sizeof two);
    uint8_t inc[4] = {0, 0, 0x40, 0};
    frame(write_at(&s, TT_DIR_C2S, 4 * MS), TT_H2_WINDOW_UPDATE, 0, 0, inc, 4);
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        feed f;
        memset(&f, 0, sizeof f);
        f.t = tt_tracker_new(NULL);
        f.conn.conn_id = 15;
        f.conn.orientation_guessed = true;
        for (size_t i = 0; i < s.n; i++) {
            if (bytewise)
                for (size_t k = 0; k < s.w[i].n; k++) chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p + k, 1, s.w[i].ns);
            else
                chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p, s.w[i].n, s.w[i].ns);
        }
        chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 9 * MS);
        chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 9 * MS);
        chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 10 * MS);
        size_t n;
        const tt_request *r = tt_tracker_requests(f.t, &n);
        assert_int_equal(n, 1);
        assert_true(r->incomplete & TT_INC_REQUEST_NOT_SEEN);
        assert_int_equal(r->framing, TT_FRAMING_GRPC);
        assert_int_equal(r->n_events, 4);
        assert_int_equal(r->events[0].dispatch_ns, 1 * MS);
        assert_int_equal(r->events[1].dispatch_ns, 2 * MS);
        assert_int_equal(r->events[3].dispatch_ns, 3 * MS);
        tt_tracker_free(f.t);
    }
    script_free(&s);
}

/* HTTP/1.1 captured mid-connection (orientation guessed) stays HTTP/1.1:
 * a response body first, then a whole exchange, whole and byte by byte. */
static void test_h1_midstream_not_h2(void **state)
{
    (void)state;
    static const char body[] = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n0\r\n\r\n";
    static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        feed f;
        memset(&f, 0, sizeof f);
        f.t = tt_tracker_new(NULL);
        f.conn.conn_id = 12;
        f.conn.orientation_guessed = true;
        const struct { tt_direction dir; const char *p; uint64_t ns; } w[] = {
            {TT_DIR_S2C, body, 100}, {TT_DIR_C2S, req, 200}, {TT_DIR_S2C, resp, 300}};
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(w[i].p);
            if (bytewise)
                for (size_t k = 0; k < n; k++) chunk(&f, w[i].dir, TT_CHUNK_DATA, (const uint8_t *)w[i].p + k, 1, w[i].ns);
            else
                chunk(&f, w[i].dir, TT_CHUNK_DATA, (const uint8_t *)w[i].p, n, w[i].ns);
        }
        chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
        size_t n, nn;
        const tt_request *r = tt_tracker_requests(f.t, &n);
        const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
        for (size_t i = 0; i < nn; i++) assert_null(strstr(notes[i].reason, "HTTP/2"));
        bool post = false;
        for (size_t i = 0; i < n; i++) post |= !strcmp(r[i].method, "POST");
        assert_true(post);
        tt_tracker_free(f.t);
    }
}

/* The HTTP/1.1, SSE, NDJSON and dialect golden inputs (text as it travels
 * in HTTP/1.1) never show an HTTP/2 frame chain, from any offset, in
 * either direction; fed to the tracker as a connection joined mid-stream
 * from every offset they are never read as HTTP/2. */
static void test_h1_goldens_never_h2(void **state)
{
    (void)state;
    static const char *const dirs[] = {"tests/golden/http1", "tests/golden/sse", "tests/golden/ndjson",
                                       "tests/golden/dialect"};
    size_t inputs = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        size_t n;
        char **files = tt_golden_list(dirs[d], &n);
        for (size_t i = 0; i < n; i++) {
            tt_golden g;
            assert_int_equal(tt_golden_load(files[i], &g), 0);
            inputs++;
            for (size_t o = 0; o < g.input_len; o++) {
                for (int dir = 0; dir < 2; dir++) {
                    size_t from = 0;
                    long at = tt_http2_find_sync(g.input + o, g.input_len - o, (tt_direction)dir, &from);
                    if (at >= 0) fail_msg("%s from %zu (dir %d): a frame chain at %ld", files[i], o, dir, at);
                }
                feed f;
                memset(&f, 0, sizeof f);
                f.t = tt_tracker_new(NULL);
                f.conn.conn_id = 14;
                f.conn.orientation_guessed = true;
                chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, g.input + o, g.input_len - o, 1);
                chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 2);
                size_t nn;
                const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
                for (size_t k = 0; k < nn; k++)
                    if (notes[k].analysed || strstr(notes[k].reason, "mid-stream")) fail_msg("%s from %zu: %s", files[i], o, notes[k].reason);
                tt_tracker_free(f.t);
            }
            tt_golden_free(&g);
        }
        tt_golden_list_free(files, n);
    }
    assert_true(inputs > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_streams_as_requests),
        cmocka_unit_test(test_h2_client_gap),
        cmocka_unit_test(test_h1_not_preface),
        cmocka_unit_test(test_h2_find_sync_every_offset),
        cmocka_unit_test(test_h2_midstream_tracker),
        cmocka_unit_test(test_h2_midstream_head_unseen),
        cmocka_unit_test(test_h2_midstream_grpc),
        cmocka_unit_test(test_h1_midstream_not_h2),
        cmocka_unit_test(test_h1_goldens_never_h2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
