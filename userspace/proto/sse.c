/* sse.c - text/event-stream framing; see sse.h for the contract. */
#include "proto/sse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Room kept in the partial-line buffer beyond the data bound, so that a
 * "data: " prefix never eats into the data a line may carry. */
#define LINE_SLACK 64u
#define LINE_LIMIT (TT_SSE_MAX_EVENT + LINE_SLACK)

typedef struct byte_pos {
    uint64_t off, ns;
    uint32_t chunk;
} byte_pos;

/* What the LF after a CR that ended a feed would complete. */
enum cr_target { CR_NOTHING = 0, CR_EVENT_LINE, CR_DISPATCH };

static const uint8_t utf8_bom[3] = { 0xEF, 0xBB, 0xBF };

struct tt_sse_parser {
    tt_frame_callbacks cb;
    void *ud;

    uint32_t feeds;      /* feed() calls so far: the next chunk ordinal */
    byte_pos last_byte;  /* the last byte fed (its chunk and instant) */
    uint64_t end_off;    /* body offset just past the last byte fed */

    bool bom_decided;
    uint8_t bom_matched; /* BOM bytes seen at stream start while undecided */
    byte_pos stream_start;
    bool bom_flag_pending;

    uint8_t *line;       /* a line that began in an earlier feed */
    size_t line_len, line_cap;
    bool line_open, line_cut;
    byte_pos line_start;

    bool pending_cr;
    uint64_t pending_cr_off;
    enum cr_target cr_target;

    tt_event_frame ev;   /* facts of the event being built */
    bool event_open;
    uint32_t field_lines;
    uint8_t *data;
    size_t data_len, data_cap;
    /* The event's one data line so far when it lies in the bytes being
     * fed: the event is dispatched from them without a copy. Copied into
     * data before a second data line is added and before the feed returns. */
    const uint8_t *data_ref;
    size_t data_ref_len;
    uint8_t *type;
    size_t type_len, type_cap;

    uint8_t *last_id;    /* the spec's last event ID buffer */
    size_t last_id_len, last_id_cap;
    bool any_id;
};

/* Grow *buf so it holds need bytes, never beyond limit; false when it cannot. */
static bool reserve(uint8_t **buf, size_t *cap, size_t need, size_t limit)
{
    if (need <= *cap) return true;
    if (need > limit) return false;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) ncap = ncap > limit / 2 ? limit : ncap * 2;
    uint8_t *nb = realloc(*buf, ncap);
    if (!nb) return false;
    *buf = nb;
    *cap = ncap;
    return true;
}

/* Append up to limit total bytes; returns false when anything was cut. */
static bool append_capped(uint8_t **buf, size_t *len, size_t *cap, const void *src, size_t n, size_t limit)
{
    size_t room = limit - *len;
    size_t take = n < room ? n : room;
    if (take && !reserve(buf, cap, *len + take, limit)) take = 0;
    if (take) memcpy(*buf + *len, src, take);
    *len += take;
    return take == n;
}

static void count_up(uint16_t *c)
{
    if (*c < UINT16_MAX) (*c)++;
}

static void reset_event(tt_sse_parser *p)
{
    memset(&p->ev, 0, sizeof p->ev);
    p->ev.retry_ms = -1;
    p->event_open = false;
    p->field_lines = 0;
    p->data_len = 0;
    p->data_ref = NULL;
    p->type_len = 0;
}

static void reset_stream(tt_sse_parser *p)
{
    reset_event(p);
    p->feeds = 0;
    memset(&p->last_byte, 0, sizeof p->last_byte);
    p->end_off = 0;
    p->bom_decided = false;
    p->bom_matched = 0;
    p->bom_flag_pending = false;
    p->line_len = 0;
    p->line_open = p->line_cut = false;
    p->pending_cr = false;
    p->cr_target = CR_NOTHING;
    p->last_id_len = 0;
    p->any_id = false;
}

tt_sse_parser *tt_sse_new(const tt_frame_callbacks *cb, void *ud)
{
    tt_sse_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (cb) p->cb = *cb;
    p->ud = ud;
    reset_stream(p);
    return p;
}

