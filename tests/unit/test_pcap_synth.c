/* pcap_synth round trip: chunks a socket vantage saw, written as a pcap of
 * synthesized packets, read back through the pcap source and the
 * reassembler, must come back as the same bytes, gaps, ends and instants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden.h"
#include "report/pcap_synth.h"
#include "source/pcap_source.h"

typedef struct seen {
    tt_strbuf trace;      /* one line per chunk that came back */
    tt_conn_info conn[4]; /* endpoints as read back, by conn_id */
} seen;

static void record(void *ctx, const tt_chunk *c)
{
    static const char *const kinds[] = {"DATA", "GAP", "FIN", "RST", "END", "RELEASE", "READY"};
    seen *s = ctx;
    if (c->conn->conn_id < 4) s->conn[c->conn->conn_id] = *c->conn;
    if (c->kind == TT_CHUNK_RELEASE) return;
    tt_sb_printf(&s->trace, "conn=%llu %s %s off=%llu len=%zu t=%llu", (unsigned long long)c->conn->conn_id,
                 c->dir == TT_DIR_C2S ? "c2s" : "s2c", kinds[c->kind], (unsigned long long)c->offset, c->len,
                 (unsigned long long)c->mono_ns);
    if (c->kind == TT_CHUNK_DATA) {
        tt_sb_printf(&s->trace, " \"");
        tt_sb_escaped(&s->trace, (const char *)c->data, c->len);
        tt_sb_printf(&s->trace, "\"");
    }
    tt_sb_printf(&s->trace, "\n");
}

static tt_conn_info conn_v4(uint64_t id)
{
    tt_conn_info c = {.conn_id = id};
    c.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 41000};
    c.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 2}, .port = 8000};
    return c;
}

static void put(tt_synth *s, const tt_conn_info *ci, tt_direction d, tt_chunk_kind k, uint64_t off,
                const char *data, size_t len, uint64_t ns)
{
    tt_chunk c = {.conn = ci, .vantage = TT_VANTAGE_SERVER, .dir = d, .kind = k, .mono_ns = ns, .offset = off,
                  .data = (const uint8_t *)data, .len = len};
    tt_synth_chunk(s, &c);
}

static char *read_back_as(const char *path, seen *out, tt_vantage v)
{
    char err[256];
    tt_pcap_source *src = tt_pcap_source_open(path, err, sizeof err);
    if (!src) fail_msg("%s", err);
    memset(out, 0, sizeof *out);
    tt_reasm *r = tt_reasm_new(NULL, v, record, out);
    assert_int_equal(tt_pcap_source_run(src, r, NULL, NULL, err, sizeof err), 0);
    tt_reasm_free(r);
    tt_pcap_source_close(src);
    char *t = out->trace.s ? out->trace.s : strdup("");
    out->trace.s = NULL;
    return t;
}

static char *read_back(const char *path, seen *out) { return read_back_as(path, out, TT_VANTAGE_SERVER); }

