/* test_bpf_source.c - socktap records -> chunks, without the kernel:
 * orientation (read first = server), stream offsets per direction, gaps for
 * lost, truncated and uncopied bytes, a new connection behind a reused fd,
 * END and RELEASE at the finish, close(fd) ending a connection, connect and
 * accept setting the role instead of the guess, iovec pieces with a
 * data-less truncation record, recvmmsg messages (one record group per
 * message, then one record for the messages past the bound), sendfile's
 * not-copied bytes and lost bytes flushed before a close as gaps, a
 * read's end of file and close as FIN, bad records refused, bad filter
 * options refused by start, the wakeup threshold, and TLS plaintext
 * streams (writes held until their socket is known). READY marks and the
 * sequence base of sends are test_bpf_ready.c's; records are built by
 * tests/support/socktap_recs.h. */
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

static void test_server_orientation_offsets_and_gaps(void **state)
{
    log_ctx srv = {0}, cli = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, collect, &cli);
    assert_non_null(s);
    uint8_t buf[512];
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 0x1000, 100, "GET / HTTP/1.1\r\n", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 0x1000, 200, "HTTP/1.1 200", 30, 0, TT_SOCKTAP_F_TRUNCATED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 0x1000, 300, "xyz", 0, 0, 0, 7);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 0);
    assert_int_equal(srv.n, 5);
    /* request bytes: C2S at the server vantage, instant as given */
    assert_int_equal(srv.items[0].vantage, TT_VANTAGE_SERVER);
    assert_int_equal(srv.items[0].dir, TT_DIR_C2S);
    assert_int_equal(srv.items[0].kind, TT_CHUNK_DATA);
    assert_string_equal(srv.items[0].data, "GET / HTTP/1.1\r\n");
    assert_int_equal(srv.items[0].server_port, 8000);
    assert_int_equal(srv.items[0].client_port, 40000);
    /* truncated write: data then the missing rest */
    assert_int_equal(srv.items[1].dir, TT_DIR_S2C);
    assert_int_equal(srv.items[1].offset, 0);
    assert_int_equal(srv.items[1].len, 12);
    assert_int_equal(srv.items[2].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[2].offset, 12);
    assert_int_equal(srv.items[2].len, 18);
    /* lost bytes before a record come first as a gap */
    assert_int_equal(srv.items[3].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[3].offset, 30);
    assert_int_equal(srv.items[3].len, 7);
    assert_int_equal(srv.items[4].kind, TT_CHUNK_DATA);
    assert_int_equal(srv.items[4].offset, 37);
    assert_int_equal(srv.items[4].mono_ns, 300);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.records, 3);
    assert_int_equal(st.gaps, 2);
    assert_int_equal(st.gap_bytes, 25);
    assert_int_equal(st.connections, 1);
    tt_bpf_source_finish(s);
    assert_int_equal(srv.n, 8);
    assert_int_equal(srv.items[5].kind, TT_CHUNK_END);
    assert_int_equal(srv.items[6].kind, TT_CHUNK_END);
    assert_int_equal(srv.items[7].kind, TT_CHUNK_RELEASE);
    tt_bpf_source_free(s);
    assert_int_equal(srv.n, 8);
}

static void test_client_and_fd_reuse(void **state)
{
    log_ctx srv = {0}, cli = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, collect, &cli);
    assert_non_null(s);
    uint8_t buf[512];
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 3, 0xa, 10, "POST", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 3, 0xa, 20, "HTTP", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* the same fd now names another socket: the first connection ends */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 3, 0xb, 30, "POST", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 0);
    assert_int_equal(cli.n, 6);
    assert_int_equal(cli.items[0].vantage, TT_VANTAGE_CLIENT);
    assert_int_equal(cli.items[0].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[0].client_port, 8000);
    assert_int_equal(cli.items[1].dir, TT_DIR_S2C);
    assert_int_equal(cli.items[2].kind, TT_CHUNK_END);
    assert_int_equal(cli.items[4].kind, TT_CHUNK_RELEASE);
    assert_int_equal(cli.items[5].kind, TT_CHUNK_DATA);
    assert_int_equal(cli.items[5].offset, 0);
    assert_true(cli.items[5].conn_id != cli.items[0].conn_id);
    tt_bpf_source_free(s);
    assert_int_equal(cli.n, 9);
}


