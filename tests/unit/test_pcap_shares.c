/* test_pcap_shares.c - a capture file read in parts: through windows
 * that slide (reads of every size), cut short while read, in shares of its
 * connections (analyze --jobs) each walking the file, and in shares that
 * walk it once between them on their own threads (pcap_walk.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pcap/pcap.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcap_writer.h"
#include "tmp_dir.h"
#include "source/pcap_source.h"

#define T0 1700000000123456789ull

static int setup_dir(void **state)
{
    return tt_tmp_dir_make("tt_pcap_shares");
}

static int remove_dir(void **state)
{
    return tt_tmp_dir_remove();
}

/* Per connection (by its client port): the S2C bytes and the conn_id. */
typedef struct by_port {
    uint64_t conn_id[16];
    size_t s2c_bytes[16];
    int deliveries; /* DATA chunks seen, any connection */
} by_port;

static void collect_by_port(void *ctx, const tt_chunk *ch)
{
    by_port *b = ctx;
    unsigned k = ch->conn->client.port - 41000;
    assert_true(k < 16);
    if (b->conn_id[k]) assert_int_equal(b->conn_id[k], ch->conn->conn_id);
    b->conn_id[k] = ch->conn->conn_id;
    if (ch->kind == TT_CHUNK_DATA) {
        b->deliveries++;
        if (ch->dir == TT_DIR_S2C) b->s2c_bytes[k] += ch->len;
    }
}

/* Sixteen connections of link type lt, interleaved, the i-th answering
 * 100 + i bytes, over IPv6 with v6; with odd, tt_pw_odd_packets after the
 * handshakes. */
static void write_sixteen_as(const char *path, int lt, unsigned flags, bool odd, bool v6)
{
    tt_pw *w = tt_pw_open(path, lt, flags);
    assert_non_null(w);
    tt_pw_conn *c[16];
    char body[128];
    memset(body, 'x', sizeof body);
    for (int i = 0; i < 16; i++) {
        c[i] = v6 ? tt_pw_conn_new(w, "fd00::1", (uint16_t)(41000 + i), "fd00::2", 8000)
                  : tt_pw_conn_new(w, "10.0.0.1", (uint16_t)(41000 + i), "10.0.0.2", 8000);
        assert_non_null(c[i]);
        assert_int_equal(tt_pw_handshake(c[i], T0 + (uint64_t)i), 0);
    }
    if (odd) tt_pw_odd_packets(w, T0 + 500);
    for (int i = 0; i < 16; i++) assert_int_equal(tt_pw_send(c[i], TT_DIR_S2C, body, 100 + (size_t)i, T0 + 1000 + (uint64_t)i), 0);
    for (int i = 0; i < 16; i++) assert_int_equal(tt_pw_fin(c[i], TT_DIR_S2C, T0 + 2000 + (uint64_t)i), 0);
    assert_int_equal(tt_pw_close(w), 0);
}

static void write_sixteen(const char *path, unsigned flags, bool odd)
{
    write_sixteen_as(path, DLT_EN10MB, flags, odd, false);
}

/* analyze --jobs: three shares of one file, each read on its own (in turn
 * here), deliver every connection exactly once, with the bytes the whole
 * read gives it and, as conn_id, the index of its first packet (which the
 * merge of analyze --jobs orders by); each share walks every packet. */
