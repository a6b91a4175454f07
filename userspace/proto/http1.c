#include "proto/http1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/content_decode.h"
#include "proto/http1_head.h"

#define CHUNK_SIZE_LIMIT ((uint64_t)1 << 62)
#define CHUNK_LINE_LIMIT 4096u
#define TRAILER_LIMIT TT_HTTP1_MAX_HEAD
#define METHOD_LIMIT 32u
#define EXPECT_QUEUE_LIMIT 65536u

enum parse_state {
    ST_IDLE,          /* between messages: skipping empty lines */
    ST_HEAD,          /* buffering a head until its blank line */
    ST_BODY_LENGTH,   /* Content-Length body, `remaining` left */
    ST_BODY_CLOSE,    /* close-delimited body */
    ST_CHUNK_SIZE,    /* hex digits of a chunk size */
    ST_CHUNK_SIZE_WS, /* blanks after the digits */
    ST_CHUNK_EXT,     /* chunk extensions up to LF */
    ST_CHUNK_SIZE_LF, /* CR seen after the size line */
    ST_CHUNK_DATA,    /* chunk data, `remaining` left */
    ST_CHUNK_DATA_END,/* CRLF after chunk data */
    ST_CHUNK_DATA_LF,
    ST_TRAILER_START, /* start of a trailer line (or the final blank line) */
    ST_TRAILER_LINE,
    ST_TRAILER_END_LF,
    ST_RESYNC,        /* bytes were lost: looking for the next start line */
    ST_DEAD,          /* error reported: input ignored */
    ST_CLOSED         /* eof seen: input ignored */
};

enum expect_kind { EXPECT_BODY = 0, EXPECT_NO_BODY, EXPECT_CONNECT };

struct tt_http1_parser {
    tt_http_role role;
    tt_http_callbacks cb;
    void *ud;
    enum parse_state state;
    uint64_t off; /* stream offset of the next byte fed */

    uint8_t *head_buf;
    size_t head_len, head_cap, line_start;
    bool start_checked;
    bool head_from_resync; /* the head being buffered was found by resynchronising */
    tt_http_head head;
    tt_http_header headers[TT_HTTP1_MAX_HEADERS];

    bool in_message; /* head reported, on_end not yet */
    uint64_t remaining;
    uint64_t chunk_size;
    unsigned chunk_digits;
    size_t line_bytes;
    uint64_t body_off, body_bytes, wire_bytes, gap_bytes;
    uint64_t last_off, last_ns;

    bool decoding, decode_lost;
    tt_content_decoder *decoder;
    uint64_t decode_ns;

    uint8_t *expect;
    size_t expect_first, expect_count, expect_cap;

    /* ST_RESYNC: the line being examined, where it began, and the run of
     * capitals before each of its last two spaces (a request's method). */
    struct resync_line {
        uint8_t *buf;
        size_t len;
        bool line_start, overlong;
        uint64_t off, ns;
        size_t caps_pos;
        uint64_t caps_ns;
        struct { size_t pos; uint64_t ns; bool valid; } before_sp[2]; /* [1]: the last space */
    } rs;

    char msg[128];
};

static void ignore_head(void *ud, const tt_http_head *h) {}
static void ignore_body(void *ud, const uint8_t *d, size_t n, uint64_t o, uint64_t ns) {}
static void ignore_end(void *ud, const tt_http_msg_end *e) {}
static void ignore_error(void *ud, tt_http_error c, const char *m, uint64_t o) {}

tt_http1_parser *tt_http1_new(tt_http_role role, const tt_http_callbacks *cb, void *ud)
{
    tt_http1_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->role = role;
    if (cb) p->cb = *cb;
    if (!p->cb.on_head) p->cb.on_head = ignore_head;
    if (!p->cb.on_body) p->cb.on_body = ignore_body;
    if (!p->cb.on_end) p->cb.on_end = ignore_end;
    if (!p->cb.on_error) p->cb.on_error = ignore_error;
    p->ud = ud;
    p->state = ST_IDLE;
    return p;
}

void tt_http1_free(tt_http1_parser *p)
{
    if (!p) return;
    free(p->head_buf);
    free(p->rs.buf);
    tt_decoder_free(p->decoder);
    free(p->expect);
    free(p);
}

