/* test_http2.c - the passive HTTP/2 framing parser (proto/http2.c).
 *
 * Golden cases (tests/golden/http2/): a script of both directions' bytes
 * (records: op = dir | kind << 1 with kind 0 data, 1 gap, 2 eof clean,
 * 3 eof reset; a 16-bit big-endian length; data), run whole (one feed per
 * record), split at every byte and byte by byte: identical traces. The
 * scripts are made by the generator below (H2_UPDATE=1 rewrites the golden
 * files and the fuzzer's seeds from it: review the diff), header blocks by
 * nghttp2's own deflater (Huffman, dynamic table). Then: a real exchange
 * between an nghttp2 client session and server session in memory, checked
 * against what the sessions themselves received; HPACK against the
 * deflater with random header sets, from the start and from the middle
 * (nothing ever decoded wrong); instants; windows; bounds. */
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
#include "proto/http2.h"

enum { MODE_PRIOR = 0, MODE_MIDSTREAM = 1, MODE_UPGRADE = 2 };
enum { K_DATA = 0, K_GAP = 1, K_EOF = 2, K_RESET = 3 };

typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;

static void put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put8(bytes *b, uint8_t v) { put(b, &v, 1); }

static void put32(bytes *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
    put(b, x, 4);
}

static const char *dir_str(tt_direction d) { return d == TT_DIR_C2S ? "c2s" : "s2c"; }

/* ---- the trace: one line per callback ---- */

typedef struct trace {
    tt_strbuf out;
} trace;

static void tr_headers(void *ud, const tt_h2_headers *h)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "headers %s stream=%u end_stream=%d", dir_str(h->dir), h->stream_id, h->end_stream);
    if (h->interim) tt_sb_printf(o, " interim");
    if (h->trailers) tt_sb_printf(o, " trailers");
    if (h->promise) tt_sb_printf(o, " promise assoc=%u", h->assoc_stream_id);
    if (h->skipped) tt_sb_printf(o, " skipped");
    if (h->truncated) tt_sb_printf(o, " truncated");
    if (h->has_priority) tt_sb_printf(o, " priority dep=%u weight=%u excl=%d", h->depends_on, h->weight, h->exclusive);
    tt_sb_printf(o, " status=%d block=%zu frames=%u unknown=%zu off=%llu..%llu\n", h->status, h->block_len, h->frames,
                 h->n_unknown, (unsigned long long)h->first_off, (unsigned long long)h->last_off);
    for (size_t i = 0; i < h->n_headers; i++) {
        const tt_h2_header *f = &h->headers[i];
        tt_sb_printf(o, "  ");
        if (f->flags & TT_H2_HDR_NAME_UNKNOWN) tt_sb_printf(o, "?%u", f->index);
        else {
            tt_sb_printf(o, "\"");
            tt_sb_escaped(o, f->name, f->name_len);
            tt_sb_printf(o, "\"");
        }
        if (f->flags & TT_H2_HDR_VALUE_UNKNOWN) tt_sb_printf(o, " ?");
        else {
            tt_sb_printf(o, " \"");
            tt_sb_escaped(o, f->value, f->value_len);
            tt_sb_printf(o, "\"");
        }
        if (f->flags & TT_H2_HDR_NEVER_INDEXED) tt_sb_printf(o, " never-indexed");
        tt_sb_printf(o, "\n");
    }
}

static void tr_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    tt_strbuf *o = &((trace *)ud)->out;
    assert_true(n > 0);
    tt_sb_printf(o, "data %s stream=%u off=%llu \"", dir_str(dir), sid, (unsigned long long)off);
    tt_sb_escaped(o, (const char *)d, n);
    tt_sb_printf(o, "\"\n");
}

static void tr_end(void *ud, const tt_h2_stream_end *e)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "end %s stream=%u %s", dir_str(e->dir), e->stream_id, tt_http2_end_name(e->how));
    if (e->how == TT_H2_END_RST || e->how == TT_H2_END_GOAWAY) tt_sb_printf(o, " code=%u", e->error_code);
    tt_sb_printf(o, " by=%s off=%llu body=%llu data_frames=%llu pad=%llu blocks=%llu wu=%u/%llu\n", dir_str(e->by),
                 (unsigned long long)e->off, (unsigned long long)e->body_bytes, (unsigned long long)e->data_frames,
                 (unsigned long long)e->pad_bytes, (unsigned long long)e->header_blocks, e->window_updates,
                 (unsigned long long)e->window_credit);
}

static void tr_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off)
{
    tt_sb_printf(&((trace *)ud)->out, "error %s %s \"%s\" off=%llu\n", dir_str(dir), tt_http2_error_name(code), msg,
                 (unsigned long long)off);
}

static void tr_frame(void *ud, const tt_h2_frame *f)
{
    tt_sb_printf(&((trace *)ud)->out, "frame %s %s flags=0x%02x stream=%u len=%u off=%llu\n", dir_str(f->dir),
                 tt_http2_frame_name(f->type), f->flags, f->stream_id, f->length, (unsigned long long)f->off);
}

static void tr_settings(void *ud, tt_direction dir, bool ack, const tt_h2_setting *s, size_t n, uint64_t ns)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "settings %s%s", dir_str(dir), ack ? " ACK" : "");
    for (size_t i = 0; i < n; i++) tt_sb_printf(o, " %u=%u", s[i].id, s[i].value);
    tt_sb_printf(o, "\n");
}

