#!/usr/bin/env bash
# Encode every NAME.txtpb here into NAME.bin with protoc (Debian package
# protobuf-compiler), independently of tokentap's own decoder. The prefix
# of NAME picks the schema: triton_*, sglang_*, vllm_*; serve_resp_* and
# serve_req_* are Triton responses and requests for tokentap serve's
# triton-grpc profile (tests/unit/test_serve_triton.c).
set -eu
cd "$(dirname "$0")"
command -v protoc >/dev/null || { echo "regen.sh: protoc missing (apt-get install protobuf-compiler)" >&2; exit 1; }
for t in *.txtpb; do
    name=${t%.txtpb}
    case "$name" in
        triton_*|serve_resp_*) proto=triton.proto; type=inference.ModelStreamInferResponse ;;
        serve_req_*) proto=triton.proto; type=inference.ModelInferRequest ;;
        sglang_*) proto=sglang.proto; type=sglang.grpc.scheduler.GenerateResponse ;;
        vllm_*) proto=vllm.proto; type=vllm.grpc.engine.GenerateResponse ;;
        *) echo "regen.sh: $t: unknown prefix" >&2; exit 1 ;;
    esac
    protoc -I. --encode="$type" "$proto" < "$t" > "$name.bin.tmp"
    mv "$name.bin.tmp" "$name.bin"
done
echo "regen.sh: $(ls *.txtpb | wc -l) messages encoded"
