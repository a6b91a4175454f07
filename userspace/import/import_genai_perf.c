/* import_genai_perf.c - genai-perf profile_export.json (written by
 * perf_analyzer): {"service_kind", "endpoint", "experiments": [{"experiment":
 * {...}, "requests": [{"timestamp", "response_timestamps",
 * "response_outputs", ...}]}]}, every instant in ns since the Unix epoch.
 * Every experiment's requests, in file order.
 *
 * For service_kind "openai" genai-perf does not time every response: it
 * first repairs responses split across reads, then drops every response
 * whose generated text is empty (role-only chunks, [DONE], comments), and
 * takes TTFT, E2EL and the gaps from the responses left. This file does the
 * same, so the numbers are the ones genai-perf reported (docs/formats.md,
 * "Benchmark result files").
 *
 * For service_kind "triton" (perf_analyzer -i grpc --streaming against
 * Triton's ModelStreamInfer, vLLM or TensorRT-LLM backend) every response
 * counts, the empty null response that ends a decoupled request included;
 * each response_outputs entry is the response's output tensors by name,
 * text_output its generated text (the BYTES length prefix removed by
 * perf_analyzer). perf_analyzer sends each request message an id but does
 * not write it, so the records carry none. */
#include "import/import_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct text_buf {
    char *p;
    size_t len, cap;
} text_buf;

static int buf_append(text_buf *b, const char *s, size_t n)
{
    if (n == 0) return 0;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->p, cap);
        if (!grown) return -1;
        b->p = grown;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static const char *find(const char *s, size_t len, const char *needle)
{
    return memmem(s, len, needle, strlen(needle));
}

static bool is_py_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void strip(const char **s, size_t *len)
{
    while (*len && is_py_space(**s)) (*s)++, (*len)--;
    while (*len && is_py_space((*s)[*len - 1])) (*len)--;
}

/* An SSE line that carries no data: a comment or another field. */
static bool not_data_field(const char *s, size_t len)
{
    return starts_with(s, len, ":") || starts_with(s, len, "event:") ||
           starts_with(s, len, "id:") || starts_with(s, len, "retry:");
}

typedef enum gp_kind { GP_OPENAI, GP_TRITON, GP_TRITON_C_API, GP_DYNAMIC_GRPC } gp_kind;

static const char *const gp_kind_names[] = {"openai", "triton", "triton_c_api", "dynamic_grpc"};

typedef struct gp_ctx {
    gp_kind kind;
    size_t req;  /* request index, for errors */
    size_t resp; /* response index, for errors */
    char *err;
    size_t errlen;
} gp_ctx;

static const char *string_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

/* The generated text of one OpenAI (or Triton generate) JSON body, as
 * genai-perf extracts it; *failed set with a reason for an error event. */
static int body_text(const cJSON *d, gp_ctx *c, const char **text, char **error)
{
    *text = "";
    if (!cJSON_IsObject(d)) return 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "error");
    if (e && !cJSON_IsNull(e)) {
        if (*error) return 0;
        char *printed = cJSON_PrintUnformatted(e);
        bool oom = false;
        *error = imp_strdup(printed ? printed : "error", &oom);
        cJSON_free(printed);
        return oom ? tt_fail_line(c->err, c->errlen, "out of memory") : 0;
    }
    const cJSON *generate = cJSON_GetObjectItemCaseSensitive(d, "text_output");
    if (generate) {
        *text = cJSON_IsString(generate) && generate->valuestring ? generate->valuestring : "";
        return 0;
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(d, "choices");
    const cJSON *first = cJSON_IsArray(choices) ? choices->child : NULL;
    if (!first) return 0;
    const cJSON *object = cJSON_GetObjectItemCaseSensitive(d, "object");
    const char *kind = cJSON_IsString(object) && object->valuestring ? object->valuestring : NULL;
    if (!kind || strcmp(kind, "text_completion") == 0) *text = string_of(first, "text");
    else if (strcmp(kind, "chat.completion.chunk") == 0)
        *text = string_of(cJSON_GetObjectItemCaseSensitive(first, "delta"), "content");
    else if (strcmp(kind, "chat.completion") == 0)
        *text = string_of(cJSON_GetObjectItemCaseSensitive(first, "message"), "content");
    else
        return tt_fail_line(c->err, c->errlen,
                        "requests[%zu].response_outputs[%zu]: unknown OpenAI object \"%.40s\"",
                        c->req, c->resp, kind);
    return 0;
}

