/* reasm_recorder.h - what the reassembly tests share (header-only): a
 * recorder of the chunks tt_reasm emits, which checks every chunk against
 * its connection's and direction's running state (offsets follow, instants
 * do not go back, nothing after an end or a release) and keeps a trace to
 * compare whole; 4-tuples and segments built by hand. */
#ifndef TT_TEST_REASM_RECORDER_H
#define TT_TEST_REASM_RECORDER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "stream/tcp_reasm.h"

#define MAX_TRACKED 256

/* Per (conn, dir) expectations every emitted chunk must meet. */
typedef struct dir_track {
    uint64_t next_offset, last_ts;
    bool ended;
} dir_track;

typedef struct recorder {
    tt_strbuf trace;
    dir_track dirs[MAX_TRACKED][2];
    bool released[MAX_TRACKED];
    bool announced[MAX_TRACKED];
    tt_strbuf streams[MAX_TRACKED][2]; /* delivered bytes, '?' for gap bytes */
    uint32_t seq_base[MAX_TRACKED][2];  /* the connection's, at its DATA chunks */
    int releases;
} recorder;

static inline const char *kind_name(tt_chunk_kind k)
{
    static const char *const names[] = {"DATA", "GAP", "FIN", "RST", "END", "RELEASE"};
    return (unsigned)k < 6 ? names[k] : "?";
}

static inline void on_chunk(void *ctx, const tt_chunk *ch)
{
    recorder *rec = ctx;
    uint64_t id = ch->conn->conn_id;
    assert_true(id > 0 && id < MAX_TRACKED);
    assert_false(rec->released[id]);
    if (!rec->announced[id]) {
        char a[64], b[64];
        rec->announced[id] = true;
        tt_sb_printf(&rec->trace, "conn %llu client=%s server=%s%s\n", (unsigned long long)id,
                     tt_endpoint_format(&ch->conn->client, a, sizeof a),
                     tt_endpoint_format(&ch->conn->server, b, sizeof b),
                     ch->conn->orientation_guessed ? " guessed" : "");
    }
    dir_track *t = &rec->dirs[id][ch->dir];
    if (ch->kind == TT_CHUNK_RELEASE) {
        assert_int_equal(ch->dir, TT_DIR_C2S);
        assert_true(rec->dirs[id][0].ended && rec->dirs[id][1].ended); /* each direction ended once */
        rec->released[id] = true;
        rec->releases++;
        tt_sb_printf(&rec->trace, "%llu RELEASE ts=%llu\n", (unsigned long long)id, (unsigned long long)ch->mono_ns);
        return;
    }
    assert_false(t->ended);
    assert_true(ch->mono_ns >= t->last_ts);
    assert_int_equal(ch->offset, t->next_offset);
    t->last_ts = ch->mono_ns;
    tt_sb_printf(&rec->trace, "%llu %s %s off=%llu len=%zu ts=%llu", (unsigned long long)id,
                 ch->dir == TT_DIR_C2S ? "c2s" : "s2c", kind_name(ch->kind), (unsigned long long)ch->offset, ch->len,
                 (unsigned long long)ch->mono_ns);
    if (ch->kind == TT_CHUNK_DATA) {
        assert_non_null(ch->data);
        assert_true(ch->len > 0);
        /* the wire's sequence numbers are the real ones: known before any data */
        assert_true(ch->conn->seq_known[ch->dir]);
        rec->seq_base[id][ch->dir] = ch->conn->seq_base[ch->dir];
        tt_sb_printf(&rec->trace, " \"");
        tt_sb_escaped(&rec->trace, (const char *)ch->data, ch->len);
        tt_sb_printf(&rec->trace, "\"");
        tt_sb_printf(&rec->streams[id][ch->dir], "%.*s", (int)ch->len, (const char *)ch->data);
        t->next_offset += ch->len;
    } else if (ch->kind == TT_CHUNK_GAP) {
        assert_true(ch->len > 0);
        for (size_t i = 0; i < ch->len; i++) tt_sb_printf(&rec->streams[id][ch->dir], "?");
        t->next_offset += ch->len;
    } else {
        assert_int_equal(ch->len, 0);
        t->ended = true;
    }
    tt_sb_printf(&rec->trace, "\n");
}

static inline recorder *recorder_new(void)
{
    return calloc(1, sizeof(recorder));
}

static inline void recorder_free(recorder *rec)
{
    tt_sb_free(&rec->trace);
    for (int i = 0; i < MAX_TRACKED; i++) {
        tt_sb_free(&rec->streams[i][0]);
        tt_sb_free(&rec->streams[i][1]);
    }
    free(rec);
}

static inline void expect_trace(recorder *rec, const char *want)
{
    const char *got = rec->trace.s ? rec->trace.s : "";
    if (strcmp(got, want)) {
        fprintf(stderr, "--- expected\n%s--- got\n%s---\n", want, got);
        fail();
    }
}

/* A 4-tuple: the client 10.0.0.1:cport, the server 10.0.0.2:sport. */
typedef struct pair {
    tt_endpoint c, s;
} pair;

static inline pair mkpair(uint16_t cport, uint16_t sport)
{
    pair p;
    memset(&p, 0, sizeof p);
    p.c.family = p.s.family = 4;
    p.c.addr[0] = p.s.addr[0] = 10;
    p.c.addr[3] = 1;
    p.s.addr[3] = 2;
    p.c.port = cport;
    p.s.port = sport;
    return p;
}

/* Send from the client (C2S) or the server (S2C) of pair p. */
static inline void tx_full(tt_reasm *r, const pair *p, tt_direction d, uint32_t seq, uint32_t ack, uint8_t flags,
                           const char *payload, size_t missing, uint64_t ts)
{
    tt_tcp_segment s;
    memset(&s, 0, sizeof s);
    s.src = d == TT_DIR_C2S ? p->c : p->s;
    s.dst = d == TT_DIR_C2S ? p->s : p->c;
    s.seq = seq;
    s.ack = ack;
    s.flags = flags;
    size_t n = payload ? strlen(payload) : 0;
    uint8_t *copy = n ? tt_guard_copy(payload, n) : NULL;
    s.payload = copy;
    s.payload_len = n;
    s.missing_len = missing;
    s.ts_ns = ts;
    tt_reasm_segment(r, &s);
    if (copy) tt_guard_free(copy, n);
}

static inline void tx(tt_reasm *r, const pair *p, tt_direction d, uint32_t seq, uint8_t flags, const char *payload,
                      uint64_t ts)
{
    tx_full(r, p, d, seq, 0, flags, payload, 0, ts);
}

#define C2S TT_DIR_C2S
#define S2C TT_DIR_S2C
#define ACK TT_TCP_ACK
#define PA (TT_TCP_PSH | TT_TCP_ACK)
#define FA (TT_TCP_FIN | TT_TCP_ACK)
#define CISN 1000u
#define SISN 5000u

static inline void handshake(tt_reasm *r, const pair *p, uint64_t ts)
{
    tx_full(r, p, C2S, CISN, 0, TT_TCP_SYN, NULL, 0, ts);
    tx_full(r, p, S2C, SISN, CISN + 1, TT_TCP_SYN | ACK, NULL, 0, ts + 1);
    tx_full(r, p, C2S, CISN + 1, SISN + 1, ACK, NULL, 0, ts + 2);
}

static inline tt_reasm *new_reasm(recorder *rec, size_t max_held, size_t max_conns)
{
    tt_reasm_limits lim = {max_held, max_conns};
    tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, on_chunk, rec);
    assert_non_null(r);
    return r;
}

#endif
