/* grpc.c - gRPC Length-Prefixed-Message framing; see grpc.h for the contract. */
#include "proto/grpc.h"

#include <stdlib.h>
#include <string.h>

enum grpc_state {
    ST_PREFIX = 0, /* collecting the 5 prefix bytes (possibly none yet) */
    ST_MESSAGE,    /* collecting msg_len message bytes */
    ST_LOST,       /* a bad flag byte: the rest of the body is ignored */
};

struct tt_grpc_parser {
    tt_frame_callbacks cb;
    void *ud;
    uint32_t feeds;      /* feed() calls so far: the next chunk ordinal */
    uint32_t last_chunk; /* ordinal of the feed with the last body byte */
    uint64_t end_off;    /* body offset just past the last byte fed */
    bool finished;       /* finish() ran and no feed since: ignored is kept for the getter */
    uint64_t ignored;    /* bytes ignored since a bad flag byte */

    enum grpc_state state;
    uint8_t prefix[TT_GRPC_PREFIX_LEN];
    size_t prefix_len;

    /* the message being framed: its prefix's first byte, length, progress */
    uint64_t first_off, first_ns;
    uint32_t first_chunk;
    uint32_t msg_len;
    uint32_t msg_got;    /* message bytes seen, kept or not */
    bool compressed;
    bool lost_bytes;     /* a kept byte could not be stored (out of memory) */

    uint8_t *buf;        /* kept bytes of a message spread over feeds */
    size_t buf_len, buf_cap;
};

tt_grpc_parser *tt_grpc_new(const tt_frame_callbacks *cb, void *ud)
{
    tt_grpc_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (cb) p->cb = *cb;
    p->ud = ud;
    return p;
}

void tt_grpc_free(tt_grpc_parser *p)
{
    if (!p) return;
    free(p->buf);
    free(p);
}

uint64_t tt_grpc_ignored_bytes(const tt_grpc_parser *p)
{
    return p ? p->ignored : 0;
}

static uint32_t kept_limit(uint32_t msg_len)
{
    return msg_len < TT_SSE_MAX_EVENT ? msg_len : TT_SSE_MAX_EVENT;
}

/* Keep up to the bound of the message's bytes; bytes beyond it are only
 * counted by the caller. */
static void keep(tt_grpc_parser *p, const uint8_t *src, size_t n)
{
    size_t limit = kept_limit(p->msg_len);
    size_t take = p->buf_len < limit ? limit - p->buf_len : 0;
    if (take > n) take = n;
    if (take == 0) return;
    if (p->buf_len + take > p->buf_cap) {
        size_t ncap = p->buf_cap ? p->buf_cap : 256;
        while (ncap < p->buf_len + take) ncap = ncap > limit / 2 ? limit : ncap * 2;
        if (ncap < p->buf_len + take) ncap = p->buf_len + take;
        uint8_t *nb = realloc(p->buf, ncap);
        if (!nb) {
            p->lost_bytes = true;
            return;
        }
        p->buf = nb;
        p->buf_cap = ncap;
    }
    memcpy(p->buf + p->buf_len, src, take);
    p->buf_len += take;
}

static void emit(tt_grpc_parser *p, const uint8_t *data, size_t len, uint32_t flags, bool has_message,
                 uint64_t dispatch_off, uint64_t dispatch_ns, uint32_t last_chunk)
{
    tt_event_frame f = {
        .type = NULL,
        .data = len ? (const char *)data : "",
        .data_len = len,
        .retry_ms = -1,
        .first_off = p->first_off,
        .dispatch_off = dispatch_off,
        .first_ns = p->first_ns,
        .dispatch_ns = dispatch_ns,
        .first_chunk = p->first_chunk,
        .last_chunk = last_chunk,
        .flags = flags | (p->compressed ? TT_FRAME_COMPRESSED : 0u) | (p->lost_bytes ? TT_FRAME_TRUNCATED : 0u),
        .lines = has_message ? 1 : 0,
        .data_lines = has_message ? 1 : 0,
    };
    if (p->cb.on_event) p->cb.on_event(p->ud, &f);
}