static void tr_ping(void *ud, tt_direction dir, bool ack, const uint8_t op[8], uint64_t ns)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "ping %s ack=%d ", dir_str(dir), ack);
    for (int i = 0; i < 8; i++) tt_sb_printf(o, "%02x", op[i]);
    tt_sb_printf(o, "\n");
}

static void tr_goaway(void *ud, tt_direction dir, uint32_t last, uint32_t code, const uint8_t *dbg, size_t n,
                      uint64_t ns)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "goaway %s last=%u code=%u debug=\"", dir_str(dir), last, code);
    tt_sb_escaped(o, (const char *)dbg, n);
    tt_sb_printf(o, "\"\n");
}

static void tr_window(void *ud, const tt_h2_window_update *w)
{
    tt_strbuf *o = &((trace *)ud)->out;
    tt_sb_printf(o, "window %s stream=%u +%u count=%u total=%llu window=", dir_str(w->dir), w->stream_id,
                 w->increment, w->count, (unsigned long long)w->total);
    if (w->window_known) tt_sb_printf(o, "%lld\n", (long long)w->window);
    else tt_sb_printf(o, "?\n");
}

static const tt_http2_callbacks trace_cb = { tr_headers, tr_data,     tr_end,    tr_error, tr_frame,
                                             tr_settings, tr_ping, tr_goaway, tr_window };

/* ---- running a script ---- */

typedef struct run_cfg {
    int mode;
    char upgrade[256];
} run_cfg;

static tt_http2_conn *open_conn(const run_cfg *cfg, const tt_http2_callbacks *cb, void *ud)
{
    tt_http2_conn *c = cfg->mode == MODE_MIDSTREAM ? tt_http2_new_midstream(cb, ud) : tt_http2_new(cb, ud);
    assert_non_null(c);
    if (cfg->mode == MODE_UPGRADE) tt_http2_start_upgrade(c, cfg->upgrade, strlen(cfg->upgrade), 1);
    return c;
}

/* Feed a script: records whole; the data record holding global data
 * position `cut` (0: none) split there; or every data byte alone. */
static void feed_script(tt_http2_conn *c, const uint8_t *sc, size_t n, size_t cut, bool bytewise, uint64_t *ns)
{
    size_t i = 0, pos = 0;
    while (i + 3 <= n) {
        uint8_t op = sc[i];
        size_t len = (size_t)sc[i + 1] << 8 | sc[i + 2];
        i += 3;
        tt_direction dir = (tt_direction)(op & 1);
        int kind = (op >> 1) & 3;
        if (kind == K_GAP) {
            tt_http2_gap(c, dir, len, (*ns)++);
            continue;
        }
        if (kind == K_EOF || kind == K_RESET) {
            tt_http2_eof(c, dir, kind == K_EOF, (*ns)++);
            continue;
        }
        assert_true(len <= n - i);
        size_t at = 0;
        while (at < len) {
            size_t end = len;
            if (bytewise) end = at + 1;
            else if (cut > pos && cut < pos + len && at < cut - pos) end = cut - pos;
            uint8_t *g = tt_guard_copy(sc + i + at, end - at);
            tt_http2_feed(c, dir, g, end - at, (*ns)++);
            tt_guard_free(g, end - at);
            at = end;
        }
        pos += len;
        i += len;
    }
    assert_int_equal(i, n);
}

static char *run_script(const run_cfg *cfg, const uint8_t *sc, size_t n, size_t cut, bool bytewise)
{
    trace t = { 0 };
    tt_sb_printf(&t.out, "%s", "");
    tt_http2_conn *c = open_conn(cfg, &trace_cb, &t);
    uint64_t ns = 1000;
    feed_script(c, sc, n, cut, bytewise, &ns);
    tt_http2_free(c);
    return t.out.s;
}

static size_t script_data_len(const uint8_t *sc, size_t n)
{
    size_t i = 0, total = 0;
    while (i + 3 <= n) {
        size_t len = (size_t)sc[i + 1] << 8 | sc[i + 2];
        bool data = ((sc[i] >> 1) & 3) == K_DATA;
        i += 3 + (data ? len : 0);
        if (data) total += len;
    }
    return total;
}

/* Whole, split at every data byte (every `step`th for long scripts), byte by byte. */
static int check_all_cuts(const run_cfg *cfg, const uint8_t *sc, size_t n, const char *expect, const char *name)
{
    int bad = 0;
    char *s = run_script(cfg, sc, n, 0, false);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (whole): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    size_t total = script_data_len(sc, n), step = total > 6000 ? 97 : 1;
    for (size_t k = 1; k < total && bad < 3; k += step) {
        s = run_script(cfg, sc, n, k, false);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (split at %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k, expect,
                    s);
            bad++;
        }
        free(s);
    }
    s = run_script(cfg, sc, n, 0, true);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (byte by byte): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    return bad;
}

/* ---- the generator ---- */

typedef struct gen {
    const char *name, *title;
    run_cfg cfg;
    bytes sc;
    bool can_append; /* the last record is data of dir last_dir */
    tt_direction last_dir;
    size_t last_len_at;
    nghttp2_hd_deflater *def[2];
} gen;

static void g_init(gen *g, const char *name, const char *title, int mode)
{
    memset(g, 0, sizeof *g);
    g->name = name;
    g->title = title;
    g->cfg.mode = mode;
    /* the deflaters may grow past 4096 when told to (their table starts at 4096) */
    for (int i = 0; i < 2; i++) assert_int_equal(nghttp2_hd_deflate_new(&g->def[i], 65536), 0);
}