/* Append the generated text of one SSE event (genai-perf's reading: "data:"
 * and spaces removed, [DONE] and non-data fields empty) to out. */
static int event_text(const char *s, size_t len, gp_ctx *c, text_buf *out, char **error)
{
    if (len == 0) return 0;
    if (starts_with(s, len, "event: error") || starts_with(s, len, "event:error")) {
        if (*error) return 0;
        bool oom = false;
        *error = imp_strdup("SSE error event", &oom);
        return oom ? tt_fail_line(c->err, c->errlen, "out of memory") : 0;
    }
    if (not_data_field(s, len)) return 0;
    if (starts_with(s, len, "data:")) s += 5, len -= 5;
    strip(&s, &len);
    if (len == 0 || (len == 6 && memcmp(s, "[DONE]", 6) == 0)) return 0;
    cJSON *d = imp_parse(s, len); /* the whole event: CRLF-separated events in one response are not JSON */
    if (!d)
        return tt_fail_line(c->err, c->errlen, "requests[%zu].response_outputs[%zu]: data is not JSON",
                        c->req, c->resp);
    const char *text = "";
    int rc = body_text(d, c, &text, error);
    if (rc == 0 && buf_append(out, text, strlen(text)) != 0)
        rc = tt_fail_line(c->err, c->errlen, "out of memory");
    cJSON_Delete(d);
    return rc;
}

/* The text of one whole response: its events (split at blank lines, as
 * genai-perf splits one read holding several) one after another. */
static int response_text(const text_buf *r, gp_ctx *c, text_buf *out, char **error)
{
    const char *s = r->p ? r->p : "";
    size_t len = r->len;
    strip(&s, &len);
    while (len > 0) {
        const char *sep = find(s, len, "\n\n");
        size_t n = sep ? (size_t)(sep - s) : len;
        if (event_text(s, n, c, out, error) != 0) return -1;
        if (!sep) break;
        s += n + 2;
        len -= n + 2;
    }
    return 0;
}

/* genai-perf's repair of an SSE event split across responses: a response
 * that does not start with "data: " gives what precedes its first
 * "data: " (or all of it) to the response before it. */
static int merge_splinters(text_buf *resp, size_t n, gp_ctx *c)
{
    for (size_t i = n; i-- > 1;) {
        text_buf *r = &resp[i];
        const char *s = r->p ? r->p : "";
        if (not_data_field(s, r->len) || starts_with(s, r->len, "data: ")) continue;
        if (!resp[i - 1].p || !find(resp[i - 1].p, resp[i - 1].len, "data:"))
            return tt_fail_line(c->err, c->errlen,
                            "requests[%zu].response_outputs[%zu]: a split SSE event whose "
                            "previous response has no \"data:\"",
                            c->req, i);
        const char *at = find(s, r->len, "data: ");
        size_t head = at ? (size_t)(at - s) : r->len;
        if (buf_append(&resp[i - 1], s, head) != 0) return tt_fail_line(c->err, c->errlen, "out of memory");
        if (head == 0) continue;
        memmove(r->p, r->p + head, r->len - head);
        r->len -= head;
        r->p[r->len] = '\0';
    }
    return 0;
}

static int read_instants(const cJSON *resp, size_t n, int64_t start, int64_t *at, size_t i,
                         char *err, size_t errlen)
{
    int64_t prev = start;
    size_t k = 0;
    for (const cJSON *t = resp->child; t && k < n; t = t->next, k++) {
        if (!imp_integer(t, &at[k]))
            return tt_fail_line(err, errlen, "requests[%zu].response_timestamps[%zu]: not an integer", i, k);
        if (at[k] < prev)
            return tt_fail_line(err, errlen,
                            "requests[%zu].response_timestamps[%zu]: earlier than the one before", i, k);
        prev = at[k];
    }
    return 0;
}

