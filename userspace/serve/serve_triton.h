/* serve_triton.h - the triton-grpc profile's messages: a ModelInferRequest
 * read (text_input, max_tokens, sampling_parameters, the request's id and
 * model) and each ModelStreamInferResponse written as one gRPC
 * length-prefixed message, as a decoupled Triton model streams them
 * (docs/serve.md, "triton-grpc"). Field numbers: Triton's
 * grpc_service.proto (tests/golden/grpc_dialect/triton.proto). */
#ifndef TT_SERVE_TRITON_H
#define TT_SERVE_TRITON_H

#include <stddef.h>
#include <stdint.h>

#include "core/sbuf.h"
#include "serve/serve_profile.h"

/* Read one ModelInferRequest (the protobuf bytes, no gRPC prefix) into
 * *out (already zeroed by the caller except api/finish_reason). 0, or -1
 * with a one-line reason in err (not a message, no text_input, a field of
 * the wrong type). */
int tt_serve_triton_parse(const tt_serve_profile *prof, const uint8_t *msg, size_t len,
                          const tt_serve_gen_opts *opts, tt_serve_request *out, char *err, size_t errlen);

/* The plan: one TOKEN per token, then a DONE (the empty final response)
 * when req->grpc_empty_final. */
size_t tt_serve_triton_plan(const tt_serve_request *req, tt_serve_event *plan);

/* Append event ev as one gRPC message: the 5-byte prefix (not compressed,
 * big-endian length) and a ModelStreamInferResponse. */
void tt_serve_triton_frame(const tt_serve_request *req, const tt_serve_event *ev, tt_sbuf *out);

#endif
