/* The connection tracker on HTTP/2 with prior knowledge: an exchange of
 * four streams on one connection (header blocks from nghttp2's HPACK
 * deflater, frames built here), each written at an instant chosen here,
 * fed as whole writes, split in two at every byte of every write, and
 * byte by byte. Every stream must come out as one request with its
 * fields, status, framing, event counts and instants (an event's instant:
 * the write that completed the DATA frame completing it); a stream reset
 * mid-response comes out incomplete with the reason; an HTTP/1.1
 * connection whose first byte looks like the preface is still HTTP/1.1. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_streams_as_requests),
        cmocka_unit_test(test_h2_client_gap),
        cmocka_unit_test(test_h1_not_preface),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
