/* tt_tracker_absorb and tt_tracker_order_notes (analyze --jobs): the same
 * chunks given to one tracker, and shared out by connection among several
 * trackers that are then merged, give the same requests in the same order
 * (event type names intact although each tracker numbered them its own
 * way), the same connection notes in the same order, and the same counts.
 * With the parts' events released as filed (report/release_digest.h), the
 * merged digests give the whole's summary and lint findings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/release_digest.h"
#include "timeline/conn_tracker.h"

#define MAX_CONNS 8

/* One connection of the script: its info (as a reassembler would hand it
 * over) and stream offsets. */
typedef struct script_conn {
    tt_conn_info info;
    uint64_t off[2];
} script_conn;

typedef struct script {
    script_conn conns[MAX_CONNS];
    tt_tracker *whole;            /* every chunk */
    tt_tracker *part[3];          /* chunks of connection k go to part[k % n_parts] */
    size_t n_parts;
    uint64_t step;                /* the order key of the next chunk (a packet index) */
    const tt_request *merged_into; /* when set: the array the merge must end in */
} script;

static void script_init(script *s, size_t n_parts)
{
    memset(s, 0, sizeof *s);
    s->whole = tt_tracker_new(NULL);
    s->n_parts = n_parts;
    for (size_t p = 0; p < n_parts; p++) s->part[p] = tt_tracker_new(NULL);
    for (size_t k = 0; k < MAX_CONNS; k++) {
        s->conns[k].info.conn_id = 100 + k * 7; /* ids in order of first appearance, not consecutive */
        s->conns[k].info.client = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 1}, .port = (uint16_t)(40000 + k)};
        s->conns[k].info.server = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 2}, .port = 8000};
    }
}

static void put(script *s, size_t k, tt_direction dir, tt_chunk_kind kind, const char *data, uint64_t ns)
{
    script_conn *c = &s->conns[k];
    size_t len = data ? strlen(data) : 0;
    c->info.order_key = ++s->step;
    tt_chunk ch = {.conn = &c->info, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                   .offset = c->off[dir], .data = (const uint8_t *)data, .len = len};
    tt_tracker_chunk(s->whole, &ch);
    tt_tracker_chunk(s->part[k % s->n_parts], &ch);
    if (kind == TT_CHUNK_DATA) c->off[dir] += len;
}

static void close_conn(script *s, size_t k, uint64_t ns)
{
    put(s, k, TT_DIR_C2S, TT_CHUNK_FIN, NULL, ns);
    put(s, k, TT_DIR_S2C, TT_CHUNK_FIN, NULL, ns);
    put(s, k, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, ns);
}

