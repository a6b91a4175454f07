/* import_aiperf.c - aiperf profile_export.jsonl: one JSON record per
 * request, {"metadata": {...}, "metrics": {name: {"value", "unit"}},
 * "error": null | {...}} (docs/formats.md, "Benchmark result files"). */
#include "import/import_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *metric(const cJSON *metrics, const char *name, double *scale, size_t line,
                           bool *bad, char *err, size_t errlen)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(metrics, name);
    if (!m || cJSON_IsNull(m)) return NULL;
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(m, "unit");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(m, "value");
    if (!cJSON_IsObject(m) || !value) {
        *bad = true;
        tt_fail_line(err, errlen, "line %zu: metric %s is not {\"value\", \"unit\"}", line, name);
        return NULL;
    }
    if (scale) {
        *scale = cJSON_IsString(unit) ? imp_unit_scale(unit->valuestring) : 0;
        if (*scale == 0) {
            *bad = true;
            tt_fail_line(err, errlen, "line %zu: metric %s has no time unit", line, name);
            return NULL;
        }
    }
    return value;
}

static int set_error(tt_bench_request *r, const cJSON *error, size_t line, char *err,
                     size_t errlen)
{
    if (!error || cJSON_IsNull(error)) return 0;
    if (!cJSON_IsObject(error)) return tt_fail_line(err, errlen, "line %zu: error is not an object", line);
    r->success = false;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(error, "type");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(error, "message");
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    const char *m = cJSON_IsString(message) ? message->valuestring : "";
    size_t cap = strlen(t) + strlen(m) + 3;
    r->error = malloc(cap);
    if (!r->error) return tt_fail_line(err, errlen, "out of memory");
    snprintf(r->error, cap, "%s%s%s", t, (*t && *m) ? ": " : "", m);
    return 0;
}

static int load_record(const cJSON *rec, size_t line, void *ctx, char *err, size_t errlen)
{
    tt_bench_result *out = ctx;
    if (!cJSON_IsObject(rec)) return tt_fail_line(err, errlen, "line %zu: not a JSON object", line);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "metadata");
    if (!cJSON_IsObject(meta)) return tt_fail_line(err, errlen, "line %zu: no \"metadata\" object", line);
    tt_bench_request *r = imp_push(out);
    if (!r) return tt_fail_line(err, errlen, "out of memory");
    size_t i = r->index;

    const cJSON *id = cJSON_GetObjectItemCaseSensitive(meta, "x_request_id");
    if (id && !cJSON_IsNull(id)) {
        if (!cJSON_IsString(id)) return tt_fail_line(err, errlen, "line %zu: x_request_id is not a string", line);
        bool oom = false;
        r->request_id = imp_strdup(id->valuestring, &oom);
        if (oom) return tt_fail_line(err, errlen, "out of memory");
    }
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(meta, "request_start_ns");
    if (!start) return tt_fail_line(err, errlen, "line %zu: no metadata.request_start_ns", line);
    if (!imp_integer(start, &r->start_ns) || r->start_ns < 0)
        return tt_fail_line(err, errlen, "line %zu: request_start_ns is not a non-negative integer", line);
    r->start_clock = TT_BENCH_CLOCK_WALL;
    const cJSON *cancelled = cJSON_GetObjectItemCaseSensitive(meta, "was_cancelled");
    if (cJSON_IsTrue(cancelled)) r->success = false;
    if (set_error(r, cJSON_GetObjectItemCaseSensitive(rec, "error"), line, err, errlen) != 0)
        return -1;

    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
    if (!metrics || cJSON_IsNull(metrics)) return 0;
    if (!cJSON_IsObject(metrics)) return tt_fail_line(err, errlen, "line %zu: metrics is not an object", line);
    bool bad = false;
    double scale = 0;
    const cJSON *v = metric(metrics, "ttft", &scale, line, &bad, err, errlen);
    if (v && imp_duration(v, scale, "ttft", i, &r->ttft_ns, err, errlen) != 0) return -1;
    if (!bad && (v = metric(metrics, "request_latency", &scale, line, &bad, err, errlen)) &&
        imp_duration(v, scale, "request_latency", i, &r->e2el_ns, err, errlen) != 0)
        return -1;
    if (!bad && (v = metric(metrics, "inter_chunk_latency", &scale, line, &bad, err, errlen))) {
        double mean;
        if (!cJSON_IsArray(v) && !imp_number(v, &mean))
            return tt_fail_line(err, errlen, "line %zu: inter_chunk_latency is neither a list nor a number", line);
        size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0; /* a number: older aiperf's mean, not the gaps */
        if (n) {
            r->itl_ns = malloc(n * sizeof(int64_t));
            if (!r->itl_ns) return tt_fail_line(err, errlen, "out of memory");
            size_t k = 0;
            for (const cJSON *g = v->child; g && k < n; g = g->next, k++) {
                if (imp_duration(g, scale, "inter_chunk_latency", k, &r->itl_ns[k], err, errlen) != 0)
                    return -1;
                r->n_itl = k + 1;
            }
        }
    }
    /* output_sequence_length counts reasoning tokens too; output_token_count does not */
    if (!bad && (v = metric(metrics, "output_sequence_length", NULL, line, &bad, err, errlen)) &&
        imp_count(v, "output_sequence_length", i, &r->output_tokens, err, errlen) != 0)
        return -1;
    if (!bad && r->output_tokens < 0 &&
        (v = metric(metrics, "output_token_count", NULL, line, &bad, err, errlen)) &&
        imp_count(v, "output_token_count", i, &r->output_tokens, err, errlen) != 0)
        return -1;
    if (!bad && (v = metric(metrics, "input_sequence_length", NULL, line, &bad, err, errlen)) &&
        imp_count(v, "input_sequence_length", i, &r->input_tokens, err, errlen) != 0)
        return -1;
    if (!bad && r->input_tokens < 0 &&
        (v = metric(metrics, "error_isl", NULL, line, &bad, err, errlen)) &&
        imp_count(v, "error_isl", i, &r->input_tokens, err, errlen) != 0)
        return -1;
    return bad ? -1 : 0;
}

int imp_load_aiperf(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen)
{
    if (imp_each_line(text, len, load_record, out, err, errlen) != 0) return -1;
    if (out->n_reqs == 0) return tt_fail_line(err, errlen, "no records");
    return 0;
}
