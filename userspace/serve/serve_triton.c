/* serve_triton.c - the triton-grpc profile's messages (serve_triton.h).
 *
 * ModelInferRequest (read): 1 model_name, 2 model_version, 3 id,
 * 4 parameters (map<string, InferParameter>: entry 1 key, 2 value;
 * InferParameter 1 bool_param), 5 inputs (InferInputTensor: 1 name,
 * 2 datatype, 5 contents), 7 raw_input_contents (the i-th belongs to the
 * i-th input, as tritonclient sends every input). InferTensorContents:
 * 2 int_contents, 3 int64_contents, 4 uint_contents, 5 uint64_contents,
 * 8 bytes_contents. A raw BYTES tensor is elements of a 4-byte
 * little-endian length and the bytes; raw numbers are little-endian.
 *
 * ModelStreamInferResponse (written): 2 infer_response { 1 model_name,
 * 2 model_version, 3 id, 4 parameters {"triton_final_response": bool},
 * 5 outputs { 1 "text_output", 2 "BYTES", 3 shape [1] }, 6
 * raw_output_contents }; an error: 1 error_message and infer_response with
 * model_name, model_version, id and the final flag only (Triton's
 * stream_infer_handler.cc clears the response and sets those). Fields go
 * out in field-number order, as protobuf's serializers write them. */
#include "serve/serve_triton.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/protobuf_wire.h"

#define MAX_INPUTS 32

/* ---- a small protobuf writer on tt_sbuf ---- */

static void pb_put_varint(tt_sbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    tt_sbuf_put(b, tmp, n);
}

static void pb_put_tag(tt_sbuf *b, uint32_t field, unsigned wire_type)
{
    pb_put_varint(b, (uint64_t)field << 3 | wire_type);
}

static void pb_put_bytes(tt_sbuf *b, uint32_t field, const void *p, size_t n)
{
    pb_put_tag(b, field, PB_WT_LEN);
    pb_put_varint(b, n);
    tt_sbuf_put(b, p, n);
}

static void pb_put_str(tt_sbuf *b, uint32_t field, const char *s) { pb_put_bytes(b, field, s, strlen(s)); }

/* field as an embedded message whose bytes are in sub */
static void pb_put_msg(tt_sbuf *b, uint32_t field, const tt_sbuf *sub)
{
    pb_put_bytes(b, field, sub->p ? sub->p : "", sub->len);
    if (sub->oom) b->oom = true;
}

/* ---- reading the request ---- */

typedef struct slice {
    const uint8_t *p;
    size_t n;
    bool set;
} slice;

typedef struct in_tensor {
    slice name, dtype, contents, raw;
} in_tensor;

static bool slice_is(slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.set && s.n == n && memcmp(s.p, lit, n) == 0;
}

static bool take_len(const pb_field *f, slice *s)
{
    if (f->type != PB_WT_LEN) return false;
    *s = (slice){f->data, f->len, true};
    return true;
}

static void copy_text(char *dst, size_t cap, slice s)
{
    size_t n = s.set ? s.n : 0;
    const uint8_t *z = n ? memchr(s.p, 0, n) : NULL;
    if (z) n = (size_t)(z - s.p);
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, s.p, n);
    dst[n] = 0;
}

/* The first element of a BYTES tensor: from raw contents, else bytes_contents. */
static bool bytes_first(const in_tensor *t, slice *out)
{
    if (t->raw.set) {
        if (t->raw.n < 4) return false;
        const uint8_t *p = t->raw.p;
        uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (len > t->raw.n - 4) return false;
        *out = (slice){p + 4, len, true};
        return true;
    }
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, t->contents.p, t->contents.n);
    while (pb_next_field(&r, &f))
        if (f.number == 8 && take_len(&f, out)) return true;
    return false;
}

/* The first element of an integer tensor as a count (negative: 0); false
 * when it has none or its datatype is not an integer type. */
static bool int_first(const in_tensor *t, uint64_t *out)
{
    static const struct { const char *name; size_t size; bool sign; } types[] = {
        {"INT8", 1, true}, {"UINT8", 1, false}, {"INT16", 2, true}, {"UINT16", 2, false},
        {"INT32", 4, true}, {"UINT32", 4, false}, {"INT64", 8, true}, {"UINT64", 8, false},
    };
    size_t k = 0;
    while (k < sizeof types / sizeof types[0] && !slice_is(t->dtype, types[k].name)) k++;
    if (k == sizeof types / sizeof types[0]) return false;
    uint64_t v = 0;
    if (t->raw.set) {
        if (t->raw.n < types[k].size) return false;
        for (size_t i = 0; i < types[k].size; i++) v |= (uint64_t)t->raw.p[i] << (8 * i);
        if (types[k].sign && types[k].size < 8 && (v >> (8 * types[k].size - 1)) & 1) v = 0; /* negative */
        if (types[k].sign && types[k].size == 8 && (v >> 63)) v = 0;
        *out = v;
        return true;
    }
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, t->contents.p, t->contents.n);
    while (pb_next_field(&r, &f)) {
        if (f.number < 2 || f.number > 5) continue;
        if (f.type == PB_WT_VARINT) {
            v = f.value;
        } else if (f.type == PB_WT_LEN) {
            size_t pos = 0;
            if (!pb_packed_varint_next(f.data, f.len, &pos, &v, NULL)) continue;
        } else {
            continue;
        }
        bool sign = f.number == 2 || f.number == 3;
        if (sign && (v >> 63)) v = 0; /* a negative int32/int64 */
        *out = v;
        return true;
    }
    return false;
}