static void shares_of(const char *name, unsigned flags, bool odd)
{
    const char *path = tt_tmp_path(name);
    write_sixteen(path, flags, odd);
    char err[256] = "";
    by_port whole = {0};
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, &whole);
    assert_int_equal(tt_pcap_source_run(s, r, NULL, NULL, err, sizeof err), 0);
    tt_pcap_stats whole_stats = *tt_pcap_source_stats(s);
    uint64_t packets = whole_stats.packets;
    tt_reasm_free(r);
    tt_pcap_source_close(s);

    s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    assert_true(tt_pcap_source_shareable(s));
    assert_null(tt_pcap_source_share(s, 0, 3)); /* share 0 is s's own */
    assert_null(tt_pcap_source_share(s, 3, 3));
    assert_null(tt_pcap_source_share(s, 1, 1));
    tt_pcap_source *src[3] = {s, tt_pcap_source_share(s, 1, 3), tt_pcap_source_share(s, 2, 3)};
    assert_non_null(src[1]);
    assert_non_null(src[2]);
    by_port part[3];
    memset(part, 0, sizeof part);
    int total = 0;
    for (int k = 2; k >= 0; k--) { /* the shares first: they need nothing of s's reading */
        r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, &part[k]);
        assert_int_equal(tt_pcap_source_run(src[k], r, NULL, NULL, err, sizeof err), 0);
        assert_int_equal(tt_pcap_source_stats(src[k])->packets, packets);
        tt_reasm_free(r);
        total += part[k].deliveries;
    }
    assert_int_equal(total, whole.deliveries);
    for (int i = 0; i < 16; i++) {
        int owners = 0;
        for (int k = 0; k < 3; k++) {
            if (!part[k].conn_id[i]) continue;
            owners++;
            assert_int_equal(part[k].conn_id[i], 3 * i + 1); /* the index of its SYN: three handshake packets each */
            assert_int_equal(part[k].s2c_bytes[i], 100 + i);
        }
        assert_int_equal(owners, 1);
    }
    for (int k = 0; k < 3; k++) assert_true(part[k].deliveries > 0); /* sixteen connections: none empty */
    assert_null(tt_pcap_source_share(s, 1, 3)); /* s has been read */
    /* each packet's class counted by one reader: the sum is the whole's */
    tt_pcap_source_absorb_share(s, src[1]);
    tt_pcap_source_absorb_share(s, src[2]);
    const tt_pcap_stats *merged = tt_pcap_source_stats(s);
    assert_int_equal(merged->packets, whole_stats.packets);
    assert_int_equal(merged->bytes, whole_stats.bytes);
    assert_int_equal(merged->tcp_segments, whole_stats.tcp_segments);
    assert_int_equal(merged->non_ip, whole_stats.non_ip);
    assert_int_equal(merged->non_tcp, whole_stats.non_tcp);
    assert_int_equal(merged->fragments, whole_stats.fragments);
    assert_int_equal(merged->malformed, whole_stats.malformed);
    assert_int_equal(merged->first_ns, whole_stats.first_ns);
    assert_int_equal(merged->last_ns, whole_stats.last_ns);
    if (odd) assert_int_equal(whole_stats.malformed, 7);
    tt_pcap_source_close(src[2]);
    tt_pcap_source_close(src[1]);
    tt_pcap_source_close(s);
}

static void test_shares_pcap(void **state) { shares_of("shares.pcap", 0, false); }
static void test_shares_pcapng(void **state) { shares_of("shares.pcapng", TT_PW_PCAPNG, false); }
static void test_shares_odd_packets(void **state) { shares_of("shares-odd.pcap", 0, true); }

/* A file read through libpcap (here: a pipe, not a regular file) has no shares. */
static void test_shares_need_tokentaps_reader(void **state)
{
    const char *path = tt_tmp_path("piped.pcap");
    write_sixteen(path, 0, false);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fileno(p));
    char err[256] = "";
    tt_pcap_source *s = tt_pcap_source_open(dev, err, sizeof err);
    assert_non_null(s);
    assert_false(tt_pcap_source_shareable(s));
    assert_null(tt_pcap_source_share(s, 1, 2));
    tt_pcap_source_close(s);
    pclose(p);
}

/* Read path through the source with reads of at most chunk bytes (0:
 * whole windows) into per-connection results and the stats. */
static void read_chunked(const char *path, size_t chunk, by_port *out, tt_pcap_stats *st)
{
    char err[256] = "";
    memset(out, 0, sizeof *out);
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    assert_true(tt_pcap_source_shareable(s));
    tt_pcap_source_set_read_chunk(s, chunk);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, out);
    assert_int_equal(tt_pcap_source_run(s, r, NULL, NULL, err, sizeof err), 0);
    *st = *tt_pcap_source_stats(s);
    tt_reasm_free(r);
    tt_pcap_source_close(s);
}

