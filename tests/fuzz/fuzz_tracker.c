/* Fuzz the pipeline above reassembly: the input is a script of chunks
 * (direction, kind, length, bytes) for up to two connections, fed to the
 * connection tracker; then metrics for every filed request. Must never
 * crash, leak or read out of bounds; every metric identity must hold. The
 * same script fed to a tracker whose requests let go of their events as
 * they are filed (report/release_digest.h) must give the same summary,
 * lint findings and JSON document. The event listings of the kept
 * analysis: the text one written whole, the JSON one valid JSON with
 * every request's events, each token's text read back as it was. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "chunk_script.h"
#include "report/release_digest.h"
#include "timeline/conn_tracker.h"

/* Two findings alike, field by field (their padding is not compared). */
static bool same_finding(const tt_lint_finding *x, const tt_lint_finding *y)
{
    return x->id == y->id && x->request == y->request && x->event == y->event && x->count == y->count &&
           x->offset == y->offset && x->mono_ns == y->mono_ns && x->excerpt_off == y->excerpt_off &&
           x->excerpt_len == y->excerpt_len && !memcmp(x->detail, y->detail, sizeof x->detail);
}

/* The event listings of a (events kept) written; the JSON one parses,
 * holds each request's events, and gives back each text that has no NUL
 * (cJSON's strings end at one) byte for byte. */
static void check_event_listings(const tt_analysis *a)
{
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        tt_report_events_text(devnull, a);
        fclose(devnull);
    }
    char *j = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&j, &n);
    if (!f) return;
    tt_report_events_json(f, a);
    fclose(f);
    cJSON *doc = cJSON_ParseWithLength(j, n);
    if (!doc) __builtin_trap();
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(doc, "requests");
    if (!cJSON_IsArray(reqs) || (size_t)cJSON_GetArraySize(reqs) != a->n_reqs) __builtin_trap();
    size_t i = 0;
    for (const cJSON *r = reqs->child; r; r = r->next, i++) {
        const tt_request *q = &a->reqs[i];
        const cJSON *evs = cJSON_GetObjectItemCaseSensitive(r, "events");
        if (!cJSON_IsArray(evs) || (uint32_t)cJSON_GetArraySize(evs) != q->n_events) __builtin_trap();
        uint32_t k = 0;
        for (const cJSON *e = evs->child; e; e = e->next, k++) {
            const tt_event_rec *ev = &q->events[k];
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(e, "text");
            if (!text) continue;
            const char *want = q->text + ev->text_off;
            if (!cJSON_IsString(text) || memchr(want, 0, ev->text_bytes)) continue;
            if (strlen(text->valuestring) != ev->text_bytes || memcmp(text->valuestring, want, ev->text_bytes))
                __builtin_trap();
        }
    }
    cJSON_Delete(doc);
    free(j);
}

/* The analyses of the script kept and released agree. */
static void check_release(const uint8_t *data, size_t size)
{
    static const double pct[] = {50, 99};
    tt_release_digest d;
    tt_release_digest_init(&d);
    bool json = tt_release_digest_spool_json(&d, TT_VANTAGE_WIRE, size & 2) == 0;
    tt_tracker *kept = tt_tracker_new(NULL);
    tt_tracker *rel = tt_tracker_new(&(tt_tracker_options){.on_file = tt_release_on_file, .on_file_ctx = &d});
    tt_fuzz_feed_chunk_script(kept, data, size);
    tt_fuzz_feed_chunk_script(rel, data, size);
    tt_analysis a = {.input = "fuzz", .with_text = size & 2}, b = a;
    if (tt_analysis_fill(&a, kept, pct, 2) == 0 && tt_analysis_fill_released(&b, rel, pct, 2, &d) == 0) {
        if (a.n_reqs != b.n_reqs || memcmp(&a.summary, &b.summary, sizeof a.summary)) __builtin_trap();
        check_event_listings(&a);
        if (a.lint->n != b.lint->n) __builtin_trap();
        for (size_t i = 0; i < a.lint->n; i++)
            if (!same_finding(&a.lint->findings[i], &b.lint->findings[i])) __builtin_trap();
        char *ja = NULL, *jb = NULL;
        size_t na = 0, nb = 0;
        FILE *fa = open_memstream(&ja, &na), *fb = open_memstream(&jb, &nb);
        if (json && fa && fb) {
            tt_report_json(fa, &a);
            tt_report_json(fb, &b);
            fflush(fa);
            fflush(fb);
            if (na != nb || memcmp(ja, jb, na)) __builtin_trap();
        }
        if (fa) fclose(fa);
        if (fb) fclose(fb);
        free(ja);
        free(jb);
    }
    tt_analysis_release(&a);
    tt_analysis_release(&b);
    tt_tracker_free(kept);
    tt_tracker_free(rel);
    tt_release_digest_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_tracker *t = tt_tracker_new(&(tt_tracker_options){.keep_text = size & 1});
    tt_fuzz_feed_chunk_script(t, data, size);
    tt_tracker_sort(t);
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    for (size_t k = 0; k < n; k++) {
        tt_req_metrics m;
        tt_req_metrics_compute(&reqs[k], &m);
        if (m.has_e2el) {
            int64_t sum = 0;
            for (uint32_t j = 0; j < m.n_itl; j++) sum += m.itl_ns[j];
            if (sum != m.e2el_ns - m.ttft_ns) __builtin_trap();
        }
        tt_req_metrics_free(&m);
    }
    tt_tracker_free(t);
    check_release(data, size);
    return 0;
}
