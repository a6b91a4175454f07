/* fuzz_http2.c - libFuzzer harness for the HTTP/2 framing parser.
 * Byte 0: bits 0-1 the mode (0 prior knowledge, 1 midstream, 2 h2c upgrade
 * with a fixed HTTP2-Settings, 3 joined mid-stream: midstream, each
 * direction's records held until tt_http2_find_sync finds a boundary in
 * them, fed from there, as the tracker does), bit 2: no eof at the end.
 * Byte 1: seed for the cut points. The rest is a script of both directions
 * (records: op = dir | kind << 1, kind 0 data / 1 gap / 2 eof / 3 reset; a
 * 16-bit big-endian length; for data that many bytes, the last record may
 * be short), as in tests/unit/test_http2.c, whose golden cases seed
 * tests/fuzz/corpus/fuzz_http2/.
 * Invariants: no crash or leak; a (stream, direction) half ends at most once
 * and gets no headers or data after its end; DATA offsets are contiguous
 * per half; once both directions ended every stream seen has both halves
 * ended (the upgraded stream 1's request half aside); the run cut into
 * pieces traces exactly like the whole run (in mode 3 the search runs per
 * record in both, the cuts apply after it); tt_http2_find_sync resumed
 * from its saved point answers as a search from the start, and what it
 * finds is within the bytes. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2.h"
#include "fuzz_text.h"


/* per-half state, in a small open-addressing table */
#define SLOTS 16384
typedef struct half_state {
    uint32_t id; /* 0: free */
    uint8_t seen, ended[2];
    uint64_t next_off[2];
} half_state;

typedef struct fz_run {
    fz_text out;
    half_state *tab;
    bool upgraded;
} fz_run;

static half_state *slot(fz_run *r, uint32_t id)
{
    if (id == 0) abort(); /* no stream callback names stream 0 */
    size_t h = (id * 2654435761u) % SLOTS;
    for (size_t k = 0; k < SLOTS; k++, h = (h + 1) % SLOTS) {
        if (r->tab[h].id == id) return &r->tab[h];
        if (r->tab[h].id == 0) {
            r->tab[h].id = id;
            return &r->tab[h];
        }
    }
    abort();
}

static void on_headers(void *ud, const tt_h2_headers *h)
{
    fz_run *r = ud;
    half_state *s = slot(r, h->stream_id);
    if (s->ended[h->dir]) abort();
    s->seen = 1;
    if (h->n_headers > TT_HTTP2_MAX_HEADERS || h->n_unknown > h->n_headers + (h->truncated ? 1000000 : 0)) abort();
    if (h->skipped && h->n_headers) abort();
    fz_printf(&r->out, "H %d %u %d %d %d %d %d %zu %zu %u %llu %llu\n", h->dir, h->stream_id, h->end_stream,
              h->interim, h->trailers, h->promise, h->skipped, h->n_headers, h->block_len, h->frames,
              (unsigned long long)h->first_off, (unsigned long long)h->last_off);
    for (size_t i = 0; i < h->n_headers; i++) {
        const tt_h2_header *f = &h->headers[i];
        fz_printf(&r->out, "%u %u %zu %zu:", f->flags, f->index, f->name_len, f->value_len);
        fz_add(&r->out, f->name, f->name_len);
        fz_add(&r->out, f->value, f->value_len);
        fz_add(&r->out, "\n", 1);
    }
}

static void on_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    fz_run *r = ud;
    half_state *s = slot(r, sid);
    if (n == 0 || n > TT_HTTP2_DATA_PIECE || s->ended[dir] || off != s->next_off[dir]) abort();
    s->next_off[dir] += n;
    s->seen = 1;
    fz_printf(&r->out, "D %d %u %llu %zu:", dir, sid, (unsigned long long)off, n);
    fz_add(&r->out, d, n);
    fz_add(&r->out, "\n", 1);
}

static void on_end(void *ud, const tt_h2_stream_end *e)
{
    fz_run *r = ud;
    half_state *s = slot(r, e->stream_id);
    if (s->ended[e->dir]) abort();
    if (e->body_bytes != s->next_off[e->dir]) abort();
    s->ended[e->dir] = 1;
    s->seen = 1;
    fz_printf(&r->out, "E %d %u %d %u %d %llu %llu %llu %llu\n", e->dir, e->stream_id, e->how, e->error_code, e->by,
              (unsigned long long)e->off, (unsigned long long)e->body_bytes, (unsigned long long)e->data_frames,
              (unsigned long long)e->pad_bytes);
}

static void on_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off)
{
    fz_printf(&((fz_run *)ud)->out, "X %d %d %s %llu\n", dir, code, msg, (unsigned long long)off);
}

static void on_frame(void *ud, const tt_h2_frame *f)
{
    fz_printf(&((fz_run *)ud)->out, "F %d %u %u %u %u %llu\n", f->dir, f->type, f->flags, f->stream_id, f->length,
              (unsigned long long)f->off);
}

static void on_settings(void *ud, tt_direction dir, bool ack, const tt_h2_setting *s, size_t n, uint64_t ns)
{
    fz_printf(&((fz_run *)ud)->out, "S %d %d %zu\n", dir, ack, n);
}

static void on_window(void *ud, const tt_h2_window_update *w)
{
    fz_printf(&((fz_run *)ud)->out, "W %d %u %u %u %llu %d %lld\n", w->dir, w->stream_id, w->increment, w->count,
              (unsigned long long)w->total, w->window_known, (long long)w->window);
}

