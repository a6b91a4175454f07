/* watch's handling of filed requests (cmd/watch_live.c): when watch keeps
 * every request, watch_take_new lets each handled request's events go into
 * a release digest (report/release_digest.h). The same chunks given to a
 * tracker that keeps every event and to one watch handles that way, a few
 * chunks at a time, must give the same text report and the same JSON
 * document byte for byte: the summary's ITL percentiles from the pooled
 * quantile, lint findings from the digest, each request's JSON object from
 * the spool. The live summary's samples still get every ITL, and the
 * requests handled have no events left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/watch_live.h"
#include "report/release_digest.h"
#include "report/report.h"
#include "timeline/conn_tracker.h"

#define CONNS 5

typedef struct feed {
    tt_conn_info info[CONNS];
    uint64_t off[CONNS][2];
    tt_tracker *kept, *watched;
    uint64_t step;
} feed;

static void put(feed *f, size_t k, tt_direction dir, tt_chunk_kind kind, const char *data, uint64_t ns)
{
    size_t len = data ? strlen(data) : 0;
    f->info[k].order_key = ++f->step;
    tt_chunk ch = {.conn = &f->info[k], .vantage = TT_VANTAGE_SERVER, .dir = dir, .kind = kind, .mono_ns = ns,
                   .offset = f->off[k][dir], .data = (const uint8_t *)data, .len = len};
    tt_tracker_chunk(f->kept, &ch);
    tt_tracker_chunk(f->watched, &ch);
    if (kind == TT_CHUNK_DATA) f->off[k][dir] += len;
}

static void request(feed *f, size_t k, unsigned id, uint64_t ns)
{
    static const char body[] = "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    char buf[512];
    snprintf(buf, sizeof buf,
             "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: wl-%u\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             id, strlen(body), body);
    put(f, k, TT_DIR_C2S, TT_CHUNK_DATA, buf, ns);
}

/* One chunk of the chunked body holding one SSE event, ended by CRLF CRLF
 * when crlf (a framing lint finds). */
static void sse(feed *f, size_t k, const char *data, bool crlf, uint64_t ns)
{
    char ev[512], chunk[600];
    snprintf(ev, sizeof ev, "data: %s%s", data, crlf ? "\r\n\r\n" : "\n\n");
    snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
    put(f, k, TT_DIR_S2C, TT_CHUNK_DATA, chunk, ns);
}

/* Request id on connection k from ns: a response of `tokens` token events,
 * spaced by a pseudo-random ITL; cut before its end when `cut`. */
static uint64_t exchange(feed *f, size_t k, unsigned id, unsigned tokens, bool crlf, bool cut, uint64_t ns,
                         uint32_t *rng)
{
    request(f, k, id, ns);
    ns += 1000000;
    put(f, k, TT_DIR_S2C, TT_CHUNK_DATA,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", ns);
    for (unsigned t = 0; t < tokens; t++) {
        *rng = *rng * 1103515245u + 12345u;
        ns += 200000 + (*rng >> 8) % 3000000;
        char data[256];
        snprintf(data, sizeof data,
                 "{\"id\":\"c%u\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
                 "{\"content\":\"t%u\"}}]}",
                 id, t);
        sse(f, k, data, crlf, ns);
    }
    if (cut) return ns;
    ns += 100000;
    sse(f, k, "[DONE]", crlf, ns);
    put(f, k, TT_DIR_S2C, TT_CHUNK_DATA, "0\r\n\r\n", ns);
    return ns + 50000;
}

static char *report_of(tt_analysis *a, bool json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    tt_report_write(out, a, json, false);
    assert_int_equal(fclose(out), 0);
    return buf;
}

static void test_released_as_kept(void **state)
{
    (void)state;
    feed f;
    memset(&f, 0, sizeof f);
    f.kept = tt_tracker_new(NULL);
    f.watched = tt_tracker_new(NULL);
    for (size_t k = 0; k < CONNS; k++) {
        f.info[k].conn_id = 10 + k;
        f.info[k].client = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 1}, .port = (uint16_t)(41000 + k)};
        f.info[k].server = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 2}, .port = 8000};
    }
    watch_vantage w = {.vantage = TT_VANTAGE_SERVER, .tracker = f.watched, .release = true};
    tt_release_digest_init(&w.digest);
    assert_int_equal(tt_release_digest_spool_json(&w.digest, TT_VANTAGE_SERVER, false), 0);
    watch_limits lim = {.keep_requests = SIZE_MAX};
    watch_sinks sinks = {0};

    uint32_t rng = 7;
    uint64_t ns[CONNS] = {0}, itls = 0;
    unsigned id = 0;
    for (unsigned round = 0; round < 12; round++) {
        for (size_t k = 0; k < CONNS; k++) {
            unsigned tokens = 3 + (round * 7 + (unsigned)k * 3) % 40;
            bool crlf = k == 2, cut = round == 11 && k == 4; /* the last one stays in flight: filed at the end */
            ns[k] = exchange(&f, k, id++, tokens, crlf, cut, ns[k] + 1000000 * (k + 1), &rng);
            if (!cut) itls += tokens - 1;
        }
        watch_take_new(&w, &lim, &sinks, ns[0]);
    }
    size_t n;
    tt_request *reqs = tt_tracker_requests(f.watched, &n);
    assert_int_equal(n, 59);
    for (size_t i = 0; i < n; i++) assert_true(reqs[i].events_released && !reqs[i].events);
    assert_int_equal(w.itl.n, itls < WATCH_SUMMARY_SAMPLES ? itls : WATCH_SUMMARY_SAMPLES);

    /* the connections end (the one in flight is filed, cut, and never
     * taken: the report mixes released requests with one that kept its events) */
    for (size_t k = 0; k < CONNS; k++) {
        put(&f, k, TT_DIR_C2S, TT_CHUNK_FIN, NULL, ns[k] + 1000);
        put(&f, k, TT_DIR_S2C, TT_CHUNK_FIN, NULL, ns[k] + 1000);
        put(&f, k, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, ns[k] + 2000);
    }
    reqs = tt_tracker_requests(f.watched, &n);
    assert_int_equal(n, 60);
    assert_false(reqs[59].events_released);

    const double pct[1] = {99};
    tt_reasm_stats rs = {0};
    tt_analysis kept = {.command = "watch", .input = "(test)", .vantage = TT_VANTAGE_SERVER,
                        .clock = TT_CLOCK_MONOTONIC, .reasm = &rs};
    tt_analysis watched = kept;
    assert_int_equal(tt_analysis_fill(&kept, f.kept, pct, 1), 0);
    assert_int_equal(tt_analysis_fill_released(&watched, f.watched, pct, 1, &w.digest), 0);
    assert_int_equal(watched.n_reqs, 60);
    assert_true(kept.lint && kept.lint->n > 0); /* the CRLF framing was found */
    for (int json = 0; json <= 1; json++) {
        char *a = report_of(&kept, json), *b = report_of(&watched, json);
        assert_string_equal(b, a);
        free(a);
        free(b);
    }
    tt_analysis_release(&kept);
    tt_analysis_release(&watched);
    tt_tracker_free(f.kept);
    watch_vantage_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_as_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
