/* bench_import.c - benchmark result files: dispatch, detection, the shared
 * helpers of import_internal.h, and freeing. */
#include "core/util.h"
#include "import/import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[TT_BENCH_FORMAT_COUNT] = {
    [TT_BENCH_AUTO] = "auto",         [TT_BENCH_VLLM] = "vllm",
    [TT_BENCH_GENAI_PERF] = "genai-perf", [TT_BENCH_AIPERF] = "aiperf",
    [TT_BENCH_GUIDELLM] = "guidellm", [TT_BENCH_SGLANG] = "sglang",
    [TT_BENCH_LLMPERF] = "llmperf",
};

const char *tt_bench_format_name(tt_bench_format f)
{
    if ((int)f < 0 || f >= TT_BENCH_FORMAT_COUNT) return "unknown";
    return format_names[f];
}

int tt_bench_format_parse(const char *s)
{
    if (!s) return -1;
    for (int f = 0; f < TT_BENCH_FORMAT_COUNT; f++)
        if (strcmp(s, format_names[f]) == 0) return f;
    return -1;
}

/* ---- shared helpers ---- */

#define IMP_MARK "\\u0001N" /* as written in JSON text */
#define IMP_MARK_LEN 7
enum { LONG_INTEGER_DIGITS = 16 };

static bool is_number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static size_t non_finite_word(const char *p, size_t left)
{
    static const char *const words[] = {"NaN", "Infinity", "-Infinity"};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        size_t n = strlen(words[w]);
        if (left >= n && memcmp(p, words[w], n) == 0) return n;
    }
    return 0;
}

char *imp_protect_integers(const char *data, size_t len, size_t *out_len)
{
    if (len > (SIZE_MAX - 1) / 2) return NULL;
    /* a marked integer grows by 9 bytes and has at least 16: at most 2x */
    char *out = malloc(2 * len + 1);
    if (!out) return NULL;
    size_t o = 0;
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        char c = data[i];
        if (in_string) {
            out[o++] = c;
            i++;
            if (c == '\\' && i < len) out[o++] = data[i++];
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            out[o++] = c;
            i++;
            continue;
        }
        size_t word = non_finite_word(data + i, len - i);
        if (word) { /* Python's json writes NaN and Infinity; read them as null */
            memcpy(out + o, "null", 4);
            o += 4;
            i += word;
            continue;
        }
        if ((c >= '0' && c <= '9') || c == '-') {
            size_t end = i;
            while (end < len && is_number_char(data[end])) end++;
            size_t digits = 0;
            bool integer = true;
            for (size_t k = i; k < end; k++) {
                if (data[k] >= '0' && data[k] <= '9') digits++;
                else if (!(k == i && data[k] == '-')) integer = false;
            }
            if (integer && digits >= LONG_INTEGER_DIGITS) {
                out[o++] = '"';
                memcpy(out + o, IMP_MARK, IMP_MARK_LEN);
                o += IMP_MARK_LEN;
                memcpy(out + o, data + i, end - i);
                o += end - i;
                out[o++] = '"';
            } else {
                memcpy(out + o, data + i, end - i);
                o += end - i;
            }
            i = end;
            continue;
        }
        out[o++] = c;
        i++;
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

cJSON *imp_parse(const char *text, size_t len)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!v) return NULL;
    if (!end || end < text || end > text + len) {
        cJSON_Delete(v);
        return NULL;
    }
    for (const char *p = end; p < text + len; p++) {
        if (!is_space(*p)) {
            cJSON_Delete(v);
            return NULL;
        }
    }
    return v;
}

int imp_each_line(const char *text, size_t len, imp_line_fn fn, void *ctx, char *err,
                  size_t errlen)
{
    size_t line_no = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        line_no++;
        size_t a = pos, b = end;
        while (a < b && is_space(text[a])) a++;
        while (b > a && is_space(text[b - 1])) b--;
        pos = nl ? end + 1 : len;
        if (a == b) continue;
        cJSON *v = imp_parse(text + a, b - a);
        if (!v) return tt_fail_line(err, errlen, "line %zu: not one JSON value", line_no);
        int rc = fn(v, line_no, ctx, err, errlen);
        cJSON_Delete(v);
        if (rc != 0) return rc;
    }
    return 0;
}

