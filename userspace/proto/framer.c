#include "proto/framer.h"

#include <stdlib.h>

#include "proto/grpc.h"
#include "proto/ndjson.h"

struct tt_framer {
    tt_framing kind;
    union {
        tt_sse_parser *sse;
        tt_ndjson_parser *ndjson;
        tt_grpc_parser *grpc;
    } p;
};

tt_framer *tt_framer_new(tt_framing kind, const tt_frame_callbacks *cb, void *ud)
{
    if (kind != TT_FRAMING_SSE && kind != TT_FRAMING_NDJSON && kind != TT_FRAMING_GRPC) return NULL;
    tt_framer *f = malloc(sizeof *f);
    if (!f) return NULL;
    f->kind = kind;
    bool ok;
    switch (kind) {
    case TT_FRAMING_SSE: ok = (f->p.sse = tt_sse_new(cb, ud)) != NULL; break;
    case TT_FRAMING_NDJSON: ok = (f->p.ndjson = tt_ndjson_new(cb, ud)) != NULL; break;
    default: ok = (f->p.grpc = tt_grpc_new(cb, ud)) != NULL; break;
    }
    if (!ok) {
        free(f);
        return NULL;
    }
    return f;
}

void tt_framer_feed(tt_framer *f, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns)
{
    switch (f->kind) {
    case TT_FRAMING_SSE: tt_sse_feed(f->p.sse, data, len, body_off, mono_ns); break;
    case TT_FRAMING_NDJSON: tt_ndjson_feed(f->p.ndjson, data, len, body_off, mono_ns); break;
    default: tt_grpc_feed(f->p.grpc, data, len, body_off, mono_ns); break;
    }
}

void tt_framer_finish(tt_framer *f, uint64_t mono_ns)
{
    switch (f->kind) {
    case TT_FRAMING_SSE: tt_sse_finish(f->p.sse, mono_ns); break;
    case TT_FRAMING_NDJSON: tt_ndjson_finish(f->p.ndjson, mono_ns); break;
    default: tt_grpc_finish(f->p.grpc, mono_ns); break;
    }
}

void tt_framer_free(tt_framer *f)
{
    if (!f) return;
    switch (f->kind) {
    case TT_FRAMING_SSE: tt_sse_free(f->p.sse); break;
    case TT_FRAMING_NDJSON: tt_ndjson_free(f->p.ndjson); break;
    default: tt_grpc_free(f->p.grpc); break;
    }
    free(f);
}

const char *tt_framing_name(tt_framing kind)
{
    switch (kind) {
    case TT_FRAMING_SSE: return "sse";
    case TT_FRAMING_NDJSON: return "ndjson";
    case TT_FRAMING_GRPC: return "grpc";
    default: return "none";
    }
}
