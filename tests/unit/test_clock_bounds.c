/* clock_bounds: the bounds two recordings' requests give on their clock
 * offset. Hand-built analyses: the client side in one recording on a clock
 * 3 s ahead, the server side in the other; request bytes and token events
 * crossing with known transit times. The bounds must hold the true offset
 * and be exactly as tight as the transits allow; requests are matched by
 * id (the k-th with an id meets the k-th), else by connection and TCP
 * sequence number where both know it, else by connection and ordinal; a
 * recording's wire is on its socket vantage's side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clocks/clock_bounds.h"

#define MAX_REQS 8
#define AHEAD 3000000000LL /* the client recording's clock minus the server's */
#define UP 40000           /* request transit */
#define DOWN 25000         /* token transit */

typedef struct side {
    tt_request reqs[MAX_REQS];
    tt_event_rec events[MAX_REQS][4];
    tt_analysis a;
} side;

static void side_init(side *s, tt_vantage v)
{
    memset(s, 0, sizeof *s);
    s->a.vantage = v;
    s->a.reqs = s->reqs;
}

/* One request: sent by the client at t (server clock), read by the server
 * UP later; 3 token events written at the server and read DOWN later. The
 * client's instants are on its own clock (AHEAD). */
static void exchange(side *cl, side *sv, const char *id, uint16_t port, uint32_t ordinal, int64_t t)
{
    side *both[2] = {cl, sv};
    for (int k = 0; k < 2; k++) {
        side *s = both[k];
        size_t i = s->a.n_reqs++;
        tt_request *r = &s->reqs[i];
        if (id) snprintf(r->request_id, sizeof r->request_id, "%s", id);
        r->client = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 1}, .port = port};
        r->server = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 2}, .port = 8000};
        r->ordinal = ordinal;
        bool client = s == cl;
        int64_t shift = client ? AHEAD : 0;
        r->req_first_ns = (uint64_t)(t + shift + (client ? 0 : UP));
        r->req_last_ns = r->req_first_ns;
        r->req_ready_ns = r->first_token_ready_ns = r->last_token_ready_ns = TT_NS_NONE; /* no kernel ready instant */
        r->events = s->events[i];
        r->events[0] = (tt_event_rec){.kind = TT_EV_ROLE, .dispatch_ns = (uint64_t)(t + shift + 1000000)};
        for (int e = 1; e < 4; e++) {
            int64_t written = t + 1000000 + e * 500000;
            r->events[e] = (tt_event_rec){.kind = TT_EV_TOKEN,
                                          .dispatch_ns = (uint64_t)(written + shift + (client ? DOWN : 0))};
        }
        r->n_events = 4;
    }
}

static void test_bounds_hold_the_truth(void **state)
{
    (void)state;
    static side cl, sv;
    side_init(&cl, TT_VANTAGE_CLIENT);
    side_init(&sv, TT_VANTAGE_SERVER);
    exchange(&cl, &sv, "a", 1000, 0, 5000000000LL);
    exchange(&cl, &sv, NULL, 1001, 0, 6000000000LL);
    exchange(&cl, &sv, NULL, 1001, 1, 6100000000LL);
    exchange(&cl, &sv, "a", 1002, 0, 7000000000LL); /* "a" again: the second meets the second */
    const tt_analysis *r_as[] = {&sv.a}, *s_as[] = {&cl.a};
    tt_clock_align *ca = tt_clock_align_new(5000000000LL + AHEAD);
    tt_clock_match m;
    assert_int_equal(tt_clock_bounds_add(ca, r_as, 1, s_as, 1, &m), 0);
    assert_int_equal(m.n_pairs, 1);
    assert_int_equal(m.pairs[0].client_side, TT_VANTAGE_CLIENT);
    assert_int_equal(m.pairs[0].server_side, TT_VANTAGE_SERVER);
    assert_true(m.pairs[0].client_in_s);
    assert_int_equal(m.pairs[0].by_id, 2);
    assert_int_equal(m.pairs[0].by_sequence, 0);
    assert_int_equal(m.pairs[0].by_connection, 2);
    assert_int_equal(m.requests, 4);
    assert_int_equal(m.bounds, 4 * (2 + 3)); /* first and last request byte, 3 token events */
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    /* S (the client) is AHEAD: -AHEAD puts it on the server's clock; the
     * bounds are UP above and DOWN below it, and the skews the four
     * exchanges allow (tens of ppm) widen that by their drift over the
     * 1.5 ms to the first token: tens of ns */
    assert_true(f.lo_ns <= -AHEAD && -AHEAD <= f.hi_ns);
    assert_true(f.hi_ns + AHEAD == UP);
    assert_true(f.hi_ns - f.lo_ns <= UP + DOWN + 100);
    tt_clock_align_free(ca);

    /* the other way round: the client recording as the reference */
    ca = tt_clock_align_new(5000000000LL);
    assert_int_equal(tt_clock_bounds_add(ca, s_as, 1, r_as, 1, &m), 0);
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    assert_true(f.lo_ns <= AHEAD && AHEAD <= f.hi_ns);
    tt_clock_align_free(ca);
}

