/* test_probe_source.c - probe records -> chunks: records built the way
 * probe/probe.c writes them (probe_recs.h), fed to the reader: a client's
 * connection, roles, layers and processes, ends, TSC stamps, the send's
 * entry instant, damaged records. Ring files are test_probe_rings.c's. */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "../../probe/probe_abi.h"
#include "golden.h"
#include "clocks/tsc_clock.h"
#include "core/util.h"
#include "source/probe_source.h"
#include "probe_recs.h"

static int feed(tt_probe_source *s, uint32_t pid, const uint8_t *rec, size_t n)
{
    uint8_t *g = tt_guard_copy(rec, n);
    int rc = tt_probe_source_feed(s, pid, g, n);
    tt_guard_free(g, n);
    return rc;
}

static void test_client_connection(void **state)
{
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, trace_chunk, &b, trace_chunk, &b, trace_chunk, &b);
    uint8_t rec[512];
    size_t n;
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 77, 100, "GET /", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 77, 200, "HTTP", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* 10 bytes moved, 2 copied: the rest is a gap */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 77, 300, "/1", 10);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* 3 bytes lost to a full ring before the next record */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 77, 400, "ok", 0);
    ((struct tt_probe_rec *)rec)->lost[TT_PROBE_DIR_RECV] = 3;
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* dup'd fd 6: same socket, same connection; the close of 5 does not end it */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 6, 77, 500, "!", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_CLIENT, 0, 5, 77, 600, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_CLIENT, 0, 6, 77, 700, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    const char *want =
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=5 ns=100 DATA \"GET /\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=0 len=4 ns=200 DATA \"HTTP\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=4 len=2 ns=300 DATA \"/1\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=6 len=8 ns=300 GAP\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=14 len=3 ns=400 GAP\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=17 len=2 ns=400 DATA \"ok\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=19 len=1 ns=500 DATA \"!\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=5 len=0 ns=700 FIN\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=20 len=0 ns=700 END\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=5 len=0 ns=700 RELEASE\n";
    assert_string_equal(b.s, want);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.connections, 1);
    assert_int_equal(st.closes, 1);
    assert_int_equal(st.gaps, 2);
    assert_int_equal(st.gap_bytes, 11);
    assert_int_equal(st.data_bytes, 14);
    tt_probe_source_free(s);
    tt_sb_free(&b);
}

static void test_roles_layers_and_processes(void **state)
{
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, trace_chunk, &b, trace_chunk, &b, trace_chunk, &b);
    uint8_t rec[512];
    size_t n;
    /* accepted: server vantage; the local end is the server */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_SERVER, 0, 3, 1, 10, "req", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* no role, read first: guessed server */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_UNKNOWN, 0, 4, 2, 20, "x", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* TLS plaintext of a connected socket, and the same socket in a forked child */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 1, 5, 3, 30, "hi", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 3, 40, "yo", 0);
    assert_int_equal(feed(s, 2, rec, n), 0);
    /* close ends both layers of that socket in that process only */
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_CLIENT, 0, 5, 3, 50, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    const char *want =
        "server conn=1 10.0.0.2:8000 10.0.0.1:40000 c2s off=0 len=3 ns=10 DATA \"req\"\n"
        "server conn=2 10.0.0.2:8000 10.0.0.1:40000 c2s guessed off=0 len=1 ns=20 DATA \"x\"\n"
        "client_tls conn=3 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=2 ns=30 DATA \"hi\"\n"
        "client conn=4 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=2 ns=40 DATA \"yo\"\n"
        "client_tls conn=3 10.0.0.1:40000 10.0.0.2:8000 c2s off=2 len=0 ns=50 FIN\n"
        "client_tls conn=3 10.0.0.1:40000 10.0.0.2:8000 s2c off=0 len=0 ns=50 END\n"
        "client_tls conn=3 10.0.0.1:40000 10.0.0.2:8000 c2s off=2 len=0 ns=50 RELEASE\n";
    assert_string_equal(b.s, want);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.processes, 2);
    tt_probe_source_free(s);
    tt_sb_free(&b);
}

/* A close-delimited response: the read returning 0 (EOF) ends the peer's
 * direction cleanly at each layer, the close ends the local end's sending
 * direction cleanly; nothing is END. A server's close of a connection it
 * accepted ends s2c with FIN. */
