/* test_join.c - one request across vantages (x-request-id, else connection
 * and TCP sequence number, else connection and ordinal, else response id,
 * each key counted per vantage) and to the
 * benchmark's records (record id, <prefix><index> ids, order and start,
 * order alone), each match with its confidence. Analyses are built in
 * memory: requests with the fields the join reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "join/join.h"

#define MAX_REQS 16

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
}

/* Append a POST with the given identity starting at start_ns. */
static tt_request *add_request(fixture_vantage *fv, const char *id, uint16_t client_port, uint32_t ordinal,
                               const char *response_id, uint64_t start_ns)
{
    assert_true(fv->a.n_reqs < MAX_REQS);
    tt_request *r = &fv->reqs[fv->a.n_reqs++];
    memset(r, 0, sizeof *r);
    snprintf(r->method, sizeof r->method, "POST");
    if (id) snprintf(r->request_id, sizeof r->request_id, "%s", id);
    if (response_id) snprintf(r->response_id, sizeof r->response_id, "%s", response_id);
    r->client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = client_port};
    r->server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    r->ordinal = ordinal;
    r->status = 200;
    r->req_first_ns = start_ns;
    r->req_last_ns = start_ns + 10;
    r->first_token_ns = r->last_token_ns = TT_NS_NONE;
    r->req_ready_ns = r->first_token_ready_ns = r->last_token_ready_ns = TT_NS_NONE; /* no kernel ready instant */
    r->usage_completion_tokens = -1;
    r->usage_prompt_tokens = -1;
    return r;
}

static size_t group_of(const tt_join *j, tt_vantage v, size_t req)
{
    for (size_t g = 0; g < j->n; g++)
        if (j->reqs[g].at[v] == req) return g;
    fail_msg("request %zu at vantage %d is in no group", req, (int)v);
    return 0;
}

static void test_id_join_counts_repeats(void **state)
{
    static fixture_vantage s, c, w;
    vantage_init(&s, TT_VANTAGE_SERVER);
    vantage_init(&c, TT_VANTAGE_CLIENT);
    vantage_init(&w, TT_VANTAGE_WIRE);
    /* "a" is sent twice: the first at each vantage meets the first */
    add_request(&c, "a", 1000, 0, NULL, 100);
    add_request(&c, "b", 1001, 0, NULL, 200);
    add_request(&c, "a", 1002, 0, NULL, 300);
    add_request(&s, "a", 1000, 0, NULL, 150);
    add_request(&s, "b", 1001, 0, NULL, 250);
    add_request(&s, "a", 1002, 0, NULL, 350);
    add_request(&w, "a", 1000, 0, NULL, 120);
    add_request(&w, "a", 1002, 0, NULL, 320);
    const tt_analysis *as[] = {&s.a, &c.a, &w.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 3, NULL, NULL), 0);
    assert_int_equal(j.n, 3);
    assert_int_equal(j.multi_vantage, 3);
    size_t g0 = group_of(&j, TT_VANTAGE_CLIENT, 0), g2 = group_of(&j, TT_VANTAGE_CLIENT, 2);
    assert_int_equal(j.reqs[g0].at[TT_VANTAGE_SERVER], 0);
    assert_int_equal(j.reqs[g0].at[TT_VANTAGE_WIRE], 0);
    assert_int_equal(j.reqs[g2].at[TT_VANTAGE_SERVER], 2);
    assert_int_equal(j.reqs[g2].at[TT_VANTAGE_WIRE], 1);
    assert_int_equal(j.reqs[g0].how[TT_VANTAGE_SERVER], TT_JOIN_NONE); /* first vantage of its group */
    assert_int_equal(j.reqs[g0].how[TT_VANTAGE_CLIENT], TT_JOIN_ID);
    assert_int_equal(j.reqs[g0].how[TT_VANTAGE_WIRE], TT_JOIN_ID);
    size_t gb = group_of(&j, TT_VANTAGE_CLIENT, 1);
    assert_int_equal(j.reqs[gb].at[TT_VANTAGE_WIRE], TT_JOIN_ABSENT);
    /* ordered by start: the client's start when it saw the request */
    assert_int_equal(j.reqs[0].start_ns, 100);
    assert_int_equal(j.reqs[1].start_ns, 200);
    assert_int_equal(j.reqs[2].start_ns, 300);
    assert_int_equal(j.by_key[TT_JOIN_ID], 5);
    assert_non_null(tt_join_request(&j, &j.reqs[0], TT_VANTAGE_SERVER));
    assert_null(tt_join_request(&j, &j.reqs[1], TT_VANTAGE_WIRE));
    tt_join_free(&j);
}

