/* import_vllm.c - vllm bench serve --save-result --save-detailed: one JSON
 * object whose per-request data are parallel arrays ("ttfts", "itls", ...),
 * index i of each being request i in the order vllm sent them. The same
 * column layout is what sglang bench_serving --output-details writes, so
 * the column reader here serves both (docs/formats.md, "Benchmark result
 * files"). */
#include "import/import_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *column(const cJSON *obj, const char *key, size_t n, bool *bad, char *err,
                           size_t errlen, const char *tool)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!a || cJSON_IsNull(a)) return NULL;
    if (!cJSON_IsArray(a)) {
        *bad = true;
        tt_fail_line(err, errlen, "\"%s\" is not an array", key);
        return NULL;
    }
    size_t len = (size_t)cJSON_GetArraySize(a);
    if (len != n) {
        *bad = true;
        tt_fail_line(err, errlen, "arrays of different lengths: \"ttfts\" has %zu, \"%s\" has %zu", n,
                 key, len);
        return NULL;
    }
    return a;
}

static int load_itls(const cJSON *list, size_t index, tt_bench_request *r, char *err,
                     size_t errlen)
{
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return tt_fail_line(err, errlen, "itls[%zu]: not an array", index);
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (n == 0) return 0;
    r->itl_ns = malloc(n * sizeof(int64_t));
    if (!r->itl_ns) return tt_fail_line(err, errlen, "out of memory");
    size_t k = 0;
    for (const cJSON *g = list->child; g && k < n; g = g->next, k++) {
        char what[48];
        snprintf(what, sizeof what, "itls[%zu]", index);
        if (imp_duration(g, 1e9, what, k, &r->itl_ns[k], err, errlen) != 0) return -1;
        r->n_itl = k + 1;
    }
    return 0;
}

int imp_load_columns(const cJSON *obj, const char *tool, tt_bench_result *out, char *err,
                     size_t errlen)
{
    const cJSON *ttfts = cJSON_GetObjectItemCaseSensitive(obj, "ttfts");
    if (!ttfts)
        return tt_fail_line(err, errlen, "no \"ttfts\": per-request data missing (%s)",
                        strcmp(tool, "vllm") == 0 ? "run with --save-result --save-detailed"
                                                  : "run with --output-details");
    if (!cJSON_IsArray(ttfts)) return tt_fail_line(err, errlen, "\"ttfts\" is not an array");
    size_t n = (size_t)cJSON_GetArraySize(ttfts);
    bool bad = false;
    const cJSON *itls = column(obj, "itls", n, &bad, err, errlen, tool);
    const cJSON *starts = bad ? NULL : column(obj, "start_times", n, &bad, err, errlen, tool);
    const cJSON *lat = bad ? NULL : column(obj, "latencies", n, &bad, err, errlen, tool);
    const cJSON *ins = bad ? NULL : column(obj, "input_lens", n, &bad, err, errlen, tool);
    const cJSON *outs = bad ? NULL : column(obj, "output_lens", n, &bad, err, errlen, tool);
    const cJSON *texts = bad ? NULL : column(obj, "generated_texts", n, &bad, err, errlen, tool);
    const cJSON *errors = bad ? NULL : column(obj, "errors", n, &bad, err, errlen, tool);
    if (bad) return -1;

    const cJSON *t = ttfts->child;
    const cJSON *il = itls ? itls->child : NULL, *st = starts ? starts->child : NULL;
    const cJSON *la = lat ? lat->child : NULL, *in = ins ? ins->child : NULL;
    const cJSON *ou = outs ? outs->child : NULL, *tx = texts ? texts->child : NULL;
    const cJSON *er = errors ? errors->child : NULL;
    for (size_t i = 0; i < n && t; i++) {
        tt_bench_request *r = imp_push(out);
        if (!r) return tt_fail_line(err, errlen, "out of memory");
        if (imp_duration(t, 1e9, "ttfts", i, &r->ttft_ns, err, errlen) != 0) return -1;
        if (load_itls(il, i, r, err, errlen) != 0) return -1;
        if (st) {
            if (imp_duration(st, 1e9, "start_times", i, &r->start_ns, err, errlen) != 0) return -1;
            r->start_clock = TT_BENCH_CLOCK_MONO;
        }
        if (la && imp_duration(la, 1e9, "latencies", i, &r->e2el_ns, err, errlen) != 0) return -1;
        if (in && imp_count(in, "input_lens", i, &r->input_tokens, err, errlen) != 0) return -1;
        if (ou && imp_count(ou, "output_lens", i, &r->output_tokens, err, errlen) != 0) return -1;
        if (imp_text(tx, "generated_texts", i, r, err, errlen) != 0) return -1;
        if (er && !cJSON_IsNull(er)) {
            if (!cJSON_IsString(er) || !er->valuestring)
                return tt_fail_line(err, errlen, "errors[%zu]: not a string", i);
            if (er->valuestring[0]) {
                bool oom = false;
                r->error = imp_strdup(er->valuestring, &oom);
                if (oom) return tt_fail_line(err, errlen, "out of memory");
                r->success = false;
            }
        }
        /* the tool's defaults that only a request without a response keeps
         * (ttft 0, no itls, latency 0 or absent, no tokens) */
        if (r->ttft_ns == 0 && r->n_itl == 0 && (r->e2el_ns == 0 || r->e2el_ns == TT_BENCH_NONE) &&
            r->output_tokens <= 0)
            r->success = false;
        if (!r->success) {
            if (r->ttft_ns == 0) r->ttft_ns = TT_BENCH_NONE;
            if (r->e2el_ns == 0) r->e2el_ns = TT_BENCH_NONE;
        }
        t = t->next;
        il = il ? il->next : NULL;
        st = st ? st->next : NULL;
        la = la ? la->next : NULL;
        in = in ? in->next : NULL;
        ou = ou ? ou->next : NULL;
        tx = tx ? tx->next : NULL;
        er = er ? er->next : NULL;
    }
    return 0;
}

int imp_load_vllm(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen)
{
    cJSON *root = imp_parse(text, len);
    if (!root) return tt_fail_line(err, errlen, "not a JSON document");
    int rc = -1;
    if (!cJSON_IsObject(root)) {
        tt_fail_line(err, errlen, "not a JSON object");
        goto done;
    }
    if (imp_detect_value(root) == TT_BENCH_SGLANG) {
        tt_fail_line(err, errlen, "this is an sglang bench_serving result");
        goto done;
    }
    if (imp_load_columns(root, "vllm", out, err, errlen) != 0) goto done;
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(root, "request_id_prefix");
    if (prefix && !cJSON_IsNull(prefix)) {
        if (!cJSON_IsString(prefix) || !prefix->valuestring) {
            tt_fail_line(err, errlen, "\"request_id_prefix\" is not a string");
            goto done;
        }
        if (tt_bench_set_id_prefix(out, prefix->valuestring) != 0) {
            tt_fail_line(err, errlen, "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}
