/* dialect_grpc.c - gRPC streaming inference messages (dialect_grpc.h).
 *
 * Field numbers (docs/dialects.md, "gRPC dialects", names the .proto files
 * and the commits they were read at):
 *   Triton  ModelStreamInferResponse: 1 error_message, 2 infer_response.
 *           ModelInferResponse: 1 model_name, 2 model_version, 3 id,
 *           4 parameters (map<string, InferParameter>: entry 1 key, 2 value),
 *           5 outputs, 6 raw_output_contents.
 *           InferOutputTensor: 1 name, 2 datatype, 3 shape, 4 parameters,
 *           5 contents. InferTensorContents: 8 bytes_contents.
 *           InferParameter oneof: 1 bool_param (2 int64, 3 string, 4 double,
 *           5 uint64 are not needed).
 *   SGLang  GenerateResponse: 1 request_id, oneof 2 chunk, 3 complete,
 *           4 error. Chunk: 1 token_ids, 2 prompt_tokens,
 *           3 completion_tokens. Complete: 1 output_ids, 2 finish_reason
 *           (string), 3 prompt_tokens, 4 completion_tokens. Error:
 *           1 message, 2 http_status_code, 3 details. (An earlier revision
 *           had one token_id and a text per chunk and an enum finish
 *           reason, numbered so that the two cannot be told apart on the
 *           wire; only the later one is read.)
 *   vLLM    GenerateResponse: oneof 1 chunk, 2 complete. Chunk:
 *           1 token_ids, 2 prompt_tokens, 3 completion_tokens. Complete:
 *           1 output_ids, 2 finish_reason (string), 3 prompt_tokens,
 *           4 completion_tokens.
 *
 * Decoding is two-step: the message is read whole into local slices and
 * numbers, and only when every level parsed is *out filled, so bytes that
 * fail to decode never report text. A known field with an unexpected wire
 * type is ignored and flagged TT_HAS_MALFORMED (a protobuf parser would
 * keep it as an unknown field). Of a oneof or a singular field seen twice,
 * the last occurrence is used (protobuf would merge two embedded messages;
 * servers do not send that). Text pieces are cut at a NUL byte, as the JSON
 * dialects' strings are. */
#include "dialect/dialect_grpc.h"

#include <string.h>

#include "dialect/dialect_internal.h"
#include "dialect/protobuf_wire.h"

typedef struct slice {
    const uint8_t *p;
    size_t n;
    bool set;
} slice;

static size_t cut_nul(const uint8_t *p, size_t n)
{
    const uint8_t *z = n ? memchr(p, 0, n) : NULL;
    return z ? (size_t)(z - p) : n;
}

static void copy_slice(char *dst, size_t cap, slice s)
{
    size_t n = s.set ? cut_nul(s.p, s.n) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, s.p, n);
    dst[n] = 0;
}

static bool slice_is(slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.set && s.n == n && memcmp(s.p, lit, n) == 0;
}

static void add_text(text_sink *sink, const uint8_t *p, size_t n)
{
    sink_add(sink, (const char *)p, cut_nul(p, n), 0);
}

/* A LEN field into *s; another wire type marks *has malformed. */
static void take_len(const pb_field *f, slice *s, uint32_t *has)
{
    if (f->type != PB_WT_LEN) {
        *has |= TT_HAS_MALFORMED;
        return;
    }
    s->p = f->data;
    s->n = f->len;
    s->set = true;
}

/* A non-negative int32/uint32 count from a VARINT field, else -1 (and
 * malformed when the field was there but not a count). */
static int64_t take_count(const pb_field *f, uint32_t *has)
{
    if (f->type != PB_WT_VARINT || f->value > 0xFFFFFFFFu) {
        *has |= TT_HAS_MALFORMED;
        return -1;
    }
    return (int64_t)f->value;
}

/* ---- Triton / KServe v2 ---- */

typedef struct triton_msg {
    slice error, response;
    slice model, version, id;
    bool final_flag;
    long outputs;
    long text_index;   /* index of text_output in outputs, -1 when absent */
    slice text_dtype, text_contents;
    slice raw;         /* raw_output_contents[text_index] */
    uint32_t has;
} triton_msg;

