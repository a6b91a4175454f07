/* ttpcapgen - write a capture of streamed LLM completions at chosen instants.
 *
 * Each stream is one TCP connection: handshake, a POST with an x-request-id,
 * then an HTTP/1.1 200 chunked response with one HTTP chunk per event, each
 * event in its own TCP segment(s) at its scheduled instant: the request at
 * t0, the first token at t0 + ttft, then one token every itl with a
 * deterministic jitter from the seed; then finish/usage/terminal frames, the
 * zero chunk and the close. Streams run in `concurrency` lanes: a lane starts
 * its next stream shortly after its previous one closes.
 *
 * --http2 writes the same streams as h2c with prior knowledge: after the
 * handshake the client's preface, SETTINGS (push off, a 1 GiB window) and a
 * connection WINDOW_UPDATE, the server's SETTINGS and its ACK; the request
 * at t0 as HEADERS (HPACK from nghttp2's deflater, one per direction and
 * connection; the first request carries the client's SETTINGS ACK before
 * it) and its body as DATA with END_STREAM; the response HEADERS (:status
 * 200) at the same instant as the HTTP/1.1 head; each event one DATA frame
 * (split at 16384 bytes) in its own segment(s) at its instant, the last
 * with END_STREAM (no zero chunk). --streams-per-conn N puts N streams on
 * one connection (ids 1, 3, 5 ..., their requests 10 us apart, all in
 * flight at once, as h2load -m N does): a lane then runs one connection of
 * N streams after another, closed (FIN) once its last stream ended, and
 * --concurrency counts streams, so ceil(C / N) connections are in flight.
 * Each stream's instants are chosen as without --http2 (the same seed gives
 * the same truth for N = 1).
 *
 * --truth writes one JSON line per stream with the instants chosen here
 * (request_id, req_first_ns, token_ns[], ttft_ns, e2el_ns, tokens): ground
 * truth that tokentap's analysis did not compute. */
#include <getopt.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "golden.h"
#include "h2_script.h"
#include "llm_frames.h"
#include "pcap_writer.h"

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif


typedef struct options {
    llm_opts llm; /* dialect, model, tokens, ttft, itl, crlf, usage_with_choices */
    const char *out, *truth;
    unsigned streams, concurrency;
    uint64_t seed, start_ns;
    bool ipv6, http2;
    unsigned per_conn; /* HTTP/2 streams per connection */
    int linktype;
    unsigned pw_flags;
} options;

/* What a stream sends, in order; tokens are EV_TOKEN with an index. */
typedef enum ev_kind {
    EV_HANDSHAKE,
    EV_H2_PREFACE,  /* client preface, SETTINGS, WINDOW_UPDATE */
    EV_H2_SETTINGS, /* the server's SETTINGS and ACK */
    EV_REQUEST,
    EV_HEADERS,
    EV_PRE,   /* dialect preamble frames (role chunk, response.created, message_start...) */
    EV_TOKEN,
    EV_POST,  /* dialect closing frames (finish, usage, [DONE], message_stop...) */
    EV_ZERO_CHUNK,
    EV_SERVER_FIN,
    EV_CLIENT_FIN,
    EV_LAST_ACK
} ev_kind;

typedef struct event {
    uint64_t ts;
    ev_kind kind;
    unsigned index;
} event;

/* An HTTP/2 connection's state, shared by its streams. */
typedef struct h2conn {
    h2_script hpack; /* only its two deflaters are used */
    unsigned open;   /* streams that have not yet ended */
    bool settings_acked;
} h2conn;

typedef struct stream {
    unsigned number; /* 1-based: req-<number> */
    unsigned lane;
    tt_pw_conn *conn;
    h2conn *h2;          /* NULL for HTTP/1.1 */
    uint32_t sid;        /* HTTP/2 stream id */
    bool closes_conn;    /* wrote the connection's FINs: the lane goes on */
    uint64_t t0;
    event *events;
    size_t nevents, next;
    unsigned server_segments; /* for the client's delayed ACKs */
    uint64_t rng;
    unsigned prompt_tokens;
    char id[64];
    tt_strbuf text; /* generated text, JSON-escaped, for frames that repeat it */
} stream;