static void test_connect_role_and_close(void **state)
{
    log_ctx srv = {0}, cli = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, collect, &cli);
    assert_non_null(s);
    uint8_t buf[512];
    /* connected, then reads first (a server push would be guessed server) */
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_CONNECT, 4, 0xc, 5);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 4, 0xc, 10, "HTTP", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 4, 0xc, 20, "GET", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 0);
    assert_int_equal(cli.n, 2);
    assert_int_equal(cli.items[0].vantage, TT_VANTAGE_CLIENT);
    assert_int_equal(cli.items[0].dir, TT_DIR_S2C);
    assert_false(cli.items[0].guessed);
    assert_int_equal(cli.items[0].client_port, 8000);
    assert_int_equal(cli.items[0].server_port, 40000);
    assert_int_equal(cli.items[1].dir, TT_DIR_C2S);
    /* close of another fd changes nothing; close of fd 4 ends the connection */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 9, 0xc, 25);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 2);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 4, 0xc, 30);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 5);
    /* the local end (client) closed: its direction ends cleanly, the other is cut */
    assert_int_equal(cli.items[2].kind, TT_CHUNK_FIN);
    assert_int_equal(cli.items[2].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[3].kind, TT_CHUNK_END);
    assert_int_equal(cli.items[3].dir, TT_DIR_S2C);
    assert_int_equal(cli.items[4].kind, TT_CHUNK_RELEASE);
    assert_int_equal(cli.items[4].mono_ns, 30);
    /* the fd reused by accept: a new connection, server, not guessed */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 4, 0xd, 40);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 4, 0xd, 50, "hello", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 1);
    assert_int_equal(srv.items[0].dir, TT_DIR_S2C);
    assert_false(srv.items[0].guessed);
    assert_int_equal(srv.items[0].server_port, 8000);
    assert_true(srv.items[0].conn_id != cli.items[0].conn_id);
    /* a guessed connection keeps its orientation once it carried bytes */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 6, 0xe, 60, "POST", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_ACCEPT, 6, 0xe, 61);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 6, 0xe, 70, "HTTP", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 7);
    assert_true(cli.items[5].guessed);
    assert_int_equal(cli.items[6].dir, TT_DIR_S2C);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.closes, 1);
    assert_int_equal(st.connections, 3);
    tt_bpf_source_free(s);
    assert_int_equal(srv.n, 4);
    assert_int_equal(cli.n, 10);
}

/* A release of the socket (TT_SOCKTAP_F_RELEASED: its file's last
 * reference put, bpf/socktap_state.bpf.h) ends every connection on it,
 * whichever process it comes from (a forked child may hold the last
 * reference), with fd -1 when it was not a close(); bytes owed then find
 * the connection by socket. Nothing of an unseen socket starts a
 * connection, and the next socket on the same fd and address is a new one. */
static size_t make_release(uint8_t *buf, uint32_t tgid, uint64_t sock, uint64_t ns)
{
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, -1, sock, ns);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.tgid = tgid;
    ev.flags |= TT_SOCKTAP_F_RELEASED;
    memcpy(buf, &ev, sizeof ev);
    return n;
}

/* A client connection on fd 4 (sock 0xc): connected at 5, "GET" sent at 10. */
static void feed_connected_get(tt_bpf_source *s, uint8_t *buf)
{
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_CONNECT, 4, 0xc, 5);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 4, 0xc, 10, "GET", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
}

