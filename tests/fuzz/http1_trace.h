/* http1_trace.h - shared by the HTTP/1.1 fuzz harnesses: run the parser over
 * an input cut at given points and record every callback as text (body
 * pieces coalesced), so that runs cut differently can be compared. */
#ifndef TT_FUZZ_HTTP1_TRACE_H
#define TT_FUZZ_HTTP1_TRACE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http1.h"
#include "fuzz_text.h"


typedef struct fz_trace {
    fz_text out, body;
    uint64_t body_start, body_next;
    int body_pending;
    uint64_t decoded; /* all body bytes delivered */
    unsigned ends;
} fz_trace;

static void fz_flush_body(fz_trace *t)
{
    if (!t->body_pending) return;
    fz_printf(&t->out, "body %llu %zu:", (unsigned long long)t->body_start, t->body.len);
    fz_add(&t->out, t->body.s, t->body.len);
    fz_add(&t->out, "\n", 1);
    t->body.len = 0;
    t->body_pending = 0;
}

static void fz_on_head(void *ud, const tt_http_head *h)
{
    fz_trace *t = ud;
    fz_flush_body(t);
    fz_printf(&t->out, "head %d %d %zu %zu %d %lld %d %d %d %d %llu %llu %zu\n", h->role, h->status,
              h->method_len, h->target_len, h->version_minor, (long long)h->content_length, h->chunked,
              h->coding, h->keep_alive, h->interim, (unsigned long long)h->first_off,
              (unsigned long long)h->head_end_off, h->n_headers);
    if (h->method_len) fz_add(&t->out, h->method, h->method_len);
    if (h->target_len) fz_add(&t->out, h->target, h->target_len);
    for (size_t i = 0; i < h->n_headers; i++) {
        fz_add(&t->out, h->headers[i].name, h->headers[i].name_len);
        fz_add(&t->out, ":", 1);
        fz_add(&t->out, h->headers[i].value, h->headers[i].value_len);
        fz_add(&t->out, "\n", 1);
    }
    if (h->content_length >= 0 && (h->chunked || !tt_http_find_header(h, "CONTENT-LENGTH"))) abort();
}

static void fz_on_body(void *ud, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    fz_trace *t = ud;
    if (n == 0) abort();
    if (t->body_pending && off != t->body_next) fz_flush_body(t);
    if (!t->body_pending) {
        t->body_pending = 1;
        t->body_start = off;
    }
    fz_add(&t->body, d, n);
    t->body_next = off + n;
    t->decoded += n;
}

static void fz_on_end(void *ud, const tt_http_msg_end *e)
{
    fz_trace *t = ud;
    fz_flush_body(t);
    t->ends++;
    fz_printf(&t->out, "end %d %llu %llu %llu %llu\n", e->how, (unsigned long long)e->last_off,
              (unsigned long long)e->body_bytes, (unsigned long long)e->wire_body_bytes,
              (unsigned long long)e->gap_bytes);
}

static void fz_on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    fz_trace *t = ud;
    fz_flush_body(t);
    fz_printf(&t->out, "error %d %s %llu\n", code, msg, (unsigned long long)off);
}

typedef struct fz_run {
    tt_http_role role;
    const char *expect; /* 'h' HEAD, 'b' with body, 'c' CONNECT */
    size_t gap_at;      /* SIZE_MAX: none */
    uint64_t gap_len;
    int eof;            /* 0 none, 1 clean, 2 reset */
} fz_run;

/* Feed in[0..n) cut at the ascending points cuts[0..ncuts); each piece is
 * copied into its own allocation so ASan sees any read past it. The trace
 * (it may hold NUL bytes) goes to *out; the caller frees out->s. */
static void fz_run_trace(const fz_run *r, const uint8_t *in, size_t n, const size_t *cuts, size_t ncuts,
                         fz_text *out, uint64_t *decoded, unsigned *ends)
{
    static const tt_http_callbacks cb = { fz_on_head, fz_on_body, fz_on_end, fz_on_error };
    fz_trace t = { 0 };
    fz_add(&t.out, "", 0);
    tt_http1_parser *p = tt_http1_new(r->role, &cb, &t);
    if (!p) abort();
    for (const char *e = r->expect; e && *e; e++) {
        if (*e == 'c') tt_http1_expect_connect(p);
        else tt_http1_expect_response(p, *e == 'h');
    }
    size_t at = 0, ci = 0;
    uint64_t ns = 1;
    int gap_done = r->gap_at > n;
    while (at < n || !gap_done) {
        if (!gap_done && r->gap_at == at) {
            tt_http1_gap(p, r->gap_len, ns++);
            gap_done = 1;
            continue;
        }
        size_t end = n;
        while (ci < ncuts && cuts[ci] <= at) ci++;
        if (ci < ncuts && cuts[ci] < end) end = cuts[ci];
        if (!gap_done && r->gap_at > at && r->gap_at < end) end = r->gap_at;
        uint8_t *piece = malloc(end - at);
        memcpy(piece, in + at, end - at);
        tt_http1_feed(p, piece, end - at, ns++);
        free(piece);
        at = end;
    }
    if (r->eof) tt_http1_eof(p, r->eof == 1, ns++);
    tt_http1_free(p);
    fz_flush_body(&t);
    free(t.body.s);
    if (decoded) *decoded = t.decoded;
    if (ends) *ends = t.ends;
    *out = t.out;
}

/* Cut points from a seed: a few random ones, or every byte. */
static size_t fz_make_cuts(uint32_t seed, size_t n, size_t *cuts, size_t max)
{
    if (n == 0) return 0;
    if ((seed & 7) == 0) {
        size_t k = 0;
        for (size_t i = 1; i < n && k < max; i++) cuts[k++] = i;
        return k;
    }
    size_t count = 1 + (seed >> 3) % 16, k = 0;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < count && k < max; i++) {
        x = x * 1103515245u + 12345u;
        cuts[k++] = 1 + (x >> 8) % n;
    }
    for (size_t i = 1; i < k; i++) /* insertion sort: k is small */
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            size_t tmp = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = tmp;
        }
    return k;
}

static void fz_compare(const fz_text *a, const fz_text *b)
{
    if (a->len != b->len || memcmp(a->s, b->s, a->len) != 0) {
        fprintf(stderr, "whole and cut runs differ\n--- whole\n%s--- cut\n%s---\n", a->s, b->s);
        abort();
    }
}

#endif
