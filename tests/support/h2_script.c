/* h2_script.c - HTTP/2 exchanges written frame by frame (h2_script.h). */
#include "h2_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static void die(const char *why)
{
    fprintf(stderr, "h2_script: %s\n", why);
    abort();
}

void h2_script_init(h2_script *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 2; i++)
        if (nghttp2_hd_deflate_new(&s->def[i], 4096) != 0) die("nghttp2_hd_deflate_new failed");
}

void h2_script_free(h2_script *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->w[i].p);
    for (int i = 0; i < 2; i++)
        if (s->def[i]) nghttp2_hd_deflate_del(s->def[i]);
    memset(s, 0, sizeof *s);
}

h2_write *h2_write_at(h2_script *s, tt_direction dir, uint64_t ns)
{
    if (s->n >= H2_SCRIPT_MAX_WRITES) die("too many writes");
    h2_write *w = &s->w[s->n++];
    memset(w, 0, sizeof *w);
    w->dir = dir;
    w->ns = ns;
    return w;
}

void h2_put(h2_write *w, const void *d, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->p = realloc(w->p, w->cap);
        if (!w->p) die("out of memory");
    }
    if (n) memcpy(w->p + w->n, d, n); /* an empty frame payload comes as NULL */
    w->n += n;
}

void h2_frame(h2_write *w, uint8_t type, uint8_t flags, uint32_t sid, const void *payload, size_t n)
{
    uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                    (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    h2_put(w, h, 9);
    h2_put(w, payload, n);
}

void h2_headers(h2_script *s, h2_write *w, uint32_t sid, uint8_t flags, const char *const *nv)
{
    nghttp2_nv v[16];
    size_t k = 0;
    for (size_t i = 0; nv[i]; i += 2, k++) {
        if (k == 16) die("more than 16 headers");
        v[k] = (nghttp2_nv){(uint8_t *)(uintptr_t)nv[i], (uint8_t *)(uintptr_t)nv[i + 1], strlen(nv[i]),
                            strlen(nv[i + 1]), NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_hd_deflater *d = s->def[w->dir];
    size_t bound = nghttp2_hd_deflate_bound(d, v, k);
    uint8_t *b = malloc(bound);
    if (!b) die("out of memory");
    ssize_t r = nghttp2_hd_deflate_hd(d, b, bound, v, k);
    if (r < 0) die("nghttp2_hd_deflate_hd failed");
    h2_frame(w, 0x1 /* HEADERS */, flags | 0x4 /* END_HEADERS */, sid, b, (size_t)r);
    free(b);
}

void h2_data(h2_write *w, uint32_t sid, uint8_t flags, const char *str)
{
    h2_frame(w, 0x0 /* DATA */, flags, sid, str, strlen(str));
}

static void chunk_at(h2_feed *f, tt_vantage v, tt_direction dir, tt_chunk_kind kind, const uint8_t *d, size_t n,
                     uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = v, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = d, .len = n};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA) f->off[dir] += n;
}

void h2_feed_chunk(h2_feed *f, tt_direction dir, tt_chunk_kind kind, const uint8_t *d, size_t n, uint64_t ns)
{
    chunk_at(f, TT_VANTAGE_WIRE, dir, kind, d, n, ns);
}

/* A tracker and the feed of the script's one connection. */
static void feed_open(h2_feed *f, uint64_t start_off)
{
    memset(f, 0, sizeof *f);
    f->t = tt_tracker_new(NULL);
    if (!f->t) die("tt_tracker_new failed");
    f->conn.conn_id = 7;
    f->conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f->conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    f->off[0] = f->off[1] = start_off;
}

/* FIN both ways after the last write, release, sort. */
static tt_tracker *feed_close(h2_feed *f, uint64_t last)
{
    h2_feed_chunk(f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, last + 1000);
    h2_feed_chunk(f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, last + 1000);
    h2_feed_chunk(f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, last + 2000);
    tt_tracker_sort(f->t);
    return f->t;
}

tt_tracker *h2_script_run_ready(const h2_script *s, uint64_t lead_ns)
{
    h2_feed f;
    feed_open(&f, s->start_off);
    uint64_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        const h2_write *w = &s->w[i];
        if (w->dir == TT_DIR_S2C) chunk_at(&f, TT_VANTAGE_CLIENT, w->dir, TT_CHUNK_READY, NULL, w->n, w->ns - lead_ns);
        chunk_at(&f, TT_VANTAGE_CLIENT, w->dir, TT_CHUNK_DATA, w->p, w->n, w->ns);
        last = w->ns;
    }
    return feed_close(&f, last);
}

tt_tracker *h2_script_run(const h2_script *s, size_t cut_w, size_t cut_at, bool bytewise)
{
    h2_feed f;
    feed_open(&f, s->start_off);
    uint64_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        const h2_write *w = &s->w[i];
        if (bytewise) {
            for (size_t k = 0; k < w->n; k++) h2_feed_chunk(&f, w->dir, TT_CHUNK_DATA, w->p + k, 1, w->ns);
        } else if (i == cut_w && cut_at > 0 && cut_at < w->n) {
            h2_feed_chunk(&f, w->dir, TT_CHUNK_DATA, w->p, cut_at, w->ns);
            h2_feed_chunk(&f, w->dir, TT_CHUNK_DATA, w->p + cut_at, w->n - cut_at, w->ns);
        } else {
            h2_feed_chunk(&f, w->dir, TT_CHUNK_DATA, w->p, w->n, w->ns);
        }
        last = w->ns;
    }
    return feed_close(&f, last);
}

size_t h2_script_each_feed(const h2_script *s, size_t step, h2_check_fn *check, void *ctx, char *why,
                           size_t why_cap)
{
    size_t runs = 0;
    why[0] = 0;
    for (int bytewise = 0; bytewise < 2; bytewise++, runs++) {
        tt_tracker *t = h2_script_run(s, 0, 0, bytewise);
        const char *bad = check(t, ctx);
        tt_tracker_free(t);
        if (bad) {
            snprintf(why, why_cap, "%s: %s", bytewise ? "byte by byte" : "whole writes", bad);
            return runs + 1;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 1; k < s->w[i].n; k += step ? step : 1, runs++) {
            tt_tracker *t = h2_script_run(s, i, k, false);
            const char *bad = check(t, ctx);
            tt_tracker_free(t);
            if (bad) {
                snprintf(why, why_cap, "write %zu split at %zu: %s", i, k, bad);
                return runs + 1;
            }
        }
    }
    return runs;
}