/* ---- small helpers ---- */

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}


/* ---- ends and errors ---- */

static void end_message(tt_http1_parser *p, tt_http_end how, uint64_t last_off, uint64_t last_ns)
{
    tt_http_msg_end e = {
        .how = how,
        .last_off = last_off,
        .last_ns = last_ns,
        .body_bytes = p->body_bytes,
        .wire_body_bytes = p->wire_bytes,
        .gap_bytes = p->gap_bytes,
    };
    p->in_message = false;
    p->decoding = false;
    if (p->state != ST_DEAD && p->state != ST_CLOSED) p->state = ST_IDLE;
    p->cb.on_end(p->ud, &e);
}

/* Abandon the direction; a message in progress ends with END_ERROR at off. */
static void fail(tt_http1_parser *p, tt_http_error code, const char *msg, uint64_t off, uint64_t ns)
{
    p->state = ST_DEAD;
    p->cb.on_error(p->ud, code, msg, off);
    if (p->in_message) end_message(p, TT_HTTP_END_ERROR, off, ns);
}

static void resync_line_reset(tt_http1_parser *p, bool line_start)
{
    struct resync_line *rs = &p->rs;
    rs->len = 0;
    rs->overlong = false;
    rs->line_start = line_start;
    rs->before_sp[0].valid = rs->before_sp[1].valid = false;
}

/* Bytes were lost where the framing cannot skip them: report it, end a
 * message in progress (GAP), and look for the next start line. Responses
 * expected before the loss are forgotten: which of them were lost is not
 * known here. */
static void lose_sync(tt_http1_parser *p, const char *msg, uint64_t at, uint64_t ns)
{
    p->cb.on_error(p->ud, TT_HTTP_ERR_GAP, msg, at);
    if (p->in_message) end_message(p, TT_HTTP_END_GAP, at, ns);
    p->state = ST_RESYNC;
    p->expect_count = 0;
    resync_line_reset(p, true);
}

static void took(tt_http1_parser *p, size_t n, uint64_t off_after, uint64_t ns)
{
    p->wire_bytes += n;
    p->last_off = off_after;
    p->last_ns = ns;
}

/* Count `take` more bytes of a size line or of trailers against `limit`;
 * when they exceed it, fail at the first byte beyond and return true. */
static bool over_line_limit(tt_http1_parser *p, size_t take, size_t limit, uint64_t off, uint64_t ns,
                            const char *why)
{
    if (p->line_bytes + take <= limit) {
        p->line_bytes += take;
        return false;
    }
    size_t allowed = limit - p->line_bytes;
    took(p, allowed, off + allowed, ns);
    fail(p, TT_HTTP_ERR_TOO_LARGE, why, off + allowed, ns);
    return true;
}

/* A body whose framing says it is whole: check the content coding agrees. */
static void finish_message(tt_http1_parser *p, uint64_t off_after, uint64_t ns)
{
    if (p->decoding && !p->decode_lost && !tt_decoder_at_end(p->decoder)) {
        fail(p, TT_HTTP_ERR_DECODE, "compressed body ends inside its stream", off_after, ns);
        return;
    }
    end_message(p, p->gap_bytes ? TT_HTTP_END_GAP : TT_HTTP_END_COMPLETE, off_after, ns);
}

/* ---- body delivery ---- */

static void decoded_piece(void *ctx, const uint8_t *data, size_t len)
{
    tt_http1_parser *p = ctx;
    p->cb.on_body(p->ud, data, len, p->body_off, p->decode_ns);
    p->body_off += len;
    p->body_bytes += len;
}

static const char *coding_name(tt_content_coding c)
{
    return c == TT_CODING_GZIP ? "gzip" : c == TT_CODING_DEFLATE ? "deflate" : "coded";
}