static void test_release_ends_every_connection_on_the_socket(void **state)
{
    log_ctx cli = {0};
    tt_bpf_source *s = tt_bpf_source_new(NULL, NULL, collect, &cli);
    assert_non_null(s);
    uint8_t buf[512];
    feed_connected_get(s, buf);
    assert_int_equal(cli.n, 1);
    size_t n;
    /* unknown socket: nothing */
    n = make_release(buf, 42, 0xf, 12);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, -1, 0xf, 13, "", 0, 0, 0, 7);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* a close(fd) of fd -1 names no connection */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, -1, 0xc, 13);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 1);
    /* bytes owed to the known socket, said by another process: a gap on its connection */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, -1, 0xc, 14, "", 0, 0, 0, 9);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.tgid = 43;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 2);
    assert_int_equal(cli.items[1].kind, TT_CHUNK_GAP);
    assert_int_equal(cli.items[1].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[1].conn_id, cli.items[0].conn_id);
    /* released by another process (a forked child's exit): the connection ends */
    n = make_release(buf, 43, 0xc, 20);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 5);
    assert_int_equal(cli.items[2].kind, TT_CHUNK_FIN);
    assert_int_equal(cli.items[2].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[4].kind, TT_CHUNK_RELEASE);
    assert_int_equal(cli.items[4].mono_ns, 20);
    /* the next socket on fd 4 at the same address: a new connection */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 4, 0xc, 30, "GET", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 6);
    assert_true(cli.items[5].conn_id != cli.items[0].conn_id);
    assert_int_equal(cli.items[5].offset, 0);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.closes, 1);
    assert_int_equal(st.connections, 2);
    tt_bpf_source_free(s);
}

static void test_iovec_pieces_and_truncation_record(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    /* one recvmsg of 20 bytes: pieces "abc" and "defgh" from two iovecs, then
     * a record without data saying the last 12 bytes were not copied */
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "abc", 20, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "defgh", 20, 3, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "", 20, 8, TT_SOCKTAP_F_TRUNCATED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* a copy that failed mid-iovec: the rest is a gap too */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 20, "", 6, 0, TT_SOCKTAP_F_TRUNCATED | TT_SOCKTAP_F_COPY_FAILED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 4);
    assert_string_equal(srv.items[0].data, "abc");
    assert_int_equal(srv.items[1].offset, 3);
    assert_string_equal(srv.items[1].data, "defgh");
    assert_int_equal(srv.items[2].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[2].offset, 8);
    assert_int_equal(srv.items[2].len, 12);
    assert_int_equal(srv.items[3].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[3].offset, 20);
    assert_int_equal(srv.items[3].len, 6);
    tt_bpf_source_free(s);
}