static const char *marked_integer(const cJSON *item)
{
    if (!cJSON_IsString(item) || !item->valuestring) return NULL;
    const char *s = item->valuestring;
    if (s[0] != '\x01' || s[1] != 'N') return NULL;
    return s + 2;
}

bool imp_number(const cJSON *item, double *out)
{
    if (cJSON_IsNumber(item)) {
        *out = item->valuedouble;
        return isfinite(*out);
    }
    const char *digits = marked_integer(item);
    if (!digits) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(digits, &end);
    if (end == digits || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool imp_integer(const cJSON *item, int64_t *out)
{
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (!isfinite(v) || v != floor(v) || fabs(v) > 9007199254740992.0) return false;
        *out = (int64_t)v;
        return true;
    }
    const char *digits = marked_integer(item);
    if (!digits) return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(digits, &end, 10);
    if (end == digits || *end || errno == ERANGE) return false;
    *out = v;
    return true;
}

bool imp_to_ns(double value, double scale_ns, int64_t *out)
{
    double ns = value * scale_ns;
    if (!isfinite(ns) || ns >= 9.2e18 || ns <= -9.2e18) return false;
    if (scale_ns < 1 || scale_ns != floor(scale_ns) || fabs(value) >= 9e15) {
        *out = (int64_t)llround(ns);
        return true;
    }
    /* whole units and the fraction apart, so that a large instant (epoch
     * seconds) does not lose the ns the product would round away */
    double whole = trunc(value);
    int64_t ns_whole = (int64_t)whole * (int64_t)scale_ns;
    *out = ns_whole + (int64_t)llround((value - whole) * scale_ns);
    return true;
}

double imp_unit_scale(const char *unit)
{
    if (!unit) return 0;
    if (strcmp(unit, "ns") == 0) return 1;
    if (strcmp(unit, "us") == 0) return 1e3;
    if (strcmp(unit, "ms") == 0) return 1e6;
    if (strcmp(unit, "s") == 0 || strcmp(unit, "sec") == 0) return 1e9;
    return 0;
}

int imp_duration(const cJSON *item, double scale_ns, const char *what, size_t index,
                 int64_t *out, char *err, size_t errlen)
{
    double v;
    if (!imp_number(item, &v))
        return tt_fail_line(err, errlen, "%s[%zu]: not a number", what, index);
    if (v < 0) return tt_fail_line(err, errlen, "%s[%zu]: negative (%g)", what, index, v);
    if (!imp_to_ns(v, scale_ns, out))
        return tt_fail_line(err, errlen, "%s[%zu]: out of range (%g)", what, index, v);
    return 0;
}

int imp_count(const cJSON *item, const char *what, size_t index, int64_t *out, char *err,
              size_t errlen)
{
    int64_t v;
    if (!imp_integer(item, &v))
        return tt_fail_line(err, errlen, "%s[%zu]: not an integer", what, index);
    if (v < 0) return tt_fail_line(err, errlen, "%s[%zu]: negative (%lld)", what, index, (long long)v);
    *out = v;
    return 0;
}

enum { FNV_OFFSET = 0xcbf29ce484222325ull, FNV_PRIME = 0x100000001b3ull };

uint64_t imp_fnv1a(const char *s, size_t len)
{
    if (len == 0) return 0;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

int imp_text(const cJSON *item, const char *what, size_t index, tt_bench_request *r, char *err,
             size_t errlen)
{
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsString(item) || !item->valuestring || marked_integer(item))
        return tt_fail_line(err, errlen, "%s[%zu]: not a string", what, index);
    size_t n = strlen(item->valuestring);
    r->text_len = (int64_t)n;
    r->text_hash = imp_fnv1a(item->valuestring, n);
    return 0;
}

char *imp_strdup(const char *s, bool *oom)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = true;
    return d;
}