/* Hand n body bytes (stream offset off) to the consumer, decoding if needed. */
static void deliver(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    if (n == 0) return;
    if (!p->decoding) {
        p->cb.on_body(p->ud, d, n, p->body_off, ns);
        p->body_off += n;
        p->body_bytes += n;
        return;
    }
    if (p->decode_lost) return;
    p->decode_ns = ns;
    size_t used = 0;
    if (tt_decoder_feed(p->decoder, d, n, decoded_piece, p, &used) < 0) {
        snprintf(p->msg, sizeof p->msg, "corrupt %s body: %s", coding_name(p->head.coding),
                 tt_decoder_error(p->decoder));
        took(p, used, off + used, ns);
        fail(p, TT_HTTP_ERR_DECODE, p->msg, off + used, ns);
    }
}

/* ---- the expected-response queue ---- */

static void expect_push(tt_http1_parser *p, enum expect_kind kind)
{
    if (p->role != TT_HTTP_RESPONSE) return;
    if (p->expect_count == p->expect_cap) {
        if (p->expect_cap >= EXPECT_QUEUE_LIMIT) {
            p->expect_first = (p->expect_first + 1) % p->expect_cap; /* forget the oldest */
            p->expect_count--;
        } else {
            size_t cap = p->expect_cap ? p->expect_cap * 2 : 16;
            uint8_t *q = malloc(cap);
            if (!q) return;
            for (size_t i = 0; i < p->expect_count; i++)
                q[i] = p->expect[(p->expect_first + i) % p->expect_cap];
            free(p->expect);
            p->expect = q;
            p->expect_cap = cap;
            p->expect_first = 0;
        }
    }
    p->expect[(p->expect_first + p->expect_count) % p->expect_cap] = (uint8_t)kind;
    p->expect_count++;
}

static enum expect_kind expect_pop(tt_http1_parser *p)
{
    if (p->expect_count == 0) return EXPECT_BODY;
    enum expect_kind k = (enum expect_kind)p->expect[p->expect_first];
    p->expect_first = (p->expect_first + 1) % p->expect_cap;
    p->expect_count--;
    return k;
}

void tt_http1_expect_response(tt_http1_parser *p, bool head_request)
{
    expect_push(p, head_request ? EXPECT_NO_BODY : EXPECT_BODY);
}

void tt_http1_expect_connect(tt_http1_parser *p)
{
    expect_push(p, EXPECT_CONNECT);
}

/* ---- heads ---- */

/* Early verdict on the first bytes of a head, so that binary data or
 * another protocol is named at once instead of being buffered. Depends only
 * on the bytes present, and never changes once given: same answer however
 * the stream is cut. Returns -1 when it failed the parser. */
static int check_start(tt_http1_parser *p)
{
    const uint8_t *b = p->head_buf;
    size_t n = p->head_len;
    uint64_t at = p->head.first_off, ns = p->head.first_ns;
    if (b[0] == 0x16) {
        if (n < 2) return 0;
        if (b[1] == 0x03) fail(p, TT_HTTP_ERR_UNSUPPORTED, "TLS", at, ns);
        else fail(p, TT_HTTP_ERR_MALFORMED, "not HTTP/1.x: binary data", at, ns);
        return -1;
    }
    if (p->role == TT_HTTP_RESPONSE) {
        size_t cmp = n < 5 ? n : 5;
        if (memcmp(b, "HTTP/", cmp) != 0) {
            fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x response", at, ns);
            return -1;
        }
        p->start_checked = n >= 5;
        return 0;
    }
    static const char preface[] = "PRI * HTTP/2.0";
    size_t plen = sizeof preface - 1;
    bool maybe_preface = memcmp(b, preface, n < plen ? n : plen) == 0;
    if (maybe_preface && n >= plen) {
        fail(p, TT_HTTP_ERR_UNSUPPORTED, "HTTP/2", at, ns);
        return -1;
    }
    size_t lim = n < METHOD_LIMIT + 1 ? n : METHOD_LIMIT + 1, i = 0;
    while (i < lim && tt_http_is_tchar(b[i])) i++;
    if (i < lim) {
        if (b[i] != ' ' || i == 0) {
            fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x request", at, ns);
            return -1;
        }
        p->start_checked = !maybe_preface;
        return 0;
    }
    if (lim == METHOD_LIMIT + 1) {
        fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x request: method too long", at, ns);
        return -1;
    }
    return 0;
}

