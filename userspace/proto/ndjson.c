/* ndjson.c - newline-delimited JSON framing; see ndjson.h for the contract. */
#include "proto/ndjson.h"

#include <stdlib.h>
#include <string.h>

/* One byte beyond the bound, so that a CR ending a line of exactly the bound
 * is seen and removed rather than counted as a cut. */
#define LINE_LIMIT (TT_SSE_MAX_EVENT + 1u)

struct tt_ndjson_parser {
    tt_frame_callbacks cb;
    void *ud;
    uint32_t feeds;         /* feed() calls so far: the next chunk ordinal */
    uint32_t last_chunk;    /* ordinal of the feed with the last byte */
    uint64_t end_off;       /* body offset just past the last byte fed */

    uint8_t *line;          /* a line that began in an earlier feed */
    size_t line_len, line_cap;
    bool line_open, line_cut, line_ends_cr;
    uint64_t line_off, line_ns;
    uint32_t line_chunk;
};

tt_ndjson_parser *tt_ndjson_new(const tt_frame_callbacks *cb, void *ud)
{
    tt_ndjson_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (cb) p->cb = *cb;
    p->ud = ud;
    return p;
}

void tt_ndjson_free(tt_ndjson_parser *p)
{
    if (!p) return;
    free(p->line);
    free(p);
}

static void line_append(tt_ndjson_parser *p, const uint8_t *src, size_t n, uint64_t off, uint64_t ns, uint32_t chunk)
{
    if (!p->line_open) {
        p->line_open = true;
        p->line_cut = false;
        p->line_ends_cr = false;
        p->line_len = 0;
        p->line_off = off;
        p->line_ns = ns;
        p->line_chunk = chunk;
    }
    if (n == 0) return;
    p->line_ends_cr = src[n - 1] == '\r';
    size_t room = LINE_LIMIT - p->line_len;
    size_t take = n < room ? n : room;
    if (take && p->line_len + take > p->line_cap) {
        size_t ncap = p->line_cap ? p->line_cap : 256;
        while (ncap < p->line_len + take) ncap = ncap > LINE_LIMIT / 2 ? LINE_LIMIT : ncap * 2;
        uint8_t *nb = realloc(p->line, ncap);
        if (nb) {
            p->line = nb;
            p->line_cap = ncap;
        } else {
            take = 0;
        }
    }
    if (take) memcpy(p->line + p->line_len, src, take);
    p->line_len += take;
    if (take < n) p->line_cut = true;
}

static void emit_line(tt_ndjson_parser *p, const uint8_t *line, size_t len, uint64_t first_off, uint64_t first_ns,
                      uint32_t first_chunk, bool cut, uint32_t term, uint32_t flags,
                      uint64_t dispatch_off, uint64_t dispatch_ns, uint32_t last_chunk)
{
    tt_event_frame f = {
        .type = NULL,
        .data = len ? (const char *)line : "",
        .data_len = len,
        .retry_ms = -1,
        .first_off = first_off,
        .dispatch_off = dispatch_off,
        .first_ns = first_ns,
        .dispatch_ns = dispatch_ns,
        .first_chunk = first_chunk,
        .last_chunk = last_chunk,
        .terminators = term,
        .flags = flags | (cut ? TT_FRAME_TRUNCATED : 0u),
        .lines = 1,
        .data_lines = 1,
        .cr_off = term == TT_TERM_CRLF ? dispatch_off - 2 : 0,
    };
    if (tt_frame_has_raw_line_sep(line, len)) f.flags |= TT_FRAME_RAW_LINE_SEP;
    if (p->cb.on_event) p->cb.on_event(p->ud, &f);
}

void tt_ndjson_feed(tt_ndjson_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    if (!p) return;
    uint32_t chunk = p->feeds;
    if (p->feeds < UINT32_MAX) p->feeds++;
    if (len == 0 || !data) return;
    p->last_chunk = chunk;
    p->end_off = body_off + len;

    size_t pos = 0;
    while (pos < len) {
        const uint8_t *lf = memchr(data + pos, '\n', len - pos);
        if (!lf) {
            line_append(p, data + pos, len - pos, body_off + pos, mono_ns, chunk);
            break;
        }
        size_t t = (size_t)(lf - data);
        const uint8_t *line;
        size_t n;
        uint64_t first_off, first_ns;
        uint32_t first_chunk;
        bool cut, ends_cr;
        if (p->line_open) {
            line_append(p, data + pos, t - pos, body_off + pos, mono_ns, chunk);
            p->line_open = false;
            line = p->line;
            n = p->line_len;
            first_off = p->line_off;
            first_ns = p->line_ns;
            first_chunk = p->line_chunk;
            cut = p->line_cut;
            ends_cr = p->line_ends_cr;
        } else {
            line = data + pos;
            n = t - pos;
            first_off = body_off + pos;
            first_ns = mono_ns;
            first_chunk = chunk;
            cut = false;
            ends_cr = n > 0 && line[n - 1] == '\r';
        }
        uint32_t term = ends_cr ? TT_TERM_CRLF : TT_TERM_LF;
        if (ends_cr && !cut && n > 0) n--;
        if (n > TT_SSE_MAX_EVENT) {
            n = TT_SSE_MAX_EVENT;
            cut = true;
        }
        if (n > 0 || cut)
            emit_line(p, line, n, first_off, first_ns, first_chunk, cut, term, 0, body_off + t + 1, mono_ns, chunk);
        pos = t + 1;
    }
}

void tt_ndjson_finish(tt_ndjson_parser *p, uint64_t mono_ns)
{
    if (!p) return;
    size_t n = p->line_len > TT_SSE_MAX_EVENT ? TT_SSE_MAX_EVENT : p->line_len;
    if (n < p->line_len) p->line_cut = true;
    if (p->line_open && (n > 0 || p->line_cut))
        emit_line(p, p->line, n, p->line_off, p->line_ns, p->line_chunk, p->line_cut, 0,
                  TT_FRAME_UNTERMINATED, p->end_off, mono_ns, p->last_chunk);
    p->feeds = 0;
    p->last_chunk = 0;
    p->end_off = 0;
    p->line_len = 0;
    p->line_open = p->line_cut = p->line_ends_cr = false;
}
