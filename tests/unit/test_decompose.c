/* test_decompose.c - TTFT and E2EL split into send lag, uplink, server,
 * downlink and client lag: the runs sum exactly to the total on random
 * chains; a missing vantage merges its neighbours and says which; the
 * benchmark's start missing merges send and client lag; the client socket
 * is the reference without a benchmark; ITL near minus far and events per
 * read; the disagreements; the summary over requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "join/decompose.h"
#include "test_rng.h"

#define N TT_DECOMP_NONE

static int64_t run_sum(const tt_split *s)
{
    int64_t sum = 0;
    for (size_t r = 0; r < s->n_runs; r++) sum += s->runs[r].ns;
    return sum;
}

static void names_are(const tt_split *s, size_t run, const char *want)
{
    const char *names[TT_SEG_COUNT];
    size_t n = tt_run_names(s, &s->runs[run], false, names);
    char got[256] = "";
    for (size_t k = 0; k < n; k++) {
        strcat(got, k ? "," : "");
        strcat(got, names[k]);
    }
    assert_string_equal(got, want);
}

/* reported.start, client, wire, server ready, server req; server, wire,
 * client ready, client marks; reported mark. The client wire's instants
 * (a second wire) are there too: a chain of one wire must ignore them. */
static const int64_t chain[TT_PT_COUNT] = {
    [TT_PT_REPORTED_START] = 0,  [TT_PT_CLIENT_REQ] = 100,       [TT_PT_CLIENT_WIRE_REQ] = 115,
    [TT_PT_WIRE_REQ] = 130,      [TT_PT_SERVER_READY] = 180,     [TT_PT_SERVER_REQ] = 200,
    [TT_PT_SERVER_MARK] = 10200, [TT_PT_WIRE_MARK] = 10230,      [TT_PT_CLIENT_WIRE_MARK] = 10260,
    [TT_PT_CLIENT_READY] = 10300, [TT_PT_CLIENT_MARK] = 10400,   [TT_PT_REPORTED_MARK] = 12000};

/* The chain without the kernel's ready instants (the probe, an old kernel). */
static void without_ready(int64_t p[TT_PT_COUNT])
{
    memcpy(p, chain, sizeof chain);
    p[TT_PT_SERVER_READY] = p[TT_PT_CLIENT_READY] = N;
}

static void test_all_seen(void **state)
{
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, chain);
    assert_int_equal(s.reference, TT_REF_REPORTED);
    assert_int_equal(s.total_ns, 12000);
    assert_int_equal(s.n_runs, 9);
    assert_int_equal(run_sum(&s), 12000);
    /* send lag, uplink, server queue, server, downlink, client queue, client lag */
    int64_t want[TT_PART_TLS] = {100, 80, 20, 10000, 100, 100, 1600};
    for (int p = 0; p < TT_PART_TLS; p++) {
        assert_true(s.has_part[p]);
        assert_int_equal(s.part_ns[p], want[p]);
    }
    assert_false(s.has_part[TT_PART_TLS]); /* not a TLS chain */
    assert_int_equal(s.seg_ns[TT_SEG_UP_CLIENT_WIRE], 30);
    assert_int_equal(s.seg_ns[TT_SEG_UP_WIRE_SERVER], 50);
    assert_int_equal(s.seg_ns[TT_SEG_DOWN_SERVER_WIRE], 30);
    assert_int_equal(s.seg_ns[TT_SEG_DOWN_WIRE_CLIENT], 70);
    names_are(&s, 1, "uplink.client_to_wire");
    names_are(&s, 3, "server_queue");
    names_are(&s, 4, "server_ttft");
    names_are(&s, 7, "client_queue");
    assert_int_equal(s.runs[0].from_ns, 0);
    assert_int_equal(s.runs[8].from_ns, 10400);
    assert_string_equal(tt_part_name(TT_PART_SERVER, true), "server_e2el");
    assert_string_equal(tt_part_name(TT_PART_CLIENT_QUEUE, false), "client_queue");
    assert_string_equal(tt_part_name(TT_PART_SERVER_QUEUE, true), "server_queue");
    assert_string_equal(tt_reference_name(TT_REF_CLIENT), "client");
}

/* No ready instant: the queue parts are unknown and stay inside the link
 * next to them, which is then not a part of its own either; every other
 * part as before. */