static void describe_upgrade(tt_http1_parser *p, const tt_http_header *up)
{
    char name[64];
    size_t k = 0;
    if (up)
        for (size_t i = 0; i < up->value_len && k < sizeof name - 1; i++) {
            unsigned char c = (unsigned char)up->value[i];
            name[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
        }
    name[k] = 0;
    snprintf(p->msg, sizeof p->msg, "upgraded to %s", k ? name : "an unnamed protocol");
}

/* The blank line ending the head was just buffered. */
static void complete_head(tt_http1_parser *p)
{
    tt_http_head *h = &p->head;
    tt_http_head_facts f;
    const char *msg = NULL;
    tt_http_error e = tt_http1_parse_head(p->role, (const char *)p->head_buf, p->head_len, h, p->headers, &f, &msg);
    if (e != TT_HTTP_ERR_NONE && p->head_from_resync) {
        p->state = ST_RESYNC; /* not a message after all: the loss is already reported */
        resync_line_reset(p, true);
        return;
    }
    p->head_from_resync = false;
    if (e != TT_HTTP_ERR_NONE) {
        fail(p, e, msg, h->first_off, h->first_ns);
        return;
    }
    h->role = p->role;
    h->interim = p->role == TT_HTTP_RESPONSE && h->status < 200 && h->status != 101;

    bool has_body, leaves_http = false;
    if (p->role == TT_HTTP_REQUEST) {
        has_body = h->chunked || h->content_length > 0;
    } else if (h->interim) {
        has_body = false;
    } else {
        enum expect_kind kind = expect_pop(p);
        if (h->status == 101) {
            leaves_http = true;
            describe_upgrade(p, f.upgrade);
        } else if (kind == EXPECT_CONNECT && h->status < 300) {
            leaves_http = true;
            snprintf(p->msg, sizeof p->msg, "CONNECT tunnel");
        }
        has_body = !leaves_http && kind != EXPECT_NO_BODY && h->status != 204 && h->status != 304 &&
                   h->content_length != 0;
    }

    p->in_message = true;
    p->body_off = p->body_bytes = p->wire_bytes = p->gap_bytes = 0;
    p->last_off = h->head_end_off;
    p->last_ns = h->head_end_ns;
    p->decoding = p->decode_lost = false;
    p->chunk_size = 0;
    p->chunk_digits = 0;
    p->line_bytes = 0;

    p->cb.on_head(p->ud, h);

    if (!has_body) {
        end_message(p, TT_HTTP_END_COMPLETE, h->head_end_off, h->head_end_ns);
        if (leaves_http) fail(p, TT_HTTP_ERR_UNSUPPORTED, p->msg, h->head_end_off, h->head_end_ns);
        return;
    }
    if (h->coding == TT_CODING_GZIP || h->coding == TT_CODING_DEFLATE) {
        if (!p->decoder) p->decoder = tt_decoder_new();
        if (!p->decoder || tt_decoder_begin(p->decoder, h->coding) < 0) {
            fail(p, TT_HTTP_ERR_DECODE, "cannot set up the body decoder", h->head_end_off, h->head_end_ns);
            return;
        }
        p->decoding = true;
    }
    if (h->chunked) {
        p->state = ST_CHUNK_SIZE;
    } else if (h->content_length > 0) {
        p->state = ST_BODY_LENGTH;
        p->remaining = (uint64_t)h->content_length;
    } else {
        p->state = ST_BODY_CLOSE;
    }
}

static bool head_append(tt_http1_parser *p, const uint8_t *d, size_t n)
{
    if (p->head_len + n > p->head_cap) {
        size_t cap = p->head_cap ? p->head_cap : 1024;
        while (cap < p->head_len + n) cap *= 2;
        if (cap > TT_HTTP1_MAX_HEAD) cap = TT_HTTP1_MAX_HEAD;
        uint8_t *nb = realloc(p->head_buf, cap);
        if (!nb) return false;
        p->head_buf = nb;
        p->head_cap = cap;
    }
    memcpy(p->head_buf + p->head_len, d, n);
    p->head_len += n;
    return true;
}

static size_t step_idle(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t i = 0;
    while (i < n && (d[i] == '\r' || d[i] == '\n')) i++;
    if (i < n) {
        memset(&p->head, 0, sizeof p->head);
        p->head.first_off = off + i;
        p->head.first_ns = ns;
        p->head_len = 0;
        p->line_start = 0;
        p->start_checked = false;
        p->head_from_resync = false;
        p->state = ST_HEAD;
    }
    return i;
}

/* The resync line just ended (its LF not stored): when it holds a start
 * line, begin a head there and return true. */
static bool resync_found_start(tt_http1_parser *p)
{
    struct resync_line *rs = &p->rs;
    size_t len = rs->len;
    if (len && rs->buf[len - 1] == '\r') len--;
    long at = tt_http1_start_line_in(p->role, (const char *)rs->buf, len, rs->line_start);
    if (at < 0) return false;
    memset(&p->head, 0, sizeof p->head);
    p->head.first_off = rs->off + (uint64_t)at;
    p->head.first_ns = rs->ns;
    if (at > 0 && rs->before_sp[0].valid && rs->before_sp[0].pos == (size_t)at) p->head.first_ns = rs->before_sp[0].ns;
    p->head_len = 0;
    static const uint8_t lf = '\n';
    if (!head_append(p, rs->buf + at, rs->len - (size_t)at) || !head_append(p, &lf, 1)) return false;
    p->line_start = p->head_len;
    p->start_checked = true;
    p->head_from_resync = true;
    p->state = ST_HEAD;
    return true;
}

/* After lost bytes: examine the stream line by line (up to
 * TT_HTTP1_RESYNC_LINE_MAX bytes each) until one holds a start line. */
static size_t step_resync(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    struct resync_line *rs = &p->rs;
    if (!rs->buf && !(rs->buf = malloc(TT_HTTP1_RESYNC_LINE_MAX))) return n;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = d[i];
        if (rs->len == 0 && !rs->overlong) {
            rs->off = off + i;
            rs->ns = ns;
        }
        if (c == '\n') {
            if (!rs->overlong && resync_found_start(p)) return i + 1;
            resync_line_reset(p, true);
            continue;
        }
        if (rs->overlong) continue;
        if (rs->len == TT_HTTP1_RESYNC_LINE_MAX) {
            rs->overlong = true;
            continue;
        }
        bool after_capital = rs->len && tt_http1_is_capital(rs->buf[rs->len - 1]);
        if (tt_http1_is_capital(c) && !after_capital) {
            rs->caps_pos = rs->len;
            rs->caps_ns = ns;
        }
        if (c == ' ') {
            rs->before_sp[0] = rs->before_sp[1];
            rs->before_sp[1].valid = after_capital;
            rs->before_sp[1].pos = rs->caps_pos;
            rs->before_sp[1].ns = rs->caps_ns;
        }
        rs->buf[rs->len++] = c;
    }
    return n;
}

