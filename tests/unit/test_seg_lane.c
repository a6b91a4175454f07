/* test_seg_lane.c - segments dealt through a lane (source/seg_lane.h)
 * reach the consumer thread's reassembler whole and in order: across many
 * batches with the producer made to wait on a full lane, with a batch left
 * part filled at the close, and with nothing at all; the reassembler is
 * finished at the instant the close gave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/seg_lane.h"

/* What the consumer's reassembler delivered, client to server. */
typedef struct seen {
    uint8_t *bytes;
    size_t n, cap;
    uint64_t last_mono_ns;
    int ends;
} seen;

static void on_chunk(void *ctx, const tt_chunk *ch)
{
    seen *s = ctx;
    if (ch->kind == TT_CHUNK_DATA && ch->dir == TT_DIR_C2S) {
        assert_int_equal(ch->offset, s->n); /* in order, nothing lost */
        assert_true(s->n + ch->len <= s->cap);
        memcpy(s->bytes + s->n, ch->data, ch->len);
        s->n += ch->len;
        s->last_mono_ns = ch->mono_ns;
    } else if (ch->kind == TT_CHUNK_END) {
        s->ends++;
    }
}

typedef struct consumer {
    tt_seg_lane *lane;
    tt_reasm *reasm;
    bool slow; /* sleep before draining, so that the producer fills the lane and waits */
} consumer;

static void *consume(void *arg)
{
    consumer *c = arg;
    if (c->slow) usleep(50000);
    tt_seg_lane_drain(c->lane, c->reasm);
    return NULL;
}

static tt_tcp_segment segment(const uint8_t *payload, size_t len, uint32_t seq, uint8_t flags, uint64_t ts)
{
    tt_tcp_segment s;
    memset(&s, 0, sizeof s);
    s.src.family = s.dst.family = 4;
    s.src.addr[0] = s.dst.addr[0] = 127;
    s.src.addr[3] = s.dst.addr[3] = 1;
    s.src.port = 40000;
    s.dst.port = 8000;
    s.seq = seq;
    s.flags = flags;
    s.payload = payload;
    s.payload_len = len;
    s.ts_ns = ts;
    s.order = ts;
    return s;
}

/* n_data one-byte segments of one connection (after its SYN) through a
 * lane; the consumer's stream must be the bytes sent, in order. */
static void deal(size_t n_data, bool slow)
{
    uint8_t *payload = malloc(n_data + 1);
    assert_non_null(payload);
    for (size_t i = 0; i < n_data; i++) payload[i] = (uint8_t)(i * 7 + 3);
    seen got = {.bytes = malloc(n_data + 1), .cap = n_data + 1};
    tt_seg_lane *lane = tt_seg_lane_new();
    assert_non_null(lane);
    tt_reasm *r = tt_reasm_new(NULL, TT_VANTAGE_WIRE, on_chunk, &got);
    assert_non_null(r);
    consumer c = {lane, r, slow};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, consume, &c), 0);
    tt_tcp_segment syn = segment(NULL, 0, 999, 0x02, 1);
    tt_seg_lane_push(lane, &syn);
    for (size_t i = 0; i < n_data; i++) {
        tt_tcp_segment s = segment(payload + i, 1, 1000 + (uint32_t)i, 0x18, 2 + i);
        tt_seg_lane_push(lane, &s);
    }
    tt_seg_lane_close(lane, 5000000);
    pthread_join(th, NULL);
    assert_int_equal(got.n, n_data);
    assert_memory_equal(got.bytes, payload, n_data);
    if (n_data) assert_int_equal(got.last_mono_ns, 1 + n_data);
    assert_true(got.ends >= 1); /* finished by the close: the stream ended */
    tt_reasm_free(r);
    tt_seg_lane_free(lane);
    free(payload);
    free(got.bytes);
}

static void test_many_batches_producer_waits(void **state)
{
    (void)state;
    deal(100000, true); /* about 49 batches of 2048 through a lane of 8 */
}

static void test_part_batch_at_close(void **state)
{
    (void)state;
    deal(5, false);
}

static void test_nothing_but_the_syn(void **state)
{
    (void)state;
    deal(0, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_batches_producer_waits),
        cmocka_unit_test(test_part_batch_at_close),
        cmocka_unit_test(test_nothing_but_the_syn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
