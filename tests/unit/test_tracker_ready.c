/* test_tracker_ready.c - the connection tracker's readable instants, from
 * hand-made chunks and READY marks (the kernel's instant a socket's bytes
 * became readable): placed on the token events they cover, marks that come
 * late behind other connections' chunks, their bound, and a long stream
 * marked piece by piece. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "proto/event_frame.h"
#include "timeline/conn_tracker.h"
#include "timeline/ready_marks.h"
#include "request_find.h"
#include "tracker_feeder.h"

static void ready(feeder *f, tt_direction dir, uint64_t from, uint64_t end, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_CLIENT, .dir = dir, .kind = TT_CHUNK_READY,
                  .mono_ns = ns, .offset = from, .len = end - from};
    tt_tracker_chunk(f->t, &c);
}

/* READY marks give each event the instant its last byte became readable,
 * byte by byte through the chunked framing, though one read delivered all
 * three; a byte no mark starts at or before is unknown, not the next mark's;
 * marks that come after their bytes were parsed still land. */
static void test_ready_instants(void **state)
{
    feeder f;
    feeder_init(&f, 14);
    const char *req = chat_request("ready");
    ready(&f, TT_DIR_C2S, 0, strlen(req), 5);
    send_str(&f, TT_DIR_C2S, req, 10);
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char piece[3][512], seg[4096] = "";
    size_t at[4];
    at[0] = strlen(head);
    for (size_t i = 0; i < 3; i++) {
        snprintf(piece[i], sizeof piece[i], "%zx\r\n%s\r\n", strlen(chat_events[i + 1]), chat_events[i + 1]);
        strcat(seg, piece[i]);
        at[i + 1] = at[i] + strlen(piece[i]);
    }
    ready(&f, TT_DIR_S2C, 0, at[1], 22);               /* the head and the first event */
    ready(&f, TT_DIR_S2C, at[1], at[2], 25);           /* the second */
    ready(&f, TT_DIR_S2C, at[3] - 2, at[3] + 5, 28);   /* the third's bytes never marked */
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40);
    finish(&f, 50);
    size_t n;
    tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->n_events, 3);
    assert_int_equal(r->req_ready_ns, 5);
    assert_int_equal(r->events[0].ready_ns, 22);
    assert_int_equal(r->events[1].ready_ns, 25);
    assert_true(r->events[2].ready_ns == TT_NS_NONE);
    for (uint32_t i = 0; i < 3; i++) assert_int_equal(r->events[i].dispatch_ns, 30);
    assert_int_equal(r->first_token_ready_ns, 22);
    assert_true(r->last_token_ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);

    /* the same marks arriving late, after the bytes were parsed (another
     * ring polled later): they still land, on the filed request too */
    feeder_init(&f, 16);
    send_str(&f, TT_DIR_C2S, req, 10);
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    ready(&f, TT_DIR_C2S, 0, strlen(req), 5);
    ready(&f, TT_DIR_S2C, 0, at[1], 22);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40); /* the request is filed here */
    ready(&f, TT_DIR_S2C, at[1], at[2], 25);
    ready(&f, TT_DIR_S2C, at[3] - 2, at[3] + 5, 28);
    finish(&f, 50);
    r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r->req_ready_ns, 5);
    assert_int_equal(r->events[0].ready_ns, 22);
    assert_int_equal(r->events[1].ready_ns, 25);
    assert_true(r->events[2].ready_ns == TT_NS_NONE);
    assert_int_equal(r->first_token_ready_ns, 22);
    assert_true(r->last_token_ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);

    /* no marks at all (the wire, the probe): every ready instant unknown */
    feeder_init(&f, 15);
    send_str(&f, TT_DIR_C2S, chat_request("none"), 10);
    send_str(&f, TT_DIR_S2C, head, 24);
    send_str(&f, TT_DIR_S2C, seg, 30);
    send_str(&f, TT_DIR_S2C, "0\r\n\r\n", 40);
    finish(&f, 50);
    r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_true(r->req_ready_ns == TT_NS_NONE && r->first_token_ready_ns == TT_NS_NONE);
    for (uint32_t i = 0; i < r->n_events; i++) assert_true(r->events[i].ready_ns == TT_NS_NONE);
    tt_tracker_free(f.t);
}

