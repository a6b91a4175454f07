/* test_reasm_roles.c - TCP reassembly: who is the client when the
 * handshake was not captured, how each direction ends (FIN in either order,
 * RST, RST after FIN), a new connection on a reused tuple, and IPv6 tuples;
 * exact chunk sequences, as test_reasm.c. */
#include "reasm_recorder.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_midstream_client_first),
        cmocka_unit_test(test_midstream_server_first),
        cmocka_unit_test(test_midstream_port_rule),
        cmocka_unit_test(test_synack_first),
        cmocka_unit_test(test_fin_client_first),
        cmocka_unit_test(test_fin_server_first_out_of_order),
        cmocka_unit_test(test_rst),
        cmocka_unit_test(test_rst_after_fin),
        cmocka_unit_test(test_port_reuse),
        cmocka_unit_test(test_ipv6_tuple),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