/* No request in common: nothing added. */
static void test_unrelated(void **state)
{
    (void)state;
    static side cl, sv, cl2, sv2;
    side_init(&cl, TT_VANTAGE_CLIENT);
    side_init(&sv, TT_VANTAGE_SERVER);
    side_init(&cl2, TT_VANTAGE_CLIENT);
    side_init(&sv2, TT_VANTAGE_SERVER);
    exchange(&cl, &sv, "x", 1000, 0, 5000000000LL);
    exchange(&cl2, &sv2, "y", 2000, 0, 5000000000LL);
    const tt_analysis *r_as[] = {&sv.a}, *s_as[] = {&cl2.a};
    tt_clock_align *ca = tt_clock_align_new(0);
    tt_clock_match m;
    assert_int_equal(tt_clock_bounds_add(ca, r_as, 1, s_as, 1, &m), 0);
    assert_int_equal(m.requests, 0);
    assert_int_equal(m.bounds, 0);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_NONE);
    tt_clock_align_free(ca);
}

/* The server's recording started late: it missed the first two requests
 * of a keep-alive connection, so its ordinals are two behind the client's.
 * By ordinal the k-th would meet the wrong request; by TCP sequence number
 * each meets its own, and the bounds hold the truth. */
static void test_late_start_matched_by_sequence(void **state)
{
    (void)state;
    static side cl, sv;
    side_init(&cl, TT_VANTAGE_CLIENT);
    side_init(&sv, TT_VANTAGE_SERVER);
    for (uint32_t k = 0; k < 5; k++) exchange(&cl, &sv, NULL, 1000, k, 5000000000LL + k * 100000000LL);
    for (size_t i = 0; i < 5; i++) {
        cl.reqs[i].req_seq_known = sv.reqs[i].req_seq_known = true;
        cl.reqs[i].req_seq = sv.reqs[i].req_seq = 4000000000u + (uint32_t)i * 700u; /* wraps past 2^32 */
    }
    /* the server saw requests 2..4 only, as ordinals 0..2 */
    memmove(&sv.reqs[0], &sv.reqs[2], 3 * sizeof sv.reqs[0]);
    sv.a.n_reqs = 3;
    for (uint32_t i = 0; i < 3; i++) sv.reqs[i].ordinal = i;
    const tt_analysis *r_as[] = {&sv.a}, *s_as[] = {&cl.a};
    tt_clock_align *ca = tt_clock_align_new(5000000000LL + AHEAD);
    tt_clock_match m;
    assert_int_equal(tt_clock_bounds_add(ca, r_as, 1, s_as, 1, &m), 0);
    assert_int_equal(m.pairs[0].by_sequence, 3);
    assert_int_equal(m.pairs[0].by_connection, 0);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    assert_true(f.lo_ns <= -AHEAD && -AHEAD <= f.hi_ns);
    tt_clock_align_free(ca);

    /* without sequence numbers the ordinals pair each request with the one
     * two later: a consistent but wrong offset, 200 ms off (what the
     * sequence numbers are for) */
    for (size_t i = 0; i < 5; i++) cl.reqs[i].req_seq_known = false;
    ca = tt_clock_align_new(5000000000LL + AHEAD);
    assert_int_equal(tt_clock_bounds_add(ca, r_as, 1, s_as, 1, &m), 0);
    assert_int_equal(m.pairs[0].by_sequence, 0);
    assert_int_equal(m.pairs[0].by_connection, 3);
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_OK);
    assert_true(f.lo_ns > -AHEAD + 199000000LL);
    tt_clock_align_free(ca);
}

/* Each recording's wire is on its socket vantage's side: the client host's
 * (client vantage and wire) against the server host's (server vantage and
 * wire) gives four pairs, and the two wires' bounds are the tightest. */
static void test_wires_pair_with_the_other_host(void **state)
{
    (void)state;
    static side cl, sv, clw, svw;
    side_init(&cl, TT_VANTAGE_CLIENT);
    side_init(&sv, TT_VANTAGE_SERVER);
    side_init(&clw, TT_VANTAGE_WIRE);
    side_init(&svw, TT_VANTAGE_WIRE);
    exchange(&cl, &sv, "a", 1000, 0, 5000000000LL);
    exchange(&clw, &svw, "a", 1000, 0, 5000000000LL);
    const tt_analysis *r_as[] = {&sv.a, &svw.a}, *s_as[] = {&cl.a, &clw.a};
    tt_clock_align *ca = tt_clock_align_new(5000000000LL + AHEAD);
    tt_clock_match m;
    assert_int_equal(tt_clock_bounds_add(ca, r_as, 2, s_as, 2, &m), 0);
    assert_int_equal(m.n_pairs, 4);
    int wire_wire = 0;
    for (size_t k = 0; k < m.n_pairs; k++) {
        assert_int_equal(m.pairs[k].by_id, 1);
        assert_int_equal(m.pairs[k].bounds, 2 + 3);
        if (m.pairs[k].client_side == TT_VANTAGE_WIRE && m.pairs[k].server_side == TT_VANTAGE_WIRE) wire_wire++;
    }
    assert_int_equal(wire_wire, 1);
    assert_int_equal(m.bounds, 4 * (2 + 3));
    tt_clock_align_free(ca);

    /* a recording that holds both socket vantages (one host) has no side for its wire */
    const tt_analysis *both[] = {&sv.a, &cl.a, &svw.a};
    const tt_analysis *other[] = {&clw.a};
    ca = tt_clock_align_new(0);
    assert_int_equal(tt_clock_bounds_add(ca, both, 3, other, 1, &m), 0);
    assert_int_equal(m.n_pairs, 0);
    tt_clock_align_free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds_hold_the_truth),
        cmocka_unit_test(test_unrelated),
        cmocka_unit_test(test_late_start_matched_by_sequence),
        cmocka_unit_test(test_wires_pair_with_the_other_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
