#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frame_harness.h"


static void put_flags(tt_strbuf *b, const char *key, uint32_t v, const char *const *names, size_t n)
{
    tt_sb_printf(b, " %s=", key);
    if (!v) {
        tt_sb_printf(b, "-");
        return;
    }
    const char *sep = "";
    for (size_t i = 0; i < n; i++) {
        if (v & (1u << i)) {
            tt_sb_printf(b, "%s%s", sep, names[i]);
            sep = "|";
        }
    }
}

static void trace_event(tt_strbuf *b, const tt_event_frame *ev)
{
    static const char *const terms[] = { "LF", "CR", "CRLF" };
    static const char *const fields[] = { "data", "event", "id", "retry", "other" };
    static const char *const flags[] = { "no_space", "bom", "empty_data", "raw_sep", "unterminated", "truncated" };
    tt_sb_printf(b, "%s type=", (ev->flags & TT_FRAME_UNTERMINATED) ? "unterminated" : "event");
    if (ev->type) {
        tt_sb_printf(b, "\"");
        tt_sb_escaped(b, ev->type, ev->type_len);
        tt_sb_printf(b, "\"");
    } else {
        tt_sb_printf(b, "-");
    }
    tt_sb_printf(b, " data=\"");
    tt_sb_escaped(b, ev->data, ev->data_len);
    tt_sb_printf(b, "\" id=");
    if (ev->has_id || ev->id) {
        tt_sb_printf(b, ev->has_id ? "\"" : "-(last=\"");
        tt_sb_escaped(b, ev->id, ev->id_len);
        tt_sb_printf(b, ev->has_id ? "\"" : "\")");
    } else {
        tt_sb_printf(b, "-");
    }
    if (ev->retry_ms >= 0) tt_sb_printf(b, " retry=%lld", (long long)ev->retry_ms);
    else tt_sb_printf(b, " retry=-");
    tt_sb_printf(b, " first=%llu dispatch=%llu", (unsigned long long)ev->first_off,
                 (unsigned long long)ev->dispatch_off);
    put_flags(b, "term", ev->terminators, terms, 3);
    put_flags(b, "fields", ev->fields, fields, 5);
    put_flags(b, "flags", ev->flags, flags, 6);
    tt_sb_printf(b, " lines=%u comments=%u datalines=%u\n", ev->lines, ev->comment_lines, ev->data_lines);
}

/* Index of the non-empty feed holding body offset off, or -1. */
static long feed_of(const run_ctx *c, uint64_t off)
{
    for (size_t i = 0; i < c->n_seg; i++)
        if (c->seg_start[i] <= off && off < c->seg_start[i + 1]) return (long)i;
    return -1;
}

static void on_event(void *ud, const tt_event_frame *ev)
{
    run_ctx *c = ud;
    trace_event(&c->trace, ev);
    if (c->n_events < sizeof c->events / sizeof c->events[0]) c->events[c->n_events++] = *ev;
    if (!c->seg_start) return;
    long ff = feed_of(c, ev->first_off);
    bool unterminated = ev->flags & TT_FRAME_UNTERMINATED;
    long lf = unterminated ? feed_of(c, c->seg_start[c->n_seg] - 1) : feed_of(c, ev->dispatch_off - 1);
    uint64_t want_dispatch_ns = unterminated ? FINISH_NS : (uint64_t)(lf + 1) * NS_PER_FEED;
    if (ff < 0 || lf < 0 || ev->first_chunk != (uint32_t)ff || ev->last_chunk != (uint32_t)lf ||
        ev->first_ns != (uint64_t)(ff + 1) * NS_PER_FEED || ev->dispatch_ns != want_dispatch_ns) {
        c->chunk_errors++;
        tt_sb_printf(&c->trace, "CHUNK MISMATCH first_chunk=%u (want %ld) last_chunk=%u (want %ld) first_ns=%llu dispatch_ns=%llu\n",
                     ev->first_chunk, ff, ev->last_chunk, lf, (unsigned long long)ev->first_ns,
                     (unsigned long long)ev->dispatch_ns);
    }
}

static void on_comment(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns)
{
    run_ctx *c = ud;
    tt_sb_printf(&c->trace, "comment text=\"");
    tt_sb_escaped(&c->trace, text, len);
    tt_sb_printf(&c->trace, "\" off=%llu\n", (unsigned long long)off);
    if (c->seg_start) {
        long f = feed_of(c, off);
        if (f < 0 || mono_ns != (uint64_t)(f + 1) * NS_PER_FEED) {
            c->chunk_errors++;
            tt_sb_printf(&c->trace, "COMMENT NS MISMATCH\n");
        }
    }
}

