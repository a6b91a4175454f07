/* http1_head_states.c - the HTTP/1.x parser before a body: the bytes
 * between messages, a head buffered to its blank line and reported, the
 * search for the next start line after lost bytes, and the queue of
 * responses the request stream announced (a HEAD's answer has no body, a
 * CONNECT's leaves HTTP). The parser's state is http1_internal.h's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http1_internal.h"

void http1_resync_line_reset(tt_http1_parser *p, bool line_start)
{
    struct resync_line *rs = &p->rs;
    rs->len = 0;
    rs->overlong = false;
    rs->line_start = line_start;
    rs->before_sp[0].valid = rs->before_sp[1].valid = false;
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
        if (b[1] == 0x03) http1_fail(p, TT_HTTP_ERR_UNSUPPORTED, "TLS", at, ns);
        else http1_fail(p, TT_HTTP_ERR_MALFORMED, "not HTTP/1.x: binary data", at, ns);
        return -1;
    }
    if (p->role == TT_HTTP_RESPONSE) {
        size_t cmp = n < 5 ? n : 5;
        if (memcmp(b, "HTTP/", cmp) != 0) {
            http1_fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x response", at, ns);
            return -1;
        }
        p->start_checked = n >= 5;
        return 0;
    }
    static const char preface[] = "PRI * HTTP/2.0";
    size_t plen = sizeof preface - 1;
    bool maybe_preface = memcmp(b, preface, n < plen ? n : plen) == 0;
    if (maybe_preface && n >= plen) {
        http1_fail(p, TT_HTTP_ERR_UNSUPPORTED, "HTTP/2", at, ns);
        return -1;
    }
    size_t lim = n < METHOD_LIMIT + 1 ? n : METHOD_LIMIT + 1, i = 0;
    while (i < lim && tt_http_is_tchar(b[i])) i++;
    if (i < lim) {
        if (b[i] != ' ' || i == 0) {
            http1_fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x request", at, ns);
            return -1;
        }
        p->start_checked = !maybe_preface;
        return 0;
    }
    if (lim == METHOD_LIMIT + 1) {
        http1_fail(p, TT_HTTP_ERR_MALFORMED, "not an HTTP/1.x request: method too long", at, ns);
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
        http1_resync_line_reset(p, true);
        return;
    }
    p->head_from_resync = false;
    if (e != TT_HTTP_ERR_NONE) {
        http1_fail(p, e, msg, h->first_off, h->first_ns);
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
        http1_end_message(p, TT_HTTP_END_COMPLETE, h->head_end_off, h->head_end_ns);
        if (leaves_http) http1_fail(p, TT_HTTP_ERR_UNSUPPORTED, p->msg, h->head_end_off, h->head_end_ns);
        return;
    }
    if (h->coding == TT_CODING_GZIP || h->coding == TT_CODING_DEFLATE) {
        if (!p->decoder) p->decoder = tt_decoder_new();
        if (!p->decoder || tt_decoder_begin(p->decoder, h->coding) < 0) {
            http1_fail(p, TT_HTTP_ERR_DECODE, "cannot set up the body decoder", h->head_end_off, h->head_end_ns);
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

size_t http1_step_idle(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
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
size_t http1_step_resync(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
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
            http1_resync_line_reset(p, true);
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

size_t http1_step_head(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns)
{
    size_t pos = 0;
    while (pos < n) {
        const uint8_t *lf = memchr(d + pos, '\n', n - pos);
        size_t seg = lf ? (size_t)(lf - (d + pos)) + 1 : n - pos;
        size_t room = TT_HTTP1_MAX_HEAD - p->head_len;
        bool over = seg > room;
        size_t take = over ? room : seg;
        if (take && !head_append(p, d + pos, take)) {
            http1_fail(p, TT_HTTP_ERR_TOO_LARGE, "out of memory for the head", p->head.first_off, ns);
            return pos;
        }
        pos += take;
        if (!p->start_checked && p->head_len && check_start(p) < 0) return pos;
        if (over) {
            http1_fail(p, TT_HTTP_ERR_TOO_LARGE, "head larger than 64 KiB", p->head.first_off, ns);
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