static size_t step_head(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t pos = 0;
    while (pos < n) {
        const uint8_t *lf = memchr(d + pos, '\n', n - pos);
        size_t seg = lf ? (size_t)(lf - (d + pos)) + 1 : n - pos;
        size_t room = TT_HTTP1_MAX_HEAD - p->head_len;
        bool over = seg > room;
        size_t take = over ? room : seg;
        if (take && !head_append(p, d + pos, take)) {
            fail(p, TT_HTTP_ERR_TOO_LARGE, "out of memory for the head", p->head.first_off, ns);
            return pos;
        }
        pos += take;
        if (!p->start_checked && p->head_len && check_start(p) < 0) return pos;
        if (over) {
            fail(p, TT_HTTP_ERR_TOO_LARGE, "head larger than 64 KiB", p->head.first_off, ns);
            return pos;
        }
        if (!lf) break;
        size_t line_len = p->head_len - p->line_start;
        bool blank = line_len == 1 || (line_len == 2 && p->head_buf[p->line_start] == '\r');
        p->line_start = p->head_len;
        if (blank) {
            p->head.head_end_off = off + pos;
            p->head.head_end_ns = ns;
            complete_head(p);
            return pos;
        }
    }
    return pos;
}

/* ---- bodies ---- */

static size_t step_body_length(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t take = p->remaining < n ? (size_t)p->remaining : n;
    deliver(p, d, take, off, ns);
    if (p->state == ST_DEAD) return take;
    p->remaining -= take;
    took(p, take, off + take, ns);
    if (p->remaining == 0) finish_message(p, off + take, ns);
    return take;
}