static void test_ready_missing_merges_queue(void **state)
{
    int64_t p[TT_PT_COUNT];
    without_ready(p);
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(s.n_runs, 7);
    assert_int_equal(run_sum(&s), 12000);
    assert_false(s.has_part[TT_PART_SERVER_QUEUE]);
    assert_false(s.has_part[TT_PART_CLIENT_QUEUE]);
    assert_false(s.has_part[TT_PART_UPLINK]);
    assert_false(s.has_part[TT_PART_DOWNLINK]);
    assert_true(s.has_part[TT_PART_SEND_LAG]);
    assert_true(s.has_part[TT_PART_SERVER]);
    assert_true(s.has_part[TT_PART_CLIENT_LAG]);
    assert_int_equal(s.part_ns[TT_PART_SERVER], 10000);
    names_are(&s, 2, "uplink.wire_to_server,server_queue");
    assert_int_equal(s.runs[2].ns, 70);
    names_are(&s, 5, "downlink.wire_to_client,client_queue");
    assert_int_equal(s.runs[5].ns, 170);

    /* only the client's ready known: its queue is a part, the server's not */
    p[TT_PT_CLIENT_READY] = chain[TT_PT_CLIENT_READY];
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_true(s.has_part[TT_PART_CLIENT_QUEUE]);
    assert_int_equal(s.part_ns[TT_PART_CLIENT_QUEUE], 100);
    assert_true(s.has_part[TT_PART_DOWNLINK]);
    assert_int_equal(s.part_ns[TT_PART_DOWNLINK], 100);
    assert_false(s.has_part[TT_PART_SERVER_QUEUE]);
    assert_int_equal(run_sum(&s), 12000);
}

static void test_server_missing_merges(void **state)
{
    int64_t p[TT_PT_COUNT];
    without_ready(p);
    p[TT_PT_SERVER_REQ] = p[TT_PT_SERVER_MARK] = N;
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(s.n_runs, 5);
    assert_int_equal(run_sum(&s), 12000);
    assert_true(s.has_part[TT_PART_SEND_LAG]);
    assert_false(s.has_part[TT_PART_UPLINK]);
    assert_false(s.has_part[TT_PART_SERVER]);
    assert_false(s.has_part[TT_PART_DOWNLINK]);
    assert_true(s.has_part[TT_PART_CLIENT_LAG]);
    assert_true(s.has_seg[TT_SEG_UP_CLIENT_WIRE]);
    assert_false(s.has_seg[TT_SEG_UP_WIRE_SERVER]);
    assert_int_equal(s.runs[2].ns, 10100);
    names_are(&s, 2, "uplink.wire_to_server,server_queue,server_ttft,downlink.server_to_wire");
    assert_false(s.seen & (1u << TT_PT_SERVER_REQ));
}

static void test_wire_missing_keeps_parts(void **state)
{
    int64_t p[TT_PT_COUNT];
    memcpy(p, chain, sizeof p);
    p[TT_PT_WIRE_REQ] = p[TT_PT_WIRE_MARK] = N;
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(s.n_runs, 7);
    for (int k = 0; k < TT_PART_TLS; k++) assert_true(s.has_part[k]);
    assert_int_equal(s.part_ns[TT_PART_UPLINK], 80);
    assert_false(s.has_seg[TT_SEG_UP_CLIENT_WIRE]);
    names_are(&s, 1, "uplink");
}

static void test_client_missing(void **state)
{
    int64_t p[TT_PT_COUNT];
    without_ready(p);
    p[TT_PT_CLIENT_REQ] = p[TT_PT_CLIENT_MARK] = N;
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(run_sum(&s), 12000);
    assert_false(s.has_part[TT_PART_SEND_LAG]);
    assert_true(s.has_part[TT_PART_SERVER]);
    names_are(&s, 0, "send_lag,uplink.client_to_wire");
    assert_int_equal(s.runs[0].ns, 130);
    names_are(&s, s.n_runs - 1, "downlink.wire_to_client,client_queue,client_lag");
    assert_int_equal(s.runs[s.n_runs - 1].ns, 12000 - 10230);
}

static void test_reported_without_start(void **state)
{
    int64_t p[TT_PT_COUNT];
    without_ready(p);
    p[TT_PT_REPORTED_START] = p[TT_PT_REPORTED_MARK] = N;
    tt_split s;
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(run_sum(&s), 12000);
    assert_int_equal(s.runs[0].ns, 12000 - (10400 - 100));
    assert_int_equal(s.runs[0].from_ns, N);
    names_are(&s, 0, "send_lag,client_lag");
    assert_false(s.has_part[TT_PART_SEND_LAG]);
    assert_false(s.has_part[TT_PART_CLIENT_LAG]);
    assert_false(s.has_part[TT_PART_UPLINK]); /* the server's queue wait is in there */
    assert_int_equal(s.part_ns[TT_PART_SERVER], 10000);

    /* nothing inside seen: one run, the whole */
    int64_t none[TT_PT_COUNT];
    for (int k = 0; k < TT_PT_COUNT; k++) none[k] = N;
    tt_split_compute(&s, TT_REF_REPORTED, 777, none);
    assert_int_equal(s.n_runs, 1);
    assert_int_equal(s.runs[0].ns, 777);
    names_are(&s, 0, "send_lag,uplink,server_queue,server_ttft,downlink,client_queue,client_lag");
}

