/* test_reasm.c - TCP reassembly: exact chunk sequences for each situation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

static const char *kind_name(tt_chunk_kind k)
{
    static const char *const names[] = {"DATA", "GAP", "FIN", "RST", "END", "RELEASE"};
    return (unsigned)k < 6 ? names[k] : "?";
}

static void on_chunk(void *ctx, const tt_chunk *ch)
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

static recorder *recorder_new(void)
{
    return calloc(1, sizeof(recorder));
}

static void recorder_free(recorder *rec)
{
    tt_sb_free(&rec->trace);
    for (int i = 0; i < MAX_TRACKED; i++) {
        tt_sb_free(&rec->streams[i][0]);
        tt_sb_free(&rec->streams[i][1]);
    }
    free(rec);
}

static void expect_trace(recorder *rec, const char *want)
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

static pair mkpair(uint16_t cport, uint16_t sport)
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
static void tx_full(tt_reasm *r, const pair *p, tt_direction d, uint32_t seq, uint32_t ack, uint8_t flags,
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

static void tx(tt_reasm *r, const pair *p, tt_direction d, uint32_t seq, uint8_t flags, const char *payload,
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

static void handshake(tt_reasm *r, const pair *p, uint64_t ts)
{
    tx_full(r, p, C2S, CISN, 0, TT_TCP_SYN, NULL, 0, ts);
    tx_full(r, p, S2C, SISN, CISN + 1, TT_TCP_SYN | ACK, NULL, 0, ts + 1);
    tx_full(r, p, C2S, CISN + 1, SISN + 1, ACK, NULL, 0, ts + 2);
}

static tt_reasm *new_reasm(recorder *rec, size_t max_held, size_t max_conns)
{
    tt_reasm_limits lim = {max_held, max_conns};
    tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, on_chunk, rec);
    assert_non_null(r);
    return r;
}

static void test_in_order(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, C2S, CISN + 1, PA, "GET / HTTP/1.1\r\n\r\n", 110);
    tx(r, &p, S2C, SISN + 1, PA, "HTTP/1.1 200 OK\r\n", 120);
    tx(r, &p, S2C, SISN + 18, PA, "\r\nhi", 130);
    tx(r, &p, S2C, SISN + 22, FA, NULL, 140);
    tx(r, &p, C2S, CISN + 19, FA, NULL, 150);
    tx(r, &p, S2C, SISN + 23, ACK, NULL, 160); /* last ACK: no phantom connection */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 c2s DATA off=0 len=18 ts=110 \"GET / HTTP/1.1\\r\\n\\r\\n\"\n"
                      "1 s2c DATA off=0 len=17 ts=120 \"HTTP/1.1 200 OK\\r\\n\"\n"
                      "1 s2c DATA off=17 len=4 ts=130 \"\\r\\nhi\"\n"
                      "1 s2c FIN off=21 len=0 ts=140\n"
                      "1 c2s FIN off=18 len=0 ts=150\n"
                      "1 RELEASE ts=150\n");
    const tt_reasm_stats *st = tt_reasm_get_stats(r);
    assert_int_equal(st->connections, 1);
    assert_int_equal(st->segments, 9);
    assert_int_equal(st->ignored_segments, 1);
    assert_int_equal(st->live_connections, 0);
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_out_of_order(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1 + 6, PA, "second", 200); /* held */
    tx(r, &p, S2C, SISN + 1 + 12, PA, "third", 210); /* held */
    tx(r, &p, S2C, SISN + 1, PA, "first-", 300);     /* fills the hole */
    tx(r, &p, S2C, SISN + 1 + 30, PA, "fifth", 310); /* held again */
    tx(r, &p, S2C, SISN + 1 + 17, PA, "fourth-------", 400);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=6 ts=300 \"first-\"\n"
                      "1 s2c DATA off=6 len=6 ts=300 \"second\"\n"
                      "1 s2c DATA off=12 len=5 ts=300 \"third\"\n"
                      "1 s2c DATA off=17 len=13 ts=400 \"fourth-------\"\n"
                      "1 s2c DATA off=30 len=5 ts=400 \"fifth\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=35 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->out_of_order_segments, 3);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* A held segment seen before the filler keeps its own, later instant. */