/* Which responses count (keep[k]) and the text they carry, for openai. */
static int openai_responses(const cJSON *outs, size_t n, gp_ctx *c, bool *keep, text_buf *text,
                            char **error)
{
    text_buf *resp = calloc(n ? n : 1, sizeof(text_buf));
    if (!resp) return tt_fail_line(c->err, c->errlen, "out of memory");
    int rc = 0;
    size_t k = 0;
    for (const cJSON *o = outs->child; o && k < n && rc == 0; o = o->next, k++) {
        const cJSON *r = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "response") : NULL;
        if (!cJSON_IsString(r) || !r->valuestring)
            rc = tt_fail_line(c->err, c->errlen, "requests[%zu].response_outputs[%zu]: no \"response\" string",
                          c->req, k);
        else if (buf_append(&resp[k], r->valuestring, strlen(r->valuestring)) != 0)
            rc = tt_fail_line(c->err, c->errlen, "out of memory");
    }
    if (rc == 0) rc = merge_splinters(resp, n, c);
    for (k = 0; k < n && rc == 0; k++) {
        size_t before = text->len;
        c->resp = k;
        rc = response_text(&resp[k], c, text, error);
        keep[k] = text->len > before;
    }
    for (k = 0; k < n; k++) free(resp[k].p);
    free(resp);
    return rc;
}

/* Triton's responses: all count; text_output (generate) or output_ids
 * (triton_c_api, counted as genai-perf counts them). For service_kind
 * triton genai-perf reads every response's text_output (and fails without
 * it), so a response without that string fails the load. */
static int triton_responses(const cJSON *outs, size_t n, gp_ctx *c, bool *keep, text_buf *text,
                            int64_t *tokens)
{
    int64_t count = 0;
    bool ids = false;
    size_t k = 0;
    for (const cJSON *o = outs ? outs->child : NULL; o && k < n; o = o->next, k++) {
        const cJSON *t = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "text_output") : NULL;
        if (c->kind == GP_TRITON && (!cJSON_IsString(t) || !t->valuestring))
            return tt_fail_line(c->err, c->errlen,
                                "requests[%zu].response_outputs[%zu]: no \"text_output\" string "
                                "(genai-perf reads it for service_kind triton)",
                                c->req, k);
        if (cJSON_IsString(t) && t->valuestring &&
            buf_append(text, t->valuestring, strlen(t->valuestring)) != 0)
            return tt_fail_line(c->err, c->errlen, "out of memory");
        const cJSON *id = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "output_ids") : NULL;
        if (id) {
            ids = true;
            count += cJSON_IsArray(id) ? cJSON_GetArraySize(id) : 1;
        }
    }
    for (k = 0; k < n; k++) keep[k] = true;
    if (ids) *tokens = count;
    return 0;
}

