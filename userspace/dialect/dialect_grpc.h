/* dialect_grpc.h - what one gRPC message of a streaming inference API means.
 *
 * The message is the protobuf payload of one gRPC length-prefixed message
 * (after the 5-byte prefix, uncompressed), read with protobuf_wire.h and
 * classified into the same tt_classified as the HTTP dialects (dialect.h):
 *
 * - TT_GRPC_TRITON: inference.GRPCInferenceService/ModelStreamInfer
 *   responses (Triton, KServe v2). The text is the BYTES output tensor
 *   named "text_output" (raw_output_contents at that output's index, else
 *   contents.bytes_contents); the end is the bool parameter
 *   "triton_final_response" of the response; error_message is an error.
 * - TT_GRPC_SGLANG: sglang.grpc.scheduler.SglangScheduler/Generate
 *   responses: a chunk with token ids (no text) is a token, complete the
 *   end (with a finish reason and counts), error an error.
 * - TT_GRPC_VLLM: vllm.grpc.engine.VllmEngine/Generate responses: chunk
 *   (token ids only, no text) is a token, complete the end.
 *
 * Kinds follow dialect.h: ERROR when an error is carried; TOKEN when text
 * or generated token ids are (with TT_HAS_TERMINAL when the message also
 * ends the stream); TERMINAL when it ends the stream without text; META for
 * a well-formed message that carries none of these; OTHER with json_ok
 * false when the bytes are not a message of that API (json_ok means
 * "decoded" here). tt_grpc_classify leaves out->dialect UNKNOWN;
 * tt_dialect_classify with a gRPC dialect hint (TT_DIALECT_TRITON_GRPC ...)
 * calls it and names the hint. */
#ifndef TT_DIALECT_GRPC_H
#define TT_DIALECT_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dialect/dialect.h"

typedef enum tt_grpc_api {
    TT_GRPC_TRITON = 0, /* inference.GRPCInferenceService/ModelStreamInfer */
    TT_GRPC_SGLANG,     /* sglang.grpc.scheduler.SglangScheduler/Generate */
    TT_GRPC_VLLM,       /* vllm.grpc.engine.VllmEngine/Generate */
    TT_GRPC_API_COUNT
} tt_grpc_api;

/* What tt_classified has no field for. */
typedef struct tt_grpc_detail {
    char model_name[64];       /* Triton model_name, "" when none */
    char model_version[32];    /* Triton model_version */
    bool final_flag;           /* Triton: triton_final_response was true */
    bool text_from_raw;        /* Triton: text read from raw_output_contents */
    int32_t text_output_index; /* Triton: index of "text_output" in outputs, -1 */
    uint32_t outputs;          /* Triton: number of output tensors */
    uint32_t token_ids;        /* SGLang/vLLM chunk: generated token ids carried */
} tt_grpc_detail;

/* Classify one message msg[0..len) of `api` into *out (and *detail when
 * non-NULL). When text_out is non-NULL and text_cap > 0, up to text_cap-1
 * bytes of the text are copied there, NUL-terminated ("" when none).
 * Returns out->json_ok: true when the bytes decoded as a message of that
 * API; when false, *out is an empty OTHER and nothing else is reported.
 * Never reads outside msg, keeps no state, allocates nothing; any input
 * (and an out-of-range api) is safe. */
bool tt_grpc_classify(tt_grpc_api api, const uint8_t *msg, size_t len, tt_classified *out,
                      char *text_out, size_t text_cap, tt_grpc_detail *detail);

/* The API a gRPC :path names ("/inference.GRPCInferenceService/ModelStreamInfer"
 * -> TT_GRPC_TRITON); TT_GRPC_API_COUNT when it is none of them. */
tt_grpc_api tt_grpc_api_from_path(const char *path, size_t len);

const char *tt_grpc_api_name(tt_grpc_api api); /* "triton-grpc", "sglang-grpc", "vllm-grpc" */

/* The tt_dialect of an API (TT_DIALECT_UNKNOWN for TT_GRPC_API_COUNT), and
 * back (TT_GRPC_API_COUNT for a dialect that is not gRPC). */
tt_dialect tt_grpc_dialect(tt_grpc_api api);
tt_grpc_api tt_grpc_api_of(tt_dialect d);

/* The id (field 3) and model_name (field 1) of a Triton ModelInferRequest,
 * the client's message on a ModelStreamInfer stream, into id and model
 * (each cut to its cap - 1 bytes, NUL-terminated, "" when absent; cap > 0).
 * False when the bytes do not decode as a message (both then ""). */
bool tt_grpc_triton_request(const uint8_t *msg, size_t len, char *id, size_t id_cap, char *model,
                            size_t model_cap);

#endif
