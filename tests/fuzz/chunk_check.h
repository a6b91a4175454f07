/* chunk_check.h - a chunk consumer for fuzz harnesses that aborts on any
 * broken promise of the chunk contract (tt_types.h, tcp_reasm.h): offsets
 * contiguous per direction, instants never going back within a direction,
 * every DATA byte readable, each direction ended exactly once (FIN, RST or
 * END) before its connection's RELEASE, nothing after RELEASE, and every
 * connection released once the source finished. Header-only; include in
 * one harness file. */
#ifndef TT_CHUNK_CHECK_H
#define TT_CHUNK_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "core/tt_types.h"

typedef struct chunk_check_conn {
    uint64_t next_offset[2], last_ts[2];
    uint8_t ended[2], seen, released;
} chunk_check_conn;

typedef struct chunk_check {
    chunk_check_conn *conns;
    size_t cap;
    uint64_t byte_sum; /* every delivered byte is read into this */
} chunk_check;

static void chunk_check_fn(void *ctx, const tt_chunk *ch)
{
    chunk_check *cc = ctx;
    uint64_t id = ch->conn->conn_id;
    if (id == 0 || id > (1u << 24)) abort();
    if (id >= cc->cap) {
        size_t cap = cc->cap ? cc->cap : 64;
        while (cap <= id) cap *= 2;
        chunk_check_conn *n = realloc(cc->conns, cap * sizeof *n);
        if (!n) abort();
        memset(n + cc->cap, 0, (cap - cc->cap) * sizeof *n);
        cc->conns = n;
        cc->cap = cap;
    }
    chunk_check_conn *c = &cc->conns[id];
    if (c->released || ch->dir > TT_DIR_S2C) abort();
    c->seen = 1;
    if (ch->kind == TT_CHUNK_RELEASE) {
        if (!c->ended[0] || !c->ended[1] || ch->len != 0) abort();
        c->released = 1;
        return;
    }
    int d = ch->dir;
    if (c->ended[d] || ch->offset != c->next_offset[d] || ch->mono_ns < c->last_ts[d]) abort();
    c->last_ts[d] = ch->mono_ns;
    switch (ch->kind) {
    case TT_CHUNK_DATA:
        if (!ch->len || !ch->data) abort();
        for (size_t i = 0; i < ch->len; i++) cc->byte_sum += ch->data[i];
        c->next_offset[d] += ch->len;
        break;
    case TT_CHUNK_GAP:
        if (!ch->len || ch->data) abort();
        c->next_offset[d] += ch->len;
        break;
    case TT_CHUNK_FIN:
    case TT_CHUNK_RST:
    case TT_CHUNK_END:
        if (ch->len) abort();
        c->ended[d] = 1;
        break;
    default:
        abort();
    }
}

/* After the source finished: every connection seen must be released. Frees cc. */
static void chunk_check_done(chunk_check *cc)
{
    for (size_t i = 0; i < cc->cap; i++)
        if (cc->conns[i].seen && !cc->conns[i].released) abort();
    free(cc->conns);
    memset(cc, 0, sizeof *cc);
}

#endif
