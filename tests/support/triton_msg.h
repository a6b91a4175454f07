/* triton_msg.h - Triton gRPC messages for tests and tools, encoded field
 * by field (tests/golden/grpc_dialect/triton.proto numbers): a
 * ModelInferRequest and a ModelStreamInferResponse carrying one BYTES
 * text_output, each put in a DATA frame as one length-prefixed gRPC
 * message. Aborts when a message outgrows its buffer (a test bug). */
#ifndef TT_TRITON_MSG_H
#define TT_TRITON_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h2_script.h"

typedef struct triton_msg {
    uint8_t b[512];
    size_t n;
} triton_msg;

/* ModelInferRequest {model_name, id}. */
triton_msg triton_infer_request(const char *model, const char *id);

/* ModelStreamInferResponse {infer_response {model_name, id, parameters
 * {triton_final_response: final}, outputs [text_output BYTES],
 * raw_output_contents [len32le text]}}. */
triton_msg triton_stream_response(const char *model, const char *id, const char *text, bool final);

/* ModelStreamInferResponse {error_message} (no infer_response). */
triton_msg triton_stream_error(const char *message);

/* Append one DATA frame of stream sid holding m as one gRPC message. */
void triton_grpc_data(h2_write *w, uint32_t sid, uint8_t flags, const triton_msg *m);

#endif