/* The file is read through a window that slides: reads of every size
 * from 1 to 300 bytes put its edges at every offset of records and
 * blocks, and give what whole windows give. */
static void window_edges(const char *name, unsigned flags)
{
    const char *path = tt_tmp_path(name);
    write_sixteen(path, flags, false);
    by_port whole, part;
    tt_pcap_stats st_whole, st;
    read_chunked(path, 0, &whole, &st_whole);
    assert_int_equal(st_whole.packets, 16 * 5);
    for (size_t chunk = 1; chunk <= 300; chunk++) {
        read_chunked(path, chunk, &part, &st);
        assert_int_equal(st.packets, st_whole.packets);
        assert_int_equal(st.tcp_segments, st_whole.tcp_segments);
        assert_int_equal(st.first_ns, st_whole.first_ns);
        assert_int_equal(st.last_ns, st_whole.last_ns);
        assert_int_equal(part.deliveries, whole.deliveries);
        for (int i = 0; i < 16; i++) {
            assert_int_equal(part.s2c_bytes[i], 100 + i);
            assert_int_equal(part.conn_id[i], whole.conn_id[i]);
        }
    }
}

static void test_window_edges_pcap(void **state) { window_edges("edges.pcap", 0); }
static void test_window_edges_pcapng(void **state) { window_edges("edges.pcapng", TT_PW_PCAPNG); }

/* One connection answering LONG_SENDS segments of LONG_BODY bytes: past
 * the first window (and chunk) of 256 KiB. */
enum { LONG_SENDS = 4000, LONG_BODY = 100 };

static void write_long_connection(const char *path)
{
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 41000, "10.0.0.2", 8000);
    assert_int_equal(tt_pw_handshake(c, T0), 0);
    char body[LONG_BODY];
    memset(body, 'x', sizeof body);
    for (int i = 0; i < LONG_SENDS; i++)
        assert_int_equal(tt_pw_send(c, TT_DIR_S2C, body, sizeof body, T0 + 10 + (uint64_t)i), 0);
    assert_int_equal(tt_pw_close(w), 0);
}

/* A file cut short after it was opened (read here with the size it had at
 * open): a one-line error after the packets read, never a wrong record. */
static void test_shrunk_while_read(void **state)
{
    const char *path = tt_tmp_path("shrunk.pcap");
    write_long_connection(path);
    char err[256] = "";
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(truncate(path, 300 << 10), 0);
    by_port got;
    memset(&got, 0, sizeof got);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, &got);
    assert_int_equal(tt_pcap_source_run(s, r, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read the capture after "));
    assert_non_null(strstr(err, "it got shorter while read"));
    assert_null(strchr(err, '\n'));
    uint64_t packets = tt_pcap_source_stats(s)->packets;
    assert_true(packets > 1000 && packets < LONG_SENDS + 3);
    assert_int_equal(got.s2c_bytes[0], (packets - 3) * LONG_BODY); /* every whole record read, none made up */
    tt_reasm_free(r);
    tt_pcap_source_close(s);
}

/* One reader of a shared walk, on its own thread. */
typedef struct walk_reader {
    tt_pcap_source *src;
    by_port got;
    int rc;
    char err[256];
} walk_reader;

static void *walk_reader_main(void *arg)
{
    walk_reader *rd = arg;
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, &rd->got);
    rd->rc = r ? tt_pcap_source_run(rd->src, r, NULL, NULL, rd->err, sizeof rd->err) : -9;
    tt_reasm_free(r);
    return NULL;
}

/* What one reader of the whole file gets: results, stats, and the run's
 * return and error line. */
typedef struct whole_read {
    by_port got;
    tt_pcap_stats stats;
    int rc;
    char err[256];
} whole_read;

