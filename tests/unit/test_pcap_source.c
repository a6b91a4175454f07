/* test_pcap_source.c - capture files written with pcap_writer, read back
 * through the pcap source and the reassembler: bytes and instants, and
 * the shares analyze --jobs reads a file in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "golden.h"
#include "pcap_writer.h"
#include "tmp_dir.h"
#include "source/pcap_source.h"

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif

#define T0 1700000000123456789ull

typedef struct collected {
    tt_strbuf bytes[2];  /* per direction; '?' for each gap byte */
    uint64_t ts[2][64];  /* instants of DATA chunks */
    size_t nts[2];
    int fins, ends, rsts, releases, gaps, readies;
    uint64_t conn_ids_seen;
    tt_conn_info last_info;
} collected;

static void collect(void *ctx, const tt_chunk *ch)
{
    collected *c = ctx;
    if (ch->conn->conn_id > c->conn_ids_seen) c->conn_ids_seen = ch->conn->conn_id;
    c->last_info = *ch->conn;
    switch (ch->kind) {
    case TT_CHUNK_DATA:
        tt_sb_printf(&c->bytes[ch->dir], "%.*s", (int)ch->len, (const char *)ch->data);
        if (c->nts[ch->dir] < 64) c->ts[ch->dir][c->nts[ch->dir]++] = ch->mono_ns;
        break;
    case TT_CHUNK_GAP:
        c->gaps++;
        for (size_t i = 0; i < ch->len; i++) tt_sb_printf(&c->bytes[ch->dir], "?");
        break;
    case TT_CHUNK_FIN: c->fins++; break;
    case TT_CHUNK_RST: c->rsts++; break;
    case TT_CHUNK_END: c->ends++; break;
    case TT_CHUNK_RELEASE: c->releases++; break;
    case TT_CHUNK_READY: c->readies++; break;
    }
}

static void collected_free(collected *c)
{
    tt_sb_free(&c->bytes[0]);
    tt_sb_free(&c->bytes[1]);
}

static int setup_dir(void **state)
{
    return tt_tmp_dir_make("tt_pcap_test");
}

static int remove_dir(void **state)
{
    return tt_tmp_dir_remove();
}

/* The most each read asks for in read_capture (tt_pcap_source_set_read_chunk). */
static size_t read_capture_chunk;

/* Read path through source + reassembler into c. Returns run()'s result;
 * fails the test when the file does not open. */
static int read_capture(const char *path, collected *c, tt_pcap_stats *stats_out, char *err, size_t errlen)
{
    tt_pcap_source *s = tt_pcap_source_open(path, err, errlen);
    if (!s) fprintf(stderr, "open: %s\n", err);
    assert_non_null(s);
    tt_pcap_source_set_read_chunk(s, read_capture_chunk);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect, c);
    int rc = tt_pcap_source_run(s, r, NULL, NULL, err, errlen);
    if (stats_out) *stats_out = *tt_pcap_source_stats(s);
    tt_reasm_free(r);
    tt_pcap_source_close(s);
    return rc;
}

