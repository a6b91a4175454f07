/* test_reasm.c - TCP reassembly: exact chunk sequences for each situation
 * of order: in order, out of order, retransmitted, overlapping, holes and
 * their gaps, the hold limits, many connections interleaved, sequence
 * wraparound, snapped segments, the connection limit, far-ahead garbage.
 * Roles and ends (no SYN, FIN, RST, port reuse, IPv6) are
 * test_reasm_roles.c. */
#include "reasm_recorder.h"

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
        cmocka_unit_test(test_many_interleaved),
        cmocka_unit_test(test_seq_wraparound),
        cmocka_unit_test(test_snapped_segment),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_far_ahead_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
