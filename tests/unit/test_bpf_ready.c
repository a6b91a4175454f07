/* test_bpf_ready.c - socktap's kernel-side marks -> the reader, without
 * the kernel: READY records (the instant a socket's bytes became readable,
 * tt_sk_data_ready) placed on the stream by TCP sequence, folded into reads
 * as marks, refused when their offsets make no sense, and the TCP sequence
 * base of sends (connect and accept records carrying it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/socktap.h"
#include "socktap_recs.h"
#include "source/bpf_source.h"

static struct tt_socktap_mark mark_of(uint64_t ns, uint32_t end_seq, uint32_t len, bool from_start)
{
    return (struct tt_socktap_mark){.ns = ns, .end_seq = end_seq, .len = from_start ? TT_SOCKTAP_MARK_FROM_START : len};
}

/* A READY record of sock carrying one mark. */
static size_t make_ready(uint8_t *buf, uint64_t sock, uint64_t ns, uint32_t end_seq, uint32_t len, bool from_start)
{
    struct tt_socktap_event ev = {0};
    ev.kind = TT_SOCKTAP_KIND_READY;
    ev.dir = TT_SOCKTAP_DIR_RECV;
    ev.ts_ns = ns;
    ev.sock_id = sock;
    ev.fd = -1;
    ev.family = 2;
    ev.lport = 8000;
    ev.rport = 40000;
    ev.laddr[0] = 127, ev.laddr[3] = 1;
    ev.raddr[0] = 127, ev.raddr[3] = 1;
    ev.marks = 1;
    struct tt_socktap_mark m = mark_of(ns, end_seq, len, from_start);
    memcpy(buf, &ev, sizeof ev);
    memcpy(buf + sizeof ev, &m, sizeof m);
    return sizeof ev + sizeof m;
}

/* Append n marks to the record in buf (n bytes long), after its data from
 * the data's next 8-byte boundary, as the kernel does; the new length. */
static size_t add_marks(uint8_t *buf, size_t n, const struct tt_socktap_mark *marks, uint32_t count)
{
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    size_t at = sizeof ev + ((ev.copied + 7u) & ~7u);
    memset(buf + n, 0xee, at - n); /* the kernel zeroes these; nobody may read them */
    memcpy(buf + at, marks, count * sizeof *marks);
    ev.marks = count;
    memcpy(buf, &ev, sizeof ev);
    return at + count * sizeof *marks;
}

static size_t make_seq_rec(uint8_t *buf, uint8_t dir, int32_t fd, uint64_t sock, uint64_t ns, const char *data,
                           uint32_t seq)
{
    size_t n = socktap_rec(buf, dir, fd, sock, ns, data, 0, 0, TT_SOCKTAP_F_SEQ, 0);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.seq = seq;
    memcpy(buf, &ev, sizeof ev);
    return n;
}

/* s's counts of the kernel's marks: read, placed, not placed, repeats. */
static void assert_ready_counts(const tt_bpf_source *s, uint64_t records, uint64_t marks, uint64_t unplaced,
                                uint64_t repeats)
{
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.ready_records, records);
    assert_int_equal(st.ready_marks, marks);
    assert_int_equal(st.ready_unplaced, unplaced);
    assert_int_equal(st.ready_repeats, repeats);
}

/* READY records become TT_CHUNK_READY on the receive direction, placed by
 * sequence number: held until a read tells the sequence numbers, adopted
 * from before the accept (orphans), wrapping past 2^32, a refused one
 * leaving a hole, the stale marks of an earlier socket at the same address
 * dropped, a stale connection at a reused address passed over, and
 * nonsense refused. */