static void test_client_reference(void **state)
{
    tt_split s;
    tt_split_compute(&s, TT_REF_CLIENT, 0, chain);
    assert_int_equal(s.reference, TT_REF_CLIENT);
    assert_int_equal(s.total_ns, 10300);
    assert_int_equal(run_sum(&s), 10300);
    assert_false(s.has_part[TT_PART_SEND_LAG]);
    assert_false(s.has_part[TT_PART_CLIENT_LAG]);
    assert_int_equal(s.part_ns[TT_PART_DOWNLINK], 100);
    assert_int_equal(s.part_ns[TT_PART_CLIENT_QUEUE], 100);
    assert_int_equal(s.n_runs, 7);

    int64_t p[TT_PT_COUNT];
    memcpy(p, chain, sizeof p);
    p[TT_PT_CLIENT_REQ] = N;
    tt_split_compute(&s, TT_REF_CLIENT, 0, p);
    assert_int_equal(s.reference, TT_REF_NONE); /* the reference's own instants are needed */
}

/* Two hosts' wires: the uplink and downlink each in three stretches, the
 * one between the wires among them; the parts unchanged. Without the
 * client wire's instants for a request, the stretch from the client to the
 * server host's wire is one run naming both segments. */
static void test_two_wires(void **state)
{
    tt_split s;
    tt_split_compute_chain(&s, TT_REF_REPORTED, 12000, chain, TT_SEGS_TWO_WIRES);
    assert_int_equal(s.n_runs, 11);
    assert_int_equal(run_sum(&s), 12000);
    assert_int_equal(s.seg_ns[TT_SEG_UP_CLIENT_WIRE], 15);
    assert_int_equal(s.seg_ns[TT_SEG_UP_WIRE_WIRE], 15);
    assert_int_equal(s.seg_ns[TT_SEG_UP_WIRE_SERVER], 50);
    assert_int_equal(s.seg_ns[TT_SEG_DOWN_SERVER_WIRE], 30);
    assert_int_equal(s.seg_ns[TT_SEG_DOWN_WIRE_WIRE], 30);
    assert_int_equal(s.seg_ns[TT_SEG_DOWN_WIRE_CLIENT], 40);
    assert_int_equal(s.part_ns[TT_PART_UPLINK], 80);
    assert_int_equal(s.part_ns[TT_PART_DOWNLINK], 100);
    names_are(&s, 2, "uplink.wire_to_wire");

    /* the same instants in a chain of one wire: the client wire's are not in it */
    tt_split_compute(&s, TT_REF_REPORTED, 12000, chain);
    assert_int_equal(s.n_runs, 9);
    assert_int_equal(s.seg_ns[TT_SEG_UP_CLIENT_WIRE], 30);
    assert_false(s.has_seg[TT_SEG_UP_WIRE_WIRE]);
    names_are(&s, 1, "uplink.client_to_wire");

    int64_t p[TT_PT_COUNT];
    memcpy(p, chain, sizeof p);
    p[TT_PT_CLIENT_WIRE_REQ] = p[TT_PT_CLIENT_WIRE_MARK] = N;
    tt_split_compute_chain(&s, TT_REF_REPORTED, 12000, p, TT_SEGS_TWO_WIRES);
    assert_int_equal(s.n_runs, 9);
    assert_false(s.has_seg[TT_SEG_UP_CLIENT_WIRE]);
    assert_int_equal(s.seg_ns[TT_SEG_UP_WIRE_SERVER], 50);
    assert_int_equal(s.part_ns[TT_PART_UPLINK], 80);
    names_are(&s, 1, "uplink.client_to_wire,uplink.wire_to_wire");
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
    return tt_xorshift64(&rng);
}