static void test_out_of_order_keeps_own_instant(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1 + 3, PA, "def", 500);
    tx(r, &p, S2C, SISN + 1, PA, "abc", 400); /* capture order misordered: earlier instant */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=3 ts=400 \"abc\"\n"
                      "1 s2c DATA off=3 len=3 ts=500 \"def\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=6 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_retransmission(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1, PA, "0123456789", 200);
    tx(r, &p, S2C, SISN + 1, PA, "0123456789", 210);      /* exact copy */
    tx(r, &p, S2C, SISN + 1 + 5, PA, "XXXXXabcde", 220);  /* half old, half new */
    tx(r, &p, S2C, SISN + 1 + 2, PA, "XX", 230);          /* old */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=10 ts=200 \"0123456789\"\n"
                      "1 s2c DATA off=10 len=5 ts=220 \"abcde\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=15 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    const tt_reasm_stats *st = tt_reasm_get_stats(r);
    assert_int_equal(st->retransmitted_bytes, 12);
    assert_int_equal(st->overlap_bytes, 5);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* Overlapping held segments: the first copy of every byte wins. */
static void test_overlap_first_copy_wins(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1 + 10, PA, "AAAAAAAAAA", 200);     /* [10,20) */
    tx(r, &p, S2C, SISN + 1 + 5, PA, "bbbbbbbbbbbbbbbbbbbb", 210); /* [5,25): keeps [5,10) and [20,25) */
    tx(r, &p, S2C, SISN + 1, PA, "cccccccc", 220);          /* [0,8): keeps [0,5) */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=5 ts=220 \"ccccc\"\n"
                      "1 s2c DATA off=5 len=5 ts=220 \"bbbbb\"\n"
                      "1 s2c DATA off=10 len=10 ts=220 \"AAAAAAAAAA\"\n"
                      "1 s2c DATA off=20 len=5 ts=220 \"bbbbb\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=25 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->overlap_bytes, 10 + 3);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* A lost segment is never resent: the hole becomes a gap at finish. */
static void test_hole_gap_at_finish(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1, PA, "aaaa", 200);
    tx(r, &p, S2C, SISN + 1 + 10, PA, "cccc", 220); /* [4,10) lost */
    tx(r, &p, S2C, SISN + 1 + 14, FA, NULL, 230);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=4 ts=200 \"aaaa\"\n"
                      "1 s2c GAP off=4 len=6 ts=220\n"
                      "1 s2c DATA off=10 len=4 ts=220 \"cccc\"\n"
                      "1 s2c FIN off=14 len=0 ts=230\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    const tt_reasm_stats *st = tt_reasm_get_stats(r);
    assert_int_equal(st->gaps, 1);
    assert_int_equal(st->gap_bytes, 6);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* The client acknowledges past the hole (it got the bytes; the capture did
 * not): the gap is declared then, and the pending FIN follows. */