static void test_ready_marks(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    const uint32_t isn = 0xfffffff0u; /* the request's bytes wrap the sequence space */
    /* a stale mark of an earlier socket at this address, then this socket's
     * first (the request arrived before accept returned) */
    size_t n = make_ready(buf, 0x77, 10, 12345, 0, true);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = make_ready(buf, 0x77, 50, isn + 10, 0, true);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 5, 0x77, 60);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = make_ready(buf, 0x77, 70, isn + 16, 6, false);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 0); /* held: the sequence numbers are not known yet */
    n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 80, "GET / HTTP/1.1\r\n", isn);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 3);
    assert_int_equal(srv.items[0].kind, TT_CHUNK_READY);
    assert_int_equal(srv.items[0].dir, TT_DIR_C2S);
    assert_int_equal(srv.items[0].offset, 0);
    assert_int_equal(srv.items[0].len, 10);
    assert_int_equal(srv.items[0].mono_ns, 50);
    assert_int_equal(srv.items[1].kind, TT_CHUNK_READY);
    assert_int_equal(srv.items[1].offset, 10);
    assert_int_equal(srv.items[1].len, 6);
    assert_int_equal(srv.items[1].mono_ns, 70);
    assert_int_equal(srv.items[2].kind, TT_CHUNK_DATA);
    /* the connection carries the read's sequence numbers from its first data on */
    assert_true(srv.items[2].seq_known);
    assert_int_equal(srv.items[2].seq_base, isn);
    /* known now: the next mark goes out at once; one refused by the ring
     * (16..20 never said) leaves its bytes out: the next starts at 20 */
    n = make_ready(buf, 0x77, 90, isn + 30, 10, false);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 4);
    assert_int_equal(srv.items[3].offset, 20);
    assert_int_equal(srv.items[3].len, 10);
    /* a mark far past anything read is not believed */
    n = make_ready(buf, 0x77, 95, isn + 30 + (200u << 20), 5, false);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 4);
    /* a READY on the send direction, one without marks, or one whose marks
     * run past the record, is bad */
    n = make_ready(buf, 0x77, 96, 1, 1, false);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.dir = TT_SOCKTAP_DIR_SEND;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    ev.dir = TT_SOCKTAP_DIR_RECV;
    ev.marks = 0;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    ev.marks = 2;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    assert_int_equal(tt_bpf_source_feed(s, buf, n + sizeof(struct tt_socktap_mark) - 1), -1);
    /* A process that exited without close() leaves its connection on sock
     * 0x88; the kernel gives that address to a new socket (another
     * 4-tuple), accepted on fd 7: its marks are its own, not the stale one's. */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CONNECT, 9, 0x88, 100);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    size_t before = srv.n;
    n = make_ready(buf, 0x88, 110, 7010, 0, true);
    memcpy(&ev, buf, sizeof ev);
    ev.rport = 40001; /* the new socket's peer */
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 7, 0x88, 120);
    memcpy(&ev, buf, sizeof ev);
    ev.rport = 40001;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 7, 0x88, 130, "GET / HTTP/1.1\r\n", 7000);
    memcpy(&ev, buf, sizeof ev);
    ev.rport = 40001;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, before + 2); /* the mark, then the data, on the accepted connection */
    assert_int_equal(srv.items[before].kind, TT_CHUNK_READY);
    assert_int_equal(srv.items[before].client_port, 40001);
    assert_int_equal(srv.items[before].offset, 0);
    assert_int_equal(srv.items[before].len, 10);
    assert_ready_counts(s, 6, 4, 2, 0); /* unplaced: the stale orphan, the unbelievable mark */
    tt_bpf_source_free(s);
}

/* Marks folded into the DATA records of their socket (the kernel holds
 * them for its next read): taken before the record's data, whatever the
 * data's length (the marks start at its next 8-byte boundary); a mark
 * sent twice (two readers) dropped as a repeat; marks on a record that may
 * not carry them, too many, or past the record's end, refused. Every read
 * split at each byte gives the same chunks. */