const tt_frame_callbacks tt_harness_callbacks = { on_event, on_comment };

/* Run input cut at the given points (ascending, each in [0,len]); each
 * segment is fed from its own guard-page copy, feed i at instant (i+1)*1000. */
static void run_split(tt_framing kind, const uint8_t *in, size_t len, const size_t *cuts, size_t n_cuts, run_ctx *c)
{
    size_t starts[16];
    assert_true(n_cuts + 2 <= sizeof starts / sizeof starts[0]);
    starts[0] = 0;
    for (size_t i = 0; i < n_cuts; i++) starts[i + 1] = cuts[i];
    starts[n_cuts + 1] = len;
    memset(c, 0, sizeof *c);
    c->seg_start = starts;
    c->n_seg = n_cuts + 1;
    tt_framer *p = tt_framer_new(kind, &tt_harness_callbacks, c);
    assert_non_null(p);
    for (size_t i = 0; i < c->n_seg; i++) {
        size_t n = starts[i + 1] - starts[i];
        uint8_t *g = tt_guard_copy(in + starts[i], n);
        tt_framer_feed(p, g, n, starts[i], (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, n);
    }
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    c->seg_start = NULL;
}

char *tt_harness_trace(run_ctx *c)
{
    char *s = c->trace.s ? c->trace.s : strdup("");
    c->trace.s = NULL;
    tt_sb_free(&c->trace);
    return s;
}

static int check_run(tt_framing kind, const tt_golden *g, const size_t *cuts, size_t n_cuts, const char *label)
{
    run_ctx c;
    run_split(kind, g->input, g->input_len, cuts, n_cuts, &c);
    char *t = tt_harness_trace(&c);
    int rc = tt_golden_compare(g, t, label);
    free(t);
    return rc;
}

static int check_bytewise(tt_framing kind, const tt_golden *g)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    size_t n = g->input_len;
    size_t *starts = malloc((n + 1) * sizeof *starts);
    for (size_t i = 0; i <= n; i++) starts[i] = i;
    c.seg_start = starts;
    c.n_seg = n;
    tt_framer *p = tt_framer_new(kind, &tt_harness_callbacks, &c);
    for (size_t i = 0; i < n; i++) {
        uint8_t *b = tt_guard_copy(g->input + i, 1);
        tt_framer_feed(p, b, 1, i, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(b, 1);
    }
    tt_framer_finish(p, FINISH_NS);
    tt_framer_free(p);
    char *t = tt_harness_trace(&c);
    int rc = tt_golden_compare(g, t, "byte by byte");
    free(t);
    free(starts);
    return rc;
}

void tt_harness_golden_suite(tt_framing kind, const char *dir, size_t min_files)
{
    size_t n = 0;
    char **files = tt_golden_list(dir, &n);
    assert_true(n >= min_files);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        tt_golden g;
        if (tt_golden_load(files[i], &g) < 0) {
            failures++;
            continue;
        }
        int bad = check_run(kind, &g, NULL, 0, "whole") < 0;
        for (size_t k = 0; k <= g.input_len && !bad; k++) {
            char label[64];
            snprintf(label, sizeof label, "split at %zu", k);
            bad = check_run(kind, &g, &k, 1, label) < 0;
        }
        if (!bad) bad = check_bytewise(kind, &g) < 0;
        if (g.input_len <= 80) {
            for (size_t a = 1; a < g.input_len && !bad; a++) {
                for (size_t b = a + 1; b < g.input_len && !bad; b++) {
                    size_t cuts[2] = { a, b };
                    char label[64];
                    snprintf(label, sizeof label, "split at %zu and %zu", a, b);
                    bad = check_run(kind, &g, cuts, 2, label) < 0;
                }
            }
        }
        failures += bad;
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(failures, 0);
}

void tt_harness_feed_pieces(tt_framer *p, const char *const *pieces, size_t n, uint64_t *off)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        uint8_t *g = tt_guard_copy(pieces[i], len);
        tt_framer_feed(p, g, len, *off, (uint64_t)(i + 1) * NS_PER_FEED);
        tt_guard_free(g, len);
        *off += len;
    }
}
