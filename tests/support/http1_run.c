/* http1_run.c - the HTTP/1.1 parser run over cut inputs, traced (http1_run.h). */
#include "http1_run.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- trace: one line per callback, consecutive body pieces coalesced ---- */


static const char *coding_str(tt_content_coding c)
{
    switch (c) {
    case TT_CODING_IDENTITY: return "identity";
    case TT_CODING_GZIP: return "gzip";
    case TT_CODING_DEFLATE: return "deflate";
    default: return "other";
    }
}

static const char *end_str(tt_http_end e)
{
    switch (e) {
    case TT_HTTP_END_COMPLETE: return "COMPLETE";
    case TT_HTTP_END_EOF: return "EOF";
    case TT_HTTP_END_TRUNCATED: return "TRUNCATED";
    case TT_HTTP_END_GAP: return "GAP";
    default: return "ERROR";
    }
}

static const char *error_str(tt_http_error e)
{
    switch (e) {
    case TT_HTTP_ERR_MALFORMED: return "MALFORMED";
    case TT_HTTP_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case TT_HTTP_ERR_TOO_LARGE: return "TOO_LARGE";
    case TT_HTTP_ERR_DECODE: return "DECODE";
    case TT_HTTP_ERR_GAP: return "GAP";
    default: return "NONE";
    }
}

static void flush_body(trace *t)
{
    if (!t->body_pending) return;
    tt_sb_printf(&t->out, "body off=%llu \"", (unsigned long long)t->body_start);
    if (t->body.len) tt_sb_escaped(&t->out, t->body.s, t->body.len);
    tt_sb_printf(&t->out, "\"\n");
    t->body.len = 0;
    t->body_pending = false;
}

static void on_head(void *ud, const tt_http_head *h)
{
    trace *t = ud;
    flush_body(t);
    tt_strbuf *o = &t->out;
    if (h->role == TT_HTTP_REQUEST) {
        tt_sb_printf(o, "head request \"");
        tt_sb_escaped(o, h->method, h->method_len);
        tt_sb_printf(o, "\" \"");
        tt_sb_escaped(o, h->target, h->target_len);
        tt_sb_printf(o, "\"");
    } else {
        tt_sb_printf(o, "head response %d \"", h->status);
        tt_sb_escaped(o, h->reason, h->reason_len);
        tt_sb_printf(o, "\"");
    }
    tt_sb_printf(o, " 1.%d cl=%lld chunked=%d coding=%s keep_alive=%d interim=%d off=%llu..%llu\n",
                 h->version_minor, (long long)h->content_length, h->chunked, coding_str(h->coding),
                 h->keep_alive, h->interim, (unsigned long long)h->first_off,
                 (unsigned long long)h->head_end_off);
    for (size_t i = 0; i < h->n_headers; i++) {
        tt_sb_printf(o, "  header \"");
        tt_sb_escaped(o, h->headers[i].name, h->headers[i].name_len);
        tt_sb_printf(o, "\" \"");
        tt_sb_escaped(o, h->headers[i].value, h->headers[i].value_len);
        tt_sb_printf(o, "\"\n");
    }
}

static void on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t ns)
{
    trace *t = ud;
    assert_true(len > 0);
    if (t->body_pending && body_off != t->body_next) flush_body(t);
    if (!t->body_pending) {
        t->body_pending = true;
        t->body_start = body_off;
        if (!t->body.s) tt_sb_printf(&t->body, "%s", "");
    }
    size_t need = t->body.len + len + 1;
    if (need > t->body.cap) {
        size_t cap = t->body.cap ? t->body.cap : 256;
        while (cap < need) cap *= 2;
        t->body.s = realloc(t->body.s, cap);
        t->body.cap = cap;
    }
    memcpy(t->body.s + t->body.len, data, len);
    t->body.len += len;
    t->body_next = body_off + len;
}

static void on_end(void *ud, const tt_http_msg_end *e)
{
    trace *t = ud;
    flush_body(t);
    tt_sb_printf(&t->out, "end %s last_off=%llu body=%llu wire=%llu gap=%llu\n", end_str(e->how),
                 (unsigned long long)e->last_off, (unsigned long long)e->body_bytes,
                 (unsigned long long)e->wire_body_bytes, (unsigned long long)e->gap_bytes);
}

static void on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    trace *t = ud;
    flush_body(t);
    tt_sb_printf(&t->out, "error %s \"%s\" off=%llu\n", error_str(code), msg, (unsigned long long)off);
}

const tt_http_callbacks http1_trace_callbacks = { on_head, on_body, on_end, on_error };


static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

char *http1_run_cuts(const uint8_t *in, size_t n, const run_opts *o, const size_t *cuts, size_t ncuts)
{
    size_t *pts = malloc((ncuts + 3) * sizeof *pts);
    size_t np = 0;
    for (size_t i = 0; i < ncuts; i++) pts[np++] = cuts[i];
    if (o->has_gap) pts[np++] = o->gap_at;
    pts[np++] = n;
    qsort(pts, np, sizeof *pts, cmp_size);

    trace t = { 0 };
    tt_sb_printf(&t.out, "%s", "");
    tt_http1_parser *p = tt_http1_new(o->role, &http1_trace_callbacks, &t);
    assert_non_null(p);
    for (const char *e = o->expect; *e; e++) {
        if (*e == 'c') tt_http1_expect_connect(p);
        else tt_http1_expect_response(p, *e == 'h');
    }
    size_t at = 0;
    uint64_t ns = 1000;
    bool gap_done = !o->has_gap;
    for (size_t i = 0; i < np; i++) {
        if (!gap_done && o->gap_at == at) {
            tt_http1_gap(p, o->gap_len, ns++);
            gap_done = true;
        }
        size_t end = pts[i];
        if (end <= at) continue;
        uint8_t *g = tt_guard_copy(in + at, end - at);
        assert_non_null(g);
        tt_http1_feed(p, g, end - at, ns++);
        tt_guard_free(g, end - at);
        at = end;
    }
    if (!gap_done) tt_http1_gap(p, o->gap_len, ns++);
    if (o->eof) tt_http1_eof(p, o->eof_clean, ns++);
    tt_http1_free(p);
    free(pts);
    flush_body(&t);
    tt_sb_free(&t.body);
    return t.out.s;
}

/* Whole, split at every k, byte by byte: every trace must equal expect. */
int http1_check_all_cuts(const uint8_t *in, size_t n, const run_opts *o, const char *expect, const char *name)
{
    int bad = 0;
    char *whole = http1_run_cuts(in, n, o, NULL, 0);
    if (getenv("HTTP1_PRINT")) fprintf(stderr, "=== %s\n%s", name, whole);
    if (strcmp(whole, expect) != 0) {
        fprintf(stderr, "%s (whole): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, whole);
        bad++;
    }
    free(whole);
    for (size_t k = 1; k < n && bad < 3; k++) {
        char *s = http1_run_cuts(in, n, o, &k, 1);
        if (strcmp(s, expect) != 0) {
            fprintf(stderr, "%s (split at %zu): trace differs\n--- expected\n%s--- actual\n%s---\n", name, k,
                    expect, s);
            bad++;
        }
        free(s);
    }
    size_t *all = malloc((n + 1) * sizeof *all);
    for (size_t k = 0; k < n; k++) all[k] = k + 1;
    char *s = http1_run_cuts(in, n, o, all, n);
    if (strcmp(s, expect) != 0) {
        fprintf(stderr, "%s (byte by byte): trace differs\n--- expected\n%s--- actual\n%s---\n", name, expect, s);
        bad++;
    }
    free(s);
    free(all);
    return bad;
}
