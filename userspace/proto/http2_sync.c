/* http2_sync.c - finding HTTP/2 frame boundaries in bytes that start
 * somewhere inside a connection (tt_http2_find_sync, http2.h). */
#include <string.h>

#include "proto/http2.h"

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Flags each frame type defines (RFC 9113 6); any other bit rejects. */
static const uint8_t type_flags[10] = {
    [TT_H2_DATA] = TT_H2_FLAG_END_STREAM | TT_H2_FLAG_PADDED,
    [TT_H2_HEADERS] = TT_H2_FLAG_END_STREAM | TT_H2_FLAG_END_HEADERS | TT_H2_FLAG_PADDED | TT_H2_FLAG_PRIORITY,
    [TT_H2_PRIORITY] = 0,
    [TT_H2_RST_STREAM] = 0,
    [TT_H2_SETTINGS] = TT_H2_FLAG_ACK,
    [TT_H2_PUSH_PROMISE] = TT_H2_FLAG_END_HEADERS | TT_H2_FLAG_PADDED,
    [TT_H2_PING] = TT_H2_FLAG_ACK,
    [TT_H2_GOAWAY] = 0,
    [TT_H2_WINDOW_UPDATE] = 0,
    [TT_H2_CONTINUATION] = TT_H2_FLAG_END_HEADERS,
};

enum verdict { V_BAD, V_OK, V_SHORT, V_OK_AT_END };

/* One frame header at p (9 bytes) and what of its payload is at hand
 * (avail bytes after the header): plausible for direction dir?
 * *block_sid: the stream whose header block is open (0: none), updated. */
static enum verdict frame_ok(const uint8_t *p, size_t avail, tt_direction dir, uint32_t *block_sid)
{
    uint32_t len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    uint8_t type = p[3], flags = p[4];
    uint32_t sid = rd32(p + 5);
    if (len > TT_HTTP2_DEFAULT_MAX_FRAME || type > TT_H2_CONTINUATION || (flags & ~type_flags[type]) ||
        (sid >> 31))
        return V_BAD;
    const uint8_t *pl = p + 9;
    bool have = avail >= len;
    bool client = dir == TT_DIR_C2S;
    /* a header block in progress admits only its CONTINUATIONs */
    if (*block_sid ? (type != TT_H2_CONTINUATION || sid != *block_sid) : type == TT_H2_CONTINUATION) return V_BAD;
    size_t pre = 0;
    switch (type) {
    case TT_H2_DATA:
    case TT_H2_HEADERS:
    case TT_H2_CONTINUATION:
        /* a client sends on its own (odd) streams only */
        if (!sid || (client && !(sid & 1))) return V_BAD;
        pre = (flags & TT_H2_FLAG_PADDED) ? 1 : 0;
        if (type == TT_H2_HEADERS && (flags & TT_H2_FLAG_PRIORITY)) pre += 5;
        if (type == TT_H2_CONTINUATION) pre = 0;
        if (pre > len) return V_BAD;
        if ((flags & TT_H2_FLAG_PADDED) && type != TT_H2_CONTINUATION && avail >= 1 && pre + pl[0] > len)
            return V_BAD;
        if (type != TT_H2_DATA) *block_sid = (flags & TT_H2_FLAG_END_HEADERS) ? 0 : sid;
        break;
    case TT_H2_PUSH_PROMISE:
        if (client || !sid || !(sid & 1)) return V_BAD;
        pre = ((flags & TT_H2_FLAG_PADDED) ? 1 : 0) + 4;
        if (pre > len) return V_BAD;
        if (avail >= pre) {
            uint32_t promised = rd32(pl + pre - 4);
            if (promised >> 31 || !promised || (promised & 1)) return V_BAD;
        }
        *block_sid = (flags & TT_H2_FLAG_END_HEADERS) ? 0 : sid;
        break;
    case TT_H2_PRIORITY:
        if (!sid || len != 5) return V_BAD;
        break;
    case TT_H2_RST_STREAM:
        if (!sid || len != 4) return V_BAD;
        break;
    case TT_H2_SETTINGS:
        if (sid || ((flags & TT_H2_FLAG_ACK) ? len != 0 : len % 6 != 0)) return V_BAD;
        if (have)
            for (uint32_t i = 0; i < len; i += 6) {
                uint16_t id = (uint16_t)(pl[i] << 8 | pl[i + 1]);
                uint32_t v = rd32(pl + i + 2);
                if ((id == TT_H2_SETTINGS_ENABLE_PUSH && v > 1) ||
                    (id == TT_H2_SETTINGS_INITIAL_WINDOW_SIZE && v > 0x7fffffffu) ||
                    (id == TT_H2_SETTINGS_MAX_FRAME_SIZE && (v < 16384 || v > 0xffffff)))
                    return V_BAD;
            }
        break;
    case TT_H2_PING:
        if (sid || len != 8) return V_BAD;
        break;
    case TT_H2_GOAWAY:
        if (sid || len < 8) return V_BAD;
        if (avail >= 4 && (pl[0] & 0x80)) return V_BAD;
        break;
    case TT_H2_WINDOW_UPDATE:
        if (len != 4) return V_BAD;
        if (have && (rd32(pl) == 0 || (pl[0] & 0x80))) return V_BAD;
        break;
    default:
        break;
    }
    return have ? V_OK : V_SHORT;
}