typedef struct generator {
    options o;
    tt_pw *w;
    FILE *truth;
    stream **heap;
    size_t heap_len;
    unsigned started;
    uint64_t events_written, packets_hint;
    tt_strbuf ev, chunk;
    h2_write frames; /* HTTP/2 frames being built */
} generator;


/* ---- the heap of active streams, by next event instant ---- */

static bool heap_less(const stream *a, const stream *b)
{
    uint64_t ta = a->events[a->next].ts, tb = b->events[b->next].ts;
    return ta != tb ? ta < tb : a->number < b->number;
}

static void heap_push(generator *g, stream *s)
{
    size_t i = g->heap_len++;
    g->heap[i] = s;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(g->heap[i], g->heap[parent])) break;
        stream *t = g->heap[i];
        g->heap[i] = g->heap[parent];
        g->heap[parent] = t;
        i = parent;
    }
}

static void heap_sift_down(generator *g)
{
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g->heap_len && heap_less(g->heap[l], g->heap[m])) m = l;
        if (r < g->heap_len && heap_less(g->heap[r], g->heap[m])) m = r;
        if (m == i) return;
        stream *t = g->heap[i];
        g->heap[i] = g->heap[m];
        g->heap[m] = t;
        i = m;
    }
}

static void heap_pop(generator *g)
{
    g->heap[0] = g->heap[--g->heap_len];
    heap_sift_down(g);
}

/* ---- requests and response heads ---- */


static const char *authority(const options *o)
{
    return o->ipv6 ? "[fd00::2]:8000" : "10.0.0.2:8000";
}

static void build_request(generator *g, stream *s, tt_strbuf *body, tt_strbuf *req)
{
    const options *o = &g->o;
    const char *path = llm_request_body(&g->o.llm, body);
    tt_sb_printf(req, "POST %s HTTP/1.1\r\nHost: %s:8000\r\nUser-Agent: ttpcapgen/0.1\r\nAccept: */*\r\n"
                      "Content-Type: application/json\r\n",
                 path, o->ipv6 ? "[fd00::2]" : "10.0.0.2");
    if (o->llm.dialect == D_ANTHROPIC) tt_sb_printf(req, "anthropic-version: 2023-06-01\r\n");
    tt_sb_printf(req, "x-request-id: req-%u\r\nContent-Length: %zu\r\n\r\n%s", s->number, body->len,
                 body->s);
}