/* A map<string, InferParameter> entry: note triton_final_response. */
static bool triton_param(triton_msg *m, const uint8_t *p, size_t n)
{
    pb_reader r;
    pb_field f;
    slice key = {0}, value = {0};
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &key, &m->has);
        else if (f.number == 2) take_len(&f, &value, &m->has);
    }
    if (r.error) return false;
    bool flag = false, is_bool = false;
    pb_reader_init(&r, value.p, value.n);
    while (pb_next_field(&r, &f)) {
        if (f.number >= 1 && f.number <= 5) is_bool = false; /* oneof: the last member wins */
        if (f.number == 1 && f.type == PB_WT_VARINT) {
            is_bool = true;
            flag = f.value != 0;
        }
    }
    if (r.error) return false;
    if (slice_is(key, "triton_final_response")) {
        if (is_bool) m->final_flag = flag;
        else if (value.set) m->has |= TT_HAS_MALFORMED;
    }
    return true;
}

/* One InferOutputTensor, the idx-th of outputs. */
static bool triton_output(triton_msg *m, const uint8_t *p, size_t n, long idx)
{
    pb_reader r;
    pb_field f;
    slice name = {0}, dtype = {0}, contents = {0}, ignored = {0};
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &name, &m->has);
        else if (f.number == 2) take_len(&f, &dtype, &m->has);
        else if (f.number == 4) take_len(&f, &ignored, &m->has);
        else if (f.number == 5) take_len(&f, &contents, &m->has);
    }
    if (r.error) return false;
    if (contents.set) { /* must parse as InferTensorContents */
        pb_reader c;
        pb_reader_init(&c, contents.p, contents.n);
        while (pb_next_field(&c, &f)) {}
        if (c.error) return false;
    }
    if (slice_is(name, "text_output") && m->text_index < 0) {
        m->text_index = idx;
        m->text_dtype = dtype;
        m->text_contents = contents;
    }
    return true;
}

static bool triton_response(triton_msg *m, const uint8_t *p, size_t n)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        switch (f.number) {
        case 1: take_len(&f, &m->model, &m->has); break;
        case 2: take_len(&f, &m->version, &m->has); break;
        case 3: take_len(&f, &m->id, &m->has); break;
        case 4:
            if (f.type != PB_WT_LEN) m->has |= TT_HAS_MALFORMED;
            else if (!triton_param(m, f.data, f.len)) return false;
            break;
        case 5:
            if (f.type != PB_WT_LEN) m->has |= TT_HAS_MALFORMED;
            else if (!triton_output(m, f.data, f.len, m->outputs++)) return false;
            break;
        default: break;
        }
    }
    if (r.error) return false;
    /* raw_output_contents, in a second pass: outputs need not come first */
    long raw_index = 0;
    pb_reader_init(&r, p, n);
    while (pb_next_field(&r, &f)) {
        if (f.number != 6) continue;
        if (f.type != PB_WT_LEN) {
            m->has |= TT_HAS_MALFORMED;
            continue;
        }
        if (raw_index++ == m->text_index) {
            m->raw.p = f.data;
            m->raw.n = f.len;
            m->raw.set = true;
        }
    }
    return true;
}

/* Raw BYTES tensor: elements of a 4-byte little-endian length and bytes.
 * Checked whole first; count text only when every element fits. */
static bool raw_bytes_ok(slice s)
{
    size_t pos = 0;
    while (pos < s.n) {
        if (s.n - pos < 4) return false;
        uint32_t len = (uint32_t)s.p[pos] | (uint32_t)s.p[pos + 1] << 8 |
                       (uint32_t)s.p[pos + 2] << 16 | (uint32_t)s.p[pos + 3] << 24;
        pos += 4;
        if (len > s.n - pos) return false;
        pos += len;
    }
    return true;
}

static void raw_bytes_text(slice s, text_sink *sink)
{
    size_t pos = 0;
    while (pos + 4 <= s.n) {
        uint32_t len = (uint32_t)s.p[pos] | (uint32_t)s.p[pos + 1] << 8 |
                       (uint32_t)s.p[pos + 2] << 16 | (uint32_t)s.p[pos + 3] << 24;
        pos += 4;
        add_text(sink, s.p + pos, len);
        pos += len;
    }
}