/* A clock the readers put the capture's instants on (NULL: the capture's own). */
typedef struct walk_clock {
    int64_t offset_ns;
    bool map;
    double d0_ns, skew;
    int64_t t0_ns;
} walk_clock;

static void set_clock(tt_pcap_source *s, const walk_clock *clock)
{
    if (!clock) return;
    tt_pcap_source_set_mono_offset(s, clock->offset_ns);
    if (clock->map) tt_pcap_source_set_clock_map(s, clock->d0_ns, clock->skew, clock->t0_ns);
}

static void read_whole(const char *path, const walk_clock *clock, whole_read *out)
{
    memset(out, 0, sizeof *out);
    tt_pcap_source *s = tt_pcap_source_open(path, out->err, sizeof out->err);
    assert_non_null(s);
    set_clock(s, clock);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, collect_by_port, &out->got);
    out->rc = tt_pcap_source_run(s, r, NULL, NULL, out->err, sizeof out->err);
    out->stats = *tt_pcap_source_stats(s);
    tt_reasm_free(r);
    tt_pcap_source_close(s);
}

/* path read by `shares` readers on their own threads walking it once
 * between them in chunks of chunk bytes (0: the default) gives what one
 * reader of the whole file gives: every connection once, its bytes and
 * conn_id; the same stats once the shares' are added; the same return
 * and error line in every reader. */
static void walk_together_on(const char *path, unsigned shares, size_t chunk, const walk_clock *clock)
{
    whole_read whole;
    read_whole(path, clock, &whole);
    char err[256] = "";
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    set_clock(s, clock);
    tt_pcap_source_set_read_chunk(s, chunk);
    walk_reader rd[4];
    memset(rd, 0, sizeof rd);
    assert_true(shares >= 2 && shares <= 4);
    rd[0].src = s;
    tt_pcap_source *others[3];
    for (unsigned k = 1; k < shares; k++) {
        others[k - 1] = rd[k].src = tt_pcap_source_share(s, k, shares);
        assert_non_null(rd[k].src);
    }
    assert_int_equal(tt_pcap_source_walk_together(s, others, shares - 2), -1); /* not every share */
    assert_int_equal(tt_pcap_source_walk_together(s, others, shares - 1), 0);
    assert_int_equal(tt_pcap_source_walk_together(s, others, shares - 1), -1); /* already */
    pthread_t th[4];
    for (unsigned k = 0; k < shares; k++) assert_int_equal(pthread_create(&th[k], NULL, walk_reader_main, &rd[k]), 0);
    for (unsigned k = 0; k < shares; k++) pthread_join(th[k], NULL);
    int deliveries = 0;
    for (unsigned k = 0; k < shares; k++) {
        assert_int_equal(rd[k].rc, whole.rc);
        if (whole.rc) assert_string_equal(rd[k].err, whole.err);
        assert_int_equal(tt_pcap_source_stats(rd[k].src)->packets, whole.stats.packets);
        deliveries += rd[k].got.deliveries;
    }
    assert_int_equal(deliveries, whole.got.deliveries);
    for (int i = 0; i < 16; i++) {
        int owners = 0;
        for (unsigned k = 0; k < shares; k++) {
            if (!rd[k].got.conn_id[i]) continue;
            owners++;
            assert_int_equal(rd[k].got.conn_id[i], whole.got.conn_id[i] ? 3 * i + 1 : 0);
            assert_int_equal(rd[k].got.s2c_bytes[i], whole.got.s2c_bytes[i]);
        }
        assert_int_equal(owners, whole.got.conn_id[i] ? 1 : 0);
    }
    for (unsigned k = 1; k < shares; k++) tt_pcap_source_absorb_share(s, rd[k].src);
    const tt_pcap_stats *merged = tt_pcap_source_stats(s);
    assert_int_equal(merged->packets, whole.stats.packets);
    assert_int_equal(merged->bytes, whole.stats.bytes);
    assert_int_equal(merged->snapped, whole.stats.snapped);
    assert_int_equal(merged->tcp_segments, whole.stats.tcp_segments);
    assert_int_equal(merged->non_ip, whole.stats.non_ip);
    assert_int_equal(merged->non_tcp, whole.stats.non_tcp);
    assert_int_equal(merged->fragments, whole.stats.fragments);
    assert_int_equal(merged->malformed, whole.stats.malformed);
    assert_int_equal(merged->first_ns, whole.stats.first_ns);
    assert_int_equal(merged->last_ns, whole.stats.last_ns);
    for (unsigned k = shares; k-- > 1;) tt_pcap_source_close(rd[k].src);
    tt_pcap_source_close(s);
}

