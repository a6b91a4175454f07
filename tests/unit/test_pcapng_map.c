/* test_pcapng_map.c - the mapped pcapng reader against libpcap reading the
 * same bytes (the ground truth: every packet's timestamp in nanoseconds,
 * lengths and bytes), on files built here block by block in both byte
 * orders: several interfaces and resolutions, a timestamp offset, simple
 * and obsolete packet blocks, blocks to skip, a second section; then every
 * prefix of such a file and damaged files, where both must fail after the
 * same packets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcap/pcap.h>

#include "source/pcapng_map.h"

/* ---- a pcapng file built block by block ---- */

typedef struct builder {
    uint8_t buf[1 << 16];
    size_t len;
    bool swap; /* write in the other byte order */
} builder;

static void put(builder *b, const void *p, size_t n)
{
    assert_true(b->len + n <= sizeof b->buf);
    memcpy(b->buf + b->len, p, n);
    b->len += n;
}

static void put16(builder *b, uint16_t v)
{
    if (b->swap) v = __builtin_bswap16(v);
    put(b, &v, 2);
}

static void put32(builder *b, uint32_t v)
{
    if (b->swap) v = __builtin_bswap32(v);
    put(b, &v, 4);
}

static void put64(builder *b, uint64_t v)
{
    if (b->swap) v = __builtin_bswap64(v);
    put(b, &v, 8);
}

static void pad4(builder *b)
{
    static const uint8_t zero[4];
    put(b, zero, (4 - b->len % 4) % 4);
}

/* Open a block of type; close_block writes both lengths. */
static size_t open_block(builder *b, uint32_t type)
{
    size_t at = b->len;
    put32(b, type);
    put32(b, 0);
    return at;
}

static void close_block(builder *b, size_t at)
{
    pad4(b);
    uint32_t total = (uint32_t)(b->len - at + 4);
    put32(b, total);
    uint32_t v = b->swap ? __builtin_bswap32(total) : total;
    memcpy(b->buf + at + 4, &v, 4);
}

static void shb(builder *b)
{
    size_t at = open_block(b, 0x0A0D0D0A);
    put32(b, 0x1A2B3C4D);
    put16(b, 1);
    put16(b, 0);
    put64(b, UINT64_MAX); /* section length unknown */
    put16(b, 1);          /* opt_comment "hi" */
    put16(b, 2);
    put(b, "hi", 2);
    pad4(b);
    put16(b, 0);
    put16(b, 0);
    close_block(b, at);
}

/* An interface: tsresol (0xff: no option), tsoffset (0: no option). */
static void idb(builder *b, uint16_t linktype, uint32_t snaplen, uint8_t tsresol, int64_t tsoffset)
{
    size_t at = open_block(b, 1);
    put16(b, linktype);
    put16(b, 0);
    put32(b, snaplen);
    put16(b, 2); /* if_name */
    put16(b, 3);
    put(b, "lo0", 3);
    pad4(b);
    if (tsresol != 0xff) {
        put16(b, 9);
        put16(b, 1);
        put(b, &tsresol, 1);
        pad4(b);
    }
    if (tsoffset) {
        put16(b, 14);
        put16(b, 8);
        put64(b, (uint64_t)tsoffset);
    }
    put16(b, 0);
    put16(b, 0);
    close_block(b, at);
}

static void epb(builder *b, uint32_t iface, uint64_t ts, const char *data, uint32_t caplen, uint32_t len)
{
    size_t at = open_block(b, 6);
    put32(b, iface);
    put32(b, (uint32_t)(ts >> 32));
    put32(b, (uint32_t)ts);
    put32(b, caplen);
    put32(b, len);
    put(b, data, caplen);
    close_block(b, at);
}

static void pb(builder *b, uint16_t iface, uint64_t ts, const char *data, uint32_t caplen)
{
    size_t at = open_block(b, 2);
    put16(b, iface);
    put16(b, 0);
    put32(b, (uint32_t)(ts >> 32));
    put32(b, (uint32_t)ts);
    put32(b, caplen);
    put32(b, caplen);
    put(b, data, caplen);
    close_block(b, at);
}

