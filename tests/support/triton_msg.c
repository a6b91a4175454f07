#include "triton_msg.h"

#include <stdlib.h>
#include <string.h>

#include "proto/http2.h"

static void raw(triton_msg *m, const void *d, size_t n)
{
    if (m->n + n > sizeof m->b) abort();
    memcpy(m->b + m->n, d, n);
    m->n += n;
}

static void varint(triton_msg *m, uint64_t v)
{
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) byte |= 0x80;
        raw(m, &byte, 1);
    } while (v);
}

static void bytes_field(triton_msg *m, uint32_t field, const void *d, size_t n)
{
    varint(m, (uint64_t)field << 3 | 2);
    varint(m, n);
    raw(m, d, n);
}

static void str_field(triton_msg *m, uint32_t field, const char *s) { bytes_field(m, field, s, strlen(s)); }
static void sub_field(triton_msg *m, uint32_t field, const triton_msg *sub) { bytes_field(m, field, sub->b, sub->n); }

triton_msg triton_infer_request(const char *model, const char *id)
{
    triton_msg m = {0};
    str_field(&m, 1, model);
    str_field(&m, 3, id);
    return m;
}

triton_msg triton_stream_response(const char *model, const char *id, const char *text, bool final)
{
    triton_msg param = {0}, entry = {0}, out = {0}, resp = {0}, top = {0};
    varint(&param, 1 << 3 | 0);
    varint(&param, final);
    str_field(&entry, 1, "triton_final_response");
    sub_field(&entry, 2, &param);
    str_field(&out, 1, "text_output");
    str_field(&out, 2, "BYTES");
    str_field(&resp, 1, model);
    str_field(&resp, 3, id);
    sub_field(&resp, 4, &entry);
    sub_field(&resp, 5, &out);
    size_t n = strlen(text);
    uint8_t contents[256] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    if (n + 4 > sizeof contents) abort();
    memcpy(contents + 4, text, n);
    bytes_field(&resp, 6, contents, n + 4);
    sub_field(&top, 2, &resp);
    return top;
}

triton_msg triton_stream_error(const char *message)
{
    triton_msg m = {0};
    str_field(&m, 1, message);
    return m;
}

void triton_grpc_data(h2_write *w, uint32_t sid, uint8_t flags, const triton_msg *m)
{
    uint8_t buf[5 + sizeof m->b] = {0, (uint8_t)(m->n >> 24), (uint8_t)(m->n >> 16), (uint8_t)(m->n >> 8),
                                    (uint8_t)m->n};
    memcpy(buf + 5, m->b, m->n);
    h2_frame(w, TT_H2_DATA, flags, sid, buf, m->n + 5);
}