void tt_sse_free(tt_sse_parser *p)
{
    if (!p) return;
    free(p->line);
    free(p->data);
    free(p->type);
    free(p->last_id);
    free(p);
}

static void emit(tt_sse_parser *p)
{
    tt_event_frame *f = &p->ev;
    if (p->data_ref) {
        f->data = (const char *)p->data_ref;
        f->data_len = p->data_ref_len;
    } else {
        size_t dlen = p->data_len;
        if (dlen && p->data[dlen - 1] == '\n') dlen--;
        f->data = p->data ? (const char *)p->data : "";
        f->data_len = dlen;
    }
    f->type = p->type_len ? (const char *)p->type : "message";
    f->type_len = p->type_len ? p->type_len : 7;
    f->id = p->any_id ? (p->last_id ? (const char *)p->last_id : "") : NULL;
    f->id_len = p->any_id ? p->last_id_len : 0;
    if (p->bom_flag_pending) {
        f->flags |= TT_FRAME_BOM;
        p->bom_flag_pending = false;
    }
    if (p->cb.on_event) p->cb.on_event(p->ud, f);
}

/* Whether any of v[0..n) is 0x80 or above, read a block at a time (the
 * last block overlapping the one before), since most values are ASCII
 * throughout: 16 bytes with SSE2, 8 elsewhere. */
static bool any_high_byte(const uint8_t *v, size_t n)
{
#ifdef __SSE2__
    if (n >= 16) {
        __m128i acc = _mm_loadu_si128((const __m128i *)(v + n - 16));
        for (size_t i = 0; i + 16 < n; i += 16) acc = _mm_or_si128(acc, _mm_loadu_si128((const __m128i *)(v + i)));
        return _mm_movemask_epi8(acc) != 0;
    }
#endif
    uint64_t acc = 0, w;
    if (n >= 8) {
        memcpy(&acc, v + n - 8, 8);
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, v + i, 8);
            acc |= w;
        }
    } else {
        for (size_t i = 0; i < n; i++) acc |= v[i];
    }
    return (acc & 0x8080808080808080ull) != 0;
}

bool tt_frame_has_raw_line_sep(const uint8_t *v, size_t n)
{
    if (!any_high_byte(v, n)) return false; /* each sequence starts with 0xC2 or 0xE2 */
    const uint8_t *end = v + n, *q = v;
    while ((q = memchr(q, 0xE2, (size_t)(end - q))) != NULL) {
        if (end - q >= 3 && q[1] == 0x80 && (q[2] == 0xA8 || q[2] == 0xA9)) return true;
        q++;
    }
    q = v;
    while ((q = memchr(q, 0xC2, (size_t)(end - q))) != NULL) {
        if (end - q >= 2 && q[1] == 0x85) return true;
        q++;
    }
    return false;
}

/* retry value: ASCII digits only, non-empty, fits int64; else -1. */
static int64_t parse_retry(const uint8_t *v, size_t n)
{
    if (n == 0) return -1;
    int64_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return -1;
        int d = v[i] - '0';
        if (r > (INT64_MAX - d) / 10) return -1;
        r = r * 10 + d;
    }
    return r;
}

static bool name_is(const uint8_t *name, size_t n, const char *lit, size_t lit_len)
{
    return n == lit_len && memcmp(name, lit, lit_len) == 0;
}

/* Add one data line's value and its LF to the event's data, cut at
 * TT_SSE_MAX_EVENT; false when anything was cut. */
static bool append_data(tt_sse_parser *p, const uint8_t *value, size_t value_len)
{
    bool whole = append_capped(&p->data, &p->data_len, &p->data_cap, value, value_len, TT_SSE_MAX_EVENT);
    return append_capped(&p->data, &p->data_len, &p->data_cap, "\n", 1, TT_SSE_MAX_EVENT) && whole;
}

/* Copy the data line the event still points at into its own buffer (it
 * fits: a line is pointed at only when it would). */
