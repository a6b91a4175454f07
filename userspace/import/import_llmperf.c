/* import_llmperf.c - llmperf token_benchmark_ray.py
 * <model>_<in>_<out>_individual_responses.json: a JSON array, one object
 * per request with the keys of llmperf's common_metrics.py, durations in
 * seconds (docs/formats.md, "Benchmark result files"). */
#include "import/import_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_one(const cJSON *o, size_t i, tt_bench_request *r, char *err, size_t errlen)
{
    if (!cJSON_IsObject(o)) return tt_fail_line(err, errlen, "[%zu]: not an object", i);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "error_code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "error_msg");
    if (msg && !cJSON_IsNull(msg) && !cJSON_IsString(msg))
        return tt_fail_line(err, errlen, "[%zu]: error_msg is not a string", i);
    int64_t code_value = 0;
    bool has_code = code && !cJSON_IsNull(code);
    if (has_code && !imp_integer(code, &code_value))
        return tt_fail_line(err, errlen, "[%zu]: error_code is not an integer", i);
    const char *m = cJSON_IsString(msg) ? msg->valuestring : "";
    if (has_code || (m && m[0])) {
        r->success = false;
        char buf[64] = "";
        if (has_code) snprintf(buf, sizeof buf, "%lld", (long long)code_value);
        size_t cap = strlen(buf) + strlen(m) + 3;
        r->error = malloc(cap);
        if (!r->error) return tt_fail_line(err, errlen, "out of memory");
        snprintf(r->error, cap, "%s%s%s", buf, (buf[0] && m[0]) ? ": " : "", m);
    }
    const cJSON *ttft = cJSON_GetObjectItemCaseSensitive(o, "ttft_s");
    const cJSON *e2e = cJSON_GetObjectItemCaseSensitive(o, "end_to_end_latency_s");
    if (!ttft && !e2e && r->success)
        return tt_fail_line(err, errlen, "[%zu]: neither ttft_s nor end_to_end_latency_s", i);
    if (ttft && !cJSON_IsNull(ttft) && imp_duration(ttft, 1e9, "ttft_s", i, &r->ttft_ns, err, errlen) != 0)
        return -1;
    if (e2e && !cJSON_IsNull(e2e) &&
        imp_duration(e2e, 1e9, "end_to_end_latency_s", i, &r->e2el_ns, err, errlen) != 0)
        return -1;
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(o, "number_output_tokens");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "number_input_tokens");
    if (outs && !cJSON_IsNull(outs) &&
        imp_count(outs, "number_output_tokens", i, &r->output_tokens, err, errlen) != 0)
        return -1;
    if (ins && !cJSON_IsNull(ins) &&
        imp_count(ins, "number_input_tokens", i, &r->input_tokens, err, errlen) != 0)
        return -1;
    if (!r->success) {
        if (r->ttft_ns == 0) r->ttft_ns = TT_BENCH_NONE;
        if (r->e2el_ns == 0) r->e2el_ns = TT_BENCH_NONE;
    }
    return 0;
}

int imp_load_llmperf(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen)
{
    cJSON *root = imp_parse(text, len);
    if (!root) return tt_fail_line(err, errlen, "not a JSON document");
    int rc = 0;
    if (!cJSON_IsArray(root)) {
        rc = tt_fail_line(err, errlen, "not a JSON array");
    } else {
        size_t i = 0;
        for (const cJSON *o = root->child; o && rc == 0; o = o->next, i++) {
            tt_bench_request *r = imp_push(out);
            rc = r ? load_one(o, i, r, err, errlen) : tt_fail_line(err, errlen, "out of memory");
        }
        if (rc == 0 && out->n_reqs == 0) rc = tt_fail_line(err, errlen, "empty array");
    }
    cJSON_Delete(root);
    return rc;
}
