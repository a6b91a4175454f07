#include "proto/framer.h"

#include <stdlib.h>

#include "proto/ndjson.h"

struct tt_framer {
    tt_framing kind;
    union {
        tt_sse_parser *sse;
        tt_ndjson_parser *ndjson;
    } p;
};

tt_framer *tt_framer_new(tt_framing kind, const tt_frame_callbacks *cb, void *ud)
{
    if (kind != TT_FRAMING_SSE && kind != TT_FRAMING_NDJSON) return NULL;
    tt_framer *f = malloc(sizeof *f);
    if (!f) return NULL;
    f->kind = kind;
    if (kind == TT_FRAMING_SSE) f->p.sse = tt_sse_new(cb, ud);
    else f->p.ndjson = tt_ndjson_new(cb, ud);
    if (!f->p.sse && !f->p.ndjson) {
        free(f);
        return NULL;
    }
    return f;
}

void tt_framer_feed(tt_framer *f, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    if (f->kind == TT_FRAMING_SSE) tt_sse_feed(f->p.sse, data, len, body_off, mono_ns);
    else tt_ndjson_feed(f->p.ndjson, data, len, body_off, mono_ns);
}

void tt_framer_finish(tt_framer *f, uint64_t mono_ns)
{
    if (f->kind == TT_FRAMING_SSE) tt_sse_finish(f->p.sse, mono_ns);
    else tt_ndjson_finish(f->p.ndjson, mono_ns);
}

void tt_framer_free(tt_framer *f)
{
    if (!f) return;
    if (f->kind == TT_FRAMING_SSE) tt_sse_free(f->p.sse);
    else tt_ndjson_free(f->p.ndjson);
    free(f);
}

const char *tt_framing_name(tt_framing kind)
{
    return kind == TT_FRAMING_SSE ? "sse" : kind == TT_FRAMING_NDJSON ? "ndjson" : "none";
}
