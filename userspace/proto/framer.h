/* framer.h - one interface over the body framings: SSE, NDJSON and gRPC
 * message framing (the last not chosen by the tracker yet).
 *
 * The connection tracker, the tests and the fuzzers pick the framing once
 * per response body and then feed, finish and free through these calls. */
#ifndef TT_FRAMER_H
#define TT_FRAMER_H

#include "proto/sse.h"

typedef enum tt_framing {
    TT_FRAMING_NONE = 0, /* not an event stream: the body is not framed */
    TT_FRAMING_SSE,
    TT_FRAMING_NDJSON,
    TT_FRAMING_GRPC      /* gRPC Length-Prefixed-Messages (proto/grpc.h) */
} tt_framing;

typedef struct tt_framer tt_framer;

/* A parser of the given framing; NULL for TT_FRAMING_NONE or when out of memory. */
tt_framer *tt_framer_new(tt_framing kind, const tt_frame_callbacks *cb, void *ud);
/* As tt_sse_feed / tt_ndjson_feed / tt_grpc_feed. */
void tt_framer_feed(tt_framer *f, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);
/* As tt_sse_finish / tt_ndjson_finish / tt_grpc_finish. */
void tt_framer_finish(tt_framer *f, uint64_t mono_ns);
void tt_framer_free(tt_framer *f);

const char *tt_framing_name(tt_framing kind); /* "sse", "ndjson", "grpc", "none" */

#endif