static void test_random_chains_sum_exactly(void **state)
{
    static const int pairs[4][2] = {{TT_PT_REPORTED_START, TT_PT_REPORTED_MARK},
                                    {TT_PT_CLIENT_REQ, TT_PT_CLIENT_MARK},
                                    {TT_PT_WIRE_REQ, TT_PT_WIRE_MARK},
                                    {TT_PT_SERVER_REQ, TT_PT_SERVER_MARK}};
    for (int iter = 0; iter < 200000; iter++) {
        int64_t p[TT_PT_COUNT];
        int64_t t = (int64_t)(next_random() % 4000000000000ull);
        for (int k = 0; k < TT_PT_COUNT; k++) {
            /* mostly increasing, sometimes out of order (clock skew, a non-token TTFT) */
            int64_t step = (int64_t)(next_random() % 50000000) - (next_random() % 8 == 0 ? 60000000 : 0);
            t += step;
            p[k] = t;
        }
        unsigned seen = (unsigned)next_random();
        for (int q = 0; q < 4; q++)
            if (!(seen & (1u << q))) p[pairs[q][0]] = p[pairs[q][1]] = N;
        if (!(seen & 16) || p[TT_PT_SERVER_REQ] == N) p[TT_PT_SERVER_READY] = N;
        if (!(seen & 32) || p[TT_PT_CLIENT_MARK] == N) p[TT_PT_CLIENT_READY] = N;
        bool two_wires = next_random() % 2, tls = next_random() % 2;
        if (!(seen & 64)) p[TT_PT_CLIENT_WIRE_REQ] = p[TT_PT_CLIENT_WIRE_MARK] = N;
        if (!(seen & 128)) p[TT_PT_CLIENT_TLS_REQ] = p[TT_PT_CLIENT_TLS_MARK] = N;
        if (!(seen & 256)) p[TT_PT_SERVER_TLS_REQ] = p[TT_PT_SERVER_TLS_MARK] = N;
        if (!tls) /* outside a TLS chain the TLS points are ignored, whatever they hold */
            p[TT_PT_CLIENT_TLS_REQ] = p[TT_PT_CLIENT_TLS_MARK] = p[TT_PT_SERVER_TLS_REQ] = p[TT_PT_SERVER_TLS_MARK] = N;
        tt_reference ref = (tt_reference)(1 + next_random() % 6);
        int64_t total = p[TT_PT_REPORTED_START] != N ? p[TT_PT_REPORTED_MARK] - p[TT_PT_REPORTED_START]
                                                     : (int64_t)(next_random() % 100000000);
        tt_split s;
        uint16_t segs = (uint16_t)((two_wires ? TT_SEGS_TWO_WIRES : TT_SEGS_ONE_WIRE) | (tls ? TT_SEGS_TLS : 0));
        tt_split_compute_chain(&s, ref, total, p, segs);
        if (s.reference == TT_REF_NONE) {
            assert_true(ref != TT_REF_REPORTED);
            continue;
        }
        assert_int_equal(run_sum(&s), s.total_ns);
        if (ref == TT_REF_REPORTED) assert_int_equal(s.total_ns, total);
        uint16_t cover = 0;
        for (size_t r = 0; r < s.n_runs; r++) {
            assert_int_equal(cover & s.runs[r].segs, 0);
            cover |= s.runs[r].segs;
        }
        assert_int_equal(cover, s.scope);
        /* a part measured on its own is the difference of its own instants
         * (with TLS, the library's instants bound send lag, server and
         * client lag, and the tls part is the sum of its four stretches) */
        static const int plain[TT_PART_TLS][2] = {
            {TT_PT_REPORTED_START, TT_PT_CLIENT_REQ}, {TT_PT_CLIENT_REQ, TT_PT_SERVER_READY},
            {TT_PT_SERVER_READY, TT_PT_SERVER_REQ},   {TT_PT_SERVER_REQ, TT_PT_SERVER_MARK},
            {TT_PT_SERVER_MARK, TT_PT_CLIENT_READY},  {TT_PT_CLIENT_READY, TT_PT_CLIENT_MARK},
            {TT_PT_CLIENT_MARK, TT_PT_REPORTED_MARK}};
        static const int with_tls[TT_PART_TLS][2] = {
            {TT_PT_REPORTED_START, TT_PT_CLIENT_TLS_REQ}, {TT_PT_CLIENT_REQ, TT_PT_SERVER_READY},
            {TT_PT_SERVER_READY, TT_PT_SERVER_REQ},       {TT_PT_SERVER_TLS_REQ, TT_PT_SERVER_TLS_MARK},
            {TT_PT_SERVER_MARK, TT_PT_CLIENT_READY},      {TT_PT_CLIENT_READY, TT_PT_CLIENT_MARK},
            {TT_PT_CLIENT_TLS_MARK, TT_PT_REPORTED_MARK}};
        const int (*bounds)[2] = tls ? with_tls : plain;
        for (int q = 0; q < TT_PART_TLS; q++)
            if (s.has_part[q]) {
                assert_true(p[bounds[q][0]] != N && p[bounds[q][1]] != N);
                assert_int_equal(s.part_ns[q], p[bounds[q][1]] - p[bounds[q][0]]);
            }
        assert_true(tls || !s.has_part[TT_PART_TLS]);
        if (s.has_part[TT_PART_TLS]) {
            static const int ends[4][2] = {{TT_PT_CLIENT_TLS_REQ, TT_PT_CLIENT_REQ},
                                           {TT_PT_SERVER_REQ, TT_PT_SERVER_TLS_REQ},
                                           {TT_PT_SERVER_TLS_MARK, TT_PT_SERVER_MARK},
                                           {TT_PT_CLIENT_MARK, TT_PT_CLIENT_TLS_MARK}};
            int64_t sum = 0;
            for (int k = 0; k < 4; k++) {
                assert_true(p[ends[k][0]] != N && p[ends[k][1]] != N);
                sum += p[ends[k][1]] - p[ends[k][0]];
            }
            assert_int_equal(s.part_ns[TT_PART_TLS], sum);
        }
    }
}

/* A request seen above TLS at both ends: the libraries' four stretches
 * are the tls part, send lag ends at the client's SSL_write, server runs
 * between the server's plaintext instants, client lag starts at the
 * client's SSL_read; without the client's TLS instants its two stretches
 * merge into send lag and client lag; the same instants outside a TLS
 * chain are ignored. */