/* The frames chained from p: V_OK for TT_HTTP2_SYNC_FRAMES frames,
 * V_OK_AT_END for fewer ending exactly at the end (at least one when
 * `at_start`, two otherwise), V_BAD when a frame is implausible, V_SHORT
 * when more bytes are needed to tell. */
static enum verdict chain(const uint8_t *p, size_t n, tt_direction dir, bool at_start)
{
    size_t at = 0;
    unsigned frames = 0;
    uint32_t block_sid = 0;
    while (frames < TT_HTTP2_SYNC_FRAMES) {
        if (n - at < 9) {
            if (at == n && frames >= (at_start ? 1u : 2u)) return V_OK_AT_END;
            return V_SHORT;
        }
        enum verdict v = frame_ok(p + at, n - at - 9, dir, &block_sid);
        if (v != V_OK) return v;
        at += 9 + ((size_t)p[at] << 16 | (size_t)p[at + 1] << 8 | p[at + 2]);
        frames++;
    }
    return V_OK;
}

long tt_http2_find_sync(const uint8_t *p, size_t n, tt_direction dir, size_t *from)
{
    dir = (tt_direction)(dir & 1);
    bool waiting = false; /* an earlier candidate needs more bytes */
    for (size_t i = *from; i < n; i++) {
        enum verdict v = chain(p + i, n - i, dir, i == 0);
        /* a chain ending at the end is weak: taken only when no earlier
         * candidate may still prove to be the boundary */
        if (v == V_OK || (v == V_OK_AT_END && !waiting)) return (long)i;
        if (v != V_BAD) waiting = true;
        if (!waiting) *from = i + 1; /* rejected for good: more bytes change nothing */
    }
    return -1;
}

/* The role the first field of a header block shows: its first
 * representation (after dynamic-table size updates) is a pseudo-header
 * (RFC 9113 8.3) from the static table: :authority..:scheme (1-7) are a
 * request's, :status (8-14) a response's. */
static int block_role(const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && (b[i] & 0xe0) == 0x20) { /* size update: skip its integer */
        bool more = (b[i] & 0x1f) == 0x1f;
        i++;
        while (more && i < n) more = (b[i++] & 0x80) != 0;
    }
    if (i >= n) return 0;
    unsigned idx;
    if (b[i] & 0x80) idx = b[i] & 0x7f;                       /* indexed */
    else if ((b[i] & 0xc0) == 0x40) idx = b[i] & 0x3f;        /* literal, incremental */
    else idx = b[i] & 0x0f;                                   /* literal, without / never indexed */
    if (idx >= 1 && idx <= 7) return 1;
    if (idx >= 8 && idx <= 14) return -1;
    return 0;
}

int tt_http2_guess_role(const uint8_t *p, size_t n)
{
    int votes = 0;
    size_t at = 0;
    while (at + 9 <= n) {
        size_t len = (size_t)p[at] << 16 | (size_t)p[at + 1] << 8 | p[at + 2];
        uint8_t type = p[at + 3], flags = p[at + 4];
        if (at + 9 + len > n) break;
        const uint8_t *pl = p + at + 9;
        size_t pre = (flags & TT_H2_FLAG_PADDED) ? 1 : 0;
        if (type == TT_H2_HEADERS && (flags & TT_H2_FLAG_PRIORITY)) pre += 5;
        if ((type == TT_H2_HEADERS || type == TT_H2_DATA) && pre < len) {
            if (type == TT_H2_HEADERS) votes += block_role(pl + pre, len - pre);
            else if (len - pre >= 5 && (!memcmp(pl + pre, "data:", 5) || !memcmp(pl + pre, "event", 5)))
                votes--; /* an event stream's body: the server's */
        }
        if (type == TT_H2_PUSH_PROMISE) votes--;
        at += 9 + len;
    }
    return votes > 0 ? 1 : votes < 0 ? -1 : 0;
}