tt_bench_request *imp_push(tt_bench_result *r)
{
    if (r->n_reqs % 64 == 0) {
        size_t cap = r->n_reqs + 64;
        if (cap > SIZE_MAX / sizeof(tt_bench_request)) return NULL;
        tt_bench_request *grown = realloc(r->reqs, cap * sizeof(tt_bench_request));
        if (!grown) return NULL;
        r->reqs = grown;
    }
    tt_bench_request *q = &r->reqs[r->n_reqs];
    memset(q, 0, sizeof(*q));
    q->index = r->n_reqs;
    q->start_clock = TT_BENCH_CLOCK_NONE;
    q->start_ns = TT_BENCH_NONE;
    q->ttft_ns = TT_BENCH_NONE;
    q->e2el_ns = TT_BENCH_NONE;
    q->output_tokens = -1;
    q->input_tokens = -1;
    q->success = true;
    q->text_len = -1;
    r->n_reqs++;
    return q;
}

/* ---- detection ---- */

static bool has(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
}

int imp_detect_value(const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        const cJSON *first = v->child;
        if (cJSON_IsObject(first) &&
            (has(first, "ttft_s") || has(first, "end_to_end_latency_s") ||
             has(first, "error_code") || has(first, "number_output_tokens")))
            return TT_BENCH_LLMPERF;
        return -1;
    }
    if (!cJSON_IsObject(v)) return -1;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "experiments"))) return TT_BENCH_GENAI_PERF;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "benchmarks"))) return TT_BENCH_GUIDELLM;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "metadata")) &&
        (has(v, "metrics") || has(v, "error")))
        return TT_BENCH_AIPERF;
    if (has(v, "total_output_tokens_retokenized") || has(v, "mean_e2e_latency_ms") ||
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "details")))
        return TT_BENCH_SGLANG;
    if (has(v, "ttfts") || has(v, "itls") || has(v, "endpoint_type") ||
        has(v, "request_throughput"))
        return TT_BENCH_VLLM;
    return -1;
}

static int first_line_format(const cJSON *v, size_t line_no, void *ctx, char *err, size_t errlen)
{
    *(int *)ctx = imp_detect_value(v);
    return 1; /* only the first line */
}

static int detect_text(const char *text, size_t len, char *err, size_t errlen)
{
    cJSON *whole = imp_parse(text, len);
    if (whole) {
        int f = imp_detect_value(whole);
        cJSON_Delete(whole);
        if (f < 0)
            return tt_fail_line(err, errlen, "JSON, but not a result file of vllm, genai-perf, "
                                         "aiperf, guidellm, sglang or llmperf");
        return f;
    }
    int f = -1;
    char line_err[128] = "";
    int rc = imp_each_line(text, len, first_line_format, &f, line_err, sizeof line_err);
    if (rc < 0 || f < 0)
        return tt_fail_line(err, errlen, "neither JSON nor JSON lines of a known benchmark tool%s%s",
                        line_err[0] ? ": " : "", line_err);
    if (f != TT_BENCH_AIPERF && f != TT_BENCH_SGLANG)
        return tt_fail_line(err, errlen, "JSON lines, but %s writes one JSON document",
                        tt_bench_format_name((tt_bench_format)f));
    return f;
}

int tt_bench_detect_mem(const char *data, size_t len, char *err, size_t errlen)
{
    size_t tlen = 0;
    char *text = imp_protect_integers(data, len, &tlen);
    if (!text) return tt_fail_line(err, errlen, "out of memory");
    int f = detect_text(text, tlen, err, errlen);
    free(text);
    return f;
}

/* ---- loading ---- */