/* A count from sampling_parameters: a JSON number or a string of digits
 * (genai-perf writes "max_tokens": "N"). -1 absent, -2 bad. */
static int64_t json_count(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return -1;
    double d = NAN;
    if (cJSON_IsNumber(v)) {
        d = v->valuedouble;
    } else if (cJSON_IsString(v) && v->valuestring[0]) {
        char *end;
        d = strtod(v->valuestring, &end);
        if (*end) d = NAN;
    }
    if (!isfinite(d) || d != floor(d) || d < 0 || d > UINT32_MAX) return -2;
    return (int64_t)d;
}

/* The request's parameter triton_enable_empty_final_response (bool). */
static bool param_entry_opt_in(const uint8_t *p, size_t n, bool *bad)
{
    pb_reader r;
    pb_field f;
    slice key = {0}, value = {0};
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &key);
        else if (f.number == 2) take_len(&f, &value);
    }
    if (r.error) *bad = true;
    if (!slice_is(key, "triton_enable_empty_final_response")) return false;
    bool on = false;
    pb_reader_init(&r, value.p, value.n);
    while (pb_next_field(&r, &f))
        if (f.number == 1 && f.type == PB_WT_VARINT) on = f.value != 0;
    if (r.error) *bad = true;
    return on;
}

static bool read_input(const uint8_t *p, size_t n, in_tensor *t)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &t->name);
        else if (f.number == 2) take_len(&f, &t->dtype);
        else if (f.number == 5) take_len(&f, &t->contents);
    }
    return !r.error;
}

static const in_tensor *find_input(const in_tensor *in, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (slice_is(in[i].name, name)) return &in[i];
    return NULL;
}

int tt_serve_triton_parse(const tt_serve_profile *prof, const uint8_t *msg, size_t len,
                          const tt_serve_gen_opts *opts, tt_serve_request *out, char *err, size_t errlen)
{
    (void)prof;
    in_tensor in[MAX_INPUTS];
    size_t n_in = 0, n_raw = 0;
    slice model = {0}, version = {0}, id = {0};
    bool opt_in = false, bad = false;
    memset(in, 0, sizeof in);
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, msg, len);
    while (pb_next_field(&r, &f)) {
        bool ok = true;
        switch (f.number) {
        case 1: ok = take_len(&f, &model); break;
        case 2: ok = take_len(&f, &version); break;
        case 3: ok = take_len(&f, &id); break;
        case 4:
            ok = f.type == PB_WT_LEN;
            if (ok && param_entry_opt_in(f.data, f.len, &bad)) opt_in = true;
            break;
        case 5:
            ok = f.type == PB_WT_LEN;
            if (!ok) break;
            if (n_in == MAX_INPUTS) {
                snprintf(err, errlen, "more than %d input tensors", MAX_INPUTS);
                return -1;
            }
            ok = read_input(f.data, f.len, &in[n_in++]);
            break;
        case 7:
            ok = f.type == PB_WT_LEN;
            if (ok && n_raw < MAX_INPUTS) in[n_raw].raw = (slice){f.data, f.len, true};
            n_raw++;
            break;
        default: break;
        }
        if (!ok) bad = true;
    }
    if (r.error || bad) {
        snprintf(err, errlen, "the message is not a ModelInferRequest");
        return -1;
    }
    if (n_raw && n_raw != n_in) {
        snprintf(err, errlen, "%zu raw_input_contents for %zu inputs", n_raw, n_in);
        return -1;
    }
    const in_tensor *text = find_input(in, n_in, "text_input");
    slice prompt = {0};
    if (!text || !slice_is(text->dtype, "BYTES") || !bytes_first(text, &prompt)) {
        snprintf(err, errlen, "no BYTES input 'text_input' with an element");
        return -1;
    }
    bool have_max = false, have_min = false, ignore_eos = false;
    uint64_t max_tokens = 0, min_tokens = 0;
    const in_tensor *t = find_input(in, n_in, "max_tokens");
    if (t && !(have_max = int_first(t, &max_tokens))) {
        snprintf(err, errlen, "input 'max_tokens' is not an integer tensor with an element");
        return -1;
    }
    t = find_input(in, n_in, "min_length"); /* TensorRT-LLM's name */
    if (t) have_min = int_first(t, &min_tokens);
    t = find_input(in, n_in, "sampling_parameters"); /* vLLM backend: a JSON string */
    slice sp = {0};
    if (t && slice_is(t->dtype, "BYTES") && bytes_first(t, &sp)) {
        cJSON *root = cJSON_ParseWithLength((const char *)sp.p, sp.n);
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            snprintf(err, errlen, "input 'sampling_parameters' is not a JSON object");
            return -1;
        }
        int64_t mx = json_count(root, "max_tokens"), mn = json_count(root, "min_tokens");
        const cJSON *ie = cJSON_GetObjectItemCaseSensitive(root, "ignore_eos");
        ignore_eos = cJSON_IsTrue(ie) || (cJSON_IsString(ie) && !strcmp(ie->valuestring, "true"));
        cJSON_Delete(root);
        if (mx == -2 || mn == -2) {
            snprintf(err, errlen, "sampling_parameters: max_tokens/min_tokens must be counts");
            return -1;
        }
        if (mx >= 0 && !have_max) { have_max = true; max_tokens = (uint64_t)mx; }
        if (mn >= 0 && !have_min) { have_min = true; min_tokens = (uint64_t)mn; }
    }
    out->stream = true;
    uint64_t n = have_max ? max_tokens : opts->default_tokens;
    if (n > opts->tokens_max) n = opts->tokens_max;
    if (opts->eos_after > 0 && !ignore_eos) {
        uint64_t natural = opts->eos_after;
        if (have_min && min_tokens > natural) natural = min_tokens;
        if (natural < n) {
            n = natural;
            out->finish_reason = "stop";
        }
    }
    out->n_tokens = (uint32_t)n;
    out->prompt_tokens = (uint32_t)(prompt.n / 4 > 0 ? prompt.n / 4 : 1);
    copy_text(out->model, sizeof out->model, model.set && model.n ? model : (slice){(const uint8_t *)opts->model,
                                                                                  strlen(opts->model), true});
    copy_text(out->model_version, sizeof out->model_version,
              version.set && version.n ? version : (slice){(const uint8_t *)"1", 1, true});
    copy_text(out->id, sizeof out->id, id);
    out->grpc_final_alone = opts->triton_empty_final;
    out->grpc_empty_final = out->grpc_final_alone ? opt_in : n == 0;
    out->created = opts->created;
    return 0;
}

