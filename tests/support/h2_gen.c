/* h2_gen.c - HTTP/2 byte scripts for the framing parser's tests (h2_gen.h). */
#include "h2_gen.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>

#include <cmocka.h>

/* ---- the trace: one line per callback ---- */


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

void h2_fail_on_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off)
{
    fprintf(stderr, "unexpected error %s %s at %llu\n", dir_str(dir), msg, (unsigned long long)off);
    fail();
}

const tt_http2_callbacks h2_trace_cb = {tr_headers,  tr_data, tr_end,    tr_error, tr_frame,
                                      tr_settings, tr_ping, tr_goaway, tr_window};

/* ---- running a script ---- */

tt_http2_conn *h2_open_conn(const run_cfg *cfg, const tt_http2_callbacks *cb, void *ud)
{
    tt_http2_conn *c = cfg->mode == MODE_MIDSTREAM ? tt_http2_new_midstream(cb, ud) : tt_http2_new(cb, ud);
    assert_non_null(c);
    if (cfg->mode == MODE_UPGRADE) tt_http2_start_upgrade(c, cfg->upgrade, strlen(cfg->upgrade), 1);
    return c;
}

void h2_feed_script(tt_http2_conn *c, const uint8_t *sc, size_t n, size_t cut, bool bytewise, uint64_t *ns)
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

char *h2_run_script(const run_cfg *cfg, const uint8_t *sc, size_t n, size_t cut, bool bytewise)
{
    trace t = { 0 };
    tt_sb_printf(&t.out, "%s", "");
    tt_http2_conn *c = h2_open_conn(cfg, &h2_trace_cb, &t);
    uint64_t ns = 1000;
    h2_feed_script(c, sc, n, cut, bytewise, &ns);
    tt_http2_free(c);
    return t.out.s;
}

size_t h2_script_data_len(const uint8_t *sc, size_t n)
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
int h2_check_all_cuts(const run_cfg *cfg, const uint8_t *sc, size_t n, const char *expect, const char *name)
{
    int bad = 0;
    char *s = h2_run_script(cfg, sc, n, 0, false);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (whole): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    size_t total = h2_script_data_len(sc, n), step = total > 6000 ? 97 : 1;
    for (size_t k = 1; k < total && bad < 3; k += step) {
        s = h2_run_script(cfg, sc, n, k, false);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (split at %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k, expect,
                    s);
            bad++;
        }
        free(s);
    }
    s = h2_run_script(cfg, sc, n, 0, true);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (byte by byte): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    return bad;
}

/* ---- the generator ---- */

void g_init(gen *g, const char *name, const char *title, int mode)
{
    memset(g, 0, sizeof *g);
    g->name = name;
    g->title = title;
    g->cfg.mode = mode;
    /* the deflaters may grow past 4096 when told to (their table starts at 4096) */
    for (int i = 0; i < 2; i++) assert_int_equal(nghttp2_hd_deflate_new(&g->def[i], 65536), 0);
}

void g_free(gen *g)
{
    for (int i = 0; i < 2; i++) nghttp2_hd_deflate_del(g->def[i]);
    free(g->sc.p);
}

void g_data(gen *g, tt_direction dir, const void *p, size_t n)
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

void g_op(gen *g, tt_direction dir, int kind, uint16_t len)
{
    put8(&g->sc, (uint8_t)(dir | kind << 1));
    put8(&g->sc, (uint8_t)(len >> 8));
    put8(&g->sc, (uint8_t)len);
    g->can_append = false;
}

void g_eof(gen *g, tt_direction dir) { g_op(g, dir, K_EOF, 0); }

void h2_frame_head(bytes *b, size_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    put8(b, (uint8_t)(len >> 16));
    put8(b, (uint8_t)(len >> 8));
    put8(b, (uint8_t)len);
    put8(b, type);
    put8(b, flags);
    put32(b, sid);
}

void g_frame(gen *g, tt_direction dir, uint8_t type, uint8_t flags, uint32_t sid, const void *pl, size_t n)
{
    bytes f = { 0 };
    h2_frame_head(&f, n, type, flags, sid);
    put(&f, pl, n);
    g_data(g, dir, f.p, f.n);
    free(f.p);
}

void g_preface(gen *g) { g_data(g, TT_DIR_C2S, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN); }

/* SETTINGS: pairs of (id, value), npairs of them. */
void g_settings(gen *g, tt_direction dir, const uint32_t *kv, size_t npairs)
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

void g_ack(gen *g, tt_direction dir) { g_frame(g, dir, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0); }

/* An HPACK block of the name/value pairs in nv (NULL-terminated); a name
 * starting with '!' is sent never-indexed. */
bytes g_hpack(gen *g, tt_direction dir, const char *const *nv)
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
void g_headers_opt(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv,
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

void g_headers(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv)
{
    hopts o = { .pad = -1 };
    g_headers_opt(g, dir, sid, flags, nv, &o);
}

void g_dataframe(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s)
{
    g_frame(g, dir, TT_H2_DATA, flags, sid, s, strlen(s));
}

void g_padded_data(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s, uint8_t pad)
{
    bytes pl = { 0 };
    put8(&pl, pad);
    put(&pl, s, strlen(s));
    uint8_t z[256] = { 0 };
    put(&pl, z, pad);
    g_frame(g, dir, TT_H2_DATA, flags | TT_H2_FLAG_PADDED, sid, pl.p, pl.n);
    free(pl.p);
}

void g_u32_frame(gen *g, tt_direction dir, uint8_t type, uint32_t sid, uint32_t v)
{
    bytes p = { 0 };
    put32(&p, v);
    g_frame(g, dir, type, 0, sid, p.p, p.n);
    free(p.p);
}

void g_goaway(gen *g, tt_direction dir, uint32_t last, uint32_t code, const char *debug)
{
    bytes p = { 0 };
    put32(&p, last);
    put32(&p, code);
    put(&p, debug, strlen(debug));
    g_frame(g, dir, TT_H2_GOAWAY, 0, 0, p.p, p.n);
    free(p.p);
}


/* ---- an ordinary exchange ---- */

const char *const H2_REQ[] = { ":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path",
                                   "/v1/chat/completions", "content-type", "application/json", "user-agent",
                                   "tokentap-test/1.0", "!authorization", "Bearer sk-test-123", NULL };
const char *const H2_REQ_GET[] = { ":method", "GET", ":scheme", "http", ":authority", "localhost:8000", ":path",
                                       "/v1/models", "user-agent", "tokentap-test/1.0", NULL };
const char *const H2_RESP_SSE[] = { ":status", "200", "content-type", "text/event-stream", "cache-control",
                                        "no-cache", "x-request-id", "req-0001", NULL };
const char *const H2_RESP_JSON[] = { ":status", "200", "content-type", "application/json", NULL };
const char *const H2_BODY = "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
const char *const H2_EV[3] = { "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
                                  "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n", "data: [DONE]\n\n" };

const uint32_t H2_C_SETTINGS[6] = { TT_H2_SETTINGS_ENABLE_PUSH, 0, TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS, 100,
                                       TT_H2_SETTINGS_INITIAL_WINDOW_SIZE, 65535 };
const uint32_t H2_S_SETTINGS[4] = { TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS, 128, TT_H2_SETTINGS_MAX_FRAME_SIZE,
                                       16384 };

void g_open(gen *g)
{
    g_preface(g);
    g_settings(g, TT_DIR_C2S, H2_C_SETTINGS, 3);
    g_settings(g, TT_DIR_S2C, H2_S_SETTINGS, 2);
    g_ack(g, TT_DIR_S2C);
    g_ack(g, TT_DIR_C2S);
}