static void test_tls_chain(void **state)
{
    int64_t p[TT_PT_COUNT];
    memcpy(p, chain, sizeof p);
    p[TT_PT_CLIENT_TLS_REQ] = 50;
    p[TT_PT_SERVER_TLS_REQ] = 230;
    p[TT_PT_SERVER_TLS_MARK] = 10190;
    p[TT_PT_CLIENT_TLS_MARK] = 10450;
    tt_split s;
    tt_split_compute_chain(&s, TT_REF_REPORTED, 12000, p, TT_SEGS_ONE_WIRE | TT_SEGS_TLS);
    assert_int_equal(run_sum(&s), 12000);
    assert_int_equal(s.n_runs, 13);
    int64_t want[TT_PART_COUNT] = {
        [TT_PART_SEND_LAG] = 50,      [TT_PART_UPLINK] = 80,       [TT_PART_SERVER_QUEUE] = 20,
        [TT_PART_SERVER] = 10190 - 230, [TT_PART_DOWNLINK] = 100,  [TT_PART_CLIENT_QUEUE] = 100,
        [TT_PART_CLIENT_LAG] = 1550,  [TT_PART_TLS] = 50 + 30 + 10 + 50};
    for (int k = 0; k < TT_PART_COUNT; k++) {
        assert_true(s.has_part[k]);
        assert_int_equal(s.part_ns[k], want[k]);
    }
    assert_int_equal(s.seg_ns[TT_SEG_TLS_CLIENT_SEND], 50);
    assert_int_equal(s.seg_ns[TT_SEG_TLS_SERVER_RECV], 30);
    assert_int_equal(s.seg_ns[TT_SEG_TLS_SERVER_SEND], 10);
    assert_int_equal(s.seg_ns[TT_SEG_TLS_CLIENT_RECV], 50);
    names_are(&s, 1, "tls.client_send");
    /* the client's library not seen: its stretches go with send and client lag */
    p[TT_PT_CLIENT_TLS_REQ] = p[TT_PT_CLIENT_TLS_MARK] = N;
    tt_split_compute_chain(&s, TT_REF_REPORTED, 12000, p, TT_SEGS_ONE_WIRE | TT_SEGS_TLS);
    assert_int_equal(run_sum(&s), 12000);
    assert_false(s.has_part[TT_PART_TLS]);
    assert_false(s.has_part[TT_PART_SEND_LAG]);
    names_are(&s, 0, "send_lag,tls.client_send");
    names_are(&s, s.n_runs - 1, "tls.client_recv,client_lag");
    assert_true(s.has_seg[TT_SEG_TLS_SERVER_RECV] && s.has_seg[TT_SEG_TLS_SERVER_SEND]);
    /* the client's plaintext as the reference: from its SSL_write to its SSL_read */
    p[TT_PT_CLIENT_TLS_REQ] = 50;
    p[TT_PT_CLIENT_TLS_MARK] = 10450;
    tt_split_compute_chain(&s, TT_REF_CLIENT_TLS, 0, p, TT_SEGS_ONE_WIRE | TT_SEGS_TLS);
    assert_int_equal(s.total_ns, 10400);
    assert_int_equal(run_sum(&s), 10400);
    assert_true(s.has_part[TT_PART_TLS]);
    assert_false(s.has_part[TT_PART_SEND_LAG]);
    /* not a TLS chain: the same instants change nothing */
    tt_split plain;
    tt_split_compute(&plain, TT_REF_REPORTED, 12000, chain);
    tt_split_compute(&s, TT_REF_REPORTED, 12000, p);
    assert_int_equal(s.n_runs, plain.n_runs);
    for (size_t r = 0; r < s.n_runs; r++) assert_int_equal(s.runs[r].ns, plain.runs[r].ns);
    assert_string_equal(tt_part_name(TT_PART_TLS, false), "tls");
    assert_string_equal(tt_reference_name(TT_REF_CLIENT_TLS), "client_tls");
}

/* ---- whole breakdowns over in-memory analyses ---- */

#define MAX_REQS 8

typedef struct fixture_vantage {
    tt_request reqs[MAX_REQS];
    tt_req_metrics metrics[MAX_REQS];
    tt_analysis a;
} fixture_vantage;

static void vantage_init(fixture_vantage *fv, tt_vantage v)
{
    memset(fv, 0, sizeof *fv);
    fv->a.vantage = v;
    fv->a.reqs = fv->reqs;
    fv->a.metrics = fv->metrics;
    fv->a.clock = TT_CLOCK_MONOTONIC;
    fv->a.summary.n_pct = 1;
    fv->a.summary.pct_at[0] = 99;
}

static void vantage_free(fixture_vantage *fv)
{
    for (size_t i = 0; i < fv->a.n_reqs; i++) {
        free(fv->reqs[i].events);
        tt_req_metrics_free(&fv->metrics[i]);
    }
}

/* A complete streamed request: a ROLE event at role_ns (0: none), then
 * token events at tokens[] (chunk ordinals chunks[], NULL: one each). */