static void walk_together_matches(const char *path, unsigned shares, size_t chunk)
{
    walk_together_on(path, shares, chunk, NULL);
}

/* Chunks of every size from 1 byte (a record larger than each chunk: the
 * chunk grows to hold it) to past the file, many more chunks than the walk
 * keeps slots for (readers wait for each other), 2 to 4 readers. */
static void walk_together_sizes(const char *name, unsigned flags, bool odd)
{
    const char *path = tt_tmp_path(name);
    write_sixteen(path, flags, odd);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", path);
    for (size_t chunk = 1; chunk <= 200; chunk += 7) walk_together_matches(copy, 2 + chunk % 3, chunk);
    walk_together_matches(copy, 2, 0);
    walk_together_matches(copy, 4, 1 << 20);
}

static void test_walk_together_pcap(void **state) { walk_together_sizes("walk.pcap", 0, false); }
static void test_walk_together_pcapng(void **state) { walk_together_sizes("walk.pcapng", TT_PW_PCAPNG, false); }
static void test_walk_together_odd_packets(void **state) { walk_together_sizes("walk-odd.pcap", 0, true); }

/* Records as large as a walk's chunk (256 KiB of frame, past the chunk
 * with their headers) between the connections' packets: the slot that
 * holds one takes a buffer of its own and later gives it back, and the
 * readers still get what one reader of the whole file gets. */
static void test_walk_together_jumbo(void **state)
{
    const char *path = tt_tmp_path("walk-jumbo.pcap");
    enum { JUMBO = 256 << 10 };
    uint8_t *jumbo = calloc(1, JUMBO);
    assert_non_null(jumbo);
    jumbo[12] = 0x88, jumbo[13] = 0xb5; /* a local experimental ethertype: not IP */
    tt_pw *w = tt_pw_open(path, DLT_EN10MB, 0);
    assert_non_null(w);
    tt_pw_conn *c[16];
    char body[128];
    memset(body, 'x', sizeof body);
    for (int i = 0; i < 16; i++) { /* the handshakes first: conn_id is the SYN's index, 3 i + 1 */
        c[i] = tt_pw_conn_new(w, "10.0.0.1", (uint16_t)(41000 + i), "10.0.0.2", 8000);
        assert_int_equal(tt_pw_handshake(c[i], T0 + (uint64_t)i), 0);
    }
    for (int i = 0; i < 4; i++) assert_int_equal(tt_pw_frame(w, T0 + 100 + (uint64_t)i, jumbo, JUMBO, JUMBO), 0);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(tt_pw_send(c[i], TT_DIR_S2C, body, 100 + (size_t)i, T0 + 1000 + (uint64_t)i), 0);
        if (i % 7 == 3) assert_int_equal(tt_pw_frame(w, T0 + 1100 + (uint64_t)i, jumbo, JUMBO, JUMBO), 0);
    }
    for (int i = 0; i < 16; i++) assert_int_equal(tt_pw_fin(c[i], TT_DIR_S2C, T0 + 2000 + (uint64_t)i), 0);
    assert_int_equal(tt_pw_close(w), 0);
    free(jumbo);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", path);
    whole_read whole;
    read_whole(copy, NULL, &whole);
    assert_int_equal(whole.rc, 0);
    assert_int_equal(whole.stats.non_ip, 6);
    walk_together_matches(copy, 2, 0);
    walk_together_matches(copy, 3, 0);
    walk_together_matches(copy, 2, 300 << 10);
    walk_together_matches(copy, 4, 100 << 10);
}