static void spb(builder *b, const char *data, uint32_t len)
{
    size_t at = open_block(b, 3);
    put32(b, len);
    put(b, data, len);
    close_block(b, at);
}

static void other_block(builder *b, uint32_t type)
{
    size_t at = open_block(b, type);
    put32(b, 0xdeadbeef);
    put32(b, 0);
    close_block(b, at);
}

/* A file that uses every kind of block the reader knows. */
static void rich_file(builder *b, bool swap)
{
    memset(b, 0, sizeof *b);
    b->swap = swap;
    shb(b);
    idb(b, 1, 65535, 0xff, 0);         /* Ethernet, microseconds (no option) */
    idb(b, 1, 65535, 9, 0);            /* nanoseconds */
    idb(b, 1, 65535, 0x80 | 20, -3600); /* 2^-20 s, an hour back */
    epb(b, 0, 1700000000123456ull, "first packet", 12, 12);
    other_block(b, 4);                 /* name resolution: skipped */
    epb(b, 1, 1700000000123456789ull, "nano", 4, 60);
    epb(b, 2, ((uint64_t)1700000000 << 20) + 777777, "binary fraction", 15, 15);
    spb(b, "simple packet of interface zero", 31);
    pb(b, 1, 1700000001000000001ull, "obsolete", 8);
    other_block(b, 0x00000BAD);         /* custom: skipped */
    shb(b);                            /* a second section: interfaces start over */
    idb(b, 1, 65535, 3, 0);            /* milliseconds */
    epb(b, 0, 1700000002123ull, "second section", 14, 14);
    epb(b, 0, 1700000002124ull, "", 0, 0);
}

/* ---- the two readers ---- */

#define MAX_PKTS 64
typedef struct packets {
    size_t n;
    uint64_t ts[MAX_PKTS];
    uint32_t caplen[MAX_PKTS], len[MAX_PKTS];
    uint8_t data[MAX_PKTS][128];
    bool failed; /* the read ended in an error */
    bool opened;
} packets;

static void keep(packets *p, uint64_t ts, const uint8_t *data, uint32_t caplen, uint32_t len)
{
    assert_true(p->n < MAX_PKTS);
    p->ts[p->n] = ts;
    p->caplen[p->n] = caplen;
    p->len[p->n] = len;
    memcpy(p->data[p->n], data, caplen < 128 ? caplen : 128);
    p->n++;
}

static void read_libpcap(const uint8_t *bytes, size_t len, packets *out)
{
    memset(out, 0, sizeof *out);
    char path[] = "/tmp/tt_pcapng_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, len), (ssize_t)len);
    close(fd);
    char errbuf[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    unlink(path);
    if (!pc) return;
    out->opened = true;
    struct pcap_pkthdr *h;
    const u_char *d;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &d)) == 1)
        keep(out, (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec, d, h->caplen, h->len);
    out->failed = rc == PCAP_ERROR;
    if (getenv("TT_DEBUG") && out->failed) fprintf(stderr, "libpcap: %s\n", pcap_geterr(pc));
    pcap_close(pc);
}

static void read_mapped(const uint8_t *bytes, size_t len, packets *out)
{
    memset(out, 0, sizeof *out);
    static tt_pcapng_map m;
    if (!tt_pcapng_map_init(&m, bytes, len)) return;
    out->opened = true;
    tt_pcapng_packet pkt;
    char err[256] = "";
    int rc;
    while ((rc = tt_pcapng_map_next(&m, &pkt, err, sizeof err)) == 1) keep(out, pkt.ts_ns, pkt.data, pkt.caplen, pkt.len);
    out->failed = rc < 0;
    if (rc < 0) {
        assert_true(err[0] != 0);
        assert_null(strchr(err, '\n'));
    }
}