static tt_request *add_stream(fixture_vantage *fv, const char *id, uint64_t start, uint64_t role_ns,
                              const uint64_t *tokens, const uint32_t *chunks, uint32_t n)
{
    assert_true(fv->a.n_reqs < MAX_REQS);
    tt_request *r = &fv->reqs[fv->a.n_reqs];
    memset(r, 0, sizeof *r);
    snprintf(r->method, sizeof r->method, "POST");
    snprintf(r->request_id, sizeof r->request_id, "%s", id);
    r->client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = (uint16_t)(1000 + fv->a.n_reqs)};
    fv->a.n_reqs++;
    r->server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    r->status = 200;
    r->framing = TT_FRAMING_SSE;
    r->terminal_seen = true;
    r->req_first_ns = start;
    r->req_last_ns = start + 5;
    r->req_ready_ns = r->first_token_ready_ns = r->last_token_ready_ns = TT_NS_NONE; /* no kernel ready instant */
    r->usage_completion_tokens = -1;
    r->usage_prompt_tokens = -1;
    r->events = calloc(n + 1, sizeof *r->events);
    assert_non_null(r->events);
    if (role_ns) r->events[r->n_events++] = (tt_event_rec){.kind = TT_EV_ROLE, .dispatch_ns = role_ns, .last_chunk = 0};
    for (uint32_t k = 0; k < n; k++)
        r->events[r->n_events++] = (tt_event_rec){
            .kind = TT_EV_TOKEN, .dispatch_ns = tokens[k], .last_chunk = chunks ? chunks[k] : k + 1, .text_bytes = 3};
    r->token_events = n;
    r->text_bytes = 3ull * n;
    r->first_token_ns = tokens[0];
    r->last_token_ns = tokens[n - 1];
    r->resp_last_ns = tokens[n - 1] + 10;
    return r;
}

static void fill_metrics(fixture_vantage *fv)
{
    for (size_t i = 0; i < fv->a.n_reqs; i++)
        assert_int_equal(tt_req_metrics_compute(&fv->reqs[i], &fv->metrics[i]), 0);
}

static tt_bench_request records[MAX_REQS];
static int64_t record_itls[MAX_REQS][8];