static void take_data_ref(tt_sse_parser *p)
{
    const uint8_t *ref = p->data_ref;
    p->data_ref = NULL;
    if (!append_data(p, ref, p->data_ref_len)) p->ev.flags |= TT_FRAME_TRUNCATED; /* out of memory */
}

/* One field line; in_feed when line points into the bytes being fed
 * (not the partial-line buffer). */
static void field_line(tt_sse_parser *p, const uint8_t *line, size_t len, bool in_feed)
{
    tt_event_frame *f = &p->ev;
    const uint8_t *colon = memchr(line, ':', len);
    size_t name_len = colon ? (size_t)(colon - line) : len;
    const uint8_t *value = colon ? colon + 1 : line + len;
    size_t value_len = colon ? len - name_len - 1 : 0;
    bool space_after_colon = value_len > 0 && value[0] == ' ';
    if (space_after_colon) {
        value++;
        value_len--;
    }
    if (p->field_lines < UINT32_MAX) p->field_lines++;

    if (name_is(line, name_len, "data", 4)) {
        f->fields |= TT_FIELD_DATA;
        count_up(&f->data_lines);
        if (colon && !space_after_colon && value_len > 0) f->flags |= TT_FRAME_DATA_NO_SPACE;
        if (value_len == 0) f->flags |= TT_FRAME_EMPTY_DATA_LINE;
        if (!(f->flags & TT_FRAME_RAW_LINE_SEP) && tt_frame_has_raw_line_sep(value, value_len))
            f->flags |= TT_FRAME_RAW_LINE_SEP;
        if (in_feed && p->data_len == 0 && !p->data_ref && value_len < TT_SSE_MAX_EVENT) {
            p->data_ref = value;
            p->data_ref_len = value_len;
            return;
        }
        if (p->data_ref) take_data_ref(p);
        if (!append_data(p, value, value_len)) f->flags |= TT_FRAME_TRUNCATED;
    } else if (name_is(line, name_len, "event", 5)) {
        f->fields |= TT_FIELD_EVENT;
        p->type_len = 0;
        if (!append_capped(&p->type, &p->type_len, &p->type_cap, value, value_len, TT_SSE_MAX_FIELD))
            f->flags |= TT_FRAME_TRUNCATED;
    } else if (name_is(line, name_len, "id", 2)) {
        f->fields |= TT_FIELD_ID;
        if (value_len == 0 || !memchr(value, 0, value_len)) {
            p->last_id_len = 0;
            if (!append_capped(&p->last_id, &p->last_id_len, &p->last_id_cap, value, value_len, TT_SSE_MAX_FIELD))
                f->flags |= TT_FRAME_TRUNCATED;
            p->any_id = true;
            f->has_id = true;
        }
    } else if (name_is(line, name_len, "retry", 5)) {
        f->fields |= TT_FIELD_RETRY;
        int64_t r = parse_retry(value, value_len);
        if (r >= 0) f->retry_ms = r;
    } else {
        f->fields |= TT_FIELD_OTHER;
    }
}

/* Add a line terminator to the event, remembering where its first CR was. */
static void add_terminator(tt_event_frame *f, unsigned bit, uint64_t cr_at)
{
    if ((bit & (TT_TERM_CR | TT_TERM_CRLF)) && !(f->terminators & (TT_TERM_CR | TT_TERM_CRLF))) f->cr_off = cr_at;
    f->terminators |= bit;
}

/* One complete line. term is the TT_TERM_* bit, or 0 when a CR ended the feed
 * (the bit is added once the next byte is known) or at finish. end is the
 * position of the terminator's first byte. in_feed: line points into the
 * bytes being fed. */