static void test_mmsg_sendfile_and_flushed_loss(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    /* recvmmsg: message 0 "GET " (4 bytes, copied whole), message 1 of 6
     * bytes with "/x" copied and the rest cut, then 9 bytes of messages
     * past the bound */
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "GET ", 4, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "/x", 6, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "", 6, 2, TT_SOCKTAP_F_TRUNCATED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 10, "", 9, 0, TT_SOCKTAP_F_TRUNCATED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* sendfile of 1000 bytes: a gap, not silence, then a write after it */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 1, 20, "", 1000, 0, TT_SOCKTAP_F_NOT_COPIED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 1, 30, "end", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* bytes the ring buffer refused, owed at close: a record with only lost_before */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 1, 40, "", 0, 0, 0, 77);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 5, 1, 41);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(srv.n, 10);
    assert_string_equal(srv.items[0].data, "GET ");
    assert_int_equal(srv.items[1].offset, 4);
    assert_string_equal(srv.items[1].data, "/x");
    assert_int_equal(srv.items[2].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[2].offset, 6);
    assert_int_equal(srv.items[2].len, 4);
    assert_int_equal(srv.items[3].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[3].offset, 10);
    assert_int_equal(srv.items[3].len, 9);
    assert_int_equal(srv.items[4].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[4].dir, TT_DIR_S2C);
    assert_int_equal(srv.items[4].offset, 0);
    assert_int_equal(srv.items[4].len, 1000);
    assert_int_equal(srv.items[4].mono_ns, 20);
    assert_int_equal(srv.items[5].kind, TT_CHUNK_DATA);
    assert_int_equal(srv.items[5].offset, 1000);
    assert_int_equal(srv.items[6].kind, TT_CHUNK_GAP);
    assert_int_equal(srv.items[6].offset, 1003);
    assert_int_equal(srv.items[6].len, 77);
    assert_int_equal(srv.items[7].kind, TT_CHUNK_FIN);
    assert_int_equal(srv.items[7].dir, TT_DIR_S2C);
    assert_int_equal(srv.items[8].kind, TT_CHUNK_END);
    assert_int_equal(srv.items[8].dir, TT_DIR_C2S);
    assert_int_equal(srv.items[9].kind, TT_CHUNK_RELEASE);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.gaps, 4);
    assert_int_equal(st.gap_bytes, 4 + 9 + 1000 + 77);
    assert_int_equal(st.data_bytes, 4 + 2 + 3);
    /* not copied yet carrying data: refused */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 5, 1, 50, "x", 10, 0, TT_SOCKTAP_F_NOT_COPIED, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    tt_bpf_source_free(s);
}

static void test_eof_then_close(void **state)
{
    log_ctx cli = {0};
    tt_bpf_source *s = tt_bpf_source_new(NULL, NULL, collect, &cli);
    assert_non_null(s);
    uint8_t buf[512];
    feed_connected_get(s, buf);
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 4, 0xc, 20, "HTTP", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* EOF on another sock behind the same fd, or on an unknown fd: nothing */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_EOF, 4, 0xd, 25);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_marker(buf, TT_SOCKTAP_KIND_EOF, 7, 0xc, 25);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 2);
    /* the read of the peer's FIN: the server's direction ends cleanly, once */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_EOF, 4, 0xc, 30);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 3);
    assert_int_equal(cli.items[2].kind, TT_CHUNK_FIN);
    assert_int_equal(cli.items[2].dir, TT_DIR_S2C);
    assert_int_equal(cli.items[2].mono_ns, 30);
    /* then close: the client's own direction ends cleanly too, no END */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 4, 0xc, 40);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 5);
    assert_int_equal(cli.items[3].kind, TT_CHUNK_FIN);
    assert_int_equal(cli.items[3].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[4].kind, TT_CHUNK_RELEASE);
    tt_bpf_source_free(s);
    assert_int_equal(cli.n, 5);
}

static void test_start_refuses_bad_filters(void **state)
{
    log_ctx srv = {0};
    char err[256];
    static const uint32_t no_such_pid[1] = {0x7ffffffe};
    const tt_bpf_options bad[] = {
        {.comm = "a-name-longer-than-15"},
        {.comm = ""},
        {.cgroup = "/tmp"},
        {.cgroup = "/nonexistent/cgroup"},
        {.ring_bytes = 5000},
        {.ring_bytes = 2048},
        {.tgids = no_such_pid, .n_tgids = 1},
    };
    const char *why[] = {"--comm", "--comm", "cgroup v2", "/nonexistent/cgroup", "power of two", "power of two",
                         "no process"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
        assert_non_null(s);
        err[0] = 0;
        assert_int_equal(tt_bpf_source_start(s, &bad[i], err, sizeof err), -1);
        assert_true(strlen(err) > 0);
        /* as root with eBPF at hand, the reason names the bad option */
        if (!strstr(err, "root") && !strstr(err, "BTF") && !strstr(err, "tracepoint") && !strstr(err, "tracefs") &&
            !strstr(err, "without eBPF") && !strstr(err, "loading") && !strstr(err, "attaching"))
            assert_non_null(strstr(err, why[i]));
        tt_bpf_source_free(s);
    }
    assert_int_equal(srv.n, 0);
}