int tt_bench_load_mem(const char *data, size_t len, tt_bench_format fmt, tt_bench_result *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (err && errlen) err[0] = '\0';
    if ((int)fmt < 0 || fmt >= TT_BENCH_FORMAT_COUNT)
        return tt_fail_line(err, errlen, "unknown format %d", (int)fmt);
    if (len > TT_BENCH_MAX_FILE_BYTES)
        return tt_fail_line(err, errlen, "%zu bytes, more than the %zu this reads", len,
                        TT_BENCH_MAX_FILE_BYTES);
    size_t tlen = 0;
    char *text = imp_protect_integers(data, len, &tlen);
    if (!text) return tt_fail_line(err, errlen, "out of memory");
    if (fmt == TT_BENCH_AUTO) {
        int f = detect_text(text, tlen, err, errlen);
        if (f < 0) {
            free(text);
            return -1;
        }
        fmt = (tt_bench_format)f;
    }
    char inner[256] = "";
    int rc;
    switch (fmt) {
    case TT_BENCH_VLLM: rc = imp_load_vllm(text, tlen, out, inner, sizeof inner); break;
    case TT_BENCH_GENAI_PERF: rc = imp_load_genai_perf(text, tlen, out, inner, sizeof inner); break;
    case TT_BENCH_AIPERF: rc = imp_load_aiperf(text, tlen, out, inner, sizeof inner); break;
    case TT_BENCH_GUIDELLM: rc = imp_load_guidellm(text, tlen, out, inner, sizeof inner); break;
    case TT_BENCH_SGLANG: rc = imp_load_sglang(text, tlen, out, inner, sizeof inner); break;
    case TT_BENCH_LLMPERF: rc = imp_load_llmperf(text, tlen, out, inner, sizeof inner); break;
    default: rc = tt_fail_line(inner, sizeof inner, "no loader"); break;
    }
    free(text);
    if (rc != 0) {
        tt_bench_result_free(out);
        return tt_fail_line(err, errlen, "%s result: %s", tt_bench_format_name(fmt),
                        inner[0] ? inner : "unreadable");
    }
    out->format = fmt;
    return 0;
}

int tt_bench_load(const char *path, tt_bench_format fmt, tt_bench_result *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!path) return tt_fail_line(err, errlen, "no path");
    char *data = NULL;
    size_t len = 0;
    if (tt_read_file(path, TT_BENCH_MAX_FILE_BYTES, &data, &len, err, errlen) != 0) return -1;
    char inner[320] = "";
    int rc = tt_bench_load_mem(data, len, fmt, out, inner, sizeof inner);
    free(data);
    if (rc != 0) return tt_fail_line(err, errlen, "%s: %s", path, inner);
    out->path = strdup(path);
    if (!out->path) {
        tt_bench_result_free(out);
        return tt_fail_line(err, errlen, "%s: out of memory", path);
    }
    return 0;
}

int tt_bench_set_id_prefix(tt_bench_result *r, const char *prefix)
{
    if (!r || !prefix) return -1;
    size_t plen = strlen(prefix);
    char **ids = calloc(r->n_reqs ? r->n_reqs : 1, sizeof(char *));
    if (!ids) return -1;
    for (size_t i = 0; i < r->n_reqs; i++) {
        size_t cap = plen + 24;
        ids[i] = malloc(cap);
        if (!ids[i]) {
            for (size_t k = 0; k < i; k++) free(ids[k]);
            free(ids);
            return -1;
        }
        snprintf(ids[i], cap, "%s%zu", prefix, r->reqs[i].index);
    }
    for (size_t i = 0; i < r->n_reqs; i++) {
        free(r->reqs[i].request_id);
        r->reqs[i].request_id = ids[i];
    }
    free(ids);
    return 0;
}

void tt_bench_result_free(tt_bench_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_reqs; i++) {
        free(r->reqs[i].request_id);
        free(r->reqs[i].itl_ns);
        free(r->reqs[i].error);
    }
    free(r->reqs);
    free(r->path);
    memset(r, 0, sizeof(*r));
}