static size_t step_body_close(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    deliver(p, d, n, off, ns);
    if (p->state != ST_DEAD) took(p, n, off + n, ns);
    return n;
}

static void chunk_size_line_done(tt_http1_parser *p)
{
    if (p->chunk_size == 0) {
        p->state = ST_TRAILER_START;
    } else {
        p->state = ST_CHUNK_DATA;
        p->remaining = p->chunk_size;
    }
    p->chunk_size = 0;
    p->chunk_digits = 0;
    p->line_bytes = 0;
}

/* One byte after the chunk-size digits (or blanks): where the line goes. */
static void chunk_size_delimiter(tt_http1_parser *p, uint8_t c, uint64_t off, uint64_t ns)
{
    if (c == ';') p->state = ST_CHUNK_EXT;
    else if (c == '\r') p->state = ST_CHUNK_SIZE_LF;
    else if (c == '\n') chunk_size_line_done(p);
    else if (c == ' ' || c == '\t') p->state = ST_CHUNK_SIZE_WS;
    else fail(p, TT_HTTP_ERR_MALFORMED, "malformed chunk size line", off, ns);
}

static size_t step_chunk_size(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t i = 0;
    for (; i < n; i++) {
        int v = hex_value(d[i]);
        if (v < 0) break;
        const char *why = NULL;
        if (p->chunk_size > (CHUNK_SIZE_LIMIT - (uint64_t)v) / 16) why = "chunk size too large";
        else if (++p->line_bytes > CHUNK_LINE_LIMIT) why = "chunk size line too long";
        if (why) {
            took(p, i, off + i, ns);
            fail(p, p->line_bytes > CHUNK_LINE_LIMIT ? TT_HTTP_ERR_TOO_LARGE : TT_HTTP_ERR_MALFORMED, why, off + i, ns);
            return i;
        }
        p->chunk_size = p->chunk_size * 16 + (uint64_t)v;
        p->chunk_digits++;
    }
    if (i == n) {
        took(p, i, off + i, ns);
        return i;
    }
    if (p->chunk_digits == 0) {
        fail(p, TT_HTTP_ERR_MALFORMED, "malformed chunk size", off + i, ns);
        return i;
    }
    took(p, i, off + i, ns);
    chunk_size_delimiter(p, d[i], off + i, ns);
    if (p->state == ST_DEAD) return i;
    if (over_line_limit(p, 1, CHUNK_LINE_LIMIT, off + i, ns, "chunk size line too long")) return i;
    took(p, 1, off + i + 1, ns);
    if (p->state == ST_CHUNK_SIZE_LF && i + 1 < n && d[i + 1] == '\n') {
        /* the CRLF's LF is here too: what step_one_byte would do with it */
        took(p, 1, off + i + 2, ns);
        chunk_size_line_done(p);
        return i + 2;
    }
    return i + 1;
}

/* A whole chunk in the bytes at hand, of the plain shape: 1 to 15 hex
 * digits, CRLF, its data (not the last chunk's, and not to be decoded),
 * CRLF. Taken at once, leaving what step_chunk_size, step_chunk_data and
 * step_chunk_data_end would leave one step after another; returns the
 * bytes taken, or 0 (nothing done) when the chunk is not all here or not
 * of that shape, for those steps to read. */
static size_t step_chunk_whole(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    if (p->chunk_digits || p->chunk_size || p->line_bytes || p->decoding) return 0;
    uint64_t size = 0;
    size_t i = 0;
    int v;
    for (; i < n && i < 16 && (v = hex_value(d[i])) >= 0; i++) size = size * 16 + (uint64_t)v;
    if (i == 0 || i == 16 || size == 0 || n - i < 2 || d[i] != '\r' || d[i + 1] != '\n') return 0;
    size_t head = i + 2;
    if (size > n - head || n - head - size < 2 || d[head + size] != '\r' || d[head + size + 1] != '\n') return 0;
    took(p, head, off + head, ns);
    p->state = ST_CHUNK_DATA;
    p->remaining = size;
    deliver(p, d + head, (size_t)size, off + head, ns);
    if (p->state == ST_DEAD) return head + (size_t)size;
    p->remaining = 0;
    took(p, (size_t)size + 2, off + head + size + 2, ns);
    p->state = ST_CHUNK_SIZE;
    return head + (size_t)size + 2;
}

