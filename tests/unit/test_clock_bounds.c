/* clock_bounds: the bounds two recordings' requests give on their clock
 * offset. Hand-built analyses: the client side in one recording on a clock
 * 3 s ahead, the server side in the other; request bytes and token events
 * crossing with known transit times. The bounds must hold the true offset
 * and be exactly as tight as the transits allow; requests are matched by
 * id (the k-th with an id meets the k-th) else by connection and ordinal. */
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
    assert_int_equal(m.by_id, 2);
    assert_int_equal(m.by_connection, 2);
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
    assert_int_equal(m.by_id + m.by_connection, 0);
    assert_int_equal(m.bounds, 0);
    tt_clock_fit f;
    tt_clock_align_fit(ca, &f);
    assert_int_equal(f.status, TT_CLOCK_FIT_NONE);
    tt_clock_align_free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds_hold_the_truth),
        cmocka_unit_test(test_unrelated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
