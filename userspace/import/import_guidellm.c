/* import_guidellm.c - guidellm benchmark --output-path benchmarks.json:
 * {"benchmarks": [{"requests": {"successful": [...], "incomplete": [...],
 * "errored": [...]}, ...}]}, each request a GenerativeRequestStats dump with
 * its computed fields; instants are time.time() seconds (docs/formats.md,
 * "Benchmark result files"). */
#include "import/import_internal.h"

#include <stdio.h>
#include <string.h>

static const cJSON *field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int load_one(const cJSON *q, const char *status, size_t i, tt_bench_request *r, char *err,
                    size_t errlen)
{
    if (!cJSON_IsObject(q)) return tt_fail_line(err, errlen, "%s[%zu]: not an object", status, i);
    char what[64];
    const cJSON *id = field(q, "request_id");
    if (id) {
        if (!cJSON_IsString(id)) return tt_fail_line(err, errlen, "%s[%zu]: request_id is not a string", status, i);
        bool oom = false;
        r->request_id = imp_strdup(id->valuestring, &oom);
        if (oom) return tt_fail_line(err, errlen, "out of memory");
    }
    const cJSON *info = field(q, "info");
    const cJSON *timings = cJSON_IsObject(info) ? field(info, "timings") : NULL;
    const cJSON *start = field(q, "request_start_time");
    if (!start && cJSON_IsObject(timings)) start = field(timings, "request_start");
    if (!start) start = field(q, "start_time"); /* before the info/timings layout */
    if (start) {
        snprintf(what, sizeof what, "%s.request_start_time", status);
        if (imp_duration(start, 1e9, what, i, &r->start_ns, err, errlen) != 0) return -1;
        r->start_clock = TT_BENCH_CLOCK_WALL;
    }
    const cJSON *v;
    if ((v = field(q, "time_to_first_token_ms"))) {
        snprintf(what, sizeof what, "%s.time_to_first_token_ms", status);
        if (imp_duration(v, 1e6, what, i, &r->ttft_ns, err, errlen) != 0) return -1;
    }
    if ((v = field(q, "request_latency"))) {
        snprintf(what, sizeof what, "%s.request_latency", status);
        if (imp_duration(v, 1e9, what, i, &r->e2el_ns, err, errlen) != 0) return -1;
    }
    if ((v = field(q, "output_tokens"))) {
        snprintf(what, sizeof what, "%s.output_tokens", status);
        if (imp_count(v, what, i, &r->output_tokens, err, errlen) != 0) return -1;
    }
    if ((v = field(q, "prompt_tokens"))) {
        snprintf(what, sizeof what, "%s.prompt_tokens", status);
        if (imp_count(v, what, i, &r->input_tokens, err, errlen) != 0) return -1;
    }
    snprintf(what, sizeof what, "%s.output", status);
    if (imp_text(field(q, "output"), what, i, r, err, errlen) != 0) return -1;
    if (strcmp(status, "successful") != 0) {
        r->success = false;
        const cJSON *e = cJSON_IsObject(info) ? field(info, "error") : NULL;
        if (!e) e = field(q, "error");
        const char *text = cJSON_IsString(e) ? e->valuestring : status;
        bool oom = false;
        r->error = imp_strdup(text, &oom);
        if (oom) return tt_fail_line(err, errlen, "out of memory");
    }
    return 0;
}

static const char *const statuses[] = {"successful", "incomplete", "errored"};

int imp_load_guidellm(const char *text, size_t len, tt_bench_result *out, char *err,
                      size_t errlen)
{
    cJSON *root = imp_parse(text, len);
    if (!root) return tt_fail_line(err, errlen, "not a JSON document");
    int rc = 0;
    const cJSON *benches = cJSON_GetObjectItemCaseSensitive(root, "benchmarks");
    if (!cJSON_IsArray(benches)) {
        rc = tt_fail_line(err, errlen, "no \"benchmarks\" array");
        goto done;
    }
    size_t b = 0;
    for (const cJSON *bench = benches->child; bench && rc == 0; bench = bench->next, b++) {
        const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(bench, "requests");
        if (!cJSON_IsObject(reqs)) {
            rc = tt_fail_line(err, errlen, "benchmarks[%zu]: no \"requests\" object", b);
            break;
        }
        for (size_t s = 0; s < sizeof statuses / sizeof statuses[0] && rc == 0; s++) {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(reqs, statuses[s]);
            if (!list || cJSON_IsNull(list)) continue;
            if (!cJSON_IsArray(list)) {
                rc = tt_fail_line(err, errlen, "benchmarks[%zu].requests.%s is not an array", b, statuses[s]);
                break;
            }
            size_t i = 0;
            for (const cJSON *q = list->child; q && rc == 0; q = q->next, i++) {
                tt_bench_request *r = imp_push(out);
                rc = r ? load_one(q, statuses[s], i, r, err, errlen) : tt_fail_line(err, errlen, "out of memory");
            }
        }
    }
    if (rc == 0 && out->n_reqs == 0) rc = tt_fail_line(err, errlen, "no requests");
done:
    cJSON_Delete(root);
    return rc;
}