static size_t step_chunk_size_ws(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    chunk_size_delimiter(p, d[0], off, ns);
    if (p->state == ST_DEAD) return 0;
    if (over_line_limit(p, 1, CHUNK_LINE_LIMIT, off, ns, "chunk size line too long")) return 0;
    took(p, 1, off + 1, ns);
    return 1;
}

static size_t step_chunk_ext(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    const uint8_t *lf = memchr(d, '\n', n);
    size_t take = lf ? (size_t)(lf - d) + 1 : n;
    if (over_line_limit(p, take, CHUNK_LINE_LIMIT, off, ns, "chunk extensions too long")) return 0;
    took(p, take, off + take, ns);
    if (lf) chunk_size_line_done(p);
    return take;
}

static size_t step_chunk_data(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t take = p->remaining < n ? (size_t)p->remaining : n;
    deliver(p, d, take, off, ns);
    if (p->state == ST_DEAD) return take;
    p->remaining -= take;
    took(p, take, off + take, ns);
    if (p->remaining == 0) p->state = ST_CHUNK_DATA_END;
    return take;
}

/* States that read one byte: the CR/LF after a size line or chunk data, trailers. */
static size_t step_one_byte(tt_http1_parser *p, uint8_t c, uint64_t off, uint64_t ns)
{
    switch (p->state) {
    case ST_CHUNK_SIZE_LF:
        if (c != '\n') break;
        took(p, 1, off + 1, ns);
        chunk_size_line_done(p);
        return 1;
    case ST_CHUNK_DATA_END:
        if (c != '\r' && c != '\n') break;
        took(p, 1, off + 1, ns);
        p->state = c == '\r' ? ST_CHUNK_DATA_LF : ST_CHUNK_SIZE;
        return 1;
    case ST_CHUNK_DATA_LF:
        if (c != '\n') break;
        took(p, 1, off + 1, ns);
        p->state = ST_CHUNK_SIZE;
        return 1;
    case ST_TRAILER_START:
    case ST_TRAILER_END_LF:
        if (c == '\n') {
            took(p, 1, off + 1, ns);
            finish_message(p, off + 1, ns);
            return 1;
        }
        if (p->state == ST_TRAILER_END_LF) {
            fail(p, TT_HTTP_ERR_MALFORMED, "malformed end of trailers", off, ns);
            return 0;
        }
        if (c == '\r') {
            took(p, 1, off + 1, ns);
            p->state = ST_TRAILER_END_LF;
            return 1;
        }
        p->state = ST_TRAILER_LINE; /* the byte is read there */
        return 0;
    default:
        break;
    }
    fail(p, TT_HTTP_ERR_MALFORMED,
         p->state == ST_CHUNK_SIZE_LF ? "malformed chunk size line" : "missing CRLF after chunk data", off, ns);
    return 0;
}

/* The CRLF after chunk data: both bytes at once when both are here, as
 * step_one_byte would take them one by one. */
static size_t step_chunk_data_end(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    if (n >= 2 && d[0] == '\r' && d[1] == '\n') {
        took(p, 2, off + 2, ns);
        p->state = ST_CHUNK_SIZE;
        return 2;
    }
    return step_one_byte(p, d[0], off, ns);
}

static size_t step_trailer_line(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    const uint8_t *lf = memchr(d, '\n', n);
    size_t take = lf ? (size_t)(lf - d) + 1 : n;
    if (over_line_limit(p, take, TRAILER_LIMIT, off, ns, "trailers larger than 64 KiB")) return 0;
    took(p, take, off + take, ns);
    if (lf) p->state = ST_TRAILER_START;
    return take;
}