static void g_free(gen *g)
{
    for (int i = 0; i < 2; i++) nghttp2_hd_deflate_del(g->def[i]);
    free(g->sc.p);
}

static void g_data(gen *g, tt_direction dir, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        if (!g->can_append || g->last_dir != dir) {
            put8(&g->sc, (uint8_t)(dir | K_DATA << 1));
            g->last_len_at = g->sc.n;
            put8(&g->sc, 0);
            put8(&g->sc, 0);
            g->can_append = true;
            g->last_dir = dir;
        }
        size_t have = (size_t)g->sc.p[g->last_len_at] << 8 | g->sc.p[g->last_len_at + 1];
        size_t take = 65535 - have < n ? 65535 - have : n;
        put(&g->sc, b, take);
        have += take;
        g->sc.p[g->last_len_at] = (uint8_t)(have >> 8);
        g->sc.p[g->last_len_at + 1] = (uint8_t)have;
        b += take;
        n -= take;
        if (have == 65535) g->can_append = false;
    }
}

static void g_op(gen *g, tt_direction dir, int kind, uint16_t len)
{
    put8(&g->sc, (uint8_t)(dir | kind << 1));
    put8(&g->sc, (uint8_t)(len >> 8));
    put8(&g->sc, (uint8_t)len);
    g->can_append = false;
}

static void g_eof(gen *g, tt_direction dir) { g_op(g, dir, K_EOF, 0); }

static void frame_head(bytes *b, size_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    put8(b, (uint8_t)(len >> 16));
    put8(b, (uint8_t)(len >> 8));
    put8(b, (uint8_t)len);
    put8(b, type);
    put8(b, flags);
    put32(b, sid);
}

static void g_frame(gen *g, tt_direction dir, uint8_t type, uint8_t flags, uint32_t sid, const void *pl, size_t n)
{
    bytes f = { 0 };
    frame_head(&f, n, type, flags, sid);
    put(&f, pl, n);
    g_data(g, dir, f.p, f.n);
    free(f.p);
}

static void g_preface(gen *g) { g_data(g, TT_DIR_C2S, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN); }

/* SETTINGS: pairs of (id, value), npairs of them. */
static void g_settings(gen *g, tt_direction dir, const uint32_t *kv, size_t npairs)
{
    bytes p = { 0 };
    for (size_t i = 0; i < npairs; i++) {
        put8(&p, (uint8_t)(kv[2 * i] >> 8));
        put8(&p, (uint8_t)kv[2 * i]);
        put32(&p, kv[2 * i + 1]);
    }
    g_frame(g, dir, TT_H2_SETTINGS, 0, 0, p.p, p.n);
    free(p.p);
}

static void g_ack(gen *g, tt_direction dir) { g_frame(g, dir, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0); }

/* An HPACK block of the name/value pairs in nv (NULL-terminated); a name
 * starting with '!' is sent never-indexed. */
static bytes g_hpack(gen *g, tt_direction dir, const char *const *nv)
{
    nghttp2_nv v[64];
    size_t k = 0;
    for (size_t i = 0; nv[i]; i += 2, k++) {
        const char *name = nv[i];
        uint8_t flags = NGHTTP2_NV_FLAG_NONE;
        if (name[0] == '!') {
            name++;
            flags = NGHTTP2_NV_FLAG_NO_INDEX;
        }
        v[k] = (nghttp2_nv){ (uint8_t *)(uintptr_t)name, (uint8_t *)(uintptr_t)nv[i + 1], strlen(name),
                             strlen(nv[i + 1]), flags };
    }
    bytes b = { 0 };
    size_t bound = nghttp2_hd_deflate_bound(g->def[dir], v, k);
    b.p = malloc(bound);
    b.cap = bound;
    ssize_t r = nghttp2_hd_deflate_hd(g->def[dir], b.p, bound, v, k);
    assert_true(r >= 0);
    b.n = (size_t)r;
    return b;
}

/* HEADERS (+ CONTINUATION frames of `cont` bytes when cont > 0), with
 * optional padding and priority. */
typedef struct hopts {
    size_t cont;
    int pad;          /* -1 none */
    bool prio;
    uint32_t dep;
    uint8_t weight;
    bool excl;
} hopts;

static void g_headers_opt(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv,
                          const hopts *o)
{
    bytes blk = g_hpack(g, dir, nv);
    size_t first = o && o->cont && o->cont < blk.n ? o->cont : blk.n;
    bytes pl = { 0 };
    uint8_t fl = flags;
    if (o && o->pad >= 0) {
        fl |= TT_H2_FLAG_PADDED;
        put8(&pl, (uint8_t)o->pad);
    }
    if (o && o->prio) {
        fl |= TT_H2_FLAG_PRIORITY;
        put32(&pl, o->dep | (o->excl ? 0x80000000u : 0));
        put8(&pl, o->weight);
    }
    put(&pl, blk.p, first);
    if (o && o->pad > 0) {
        uint8_t z[256] = { 0 };
        put(&pl, z, (size_t)o->pad);
    }
    if (first == blk.n) fl |= TT_H2_FLAG_END_HEADERS;
    g_frame(g, dir, TT_H2_HEADERS, fl, sid, pl.p, pl.n);
    size_t at = first;
    while (at < blk.n) {
        size_t take = blk.n - at < o->cont ? blk.n - at : o->cont;
        g_frame(g, dir, TT_H2_CONTINUATION, at + take == blk.n ? TT_H2_FLAG_END_HEADERS : 0, sid, blk.p + at, take);
        at += take;
    }
    free(pl.p);
    free(blk.p);
}