static void test_breakdown_recovers_client_lag(void **state)
{
    static fixture_vantage s, c, w;
    vantage_init(&s, TT_VANTAGE_SERVER);
    vantage_init(&c, TT_VANTAGE_CLIENT);
    vantage_init(&w, TT_VANTAGE_WIRE);
    const int64_t delay = 2000000; /* the client's own lag before it stamps each event */
    const uint64_t base = 5000000000ull;
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = base + (uint64_t)i * 1000000000ull;
        uint64_t st[4] = {t0 + 20000000, t0 + 25000000, t0 + 30000000, t0 + 35000000};
        uint64_t wt[4], ct[4];
        for (int k = 0; k < 4; k++) {
            wt[k] = st[k] + 10000;
            ct[k] = st[k] + 30000 + (k == 2 ? 5000000 : 0); /* the third arrives late, with the fourth */
        }
        ct[3] = ct[2];
        uint32_t cchunks[4] = {1, 2, 3, 3};
        char id[16];
        snprintf(id, sizeof id, "b-%d", i);
        /* the kernel made the request readable 10 us before the server read
         * it, and each token 10 us before the client read its first and
         * last token events */
        add_stream(&s, id, t0 + 100000, 0, st, NULL, 4)->req_ready_ns = t0 + 90000;
        add_stream(&w, id, t0 + 60000, 0, wt, NULL, 4);
        tt_request *cr = add_stream(&c, id, t0 + 50000, t0 + 19000000, ct, cchunks, 4);
        cr->first_token_ready_ns = ct[0] - 10000;
        cr->last_token_ready_ns = st[3] + 20000;
        /* the benchmark started 40 us before the client's first byte and
         * stamped every event `delay` after the client read it */
        records[i] = (tt_bench_request){
            .index = (size_t)i, .start_clock = TT_BENCH_CLOCK_MONO, .start_ns = (int64_t)(t0 + 10000),
            .ttft_ns = (int64_t)(ct[0] + (uint64_t)delay - (t0 + 10000)),
            .e2el_ns = (int64_t)(ct[3] + (uint64_t)delay - (t0 + 10000)), .output_tokens = 4, .success = true,
            .text_len = 12, .itl_ns = record_itls[i], .n_itl = 3};
        for (int k = 0; k < 3; k++) record_itls[i][k] = (int64_t)(ct[k + 1] - ct[k]);
    }
    fill_metrics(&s);
    fill_metrics(&c);
    fill_metrics(&w);
    tt_bench_result br = {.format = TT_BENCH_VLLM, .reqs = records, .n_reqs = 3};
    const tt_analysis *as[] = {&s.a, &c.a, &w.a};
    tt_breakdown b;
    assert_int_equal(tt_breakdown_build(&b, as, 3, &br, NULL), 0);
    assert_int_equal(b.join.n, 3);
    assert_int_equal(b.reference, TT_REF_REPORTED);
    for (size_t i = 0; i < 3; i++) {
        const tt_request_breakdown *pb = &b.per[i];
        assert_true(pb->has_reported);
        assert_int_equal(pb->ttft.total_ns, records[i].ttft_ns);
        assert_int_equal(run_sum(&pb->ttft), records[i].ttft_ns);
        assert_int_equal(pb->ttft.part_ns[TT_PART_CLIENT_LAG], delay);
        assert_int_equal(pb->ttft.part_ns[TT_PART_SEND_LAG], 40000);
        assert_int_equal(pb->ttft.part_ns[TT_PART_UPLINK], 40000);
        assert_int_equal(pb->ttft.part_ns[TT_PART_SERVER_QUEUE], 10000);
        assert_int_equal(pb->ttft.part_ns[TT_PART_SERVER], 20000000 - 100000);
        assert_int_equal(pb->ttft.part_ns[TT_PART_DOWNLINK], 20000);
        assert_int_equal(pb->ttft.part_ns[TT_PART_CLIENT_QUEUE], 10000);
        assert_int_equal(pb->ttft.seg_ns[TT_SEG_DOWN_SERVER_WIRE], 10000);
        assert_int_equal(run_sum(&pb->e2el), records[i].e2el_ns);
        assert_int_equal(pb->e2el.part_ns[TT_PART_CLIENT_LAG], delay);
        assert_int_equal(pb->e2el.part_ns[TT_PART_DOWNLINK], 20000); /* the last token came with the third */
        assert_int_equal(pb->e2el.part_ns[TT_PART_CLIENT_QUEUE], 10000);
        /* ITL: client minus server per gap; events 3 and 4 share one read */
        const tt_itl_split *it = &pb->itl;
        assert_true(it->valid);
        assert_int_equal(it->near, TT_VANTAGE_CLIENT);
        assert_int_equal(it->far, TT_VANTAGE_SERVER);
        assert_int_equal(it->n, 3);
        assert_int_equal(it->near_minus_far_ns[0], 0);
        assert_int_equal(it->near_minus_far_ns[1], 5000000);
        assert_int_equal(it->near_minus_far_ns[2], -5000000);
        assert_int_equal(it->reads, 3);
        assert_int_equal(it->shared_read_events, 2);
        assert_int_equal(it->max_events_per_read, 2);
        assert_int_equal(pb->dis.mask, 0);
    }
    assert_int_equal(b.ttft_part[TT_PART_CLIENT_LAG].n, 3);
    assert_true(b.ttft_part[TT_PART_CLIENT_LAG].median == (double)delay);
    assert_true(b.ttft_part[TT_PART_CLIENT_LAG].p99 == (double)delay);
    assert_int_equal(b.ttft_merged, 0);
    assert_int_equal(b.reported_ok, 3);
    assert_int_equal(b.reported_ttft.n, 3);
    assert_int_equal(b.itl_shared_read_events, 6);
    assert_int_equal(b.itl_token_events, 12);
    /* the benchmark's ITL is the client's: a 0 where two events shared a read */
    assert_int_equal(b.itl_reported_matched.n, 9);
    assert_true(b.itl_reported_matched.min == 0);
    assert_true(b.itl_far_matched.min == 5000000);
    tt_breakdown_free(&b);

    /* no benchmark file: the client socket is the reference */
    assert_int_equal(tt_breakdown_build(&b, as, 3, NULL, NULL), 0);
    assert_int_equal(b.reference, TT_REF_CLIENT);
    assert_int_equal(b.per[0].ttft.total_ns, c.metrics[0].ttft_ns);
    assert_false(b.per[0].ttft.has_part[TT_PART_CLIENT_LAG]);
    assert_int_equal(b.ttft_part[TT_PART_SEND_LAG].n, 0);
    assert_false(b.has_reported);
    tt_breakdown_free(&b);

    /* the server missing: uplink, server and downlink merge, every request says so */
    const tt_analysis *cw[] = {&c.a, &w.a};
    assert_int_equal(tt_breakdown_build(&b, cw, 2, &br, NULL), 0);
    assert_int_equal(b.ttft_merged, 3);
    assert_int_equal(run_sum(&b.per[1].ttft), records[1].ttft_ns);
    assert_int_equal(b.per[1].ttft.part_ns[TT_PART_CLIENT_LAG], delay);
    assert_false(b.per[1].ttft.has_part[TT_PART_SERVER]);
    assert_true(b.per[1].itl.valid); /* the wire stands in for the far side */
    assert_int_equal(b.per[1].itl.far, TT_VANTAGE_WIRE);
    tt_breakdown_free(&b);
    vantage_free(&s);
    vantage_free(&c);
    vantage_free(&w);
}

