/* export/live_join: a request's server and client views paired by
 * connection and first sequence number, whatever the order they finish
 * in; waiting ones let go past the capacity or the wait; the links from
 * the pair's instants (every expected value chosen here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "export/live_join.h"

typedef struct pairs {
    int n;
    uint32_t server_seq[8], client_seq[8];
    uint64_t server_first[8], client_first[8];
} pairs;

static void on_pair(void *ctx, const tt_request *server, const tt_request *client)
{
    pairs *p = ctx;
    if (p->n == 8) return;
    p->server_seq[p->n] = server->req_seq;
    p->client_seq[p->n] = client->req_seq;
    p->server_first[p->n] = server->req_first_ns;
    p->client_first[p->n] = client->req_first_ns;
    p->n++;
}

static tt_request req(uint16_t client_port, uint32_t seq, uint64_t first_ns)
{
    tt_request r;
    memset(&r, 0, sizeof r);
    r.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = client_port};
    r.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    r.req_seq_known = true;
    r.req_seq = seq;
    r.req_first_ns = first_ns;
    r.req_ready_ns = r.first_token_ns = r.first_token_ready_ns = TT_NS_NONE;
    return r;
}

static void test_pairs_in_either_order(void **state)
{
    pairs p = {0};
    tt_ljoin *j = tt_ljoin_new(16, 1000000, on_pair, &p);
    assert_non_null(j);
    tt_request s1 = req(40000, 100, 10), c1 = req(40000, 100, 5);
    tt_request s2 = req(40001, 100, 30), c2 = req(40001, 100, 25); /* same seq, another connection */
    tt_request c3 = req(40000, 200, 50);                             /* same connection, a later request */
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &s1, 100);
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &c3, 101);
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &c2, 102); /* client first this time */
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &s2, 103);
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &c1, 104);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.server_first[0], 30); /* s2 with c2 */
    assert_int_equal(p.client_first[0], 25);
    assert_int_equal(p.server_first[1], 10); /* s1 with c1 */
    assert_int_equal(p.client_first[1], 5);
    /* the same view twice is not a pair; other vantages and unknown sequence numbers take no part */
    tt_request c3b = c3, w = req(40000, 200, 50), unknown = req(40000, 300, 60);
    unknown.req_seq_known = false;
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &c3b, 105);
    tt_ljoin_offer(j, TT_VANTAGE_WIRE, &w, 106);
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &unknown, 107);
    assert_int_equal(p.n, 2);
    tt_ljoin_stats st;
    tt_ljoin_stats_get(j, &st);
    assert_int_equal(st.paired, 2);
    assert_int_equal(st.waiting, 2); /* c3 twice */
    tt_ljoin_free(j);
}

static void test_bounded_wait(void **state)
{
    pairs p = {0};
    tt_ljoin *j = tt_ljoin_new(2, 1000, on_pair, &p);
    tt_request a = req(1, 1, 0), b = req(2, 1, 0), c = req(3, 1, 0);
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &a, 0);
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &b, 10);
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &c, 20); /* full: a goes */
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &a, 30);  /* nothing to pair with: waits, b goes */
    tt_ljoin_stats st;
    tt_ljoin_stats_get(j, &st);
    assert_int_equal(p.n, 0);
    assert_int_equal(st.expired, 2);
    tt_ljoin_offer(j, TT_VANTAGE_CLIENT, &c, 40);
    assert_int_equal(p.n, 1);
    tt_request d = req(4, 1, 0);
    tt_ljoin_offer(j, TT_VANTAGE_SERVER, &d, 5000); /* the client's a waited past 1000 ns: let go */
    tt_ljoin_stats_get(j, &st);
    assert_int_equal(st.expired, 3);
    assert_int_equal(st.waiting, 1);
    tt_ljoin_free(j);
}

static void test_links(void **state)
{
    tt_request s = req(1, 1, 1000), c = req(1, 1, 900);
    int64_t up, down;
    tt_ljoin_links(&s, &c, &up, &down);
    assert_int_equal(up, -1); /* no ready instants */
    assert_int_equal(down, -1);
    s.req_ready_ns = 950;
    s.first_token_ns = 5000;
    c.first_token_ready_ns = 5040;
    tt_ljoin_links(&s, &c, &up, &down);
    assert_int_equal(up, 50);
    assert_int_equal(down, 40);
    c.first_token_ready_ns = 4000; /* before the server wrote it: not causal, not a number */
    tt_ljoin_links(&s, &c, &up, &down);
    assert_int_equal(down, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_in_either_order),
        cmocka_unit_test(test_bounded_wait),
        cmocka_unit_test(test_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