static void test_hole_gap_when_acked(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1, PA, "aaaa", 200);
    tx(r, &p, S2C, SISN + 1 + 10, PA, "cccc", 220);
    tx(r, &p, S2C, SISN + 1 + 14, FA, NULL, 230);
    tx_full(r, &p, C2S, CISN + 1, SISN + 1 + 8, ACK, NULL, 0, 240);   /* covers part of the hole */
    tx_full(r, &p, C2S, CISN + 1, SISN + 1 + 15, FA, NULL, 0, 250);   /* acks the FIN */
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=4 ts=200 \"aaaa\"\n"
                      "1 s2c GAP off=4 len=4 ts=240\n"
                      "1 s2c GAP off=8 len=2 ts=240\n"
                      "1 s2c DATA off=10 len=4 ts=240 \"cccc\"\n"
                      "1 s2c FIN off=14 len=0 ts=240\n"
                      "1 c2s FIN off=0 len=0 ts=250\n"
                      "1 RELEASE ts=250\n");
    tt_reasm_finish(r, 1000);
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_hold_limit(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 10, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1, PA, "ab", 200);
    tx(r, &p, S2C, SISN + 1 + 5, PA, "fghijk", 210);  /* 6 held */
    tx(r, &p, S2C, SISN + 1 + 11, PA, "lmnop", 220);  /* 11 held > 10 */
    tx(r, &p, S2C, SISN + 1 + 2, PA, "cde", 230);     /* too late: already declared lost */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=2 ts=200 \"ab\"\n"
                      "1 s2c GAP off=2 len=3 ts=210\n"
                      "1 s2c DATA off=5 len=6 ts=210 \"fghijk\"\n"
                      "1 s2c DATA off=11 len=5 ts=220 \"lmnop\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=16 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->retransmitted_bytes, 3);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* Thousands of tiny held pieces count against the hold limit too. */