static bool read_triton(const uint8_t *msg, size_t len, tt_classified *out, text_sink *sink,
                        tt_grpc_detail *d)
{
    triton_msg m;
    memset(&m, 0, sizeof m);
    m.text_index = -1;
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, msg, len);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &m.error, &m.has);
        else if (f.number == 2) take_len(&f, &m.response, &m.has);
    }
    if (r.error) return false;
    if (m.response.set && !triton_response(&m, m.response.p, m.response.n)) return false;
    /* decoded: fill *out */
    out->has |= m.has;
    if (m.error.set && cut_nul(m.error.p, m.error.n) > 0) {
        out->has |= TT_HAS_ERROR;
        copy_slice(out->error_message, sizeof out->error_message, m.error);
    }
    copy_slice(out->response_id, sizeof out->response_id, m.id);
    if (m.final_flag) out->has |= TT_HAS_TERMINAL;
    bool dtype_ok = !m.text_dtype.set || m.text_dtype.n == 0 || slice_is(m.text_dtype, "BYTES");
    if (m.text_index >= 0 && !dtype_ok) out->has |= TT_HAS_MALFORMED;
    if (m.text_index >= 0 && dtype_ok) {
        if (m.raw.set) {
            if (raw_bytes_ok(m.raw)) raw_bytes_text(m.raw, sink);
            else out->has |= TT_HAS_MALFORMED;
        } else if (m.text_contents.set) {
            pb_reader_init(&r, m.text_contents.p, m.text_contents.n);
            while (pb_next_field(&r, &f)) {
                if (f.number != 8) continue;
                if (f.type == PB_WT_LEN) add_text(sink, f.data, f.len);
                else out->has |= TT_HAS_MALFORMED;
            }
        }
    }
    if (d) {
        copy_slice(d->model_name, sizeof d->model_name, m.model);
        copy_slice(d->model_version, sizeof d->model_version, m.version);
        d->final_flag = m.final_flag;
        d->outputs = (uint32_t)m.outputs;
        d->text_output_index = (int32_t)m.text_index;
        d->text_from_raw = m.text_index >= 0 && m.raw.set;
    }
    out->kind = dj_derive_kind(out, 0, TT_EV_META);
    return true;
}

/* ---- SGLang and vLLM Generate ---- */

typedef struct gen_msg {
    slice request_id;
    int which;           /* the oneof member's field number, 0 when none */
    slice body;
    uint32_t has;
} gen_msg;

static bool read_generate_top(const uint8_t *msg, size_t len, gen_msg *g, uint32_t id_field,
                              uint32_t first, uint32_t last)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, msg, len);
    while (pb_next_field(&r, &f)) {
        if (id_field && f.number == id_field) {
            take_len(&f, &g->request_id, &g->has);
        } else if (f.number >= first && f.number <= last) {
            if (f.type != PB_WT_LEN) {
                g->has |= TT_HAS_MALFORMED;
                continue;
            }
            g->which = (int)f.number;
            g->body.p = f.data;
            g->body.n = f.len;
            g->body.set = true;
        }
    }
    return !r.error;
}

/* Fields of one chunk/complete/error body. */
typedef struct gen_body {
    int64_t token_ids;     /* token ids carried (chunk) */
    slice finish_str;      /* finish_reason */
    int64_t prompt, completion;
    slice message, details, status;
} gen_body;

static bool read_body(slice s, gen_body *b, uint32_t *has, const uint32_t map[8])
{
    /* map[k] is the field number of slot k (0: not in this message):
     * 1 token ids (repeated), 4 finish string, 5 prompt, 6 completion,
     * 7 error message; slots 0, 2, 3 are unused */
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, s.p, s.n);
    while (pb_next_field(&r, &f)) {
        uint32_t k = 0;
        while (k < 8 && (map[k] == 0 || map[k] != f.number)) k++;
        switch (k) {
        case 1: {
            long c = pb_repeated_varint_count(&f);
            if (c < 0) *has |= TT_HAS_MALFORMED;
            else b->token_ids += c;
            break;
        }
        case 4: take_len(&f, &b->finish_str, has); break;
        case 5: b->prompt = take_count(&f, has); break;
        case 6: b->completion = take_count(&f, has); break;
        case 7: take_len(&f, &b->message, has); break;
        default: break;
        }
    }
    return !r.error;
}