/* Each CPU wakes the poller once it has committed a quarter of the ring
 * (at most 256 KiB) unread, and the CPUs together at most half the ring;
 * smaller rings wake sooner, so the overflow test's 8 KiB ring is drained
 * before it fills whenever the reader keeps up. */
static void test_wake_bytes(void **state)
{
    assert_int_equal(tt_bpf_wake_bytes(0, 1), 256u << 10);
    assert_int_equal(tt_bpf_wake_bytes(16u << 20, 1), 256u << 10);
    assert_int_equal(tt_bpf_wake_bytes(16u << 20, 2), 256u << 10);
    assert_int_equal(tt_bpf_wake_bytes(16u << 20, 64), 128u << 10);
    assert_int_equal(tt_bpf_wake_bytes(1u << 20, 4), 128u << 10);
    assert_int_equal(tt_bpf_wake_bytes(512u << 10, 1), 128u << 10);
    assert_int_equal(tt_bpf_wake_bytes(8192, 2), 2048);
    assert_int_equal(tt_bpf_wake_bytes(8192, 4), 1024);
    assert_int_equal(tt_bpf_wake_bytes(4096, 0), 1024);
    assert_int_equal(tt_bpf_wake_bytes(4096, -1), 1024);
    assert_int_equal(tt_bpf_wake_bytes(4096, 4096), 1);
    assert_int_equal(tt_bpf_wake_bytes(1u << 31, 1), 256u << 10);
}

/* A readable instant: the receive sequence ends at end_seq, len bytes new
 * since the last one (from_start: the socket's first). */

static void test_bad_records(void **state)
{
    log_ctx srv = {0};
    tt_bpf_source *s = tt_bpf_source_new(collect, &srv, NULL, NULL);
    assert_non_null(s);
    uint8_t buf[512];
    size_t n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 5, 1, 1, "abcd", 0, 0, 0, 0);
    /* shorter than the head, or than the data the head announces */
    for (size_t k = 0; k < n; k++) assert_int_equal(tt_bpf_source_feed(s, buf, k), -1);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.piece_off = 100; /* past total_len */
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    ev.piece_off = 0;
    ev.dir = 9;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    ev.dir = 0;
    ev.kind = TT_SOCKTAP_KIND_COUNT; /* unknown kind */
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    ev.kind = TT_SOCKTAP_KIND_CLOSE; /* a close carrying data */
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    assert_int_equal(srv.n, 0);
    char err[128];
    assert_int_equal(tt_bpf_source_poll(s, 0, err, sizeof err), -1);
    assert_true(strlen(err) > 0);
    tt_bpf_source_free(s);
}

/* A send's sequence number (write_seq at exit less its length) gives the
 * direction's seq_base even after lost bytes (the gap counts in the stream
 * as in the sequence space) and from a later piece of one syscall; the
 * first one known stays. */