static void test_eof_and_close_end_cleanly(void **state)
{
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, trace_chunk, &b, trace_chunk, &b, trace_chunk, &b);
    uint8_t rec[512];
    size_t n;
    for (uint8_t layer = 0; layer < 2; layer++) {
        n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, layer, 5, 9, 100, "POST", 0);
        assert_int_equal(feed(s, 1, rec, n), 0);
        n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, layer, 5, 9, 200, "body", 0);
        assert_int_equal(feed(s, 1, rec, n), 0);
    }
    /* TLS: close_notify (SSL_read); socket: read returned 0; 2 bytes lost before it */
    n = probe_rec(rec, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 1, 5, 9, 300, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 310, NULL, 0);
    ((struct tt_probe_rec *)rec)->lost[TT_PROBE_DIR_RECV] = 2;
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* a second EOF (the program read again) changes nothing */
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* bytes after the end of file contradict it: refused */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 320, "late", 0);
    assert_int_equal(feed(s, 1, rec, n), -1);
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 400, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* an EOF for a socket never seen: nothing */
    n = probe_rec(rec, TT_PROBE_KIND_EOF, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 6, 10, 500, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    /* server side: request read, response written, closed by the server */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_SERVER, 0, 7, 11, 600, "GET", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_SERVER, 0, 7, 11, 700, "ok", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_SERVER, 0, 7, 11, 800, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    const char *want =
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=4 ns=100 DATA \"POST\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=0 len=4 ns=200 DATA \"body\"\n"
        "client_tls conn=2 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=4 ns=100 DATA \"POST\"\n"
        "client_tls conn=2 10.0.0.1:40000 10.0.0.2:8000 s2c off=0 len=4 ns=200 DATA \"body\"\n"
        "client_tls conn=2 10.0.0.1:40000 10.0.0.2:8000 s2c off=4 len=0 ns=300 FIN\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=4 len=2 ns=310 GAP\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=6 len=0 ns=310 FIN\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=4 len=0 ns=400 FIN\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=4 len=0 ns=400 RELEASE\n"
        "client_tls conn=2 10.0.0.1:40000 10.0.0.2:8000 c2s off=4 len=0 ns=400 FIN\n"
        "client_tls conn=2 10.0.0.1:40000 10.0.0.2:8000 c2s off=4 len=0 ns=400 RELEASE\n"
        "server conn=3 10.0.0.2:8000 10.0.0.1:40000 c2s off=0 len=3 ns=600 DATA \"GET\"\n"
        "server conn=3 10.0.0.2:8000 10.0.0.1:40000 s2c off=0 len=2 ns=700 DATA \"ok\"\n"
        "server conn=3 10.0.0.2:8000 10.0.0.1:40000 s2c off=2 len=0 ns=800 FIN\n"
        "server conn=3 10.0.0.2:8000 10.0.0.1:40000 c2s off=3 len=0 ns=800 END\n"
        "server conn=3 10.0.0.2:8000 10.0.0.1:40000 c2s off=3 len=0 ns=800 RELEASE\n";
    assert_string_equal(b.s, want);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.bad_records, 1);
    assert_int_equal(st.closes, 3);
    tt_probe_source_free(s);
    tt_sb_free(&b);
}

/* Sent bytes are stamped with the call's entry instant (enter_ns), received
 * ones with its return (ts_ns); an entry after the return, or an entry
 * instant on anything but sent data, is a bad record. */
/* The instant of every chunk delivered, in order. */
typedef struct instants {
    uint64_t ns[8];
    int n;
} instants;

static void keep_instant(void *ctx, const tt_chunk *c)
{
    instants *in = ctx;
    if (in->n < 8) in->ns[in->n++] = c->mono_ns;
}

/* Records stamped with the TSC (TT_PROBE_F_TSC) are refused until the
 * source converts them; then a chunk's instant is the CLOCK_MONOTONIC read
 * around the tick (a send's entry tick; a receive's return tick), within
 * the converter's few us. */