/* Back to waiting for a prefix, in sync. */
static void next_prefix(tt_grpc_parser *p)
{
    p->state = ST_PREFIX;
    p->prefix_len = 0;
    p->msg_len = p->msg_got = 0;
    p->buf_len = 0;
    p->compressed = p->lost_bytes = false;
}

void tt_grpc_feed(tt_grpc_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    if (!p) return;
    if (p->finished) {
        p->finished = false;
        p->ignored = 0;
    }
    uint32_t chunk = p->feeds;
    if (p->feeds < UINT32_MAX) p->feeds++;
    if (len == 0 || !data) return;
    p->last_chunk = chunk;
    p->end_off = body_off + len;

    size_t pos = 0;
    while (pos < len) {
        if (p->state == ST_LOST) {
            p->ignored += len - pos;
            return;
        }
        if (p->state == ST_PREFIX) {
            if (p->prefix_len == 0) {
                p->first_off = body_off + pos;
                p->first_ns = mono_ns;
                p->first_chunk = chunk;
                if (data[pos] > 1) {
                    /* Not a Compressed-Flag: no length can be trusted from here on. */
                    p->compressed = false;
                    emit(p, NULL, 0, TT_FRAME_BAD_PREFIX, false, body_off + pos + 1, mono_ns, chunk);
                    p->state = ST_LOST;
                    continue;
                }
            }
            size_t take = TT_GRPC_PREFIX_LEN - p->prefix_len;
            if (take > len - pos) take = len - pos;
            memcpy(p->prefix + p->prefix_len, data + pos, take);
            p->prefix_len += take;
            pos += take;
            if (p->prefix_len < TT_GRPC_PREFIX_LEN) return;
            p->compressed = p->prefix[0] == 1;
            p->msg_len = (uint32_t)p->prefix[1] << 24 | (uint32_t)p->prefix[2] << 16 |
                         (uint32_t)p->prefix[3] << 8 | (uint32_t)p->prefix[4];
            p->msg_got = 0;
            p->buf_len = 0;
            p->lost_bytes = false;
            if (p->msg_len == 0) {
                emit(p, NULL, 0, 0, true, body_off + pos, mono_ns, chunk);
                next_prefix(p);
            } else {
                p->state = ST_MESSAGE;
            }
            continue;
        }
        /* ST_MESSAGE */
        size_t need = p->msg_len - p->msg_got;
        size_t take = len - pos < need ? len - pos : need;
        if (p->msg_got == 0 && take == need && p->msg_len <= TT_SSE_MAX_EVENT) {
            /* The whole message is in this feed: hand it over in place. */
            emit(p, data + pos, take, 0, true, body_off + pos + take, mono_ns, chunk);
            pos += take;
            next_prefix(p);
            continue;
        }
        keep(p, data + pos, take);
        p->msg_got += (uint32_t)take;
        pos += take;
        if (p->msg_got == p->msg_len) {
            uint32_t cut = p->msg_len > TT_SSE_MAX_EVENT ? TT_FRAME_TRUNCATED : 0u;
            emit(p, p->buf, p->buf_len, cut, true, body_off + pos, mono_ns, chunk);
            next_prefix(p);
        }
    }
}

void tt_grpc_finish(tt_grpc_parser *p, uint64_t mono_ns)
{
    if (!p) return;
    if (p->state == ST_PREFIX && p->prefix_len > 0) {
        /* The flag byte arrived and was 0 or 1; the length did not (all of it). */
        p->compressed = p->prefix[0] == 1;
        emit(p, NULL, 0, TT_FRAME_UNTERMINATED, false, p->end_off, mono_ns, p->last_chunk);
    } else if (p->state == ST_MESSAGE) {
        uint32_t cut = p->msg_got > TT_SSE_MAX_EVENT ? TT_FRAME_TRUNCATED : 0u;
        emit(p, p->buf, p->buf_len, TT_FRAME_UNTERMINATED | cut, true, p->end_off, mono_ns, p->last_chunk);
    }
    next_prefix(p);
    p->feeds = 0;
    p->last_chunk = 0;
    p->end_off = 0;
    p->finished = true;
}