static void g_headers(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv)
{
    hopts o = { .pad = -1 };
    g_headers_opt(g, dir, sid, flags, nv, &o);
}

static void g_dataframe(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s)
{
    g_frame(g, dir, TT_H2_DATA, flags, sid, s, strlen(s));
}

static void g_padded_data(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s, uint8_t pad)
{
    bytes pl = { 0 };
    put8(&pl, pad);
    put(&pl, s, strlen(s));
    uint8_t z[256] = { 0 };
    put(&pl, z, pad);
    g_frame(g, dir, TT_H2_DATA, flags | TT_H2_FLAG_PADDED, sid, pl.p, pl.n);
    free(pl.p);
}

static void g_u32_frame(gen *g, tt_direction dir, uint8_t type, uint32_t sid, uint32_t v)
{
    bytes p = { 0 };
    put32(&p, v);
    g_frame(g, dir, type, 0, sid, p.p, p.n);
    free(p.p);
}

static void g_goaway(gen *g, tt_direction dir, uint32_t last, uint32_t code, const char *debug)
{
    bytes p = { 0 };
    put32(&p, last);
    put32(&p, code);
    put(&p, debug, strlen(debug));
    g_frame(g, dir, TT_H2_GOAWAY, 0, 0, p.p, p.n);
    free(p.p);
}

/* ---- the cases ---- */

static const char *const REQ[] = { ":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path",
                                   "/v1/chat/completions", "content-type", "application/json", "user-agent",
                                   "tokentap-test/1.0", "!authorization", "Bearer sk-test-123", NULL };
static const char *const REQ_GET[] = { ":method", "GET", ":scheme", "http", ":authority", "localhost:8000", ":path",
                                       "/v1/models", "user-agent", "tokentap-test/1.0", NULL };
static const char *const RESP_SSE[] = { ":status", "200", "content-type", "text/event-stream", "cache-control",
                                        "no-cache", "x-request-id", "req-0001", NULL };
static const char *const RESP_JSON[] = { ":status", "200", "content-type", "application/json", NULL };
static const char *const BODY = "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
static const char *const EV[] = { "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
                                  "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n", "data: [DONE]\n\n" };

static const uint32_t C_SETTINGS[] = { TT_H2_SETTINGS_ENABLE_PUSH, 0, TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS, 100,
                                       TT_H2_SETTINGS_INITIAL_WINDOW_SIZE, 65535 };
static const uint32_t S_SETTINGS[] = { TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS, 128, TT_H2_SETTINGS_MAX_FRAME_SIZE,
                                       16384 };

static void g_open(gen *g)
{
    g_preface(g);
    g_settings(g, TT_DIR_C2S, C_SETTINGS, 3);
    g_settings(g, TT_DIR_S2C, S_SETTINGS, 2);
    g_ack(g, TT_DIR_S2C);
    g_ack(g, TT_DIR_C2S);
}