static void test_tsc_stamps(void **state)
{
    (void)state;
#if defined(__x86_64__)
    if (!tt_tsc_usable()) skip();
    instants in = {0};
    tt_probe_source *s = tt_probe_source_new(keep_instant, &in, NULL, NULL, NULL, NULL, NULL, NULL);
    uint8_t rec[512];
    struct tt_probe_rec *r = (struct tt_probe_rec *)rec;
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, __rdtsc(), "req", 0);
    r->flags |= TT_PROBE_F_TSC;
    assert_int_equal(feed(s, 1, rec, n), -1);
    assert_true(tt_probe_source_use_tsc(s));
    uint64_t lo[2], hi[2];
    lo[0] = tt_clock_ns(CLOCK_MONOTONIC);
    uint64_t enter = __rdtsc();
    hi[0] = tt_clock_ns(CLOCK_MONOTONIC);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, __rdtsc(), "req", 0);
    r->enter_ns = enter;
    r->flags |= TT_PROBE_F_TSC;
    assert_int_equal(feed(s, 1, rec, n), 0);
    lo[1] = tt_clock_ns(CLOCK_MONOTONIC);
    uint64_t ret = __rdtsc();
    hi[1] = tt_clock_ns(CLOCK_MONOTONIC);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 1, ret, "resp", 0);
    r->flags |= TT_PROBE_F_TSC;
    assert_int_equal(feed(s, 1, rec, n), 0);
    assert_int_equal(in.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(in.ns[i] + 5000 >= lo[i]);
        assert_true(in.ns[i] <= hi[i] + 5000);
    }
    tt_probe_source_free(s);
#else
    skip();
#endif
}

static void test_send_enter_instant(void **state)
{
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    uint8_t rec[512];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 150, "req", 0);
    struct tt_probe_rec *r = (struct tt_probe_rec *)rec;
    r->enter_ns = 120;
    r->lost[TT_PROBE_DIR_SEND] = 4; /* bytes lost before it: the gap takes the same instant */
    assert_int_equal(feed(s, 1, rec, n), 0);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 160, "more", 0);
    assert_int_equal(feed(s, 1, rec, n), 0); /* no entry instant (0): the return's */
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 300, "resp", 0);
    assert_int_equal(feed(s, 1, rec, n), 0);
    r->enter_ns = 250; /* on a receive */
    assert_int_equal(feed(s, 1, rec, n), -1);
    n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 400, "x", 0);
    r->enter_ns = 401; /* after the return */
    assert_int_equal(feed(s, 1, rec, n), -1);
    n = probe_rec(rec, TT_PROBE_KIND_CLOSE, 0, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 500, NULL, 0);
    r->enter_ns = 450; /* on a record without data */
    assert_int_equal(feed(s, 1, rec, n), -1);
    n = probe_rec(rec, TT_PROBE_KIND_EOF, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 500, NULL, 0);
    assert_int_equal(feed(s, 1, rec, n), -1); /* an end of file is of the peer's bytes only */
    const char *want =
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=0 len=4 ns=120 GAP\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=4 len=3 ns=120 DATA \"req\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 c2s off=7 len=4 ns=160 DATA \"more\"\n"
        "client conn=1 10.0.0.1:40000 10.0.0.2:8000 s2c off=0 len=4 ns=300 DATA \"resp\"\n";
    assert_string_equal(b.s, want);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.bad_records, 4);
    assert_int_equal(st.records, 3);
    tt_probe_source_free(s);
    tt_sb_free(&b);
}

static void test_bad_records(void **state)
{
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    uint8_t rec[512];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 1, 1, "abcd", 0);
    assert_int_equal(feed(s, 1, rec, sizeof(struct tt_probe_rec) - 1), -1); /* short */
    assert_int_equal(feed(s, 1, rec, sizeof(struct tt_probe_rec) + 2), -1); /* data beyond the record */
    struct tt_probe_rec *r = (struct tt_probe_rec *)rec;
    r->kind = TT_PROBE_KIND_COUNT;
    assert_int_equal(feed(s, 1, rec, n), -1);
    r->kind = TT_PROBE_KIND_DATA;
    r->dir = 2;
    assert_int_equal(feed(s, 1, rec, n), -1);
    r->dir = 0;
    r->total_len = 2; /* fewer moved than copied */
    assert_int_equal(feed(s, 1, rec, n), -1);
    r->total_len = 9; /* more moved than copied without the flag */
    assert_int_equal(feed(s, 1, rec, n), -1);
    r->total_len = 4;
    r->layer = 7;
    assert_int_equal(feed(s, 1, rec, n), -1);
    r->layer = 0;
    r->role = 9;
    assert_int_equal(feed(s, 1, rec, n), -1);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.bad_records, 8);
    assert_int_equal(st.records, 0);
    assert_null(b.s);
    tt_probe_source_free(s);
    tt_sb_free(&b);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_connection),
        cmocka_unit_test(test_roles_layers_and_processes),
        cmocka_unit_test(test_eof_and_close_end_cleanly),
        cmocka_unit_test(test_send_enter_instant),
        cmocka_unit_test(test_tsc_stamps),
        cmocka_unit_test(test_bad_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