size_t tt_serve_triton_plan(const tt_serve_request *req, tt_serve_event *plan)
{
    size_t n = 0;
    for (uint32_t k = 0; k < req->n_tokens; k++) plan[n++] = (tt_serve_event){TT_SEV_TOKEN, k};
    if (req->grpc_empty_final) plan[n++] = (tt_serve_event){TT_SEV_DONE, 0};
    return n;
}

/* ---- writing the responses ---- */

static void put_final_param(tt_sbuf *resp, bool final)
{
    tt_sbuf value = {0}, entry = {0};
    pb_put_tag(&value, 1, PB_WT_VARINT); /* bool_param */
    pb_put_varint(&value, final ? 1 : 0);
    pb_put_str(&entry, 1, "triton_final_response");
    pb_put_msg(&entry, 2, &value);
    pb_put_msg(resp, 4, &entry);
    tt_sbuf_free(&value);
    tt_sbuf_free(&entry);
}

void tt_serve_triton_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out)
{
    bool last_token = ev->kind == TT_SEV_TOKEN && ev->token + 1 == req->n_tokens;
    bool final = ev->kind == TT_SEV_DONE || ev->kind == TT_SEV_ERROR || (last_token && !req->grpc_final_alone);
    tt_sbuf resp = {0}, msg = {0};
    pb_put_str(&resp, 1, req->model);
    pb_put_str(&resp, 2, req->model_version);
    if (req->id[0]) pb_put_str(&resp, 3, req->id);
    put_final_param(&resp, final);
    if (ev->kind == TT_SEV_TOKEN) {
        tt_sbuf output = {0}, shape = {0};
        pb_put_str(&output, 1, "text_output");
        pb_put_str(&output, 2, "BYTES");
        pb_put_varint(&shape, 1);
        pb_put_msg(&output, 3, &shape); /* packed repeated int64: [1] */
        pb_put_msg(&resp, 5, &output);
        const char *text = tt_serve_token_text(ev->token);
        uint32_t tl = (uint32_t)strlen(text);
        uint8_t raw[4 + 32];
        raw[0] = (uint8_t)tl; raw[1] = (uint8_t)(tl >> 8); raw[2] = (uint8_t)(tl >> 16); raw[3] = (uint8_t)(tl >> 24);
        memcpy(raw + 4, text, tl);
        pb_put_bytes(&resp, 6, raw, 4 + tl);
        tt_sbuf_free(&output);
        tt_sbuf_free(&shape);
    }
    if (ev->kind == TT_SEV_ERROR) {
        char text[80];
        snprintf(text, sizeof text, "synthetic error after %u tokens", ev->token);
        pb_put_str(&msg, 1, text);
    }
    pb_put_msg(&msg, 2, &resp);
    uint8_t prefix[5] = {0, (uint8_t)(msg.len >> 24), (uint8_t)(msg.len >> 16), (uint8_t)(msg.len >> 8),
                         (uint8_t)msg.len};
    tt_sbuf_put(out, prefix, sizeof prefix);
    tt_sbuf_put(out, msg.p ? msg.p : "", msg.len);
    if (msg.oom || resp.oom) out->oom = true;
    tt_sbuf_free(&resp);
    tt_sbuf_free(&msg);
}