static void case_prior_sse(gen *g)
{
    g_init(g, "prior_knowledge_sse", "h2c with prior knowledge: preface, SETTINGS both ways and their ACKs, a POST "
           "answered with an SSE stream in DATA frames, then a GET on stream 3 reusing the dynamic tables", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, BODY);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    for (int i = 0; i < 3; i++) g_dataframe(g, TT_DIR_S2C, 1, 0, EV[i]);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "");
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, 0, RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, "{\"data\":[{\"id\":\"m\"}]}");
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_continuation(gen *g)
{
    g_init(g, "continuation", "header blocks split over HEADERS and CONTINUATION frames; trailers in a HEADERS "
           "with END_STREAM, also continued", MODE_PRIOR);
    g_open(g);
    hopts o = { .cont = 9, .pad = -1 };
    g_headers_opt(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET, &o);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 1, 0, "{\"ok\":true}");
    static const char *const trailers[] = { "grpc-status", "0", "grpc-message", "all good", "x-usage", "42", NULL };
    o.cont = 5;
    g_headers_opt(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, trailers, &o);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_padding(gen *g)
{
    g_init(g, "padding", "PADDED DATA and HEADERS (with PRIORITY), padding removed; an empty padded DATA ends the "
           "stream", MODE_PRIOR);
    g_open(g);
    hopts o = { .pad = 7, .prio = true, .dep = 0, .weight = 15, .excl = true };
    g_headers_opt(g, TT_DIR_C2S, 1, 0, REQ, &o);
    g_padded_data(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, BODY, 20);
    o = (hopts){ .pad = 0 };
    g_headers_opt(g, TT_DIR_S2C, 1, 0, RESP_SSE, &o);
    g_padded_data(g, TT_DIR_S2C, 1, 0, EV[0], 3);
    g_padded_data(g, TT_DIR_S2C, 1, 0, EV[1], 0);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[2]);
    g_padded_data(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "", 12);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_interleaved(gen *g)
{
    g_init(g, "interleaved_streams", "two streams whose responses interleave DATA frames", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, BODY);
    g_headers(g, TT_DIR_C2S, 3, 0, REQ);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, "{\"model\":\"m\",\"stream\":true}");
    g_headers(g, TT_DIR_S2C, 3, 0, RESP_SSE);
    for (int i = 0; i < 3; i++) {
        g_dataframe(g, TT_DIR_S2C, 1, i == 2 ? TT_H2_FLAG_END_STREAM : 0, EV[i]);
        g_dataframe(g, TT_DIR_S2C, 3, i == 2 ? TT_H2_FLAG_END_STREAM : 0, EV[i]);
    }
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_rst(gen *g)
{
    g_init(g, "rst_stream", "the client cancels stream 1 mid-stream (RST_STREAM CANCEL); the server's DATA already "
           "in flight is late and ignored; stream 3 goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_RST_STREAM, 1, 8);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[1]);
    g_headers(g, TT_DIR_S2C, 3, 0, RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, "{}");
    g_u32_frame(g, TT_DIR_S2C, TT_H2_RST_STREAM, 3, 0); /* after the end: late */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_goaway(gen *g)
{
    g_init(g, "goaway", "the server's GOAWAY (last stream 1): stream 3 was not processed and ends GOAWAY, stream 1 "
           "completes", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_goaway(g, TT_DIR_S2C, 1, 0, "graceful shutdown");
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, EV[2]);
    g_goaway(g, TT_DIR_C2S, 0, 0, "");
    g_eof(g, TT_DIR_S2C);
    g_eof(g, TT_DIR_C2S);
}

static void case_window_ping(gen *g)
{
    g_init(g, "window_update_ping", "WINDOW_UPDATE on the connection and the stream (counted, timed, windows "
           "estimated), PING and its ACK, PRIORITY, and an unknown frame type ignored", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, BODY);
    g_u32_frame(g, TT_DIR_S2C, TT_H2_WINDOW_UPDATE, 0, 1000);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 0, 1 << 20);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 54);
    g_frame(g, TT_DIR_C2S, TT_H2_PING, 0, 0, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    g_frame(g, TT_DIR_S2C, TT_H2_PING, TT_H2_FLAG_ACK, 0, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    g_frame(g, TT_DIR_C2S, TT_H2_PRIORITY, 0, 1, "\x00\x00\x00\x00\x10", 5);
    g_frame(g, TT_DIR_S2C, 0x0b, 0xff, 1, "extension", 9);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[1]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 51);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, EV[2]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 14); /* stream ended: no stream window */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

/* Many distinct headers, so that a 4096-byte table would have evicted the first. */
static void many_headers(const char **nv, char (*vals)[64], int n, const char *status)
{
    int k = 0;
    nv[k++] = ":status";
    nv[k++] = status;
    for (int i = 0; i < n; i++) {
        snprintf(vals[i], 64, "value-%02d-%s", i, "0123456789abcdef0123456789abcdef0123");
        nv[k++] = i % 2 ? "x-meta-odd" : "x-meta-even";
        nv[k++] = vals[i];
    }
    nv[k] = NULL;
}

static void case_table_size(gen *g)
{
    g_init(g, "table_size_change", "SETTINGS_HEADER_TABLE_SIZE: the client announces 8192, the server acknowledges "
           "and its encoder grows its table (size update, then entries past 4096 bytes still referenced); the "
           "server announces 256, the client acknowledges and its next block starts with the size update. Each "
           "inflater takes the size its receiver announced", MODE_PRIOR);
    g_open(g);
    static const uint32_t big[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 8192 };
    g_settings(g, TT_DIR_C2S, big, 1);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_ack(g, TT_DIR_S2C);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_S2C], 8192), 0);
    const char *nv[2 + 2 * 60 + 1];
    char vals[60][64];
    many_headers(nv, vals, 60, "200");
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, nv);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, nv); /* all from the 8 KiB table */
    static const uint32_t small[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 256 };
    g_settings(g, TT_DIR_S2C, small, 1);
    g_ack(g, TT_DIR_C2S);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_C2S], 256), 0);
    g_headers(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 5, TT_H2_FLAG_END_STREAM, RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_table_size_missing_update(gen *g)
{
    g_init(g, "table_size_missing_update", "the client lowers SETTINGS_HEADER_TABLE_SIZE to 0 and the server "
           "acknowledges, but its next header block does not start with the required size update: an HPACK error "
           "on the server's direction (and only there)", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    static const uint32_t zero[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 0 };
    g_settings(g, TT_DIR_C2S, zero, 1);
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, RESP_JSON); /* before the ACK: fine */
    g_ack(g, TT_DIR_S2C);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, RESP_JSON);
    g_headers(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_midstream(gen *g)
{
    g_init(g, "midstream_unknown_index", "a capture that starts mid-connection: header blocks referencing dynamic "
           "entries from before it give unknown fields (an unknown name keeps its value), entries inserted after "
           "it decode; stream 3, begun before, is first seen by its DATA (still timed)", MODE_MIDSTREAM);
    /* before the capture: both encoders fill their tables */
    static const char *const resp1[] = { ":status", "200", "content-type", "text/event-stream", "x-request-id", "a1",
                                         "server", "tokentap-serve", NULL };
    bytes b = g_hpack(g, TT_DIR_C2S, REQ);
    free(b.p);
    b = g_hpack(g, TT_DIR_S2C, resp1);
    free(b.p);
    /* the capture */
    g_dataframe(g, TT_DIR_S2C, 3, 0, EV[1]);
    g_headers(g, TT_DIR_C2S, 5, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, BODY);
    static const char *const resp2[] = { ":status", "200", "content-type", "text/event-stream", "x-request-id", "b2",
                                         "server", "tokentap-serve", "x-new", "fresh", NULL };
    g_headers(g, TT_DIR_S2C, 5, 0, resp2);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, EV[2]);
    g_dataframe(g, TT_DIR_S2C, 5, 0, EV[0]);
    g_dataframe(g, TT_DIR_S2C, 5, TT_H2_FLAG_END_STREAM, EV[2]);
    g_headers(g, TT_DIR_C2S, 7, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 7, TT_H2_FLAG_END_STREAM, resp2); /* b2 and x-new now known */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_frame_too_large(gen *g)
{
    g_init(g, "frame_too_large", "a DATA frame over SETTINGS_MAX_FRAME_SIZE (16384): a connection error in the "
           "server's direction; the stream's response half ends ERROR, the client's direction goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    bytes f = { 0 };
    frame_head(&f, 16385, TT_H2_DATA, 0, 1);
    put(&f, "data: x\n\n", 9);
    g_data(g, TT_DIR_S2C, f.p, f.n);
    free(f.p);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_bad_preface(gen *g)
{
    g_init(g, "bad_preface", "HTTP/1.1 where the client preface should be: PREFACE error; the server's direction "
           "goes on", MODE_PRIOR);
    g_data(g, TT_DIR_C2S, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    g_settings(g, TT_DIR_S2C, S_SETTINGS, 2);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_server_preface(gen *g)
{
    g_init(g, "bad_server_preface", "the server's first frame is not SETTINGS", MODE_PRIOR);
    g_preface(g);
    g_settings(g, TT_DIR_C2S, C_SETTINGS, 3);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_upgrade(gen *g)
{
    g_init(g, "h2c_upgrade", "h2c upgrade from HTTP/1.1: HTTP2-Settings (HEADER_TABLE_SIZE 8192, ENABLE_PUSH 0) "
           "applies to the server's encoder at once; stream 1's response half only", MODE_UPGRADE);
    /* base64url of 00 01 00 00 20 00 | 00 02 00 00 00 00 */
    snprintf(g->cfg.upgrade, sizeof g->cfg.upgrade, "%s", "AAEAACAAAAIAAAAA");
    g_preface(g);
    g_settings(g, TT_DIR_C2S, C_SETTINGS, 3);
    g_settings(g, TT_DIR_S2C, S_SETTINGS, 2);
    g_ack(g, TT_DIR_S2C);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_S2C], 8192), 0);
    const char *nv[2 + 2 * 60 + 1];
    char vals[60][64];
    many_headers(nv, vals, 60, "200");
    g_headers(g, TT_DIR_S2C, 1, 0, nv);
    g_ack(g, TT_DIR_C2S);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, nv);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, EV[2]);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_gap(gen *g)
{
    g_init(g, "gap", "bytes lost in the server's direction: abandoned (GAP), its open halves end GAP, and so does "
           "the response half of a stream opened later; the client's direction goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_op(g, TT_DIR_S2C, K_GAP, 1400);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[1]);
    g_headers(g, TT_DIR_C2S, 3, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, BODY);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_eof_open(gen *g)
{
    g_init(g, "eof_open_streams", "both directions end with streams open and a frame half received: EOF ends",
           MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, REQ);
    g_dataframe(g, TT_DIR_C2S, 1, 0, "{\"model\":");
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, EV[0]);
    g_data(g, TT_DIR_S2C, "\x00\x00\x30\x00\x00\x00\x00\x00\x01" "data: {", 16);
    g_op(g, TT_DIR_C2S, K_RESET, 0);
    g_eof(g, TT_DIR_S2C);
}

static void case_continuation_broken(gen *g)
{
    g_init(g, "continuation_interrupted", "a HEADERS without END_HEADERS followed by DATA: PROTOCOL error",
           MODE_PRIOR);
    g_open(g);
    bytes blk = g_hpack(g, TT_DIR_C2S, REQ);
    g_frame(g, TT_DIR_C2S, TT_H2_HEADERS, 0, 1, blk.p, 10);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, BODY);
    free(blk.p);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_even_stream(gen *g)
{
    g_init(g, "client_even_stream", "a client stream with an even id: PROTOCOL error", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 2, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_idle_data(gen *g)
{
    g_init(g, "data_idle_stream", "the server's DATA on a stream the client never opened: PROTOCOL error (the "
           "capture began at the start)", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, REQ);
    g_dataframe(g, TT_DIR_S2C, 5, 0, EV[0]);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_push(gen *g)
{
    g_init(g, "push_promise", "PUSH_PROMISE: the promised request decoded (HPACK stays in step), its request half "
           "ends at once, the pushed response on stream 2", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    static const char *const promised[] = { ":method", "GET", ":scheme", "http", ":authority", "localhost:8000",
                                            ":path", "/style.css", NULL };
    bytes blk = g_hpack(g, TT_DIR_S2C, promised);
    bytes pl = { 0 };
    put32(&pl, 2);
    put(&pl, blk.p, blk.n);
    g_frame(g, TT_DIR_S2C, TT_H2_PUSH_PROMISE, TT_H2_FLAG_END_HEADERS, 1, pl.p, pl.n);
    free(pl.p);
    free(blk.p);
    g_headers(g, TT_DIR_S2C, 1, 0, RESP_JSON);
    g_headers(g, TT_DIR_S2C, 2, 0, RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 2, TT_H2_FLAG_END_STREAM, "body{}");
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "{}");
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_interim(gen *g)
{
    g_init(g, "interim_100_continue", "a 100 (interim) then the final 200 on the same stream", MODE_PRIOR);
    g_open(g);
    static const char *const req[] = { ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/up",
                                       "expect", "100-continue", NULL };
    static const char *const cont[] = { ":status", "100", NULL };
    g_headers(g, TT_DIR_C2S, 1, 0, req);
    g_headers(g, TT_DIR_S2C, 1, 0, cont);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, "payload");
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_hpack_corrupt(gen *g)
{
    g_init(g, "hpack_corrupt", "a header block whose Huffman string is invalid: HPACK error", MODE_PRIOR);
    g_open(g);
    /* indexed :method GET, then a literal without indexing, new name, Huffman name of
     * two bytes 0xff 0xff (an EOS prefix: invalid) */
    static const uint8_t blk[] = { 0x82, 0x00, 0x82, 0xff, 0xff, 0x01, 'x' };
    g_frame(g, TT_DIR_C2S, TT_H2_HEADERS, TT_H2_FLAG_END_HEADERS | TT_H2_FLAG_END_STREAM, 1, blk, sizeof blk);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

typedef void (*case_fn)(gen *g);
static const case_fn cases[] = {
    case_prior_sse, case_continuation, case_padding, case_interleaved, case_rst, case_goaway, case_window_ping,
    case_table_size, case_table_size_missing_update, case_midstream, case_frame_too_large, case_bad_preface,
    case_server_preface, case_upgrade, case_gap, case_eof_open, case_continuation_broken, case_even_stream,
    case_idle_data, case_push, case_interim, case_hpack_corrupt,
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void escape_input(FILE *f, const uint8_t *sc, size_t n)
{
    size_t i = 0;
    while (i + 3 <= n) {
        size_t len = (size_t)sc[i + 1] << 8 | sc[i + 2];
        bool data = ((sc[i] >> 1) & 3) == K_DATA;
        fprintf(f, "\\x%02x\\x%02x\\x%02x", sc[i], sc[i + 1], sc[i + 2]);
        i += 3;
        if (data) {
            for (size_t k = 0; k < len; k++) {
                uint8_t ch = sc[i + k];
                if (ch == '\\') fputs("\\\\", f);
                else if (ch == '\r') fputs("\\r", f);
                else if (ch == '\n') fputs("\\n", f);
                else if (ch >= 0x20 && ch < 0x7f) fputc(ch, f);
                else fprintf(f, "\\x%02x", ch);
                if ((k + 1) % 96 == 0 && k + 1 < len) fputs("\\\n", f);
            }
            i += len;
        }
        fputc('\n', f);
    }
}

/* H2_UPDATE=1: write every generated case as a golden file (input and the
 * whole run's trace) and as a fuzzer seed. Review the diff before keeping it. */
static void write_goldens(void)
{
    mkdir("tests/golden/http2", 0755);
    mkdir("tests/fuzz/corpus/fuzz_http2", 0755);
    for (size_t i = 0; i < N_CASES; i++) {
        gen g;
        cases[i](&g);
        char path[256];
        snprintf(path, sizeof path, "tests/golden/http2/%s.golden", g.name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "# %s\n# Generated by tests/unit/test_http2.c (H2_UPDATE=1): header blocks from nghttp2's "
                   "deflater.\n# Input records: op (dir | kind << 1; kind 0 data, 1 gap, 2 eof, 3 reset), "
                   "16-bit length, data.\n=== meta\nmode=%s\n",
                g.title, g.cfg.mode == MODE_PRIOR ? "prior" : g.cfg.mode == MODE_MIDSTREAM ? "midstream" : "upgrade");
        if (g.cfg.mode == MODE_UPGRADE) fprintf(f, "upgrade=%s\n", g.cfg.upgrade);
        fprintf(f, "=== input\n");
        escape_input(f, g.sc.p, g.sc.n);
        char *t = run_script(&g.cfg, g.sc.p, g.sc.n, 0, false);
        fprintf(f, "=== expect\n%s", t);
        free(t);
        fclose(f);
        snprintf(path, sizeof path, "tests/fuzz/corpus/fuzz_http2/%s", g.name);
        f = fopen(path, "wb");
        assert_non_null(f);
        uint8_t head[2] = { (uint8_t)g.cfg.mode, 0 };
        fwrite(head, 1, 2, f);
        fwrite(g.sc.p, 1, g.sc.n, f);
        fclose(f);
        g_free(&g);
    }
}

static void test_golden_cases(void **state)
{
    if (getenv("H2_UPDATE")) write_goldens();
    size_t n = 0;
    char **files = tt_golden_list("tests/golden/http2", &n);
    assert_true(n >= N_CASES);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        tt_golden g;
        assert_int_equal(tt_golden_load(files[i], &g), 0);
        run_cfg cfg = { 0 };
        char buf[256];
        const char *mode = tt_golden_meta(&g, "mode", buf, sizeof buf);
        assert_non_null(mode);
        cfg.mode = strcmp(mode, "midstream") == 0 ? MODE_MIDSTREAM : strcmp(mode, "upgrade") == 0 ? MODE_UPGRADE
                                                                                                   : MODE_PRIOR;
        const char *up = tt_golden_meta(&g, "upgrade", buf, sizeof buf);
        if (up) snprintf(cfg.upgrade, sizeof cfg.upgrade, "%s", up);
        if (getenv("H2_PRINT")) {
            char *t = run_script(&cfg, g.input, g.input_len, 0, false);
            fprintf(stderr, "=== %s\n%s", files[i], t);
            free(t);
        }
        bad += check_all_cuts(&cfg, g.input, g.input_len, g.expect, g.path);
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(bad, 0);
}

/* The generated cases decode to what was deflated, through any cut
 * (independent of the golden files: a different nghttp2 may deflate
 * differently). */
static void test_generated_cases_cut_invariant(void **state)
{
    int bad = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        gen g;
        cases[i](&g);
        char *whole = run_script(&g.cfg, g.sc.p, g.sc.n, 0, false);
        bad += check_all_cuts(&g.cfg, g.sc.p, g.sc.n, whole, g.name);
        free(whole);
        g_free(&g);
    }
    assert_int_equal(bad, 0);
}

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
    size_t n = strlen(BODY);
    memcpy(buf, BODY, n);
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

static void pv_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off)
{
    fprintf(stderr, "unexpected error %s %s at %llu\n", dir_str(dir), msg, (unsigned long long)off);
    fail();
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
    static const tt_http2_callbacks cb = { .on_headers = pv_headers, .on_data = pv_data, .on_stream_end = pv_end, .on_error = pv_error };
    size_t total = script_data_len(w->g.sc.p, w->g.sc.n);
    size_t cuts[] = { 0, 1, 24, 33, total / 3, total / 2, total - 1, SIZE_MAX };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        view *seen = calloc(1, sizeof *seen);
        tt_http2_conn *c = open_conn(&cfg, &cb, seen);
        uint64_t ns = 1;
        feed_script(c, w->g.sc.p, w->g.sc.n, cuts[k] == SIZE_MAX ? 0 : cuts[k], cuts[k] == SIZE_MAX, &ns);
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
        g_settings(&g, TT_DIR_C2S, C_SETTINGS, 3);
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
    static const tt_http2_callbacks cb = { .on_headers = hp_on_headers, .on_error = pv_error };
    tt_http2_conn *c = open_conn(&g.cfg, &cb, s);
    uint64_t ns = 1;
    feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
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
    g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    gen r;
    g_init(&r, "r", "", MODE_PRIOR);
    bytes hb = g_hpack(&r, TT_DIR_S2C, RESP_SSE);
    bytes s2c = { 0 };
    frame_head(&s2c, hb.n, TT_H2_HEADERS, TT_H2_FLAG_END_HEADERS, 1);
    put(&s2c, hb.p, hb.n);
    size_t h_end = s2c.n;
    for (int i = 0; i < 3; i++) {
        frame_head(&s2c, strlen(EV[i]), TT_H2_DATA, i == 2 ? TT_H2_FLAG_END_STREAM : 0, 1);
        put(&s2c, EV[i], strlen(EV[i]));
    }
    size_t f1 = h_end + 9 + strlen(EV[0]), f2 = f1 + 9 + strlen(EV[1]);
    timed t = { 0 };
    static const tt_http2_callbacks cb = { .on_headers = ti_headers, .on_data = ti_data, .on_stream_end = ti_end, .on_error = pv_error };
    tt_http2_conn *c = tt_http2_new(&cb, &t);
    uint64_t ns = 1;
    feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
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
    assert_int_equal(t.data_len[0], strlen(EV[0]));
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
    g_settings(&g, TT_DIR_S2C, S_SETTINGS, 2);
    g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
    g_headers(&g, TT_DIR_S2C, 1, 0, RESP_SSE);
    g_dataframe(&g, TT_DIR_S2C, 1, 0, EV[0]);               /* before the ACK: 65535 */
    g_ack(&g, TT_DIR_S2C);                                   /* now 1000 - 49 */
    g_dataframe(&g, TT_DIR_S2C, 1, 0, EV[1]);
    g_u32_frame(&g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 500);
    g_u32_frame(&g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 0, 7);
    g_padded_data(&g, TT_DIR_S2C, 1, 0, EV[2], 10);
    win_seen w = { 0 };
    static const tt_http2_callbacks cb = { .on_data = win_data, .on_error = pv_error };
    w.c = tt_http2_new(&cb, &w);
    uint64_t ns = 1;
    feed_script(w.c, g.sc.p, g.sc.n, 0, false, &ns);
    assert_int_equal(w.n, 3);
    int64_t l0 = (int64_t)strlen(EV[0]), l1 = (int64_t)strlen(EV[1]), l2 = (int64_t)strlen(EV[2]) + 11;
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
        g_settings(&g, TT_DIR_S2C, S_SETTINGS, 1);
        if (raised == 1) g_ack(&g, TT_DIR_S2C); /* raised == 2: not yet acknowledged, still taken */
        g_headers(&g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, REQ_GET);
        g_headers(&g, TT_DIR_S2C, 1, 0, RESP_JSON);
        piece_seen p = { 0 };
        static const tt_http2_callbacks cb = { .on_data = ps_data, .on_stream_end = ps_end, .on_error = ps_error };
        tt_http2_conn *c = tt_http2_new(&cb, &p);
        uint64_t ns = 1;
        feed_script(c, g.sc.p, g.sc.n, 0, false, &ns);
        bytes f = { 0 };
        frame_head(&f, big, TT_H2_DATA, TT_H2_FLAG_END_STREAM, 1);
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
        frame_head(&f, take, at == 0 ? TT_H2_HEADERS : TT_H2_CONTINUATION, fl, sid);
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
        frame_head(&f, 1, TT_H2_DATA, 0, 2 * i + 1);
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
    tt_http2_conn *c = tt_http2_new(&trace_cb, &t);
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
        cmocka_unit_test(test_golden_cases),
        cmocka_unit_test(test_generated_cases_cut_invariant),
        cmocka_unit_test(test_nghttp2_sessions),
        cmocka_unit_test(test_hpack_random),
        cmocka_unit_test(test_instants),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_big_data_frame),
        cmocka_unit_test(test_header_block_bounds),
        cmocka_unit_test(test_stream_limit),
        cmocka_unit_test(test_error_state_sticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