static void test_hold_piece_limit(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    for (uint32_t i = 1; i <= 4096; i++) tx(r, &p, S2C, SISN + 1 + 2 * i, PA, "x", 200);
    assert_int_equal(tt_reasm_get_stats(r)->gaps, 0);
    tx(r, &p, S2C, SISN + 1 + 2 * 4097, PA, "y", 300); /* piece 4097: the first hole is given up */
    const tt_reasm_stats *st = tt_reasm_get_stats(r);
    assert_int_equal(st->gaps, 1);
    assert_int_equal(rec->dirs[1][S2C].next_offset, 3);
    tt_reasm_finish(r, 1000);
    assert_int_equal(st->gaps, 4097);
    assert_int_equal(rec->dirs[1][S2C].next_offset, 2 * 4097 + 1);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* No SYN; the client (low port) speaks first with a request line. */
static void test_midstream_client_first(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(1000, 5000);
    tx(r, &p, C2S, 777, ACK, NULL, 90); /* pure ACK of an unknown tuple: ignored */
    tx(r, &p, C2S, 777, PA, "POST /v1 HTTP/1.1\r\n", 100);
    tx(r, &p, S2C, 99, PA, "HTTP/1.1 200 OK\r\n", 110);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:1000 server=10.0.0.2:5000 guessed\n"
                      "1 c2s DATA off=0 len=19 ts=100 \"POST /v1 HTTP/1.1\\r\\n\"\n"
                      "1 s2c DATA off=0 len=17 ts=110 \"HTTP/1.1 200 OK\\r\\n\"\n"
                      "1 c2s END off=19 len=0 ts=1000\n"
                      "1 s2c END off=17 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(rec->seq_base[1][C2S], 777); /* no SYN: offset 0 is the first byte seen */
    assert_int_equal(rec->seq_base[1][S2C], 99);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* No SYN; the server (high port) is seen first, with a status line. */
static void test_midstream_server_first(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(1000, 5000);
    tx(r, &p, S2C, 99, PA, "HTTP/1.1 200 OK\r\n", 110);
    tx(r, &p, S2C, 99 + 17, PA, "data: x\n\n", 120);
    tx(r, &p, C2S, 5, PA, "GET /next HTTP/1.1\r\n", 130);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:1000 server=10.0.0.2:5000 guessed\n"
                      "1 s2c DATA off=0 len=17 ts=110 \"HTTP/1.1 200 OK\\r\\n\"\n"
                      "1 s2c DATA off=17 len=9 ts=120 \"data: x\\n\\n\"\n"
                      "1 c2s DATA off=0 len=20 ts=130 \"GET /next HTTP/1.1\\r\\n\"\n"
                      "1 c2s END off=20 len=0 ts=1000\n"
                      "1 s2c END off=26 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

/* No SYN and no HTTP text: the higher port is the client. */
static void test_midstream_port_rule(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(443, 51000); /* "client" in pair terms is the low port; it sends first */
    tx(r, &p, C2S, 10, PA, "\x16\x03\x01", 100);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.2:51000 server=10.0.0.1:443 guessed\n"
                      "1 s2c DATA off=0 len=3 ts=100 \"\\x16\\x03\\x01\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=3 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

/* Missed SYN, SYN-ACK seen: its sender is the server, not guessed. */
static void test_synack_first(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 80);
    tx_full(r, &p, S2C, SISN, CISN + 1, TT_TCP_SYN | ACK, NULL, 0, 100);
    tx_full(r, &p, C2S, CISN, 0, TT_TCP_SYN, NULL, 0, 105); /* the SYN, late: a retransmission */
    tx(r, &p, C2S, CISN + 1, PA, "hi", 110);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:80\n"
                      "1 c2s DATA off=0 len=2 ts=110 \"hi\"\n"
                      "1 c2s END off=2 len=0 ts=1000\n"
                      "1 s2c END off=0 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->connections, 1);
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_fin_client_first(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, C2S, CISN + 1, PA | TT_TCP_FIN, "bye", 110); /* data and FIN together */
    tx(r, &p, S2C, SISN + 1, PA, "ok", 120);
    tx(r, &p, C2S, CISN + 1, PA, "bye", 125); /* retransmitted data after the FIN */
    tx(r, &p, S2C, SISN + 3, FA, NULL, 130);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 c2s DATA off=0 len=3 ts=110 \"bye\"\n"
                      "1 c2s FIN off=3 len=0 ts=110\n"
                      "1 s2c DATA off=0 len=2 ts=120 \"ok\"\n"
                      "1 s2c FIN off=2 len=0 ts=130\n"
                      "1 RELEASE ts=130\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

/* The server closes first; its FIN arrives before its last data. */
static void test_fin_server_first_out_of_order(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1 + 4, FA, NULL, 120);
    tx(r, &p, S2C, SISN + 1, PA, "done", 125);
    tx(r, &p, C2S, CISN + 1, FA, NULL, 130);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=4 ts=125 \"done\"\n"
                      "1 s2c FIN off=4 len=0 ts=125\n"
                      "1 c2s FIN off=0 len=0 ts=130\n"
                      "1 RELEASE ts=130\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_rst(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, C2S, CISN + 1, PA, "req", 110);
    tx(r, &p, S2C, SISN + 1 + 2, PA, "zz", 120); /* held behind a 2-byte hole */
    tx(r, &p, S2C, SISN + 1 + 4, TT_TCP_RST | ACK, NULL, 130);
    tx(r, &p, S2C, SISN + 1 + 4, TT_TCP_RST, NULL, 140); /* stray RST: no connection */
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 c2s DATA off=0 len=3 ts=110 \"req\"\n"
                      "1 s2c GAP off=0 len=2 ts=120\n"
                      "1 s2c DATA off=2 len=2 ts=120 \"zz\"\n"
                      "1 c2s RST off=3 len=0 ts=130\n"
                      "1 s2c RST off=4 len=0 ts=130\n"
                      "1 RELEASE ts=130\n");
    assert_int_equal(tt_reasm_get_stats(r)->ignored_segments, 1);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* A direction that already ended with FIN gets no RST. */
static void test_rst_after_fin(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1, PA | TT_TCP_FIN, "data", 110);
    tx(r, &p, C2S, CISN + 1, TT_TCP_RST, NULL, 120);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=4 ts=110 \"data\"\n"
                      "1 s2c FIN off=4 len=0 ts=110\n"
                      "1 c2s RST off=0 len=0 ts=120\n"
                      "1 RELEASE ts=120\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

/* Many connections interleaved segment by segment, some out of order. */
static void test_many_interleaved(void **state)
{
    enum { N = 100, SEGS = 20 };
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair pairs[N];
    uint64_t ts = 1000;
    for (int i = 0; i < N; i++) {
        pairs[i] = mkpair((uint16_t)(30000 + i), 8000);
        handshake(r, &pairs[i], ts++);
    }
    for (int k = 0; k < SEGS; k += 2) {
        for (int i = 0; i < N; i++) {
            char a[32], b[32];
            snprintf(a, sizeof a, "c%03u-s%02u;", (unsigned)i % 1000, (unsigned)k % 100);
            snprintf(b, sizeof b, "c%03u-s%02u;", (unsigned)i % 1000, (unsigned)(k + 1) % 100);
            /* odd connections send each pair of segments swapped */
            if (i & 1) {
                tx(r, &pairs[i], S2C, SISN + 1 + (uint32_t)(k + 1) * 9, PA, b, ts++);
                tx(r, &pairs[i], S2C, SISN + 1 + (uint32_t)k * 9, PA, a, ts++);
            } else {
                tx(r, &pairs[i], S2C, SISN + 1 + (uint32_t)k * 9, PA, a, ts++);
                tx(r, &pairs[i], S2C, SISN + 1 + (uint32_t)(k + 1) * 9, PA, b, ts++);
            }
        }
    }
    for (int i = 0; i < N; i++) {
        tx(r, &pairs[i], S2C, SISN + 1 + SEGS * 9, FA, NULL, ts++);
        tx(r, &pairs[i], C2S, CISN + 1, FA, NULL, ts++);
    }
    assert_int_equal(rec->releases, N);
    for (int i = 0; i < N; i++) {
        tt_strbuf want = {0};
        for (int k = 0; k < SEGS; k++) tt_sb_printf(&want, "c%03d-s%02d;", i, k);
        assert_string_equal(rec->streams[i + 1][S2C].s, want.s);
        tt_sb_free(&want);
    }
    const tt_reasm_stats *st = tt_reasm_get_stats(r);
    assert_int_equal(st->connections, N);
    assert_int_equal(st->out_of_order_segments, N / 2 * SEGS / 2);
    assert_int_equal(st->live_connections, 0);
    tt_reasm_finish(r, ts);
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_port_reuse(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, C2S, CISN + 1, PA, "one", 110);
    tx(r, &p, C2S, CISN + 4, FA, NULL, 120);
    tx(r, &p, S2C, SISN + 1, FA, NULL, 130);
    /* same tuple again, new ISNs */
    tx_full(r, &p, C2S, 90000, 0, TT_TCP_SYN, NULL, 0, 200);
    tx_full(r, &p, S2C, 70000, 90001, TT_TCP_SYN | ACK, NULL, 0, 201);
    tx(r, &p, C2S, 90001, PA, "two", 210);
    tx(r, &p, C2S, 90004, FA, NULL, 220);
    /* the server never closes; the client reuses the tuple: the old one ends */
    tx_full(r, &p, C2S, 123456, 0, TT_TCP_SYN, NULL, 0, 300);
    tx_full(r, &p, C2S, 123456, 0, TT_TCP_SYN, NULL, 0, 301); /* SYN retransmission: same conn */
    tx(r, &p, C2S, 123457, PA, "three", 310);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 c2s DATA off=0 len=3 ts=110 \"one\"\n"
                      "1 c2s FIN off=3 len=0 ts=120\n"
                      "1 s2c FIN off=0 len=0 ts=130\n"
                      "1 RELEASE ts=130\n"
                      "conn 2 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "2 c2s DATA off=0 len=3 ts=210 \"two\"\n"
                      "2 c2s FIN off=3 len=0 ts=220\n"
                      "2 s2c END off=0 len=0 ts=300\n"
                      "2 RELEASE ts=300\n"
                      "conn 3 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "3 c2s DATA off=0 len=5 ts=310 \"three\"\n"
                      "3 c2s END off=5 len=0 ts=1000\n"
                      "3 s2c END off=0 len=0 ts=1000\n"
                      "3 RELEASE ts=1000\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_seq_wraparound(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    uint32_t isn = 0xfffffff8u;
    tx_full(r, &p, C2S, CISN, 0, TT_TCP_SYN, NULL, 0, 100);
    tx_full(r, &p, S2C, isn, CISN + 1, TT_TCP_SYN | ACK, NULL, 0, 101);
    tx(r, &p, S2C, isn + 1, PA, "0123", 110);          /* ends at 0xfffffffd */
    tx(r, &p, S2C, isn + 1 + 8, PA, "89ab", 120);       /* past 2^32: held */
    tx(r, &p, S2C, isn + 1 + 4, PA, "4567", 130);       /* crosses 2^32 */
    tx(r, &p, S2C, isn + 1 + 2, PA, "23", 140);         /* old */
    tx(r, &p, S2C, isn + 1 + 12, FA, NULL, 150);
    tx(r, &p, C2S, CISN + 1, FA, NULL, 160);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=4 ts=110 \"0123\"\n"
                      "1 s2c DATA off=4 len=4 ts=130 \"4567\"\n"
                      "1 s2c DATA off=8 len=4 ts=130 \"89ab\"\n"
                      "1 s2c FIN off=12 len=0 ts=150\n"
                      "1 c2s FIN off=0 len=0 ts=160\n"
                      "1 RELEASE ts=160\n");
    assert_int_equal(rec->seq_base[1][S2C], isn + 1); /* offset 0 is the byte after the SYN */
    tt_reasm_free(r);
    recorder_free(rec);
}

/* A snapped packet: 5 bytes captured of 15; the rest is a gap. */
static void test_snapped_segment(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx_full(r, &p, S2C, SISN + 1, 0, PA, "abcde", 10, 110);
    tx(r, &p, S2C, SISN + 1 + 15, PA, "next", 120);
    tx_full(r, &p, S2C, SISN + 1 + 25, 0, PA, "xy", 3, 130); /* held, snapped */
    tx(r, &p, S2C, SISN + 1 + 19, PA, "filler", 140);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=5 ts=110 \"abcde\"\n"
                      "1 s2c GAP off=5 len=10 ts=110\n"
                      "1 s2c DATA off=15 len=4 ts=120 \"next\"\n"
                      "1 s2c DATA off=19 len=6 ts=140 \"filler\"\n"
                      "1 s2c DATA off=25 len=2 ts=140 \"xy\"\n"
                      "1 s2c GAP off=27 len=3 ts=140\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=30 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->gap_bytes, 13);
    tt_reasm_free(r);
    recorder_free(rec);
}

static void test_connection_limit(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 2);
    pair a = mkpair(40001, 8000), b = mkpair(40002, 8000), c = mkpair(40003, 8000);
    tx(r, &a, C2S, 1, PA, "GET a", 100);
    tx(r, &b, C2S, 1, PA, "GET b", 110);
    tx(r, &a, C2S, 6, PA, "!", 120); /* a is now the more recently active */
    tx(r, &c, C2S, 1, PA, "GET c", 130);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40001 server=10.0.0.2:8000 guessed\n"
                      "1 c2s DATA off=0 len=5 ts=100 \"GET a\"\n"
                      "conn 2 client=10.0.0.1:40002 server=10.0.0.2:8000 guessed\n"
                      "2 c2s DATA off=0 len=5 ts=110 \"GET b\"\n"
                      "1 c2s DATA off=5 len=1 ts=120 \"!\"\n"
                      "2 c2s END off=5 len=0 ts=130\n"
                      "2 s2c END off=0 len=0 ts=130\n"
                      "2 RELEASE ts=130\n"
                      "conn 3 client=10.0.0.1:40003 server=10.0.0.2:8000 guessed\n"
                      "3 c2s DATA off=0 len=5 ts=130 \"GET c\"\n"
                      "1 c2s END off=6 len=0 ts=1000\n"
                      "1 s2c END off=0 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n"
                      "3 c2s END off=5 len=0 ts=1000\n"
                      "3 s2c END off=0 len=0 ts=1000\n"
                      "3 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->flushed_for_limit, 1);
    tt_reasm_free(r);
    recorder_free(rec);
}

/* IPv6 endpoints key connections like IPv4 ones. */
static void test_ipv6_tuple(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p;
    memset(&p, 0, sizeof p);
    p.c.family = p.s.family = 6;
    p.c.addr[0] = p.s.addr[0] = 0xfd;
    p.c.addr[15] = 1;
    p.s.addr[15] = 2;
    p.c.port = 50000;
    p.s.port = 8080;
    tx(r, &p, C2S, 1, PA, "GET /", 100);
    tx(r, &p, S2C, 1, PA, "HTTP/1.1", 110);
    tt_reasm_finish(r, 200);
    expect_trace(rec, "conn 1 client=[fd00::1]:50000 server=[fd00::2]:8080 guessed\n"
                      "1 c2s DATA off=0 len=5 ts=100 \"GET /\"\n"
                      "1 s2c DATA off=0 len=8 ts=110 \"HTTP/1.1\"\n"
                      "1 c2s END off=5 len=0 ts=200\n"
                      "1 s2c END off=8 len=0 ts=200\n"
                      "1 RELEASE ts=200\n");
    tt_reasm_free(r);
    recorder_free(rec);
}

/* Far-ahead garbage is ignored rather than turned into a giant gap. */
static void test_far_ahead_ignored(void **state)
{
    recorder *rec = recorder_new();
    tt_reasm *r = new_reasm(rec, 0, 0);
    pair p = mkpair(40000, 8000);
    handshake(r, &p, 100);
    tx(r, &p, S2C, SISN + 1 + 0x60000000u, PA, "junk", 110);
    tx(r, &p, S2C, SISN + 1, PA, "ok", 120);
    tt_reasm_finish(r, 1000);
    expect_trace(rec, "conn 1 client=10.0.0.1:40000 server=10.0.0.2:8000\n"
                      "1 s2c DATA off=0 len=2 ts=120 \"ok\"\n"
                      "1 c2s END off=0 len=0 ts=1000\n"
                      "1 s2c END off=2 len=0 ts=1000\n"
                      "1 RELEASE ts=1000\n");
    assert_int_equal(tt_reasm_get_stats(r)->ignored_segments, 1);
    tt_reasm_free(r);
    recorder_free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_out_of_order_keeps_own_instant),
        cmocka_unit_test(test_retransmission),
        cmocka_unit_test(test_overlap_first_copy_wins),
        cmocka_unit_test(test_hole_gap_at_finish),
        cmocka_unit_test(test_hole_gap_when_acked),
        cmocka_unit_test(test_hold_limit),
        cmocka_unit_test(test_hold_piece_limit),
        cmocka_unit_test(test_midstream_client_first),
        cmocka_unit_test(test_midstream_server_first),
        cmocka_unit_test(test_midstream_port_rule),
        cmocka_unit_test(test_synack_first),
        cmocka_unit_test(test_fin_client_first),
        cmocka_unit_test(test_fin_server_first_out_of_order),
        cmocka_unit_test(test_rst),
        cmocka_unit_test(test_rst_after_fin),
        cmocka_unit_test(test_many_interleaved),
        cmocka_unit_test(test_port_reuse),
        cmocka_unit_test(test_seq_wraparound),
        cmocka_unit_test(test_snapped_segment),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_ipv6_tuple),
        cmocka_unit_test(test_far_ahead_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