/* A classic pcap file written in this machine's byte order, rewritten
 * in the other: its header's fields and every record header's. */
static void swap_byte_order(const char *path)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    uint8_t h[24];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    static const int fields[][2] = {{0, 4}, {4, 2}, {6, 2}, {8, 4}, {12, 4}, {16, 4}, {20, 4}};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        for (int a = fields[i][0], b = a + fields[i][1] - 1; a < b; a++, b--) {
            uint8_t t = h[a];
            h[a] = h[b];
            h[b] = t;
        }
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    for (long pos = 24;;) {
        uint32_t rec[4];
        assert_int_equal(fseek(f, pos, SEEK_SET), 0);
        if (fread(rec, 1, sizeof rec, f) != sizeof rec) break;
        uint32_t caplen = rec[2];
        for (int i = 0; i < 4; i++) rec[i] = __builtin_bswap32(rec[i]);
        assert_int_equal(fseek(f, pos, SEEK_SET), 0);
        assert_int_equal(fwrite(rec, 1, sizeof rec, f), sizeof rec);
        pos += 16 + (long)caplen;
    }
    fclose(f);
}

/* The walk reads the common capture (Ethernet, IPv4, this machine's byte
 * order, no clock to map) in a loop of its own: every other kind gives
 * what one reader of the whole file gives too, chunks of every size from
 * one record on. */
static void test_walk_together_formats(void **state)
{
    static const struct {
        const char *name;
        int lt;
        unsigned flags;
        bool v6, odd, swap;
    } files[] = {
        {"walk-v6.pcap", DLT_EN10MB, 0, true, true, false},
        {"walk-v6-ext.pcap", DLT_EN10MB, TT_PW_V6_EXTHDR, true, false, false},
        {"walk-vlan.pcap", DLT_EN10MB, TT_PW_VLAN, false, false, false},
        {"walk-sll2.pcap", DLT_LINUX_SLL2, 0, false, false, false},
        {"walk-sll2-v6.pcap", DLT_LINUX_SLL2, 0, true, false, false},
        {"walk-micro.pcap", DLT_EN10MB, TT_PW_MICRO, false, true, false},
        {"walk-swapped.pcap", DLT_EN10MB, 0, false, true, true},
        {"walk-swapped-micro.pcap", DLT_EN10MB, TT_PW_MICRO, true, false, true},
    };
    static const walk_clock offset = {.offset_ns = 1234567};
    static const walk_clock mapped = {.offset_ns = -5000, .map = true, .d0_ns = 250.5, .skew = 3e-5, .t0_ns = 1700000000000000000};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        const char *path = tt_tmp_path(files[i].name);
        write_sixteen_as(path, files[i].lt, files[i].flags, files[i].odd, files[i].v6);
        if (files[i].swap) swap_byte_order(path);
        char copy[256];
        snprintf(copy, sizeof copy, "%s", path);
        for (size_t chunk = 1; chunk <= 400; chunk += 57) {
            walk_together_on(copy, 2 + chunk % 3, chunk, NULL);
            walk_together_on(copy, 2, chunk, &offset);
            walk_together_on(copy, 3, chunk, &mapped);
        }
        walk_together_on(copy, 2, 0, &mapped);
    }
}

/* A file damaged part way (a last record cut short, a record that claims
 * more than any record may): every reader of the shared walk stops where
 * one reader of the whole file stops, with its line and its counts. */