static int load_request(const cJSON *q, gp_ctx *c, tt_bench_request *r)
{
    size_t i = c->req;
    char *err = c->err;
    size_t errlen = c->errlen;
    if (!cJSON_IsObject(q)) return tt_fail_line(err, errlen, "requests[%zu]: not an object", i);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(q, "timestamp");
    int64_t start;
    if (!ts) return tt_fail_line(err, errlen, "requests[%zu]: no \"timestamp\"", i);
    if (!imp_integer(ts, &start) || start < 0)
        return tt_fail_line(err, errlen, "requests[%zu]: timestamp is not a non-negative integer", i);
    r->start_ns = start;
    r->start_clock = TT_BENCH_CLOCK_WALL;
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(q, "response_timestamps");
    if (!cJSON_IsArray(resp))
        return tt_fail_line(err, errlen, "requests[%zu]: response_timestamps is not an array", i);
    size_t n = (size_t)cJSON_GetArraySize(resp);
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(q, "response_outputs");
    if (cJSON_IsNull(outs)) outs = NULL;
    if (outs && (!cJSON_IsArray(outs) || (size_t)cJSON_GetArraySize(outs) != n))
        return tt_fail_line(err, errlen,
                        "requests[%zu]: response_outputs and response_timestamps differ in length", i);
    if (c->kind != GP_DYNAMIC_GRPC && c->kind != GP_TRITON_C_API && !outs && n > 0)
        return tt_fail_line(err, errlen,
                        "requests[%zu]: no response_outputs (genai-perf reads them for "
                        "service_kind %s)", i, gp_kind_names[c->kind]);

    int64_t *at = malloc((n ? n : 1) * sizeof(int64_t));
    bool *keep = calloc(n ? n : 1, sizeof(bool));
    text_buf text = {0};
    char *error = NULL;
    int rc = (!at || !keep) ? tt_fail_line(err, errlen, "out of memory") : 0;
    if (rc == 0) rc = read_instants(resp, n, start, at, i, err, errlen);
    if (rc == 0)
        rc = c->kind == GP_OPENAI ? openai_responses(outs, n, c, keep, &text, &error)
                       : triton_responses(outs, n, c, keep, &text, &r->output_tokens);
    size_t kept = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) kept += keep[k];
    if (rc == 0 && kept > 1 && !(r->itl_ns = malloc((kept - 1) * sizeof(int64_t))))
        rc = tt_fail_line(err, errlen, "out of memory");
    if (rc == 0 && error) {
        r->success = false;
        r->error = error;
        error = NULL;
    } else if (rc == 0 && kept == 0) {
        bool oom = false;
        r->success = false;
        r->error = imp_strdup(n ? "no response with generated text (genai-perf leaves it out)"
                                : "no response",
                              &oom);
        if (oom) rc = tt_fail_line(err, errlen, "out of memory");
    } else if (rc == 0) {
        int64_t prev = TT_BENCH_NONE;
        for (size_t k = 0; k < n; k++) {
            if (!keep[k]) continue;
            if (prev == TT_BENCH_NONE) r->ttft_ns = at[k] - start;
            else r->itl_ns[r->n_itl++] = at[k] - prev;
            prev = at[k];
        }
        r->e2el_ns = prev - start;
        if (outs) {
            r->text_len = (int64_t)text.len;
            r->text_hash = imp_fnv1a(text.p, text.len);
        }
    }
    free(error);
    free(text.p);
    free(keep);
    free(at);
    return rc;
}

int imp_load_genai_perf(const char *text, size_t len, tt_bench_result *out, char *err,
                        size_t errlen)
{
    cJSON *root = imp_parse(text, len);
    if (!root) return tt_fail_line(err, errlen, "not a JSON document");
    int rc = 0;
    gp_ctx c = {.err = err, .errlen = errlen};
    const cJSON *exps = cJSON_GetObjectItemCaseSensitive(root, "experiments");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "service_kind");
    if (!cJSON_IsArray(exps)) {
        rc = tt_fail_line(err, errlen, "no \"experiments\" array");
        goto done;
    }
    if (!cJSON_IsString(kind) || !kind->valuestring) {
        rc = tt_fail_line(err, errlen, "no \"service_kind\" string");
        goto done;
    }
    size_t known = sizeof gp_kind_names / sizeof *gp_kind_names;
    size_t which = 0;
    while (which < known && strcmp(kind->valuestring, gp_kind_names[which]) != 0) which++;
    if (which == known) {
        rc = tt_fail_line(err, errlen, "unknown service_kind \"%.40s\"", kind->valuestring);
        goto done;
    }
    c.kind = (gp_kind)which;
    /* the file holds only requests that ended inside a measurement window,
     * each client thread's in completion order: an index never numbers
     * what was sent */
    out->ids_not_indices = true;
    if (c.kind == GP_TRITON)
        out->id_note = "perf_analyzer sent each gRPC request message an id (its thread << 48 | a counter) "
                       "but profile_export.json does not record it: records are matched by start instant or order";
    size_t e = 0;
    for (const cJSON *x = exps->child; x && rc == 0; x = x->next, e++) {
        const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(x, "requests");
        if (!cJSON_IsArray(reqs)) {
            rc = tt_fail_line(err, errlen, "experiments[%zu]: no \"requests\" array", e);
            break;
        }
        for (const cJSON *q = reqs->child; q && rc == 0; q = q->next) {
            tt_bench_request *r = imp_push(out);
            if (!r) {
                rc = tt_fail_line(err, errlen, "out of memory");
                break;
            }
            c.req = r->index;
            rc = load_request(q, &c, r);
        }
    }
    if (rc == 0 && out->n_reqs == 0) rc = tt_fail_line(err, errlen, "no requests");
done:
    cJSON_Delete(root);
    return rc;
}