static void test_round_trip(void **state)
{
    char path[] = "/tmp/tt-synth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path); /* tt_synth_open wants to create it */
    char err[256];
    tt_synth *s = tt_synth_open(path, err, sizeof err);
    if (!s) fail_msg("%s", err);
    tt_conn_info a = conn_v4(7);
    put(s, &a, TT_DIR_C2S, TT_CHUNK_READY, 0, NULL, 19, 900);          /* readable before the read */
    put(s, &a, TT_DIR_C2S, TT_CHUNK_DATA, 0, "POST / HTTP/1.1\r\n\r\n", 19, 1000);
    put(s, &a, TT_DIR_S2C, TT_CHUNK_DATA, 0, "HTTP/1.1 200 OK\r\n", 17, 2000);
    put(s, &a, TT_DIR_S2C, TT_CHUNK_GAP, 17, NULL, 5, 2500);          /* five bytes never copied */
    put(s, &a, TT_DIR_S2C, TT_CHUNK_READY, 17, NULL, 10, 2600);        /* marks ahead of the data, */
    put(s, &a, TT_DIR_S2C, TT_CHUNK_READY, 27, NULL, 4, 2700);         /* an earlier instant than it */
    put(s, &a, TT_DIR_S2C, TT_CHUNK_DATA, 22, "data: x\n\n", 9, 3000);
    put(s, &a, TT_DIR_S2C, TT_CHUNK_FIN, 31, NULL, 0, 4000);
    put(s, &a, TT_DIR_C2S, TT_CHUNK_FIN, 19, NULL, 0, 4100);
    assert_int_equal(tt_synth_close(s), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    seen back;
    char *t = read_back(path, &back);
    const char *want = "conn=1 c2s READY off=0 len=19 t=900\n"
                       "conn=1 c2s DATA off=0 len=19 t=1000 \"POST / HTTP/1.1\\r\\n\\r\\n\"\n"
                       "conn=1 s2c DATA off=0 len=17 t=2000 \"HTTP/1.1 200 OK\\r\\n\"\n"
                       "conn=1 s2c READY off=17 len=10 t=2600\n"
                       "conn=1 s2c READY off=27 len=4 t=2700\n"
                       "conn=1 s2c GAP off=17 len=5 t=3000\n"
                       "conn=1 s2c DATA off=22 len=9 t=3000 \"data: x\\n\\n\"\n"
                       "conn=1 s2c FIN off=31 len=0 t=4000\n"
                       "conn=1 c2s FIN off=19 len=0 t=4100\n";
    if (strcmp(t, want) != 0) fail_msg("read back:\n%s\nwanted:\n%s", t, want);
    assert_false(back.conn[1].orientation_guessed); /* the synthesized handshake names the client */
    assert_int_equal(back.conn[1].client.port, 41000);
    assert_int_equal(back.conn[1].server.port, 8000);
    free(t);
    /* At the wire the marks mean nothing (a capture never carries them): ignored. */
    t = read_back_as(path, &back, TT_VANTAGE_WIRE);
    if (strstr(t, "READY")) fail_msg("marks delivered at the wire:\n%s", t);
    free(t);
    unlink(path);
}

/* The kernel's sequence numbers survive the recording (a sequence mark):
 * read back at a socket vantage, the connection has the same seq_base,
 * however far into the stream the first bytes were and across the 2^32
 * wrap; a direction whose numbers were unknown stays unknown, and no mark
 * shows up as a chunk. */
static void test_sequence_numbers_kept(void **state)
{
    char path[] = "/tmp/tt-synth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    char err[256];
    tt_synth *s = tt_synth_open(path, err, sizeof err);
    if (!s) fail_msg("%s", err);
    tt_conn_info a = conn_v4(3);
    a.seq_known[TT_DIR_C2S] = true;
    a.seq_base[TT_DIR_C2S] = 0xfffffff0u;
    put(s, &a, TT_DIR_C2S, TT_CHUNK_GAP, 0, NULL, 7, 900);
    put(s, &a, TT_DIR_C2S, TT_CHUNK_DATA, 7, "POST / HTTP/1.1\r\n\r\n", 19, 1000);
    put(s, &a, TT_DIR_S2C, TT_CHUNK_DATA, 0, "HTTP/1.1 200 OK\r\n", 17, 2000);
    assert_int_equal(tt_synth_close(s), 0);
    seen back;
    char *t = read_back(path, &back);
    const char *want = "conn=1 c2s GAP off=0 len=7 t=1000\n"
                       "conn=1 c2s DATA off=7 len=19 t=1000 \"POST / HTTP/1.1\\r\\n\\r\\n\"\n"
                       "conn=1 s2c DATA off=0 len=17 t=2000 \"HTTP/1.1 200 OK\\r\\n\"\n"
                       "conn=1 c2s END off=26 len=0 t=2000\n"
                       "conn=1 s2c END off=17 len=0 t=2000\n";
    if (strcmp(t, want) != 0) fail_msg("read back:\n%s\nwanted:\n%s", t, want);
    assert_true(back.conn[1].seq_known[TT_DIR_C2S]);
    assert_int_equal(back.conn[1].seq_base[TT_DIR_C2S], 0xfffffff0u);
    assert_false(back.conn[1].seq_known[TT_DIR_S2C]);
    free(t);
    unlink(path);
}

static void test_refuses_existing_file(void **state)
{
    char path[] = "/tmp/tt-synth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256] = "";
    assert_null(tt_synth_open(path, err, sizeof err));
    assert_true(err[0] != 0);
    unlink(path);
    assert_int_equal(tt_synth_close(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_sequence_numbers_kept),
        cmocka_unit_test(test_refuses_existing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