static void put_usage(tt_classified *out, const gen_body *b)
{
    if (b->prompt >= 0) out->usage_prompt_tokens = b->prompt;
    if (b->completion >= 0) out->usage_completion_tokens = b->completion;
    if (b->prompt >= 0 || b->completion >= 0) out->has |= TT_HAS_USAGE;
}

/* The two Generate messages SGLang and vLLM share in shape: a chunk (token
 * ids and running counts) or the complete message that ends the stream
 * (finish reason, counts). Whether the message carries generated tokens. */
static int take_chunk_or_complete(tt_classified *out, const gen_body *b, bool chunk, bool complete)
{
    if (chunk) {
        put_usage(out, b);
        return b->token_ids > 0;
    }
    if (complete) {
        out->has |= TT_HAS_TERMINAL;
        if (b->finish_str.set && cut_nul(b->finish_str.p, b->finish_str.n)) {
            char reason[sizeof out->finish_reason];
            copy_slice(reason, sizeof reason, b->finish_str);
            dj_finish(out, reason);
        }
        put_usage(out, b);
    }
    return 0;
}

static uint32_t token_id_count(const gen_body *b)
{
    return (uint32_t)(b->token_ids > UINT32_MAX ? UINT32_MAX : b->token_ids);
}

static void init_body(gen_body *b)
{
    memset(b, 0, sizeof *b);
    b->prompt = b->completion = -1;
}

/* Where SGLang's and vLLM's chunk and complete messages keep the fields
 * read_body takes (the same numbers in both protos). */
static const uint32_t generate_chunk_fields[8] = {0, 1, 0, 0, 0, 2, 3, 0};
static const uint32_t generate_complete_fields[8] = {0, 1, 0, 0, 2, 3, 4, 0};