static void assert_same(const packets *truth, const packets *got)
{
    assert_int_equal(got->n, truth->n);
    for (size_t i = 0; i < truth->n; i++) {
        assert_int_equal(got->ts[i], truth->ts[i]);
        assert_int_equal(got->caplen[i], truth->caplen[i]);
        assert_int_equal(got->len[i], truth->len[i]);
        assert_memory_equal(got->data[i], truth->data[i], truth->caplen[i] < 128 ? truth->caplen[i] : 128);
    }
    assert_int_equal(got->failed, truth->failed);
}

static void check_against_libpcap(const builder *b)
{
    static packets truth, got;
    read_libpcap(b->buf, b->len, &truth);
    read_mapped(b->buf, b->len, &got);
    assert_true(truth.opened);
    assert_true(got.opened);
    assert_same(&truth, &got);
}

static void test_rich_native(void **state)
{
    static builder b;
    rich_file(&b, false);
    check_against_libpcap(&b);
    static packets got;
    read_mapped(b.buf, b.len, &got);
    assert_int_equal(got.n, 7);
    assert_false(got.failed);
    /* the hour back and the 2^-20 fraction, computed here by hand */
    assert_int_equal(got.ts[2], (1700000000ull - 3600) * 1000000000ull + 777777ull * 1000000000ull / (1u << 20));
    assert_int_equal(got.caplen[3], 31); /* simple packet: interface 0 snaps at 65535 */
    assert_int_equal(got.ts[3], 0);
}

static void test_rich_swapped(void **state)
{
    static builder b;
    rich_file(&b, true);
    check_against_libpcap(&b);
}

/* A simple packet longer than the interface's snap length is cut to it. */
static void test_simple_packet_snapped(void **state)
{
    static builder b;
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 8, 0xff, 0);
    spb(&b, "0123456789abcdef", 16);
    check_against_libpcap(&b);
}

/* Every prefix: both fail (or end) after the same packets. */
static void test_every_prefix(void **state)
{
    static builder b, cut;
    rich_file(&b, false);
    static packets truth, got;
    for (size_t n = 28; n < b.len; n++) {
        memcpy(&cut, &b, sizeof b);
        cut.len = n;
        read_libpcap(cut.buf, cut.len, &truth);
        if (!truth.opened) continue; /* libpcap refuses it at open: so does the source, before mapping */
        read_mapped(cut.buf, cut.len, &got);
        assert_true(got.opened);
        assert_int_equal(got.n, truth.n);
        assert_int_equal(got.failed, truth.failed);
    }
}

static void test_damaged(void **state)
{
    static builder b;
    static packets got;

    /* an interface of another snap length */
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 65535, 0xff, 0);
    epb(&b, 0, 1, "x", 1, 1);
    idb(&b, 1, 0, 0xff, 0);
    check_against_libpcap(&b);

    /* an interface of another link type */
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 65535, 0xff, 0);
    epb(&b, 0, 1, "x", 1, 1);
    idb(&b, 113, 65535, 0xff, 0);
    epb(&b, 1, 2, "y", 1, 1);
    check_against_libpcap(&b);
    read_mapped(b.buf, b.len, &got);
    assert_int_equal(got.n, 1);
    assert_true(got.failed);

    /* a packet of an interface not described */
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 65535, 0xff, 0);
    epb(&b, 3, 1, "x", 1, 1);
    check_against_libpcap(&b);

    /* the trailing length differs from the leading one */
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 65535, 0xff, 0);
    epb(&b, 0, 1, "abcd", 4, 4);
    b.buf[b.len - 4] ^= 4;
    check_against_libpcap(&b);

    /* a captured length past the block */
    memset(&b, 0, sizeof b);
    shb(&b);
    idb(&b, 1, 65535, 0xff, 0);
    size_t at = b.len;
    epb(&b, 0, 1, "abcd", 4, 4);
    uint32_t big = 400;
    memcpy(b.buf + at + 8 + 12, &big, 4);
    check_against_libpcap(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rich_native),
        cmocka_unit_test(test_rich_swapped),
        cmocka_unit_test(test_simple_packet_snapped),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