static void test_tls_plaintext_stream(void **state)
{
    log_ctx cli = {0}, tls = {0};
    tt_bpf_source *s = tt_bpf_source_new(NULL, NULL, collect, &cli);
    assert_non_null(s);
    tt_bpf_source_route_tls(s, collect, &tls, collect, &tls);
    uint8_t buf[512];
    struct tt_socktap_event ev;
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_CONNECT, 6, 0x51, 5);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* the ciphertext the library wrote, then the plaintext it was handed */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 6, 0x51, 20, "\x17\x03\x03xx", 0, 0, 0, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, 6, 0x51, 10, "POST / HTTP/1.1\r\n\r\n", 0, 0, TT_SOCKTAP_F_TLS, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* a response read: 12 bytes lost before it, then 9 copied of 20; its
     * ciphertext read from the socket at 35 */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_RECV, 6, 0x51, 40, "HTTP/1.1 ", 20, 0, TT_SOCKTAP_F_TLS | TT_SOCKTAP_F_TRUNCATED, 12);
    memcpy(&ev, buf, sizeof ev);
    ev.socket_ns = 35;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(cli.n, 1);
    assert_int_equal(cli.items[0].kind, TT_CHUNK_DATA);
    assert_int_equal(tls.n, 5);
    assert_int_equal(tls.items[0].vantage, TT_VANTAGE_CLIENT_TLS); /* the local end connected */
    assert_int_equal(tls.items[0].kind, TT_CHUNK_DATA);
    assert_int_equal(tls.items[0].dir, TT_DIR_C2S);
    assert_int_equal(tls.items[0].offset, 0);
    assert_int_equal(tls.items[0].mono_ns, 10);
    assert_string_equal(tls.items[0].data, "POST / HTTP/1.1\r\n\r\n");
    assert_true(tls.items[0].conn_id != cli.items[0].conn_id);
    assert_int_equal(tls.items[0].client_port, cli.items[0].client_port);
    assert_int_equal(tls.items[0].server_port, cli.items[0].server_port);
    assert_false(tls.items[0].seq_known); /* plaintext has no TCP sequence numbers */
    assert_int_equal(tls.items[1].kind, TT_CHUNK_GAP);
    assert_int_equal(tls.items[1].dir, TT_DIR_S2C);
    assert_int_equal(tls.items[1].len, 12);
    assert_int_equal(tls.items[2].kind, TT_CHUNK_DATA);
    assert_int_equal(tls.items[2].offset, 12);
    /* the socket instant: a mark on exactly the bytes copied, after them */
    assert_int_equal(tls.items[3].kind, TT_CHUNK_READY);
    assert_int_equal(tls.items[3].mono_ns, 35);
    assert_int_equal(tls.items[3].offset, 12);
    assert_int_equal(tls.items[3].len, 9);
    assert_int_equal(tls.items[4].kind, TT_CHUNK_GAP);
    assert_int_equal(tls.items[4].offset, 21);
    assert_int_equal(tls.items[4].len, 11);
    /* end of file on the socket: the plaintext's receive direction ends (FIN) */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_EOF, 6, 0x51, 50);
    memcpy(&ev, buf, sizeof ev);
    ev.dir = TT_SOCKTAP_DIR_RECV;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(tls.items[tls.n - 1].kind, TT_CHUNK_FIN);
    assert_int_equal(tls.items[tls.n - 1].dir, TT_DIR_S2C);
    /* close(): its send direction FIN, then both streams released */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_CLOSE, 6, 0x51, 60);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    assert_int_equal(tls.items[tls.n - 1].kind, TT_CHUNK_RELEASE);
    assert_int_equal(tls.items[tls.n - 2].kind, TT_CHUNK_FIN);
    assert_int_equal(tls.items[tls.n - 2].dir, TT_DIR_C2S);
    assert_int_equal(cli.items[cli.n - 1].kind, TT_CHUNK_RELEASE);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.tls_connections, 1);
    assert_int_equal(st.tls_records, 2);
    assert_int_equal(st.tls_socket_instants, 1);
    tt_bpf_source_free(s);
}

/* Plaintext writes sent pending (a memory BIO: the ciphertext goes out
 * after the SSL call) are held until their thread's TLS_PAIR names the
 * socket, then delivered in order with their own instants; another
 * thread's stay held; past the bound, or at the end, they count unpaired
 * and go to no connection. */