static bool read_sglang(const uint8_t *msg, size_t len, tt_classified *out, text_sink *sink,
                        tt_grpc_detail *d)
{
    (void)sink; /* this revision streams token ids, no text */
    gen_msg g;
    memset(&g, 0, sizeof g);
    if (!read_generate_top(msg, len, &g, 1, 2, 4)) return false;
    gen_body b;
    init_body(&b);
    static const uint32_t error_map[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    const uint32_t *map = g.which == 2 ? generate_chunk_fields : g.which == 3 ? generate_complete_fields : error_map;
    uint32_t has = g.has;
    if (g.which && !read_body(g.body, &b, &has, map)) return false;
    /* GenerateError.details: the message when message is empty */
    if (g.which == 4 && !(b.message.set && cut_nul(b.message.p, b.message.n))) {
        pb_reader r;
        pb_field f;
        pb_reader_init(&r, g.body.p, g.body.n);
        while (pb_next_field(&r, &f))
            if (f.number == 3) take_len(&f, &b.message, &has);
    }
    out->has |= has;
    copy_slice(out->response_id, sizeof out->response_id, g.request_id);
    int token_frame = take_chunk_or_complete(out, &b, g.which == 2, g.which == 3);
    if (g.which == 4) {
        out->has |= TT_HAS_ERROR;
        if (b.message.set && cut_nul(b.message.p, b.message.n))
            copy_slice(out->error_message, sizeof out->error_message, b.message);
        else
            dj_copy(out->error_message, sizeof out->error_message, "error");
    }
    if (d && g.which == 2) d->token_ids = token_id_count(&b);
    out->kind = dj_derive_kind(out, token_frame, TT_EV_META);
    return true;
}

static bool read_vllm(const uint8_t *msg, size_t len, tt_classified *out, text_sink *sink,
                      tt_grpc_detail *d)
{
    (void)sink;
    gen_msg g;
    memset(&g, 0, sizeof g);
    if (!read_generate_top(msg, len, &g, 0, 1, 2)) return false;
    gen_body b;
    init_body(&b);
    uint32_t has = g.has;
    if (g.which && !read_body(g.body, &b, &has, g.which == 1 ? generate_chunk_fields : generate_complete_fields))
        return false;
    out->has |= has;
    int token_frame = take_chunk_or_complete(out, &b, g.which == 1, g.which == 2);
    if (d) d->token_ids = g.which == 1 ? token_id_count(&b) : 0;
    out->kind = dj_derive_kind(out, token_frame, TT_EV_META);
    return true;
}

/* ---- entry points ---- */

bool tt_grpc_classify(tt_grpc_api api, const uint8_t *msg, size_t len, tt_classified *out,
                      char *text_out, size_t text_cap, tt_grpc_detail *detail)
{
    memset(out, 0, sizeof *out);
    out->kind = TT_EV_OTHER;
    out->dialect = TT_DIALECT_UNKNOWN;
    out->usage_prompt_tokens = -1;
    out->usage_completion_tokens = -1;
    if (text_out && text_cap) text_out[0] = 0;
    if (detail) {
        memset(detail, 0, sizeof *detail);
        detail->text_output_index = -1;
    }
    if (!msg && len) return false;
    text_sink sink = {.out = out, .text_out = text_out, .text_cap = text_cap, .hash = DJ_FNV_OFFSET};
    bool ok = false;
    switch (api) {
    case TT_GRPC_TRITON: ok = read_triton(msg, len, out, &sink, detail); break;
    case TT_GRPC_SGLANG: ok = read_sglang(msg, len, out, &sink, detail); break;
    case TT_GRPC_VLLM: ok = read_vllm(msg, len, out, &sink, detail); break;
    default: break;
    }
    if (!ok) { /* nothing of a message that did not decode is reported */
        memset(out, 0, sizeof *out);
        out->kind = TT_EV_OTHER;
        out->usage_prompt_tokens = -1;
        out->usage_completion_tokens = -1;
        if (text_out && text_cap) text_out[0] = 0;
        if (detail) {
            memset(detail, 0, sizeof *detail);
            detail->text_output_index = -1;
        }
        return false;
    }
    out->json_ok = true;
    if (out->text_bytes) out->text_hash = sink.hash;
    return true;
}

static bool path_is(const char *path, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return path && len == n && memcmp(path, lit, n) == 0;
}

tt_grpc_api tt_grpc_api_from_path(const char *path, size_t len)
{
    if (path_is(path, len, "/inference.GRPCInferenceService/ModelStreamInfer")) return TT_GRPC_TRITON;
    if (path_is(path, len, "/sglang.grpc.scheduler.SglangScheduler/Generate")) return TT_GRPC_SGLANG;
    if (path_is(path, len, "/vllm.grpc.engine.VllmEngine/Generate")) return TT_GRPC_VLLM;
    return TT_GRPC_API_COUNT;
}

const char *tt_grpc_api_name(tt_grpc_api api)
{
    switch (api) {
    case TT_GRPC_TRITON: return "triton-grpc";
    case TT_GRPC_SGLANG: return "sglang-grpc";
    case TT_GRPC_VLLM: return "vllm-grpc";
    default: return "invalid";
    }
}

tt_dialect tt_grpc_dialect(tt_grpc_api api)
{
    switch (api) {
    case TT_GRPC_TRITON: return TT_DIALECT_TRITON_GRPC;
    case TT_GRPC_SGLANG: return TT_DIALECT_SGLANG_GRPC;
    case TT_GRPC_VLLM: return TT_DIALECT_VLLM_GRPC;
    default: return TT_DIALECT_UNKNOWN;
    }
}

tt_grpc_api tt_grpc_api_of(tt_dialect d)
{
    switch (d) {
    case TT_DIALECT_TRITON_GRPC: return TT_GRPC_TRITON;
    case TT_DIALECT_SGLANG_GRPC: return TT_GRPC_SGLANG;
    case TT_DIALECT_VLLM_GRPC: return TT_GRPC_VLLM;
    default: return TT_GRPC_API_COUNT;
    }
}

bool tt_grpc_triton_request(const uint8_t *msg, size_t len, char *id, size_t id_cap, char *model,
                            size_t model_cap)
{
    slice id_s = {0}, model_s = {0};
    uint32_t has = 0;
    pb_reader r;
    pb_field f;
    id[0] = model[0] = 0;
    if (!msg && len) return false;
    pb_reader_init(&r, msg, len);
    while (pb_next_field(&r, &f)) {
        if (f.number == 1) take_len(&f, &model_s, &has);
        else if (f.number == 3) take_len(&f, &id_s, &has);
    }
    if (r.error) return false;
    copy_slice(id, id_cap, id_s);
    copy_slice(model, model_cap, model_s);
    return true;
}