static void process_line(tt_sse_parser *p, const uint8_t *line, size_t len, byte_pos start,
                         unsigned term, byte_pos end, bool cut, bool at_finish, bool in_feed)
{
    tt_event_frame *f = &p->ev;
    if (len == 0 && !cut) {
        if (p->ev.data_lines == 0) {
            reset_event(p);
            p->cr_target = CR_NOTHING;
            return;
        }
        add_terminator(f, term, end.off);
        f->dispatch_off = end.off + 1;
        f->dispatch_ns = end.ns;
        f->last_chunk = end.chunk;
        if (term == 0) {
            p->cr_target = CR_DISPATCH;
            return;
        }
        emit(p);
        reset_event(p);
        return;
    }
    if (!p->event_open) {
        p->event_open = true;
        f->first_off = start.off;
        f->first_ns = start.ns;
        f->first_chunk = start.chunk;
    }
    add_terminator(f, term, end.off);
    p->cr_target = CR_EVENT_LINE;
    count_up(&f->lines);
    if (cut) f->flags |= TT_FRAME_TRUNCATED;
    if (len == 0) return;
    if (line[0] == ':') {
        count_up(&f->comment_lines);
        if (!at_finish && p->cb.on_comment)
            p->cb.on_comment(p->ud, (const char *)line + 1, len - 1, start.off, start.ns);
        return;
    }
    field_line(p, line, len, in_feed);
}

/* The usual event, "data: V" (V not empty) ended by LF and dispatched by a
 * blank line right after it, both in the bytes being fed, with no event
 * begun before it: what process_line does with its two lines, without
 * their general steps. start is the data line's first byte, lf_off the
 * body offset of its LF. */
static void take_one_line_event(tt_sse_parser *p, const uint8_t *value, size_t value_len, byte_pos start,
                                uint64_t lf_off)
{
    tt_event_frame *f = &p->ev;
    f->first_off = start.off;
    f->first_ns = start.ns;
    f->first_chunk = start.chunk;
    f->terminators = TT_TERM_LF;
    f->fields = TT_FIELD_DATA;
    f->lines = 1;
    f->data_lines = 1;
    if (tt_frame_has_raw_line_sep(value, value_len)) f->flags |= TT_FRAME_RAW_LINE_SEP;
    p->data_ref = value;
    p->data_ref_len = value_len;
    f->dispatch_off = lf_off + 2; /* past the blank line's LF */
    f->dispatch_ns = start.ns;
    f->last_chunk = start.chunk;
    emit(p);
    reset_event(p);
}

/* The byte after a CR that ended a feed is known: LF (is_crlf) or not. */
static void resolve_pending_cr(tt_sse_parser *p, bool is_crlf)
{
    unsigned bit = is_crlf ? TT_TERM_CRLF : TT_TERM_CR;
    p->pending_cr = false;
    if (p->cr_target == CR_EVENT_LINE) {
        add_terminator(&p->ev, bit, p->pending_cr_off);
    } else if (p->cr_target == CR_DISPATCH) {
        add_terminator(&p->ev, bit, p->pending_cr_off);
        emit(p);
        reset_event(p);
    }
    p->cr_target = CR_NOTHING;
}

static void line_append(tt_sse_parser *p, const uint8_t *src, size_t n, byte_pos start)
{
    if (!p->line_open) {
        p->line_open = true;
        p->line_cut = false;
        p->line_len = 0;
        p->line_start = start;
    }
    if (!append_capped(&p->line, &p->line_len, &p->line_cap, src, n, LINE_LIMIT)) p->line_cut = true;
}

/* Returns the index of the next CR or LF at or after pos, or len. The two
 * cached hits make the scan linear in the feed however many lines it has. */
static size_t next_line_end(const uint8_t *d, size_t pos, size_t len, const uint8_t **lf_hit, const uint8_t **cr_hit)
{
    if (!*lf_hit || *lf_hit < d + pos) {
        *lf_hit = memchr(d + pos, '\n', len - pos);
        if (!*lf_hit) *lf_hit = d + len;
    }
    if (!*cr_hit || *cr_hit < d + pos) {
        *cr_hit = memchr(d + pos, '\r', len - pos);
        if (!*cr_hit) *cr_hit = d + len;
    }
    const uint8_t *hit = *lf_hit < *cr_hit ? *lf_hit : *cr_hit;
    return (size_t)(hit - d);
}

/* Stream-start BOM check. Returns where line parsing starts in this feed,
 * or len when the feed was all (so far) BOM. */