static void test_disagreements(void **state)
{
    static fixture_vantage c, w;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    vantage_init(&w, TT_VANTAGE_WIRE);
    static char ids[6][16];
    for (int i = 0; i < 6; i++) {
        uint64_t t0 = 1000000000ull * (uint64_t)(i + 1);
        uint64_t ct[4] = {t0 + 20000000, t0 + 25000000, t0 + 30000000, t0 + 35000000};
        uint64_t wt[4] = {ct[0] - 20000, ct[1] - 20000, ct[2] - 20000, ct[3] - 20000};
        snprintf(ids[i], sizeof ids[i], "d-%d", i);
        add_stream(&c, ids[i], t0 + 50000, t0 + 10000000, ct, NULL, 4);
        tt_request *wr = add_stream(&w, ids[i], t0 + 60000, t0 + 9990000, wt, NULL, 4);
        wr->usage_completion_tokens = 4;
        c.reqs[i].usage_completion_tokens = 4;
        records[i] = (tt_bench_request){
            .index = (size_t)i, .request_id = ids[i], .start_clock = TT_BENCH_CLOCK_MONO, .start_ns = (int64_t)t0,
            .ttft_ns = (int64_t)(ct[0] + 1000 - t0), .e2el_ns = (int64_t)(ct[3] + 1000 - t0), .output_tokens = 4,
            .success = true, .text_len = 12};
    }
    records[0].output_tokens = 5;                                   /* tokens */
    records[1].ttft_ns = (int64_t)(10000000 + 500);                 /* stamped at the role event */
    records[2].success = false;                                     /* failed, yet completed */
    records[2].error = "timeout";
    w.reqs[3].incomplete = TT_INC_RESPONSE_CUT;                     /* successful, yet cut */
    c.reqs[3].incomplete = TT_INC_RESPONSE_CUT;
    records[4].text_len = 99;                                       /* text */
    records[5].start_clock = TT_BENCH_CLOCK_NONE;                   /* no start: TTFT below the client's */
    records[5].start_ns = TT_BENCH_NONE;
    records[5].ttft_ns = 19000000;
    fill_metrics(&c);
    fill_metrics(&w);
    tt_bench_result br = {.format = TT_BENCH_VLLM, .reqs = records, .n_reqs = 6};
    const tt_analysis *as[] = {&c.a, &w.a};
    tt_breakdown b;
    assert_int_equal(tt_breakdown_build(&b, as, 2, &br, NULL), 0);
    assert_int_equal(b.join.bench_by_key[TT_JOIN_ID], 6);
    assert_int_equal(b.per[0].dis.mask, TT_DIS_TOKENS);
    assert_int_equal(b.per[0].dis.reported_tokens, 5);
    assert_int_equal(b.per[0].dis.usage_tokens, 4);
    assert_int_equal(b.per[0].dis.vantage, TT_VANTAGE_CLIENT);
    assert_int_equal(b.per[1].dis.mask, TT_DIS_TTFT_NON_TOKEN);
    assert_int_equal(b.per[1].dis.ttft_event_kind, TT_EV_ROLE);
    assert_int_equal(b.per[1].dis.ttft_early_ns, 20000000 - 10000500);
    assert_true(b.per[1].ttft.part_ns[TT_PART_CLIENT_LAG] < 0);
    assert_int_equal(run_sum(&b.per[1].ttft), records[1].ttft_ns);
    assert_int_equal(b.per[2].dis.mask, TT_DIS_FAILED_BUT_COMPLETED);
    assert_int_equal(b.per[2].ttft.reference, TT_REF_CLIENT); /* a failed record has no TTFT to split */
    assert_int_equal(b.per[3].dis.mask, TT_DIS_COMPLETED_BUT_FAILED);
    assert_int_equal(b.per[4].dis.mask, TT_DIS_TEXT_LENGTH);
    assert_int_equal(b.per[4].dis.text_bytes, 12);
    assert_int_equal(b.per[5].dis.mask, TT_DIS_TTFT_NON_TOKEN);
    assert_int_equal(b.per[5].dis.ttft_event_kind, TT_EV_ROLE);
    assert_int_equal(b.per[5].ttft.runs[0].from_ns, N); /* send and client lag together */
    assert_int_equal(run_sum(&b.per[5].ttft), 19000000);
    for (int k = 0; k < TT_DIS_COUNT_BITS; k++) assert_int_equal(b.dis_count[k], k == 1 ? 2 : 1);
    assert_int_equal(b.reported_failed, 1);
    tt_breakdown_free(&b);
    vantage_free(&c);
    vantage_free(&w);
}

static void test_distribution_of(void **state)
{
    double v[] = {5, 1, 4, 2, 3};
    double pct[] = {50, 99};
    tt_distribution d;
    tt_distribution_of(v, 5, pct, 2, &d);
    assert_int_equal(d.n, 5);
    assert_true(d.mean == 3 && d.median == 3 && d.min == 1 && d.max == 5);
    assert_true(d.pct[0] == 3);
    assert_true(d.pct[1] > 4.9 && d.pct[1] < 5);
    tt_distribution_of(v, 0, pct, 2, &d);
    assert_int_equal(d.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_seen),
        cmocka_unit_test(test_server_missing_merges),
        cmocka_unit_test(test_wire_missing_keeps_parts),
        cmocka_unit_test(test_client_missing),
        cmocka_unit_test(test_reported_without_start),
        cmocka_unit_test(test_client_reference),
        cmocka_unit_test(test_two_wires),
        cmocka_unit_test(test_random_chains_sum_exactly),
        cmocka_unit_test(test_tls_chain),
        cmocka_unit_test(test_ready_missing_merges_queue),
        cmocka_unit_test(test_breakdown_recovers_client_lag),
        cmocka_unit_test(test_disagreements),
        cmocka_unit_test(test_distribution_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