/* The filed request of a connection with the given id, or NULL. */
static const tt_request *filed_with_id(tt_tracker *t, const char *id)
{
    size_t n;
    const tt_request *r = tt_tracker_requests(t, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].request_id, id)) return &r[i];
    return NULL;
}

/* A late mark (its bytes parsed, its request filed) finds the request on
 * its own connection however many requests other connections filed since:
 * each connection links its filed requests (conn_state.last_filed), where
 * the tracker's newest 1024 of any connection would have missed it; the
 * links follow the requests when they are sorted (an interval's report),
 * so a request filed before the sort is still found behind those its
 * connection filed after. */
static void test_late_mark_behind_other_connections(void **state)
{
    feeder a, b;
    feeder_init(&a, 31);
    feeder_init(&b, 32);
    tt_tracker_free(b.t);
    b.t = a.t;
    b.conn.client.port = 40001;
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char piece[512];
    snprintf(piece, sizeof piece, "%zx\r\n%s\r\n", strlen(chat_events[1]), chat_events[1]);
    send_str(&a, TT_DIR_C2S, chat_request("a-1"), 10);
    send_str(&a, TT_DIR_S2C, head, 20);
    send_str(&a, TT_DIR_S2C, piece, 30);
    send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 40); /* a-1 filed; the connection stays open */
    char id[32];
    for (int i = 0; i < 1100; i++) {
        snprintf(id, sizeof id, "b-%d", i);
        send_str(&b, TT_DIR_C2S, chat_request(id), 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, head, 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, piece, 50 + (uint64_t)i);
        send_str(&b, TT_DIR_S2C, "0\r\n\r\n", 50 + (uint64_t)i);
    }
    size_t n;
    tt_tracker_requests(a.t, &n);
    assert_int_equal(n, 1101);
    uint64_t event_end = strlen(head) + strlen(piece) - 2; /* the event's last byte, before the chunk's CRLF */
    ready(&a, TT_DIR_S2C, strlen(head), event_end, 35);
    const tt_request *r = filed_with_id(a.t, "a-1");
    assert_non_null(r);
    assert_int_equal(r->n_events, 1);
    assert_int_equal(r->events[0].ready_ns, 35);
    assert_int_equal(r->first_token_ready_ns, 35);
    /* sorted: each connection's links moved with its requests */
    tt_tracker_sort(a.t);
    uint64_t b_last = b.off[TT_DIR_S2C] - strlen("0\r\n\r\n") - strlen(piece);
    ready(&b, TT_DIR_S2C, b_last, b_last + strlen(piece) - 2, 2000);
    r = filed_with_id(a.t, "b-1099");
    assert_non_null(r);
    assert_int_equal(r->events[0].ready_ns, 2000);
    /* a-1, filed before the sort, still behind the requests its connection
     * filed after it: a late mark on its request's bytes finds it */
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "a-after-%d", i);
        send_str(&a, TT_DIR_C2S, chat_request(id), 2100);
        send_str(&a, TT_DIR_S2C, head, 2100);
        send_str(&a, TT_DIR_S2C, piece, 2100);
        send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 2100);
    }
    ready(&a, TT_DIR_C2S, 0, strlen(chat_request("a-1")), 5);
    r = filed_with_id(a.t, "a-1");
    assert_non_null(r);
    assert_int_equal(r->req_ready_ns, 5);
    /* and B's next request links its own */
    send_str(&b, TT_DIR_C2S, chat_request("b-next"), 3000);
    send_str(&b, TT_DIR_S2C, head, 3000);
    send_str(&b, TT_DIR_S2C, piece, 3000);
    send_str(&b, TT_DIR_S2C, "0\r\n\r\n", 3000);
    for (int i = 0; i < 1100; i++) { /* a-1's connection files many more */
        snprintf(id, sizeof id, "a-more-%d", i);
        send_str(&a, TT_DIR_C2S, chat_request(id), 3100);
        send_str(&a, TT_DIR_S2C, head, 3100);
        send_str(&a, TT_DIR_S2C, piece, 3100);
        send_str(&a, TT_DIR_S2C, "0\r\n\r\n", 3100);
    }
    b_last = b.off[TT_DIR_S2C] - strlen("0\r\n\r\n") - strlen(piece);
    ready(&b, TT_DIR_S2C, b_last, b_last + strlen(piece) - 2, 4000);
    r = filed_with_id(a.t, "b-next");
    assert_non_null(r);
    assert_int_equal(r->events[0].ready_ns, 4000);
    tt_tracker_free(a.t);
}