static size_t consume_bom(tt_sse_parser *p, const uint8_t *data, size_t len, byte_pos at)
{
    uint8_t held_before = p->bom_matched;
    size_t pos = 0;
    if (held_before == 0 && len > 0) p->stream_start = at;
    while (pos < len && p->bom_matched < 3 && data[pos] == utf8_bom[p->bom_matched]) {
        p->bom_matched++;
        pos++;
    }
    if (p->bom_matched == 3) {
        p->bom_decided = true;
        p->bom_flag_pending = true;
        return pos;
    }
    if (pos == len) return len;
    p->bom_decided = true;
    p->bom_matched = 0;
    if (held_before) line_append(p, utf8_bom, held_before, p->stream_start);
    return 0;
}

void tt_sse_feed(tt_sse_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    if (!p) return;
    uint32_t chunk = p->feeds;
    if (p->feeds < UINT32_MAX) p->feeds++;
    if (len == 0 || !data) return;
    p->last_byte = (byte_pos){ body_off + len - 1, mono_ns, chunk };
    p->end_off = body_off + len;

    size_t pos = 0;
    if (!p->bom_decided) {
        pos = consume_bom(p, data, len, (byte_pos){ body_off, mono_ns, chunk });
        if (pos == len) return;
    }
    if (p->pending_cr) {
        bool lf = data[pos] == '\n';
        if (lf) pos++;
        resolve_pending_cr(p, lf);
    }

    const uint8_t *lf_hit = NULL, *cr_hit = NULL;
    while (pos < len) {
        size_t t = next_line_end(data, pos, len, &lf_hit, &cr_hit);
        byte_pos here = { body_off + pos, mono_ns, chunk };
        if (t == len) {
            line_append(p, data + pos, len - pos, here);
            break;
        }
        if (!p->line_open && !p->event_open && t - pos > 6 && t - pos - 6 < TT_SSE_MAX_EVENT && t + 1 < len &&
            data[t] == '\n' && data[t + 1] == '\n' && memcmp(data + pos, "data: ", 6) == 0) {
            take_one_line_event(p, data + pos + 6, t - pos - 6, here, body_off + t);
            pos = t + 2;
            continue;
        }
        unsigned term;
        size_t next;
        if (data[t] == '\n') {
            term = TT_TERM_LF;
            next = t + 1;
        } else if (t + 1 == len) {
            term = 0;
            next = len;
        } else if (data[t + 1] == '\n') {
            term = TT_TERM_CRLF;
            next = t + 2;
        } else {
            term = TT_TERM_CR;
            next = t + 1;
        }
        byte_pos end = { body_off + t, mono_ns, chunk };
        if (p->line_open) {
            line_append(p, data + pos, t - pos, here);
            p->line_open = false;
            process_line(p, p->line, p->line_len, p->line_start, term, end, p->line_cut, false, false);
        } else {
            size_t n = t - pos;
            bool cut = n > LINE_LIMIT;
            process_line(p, data + pos, cut ? LINE_LIMIT : n, here, term, end, cut, false, true);
        }
        if (term == 0) {
            p->pending_cr = true;
            p->pending_cr_off = body_off + t;
        }
        pos = next;
    }
    if (p->data_ref) take_data_ref(p); /* the event goes on past these bytes */
}

void tt_sse_finish(tt_sse_parser *p, uint64_t mono_ns)
{
    if (!p) return;
    if (!p->bom_decided && p->bom_matched) line_append(p, utf8_bom, p->bom_matched, p->stream_start);
    if (p->pending_cr) resolve_pending_cr(p, false);
    if (p->line_open) {
        p->line_open = false;
        process_line(p, p->line, p->line_len, p->line_start, 0, p->last_byte, p->line_cut, true, false);
    }
    if (p->event_open && p->field_lines > 0) {
        p->ev.flags |= TT_FRAME_UNTERMINATED;
        p->ev.dispatch_off = p->end_off;
        p->ev.dispatch_ns = mono_ns;
        p->ev.last_chunk = p->last_byte.chunk;
        emit(p);
    }
    reset_stream(p);
}
