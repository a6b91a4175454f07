/* http1.c - the HTTP/1.x parser (http1.h): its life, how a message ends
 * or fails, body bytes handed on (decoded where the body is coded),
 * Content-Length, close-delimited and chunked bodies with their trailers,
 * and the feed, gap and eof entry points. The states before a body are
 * http1_head_states.c's; the state both read is http1_internal.h's. */
#include "proto/http1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http1_internal.h"

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

void http1_end_message(tt_http1_parser *p, tt_http_end how, uint64_t last_off, uint64_t last_ns)
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
void http1_fail(tt_http1_parser *p, tt_http_error code, const char *msg, uint64_t off, uint64_t ns)
{
    p->state = ST_DEAD;
    p->cb.on_error(p->ud, code, msg, off);
    if (p->in_message) http1_end_message(p, TT_HTTP_END_ERROR, off, ns);
}

/* Bytes were lost where the framing cannot skip them: report it, end a
 * message in progress (GAP), and look for the next start line. Responses
 * expected before the loss are forgotten: which of them were lost is not
 * known here. */
static void lose_sync(tt_http1_parser *p, const char *msg, uint64_t at, uint64_t ns)
{
    p->cb.on_error(p->ud, TT_HTTP_ERR_GAP, msg, at);
    if (p->in_message) http1_end_message(p, TT_HTTP_END_GAP, at, ns);
    p->state = ST_RESYNC;
    p->expect_count = 0;
    http1_resync_line_reset(p, true);
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
    http1_fail(p, TT_HTTP_ERR_TOO_LARGE, why, off + allowed, ns);
    return true;
}

/* A body whose framing says it is whole: check the content coding agrees. */
static void finish_message(tt_http1_parser *p, uint64_t off_after, uint64_t ns)
{
    if (p->decoding && !p->decode_lost && !tt_decoder_at_end(p->decoder)) {
        http1_fail(p, TT_HTTP_ERR_DECODE, "compressed body ends inside its stream", off_after, ns);
        return;
    }
    http1_end_message(p, p->gap_bytes ? TT_HTTP_END_GAP : TT_HTTP_END_COMPLETE, off_after, ns);
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
        http1_fail(p, TT_HTTP_ERR_DECODE, p->msg, off + used, ns);
    }
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
    else http1_fail(p, TT_HTTP_ERR_MALFORMED, "malformed chunk size line", off, ns);
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
            http1_fail(p, p->line_bytes > CHUNK_LINE_LIMIT ? TT_HTTP_ERR_TOO_LARGE : TT_HTTP_ERR_MALFORMED, why, off + i, ns);
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
        http1_fail(p, TT_HTTP_ERR_MALFORMED, "malformed chunk size", off + i, ns);
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
            http1_fail(p, TT_HTTP_ERR_MALFORMED, "malformed end of trailers", off, ns);
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
    http1_fail(p, TT_HTTP_ERR_MALFORMED,
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
        case ST_IDLE: pos += http1_step_idle(p, d, n, off, mono_ns); break;
        case ST_HEAD: pos += http1_step_head(p, d, n, off, mono_ns); break;
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
        case ST_RESYNC: pos += http1_step_resync(p, d, n, off, mono_ns); break;
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
        http1_resync_line_reset(p, true); /* the byte after the loss may begin a message */
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
        if (p->remaining == 0) http1_end_message(p, TT_HTTP_END_GAP, at + inside, mono_ns);
        if (missing > inside) lose_sync(p, "bytes lost past the end of a message", at + inside, mono_ns);
        return;
    }
    case ST_BODY_CLOSE:
        /* nothing can follow a close-delimited body on this connection */
        p->state = ST_DEAD;
        p->gap_bytes += missing;
        p->cb.on_error(p->ud, TT_HTTP_ERR_GAP, "bytes lost inside a close-delimited body", at);
        http1_end_message(p, TT_HTTP_END_GAP, at, mono_ns);
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
    http1_resync_line_reset(p, true);
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
    http1_end_message(p, how, p->last_off, p->last_ns);
}
