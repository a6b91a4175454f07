/* ready_bridge: the kernel's ready instants onto the probe's connections.
 * A mark of a known connection goes straight through with the target's
 * connection; one that comes before the target shows its connection (the
 * probe's collector finds a new ring up to 20 ms late) is held and goes
 * through once the connection is learned and its chunk consumed; marks
 * of a connection never shown, of an older connection on a 4-tuple used
 * again, too old, or beyond the hold's room are dropped and counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "source/ready_bridge.h"

#define MS 1000000ull

/* What the target received: each mark's connection, offset and instant. */
typedef struct received {
    const tt_conn_info *conn[2048];
    uint64_t offset[2048], ns[2048];
    int n;
} received;

static void receive(void *ctx, const tt_chunk *c)
{
    received *r = ctx;
    assert_int_equal(c->kind, TT_CHUNK_READY);
    r->conn[r->n] = c->conn;
    r->offset[r->n] = c->offset;
    r->ns[r->n++] = c->mono_ns;
}

static tt_conn_info conn_on(uint16_t client_port, uint64_t first_seen_ns)
{
    tt_conn_info c = {.first_seen_ns = first_seen_ns};
    c.client.family = c.server.family = 4;
    memcpy(c.client.addr, (uint8_t[]){127, 0, 0, 1}, 4);
    memcpy(c.server.addr, (uint8_t[]){127, 0, 0, 1}, 4);
    c.client.port = client_port;
    c.server.port = 8000;
    return c;
}

/* The eBPF source's mark on its own copy of the connection. */
static void mark(tt_ready_bridge *b, const tt_conn_info *ebpf_conn, uint64_t offset, uint64_t ns)
{
    tt_chunk c = {.conn = ebpf_conn, .vantage = TT_VANTAGE_CLIENT, .dir = TT_DIR_S2C, .kind = TT_CHUNK_READY,
                  .mono_ns = ns, .offset = offset, .len = 10};
    tt_ready_bridge_chunk(b, &c);
}

/* The target's chunk of conn, as run's sink handles it: learned, consumed, then the held marks. */
static void target_chunk(tt_ready_bridge *b, const tt_conn_info *conn, tt_chunk_kind kind)
{
    tt_chunk c = {.conn = conn, .vantage = TT_VANTAGE_CLIENT, .dir = TT_DIR_C2S, .kind = kind, .mono_ns = 0};
    tt_ready_bridge_learn(b, &c);
    tt_ready_bridge_release_held(b);
}

static void test_known_connection(void **state)
{
    (void)state;
    received r = {0};
    tt_ready_bridge *b = tt_ready_bridge_new(receive, &r);
    tt_conn_info target = conn_on(40000, 1000 * MS), ebpf = conn_on(40000, 999 * MS);
    target_chunk(b, &target, TT_CHUNK_DATA);
    mark(b, &ebpf, 0, 1010 * MS);
    assert_int_equal(r.n, 1);
    assert_ptr_equal(r.conn[0], &target);
    uint64_t fwd, dropped;
    tt_ready_bridge_counts(b, &fwd, &dropped);
    assert_true(fwd == 1 && dropped == 0);
    tt_ready_bridge_free(b);
}

/* Two marks before the target's first chunk: held, then forwarded in
 * order right after that chunk, on the target's connection. */
static void test_marks_before_the_connection(void **state)
{
    (void)state;
    received r = {0};
    tt_ready_bridge *b = tt_ready_bridge_new(receive, &r);
    tt_conn_info target = conn_on(40001, 1000 * MS), ebpf = conn_on(40001, 999 * MS);
    mark(b, &ebpf, 0, 1020 * MS);
    mark(b, &ebpf, 10, 1021 * MS);
    assert_int_equal(r.n, 0);
    tt_ready_bridge_release_held(b); /* nothing learned yet: nothing moves */
    assert_int_equal(r.n, 0);
    target_chunk(b, &target, TT_CHUNK_DATA);
    assert_int_equal(r.n, 2);
    assert_ptr_equal(r.conn[0], &target);
    assert_true(r.offset[0] == 0 && r.offset[1] == 10 && r.ns[1] == 1021 * MS);
    uint64_t fwd, dropped;
    tt_ready_bridge_counts(b, &fwd, &dropped);
    assert_true(fwd == 2 && dropped == 0);
    tt_ready_bridge_free(b);
}

/* A mark of a connection that is released, then the tuple used again 2 s
 * later: the old mark is not the new connection's. A mark never claimed
 * counts as dropped (held ones too, at the end). */
static void test_reused_tuple_and_unclaimed(void **state)
{
    (void)state;
    received r = {0};
    tt_ready_bridge *b = tt_ready_bridge_new(receive, &r);
    tt_conn_info old_target = conn_on(40002, 1000 * MS), ebpf = conn_on(40002, 999 * MS);
    target_chunk(b, &old_target, TT_CHUNK_DATA);
    target_chunk(b, &old_target, TT_CHUNK_RELEASE);
    mark(b, &ebpf, 500, 1500 * MS); /* after the release: held */
    tt_conn_info new_target = conn_on(40002, 1700 * MS);
    target_chunk(b, &new_target, TT_CHUNK_DATA);
    assert_int_equal(r.n, 0);
    tt_conn_info stranger = conn_on(40003, 0);
    mark(b, &stranger, 0, 1600 * MS);
    uint64_t fwd, dropped;
    tt_ready_bridge_counts(b, &fwd, &dropped);
    assert_true(fwd == 0 && dropped == 2);
    tt_ready_bridge_free(b);
}

/* Held marks go when they are a second behind the newest mark, or when
 * the hold is full (the oldest first): never forwarded, always counted. */
static void test_hold_bounds(void **state)
{
    (void)state;
    received r = {0};
    tt_ready_bridge *b = tt_ready_bridge_new(receive, &r);
    tt_conn_info ebpf = conn_on(40004, 0), other = conn_on(40005, 0);
    mark(b, &ebpf, 0, 1000 * MS);
    mark(b, &other, 0, 2001 * MS); /* the first is now over a second old */
    tt_conn_info target = conn_on(40004, 1000 * MS);
    target_chunk(b, &target, TT_CHUNK_DATA);
    assert_int_equal(r.n, 0);
    for (int i = 0; i < 1500; i++) mark(b, &other, (uint64_t)i, 2002 * MS);
    tt_conn_info other_target = conn_on(40005, 2000 * MS);
    target_chunk(b, &other_target, TT_CHUNK_DATA);
    assert_int_equal(r.n, 1024); /* the hold's room: the newest 1024, in order */
    assert_int_equal(r.offset[0], 1500 - 1024);
    assert_int_equal(r.offset[1023], 1499);
    uint64_t fwd, dropped;
    tt_ready_bridge_counts(b, &fwd, &dropped);
    assert_int_equal(fwd, 1024);
    assert_int_equal(dropped, 1 + 1 + (1500 - 1024));
    tt_ready_bridge_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_connection),
        cmocka_unit_test(test_marks_before_the_connection),
        cmocka_unit_test(test_reused_tuple_and_unclaimed),
        cmocka_unit_test(test_hold_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