/* The marks' bound: past it the oldest go, and their bytes become unknown
 * (never the instant of a later mark); asked in order, older marks are
 * forgotten. */
static void test_ready_marks_bound(void **state)
{
    tt_ready_marks m = {0};
    for (uint64_t k = 0; k < TT_READY_MARKS_MAX + 10; k++) tt_ready_marks_add(&m, k * 10, k * 10 + 10, 1000 + k);
    tt_ready_marks_add(&m, 99999, 99999, 1); /* empty: ignored */
    assert_int_equal(m.dropped, 10);
    assert_true(tt_ready_marks_at(&m, 5) == UINT64_MAX);   /* its mark was dropped */
    assert_true(tt_ready_marks_at(&m, 105) == 1010);        /* the first kept */
    assert_true(tt_ready_marks_at(&m, 109) == 1010);
    assert_true(tt_ready_marks_at(&m, 110) == 1011);
    assert_true(tt_ready_marks_at(&m, 100000) == UINT64_MAX); /* past every mark */
    assert_int_equal(m.n, 0);
    tt_ready_marks_free(&m);
}

/* Late marks on a long stream, one per event as the TLS vantage sends
 * them: every event gets its own instant, and the request's first and
 * last token ready instants are those of its first and last TOKEN events
 * (a ROLE before them, a FINISH and a TERMINAL after, none without
 * tokens). The bench's TLS flood (tests/bench/tls.sh) is what shows that
 * a mark costs the events near the ends, not the whole stream. */
static void test_late_marks_long_stream(void **state)
{
    enum { N = 20000 };
    tt_request r = {0};
    r.events = calloc(N, sizeof *r.events);
    r.n_events = N;
    r.first_token_ready_ns = r.last_token_ready_ns = TT_NS_NONE;
    for (uint32_t i = 0; i < N; i++) {
        r.events[i].kind = i == 0 ? TT_EV_ROLE : i == N - 2 ? TT_EV_FINISH : i == N - 1 ? TT_EV_TERMINAL : TT_EV_TOKEN;
        r.events[i].dispatch_stream_off = 100 * (uint64_t)i + 99;
        r.events[i].ready_ns = TT_NS_NONE;
    }
    r.token_events = N - 3;
    for (uint32_t i = 0; i < N; i++) {
        tt_request_ready_fill_late(&r, TT_DIR_S2C, 100 * (uint64_t)i, 100 * (uint64_t)i + 100, 5000 + i);
        assert_int_equal(r.events[i].ready_ns, 5000 + i);
        assert_int_equal(r.first_token_ready_ns, i >= 1 ? 5001 : TT_NS_NONE);
        assert_int_equal(r.last_token_ready_ns, i >= N - 3 ? 5000 + N - 3 : TT_NS_NONE); /* its last TOKEN's */
    }
    /* a mark again on marked bytes changes nothing */
    tt_request_ready_fill_late(&r, TT_DIR_S2C, 0, 100 * (uint64_t)N, 1);
    assert_int_equal(r.events[7].ready_ns, 5007);
    /* no token events: no token ready instants */
    for (uint32_t i = 0; i < N; i++) r.events[i].kind = TT_EV_ROLE, r.events[i].ready_ns = TT_NS_NONE;
    r.token_events = 0;
    tt_request_ready_fill_late(&r, TT_DIR_S2C, 0, 100, 9);
    assert_int_equal(r.events[0].ready_ns, 9);
    assert_true(r.first_token_ready_ns == TT_NS_NONE && r.last_token_ready_ns == TT_NS_NONE);
    free(r.events);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_marks_bound),
        cmocka_unit_test(test_late_marks_long_stream),
        cmocka_unit_test(test_late_mark_behind_other_connections),
        cmocka_unit_test(test_ready_instants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
