/* import_sglang.c - sglang bench_serving --output-file F --output-details:
 * JSON lines, one per run appended to F; a run's per-request data are the
 * vllm-style column arrays, at the top level of the line (older versions)
 * or under "details" (newer). Every run's requests, in file order
 * (docs/formats.md, "Benchmark result files"). */
#include "import/import_internal.h"

static int load_run(const cJSON *run, size_t line, void *ctx, char *err, size_t errlen)
{
    tt_bench_result *out = ctx;
    if (!cJSON_IsObject(run)) return tt_fail_line(err, errlen, "line %zu: not a JSON object", line);
    if (imp_detect_value(run) != TT_BENCH_SGLANG)
        return tt_fail_line(err, errlen,
                        "line %zu: not an sglang bench_serving run (no \"details\", "
                        "\"total_output_tokens_retokenized\" or \"mean_e2e_latency_ms\")",
                        line);
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(run, "details");
    const cJSON *cols = cJSON_IsObject(details) ? details : run;
    if (!cJSON_GetObjectItemCaseSensitive(cols, "ttfts")) return 0; /* a run without details */
    char inner[200] = "";
    if (imp_load_columns(cols, "sglang", out, inner, sizeof inner) != 0)
        return tt_fail_line(err, errlen, "line %zu: %s", line, inner);
    return 0;
}

int imp_load_sglang(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen)
{
    if (imp_each_line(text, len, load_run, out, err, errlen) != 0) return -1;
    if (out->n_reqs == 0)
        return tt_fail_line(err, errlen, "no per-request data (\"ttfts\"): run with --output-details");
    return 0;
}