static void test_connection_and_response_id_fallbacks(void **state)
{
    static fixture_vantage s, c;
    vantage_init(&s, TT_VANTAGE_SERVER);
    vantage_init(&c, TT_VANTAGE_CLIENT);
    /* no ids: two requests on one keep-alive connection, one on another */
    add_request(&c, NULL, 2000, 0, "chatcmpl-1", 100);
    add_request(&c, NULL, 2000, 1, "chatcmpl-2", 200);
    add_request(&c, NULL, 2001, 0, "chatcmpl-3", 300);
    add_request(&s, NULL, 2000, 0, NULL, 110);
    add_request(&s, NULL, 2000, 1, NULL, 210);
    /* behind a proxy: another client port, the same response id */
    add_request(&s, NULL, 40000, 0, "chatcmpl-3", 310);
    /* seen at the server only */
    add_request(&s, NULL, 40001, 0, "chatcmpl-9", 400);
    const tt_analysis *as[] = {&s.a, &c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 2, NULL, NULL), 0);
    assert_int_equal(j.n, 4);
    assert_int_equal(j.multi_vantage, 3);
    size_t g;
    g = group_of(&j, TT_VANTAGE_CLIENT, 0);
    assert_int_equal(j.reqs[g].at[TT_VANTAGE_SERVER], 0);
    assert_int_equal(j.reqs[g].how[TT_VANTAGE_CLIENT], TT_JOIN_CONNECTION);
    g = group_of(&j, TT_VANTAGE_CLIENT, 1);
    assert_int_equal(j.reqs[g].at[TT_VANTAGE_SERVER], 1);
    assert_int_equal(j.reqs[g].how[TT_VANTAGE_CLIENT], TT_JOIN_CONNECTION);
    g = group_of(&j, TT_VANTAGE_CLIENT, 2);
    assert_int_equal(j.reqs[g].at[TT_VANTAGE_SERVER], 2);
    assert_int_equal(j.reqs[g].how[TT_VANTAGE_CLIENT], TT_JOIN_RESPONSE_ID);
    g = group_of(&j, TT_VANTAGE_SERVER, 3);
    assert_int_equal(j.reqs[g].at[TT_VANTAGE_CLIENT], TT_JOIN_ABSENT);
    assert_int_equal(j.by_key[TT_JOIN_CONNECTION], 2);
    assert_int_equal(j.by_key[TT_JOIN_RESPONSE_ID], 1);
    tt_join_free(&j);
}

static void test_reused_port_stays_apart(void **state)
{
    static fixture_vantage s, c;
    vantage_init(&s, TT_VANTAGE_SERVER);
    vantage_init(&c, TT_VANTAGE_CLIENT);
    /* the same 4-tuple twice (port reused after close): k-th meets k-th */
    add_request(&c, NULL, 3000, 0, NULL, 100);
    add_request(&c, NULL, 3000, 0, NULL, 900);
    add_request(&s, NULL, 3000, 0, NULL, 105);
    add_request(&s, NULL, 3000, 0, NULL, 905);
    const tt_analysis *as[] = {&s.a, &c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 2, NULL, NULL), 0);
    assert_int_equal(j.n, 2);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 1)].at[TT_VANTAGE_SERVER], 1);
    tt_join_free(&j);
}

/* The client's vantage started late on a keep-alive connection: its
 * ordinals 0..2 are the server's 2..4. The TCP sequence numbers join each
 * request with its own; where one side does not know them (the probe) the
 * ordinal is all there is. */
static void test_sequence_joins_a_late_start(void **state)
{
    static fixture_vantage s, c;
    vantage_init(&s, TT_VANTAGE_SERVER);
    vantage_init(&c, TT_VANTAGE_CLIENT);
    for (uint32_t k = 0; k < 5; k++) {
        tt_request *r = add_request(&s, NULL, 1000, k, NULL, 1000 + k * 100);
        r->req_seq_known = true;
        r->req_seq = 0xfffffe00u + k * 300; /* across the 2^32 wrap */
    }
    for (uint32_t k = 0; k < 3; k++) {
        tt_request *r = add_request(&c, NULL, 1000, k, NULL, 1190 + k * 100);
        r->req_seq_known = true;
        r->req_seq = 0xfffffe00u + (k + 2) * 300;
    }
    const tt_analysis *as[] = {&s.a, &c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 2, NULL, NULL), 0);
    assert_int_equal(j.n, 5);
    assert_int_equal(j.by_key[TT_JOIN_SEQUENCE], 3);
    assert_int_equal(j.by_key[TT_JOIN_CONNECTION], 0);
    for (size_t k = 0; k < 3; k++) {
        size_t g = group_of(&j, TT_VANTAGE_CLIENT, k);
        assert_int_equal(j.reqs[g].at[TT_VANTAGE_SERVER], k + 2);
        assert_int_equal(j.reqs[g].how[TT_VANTAGE_CLIENT], TT_JOIN_SEQUENCE);
    }
    tt_join_free(&j);

    /* the client without sequence numbers: the ordinal pairs it with the wrong ones */
    for (size_t k = 0; k < 3; k++) c.reqs[k].req_seq_known = false;
    assert_int_equal(tt_join_build(&j, as, 2, NULL, NULL), 0);
    assert_int_equal(j.by_key[TT_JOIN_CONNECTION], 3);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 0)].at[TT_VANTAGE_SERVER], 0);
    tt_join_free(&j);
}