static void request(script *s, size_t k, const char *id, uint64_t ns)
{
    static const char body[] = "{\"model\":\"m\",\"stream\":true}";
    char buf[512];
    snprintf(buf, sizeof buf,
             "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             id, strlen(body), body);
    put(s, k, TT_DIR_C2S, TT_CHUNK_DATA, buf, ns);
}

static void response_head(script *s, size_t k, uint64_t ns)
{
    put(s, k, TT_DIR_S2C, TT_CHUNK_DATA,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", ns);
}

static void event(script *s, size_t k, const char *type, uint64_t ns)
{
    char ev[256], chunk[300];
    snprintf(ev, sizeof ev, "event: %s\ndata: {\"type\":\"%s\"}\n\n", type, type);
    snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
    put(s, k, TT_DIR_S2C, TT_CHUNK_DATA, chunk, ns);
}

static void response_end(script *s, size_t k, uint64_t ns)
{
    put(s, k, TT_DIR_S2C, TT_CHUNK_DATA, "0\r\n\r\n", ns);
}

/* Merge the parts into part[0] and compare it with the whole. */
static void merge_and_compare(script *s)
{
    for (size_t p = 1; p < s->n_parts; p++) tt_tracker_absorb(s->part[0], s->part[p]);
    if (s->merged_into) {
        size_t n;
        assert_ptr_equal(tt_tracker_requests(s->part[0], &n), s->merged_into);
    }
    assert_int_equal(tt_tracker_order_notes(s->part[0]), 0);
    tt_tracker_sort(s->whole);
    tt_tracker_sort(s->part[0]);
    size_t nw, nm;
    const tt_request *w = tt_tracker_requests(s->whole, &nw), *m = tt_tracker_requests(s->part[0], &nm);
    assert_int_equal(nm, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_string_equal(m[i].request_id, w[i].request_id);
        assert_int_equal(m[i].conn_id, w[i].conn_id);
        assert_int_equal(m[i].n_events, w[i].n_events);
        for (uint32_t e = 0; e < w[i].n_events; e++)
            assert_string_equal(tt_tracker_type_name(s->part[0], m[i].events[e].type_id),
                                tt_tracker_type_name(s->whole, w[i].events[e].type_id));
    }
    const tt_conn_note *wn = tt_tracker_notes(s->whole, &nw), *mn = tt_tracker_notes(s->part[0], &nm);
    assert_int_equal(nm, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(mn[i].conn_id, wn[i].conn_id);
        assert_string_equal(mn[i].reason, wn[i].reason);
    }
    tt_tracker_stats a, b;
    tt_tracker_stats_get(s->whole, &a);
    tt_tracker_stats_get(s->part[0], &b);
    assert_int_equal(b.connections, a.connections);
    assert_int_equal(b.notes_over, a.notes_over);
    assert_int_equal(b.in_flight, a.in_flight);
    for (size_t p = 1; p < s->n_parts; p++) {
        size_t left;
        tt_tracker_requests(s->part[p], &left);
        assert_int_equal(left, 0); /* moved, not copied: freeing the part frees nothing of the merge */
        tt_tracker_free(s->part[p]);
    }
    tt_tracker_free(s->part[0]);
    tt_tracker_free(s->whole);
}

/* Four requests over six connections, two notes, type names met in a
 * different order by each part. */
static void play_types_and_notes(script *s)
{
    /* connections 0 and 1 send their requests at the same instant: the
     * tie is broken by conn id; each part meets the type names in its own
     * order, so their ids differ between the parts */
    request(s, 0, "a", 1000);
    request(s, 1, "b", 1000);
    put(s, 2, TT_DIR_C2S, TT_CHUNK_DATA, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 1100); /* TLS: a note */
    response_head(s, 1, 1200);
    event(s, 1, "gamma", 1300);
    response_head(s, 0, 1300);
    event(s, 0, "alpha", 1400);
    event(s, 1, "beta", 1400);
    event(s, 0, "beta", 1500);
    request(s, 3, "c", 1500);
    put(s, 4, TT_DIR_S2C, TT_CHUNK_DATA, "\x16\x03\x03\x00\x7a\x02", 1550); /* another note, from part 1 */
    response_head(s, 3, 1600);
    event(s, 3, "delta", 1700);
    event(s, 3, "alpha", 1800);
    close_conn(s, 4, 1850);
    response_end(s, 1, 1900);
    response_end(s, 0, 2000);
    close_conn(s, 2, 2100);
    response_end(s, 3, 2200);
    request(s, 5, "d", 2300); /* never answered: filed at release */
    for (size_t k = 0; k < 6; k++)
        if (k != 2 && k != 4) close_conn(s, k, 3000 + k);
    size_t n;
    tt_tracker_notes(s->whole, &n);
    assert_true(n >= 2);
    tt_tracker_requests(s->whole, &n);
    assert_int_equal(n, 4);
}

static void test_requests_types_and_notes(void **state)
{
    (void)state;
    script s;
    script_init(&s, 3);
    play_types_and_notes(&s);
    merge_and_compare(&s);
}

/* A part that made room for every part's requests (analyze --jobs: the
 * first reader done) is the array the merge ends in, unmoved; the room's
 * slots may have been zeroed meanwhile. */
static void test_merge_into_reserved_room(void **state)
{
    (void)state;
    script s;
    script_init(&s, 3);
    play_types_and_notes(&s);
    size_t n, room;
    tt_tracker_requests(s.part[1], &n);
    tt_request *free_slots = tt_tracker_reserve_requests(s.part[1], n + 40, &room);
    assert_non_null(free_slots);
    assert_int_equal(room, 40);
    memset(free_slots, 0, room * sizeof *free_slots);
    tt_request *smaller = tt_tracker_reserve_requests(s.part[1], 1, &room); /* never shrinks */
    assert_ptr_equal(smaller, free_slots);
    assert_int_equal(room, 40);
    s.merged_into = free_slots - n;
    merge_and_compare(&s);
}

/* More notes than TT_TRACKER_NOTES_MAX: the merge keeps the first ones in
 * the whole's order and counts the rest, as the whole did. */
static void test_notes_cut(void **state)
{
    (void)state;
    script s;
    script_init(&s, 3);
    for (uint64_t i = 0; i < TT_TRACKER_NOTES_MAX + 500; i++) {
        size_t k = i % MAX_CONNS;
        s.conns[k].info.conn_id = 1000 + i;
        s.conns[k].off[0] = s.conns[k].off[1] = 0;
        /* connection k goes to part k % 3; the notes interleave */
        put(&s, k, TT_DIR_C2S, TT_CHUNK_DATA, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 10 * i);
        put(&s, k, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 10 * i + 5);
    }
    size_t n;
    tt_tracker_notes(s.whole, &n);
    assert_int_equal(n, TT_TRACKER_NOTES_MAX);
    merge_and_compare(&s);
}

/* Two findings alike, field by field (their padding is not compared). */
static bool same_finding(const tt_lint_finding *x, const tt_lint_finding *y)
{
    return x->id == y->id && x->request == y->request && x->event == y->event && x->count == y->count &&
           x->offset == y->offset && x->mono_ns == y->mono_ns && x->excerpt_off == y->excerpt_off &&
           x->excerpt_len == y->excerpt_len && !memcmp(x->detail, y->detail, sizeof x->detail);
}

static void token(script *s, size_t k, const char *text, uint64_t ns)
{
    char ev[256], chunk[300];
    snprintf(ev, sizeof ev,
             "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
             "\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n",
             text);
    snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
    put(s, k, TT_DIR_S2C, TT_CHUNK_DATA, chunk, ns);
}

/* Parts whose requests let go of their events as they are filed, merged
 * with their digests: the same summary and findings as the whole keeping
 * every event. */
static void test_released_parts(void **state)
{
    (void)state;
    script s;
    memset(&s, 0, sizeof s);
    tt_release_digest dig[3];
    script_init(&s, 3);
    for (size_t p = 0; p < 3; p++) {
        tt_tracker_free(s.part[p]);
        tt_release_digest_init(&dig[p]);
        tt_tracker_options o = {.on_file = tt_release_on_file, .on_file_ctx = &dig[p]};
        s.part[p] = tt_tracker_new(&o);
    }
    uint64_t ns = 1000;
    for (size_t k = 0; k < 6; k++) {
        char id[8];
        snprintf(id, sizeof id, "r%zu", k);
        request(&s, k, id, ns += 10);
    }
    for (size_t k = 0; k < 6; k++) response_head(&s, k, ns += 10);
    for (int t = 0; t < 12; t++)
        for (size_t k = 0; k < 6; k++) {
            if (k == 4 && t > 5) continue;
            token(&s, k, k == 2 ? "a\\u2028b" : "tok", ns += 100 + 37 * k + (t % 3) * 11);
        }
    event(&s, 1, "message_stop", ns += 5);
    for (size_t k = 0; k < 6; k++)
        if (k != 4) response_end(&s, k, ns += 7); /* connection 4 closes inside its response: incomplete */
    for (size_t k = 0; k < 6; k++) close_conn(&s, k, ns += 3);
    for (size_t p = 1; p < 3; p++) {
        size_t n;
        tt_request *reqs = tt_tracker_requests(s.part[p], &n);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) assert_true(reqs[i].events_released && !reqs[i].events);
        assert_int_equal(tt_release_digest_absorb(&dig[0], &dig[p], reqs, n), 0);
        tt_tracker_absorb(s.part[0], s.part[p]);
    }
    const double pct[] = {50, 90, 99};
    tt_analysis whole = {0}, merged = {0};
    assert_int_equal(tt_analysis_fill(&whole, s.whole, pct, 3), 0);
    assert_int_equal(tt_analysis_fill_released(&merged, s.part[0], pct, 3, &dig[0]), 0);
    assert_int_equal(merged.n_reqs, 6);
    assert_int_equal(whole.summary.itl.n, 5 * 11); /* connection 4, incomplete, has none */
    assert_memory_equal(&merged.summary, &whole.summary, sizeof whole.summary);
    const tt_lint_result *lw = whole.lint, *lm = merged.lint;
    assert_true(lw->n > 0);
    assert_int_equal(lm->n, lw->n);
    for (size_t i = 0; i < lw->n; i++) assert_true(same_finding(&lm->findings[i], &lw->findings[i]));
    assert_memory_equal(lm->by_severity, lw->by_severity, sizeof lw->by_severity);
    assert_memory_equal(lm->by_id, lw->by_id, sizeof lw->by_id);
    for (size_t i = 0; i < merged.n_reqs; i++) {
        assert_string_equal(merged.reqs[i].request_id, whole.reqs[i].request_id);
        assert_int_equal(merged.metrics[i].ttft_ns, whole.metrics[i].ttft_ns);
        assert_int_equal(merged.metrics[i].e2el_ns, whole.metrics[i].e2el_ns);
    }
    tt_analysis_release(&whole);
    tt_analysis_release(&merged);
    for (size_t p = 0; p < 3; p++) {
        tt_tracker_free(s.part[p]);
        tt_release_digest_free(&dig[p]);
    }
    tt_tracker_free(s.whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_types_and_notes),
        cmocka_unit_test(test_merge_into_reserved_room),
        cmocka_unit_test(test_notes_cut),
        cmocka_unit_test(test_released_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