static const char request[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
static const char resp1[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
static const char resp2[] = "d\r\ndata: hello\n\n\r\n";
static const char resp3[] = "0\r\n\r\n"; /* short: the Ethernet frame is padded */

/* The conversation every link-type test writes: instants with odd ns digits. */
static void write_conversation(tt_pw *w, const char *cip, const char *sip)
{
    tt_pw_conn *c = tt_pw_conn_new(w, cip, 41000, sip, 8000);
    assert_non_null(c);
    assert_int_equal(tt_pw_handshake(c, T0), 0);
    assert_int_equal(tt_pw_send(c, TT_DIR_C2S, request, strlen(request), T0 + 1001), 0);
    assert_int_equal(tt_pw_send(c, TT_DIR_S2C, resp1, strlen(resp1), T0 + 50003), 0);
    assert_int_equal(tt_pw_send(c, TT_DIR_S2C, resp2, strlen(resp2), T0 + 70007), 0);
    assert_int_equal(tt_pw_send(c, TT_DIR_S2C, resp3, strlen(resp3), T0 + 90009), 0);
    assert_int_equal(tt_pw_fin(c, TT_DIR_S2C, T0 + 90010), 0);
    assert_int_equal(tt_pw_fin(c, TT_DIR_C2S, T0 + 90020), 0);
    assert_int_equal(tt_pw_ack(c, TT_DIR_S2C, T0 + 90030), 0);
}

static void check_conversation(const collected *c, uint64_t unit)
{
    char want_s2c[256];
    snprintf(want_s2c, sizeof want_s2c, "%s%s%s", resp1, resp2, resp3);
    assert_string_equal(c->bytes[TT_DIR_C2S].s, request);
    assert_string_equal(c->bytes[TT_DIR_S2C].s, want_s2c);
    assert_int_equal(c->nts[TT_DIR_C2S], 1);
    assert_int_equal(c->nts[TT_DIR_S2C], 3);
    assert_int_equal(c->ts[TT_DIR_C2S][0], (T0 + 1001) / unit * unit);
    assert_int_equal(c->ts[TT_DIR_S2C][0], (T0 + 50003) / unit * unit);
    assert_int_equal(c->ts[TT_DIR_S2C][1], (T0 + 70007) / unit * unit);
    assert_int_equal(c->ts[TT_DIR_S2C][2], (T0 + 90009) / unit * unit);
    assert_int_equal(c->fins, 2);
    assert_int_equal(c->releases, 1);
    assert_int_equal(c->ends, 0);
    assert_int_equal(c->gaps, 0);
    assert_int_equal(c->conn_ids_seen, 1);
    assert_false(c->last_info.orientation_guessed);
}

static void roundtrip(const char *name, int linktype, unsigned flags, const char *cip, const char *sip,
                      int expect_linktype)
{
    const char *path = tt_tmp_path(name);
    tt_pw *w = tt_pw_open(path, linktype, flags);
    assert_non_null(w);
    write_conversation(w, cip, sip);
    assert_int_equal(tt_pw_close(w), 0);

    collected c = {0};
    tt_pcap_stats st;
    char err[256] = "";
    assert_int_equal(read_capture(path, &c, &st, err, sizeof err), 0);
    check_conversation(&c, (flags & TT_PW_MICRO) ? 1000 : 1);
    assert_int_equal(st.packets, 10);
    assert_int_equal(st.tcp_segments, 10);
    assert_int_equal(st.malformed + st.non_ip + st.non_tcp + st.fragments + st.snapped, 0);
    assert_int_equal(st.linktype, expect_linktype);
    assert_int_equal(st.first_ns, T0 / ((flags & TT_PW_MICRO) ? 1000 : 1) * ((flags & TT_PW_MICRO) ? 1000 : 1));
    collected_free(&c);
}

static void test_ethernet(void **state) { roundtrip("eth.pcap", DLT_EN10MB, 0, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_ethernet_vlan(void **state) { roundtrip("vlan.pcap", DLT_EN10MB, TT_PW_VLAN, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_ethernet_qinq(void **state) { roundtrip("qinq.pcap", DLT_EN10MB, TT_PW_QINQ, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_sll(void **state) { roundtrip("sll.pcap", DLT_LINUX_SLL, 0, "10.1.2.3", "10.9.8.7", DLT_LINUX_SLL); }
static void test_sll2(void **state) { roundtrip("sll2.pcap", DLT_LINUX_SLL2, 0, "10.1.2.3", "10.9.8.7", DLT_LINUX_SLL2); }
static void test_null(void **state) { roundtrip("null.pcap", DLT_NULL, 0, "127.0.0.1", "127.0.0.1", DLT_NULL); }
static void test_null_swapped(void **state) { roundtrip("nullsw.pcap", DLT_NULL, TT_PW_NULL_SWAPPED, "::1", "::1", DLT_NULL); }
static void test_loop(void **state) { roundtrip("loop.pcap", DLT_LOOP, 0, "127.0.0.1", "127.0.0.2", DLT_LOOP); }
static void test_raw(void **state) { roundtrip("raw.pcap", DLT_RAW, 0, "10.1.2.3", "10.9.8.7", DLT_RAW); }
static void test_raw_v6(void **state) { roundtrip("raw6.pcap", DLT_RAW, 0, "fd00::1", "fd00::2", DLT_RAW); }
static void test_raw_openbsd(void **state) { roundtrip("raw14.pcapng", 14, TT_PW_PCAPNG, "10.1.2.3", "10.9.8.7", 14); }
static void test_ipv4_linktype(void **state) { roundtrip("ipv4.pcap", DLT_IPV4, 0, "10.1.2.3", "10.9.8.7", DLT_IPV4); }
static void test_ipv6_linktype(void **state) { roundtrip("ipv6.pcap", DLT_IPV6, 0, "2001:db8::1", "2001:db8::2", DLT_IPV6); }
static void test_ipv6_ext_headers(void **state) { roundtrip("v6ext.pcap", DLT_EN10MB, TT_PW_V6_EXTHDR | TT_PW_VLAN, "2001:db8::1", "2001:db8::2", DLT_EN10MB); }
static void test_tcp_options(void **state) { roundtrip("tsopt.pcap", DLT_EN10MB, TT_PW_TCP_TSOPT, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_microseconds(void **state) { roundtrip("micro.pcap", DLT_EN10MB, TT_PW_MICRO, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_pcapng(void **state) { roundtrip("ng.pcapng", DLT_EN10MB, TT_PW_PCAPNG, "10.1.2.3", "10.9.8.7", DLT_EN10MB); }
static void test_pcapng_micro(void **state) { roundtrip("ngu.pcapng", DLT_LINUX_SLL, TT_PW_PCAPNG | TT_PW_MICRO, "fd00::1", "fd00::2", DLT_LINUX_SLL); }
static void test_pcapng_raw(void **state) { roundtrip("ngraw.pcapng", DLT_RAW, TT_PW_PCAPNG, "10.1.2.3", "10.9.8.7", DLT_RAW); }

/* The canonical client endpoint comes out of the capture intact. */
static void test_endpoints(void **state)
{
    const char *path = tt_tmp_path("ep.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    write_conversation(w, "192.168.7.9", "172.16.0.5");
    tt_pw_close(w);
    collected c = {0};
    char err[256], a[64], b[64];
    assert_int_equal(read_capture(path, &c, NULL, err, sizeof err), 0);
    assert_string_equal(tt_endpoint_format(&c.last_info.client, a, sizeof a), "192.168.7.9:41000");
    assert_string_equal(tt_endpoint_format(&c.last_info.server, b, sizeof b), "172.16.0.5:8000");
    collected_free(&c);
}

static void test_mono_offset(void **state)
{
    const char *path = tt_tmp_path("mono.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    write_conversation(w, "10.0.0.1", "10.0.0.2");
    tt_pw_close(w);
    char err[256];
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(tt_pcap_source_clock(s), TT_CLOCK_CAPTURE);
    tt_pcap_source_set_mono_offset(s, (int64_t)(T0 - 5000000));
    assert_int_equal(tt_pcap_source_clock(s), TT_CLOCK_MONOTONIC);
    collected c = {0};
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect, &c);
    assert_int_equal(tt_pcap_source_run(s, r, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(c.ts[TT_DIR_C2S][0], 5000000 + 1001);
    assert_int_equal(c.ts[TT_DIR_S2C][2], 5000000 + 90009);
    assert_int_equal(tt_pcap_source_stats(s)->first_ns, 5000000);
    tt_reasm_free(r);
    tt_pcap_source_close(s);
    collected_free(&c);
}

/* Cut the last record in half: an error naming the count, earlier data kept. */
static void test_truncated(void **state)
{
    const char *path = tt_tmp_path("trunc.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    tt_pw_handshake(c, T0);
    tt_pw_send(c, TT_DIR_C2S, "GET / HTTP/1.1\r\n\r\n", 18, T0 + 10);
    tt_pw_send(c, TT_DIR_S2C, "HTTP/1.1 200 OK\r\n", 17, T0 + 20);
    long long before_last = tt_pw_offset(w);
    tt_pw_send(c, TT_DIR_S2C, "Content-Length: 0\r\n\r\n", 21, T0 + 30);
    long long end = tt_pw_offset(w);
    assert_true(before_last > 0 && end > before_last);
    tt_pw_close(w);
    assert_int_equal(truncate(path, before_last + (end - before_last) / 2), 0);

    static const size_t chunks[] = {0, 1, 7, 13, 64}; /* whole windows, then edges everywhere */
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        read_capture_chunk = chunks[k];
        collected col = {0};
        tt_pcap_stats st;
        char err[256] = "";
        assert_int_equal(read_capture(path, &col, &st, err, sizeof err), -1);
        assert_non_null(strstr(err, "truncated capture after 5 packets"));
        assert_null(strchr(err, '\n'));
        assert_string_equal(col.bytes[TT_DIR_C2S].s, "GET / HTTP/1.1\r\n\r\n");
        assert_string_equal(col.bytes[TT_DIR_S2C].s, "HTTP/1.1 200 OK\r\n");
        assert_int_equal(col.ends, 2); /* finish still ran */
        assert_int_equal(col.releases, 1);
        assert_int_equal(st.packets, 5);
        collected_free(&col);
    }
    read_capture_chunk = 0;
}

static void test_truncated_pcapng(void **state)
{
    const char *path = tt_tmp_path("trunc.pcapng");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, TT_PW_PCAPNG);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    tt_pw_send(c, TT_DIR_C2S, "GET / HTTP/1.1\r\n\r\n", 18, T0 + 10);
    long long before_last = tt_pw_offset(w);
    tt_pw_send(c, TT_DIR_S2C, "HTTP/1.1 200 OK\r\n", 17, T0 + 20);
    long long end = tt_pw_offset(w);
    tt_pw_close(w);
    assert_int_equal(truncate(path, before_last + (end - before_last) / 2), 0);
    static const size_t chunks[] = {0, 1, 7, 13, 64};
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        read_capture_chunk = chunks[k];
        collected col = {0};
        char err[256] = "";
        assert_int_equal(read_capture(path, &col, NULL, err, sizeof err), -1);
        assert_non_null(strstr(err, "truncated capture after 1 packets"));
        assert_string_equal(col.bytes[TT_DIR_C2S].s, "GET / HTTP/1.1\r\n\r\n");
        collected_free(&col);
    }
    read_capture_chunk = 0;
}

static void expect_open_error(const char *path, const char *needle)
{
    char err[512] = "";
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_null(s);
    if (!strstr(err, needle)) fprintf(stderr, "error was: %s\n", err);
    assert_non_null(strstr(err, needle));
    assert_null(strchr(err, '\n'));
}

static void test_not_a_capture(void **state)
{
    const char *path = tt_tmp_path("text.txt");
    FILE *f = fopen(path, "w");
    fputs("this is not a capture file at all, just words\n", f);
    fclose(f);
    expect_open_error(path, "not a pcap or pcapng capture");
}

static void test_empty_file(void **state)
{
    const char *path = tt_tmp_path("empty.pcap");
    FILE *f = fopen(path, "w");
    fclose(f);
    expect_open_error(path, "empty file");
}

static void test_missing_file(void **state)
{
    expect_open_error(tt_tmp_path("does-not-exist.pcap"), "No such file or directory");
}

static void test_directory(void **state)
{
    expect_open_error(tt_tmp_dir(), "is a directory");
}

static void test_unsupported_linktype(void **state)
{
    const char *path = tt_tmp_path("ppp.pcap");
    pcap_t *dead = pcap_open_dead(DLT_PPP, 65535);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    pcap_dump_close(d);
    pcap_close(dead);
    expect_open_error(path, "unsupported link type 9 (PPP)");
}

/* Packets that are not whole TCP segments are counted and skipped:
 * twelve (tt_pw_odd_packets), one not IP, two not TCP, two fragments,
 * seven damaged. Six of them (a fragment and five damaged) look like TCP
 * at the places analyze --jobs reads first (tt_packet_quick_owner). */
static void test_odd_packets_counted(void **state)
{
    const char *path = tt_tmp_path("odd.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_odd_packets(w, T0);
    tt_pw_close(w);

    collected c = {0};
    tt_pcap_stats st;
    char err[256];
    assert_int_equal(read_capture(path, &c, &st, err, sizeof err), 0);
    assert_int_equal(st.packets, 12);
    assert_int_equal(st.non_ip, 1);
    assert_int_equal(st.non_tcp, 2);
    assert_int_equal(st.fragments, 2);
    assert_int_equal(st.malformed, 7);
    assert_int_equal(st.tcp_segments, 0);
    assert_int_equal(c.conn_ids_seen, 0);
    collected_free(&c);
}

/* caplen < len: the captured part is delivered, the rest is a gap. */
static void test_snapped(void **state)
{
    const char *path = tt_tmp_path("snap.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    tt_pw_handshake(c, T0);
    tt_pw_snaplen(w, 14 + 20 + 20 + 6);
    tt_pw_send(c, TT_DIR_S2C, "0123456789abcdef", 16, T0 + 10);
    tt_pw_snaplen(w, 0);
    tt_pw_send(c, TT_DIR_S2C, "tail", 4, T0 + 20);
    tt_pw_close(w);
    collected col = {0};
    tt_pcap_stats st;
    char err[256];
    assert_int_equal(read_capture(path, &col, &st, err, sizeof err), 0);
    assert_string_equal(col.bytes[TT_DIR_S2C].s, "012345??????????tail");
    assert_int_equal(st.snapped, 1);
    assert_int_equal(col.gaps, 1);
    collected_free(&col);
}

typedef struct progress_log {
    int calls;
    uint64_t last_done, last_total;
    bool monotonic;
} progress_log;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    progress_log *p = ctx;
    if (done < p->last_done) p->monotonic = false;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
}

static void test_progress(void **state)
{
    const char *path = tt_tmp_path("big.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    tt_pw_handshake(c, T0);
    static char block[1400];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 3000; i++) tt_pw_send(c, TT_DIR_S2C, block, sizeof block, T0 + 1000 * (uint64_t)i);
    long long size = tt_pw_offset(w);
    tt_pw_close(w);

    char err[256];
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    collected col = {0};
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect, &col);
    progress_log pl = {.monotonic = true};
    assert_int_equal(tt_pcap_source_run(s, r, on_progress, &pl, err, sizeof err), 0);
    assert_true(pl.calls >= 4);
    assert_true(pl.monotonic);
    assert_int_equal(pl.last_done, (uint64_t)size);
    assert_int_equal(pl.last_total, (uint64_t)size);
    assert_int_equal(col.bytes[TT_DIR_S2C].len, 3000 * sizeof block);
    tt_reasm_free(r);
    tt_pcap_source_close(s);
    collected_free(&col);
}

/* Lost, reordered and retransmitted segments written with send_raw. */
static void test_loss_and_reorder_from_file(void **state)
{
    const char *path = tt_tmp_path("loss.pcap");
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    tt_pw_handshake(c, T0);
    tt_pw_send_raw(c, TT_DIR_S2C, 0, "aaaa", 4, T0 + 10, 0);
    tt_pw_send_raw(c, TT_DIR_S2C, 8, "cccc", 4, T0 + 20, 0);  /* [4,8) late */
    tt_pw_send_raw(c, TT_DIR_S2C, 4, "bbbb", 4, T0 + 30, 0);
    tt_pw_send_raw(c, TT_DIR_S2C, 4, "bbbb", 4, T0 + 31, 0);  /* duplicate */
    tt_pw_send_raw(c, TT_DIR_S2C, 16, "eeee", 4, T0 + 40, 0); /* [12,16) never seen */
    tt_pw_fin(c, TT_DIR_S2C, T0 + 50);
    tt_pw_fin(c, TT_DIR_C2S, T0 + 60); /* acknowledges everything, hole included */
    tt_pw_close(w);
    collected col = {0};
    char err[256];
    assert_int_equal(read_capture(path, &col, NULL, err, sizeof err), 0);
    assert_string_equal(col.bytes[TT_DIR_S2C].s, "aaaabbbbcccc????eeee");
    assert_int_equal(col.ts[TT_DIR_S2C][1], T0 + 30);
    assert_int_equal(col.ts[TT_DIR_S2C][2], T0 + 30);
    assert_int_equal(col.fins, 2);
    assert_int_equal(col.releases, 1);
    collected_free(&col);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ethernet),
        cmocka_unit_test(test_ethernet_vlan),
        cmocka_unit_test(test_ethernet_qinq),
        cmocka_unit_test(test_sll),
        cmocka_unit_test(test_sll2),
        cmocka_unit_test(test_null),
        cmocka_unit_test(test_null_swapped),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_raw),
        cmocka_unit_test(test_raw_v6),
        cmocka_unit_test(test_raw_openbsd),
        cmocka_unit_test(test_ipv4_linktype),
        cmocka_unit_test(test_ipv6_linktype),
        cmocka_unit_test(test_ipv6_ext_headers),
        cmocka_unit_test(test_tcp_options),
        cmocka_unit_test(test_microseconds),
        cmocka_unit_test(test_pcapng),
        cmocka_unit_test(test_pcapng_micro),
        cmocka_unit_test(test_pcapng_raw),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_mono_offset),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_truncated_pcapng),
        cmocka_unit_test(test_not_a_capture),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_unsupported_linktype),
        cmocka_unit_test(test_odd_packets_counted),
        cmocka_unit_test(test_snapped),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_loss_and_reorder_from_file),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