static void test_same_vantage_twice_refused(void **state)
{
    static fixture_vantage a, b;
    vantage_init(&a, TT_VANTAGE_WIRE);
    vantage_init(&b, TT_VANTAGE_WIRE);
    const tt_analysis *as[] = {&a.a, &b.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 2, NULL, NULL), -1);
    assert_null(j.reqs);
}

/* ---- to the benchmark ---- */

static tt_bench_request records[MAX_REQS];

static tt_bench_result bench_of(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        memset(&records[i], 0, sizeof records[i]);
        records[i].index = i;
        records[i].start_clock = TT_BENCH_CLOCK_NONE;
        records[i].start_ns = TT_BENCH_NONE;
        records[i].ttft_ns = 1000;
        records[i].e2el_ns = 5000;
        records[i].output_tokens = 4;
        records[i].success = true;
        records[i].text_len = -1;
    }
    return (tt_bench_result){.format = TT_BENCH_VLLM, .reqs = records, .n_reqs = n};
}

static void test_bench_by_record_id(void **state)
{
    static fixture_vantage c;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    add_request(&c, "x-1", 1000, 0, NULL, 100);
    add_request(&c, "x-2", 1001, 0, NULL, 200);
    add_request(&c, "x-0", 1002, 0, NULL, 300);
    tt_bench_result br = bench_of(3);
    char *ids[] = {"x-0", "x-1", "x-2"};
    for (int i = 0; i < 3; i++) records[i].request_id = ids[i];
    const tt_analysis *as[] = {&c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &br, NULL), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ID], 3);
    assert_int_equal(j.bench_unmatched, 0);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 0)].bench, 1);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 2)].bench, 0);
    assert_int_equal(j.reqs[0].bench_how, TT_JOIN_ID);
    assert_int_equal(j.reqs[0].bench_start_delta_ns, TT_BENCH_NONE); /* the records give no start */
    assert_ptr_equal(tt_join_bench(&j, &j.reqs[0]), &records[1]);
    tt_join_free(&j);
}

static void test_bench_by_id_suffix(void **state)
{
    static fixture_vantage c;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    /* vllm numbers its ids <prefix><index>; the file keeps no ids */
    add_request(&c, "bench-2", 1000, 0, NULL, 100);
    add_request(&c, "bench-0", 1001, 0, NULL, 200);
    add_request(&c, "bench-1", 1002, 0, NULL, 300);
    tt_bench_result br = bench_of(3);
    const tt_analysis *as[] = {&c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &br, NULL), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ID], 3);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 0)].bench, 2);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 1)].bench, 0);
    tt_join_free(&j);

    /* numbered from 1: never taken for the index; order instead */
    vantage_init(&c, TT_VANTAGE_CLIENT);
    add_request(&c, "req-1", 1000, 0, NULL, 100);
    add_request(&c, "req-2", 1001, 0, NULL, 200);
    br = bench_of(3);
    assert_int_equal(tt_join_build(&j, as, 1, &br, NULL), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ID], 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER], 2);
    assert_non_null(j.bench_note);
    assert_int_equal(j.bench_unmatched, 1);
    tt_join_free(&j);
}

static void test_bench_by_order_and_start(void **state)
{
    static fixture_vantage c, s;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    vantage_init(&s, TT_VANTAGE_SERVER);
    /* a warm-up GET, then three POSTs, each sent 50-80 us after the tool's start */
    tt_request *get = add_request(&c, NULL, 999, 0, NULL, 1000000);
    snprintf(get->method, sizeof get->method, "GET");
    add_request(&c, NULL, 1000, 0, NULL, 2000050);
    add_request(&c, NULL, 1001, 0, NULL, 2000080);
    add_request(&c, NULL, 1002, 0, NULL, 9000060);
    add_request(&s, NULL, 1000, 0, NULL, 2000150);
    tt_bench_result br = bench_of(4);
    /* the file lists them in another order; the fourth started long before anything */
    int64_t starts[] = {2000030, 9000000, 2000000, 5};
    for (int i = 0; i < 4; i++) {
        records[i].start_clock = TT_BENCH_CLOCK_MONO;
        records[i].start_ns = starts[i];
    }
    const tt_analysis *as[] = {&s.a, &c.a};
    tt_join j;
    tt_join_options opt = {.clock_is_mono = true, .start_tolerance_ns = 1000000};
    assert_int_equal(tt_join_build(&j, as, 2, &br, &opt), 0);
    assert_true(j.bench_starts_usable);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER_START], 3);
    assert_int_equal(j.bench_unmatched, 1);
    assert_non_null(j.bench_note);
    const tt_joined *g = &j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 1)];
    assert_int_equal(g->bench, 2);
    assert_int_equal(g->bench_how, TT_JOIN_ORDER_START);
    assert_int_equal(g->bench_start_delta_ns, 50);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 2)].bench, 0);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 3)].bench, 1);
    assert_int_equal(j.reqs[group_of(&j, TT_VANTAGE_CLIENT, 0)].bench, TT_JOIN_ABSENT); /* the GET */
    tt_join_free(&j);
}