static void walk_together_damaged(const char *name, unsigned flags, bool claim)
{
    const char *path = tt_tmp_path(name);
    write_sixteen(path, flags, false);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    if (claim) { /* the caplen of the record that starts 0x400 bytes before the end: found by walking */
        uint8_t hdr[16];
        long pos = 24, last = 0;
        while (pos < size - 0x400) {
            assert_int_equal(fseek(f, pos, SEEK_SET), 0);
            assert_int_equal(fread(hdr, 1, 16, f), 16);
            uint32_t caplen;
            memcpy(&caplen, hdr + 8, 4);
            last = pos;
            pos += 16 + (long)caplen;
        }
        uint32_t huge = 0x7fffffff;
        assert_int_equal(fseek(f, last + 8, SEEK_SET), 0);
        assert_int_equal(fwrite(&huge, 4, 1, f), 1);
    }
    fclose(f);
    if (!claim) assert_int_equal(truncate(path, size - 30), 0);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", path);
    whole_read whole;
    read_whole(copy, NULL, &whole);
    assert_int_equal(whole.rc, -1);
    assert_non_null(strstr(whole.err, claim ? "damaged capture after" : "truncated capture after"));
    for (size_t chunk = 0; chunk <= 300; chunk += 60) walk_together_matches(copy, 2, chunk);
}

static void test_walk_together_truncated(void **state) { walk_together_damaged("cut.pcap", 0, false); }
static void test_walk_together_truncated_pcapng(void **state) { walk_together_damaged("cut.pcapng", TT_PW_PCAPNG, false); }
static void test_walk_together_bad_claim(void **state) { walk_together_damaged("claim.pcap", 0, true); }

/* The file cut short after the shared walk began: a one-line error after
 * the packets read whole, as one reader of the whole file gives it. */
static void test_walk_together_shrunk(void **state)
{
    const char *path = tt_tmp_path("walk-shrunk.pcap");
    write_long_connection(path);
    char err[256] = "";
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    assert_non_null(s);
    walk_reader rd[2];
    memset(rd, 0, sizeof rd);
    rd[0].src = s;
    rd[1].src = tt_pcap_source_share(s, 1, 2);
    assert_non_null(rd[1].src);
    assert_int_equal(tt_pcap_source_walk_together(s, &rd[1].src, 1), 0);
    assert_int_equal(truncate(path, 300 << 10), 0);
    pthread_t th[2];
    for (int k = 0; k < 2; k++) assert_int_equal(pthread_create(&th[k], NULL, walk_reader_main, &rd[k]), 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    whole_read whole;
    read_whole(path, NULL, &whole); /* the file as it is now */
    uint64_t packets = tt_pcap_source_stats(s)->packets;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rd[k].rc, -1);
        assert_non_null(strstr(rd[k].err, "cannot read the capture after "));
        assert_non_null(strstr(rd[k].err, "it got shorter while read"));
        assert_null(strchr(rd[k].err, '\n'));
        assert_int_equal(tt_pcap_source_stats(rd[k].src)->packets, packets);
    }
    assert_int_equal(packets, whole.stats.packets); /* every record read whole, none made up */
    assert_int_equal(rd[0].got.s2c_bytes[0] + rd[1].got.s2c_bytes[0], (packets - 3) * LONG_BODY);
    tt_pcap_source_close(rd[1].src);
    tt_pcap_source_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_edges_pcap),
        cmocka_unit_test(test_shrunk_while_read),
        cmocka_unit_test(test_window_edges_pcapng),
        cmocka_unit_test(test_shares_pcap),
        cmocka_unit_test(test_shares_pcapng),
        cmocka_unit_test(test_shares_odd_packets),
        cmocka_unit_test(test_shares_need_tokentaps_reader),
        cmocka_unit_test(test_walk_together_pcap),
        cmocka_unit_test(test_walk_together_pcapng),
        cmocka_unit_test(test_walk_together_odd_packets),
        cmocka_unit_test(test_walk_together_formats),
        cmocka_unit_test(test_walk_together_jumbo),
        cmocka_unit_test(test_walk_together_truncated),
        cmocka_unit_test(test_walk_together_truncated_pcapng),
        cmocka_unit_test(test_walk_together_bad_claim),
        cmocka_unit_test(test_walk_together_shrunk),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
