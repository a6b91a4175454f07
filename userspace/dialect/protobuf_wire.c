/* protobuf_wire.c - see protobuf_wire.h. */
#include "dialect/protobuf_wire.h"

#include <string.h>

void pb_reader_init(pb_reader *r, const uint8_t *buf, size_t len)
{
    r->p = buf;
    r->end = buf ? buf + len : buf;
    r->error = false;
}

bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (!q || q >= end) return false;
        uint8_t b = *q++;
        /* the tenth byte may only hold the 64th bit */
        if (i == 9 && (b & 0xFE)) return false;
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            *p = q;
            return true;
        }
    }
    return false;
}

static bool fail(pb_reader *r)
{
    r->error = true;
    r->p = r->end;
    return false;
}

bool pb_next_field(pb_reader *r, pb_field *f)
{
    if (r->error || !r->p || r->p >= r->end) return false;
    uint64_t tag;
    if (!pb_read_varint(&r->p, r->end, &tag)) return fail(r);
    if (tag > UINT32_MAX) return fail(r);
    uint32_t number = (uint32_t)(tag >> 3);
    unsigned wt = (unsigned)(tag & 7);
    if (number == 0 || number > PB_MAX_FIELD_NUMBER) return fail(r);
    f->number = number;
    f->value = 0;
    f->data = NULL;
    f->len = 0;
    size_t left = (size_t)(r->end - r->p);
    switch (wt) {
    case PB_WT_VARINT:
        if (!pb_read_varint(&r->p, r->end, &f->value)) return fail(r);
        break;
    case PB_WT_I64:
    case PB_WT_I32: {
        size_t n = wt == PB_WT_I64 ? 8 : 4;
        if (left < n) return fail(r);
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) v |= (uint64_t)r->p[i] << (8 * i);
        f->value = v;
        r->p += n;
        break;
    }
    case PB_WT_LEN: {
        uint64_t n;
        if (!pb_read_varint(&r->p, r->end, &n)) return fail(r);
        left = (size_t)(r->end - r->p);
        if (n > left) return fail(r);
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        break;
    }
    default: /* 3 and 4 are groups (deprecated, not supported); 6 and 7 do not exist */
        return fail(r);
    }
    f->type = (pb_wire_type)wt;
    return true;
}

bool pb_packed_varint_next(const uint8_t *data, size_t len, size_t *pos, uint64_t *out, bool *bad)
{
    if (!data || *pos >= len) return false;
    const uint8_t *p = data + *pos;
    if (!pb_read_varint(&p, data + len, out)) {
        if (bad) *bad = true;
        *pos = len;
        return false;
    }
    *pos = (size_t)(p - data);
    return true;
}

long pb_packed_varint_count(const uint8_t *data, size_t len)
{
    size_t pos = 0;
    uint64_t v;
    bool bad = false;
    long n = 0;
    while (pb_packed_varint_next(data, len, &pos, &v, &bad)) n++;
    return bad ? -1 : n;
}

long pb_repeated_varint_count(const pb_field *f)
{
    if (f->type == PB_WT_VARINT) return 1;
    if (f->type == PB_WT_LEN) return pb_packed_varint_count(f->data, f->len);
    return -1;
}