int tt_http1_feed(tt_http1_parser *p, const uint8_t *data, size_t len, uint64_t mono_ns)
{
    uint64_t base = p->off;
    p->off += len;
    if (p->state == ST_DEAD) return -1;
    size_t pos = 0;
    while (pos < len && p->state != ST_DEAD && p->state != ST_CLOSED) {
        const uint8_t *d = data + pos;
        size_t n = len - pos;
        uint64_t off = base + pos;
        switch (p->state) {
        case ST_IDLE: pos += step_idle(p, d, n, off, mono_ns); break;
        case ST_HEAD: pos += step_head(p, d, n, off, mono_ns); break;
        case ST_BODY_LENGTH: pos += step_body_length(p, d, n, off, mono_ns); break;
        case ST_BODY_CLOSE: pos += step_body_close(p, d, n, off, mono_ns); break;
        case ST_CHUNK_SIZE: {
            size_t whole = step_chunk_whole(p, d, n, off, mono_ns);
            pos += whole ? whole : step_chunk_size(p, d, n, off, mono_ns);
            break;
        }
        case ST_CHUNK_SIZE_WS: pos += step_chunk_size_ws(p, d, n, off, mono_ns); break;
        case ST_CHUNK_EXT: pos += step_chunk_ext(p, d, n, off, mono_ns); break;
        case ST_CHUNK_DATA: pos += step_chunk_data(p, d, n, off, mono_ns); break;
        case ST_CHUNK_DATA_END: pos += step_chunk_data_end(p, d, n, off, mono_ns); break;
        case ST_TRAILER_LINE: pos += step_trailer_line(p, d, n, off, mono_ns); break;
        case ST_RESYNC: pos += step_resync(p, d, n, off, mono_ns); break;
        default: pos += step_one_byte(p, d[0], off, mono_ns); break;
        }
    }
    return p->state == ST_DEAD ? -1 : 0;
}

void tt_http1_gap(tt_http1_parser *p, uint64_t missing, uint64_t mono_ns)
{
    if (missing == 0) return;
    uint64_t at = p->off;
    p->off += missing;
    switch (p->state) {
    case ST_DEAD:
    case ST_CLOSED:
        return;
    case ST_RESYNC:
        resync_line_reset(p, true); /* the byte after the loss may begin a message */
        return;
    case ST_IDLE:
        lose_sync(p, "bytes lost between messages", at, mono_ns);
        return;
    case ST_HEAD:
        lose_sync(p, "bytes lost inside a message head", at, mono_ns);
        return;
    case ST_BODY_LENGTH: {
        uint64_t inside = missing < p->remaining ? missing : p->remaining;
        p->remaining -= inside;
        p->gap_bytes += inside;
        if (p->decoding) p->decode_lost = true;
        else p->body_off += inside;
        p->last_off = at + inside;
        p->last_ns = mono_ns;
        if (p->remaining == 0) end_message(p, TT_HTTP_END_GAP, at + inside, mono_ns);
        if (missing > inside) lose_sync(p, "bytes lost past the end of a message", at + inside, mono_ns);
        return;
    }
    case ST_BODY_CLOSE:
        /* nothing can follow a close-delimited body on this connection */
        p->state = ST_DEAD;
        p->gap_bytes += missing;
        p->cb.on_error(p->ud, TT_HTTP_ERR_GAP, "bytes lost inside a close-delimited body", at);
        end_message(p, TT_HTTP_END_GAP, at, mono_ns);
        return;
    default:
        p->gap_bytes += missing;
        lose_sync(p, "bytes lost inside a chunked body", at, mono_ns);
        return;
    }
}

void tt_http1_begin_midstream(tt_http1_parser *p)
{
    if (p->state != ST_IDLE || p->in_message) return;
    p->state = ST_RESYNC;
    resync_line_reset(p, true);
}

void tt_http1_eof(tt_http1_parser *p, bool clean, uint64_t mono_ns)
{
    if (p->state == ST_DEAD || p->state == ST_CLOSED) return;
    enum parse_state was = p->state;
    p->state = ST_CLOSED;
    if (!p->in_message) return;
    tt_http_end how = TT_HTTP_END_TRUNCATED;
    if (was == ST_BODY_CLOSE && clean && (!p->decoding || tt_decoder_at_end(p->decoder)))
        how = TT_HTTP_END_EOF;
    end_message(p, how, p->last_off, p->last_ns);
}