static void test_tls_pending_writes(void **state)
{
    log_ctx cli = {0}, tls = {0};
    tt_bpf_source *s = tt_bpf_source_new(NULL, NULL, collect, &cli);
    assert_non_null(s);
    tt_bpf_source_route_tls(s, collect, &tls, collect, &tls);
    uint8_t buf[512];
    struct tt_socktap_event ev;
    size_t n = socktap_marker(buf, TT_SOCKTAP_KIND_CONNECT, 6, 0x61, 5);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* two pending writes of thread 42, one of thread 43 */
    const char *parts[3] = {"POST / HTTP/1.1\r\n", "\r\n", "other"};
    for (int i = 0; i < 3; i++) {
        n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, -1, 0, 10 + (uint64_t)i, parts[i], 0, 0,
                     TT_SOCKTAP_F_TLS | TT_SOCKTAP_F_TLS_PENDING, 0);
        memcpy(&ev, buf, sizeof ev);
        ev.tid = i == 2 ? 43 : 42;
        memset(ev.laddr, 0, sizeof ev.laddr);
        memcpy(buf, &ev, sizeof ev);
        assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    }
    assert_int_equal(tls.n, 0);
    /* thread 42 writes its socket: TLS_PAIR, 3 refused pending bytes before */
    n = socktap_marker(buf, TT_SOCKTAP_KIND_TLS_PAIR, 6, 0x61, 20);
    memcpy(&ev, buf, sizeof ev);
    ev.lost_before = 3;
    memcpy(buf, &ev, sizeof ev);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), 0);
    /* each paired record with a mark: its ciphertext crossed the socket at the pairing write (20) */
    assert_int_equal(tls.n, 5);
    assert_int_equal(tls.items[0].kind, TT_CHUNK_GAP);
    assert_int_equal(tls.items[0].len, 3);
    assert_int_equal(tls.items[1].kind, TT_CHUNK_DATA);
    assert_int_equal(tls.items[1].mono_ns, 10);
    assert_int_equal(tls.items[1].offset, 3);
    assert_string_equal(tls.items[1].data, "POST / HTTP/1.1\r\n");
    assert_int_equal(tls.items[2].kind, TT_CHUNK_READY);
    assert_int_equal(tls.items[2].mono_ns, 20);
    assert_int_equal(tls.items[2].offset, 3);
    assert_int_equal(tls.items[2].len, 17);
    assert_int_equal(tls.items[3].mono_ns, 11);
    assert_int_equal(tls.items[3].dir, TT_DIR_C2S);
    assert_int_equal(tls.items[3].client_port, 8000); /* connected: the local end, port 8000, is the client */
    assert_int_equal(tls.items[4].kind, TT_CHUNK_READY);
    assert_int_equal(tls.items[4].offset, 20);
    assert_int_equal(tls.items[4].len, 2);
    /* a pending record that is not DATA+TLS is bad */
    n = socktap_rec(buf, TT_SOCKTAP_DIR_SEND, -1, 0, 30, "x", 0, 0, TT_SOCKTAP_F_TLS_PENDING, 0);
    assert_int_equal(tt_bpf_source_feed(s, buf, n), -1);
    /* thread 43's record was never paired: unpaired at the end */
    tt_bpf_source_finish(s);
    tt_bpf_stats st;
    tt_bpf_source_stats(s, &st);
    assert_int_equal(st.tls_unpaired, 1);
    assert_int_equal(st.tls_unpaired_bytes, 5);
    for (size_t i = 0; i < tls.n; i++) assert_true(strcmp(tls.items[i].data, "other") != 0);
    tt_bpf_source_free(s);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_orientation_offsets_and_gaps),
        cmocka_unit_test(test_client_and_fd_reuse),
        cmocka_unit_test(test_connect_role_and_close),
        cmocka_unit_test(test_release_ends_every_connection_on_the_socket),
        cmocka_unit_test(test_iovec_pieces_and_truncation_record),
        cmocka_unit_test(test_mmsg_sendfile_and_flushed_loss),
        cmocka_unit_test(test_eof_then_close),
        cmocka_unit_test(test_start_refuses_bad_filters),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_tls_plaintext_stream),
        cmocka_unit_test(test_tls_pending_writes),
        cmocka_unit_test(test_wake_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