static void on_goaway(void *ud, tt_direction dir, uint32_t last, uint32_t code, const uint8_t *dbg, size_t n,
                      uint64_t ns)
{
    if (n > 1024) abort();
    fz_printf(&((fz_run *)ud)->out, "G %d %u %u %zu\n", dir, last, code, n);
}

static void on_ping(void *ud, tt_direction dir, bool ack, const uint8_t op[8], uint64_t ns)
{
    fz_printf(&((fz_run *)ud)->out, "P %d %d\n", dir, ack);
}

static const tt_http2_callbacks callbacks = { on_headers, on_data,   on_end,   on_error, on_frame,
                                              on_settings, on_ping, on_goaway, on_window };

/* Cut points over the data bytes: a few from the seed, or every byte. */
static size_t make_cuts(uint32_t seed, size_t n, size_t *cuts)
{
    if (n == 0) return 0;
    if ((seed & 7) == 0) {
        size_t k = 0;
        for (size_t i = 1; i < n; i++) cuts[k++] = i;
        return k;
    }
    size_t count = 1 + (seed >> 3) % 16, k = 0;
    if (count > n) count = n;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < count; i++) {
        x = x * 1103515245u + 12345u;
        cuts[k++] = 1 + (x >> 8) % n;
    }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    return k;
}

static void run(int mode, bool eof_end, const uint8_t *sc, size_t n, const size_t *cuts, size_t ncuts, fz_text *out)
{
    fz_run r = { 0 };
    r.tab = calloc(SLOTS, sizeof *r.tab);
    if (!r.tab) abort();
    fz_add(&r.out, "", 0);
    tt_http2_conn *c = mode == 1 ? tt_http2_new_midstream(&callbacks, &r) : tt_http2_new(&callbacks, &r);
    if (!c) abort();
    if (mode == 2) {
        r.upgraded = true;
        tt_http2_start_upgrade(c, "AAEAACAAAAIAAAAA", 16, 1);
    }
    size_t i = 0, pos = 0, ci = 0;
    uint64_t ns = 10;
    bool ended[2] = { false, false };
    struct { uint8_t *b; size_t n, from; bool synced; } hs[2] = { { 0 } };
    if (mode != 3) hs[0].synced = hs[1].synced = true;
    while (i < n) {
        uint8_t op = sc[i];
        size_t len = i + 2 < n ? ((size_t)sc[i + 1] << 8 | sc[i + 2]) : 0;
        i = i + 3 < n ? i + 3 : n;
        tt_direction dir = (tt_direction)(op & 1);
        int kind = (op >> 1) & 3;
        if (kind == 1) {
            if (hs[dir].synced) tt_http2_gap(c, dir, len, ns++);
            hs[dir].n = hs[dir].from = 0; /* unsynced: look again after the hole */
            continue;
        }
        if (kind >= 2) {
            tt_http2_eof(c, dir, kind == 2, ns++);
            ended[dir] = true;
            continue;
        }
        if (len > n - i) len = n - i;
        if (!hs[dir].synced) {
            uint8_t *b = realloc(hs[dir].b, hs[dir].n + len + 1);
            if (!b) abort();
            memcpy(b + hs[dir].n, sc + i, len);
            hs[dir].b = b;
            hs[dir].n += len;
            size_t from0 = 0;
            long a = tt_http2_find_sync(b, hs[dir].n, dir, &hs[dir].from);
            if (a != tt_http2_find_sync(b, hs[dir].n, dir, &from0) || a >= (long)hs[dir].n || hs[dir].from > hs[dir].n)
                abort();
            if (a >= 0) {
                hs[dir].synced = true;
                tt_http2_feed(c, dir, b + a, hs[dir].n - (size_t)a, ns++);
            }
            pos += len;
            i += len;
            continue;
        }
        size_t at = 0;
        while (at < len) {
            size_t end = len;
            while (ci < ncuts && cuts[ci] <= pos + at) ci++;
            if (ci < ncuts && cuts[ci] < pos + end) end = cuts[ci] - pos;
            uint8_t *piece = malloc(end - at);
            if (!piece) abort();
            memcpy(piece, sc + i + at, end - at);
            tt_http2_feed(c, dir, piece, end - at, ns++);
            free(piece);
            at = end;
        }
        pos += len;
        i += len;
    }
    if (eof_end) {
        for (int d = 0; d < 2; d++) tt_http2_eof(c, (tt_direction)d, true, ns++);
        ended[0] = ended[1] = true;
    }
    if (ended[0] && ended[1]) /* every stream seen has ended both ways */
        for (size_t k = 0; k < SLOTS; k++) {
            half_state *s = &r.tab[k];
            if (!s->id || !s->seen) continue;
            if (!s->ended[1]) abort();
            if (!s->ended[0] && !(r.upgraded && s->id == 1)) abort();
        }
    tt_http2_free(c);
    free(hs[0].b);
    free(hs[1].b);
    free(r.tab);
    *out = r.out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int mode = data[0] & 3;
    bool eof_end = !(data[0] & 4);
    uint8_t seed = data[1];
    const uint8_t *sc = data + 2;
    size_t n = size - 2;
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    if (!cuts) abort();
    size_t ncuts = make_cuts((uint32_t)seed * 2246822519u + (uint32_t)n, n, cuts);
    fz_text whole, cut;
    run(mode, eof_end, sc, n, NULL, 0, &whole);
    run(mode, eof_end, sc, n, cuts, ncuts, &cut);
    if (whole.len != cut.len || memcmp(whole.s, cut.s, whole.len) != 0) {
        fprintf(stderr, "whole and cut runs differ\n--- whole\n%s--- cut\n%s---\n", whole.s, cut.s);
        abort();
    }
    free(whole.s);
    free(cut.s);
    free(cuts);
    return 0;
}