static void test_bench_wall_clock_starts(void **state)
{
    static fixture_vantage c;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    add_request(&c, NULL, 1000, 0, NULL, 5000100);
    add_request(&c, NULL, 1001, 0, NULL, 7000100);
    tt_bench_result br = bench_of(2);
    int64_t offset = 1700000000000000000; /* wall - mono */
    records[0].start_clock = records[1].start_clock = TT_BENCH_CLOCK_WALL;
    records[0].start_ns = 7000000 + offset;
    records[1].start_ns = 5000000 + offset;
    const tt_analysis *as[] = {&c.a};
    tt_join j;
    tt_join_options opt = {.clock_is_mono = true, .has_wall_to_mono = true, .wall_to_mono_ns = offset};
    assert_int_equal(tt_join_build(&j, as, 1, &br, &opt), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER_START], 2);
    assert_int_equal(j.reqs[0].bench, 1);
    assert_int_equal(j.reqs[0].bench_start_delta_ns, 100);
    int64_t t;
    assert_true(tt_join_bench_start(&j, &records[0], &t));
    assert_int_equal(t, 7000000);
    tt_join_free(&j);

    /* without the offset the wall starts are unusable: order alone, said so */
    tt_join_options no_offset = {.clock_is_mono = true};
    assert_int_equal(tt_join_build(&j, as, 1, &br, &no_offset), 0);
    assert_false(j.bench_starts_usable);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER], 2);
    assert_int_equal(j.reqs[0].bench, 0);
    assert_non_null(j.bench_note);
    assert_false(tt_join_bench_start(&j, &records[0], &t));
    tt_join_free(&j);
}

static void test_bench_order_skips_warmup(void **state)
{
    static fixture_vantage w;
    vantage_init(&w, TT_VANTAGE_WIRE);
    for (int i = 0; i < 4; i++) add_request(&w, NULL, (uint16_t)(1000 + i), 0, NULL, 100 + (uint64_t)i * 100);
    tt_bench_result br = bench_of(3);
    const tt_analysis *as[] = {&w.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &br, NULL), 0);
    assert_int_equal(j.bench_by_key[TT_JOIN_ORDER], 3);
    assert_int_equal(j.reqs[0].bench, TT_JOIN_ABSENT);
    assert_int_equal(j.reqs[1].bench, 0);
    assert_int_equal(j.reqs[3].bench, 2);
    assert_non_null(j.bench_note);
    assert_string_equal(tt_join_key_name(TT_JOIN_ORDER), "order");
    assert_string_equal(tt_join_key_name(TT_JOIN_ORDER_START), "order+start");
    assert_string_equal(tt_join_key_name(TT_JOIN_RESPONSE_ID), "response-id");
    assert_null(tt_join_key_name(TT_JOIN_NONE));
    tt_join_free(&j);
}

static void test_empty_inputs(void **state)
{
    static fixture_vantage c;
    vantage_init(&c, TT_VANTAGE_CLIENT);
    tt_bench_result br = bench_of(2);
    const tt_analysis *as[] = {&c.a};
    tt_join j;
    assert_int_equal(tt_join_build(&j, as, 1, &br, NULL), 0);
    assert_int_equal(j.n, 0);
    assert_int_equal(j.bench_unmatched, 2);
    tt_join_free(&j);
    assert_int_equal(tt_join_build(&j, NULL, 0, NULL, NULL), 0);
    assert_int_equal(j.n, 0);
    tt_join_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_join_counts_repeats),
        cmocka_unit_test(test_connection_and_response_id_fallbacks),
        cmocka_unit_test(test_reused_port_stays_apart),
        cmocka_unit_test(test_sequence_joins_a_late_start),
        cmocka_unit_test(test_same_vantage_twice_refused),
        cmocka_unit_test(test_bench_by_record_id),
        cmocka_unit_test(test_bench_by_id_suffix),
        cmocka_unit_test(test_bench_by_order_and_start),
        cmocka_unit_test(test_bench_wall_clock_starts),
        cmocka_unit_test(test_bench_order_skips_warmup),
        cmocka_unit_test(test_empty_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