static void test_ready_marks_in_reads(void **state)
{
    const char *request = "GET /v1/completions HTTP/1.1\r\n\r\n";
    size_t len = strlen(request);
    for (size_t split = 1; split < len; split++) {
        log_ctx srv = {0};
        tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
        assert_non_null(s);
        uint8_t buf[512];
        size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 5, 0x77, 10);
        assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
        const uint32_t isn = 1000;
        char first[64], second[64];
        memcpy(first, request, split);
        first[split] = 0;
        snprintf(second, sizeof second, "%s", request + split);
        /* the first read carries the mark of its bytes, from the start */
        struct tt_socktap_mark m1[1] = {mark_of(20, isn + (uint32_t)split, 0, true)};
        n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 30, first, isn);
        n = add_marks(buf, n, m1, 1);
        assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
        /* the second read carries that mark again (a second reader took it
         * too) and the mark of its own bytes */
        struct tt_socktap_mark m2[2] = {m1[0], mark_of(40, isn + (uint32_t)len, (uint32_t)(len - split), false)};
        n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 50, second, isn + (uint32_t)split);
        n = add_marks(buf, n, m2, 2);
        assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
        assert_int_equal(srv.n, 4);
        assert_int_equal(srv.items[0].kind, TT_CHUNK_READY);
        assert_int_equal(srv.items[0].offset, 0);
        assert_int_equal(srv.items[0].len, split);
        assert_int_equal(srv.items[0].mono_ns, 20);
        assert_int_equal(srv.items[1].kind, TT_CHUNK_DATA);
        assert_int_equal(srv.items[1].len, split);
        assert_int_equal(srv.items[2].kind, TT_CHUNK_READY);
        assert_int_equal(srv.items[2].offset, split);
        assert_int_equal(srv.items[2].len, len - split);
        assert_int_equal(srv.items[2].mono_ns, 40);
        assert_int_equal(srv.items[3].kind, TT_CHUNK_DATA);
        assert_int_equal(srv.items[3].offset, split);
        /* refused: more marks than a record may carry; a mark cut short;
         * marks on a close */
        struct tt_socktap_mark many[TT_SOCKTAP_MAX_MARKS + 1];
        for (uint32_t i = 0; i <= TT_SOCKTAP_MAX_MARKS; i++) many[i] = mark_of(60 + i, isn + (uint32_t)len + i + 1, 1, false);
        n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 70, "x", isn + (uint32_t)len);
        size_t too_many = add_marks(buf, n, many, TT_SOCKTAP_MAX_MARKS + 1);
        assert_int_equal(tt_bpf_source_feed(s, buf, too_many), -1);
        n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 70, "x", isn + (uint32_t)len);
        n = add_marks(buf, n, many, 1);
        assert_int_equal(tt_bpf_source_feed(s, buf, n - 1), -1);
        n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 5, 0x77, 80);
        n = add_marks(buf, n, many, 1);
        assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
        assert_int_equal(srv.n, 4);
        assert_ready_counts(s, 3, 2, 0, 1);
        tt_bpf_stats st;
        tt_bpf_source_stats(s, &st);
        assert_int_equal(st.bad_records, 3);
        tt_bpf_source_free(s);
    }
}

/* A stream whose records claim more lost bytes than any stream could hold
 * (2^63): its marks are not placed, and placing them overflows nothing
 * (the sanitizers' build checks that). */
static void test_ready_mark_on_absurd_offsets(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 5, 0x77, 10);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 20, "ab", 0, 0, TT_SOCKTAP_F_SEQ, 1ull << 63);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    struct tt_socktap_mark m[1] = {mark_of(25, 3, 0x7fffffffu, false)};
    n = make_seq_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x77, 30, "cd", 2);
    n = add_marks(buf, n, m, 1);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_ready_counts(s, 1, 0, 1, 0);
    tt_bpf_source_free(s);
}


static void test_sequence_base_of_sends(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 5, 0x31, 5);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 0x31, 10, "HTTP/1.1 200 OK\r\n", 100, 40, TT_SOCKTAP_F_SEQ, 7);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.seq = 5000; /* the syscall's first byte; this piece starts 40 bytes in */
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 2);
    assert_int_equal(srv.items[0].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[1].kind, TT_CHUNK_DATA);
    assert_int_equal(srv.items[1].offset, 7);
    assert_true(srv.items[1].seq_known);
    assert_int_equal(srv.items[1].seq_base, 5000 + 40 - 7);
    /* a later record that disagrees (another thread's send raced the stamp) changes nothing */
    n = make_seq_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 0x31, 20, "data: x\n\n", 1);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.items[srv.n - 1].seq_base, 5000 + 40 - 7);
    /* the receive direction has no numbers until a read tells them */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x31, 30, "GET / HTTP/1.1\r\n", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_false(srv.items[srv.n - 1].seq_known);
    tt_bpf_source_free(s);
}

/* TLS plaintext records (TT_SOCKTAP_F_TLS) of a client connection: a
 * stream of their own at the TLS vantage (its own conn_id, offsets from 0,
 * the socket's endpoints and orientation), beside the ciphertext at the
 * client vantage; bytes lost or not copied are gaps; a read of end of file
 * on the socket ends the plaintext's receive direction cleanly, and
 * close() its send direction. */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_marks),
        cmocka_unit_test(test_ready_marks_in_reads),
        cmocka_unit_test(test_ready_mark_on_absurd_offsets),
        cmocka_unit_test(test_sequence_base_of_sends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