static void http_date(uint64_t created, char *date, size_t len)
{
    time_t secs = (time_t)created;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(date, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static const char *content_type(const options *o)
{
    return o->llm.dialect == D_OLLAMA ? "application/x-ndjson" : "text/event-stream; charset=utf-8";
}

static const char *server_name(const options *o)
{
    return o->llm.dialect == D_LLAMACPP ? "llama.cpp" : o->llm.dialect == D_OLLAMA ? "ollama" : "uvicorn";
}

static void build_response_head(generator *g, stream *s, tt_strbuf *out, uint64_t created)
{
    char date[64];
    http_date(created, date, sizeof date);
    const char *type = content_type(&g->o), *server = server_name(&g->o);
    tt_sb_printf(out, "HTTP/1.1 200 OK\r\ndate: %s\r\nserver: %s\r\ncontent-type: %s\r\nx-request-id: req-%u\r\n"
                      "transfer-encoding: chunked\r\n\r\n",
                 date, server, type, s->number);
}

/* ---- HTTP/2 frames, built in g->frames ---- */

static int send_server(generator *g, stream *s, const char *data, size_t len, uint64_t ts);

enum { H2_DATA = 0x0, H2_HEADERS = 0x1, H2_SETTINGS = 0x4, H2_WINDOW_UPDATE = 0x8 };
enum { H2_END_STREAM = 0x1, H2_ACK = 0x1 };
#define H2_MAX_FRAME 16384u     /* SETTINGS_MAX_FRAME_SIZE's default */
#define H2_WINDOW (1u << 30)   /* the client's windows, as h2load's -w 30 */

/* A SETTINGS frame of n (identifier, value) pairs; n 0 with H2_ACK is the ACK. */
static void h2_settings(h2_write *w, uint8_t flags, const uint32_t kv[][2], size_t n)
{
    uint8_t p[6 * 4];
    for (size_t i = 0; i < n && i < 4; i++) {
        uint8_t *q = p + 6 * i;
        q[0] = (uint8_t)(kv[i][0] >> 8), q[1] = (uint8_t)kv[i][0];
        q[2] = (uint8_t)(kv[i][1] >> 24), q[3] = (uint8_t)(kv[i][1] >> 16);
        q[4] = (uint8_t)(kv[i][1] >> 8), q[5] = (uint8_t)kv[i][1];
    }
    h2_frame(w, H2_SETTINGS, flags, 0, n ? p : NULL, 6 * (n < 4 ? n : 4));
}

/* The client's preface, SETTINGS (no push, a 1 GiB stream window) and a
 * WINDOW_UPDATE that opens the connection's window as far. */
static void h2_client_preface(generator *g)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    static const uint32_t kv[][2] = {{0x2 /* ENABLE_PUSH */, 0}, {0x4 /* INITIAL_WINDOW_SIZE */, H2_WINDOW}};
    uint32_t inc = H2_WINDOW - 65535;
    uint8_t wu[4] = {(uint8_t)(inc >> 24), (uint8_t)(inc >> 16), (uint8_t)(inc >> 8), (uint8_t)inc};
    h2_put(&g->frames, preface, sizeof preface - 1);
    h2_settings(&g->frames, 0, kv, 2);
    h2_frame(&g->frames, H2_WINDOW_UPDATE, 0, 0, wu, sizeof wu);
}

/* The request: HEADERS, then the body as DATA with END_STREAM. */
static void h2_request(generator *g, stream *s)
{
    tt_strbuf body = {0};
    const char *path = llm_request_body(&g->o.llm, &body);
    char id[32], len[24];
    snprintf(id, sizeof id, "req-%u", s->number);
    snprintf(len, sizeof len, "%zu", body.len);
    const char *nv[24] = {":method", "POST", ":scheme", "http", ":authority", authority(&g->o), ":path", path,
                          "content-type", "application/json", "user-agent", "ttpcapgen/0.1", "accept", "*/*"};
    size_t n = 14;
    if (g->o.llm.dialect == D_ANTHROPIC) nv[n++] = "anthropic-version", nv[n++] = "2023-06-01";
    nv[n++] = "x-request-id", nv[n++] = id, nv[n++] = "content-length", nv[n++] = len, nv[n] = NULL;
    h2_headers(&s->h2->hpack, &g->frames, s->sid, 0, nv);
    h2_frame(&g->frames, H2_DATA, H2_END_STREAM, s->sid, body.s, body.len);
    tt_sb_free(&body);
}

/* The response's HEADERS: :status 200 and what the HTTP/1.1 head says. */
static void h2_response_head(generator *g, stream *s, uint64_t created)
{
    char date[64], id[32];
    http_date(created, date, sizeof date);
    snprintf(id, sizeof id, "req-%u", s->number);
    const char *nv[] = {":status", "200", "date", date, "server", server_name(&g->o), "content-type",
                        content_type(&g->o), "x-request-id", id, NULL};
    h2_headers(&s->h2->hpack, &g->frames, s->sid, 0, nv);
}

/* g->ev as DATA (one frame unless it passes H2_MAX_FRAME), END_STREAM on
 * the stream's last. */
static void h2_event_data(generator *g, stream *s, bool last)
{
    size_t off = 0;
    do {
        size_t n = g->ev.len - off < H2_MAX_FRAME ? g->ev.len - off : H2_MAX_FRAME;
        bool end = last && off + n == g->ev.len;
        h2_frame(&g->frames, H2_DATA, end ? H2_END_STREAM : 0, s->sid, g->ev.s + off, n);
        off += n;
    } while (off < g->ev.len);
}

/* Send g->frames from dir and empty it. */
static int h2_flush(generator *g, stream *s, tt_direction dir, uint64_t ts)
{
    int rc = dir == TT_DIR_S2C ? send_server(g, s, (const char *)g->frames.p, g->frames.n, ts)
                               : tt_pw_send(s->conn, dir, g->frames.p, g->frames.n, ts);
    g->frames.n = 0;
    return rc;
}

/* ---- streams ---- */

static int client_address(const options *o, unsigned n, char *ip, size_t iplen, uint16_t *port)
{
    unsigned block = (n - 1) / 40000;
    *port = (uint16_t)(20000 + (n - 1) % 40000);
    if (o->ipv6) return snprintf(ip, iplen, "fd00::1:%x", block + 1);
    return snprintf(ip, iplen, "10.%u.%u.%u", 1 + block / 62500, (block / 250) % 250 + 1, block % 250 + 1);
}

/* A new stream whose request is at t0 on a new connection (first NULL),
 * or as the HTTP/2 stream of index index (0-based) on the connection of first. */
static stream *stream_new(generator *g, unsigned lane, uint64_t t0, const stream *first, unsigned index)
{
    const options *o = &g->o;
    stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->number = ++g->started;
    s->lane = lane;
    s->t0 = t0;
    s->rng = o->seed * 0x100000001b3ULL ^ s->number;
    llm_splitmix(&s->rng);
    s->prompt_tokens = 12 + (unsigned)(llm_splitmix(&s->rng) % 40);
    snprintf(s->id, sizeof s->id, "%s-%016" PRIx64,
             o->llm.dialect == D_OPENAI_CHAT ? "chatcmpl" : o->llm.dialect == D_OPENAI_COMPLETIONS ? "cmpl" : "gen",
             llm_splitmix(&s->rng));

    if (first) {
        s->conn = first->conn;
        s->h2 = first->h2;
    } else {
        char ip[64];
        uint16_t port;
        client_address(o, s->number, ip, sizeof ip, &port);
        s->conn = tt_pw_conn_new(g->w, ip, port, o->ipv6 ? "fd00::2" : "10.0.0.2", 8000);
        if (!s->conn || (o->http2 && !(s->h2 = calloc(1, sizeof *s->h2)))) {
            free(s);
            return NULL;
        }
        if (s->h2) h2_script_init(&s->h2->hpack);
    }
    /* drawn either way, the server's first: the order gcc evaluated the two draws in as call arguments */
    uint32_t sisn = (uint32_t)llm_splitmix(&s->rng), cisn = (uint32_t)llm_splitmix(&s->rng);
    if (!first) tt_pw_conn_isn(s->conn, cisn, sisn);
    if (s->h2) {
        s->sid = 2 * index + 1;
        s->h2->open++;
    }

    unsigned npre = llm_pre_frames(o->llm.dialect), npost = llm_post_frames(&o->llm);
    s->nevents = 5 + npre + o->llm.tokens + npost + 4;
    s->events = calloc(s->nevents, sizeof *s->events);
    if (!s->events) {
        free(s); /* s->h2 stays with its connection's other streams, or leaks on this exit path */
        return NULL;
    }
    size_t n = 0;
    uint64_t hs = t0 >= 60000 ? t0 - 60000 : 0;
    if (!first) s->events[n++] = (event){hs, EV_HANDSHAKE, 0};
    if (!first && s->h2) {
        s->events[n++] = (event){hs + (t0 - hs) / 3, EV_H2_PREFACE, 0};
        s->events[n++] = (event){hs + (t0 - hs) * 2 / 3, EV_H2_SETTINGS, 0};
    }
    s->events[n++] = (event){t0, EV_REQUEST, 0};
    s->events[n++] = (event){t0 + o->llm.ttft_ns / 4, EV_HEADERS, 0};
    for (unsigned k = 0; k < npre; k++) s->events[n++] = (event){t0 + o->llm.ttft_ns / 2, EV_PRE, k};
    uint64_t t = t0 + o->llm.ttft_ns;
    for (unsigned k = 0; k < o->llm.tokens; k++) {
        if (k > 0) {
            /* itl scaled by a factor in [0.75, 1.25] */
            uint64_t r = llm_splitmix(&s->rng) % 1001;
            t += o->llm.itl_ns * (750 + r / 2) / 1000;
        }
        s->events[n++] = (event){t, EV_TOKEN, k};
    }
    uint64_t step = o->llm.itl_ns / 8 > 1000 ? o->llm.itl_ns / 8 : 1000;
    for (unsigned k = 0; k < npost; k++) s->events[n++] = (event){t += step, EV_POST, k};
    t += step;
    if (!s->h2) s->events[n++] = (event){t, EV_ZERO_CHUNK, 0}; /* HTTP/2: END_STREAM on the last event */
    s->events[n++] = (event){t += step, EV_SERVER_FIN, 0};
    s->events[n++] = (event){t += 40000, EV_CLIENT_FIN, 0};
    s->events[n++] = (event){t += 20000, EV_LAST_ACK, 0};
    s->nevents = n;
    if (o->pw_flags & TT_PW_MICRO) /* the file keeps microseconds: choose instants it can hold */
        for (size_t i = 0; i < n; i++) s->events[i].ts = s->events[i].ts / 1000 * 1000;
    for (size_t i = 0; i < n; i++)
        if (s->events[i].kind == EV_REQUEST) s->t0 = s->events[i].ts; /* the request's instant */
    return s;
}

static void stream_free(stream *s)
{
    if (s->h2 && s->closes_conn) { /* the connection's other streams are gone */
        h2_script_free(&s->h2->hpack);
        free(s->h2);
    }
    tt_sb_free(&s->text);
    free(s->events);
    free(s);
}

static int send_server(generator *g, stream *s, const char *data, size_t len, uint64_t ts)
{
    int rc = tt_pw_send(s->conn, TT_DIR_S2C, data, len, ts);
    if (++s->server_segments % 2 == 0) rc |= tt_pw_ack(s->conn, TT_DIR_C2S, ts); /* delayed ACK */
    return rc;
}

/* Send g->ev (when non-empty) as one HTTP chunk, or as HTTP/2 DATA. */
static int send_event_chunk(generator *g, stream *s, uint64_t ts)
{
    if (!g->ev.len) return 0;
    if (s->h2) {
        /* the last of the stream's frames: EV_SERVER_FIN (HTTP/2 has no zero chunk) comes next */
        h2_event_data(g, s, s->events[s->next + 1].kind == EV_SERVER_FIN);
        g->events_written++;
        return h2_flush(g, s, TT_DIR_S2C, ts);
    }
    g->chunk.len = 0;
    tt_sb_printf(&g->chunk, "%zx\r\n%s\r\n", g->ev.len, g->ev.s);
    g->events_written++;
    return send_server(g, s, g->chunk.s, g->chunk.len, ts);
}

static void write_truth(generator *g, const stream *s)
{
    if (!g->truth) return;
    FILE *f = g->truth;
    uint64_t first = 0, last = 0;
    fprintf(f, "{\"request_id\":\"req-%u\",\"dialect\":\"%s\",\"req_first_ns\":%" PRIu64 ",\"token_ns\":[",
            s->number, llm_dialect_names[g->o.llm.dialect], s->t0);
    bool any = false;
    for (size_t i = 0; i < s->nevents; i++) {
        if (s->events[i].kind != EV_TOKEN) continue;
        if (!any) first = s->events[i].ts;
        last = s->events[i].ts;
        fprintf(f, any ? ",%" PRIu64 : "%" PRIu64, s->events[i].ts);
        any = true;
    }
    fprintf(f, "],\"ttft_ns\":%" PRIu64 ",\"e2el_ns\":%" PRIu64 ",\"tokens\":%u}\n", any ? first - s->t0 : 0,
            any ? last - s->t0 : 0, g->o.llm.tokens);
}

/* The dialect frame writers' view of s. */
static llm_stream frame_view(stream *s)
{
    return (llm_stream){.id = s->id, .prompt_tokens = s->prompt_tokens, .rng = &s->rng, .text = &s->text,
                        .duration_ns = s->events[s->nevents - 1].ts - s->t0};
}

/* Write the stream's next event; returns -1 on a write error. */
static int stream_step(generator *g, stream *s)
{
    const event *e = &s->events[s->next];
    llm_stream view = frame_view(s);
    uint64_t created = g->o.start_ns / 1000000000u;
    int rc = 0;
    g->ev.len = 0;
    if (g->ev.s) g->ev.s[0] = 0;
    switch (e->kind) {
    case EV_HANDSHAKE:
        rc = tt_pw_handshake(s->conn, e->ts);
        break;
    case EV_H2_PREFACE:
        h2_client_preface(g);
        rc = h2_flush(g, s, TT_DIR_C2S, e->ts);
        break;
    case EV_H2_SETTINGS: {
        static const uint32_t kv[][2] = {{0x3 /* MAX_CONCURRENT_STREAMS */, 128}};
        h2_settings(&g->frames, 0, kv, 1);
        h2_settings(&g->frames, H2_ACK, NULL, 0);
        rc = h2_flush(g, s, TT_DIR_S2C, e->ts);
        break;
    }
    case EV_REQUEST: {
        if (s->h2) {
            g->frames.dir = TT_DIR_C2S;
            if (!s->h2->settings_acked) h2_settings(&g->frames, H2_ACK, NULL, 0);
            s->h2->settings_acked = true;
            h2_request(g, s);
            rc = h2_flush(g, s, TT_DIR_C2S, e->ts);
            rc |= tt_pw_ack(s->conn, TT_DIR_S2C, e->ts);
            break;
        }
        tt_strbuf body = {0}, req = {0};
        build_request(g, s, &body, &req);
        rc = tt_pw_send(s->conn, TT_DIR_C2S, req.s, req.len, e->ts);
        rc |= tt_pw_ack(s->conn, TT_DIR_S2C, e->ts);
        tt_sb_free(&body);
        tt_sb_free(&req);
        break;
    }
    case EV_HEADERS: {
        if (s->h2) {
            g->frames.dir = TT_DIR_S2C;
            h2_response_head(g, s, created);
            rc = h2_flush(g, s, TT_DIR_S2C, e->ts);
            break;
        }
        tt_strbuf head = {0};
        build_response_head(g, s, &head, created);
        rc = send_server(g, s, head.s, head.len, e->ts);
        tt_sb_free(&head);
        break;
    }
    case EV_PRE:
        llm_frame_pre(&g->ev, &g->o.llm, &view, e->index, created);
        rc = send_event_chunk(g, s, e->ts);
        break;
    case EV_TOKEN:
        llm_frame_token(&g->ev, &g->o.llm, &view, e->index, created);
        rc = send_event_chunk(g, s, e->ts);
        break;
    case EV_POST:
        llm_frame_post(&g->ev, &g->o.llm, &view, e->index, created);
        rc = send_event_chunk(g, s, e->ts);
        break;
    case EV_ZERO_CHUNK:
        rc = send_server(g, s, "0\r\n\r\n", 5, e->ts);
        break;
    case EV_SERVER_FIN:
        if (s->h2 && --s->h2->open > 0) { /* others still stream on this connection: this one is done */
            s->next = s->nevents;
            return 0;
        }
        s->closes_conn = true;
        rc = tt_pw_fin(s->conn, TT_DIR_S2C, e->ts);
        break;
    case EV_CLIENT_FIN:
        rc = tt_pw_fin(s->conn, TT_DIR_C2S, e->ts);
        break;
    case EV_LAST_ACK:
        rc = tt_pw_ack(s->conn, TT_DIR_S2C, e->ts);
        break;
    }
    s->next++;
    return rc ? -1 : 0;
}

/* A lane's next connection: one stream, or (HTTP/2) up to per_conn streams
 * whose requests are 10 us apart from t0 on. */
static int start_connection(generator *g, unsigned lane, uint64_t t0)
{
    unsigned per = g->o.http2 ? g->o.per_conn : 1;
    stream *first = NULL;
    for (unsigned k = 0; k < per && g->started < g->o.streams; k++) {
        stream *s = stream_new(g, lane, t0 + k * 10000ull, first, k);
        if (!s) return -1;
        if (!first) first = s;
        heap_push(g, s);
    }
    return 0;
}

static int generate(generator *g)
{
    const options *o = &g->o;
    unsigned per = o->http2 ? o->per_conn : 1;
    unsigned lanes = o->concurrency < o->streams ? o->concurrency : o->streams;
    lanes = (lanes + per - 1) / per; /* connections in flight */
    uint64_t stagger = (o->llm.ttft_ns + (uint64_t)o->llm.tokens * o->llm.itl_ns) / (lanes ? lanes : 1) + 1000;
    uint64_t lane_rng = o->seed ^ 0x5eed;
    g->heap = calloc((size_t)(lanes ? lanes : 1) * per, sizeof *g->heap);
    if (!g->heap) return -1;
    for (unsigned l = 0; l < lanes && g->started < o->streams; l++)
        if (start_connection(g, l, o->start_ns + 100000 + l * stagger) != 0) return -1;
    while (g->heap_len) {
        stream *s = g->heap[0];
        if (stream_step(g, s) != 0) return -1;
        if (s->next < s->nevents) {
            heap_sift_down(g);
            continue;
        }
        heap_pop(g);
        write_truth(g, s);
        if (s->closes_conn && g->started < o->streams) {
            uint64_t idle = 100000 + llm_splitmix(&lane_rng) % 400000; /* 0.1 to 0.5 ms between requests */
            if (start_connection(g, s->lane, s->events[s->nevents - 1].ts + idle + 60000) != 0) {
                stream_free(s);
                return -1;
            }
        }
        stream_free(s);
    }
    return 0;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ttpcapgen -o FILE [options]\n"
            "Write a capture of streamed LLM completions at chosen instants.\n"
            "  -o, --out FILE            capture to write\n"
            "  --streams N               streams (default 8)\n"
            "  --tokens T                token events per stream (default 32)\n"
            "  --concurrency C           streams in flight at once (default 4)\n"
            "  --ttft-us X               request to first token (default 150000)\n"
            "  --itl-us Y                mean inter-token gap, jittered +-25%% (default 20000)\n"
            "  --seed S                  seed for jitter, ids, ISNs and texts (default 1)\n"
            "  --dialect D               openai-chat (default), openai-completions, responses,\n"
            "                            anthropic, tgi, llamacpp, ollama\n"
            "  --crlf                    CRLF line ends in SSE events\n"
            "  --usage-with-choices      usage on the finish chunk, not a separate frame (OpenAI)\n"
            "  --truth FILE              JSON lines with the chosen instants, one per stream\n"
            "  --model NAME              model name in requests and frames\n"
            "  --start-ns NS             instant of the capture's start (default 1700000000 s)\n"
            "  --linktype L              eth (default), vlan, sll, sll2, null, raw\n"
            "  --pcapng                  write pcapng\n"
            "  --micro                   microsecond timestamps (instants chosen on whole us)\n"
            "  --ipv6                    IPv6 addresses\n"
            "  --http2                   HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1\n"
            "  --streams-per-conn N      HTTP/2 streams in flight on one connection (default 1);\n"
            "                            --concurrency still counts streams\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end) return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *s, unsigned *out, unsigned min)
{
    uint64_t v;
    if (parse_u64(s, &v) || v < min || v > 100000000) return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    generator g;
    memset(&g, 0, sizeof g);
    options *o = &g.o;
    o->streams = 8;
    o->llm.tokens = 32;
    o->concurrency = 4;
    o->llm.ttft_ns = 150000000;
    o->llm.itl_ns = 20000000;
    o->seed = 1;
    o->start_ns = 1700000000ull * 1000000000ull;
    o->llm.model = "meta-llama/Llama-3.1-8B-Instruct";
    o->linktype = DLT_EN10MB;
    o->per_conn = 1;

    enum { O_STREAMS = 256, O_TOKENS, O_CONC, O_TTFT, O_ITL, O_SEED, O_DIALECT, O_CRLF, O_UWC, O_TRUTH, O_MODEL,
           O_START, O_LINK, O_PCAPNG, O_MICRO, O_IPV6, O_HTTP2, O_PER_CONN };
    static const struct option longopts[] = {
        {"out", required_argument, 0, 'o'}, {"streams", required_argument, 0, O_STREAMS},
        {"tokens", required_argument, 0, O_TOKENS}, {"concurrency", required_argument, 0, O_CONC},
        {"ttft-us", required_argument, 0, O_TTFT}, {"itl-us", required_argument, 0, O_ITL},
        {"seed", required_argument, 0, O_SEED}, {"dialect", required_argument, 0, O_DIALECT},
        {"crlf", no_argument, 0, O_CRLF}, {"usage-with-choices", no_argument, 0, O_UWC},
        {"truth", required_argument, 0, O_TRUTH}, {"model", required_argument, 0, O_MODEL},
        {"start-ns", required_argument, 0, O_START}, {"linktype", required_argument, 0, O_LINK},
        {"pcapng", no_argument, 0, O_PCAPNG}, {"micro", no_argument, 0, O_MICRO}, {"ipv6", no_argument, 0, O_IPV6},
        {"http2", no_argument, 0, O_HTTP2}, {"streams-per-conn", required_argument, 0, O_PER_CONN},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    uint64_t us;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'o': o->out = optarg; break;
        case O_STREAMS: bad = parse_uint(optarg, &o->streams, 1); break;
        case O_TOKENS: bad = parse_uint(optarg, &o->llm.tokens, 1); break;
        case O_CONC: bad = parse_uint(optarg, &o->concurrency, 1); break;
        case O_TTFT: bad = parse_u64(optarg, &us) || us > 3600000000ull; o->llm.ttft_ns = us * 1000; break;
        case O_ITL: bad = parse_u64(optarg, &us) || us > 3600000000ull; o->llm.itl_ns = us * 1000; break;
        case O_SEED: bad = parse_u64(optarg, &o->seed); break;
        case O_START: bad = parse_u64(optarg, &o->start_ns); break;
        case O_DIALECT: {
            bad = 1;
            for (size_t i = 0; i < sizeof llm_dialect_names / sizeof llm_dialect_names[0]; i++)
                if (!strcmp(optarg, llm_dialect_names[i])) o->llm.dialect = (dialect)i, bad = 0;
            break;
        }
        case O_CRLF: o->llm.crlf = true; break;
        case O_UWC: o->llm.usage_with_choices = true; break;
        case O_TRUTH: o->truth = optarg; break;
        case O_MODEL: o->llm.model = optarg; bad = strpbrk(optarg, "\"\\") != NULL; break;
        case O_LINK:
            if (!strcmp(optarg, "eth")) o->linktype = DLT_EN10MB;
            else if (!strcmp(optarg, "vlan")) o->linktype = DLT_EN10MB, o->pw_flags |= TT_PW_VLAN;
            else if (!strcmp(optarg, "sll")) o->linktype = DLT_LINUX_SLL;
            else if (!strcmp(optarg, "sll2")) o->linktype = DLT_LINUX_SLL2;
            else if (!strcmp(optarg, "null")) o->linktype = DLT_NULL;
            else if (!strcmp(optarg, "raw")) o->linktype = DLT_RAW;
            else bad = 1;
            break;
        case O_PCAPNG: o->pw_flags |= TT_PW_PCAPNG; break;
        case O_MICRO: o->pw_flags |= TT_PW_MICRO; break;
        case O_IPV6: o->ipv6 = true; break;
        case O_HTTP2: o->http2 = true; break;
        case O_PER_CONN: bad = parse_uint(optarg, &o->per_conn, 1) || o->per_conn > 1000; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "ttpcapgen: bad value for --%s: '%s'\n",
                    c == 'o' ? "out" : longopts[c - O_STREAMS + 1].name, optarg);
            return 2;
        }
    }
    if (!o->out || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (o->per_conn > 1 && !o->http2) {
        fprintf(stderr, "ttpcapgen: --streams-per-conn needs --http2\n");
        return 2;
    }
    if (o->llm.crlf && o->llm.dialect == D_OLLAMA) {
        fprintf(stderr, "ttpcapgen: --crlf applies to SSE dialects, not ollama (NDJSON)\n");
        return 2;
    }
    g.w = tt_pw_open(o->out, o->linktype, o->pw_flags | TT_PW_TCP_TSOPT);
    if (!g.w) return 1;
    if (o->truth && !(g.truth = fopen(o->truth, "w"))) {
        perror(o->truth);
        tt_pw_close(g.w);
        return 1;
    }
    int rc = generate(&g);
    if (tt_pw_close(g.w) != 0) rc = -1;
    if (g.truth && fclose(g.truth) != 0) rc = -1;
    while (g.heap_len) stream_free(g.heap[--g.heap_len]);
    free(g.heap);
    tt_sb_free(&g.ev);
    tt_sb_free(&g.chunk);
    free(g.frames.p);
    if (rc) {
        fprintf(stderr, "ttpcapgen: failed writing %s\n", o->out);
        return 1;
    }
    printf("ttpcapgen: wrote %s: %u streams, %" PRIu64 " events, dialect %s%s\n", o->out, o->streams,
           g.events_written, llm_dialect_names[o->llm.dialect], o->http2 ? ", HTTP/2" : "");
    return 0;
}
