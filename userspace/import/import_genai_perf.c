/* import_genai_perf.c - genai-perf profile_export.json (written by
 * perf_analyzer): {"experiments": [{"experiment": {...}, "requests":
 * [{"timestamp", "response_timestamps", "response_outputs", ...}]}]}, every
 * instant in ns since the Unix epoch (docs/formats.md, "Benchmark result
 * files"). Every experiment's requests, in file order. */
#include "import/import_internal.h"

#include <stdlib.h>

static int load_request(const cJSON *q, size_t i, tt_bench_request *r, char *err, size_t errlen)
{
    if (!cJSON_IsObject(q)) return imp_fail(err, errlen, "requests[%zu]: not an object", i);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(q, "timestamp");
    int64_t start;
    if (!ts) return imp_fail(err, errlen, "requests[%zu]: no \"timestamp\"", i);
    if (!imp_integer(ts, &start) || start < 0)
        return imp_fail(err, errlen, "requests[%zu]: timestamp is not a non-negative integer", i);
    r->start_ns = start;
    r->start_clock = TT_BENCH_CLOCK_WALL;
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(q, "response_timestamps");
    if (!cJSON_IsArray(resp))
        return imp_fail(err, errlen, "requests[%zu]: response_timestamps is not an array", i);
    size_t n = (size_t)cJSON_GetArraySize(resp);
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(q, "response_outputs");
    if (outs && !cJSON_IsNull(outs) &&
        (!cJSON_IsArray(outs) || (size_t)cJSON_GetArraySize(outs) != n))
        return imp_fail(err, errlen,
                        "requests[%zu]: response_outputs and response_timestamps differ in length", i);
    if (n == 0) {
        r->success = false;
        return 0;
    }
    if (n > 1) {
        r->itl_ns = malloc((n - 1) * sizeof(int64_t));
        if (!r->itl_ns) return imp_fail(err, errlen, "out of memory");
    }
    int64_t prev = start;
    size_t k = 0;
    for (const cJSON *t = resp->child; t && k < n; t = t->next, k++) {
        int64_t at;
        if (!imp_integer(t, &at))
            return imp_fail(err, errlen, "requests[%zu].response_timestamps[%zu]: not an integer", i, k);
        if (at < prev)
            return imp_fail(err, errlen,
                            "requests[%zu].response_timestamps[%zu]: earlier than the one before", i, k);
        if (k == 0) r->ttft_ns = at - start;
        else r->itl_ns[r->n_itl++] = at - prev;
        prev = at;
    }
    r->e2el_ns = prev - start;
    return 0;
}

int imp_load_genai_perf(const char *text, size_t len, tt_bench_result *out, char *err,
                        size_t errlen)
{
    cJSON *root = imp_parse(text, len);
    if (!root) return imp_fail(err, errlen, "not a JSON document");
    int rc = 0;
    const cJSON *exps = cJSON_GetObjectItemCaseSensitive(root, "experiments");
    if (!cJSON_IsArray(exps)) {
        rc = imp_fail(err, errlen, "no \"experiments\" array");
        goto done;
    }
    size_t e = 0;
    for (const cJSON *x = exps->child; x && rc == 0; x = x->next, e++) {
        const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(x, "requests");
        if (!cJSON_IsArray(reqs)) {
            rc = imp_fail(err, errlen, "experiments[%zu]: no \"requests\" array", e);
            break;
        }
        for (const cJSON *q = reqs->child; q && rc == 0; q = q->next) {
            tt_bench_request *r = imp_push(out);
            rc = r ? load_request(q, r->index, r, err, errlen) : imp_fail(err, errlen, "out of memory");
        }
    }
    if (rc == 0 && out->n_reqs == 0) rc = imp_fail(err, errlen, "no requests");
done:
    cJSON_Delete(root);
    return rc;
}
